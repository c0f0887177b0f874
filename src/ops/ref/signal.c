/*
 * signal.c -- reference kernels for the signal-processing operators of
 * opset 17.
 *
 * ONNX ops:
 *   DFT             opsets 17-26: input [batch, ..., n, 1 (real) or 2 (complex)],
 *                   optional dft_length (scalar int32/int64: the signal is
 *                   zero-padded or truncated to it), attributes axis (default
 *                   1; negative counts from the end of the rank; from opset
 *                   20 the optional third input, default -2), inverse
 *                   (scaled by 1/n), onesided (keep bins 0..n/2).
 *                   Output [..., bins, ..., 2].
 *   STFT            opset 17: signal [batch, length, 1 or 2], frame_step,
 *                   optional window [frame_length], optional frame_length;
 *                   attribute onesided (default 1).  Output
 *                   [batch, frames, bins, 2], frames = (length - frame_length)
 *                   / frame_step + 1.
 *   HannWindow, HammingWindow, BlackmanWindow  opset 17: size (scalar int),
 *                   attributes periodic (default 1: N = size, else size - 1)
 *                   and output_datatype (default float32; any numeric type).
 *                   Hamming uses a0 = 25/46.
 *   MelWeightMatrix opset 17: num_mel_bins, dft_length, sample_rate (int
 *                   scalars), lower_edge_hertz, upper_edge_hertz (float
 *                   scalars), attribute output_datatype.  Output
 *                   [dft_length/2 + 1, num_mel_bins] of triangular filters
 *                   over bins floor((dft_length + 1) * hz / sample_rate) of
 *                   num_mel_bins + 2 points evenly spaced in mel
 *                   (2595 log10(1 + hz/700)), as the ONNX reference builds them.
 * dtypes: DFT/STFT float32, float64, float16 (computed in double).
 * Deviations: the transforms are direct O(n^2) sums in double with an exact
 *   twiddle table (no FFT); fine for reference use, slow for long frames.
 *   onesided with a complex input keeps the first n/2 + 1 bins.
 */
#include <math.h>
#include <string.h>

#include "ops/ops.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static const inf_tensor *opt_input(const inf__kernel_ctx *ctx, int i) {
    return i < ctx->n_in ? ctx->in[i] : NULL;
}

static inline double load(const inf_tensor *t, int64_t i) {
    if (t->dtype == INF_DTYPE_F32) return ((const float *)t->data)[i];
    return inf__tensor_get_f64(t, i);
}

static inline void store(inf_tensor *t, int64_t i, double v) {
    if (t->dtype == INF_DTYPE_F32) ((float *)t->data)[i] = (float)v;
    else inf__tensor_set_f64(t, i, v);
}

static inf_status check_float(inf__kernel_ctx *ctx, const char *name, const inf_tensor *t) {
    if (t->dtype != INF_DTYPE_F32 && t->dtype != INF_DTYPE_F64 && t->dtype != INF_DTYPE_F16)
        return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected float32, float64 or float16, got %s",
                                 name, inf_dtype_name(t->dtype));
    return INF_OK;
}

/* A scalar (or one-element) integer input. */
static inf_status scalar_int(inf__kernel_ctx *ctx, const char *name, const inf_tensor *t, int64_t min,
                             int64_t *out) {
    if (!t) return inf__kernel_error(ctx, INF_EINVAL, "input %s is required", name);
    if ((t->dtype != INF_DTYPE_I32 && t->dtype != INF_DTYPE_I64) || inf_tensor_numel(t) != 1)
        return inf__kernel_error(ctx, INF_EINVAL, "input %s: expected an int32 or int64 scalar, got %s",
                                 name, inf_dtype_name(t->dtype));
    *out = inf__tensor_get_i64(t, 0);
    if (*out < min)
        return inf__kernel_error(ctx, INF_ERANGE, "input %s = %lld, must be >= %lld", name,
                                 (long long)*out, (long long)min);
    return INF_OK;
}

static inf_status scalar_float(inf__kernel_ctx *ctx, const char *name, const inf_tensor *t, double *out) {
    if (!t) return inf__kernel_error(ctx, INF_EINVAL, "input %s is required", name);
    if (!inf__dtype_is_float(t->dtype) || inf_tensor_numel(t) != 1)
        return inf__kernel_error(ctx, INF_EINVAL, "input %s: expected a float scalar, got %s", name,
                                 inf_dtype_name(t->dtype));
    *out = inf__tensor_get_f64(t, 0);
    return INF_OK;
}

/* ---- the transform ---- */

/* cos/sin of 2*pi*j/n for j < n: twiddle[2j], twiddle[2j+1]. */
static void make_twiddles(int64_t n, double *tw) {
    for (int64_t j = 0; j < n; j++) {
        double a = 2.0 * M_PI * (double)j / (double)n;
        tw[2 * j] = cos(a), tw[2 * j + 1] = sin(a);
    }
}

/* out[k] = sum_j in[j] * e^(-+2 pi i jk/n) for k < bins; in has n_in <= n
 * complex values (the rest are zero); inverse uses e^(+...) and 1/n. */
static void dft(const double *in, int64_t n_in, int64_t n, int64_t bins, bool inverse,
                const double *tw, double *out) {
    double sign = inverse ? 1.0 : -1.0, scale = inverse ? 1.0 / (double)n : 1.0;
    for (int64_t k = 0; k < bins; k++) {
        double re = 0, im = 0;
        int64_t idx = 0; /* j * k mod n */
        for (int64_t j = 0; j < n_in; j++) {
            double c = tw[2 * idx], s = sign * tw[2 * idx + 1];
            re += in[2 * j] * c - in[2 * j + 1] * s;
            im += in[2 * j] * s + in[2 * j + 1] * c;
            idx += k;
            if (idx >= n) idx %= n;
        }
        out[2 * k] = re * scale, out[2 * k + 1] = im * scale;
    }
}

/* ======================================================================== */
/*  DFT                                                                      */
/* ======================================================================== */

typedef struct dft_params {
    int64_t axis;
    bool inverse, onesided;
} dft_params;

static inf_status dft_init(inf__node *node, inf__arena *arena, inf_error *err) {
    dft_params *p = inf__op_params(arena, dft_params);
    if (!p) return INF_ENOMEM;
    if (node->opset >= 20 && inf__node_attr(node, "axis"))
        return inf__node_error(node, err, INF_EMODEL, "axis is an input from opset 20, not an attribute");
    p->axis = inf__attr_int(node, "axis", node->opset >= 20 ? -2 : 1);
    p->inverse = inf__attr_int(node, "inverse", 0) != 0;
    p->onesided = inf__attr_int(node, "onesided", 0) != 0;
    node->params = p;
    return INF_OK;
}

static inf_status dft_run(inf__kernel_ctx *ctx) {
    char buf[96];
    const dft_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0], *len_t = opt_input(ctx, 1);
    inf_status st = check_float(ctx, "input", x);
    if (st != INF_OK) return st;
    int r = x->ndim;
    if (r < 2 || (x->dims[r - 1] != 1 && x->dims[r - 1] != 2))
        return inf__kernel_error(ctx, INF_ESHAPE, "input: expected [..., n, 1 or 2] (real or complex), got %s",
                                 inf__shape_str(r, x->dims, buf, sizeof buf));
    int64_t given = p->axis;
    const inf_tensor *axis_t = ctx->node->opset >= 20 ? opt_input(ctx, 2) : NULL;
    if (axis_t && (st = scalar_int(ctx, "axis", axis_t, INT64_MIN, &given)) != INF_OK) return st;
    int64_t axis = given < 0 ? given + r : given;
    if (axis < 0 || axis >= r - 1)
        return inf__kernel_error(ctx, INF_EINVAL, "axis = %lld is out of range for input %s (the last "
                                 "dimension holds real/imaginary parts)", (long long)given,
                                 inf__shape_str(r, x->dims, buf, sizeof buf));
    int64_t n_sig = x->dims[axis], n = n_sig;
    if (len_t && (st = scalar_int(ctx, "dft_length", len_t, 1, &n)) != INF_OK) return st;
    int64_t bins = p->onesided ? n / 2 + 1 : n, comps = x->dims[r - 1];
    int64_t dims[INF_MAX_DIMS];
    memcpy(dims, x->dims, sizeof(int64_t) * (size_t)r);
    dims[axis] = bins, dims[r - 1] = 2;
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, r, dims, &y)) != INF_OK) return st;
    if (inf_tensor_numel(y) == 0) return INF_OK;
    int64_t outer = 1, inner = 1, n_in = n_sig < n ? n_sig : n;
    for (int i = 0; i < axis; i++) outer *= x->dims[i];
    for (int i = (int)axis + 1; i < r - 1; i++) inner *= x->dims[i];
    double *tw = inf__kernel_scratch(ctx, (size_t)(2 * n + 2 * n_in + 2 * bins) * sizeof(double));
    if (!tw) return INF_ENOMEM;
    double *in = tw + 2 * n, *out = in + 2 * n_in;
    make_twiddles(n, tw);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            for (int64_t t = 0; t < n_in; t++) {
                int64_t at = ((o * n_sig + t) * inner + j) * comps;
                in[2 * t] = load(x, at);
                in[2 * t + 1] = comps == 2 ? load(x, at + 1) : 0;
            }
            dft(in, n_in, n, bins, p->inverse, tw, out);
            for (int64_t k = 0; k < bins; k++) {
                int64_t at = ((o * bins + k) * inner + j) * 2;
                store(y, at, out[2 * k]);
                store(y, at + 1, out[2 * k + 1]);
            }
        }
    return INF_OK;
}

const inf__op_impl op_dft = {dft_init, dft_run};

/* ======================================================================== */
/*  STFT                                                                     */
/* ======================================================================== */

typedef struct stft_params {
    bool onesided;
} stft_params;

static inf_status stft_init(inf__node *node, inf__arena *arena, inf_error *err) {
    (void)err;
    stft_params *p = inf__op_params(arena, stft_params);
    if (!p) return INF_ENOMEM;
    p->onesided = inf__attr_int(node, "onesided", 1) != 0;
    node->params = p;
    return INF_OK;
}

static inf_status stft_run(inf__kernel_ctx *ctx) {
    char buf[96];
    const stft_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0], *win = opt_input(ctx, 2), *len_t = opt_input(ctx, 3);
    inf_status st = check_float(ctx, "signal", x);
    if (st != INF_OK) return st;
    if (x->ndim != 3 || (x->dims[2] != 1 && x->dims[2] != 2))
        return inf__kernel_error(ctx, INF_ESHAPE, "input signal: expected [batch, length, 1 or 2], got %s",
                                 inf__shape_str(x->ndim, x->dims, buf, sizeof buf));
    int64_t step, flen = -1;
    if ((st = scalar_int(ctx, "frame_step", opt_input(ctx, 1), 1, &step)) != INF_OK) return st;
    if (len_t && (st = scalar_int(ctx, "frame_length", len_t, 1, &flen)) != INF_OK) return st;
    if (win) {
        if ((st = check_float(ctx, "window", win)) != INF_OK) return st;
        if (win->ndim != 1 || (flen >= 0 && win->dims[0] != flen))
            return inf__kernel_error(ctx, INF_ESHAPE, "input window: expected a 1-D window%s, got %s",
                                     flen >= 0 ? " of frame_length" : "",
                                     inf__shape_str(win->ndim, win->dims, buf, sizeof buf));
        flen = win->dims[0];
    }
    if (flen < 1)
        return inf__kernel_error(ctx, INF_EINVAL, "either window or frame_length is required");
    int64_t batch = x->dims[0], length = x->dims[1], comps = x->dims[2];
    if (flen > length)
        return inf__kernel_error(ctx, INF_ESHAPE, "frame length %lld exceeds the signal length %lld",
                                 (long long)flen, (long long)length);
    int64_t frames = (length - flen) / step + 1, bins = p->onesided ? flen / 2 + 1 : flen;
    int64_t dims[4] = {batch, frames, bins, 2};
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, 4, dims, &y)) != INF_OK) return st;
    double *tw = inf__kernel_scratch(ctx, (size_t)(2 * flen + 2 * flen + 2 * bins) * sizeof(double));
    if (!tw) return INF_ENOMEM;
    double *in = tw + 2 * flen, *out = in + 2 * flen;
    make_twiddles(flen, tw);
    for (int64_t b = 0; b < batch; b++)
        for (int64_t f = 0; f < frames; f++) {
            for (int64_t t = 0; t < flen; t++) {
                int64_t at = (b * length + f * step + t) * comps;
                double w = win ? load(win, t) : 1.0;
                in[2 * t] = load(x, at) * w;
                in[2 * t + 1] = comps == 2 ? load(x, at + 1) * w : 0;
            }
            dft(in, flen, flen, bins, false, tw, out);
            for (int64_t k = 0; k < 2 * bins; k++) store(y, ((b * frames + f) * bins) * 2 + k, out[k]);
        }
    return INF_OK;
}

const inf__op_impl op_stft = {stft_init, stft_run};

/* ======================================================================== */
/*  HannWindow, HammingWindow, BlackmanWindow                                */
/* ======================================================================== */

enum { WIN_HANN, WIN_HAMMING, WIN_BLACKMAN };

typedef struct window_params {
    int kind;
    bool periodic;
    inf_dtype out;
} window_params;

static inf_status check_output_dtype(inf__node *node, inf_error *err, int64_t v, inf_dtype *out) {
    inf_dtype t = (inf_dtype)v;
    if (v <= 0 || v >= INF_DTYPE_COUNT || t == INF_DTYPE_STRING || t == INF_DTYPE_C64 ||
        t == INF_DTYPE_C128 || t == INF_DTYPE_BOOL)
        return inf__node_error(node, err, INF_EMODEL, "output_datatype = %lld is not a real numeric type",
                               (long long)v);
    *out = t;
    return INF_OK;
}

static inf_status window_init(inf__node *node, inf__arena *arena, inf_error *err) {
    window_params *p = inf__op_params(arena, window_params);
    if (!p) return INF_ENOMEM;
    p->kind = !strcmp(node->op_type, "HannWindow")      ? WIN_HANN
              : !strcmp(node->op_type, "HammingWindow") ? WIN_HAMMING
                                                        : WIN_BLACKMAN;
    p->periodic = inf__attr_int(node, "periodic", 1) != 0;
    inf_status st = check_output_dtype(node, err, inf__attr_int(node, "output_datatype", 1), &p->out);
    if (st != INF_OK) return st;
    node->params = p;
    return INF_OK;
}

static inf_status window_run(inf__kernel_ctx *ctx) {
    const window_params *p = ctx->node->params;
    int64_t size;
    inf_status st = scalar_int(ctx, "size", ctx->in[0], 0, &size);
    if (st != INF_OK) return st;
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, p->out, 1, &size, &y)) != INF_OK) return st;
    double n = (double)(p->periodic ? size : size - 1);
    for (int64_t k = 0; k < size; k++) {
        double a = n > 0 ? 2.0 * M_PI * (double)k / n : 0, v;
        if (p->kind == WIN_HANN) v = 0.5 - 0.5 * cos(a);
        else if (p->kind == WIN_HAMMING) v = 25.0 / 46.0 - (1.0 - 25.0 / 46.0) * cos(a);
        else v = 0.42 - 0.5 * cos(a) + 0.08 * cos(2 * a);
        inf__tensor_set_f64(y, k, v);
    }
    return INF_OK;
}

const inf__op_impl op_window = {window_init, window_run};

/* ======================================================================== */
/*  MelWeightMatrix                                                          */
/* ======================================================================== */

static inf_status mel_init(inf__node *node, inf__arena *arena, inf_error *err) {
    window_params *p = inf__op_params(arena, window_params);
    if (!p) return INF_ENOMEM;
    inf_status st = check_output_dtype(node, err, inf__attr_int(node, "output_datatype", 1), &p->out);
    if (st != INF_OK) return st;
    node->params = p;
    return INF_OK;
}

static double hz_to_mel(double hz) { return 2595.0 * log10(1.0 + hz / 700.0); }
static double mel_to_hz(double mel) { return 700.0 * (pow(10.0, mel / 2595.0) - 1.0); }

static inf_status mel_run(inf__kernel_ctx *ctx) {
    const window_params *p = ctx->node->params;
    int64_t n_mel, dft_len, rate;
    double lo_hz = 0, hi_hz = 0;
    inf_status st = scalar_int(ctx, "num_mel_bins", ctx->in[0], 1, &n_mel);
    if (st == INF_OK) st = scalar_int(ctx, "dft_length", opt_input(ctx, 1), 1, &dft_len);
    if (st == INF_OK) st = scalar_int(ctx, "sample_rate", opt_input(ctx, 2), 1, &rate);
    if (st == INF_OK) st = scalar_float(ctx, "lower_edge_hertz", opt_input(ctx, 3), &lo_hz);
    if (st == INF_OK) st = scalar_float(ctx, "upper_edge_hertz", opt_input(ctx, 4), &hi_hz);
    if (st != INF_OK) return st;
    if (!(lo_hz >= 0 && hi_hz >= lo_hz))
        return inf__kernel_error(ctx, INF_ERANGE, "edges %g..%g Hz: expected 0 <= lower <= upper", lo_hz, hi_hz);
    int64_t n_spec = dft_len / 2 + 1, dims[2] = {n_spec, n_mel};
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, p->out, 2, dims, &y)) != INF_OK) return st;
    int64_t *pts = inf__kernel_scratch(ctx, (size_t)(n_mel + 2) * sizeof(int64_t));
    if (!pts) return INF_ENOMEM;
    for (int64_t i = 0; i < n_spec * n_mel; i++) inf__tensor_set_f64(y, i, 0);
    double lo_mel = hz_to_mel(lo_hz), step = (hz_to_mel(hi_hz) - lo_mel) / (double)(n_mel + 2);
    for (int64_t i = 0; i < n_mel + 2; i++)
        pts[i] = (int64_t)floor((double)(dft_len + 1) * mel_to_hz((double)i * step + lo_mel) / (double)rate);
    for (int64_t i = 0; i < n_mel; i++) {
        int64_t left = pts[i], center = pts[i + 1], right = pts[i + 2];
        if (center - left == 0) {
            if (center >= 0 && center < n_spec) inf__tensor_set_f64(y, center * n_mel + i, 1);
        } else {
            for (int64_t j = left; j <= center; j++)
                if (j >= 0 && j < n_spec)
                    inf__tensor_set_f64(y, j * n_mel + i, (double)(j - left) / (double)(center - left));
        }
        for (int64_t j = center; right > center && j < right; j++)
            if (j >= 0 && j < n_spec)
                inf__tensor_set_f64(y, j * n_mel + i, (double)(right - j) / (double)(right - center));
    }
    return INF_OK;
}

const inf__op_impl op_mel_weight_matrix = {mel_init, mel_run};
