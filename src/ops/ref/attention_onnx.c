/*
 * attention_onnx.c -- ONNX's Attention operator (opsets 23-26), the
 * reference form (not the optimizer's internal ai.infera Attention of
 * attention.c, which fuses exported MatMul/Softmax chains).
 *
 *   Y [, present_key, present_value, qk_matmul_output] =
 *       Attention(Q, K, V [, attn_mask, past_key, past_value, nonpad_kv_seqlen])
 *   4-D: Q [B, Hq, S, D], K [B, Hkv, L, D], V [B, Hkv, L, Dv] -> Y [B, Hq, S, Dv]
 *   3-D: Q [B, S, Hq*D], K [B, L, Hkv*D], V [B, L, Hkv*Dv] with attributes
 *        q_num_heads / kv_num_heads -> Y [B, S, Hq*Dv]
 *   Hq a multiple of Hkv (grouped / multi-query attention: query head h reads
 *   key/value head h / (Hq / Hkv)).  past_key/past_value [B, Hkv, P, D] are
 *   put before K/V (present_* = the concatenation, T = P + L keys).
 *   scores = scale Q K^T (scale default 1/sqrt(D)), softcap c > 0:
 *   c tanh(scores / c); then the bias: attn_mask (bool: false -> -inf; or a
 *   float added; broadcast to [B, Hq, S, T], a shorter last axis padded with
 *   false / -inf), is_causal (query i sees key j iff j <= i + offset, offset =
 *   P, or nonpad_kv_seqlen[b] - S, or 0), nonpad_kv_seqlen (keys from
 *   nonpad[b] on hidden; opset 24+), the sliding window left/right_window_size
 *   (opset 25+, -1 = unbounded).  Y = softmax(scores + bias) V; a row whose
 *   every key is masked gives zeros.  qk_matmul_output: mode 0/1 the scores
 *   after softcap, 2 with the bias, 3 the softmax.
 * dtypes: Q, K, V, past_* and a float mask of one float type (float32,
 *   float64, float16, bfloat16); computed in double, outputs rounded once.
 *   softmax_precision is accepted (the softmax is always in double).
 * Deviations: none known.
 *
 * Two kernels.  The fast one (float32 only) is the fused attention kernel of
 * the optimizer's internal Attention (ops/attention.h: float32 sums, the
 * scale on K, AVX2/AVX-512 exp rows, (batch, query head) units on the pool),
 * taken when the node asks for nothing it lacks: no softcap, no sliding
 * window, no qk_matmul_output, no nonpad_kv_seqlen (decided at load), and at
 * run time float32 inputs and a mask (bool: turned into 0 / -inf; or float)
 * whose last axis covers every key.  It reads Q, K, V and writes Y in place
 * ([B, H, S, D], or 3-D [B, S, H*D]: query head h reads key/value head
 * h / (Hq / Hkv)); a past is concatenated with K/V into present_key/value
 * (or scratch) and read from there; is_causal is its causal flag at offset P
 * (query i sees keys j <= i + P, as here); a row whose every key is masked gives zeros, as here.
 * INFERA_LOG=debug names the kernel each node takes (and why not the fast
 * one); tests/conformance/test_attention_paths.sh asserts it.
 * The reference kernel (below) takes the rest, in double.
 *
 * DESIGN (reference): K and V (with the past) are copied once into double scratch
 * [B, Hkv, T, D]; each (b, query head) is a pool task unit that computes its
 * score rows in its own scratch row and writes its own slice of Y, so the
 * result never depends on the thread split.
 */
#include <math.h>
#include <string.h>

#include "core/core.h"
#include "ops/attention.h"
#include "ops/ops.h"

typedef struct att_params {
    int64_t q_heads, kv_heads; /* 3-D inputs; 0 when not given */
    int64_t mode;              /* qk_matmul_output_mode */
    int64_t left, right;       /* sliding window, -1 = unbounded */
    double scale;              /* 0: 1/sqrt(D) */
    double softcap;
    bool causal;
    const char *not_fast; /* why the node never takes the fused float32 kernel, or NULL */
} att_params;

static bool has_input(const inf__node *node, int i) { return i < node->n_inputs && node->inputs[i] >= 0; }

/* Why the node's attributes or wiring keep it off the fused kernel, or NULL. */
static const char *fast_refusal(const inf__node *node, const att_params *p) {
    if (p->softcap != 0) return "softcap";
    if (p->left >= 0 || p->right >= 0) return "a sliding window";
    if (node->n_outputs > 3 && node->outputs[3] >= 0) return "qk_matmul_output";
    if (has_input(node, 6)) return "nonpad_kv_seqlen";
    return NULL;
}

static inf_status att_init(inf__node *node, inf__arena *arena, inf_error *err) {
    att_params *p = inf__op_params(arena, att_params);
    if (!p) return INF_ENOMEM;
    p->q_heads = inf__attr_int(node, "q_num_heads", 0);
    p->kv_heads = inf__attr_int(node, "kv_num_heads", 0);
    p->mode = inf__attr_int(node, "qk_matmul_output_mode", 0);
    p->left = inf__attr_int(node, "left_window_size", -1);
    p->right = inf__attr_int(node, "right_window_size", -1);
    p->scale = inf__attr_float(node, "scale", 0.0f);
    p->softcap = inf__attr_float(node, "softcap", 0.0f);
    p->causal = inf__attr_int(node, "is_causal", 0) != 0;
    if (p->mode < 0 || p->mode > 3)
        return inf__node_error(node, err, INF_EMODEL, "attribute qk_matmul_output_mode must be 0-3, got %lld",
                               (long long)p->mode);
    if (p->left < -1 || p->right < -1)
        return inf__node_error(node, err, INF_EMODEL, "left/right_window_size must be -1 or >= 0");
    if (p->q_heads < 0 || p->kv_heads < 0)
        return inf__node_error(node, err, INF_EMODEL, "q_num_heads and kv_num_heads must be positive");
    p->not_fast = fast_refusal(node, p);
    node->params = p;
    return INF_OK;
}

/* The shapes of one run, all as 4-D [B, H, seq, head]. */
typedef struct att_shape {
    bool rank3;
    int64_t b, hq, hkv, s, l, p, t, d, dv; /* t = p + l */
} att_shape;

typedef struct att_job {
    const att_params *par;
    const att_shape *sh;
    const inf_tensor *q, *mask, *nonpad;
    const double *k, *v; /* [B, Hkv, T, D] / [.., Dv] */
    inf_tensor *y, *qk;
    double scale;
    int64_t mask_strides[4], mask_t; /* mask broadcast to [B, Hq, S, mask_t] */
    double *rows;                    /* per unit: scores and bias, 2 * T doubles */
} att_job;

static double q_at(const att_job *j, int64_t b, int64_t h, int64_t i, int64_t d) {
    const att_shape *s = j->sh;
    int64_t off = s->rank3 ? (b * s->s + i) * s->hq * s->d + h * s->d + d : ((b * s->hq + h) * s->s + i) * s->d + d;
    return inf__tensor_get_f64(j->q, off);
}

/* The bias of key k for query i of (b, h): 0, -inf or a float mask value. */
static double att_bias(const att_job *j, int64_t b, int64_t h, int64_t i, int64_t k) {
    const att_params *p = j->par;
    const att_shape *s = j->sh;
    double bias = 0;
    int64_t offset = s->p;
    if (j->nonpad) {
        int64_t valid = inf__tensor_get_i64(j->nonpad, b);
        if (k >= valid) return -INFINITY;
        if (!s->p) offset = valid - s->s;
    }
    if (p->causal && k > i + offset) return -INFINITY;
    if (p->left >= 0 && i + offset - k > p->left) return -INFINITY;
    if (p->right >= 0 && k - (i + offset) > p->right) return -INFINITY;
    if (j->mask) {
        if (k >= j->mask_t) return -INFINITY; /* padded: false / -inf */
        int64_t off = b * j->mask_strides[0] + h * j->mask_strides[1] + i * j->mask_strides[2] + k * j->mask_strides[3];
        if (j->mask->dtype == INF_DTYPE_BOOL) return ((const uint8_t *)j->mask->data)[off] ? 0 : -INFINITY;
        bias += inf__tensor_get_f64(j->mask, off);
    }
    return bias;
}

static void att_units(void *arg, int64_t begin, int64_t end) {
    const att_job *j = arg;
    const att_params *p = j->par;
    const att_shape *s = j->sh;
    for (int64_t u = begin; u < end; u++) {
        int64_t b = u / s->hq, h = u % s->hq, hk = h / (s->hq / s->hkv);
        double *score = j->rows + u * 2 * s->t, *bias = score + s->t;
        const double *kb = j->k + (b * s->hkv + hk) * s->t * s->d, *vb = j->v + (b * s->hkv + hk) * s->t * s->dv;
        for (int64_t i = 0; i < s->s; i++) {
            double max_bias = -INFINITY, max = -INFINITY, sum = 0;
            for (int64_t k = 0; k < s->t; k++) {
                double dot = 0;
                for (int64_t d = 0; d < s->d; d++) dot += q_at(j, b, h, i, d) * kb[k * s->d + d];
                dot *= j->scale;
                if (p->softcap > 0) dot = p->softcap * tanh(dot / p->softcap);
                score[k] = dot;
                bias[k] = att_bias(j, b, h, i, k);
                max_bias = fmax(max_bias, bias[k]);
            }
            int64_t qk_row = ((b * s->hq + h) * s->s + i) * s->t;
            if (j->qk && p->mode <= 1)
                for (int64_t k = 0; k < s->t; k++) inf__tensor_set_f64(j->qk, qk_row + k, score[k]);
            for (int64_t k = 0; k < s->t; k++) {
                score[k] += bias[k];
                max = fmax(max, score[k]);
            }
            if (j->qk && p->mode == 2)
                for (int64_t k = 0; k < s->t; k++) inf__tensor_set_f64(j->qk, qk_row + k, score[k]);
            bool all_masked = isinf(max_bias) && max_bias < 0;
            double safe = isinf(max) && max < 0 ? 0 : max;
            for (int64_t k = 0; k < s->t; k++) sum += score[k] = exp(score[k] - safe);
            for (int64_t k = 0; k < s->t; k++) score[k] = all_masked ? 0 : score[k] / (sum == 0 ? 1 : sum);
            if (j->qk && p->mode == 3)
                for (int64_t k = 0; k < s->t; k++) inf__tensor_set_f64(j->qk, qk_row + k, score[k]);
            for (int64_t e = 0; e < s->dv; e++) {
                double acc = 0;
                for (int64_t k = 0; k < s->t; k++) acc += score[k] * vb[k * s->dv + e];
                int64_t off = s->rank3 ? (b * s->s + i) * s->hq * s->dv + h * s->dv + e
                                       : ((b * s->hq + h) * s->s + i) * s->dv + e;
                inf__tensor_set_f64(j->y, off, acc);
            }
        }
    }
}

static bool att_float(inf_dtype t) {
    return t == INF_DTYPE_F32 || t == INF_DTYPE_F64 || t == INF_DTYPE_F16 || t == INF_DTYPE_BF16;
}

static const inf_tensor *att_opt(const inf__kernel_ctx *ctx, int i) { return i < ctx->n_in ? ctx->in[i] : NULL; }

/* Reads Q/K/V's shapes into s; checks ranks, heads and the past. */
static inf_status att_shapes(inf__kernel_ctx *ctx, const att_params *p, att_shape *s) {
    const inf_tensor *q = ctx->in[0], *k = ctx->in[1], *v = ctx->in[2], *pk = att_opt(ctx, 4), *pv = att_opt(ctx, 5);
    memset(s, 0, sizeof *s);
    for (int i = 0; i < 3; i++) {
        if (!att_float(ctx->in[i]->dtype) || ctx->in[i]->dtype != q->dtype)
            return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected a float type like Q's (%s), got %s",
                                     (const char *[]){"Q", "K", "V"}[i], inf_dtype_name(q->dtype),
                                     inf_dtype_name(ctx->in[i]->dtype));
        if (ctx->in[i]->ndim != q->ndim || (q->ndim != 3 && q->ndim != 4))
            return inf__kernel_error(ctx, INF_ESHAPE, "Q, K and V must all be 3-D or all 4-D (ranks %d, %d, %d)",
                                     q->ndim, k->ndim, v->ndim);
    }
    s->rank3 = q->ndim == 3;
    s->b = q->dims[0];
    if (s->rank3) {
        if (!p->q_heads || !p->kv_heads)
            return inf__kernel_error(ctx, INF_EMODEL, "3-D inputs need attributes q_num_heads and kv_num_heads");
        s->hq = p->q_heads, s->hkv = p->kv_heads;
        if (q->dims[2] % s->hq || k->dims[2] % s->hkv || v->dims[2] % s->hkv)
            return inf__kernel_error(ctx, INF_ESHAPE, "hidden sizes %lld/%lld/%lld do not split into %lld/%lld heads",
                                     (long long)q->dims[2], (long long)k->dims[2], (long long)v->dims[2],
                                     (long long)s->hq, (long long)s->hkv);
        s->s = q->dims[1], s->l = k->dims[1], s->d = q->dims[2] / s->hq, s->dv = v->dims[2] / s->hkv;
        if (k->dims[2] / s->hkv != s->d || v->dims[1] != s->l || k->dims[0] != s->b || v->dims[0] != s->b)
            return inf__kernel_error(ctx, INF_ESHAPE, "K/V shapes do not match Q's batch, head size or each other");
    } else {
        if (p->q_heads || p->kv_heads)
            return inf__kernel_error(ctx, INF_EMODEL, "q_num_heads and kv_num_heads are for 3-D inputs only");
        s->hq = q->dims[1], s->hkv = k->dims[1], s->s = q->dims[2], s->l = k->dims[2], s->d = q->dims[3],
        s->dv = v->dims[3];
        if (k->dims[0] != s->b || v->dims[0] != s->b || v->dims[1] != s->hkv || v->dims[2] != s->l ||
            k->dims[3] != s->d)
            return inf__kernel_error(ctx, INF_ESHAPE, "K/V shapes do not match Q's batch, head size or each other");
    }
    if (s->hkv < 1 || s->hq % s->hkv)
        return inf__kernel_error(ctx, INF_ESHAPE, "%lld query heads are not a multiple of %lld key/value heads",
                                 (long long)s->hq, (long long)s->hkv);
    if (!pk != !pv) return inf__kernel_error(ctx, INF_EMODEL, "past_key and past_value must be given together");
    if (pk) {
        if (att_opt(ctx, 6)) return inf__kernel_error(ctx, INF_EMODEL, "nonpad_kv_seqlen cannot be combined with a past cache");
        if (pk->dtype != q->dtype || pv->dtype != q->dtype || pk->ndim != 4 || pv->ndim != 4 || pk->dims[0] != s->b ||
            pk->dims[1] != s->hkv || pk->dims[3] != s->d || pv->dims[0] != s->b || pv->dims[1] != s->hkv ||
            pv->dims[2] != pk->dims[2] || pv->dims[3] != s->dv)
            return inf__kernel_error(ctx, INF_ESHAPE, "past_key/past_value: expected [B, kv heads, P, head size] of Q's type");
        s->p = pk->dims[2];
    }
    s->t = s->p + s->l;
    return INF_OK;
}

/* K or V with the past in front, as double [B, Hkv, T, hd]; the present
 * output (4-D) too when asked for. */
static void att_gather_kv(const att_shape *s, const inf_tensor *past, const inf_tensor *x, int64_t hd, double *dst,
                          inf_tensor *present) {
    for (int64_t b = 0; b < s->b; b++)
        for (int64_t h = 0; h < s->hkv; h++)
            for (int64_t t = 0; t < s->t; t++)
                for (int64_t d = 0; d < hd; d++) {
                    int64_t j = t - s->p, o = ((b * s->hkv + h) * s->t + t) * hd + d;
                    double v = t < s->p ? inf__tensor_get_f64(past, ((b * s->hkv + h) * s->p + t) * hd + d)
                               : s->rank3 ? inf__tensor_get_f64(x, (b * s->l + j) * s->hkv * hd + h * hd + d)
                                          : inf__tensor_get_f64(x, ((b * s->hkv + h) * s->l + j) * hd + d);
                    dst[o] = v;
                    if (present) inf__tensor_set_f64(present, o, v);
                }
}

/* attn_mask broadcast (numpy, right-aligned) to [B, Hq, S, mask_t]. */
static inf_status att_mask(inf__kernel_ctx *ctx, const att_shape *s, const inf_tensor *m, att_job *j) {
    if (m->dtype != INF_DTYPE_BOOL && m->dtype != ctx->in[0]->dtype)
        return inf__kernel_error(ctx, INF_ETYPE, "input attn_mask: expected bool or %s, got %s",
                                 inf_dtype_name(ctx->in[0]->dtype), inf_dtype_name(m->dtype));
    if (m->ndim < 1 || m->ndim > 4) return inf__kernel_error(ctx, INF_ESHAPE, "input attn_mask: rank %d, expected 1-4", m->ndim);
    int64_t want[4] = {s->b, s->hq, s->s, m->dims[m->ndim - 1]}, stride = 1;
    j->mask_t = m->dims[m->ndim - 1];
    if (j->mask_t > s->t)
        return inf__kernel_error(ctx, INF_ESHAPE, "input attn_mask: last axis %lld is longer than the %lld keys",
                                 (long long)j->mask_t, (long long)s->t);
    for (int a = 3; a >= 0; a--) {
        int md = a - (4 - m->ndim);
        int64_t dim = md >= 0 ? m->dims[md] : 1;
        if (dim != 1 && dim != want[a])
            return inf__kernel_error(ctx, INF_ESHAPE, "input attn_mask does not broadcast to [B, q heads, S, T] (axis %d)", a);
        j->mask_strides[a] = dim == 1 ? 0 : stride;
        stride *= dim;
    }
    return INF_OK;
}

/* ---- the fast path: the fused float32 kernel (ops/attention.h) ---- */

/* Why these inputs keep the node off the fused kernel, or NULL. */
static const char *fast_input_refusal(const inf__kernel_ctx *ctx, const att_job *j) {
    if (ctx->in[0]->dtype != INF_DTYPE_F32) return "not float32";
    if (j->mask && j->mask_t != j->sh->t) return "a mask shorter than the keys";
    return NULL;
}

/* K or V ([B, Hkv, L, hd], 3-D [B, L, Hkv*hd]) after the past ([B, Hkv, P, hd]) as float [B, Hkv, T, hd] in dst. */
static void concat_kv(const att_shape *s, const inf_tensor *past, const inf_tensor *x, int64_t hd, float *dst) {
    const float *pd = past ? past->data : NULL, *xd = x->data;
    for (int64_t b = 0; b < s->b; b++)
        for (int64_t h = 0; h < s->hkv; h++) {
            float *o = dst + (b * s->hkv + h) * s->t * hd;
            if (s->p) memcpy(o, pd + (b * s->hkv + h) * s->p * hd, (size_t)(s->p * hd) * sizeof(float));
            for (int64_t t = 0; t < s->l; t++)
                memcpy(o + (s->p + t) * hd,
                       xd + (s->rank3 ? (b * s->l + t) * s->hkv * hd + h * hd : ((b * s->hkv + h) * s->l + t) * hd),
                       (size_t)hd * sizeof(float));
        }
}

/* Strides of a [B, H, S, E] tensor (bhsd) or a 3-D [B, S, H*E] one. */
static void fast_strides(bool bhsd, int64_t S, int64_t H, int64_t E, int64_t *sb, int64_t *sh, int64_t *ld) {
    *sb = S * H * E, *sh = bhsd ? S * E : E, *ld = bhsd ? E : H * E;
}

/* Y (and the present outputs) on the fused kernel; j has the mask's strides. */
static inf_status att_run_fast(inf__kernel_ctx *ctx, const att_params *p, const att_shape *s, const att_job *j,
                               inf_tensor *const present[2]) {
    const inf_tensor *kv[2] = {ctx->in[1], ctx->in[2]};
    const float *kvd[2] = {ctx->in[1]->data, ctx->in[2]->data};
    int64_t hd[2] = {s->d, s->dv};
    bool kv_bhsd = !s->rank3;
    for (int i = 0; i < 2; i++) {
        if (!s->p && !present[i]) continue; /* read in place */
        float *dst = present[i] ? present[i]->data : NULL;
        if (!dst && !(dst = inf__kernel_scratch(ctx, (size_t)(s->b * s->hkv * s->t * hd[i]) * sizeof(float) + 1)))
            return INF_ENOMEM;
        concat_kv(s, att_opt(ctx, 4 + i), kv[i], hd[i], dst);
        if (s->p) kvd[i] = dst; /* no past: K/V themselves are as good, present is only a copy */
    }
    if (s->p) kv_bhsd = true;
    inf__attention_geom g = {.b = s->b, .h = s->hq, .sq = s->s, .sk = s->t, .d = s->d, .dv = s->dv};
    g.group = s->hq / s->hkv;
    fast_strides(!s->rank3, s->s, s->hq, s->d, &g.qb, &g.qh, &g.ldq);
    fast_strides(kv_bhsd, s->t, s->hkv, s->d, &g.kb, &g.kh, &g.ldk);
    fast_strides(kv_bhsd, s->t, s->hkv, s->dv, &g.vb, &g.vh, &g.ldv);
    fast_strides(!s->rank3, s->s, s->hq, s->dv, &g.yb, &g.yh, &g.ldy);
    g.q = ctx->in[0]->data, g.k = kvd[0], g.v = kvd[1], g.y = j->y->data;
    if (j->mask) {
        g.mb = j->mask_strides[0], g.mh = j->mask_strides[1], g.mi = j->mask_strides[2], g.mj = j->mask_strides[3];
        if (j->mask->dtype == INF_DTYPE_F32) g.mask = j->mask->data;
        else { /* bool: false -> -inf, true -> 0 */ int64_t n = inf_tensor_numel(j->mask);
            float *m = inf__kernel_scratch(ctx, (size_t)n * sizeof(float) + 1);
            if (!m) return INF_ENOMEM;
            const uint8_t *b = j->mask->data;
            for (int64_t e = 0; e < n; e++) m[e] = b[e] ? 0.0f : -INFINITY;
            g.mask = m;
        }
    }
    inf__attention_opts o = {.scale = (float)j->scale,
                             .masked_to_zero = true,
                             .causal = p->causal,
                             .causal_at = true,
                             .causal_offset = s->p};
    void *scratch = inf__kernel_scratch(ctx, inf__attention_scratch_bytes(&g, &o, ctx->pool));
    if (!scratch) return INF_ENOMEM;
    inf__attention_compute(&g, &o, ctx->pool, scratch);
    return INF_OK;
}

static inf_status att_run(inf__kernel_ctx *ctx) {
    const att_params *p = ctx->node->params;
    att_shape s;
    inf_status st = att_shapes(ctx, p, &s);
    if (st != INF_OK) return st;
    const inf_tensor *q = ctx->in[0], *mask = att_opt(ctx, 3), *nonpad = att_opt(ctx, 6);
    att_job j = {.par = p, .sh = &s, .q = q, .mask = mask, .nonpad = nonpad};
    if (mask && (st = att_mask(ctx, &s, mask, &j)) != INF_OK) return st;
    if (nonpad && (nonpad->dtype != INF_DTYPE_I64 || inf_tensor_numel(nonpad) != s.b))
        return inf__kernel_error(ctx, INF_ESHAPE, "input nonpad_kv_seqlen: expected %lld int64 values", (long long)s.b);
    j.scale = p->scale != 0 ? p->scale : 1.0 / sqrt((double)s.d);
    int64_t ydims[4] = {s.b, s.hq, s.s, s.dv}, y3[3] = {s.b, s.s, s.hq * s.dv};
    if ((st = inf__kernel_output(ctx, 0, q->dtype, s.rank3 ? 3 : 4, s.rank3 ? y3 : ydims, &j.y)) != INF_OK) return st;
    inf_tensor *present[2] = {NULL, NULL};
    int64_t pdims[2][4] = {{s.b, s.hkv, s.t, s.d}, {s.b, s.hkv, s.t, s.dv}};
    for (int i = 0; i < 2; i++)
        if (ctx->n_out > 1 + i && ctx->node->outputs[1 + i] >= 0 &&
            (st = inf__kernel_output(ctx, 1 + i, q->dtype, 4, pdims[i], &present[i])) != INF_OK)
            return st;
    int64_t qkdims[4] = {s.b, s.hq, s.s, s.t};
    if (ctx->n_out > 3 && ctx->node->outputs[3] >= 0 &&
        (st = inf__kernel_output(ctx, 3, q->dtype, 4, qkdims, &j.qk)) != INF_OK)
        return st;
    const char *why = p->not_fast ? p->not_fast : fast_input_refusal(ctx, &j);
    if (!why) {
        inf__log(INF_LOG_DEBUG, "node '%s' (Attention): the fused float32 kernel", ctx->node->name);
        return att_run_fast(ctx, p, &s, &j, present);
    }
    inf__log(INF_LOG_DEBUG, "node '%s' (Attention): the reference kernel (%s)", ctx->node->name, why);
    int64_t units = s.b * s.hq;
    if (units == 0 || s.s == 0) return INF_OK;
    size_t kn = (size_t)(s.b * s.hkv * s.t), bytes = sizeof(double) * (kn * (size_t)(s.d + s.dv) + (size_t)(units * 2 * s.t));
    double *mem = inf__kernel_scratch(ctx, bytes ? bytes : 1);
    if (!mem) return INF_ENOMEM;
    double *kd = mem, *vd = mem + kn * (size_t)s.d;
    j.rows = vd + kn * (size_t)s.dv;
    att_gather_kv(&s, att_opt(ctx, 4), ctx->in[1], s.d, kd, present[0]);
    att_gather_kv(&s, att_opt(ctx, 5), ctx->in[2], s.dv, vd, present[1]);
    j.k = kd, j.v = vd;
    inf__pool_range(ctx->pool, units, 1, att_units, &j);
    return INF_OK;
}

const inf__op_impl op_attention_onnx = {att_init, att_run};
