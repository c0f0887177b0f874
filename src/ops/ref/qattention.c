/*
 * qattention.c -- the internal op QAttention (ai.infera): attention with
 * both products in 8-bit integers (ops/qattention.h has the mathematics).
 *
 * DESIGN: one pool task per part; the (batch, head) units are cut into
 * equal runs, one a part (as the FP32 Attention's split, ops/ref/attention.c,
 * without its stealing).  A unit quantizes K_bh and V_bh (QuantizeLinear's
 * bytes) into the part's scratch and packs them as the B operands of
 * inf__qgemm_rows (K^T [D, Sk], V [Sk, Dv], uint8 with their zero points),
 * then for blocks of query rows: quantizes the rows of Q (after q_scale),
 * sums the scores in int32, scales them to float, adds the mask, runs the
 * vectorised softmax row, quantizes P as the file's QuantizeLinear says,
 * sums P V in int32 and stores Y = sp * sv * sum.  Q and P rows are zero
 * padded to the packing's K group.  Batch invariance: a unit's rows depend
 * only on its own data.
 * Deviation from the unfused QDQ graph: the dequantized products are exact
 * integer sums scaled once (the graph sums float products), and the scale
 * multiplies the scores' float value instead of a separate Div -- float
 * rounding only, which may move a P byte by one step where the graph's
 * value sits on a rounding boundary (tests allow one quantization step).
 */
#include <string.h>

#include "ops/qattention.h"

/* Query rows per block. */
enum { QATT_ROWS = 64 };

typedef struct qatt_sizes {
    int64_t rows, kp_k, kp_v, np_k, np_v;               /* block rows; K groups of Q / P rows; int32 columns of S / O */
    size_t kv, kpack, vpack, qa, pa, s32, o32, f, part; /* byte sizes, each a multiple of 64 */
} qatt_sizes;

static size_t up64(size_t v) {
    return (v + 63) / 64 * 64;
}
static int64_t up(int64_t v, int64_t to) {
    return (v + to - 1) / to * to;
}

static qatt_sizes sizes_of(const inf__qattention_job *j) {
    const inf__attention_geom *g = &j->g;
    qatt_sizes z;
    z.rows = g->sq < QATT_ROWS ? g->sq : QATT_ROWS;
    z.kp_k = up(g->d > 0 ? g->d : 1, 4), z.kp_v = up(g->sk > 0 ? g->sk : 1, 4);
    z.np_k = up(g->sk > 0 ? g->sk : 1, 16), z.np_v = up(g->dv > 0 ? g->dv : 1, 16);
    z.kv = up64((size_t)(g->sk * (g->d > g->dv ? g->d : g->dv)));
    z.kpack = up64(inf__qgemm_pack_b_bytes(j->isa, g->d, g->sk));
    z.vpack = up64(inf__qgemm_pack_b_bytes(j->isa, g->sk, g->dv));
    z.qa = up64((size_t)(z.rows * z.kp_k)), z.pa = up64((size_t)(z.rows * z.kp_v));
    z.s32 = up64((size_t)(z.rows * z.np_k) * 4), z.o32 = up64((size_t)(z.rows * z.np_v) * 4);
    z.f = up64((size_t)(g->sk > g->d ? g->sk : g->d) * sizeof(float));
    z.part = z.kv + z.kpack + z.vpack + z.qa + z.pa + z.s32 + z.o32 + z.f;
    return z;
}

size_t inf__qattention_scratch_bytes(const inf__qattention_job *j, int threads) {
    return (size_t)threads * sizes_of(j).part;
}

typedef struct qatt_part {
    uint8_t *kv, *kpack, *vpack, *qa, *pa;
    int32_t *s32, *o32;
    float *f;
} qatt_part;

typedef void (*quantize_fn)(const float *x, int64_t n, float scale, int32_t zp, uint8_t *q);

typedef struct qatt_task {
    const inf__qattention_job *j;
    qatt_sizes z;
    char *scratch;
    int64_t n_parts;
    quantize_fn quant;
} qatt_task;

/* rows x cols floats (row stride ld) quantized into contiguous bytes, packed as B (trans: B = X^T). */
static void pack_quantized(const qatt_task *t, const float *x, int64_t ld, int64_t rows, int64_t cols, int which,
                           bool trans, uint8_t *bytes, void *mem, inf__qgemm_b *b) {
    const inf__qattention_job *j = t->j;
    for (int64_t r = 0; r < rows; r++)
        t->quant(x + r * ld, cols, j->qs[which], j->qz[which], bytes + r * cols);
    uint8_t zp = (uint8_t)j->qz[which];
    if (trans)
        inf__qgemm_pack_b_into(mem, j->isa, cols, rows, bytes, INF_DTYPE_U8, cols, true, &zp, 1, b);
    else
        inf__qgemm_pack_b_into(mem, j->isa, rows, cols, bytes, INF_DTYPE_U8, cols, false, &zp, 1, b);
}

/* Query rows [i0, i0 + m) of unit (b, h): scores, softmax, P quantized, P V. */
static void block(const qatt_task *t, const qatt_part *p, const inf__qgemm_b *kt, const inf__qgemm_b *vt, int64_t b,
                  int64_t h, int64_t i0, int64_t m) {
    const inf__qattention_job *j = t->j;
    const inf__attention_geom *g = &j->g;
    const float *q = g->q + b * g->qb + h * g->qh;
    for (int64_t i = 0; i < m; i++) {
        const float *row = q + (i0 + i) * g->ldq;
        if (j->q_scale != 1.0f) {
            for (int64_t c = 0; c < g->d; c++)
                p->f[c] = j->q_scale * row[c];
            row = p->f;
        }
        t->quant(row, g->d, j->qs[INF_QATT_Q], j->qz[INF_QATT_Q], p->qa + i * t->z.kp_k);
    }
    inf__qgemm_rows(kt, m, p->qa, t->z.kp_k, j->qz[INF_QATT_Q], p->s32, t->z.np_k);
    const float sqk = j->qs[INF_QATT_Q] * j->qs[INF_QATT_K];
    for (int64_t i = 0; i < m; i++) {
        const int32_t *s = p->s32 + i * t->z.np_k;
        for (int64_t c = 0; c < g->sk; c++)
            p->f[c] = (float)s[c] * sqk * j->scale;
        if (g->mask) {
            const float *mr = g->mask + b * g->mb + h * g->mh + (i0 + i) * g->mi;
            for (int64_t c = 0; c < g->sk; c++)
                p->f[c] += mr[c * g->mj];
        }
        j->vm->softmax_row(p->f, p->f, g->sk);
        t->quant(p->f, g->sk, j->qs[INF_QATT_P], j->qz[INF_QATT_P], p->pa + i * t->z.kp_v);
    }
    inf__qgemm_rows(vt, m, p->pa, t->z.kp_v, j->qz[INF_QATT_P], p->o32, t->z.np_v);
    const float spv = j->qs[INF_QATT_P] * j->qs[INF_QATT_V];
    for (int64_t i = 0; i < m; i++) {
        float *y = g->y + (b * g->sq * g->h + h) * g->dv + (i0 + i) * g->ldy;
        const int32_t *o = p->o32 + i * t->z.np_v;
        for (int64_t c = 0; c < g->dv; c++)
            y[c] = (float)o[c] * spv;
    }
}

static void unit(const qatt_task *t, const qatt_part *p, int64_t u) {
    const inf__attention_geom *g = &t->j->g;
    int64_t b = u / g->h, h = u % g->h;
    inf__qgemm_b kt, vt;
    pack_quantized(t, g->k + b * g->kb + h * g->kh, g->ldk, g->sk, g->d, INF_QATT_K, true, p->kv, p->kpack, &kt);
    pack_quantized(t, g->v + b * g->vb + h * g->vh, g->ldv, g->sk, g->dv, INF_QATT_V, false, p->kv, p->vpack, &vt);
    for (int64_t i0 = 0; i0 < g->sq; i0 += t->z.rows)
        block(t, p, &kt, &vt, b, h, i0, g->sq - i0 < t->z.rows ? g->sq - i0 : t->z.rows);
}

static void qatt_task_run(void *arg, int64_t begin, int64_t end) {
    const qatt_task *t = arg;
    const inf__attention_geom *g = &t->j->g;
    int64_t n_units = g->b * g->h;
    for (int64_t part = begin; part < end; part++) {
        char *mem = t->scratch + (size_t)part * t->z.part;
        qatt_part p;
        p.kv = (uint8_t *)mem, mem += t->z.kv;
        p.kpack = (uint8_t *)mem, mem += t->z.kpack;
        p.vpack = (uint8_t *)mem, mem += t->z.vpack;
        p.qa = (uint8_t *)mem, mem += t->z.qa;
        p.pa = (uint8_t *)mem, mem += t->z.pa;
        p.s32 = (int32_t *)mem, mem += t->z.s32;
        p.o32 = (int32_t *)mem, mem += t->z.o32;
        p.f = (float *)mem;
        memset(p.qa, 0, t->z.qa + t->z.pa); /* the K-group padding of Q and P rows stays zero */
        for (int64_t u = part * n_units / t->n_parts, stop = (part + 1) * n_units / t->n_parts; u < stop; u++)
            unit(t, &p, u);
    }
}

void inf__qattention_run(const inf__qattention_job *j, inf__pool *pool, void *scratch) {
    const inf__attention_geom *g = &j->g;
    int64_t n_units = g->b * g->h;
    int threads = inf__pool_size(pool);
    if (threads > n_units)
        threads = (int)n_units;
    if (threads < 1)
        return;
    qatt_task t = {.j = j,
                   .z = sizes_of(j),
                   .scratch = scratch,
                   .n_parts = threads,
                   .quant = j->isa == INF_QGEMM_REF ? inf__quantize_u8_ref : inf__quantize_u8};
    inf__pool_range(threads > 1 ? pool : NULL, threads, 1, qatt_task_run, &t);
}

/* ---- the op ---- */

typedef struct qattention_params {
    float scale, q_scale, qs[4];
    int32_t qz[4];
} qattention_params;

static inf_status qattention_run(inf__kernel_ctx *ctx) {
    const qattention_params *prm = ctx->node->params;
    inf__qattention_job j = {
        .scale = prm->scale, .q_scale = prm->q_scale, .isa = inf__qgemm_best_isa(), .vm = inf__vmath_best()};
    memcpy(j.qs, prm->qs, sizeof j.qs), memcpy(j.qz, prm->qz, sizeof j.qz);
    inf_tensor *y;
    inf_status st = inf__attention_geometry(ctx, &j.g, &y);
    if (st != INF_OK || inf_tensor_numel(y) == 0)
        return st;
    if (j.g.sk == 0) { /* no keys: P V sums nothing */
        memset(y->data, 0, (size_t)inf_tensor_numel(y) * sizeof(float));
        return INF_OK;
    }
    int threads = inf__pool_size(ctx->pool);
    if (threads > j.g.b * j.g.h)
        threads = (int)(j.g.b * j.g.h);
    void *scratch = inf__kernel_scratch(ctx, inf__qattention_scratch_bytes(&j, threads));
    if (!scratch)
        return INF_ENOMEM;
    inf__qattention_run(&j, ctx->pool, scratch);
    return INF_OK;
}

static inf_status qattention_init(inf__node *node, inf__arena *arena, inf_error *err) {
    qattention_params *p = inf__op_params(arena, qattention_params);
    if (!p)
        return inf__node_error(node, err, INF_ENOMEM, "out of memory");
    const inf__attr *s = inf__node_attr(node, "scale"), *qs = inf__node_attr(node, "q_scale"),
                    *qa = inf__node_attr(node, "quant");
    if (!s || s->type != INF_ATTR_FLOAT || !qs || qs->type != INF_ATTR_FLOAT)
        return inf__node_error(node, err, INF_EINVAL, "attributes scale, q_scale: expected floats");
    if (!qa || qa->type != INF_ATTR_FLOATS || qa->n != 8)
        return inf__node_error(node, err, INF_EINVAL, "attribute quant: expected 8 floats");
    p->scale = s->f, p->q_scale = qs->f;
    for (int i = 0; i < 4; i++) {
        float sc = qa->floats[2 * i], z = qa->floats[2 * i + 1];
        if (!(sc > 0) || !(z >= 0 && z <= 255) || z != (float)(int32_t)z)
            return inf__node_error(node, err, INF_EINVAL, "attribute quant: operand %d: scale %g, zero point %g", i,
                                   (double)sc, (double)z);
        p->qs[i] = sc, p->qz[i] = (int32_t)z;
    }
    node->params = p;
    return INF_OK;
}

const inf__op_impl op_qattention = {qattention_init, qattention_run};
