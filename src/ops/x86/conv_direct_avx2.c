/*
 * conv_direct_avx2.c -- direct float32 1-D/2-D convolution with AVX2/FMA:
 * no im2col and no packing per call; 6 output positions x 16 output
 * channels accumulated in registers, read straight from the (zero-padded)
 * input.
 *
 * Called from Conv / ConvAdd (ops/ref/conv.c) when inf__cpu_has_avx2_fma()
 * and inf__conv2d_direct_fits(mg, kdim, sw) (many output channels per
 * group: the ResNet-style strided 3x3s, and strided 1-D front ends), and
 * for strided stems (3x3/2 3 -> 32 and the like: conv.c's strided_stem,
 * where this kernel ran 0.54-0.78x the panel kernel's time, bench_stem);
 * other shapes keep the panel kernel of conv_avx2.c.  Built with -mavx2
 * -mfma (CMake: *_avx2.c).
 *
 * DESIGN: per image and group, Y_g[mg, P] = W_g[mg, K] * col[K, P] with
 * K = cg*kh*kw in (c, ky, kx) order and P = oh*ow, as the im2col path.
 *   - W is packed at load (inf__conv2d_direct_pack_w) as blocks of 16
 *     output channels, [group][block][K][16], channels past mg zero: two
 *     aligned loads per k.
 *   - The input is read in place when no padding is needed; otherwise a
 *     chunk of images is copied once into a zero-padded buffer (the
 *     caller's scratch, inf__conv2d_direct_scratch_floats), so the inner
 *     loop has no bounds checks and every term of the sum is a real
 *     product (a padding zero times W, exactly as im2col's zero).
 *   - A tile is 6 consecutive output positions (flattened over oy, ox, so
 *     a tile may cross output rows) x 16 channels: 12 ymm accumulators;
 *     per k, 2 W loads, 6 broadcasts of x at base_j + off[k] (off: the
 *     k-th kernel tap's offset in the padded image) and 12 FMAs.
 *   - A task owns (image, group, channel block, chunk of up to CHUNK
 *     positions).  It walks K in KC = 256 blocks; per block it runs every
 *     tile of the chunk (the block's 16 KiB of W stays in L1) and adds the
 *     block's sums into a per-task buffer [position][16] on the stack.
 *     After the last block, 8x8 transposes turn the buffer into Y's rows,
 *     adding the bias, the residual (ConvAdd) and the ReLU/Clip on the way.
 *   - Bits: each Y element is summed exactly as inf__ops_sgemm_avx2 and
 *     conv_avx2.c sum it (per KC block acc = 0, acc = fma(w, x, acc) in k
 *     order; the first block kept, later ones added to it), then + bias,
 *     + res, activation as float operations -- so the result equals the
 *     im2col path bit for bit (tests/kernels/test_conv_avx2.c) and never
 *     depends on the batch, the chunking or the thread count.
 */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include "ops/ops.h"
#include "ops/x86/math_avx2.h"
#include "ops/x86/transpose_avx2.h"

enum {
    CW = 16,      /* output channels per block (two ymm) */
    TW = 6,       /* output positions per tile */
    KC = 256,     /* depth of one block of K (as gemm_avx2.c) */
    CHUNK = 192,  /* positions per task at most: a multiple of 6 and 8 */
    PAD_FLOATS = 1 << 18, /* padded images per hand-off: about 1 MiB (L2-sized passes) */
};

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Many output channels per group (blocks of 16 with little padding) and
 * either a deep enough K (below ~100 the panel kernel's direct NCHW store
 * wins) or a row stride above 2, where the panel kernel builds its panels
 * with gathers (an audio net's strided 1-D front end, kernel 80 stride 16:
 * 0.46x the panel kernel's time, bench/bench_conv.c). */
bool inf__conv2d_direct_fits(int64_t mg, int64_t kdim, int64_t sw) {
    return (mg % CW == 0 || mg >= 3 * CW) && (kdim >= 96 || sw > 2);
}

/* ---- weights ---- */

int64_t inf__conv2d_direct_w_floats(int64_t m, int64_t group, int64_t kdim) {
    return inf__conv2d_blocked_w_floats(m, group, kdim, CW);
}

void inf__conv2d_direct_pack_w(int64_t m, int64_t group, int64_t kdim, const float *w, float *dst) {
    inf__conv2d_pack_w_blocked(m, group, kdim, CW, w, dst);
}

/* ---- the padded input ---- */

inf__conv2d_input inf__conv2d_input_geom(const inf__conv2d *g) {
    inf__conv2d_input xg;
    int64_t rows = (g->oh - 1) * g->sh + (g->kh - 1) * g->dh + 1;
    int64_t cols = (g->ow - 1) * g->sw + (g->kw - 1) * g->dw + 1;
    xg.pad = g->pt > 0 || g->pl > 0 || rows > g->ih || cols > g->iw;
    xg.ph = xg.pad ? rows : g->ih;
    xg.pw = xg.pad ? cols : g->iw;
    /* images per hand-off: all of them when the input is used in place */
    xg.per_pass = xg.pad ? max64(1, min64(g->n, PAD_FLOATS / (g->c * xg.ph * xg.pw))) : g->n;
    return xg;
}

int64_t inf__conv2d_direct_scratch_floats(const inf__conv2d *g) {
    inf__conv2d_input xg = inf__conv2d_input_geom(g);
    return xg.pad ? xg.per_pass * g->c * xg.ph * xg.pw : 0;
}

typedef struct pad_job {
    const inf__conv2d *g;
    const inf__conv2d_input *xg;
    const float *x; /* the pass's first image */
    float *dst;
} pad_job;

/* d[0:n] = s[0:n], or zeros when s is NULL (vector stores, a masked tail). */
static inline void copy_span(float *d, const float *s, int64_t n) {
    const __m256 zero = _mm256_setzero_ps();
    for (; n >= 8; n -= 8, d += 8, s = s ? s + 8 : NULL) _mm256_storeu_ps(d, s ? _mm256_loadu_ps(s) : zero);
    if (n <= 0) return;
    __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32((int32_t)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    _mm256_maskstore_ps(d, m, s ? _mm256_maskload_ps(s, m) : zero);
}

/* Planes [begin, end) of the pass (image * c + channel) into dst.  Rows
 * are short (tens of floats): inline vector copies, not memcpy/memset calls. */
static void pad_planes(void *arg, int64_t begin, int64_t end) {
    const pad_job *J = arg;
    const inf__conv2d *g = J->g;
    int64_t ph = J->xg->ph, pw = J->xg->pw, pl = g->pl;
    int64_t ncopy = max64(0, min64(g->iw, pw - pl));
    for (int64_t plane = begin; plane < end; plane++) {
        const float *src = J->x + plane * g->ih * g->iw;
        float *restrict d = J->dst + plane * ph * pw;
        for (int64_t r = 0; r < ph; r++, d += pw) {
            int64_t iy = r - g->pt;
            bool inside = iy >= 0 && iy < g->ih;
            int64_t a = inside ? min64(pl, pw) : pw, b = inside ? a + ncopy : pw; /* [a, b) from the image */
            copy_span(d, NULL, a);
            if (b > a) copy_span(d + a, src + iy * g->iw, b - a);
            copy_span(d + b, NULL, pw - b);
        }
    }
}

const float *inf__conv2d_input_pass(inf__pool *pool, const inf__conv2d *g, const inf__conv2d_input *xg,
                                    const float *x, int64_t n0, int64_t imgs, float *scratch) {
    const float *xn = x + n0 * g->c * g->ih * g->iw;
    if (!xg->pad) return xn;
    pad_job P = {g, xg, xn, scratch};
    /* at least 8192 floats a chunk (smaller: inline); 65536 left the bench
     * CNN's 3x3/2 layers' padding (148 KB, 83 KB) to the caller alone while
     * the other thread waited */
    inf__pool_range(pool, imgs * g->c, max64(1, 8192 / (xg->ph * xg->pw + 1)), pad_planes, &P);
    return scratch;
}

/* ---- the 6x16 tile ---- */

/* s[j][0:16] = (first ? 0 : s[j]) + sum_k w[k][0:16] * x0[off[k] + d_j],
 * the sum over k < kc as one FMA chain from zero, then one add; d_j =
 * j * SW when SW > 0 (the tile inside one output row: constant
 * displacements), else d[j]. */
static inline __attribute__((always_inline)) void tile_6x16(int SW, const float *x0, const int64_t *d,
                                                            const int64_t *off, int64_t kc,
                                                            const float *restrict w, float *s, bool first) {
    __m256 acc[TW][2];
    for (int j = 0; j < TW; j++) acc[j][0] = acc[j][1] = _mm256_setzero_ps();
    const float *xb[TW];
    for (int j = 0; j < TW; j++) {
        xb[j] = x0 + (SW > 0 ? j * SW : d[j]);
        if (SW == 0) __asm__("" : "+r"(xb[j])); /* keep each base in a register: [xb_j + 4*o] */
    }
#pragma GCC unroll 2
    for (int64_t k = 0; k < kc; k++, w += CW) {
        int64_t o = off[k];
        __m256 w0 = _mm256_load_ps(w), w1 = _mm256_load_ps(w + 8);
        for (int j = 0; j < TW; j++) {
            __m256 xv = _mm256_broadcast_ss(SW > 0 ? x0 + o + j * SW : xb[j] + o);
            acc[j][0] = _mm256_fmadd_ps(w0, xv, acc[j][0]);
            acc[j][1] = _mm256_fmadd_ps(w1, xv, acc[j][1]);
        }
    }
    for (int j = 0; j < TW; j++)
        for (int h = 0; h < 2; h++) {
            __m256 v = acc[j][h];
            if (!first) v = _mm256_add_ps(v, _mm256_load_ps(s + j * CW + 8 * h));
            _mm256_store_ps(s + j * CW + 8 * h, v);
        }
}

/* One tile at positions p .. p + 5 (past the last, the last again). */
static void run_tile(const inf__conv2d *g, int64_t pw, const float *xg, int64_t p, int64_t last,
                     const int64_t *off, int64_t kc, const float *w, float *s, bool first) {
    int64_t oy = p / g->ow, ox = p % g->ow;
    const float *x0 = xg + oy * g->sh * pw + ox * g->sw;
    if (p + TW - 1 <= last && ox + TW <= g->ow && (g->sw == 1 || g->sw == 2)) {
        if (g->sw == 1) tile_6x16(1, x0, NULL, off, kc, w, s, first);
        else tile_6x16(2, x0, NULL, off, kc, w, s, first);
        return;
    }
    int64_t d[TW];
    for (int j = 0; j < TW; j++) {
        int64_t q = min64(p + j, last), qy = q / g->ow, qx = q % g->ow;
        d[j] = (qy - oy) * g->sh * pw + (qx - ox) * g->sw;
    }
    tile_6x16(0, x0, d, off, kc, w, s, first);
}

/* ---- the store: [position][16] sums -> Y rows ---- */

typedef struct store_ctx {
    const inf__conv2d *g;
    int64_t npos, rows;   /* positions per channel in Y; valid channels of the block */
    const float *bias;    /* the block's first channel, or NULL */
    const float *res;     /* the block's first channel row, or NULL */
    float *y;             /* the block's first channel row */
} store_ctx;

/* Positions [p, p + cnt) (cnt <= 8) of channels [c0, c0 + 8) from the sums
 * s ([position][16], s at position p): v = sum + bias, + res, activation. */
static void store8(const store_ctx *S, const float *s, int64_t p, int64_t cnt, int c0) {
    __m256 r[8];
    for (int i = 0; i < 8; i++) r[i] = i < cnt ? _mm256_load_ps(s + i * CW + c0) : _mm256_setzero_ps();
    inf__avx2_transpose8(r);
    const inf__conv2d *g = S->g;
    int32_t lanes[8];
    for (int i = 0; i < 8; i++) lanes[i] = i < cnt ? -1 : 0;
    __m256i mask = _mm256_loadu_si256((const __m256i *)lanes);
    __m256 zero = _mm256_setzero_ps(), vlo = _mm256_set1_ps(g->lo), vhi = _mm256_set1_ps(g->hi);
    for (int j = 0; j < 8 && c0 + j < S->rows; j++) {
        int64_t row = (c0 + j) * S->npos + p;
        __m256 v = r[j];
        if (S->bias) v = _mm256_add_ps(v, _mm256_broadcast_ss(S->bias + c0 + j));
        if (S->res)
            v = _mm256_add_ps(v, cnt == 8 ? _mm256_loadu_ps(S->res + row) : _mm256_maskload_ps(S->res + row, mask));
        if (g->act == INF_EPILOGUE_RELU) v = _mm256_max_ps(v, zero); /* NaN -> 0, as Relu */
        else if (g->act == INF_EPILOGUE_CLIP) v = _mm256_min_ps(vhi, _mm256_max_ps(vlo, v)); /* NaN kept */
        else if (g->act == INF_EPILOGUE_SILU) v = _mm256_mul_ps(v, sigmoid8(v)); /* the epilogue pass's bits */
        if (cnt == 8) _mm256_storeu_ps(S->y + row, v);
        else _mm256_maskstore_ps(S->y + row, mask, v);
    }
}

/* ---- tasks ---- */

typedef struct direct_job {
    const inf__conv2d *g;
    inf__conv2d_input xg;
    const float *x;        /* the pass's first image: padded buffer or X */
    const float *wp, *bias, *res;
    float *y;              /* the pass's first image */
    int64_t kdim, npos, ncb, chunk, n_chunks;
    int64_t w_floats;      /* floats of packed W (all groups) */
} direct_job;

/* off[k] for k in [k0, k0 + kc): the tap's offset in a (padded) image of
 * the group. */
static void tap_offsets(const direct_job *J, int64_t k0, int64_t kc, int64_t *off) {
    const inf__conv2d *g = J->g;
    int64_t khw = g->kh * g->kw, plane = J->xg.ph * J->xg.pw;
    int64_t c = k0 / khw, ky = k0 % khw / g->kw, kx = k0 % g->kw;
    for (int64_t k = 0; k < kc; k++) {
        off[k] = c * plane + ky * g->dh * J->xg.pw + kx * g->dw;
        if (++kx == g->kw) {
            kx = 0;
            if (++ky == g->kh) ky = 0, c++;
        }
    }
}

/* One task: positions [p0, p0 + cnt) of channel block cb of image-group ng. */
static void direct_chunk(const direct_job *J, int64_t ng, int64_t cb, int64_t p0, int64_t cnt) {
    const inf__conv2d *g = J->g;
    _Alignas(32) float sums[CHUNK * CW];
    int64_t off[KC];
    int64_t n = ng / g->group, gi = ng % g->group, plane = J->xg.ph * J->xg.pw;
    const float *xg = J->x + (n * g->c + gi * g->cg) * plane;
    const float *w = J->wp + (gi * J->ncb + cb) * J->kdim * CW;
    const float *w_end = J->wp + J->w_floats;
    for (int64_t k0 = 0; k0 < J->kdim; k0 += KC) {
        int64_t kc = min64(KC, J->kdim - k0), ntiles = (cnt + TW - 1) / TW;
        tap_offsets(J, k0, kc, off);
        /* the next KC block of W (one 64-byte line per k; past the last
         * block, the next channel block's first) is fetched while this one
         * runs, a share per tile: W comes from L3 in a whole network */
        const float *next = w + (k0 + KC) * CW;
        int64_t lines = min64(KC, (w_end - next) / CW), per_tile = (lines + ntiles - 1) / ntiles;
        for (int64_t t = 0, i = 0; t < cnt; t += TW, i++) {
            for (int64_t l = i * per_tile; l < min64(lines, (i + 1) * per_tile); l++)
                _mm_prefetch((const char *)(next + l * CW), _MM_HINT_T0);
            run_tile(g, J->xg.pw, xg, p0 + t, p0 + cnt - 1, off, kc, w + k0 * CW, sums + t * CW, k0 == 0);
        }
    }
    int64_t row0 = gi * g->mg + cb * CW, ybase = (n * g->m + row0) * J->npos;
    store_ctx S = {g, J->npos, min64(CW, g->mg - cb * CW), J->bias ? J->bias + row0 : NULL,
                   J->res ? J->res + ybase : NULL, J->y + ybase};
    for (int64_t t = 0; t < cnt; t += 8)
        for (int c0 = 0; c0 < CW && c0 < S.rows; c0 += 8) store8(&S, sums + t * CW, p0 + t, min64(8, cnt - t), c0);
}

static void direct_tasks(void *arg, int64_t begin, int64_t end) {
    const direct_job *J = arg;
    for (int64_t t = begin; t < end; t++) {
        int64_t chunk = t % J->n_chunks, rest = t / J->n_chunks;
        int64_t p0 = chunk * J->chunk;
        direct_chunk(J, rest / J->ncb, rest % J->ncb, p0, min64(J->chunk, J->npos - p0));
    }
}

/* Positions per task: CHUNK, smaller (a multiple of 24, so stores stay
 * 8-aligned) when the threads would otherwise idle. */
static int64_t chunk_positions(const inf__conv2d *g, int64_t images, int64_t ncb, int64_t npos, int threads) {
    int64_t chunk = CHUNK;
    if (threads > 1) {
        int64_t want = 4 * threads, per = images * g->group * ncb;
        while (chunk > 24 && per * ((npos + chunk - 1) / chunk) < want) chunk -= 24;
    }
    return chunk;
}

void inf__conv2d_direct_f32_avx2(inf__pool *pool, const inf__conv2d *g, const float *x, const float *wp,
                                 const float *bias, const float *res, float *scratch, float *y) {
    direct_job J = {.g = g, .xg = inf__conv2d_input_geom(g), .wp = wp, .bias = bias, .kdim = g->cg * g->kh * g->kw,
                    .npos = g->oh * g->ow, .ncb = (g->mg + CW - 1) / CW,
                    .w_floats = inf__conv2d_direct_w_floats(g->m, g->group, g->cg * g->kh * g->kw)};
    if (J.kdim <= 0 || J.npos <= 0 || g->mg <= 0) return;
    int64_t per_pass = J.xg.per_pass;
    J.chunk = chunk_positions(g, per_pass, J.ncb, J.npos, inf__pool_size(pool));
    J.n_chunks = (J.npos + J.chunk - 1) / J.chunk;
    int64_t work = J.chunk * CW * J.kdim; /* multiply-adds per task */
    for (int64_t n0 = 0; n0 < g->n; n0 += per_pass) {
        int64_t imgs = min64(per_pass, g->n - n0);
        J.x = inf__conv2d_input_pass(pool, g, &J.xg, x, n0, imgs, scratch);
        J.y = y + n0 * g->m * J.npos;
        J.res = res ? res + n0 * g->m * J.npos : NULL;
        inf__pool_range(pool, imgs * g->group * J.ncb * J.n_chunks, work >= 65536 ? 1 : 65536 / (work + 1) + 1,
                        direct_tasks, &J);
    }
}

#endif /* x86-64 with AVX2 and FMA */
