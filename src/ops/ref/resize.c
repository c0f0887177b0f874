/*
 * resize.c -- ONNX Resize (opsets 10-26) and Upsample (7-10), one N-D
 * separable interpolation for both.
 *
 *   Upsample 7     attribute scales (floats); 9-10 input scales.
 *   Resize 10      input scales; mode nearest or linear.
 *   Resize 11-17   inputs roi, scales, sizes (one of scales/sizes, the other
 *                  absent or empty); modes nearest, linear, cubic; attributes
 *                  coordinate_transformation_mode (half_pixel,
 *                  pytorch_half_pixel, align_corners, asymmetric,
 *                  tf_half_pixel_for_nn, tf_crop_and_resize), nearest_mode
 *                  (round_prefer_floor, round_prefer_ceil, floor, ceil),
 *                  cubic_coeff_a, exclude_outside, extrapolation_value.
 *   Upsample and Resize 10 map coordinates as "asymmetric" and pick the
 *   nearest pixel the way onnxruntime does for them: truncation when
 *   upsampling, ceil when downsampling an axis.
 *
 * dtypes: every numeric type.  Nearest copies elements (exact for int64);
 * linear and cubic compute in double, and integer outputs are rounded to the
 * nearest value (ties to even) and then converted as Cast does.
 *
 * Each axis is resized independently (the ONNX reference computes the same
 * thing recursively): for every output index of an axis we precompute its
 * taps -- input offsets and weights, 1 (nearest), 2 (linear) or 4 (cubic),
 * taps with weight 0 dropped -- following the reference in
 * onnx/backend/test/case/node/resize.py, except for the output length:
 *   - the output length in the align_corners, pytorch_half_pixel and
 *     tf_crop_and_resize formulas is the output's (integer) dimension, as
 *     the operator's text defines length_resized and as onnxruntime and
 *     PyTorch compute; pytorch_half_pixel maps every index of a length-1
 *     output to 0 (ditto).  The reference uses scale * input length, a real
 *     number when scales are given (4 x 0.6 -> 2.4), so with align_corners
 *     and such a scale its test data (node/test_resize_downsample_scales_
 *     {linear,cubic}_align_corners) differs from onnxruntime's and ours --
 *     and from PyTorch's interpolate(scale_factor=2.5, align_corners=True),
 *     which exports exactly that;
 *   - with sizes, scale = output / input;
 *   - linear/cubic take neighbours floor(x)-1 .. floor(x)+2, with an integer
 *     x treated as floor(x)-1 at ratio 1; neighbours outside the input read
 *     the border element, unless exclude_outside gives them weight 0 and the
 *     rest are renormalised;
 *   - tf_crop_and_resize outputs extrapolation_value where the source
 *     coordinate of any axis falls outside [0, length-1].
 * An output element is the sum over the product of the axes' taps.
 *
 * Memory: one scratch block for the taps of every axis (sum of the output
 * lengths times 4 taps).
 *
 * Opsets 18-26 (Resize 18, 19):
 *   - `axes`: scales, sizes and roi name only those axes (negative counted
 *     from the end; each once); the others keep their length (scale 1);
 *   - `keep_aspect_ratio_policy` with sizes: stretch (each axis its own
 *     scale), not_larger / not_smaller (one scale, the min / max of
 *     size / length over the named axes; each length becomes
 *     round(scale * length), half up, as the reference computes);
 *   - coordinate_transformation_mode half_pixel_symmetric (19):
 *     x = c (1 - out / (scale in)) + (o + 0.5) / scale - 0.5, c = in / 2.
 *
 *   - antialias = 1 (18) with linear or cubic: the filter is stretched by
 *     1 / scale when downsampling (2 - 2 start taps, start = floor(-support
 *     / scale) + 1, support 1 or 2), weights normalised to sum 1, as the
 *     ONNX reference computes; with nearest it has no effect.
 *
 * Deviations: none known.
 */
#include <math.h>

#include "ops/ref/data_move.h"

typedef enum rs_mode { RS_NEAREST, RS_LINEAR, RS_CUBIC } rs_mode;

typedef enum rs_coord {
    RS_HALF_PIXEL,
    RS_PYTORCH_HALF_PIXEL,
    RS_ALIGN_CORNERS,
    RS_ASYMMETRIC,
    RS_TF_HALF_PIXEL_FOR_NN,
    RS_TF_CROP_AND_RESIZE,
    RS_HALF_PIXEL_SYMMETRIC, /* opset 19 */
} rs_coord;

typedef enum rs_aspect { RS_STRETCH, RS_NOT_LARGER, RS_NOT_SMALLER } rs_aspect;

typedef enum rs_nearest {
    RS_ROUND_PREFER_FLOOR,
    RS_ROUND_PREFER_CEIL,
    RS_FLOOR,
    RS_CEIL,
    RS_SIMPLE, /* Upsample, Resize-10 */
} rs_nearest;

typedef struct rs_params {
    bool is_upsample;
    rs_mode mode;
    rs_coord coord;
    rs_nearest nearest;
    double cubic_a;
    bool exclude_outside;
    double extrapolation;
    int n_scales; /* Upsample-7: attribute scales */
    const float *scales;
    int n_axes;   /* opset 18: the axes scales/sizes/roi name; 0: all */
    const int64_t *axes;
    rs_aspect aspect;
    bool antialias; /* opset 18, linear/cubic */
} rs_params;

#define RS_MAX_TAPS 4
#define RS_MAX_ANTIALIAS_TAPS 254 /* ntap is a byte */

/* The taps of one axis: for output index o, ntap[o] taps at
 * off[o*4 + k] (input offset in elements) with weight w[o*4 + k];
 * outside[o] marks a tf_crop_and_resize extrapolation. */
typedef struct rs_axis {
    int cap; /* taps per output index: RS_MAX_TAPS, more with antialias */
    int64_t *off;
    double *w;
    uint8_t *ntap;
    uint8_t *outside;
} rs_axis;

/* ---- attributes ---- */

static int rs_lookup(const char *s, const char *const *names, int n) {
    for (int k = 0; k < n; k++)
        if (!strcmp(s, names[k])) return k;
    return -1;
}

static inf_status rs_init(inf__node *node, inf__arena *arena, inf_error *err) {
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    static const char *const coords[] = {"half_pixel",           "pytorch_half_pixel",
                                         "align_corners",        "asymmetric",
                                         "tf_half_pixel_for_nn", "tf_crop_and_resize",
                                         "half_pixel_symmetric"};
    static const char *const aspects[] = {"stretch", "not_larger", "not_smaller"};
    static const char *const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                           "ceil"};
    rs_params *p = inf__op_params(arena, rs_params);
    if (!p) return INF_ENOMEM;
    p->is_upsample = !strcmp(node->op_type, "Upsample");
    bool legacy = p->is_upsample || node->opset < 11;
    const char *m = inf__attr_string(node, "mode", "nearest");
    int k = rs_lookup(m, modes, legacy ? 2 : 3);
    if (k < 0 && legacy && !strcmp(m, "bilinear")) k = RS_LINEAR;
    if (k < 0)
        return inf__node_error(node, err, INF_EMODEL, "attribute mode: unsupported value '%s'", m);
    p->mode = (rs_mode)k;
    if (legacy) {
        p->coord = RS_ASYMMETRIC;
        p->nearest = RS_SIMPLE;
    } else {
        const char *c = inf__attr_string(node, "coordinate_transformation_mode", "half_pixel");
        const char *nm = inf__attr_string(node, "nearest_mode", "round_prefer_floor");
        if ((k = rs_lookup(c, coords, node->opset >= 19 ? 7 : 6)) < 0)
            return inf__node_error(
                node, err, INF_EMODEL,
                "attribute coordinate_transformation_mode: unsupported value '%s'", c);
        p->coord = (rs_coord)k;
        if ((k = rs_lookup(nm, nearests, 4)) < 0)
            return inf__node_error(node, err, INF_EMODEL,
                                   "attribute nearest_mode: unsupported value '%s'", nm);
        p->nearest = (rs_nearest)k;
    }
    if (!legacy && node->opset >= 18) {
        const char *ka = inf__attr_string(node, "keep_aspect_ratio_policy", "stretch");
        if ((k = rs_lookup(ka, aspects, 3)) < 0)
            return inf__node_error(node, err, INF_EMODEL, "attribute keep_aspect_ratio_policy: unsupported value '%s'",
                                   ka);
        p->aspect = (rs_aspect)k;
        p->axes = inf__attr_ints(node, "axes", &p->n_axes);
        p->antialias = inf__attr_int(node, "antialias", 0) != 0 && p->mode != RS_NEAREST;
    }
    p->cubic_a = inf__attr_float(node, "cubic_coeff_a", -0.75f);
    p->exclude_outside = inf__attr_int(node, "exclude_outside", 0) != 0;
    p->extrapolation = inf__attr_float(node, "extrapolation_value", 0.0f);
    if (p->is_upsample && node->opset < 9) {
        p->scales = inf__attr_floats(node, "scales", &p->n_scales);
        if (!p->scales)
            return inf__node_error(node, err, INF_EMODEL, "attribute scales is required");
    }
    node->params = p;
    return INF_OK;
}

/* ---- output shape ---- */

static bool rs_present(const inf_tensor *t) { return t && inf_tensor_numel(t) > 0; }

static inf_status rs_read_floats(inf__kernel_ctx *ctx, const inf_tensor *t, const char *name, int n,
                                 double *out) {
    if (!inf__dtype_is_float(t->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected a float type, got %s", name,
                                 inf_dtype_name(t->dtype));
    if (t->ndim != 1 || t->dims[0] != n)
        return inf__kernel_error(ctx, INF_ESHAPE, "input %s: expected %d values", name, n);
    for (int k = 0; k < n; k++) out[k] = inf__tensor_get_f64(t, k);
    return INF_OK;
}

/* The axes that scales, sizes and roi name (opset 18 `axes`, else all):
 * map[k] = the k-th named axis; *n their number. */
static inf_status rs_axes(inf__kernel_ctx *ctx, const rs_params *p, int r, int *map, int *n) {
    if (!p->axes) {
        for (int a = 0; a < r; a++) map[a] = a;
        *n = r;
        return INF_OK;
    }
    bool seen[INF_MAX_DIMS] = {false};
    if (p->n_axes > r) return inf__kernel_error(ctx, INF_ESHAPE, "attribute axes names %d axes, X has %d", p->n_axes, r);
    for (int k = 0; k < p->n_axes; k++) {
        int64_t a = p->axes[k] < 0 ? p->axes[k] + r : p->axes[k];
        if (a < 0 || a >= r || seen[a])
            return inf__kernel_error(ctx, INF_EINVAL, "attribute axes: %lld is out of range or repeated (rank %d)",
                                     (long long)p->axes[k], r);
        seen[a] = true;
        map[k] = (int)a;
    }
    *n = p->n_axes;
    return INF_OK;
}

/* keep_aspect_ratio_policy not_larger / not_smaller: one scale for the named axes. */
static inf_status rs_keep_aspect(inf__kernel_ctx *ctx, const rs_params *p, const inf_tensor *x, const int *map, int n,
                                 const int64_t *sizes, double *scales, int64_t *dims) {
    double scale = p->aspect == RS_NOT_LARGER ? INFINITY : 0;
    for (int k = 0; k < n; k++) {
        double s = x->dims[map[k]] ? (double)sizes[k] / (double)x->dims[map[k]] : 1.0;
        scale = p->aspect == RS_NOT_LARGER ? fmin(scale, s) : fmax(scale, s);
    }
    for (int k = 0; k < n; k++) {
        double d = floor(scale * (double)x->dims[map[k]] + 0.5);
        if (d > 9.0e15) /* also keeps the conversion to int64 defined */
            return inf__kernel_error(ctx, INF_ESHAPE, "input sizes: axis %d would have %g elements (scale %g)", map[k],
                                     d, scale);
        scales[map[k]] = scale;
        dims[map[k]] = (int64_t)d;
    }
    return INF_OK;
}

/* Fills scales[] and out dims from the scales attribute/input or sizes. */
static inf_status rs_shape(inf__kernel_ctx *ctx, const rs_params *p, const inf_tensor *x,
                           double *scales, int64_t *dims) {
    int r = x->ndim, si = ctx->node->opset < 11 || p->is_upsample ? 1 : 2;
    int map[INF_MAX_DIMS], n_named;
    inf_status st0 = rs_axes(ctx, p, r, map, &n_named);
    if (st0 != INF_OK) return st0;
    for (int a = 0; a < r; a++) scales[a] = 1.0, dims[a] = x->dims[a];
    const inf_tensor *st_ = NULL, *sz = NULL;
    inf_status st;
    if (!p->scales && (st = move_input(ctx, si, "scales", false, &st_)) != INF_OK) return st;
    if (si == 2 && (st = move_input(ctx, 3, "sizes", false, &sz)) != INF_OK) return st;
    if (rs_present(sz)) {
        if (rs_present(st_))
            return inf__kernel_error(ctx, INF_EINVAL, "inputs scales and sizes are both given");
        int64_t sizes[INF_MAX_DIMS];
        int n;
        if ((st = move_read_ints(ctx, sz, "sizes", false, INF_MAX_DIMS, sizes, &n)) != INF_OK)
            return st;
        if (n != n_named)
            return inf__kernel_error(ctx, INF_ESHAPE, "input sizes has %d values, expected %d", n,
                                     n_named);
        for (int k = 0; k < n; k++) {
            int a = map[k];
            if (sizes[k] < 0 || (sizes[k] > 0 && x->dims[a] == 0))
                return inf__kernel_error(ctx, INF_ESHAPE,
                                         "input sizes: cannot resize axis %d from %lld to %lld", a,
                                         (long long)x->dims[a], (long long)sizes[k]);
            dims[a] = sizes[k];
            scales[a] = x->dims[a] ? (double)sizes[k] / (double)x->dims[a] : 1.0;
        }
        return p->aspect != RS_STRETCH ? rs_keep_aspect(ctx, p, x, map, n, sizes, scales, dims) : INF_OK;
    }
    if (p->scales) {
        if (p->n_scales != r)
            return inf__kernel_error(ctx, INF_ESHAPE, "attribute scales has %d values, expected %d",
                                     p->n_scales, r);
        for (int a = 0; a < r; a++) scales[a] = p->scales[a];
    } else if (rs_present(st_)) {
        double named[INF_MAX_DIMS];
        if ((st = rs_read_floats(ctx, st_, "scales", n_named, named)) != INF_OK) return st;
        for (int k = 0; k < n_named; k++) scales[map[k]] = named[k];
    } else {
        return inf__kernel_error(ctx, INF_EINVAL, "one of the inputs scales and sizes is required");
    }
    for (int a = 0; a < r; a++) {
        if (!(scales[a] > 0) || !isfinite(scales[a]))
            return inf__kernel_error(ctx, INF_EINVAL, "scales[%d] = %g must be positive", a,
                                     scales[a]);
        double d = floor(scales[a] * (double)x->dims[a]);
        if (d > 9.0e15) return inf__kernel_error(ctx, INF_ESHAPE, "scales[%d] is too large", a);
        dims[a] = (int64_t)d;
    }
    return INF_OK;
}

/* ---- taps of one axis ---- */

/* Source coordinate of output index o; sets *outside for tf_crop_and_resize. */
static double rs_source(const rs_params *p, double o, int64_t in, int64_t out, double scale, const double *roi,
                        bool *outside) {
    double out_len = (double)out;
    *outside = false;
    switch (p->coord) {
    case RS_ALIGN_CORNERS: return out == 1 ? 0.0 : o * (double)(in - 1) / (out_len - 1);
    case RS_ASYMMETRIC: return o / scale;
    case RS_PYTORCH_HALF_PIXEL: return out == 1 ? 0.0 : (o + 0.5) / scale - 0.5;
    case RS_TF_HALF_PIXEL_FOR_NN: return (o + 0.5) / scale;
    case RS_HALF_PIXEL_SYMMETRIC: {
        double center = (double)in / 2, adjustment = out_len / (scale * (double)in);
        return center * (1 - adjustment) + (o + 0.5) / scale - 0.5;
    }
    case RS_TF_CROP_AND_RESIZE: {
        double x = out == 1 ? (roi[1] - roi[0]) * (double)(in - 1) / 2
                            : o * (roi[1] - roi[0]) * (double)(in - 1) / (out_len - 1);
        x += roi[0] * (double)(in - 1);
        *outside = !(x >= 0 && x <= (double)(in - 1)); /* NaN too */
        /* an extrapolated output's taps are not used: kept in range, as the
         * conversion of x to int64 must be (a roi of 1e30 was UB) */
        return *outside ? 0 : x;
    }
    case RS_HALF_PIXEL:
    default: return (o + 0.5) / scale - 0.5;
    }
}

static int64_t rs_nearest_index(const rs_params *p, double x, double scale) {
    double f = floor(x), ratio = x - f;
    switch (p->nearest) {
    case RS_SIMPLE: return scale < 1 ? (int64_t)ceil(x) : (int64_t)x;
    case RS_ROUND_PREFER_CEIL: return (int64_t)f + (ratio >= 0.5);
    case RS_FLOOR: return (int64_t)f;
    case RS_CEIL: return (int64_t)ceil(x);
    case RS_ROUND_PREFER_FLOOR:
    default: return (int64_t)f + (ratio > 0.5);
    }
}

static void rs_cubic_coeffs(double r, double A, double *c) {
    double s = 1 - r;
    c[0] = ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A;
    c[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
    c[2] = ((A + 2) * s - (A + 3)) * s * s + 1;
    c[3] = ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A;
}

/* The first tap of the antialias filter relative to floor(x) (linear:
 * support 1, cubic: 2, stretched by 1 / scale); the filter has 2 - 2 start taps. */
static int64_t rs_antialias_start(const rs_params *p, double scale) {
    double support = p->mode == RS_CUBIC ? 2.0 : 1.0;
    return (int64_t)floor(-support / fmin(scale, 1.0)) + 1;
}

/* Taps per output index of an axis. */
static int64_t rs_cap(const rs_params *p, double scale) {
    return p->antialias ? 2 - 2 * rs_antialias_start(p, scale) : RS_MAX_TAPS;
}

static double rs_cubic_weight(double x, double A) {
    x = fabs(x);
    if (x <= 1) return ((A + 2) * x - (A + 3)) * x * x + 1;
    if (x < 2) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    return 0;
}

/* Antialias (opset 18, the ONNX reference's filter): taps x0 + k, k from
 * start, weights filter((k - ratio) * scale) normalised to sum 1. */
static int rs_antialias_taps(const rs_params *p, double x, int64_t in, double scale, int64_t *idx, double *w) {
    double f = floor(x), ratio = x - f;
    int64_t x0 = (int64_t)f;
    if (ratio == 0) x0 -= 1, ratio = 1;
    double sc = fmin(scale, 1.0), sum = 0;
    int64_t start = rs_antialias_start(p, scale), n = 2 - 2 * start;
    for (int64_t k = 0; k < n; k++) {
        double t = ((double)(start + k) - ratio) * sc;
        idx[k] = x0 + start + k;
        w[k] = p->mode == RS_CUBIC ? rs_cubic_weight(t, p->cubic_a) : fmax(0.0, 1 - fabs(t));
        if (p->exclude_outside && (idx[k] < 0 || idx[k] >= in)) w[k] = 0;
        sum += w[k];
    }
    for (int64_t k = 0; k < n; k++) w[k] = sum != 0 ? w[k] / sum : 0;
    return (int)n;
}

/* Taps of output index o: input indices idx[] (may lie outside [0, in)) and
 * weights w[]; returns their number. */
static int rs_raw_taps(const rs_params *p, double x, int64_t in, double scale, int64_t *idx,
                       double *w) {
    if (p->antialias) return rs_antialias_taps(p, x, in, scale, idx, w);
    if (p->mode == RS_NEAREST) {
        idx[0] = rs_nearest_index(p, x, scale);
        w[0] = 1;
        return 1;
    }
    double f = floor(x), ratio = x - f;
    int64_t x0 = (int64_t)f;
    if (ratio == 0) { /* the reference prefers the left neighbour pair */
        x0 -= 1;
        ratio = 1;
    }
    if (p->mode == RS_LINEAR) {
        idx[0] = x0, idx[1] = x0 + 1;
        w[0] = 1 - ratio, w[1] = ratio;
        return 2;
    }
    for (int k = 0; k < 4; k++) idx[k] = x0 - 1 + k;
    rs_cubic_coeffs(ratio, p->cubic_a, w);
    if (p->exclude_outside) {
        double sum = 0;
        for (int k = 0; k < 4; k++) {
            if (idx[k] < 0 || idx[k] >= in) w[k] = 0;
            sum += w[k];
        }
        for (int k = 0; k < 4; k++) w[k] = sum != 0 ? w[k] / sum : 0;
    }
    return 4;
}

static void rs_axis_taps(const rs_params *p, int64_t in, int64_t out, double scale,
                         const double *roi, int64_t stride, rs_axis *ax) {
    for (int64_t o = 0; o < out; o++) {
        bool outside;
        double x = rs_source(p, (double)o, in, out, scale, roi, &outside);
        int64_t idx[RS_MAX_ANTIALIAS_TAPS];
        double w[RS_MAX_ANTIALIAS_TAPS];
        int n = rs_raw_taps(p, x, in, scale, idx, w), kept = 0;
        for (int k = 0; k < n; k++) {
            if (w[k] == 0 && !(n == 1)) continue;
            int64_t i = idx[k] < 0 ? 0 : idx[k] >= in ? in - 1 : idx[k];
            ax->off[o * ax->cap + kept] = i * stride;
            ax->w[o * ax->cap + kept] = w[k];
            kept++;
        }
        ax->ntap[o] = (uint8_t)kept;
        ax->outside[o] = outside;
    }
}

/* ---- compute ---- */

typedef struct rs_run_state {
    const inf_tensor *x;
    int r;
    const int64_t *c; /* output coordinate */
    const rs_axis *axes;
} rs_run_state;

/* Sum over the taps of axes a.. for the output coordinate s->c. */
static double rs_accumulate(const rs_run_state *s, int a, int64_t off) {
    if (a == s->r) return inf__tensor_get_f64(s->x, off);
    const rs_axis *ax = &s->axes[a];
    int64_t o = s->c[a] * ax->cap;
    double sum = 0;
    for (int k = 0; k < ax->ntap[s->c[a]]; k++)
        sum += ax->w[o + k] * rs_accumulate(s, a + 1, off + ax->off[o + k]);
    return sum;
}

static inf_status rs_compute(inf__kernel_ctx *ctx, const rs_params *p, const inf_tensor *x,
                             inf_tensor *y, const rs_axis *axes) {
    int r = x->ndim;
    int64_t c[INF_MAX_DIMS] = {0};
    rs_run_state s = {x, r, c, axes};
    bool is_float = inf__dtype_is_float(y->dtype);
    inf_status st = INF_OK;
    for (int64_t i = 0, n = inf_tensor_numel(y); i < n && st == INF_OK; i++) {
        bool outside = false;
        for (int a = 0; a < r; a++) outside |= axes[a].outside[c[a]];
        if (outside) {
            inf__tensor_set_f64(y, i, p->extrapolation);
        } else if (p->mode == RS_NEAREST) {
            int64_t off = 0;
            for (int a = 0; a < r; a++) off += axes[a].off[c[a] * axes[a].cap];
            st = move_copy(ctx, y, i, x, off, 1);
        } else {
            double v = rs_accumulate(&s, 0, 0);
            inf__tensor_set_f64(y, i, is_float ? v : nearbyint(v));
        }
        for (int a = r - 1; a >= 0; a--) {
            if (++c[a] < y->dims[a]) break;
            c[a] = 0;
        }
    }
    return st;
}

static inf_status rs_run(inf__kernel_ctx *ctx) {
    const rs_params *p = ctx->node->params;
    const inf_tensor *x, *roi_t = NULL;
    inf_status st;
    if ((st = move_input(ctx, 0, "X", true, &x)) != INF_OK) return st;
    if (!(x->dtype == INF_DTYPE_BOOL || inf__dtype_is_int(x->dtype) ||
          inf__dtype_is_float(x->dtype)))
        return inf__kernel_error(ctx, INF_ETYPE, "input X: expected a numeric type, got %s",
                                 inf_dtype_name(x->dtype));
    int r = x->ndim;
    double scales[INF_MAX_DIMS], roi[2 * INF_MAX_DIMS] = {0};
    int64_t dims[INF_MAX_DIMS];
    if ((st = rs_shape(ctx, p, x, scales, dims)) != INF_OK) return st;
    if (p->coord == RS_TF_CROP_AND_RESIZE) {
        int map[INF_MAX_DIMS], n_named;
        double named[2 * INF_MAX_DIMS];
        if ((st = rs_axes(ctx, p, r, map, &n_named)) != INF_OK ||
            (st = move_input(ctx, 1, "roi", true, &roi_t)) != INF_OK ||
            (st = rs_read_floats(ctx, roi_t, "roi", 2 * n_named, named)) != INF_OK)
            return st;
        for (int a = 0; a < r; a++) roi[a] = 0, roi[r + a] = 1; /* unnamed axes: the whole axis */
        for (int k = 0; k < n_named; k++) roi[map[k]] = named[k], roi[r + map[k]] = named[n_named + k];
    }
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, r, dims, &y)) != INF_OK) return st;
    if (inf_tensor_numel(y) == 0) return INF_OK;

    size_t total = 0, total_taps = 0;
    for (int a = 0; a < r; a++) {
        int64_t cap = rs_cap(p, scales[a]);
        if (cap > RS_MAX_ANTIALIAS_TAPS)
            return inf__kernel_error(ctx, INF_EUNSUPPORTED, "antialias: scale %g on axis %d needs %lld taps, at most %d "
                                     "are implemented", scales[a], a, (long long)cap, RS_MAX_ANTIALIAS_TAPS);
        total += (size_t)dims[a], total_taps += (size_t)(dims[a] * cap);
    }
    size_t bytes = total_taps * (sizeof(int64_t) + sizeof(double)) + 2 * total;
    char *mem = inf__kernel_scratch(ctx, bytes ? bytes : 1);
    if (!mem) return INF_ENOMEM;
    rs_axis axes[INF_MAX_DIMS];
    int64_t *off = (int64_t *)mem;
    double *w = (double *)(off + total_taps);
    uint8_t *bytes_p = (uint8_t *)(w + total_taps);
    int64_t stride = inf_tensor_numel(x);
    for (int a = 0; a < r; a++) {
        stride /= x->dims[a];
        int cap = (int)rs_cap(p, scales[a]);
        axes[a] = (rs_axis){cap, off, w, bytes_p, bytes_p + dims[a]};
        double roi_a[2] = {roi[a], roi[r + a]};
        rs_axis_taps(p, x->dims[a], dims[a], scales[a], roi_a, stride, &axes[a]);
        off += dims[a] * cap;
        w += dims[a] * cap;
        bytes_p += 2 * dims[a];
    }
    return rs_compute(ctx, p, x, y, axes);
}

const inf__op_impl op_resize = {rs_init, rs_run};
