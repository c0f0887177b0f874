/*
 * test_qattention.c -- the INT8 fused attention (ops/ref/qattention.c,
 * ops/qattention.h) on this CPU's integer kernel (AVX-512 VNNI, AVX-VNNI, or
 * AVX2 vpmaddwd under INFERA_CPU=avx2 INFERA_QGEMM=avx2) against its
 * reference twin (INF_QGEMM_REF: plain C sums, the portable QuantizeLinear)
 * bit for bit at 1, 2 and 3 threads, and both against an oracle written
 * here in double precision: QuantizeLinear's bytes of q, k, v (float
 * division and round-half-even, as the ONNX operator defines them), the
 * integer scores in int64, a double softmax, P quantized in double, P V in
 * int64.  The oracle's P byte may differ by one where its double value and
 * the kernel's float one straddle a rounding boundary, so Y is allowed
 * 3 * sp * sv * max|V - zv| plus float rounding.
 * Shapes: heads 1-4, head dim 32/64 (and odd 5, 33), sequence lengths not
 * multiples of 8/16 (1, 7, 13, 50, 129), batch 1-3, with and without a
 * mask ([B, 1, 1, Sk] padding masks of -1e4, and a [Sq, Sk] one).
 * Prints one line per failure and "N passed, M failed".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "kernel_paths.h"
#include "ops/qattention.h"

static int n_passed, n_failed;
static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t next_u64(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}
static float uniform(float a) {
    return (float)((double)(next_u64() >> 11) / 9007199254740992.0 * 2.0 - 1.0) * a;
}

static int q8(float x, float s, int z) {
    double r = nearbyint((double)(x / s)) + z;
    return r < 0 ? 0 : r > 255 ? 255 : (int)r;
}

typedef struct tcase {
    int b, sq, sk, h, d, dv, mask; /* mask: 0 none, 1 [B,1,1,Sk], 2 [Sq,Sk] */
    float scale, q_scale;
} tcase;

/* The oracle's Y [B, Sq, H, Dv]; returns the tolerance. */
static double oracle(const inf__qattention_job *j, double *y) {
    const inf__attention_geom *g = &j->g;
    double vmax = 0;
    double *s = malloc((size_t)g->sk * sizeof *s);
    int *p = malloc((size_t)g->sk * sizeof *p);
    for (int64_t b = 0; b < g->b; b++)
        for (int64_t h = 0; h < g->h; h++)
            for (int64_t i = 0; i < g->sq; i++) {
                const float *q = g->q + b * g->qb + h * g->qh + i * g->ldq;
                double mx = -INFINITY, sum = 0;
                for (int64_t t = 0; t < g->sk; t++) {
                    const float *k = g->k + b * g->kb + h * g->kh + t * g->ldk;
                    long long acc = 0;
                    for (int64_t c = 0; c < g->d; c++)
                        acc += (long long)(q8(j->q_scale * q[c], j->qs[0], j->qz[0]) - j->qz[0]) *
                               (q8(k[c], j->qs[1], j->qz[1]) - j->qz[1]);
                    s[t] = (double)acc * j->qs[0] * j->qs[1] * j->scale;
                    if (g->mask)
                        s[t] += g->mask[b * g->mb + h * g->mh + i * g->mi + t * g->mj];
                    if (s[t] > mx)
                        mx = s[t];
                }
                for (int64_t t = 0; t < g->sk; t++)
                    sum += s[t] = exp(s[t] - mx);
                for (int64_t t = 0; t < g->sk; t++) {
                    double r = nearbyint(s[t] / sum / j->qs[2]) + j->qz[2];
                    p[t] = r < 0 ? 0 : r > 255 ? 255 : (int)r;
                }
                for (int64_t c = 0; c < g->dv; c++) {
                    long long acc = 0;
                    for (int64_t t = 0; t < g->sk; t++) {
                        int vq = q8(g->v[b * g->vb + h * g->vh + t * g->ldv + c], j->qs[3], j->qz[3]) - j->qz[3];
                        if (fabs((double)vq) > vmax)
                            vmax = fabs((double)vq);
                        acc += (long long)(p[t] - j->qz[2]) * vq;
                    }
                    y[((b * g->sq + i) * g->h + h) * g->dv + c] = (double)acc * j->qs[2] * j->qs[3];
                }
            }
    free(s), free(p);
    return 3.0 * j->qs[2] * j->qs[3] * vmax;
}

static float *random_floats(int64_t n, float a) {
    float *x = malloc((size_t)(n > 0 ? n : 1) * sizeof *x);
    for (int64_t i = 0; i < n; i++)
        x[i] = uniform(a);
    return x;
}

static void run(const inf__qattention_job *j, int threads, float *y) {
    inf__pool *pool = NULL;
    if (threads > 1 && inf__pool_new(threads, &pool) != INF_OK)
        abort();
    int parts = threads < j->g.b * j->g.h ? threads : (int)(j->g.b * j->g.h);
    void *scratch = inf__aligned_alloc(inf__qattention_scratch_bytes(j, parts) + 64);
    inf__qattention_job jj = *j;
    jj.g.y = y;
    inf__qattention_run(&jj, pool, scratch);
    inf__aligned_free(scratch);
    inf__pool_free(pool);
}

static void one_case(const tcase *c) {
    inf__qattention_job j = {.scale = c->scale, .q_scale = c->q_scale, .vm = inf__vmath_best()};
    inf__attention_geom *g = &j.g;
    g->b = c->b, g->h = c->h, g->sq = c->sq, g->sk = c->sk, g->d = c->d, g->dv = c->dv;
    g->ldq = c->h * c->d, g->ldk = c->h * c->d, g->ldv = c->h * c->dv, g->ldy = c->h * c->dv;
    g->qb = c->sq * g->ldq, g->qh = c->d, g->kb = c->sk * g->ldk, g->kh = c->d, g->vb = c->sk * g->ldv, g->vh = c->dv;
    float *q = random_floats((int64_t)c->b * c->sq * g->ldq, 2.0f),
          *k = random_floats((int64_t)c->b * c->sk * g->ldk, 2.0f);
    float *v = random_floats((int64_t)c->b * c->sk * g->ldv, 1.5f), *mask = NULL;
    if (c->mask == 1) { /* padding: the last keys of each batch row masked */
        mask = calloc((size_t)(c->b * c->sk), sizeof *mask);
        for (int b = 0; b < c->b; b++)
            for (int t = c->sk - b; t < c->sk; t++)
                mask[b * c->sk + t] = -1e4f;
        g->mb = c->sk, g->mh = 0, g->mi = 0, g->mj = 1;
    } else if (c->mask == 2) {
        mask = random_floats((int64_t)c->sq * c->sk, 3.0f);
        g->mb = 0, g->mh = 0, g->mi = c->sk, g->mj = 1;
    }
    g->q = q, g->k = k, g->v = v, g->mask = mask;
    /* the ranges a calibration would give: Q, K, V about [-2, 2] (zero points near 128), P [0, 1] */
    j.qs[INF_QATT_Q] = 2.1f * c->q_scale * 2 / 255, j.qz[INF_QATT_Q] = 127;
    j.qs[INF_QATT_K] = 4.0f / 255, j.qz[INF_QATT_K] = 131;
    j.qs[INF_QATT_P] = 1.0f / 255, j.qz[INF_QATT_P] = 0;
    j.qs[INF_QATT_V] = 3.0f / 255, j.qz[INF_QATT_V] = 125;
    int64_t ny = (int64_t)c->b * c->sq * c->h * c->dv;
    float *yref = malloc((size_t)ny * sizeof *yref), *yf = malloc((size_t)ny * sizeof *yf);
    double *yo = malloc((size_t)ny * sizeof *yo);
    double tol = oracle(&j, yo);
    j.isa = INF_QGEMM_REF;
    run(&j, 1, yref);
    j.isa = inf__qgemm_best_isa();
    bool ok = true;
    char what[160];
    snprintf(what, sizeof what, "b %d sq %d sk %d h %d d %d dv %d mask %d q_scale %g", c->b, c->sq, c->sk, c->h, c->d,
             c->dv, c->mask, (double)c->q_scale);
    for (int threads = 1; threads <= 3 && ok; threads++) {
        run(&j, threads, yf);
        if (memcmp(yf, yref, (size_t)ny * sizeof *yf)) {
            int64_t i = 0;
            while (yf[i] == yref[i])
                i++;
            printf("FAIL %s: %s at %d threads differs from the reference twin at %lld: %g vs %g\n", what,
                   inf__qgemm_isa_name(j.isa), threads, (long long)i, (double)yf[i], (double)yref[i]);
            ok = false;
        }
    }
    for (int64_t i = 0; i < ny && ok; i++)
        if (fabs(yref[i] - yo[i]) > tol + 1e-5 * (1 + fabs(yo[i]))) {
            printf("FAIL %s: Y[%lld] = %g, the oracle %g (tolerance %g)\n", what, (long long)i, (double)yref[i], yo[i],
                   tol);
            ok = false;
        }
    if (ok)
        n_passed++;
    else
        n_failed++;
    free(q), free(k), free(v), free(mask), free(yref), free(yf), free(yo);
}

int main(int argc, char **argv) {
    int rc = kernel_paths_begin(argc, argv, "qattention");
    if (rc)
        return rc;
    printf("qattention: integer kernel %s\n", inf__qgemm_isa_name(inf__qgemm_best_isa()));
    static const tcase cases[] = {
        {1, 128, 128, 4, 64, 64, 0, 0.125f, 1.0f},  {2, 13, 13, 4, 64, 64, 1, 0.125f, 1.0f},
        {1, 7, 7, 1, 32, 32, 0, 0.17677669f, 1.0f}, {3, 50, 50, 2, 32, 32, 1, 0.17677669f, 1.0f},
        {1, 129, 129, 3, 64, 64, 2, 0.125f, 1.0f},  {2, 1, 1, 4, 32, 32, 0, 0.17677669f, 1.0f},
        {1, 13, 50, 2, 5, 33, 0, 1.0f, 0.4472136f}, {2, 70, 33, 3, 33, 5, 1, 0.5f, 1.0f},
        {1, 65, 17, 4, 64, 32, 2, 1.0f, 0.125f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        one_case(&cases[i]);
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}
