/*
 * conv_avx2.c -- float32 1-D/2-D convolution with AVX2/FMA: im2col fused
 * into the packing of the GEMM's B panels, weights packed once, bias and
 * an idempotent activation applied in the GEMM's store.
 *
 * Called from Conv (ops/ref/conv.c) when inf__cpu_has_avx2_fma(); built
 * with -mavx2 -mfma (CMake: *_avx2.c).
 *
 * DESIGN: Y_g[mg, P] = W_g[mg, K] * col[K, P] per image and group, with
 * K = cg*kh*kw, P = oh*ow (the layout of the im2col + inf__ops_sgemm path).
 *   - W is packed as MR = 6-row panels laid out [K][6] per group, rows past
 *     mg zero (inf__conv2d_pack_w): at load for a constant W (conv_init), in
 *     scratch memory per run otherwise.
 *   - The column matrix is never built: a task owns a tile of up to
 *     TP x 16 output positions and, per KC = 256 block of K, writes those
 *     columns straight into [kc][16] panels on its stack (16 KiB each, in
 *     L1), then runs the 6x16 micro-kernel (12 ymm accumulators) over the
 *     W panels of its block of output channels.
 *   - After the last K block the store adds the bias, then the residual
 *     (ConvAdd: res, Y's layout) and applies a ReLU or Clip; the caller
 *     tells the session the epilogue is done (inf__kernel_ctx.epilogue_done).
 *   - Tasks are (image, group, column tile, channel block), all handed to the
 *     pool at once; with one image and several threads the tiles shrink to
 *     one panel and the channels are split, so each thread gets work.
 *   - Bits: each Y element is summed exactly as inf__ops_sgemm_avx2 sums it
 *     (per KC block acc = 0, acc = fma(w, x, acc) in k order; the first
 *     block stored, later ones added to it), then + bias as one float add,
 *     as the im2col path does, then + res as one float add, as the Add
 *     node after it does -- so the result equals that path's bit for
 *     bit (tests/kernels/test_conv_avx2.c) and never depends on the batch,
 *     the tile or the thread count (batch invariance, DESIGN.md section 1).
 */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>
#include <string.h>

#include "ops/ops.h"

enum {
    MR = 6,     /* micro-tile rows (output channels) */
    NR = 16,    /* micro-tile columns (output positions) */
    KC = 256,   /* depth of one block of K (as gemm_avx2.c) */
    TP = 4,     /* B panels per column tile */
    MAX_SEG = NR + 2, /* runs per panel, a run across the halves counted twice */
};

typedef struct conv_job {
    const inf__conv2d *g;
    const float *x, *wp, *bias, *res;
    float *y;
    int64_t kdim, npos, npan_w;  /* K, P, W panels per group */
    int64_t tile_panels;         /* B panels per task tile */
    int64_t n_tiles;             /* column tiles per (image, group) */
    int64_t mb_panels;           /* W panels per channel block */
    int64_t n_mb;                /* channel blocks per group */
} conv_job;

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* ---- weights ---- */

int64_t inf__conv2d_blocked_w_floats(int64_t m, int64_t group, int64_t kdim, int64_t width) {
    int64_t mg = m / group;
    return group * ((mg + width - 1) / width) * width * kdim;
}

void inf__conv2d_pack_w_blocked(int64_t m, int64_t group, int64_t kdim, int64_t width, const float *w, float *dst) {
    int64_t mg = m / group, nblocks = (mg + width - 1) / width;
    for (int64_t gi = 0; gi < group; gi++)
        for (int64_t ib = 0; ib < nblocks; ib++)
            for (int64_t p = 0; p < kdim; p++, dst += width)
                for (int64_t q = 0; q < width; q++) {
                    int64_t row = ib * width + q;
                    dst[q] = row < mg ? w[(gi * mg + row) * kdim + p] : 0.0f;
                }
}

int64_t inf__conv2d_packed_w_floats(int64_t m, int64_t group, int64_t kdim) {
    return inf__conv2d_blocked_w_floats(m, group, kdim, MR);
}

void inf__conv2d_pack_w(int64_t m, int64_t group, int64_t kdim, const float *w, float *dst) {
    inf__conv2d_pack_w_blocked(m, group, kdim, MR, w, dst);
}

/* ---- im2col into a [kc][16] panel ---- */

/* A run of positions of one panel on the same output row, within one
 * 8-lane half of the panel (a run across the halves is two segs).  The
 * image column of panel lane q for kernel column kx is
 * ixb + kx*dw + q*sw. */
typedef struct seg {
    int h;          /* the half: lanes 8h .. 8h+7 */
    int64_t iy0;    /* oy*sh - pt */
    int64_t ixb;
    __m256i lanes;  /* the half's lanes in the run: all ones, else zero */
    __m256i qsw;    /* q*sw for the half's lanes */
} seg;

/* Splits panel positions [pos0, pos0 + cols) into output-row runs, per
 * half.  *run16: the panel is one run of 16 positions (two segs). */
static int make_segs(const inf__conv2d *g, int64_t pos0, int64_t cols, seg *s, bool *run16) {
    int ns = 0;
    *run16 = cols == NR && pos0 % g->ow + NR <= g->ow;
    for (int64_t q = 0; q < cols;) {
        int64_t pos = pos0 + q, oy = pos / g->ow, ox = pos % g->ow;
        int64_t len = min64(cols - q, g->ow - ox);
        for (int h = 0; h < 2; h++) {
            int64_t a = q > 8 * h ? q : 8 * h, b = min64(q + len, 8 * h + 8); /* lanes [a, b) */
            if (a >= b) continue;
            seg *sg = &s[ns++];
            int32_t lanes[8], qsw[8];
            for (int l = 0; l < 8; l++) {
                int64_t ql = 8 * h + l;
                lanes[l] = ql >= a && ql < b ? -1 : 0;
                qsw[l] = (int32_t)(ql * g->sw);
            }
            sg->h = h, sg->iy0 = oy * g->sh - g->pt, sg->ixb = (ox - q) * g->sw - g->pl;
            sg->lanes = _mm256_loadu_si256((const __m256i *)lanes);
            sg->qsw = _mm256_loadu_si256((const __m256i *)qsw);
        }
        q += len;
    }
    return ns;
}

/* dst[p][q] = col[p0 + p][pos0 + q] for p < kc; lanes past the runs zero.
 * x: the image's channels of this group.  Each half of a row is built in a
 * register from plain loads (stride 1, all lanes inside the row), masked
 * loads (stride 1), two loads and a shuffle (stride 2, all 16 source
 * columns inside the row) or masked gathers (otherwise: slow on AMD, so
 * kept for the borders); masked-off lanes read nothing and give zero. */
static void build_panel(const inf__conv2d *g, const float *x, const seg *s, int ns, bool run16, int64_t p0,
                        int64_t kc, float *restrict dst) {
    const int64_t khw = g->kh * g->kw, plane = g->ih * g->iw;
    int64_t c = p0 / khw, rem = p0 % khw, ky = rem / g->kw, kx = rem % g->kw;
    const __m256i minus1 = _mm256_set1_epi32(-1), viw = _mm256_set1_epi32((int32_t)g->iw);
    for (int64_t p = 0; p < kc; p++, dst += NR) {
        const float *xc = x + c * plane;
        if (run16 && g->sw == 1) {
            /* one run, stride 1: two plain loads when all 16 columns are inside */
            int64_t iy = s[0].iy0 + ky * g->dh, ix = s[0].ixb + kx * g->dw;
            if (iy >= 0 && iy < g->ih && ix >= 0 && ix + NR <= g->iw) {
                const float *src = xc + iy * g->iw + ix;
                _mm256_store_ps(dst, _mm256_loadu_ps(src));
                _mm256_store_ps(dst + 8, _mm256_loadu_ps(src + 8));
                goto next;
            }
        }
        __m256 v[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
        for (int i = 0; i < ns; i++) {
            const seg *sg = &s[i];
            int64_t iy = sg->iy0 + ky * g->dh;
            if (iy < 0 || iy >= g->ih) continue;
            int64_t ix = sg->ixb + kx * g->dw;
            __m256i ixv = _mm256_add_epi32(_mm256_set1_epi32((int32_t)ix), sg->qsw);
            __m256i ok = _mm256_and_si256(sg->lanes, _mm256_and_si256(_mm256_cmpgt_epi32(ixv, minus1),
                                                                       _mm256_cmpgt_epi32(viw, ixv)));
            __m256 t;
            bool full = _mm256_movemask_ps(_mm256_castsi256_ps(ok)) == 0xFF;
            int64_t base = ix + 8 * sg->h * g->sw; /* the column of the half's lane 0 */
            if (g->sw == 1) {
                /* lane l reads column ix + 8h + l of row iy (only valid lanes are touched) */
                const float *src = xc + (iy * g->iw + base);
                t = full ? _mm256_loadu_ps(src) : _mm256_maskload_ps(src, ok);
            } else if (g->sw == 2 && full && base + 16 <= g->iw) {
                /* stride 2, all 16 source columns in the row: two loads and
                 * an even-element shuffle instead of a (slow) gather */
                const float *src = xc + (iy * g->iw + base);
                __m256 e = _mm256_shuffle_ps(_mm256_loadu_ps(src), _mm256_loadu_ps(src + 8), _MM_SHUFFLE(2, 0, 2, 0));
                t = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
            } else {
                __m256i idx = _mm256_add_epi32(_mm256_set1_epi32((int32_t)(iy * g->iw)), ixv);
                t = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), xc, idx, _mm256_castsi256_ps(ok), 4);
            }
            v[sg->h] = _mm256_or_ps(v[sg->h], t);
        }
        _mm256_store_ps(dst, v[0]);
        _mm256_store_ps(dst + 8, v[1]);
    next:
        if (++kx == g->kw) {
            kx = 0;
            if (++ky == g->kh) ky = 0, c++;
        }
    }
}

/* ---- the 6x16 micro-kernel with the conv store ---- */

/* acc = sum_p a[p][0:R] (x) b[p][0:16] (a: panels of MR rows, the first R
 * used); C = acc (first) or acc + C; on the last block C += bias[row], then
 * C += res (when not NULL; leading dimension ldc too), then the activation.  R = 6, or 4 / 2 for the last rows of a block of output
 * channels (fewer FMAs than a padded 6-row tile; each element is summed the
 * same way whatever R). */
static inline __attribute__((always_inline)) void
kernel_rx16(int R, int64_t kc, const float *restrict a, const float *restrict b, float *c, int64_t ldc,
            bool first, bool last, const float *bias, const float *res, int act, float lo, float hi) {
    __m256 acc[MR][2];
    for (int r = 0; r < R; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int64_t p = 0; p < kc; p++, a += MR, b += NR) {
        __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
        for (int r = 0; r < R; r++) {
            __m256 av = _mm256_broadcast_ss(a + r);
            acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
        }
    }
    __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi), zero = _mm256_setzero_ps();
    for (int r = 0; r < R; r++, c += ldc, res = res ? res + ldc : NULL) {
        __m256 vb = last && bias ? _mm256_broadcast_ss(bias + r) : zero;
        for (int h = 0; h < 2; h++) {
            __m256 v = acc[r][h];
            if (!first) v = _mm256_add_ps(v, _mm256_loadu_ps(c + 8 * h));
            if (last) {
                if (bias) v = _mm256_add_ps(v, vb);
                if (res) v = _mm256_add_ps(v, _mm256_loadu_ps(res + 8 * h));
                if (act == INF_EPILOGUE_RELU) v = _mm256_max_ps(v, zero); /* NaN -> 0, as Relu */
                else if (act == INF_EPILOGUE_CLIP) v = _mm256_min_ps(vhi, _mm256_max_ps(vlo, v)); /* NaN kept */
            }
            _mm256_storeu_ps(c + 8 * h, v);
        }
    }
}

/* One tile of R rows (6, 4 or 2), all 16 columns, straight into C. */
static inline __attribute__((always_inline)) void
tile_r(int R, int64_t kc, const float *a, const float *b, float *c, int64_t ldc, bool first, bool last,
       const float *bias, const float *res, int act, float lo, float hi) {
    if (first && last) kernel_rx16(R, kc, a, b, c, ldc, true, true, bias, res, act, lo, hi);
    else if (first) kernel_rx16(R, kc, a, b, c, ldc, true, false, NULL, NULL, 0, 0, 0);
    else if (last) kernel_rx16(R, kc, a, b, c, ldc, false, true, bias, res, act, lo, hi);
    else kernel_rx16(R, kc, a, b, c, ldc, false, false, NULL, NULL, 0, 0, 0);
}

/* rows x cols valid; other shapes go through a buffer with the same
 * arithmetic. */
static void micro_tile(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int64_t rows,
                       int64_t cols, bool first, bool last, const float *bias, const float *res, int act,
                       float lo, float hi) {
    if (cols == NR && (rows == MR || rows == 4 || rows == 2)) {
        if (rows == MR) tile_r(MR, kc, a, b, c, ldc, first, last, bias, res, act, lo, hi);
        else if (rows == 4) tile_r(4, kc, a, b, c, ldc, first, last, bias, res, act, lo, hi);
        else tile_r(2, kc, a, b, c, ldc, first, last, bias, res, act, lo, hi);
        return;
    }
    _Alignas(32) float t[MR * NR] = {0};
    _Alignas(32) float tr[MR * NR] = {0};
    _Alignas(32) float tb[MR] = {0};
    for (int64_t r = 0; r < rows; r++) {
        if (bias) tb[r] = bias[r];
        for (int64_t j = 0; j < cols; j++) {
            if (!first) t[r * NR + j] = c[r * ldc + j];
            if (res && last) tr[r * NR + j] = res[r * ldc + j];
        }
    }
    const float *bb = bias ? tb : NULL, *rr = res ? tr : NULL;
    if (rows <= 2) tile_r(2, kc, a, b, t, NR, first, last, bb, rr, act, lo, hi);
    else if (rows <= 4) tile_r(4, kc, a, b, t, NR, first, last, bb, rr, act, lo, hi);
    else tile_r(MR, kc, a, b, t, NR, first, last, bb, rr, act, lo, hi);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < cols; j++) c[r * ldc + j] = t[r * NR + j];
}

/* ---- tasks ---- */

static void conv_tasks(void *arg, int64_t begin, int64_t end) {
    const conv_job *J = arg;
    const inf__conv2d *g = J->g;
    _Alignas(64) float bp[TP * KC * NR];
    seg segs[TP][MAX_SEG];
    int nseg[TP];
    bool run16[TP];
    const int64_t per_group = J->n_tiles * J->n_mb;
    for (int64_t t = begin; t < end; t++) {
        int64_t ng = t / per_group, rest = t % per_group;
        int64_t n = ng / g->group, gi = ng % g->group;
        int64_t tile = rest / J->n_mb, mb = rest % J->n_mb;
        int64_t pos0 = tile * J->tile_panels * NR;
        int64_t npanels = min64(J->tile_panels, (J->npos - pos0 + NR - 1) / NR);
        int64_t ip0 = mb * J->mb_panels, ip1 = min64(J->npan_w, ip0 + J->mb_panels);
        const float *x = J->x + (n * g->c + gi * g->cg) * g->ih * g->iw;
        float *y = J->y + (n * g->m + gi * g->mg) * J->npos;
        const float *res = J->res ? J->res + (n * g->m + gi * g->mg) * J->npos : NULL;
        const float *bias = J->bias ? J->bias + gi * g->mg : NULL;
        const float *wg = J->wp + gi * J->npan_w * MR * J->kdim;
        for (int64_t b = 0; b < npanels; b++) {
            int64_t p = pos0 + b * NR;
            nseg[b] = make_segs(g, p, min64(NR, J->npos - p), segs[b], &run16[b]);
        }
        for (int64_t p0 = 0; p0 < J->kdim; p0 += KC) {
            int64_t kc = min64(KC, J->kdim - p0);
            bool first = p0 == 0, last = p0 + kc == J->kdim;
            for (int64_t b = 0; b < npanels; b++) {
                int64_t p = pos0 + b * NR, cols = min64(NR, J->npos - p);
                float *panel = bp + b * KC * NR;
                build_panel(g, x, segs[b], nseg[b], run16[b], p0, kc, panel);
                for (int64_t ip = ip0; ip < ip1; ip++) {
                    int64_t row = ip * MR;
                    micro_tile(kc, wg + ip * MR * J->kdim + p0 * MR, panel, y + row * J->npos + p, J->npos,
                               min64(MR, g->mg - row), cols, first, last, bias ? bias + row : NULL,
                               res ? res + row * J->npos + p : NULL, g->act, g->lo, g->hi);
                }
            }
        }
    }
}

void inf__conv2d_f32_avx2(inf__pool *pool, const inf__conv2d *g, const float *x, const float *wp,
                          const float *bias, const float *res, float *y) {
    conv_job J = {g, x, wp, bias, res, y, g->cg * g->kh * g->kw, g->oh * g->ow, (g->mg + MR - 1) / MR,
                  TP, 0, 0, 1};
    if (J.kdim <= 0 || J.npos <= 0 || g->mg <= 0) return;
    int64_t threads = inf__pool_size(pool), images = g->n * g->group;
    int64_t panels = (J.npos + NR - 1) / NR;
    J.mb_panels = J.npan_w;
    if (threads > 1) {
        /* enough tasks for the threads: smaller tiles, then channel blocks
         * (at least 4 W panels each) */
        int64_t want = 4 * threads;
        if (images * ((panels + TP - 1) / TP) < want) J.tile_panels = max64(1, min64(TP, images * panels / want));
        int64_t have = images * ((panels + J.tile_panels - 1) / J.tile_panels);
        if (have < want) {
            int64_t split = min64((want + have - 1) / have, max64(1, J.npan_w / 4));
            J.mb_panels = (J.npan_w + split - 1) / split;
        }
    }
    J.n_tiles = (panels + J.tile_panels - 1) / J.tile_panels;
    J.n_mb = (J.npan_w + J.mb_panels - 1) / J.mb_panels;
    /* a task's work in multiply-adds decides how many go to one hand-off */
    int64_t work = J.tile_panels * NR * J.mb_panels * MR * J.kdim;
    inf__pool_range(pool, images * J.n_tiles * J.n_mb, work >= 65536 ? 1 : 65536 / (work + 1) + 1, conv_tasks,
                    &J);
}

#endif /* x86-64 with AVX2 and FMA */
