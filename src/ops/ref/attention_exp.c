/*
 * attention_exp.c -- the softmax numerator of the fused Attention kernel
 * (ops/ref/attention.c), portable: the reference twin of
 * inf__attention_exp_rows_avx2 / _avx512 (ops/x86/attention_avx2.c,
 * attention_avx512.c), which give the same bits (tests/kernels/
 * test_attention.c).  CPUs without AVX2/FMA do not run it (its fmaf is a
 * library call there): the kernel keeps vmath's softmax row on them.
 *
 * A row of scores x[0..n) becomes e[t] = exp(x[t] - max x) in place and
 * inv = 1 / sum e; the caller multiplies the row of P V by it (the
 * division moved after the product: Sk products a row become Dv).
 * The exp is vmath's (ops/ref/vmath.c: Cody-Waite reduction by ln 2 in two
 * parts, degree-5 polynomial, < 2 ulp) specialised for arguments <= 0:
 *   - below LO = -87 the result is 0 (exp(-87) = 1.6e-38 is at float's
 *     smallest normal; beside the row's largest term, 1, it is far below
 *     float32 resolution), so 2^n is always a normal float built in one
 *     step from the rounding constant's bits (no second scaling, no
 *     overflow side);
 *   - the terms are summed in float in 8 lanes (term t into lane t % 8, in
 *     order), reduced as ((l0 + l4) + (l1 + l5)) + ((l2 + l6) + (l3 + l7)).
 * A NaN score makes the row's sum, and so its output row, NaN; a row whose
 * scores are all -inf (fully masked) sums 0 and gives NaN, as the unfused
 * Softmax does.  Every multiply-add is one fmaf, in the vector kernels'
 * order, so the three give the same bits.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ops/attention_exp.h"

static float row_max(const float *x, int64_t n) {
    float mx = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        mx = x[i] > mx ? x[i] : mx;
    return mx == -INFINITY ? 0.0f : mx;
}

/* exp(x) for x <= 0 (or NaN), as the vector kernels compute it lane by lane. */
static float exp_le0(float x) {
    bool keep = !(x < INF__ATT_EXP_LO);
    float c = INF__ATT_EXP_LO > x ? INF__ATT_EXP_LO : x; /* max(LO, x): a NaN x stays */
    float t = fmaf(c, INF__ATT_LOG2E, INF__ATT_ROUND);
    float n = t - INF__ATT_ROUND;
    float r = fmaf(-n, INF__ATT_LN2_HI, c);
    r = fmaf(-n, INF__ATT_LN2_LO, r);
    float p = fmaf(INF__ATT_P0, r, INF__ATT_P1);
    p = fmaf(p, r, INF__ATT_P2);
    p = fmaf(p, r, INF__ATT_P3);
    p = fmaf(p, r, INF__ATT_P4);
    p = fmaf(p, r, INF__ATT_P5);
    p = fmaf(p, r * r, r + 1.0f);
    uint32_t tb, kb;
    memcpy(&tb, &t, sizeof tb);
    kb = (tb + (uint32_t)INF__ATT_POW2_BIAS) << 23; /* 2^n: n + 127 in the exponent field */
    float s;
    memcpy(&s, &kb, sizeof s);
    return keep ? p * s : 0.0f;
}

/* e = exp(x - mx) in place, 1 / sum e returned */
static float exp_row(float *x, int64_t n, float mx) {
    float lane[8] = {0};
    for (int64_t i = 0; i < n; i++) {
        x[i] = exp_le0(x[i] - mx);
        lane[i % 8] += x[i];
    }
    return 1.0f / (((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7])));
}

void inf__attention_exp_rows(float *s, int64_t m, int64_t n, float *inv) {
    inf__attention_exp_rows_by(s, m, n, inv, row_max, exp_row);
}
