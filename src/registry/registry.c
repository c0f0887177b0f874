/*
 * registry.c -- the model registry: opening a store, model references,
 * versions (register, resolve, load, soft delete), aliases and the JSON views
 * the CLI prints.  Access control lives in auth.c, the audit chain in
 * audit.c, uses by runners in lineage.c.
 *
 * Design.  Every change runs in one write transaction (inf__reg_begin takes
 * the registry-wide write lock) and appends its audit record inside that
 * same transaction, so a change and its record commit together or not at
 * all.  Checks that may deny (auth) run before the transaction: a denial is
 * audited in a transaction of its own.  Artifacts are written before commit
 * (atomically: temp file + rename); a failed commit at worst leaves an
 * unreferenced, content-addressed file behind, never a version without its
 * artifact.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "registry/registry_int.h"

/* ---------------------------------------------------------------------------
 * Schema: portable SQL run by both drivers (plus each driver's extra DDL).
 * ------------------------------------------------------------------------- */
static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS reg_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS reg_models(name TEXT PRIMARY KEY, created_at TEXT NOT NULL,"
    " created_by TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS reg_versions(name TEXT NOT NULL, version BIGINT NOT NULL, sha256 TEXT NOT NULL,"
    " size BIGINT NOT NULL, source TEXT, signature TEXT NOT NULL, pipeline TEXT, pipeline_sha256 TEXT,"
    " description TEXT, training_data TEXT, meta TEXT NOT NULL, metrics TEXT NOT NULL,"
    " approved_uses TEXT NOT NULL, created_at TEXT NOT NULL, created_by TEXT NOT NULL, deleted_at TEXT,"
    " deleted_by TEXT, delete_reason TEXT, PRIMARY KEY(name, version));"
    "CREATE TABLE IF NOT EXISTS reg_aliases(name TEXT NOT NULL, alias TEXT NOT NULL, version BIGINT NOT NULL,"
    " protected INTEGER NOT NULL, updated_at TEXT NOT NULL, updated_by TEXT NOT NULL, PRIMARY KEY(name, alias));"
    "CREATE TABLE IF NOT EXISTS reg_principals(name TEXT PRIMARY KEY, created_at TEXT NOT NULL,"
    " created_by TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS reg_grants(principal TEXT NOT NULL, role TEXT NOT NULL, model TEXT NOT NULL,"
    " granted_at TEXT NOT NULL, granted_by TEXT NOT NULL, PRIMARY KEY(principal, role, model));"
    "CREATE TABLE IF NOT EXISTS reg_tokens(id TEXT PRIMARY KEY, principal TEXT NOT NULL, hash TEXT NOT NULL UNIQUE,"
    " created_at TEXT NOT NULL, created_by TEXT NOT NULL, revoked_at TEXT, revoked_by TEXT);"
    "CREATE TABLE IF NOT EXISTS reg_audit(seq BIGINT PRIMARY KEY, ts TEXT NOT NULL, principal TEXT NOT NULL,"
    " action TEXT NOT NULL, model TEXT, version BIGINT, outcome TEXT NOT NULL, detail TEXT NOT NULL,"
    " prev_hash TEXT NOT NULL, hash TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS reg_audit_by_model ON reg_audit(model, seq);"
    "CREATE TABLE IF NOT EXISTS reg_lineage(id BIGINT PRIMARY KEY, ts TEXT NOT NULL, name TEXT NOT NULL,"
    " version BIGINT NOT NULL, kind TEXT NOT NULL, source TEXT, destination TEXT, principal TEXT NOT NULL,"
    " job_id TEXT);"
    "CREATE INDEX IF NOT EXISTS reg_lineage_by_version ON reg_lineage(name, version);"
    "CREATE TABLE IF NOT EXISTS reg_quotas(principal TEXT PRIMARY KEY, rps TEXT NOT NULL, rows_per_s TEXT NOT NULL,"
    " burst_s TEXT NOT NULL, updated_at TEXT NOT NULL, updated_by TEXT NOT NULL);"
    "INSERT INTO reg_meta(key, value) VALUES ('schema_version', '1') ON CONFLICT DO NOTHING;"
    "INSERT INTO reg_meta(key, value) VALUES ('auth_enabled', '0') ON CONFLICT DO NOTHING;";

/* ---------------------------------------------------------------------------
 * Small helpers
 * ------------------------------------------------------------------------- */
void inf__reg_now(char out[32]) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    snprintf(out, 32, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
             tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(tv.tv_usec / 1000));
}

bool inf__reg_valid_name(const char *s) {
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 128) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-'))) return false;
    }
    return true;
}

/* A decimal number as JSON writes one, optionally with a leading '+':
 * [+-]digits[.digits][(e|E)[+-]digits].  strtod alone also takes hex
 * ("0x10" became 16), "inf", "nan" and leading blanks. */
static bool is_decimal(const char *s) {
    if (*s == '-' || *s == '+') s++;
    int digits = 0;
    while (*s >= '0' && *s <= '9') s++, digits++;
    if (*s == '.')
        for (s++; *s >= '0' && *s <= '9'; s++) digits++;
    if (!digits) return false;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '-' || *s == '+') s++;
        if (*s < '0' || *s > '9') return false;
        while (*s >= '0' && *s <= '9') s++;
    }
    return *s == '\0';
}

static bool all_digits(const char *s) {
    if (!*s) return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return false;
    return true;
}

static bool valid_alias(const char *s) { return inf__reg_valid_name(s) && !all_digits(s); }

static void fmt_i64(char out[24], int64_t v) { snprintf(out, 24, "%lld", (long long)v); }

static int64_t parse_i64(const char *s) { return s ? strtoll(s, NULL, 10) : 0; }

static inf_status oom(inf_error *err, const char *what) {
    return inf_error_set(err, INF_ENOMEM, "registry: out of memory %s", what);
}

/* ---------------------------------------------------------------------------
 * Opening
 * ------------------------------------------------------------------------- */
void inf_registry_options_from_env(inf_registry_options *o) {
    memset(o, 0, sizeof *o);
    o->home = getenv("INFERA_HOME");
    o->url = getenv("INFERA_REGISTRY");
    o->artifacts = getenv("INFERA_ARTIFACTS");
    o->token = getenv("INFERA_TOKEN");
    if (o->home && !*o->home) o->home = NULL;
    if (o->url && !*o->url) o->url = NULL;
    if (o->artifacts && !*o->artifacts) o->artifacts = NULL;
    if (o->token && !*o->token) o->token = NULL;
}

static bool is_pg_url(const char *url) {
    return !strncmp(url, "postgresql://", 13) || !strncmp(url, "postgres://", 11);
}

inf_status inf_registry_open(const inf_registry_options *o, inf_registry **out, inf_error *err) {
    *out = NULL;
    inf_registry_options defaults = {0};
    if (!o) o = &defaults;
    const char *home = o->home ? o->home : "./infera-data";
    inf_registry *r = calloc(1, sizeof *r);
    if (!r) return oom(err, "opening the registry");
    inf_status rc;
    if (o->url && !is_pg_url(o->url)) { /* named without its password: a URL may carry one */
        char shown[1024];
        inf__reg_redact(o->url, shown, sizeof shown);
        rc = inf_error_set(err, INF_EINVAL, "registry URL must start with postgresql:// (got '%.60s%s')", shown,
                           strlen(shown) > 60 ? "..." : "");
        goto fail;
    }
    if (o->artifacts)
        snprintf(r->artifacts, sizeof r->artifacts, "%s", o->artifacts);
    else
        snprintf(r->artifacts, sizeof r->artifacts, "%s/artifacts", home);
    if (o->url) {
        inf__reg_redact(o->url, r->location, sizeof r->location);
        rc = inf__store_pg_open(o->url, &r->store, err);
        if (rc) goto fail;
    } else {
        char path[4096];
        snprintf(path, sizeof path, "%s/registry.db", home);
        snprintf(r->location, sizeof r->location, "sqlite:%s", path);
        struct stat st;
        if (!o->create && stat(path, &st)) {
            rc = inf_error_set(err, INF_ENOENT, "no registry at %s (nothing registered yet; set --home or INFERA_HOME)",
                               path);
            goto fail;
        }
        if (o->create && inf__reg_make_dirs(home)) {
            rc = inf_error_set(err, INF_EIO, "cannot create registry home %s: %s", home, strerror(errno));
            goto fail;
        }
        rc = inf__store_sqlite_open(path, o->create, &r->store, err);
        if (rc) goto fail;
    }
    inf__rows *rows = NULL;
    rc = inf__reg_sql(r, r->store->ops->schema_probe, 0, NULL, &rows, err);
    if (rc) goto fail;
    bool exists = parse_i64(inf__rows_get(rows, 0, 0)) != 0;
    inf__rows_free(rows);
    if (!exists) {
        if (!o->create) {
            rc = inf_error_set(err, INF_ENOENT, "no registry in %s (nothing registered yet)", r->location);
            goto fail;
        }
        if ((rc = r->store->ops->begin_write(r->store, err))) goto fail; /* no reg_meta to check auth in yet */
        if ((rc = r->store->ops->script(r->store, schema_sql, err)) ||
            (rc = r->store->ops->script(r->store, r->store->ops->schema_extra, err)) || (rc = inf__reg_commit(r, err))) {
            inf__reg_rollback(r);
            goto fail;
        }
    }
    if ((rc = inf__auth_load(r, o->token, err))) goto fail;
    *out = r;
    return INF_OK;
fail:
    inf_registry_free(r);
    return rc;
}

void inf_registry_free(inf_registry *r) {
    if (!r) return;
    if (r->store) r->store->ops->close(r->store);
    free(r);
}

void inf_registry_string_free(char *s) { free(s); }

const char *inf_registry_location(const inf_registry *r) { return r->location; }
const char *inf_registry_principal(const inf_registry *r) { return r->authenticated ? r->principal : NULL; }
int inf_registry_auth_enabled(const inf_registry *r) { return r->auth_enabled; }

/* ---------------------------------------------------------------------------
 * References
 * ------------------------------------------------------------------------- */
typedef struct parsed_ref {
    char name[129];
    int64_t version; /* 0 when not given */
    char alias[129];
} parsed_ref;

static inf_status parse_ref(const char *ref, parsed_ref *p, inf_error *err) {
    memset(p, 0, sizeof *p);
    const char *at = ref ? strchr(ref, '@') : NULL;
    size_t n = at ? (size_t)(at - ref) : (ref ? strlen(ref) : 0);
    if (n > 128)
        return inf_error_set(err, INF_EINVAL, "invalid model reference '%.40s...': the name is longer than 128 bytes",
                             ref);
    if (!ref || n == 0)
        return inf_error_set(err, INF_EINVAL, "invalid model reference '%s': expected NAME, NAME@VERSION or NAME@ALIAS",
                             ref ? ref : "");
    memcpy(p->name, ref, n);
    if (!inf__reg_valid_name(p->name))
        return inf_error_set(err, INF_EINVAL,
                             "invalid model name '%s': use letters, digits, '.', '_' and '-' (starting with a letter "
                             "or digit)",
                             p->name);
    if (!at) return INF_OK;
    const char *tail = at + 1;
    if (all_digits(tail)) {
        if (strlen(tail) > 15) /* strtoll would clamp 10^23 to 2^63-1 */
            return inf_error_set(err, INF_EINVAL, "invalid version in '%.200s': a version has at most 15 digits", ref);
        p->version = strtoll(tail, NULL, 10);
        if (p->version <= 0)
            return inf_error_set(err, INF_EINVAL, "invalid version in '%s': versions start at 1", ref);
        return INF_OK;
    }
    if (!valid_alias(tail))
        return inf_error_set(err, INF_EINVAL, "invalid alias in '%s': expected a version number or an alias name", ref);
    snprintf(p->alias, sizeof p->alias, "%s", tail);
    return INF_OK;
}

/* Finds the version p refers to: live versions only, unless any_version and
 * p names the version by number (show and lineage of a deleted version). */
static inf_status find_version(inf_registry *r, const parsed_ref *p, bool any_version, int64_t *version,
                               inf_error *err) {
    inf__rows *rows = NULL;
    inf_status rc;
    const char *params[2] = {p->name, NULL};
    char vbuf[24];
    rc = inf__reg_sql(r, "SELECT count(*) FROM reg_models WHERE name = ?", 1, params, &rows, err);
    if (rc) return rc;
    bool known = parse_i64(inf__rows_get(rows, 0, 0)) > 0;
    inf__rows_free(rows);
    if (!known) return inf_error_set(err, INF_ENOENT, "unknown model '%s' in the registry at %s", p->name, r->location);
    if (p->alias[0]) {
        params[1] = p->alias;
        if ((rc = inf__reg_sql(r, "SELECT version FROM reg_aliases WHERE name = ? AND alias = ?", 2, params, &rows, err)))
            return rc;
        if (rows->n_rows == 0) {
            inf__rows_free(rows);
            return inf_error_set(err, INF_ENOENT, "model '%s' has no alias '%s'", p->name, p->alias);
        }
        *version = parse_i64(inf__rows_get(rows, 0, 0));
        inf__rows_free(rows);
    } else if (p->version) {
        *version = p->version;
    } else {
        if ((rc = inf__reg_sql(r, "SELECT max(version) FROM reg_versions WHERE name = ? AND deleted_at IS NULL", 1,
                               params, &rows, err)))
            return rc;
        const char *v = inf__rows_get(rows, 0, 0);
        *version = parse_i64(v);
        inf__rows_free(rows);
        if (!*version) return inf_error_set(err, INF_ENOENT, "model '%s' has no live version", p->name);
        return INF_OK;
    }
    fmt_i64(vbuf, *version);
    params[1] = vbuf;
    if ((rc = inf__reg_sql(r, "SELECT deleted_at FROM reg_versions WHERE name = ? AND version = ?", 2, params, &rows,
                           err)))
        return rc;
    if (rows->n_rows == 0) rc = inf_error_set(err, INF_ENOENT, "model '%s' has no version %s", p->name, vbuf);
    else if (inf__rows_get(rows, 0, 0) && !(any_version && p->version))
        rc = inf_error_set(err, INF_ENOENT, "%s@%s was deleted at %s", p->name, vbuf, inf__rows_get(rows, 0, 0));
    inf__rows_free(rows);
    return rc;
}

void inf_registry_resolved_clear(inf_registry_resolved *v) {
    if (!v) return;
    free(v->pipeline);
    v->pipeline = NULL;
}

static inf_status resolve(inf_registry *r, const char *ref, inf_registry_action action, bool any_version,
                          inf_registry_resolved *out, inf_error *err) {
    memset(out, 0, sizeof *out);
    parsed_ref p;
    inf_status rc = parse_ref(ref, &p, err);
    if (rc) return rc;
    if ((rc = inf__auth_require(r, p.name, action, action == INF_REGISTRY_PREDICT ? "load" : "resolve", 0, err)))
        return rc;
    int64_t version;
    if ((rc = find_version(r, &p, any_version, &version, err))) return rc;
    char vbuf[24];
    fmt_i64(vbuf, version);
    const char *params[2] = {p.name, vbuf};
    inf__rows *rows = NULL;
    if ((rc = inf__reg_sql(r, "SELECT sha256, pipeline FROM reg_versions WHERE name = ? AND version = ?", 2, params,
                           &rows, err)))
        return rc;
    snprintf(out->name, sizeof out->name, "%s", p.name);
    snprintf(out->alias, sizeof out->alias, "%s", p.alias);
    out->version = version;
    snprintf(out->sha256, sizeof out->sha256, "%s", inf__rows_get(rows, 0, 0) ? inf__rows_get(rows, 0, 0) : "");
    inf__artifact_path(r->artifacts, out->sha256, out->artifact_path, sizeof out->artifact_path);
    const char *pipe = inf__rows_get(rows, 0, 1);
    if (pipe && !(out->pipeline = inf__reg_strdup(pipe))) rc = oom(err, "resolving a reference");
    inf__rows_free(rows);
    return rc;
}

int inf_registry_ref_is_path(const char *ref) {
    static const char *const suffixes[] = {".onnx", ".json", ".ubj", ".gguf"};
    struct stat st;
    if (!ref || !*ref) return 0;
    if (strchr(ref, '/')) return 1;
    size_t n = strlen(ref);
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        size_t k = strlen(suffixes[i]);
        if (n > k && !strcasecmp(ref + n - k, suffixes[i])) return 1;
    }
    return stat(ref, &st) == 0 && S_ISREG(st.st_mode);
}

inf_status inf_registry_resolve(inf_registry *r, const char *ref, inf_registry_resolved *out, inf_error *err) {
    return resolve(r, ref, INF_REGISTRY_READ, false, out, err);
}

inf_status inf__reg_resolve_any(inf_registry *r, const char *ref, inf_registry_resolved *out, inf_error *err) {
    return resolve(r, ref, INF_REGISTRY_READ, true, out, err);
}

inf_status inf_registry_load_model(inf_registry *r, const char *ref, const inf_model_options *opts, inf_model **model,
                                   inf_registry_resolved *out, inf_error *err) {
    *model = NULL;
    inf_registry_resolved local;
    inf_registry_resolved *v = out ? out : &local;
    inf_status rc = resolve(r, ref, INF_REGISTRY_PREDICT, false, v, err);
    if (rc) goto done;
    char what[300];
    snprintf(what, sizeof what, "%s@%lld", v->name, (long long)v->version);
    rc = inf__artifact_load(v->artifact_path, v->sha256, what, opts, model, err);
done:
    if (rc || !out) inf_registry_resolved_clear(v);
    return rc;
}

/* ---------------------------------------------------------------------------
 * Register
 * ------------------------------------------------------------------------- */
static inf_status kv_json(const char *what, int n, const inf_registry_kv *kv, bool numbers, char **out,
                          inf_error *err) {
    *out = NULL;
    cJSON *obj = cJSON_CreateObject();
    if (!obj) return oom(err, "building metadata");
    for (int i = 0; i < n; i++) {
        if (!kv[i].key || !*kv[i].key || !kv[i].value) {
            cJSON_Delete(obj);
            return inf_error_set(err, INF_EINVAL, "%s %d: expected KEY=VALUE", what, i + 1);
        }
        cJSON_DeleteItemFromObjectCaseSensitive(obj, kv[i].key);
        cJSON *item;
        if (numbers) {
            char *end;
            errno = 0;
            double d = strtod(kv[i].value, &end);
            const char *why = NULL;
            if (end == kv[i].value || *end) why = "is not a number";
            else if (is_decimal(kv[i].value) && errno == ERANGE) why = "is out of range";
            else if (!isfinite(d)) why = "is not a finite number"; /* JSON has no NaN or infinity: stored as null */
            else if (!is_decimal(kv[i].value)) why = "is not a decimal number"; /* strtod took 0x10 as 16 */
            else if (errno) why = "is out of range";
            if (why) {
                cJSON_Delete(obj);
                return inf_error_set(err, INF_EINVAL, "%s '%s': '%s' %s", what, kv[i].key, kv[i].value, why);
            }
            item = cJSON_CreateNumber(d);
        } else {
            item = cJSON_CreateString(kv[i].value);
        }
        if (!item || !cJSON_AddItemToObject(obj, kv[i].key, item)) {
            cJSON_Delete(item);
            cJSON_Delete(obj);
            return oom(err, "building metadata");
        }
    }
    *out = cJSON_PrintUnformatted(obj);
    cJSON_Delete(obj);
    return *out ? INF_OK : oom(err, "building metadata");
}

/* A heap copy of s with URL passwords removed (inf__reg_redact), for
 * references the registry stores and audits; NULL on out of memory. */
static char *redacted_copy(const char *s) {
    size_t size = 2 * strlen(s) + 16; /* "password=" with nothing after it grows to "password=***" */
    char *out = malloc(size);
    if (out) inf__reg_redact(s, out, size);
    return out;
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Rewrites the relative SQLite lookup stores of a pipeline spec
 * ("sqlite:card_features.db?table=t") as absolute paths against the spec
 * file's folder, so a registered spec works from any working directory (a
 * spec loaded from its file resolves them the same way).  *out is NULL when
 * nothing needed rewriting, else the new JSON text (cJSON_free). */
static inf_status resolve_spec_stores(const char *spec_path, const char *text, char **out, inf_error *err) {
    *out = NULL;
    cJSON *spec = cJSON_Parse(text);
    const cJSON *lookups = spec ? cJSON_GetObjectItemCaseSensitive(spec, "lookups") : NULL;
    char dir[PATH_MAX];
    int n_changed = 0;
    inf_status rc = INF_OK;
    dir[0] = '\0';
    for (cJSON *l = cJSON_IsArray(lookups) ? lookups->child : NULL; l; l = l->next) {
        cJSON *store = cJSON_GetObjectItemCaseSensitive(l, "store");
        const char *s = cJSON_IsString(store) ? store->valuestring : NULL;
        if (!s || strncmp(s, "sqlite:", 7) || s[7] == '/' || s[7] == '?' || !s[7] || !strncmp(s + 7, ":memory:", 8) ||
            !strncmp(s + 7, "file:", 5))
            continue;
        if (!dir[0]) {
            if (!realpath(spec_path, dir)) {
                rc = inf_error_set(err, INF_EIO, "pipeline spec %s: cannot resolve its folder: %s", spec_path,
                                   strerror(errno));
                goto done;
            }
            char *slash = strrchr(dir, '/');
            if (slash) slash[slash == dir ? 1 : 0] = '\0';
        }
        size_t need = strlen(dir) + strlen(s) + 3;
        char *abs = malloc(need);
        if (!abs) {
            rc = oom(err, "resolving the pipeline spec's store paths");
            goto done;
        }
        snprintf(abs, need, "sqlite:%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/",
                 s + 7 + (strncmp(s + 7, "./", 2) ? 0 : 2));
        cJSON *repl = cJSON_CreateString(abs);
        free(abs);
        if (!repl || !cJSON_ReplaceItemInObjectCaseSensitive(l, "store", repl)) {
            cJSON_Delete(repl);
            rc = oom(err, "resolving the pipeline spec's store paths");
            goto done;
        }
        n_changed++;
    }
    if (n_changed && !(*out = cJSON_PrintUnformatted(spec))) rc = oom(err, "resolving the pipeline spec's store paths");
done:
    cJSON_Delete(spec);
    return rc;
}

inf_status inf_registry_register(inf_registry *r, const char *name, const inf_registry_register_info *info,
                                 int64_t *version, inf_error *err) {
    if (version) *version = 0;
    if (!inf__reg_valid_name(name))
        return inf_error_set(err, INF_EINVAL,
                             "invalid model name '%s': use up to 128 letters, digits, '.', '_' and '-', starting with "
                             "a letter or digit",
                             name ? name : "");
    if (!info || !info->model_path) return inf_error_set(err, INF_EINVAL, "register '%s': no model file given", name);
    inf_status rc = inf__auth_require(r, name, INF_REGISTRY_PUBLISH, "register", 0, err);
    if (rc) return rc;

    void *spec_data = NULL;
    size_t spec_size = 0;
    inf__artifact art;
    inf_model *model = NULL;
    char *signature = NULL, *pipeline = NULL, *meta = NULL, *metrics = NULL, *uses = NULL, *training = NULL;
    char pipe_hex[65] = "", ts[32], vbuf[24], sizebuf[24], artifact[4200], derived[200] = "";
    const char *hex = art.sha256;
    inf_error e;

    if ((rc = inf__artifact_read(info->model_path, &art, err))) {
        char msg[INF_ERROR_MESSAGE_MAX];
        snprintf(msg, sizeof msg, "%s", err ? err->message : "");
        return inf_error_set(err, rc, "cannot register '%s': %s", name, msg);
    }
    /* a GGUF language model: its signature from the llm API (no ONNX load, no pipeline) */
    if (inf__artifact_is_gguf(&art)) {
        if (info->pipeline_path) {
            rc = inf_error_set(err, INF_EINVAL, "cannot register '%s': %s is a GGUF language model, which takes no "
                               "pipeline spec", name, info->model_path);
            goto done;
        }
        if ((rc = inf__signature_gguf_json(info->model_path, &signature, err))) {
            char msg[INF_ERROR_MESSAGE_MAX];
            snprintf(msg, sizeof msg, "%s", err ? err->message : "");
            inf_error_set(err, rc, "cannot register '%s': %s", name, msg);
            goto done;
        }
    }
    /* with external data, from the file: the loader finds the data beside it */
    if (signature) rc = INF_OK;
    else rc = art.n_files ? inf_model_load(info->model_path, NULL, &model, &e)
                          : inf_model_load_buffer(art.data, art.size, NULL, NULL, &model, &e);
    if (rc) {
        /* loaded from the bytes read, the loader names the model "<memory>": the path is named already */
        const char *why = strncmp(e.message, "<memory>: ", 10) ? e.message : e.message + 10;
        inf_error_set(err, rc, "cannot register '%s': model %s does not load: %s", name, info->model_path, why);
        goto done;
    }
    if (!signature && (rc = inf__signature_json(model, &signature, err))) goto done;
    if (info->pipeline_path) {
        if ((rc = inf_file_read(info->pipeline_path, "pipeline spec", INF_FILE_MAX_SPEC_BYTES, &spec_data, &spec_size,
                                err)))
            goto done;
        const char *text = spec_data; /* NUL-terminated by inf_file_read */
        if (strlen(text) != spec_size) {
            rc = inf_error_set(err, INF_EFORMAT, "pipeline spec %s: contains a NUL byte (not JSON text)",
                               info->pipeline_path);
            goto done;
        }
        char *resolved = NULL;
        if ((rc = resolve_spec_stores(info->pipeline_path, text, &resolved, err))) goto done;
        rc = inf__pipeline_check(info->pipeline_path, resolved ? resolved : text, model, &pipeline, pipe_hex, err);
        cJSON_free(resolved);
        if (rc) {
            char msg[INF_ERROR_MESSAGE_MAX];
            snprintf(msg, sizeof msg, "%s", err ? err->message : "");
            inf_error_set(err, rc, "cannot register '%s': %s", name, msg);
            goto done;
        }
    }
    /* a training-data URL may carry a password: never stored nor audited (DESIGN §6) */
    if (info->training_data && !(training = redacted_copy(info->training_data))) {
        rc = oom(err, "copying the training data reference");
        goto done;
    }
    if (info->derived_from) { /* lineage: the source version must exist; stored as NAME@NUMBER */
        inf_registry_resolved src = {0};
        if ((rc = inf_registry_resolve(r, info->derived_from, &src, err))) {
            char msg[INF_ERROR_MESSAGE_MAX];
            snprintf(msg, sizeof msg, "%s", err ? err->message : "");
            inf_error_set(err, rc, "cannot register '%s': --derived-from: %s", name, msg);
            goto done;
        }
        snprintf(derived, sizeof derived, "%s@%lld", src.name, (long long)src.version);
        inf_registry_resolved_clear(&src);
    }
    if ((rc = kv_json("meta", info->n_meta, info->meta, false, &meta, err))) goto done;
    if ((rc = kv_json("metric", info->n_metrics, info->metrics, true, &metrics, err))) goto done;
    {
        cJSON *arr = cJSON_CreateArray();
        for (int i = 0; arr && i < info->n_approved_uses; i++) {
            cJSON *s = cJSON_CreateString(info->approved_uses[i] ? info->approved_uses[i] : "");
            if (!s || !cJSON_AddItemToArray(arr, s)) {
                cJSON_Delete(s);
                cJSON_Delete(arr);
                arr = NULL;
            }
        }
        uses = arr ? cJSON_PrintUnformatted(arr) : NULL;
        cJSON_Delete(arr);
        if (!uses) {
            rc = oom(err, "building approved uses");
            goto done;
        }
    }

    if ((rc = inf__reg_begin(r, err))) goto done;
    inf__reg_now(ts);
    {
        const char *p1[3] = {name, ts, r->principal};
        inf__rows *rows = NULL;
        if ((rc = inf__reg_sql(r, "INSERT INTO reg_models(name, created_at, created_by) VALUES (?, ?, ?) "
                                  "ON CONFLICT DO NOTHING",
                               3, p1, NULL, err)) ||
            (rc = inf__reg_sql(r, "SELECT coalesce(max(version), 0) + 1 FROM reg_versions WHERE name = ?", 1, p1,
                               &rows, err)))
            goto rollback;
        int64_t v = parse_i64(inf__rows_get(rows, 0, 0));
        inf__rows_free(rows);
        fmt_i64(vbuf, v);
        fmt_i64(sizebuf, (int64_t)art.total_bytes);
        if ((rc = inf__artifact_store(r->artifacts, &art, artifact, sizeof artifact, err))) goto rollback;
        const char *p2[15] = {name,  vbuf,     hex,   sizebuf, base_name(info->model_path), signature,
                              pipeline, pipe_hex[0] ? pipe_hex : NULL, info->description, training, meta,
                              metrics, uses, ts, r->principal};
        if ((rc = inf__reg_sql(r,
                               "INSERT INTO reg_versions(name, version, sha256, size, source, signature, pipeline,"
                               " pipeline_sha256, description, training_data, meta, metrics, approved_uses,"
                               " created_at, created_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                               15, p2, NULL, err)))
            goto rollback;
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "sha256", hex);
        cJSON_AddNumberToObject(d, "size", (double)art.total_bytes);
        if (art.n_files) cJSON_AddNumberToObject(d, "external_files", art.n_files);
        cJSON_AddStringToObject(d, "source", base_name(info->model_path));
        if (pipe_hex[0]) cJSON_AddStringToObject(d, "pipeline_sha256", pipe_hex);
        if (training) cJSON_AddStringToObject(d, "training_data", training);
        if (derived[0]) {
            cJSON_AddStringToObject(d, "derived_from", derived);
            inf__rows *ids = NULL;
            if ((rc = inf__reg_sql(r, "SELECT coalesce(max(id), 0) + 1 FROM reg_lineage", 0, NULL, &ids, err))) {
                cJSON_Delete(d);
                goto rollback;
            }
            char id[24];
            snprintf(id, sizeof id, "%s", inf__rows_get(ids, 0, 0));
            inf__rows_free(ids);
            const char *lp[6] = {id, ts, name, vbuf, derived, r->principal};
            if ((rc = inf__reg_sql(r,
                                   "INSERT INTO reg_lineage(id, ts, name, version, kind, source, principal)"
                                   " VALUES (?, ?, ?, ?, 'derived', ?, ?)",
                                   6, lp, NULL, err))) {
                cJSON_Delete(d);
                goto rollback;
            }
        }
        char *detail = d ? cJSON_PrintUnformatted(d) : NULL;
        cJSON_Delete(d);
        if (!detail) {
            rc = oom(err, "building the audit record");
            goto rollback;
        }
        rc = inf__audit_append(r, "register", name, v, "ok", detail, err);
        free(detail);
        if (rc || (rc = inf__reg_commit(r, err))) goto rollback;
        if (version) *version = v;
    }
    goto done;
rollback:
    inf__reg_rollback(r);
done:
    inf_model_free(model);
    inf__artifact_clear(&art);
    inf_file_free(spec_data);
    cJSON_free(signature);
    free(pipeline);
    cJSON_free(meta);
    cJSON_free(metrics);
    cJSON_free(uses);
    free(training);
    return rc;
}

/* ---------------------------------------------------------------------------
 * Delete and aliases
 * ------------------------------------------------------------------------- */
inf_status inf_registry_delete(inf_registry *r, const char *name, int64_t version, const char *reason,
                               inf_error *err) {
    parsed_ref p = {.version = version};
    if (!inf__reg_valid_name(name) || version <= 0)
        return inf_error_set(err, INF_EINVAL, "delete: expected NAME@VERSION (got '%s@%lld')", name ? name : "",
                             (long long)version);
    snprintf(p.name, sizeof p.name, "%s", name);
    inf_status rc = inf__auth_require(r, name, INF_REGISTRY_PUBLISH, "delete", version, err);
    if (rc) return rc;
    if ((rc = inf__reg_begin(r, err))) return rc;
    int64_t v;
    inf__rows *rows = NULL;
    char vbuf[24], ts[32];
    fmt_i64(vbuf, version);
    const char *params[5];
    if ((rc = find_version(r, &p, false, &v, err))) goto rollback;
    params[0] = name, params[1] = vbuf;
    if ((rc = inf__reg_sql(r,
                           "SELECT alias FROM reg_aliases WHERE name = ? AND version = ?"
                           " ORDER BY alias COLLATE BINARY",
                           2, params, &rows, err)))
        goto rollback;
    if (rows->n_rows) {
        rc = inf_error_set(err, INF_EBUSY, "cannot delete %s@%s: alias '%s' points at it (move or remove it first)",
                           name, vbuf, inf__rows_get(rows, 0, 0));
        inf__rows_free(rows);
        goto rollback;
    }
    inf__rows_free(rows);
    inf__reg_now(ts);
    const char *up[5] = {ts, r->principal, reason, name, vbuf};
    if ((rc = inf__reg_sql(r, "UPDATE reg_versions SET deleted_at = ?, deleted_by = ?, delete_reason = ? "
                              "WHERE name = ? AND version = ?",
                           5, up, NULL, err)))
        goto rollback;
    cJSON *d = cJSON_CreateObject();
    if (reason) cJSON_AddStringToObject(d, "reason", reason);
    char *detail = d ? cJSON_PrintUnformatted(d) : NULL;
    cJSON_Delete(d);
    if (!detail) {
        rc = oom(err, "building the audit record");
        goto rollback;
    }
    rc = inf__audit_append(r, "delete", name, version, "ok", detail, err);
    free(detail);
    if (rc || (rc = inf__reg_commit(r, err))) goto rollback;
    return INF_OK;
rollback:
    inf__reg_rollback(r);
    return rc;
}

/* The alias row: *exists, its version and protection. */
static inf_status alias_state(inf_registry *r, const char *name, const char *alias, bool *exists, int64_t *version,
                              bool *protect, inf_error *err) {
    const char *params[2] = {name, alias};
    inf__rows *rows = NULL;
    inf_status rc = inf__reg_sql(r, "SELECT version, protected FROM reg_aliases WHERE name = ? AND alias = ?", 2,
                                 params, &rows, err);
    if (rc) return rc;
    *exists = rows->n_rows > 0;
    *version = *exists ? parse_i64(inf__rows_get(rows, 0, 0)) : 0;
    *protect = *exists && parse_i64(inf__rows_get(rows, 0, 1)) != 0;
    inf__rows_free(rows);
    return INF_OK;
}

static char *alias_detail(const char *alias, bool existed, int64_t from, int64_t to, bool was_protected,
                          bool now_protected) {
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "alias", alias);
    if (existed)
        cJSON_AddNumberToObject(d, "from", (double)from);
    else
        cJSON_AddNullToObject(d, "from");
    if (to)
        cJSON_AddNumberToObject(d, "to", (double)to);
    else
        cJSON_AddNullToObject(d, "to");
    cJSON_AddBoolToObject(d, "protected_before", was_protected);
    cJSON_AddBoolToObject(d, "protected", now_protected);
    char *s = d ? cJSON_PrintUnformatted(d) : NULL;
    cJSON_Delete(d);
    return s;
}

/* Shared by alias_set (version > 0) and alias_remove (version 0). */
static inf_status alias_change(inf_registry *r, const char *name, int64_t version, const char *alias, int protect,
                               inf_error *err) {
    const char *what = version ? "alias" : "unalias";
    if (!inf__reg_valid_name(name)) return inf_error_set(err, INF_EINVAL, "%s: invalid model name '%s'", what, name ? name : "");
    if (!alias || !valid_alias(alias))
        return inf_error_set(err, INF_EINVAL,
                             "%s: invalid alias '%s': use letters, digits, '.', '_' and '-', not only digits", what,
                             alias ? alias : "");
    for (int attempt = 0; attempt < 3; attempt++) {
        bool exists, prot;
        int64_t from;
        inf_status rc = alias_state(r, name, alias, &exists, &from, &prot, err);
        if (rc) return rc;
        bool need_approver = prot || protect == 1;
        if ((rc = inf__auth_require(r, name, need_approver ? INF_REGISTRY_MOVE_PROTECTED : INF_REGISTRY_MOVE_ALIAS,
                                    what, version, err)))
            return rc;
        if ((rc = inf__reg_begin(r, err))) return rc;
        bool exists2, prot2;
        int64_t from2;
        if ((rc = alias_state(r, name, alias, &exists2, &from2, &prot2, err))) goto rollback;
        if (prot2 != prot) { /* protection changed between check and lock: check again */
            inf__reg_rollback(r);
            continue;
        }
        char ts[32], vbuf[24];
        inf__reg_now(ts);
        fmt_i64(vbuf, version);
        bool now_prot = protect == -1 ? prot2 : protect == 1;
        if (version) {
            parsed_ref p = {.version = version};
            int64_t v;
            snprintf(p.name, sizeof p.name, "%s", name);
            if ((rc = find_version(r, &p, false, &v, err))) goto rollback;
            const char *params[6] = {name, alias, vbuf, now_prot ? "1" : "0", ts, r->principal};
            if ((rc = inf__reg_sql(r,
                                   "INSERT INTO reg_aliases(name, alias, version, protected, updated_at, updated_by)"
                                   " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(name, alias) DO UPDATE SET"
                                   " version = excluded.version, protected = excluded.protected,"
                                   " updated_at = excluded.updated_at, updated_by = excluded.updated_by",
                                   6, params, NULL, err)))
                goto rollback;
        } else {
            if (!exists2) {
                rc = inf_error_set(err, INF_ENOENT, "model '%s' has no alias '%s'", name, alias);
                goto rollback;
            }
            const char *params[2] = {name, alias};
            if ((rc = inf__reg_sql(r, "DELETE FROM reg_aliases WHERE name = ? AND alias = ?", 2, params, NULL, err)))
                goto rollback;
            now_prot = false;
        }
        char *detail = alias_detail(alias, exists2, from2, version, prot2, now_prot);
        if (!detail) {
            rc = oom(err, "building the audit record");
            goto rollback;
        }
        rc = inf__audit_append(r, version ? "alias" : "unalias", name, version ? version : from2, "ok", detail, err);
        free(detail);
        if (rc || (rc = inf__reg_commit(r, err))) goto rollback;
        return INF_OK;
    rollback:
        inf__reg_rollback(r);
        return rc;
    }
    return inf_error_set(err, INF_EBUSY, "%s %s@%s: the alias kept changing; try again", what, name, alias);
}

inf_status inf_registry_alias_set(inf_registry *r, const char *name, int64_t version, const char *alias, int protect,
                                  inf_error *err) {
    if (version <= 0) return inf_error_set(err, INF_EINVAL, "alias: expected NAME@VERSION with a version number");
    return alias_change(r, name, version, alias, protect, err);
}

inf_status inf_registry_alias_remove(inf_registry *r, const char *name, const char *alias, inf_error *err) {
    return alias_change(r, name, 0, alias, -1, err);
}

/* ---------------------------------------------------------------------------
 * JSON views
 * ------------------------------------------------------------------------- */
static cJSON *parse_or_null(const char *text) {
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    return j ? j : cJSON_CreateNull();
}

static inf_status finish_json(cJSON *root, char **out, inf_error *err) {
    *out = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    return *out ? INF_OK : oom(err, "building JSON");
}

inf_status inf_registry_list_json(inf_registry *r, char **out, inf_error *err) {
    *out = NULL;
    inf__rows *rows = NULL, *al = NULL;
    inf_status rc;
    if (r->auth_enabled && !r->authenticated && (rc = inf__auth_require(r, NULL, INF_REGISTRY_READ, "list", 0, err)))
        return rc;
    rc = inf__reg_sql(
        r,
        "SELECT m.name, m.created_at, m.created_by,"
        " (SELECT max(version) FROM reg_versions v WHERE v.name = m.name AND v.deleted_at IS NULL),"
        " (SELECT count(*) FROM reg_versions v WHERE v.name = m.name AND v.deleted_at IS NULL),"
        " (SELECT max(created_at) FROM reg_versions v WHERE v.name = m.name)"
        " FROM reg_models m ORDER BY m.name COLLATE BINARY",
        0, NULL, &rows, err);
    if (rc) return rc;
    if ((rc = inf__reg_sql(r,
                           "SELECT name, alias, version, protected FROM reg_aliases"
                           " ORDER BY name COLLATE BINARY, alias COLLATE BINARY",
                           0, NULL, &al, err))) {
        inf__rows_free(rows);
        return rc;
    }
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; arr && i < rows->n_rows; i++) {
        const char *name = inf__rows_get(rows, i, 0);
        inf_error ignore;
        /* only what the caller may see */
        if (r->auth_enabled && inf__auth_require(r, name, INF_REGISTRY_READ, NULL, 0, &ignore)) continue;
        cJSON *m = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, m);
        cJSON_AddStringToObject(m, "name", name);
        const char *latest = inf__rows_get(rows, i, 3);
        if (latest)
            cJSON_AddNumberToObject(m, "latest_version", (double)parse_i64(latest));
        else
            cJSON_AddNullToObject(m, "latest_version");
        cJSON_AddNumberToObject(m, "live_versions", (double)parse_i64(inf__rows_get(rows, i, 4)));
        cJSON_AddStringToObject(m, "created_at", inf__rows_get(rows, i, 1));
        cJSON_AddStringToObject(m, "created_by", inf__rows_get(rows, i, 2));
        const char *upd = inf__rows_get(rows, i, 5);
        cJSON_AddStringToObject(m, "updated_at", upd ? upd : inf__rows_get(rows, i, 1));
        cJSON *aliases = cJSON_AddObjectToObject(m, "aliases");
        for (int k = 0; k < al->n_rows; k++)
            if (!strcmp(inf__rows_get(al, k, 0), name))
                cJSON_AddNumberToObject(aliases, inf__rows_get(al, k, 1), (double)parse_i64(inf__rows_get(al, k, 2)));
    }
    inf__rows_free(rows);
    inf__rows_free(al);
    return finish_json(arr, out, err);
}

/* Uses of name@version from the lineage table, as an array; *derived gets
 * the version it was registered as derived from (owned; NULL when none). */
static cJSON *uses_json(inf_registry *r, const char *name, const char *vbuf, char **derived) {
    const char *params[2] = {name, vbuf};
    inf__rows *rows = NULL;
    cJSON *arr = cJSON_CreateArray();
    *derived = NULL;
    if (inf__reg_sql(r,
                     "SELECT ts, kind, source, destination, principal, job_id FROM reg_lineage"
                     " WHERE name = ? AND version = ? ORDER BY id",
                     2, params, &rows, NULL))
        return arr;
    static const char *const keys[6] = {"ts", "kind", "source", "destination", "principal", "job_id"};
    for (int i = 0; arr && i < rows->n_rows; i++) {
        if (!strcmp(inf__rows_get(rows, i, 1), "derived")) { /* registered with --derived-from */
            free(*derived);
            *derived = inf__reg_strdup(inf__rows_get(rows, i, 2));
            continue;
        }
        cJSON *u = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, u);
        for (int k = 0; k < 6; k++) {
            const char *v = inf__rows_get(rows, i, k);
            if (v)
                cJSON_AddStringToObject(u, keys[k], v);
            else
                cJSON_AddNullToObject(u, keys[k]);
        }
    }
    inf__rows_free(rows);
    return arr;
}

static cJSON *version_json(inf_registry *r, const char *name, int64_t version, bool full) {
    char vbuf[24];
    fmt_i64(vbuf, version);
    const char *params[2] = {name, vbuf};
    inf__rows *rows = NULL, *al = NULL;
    if (inf__reg_sql(r,
                     "SELECT sha256, size, source, signature, pipeline, pipeline_sha256, description, training_data,"
                     " meta, metrics, approved_uses, created_at, created_by, deleted_at, deleted_by, delete_reason"
                     " FROM reg_versions WHERE name = ? AND version = ?",
                     2, params, &rows, NULL) ||
        rows->n_rows == 0) {
        inf__rows_free(rows);
        return NULL;
    }
    cJSON *v = cJSON_CreateObject();
    cJSON_AddStringToObject(v, "name", name);
    cJSON_AddNumberToObject(v, "version", (double)version);
    cJSON_AddStringToObject(v, "sha256", inf__rows_get(rows, 0, 0));
    cJSON_AddNumberToObject(v, "size", (double)parse_i64(inf__rows_get(rows, 0, 1)));
    cJSON_AddStringToObject(v, "created_at", inf__rows_get(rows, 0, 11));
    cJSON_AddStringToObject(v, "created_by", inf__rows_get(rows, 0, 12));
    const char *del = inf__rows_get(rows, 0, 13);
    if (del) {
        cJSON *d = cJSON_AddObjectToObject(v, "deleted");
        cJSON_AddStringToObject(d, "at", del);
        cJSON_AddStringToObject(d, "by", inf__rows_get(rows, 0, 14));
        if (inf__rows_get(rows, 0, 15)) cJSON_AddStringToObject(d, "reason", inf__rows_get(rows, 0, 15));
    } else {
        cJSON_AddNullToObject(v, "deleted");
    }
    cJSON *aliases = cJSON_AddArrayToObject(v, "aliases");
    if (!inf__reg_sql(r,
                      "SELECT alias, protected FROM reg_aliases WHERE name = ? AND version = ?"
                      " ORDER BY alias COLLATE BINARY",
                      2, params, &al, NULL)) {
        for (int i = 0; i < al->n_rows; i++) {
            cJSON *a = cJSON_CreateObject();
            cJSON_AddStringToObject(a, "alias", inf__rows_get(al, i, 0));
            cJSON_AddBoolToObject(a, "protected", parse_i64(inf__rows_get(al, i, 1)) != 0);
            cJSON_AddItemToArray(aliases, a);
        }
        inf__rows_free(al);
    }
    cJSON_AddItemToObject(v, "metrics", parse_or_null(inf__rows_get(rows, 0, 9)));
    if (full) {
        const char *s;
        cJSON_AddStringToObject(v, "source", (s = inf__rows_get(rows, 0, 2)) ? s : "");
        if ((s = inf__rows_get(rows, 0, 6))) cJSON_AddStringToObject(v, "description", s);
        else cJSON_AddNullToObject(v, "description");
        if ((s = inf__rows_get(rows, 0, 7))) cJSON_AddStringToObject(v, "training_data", s);
        else cJSON_AddNullToObject(v, "training_data");
        cJSON_AddItemToObject(v, "meta", parse_or_null(inf__rows_get(rows, 0, 8)));
        cJSON_AddItemToObject(v, "approved_uses", parse_or_null(inf__rows_get(rows, 0, 10)));
        cJSON_AddItemToObject(v, "signature", parse_or_null(inf__rows_get(rows, 0, 3)));
        const char *pipe = inf__rows_get(rows, 0, 4);
        if (pipe) {
            cJSON *sum = inf__pipeline_summary(pipe);
            if (sum) cJSON_AddStringToObject(sum, "sha256", inf__rows_get(rows, 0, 5));
            cJSON_AddItemToObject(v, "pipeline", sum ? sum : cJSON_CreateNull());
        } else {
            cJSON_AddNullToObject(v, "pipeline");
        }
        cJSON *lin = cJSON_AddObjectToObject(v, "lineage");
        if ((s = inf__rows_get(rows, 0, 7))) cJSON_AddStringToObject(lin, "training_data", s);
        else cJSON_AddNullToObject(lin, "training_data");
        char *derived;
        cJSON_AddItemToObject(lin, "used_by", uses_json(r, name, vbuf, &derived));
        if (derived) cJSON_AddStringToObject(lin, "derived_from", derived);
        else cJSON_AddNullToObject(lin, "derived_from");
        free(derived);
    }
    inf__rows_free(rows);
    return v;
}

inf_status inf_registry_show_json(inf_registry *r, const char *ref, char **out, inf_error *err) {
    *out = NULL;
    inf_registry_resolved v;
    inf_status rc = inf__reg_resolve_any(r, ref, &v, err);
    if (rc) return rc;
    inf_registry_resolved_clear(&v);
    cJSON *j = version_json(r, v.name, v.version, true);
    if (!j) return inf_error_set(err, INF_EIO, "show %s: cannot read %s@%lld", ref, v.name, (long long)v.version);
    if (v.alias[0]) cJSON_AddStringToObject(j, "resolved_from", ref);
    return finish_json(j, out, err);
}

inf_status inf_registry_versions_json(inf_registry *r, const char *name, char **out, inf_error *err) {
    *out = NULL;
    parsed_ref p;
    inf_status rc = parse_ref(name, &p, err);
    if (rc) return rc;
    if (p.version || p.alias[0]) return inf_error_set(err, INF_EINVAL, "versions: expected a model NAME, got '%s'", name);
    if ((rc = inf__auth_require(r, p.name, INF_REGISTRY_READ, "versions", 0, err))) return rc;
    inf__rows *rows = NULL;
    const char *params[1] = {p.name};
    if ((rc = inf__reg_sql(r, "SELECT count(*) FROM reg_models WHERE name = ?", 1, params, &rows, err))) return rc;
    bool known = parse_i64(inf__rows_get(rows, 0, 0)) > 0;
    inf__rows_free(rows);
    if (!known) return inf_error_set(err, INF_ENOENT, "unknown model '%s' in the registry at %s", p.name, r->location);
    if ((rc = inf__reg_sql(r, "SELECT version FROM reg_versions WHERE name = ? ORDER BY version", 1, params, &rows, err)))
        return rc;
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; arr && i < rows->n_rows; i++) {
        cJSON *v = version_json(r, p.name, parse_i64(inf__rows_get(rows, i, 0)), false);
        if (v) cJSON_AddItemToArray(arr, v);
    }
    inf__rows_free(rows);
    return finish_json(arr, out, err);
}
