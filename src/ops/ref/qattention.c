/*
 * qattention.c -- the internal op QAttention (ai.infera): attention with
 * both products in 8-bit integers (ops/qattention.h has the mathematics).
 *
 * DESIGN: one pool task per part; the (batch, head) units are cut into
 * equal runs, one a part (as the FP32 Attention's split, ops/ref/attention.c,
 * without its stealing).  A unit quantizes K_bh and V_bh (QuantizeLinear's
 * bytes) into the part's scratch and packs them as the B operands of
 * inf__qgemm_raw (K^T [D, Sk], V [Sk, Dv]), written into the kernels'
 * packed layout (inf__qgemm_pack_column / _kgroup) as they are quantized (the
 * load-time packer, inf__qgemm_pack_b_into, is too slow for a per-head
 * operand, and inf__qgemm_rows' zero-point pass is a second sweep over the
 * sums): the zero points are folded into a per-column start value of the
 * sums and a per-row term added as the sums become floats.  Then for blocks
 * of query rows: quantizes the rows of Q (after q_scale),
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
    size_t kv, kpack, vpack, qa, pa, s32, o32, f, sums, part; /* byte sizes, each a multiple of 64 */
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
    z.kv = up64((size_t)(4 * (z.kp_k > g->dv ? z.kp_k : g->dv))); /* a K row, or 4 V rows, as bytes */
    z.kpack = up64(inf__qgemm_pack_b_bytes(j->isa, g->d, g->sk));
    z.vpack = up64(inf__qgemm_pack_b_bytes(j->isa, g->sk, g->dv));
    z.qa = up64((size_t)(z.rows * z.kp_k)), z.pa = up64((size_t)(z.rows * z.kp_v));
    z.s32 = up64((size_t)(z.rows * z.np_k) * 4), z.o32 = up64((size_t)(z.rows * z.np_v) * 4);
    z.f = up64((size_t)(g->sk > g->d ? g->sk : g->d) * sizeof(float));
    z.sums = up64((size_t)(z.np_k + z.np_v + z.rows) * 4); /* the start values of S and O, the row terms */
    z.part = z.kv + z.kpack + z.vpack + z.qa + z.pa + z.s32 + z.o32 + z.f + z.sums;
    return z;
}

size_t inf__qattention_scratch_bytes(const inf__qattention_job *j, int threads) {
    return (size_t)threads * sizes_of(j).part;
}

typedef struct qatt_part {
    uint8_t *kv, *kpack, *vpack, *qa, *pa;
    int32_t *s32, *o32;
    float *f;
    int32_t *init_k, *init_v, *rowterm; /* [np_k], [np_v], [rows] */
} qatt_part;

typedef void (*quantize_fn)(const float *x, int64_t n, float scale, int32_t zp, uint8_t *q);

typedef struct qatt_task {
    const inf__qattention_job *j;
    qatt_sizes z;
    char *scratch;
    int64_t n_parts;
    quantize_fn quant;
} qatt_task;

/* rows x cols floats (row stride ld) quantized as operand `which` and packed
 * straight into b's layout (ops/qgemm.h, inf__qgemm_pack_column / _kgroup) as B = X^T
 * (trans: K^T, [cols, rows]) or B = X (V, [rows, cols]): values q - 128.
 * init[j] receives the sums' start value for A = the other operand, zero
 * point za: sum_k (a - za)(b - zb) = raw + (128 - zb) sum_k a + init[j] with
 * init[j] = K za zb - za sum_k b[k][j] (uint32 arithmetic: exact mod 2^32). */
static void pack_quantized(const qatt_task *t, const float *x, int64_t ld, int64_t rows, int64_t cols, int which,
                           bool trans, int32_t za, uint8_t *tmp, void *mem, int32_t *init, inf__qgemm_b *b) {
    const inf__qattention_job *j = t->j;
    int panel, kgroup, elem;
    inf__qgemm_layout(j->isa, &panel, &kgroup, &elem);
    int64_t k = trans ? cols : rows, n = trans ? rows : cols, kp = up(k, 4), np = up(n, panel);
    *b = (inf__qgemm_b){
        .isa = j->isa, .k = k, .n = n, .kp = kp, .np = np, .panel = panel, .kgroup = kgroup, .data = mem};
    if (np != n)
        memset(mem, 0, (size_t)(kp * np * elem)); /* the loops below write every group of columns < n */
    uint32_t *colsum = (uint32_t *)init;
    memset(colsum, 0, (size_t)np * sizeof *colsum);
    if (trans) { /* K^T: row r of K is column r of B */
        for (int64_t r = 0; r < rows; r++) {
            t->quant(x + r * ld, cols, j->qs[which], j->qz[which], tmp);
            memset(tmp + cols, 128, (size_t)(kp - cols)); /* 128: zero after the shift */
            uint32_t sum = 0;
            for (int64_t c = 0; c < cols; c++)
                sum += tmp[c];
            colsum[r] = sum;
            inf__qgemm_pack_column(b, 0, r, kp / kgroup, tmp);
        }
    } else { /* V: kgroup rows at a time fill one group of every panel */
        for (int64_t r0 = 0; r0 < kp; r0 += kgroup) {
            for (int e = 0; e < kgroup; e++) {
                uint8_t *row = tmp + e * cols;
                if (r0 + e < rows) {
                    t->quant(x + (r0 + e) * ld, cols, j->qs[which], j->qz[which], row);
                    for (int64_t c = 0; c < cols; c++)
                        colsum[c] += row[c];
                } else {
                    memset(row, 128, (size_t)cols);
                }
            }
            inf__qgemm_pack_kgroup(b, r0, 0, cols, tmp, cols);
        }
    }
    uint32_t kz = (uint32_t)k * (uint32_t)za * (uint32_t)j->qz[which];
    for (int64_t c = 0; c < np; c++)
        init[c] = (int32_t)(kz - (uint32_t)za * colsum[c]);
}

/* The row terms (128 - zb) * the sum of each of m rows of n bytes (stride ld). */
static void row_terms(const uint8_t *a, int64_t ld, int64_t m, int64_t n, int32_t zb, int32_t *out) {
    for (int64_t i = 0; i < m; i++) {
        uint32_t sum = 0;
        for (int64_t c = 0; c < n; c++)
            sum += a[i * ld + c];
        out[i] = (int32_t)((uint32_t)(128 - zb) * sum);
    }
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
    inf__qgemm_raw(kt, m, p->qa, t->z.kp_k, p->init_k, p->s32, t->z.np_k);
    row_terms(p->qa, t->z.kp_k, m, g->d, j->qz[INF_QATT_K], p->rowterm);
    const float sqk = j->qs[INF_QATT_Q] * j->qs[INF_QATT_K];
    for (int64_t i = 0; i < m; i++) {
        const int32_t *s = p->s32 + i * t->z.np_k;
        const uint32_t rt = (uint32_t)p->rowterm[i];
        for (int64_t c = 0; c < g->sk; c++)
            p->f[c] = (float)(int32_t)((uint32_t)s[c] + rt) * sqk * j->scale;
        if (g->mask) {
            const float *mr = g->mask + b * g->mb + h * g->mh + (i0 + i) * g->mi;
            for (int64_t c = 0; c < g->sk; c++)
                p->f[c] += mr[c * g->mj];
        }
        j->vm->softmax_row(p->f, p->f, g->sk);
        t->quant(p->f, g->sk, j->qs[INF_QATT_P], j->qz[INF_QATT_P], p->pa + i * t->z.kp_v);
    }
    inf__qgemm_raw(vt, m, p->pa, t->z.kp_v, p->init_v, p->o32, t->z.np_v);
    row_terms(p->pa, t->z.kp_v, m, g->sk, j->qz[INF_QATT_V], p->rowterm);
    const float spv = j->qs[INF_QATT_P] * j->qs[INF_QATT_V];
    for (int64_t i = 0; i < m; i++) {
        float *y = g->y + (b * g->sq * g->h + h) * g->dv + (i0 + i) * g->ldy;
        const int32_t *o = p->o32 + i * t->z.np_v;
        const uint32_t rt = (uint32_t)p->rowterm[i];
        for (int64_t c = 0; c < g->dv; c++)
            y[c] = (float)(int32_t)((uint32_t)o[c] + rt) * spv;
    }
}

static void unit(const qatt_task *t, const qatt_part *p, int64_t u) {
    const inf__qattention_job *j = t->j;
    const inf__attention_geom *g = &j->g;
    int64_t b = u / g->h, h = u % g->h;
    inf__qgemm_b kt, vt;
    pack_quantized(t, g->k + b * g->kb + h * g->kh, g->ldk, g->sk, g->d, INF_QATT_K, true, j->qz[INF_QATT_Q], p->kv,
                   p->kpack, p->init_k, &kt);
    pack_quantized(t, g->v + b * g->vb + h * g->vh, g->ldv, g->sk, g->dv, INF_QATT_V, false, j->qz[INF_QATT_P], p->kv,
                   p->vpack, p->init_v, &vt);
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
        p.f = (float *)mem, mem += t->z.f;
        p.init_k = (int32_t *)mem, p.init_v = p.init_k + t->z.np_k, p.rowterm = p.init_v + t->z.np_v;
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
    inf_status st = inf__attention_geometry(ctx, NULL, &j.g, &y);
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
