/*
 * grid_sample.c -- ONNX GridSample, opsets 16-26 (the 4-D form): X
 * [N, C, H, W] and grid [N, H_out, W_out, 2] of (x, y) in [-1, 1], both
 * float16, float32 or float64; output [N, C, H_out, W_out] of X's type.
 *
 * Follows torch.nn.functional.grid_sample, which the spec and its test data
 * come from:
 *   - unnormalise: align_corners  ((g + 1) / 2) * (size - 1)
 *                  otherwise      ((g + 1) * size - 1) / 2;
 *   - padding_mode zeros reads 0 outside the image; border clamps the
 *     coordinate into [0, size-1]; reflection mirrors it about the border
 *     pixels' centres (align_corners) or edges, then clamps;
 *   - bilinear: the four neighbours of floor(x), floor(y);
 *     nearest: round half to even;
 *     bicubic: 4x4 neighbours with A = -0.75, the padding applied to each
 *     neighbour's integer coordinate.
 * Computed in double.
 *
 * Opset 20 renamed the modes (linear, cubic; default linear): the names of
 * the opset in force are accepted.
 *
 * Deviations: the N-D form of opset 20 (5-D X, volumetric grids) is refused
 * with an error naming the rank.
 */
#include <math.h>

#include "ops/ref/data_move.h"

typedef enum gsm_mode { GSM_BILINEAR, GSM_NEAREST, GSM_BICUBIC } gsm_mode;
typedef enum gsm_pad { GSM_ZEROS, GSM_BORDER, GSM_REFLECTION } gsm_pad;

typedef struct gsm_params {
    gsm_mode mode;
    gsm_pad pad;
    bool align;
} gsm_params;

static inf_status gsm_init(inf__node *node, inf__arena *arena, inf_error *err) {
    gsm_params *p = inf__op_params(arena, gsm_params);
    if (!p) return INF_ENOMEM;
    bool v20 = node->opset >= 20;
    const char *m = inf__attr_string(node, "mode", v20 ? "linear" : "bilinear");
    const char *pm = inf__attr_string(node, "padding_mode", "zeros");
    if (!strcmp(m, v20 ? "linear" : "bilinear"))
        p->mode = GSM_BILINEAR;
    else if (!strcmp(m, "nearest"))
        p->mode = GSM_NEAREST;
    else if (!strcmp(m, v20 ? "cubic" : "bicubic"))
        p->mode = GSM_BICUBIC;
    else
        return inf__node_error(node, err, INF_EMODEL, "attribute mode: '%s' is not a mode of opset %d (%s)", m,
                               node->opset, v20 ? "linear, nearest, cubic" : "bilinear, nearest, bicubic");
    if (!strcmp(pm, "zeros"))
        p->pad = GSM_ZEROS;
    else if (!strcmp(pm, "border"))
        p->pad = GSM_BORDER;
    else if (!strcmp(pm, "reflection"))
        p->pad = GSM_REFLECTION;
    else
        return inf__node_error(node, err, INF_EMODEL,
                               "attribute padding_mode: unsupported value '%s'", pm);
    p->align = inf__attr_int(node, "align_corners", 0) != 0;
    node->params = p;
    return INF_OK;
}

/* Mirrors x into [lo2/2, hi2/2] (bounds given doubled, as torch does). */
static double gsm_reflect(double x, double lo2, double hi2) {
    if (lo2 == hi2) return 0;
    double lo = lo2 / 2, span = (hi2 - lo2) / 2;
    x = fabs(x - lo);
    double extra = fmod(x, span);
    double flips = floor(x / span);
    return fmod(flips, 2.0) == 0 ? extra + lo : span - extra + lo;
}

static double gsm_clamp(double x, int64_t size) {
    return x < 0 ? 0 : x > (double)(size - 1) ? (double)(size - 1) : x;
}

/* Applies the padding mode to a source coordinate (border, reflection). */
static double gsm_pad_coord(const gsm_params *p, double x, int64_t size) {
    if (p->pad == GSM_BORDER) return gsm_clamp(x, size);
    if (p->pad == GSM_REFLECTION) {
        x = p->align ? gsm_reflect(x, 0, 2.0 * (double)(size - 1))
                     : gsm_reflect(x, -1, 2.0 * (double)size - 1);
        return gsm_clamp(x, size);
    }
    return x;
}

static double gsm_unnormalize(const gsm_params *p, double g, int64_t size) {
    return p->align ? (g + 1) / 2 * (double)(size - 1) : ((g + 1) * (double)size - 1) / 2;
}

/* Pixel at the integer-valued coordinates (px, py) of the plane at `base`;
 * 0 outside the image (NaN coordinates included). */
static double gsm_pixel(const inf_tensor *x, int64_t base, int64_t H, int64_t W, double px,
                        double py) {
    if (!(px >= 0 && py >= 0 && px <= (double)(W - 1) && py <= (double)(H - 1))) return 0;
    return inf__tensor_get_f64(x, base + (int64_t)py * W + (int64_t)px);
}

static void gsm_cubic_coeffs(double t, double *c) {
    const double A = -0.75;
    double u = t + 1, v = 1 - t, w = 2 - t;
    c[0] = ((A * u - 5 * A) * u + 8 * A) * u - 4 * A;
    c[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
    c[2] = ((A + 2) * v - (A + 3)) * v * v + 1;
    c[3] = ((A * w - 5 * A) * w + 8 * A) * w - 4 * A;
}

static double gsm_bicubic(const gsm_params *p, const inf_tensor *x, int64_t base, int64_t H,
                          int64_t W, double fx, double fy) {
    double x0 = floor(fx), y0 = floor(fy), cx[4], cy[4], sum = 0;
    gsm_cubic_coeffs(fx - x0, cx);
    gsm_cubic_coeffs(fy - y0, cy);
    for (int j = 0; j < 4; j++) {
        double row = 0;
        for (int i = 0; i < 4; i++) {
            double px = gsm_pad_coord(p, x0 - 1 + i, W), py = gsm_pad_coord(p, y0 - 1 + j, H);
            row += cx[i] * gsm_pixel(x, base, H, W, trunc(px), trunc(py));
        }
        sum += cy[j] * row;
    }
    return sum;
}

static double gsm_sample(const gsm_params *p, const inf_tensor *x, int64_t base, int64_t H,
                         int64_t W, double gx, double gy) {
    double fx = gsm_unnormalize(p, gx, W), fy = gsm_unnormalize(p, gy, H);
    if (p->mode == GSM_BICUBIC) return gsm_bicubic(p, x, base, H, W, fx, fy);
    fx = gsm_pad_coord(p, fx, W);
    fy = gsm_pad_coord(p, fy, H);
    if (p->mode == GSM_NEAREST) return gsm_pixel(x, base, H, W, nearbyint(fx), nearbyint(fy));
    double x0 = floor(fx), y0 = floor(fy), tx = fx - x0, ty = fy - y0;
    double top =
        (1 - tx) * gsm_pixel(x, base, H, W, x0, y0) + tx * gsm_pixel(x, base, H, W, x0 + 1, y0);
    double bottom = (1 - tx) * gsm_pixel(x, base, H, W, x0, y0 + 1) +
                    tx * gsm_pixel(x, base, H, W, x0 + 1, y0 + 1);
    return (1 - ty) * top + ty * bottom;
}

static inf_status gsm_run(inf__kernel_ctx *ctx) {
    const gsm_params *p = ctx->node->params;
    const inf_tensor *x, *g;
    inf_status st;
    if ((st = move_input(ctx, 0, "X", true, &x)) != INF_OK ||
        (st = move_input(ctx, 1, "grid", true, &g)) != INF_OK)
        return st;
    if (!inf__dtype_is_float(x->dtype) || !inf__dtype_is_float(g->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "inputs X and grid must be float tensors");
    if (x->ndim != 4 || g->ndim != 4 || g->dims[0] != x->dims[0] || g->dims[3] != 2)
        return inf__kernel_error(ctx, INF_ESHAPE,
                                 "inputs: expected X [N, C, H, W] and grid [N, H_out, W_out, 2]");
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t Ho = g->dims[1], Wo = g->dims[2], dims[4] = {N, C, Ho, Wo};
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, 4, dims, &y)) != INF_OK) return st;
    if (inf_tensor_numel(y) == 0) return INF_OK;
    if (H == 0 || W == 0) {
        for (int64_t i = 0, n = inf_tensor_numel(y); i < n; i++) inf__tensor_set_f64(y, i, 0);
        return INF_OK;
    }
    int64_t dst = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++) {
            int64_t base = (n * C + c) * H * W, gi = n * Ho * Wo * 2;
            for (int64_t k = 0; k < Ho * Wo; k++, gi += 2, dst++)
                inf__tensor_set_f64(y, dst,
                                    gsm_sample(p, x, base, H, W, inf__tensor_get_f64(g, gi),
                                               inf__tensor_get_f64(g, gi + 1)));
        }
    return INF_OK;
}

const inf__op_impl op_grid_sample = {gsm_init, gsm_run};
