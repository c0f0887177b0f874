/*
 * quantize_fused.c -- QGemm and QConv (ai.infera): a QDQ-quantized
 * MatMul/Gemm/Conv fused by the optimizer into one integer product.
 *
 * Made by graph/passes/qdq.c from
 *     x -> QuantizeLinear(x_scale, x_zp) -> DequantizeLinear -> MatMul / Gemm / Conv
 *          with W = DequantizeLinear(W_q constant, w_scale, w_zp) and an optional bias
 * as  y = QGemm / QConv(x, x_scale, x_zp, W_q, w_scale, w_zp, bias)   (QGemm attr trans_b)
 * computing y = (float)acc * (x_scale * w_scale[j]) + bias[j], acc the exact
 * integer sum of (q(x) - x_zp) * (W_q - w_zp), q(x) QuantizeLinear's bytes: the
 * QDQ graph's value with the products summed in integers instead of float
 * (they differ only by float rounding).  x float32 [..., K] / [N, C, (H,) W];
 * W packed at load; then the node's fused activation.  W must be constant.
 *
 * QConv shares ConvInteger's geometry, packing and packed run
 * (quantize_conv.h).  Its x may also be 8-bit [n, c, h, w], already
 * quantized with (x_scale, x_zp): a DynamicQuantizeLinear's output
 * (graph/passes/qdynamic.c), as ConvInteger reads it.
 */
#include <math.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/qgemm.h"
#include "ops/ref/quantize_common.h"
#include "ops/ref/quantize_conv.h"
#include "ops/vmath.h"

typedef struct qgemm_params {
    bool trans_b;
    bool u8_in, u8_out; /* graph/passes/qdq_chain.c: x / y uint8, quantized with x's / inputs 7, 8's parameters */
    inf__vmath_fn gelu; /* activation "Gelu" (passes/qdq.c): over each output row */
    const void *w_src, *wz_src; /* W's and its zero point's data, packed into b */
    inf__qgemm_b b;
} qgemm_params;

static inf_status qgemm_init(inf__node *node, inf__arena *arena, inf_error *err) {
    qgemm_params *p = inf__op_params(arena, qgemm_params);
    if (!p) return INF_ENOMEM;
    p->trans_b = inf__attr_int(node, "trans_b", 0) != 0;
    p->u8_in = inf__attr_int(node, "u8_in", 0) != 0;
    p->u8_out = inf__attr_int(node, "u8_out", 0) != 0;
    if (p->u8_out && (node->n_inputs < 8 || node->inputs[7] < 0))
        return inf__node_error(node, err, INF_EMODEL, "u8_out needs y_scale (input 7)");
    const char *act = inf__attr_string(node, "activation", "");
    if (*act && strcmp(act, "Gelu")) return inf__node_error(node, err, INF_EMODEL, "unknown activation '%s'", act);
    if (*act) p->gelu = inf__vmath_best()->gelu;
    const inf_tensor *w = inf__node_constant_input(node, 3), *wz = inf__node_constant_input(node, 5);
    if (!w || w->kind != INF_KIND_TENSOR || !is_q8(w->dtype) || w->ndim != 2 || !w->data)
        return inf__node_error(node, err, INF_EMODEL, "W (input 3) must be a constant 2-D uint8/int8 tensor");
    int64_t k = w->dims[p->trans_b ? 1 : 0], n = w->dims[p->trans_b ? 0 : 1];
    if (wz && (wz->dtype != w->dtype || !(inf_tensor_numel(wz) == 1 || inf_tensor_numel(wz) == n)))
        return inf__node_error(node, err, INF_EMODEL, "w_zero_point must be a scalar or [%lld] of W's type",
                               (long long)n);
    if (node->n_inputs > 5 && node->inputs[5] >= 0 && !wz)
        return inf__node_error(node, err, INF_EMODEL, "w_zero_point (input 5) must be constant");
    const qgemm_params *prev = node->prev_params; /* the same QGemm before a rewrite (graph/passes/qdq_chain.c) */
    p->w_src = w->data;
    p->wz_src = wz ? wz->data : NULL;
    if (prev && prev->w_src == p->w_src && prev->wz_src == p->wz_src && prev->trans_b == p->trans_b) {
        p->b = prev->b; /* the same weights, packed at the first init */
        node->params = p;
        return INF_OK;
    }
    inf__qgemm_isa isa = inf__qgemm_pack_isa(inf__qgemm_best_isa(), k, n, w->data, w->dtype, w->dims[1], p->trans_b);
    inf_status st = inf__qgemm_pack_b(arena, isa, k, n, w->data, w->dtype, w->dims[1], p->trans_b, wz ? wz->data : NULL,
                                      wz ? inf_tensor_numel(wz) : 1, &p->b);
    if (st != INF_OK) return st;
    node->params = p;
    return INF_OK;
}

/* A scale of 1 value, or of n values along one axis ([n], or a dynamic conv's [1, n, 1, 1]: graph/passes/qdynamic.c
 * checked that it broadcasts along the output channels). */
static inf_status check_channels(inf__kernel_ctx *ctx, const char *name, const inf_tensor *t, int64_t n) {
    char buf[96];
    int64_t numel = inf_tensor_numel(t);
    int long_dims = 0;
    for (int d = 0; d < t->ndim; d++) long_dims += t->dims[d] != 1;
    if (numel == 1 || (numel == n && long_dims == 1)) return INF_OK;
    return inf__kernel_error(ctx, INF_ESHAPE, "input %s: expected one value or %lld along one axis, got %s", name,
                             (long long)n, inf__shape_str(t->ndim, t->dims, buf, sizeof buf));
}

/* x_scale, x_zp (per tensor), w_scale (scalar or n values), bias (float32, n values) */
static inf_status fused_params_check(inf__kernel_ctx *ctx, int64_t n) {
    const inf_tensor *xs = ctx->in[1], *xz = opt_input(ctx, 2), *ws = ctx->in[4], *bias = opt_input(ctx, 6);
    inf_status st = check_scale(ctx, "x_scale", xs);
    if (st == INF_OK) st = check_scale(ctx, "w_scale", ws);
    if (st == INF_OK) st = check_param(ctx, "x_scale", xs, 1, "per tensor");
    if (st == INF_OK) st = check_channels(ctx, "w_scale", ws, n);
    if (st == INF_OK && xz && (!is_q8(xz->dtype) || inf_tensor_numel(xz) != 1))
        return inf__kernel_error(ctx, INF_ETYPE, "x_zero_point: expected one uint8 or int8 value");
    if (st == INF_OK && bias && (bias->dtype != INF_DTYPE_F32 || inf_tensor_numel(bias) != n))
        return inf__kernel_error(ctx, INF_ESHAPE, "bias: expected float32 with %lld values", (long long)n);
    const inf_tensor *ys = opt_input(ctx, 7), *yz = opt_input(ctx, 8);
    if (st == INF_OK && ys) st = check_scale(ctx, "y_scale", ys);
    if (st == INF_OK && ys) st = check_param(ctx, "y_scale", ys, 1, "per tensor");
    if (st == INF_OK && yz && (!is_q8(yz->dtype) || inf_tensor_numel(yz) != 1))
        return inf__kernel_error(ctx, INF_ETYPE, "y_zero_point: expected one uint8 or int8 value");
    return st;
}

/* The store of a fused node: scale, bias, its activation, then the output
 * QuantizeLinear -> DequantizeLinear when it took one (inputs 7, 8). */
static inf__qout fused_out(inf__kernel_ctx *ctx, const float *mult) {
    const inf_tensor *bias = opt_input(ctx, 6), *ys = opt_input(ctx, 7), *yz = opt_input(ctx, 8);
    inf__qout out = {.kind = INF_QOUT_F32,
                     .mult = mult,
                     .mult_per_col = true,
                     .bias_f32 = bias ? bias->data : NULL,
                     .act = ctx->node->epilogue.kind != INF_EPILOGUE_NONE ? &ctx->node->epilogue : NULL};
    if (ys) {
        out.requant = true;
        out.rq_scale = scale_at(ys, 0);
        out.rq_zp = zp_at(yz, 0);
        out.rq_dtype = yz ? yz->dtype : INF_DTYPE_U8;
    }
    return out;
}

/* A residual r of another shape than y (rank <= y's, each dim 1 or y's,
 * right-aligned): numpy broadcasting as Add does. */
static inf_status check_broadcast(inf__kernel_ctx *ctx, const inf_tensor *r, const inf_tensor *y) {
    char b1[96], b2[96];
    bool ok = r->ndim <= y->ndim;
    for (int d = 0; ok && d < r->ndim; d++) {
        int64_t rd = r->dims[r->ndim - 1 - d], yd = y->dims[y->ndim - 1 - d];
        ok = rd == yd || rd == 1;
    }
    return ok ? INF_OK
              : inf__kernel_error(ctx, INF_ESHAPE, "residual %s does not broadcast to the output %s",
                                  inf__shape_str(r->ndim, r->dims, b1, sizeof b1),
                                  inf__shape_str(y->ndim, y->dims, b2, sizeof b2));
}

static inline float apply_act(const inf__epilogue *ep, float v) {
    if (!ep)
        return v;
    switch (ep->kind) {
    case INF_EPILOGUE_RELU:
        return v > 0 ? v : 0;
    case INF_EPILOGUE_LEAKY_RELU:
        return v < 0 ? ep->alpha * v : v;
    case INF_EPILOGUE_CLIP:
        return v < ep->lo ? ep->lo : v > ep->hi ? ep->hi : v;
    default:
        return v;
    }
}

/* y = act(y + r) with r broadcast (check_broadcast): the unfused Add, then the activation. */
static void add_broadcast(const inf_tensor *r, inf_tensor *y, const inf__epilogue *ep) {
    int64_t rstride[INF_MAX_DIMS] = {0}, idx[INF_MAX_DIMS] = {0}, n = inf_tensor_numel(y), s = 1;
    for (int d = r->ndim - 1; d >= 0; d--) {
        rstride[y->ndim - r->ndim + d] = r->dims[d] == 1 ? 0 : s;
        s *= r->dims[d];
    }
    float *yv = y->data;
    const float *rv = r->data;
    for (int64_t i = 0; i < n; i++) {
        int64_t at = 0;
        for (int d = 0; d < y->ndim; d++)
            at += idx[d] * rstride[d];
        yv[i] = apply_act(ep, yv[i] + rv[at]);
        for (int d = y->ndim - 1; d >= 0 && ++idx[d] == y->dims[d]; d--)
            idx[d] = 0;
    }
}

/* A float32 residual r of y (the fused Add's other operand, input 9): of y's
 * shape, the store adds it (out->residual); broadcast (only where
 * may_broadcast), the store runs without the activation and
 * residual_after adds r and applies it (*after = true). */
static inf_status float_residual(inf__kernel_ctx *ctx, const inf_tensor *r, const inf_tensor *y, bool may_broadcast,
                                 inf__qout *out, bool *after) {
    *after = r->ndim != y->ndim || memcmp(r->dims, y->dims, (size_t)r->ndim * sizeof(int64_t));
    if (!*after) {
        out->residual = r->data;
        return INF_OK;
    }
    if (!may_broadcast)
        return inf__kernel_error(ctx, INF_EMODEL, "residual (input 9): no broadcast with a uint8 output");
    out->act = NULL; /* the Add and the activation after the store */
    return check_broadcast(ctx, r, y);
}

/* The broadcast residual's Add and the node's activation, after the store (float_residual). */
static void residual_after(inf__kernel_ctx *ctx, const inf_tensor *r, inf_tensor *y) {
    add_broadcast(r, y, ctx->node->epilogue.kind != INF_EPILOGUE_NONE ? &ctx->node->epilogue : NULL);
}

static inf_status qgemm_run(inf__kernel_ctx *ctx) {
    const qgemm_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0], *w = ctx->in[3];
    char buf[96];
    inf_dtype x_dtype = p->u8_in ? INF_DTYPE_U8 : INF_DTYPE_F32;
    const inf_tensor *xz = opt_input(ctx, 2);
    if (x->dtype != x_dtype || x->ndim < 1 || x->dims[x->ndim - 1] != p->b.k)
        return inf__kernel_error(ctx, INF_ESHAPE, "x: expected %s [..., %lld], got %s %s", inf_dtype_name(x_dtype),
                                 (long long)p->b.k, inf_dtype_name(x->dtype),
                                 inf__shape_str(x->ndim, x->dims, buf, sizeof buf));
    if (p->u8_in && xz && xz->dtype != INF_DTYPE_U8)
        return inf__kernel_error(ctx, INF_ETYPE, "x_zero_point: expected uint8 with a uint8 x (u8_in)");
    if (w->data != p->w_src) return inf__kernel_error(ctx, INF_EINVAL, "W was replaced at run time");
    inf_status st = fused_params_check(ctx, p->b.n);
    if (st != INF_OK) return st;
    int64_t dims[INF_MAX_DIMS], rows = p->b.k ? inf_tensor_numel(x) / p->b.k : 0;
    memcpy(dims, x->dims, sizeof dims);
    dims[x->ndim - 1] = p->b.n;
    inf_tensor *y;
    const inf_tensor *yz = opt_input(ctx, 8);
    if (p->u8_out && yz && yz->dtype != INF_DTYPE_U8)
        return inf__kernel_error(ctx, INF_ETYPE, "y_zero_point: expected uint8 (u8_out)");
    if ((st = inf__kernel_output(ctx, 0, p->u8_out ? INF_DTYPE_U8 : INF_DTYPE_F32, x->ndim, dims, &y)) != INF_OK)
        return st;
    float *mult = inf__kernel_scratch(ctx, (size_t)p->b.n * sizeof *mult);
    void *scratch = mult ? inf__kernel_scratch(ctx, inf__qmatmul_scratch_bytes(&p->b, rows)) : NULL;
    if (!scratch) return INF_ENOMEM;
    inf__qconv_op_scale_products(ctx->in[1], ctx->in[4], NULL, p->b.n, mult);
    inf__qsrc a = {.data = x->data,
                   .dtype = x_dtype,
                   .ld = p->b.k,
                   .scale = scale_at(ctx->in[1], 0),
                   .zp = zp_at(xz, 0),
                   .q_dtype = xz ? xz->dtype : INF_DTYPE_U8};
    inf__qout out = fused_out(ctx, mult);
    out.row_act = p->gelu;
    if (p->u8_out) out.kind = INF_QOUT_F32_U8, out.requant = false;
    const inf_tensor *res = opt_input(ctx, 9); /* graph/passes/qdq_chain.c: the fused residual Add */
    bool broadcast = false;
    if (res) {
        if (res->dtype != INF_DTYPE_F32 || p->u8_out || p->gelu)
            return inf__kernel_error(ctx, INF_EMODEL, "residual (input 9): float32, with a float output and no GELU");
        if ((st = float_residual(ctx, res, y, true, &out, &broadcast)) != INF_OK)
            return st;
    }
    inf__qmatmul_drive(ctx->pool, &p->b, rows, &a, &out, y->data, p->b.n, scratch);
    if (broadcast)
        residual_after(ctx, res, y);
    ctx->epilogue_done = true;
    return INF_OK;
}

const inf__op_impl op_qgemm = {qgemm_init, qgemm_run};

static inf_status qconv_fused_init(inf__node *node, inf__arena *arena, inf_error *err) {
    inf_status st = inf__qconv_op_init(node, arena, err);
    if (st == INF_OK && !((qconv_params *)node->params)->packed)
        return inf__node_error(node, err, INF_EMODEL, "W (input 3) must be a constant 3-D/4-D uint8/int8 tensor");
    return st;
}

/* x of a QConv with nhwc_in: uint8 [n, h, w, c], seen as [n, c, h, w] for
 * the geometry (the driver reads it channels last). */
static inf_status nhwc_view(inf__kernel_ctx *ctx, const inf_tensor *x, inf_tensor *view) {
    const inf_tensor *xz = opt_input(ctx, 2);
    if (x->dtype != INF_DTYPE_U8 || x->ndim != 4 || (xz && xz->dtype != INF_DTYPE_U8))
        return inf__kernel_error(ctx, INF_ETYPE,
                                 "x (nhwc_in): expected uint8 [n, h, w, c] with a uint8 zero point, "
                                 "got %s of rank %d",
                                 inf_dtype_name(x->dtype), x->ndim);
    *view = *x;
    view->dims[1] = x->dims[3], view->dims[2] = x->dims[1], view->dims[3] = x->dims[2];
    return INF_OK;
}

static inf_status qconv_fused_run(inf__kernel_ctx *ctx) {
    const qconv_params *p = ctx->node->params;
    qconv_args q = {ctx->in[0], ctx->in[3], opt_input(ctx, 2), opt_input(ctx, 5), NULL, ctx->in[1], ctx->in[4], NULL,
                    NULL,       NULL};
    inf_tensor xview;
    inf_status st = INF_OK;
    if (p->nhwc_in) {
        if ((st = nhwc_view(ctx, q.x, &xview)) != INF_OK) return st;
        q.x = &xview;
    } else if (is_q8(q.x->dtype)) { /* graph/passes/qdynamic.c: DynamicQuantizeLinear's bytes, [n, c, h, w] */
        if ((st = check_zero_point(ctx, "x_zero_point", q.xzp, q.x->dtype)) != INF_OK) return st;
    } else if (q.x->dtype != INF_DTYPE_F32) {
        return inf__kernel_error(ctx, INF_ETYPE, "x: expected float32, uint8 or int8, got %s",
                                 inf_dtype_name(q.x->dtype));
    }
    qconv_geom g;
    st = inf__qconv_op_geometry(ctx, p, q.x, q.w, &g);
    if (st == INF_OK) st = fused_params_check(ctx, g.m);
    if (st != INF_OK) return st;
    if (!inf__qconv_op_packed_fits(ctx, &g, &q) || ((p->nhwc_in || p->nhwc_out) && g.nd != 2))
        return inf__kernel_error(ctx, INF_EUNSUPPORTED, "only 1-D/2-D convolutions with the W given at load");
    const inf_tensor *res = opt_input(ctx, 9);
    int at8 = res ? 10 : 7; /* the uint8 output's (scale, zero point): after a residual, inputs 10, 11 */
    if (p->pool[0] && (g.nd != 2 || g.out[0] < p->pool[0] || g.out[1] < p->pool[1]))
        return inf__kernel_error(ctx, INF_ESHAPE, "fused MaxPool: the conv output is smaller than its kernel");
    int64_t ph = p->pool[0] ? (g.out[0] - p->pool[0]) / p->pool[2] + 1 : 0;
    int64_t pw = p->pool[0] ? (g.out[1] - p->pool[1]) / p->pool[3] + 1 : 0;
    if (p->nhwc_out) {
        const inf_tensor *ys8 = opt_input(ctx, at8), *yz = opt_input(ctx, at8 + 1);
        if (!ys8 || (yz && yz->dtype != INF_DTYPE_U8))
            return inf__kernel_error(ctx, INF_EMODEL, "nhwc_out needs y_scale and a uint8 y_zero_point (inputs %d, %d)",
                                     at8, at8 + 1);
        if (at8 == 10 && (st = check_scale(ctx, "y_scale (input 10)", ys8)) == INF_OK)
            st = check_param(ctx, "y_scale (input 10)", ys8, 1, "per tensor");
        if (st != INF_OK) return st;
        int64_t dims[4] = {g.n, p->pool[0] ? ph : g.out[0], p->pool[0] ? pw : g.out[1], g.m};
        st = inf__kernel_output(ctx, 0, INF_DTYPE_U8, 4, dims, &q.y);
    } else if (p->pool[0]) {
        int64_t dims[4] = {g.n, g.m, ph, pw};
        st = inf__kernel_output(ctx, 0, INF_DTYPE_F32, 4, dims, &q.y);
    } else {
        st = inf__qconv_op_output(ctx, &g, INF_DTYPE_F32, &q.y);
    }
    if (st != INF_OK) return st;
    float *mult = inf__qconv_op_mults(ctx, &g, &q);
    if (!mult) return INF_ENOMEM;
    inf__qout out = fused_out(ctx, mult), pre = out;
    if (p->nhwc_out) out.kind = INF_QOUT_F32_U8, out.requant = false;
    bool broadcast = false;
    if (res && p->nhwc_out) { /* graph/passes/qdq_chain.c: Q(act(value + residual)) with inputs 10, 11 */
        pre.act = NULL, out.pre = &pre;
        out.rq_scale = scale_at(opt_input(ctx, 10), 0), out.rq_zp = zp_at(opt_input(ctx, 11), 0);
        out.rq_dtype = INF_DTYPE_U8;
    }
    if (res && res->dtype == INF_DTYPE_U8) { /* uint8 channels last, worth (q - input 13) * input 12 */
        const inf_tensor *rs = opt_input(ctx, 12), *rz = opt_input(ctx, 13);
        if (!p->nhwc_out || p->pool[0] || !rs || (rz && rz->dtype != INF_DTYPE_U8) || res->ndim != 4 ||
            res->dims[0] != g.n || res->dims[1] != g.out[0] || res->dims[2] != g.out[1] || res->dims[3] != g.m)
            return inf__kernel_error(ctx, INF_EMODEL,
                                     "uint8 residual (input 9): needs a uint8 output, its scale and "
                                     "zero point (inputs 12, 13) and the output's channels-last shape");
        if ((st = check_scale(ctx, "residual scale (input 12)", rs)) == INF_OK)
            st = check_param(ctx, "residual scale (input 12)", rs, 1, "per tensor");
        if (st != INF_OK) return st;
        out.residual_u8 = res->data, out.res_scale = scale_at(rs, 0), out.res_zp = zp_at(rz, 0);
    } else if (res) {
        if (res->dtype != INF_DTYPE_F32 || p->pool[0])
            return inf__kernel_error(ctx, INF_EMODEL, "residual (input 9): float32 or uint8, and no pooled output");
        if ((st = float_residual(ctx, res, q.y, !p->nhwc_out, &out, &broadcast)) != INF_OK)
            return st;
    }
    st = inf__qconv_op_run_packed(ctx, &g, &q, &out, q.y->data);
    if (st == INF_OK && broadcast)
        residual_after(ctx, res, q.y);
    ctx->epilogue_done = st == INF_OK;
    return st;
}

const inf__op_impl op_qconv = {qconv_fused_init, qconv_fused_run};
