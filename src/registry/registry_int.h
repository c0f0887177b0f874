/*
 * registry_int.h -- internals of the model registry shared by its files.
 *
 *   store.c         result rows, SQL helpers shared by the drivers
 *   store_sqlite.c  the SQLite driver (HOME/registry.db)
 *   store_pg.c      the PostgreSQL driver (libpq)
 *   registry.c      open/close, references, versions, aliases, views
 *   artifact.c      model files (and their external data) stored by content
 *   signature.c     model signature and pipeline-spec checks
 *   auth.c          principals, tokens, roles, authorisation
 *   audit.c         the hash-chained audit log
 *   lineage.c       uses of versions by runners
 *
 * The store is a tiny SQL driver behind a vtable: every statement is written
 * once in portable SQL with '?' placeholders and text parameters, and both
 * drivers run it (the PostgreSQL one rewrites '?' to $n).  begin_write takes
 * the registry-wide write lock (SQLite BEGIN IMMEDIATE, PostgreSQL an
 * advisory transaction lock), so writers -- and with them version numbers
 * and the audit chain -- are serialised across processes and machines.
 */
#ifndef INF_REGISTRY_INT_H
#define INF_REGISTRY_INT_H

#include <stdbool.h>

#include "infera/registry.h"

/* ---- store driver ---- */
typedef struct inf__rows {
    int n_rows, n_cols;
    char **cells; /* n_rows * n_cols, NULL for SQL NULL */
} inf__rows;

typedef struct inf__store inf__store;
typedef struct inf__store_ops {
    const char *kind;          /* "sqlite" or "postgresql" */
    const char *schema_extra;  /* driver-specific DDL run after the portable schema */
    const char *schema_probe;  /* SQL returning one row, first cell non-zero when the schema exists */
    /* Runs one statement with text parameters; *out (may be NULL) gets the rows. */
    inf_status (*query)(inf__store *s, const char *sql, int n_params, const char *const *params, inf__rows **out,
                        inf_error *err);
    /* Runs a script of statements without parameters. */
    inf_status (*script)(inf__store *s, const char *sql, inf_error *err);
    inf_status (*begin_write)(inf__store *s, inf_error *err);
    inf_status (*commit)(inf__store *s, inf_error *err);
    void (*rollback)(inf__store *s);
    void (*close)(inf__store *s);
} inf__store_ops;

struct inf__store {
    const inf__store_ops *ops;
};

inf_status inf__store_sqlite_open(const char *path, int create, inf__store **out, inf_error *err);
inf_status inf__store_pg_open(const char *url, inf__store **out, inf_error *err);

const char *inf__rows_get(const inf__rows *rows, int row, int col);
void inf__rows_free(inf__rows *rows);

/* ---- the registry handle ---- */
struct inf_registry {
    inf__store *store;
    char location[1024];  /* redacted */
    char artifacts[3800];
    bool auth_enabled;
    bool authenticated;   /* principal is valid */
    char principal[160];  /* "" when not authenticated under auth */
    char token_id[32];
    char auth_error[300]; /* why authentication failed */
};

/* Runs one statement; convenience over store->ops->query. */
inf_status inf__reg_sql(inf_registry *r, const char *sql, int n, const char *const *params, inf__rows **out,
                        inf_error *err);
inf_status inf__reg_begin(inf_registry *r, inf_error *err);
/* mkdir -p; 0 or -1 with errno. */
int inf__reg_make_dirs(const char *path);

/* ---- artifacts (artifact.c) ---- */
/* A model file as the registry stores it: its bytes, the external-data files
 * it refers to (relative to dir) and its content digest. */
typedef struct inf__artifact {
    unsigned char *data;
    size_t size;
    char **files;
    int n_files;
    char dir[4096];
    char sha256[65];      /* of the bytes, or of the manifest when n_files > 0 */
    uint64_t total_bytes; /* model plus external files */
} inf__artifact;
/* Reads a model file, lists its external files and digests it all. */
inf_status inf__artifact_read(const char *model_path, inf__artifact *a, inf_error *err);
/* 1 when the bytes read are a GGUF file (a language model: one file, no ONNX parse). */
int inf__artifact_is_gguf(const inf__artifact *a);
void inf__artifact_clear(inf__artifact *a);
/* Stores a under artifacts/sha256/ unless it is there; path gets the stored model's path. */
inf_status inf__artifact_store(const char *artifacts, const inf__artifact *a, char *path, size_t path_size,
                               inf_error *err);
/* The stored model's path for a digest: the file, or the folder's model.onnx. */
void inf__artifact_path(const char *artifacts, const char *hex, char *path, size_t size);
/* Loads a stored model after checking its digest; `what` ("name@3") names it in errors. */
inf_status inf__artifact_load(const char *artifact_path, const char *expect_sha256, const char *what,
                              const inf_model_options *opts, inf_model **model, inf_error *err);
inf_status inf__reg_commit(inf_registry *r, inf_error *err);
void inf__reg_rollback(inf_registry *r);

/* inf_registry_resolve that also finds a deleted version named by number
 * (NAME@VERSION): show and lineage still describe it. */
inf_status inf__reg_resolve_any(inf_registry *r, const char *ref, inf_registry_resolved *out, inf_error *err);

/* UTC "YYYY-MM-DDTHH:MM:SS.mmmZ". */
void inf__reg_now(char out[32]);
bool inf__reg_valid_name(const char *s);
/* Copies s into out removing the password of "scheme://user:pass@host" URLs
 * and "password=..." parameters. */
void inf__reg_redact(const char *s, char *out, size_t size);
/* Heap copy (malloc); NULL on out of memory. */
char *inf__reg_strdup(const char *s);

/* ---- auth.c ---- */
/* Authenticates token against the store (fills r's principal fields). */
inf_status inf__auth_load(inf_registry *r, const char *token, inf_error *err);
/* Checks permission; a denial is audited (action what, model, version). */
inf_status inf__auth_require(inf_registry *r, const char *model, inf_registry_action action, const char *what,
                             int64_t version, inf_error *err);
const char *inf__auth_action_name(inf_registry_action action);
/* A principal name: letters and digits, then also . _ - @ : (at most 128). */
bool inf__auth_valid_principal(const char *s);

/* ---- audit.c ---- */
/* Appends a record inside the current write transaction.  detail_json is a
 * JSON object text (NULL = "{}"); version 0 = none. */
inf_status inf__audit_append(inf_registry *r, const char *action, const char *model, int64_t version,
                             const char *outcome, const char *detail_json, inf_error *err);
/* Appends a "denied" record in its own transaction (best effort). */
void inf__audit_denied(inf_registry *r, const char *action, const char *model, int64_t version, const char *why);

/* ---- signature.c ---- */
/* JSON text of the model's signature (inputs, outputs, opsets, sizes). */
inf_status inf__signature_json(const inf_model *model, char **out, inf_error *err);
/* A GGUF language model's signature: {"kind":"gguf", architecture, context
 * length, vocabulary size, weight type, sizes} (through include/infera/llm.h). */
inf_status inf__signature_gguf_json(const char *path, char **out, inf_error *err);
/* Checks spec (JSON text from path) against the model; *canonical receives
 * the canonical spec text (malloc) and hash its SHA-256 -- the pipeline's
 * own spec hash, stamped on predictions. */
inf_status inf__pipeline_check(const char *path, const char *text, const inf_model *model, char **canonical,
                               char hash[65], inf_error *err);
/* A short human summary object of a spec (cJSON *), NULL if unparsable. */
struct cJSON;
struct cJSON *inf__pipeline_summary(const char *spec_json);

#endif /* INF_REGISTRY_INT_H */
