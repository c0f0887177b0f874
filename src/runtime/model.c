/*
 * model.c -- model reference -> model + pipeline + lineage stamp, and the
 * session + executor pair of a scoring thread (see model.h).  Callers: the
 * batch and stream runners, the SQLite and PostgreSQL extensions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "infera/bundle.h"
#include "runtime/model.h"

inf_status inf__rt_file_sha256(const char *path, char out[65], inf_error *err) {
    int fd;
    uint64_t size;
    if (inf_file_open(path, "model", INF_FILE_MAX_MODEL_BYTES, &fd, &size, err)) return err ? err->status : INF_EIO;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return inf_error_set(err, INF_ENOMEM, "model '%s': cannot open: out of memory", path);
    }
    inf_sha256 c;
    inf_sha256_init(&c);
    unsigned char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) inf_sha256_update(&c, buf, n);
    int bad = ferror(f);
    fclose(f);
    if (bad) return inf_error_set(err, INF_EIO, "model '%s': read error", path);
    uint8_t d[32];
    inf_sha256_final(&c, d);
    inf_sha256_to_hex(d, out);
    return INF_OK;
}

void inf__rt_model_stamp(const char *path, const char *sha256_hex, char name[160], char version[64]) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(name, 160, "%.*s", (int)strcspn(base, "."), base);
    snprintf(version, 64, "sha256:%.12s", sha256_hex);
}

inf_status inf__rt_model_session(const inf__rt_model *m, int n_threads, int max_batch, inf_session **session,
                                 inf_pipeline_exec **exec, inf_error *err) {
    inf_session_options so;
    inf_session_options_init(&so);
    if (n_threads > 0) so.n_threads = n_threads;
    if (max_batch > 0) so.max_batch = max_batch;
    so.precision = m->precision;
    *session = NULL;
    *exec = NULL;
    inf_status st = inf_session_new(m->model, &so, session, err);
    if (!st && (st = inf_pipeline_exec_new(m->pipeline, exec, err))) {
        inf_session_free(*session);
        *session = NULL;
    }
    return st;
}

void inf__rt_model_close(inf__rt_model *m) {
    if (!m) return;
    inf_pipeline_free(m->pipeline);
    inf_model_free(m->model);
    inf_registry_free(m->registry);
    memset(m, 0, sizeof *m);
}

/* The spec a file model carries beside it, as `infera serve` finds it:
 * <model without .onnx>.pipeline.json.  Returns 1 and fills out when that
 * file exists, so every runner maps a file model's records the same way. */
static int spec_beside(const char *ref, char *out, size_t cap) {
    size_t n = strlen(ref);
    if (n > 5 && !strcasecmp(ref + n - 5, ".onnx")) n -= 5;
    if ((size_t)snprintf(out, cap, "%.*s.pipeline.json", (int)n, ref) >= cap) return 0;
    int fd;
    uint64_t size;
    if (inf_file_open(out, "pipeline spec", 0, &fd, &size, NULL)) return 0; /* never blocks on a FIFO */
    close(fd);
    return 1;
}

static inf_status load_pipeline(inf__rt_model *m, const inf__rt_model_options *o, const char *spec_json,
                                inf_error *err) {
    inf_pipeline_options po;
    inf_pipeline_options_init(&po);
    po.model_name = m->name;
    po.model_version = m->version;
    po.id_column = o->id_column;
    inf_status st;
    if (o->pipeline_path)
        st = inf_pipeline_load(o->pipeline_path, m->model, &po, &m->pipeline, err);
    else if (spec_json)
        st = inf_pipeline_load_string(spec_json, strlen(spec_json), m->model, &po, &m->pipeline, err);
    else
        st = inf_pipeline_default(m->model, &po, &m->pipeline, err);
    return st;
}

inf_status inf__rt_model_open(const char *ref, const inf__rt_model_options *opts, inf__rt_model *m,
                               inf_error *err) {
    inf__rt_model_options defaults = {0};
    const inf__rt_model_options *o = opts ? opts : &defaults;
    memset(m, 0, sizeof *m);
    m->precision = o->precision;
    inf_status st;
    if (!ref || !*ref) return inf_error_set(err, INF_EINVAL, "model reference is empty");
    if (inf_registry_ref_is_path(ref)) {
        if ((st = inf__rt_file_sha256(ref, m->sha256, err))) return st;
        if ((st = inf_model_load(ref, NULL, &m->model, err))) goto fail;
        /* a bundle is its source model compiled: it stamps the source's SHA-256
         * (same predictions, same lineage) and brings the source's spec */
        inf_bundle_info bundle;
        int is_bundle = inf_model_bundle_info(m->model, &bundle);
        if (is_bundle && bundle.source_sha256[0]) snprintf(m->sha256, sizeof m->sha256, "%s", bundle.source_sha256);
        inf__rt_model_stamp(ref, m->sha256, m->name, m->version);
        snprintf(m->source, sizeof m->source, "%s", ref);
        char beside[4200];
        inf__rt_model_options with_spec = *o;
        if (!o->pipeline_path && is_bundle && bundle.pipeline) {
            char *spec = malloc(bundle.pipeline_len + 1);
            if (!spec) {
                st = inf_error_set(err, INF_ENOMEM, "model '%s': out of memory", ref);
                goto fail;
            }
            memcpy(spec, bundle.pipeline, bundle.pipeline_len);
            spec[bundle.pipeline_len] = 0;
            st = load_pipeline(m, o, spec, err);
            free(spec);
            if (st) goto fail;
            return INF_OK;
        }
        if (!o->pipeline_path && spec_beside(ref, beside, sizeof beside)) with_spec.pipeline_path = beside;
        if ((st = load_pipeline(m, &with_spec, NULL, err))) goto fail;
        return INF_OK;
    }
    inf_registry_options ro;
    inf_registry_options_from_env(&ro);
    if (o->home) ro.home = o->home;
    if (o->registry_url) ro.url = o->registry_url;
    ro.create = 0;
    if ((st = inf_registry_open(&ro, &m->registry, err))) goto fail;
    inf_registry_resolved v;
    memset(&v, 0, sizeof v);
    if ((st = inf_registry_load_model(m->registry, ref, NULL, &m->model, &v, err))) {
        inf_registry_resolved_clear(&v);
        goto fail;
    }
    m->from_registry = 1;
    m->version_num = v.version;
    snprintf(m->name, sizeof m->name, "%s", v.name);
    snprintf(m->version, sizeof m->version, "%lld", (long long)v.version);
    snprintf(m->sha256, sizeof m->sha256, "%s", v.sha256);
    snprintf(m->source, sizeof m->source, "%s", v.artifact_path);
    st = load_pipeline(m, o, v.pipeline, err);
    inf_registry_resolved_clear(&v);
    if (st) goto fail;
    if (!o->keep_registry) {
        inf_registry_free(m->registry);
        m->registry = NULL;
    }
    return INF_OK;
fail:
    inf__rt_model_close(m);
    return st;
}
