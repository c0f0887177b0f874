/*
 * registry.h -- the model registry: versions, aliases, signatures, lineage,
 * access control and a tamper-evident audit log (docs/registry.md).
 *
 * One interface, two stores: an embedded SQLite database (HOME/registry.db,
 * the default) or a shared PostgreSQL database (url "postgresql://...").
 * Model files are stored content-addressed by SHA-256 under an artifacts
 * directory (default HOME/artifacts/sha256/<hex>); the database holds the
 * metadata.  Both stores run the same SQL through one small driver vtable, so
 * they behave the same; every change is one transaction (nothing
 * half-written) and writers are serialised, which keeps version numbers and
 * the audit chain linear under concurrent writers.
 *
 *     inf_registry_options o;
 *     inf_registry_options_from_env(&o);          // INFERA_HOME, _REGISTRY, _TOKEN
 *     inf_registry *r = NULL;
 *     if (inf_registry_open(&o, &r, &err) != INF_OK) ...
 *     inf_model *m = NULL;
 *     inf_registry_resolved v;
 *     inf_registry_load_model(r, "fraud@production", NULL, &m, &v, &err);
 *     ... run it; then, for each job or request batch:
 *     inf_registry_audit_prediction(r, &(inf_registry_prediction){...}, &err);
 *     inf_registry_free(r);
 *
 * A model reference is NAME (latest live version), NAME@VERSION or
 * NAME@ALIAS.  Names are [A-Za-z0-9][A-Za-z0-9._-]* (at most 128 bytes);
 * aliases the same but must not be all digits.
 *
 * Access control.  Auth is off until the first API token is created (or
 * inf_registry_auth_enable); then every call needs a valid token, and the
 * principal's roles (global or per model) decide:
 *   viewer    read (list, show, versions, lineage, resolve)
 *   predictor viewer + load a model to predict, record predictions and uses
 *   publisher predictor + register, delete, move unprotected aliases
 *   approver  predictor + move/protect/remove protected aliases, read audit
 *   admin     everything, including grants, tokens and the audit log
 * A denied call returns INF_EAUTH (no or bad token) or INF_EDENIED (role) and
 * is itself written to the audit log.
 *
 * Errors: functions return inf_status and fill err with one line naming the
 * model, version, alias, file or principal and why.  Strings returned through
 * char ** are owned by the caller and freed with inf_registry_string_free.
 * A registry handle is not thread-safe: use one per thread.
 */
#ifndef INFERA_REGISTRY_H
#define INFERA_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "infera/infera.h"
#include "infera/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- SHA-256 (FIPS 180-4), used for artifacts, tokens, the audit chain and
 * input digests of prediction records. ---- */
typedef struct inf_sha256 {
    uint32_t h[8];
    uint64_t n_bytes;
    uint8_t block[64];
    size_t n_block;
} inf_sha256;
INF_API void inf_sha256_init(inf_sha256 *c);
INF_API void inf_sha256_update(inf_sha256 *c, const void *data, size_t n);
INF_API void inf_sha256_final(inf_sha256 *c, uint8_t out[32]);
/* Lower-case hex of a digest, NUL-terminated (65 bytes). */
INF_API void inf_sha256_to_hex(const uint8_t digest[32], char out[65]);
/* One-shot: hex digest of n bytes. */
INF_API void inf_sha256_hex(const void *data, size_t n, char out[65]);

/* ---- Opening ---- */
typedef struct inf_registry inf_registry;

typedef struct inf_registry_options {
    const char *home;      /* default "./infera-data"; holds registry.db and artifacts */
    const char *url;       /* "postgresql://..." (or "postgres://"); NULL = SQLite in home */
    const char *artifacts; /* artifact directory; default HOME/artifacts */
    const char *token;     /* API token of the caller, or NULL */
    int create;            /* 1: create home and database when missing; 0: INF_ENOENT */
} inf_registry_options;

/* Zeroes o and fills it from the environment: INFERA_HOME, INFERA_REGISTRY,
 * INFERA_ARTIFACTS, INFERA_TOKEN (the pointers borrow the environment). */
INF_API void inf_registry_options_from_env(inf_registry_options *o);

/* Opens (and with create, creates) the registry.  A bad or revoked token
 * does not fail the open: every later call that needs a principal fails
 * with INF_EAUTH and is audited.  INF_ENOENT when the registry does not exist
 * and create is 0; INF_EIO when the database cannot be reached. */
INF_API inf_status inf_registry_open(const inf_registry_options *o, inf_registry **out, inf_error *err);
INF_API void inf_registry_free(inf_registry *r);
INF_API void inf_registry_string_free(char *s);

/* Where the registry lives ("sqlite:DIR/registry.db" or the PostgreSQL URL
 * without its password); borrowed from r. */
INF_API const char *inf_registry_location(const inf_registry *r);
/* The caller: the token's principal, "local:<user>" while auth is off, or
 * NULL when auth is on and no valid token was given.  Borrowed. */
INF_API const char *inf_registry_principal(const inf_registry *r);
INF_API int inf_registry_auth_enabled(const inf_registry *r);

/* ---- Versions ---- */
typedef struct inf_registry_kv {
    const char *key;
    const char *value;
} inf_registry_kv;

typedef struct inf_registry_register_info {
    const char *model_path;     /* the .onnx file; required */
    const char *pipeline_path;  /* pipeline spec (JSON) or NULL */
    const char *description;    /* all optional */
    const char *training_data;  /* reference to the training data (URL, path, query) */
    int n_meta;
    const inf_registry_kv *meta;    /* free-form metadata (owner, tags, ...) */
    int n_metrics;
    const inf_registry_kv *metrics; /* values must be numbers */
    int n_approved_uses;
    const char *const *approved_uses;
    const char *derived_from;       /* NAME@VERSION (or @ALIAS) this model was made from (pruned,
                                     * distilled, quantized): recorded in its lineage; NULL = none */
} inf_registry_register_info;

/* Validates that the model loads, derives its signature, checks the pipeline
 * spec, stores the artifact and creates the next version of name (1, 2, ...)
 * in one transaction.  Needs publisher on name.  *version receives the new
 * version number. */
INF_API inf_status inf_registry_register(inf_registry *r, const char *name, const inf_registry_register_info *info,
                                         int64_t *version, inf_error *err);

/* What a reference resolves to (filled by resolve; caller-provided storage). */
typedef struct inf_registry_resolved {
    char name[129];
    int64_t version;
    char alias[129];          /* the alias used, or "" */
    char sha256[65];          /* of the model artifact */
    char artifact_path[4096];
    char *pipeline;           /* spec JSON or NULL; owned, freed by inf_registry_resolved_clear */
} inf_registry_resolved;
INF_API void inf_registry_resolved_clear(inf_registry_resolved *v);

/* 1 when a model reference (shared/DESIGN.md §4) names a file rather than a
 * registry entry: it contains '/', ends in .onnx, .json or .ubj (any case),
 * or names an existing regular file.  Every runner decides with this. */
INF_API int inf_registry_ref_is_path(const char *ref);

/* Resolves NAME, NAME@VERSION or NAME@ALIAS to a live version (viewer).
 * INF_ENOENT names what is unknown (model, version, alias) or deleted. */
INF_API inf_status inf_registry_resolve(inf_registry *r, const char *ref, inf_registry_resolved *out, inf_error *err);
/* Resolves ref (predictor), checks the artifact's SHA-256 and loads it.
 * out may be NULL; when given, clear it with inf_registry_resolved_clear. */
INF_API inf_status inf_registry_load_model(inf_registry *r, const char *ref, const inf_model_options *opts,
                                           inf_model **model, inf_registry_resolved *out, inf_error *err);

/* Merges numeric metrics (evaluation results) into an existing version's
 * metrics (publisher); a key already there is replaced.  Audited. */
INF_API inf_status inf_registry_add_metrics(inf_registry *r, const char *name, int64_t version, int n,
                                            const inf_registry_kv *kv, inf_error *err);

/* Soft delete (publisher): the version stays in the database and the audit
 * log but no longer resolves.  Refused while an alias points at it. */
INF_API inf_status inf_registry_delete(inf_registry *r, const char *name, int64_t version, const char *reason,
                                       inf_error *err);

/* Points alias at name@version, creating or moving it (publisher; approver if
 * the alias is protected or protect != -1).  protect: 1 protect, 0 unprotect,
 * -1 keep as is.  Every move is audited with the old and new version. */
INF_API inf_status inf_registry_alias_set(inf_registry *r, const char *name, int64_t version, const char *alias,
                                          int protect, inf_error *err);
INF_API inf_status inf_registry_alias_remove(inf_registry *r, const char *name, const char *alias, inf_error *err);

/* JSON views (the CLI prints them, --json verbatim).  Caller frees *out. */
INF_API inf_status inf_registry_list_json(inf_registry *r, char **out, inf_error *err);
INF_API inf_status inf_registry_show_json(inf_registry *r, const char *ref, char **out, inf_error *err);
INF_API inf_status inf_registry_versions_json(inf_registry *r, const char *name, char **out, inf_error *err);

/* ---- Access control ---- */
/* role: "admin", "publisher", "approver", "predictor", "viewer"; model NULL =
 * global.  Both need admin; the principal is created on first grant. */
INF_API inf_status inf_registry_grant(inf_registry *r, const char *principal, const char *role, const char *model,
                                      inf_error *err);
INF_API inf_status inf_registry_revoke(inf_registry *r, const char *principal, const char *role, const char *model,
                                       inf_error *err);

#define INF_REGISTRY_TOKEN_MAX 96
/* Creates an API token for principal (admin), optionally granting role (on
 * model, or globally) in the same transaction.  The token is written to
 * token (shown once; only its SHA-256 is stored); id receives its public id.
 * While auth is off, anyone may create a token, but the principal must then
 * be a global admin (bootstrap); creating it turns auth on. */
INF_API inf_status inf_registry_token_create(inf_registry *r, const char *principal, const char *role,
                                             const char *model, char token[INF_REGISTRY_TOKEN_MAX], char id[32],
                                             inf_error *err);
/* Revokes one token of principal (token_id) or all of them (NULL); admin. */
INF_API inf_status inf_registry_token_revoke(inf_registry *r, const char *principal, const char *token_id,
                                             int *n_revoked, inf_error *err);
/* Tokens (ids, states, never secrets) and grants of principal (NULL: all). */
INF_API inf_status inf_registry_tokens_json(inf_registry *r, const char *principal, char **out, inf_error *err);
/* Turns auth on (admin); refused unless an admin principal with a live token
 * exists, so no one is locked out. */
INF_API inf_status inf_registry_auth_enable(inf_registry *r, inf_error *err);

typedef enum inf_registry_action {
    INF_REGISTRY_READ,
    INF_REGISTRY_PREDICT,
    INF_REGISTRY_PUBLISH,
    INF_REGISTRY_MOVE_ALIAS,
    INF_REGISTRY_MOVE_PROTECTED,
    INF_REGISTRY_AUDIT,
    INF_REGISTRY_ADMIN
} inf_registry_action;
/* Checks that the caller may perform action on model (NULL = globally);
 * a denial is audited under what (e.g. "serve"). */
INF_API inf_status inf_registry_check(inf_registry *r, const char *model, inf_registry_action action,
                                      const char *what, inf_error *err);

/* ---- Audit log ---- */
typedef struct inf_registry_audit_filter {
    const char *model; /* NULL = all */
    const char *since; /* ISO time prefix ("2024-05-01", "2024-05-01T12:00") or age ("90s", "30m", "2h", "7d") */
    int limit;         /* newest N; 0 = all */
} inf_registry_audit_filter;
/* Records in order (admin or approver). */
INF_API inf_status inf_registry_audit_json(inf_registry *r, const inf_registry_audit_filter *f, char **out,
                                           inf_error *err);

typedef struct inf_registry_audit_report {
    int64_t n_records;
    int64_t first_bad_seq; /* 0 when intact */
    char head_hash[65];    /* hash of the last record */
    char reason[256];      /* why first_bad_seq is broken */
} inf_registry_audit_report;
/* Recomputes the hash chain.  INF_OK when intact; INF_EFORMAT when a record
 * was edited, removed or inserted (report says which and why). */
INF_API inf_status inf_registry_audit_verify(inf_registry *r, inf_registry_audit_report *report, inf_error *err);

/* A prediction job or request batch, for runners (batch, serve, stream).
 * Never pass values of inputs: only their digest (e.g. inf_sha256_hex of the
 * request body or of the rows read). */
typedef struct inf_registry_prediction {
    const char *name;          /* model name and version that predicted */
    int64_t version;
    const char *mode;          /* "batch", "serve", "stream", ... */
    const char *source;        /* where inputs came from; credentials in URLs are removed */
    const char *destination;   /* where outputs went, or NULL */
    int64_t n_rows;
    const char *inputs_sha256; /* hex digest of the inputs, or NULL */
    const char *job_id;        /* runner's id for the job/batch, or NULL */
} inf_registry_prediction;
/* Appends a "predict" record (predictor on name). */
INF_API inf_status inf_registry_audit_prediction(inf_registry *r, const inf_registry_prediction *p, inf_error *err);
/* Appends a record of an action a runner took on served models (e.g. serve's
 * "serve-load" / "serve-unload") as the handle's principal (publisher on
 * model, NULL = globally): action of a-z, 0-9 and '-', outcome ("ok",
 * "failed", "refused"), detail a JSON object text or NULL. */
INF_API inf_status inf_registry_audit_event(inf_registry *r, const char *action, const char *model, int64_t version,
                                            const char *outcome, const char *detail_json, inf_error *err);

/* ---- Per-caller quotas (enforced by `infera serve`) ---- */
/* principal: a token's principal, "anonymous" (callers without a token while
 * auth is off) or "*" (every principal without its own quota).  Rates per
 * second, 0 = no limit on that rate; burst_s: seconds of either rate a
 * caller may spend at once (0 = 1 s). */
typedef struct inf_registry_quota {
    char principal[129];
    double requests_per_s;
    double rows_per_s;
    double burst_s;
} inf_registry_quota;
/* Creates or replaces principal's quota (admin; audited as "quota-set"). */
INF_API inf_status inf_registry_quota_set(inf_registry *r, const inf_registry_quota *q, inf_error *err);
/* Removes it (admin; audited); INF_ENOENT when there is none. */
INF_API inf_status inf_registry_quota_remove(inf_registry *r, const char *principal, inf_error *err);
/* Every quota, by principal (read); *out freed with inf_registry_quotas_free. */
INF_API inf_status inf_registry_quotas(inf_registry *r, inf_registry_quota **out, int *n, inf_error *err);
INF_API void inf_registry_quotas_free(inf_registry_quota *q);

/* ---- Lineage ---- */
typedef struct inf_registry_use {
    const char *name;
    int64_t version;
    const char *kind;        /* "batch", "stream", "serve" */
    const char *source;      /* input (table, file, stream, listen address) */
    const char *destination; /* output (table, file, stream) or NULL */
    const char *job_id;      /* or NULL */
} inf_registry_use;
/* Records that a runner used name@version (predictor on name). */
INF_API inf_status inf_registry_record_use(inf_registry *r, const inf_registry_use *u, inf_error *err);

/* Training data -> version -> uses, for ref (NAME: all versions). */
INF_API inf_status inf_registry_lineage_json(inf_registry *r, const char *ref, char **out, inf_error *err);
/* Which versions wrote into table (a destination string, or the table name
 * in a "...?table=T" destination). */
INF_API inf_status inf_registry_table_lineage_json(inf_registry *r, const char *table, char **out, inf_error *err);

#ifdef __cplusplus
}
#endif

#endif /* INFERA_REGISTRY_H */
