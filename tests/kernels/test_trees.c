/*
 * test_trees.c -- the tree-ensemble kernels (ops/ref/ml_tree.c: the compact
 * 4-byte-node layout with per-row threshold ranks, and the 8-byte fast
 * layout it falls back to) against a direct tree walk written here.
 *
 * Random XGBoost JSON regressors (split x < t, default_left per node, so
 * both NaN directions) are loaded with inf_model_load_buffer and scored;
 * thresholds come from a small pool so many nodes share one, and inputs
 * take exactly those threshold values (ties), values between them, +-inf,
 * -0.0 and NaN.  The oracle walks each tree with float compares and sums
 * the leaves in float in tree order, then adds the base score -- the
 * summation order Infera promises -- so outputs must match bit for bit.
 * Cases: compact forests of depth 1..9 (incomplete trees too), one with
 * more than 65534 distinct thresholds on a feature (the 8-byte fallback),
 * batch 1 and batches of odd sizes, 1 and 2 threads (1031 rows: blocks
 * shared out between the threads).
 * Prints one line per case and "N passed, M failed".
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infera/infera.h"
#include "infera/model.h"
#include "infera/session.h"
#include "infera/tensor.h"

static int n_passed, n_failed;
static uint64_t rng = 0x243F6A8885A308D3ull;

static uint32_t next_u32(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

typedef struct tree {
    int n; /* nodes; node i: left l[i] (-1 = leaf), right r[i] */
    int *l, *r, *feat, *dleft;
    float *val; /* threshold, or leaf value */
} tree;

typedef struct forest {
    int n_trees, n_feat;
    tree *t;
    float base;
} forest;

/* Grows a random tree of depth <= depth below node `at` (already allocated). */
static void grow(tree *t, int at, int depth, const float *pool, int n_pool, int n_feat, bool full, int unique_feat,
                 int *counter) {
    bool leaf = depth == 0 || (!full && next_u32() % 5 == 0);
    if (leaf) {
        t->l[at] = t->r[at] = -1;
        t->val[at] = (float)((int)(next_u32() % 2001) - 1000) / 997.0f;
        return;
    }
    t->feat[at] = unique_feat >= 0 ? unique_feat : (int)(next_u32() % (uint32_t)n_feat);
    t->val[at] = unique_feat >= 0 ? (float)(*counter)++ * 0.5f : pool[next_u32() % (uint32_t)n_pool];
    t->dleft[at] = (int)(next_u32() & 1);
    int a = t->n++, b = t->n++;
    t->l[at] = a;
    t->r[at] = b;
    grow(t, a, depth - 1, pool, n_pool, n_feat, full, unique_feat, counter);
    grow(t, b, depth - 1, pool, n_pool, n_feat, full, unique_feat, counter);
}

static bool make_forest(forest *f, int n_trees, int depth, int n_feat, const float *pool, int n_pool, bool full,
                        bool one_feature_many) {
    f->n_trees = n_trees;
    f->n_feat = n_feat;
    f->base = 0.25f;
    f->t = calloc((size_t)n_trees, sizeof *f->t);
    if (!f->t) return false;
    int counter = 0, cap = (2 << depth) + 1;
    for (int k = 0; k < n_trees; k++) {
        tree *t = &f->t[k];
        t->l = malloc((size_t)cap * sizeof(int));
        t->r = malloc((size_t)cap * sizeof(int));
        t->feat = calloc((size_t)cap, sizeof(int));
        t->dleft = calloc((size_t)cap, sizeof(int));
        t->val = malloc((size_t)cap * sizeof(float));
        if (!t->l || !t->r || !t->feat || !t->dleft || !t->val) return false;
        t->n = 1;
        grow(t, 0, depth, pool, n_pool, n_feat, full, one_feature_many ? 0 : -1, &counter);
    }
    return true;
}

static void free_forest(forest *f) {
    for (int k = 0; f->t && k < f->n_trees; k++) {
        free(f->t[k].l);
        free(f->t[k].r);
        free(f->t[k].feat);
        free(f->t[k].dleft);
        free(f->t[k].val);
    }
    free(f->t);
}

/* Appends to a growing string; false when out of memory. */
typedef struct sbuf {
    char *s;
    size_t n, cap;
} sbuf;

static bool put(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#include <stdarg.h>
static bool put(sbuf *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (w < 0) return false;
        if (b->s && b->n + (size_t)w < b->cap) {
            b->n += (size_t)w;
            return true;
        }
        size_t cap = (b->cap + (size_t)w + 1) * 2;
        char *s = realloc(b->s, cap);
        if (!s) return false;
        b->s = s;
        b->cap = cap;
    }
}

static bool put_ints(sbuf *b, const char *name, const int *v, int n, bool last) {
    bool ok = put(b, "\"%s\":[", name);
    for (int i = 0; ok && i < n; i++) ok = put(b, "%s%d", i ? "," : "", v[i]);
    return ok && put(b, "]%s", last ? "" : ",");
}

/* The forest as an XGBoost JSON model (reg:squarederror). */
static char *to_json(const forest *f, size_t *len) {
    sbuf b = {0};
    bool ok = put(&b, "{\"learner\":{\"learner_model_param\":{\"base_score\":\"%.9g\",\"num_class\":\"0\","
                      "\"num_feature\":\"%d\",\"num_target\":\"1\"},\"objective\":{\"name\":\"reg:squarederror\"},"
                      "\"gradient_booster\":{\"name\":\"gbtree\",\"model\":{\"gbtree_model_param\":{\"num_trees\":\"%d\"},"
                      "\"tree_info\":[",
                  (double)f->base, f->n_feat, f->n_trees);
    for (int k = 0; ok && k < f->n_trees; k++) ok = put(&b, "%s0", k ? "," : "");
    ok = ok && put(&b, "],\"trees\":[");
    for (int k = 0; ok && k < f->n_trees; k++) {
        const tree *t = &f->t[k];
        int *zero = calloc((size_t)t->n, sizeof(int));
        ok = zero && put(&b, "%s{\"id\":%d,", k ? "," : "", k) && put_ints(&b, "left_children", t->l, t->n, false) &&
             put_ints(&b, "right_children", t->r, t->n, false) && put_ints(&b, "split_indices", t->feat, t->n, false) &&
             put_ints(&b, "default_left", t->dleft, t->n, false) && put_ints(&b, "split_type", zero, t->n, false) &&
             put(&b, "\"split_conditions\":[");
        for (int i = 0; ok && i < t->n; i++) ok = put(&b, "%s%.9g", i ? "," : "", (double)t->val[i]);
        ok = ok && put(&b, "],\"tree_param\":{\"num_nodes\":\"%d\",\"num_feature\":\"%d\"}}", t->n, f->n_feat);
        free(zero);
    }
    ok = ok && put(&b, "]}}},\"version\":[2,0,0]}");
    if (!ok) {
        free(b.s);
        return NULL;
    }
    *len = b.n;
    return b.s;
}

static float oracle(const forest *f, const float *x) {
    float s = 0.0f;
    for (int k = 0; k < f->n_trees; k++) {
        const tree *t = &f->t[k];
        int i = 0;
        while (t->l[i] >= 0) {
            float v = x[t->feat[i]];
            bool left = isnan(v) ? t->dleft[i] : v < t->val[i];
            i = left ? t->l[i] : t->r[i];
        }
        s += t->val[i];
    }
    return s + f->base;
}

static float random_input(const float *pool, int n_pool) {
    switch (next_u32() % 8) {
    case 0: return NAN;
    case 1: return (next_u32() & 1) ? INFINITY : -INFINITY;
    case 2: return -0.0f;
    case 3:
    case 4: return pool[next_u32() % (uint32_t)n_pool]; /* a tie */
    case 5: return nextafterf(pool[next_u32() % (uint32_t)n_pool], (next_u32() & 1) ? INFINITY : -INFINITY);
    default: return (float)((int)(next_u32() % 4001) - 2000) / 211.0f;
    }
}

/* Scores rows [r0, r0 + nb) of x; compares with the oracle bit for bit. */
static bool run_check(inf_session *s, const forest *f, const float *x, int r0, int nb) {
    int64_t dims[2] = {nb, f->n_feat};
    inf_tensor t;
    inf_tensor_init_view(&t, INF_DTYPE_F32, 2, dims, (void *)(x + (size_t)r0 * f->n_feat));
    const inf_tensor *inputs[1] = {&t};
    inf_tensor *const *outputs;
    inf_error err = {0};
    if (inf_session_run(s, inputs, &outputs, &err) != INF_OK) {
        fprintf(stderr, "  run failed: %s\n", err.message);
        return false;
    }
    const float *y = outputs[0]->data;
    for (int r = 0; r < nb; r++) {
        float want = oracle(f, x + (size_t)(r0 + r) * f->n_feat);
        if (memcmp(&want, &y[r], sizeof want)) {
            fprintf(stderr, "  row %d: got %.9g, want %.9g\n", r0 + r, (double)y[r], (double)want);
            return false;
        }
    }
    return true;
}

static void check(const char *name, int n_trees, int depth, int n_feat, int n_pool, bool full, bool many, int n_rows) {
    forest f = {0};
    float *pool = malloc((size_t)n_pool * sizeof(float)), *x = malloc((size_t)n_rows * (size_t)n_feat * sizeof(float));
    char *json = NULL;
    size_t len = 0;
    inf_model *model = NULL;
    inf_error err = {0};
    bool ok = pool && x;
    for (int i = 0; ok && i < n_pool; i++) pool[i] = (float)((int)(next_u32() % 2001) - 1000) / 97.0f;
    if (ok && n_pool > 1) pool[1] = 0.0f;
    ok = ok && make_forest(&f, n_trees, depth, n_feat, pool, n_pool, full, many);
    for (int i = 0; ok && i < n_rows * n_feat; i++) x[i] = random_input(pool, n_pool);
    if (ok && many)
        for (int i = 0; i < n_rows; i++) x[(size_t)i * n_feat] = (float)(next_u32() % 80000) * 0.5f; /* ties */
    ok = ok && (json = to_json(&f, &len)) != NULL;
    if (ok && inf_model_load_buffer(json, len, NULL, NULL, &model, &err) != INF_OK) {
        fprintf(stderr, "  load failed: %s\n", err.message);
        ok = false;
    }
    /* 2 threads first: a row they left unscored must not find the 1-thread
     * session's right answer in reused memory */
    for (int threads = 2; threads >= 1 && ok; threads--) {
        inf_session_options opts;
        inf_session_options_init(&opts);
        opts.n_threads = threads;
        inf_session *s = NULL;
        ok = inf_session_new(model, &opts, &s, &err) == INF_OK;
        ok = ok && run_check(s, &f, x, 0, n_rows) && run_check(s, &f, x, 5, 1) && run_check(s, &f, x, 17, 13) &&
             run_check(s, &f, x, 40, 7);
        inf_session_free(s);
    }
    printf("%s %s (%d trees, depth %d, %d features)\n", ok ? "ok  " : "FAIL", name, n_trees, depth, n_feat);
    ok ? n_passed++ : n_failed++;
    inf_model_free(model);
    free(json);
    free_forest(&f);
    free(pool);
    free(x);
}

int main(void) {
    for (int d = 1; d <= 9; d++) {
        char name[64];
        snprintf(name, sizeof name, "compact full depth %d", d);
        check(name, 37, d, 11, 40, true, false, 203);
        snprintf(name, sizeof name, "compact ragged depth %d", d);
        check(name, 29, d, 5, 7, false, false, 203);
    }
    /* 1031 rows: several blocks of rows, pulled by both threads, and a short last block */
    check("compact 1000 trees", 1000, 6, 32, 300, true, false, 1031);
    check("over 65534 thresholds (8-byte fallback)", 1200, 6, 3, 4, true, true, 1031);
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}
