/*
 * rotary.c -- ONNX RotaryEmbedding (opsets 23-26): rotary position
 * embeddings as LLM exports apply them to queries and keys.
 *
 *   Y = RotaryEmbedding(X, cos_cache, sin_cache [, position_ids])
 *   X: 4-D [B, H, S, D], or 3-D [B, S, H*D] with attribute num_heads.
 *   The first rotary_embedding_dim (R, default D; even) values of each head
 *   are rotated in pairs (x1, x2) -> (cos x1 - sin x2, sin x1 + cos x2); the
 *   pairs are (i, i + R/2) or, with interleaved = 1, (2i, 2i + 1).  The rest
 *   pass through.  cos/sin: [B, S, R/2], or with int64 position_ids [B, S]
 *   a table [max_position, R/2] indexed by the position.
 * dtypes: X and the caches of one float type (float32, float64, float16,
 *   bfloat16); computed in double and rounded once.
 * Deviations: none known.
 *
 * Each (b, s) row is one pool task unit (it reads its own cos/sin row).
 */
#include "ops/ops.h"

typedef struct rope_params {
    bool interleaved;
    int64_t num_heads, rotary_dim; /* 0: not given */
} rope_params;

static inf_status rope_init(inf__node *node, inf__arena *arena, inf_error *err) {
    rope_params *p = inf__op_params(arena, rope_params);
    if (!p) return INF_ENOMEM;
    p->interleaved = inf__attr_int(node, "interleaved", 0) != 0;
    p->num_heads = inf__attr_int(node, "num_heads", 0);
    p->rotary_dim = inf__attr_int(node, "rotary_embedding_dim", 0);
    if (p->num_heads < 0 || p->rotary_dim < 0 || p->rotary_dim % 2)
        return inf__node_error(node, err, INF_EMODEL, "num_heads must be >= 0 and rotary_embedding_dim even and >= 0");
    node->params = p;
    return INF_OK;
}

typedef struct rope_job {
    const rope_params *p;
    const inf_tensor *x, *cos, *sin, *pos;
    inf_tensor *y;
    bool rank3;
    int64_t b, h, s, d, half;
} rope_job;

static void rope_rows(void *arg, int64_t begin, int64_t end) {
    const rope_job *j = arg;
    for (int64_t r = begin; r < end; r++) {
        int64_t b = r / j->s, s = r % j->s;
        int64_t cache_row = j->pos ? inf__tensor_get_i64(j->pos, r) : r;
        for (int64_t h = 0; h < j->h; h++) {
            int64_t base = j->rank3 ? r * j->h * j->d + h * j->d : ((b * j->h + h) * j->s + s) * j->d;
            for (int64_t i = 0; i < j->half; i++) {
                int64_t i1 = j->p->interleaved ? 2 * i : i, i2 = j->p->interleaved ? 2 * i + 1 : i + j->half;
                double c = inf__tensor_get_f64(j->cos, cache_row * j->half + i);
                double sn = inf__tensor_get_f64(j->sin, cache_row * j->half + i);
                double x1 = inf__tensor_get_f64(j->x, base + i1), x2 = inf__tensor_get_f64(j->x, base + i2);
                inf__tensor_set_f64(j->y, base + i1, c * x1 - sn * x2);
                inf__tensor_set_f64(j->y, base + i2, sn * x1 + c * x2);
            }
            for (int64_t d = 2 * j->half; d < j->d; d++)
                inf__tensor_set_f64(j->y, base + d, inf__tensor_get_f64(j->x, base + d));
        }
    }
}

static inf_status rope_run(inf__kernel_ctx *ctx) {
    const rope_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0], *cs = ctx->in[1], *sn = ctx->in[2], *pos = ctx->n_in > 3 ? ctx->in[3] : NULL;
    inf_dtype t = x->dtype;
    if (t != INF_DTYPE_F32 && t != INF_DTYPE_F64 && t != INF_DTYPE_F16 && t != INF_DTYPE_BF16)
        return inf__kernel_error(ctx, INF_ETYPE, "input X: expected a float type, got %s", inf_dtype_name(t));
    if (cs->dtype != t || sn->dtype != t)
        return inf__kernel_error(ctx, INF_ETYPE, "cos_cache and sin_cache must have X's type %s", inf_dtype_name(t));
    rope_job j = {.p = p, .x = x, .cos = cs, .sin = sn, .pos = pos, .rank3 = x->ndim == 3};
    if (x->ndim == 4) {
        if (p->num_heads && p->num_heads != x->dims[1])
            return inf__kernel_error(ctx, INF_ESHAPE, "num_heads %lld differs from X's %lld heads",
                                     (long long)p->num_heads, (long long)x->dims[1]);
        j.b = x->dims[0], j.h = x->dims[1], j.s = x->dims[2], j.d = x->dims[3];
    } else if (x->ndim == 3) {
        if (!p->num_heads || x->dims[2] % p->num_heads)
            return inf__kernel_error(ctx, INF_EMODEL, "3-D X needs attribute num_heads dividing its %lld values",
                                     (long long)x->dims[2]);
        j.b = x->dims[0], j.s = x->dims[1], j.h = p->num_heads, j.d = x->dims[2] / p->num_heads;
    } else {
        return inf__kernel_error(ctx, INF_ESHAPE, "input X: expected rank 3 or 4, got %d", x->ndim);
    }
    int64_t rd = p->rotary_dim ? p->rotary_dim : j.d;
    if (rd > j.d || rd % 2)
        return inf__kernel_error(ctx, INF_ESHAPE, "rotary_embedding_dim %lld: must be even and at most the head size %lld",
                                 (long long)rd, (long long)j.d);
    j.half = rd / 2;
    int64_t rows;
    if (pos) {
        if (pos->dtype != INF_DTYPE_I64 || inf_tensor_numel(pos) != j.b * j.s)
            return inf__kernel_error(ctx, INF_ESHAPE, "input position_ids: expected int64 [%lld, %lld]", (long long)j.b,
                                     (long long)j.s);
        if (cs->ndim != 2) return inf__kernel_error(ctx, INF_ESHAPE, "with position_ids the caches are 2-D [positions, R/2]");
        rows = cs->dims[0];
        for (int64_t i = 0; i < j.b * j.s; i++) {
            int64_t v = inf__tensor_get_i64(pos, i);
            if (v < 0 || v >= rows)
                return inf__kernel_error(ctx, INF_ERANGE, "position_ids[%lld] = %lld is outside the %lld cached positions",
                                         (long long)i, (long long)v, (long long)rows);
        }
    } else {
        if (cs->ndim != 3 || cs->dims[0] != j.b || cs->dims[1] != j.s)
            return inf__kernel_error(ctx, INF_ESHAPE, "without position_ids the caches are [B, S, R/2] = [%lld, %lld, %lld]",
                                     (long long)j.b, (long long)j.s, (long long)j.half);
        rows = j.b * j.s;
    }
    if (cs->dims[cs->ndim - 1] != j.half || inf_tensor_numel(sn) != inf_tensor_numel(cs) || sn->ndim != cs->ndim)
        return inf__kernel_error(ctx, INF_ESHAPE, "cos_cache/sin_cache: last axis must be rotary_embedding_dim / 2 = %lld "
                                 "and both caches the same shape", (long long)j.half);
    (void)rows;
    inf_status st = inf__kernel_output(ctx, 0, t, x->ndim, x->dims, &j.y);
    if (st != INF_OK) return st;
    inf__pool_range(ctx->pool, j.b * j.s, 64, rope_rows, &j);
    return INF_OK;
}

const inf__op_impl op_rotary_embedding = {rope_init, rope_run};
