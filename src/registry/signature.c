/*
 * signature.c -- what the registry derives from a model and its pipeline
 * spec at registration (a GGUF language model: architecture, context length,
 * vocabulary, weight type through include/infera/llm.h): the signature (inputs and outputs with kinds,
 * dtypes, shapes including symbolic dimensions; opsets; sizes), the check
 * that the spec fits the model, and the human summary of a spec for `show`.
 *
 * Spec checking.  The pipeline library (include/infera/pipeline.h,
 * src/pipeline/) is the authority: when it is linked into the program,
 * inf_pipeline_load_string validates the whole spec against the model and
 * gives the canonical text and hash that predictions are stamped with.  The
 * references to it are weak so the registry also builds and works while the
 * pipeline library is absent; then a structural check runs instead (JSON
 * object; model_inputs name exactly the model's inputs with matching dtypes;
 * every output's "from" is a model output or an earlier output), and the
 * canonical text is the spec with object keys sorted and no whitespace.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infera/llm.h"
#include "infera/pipeline.h"
#include "registry/registry_int.h"

#pragma weak inf_pipeline_load_string
#pragma weak inf_pipeline_free
#pragma weak inf_pipeline_canonical
#pragma weak inf_pipeline_hash

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
    if (!text) return inf__reg_fail(err, INF_ENOMEM, "registry: out of memory deriving the signature");
    *out = text;
    return INF_OK;
}

/* ---------------------------------------------------------------------------
 * Fallback spec check (pipeline library not linked)
 * ------------------------------------------------------------------------- */
static int cmp_keys(const void *a, const void *b) {
    return strcmp((*(cJSON *const *)a)->string, (*(cJSON *const *)b)->string);
}

/* Sorts every object's keys, recursively (canonical form). */
static bool sort_keys(cJSON *j) {
    if (!cJSON_IsObject(j) && !cJSON_IsArray(j)) return true;
    int n = cJSON_GetArraySize(j);
    for (cJSON *c = j->child; c; c = c->next)
        if (!sort_keys(c)) return false;
    if (!cJSON_IsObject(j) || n < 2) return true;
    cJSON **items = malloc((size_t)n * sizeof *items);
    if (!items) return false;
    int k = 0;
    for (cJSON *c = j->child; c; c = c->next) items[k++] = c;
    qsort(items, (size_t)n, sizeof *items, cmp_keys);
    for (int i = 0; i < n; i++) {
        items[i]->prev = i ? items[i - 1] : items[n - 1]; /* cJSON: child->prev is the last item */
        items[i]->next = i + 1 < n ? items[i + 1] : NULL;
    }
    j->child = items[0];
    free(items);
    return true;
}

static inf_status structural_check(const char *path, cJSON *spec, const inf_model *model, inf_error *err) {
    cJSON *mi = cJSON_GetObjectItemCaseSensitive(spec, "model_inputs");
    if (mi && !cJSON_IsObject(mi))
        return inf__reg_fail(err, INF_EFORMAT, "pipeline spec %s: model_inputs must be an object", path);
    if (mi) {
        for (cJSON *c = mi->child; c; c = c->next) {
            int idx = inf_model_find_input(model, c->string);
            if (idx < 0)
                return inf__reg_fail(err, INF_ETYPE, "pipeline spec %s: model_inputs.%s: the model has no input '%s'",
                                     path, c->string, c->string);
            const inf_value_info *vi = inf_model_input(model, idx);
            cJSON *dt = cJSON_GetObjectItemCaseSensitive(c, "dtype");
            if (cJSON_IsString(dt) && vi->dtype != INF_DTYPE_UNDEFINED &&
                inf_dtype_from_name(dt->valuestring) != vi->dtype)
                return inf__reg_fail(err, INF_ETYPE,
                                     "pipeline spec %s: model_inputs.%s.dtype is %s but the model expects %s", path,
                                     c->string, dt->valuestring, inf_dtype_name(vi->dtype));
        }
        for (int i = 0; i < inf_model_n_inputs(model); i++) {
            const char *name = inf_model_input(model, i)->name;
            if (!cJSON_GetObjectItemCaseSensitive(mi, name))
                return inf__reg_fail(err, INF_ETYPE, "pipeline spec %s: model input '%s' is not built by model_inputs",
                                     path, name);
        }
    }
    cJSON *outs = cJSON_GetObjectItemCaseSensitive(spec, "outputs");
    if (outs && !cJSON_IsArray(outs))
        return inf__reg_fail(err, INF_EFORMAT, "pipeline spec %s: outputs must be an array", path);
    int i = 0;
    for (cJSON *o = outs ? outs->child : NULL; o; o = o->next, i++) {
        cJSON *from = cJSON_GetObjectItemCaseSensitive(o, "from");
        if (!cJSON_IsString(from)) continue;
        bool known = inf_model_find_output(model, from->valuestring) >= 0;
        for (cJSON *p = outs->child; p != o && !known; p = p->next) {
            cJSON *n = cJSON_GetObjectItemCaseSensitive(p, "name");
            known = cJSON_IsString(n) && !strcmp(n->valuestring, from->valuestring);
        }
        if (!known)
            return inf__reg_fail(err, INF_ETYPE,
                                 "pipeline spec %s: outputs[%d].from: '%s' is neither a model output nor an earlier "
                                 "output",
                                 path, i, from->valuestring);
    }
    return INF_OK;
}

inf_status inf__pipeline_check(const char *path, const char *text, const inf_model *model, char **canonical,
                               char hash[65], inf_error *err) {
    *canonical = NULL;
    hash[0] = '\0';
    if (inf_pipeline_load_string && inf_pipeline_free && inf_pipeline_canonical && inf_pipeline_hash) {
        inf_pipeline *p = NULL;
        inf_pipeline_options opts = {0};
        inf_error e;
        inf_status rc = inf_pipeline_load_string(text, strlen(text), model, &opts, &p, &e);
        if (rc) return inf__reg_fail(err, rc, "pipeline spec %s: %s", path, e.message);
        *canonical = inf__reg_strdup(inf_pipeline_canonical(p));
        snprintf(hash, 65, "%s", inf_pipeline_hash(p));
        inf_pipeline_free(p);
        return *canonical ? INF_OK : inf__reg_fail(err, INF_ENOMEM, "registry: out of memory");
    }
    const char *bad = NULL;
    cJSON *spec = cJSON_ParseWithOpts(text, &bad, 1);
    if (!spec) {
        int line = 1;
        for (const char *c = text; bad && c < bad; c++) line += *c == '\n';
        return inf__reg_fail(err, INF_EFORMAT, "pipeline spec %s is not valid JSON (near line %d)", path, line);
    }
    inf_status rc = INF_OK;
    if (!cJSON_IsObject(spec))
        rc = inf__reg_fail(err, INF_EFORMAT, "pipeline spec %s: expected a JSON object", path);
    else
        rc = structural_check(path, spec, model, err);
    if (!rc) {
        char *s = sort_keys(spec) ? cJSON_PrintUnformatted(spec) : NULL;
        if (s) {
            *canonical = inf__reg_strdup(s);
            cJSON_free(s);
        }
        if (!*canonical) rc = inf__reg_fail(err, INF_ENOMEM, "registry: out of memory");
        else inf_sha256_hex(*canonical, strlen(*canonical), hash);
    }
    cJSON_Delete(spec);
    return rc;
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
    if (!*out) return inf__reg_fail(err, INF_ENOMEM, "out of memory for the signature of %s", path);
    return INF_OK;
}
