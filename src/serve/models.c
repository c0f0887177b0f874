/*
 * models.c -- the models a server serves: slots by name, refcounted
 * versions, zero-downtime swaps, the repository extension, registry alias
 * following, authorization and prediction audit.
 *
 * SLOTS AND VERSIONS.  A slot is a served name with the reference it loads
 * from (an .onnx path or a registry NAME[@VERSION|@ALIAS]).  Its current
 * srv_version owns the model, the batcher (session + scheduler thread), the
 * pipeline and the metrics entry.  Requests take a reference under the
 * models lock (a pointer copy and an atomic increment) and keep the version
 * for their whole life: a swap only moves the slot's pointer, so requests in
 * flight finish on the version they started with; the last reference frees
 * the old version (joining its scheduler, whose queue is then empty).
 *
 * LOADING.  Loads are serialised by load_lock and happen off to the side:
 * load the model (cold start, timed), compile and warm a session (timed),
 * load the pipeline, and only then swap.  A failed load leaves the old
 * version serving; the slot records the reason (repository index) and the
 * failure is counted and printed.  A file model's version is its lineage
 * stamp, sha256:<first 12 hex digits of the file> (runtime/model.h), as in
 * batch, stream and SQL: a reload of changed bytes is a new version, of the
 * same bytes the same one; registry models carry the registry's version
 * number.
 *
 * REGISTRY.  When a model comes from the registry (or --home/--registry is
 * given) the loader keeps one registry handle (the server's own token from
 * INFERA_TOKEN).  A poller thread re-resolves alias references every
 * poll_secs (or at once when a PostgreSQL registry NOTIFYs an alias write,
 * notify.c) and reloads on a move; with --all-aliases it also serves every
 * NAME@ALIAS of the registry under that name, adding new aliases and
 * dropping removed ones.  It writes one "predict" audit record per (version,
 * calling principal) and poll period with the rows served (counts only,
 * never inputs), through a registry handle acting as that caller.
 * Auth: when the registry has auth on, each request's bearer token is
 * checked for the predictor role on the model through a registry handle
 * opened with that token; decisions are cached for auth_cache_secs by the
 * token's SHA-256 (the token itself is never stored or logged).
 *
 * REPOSITORY API RULES.  A load names a served model and, optionally, a
 * reference.  Without one it reloads the name's configured reference (or
 * the registry model of that name).  A registry reference is always
 * allowed (the registry's grants decide).  A file path is allowed only with
 * --allow-repository-paths, and only when its real path (symlinks resolved;
 * a relative path is taken under the root) is a regular file under
 * --model-root; anything else -- missing, outside, a symlink out, a device
 * -- gets one generic "not found or not allowed" answer, so the API cannot
 * probe the file system.  Such a slot stays confined: each reload resolves
 * its path again, and a pipeline spec beside it must be under the root too.
 * New names stop at --max-models.  Every load and unload, allowed or not,
 * is written to the registry's audit log when a registry is in use, as the
 * calling principal (or the server's own with "caller" in the detail).
 *
 * The pipeline and registry come from libinfera_runtime, linked into every
 * build of the server (no weak references, no run-time checks).
 */
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "infera/bundle.h"
#include "infera/llm.h"
#include "infera/pipeline.h"
#include "infera/registry.h"
#include "runtime/model.h"
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
    int auto_alias;        /* added by --all-aliases: dropped when the alias goes */
    int confined;          /* loaded by file path through the repository API: re-checked under --model-root */
    int from_api;          /* created by the repository API: an unload frees the name (--max-models) */
    srv_version *current;
    char state[16];        /* READY, UNAVAILABLE, LOADING */
    char reason[INF_ERROR_MESSAGE_MAX];
} srv_slot;

typedef struct auth_entry {
    char key[65 + 130 + 4]; /* sha256(token) + model + admin flag */
    inf_status status;
    char message[200];
    uint64_t expires_ns;
    int caller;             /* index in callers[] of the granted principal, -1 unknown */
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
    srv_listener *listener;    /* PostgreSQL registry: LISTEN for alias moves */
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

/* ---- versions ------------------------------------------------------------- */

static void version_destroy(srv_version *v) {
    inf__serve_batcher_free(v->batcher);
    for (int i = 0; i < v->n_exec_pool; i++)
        inf_pipeline_exec_free(v->exec_pool[i]);
    if (v->pipeline) inf_pipeline_free(v->pipeline);
    pthread_mutex_destroy(&v->exec_lock);
    inf_model_free(v->model);
    free(v);
}

void inf__serve_version_release(srv_version *v) {
    if (v && atomic_fetch_sub_explicit(&v->refs, 1, memory_order_acq_rel) == 1) version_destroy(v);
}

inf_status inf__serve_version_pipeline(srv_version *v, void **exec, inf_error *err) {
    *exec = NULL;
    if (!v->pipeline) {
        inf_error_set(err, INF_EUNSUPPORTED, "model '%s' version %s has no pipeline: %s", v->name, v->version,
                      v->pipeline_error[0] ? v->pipeline_error : "none loaded");
        return INF_EUNSUPPORTED;
    }
    pthread_mutex_lock(&v->exec_lock);
    if (v->n_exec_pool > 0) *exec = v->exec_pool[--v->n_exec_pool];
    pthread_mutex_unlock(&v->exec_lock);
    if (*exec) return INF_OK;
    inf_status st = inf_pipeline_exec_new(v->pipeline, (inf_pipeline_exec **)exec, err);
    /* requests are independent: without a spec each maps its own fields */
    if (st == INF_OK) inf_pipeline_exec_map_each_batch(*exec, 1);
    return st;
}

/* Executors are pooled for the next request. */
void inf__serve_version_pipeline_put(srv_version *v, void *exec) {
    if (!exec) return;
    pthread_mutex_lock(&v->exec_lock);
    if (v->n_exec_pool < (int)(sizeof v->exec_pool / sizeof v->exec_pool[0])) {
        v->exec_pool[v->n_exec_pool++] = exec;
        exec = NULL;
    }
    pthread_mutex_unlock(&v->exec_lock);
    if (exec) inf_pipeline_exec_free(exec);
}

/* ---- registry ------------------------------------------------------------- */

static inf_status open_registry(srv_models *ms, const char *token, inf_registry **out, inf_error *err) {
    inf_registry_options o;
    inf_registry_options_from_env(&o);
    if (ms->srv->opt.home) o.home = ms->srv->opt.home;
    if (ms->srv->opt.registry) o.url = ms->srv->opt.registry;
    if (token) o.token = token;
    o.create = 0;
    return inf_registry_open(&o, out, err);
}

/* The loader's handle (load_lock held). */
static inf_status loader_registry(srv_models *ms, inf_error *err) {
    if (ms->reg) return INF_OK;
    inf_status st = open_registry(ms, NULL, &ms->reg, err);
    if (st == INF_OK) ms->auth_on = inf_registry_auth_enabled(ms->reg);
    return st;
}

/* ---- loading -------------------------------------------------------------- */

static void set_err(inf_error *err, inf_status st, const char *fmt, const char *a, const char *b) {
    if (!err) return;
    inf_error_set(err, st, fmt, a, b);
}

/* ---- the model root ---------------------------------------------------------- */

#define NOT_ALLOWED "model reference not found or not allowed: a file reference must name a regular file under " \
                    "--model-root"

/* 1 when real (a resolved path) is the root or below it. */
static int under(const char *root, const char *real) {
    size_t n = strlen(root);
    if (n == 1 && root[0] == '/') return real[0] == '/';
    return !strncmp(real, root, n) && (real[n] == '/' || real[n] == 0);
}

/* The real path of a file reference that may be loaded: a regular file
 * under the model root (a relative reference is taken under the root).
 * INF_ENOENT with the one generic message for everything else. */
static inf_status confined_path(srv_models *ms, const char *ref, char real[PATH_MAX], inf_error *err) {
    const char *root = ms->srv->model_root_real;
    char joined[PATH_MAX * 2];
    struct stat st;
    if (root && ref[0] != '/') {
        snprintf(joined, sizeof joined, "%s/%s", root, ref);
        ref = joined;
    }
    if (!root || strlen(ref) >= PATH_MAX || !realpath(ref, real) || !under(root, real) || stat(real, &st) ||
        !S_ISREG(st.st_mode)) {
        set_err(err, INF_ENOENT, "%s%s", NOT_ALLOWED, "");
        return INF_ENOENT;
    }
    return INF_OK;
}

/* Reads a pipeline spec beside a model (NULL when there is none); for a
 * confined model the spec must be a regular file under the root too. */
static char *read_spec(srv_models *ms, const char *spec_path, int confined, int *refused, inf_error *err) {
    *refused = 0;
    char real[PATH_MAX];
    struct stat st;
    if (lstat(spec_path, &st)) return NULL; /* none */
    if (confined) {
        if (!realpath(spec_path, real) || !under(ms->srv->model_root_real, real) || stat(real, &st) ||
            !S_ISREG(st.st_mode)) {
            *refused = 1;
            return NULL;
        }
        spec_path = real;
    }
    /* the one file check of every reader: a regular file of bounded size (a FIFO or /dev/zero is refused) */
    void *data = NULL;
    size_t size = 0;
    if (inf_file_read(spec_path, "pipeline spec", INF_FILE_MAX_SPEC_BYTES, &data, &size, err) != INF_OK) {
        *refused = 2;
        return NULL;
    }
    char *json = malloc(size + 1);
    if (json) {
        memcpy(json, data, size);
        json[size] = 0;
    } else {
        inf_error_set(err, INF_ENOMEM, "pipeline spec '%s': out of memory", spec_path);
        *refused = 2;
    }
    inf_file_free(data);
    return json;
}

/* Loads, warms and returns a new version for slot (load_lock held). */
static inf_status load_version(srv_models *ms, srv_slot *slot, const char *ref, srv_version **out, inf_error *err) {
    srv_server *srv = ms->srv;
    *out = NULL;
    srv_version *v = calloc(1, sizeof *v);
    if (!v) {
        set_err(err, INF_ENOMEM, "model '%s': out of memory%s", slot->name, "");
        return INF_ENOMEM;
    }
    pthread_mutex_init(&v->exec_lock, NULL);
    atomic_store(&v->refs, 1);
    v->owner = ms;
    snprintf(v->name, sizeof v->name, "%s", slot->name);
    char *spec_json = NULL;
    char spec_base[1100] = "";
    char real[PATH_MAX]; /* a confined reference's resolved path */
    inf_status st;
    inf_error e2 = {0};
    uint64_t t0 = inf__serve_now_ns();
    int from_registry = !inf_registry_ref_is_path(ref);
    if (from_registry) {
        st = loader_registry(ms, err);
        if (st != INF_OK) goto fail;
        inf_registry_resolved res;
        memset(&res, 0, sizeof res);
        st = inf_registry_load_model(ms->reg, ref, NULL, &v->model, &res, err);
        if (st != INF_OK) goto fail;
        v->registry_version = res.version;
        snprintf(v->registry_name, sizeof v->registry_name, "%s", res.name);
        snprintf(v->version, sizeof v->version, "%lld", (long long)res.version);
        if (res.pipeline) spec_json = strdup(res.pipeline);
        inf_registry_resolved_clear(&res);
    } else {
        if (slot->confined) { /* resolved again at every (re)load: the file may have become a symlink out */
            if ((st = confined_path(ms, ref, real, err)) != INF_OK) goto fail;
            ref = real;
        }
        st = inf_model_load(ref, NULL, &v->model, err);
        if (st != INF_OK) goto fail;
        /* the lineage stamp of every runner (runtime/model.h): sha256:<12 hex> of the file */
        char sha[65], stem[160], stamp[64];
        if ((st = inf__rt_file_sha256(ref, sha, err)) != INF_OK) goto fail;
        inf__rt_model_stamp(ref, sha, stem, stamp);
        snprintf(v->version, sizeof v->version, "%s", stamp);
        /* a pipeline spec beside the model: <model>.pipeline.json */
        char spec_path[1100];
        snprintf(spec_path, sizeof spec_path, "%.*s.pipeline.json",
                 (int)(strlen(ref) > 5 && !strcasecmp(ref + strlen(ref) - 5, ".onnx") ? strlen(ref) - 5 : strlen(ref)),
                 ref);
        int refused = 0;
        spec_json = read_spec(ms, spec_path, slot->confined, &refused, err);
        if (refused == 2) {
            st = err->status;
            goto fail;
        }
        if (refused) {
            st = INF_ENOENT;
            set_err(err, st, "model '%s': its pipeline spec is not a regular file under --model-root%s", v->name, "");
            goto fail;
        }
        inf_bundle_info bundle; /* a bundle carries its own spec (infera compile) when none is beside it */
        if (!spec_json && inf_model_bundle_info(v->model, &bundle) && bundle.pipeline &&
            (spec_json = malloc(bundle.pipeline_len + 1))) {
            memcpy(spec_json, bundle.pipeline, bundle.pipeline_len);
            spec_json[bundle.pipeline_len] = 0;
        }
        if (spec_json) {
            snprintf(spec_base, sizeof spec_base, "%s", spec_path);
            char *slash = strrchr(spec_base, '/');
            if (slash)
                *slash = 0;
            else
                snprintf(spec_base, sizeof spec_base, ".");
        }
    }
    double load_s = (double)(inf__serve_now_ns() - t0) / 1e9;
    v->metrics = inf__serve_metrics_get(&srv->metrics, v->name, v->version);
    srv_batch_options bo = {0};
    bo.max_batch = srv->opt.max_batch;
    bo.max_queue_delay_us = srv->opt.max_queue_delay_us;
    bo.max_queue = srv->opt.max_queue;
    bo.n_threads = srv->opt.threads;
    bo.max_run_ms = srv->opt.max_run_ms;
    bo.precision = srv->opt.precision;
    bo.n_preferred = srv->opt.n_preferred;
    /* one spare session per HTTP thread beyond the first: every HTTP thread can run a short job inline */
    int http = srv->opt.http_threads > 0 ? srv->opt.http_threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    bo.n_spare = http > 1 ? (http - 1 < SRV_MAX_SPARE ? http - 1 : SRV_MAX_SPARE) : 0;
    memcpy(bo.preferred, srv->opt.preferred, sizeof bo.preferred);
    double warm_s = 0;
    st = inf__serve_batcher_new(v->model, &bo, v->metrics, &v->batcher, &warm_s, err);
    if (st != INF_OK) goto fail;
    if (v->metrics) {
        v->metrics->registry_version = v->registry_version;
        snprintf(v->metrics->registry_name, sizeof v->metrics->registry_name, "%s", v->registry_name);
        v->metrics->load_seconds = load_s;
        v->metrics->warmup_seconds = warm_s;
    }
    /* the pipeline for the records endpoint */
    {
        inf_pipeline_options po;
        inf_pipeline_options_init(&po);
        po.model_name = v->name;
        po.model_version = v->version;
        if (spec_base[0]) po.base_dir = spec_base;
        inf_pipeline *p = NULL;
        inf_status ps = spec_json ? inf_pipeline_load_string(spec_json, strlen(spec_json), v->model, &po, &p, &e2)
                                  : inf_pipeline_default(v->model, &po, &p, &e2);
        if (ps == INF_OK) {
            v->pipeline = p;
        } else if (spec_json) {
            /* a broken spec is a broken version: keep the old one */
            st = ps;
            inf_error_set(err, ps, "model '%s': pipeline spec: %s", v->name, e2.message);
            goto fail;
        } else {
            snprintf(v->pipeline_error, sizeof v->pipeline_error, "%s", e2.message);
        }
    }
    free(spec_json);
    fprintf(stderr, "infera serve: loaded model '%s' version %s from %s (load %.1f ms, warm-up %.1f ms)\n", v->name,
            v->version, ref, load_s * 1e3, warm_s * 1e3);
    *out = v;
    return INF_OK;
fail:
    free(spec_json);
    version_destroy(v);
    return st;
}

static srv_slot *find_slot(srv_models *ms, const char *name) {
    for (int i = 0; i < MAX_SLOTS; i++)
        if (ms->slots[i].used && !strcmp(ms->slots[i].name, name)) return &ms->slots[i];
    return NULL;
}

/* Load + swap (load_lock held).  ref NULL = the slot's own reference.  A
 * failure is written to the server log, and err gets the slot's reason;
 * with quiet, nothing is logged and err gets the bare cause (the caller
 * reports it: a --model that fails at start-up is the CLI's one error line). */
static inf_status reload(srv_models *ms, srv_slot *slot, const char *ref, int quiet, inf_error *err) {
    const char *use = ref ? ref : slot->ref;
    pthread_mutex_lock(&ms->lock);
    int had = slot->current != NULL;
    if (!had) snprintf(slot->state, sizeof slot->state, "LOADING");
    pthread_mutex_unlock(&ms->lock);
    srv_version *v = NULL;
    inf_error e = {0};
    inf_status st = load_version(ms, slot, use, &v, &e);
    pthread_mutex_lock(&ms->lock);
    srv_version *old = NULL;
    if (st == INF_OK) {
        old = slot->current;
        slot->current = v;
        if (ref) snprintf(slot->ref, sizeof slot->ref, "%s", ref);
        slot->from_registry = !inf_registry_ref_is_path(slot->ref);
        snprintf(slot->state, sizeof slot->state, "READY");
        slot->reason[0] = 0;
    } else {
        snprintf(slot->state, sizeof slot->state, "%s", had ? "READY" : "UNAVAILABLE");
        snprintf(slot->reason, sizeof slot->reason, "load of %s failed%s: %s", use,
                 had ? " (the previous version keeps serving)" : "", e.message);
    }
    pthread_mutex_unlock(&ms->lock);
    if (st == INF_OK) {
        if (v->metrics) atomic_store(&v->metrics->loaded, 1);
        if (old) {
            if (old->metrics && old->metrics != v->metrics) atomic_store(&old->metrics->loaded, 0);
            atomic_fetch_add(&ms->srv->metrics.swaps, 1);
            fprintf(stderr, "infera serve: model '%s' now serves version %s (was %s)\n", slot->name, v->version,
                    old->version);
            inf__serve_version_release(old);
        }
    } else {
        atomic_fetch_add(&ms->srv->metrics.load_failures, 1);
        if (!quiet) fprintf(stderr, "infera serve: %s\n", slot->reason);
        inf_error_set(err, e.status ? e.status : st, "%s", quiet ? e.message : slot->reason);
    }
    return st;
}

static srv_slot *new_slot(srv_models *ms, const char *name, const char *ref) {
    for (int i = 0; i < MAX_SLOTS; i++) {
        srv_slot *s = &ms->slots[i];
        if (s->used) continue;
        memset(s, 0, sizeof *s);
        s->used = 1;
        snprintf(s->name, sizeof s->name, "%s", name);
        snprintf(s->ref, sizeof s->ref, "%s", ref);
        s->from_registry = !inf_registry_ref_is_path(ref);
        snprintf(s->state, sizeof s->state, "UNAVAILABLE");
        return s;
    }
    return NULL;
}

static void default_name(const char *ref, char *name, size_t size) {
    if (!inf_registry_ref_is_path(ref)) {
        const char *at = strchr(ref, '@');
        snprintf(name, size, "%.*s", (int)(at ? (size_t)(at - ref) : strlen(ref)), ref);
        return;
    }
    const char *base = strrchr(ref, '/');
    base = base ? base + 1 : ref;
    const char *dot = strrchr(base, '.');
    snprintf(name, size, "%.*s", (int)(dot && dot != base ? (size_t)(dot - base) : strlen(base)), base);
}

static int valid_name(const char *s) {
    if (!*s || strlen(s) > 128) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
              *s == '-' || *s == '.'))
            return 0;
    return 1;
}

/* 1 when the file at path is a regular file starting with GGUF's magic
 * (opened as every reader opens a user's file: a FIFO never blocks). */
static int is_gguf_file(const char *path) {
    int fd;
    uint64_t size;
    inf_error e = {0};
    if (inf_file_open(path, "model", INF_FILE_MAX_MODEL_BYTES, &fd, &size, &e) != INF_OK) return 0;
    char magic[4] = {0};
    int ok = size >= 4 && read(fd, magic, 4) == 4 && !memcmp(magic, "GGUF", 4);
    close(fd);
    return ok;
}

/* 1 (with the file's path) when ref names a GGUF model: a file, or a
 * registry reference whose artifact is one. */
static int gguf_ref(srv_models *ms, const char *ref, char *path, size_t size, char *reg_name, int64_t *reg_version) {
    if (inf_registry_ref_is_path(ref)) {
        size_t n = strlen(ref);
        if (!(n > 5 && !strcasecmp(ref + n - 5, ".gguf")) && !is_gguf_file(ref)) return 0;
        inf__serve_copy_str(path, size, ref);
        return 1;
    }
    inf_error e = {0};
    if (loader_registry(ms, &e) != INF_OK) return 0;
    inf_registry_resolved res;
    memset(&res, 0, sizeof res);
    if (inf_registry_resolve(ms->reg, ref, &res, &e) != INF_OK) return 0;
    int yes = is_gguf_file(res.artifact_path);
    if (yes) {
        inf__serve_copy_str(path, size, res.artifact_path);
        inf__serve_copy_str(reg_name, 129, res.name);
        *reg_version = res.version;
    }
    inf_registry_resolved_clear(&res);
    return yes;
}

static inf_status add_slot(srv_models *ms, const char *spec, const char *name, const char *ref, inf_error *err);

inf_status inf__serve_models_add(srv_models *ms, const char *spec, inf_error *err) {
    char name[129];
    const char *ref = spec;
    const char *eq = strchr(spec, '=');
    if (eq && (size_t)(eq - spec) < sizeof name && !memchr(spec, '/', (size_t)(eq - spec))) {
        snprintf(name, sizeof name, "%.*s", (int)(eq - spec), spec);
        ref = eq + 1;
    } else {
        default_name(spec, name, sizeof name);
    }
    if (!valid_name(name)) {
        set_err(err, INF_EINVAL, "--model %s: invalid model name '%s' (letters, digits, '.', '_', '-')", spec, name);
        return INF_EINVAL;
    }
    return add_slot(ms, spec, name, ref, err);
}

inf_status inf__serve_models_add_ref(srv_models *ms, const char *ref, inf_error *err) {
    return add_slot(ms, ref, ref, ref, err);
}

/* Adds and loads slot name serving ref (spec names it in errors). */
static inf_status add_slot(srv_models *ms, const char *spec, const char *name, const char *ref, inf_error *err) {
    pthread_mutex_lock(&ms->load_lock);
    if (find_slot(ms, name)) {
        pthread_mutex_unlock(&ms->load_lock);
        set_err(err, INF_EEXIST, "--model %s: a model named '%s' is already served", spec, name);
        return INF_EEXIST;
    }
    /* MODEL KIND: a GGUF file (or a registry version whose artifact is one)
     * is a generative model, served by llm_scheduler.c / openai.c */
    char gguf[4096], reg_name[129] = "";
    int64_t reg_version = 0;
    if (gguf_ref(ms, ref, gguf, sizeof gguf, reg_name, &reg_version)) {
        inf_status st = inf__serve_llm_add(ms->srv, name, gguf, reg_name, reg_version, err);
        srv_llm *added = st == INF_OK ? inf__serve_llm_find(ms->srv, name) : NULL;
        if (added) inf__serve_llm_set_ref(added, ref); /* what a repository reload without a ref loads again */
        pthread_mutex_unlock(&ms->load_lock);
        if (st != INF_OK && err) {
            char why[INF_ERROR_MESSAGE_MAX];
            inf__serve_copy_str(why, sizeof why, err->message);
            snprintf(err->message, sizeof err->message, "--model %s: %s", spec, why);
        }
        return st;
    }
    pthread_mutex_lock(&ms->lock);
    srv_slot *slot = new_slot(ms, name, ref);
    pthread_mutex_unlock(&ms->lock);
    inf_status st = INF_ENOMEM;
    if (slot) {
        st = reload(ms, slot, NULL, 1, err);
        if (st != INF_OK) {
            if (err) {
                char why[INF_ERROR_MESSAGE_MAX];
                inf__serve_copy_str(why, sizeof why, err->message);
                snprintf(err->message, sizeof err->message, "--model %s: %s", spec, why);
            }
            pthread_mutex_lock(&ms->lock);
            slot->used = 0;
            pthread_mutex_unlock(&ms->lock);
        }
    } else {
        set_err(err, INF_ENOMEM, "--model %s: more than 64 models%s", spec, "");
    }
    pthread_mutex_unlock(&ms->load_lock);
    return st;
}

inf_status inf__serve_models_acquire(srv_models *ms, const char *name, const char *version, srv_version **out,
                                     inf_error *err) {
    *out = NULL;
    pthread_mutex_lock(&ms->lock);
    srv_slot *slot = find_slot(ms, name);
    srv_version *v = slot ? slot->current : NULL;
    if (v && version && version[0] && strcmp(version, v->version)) {
        inf_error_set(err, INF_ENOENT, "model '%s' version '%s' is not loaded (serving version %s)", name, version,
                      v->version);
        pthread_mutex_unlock(&ms->lock);
        return INF_ENOENT;
    }
    if (!v) {
        if (err) {
            err->status = INF_ENOENT;
            if (slot)
                snprintf(err->message, sizeof err->message, "model '%s' is not loaded%s%s", name,
                         slot->reason[0] ? ": " : "", slot->reason);
            else
                snprintf(err->message, sizeof err->message, "unknown model '%s'", name);
        }
        pthread_mutex_unlock(&ms->lock);
        return INF_ENOENT;
    }
    atomic_fetch_add_explicit(&v->refs, 1, memory_order_relaxed);
    pthread_mutex_unlock(&ms->lock);
    *out = v;
    return INF_OK;
}

/* ---- repository API: rules and audit ------------------------------------------ */

static int count_slots(srv_models *ms) {
    int n = 0;
    for (int i = 0; i < MAX_SLOTS; i++) n += ms->slots[i].used;
    return n;
}

/* One audit record of a repository action (load_lock held): in the
 * registry's log when a registry is in use -- as the calling principal,
 * else (auth off, or the caller's handle failed) as the server's own with
 * the caller named -- and always one server log line. */
static void audit_repository(srv_models *ms, int who, const char *action, const char *served, const char *ref,
                             const char *outcome, const char *message) {
    char principal[129] = "";
    char *token = NULL;
    pthread_mutex_lock(&ms->audit_lock);
    if (who >= 0 && who < ms->n_callers) {
        snprintf(principal, sizeof principal, "%s", ms->callers[who].principal);
        token = strdup(ms->callers[who].token);
    }
    pthread_mutex_unlock(&ms->audit_lock);
    fprintf(stderr, "infera serve: %s of '%s'%s%s by %s: %s%s%s\n", action, served, ref ? " from " : "", ref ? ref : "",
            principal[0] ? principal : "an unauthenticated caller", outcome, message && *message ? ": " : "",
            message ? message : "");
    int have_reg = ms->reg || ms->srv->opt.home || ms->srv->opt.registry;
    if (!have_reg) goto out;
    char model[129] = "";
    if (ref && !inf_registry_ref_is_path(ref)) {
        const char *at = strchr(ref, '@');
        snprintf(model, sizeof model, "%.*s", (int)(at ? (size_t)(at - ref) : strlen(ref)), ref);
    }
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "served_as", served);
    if (ref) cJSON_AddStringToObject(d, "ref", ref);
    cJSON_AddStringToObject(d, "source", ms->srv->listen_url);
    if (message && *message) cJSON_AddStringToObject(d, "error", message);
    char *detail = d ? cJSON_PrintUnformatted(d) : NULL;
    inf_error e = {0};
    inf_status st = INF_EAUTH;
    if (token) { /* as the caller */
        inf_registry *r = NULL;
        st = open_registry(ms, token, &r, &e);
        if (st == INF_OK) st = inf_registry_audit_event(r, action, model[0] ? model : NULL, 0, outcome, detail, &e);
        if (r) inf_registry_free(r);
    }
    if (st != INF_OK && loader_registry(ms, &e) == INF_OK) { /* as the server, naming the caller */
        if (principal[0]) cJSON_AddStringToObject(d, "caller", principal);
        free(detail);
        detail = d ? cJSON_PrintUnformatted(d) : NULL;
        st = inf_registry_audit_event(ms->reg, action, model[0] ? model : NULL, 0, outcome, detail, &e);
    }
    if (st != INF_OK)
        fprintf(stderr, "infera serve: audit of the %s of '%s' failed: %s\n", action, served, e.message);
    free(detail);
    cJSON_Delete(d);
out:
    if (token) {
        explicit_bzero(token, strlen(token));
        free(token);
    }
}

/* May the repository API load ref (a file path or a registry reference)?
 * (load_lock held) */
static inf_status check_ref(srv_models *ms, const char *ref, inf_error *err) {
    if (!inf_registry_ref_is_path(ref)) return INF_OK; /* the registry's grants decide */
    if (!ms->srv->opt.allow_repository_paths) {
        set_err(err, INF_EDENIED,
                "loading by file path is off: give a registry reference, or start the server with "
                "--allow-repository-paths and --model-root DIR%s%s", "", "");
        return INF_EDENIED;
    }
    char real[PATH_MAX];
    return confined_path(ms, ref, real, err);
}

/* The repository API on a generative (GGUF) model (load_lock held): *handled
 * = 1 when name is one, or ref (a file already allowed by check_ref, or a
 * registry reference) is a GGUF file; a reload first waits for the old
 * model's generations (inf__serve_llm_remove), then loads the new one. */
static inf_status load_llm(srv_models *ms, const char *name, const char *ref, int who, int *handled, inf_error *err) {
    *handled = 0;
    srv_llm *cur = inf__serve_llm_find(ms->srv, name);
    char source[1024] = "", real[PATH_MAX], gguf[4096], reg_name[129] = "";
    int64_t reg_version = 0;
    if (ref) inf__serve_copy_str(source, sizeof source, ref);
    else if (cur) inf__serve_copy_str(source, sizeof source, inf__serve_llm_ref_of(cur));
    else if (!find_slot(ms, name) && (ms->reg || ms->srv->opt.home || ms->srv->opt.registry))
        inf__serve_copy_str(source, sizeof source, name); /* NAME in the registry */
    if (!source[0]) return INF_OK;
    const char *at = source;
    if (ref && inf_registry_ref_is_path(ref) && confined_path(ms, ref, real, NULL) == INF_OK) at = real;
    if (!gguf_ref(ms, at, gguf, sizeof gguf, reg_name, &reg_version)) {
        if (!cur) return INF_OK; /* not a GGUF model: the ONNX path decides */
        *handled = 1;
        set_err(err, INF_EINVAL, "'%s' is a generative (GGUF) model; '%s' is not a GGUF file or GGUF registry model",
                name, source);
        audit_repository(ms, who, "serve-load", name, source, "refused", err ? err->message : NULL);
        return INF_EINVAL;
    }
    *handled = 1;
    inf_status st = INF_OK;
    if (find_slot(ms, name)) {
        st = INF_EEXIST;
        set_err(err, st, "model '%s' is served as an ONNX model; unload it before loading a GGUF file under its name%s",
                name, "");
    } else if (!cur && count_slots(ms) + inf__serve_llm_count(ms->srv) >= ms->srv->opt.max_models) {
        st = INF_EBUSY;
        char n_served[16];
        snprintf(n_served, sizeof n_served, "%d", count_slots(ms) + inf__serve_llm_count(ms->srv));
        set_err(err, st, "model '%s': the server already serves %s models, the most --max-models allows; unload "
                         "one first", name, n_served);
    }
    if (st != INF_OK) {
        audit_repository(ms, who, "serve-load", name, source, "refused", err ? err->message : NULL);
        return st;
    }
    if (at == real) inf__serve_copy_str(source, sizeof source, real); /* a reload without a ref opens this file */
    /* a file that does not load leaves the old model serving (the check maps the file: cheap) */
    inf_llm_model *probe = NULL;
    if (cur && (st = inf_llm_model_load(gguf, &probe, err)) != INF_OK) {
        audit_repository(ms, who, "serve-load", name, source, "failed", err ? err->message : NULL);
        return st;
    }
    inf_llm_model_free(probe);
    if (cur) inf__serve_llm_remove(ms->srv, name, NULL); /* in-flight generations finish on the old one */
    st = inf__serve_llm_add(ms->srv, name, gguf, reg_name, reg_version, err);
    srv_llm *now = st == INF_OK ? inf__serve_llm_find(ms->srv, name) : NULL;
    if (now) inf__serve_llm_set_ref(now, source);
    if (st == INF_OK) fprintf(stderr, "infera serve: loaded generative model '%s' from %s\n", name, source);
    audit_repository(ms, who, "serve-load", name, source, st == INF_OK ? "ok" : "failed",
                     st == INF_OK ? NULL : err ? err->message : NULL);
    return st;
}

inf_status inf__serve_models_load(srv_models *ms, const char *name, const char *ref, int who, inf_error *err) {
    if (!valid_name(name)) {
        set_err(err, INF_EINVAL, "invalid model name '%s'%s", name, "");
        return INF_EINVAL;
    }
    pthread_mutex_lock(&ms->load_lock);
    if (!ref || check_ref(ms, ref, NULL) == INF_OK) {
        int handled;
        inf_status lst = load_llm(ms, name, ref, who, &handled, err);
        if (handled) {
            pthread_mutex_unlock(&ms->load_lock);
            return lst;
        }
    }
    srv_slot *slot = find_slot(ms, name);
    int created = 0;
    inf_status st = INF_OK;
    char configured[1024] = "";
    if (slot) snprintf(configured, sizeof configured, "%s", slot->ref);
    const char *audit_ref = ref ? ref : slot ? configured : NULL;
    if (ref && (st = check_ref(ms, ref, err)) != INF_OK) goto refused;
    if (!slot) {
        const char *r = ref;
        if (!r && (ms->reg || ms->srv->opt.home || ms->srv->opt.registry)) r = name; /* NAME in the registry */
        audit_ref = r;
        if (!r) {
            st = INF_ENOENT;
            set_err(err, st,
                    "model '%s' is not in the repository; give its file or registry reference as "
                    "{\"parameters\": {\"ref\": \"...\"}}%s",
                    name, "");
            goto refused;
        }
        if (count_slots(ms) >= ms->srv->opt.max_models) {
            st = INF_EBUSY;
            char n_served[16];
            snprintf(n_served, sizeof n_served, "%d", count_slots(ms));
            set_err(err, st, "model '%s': the server already serves %s models, the most --max-models allows; unload "
                             "one first", name, n_served);
            goto refused;
        }
        pthread_mutex_lock(&ms->lock);
        slot = new_slot(ms, name, r);
        if (slot) slot->confined = inf_registry_ref_is_path(r), slot->from_api = 1;
        pthread_mutex_unlock(&ms->lock);
        if (!slot) {
            st = INF_ENOMEM;
            set_err(err, st, "model '%s': more than 64 models%s", name, "");
            goto refused;
        }
        created = 1;
        ref = NULL;
    }
    int was_confined = slot->confined;
    if (ref) slot->confined = inf_registry_ref_is_path(ref);
    st = reload(ms, slot, ref, 0, err);
    if (st != INF_OK) slot->confined = was_confined;
    if (st != INF_OK && created) {
        pthread_mutex_lock(&ms->lock);
        slot->used = 0;
        pthread_mutex_unlock(&ms->lock);
    }
    audit_repository(ms, who, "serve-load", name, audit_ref, st == INF_OK ? "ok" : "failed",
                     st == INF_OK ? NULL : err ? err->message : NULL);
    pthread_mutex_unlock(&ms->load_lock);
    return st;
refused:
    audit_repository(ms, who, "serve-load", name, audit_ref, "refused", err ? err->message : NULL);
    pthread_mutex_unlock(&ms->load_lock);
    return st;
}

inf_status inf__serve_models_unload(srv_models *ms, const char *name, int who, inf_error *err) {
    pthread_mutex_lock(&ms->load_lock);
    srv_llm *llm = find_slot(ms, name) ? NULL : inf__serve_llm_find(ms->srv, name);
    if (llm) { /* a generative model: returns once its generations have finished */
        char ref[1024];
        inf__serve_copy_str(ref, sizeof ref, inf__serve_llm_ref_of(llm));
        inf_status st = inf__serve_llm_remove(ms->srv, name, err);
        audit_repository(ms, who, "serve-unload", name, ref, st == INF_OK ? "ok" : "refused",
                         st == INF_OK ? NULL : err ? err->message : NULL);
        pthread_mutex_unlock(&ms->load_lock);
        return st;
    }
    pthread_mutex_lock(&ms->lock);
    srv_slot *slot = find_slot(ms, name);
    srv_version *old = slot ? slot->current : NULL;
    char ref[1024] = "";
    if (slot) {
        slot->current = NULL;
        snprintf(slot->state, sizeof slot->state, "UNAVAILABLE");
        snprintf(slot->reason, sizeof slot->reason, "unloaded");
        snprintf(ref, sizeof ref, "%s", slot->ref);
        if (slot->from_api) slot->used = 0; /* a name the API added goes with its unload */
    }
    pthread_mutex_unlock(&ms->lock);
    if (!slot) set_err(err, INF_ENOENT, "unknown model '%s'%s", name, "");
    audit_repository(ms, who, "serve-unload", name, slot ? ref : NULL, slot ? "ok" : "refused",
                     slot ? NULL : err ? err->message : NULL);
    pthread_mutex_unlock(&ms->load_lock);
    if (!slot) return INF_ENOENT;
    if (old) {
        if (old->metrics) atomic_store(&old->metrics->loaded, 0);
        fprintf(stderr, "infera serve: unloaded model '%s' version %s\n", name, old->version);
        inf__serve_version_release(old);
    }
    return INF_OK;
}

void inf__serve_models_index_json(srv_models *ms, int ready_only, srv_buf *out) {
    inf__serve_buf_put(out, "[", 1);
    int first = 1;
    pthread_mutex_lock(&ms->lock);
    for (int i = 0; i < MAX_SLOTS; i++) {
        srv_slot *s = &ms->slots[i];
        if (!s->used || (ready_only && !s->current)) continue;
        if (!first) inf__serve_buf_put(out, ",", 1);
        first = 0;
        inf__serve_buf_puts(out, "{\"name\":");
        inf__serve_buf_json_str(out, s->name, strlen(s->name));
        if (s->current) {
            inf__serve_buf_puts(out, ",\"version\":");
            inf__serve_buf_json_str(out, s->current->version, strlen(s->current->version));
        }
        inf__serve_buf_puts(out, ",\"state\":");
        inf__serve_buf_json_str(out, s->state, strlen(s->state));
        inf__serve_buf_puts(out, ",\"reason\":");
        inf__serve_buf_json_str(out, s->reason, strlen(s->reason));
        inf__serve_buf_put(out, "}", 1);
    }
    pthread_mutex_unlock(&ms->lock);
    inf__serve_llm_index_json(ms->srv, out, &first); /* generative (GGUF) models */
    inf__serve_buf_put(out, "]", 1);
}

int inf__serve_models_n_loaded(srv_models *ms) {
    int n = 0;
    pthread_mutex_lock(&ms->lock);
    for (int i = 0; i < MAX_SLOTS; i++) n += ms->slots[i].used && ms->slots[i].current;
    pthread_mutex_unlock(&ms->lock);
    return n;
}

int inf__serve_models_all_ready(srv_models *ms) {
    int ok = 1;
    pthread_mutex_lock(&ms->lock);
    for (int i = 0; i < MAX_SLOTS; i++)
        if (ms->slots[i].used && !ms->slots[i].current && strcmp(ms->slots[i].reason, "unloaded")) ok = 0;
    pthread_mutex_unlock(&ms->lock);
    return ok;
}

/* The registry model a served name predicts with (grants are per registry
 * model): the name part of its registry reference, else the name itself. */
void inf__serve_models_registry_name(srv_models *ms, const char *served, char *out, size_t size) {
    const char *at0 = strchr(served, '@'); /* NAME@ALIAS (--all-aliases), served or not */
    snprintf(out, size, "%.*s", (int)(at0 ? (size_t)(at0 - served) : strlen(served)), served);
    pthread_mutex_lock(&ms->lock);
    srv_slot *slot = find_slot(ms, served);
    if (slot && slot->from_registry) {
        const char *at = strchr(slot->ref, '@');
        snprintf(out, size, "%.*s", (int)(at ? (size_t)(at - slot->ref) : strlen(slot->ref)), slot->ref);
    }
    pthread_mutex_unlock(&ms->lock);
}

/* --all-aliases: one slot "NAME@ALIAS" per alias the server's principal can
 * see; new aliases are loaded, removed ones unloaded (load_lock held).  A
 * failed load of one alias is reported and retried at the next sync. */
static inf_status sync_aliases(srv_models *ms, int at_start, inf_error *err) {
    inf_status st = loader_registry(ms, err);
    if (st != INF_OK) return st;
    char *json = NULL;
    inf_error e = {0};
    if ((st = inf_registry_list_json(ms->reg, &json, &e)) != INF_OK) {
        set_err(err, st, "--all-aliases: cannot list the registry: %s%s", e.message, "");
        return st;
    }
    cJSON *root = cJSON_Parse(json);
    inf_registry_string_free(json);
    if (!cJSON_IsArray(root)) {
        cJSON_Delete(root);
        set_err(err, INF_EFORMAT, "--all-aliases: the registry listing is not a JSON array%s%s", "", "");
        return INF_EFORMAT;
    }
    char seen[MAX_SLOTS][260];
    int n_seen = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, root) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(m, "name");
        const cJSON *aliases = cJSON_GetObjectItemCaseSensitive(m, "aliases");
        const cJSON *a;
        if (!cJSON_IsString(name)) continue;
        cJSON_ArrayForEach(a, aliases) {
            char ref[260];
            snprintf(ref, sizeof ref, "%s@%s", name->valuestring, a->string);
            if (n_seen < MAX_SLOTS) snprintf(seen[n_seen++], sizeof seen[0], "%s", ref);
            if (find_slot(ms, ref)) continue;
            pthread_mutex_lock(&ms->lock);
            srv_slot *slot = new_slot(ms, ref, ref);
            if (slot) slot->auto_alias = 1;
            pthread_mutex_unlock(&ms->lock);
            if (!slot) {
                fprintf(stderr, "infera serve: --all-aliases: more than %d models; %s not served\n", MAX_SLOTS, ref);
                continue;
            }
            inf_error le = {0};
            if (reload(ms, slot, NULL, 0, &le) != INF_OK) {
                pthread_mutex_lock(&ms->lock);
                slot->used = 0;
                pthread_mutex_unlock(&ms->lock);
            }
        }
    }
    cJSON_Delete(root);
    /* aliases that are gone */
    for (int i = 0; i < MAX_SLOTS && !at_start; i++) {
        srv_slot *s = &ms->slots[i];
        if (!s->used || !s->auto_alias) continue;
        int keep = 0;
        for (int k = 0; k < n_seen && !keep; k++) keep = !strcmp(seen[k], s->name);
        if (keep) continue;
        pthread_mutex_lock(&ms->lock);
        srv_version *old = s->current;
        s->current = NULL;
        s->used = 0;
        pthread_mutex_unlock(&ms->lock);
        fprintf(stderr, "infera serve: alias %s was removed from the registry; no longer served\n", s->name);
        if (old) {
            if (old->metrics) atomic_store(&old->metrics->loaded, 0);
            inf__serve_version_release(old);
        }
    }
    return INF_OK;
}

inf_status inf__serve_models_add_all_aliases(srv_models *ms, inf_error *err) {
    pthread_mutex_lock(&ms->load_lock);
    inf_status st = sync_aliases(ms, 1, err);
    pthread_mutex_unlock(&ms->load_lock);
    return st;
}

/* ---- auth ----------------------------------------------------------------- */

int inf__serve_models_auth_enabled(srv_models *ms) { return ms->auth_on; }

/* The index of principal in callers[] (added with a copy of its token when
 * new), -1 when the table is full or out of memory (audit_lock held). */
static int caller_index(srv_models *ms, const char *principal, const char *token) {
    for (int i = 0; i < ms->n_callers; i++)
        if (!strcmp(ms->callers[i].principal, principal)) {
            if (strcmp(ms->callers[i].token, token)) { /* a newer token of the same principal */
                char *t = strdup(token);
                if (t) {
                    explicit_bzero(ms->callers[i].token, strlen(ms->callers[i].token));
                    free(ms->callers[i].token);
                    ms->callers[i].token = t;
                }
            }
            return i;
        }
    if (ms->n_callers >= MAX_CALLERS) return -1;
    caller *c = &ms->callers[ms->n_callers];
    c->token = strdup(token);
    if (!c->token) return -1;
    snprintf(c->principal, sizeof c->principal, "%s", principal);
    return ms->n_callers++;
}

inf_status inf__serve_models_authorize(srv_models *ms, const char *bearer, const char *model, int admin, int *who,
                                       inf_error *err) {
    if (who) *who = -1;
    if (!ms->auth_on) return INF_OK;
    if (!bearer || !*bearer) {
        set_err(err, INF_EAUTH, "authentication required: send 'Authorization: Bearer <token>'%s%s", "", "");
        return INF_EAUTH;
    }
    char key[sizeof ((auth_entry *)0)->key];
    char hex[65];
    inf_sha256_hex(bearer, strlen(bearer), hex);
    snprintf(key, sizeof key, "%s|%s|%d", hex, model ? model : "", admin);
    uint64_t now = inf__serve_now_ns();
    pthread_mutex_lock(&ms->auth_lock);
    for (int i = 0; i < AUTH_CACHE; i++) {
        auth_entry *a = &ms->auth[i];
        if (a->expires_ns > now && !strcmp(a->key, key)) {
            inf_status st = a->status;
            if (st != INF_OK) set_err(err, st, "%s%s", a->message, "");
            if (who) *who = a->caller;
            pthread_mutex_unlock(&ms->auth_lock);
            return st;
        }
    }
    inf_registry *r = NULL;
    inf_error e = {0};
    int idx = -1;
    inf_status st = open_registry(ms, bearer, &r, &e);
    if (st == INF_OK) {
        st = inf_registry_check(r, model,
                                admin >= 2 ? INF_REGISTRY_ADMIN : admin ? INF_REGISTRY_PUBLISH : INF_REGISTRY_PREDICT,
                                "serve", &e);
        const char *principal = inf_registry_principal(r);
        if (st == INF_OK && principal) {
            pthread_mutex_lock(&ms->audit_lock);
            idx = caller_index(ms, principal, bearer);
            pthread_mutex_unlock(&ms->audit_lock);
        }
        inf_registry_free(r);
    } else {
        st = INF_EIO;
    }
    if (who) *who = idx;
    auth_entry *a = &ms->auth[ms->auth_next++ % AUTH_CACHE];
    snprintf(a->key, sizeof a->key, "%s", key);
    a->caller = idx;
    a->status = st;
    snprintf(a->message, sizeof a->message, "%s", e.message);
    /* failures of the store itself are not cached */
    a->expires_ns = st == INF_EIO ? 0 : now + (uint64_t)(ms->srv->opt.auth_cache_secs > 0 ? ms->srv->opt.auth_cache_secs : 0) * 1000000000ull;
    pthread_mutex_unlock(&ms->auth_lock);
    if (st != INF_OK) set_err(err, st, "%s%s", e.message, "");
    return st;
}

void inf__serve_models_audit(srv_models *ms, int who, const char *action, const char *served, const char *detail,
                             const char *outcome, const char *message) {
    pthread_mutex_lock(&ms->load_lock);
    audit_repository(ms, who, action, served, detail, outcome, message);
    pthread_mutex_unlock(&ms->load_lock);
}

int inf__serve_models_has(srv_models *ms, const char *name) {
    pthread_mutex_lock(&ms->lock);
    int has = find_slot(ms, name) != NULL;
    pthread_mutex_unlock(&ms->lock);
    return has;
}

void inf__serve_models_caller_name(srv_models *ms, int who, char *out, size_t size) {
    pthread_mutex_lock(&ms->audit_lock);
    snprintf(out, size, "%s", who >= 0 && who < ms->n_callers ? ms->callers[who].principal : "anonymous");
    pthread_mutex_unlock(&ms->audit_lock);
}

/* ---- audit and alias polling ---------------------------------------------- */

void inf__serve_models_note_prediction(srv_models *ms, srv_version *v, int who, int64_t rows) {
    inf__serve_models_note_rows(ms, v->metrics, who, rows);
}

void inf__serve_models_note_rows(srv_models *ms, srv_model_metrics *metrics, int who, int64_t rows) {
    if (!metrics || !metrics->registry_version) return;
    if (who >= 0) {
        pthread_mutex_lock(&ms->audit_lock);
        int i = 0;
        while (i < ms->n_audit && (ms->audit[i].m != metrics || ms->audit[i].caller != who)) i++;
        if (i == ms->n_audit && ms->n_audit < MAX_AUDIT_ROWS)
            ms->audit[ms->n_audit++] = (audit_rows){metrics, who, 0};
        if (i < ms->n_audit) {
            ms->audit[i].rows += rows;
            pthread_mutex_unlock(&ms->audit_lock);
            return;
        }
        pthread_mutex_unlock(&ms->audit_lock); /* table full: counted as the server's own below */
    }
    atomic_fetch_add_explicit(&metrics->audit_rows, rows, memory_order_relaxed);
}

static void audit_flush_callers(srv_models *ms);

/* The audit record of rows predicted by this server for name@version. */
static inf_registry_prediction serve_prediction(const srv_models *ms, const char *name, int64_t version, int64_t rows) {
    inf_registry_prediction p = {0};
    p.name = name;
    p.version = version;
    p.mode = "serve";
    p.source = ms->srv->listen_url;
    p.n_rows = rows;
    return p;
}
/* One "predict" record per (model, version) with the rows served since the
 * last one; counts live in the metrics entries, which outlive versions, so
 * requests finishing on a swapped-out version are audited too (load_lock held). */
static void audit_flush(srv_models *ms) {
    if (!ms->reg) return;
    audit_flush_callers(ms);
    srv_metrics *m = &ms->srv->metrics;
    for (;;) {
        char name[129];
        int64_t version = 0, rows = 0;
        pthread_mutex_lock(&m->lock);
        for (srv_model_metrics *e = m->head; e; e = e->next) {
            if (e->registry_version > 0 && atomic_load(&e->audit_rows) > 0) {
                rows = atomic_exchange(&e->audit_rows, 0);
                version = e->registry_version;
                snprintf(name, sizeof name, "%s", e->registry_name);
                break;
            }
        }
        pthread_mutex_unlock(&m->lock);
        if (rows <= 0) return;
        inf_registry_prediction p = serve_prediction(ms, name, version, rows);
        inf_error e = {0};
        if (inf_registry_audit_prediction(ms->reg, &p, &e) != INF_OK) {
            fprintf(stderr, "infera serve: audit of %s version %lld failed: %s\n", name, (long long)version, e.message);
            return;
        }
    }
}

/* One "predict" record per (model, version, calling principal), written by a
 * registry handle acting as that principal, so the audit log says who asked
 * for the predictions.  When that fails (token revoked since), the rows are
 * recorded by the server's own handle with the caller named in "job". */
static void audit_flush_callers(srv_models *ms) {
    for (;;) {
        char name[129], principal[129];
        char *token = NULL;
        int64_t version = 0, rows = 0;
        pthread_mutex_lock(&ms->audit_lock);
        for (int i = 0; i < ms->n_audit; i++) {
            audit_rows *a = &ms->audit[i];
            if (a->rows <= 0) continue;
            rows = a->rows;
            a->rows = 0;
            version = a->m->registry_version;
            snprintf(name, sizeof name, "%s", a->m->registry_name);
            snprintf(principal, sizeof principal, "%s", ms->callers[a->caller].principal);
            token = strdup(ms->callers[a->caller].token);
            break;
        }
        pthread_mutex_unlock(&ms->audit_lock);
        if (rows <= 0) return;
        inf_registry_prediction p = serve_prediction(ms, name, version, rows);
        inf_error e = {0};
        inf_registry *r = NULL;
        inf_status st = token ? open_registry(ms, token, &r, &e) : INF_ENOMEM;
        if (st == INF_OK) st = inf_registry_audit_prediction(r, &p, &e);
        if (r) inf_registry_free(r);
        if (token) {
            explicit_bzero(token, strlen(token));
            free(token);
        }
        if (st != INF_OK) {
            char job[160];
            snprintf(job, sizeof job, "caller:%s", principal);
            p.job_id = job;
            inf_error e2 = {0};
            if (inf_registry_audit_prediction(ms->reg, &p, &e2) != INF_OK)
                fprintf(stderr, "infera serve: audit of %s version %lld for %s failed: %s\n", name, (long long)version,
                        principal, e2.message);
        }
    }
}

static void poll_aliases(srv_models *ms) {
    for (int i = 0; i < MAX_SLOTS; i++) {
        srv_slot *s = &ms->slots[i];
        char ref[1024];
        int64_t cur = 0;
        pthread_mutex_lock(&ms->lock);
        int take = s->used && s->from_registry && s->current;
        if (take) {
            snprintf(ref, sizeof ref, "%s", s->ref);
            cur = s->current->registry_version;
        }
        pthread_mutex_unlock(&ms->lock);
        if (!take) continue;
        inf_registry_resolved res;
        memset(&res, 0, sizeof res);
        inf_error e = {0};
        if (inf_registry_resolve(ms->reg, ref, &res, &e) != INF_OK) {
            fprintf(stderr, "infera serve: cannot resolve %s: %s\n", ref, e.message);
            continue;
        }
        int64_t now_v = res.version;
        inf_registry_resolved_clear(&res);
        if (now_v != cur) {
            fprintf(stderr, "infera serve: %s moved from version %lld to %lld; loading\n", ref, (long long)cur,
                    (long long)now_v);
            reload(ms, s, NULL, 0, NULL);
        }
    }
}

/* Every poll period (or at once when the PostgreSQL registry announces an
 * alias move): follow alias moves, pick up new/removed aliases
 * (--all-aliases), refresh the auth switch, write the audit records. */
static void *poller(void *arg) {
    srv_models *ms = arg;
    int secs = ms->srv->opt.poll_secs > 0 ? ms->srv->opt.poll_secs : 5;
    pthread_mutex_lock(&ms->load_lock);
    while (!ms->stop) {
        int moved = 0;
        if (ms->listener) {
            pthread_mutex_unlock(&ms->load_lock);
            moved = inf__serve_listen_wait(ms->listener, secs * 1000) > 0;
            pthread_mutex_lock(&ms->load_lock);
        } else {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += secs;
            pthread_cond_timedwait(&ms->stop_cond, &ms->load_lock, &ts);
        }
        if (ms->stop) break;
        if (ms->srv->opt.all_aliases && (ms->srv->opt.poll_secs > 0 || moved)) sync_aliases(ms, 0, NULL);
        if (ms->srv->opt.poll_secs > 0 || moved) poll_aliases(ms);
        ms->auth_on = inf_registry_auth_enabled(ms->reg);
        inf__serve_quotas_sync_registry(ms->srv->quotas, ms->reg);
        audit_flush(ms);
    }
    audit_flush(ms);
    pthread_mutex_unlock(&ms->load_lock);
    return NULL;
}

inf_status inf__serve_models_start_poller(srv_models *ms, inf_error *err) {
    pthread_mutex_lock(&ms->load_lock);
    if (!ms->reg && (ms->srv->opt.home || ms->srv->opt.registry)) {
        inf_status st = loader_registry(ms, err);
        if (st != INF_OK) {
            pthread_mutex_unlock(&ms->load_lock);
            return st;
        }
    }
    int need = ms->reg != NULL;
    if (need) inf__serve_quotas_sync_registry(ms->srv->quotas, ms->reg); /* then every poll period */
    pthread_mutex_unlock(&ms->load_lock);
    if (!need) return INF_OK;
    const char *url = ms->srv->opt.registry ? ms->srv->opt.registry : getenv("INFERA_REGISTRY");
    inf_status lst = inf__serve_listen_open(url, &ms->listener, err);
    if (lst != INF_OK) return lst;
    if (pthread_create(&ms->poller, NULL, poller, ms) == 0) ms->poller_started = 1;
    return INF_OK;
}

/* ---- life ----------------------------------------------------------------- */

srv_models *inf__serve_models_new(srv_server *srv) {
    srv_models *ms = calloc(1, sizeof *ms);
    if (!ms) return NULL;
    ms->srv = srv;
    pthread_mutex_init(&ms->lock, NULL);
    pthread_mutex_init(&ms->load_lock, NULL);
    pthread_mutex_init(&ms->auth_lock, NULL);
    pthread_mutex_init(&ms->audit_lock, NULL);
    pthread_cond_init(&ms->stop_cond, NULL);
    return ms;
}

void inf__serve_models_free(srv_models *ms) {
    if (!ms) return;
    if (ms->poller_started) {
        pthread_mutex_lock(&ms->load_lock);
        ms->stop = 1;
        pthread_cond_broadcast(&ms->stop_cond);
        inf__serve_listen_wake(ms->listener);
        pthread_mutex_unlock(&ms->load_lock);
        pthread_join(ms->poller, NULL);
    }
    inf__serve_listen_close(ms->listener);
    for (int i = 0; i < MAX_SLOTS; i++) {
        srv_slot *s = &ms->slots[i];
        if (s->used && s->current) inf__serve_version_release(s->current);
        s->current = NULL;
    }
    if (ms->reg) inf_registry_free(ms->reg);
    pthread_mutex_destroy(&ms->lock);
    pthread_mutex_destroy(&ms->load_lock);
    pthread_mutex_destroy(&ms->auth_lock);
    pthread_mutex_destroy(&ms->audit_lock);
    pthread_cond_destroy(&ms->stop_cond);
    for (int i = 0; i < ms->n_callers; i++) {
        explicit_bzero(ms->callers[i].token, strlen(ms->callers[i].token));
        free(ms->callers[i].token);
    }
    memset(ms->auth, 0, sizeof ms->auth);
    free(ms);
}
