/*
 * quantize.c -- `infera quantize`: rewrites an FP32 ONNX model into a
 * standard ONNX INT8 model, in QDQ or QOperator form (quantize.h has the
 * conventions).
 *
 * DESIGN: the model is edited in place through the ONNX editor
 * (include/infera/model_write.h, the one prune and distill use); node indices
 * move as nodes are inserted, so every step works on names or walks the
 * node list from the end.  The steps:
 *   1. candidates: ai.onnx Gemm (transA 0; alpha and beta folded into copies of
 *      B and C), MatMul and Conv whose weight
 *      (input 1) is a float32 initializer -- the attention projections and
 *      the FFN of an encoder, the layers of an MLP and a CNN; with
 *      --quantize-attention (static mode) also a MatMul of two activations
 *      (attention's Q x K^T and P x V, as ONNX Runtime's quantize_static
 *      does), both inputs quantized per tensor -- off by default: on the
 *      bench encoder P in 8 bits costs 1.7 points of top-1 agreement and the
 *      INT8 attention is no faster than the FP32 one (bench/quant/RESULTS.md);
 *      dynamic mode leaves them FP32; not the nodes named by --exclude.
 *   2. static mode: the activations to quantize -- each candidate's input
 *      (both of an activation MatMul),
 *      and a Conv's output (or the output of the Relu that is its only
 *      reader) unless that is a graph output -- are calibrated
 *      (quantize_calib.c).  A MatMul's / Gemm's output is quantized only as
 *      the input of the next quantized node: ONNX Runtime runs DQ -> MatMul
 *      without a Q after it as an integer product with a float result, and
 *      Infera fuses either form (graph/passes/qdq.c).
 *   3. rewrite:
 *      QDQ         x -> QuantizeLinear -> DequantizeLinear -> every reader of x,
 *                  once per activation; weights int8 initializers behind a
 *                  DequantizeLinear (per tensor or per output channel);
 *                  biases int32 (scale x_scale * w_scale) behind one.
 *      QOperator   static: QuantizeLinear -> QLinearMatMul / QLinearConv ->
 *                  DequantizeLinear (a Gemm's bias added after, in float;
 *                  an activation MatMul's second input quantized likewise);
 *                  dynamic (either format): DynamicQuantizeLinear ->
 *                  MatMulInteger / ConvInteger -> Cast -> Mul by
 *                  x_scale * w_scale (-> Add bias).
 *   4. FP32 weights no node reads any more are dropped; the file is written.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "infera/model_write.h"
#include "tools/quantize.h"

/* KIND_ACT_MATMUL: a MatMul of two activations (attention's Q x K^T and P x V), static mode only */
enum { KIND_MATMUL, KIND_GEMM, KIND_CONV, KIND_ACT_MATMUL };

typedef struct candidate {
    char *name;        /* node name (unique key: indices move) */
    int kind;
    bool trans_b;
    char *x, *w, *b;   /* input names (b NULL when absent; w an activation for KIND_ACT_MATMUL) */
    char *y;           /* output */
    char *y_act;       /* the tensor whose range is the output's: y, or its Relu's output */
} candidate;

typedef struct act_param {
    char *name;
    float scale;
    uint8_t zp;
    bool done;         /* QDQ: its Q/DQ pair is in place */
} act_param;

typedef struct qctx {
    const inf__quantize_options *o;
    const inf__quant_select *sel; /* NULL: --exclude alone chooses */
    inf_model_edit *ed;
    inf_error *err;
    candidate *cand;
    int n_cand;
    act_param *act;
    int n_act;
    int uniq;          /* counter for unique new node names */
    char skipped[128]; /* the first Gemm kept in FP32 for its transA (named in the error message) */
} qctx;

/* ---- small helpers ---- */

static char *cat(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    char *s = malloc(na + nb + 1);
    if (s) memcpy(s, a, na), memcpy(s + na, b, nb + 1);
    return s;
}

static inf_status nomem(qctx *q) { return inf_error_set(q->err, INF_ENOMEM, "quantize: out of memory"); }

/* The node of candidate c, found by its output (node names may be empty or repeated). */
static int find_node(const qctx *q, const candidate *c) {
    inf_model_edit_node_view v;
    for (int i = 0, n = inf_model_edit_n_nodes(q->ed); i < n; i++) {
        inf_model_edit_view_node(q->ed, i, &v);
        if (v.n_outputs > 0 && !strcmp(v.outputs[0], c->y)) return i;
    }
    return -1;
}

/* The node writing tensor t, or -1 (a graph input or initializer). */
static int producer_of(const qctx *q, const char *t) {
    inf_model_edit_node_view v;
    for (int i = 0, n = inf_model_edit_n_nodes(q->ed); i < n; i++) {
        inf_model_edit_view_node(q->ed, i, &v);
        for (int k = 0; k < v.n_outputs; k++)
            if (!strcmp(v.outputs[k], t)) return i;
    }
    return -1;
}

/* The only node reading t (-1 when none or several, or t is a graph output). */
static int sole_reader(const qctx *q, const char *t) {
    inf_model_edit_node_view v;
    int found = -1;
    if (inf_model_edit_is_output(q->ed, t)) return -1;
    for (int i = 0, n = inf_model_edit_n_nodes(q->ed); i < n; i++) {
        inf_model_edit_view_node(q->ed, i, &v);
        for (int k = 0; k < v.n_inputs; k++)
            if (!strcmp(v.inputs[k], t)) {
                if (found >= 0 && found != i) return -1;
                found = i;
            }
    }
    return found;
}

static inf_status add_tensor(qctx *q, const char *name, inf_dtype dt, int ndim, const int64_t *dims,
                             const void *data) {
    inf_tensor *t;
    if (inf_tensor_new(dt, ndim, dims, &t) != INF_OK) return nomem(q);
    memcpy(t->data, data, inf_tensor_nbytes(t));
    inf_status st = inf_model_edit_set_initializer(q->ed, name, t, q->err);
    inf_tensor_free(t);
    return st;
}

static inf_status add_scalar_f32(qctx *q, const char *name, float v) {
    return add_tensor(q, name, INF_DTYPE_F32, 0, NULL, &v);
}

static inf_status add_scalar_u8(qctx *q, const char *name, uint8_t v) {
    return add_tensor(q, name, INF_DTYPE_U8, 0, NULL, &v);
}

/* The names of a quantized tensor: <base>_quantized, <base>_scale and
 * <base>_zero_point, base = <t><infix> ("": t's own; "_matmul": a Gemm's
 * product before its bias; "_x": a dynamic node's input). */
typedef struct qnames {
    char *q, *s, *z;
} qnames;

static inf_status qnames_of(qctx *q, const char *t, const char *infix, qnames *n) {
    char *base = cat(t, infix);
    *n = base ? (qnames){cat(base, "_quantized"), cat(base, "_scale"), cat(base, "_zero_point")} : (qnames){0};
    free(base);
    return n->q && n->s && n->z ? INF_OK : nomem(q);
}

static void qnames_free(qnames *n) {
    free(n->q), free(n->s), free(n->z);
    *n = (qnames){0};
}

/* n's scale and zero point as scalar initializers. */
static inf_status add_qparams(qctx *q, const qnames *n, float scale, uint8_t zp) {
    inf_status st = add_scalar_f32(q, n->s, scale);
    return st == INF_OK ? add_scalar_u8(q, n->z, zp) : st;
}

/* A new node before index `before`, named "<base>_<op>_<n>". */
static inf_status insert(qctx *q, int before, const char *op, const char *base, int n_in, const char *const *in,
                         int n_out, const char *const *out, int n_attrs, const inf_model_edit_attr *attrs) {
    char name[512];
    snprintf(name, sizeof name, "%s_%s_%d", base, op, q->uniq++);
    return inf_model_edit_insert_node(q->ed, before, op, "", name, n_in, in, n_out, out, n_attrs, attrs, q->err);
}

/* ---- activation parameters (ONNX Runtime's uint8 asymmetric rule) ---- */

static void act_params_from_range(float lo, float hi, float *scale, uint8_t *zp) {
    lo = lo < 0 ? lo : 0, hi = hi > 0 ? hi : 0;
    float s = (hi - lo) / 255.0f;
    if (!(s > 0) || !isfinite(s)) {
        *scale = 1.0f, *zp = 0;
        return;
    }
    float z = nearbyintf(-lo / s);
    *scale = s;
    *zp = (uint8_t)(z < 0 ? 0 : z > 255 ? 255 : z);
}

static act_param *find_act(qctx *q, const char *name) {
    for (int i = 0; i < q->n_act; i++)
        if (!strcmp(q->act[i].name, name)) return &q->act[i];
    return NULL;
}

static inf_status want_act(qctx *q, const char *name) {
    if (!name || find_act(q, name)) return INF_OK;
    act_param *a = realloc(q->act, (size_t)(q->n_act + 1) * sizeof *a);
    if (!a) return nomem(q);
    q->act = a;
    memset(&a[q->n_act], 0, sizeof *a);
    if (!(a[q->n_act].name = strdup(name))) return nomem(q);
    q->n_act++;
    return INF_OK;
}

/* ---- step 1: candidates ---- */

/* Is node v kept FP32: named by --exclude, or left out by the selection (by its first output)? */
static bool excluded(const qctx *q, const inf_model_edit_node_view *v) {
    for (int i = 0; i < q->o->n_exclude; i++)
        if (!strcmp(q->o->exclude[i], v->name))
            return true;
    const inf__quant_select *s = q->sel;
    if (!s || v->n_outputs < 1)
        return false;
    if (s->only && strcmp(s->only, v->outputs[0]))
        return true;
    for (int i = 0; i < s->n_skip; i++)
        if (!strcmp(s->skip[i], v->outputs[0]))
            return true;
    return false;
}

/* Is node i (a Gemm, MatMul or Conv) one we quantize?  Sets the kind. */
static bool quantizable(qctx *q, int i, const inf_model_edit_node_view *v, int *kind) {
    static const char *const types[] = {"MatMul", "Gemm", "Conv"};
    *kind = -1;
    if (*v->domain && strcmp(v->domain, "ai.onnx")) return false;
    for (int k = 0; k < 3; k++)
        if (!strcmp(v->op_type, types[k])) *kind = k;
    if (*kind < 0 || v->n_inputs < 2 || v->n_outputs < 1 || !inf_model_edit_is_constant(q->ed, v->inputs[1]))
        return false;
    if (*kind == KIND_GEMM && inf_model_edit_node_attr_int(q->ed, i, "transA", 0)) {
        if (!q->skipped[0]) snprintf(q->skipped, sizeof q->skipped, "%s", *v->name ? v->name : v->outputs[0]);
        return false;
    }
    if (*kind == KIND_GEMM && v->n_inputs > 2 && *v->inputs[2] && !inf_model_edit_is_constant(q->ed, v->inputs[2]))
        return false;
    if (*kind == KIND_CONV && v->n_inputs > 2 && *v->inputs[2] && !inf_model_edit_is_constant(q->ed, v->inputs[2]))
        return false;
    return true;
}

/* A copy of constant `name` times f, stored as initializer `as`. */
static inf_status scaled_copy(qctx *q, const char *name, double f, const char *as) {
    inf_tensor *t;
    inf_status st = inf_model_edit_get_initializer(q->ed, name, &t, q->err);
    if (st != INF_OK) return st;
    if (t->dtype != INF_DTYPE_F32) {
        inf_tensor_free(t);
        return inf_error_set(q->err, INF_EINVAL, "quantize: Gemm operand '%s' is not float32", name);
    }
    for (int64_t j = 0; j < inf_tensor_numel(t); j++)
        ((float *)t->data)[j] = (float)(((float *)t->data)[j] * f);
    st = inf_model_edit_set_initializer(q->ed, as, t, q->err);
    inf_tensor_free(t);
    return st;
}

/* Gemm node i with alpha != 1 or beta != 1 (constant B and C) becomes the plain
 * Gemm the rewrites expect: alpha folded into a copy of B, beta into a copy of C
 * (C dropped when beta is 0), only transB kept. */
static inf_status fold_gemm_scales(qctx *q, int i, const inf_model_edit_node_view *v) {
    double alpha = inf_model_edit_node_attr_float(q->ed, i, "alpha", 1),
           beta = inf_model_edit_node_attr_float(q->ed, i, "beta", 1);
    bool has_c = v->n_inputs > 2 && *v->inputs[2];
    if (alpha == 1 && (beta == 1 || !has_c)) return INF_OK;
    char *wn = cat(v->outputs[0], "_B_alpha"), *cn = cat(v->outputs[0], "_C_beta");
    inf_status st = wn && cn ? INF_OK : nomem(q);
    char *x = strdup(v->inputs[0]), *old_w = strdup(v->inputs[1]), *old_c = has_c ? strdup(v->inputs[2]) : NULL,
         *y = strdup(v->outputs[0]);
    if (st == INF_OK && (!x || !old_w || !y || (has_c && !old_c))) st = nomem(q);
    const char *ins[3] = {x, alpha != 1 ? wn : old_w, has_c && beta != 1 ? cn : has_c ? old_c : ""};
    if (st == INF_OK && alpha != 1) st = scaled_copy(q, old_w, alpha, wn);
    if (st == INF_OK && has_c && beta != 0 && beta != 1) st = scaled_copy(q, old_c, beta, cn);
    inf_model_edit_attr tb = {.name = "transB", .i = inf_model_edit_node_attr_int(q->ed, i, "transB", 0)};
    if (st == INF_OK)
        st = inf_model_edit_retype_node(q->ed, i, "Gemm", has_c && beta != 0 ? 3 : 2, ins, 1, (const char *const *)&y,
                                        0, 1, &tb, q->err);
    if (st == INF_OK) inf_model_edit_drop_unused_initializer(q->ed, old_w);
    if (st == INF_OK && old_c) inf_model_edit_drop_unused_initializer(q->ed, old_c);
    free(wn), free(cn), free(x), free(old_w), free(old_c), free(y);
    return st;
}

/* Is node i a MatMul of two activations (no constant input), quantized in static mode? */
static bool act_matmul(const qctx *q, const inf_model_edit_node_view *v) {
    return q->o->static_mode && q->o->quantize_attention && (!*v->domain || !strcmp(v->domain, "ai.onnx")) &&
           !strcmp(v->op_type, "MatMul") && v->n_inputs == 2 && v->n_outputs == 1 && *v->inputs[0] && *v->inputs[1] &&
           !inf_model_edit_is_constant(q->ed, v->inputs[0]) && !inf_model_edit_is_constant(q->ed, v->inputs[1]);
}

static candidate *new_candidate(qctx *q, int kind, const inf_model_edit_node_view *v) {
    candidate *c = realloc(q->cand, (size_t)(q->n_cand + 1) * sizeof *c);
    if (!c)
        return NULL;
    q->cand = c;
    c = &c[q->n_cand++];
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->name = strdup(v->name), c->x = strdup(v->inputs[0]), c->w = strdup(v->inputs[1]), c->y = strdup(v->outputs[0]);
    return c->name && c->x && c->w && c->y ? c : NULL;
}

static inf_status collect_act_matmul(qctx *q, const inf_model_edit_node_view *v, inf__quantize_report *r) {
    r->n_act_candidates++;
    if (excluded(q, v)) {
        r->n_act_excluded++;
        return INF_OK;
    }
    candidate *c = new_candidate(q, KIND_ACT_MATMUL, v);
    if (!c || !(c->y_act = strdup(c->y)))
        return nomem(q);
    r->n_act_quantized++;
    return INF_OK;
}

static inf_status collect(qctx *q, inf__quantize_report *r) {
    inf_model_edit_node_view v;
    for (int i = 0, n = inf_model_edit_n_nodes(q->ed); i < n; i++) {
        int kind;
        inf_model_edit_view_node(q->ed, i, &v);
        if (act_matmul(q, &v)) {
            inf_status ast = collect_act_matmul(q, &v, r);
            if (ast != INF_OK)
                return ast;
            continue;
        }
        if (!quantizable(q, i, &v, &kind)) continue;
        if (kind == KIND_GEMM && !excluded(q, &v)) {
            inf_status fst = fold_gemm_scales(q, i, &v);
            if (fst != INF_OK) return fst;
            inf_model_edit_view_node(q->ed, i, &v);
        }
        r->n_candidates++;
        if (excluded(q, &v)) {
            r->n_excluded++;
            continue;
        }
        inf_tensor *w;
        inf_status st = inf_model_edit_get_initializer(q->ed, v.inputs[1], &w, q->err);
        if (st != INF_OK) return st;
        bool ok = w->dtype == INF_DTYPE_F32 && (kind == KIND_CONV ? w->ndim >= 3 : w->ndim == 2);
        inf_tensor_free(w);
        if (!ok) continue;
        candidate *c = new_candidate(q, kind, &v);
        if (!c)
            return nomem(q);
        c->trans_b = kind == KIND_GEMM && inf_model_edit_node_attr_int(q->ed, i, "transB", 0);
        c->b = v.n_inputs > 2 && *v.inputs[2] ? strdup(v.inputs[2]) : NULL;
        int relu = sole_reader(q, c->y);
        inf_model_edit_node_view rv;
        if (relu >= 0) inf_model_edit_view_node(q->ed, relu, &rv);
        c->y_act = strdup(relu >= 0 && !strcmp(rv.op_type, "Relu") && !q->o->qoperator ? rv.outputs[0] : c->y);
        if (!c->y_act || (v.n_inputs > 2 && *v.inputs[2] && !c->b))
            return nomem(q);
    }
    return INF_OK;
}

/* ---- step 2: calibration ---- */

void inf__quant_ranges_free(inf__quant_ranges *r) {
    for (int i = 0; i < r->n; i++)
        free(r->names[i]);
    free(r->names), free(r->lo), free(r->hi);
    *r = (inf__quant_ranges){0};
}

/* The ranges of names[0, n) from known: false unless it has every one. */
static bool ranges_lookup(const inf__quant_ranges *known, const char *const *names, int n, float *lo, float *hi) {
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < known->n && strcmp(known->names[k], names[i]))
            k++;
        if (k == known->n)
            return false;
        lo[i] = known->lo[k], hi[i] = known->hi[k];
    }
    return true;
}

/* known becomes the ranges just measured. */
static inf_status ranges_store(qctx *q, inf__quant_ranges *known, const char *const *names, int n, const float *lo,
                               const float *hi, const inf__quantize_report *r) {
    inf__quant_ranges_free(known);
    known->names = calloc((size_t)n + 1, sizeof *known->names);
    known->lo = malloc(((size_t)n + 1) * sizeof *known->lo), known->hi = malloc(((size_t)n + 1) * sizeof *known->hi);
    if (!known->names || !known->lo || !known->hi) {
        inf__quant_ranges_free(known);
        return nomem(q);
    }
    for (; known->n < n; known->n++) {
        int i = known->n;
        if (!(known->names[i] = strdup(names[i]))) {
            inf__quant_ranges_free(known);
            return nomem(q);
        }
        known->lo[i] = lo[i], known->hi[i] = hi[i];
    }
    known->rows = r->calibration_rows, known->nonfinite = r->calibration_nonfinite;
    return INF_OK;
}

static inf_status calibrate(qctx *q, inf__quantize_report *r) {
    for (int i = 0; i < q->n_cand; i++) {
        inf_status st = want_act(q, q->cand[i].x);
        if (st == INF_OK && q->cand[i].kind == KIND_ACT_MATMUL)
            st = want_act(q, q->cand[i].w);
        /* outputs: QLinear* needs every range; in QDQ a Conv's output is quantized
         * (ONNX Runtime runs DQ -> Conv -> Q as QLinearConv), a MatMul's / Gemm's only
         * when it feeds another quantized node (its input, above) */
        bool out = q->o->qoperator || (q->cand[i].kind == KIND_CONV && !inf_model_edit_is_output(q->ed, q->cand[i].y_act));
        if (st == INF_OK && out) st = want_act(q, q->cand[i].y_act);
        if (st != INF_OK) return st;
    }
    const char **names = malloc((size_t)q->n_act * sizeof *names);
    float *lo = malloc((size_t)q->n_act * sizeof *lo), *hi = malloc((size_t)q->n_act * sizeof *hi);
    if (!names || !lo || !hi) {
        free(names), free(lo), free(hi);
        return nomem(q);
    }
    for (int i = 0; i < q->n_act; i++) names[i] = q->act[i].name;
    inf__quant_ranges *known = q->sel ? q->sel->ranges : NULL;
    inf_status st = INF_OK;
    if (known && ranges_lookup(known, names, q->n_act, lo, hi)) {
        r->calibration_rows = known->rows, r->calibration_nonfinite = known->nonfinite;
    } else {
        st = inf__tools_calibrate(q->o, names, q->n_act, lo, hi, &r->calibration_rows, &r->calibration_nonfinite,
                                  q->err);
        if (st == INF_OK && known)
            st = ranges_store(q, known, names, q->n_act, lo, hi, r);
    }
    for (int i = 0; st == INF_OK && i < q->n_act; i++) act_params_from_range(lo[i], hi[i], &q->act[i].scale, &q->act[i].zp);
    r->n_calibrated_tensors = q->n_act;
    free(names), free(lo), free(hi);
    return st;
}

/* ---- weights ---- */

typedef struct qweight {
    inf_tensor *q;      /* int8 (or uint8 for ConvInteger) values, layout of the FP32 weight, or [K, N] */
    float *scale;       /* n_scale: 1 (per tensor) or one per output channel */
    int n_scale;
    int axis;           /* the output-channel axis of q */
} qweight;

static void qweight_free(qweight *w) {
    inf_tensor_free(w->q);
    free(w->scale);
}

/* Quantizes W symmetrically: int8 in [-127, 127] ([-64, 64] with
 * reduce_range), or uint8 = int8 + 128 (as_u8, for ConvInteger); per output
 * channel when per_channel.  Gemm's
 * transB weight is stored transposed to [K, N] when to_kn. */
static inf_status quantize_weight(qctx *q, const candidate *c, bool per_channel, bool as_u8, bool to_kn,
                                  qweight *out) {
    memset(out, 0, sizeof *out);
    inf_tensor *w;
    inf_status st = inf_model_edit_get_initializer(q->ed, c->w, &w, q->err);
    if (st != INF_OK) return st;
    bool transposed = c->trans_b && to_kn;
    int64_t rows = w->dims[0], cols = inf_tensor_numel(w) / (rows ? rows : 1);
    /* channel axis in the FP32 layout: Conv / transB Gemm rows (0), MatMul / Gemm columns (1) */
    int axis = c->kind == KIND_CONV || c->trans_b ? 0 : 1;
    int64_t n_ch = axis == 0 ? rows : cols;
    out->n_scale = per_channel ? (int)n_ch : 1;
    out->axis = transposed ? 1 : axis;
    out->scale = calloc((size_t)out->n_scale, sizeof(float));
    int64_t qdims[INF_MAX_DIMS];
    memcpy(qdims, w->dims, sizeof qdims);
    if (transposed) qdims[0] = w->dims[1], qdims[1] = w->dims[0];
    if (!out->scale || inf_tensor_new(as_u8 ? INF_DTYPE_U8 : INF_DTYPE_I8, w->ndim, qdims, &out->q) != INF_OK) {
        inf_tensor_free(w);
        qweight_free(out);
        return nomem(q);
    }
    const float *x = w->data;
    float *amax = calloc((size_t)out->n_scale, sizeof(float));
    if (!amax) {
        inf_tensor_free(w);
        qweight_free(out);
        return nomem(q);
    }
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < cols; k++) {
            int ch = per_channel ? (int)(axis == 0 ? r : k) : 0;
            float a = fabsf(x[r * cols + k]);
            if (a > amax[ch]) amax[ch] = a;
        }
    /* 7-bit weights: 255 * 64 * 2 fits vpmaddubsw's int16 pair sum, so ONNX Runtime's AVX2 kernels do not saturate */
    const float qmax = q->o->reduce_range ? 64.0f : 127.0f;
    for (int ch = 0; ch < out->n_scale; ch++) out->scale[ch] = amax[ch] > 0 ? amax[ch] / qmax : 1.0f;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < cols; k++) {
            int ch = per_channel ? (int)(axis == 0 ? r : k) : 0;
            float v = nearbyintf(x[r * cols + k] / out->scale[ch]);
            int iv = (int)(v < -qmax ? -qmax : v > qmax ? qmax : v);
            int64_t at = transposed ? k * rows + r : r * cols + k;
            if (as_u8) ((uint8_t *)out->q->data)[at] = (uint8_t)(iv + 128);
            else ((int8_t *)out->q->data)[at] = (int8_t)iv;
        }
    free(amax);
    inf_tensor_free(w);
    return INF_OK;
}

/* Writes the weight's initializers <w>_quantized, <w>_scale (unless
 * !with_scale: the caller writes its own) and <w>_zero_point (unless
 * !with_zp: MatMulInteger's symmetric int8 weights need none; one value for
 * a uint8 ConvInteger weight, which ONNX Runtime takes per tensor only). */
static inf_status write_weight(qctx *q, const candidate *c, const qweight *qw, bool as_u8, bool with_scale,
                               bool with_zp, qnames *wn) {
    inf_status st = qnames_of(q, c->w, "", wn);
    if (st != INF_OK)
        return st;
    st = inf_model_edit_set_initializer(q->ed, wn->q, qw->q, q->err);
    int64_t ns = qw->n_scale, n = as_u8 ? 1 : qw->n_scale;
    if (st == INF_OK && with_scale)
        st = add_tensor(q, wn->s, INF_DTYPE_F32, ns > 1, &ns, qw->scale);
    if (st != INF_OK || !with_zp) return st;
    uint8_t *zeros = calloc((size_t)n, 1);
    if (!zeros) return nomem(q);
    if (as_u8) zeros[0] = 128;
    st = add_tensor(q, wn->z, as_u8 ? INF_DTYPE_U8 : INF_DTYPE_I8, n > 1, &n, zeros);
    free(zeros);
    return st;
}

/* The name of c's int32 bias (suffix "_quantized", "_scale", "_dequantized"): <b><suffix>, or <b>_<y><suffix>
 * when another node's quantization took <b>_quantized already -- a bias two nodes read (tied layers, or
 * initializers of equal contents that an exporter wrote once) is scaled by each node's own input scale. */
static char *bias_name(qctx *q, const candidate *c, const char *suffix) {
    char *taken_name = cat(c->b, "_quantized");
    bool taken = taken_name && inf_model_edit_has_initializer(q->ed, taken_name);
    free(taken_name);
    if (!taken) return cat(c->b, suffix);
    char *base = cat(c->b, "_"), *with_y = base ? cat(base, c->y) : NULL, *name = with_y ? cat(with_y, suffix) : NULL;
    free(base), free(with_y);
    return name;
}

/* The FP32 bias as int32 with scale x_scale * w_scale[j] (QDQ, QLinearConv). */
static inf_status write_bias_i32(qctx *q, const candidate *c, float x_scale, const qweight *qw, char **bq,
                                 char **bs, int64_t *n_out) {
    inf_tensor *b;
    inf_status st = inf_model_edit_get_initializer(q->ed, c->b, &b, q->err);
    if (st != INF_OK) return st;
    int64_t n = inf_tensor_numel(b);
    *n_out = n;
    int32_t *v = malloc((size_t)n * sizeof *v + 1);
    float *s = malloc((size_t)n * sizeof *s + 1);
    *bq = bias_name(q, c, "_quantized"), *bs = bias_name(q, c, "_scale");
    if (!v || !s || !*bq || !*bs || b->dtype != INF_DTYPE_F32 || (qw->n_scale > 1 && qw->n_scale != n)) {
        st = b->dtype != INF_DTYPE_F32 || (qw->n_scale > 1 && qw->n_scale != n)
                 ? inf_error_set(q->err, INF_EMODEL, "node '%s': bias '%s' is not float32 [%d]", c->name, c->b, qw->n_scale)
                 : nomem(q);
    } else {
        for (int64_t j = 0; j < n; j++) {
            s[j] = x_scale * qw->scale[qw->n_scale > 1 ? j : 0];
            double r = nearbyint((double)((const float *)b->data)[j] / s[j]);
            v[j] = (int32_t)(r < -2147483647.0 ? -2147483647.0 : r > 2147483647.0 ? 2147483647.0 : r);
        }
        st = add_tensor(q, *bq, INF_DTYPE_I32, 1, &n, v);
        if (st == INF_OK) st = add_tensor(q, *bs, INF_DTYPE_F32, 1, &n, s);
    }
    inf_tensor_free(b);
    free(v), free(s);
    return st;
}

/* ---- step 3a: QDQ ---- */

/* Does node v, a candidate, read t as its activation input k (0, or 1 of an activation MatMul)? */
static bool candidate_reads(const qctx *q, const inf_model_edit_node_view *v, int k, const char *t) {
    for (int c = 0; c < q->n_cand; c++)
        if (v->n_outputs > 0 && !strcmp(q->cand[c].y, v->outputs[0]))
            return (k == 0 || (k == 1 && q->cand[c].kind == KIND_ACT_MATMUL)) && v->n_inputs > k &&
                   !strcmp(v->inputs[k], t);
    return false;
}

static bool is_conv_output(const qctx *q, const char *t) {
    for (int c = 0; c < q->n_cand; c++)
        if (q->cand[c].kind == KIND_CONV && !strcmp(q->cand[c].y_act, t)) return true;
    return false;
}

/* Activation a's scale and zero point (names n) and a QuantizeLinear of a
 * into n->q right after a's producer, at node index *pos. */
static inf_status insert_quantize(qctx *q, const act_param *a, const qnames *n, int *pos) {
    inf_status st = add_qparams(q, n, a->scale, a->zp);
    *pos = producer_of(q, a->name) + 1;
    const char *qin[3] = {a->name, n->s, n->z};
    return st == INF_OK ? insert(q, *pos, "QuantizeLinear", a->name, 3, qin, 1, (const char *const *)&n->q, 0, NULL)
                        : st;
}

/* Q -> DQ on activation t right after its producer.  The quantized nodes
 * reading t read the dequantized copy; other readers (a residual Add, a
 * LayerNorm) keep the FP32 value, except after a Conv, whose Q -> DQ every
 * reader takes (so ONNX Runtime sees DQ -> Conv -> Q and runs QLinearConv). */
static inf_status qdq_activation(qctx *q, act_param *a) {
    qnames n;
    char *dn = cat(a->name, "_dequantized");
    inf_status st = qnames_of(q, a->name, "", &n);
    if (st == INF_OK && !dn)
        st = nomem(q);
    int at = 0;
    if (st == INF_OK)
        st = insert_quantize(q, a, &n, &at);
    const char *din[3] = {n.q, n.s, n.z};
    if (st == INF_OK) st = insert(q, at + 1, "DequantizeLinear", a->name, 3, din, 1, (const char *const *)&dn, 0, NULL);
    inf_model_edit_node_view v;
    bool conv_out = is_conv_output(q, a->name);
    for (int i = at + 2, n = inf_model_edit_n_nodes(q->ed); st == INF_OK && i < n; i++) {
        inf_model_edit_view_node(q->ed, i, &v);
        for (int k = 0; k < v.n_inputs && st == INF_OK; k++)
            if (!strcmp(v.inputs[k], a->name) && (conv_out || candidate_reads(q, &v, k, a->name)))
                st = inf_model_edit_node_set_input(q->ed, i, k, dn, q->err);
    }
    a->done = true;
    qnames_free(&n);
    free(dn);
    return st;
}

/* Is the bias one value per output channel (a Gemm's C may also be [M, N]:
 * that one stays FP32)? */
static bool bias_is_per_channel(qctx *q, const candidate *c) {
    inf_tensor *b = NULL, *w = NULL;
    inf_error ignored;
    bool ok = inf_model_edit_get_initializer(q->ed, c->b, &b, &ignored) == INF_OK &&
              inf_model_edit_get_initializer(q->ed, c->w, &w, &ignored) == INF_OK && b && w &&
              inf_tensor_numel(b) == w->dims[c->kind == KIND_CONV || c->trans_b ? 0 : 1];
    inf_tensor_free(b);
    inf_tensor_free(w);
    return ok;
}

static inf_status qdq_node(qctx *q, const candidate *c) {
    qweight qw;
    qnames wn = {0};
    char *wd = cat(c->w, "_dequantized"), *bq = NULL, *bs = NULL, *bd = NULL;
    inf_status st = wd ? quantize_weight(q, c, q->o->per_channel, false, false, &qw) : nomem(q);
    if (st != INF_OK) {
        free(wd);
        return st;
    }
    int at = find_node(q, c);
    inf_model_edit_attr axis = {.name = "axis", .i = qw.axis};
    bool shared = producer_of(q, wd) >= 0; /* a weight two nodes read (tied or shared layers): one int8 copy, one DQ */
    st = shared ? INF_OK : write_weight(q, c, &qw, false, true, true, &wn);
    const char *din[3] = {wn.q, wn.s, wn.z};
    if (st == INF_OK && !shared)
        st = insert(q, at++, "DequantizeLinear", c->w, 3, din, 1, (const char *const *)&wd, qw.n_scale > 1, &axis);
    if (st == INF_OK) st = inf_model_edit_node_set_input(q->ed, at, 1, wd, q->err);
    act_param *xa = find_act(q, c->x);
    if (st == INF_OK && c->b && xa && bias_is_per_channel(q, c)) {
        int64_t n;
        bd = bias_name(q, c, "_dequantized");
        st = bd ? write_bias_i32(q, c, xa->scale, &qw, &bq, &bs, &n) : nomem(q);
        inf_model_edit_attr bax = {.name = "axis", .i = 0};
        const char *bin[2] = {bq, bs};
        if (st == INF_OK) st = insert(q, at++, "DequantizeLinear", c->b, 2, bin, 1, (const char *const *)&bd, 1, &bax);
        if (st == INF_OK) st = inf_model_edit_node_set_input(q->ed, at, 2, bd, q->err);
        if (st == INF_OK) inf_model_edit_drop_unused_initializer(q->ed, c->b);
    }
    if (st == INF_OK) inf_model_edit_drop_unused_initializer(q->ed, c->w);
    qweight_free(&qw);
    qnames_free(&wn);
    free(wd), free(bq), free(bs), free(bd);
    return st;
}

static inf_status rewrite_qdq(qctx *q) {
    inf_status st = INF_OK;
    for (int i = 0; i < q->n_cand && st == INF_OK; i++)
        if (q->cand[i].kind != KIND_ACT_MATMUL)
            st = qdq_node(q, &q->cand[i]);
    for (int i = 0; i < q->n_act && st == INF_OK; i++) st = qdq_activation(q, &q->act[i]);
    return st;
}

/* ---- step 3b: QOperator (static) ---- */

/* QuantizeLinear of activation a before node index at (once per activation;
 * the quantized name is <a>_quantized). */
static inf_status quantize_input(qctx *q, act_param *a, int *at) {
    qnames n;
    inf_status st = qnames_of(q, a->name, "", &n);
    int pos;
    if (st == INF_OK && !a->done) {
        st = insert_quantize(q, a, &n, &pos);
        if (st == INF_OK) (*at)++;
        a->done = true;
    }
    qnames_free(&n);
    return st;
}

/* Node `at` becomes QLinearConv (keeping the Conv's attributes) or
 * QLinearMatMul reading x, w, y's parameters and bias (NULL: none) into
 * y->q; a DequantizeLinear of y->q to dq_out follows it. */
static inf_status qlinear_node(qctx *q, int at, bool conv, const char *base, const qnames *x, const qnames *w,
                               const qnames *y, const char *bias, const char *dq_out) {
    const char *ins[9] = {x->q, x->s, x->z, w->q, w->s, w->z, y->s, y->z, bias};
    const char *din[3] = {y->q, y->s, y->z};
    inf_status st = inf_model_edit_retype_node(q->ed, at, conv ? "QLinearConv" : "QLinearMatMul", bias ? 9 : 8, ins, 1,
                                               (const char *const *)&y->q, conv, 0, NULL, q->err);
    return st == INF_OK ? insert(q, at + 1, "DequantizeLinear", base, 3, din, 1, &dq_out, 0, NULL) : st;
}

static inf_status qoperator_static_node(qctx *q, const candidate *c) {
    act_param *xa = find_act(q, c->x), *ya = find_act(q, c->y_act);
    int at = find_node(q, c);
    inf_status st = quantize_input(q, xa, &at);
    if (st != INF_OK) return st;
    bool conv = c->kind == KIND_CONV, gemm_bias = c->kind == KIND_GEMM && c->b;
    qweight qw;
    if ((st = quantize_weight(q, c, q->o->per_channel, false, true, &qw)) != INF_OK) return st;
    /* The QLinear output is <y>_quantized, the name a later QuantizeLinear of y (the input of the
     * next quantized node) would write: when it holds y's own parameters, that node reads it
     * directly (no second writer); a Gemm's product before its bias is another tensor. */
    bool y_reusable = !gemm_bias && !strcmp(ya->name, c->y);
    qnames x = {0}, w = {0}, y = {0};
    char *bq = NULL, *bs = NULL, *mm = cat(c->y, "_matmul");
    st = mm ? qnames_of(q, c->x, "", &x) : nomem(q);
    if (st == INF_OK)
        st = qnames_of(q, c->y, y_reusable ? "" : "_matmul", &y);
    float y_scale = ya->scale;
    uint8_t y_zp = ya->zp;
    if (st == INF_OK && gemm_bias) { /* the range of the product before the bias */
        inf_tensor *b;
        if ((st = inf_model_edit_get_initializer(q->ed, c->b, &b, q->err)) == INF_OK) {
            float bmax = 0, lo = (0 - ya->zp) * ya->scale, hi = (255 - ya->zp) * ya->scale;
            for (int64_t j = 0; j < inf_tensor_numel(b); j++) bmax = fmaxf(bmax, fabsf(((const float *)b->data)[j]));
            act_params_from_range(lo - bmax, hi + bmax, &y_scale, &y_zp);
            inf_tensor_free(b);
        }
    }
    if (st == INF_OK)
        st = write_weight(q, c, &qw, false, true, true, &w);
    if (st == INF_OK)
        st = add_qparams(q, &y, y_scale, y_zp);
    int64_t nb = 0;
    if (st == INF_OK && conv && c->b) st = write_bias_i32(q, c, xa->scale, &qw, &bq, &bs, &nb);
    if (st == INF_OK)
        st = qlinear_node(q, at, conv, c->y, &x, &w, &y, bq, gemm_bias ? mm : c->y);
    if (st == INF_OK && gemm_bias) {
        const char *ain[2] = {mm, c->b};
        st = insert(q, at + 2, "Add", c->y, 2, ain, 1, (const char *const *)&c->y, 0, NULL);
    }
    if (st == INF_OK && y_reusable) ya->done = true; /* <y>_quantized exists: no QuantizeLinear of y */
    if (st == INF_OK) inf_model_edit_drop_unused_initializer(q->ed, c->w);
    if (st == INF_OK && c->b) inf_model_edit_drop_unused_initializer(q->ed, c->b);
    qweight_free(&qw);
    qnames_free(&x), qnames_free(&w), qnames_free(&y);
    free(bq), free(bs), free(mm);
    return st;
}

/* An activation MatMul: both inputs quantized (once each) -> QLinearMatMul
 * into <y>_quantized with y's own parameters -> DequantizeLinear to y. */
static inf_status qoperator_act_matmul(qctx *q, const candidate *c) {
    act_param *xa = find_act(q, c->x), *wa = find_act(q, c->w), *ya = find_act(q, c->y);
    int at = find_node(q, c);
    inf_status st = quantize_input(q, xa, &at);
    if (st == INF_OK)
        st = quantize_input(q, wa, &at);
    qnames x = {0}, w = {0}, y = {0};
    if (st == INF_OK)
        st = qnames_of(q, c->x, "", &x);
    if (st == INF_OK)
        st = qnames_of(q, c->w, "", &w);
    if (st == INF_OK)
        st = qnames_of(q, c->y, "", &y);
    if (st == INF_OK && !ya->done)
        st = add_qparams(q, &y, ya->scale, ya->zp);
    if (st == INF_OK)
        st = qlinear_node(q, at, false, c->y, &x, &w, &y, NULL, c->y);
    if (st == INF_OK)
        ya->done = true; /* <y>_quantized exists: no QuantizeLinear of y */
    qnames_free(&x), qnames_free(&w), qnames_free(&y);
    return st;
}

/* ---- step 3c: dynamic ---- */

static inf_status dynamic_node(qctx *q, const candidate *c) {
    bool conv = c->kind == KIND_CONV;
    qweight qw;
    inf_status st = quantize_weight(q, c, q->o->per_channel, conv, true, &qw);
    if (st != INF_OK) return st;
    int at = find_node(q, c);
    qnames xn = {0}, wn = {0};
    char *acc = cat(c->y, "_int32"), *accf = cat(c->y, "_int32_float"), *sc = cat(c->y, "_scale");
    char *mul = cat(c->y, "_unbiased"), *wsr = NULL, *br = NULL;
    st = qnames_of(q, c->y, "_x", &xn);
    if (st == INF_OK && (!acc || !accf || !sc || !mul))
        st = nomem(q);
    if (st == INF_OK)
        st = write_weight(q, c, &qw, conv, !(conv && qw.n_scale > 1), conv, &wn);
    int64_t m = qw.n_scale;
    if (st == INF_OK && conv && m > 1) { /* per-channel scale / bias broadcast over [N, M, spatial] */
        int64_t dims[4] = {1, m, 1, 1};
        int nd = (int)qw.q->ndim;
        wsr = cat(wn.s, "_per_channel");
        st = wsr ? add_tensor(q, wsr, INF_DTYPE_F32, nd, dims, qw.scale) : nomem(q);
    }
    if (st == INF_OK && conv && c->b) {
        inf_tensor *b;
        if ((st = inf_model_edit_get_initializer(q->ed, c->b, &b, q->err)) == INF_OK) {
            int64_t dims[INF_MAX_DIMS] = {1, inf_tensor_numel(b)};
            for (int d = 2; d < qw.q->ndim; d++) dims[d] = 1;
            br = cat(c->b, "_per_channel");
            st = br ? add_tensor(q, br, INF_DTYPE_F32, qw.q->ndim, dims, b->data) : nomem(q);
            inf_tensor_free(b);
        }
    }
    const char *x = c->x, *dql_out[3] = {xn.q, xn.s, xn.z};
    const char *wz_in = conv ? wn.z : "";
    const char *op_in[4] = {xn.q, wn.q, xn.z, wz_in};
    const char *cast_in[1] = {acc}, *smul_in[2] = {xn.s, wsr ? wsr : wn.s}, *mul_in[2] = {accf, sc};
    const char *add_in[2] = {mul, br ? br : c->b};
    inf_model_edit_attr to = {.name = "to", .i = INF_DTYPE_F32};
    /* the op keeps the node's name and place; helpers around it */
    if (st == INF_OK) st = insert(q, at++, "DynamicQuantizeLinear", c->y, 1, &x, 3, dql_out, 0, NULL);
    if (st == INF_OK)
        st = inf_model_edit_retype_node(q->ed, at, conv ? "ConvInteger" : "MatMulInteger", conv ? 4 : 3, op_in, 1,
                                        (const char *const *)&acc, conv, 0, NULL, q->err);
    if (st == INF_OK) st = insert(q, ++at, "Cast", c->y, 1, cast_in, 1, (const char *const *)&accf, 1, &to);
    if (st == INF_OK) st = insert(q, ++at, "Mul", c->y, 2, smul_in, 1, (const char *const *)&sc, 0, NULL);
    const char *mul_out = c->b ? mul : c->y;
    if (st == INF_OK) st = insert(q, ++at, "Mul", c->y, 2, mul_in, 1, &mul_out, 0, NULL);
    if (st == INF_OK && c->b) st = insert(q, ++at, "Add", c->y, 2, add_in, 1, (const char *const *)&c->y, 0, NULL);
    if (st == INF_OK) inf_model_edit_drop_unused_initializer(q->ed, c->w);
    if (st == INF_OK && c->b) inf_model_edit_drop_unused_initializer(q->ed, c->b);
    qweight_free(&qw);
    qnames_free(&xn), qnames_free(&wn);
    free(acc), free(accf), free(sc), free(mul), free(wsr), free(br);
    return st;
}

/* ---- the driver ---- */

static size_t file_size(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 ? (size_t)sb.st_size : 0;
}

/* The model's bytes on disk: its file and the external-data files it names (the size before quantization). */
static size_t model_bytes(const char *path) {
    size_t total = file_size(path);
    FILE *f = fopen(path, "rb");
    char *data = total ? malloc(total) : NULL;
    bool read_all = f && data && fread(data, 1, total, f) == total;
    if (f) fclose(f);
    char **files = NULL;
    int n = 0;
    inf_error ignored;
    if (read_all && inf_model_external_files(data, total, &files, &n, &ignored) == INF_OK) {
        const char *slash = strrchr(path, '/');
        int dir_len = slash ? (int)(slash - path) : 1;
        for (int i = 0; i < n; i++) {
            char p[4096];
            snprintf(p, sizeof p, "%.*s/%s", dir_len, slash ? path : ".", files[i]);
            total += file_size(p);
        }
        inf_model_external_files_free(files, n);
    }
    free(data);
    return total;
}

static inf_status check_opset(qctx *q) {
    int64_t v = inf_model_edit_opset(q->ed, "");
    int64_t need = q->o->per_channel ? 13 : q->o->static_mode ? 10 : 11;
    if (v < need)
        return inf_error_set(q->err, INF_EUNSUPPORTED,
                             "'%s' imports ai.onnx opset %lld; %s needs opset >= %lld (re-export the model at a newer opset)",
                             q->o->in_path, (long long)v,
                             q->o->per_channel ? "per-channel quantization" : q->o->static_mode ? "QuantizeLinear" : "DynamicQuantizeLinear",
                             (long long)need);
    return INF_OK;
}

/* The first quantization op of the model (a file already quantized), or NULL. */
static const char *quantized_op(const qctx *q) {
    static const char *const ops[] = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearMatMul",
                                      "QLinearConv",    "MatMulInteger",    "ConvInteger",           "QGemm"};
    for (int i = 0, n = inf_model_edit_n_nodes(q->ed); i < n; i++)
        for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
            if (!strcmp(inf_model_edit_node_op(q->ed, i), ops[k])) return ops[k];
    return NULL;
}

static void free_ctx(qctx *q) {
    for (int i = 0; i < q->n_cand; i++) {
        candidate *c = &q->cand[i];
        free(c->name), free(c->x), free(c->w), free(c->b), free(c->y), free(c->y_act);
    }
    for (int i = 0; i < q->n_act; i++) free(q->act[i].name);
    free(q->cand), free(q->act);
    inf_model_edit_free(q->ed);
}

void inf__quant_nodes_free(inf__quant_node *nodes, int n) {
    for (int i = 0; i < n; i++)
        free(nodes[i].name), free(nodes[i].op_type), free(nodes[i].output);
    free(nodes);
}

/* The candidates about to be quantized, for the caller. */
static inf_status list_nodes(qctx *q, inf__quant_node **out, int *n_out) {
    static const char *const ops[] = {
        [KIND_MATMUL] = "MatMul", [KIND_GEMM] = "Gemm", [KIND_CONV] = "Conv", [KIND_ACT_MATMUL] = "MatMul"};
    inf__quant_node *nodes = calloc((size_t)q->n_cand + 1, sizeof *nodes);
    if (!nodes)
        return nomem(q);
    for (int i = 0; i < q->n_cand; i++) {
        const candidate *c = &q->cand[i];
        nodes[i] = (inf__quant_node){strdup(c->name), strdup(ops[c->kind]), strdup(c->y)};
        if (!nodes[i].name || !nodes[i].op_type || !nodes[i].output) {
            inf__quant_nodes_free(nodes, i + 1);
            return nomem(q);
        }
    }
    *out = nodes, *n_out = q->n_cand;
    return INF_OK;
}

/* Steps 1-3 on an open model. */
static inf_status quantize_open(qctx *q, inf__quantize_report *r) {
    const inf__quantize_options *o = q->o;
    inf_status st;
    if ((st = check_opset(q)) != INF_OK || (st = collect(q, r)) != INF_OK)
        return st;
    int n_weighted = q->n_cand - r->n_act_quantized; /* activation MatMuls alone are not worth a file */
    const char *qop = n_weighted == 0 ? quantized_op(q) : NULL;
    if (n_weighted == 0 && qop)
        return inf_error_set(q->err, INF_EINVAL,
                             "'%s' is already quantized (it has %s nodes): nothing to quantize; quantize "
                             "its FP32 original instead",
                             o->in_path, qop);
    bool act_alone = q->sel && q->sel->only && q->n_cand > 0; /* the sensitivity analysis' attention MatMul */
    if (n_weighted == 0 && !act_alone)
        return r->n_candidates ? inf_error_set(q->err, INF_EINVAL, "'%s': every quantizable node (%d) is excluded",
                                               o->in_path, r->n_candidates)
                               : inf_error_set(q->err, INF_EINVAL,
                                               "'%s' has no MatMul, Gemm or Conv node with constant float32 "
                                               "weights%s%s%s: nothing to quantize",
                                               o->in_path, q->skipped[0] ? " (Gemm '" : "", q->skipped,
                                               q->skipped[0] ? "' has transA=1, which stays FP32)" : "");
    if (o->static_mode && (st = calibrate(q, r)) != INF_OK)
        return st;
    if (!o->static_mode) {
        for (int i = 0; i < q->n_cand && st == INF_OK; i++)
            st = dynamic_node(q, &q->cand[i]);
    } else if (o->qoperator) {
        for (int i = 0; i < q->n_cand && st == INF_OK; i++)
            st = q->cand[i].kind == KIND_ACT_MATMUL ? qoperator_act_matmul(q, &q->cand[i])
                                                    : qoperator_static_node(q, &q->cand[i]);
    } else {
        st = rewrite_qdq(q);
    }
    r->n_quantized = n_weighted;
    if (st == INF_OK)
        st = inf_model_edit_set_metadata(
            q->ed, "infera.quantization",
            o->static_mode ? (o->qoperator ? "static qoperator" : "static qdq") : "dynamic", q->err);
    return st;
}

inf_status inf__tools_quantize_edit(const inf__quantize_options *o, const inf__quant_select *sel,
                                    inf__quantize_report *r, inf_model_edit **out, inf__quant_node **nodes,
                                    int *n_nodes, inf_error *err) {
    memset(r, 0, sizeof *r);
    *out = NULL;
    if (nodes)
        *nodes = NULL, *n_nodes = 0;
    qctx q = {.o = o, .sel = sel, .err = err};
    if (o->static_mode && !o->calibration)
        return inf_error_set(err, INF_EINVAL, "static quantization needs --calibration SRC (records or a .npy file)");
    if (o->quantize_attention && !o->static_mode)
        return inf_error_set(err, INF_EINVAL,
                             "--quantize-attention needs static mode (--calibration SRC): dynamic mode leaves "
                             "attention's activation MatMuls FP32");
    inf_status st = inf_model_edit_open(o->in_path, &q.ed, err);
    if (st != INF_OK) return st;
    if (inf_model_edit_bypass_constant_identities(q.ed, err) < 0) { /* a weight reached through Identity is one */
        inf_model_edit_free(q.ed);
        return err ? err->status : INF_ENOMEM;
    }
    r->bytes_before = model_bytes(o->in_path);
    r->weight_bytes_before = inf_model_edit_weight_bytes(q.ed);
    st = quantize_open(&q, r);
    if (st == INF_OK && nodes)
        st = list_nodes(&q, nodes, n_nodes);
    if (st == INF_OK) {
        r->weight_bytes_after = inf_model_edit_weight_bytes(q.ed);
        *out = q.ed;
        q.ed = NULL;
    }
    free_ctx(&q);
    return st;
}

inf_status inf__tools_quantize_save(const inf__quantize_options *o, const inf_model_edit *ed, inf__quantize_report *r,
                                    inf_error *err) {
    inf_status st = inf_model_edit_save(ed, o->out_path, err);
    if (st == INF_OK)
        r->bytes_after = file_size(o->out_path);
    return st;
}

inf_status inf__tools_quantize(const inf__quantize_options *o, inf__quantize_report *r, inf_error *err) {
    inf_model_edit *ed;
    inf_status st = inf__tools_quantize_edit(o, NULL, r, &ed, NULL, NULL, err);
    if (st == INF_OK)
        st = inf__tools_quantize_save(o, ed, r, err);
    inf_model_edit_free(ed);
    return st;
}
