/*
 * models_internal.h -- the inside of srv_models, shared by the three files
 * that implement it: models.c (slots, versions, loading, life),
 * models_repository.c (the repository API: load, unload, index, aliases)
 * and models_access.c (auth, prediction audit, alias polling).  Nothing
 * else includes it: the rest of the server goes through serve.h.
 */
#ifndef INF_SERVE_MODELS_INTERNAL_H
#define INF_SERVE_MODELS_INTERNAL_H

#include <limits.h>

#include "infera/registry.h"
#include "serve/serve.h"

#define MAX_SLOTS 64
#define AUTH_CACHE 128
#define MAX_CALLERS 64
#define MAX_AUDIT_ROWS 1024

typedef struct srv_slot {
    int used;
    char name[129];
    char ref[1024];
    int from_registry;
    int auto_alias; /* added by --all-aliases: dropped when the alias goes */
    int confined;   /* loaded by file path through the repository API: re-checked under --model-root */
    int from_api;   /* created by the repository API: an unload frees the name (--max-models) */
    srv_version *current;
    char state[16]; /* READY, UNAVAILABLE, LOADING */
    char reason[INF_ERROR_MESSAGE_MAX];
} srv_slot;

typedef struct auth_entry {
    char key[65 + 130 + 4]; /* sha256(token) + model + admin flag */
    inf_status status;
    char message[200];
    uint64_t expires_ns;
    int caller; /* index in callers[] of the granted principal, -1 unknown */
} auth_entry;

/* A principal that called a model.  Its token stays in memory (never on
 * disk or in a log) so the audit record of its predictions is written by a
 * registry handle acting as that principal. */
typedef struct caller {
    char principal[129];
    char *token;
} caller;

/* Rows served to one caller by one (model, version) since the last flush. */
typedef struct audit_rows {
    srv_model_metrics *m;
    int caller;
    int64_t rows;
} audit_rows;

struct srv_models {
    srv_server *srv;
    pthread_mutex_t lock;      /* slots[].current, state, reason */
    pthread_mutex_t load_lock; /* one load at a time; guards reg */
    srv_slot slots[MAX_SLOTS];
    inf_registry *reg;
    int reg_tried;
    _Atomic int auth_on;
    pthread_t poller;
    int poller_started;
    srv_listener *listener; /* PostgreSQL registry: LISTEN for alias moves */
    int stop;
    pthread_cond_t stop_cond;
    pthread_mutex_t auth_lock;
    auth_entry auth[AUTH_CACHE];
    int auth_next;
    pthread_mutex_t audit_lock; /* callers, audit */
    caller callers[MAX_CALLERS];
    int n_callers;
    audit_rows audit[MAX_AUDIT_ROWS];
    int n_audit;
};

/* A registry handle acting as token (NULL: the server's own, INFERA_TOKEN). */
inf_status inf__serve_models_open_registry(srv_models *ms, const char *token, inf_registry **out, inf_error *err);

/* The loader's handle (load_lock held). */
inf_status inf__serve_models_loader_registry(srv_models *ms, inf_error *err);

/* inf_error_set when err is given. */
void inf__serve_models_set_err(inf_error *err, inf_status st, const char *fmt, const char *a, const char *b);

/* 1 when real (a resolved path) is the root or below it. */
int inf__serve_models_path_under(const char *root, const char *real);

/* The real path of a file reference that may be loaded: a regular file
 * under the model root (a relative reference is taken under the root).
 * INF_ENOENT with the one generic message for everything else. */
inf_status inf__serve_models_confined_path(srv_models *ms, const char *ref, char real[PATH_MAX], inf_error *err);

/* The used slot of that name, or NULL. */
srv_slot *inf__serve_models_find_slot(srv_models *ms, const char *name);

/* Load + swap (load_lock held).  ref NULL = the slot's own reference.  A
 * failure is written to the server log, and err gets the slot's reason;
 * with quiet, nothing is logged and err gets the bare cause (the caller
 * reports it: a --model that fails at start-up is the CLI's one error line). */
inf_status inf__serve_models_reload(srv_models *ms, srv_slot *slot, const char *ref, int quiet, inf_error *err);

/* A free slot taken for name and ref, or NULL when all are used. */
srv_slot *inf__serve_models_new_slot(srv_models *ms, const char *name, const char *ref);

/* 1 when s can name a served model: 1-128 of [A-Za-z0-9_.-]. */
int inf__serve_models_valid_name(const char *s);

/* 1 (with the file's path) when ref names a GGUF model: a file, or a
 * registry reference whose artifact is one. */
int inf__serve_models_gguf_ref(srv_models *ms, const char *ref, char *path, size_t size, char *reg_name,
                               int64_t *reg_version);

/* One audit record of a repository action (load_lock held): in the
 * registry's log when a registry is in use -- as the calling principal,
 * else (auth off, or the caller's handle failed) as the server's own with
 * the caller named -- and always one server log line. */
void inf__serve_models_audit_repository(srv_models *ms, int who, const char *action, const char *served,
                                        const char *ref, const char *outcome, const char *message);

/* --all-aliases: one slot "NAME@ALIAS" per alias the server's principal can
 * see; new aliases are loaded, removed ones unloaded (load_lock held).  A
 * failed load of one alias is reported and retried at the next sync. */
inf_status inf__serve_models_sync_aliases(srv_models *ms, int at_start, inf_error *err);

/* Every poll period (or at once when the PostgreSQL registry announces an
 * alias move): follow alias moves, pick up new/removed aliases
 * (--all-aliases), refresh the auth switch, write the audit records. */
void *inf__serve_models_poller(void *arg);

#endif
