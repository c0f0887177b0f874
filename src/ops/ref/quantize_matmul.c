/*
 * quantize_matmul.c -- reference kernels for the integer matrix products.
 *
 * ONNX ops:
 *   MatMulInteger          opsets 10-17: int32 Y = (A - a_zero_point) @ (B - b_zero_point),
 *                          numpy matmul shapes; zero points scalar or per
 *                          row of A ([M]) / per column of B ([N]).
 *   QLinearMatMul          opsets 10-17: the same product requantized:
 *                          y = saturate(round(acc * a_scale * b_scale / y_scale) + y_zero_point);
 *                          scales and zero points scalar or per row / column.
 * dtypes: uint8 and int8 for the quantized tensors, any mix of the two.
 * Rounding is half to even (nearbyint in the default rounding mode) and the
 * result saturates to the output type's range.  Accumulation is exact
 * (int64) and wraps to int32 for the int32 outputs.
 * Fast path: with a constant 2-D B (a constant W) the product is packed at
 *   load for the integer GEMM of ops/qgemm.h (AVX-512 VNNI, AVX-VNNI or AVX2,
 *   chosen from CPUID) and runs through its drivers (ops/ref/qgemm_drive.c)
 *   when A's zero point (and scale) is per tensor.  Same bits as the loops
 *   here (the drivers repeat their arithmetic); on a CPU without AVX2, or
 *   with INFERA_CPU=generic, the loops here run.
 * Deviations: the requantization multiplier and product are computed in
 *   float32, as onnxruntime does.
 */
#include <math.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/qgemm.h"
#include "ops/ref/quantize_common.h"

/* ======================================================================== */
/*  MatMulInteger, QLinearMatMul                                             */
/* ======================================================================== */

typedef struct qmm_plan {
    int64_t m, n, k, n_batch;
    int nb;
    int64_t bdims[INF_MAX_DIMS], a_str[INF_MAX_DIMS], b_str[INF_MAX_DIMS];
    int out_ndim;
    int64_t out_dims[INF_MAX_DIMS];
} qmm_plan;

/* numpy matmul shapes: 1-D operands promoted, batch dims broadcast. */
static inf_status qmm_plan_make(inf__kernel_ctx *ctx, const inf_tensor *a, const inf_tensor *b, qmm_plan *pl) {
    char b1[96], b2[96];
    if (a->ndim < 1 || b->ndim < 1) return inf__kernel_error(ctx, INF_ESHAPE, "inputs A and B must have rank >= 1");
    int64_t am = a->ndim == 1 ? 1 : a->dims[a->ndim - 2], ak = a->dims[a->ndim - 1];
    int64_t bk = b->ndim == 1 ? b->dims[0] : b->dims[b->ndim - 2];
    int64_t bn = b->ndim == 1 ? 1 : b->dims[b->ndim - 1];
    int anb = a->ndim > 2 ? a->ndim - 2 : 0, bnb = b->ndim > 2 ? b->ndim - 2 : 0;
    if (ak != bk || inf__broadcast_shape(anb, a->dims, bnb, b->dims, &pl->nb, pl->bdims) != INF_OK)
        return inf__kernel_error(ctx, INF_ESHAPE, "A %s and B %s do not multiply",
                                 inf__shape_str(a->ndim, a->dims, b1, sizeof b1),
                                 inf__shape_str(b->ndim, b->dims, b2, sizeof b2));
    pl->m = am, pl->n = bn, pl->k = ak;
    inf__broadcast_strides(anb, a->dims, pl->nb, pl->bdims, pl->a_str);
    inf__broadcast_strides(bnb, b->dims, pl->nb, pl->bdims, pl->b_str);
    pl->n_batch = 1;
    pl->out_ndim = 0;
    for (int i = 0; i < pl->nb; i++)
        pl->n_batch *= pl->bdims[i], pl->out_dims[pl->out_ndim++] = pl->bdims[i];
    if (a->ndim > 1) pl->out_dims[pl->out_ndim++] = am;
    if (b->ndim > 1) pl->out_dims[pl->out_ndim++] = bn;
    if (pl->out_ndim > INF_MAX_DIMS) return inf__kernel_error(ctx, INF_ESHAPE, "result rank too high");
    return INF_OK;
}

/* Calls emit(i, j, acc, out_index) for every output of the integer product. */
typedef struct qmm_args {
    const inf_tensor *a, *b, *azp, *bzp;
    const inf_tensor *as, *bs, *ys, *yzp; /* QLinearMatMul */
    inf_tensor *y;
} qmm_args;

static void qmm_compute(const qmm_plan *pl, const qmm_args *q) {
    int64_t m = pl->m, n = pl->n, k = pl->k;
    for (int64_t t = 0; t < pl->n_batch; t++) {
        int64_t ao = 0, bo = 0, rem = t;
        for (int d = pl->nb - 1; d >= 0; d--) {
            int64_t i = rem % pl->bdims[d];
            rem /= pl->bdims[d];
            ao += i * pl->a_str[d], bo += i * pl->b_str[d];
        }
        ao *= m * k, bo *= k * n;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                int32_t za = zp_at(q->azp, i), zb = zp_at(q->bzp, j);
                int64_t acc = 0;
                for (int64_t p = 0; p < k; p++)
                    acc += (int64_t)(q_at(q->a, ao + i * k + p) - za) * (q_at(q->b, bo + p * n + j) - zb);
                int64_t o = (t * m + i) * n + j;
                if (!q->ys) {
                    ((int32_t *)q->y->data)[o] = (int32_t)(uint32_t)acc;
                } else {
                    float mult = scale_at(q->as, i) * scale_at(q->bs, j) / scale_at(q->ys, 0);
                    q_store(q->y, o, (float)acc * mult, zp_at(q->yzp, 0));
                }
            }
    }
}

/* ---- the packed fast path (ops/qgemm.h) ---- */

/* B packed at load: when B (input b_at) is a constant 2-D 8-bit tensor with
 * a constant per-tensor or per-column zero point (input bzp_at), and the
 * CPU has a fast integer GEMM. */
typedef struct qmm_pack {
    bool packed;
    const void *b_src; /* the constant packed, to recognise it at run time */
    inf__qgemm_b b;
} qmm_pack;

static inf_status qmm_pack_init(inf__node *node, inf__arena *arena, int b_at, int bzp_at) {
    qmm_pack *p = inf__op_params(arena, qmm_pack);
    if (!p) return INF_ENOMEM;
    node->params = p;
    inf__qgemm_isa isa = inf__qgemm_best_isa();
    const inf_tensor *b = inf__node_constant_input(node, b_at), *bz = inf__node_constant_input(node, bzp_at);
    bool has_bz = bzp_at < node->n_inputs && node->inputs[bzp_at] >= 0;
    if (isa == INF_QGEMM_REF || !b || b->kind != INF_KIND_TENSOR || !is_q8(b->dtype) || b->ndim != 2 || !b->data)
        return INF_OK;
    if (has_bz &&
        (!bz || bz->dtype != b->dtype || !(inf_tensor_numel(bz) == 1 || (bz->ndim == 1 && bz->dims[0] == b->dims[1]))))
        return INF_OK;
    isa = inf__qgemm_pack_isa(isa, b->dims[0], b->dims[1], b->data, b->dtype, b->dims[1], false);
    inf_status st = inf__qgemm_pack_b(arena, isa, b->dims[0], b->dims[1], b->data, b->dtype, b->dims[1], false,
                                      bz ? bz->data : NULL, bz ? inf_tensor_numel(bz) : 1, &p->b);
    if (st != INF_OK) return st;
    p->packed = true;
    p->b_src = b->data;
    return INF_OK;
}

static inf_status matmul_integer_init(inf__node *node, inf__arena *arena, inf_error *err) {
    (void)err;
    return qmm_pack_init(node, arena, 1, 3);
}

static inf_status qlinear_matmul_init(inf__node *node, inf__arena *arena, inf_error *err) {
    (void)err;
    return qmm_pack_init(node, arena, 3, 5);
}

/* Runs the product on the packed B when it applies; false to take the loops. */
static bool qmm_fast(inf__kernel_ctx *ctx, const qmm_plan *pl, const qmm_args *q, inf_status *st) {
    const qmm_pack *p = ctx->node->params;
    if (!p || !p->packed || q->b->data != p->b_src || pl->k != p->b.k || pl->n != p->b.n ||
        (q->azp && inf_tensor_numel(q->azp) != 1) || (q->as && inf_tensor_numel(q->as) != 1))
        return false;
    int64_t rows = pl->n_batch * pl->m;
    float *mult = NULL;
    void *scratch = inf__kernel_scratch(ctx, inf__qmatmul_scratch_bytes(&p->b, rows));
    if (q->ys && scratch) mult = inf__kernel_scratch(ctx, (size_t)pl->n * sizeof *mult);
    if (!scratch || (q->ys && !mult)) {
        *st = INF_ENOMEM;
        return true;
    }
    inf__qout out = {.kind = INF_QOUT_I32};
    if (q->ys) {
        for (int64_t j = 0; j < pl->n; j++)
            mult[j] = scale_at(q->as, 0) * scale_at(q->bs, j) / scale_at(q->ys, 0);
        out = (inf__qout){
            .kind = INF_QOUT_Q8, .mult = mult, .mult_per_col = true, .y_dtype = q->y->dtype, .y_zp = zp_at(q->yzp, 0)};
    }
    inf__qsrc a = {.data = q->a->data, .dtype = q->a->dtype, .ld = pl->k, .zp = zp_at(q->azp, 0)};
    inf__qmatmul_drive(ctx->pool, &p->b, rows, &a, &out, q->y->data, pl->n, scratch);
    *st = INF_OK;
    return true;
}

static inf_status matmul_integer_run(inf__kernel_ctx *ctx) {
    qmm_args q = {ctx->in[0], opt_input(ctx, 1), opt_input(ctx, 2), opt_input(ctx, 3), NULL, NULL, NULL, NULL, NULL};
    inf_status st = check_q8(ctx, "A", q.a);
    if (st == INF_OK) st = check_q8(ctx, "B", q.b);
    if (st == INF_OK) st = check_zero_point(ctx, "a_zero_point", q.azp, q.a->dtype);
    if (st == INF_OK) st = check_zero_point(ctx, "b_zero_point", q.bzp, q.b->dtype);
    if (st != INF_OK) return st;
    qmm_plan pl;
    if ((st = qmm_plan_make(ctx, q.a, q.b, &pl)) != INF_OK) return st;
    if ((st = check_param(ctx, "a_zero_point", q.azp, pl.m, "per row of A")) != INF_OK ||
        (st = check_param(ctx, "b_zero_point", q.bzp, pl.n, "per column of B")) != INF_OK)
        return st;
    if ((st = inf__kernel_output(ctx, 0, INF_DTYPE_I32, pl.out_ndim, pl.out_dims, &q.y)) != INF_OK) return st;
    if (qmm_fast(ctx, &pl, &q, &st)) return st;
    qmm_compute(&pl, &q);
    return INF_OK;
}

const inf__op_impl op_matmul_integer = {matmul_integer_init, matmul_integer_run};

static inf_status qlinear_matmul_run(inf__kernel_ctx *ctx) {
    qmm_args q = {ctx->in[0],        opt_input(ctx, 3), opt_input(ctx, 2),
                  opt_input(ctx, 5), opt_input(ctx, 1), opt_input(ctx, 4),
                  opt_input(ctx, 6), opt_input(ctx, 7), NULL};
    inf_status st = check_q8(ctx, "a", q.a);
    if (st == INF_OK) st = check_q8(ctx, "b", q.b);
    if (st == INF_OK) st = check_q8(ctx, "y_zero_point", q.yzp);
    if (st == INF_OK) st = check_zero_point(ctx, "a_zero_point", q.azp, q.a->dtype);
    if (st == INF_OK) st = check_zero_point(ctx, "b_zero_point", q.bzp, q.b->dtype);
    if (st == INF_OK) st = check_scale(ctx, "a_scale", q.as);
    if (st == INF_OK) st = check_scale(ctx, "b_scale", q.bs);
    if (st == INF_OK) st = check_scale(ctx, "y_scale", q.ys);
    if (st != INF_OK) return st;
    qmm_plan pl;
    if ((st = qmm_plan_make(ctx, q.a, q.b, &pl)) != INF_OK) return st;
    if ((st = check_param(ctx, "a_scale", q.as, pl.m, "per row of a")) != INF_OK ||
        (st = check_param(ctx, "a_zero_point", q.azp, pl.m, "per row of a")) != INF_OK ||
        (st = check_param(ctx, "b_scale", q.bs, pl.n, "per column of b")) != INF_OK ||
        (st = check_param(ctx, "b_zero_point", q.bzp, pl.n, "per column of b")) != INF_OK ||
        (st = check_param(ctx, "y_scale", q.ys, 1, "per tensor")) != INF_OK ||
        (st = check_param(ctx, "y_zero_point", q.yzp, 1, "per tensor")) != INF_OK)
        return st;
    if ((st = inf__kernel_output(ctx, 0, q.yzp->dtype, pl.out_ndim, pl.out_dims, &q.y)) != INF_OK) return st;
    if (qmm_fast(ctx, &pl, &q, &st)) return st;
    qmm_compute(&pl, &q);
    return INF_OK;
}

const inf__op_impl op_qlinear_matmul = {qlinear_matmul_init, qlinear_matmul_run};
