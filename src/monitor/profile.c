/*
 * profile.c -- distribution profiles and drift metrics (profile.h).  A
 * column keeps its numeric values (all of them while profiling; the stored
 * sample once loaded from a baseline) or its category counts; bins are
 * computed when a baseline is written and read back with it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "monitor/predlog.h"
#include "monitor/profile.h"

typedef struct column {
    char *name;
    int is_feature;
    int typed, categorical; /* typed: the first non-null value decided categorical or numeric */
    uint64_t n, n_missing;
    double *vals;
    size_t n_vals, cap_vals;
    char **cats;
    double *cat_counts;
    int n_cats, cap_cats;
    double *edges, *bin_counts; /* n_edges and n_edges + 1 (a loaded baseline, or computed) */
    int n_edges, have_bins;
} column;

struct inf__mon_profile {
    column *cols;
    int n_cols, cap_cols;
    char **features;
    int n_features;
    uint64_t n_rows;
};

inf_status inf__mon_profile_new(inf__mon_profile **out) {
    *out = calloc(1, sizeof **out);
    return *out ? INF_OK : INF_ENOMEM;
}

static void column_free(column *c) {
    free(c->name);
    free(c->vals);
    for (int i = 0; i < c->n_cats; i++) free(c->cats[i]);
    free(c->cats);
    free(c->cat_counts);
    free(c->edges);
    free(c->bin_counts);
}

void inf__mon_profile_free(inf__mon_profile *p) {
    if (!p) return;
    for (int i = 0; i < p->n_cols; i++) column_free(&p->cols[i]);
    for (int i = 0; i < p->n_features; i++) free(p->features[i]);
    free(p->features);
    free(p->cols);
    free(p);
}

uint64_t inf__mon_profile_rows(const inf__mon_profile *p) { return p->n_rows; }

static int is_feature_name(const inf__mon_profile *p, const char *name) {
    for (int i = 0; i < p->n_features; i++)
        if (!strcmp(p->features[i], name)) return 1;
    return 0;
}

inf_status inf__mon_profile_mark_feature(inf__mon_profile *p, const char *name) {
    if (is_feature_name(p, name)) return INF_OK;
    char **f = realloc(p->features, (size_t)(p->n_features + 1) * sizeof *f);
    if (!f) return INF_ENOMEM;
    p->features = f;
    if (!(f[p->n_features] = strdup(name))) return INF_ENOMEM;
    p->n_features++;
    for (int i = 0; i < p->n_cols; i++)
        if (!strcmp(p->cols[i].name, name)) p->cols[i].is_feature = 1;
    return INF_OK;
}

static column *find_column(inf__mon_profile *p, const char *name) {
    for (int i = 0; i < p->n_cols; i++)
        if (!strcmp(p->cols[i].name, name)) return &p->cols[i];
    return NULL;
}

static column *get_column(inf__mon_profile *p, const char *name) {
    column *c = find_column(p, name);
    if (c) return c;
    if (p->n_cols == p->cap_cols) {
        int cap = p->cap_cols ? 2 * p->cap_cols : 16;
        column *cols = realloc(p->cols, (size_t)cap * sizeof *cols);
        if (!cols) return NULL;
        p->cols = cols;
        p->cap_cols = cap;
    }
    c = &p->cols[p->n_cols];
    memset(c, 0, sizeof *c);
    if (!(c->name = strdup(name))) return NULL;
    c->is_feature = is_feature_name(p, name);
    p->n_cols++;
    return c;
}

static inf_status push_value(column *c, double v) {
    if (c->n_vals == c->cap_vals) {
        size_t cap = c->cap_vals ? 2 * c->cap_vals : 256;
        double *vals = realloc(c->vals, cap * sizeof *vals);
        if (!vals) return INF_ENOMEM;
        c->vals = vals;
        c->cap_vals = cap;
    }
    c->vals[c->n_vals++] = v;
    return INF_OK;
}

static inf_status count_category(column *c, const char *s, double k) {
    for (int i = 0; i < c->n_cats; i++)
        if (!strcmp(c->cats[i], s)) {
            c->cat_counts[i] += k;
            return INF_OK;
        }
    if (c->n_cats == c->cap_cats) {
        int cap = c->cap_cats ? 2 * c->cap_cats : 8;
        char **cats = realloc(c->cats, (size_t)cap * sizeof *cats);
        if (!cats) return INF_ENOMEM;
        c->cats = cats;
        double *counts = realloc(c->cat_counts, (size_t)cap * sizeof *counts);
        if (!counts) return INF_ENOMEM;
        c->cat_counts = counts;
        c->cap_cats = cap;
    }
    if (!(c->cats[c->n_cats] = strdup(s))) return INF_ENOMEM;
    c->cat_counts[c->n_cats++] = k;
    return INF_OK;
}

static inf_status add_value(column *c, const inf_value *v) {
    c->n++;
    if (v->type == INF_FIELD_NULL) {
        c->n_missing++;
        return INF_OK;
    }
    if (!c->typed) {
        c->typed = 1;
        c->categorical = v->type == INF_FIELD_STRING;
    }
    double d;
    if (!c->categorical) {
        if (inf_value_to_double(v, &d) || !isfinite(d)) {
            c->n_missing++;
            return INF_OK;
        }
        return push_value(c, d);
    }
    char num[64];
    const char *s = num;
    if (v->type == INF_FIELD_STRING) s = v->u.s.ptr;
    else if (inf_value_to_double(v, &d)) s = "";
    else snprintf(num, sizeof num, "%.17g", d);
    return count_category(c, s, 1);
}

int inf__mon_profile_find(const inf__mon_profile *p, const char *name) {
    for (int i = 0; i < p->n_cols; i++)
        if (!strcmp(p->cols[i].name, name)) return i;
    return -1;
}

int inf__mon_profile_n_columns(const inf__mon_profile *p) { return p->n_cols; }
const char *inf__mon_profile_column_name(const inf__mon_profile *p, int idx) { return p->cols[idx].name; }

inf_status inf__mon_profile_new_like(const inf__mon_profile *like, inf__mon_profile **out) {
    inf__mon_profile *p;
    if (inf__mon_profile_new(&p)) return INF_ENOMEM;
    for (int i = 0; i < like->n_cols; i++) {
        column *c = get_column(p, like->cols[i].name);
        if (!c) {
            inf__mon_profile_free(p);
            return INF_ENOMEM;
        }
        c->is_feature = like->cols[i].is_feature;
        c->typed = like->cols[i].typed;
        c->categorical = like->cols[i].categorical;
    }
    *out = p;
    return INF_OK;
}

inf_status inf__mon_profile_add_number(inf__mon_profile *p, int idx, double v) {
    column *c = &p->cols[idx];
    c->n++;
    if (!c->typed) c->typed = 1; /* numeric */
    if (c->categorical) {
        char num[64];
        if (!isfinite(v)) {
            c->n_missing++;
            return INF_OK;
        }
        snprintf(num, sizeof num, "%.17g", v);
        return count_category(c, num, 1);
    }
    if (!isfinite(v)) {
        c->n_missing++;
        return INF_OK;
    }
    return push_value(c, v);
}

inf_status inf__mon_profile_add_value(inf__mon_profile *p, int idx, const inf_value *v) {
    return add_value(&p->cols[idx], v);
}

static void pad_columns(inf__mon_profile *p);

void inf__mon_profile_end_row(inf__mon_profile *p) {
    p->n_rows++;
    pad_columns(p);
}

static int row_matches(const inf_record_batch *b, int row, int f, const char *want) {
    if (!want || f < 0) return 1;
    const inf_value *v = inf_record_batch_get(b, row, f);
    return v->type == INF_FIELD_STRING && !strcmp(v->u.s.ptr, want);
}

int inf__mon_profile_row_matches(const inf_record_batch *b, int row, const char *model, const char *version) {
    return row_matches(b, row, inf_record_batch_find_field(b, "model_name"), model) &&
           row_matches(b, row, inf_record_batch_find_field(b, "model_version"), version);
}

/* A column a row lacks is missing there: pad every column to n_rows. */
static void pad_columns(inf__mon_profile *p) {
    for (int i = 0; i < p->n_cols; i++) {
        column *c = &p->cols[i];
        if (c->n < p->n_rows) {
            c->n_missing += p->n_rows - c->n;
            c->n = p->n_rows;
        }
    }
}

static inf_status add_row(inf__mon_profile *p, const inf_record_batch *b, int row) {
    p->n_rows++;
    for (int f = 0, nf = inf_record_batch_n_fields(b); f < nf; f++) {
        const char *name = inf_record_batch_field_name(b, f);
        if (inf__mon_log_is_meta_field(name)) continue;
        column *c = get_column(p, name);
        if (!c || add_value(c, inf_record_batch_get(b, row, f))) return INF_ENOMEM;
    }
    return INF_OK;
}

inf_status inf__mon_profile_add_row(inf__mon_profile *p, const inf_record_batch *b, int row) {
    inf_status st = add_row(p, b, row);
    pad_columns(p);
    return st;
}

inf_status inf__mon_profile_add(inf__mon_profile *p, const inf_record_batch *b, const char *model,
                                const char *version) {
    int fm = inf_record_batch_find_field(b, "model_name"), fv = inf_record_batch_find_field(b, "model_version");
    inf_status st = INF_OK;
    for (int row = 0, nr = inf_record_batch_n_rows(b); !st && row < nr; row++)
        if (row_matches(b, row, fm, model) && row_matches(b, row, fv, version)) st = add_row(p, b, row);
    pad_columns(p);
    return st;
}

/* ---- bins ---------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* numpy.quantile(x, q) with the default linear method; x sorted, n > 0. */
static double quantile(const double *x, size_t n, double q) {
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)floor(pos);
    if (lo + 1 >= n) return x[n - 1];
    double frac = pos - (double)lo;
    return x[lo] + frac * (x[lo + 1] - x[lo]);
}

/* numpy.searchsorted(edges, v, side="right"). */
static int bin_of(const double *edges, int n_edges, double v) {
    int lo = 0, hi = n_edges;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (edges[mid] <= v) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static inf_status compute_bins(column *c) {
    if (c->have_bins || c->categorical) return INF_OK;
    qsort(c->vals, c->n_vals, sizeof *c->vals, cmp_double);
    c->edges = malloc(INF__MON_BINS * sizeof *c->edges);
    c->bin_counts = calloc(INF__MON_BINS + 1, sizeof *c->bin_counts);
    if (!c->edges || !c->bin_counts) return INF_ENOMEM;
    c->n_edges = 0;
    for (int i = 1; c->n_vals && i < INF__MON_BINS; i++) {
        double e = quantile(c->vals, c->n_vals, (double)i / INF__MON_BINS);
        if (c->n_edges == 0 || e > c->edges[c->n_edges - 1]) c->edges[c->n_edges++] = e;
    }
    for (size_t i = 0; i < c->n_vals; i++) c->bin_counts[bin_of(c->edges, c->n_edges, c->vals[i])] += 1;
    c->have_bins = 1;
    return INF_OK;
}

/* ---- JSON ----------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* A JSON array of doubles printed with 17 significant digits: cJSON's own
 * printer may drop the last bits (it accepts a 15-digit text within an
 * epsilon), and KS on the stored sample must see the exact values. */
static cJSON *exact_array(const double *v, size_t n) {
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < n; i++) {
        char buf[40];
        if (isfinite(v[i])) snprintf(buf, sizeof buf, "%.17g", v[i]);
        else snprintf(buf, sizeof buf, "null");
        cJSON *x = cJSON_CreateRaw(buf);
        if (!x || !cJSON_AddItemToArray(a, x)) {
            cJSON_Delete(x);
            cJSON_Delete(a);
            return NULL;
        }
    }
    return a;
}

/* All the (sorted) values up to INF__MON_SAMPLE_MAX, else a reservoir
 * (Algorithm R, seeded deterministically) of that many. */
static cJSON *sample_json(const column *c) {
    size_t n = c->n_vals < INF__MON_SAMPLE_MAX ? c->n_vals : INF__MON_SAMPLE_MAX;
    double *s = malloc((n ? n : 1) * sizeof *s);
    if (!s) return NULL;
    memcpy(s, c->vals, n * sizeof *s);
    for (size_t i = n; i < c->n_vals; i++) {
        size_t j = (size_t)(splitmix64(i) % (i + 1));
        if (j < n) s[j] = c->vals[i];
    }
    qsort(s, n, sizeof *s, cmp_double);
    cJSON *a = exact_array(s, n);
    free(s);
    return a;
}

static cJSON *column_json(column *c) {
    if (compute_bins(c)) return NULL;
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddStringToObject(j, "type", c->categorical ? "category" : "number");
    cJSON_AddNumberToObject(j, "count", (double)c->n);
    cJSON_AddNumberToObject(j, "missing_rate", c->n ? (double)c->n_missing / (double)c->n : 0);
    if (c->categorical) {
        cJSON *f = cJSON_AddObjectToObject(j, "frequencies");
        for (int i = 0; f && i < c->n_cats; i++) cJSON_AddNumberToObject(f, c->cats[i], c->cat_counts[i]);
    } else {
        cJSON_AddItemToObject(j, "edges", exact_array(c->edges, (size_t)c->n_edges));
        cJSON_AddItemToObject(j, "counts", cJSON_CreateDoubleArray(c->bin_counts, c->n_edges + 1));
        cJSON_AddItemToObject(j, "sample", sample_json(c));
    }
    return j;
}

cJSON *inf__mon_profile_to_json(inf__mon_profile *p, const char *model, const char *version) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddStringToObject(j, "model", model ? model : "");
    cJSON_AddStringToObject(j, "version", version ? version : "");
    cJSON_AddNumberToObject(j, "rows", (double)p->n_rows);
    cJSON *feat = cJSON_AddObjectToObject(j, "features"), *outs = cJSON_AddObjectToObject(j, "outputs");
    for (int i = 0; feat && outs && i < p->n_cols; i++) {
        cJSON *c = column_json(&p->cols[i]);
        if (!c) {
            cJSON_Delete(j);
            return NULL;
        }
        cJSON_AddItemToObject(p->cols[i].is_feature ? feat : outs, p->cols[i].name, c);
    }
    return j;
}

/* A count read from JSON: a number in [0, 2^53], else 0 (never a float
 * cast out of range). */
static uint64_t json_count(const cJSON *x) {
    return cJSON_IsNumber(x) && x->valuedouble >= 0 && x->valuedouble <= 9007199254740992.0 ? (uint64_t)x->valuedouble : 0;
}

static double *json_doubles(const cJSON *a, int *n) {
    *n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1;
    if (*n < 0) return NULL;
    double *d = malloc((size_t)(*n ? *n : 1) * sizeof *d);
    if (!d) return NULL;
    int i = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, a) d[i++] = cJSON_IsNumber(x) ? x->valuedouble : NAN;
    return d;
}

static inf_status column_from_json(inf__mon_profile *p, const cJSON *cj, int is_feature, inf_error *err) {
    const char *name = cj->string;
    if (is_feature && inf__mon_profile_mark_feature(p, name)) return inf_error_set(err, INF_ENOMEM, "baseline: out of memory");
    column *c = get_column(p, name);
    if (!c) return inf_error_set(err, INF_ENOMEM, "baseline: out of memory");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(cj, "type");
    if (!cJSON_IsString(type)) return inf_error_set(err, INF_EFORMAT, "baseline: column '%s' has no \"type\"", name);
    c->typed = 1;
    c->categorical = !strcmp(type->valuestring, "category");
    const cJSON *count = cJSON_GetObjectItemCaseSensitive(cj, "count"), *mr = cJSON_GetObjectItemCaseSensitive(cj, "missing_rate");
    c->n = json_count(count);
    c->n_missing = cJSON_IsNumber(mr) && mr->valuedouble >= 0 && mr->valuedouble <= 1
                       ? (uint64_t)llround(mr->valuedouble * (double)c->n)
                       : 0;
    if (c->categorical) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(cj, "frequencies"), *x;
        if (!cJSON_IsObject(f)) return inf_error_set(err, INF_EFORMAT, "baseline: category column '%s' has no \"frequencies\"", name);
        cJSON_ArrayForEach(x, f) if (count_category(c, x->string, cJSON_IsNumber(x) ? x->valuedouble : 0))
            return inf_error_set(err, INF_ENOMEM, "baseline: out of memory");
        return INF_OK;
    }
    int ne, nc, ns;
    c->edges = json_doubles(cJSON_GetObjectItemCaseSensitive(cj, "edges"), &ne);
    c->bin_counts = json_doubles(cJSON_GetObjectItemCaseSensitive(cj, "counts"), &nc);
    double *sample = json_doubles(cJSON_GetObjectItemCaseSensitive(cj, "sample"), &ns);
    if (!c->edges || !c->bin_counts || !sample || nc != ne + 1) {
        free(sample);
        return inf_error_set(err, INF_EFORMAT, "baseline: number column '%s' needs \"edges\" (B-1), \"counts\" (B) and \"sample\"", name);
    }
    for (int i = 0; i < nc; i++)
        if (!(c->bin_counts[i] >= 0 && c->bin_counts[i] < 1e300)) {
            free(sample);
            return inf_error_set(err, INF_EFORMAT, "baseline: column '%s': counts[%d] is not a count", name, i);
        }
    for (int i = 0; i < ne; i++)
        if (!isfinite(c->edges[i]) || (i && c->edges[i] <= c->edges[i - 1])) {
            free(sample);
            return inf_error_set(err, INF_EFORMAT, "baseline: column '%s': edges must be finite and increasing", name);
        }
    for (int i = 0; i < ns; i++)
        if (!isfinite(sample[i])) {
            free(sample);
            return inf_error_set(err, INF_EFORMAT, "baseline: column '%s': sample[%d] is not a number", name, i);
        }
    c->n_edges = ne;
    c->have_bins = 1;
    qsort(sample, (size_t)ns, sizeof *sample, cmp_double);
    c->vals = sample;
    c->n_vals = c->cap_vals = (size_t)ns;
    return INF_OK;
}

inf_status inf__mon_profile_from_json(const cJSON *j, inf__mon_profile **out, inf_error *err) {
    *out = NULL;
    inf__mon_profile *p;
    if (inf__mon_profile_new(&p)) return inf_error_set(err, INF_ENOMEM, "baseline: out of memory");
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(j, "rows");
    p->n_rows = json_count(rows);
    static const char *const sections[] = {"features", "outputs"};
    for (int s = 0; s < 2; s++) {
        const cJSON *sec = cJSON_GetObjectItemCaseSensitive(j, sections[s]), *c;
        if (!cJSON_IsObject(sec)) {
            inf__mon_profile_free(p);
            return inf_error_set(err, INF_EFORMAT, "baseline: no \"%s\" object", sections[s]);
        }
        cJSON_ArrayForEach(c, sec) {
            inf_status st = column_from_json(p, c, s == 0, err);
            if (st) {
                inf__mon_profile_free(p);
                return st;
            }
        }
    }
    *out = p;
    return INF_OK;
}

inf_status inf__mon_profile_load(const char *path, inf__mon_profile **out, inf_error *err) {
    *out = NULL;
    void *data = NULL;
    size_t size = 0;
    inf_status st = inf_file_read(path, "baseline", INF_FILE_MAX_SPEC_BYTES, &data, &size, err);
    if (st) return st;
    cJSON *j = cJSON_ParseWithLength(data, size);
    inf_file_free(data);
    if (!j) return inf_error_set(err, INF_EFORMAT, "baseline %s: not JSON", path);
    inf_error e;
    st = inf__mon_profile_from_json(j, out, &e);
    cJSON_Delete(j);
    if (st) return inf_error_set(err, st, "baseline %s: %s", path, e.message);
    return INF_OK;
}

/* ---- drift ---------------------------------------------------------------- */

static double psi(const double *e, const double *a, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) {
        double ei = e[i] > INF__MON_EPS ? e[i] : INF__MON_EPS, ai = a[i] > INF__MON_EPS ? a[i] : INF__MON_EPS;
        s += (ai - ei) * log(ai / ei);
    }
    return s;
}

static double rel_entr(double x, double y) { return x > 0 ? (y > 0 ? x * log(x / y) : INFINITY) : 0; }

/* scipy.spatial.distance.jensenshannon(p, q) (natural log); p, q sum to 1. */
static double js_distance(const double *p, const double *q, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) {
        double m = (p[i] + q[i]) / 2;
        s += rel_entr(p[i], m) + rel_entr(q[i], m);
    }
    return sqrt(s / 2 > 0 ? s / 2 : 0);
}

/* scipy.stats.ks_2samp(x, y).statistic; both sorted. */
static double ks_stat(const double *x, size_t nx, const double *y, size_t ny) {
    size_t i = 0, j = 0;
    double d = 0;
    while (i < nx && j < ny) {
        double v = x[i] < y[j] ? x[i] : y[j];
        while (i < nx && x[i] <= v) i++;
        while (j < ny && y[j] <= v) j++;
        double diff = fabs((double)i / (double)nx - (double)j / (double)ny);
        if (diff > d) d = diff;
    }
    return d;
}

static void normalise(double *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i];
    for (int i = 0; s > 0 && i < n; i++) x[i] /= s;
}

static void add_metric(cJSON *o, const char *key, double v) {
    if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
    else cJSON_AddNullToObject(o, key);
}

static cJSON *numeric_drift(column *b, column *c) {
    cJSON *o = cJSON_CreateObject();
    int nb = b->n_edges + 1;
    double *e = calloc((size_t)nb, sizeof *e), *a = calloc((size_t)nb, sizeof *a);
    if (!o || !e || !a) {
        free(e);
        free(a);
        cJSON_Delete(o);
        return NULL;
    }
    double v_psi = NAN, v_js = NAN, v_ks = NAN;
    if (c && !c->categorical && c->n_vals && b->n_vals) {
        memcpy(e, b->bin_counts, (size_t)nb * sizeof *e);
        for (size_t i = 0; i < c->n_vals; i++) a[bin_of(b->edges, b->n_edges, c->vals[i])] += 1;
        normalise(e, nb);
        normalise(a, nb);
        v_psi = psi(e, a, nb);
        v_js = js_distance(e, a, nb);
        qsort(c->vals, c->n_vals, sizeof *c->vals, cmp_double);
        v_ks = ks_stat(b->vals, b->n_vals, c->vals, c->n_vals);
    }
    add_metric(o, "psi", v_psi);
    add_metric(o, "js", v_js);
    add_metric(o, "ks", v_ks);
    free(e);
    free(a);
    return o;
}

static double category_count(const column *c, const char *s) {
    for (int i = 0; c && i < c->n_cats; i++)
        if (!strcmp(c->cats[i], s)) return c->cat_counts[i];
    return 0;
}

static cJSON *category_drift(column *b, column *c) {
    cJSON *o = cJSON_CreateObject();
    int n = b->n_cats + (c ? c->n_cats : 0);
    double *e = calloc((size_t)(n ? n : 1), sizeof *e), *a = calloc((size_t)(n ? n : 1), sizeof *a);
    if (!o || !e || !a) {
        free(e);
        free(a);
        cJSON_Delete(o);
        return NULL;
    }
    int k = 0;
    for (int i = 0; i < b->n_cats; i++, k++) {
        e[k] = b->cat_counts[i];
        a[k] = category_count(c, b->cats[i]);
    }
    for (int i = 0; c && i < c->n_cats; i++)
        if (category_count(b, c->cats[i]) == 0) a[k++] = c->cat_counts[i]; /* unseen in the baseline: e = 0 */
    double n_cur = 0;
    for (int i = 0; i < k; i++) n_cur += a[i];
    double v_psi = NAN, v_js = NAN, v_chi2 = NAN;
    if (n_cur > 0) {
        normalise(e, k);
        normalise(a, k);
        v_psi = psi(e, a, k);
        v_js = js_distance(e, a, k);
        v_chi2 = 0;
        for (int i = 0; i < k; i++) {
            double E = n_cur * (e[i] > INF__MON_EPS ? e[i] : INF__MON_EPS), O = n_cur * a[i];
            v_chi2 += (O - E) * (O - E) / E;
        }
    }
    add_metric(o, "psi", v_psi);
    add_metric(o, "js", v_js);
    add_metric(o, "chi2", v_chi2);
    free(e);
    free(a);
    return o;
}

cJSON *inf__mon_drift_json(inf__mon_profile *base, inf__mon_profile *cur, const char *model, const char *version) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddStringToObject(j, "model", model ? model : "");
    cJSON_AddStringToObject(j, "version", version ? version : "");
    cJSON_AddNumberToObject(j, "rows", (double)cur->n_rows);
    cJSON *feat = cJSON_AddObjectToObject(j, "features"), *outs = cJSON_AddObjectToObject(j, "outputs");
    for (int i = 0; feat && outs && i < base->n_cols; i++) {
        column *b = &base->cols[i], *c = find_column(cur, b->name);
        if (compute_bins(b)) break;
        cJSON *m = b->categorical ? category_drift(b, c) : numeric_drift(b, c);
        if (!m) {
            cJSON_Delete(j);
            return NULL;
        }
        cJSON_AddItemToObject(b->is_feature ? feat : outs, b->name, m);
    }
    return j;
}

/* ---- histograms (report.c) ------------------------------------------------- */

static cJSON *fractions(const double *x, int n) {
    double sum = 0;
    for (int i = 0; i < n; i++) sum += x[i];
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(sum > 0 ? x[i] / sum : 0));
    return a;
}

static cJSON *column_histogram(column *b, column *c) {
    cJSON *h = cJSON_CreateObject();
    int n = b->categorical ? b->n_cats + (c ? c->n_cats : 0) : b->n_edges + 1;
    double *e = calloc((size_t)(n ? n : 1), sizeof *e), *a = calloc((size_t)(n ? n : 1), sizeof *a);
    if (!h || !e || !a) {
        free(e);
        free(a);
        cJSON_Delete(h);
        return NULL;
    }
    cJSON_AddStringToObject(h, "type", b->categorical ? "category" : "number");
    if (b->categorical) {
        cJSON *labels = cJSON_AddArrayToObject(h, "labels");
        int k = 0;
        for (int i = 0; i < b->n_cats; i++, k++) {
            e[k] = b->cat_counts[i];
            a[k] = category_count(c, b->cats[i]);
            cJSON_AddItemToArray(labels, cJSON_CreateString(b->cats[i]));
        }
        for (int i = 0; c && i < c->n_cats; i++)
            if (category_count(b, c->cats[i]) == 0) {
                a[k++] = c->cat_counts[i];
                cJSON_AddItemToArray(labels, cJSON_CreateString(c->cats[i]));
            }
        n = k;
    } else {
        memcpy(e, b->bin_counts, (size_t)n * sizeof *e);
        for (size_t i = 0; c && !c->categorical && i < c->n_vals; i++) a[bin_of(b->edges, b->n_edges, c->vals[i])] += 1;
        cJSON_AddItemToObject(h, "edges", cJSON_CreateDoubleArray(b->edges, b->n_edges));
    }
    cJSON_AddItemToObject(h, "baseline", fractions(e, n));
    cJSON_AddItemToObject(h, "current", fractions(a, n));
    free(e);
    free(a);
    return h;
}

cJSON *inf__mon_histograms_json(inf__mon_profile *base, inf__mon_profile *cur) {
    cJSON *j = cJSON_CreateObject();
    for (int i = 0; j && i < base->n_cols; i++) {
        column *b = &base->cols[i];
        cJSON *h = compute_bins(b) ? NULL : column_histogram(b, find_column(cur, b->name));
        if (!h) {
            cJSON_Delete(j);
            return NULL;
        }
        cJSON_AddItemToObject(j, b->name, h);
    }
    return j;
}
