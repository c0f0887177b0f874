/*
 * models.c -- the models a server serves: slots by name, refcounted
 * versions, zero-downtime swaps and loading.  The repository API lives in
 * models_repository.c, auth, prediction audit and alias polling in
 * models_access.c; models_internal.h holds what the three share.
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
#include "serve/models_internal.h"
#include "serve/serve.h"

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

inf_status inf__serve_models_open_registry(srv_models *ms, const char *token, inf_registry **out, inf_error *err) {
    inf_registry_options o;
    inf_registry_options_from_env(&o);
    if (ms->srv->opt.home) o.home = ms->srv->opt.home;
    if (ms->srv->opt.registry) o.url = ms->srv->opt.registry;
    if (token) o.token = token;
    o.create = 0;
    return inf_registry_open(&o, out, err);
}

/* The loader's handle (load_lock held). */
inf_status inf__serve_models_loader_registry(srv_models *ms, inf_error *err) {
    if (ms->reg) return INF_OK;
    inf_status st = inf__serve_models_open_registry(ms, NULL, &ms->reg, err);
    if (st == INF_OK) ms->auth_on = inf_registry_auth_enabled(ms->reg);
    return st;
}

/* ---- loading -------------------------------------------------------------- */

void inf__serve_models_set_err(inf_error *err, inf_status st, const char *fmt, const char *a, const char *b) {
    if (!err) return;
    inf_error_set(err, st, fmt, a, b);
}

/* ---- the model root ---------------------------------------------------------- */

#define NOT_ALLOWED "model reference not found or not allowed: a file reference must name a regular file under " \
                    "--model-root"

/* 1 when real (a resolved path) is the root or below it. */
int inf__serve_models_path_under(const char *root, const char *real) {
    size_t n = strlen(root);
    if (n == 1 && root[0] == '/') return real[0] == '/';
    return !strncmp(real, root, n) && (real[n] == '/' || real[n] == 0);
}

/* The real path of a file reference that may be loaded: a regular file
 * under the model root (a relative reference is taken under the root).
 * INF_ENOENT with the one generic message for everything else. */
inf_status inf__serve_models_confined_path(srv_models *ms, const char *ref, char real[PATH_MAX], inf_error *err) {
    const char *root = ms->srv->model_root_real;
    char joined[PATH_MAX * 2];
    struct stat st;
    if (root && ref[0] != '/') {
        snprintf(joined, sizeof joined, "%s/%s", root, ref);
        ref = joined;
    }
    if (!root || strlen(ref) >= PATH_MAX || !realpath(ref, real) || !inf__serve_models_path_under(root, real) ||
        stat(real, &st) || !S_ISREG(st.st_mode)) {
        inf__serve_models_set_err(err, INF_ENOENT, "%s%s", NOT_ALLOWED, "");
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
        if (!realpath(spec_path, real) || !inf__serve_models_path_under(ms->srv->model_root_real, real) ||
            stat(real, &st) || !S_ISREG(st.st_mode)) {
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
        inf__serve_models_set_err(err, INF_ENOMEM, "model '%s': out of memory%s", slot->name, "");
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
        st = inf__serve_models_loader_registry(ms, err);
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
            if ((st = inf__serve_models_confined_path(ms, ref, real, err)) != INF_OK) goto fail;
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
            inf__serve_models_set_err(
                err, st, "model '%s': its pipeline spec is not a regular file under --model-root%s", v->name, "");
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

srv_slot *inf__serve_models_find_slot(srv_models *ms, const char *name) {
    for (int i = 0; i < MAX_SLOTS; i++)
        if (ms->slots[i].used && !strcmp(ms->slots[i].name, name)) return &ms->slots[i];
    return NULL;
}

/* Load + swap (load_lock held).  ref NULL = the slot's own reference.  A
 * failure is written to the server log, and err gets the slot's reason;
 * with quiet, nothing is logged and err gets the bare cause (the caller
 * reports it: a --model that fails at start-up is the CLI's one error line). */
inf_status inf__serve_models_reload(srv_models *ms, srv_slot *slot, const char *ref, int quiet, inf_error *err) {
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

srv_slot *inf__serve_models_new_slot(srv_models *ms, const char *name, const char *ref) {
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

int inf__serve_models_valid_name(const char *s) {
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
int inf__serve_models_gguf_ref(srv_models *ms, const char *ref, char *path, size_t size, char *reg_name,
                               int64_t *reg_version) {
    if (inf_registry_ref_is_path(ref)) {
        size_t n = strlen(ref);
        if (!(n > 5 && !strcasecmp(ref + n - 5, ".gguf")) && !is_gguf_file(ref)) return 0;
        inf__serve_copy_str(path, size, ref);
        return 1;
    }
    inf_error e = {0};
    if (inf__serve_models_loader_registry(ms, &e) != INF_OK) return 0;
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
    if (!inf__serve_models_valid_name(name)) {
        inf__serve_models_set_err(err, INF_EINVAL,
                                  "--model %s: invalid model name '%s' (letters, digits, '.', '_', '-')", spec, name);
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
    if (inf__serve_models_find_slot(ms, name)) {
        pthread_mutex_unlock(&ms->load_lock);
        inf__serve_models_set_err(err, INF_EEXIST, "--model %s: a model named '%s' is already served", spec, name);
        return INF_EEXIST;
    }
    /* MODEL KIND: a GGUF file (or a registry version whose artifact is one)
     * is a generative model, served by llm_scheduler.c / openai.c */
    char gguf[4096], reg_name[129] = "";
    int64_t reg_version = 0;
    if (inf__serve_models_gguf_ref(ms, ref, gguf, sizeof gguf, reg_name, &reg_version)) {
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
    srv_slot *slot = inf__serve_models_new_slot(ms, name, ref);
    pthread_mutex_unlock(&ms->lock);
    inf_status st = INF_ENOMEM;
    if (slot) {
        st = inf__serve_models_reload(ms, slot, NULL, 1, err);
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
        inf__serve_models_set_err(err, INF_ENOMEM, "--model %s: more than 64 models%s", spec, "");
    }
    pthread_mutex_unlock(&ms->load_lock);
    return st;
}

inf_status inf__serve_models_acquire(srv_models *ms, const char *name, const char *version, srv_version **out,
                                     inf_error *err) {
    *out = NULL;
    pthread_mutex_lock(&ms->lock);
    srv_slot *slot = inf__serve_models_find_slot(ms, name);
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
