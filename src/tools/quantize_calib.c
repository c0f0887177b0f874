/*
 * quantize_calib.c -- activation ranges for static quantization, measured on
 * real data.
 *
 * DESIGN: the tensors to calibrate are made graph outputs of a copy of the
 * model (infera/model_write.h), which is loaded and run like any model on the
 * calibration data (quantize_feed.c: records through the pipeline, or a
 * tensor file).
 *   minmax      one pass: the smallest and largest value seen (NaN and
 *               infinities are left out and counted for the report; a tensor
 *               with no finite value at all is an error).
 *   percentile  a second pass fills a HIST_BINS-bin histogram over the first
 *               pass's [min, max]; the range drops PERCENTILE_TAIL of the
 *               mass at each end.
 *   entropy     a second pass fills a histogram of |x| over [0, max |x|];
 *               the threshold T minimises KL(P || Q) between the clipped
 *               distribution and its 128-level quantized copy (TensorRT's
 *               method); the range is [min, max] clipped to [-T, T].
 * The second pass re-reads the source from the start.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infera/model.h"
#include "infera/session.h"
#include "infera/model_write.h"
#include "tools/quantize.h"

enum { HIST_BINS = 2048, KL_LEVELS = 128 };
#define PERCENTILE_TAIL 0.00001 /* 99.999th percentile at each end, as ONNX Runtime's default */

typedef struct tensor_stats {
    double min, max;
    long long nonfinite; /* NaN / infinite values seen (pass 0), left out of the range */
    double *hist; /* HIST_BINS */
} tensor_stats;

typedef struct calib {
    const inf__quantize_options *opts;
    inf_model *plain;       /* the model as given: its declared inputs, the spec's checks */
    inf_model *model;       /* the model with the calibrated tensors as extra outputs */
    inf_session *session;
    int n;
    int *out_index;         /* calibrated tensor i is output out_index[i] */
    const char *const *names;
    tensor_stats *stats;
    int pass;               /* 0: min/max; 1: histograms */
    long long rows;
} calib;

/* ---- the model with extra outputs ---- */

static inf_status load_augmented(calib *c, inf_error *err) {
    inf_model_edit *ed;
    inf_status st = inf_model_edit_open(c->opts->in_path, &ed, err);
    if (st != INF_OK) return st;
    for (int i = 0; i < c->n && st == INF_OK; i++) /* float tensors of unknown shape */
        if (!inf_model_edit_is_output(ed, c->names[i]))
            st = inf_model_edit_add_output(ed, c->names[i], INF_DTYPE_F32, -1, NULL, NULL, err);
    void *buf = NULL;
    size_t size = 0;
    if (st == INF_OK) st = inf_model_edit_serialize(ed, &buf, &size, err);
    inf_model_edit_free(ed);
    if (st != INF_OK) return st;
    st = inf_model_load_buffer(buf, size, NULL, NULL, &c->model, err);
    inf_model_edit_buffer_free(buf);
    if (st != INF_OK) return st;
    for (int i = 0; i < c->n; i++)
        if ((c->out_index[i] = inf_model_find_output(c->model, c->names[i])) < 0)
            return inf_error_set(err, INF_EINTERNAL, "calibration: tensor '%s' is not an output", c->names[i]);
    inf_session_options so;
    inf_session_options_init(&so);
    so.n_threads = 2;
    so.max_batch = INF__QUANT_FEED_ROWS;
    return inf_session_new(c->model, &so, &c->session, err);
}

/* ---- statistics ---- */

static void observe(calib *c, int i, const inf_tensor *t) {
    tensor_stats *s = &c->stats[i];
    if (t->dtype != INF_DTYPE_F32) return;
    const float *x = t->data;
    int64_t n = inf_tensor_numel(t);
    if (c->pass == 0) {
        for (int64_t k = 0; k < n; k++) {
            double v = x[k];
            if (!isfinite(v)) {
                s->nonfinite++;
                continue;
            }
            if (v < s->min) s->min = v;
            if (v > s->max) s->max = v;
        }
        return;
    }
    bool abs_hist = c->opts->method == INF_QUANT_ENTROPY;
    double lo = abs_hist ? 0 : s->min, hi = abs_hist ? fmax(fabs(s->min), fabs(s->max)) : s->max;
    double width = (hi - lo) / HIST_BINS;
    if (!(width > 0)) return;
    for (int64_t k = 0; k < n; k++) {
        double v = abs_hist ? fabs(x[k]) : x[k];
        if (!isfinite(v)) continue;
        long b = (long)((v - lo) / width);
        b = b < 0 ? 0 : b >= HIST_BINS ? HIST_BINS - 1 : b;
        s->hist[b] += 1;
    }
}

static inf_status run_batch(void *ctx, const inf_tensor *const *inputs, int rows, inf_error *err) {
    calib *c = ctx;
    inf_tensor *const *outs;
    (void)rows;
    inf_status st = inf_session_run(c->session, inputs, &outs, err);
    if (st != INF_OK) return st;
    for (int i = 0; i < c->n; i++)
        observe(c, i, outs[c->out_index[i]]);
    return INF_OK;
}

static inf_status feed(calib *c, inf_error *err) {
    return inf__tools_quant_feed(c->opts, c->plain, run_batch, c, &c->rows, err);
}

/* ---- ranges from histograms ---- */

static void percentile_range(const tensor_stats *s, float *lo, float *hi) {
    double total = 0, width = (s->max - s->min) / HIST_BINS;
    for (int b = 0; b < HIST_BINS; b++) total += s->hist[b];
    double tail = total * PERCENTILE_TAIL, acc = 0;
    int blo = 0, bhi = HIST_BINS - 1;
    for (; blo < HIST_BINS - 1 && acc + s->hist[blo] <= tail; blo++) acc += s->hist[blo];
    for (acc = 0; bhi > blo && acc + s->hist[bhi] <= tail; bhi--) acc += s->hist[bhi];
    *lo = (float)(s->min + blo * width);
    *hi = (float)(s->min + (bhi + 1) * width);
}

/* KL(P || Q) of the first n bins (outliers folded into the last) against
 * their KL_LEVELS-level quantization. */
static double kl_for_threshold(const double *hist, int n, double *p, double *q) {
    double outliers = 0;
    for (int b = n; b < HIST_BINS; b++) outliers += hist[b];
    memcpy(p, hist, (size_t)n * sizeof *p);
    p[n - 1] += outliers;
    for (int l = 0; l < KL_LEVELS; l++) {
        int b0 = (int)((long)l * n / KL_LEVELS), b1 = (int)((long)(l + 1) * n / KL_LEVELS);
        double sum = 0;
        int nonzero = 0;
        for (int b = b0; b < b1; b++) sum += hist[b], nonzero += hist[b] > 0;
        for (int b = b0; b < b1; b++) q[b] = hist[b] > 0 ? sum / nonzero : 0;
    }
    double ps = 0, qs = 0, kl = 0;
    for (int b = 0; b < n; b++) ps += p[b], qs += q[b];
    if (ps <= 0 || qs <= 0) return INFINITY;
    for (int b = 0; b < n; b++)
        if (p[b] > 0) kl += p[b] / ps * log((p[b] / ps) / (q[b] > 0 ? q[b] / qs : 1e-12));
    return kl;
}

static void entropy_range(const tensor_stats *s, double *scratch, float *lo, float *hi) {
    double amax = fmax(fabs(s->min), fabs(s->max)), width = amax / HIST_BINS, best = INFINITY;
    int best_n = HIST_BINS;
    for (int n = KL_LEVELS; n <= HIST_BINS; n += 16) {
        double kl = kl_for_threshold(s->hist, n, scratch, scratch + HIST_BINS);
        if (kl < best) best = kl, best_n = n;
    }
    double t = best_n * width;
    *lo = (float)fmax(s->min, -t);
    *hi = (float)fmin(s->max, t);
}

inf_status inf__tools_calibrate(const inf__quantize_options *opts, const char *const *names, int n, float *lo,
                                float *hi, long long *rows, long long *nonfinite, inf_error *err) {
    calib c = {.opts = opts, .n = n, .names = names};
    double *scratch = NULL;
    inf_status st = INF_OK;
    c.stats = calloc((size_t)n, sizeof *c.stats);
    c.out_index = calloc((size_t)n, sizeof *c.out_index);
    if (!c.stats || !c.out_index) {
        free(c.stats), free(c.out_index);
        return inf_error_set(err, INF_ENOMEM, "calibration: out of memory");
    }
    for (int i = 0; i < n; i++) c.stats[i].min = INFINITY, c.stats[i].max = -INFINITY;
    if ((st = inf_model_load(opts->in_path, NULL, &c.plain, err)) != INF_OK || (st = load_augmented(&c, err)) != INF_OK ||
        (st = feed(&c, err)) != INF_OK)
        goto done;
    if (opts->method != INF_QUANT_MINMAX) {
        scratch = malloc(2 * HIST_BINS * sizeof *scratch);
        if (!scratch) {
            st = inf_error_set(err, INF_ENOMEM, "calibration: out of memory");
            goto done;
        }
        for (int i = 0; i < n; i++)
            if (!(c.stats[i].hist = calloc(HIST_BINS, sizeof(double)))) {
                st = inf_error_set(err, INF_ENOMEM, "calibration: out of memory");
                goto done;
            }
        c.pass = 1;
        if ((st = feed(&c, err)) != INF_OK) goto done;
    }
    *nonfinite = 0;
    for (int i = 0; i < n; i++) {
        const tensor_stats *s = &c.stats[i];
        *nonfinite += s->nonfinite;
        if (!(s->min <= s->max) && s->nonfinite) { /* a range from nothing would be a silent guess */
            st = inf_error_set(err, INF_EINVAL,
                               "calibration: tensor '%s' has no finite value in %lld records of '%s' (%lld NaN or "
                               "infinite): fix or drop those records",
                               names[i], c.rows, opts->calibration, s->nonfinite);
            goto done;
        }
        if (!(s->min <= s->max)) { /* never seen as float32 */
            lo[i] = hi[i] = 0;
            continue;
        }
        if (opts->method == INF_QUANT_PERCENTILE && s->max > s->min) percentile_range(s, &lo[i], &hi[i]);
        else if (opts->method == INF_QUANT_ENTROPY && s->max > s->min) entropy_range(s, scratch, &lo[i], &hi[i]);
        else lo[i] = (float)s->min, hi[i] = (float)s->max;
    }
    *rows = c.rows;
done:
    for (int i = 0; i < n; i++) free(c.stats[i].hist);
    free(c.stats);
    free(c.out_index);
    free(scratch);
    inf_session_free(c.session);
    inf_model_free(c.model);
    inf_model_free(c.plain);
    return st;
}
