/*
 * test_attention_gqa.c -- the fused attention kernel's decoder forms
 * (ops/attention.h: inf__attention_compute) against a plain double
 * attention written here: any of Q, K, V and Y read as [B, H, S, D]
 * instead of [B, S, H, D] (the layout bits of ai.infera Attention's
 * attribute bhsd), fewer key/value heads than query heads (query head h
 * reads key/value head h / (H / H_kv): grouped-query and multi-query
 * attention), and the causal flag (query i sees keys t <= i + Sk - Sq, or
 * i + a given offset as ONNX's Attention asks)
 * combined with an additive mask (none, [Sq, Sk], or a [B, 1, 1, Sk]
 * padding mask with -inf), with masked_to_zero (a row that sees no key,
 * Sq > Sk under the causal flag or all padding, gives zeros).
 * Each case: within 1e-5 * max(1, |ref|) of the reference; 2 and 3
 * threads bit-identical to 1; batch invariance: each batch row run alone
 * (batch 1) gives the bits of the batched run.
 * The geometry (strides) is computed here from the shapes, independently of
 * ops/ref/attention.c's.  Prints one line per failure and "N passed, M failed".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "kernel_paths.h"
#include "ops/attention.h"

static int n_passed, n_failed;
static uint64_t rng = 0x51AF3C2D9E4B7A61ull;

static uint64_t next_u64(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}
static int rand_int(int lo, int hi) { return lo + (int)(next_u64() % (uint64_t)(hi - lo + 1)); }
static float uniform(float a) { return (float)((double)(next_u64() >> 11) / 9007199254740992.0 * 2.0 - 1.0) * a; }

typedef struct tcase {
    int b, h, hkv, sq, sk, d, dv, bhsd, mask; /* mask 0 none, 1 [Sq, Sk], 2 [B, 1, 1, Sk] padding */
    bool causal;
    bool causal_at; /* offset `off` given (ONNX's Attention: the past's length), else Sk - Sq */
    int off;
} tcase;

/* Element offset of (b, s, h, e) in a [B, S, H, E] or (bhsd) [B, H, S, E] tensor. */
static int64_t at(bool bhsd, int64_t S, int64_t H, int64_t E, int64_t b, int64_t s, int64_t h, int64_t e) {
    return bhsd ? ((b * H + h) * S + s) * E + e : ((b * S + s) * H + h) * E + e;
}

/* Strides for the kernel, written from the layout rule directly. */
static void set_strides(bool bhsd, int64_t S, int64_t H, int64_t E, int64_t *sb, int64_t *sh, int64_t *ld) {
    *sb = S * H * E;
    *sh = bhsd ? S * E : E;
    *ld = bhsd ? E : H * E;
}

static double mask_at(const tcase *c, const float *m, int64_t b, int64_t i, int64_t t) {
    if (c->mask == 1) return m[i * c->sk + t];
    if (c->mask == 2) return m[b * c->sk + t];
    return 0;
}

static void reference(const tcase *c, const float *q, const float *k, const float *v, const float *m, double *y) {
    double *s = malloc((size_t)c->sk * sizeof *s);
    int group = c->h / c->hkv;
    for (int64_t b = 0; b < c->b; b++)
        for (int64_t h = 0; h < c->h; h++)
            for (int64_t i = 0; i < c->sq; i++) {
                double mx = -INFINITY, sum = 0;
                for (int64_t t = 0; t < c->sk; t++) {
                    double acc = 0;
                    for (int64_t e = 0; e < c->d; e++)
                        acc += (double)q[at(c->bhsd & INF_ATT_BHSD_Q, c->sq, c->h, c->d, b, i, h, e)] *
                               k[at(c->bhsd & INF_ATT_BHSD_K, c->sk, c->hkv, c->d, b, t, h / group, e)];
                    s[t] = acc / sqrt((double)c->d) + mask_at(c, m, b, i, t);
                    if (c->causal && t > i + (c->causal_at ? c->off : c->sk - c->sq)) s[t] = -INFINITY;
                    if (s[t] > mx) mx = s[t];
                }
                for (int64_t t = 0; t < c->sk; t++) sum += s[t] = mx == -INFINITY ? 0 : exp(s[t] - mx);
                for (int64_t e = 0; e < c->dv; e++) {
                    double acc = 0;
                    for (int64_t t = 0; t < c->sk && sum > 0; t++)
                        acc += s[t] / sum * v[at(c->bhsd & INF_ATT_BHSD_V, c->sk, c->hkv, c->dv, b, t, h / group, e)];
                    y[at(c->bhsd & INF_ATT_BHSD_Y, c->sq, c->h, c->dv, b, i, h, e)] = acc;
                }
            }
    free(s);
}

/* Runs batch rows [b0, b0 + nb) of the case on `threads` threads into y ([nb, ...] of the case's layout). */
static void run(const tcase *c, const float *q, const float *k, const float *v, const float *m, int b0, int nb,
                int threads, float *y) {
    inf__attention_geom g = {.b = nb, .h = c->h, .sq = c->sq, .sk = c->sk, .d = c->d, .dv = c->dv};
    g.group = c->h / c->hkv;
    set_strides(c->bhsd & INF_ATT_BHSD_Q, c->sq, c->h, c->d, &g.qb, &g.qh, &g.ldq);
    set_strides(c->bhsd & INF_ATT_BHSD_K, c->sk, c->hkv, c->d, &g.kb, &g.kh, &g.ldk);
    set_strides(c->bhsd & INF_ATT_BHSD_V, c->sk, c->hkv, c->dv, &g.vb, &g.vh, &g.ldv);
    set_strides(c->bhsd & INF_ATT_BHSD_Y, c->sq, c->h, c->dv, &g.yb, &g.yh, &g.ldy);
    g.q = q + b0 * g.qb, g.k = k + b0 * g.kb, g.v = v + b0 * g.vb, g.y = y;
    if (c->mask == 1) g.mask = m, g.mi = c->sk, g.mj = 1;
    if (c->mask == 2) g.mask = m + b0 * c->sk, g.mb = c->sk, g.mj = 1;
    inf__attention_opts o = {.scale = 1.0f / sqrtf((float)c->d),
                             .masked_to_zero = true,
                             .causal = c->causal,
                             .causal_at = c->causal_at,
                             .causal_offset = c->off};
    inf__pool *pool = NULL;
    if (threads > 1 && inf__pool_new(threads, &pool) != INF_OK) abort();
    void *scratch = inf__aligned_alloc(inf__attention_scratch_bytes(&g, &o, pool) + 64);
    if (!scratch) abort();
    inf__attention_compute(&g, &o, pool, scratch);
    inf__aligned_free(scratch);
    inf__pool_free(pool);
}

static float *random_floats(int64_t n, float a) {
    float *x = malloc((size_t)(n > 0 ? n : 1) * sizeof *x);
    if (!x) abort();
    for (int64_t i = 0; i < n; i++) x[i] = uniform(a);
    return x;
}

static void random_case(tcase *c, int trial) {
    static const int groups[] = {1, 2, 3, 4};
    memset(c, 0, sizeof *c);
    c->b = rand_int(1, 3);
    c->hkv = rand_int(1, 3);
    c->h = c->hkv * groups[trial % 4];
    c->causal = trial % 3 != 0;
    c->sq = trial % 7 == 0 ? 1 : rand_int(1, 40);
    c->sk = trial % 5 == 0    ? c->sq
            : trial % 11 == 0 ? rand_int(1, c->sq)
                              : rand_int(1, 45); /* Sq > Sk: rows see no key */
    c->d = trial % 4 == 1 ? 64 : rand_int(1, 40);
    c->dv = trial % 4 == 1 ? 64 : rand_int(1, 33);
    c->bhsd = (int)(next_u64() % 16);
    c->mask = trial % 3;
    if (trial % 8 == 5) c->causal = c->causal_at = true, c->off = rand_int(-2, c->sk);
}

static void check_case(const tcase *c) {
    int64_t nq = (int64_t)c->b * c->sq * c->h * c->d, nk = (int64_t)c->b * c->sk * c->hkv * c->d,
            nv = (int64_t)c->b * c->sk * c->hkv * c->dv, ny = (int64_t)c->b * c->sq * c->h * c->dv, ny1 = ny / c->b;
    float *q = random_floats(nq, 2.0f), *k = random_floats(nk, 2.0f), *v = random_floats(nv, 1.5f), *m = NULL;
    if (c->mask == 1) m = random_floats((int64_t)c->sq * c->sk, 3.0f);
    if (c->mask == 2) { /* padding: batch row b hides its last b keys (all of them when b >= Sk) */
        m = calloc((size_t)(c->b * c->sk), sizeof *m);
        for (int b = 0; b < c->b; b++)
            for (int t = c->sk - b; t < c->sk; t++)
                if (t >= 0) m[b * c->sk + t] = -INFINITY;
    }
    double *ref = malloc((size_t)ny * sizeof *ref);
    float *y1 = malloc((size_t)ny * sizeof *y1), *y2 = malloc((size_t)ny * sizeof *y2),
          *y3 = malloc((size_t)ny * sizeof *y3), *yb = malloc((size_t)ny1 * sizeof *yb);
    if (!ref || !y1 || !y2 || !y3 || !yb || (c->mask && !m)) abort();
    reference(c, q, k, v, m, ref);
    run(c, q, k, v, m, 0, c->b, 1, y1);
    run(c, q, k, v, m, 0, c->b, 2, y2);
    run(c, q, k, v, m, 0, c->b, 3, y3);
    char what[200];
    snprintf(what, sizeof what, "b %d h %d kv %d sq %d sk %d d %d dv %d bhsd %d mask %d causal %d (at %d: %d)", c->b,
             c->h, c->hkv, c->sq, c->sk, c->d, c->dv, c->bhsd, c->mask, c->causal, c->causal_at, c->off);
    bool ok = true;
    for (int64_t e = 0; ok && e < ny; e++) {
        double tol = 1e-5 * (fabs(ref[e]) > 1 ? fabs(ref[e]) : 1);
        if (!(fabs(y1[e] - ref[e]) <= tol)) {
            printf("FAIL %s: element %lld %.9g, reference %.9g\n", what, (long long)e, y1[e], ref[e]);
            ok = false;
        }
    }
    if (ok && (memcmp(y1, y2, (size_t)ny * sizeof *y1) || memcmp(y1, y3, (size_t)ny * sizeof *y1))) {
        printf("FAIL %s: 2 or 3 threads differ from 1\n", what);
        ok = false;
    }
    /* batch invariance: a batch row alone gives the batched run's bits (Y's batch is outermost in both layouts) */
    for (int b = 0; ok && b < c->b; b++) {
        run(c, q, k, v, m, b, 1, 1 + b % 2, yb);
        if (memcmp(yb, y1 + b * ny1, (size_t)ny1 * sizeof *yb)) {
            printf("FAIL %s: batch row %d alone differs from the batched run\n", what, b);
            ok = false;
        }
    }
    if (ok) n_passed++;
    else n_failed++;
    free(q), free(k), free(v), free(m), free(ref), free(y1), free(y2), free(y3), free(yb);
}

enum { N_RANDOM = 80 };

int main(int argc, char **argv) {
    int skip = kernel_paths_begin(argc, argv, "attention_gqa");
    if (skip) return skip;
    tcase c;
    for (int trial = 0; trial < N_RANDOM; trial++) {
        random_case(&c, trial);
        check_case(&c);
    }
    /* a Llama decoder layer's shape at batch 1: 4 query heads, 2 key/value heads of 64, 128 tokens, causal, Q and K
     * [B, H, S, D] after rotary, V too, Y [B, S, H, D] before the output projection */
    c = (tcase){
        .b = 1, .h = 4, .hkv = 2, .sq = 128, .sk = 128, .d = 64, .dv = 64, .bhsd = 7, .mask = 2, .causal = true};
    check_case(&c);
    c.b = 2, c.sq = 1, c.sk = 37; /* a decode step: one query row, keys before it */
    check_case(&c);
    printf("attention_gqa: %d random cases and 2 decoder shapes against a double reference, 1/2/3 threads, "
           "each batch row alone\n",
           N_RANDOM);
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}
