/*
 * grpc_methods.c -- the unary methods of the KServe V2 gRPC endpoint besides
 * ModelInfer: ServerLive/Ready, ModelReady, ServerMetadata, ModelMetadata,
 * ModelConfig, RepositoryIndex/ModelLoad/ModelUnload.  Each unpacks its
 * request, applies the HTTP route's access rule, asks the same models code
 * the HTTP handlers ask (routes.c) and answers with one message or a status
 * (grpc_server.c runs the calls; grpc_internal.h).
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "infera/registry.h"
#include "serve/grpc_internal.h"

/* ---- health and metadata ------------------------------------------------------------ */

/* Unpacks a request message of descriptor d, or answers INVALID_ARGUMENT. */
ProtobufCMessage *inf__serve_grpc_unpack_msg(gcall *c, const ProtobufCMessageDescriptor *d, const uint8_t *msg,
                                             size_t n) {
    ProtobufCMessage *m = protobuf_c_message_unpack(d, NULL, n, msg);
    if (!m) {
        char e[200];
        snprintf(e, sizeof e, "malformed %s: %zu bytes that are not a valid %s protobuf message", d->short_name, n,
                 d->name);
        inf__serve_grpc_finish(c, GRPC_STATUS_INVALID_ARGUMENT, e, NULL, 0);
    }
    return m;
}

void inf__serve_grpc_server_live(gcall *c, const uint8_t *msg, size_t n) {
    (void)msg, (void)n;
    if (inf__serve_grpc_authorize(c, NULL, 0)) return;
    Inference__ServerLiveResponse r = INFERENCE__SERVER_LIVE_RESPONSE__INIT;
    r.live = 1;
    inf__serve_grpc_reply(c, &r.base);
}

void inf__serve_grpc_server_ready(gcall *c, const uint8_t *msg, size_t n) {
    (void)msg, (void)n;
    if (inf__serve_grpc_authorize(c, NULL, 0)) return;
    srv_server *srv = c->g->srv;
    Inference__ServerReadyResponse r = INFERENCE__SERVER_READY_RESPONSE__INIT;
    r.ready = inf__serve_ready(srv);
    inf__serve_grpc_reply(c, &r.base);
}

void inf__serve_grpc_model_ready(gcall *c, const uint8_t *msg, size_t n) {
    Inference__ModelReadyRequest *q =
        (void *)inf__serve_grpc_unpack_msg(c, &inference__model_ready_request__descriptor, msg, n);
    if (!q) return;
    if (!inf__serve_grpc_authorize(c, q->name, 0)) {
        srv_version *v;
        inf_error e = {0};
        Inference__ModelReadyResponse r = INFERENCE__MODEL_READY_RESPONSE__INIT;
        r.ready = inf__serve_models_acquire(c->g->srv->models, q->name, q->version, &v, &e) == INF_OK;
        if (r.ready) inf__serve_version_release(v);
        else
            r.ready = inf__serve_llm_ready(c->g->srv, q->name, q->version); /* a GGUF model */
        inf__serve_grpc_reply(c, &r.base);
    }
    protobuf_c_message_free_unpacked(&q->base, NULL);
}

void inf__serve_grpc_server_metadata(gcall *c, const uint8_t *msg, size_t n) {
    (void)msg, (void)n;
    if (inf__serve_grpc_authorize(c, NULL, 0)) return;
    static char *extensions[] = {"binary_tensor_data", "model_repository", "parameters", "metrics", "records"};
    Inference__ServerMetadataResponse r = INFERENCE__SERVER_METADATA_RESPONSE__INIT;
    r.name = (char *)"infera";
    r.version = (char *)inf_version();
    r.n_extensions = sizeof extensions / sizeof extensions[0];
    r.extensions = extensions;
    inf__serve_grpc_reply(c, &r.base);
}

/* One TensorMetadata as /v2/models/{name} describes it (routes.c tensor_meta). */
static void tensor_meta(Inference__ModelMetadataResponse__TensorMetadata *t, const inf_value_info *vi,
                        const srv_map_output *mo, int64_t *dims, char *dtype_buf, size_t dtype_size) {
    inference__model_metadata_response__tensor_metadata__init(t);
    t->name = (char *)vi->name;
    if (mo) {
        t->datatype = (char *)inf__serve_kserve_dtype(mo->dtype);
        dims[0] = -1, dims[1] = mo->n_classes;
        t->n_shape = 2;
        t->shape = dims;
        return;
    }
    const char *dt = vi->kind == INF_KIND_TENSOR ? inf__serve_kserve_dtype(vi->dtype) : NULL;
    if (!dt) {
        snprintf(dtype_buf, dtype_size, "%s(%s)",
                 vi->kind == INF_KIND_SEQUENCE ? "SEQUENCE" : vi->kind == INF_KIND_MAP ? "MAP" : "TENSOR",
                 inf_dtype_name(vi->dtype));
        dt = dtype_buf;
    }
    t->datatype = (char *)dt;
    t->n_shape = vi->ndim > 0 ? (size_t)vi->ndim : 0;
    for (int d = 0; d < vi->ndim; d++) dims[d] = vi->dims[d] >= 0 ? vi->dims[d] : -1;
    t->shape = dims;
}

/* A GGUF language model: platform "gguf", no tensors (it answers the OpenAI routes over HTTP). */
static void llm_metadata(gcall *c, const char *name) {
    srv_llm *l = inf__serve_llm_acquire(c->g->srv, name);
    if (!l) {
        inf__serve_grpc_finish(c, GRPC_STATUS_NOT_FOUND, "model unloaded", NULL, 0);
        return;
    }
    char version[24];
    int64_t rv = inf__serve_llm_registry_version(l);
    snprintf(version, sizeof version, "%lld", (long long)(rv > 0 ? rv : 1));
    char *versions[1] = {version};
    Inference__ModelMetadataResponse r = INFERENCE__MODEL_METADATA_RESPONSE__INIT;
    r.name = (char *)name;
    r.n_versions = 1;
    r.versions = versions;
    r.platform = (char *)"gguf";
    inf__serve_grpc_reply(c, &r.base);
    inf__serve_llm_release(l);
}

void inf__serve_grpc_model_metadata(gcall *c, const uint8_t *msg, size_t n) {
    Inference__ModelMetadataRequest *q =
        (void *)inf__serve_grpc_unpack_msg(c, &inference__model_metadata_request__descriptor, msg, n);
    if (!q) return;
    if (inf__serve_grpc_authorize(c, q->name, 0)) goto out;
    if (inf__serve_llm_ready(c->g->srv, q->name, q->version)) {
        llm_metadata(c, q->name);
        goto out;
    }
    srv_version *v;
    inf_error e = {0};
    if (inf__serve_models_acquire(c->g->srv->models, q->name, q->version, &v, &e) != INF_OK) {
        inf__serve_grpc_finish(c, GRPC_STATUS_NOT_FOUND, e.message, NULL, 0);
        goto out;
    }
    int ni = inf_model_n_inputs(v->model), no = inf_model_n_outputs(v->model), nt = ni + no;
    Inference__ModelMetadataResponse__TensorMetadata *ts = calloc((size_t)nt + 1, sizeof *ts);
    Inference__ModelMetadataResponse__TensorMetadata **tp = calloc((size_t)nt + 1, sizeof *tp);
    int64_t(*dims)[INF_MAX_DIMS] = calloc((size_t)nt + 1, sizeof *dims);
    char(*dtn)[48] = calloc((size_t)nt + 1, sizeof *dtn);
    if (!ts || !tp || !dims || !dtn) {
        inf__serve_grpc_finish(c, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory", NULL, 0);
    } else {
        for (int i = 0; i < nt; i++) {
            const srv_map_output *mo = i >= ni ? inf__serve_batcher_map_output(v->batcher, i - ni) : NULL;
            const inf_value_info *vi = i < ni ? inf_model_input(v->model, i) : inf_model_output(v->model, i - ni);
            tensor_meta(&ts[i], vi, mo, dims[i], dtn[i], sizeof dtn[i]);
            tp[i] = &ts[i];
        }
        char *versions[1] = {v->version};
        Inference__ModelMetadataResponse r = INFERENCE__MODEL_METADATA_RESPONSE__INIT;
        r.name = v->name;
        r.n_versions = 1;
        r.versions = versions;
        r.platform = (char *)"onnx_onnxv1";
        r.n_inputs = (size_t)ni;
        r.inputs = tp;
        r.n_outputs = (size_t)no;
        r.outputs = tp + ni;
        inf__serve_grpc_reply(c, &r.base);
    }
    free(ts), free(tp), free(dims), free(dtn);
    inf__serve_version_release(v);
out:
    protobuf_c_message_free_unpacked(&q->base, NULL);
}

/* Triton's DataType of a KServe datatype name ("FP32" -> TYPE_FP32). */
static Inference__DataType triton_dtype(const char *kserve) {
    static const char *const names[] = {"BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16",
                                        "INT32", "INT64", "FP16", "FP32", "FP64", "BYTES", "BF16"};
    for (int i = 0; kserve && i < (int)(sizeof names / sizeof names[0]); i++)
        if (!strcmp(kserve, names[i])) return (Inference__DataType)(i + 1);
    return INFERENCE__DATA_TYPE__TYPE_INVALID;
}

/* The dims of a value as Triton's config gives them: without the leading
 * batch dimension when the model batches (max_batch_size > 0). */
static size_t config_dims(const inf_value_info *vi, const srv_map_output *mo, int batched, int64_t *dims) {
    int64_t all[INF_MAX_DIMS];
    int nd = 0;
    if (mo) all[nd++] = -1, all[nd++] = mo->n_classes;
    else
        for (int d = 0; d < vi->ndim; d++) all[nd++] = vi->dims[d] >= 0 ? vi->dims[d] : -1;
    int skip = batched && nd > 0 ? 1 : 0;
    for (int d = skip; d < nd; d++) dims[d - skip] = all[d];
    return (size_t)(nd - skip);
}

/* ModelConfig: what /v2/models/{name} says, in Triton's configuration form
 * (max_batch_size and the dynamic batcher's settings from the server's). */
void inf__serve_grpc_model_config(gcall *c, const uint8_t *msg, size_t n) {
    Inference__ModelConfigRequest *q =
        (void *)inf__serve_grpc_unpack_msg(c, &inference__model_config_request__descriptor, msg, n);
    if (!q) return;
    if (inf__serve_grpc_authorize(c, q->name, 0)) goto out;
    srv_version *v;
    inf_error e = {0};
    if (inf__serve_models_acquire(c->g->srv->models, q->name, q->version, &v, &e) != INF_OK) {
        inf__serve_grpc_finish(c, GRPC_STATUS_NOT_FOUND, e.message, NULL, 0);
        goto out;
    }
    const srv_options *o = &c->g->srv->opt;
    int batched = inf__serve_batcher_batchable(v->batcher);
    int ni = inf_model_n_inputs(v->model), no = inf_model_n_outputs(v->model);
    Inference__ModelInput *ins = calloc((size_t)ni + 1, sizeof *ins);
    Inference__ModelInput **inp = calloc((size_t)ni + 1, sizeof *inp);
    Inference__ModelOutput *outs = calloc((size_t)no + 1, sizeof *outs);
    Inference__ModelOutput **outp = calloc((size_t)no + 1, sizeof *outp);
    int64_t(*dims)[INF_MAX_DIMS] = calloc((size_t)(ni + no) + 1, sizeof *dims);
    if (!ins || !inp || !outs || !outp || !dims) {
        inf__serve_grpc_finish(c, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory", NULL, 0);
    } else {
        for (int i = 0; i < ni; i++) {
            const inf_value_info *vi = inf_model_input(v->model, i);
            inference__model_input__init(&ins[i]);
            ins[i].name = (char *)vi->name;
            ins[i].data_type = triton_dtype(vi->kind == INF_KIND_TENSOR ? inf__serve_kserve_dtype(vi->dtype) : NULL);
            ins[i].n_dims = config_dims(vi, NULL, batched, dims[i]);
            ins[i].dims = dims[i];
            ins[i].optional = vi->is_optional;
            inp[i] = &ins[i];
        }
        for (int i = 0; i < no; i++) {
            const inf_value_info *vi = inf_model_output(v->model, i);
            const srv_map_output *mo = inf__serve_batcher_map_output(v->batcher, i);
            inference__model_output__init(&outs[i]);
            outs[i].name = (char *)vi->name;
            outs[i].data_type = triton_dtype(mo ? inf__serve_kserve_dtype(mo->dtype)
                                             : vi->kind == INF_KIND_TENSOR ? inf__serve_kserve_dtype(vi->dtype)
                                                                            : NULL);
            outs[i].n_dims = config_dims(vi, mo, batched, dims[ni + i]);
            outs[i].dims = dims[ni + i];
            outp[i] = &outs[i];
        }
        Inference__ModelDynamicBatching db = INFERENCE__MODEL_DYNAMIC_BATCHING__INIT;
        int32_t pref[8];
        for (int i = 0; i < o->n_preferred && i < 8; i++) pref[i] = o->preferred[i];
        db.n_preferred_batch_size = (size_t)(o->n_preferred < 8 ? o->n_preferred : 8);
        db.preferred_batch_size = pref;
        db.max_queue_delay_microseconds = (uint64_t)o->max_queue_delay_us;
        Inference__ModelConfig cfg = INFERENCE__MODEL_CONFIG__INIT;
        cfg.name = v->name;
        cfg.platform = (char *)"onnx_onnxv1";
        cfg.backend = (char *)"infera";
        cfg.max_batch_size = batched ? o->max_batch : 0;
        cfg.n_input = (size_t)ni;
        cfg.input = inp;
        cfg.n_output = (size_t)no;
        cfg.output = outp;
        if (batched) cfg.dynamic_batching = &db;
        Inference__ModelConfigResponse r = INFERENCE__MODEL_CONFIG_RESPONSE__INIT;
        r.config = &cfg;
        inf__serve_grpc_reply(c, &r.base);
    }
    free(ins), free(inp), free(outs), free(outp), free(dims);
    inf__serve_version_release(v);
out:
    protobuf_c_message_free_unpacked(&q->base, NULL);
}

/* ---- repository ---------------------------------------------------------------------- */

/* The index as the HTTP endpoint writes it (models.c), re-read into messages. */
void inf__serve_grpc_repo_index(gcall *c, const uint8_t *msg, size_t n) {
    Inference__RepositoryIndexRequest *q =
        (void *)inf__serve_grpc_unpack_msg(c, &inference__repository_index_request__descriptor, msg, n);
    if (!q) return;
    if (inf__serve_grpc_authorize(c, NULL, 0)) goto out;
    srv_buf json = {0};
    inf__serve_models_index_json(c->g->srv->models, q->ready, &json);
    cJSON *arr = json.oom ? NULL : cJSON_ParseWithLength(json.p ? json.p : "[]", json.n);
    inf__serve_buf_free(&json);
    int count = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : -1;
    Inference__RepositoryIndexResponse__ModelIndex *ms = count >= 0 ? calloc((size_t)count + 1, sizeof *ms) : NULL;
    Inference__RepositoryIndexResponse__ModelIndex **mp = count >= 0 ? calloc((size_t)count + 1, sizeof *mp) : NULL;
    if (!ms || !mp) {
        inf__serve_grpc_finish(c, GRPC_STATUS_INTERNAL, "cannot list the repository", NULL, 0);
    } else {
        static const char *const keys[4] = {"name", "version", "state", "reason"};
        for (int i = 0; i < count; i++) {
            const cJSON *o = cJSON_GetArrayItem(arr, i);
            char *vals[4];
            for (int k = 0; k < 4; k++) {
                const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, keys[k]));
                vals[k] = (char *)(s ? s : "");
            }
            inference__repository_index_response__model_index__init(&ms[i]);
            ms[i].name = vals[0], ms[i].version = vals[1], ms[i].state = vals[2], ms[i].reason = vals[3];
            mp[i] = &ms[i];
        }
        Inference__RepositoryIndexResponse r = INFERENCE__REPOSITORY_INDEX_RESPONSE__INIT;
        r.n_models = (size_t)count;
        r.models = mp;
        inf__serve_grpc_reply(c, &r.base);
    }
    free(ms), free(mp);
    cJSON_Delete(arr);
out:
    protobuf_c_message_free_unpacked(&q->base, NULL);
}

/* parameters "ref" (or "path"): what to load, as the HTTP load's parameters.ref. */
static int load_ref(gcall *c, const Inference__RepositoryModelLoadRequest *q, const char **ref) {
    *ref = NULL;
    for (size_t i = 0; i < q->n_parameters; i++) {
        const char *k = q->parameters[i]->key;
        if (!k || (strcmp(k, "ref") && strcmp(k, "path"))) continue;
        const Inference__ModelRepositoryParameter *p = q->parameters[i]->value;
        if (!p || p->parameter_choice_case != INFERENCE__MODEL_REPOSITORY_PARAMETER__PARAMETER_CHOICE_STRING_PARAM) {
            inf__serve_grpc_finish(c, GRPC_STATUS_INVALID_ARGUMENT,
                   "parameters.ref must be a string (an .onnx path or a registry reference)", NULL, 0);
            return -1;
        }
        if (!*ref || !strcmp(k, "ref")) *ref = p->string_param;
    }
    return 0;
}

void inf__serve_grpc_repo_load(gcall *c, const uint8_t *msg, size_t n) {
    Inference__RepositoryModelLoadRequest *q =
        (void *)inf__serve_grpc_unpack_msg(c, &inference__repository_model_load_request__descriptor, msg, n);
    if (!q) return;
    const char *ref;
    if (inf__serve_grpc_authorize(c, q->model_name, 0) || load_ref(c, q, &ref)) goto out;
    srv_server *srv = c->g->srv;
    /* a file path brings a file of the server's onto it: with auth on, only an admin may (routes.c) */
    if (ref && inf_registry_ref_is_path(ref) && inf__serve_models_auth_enabled(srv->models) &&
        inf__serve_grpc_authorize(c, NULL, 2))
        goto out;
    inf_error e = {0};
    inf_status st = inf__serve_models_load(srv->models, q->model_name, ref, c->ic.caller, &e);
    if (st != INF_OK) {
        int code = st == INF_EBUSY ? GRPC_STATUS_FAILED_PRECONDITION : inf__serve_grpc_status_of(st);
        inf__serve_grpc_finish(c, code, e.message, NULL, 0);
    } else {
        Inference__RepositoryModelLoadResponse r = INFERENCE__REPOSITORY_MODEL_LOAD_RESPONSE__INIT;
        inf__serve_grpc_reply(c, &r.base);
    }
out:
    protobuf_c_message_free_unpacked(&q->base, NULL);
}

void inf__serve_grpc_repo_unload(gcall *c, const uint8_t *msg, size_t n) {
    Inference__RepositoryModelUnloadRequest *q =
        (void *)inf__serve_grpc_unpack_msg(c, &inference__repository_model_unload_request__descriptor, msg, n);
    if (!q) return;
    if (inf__serve_grpc_authorize(c, q->model_name, 0)) goto out;
    inf_error e = {0};
    if (inf__serve_models_unload(c->g->srv->models, q->model_name, c->ic.caller, &e) != INF_OK) {
        inf__serve_grpc_finish(c, GRPC_STATUS_NOT_FOUND, e.message, NULL, 0);
    } else {
        Inference__RepositoryModelUnloadResponse r = INFERENCE__REPOSITORY_MODEL_UNLOAD_RESPONSE__INIT;
        inf__serve_grpc_reply(c, &r.base);
    }
out:
    protobuf_c_message_free_unpacked(&q->base, NULL);
}
