/*
 * test_rnn.c -- the float32 fast path of RNN, GRU and LSTM (ops/ref/rnn.c:
 * one GEMM for X * W^T, a packed H * R^T per step, vmath gates) against
 * the reference path of the same op, which runs whenever the dtype is not
 * float32 (double precision throughout).
 *
 * Each case builds, in memory, a one-node model twice -- float32 and
 * float64, same values -- and runs both; Y, Y_h and (LSTM) Y_c of the
 * float32 run must be within 1e-4 * max(1, |ref|) of the float64 run, and
 * the float32 run on 2 threads must give the same bits as on 1 thread, and
 * a second (warm) run of each session must allocate nothing.
 * Shapes are random: batch 1 and odd batches (up to 67, so rows go through
 * the pool), hidden sizes mostly not multiples of 8, all three directions,
 * both layouts, sequence_lens shorter than the sequence (and 0), initial
 * states, peepholes, clip, linear_before_reset, input_forget, non-default
 * activations with alpha/beta; W, R, B, P either initializers (W and R
 * packed at load) or graph inputs (the per-call GEMM).
 * Prints one line per failure and "N passed, M failed".
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infera/infera.h"
#include "infera/model.h"
#include "infera/session.h"
#include "infera/tensor.h"
#include "onnx.pb-c.h"
#include "onnx_value.h"

static int n_passed, n_failed;
static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t next_u64(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}
static int rand_int(int lo, int hi) { return lo + (int)(next_u64() % (uint64_t)(hi - lo + 1)); }
static double uniform(double a) { return ((double)(next_u64() >> 11) / 9007199254740992.0 * 2.0 - 1.0) * a; }

enum { X, W, R, B, SL, H0, C0, P, N_SLOTS };
static const char *const slot_names[N_SLOTS] = {"X", "W", "R", "B", "sl", "h0", "c0", "P"};

typedef struct rnn_case {
    const char *op;
    int n_gates, n_acts, dirs;
    const char *direction;
    int64_t seq, batch, input, hidden;
    bool layout, const_w, lbr, input_forget, has_clip, custom_acts;
    bool present[N_SLOTS];
    int64_t dims[N_SLOTS][3];
    int ndim[N_SLOTS];
    double *data[N_SLOTS]; /* sl: lengths as doubles */
} rnn_case;

/* ---- building the model ---- */

typedef struct builder {
    Onnx__NodeProto node, *node_ptr;
    Onnx__AttributeProto attrs[8], *attr_ptrs[8];
    char *ins[N_SLOTS], *outs[3];
    char *act_names[6];
    float alphas[6], betas[6];
    test_value vals[N_SLOTS + 3];
    Onnx__ValueInfoProto *in_ptrs[N_SLOTS], *out_ptrs[3];
    Onnx__TensorProto init[N_SLOTS], *init_ptrs[N_SLOTS];
    int64_t init_dims[N_SLOTS][3];
    int n_vi, n_in, n_init;
} builder;

static Onnx__AttributeProto *attr(builder *bd, const char *name, int type) {
    int i = (int)bd->node.n_attribute++;
    Onnx__AttributeProto *a = &bd->attrs[i];
    *a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
    a->name = (char *)name;
    a->has_type = 1;
    a->type = type;
    bd->attr_ptrs[i] = a;
    return a;
}

static void attr_int(builder *bd, const char *name, int64_t v) {
    Onnx__AttributeProto *a = attr(bd, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1, a->i = v;
}

static Onnx__ValueInfoProto *add_value(builder *bd, const char *name, int elem, int ndim, const int64_t *dims) {
    return test_value_info(&bd->vals[bd->n_vi++], name, elem, ndim, dims);
}

/* A weight as an initializer, in the model's float type. */
static void add_init(builder *bd, const rnn_case *c, int s, bool f64, float *fbuf) {
    Onnx__TensorProto *t = &bd->init[bd->n_init];
    *t = (Onnx__TensorProto)ONNX__TENSOR_PROTO__INIT;
    t->name = (char *)slot_names[s];
    t->has_data_type = 1;
    memcpy(bd->init_dims[bd->n_init], c->dims[s], sizeof c->dims[s]);
    t->dims = bd->init_dims[bd->n_init];
    t->n_dims = (size_t)c->ndim[s];
    size_t n = 1;
    for (int d = 0; d < c->ndim[s]; d++) n *= (size_t)c->dims[s][d];
    if (f64) {
        t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE;
        t->double_data = c->data[s], t->n_double_data = n;
    } else {
        t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
        for (size_t i = 0; i < n; i++) fbuf[i] = (float)c->data[s][i];
        t->float_data = fbuf, t->n_float_data = n;
    }
    bd->init_ptrs[bd->n_init++] = t;
}

static bool is_weight(int s) { return s == W || s == R || s == B || s == P; }

static void add_attrs(builder *bd, const rnn_case *c) {
    static const char *const acts[3][3] = {{"Relu"}, {"HardSigmoid", "Softsign"}, {"HardSigmoid", "Tanh", "Softsign"}};
    attr_int(bd, "hidden_size", c->hidden);
    Onnx__AttributeProto *a = attr(bd, "direction", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1, a->s.data = (uint8_t *)c->direction, a->s.len = strlen(c->direction);
    if (c->layout) attr_int(bd, "layout", 1);
    if (c->lbr) attr_int(bd, "linear_before_reset", 1);
    if (c->input_forget) attr_int(bd, "input_forget", 1);
    if (c->has_clip) {
        a = attr(bd, "clip", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
        a->has_f = 1, a->f = 0.7f;
    }
    if (!c->custom_acts) return;
    a = attr(bd, "activations", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    static ProtobufCBinaryData names[6];
    int k = c->n_gates == 1 ? 0 : c->n_gates == 3 ? 1 : 2;
    for (int i = 0; i < c->n_acts * c->dirs; i++) {
        const char *nm = acts[k][i % c->n_acts];
        names[i].data = (uint8_t *)nm, names[i].len = strlen(nm);
        bd->alphas[i] = 0.25f, bd->betas[i] = 0.45f;
    }
    a->strings = names, a->n_strings = (size_t)(c->n_acts * c->dirs);
    a = attr(bd, "activation_alpha", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->floats = bd->alphas, a->n_floats = (size_t)(c->n_acts * c->dirs);
    a = attr(bd, "activation_beta", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->floats = bd->betas, a->n_floats = (size_t)(c->n_acts * c->dirs);
}

/* Serialises the case's node in float32 or float64; malloc'd bytes in *out. */
static size_t build_model(const rnn_case *c, bool f64, uint8_t **out) {
    static const char *const out_names[3] = {"Y", "Y_h", "Y_c"};
    builder *bd = calloc(1, sizeof *bd);
    float *fbufs[N_SLOTS] = {0};
    *out = NULL;
    if (!bd) return 0;
    int elem = f64 ? ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE : ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    bd->node = (Onnx__NodeProto)ONNX__NODE_PROTO__INIT;
    bd->node.op_type = (char *)c->op;
    bd->node.attribute = bd->attr_ptrs;
    add_attrs(bd, c);
    int last = 0;
    for (int s = 0; s < N_SLOTS; s++) {
        bd->ins[s] = c->present[s] ? (char *)slot_names[s] : "";
        if (!c->present[s]) continue;
        last = s;
        if (c->const_w && is_weight(s)) {
            size_t n = (size_t)(c->dims[s][0] * c->dims[s][1] * (c->ndim[s] == 3 ? c->dims[s][2] : 1));
            fbufs[s] = malloc(n * sizeof(float));
            if (fbufs[s]) add_init(bd, c, s, f64, fbufs[s]);
            continue;
        }
        int e = s == SL ? ONNX__TENSOR_PROTO__DATA_TYPE__INT32 : elem;
        bd->in_ptrs[bd->n_in++] = add_value(bd, slot_names[s], e, c->ndim[s], c->dims[s]);
    }
    bd->node.input = bd->ins, bd->node.n_input = (size_t)last + 1;
    int n_out = c->n_gates == 4 ? 3 : 2;
    int64_t yd[4] = {c->seq, c->dirs, c->batch, c->hidden}, hd[3] = {c->dirs, c->batch, c->hidden};
    if (c->layout) yd[0] = c->batch, yd[1] = c->seq, yd[2] = c->dirs, hd[0] = c->batch, hd[1] = c->dirs;
    for (int i = 0; i < n_out; i++) {
        bd->outs[i] = (char *)out_names[i];
        bd->out_ptrs[i] = add_value(bd, out_names[i], elem, i ? 3 : 4, i ? hd : yd);
    }
    bd->node.output = bd->outs, bd->node.n_output = (size_t)n_out;
    bd->node_ptr = &bd->node;
    Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
    g.name = "rnn";
    g.node = &bd->node_ptr, g.n_node = 1;
    g.input = bd->in_ptrs, g.n_input = (size_t)bd->n_in;
    g.output = bd->out_ptrs, g.n_output = (size_t)n_out;
    g.initializer = bd->init_ptrs, g.n_initializer = (size_t)bd->n_init;
    Onnx__OperatorSetIdProto op = ONNX__OPERATOR_SET_ID_PROTO__INIT, *ops[1] = {&op};
    op.domain = "", op.has_version = 1, op.version = 14;
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    m.has_ir_version = 1, m.ir_version = 7;
    m.opset_import = ops, m.n_opset_import = 1;
    m.graph = &g;
    size_t n = onnx__model_proto__get_packed_size(&m);
    *out = malloc(n);
    if (*out) onnx__model_proto__pack(&m, *out);
    for (int s = 0; s < N_SLOTS; s++) free(fbufs[s]);
    free(bd);
    return *out ? n : 0;
}

/* ---- running ---- */

static int64_t slot_numel(const rnn_case *c, int s) {
    int64_t n = 1;
    for (int d = 0; d < c->ndim[s]; d++) n *= c->dims[s][d];
    return n;
}

/* Runs the model; copies each output into outs[i] as doubles (n[i] values). */
static bool run_model(const rnn_case *c, bool f64, int threads, double *const *outs, const int64_t *n, int n_out) {
    uint8_t *bytes = NULL;
    size_t size = build_model(c, f64, &bytes);
    inf_model *m = NULL;
    inf_session *s = NULL;
    inf_error err = {0};
    bool ok = false;
    inf_tensor t[N_SLOTS];
    const inf_tensor *inputs[N_SLOTS];
    void *bufs[N_SLOTS] = {0};
    int n_in = 0;
    for (int k = 0; k < N_SLOTS && size; k++) {
        if (!c->present[k] || (c->const_w && is_weight(k))) continue;
        int64_t cnt = slot_numel(c, k);
        inf_dtype dt = k == SL ? INF_DTYPE_I32 : f64 ? INF_DTYPE_F64 : INF_DTYPE_F32;
        bufs[k] = malloc((size_t)cnt * 8);
        if (!bufs[k]) goto done;
        for (int64_t i = 0; i < cnt; i++) {
            if (dt == INF_DTYPE_I32) ((int32_t *)bufs[k])[i] = (int32_t)c->data[k][i];
            else if (dt == INF_DTYPE_F64) ((double *)bufs[k])[i] = c->data[k][i];
            else ((float *)bufs[k])[i] = (float)c->data[k][i];
        }
        inf_tensor_init_view(&t[n_in], dt, c->ndim[k], c->dims[k], bufs[k]);
        inputs[n_in] = &t[n_in];
        n_in++;
    }
    inf_session_options so = {.n_threads = threads};
    inf_tensor *const *o;
    if (!size || inf_model_load_buffer(bytes, size, NULL, NULL, &m, &err) != INF_OK ||
        inf_session_new(m, &so, &s, &err) != INF_OK || inf_session_run(s, inputs, &o, &err) != INF_OK) {
        fprintf(stderr, "  load/run failed: %s\n", err.message);
        goto done;
    }
    /* warm: the same inputs again allocate nothing */
    inf_alloc_stats before, after;
    inf_alloc_get_stats(&before);
    if (inf_session_run(s, inputs, &o, &err) != INF_OK) goto done;
    inf_alloc_get_stats(&after);
    if (after.n_allocs != before.n_allocs) {
        printf("FAIL %s: a warm run made %llu allocations\n", c->op,
               (unsigned long long)(after.n_allocs - before.n_allocs));
        goto done;
    }
    for (int i = 0; i < n_out; i++) {
        if (inf_tensor_numel(o[i]) != n[i]) goto done;
        for (int64_t j = 0; j < n[i]; j++)
            outs[i][j] = f64 ? ((const double *)o[i]->data)[j] : ((const float *)o[i]->data)[j];
    }
    ok = true;
done:
    inf_session_free(s);
    inf_model_free(m);
    for (int k = 0; k < N_SLOTS; k++) free(bufs[k]);
    free(bytes);
    return ok;
}

/* ---- cases ---- */

static void set_slot(rnn_case *c, int s, int ndim, int64_t d0, int64_t d1, int64_t d2, double scale) {
    c->present[s] = true;
    c->ndim[s] = ndim;
    c->dims[s][0] = d0, c->dims[s][1] = d1, c->dims[s][2] = d2;
    int64_t n = slot_numel(c, s);
    c->data[s] = malloc((size_t)n * sizeof(double));
    if (!c->data[s]) exit(2);
    for (int64_t i = 0; i < n; i++) c->data[s][i] = uniform(scale);
}

static void random_case(rnn_case *c, int trial) {
    static const char *const ops[3] = {"RNN", "GRU", "LSTM"};
    static const char *const dirs[3] = {"forward", "reverse", "bidirectional"};
    memset(c, 0, sizeof *c);
    int kind = trial % 3;
    c->op = ops[kind];
    c->n_gates = kind == 0 ? 1 : kind == 1 ? 3 : 4;
    c->n_acts = kind + 1;
    c->direction = dirs[(trial / 3) % 3];
    c->dirs = (trial / 3) % 3 == 2 ? 2 : 1;
    c->batch = trial % 4 == 0 ? 1 : trial % 11 == 5 ? 67 : 2 * rand_int(0, 4) + 1;
    c->seq = rand_int(1, 9);
    c->input = rand_int(1, 37);
    c->hidden = trial % 5 == 0 ? 16 : rand_int(1, 45);
    c->layout = trial % 7 == 3;
    c->const_w = trial % 2 == 0;
    c->lbr = kind == 1 && next_u64() % 2;
    c->input_forget = kind == 2 && trial % 13 == 2;
    c->has_clip = trial % 6 == 1;
    c->custom_acts = trial % 8 == 5;
    int64_t gh = c->n_gates * c->hidden, sb = c->layout ? c->batch : c->seq, bs = c->layout ? c->seq : c->batch;
    double ws = 1.0 / sqrt((double)c->hidden);
    set_slot(c, X, 3, sb, bs, c->input, 1.0);
    set_slot(c, W, 3, c->dirs, gh, c->input, ws);
    set_slot(c, R, 3, c->dirs, gh, c->hidden, ws);
    if (trial % 4 != 1) set_slot(c, B, 2, c->dirs, 2 * gh, 0, 0.5);
    if (trial % 3 != 0 || trial % 4 == 1) { /* sequence_lens, some shorter, some 0 */
        set_slot(c, SL, 1, c->batch, 0, 0, 1.0);
        for (int64_t b = 0; b < c->batch; b++) c->data[SL][b] = (double)rand_int(b == 1 ? 0 : 1, (int)c->seq);
    }
    int64_t h0 = c->layout ? c->batch : c->dirs, h1 = c->layout ? c->dirs : c->batch;
    if (trial % 5 != 2) set_slot(c, H0, 3, h0, h1, c->hidden, 0.8);
    if (kind == 2 && trial % 4 != 3) set_slot(c, C0, 3, h0, h1, c->hidden, 0.8);
    if (kind == 2 && trial % 3 == 2) set_slot(c, P, 2, c->dirs, 3 * c->hidden, 0, 0.5);
}

static bool compare(const rnn_case *c, const char *what, const double *got, const double *ref, int64_t n,
                    double tol) {
    for (int64_t i = 0; i < n; i++) {
        double lim = tol * (fabs(ref[i]) > 1 ? fabs(ref[i]) : 1);
        if (!(fabs(got[i] - ref[i]) <= lim)) {
            printf("FAIL %s %s dirs=%d seq=%lld batch=%lld input=%lld hidden=%lld layout=%d const=%d: %s[%lld] = %.7g, "
                   "reference %.7g\n",
                   c->op, c->direction, c->dirs, (long long)c->seq, (long long)c->batch, (long long)c->input,
                   (long long)c->hidden, c->layout, c->const_w, what, (long long)i, got[i], ref[i]);
            return false;
        }
    }
    return true;
}

static void check_case(int trial) {
    static const char *const names[3] = {"Y", "Y_h", "Y_c"};
    rnn_case c;
    random_case(&c, trial);
    int n_out = c.n_gates == 4 ? 3 : 2;
    int64_t n[3] = {c.seq * c.dirs * c.batch * c.hidden, c.dirs * c.batch * c.hidden, c.dirs * c.batch * c.hidden};
    double *ref[3] = {0}, *fast[3] = {0}, *fast2[3] = {0};
    bool ok = true;
    for (int i = 0; i < n_out; i++) {
        ref[i] = malloc((size_t)n[i] * sizeof(double));
        fast[i] = malloc((size_t)n[i] * sizeof(double));
        fast2[i] = malloc((size_t)n[i] * sizeof(double));
        ok = ok && ref[i] && fast[i] && fast2[i];
    }
    ok = ok && run_model(&c, true, 1, ref, n, n_out) && run_model(&c, false, 1, fast, n, n_out) &&
         run_model(&c, false, 2, fast2, n, n_out);
    for (int i = 0; ok && i < n_out; i++) {
        ok = compare(&c, names[i], fast[i], ref[i], n[i], 1e-4);
        if (ok && memcmp(fast[i], fast2[i], (size_t)n[i] * sizeof(double))) {
            printf("FAIL %s: %s on 2 threads differs from 1 thread\n", c.op, names[i]);
            ok = false;
        }
    }
    if (ok) n_passed++;
    else n_failed++;
    for (int i = 0; i < 3; i++) free(ref[i]), free(fast[i]), free(fast2[i]);
    for (int s = 0; s < N_SLOTS; s++) free(c.data[s]);
}

int main(void) {
    for (int trial = 0; trial < 90; trial++) check_case(trial);
    printf("rnn: float32 fast path against the float64 reference, %d random cases\n", n_passed + n_failed);
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}
