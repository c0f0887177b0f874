/*
 * spec.c -- loading a pipeline spec: JSON -> validated inf_pipeline
 * (include/infera/pipeline.h; format in docs/pipeline-spec.md).
 *
 * Validation happens here, once, so a bad spec never reaches a batch: every
 * key is checked (unknown keys are errors, to catch typos), names are unique,
 * every `from` names an input, a lookup feature or an EARLIER feature, each
 * transform gets the operand kinds it accepts and all its parameters, and
 * model_inputs match the model's inputs in name, dtype and width.  Errors
 * name the JSON path ("features[2] (amount_z).std: ...").
 * The hash is SHA-256 over the canonical JSON (keys sorted bytewise, no
 * whitespace, integral numbers below 2^53 as integers, others as %.17g).
 * Also here: the default pipeline (no spec), accessors, free.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/pipeline_int.h"

/* ---- SHA-256 (FIPS 180-4) ---- */

static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
    0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
    0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
    0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(uint32_t h[8], const uint8_t *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = hh + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K256[i] + w[i];
        uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

void inf__pipeline_sha256(const void *data, size_t len, uint8_t out[32]) {
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    const uint8_t *p = data;
    size_t n = len;
    for (; n >= 64; n -= 64, p += 64) sha256_block(h, p);
    uint8_t tail[128] = {0};
    memcpy(tail, p, n);
    tail[n] = 0x80;
    size_t tl = n < 56 ? 64 : 128;
    uint64_t bits = (uint64_t)len * 8;
    for (int i = 0; i < 8; i++) tail[tl - 1 - i] = (uint8_t)(bits >> (8 * i));
    sha256_block(h, tail);
    if (tl == 128) sha256_block(h, tail + 64);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(h[i] >> 8);
        out[4 * i + 3] = (uint8_t)h[i];
    }
}

/* ---- canonical JSON ---- */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 1024;
        while (cap < b->n + n + 1) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void sb_str(sbuf *b, const char *s) {
    sb_put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            sb_put(b, esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            sb_put(b, esc, 6);
        } else {
            sb_put(b, (const char *)&c, 1);
        }
    }
    sb_put(b, "\"", 1);
}

static int cmp_items(const void *a, const void *b) {
    return strcmp((*(const cJSON *const *)a)->string, (*(const cJSON *const *)b)->string);
}

static void canon(sbuf *b, const cJSON *j) {
    char num[64];
    if (cJSON_IsObject(j)) {
        int n = cJSON_GetArraySize(j), i = 0;
        const cJSON **items = malloc((size_t)(n ? n : 1) * sizeof *items);
        if (!items) {
            b->oom = 1;
            return;
        }
        for (const cJSON *it = j->child; it; it = it->next) items[i++] = it;
        qsort(items, (size_t)n, sizeof *items, cmp_items);
        sb_put(b, "{", 1);
        for (i = 0; i < n; i++) {
            if (i) sb_put(b, ",", 1);
            sb_str(b, items[i]->string);
            sb_put(b, ":", 1);
            canon(b, items[i]);
        }
        sb_put(b, "}", 1);
        free(items);
    } else if (cJSON_IsArray(j)) {
        sb_put(b, "[", 1);
        for (const cJSON *it = j->child; it; it = it->next) {
            if (it != j->child) sb_put(b, ",", 1);
            canon(b, it);
        }
        sb_put(b, "]", 1);
    } else if (cJSON_IsString(j)) {
        sb_str(b, j->valuestring);
    } else if (cJSON_IsNumber(j)) {
        double v = j->valuedouble;
        int len = (v == floor(v) && fabs(v) < 9007199254740992.0) ? snprintf(num, sizeof num, "%.0f", v)
                                                                      : snprintf(num, sizeof num, "%.17g", v);
        sb_put(b, num, (size_t)len);
    } else if (cJSON_IsBool(j)) {
        sb_put(b, cJSON_IsTrue(j) ? "true" : "false", cJSON_IsTrue(j) ? 4 : 5);
    } else {
        sb_put(b, "null", 4);
    }
}

char *inf__pipeline_canonical_json(const cJSON *j) {
    sbuf b = {0};
    canon(&b, j);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* ---- errors ---- */

/* ---- free ---- */

static void free_strs(char **v, int n) {
    if (!v) return;
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

void inf_pipeline_free(inf_pipeline *p) {
    if (!p) return;
    free(p->name);
    free(p->model_name);
    free(p->model_version);
    free(p->id_column);
    free(p->canonical);
    free(p->base_dir);
    cJSON_Delete(p->json);
    for (int i = 0; i < p->n_inputs; i++) {
        pinput *in = &p->inputs[i];
        free(in->name);
        free(in->def_str);
        free_strs(in->categories, in->n_categories);
        free(in->cat_num);
        inf__catset_free(&in->cat_set);
    }
    free(p->inputs);
    for (int i = 0; i < p->n_lookups; i++) {
        plookup *l = &p->lookups[i];
        free(l->name);
        free(l->store);
        free(l->table);
        free(l->key_input);
        free(l->key_column);
        free(l->prefix);
        free_strs(l->features, l->n_features);
        free(l->feature_type);
        free(l->defaults);
        free(l->as_of);
        free(l->available_at);
    }
    free(p->lookups);
    for (int i = 0; i < p->n_xfs; i++) {
        pxf *x = &p->xfs[i];
        free(x->name);
        free(x->value_str);
        free(x->edges);
        free_strs(x->categories, x->n_categories);
        free(x->cat_len);
        free(x->cat_num);
        inf__catset_free(&x->cat_set);
    }
    free(p->xfs);
    for (int i = 0; i < p->n_cols; i++) {
        free(p->cols[i].name);
        free_strs(p->cols[i].sub_names, p->cols[i].sub_names ? p->cols[i].width : 0);
    }
    free(p->cols);
    for (int i = 0; i < p->n_model_inputs; i++) {
        free(p->model_inputs[i].name);
        free(p->model_inputs[i].cols);
    }
    free(p->model_inputs);
    for (int i = 0; i < p->n_outputs; i++) {
        free(p->outputs[i].name);
        free(p->outputs[i].from);
        free_strs(p->outputs[i].labels, p->outputs[i].n_labels);
    }
    free(p->outputs);
    free_strs(p->passthrough, p->n_passthrough);
    free_strs(p->feature_col_names, p->n_feature_cols);
    free_strs(p->field_stat_names, p->n_field_stats);
    free((void *)p->field_invalid);
    free((void *)p->field_rejected);
    free((void *)p->field_missing);
    free(p);
}

/* ---- parsing helpers ---- */

static int find_col(const inf_pipeline *p, const char *name) {
    for (int i = 0; i < p->n_cols; i++)
        if (!strcmp(p->cols[i].name, name)) return i;
    return -1;
}

static inf_status add_col(inf_pipeline *p, const char *name, int kind, int width, int source, int index,
                          const char *path, inf_error *err) {
    if (find_col(p, name) >= 0)
        return inf_error_set(err, INF_EFORMAT, "%s: the name '%s' is already defined (names of inputs, lookup features and features must be unique)",
                    path, name);
    pcol *c = &p->cols[p->n_cols];
    memset(c, 0, sizeof *c);
    if (!(c->name = strdup(name))) return inf_error_set(err, INF_ENOMEM, "out of memory");
    c->kind = kind;
    c->width = width;
    c->source = source;
    c->index = index;
    if (kind == COL_STR) {
        c->slot = p->n_str_slots++;
    } else {
        c->slot = p->n_num_slots;
        p->n_num_slots += width;
    }
    p->n_cols++;
    return INF_OK;
}

static int check_keys(const cJSON *obj, const char *const *allowed, const char *path, inf_error *err) {
    for (const cJSON *it = obj->child; it; it = it->next) {
        int ok = 0;
        for (const char *const *a = allowed; *a; a++)
            if (!strcmp(*a, it->string)) ok = 1;
        if (!ok) {
            inf_error_set(err, INF_EFORMAT, "%s: unknown key '%s'", path, it->string);
            return -1;
        }
    }
    return 0;
}

static const char *get_str(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static char *dupz(const char *s) { return s ? strdup(s) : NULL; }

/* A flag of obj (absent = false) that must be true or false when present:
 * "sensitive": "yes" or "required": 1 must not pass silently as false. */
static int get_flag(const cJSON *obj, const char *key, const char *path, int *out, inf_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = cJSON_IsTrue(v);
    if (!v || cJSON_IsBool(v)) return 0;
    inf_error_set(err, INF_EFORMAT, "%s.%s: must be true or false", path, key);
    return -1;
}

/* A string member of obj that must be a string when present. */
static int check_str(const cJSON *obj, const char *key, const char *path, inf_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsString(v)) return 0;
    inf_error_set(err, INF_EFORMAT, "%s%s%s: must be a string", path, *path ? "." : "", key);
    return -1;
}

/* ---- inputs ---- */

static inf_status parse_inputs(inf_pipeline *p, const cJSON *inputs, inf_error *err) {
    static const char *const keys[] = {"type", "required", "default", "min", "max", "categories", "sensitive",
                                       "id", "on_invalid", "description", NULL};
    if (!cJSON_IsObject(inputs)) return inf_error_set(err, INF_EFORMAT, "inputs: must be an object of field -> {type, ...}");
    for (const cJSON *f = inputs->child; f; f = f->next) {
        char path[300];
        snprintf(path, sizeof path, "inputs.%s", f->string);
        if (!cJSON_IsObject(f)) return inf_error_set(err, INF_EFORMAT, "%s: must be an object with a 'type'", path);
        if (check_keys(f, keys, path, err)) return err ? err->status : INF_EFORMAT;
        pinput *in = &p->inputs[p->n_inputs];
        memset(in, 0, sizeof *in);
        if (!(in->name = strdup(f->string))) return inf_error_set(err, INF_ENOMEM, "out of memory");
        p->n_inputs++;
        const char *type = get_str(f, "type");
        if (!type) return inf_error_set(err, INF_EFORMAT, "%s.type: missing (float, int, bool, string or timestamp)", path);
        in->type = inf_field_type_from_name(type);
        if (in->type <= 0) return inf_error_set(err, INF_EFORMAT, "%s.type: unknown type '%s' (float, int, bool, string, timestamp)", path, type);
        if (get_flag(f, "required", path, &in->required, err) || get_flag(f, "sensitive", path, &in->sensitive, err) ||
            get_flag(f, "id", path, &in->is_id, err) || check_str(f, "on_invalid", path, err))
            return err ? err->status : INF_EFORMAT;
        in->policy = p->policy;
        const char *pol = get_str(f, "on_invalid");
        if (pol) {
            if (!strcmp(pol, "reject")) in->policy = POLICY_REJECT;
            else if (!strcmp(pol, "count")) in->policy = POLICY_COUNT;
            else return inf_error_set(err, INF_EFORMAT, "%s.on_invalid: must be \"reject\" or \"count\"", path);
        }
        int numeric = in->type == INF_FIELD_FLOAT || in->type == INF_FIELD_INT || in->type == INF_FIELD_BOOL;
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(f, "default");
        if (d && !cJSON_IsNull(d)) {
            in->has_default = 1;
            if (in->type == INF_FIELD_STRING) {
                if (!cJSON_IsString(d)) return inf_error_set(err, INF_EFORMAT, "%s.default: must be a string", path);
                if (!(in->def_str = strdup(d->valuestring))) return inf_error_set(err, INF_ENOMEM, "out of memory");
            } else if (in->type == INF_FIELD_TIMESTAMP) {
                int64_t us;
                inf_value v = {INF_FIELD_NULL, {0}};
                if (cJSON_IsString(d)) {
                    v.type = INF_FIELD_STRING;
                    v.u.s.ptr = d->valuestring;
                    v.u.s.len = (uint32_t)strlen(d->valuestring);
                } else if (cJSON_IsNumber(d)) {
                    v.type = INF_FIELD_FLOAT;
                    v.u.f = d->valuedouble;
                }
                if (inf_value_to_timestamp(&v, &us))
                    return inf_error_set(err, INF_EFORMAT, "%s.default: not a timestamp (ISO-8601 string or epoch seconds)", path);
                in->def_num = (double)us / 1e6;
            } else if (cJSON_IsBool(d)) {
                in->def_num = cJSON_IsTrue(d);
            } else if (cJSON_IsNumber(d)) {
                in->def_num = d->valuedouble;
            } else {
                return inf_error_set(err, INF_EFORMAT, "%s.default: must be a %s", path, type);
            }
        }
        double v;
        const cJSON *mn = cJSON_GetObjectItemCaseSensitive(f, "min"), *mx = cJSON_GetObjectItemCaseSensitive(f, "max");
        if ((mn || mx) && !numeric) return inf_error_set(err, INF_EFORMAT, "%s: 'min'/'max' apply to numeric fields only", path);
        if (mn) {
            if (!cJSON_IsNumber(mn)) return inf_error_set(err, INF_EFORMAT, "%s.min: must be a number", path);
            in->has_min = 1;
            in->min = mn->valuedouble;
        }
        if (mx) {
            if (!cJSON_IsNumber(mx)) return inf_error_set(err, INF_EFORMAT, "%s.max: must be a number", path);
            in->has_max = 1;
            in->max = mx->valuedouble;
        }
        (void)v;
        if (in->has_min && in->has_max && in->min > in->max)
            return inf_error_set(err, INF_EFORMAT, "%s: 'min' (%g) is above 'max' (%g): no value could pass", path, in->min, in->max);
        const cJSON *cats = cJSON_GetObjectItemCaseSensitive(f, "categories");
        if (cats) {
            if (!cJSON_IsArray(cats) || !cJSON_GetArraySize(cats))
                return inf_error_set(err, INF_EFORMAT, "%s.categories: must be a non-empty array", path);
            int n = cJSON_GetArraySize(cats), i = 0;
            in->categories = calloc((size_t)n, sizeof *in->categories);
            in->cat_num = calloc((size_t)n, sizeof *in->cat_num);
            if (!in->categories || !in->cat_num) return inf_error_set(err, INF_ENOMEM, "out of memory");
            for (const cJSON *c = cats->child; c; c = c->next, i++) {
                char buf[64];
                if (cJSON_IsString(c)) {
                    in->categories[i] = strdup(c->valuestring);
                    char *end;
                    double num = strtod(c->valuestring, &end);
                    in->cat_num[i] = *c->valuestring && !*end ? num : NAN;
                } else if (cJSON_IsNumber(c)) {
                    snprintf(buf, sizeof buf, "%.17g", c->valuedouble);
                    in->categories[i] = strdup(buf);
                    in->cat_num[i] = c->valuedouble;
                } else {
                    return inf_error_set(err, INF_EFORMAT, "%s.categories[%d]: must be a string or a number", path, i);
                }
                in->n_categories = i + 1;
                if (!in->categories[i]) return inf_error_set(err, INF_ENOMEM, "out of memory");
            }
            int duplicate; /* repeated allowed values are harmless here */
            if (inf__catset_build(&in->cat_set, (const char *const *)in->categories, NULL, in->cat_num, in->n_categories,
                                  &duplicate))
                return inf_error_set(err, INF_ENOMEM, "out of memory");
            if (in->has_default && in->type == INF_FIELD_STRING &&
                inf__catset_find_text(&in->cat_set, (const char *const *)in->categories, NULL, in->def_str,
                                      (uint32_t)strlen(in->def_str)) < 0)
                return inf_error_set(err, INF_EFORMAT, "%s.default: '%s' is not one of the categories", path, in->def_str);
        }
        int kind = in->type == INF_FIELD_STRING ? COL_STR : in->type == INF_FIELD_TIMESTAMP ? COL_TS : COL_NUM;
        in->col = p->n_cols;
        inf_status st = add_col(p, in->name, kind, 1, SRC_INPUT, p->n_inputs - 1, path, err);
        if (st) return st;
        if (in->is_id) {
            if (p->id_column && strcmp(p->id_column, in->name))
                return inf_error_set(err, INF_EFORMAT, "%s.id: only one input may be the id (already '%s')", path, p->id_column);
            if (!p->id_column && !(p->id_column = strdup(in->name))) return inf_error_set(err, INF_ENOMEM, "out of memory");
        }
    }
    return INF_OK;
}

/* ---- lookups ---- */

static inf_status parse_lookups(inf_pipeline *p, const cJSON *lookups, inf_error *err) {
    static const char *const keys[] = {"name", "store", "table", "key", "key_column", "prefix", "features",
                                       "max_age_s", "as_of", "available_at", "event_time", "defaults", "description",
                                       "required", NULL};
    if (!cJSON_IsArray(lookups)) return inf_error_set(err, INF_EFORMAT, "lookups: must be an array");
    int i = 0;
    for (const cJSON *l = lookups->child; l; l = l->next, i++) {
        char path[300];
        snprintf(path, sizeof path, "lookups[%d]", i);
        if (!cJSON_IsObject(l)) return inf_error_set(err, INF_EFORMAT, "%s: must be an object", path);
        if (check_keys(l, keys, path, err)) return err ? err->status : INF_EFORMAT;
        plookup *lk = &p->lookups[p->n_lookups++];
        memset(lk, 0, sizeof *lk);
        const char *name = get_str(l, "name"), *store = get_str(l, "store"), *key = get_str(l, "key");
        if (!name) return inf_error_set(err, INF_EFORMAT, "%s.name: missing", path);
        snprintf(path, sizeof path, "lookups[%d] (%s)", i, name);
        if (!store) return inf_error_set(err, INF_EFORMAT, "%s.store: missing (sqlite:PATH?table=T or redis://HOST:PORT/DB)", path);
        if (!key) return inf_error_set(err, INF_EFORMAT, "%s.key: missing (the input field holding the entity key)", path);
        lk->name = strdup(name);
        lk->key_input = strdup(key);
        lk->key_column = strdup(get_str(l, "key_column") ? get_str(l, "key_column") : key);
        lk->as_of = dupz(get_str(l, "as_of"));
        lk->available_at = dupz(get_str(l, "available_at"));
        if (!lk->name || !lk->key_input || !lk->key_column || (get_str(l, "as_of") && !lk->as_of) ||
            (get_str(l, "available_at") && !lk->available_at))
            return inf_error_set(err, INF_ENOMEM, "out of memory");
        lk->is_redis = inf__lookup_is_redis(store);
        if (!lk->is_redis && strncmp(store, "sqlite:", 7))
            return inf_error_set(err, INF_EFORMAT, "%s.store: '%s' is not a supported store (sqlite:PATH?table=T, redis://HOST:PORT[/DB])",
                        path, store);
        if (!lk->is_redis) {
            /* sqlite:PATH?table=T, relative PATH resolved against base_dir */
            const char *rest = store + 7;
            size_t plen = strcspn(rest, "?");
            const char *q = strstr(rest, "table=");
            const char *table = get_str(l, "table");
            char tbuf[256] = "";
            if (q) {
                size_t tl = strcspn(q + 6, "&");
                snprintf(tbuf, sizeof tbuf, "%.*s", (int)tl, q + 6);
            } else if (table) {
                snprintf(tbuf, sizeof tbuf, "%s", table);
            }
            if (!tbuf[0]) return inf_error_set(err, INF_EFORMAT, "%s.store: a sqlite store needs ?table=T", path);
            lk->table = strdup(tbuf);
            size_t blen = p->base_dir ? strlen(p->base_dir) : 0;
            lk->store = malloc(blen + plen + 2);
            if (!lk->table || !lk->store) return inf_error_set(err, INF_ENOMEM, "out of memory");
            if (rest[0] != '/' && blen && strcmp(p->base_dir, "."))
                snprintf(lk->store, blen + plen + 2, "%s/%.*s", p->base_dir, (int)plen, rest);
            else
                snprintf(lk->store, blen + plen + 2, "%.*s", (int)plen, rest);
        } else {
            lk->store = strdup(store);
            const char *prefix = get_str(l, "prefix");
            char pbuf[300];
            snprintf(pbuf, sizeof pbuf, "%s:", get_str(l, "table") ? get_str(l, "table") : name);
            lk->prefix = strdup(prefix ? prefix : pbuf);
            if (!lk->store || !lk->prefix) return inf_error_set(err, INF_ENOMEM, "out of memory");
        }
        int kc = find_col(p, key);
        if (kc < 0 || p->cols[kc].source != SRC_INPUT)
            return inf_error_set(err, INF_EFORMAT, "%s.key: '%s' is not a declared input field", path, key);
        lk->key_col = kc;
        lk->event_time_col = -1;
        const char *et = get_str(l, "event_time");
        if (et) {
            int ec = find_col(p, et);
            if (ec < 0 || p->cols[ec].source != SRC_INPUT || p->cols[ec].kind != COL_TS)
                return inf_error_set(err, INF_EFORMAT, "%s.event_time: '%s' is not a declared timestamp input", path, et);
            lk->event_time_col = ec;
        }
        const cJSON *feats = cJSON_GetObjectItemCaseSensitive(l, "features");
        if (!cJSON_IsObject(feats) || !cJSON_GetArraySize(feats))
            return inf_error_set(err, INF_EFORMAT, "%s.features: must be a non-empty object of name -> type (int, float, bool)", path);
        int n = cJSON_GetArraySize(feats);
        lk->features = calloc((size_t)n, sizeof *lk->features);
        lk->feature_type = calloc((size_t)n, sizeof *lk->feature_type);
        lk->defaults = calloc((size_t)n, sizeof *lk->defaults);
        if (!lk->features || !lk->feature_type || !lk->defaults) return inf_error_set(err, INF_ENOMEM, "out of memory");
        const cJSON *defs = cJSON_GetObjectItemCaseSensitive(l, "defaults");
        if (defs && !cJSON_IsObject(defs)) return inf_error_set(err, INF_EFORMAT, "%s.defaults: must be an object", path);
        for (const cJSON *d = defs ? defs->child : NULL; d; d = d->next)
            if (!cJSON_GetObjectItemCaseSensitive(feats, d->string))
                return inf_error_set(err, INF_EFORMAT, "%s.defaults.%s: not one of the lookup's features", path, d->string);
        lk->first_col = p->n_cols;
        int k = 0;
        for (const cJSON *f = feats->child; f; f = f->next, k++) {
            char fpath[400];
            snprintf(fpath, sizeof fpath, "%s.features.%s", path, f->string);
            int t = cJSON_IsString(f) ? inf_field_type_from_name(f->valuestring) : -1;
            if (t != INF_FIELD_INT && t != INF_FIELD_FLOAT && t != INF_FIELD_BOOL)
                return inf_error_set(err, INF_EFORMAT, "%s: type must be \"int\", \"float\" or \"bool\"", fpath);
            if (!(lk->features[k] = strdup(f->string))) return inf_error_set(err, INF_ENOMEM, "out of memory");
            lk->n_features = k + 1;
            lk->feature_type[k] = t;
            lk->defaults[k] = NAN;
            const cJSON *d = defs ? cJSON_GetObjectItemCaseSensitive(defs, f->string) : NULL;
            if (d) {
                if (!cJSON_IsNumber(d) && !cJSON_IsBool(d))
                    return inf_error_set(err, INF_EFORMAT, "%s.defaults.%s: must be a number", path, f->string);
                lk->defaults[k] = cJSON_IsBool(d) ? cJSON_IsTrue(d) : d->valuedouble;
            }
            inf_status st = add_col(p, f->string, COL_NUM, 1, SRC_LOOKUP, p->n_lookups - 1, fpath, err);
            if (st) return st;
        }
        /* required: a record whose key is null, not in the store or stale is
         * rejected instead of scored with the defaults (default false) */
        const cJSON *req = cJSON_GetObjectItemCaseSensitive(l, "required");
        if (req && !cJSON_IsBool(req)) return inf_error_set(err, INF_EFORMAT, "%s.required: must be true or false", path);
        lk->required = cJSON_IsTrue(req);
        const cJSON *age = cJSON_GetObjectItemCaseSensitive(l, "max_age_s");
        if (age) {
            if (!cJSON_IsNumber(age) || age->valuedouble < 0)
                return inf_error_set(err, INF_EFORMAT, "%s.max_age_s: must be a number of seconds >= 0", path);
            if (!lk->as_of && age->valuedouble > 0)
                return inf_error_set(err, INF_EFORMAT, "%s.max_age_s: needs 'as_of' (the column with the value's time)", path);
            lk->max_age_s = age->valuedouble;
        }
    }
    return INF_OK;
}

/* ---- features ---- */

static inf_status parse_features(inf_pipeline *p, const cJSON *features, inf_error *err) {
    if (!cJSON_IsArray(features)) return inf_error_set(err, INF_EFORMAT, "features: must be an array");
    int i = 0;
    for (const cJSON *f = features->child; f; f = f->next, i++) {
        char path[300];
        snprintf(path, sizeof path, "features[%d]", i);
        if (!cJSON_IsObject(f)) return inf_error_set(err, INF_EFORMAT, "%s: must be an object {name, op, from, ...}", path);
        const char *name = get_str(f, "name"), *op = get_str(f, "op");
        if (!name) return inf_error_set(err, INF_EFORMAT, "%s.name: missing", path);
        snprintf(path, sizeof path, "features[%d] (%s)", i, name);
        if (!op) return inf_error_set(err, INF_EFORMAT, "%s.op: missing", path);
        pxf *x = &p->xfs[p->n_xfs];
        memset(x, 0, sizeof *x);
        x->name = strdup(name);
        if (!x->name) return inf_error_set(err, INF_ENOMEM, "out of memory");
        p->n_xfs++;
        x->json = f;
        x->def = inf__xf_find(op);
        if (!x->def)
            return inf_error_set(err, INF_EFORMAT,
                        "%s.op: unknown transform '%s' (standardize, min_max, log1p, clip, bucketize, one_hot, ordinal, "
                        "label_encode, hash_bucket, impute, hour, day_of_week, ratio, difference, sum, product, greater, "
                        "greater_equal, less, less_equal, equal, not_equal, identity)",
                        path, op);
        const cJSON *from = cJSON_GetObjectItemCaseSensitive(f, "from");
        const cJSON *from_items[XF_MAX_FROM] = {0};
        if (cJSON_IsString(from)) {
            from_items[0] = from;
            x->n_from = 1;
        } else if (cJSON_IsArray(from) && cJSON_GetArraySize(from) >= 1 && cJSON_GetArraySize(from) <= XF_MAX_FROM) {
            for (const cJSON *it = from->child; it; it = it->next) from_items[x->n_from++] = it;
        } else {
            return inf_error_set(err, INF_EFORMAT, "%s.from: missing (a field name, or [a, b])", path);
        }
        if (x->n_from < x->def->min_from || x->n_from > x->def->max_from)
            return inf_error_set(err, INF_EFORMAT, "%s.from: '%s' takes %d field%s", path, op, x->def->max_from,
                        x->def->max_from > 1 ? "s (or one field and 'value')" : "");
        for (int k = 0; k < x->n_from; k++) {
            if (!cJSON_IsString(from_items[k])) return inf_error_set(err, INF_EFORMAT, "%s.from[%d]: must be a field name", path, k);
            const char *fn = from_items[k]->valuestring;
            int c = find_col(p, fn);
            if (c < 0) {
                /* defined later? */
                int later = 0;
                for (const cJSON *g = f->next; g; g = g->next)
                    if (get_str(g, "name") && !strcmp(get_str(g, "name"), fn)) later = 1;
                if (later || !strcmp(fn, name))
                    return inf_error_set(err, INF_EFORMAT, "%s.from: feature '%s' is referenced before it is defined", path, fn);
                return inf_error_set(err, INF_EFORMAT, "%s.from: '%s' is not an input, a lookup feature or an earlier feature", path, fn);
            }
            const pcol *col = &p->cols[c];
            if (col->width != 1)
                return inf_error_set(err, INF_ETYPE, "%s.from: '%s' is a %d-column one-hot feature; transforms take single columns",
                            path, fn, col->width);
            if (k == 0) {
                x->from_kind = col->kind;
                if (!(x->def->accepts & (1 << col->kind)))
                    return inf_error_set(err, INF_ETYPE, "%s.from: '%s' takes a %s field, '%s' is a %s", path, op,
                                (x->def->accepts & (1 << COL_NUM)) ? "numeric" : "timestamp", fn,
                                col->kind == COL_STR ? "string" : col->kind == COL_TS ? "timestamp" : "number");
            } else if (col->kind == COL_STR || x->from_kind == COL_STR) {
                return inf_error_set(err, INF_ETYPE, "%s.from: '%s' with two fields needs numeric fields", path, op);
            }
            x->from_col[k] = c;
        }
        char msg[300] = "";
        if (x->def->parse(x, f, p->fit_mode, msg, sizeof msg))
            return inf_error_set(err, !strcmp(msg, "out of memory") ? INF_ENOMEM : INF_EFORMAT, "%s: %s", path, msg);
        int width = x->fit && x->def->width_from_params ? 0 : inf__xf_width(x);
        if (x->fit && x->def->width_from_params) width = 1; /* placeholder until fitted */
        x->col = p->n_cols;
        inf_status st = add_col(p, name, COL_NUM, width, SRC_FEATURE, p->n_xfs - 1, path, err);
        if (st) return st;
        if (width > 1 || x->def->width_from_params) {
            pcol *c = &p->cols[x->col];
            c->sub_names = calloc((size_t)width, sizeof *c->sub_names);
            if (!c->sub_names) return inf_error_set(err, INF_ENOMEM, "out of memory");
            const char *unk = get_str(f, "unknown");
            for (int w = 0; w < width; w++) {
                const char *cat = w < x->n_categories ? x->categories[w] : (unk ? unk : "<unfitted>");
                size_t n = strlen(name) + strlen(cat) + 2;
                if (!(c->sub_names[w] = malloc(n))) return inf_error_set(err, INF_ENOMEM, "out of memory");
                snprintf(c->sub_names[w], n, "%s=%s", name, cat);
            }
        }
    }
    return INF_OK;
}

/* ---- model inputs ---- */

static inf_dtype parse_dtype(const char *s) {
    if (!s) return INF_DTYPE_F32;
    inf_dtype d = inf_dtype_from_name(s);
    return d == INF_DTYPE_F32 || d == INF_DTYPE_F64 || d == INF_DTYPE_I64 || d == INF_DTYPE_I32 ? d : INF_DTYPE_UNDEFINED;
}

static inf_status parse_model_inputs(inf_pipeline *p, const cJSON *mi, const inf_model *model, inf_error *err) {
    static const char *const keys[] = {"dtype", "order", NULL};
    if (!cJSON_IsObject(mi) || !cJSON_GetArraySize(mi))
        return inf_error_set(err, INF_EFORMAT, "model_inputs: must be an object of model input name -> {dtype, order}");
    int n = cJSON_GetArraySize(mi);
    p->model_inputs = calloc((size_t)n, sizeof *p->model_inputs);
    if (!p->model_inputs) return inf_error_set(err, INF_ENOMEM, "out of memory");
    for (const cJSON *m = mi->child; m; m = m->next) {
        char path[300];
        snprintf(path, sizeof path, "model_inputs.%s", m->string);
        if (!cJSON_IsObject(m)) return inf_error_set(err, INF_EFORMAT, "%s: must be an object {dtype, order}", path);
        if (check_keys(m, keys, path, err)) return err ? err->status : INF_EFORMAT;
        pmodel_input *t = &p->model_inputs[p->n_model_inputs++];
        if (!(t->name = strdup(m->string))) return inf_error_set(err, INF_ENOMEM, "out of memory");
        const char *dt = get_str(m, "dtype");
        t->dtype = parse_dtype(dt);
        if (t->dtype == INF_DTYPE_UNDEFINED)
            return inf_error_set(err, INF_EFORMAT, "%s.dtype: '%s' is not supported (float32, float64, int64, int32)", path, dt);
        const cJSON *order = cJSON_GetObjectItemCaseSensitive(m, "order");
        if (!cJSON_IsArray(order) || !cJSON_GetArraySize(order))
            return inf_error_set(err, INF_EFORMAT, "%s.order: must be a non-empty array of feature names", path);
        t->cols = calloc((size_t)cJSON_GetArraySize(order), sizeof *t->cols);
        if (!t->cols) return inf_error_set(err, INF_ENOMEM, "out of memory");
        int k = 0;
        for (const cJSON *o = order->child; o; o = o->next, k++) {
            if (!cJSON_IsString(o)) return inf_error_set(err, INF_EFORMAT, "%s.order[%d]: must be a name", path, k);
            int c = find_col(p, o->valuestring);
            if (c < 0)
                return inf_error_set(err, INF_EFORMAT, "%s.order[%d]: '%s' is not an input, a lookup feature or a feature", path, k,
                            o->valuestring);
            if (p->cols[c].kind == COL_STR)
                return inf_error_set(err, INF_ETYPE, "%s.order[%d]: '%s' is a string; encode it first (one_hot, ordinal, hash_bucket)",
                            path, k, o->valuestring);
            t->cols[t->n_cols++] = c;
            t->width += p->cols[c].width;
        }
        t->model_index = -1;
        if (model) {
            t->model_index = inf_model_find_input(model, t->name);
            if (t->model_index < 0)
                return inf_error_set(err, INF_ETYPE, "%s: the model has no input '%s'", path, t->name);
            const inf_value_info *info = inf_model_input(model, t->model_index);
            if (info->dtype != t->dtype)
                return inf_error_set(err, INF_ETYPE, "%s.dtype: the spec builds %s but the model input '%s' is %s", path,
                            inf_dtype_name(t->dtype), t->name, inf_dtype_name(info->dtype));
            if (info->ndim >= 0 && info->ndim != 2)
                return inf_error_set(err, INF_ETYPE, "%s: the model input '%s' has rank %d; the pipeline builds [N, features]",
                            path, t->name, info->ndim);
            int fitting = 0;
            for (int c = 0; c < t->n_cols; c++)
                if (p->cols[t->cols[c]].source == SRC_FEATURE && p->xfs[p->cols[t->cols[c]].index].fit) fitting = 1;
            if (!fitting && info->ndim == 2 && info->dims[1] >= 0 && info->dims[1] != t->width)
                return inf_error_set(err, INF_ETYPE, "%s.order: %d columns but the model input '%s' expects %lld", path, t->width,
                            t->name, (long long)info->dims[1]);
        }
    }
    if (model) {
        for (int i = 0; i < inf_model_n_inputs(model); i++) {
            const char *name = inf_model_input(model, i)->name;
            int found = 0;
            for (int k = 0; k < p->n_model_inputs; k++)
                if (!strcmp(p->model_inputs[k].name, name)) found = 1;
            if (!found && !inf_model_input(model, i)->is_optional)
                return inf_error_set(err, INF_ETYPE, "model_inputs: the model input '%s' is not built by the spec", name);
        }
    }
    return INF_OK;
}

/* ---- outputs ---- */

static int find_output_field(const inf_pipeline *p, const char *name, int upto) {
    for (int i = 0; i < upto; i++)
        if (!strcmp(p->outputs[i].name, name)) return i;
    return -1;
}

static inf_status parse_labels(poutput *o, const cJSON *l, const char *path, inf_error *err) {
    if (!l) return INF_OK;
    if (!cJSON_IsArray(l)) return inf_error_set(err, INF_EFORMAT, "%s.labels: must be an array of strings", path);
    int n = cJSON_GetArraySize(l), i = 0;
    o->labels = calloc((size_t)(n ? n : 1), sizeof *o->labels);
    if (!o->labels) return inf_error_set(err, INF_ENOMEM, "out of memory");
    for (const cJSON *it = l->child; it; it = it->next, i++) {
        if (!cJSON_IsString(it)) return inf_error_set(err, INF_EFORMAT, "%s.labels[%d]: must be a string", path, i);
        if (!(o->labels[i] = strdup(it->valuestring))) return inf_error_set(err, INF_ENOMEM, "out of memory");
        o->n_labels = i + 1;
    }
    return INF_OK;
}

static inf_status parse_outputs(inf_pipeline *p, const cJSON *outs, const inf_model *model, inf_error *err) {
    static const char *const keys[] = {"name", "from", "op", "index", "value", "k", "labels", "description", NULL};
    if (!cJSON_IsArray(outs)) return inf_error_set(err, INF_EFORMAT, "outputs: must be an array");
    int n = cJSON_GetArraySize(outs), i = 0;
    p->outputs = calloc((size_t)(n ? n : 1), sizeof *p->outputs);
    if (!p->outputs) return inf_error_set(err, INF_ENOMEM, "out of memory");
    for (const cJSON *o = outs->child; o; o = o->next, i++) {
        char path[300];
        snprintf(path, sizeof path, "outputs[%d]", i);
        if (!cJSON_IsObject(o)) return inf_error_set(err, INF_EFORMAT, "%s: must be an object {name, from, ...}", path);
        if (check_keys(o, keys, path, err)) return err ? err->status : INF_EFORMAT;
        poutput *out = &p->outputs[p->n_outputs++];
        const char *name = get_str(o, "name"), *from = get_str(o, "from"), *op = get_str(o, "op");
        if (!name) return inf_error_set(err, INF_EFORMAT, "%s.name: missing", path);
        snprintf(path, sizeof path, "outputs[%d] (%s)", i, name);
        if (!from) return inf_error_set(err, INF_EFORMAT, "%s.from: missing (a model output or an earlier output field)", path);
        if (find_output_field(p, name, p->n_outputs - 1) >= 0)
            return inf_error_set(err, INF_EFORMAT, "%s.name: '%s' is already an output field", path, name);
        if (!(out->name = strdup(name)) || !(out->from = strdup(from))) return inf_error_set(err, INF_ENOMEM, "out of memory");
        out->op = OUT_VALUE;
        if (op) {
            if (!strcmp(op, "threshold")) out->op = OUT_THRESHOLD;
            else if (!strcmp(op, "argmax")) out->op = OUT_ARGMAX;
            else if (!strcmp(op, "top_k")) out->op = OUT_TOP_K;
            else if (!strcmp(op, "value") || !strcmp(op, "rename")) out->op = OUT_VALUE;
            else return inf_error_set(err, INF_EFORMAT, "%s.op: unknown output op '%s' (value, threshold, argmax, top_k)", path, op);
        }
        out->from_field = find_output_field(p, from, p->n_outputs - 1);
        out->from_output = -1;
        if (out->from_field < 0) {
            if (model) {
                out->from_output = inf_model_find_output(model, from);
                if (out->from_output < 0)
                    return inf_error_set(err, INF_EFORMAT, "%s.from: '%s' is neither a model output nor an earlier output field", path,
                                from);
            } else {
                out->from_output = 0; /* resolved by name at finish */
            }
        } else if (out->op == OUT_ARGMAX || out->op == OUT_TOP_K) {
            return inf_error_set(err, INF_EFORMAT, "%s.from: '%s' needs a model output with class scores", path, op);
        }
        out->index = -1;
        const cJSON *idx = cJSON_GetObjectItemCaseSensitive(o, "index");
        if (idx) {
            if (!cJSON_IsNumber(idx) || !(idx->valuedouble >= 0 && idx->valuedouble <= 1e6) ||
                idx->valuedouble != floor(idx->valuedouble))
                return inf_error_set(err, INF_EFORMAT, "%s.index: must be a column index (an integer >= 0)", path);
            out->index = (int)idx->valuedouble;
            if (model && out->from_output >= 0) {
                const inf_value_info *info = inf_model_output(model, out->from_output);
                if (info->ndim == 2 && info->dims[1] >= 0 && out->index >= info->dims[1])
                    return inf_error_set(err, INF_EFORMAT, "%s.index: %d but the output '%s' has %lld columns", path, out->index, from,
                                (long long)info->dims[1]);
                if (info->ndim == 1 && out->index > 0)
                    return inf_error_set(err, INF_EFORMAT, "%s.index: the output '%s' is 1-D", path, from);
            }
        }
        if (out->op == OUT_THRESHOLD) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "value");
            if (!cJSON_IsNumber(v)) return inf_error_set(err, INF_EFORMAT, "%s.value: missing threshold (a number)", path);
            out->value = v->valuedouble;
        }
        if (out->op == OUT_TOP_K) {
            const cJSON *k = cJSON_GetObjectItemCaseSensitive(o, "k");
            if (!cJSON_IsNumber(k) || k->valuedouble < 1 || k->valuedouble > 1000 || k->valuedouble != floor(k->valuedouble))
                return inf_error_set(err, INF_EFORMAT, "%s.k: missing (an integer from 1 to 1000)", path);
            out->k = (int)k->valuedouble;
        }
        inf_status st = parse_labels(out, cJSON_GetObjectItemCaseSensitive(o, "labels"), path, err);
        if (st) return st;
        if (out->op == OUT_THRESHOLD && out->n_labels && out->n_labels != 2)
            return inf_error_set(err, INF_EFORMAT, "%s.labels: a threshold takes two labels [below, at or above]", path);
        if ((out->op == OUT_ARGMAX || out->op == OUT_TOP_K) && out->n_labels && model && out->from_output >= 0) {
            /* one label per class column: fewer would mix labels and indices in one field */
            const inf_value_info *info = inf_model_output(model, out->from_output);
            if (info->kind == INF_KIND_TENSOR && info->ndim == 2 && info->dims[1] >= 0 && out->n_labels != info->dims[1])
                return inf_error_set(err, INF_EFORMAT, "%s.labels: %d labels but the output '%s' has %lld classes", path,
                            out->n_labels, from, (long long)info->dims[1]);
        }
    }
    return INF_OK;
}

/* Default output mapping: every model output -> columns named after it. */
static inf_status default_outputs(inf_pipeline *p, const inf_model *model, inf_error *err) {
    int n = inf_model_n_outputs(model);
    p->outputs = calloc((size_t)(n ? n : 1), sizeof *p->outputs);
    if (!p->outputs) return inf_error_set(err, INF_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        poutput *o = &p->outputs[p->n_outputs++];
        const inf_value_info *info = inf_model_output(model, i);
        if (!(o->name = strdup(info->name)) || !(o->from = strdup(info->name))) return inf_error_set(err, INF_ENOMEM, "out of memory");
        o->op = OUT_VALUE;
        o->from_output = i;
        o->from_field = -1;
        o->index = -1;
        o->default_cols = 1;
    }
    return INF_OK;
}

/* ---- the whole spec ---- */

static inf_status finish_common(inf_pipeline *p, const inf_pipeline_options *opts, inf_error *err) {
    /* flattened feature columns */
    int total = 0;
    for (int m = 0; m < p->n_model_inputs; m++) total += p->model_inputs[m].width;
    p->feature_col_names = calloc((size_t)(total ? total : 1), sizeof *p->feature_col_names);
    if (!p->feature_col_names) return inf_error_set(err, INF_ENOMEM, "out of memory");
    for (int m = 0; m < p->n_model_inputs; m++)
        for (int c = 0; c < p->model_inputs[m].n_cols; c++) {
            const pcol *col = &p->cols[p->model_inputs[m].cols[c]];
            for (int w = 0; w < col->width; w++) {
                const char *nm = col->sub_names ? col->sub_names[w] : col->name;
                if (!(p->feature_col_names[p->n_feature_cols++] = strdup(nm))) return inf_error_set(err, INF_ENOMEM, "out of memory");
            }
        }
    /* monitoring counters: inputs then lookups */
    int nf = p->n_inputs + p->n_lookups;
    p->field_stat_names = calloc((size_t)(nf ? nf : 1), sizeof *p->field_stat_names);
    p->field_invalid = calloc((size_t)(nf ? nf : 1), sizeof *p->field_invalid);
    p->field_rejected = calloc((size_t)(nf ? nf : 1), sizeof *p->field_rejected);
    p->field_missing = calloc((size_t)(nf ? nf : 1), sizeof *p->field_missing);
    if (!p->field_stat_names || !p->field_invalid || !p->field_rejected || !p->field_missing)
        return inf_error_set(err, INF_ENOMEM, "out of memory");
    for (int i = 0; i < nf; i++) {
        const char *nm = i < p->n_inputs ? p->inputs[i].name : p->lookups[i - p->n_inputs].name;
        if (!(p->field_stat_names[i] = strdup(nm))) return inf_error_set(err, INF_ENOMEM, "out of memory");
        p->n_field_stats = i + 1;
    }
    if (opts && opts->id_column) {
        free(p->id_column);
        if (!(p->id_column = strdup(opts->id_column))) return inf_error_set(err, INF_ENOMEM, "out of memory");
    }
    for (int i = 0; i < p->n_inputs && p->id_column; i++)
        if (!strcmp(p->inputs[i].name, p->id_column)) p->id_is_string = p->inputs[i].type == INF_FIELD_STRING;
    if (!p->model_version && !(p->model_version = strdup(opts && opts->model_version ? opts->model_version : "")))
        return inf_error_set(err, INF_ENOMEM, "out of memory");
    return INF_OK;
}

inf_status inf__pipeline_parse(cJSON *root, const inf_model *model, const inf_pipeline_options *opts, int fit_mode,
                               inf_pipeline **out, inf_error *err) {
    static const char *const keys[] = {"spec_version", "name", "model", "description", "inputs", "on_invalid",
                                       "lookups", "features", "model_inputs", "outputs", "passthrough", NULL};
    *out = NULL;
    inf_status st;
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return inf_error_set(err, INF_EFORMAT, "spec: must be a JSON object");
    }
    inf_pipeline *p = calloc(1, sizeof *p);
    if (!p) {
        cJSON_Delete(root);
        return inf_error_set(err, INF_ENOMEM, "out of memory");
    }
    p->json = root;
    p->model = model;
    p->fit_mode = fit_mode;
    if (check_keys(root, keys, "spec", err)) {
        st = err ? err->status : INF_EFORMAT;
        goto fail;
    }
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "spec_version");
    if (ver && (!cJSON_IsNumber(ver) || ver->valuedouble != 1)) {
        st = inf_error_set(err, INF_EFORMAT, "spec_version: only version 1 is known");
        goto fail;
    }
    const char *name = get_str(root, "name");
    p->name = strdup(name ? name : "unnamed");
    const char *mname = opts && opts->model_name ? opts->model_name : get_str(root, "model") ? get_str(root, "model") : p->name;
    p->model_name = dupz(mname);
    p->base_dir = strdup(opts && opts->base_dir ? opts->base_dir : ".");
    if (!p->name || !p->model_name || !p->base_dir) {
        st = inf_error_set(err, INF_ENOMEM, "out of memory");
        goto fail;
    }
    if (check_str(root, "on_invalid", "", err) || check_str(root, "name", "", err) || check_str(root, "model", "", err)) {
        st = err ? err->status : INF_EFORMAT;
        goto fail;
    }
    const char *pol = get_str(root, "on_invalid");
    if (pol && strcmp(pol, "reject") && strcmp(pol, "count")) {
        st = inf_error_set(err, INF_EFORMAT, "on_invalid: must be \"reject\" or \"count\"");
        goto fail;
    }
    p->policy = pol && !strcmp(pol, "count") ? POLICY_COUNT : POLICY_REJECT;
    const cJSON *inputs = cJSON_GetObjectItemCaseSensitive(root, "inputs");
    const cJSON *lookups = cJSON_GetObjectItemCaseSensitive(root, "lookups");
    const cJSON *features = cJSON_GetObjectItemCaseSensitive(root, "features");
    const cJSON *mi = cJSON_GetObjectItemCaseSensitive(root, "model_inputs");
    const cJSON *outs = cJSON_GetObjectItemCaseSensitive(root, "outputs");
    if (!inputs) {
        st = inf_error_set(err, INF_EFORMAT, "inputs: missing (the raw record schema)");
        goto fail;
    }
    if (!mi) {
        st = inf_error_set(err, INF_EFORMAT, "model_inputs: missing (which features form each model input)");
        goto fail;
    }
    /* capacities: columns = inputs + lookup features + features */
    int n_in = cJSON_GetArraySize(inputs), n_lk = lookups ? cJSON_GetArraySize(lookups) : 0;
    int n_xf = features ? cJSON_GetArraySize(features) : 0, n_lf = 0;
    for (const cJSON *l = lookups ? lookups->child : NULL; l; l = l->next)
        n_lf += cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(l, "features"));
    p->inputs = calloc((size_t)n_in + 1, sizeof *p->inputs);
    p->lookups = calloc((size_t)n_lk + 1, sizeof *p->lookups);
    p->xfs = calloc((size_t)n_xf + 1, sizeof *p->xfs);
    p->cols = calloc((size_t)(n_in + n_lf + n_xf) + 1, sizeof *p->cols);
    if (!p->inputs || !p->lookups || !p->xfs || !p->cols) {
        st = inf_error_set(err, INF_ENOMEM, "out of memory");
        goto fail;
    }
    if ((st = parse_inputs(p, inputs, err))) goto fail;
    if (lookups && (st = parse_lookups(p, lookups, err))) goto fail;
    if (features && (st = parse_features(p, features, err))) goto fail;
    if ((st = parse_model_inputs(p, mi, model, err))) goto fail;
    if (outs) {
        if ((st = parse_outputs(p, outs, model, err))) goto fail;
    } else if (model) {
        if ((st = default_outputs(p, model, err))) goto fail;
    }
    const cJSON *pt = cJSON_GetObjectItemCaseSensitive(root, "passthrough");
    if (pt) {
        if (!cJSON_IsArray(pt)) {
            st = inf_error_set(err, INF_EFORMAT, "passthrough: must be an array of input names");
            goto fail;
        }
        p->passthrough = calloc((size_t)cJSON_GetArraySize(pt) + 1, sizeof *p->passthrough);
        if (!p->passthrough) {
            st = inf_error_set(err, INF_ENOMEM, "out of memory");
            goto fail;
        }
        int k = 0;
        for (const cJSON *it = pt->child; it; it = it->next, k++) {
            int c = cJSON_IsString(it) ? find_col(p, it->valuestring) : -1;
            if (c < 0 || p->cols[c].source != SRC_INPUT) {
                st = inf_error_set(err, INF_EFORMAT, "passthrough[%d]: not a declared input field", k);
                goto fail;
            }
            if (!(p->passthrough[p->n_passthrough++] = strdup(it->valuestring))) {
                st = inf_error_set(err, INF_ENOMEM, "out of memory");
                goto fail;
            }
        }
    }
    if ((st = finish_common(p, opts, err))) goto fail;
    p->canonical = inf__pipeline_canonical_json(root);
    if (!p->canonical) {
        st = inf_error_set(err, INF_ENOMEM, "out of memory");
        goto fail;
    }
    uint8_t digest[32];
    inf__pipeline_sha256(p->canonical, strlen(p->canonical), digest);
    for (int i = 0; i < 32; i++) snprintf(p->hash + 2 * i, 3, "%02x", digest[i]);
    *out = p;
    return INF_OK;
fail:
    inf_pipeline_free(p);
    return st;
}

void inf_pipeline_options_init(inf_pipeline_options *opts) { memset(opts, 0, sizeof *opts); }

inf_status inf_pipeline_load_string(const char *json, size_t len, const inf_model *model,
                                    const inf_pipeline_options *opts, inf_pipeline **out, inf_error *err) {
    *out = NULL;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    if (!root) {
        long off = end ? (long)(end - json) : 0;
        long line = 1;
        for (long i = 0; i < off && i < (long)len; i++)
            if (json[i] == '\n') line++;
        return inf_error_set(err, INF_EFORMAT, "spec: malformed JSON at line %ld (byte %ld)", line, off);
    }
    return inf__pipeline_parse(root, model, opts, 0, out, err);
}

inf_status inf_pipeline_load(const char *path, const inf_model *model, const inf_pipeline_options *opts,
                             inf_pipeline **out, inf_error *err) {
    *out = NULL;
    /* a regular file of at most 64 MiB (core/file.c: a FIFO or /dev/zero is refused) */
    void *data;
    size_t n;
    inf_status rd = inf_file_read(path, "pipeline spec", INF_FILE_MAX_SPEC_BYTES, &data, &n, err);
    if (rd) return rd;
    char *buf = data;
    inf_pipeline_options o;
    if (opts) o = *opts;
    else inf_pipeline_options_init(&o);
    char dir[1024];
    if (!o.base_dir) {
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = 0;
        else snprintf(dir, sizeof dir, ".");
        o.base_dir = dir;
    }
    inf_status st = inf_pipeline_load_string(buf, n, model, &o, out, err);
    inf_file_free(buf);
    if (st && err) {
        char msg[INF_ERROR_MESSAGE_MAX];
        snprintf(msg, sizeof msg, "%s: %s", path, err->message);
        memcpy(err->message, msg, sizeof msg);
    }
    return st;
}

inf_status inf_pipeline_default(const inf_model *model, const inf_pipeline_options *opts, inf_pipeline **out,
                                inf_error *err) {
    *out = NULL;
    if (!model) return inf_error_set(err, INF_EINVAL, "default pipeline: no model");
    if (inf_model_n_inputs(model) != 1)
        return inf_error_set(err, INF_ETYPE, "default pipeline: the model has %d inputs; without a spec it must have one 2-D numeric input",
                    inf_model_n_inputs(model));
    const inf_value_info *info = inf_model_input(model, 0);
    inf_dtype dt = info->dtype;
    if (info->kind != INF_KIND_TENSOR || (info->ndim >= 0 && info->ndim != 2) ||
        !(dt == INF_DTYPE_F32 || dt == INF_DTYPE_F64 || dt == INF_DTYPE_I64 || dt == INF_DTYPE_I32))
        return inf_error_set(err, INF_ETYPE, "default pipeline: the model input '%s' must be a 2-D float32/float64/int64/int32 tensor; write a pipeline spec",
                    info->name);
    inf_pipeline *p = calloc(1, sizeof *p);
    if (!p) return inf_error_set(err, INF_ENOMEM, "out of memory");
    inf_status st;
    p->is_default = 1;
    p->model = model;
    p->model_inputs = calloc(1, sizeof *p->model_inputs);
    p->name = strdup("default");
    p->model_name = strdup(opts && opts->model_name ? opts->model_name : "model");
    p->canonical = strdup("default");
    p->base_dir = strdup(".");
    if (!p->model_inputs || !p->name || !p->model_name || !p->canonical || !p->base_dir) {
        st = inf_error_set(err, INF_ENOMEM, "out of memory");
        goto fail;
    }
    pmodel_input *t = &p->model_inputs[p->n_model_inputs++];
    if (!(t->name = strdup(info->name))) {
        st = inf_error_set(err, INF_ENOMEM, "out of memory");
        goto fail;
    }
    t->dtype = dt;
    t->model_index = 0;
    t->width = info->ndim == 2 && info->dims[1] >= 0 ? (int)info->dims[1] : -1;
    if ((st = default_outputs(p, model, err))) goto fail;
    if ((st = finish_common(p, opts, err))) goto fail;
    uint8_t digest[32];
    inf__pipeline_sha256("default", 7, digest);
    for (int i = 0; i < 32; i++) snprintf(p->hash + 2 * i, 3, "%02x", digest[i]);
    *out = p;
    return INF_OK;
fail:
    inf_pipeline_free(p);
    return st;
}

/* ---- accessors ---- */

const char *inf_pipeline_name(const inf_pipeline *p) { return p->name; }
const char *inf_pipeline_hash(const inf_pipeline *p) { return p->hash; }
const char *inf_pipeline_model_name(const inf_pipeline *p) { return p->model_name; }
const char *inf_pipeline_model_version(const inf_pipeline *p) { return p->model_version; }
const char *inf_pipeline_id_column(const inf_pipeline *p) { return p->id_column; }
int inf_pipeline_is_default(const inf_pipeline *p) { return p->is_default; }
const char *inf_pipeline_canonical(const inf_pipeline *p) { return p->canonical; }
int inf_pipeline_n_inputs(const inf_pipeline *p) { return p->n_inputs; }
const char *inf_pipeline_input_name(const inf_pipeline *p, int i) {
    return i >= 0 && i < p->n_inputs ? p->inputs[i].name : NULL;
}
inf_field_type inf_pipeline_input_type(const inf_pipeline *p, int i) {
    return i >= 0 && i < p->n_inputs ? (inf_field_type)p->inputs[i].type : INF_FIELD_NULL;
}
int inf_pipeline_is_sensitive(const inf_pipeline *p, const char *field) {
    for (int i = 0; i < p->n_inputs; i++)
        if (!strcmp(p->inputs[i].name, field)) return p->inputs[i].sensitive;
    return 0;
}
int inf_pipeline_n_feature_columns(const inf_pipeline *p) { return p->n_feature_cols; }
const char *inf_pipeline_feature_column(const inf_pipeline *p, int i) {
    return i >= 0 && i < p->n_feature_cols ? p->feature_col_names[i] : NULL;
}

void inf_pipeline_get_stats(const inf_pipeline *p, inf_pipeline_stats *out) {
    inf_pipeline *q = (inf_pipeline *)p;
    out->n_records = atomic_load(&q->n_records);
    out->n_rejected = atomic_load(&q->n_rejected);
    out->n_lookups = atomic_load(&q->n_lookups_done);
    out->n_lookup_missing = atomic_load(&q->n_lookup_missing);
}

int inf_pipeline_n_field_stats(const inf_pipeline *p) { return p->n_field_stats; }

void inf_pipeline_get_field_stats(const inf_pipeline *p, int i, inf_pipeline_field_stats *out) {
    memset(out, 0, sizeof *out);
    if (i < 0 || i >= p->n_field_stats) return;
    out->field = p->field_stat_names[i];
    out->n_invalid = atomic_load(&p->field_invalid[i]);
    out->n_rejected = atomic_load(&p->field_rejected[i]);
    out->n_missing = atomic_load(&p->field_missing[i]);
}

void inf_pipeline_string_free(char *s) { free(s); }
