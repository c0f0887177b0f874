/*
 * deform_conv.c -- ONNX DeformConv (opsets 19-26): a 2-D convolution whose
 * sampling points are moved by learned offsets (and weighted by an optional
 * mask), as torchvision's deform_conv2d computes it.
 *
 *   X [N, C, H, W], W [oC, C / group, kH, kW],
 *   offset [N, offset_group * 2 * kH * kW, oH, oW] (dy then dx per kernel tap),
 *   B [oC] (optional), mask [N, offset_group * kH * kW, oH, oW] (optional, default 1)
 *   -> Y [N, oC, oH, oW], oH = (H + pads - dilation * (kH - 1) - 1) / stride + 1.
 *
 * A channel c belongs to offset group c / (C / offset_group).  The input is
 * sampled bilinearly at (oh * stride - pad + kh * dilation + dy, ...): a
 * point at or beyond one pixel outside the image gives 0, and corners
 * outside the image count as 0 (torchvision's and ONNX Runtime's rule).
 * dtypes: float32, float64, float16, bfloat16 (accumulated in double).
 * Deviations: 2-D only (ONNX Runtime implements only 2-D as well).
 */
#include <math.h>

#include "ops/ops.h"

typedef struct deform_geom {
    int64_t n, c, h, w, oc, kh, kw, oh, ow, group, offset_group;
    int64_t sh, sw, dh, dw, ph, pw;
} deform_geom;

static double sample(const inf_tensor *x, int64_t base, int64_t h, int64_t w, double y, double xx) {
    if (!(y > -1 && y < (double)h && xx > -1 && xx < (double)w)) return 0; /* NaN too: floor(NaN) to int64 is UB */
    int64_t y0 = (int64_t)floor(y), x0 = (int64_t)floor(xx), y1 = y0 + 1, x1 = x0 + 1;
    double ly = y - (double)y0, lx = xx - (double)x0, hy = 1 - ly, hx = 1 - lx;
    double v00 = y0 >= 0 && x0 >= 0 ? inf__tensor_get_f64(x, base + y0 * w + x0) : 0;
    double v01 = y0 >= 0 && x1 < w ? inf__tensor_get_f64(x, base + y0 * w + x1) : 0;
    double v10 = y1 < h && x0 >= 0 ? inf__tensor_get_f64(x, base + y1 * w + x0) : 0;
    double v11 = y1 < h && x1 < w ? inf__tensor_get_f64(x, base + y1 * w + x1) : 0;
    return hy * hx * v00 + hy * lx * v01 + ly * hx * v10 + ly * lx * v11;
}

/* Reads the attributes and checks every shape against them. */
static inf_status read_geometry(inf__kernel_ctx *ctx, deform_geom *g) {
    const inf_tensor *x = ctx->in[0], *wt = ctx->in[1], *off = ctx->in[2];
    const inf_tensor *b = ctx->n_in > 3 ? ctx->in[3] : NULL, *mask = ctx->n_in > 4 ? ctx->in[4] : NULL;
    if (x->ndim != 4 || wt->ndim != 4 || off->ndim != 4)
        return inf__kernel_error(ctx, INF_ESHAPE, "X, W and offset must be 4-D (2-D images only), got ranks %d, %d, %d",
                                 x->ndim, wt->ndim, off->ndim);
    if (!inf__dtype_is_float(x->dtype) || wt->dtype != x->dtype || off->dtype != x->dtype)
        return inf__kernel_error(ctx, INF_ETYPE, "X, W and offset must share one float type");
    int n;
    const int64_t *v;
    g->n = x->dims[0], g->c = x->dims[1], g->h = x->dims[2], g->w = x->dims[3];
    g->oc = wt->dims[0], g->kh = wt->dims[2], g->kw = wt->dims[3];
    if ((v = inf__attr_ints(ctx->node, "kernel_shape", &n)) && (n != 2 || v[0] != g->kh || v[1] != g->kw))
        return inf__kernel_error(ctx, INF_EMODEL, "kernel_shape must be W's [kH, kW]");
    g->group = inf__attr_int(ctx->node, "group", 1);
    g->offset_group = inf__attr_int(ctx->node, "offset_group", 1);
    v = inf__attr_ints(ctx->node, "strides", &n);
    if (v && n != 2) return inf__kernel_error(ctx, INF_EMODEL, "strides needs 2 values");
    g->sh = v ? v[0] : 1, g->sw = v ? v[1] : 1;
    v = inf__attr_ints(ctx->node, "dilations", &n);
    if (v && n != 2) return inf__kernel_error(ctx, INF_EMODEL, "dilations needs 2 values");
    g->dh = v ? v[0] : 1, g->dw = v ? v[1] : 1;
    v = inf__attr_ints(ctx->node, "pads", &n);
    if (v && n != 4) return inf__kernel_error(ctx, INF_EMODEL, "pads needs 4 values");
    int64_t pad_end_h = v ? v[2] : 0, pad_end_w = v ? v[3] : 0;
    g->ph = v ? v[0] : 0, g->pw = v ? v[1] : 0;
    if (g->group < 1 || g->offset_group < 1 || g->c % g->group || g->oc % g->group || g->c % g->offset_group ||
        wt->dims[1] != g->c / g->group)
        return inf__kernel_error(ctx, INF_ESHAPE, "W [%lld, %lld, ...] does not fit C=%lld in %lld groups (offset groups %lld)",
                                 (long long)g->oc, (long long)wt->dims[1], (long long)g->c, (long long)g->group,
                                 (long long)g->offset_group);
    if (g->sh < 1 || g->sw < 1 || g->dh < 1 || g->dw < 1 || g->ph < 0 || g->pw < 0 || pad_end_h < 0 || pad_end_w < 0)
        return inf__kernel_error(ctx, INF_EMODEL, "strides and dilations must be >= 1 and pads >= 0");
    /* bounded as Conv's (inf__check_window_attrs), so the geometry below cannot overflow */
    const int64_t window[8] = {g->sh, g->sw, g->dh, g->dw, g->ph, g->pw, pad_end_h, pad_end_w};
    for (int i = 0; i < 8; i++)
        if (window[i] > INF_WINDOW_ATTR_MAX)
            return inf__kernel_error(ctx, INF_EMODEL, "strides, dilations and pads must be at most %lld, got %lld",
                                     (long long)INF_WINDOW_ATTR_MAX, (long long)window[i]);
    int64_t og_taps; /* offset_group * 2 * kH * kW: offset's channels */
    if (__builtin_mul_overflow(g->offset_group, 2 * g->kh * g->kw, &og_taps))
        return inf__kernel_error(ctx, INF_EMODEL, "offset_group %lld: offset's channel count overflows int64",
                                 (long long)g->offset_group);
    int64_t span_h, span_w; /* the dilated kernel less one; W's dimensions may be large when it is empty */
    if (__builtin_mul_overflow(g->dh, g->kh - 1, &span_h) || __builtin_mul_overflow(g->dw, g->kw - 1, &span_w))
        return inf__kernel_error(ctx, INF_ESHAPE, "the dilated kernel's size overflows int64");
    g->oh = (g->h + g->ph + pad_end_h - span_h - 1) / g->sh + 1;
    g->ow = (g->w + g->pw + pad_end_w - span_w - 1) / g->sw + 1;
    if (g->oh < 1 || g->ow < 1) return inf__kernel_error(ctx, INF_ESHAPE, "the kernel does not fit the padded image");
    int64_t taps = g->kh * g->kw;
    if (off->dims[0] != g->n || off->dims[1] != g->offset_group * 2 * taps || off->dims[2] != g->oh ||
        off->dims[3] != g->ow)
        return inf__kernel_error(ctx, INF_ESHAPE, "offset must be [%lld, %lld, %lld, %lld]", (long long)g->n,
                                 (long long)(g->offset_group * 2 * taps), (long long)g->oh, (long long)g->ow);
    if (b && b->kind == INF_KIND_TENSOR && inf_tensor_numel(b) > 0 && (b->ndim != 1 || b->dims[0] != g->oc || b->dtype != x->dtype))
        return inf__kernel_error(ctx, INF_ESHAPE, "B must be [%lld] of X's type", (long long)g->oc);
    if (mask && inf_tensor_numel(mask) > 0 &&
        (mask->ndim != 4 || mask->dims[0] != g->n || mask->dims[1] != g->offset_group * taps || mask->dims[2] != g->oh ||
         mask->dims[3] != g->ow || mask->dtype != x->dtype))
        return inf__kernel_error(ctx, INF_ESHAPE, "mask must be [%lld, %lld, %lld, %lld] of X's type", (long long)g->n,
                                 (long long)(g->offset_group * taps), (long long)g->oh, (long long)g->ow);
    return INF_OK;
}

static inf_status deform_conv_run(inf__kernel_ctx *ctx) {
    deform_geom g = {0};
    inf_status st = read_geometry(ctx, &g);
    if (st != INF_OK) return st;
    const inf_tensor *x = ctx->in[0], *wt = ctx->in[1], *off = ctx->in[2];
    const inf_tensor *b = ctx->n_in > 3 && ctx->in[3] && inf_tensor_numel(ctx->in[3]) > 0 ? ctx->in[3] : NULL;
    const inf_tensor *mask = ctx->n_in > 4 && ctx->in[4] && inf_tensor_numel(ctx->in[4]) > 0 ? ctx->in[4] : NULL;
    int64_t dims[4] = {g.n, g.oc, g.oh, g.ow};
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, 4, dims, &y)) != INF_OK) return st;
    int64_t taps = g.kh * g.kw, cg = g.c / g.group, ocg = g.oc / g.group, c_per_off = g.c / g.offset_group;
    int64_t plane = g.oh * g.ow;
    for (int64_t n = 0; n < g.n; n++)
        for (int64_t oc = 0; oc < g.oc; oc++) {
            int64_t grp = oc / ocg;
            for (int64_t oy = 0; oy < g.oh; oy++)
                for (int64_t ox = 0; ox < g.ow; ox++) {
                    double acc = b ? inf__tensor_get_f64(b, oc) : 0;
                    for (int64_t ci = 0; ci < cg; ci++) {
                        int64_t c = grp * cg + ci, og = c / c_per_off;
                        for (int64_t k = 0; k < taps; k++) {
                            int64_t ky = k / g.kw, kx = k % g.kw, at = oy * g.ow + ox;
                            int64_t off_base = (n * g.offset_group * 2 * taps + og * 2 * taps + 2 * k) * plane + at;
                            double dy = inf__tensor_get_f64(off, off_base), dx = inf__tensor_get_f64(off, off_base + plane);
                            double m = mask ? inf__tensor_get_f64(mask, (n * g.offset_group * taps + og * taps + k) * plane + at)
                                            : 1.0;
                            double py = (double)(oy * g.sh - g.ph + ky * g.dh) + dy;
                            double px = (double)(ox * g.sw - g.pw + kx * g.dw) + dx;
                            double v = sample(x, (n * g.c + c) * g.h * g.w, g.h, g.w, py, px);
                            acc += m * v * inf__tensor_get_f64(wt, ((oc * cg + ci) * g.kh + ky) * g.kw + kx);
                        }
                    }
                    inf__tensor_set_f64(y, ((n * g.oc + oc) * g.oh + oy) * g.ow + ox, acc);
                }
        }
    return INF_OK;
}

const inf__op_impl op_deform_conv = {NULL, deform_conv_run};
