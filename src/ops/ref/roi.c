/*
 * roi.c -- pooling over regions of interest: ONNX RoiAlign (10-17) and
 * MaxRoiPool (1-17).  X [N, C, H, W] of float16, float32 or float64,
 * computed in double.
 *
 * RoiAlign: rois [R, 4] (x1, y1, x2, y2, X's type), batch_indices [R]
 * (int64, int32 accepted); output [R, C, output_height, output_width].
 * Each bin averages (mode avg) or takes the maximum (mode max) of
 * sampling_ratio² bilinear samples (sampling_ratio 0: ceil(roi size / bins)
 * per axis).  coordinate_transformation_mode (opset 16) half_pixel shifts
 * the roi by -0.5 pixel; output_half_pixel (the opset 10 behaviour, and
 * opset 16's default is half_pixel) does not and makes the roi at least one
 * pixel wide.  Samples follow onnxruntime (and Caffe2, where the op comes
 * from): a sample more than one pixel outside the image counts as 0, one
 * within is clamped to the border; in max mode a sample's value is the
 * largest of its four weighted neighbours (onnxruntime's definition).
 *
 * MaxRoiPool: rois [R, 5] (batch index, x1, y1, x2, y2), pooled_shape
 * [h, w], spatial_scale; output [R, C, h, w], the maximum over each bin of
 * the rounded, scaled roi (Caffe's ROIPooling); an empty bin gives 0.
 *
 * Deviations: none known.
 */
#include <math.h>

#include "ops/ref/data_move.h"

static inf_status roi_check_x(inf__kernel_ctx *ctx, const inf_tensor *x, const inf_tensor *rois,
                              int64_t roi_len) {
    if (!inf__dtype_is_float(x->dtype) || x->ndim != 4)
        return inf__kernel_error(ctx, INF_ESHAPE, "input X: expected a float tensor [N, C, H, W]");
    if (rois->dtype != x->dtype || rois->ndim != 2 || rois->dims[1] != roi_len)
        return inf__kernel_error(ctx, INF_ESHAPE, "input rois: expected %s [num_rois, %lld]",
                                 inf_dtype_name(x->dtype), (long long)roi_len);
    return INF_OK;
}

/* ---- RoiAlign ---- */

typedef struct ra_params {
    bool max_mode, half_pixel;
    int64_t out_h, out_w, sampling;
    double scale;
} ra_params;

static inf_status ra_init(inf__node *node, inf__arena *arena, inf_error *err) {
    ra_params *p = inf__op_params(arena, ra_params);
    if (!p) return INF_ENOMEM;
    const char *mode = inf__attr_string(node, "mode", "avg");
    const char *ct = inf__attr_string(node, "coordinate_transformation_mode",
                                      node->opset >= 16 ? "half_pixel" : "output_half_pixel");
    if (strcmp(mode, "avg") && strcmp(mode, "max"))
        return inf__node_error(node, err, INF_EMODEL,
                               "attribute mode: expected avg or max, got '%s'", mode);
    if (strcmp(ct, "half_pixel") && strcmp(ct, "output_half_pixel"))
        return inf__node_error(node, err, INF_EMODEL,
                               "attribute coordinate_transformation_mode: expected half_pixel or "
                               "output_half_pixel, got '%s'",
                               ct);
    p->max_mode = !strcmp(mode, "max");
    p->half_pixel = !strcmp(ct, "half_pixel");
    p->out_h = inf__attr_int(node, "output_height", 1);
    p->out_w = inf__attr_int(node, "output_width", 1);
    p->sampling = inf__attr_int(node, "sampling_ratio", 0);
    p->scale = inf__attr_float(node, "spatial_scale", 1.0f);
    if (p->out_h < 1 || p->out_w < 1 || p->sampling < 0)
        return inf__node_error(
            node, err, INF_EMODEL,
            "attributes output_height/output_width must be >= 1 and sampling_ratio >= 0");
    node->params = p;
    return INF_OK;
}

/* The four weighted neighbours of sample (y, x) in the plane at `base`;
 * all zero when the sample lies more than a pixel outside. */
static void ra_sample(const inf_tensor *x, int64_t base, int64_t H, int64_t W, double y, double xx,
                      double *v) {
    v[0] = v[1] = v[2] = v[3] = 0;
    if (!(y >= -1.0 && y <= (double)H && xx >= -1.0 && xx <= (double)W)) return; /* NaN too */
    if (y <= 0) y = 0;
    if (xx <= 0) xx = 0;
    int64_t y0 = (int64_t)y, x0 = (int64_t)xx, y1, x1;
    if (y0 >= H - 1)
        y1 = y0 = H - 1, y = (double)y0;
    else
        y1 = y0 + 1;
    if (x0 >= W - 1)
        x1 = x0 = W - 1, xx = (double)x0;
    else
        x1 = x0 + 1;
    double ly = y - (double)y0, lx = xx - (double)x0, hy = 1 - ly, hx = 1 - lx;
    v[0] = hy * hx * inf__tensor_get_f64(x, base + y0 * W + x0);
    v[1] = hy * lx * inf__tensor_get_f64(x, base + y0 * W + x1);
    v[2] = ly * hx * inf__tensor_get_f64(x, base + y1 * W + x0);
    v[3] = ly * lx * inf__tensor_get_f64(x, base + y1 * W + x1);
}

/* One output bin (ph, pw) of a roi starting at (y0, x0) with bins of
 * (bh, bw) and a gh x gw sampling grid. */
static double ra_bin(const ra_params *p, const inf_tensor *x, int64_t base, int64_t H, int64_t W,
                     double y0, double x0, double bh, double bw, int64_t gh, int64_t gw) {
    double acc = 0;
    for (int64_t iy = 0; iy < gh; iy++) {
        double y = y0 + ((double)iy + 0.5) * bh / (double)gh;
        for (int64_t ix = 0; ix < gw; ix++) {
            double xx = x0 + ((double)ix + 0.5) * bw / (double)gw, v[4];
            ra_sample(x, base, H, W, y, xx, v);
            if (!p->max_mode) {
                acc += v[0] + v[1] + v[2] + v[3];
                continue;
            }
            double m = fmax(fmax(v[0], v[1]), fmax(v[2], v[3]));
            acc = iy == 0 && ix == 0 ? m : fmax(acc, m);
        }
    }
    int64_t count = gh * gw > 0 ? gh * gw : 1;
    return p->max_mode ? acc : acc / (double)count;
}

static inf_status ra_run(inf__kernel_ctx *ctx) {
    const ra_params *p = ctx->node->params;
    const inf_tensor *x, *rois, *bi;
    inf_status st;
    if ((st = move_input(ctx, 0, "X", true, &x)) != INF_OK ||
        (st = move_input(ctx, 1, "rois", true, &rois)) != INF_OK ||
        (st = move_input(ctx, 2, "batch_indices", true, &bi)) != INF_OK ||
        (st = roi_check_x(ctx, x, rois, 4)) != INF_OK)
        return st;
    int64_t R = rois->dims[0], N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    if ((bi->dtype != INF_DTYPE_I64 && bi->dtype != INF_DTYPE_I32) || bi->ndim != 1 ||
        bi->dims[0] != R)
        return inf__kernel_error(ctx, INF_ESHAPE, "input batch_indices: expected int64 [%lld]",
                                 (long long)R);
    int64_t dims[4] = {R, C, p->out_h, p->out_w};
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, 4, dims, &y)) != INF_OK) return st;
    double off = p->half_pixel ? 0.5 : 0.0;
    int64_t dst = 0;
    for (int64_t r = 0; r < R; r++) {
        int64_t n = inf__tensor_get_i64(bi, r);
        if (n < 0 || n >= N)
            return inf__kernel_error(ctx, INF_ERANGE,
                                     "input batch_indices: element %lld is %lld, outside [0, %lld)",
                                     (long long)r, (long long)n, (long long)N);
        double x0 = inf__tensor_get_f64(rois, r * 4) * p->scale - off;
        double y0 = inf__tensor_get_f64(rois, r * 4 + 1) * p->scale - off;
        double rw = inf__tensor_get_f64(rois, r * 4 + 2) * p->scale - off - x0;
        double rh = inf__tensor_get_f64(rois, r * 4 + 3) * p->scale - off - y0;
        if (!p->half_pixel) {
            rw = fmax(rw, 1.0);
            rh = fmax(rh, 1.0);
        }
        double bh = rh / (double)p->out_h, bw = rw / (double)p->out_w;
        double dgh = p->sampling > 0 ? (double)p->sampling : ceil(bh);
        double dgw = p->sampling > 0 ? (double)p->sampling : ceil(bw);
        if (!(dgh < 65536 && dgw < 65536)) /* also catches NaN */
            return inf__kernel_error(
                ctx, INF_ERANGE, "input rois: roi %lld is too large or not finite", (long long)r);
        int64_t gh = dgh > 0 ? (int64_t)dgh : 0, gw = dgw > 0 ? (int64_t)dgw : 0;
        for (int64_t c = 0; c < C; c++) {
            int64_t base = (n * C + c) * H * W;
            for (int64_t ph = 0; ph < p->out_h; ph++)
                for (int64_t pw = 0; pw < p->out_w; pw++)
                    inf__tensor_set_f64(y, dst++,
                                        ra_bin(p, x, base, H, W, y0 + (double)ph * bh,
                                               x0 + (double)pw * bw, bh, bw, gh, gw));
        }
    }
    return INF_OK;
}

/* ---- MaxRoiPool ---- */

static int64_t mrp_clamp(int64_t v, int64_t hi) { return v < 0 ? 0 : v > hi ? hi : v; }

static double mrp_bin(const inf_tensor *x, int64_t base, int64_t W, int64_t hs, int64_t he,
                      int64_t ws, int64_t we) {
    if (he <= hs || we <= ws) return 0;
    double m = -INFINITY;
    for (int64_t h = hs; h < he; h++)
        for (int64_t w = ws; w < we; w++) m = fmax(m, inf__tensor_get_f64(x, base + h * W + w));
    return m;
}

static inf_status mrp_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x, *rois;
    inf_status st;
    if ((st = move_input(ctx, 0, "X", true, &x)) != INF_OK ||
        (st = move_input(ctx, 1, "rois", true, &rois)) != INF_OK ||
        (st = roi_check_x(ctx, x, rois, 5)) != INF_OK)
        return st;
    int n_shape;
    const int64_t *shape = inf__attr_ints(ctx->node, "pooled_shape", &n_shape);
    if (!shape || n_shape != 2 || shape[0] < 1 || shape[1] < 1)
        return inf__kernel_error(ctx, INF_EINVAL,
                                 "attribute pooled_shape: expected two positive values");
    double scale = inf__attr_float(ctx->node, "spatial_scale", 1.0f);
    int64_t R = rois->dims[0], N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t PH = shape[0], PW = shape[1], dims[4] = {R, C, PH, PW};
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, 4, dims, &y)) != INF_OK) return st;
    int64_t dst = 0;
    for (int64_t r = 0; r < R; r++) {
        double v[5];
        for (int k = 0; k < 5; k++) v[k] = inf__tensor_get_f64(rois, r * 5 + k);
        if (!(v[0] >= 0 && v[0] < (double)N))
            return inf__kernel_error(ctx, INF_ERANGE,
                                     "input rois: roi %lld names batch %g, outside [0, %lld)",
                                     (long long)r, v[0], (long long)N);
        for (int k = 1; k < 5; k++)
            if (!(fabs(v[k] * scale) < 1e15))
                return inf__kernel_error(
                    ctx, INF_ERANGE, "input rois: roi %lld has invalid coordinates", (long long)r);
        int64_t n = (int64_t)v[0];
        int64_t ws = (int64_t)round(v[1] * scale), hs = (int64_t)round(v[2] * scale);
        int64_t we = (int64_t)round(v[3] * scale), he = (int64_t)round(v[4] * scale);
        double bh = (double)(he - hs + 1 > 1 ? he - hs + 1 : 1) / (double)PH;
        double bw = (double)(we - ws + 1 > 1 ? we - ws + 1 : 1) / (double)PW;
        for (int64_t c = 0; c < C; c++) {
            int64_t base = (n * C + c) * H * W;
            for (int64_t ph = 0; ph < PH; ph++) {
                int64_t h0 = mrp_clamp((int64_t)floor((double)ph * bh) + hs, H);
                int64_t h1 = mrp_clamp((int64_t)ceil((double)(ph + 1) * bh) + hs, H);
                for (int64_t pw = 0; pw < PW; pw++) {
                    int64_t w0 = mrp_clamp((int64_t)floor((double)pw * bw) + ws, W);
                    int64_t w1 = mrp_clamp((int64_t)ceil((double)(pw + 1) * bw) + ws, W);
                    inf__tensor_set_f64(y, dst++, mrp_bin(x, base, W, h0, h1, w0, w1));
                }
            }
        }
    }
    return INF_OK;
}

const inf__op_impl op_roi_align = {ra_init, ra_run};
const inf__op_impl op_max_roi_pool = {NULL, mrp_run};
