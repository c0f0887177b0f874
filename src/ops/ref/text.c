/*
 * text.c -- reference kernels for the text operators.
 *
 * ONNX ops:
 *   StringNormalizer  opsets 10-17: X string [C] or [1, C]; removes the
 *       stopwords (compared exactly, or case-insensitively when
 *       is_case_sensitive = 0, the default), then applies
 *       case_change_action (NONE default, LOWER, UPPER) per code point with
 *       towlower_l / towupper_l in `locale` (default en_US).  The output keeps
 *       X's rank; when every string is removed it is one empty string
 *       ([1] or [1, 1]).
 *   TfIdfVectorizer   opsets 9-17: X int32, int64 or string, [C] or [N, C];
 *       counts the pool's n-grams (ngram_counts gives the start of each
 *       length's group in pool_int64s / pool_strings) of lengths
 *       min_gram_length..max_gram_length, items taken every skip + 1
 *       positions for skip = 0..max_skip_count (unigrams once per position),
 *       within each row.  Output float32 [max(ngram_indexes) + 1] or
 *       [N, that]: mode TF = count, IDF = weight if count > 0, TFIDF =
 *       count * weight; weights (default 1) belong to the pool's n-grams in
 *       order, and the value of n-gram i goes to output ngram_indexes[i].
 * Deviations: locales are looked up as "<locale>.UTF-8", then "<locale>",
 *   then en_US.UTF-8, then C.UTF-8 (where towupper still covers Unicode in
 *   glibc); the first found is kept for the life of the process.  Strings
 *   must be valid UTF-8 (else INF_EINVAL).
 */
#include <locale.h> /* newlocale, towupper_l: _GNU_SOURCE comes from the build */
#include <pthread.h>
#ifdef INF_NO_THREADS /* single-threaded edge build: nothing to lock, no libpthread */
#define pthread_mutex_lock(m) ((void)(m))
#define pthread_mutex_unlock(m) ((void)(m))
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wctype.h>

#include "ops/ops.h"

/* ======================================================================== */
/*  UTF-8                                                                    */
/* ======================================================================== */

/* Decodes one code point at s (NUL-terminated); returns its length in
 * bytes, 0 at the end, -1 for invalid UTF-8. */
static int utf8_decode(const unsigned char *s, uint32_t *cp) {
    if (!s[0]) return 0;
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    int n = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC0 ? 2 : -1;
    if (n < 0 || s[0] > 0xF4) return -1;
    uint32_t v = s[0] & (0x7F >> n);
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return -1;
        v = (v << 6) | (s[i] & 0x3F);
    }
    static const uint32_t min_for_len[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < min_for_len[n] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return -1;
    *cp = v;
    return n;
}

/* ======================================================================== */
/*  Locales: a small process-wide cache, never freed                         */
/* ======================================================================== */

#define MAX_LOCALES 8

static pthread_mutex_t locale_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char name[64];
    locale_t loc;
} locale_cache[MAX_LOCALES];
static int n_locales;

static locale_t open_ctype(const char *name) {
    return newlocale(LC_CTYPE_MASK, name, (locale_t)0);
}

/* The locale for `name` (see the header for the fallbacks); (locale_t)0
 * when none could be opened. */
static locale_t locale_for(const char *name) {
    locale_t loc = (locale_t)0;
    pthread_mutex_lock(&locale_lock);
    for (int i = 0; i < n_locales && i < MAX_LOCALES; i++)
        if (!strcmp(locale_cache[i].name, name)) loc = locale_cache[i].loc;
    if (!loc && strlen(name) < 48) {
        char full[64];
        snprintf(full, sizeof full, "%s.UTF-8", name);
        const char *tries[4] = {full, name, "en_US.UTF-8", "C.UTF-8"};
        for (int i = 0; i < 4 && !loc; i++) loc = open_ctype(tries[i]);
        if (loc && n_locales < MAX_LOCALES) {
            snprintf(locale_cache[n_locales].name, sizeof locale_cache[0].name, "%s", name);
            locale_cache[n_locales++].loc = loc;
        } else if (loc) {
            freelocale(loc); /* cache full: use the first entry */
            loc = locale_cache[0].loc;
        }
    }
    pthread_mutex_unlock(&locale_lock);
    return loc;
}

/* ======================================================================== */
/*  StringNormalizer                                                         */
/* ======================================================================== */

enum { CASE_NONE, CASE_LOWER, CASE_UPPER };

typedef struct strnorm_params {
    int action;
    bool case_sensitive;
    int n_stop;
    const char *const *stop;
    locale_t loc;
} strnorm_params;

static inf_status strnorm_init(inf__node *node, inf__arena *arena, inf_error *err) {
    strnorm_params *p = inf__op_params(arena, strnorm_params);
    if (!p) return INF_ENOMEM;
    const char *act = inf__attr_string(node, "case_change_action", "NONE");
    if (!strcmp(act, "NONE")) p->action = CASE_NONE;
    else if (!strcmp(act, "LOWER")) p->action = CASE_LOWER;
    else if (!strcmp(act, "UPPER")) p->action = CASE_UPPER;
    else return inf__node_error(node, err, INF_EMODEL, "unknown case_change_action '%s'", act);
    p->case_sensitive = inf__attr_int(node, "is_case_sensitive", 0) != 0;
    const inf__attr *sw = inf__node_attr(node, "stopwords");
    if (sw && sw->type == INF_ATTR_STRINGS) p->n_stop = sw->n, p->stop = sw->strings;
    const char *name = inf__attr_string(node, "locale", "en_US");
    p->loc = locale_for(name);
    if (!p->loc)
        return inf__node_error(node, err, INF_EMODEL, "no usable locale for '%s' (nor en_US.UTF-8, C.UTF-8)",
                               name);
    for (int i = 0; i < p->n_stop; i++) {
        uint32_t cp;
        for (const unsigned char *s = (const unsigned char *)p->stop[i]; *s;) {
            int n = utf8_decode(s, &cp);
            if (n < 0) return inf__node_error(node, err, INF_EMODEL, "stopword %d is not valid UTF-8", i);
            s += n;
        }
    }
    node->params = p;
    return INF_OK;
}

/* Compares a and b after lowercasing both; -1 for invalid UTF-8 in a. */
static int equal_folded(const char *a, const char *b, locale_t loc) {
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    for (;;) {
        uint32_t ca = 0, cb = 0;
        int na = utf8_decode(x, &ca), nb = utf8_decode(y, &cb);
        if (na < 0) return -1;
        if (na == 0 || nb <= 0) return na == 0 && nb == 0;
        if (towlower_l((wint_t)ca, loc) != towlower_l((wint_t)cb, loc)) return 0;
        x += na, y += nb;
    }
}

/* 1 if s is a stopword, 0 if not, -1 for invalid UTF-8. */
static int is_stopword(const strnorm_params *p, const char *s) {
    for (int i = 0; i < p->n_stop; i++) {
        int eq = p->case_sensitive ? !strcmp(s, p->stop[i]) : equal_folded(s, p->stop[i], p->loc);
        if (eq) return eq;
    }
    return 0;
}

/* Writes s with its case changed into out (4 * strlen(s) + 1 bytes);
 * returns the length, -1 for invalid UTF-8. */
static int64_t change_case(const strnorm_params *p, const char *s, char *out) {
    const unsigned char *x = (const unsigned char *)s;
    int64_t len = 0;
    for (;;) {
        uint32_t cp = 0;
        int n = utf8_decode(x, &cp);
        if (n < 0) return -1;
        if (n == 0) break;
        wint_t c = p->action == CASE_UPPER ? towupper_l((wint_t)cp, p->loc) : towlower_l((wint_t)cp, p->loc);
        if ((uint32_t)c > 0x10FFFF || ((uint32_t)c >= 0xD800 && (uint32_t)c <= 0xDFFF)) c = (wint_t)cp;
        len += inf__utf8_encode((uint32_t)c, out + len);
        x += n;
    }
    out[len] = 0;
    return len;
}

static inf_status strnorm_run(inf__kernel_ctx *ctx) {
    char buf[96];
    const strnorm_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0];
    if (x->dtype != INF_DTYPE_STRING)
        return inf__kernel_error(ctx, INF_ETYPE, "input X: expected string, got %s", inf_dtype_name(x->dtype));
    if (!(x->ndim == 1 || (x->ndim == 2 && x->dims[0] == 1)))
        return inf__kernel_error(ctx, INF_ESHAPE, "input X: expected shape [C] or [1, C], got %s",
                                 inf__shape_str(x->ndim, x->dims, buf, sizeof buf));
    const char *const *in = x->data;
    int64_t n = inf_tensor_numel(x), kept = 0;
    size_t longest = 0;
    uint8_t *keep = inf__kernel_scratch(ctx, (size_t)(n + 1));
    if (!keep) return INF_ENOMEM;
    for (int64_t i = 0; i < n; i++) {
        const char *s = in[i] ? in[i] : "";
        int stop = is_stopword(p, s);
        if (stop < 0)
            return inf__kernel_error(ctx, INF_EINVAL, "input X[%lld] is not valid UTF-8", (long long)i);
        keep[i] = !stop;
        kept += keep[i];
        if (keep[i] && strlen(s) > longest) longest = strlen(s);
    }
    int64_t dims[2] = {1, kept ? kept : 1};
    inf_tensor *y;
    inf_status st = inf__kernel_output(ctx, 0, INF_DTYPE_STRING, x->ndim, x->ndim == 2 ? dims : dims + 1, &y);
    if (st != INF_OK) return st;
    if (!kept) return inf_tensor_set_string(y, 0, "", 0);
    char *tmp = p->action == CASE_NONE ? NULL : inf__kernel_scratch(ctx, 4 * longest + 1);
    if (p->action != CASE_NONE && !tmp) return INF_ENOMEM;
    for (int64_t i = 0, o = 0; i < n; i++) {
        if (!keep[i]) continue;
        const char *s = in[i] ? in[i] : "";
        int64_t len = (int64_t)strlen(s);
        if (tmp) {
            len = change_case(p, s, tmp);
            if (len < 0)
                return inf__kernel_error(ctx, INF_EINVAL, "input X[%lld] is not valid UTF-8", (long long)i);
            s = tmp;
        }
        if ((st = inf_tensor_set_string(y, o++, s, (size_t)len)) != INF_OK) return st;
    }
    return INF_OK;
}

const inf__op_impl op_string_normalizer = {strnorm_init, strnorm_run};

/* ======================================================================== */
/*  TfIdfVectorizer                                                          */
/* ======================================================================== */

enum { MODE_TF, MODE_IDF, MODE_TFIDF };

typedef struct gram_group {
    int64_t start;     /* first element in the pool */
    int64_t count;     /* n-grams of this length */
    int64_t first_id;  /* global n-gram number of the first one */
    int32_t *sorted;   /* ids within the group, sorted by content */
} gram_group;

typedef struct tfidf_params {
    int mode;
    int64_t min_n, max_n, max_skip;
    bool strings;
    const int64_t *pool_i;
    const char *const *pool_s;
    int n_groups;          /* n-gram lengths 1..n_groups */
    gram_group *groups;
    int64_t n_grams;
    const int64_t *indexes;
    const float *weights;  /* NULL: all 1 */
    int64_t out_size;
} tfidf_params;

/* Compares item k of pool n-gram (group g, id) with a candidate. */
typedef struct gram_key {
    const tfidf_params *p;
    const gram_group *g;
    int64_t n;
} gram_key;

static int cmp_items_i(int64_t a, int64_t b) { return a < b ? -1 : a > b; }

/* Pool n-gram a vs pool n-gram b (same group). */
static int cmp_pool(const gram_key *k, int32_t a, int32_t b) {
    for (int64_t i = 0; i < k->n; i++) {
        int64_t ia = k->g->start + a * k->n + i, ib = k->g->start + b * k->n + i;
        int c = k->p->strings ? strcmp(k->p->pool_s[ia], k->p->pool_s[ib])
                              : cmp_items_i(k->p->pool_i[ia], k->p->pool_i[ib]);
        if (c) return c;
    }
    return 0;
}

/* Shell sort of the group's ids (no qsort context in C11). */
static void sort_group(const gram_key *k, int32_t *ids, int64_t n) {
    for (int64_t gap = n / 2; gap > 0; gap /= 2)
        for (int64_t i = gap; i < n; i++) {
            int32_t v = ids[i];
            int64_t j = i;
            for (; j >= gap && cmp_pool(k, ids[j - gap], v) > 0; j -= gap) ids[j] = ids[j - gap];
            ids[j] = v;
        }
}

static inf_status tfidf_init(inf__node *node, inf__arena *arena, inf_error *err) {
    tfidf_params *p = inf__op_params(arena, tfidf_params);
    if (!p) return INF_ENOMEM;
    const char *mode = inf__attr_string(node, "mode", "");
    if (!strcmp(mode, "TF")) p->mode = MODE_TF;
    else if (!strcmp(mode, "IDF")) p->mode = MODE_IDF;
    else if (!strcmp(mode, "TFIDF")) p->mode = MODE_TFIDF;
    else return inf__node_error(node, err, INF_EMODEL, "mode '%s' must be TF, IDF or TFIDF", mode);
    p->min_n = inf__attr_int(node, "min_gram_length", 0);
    p->max_n = inf__attr_int(node, "max_gram_length", 0);
    p->max_skip = inf__attr_int(node, "max_skip_count", 0);
    if (p->min_n < 1 || p->max_n < p->min_n || p->max_skip < 0)
        return inf__node_error(node, err, INF_EMODEL,
                               "need 1 <= min_gram_length <= max_gram_length and max_skip_count >= 0");
    int n_counts = 0, n_idx = 0, n_w = 0, n_pool = 0;
    const int64_t *counts = inf__attr_ints(node, "ngram_counts", &n_counts);
    p->indexes = inf__attr_ints(node, "ngram_indexes", &n_idx);
    p->weights = inf__attr_floats(node, "weights", &n_w);
    p->pool_i = inf__attr_ints(node, "pool_int64s", &n_pool);
    const inf__attr *ps = inf__node_attr(node, "pool_strings");
    if (ps && ps->type == INF_ATTR_STRINGS && !p->pool_i) {
        p->strings = true, p->pool_s = ps->strings, n_pool = ps->n;
    } else if (!p->pool_i) {
        return inf__node_error(node, err, INF_EMODEL, "pool_int64s or pool_strings is required");
    }
    if (n_counts < 1)
        return inf__node_error(node, err, INF_EMODEL, "ngram_counts is required");
    p->n_groups = n_counts;
    p->groups = inf__arena_alloc(arena, sizeof(gram_group) * (size_t)n_counts);
    if (!p->groups) return INF_ENOMEM;
    for (int i = 0; i < n_counts; i++) {
        int64_t start = counts[i], end = i + 1 < n_counts ? counts[i + 1] : n_pool;
        if (start < 0 || end < start || end > n_pool || (end - start) % (i + 1))
            return inf__node_error(node, err, INF_EMODEL,
                                   "ngram_counts[%d] = %lld does not delimit whole %d-grams in a pool of %d",
                                   i, (long long)start, i + 1, n_pool);
        gram_group *g = &p->groups[i];
        g->start = start, g->count = (end - start) / (i + 1), g->first_id = p->n_grams;
        p->n_grams += g->count;
        g->sorted = inf__arena_alloc(arena, sizeof(int32_t) * (size_t)(g->count + 1));
        if (!g->sorted) return INF_ENOMEM;
        for (int64_t k = 0; k < g->count; k++) g->sorted[k] = (int32_t)k;
        gram_key key = {p, g, i + 1};
        sort_group(&key, g->sorted, g->count);
    }
    if (n_idx != p->n_grams)
        return inf__node_error(node, err, INF_EMODEL, "ngram_indexes has %d values, the pool holds %lld n-grams",
                               n_idx, (long long)p->n_grams);
    if (p->weights && n_w != p->n_grams)
        return inf__node_error(node, err, INF_EMODEL, "weights has %d values, the pool holds %lld n-grams",
                               n_w, (long long)p->n_grams);
    for (int i = 0; i < n_idx; i++) {
        if (p->indexes[i] < 0 || p->indexes[i] > (int64_t)1 << 30)
            return inf__node_error(node, err, INF_EMODEL, "ngram_indexes[%d] = %lld is out of range", i,
                                   (long long)p->indexes[i]);
        if (p->indexes[i] + 1 > p->out_size) p->out_size = p->indexes[i] + 1;
    }
    node->params = p;
    return INF_OK;
}

/* The candidate n-gram: items at row[pos + k * stride], k < n. */
typedef struct candidate {
    const inf_tensor *x;
    int64_t pos, stride;
} candidate;

static int cmp_candidate(const gram_key *k, int32_t id, const candidate *c) {
    for (int64_t i = 0; i < k->n; i++) {
        int64_t ip = k->g->start + id * k->n + i, ix = c->pos + i * c->stride;
        int cmp;
        if (k->p->strings) {
            const char *s = ((const char *const *)c->x->data)[ix];
            cmp = strcmp(k->p->pool_s[ip], s ? s : "");
        } else {
            cmp = cmp_items_i(k->p->pool_i[ip], inf__tensor_get_i64(c->x, ix));
        }
        if (cmp) return cmp;
    }
    return 0;
}

/* Global id of the candidate in group n-1, or -1. */
static int64_t find_gram(const tfidf_params *p, int64_t n, const candidate *c) {
    if (n > p->n_groups) return -1;
    const gram_group *g = &p->groups[n - 1];
    gram_key key = {p, g, n};
    int64_t lo = 0, hi = g->count;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int cmp = cmp_candidate(&key, g->sorted[mid], c);
        if (cmp == 0) return g->first_id + g->sorted[mid];
        if (cmp < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

/* Counts the n-grams of one row.  A gap wider than the row and an n-gram
 * longer than it cannot fit, so the loops end there whatever the attributes
 * say (max_skip_count = 2^60 ran for ever), and the fit test
 * pos + (n - 1) * (skip + 1) < len is made without the product (which
 * overflowed int64 with such attributes). */
static inf_status count_row(inf__kernel_ctx *ctx, const tfidf_params *p, const inf_tensor *x, int64_t row_off,
                            int64_t len, float *counts) {
    int64_t max_skip = p->max_n < 2 ? 0 : p->max_skip < len ? p->max_skip : len;
    int64_t n_gap = p->min_n > 2 ? p->min_n : 2; /* the shortest n-gram a gap applies to */
    inf_status st;
    for (int64_t pos = 0; pos < len; pos++) {
        /* a long row with wide gaps is quadratic work (ran 20 s under ASan) */
        if (max_skip > 0 && (st = inf__kernel_check_time(ctx)) != INF_OK) return st;
        for (int64_t skip = 0; skip <= max_skip; skip++) {
            if (skip > 0 && skip + 1 > (len - 1 - pos) / (n_gap - 1)) break; /* no wider gap fits either */
            for (int64_t n = p->min_n; n <= p->max_n; n++) {
                if (n == 1 && skip > 0) continue; /* a unigram is counted once per position */
                if (n > 1 && skip + 1 > (len - 1 - pos) / (n - 1)) break; /* pos + (n-1)(skip+1) >= len */
                candidate c = {x, row_off + pos, skip + 1};
                int64_t id = find_gram(p, n, &c);
                if (id >= 0) counts[id] += 1;
            }
        }
    }
    return INF_OK;
}

static inf_status tfidf_run(inf__kernel_ctx *ctx) {
    char buf[96];
    const tfidf_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0];
    bool ok_type = p->strings ? x->dtype == INF_DTYPE_STRING
                              : (x->dtype == INF_DTYPE_I32 || x->dtype == INF_DTYPE_I64);
    if (!ok_type)
        return inf__kernel_error(ctx, INF_ETYPE, "input X: expected %s (the pool's type), got %s",
                                 p->strings ? "string" : "int32 or int64", inf_dtype_name(x->dtype));
    if (x->ndim != 1 && x->ndim != 2)
        return inf__kernel_error(ctx, INF_ESHAPE, "input X: expected [C] or [N, C], got %s",
                                 inf__shape_str(x->ndim, x->dims, buf, sizeof buf));
    int64_t rows = x->ndim == 2 ? x->dims[0] : 1, len = x->dims[x->ndim - 1];
    int64_t dims[2] = {rows, p->out_size};
    inf_tensor *y;
    inf_status st = inf__kernel_output(ctx, 0, INF_DTYPE_F32, x->ndim, x->ndim == 2 ? dims : dims + 1, &y);
    if (st != INF_OK) return st;
    float *counts = inf__kernel_scratch(ctx, (size_t)(p->n_grams + 1) * sizeof(float));
    if (!counts) return INF_ENOMEM;
    float *out = y->data;
    for (int64_t r = 0; r < rows; r++) {
        memset(counts, 0, (size_t)(p->n_grams + 1) * sizeof(float));
        if ((st = count_row(ctx, p, x, r * len, len, counts)) != INF_OK) return st;
        float *orow = out + r * p->out_size;
        memset(orow, 0, (size_t)p->out_size * sizeof(float));
        for (int64_t i = 0; i < p->n_grams; i++) {
            float w = p->weights ? p->weights[i] : 1.0f, c = counts[i];
            float v = p->mode == MODE_TF ? c : p->mode == MODE_IDF ? (c > 0 ? w : 0) : c * w;
            orow[p->indexes[i]] += v;
        }
    }
    return INF_OK;
}

const inf__op_impl op_tfidf_vectorizer = {tfidf_init, tfidf_run};
