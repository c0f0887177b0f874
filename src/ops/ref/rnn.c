/*
 * rnn.c -- reference kernels for the recurrent layers RNN, GRU and LSTM.
 *
 * ONNX ops (opsets 1-17; one impl, node->opset only matters for `layout`):
 *   RNN   Ht = f(Xt*Wi^T + Ht-1*Ri^T + Wbi + Rbi)
 *   GRU   zt = f(Xt*Wz^T + Ht-1*Rz^T + Wbz + Rbz)   (gates z, r, h in W/R/B)
 *         rt = f(Xt*Wr^T + Ht-1*Rr^T + Wbr + Rbr)
 *         ht = g(Xt*Wh^T + (rt (.) Ht-1)*Rh^T + Rbh + Wbh)      linear_before_reset=0
 *         ht = g(Xt*Wh^T + rt (.) (Ht-1*Rh^T + Rbh) + Wbh)      linear_before_reset!=0
 *         Ht = (1 - zt) (.) ht + zt (.) Ht-1
 *   LSTM  it = f(Xt*Wi^T + Ht-1*Ri^T + Pi (.) Ct-1 + Wbi + Rbi) (gates i, o, f, c)
 *         ft = f(Xt*Wf^T + Ht-1*Rf^T + Pf (.) Ct-1 + Wbf + Rbf) (1 - it with input_forget)
 *         ct = g(Xt*Wc^T + Ht-1*Rc^T + Wbc + Rbc)
 *         Ct = ft (.) Ct-1 + it (.) ct
 *         ot = f(Xt*Wo^T + Ht-1*Ro^T + Po (.) Ct + Wbo + Rbo)
 *         Ht = ot (.) h(Ct)
 * Attributes: hidden_size (checked against R), direction (forward, reverse,
 *   bidirectional), activations with activation_alpha / activation_beta
 *   (Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh,
 *   HardSigmoid, Elu, Softsign, Softplus; names case-insensitive; alphas and
 *   betas are consumed in order by the activations that take them, the
 *   ONNX operator defaults otherwise), clip (applied to every activation
 *   input), linear_before_reset (GRU), input_forget (LSTM), layout (14+: 1
 *   means X/Y/Y_h/Y_c are batch-major), output_sequence (opset 1, ignored:
 *   Y is produced whenever the node names it).
 * Inputs: X, W, R, optional B, sequence_lens (int32 or int64), initial_h,
 *   initial_c and P (LSTM).  Outputs: Y, Y_h, Y_c (LSTM), each optional.
 *   With sequence_lens, steps at or past a batch entry's length leave Y zero
 *   and Y_h/Y_c hold the state after its last valid step; the reverse
 *   direction starts at step length-1.
 * dtypes: float32 (the fast path below), float64, float16 (the reference,
 *   computed in double).
 * Deviations: none known.  When the activations list has one direction's
 *   worth of names for a bidirectional layer, both directions use it.
 *
 * Two paths.  The reference (rnn_run_ref): batch entries are independent,
 * so it walks (direction, batch) and runs the whole sequence for each, with
 * W, R, B and P converted to double once in scratch memory.  The float32
 * fast path (rnn_fast_run, described at its section): X * W^T for all steps
 * in one GEMM, then per step a GEMM over the batch rows with R packed at
 * load, and vectorised gates; tests/kernels/test_rnn.c checks it against
 * the reference (the same model in float64) over random shapes.
 */
#include <ctype.h>
#include <math.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/vmath.h"

enum { CELL_RNN, CELL_GRU, CELL_LSTM };
enum { DIR_FORWARD, DIR_REVERSE, DIR_BIDIRECTIONAL };
enum {
    ACT_RELU, ACT_TANH, ACT_SIGMOID, ACT_AFFINE, ACT_LEAKY_RELU, ACT_THRESHOLDED_RELU,
    ACT_SCALED_TANH, ACT_HARD_SIGMOID, ACT_ELU, ACT_SOFTSIGN, ACT_SOFTPLUS
};

#define MAX_ACTS 3 /* activations per direction (LSTM: f, g, h) */

typedef struct activation {
    int kind;
    double alpha, beta;
} activation;

typedef struct rnn_params {
    int cell;
    int n_gates, n_acts; /* per direction */
    int direction, n_dirs;
    int64_t hidden_size; /* 0 when absent */
    bool has_clip, linear_before_reset, input_forget, batch_major;
    double clip;
    activation acts[2][MAX_ACTS];
    struct rnn_packed *packed; /* float32 W / R packed at load (fast path), or NULL */
} rnn_params;

/* ---- attributes ---- */

typedef struct act_info {
    const char *name;
    int kind;
    bool takes_alpha, takes_beta;
    double alpha, beta; /* ONNX operator defaults */
} act_info;

static const act_info act_table[] = {
    {"relu", ACT_RELU, false, false, 0, 0},
    {"tanh", ACT_TANH, false, false, 0, 0},
    {"sigmoid", ACT_SIGMOID, false, false, 0, 0},
    {"affine", ACT_AFFINE, true, true, 1.0, 0.0},
    {"leakyrelu", ACT_LEAKY_RELU, true, false, 0.01, 0},
    {"thresholdedrelu", ACT_THRESHOLDED_RELU, true, false, 1.0, 0},
    {"scaledtanh", ACT_SCALED_TANH, true, true, 1.0, 1.0},
    {"hardsigmoid", ACT_HARD_SIGMOID, true, true, 0.2, 0.5},
    {"elu", ACT_ELU, true, false, 1.0, 0},
    {"softsign", ACT_SOFTSIGN, false, false, 0, 0},
    {"softplus", ACT_SOFTPLUS, false, false, 0, 0},
};

static const act_info *find_activation(const char *name) {
    char low[32];
    size_t n = strlen(name);
    if (n >= sizeof low) return NULL;
    for (size_t i = 0; i <= n; i++) low[i] = (char)tolower((unsigned char)name[i]);
    for (size_t i = 0; i < sizeof act_table / sizeof act_table[0]; i++)
        if (!strcmp(act_table[i].name, low)) return &act_table[i];
    return NULL;
}

static inf_status parse_activations(inf__node *node, inf_error *err, rnn_params *p) {
    static const char *const defaults[3][MAX_ACTS] = {
        {"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
    const inf__attr *a = inf__node_attr(node, "activations");
    int n_alpha = 0, n_beta = 0, ia = 0, ib = 0;
    const float *alphas = inf__attr_floats(node, "activation_alpha", &n_alpha);
    const float *betas = inf__attr_floats(node, "activation_beta", &n_beta);
    int n_names = a && a->type == INF_ATTR_STRINGS ? a->n : 0;
    if (n_names && n_names != p->n_acts && n_names != p->n_acts * p->n_dirs)
        return inf__node_error(node, err, INF_EMODEL,
                               "attribute activations has %d names, expected %d per direction "
                               "(%d directions)", n_names, p->n_acts, p->n_dirs);
    for (int d = 0; d < p->n_dirs; d++)
        for (int k = 0; k < p->n_acts; k++) {
            const char *name = defaults[p->cell][k];
            if (n_names) name = a->strings[(n_names == p->n_acts ? 0 : d * p->n_acts) + k];
            const act_info *info = find_activation(name);
            if (!info)
                return inf__node_error(node, err, INF_EMODEL, "unsupported activation '%s'", name);
            activation *act = &p->acts[d][k];
            act->kind = info->kind;
            act->alpha = info->alpha, act->beta = info->beta;
            if (info->takes_alpha && ia < n_alpha) act->alpha = alphas[ia++];
            if (info->takes_beta && ib < n_beta) act->beta = betas[ib++];
        }
    return INF_OK;
}

static inf_status rnn_pack_weights(inf__node *node, inf__arena *arena, rnn_params *p);

static inf_status rnn_init(inf__node *node, inf__arena *arena, inf_error *err) {
    rnn_params *p = inf__op_params(arena, rnn_params);
    if (!p) return INF_ENOMEM;
    if (!strcmp(node->op_type, "GRU")) p->cell = CELL_GRU, p->n_gates = 3, p->n_acts = 2;
    else if (!strcmp(node->op_type, "LSTM")) p->cell = CELL_LSTM, p->n_gates = 4, p->n_acts = 3;
    else p->cell = CELL_RNN, p->n_gates = 1, p->n_acts = 1;
    const char *dir = inf__attr_string(node, "direction", "forward");
    if (!strcmp(dir, "forward")) p->direction = DIR_FORWARD, p->n_dirs = 1;
    else if (!strcmp(dir, "reverse")) p->direction = DIR_REVERSE, p->n_dirs = 1;
    else if (!strcmp(dir, "bidirectional")) p->direction = DIR_BIDIRECTIONAL, p->n_dirs = 2;
    else return inf__node_error(node, err, INF_EMODEL, "unknown direction '%s'", dir);
    p->hidden_size = inf__attr_int(node, "hidden_size", 0);
    if (p->hidden_size < 0)
        return inf__node_error(node, err, INF_EMODEL, "hidden_size = %lld, must be >= 1",
                               (long long)p->hidden_size);
    const inf__attr *clip = inf__node_attr(node, "clip");
    p->has_clip = clip != NULL;
    p->clip = clip ? clip->f : 0;
    if (p->has_clip && !(p->clip > 0))
        return inf__node_error(node, err, INF_EMODEL, "clip = %g, must be > 0", p->clip);
    p->linear_before_reset = inf__attr_int(node, "linear_before_reset", 0) != 0;
    p->input_forget = inf__attr_int(node, "input_forget", 0) != 0;
    int64_t layout = node->opset >= 14 ? inf__attr_int(node, "layout", 0) : 0;
    if (layout != 0 && layout != 1)
        return inf__node_error(node, err, INF_EMODEL, "layout = %lld, must be 0 or 1",
                               (long long)layout);
    p->batch_major = layout == 1;
    inf_status st = parse_activations(node, err, p);
    if (st != INF_OK) return st;
    if ((st = rnn_pack_weights(node, arena, p)) != INF_OK) return st;
    node->params = p;
    return INF_OK;
}

/* ---- activations ---- */

static double activate(const activation *a, double x) {
    switch (a->kind) {
    case ACT_RELU: return x > 0 ? x : 0;
    case ACT_TANH: return tanh(x);
    case ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case ACT_AFFINE: return a->alpha * x + a->beta;
    case ACT_LEAKY_RELU: return x >= 0 ? x : a->alpha * x;
    case ACT_THRESHOLDED_RELU: return x > a->alpha ? x : 0;
    case ACT_SCALED_TANH: return a->alpha * tanh(a->beta * x);
    case ACT_HARD_SIGMOID: {
        double v = a->alpha * x + a->beta;
        return v < 0 ? 0 : v > 1 ? 1 : v;
    }
    case ACT_ELU: return x >= 0 ? x : a->alpha * (exp(x) - 1);
    case ACT_SOFTSIGN: return x / (1 + fabs(x));
    case ACT_SOFTPLUS: return x > 30 ? x : log1p(exp(x));
    default: return x;
    }
}

static double clip_act(const rnn_params *p, const activation *a, double x) {
    if (p->has_clip) x = x < -p->clip ? -p->clip : x > p->clip ? p->clip : x;
    return activate(a, x);
}

/* ---- shapes ---- */

typedef struct rnn_shape {
    int64_t seq, batch, input, hidden, gh; /* gh = n_gates * hidden */
    int dirs;
} rnn_shape;

/* The optional input i, or NULL. */
static const inf_tensor *opt_input(const inf__kernel_ctx *ctx, int i) {
    return i < ctx->n_in ? ctx->in[i] : NULL;
}

static bool wants_output(const inf__kernel_ctx *ctx, int i) {
    return i < ctx->n_out && i < ctx->node->n_outputs && ctx->node->outputs[i] >= 0;
}

/* Checks that t (named name) has dtype dt and the given shape. */
static inf_status check_shape(inf__kernel_ctx *ctx, const char *name, const inf_tensor *t,
                              inf_dtype dt, int ndim, const int64_t *dims) {
    char b1[96], b2[96];
    if (t->dtype != dt)
        return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected X's dtype %s, got %s", name,
                                 inf_dtype_name(dt), inf_dtype_name(t->dtype));
    bool ok = t->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++) ok = t->dims[i] == dims[i];
    if (!ok)
        return inf__kernel_error(ctx, INF_ESHAPE, "input %s: expected shape %s, got %s", name,
                                 inf__shape_str(ndim, dims, b1, sizeof b1),
                                 inf__shape_str(t->ndim, t->dims, b2, sizeof b2));
    return INF_OK;
}

static inf_status rnn_check(inf__kernel_ctx *ctx, const rnn_params *p, rnn_shape *s) {
    char buf[96];
    const inf_tensor *x = ctx->in[0], *w = opt_input(ctx, 1), *r = opt_input(ctx, 2);
    inf_dtype dt = x->dtype;
    if (dt != INF_DTYPE_F32 && dt != INF_DTYPE_F64 && dt != INF_DTYPE_F16)
        return inf__kernel_error(ctx, INF_ETYPE, "input X: expected float32, float64 or float16, got %s",
                                 inf_dtype_name(dt));
    if (!w || !r) return inf__kernel_error(ctx, INF_EINVAL, "inputs W and R are required");
    if (x->ndim != 3)
        return inf__kernel_error(ctx, INF_ESHAPE, "input X: expected rank 3 (%s), got %s",
                                 p->batch_major ? "[batch, seq, input]" : "[seq, batch, input]",
                                 inf__shape_str(x->ndim, x->dims, buf, sizeof buf));
    if (r->ndim != 3)
        return inf__kernel_error(ctx, INF_ESHAPE, "input R: expected rank 3, got %s",
                                 inf__shape_str(r->ndim, r->dims, buf, sizeof buf));
    s->seq = x->dims[p->batch_major ? 1 : 0];
    s->batch = x->dims[p->batch_major ? 0 : 1];
    s->input = x->dims[2];
    s->hidden = r->dims[2];
    s->gh = p->n_gates * s->hidden;
    s->dirs = p->n_dirs;
    if (p->hidden_size && p->hidden_size != s->hidden)
        return inf__kernel_error(ctx, INF_ESHAPE, "hidden_size = %lld but R is %s",
                                 (long long)p->hidden_size,
                                 inf__shape_str(r->ndim, r->dims, buf, sizeof buf));
    int64_t wd[3] = {s->dirs, s->gh, s->input}, rd[3] = {s->dirs, s->gh, s->hidden};
    int64_t bd[2] = {s->dirs, 2 * s->gh}, pd[2] = {s->dirs, 3 * s->hidden};
    int64_t hd[3] = {s->dirs, s->batch, s->hidden};
    if (p->batch_major) hd[0] = s->batch, hd[1] = s->dirs;
    inf_status st;
    if ((st = check_shape(ctx, "W", w, dt, 3, wd)) != INF_OK) return st;
    if ((st = check_shape(ctx, "R", r, dt, 3, rd)) != INF_OK) return st;
    const inf_tensor *b = opt_input(ctx, 3), *h0 = opt_input(ctx, 5);
    if (b && (st = check_shape(ctx, "B", b, dt, 2, bd)) != INF_OK) return st;
    if (h0 && (st = check_shape(ctx, "initial_h", h0, dt, 3, hd)) != INF_OK) return st;
    if (p->cell == CELL_LSTM) {
        const inf_tensor *c0 = opt_input(ctx, 6), *pp = opt_input(ctx, 7);
        if (c0 && (st = check_shape(ctx, "initial_c", c0, dt, 3, hd)) != INF_OK) return st;
        if (pp && (st = check_shape(ctx, "P", pp, dt, 2, pd)) != INF_OK) return st;
    }
    const inf_tensor *sl = opt_input(ctx, 4);
    if (sl) {
        if (sl->dtype != INF_DTYPE_I32 && sl->dtype != INF_DTYPE_I64)
            return inf__kernel_error(ctx, INF_ETYPE, "input sequence_lens: expected int32, got %s",
                                     inf_dtype_name(sl->dtype));
        if (sl->ndim != 1 || sl->dims[0] != s->batch)
            return inf__kernel_error(ctx, INF_ESHAPE, "input sequence_lens: expected shape [%lld], got %s",
                                     (long long)s->batch,
                                     inf__shape_str(sl->ndim, sl->dims, buf, sizeof buf));
        for (int64_t i = 0; i < s->batch; i++) {
            int64_t len = inf__tensor_get_i64(sl, i);
            if (len < 0 || len > s->seq)
                return inf__kernel_error(ctx, INF_ERANGE,
                                         "input sequence_lens[%lld] = %lld, must be in [0, %lld]",
                                         (long long)i, (long long)len, (long long)s->seq);
        }
    }
    return INF_OK;
}

/* ---- the recurrence ---- */

/* Weights of one direction, in double. */
typedef struct dir_weights {
    const double *w, *r;   /* [gh, input], [gh, hidden] */
    const double *wb, *rb; /* [gh] each (zeros when B is absent) */
    const double *peep;    /* [3 * hidden] (zeros when P is absent) */
} dir_weights;

/* Work vectors for one (direction, batch) sequence. */
typedef struct rnn_work {
    double *x, *h, *c, *gates, *tmp; /* input, hidden, hidden, gh, hidden */
} rnn_work;

/* out[j] = bias[j] + sum_k m[j, k] * v[k] for j < rows */
static void matvec_add(int64_t rows, int64_t cols, const double *m, const double *v,
                       const double *bias, double *out) {
    for (int64_t j = 0; j < rows; j++) {
        const double *row = m + j * cols;
        double acc = bias ? bias[j] : 0;
        for (int64_t k = 0; k < cols; k++) acc += row[k] * v[k];
        out[j] += acc;
    }
}

static void rnn_step(const rnn_params *p, const activation *acts, const rnn_shape *s,
                     const dir_weights *dw, rnn_work *wk) {
    int64_t H = s->hidden;
    for (int64_t j = 0; j < H; j++) wk->gates[j] = 0;
    matvec_add(H, s->input, dw->w, wk->x, dw->wb, wk->gates);
    matvec_add(H, H, dw->r, wk->h, dw->rb, wk->gates);
    for (int64_t j = 0; j < H; j++) wk->h[j] = clip_act(p, &acts[0], wk->gates[j]);
}

static void gru_step(const rnn_params *p, const activation *acts, const rnn_shape *s,
                     const dir_weights *dw, rnn_work *wk) {
    int64_t H = s->hidden, I = s->input;
    double *z = wk->gates, *r = z + H, *hh = r + H;
    for (int64_t j = 0; j < s->gh; j++) wk->gates[j] = 0;
    /* z and r: both halves at once */
    matvec_add(2 * H, I, dw->w, wk->x, dw->wb, wk->gates);
    matvec_add(2 * H, H, dw->r, wk->h, dw->rb, wk->gates);
    for (int64_t j = 0; j < 2 * H; j++) wk->gates[j] = clip_act(p, &acts[0], wk->gates[j]);
    /* candidate */
    matvec_add(H, I, dw->w + 2 * H * I, wk->x, dw->wb + 2 * H, hh);
    for (int64_t j = 0; j < H; j++) wk->tmp[j] = 0;
    if (p->linear_before_reset) {
        matvec_add(H, H, dw->r + 2 * H * H, wk->h, dw->rb + 2 * H, wk->tmp);
        for (int64_t j = 0; j < H; j++) hh[j] += r[j] * wk->tmp[j];
    } else {
        double *rh = wk->c; /* GRU has no cell state: reuse it for r (.) H */
        for (int64_t j = 0; j < H; j++) rh[j] = r[j] * wk->h[j];
        matvec_add(H, H, dw->r + 2 * H * H, rh, dw->rb + 2 * H, wk->tmp);
        for (int64_t j = 0; j < H; j++) hh[j] += wk->tmp[j];
    }
    for (int64_t j = 0; j < H; j++) {
        double cand = clip_act(p, &acts[1], hh[j]);
        wk->h[j] = (1 - z[j]) * cand + z[j] * wk->h[j];
    }
}

static void lstm_step(const rnn_params *p, const activation *acts, const rnn_shape *s,
                      const dir_weights *dw, rnn_work *wk) {
    int64_t H = s->hidden;
    double *gi = wk->gates, *go = gi + H, *gf = go + H, *gc = gf + H;
    const double *pi = dw->peep, *po = pi + H, *pf = po + H;
    for (int64_t j = 0; j < s->gh; j++) wk->gates[j] = 0;
    matvec_add(s->gh, s->input, dw->w, wk->x, dw->wb, wk->gates);
    matvec_add(s->gh, H, dw->r, wk->h, dw->rb, wk->gates);
    for (int64_t j = 0; j < H; j++) {
        double c_prev = wk->c[j];
        double i = clip_act(p, &acts[0], gi[j] + pi[j] * c_prev);
        double f = p->input_forget ? 1 - i : clip_act(p, &acts[0], gf[j] + pf[j] * c_prev);
        double cand = clip_act(p, &acts[1], gc[j]);
        double c = f * c_prev + i * cand;
        double o = clip_act(p, &acts[0], go[j] + po[j] * c);
        wk->c[j] = c;
        wk->h[j] = o * clip_act(p, &acts[2], c);
    }
}

/* Tensor positions for the layout. */
static int64_t x_offset(const rnn_params *p, const rnn_shape *s, int64_t t, int64_t b) {
    return (p->batch_major ? b * s->seq + t : t * s->batch + b) * s->input;
}

static int64_t y_offset(const rnn_params *p, const rnn_shape *s, int64_t t, int d, int64_t b) {
    return (p->batch_major ? (b * s->seq + t) * s->dirs + d : (t * s->dirs + d) * s->batch + b) *
           s->hidden;
}

static int64_t state_offset(const rnn_params *p, const rnn_shape *s, int d, int64_t b) {
    return (p->batch_major ? b * s->dirs + d : d * s->batch + b) * s->hidden;
}

static void load_vec(const inf_tensor *t, int64_t off, int64_t n, double *dst) {
    if (!t) {
        for (int64_t i = 0; i < n; i++) dst[i] = 0;
        return;
    }
    if (t->dtype == INF_DTYPE_F32)
        for (int64_t i = 0; i < n; i++) dst[i] = ((const float *)t->data)[off + i];
    else
        for (int64_t i = 0; i < n; i++) dst[i] = inf__tensor_get_f64(t, off + i);
}

static void store_vec(inf_tensor *t, int64_t off, int64_t n, const double *src) {
    if (!t) return;
    if (t->dtype == INF_DTYPE_F32)
        for (int64_t i = 0; i < n; i++) ((float *)t->data)[off + i] = (float)src[i];
    else
        for (int64_t i = 0; i < n; i++) inf__tensor_set_f64(t, off + i, src[i]);
}

typedef struct rnn_outputs {
    inf_tensor *y, *y_h, *y_c;
} rnn_outputs;

/* Runs direction d for batch entry b over its valid steps. */
static void run_sequence(inf__kernel_ctx *ctx, const rnn_params *p, const rnn_shape *s, int d,
                         int64_t b, const dir_weights *dw, rnn_work *wk, const rnn_outputs *o) {
    const inf_tensor *x = ctx->in[0], *sl = opt_input(ctx, 4);
    bool reverse = p->direction == DIR_REVERSE || d == 1;
    const activation *acts = p->acts[d];
    int64_t len = sl ? inf__tensor_get_i64(sl, b) : s->seq;
    load_vec(opt_input(ctx, 5), state_offset(p, s, d, b), s->hidden, wk->h);
    load_vec(p->cell == CELL_LSTM ? opt_input(ctx, 6) : NULL, state_offset(p, s, d, b),
             s->hidden, wk->c);
    for (int64_t step = 0; step < len; step++) {
        int64_t t = reverse ? len - 1 - step : step;
        load_vec(x, x_offset(p, s, t, b), s->input, wk->x);
        if (p->cell == CELL_RNN) rnn_step(p, acts, s, dw, wk);
        else if (p->cell == CELL_GRU) gru_step(p, acts, s, dw, wk);
        else lstm_step(p, acts, s, dw, wk);
        store_vec(o->y, y_offset(p, s, t, d, b), s->hidden, wk->h);
    }
    store_vec(o->y_h, state_offset(p, s, d, b), s->hidden, wk->h);
    store_vec(o->y_c, state_offset(p, s, d, b), s->hidden, wk->c);
}

static inf_status make_outputs(inf__kernel_ctx *ctx, const rnn_params *p, const rnn_shape *s,
                               rnn_outputs *o) {
    inf_dtype dt = ctx->in[0]->dtype;
    int64_t yd[4] = {s->seq, s->dirs, s->batch, s->hidden};
    int64_t hd[3] = {s->dirs, s->batch, s->hidden};
    if (p->batch_major) {
        yd[0] = s->batch, yd[1] = s->seq, yd[2] = s->dirs;
        hd[0] = s->batch, hd[1] = s->dirs;
    }
    inf_status st;
    memset(o, 0, sizeof *o);
    if (wants_output(ctx, 0)) {
        if ((st = inf__kernel_output(ctx, 0, dt, 4, yd, &o->y)) != INF_OK) return st;
        memset(o->y->data, 0, inf_tensor_nbytes(o->y)); /* steps past sequence_lens */
    }
    if (wants_output(ctx, 1) && (st = inf__kernel_output(ctx, 1, dt, 3, hd, &o->y_h)) != INF_OK)
        return st;
    if (p->cell == CELL_LSTM && wants_output(ctx, 2) &&
        (st = inf__kernel_output(ctx, 2, dt, 3, hd, &o->y_c)) != INF_OK)
        return st;
    return INF_OK;
}

/* The reference: every dtype, in double, one (direction, batch) sequence at
 * a time.  The float32 fast path (rnn_fast_run) is tested against it. */
static inf_status rnn_run_ref(inf__kernel_ctx *ctx, const rnn_params *p, const rnn_shape s_in,
                              const rnn_outputs o) {
    rnn_shape s = s_in;

    /* per direction: W, R, Wb, Rb, P in one block; then the work vectors */
    int64_t per_dir = s.gh * s.input + s.gh * s.hidden + 2 * s.gh + 3 * s.hidden;
    int64_t work = s.input + 3 * s.hidden + s.gh;
    double *weights = inf__kernel_scratch(ctx, (size_t)(s.dirs * per_dir + work + 1) * sizeof(double));
    if (!weights) return INF_ENOMEM;
    dir_weights dw[2];
    const inf_tensor *b = opt_input(ctx, 3), *peep = p->cell == CELL_LSTM ? opt_input(ctx, 7) : NULL;
    double *at = weights;
    for (int d = 0; d < s.dirs; d++) {
        double *w = at, *r = w + s.gh * s.input, *wb = r + s.gh * s.hidden, *rb = wb + s.gh;
        double *pp = rb + s.gh;
        load_vec(ctx->in[1], d * s.gh * s.input, s.gh * s.input, w);
        load_vec(ctx->in[2], d * s.gh * s.hidden, s.gh * s.hidden, r);
        load_vec(b, d * 2 * s.gh, s.gh, wb);
        load_vec(b, d * 2 * s.gh + s.gh, s.gh, rb);
        load_vec(peep, d * 3 * s.hidden, 3 * s.hidden, pp);
        dw[d] = (dir_weights){w, r, wb, rb, pp};
        at += per_dir;
    }
    rnn_work wk = {at, at + s.input, at + s.input + s.hidden, at + s.input + 2 * s.hidden,
                   at + s.input + 2 * s.hidden + s.gh};
    for (int d = 0; d < s.dirs; d++)
        for (int64_t bi = 0; bi < s.batch; bi++) run_sequence(ctx, p, &s, d, bi, &dw[d], &wk, &o);
    return INF_OK;
}

/* ======================================================================== */
/*  float32 fast path                                                        */
/* ======================================================================== */
/*
 * Same equations, float32 throughout:
 *   1. G = X * W^T for every time step, batch entry and direction in one
 *      GEMM (W of all directions is one [dirs*gh, input] matrix; W packed at
 *      load when constant), plus Wb + Rb (GRU with linear_before_reset: Rbh
 *      is added to H*Rh^T instead, since rt multiplies it).
 *   2. Per step and direction, HR = H * R^T over all batch rows (R packed
 *      at load; batch 1 takes the GEMM's few-rows path, a streamed GEMV);
 *      GRU without linear_before_reset does z, r first and then
 *      (r (.) H) * Rh^T.
 *   3. The gate non-linearities per batch row over whole gate vectors:
 *      Sigmoid and Tanh through vmath (ops/vmath.h), the rarer activations
 *      element by element in double; clip clamps first.  Rows are split
 *      across the pool when the batch is large enough.
 * Rows past their sequence_lens are computed by the GEMM but not updated.
 * Rounding differs from the reference (float32 sums, vmath's functions):
 * tests/kernels/test_rnn.c bounds the difference.
 */

typedef struct rnn_packed {
    const float *w;       /* W^T of all directions, [input, dirs*gh] packed; NULL: none */
    const float *r[2][2]; /* per direction: R^T (GRU without linear_before_reset: the
                             z,r part, then Rh^T) */
    const void *w_src, *r_src;
} rnn_packed;

/* Packs constant float32 W and R for the AVX2 GEMM (nothing when they are
 * not constants or the CPU lacks AVX2: the run then uses inf__ops_sgemm). */
static inf_status rnn_pack_weights(inf__node *node, inf__arena *arena, rnn_params *p) {
    const inf_tensor *w = inf__node_constant_input(node, 1), *r = inf__node_constant_input(node, 2);
    if (!w || !r || w->dtype != INF_DTYPE_F32 || r->dtype != INF_DTYPE_F32 || w->ndim != 3 || r->ndim != 3 ||
        !w->data || !r->data || w->dims[0] != p->n_dirs || r->dims[0] != p->n_dirs)
        return INF_OK;
    int64_t gh = w->dims[1], input = w->dims[2], hidden = r->dims[2];
    if (r->dims[1] != gh || gh != p->n_gates * hidden) return INF_OK;
    rnn_packed *pk = inf__op_params(arena, rnn_packed);
    if (!pk) return INF_ENOMEM;
    inf_status st = inf__ops_sgemm_prepack(arena, true, input, p->n_dirs * gh, w->data, input, &pk->w);
    bool split = p->cell == CELL_GRU && !p->linear_before_reset; /* Rh^T apart: (r (.) H) * Rh^T */
    int64_t n0 = split ? 2 * hidden : gh;
    for (int d = 0; st == INF_OK && d < p->n_dirs; d++) {
        const float *rd = (const float *)r->data + d * gh * hidden;
        st = inf__ops_sgemm_prepack(arena, true, hidden, n0, rd, hidden, &pk->r[d][0]);
        if (st == INF_OK && split)
            st = inf__ops_sgemm_prepack(arena, true, hidden, hidden, rd + n0 * hidden, hidden, &pk->r[d][1]);
    }
    if (st != INF_OK) return st;
    pk->w_src = w->data, pk->r_src = r->data;
    p->packed = pk;
    return INF_OK;
}

/* C[m, n] = A[m, k] * B^T + beta * C with B [n, k] row-major (ldb = k),
 * packed copy bp when there is one. */
static void gemm_bt(inf__pool *pool, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                    const float *b, const float *bp, float beta, float *c, int64_t ldc) {
#if defined(__x86_64__)
    if (bp) {
        inf__ops_sgemm_packed_avx2(pool, false, m, n, k, 1.0f, a, lda, bp, beta, c, ldc);
        return;
    }
#else
    (void)bp;
#endif
    inf__ops_sgemm(pool, false, true, m, n, k, 1.0f, a, lda, b, k, beta, c, ldc);
}

/* Buffers of one fast run (scratch). */
typedef struct fast_run {
    const rnn_params *p;
    const rnn_shape *s;
    const inf__vmath *vm;
    const float *wt, *rt;     /* W and R data */
    const float *rp[2][2];    /* packed R pieces or NULL */
    const float *peep;        /* [dirs, 3H] or NULL */
    const float *rbh;         /* GRU linear_before_reset: Rbh per direction [dirs, gh] (Rb) */
    const inf_tensor *sl;
    float *g;                 /* [rows, dirs*gh] X*W^T + biases */
    float *hr;                /* [batch, gh] H*R^T */
    float *act;               /* [batch, gh] gate work */
    float *h, *c;             /* [dirs, batch, H] states */
    float *rh;                /* [batch, H] GRU r (.) H */
    float *y;                 /* Y data or NULL */
    bool same_len;            /* every batch entry has the same length */
    bool hr_in_g;             /* this step's H*R^T was added to G in place (not in hr) */
    int d;                    /* current direction */
    int64_t step;
} fast_run;

/* x <- act(clip(x)) over n floats. */
static void act_vec(const rnn_params *p, const activation *a, const inf__vmath *vm, float *x, int64_t n) {
    if (p->has_clip) {
        float lim = (float)p->clip;
        for (int64_t j = 0; j < n; j++) x[j] = x[j] < -lim ? -lim : x[j] > lim ? lim : x[j];
    }
    if (a->kind == ACT_SIGMOID) vm->sigmoid(x, x, n);
    else if (a->kind == ACT_TANH) vm->tanh(x, x, n);
    else
        for (int64_t j = 0; j < n; j++) x[j] = (float)activate(a, x[j]);
}

static int64_t seq_len(const fast_run *f, int64_t b) {
    return f->sl ? inf__tensor_get_i64(f->sl, b) : f->s->seq;
}

/* Row of G (and of X) for time t, batch entry b. */
static int64_t g_row(const fast_run *f, int64_t t, int64_t b) {
    return f->p->batch_major ? b * f->s->seq + t : t * f->s->batch + b;
}

/* The time step batch entry b is at in the current step, or -1 when its
 * sequence has ended. */
static int64_t step_time(const fast_run *f, int64_t b) {
    int64_t len = seq_len(f, b);
    if (f->step >= len) return -1;
    return f->p->direction == DIR_REVERSE || f->d == 1 ? len - 1 - f->step : f->step;
}

static const float *g_at(const fast_run *f, int64_t t, int64_t b) {
    return f->g + g_row(f, t, b) * f->s->dirs * f->s->gh + f->d * f->s->gh;
}

static void store_y(const fast_run *f, int64_t t, int64_t b, const float *h) {
    if (f->y) memcpy(f->y + y_offset(f->p, f->s, t, f->d, b), h, (size_t)f->s->hidden * sizeof(float));
}

/* ---- per-row cell updates (rows [begin, end) of the current step) ---- */

static void rnn_rows(void *arg, int64_t begin, int64_t end) {
    const fast_run *f = arg;
    int64_t H = f->s->hidden;
    for (int64_t b = begin; b < end; b++) {
        int64_t t = step_time(f, b);
        if (t < 0) continue;
        const float *g = g_at(f, t, b), *hr = f->hr + b * H;
        float *h = f->h + (f->d * f->s->batch + b) * H;
        if (f->hr_in_g) memcpy(h, g, (size_t)H * sizeof(float));
        else
            for (int64_t j = 0; j < H; j++) h[j] = g[j] + hr[j];
        act_vec(f->p, &f->p->acts[f->d][0], f->vm, h, H);
        store_y(f, t, b, h);
    }
}

/* LSTM i and f gates with peepholes (pi, pf may be NULL) or input_forget. */
static void lstm_if_gates(const rnn_params *p, const activation *acts, const inf__vmath *vm, const float *pi,
                          const float *pf, const float *c, float *ai, float *af, int64_t H) {
    if (pi)
        for (int64_t j = 0; j < H; j++) ai[j] += pi[j] * c[j], af[j] += pf[j] * c[j];
    act_vec(p, &acts[0], vm, ai, H);
    if (p->input_forget)
        for (int64_t j = 0; j < H; j++) af[j] = 1.0f - ai[j];
    else act_vec(p, &acts[0], vm, af, H);
}

static void lstm_rows(void *arg, int64_t begin, int64_t end) {
    const fast_run *f = arg;
    const rnn_params *p = f->p;
    const activation *acts = p->acts[f->d];
    int64_t H = f->s->hidden, gh = f->s->gh;
    const float *pi = f->peep ? f->peep + f->d * 3 * H : NULL, *po = pi ? pi + H : NULL, *pf = pi ? pi + 2 * H : NULL;
    for (int64_t b = begin; b < end; b++) {
        int64_t t = step_time(f, b);
        if (t < 0) continue;
        const float *g = g_at(f, t, b), *hr = f->hr + b * gh;
        /* the gates in place in G's row when the product went there */
        float *a = f->hr_in_g ? (float *)g : f->act + b * gh, *ai = a, *ao = a + H, *af = a + 2 * H, *ac = a + 3 * H;
        float *h = f->h + (f->d * f->s->batch + b) * H, *c = f->c + (f->d * f->s->batch + b) * H;
        if (!f->hr_in_g)
            for (int64_t j = 0; j < gh; j++) a[j] = g[j] + hr[j];
        /* no peepholes: o does not wait for Ct, so i, o, f in one pass */
        bool one_pass = !pi && !p->input_forget;
        if (one_pass) act_vec(p, &acts[0], f->vm, ai, 3 * H);
        else lstm_if_gates(p, acts, f->vm, pi, pf, c, ai, af, H);
        act_vec(p, &acts[1], f->vm, ac, H);
        for (int64_t j = 0; j < H; j++) c[j] = af[j] * c[j] + ai[j] * ac[j];
        if (po)
            for (int64_t j = 0; j < H; j++) ao[j] += po[j] * c[j];
        if (!one_pass) act_vec(p, &acts[0], f->vm, ao, H);
        memcpy(ac, c, (size_t)H * sizeof(float));
        act_vec(p, &acts[2], f->vm, ac, H);
        for (int64_t j = 0; j < H; j++) h[j] = ao[j] * ac[j];
        store_y(f, t, b, h);
    }
}

/* GRU phase 1: z and r into act; without linear_before_reset also
 * rh = r (.) H. */
static void gru_zr_rows(void *arg, int64_t begin, int64_t end) {
    const fast_run *f = arg;
    int64_t H = f->s->hidden, gh = f->s->gh;
    for (int64_t b = begin; b < end; b++) {
        int64_t t = step_time(f, b);
        if (t < 0) continue;
        const float *g = g_at(f, t, b), *hr = f->hr + b * gh;
        float *a = f->act + b * gh, *h = f->h + (f->d * f->s->batch + b) * H;
        for (int64_t j = 0; j < 2 * H; j++) a[j] = g[j] + hr[j];
        act_vec(f->p, &f->p->acts[f->d][0], f->vm, a, 2 * H);
        if (!f->p->linear_before_reset)
            for (int64_t j = 0; j < H; j++) f->rh[b * H + j] = a[H + j] * h[j];
    }
}

/* GRU phase 2: the candidate from hr's h part, then H. */
static void gru_h_rows(void *arg, int64_t begin, int64_t end) {
    const fast_run *f = arg;
    int64_t H = f->s->hidden, gh = f->s->gh;
    const float *rbh = f->rbh ? f->rbh + f->d * 2 * gh + gh + 2 * H : NULL;
    for (int64_t b = begin; b < end; b++) {
        int64_t t = step_time(f, b);
        if (t < 0) continue;
        const float *g = g_at(f, t, b) + 2 * H, *hr = f->hr + b * gh + 2 * H;
        float *a = f->act + b * gh, *z = a, *r = a + H, *hh = a + 2 * H;
        float *h = f->h + (f->d * f->s->batch + b) * H;
        if (f->p->linear_before_reset)
            for (int64_t j = 0; j < H; j++) hh[j] = g[j] + r[j] * (hr[j] + (rbh ? rbh[j] : 0.0f));
        else
            for (int64_t j = 0; j < H; j++) hh[j] = g[j] + hr[j];
        act_vec(f->p, &f->p->acts[f->d][1], f->vm, hh, H);
        for (int64_t j = 0; j < H; j++) h[j] = (1.0f - z[j]) * hh[j] + z[j] * h[j];
        store_y(f, t, b, h);
    }
}

/* Rows through the pool when a step has enough of them to pay a hand-off. */
static void for_rows(inf__pool *pool, const fast_run *f, inf__range_fn fn) {
    int64_t per_row = f->s->gh * 8 + 1, min_rows = 16384 / per_row + 1;
    if (f->s->batch < 2 * min_rows) fn((void *)f, 0, f->s->batch);
    else inf__pool_range(pool, f->s->batch, min_rows, fn, (void *)f);
}

/* One time step of direction f->d for every batch row. */
static void fast_step(inf__pool *pool, fast_run *f) {
    const rnn_shape *s = f->s;
    int64_t H = s->hidden, gh = s->gh;
    const float *hd = f->h + f->d * s->batch * H, *rd = f->rt + f->d * gh * H;
    bool lbr = f->p->linear_before_reset;
    if (f->p->cell != CELL_GRU) {
        /* all rows at one time step: accumulate straight into G's rows
         * (G + acc; the same bits as G + hr while H fits one k block) */
        f->hr_in_g = f->same_len;
        if (f->hr_in_g) {
            int64_t ld = (f->p->batch_major ? s->seq : 1) * s->dirs * gh;
            gemm_bt(pool, s->batch, gh, H, hd, H, rd, f->rp[f->d][0], 1.0f, (float *)g_at(f, step_time(f, 0), 0), ld);
        } else {
            gemm_bt(pool, s->batch, gh, H, hd, H, rd, f->rp[f->d][0], 0.0f, f->hr, gh);
        }
        for_rows(pool, f, f->p->cell == CELL_LSTM ? lstm_rows : rnn_rows);
        return;
    }
    /* GRU: with linear_before_reset all gates in one product */
    gemm_bt(pool, s->batch, lbr ? gh : 2 * H, H, hd, H, rd, f->rp[f->d][0], 0.0f, f->hr, gh);
    for_rows(pool, f, gru_zr_rows);
    if (!lbr) gemm_bt(pool, s->batch, H, H, f->rh, H, rd + 2 * H * H, f->rp[f->d][1], 0.0f, f->hr + 2 * H, gh);
    for_rows(pool, f, gru_h_rows);
}

/* sum[dirs*gh] = Wb + Rb per direction (GRU with linear_before_reset: not
 * Rbh, which rt multiplies). */
static void bias_sum(const fast_run *f, const inf_tensor *bias, float *sum) {
    const rnn_shape *s = f->s;
    const float *bt = bias->data;
    bool skip_rbh = f->p->cell == CELL_GRU && f->p->linear_before_reset;
    for (int d = 0; d < s->dirs; d++)
        for (int64_t j = 0; j < s->gh; j++) {
            float rb = skip_rbh && j >= 2 * s->hidden ? 0.0f : bt[d * 2 * s->gh + s->gh + j];
            sum[d * s->gh + j] = bt[d * 2 * s->gh + j] + rb;
        }
}

/* G = X * W^T + the biases, for all steps and directions: the bias added
 * in the GEMM's store when W is packed, else in a pass over G. */
static void input_product(inf__pool *pool, const fast_run *f, const float *x, const float *wp,
                          const inf_tensor *bias) {
    const rnn_shape *s = f->s;
    int64_t rows = s->seq * s->batch, n = s->dirs * s->gh;
    float *sum = f->act; /* [dirs*gh], free until the first step */
    if (bias) bias_sum(f, bias, sum);
#if defined(__x86_64__)
    if (wp) {
        inf__gemm_epilogue ep = {.bias = bias ? sum : NULL};
        inf__ops_sgemm_packed_ep_avx2(pool, false, rows, n, s->input, 1.0f, x, s->input, wp, 0.0f, f->g, n, &ep);
        return;
    }
#endif
    gemm_bt(pool, rows, n, s->input, x, s->input, f->wt, NULL, 0.0f, f->g, n);
    for (int64_t r = 0; bias && r < rows; r++) {
        float *row = f->g + r * n;
        for (int64_t j = 0; j < n; j++) row[j] += sum[j];
    }
}

/* Initial states into f->h / f->c ([dirs, batch, H]). */
static void load_states(const fast_run *f, const inf_tensor *t, float *dst) {
    const rnn_shape *s = f->s;
    size_t bytes = (size_t)s->hidden * sizeof(float);
    for (int d = 0; d < s->dirs; d++)
        for (int64_t b = 0; b < s->batch; b++) {
            float *row = dst + (d * s->batch + b) * s->hidden;
            if (t) memcpy(row, (const float *)t->data + state_offset(f->p, s, d, b), bytes);
            else memset(row, 0, bytes);
        }
}

static void store_states(const fast_run *f, inf_tensor *t, const float *src) {
    if (!t) return;
    const rnn_shape *s = f->s;
    for (int d = 0; d < s->dirs; d++)
        for (int64_t b = 0; b < s->batch; b++)
            memcpy((float *)t->data + state_offset(f->p, s, d, b), src + (d * s->batch + b) * s->hidden,
                   (size_t)s->hidden * sizeof(float));
}

/* Scratch for a fast run: one block carved into f's buffers. */
static inf_status fast_buffers(inf__kernel_ctx *ctx, fast_run *f) {
    const rnn_shape *s = f->s;
    int64_t rows = s->seq * s->batch, n = s->dirs * s->gh;
    int64_t act = s->batch * s->gh > n ? s->batch * s->gh : n;
    int64_t total = rows * n + 2 * s->batch * s->gh + act + 2 * s->dirs * s->batch * s->hidden +
                    s->batch * s->hidden + 16;
    float *m = inf__kernel_scratch(ctx, (size_t)total * sizeof(float));
    if (!m) return INF_ENOMEM;
    f->g = m, m += rows * n;
    f->hr = m, m += s->batch * s->gh;
    f->act = m, m += act;
    f->h = m, m += s->dirs * s->batch * s->hidden;
    f->c = m, m += s->dirs * s->batch * s->hidden;
    f->rh = m;
    return INF_OK;
}

static inf_status rnn_fast_run(inf__kernel_ctx *ctx, const rnn_params *p, const rnn_shape *s,
                               const rnn_outputs *o) {
    fast_run f = {.p = p, .s = s, .vm = inf__vmath_best(), .sl = opt_input(ctx, 4)};
    const inf_tensor *w = ctx->in[1], *r = ctx->in[2], *bias = opt_input(ctx, 3);
    const rnn_packed *pk = p->packed;
    bool w_packed = pk && pk->w && w->data == pk->w_src, r_packed = pk && r->data == pk->r_src;
    f.wt = w->data, f.rt = r->data;
    for (int d = 0; d < s->dirs; d++)
        for (int i = 0; i < 2; i++) f.rp[d][i] = r_packed ? pk->r[d][i] : NULL;
    if (p->cell == CELL_LSTM && opt_input(ctx, 7)) f.peep = opt_input(ctx, 7)->data;
    if (p->cell == CELL_GRU && p->linear_before_reset && bias) f.rbh = bias->data;
    f.y = o->y ? o->y->data : NULL;
    inf_status st = fast_buffers(ctx, &f);
    if (st != INF_OK) return st;
    input_product(ctx->pool, &f, ctx->in[0]->data, w_packed ? pk->w : NULL, bias);
    load_states(&f, opt_input(ctx, 5), f.h);
    load_states(&f, p->cell == CELL_LSTM ? opt_input(ctx, 6) : NULL, f.c);
    int64_t max_len = 0; /* steps past every sequence's end are skipped */
    f.same_len = true;
    for (int64_t b = 0; b < s->batch; b++) {
        max_len = seq_len(&f, b) > max_len ? seq_len(&f, b) : max_len;
        f.same_len = f.same_len && seq_len(&f, b) == seq_len(&f, 0);
    }
    for (f.d = 0; f.d < s->dirs; f.d++)
        for (f.step = 0; f.step < max_len; f.step++) fast_step(ctx->pool, &f);
    store_states(&f, o->y_h, f.h);
    store_states(&f, o->y_c, f.c);
    return INF_OK;
}

static inf_status rnn_run(inf__kernel_ctx *ctx) {
    const rnn_params *p = ctx->node->params;
    rnn_shape s = {0};
    inf_status st = rnn_check(ctx, p, &s);
    if (st != INF_OK) return st;
    rnn_outputs o;
    if ((st = make_outputs(ctx, p, &s, &o)) != INF_OK) return st;
    if (ctx->in[0]->dtype == INF_DTYPE_F32) return rnn_fast_run(ctx, p, &s, &o);
    return rnn_run_ref(ctx, p, s, o);
}

const inf__op_impl op_rnn = {rnn_init, rnn_run};
