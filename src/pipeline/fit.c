/*
 * fit.c -- learning transform parameters from a training table (fit-spec).
 *
 * A template spec marks transforms with "fit": true.  Each pass parses the
 * template in fit mode (unfitted transforms output NaN), streams the source
 * through an executor, and accumulates, for every unfitted transform whose
 * inputs are all known, the statistics of its input column over accepted
 * records (missing values skipped):
 *   standardize  mean, std (population, ddof 0; a zero std becomes 1)
 *   min_max      min, max
 *   impute       mean ("strategy": "mean")
 *   bucketize    edges = quantiles i/n_buckets, i = 1..n_buckets-1, with
 *                NumPy's default linear interpolation, duplicates dropped
 *   one_hot, ordinal, label_encode
 *                categories by descending count, ties by text ascending,
 *                at most max_categories
 * The learned values are written into the template and "fit" removed; a
 * transform reading an unfitted one waits for the next pass.  Memory: one
 * accumulator per transform; bucketize keeps its column's values (a double
 * per record), categories one entry per distinct value.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/pipeline_int.h"

typedef struct cat_count {
    char *text;
    uint64_t count;
} cat_count;

typedef struct acc {
    int active;
    double n, mean, m2, min, max;
    double *vals;
    size_t n_vals, cap_vals;
    cat_count *cats;
    int n_cats, cap_cats;
    int numeric_cats;
} acc;

static int add_num(acc *a, double v, int keep) {
    a->n += 1;
    double d = v - a->mean;
    a->mean += d / a->n;
    a->m2 += d * (v - a->mean);
    if (a->n == 1 || v < a->min) a->min = v;
    if (a->n == 1 || v > a->max) a->max = v;
    if (keep) {
        if (a->n_vals == a->cap_vals) {
            size_t cap = a->cap_vals ? a->cap_vals * 2 : 1024;
            double *p = realloc(a->vals, cap * sizeof *p);
            if (!p) return -1;
            a->vals = p;
            a->cap_vals = cap;
        }
        a->vals[a->n_vals++] = v;
    }
    return 0;
}

static int add_cat(acc *a, const char *s, uint32_t len) {
    for (int i = 0; i < a->n_cats; i++) /* linear: categories are few */
        if (strlen(a->cats[i].text) == len && !memcmp(a->cats[i].text, s, len)) {
            a->cats[i].count++;
            return 0;
        }
    if (a->n_cats == a->cap_cats) {
        int cap = a->cap_cats ? a->cap_cats * 2 : 32;
        cat_count *p = realloc(a->cats, (size_t)cap * sizeof *p);
        if (!p) return -1;
        a->cats = p;
        a->cap_cats = cap;
    }
    char *t = malloc(len + 1);
    if (!t) return -1;
    memcpy(t, s, len);
    t[len] = 0;
    a->cats[a->n_cats].text = t;
    a->cats[a->n_cats].count = 1;
    a->n_cats++;
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int cmp_cat(const void *a, const void *b) {
    const cat_count *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return strcmp(x->text, y->text);
}

static void set_num(cJSON *obj, const char *key, double v) {
    cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
    cJSON_AddNumberToObject(obj, key, v);
}

static inf_status write_params(const pxf *x, acc *a, cJSON *obj, inf_error *err) {
    const char *op = x->def->op;
    if (a->n == 0 && a->n_cats == 0)
        return inf_error_set(err, INF_EINVAL, "fit-spec: feature '%s': no non-missing values to learn from", x->name);
    if (!strcmp(op, "standardize")) {
        double std = sqrt(a->m2 / a->n);
        set_num(obj, "mean", a->mean);
        set_num(obj, "std", std > 0 ? std : 1.0);
    } else if (!strcmp(op, "min_max")) {
        set_num(obj, "min", a->min);
        set_num(obj, "max", a->max);
    } else if (!strcmp(op, "impute")) {
        set_num(obj, "value", a->mean);
    } else if (!strcmp(op, "bucketize")) {
        qsort(a->vals, a->n_vals, sizeof *a->vals, cmp_double);
        cJSON *edges = cJSON_CreateArray();
        if (!edges) return inf_error_set(err, INF_ENOMEM, "out of memory");
        double last = NAN;
        for (int64_t i = 1; i < x->n_buckets; i++) {
            double q = (double)i / (double)x->n_buckets, pos = q * (double)(a->n_vals - 1);
            size_t lo = (size_t)floor(pos);
            double frac = pos - (double)lo;
            double v = lo + 1 < a->n_vals ? a->vals[lo] + (a->vals[lo + 1] - a->vals[lo]) * frac : a->vals[lo];
            if (v == last) continue;
            last = v;
            cJSON_AddItemToArray(edges, cJSON_CreateNumber(v));
        }
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "edges");
        cJSON_AddItemToObject(obj, "edges", edges);
    } else {
        qsort(a->cats, (size_t)a->n_cats, sizeof *a->cats, cmp_cat);
        int n = a->n_cats;
        if (x->max_categories && n > x->max_categories) n = x->max_categories;
        cJSON *cats = cJSON_CreateArray();
        if (!cats) return inf_error_set(err, INF_ENOMEM, "out of memory");
        for (int i = 0; i < n; i++) {
            if (a->numeric_cats) cJSON_AddItemToArray(cats, cJSON_CreateNumber(strtod(a->cats[i].text, NULL)));
            else cJSON_AddItemToArray(cats, cJSON_CreateString(a->cats[i].text));
        }
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "categories");
        cJSON_AddItemToObject(obj, "categories", cats);
    }
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "fit");
    return INF_OK;
}

static void acc_free(acc *a) {
    free(a->vals);
    for (int i = 0; i < a->n_cats; i++) free(a->cats[i].text);
    free(a->cats);
    memset(a, 0, sizeof *a);
}

inf_status inf_pipeline_fit(const char *template_json, size_t len, const char *src_uri, const char *as_of_field,
                            const char *history_uri, const inf_pipeline_options *opts, char **out_json, inf_error *err) {
    *out_json = NULL;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(template_json, len, &end, 0);
    if (!root) return inf_error_set(err, INF_EFORMAT, "spec: malformed JSON near byte %ld", end ? (long)(end - template_json) : 0L);
    inf_status st = INF_OK;
    inf_pipeline *p = NULL;
    inf_pipeline_exec *e = NULL;
    inf_source *src = NULL;
    inf_record_batch *batch = NULL;
    acc *accs = NULL;
    int *depends = NULL;
    if ((st = inf_record_batch_new(&batch))) {
        st = inf_error_set(err, st, "out of memory");
        goto done;
    }
    for (int pass = 0; pass < 64; pass++) {
        cJSON *copy = cJSON_Duplicate(root, 1);
        if (!copy) {
            st = inf_error_set(err, INF_ENOMEM, "out of memory");
            goto done;
        }
        if ((st = inf__pipeline_parse(copy, NULL, opts, 1, &p, err))) goto done;
        free(accs);
        free(depends);
        accs = calloc((size_t)p->n_xfs + 1, sizeof *accs);
        depends = calloc((size_t)p->n_xfs + 1, sizeof *depends);
        if (!accs || !depends) {
            st = inf_error_set(err, INF_ENOMEM, "out of memory");
            goto done;
        }
        int n_active = 0, n_unfitted = 0;
        for (int i = 0; i < p->n_xfs; i++) {
            const pxf *x = &p->xfs[i];
            for (int k = 0; k < x->n_from; k++) {
                const pcol *c = &p->cols[x->from_col[k]];
                if (c->source == SRC_FEATURE && (p->xfs[c->index].fit || depends[c->index])) depends[i] = 1;
            }
            if (!x->fit) continue;
            n_unfitted++;
            if (!depends[i]) {
                accs[i].active = 1;
                accs[i].numeric_cats = x->from_kind != COL_STR;
                n_active++;
            }
        }
        if (!n_unfitted) break;
        if (!n_active) {
            st = inf_error_set(err, INF_EINTERNAL, "fit-spec: cyclic fitting dependencies");
            goto done;
        }
        if ((st = inf_pipeline_exec_new(p, &e, err))) goto done;
        if (as_of_field && (st = inf_pipeline_exec_set_point_in_time(e, as_of_field, history_uri, err))) goto done;
        if ((st = inf_source_open(src_uri, NULL, &src, err))) goto done;
        int eof = 0;
        while (!eof) {
            if ((st = inf_source_next(src, batch, &eof, err))) goto done;
            if (!inf_record_batch_n_rows(batch)) continue;
            if ((st = inf_pipeline_prepare(e, batch, NULL, err))) goto done;
            int n = inf__exec_rows(e);
            for (int i = 0; i < p->n_xfs; i++) {
                if (!accs[i].active) continue;
                const pxf *x = &p->xfs[i];
                const pcol *c = &p->cols[x->from_col[0]];
                int keep = !strcmp(x->def->op, "bucketize");
                int cats = x->def->width_from_params || !strcmp(x->def->op, "ordinal") || !strcmp(x->def->op, "label_encode");
                if (c->kind == COL_STR) {
                    const uint32_t *lens;
                    const char *const *s = inf__exec_str(e, x->from_col[0], &lens);
                    for (int r = 0; r < n; r++)
                        if (inf__exec_row_ok(e, r) && s[r] && add_cat(&accs[i], s[r], lens[r])) {
                            st = inf_error_set(err, INF_ENOMEM, "out of memory");
                            goto done;
                        }
                } else {
                    const double *v = inf__exec_num(e, x->from_col[0]);
                    char buf[64];
                    for (int r = 0; r < n; r++) {
                        if (!inf__exec_row_ok(e, r) || v[r] != v[r]) continue;
                        int bad = cats ? add_cat(&accs[i], buf, (uint32_t)snprintf(buf, sizeof buf, "%.17g", v[r]))
                                       : add_num(&accs[i], v[r], keep);
                        if (bad) {
                            st = inf_error_set(err, INF_ENOMEM, "out of memory");
                            goto done;
                        }
                    }
                }
            }
        }
        inf_source_close(src);
        src = NULL;
        inf_pipeline_exec_free(e);
        e = NULL;
        /* write the learned parameters into the template */
        cJSON *features = cJSON_GetObjectItemCaseSensitive(root, "features");
        for (int i = 0; i < p->n_xfs; i++) {
            if (!accs[i].active) continue;
            cJSON *obj = cJSON_GetArrayItem(features, i);
            if ((st = write_params(&p->xfs[i], &accs[i], obj, err))) goto done;
            acc_free(&accs[i]);
        }
        inf_pipeline_free(p);
        p = NULL;
    }
    /* final check: the completed spec loads without fit mode */
    char *text = cJSON_Print(root);
    if (!text) {
        st = inf_error_set(err, INF_ENOMEM, "out of memory");
        goto done;
    }
    inf_pipeline *check = NULL;
    if ((st = inf_pipeline_load_string(text, strlen(text), NULL, opts, &check, err))) {
        free(text);
        goto done;
    }
    inf_pipeline_free(check);
    *out_json = text;
done:
    if (accs && p)
        for (int i = 0; i < p->n_xfs; i++) acc_free(&accs[i]);
    free(accs);
    free(depends);
    inf_source_close(src);
    inf_pipeline_exec_free(e);
    inf_pipeline_free(p);
    inf_record_batch_free(batch);
    cJSON_Delete(root);
    return st;
}
