/*
 * gemm_bf16.c -- bf16 precision on request (see ops/gemm_bf16.h): the
 * scalar twin, the weight packing, and the session's bf16 plan that runs
 * MatMul / Gemm / FusedMatMul with bf16 weights in place of their FP32
 * kernels.
 */
#include <math.h>
#include <string.h>

#include "core/cpu.h"
#include "ops/gemm_bf16.h"
#include "ops/vmath.h"

/* ======================================================================== */
/*  Rounding and the reference twin                                          */
/* ======================================================================== */

uint16_t inf__bf16_from_f32(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* NaN: quiet */
    if ((u & 0x7f800000u) == 0) return (uint16_t)((u >> 16) & 0x8000);        /* zero, denormal: signed 0 */
    u += 0x7fffu + ((u >> 16) & 1);                                           /* nearest, ties to even */
    return (uint16_t)(u >> 16);
}

float inf__bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* A bf16 operand as vdpbf16ps reads it: denormals are zeros. */
static float bf16_in(uint16_t h) { return (h & 0x7f80) == 0 ? 0.0f * inf__bf16_to_f32(h) : inf__bf16_to_f32(h); }

/* One step of vdpbf16ps's chain: fused multiply-add, result flushed to zero. */
static float dp_step(float acc, float x, float y) {
    float r = fmaf(x, y, acc);
    return fabsf(r) < 1.17549435e-38f ? copysignf(0.0f, r) : r;
}

/* c[0, n) = columns j0 .. j0 + n of row i. */
static void epilogue_row(const inf__bf16_epilogue *ep, int64_t i, int64_t j0, float *c, const float *acc, int64_t n) {
    for (int64_t j = 0; j < n; j++) {
        float v = ep->alpha != 1.0f ? ep->alpha * acc[j] : acc[j];
        if (ep->accumulate) v = v + c[j];
        if (ep->bias) v = v + ep->bias[j0 + j];
        if (ep->res) v = v + ep->res[i * ep->ldr + j0 + j];
        c[j] = v;
    }
    if (ep->act) ep->act(c, c, n);
}

void inf__bf16_gemm_ref(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, bool trans_b, const float *b,
                        int64_t ldb, float *c, int64_t ldc, const inf__bf16_epilogue *ep) {
    float acc[64];
    for (int64_t i = 0; i < m; i++)
        for (int64_t j0 = 0; j0 < n; j0 += 64) {
            int64_t nj = n - j0 < 64 ? n - j0 : 64;
            for (int64_t jj = 0; jj < nj; jj++) {
                int64_t j = j0 + jj;
                float s = 0.0f;
                for (int64_t p = 0; p < k; p += 2) { /* odd element of the pair first, as vdpbf16ps */
                    float ao = p + 1 < k ? bf16_in(inf__bf16_from_f32(a[i * lda + p + 1])) : 0.0f;
                    float bo = p + 1 < k
                                   ? bf16_in(inf__bf16_from_f32(trans_b ? b[j * ldb + p + 1] : b[(p + 1) * ldb + j]))
                                   : 0.0f;
                    s = dp_step(s, bo, ao);
                    float ae = bf16_in(inf__bf16_from_f32(a[i * lda + p]));
                    float be = bf16_in(inf__bf16_from_f32(trans_b ? b[j * ldb + p] : b[p * ldb + j]));
                    s = dp_step(s, be, ae);
                }
                acc[jj] = s;
            }
            epilogue_row(ep, i, j0, c + i * ldc + j0, acc, nj);
        }
}

/* ======================================================================== */
/*  Packing: 16-column panels of k pairs, [k/2][16][2]                       */
/* ======================================================================== */

int64_t inf__bf16_packed_elems(int64_t k, int64_t n) { return ((n + 15) / 16) * ((k + 1) / 2) * 32; }

void inf__bf16_pack_b(bool trans_b, int64_t k, int64_t n, const float *b, int64_t ldb, uint16_t *dst) {
    int64_t k2 = (k + 1) / 2;
    for (int64_t p = 0; p < (n + 15) / 16; p++)
        for (int64_t kp = 0; kp < k2; kp++)
            for (int64_t jj = 0; jj < 16; jj++)
                for (int64_t h = 0; h < 2; h++) {
                    int64_t j = p * 16 + jj, kk = 2 * kp + h;
                    float v = j < n && kk < k ? (trans_b ? b[j * ldb + kk] : b[kk * ldb + j]) : 0.0f;
                    *dst++ = inf__bf16_from_f32(v);
                }
}

bool inf__bf16_supported(void) {
#if defined(__x86_64__)
    return inf__cpu_path_allows(INF__CPU_AVX512, INF_CPU_AVX512BF16);
#else
    return false;
#endif
}

/* ======================================================================== */
/*  The session's plan                                                       */
/* ======================================================================== */

typedef enum bf16_kind { BF16_MATMUL, BF16_GEMM, BF16_FUSED } bf16_kind;

struct inf__bf16_node {
    bf16_kind kind;
    uint16_t *panels; /* op(W) packed (inf__aligned_alloc) */
    const void *src;  /* W's data: the run uses the panels while the input is still it */
    int64_t k, n;
    float alpha, beta; /* Gemm */
    bool broadcast;    /* Gemm: C may broadcast (opset >= 7 or attribute broadcast) */
    inf__vmath_fn act; /* FusedMatMul: activation "Gelu" or "GeluTanh", else NULL */
};

struct inf__bf16_plan {
    int n_nodes;
    int count;
    inf__bf16_node **nodes; /* per node of the graph; NULL: FP32 */
};

/* The bf16 entry of one node, or *out = NULL when it keeps its FP32 kernel. */
static inf_status plan_node(const inf__node *node, inf__bf16_node **out) {
    *out = NULL;
    bf16_kind kind;
    if (!strcmp(node->op_type, "MatMul") && node->op->domain == INF_DOMAIN_ONNX)
        kind = BF16_MATMUL;
    else if (!strcmp(node->op_type, "Gemm") && node->op->domain == INF_DOMAIN_ONNX)
        kind = BF16_GEMM;
    else if (!strcmp(node->op_type, "FusedMatMul") && node->op->domain == INF_DOMAIN_INFERA)
        kind = BF16_FUSED;
    else
        return INF_OK;
    const inf_tensor *w = node->n_inputs > 1 ? inf__node_constant_input(node, 1) : NULL;
    if (!w || w->dtype != INF_DTYPE_F32 || w->ndim != 2 || !w->data) return INF_OK;
    if (kind == BF16_GEMM && inf__attr_int(node, "transA", 0)) return INF_OK;
    const char *act = kind == BF16_FUSED ? inf__attr_string(node, "activation", "") : "";
    if (*act && strcmp(act, "Gelu") && strcmp(act, "GeluTanh")) return INF_OK;
    bool trans_b = kind == BF16_GEMM && inf__attr_int(node, "transB", 0);
    inf__bf16_node *bn = inf__calloc(1, sizeof *bn);
    if (!bn) return INF_ENOMEM;
    bn->kind = kind;
    bn->k = trans_b ? w->dims[1] : w->dims[0];
    bn->n = trans_b ? w->dims[0] : w->dims[1];
    bn->src = w->data;
    bn->alpha = kind == BF16_GEMM ? inf__attr_float(node, "alpha", 1.0f) : 1.0f;
    bn->beta = kind == BF16_GEMM ? inf__attr_float(node, "beta", 1.0f) : 1.0f;
    bn->broadcast = node->opset >= 7 || inf__attr_int(node, "broadcast", 0) != 0;
    bn->act = !*act ? NULL : !strcmp(act, "Gelu") ? inf__vmath_best()->gelu : inf__vmath_gelu_tanh_best;
    bn->panels = inf__aligned_alloc((size_t)inf__bf16_packed_elems(bn->k, bn->n) * sizeof(uint16_t));
    if (!bn->panels) {
        inf__free(bn);
        return INF_ENOMEM;
    }
    const float *b = w->data;
    float *plain = NULL;
    if (w->flags & INF__TENSOR_GEMM_PANELS) { /* a bundle's W kept as FP32 panels only: the matrix back first */
        if (!(plain = inf__aligned_alloc((size_t)(bn->k * bn->n) * sizeof(float)))) {
            inf__aligned_free(bn->panels);
            inf__free(bn);
            return INF_ENOMEM;
        }
        bool t = (w->flags & INF__TENSOR_GEMM_PANELS_T) != 0; /* how the panels were made: B as stored */
        inf__ops_sgemm_unpack_b(t, w->dims[t ? 1 : 0], w->dims[t ? 0 : 1], w->data, plain);
        b = plain;
    }
    inf__bf16_pack_b(trans_b, bn->k, bn->n, b, w->dims[1], bn->panels);
    inf__aligned_free(plain);
    *out = bn;
    return INF_OK;
}

inf_status inf__bf16_plan_new(const inf__graph *g, inf__bf16_plan **out, inf_error *err) {
    *out = NULL;
    if (!inf__bf16_supported()) {
        const inf_cpu_info *ci = inf_cpu_get_info();
        return inf_error_set(err, INF_EUNSUPPORTED,
                             "precision bf16 needs AVX512_BF16 (vdpbf16ps) on the avx512 kernel path; this CPU (%s) "
                             "%s, kernel path %s%s: use precision fp32 (the default)",
                             *ci->brand ? ci->brand : "unknown",
                             ci->features & INF_CPU_AVX512BF16 ? "has it" : "has not", ci->path,
                             ci->forced ? " (lowered by INFERA_CPU)" : "");
    }
    inf__bf16_plan *p = inf__calloc(1, sizeof *p);
    if (p) p->nodes = inf__calloc((size_t)g->n_nodes + 1, sizeof *p->nodes);
    if (!p || !p->nodes) {
        inf__free(p);
        return inf_error_set(err, INF_ENOMEM, "out of memory packing bf16 weights");
    }
    p->n_nodes = g->n_nodes;
    for (int i = 0; i < g->n_nodes; i++) {
        if (plan_node(&g->nodes[i], &p->nodes[i]) != INF_OK) {
            inf__bf16_plan_free(p);
            return inf_error_set(err, INF_ENOMEM, "out of memory packing the bf16 weights of node '%s'",
                                 g->nodes[i].name);
        }
        p->count += p->nodes[i] != NULL;
    }
    *out = p;
    return INF_OK;
}

void inf__bf16_plan_free(inf__bf16_plan *p) {
    if (!p) return;
    for (int i = 0; i < p->n_nodes; i++)
        if (p->nodes[i]) {
            inf__aligned_free(p->nodes[i]->panels);
            inf__free(p->nodes[i]);
        }
    inf__free(p->nodes);
    inf__free(p);
}

const inf__bf16_node *inf__bf16_plan_node(const inf__bf16_plan *p, int i) {
    return p && i >= 0 && i < p->n_nodes ? p->nodes[i] : NULL;
}

int inf__bf16_plan_count(const inf__bf16_plan *p) { return p ? p->count : 0; }

/* ======================================================================== */
/*  Running a node in bf16                                                   */
/* ======================================================================== */

/* Y[rows, n] = epilogue(A W) on the bf16 kernel. */
static inf_status bf16_product(inf__kernel_ctx *ctx, const inf__bf16_node *bn, int64_t rows, const float *a, float *y,
                               const inf__bf16_epilogue *ep) {
    if (rows == 0 || bn->n == 0) return INF_OK;
#if defined(__x86_64__)
    void *ws = inf__kernel_scratch(ctx, inf__bf16_ws_bytes(rows, bn->k));
    if (!ws) return INF_ENOMEM;
    inf__bf16_gemm_avx512(ctx->pool, rows, bn->n, bn->k, a, bn->k, bn->panels, y, bn->n, ep, ws);
    return INF_OK;
#else
    (void)a, (void)y, (void)ep;
    return inf__kernel_error(ctx, INF_EUNSUPPORTED, "no bf16 kernel on this architecture");
#endif
}

/* MatMul(A, W) and FusedMatMul(A, W, bias [, Z]) with A's last dimension k:
 * Y has A's leading dimensions and n. */
static bool rows_case(const inf__kernel_ctx *ctx, const inf__bf16_node *bn, int64_t *rows) {
    const inf_tensor *a = ctx->in[0], *w = ctx->in[1];
    if (a->kind != INF_KIND_TENSOR || a->dtype != INF_DTYPE_F32 || w->data != bn->src || a->ndim < 1 ||
        a->dims[a->ndim - 1] != bn->k)
        return false;
    *rows = 1;
    for (int d = 0; d < a->ndim - 1; d++)
        *rows *= a->dims[d];
    return true;
}

static inf_status run_rows(inf__kernel_ctx *ctx, const inf__bf16_node *bn, bool *done) {
    const inf_tensor *a = ctx->in[0];
    int64_t rows;
    *done = false;
    if (!rows_case(ctx, bn, &rows)) return INF_OK;
    inf__bf16_epilogue ep = {1.0f, false, NULL, NULL, bn->n, NULL};
    int ndim = a->ndim;
    int64_t dims[INF_MAX_DIMS];
    memcpy(dims, a->dims, sizeof(int64_t) * (size_t)ndim);
    dims[ndim - 1] = bn->n;
    if (bn->kind == BF16_FUSED) {
        const inf_tensor *bias = ctx->in[2], *z = ctx->n_in > 3 ? ctx->in[3] : NULL;
        if (ndim < 1 || bias->dtype != INF_DTYPE_F32 || bias->ndim != 1 || bias->dims[0] != bn->n) return INF_OK;
        if (z && (z->kind != INF_KIND_TENSOR || z->dtype != INF_DTYPE_F32 || z->ndim != ndim ||
                  memcmp(z->dims, dims, sizeof(int64_t) * (size_t)ndim)))
            return INF_OK;
        ep.bias = bias->data;
        ep.res = z ? z->data : NULL;
        ep.act = bn->act;
    } else if (ndim == 1) {
        ndim = 1, dims[0] = bn->n; /* MatMul of a vector: [k] @ [k, n] = [n] */
    }
    *done = true;
    inf_tensor *y;
    inf_status st = inf__kernel_output(ctx, 0, INF_DTYPE_F32, ndim, dims, &y);
    if (st != INF_OK || inf_tensor_numel(y) == 0) return st;
    return bf16_product(ctx, bn, rows, a->data, y->data, &ep);
}

/* Gemm(A, W [, C]) without transA: Y = alpha A W + beta C. */
static inf_status run_gemm(inf__kernel_ctx *ctx, const inf__bf16_node *bn, bool *done) {
    const inf_tensor *a = ctx->in[0], *w = ctx->in[1], *c = ctx->n_in > 2 ? ctx->in[2] : NULL;
    *done = false;
    if (a->dtype != INF_DTYPE_F32 || a->ndim != 2 || a->dims[1] != bn->k || w->data != bn->src ||
        (c && c->dtype != INF_DTYPE_F32))
        return INF_OK;
    int64_t m = a->dims[0], n = bn->n, c_rs = 0, c_cs = 0;
    bool use_c = c && bn->beta != 0.0f;
    if (c) { /* C's shape as Gemm's kernel accepts it; anything else: its error */
        int nd = c->ndim;
        int64_t dm = nd >= 2 ? c->dims[0] : 1, dn = nd >= 1 ? c->dims[nd - 1] : 1;
        bool ok = nd <= 2 && (dm == m || dm == 1) && (dn == n || dn == 1);
        if (!ok || (!bn->broadcast && !(nd == 2 && dm == m && dn == n))) return INF_OK;
        c_rs = dm == 1 ? 0 : dn;
        c_cs = dn == 1 ? 0 : 1;
    }
    *done = true;
    int64_t dims[2] = {m, n};
    inf_tensor *y;
    inf_status st = inf__kernel_output(ctx, 0, INF_DTYPE_F32, 2, dims, &y);
    if (st != INF_OK || m == 0 || n == 0) return st;
    float *yf = y->data;
    if (use_c)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                yf[i * n + j] = bn->beta * ((const float *)c->data)[i * c_rs + j * c_cs];
    inf__bf16_epilogue ep = {bn->alpha, use_c, NULL, NULL, n, NULL};
    return bf16_product(ctx, bn, m, a->data, yf, &ep);
}

inf_status inf__bf16_node_run(inf__kernel_ctx *ctx, const inf__bf16_node *bn) {
    bool done = false;
    inf_status st = bn->kind == BF16_GEMM ? run_gemm(ctx, bn, &done) : run_rows(ctx, bn, &done);
    if (st != INF_OK || done) return st;
    return ctx->node->op->impl->run(ctx); /* not the packed case: the FP32 kernel */
}
