/*
 * transform.c -- the transforms of a pipeline spec: one table row per op
 * (name, operands, accepted input kinds, parameter parser, pure run function).
 *
 * Every run function maps whole columns (n records) to output slots; it
 * reads only its inputs and parameters and allocates nothing, so the same
 * code gives the same bits in batch, serving, streaming and training.
 * Missing inputs are NaN (numbers) or NULL (strings).  The exact semantics
 * (what a missing value or a zero divisor gives) are documented per op in
 * docs/pipeline-spec.md; tests/pipeline/gen_expected.py recomputes each op
 * with NumPy.  Callers: spec.c (parse), exec.c (run), fit.c (learned params).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/pipeline_int.h"

#define ACCEPT_NUM (1 << COL_NUM)
#define ACCEPT_STR (1 << COL_STR)
#define ACCEPT_TS (1 << COL_TS)

/* ---- parameter helpers ---- */

static int get_num(const cJSON *j, const char *key, double *out, int required, char *msg, size_t size) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!v) {
        if (required) snprintf(msg, size, "missing parameter '%s'", key);
        return required ? -1 : 0;
    }
    if (!cJSON_IsNumber(v)) {
        snprintf(msg, size, "'%s' must be a number", key);
        return -1;
    }
    *out = v->valuedouble;
    return 1;
}

/* ---- run functions (pure) ---- */

static void run_identity(const pxf *x, const double *x0, const double *x1, const char *const *s0, const uint32_t *l0,
                         double *out, int n, int cap) {
    memcpy(out, x0, (size_t)n * sizeof *out);
}

static void run_standardize(const pxf *x, const double *x0, const double *x1, const char *const *s0,
                            const uint32_t *l0, double *out, int n, int cap) {
    const double mean = x->a, std = x->b;
    for (int i = 0; i < n; i++) out[i] = (x0[i] - mean) / std;
}

static void run_min_max(const pxf *x, const double *x0, const double *x1, const char *const *s0, const uint32_t *l0,
                        double *out, int n, int cap) {
    const double lo = x->a, range = x->b - x->a;
    for (int i = 0; i < n; i++) out[i] = range > 0 ? (x0[i] - lo) / range : (x0[i] == x0[i] ? 0.0 : NAN);
}

static void run_log1p(const pxf *x, const double *x0, const double *x1, const char *const *s0, const uint32_t *l0,
                      double *out, int n, int cap) {
    for (int i = 0; i < n; i++) out[i] = x0[i] > -1.0 ? log1p(x0[i]) : NAN;
}

static void run_clip(const pxf *x, const double *x0, const double *x1, const char *const *s0, const uint32_t *l0,
                     double *out, int n, int cap) {
    for (int i = 0; i < n; i++) {
        double v = x0[i];
        if (x->has_a && v < x->a) v = x->a;
        if (x->has_b && v > x->b) v = x->b;
        out[i] = v;
    }
}

static void run_bucketize(const pxf *x, const double *x0, const double *x1, const char *const *s0,
                          const uint32_t *l0, double *out, int n, int cap) {
    for (int i = 0; i < n; i++) {
        double v = x0[i];
        if (v != v) {
            out[i] = NAN;
            continue;
        }
        int lo = 0, hi = x->n_edges; /* number of edges <= v */
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (x->edges[mid] <= v) lo = mid + 1;
            else hi = mid;
        }
        out[i] = lo;
    }
}

static int numeric_category(const pxf *x, double v) { return inf__catset_find_number(&x->cat_set, x->cat_num, v); }

static void run_one_hot(const pxf *x, const double *x0, const double *x1, const char *const *s0, const uint32_t *l0,
                        double *out, int n, int cap) {
    int width = inf__xf_width(x);
    for (int w = 0; w < width; w++) memset(out + (size_t)w * cap, 0, (size_t)n * sizeof *out);
    for (int i = 0; i < n; i++) {
        int c = s0 ? (s0[i] ? inf__xf_category(x, s0[i], l0[i]) : -1) : numeric_category(x, x0[i]);
        if (c >= 0) out[(size_t)c * cap + i] = 1.0;
        else if (x->has_unknown) out[(size_t)x->n_categories * cap + i] = 1.0;
    }
}

static void run_ordinal(const pxf *x, const double *x0, const double *x1, const char *const *s0, const uint32_t *l0,
                        double *out, int n, int cap) {
    for (int i = 0; i < n; i++) {
        int c = s0 ? (s0[i] ? inf__xf_category(x, s0[i], l0[i]) : -1) : numeric_category(x, x0[i]);
        out[i] = c >= 0 ? (double)c : x->unknown_value;
    }
}

uint64_t inf_pipeline_hash_string(const char *s, size_t len) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
    return h;
}

static void run_hash_bucket(const pxf *x, const double *x0, const double *x1, const char *const *s0,
                            const uint32_t *l0, double *out, int n, int cap) {
    char buf[32];
    for (int i = 0; i < n; i++) {
        if (s0) {
            out[i] = s0[i] ? (double)(inf_pipeline_hash_string(s0[i], l0[i]) % (uint64_t)x->n_buckets) : NAN;
        } else if (x0[i] == x0[i]) {
            /* numbers hash as their shortest decimal text ("%.17g" of an integer is the integer) */
            int len = snprintf(buf, sizeof buf, "%.17g", x0[i]);
            out[i] = (double)(inf_pipeline_hash_string(buf, (size_t)len) % (uint64_t)x->n_buckets);
        } else {
            out[i] = NAN;
        }
    }
}

static void run_impute(const pxf *x, const double *x0, const double *x1, const char *const *s0, const uint32_t *l0,
                       double *out, int n, int cap) {
    const double v = x->dflt;
    for (int i = 0; i < n; i++) out[i] = x0[i] == x0[i] ? x0[i] : v;
}

static void run_hour(const pxf *x, const double *x0, const double *x1, const char *const *s0, const uint32_t *l0,
                     double *out, int n, int cap) {
    for (int i = 0; i < n; i++) {
        double t = x0[i];
        if (t != t) {
            out[i] = NAN;
            continue;
        }
        double day_s = t - 86400.0 * floor(t / 86400.0);
        out[i] = floor(day_s / 3600.0);
    }
}

static void run_day_of_week(const pxf *x, const double *x0, const double *x1, const char *const *s0,
                            const uint32_t *l0, double *out, int n, int cap) {
    for (int i = 0; i < n; i++) {
        double t = x0[i];
        if (t != t) {
            out[i] = NAN;
            continue;
        }
        double days = floor(t / 86400.0) + 3.0; /* 1970-01-01 was a Thursday; Monday = 0 */
        out[i] = days - 7.0 * floor(days / 7.0);
    }
}

static void run_ratio(const pxf *x, const double *x0, const double *x1, const char *const *s0, const uint32_t *l0,
                      double *out, int n, int cap) {
    for (int i = 0; i < n; i++) {
        double b = x1 ? x1[i] : x->value;
        out[i] = (b != 0.0 && b == b && x0[i] == x0[i]) ? x0[i] / b : x->dflt;
    }
}

#define BINARY(fname, expr)                                                                                        \
    static void fname(const pxf *x, const double *x0, const double *x1, const char *const *s0, const uint32_t *l0,  \
                      double *out, int n, int cap) {                                                               \
        for (int i = 0; i < n; i++) {                                                                              \
            double a = x0[i], b = x1 ? x1[i] : x->value;                                                           \
            out[i] = (expr);                                                                                       \
        }                                                                                                          \
    }
BINARY(run_difference, a - b)
BINARY(run_sum, a + b)
BINARY(run_product, a *b)

#define COMPARE(fname, op)                                                                                         \
    static void fname(const pxf *x, const double *x0, const double *x1, const char *const *s0, const uint32_t *l0,  \
                      double *out, int n, int cap) {                                                               \
        for (int i = 0; i < n; i++) {                                                                              \
            double a = x0[i], b = x1 ? x1[i] : x->value;                                                           \
            out[i] = (a != a || b != b) ? NAN : (a op b) ? 1.0 : 0.0;                                              \
        }                                                                                                          \
    }
COMPARE(run_greater, >)
COMPARE(run_greater_equal, >=)
COMPARE(run_less, <)
COMPARE(run_less_equal, <=)
COMPARE(run_not_equal_num, !=)

static void run_equal(const pxf *x, const double *x0, const double *x1, const char *const *s0, const uint32_t *l0,
                      double *out, int n, int cap) {
    if (s0) {
        size_t vlen = x->value_str ? strlen(x->value_str) : 0;
        for (int i = 0; i < n; i++)
            out[i] = !s0[i] ? NAN : (l0[i] == vlen && !memcmp(s0[i], x->value_str, vlen)) ? 1.0 : 0.0;
        return;
    }
    for (int i = 0; i < n; i++) {
        double a = x0[i], b = x1 ? x1[i] : x->value;
        out[i] = (a != a || b != b) ? NAN : (a == b) ? 1.0 : 0.0;
    }
}

/* ---- parameter parsers ---- */

static int parse_none(pxf *x, const cJSON *j, int fit_mode, char *msg, size_t size) { return 0; }

static int want_fit(pxf *x, const cJSON *j) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(j, "fit");
    return f && cJSON_IsTrue(f);
}

static int parse_standardize(pxf *x, const cJSON *j, int fit_mode, char *msg, size_t size) {
    int fit = want_fit(x, j);
    int need = !(fit && fit_mode);
    if (fit && !fit_mode && !cJSON_GetObjectItemCaseSensitive(j, "mean")) {
        snprintf(msg, size, "'fit': true but no 'mean' (run infera fit-spec first)");
        return -1;
    }
    int rm = get_num(j, "mean", &x->a, need, msg, size);
    if (rm < 0) return -1;
    int rs = get_num(j, "std", &x->b, need, msg, size);
    if (rs < 0) return -1;
    x->fit = fit && fit_mode && (rm == 0 || rs == 0);
    if (!x->fit && !(x->b > 0)) {
        snprintf(msg, size, "'std' must be > 0");
        return -1;
    }
    return 0;
}

static int parse_min_max(pxf *x, const cJSON *j, int fit_mode, char *msg, size_t size) {
    int fit = want_fit(x, j);
    int need = !(fit && fit_mode);
    int r1 = get_num(j, "min", &x->a, need, msg, size);
    if (r1 < 0) return -1;
    int r2 = get_num(j, "max", &x->b, need, msg, size);
    if (r2 < 0) return -1;
    x->fit = fit && fit_mode && (r1 == 0 || r2 == 0);
    if (!x->fit && x->b < x->a) {
        snprintf(msg, size, "'max' must be >= 'min'");
        return -1;
    }
    return 0;
}

static int parse_clip(pxf *x, const cJSON *j, int fit_mode, char *msg, size_t size) {
    int r1 = get_num(j, "min", &x->a, 0, msg, size);
    if (r1 < 0) return -1;
    int r2 = get_num(j, "max", &x->b, 0, msg, size);
    if (r2 < 0) return -1;
    x->has_a = r1 > 0;
    x->has_b = r2 > 0;
    if (!x->has_a && !x->has_b) {
        snprintf(msg, size, "missing parameter 'min' or 'max'");
        return -1;
    }
    if (x->has_a && x->has_b && x->b < x->a) {
        snprintf(msg, size, "'max' must be >= 'min'");
        return -1;
    }
    return 0;
}

static int parse_bucketize(pxf *x, const cJSON *j, int fit_mode, char *msg, size_t size) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "edges");
    const cJSON *nb = cJSON_GetObjectItemCaseSensitive(j, "n_buckets");
    if (nb) {
        if (!cJSON_IsNumber(nb) || nb->valuedouble < 2 || nb->valuedouble > 100000) {
            snprintf(msg, size, "'n_buckets' must be a number >= 2");
            return -1;
        }
        x->n_buckets = (int64_t)nb->valuedouble;
    }
    if (!e) {
        if (fit_mode && want_fit(x, j) && x->n_buckets) {
            x->fit = 1;
            return 0;
        }
        snprintf(msg, size, "missing parameter 'edges'%s", want_fit(x, j) ? " (run infera fit-spec first)" : "");
        return -1;
    }
    if (!cJSON_IsArray(e)) {
        snprintf(msg, size, "'edges' must be an array of numbers");
        return -1;
    }
    int n = cJSON_GetArraySize(e);
    x->edges = calloc((size_t)(n ? n : 1), sizeof *x->edges);
    if (!x->edges) {
        snprintf(msg, size, "out of memory");
        return -1;
    }
    int i = 0;
    for (const cJSON *it = e->child; it; it = it->next, i++) {
        if (!cJSON_IsNumber(it)) {
            snprintf(msg, size, "edges[%d] must be a number", i);
            return -1;
        }
        x->edges[i] = it->valuedouble;
        if (i && !(x->edges[i] > x->edges[i - 1])) {
            snprintf(msg, size, "edges[%d]: edges must be strictly increasing", i);
            return -1;
        }
    }
    x->n_edges = n;
    return 0;
}

static int parse_categories(pxf *x, const cJSON *j, int fit_mode, char *msg, size_t size) {
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(j, "categories");
    const cJSON *mc = cJSON_GetObjectItemCaseSensitive(j, "max_categories");
    if (mc) {
        if (!cJSON_IsNumber(mc) || !(mc->valuedouble >= 1 && mc->valuedouble <= 1e7)) {
            snprintf(msg, size, "'max_categories' must be a number from 1 to 10000000");
            return -1;
        }
        x->max_categories = (int)mc->valuedouble;
    }
    if (!c) {
        if (fit_mode && want_fit(x, j)) {
            x->fit = 1;
            return 0;
        }
        snprintf(msg, size, "missing parameter 'categories'%s", want_fit(x, j) ? " (run infera fit-spec first)" : "");
        return -1;
    }
    if (!cJSON_IsArray(c) || !cJSON_GetArraySize(c)) {
        snprintf(msg, size, "'categories' must be a non-empty array of strings or numbers");
        return -1;
    }
    int n = cJSON_GetArraySize(c);
    x->categories = calloc((size_t)n, sizeof *x->categories);
    x->cat_len = calloc((size_t)n, sizeof *x->cat_len);
    x->cat_num = calloc((size_t)n, sizeof *x->cat_num);
    if (!x->categories || !x->cat_len || !x->cat_num) {
        snprintf(msg, size, "out of memory");
        return -1;
    }
    x->n_categories = n;
    int i = 0;
    for (const cJSON *it = c->child; it; it = it->next, i++) {
        char buf[64];
        const char *text;
        if (cJSON_IsString(it)) {
            text = it->valuestring;
            char *end;
            double v = strtod(text, &end);
            x->cat_num[i] = *text && !*end ? v : NAN;
        } else if (cJSON_IsNumber(it)) {
            snprintf(buf, sizeof buf, "%.17g", it->valuedouble);
            text = buf;
            x->cat_num[i] = it->valuedouble;
        } else {
            snprintf(msg, size, "categories[%d] must be a string or a number", i);
            return -1;
        }
        if (!(x->categories[i] = strdup(text))) {
            snprintf(msg, size, "out of memory");
            return -1;
        }
        x->cat_len[i] = (uint32_t)strlen(text);
    }
    int duplicate; /* found while hashing: O(n), not a pairwise O(n^2) scan */
    if (inf__catset_build(&x->cat_set, (const char *const *)x->categories, x->cat_len, x->cat_num, n, &duplicate)) {
        snprintf(msg, size, "out of memory");
        return -1;
    }
    if (duplicate >= 0) {
        snprintf(msg, size, "categories[%d]: duplicate category '%s'", duplicate, x->categories[duplicate]);
        return -1;
    }
    return 0;
}

static int parse_one_hot(pxf *x, const cJSON *j, int fit_mode, char *msg, size_t size) {
    if (parse_categories(x, j, fit_mode, msg, size)) return -1;
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(j, "unknown");
    if (u && !cJSON_IsString(u) && !cJSON_IsFalse(u) && !cJSON_IsNull(u)) {
        snprintf(msg, size, "'unknown' must be the name of the unknown column (a string), or false");
        return -1;
    }
    x->has_unknown = u && cJSON_IsString(u);
    return 0;
}

static int parse_ordinal(pxf *x, const cJSON *j, int fit_mode, char *msg, size_t size) {
    if (parse_categories(x, j, fit_mode, msg, size)) return -1;
    x->unknown_value = x->n_categories;
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(j, "unknown_value");
    if (u) {
        if (!cJSON_IsNumber(u)) {
            snprintf(msg, size, "'unknown_value' must be a number");
            return -1;
        }
        x->unknown_value = u->valuedouble;
    }
    return 0;
}

static int parse_hash_bucket(pxf *x, const cJSON *j, int fit_mode, char *msg, size_t size) {
    double n;
    if (get_num(j, "n_buckets", &n, 1, msg, size) < 0) return -1;
    if (n < 1 || n > 1e15 || n != floor(n)) {
        snprintf(msg, size, "'n_buckets' must be a positive integer");
        return -1;
    }
    x->n_buckets = (int64_t)n;
    return 0;
}

static int parse_impute(pxf *x, const cJSON *j, int fit_mode, char *msg, size_t size) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "strategy");
    if (s && (!cJSON_IsString(s) || (strcmp(s->valuestring, "constant") && strcmp(s->valuestring, "mean")))) {
        snprintf(msg, size, "'strategy' must be \"constant\" or \"mean\"");
        return -1;
    }
    x->strategy_mean = s && !strcmp(s->valuestring, "mean");
    int r = get_num(j, "value", &x->dflt, 0, msg, size);
    if (r < 0) return -1;
    if (r == 0) {
        if (fit_mode && x->strategy_mean && want_fit(x, j)) {
            x->fit = 1;
            return 0;
        }
        snprintf(msg, size, "missing parameter 'value'%s",
                 x->strategy_mean ? " (the learned mean; run infera fit-spec with \"fit\": true)" : "");
        return -1;
    }
    return 0;
}

static int parse_binary(pxf *x, const cJSON *j, int fit_mode, char *msg, size_t size) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "value");
    if (x->n_from == 2) {
        if (v) {
            snprintf(msg, size, "give either two fields in 'from' or one field and 'value', not both");
            return -1;
        }
        return 0;
    }
    if (!v) {
        snprintf(msg, size, "missing parameter 'value' (or a second field in 'from')");
        return -1;
    }
    if (cJSON_IsString(v)) {
        if (x->from_kind != COL_STR || strcmp(x->def->op, "equal")) {
            snprintf(msg, size, "'value' must be a number for a numeric field");
            return -1;
        }
        if (!(x->value_str = strdup(v->valuestring))) {
            snprintf(msg, size, "out of memory");
            return -1;
        }
        x->has_value = 1;
        return 0;
    }
    if (!cJSON_IsNumber(v)) {
        snprintf(msg, size, "'value' must be a number");
        return -1;
    }
    if (x->from_kind == COL_STR) {
        snprintf(msg, size, "'value' must be a string for the string field");
        return -1;
    }
    x->value = v->valuedouble;
    x->has_value = 1;
    return 0;
}

static int parse_ratio(pxf *x, const cJSON *j, int fit_mode, char *msg, size_t size) {
    x->dflt = NAN;
    if (get_num(j, "default", &x->dflt, 0, msg, size) < 0) return -1;
    return parse_binary(x, j, fit_mode, msg, size);
}

/* The table: op, operands (min, max), accepted kinds of from[0], fittable, parse, run. */
static const xf_def xf_table[] = {
    {"identity", 1, 1, ACCEPT_NUM | ACCEPT_TS, 0, parse_none, run_identity, 0},
    {"standardize", 1, 1, ACCEPT_NUM, 1, parse_standardize, run_standardize, 0},
    {"min_max", 1, 1, ACCEPT_NUM, 1, parse_min_max, run_min_max, 0},
    {"log1p", 1, 1, ACCEPT_NUM, 0, parse_none, run_log1p, 0},
    {"clip", 1, 1, ACCEPT_NUM, 0, parse_clip, run_clip, 0},
    {"bucketize", 1, 1, ACCEPT_NUM, 1, parse_bucketize, run_bucketize, 0},
    {"one_hot", 1, 1, ACCEPT_NUM | ACCEPT_STR, 1, parse_one_hot, run_one_hot, 1},
    {"ordinal", 1, 1, ACCEPT_NUM | ACCEPT_STR, 1, parse_ordinal, run_ordinal, 0},
    {"label_encode", 1, 1, ACCEPT_NUM | ACCEPT_STR, 1, parse_ordinal, run_ordinal, 0},
    {"hash_bucket", 1, 1, ACCEPT_NUM | ACCEPT_STR, 0, parse_hash_bucket, run_hash_bucket, 0},
    {"impute", 1, 1, ACCEPT_NUM, 1, parse_impute, run_impute, 0},
    {"hour", 1, 1, ACCEPT_TS | ACCEPT_NUM, 0, parse_none, run_hour, 0},
    {"day_of_week", 1, 1, ACCEPT_TS | ACCEPT_NUM, 0, parse_none, run_day_of_week, 0},
    {"ratio", 1, 2, ACCEPT_NUM, 0, parse_ratio, run_ratio, 0},
    {"difference", 1, 2, ACCEPT_NUM | ACCEPT_TS, 0, parse_binary, run_difference, 0},
    {"sum", 1, 2, ACCEPT_NUM, 0, parse_binary, run_sum, 0},
    {"product", 1, 2, ACCEPT_NUM, 0, parse_binary, run_product, 0},
    {"greater", 1, 2, ACCEPT_NUM | ACCEPT_TS, 0, parse_binary, run_greater, 0},
    {"greater_equal", 1, 2, ACCEPT_NUM | ACCEPT_TS, 0, parse_binary, run_greater_equal, 0},
    {"less", 1, 2, ACCEPT_NUM | ACCEPT_TS, 0, parse_binary, run_less, 0},
    {"less_equal", 1, 2, ACCEPT_NUM | ACCEPT_TS, 0, parse_binary, run_less_equal, 0},
    {"equal", 1, 2, ACCEPT_NUM | ACCEPT_TS | ACCEPT_STR, 0, parse_binary, run_equal, 0},
    {"not_equal", 1, 2, ACCEPT_NUM | ACCEPT_TS, 0, parse_binary, run_not_equal_num, 0},
};

const xf_def *inf__xf_find(const char *op) {
    for (size_t i = 0; i < sizeof xf_table / sizeof xf_table[0]; i++)
        if (!strcmp(xf_table[i].op, op)) return &xf_table[i];
    return NULL;
}

int inf__xf_width(const pxf *x) {
    if (!x->def->width_from_params) return 1;
    return x->n_categories + (x->has_unknown ? 1 : 0);
}

int inf__xf_category(const pxf *x, const char *s, uint32_t len) {
    return inf__catset_find_text(&x->cat_set, (const char *const *)x->categories, x->cat_len, s, len);
}
