/*
 * signature.c -- what the registry derives from a model and its pipeline
 * spec at registration (a GGUF language model: architecture, context length,
 * vocabulary, weight type through include/infera/llm.h): the signature (inputs and outputs with kinds,
 * dtypes, shapes including symbolic dimensions; opsets; sizes), the check
 * that the spec fits the model, and the human summary of a spec for `show`.
 *
 * Spec checking.  The pipeline library (include/infera/pipeline.h,
 * src/pipeline/, in the same runtime library as the registry) is the only
 * authority: inf_pipeline_load_string validates the whole spec against the
 * model and gives the canonical text and hash that predictions are stamped
 * with.  (A weakly linked structural fallback used to stand in when the
 * pipeline was absent; it could never run and would have hashed specs
 * differently, so it is gone.)
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infera/llm.h"
#include "infera/pipeline.h"
#include "registry/registry_int.h"

static const char *kind_name(const inf_value_info *vi) {
    static const char *const names[] = {"tensor", "sequence", "map", "none"};
    return (unsigned)vi->kind < 4 ? names[vi->kind] : "unknown";
}

static cJSON *value_info_json(const inf_value_info *vi) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", vi->name ? vi->name : "");
    cJSON_AddStringToObject(o, "kind", kind_name(vi));
    cJSON_AddStringToObject(o, "dtype", vi->dtype == INF_DTYPE_UNDEFINED ? "undefined" : inf_dtype_name(vi->dtype));
    if (vi->ndim < 0) {
        cJSON_AddNullToObject(o, "shape");
    } else {
        cJSON *shape = cJSON_AddArrayToObject(o, "shape");
        for (int d = 0; d < vi->ndim && d < INF_MAX_DIMS; d++) {
            if (vi->dims[d] >= 0)
                cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)vi->dims[d]));
            else
                cJSON_AddItemToArray(shape, cJSON_CreateString(vi->dim_names[d] ? vi->dim_names[d] : "?"));
        }
    }
    if (vi->is_optional) cJSON_AddBoolToObject(o, "optional", 1);
    return o;
}

inf_status inf__signature_json(const inf_model *model, char **out, inf_error *err) {
    *out = NULL;
    cJSON *root = cJSON_CreateObject();
    cJSON *ins = cJSON_AddArrayToObject(root, "inputs");
    for (int i = 0; i < inf_model_n_inputs(model); i++) cJSON_AddItemToArray(ins, value_info_json(inf_model_input(model, i)));
    cJSON *outs = cJSON_AddArrayToObject(root, "outputs");
    for (int i = 0; i < inf_model_n_outputs(model); i++)
        cJSON_AddItemToArray(outs, value_info_json(inf_model_output(model, i)));
    inf_model_summary s;
    inf_model_get_summary(model, &s);
    cJSON *ops = cJSON_AddArrayToObject(root, "opsets");
    for (int i = 0; i < s.n_opsets; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "domain", s.opsets[i].domain && *s.opsets[i].domain ? s.opsets[i].domain : "ai.onnx");
        cJSON_AddNumberToObject(o, "version", (double)s.opsets[i].version);
        cJSON_AddItemToArray(ops, o);
    }
    cJSON_AddNumberToObject(root, "nodes", s.n_nodes);
    cJSON_AddNumberToObject(root, "parameters", (double)s.n_parameters);
    if (s.graph_name) cJSON_AddStringToObject(root, "graph", s.graph_name);
    if (s.producer_name && *s.producer_name) cJSON_AddStringToObject(root, "producer", s.producer_name);
    char *text = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!text) return inf_error_set(err, INF_ENOMEM, "registry: out of memory deriving the signature");
    *out = text;
    return INF_OK;
}

/* ---------------------------------------------------------------------------
 * Spec check: the pipeline library (same runtime library) is the authority
 * ------------------------------------------------------------------------- */
inf_status inf__pipeline_check(const char *path, const char *text, const inf_model *model, char **canonical,
                               char hash[65], inf_error *err) {
    *canonical = NULL;
    hash[0] = '\0';
    inf_pipeline *p = NULL;
    inf_pipeline_options opts = {0};
    inf_error e;
    inf_status rc = inf_pipeline_load_string(text, strlen(text), model, &opts, &p, &e);
    if (rc) return inf_error_set(err, rc, "pipeline spec %s: %s", path, e.message);
    *canonical = inf__reg_strdup(inf_pipeline_canonical(p));
    snprintf(hash, 65, "%s", inf_pipeline_hash(p));
    inf_pipeline_free(p);
    return *canonical ? INF_OK : inf_error_set(err, INF_ENOMEM, "registry: out of memory");
}

/* ---------------------------------------------------------------------------
 * Summary for `show`
 * ------------------------------------------------------------------------- */
static cJSON *names_of(cJSON *items, const char *key) {
    cJSON *arr = cJSON_CreateArray();
    for (cJSON *c = items ? items->child : NULL; c; c = c->next) {
        const char *name = c->string;
        cJSON *n = key ? cJSON_GetObjectItemCaseSensitive(c, key) : NULL;
        if (cJSON_IsString(n)) name = n->valuestring;
        if (name) cJSON_AddItemToArray(arr, cJSON_CreateString(name));
    }
    return arr;
}

cJSON *inf__pipeline_summary(const char *spec_json) {
    cJSON *spec = cJSON_Parse(spec_json);
    if (!spec) return NULL;
    cJSON *s = cJSON_CreateObject();
    cJSON *v;
    if (cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(spec, "name"))) cJSON_AddStringToObject(s, "name", v->valuestring);
    if (cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(spec, "description")))
        cJSON_AddStringToObject(s, "description", v->valuestring);
    cJSON *inputs = cJSON_GetObjectItemCaseSensitive(spec, "inputs");
    cJSON_AddItemToObject(s, "inputs", names_of(cJSON_IsObject(inputs) ? inputs : NULL, NULL));
    cJSON *sens = cJSON_AddArrayToObject(s, "sensitive");
    for (cJSON *c = cJSON_IsObject(inputs) ? inputs->child : NULL; c; c = c->next)
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "sensitive")))
            cJSON_AddItemToArray(sens, cJSON_CreateString(c->string));
    cJSON_AddItemToObject(s, "lookups", names_of(cJSON_GetObjectItemCaseSensitive(spec, "lookups"), "name"));
    cJSON_AddItemToObject(s, "features", names_of(cJSON_GetObjectItemCaseSensitive(spec, "features"), "name"));
    cJSON *mi = cJSON_GetObjectItemCaseSensitive(spec, "model_inputs");
    cJSON_AddItemToObject(s, "model_inputs", names_of(cJSON_IsObject(mi) ? mi : NULL, NULL));
    cJSON_AddItemToObject(s, "outputs", names_of(cJSON_GetObjectItemCaseSensitive(spec, "outputs"), "name"));
    if (cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(spec, "on_invalid")))
        cJSON_AddStringToObject(s, "on_invalid", v->valuestring);
    cJSON_Delete(spec);
    return s;
}

/* ---- GGUF language models ---------------------------------------------------- */

inf_status inf__signature_gguf_json(const char *path, char **out, inf_error *err) {
    *out = NULL;
    inf_llm_model *m = NULL;
    inf_status st = inf_llm_model_load(path, &m, err);
    if (st != INF_OK) return st;
    const inf_llm_model_info *I = inf_llm_model_get_info(m);
    cJSON *root = cJSON_CreateObject();
    if (root) {
        cJSON_AddStringToObject(root, "kind", "gguf");
        cJSON_AddStringToObject(root, "architecture", I->architecture ? I->architecture : "");
        cJSON_AddStringToObject(root, "name", I->name ? I->name : "");
        cJSON_AddNumberToObject(root, "context_length", I->n_ctx_train);
        cJSON_AddNumberToObject(root, "vocab_size", I->n_vocab);
        cJSON_AddStringToObject(root, "weight_type", I->weight_type ? I->weight_type : "");
        cJSON_AddNumberToObject(root, "n_embd", I->n_embd);
        cJSON_AddNumberToObject(root, "n_layer", I->n_layer);
        cJSON_AddNumberToObject(root, "n_head", I->n_head);
        cJSON_AddNumberToObject(root, "n_head_kv", I->n_head_kv);
        cJSON_AddNumberToObject(root, "n_params", (double)I->n_params);
        cJSON_AddNumberToObject(root, "weight_bytes", (double)I->weight_bytes);
        *out = cJSON_PrintUnformatted(root);
        cJSON_Delete(root);
    }
    inf_llm_model_free(m);
    if (!*out) return inf_error_set(err, INF_ENOMEM, "out of memory for the signature of %s", path);
    return INF_OK;
}
