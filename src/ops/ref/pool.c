/*
 * pool.c -- reference kernels for the pooling operators.
 *
 * ONNX ops:
 *   MaxPool            opsets 1-17: kernel_shape, strides, pads, auto_pad,
 *                      dilations (8+ ... accepted always), ceil_mode (10+),
 *                      storage_order and the optional int64 Indices output (8+).
 *   AveragePool        opsets 1-17: kernel_shape, strides, pads, auto_pad,
 *                      count_include_pad (7+), ceil_mode (10+); dilations
 *                      (an opset 19 attribute) are accepted too.
 *   GlobalAveragePool, GlobalMaxPool  opsets 1-17.
 * Any spatial rank >= 1 (1-D, 2-D, 3-D...).
 * dtypes: float32, float64, float16; MaxPool also int8 and uint8 (12+).
 *         Non-float32 data is pooled through double.
 * MaxPool's maximum does not depend on the order the window is read (the
 *         AVX2 twin, ops/x86/pool_avx2.c, reads it rows first; it takes
 *         float32 1-D and 2-D pools, a 1-D one as a single row): a NaN
 *         anywhere in the window gives NaN (as numpy's max in ONNX's
 *         reference), and of an equal +0 and -0 the +0 wins.
 * Deviations: none known.  With ceil_mode, a window that would start in the
 *         end padding is dropped (the rule of ONNX's reference and PyTorch).
 *         Indices are flat over N x C x spatial; storage_order 1 numbers the
 *         spatial positions column-major (batch/channel offset row-major),
 *         as onnxruntime does.
 *
 * Output size per spatial dim, dk = (k - 1) * dilation + 1:
 *   NOTSET/VALID: floor-or-ceil((in + pb + pe - dk) / s) + 1
 *   SAME_*:       ceil(in / s), total pad (out-1)*s + dk - in, the odd pad at
 *                 the end (UPPER) or the beginning (LOWER).
 */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "core/cpu.h"
#include "ops/ops.h"

enum { AUTO_NOTSET, AUTO_SAME_UPPER, AUTO_SAME_LOWER, AUTO_VALID };
enum { POOL_MAX, POOL_AVG };
#define MAX_SP (INF_MAX_DIMS - 2)

typedef struct pool_params {
    int kind;
    int auto_pad;
    bool ceil_mode, count_include_pad, col_major;
    int n_kernel, n_strides, n_dilations, n_pads;
    const int64_t *kernel, *strides, *dilations, *pads;
} pool_params;

static inf_status pool_init(inf__node *node, inf__arena *arena, inf_error *err) {
    pool_params *p = inf__op_params(arena, pool_params);
    if (!p) return INF_ENOMEM;
    p->kind = !strcmp(node->op_type, "MaxPool") ? POOL_MAX : POOL_AVG;
    const char *ap = inf__attr_string(node, "auto_pad", "NOTSET");
    if (!strcmp(ap, "NOTSET")) p->auto_pad = AUTO_NOTSET;
    else if (!strcmp(ap, "SAME_UPPER")) p->auto_pad = AUTO_SAME_UPPER;
    else if (!strcmp(ap, "SAME_LOWER")) p->auto_pad = AUTO_SAME_LOWER;
    else if (!strcmp(ap, "VALID")) p->auto_pad = AUTO_VALID;
    else return inf__node_error(node, err, INF_EMODEL, "unknown auto_pad '%s'", ap);
    p->ceil_mode = inf__attr_int(node, "ceil_mode", 0) != 0;
    p->count_include_pad = inf__attr_int(node, "count_include_pad", 0) != 0;
    p->col_major = inf__attr_int(node, "storage_order", 0) != 0;
    p->kernel = inf__attr_ints(node, "kernel_shape", &p->n_kernel);
    p->strides = inf__attr_ints(node, "strides", &p->n_strides);
    p->dilations = inf__attr_ints(node, "dilations", &p->n_dilations);
    p->pads = inf__attr_ints(node, "pads", &p->n_pads);
    if (!p->kernel || p->n_kernel < 1 || p->n_kernel > MAX_SP)
        return inf__node_error(node, err, INF_EMODEL, "attribute kernel_shape is required (1 to %d values)",
                               MAX_SP);
    inf_status st;
    if ((st = inf__check_window_attrs(node, err, false)) != INF_OK) return st;
    if ((p->n_strides && p->n_strides != p->n_kernel) ||
        (p->n_dilations && p->n_dilations != p->n_kernel) ||
        (p->n_pads && p->n_pads != 2 * p->n_kernel))
        return inf__node_error(node, err, INF_EMODEL,
                               "strides/dilations need %d values and pads %d (kernel_shape has %d)",
                               p->n_kernel, 2 * p->n_kernel, p->n_kernel);
    node->params = p;
    return INF_OK;
}

typedef struct pool_geom {
    int nd;
    int64_t planes; /* N * C */
    int64_t in[MAX_SP], out[MAX_SP], k[MAX_SP], s[MAX_SP], d[MAX_SP], pb[MAX_SP], pe[MAX_SP];
    int64_t in_total, out_total;
} pool_geom;

static inf_status pool_geometry(inf__kernel_ctx *ctx, const pool_params *p, const inf_tensor *x,
                                pool_geom *g) {
    char buf[96];
    int nd = x->ndim - 2;
    if (nd != p->n_kernel)
        return inf__kernel_error(ctx, INF_ESHAPE, "input X %s: expected rank %d (N, C and %d spatial dims of kernel_shape)",
                                 inf__shape_str(x->ndim, x->dims, buf, sizeof buf), p->n_kernel + 2,
                                 p->n_kernel);
    g->nd = nd;
    g->planes = x->dims[0] * x->dims[1];
    g->in_total = g->out_total = 1;
    for (int i = 0; i < nd; i++) {
        int64_t in = x->dims[2 + i], k = p->kernel[i];
        int64_t s = p->n_strides ? p->strides[i] : 1, d = p->n_dilations ? p->dilations[i] : 1;
        int64_t dk = (k - 1) * d + 1, out, pb = 0, pe = 0;
        if (p->auto_pad == AUTO_SAME_UPPER || p->auto_pad == AUTO_SAME_LOWER) {
            out = (in + s - 1) / s;
            int64_t total = (out - 1) * s + dk - in;
            if (total < 0) total = 0;
            pb = p->auto_pad == AUTO_SAME_UPPER ? total / 2 : total - total / 2;
            pe = total - pb;
        } else {
            if (p->auto_pad == AUTO_NOTSET && p->n_pads) pb = p->pads[i], pe = p->pads[nd + i];
            int64_t span = in + pb + pe - dk;
            if (span < 0) {
                out = 0;
            } else if (p->ceil_mode) {
                out = (span + s - 1) / s + 1;
                if ((out - 1) * s >= in + pb) out--; /* last window starts in the end padding */
            } else {
                out = span / s + 1;
            }
        }
        if (out < 1)
            return inf__kernel_error(ctx, INF_ESHAPE,
                                     "input X %s: spatial dim %d is smaller than the dilated kernel (%lld)",
                                     inf__shape_str(x->ndim, x->dims, buf, sizeof buf), i,
                                     (long long)dk);
        g->in[i] = in, g->out[i] = out, g->k[i] = k, g->s[i] = s, g->d[i] = d;
        g->pb[i] = pb, g->pe[i] = pe;
        g->in_total *= in, g->out_total *= out;
    }
    return INF_OK;
}

/* The work for one output position: the window's valid kernel indices per
 * dim are [klo, khi); the average's divisor counts pads when asked. */
typedef struct window {
    int64_t klo[MAX_SP], khi[MAX_SP], start[MAX_SP];
    int64_t count; /* divisor for the average */
    int64_t taps;  /* input elements read */
} window;

static void make_window(const pool_geom *g, const pool_params *p, const int64_t *opos, window *w) {
    int64_t valid = 1, padded = 1;
    for (int i = 0; i < g->nd; i++) {
        int64_t start = opos[i] * g->s[i] - g->pb[i], d = g->d[i];
        int64_t lo = start >= 0 ? 0 : (-start + d - 1) / d;
        int64_t hi = g->in[i] - start <= 0 ? 0 : (g->in[i] - start + d - 1) / d;
        if (hi > g->k[i]) hi = g->k[i];
        if (lo > hi) lo = hi;
        w->klo[i] = lo, w->khi[i] = hi, w->start[i] = start;
        valid *= hi - lo;
        /* count_include_pad: kernel taps inside [-pb, in + pe) */
        int64_t plo = start >= -g->pb[i] ? 0 : (-g->pb[i] - start + d - 1) / d;
        int64_t lim = g->in[i] + g->pe[i] - start;
        int64_t phi = lim <= 0 ? 0 : (lim + d - 1) / d;
        if (phi > g->k[i]) phi = g->k[i];
        padded *= phi > plo ? phi - plo : 0;
    }
    w->count = p->count_include_pad ? padded : valid;
    w->taps = valid;
}

/* Flat spatial index of input position ipos (row- or column-major). */
static int64_t spatial_index(const pool_geom *g, const int64_t *ipos, bool col_major) {
    int64_t idx = 0;
    if (col_major)
        for (int i = g->nd - 1; i >= 0; i--) idx = idx * g->in[i] + ipos[i];
    else
        for (int i = 0; i < g->nd; i++) idx = idx * g->in[i] + ipos[i];
    return idx;
}

/* A window may read a whole plane and an output have many windows, so the
 * workers check the run's time budget every POOL_TAPS_PER_CHECK input reads
 * and stop their share when it has run out (*stopped). */
#define POOL_TAPS_PER_CHECK ((int64_t)1 << 18)

typedef struct pool_task {
    const pool_geom *g;
    const pool_params *p;
    const inf_tensor *x;
    inf_tensor *y, *ind;
    const inf__kernel_ctx *ctx;
    atomic_bool *stopped;
} pool_task;

/* Reduces one window of plane x (float32 or through double). */
#define DEFINE_WINDOW_FN(SUFFIX, T, LOAD)                                                        \
    static double window_##SUFFIX(const pool_geom *g, const pool_params *p, const T *x,          \
                                  const window *w, int64_t *arg) {                               \
        int64_t kk[MAX_SP], ipos[MAX_SP];                                                         \
        double best = -INFINITY, sum = 0;                                                         \
        int64_t best_at = -1;                                                                    \
        bool any_nan = false;                                                                    \
        for (int i = 0; i < g->nd; i++) {                                                        \
            if (w->klo[i] >= w->khi[i]) return p->kind == POOL_MAX ? NAN : 0;                    \
            kk[i] = w->klo[i];                                                                   \
        }                                                                                        \
        for (;;) {                                                                               \
            int64_t off = 0;                                                                     \
            for (int i = 0; i < g->nd; i++) {                                                    \
                ipos[i] = w->start[i] + kk[i] * g->d[i];                                         \
                off = off * g->in[i] + ipos[i];                                                  \
            }                                                                                    \
            double v = LOAD(x, off);                                                             \
            if (p->kind == POOL_MAX) {                                                           \
                if (v != v) {                                                                    \
                    any_nan = true;                                                              \
                } else if (v > best || best_at < 0 ||                                           \
                           (v == best && signbit(best) && !signbit(v))) {                        \
                    best = v, best_at = off;                                                     \
                    if (arg) *arg = spatial_index(g, ipos, p->col_major);                        \
                }                                                                                \
            } else {                                                                             \
                sum += v;                                                                        \
            }                                                                                    \
            int i = g->nd - 1;                                                                   \
            while (i >= 0 && ++kk[i] >= w->khi[i]) kk[i] = w->klo[i], i--;                       \
            if (i < 0) break;                                                                    \
        }                                                                                        \
        if (p->kind == POOL_MAX) return any_nan ? NAN : best;                                    \
        return w->count > 0 ? sum / (double)w->count : 0;                                        \
    }
#define LOAD_F32(x, i) ((double)(x)[i])
DEFINE_WINDOW_FN(f32, float, LOAD_F32)

/* For other dtypes the "plane" is the whole tensor; offsets add the base. */
typedef struct plane_view {
    const inf_tensor *t;
    int64_t base;
} plane_view;
#define LOAD_VIEW(x, i) inf__tensor_get_f64((x)->t, (x)->base + (i))
DEFINE_WINDOW_FN(any, plane_view, LOAD_VIEW)

static void pool_planes(void *arg, int64_t begin, int64_t end) {
    const pool_task *t = arg;
    const pool_geom *g = t->g;
    bool f32 = t->x->dtype == INF_DTYPE_F32;
    int64_t taps = 0;
    for (int64_t pl = begin; pl < end; pl++) {
        int64_t opos[MAX_SP] = {0};
        for (int64_t o = 0; o < g->out_total; o++) {
            window w;
            make_window(g, t->p, opos, &w);
            if ((taps += w.taps + 1) >= POOL_TAPS_PER_CHECK) {
                taps = 0;
                if (atomic_load_explicit(t->stopped, memory_order_relaxed) || inf__kernel_out_of_time(t->ctx)) {
                    atomic_store_explicit(t->stopped, true, memory_order_relaxed);
                    return;
                }
            }
            int64_t argi = 0, *argp = t->ind ? &argi : NULL, yo = pl * g->out_total + o;
            double v;
            if (f32) {
                v = window_f32(g, t->p, (const float *)t->x->data + pl * g->in_total, &w, argp);
                ((float *)t->y->data)[yo] = (float)v;
            } else {
                plane_view pv = {t->x, pl * g->in_total};
                v = window_any(g, t->p, &pv, &w, argp);
                inf__tensor_set_f64(t->y, yo, v);
            }
            if (t->ind) ((int64_t *)t->ind->data)[yo] = pl * g->in_total + argi;
            for (int i = g->nd - 1; i >= 0; i--) {
                if (++opos[i] < g->out[i]) break;
                opos[i] = 0;
            }
        }
    }
}

/* ---- 2-D float32: the reference twin of ops/x86/pool_avx2.c ---- */

static void pool2d_to_geom(const inf__pool2d *q, pool_geom *g, pool_params *p) {
    memset(g, 0, sizeof *g);
    memset(p, 0, sizeof *p);
    p->kind = q->max ? POOL_MAX : POOL_AVG;
    p->count_include_pad = q->count_include_pad;
    g->nd = 2;
    g->in[0] = q->ih, g->in[1] = q->iw, g->out[0] = q->oh, g->out[1] = q->ow;
    g->k[0] = q->kh, g->k[1] = q->kw, g->s[0] = q->sh, g->s[1] = q->sw, g->d[0] = g->d[1] = 1;
    g->pb[0] = q->pt, g->pb[1] = q->pl, g->pe[0] = q->pb, g->pe[1] = q->pr;
    g->in_total = q->ih * q->iw, g->out_total = q->oh * q->ow;
}

void inf__ops_pool2d_f32_ref(const inf__pool2d *q, const float *x, float *y, int64_t n_planes) {
    pool_geom g;
    pool_params p;
    pool2d_to_geom(q, &g, &p);
    for (int64_t pl = 0; pl < n_planes; pl++)
        for (int64_t oy = 0; oy < q->oh; oy++)
            for (int64_t ox = 0; ox < q->ow; ox++) {
                int64_t opos[2] = {oy, ox};
                window w;
                make_window(&g, &p, opos, &w);
                y[pl * inf__pool2d_yplane(q) + oy * q->ow + ox] =
                    (float)window_f32(&g, &p, x + pl * inf__pool2d_xplane(q), &w, NULL);
            }
}

#if defined(__x86_64__)
typedef struct pool2d_task {
    inf__pool2d q;
    const float *x;
    float *y;
    const inf__kernel_ctx *ctx;
    atomic_bool *stopped;
    int64_t planes_per_check;
    int64_t channels; /* per image (pool2d_rows) */
} pool2d_task;

/* The fast kernel over n planes from x to y (AVX-512 or AVX2). */
static void pool2d_kernel(const inf__pool2d *q, const float *x, float *y, int64_t n) {
    if (inf__cpu_has_avx512())
        inf__ops_pool2d_f32_avx512(q, x, y, n); /* ops/x86/pool_avx512.c */
    else
        inf__ops_pool2d_f32_avx2(q, x, y, n);
}

/* planes_per_check planes at a time (about 2^22 reads), the time budget
 * checked before each group (a plane's work is bounded: see
 * POOL2D_MAX_PLANE_WORK). */
static void pool2d_planes(void *arg, int64_t begin, int64_t end) {
    const pool2d_task *t = arg;
    for (int64_t pl = begin, n; pl < end; pl += n) {
        if (atomic_load_explicit(t->stopped, memory_order_relaxed) || inf__kernel_out_of_time(t->ctx)) {
            atomic_store_explicit(t->stopped, true, memory_order_relaxed);
            return;
        }
        n = end - pl < t->planes_per_check ? end - pl : t->planes_per_check;
        pool2d_kernel(&t->q, t->x + pl * t->q.ih * t->q.iw, t->y + pl * t->q.oh * t->q.ow, n);
    }
}

/* Output rows [begin, end) of the images (row u = image u / oh, row u % oh),
 * every channel: the split for a batch smaller than the threads, so each
 * thread pools the band of rows the row-split convolution before it wrote
 * and the one after it reads (by channel planes, half of the input and of
 * the output crossed between the cores: MaxPool of the bench CNN at batch
 * 1, 2 threads).  Only without top padding, where output row oy reads input
 * rows from oy * sh: a band is then the same pool on a shorter input that
 * starts at row oy0 * sh -- the same windows, the same bits. */
static void pool2d_rows(void *arg, int64_t begin, int64_t end) {
    const pool2d_task *t = arg;
    const inf__pool2d *q = &t->q;
    for (int64_t u = begin, n; u < end; u += n) {
        if (atomic_load_explicit(t->stopped, memory_order_relaxed) || inf__kernel_out_of_time(t->ctx)) {
            atomic_store_explicit(t->stopped, true, memory_order_relaxed);
            return;
        }
        int64_t img = u / q->oh, oy0 = u % q->oh;
        n = end - u < q->oh - oy0 ? end - u : q->oh - oy0;
        inf__pool2d band = *q;
        band.oh = n, band.ih = q->ih - oy0 * q->sh;
        for (int64_t c = 0; c < t->channels; c++) {
            int64_t plane = img * t->channels + c;
            pool2d_kernel(&band, t->x + plane * q->ih * q->iw + oy0 * q->sh * q->iw,
                          t->y + plane * q->oh * q->ow + oy0 * q->ow, 1);
        }
    }
}
#endif

/* The fast kernels check no time inside a plane; a plane whose work (input
 * rows summed per output row, plus window columns) passes this goes to the
 * generic path, which does (a window as tall as a 2^24-row input ran for
 * minutes in one plane). */
#define POOL2D_MAX_PLANE_WORK ((int64_t)1 << 26)

/* The AVX2 path when it applies (see ops.h); false otherwise. */
static bool pool2d_fast(inf__kernel_ctx *ctx, const pool_params *p, const pool_geom *g, const inf_tensor *x,
                        inf_tensor *y, bool want_ind, inf_status *st) {
#if defined(__x86_64__)
    int l = g->nd - 1; /* 1-D runs as 2-D with one row */
    if (x->dtype != INF_DTYPE_F32 || (g->nd != 2 && g->nd != 1) || want_ind || g->d[0] != 1 || g->d[l] != 1 ||
        g->in[l] > INF_POOL2D_MAX_W || !inf__cpu_has_avx2_fma())
        return false;
    int64_t oh = l ? g->out[0] : 1, kh = l ? g->k[0] : 1, ih = l ? g->in[0] : 1;
    int64_t rows_read = kh < ih ? kh : ih; /* all < 2^31: the sum below cannot overflow */
    int64_t plane_work = rows_read * g->in[l] + g->out[l] * (g->k[l] < g->in[l] ? g->k[l] : g->in[l]) + 1;
    if (oh > POOL2D_MAX_PLANE_WORK / plane_work) return false;
    atomic_bool stopped = false;
    pool2d_task t = {{ih, g->in[l], oh, g->out[l], kh, g->k[l], l ? g->s[0] : 1, g->s[l], l ? g->pb[0] : 0, g->pb[l],
                      l ? g->pe[0] : 0, g->pe[l], p->kind == POOL_MAX, p->count_include_pad, 0, 0},
                     x->data,
                     y->data,
                     ctx,
                     &stopped,
                     ((int64_t)1 << 22) / (oh * plane_work + 1) + 1,
                     x->dims[1]};
    int64_t work = g->out_total * rows_read * (g->k[l] < g->in[l] ? g->k[l] : g->in[l]) / 4 + 1; /* < 2^52 (above) */
    int64_t images = x->dims[0], threads = inf__pool_size(ctx->pool);
    if (l && t.q.pt == 0 && images < threads && oh >= 2 * threads) {
        int64_t row_work = x->dims[1] * work / oh + 1; /* one output row of every channel */
        inf__pool_range(ctx->pool, images * oh, row_work > 8192 ? 1 : 8192 / row_work + 1, pool2d_rows, &t);
    } else {
        inf__pool_range(ctx->pool, g->planes, work > 8192 ? 1 : 8192 / work + 1, pool2d_planes, &t);
    }
    *st = atomic_load(&stopped) ? inf__kernel_check_time(ctx) : INF_OK;
    return true;
#else
    (void)ctx, (void)p, (void)g, (void)x, (void)y, (void)want_ind, (void)st;
    return false;
#endif
}

static bool pool_dtype_ok(int kind, inf_dtype t) {
    if (t == INF_DTYPE_F32 || t == INF_DTYPE_F64 || t == INF_DTYPE_F16) return true;
    return kind == POOL_MAX && (t == INF_DTYPE_I8 || t == INF_DTYPE_U8);
}

/* y (and ind, when not NULL) = the pool of x: the fast 2-D kernel or the window loop. */
static inf_status pool_any(inf__kernel_ctx *ctx, const pool_params *p, const pool_geom *g, const inf_tensor *x,
                           inf_tensor *y, inf_tensor *ind) {
    inf_status st;
    if (pool2d_fast(ctx, p, g, x, y, ind != NULL, &st))
        return st;
    atomic_bool stopped = false;
    pool_task t = {g, p, x, y, ind, ctx, &stopped};
    int64_t work; /* kernel sizes go to 2^31 each: the product saturates */
    if (__builtin_mul_overflow(g->out_total, (int64_t)p->kernel[0] * (g->nd > 1 ? p->kernel[1] : 1), &work))
        work = INT64_MAX;
    inf__pool_range(ctx->pool, g->planes, work > 4096 ? 1 : 4096 / (work + 1) + 1, pool_planes, &t);
    return atomic_load(&stopped) ? inf__kernel_check_time(ctx) : INF_OK;
}

static inf_status pool_run(inf__kernel_ctx *ctx) {
    const pool_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0];
    if (!pool_dtype_ok(p->kind, x->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "input X: unsupported dtype %s (float32, float64, float16%s)",
                                 inf_dtype_name(x->dtype), p->kind == POOL_MAX ? ", int8, uint8" : "");
    pool_geom g;
    inf_status st = pool_geometry(ctx, p, x, &g);
    if (st != INF_OK) return st;
    int64_t dims[INF_MAX_DIMS] = {x->dims[0], x->dims[1]};
    for (int i = 0; i < g.nd; i++) dims[2 + i] = g.out[i];
    inf_tensor *y, *ind = NULL;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, x->ndim, dims, &y)) != INF_OK) return st;
    bool want_ind = p->kind == POOL_MAX && ctx->n_out > 1 && ctx->node->n_outputs > 1 &&
                    ctx->node->outputs[1] >= 0;
    if (want_ind && (st = inf__kernel_output(ctx, 1, INF_DTYPE_I64, x->ndim, dims, &ind)) != INF_OK)
        return st;
    return pool_any(ctx, p, &g, x, y, ind);
}

const inf__op_impl op_pool = {pool_init, pool_run};

inf_status inf__ops_maxpool2d(inf__kernel_ctx *ctx, const int64_t pool[4], const inf_tensor *x, inf_tensor *y) {
    pool_params p = {
        .kind = POOL_MAX, .auto_pad = AUTO_NOTSET, .n_kernel = 2, .n_strides = 2, .kernel = pool, .strides = pool + 2};
    pool_geom g;
    inf_status st = pool_geometry(ctx, &p, x, &g);
    if (st != INF_OK)
        return st;
    return pool_any(ctx, &p, &g, x, y, NULL);
}

/* ---- GlobalAveragePool, GlobalMaxPool ---- */

typedef struct gpool_task {
    bool max;
    int64_t plane;
    const inf_tensor *x;
    inf_tensor *y;
} gpool_task;

/* The sum of n floats in double, over 16 independent chains: chain j adds
 * x[j], x[j + 16], ... (the tail's missing elements count as +0), then
 * v[j] = (a[j] + a[4 + j]) + (a[8 + j] + a[12 + j]) and the sum
 * (v[0] + v[1]) + (v[2] + v[3]) -- the order of inf__sum_f32_as_f64_avx2
 * (ops/x86/pool_avx2.c: four chains of 4 doubles), so every path gives the
 * same bits.  One chain is bound by the add latency (mobile's final
 * 1024 x 3 x 3 GlobalAveragePool took 13-19 us against ONNX Runtime's 7-9
 * then); four scalar chains left EfficientNet-B0's squeeze-and-excitation
 * pools (17 of them, up to 32 x 112 x 112) at 380 us a run against ONNX
 * Runtime's 141 (session 28). */
static double sum_f32_as_f64(const float *x, int64_t n) {
#if defined(__x86_64__)
    if (inf__cpu_has_avx2_fma()) return inf__sum_f32_as_f64_avx2(x, n);
#endif
    double a[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) a[j] += x[i + j];
    for (int j = 0; i + j < n; j++) a[j] += x[i + j];
    double v[4];
    for (int j = 0; j < 4; j++) v[j] = (a[j] + a[4 + j]) + (a[8 + j] + a[12 + j]);
    return (v[0] + v[1]) + (v[2] + v[3]);
}

static void gpool_planes(void *arg, int64_t begin, int64_t end) {
    const gpool_task *t = arg;
    for (int64_t pl = begin; pl < end; pl++) {
        int64_t base = pl * t->plane;
        double acc = t->max ? -INFINITY : 0.0;
        if (t->x->dtype == INF_DTYPE_F32) {
            const float *x = (const float *)t->x->data + base;
            if (t->max) {
                float m = -INFINITY;
                for (int64_t i = 0; i < t->plane; i++) m = x[i] > m || x[i] != x[i] ? x[i] : m;
                acc = m;
            } else {
                acc = sum_f32_as_f64(x, t->plane);
            }
        } else {
            for (int64_t i = 0; i < t->plane; i++) {
                double v = inf__tensor_get_f64(t->x, base + i);
                if (t->max) acc = v > acc || v != v ? v : acc;
                else acc += v;
            }
        }
        if (!t->max) acc = t->plane > 0 ? acc / (double)t->plane : NAN;
        inf__tensor_set_f64(t->y, pl, acc);
    }
}

static inf_status global_pool_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x = ctx->in[0];
    char buf[96];
    if (!pool_dtype_ok(POOL_AVG, x->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "input X: expected float32, float64 or float16, got %s",
                                 inf_dtype_name(x->dtype));
    if (x->ndim < 3)
        return inf__kernel_error(ctx, INF_ESHAPE, "input X: expected rank >= 3 [N,C,D1,...], got %s",
                                 inf__shape_str(x->ndim, x->dims, buf, sizeof buf));
    int64_t dims[INF_MAX_DIMS];
    int64_t plane = 1;
    for (int i = 0; i < x->ndim; i++) {
        dims[i] = i < 2 ? x->dims[i] : 1;
        if (i >= 2) plane *= x->dims[i];
    }
    inf_tensor *y;
    inf_status st = inf__kernel_output(ctx, 0, x->dtype, x->ndim, dims, &y);
    if (st != INF_OK) return st;
    gpool_task t = {!strcmp(ctx->node->op_type, "GlobalMaxPool"), plane, x, y};
    inf__pool_range(ctx->pool, x->dims[0] * x->dims[1], 16384 / (plane + 1) + 1, gpool_planes, &t);
    return INF_OK;
}

const inf__op_impl op_global_pool = {NULL, global_pool_run};
