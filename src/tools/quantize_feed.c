/*
 * quantize_feed.c -- the calibration data of `infera quantize`, as batches of
 * model inputs: what calibration (quantize_calib.c) measures ranges on and
 * the sensitivity analysis (quantize_sensitivity.c) compares outputs on.
 *
 * DESIGN: records of any batch source (csv:, jsonl:, sqlite:, postgresql:...)
 * mapped by the pipeline spec or the default mapping (the same code every
 * runner uses, so the quantizer sees the features production sees), or the
 * rows of a tensor file (.npy / .pb: images, sequences -- inputs the default
 * mapping cannot express), in batches of at most INF__QUANT_FEED_ROWS rows.
 * A model exported with a fixed batch (torch.onnx's dynamo exporter without
 * dynamic shapes: input_ids int64[2, 12]) takes batches of exactly that many
 * rows; a shorter last batch is left out (the report counts the records that
 * were used), and a source without one full batch is an error naming the input.
 * Each call reads the source from the start, so every pass sees the same
 * batches in the same order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infera/io.h"
#include "infera/model.h"
#include "infera/pipeline.h"
#include "tools/quantize.h"

typedef struct feeder {
    const inf__quantize_options *opts;
    const inf_model *model;
    inf__quant_batch_fn fn;
    void *ctx;
    long long rows;
    int batch;          /* rows per batch: INF__QUANT_FEED_ROWS, or the model's fixed batch */
    int fixed_input;    /* the input whose fixed batch that is, or -1 */
    long long left_out; /* rows of short batches a fixed batch could not take */
} feeder;

/* The first dimension every input fixes to the same number of rows below
 * INF__QUANT_FEED_ROWS (a model exported without a dynamic batch), else
 * INF__QUANT_FEED_ROWS; *which: that input, or -1. */
static int batch_rows(const inf_model *model, int *which) {
    int rows = 0;
    *which = -1;
    for (int i = 0; i < inf_model_n_inputs(model); i++) {
        const inf_value_info *info = inf_model_input(model, i);
        if (info->ndim < 1 || info->dims[0] <= 0 || info->dims[0] >= INF__QUANT_FEED_ROWS) return INF__QUANT_FEED_ROWS;
        if (rows && info->dims[0] != rows) return INF__QUANT_FEED_ROWS;
        rows = (int)info->dims[0];
        if (*which < 0) *which = i;
    }
    return rows ? rows : INF__QUANT_FEED_ROWS;
}

static bool is_tensor_file(const char *src) {
    size_t n = strlen(src);
    return (n > 4 && !strcmp(src + n - 4, ".npy")) || (n > 3 && !strcmp(src + n - 3, ".pb"));
}

static long long row_limit(const feeder *f) {
    return f->opts->calibration_rows > 0 ? f->opts->calibration_rows : -1;
}

static inf_status run_batch(feeder *f, const inf_tensor *const *inputs, int rows, inf_error *err) {
    if (f->fixed_input >= 0 && rows != f->batch) { /* a short last batch: the model takes f->batch rows only */
        f->left_out += rows;
        return INF_OK;
    }
    inf_status st = f->fn(f->ctx, inputs, rows, err);
    if (st == INF_OK)
        f->rows += rows;
    return st;
}

/* The rows of a tensor file, INF__QUANT_FEED_ROWS at a time, as the model's one input. */
static inf_status feed_tensor_file(feeder *f, inf_error *err) {
    const char *src = f->opts->calibration;
    if (inf_model_n_inputs(f->model) != 1)
        return inf_error_set(err, INF_EINVAL,
                             "calibration '%s': a tensor file feeds a model with one input, "
                             "this one has %d (use a record source and a spec)",
                             src, inf_model_n_inputs(f->model));
    inf_tensor *t;
    size_t n = strlen(src);
    inf_status st =
        !strcmp(src + n - 4, ".npy") ? inf_tensor_load_npy(src, &t, err) : inf_tensor_load_pb(src, 0, &t, err);
    if (st != INF_OK)
        return st;
    const inf_value_info *info = inf_model_input(f->model, 0);
    if (t->kind != INF_KIND_TENSOR || t->ndim < 1 || (info->ndim >= 0 && info->ndim != t->ndim) ||
        (info->dtype != INF_DTYPE_UNDEFINED && info->dtype != t->dtype)) {
        inf_tensor_free(t);
        return inf_error_set(err, INF_ESHAPE, "calibration '%s': expected a %s tensor of rank %d for input '%s'", src,
                             inf_dtype_name(info->dtype), info->ndim, info->name ? info->name : "");
    }
    int64_t total = t->dims[0], row_bytes = total ? (int64_t)inf_tensor_nbytes(t) / total : 0;
    if (row_limit(f) >= 0 && total > row_limit(f))
        total = row_limit(f);
    if (total == 0) {
        inf_tensor_free(t);
        return inf_error_set(err, INF_EINVAL, "calibration '%s' is empty: no rows to calibrate on", src);
    }
    for (int64_t r = 0; r < total && st == INF_OK; r += f->batch) {
        int64_t dims[INF_MAX_DIMS];
        memcpy(dims, t->dims, sizeof dims);
        dims[0] = total - r < f->batch ? total - r : f->batch;
        inf_tensor view;
        inf_tensor_init_view(&view, t->dtype, t->ndim, dims, (char *)t->data + r * row_bytes);
        const inf_tensor *in[1] = {&view};
        st = run_batch(f, in, (int)dims[0], err);
    }
    inf_tensor_free(t);
    return st;
}

/* Records of a batch source through the pipeline (spec or default mapping). */
static inf_status feed_records(feeder *f, inf_error *err) {
    const char *src = f->opts->calibration;
    inf_pipeline_options po;
    inf_pipeline_options_init(&po);
    inf_pipeline *p = NULL;
    inf_pipeline_exec *e = NULL;
    inf_source *s = NULL;
    inf_record_batch *batch = NULL;
    inf_status st = f->opts->spec ? inf_pipeline_load(f->opts->spec, f->model, &po, &p, err)
                                  : inf_pipeline_default(f->model, &po, &p, err);
    if (st != INF_OK)
        goto done;
    if ((st = inf_pipeline_exec_new(p, &e, err)) != INF_OK)
        goto done;
    inf_source_options so = {.max_rows = f->batch, .id_column = NULL};
    if ((st = inf_source_open(src, &so, &s, err)) != INF_OK)
        goto done;
    if ((st = inf_record_batch_new(&batch)) != INF_OK) {
        inf_error_set(err, st, "calibration: out of memory");
        goto done;
    }
    long long limit = row_limit(f);
    for (int eof = 0; !eof && (limit < 0 || f->rows < limit);) {
        if ((st = inf_source_next(s, batch, &eof, err)) != INF_OK)
            goto done;
        int rows = inf_record_batch_n_rows(batch);
        if (rows == 0)
            continue;
        const inf_tensor *const *x;
        if ((st = inf_pipeline_prepare(e, batch, &x, err)) != INF_OK)
            goto done;
        if (inf_pipeline_n_rejected(e) > 0 && inf_pipeline_n_accepted(e) == 0) {
            const char *field, *msg;
            inf_pipeline_rejected(e, 0, &field, &msg);
            st = inf_error_set(err, INF_EINVAL,
                               "calibration '%s': every record of a batch was rejected "
                               "(field '%s': %s)",
                               src, field ? field : "", msg ? msg : "");
            goto done;
        }
        int use = inf_pipeline_n_accepted(e);
        if (limit >= 0 && f->rows + use > limit)
            use = (int)(limit - f->rows);
        if (use <= 0)
            continue;
        inf_tensor views[8];
        const inf_tensor *vx[8];
        if (use < inf_pipeline_n_accepted(e)) { /* the first `use` rows of each input */
            int n_in = inf_model_n_inputs(f->model);
            if (n_in > 8)
                use = inf_pipeline_n_accepted(e);
            for (int i = 0; i < n_in && n_in <= 8; i++) {
                int64_t dims[INF_MAX_DIMS];
                memcpy(dims, x[i]->dims, sizeof dims);
                dims[0] = use;
                inf_tensor_init_view(&views[i], x[i]->dtype, x[i]->ndim, dims, x[i]->data);
                vx[i] = &views[i];
            }
            if (n_in <= 8)
                x = vx;
        }
        if ((st = run_batch(f, x, use, err)) != INF_OK)
            goto done;
    }
    if (f->rows == 0 && f->left_out == 0)
        st = inf_error_set(err, INF_EINVAL, "calibration source '%s' is empty: no records to calibrate on", src);
done:
    inf_record_batch_free(batch);
    inf_source_close(s);
    inf_pipeline_exec_free(e);
    inf_pipeline_free(p);
    return st;
}

inf_status inf__tools_quant_feed(const inf__quantize_options *opts, const inf_model *model, inf__quant_batch_fn fn,
                                 void *ctx, long long *rows, inf_error *err) {
    feeder f = {.opts = opts, .model = model, .fn = fn, .ctx = ctx};
    f.batch = batch_rows(model, &f.fixed_input);
    inf_status st = is_tensor_file(opts->calibration) ? feed_tensor_file(&f, err) : feed_records(&f, err);
    if (st == INF_OK && f.rows == 0 && f.left_out > 0) {
        const inf_value_info *info = inf_model_input(model, f.fixed_input);
        st = inf_error_set(err, INF_EINVAL,
                           "calibration '%s': input '%s' has a fixed batch of %d rows (the model was exported "
                           "without a dynamic batch) and the source gave %lld usable rows, not one full batch",
                           opts->calibration, info->name ? info->name : "", f.batch, f.left_out);
    }
    if (rows)
        *rows = f.rows;
    return st;
}
