/*
 * quantize_conv.c -- reference kernels for the integer convolutions.
 *
 * ONNX ops:
 *   ConvInteger            opsets 10-17: int32 convolution of (x - x_zero_point) and
 *                          (w - w_zero_point), w_zero_point scalar or per
 *                          output channel; Conv's attributes (auto_pad,
 *                          dilations, group, kernel_shape, pads, strides).
 *   QLinearConv            opsets 10-17: the same convolution plus int32 bias B,
 *                          requantized like QLinearMatMul (w_scale scalar or
 *                          per output channel).
 * dtypes: uint8 and int8 for the quantized tensors, any mix of the two.
 * Rounding is half to even (nearbyint in the default rounding mode) and the
 * result saturates to the output type's range.  Accumulation is exact
 * (int64) and wraps to int32 for the int32 outputs.
 * Fast path: with a constant W the convolution is packed at
 *   load for the integer GEMM of ops/qgemm.h (AVX-512 VNNI, AVX-VNNI or AVX2,
 *   chosen from CPUID) and runs through its drivers (inf__qconv_drive)
 *   when x's zero point is per tensor.  Same bits as the loops
 *   here (the drivers repeat their arithmetic); on a CPU without AVX2, or
 *   with INFERA_CPU=generic, the loops here run.
 * Deviations: the requantization multiplier and product are computed in
 *   float32, as onnxruntime does.
 * The geometry, packing and packed run here are shared with the fused QConv
 * of quantize_fused.c (quantize_conv.h).
 */
#include <math.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/qgemm.h"
#include "ops/ref/quantize_common.h"
#include "ops/ref/quantize_conv.h"

/* ======================================================================== */
/*  ConvInteger, QLinearConv                                                 */
/* ======================================================================== */

#if defined(__x86_64__) && !defined(INF_EDGE)
/* Does W take an INT8 Winograd (ops/qgemm.h) as well: a 3x3, stride-1,
 * undilated, single-group conv with int8 weights and no zero point, at
 * least 8 channels in and out, packed for the AVX2 kernels (the VNNI ones
 * keep the direct conv)?  The tile (4, or 2 where F(4x4) would not be
 * exact in its integers), or 0. */
static int qwino_tile(const qconv_params *p, const inf_tensor *w, inf__qgemm_isa isa, bool wz_zero, bool padded) {
    int tile = inf__qwino_tile();
    if (!tile || !(isa == INF_QGEMM_AVX2 || isa == INF_QGEMM_AVX2_UBS) || padded || !wz_zero || p->group != 1 ||
        w->ndim != 4 || w->dtype != INF_DTYPE_I8 || w->dims[2] != 3 || w->dims[3] != 3 || w->dims[0] < 8 ||
        w->dims[1] < 8)
        return 0;
    for (int i = 0; i < p->n_strides; i++)
        if (p->strides[i] != 1) return 0;
    for (int i = 0; i < p->n_dilations; i++)
        if (p->dilations[i] != 1) return 0;
    if (tile == 4 && inf__qwino_exact(4, w->dims[1], w->dims[0], w->data)) return 4;
    return inf__qwino_exact(2, w->dims[1], w->dims[0], w->data) ? 2 : 0;
}
#endif

#if defined(__x86_64__) && !defined(INF_EDGE)
/* An RGB stem (3 x 3, 3 channels, one group, int8 W without zero point)
 * padded to 4 channels for the AVX2 kernels whose W is pair-safe (the
 * routed vpmaddubsw kernel): W packed densely as well, K = 27 + one zero,
 * for the pooled stem's im2col rows (ops/qgemm.h inf__qconv_rgb): 7 quads
 * per position instead of 9.  The row order decides which 4 weights share
 * an int16 slot, so how many (group, panel) blocks may take ubs2 (two
 * vpmaddubsw added before the widening multiply: 3 multiplies per 64
 * products instead of 4): a hill climb over swaps of two row bytes (a
 * fixed sequence, so the same order at every load), scored by the route
 * the packer builds, until every block qualifies.  On the bench CNN's stem
 * (32 outputs): 6 of 12 blocks in the plain (ky, kx, channel) order, 12 of
 * 12 after 193 swaps. */
enum { RGB_K = INF_QCONV_RGB_ROW, RGB_SWAPS = 300 };

/* W [m][c][3][3] in row order (order[k] = ky * 9 + kx * 3 + channel, 27: the zero) into dense [m][28]. */
static void rgb_dense(const int8_t *w, int64_t m, const uint8_t *order, int8_t *dense) {
    for (int64_t o = 0; o < m; o++)
        for (int k = 0; k < RGB_K; k++) {
            int v = order[k];
            dense[o * RGB_K + k] = v == 27 ? 0 : w[(o * 3 + v % 3) * 9 + v / 3];
        }
}

/* The ubs2 (group, panel) blocks of the route packed into b's memory for this order (-1: not pair-safe). */
static int64_t rgb_score(const int8_t *w, int64_t m, const uint8_t *order, int8_t *dense, void *mem,
                         inf__qgemm_isa base) {
    rgb_dense(w, m, order, dense);
    if (inf__qgemm_pack_isa(base, RGB_K, m, dense, INF_DTYPE_I8, RGB_K, true) != INF_QGEMM_AVX2_UBS)
        return -1;
    inf__qgemm_b b;
    inf__qgemm_pack_b_into(mem, INF_QGEMM_AVX2_UBS, RGB_K, m, dense, INF_DTYPE_I8, RGB_K, true, NULL, 1, &b);
    if (!b.route)
        return -1;
    int64_t score = 0, per_tile = INF_QGEMM_ROUTE_HDR + b.kp / 8;
    for (int64_t t = 0; t < (b.np / 8 + 1) / 2; t++) { /* classes: 0 both panels ubs2, 1 and 2 one of them */
        const int32_t *h = b.route + t * per_tile;
        score += 2 * h[0] + h[1] + h[2];
    }
    return score;
}

static inf_status qconv_pack_rgb(inf__arena *arena, qconv_params *p, const inf_tensor *w, inf__qgemm_isa base) {
    int64_t m = w->dims[0];
    int8_t *dense = inf__calloc((size_t)(m * RGB_K), 1);
    void *mem = inf__aligned_alloc(inf__qgemm_pack_b_bytes(INF_QGEMM_AVX2_UBS, RGB_K, m));
    if (!dense || !mem) {
        inf__free(dense), inf__aligned_free(mem);
        return INF_ENOMEM;
    }
    uint8_t *order = p->rgb.order;
    for (int k = 0; k < RGB_K; k++)
        order[k] = (uint8_t)k;
    int64_t best = rgb_score(w->data, m, order, dense, mem, base), all = (RGB_K / 8) * ((m + 7) / 8);
    uint32_t seed = 12345;
    for (int i = 0; i < RGB_SWAPS && best >= 0 && best < all; i++) {
        seed = seed * 1103515245u + 12345u;
        int a = (int)(seed >> 8) % RGB_K, c = (int)(seed >> 20) % RGB_K;
        uint8_t t = order[a];
        order[a] = order[c], order[c] = t;
        int64_t score = rgb_score(w->data, m, order, dense, mem, base);
        if (score >= best)
            best = score;
        else
            order[c] = order[a], order[a] = t;
    }
    inf_status st = INF_OK;
    if (best >= 0) {
        rgb_dense(w->data, m, order, dense);
        st = inf__qgemm_pack_b(arena, INF_QGEMM_AVX2_UBS, RGB_K, m, dense, INF_DTYPE_I8, RGB_K, true, NULL, 1,
                               &p->rgb.b);
        p->has_rgb = st == INF_OK && p->rgb.b.route;
        inf__qconv_rgb_masks(&p->rgb);
    }
    inf__free(dense), inf__aligned_free(mem);
    return st;
}
#endif

/* Packs W (zero point wz, present when has_wz: per tensor or per output
 * channel) per group as B = W_g^T, when isa allows. */
static inf_status qconv_pack_w(inf__arena *arena, qconv_params *p, inf__qgemm_isa isa, const inf_tensor *w,
                               const inf_tensor *wz, bool has_wz) {
    if (!w || w->kind != INF_KIND_TENSOR || !is_q8(w->dtype) || w->ndim < 3 || w->ndim > 4 || !w->data ||
        w->dims[0] % p->group)
        return INF_OK;
    int64_t m = w->dims[0], mg = m / p->group, k = inf_tensor_numel(w) / (m ? m : 1);
    if (has_wz && (!wz || wz->dtype != w->dtype || !(inf_tensor_numel(wz) == 1 || inf_tensor_numel(wz) == m)))
        return INF_OK;
    int64_t cg = w->dims[1], taps = k / (cg ? cg : 1);
    /* a stem conv (3 channels) on VNNI or AVX2: channels padded to 4 (VNNI's quads) or 2 (AVX2's pairs)
     * with zero weights, so the driver reads the image in place (ops/ref/qgemm_drive.c's implicit-GEMM
     * conditions, which this guarantees) */
    bool wz_zero = !has_wz;
    if (wz) {
        wz_zero = true;
        for (int64_t i = 0; i < inf_tensor_numel(wz); i++)
            wz_zero = wz_zero && ((const uint8_t *)wz->data)[i] == 0;
    }
    int64_t unit = isa == INF_QGEMM_VNNI512 || isa == INF_QGEMM_AVXVNNI ? 4 : isa == INF_QGEMM_AVX2 ? 2 : 1;
    int64_t cgp =
        unit > 1 && cg % unit && p->group == 1 && wz_zero && w->dtype == INF_DTYPE_I8 && taps <= 64 && m <= 4080
            ? (cg + unit - 1) / unit * unit
            : cg;
    k = taps * cgp;
    p->bg = inf__arena_alloc(arena, (size_t)p->group * sizeof *p->bg);
    uint8_t *hwc = inf__calloc((size_t)(m * k), 1); /* W [m][c][taps] -> [m][taps][cgp], the driver's K order */
    if (!p->bg || !hwc) {
        inf__free(hwc);
        return INF_ENOMEM;
    }
    p->cgp = cgp != cg ? cgp : 0;
    for (int64_t o = 0; o < m; o++)
        for (int64_t c = 0; c < cg; c++)
            for (int64_t t = 0; t < taps; t++)
                hwc[(o * taps + t) * cgp + c] = ((const uint8_t *)w->data)[(o * cg + c) * taps + t];
    inf_status st = INF_OK;
    inf__qgemm_isa base = isa; /* before the pair-safe choice: qconv_pack_rgb's */
    (void)base;
    isa = inf__qgemm_pack_isa(isa, k, m, hwc, w->dtype, k, true); /* one kernel for every group */
    for (int64_t grp = 0; grp < p->group && st == INF_OK; grp++) {
        bool per_ch = wz && inf_tensor_numel(wz) > 1;
        const void *zp = wz ? (const char *)wz->data + (per_ch ? grp * mg : 0) : NULL;
        st = inf__qgemm_pack_b(arena, isa, k, mg, hwc + grp * mg * k, w->dtype, k, true, zp, per_ch ? mg : 1,
                               &p->bg[grp]);
    }
    inf__free(hwc);
#if defined(__x86_64__) && !defined(INF_EDGE)
    if (st == INF_OK && isa == INF_QGEMM_AVX2_UBS && p->cgp == 4 && cg == 3 && p->group == 1 && w->ndim == 4 &&
        w->dims[2] == 3 && w->dims[3] == 3)
        st = qconv_pack_rgb(arena, p, w, base);
    int wtile = st == INF_OK ? qwino_tile(p, w, isa, wz_zero, cgp != cg) : 0;
    if (wtile) {
        st = inf__qwino_pack(arena, wtile, cg, m, w->data, &p->wino);
        p->has_wino = st == INF_OK;
    }
#endif
    if (st == INF_OK && cg == 1 && mg == 1 && p->group > 1 && taps <= 64) { /* depthwise: ops/ref/qdepthwise.c */
        bool per_ch = wz && inf_tensor_numel(wz) > 1;
        st = inf__qdw_pack(arena, m, taps, w->data, w->dtype, wz ? wz->data : NULL, per_ch ? m : 1, &p->dw);
        p->has_dw = st == INF_OK;
    }
    if (st != INF_OK) return st;
    p->packed = true;
    p->w_src = w->data;
    p->w_ndim = w->ndim;
    memcpy(p->w_dims, w->dims, sizeof p->w_dims);
    return INF_OK;
}

/* A uint8 W with a uint8 zero point (per tensor or per output channel) whose every w - wz fits int8 -- Infera's
 * dynamic files' W, zero point 128 -- as int8 without a zero point into *out (inf__free it): the same integer
 * sums, (x - xz) * (w - wz), and W then takes the kernels that need no zero point (the direct convolution,
 * Winograd) instead of im2col rows with their per-position sums.  *out NULL when W does not qualify. */
static inf_status shifted_weights(const inf_tensor *w, const inf_tensor *wz, int8_t **out) {
    *out = NULL;
    int64_t n = inf_tensor_numel(w), m = w->ndim > 0 ? w->dims[0] : 0, nz = wz ? inf_tensor_numel(wz) : 0;
    if (w->dtype != INF_DTYPE_U8 || !wz || wz->dtype != INF_DTYPE_U8 || m < 1 || !(nz == 1 || nz == m)) return INF_OK;
    const uint8_t *v = w->data, *z = wz->data;
    int64_t per = n / m;
    for (int64_t i = 0; i < n; i++) {
        int d = v[i] - z[nz == 1 ? 0 : i / per];
        if (d < -128 || d > 127) return INF_OK;
    }
    int8_t *s = inf__malloc((size_t)n);
    if (!s) return INF_ENOMEM;
    for (int64_t i = 0; i < n; i++) s[i] = (int8_t)(v[i] - z[nz == 1 ? 0 : i / per]);
    *out = s;
    return INF_OK;
}

/* Packs a constant W (input w_at; zero point input wzp_at) per group, when isa allows; a uint8 W with a zero
 * point as its int8 shift when that is exact (shifted_weights). */
static inf_status qconv_pack(inf__node *node, inf__arena *arena, qconv_params *p, inf__qgemm_isa isa, int w_at,
                             int wzp_at) {
    const inf_tensor *w = inf__node_constant_input(node, w_at), *wz = inf__node_constant_input(node, wzp_at);
    bool has_wz = wzp_at < node->n_inputs && node->inputs[wzp_at] >= 0;
    int8_t *shifted = NULL;
    if (w && w->kind == INF_KIND_TENSOR && w->data && has_wz && wz && wz->kind == INF_KIND_TENSOR && wz->data) {
        inf_status st = shifted_weights(w, wz, &shifted);
        if (st != INF_OK) return st;
    }
    if (!shifted) return qconv_pack_w(arena, p, isa, w, wz, has_wz);
    inf_tensor ws = *w;
    ws.dtype = INF_DTYPE_I8, ws.data = shifted;
    inf_status st = qconv_pack_w(arena, p, isa, &ws, NULL, false);
    inf__free(shifted);
    if (p->packed) p->w_src = w->data; /* the W a run is given, checked against (inf__qconv_op_packed_fits) */
    return st;
}

inf_status inf__qconv_op_init(inf__node *node, inf__arena *arena, inf_error *err) {
    qconv_params *p = inf__op_params(arena, qconv_params);
    if (!p) return INF_ENOMEM;
    const char *ap = inf__attr_string(node, "auto_pad", "NOTSET");
    if (!strcmp(ap, "NOTSET"))
        p->auto_pad = AUTO_NOTSET;
    else if (!strcmp(ap, "SAME_UPPER"))
        p->auto_pad = AUTO_SAME_UPPER;
    else if (!strcmp(ap, "SAME_LOWER"))
        p->auto_pad = AUTO_SAME_LOWER;
    else if (!strcmp(ap, "VALID"))
        p->auto_pad = AUTO_VALID;
    else
        return inf__node_error(node, err, INF_EMODEL, "unknown auto_pad '%s'", ap);
    p->group = inf__attr_int(node, "group", 1);
    p->kernel = inf__attr_ints(node, "kernel_shape", &p->n_kernel);
    p->strides = inf__attr_ints(node, "strides", &p->n_strides);
    p->dilations = inf__attr_ints(node, "dilations", &p->n_dilations);
    p->pads = inf__attr_ints(node, "pads", &p->n_pads);
    p->nhwc_in = inf__attr_int(node, "u8_in", 0) != 0;
    p->nhwc_out = inf__attr_int(node, "u8_out", 0) != 0;
    int n_pk = 0, n_ps = 0;
    const int64_t *pk = inf__attr_ints(node, "pool_kernel", &n_pk), *ps = inf__attr_ints(node, "pool_strides", &n_ps);
    if (n_pk || n_ps) {
        if (n_pk != 2 || n_ps != 2 || pk[0] < 1 || pk[1] < 1 || ps[0] < pk[0] || ps[1] < pk[1])
            return inf__node_error(node, err, INF_EMODEL,
                                   "pool_kernel/pool_strides: expected 2 values each, strides >= kernel");
        p->pool[0] = pk[0], p->pool[1] = pk[1], p->pool[2] = ps[0], p->pool[3] = ps[1];
    }
    if (p->group < 1) return inf__node_error(node, err, INF_EMODEL, "group = %lld, must be >= 1", (long long)p->group);
    inf_status st;
    if ((st = inf__check_window_attrs(node, err, false)) != INF_OK) return st;
    node->params = p;
    /* W is input 1 of ConvInteger, input 3 of QLinearConv and the fused QConv
     * (which always packs: it has no loops of its own) */
    bool fused = node->op->domain == INF_DOMAIN_INFERA, qlinear = fused || !strcmp(node->op_type, "QLinearConv");
    inf__qgemm_isa isa = inf__qgemm_best_isa();
    if (isa == INF_QGEMM_REF && !fused) return INF_OK;
    return qconv_pack(node, arena, p, isa, qlinear ? 3 : 1, qlinear ? 5 : 3);
}

inf_status inf__qconv_op_geometry(inf__kernel_ctx *ctx, const qconv_params *p, const inf_tensor *x, const inf_tensor *w,
                                  qconv_geom *g) {
    char b1[96], b2[96];
    if (x->ndim < 3 || w->ndim != x->ndim)
        return inf__kernel_error(ctx, INF_ESHAPE, "inputs x %s and w %s: expected the same rank >= 3",
                                 inf__shape_str(x->ndim, x->dims, b1, sizeof b1),
                                 inf__shape_str(w->ndim, w->dims, b2, sizeof b2));
    int nd = g->nd = x->ndim - 2;
    if ((p->n_kernel && p->n_kernel != nd) || (p->n_strides && p->n_strides != nd) ||
        (p->n_dilations && p->n_dilations != nd) || (p->n_pads && p->n_pads != 2 * nd))
        return inf__kernel_error(ctx, INF_ESHAPE, "kernel_shape/strides/dilations/pads do not match %d spatial dims",
                                 nd);
    g->n = x->dims[0], g->c = x->dims[1], g->m = w->dims[0];
    if (g->c != w->dims[1] * p->group || g->m % p->group)
        return inf__kernel_error(ctx, INF_ESHAPE, "x %s and w %s do not match with group %lld",
                                 inf__shape_str(x->ndim, x->dims, b1, sizeof b1),
                                 inf__shape_str(w->ndim, w->dims, b2, sizeof b2), (long long)p->group);
    g->cg = g->c / p->group, g->mg = g->m / p->group;
    g->in_total = g->out_total = g->k_total = 1;
    for (int i = 0; i < nd; i++) {
        int64_t in = x->dims[2 + i], k = w->dims[2 + i];
        if (p->n_kernel && p->kernel[i] != k)
            return inf__kernel_error(ctx, INF_ESHAPE, "kernel_shape[%d] = %lld but w is %s", i, (long long)p->kernel[i],
                                     inf__shape_str(w->ndim, w->dims, b1, sizeof b1));
        int64_t s = p->n_strides ? p->strides[i] : 1, d = p->n_dilations ? p->dilations[i] : 1;
        int64_t dk = (k - 1) * d + 1, pb = 0, pe = 0, out;
        if (p->auto_pad == AUTO_SAME_UPPER || p->auto_pad == AUTO_SAME_LOWER) {
            out = (in + s - 1) / s;
            int64_t total = (out - 1) * s + dk - in;
            if (total < 0) total = 0;
            pb = p->auto_pad == AUTO_SAME_UPPER ? total / 2 : total - total / 2;
        } else {
            if (p->auto_pad == AUTO_NOTSET && p->n_pads) pb = p->pads[i], pe = p->pads[nd + i];
            int64_t span = in + pb + pe - dk;
            out = span < 0 ? 0 : span / s + 1;
        }
        if (k < 1 || out < 1)
            return inf__kernel_error(ctx, INF_ESHAPE, "x %s: spatial dim %d is smaller than the kernel",
                                     inf__shape_str(x->ndim, x->dims, b1, sizeof b1), i);
        g->in[i] = in, g->out[i] = out, g->k[i] = k, g->s[i] = s, g->d[i] = d, g->pb[i] = pb;
        g->in_total *= in, g->out_total *= out, g->k_total *= k;
    }
    return INF_OK;
}

/* The integer sum for output (n, m) at output position opos. */
static int64_t qconv_point(const qconv_geom *g, const qconv_args *q, int64_t n, int64_t m, const int64_t *opos) {
    int64_t grp = m / g->mg, acc = 0;
    int32_t xz = zp_at(q->xzp, 0), wz = zp_at(q->wzp, m);
    int64_t kpos[MAX_SP] = {0};
    for (int64_t kk = 0; kk < g->k_total; kk++) {
        int64_t off = 0;
        bool inside = true;
        for (int i = 0; i < g->nd && inside; i++) {
            int64_t ip = opos[i] * g->s[i] - g->pb[i] + kpos[i] * g->d[i];
            inside = ip >= 0 && ip < g->in[i];
            off = off * g->in[i] + ip;
        }
        if (inside)
            for (int64_t c = 0; c < g->cg; c++) {
                int64_t xi = (n * g->c + grp * g->cg + c) * g->in_total + off;
                int64_t wi = (m * g->cg + c) * g->k_total + kk;
                acc += (int64_t)(q_at(q->x, xi) - xz) * (q_at(q->w, wi) - wz);
            }
        for (int i = g->nd - 1; i >= 0 && ++kpos[i] == g->k[i]; i--)
            kpos[i] = 0;
    }
    return acc;
}

static void qconv_compute(const qconv_geom *g, const qconv_args *q) {
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t m = 0; m < g->m; m++) {
            int64_t opos[MAX_SP] = {0};
            float mult = q->ys ? scale_at(q->xs, 0) * scale_at(q->ws, m) / scale_at(q->ys, 0) : 0;
            int64_t bias = q->bias ? ((const int32_t *)q->bias->data)[m] : 0;
            for (int64_t o = 0; o < g->out_total; o++) {
                int64_t acc = qconv_point(g, q, n, m, opos) + bias, at = (n * g->m + m) * g->out_total + o;
                if (!q->ys)
                    ((int32_t *)q->y->data)[at] = (int32_t)(uint32_t)acc;
                else
                    q_store(q->y, at, (float)acc * mult, zp_at(q->yzp, 0));
                for (int i = g->nd - 1; i >= 0 && ++opos[i] == g->out[i]; i--)
                    opos[i] = 0;
            }
        }
}

inf_status inf__qconv_op_output(inf__kernel_ctx *ctx, const qconv_geom *g, inf_dtype dt, inf_tensor **y) {
    int64_t dims[INF_MAX_DIMS] = {g->n, g->m};
    for (int i = 0; i < g->nd; i++)
        dims[2 + i] = g->out[i];
    return inf__kernel_output(ctx, 0, dt, g->nd + 2, dims, y);
}

/* The packed path for a 1-D/2-D conv whose W is the one packed at load and
 * whose x zero point is per tensor: false to take the loops. */
bool inf__qconv_op_packed_fits(const inf__kernel_ctx *ctx, const qconv_geom *g, const qconv_args *q) {
    const qconv_params *p = ctx->node->params;
    return p->packed && q->w->data == p->w_src && q->w->ndim == p->w_ndim &&
           !memcmp(q->w->dims, p->w_dims, (size_t)p->w_ndim * sizeof(int64_t)) && g->nd <= 2 &&
           (!q->xzp || inf_tensor_numel(q->xzp) == 1);
}

inf_status inf__qconv_op_run_packed(inf__kernel_ctx *ctx, const qconv_geom *g, const qconv_args *q,
                                    const inf__qout *out, void *y) {
    const qconv_params *p = ctx->node->params;
    bool one_d = g->nd == 1;
    inf__qconv_geom qg = {.n = g->n,
                          .c = g->c,
                          .m = g->m,
                          .group = p->group,
                          .cg = g->cg,
                          .mg = g->mg,
                          .ih = one_d ? 1 : g->in[0],
                          .iw = g->in[g->nd - 1],
                          .oh = one_d ? 1 : g->out[0],
                          .ow = g->out[g->nd - 1],
                          .kh = one_d ? 1 : g->k[0],
                          .kw = g->k[g->nd - 1],
                          .sh = one_d ? 1 : g->s[0],
                          .sw = g->s[g->nd - 1],
                          .dh = one_d ? 1 : g->d[0],
                          .dw = g->d[g->nd - 1],
                          .pt = one_d ? 0 : g->pb[0],
                          .pl = g->pb[g->nd - 1],
                          .cgp = p->cgp,
                          .pkh = p->pool[0],
                          .pkw = p->pool[1],
                          .psh = p->pool[2],
                          .psw = p->pool[3],
                          .dwise = p->has_dw ? &p->dw : NULL,
                          .wino = p->has_wino ? &p->wino : NULL,
                          .rgb = p->has_rgb ? &p->rgb : NULL};
    void *scratch = inf__kernel_scratch(ctx, inf__qconv_scratch_bytes(&qg, &p->bg[0]));
    if (!scratch) return INF_ENOMEM;
    inf__qsrc x = {.data = q->x->data, .dtype = q->x->dtype, .zp = zp_at(q->xzp, 0), .nhwc = p->nhwc_in};
    if (q->x->dtype == INF_DTYPE_F32) x.scale = scale_at(q->xs, 0), x.q_dtype = q->xzp ? q->xzp->dtype : INF_DTYPE_U8;
    inf__qconv_drive(ctx->pool, &qg, p->bg, &x, out, y, scratch);
    return INF_OK;
}

/* mult[j] = a_scale * w_scale[j] (/ y_scale when ys) for j < n: scale_at's
 * values, with the scalar-or-vector test made once (it counts elements). */
void inf__qconv_op_scale_products(const inf_tensor *xs, const inf_tensor *ws, const inf_tensor *ys, int64_t n,
                                  float *mult) {
    const float *w = ws->data, x = scale_at(xs, 0);
    bool per_channel = inf_tensor_numel(ws) != 1;
    for (int64_t j = 0; j < n; j++)
        mult[j] = ys ? x * w[per_channel ? j : 0] / scale_at(ys, 0) : x * w[per_channel ? j : 0];
}

/* Per-channel multipliers a_scale * w_scale[m] (/ y_scale), in scratch. */
float *inf__qconv_op_mults(inf__kernel_ctx *ctx, const qconv_geom *g, const qconv_args *q) {
    float *mult = inf__kernel_scratch(ctx, (size_t)g->m * sizeof *mult);
    if (mult) inf__qconv_op_scale_products(q->xs, q->ws, q->ys, g->m, mult);
    return mult;
}

static inf_status conv_integer_run(inf__kernel_ctx *ctx) {
    const qconv_params *p = ctx->node->params;
    qconv_args q = {ctx->in[0], opt_input(ctx, 1), opt_input(ctx, 2), opt_input(ctx, 3), NULL, NULL, NULL, NULL, NULL,
                    NULL};
    inf_status st = check_q8(ctx, "x", q.x);
    if (st == INF_OK) st = check_q8(ctx, "w", q.w);
    if (st == INF_OK) st = check_zero_point(ctx, "x_zero_point", q.xzp, q.x->dtype);
    if (st == INF_OK) st = check_zero_point(ctx, "w_zero_point", q.wzp, q.w->dtype);
    if (st != INF_OK) return st;
    qconv_geom g;
    if ((st = inf__qconv_op_geometry(ctx, p, q.x, q.w, &g)) != INF_OK) return st;
    if ((st = check_param(ctx, "x_zero_point", q.xzp, 1, "per tensor")) != INF_OK ||
        (st = check_param(ctx, "w_zero_point", q.wzp, g.m, "per output channel")) != INF_OK)
        return st;
    if ((st = inf__qconv_op_output(ctx, &g, INF_DTYPE_I32, &q.y)) != INF_OK) return st;
    if (inf__qconv_op_packed_fits(ctx, &g, &q)) {
        inf__qout out = {.kind = INF_QOUT_I32};
        return inf__qconv_op_run_packed(ctx, &g, &q, &out, q.y->data);
    }
    qconv_compute(&g, &q);
    return INF_OK;
}

const inf__op_impl op_conv_integer = {inf__qconv_op_init, conv_integer_run};

static inf_status qlinear_conv_run(inf__kernel_ctx *ctx) {
    char buf[96];
    const qconv_params *p = ctx->node->params;
    qconv_args q = {ctx->in[0],        opt_input(ctx, 3), opt_input(ctx, 2), opt_input(ctx, 5), opt_input(ctx, 8),
                    opt_input(ctx, 1), opt_input(ctx, 4), opt_input(ctx, 6), opt_input(ctx, 7), NULL};
    inf_status st = check_q8(ctx, "x", q.x);
    if (st == INF_OK) st = check_q8(ctx, "w", q.w);
    if (st == INF_OK) st = check_q8(ctx, "y_zero_point", q.yzp);
    if (st == INF_OK) st = check_zero_point(ctx, "x_zero_point", q.xzp, q.x->dtype);
    if (st == INF_OK) st = check_zero_point(ctx, "w_zero_point", q.wzp, q.w->dtype);
    if (st == INF_OK) st = check_scale(ctx, "x_scale", q.xs);
    if (st == INF_OK) st = check_scale(ctx, "w_scale", q.ws);
    if (st == INF_OK) st = check_scale(ctx, "y_scale", q.ys);
    if (st != INF_OK) return st;
    qconv_geom g;
    if ((st = inf__qconv_op_geometry(ctx, p, q.x, q.w, &g)) != INF_OK) return st;
    if ((st = check_param(ctx, "x_scale", q.xs, 1, "per tensor")) != INF_OK ||
        (st = check_param(ctx, "x_zero_point", q.xzp, 1, "per tensor")) != INF_OK ||
        (st = check_param(ctx, "w_scale", q.ws, g.m, "per output channel")) != INF_OK ||
        (st = check_param(ctx, "w_zero_point", q.wzp, g.m, "per output channel")) != INF_OK ||
        (st = check_param(ctx, "y_scale", q.ys, 1, "per tensor")) != INF_OK ||
        (st = check_param(ctx, "y_zero_point", q.yzp, 1, "per tensor")) != INF_OK)
        return st;
    if (q.bias && (q.bias->dtype != INF_DTYPE_I32 || q.bias->ndim != 1 || q.bias->dims[0] != g.m))
        return inf__kernel_error(ctx, INF_ESHAPE, "input B: expected int32 [%lld], got %s %s", (long long)g.m,
                                 inf_dtype_name(q.bias->dtype),
                                 inf__shape_str(q.bias->ndim, q.bias->dims, buf, sizeof buf));
    if ((st = inf__qconv_op_output(ctx, &g, q.yzp->dtype, &q.y)) != INF_OK) return st;
    if (inf__qconv_op_packed_fits(ctx, &g, &q)) {
        float *mult = inf__qconv_op_mults(ctx, &g, &q);
        if (!mult) return INF_ENOMEM;
        inf__qout out = {.kind = INF_QOUT_Q8,
                         .mult = mult,
                         .mult_per_col = true,
                         .bias_i32 = q.bias ? q.bias->data : NULL,
                         .y_dtype = q.y->dtype,
                         .y_zp = zp_at(q.yzp, 0)};
        return inf__qconv_op_run_packed(ctx, &g, &q, &out, q.y->data);
    }
    qconv_compute(&g, &q);
    return INF_OK;
}

const inf__op_impl op_qlinear_conv = {inf__qconv_op_init, qlinear_conv_run};
