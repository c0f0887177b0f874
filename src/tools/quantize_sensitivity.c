/*
 * quantize_sensitivity.c -- `infera quantize --sensitivity / --min-sqnr`:
 * which layers lose accuracy when quantized.
 *
 * DESIGN: the full quantization runs first (quantize.c, in memory): it lists
 * the nodes it quantizes and measures the activation ranges once.  Then each
 * of those nodes is quantized alone -- every other candidate left FP32, the
 * same ranges, method, per-channel, format and reduce-range -- and the model
 * is run over the calibration data (quantize_feed.c) beside the FP32 model:
 * on every float32 output, the signal-to-quantization-noise ratio
 * 10 log10(sum ref^2 / sum (q - ref)^2) (+inf when equal), the largest
 * absolute error and, for an output whose last dim is > 1, the agreement of
 * the argmax over that dim (top-1).  The same figures for every node
 * quantized, and for OUT.  With --min-sqnr the nodes whose alone-quantized
 * SQNR is below the threshold are kept FP32 in OUT (one more quantization,
 * same ranges).  Models go from the editor to a session through memory
 * (inf_model_edit_serialize, inf_model_load_buffer): no temporary files.
 * Cost: one pass over the calibration data per node (two model runs a
 * record), plus one or two for the whole model.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infera/model.h"
#include "infera/session.h"
#include "tools/quantize.h"

typedef struct accum {
    double ref2, err2, max_abs;
    long long agree, top1_rows;
} accum;

typedef struct sens_ctx {
    const inf__quantize_options *o;
    inf_model *ref_model; /* the FP32 model as given */
    inf_session *ref;
    int *compared; /* indices of the float32 outputs */
    int n_compared;
    inf_session *q; /* the quantized model being measured */
    int *q_index;   /* q's output of the same name as compared[i] */
    accum acc;
} sens_ctx;

static inf_status nomem(inf_error *err) {
    return inf_error_set(err, INF_ENOMEM, "--sensitivity: out of memory");
}

static inf_status new_session(inf_model *m, inf_session **out, inf_error *err) {
    inf_session_options so;
    inf_session_options_init(&so);
    so.n_threads = 2;
    so.max_batch = INF__QUANT_FEED_ROWS;
    return inf_session_new(m, &so, out, err);
}

/* ---- the comparison ---- */

/* Index of the first largest of x[0, n) (numpy's argmax; NaN never wins). */
static int64_t argmax(const float *x, int64_t n) {
    int64_t best = 0;
    for (int64_t k = 1; k < n; k++)
        if (x[k] > x[best] || (isnan(x[best]) && !isnan(x[k])))
            best = k;
    return best;
}

static inf_status accumulate(accum *a, const char *name, const inf_tensor *ref, const inf_tensor *q, inf_error *err) {
    int64_t n = inf_tensor_numel(ref);
    if (q->dtype != INF_DTYPE_F32 || inf_tensor_numel(q) != n || q->ndim != ref->ndim)
        return inf_error_set(err, INF_ESHAPE,
                             "--sensitivity: output '%s' of the quantized model has another "
                             "type or shape than the FP32 model's",
                             name);
    const float *r = ref->data, *x = q->data;
    for (int64_t k = 0; k < n; k++) {
        double d = (double)x[k] - (double)r[k];
        a->ref2 += (double)r[k] * r[k];
        a->err2 += d * d;
        if (fabs(d) > a->max_abs || isnan(d))
            a->max_abs = isnan(d) ? NAN : fmax(a->max_abs, fabs(d));
    }
    int64_t last = ref->ndim > 0 ? ref->dims[ref->ndim - 1] : 1;
    if (last > 1)
        for (int64_t row = 0; row < n / last; row++) {
            a->agree += argmax(r + row * last, last) == argmax(x + row * last, last);
            a->top1_rows++;
        }
    return INF_OK;
}

static inf_status compare_batch(void *ctx, const inf_tensor *const *inputs, int rows, inf_error *err) {
    sens_ctx *s = ctx;
    inf_tensor *const *ref, *const *q;
    (void)rows;
    inf_status st = inf_session_run(s->ref, inputs, &ref, err);
    if (st == INF_OK)
        st = inf_session_run(s->q, inputs, &q, err);
    for (int i = 0; i < s->n_compared && st == INF_OK; i++) {
        int k = s->compared[i];
        st = accumulate(&s->acc, inf_model_output(s->ref_model, k)->name, ref[k], q[s->q_index[i]], err);
    }
    return st;
}

static inf__quant_fidelity fidelity_of(const accum *a) {
    inf__quant_fidelity f = {.max_abs_err = a->max_abs, .top1 = -1, .top1_rows = a->top1_rows};
    f.sqnr_db = a->err2 == 0 ? INFINITY : a->ref2 == 0 ? -INFINITY : 10 * log10(a->ref2 / a->err2);
    if (a->top1_rows)
        f.top1 = (double)a->agree / (double)a->top1_rows;
    return f;
}

/* Runs the quantized model ed beside the FP32 one over the calibration data. */
static inf_status measure(sens_ctx *s, const inf_model_edit *ed, inf__quant_fidelity *out, long long *records,
                          inf_error *err) {
    void *buf = NULL;
    size_t size = 0;
    inf_model *m = NULL;
    inf_status st = inf_model_edit_serialize(ed, &buf, &size, err);
    if (st == INF_OK)
        st = inf_model_load_buffer(buf, size, NULL, NULL, &m, err);
    inf_model_edit_buffer_free(buf);
    for (int i = 0; i < s->n_compared && st == INF_OK; i++) {
        const char *name = inf_model_output(s->ref_model, s->compared[i])->name;
        if ((s->q_index[i] = inf_model_find_output(m, name)) < 0)
            st = inf_error_set(err, INF_EINTERNAL, "--sensitivity: the quantized model has no output '%s'", name);
    }
    if (st == INF_OK)
        st = new_session(m, &s->q, err);
    s->acc = (accum){0};
    if (st == INF_OK)
        st = inf__tools_quant_feed(s->o, s->ref_model, compare_batch, s, records, err);
    if (st == INF_OK)
        *out = fidelity_of(&s->acc);
    inf_session_free(s->q);
    s->q = NULL;
    inf_model_free(m);
    return st;
}

/* ---- the FP32 reference ---- */

/* Loads the FP32 model and picks the outputs compared (float32; the others are listed in sens). */
static inf_status open_reference(sens_ctx *s, inf__quant_sensitivity *sens, inf_error *err) {
    inf_status st = inf_model_load(s->o->in_path, NULL, &s->ref_model, err);
    if (st != INF_OK)
        return st;
    int n = inf_model_n_outputs(s->ref_model);
    s->compared = calloc((size_t)n + 1, sizeof *s->compared);
    s->q_index = calloc((size_t)n + 1, sizeof *s->q_index);
    sens->skipped_outputs = calloc((size_t)n + 1, sizeof *sens->skipped_outputs);
    if (!s->compared || !s->q_index || !sens->skipped_outputs)
        return nomem(err);
    for (int i = 0; i < n; i++) {
        const inf_value_info *info = inf_model_output(s->ref_model, i);
        if (info->dtype == INF_DTYPE_F32 && info->kind == INF_KIND_TENSOR) {
            s->compared[s->n_compared++] = i;
        } else if (!(sens->skipped_outputs[sens->n_skipped_outputs++] = strdup(info->name ? info->name : ""))) {
            return nomem(err);
        }
    }
    if (s->n_compared == 0)
        return inf_error_set(err, INF_EINVAL,
                             "--sensitivity: '%s' has no float32 output to compare (output '%s' is %s): "
                             "the analysis compares float outputs with the FP32 model's",
                             s->o->in_path, sens->skipped_outputs[0],
                             inf_dtype_name(inf_model_output(s->ref_model, 0)->dtype));
    return new_session(s->ref_model, &s->ref, err);
}

/* ---- the analysis ---- */

static double sort_key(const inf__quant_sensitivity_row *r) {
    return isnan(r->fid.sqnr_db) ? -INFINITY : r->fid.sqnr_db;
}

/* Worst SQNR first (NaN worst of all), graph order among equals: an insertion sort (stable; a few rows). */
static void sort_rows(inf__quant_sensitivity_row *rows, int n) {
    for (int i = 1; i < n; i++) {
        inf__quant_sensitivity_row r = rows[i];
        int j = i;
        for (; j > 0 && sort_key(&rows[j - 1]) > sort_key(&r); j--)
            rows[j] = rows[j - 1];
        rows[j] = r;
    }
}

/* Each node of nodes[0, n) quantized alone and measured (rows take the nodes over). */
static inf_status measure_nodes(sens_ctx *s, inf__quant_ranges *ranges, inf__quant_node *nodes, int n,
                                inf__quant_sensitivity *sens, inf_error *err) {
    sens->rows = calloc((size_t)n + 1, sizeof *sens->rows);
    if (!sens->rows)
        return nomem(err);
    inf_status st = INF_OK;
    for (int i = 0; i < n; i++) {
        sens->rows[i].node = nodes[i];
        nodes[i] = (inf__quant_node){0};
        sens->n_rows++;
    }
    for (int i = 0; i < n && st == INF_OK; i++) {
        inf__quant_select alone = {.only = sens->rows[i].node.output, .ranges = ranges};
        inf__quantize_report r;
        inf_model_edit *ed = NULL;
        st = inf__tools_quantize_edit(s->o, &alone, &r, &ed, NULL, NULL, err);
        if (st == INF_OK)
            st = measure(s, ed, &sens->rows[i].fid, NULL, err);
        inf_model_edit_free(ed);
    }
    if (st == INF_OK)
        sort_rows(sens->rows, n);
    return st;
}

/* The outputs of the nodes below min_sqnr_db (kept FP32 in OUT), marked in rows. */
static inf_status below_threshold(inf__quant_sensitivity *sens, double min_sqnr_db, const char ***skip, int *n_skip,
                                  inf_error *err) {
    *skip = calloc((size_t)sens->n_rows + 1, sizeof **skip);
    if (!*skip)
        return nomem(err);
    for (int i = 0; i < sens->n_rows; i++) {
        inf__quant_sensitivity_row *r = &sens->rows[i];
        r->excluded = !(r->fid.sqnr_db >= min_sqnr_db); /* NaN: excluded */
        if (r->excluded)
            (*skip)[(*n_skip)++] = r->node.output;
    }
    sens->n_min_sqnr_excluded = *n_skip;
    return INF_OK;
}

/* OUT with the nodes below --min-sqnr kept FP32 (*out_ed NULL: none is, OUT is the full model). */
static inf_status apply_min_sqnr(sens_ctx *s, inf__quant_ranges *ranges, double min_sqnr_db,
                                 inf__quant_sensitivity *sens, inf__quantize_report *r, inf_model_edit **out_ed,
                                 inf_error *err) {
    const char **skip = NULL;
    int n_skip = 0;
    inf_status st = below_threshold(sens, min_sqnr_db, &skip, &n_skip, err);
    if (st == INF_OK && n_skip == sens->n_rows)
        st = inf_error_set(err, INF_EINVAL,
                           "--min-sqnr %g keeps every node FP32 (the best node quantized alone reaches "
                           "%.1f dB): nothing left to quantize; lower the threshold",
                           min_sqnr_db, sens->n_rows ? sens->rows[sens->n_rows - 1].fid.sqnr_db : 0.0);
    if (st == INF_OK && n_skip > 0) {
        inf__quant_select sel = {.skip = skip, .n_skip = n_skip, .ranges = ranges};
        st = inf__tools_quantize_edit(s->o, &sel, r, out_ed, NULL, NULL, err);
    }
    free(skip);
    return st;
}

void inf__quant_sensitivity_free(inf__quant_sensitivity *s) {
    for (int i = 0; i < s->n_rows; i++) {
        inf__quant_node *n = &s->rows[i].node;
        free(n->name), free(n->op_type), free(n->output);
    }
    for (int i = 0; i < s->n_skipped_outputs; i++)
        free(s->skipped_outputs[i]);
    free(s->rows), free(s->skipped_outputs);
    *s = (inf__quant_sensitivity){0};
}

inf_status inf__tools_quantize_sensitivity(const inf__quantize_options *o, bool use_min_sqnr, double min_sqnr_db,
                                           inf__quantize_report *r, inf__quant_sensitivity *sens, inf_error *err) {
    memset(sens, 0, sizeof *sens);
    memset(r, 0, sizeof *r);
    if (!o->calibration)
        return inf_error_set(err, INF_EINVAL,
                             "--sensitivity and --min-sqnr need --calibration SRC: the records on which each "
                             "quantized node's outputs are compared with the FP32 model's");
    sens_ctx s = {.o = o};
    inf__quant_ranges ranges = {0};
    inf__quant_select all = {.ranges = &ranges};
    inf__quant_node *nodes = NULL;
    int n_nodes = 0;
    inf_model_edit *full = NULL, *reduced = NULL;
    inf_status st = open_reference(&s, sens, err);
    if (st == INF_OK)
        st = inf__tools_quantize_edit(o, &all, r, &full, &nodes, &n_nodes, err);
    if (st == INF_OK)
        st = measure_nodes(&s, &ranges, nodes, n_nodes, sens, err);
    if (st == INF_OK)
        st = measure(&s, full, &sens->all, &sens->records, err);
    if (st == INF_OK && use_min_sqnr)
        st = apply_min_sqnr(&s, &ranges, min_sqnr_db, sens, r, &reduced, err);
    sens->out = sens->all;
    if (st == INF_OK && reduced)
        st = measure(&s, reduced, &sens->out, NULL, err);
    if (st == INF_OK)
        st = inf__tools_quantize_save(o, reduced ? reduced : full, r, err);
    inf_model_edit_free(full);
    inf_model_edit_free(reduced);
    inf__quant_nodes_free(nodes, n_nodes);
    inf__quant_ranges_free(&ranges);
    inf_session_free(s.ref);
    inf_model_free(s.ref_model);
    free(s.compared), free(s.q_index);
    return st;
}
