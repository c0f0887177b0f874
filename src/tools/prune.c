/*
 * prune.c -- `infera prune`: magnitude pruning of Gemm/MatMul/Conv weights.
 *
 * Unstructured: in every Gemm/MatMul/Conv weight (a constant of rank >= 2),
 * the fraction S of entries of smallest |w| becomes 0.  The file keeps its
 * size and dense kernels run it at the same speed (docs/compression.md says
 * where a sparse kernel would pay); it is the first step of a sparse
 * deployment.
 *
 * Structured: the hidden neurons between two dense layers are removed, so
 * the model really shrinks.  A "pair" is a producer P (Gemm, or MatMul with
 * an optional bias Add) whose output flows, through element-wise
 * activations only (Relu, Tanh, ...) and with no other reader, into the
 * first input of a consumer C (Gemm/MatMul) -- an MLP's hidden layer.  For
 * each pair, in graph order, the fraction S of the H neurons with the least
 * importance is removed: P loses those output columns (and bias entries), C
 * loses those input rows.  Importance is the neuron's incoming weight norm
 * times its outgoing weight norm; with calibration data, the RMS of its
 * activation on the data times its outgoing weight norm.  With calibration
 * data C is then refitted by least squares, [A_kept 1] W' = A W + b, where
 * A are C's inputs in the original model and A_kept the kept neurons' values
 * in the model pruned so far (run on the same records): the next layer
 * reproduces the original pre-activations as well as a linear map can.
 * Conv layers: the output channels of a Conv (group 1) that feeds another
 * Conv through activations and pooling only are removed the same way (the
 * next Conv loses those input channels); they are not refitted.  Graph
 * inputs, outputs and their shapes are untouched.
 *
 * Everything goes through include/infera/model_write.h (src/onnx sees the
 * protobuf); activations are read by running a copy of the model whose
 * extra graph outputs are C's inputs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infera/model.h"
#include "tools/tools.h"

#define NAME_MAX_LEN 256

typedef struct dense {
    int node, is_gemm, trans_b;
    double alpha, beta;
    char w[NAME_MAX_LEN];  /* weight initializer */
    char b[NAME_MAX_LEN];  /* bias initializer, "" = none */
    int bias_add;          /* MatMul: the Add node holding the bias, -1 = none */
    int in, out;           /* effective weight [in, out] */
    double *W;             /* in * out: alpha * op(B) */
    double *bias;          /* out (beta * C), NULL = none */
    int bias_broadcast;    /* bias is one value for every output */
} dense;

typedef struct pair {
    dense p, c;
    char act[NAME_MAX_LEN]; /* C's input: the activations of the hidden layer */
} pair;

static void dense_free(dense *d) {
    free(d->W), free(d->bias);
    d->W = d->bias = NULL;
}

/* ---- graph queries ---- */

static int is_graph_output(const inf_model_edit *m, const char *v) {
    for (int i = 0; i < inf_model_edit_n_outputs(m); i++)
        if (!strcmp(inf_model_edit_output(m, i), v)) return 1;
    return 0;
}

/* Number of node inputs reading v; node and slot get the last one. */
static int consumers(const inf_model_edit *m, const char *v, int *node, int *slot) {
    int n = 0;
    for (int i = 0; i < inf_model_edit_n_nodes(m); i++)
        for (int k = 0; k < inf_model_edit_node_n_inputs(m, i); k++)
            if (!strcmp(inf_model_edit_node_input(m, i, k), v)) {
                n++;
                if (node) *node = i;
                if (slot) *slot = k;
            }
    return n;
}

static int is_op(const inf_model_edit *m, int node, const char *op) {
    return !strcmp(inf_model_edit_node_op(m, node), op) && !*inf_model_edit_node_domain(m, node);
}

/* The weight of a Gemm, MatMul or Conv node when it is a float constant of rank >= 2. */
static const char *weight_of(const inf_model_edit *m, int node, inf_tensor **w) {
    *w = NULL;
    if (!(is_op(m, node, "Gemm") || is_op(m, node, "MatMul") || is_op(m, node, "Conv"))) return NULL;
    const char *name = inf_model_edit_node_input(m, node, 1);
    if (!*name || !inf_model_edit_has_initializer(m, name)) return NULL;
    if (inf_model_edit_get_initializer(m, name, w, NULL)) return NULL;
    if ((*w)->dtype != INF_DTYPE_F32 || (*w)->ndim < 2) {
        inf_tensor_free(*w);
        *w = NULL;
        return NULL;
    }
    return name;
}

static const char *const elementwise_ops[] = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Elu", "Selu", "Softplus",
                                              "HardSigmoid", "Identity", "Gelu", "Dropout", "Clip", "Softsign",
                                              "ThresholdedRelu", "Celu", "Mish", "HardSwish"};

static int is_elementwise(const inf_model_edit *m, int node) {
    for (size_t i = 0; i < sizeof elementwise_ops / sizeof *elementwise_ops; i++)
        if (is_op(m, node, elementwise_ops[i])) {
            for (int k = 1; k < inf_model_edit_node_n_inputs(m, node); k++) { /* Clip's min/max: constants */
                const char *in = inf_model_edit_node_input(m, node, k);
                if (*in && !inf_model_edit_has_initializer(m, in)) return 0;
            }
            for (int k = 1; k < inf_model_edit_node_n_outputs(m, node); k++) /* Dropout's mask: unused */
                if (*inf_model_edit_node_output(m, node, k) &&
                    consumers(m, inf_model_edit_node_output(m, node, k), NULL, NULL))
                    return 0;
            return 1;
        }
    return 0;
}

/* ---- dense layers as [in, out] matrices ---- */

static inf_status dense_load(const inf_model_edit *m, int node, dense *d, inf_error *err) {
    memset(d, 0, sizeof *d);
    d->node = node;
    d->bias_add = -1;
    d->is_gemm = is_op(m, node, "Gemm");
    d->trans_b = d->is_gemm ? (int)inf_model_edit_node_attr_int(m, node, "transB", 0) : 0;
    d->alpha = d->is_gemm ? inf_model_edit_node_attr_float(m, node, "alpha", 1) : 1;
    d->beta = d->is_gemm ? inf_model_edit_node_attr_float(m, node, "beta", 1) : 1;
    inf_tensor *w = NULL, *b = NULL;
    snprintf(d->w, sizeof d->w, "%s", inf_model_edit_node_input(m, node, 1));
    inf_status st = inf_model_edit_get_initializer(m, d->w, &w, err);
    if (st) return st;
    if (w->ndim != 2 || w->dtype != INF_DTYPE_F32) {
        inf_tensor_free(w);
        return inf_error_set(err, INF_EUNSUPPORTED, "weight '%s' is not a float matrix", d->w);
    }
    d->in = (int)w->dims[d->trans_b ? 1 : 0];
    d->out = (int)w->dims[d->trans_b ? 0 : 1];
    d->W = malloc((size_t)d->in * d->out * sizeof *d->W);
    if (!d->W) goto nomem;
    const float *B = w->data;
    for (int i = 0; i < d->in; i++)
        for (int o = 0; o < d->out; o++)
            d->W[(size_t)i * d->out + o] = d->alpha * (d->trans_b ? B[(size_t)o * d->in + i] : B[(size_t)i * d->out + o]);
    inf_tensor_free(w);
    w = NULL;
    /* the bias: Gemm's C, or a MatMul's single Add reader with a constant [out] */
    if (d->is_gemm) {
        const char *c = inf_model_edit_node_input(m, node, 2);
        if (*c && inf_model_edit_has_initializer(m, c)) snprintf(d->b, sizeof d->b, "%s", c);
    } else {
        int an = -1, slot = 0;
        const char *y = inf_model_edit_node_output(m, node, 0);
        if (consumers(m, y, &an, &slot) == 1 && !is_graph_output(m, y) && is_op(m, an, "Add")) {
            const char *c = inf_model_edit_node_input(m, an, 1 - slot);
            inf_tensor *t = NULL;
            if (inf_model_edit_has_initializer(m, c) && !inf_model_edit_get_initializer(m, c, &t, NULL) &&
                t->dtype == INF_DTYPE_F32 && inf_tensor_numel(t) == d->out && t->dims[t->ndim - 1] == d->out) {
                snprintf(d->b, sizeof d->b, "%s", c);
                d->bias_add = an;
            }
            inf_tensor_free(t);
        }
    }
    if (d->b[0]) {
        if ((st = inf_model_edit_get_initializer(m, d->b, &b, err))) goto fail;
        int64_t n = inf_tensor_numel(b);
        if (b->dtype != INF_DTYPE_F32 || (n != d->out && n != 1)) { /* an unusual bias: left as it is */
            d->b[0] = 0;
        } else {
            d->bias_broadcast = n == 1 && d->out != 1;
            if (!(d->bias = malloc((size_t)d->out * sizeof *d->bias))) goto nomem;
            for (int o = 0; o < d->out; o++) d->bias[o] = d->beta * ((const float *)b->data)[n == 1 ? 0 : o];
        }
        inf_tensor_free(b);
    }
    return INF_OK;
nomem:
    st = inf_error_set(err, INF_ENOMEM, "out of memory reading '%s'", d->w);
fail:
    inf_tensor_free(w);
    dense_free(d);
    return st;
}

/* Writes W [in, out] (and bias when not NULL) back as the node's constants. */
static inf_status dense_store(inf_model_edit *m, dense *d, inf_error *err) {
    int64_t dims[2] = {d->trans_b ? d->out : d->in, d->trans_b ? d->in : d->out};
    inf_tensor *w = NULL, *b = NULL;
    inf_status st;
    if ((st = inf_tensor_new(INF_DTYPE_F32, 2, dims, &w))) return inf_error_set(err, st, "out of memory");
    float *B = w->data;
    for (int i = 0; i < d->in; i++)
        for (int o = 0; o < d->out; o++)
            B[d->trans_b ? (size_t)o * d->in + i : (size_t)i * d->out + o] = (float)(d->W[(size_t)i * d->out + o] / d->alpha);
    st = inf_model_edit_set_initializer(m, d->w, w, err);
    inf_tensor_free(w);
    if (st || !d->bias) return st;
    if (d->bias_broadcast) return INF_OK; /* unchanged */
    int64_t bd[1] = {d->out};
    if ((st = inf_tensor_new(INF_DTYPE_F32, 1, bd, &b))) return inf_error_set(err, st, "out of memory");
    for (int o = 0; o < d->out; o++) ((float *)b->data)[o] = (float)(d->bias[o] / d->beta);
    if (!d->b[0]) { /* a Gemm that had no C gets one */
        snprintf(d->b, sizeof d->b, "%s_pruned_bias", d->w);
        st = inf_model_edit_node_set_input(m, d->node, 2, d->b, err);
    }
    if (!st) st = inf_model_edit_set_initializer(m, d->b, b, err);
    inf_tensor_free(b);
    return st;
}

/* ---- finding the pairs ---- */

/* From producer node p, follow its output to the consumer; 0 when it is a pair. */
static int find_pair(const inf_model_edit *m, int p, pair *out) {
    if (!(is_op(m, p, "Gemm") || is_op(m, p, "MatMul"))) return -1;
    if (is_op(m, p, "Gemm") && inf_model_edit_node_attr_int(m, p, "transA", 0)) return -1;
    inf_tensor *w;
    if (!weight_of(m, p, &w)) return -1;
    int rank = w->ndim;
    inf_tensor_free(w);
    if (rank != 2) return -1;
    const char *v = inf_model_edit_node_output(m, p, 0);
    int node = -1, slot = 0;
    if (is_op(m, p, "MatMul") && consumers(m, v, &node, &slot) == 1 && is_op(m, node, "Add") && !is_graph_output(m, v)) {
        const char *other = inf_model_edit_node_input(m, node, 1 - slot);
        if (!inf_model_edit_has_initializer(m, other)) return -1;
        v = inf_model_edit_node_output(m, node, 0);
    }
    for (int steps = 0; steps < 16; steps++) {
        if (is_graph_output(m, v) || consumers(m, v, &node, &slot) != 1) return -1;
        if ((is_op(m, node, "Gemm") || is_op(m, node, "MatMul")) && slot == 0) {
            if (is_op(m, node, "Gemm") && inf_model_edit_node_attr_int(m, node, "transA", 0)) return -1;
            if (!weight_of(m, node, &w)) return -1;
            rank = w->ndim;
            inf_tensor_free(w);
            if (rank != 2) return -1;
            memset(out, 0, sizeof *out);
            out->p.node = p;
            out->c.node = node;
            snprintf(out->act, sizeof out->act, "%s", v);
            return 0;
        }
        if (slot != 0 || !is_elementwise(m, node)) return -1;
        v = inf_model_edit_node_output(m, node, 0);
    }
    return -1;
}

/* ---- calibration: C's inputs on the records ---- */

/* Runs a copy of m with `value` as an extra output over the calibration
 * records; *A gets [n, width] float64 (owned). */
static inf_status capture(const inf_model_edit *m, const char *value, const inf__prune_options *o, double **A, int *n,
                          int *width, inf_error *err) {
    *A = NULL;
    inf_model_edit *copy = NULL;
    inf_model *model = NULL;
    inf_session *session = NULL;
    void *data = NULL;
    size_t size;
    inf__tool_rows r;
    memset(&r, 0, sizeof r);
    inf_status st;
    if ((st = inf_model_edit_clone(m, &copy, err))) return st;
    if ((st = inf_model_edit_add_output(copy, value, INF_DTYPE_F32, -1, NULL, NULL, err)) ||
        (st = inf_model_edit_serialize(copy, &data, &size, err)))
        goto done;
    if ((st = inf_model_load_buffer(data, size, NULL, NULL, &model, err))) goto done;
    inf_session_options so;
    inf_session_options_init(&so);
    so.n_threads = o->threads;
    so.max_batch = 1024;
    if ((st = inf_session_new(model, &so, &session, err))) goto done;
    inf__tool_collect_options co = {NULL, 0, o->calibration_rows > 0 ? o->calibration_rows : 5000, 0};
    if ((st = inf__tool_collect(o->calibration, o->pipeline, session, &co, &r, err))) goto done;
    const inf__tool_output *out = inf__tool_rows_output(&r, value);
    if (!out || !out->v) {
        st = inf_error_set(err, INF_EINTERNAL, "calibration: the activations '%s' were not produced", value);
        goto done;
    }
    *A = out->v;
    *n = r.n;
    *width = out->width;
    ((inf__tool_output *)out)->v = NULL; /* taken */
done:
    inf__tool_rows_free(&r);
    inf_session_free(session);
    inf_model_free(model);
    inf_model_edit_buffer_free(data);
    inf_model_edit_free(copy);
    return st;
}

/* ---- one pair ---- */

typedef struct scored {
    double s;
    int j;
} scored;

static int by_score_desc(const void *a, const void *b) {
    const scored *x = a, *y = b;
    if (x->s != y->s) return x->s > y->s ? -1 : 1;
    return x->j - y->j;
}

static int by_index(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* Least squares: [A_k 1] X = T, X = [W'; b']. */
static int refit(const double *Ak, int n, int k, const double *T, int M, int intercept, double *W, double *bias) {
    int q = k + (intercept ? 1 : 0);
    double *G = calloc((size_t)q * q, sizeof *G), *R = calloc((size_t)q * M, sizeof *R);
    if (!G || !R) {
        free(G), free(R);
        return -1;
    }
    for (int r = 0; r < n; r++) {
        const double *a = Ak + (size_t)r * k, *t = T + (size_t)r * M;
        for (int i = 0; i < q; i++) {
            double ai = i < k ? a[i] : 1;
            if (ai == 0) continue;
            double *gi = G + (size_t)i * q;
            for (int j = 0; j <= i; j++) gi[j] += ai * (j < k ? a[j] : 1);
            double *ri = R + (size_t)i * M;
            for (int c = 0; c < M; c++) ri[c] += ai * t[c];
        }
    }
    for (int i = 0; i < q; i++)
        for (int j = i + 1; j < q; j++) G[(size_t)i * q + j] = G[(size_t)j * q + i];
    int rc = inf__cholesky_solve(G, q, R, M, 1e-6);
    if (!rc) {
        memcpy(W, R, (size_t)k * M * sizeof *W);
        if (intercept) memcpy(bias, R + (size_t)k * M, (size_t)M * sizeof *bias);
    }
    free(G), free(R);
    return rc;
}

static inf_status prune_pair(inf_model_edit *m, pair *pr, const double *A0, int n0, const inf__prune_options *o,
                             inf__prune_report *rep, inf_error *err) {
    inf_status st;
    dense *P = &pr->p, *C = &pr->c;
    if ((st = dense_load(m, pr->p.node, P, err)) || (st = dense_load(m, pr->c.node, C, err))) return st;
    int H = P->out, M = C->out;
    double *A = NULL, *Ak = NULL, *T = NULL;
    scored *sc = malloc((size_t)H * sizeof *sc);
    int *keep = malloc((size_t)H * sizeof *keep);
    int n = 0, width = 0, compensated = 0;
    if (!sc || !keep) goto nomem;
    if (C->in != H) {
        st = inf_error_set(err, INF_ESHAPE, "layer '%s' has %d outputs but '%s' takes %d", P->w, H, C->w, C->in);
        goto done;
    }
    if (o->calibration && (st = capture(m, pr->act, o, &A, &n, &width, err))) goto done;
    if (A && (width != H || n != n0)) { /* not a [N, H] activation (e.g. a 3-D MatMul): magnitude only */
        free(A);
        A = NULL;
    }
    for (int j = 0; j < H; j++) {
        double win = 0, wout = 0, act = 0;
        for (int i = 0; i < P->in; i++) win += P->W[(size_t)i * H + j] * P->W[(size_t)i * H + j];
        if (P->bias) win += P->bias[j] * P->bias[j];
        for (int c = 0; c < M; c++) wout += C->W[(size_t)j * M + c] * C->W[(size_t)j * M + c];
        for (int r = 0; A && r < n; r++) act += A[(size_t)r * H + j] * A[(size_t)r * H + j];
        sc[j].s = (A ? sqrt(act / n) : sqrt(win)) * sqrt(wout);
        sc[j].j = j;
    }
    qsort(sc, (size_t)H, sizeof *sc, by_score_desc);
    int K = H - (int)floor(o->sparsity * H + 0.5);
    if (K < 1) K = 1;
    for (int k = 0; k < K; k++) keep[k] = sc[k].j;
    qsort(keep, (size_t)K, sizeof *keep, by_index);

    /* targets: C's original pre-activations on the original model's activations */
    if (A && A0) {
        if (!(T = malloc((size_t)n * M * sizeof *T)) || !(Ak = malloc((size_t)n * K * sizeof *Ak))) goto nomem;
        for (int r = 0; r < n; r++) {
            const double *a = A0 + (size_t)r * H;
            double *t = T + (size_t)r * M;
            for (int c = 0; c < M; c++) t[c] = C->bias ? C->bias[c] : 0;
            for (int j = 0; j < H; j++)
                if (a[j] != 0)
                    for (int c = 0; c < M; c++) t[c] += a[j] * C->W[(size_t)j * M + c];
            for (int k = 0; k < K; k++) Ak[(size_t)r * K + k] = A[(size_t)r * H + keep[k]];
        }
    }
    /* P: keep columns; C: keep rows */
    for (int i = 0; i < P->in; i++)
        for (int k = 0; k < K; k++) P->W[(size_t)i * K + k] = P->W[(size_t)i * H + keep[k]];
    if (P->bias && !P->bias_broadcast)
        for (int k = 0; k < K; k++) P->bias[k] = P->bias[keep[k]];
    P->out = K;
    for (int k = 0; k < K; k++) memmove(C->W + (size_t)k * M, C->W + (size_t)keep[k] * M, (size_t)M * sizeof *C->W);
    C->in = K;
    if (T) {
        int intercept = C->is_gemm ? C->beta != 0 : C->bias != NULL;
        double *W2 = malloc((size_t)K * M * sizeof *W2), *b2 = malloc((size_t)M * sizeof *b2);
        if (!W2 || !b2) {
            free(W2), free(b2);
            goto nomem;
        }
        if (!refit(Ak, n, K, T, M, intercept, W2, b2)) {
            memcpy(C->W, W2, (size_t)K * M * sizeof *W2);
            if (intercept) {
                if (!C->bias) C->bias = b2, b2 = NULL;
                else memcpy(C->bias, b2, (size_t)M * sizeof *b2);
                C->bias_broadcast = 0;
            }
            compensated = 1;
        }
        free(W2), free(b2);
    }
    if ((st = dense_store(m, P, err)) || (st = dense_store(m, C, err))) goto done;
    rep->n_layers++;
    rep->compensated += compensated;
    rep->neurons_before += H;
    rep->neurons_after += K;
    size_t len = strlen(rep->detail);
    snprintf(rep->detail + len, sizeof rep->detail - len, "  %-28s %5d -> %5d neurons%s\n", pr->act, H, K,
             compensated ? "  (next layer refitted by least squares)" : A ? "  (refit failed: kept as is)" : "");
    goto done;
nomem:
    st = inf_error_set(err, INF_ENOMEM, "out of memory pruning '%s'", pr->act);
done:
    free(A), free(Ak), free(T), free(sc), free(keep);
    dense_free(P), dense_free(C);
    return st;
}

/* ---- Conv channels ---- */

/* A Conv (group 1) whose output reaches the first input of another Conv (group 1) through
 * element-wise activations and pooling only, with no other reader: its output channels can go. */
static int find_conv_pair(const inf_model_edit *m, int p, pair *out) {
    if (!is_op(m, p, "Conv") || inf_model_edit_node_attr_int(m, p, "group", 1) != 1) return -1;
    inf_tensor *w;
    if (!weight_of(m, p, &w)) return -1;
    int rank = w->ndim;
    inf_tensor_free(w);
    if (rank < 3) return -1;
    const char *v = inf_model_edit_node_output(m, p, 0);
    int node = -1, slot = 0;
    for (int steps = 0; steps < 16; steps++) {
        if (is_graph_output(m, v) || consumers(m, v, &node, &slot) != 1 || slot != 0) return -1;
        if (is_op(m, node, "Conv")) {
            if (inf_model_edit_node_attr_int(m, node, "group", 1) != 1 || !weight_of(m, node, &w)) return -1;
            inf_tensor_free(w);
            memset(out, 0, sizeof *out);
            out->p.node = p;
            out->c.node = node;
            snprintf(out->act, sizeof out->act, "%s", v);
            return 0;
        }
        int pool = (is_op(m, node, "MaxPool") || is_op(m, node, "AveragePool")) && inf_model_edit_node_n_outputs(m, node) == 1;
        if (!pool && !is_elementwise(m, node)) return -1;
        v = inf_model_edit_node_output(m, node, 0);
    }
    return -1;
}

/* Keeps the channels keep[0..K) of axis `axis` (0 or 1) of a float tensor. */
static inf_status slice_axis(inf_model_edit *m, const char *name, int axis, const int *keep, int K, inf_error *err) {
    inf_tensor *t = NULL, *u = NULL;
    inf_status st = inf_model_edit_get_initializer(m, name, &t, err);
    if (st) return st;
    int64_t dims[INF_MAX_DIMS];
    memcpy(dims, t->dims, sizeof dims);
    int64_t outer = axis == 0 ? 1 : t->dims[0], C = t->dims[axis], inner = inf_tensor_numel(t) / (outer * C);
    dims[axis] = K;
    if ((st = inf_tensor_new(INF_DTYPE_F32, t->ndim, dims, &u))) {
        inf_tensor_free(t);
        return inf_error_set(err, st, "out of memory");
    }
    for (int64_t o = 0; o < outer; o++)
        for (int k = 0; k < K; k++)
            memcpy((float *)u->data + (o * K + k) * inner, (const float *)t->data + (o * C + keep[k]) * inner,
                   (size_t)inner * sizeof(float));
    st = inf_model_edit_set_initializer(m, name, u, err);
    inf_tensor_free(t);
    inf_tensor_free(u);
    return st;
}

static inf_status prune_conv_pair(inf_model_edit *m, pair *pr, const inf__prune_options *o, inf__prune_report *rep,
                                  inf_error *err) {
    inf_tensor *wp = NULL, *wc = NULL;
    double *A = NULL;
    scored *sc = NULL;
    int *keep = NULL, n = 0, width = 0;
    char wpn[NAME_MAX_LEN], wcn[NAME_MAX_LEN], bpn[NAME_MAX_LEN] = "";
    snprintf(wpn, sizeof wpn, "%s", inf_model_edit_node_input(m, pr->p.node, 1));
    snprintf(wcn, sizeof wcn, "%s", inf_model_edit_node_input(m, pr->c.node, 1));
    const char *b = inf_model_edit_node_input(m, pr->p.node, 2);
    if (*b && inf_model_edit_has_initializer(m, b)) snprintf(bpn, sizeof bpn, "%s", b);
    inf_status st;
    if ((st = inf_model_edit_get_initializer(m, wpn, &wp, err)) || (st = inf_model_edit_get_initializer(m, wcn, &wc, err)))
        goto done;
    int H = (int)wp->dims[0];
    if (wc->dims[1] != H) { /* something between them changes the channels */
        st = INF_OK;
        goto done;
    }
    int64_t per_p = inf_tensor_numel(wp) / H, per_c = inf_tensor_numel(wc) / (wc->dims[0] * H);
    sc = malloc((size_t)H * sizeof *sc);
    keep = malloc((size_t)H * sizeof *keep);
    if (!sc || !keep) {
        st = inf_error_set(err, INF_ENOMEM, "out of memory");
        goto done;
    }
    if (o->calibration && (st = capture(m, pr->act, o, &A, &n, &width, err))) goto done;
    if (A && width % H) free(A), A = NULL;
    for (int j = 0; j < H; j++) {
        double win = 0, wout = 0, act = 0;
        const float *f = (const float *)wp->data + (size_t)j * per_p;
        for (int64_t i = 0; i < per_p; i++) win += (double)f[i] * f[i];
        for (int64_t oc = 0; oc < wc->dims[0]; oc++) {
            const float *g = (const float *)wc->data + ((size_t)oc * H + j) * per_c;
            for (int64_t i = 0; i < per_c; i++) wout += (double)g[i] * g[i];
        }
        int sp = A ? width / H : 0;
        for (int r = 0; A && r < n; r++)
            for (int i = 0; i < sp; i++) {
                double a = A[(size_t)r * width + (size_t)j * sp + i];
                act += a * a;
            }
        sc[j].s = (A ? sqrt(act / ((double)n * sp)) : sqrt(win)) * sqrt(wout);
        sc[j].j = j;
    }
    qsort(sc, (size_t)H, sizeof *sc, by_score_desc);
    int K = H - (int)floor(o->sparsity * H + 0.5);
    if (K < 1) K = 1;
    for (int k = 0; k < K; k++) keep[k] = sc[k].j;
    qsort(keep, (size_t)K, sizeof *keep, by_index);
    if ((st = slice_axis(m, wpn, 0, keep, K, err)) || (bpn[0] && (st = slice_axis(m, bpn, 0, keep, K, err))) ||
        (st = slice_axis(m, wcn, 1, keep, K, err)))
        goto done;
    rep->n_layers++;
    rep->neurons_before += H;
    rep->neurons_after += K;
    size_t len = strlen(rep->detail);
    snprintf(rep->detail + len, sizeof rep->detail - len, "  %-28s %5d -> %5d channels  (Conv: not refitted)\n",
             pr->act, H, K);
done:
    inf_tensor_free(wp);
    inf_tensor_free(wc);
    free(A), free(sc), free(keep);
    return st;
}

/* ---- the two modes ---- */

static int cmp_abs(const void *a, const void *b) {
    float x = fabsf(*(const float *)a), y = fabsf(*(const float *)b);
    return x < y ? -1 : x > y;
}

static inf_status prune_unstructured(inf_model_edit *m, const inf__prune_options *o, inf__prune_report *rep,
                                     inf_error *err) {
    for (int i = 0; i < inf_model_edit_n_nodes(m); i++) {
        inf_tensor *w;
        const char *name = weight_of(m, i, &w);
        if (!name) continue;
        int64_t n = inf_tensor_numel(w), k = (int64_t)floor(o->sparsity * (double)n + 0.5);
        float *v = w->data, *sorted = malloc((size_t)n * sizeof *sorted);
        if (!sorted) {
            inf_tensor_free(w);
            return inf_error_set(err, INF_ENOMEM, "out of memory pruning '%s'", name);
        }
        memcpy(sorted, v, (size_t)n * sizeof *sorted);
        qsort(sorted, (size_t)n, sizeof *sorted, cmp_abs);
        float cut = k > 0 ? fabsf(sorted[k - 1]) : -1;
        int64_t zeroed = 0, zeros = 0;
        for (int64_t j = 0; j < n; j++) /* the k smallest; ties at the cut in index order */
            if (fabsf(v[j]) < cut) v[j] = 0, zeroed++;
        for (int64_t j = 0; j < n && zeroed < k; j++)
            if (v[j] != 0 && fabsf(v[j]) == cut) v[j] = 0, zeroed++;
        for (int64_t j = 0; j < n; j++) zeros += v[j] == 0;
        free(sorted);
        char nm[NAME_MAX_LEN];
        snprintf(nm, sizeof nm, "%s", name);
        inf_status st = inf_model_edit_set_initializer(m, nm, w, err);
        inf_tensor_free(w);
        if (st) return st;
        rep->n_layers++;
        rep->zeros_after += zeros;
        size_t len = strlen(rep->detail);
        if (len + 100 < sizeof rep->detail)
            snprintf(rep->detail + len, sizeof rep->detail - len, "  %-28s %-6s %8lld weights, %5.1f %% zero\n", nm,
                     inf_model_edit_node_op(m, i), (long long)n, 100.0 * zeros / n);
    }
    return INF_OK;
}

static int64_t count_parameters(const inf_model_edit *m, inf_error *err) {
    void *data;
    size_t size;
    inf_model *model;
    if (inf_model_edit_serialize(m, &data, &size, err)) return -1;
    inf_status st = inf_model_load_buffer(data, size, NULL, NULL, &model, err);
    inf_model_edit_buffer_free(data);
    if (st) return -1;
    inf_model_summary s;
    inf_model_get_summary(model, &s);
    inf_model_free(model);
    return s.n_parameters;
}

static inf_status prune_structured(inf_model_edit *m, const inf__prune_options *o, inf__prune_report *rep,
                                   inf_error *err) {
    int n_nodes = inf_model_edit_n_nodes(m), n_pairs = 0, n_conv = 0;
    pair *pairs = calloc((size_t)n_nodes + 1, sizeof *pairs), *convs = calloc((size_t)n_nodes + 1, sizeof *convs);
    if (!pairs || !convs) {
        free(pairs), free(convs);
        return inf_error_set(err, INF_ENOMEM, "out of memory");
    }
    for (int i = 0; i < n_nodes; i++) {
        if (!find_pair(m, i, &pairs[n_pairs])) n_pairs++;
        if (!find_conv_pair(m, i, &convs[n_conv])) n_conv++;
    }
    inf_status st = INF_OK;
    if (!n_pairs && !n_conv) {
        st = inf_error_set(err, INF_EUNSUPPORTED,
                           "no hidden layer to narrow: structured pruning removes the neurons (channels) between two "
                           "Gemm/MatMul (Conv) layers joined by element-wise activations only, and this model has none");
        goto done;
    }
    inf_model_edit_clear_value_info(m); /* hidden widths change */
    for (int k = 0; k < n_conv && !st; k++) st = prune_conv_pair(m, &convs[k], o, rep, err);
    if (st) goto done;
    /* original activations of every pair, for the least-squares targets */
    double **A0 = calloc((size_t)n_pairs, sizeof *A0);
    int *n0 = calloc((size_t)n_pairs, sizeof *n0);
    if (!A0 || !n0) {
        free(A0), free(n0);
        st = inf_error_set(err, INF_ENOMEM, "out of memory");
        goto done;
    }
    for (int k = 0; o->calibration && k < n_pairs && !st; k++) {
        int w;
        st = capture(m, pairs[k].act, o, &A0[k], &n0[k], &w, err);
    }
    for (int k = 0; k < n_pairs && !st; k++) st = prune_pair(m, &pairs[k], A0[k], n0[k], o, rep, err);
    for (int k = 0; k < n_pairs; k++) free(A0[k]);
    free(A0), free(n0);
done:
    free(pairs), free(convs);
    return st;
}

inf_status inf__prune(const char *in_path, const char *out_path, const inf__prune_options *o, inf__prune_report *rep,
                      inf_error *err) {
    memset(rep, 0, sizeof *rep);
    if (!(o->sparsity > 0 && o->sparsity < 1))
        return inf_error_set(err, INF_EINVAL, "--sparsity must be between 0 and 1 (exclusive), got %g", o->sparsity);
    inf_model_edit *m = NULL;
    inf_status st = inf_model_edit_open(in_path, &m, err);
    if (st) return st;
    if (inf_model_edit_bypass_constant_identities(m, err) < 0) { /* a weight reached through Identity is one */
        st = err ? err->status : INF_ENOMEM;
        goto done;
    }
    int n_weights = 0;
    for (int i = 0; i < inf_model_edit_n_nodes(m); i++) {
        inf_tensor *w;
        if (weight_of(m, i, &w)) n_weights++;
        inf_tensor_free(w);
    }
    if (!n_weights) {
        st = inf_error_set(err, INF_EUNSUPPORTED,
                           "the model has no Gemm, MatMul or Conv node with a constant float weight: nothing to prune");
        goto done;
    }
    if ((rep->params_before = count_parameters(m, err)) < 0) {
        st = err ? err->status : INF_EINTERNAL;
        goto done;
    }
    st = o->structured ? prune_structured(m, o, rep, err) : prune_unstructured(m, o, rep, err);
    if (st) goto done;
    if ((rep->params_after = count_parameters(m, err)) < 0) {
        st = err ? err->status : INF_EINTERNAL;
        goto done;
    }
    if (inf_model_edit_add_metadata(m, "infera.pruned", o->structured ? "structured" : "unstructured", err)) goto done;
    st = inf_model_edit_save(m, out_path, err);
done:
    inf_model_edit_free(m);
    return st;
}
