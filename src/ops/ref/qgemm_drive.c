/*
 * qgemm_drive.c -- feeding the integer GEMM (ops/qgemm.h): rows of 8-bit or
 * float activations in, int32 / requantized 8-bit / float results out, for
 * the matrix products and (through im2col) the convolutions.
 *
 * DESIGN: work is cut into blocks of ROWS_PER_BLOCK rows (output positions
 * for a convolution), spread over the pool's threads.  A block is finished
 * while it is in cache: its A rows are copied (8-bit, shifted to uint8) or
 * quantized (float32, QuantizeLinear's arithmetic) into the block's own
 * slice of the scratch, K zero-padded (a matrix product's uint8 rows that
 * need no padding are read in place); the GEMM writes the block's int32
 * sums into the next slice; the store turns them into the output.  A
 * matrix product runs CHUNK_ROWS rows at a time so the scratch stays small
 * at any batch; a convolution runs one image (and group) at a time, its
 * input first quantized (or shifted to uint8) into channels-last order, so
 * an im2col row is one contiguous copy of a group's channels per kernel tap
 * (K ordered (ky, kx, channel), W packed to match).  Padding positions of a convolution read
 * the input zero point, so they contribute (zp - zp) = 0 as in the
 * reference.
 * On AVX-512 VNNI, with a multiple of 4 channels per group (or a stem W
 * packed with zero-weight padding channels, inf__qconv_geom.cgp) and no W
 * zero point, the conv reads the zero-point-padded channels-last image in
 * place (x86/qconv_vnni_avx512.c, the implicit GEMM) instead of im2col rows.
 * Fused forms (graph/passes/qdq_chain.c): a uint8 channels-last input copied
 * as it is (inf__qsrc.nhwc), a uint8 channels-last output (INF_QOUT_F32_U8:
 * C's rows are the output's positions), a MaxPool over the conv rows of each
 * pooled row (conv_pool_rows), and a residual Add applied per block in cache.
 * The stores repeat the reference's arithmetic (ops/ref/quantize_matmul.c, quantize_conv.c): float
 * multiplier computed as a_scale * b_scale / y_scale, (float)acc * mult,
 * round half to even, + zero point, saturate; so QLinear* outputs are
 * bit-identical to the reference kernels'.
 */
#include <math.h>
#include <string.h>

#include "ops/qgemm.h"
#include "ops/vmath.h"

enum { ROWS_PER_BLOCK = 24, CHUNK_ROWS = 384 };

static int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

/* ---- stores ---- */

static inline float out_mult(const inf__qout *o, int64_t j) { return o->mult[o->mult_per_col ? j : 0]; }

static inline void store_q8(const inf__qout *o, void *y, int64_t at, float v) {
    float r = nearbyintf(v) + (float)o->y_zp;
    float lo = o->y_dtype == INF_DTYPE_U8 ? 0.0f : -128.0f, hi = o->y_dtype == INF_DTYPE_U8 ? 255.0f : 127.0f;
    r = r < lo ? lo : r > hi ? hi : r;
    if (r != r) r = (float)o->y_zp;
    if (o->y_dtype == INF_DTYPE_U8) ((uint8_t *)y)[at] = (uint8_t)r;
    else ((int8_t *)y)[at] = (int8_t)r;
}

static inline float act(const inf__epilogue *ep, float v) {
    if (!ep) return v;
    switch (ep->kind) {
    case INF_EPILOGUE_RELU: return v > 0 ? v : 0;
    case INF_EPILOGUE_LEAKY_RELU: return v < 0 ? ep->alpha * v : v;
    case INF_EPILOGUE_CLIP: return v < ep->lo ? ep->lo : v > ep->hi ? ep->hi : v;
    default: return v;
    }
}

/* QuantizeLinear then DequantizeLinear of v, as the two nodes compute them. */
static inline float fake_quant(const inf__qout *o, float v) {
    float r = nearbyintf(v / o->rq_scale) + (float)o->rq_zp;
    float lo = o->rq_dtype == INF_DTYPE_U8 ? 0.0f : -128.0f, hi = o->rq_dtype == INF_DTYPE_U8 ? 255.0f : 127.0f;
    r = r < lo ? lo : r > hi ? hi : r;
    if (r != r) r = (float)o->rq_zp;
    return (float)((int64_t)r - o->rq_zp) * o->rq_scale;
}

/* INF_QOUT_F32_U8: F32's value of sum c in column j, then QuantizeLinear. */
static inline uint8_t store_u8(const inf__qout *o, int32_t c, int64_t j) {
    float v = (float)c * out_mult(o, j);
    if (o->bias_f32) v += o->bias_f32[j];
    v = act(o->act, v);
    uint8_t q;
    inf__quantize_u8_ref(&v, 1, o->rq_scale, o->rq_zp, &q);
    return q;
}

#if defined(__x86_64__)
/* INF_QOUT_F32_U8's vector row store: 16 lanes on AVX-512 CPUs, else 8. */
static void qstore_u8_row(inf__qgemm_isa isa, const inf__qout *o, const int32_t *c, int64_t j0, int64_t n, uint8_t *y) {
    if (isa == INF_QGEMM_VNNI512) inf__qstore_u8_row_avx512(o, c, j0, n, y);
    else inf__qstore_u8_row_avx2(o, c, j0, n, y);
}

/* INF_QOUT_F32's vector row store, likewise. */
static void qstore_f32_row(inf__qgemm_isa isa, const inf__qout *o, const int32_t *c, int64_t j0, int64_t n, float *y) {
    if (isa == INF_QGEMM_VNNI512)
        inf__qstore_f32_row_avx512(o, c, j0, n, y);
    else
        inf__qstore_f32_row_avx2(o, c, j0, n, y);
}
#endif

/* Output element `at` from sum c of column (channel) j. */
static inline void store_one(const inf__qout *o, void *y, int64_t at, int32_t c, int64_t j) {
    switch (o->kind) {
    case INF_QOUT_I32: ((int32_t *)y)[at] = c; break;
    case INF_QOUT_Q8: {
        int64_t acc = (int64_t)c + (o->bias_i32 ? o->bias_i32[j] : 0);
        store_q8(o, y, at, (float)acc * out_mult(o, j));
        break;
    }
    default: {
        float v = (float)c * out_mult(o, j);
        if (o->bias_f32) v += o->bias_f32[j];
        v = act(o->act, v);
        if (o->requant) v = fake_quant(o, v);
        ((float *)y)[at] = v;
        break;
    }
    }
}

/* INF_QOUT_F32_U8 with a row GELU (a QGemm whose GELU output only the next
 * QGemm reads, graph/passes/qdq_chain.c): F32's value written over the
 * row's own sums (the float stores run in place), the GELU, then
 * QuantizeLinear into y -- the bytes the reader made of the float row.  On
 * the AVX2 vmath GELU one fused pass that skips the exact GELU where the
 * byte is certain (x86/qgelu_avx2.c). */
static void store_gelu_u8_row(const inf__qgemm_b *b, const inf__qout *o, int32_t *c, uint8_t *y) {
    inf__qout f = *o;
    f.kind = INF_QOUT_F32, f.requant = false, f.row_act = NULL;
    float *v = (float *)c;
#if defined(__x86_64__)
    if (b->isa != INF_QGEMM_REF) {
        qstore_f32_row(b->isa, &f, c, 0, b->n, v);
        if (o->row_act == inf__vmath_avx2.gelu) {
            inf__gelu_quantize_u8_avx2(v, b->n, o->rq_scale, o->rq_zp, y);
        } else {
            o->row_act(v, v, b->n);
            inf__quantize_u8(v, b->n, o->rq_scale, o->rq_zp, y);
        }
        return;
    }
#endif
    for (int64_t j = 0; j < b->n; j++)
        store_one(&f, v, j, c[j], j);
    inf__gelu_quantize_u8_ref(v, b->n, o->rq_scale, o->rq_zp, y, o->row_act);
}

/* The AVX2 float store when the GEMM has a fast kernel (the reference ISA
 * keeps the scalar store: the twin the tests compare against). */
static bool vector_store(const inf__qgemm_b *b, const inf__qout *out) {
    return b->isa != INF_QGEMM_REF && out->kind == INF_QOUT_F32;
}

/* ---- the A operand ---- */

static int32_t a_zero_point(const inf__qsrc *a) {
    inf_dtype q = a->dtype == INF_DTYPE_F32 ? a->q_dtype : a->dtype;
    return a->zp + (q == INF_DTYPE_I8 ? 128 : 0);
}

/* n values of a row of a as uint8 into dst, then zeros up to padded. */
static void load_row(const inf__qsrc *a, const void *src, int64_t n, int64_t padded, uint8_t *dst) {
    if (a->dtype == INF_DTYPE_F32) {
        inf__quantize_u8(src, n, a->scale, a_zero_point(a), dst);
    } else if (a->dtype == INF_DTYPE_U8) {
        memcpy(dst, src, (size_t)n);
    } else {
        for (int64_t k = 0; k < n; k++) dst[k] = (uint8_t)(((const int8_t *)src)[k] + 128);
    }
    memset(dst + n, 0, (size_t)(padded - n));
}

/* ---- matrix products ---- */

size_t inf__qmatmul_scratch_bytes(const inf__qgemm_b *b, int64_t m) {
    int64_t rows = m < CHUNK_ROWS ? m : CHUNK_ROWS;
    return (size_t)(rows * (b->kp + 4 * b->np) + 128);
}

typedef struct mm_task {
    const inf__qgemm_b *b;
    const inf__qsrc *a;
    const inf__qout *out;
    int64_t row0, m;   /* chunk start and total rows */
    void *y;
    int64_t ldy;
    uint8_t *abuf;
    int32_t *cbuf;
    bool vector_store;
    const float *residual;        /* out->residual (rows as y's), or NULL */
    const inf__epilogue *res_act; /* with a residual: the activation after the Add (the store runs without) */
} mm_task;

/* Rows [r0, r1) of A as the kernel's uint8 rows (row stride *lda): uint8 rows without K padding are read in place
 * (the same bytes a copy would hold); a float block whose rows are contiguous and unpadded is quantized in one call
 * (QuantizeLinear is elementwise: the same bytes as row by row); other rows are loaded one by one into block blk's
 * slice of the scratch. */
static const uint8_t *block_rows(const mm_task *t, int64_t blk, int64_t r0, int64_t r1, int64_t *lda) {
    const inf__qgemm_b *b = t->b;
    const inf__qsrc *src = t->a;
    size_t esize = src->dtype == INF_DTYPE_F32 ? 4 : 1;
    const char *first = (const char *)src->data + (size_t)(r0 * src->ld) * esize;
    if (src->dtype == INF_DTYPE_U8 && b->k == b->kp) {
        *lda = src->ld;
        return (const uint8_t *)first;
    }
    uint8_t *a = t->abuf + blk * ROWS_PER_BLOCK * b->kp;
    *lda = b->kp;
    if (src->dtype == INF_DTYPE_F32 && b->k == b->kp && src->ld == b->k) {
        inf__quantize_u8((const float *)first, (r1 - r0) * b->k, src->scale, a_zero_point(src), a);
        return a;
    }
    for (int64_t i = r0; i < r1; i++)
        load_row(src, first + (size_t)((i - r0) * src->ld) * esize, b->k, b->kp, a + (i - r0) * b->kp);
    return a;
}

/* The fused residual Add of a finished row: y = act(y + r), the Add node's value then its activation. */
static void add_row(const inf__qgemm_b *b, float *y, const float *r, const inf__epilogue *res_act) {
#if defined(__x86_64__)
    if (b->isa != INF_QGEMM_REF) {
        inf__add_act_f32_avx2(y, r, b->n, res_act);
        return;
    }
#endif
    for (int64_t j = 0; j < b->n; j++)
        y[j] = act(res_act, y[j] + r[j]);
}

static void mm_blocks(void *arg, int64_t begin, int64_t end) {
    const mm_task *t = arg;
    const inf__qgemm_b *b = t->b;
    for (int64_t blk = begin; blk < end; blk++) {
        int64_t r0 = t->row0 + blk * ROWS_PER_BLOCK, r1 = r0 + ROWS_PER_BLOCK;
        if (r1 > t->m) r1 = t->m;
        if (r0 >= r1) continue;
        int32_t *c = t->cbuf + blk * ROWS_PER_BLOCK * b->np;
        int64_t lda = b->kp;
        const uint8_t *a = block_rows(t, blk, r0, r1, &lda);
        inf__qgemm_rows(b, r1 - r0, a, lda, a_zero_point(t->a), c, b->np);
        for (int64_t i = r0; i < r1; i++) {
            int32_t *ci = c + (i - r0) * b->np;
            if (t->out->kind == INF_QOUT_F32_U8) { /* the next QGemm's uint8 rows */
                uint8_t *qi = (uint8_t *)t->y + i * t->ldy;
                if (t->out->row_act) {
                    store_gelu_u8_row(b, t->out, ci, qi);
                    continue;
                }
#if defined(__x86_64__)
                if (b->isa != INF_QGEMM_REF) {
                    qstore_u8_row(b->isa, t->out, ci, 0, b->n, qi);
                    continue;
                }
#endif
                for (int64_t j = 0; j < b->n; j++) qi[j] = store_u8(t->out, ci[j], j);
                continue;
            }
#if defined(__x86_64__)
            if (t->out->kind == INF_QOUT_Q8 && !t->out->bias_i32 && b->isa != INF_QGEMM_REF) { /* QLinearMatMul */
                void *qi = (char *)t->y + i * t->ldy;
                if (b->isa == INF_QGEMM_VNNI512) inf__qstore_q8_row_avx512(t->out, ci, 0, b->n, qi);
                else inf__qstore_q8_row_avx2(t->out, ci, 0, b->n, qi);
                continue;
            }
#endif
            float *yi = (float *)t->y + i * t->ldy;
            if (t->vector_store) {
#if defined(__x86_64__)
                qstore_f32_row(b->isa, t->out, ci, 0, b->n, yi);
#endif
            } else {
                for (int64_t j = 0; j < b->n; j++) store_one(t->out, t->y, i * t->ldy + j, ci[j], j);
            }
            if (t->out->row_act)
                t->out->row_act(yi, yi, b->n);
        }
        for (int64_t i = r0; i < r1 && t->residual; i++) /* a float output: the block's rows are in cache */
            add_row(b, (float *)t->y + i * t->ldy, t->residual + i * t->ldy, t->res_act);
    }
}

void inf__qmatmul_drive(inf__pool *pool, const inf__qgemm_b *b, int64_t m, const inf__qsrc *a, const inf__qout *out,
                        void *y, int64_t ldy, void *scratch) {
    int64_t chunk = m < CHUNK_ROWS ? m : CHUNK_ROWS;
    uint8_t *abuf = (uint8_t *)round_up((int64_t)(uintptr_t)scratch, 64);
    int32_t *cbuf = (int32_t *)round_up((int64_t)(uintptr_t)(abuf + chunk * b->kp), 64);
    inf__qout plain; /* a residual Add: the store runs without the activation, applied after the Add */
    const inf__qout *store = out;
    if (out->residual)
        plain = *out, plain.act = NULL, store = &plain;
    for (int64_t row0 = 0; row0 < m; row0 += chunk) {
        mm_task t = {.b = b,
                     .a = a,
                     .out = store,
                     .row0 = row0,
                     .m = m,
                     .y = y,
                     .ldy = ldy,
                     .abuf = abuf,
                     .cbuf = cbuf,
                     .vector_store = vector_store(b, out),
                     .residual = out->residual,
                     .res_act = out->residual ? out->act : NULL};
        int64_t rows = m - row0 < chunk ? m - row0 : chunk;
        inf__pool_range(pool, (rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK, 1, mm_blocks, &t);
    }
}

/* ---- convolutions ---- */

/* The implicit-GEMM path: the kernel reads each tap's cg channels in place
 * from a zero-point-padded channels-last image -- on VNNI
 * (x86/qconv_vnni_avx512.c, x86/qgemm_avxvnni.c) when cg is a multiple of 4 (no quad straddles
 * two taps), on AVX2 (x86/qgemm_avx2.c, the image widened to uint16) when
 * it is even (no pair straddles two taps) -- and W has no zero point (the
 * start value holds the only correction). */
enum { DIRECT_MAX_TAPS = 64, DIRECT_MAX_N = 4096 };

static bool conv_direct(const inf__qconv_geom *g, const inf__qgemm_b *b) {
#if defined(__x86_64__)
    int64_t cq = g->cgp ? g->cgp : g->cg;
    bool vnni = (b->isa == INF_QGEMM_VNNI512 || b->isa == INF_QGEMM_AVXVNNI || b->isa == INF_QGEMM_AVX2_UBS) &&
                cq % 4 == 0 && b->kp == b->k;
    bool avx2 = b->isa == INF_QGEMM_AVX2 && cq % 2 == 0;
    return (vnni || avx2) && !b->any_b_zp && b->k == cq * g->kh * g->kw && g->kh * g->kw <= DIRECT_MAX_TAPS &&
           b->np <= DIRECT_MAX_N;
#else
    (void)g, (void)b;
    return false;
#endif
}

/* Can the direct kernels walk one tap per kernel row?  With one group, no
 * dilation along x and the image's channels exactly the kernel's (cs == cq:
 * a position holds the cq values W reads, padding channels included), a
 * kernel row's kw taps are kw * cq contiguous bytes of the channels-last
 * image, in W's K order (ky, kx, channel): one "tap" of kw * cq values, so
 * kh taps instead of kh * kw -- fewer, longer inner loops, the same
 * products (the stem: 3 taps of 3 quads, not 9 of one).  Every direct
 * kernel (AVX2, its vpmaddubsw twin, AVX-VNNI, AVX-512 VNNI): they walk
 * any cq of their unit. */
static bool direct_rows(const inf__qconv_geom *g, const inf__qgemm_b *b, int64_t cs) {
    (void)b;
    return g->group == 1 && g->dw == 1 && g->kw > 1 && cs == (g->cgp ? g->cgp : g->cg);
}

/* ---- the INT8 Winograd F(4x4, 3x3) / F(2x2, 3x3) (ops/ref/qwinograd.c) ----
 * Work is cut into units of `rows` tile rows (t = 4 or 2 output rows each,
 * about 24 tiles a unit: the per-point GEMMs' rows); a unit's input
 * transform (V, [pts][tiles][cp] int16), its pts GEMMs (M, [pts][tiles][np] int32: the AVX2
 * conv kernel reading V's rows in place, one "tap" at each point's offset),
 * its output transform into the unit's output positions of the C buffer,
 * and the usual stores, all while the unit is in cache.  The image is the
 * direct path's zero-point-padded channels-last buffer, tall and wide
 * enough for whole tiles. */
typedef struct wino_dims {
    int64_t th, tw, rows, units; /* tiles down and across, tile rows per unit, units */
    int64_t ldv, ldm;            /* per point: V's int16 and M's int32 values of a unit */
    int64_t vunit, munit, punit; /* a unit's V values, M values and row pointers (64-byte multiples) */
} wino_dims;

static bool conv_wino(const inf__qconv_geom *g, const inf__qgemm_b *b) {
#if defined(__x86_64__) && !defined(INF_EDGE)
    return g->wino && !g->dwise && !g->pkh && !g->cgp && g->group == 1 && g->kh == 3 && g->kw == 3 && g->sh == 1 &&
           g->sw == 1 && g->dh == 1 && g->dw == 1 && g->wino->c == g->c && g->wino->m == g->m && !b->any_b_zp &&
           (b->isa == INF_QGEMM_AVX2 || b->isa == INF_QGEMM_AVX2_UBS) && g->wino->u[0].np == b->np;
#else
    (void)g, (void)b;
    return false;
#endif
}

/* split: at least two units where there are two tile rows (a pool of more than one thread) */
static wino_dims wino_dims_of(const inf__qconv_geom *g, int64_t np, bool split) {
    int64_t t = g->wino ? g->wino->tile : 2, pts = g->wino ? g->wino->pts : 0;
    wino_dims d = {.th = (g->oh + t - 1) / t, .tw = (g->ow + t - 1) / t};
    d.rows = (ROWS_PER_BLOCK + d.tw - 1) / d.tw;
    if (d.rows > d.th) d.rows = d.th;
    if (split && d.rows > (d.th + 1) / 2) d.rows = (d.th + 1) / 2;
    d.units = (d.th + d.rows - 1) / d.rows;
    int64_t tiles = d.rows * d.tw, cp = g->wino ? g->wino->cp : 0;
    d.ldv = tiles * cp, d.ldm = tiles * np;
    d.vunit = round_up(pts * d.ldv, 32), d.munit = round_up(pts * d.ldm, 16);
    d.punit = round_up(tiles, 8);
    return d;
}

static int64_t wino_work_bytes(const wino_dims *d) { return d->units * (2 * d->vunit + 4 * d->munit + 8 * d->punit); }

/* The image buffer's height and width: padded for the direct path (every
 * tap of every output position inside it), else the image's own. */
static void image_dims(const inf__qconv_geom *g, bool direct, bool wino, int64_t *ihp, int64_t *iwp) {
    *ihp = g->ih, *iwp = g->iw;
    if (!direct) return;
    int64_t need_h = (g->oh - 1) * g->sh + (g->kh - 1) * g->dh + 1, need_w = (g->ow - 1) * g->sw + (g->kw - 1) * g->dw + 1;
    if (wino) { /* whole input tiles */
        int64_t t = g->wino->tile;
        need_h = (g->oh + t - 1) / t * t + 2, need_w = (g->ow + t - 1) / t * t + 2;
    }
    if (g->ih + g->pt > need_h) need_h = g->ih + g->pt;
    if (g->iw + g->pl > need_w) need_w = g->iw + g->pl;
    *ihp = need_h, *iwp = need_w;
}

size_t inf__qconv_scratch_bytes(const inf__qconv_geom *g, const inf__qgemm_b *b) {
    int64_t pos = round_up(g->oh * g->ow, ROWS_PER_BLOCK), ihp, iwp;
    if (g->dwise) { /* the padded image with cp channels per position, and the sums */
        image_dims(g, true, false, &ihp, &iwp);
        return (size_t)(g->dwise->cp * (ihp * iwp + 4 * pos + 4) + 384);
    }
    if (conv_wino(g, b)) { /* the padded image, the units' work areas, the sums */
        image_dims(g, true, true, &ihp, &iwp);
        wino_dims d1 = wino_dims_of(g, b->np, false), d2 = wino_dims_of(g, b->np, true);
        int64_t work = wino_work_bytes(&d1) > wino_work_bytes(&d2) ? wino_work_bytes(&d1) : wino_work_bytes(&d2);
        return (size_t)(g->c * ihp * iwp + work + pos * 4 * b->np + 448);
    }
    bool direct = conv_direct(g, b);
    image_dims(g, direct, false, &ihp, &iwp);
    int64_t image = (g->cgp ? g->cgp : g->c) * ihp * iwp, wide = direct && b->isa == INF_QGEMM_AVX2 ? 2 * image : 0;
    return (size_t)(image + wide + pos * (b->kp + 4 * b->np) + 4 * b->np + 448);
}

typedef struct conv_task {
    const inf__qconv_geom *g;
    const inf__qgemm_b *b;     /* this group's */
    const inf__qout *out;
    const uint8_t *x;          /* this image as uint8, channels last: [ih][iw][c] */
    const uint16_t *x16;       /* direct on AVX2: x zero-extended to uint16 */
    int32_t a_zp;
    int64_t group;
    void *y;                   /* this image's output planes */
    uint8_t *abuf;
    int32_t *cbuf;
    bool direct;               /* implicit GEMM: x padded to iwp columns, no im2col */
    int64_t iwp, cs;           /* direct: columns and channels (cgp with padding) of x's buffer */
    const int64_t *tapoff;     /* direct: byte offset of each tap from a position's first */
    int64_t ntaps, cq;         /* direct: taps the kernel walks, and the values of each (direct_taps) */
    const int32_t *init;       /* direct: -a_zp * colsum[j]; depthwise: -a_zp * wsum[ch] */
    const inf__qdw_w *dw;      /* a depthwise conv (ops/ref/qdepthwise.c): x has dw->cp channels per position */
    const float *residual;     /* this image's residual (out->residual), or NULL */
    const uint8_t *residual_u8;   /* or its uint8 channels-last form (out->residual_u8) */
    const inf__epilogue *res_act; /* with a residual: the activation after the Add */
    const inf__qconv_rgb *rgb;    /* the RGB stem's dense W for the pooled path's im2col rows (rgb_path), or NULL */
    const struct wino_dims *wd;   /* the INT8 Winograd: its units, and each unit's V, M and row pointers */
    int16_t *vbuf;
    int32_t *mbuf;
    const uint16_t **pbuf;
} conv_task;

/* Row p of the group's im2col matrix, K in (ky, kx, channel) order -- the
 * order W is packed in (ops/ref/quantize_conv.c): cg contiguous bytes per tap. */
/* n bytes, 8 at a time (short runs: a call to memcpy would cost more). */
static inline void copy_bytes(uint8_t *dst, const uint8_t *src, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) memcpy(dst + i, src + i, 8);
    for (; i < n; i++) dst[i] = src[i];
}

static void im2col_row(const conv_task *t, int64_t p, uint8_t *dst) {
    const inf__qconv_geom *g = t->g;
    int64_t oy = p / g->ow, ox = p % g->ow, k = 0;
    const uint8_t *xg = t->x + t->group * g->cg;
    bool runs = g->group == 1 && g->dw == 1; /* a kernel row inside the image is one run of kw * c bytes */
    for (int64_t ky = 0; ky < g->kh; ky++) {
        int64_t iy = oy * g->sh - g->pt + ky * g->dh, ix0 = ox * g->sw - g->pl;
        if (runs && iy >= 0 && iy < g->ih && ix0 >= 0 && ix0 + g->kw <= g->iw) {
            copy_bytes(dst + k, xg + (iy * g->iw + ix0) * g->c, g->kw * g->cg);
            k += g->kw * g->cg;
            continue;
        }
        for (int64_t kx = 0; kx < g->kw; kx++, k += g->cg) {
            int64_t ix = ox * g->sw - g->pl + kx * g->dw;
            if (iy >= 0 && iy < g->ih && ix >= 0 && ix < g->iw) copy_bytes(dst + k, xg + (iy * g->iw + ix) * g->c, g->cg);
            else memset(dst + k, t->a_zp, (size_t)g->cg);
        }
    }
    memset(dst + k, 0, (size_t)(t->b->kp - k));
}

/* rows[i] = the first input byte (tap 0) of output position p0 + i, for
 * p0 + i < p1: one division per block, then the position steps along its
 * output row (a division per position cost the stem more than its sums). */
static void position_rows(const conv_task *t, int64_t p0, int64_t p1, int64_t at, const uint8_t **rows) {
    const inf__qconv_geom *g = t->g;
    int64_t oy = p0 / g->ow, ox = p0 % g->ow, step = g->sw * t->cs, down = g->sh * t->iwp * t->cs;
    const uint8_t *row = t->x + oy * down + at, *x = row + ox * step; /* no multiply per position */
    for (int64_t p = p0; p < p1; p++) {
        rows[p - p0] = x;
        if (++ox == g->ow)
            ox = 0, row += down, x = row;
        else
            x += step;
    }
}

/* The int32 sums of positions [p0, p1) (at most ROWS_PER_BLOCK) into c, rows of b->np. */
static void conv_sums(const conv_task *t, int64_t p0, int64_t p1, int32_t *c) {
    const inf__qgemm_b *b = t->b;
    uint8_t *a = t->abuf + p0 * b->kp;
    if (t->dw) {
        const uint8_t *rows[ROWS_PER_BLOCK];
        position_rows(t, p0, p1, 0, rows);
#if defined(__x86_64__)
        if (b->isa == INF_QGEMM_VNNI512) {
            inf__qdw_raw_vnni512(t->dw, p1 - p0, rows, t->tapoff, t->init, c, b->np);
            return;
        }
        if (b->isa != INF_QGEMM_REF) {
            inf__qdw_raw_avx2(t->dw, p1 - p0, rows, t->tapoff, t->init, c, b->np);
            return;
        }
#endif
        inf__qdw_raw_ref(t->dw, p1 - p0, rows, t->tapoff, t->init, c, b->np);
        return;
    }
    if (t->direct) {
#if defined(__x86_64__)
        const uint8_t *rows[ROWS_PER_BLOCK];
        position_rows(t, p0, p1, t->group * t->g->cg, rows);
        if (b->isa == INF_QGEMM_AVX2) {
            const uint16_t *rows16[ROWS_PER_BLOCK];
            for (int64_t p = p0; p < p1; p++) rows16[p - p0] = t->x16 + (rows[p - p0] - t->x);
            inf__qconv_raw_avx2(b, p1 - p0, rows16, t->tapoff, t->ntaps, t->cq, t->init, c, b->np);
#if !defined(INF_EDGE)
        } else if (b->isa == INF_QGEMM_AVX2_UBS) {
            inf__qconv_raw_avx2ubs(b, p1 - p0, rows, t->tapoff, t->ntaps, t->cq, t->init, c, b->np);
#endif
        } else if (b->isa == INF_QGEMM_AVXVNNI) {
            inf__qconv_raw_avxvnni(b, p1 - p0, rows, t->tapoff, t->ntaps, t->cq, t->init, c, b->np);
        } else {
            inf__qconv_raw_vnni512(b, p1 - p0, rows, t->tapoff, t->ntaps, t->cq, t->init, c, b->np);
        }
#endif
        return;
    }
    for (int64_t p = p0; p < p1; p++) im2col_row(t, p, a + (p - p0) * b->kp);
    inf__qgemm_rows(b, p1 - p0, a, b->kp, t->a_zp, c, b->np);
}

/* A fused MaxPool (g->pkh > 0; windows that do not overlap, no padding):
 * per pooled output row, the conv rows under it are computed into the C
 * buffer, turned into their float values in place (the F32 store, a row at
 * a time), max-pooled over each window -- the store is monotonic in the
 * sum, so this is MaxPool of the unfused output, value for value -- and the
 * pooled row is written into the output planes. */
/* Is the F32 store non-decreasing in the sum for every column of the group:
 * positive finite multipliers, finite biases, a non-decreasing activation
 * and a positive re-quantization scale?  Then the max of the stored values
 * is the store of the max sum (every step rounds monotonically). */
static bool store_monotonic(const inf__qout *o, int64_t ch0, int64_t n) {
    if (o->act && !(o->act->kind == INF_EPILOGUE_RELU || o->act->kind == INF_EPILOGUE_CLIP ||
                    (o->act->kind == INF_EPILOGUE_LEAKY_RELU && o->act->alpha >= 0)))
        return false;
    if ((o->requant || o->kind == INF_QOUT_F32_U8) && !(o->rq_scale > 0 && isfinite(o->rq_scale))) return false;
    for (int64_t j = ch0; j < ch0 + n; j++) {
        float m = out_mult(o, j);
        if (!(m > 0 && isfinite(m)) || (o->bias_f32 && !isfinite(o->bias_f32[j]))) return false;
    }
    return true;
}

/* m[j] = max(m[j], v[j]) over n int32 values. */
static void max_i32(bool vec, int32_t *m, const int32_t *v, int64_t n) {
#if defined(__x86_64__)
    if (vec) {
        inf__max_i32_avx2(m, v, n);
        return;
    }
#endif
    (void)vec;
    for (int64_t j = 0; j < n; j++) m[j] = v[j] > m[j] ? v[j] : m[j];
}

/* The uint8 channels-last output (INF_QOUT_F32_U8) of one pooled row from
 * the sums c of the conv rows under it, into y (pw positions of m bytes):
 * QuantizeLinear is non-decreasing, so the max of the quantized values is
 * the quantized max.  Monotonic store: the sums pooled, then pw rows
 * stored; else every conv row stored (in place, as bytes) and pooled. */
static void pool_row_u8(const conv_task *t, int32_t *c, bool monotonic, uint8_t *y) {
    const inf__qconv_geom *g = t->g;
    const inf__qgemm_b *b = t->b;
    int64_t pw = (g->ow - g->pkw) / g->psw + 1, ch0 = t->group * g->mg, rows = monotonic ? pw : g->pkh * g->ow;
#if defined(__x86_64__)
    if (monotonic && b->isa == INF_QGEMM_VNNI512) { /* pool and store the row, 16 lanes at a time */
        inf__pool_max_i32_avx512(c, b->np, b->n, g->ow, g->pkh, g->pkw, g->psw, pw);
        inf__qstore_u8_rows_avx512(t->out, c, b->np, pw, ch0, b->n, y, g->m);
        return;
    }
#endif
    for (int64_t px = 0; px < pw && monotonic; px++) {
        int32_t *m = c + px * b->np;
        if (px) memcpy(m, c + px * g->psw * b->np, (size_t)b->n * sizeof *m);
        for (int64_t ky = 0; ky < g->pkh; ky++)
            for (int64_t kx = 0; kx < g->pkw; kx++)
                if (ky || kx) max_i32(b->isa != INF_QGEMM_REF, m, c + (ky * g->ow + px * g->psw + kx) * b->np, b->n);
    }
    uint8_t *q = (uint8_t *)c; /* row r's bytes at q + r * np: each sum is read before a byte lands on it */
    for (int64_t r = 0; r < rows; r++) {
        uint8_t *qr = monotonic ? y + r * g->m : q + r * b->np;
#if defined(__x86_64__)
        if (b->isa != INF_QGEMM_REF) {
            qstore_u8_row(b->isa, t->out, c + r * b->np, ch0, b->n, qr);
            continue;
        }
#endif
        for (int64_t j = 0; j < b->n; j++)
            qr[j] = store_u8(t->out, c[r * b->np + j], ch0 + j);
    }
    for (int64_t px = 0; px < pw && !monotonic; px++)
        for (int64_t j = 0; j < b->n; j++) {
            uint8_t v = 0;
            for (int64_t ky = 0; ky < g->pkh; ky++)
                for (int64_t kx = 0; kx < g->pkw; kx++) {
                    uint8_t e = q[(ky * g->ow + px * g->psw + kx) * b->np + j];
                    v = e > v ? e : v;
                }
            y[px * g->m + j] = v;
        }
}

#if defined(__x86_64__)
enum { POOL4_WINDOWS = 24 };

#if !defined(INF_EDGE)
/* Does the pooled stem take the RGB im2col rows (ops/ref/qconv_rgb.c): g->rgb packed, the pair-safe kernel, a
 * 3 x 3 kernel over 3 channels in 4-byte positions, undilated, stride 1 along x (a window's two positions of a
 * row are one pair), 2 x 2 windows? */
static bool rgb_path(const inf__qconv_geom *g, const inf__qgemm_b *b, int64_t cs, bool direct) {
    return g->rgb && direct && b->isa == INF_QGEMM_AVX2_UBS && cs == 4 && g->c == 3 && g->group == 1 && g->kh == 3 &&
           g->kw == 3 && g->sw == 1 && g->dh == 1 && g->dw == 1 && g->pkh == 2 && g->pkw == 2 &&
           g->rgb->b.np == b->np && inf__qconv_pool4_avx2ubs_fits(&g->rgb->b, 1, INF_QCONV_RGB_ROW);
}

/* nw windows (rows as pool4_row_u8 lays them out) through the RGB im2col rows: 7 quads a position.  The start
 * values t->init (-zp x column sums) hold for the dense W too: the same weights, the padding's zeros gone. */
static void rgb_windows(const conv_task *t, const uint8_t *const *rows, int64_t nw, int32_t *c) {
    uint8_t im[4 * POOL4_WINDOWS * INF_QCONV_RGB_ROW + 4]; /* + the AVX2 form's 4 spare bytes */
    const uint8_t *pairs[2 * POOL4_WINDOWS], *rows28[4 * POOL4_WINDOWS];
    static const int64_t tap0 = 0;
    for (int64_t i = 0; i < 2 * nw; i++) /* a window row's two positions: rows[2 i] and rows[2 i] + 4 */
        pairs[i] = rows[2 * i];
    inf__qconv_rgb_pairs_avx2(t->rgb, pairs, 2 * nw, t->iwp * t->cs, im);
    for (int64_t i = 0; i < 4 * nw; i++)
        rows28[i] = im + i * INF_QCONV_RGB_ROW;
    inf__qconv_pool4_avx2ubs(&t->rgb->b, nw, rows28, &tap0, 1, INF_QCONV_RGB_ROW, t->init, c, t->b->np);
}
#endif

/* The uint8 pooled row py of a 4-position window (the stem's 2 x 2) on AVX-512 VNNI: each window's sums
 * pooled in the kernel's registers (inf__qconv_pool4_vnni512) into the pw rows of c, then stored. */
static void pool4_row_u8(const conv_task *t, int64_t py, int32_t *c, uint8_t *y) {
    const inf__qconv_geom *g = t->g;
    const inf__qgemm_b *b = t->b;
    int64_t pw = (g->ow - g->pkw) / g->psw + 1;
    int64_t off[4], step = g->psw * g->sw * t->cs; /* a window's positions from its first; windows step apart */
    for (int64_t ky = 0, k = 0; ky < g->pkh; ky++)
        for (int64_t kx = 0; kx < g->pkw; kx++)
            off[k++] = (ky * g->sh * t->iwp + kx * g->sw) * t->cs;
    const uint8_t *x = t->x + t->group * g->cg + py * g->psh * g->sh * t->iwp * t->cs;
    for (int64_t px0 = 0; px0 < pw; px0 += POOL4_WINDOWS) {
        int64_t nw = pw - px0 < POOL4_WINDOWS ? pw - px0 : POOL4_WINDOWS;
        const uint8_t *rows[4 * POOL4_WINDOWS];
        for (int64_t w = 0; w < nw; w++) {
            const uint8_t *first = x + (px0 + w) * step;
            rows[4 * w] = first + off[0], rows[4 * w + 1] = first + off[1];
            rows[4 * w + 2] = first + off[2], rows[4 * w + 3] = first + off[3];
        }
        if (b->isa == INF_QGEMM_AVX2) { /* vpmaddwd on the image widened to uint16 (x86/qconv_pool_avx2.c) */
            const uint16_t *rows16[4 * POOL4_WINDOWS];
            for (int64_t i = 0; i < 4 * nw; i++)
                rows16[i] = t->x16 + (rows[i] - t->x);
            inf__qconv_pool4_avx2(b, nw, rows16, t->tapoff, t->ntaps, t->cq, t->init, c + px0 * b->np, b->np);
            continue;
        }
#if !defined(INF_EDGE)
        if (b->isa == INF_QGEMM_AVX2_UBS && t->rgb) { /* the RGB stem: dense im2col rows */
            rgb_windows(t, rows, nw, c + px0 * b->np);
            continue;
        }
        if (b->isa == INF_QGEMM_AVX2_UBS) { /* pair-safe weights, routed vpmaddubsw (x86/qconv_pool_ubs_avx2.c) */
            inf__qconv_pool4_avx2ubs(b, nw, rows, t->tapoff, t->ntaps, t->cq, t->init, c + px0 * b->np, b->np);
            continue;
        }
#endif
        inf__qconv_pool4_vnni512(b, nw, rows, t->tapoff, t->ntaps, t->cq, t->init, c + px0 * b->np, b->np);
    }
    if (b->isa != INF_QGEMM_VNNI512) { /* the block store where it may run, else row by row */
        if (inf__qstore_u8_rows_avx2(t->out, c, b->np, pw, t->group * g->mg, b->n, y, g->m)) return;
        for (int64_t px = 0; px < pw; px++)
            qstore_u8_row(b->isa, t->out, c + px * b->np, t->group * g->mg, b->n, y + px * g->m);
        return;
    }
    inf__qstore_u8_rows_avx512(t->out, c, b->np, pw, t->group * g->mg, b->n, y, g->m);
}
#endif

static void conv_pool_rows(void *arg, int64_t begin, int64_t end) {
    const conv_task *t = arg;
    const inf__qconv_geom *g = t->g;
    const inf__qgemm_b *b = t->b;
    int64_t ph = (g->oh - g->pkh) / g->psh + 1, pw = (g->ow - g->pkw) / g->psw + 1, ch0 = t->group * g->mg;
    bool monotonic = store_monotonic(t->out, ch0, b->n);
#if defined(__x86_64__)
    bool pool4_isa = b->isa == INF_QGEMM_VNNI512 || b->isa == INF_QGEMM_AVX2;
#if !defined(INF_EDGE)
    pool4_isa = pool4_isa || inf__qconv_pool4_avx2ubs_fits(b, t->ntaps, t->cq); /* pair-safe: needs the route */
#endif
    bool pool4 = monotonic && t->out->kind == INF_QOUT_F32_U8 && t->direct && pool4_isa && g->pkh * g->pkw == 4;
#endif
    for (int64_t py = begin; py < end; py++) {
        int64_t first = py * g->psh * g->ow, last = first + g->pkh * g->ow;
        int32_t *c = t->cbuf + first * b->np;
#if defined(__x86_64__)
        if (pool4) {
            pool4_row_u8(t, py, c, (uint8_t *)t->y + py * pw * g->m + ch0);
            continue;
        }
#endif
        for (int64_t p0 = first; p0 < last; p0 += ROWS_PER_BLOCK)
            conv_sums(t, p0, p0 + ROWS_PER_BLOCK < last ? p0 + ROWS_PER_BLOCK : last, c + (p0 - first) * b->np);
        if (t->out->kind == INF_QOUT_F32_U8) {
            pool_row_u8(t, c, monotonic, (uint8_t *)t->y + py * pw * g->m + ch0);
            continue;
        }
        int64_t stored = last - first;
        if (monotonic) { /* pool the sums (slot px <= every position window px reads), store pw rows */
            for (int64_t px = 0; px < pw; px++) {
                int32_t *m = c + px * b->np;
                if (px) memcpy(m, c + px * g->psw * b->np, (size_t)b->n * sizeof *m);
                for (int64_t ky = 0; ky < g->pkh; ky++)
                    for (int64_t kx = 0; kx < g->pkw; kx++)
                        if (ky || kx) max_i32(b->isa != INF_QGEMM_REF, m, c + (ky * g->ow + px * g->psw + kx) * b->np, b->n);
            }
            stored = pw;
        }
        float *f = (float *)c; /* in place: each value is read before its slot is written */
        for (int64_t r = 0; r < stored; r++) {
#if defined(__x86_64__)
            if (b->isa != INF_QGEMM_REF) {
                qstore_f32_row(b->isa, t->out, c + r * b->np, ch0, b->n, f + r * b->np);
                continue;
            }
#endif
            for (int64_t j = 0; j < b->n; j++) store_one(t->out, f, r * b->np + j, c[r * b->np + j], ch0 + j);
        }
#if defined(__x86_64__)
        bool vec = b->isa != INF_QGEMM_REF;
#endif
        for (int64_t px = 0; px < pw && !monotonic; px++) { /* window px's max into slot px */
            float *m = f + px * b->np;
            if (px) memcpy(m, f + px * g->psw * b->np, (size_t)b->n * sizeof *m);
            for (int64_t ky = 0; ky < g->pkh; ky++)
                for (int64_t kx = 0; kx < g->pkw; kx++) {
                    const float *v = f + (ky * g->ow + px * g->psw + kx) * b->np;
                    if (v == m) continue;
#if defined(__x86_64__)
                    if (vec) {
                        inf__max_f32_avx2(m, v, b->n);
                        continue;
                    }
#endif
                    for (int64_t j = 0; j < b->n; j++) m[j] = v[j] > m[j] ? v[j] : m[j];
                }
        }
        float *y0 = (float *)t->y + ch0 * ph * pw + py * pw;
#if defined(__x86_64__)
        if (vec) {
            inf__transpose_f32_avx2(f, b->np, pw, b->n, y0, ph * pw);
            continue;
        }
#endif
        for (int64_t j = 0; j < b->n; j++)
            for (int64_t px = 0; px < pw; px++) y0[j * ph * pw + px] = f[px * b->np + j];
    }
}

/* The fused residual Add of block [p0, p1), while the block is in cache: the
 * store ran without the activation, so y = act(y + r) is Add then Relu. */
static void add_residual(const conv_task *t, const inf__qgemm_b *b, int64_t ch0, int64_t p0, int64_t p1) {
    int64_t pos = t->g->oh * t->g->ow;
    for (int64_t j = 0; j < b->n; j++) {
        float *y = (float *)t->y + (ch0 + j) * pos + p0;
        const float *r = t->residual + (ch0 + j) * pos + p0;
#if defined(__x86_64__)
        if (b->isa != INF_QGEMM_REF) {
            inf__add_act_f32_avx2(y, r, p1 - p0, t->res_act);
            continue;
        }
#endif
        for (int64_t p = 0; p < p1 - p0; p++) y[p] = act(t->res_act, y[p] + r[p]);
    }
}

/* f[j] = act(f[j] + r[j]), r uint8 worth (r - zp) * s (DequantizeLinear's value), n values. */
static void add_u8_act(float *f, const uint8_t *r, float s, int32_t zp, const inf__epilogue *ep, int64_t n) {
    if (!ep || ep->kind == INF_EPILOGUE_RELU) { /* the common ones in loops the compiler vectorizes */
        bool relu = ep != NULL;
        for (int64_t j = 0; j < n; j++) {
            float v = f[j] + (float)((int32_t)r[j] - zp) * s;
            f[j] = relu ? (v > 0 ? v : 0) : v;
        }
        return;
    }
    for (int64_t j = 0; j < n; j++)
        f[j] = act(ep, f[j] + (float)((int32_t)r[j] - zp) * s);
}

/* INF_QOUT_F32_U8 with a fused residual Add (out->pre): per position, the
 * value before the Add (pre's F32 store, in place over its sums), + the
 * residual (uint8 channels last, or float planes), the activation, then
 * QuantizeLinear into the uint8 channels-last output -- the unfused nodes'
 * operations in their order, so the bytes the readers would quantize. */
static void store_rows_residual_u8(const conv_task *t, int64_t p0, int64_t p1, int32_t *c) {
    const inf__qgemm_b *b = t->b;
    const inf__qout *o = t->out;
    int64_t pos = t->g->oh * t->g->ow, ch0 = t->group * t->g->mg;
#if defined(__x86_64__)
    if (b->isa == INF_QGEMM_VNNI512 && t->residual_u8) { /* the same steps in one pass over the block */
        inf__qstore_u8_res_rows_avx512(o, c, b->np, p1 - p0, ch0, b->n, t->residual_u8 + p0 * t->g->m + ch0,
                                       t->res_act, (uint8_t *)t->y + p0 * t->g->m + ch0, t->g->m);
        return;
    }
    if (b->isa != INF_QGEMM_REF && t->residual_u8 && /* AVX2: one pass where no value can be NaN or infinite */
        inf__qstore_u8_res_rows_avx2(o, c, b->np, p1 - p0, ch0, b->n, t->residual_u8 + p0 * t->g->m + ch0, t->res_act,
                                     (uint8_t *)t->y + p0 * t->g->m + ch0, t->g->m))
        return;
#endif
    for (int64_t p = p0; p < p1; p++) {
        int32_t *cp = c + (p - p0) * b->np;
        float *f = (float *)cp;
        uint8_t *yp = (uint8_t *)t->y + p * t->g->m + ch0;
#if defined(__x86_64__)
        if (b->isa != INF_QGEMM_REF)
            qstore_f32_row(b->isa, o->pre, cp, ch0, b->n, f);
        else
#endif
            for (int64_t j = 0; j < b->n; j++)
                store_one(o->pre, f, j, cp[j], ch0 + j);
        if (t->residual_u8) {
            add_u8_act(f, t->residual_u8 + p * t->g->m + ch0, o->res_scale, o->res_zp, t->res_act, b->n);
        } else {
            for (int64_t j = 0; j < b->n; j++)
                f[j] = act(t->res_act, f[j] + t->residual[(ch0 + j) * pos + p]);
        }
        if (b->isa == INF_QGEMM_REF)
            inf__quantize_u8_ref(f, b->n, o->rq_scale, o->rq_zp, yp);
        else
            inf__quantize_u8(f, b->n, o->rq_scale, o->rq_zp, yp);
    }
}

/* The output of positions [p0, p1) (at most ROWS_PER_BLOCK) from their sums c (rows of b->np). */
static void store_block(const conv_task *t, int64_t p0, int64_t p1, int32_t *c) {
    const inf__qgemm_b *b = t->b;
    int64_t pos = t->g->oh * t->g->ow, ch0 = t->group * t->g->mg;
    if (t->out->kind == INF_QOUT_F32_U8 && t->out->pre) {
        store_rows_residual_u8(t, p0, p1, c);
        return;
    }
    if (t->out->kind == INF_QOUT_F32_U8) { /* channels last: C's rows are the output's positions */
#if defined(__x86_64__)
        if (b->isa == INF_QGEMM_VNNI512) { /* the block at once: multipliers and biases loaded once */
            inf__qstore_u8_rows_avx512(t->out, c, b->np, p1 - p0, ch0, b->n, (uint8_t *)t->y + p0 * t->g->m + ch0,
                                       t->g->m);
            return;
        }
        if (b->isa != INF_QGEMM_REF && /* AVX2: the block at once where no value can be NaN */
            inf__qstore_u8_rows_avx2(t->out, c, b->np, p1 - p0, ch0, b->n, (uint8_t *)t->y + p0 * t->g->m + ch0,
                                     t->g->m))
            return;
#endif
        for (int64_t p = p0; p < p1; p++) {
            uint8_t *yp = (uint8_t *)t->y + p * t->g->m + ch0;
            const int32_t *cp = c + (p - p0) * b->np;
#if defined(__x86_64__)
            if (b->isa != INF_QGEMM_REF) {
                qstore_u8_row(b->isa, t->out, cp, ch0, b->n, yp);
                continue;
            }
#endif
            for (int64_t j = 0; j < b->n; j++)
                yp[j] = store_u8(t->out, cp[j], ch0 + j);
        }
        return;
    }
    if (vector_store(b, t->out)) {
#if defined(__x86_64__)
        inf__qstore_f32_block_t_avx2(t->out, c, b->np, p1 - p0, ch0, b->n, (float *)t->y + ch0 * pos + p0, pos);
#endif
    } else {
        for (int64_t j = 0; j < b->n; j++)
            for (int64_t p = p0; p < p1; p++)
                store_one(t->out, t->y, (ch0 + j) * pos + p, c[(p - p0) * b->np + j], ch0 + j);
    }
    if (t->residual) add_residual(t, b, ch0, p0, p1);
}

static void conv_blocks(void *arg, int64_t begin, int64_t end) {
    const conv_task *t = arg;
    const inf__qgemm_b *b = t->b;
    int64_t pos = t->g->oh * t->g->ow;
    for (int64_t blk = begin; blk < end; blk++) {
        int64_t p0 = blk * ROWS_PER_BLOCK, p1 = p0 + ROWS_PER_BLOCK < pos ? p0 + ROWS_PER_BLOCK : pos;
        int32_t *c = t->cbuf + p0 * b->np;
        conv_sums(t, p0, p1, c);
        store_block(t, p0, p1, c);
    }
}

#if defined(__x86_64__) && !defined(INF_EDGE)
static void conv_wino_units(void *arg, int64_t begin, int64_t end) {
    const conv_task *t = arg;
    const inf__qconv_geom *g = t->g;
    const inf__qgemm_b *b = t->b;
    const wino_dims *d = t->wd;
    int64_t cp = g->wino->cp, rowb = t->iwp * t->cs, tile = g->wino->tile;
    for (int64_t u = begin; u < end; u++) {
        int64_t ty0 = u * d->rows, trows = d->th - ty0 < d->rows ? d->th - ty0 : d->rows, n = trows * d->tw;
        int16_t *v = t->vbuf + u * d->vunit;
        int32_t *mm = t->mbuf + u * d->munit;
        const uint16_t **rows = t->pbuf + u * d->punit;
        inf__qwino_in_avx2((int)tile, t->x + tile * ty0 * rowb, rowb, t->cs, g->c, cp, t->a_zp, trows, d->tw, v,
                           d->ldv);
        for (int64_t i = 0; i < n; i++)
            rows[i] = (const uint16_t *)(v + i * cp); /* int16 read as the kernel's 16-bit lanes */
        for (int xi = 0; xi < g->wino->pts; xi++) {
            int64_t off = xi * d->ldv;
            inf__qconv_raw_avx2(&g->wino->u[xi], n, rows, &off, 1, cp, NULL, mm + xi * d->ldm, b->np);
        }
        int64_t p0 = tile * ty0 * g->ow, orows = g->oh - tile * ty0 < tile * trows ? g->oh - tile * ty0 : tile * trows;
        int64_t p1 = p0 + orows * g->ow;
        inf__qwino_out_avx2((int)tile, mm, d->ldm, b->np, trows, d->tw, orows, g->ow, b->np, t->cbuf + p0 * b->np,
                            b->np);
        for (int64_t q0 = p0; q0 < p1; q0 += ROWS_PER_BLOCK)
            store_block(t, q0, q0 + ROWS_PER_BLOCK < p1 ? q0 + ROWS_PER_BLOCK : p1, t->cbuf + q0 * b->np);
    }
}
#endif

typedef struct quant_task {
    const inf__qsrc *x;
    const void *src;
    int64_t c, plane;
    uint8_t *dst;         /* position (y, x) at dst[(y * iwp + x) * cs] */
    int64_t iw, iwp, cs;
    bool vector;          /* the SSE2 transposes (x86-64 with a fast GEMM) */
    bool avx512;          /* planes4 by the AVX-512 form (the VNNI512 path), else AVX2 */
} quant_task;

/* Positions [begin, end) of the image as uint8, channels last: per chunk
 * of TR_POS positions each channel is quantized (a vector pass) into a
 * [c][TR_POS] tile, which is then written out position by position. */
enum { TR_POS = 64, TR_MAX_C = 512 };

/* Image rows [begin, end) of a uint8 channels-last x: one copy each. */
static void copy_rows_nhwc(void *arg, int64_t begin, int64_t end) {
    const quant_task *t = arg;
    for (int64_t r = begin; r < end; r++) {
        if (t->cs == t->c) {
            memcpy(t->dst + r * t->iwp * t->c, (const uint8_t *)t->src + r * t->iw * t->c, (size_t)(t->iw * t->c));
            continue;
        }
        for (int64_t x = 0; x < t->iw; x++)
            memcpy(t->dst + (r * t->iwp + x) * t->cs, (const uint8_t *)t->src + (r * t->iw + x) * t->c, (size_t)t->c);
    }
}

#if defined(__x86_64__)
/* Image rows [begin, end) of float planes with c <= 4 channels into 4-byte positions (the stem):
 * AVX-512 on the VNNI path, AVX2 on the 256-bit ones. */
static void quantize_rows_c4(void *arg, int64_t begin, int64_t end) {
    const quant_task *t = arg;
    for (int64_t r = begin; r < end; r++) {
        const float *x = (const float *)t->src + r * t->iw;
        if (t->avx512)
            inf__quantize_planes4_u8_avx512(x, t->plane, t->c, t->iw, t->x->scale, a_zero_point(t->x),
                                            t->dst + r * t->iwp * 4);
        else
            inf__quantize_planes4_u8_avx2(x, t->plane, t->c, t->iw, t->x->scale, a_zero_point(t->x),
                                          t->dst + r * t->iwp * 4);
    }
}
#endif

static void quantize_rows(void *arg, int64_t begin, int64_t end) {
    const quant_task *t = arg;
    size_t esize = t->x->dtype == INF_DTYPE_F32 ? 4 : 1;
    uint8_t tile[TR_POS * TR_MAX_C];
    for (int64_t c0 = 0; c0 < t->c; c0 += TR_MAX_C) {
        int64_t nc = t->c - c0 < TR_MAX_C ? t->c - c0 : TR_MAX_C;
        for (int64_t p0 = begin; p0 < end; p0 += TR_POS) {
            int64_t n = end - p0 < TR_POS ? end - p0 : TR_POS;
            for (int64_t c = 0; c < nc; c++)
                load_row(t->x, (const char *)t->src + (size_t)((c0 + c) * t->plane + p0) * esize, n, n, tile + c * TR_POS);
            for (int64_t p = 0; p < n;) { /* a run of positions within one image row at a time */
                int64_t at = p0 + p, run = t->iw - at % t->iw;
                if (run > n - p) run = n - p;
                uint8_t *d = t->dst + ((at / t->iw) * t->iwp + at % t->iw) * t->cs + c0;
#if defined(__x86_64__)
                if (t->vector) {
                    inf__transpose_u8_avx2(tile + p, TR_POS, nc, run, d, t->cs);
                    p += run;
                    continue;
                }
#endif
                for (int64_t q = 0; q < run; q++)
                    for (int64_t c = 0; c < nc; c++) d[q * t->cs + c] = tile[c * TR_POS + p + q];
                p += run;
            }
        }
    }
}

/* One image into the buffer as uint8 channels last: copied, or quantized (planes4: quantize_rows_c4). */
static void fill_image(inf__pool *pool, const inf__qconv_geom *g, quant_task *qt, bool planes4) {
    if (qt->x->nhwc) {
        inf__pool_range(pool, g->ih, 16, copy_rows_nhwc, qt);
        return;
    }
#if defined(__x86_64__)
    if (planes4) {
        inf__pool_range(pool, g->ih, 16, quantize_rows_c4, qt);
        return;
    }
#endif
    (void)planes4;
    inf__pool_range(pool, g->ih * g->iw, 256, quantize_rows, qt);
}

/* The zero point into the padding of the image buffer (ihp x iwp positions of cs bytes, the image at
 * (pt, pl)): only the border when the image's writer fills every byte of its positions (interior: whole). */
static void pad_image(uint8_t *xbuf, const inf__qconv_geom *g, int64_t ihp, int64_t iwp, int64_t cs, int32_t zp,
                      bool border) {
    if (!border) {
        memset(xbuf, zp, (size_t)(cs * ihp * iwp));
        return;
    }
    int64_t rowb = iwp * cs, right = iwp - g->pl - g->iw;
    memset(xbuf, zp, (size_t)(g->pt * rowb));
    memset(xbuf + (g->pt + g->ih) * rowb, zp, (size_t)((ihp - g->pt - g->ih) * rowb));
    for (int64_t r = g->pt; r < g->pt + g->ih; r++) {
        memset(xbuf + r * rowb, zp, (size_t)(g->pl * cs));
        memset(xbuf + r * rowb + (g->pl + g->iw) * cs, zp, (size_t)(right * cs));
    }
}

void inf__qconv_drive(inf__pool *pool, const inf__qconv_geom *g, const inf__qgemm_b *bg, const inf__qsrc *x,
                      const inf__qout *out, void *y, void *scratch) {
    int64_t plane = g->ih * g->iw, image = g->c * plane, pos = g->oh * g->ow, ihp, iwp;
    /* a depthwise conv: one pass over all channels as the lanes, its sums [pos][cp] (ops/ref/qdepthwise.c) */
    inf__qgemm_b dwb = {.isa = bg[0].isa, .k = g->kh * g->kw, .n = g->m, .kp = 0, .np = g->dwise ? g->dwise->cp : 0};
    if (g->dwise) bg = &dwb;
    int64_t blocks = (pos + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK, kp = bg[0].kp, np = bg[0].np;
    bool wino = conv_wino(g, &bg[0]);
    bool direct = !g->dwise && !wino && conv_direct(g, &bg[0]), in_place = direct || g->dwise || wino;
    image_dims(g, in_place, wino, &ihp, &iwp);
    wino_dims wd = wino_dims_of(g, np, inf__pool_size(pool) > 1);
    uint8_t *xbuf = (uint8_t *)round_up((int64_t)(uintptr_t)scratch, 64);
    int64_t cs = g->dwise ? g->dwise->cp : direct && g->cgp ? g->cgp : g->c; /* channels per position in xbuf */
    uint8_t *abuf = (uint8_t *)round_up((int64_t)(uintptr_t)(xbuf + cs * ihp * iwp), 64);
    int64_t abytes = wino ? wino_work_bytes(&wd) : blocks * ROWS_PER_BLOCK * kp; /* im2col rows, or Winograd's units */
    int32_t *cbuf = (int32_t *)round_up((int64_t)(uintptr_t)(abuf + abytes), 64);
    int32_t *init = cbuf + blocks * ROWS_PER_BLOCK * np;
    bool wide = direct && bg[0].isa == INF_QGEMM_AVX2; /* the AVX2 kernel reads uint16 */
    uint16_t *x16 = wide ? (uint16_t *)round_up((int64_t)(uintptr_t)(init + np), 64) : NULL;
    size_t in_esize = x->dtype == INF_DTYPE_F32 ? 4 : 1;
    size_t out_esize = out->kind == INF_QOUT_Q8 || out->kind == INF_QOUT_F32_U8 ? 1 : 4;
    int64_t out_image = g->pkh ? g->m * ((g->oh - g->pkh) / g->psh + 1) * ((g->ow - g->pkw) / g->psw + 1) : g->m * pos;
    int32_t a_zp = a_zero_point(x);
    /* a residual Add: the store runs without the activation, applied after the Add */
    inf__qout plain = *out;
    bool has_res = out->residual || out->residual_u8;
    const inf__epilogue *res_act = has_res ? out->act : NULL;
    if (has_res) plain.act = NULL, out = &plain;
    int64_t tapoff[DIRECT_MAX_TAPS], ntaps = g->kh * g->kw, cq = g->cgp ? g->cgp : g->cg;
    /* a uint8 channels-last image that needs no padding (a 1 x 1 shortcut): no copy */
    bool read_x = direct && !wide && x->nhwc && cs == g->c && ihp == g->ih && iwp == g->iw;
    /* float planes of a stem, c <= 4, quantized into whole 4-byte positions (quantize_rows_c4) */
    bool planes4 = false;
#if defined(__x86_64__)
    planes4 = !x->nhwc && x->dtype == INF_DTYPE_F32 && cs == 4 && bg[0].isa != INF_QGEMM_REF;
#endif
    if (in_place) {
        for (int64_t ky = 0; ky < g->kh; ky++)
            for (int64_t kx = 0; kx < g->kw; kx++) tapoff[ky * g->kw + kx] = (ky * g->dh * iwp + kx * g->dw) * cs;
        if (direct && direct_rows(g, &bg[0], cs)) { /* one tap per kernel row */
            for (int64_t ky = 0; ky < g->kh; ky++)
                tapoff[ky] = ky * g->dh * iwp * cs;
            ntaps = g->kh, cq *= g->kw;
        }
        if (ihp * iwp != plane || cs != g->c) /* the padding reads the zero point (padded channels: zero weights) */
            pad_image(xbuf, g, ihp, iwp, cs, a_zp, cs == g->c || planes4);
    }
    for (int64_t n = 0; n < g->n; n++) {
        const void *src = (const char *)x->data + (size_t)(n * image) * in_esize;
        quant_task qt = {.x = x,
                         .src = src,
                         .c = g->c,
                         .plane = plane,
                         .iw = g->iw,
                         .iwp = iwp,
                         .cs = cs,
                         .dst = xbuf + (in_place ? (g->pt * iwp + g->pl) * cs : 0),
                         .vector = bg[0].isa != INF_QGEMM_REF,
                         .avx512 = bg[0].isa == INF_QGEMM_VNNI512};
        if (!read_x) fill_image(pool, g, &qt, planes4); /* read_x: the kernel reads the image where it is */
#if defined(__x86_64__)
        if (wide) inf__widen_u8_avx2(xbuf, cs * ihp * iwp, x16);
#endif
        for (int64_t grp = 0; grp < (g->dwise ? 1 : g->group); grp++) {
            if (direct)
                for (int64_t j = 0; j < np; j++) init[j] = (int32_t)(0u - (uint32_t)a_zp * (uint32_t)bg[grp].colsum[j]);
            if (g->dwise)
                for (int64_t j = 0; j < np; j++) init[j] = (int32_t)(0u - (uint32_t)a_zp * (uint32_t)g->dwise->wsum[j]);
            conv_task t = {.g = g,
                           .b = &bg[grp],
                           .out = out,
                           .x = read_x ? (const uint8_t *)src : xbuf,
                           .x16 = x16,
                           .a_zp = a_zp,
                           .group = grp,
                           .y = (char *)y + (size_t)(n * out_image) * out_esize,
                           .abuf = abuf,
                           .cbuf = cbuf,
                           .direct = direct,
                           .iwp = iwp,
                           .cs = cs,
                           .tapoff = tapoff,
                           .ntaps = ntaps,
                           .cq = cq,
                           .init = init,
                           .dw = g->dwise,
                           .residual = out->residual ? out->residual + n * out_image : NULL,
                           .residual_u8 = out->residual_u8 ? out->residual_u8 + n * out_image : NULL,
                           .res_act = res_act};
#if defined(__x86_64__) && !defined(INF_EDGE)
            if (rgb_path(g, t.b, cs, direct))
                t.rgb = g->rgb;
            if (wino) { /* V, M and the row pointers per unit in the im2col area */
                t.wd = &wd, t.vbuf = (int16_t *)abuf, t.mbuf = (int32_t *)(t.vbuf + wd.units * wd.vunit);
                t.pbuf = (const uint16_t **)(t.mbuf + wd.units * wd.munit);
                inf__pool_range(pool, wd.units, 1, conv_wino_units, &t);
                continue;
            }
#endif
            if (g->pkh) inf__pool_range(pool, (g->oh - g->pkh) / g->psh + 1, 1, conv_pool_rows, &t);
            else inf__pool_range(pool, blocks, 1, conv_blocks, &t);
        }
    }
}
