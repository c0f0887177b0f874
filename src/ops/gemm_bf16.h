/*
 * gemm_bf16.h -- reduced precision on request: the bf16 GEMM behind a
 * session of precision bf16 (inf_session_options.precision, `--precision
 * bf16`; docs/sessions.md).  Never the default: an FP32 session never
 * reaches this code.
 *
 * DESIGN
 *   At session creation (inf__bf16_plan_new) the constant float32 weights
 *   of MatMul, Gemm and FusedMatMul nodes of the main graph are rounded to
 *   bf16 (round to nearest even) and packed into 16-column panels of
 *   k pairs, laid out [k/2][16][2] (the operand order of vdpbf16ps); the
 *   model's FP32 weights are untouched, so FP32 sessions of the same model
 *   are unchanged.  At run time (inf__bf16_node_run, called by the
 *   session in place of the node's kernel) the activations are rounded to
 *   bf16 per row panel into scratch and multiplied with vdpbf16ps into
 *   FP32 accumulators (ops/x86/gemm_bf16_avx512.c); the store applies the
 *   same epilogue as the FP32 kernels (alpha, Gemm's beta*C, bias,
 *   residual, activation).  Each C element is one FP32 chain over k in
 *   ascending pairs, (odd product, then even product) per pair, whatever
 *   m, the tile or the thread split: a row's bits do not depend on the
 *   batch.  Every other node -- and a node whose run-time inputs are not
 *   the packed case (an overridden initializer, Gemm transA, a residual of
 *   another shape) -- runs its FP32 kernel.
 *
 *   The reference twin (inf__bf16_gemm_ref) does the same arithmetic in
 *   scalar C from the unpacked FP32 operands: bf16 rounding of A and B,
 *   inputs and results of each step with denormals flushed to zero as
 *   vdpbf16ps does.  tests/kernels/test_gemm_bf16.c compares them.
 */
#ifndef INF_OPS_GEMM_BF16_H
#define INF_OPS_GEMM_BF16_H

#include "ops/ops.h"

/* float32 -> bf16 bits, round to nearest even; NaN stays a (quiet) NaN.
 * A denormal float rounds to a signed zero (as vcvtneps2bf16 does). */
uint16_t inf__bf16_from_f32(float x);
float inf__bf16_to_f32(uint16_t h);

/* uint16 elements of op(B)[k,n] packed as bf16 panels. */
int64_t inf__bf16_packed_elems(int64_t k, int64_t n);
/* Packs op(B)[k,n] (b row-major with row stride ldb; trans_b: b is [n,k]). */
void inf__bf16_pack_b(bool trans_b, int64_t k, int64_t n, const float *b, int64_t ldb, uint16_t *dst);

/* The store after the last k pair: c = act(((alpha * acc) [+ c]) [+ bias[j]] [+ res[i*ldr+j]]). */
typedef struct inf__bf16_epilogue {
    float alpha;       /* 1: no multiply */
    bool accumulate;   /* add the old C (Gemm's beta * C, filled in before) */
    const float *bias; /* [n] or NULL */
    const float *res;  /* [m, n] with row stride ldr, or NULL */
    int64_t ldr;
    void (*act)(const float *x, float *y, int64_t n); /* over each row's segment, or NULL */
} inf__bf16_epilogue;

/* C[m,n] = epilogue(A[m,k] @ B[k,n]) with A and B rounded to bf16 and FP32
 * accumulation, scalar (the twin).  B unpacked, as inf__bf16_pack_b takes it. */
void inf__bf16_gemm_ref(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, bool trans_b, const float *b,
                        int64_t ldb, float *c, int64_t ldc, const inf__bf16_epilogue *ep);

/* The AVX512-BF16 kernel (x86-64 only; call only when inf__bf16_supported()):
 * the same bits as inf__bf16_gemm_ref with B packed by inf__bf16_pack_b.
 * ws: scratch of inf__bf16_ws_bytes(m, k) bytes, 64-byte aligned.  Rows and
 * column panels are split over pool's threads (pool may be NULL). */
size_t inf__bf16_ws_bytes(int64_t m, int64_t k);
void inf__bf16_gemm_avx512(inf__pool *pool, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                           const uint16_t *bp, float *c, int64_t ldc, const inf__bf16_epilogue *ep, void *ws);

/* This CPU (and INFERA_CPU) allow the bf16 kernel: AVX-512 path and AVX512_BF16. */
bool inf__bf16_supported(void);

/* ---- the session's side (graph/session.c) ---- */
typedef struct inf__bf16_node inf__bf16_node;
typedef struct inf__bf16_plan inf__bf16_plan;
#ifdef INF_EDGE
/* The edge runtime (libinfera_edge.a) leaves the bf16 kernels out (size,
 * issue 22): precision bf16 is refused there. */
static inline inf_status inf__bf16_plan_new(const inf__graph *g, inf__bf16_plan **out, inf_error *err) {
    (void)g;
    *out = NULL;
    return inf_error_set(err, INF_EUNSUPPORTED, "session option precision bf16 is not in the edge runtime (libinfera_edge)");
}
static inline void inf__bf16_plan_free(inf__bf16_plan *plan) { (void)plan; }
static inline const inf__bf16_node *inf__bf16_plan_node(const inf__bf16_plan *plan, int node_index) {
    (void)plan, (void)node_index;
    return NULL;
}
static inline inf_status inf__bf16_node_run(inf__kernel_ctx *ctx, const inf__bf16_node *bn) {
    (void)ctx, (void)bn;
    return INF_EUNSUPPORTED;
}
#else
/* Packs the weights of g's MatMul/Gemm/FusedMatMul nodes (g: the main graph).
 * INF_EUNSUPPORTED naming the CPU when it has no AVX512_BF16. */
inf_status inf__bf16_plan_new(const inf__graph *g, inf__bf16_plan **out, inf_error *err);
void inf__bf16_plan_free(inf__bf16_plan *plan);
/* The node's bf16 entry, or NULL (it runs its own kernel). */
const inf__bf16_node *inf__bf16_plan_node(const inf__bf16_plan *plan, int node_index);
/* Runs the node in bf16 (or, when its inputs are not the packed case, its own kernel). */
inf_status inf__bf16_node_run(inf__kernel_ctx *ctx, const inf__bf16_node *bn);
/* Nodes given bf16 weights (for reports and tests). */
int inf__bf16_plan_count(const inf__bf16_plan *plan);
#endif /* INF_EDGE */

#endif /* INF_OPS_GEMM_BF16_H */
