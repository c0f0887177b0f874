/*
 * qdepthwise.c -- the depthwise 8-bit convolution (group == channels, one
 * output channel per group: MobileNet's 3x3 layers) for the conv driver
 * (ops/ref/qgemm_drive.c): its packed weights and the reference twin of its
 * raw sums (ops/qgemm.h, inf__qdw_w).
 *
 * DESIGN: a depthwise conv is no GEMM (K = taps, one column per channel),
 * so it has its own product: channels are the vector lanes.  The driver
 * quantizes the image into zero-point-padded channels-last uint8 rows with
 * cp channels per position (cp = c rounded up to 16, padding channels
 * holding the zero point), exactly as for the implicit-GEMM path; the sum of
 * output position i, channel ch is
 *     C[i][ch] = init[ch] + sum_t rows[i][tapoff[t] + ch] * (w[t][ch] - w_zp[ch])
 * with init[ch] = -a_zp * wsum[ch] (wsum: the sum over taps of the shifted
 * weights), which equals sum_t (x - a_zp) * (w - w_zp) exactly in int32
 * (|255 * 255| * taps is far from int32's limit for taps <= 64).  Weights are
 * packed in tap pairs: w[tp][ch][2] int16 (tap 2tp, tap 2tp + 1; an odd last
 * tap paired with a zero weight), the order the AVX2 kernel
 * (x86/qdepthwise_avx2.c, vpmaddwd on interleaved tap pairs) reads; the
 * reference below reads the same array.  Both give the same int32 sums.
 */
#include <string.h>

#include "ops/qgemm.h"

static int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

size_t inf__qdw_pack_bytes(int64_t c, int64_t taps) {
    int64_t cp = round_up(c > 0 ? c : 1, INF_QDW_LANES), tp = (taps + 1) / 2;
    return (size_t)(tp * cp * 2 * 2 + cp * 4);
}

void inf__qdw_pack_into(void *mem, int64_t c, int64_t taps, const void *w, inf_dtype dtype, const void *w_zp,
                        int64_t n_wzp, inf__qdw_w *out) {
    int64_t cp = round_up(c > 0 ? c : 1, INF_QDW_LANES), tp = (taps + 1) / 2;
    memset(mem, 0, inf__qdw_pack_bytes(c, taps));
    *out = (inf__qdw_w){.c = c, .taps = taps, .cp = cp, .w = mem};
    out->wsum = (int32_t *)((int16_t *)mem + tp * cp * 2);
    for (int64_t ch = 0; ch < c; ch++) {
        int32_t zp = 0, sum = 0;
        if (w_zp) {
            int64_t at = n_wzp == 1 ? 0 : ch;
            zp = dtype == INF_DTYPE_U8 ? ((const uint8_t *)w_zp)[at] : ((const int8_t *)w_zp)[at];
        }
        for (int64_t t = 0; t < taps; t++) {
            int64_t at = ch * taps + t; /* W [c][1][kh][kw] */
            int32_t v = (dtype == INF_DTYPE_U8 ? ((const uint8_t *)w)[at] : ((const int8_t *)w)[at]) - zp;
            out->w[((t / 2) * cp + ch) * 2 + t % 2] = (int16_t)v;
            sum += v;
        }
        out->wsum[ch] = sum;
    }
}

inf_status inf__qdw_pack(inf__arena *arena, int64_t c, int64_t taps, const void *w, inf_dtype dtype, const void *w_zp,
                         int64_t n_wzp, inf__qdw_w *out) {
    size_t bytes = inf__qdw_pack_bytes(c, taps);
    char *raw = inf__arena_alloc(arena, bytes + 64);
    if (!raw) return INF_ENOMEM;
    inf__qdw_pack_into(raw + (64 - (uintptr_t)raw % 64) % 64, c, taps, w, dtype, w_zp, n_wzp, out);
    return INF_OK;
}

void inf__qdw_raw_ref(const inf__qdw_w *w, int64_t m, const uint8_t *const *rows, const int64_t *tapoff,
                      const int32_t *init, int32_t *c, int64_t ldc) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t ch = 0; ch < w->cp; ch++) {
            int32_t acc = init[ch];
            for (int64_t t = 0; t < w->taps; t++)
                acc += (int32_t)rows[i][tapoff[t] + ch] * w->w[((t / 2) * w->cp + ch) * 2 + t % 2];
            c[i * ldc + ch] = acc;
        }
}
