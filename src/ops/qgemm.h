/*
 * qgemm.h -- the 8-bit integer GEMM behind the INT8 kernels (MatMulInteger,
 * QLinearMatMul, ConvInteger, QLinearConv and the fused QDQ ops QGemm and
 * QConv), its packed weights, and the drivers that feed it.
 *
 * DESIGN: one product, C[i][j] = sum_k (A[i][k] - a_zp) * (B[k][j] - b_zp[j]),
 * with A unsigned 8-bit activations (rows, K zero-padded to the packing's
 * k group) and B signed 8-bit weights packed once at load.  Any operand mix
 * maps onto it exactly: an int8 A is A + 128 with a_zp + 128, a uint8 B is
 * B - 128 with b_zp - 128 -- the differences (A - a_zp), (B - b_zp) are the
 * same integers.  Zero points are applied after the raw sum:
 *     C = sum A*B - a_zp * colsum(B)[j] - b_zp[j] * rowsum(A)[i] + K * a_zp * b_zp[j]
 * in int32 (wrapping, as the reference's int64 sum wraps to int32).
 *
 * Four kernels of the raw sum, chosen at run time from CPUID
 * (inf__qgemm_best_isa; INFERA_CPU=avx2|generic forces a lower one):
 *   INF_QGEMM_VNNI512  AVX-512 VNNI vpdpbusd: u8 x s8 quads summed straight
 *                      into int32 lanes -- no intermediate saturation at all.
 *   INF_QGEMM_AVX2     AVX2 vpmaddwd on 16-bit operands (A zero-extended, B
 *                      packed as int16 pairs): exact for any weights.
 *                      vpmaddubsw (u8 x s8 -> saturating int16 pair sums) is
 *                      not used: 255 * 127 * 2 overflows int16, which ONNX
 *                      Runtime's MLAS accepts (its quantizer offers
 *                      reduce_range: 7-bit weights) and oneDNN avoids by
 *                      scaling weights; and it needs a second multiply
 *                      (vpmaddwd by ones) to reach int32, so per multiply
 *                      uop it does no more products than vpmaddwd.
 *   INF_QGEMM_AVXVNNI  AVX-VNNI (VEX) vpdpbusd on 256 bits: VNNI512's scheme
 *                      at half the width, for CPUs with AVX-VNNI but no
 *                      AVX-512 (and the avx2 path of CPUs with both).
 *   INF_QGEMM_AVX2_UBS AVX2 vpmaddubsw + vpmaddwd by ones (x86/qgemm_maddubs_avx2.c),
 *                      AVX-VNNI's packing: chosen (inf__qgemm_pack_isa) in
 *                      place of INF_QGEMM_AVX2 when every packed pair of B has
 *                      |b0| + |b1| <= 128 (7-bit weights, --reduce-range),
 *                      where the int16 pair sums cannot saturate.
 *                      INFERA_QGEMM=avx2-maddwd keeps vpmaddwd for all B.
 *                      Routed ("ubs2", x86/qgemm_ubs2_avx2.c): the packer also
 *                      sorts each 16-column tile's 8-K groups (two quads) by
 *                      whether each of its two panels may add its two
 *                      vpmaddubsw results in int16 before the one vpmaddwd by
 *                      ones (every int16 slot's four weights: positive sum
 *                      <= 128, negative sum >= -128, so 255 x either fits
 *                      int16), 3 multiplies per 64 products instead of 4;
 *                      the other groups take the step above.
 *                      INFERA_QGEMM=avx2-ubs packs no routes (ubs alone).
 *   INF_QGEMM_REF      plain C over the same math: the reference twin.
 * All five give bit-identical int32 results (tests/kernels/test_qgemm.c).
 *
 * Packed B (inf__qgemm_b): panels of `panel` columns (VNNI512 16, AVX-VNNI,
 * AVX2 and AVX2_UBS 8, ref 1); in a panel, K in groups of kgroup (4, 4, 2,
 * 4, 1), each
 * group holding every column's kgroup values (int8 for VNNI, AVX2_UBS and
 * ref, int16 for AVX2).  K and N
 * are zero-padded to whole groups and panels; colsum and b_zp (per column,
 * after the u8 shift) come with it.  C buffers have ldc >= np (the padded N).
 */
#ifndef INF_OPS_QGEMM_H
#define INF_OPS_QGEMM_H

#include "ops/ops.h"

typedef enum inf__qgemm_isa {
    INF_QGEMM_REF = 0,
    INF_QGEMM_AVX2,
    INF_QGEMM_VNNI512,
    INF_QGEMM_AVXVNNI,
    INF_QGEMM_AVX2_UBS, /* never chosen by inf__qgemm_best_isa: the packer's pick for pair-safe B on AVX2 */
} inf__qgemm_isa;

/* The fastest kernel this CPU runs (cached; INFERA_CPU lowers it). */
inf__qgemm_isa inf__qgemm_best_isa(void);
const char *inf__qgemm_isa_name(inf__qgemm_isa isa);

typedef struct inf__qgemm_b {
    inf__qgemm_isa isa;
    int64_t k, n;        /* logical shape of B */
    int64_t kp, np;      /* padded: kp a multiple of kgroup (and of 4), np of the panel width */
    int panel, kgroup;
    void *data;          /* np / panel panels of kp * panel values */
    int32_t *colsum;     /* [np] sum_k B'[k][j] */
    int32_t *b_zp;       /* [np] zero point of column j after the u8 shift */
    bool any_b_zp;       /* some b_zp[j] != 0: the row sums of A are needed */
    const int32_t *route; /* INF_QGEMM_AVX2_UBS: per 16-column tile (panels 2t, 2t + 1; the last may be
                           * one panel) INF_QGEMM_ROUTE_HDR + kp / 8 values: the counts of its 8-K groups
                           * routed ubs2 / ubs2 (both panels), ubs2 / ubs, ubs / ubs2, ubs / ubs, then the
                           * group indices in that order (a lone panel: first and last class only); NULL:
                           * every group by ubs (INFERA_QGEMM=avx2-ubs, or kp past INF_QGEMM_ROUTE_MAX_KP:
                           * the convolution's offset table).  A trailing quad (kp % 8 == 4) always by ubs. */
} inf__qgemm_b;

enum { INF_QGEMM_ROUTE_HDR = 4, INF_QGEMM_ROUTE_MAX_KP = 8192 };

/* The kernel to pack B (as inf__qgemm_pack_b reads it) for, given the
 * best one: INF_QGEMM_AVX2_UBS in place of INF_QGEMM_AVX2 when B is
 * pair-safe (see the isa list above), else isa.  Load-time packers call it
 * once per weight (a convolution once for all its groups). */
inf__qgemm_isa inf__qgemm_pack_isa(inf__qgemm_isa isa, int64_t k, int64_t n, const void *b, inf_dtype dtype,
                                   int64_t ldb, bool trans);
/* Packs B [k, n] (row j of column... : element (kk, j) at b[kk * ldb + j], or
 * at b[j * ldb + kk] when trans) of dtype uint8 or int8 for isa, with zero
 * points b_zp (NULL: 0; n_bzp 1 = per tensor, n = per column) of the same
 * dtype, into arena memory.  INF_ENOMEM when the arena cannot grow. */
inf_status inf__qgemm_pack_b(inf__arena *arena, inf__qgemm_isa isa, int64_t k, int64_t n, const void *b,
                             inf_dtype dtype, int64_t ldb, bool trans, const void *b_zp, int64_t n_bzp,
                             inf__qgemm_b *out);
/* The same into caller memory (for B known only at run time): the bytes
 * inf__qgemm_pack_b_bytes says, 64-byte aligned. */
size_t inf__qgemm_pack_b_bytes(inf__qgemm_isa isa, int64_t k, int64_t n);
void inf__qgemm_pack_b_into(void *mem, inf__qgemm_isa isa, int64_t k, int64_t n, const void *b, inf_dtype dtype,
                            int64_t ldb, bool trans, const void *b_zp, int64_t n_bzp, inf__qgemm_b *out);

/* C[i][j] for rows [0, m) of A (uint8, row stride lda >= b->kp, columns
 * k .. kp-1 zero): the exact zero-point-corrected int32 sums, all np
 * columns (the padded ones hold garbage-free zeros minus corrections).
 * Single-threaded; callers split rows. */
void inf__qgemm_rows(const inf__qgemm_b *b, int64_t m, const uint8_t *a, int64_t lda, int32_t a_zp, int32_t *c,
                     int64_t ldc);

/* The raw sums of b's kernel (the ones below, by b->isa), for callers that
 * apply the zero points themselves (ops/ref/qattention.c) and pack B with
 * inf__qgemm_pack_column / _kgroup in the layout inf__qgemm_layout gives:
 * panels of `panel` columns, in a panel K in groups of kgroup, value (k, j)
 * at element (j / panel) * kp * panel + (k / kgroup) * panel * kgroup +
 * (j % panel) * kgroup + k % kgroup, of elem bytes (B - 128 as int8, or
 * int16 for elem 2), zero in the padding. */
void inf__qgemm_raw(const inf__qgemm_b *b, int64_t m, const uint8_t *a, int64_t lda, const int32_t *init, int32_t *c,
                    int64_t ldc);
void inf__qgemm_layout(inf__qgemm_isa isa, int *panel, int *kgroup, int *elem);
/* The one writer of that layout (inf__qgemm_pack_b_into and QAttention's
 * run-time K / V packer call it): uint8 bytes q (operand values + 128,
 * stored as q - 128) into b's data (b->isa, kp, panel, kgroup and data
 * set), whole K groups, k0 a multiple of kgroup.  _column: n groups of
 * column j from K row k0 on, value (k0 + i, j) = q[i], i < n * kgroup.
 * _kgroup: K group k0 of columns j .. j + n - 1, value (k0 + e, j + c) =
 * q[e * ld + c]. */
void inf__qgemm_pack_column(const inf__qgemm_b *b, int64_t k0, int64_t j, int64_t n, const uint8_t *q);
void inf__qgemm_pack_kgroup(const inf__qgemm_b *b, int64_t k0, int64_t j, int64_t n, const uint8_t *q, int64_t ld);

/* The raw sums (no zero points) of each kernel, plus init[j] (a per-column
 * start value, e.g. the folded -a_zp * colsum[j]; NULL = 0), for
 * inf__qgemm_rows.  x86-64 only for the last two, and only on CPUs with
 * the instructions (inf__qgemm_best_isa). */
void inf__qgemm_raw_ref(const inf__qgemm_b *b, int64_t m, const uint8_t *a, int64_t lda, const int32_t *init,
                        int32_t *c, int64_t ldc);
void inf__qgemm_raw_avx2(const inf__qgemm_b *b, int64_t m, const uint8_t *a, int64_t lda, const int32_t *init,
                         int32_t *c, int64_t ldc);
void inf__qgemm_raw_vnni512(const inf__qgemm_b *b, int64_t m, const uint8_t *a, int64_t lda, const int32_t *init,
                            int32_t *c, int64_t ldc);
void inf__qgemm_raw_avxvnni(const inf__qgemm_b *b, int64_t m, const uint8_t *a, int64_t lda, const int32_t *init,
                            int32_t *c, int64_t ldc); /* x86/qgemm_avxvnni.c */
void inf__qgemm_raw_avx2ubs(const inf__qgemm_b *b, int64_t m, const uint8_t *a, int64_t lda, const int32_t *init,
                            int32_t *c, int64_t ldc); /* x86/qgemm_ubs2_avx2.c: b->route's, else ubs's */
/* ubs alone (x86/qgemm_maddubs_avx2.c), whatever b->route says. */
void inf__qgemm_raw_avx2ubs1(const inf__qgemm_b *b, int64_t m, const uint8_t *a, int64_t lda, const int32_t *init,
                             int32_t *c, int64_t ldc);

/* The raw sums of a convolution block read in place (implicit GEMM,
 * x86/qconv_vnni_avx512.c; VNNI packing, no W zero point, K = taps * cq with
 * cq a multiple of 4): C[i][j] = init[j] + sum over taps t and channels k < cq
 * of rows[i][tapoff[t] + k] * B[t * cq + k][j], for the m positions whose
 * first tap starts at rows[i]. */
void inf__qconv_raw_vnni512(const inf__qgemm_b *b, int64_t m, const uint8_t *const *rows, const int64_t *tapoff,
                            int64_t ntaps, int64_t cq, const int32_t *init, int32_t *c, int64_t ldc);
/* The same pooled by a fused 2 x 2 MaxPool: row w of c = the lane-wise max of the sums of the 4 positions
 * rows[4 w .. 4 w + 3], for w < nwin (x86/qconv_vnni_avx512.c). */
void inf__qconv_pool4_vnni512(const inf__qgemm_b *b, int64_t nwin, const uint8_t *const *rows, const int64_t *tapoff,
                              int64_t ntaps, int64_t cq, const int32_t *init, int32_t *c, int64_t ldc);
/* Its AVX2 `vpmaddwd` form (x86/qconv_pool_avx2.c): rows of the image widened to uint16 (inf__qconv_raw_avx2's A). */
void inf__qconv_pool4_avx2(const inf__qgemm_b *b, int64_t nwin, const uint16_t *const *rows, const int64_t *tapoff,
                           int64_t ntaps, int64_t cq, const int32_t *init, int32_t *c, int64_t ldc);
/* Its form for pair-safe weights (x86/qconv_pool_ubs_avx2.c): the routed vpmaddubsw kernel of
 * inf__qconv_raw_avx2ubs, A the uint8 image in place; only where ..._fits (a route, ntaps * cq == kp). */
bool inf__qconv_pool4_avx2ubs_fits(const inf__qgemm_b *b, int64_t ntaps, int64_t cq);
void inf__qconv_pool4_avx2ubs(const inf__qgemm_b *b, int64_t nwin, const uint8_t *const *rows, const int64_t *tapoff,
                              int64_t ntaps, int64_t cq, const int32_t *init, int32_t *c, int64_t ldc);
/* The RGB stem on that kernel (3 x 3 kernel, 3 channels, stride and dilation 1 along x, the image in 4-byte
 * channels-last positions, row stride rowb): W packed densely (K = 28: the 27 weights in the order order[] says,
 * and one zero), and each position copied into a 28-byte row in that order, so the kernel multiplies 7 quads per
 * position instead of the 9 of the padded channels.  order[k] is the dense index ky * 9 + kx * 3 + channel of row
 * byte k, or 27 for the 0; the packer (ops/ref/quantize_conv.c) picks it to make more of the route's groups
 * ubs2-safe.  masks: the AVX2 form's vpshufb masks (inf__qconv_rgb_masks). */
enum { INF_QCONV_RGB_ROW = 28 };
typedef struct inf__qconv_rgb {
    inf__qgemm_b b;
    uint8_t order[INF_QCONV_RGB_ROW];
    int8_t masks[6][32]; /* kernel row r into the row's bytes 0-15 (masks[2 r]) and 16-27 (masks[2 r + 1]) */
} inf__qconv_rgb;
void inf__qconv_rgb_masks(inf__qconv_rgb *r);
/* Pair i is the two positions first[i] and first[i] + 4, made rows at dst + 56 i; dst holds 56 npairs + 4 bytes
 * (the AVX2 form stores 16 bytes at a time).  Reference twin (ops/ref/qconv_rgb.c) and AVX2 form
 * (x86/qconv_pool_ubs_avx2.c): the same bytes. */
void inf__qconv_rgb_pairs_ref(const inf__qconv_rgb *r, const uint8_t *const *first, int64_t npairs, int64_t rowb,
                              uint8_t *dst);
void inf__qconv_rgb_pairs_avx2(const inf__qconv_rgb *r, const uint8_t *const *first, int64_t npairs, int64_t rowb,
                               uint8_t *dst);
/* The same with AVX-VNNI (x86/qgemm_avxvnni.c; its packing: panels of 8). */
void inf__qconv_raw_avxvnni(const inf__qgemm_b *b, int64_t m, const uint8_t *const *rows, const int64_t *tapoff,
                            int64_t ntaps, int64_t cq, const int32_t *init, int32_t *c, int64_t ldc);
/* The same with vpmaddubsw for pair-safe B (AVX-VNNI's packing): routed by b->route
 * (x86/qgemm_ubs2_avx2.c), or ubs alone (..._avx2ubs1, x86/qgemm_maddubs_avx2.c). */
void inf__qconv_raw_avx2ubs(const inf__qgemm_b *b, int64_t m, const uint8_t *const *rows, const int64_t *tapoff,
                            int64_t ntaps, int64_t cq, const int32_t *init, int32_t *c, int64_t ldc);
void inf__qconv_raw_avx2ubs1(const inf__qgemm_b *b, int64_t m, const uint8_t *const *rows, const int64_t *tapoff,
                             int64_t ntaps, int64_t cq, const int32_t *init, int32_t *c, int64_t ldc);
/* The same on AVX2 (x86/qgemm_avx2.c; AVX2 packing, no W zero point, cq
 * even): the image read as zero-extended uint16 values (inf__widen_u8_avx2),
 * rows and tapoff in uint16 elements. */
void inf__qconv_raw_avx2(const inf__qgemm_b *b, int64_t m, const uint16_t *const *rows, const int64_t *tapoff,
                         int64_t ntaps, int64_t cq, const int32_t *init, int32_t *c, int64_t ldc);
void inf__widen_u8_avx2(const uint8_t *src, int64_t n, uint16_t *dst);

/* ---- quantizing activations (QuantizeLinear's arithmetic, bit for bit):
 * q = clamp(nearbyintf(x / scale) + zp, 0, 255), NaN -> zp; into uint8. */
void inf__quantize_u8_ref(const float *x, int64_t n, float scale, int32_t zp, uint8_t *q);
void inf__quantize_u8_avx2(const float *x, int64_t n, float scale, int32_t zp, uint8_t *q);
void inf__quantize_u8_avx512(const float *x, int64_t n, float scale, int32_t zp, uint8_t *q); /* x86/qstore_avx512.c */
void inf__quantize_u8(const float *x, int64_t n, float scale, int32_t zp, uint8_t *q); /* dispatches */
/* GELU then QuantizeLinear into uint8: q = the bytes above of gelu(x), gelu one of the vmath
 * tables' GELU (ops/vmath.h), computed 64 values at a time into a buffer (ref/qgemm.c). */
void inf__gelu_quantize_u8_ref(const float *x, int64_t n, float scale, int32_t zp, uint8_t *q,
                               void (*gelu)(const float *x, float *y, int64_t n));
/* The same with gelu = inf__vmath_avx2.gelu, bit for bit (x86/qgelu_avx2.c): a cheap GELU within
 * INF_GELU_Q_ERR of that one's floats for every float x, the exact one where the byte is in doubt. */
#define INF_GELU_Q_ERR 2.5e-6
void inf__gelu_quantize_u8_avx2(const float *x, int64_t n, float scale, int32_t zp, uint8_t *q);
void inf__gelu_approx_avx2(const float *x, float *y, int64_t n); /* the cheap GELU, n % 8 == 0 (tests) */
/* n positions of c <= 4 float planes (x + k * plane) into 4-byte channels-last positions of q, channels
 * c..3 = zp (x86/qstore_avx512.c: a stem's input) */
void inf__quantize_planes4_u8_avx512(const float *x, int64_t plane, int64_t c, int64_t n, float scale, int32_t zp,
                                     uint8_t *q);
void inf__quantize_planes4_u8_avx2(const float *x, int64_t plane, int64_t c, int64_t n, float scale, int32_t zp,
                                   uint8_t *q); /* the same on AVX2 (x86/qquant_planes_avx2.c) */
/* dst[c * ld + r] = src[r * ls + c] for r < rows, c < cols (bytes; 16 x 16
 * SSE2 blocks, x86-64): channel planes into channels-last rows. */
void inf__transpose_u8_avx2(const uint8_t *src, int64_t ls, int64_t rows, int64_t cols, uint8_t *dst, int64_t ld);
/* The fused MaxPool's vector helpers (x86-64): m[j] = v[j] > m[j] ? v[j] : m[j];
 * and the float transpose dst[c * ld + r] = src[r * ls + c]. */
void inf__max_f32_avx2(float *m, const float *v, int64_t n);
/* y[i] = act(y[i] + r[i]) (act NULL: none), the fused residual Add. */
void inf__add_act_f32_avx2(float *y, const float *r, int64_t n, const inf__epilogue *act);
void inf__max_i32_avx2(int32_t *m, const int32_t *v, int64_t n);
void inf__transpose_f32_avx2(const float *src, int64_t ls, int64_t rows, int64_t cols, float *dst, int64_t ld);
/* min and max of x (NaN ignored), for DynamicQuantizeLinear */
void inf__minmax_f32_ref(const float *x, int64_t n, float *lo, float *hi);
void inf__minmax_f32_avx2(const float *x, int64_t n, float *lo, float *hi);
void inf__minmax_f32_avx512(const float *x, int64_t n, float *lo, float *hi); /* x86/qstore_avx512.c */

/* ---- drivers (ops/ref/qgemm_drive.c) ---- */

/* What becomes of the int32 sums: stored as int32 (ConvInteger,
 * MatMulInteger), requantized to 8 bits (QLinear*: v = (float)(acc + bias_i32)
 * * mult[j], rounded half to even, + y_zp, saturated), or scaled to float
 * (QGemm/QConv: (float)acc * mult[j] + bias_f32[j], then act). */
typedef enum { INF_QOUT_I32, INF_QOUT_Q8, INF_QOUT_F32, INF_QOUT_F32_U8 } inf__qout_kind;
/* INF_QOUT_F32_U8 (convolutions): F32's value (scale, bias, act) then
 * QuantizeLinear(rq_scale, rq_zp) into uint8, channels last [n][oh][ow][m]:
 * the bytes the next quantized conv would make of the F32 output -- the
 * activation stays 8-bit between the two (graph/passes/qdq_chain.c). */
typedef struct inf__qout {
    inf__qout_kind kind;
    const float *mult;        /* [n] (or [1] with mult_per_col false) */
    bool mult_per_col;
    const int32_t *bias_i32;  /* [n] or NULL (QLinearConv) */
    const float *bias_f32;    /* [n] or NULL */
    inf_dtype y_dtype;        /* Q8: uint8 or int8 */
    int32_t y_zp;
    const inf__epilogue *act; /* F32: applied after the bias, or NULL */
    bool requant;             /* F32: then DequantizeLinear(QuantizeLinear(v, rq_scale, rq_zp)) */
    float rq_scale;
    int32_t rq_zp;
    inf_dtype rq_dtype;       /* uint8 or int8 */
    void (*row_act)(const float *x, float *y, int64_t n); /* F32, matrix products: over each finished row (GELU) */
    const float *residual;      /* F32 convolutions without a pool and F32 matrix products without a row_act:
                                 * y = act(value + residual), value after the requant if any, residual laid
                                 * out as y (graph/passes/qdq_chain.c); F32_U8
                                 * convolutions: the same planes, y = Q(act(pre's value + residual)) */
    const uint8_t *residual_u8; /* F32_U8 convolutions without a pool: the residual as uint8 channels last
                                 * (y's layout), worth (q - res_zp) * res_scale (DequantizeLinear) */
    float res_scale;
    int32_t res_zp;
    const struct inf__qout *pre; /* F32_U8 with a residual: the F32 store (kind F32, its requant, no
                                  * activation) of the value before the Add; act and rq_* apply after it */
} inf__qout;

/* The activation operand: 8-bit rows (dtype uint8/int8, row stride ld) or
 * float32 rows quantized on the way in with (scale, zp) (zp of dtype q_dtype). */
typedef struct inf__qsrc {
    const void *data;
    inf_dtype dtype;          /* uint8, int8 or float32 */
    int64_t ld;
    float scale;              /* float32 only */
    int32_t zp;               /* the zero point as given (int8 or uint8 range) */
    inf_dtype q_dtype;        /* float32 only: the dtype the QuantizeLinear produced */
    bool nhwc;                /* convolutions, uint8 only: x is channels last [n][ih][iw][c] */
} inf__qsrc;

/* The float32 store (INF_QOUT_F32) of C values 8 at a time, the same
 * operations as the scalar store in ops/ref/qgemm_drive.c (AVX2, x86-64):
 * a row: n columns from column j0, c contiguous, into y[0..n);
 * a column: `rows` values at stride ldc from c (the column's first), scaled
 * and biased as column (channel) j, into y[0..rows). */
void inf__qstore_f32_row_avx2(const inf__qout *o, const int32_t *c, int64_t j0, int64_t n, float *y);
void inf__qstore_f32_row_avx512(const inf__qout *o, const int32_t *c, int64_t j0, int64_t n, float *y);
void inf__qstore_f32_col_avx2(const inf__qout *o, const int32_t *c, int64_t ldc, int64_t rows, int64_t j, float *y);
/* INF_QOUT_F32_U8's store of a row: n columns from column j0 into y[0..n). */
void inf__qstore_u8_row_avx2(const inf__qout *o, const int32_t *c, int64_t j0, int64_t n, uint8_t *y);
void inf__qstore_u8_row_avx512(const inf__qout *o, const int32_t *c, int64_t j0, int64_t n, uint8_t *y);
/* INF_QOUT_Q8's store of a row without bias_i32 (QLinearMatMul): n columns from column j0 into y's n bytes. */
void inf__qstore_q8_row_avx2(const inf__qout *o, const int32_t *c, int64_t j0, int64_t n, void *y);
void inf__qstore_q8_row_avx512(const inf__qout *o, const int32_t *c, int64_t j0, int64_t n, void *y);
/* The fused MaxPool of a pooled row's int32 sums in place: window px (kernel pkh x pkw, stride psw, positions
 * np apart, ow a row) into position px, for px < pw. */
void inf__pool_max_i32_avx512(int32_t *c, int64_t np, int64_t n, int64_t ow, int64_t pkh, int64_t pkw, int64_t psw,
                              int64_t pw);
/* The same over rows rows of sums (ldc apart) into rows of bytes (ldy apart). */
void inf__qstore_u8_rows_avx512(const inf__qout *o, const int32_t *c, int64_t ldc, int64_t rows, int64_t j0, int64_t n,
                                uint8_t *y, int64_t ldy);
/* INF_QOUT_F32_U8 with a uint8 residual r (o->pre, o->residual_u8's rows): Q(act(pre's value + DQ(r))),
 * rows rows of sums ldc apart, residual and output rows ldy bytes apart. */
void inf__qstore_u8_res_rows_avx512(const inf__qout *o, const int32_t *c, int64_t ldc, int64_t rows, int64_t j0,
                                    int64_t n, const uint8_t *r, const inf__epilogue *act, uint8_t *y, int64_t ldy);
/* Its AVX2 form (x86/qstore_res_avx2.c): false (nothing stored) unless no value can be NaN or infinite, pre has
 * no activation of its own, act is none or Relu and n is a multiple of 8. */
bool inf__qstore_u8_res_rows_avx2(const inf__qout *o, const int32_t *c, int64_t ldc, int64_t rows, int64_t j0,
                                  int64_t n, const uint8_t *r, const inf__epilogue *act, uint8_t *y, int64_t ldy);
/* The plain uint8 block store on AVX2 (INF_QOUT_F32_U8 without pre; x86/qstore_res_avx2.c): rows rows of sums
 * (ldc apart) into rows of bytes (ldy apart), the bytes of inf__qstore_u8_row_avx2; false (nothing stored) unless
 * no value can be NaN (multipliers, biases and the activation's parameters within 2^64, the scale finite and > 0,
 * the zero point in [0, 255]) and n is a multiple of 8. */
bool inf__qstore_u8_rows_avx2(const inf__qout *o, const int32_t *c, int64_t ldc, int64_t rows, int64_t j0, int64_t n,
                              uint8_t *y, int64_t ldy);
/* A whole C block of `rows` rows (positions) x n columns (channels j0..)
 * transposed into channel planes: y[j * ldy + p] (8 x 8 transposes). */
void inf__qstore_f32_block_t_avx2(const inf__qout *o, const int32_t *c, int64_t ldc, int64_t rows, int64_t j0,
                                  int64_t n, float *y, int64_t ldy);

/* Y[i][j] (row stride ldy elements) = out(C[i][j]) for the m rows of a times
 * packed b, rows split over pool's threads.  scratch: inf__qmatmul_scratch_bytes. */
size_t inf__qmatmul_scratch_bytes(const inf__qgemm_b *b, int64_t m);
void inf__qmatmul_drive(inf__pool *pool, const inf__qgemm_b *b, int64_t m, const inf__qsrc *a, const inf__qout *out,
                        void *y, int64_t ldy, void *scratch);

/* ---- depthwise convolutions (ops/ref/qdepthwise.c): group == c == m ----
 * W packed at load as tap pairs of shifted weights (w - w_zp) for channels
 * as vector lanes; the driver reads the zero-point-padded channels-last
 * image in place (cp channels per position).  C[i][ch] = init[ch] +
 * sum_t rows[i][tapoff[t] + ch] * w'[t][ch]; init[ch] = -a_zp * wsum[ch]. */
enum { INF_QDW_LANES = 16 };
typedef struct inf__qdw_w {
    int64_t c, taps, cp; /* cp: c rounded up to INF_QDW_LANES */
    int16_t *w;          /* [(taps + 1) / 2][cp][2] */
    int32_t *wsum;       /* [cp] */
} inf__qdw_w;
size_t inf__qdw_pack_bytes(int64_t c, int64_t taps);
/* W [c][1][taps] of dtype uint8/int8, zero points w_zp (NULL: 0; n_wzp 1 or c). */
void inf__qdw_pack_into(void *mem, int64_t c, int64_t taps, const void *w, inf_dtype dtype, const void *w_zp,
                        int64_t n_wzp, inf__qdw_w *out);
inf_status inf__qdw_pack(inf__arena *arena, int64_t c, int64_t taps, const void *w, inf_dtype dtype, const void *w_zp,
                         int64_t n_wzp, inf__qdw_w *out);
/* The sums of m positions (cp channels each, row stride ldc): the reference
 * twin, the AVX2 kernel (x86/qdepthwise_avx2.c) and the AVX-512 VNNI one
 * (x86/qdepthwise_avx512.c, vpdpwssd), bit-identical. */
void inf__qdw_raw_ref(const inf__qdw_w *w, int64_t m, const uint8_t *const *rows, const int64_t *tapoff,
                      const int32_t *init, int32_t *c, int64_t ldc);
void inf__qdw_raw_avx2(const inf__qdw_w *w, int64_t m, const uint8_t *const *rows, const int64_t *tapoff,
                       const int32_t *init, int32_t *c, int64_t ldc);
void inf__qdw_raw_vnni512(const inf__qdw_w *w, int64_t m, const uint8_t *const *rows, const int64_t *tapoff,
                          const int32_t *init, int32_t *c, int64_t ldc);

/* ---- INT8 Winograd F(4x4, 3x3) and F(2x2, 3x3) (ops/ref/qwinograd.c, x86/qwinograd_avx2.c) ----
 * A 3x3, stride-1, undilated, single-group conv without W zero point, in
 * exact integer arithmetic (t = 4 or 2 outputs a side, input tiles of
 * a = t + 2, a * a points): d = x - a_zp per input tile; V = B^T d B in
 * int16 (|V| <= 100 * 255 = 25500 for t = 4, 4 * 255 for t = 2);
 * U = Gi g Gi^T with an integer Gi (F(4x4): G = D Gi, D's fractions moved
 * to the output side, and part of their scale, 24 D = Eu Ea, back onto U:
 * U = Eu Gi g Gi^T Eu; F(2x2): Gi = 2G), |U| <= 144 * 128 resp. 9 * 128,
 * int16, transformed once at load; M = sum over channels of U .* V (a * a
 * int16 GEMMs, vpmaddwd: exact int32 pair sums, channel sums wrapping as
 * the direct kernel's); Y = A'^T M A' = s * the direct sum (mod 2^32), with
 * s = 576 = 64 * 9 (F(4x4)) or 4: the odd factor is undone by its inverse
 * mod 2^32, the power of two by an exact shift when s * sum fits int32 --
 * inf__qwino_exact's test on W (64 resp. 4 * 255 * sum|w| < 2^31 for every
 * output channel).  Multiplies per output and input channel: 2.25 (t = 4)
 * or 4 (t = 2) instead of 9. */
enum { INF_QWINO_MAX_PTS = 36 };
typedef struct inf__qwino_w {
    int tile, pts;                     /* t (4 or 2) and (t + 2)^2 points */
    int64_t c, m, cp;                  /* input / output channels; cp: c rounded up to 4 (each U's kp) */
    inf__qgemm_b u[INF_QWINO_MAX_PTS]; /* U at point xi as B [cp][m]: AVX2 packing (int16 pairs, panels of 8) */
} inf__qwino_w;
/* Is the integer Winograd with tile t exact for W [m][c][3][3] (int8, no zero point)? */
bool inf__qwino_exact(int tile, int64_t c, int64_t m, const int8_t *w);
/* May load-time packers use it (INFERA_QCONV=direct says no, =wino2 keeps
 * F(2x2): comparisons)?  The tile to use, or 0. */
int inf__qwino_tile(void);
size_t inf__qwino_pack_bytes(int tile, int64_t c, int64_t m);
void inf__qwino_pack_into(void *mem, int tile, int64_t c, int64_t m, const int8_t *w, inf__qwino_w *out);
inf_status inf__qwino_pack(inf__arena *arena, int tile, int64_t c, int64_t m, const int8_t *w, inf__qwino_w *out);
/* The input transform of trows x tw tiles (row-major) whose first tile's
 * top-left input position is x0 (uint8 channels last: rowb bytes between
 * image rows, cs between positions, c channels): tile i's point xi at
 * v[xi * ldxi + i * cp + ch], channels c .. cp-1 zero. */
void inf__qwino_in_ref(int tile, const uint8_t *x0, int64_t rowb, int64_t cs, int64_t c, int64_t cp, int32_t zp,
                       int64_t trows, int64_t tw, int16_t *v, int64_t ldxi);
void inf__qwino_in_avx2(int tile, const uint8_t *x0, int64_t rowb, int64_t cs, int64_t c, int64_t cp, int32_t zp,
                        int64_t trows, int64_t tw, int16_t *v, int64_t ldxi);
/* The output transform: M of tile i at point xi, column j at mm[xi * ldxi +
 * i * ldm + j] (ncols columns, a multiple of 8), into the sums of output
 * position (t r + a, t tx + b) of tile i = r * tw + tx, c[((t r + a) * ow +
 * t tx + b) * ldc + j], for rows t r + a < orows and columns t tx + b < ow
 * (the shift a floor division: exact on a Winograd's M). */
void inf__qwino_out_ref(int tile, const int32_t *mm, int64_t ldxi, int64_t ldm, int64_t trows, int64_t tw,
                        int64_t orows, int64_t ow, int64_t ncols, int32_t *c, int64_t ldc);
void inf__qwino_out_avx2(int tile, const int32_t *mm, int64_t ldxi, int64_t ldm, int64_t trows, int64_t tw,
                         int64_t orows, int64_t ow, int64_t ncols, int32_t *c, int64_t ldc);
/* M = V U at every point for n tiles (plain C: the twin of the AVX2 GEMM,
 * inf__qconv_raw_avx2 reading V's rows in place). */
void inf__qwino_gemm_ref(const inf__qwino_w *w, int64_t n, const int16_t *v, int64_t ldxi, int32_t *mm, int64_t ldmxi);

/* 1-D/2-D convolution, NCHW, W packed per group as B = W_g^T ([c/group*kh*kw, m/group]).
 * x is one image's planes at a time (inf__qsrc with ld unused). */
typedef struct inf__qconv_geom {
    int64_t n, c, m, group, cg, mg;
    int64_t ih, iw, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl;
    int64_t cgp; /* 0, or (group 1, VNNI / AVX2) W packed with cg padded to cgp, a multiple of 4 / 2, zero
                  * weights in the padding: K = taps * cgp, read in place (the implicit-GEMM path) */
    int64_t pkh, pkw, psh, psw; /* pkh > 0: a fused MaxPool (kernel, strides >= kernel, no padding) on the
                                 * F32 output, [n][m][(oh-pkh)/psh+1][(ow-pkw)/psw+1] */
    const inf__qdw_w *dwise;    /* a depthwise conv (group == c == m) with W packed for it, or NULL */
    const inf__qwino_w *wino;   /* a 3x3 stride-1 conv with W transformed for an INT8 Winograd, or NULL:
                                 * the driver takes it on the AVX2 kernels (no fused MaxPool) */
    const inf__qconv_rgb *rgb;  /* an RGB stem (3 channels, 3 x 3, cgp 4) on the AVX2 kernel for pair-safe
                                 * weights: W also packed densely for the pooled path's im2col rows
                                 * (inf__qconv_rgb_pairs_*), or NULL */
} inf__qconv_geom;
size_t inf__qconv_scratch_bytes(const inf__qconv_geom *g, const inf__qgemm_b *b);
void inf__qconv_drive(inf__pool *pool, const inf__qconv_geom *g, const inf__qgemm_b *bg, const inf__qsrc *x,
                      const inf__qout *out, void *y, void *scratch);

#endif /* INF_OPS_QGEMM_H */
