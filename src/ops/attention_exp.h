/*
 * attention_exp.h -- the softmax numerator of the fused Attention kernel
 * (ops/ref/attention.c), over m rows of n scores s[i * n + t]: each row
 * becomes e = exp(s - its max) in place and inv[i] = 1 / the row's sum of
 * e; the caller scales the row of P V by it.  All the rows' maxima are
 * taken first (in inv), then the exps: no row's exps wait for its own max
 * to be reduced.  Three implementations with the same bits: portable
 * (ops/ref/attention_exp.c, whose header gives the arithmetic; the twin the
 * tests compare with), AVX2/FMA (ops/x86/attention_avx2.c; only when
 * inf__cpu_has_avx2_fma()) and AVX-512 (ops/x86/attention_avx512.c; only
 * when inf__cpu_has_avx512()).
 */
#ifndef INF_OPS_ATTENTION_EXP_H
#define INF_OPS_ATTENTION_EXP_H

#include <stdbool.h>
#include <stdint.h>

/* The constants all three use (those of ops/ref/vmath.c's exp). */
#define INF__ATT_EXP_LO (-87.0f) /* below: exp is 0 */
#define INF__ATT_LOG2E 1.44269504088896341f
#define INF__ATT_LN2_HI 0.693359375f
#define INF__ATT_LN2_LO (-2.12194440e-4f)
#define INF__ATT_ROUND 12582912.0f            /* 1.5 * 2^23: x * log2e + this is round(x * log2e) in the low bits */
#define INF__ATT_POW2_BIAS (127 - 0x4B400000) /* added to those bits: n + 127 */
/* the polynomial, highest degree first */
#define INF__ATT_P0 1.9875691500e-4f
#define INF__ATT_P1 1.3981999507e-3f
#define INF__ATT_P2 8.3334519073e-3f
#define INF__ATT_P3 4.1665795894e-2f
#define INF__ATT_P4 1.6666665459e-1f
#define INF__ATT_P5 5.0000001201e-1f

/* The rows' maxima first (into inv), then each row's exps and 1 / sum:
 * the driver of all three, with their row_max (-inf -> 0) and exp_row
 * (e = exp(x - mx) in place, 1 / sum e returned). */
static inline void inf__attention_exp_rows_by(float *s, int64_t m, int64_t n, float *inv,
                                              float (*row_max)(const float *x, int64_t n),
                                              float (*exp_row)(float *x, int64_t n, float mx)) {
    for (int64_t r = 0; r < m; r++)
        inv[r] = row_max(s + r * n, n);
    for (int64_t r = 0; r < m; r++)
        inv[r] = exp_row(s + r * n, n, inv[r]);
}

/* A row's max is -inf only when all its scores are: 0 is subtracted then. */
void inf__attention_exp_rows(float *s, int64_t m, int64_t n, float *inv);
void inf__attention_exp_rows_avx2(float *s, int64_t m, int64_t n, float *inv);
void inf__attention_exp_rows_avx512(float *s, int64_t m, int64_t n, float *inv);

#endif /* INF_OPS_ATTENTION_EXP_H */
