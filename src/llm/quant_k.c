/*
 * quant_k.c -- the K-quant formats q4_K and q6_K (super-blocks of 256
 * elements, ggml's layout): conversion to float, the q8_K activation
 * quantizer, and the reference dot products (quant.h).
 *
 * DESIGN: as for the 32-element formats, a weight row is multiplied with an
 * activation row quantized to q8_K (one scale per 256 values, and the sums
 * of each 16 of them, as ggml's quantize_row_q8_K_ref makes them).  Per
 * super-block the products are summed exactly in integers -- each sub-block's
 * sum times its 6-bit (q4_K) or 8-bit (q6_K) scale, the q4_K minimums
 * through the activation's 16-element sums -- and then scaled into float
 * with fmaf in a fixed order.  The AVX2/VNNI twins (quant_k_avx2.c) compute
 * the same integers and the same fmaf sequence, so they equal these
 * reference kernels bit for bit.
 */
#include <math.h>
#include <string.h>

#include "llm/quant.h"

/* The 6-bit scale and min of sub-block j (ggml's get_scale_min_k4). */
static inline void scale_min_k4(int j, const uint8_t *q, int *d, int *m) {
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

/* q4_K element e of a block: 0..15 */
static inline int q4_K_q(const inf__blk_q4_K *b, int e) {
    uint8_t v = b->qs[32 * (e / 64) + e % 32];
    return e % 64 < 32 ? v & 0xF : v >> 4;
}

/* q6_K element e of a block: 0..63 (ggml's dequantize_row_q6_K order) */
static inline int q6_K_q(const inf__blk_q6_K *b, int e) {
    int half = e / 128, r = e % 128, quarter = r / 32, l = r % 32;
    const uint8_t *ql = b->ql + 64 * half, *qh = b->qh + 32 * half;
    int lo = quarter & 1 ? ql[l + 32] : ql[l];
    lo = quarter < 2 ? lo & 0xF : lo >> 4;
    return lo | (((qh[l] >> (2 * quarter)) & 3) << 4);
}

void inf__llm_q4_K_to_float(const void *src, float *dst, int64_t k) {
    const inf__blk_q4_K *b = src;
    for (int64_t i = 0; i < k / QK_K; i++) {
        float d = inf__llm_fp16_to_fp32(b[i].d), dmin = inf__llm_fp16_to_fp32(b[i].dmin);
        for (int j = 0; j < 8; j++) {
            int sc, m;
            scale_min_k4(j, b[i].scales, &sc, &m);
            float d1 = d * sc, m1 = dmin * m;
            for (int e = 32 * j; e < 32 * j + 32; e++) dst[i * QK_K + e] = d1 * q4_K_q(&b[i], e) - m1;
        }
    }
}

void inf__llm_q6_K_to_float(const void *src, float *dst, int64_t k) {
    const inf__blk_q6_K *b = src;
    for (int64_t i = 0; i < k / QK_K; i++) {
        float d = inf__llm_fp16_to_fp32(b[i].d);
        for (int e = 0; e < QK_K; e++) dst[i * QK_K + e] = d * b[i].scales[e / 16] * (q6_K_q(&b[i], e) - 32);
    }
}

/* ggml's quantize_row_q8_K_ref: the value of largest magnitude becomes -127
 * (d may be negative), round to nearest even, 127 at most. */
void inf__llm_quantize_q8_K(const float *src, void *dst, int64_t k) {
    inf__blk_q8_Ka *y = dst;
    for (int64_t i = 0; i < k / QK_K; i++, src += QK_K) {
        float max = 0, amax = 0;
        for (int j = 0; j < QK_K; j++) {
            float ax = fabsf(src[j]);
            if (ax > amax) amax = ax, max = src[j];
        }
        memset(&y[i], 0, sizeof y[i]);
        if (!(amax > 0) || !isfinite(amax)) continue; /* zeros (ggml: 0 too); NaN/inf: zeros, never UB */
        float iscale = -127.f / max;
        for (int j = 0; j < QK_K; j++) {
            float v = nearbyintf(iscale * src[j]);
            y[i].qs[j] = (int8_t)(v > 127 ? 127 : v < -128 ? -128 : v == v ? v : 0);
        }
        for (int j = 0; j < QK_K / 16; j++) {
            int sum = 0;
            for (int e = 0; e < 16; e++) sum += y[i].qs[16 * j + e];
            y[i].bsums[j] = (int16_t)sum;
        }
        y[i].d = 1 / iscale;
    }
}

float inf__llm_dot_q4_K_ref(int64_t k, const void *w, const void *x) {
    const inf__blk_q4_K *a = w;
    const inf__blk_q8_Ka *b = x;
    float acc = 0, accm = 0;
    for (int64_t i = 0; i < k / QK_K; i++) {
        int32_t isum = 0, imin = 0;
        for (int j = 0; j < 8; j++) {
            int sc, m, s = 0;
            scale_min_k4(j, a[i].scales, &sc, &m);
            for (int e = 32 * j; e < 32 * j + 32; e++) s += q4_K_q(&a[i], e) * b[i].qs[e];
            isum += sc * s;
            imin += m * (b[i].bsums[2 * j] + b[i].bsums[2 * j + 1]);
        }
        acc = fmaf((float)isum, inf__llm_fp16_to_fp32(a[i].d) * b[i].d, acc);
        accm = fmaf((float)imin, inf__llm_fp16_to_fp32(a[i].dmin) * b[i].d, accm);
    }
    return acc - accm;
}

float inf__llm_dot_q6_K_ref(int64_t k, const void *w, const void *x) {
    const inf__blk_q6_K *a = w;
    const inf__blk_q8_Ka *b = x;
    float acc = 0;
    for (int64_t i = 0; i < k / QK_K; i++) {
        int32_t isum = 0;
        for (int j = 0; j < 16; j++) {
            int s = 0;
            for (int e = 16 * j; e < 16 * j + 16; e++) s += (q6_K_q(&a[i], e) - 32) * b[i].qs[e];
            isum += a[i].scales[j] * s;
        }
        acc = fmaf((float)isum, inf__llm_fp16_to_fp32(a[i].d) * b[i].d, acc);
    }
    return acc;
}
