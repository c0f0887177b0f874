/*
 * tensor_scatter.c -- ONNX TensorScatter (opsets 24-26): the KV-cache update
 * of LLM exports.
 *
 *   present = TensorScatter(past_cache, update [, write_indices]; axis, mode)
 *   past_cache [B, ..., max_seq, ...], update the same but seq <= max_seq on
 *   `axis` (default -2, never the batch axis 0); write_indices [B] int64
 *   (default 0).  present = past_cache with update written at
 *   write_indices[b] + s along the axis; mode "linear" requires the writes to
 *   fit, "circular" wraps them modulo max_seq.
 * dtypes: every tensor type (strings too).
 * Deviations: none known (the output is a copy; the in-place form is not
 *   taken).
 */
#include <string.h>

#include "ops/ref/data_move.h"

typedef struct tscatter_params {
    int64_t axis;
    bool circular;
} tscatter_params;

static inf_status tscatter_init(inf__node *node, inf__arena *arena, inf_error *err) {
    tscatter_params *p = inf__op_params(arena, tscatter_params);
    if (!p) return INF_ENOMEM;
    p->axis = inf__attr_int(node, "axis", -2);
    const char *m = inf__attr_string(node, "mode", "linear");
    if (strcmp(m, "linear") != 0 && strcmp(m, "circular") != 0)
        return inf__node_error(node, err, INF_EMODEL, "attribute mode: expected linear or circular, got '%s'", m);
    p->circular = !strcmp(m, "circular");
    node->params = p;
    return INF_OK;
}

static inf_status tscatter_run(inf__kernel_ctx *ctx) {
    const tscatter_params *p = ctx->node->params;
    const inf_tensor *past = ctx->in[0], *up = ctx->in[1], *wi = ctx->n_in > 2 ? ctx->in[2] : NULL;
    int r = past->ndim, axis = 0;
    inf_status st = move_axis(ctx, "attribute axis", p->axis, r, &axis);
    if (st != INF_OK) return st;
    if (axis == 0) return inf__kernel_error(ctx, INF_EMODEL, "attribute axis must not be the batch axis 0");
    if (up->dtype != past->dtype || up->ndim != r)
        return inf__kernel_error(ctx, INF_ETYPE, "input update must have past_cache's type and rank");
    for (int d = 0; d < r; d++)
        if (d != axis ? up->dims[d] != past->dims[d] : up->dims[d] > past->dims[d])
            return inf__kernel_error(ctx, INF_ESHAPE, "input update differs from past_cache on axis %d", d);
    int64_t b = past->dims[0], max_seq = past->dims[axis], seq = up->dims[axis];
    if (wi && (wi->dtype != INF_DTYPE_I64 || inf_tensor_numel(wi) != b))
        return inf__kernel_error(ctx, INF_ESHAPE, "input write_indices: expected %lld int64 values", (long long)b);
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, past->dtype, r, past->dims, &y)) != INF_OK) return st;
    if ((st = move_copy(ctx, y, 0, past, 0, inf_tensor_numel(past))) != INF_OK) return st;
    int64_t inner = move_prod(past->dims, axis + 1, r), mid = move_prod(past->dims, 1, axis);
    for (int64_t bi = 0; bi < b; bi++) {
        int64_t w = wi ? ((const int64_t *)wi->data)[bi] : 0;
        if (w < 0 || (!p->circular && w + seq > max_seq))
            return inf__kernel_error(ctx, INF_ERANGE, "write_indices[%lld] = %lld: %lld updates do not fit %lld slots",
                                     (long long)bi, (long long)w, (long long)seq, (long long)max_seq);
        for (int64_t m = 0; m < mid; m++)
            for (int64_t s = 0; s < seq && st == INF_OK; s++) {
                int64_t at = max_seq ? (w + s) % max_seq : 0;
                st = move_copy(ctx, y, ((bi * mid + m) * max_seq + at) * inner, up, ((bi * mid + m) * seq + s) * inner,
                               inner);
            }
    }
    return st;
}

const inf__op_impl op_tensor_scatter = {tscatter_init, tscatter_run};
