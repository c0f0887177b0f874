/*
 * ops.h -- the operator table and the contract every kernel follows.
 *
 * DESIGN: src/ops/ops.def is the single list of operators, one line each:
 *
 *     OP(DOMAIN, "OpType", first_opset, last_opset, impl, min_in, max_in, min_out, max_out, required)
 *
 * The arity columns (max -1 = variadic) come from ONNX's schemas
 * (scripts/gen-op-arity.py), with `required` a bit mask of the inputs that
 * may not be empty; the loader rejects a node outside them, so a kernel may
 * rely on its required inputs being present (non-NULL at run time).
 * It generates the sorted table inf__op_table[] (op_table.c), looked up by
 * (domain, op type) with a binary search at load time, never a strcmp chain.
 * `impl` names a `const inf__op_impl` defined in the op's family file
 * (ops/ref/<family>.c); one impl may serve several ops and opset versions
 * (node->opset tells the kernel which version's semantics apply).
 *
 * A kernel has two entry points:
 *   init(node, err)  at load time: parse and validate the attributes, store
 *                    them in node->params (allocate with inf__op_params).
 *                    May be NULL when the op has no attributes.
 *   run(ctx)         at run time: read ctx->in[], compute, and create each
 *                    output with inf__kernel_output (memory comes from the
 *                    session and is reused across runs, so a warm run
 *                    allocates nothing).  Data from the model or the caller is
 *                    never asserted on: bad shapes or values return an error
 *                    through inf__kernel_error, which names the node.
 *
 * Inputs: ctx->in[i] is NULL for an omitted optional input.  Tensors are
 * dense row-major.  Outputs may alias an input (inf__kernel_output_alias) for
 * ops that only change the shape (Reshape, Squeeze, Identity...).
 *
 * See ops/TEMPLATE.c for a walk-through of adding an op.
 */
#ifndef INF_OPS_H
#define INF_OPS_H

#include "core/core.h"
#include "graph/graph.h"

typedef struct inf__exec inf__exec; /* the running session frame (graph/session.c) */

typedef struct inf__kernel_ctx {
    const inf__node *node;
    int n_in;
    inf_tensor *const *in;  /* n_in entries; read-only to the kernel */
    int n_out;
    inf_tensor **out;       /* set by inf__kernel_output*; NULL until then */
    inf__pool *pool;        /* the session's threads (size 1 when single-threaded) */
    inf__exec *exec;
    inf_error *err;
    /* set by a kernel that applied node->epilogue itself (e.g. in its GEMM
     * store), so the session skips its separate pass over the output */
    bool epilogue_done;
} inf__kernel_ctx;

typedef struct inf__op_impl {
    inf_status (*init)(inf__node *node, inf__arena *arena, inf_error *err);
    inf_status (*run)(inf__kernel_ctx *ctx);
} inf__op_impl;

typedef enum inf__domain {
    INF_DOMAIN_ONNX = 0,     /* "" or "ai.onnx" */
    INF_DOMAIN_ML = 1,       /* "ai.onnx.ml" */
    INF_DOMAIN_TRAINING = 2, /* "ai.onnx.preview.training" */
    INF_DOMAIN_MS = 3,       /* "com.microsoft": ONNX Runtime's contrib ops (version 1)
                                that its quantizer writes in QOperator files */
    INF_DOMAIN_INFERA = 4,   /* "ai.infera": internal fused ops made by the optimizer's
                                pattern passes; no model can name them
                                (inf__domain_from_string does not map it) */
    INF_DOMAIN_COUNT
} inf__domain;

typedef struct inf__op {
    inf__domain domain;
    const char *name;
    int first_opset, last_opset;
    const inf__op_impl *impl;
    int min_inputs, max_inputs;   /* -1 max: variadic; -1 min: not checked */
    int min_outputs, max_outputs;
    uint32_t required_inputs;     /* bit i: input i may not be empty */
} inf__op;

extern const inf__op inf__op_table[];
extern const int inf__op_count;
extern const char *const inf__op_impl_symbol[]; /* per row: the impl's symbol name */

/* The newest opset per domain that Infera knows: a model importing a newer
 * one is refused even for operators whose schema has not changed. */
#define INF_OPSET_MAX_ONNX 26
#define INF_OPSET_MAX_ML 5
int inf__domain_max_opset(inf__domain domain);

/* ONNX's schema history of one operator (ops/schema_versions.def,
 * generated): the opset versions at which its schema changed, ascending,
 * 0-terminated.  An ops.def row's range [first, last] must start and end on
 * these boundaries (last + 1 a since-version, or the domain's newest opset):
 * the unit test ops_schema_ranges checks it. */
#define INF_SCHEMA_MAX_VERSIONS 16
typedef struct inf__op_schema {
    inf__domain domain;
    const char *name;
    int since[INF_SCHEMA_MAX_VERSIONS];
} inf__op_schema;
extern const inf__op_schema inf__op_schemas[];
extern const int inf__op_schema_count;
const inf__op_schema *inf__op_schema_find(inf__domain domain, const char *name);
/* The schema version a model importing `opset` uses: the largest
 * since-version <= opset (0 when the operator did not exist yet). */
int inf__op_schema_effective(const inf__op_schema *schema, int opset);

/* Maps a domain string to inf__domain; -1 if unknown (and for "ai.infera":
 * internal ops are bound by the optimizer, never by a model). */
int inf__domain_from_string(const char *domain);
/* Finds (domain, name); NULL if absent.  Opset range is checked by the caller. */
const inf__op *inf__op_find(inf__domain domain, const char *name);

/* ---- operator facts for the graph layer (ops/op_facts.c) ---- */

typedef enum inf__shape_rule {
    INF_SHAPE_OTHER = 0,  /* an op-specific rule, or unknown */
    INF_SHAPE_SAME,       /* output 0: input 0's shape and element type */
    INF_SHAPE_BROADCAST,  /* output 0: the numpy broadcast of the inputs */
} inf__shape_rule;

/* Sub-batching's conditions beyond the input letters (op_facts.c "batch"):
 * graph/subbatch.c checks each (its check_* functions). */
typedef enum inf__batch_check {
    INF_BATCH_NONE = 0,
    INF_BATCH_AXIS_M1,
    INF_BATCH_CONCAT,
    INF_BATCH_FLATTEN,
    INF_BATCH_GATHER,
    INF_BATCH_GEMM,
    INF_BATCH_MATMUL,
    INF_BATCH_NO_EXTRA_OUTPUTS,
    INF_BATCH_PAD,
    INF_BATCH_QUANTIZE,
    INF_BATCH_RANK4,
    INF_BATCH_REDUCE,
    INF_BATCH_RESHAPE,
    INF_BATCH_ROWS,
    INF_BATCH_SOFTMAX,
    INF_BATCH_SQUEEZE,
    INF_BATCH_TRANSPOSE,
    INF_BATCH_UNSQUEEZE,
    INF_BATCH_CHECK_COUNT
} inf__batch_check;

typedef struct inf__op_facts {
    inf__domain domain;
    const char *name;
    uint32_t inplace_inputs;  /* bit i: output 0 may reuse input i's buffer (memplan) */
    inf__shape_rule shape;    /* shape_infer */
    bool activation;          /* optimize: folds into the producer's epilogue */
    bool takes_activation;    /* optimize: can apply a folded activation */
    bool nondeterministic;    /* optimize: never constant-folded */
    const char *batch;        /* subbatch: keeps axis 0's rows apart, input rule (NULL: may mix rows) */
    inf__batch_check batch_check; /* subbatch: the further condition */
} inf__op_facts;

/* One row per inf__op_table row, same order. */
extern const inf__op_facts inf__op_facts_table[];
extern const int inf__op_facts_count;
/* The facts of a bound operator (all false for NULL). */
const inf__op_facts *inf__op_facts_of(const inf__op *op);

/* ---- services for kernels (implemented in graph/session.c) ---- */

/* Creates output i with the given element type and shape, data uninitialised
 * (zeroed for strings).  *out receives it; it is also ctx->out[i]. */
inf_status inf__kernel_output(inf__kernel_ctx *ctx, int i, inf_dtype dtype, int ndim,
                              const int64_t *dims, inf_tensor **out);
/* Output i shares the data of input `input` with a new shape (same numel). */
inf_status inf__kernel_output_alias(inf__kernel_ctx *ctx, int i, int input, int ndim,
                                    const int64_t *dims, inf_tensor **out);
/* Output i becomes a heap value (sequence, map, none or any tensor) built by
 * the kernel with inf_tensor_new*; ownership passes to the session, also on
 * failure. */
inf_status inf__kernel_output_value(inf__kernel_ctx *ctx, int i, inf_tensor *value);
/* Scratch memory for the duration of the kernel's run (freed when it
 * returns), 64-byte aligned; from the session's pool, so a warm run still
 * allocates nothing.  At most INF_KERNEL_MAX_SCRATCH blocks per run.
 * Returns NULL (after setting the error) when out of memory. */
#define INF_KERNEL_MAX_SCRATCH 4
void *inf__kernel_scratch(inf__kernel_ctx *ctx, size_t bytes);
/* Formats an error naming the node: "node 'name' (OpType): <message>". */
inf_status inf__kernel_error(inf__kernel_ctx *ctx, inf_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same for load-time checks in init. */
inf_status inf__node_error(const inf__node *node, inf_error *err, inf_status status,
                           const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* INF_OK, or (with the error set) INF_ETIMEDOUT once the run has passed its
 * time budget (session option max_run_ms), which the session checks between
 * nodes only: for a kernel whose work its attributes can make unbounded
 * (TfIdfVectorizer's skip-grams), to call every few milliseconds of work.
 * A coarse clock read: a few ns. */
inf_status inf__kernel_check_time(inf__kernel_ctx *ctx);
/* Thread-safe, sets nothing: true once the run has passed its time budget.
 * For the workers of a parallel kernel (pooling, depthwise conv), which stop
 * their share when it turns true, every few milliseconds of work (never per
 * element); the kernel's own thread then returns inf__kernel_check_time's
 * error (a budget, once run out, stays run out). */
bool inf__kernel_out_of_time(const inf__kernel_ctx *ctx);

/* Runs subgraph g (an attribute of ctx->node) with the given inputs; outer
 * scope values come from the running frame.  On success outputs[] point at
 * values owned by the subgraph frame, valid until its next run. */
inf_status inf__kernel_run_subgraph(inf__kernel_ctx *ctx, const inf__graph *g, int n_inputs,
                                    inf_tensor *const *inputs, inf_tensor *const **outputs);

/* Allocates zeroed op parameters in the model arena (for init). */
#define inf__op_params(arena, type) ((type *)inf__arena_alloc((arena), sizeof(type)))

/* ---- cache blocking (ops/blocking.c) ----
 * Block sizes of the dense kernels from the cache sizes found at start-up:
 * a share of a cache level, capped at the values measured best on Zen 3
 * (512 KiB L2) and Zen 4 (1 MiB L2), where they are exactly those values.
 * KC (the 256-deep k block) is fixed: it decides the bits. */
typedef struct inf__blocking {
    int64_t gemm_mc;              /* rows of A packed per GEMM task: a multiple of 6, 24..72 */
    int64_t gemm_slab_floats;     /* most floats of op(B) packed per slab */
    int64_t subbatch_bytes;       /* activations of one sub-batch (graph/subbatch.c) */
    int64_t winograd_block_bytes; /* V + M of one Winograd block of tiles */
    int64_t winograd_s2_u_bytes;  /* most U of a stride-2 Winograd layer (ops/x86/conv_winograd_avx2.c) */
    int64_t pointwise_w_floats;   /* floats of W per 1x1-convolution channel block */
    int64_t winograd_prefetch_bytes; /* X or Y above this: the Winograd kernel prefetches their rows */
    bool gemm_wide_packed;        /* L1d holds a 6x32 tile pair's KC x 32 B block (32 KiB) beside the A
                                     panel: the AVX-512 tile may run with A packed (L1d >= 48 KiB) */
} inf__blocking;
/* The blocking for these cache sizes (bytes; l3 0 = unknown). */
void inf__blocking_for(int64_t l1d, int64_t l2, int64_t l3, inf__blocking *out);
/* The blocking for this machine's caches (core/cpu.c). */
void inf__blocking_get(inf__blocking *out);

/* ---- shared compute routines ---- */

/* C[m,n] = alpha * op(A)[m,k] @ op(B)[k,n] + beta * C, row-major float32,
 * lda/ldb/ldc in elements; rows are split across pool's threads (pool may be
 * NULL).  Not to be called from inside a pool task (ops/ref/gemm.c). */
void inf__ops_sgemm(inf__pool *pool, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                    const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
/* Batch invariance (DESIGN.md section 1): each C element depends only on
 * its row of op(A), its column of op(B), k, alpha, beta and its old value --
 * never on m, on where the row falls in a tile, on the thread split or on
 * the code path (pool or not, packed B or not): every path sums k in the
 * same blocks and the same order (tests/kernels/test_gemm.c, bit for bit).
 * The two implementations behind inf__ops_sgemm, same contract (for the
 * kernel tests): the portable blocked loops (ops/ref/gemm.c), and the
 * AVX2/FMA one (ops/x86/gemm_avx2.c; x86-64 only, call only when
 * inf__cpu_has_avx2_fma()).  The two give different bits (FMA, other
 * k blocks); a machine uses one.  The AVX2 one always returns true (it
 * works without its workspace, more slowly); the bool is kept for callers. */
void inf__ops_sgemm_ref(inf__pool *pool, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                        float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                        float *c, int64_t ldc);
bool inf__ops_sgemm_avx2(inf__pool *pool, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                         float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                         float *c, int64_t ldc);

/* op(B) packed ahead of time for the AVX2/FMA kernel (ops/x86/gemm_avx2.c):
 * constant weights are packed once at load (Gemm, MatMul init) into
 * 16-column panels laid out [k][16], columns past n zero.
 * inf__ops_sgemm_packed_floats: the floats the packed copy takes.
 * inf__ops_sgemm_pack_b: packs op(B)[k,n] (b row-major, ldb) into dst,
 *   which must be 32-byte aligned.
 * inf__ops_sgemm_packed_avx2: inf__ops_sgemm with B already packed; gives
 *   the same bits as the unpacked call.
 * All three x86-64 only, and the last two only when inf__cpu_has_avx2_fma(). */
int64_t inf__ops_sgemm_packed_floats(int64_t k, int64_t n);
void inf__ops_sgemm_pack_b(bool trans_b, int64_t k, int64_t n, const float *b, int64_t ldb, float *dst);
void inf__ops_sgemm_packed_avx2(inf__pool *pool, bool trans_a, int64_t m, int64_t n, int64_t k, float alpha,
                                const float *a, int64_t lda, const float *bp, float beta, float *c,
                                int64_t ldc);
/* What a fused MatMul (FusedMatMul, ops/ref/fused_matmul.c) does in the
 * GEMM's store, after the last k block: C[i][j] = act(C[i][j] + bias[j] +
 * res[i * ldr + j]) -- two float adds in that order, then act over the row
 * segment in place -- the arithmetic of separate Add, Add and activation
 * nodes.  Any member may be NULL.  inf__ops_sgemm_packed_ep_avx2 is
 * inf__ops_sgemm_packed_avx2 with it. */
typedef struct inf__gemm_epilogue {
    const float *bias; /* [n] */
    const float *res;  /* [m, n], row stride ldr */
    int64_t ldr;
    void (*act)(const float *x, float *y, int64_t n);
    bool relu; /* act is a Relu (NaN -> 0): the kernels apply it in each tile's store as max(v, 0) */
} inf__gemm_epilogue;
void inf__ops_sgemm_packed_ep_avx2(inf__pool *pool, bool trans_a, int64_t m, int64_t n, int64_t k, float alpha,
                                   const float *a, int64_t lda, const float *bp, float beta, float *c, int64_t ldc,
                                   const inf__gemm_epilogue *ep);
/* Relu over a row segment, as the session's fused Relu (NaN -> 0): the act of
 * an epilogue with relu set (ops/ref/gemm.c; x86-64). */
void inf__ops_relu_row(const float *x, float *y, int64_t n);
/* FusedMatMul (made by graph/passes/matmul_add.c from a MatMul node) uses
 * the MatMul's W packed at its load, rather than packing W a second time. */
void inf__ops_fused_matmul_take_packing(inf__node *fused, const inf__node *matmul);
/* For a kernel's init: packs op(B) into the model arena when the CPU has
 * AVX2/FMA (*out = the panels), else *out = NULL (the caller keeps the
 * reference path).  INF_ENOMEM when the arena cannot grow.  (ops/ref/gemm.c) */
inf_status inf__ops_sgemm_prepack(inf__arena *arena, bool trans_b, int64_t k, int64_t n, const float *b,
                                  int64_t ldb, const float **out);

/* Packed weights kept in a compiled bundle (bundle/, docs/edge.md): while a
 * log is active on the calling thread (inf__ops_prepack_begin .. _end), a
 * RECORD log collects every panel set inf__ops_sgemm_prepack makes (`infera
 * compile` loads the model so), and a SUPPLY log is looked up first: panels
 * for the same (b, trans_b, k, n, ldb) are used in place instead of packing
 * again (a bundle's load).  Thread-local, so loads on other threads are not
 * affected. */
typedef struct inf__prepack_entry {
    const float *b;
    bool trans_b;
    int64_t k, n, ldb;
    const float *panels;
    int64_t floats; /* inf__ops_sgemm_packed_floats(k, n) */
} inf__prepack_entry;
/* The same for a convolution's W packed for its AVX2 variant at init
 * (ops/ref/conv.c pack_const_w): keyed by (w, var, m, group, cg, kdim). */
typedef struct inf__convpack_entry {
    const float *w;
    int32_t var;                /* inf__conv2d_avx2_variant */
    int64_t m, group, cg, kdim; /* kdim = cg * kh * kw */
    const float *packed;
    int64_t floats;             /* variant_w_floats (ops/ref/conv.c) */
} inf__convpack_entry;
typedef struct inf__prepack_log {
    bool supply;                /* false: record */
    inf__prepack_entry *items;  /* record: inf__malloc'd, grown; supply: the caller's */
    int n, cap;
    inf__convpack_entry *conv;  /* likewise, convolution weights */
    int n_conv, cap_conv;
    bool oom;                   /* record: an entry could not be kept */
} inf__prepack_log;
void inf__ops_prepack_begin(inf__prepack_log *log);
void inf__ops_prepack_end(void);
/* The calling thread's log (between begin and end), or NULL. */
inf__prepack_log *inf__ops_prepack_current(void);
/* Packs e->w again as e says into dst (e->floats floats; x86-64 only). */
void inf__ops_conv_pack_again(const inf__convpack_entry *e, float *dst);

/* A bundle's constant stored as its GEMM panels alone (bundle/, docs/edge.md
 * "panels only"): its data pointer is the panels of op(B) (what
 * inf__ops_sgemm_pack_b makes: panels of INF__SGEMM_PANEL_COLS columns,
 * [k][16] each, columns past n zero), not the row-major matrix; the flag
 * says so, and _T that op(B) = B^T (the readers use transB = 1).  Only the
 * readers inf__ops_gemm_b_panels_only admits read it, and only through the
 * panels the bundle supplies (their init finds them in the SUPPLY log);
 * anything else that wants the matrix unpacks it (inf__ops_sgemm_unpack_b).
 * Bits of inf_tensor.flags above the public INF_TENSOR_* ones. */
#define INF__TENSOR_GEMM_PANELS 0x40
#define INF__TENSOR_GEMM_PANELS_T 0x80
#define INF__SGEMM_PANEL_COLS 16
/* B (trans_b 0: [k, n]; 1: [n, k]; dense) from the panels of op(B) [k, n]:
 * the inverse of inf__ops_sgemm_pack_b with ldb = the row length.  Portable
 * C (a CPU without AVX2 unpacks a bundle's panels-only constants at load). */
void inf__ops_sgemm_unpack_b(bool trans_b, int64_t k, int64_t n, const float *panels, float *b);
/* True when node's kernel, given the packed panels of its constant input
 * `input` at init, never reads that input's plain data at run (only the
 * panels, while the run's input is that constant); *trans_b: whether it
 * packs op(B) = B^T.  Gemm, MatMul and FusedMatMul for their input 1. */
bool inf__ops_gemm_b_panels_only(const inf__node *node, int input, bool *trans_b);

/* Attention (ops/ref/attention.c): kt[p * sk + t] = scale * k[t * ldk + p]
 * for t < sk, p < d (K of one head scaled and transposed), with AVX2
 * (ops/x86/attention_avx2.c; x86-64, only when inf__cpu_has_avx2_fma()).
 * The same bits as that loop. */
void inf__attention_kt_avx2(const float *k, int64_t ldk, int64_t sk, int64_t d, float scale, float *kt);
/* float32 1-D/2-D Conv with AVX2/FMA (ops/x86/conv_avx2.c; x86-64, only
 * when inf__cpu_has_avx2_fma()): im2col fused into the GEMM's B packing,
 * W packed as 6-row panels (inf__conv2d_pack_w, at load for a constant W),
 * bias and act (INF_EPILOGUE_NONE, _RELU or _CLIP with [lo, hi]) applied
 * in the store.  Same bits as im2col + inf__ops_sgemm_avx2 + a float bias
 * add (then + res[i] when res is not NULL: a residual of Y's shape, the
 * fused ConvAdd; then the activation); 1-D is ih = oh = kh = 1.  Image offsets
 * are 32-bit: the caller keeps ih*iw, and iw + pads + the dilated kernel +
 * 16*sw, below INF_CONV2D_MAX_SPAN.  x: [n, c, ih, iw], y: [n, m, oh, ow]. */
#define INF_CONV2D_MAX_SPAN ((int64_t)1 << 28)
/* A MaxPool fused into a 2-D Conv's store (ConvMaxPool, made by
 * graph/passes/conv_pool.c): kh x kw windows at strides sh, sw over the
 * conv's oh x ow output (after bias and activation), no padding, no
 * dilation, floor: oh x ow here are the pooled sizes. */
typedef struct inf__conv2d_maxpool {
    int64_t kh, kw, sh, sw, oh, ow;
} inf__conv2d_maxpool;
/* Most output channels of a ConvMaxPool whose AVX-512 rows kernel stores the
 * pooled Y channels-last (conv_rows_avx512.c: a [channel][16] stack buffer) */
#define INF_CONV2D_POOL_LAST_MAX_M 256

/* Channels-last operands of a Conv (inf__conv2d.nhwc; the node attribute
 * channels_last, set by graph/passes/channels_last.c): a tensor whose bit
 * is set holds [n][h][w][c] in memory while its shape stays [n, c, h, w]. */
enum { INF_NHWC_X = 1, INF_NHWC_Y = 2, INF_NHWC_RES = 4 };

/* Would the initialised Conv / ConvAdd node run with channels-last operands
 * (INF_NHWC_* bits nhwc) without transposes on this CPU?  From W and the
 * attributes (the variant its W was packed for at load); a run whose shapes
 * the kernel does not take after all transposes (conv.c), so this decides
 * speed, never results.  graph/passes/channels_last.c asks (ops/ref/conv.c). */
bool inf__ops_conv_channels_last_native(const struct inf__node *node, int nhwc);

typedef struct inf__conv2d {
    int64_t n, c, m, group, cg, mg;
    int64_t ih, iw, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl;
    int act; /* inf__epilogue_kind: NONE, RELU or CLIP (SILU: the pointwise kernels only) */
    float lo, hi;
    /* NULL, or the MaxPool the kernel applies before its store (only the
     * rows variant takes one: inf__conv2d_pooled_fits); y is then the
     * pooled [n, m, pool->oh, pool->ow] */
    const inf__conv2d_maxpool *pool;
    /* INF_NHWC_* bits: the Winograd variants read X and the residual and
     * write Y channels-last when set; the AVX-512 rows kernel writes a
     * pooled Y (2x2/2 in registers, one group) channels-last; the other
     * kernels take none (conv.c transposes around them) */
    int nhwc;
} inf__conv2d;
/* W [m, kdim] (m/group rows a group) in blocks of `width` output channels:
 * per group and block, kdim rows of width floats (missing channels zero).
 * Shared by the panel kernel (width 6) and the direct one (width 16). */
int64_t inf__conv2d_blocked_w_floats(int64_t m, int64_t group, int64_t kdim, int64_t width);
void inf__conv2d_pack_w_blocked(int64_t m, int64_t group, int64_t kdim, int64_t width, const float *w, float *dst);
int64_t inf__conv2d_packed_w_floats(int64_t m, int64_t group, int64_t kdim);
void inf__conv2d_pack_w(int64_t m, int64_t group, int64_t kdim, const float *w, float *dst);
void inf__conv2d_f32_avx2(inf__pool *pool, const inf__conv2d *g, const float *x, const float *wp,
                          const float *bias, const float *res, float *y);
/* The direct variant (ops/x86/conv_direct_avx2.c) for groups of many output
 * channels and a deep K or a row stride above 2
 * (inf__conv2d_direct_fits(mg, kdim, sw): a property of W and the strides
 * alone): W packed in blocks of 16 channels (inf__conv2d_direct_pack_w, at load for a constant
 * W), X read in place or, when padding is needed, through `scratch`
 * (inf__conv2d_direct_scratch_floats(g) floats, 32-byte aligned; may be NULL
 * when that is 0).  Same bits, arguments and limits as inf__conv2d_f32_avx2. */
bool inf__conv2d_direct_fits(int64_t mg, int64_t kdim, int64_t sw);
int64_t inf__conv2d_direct_w_floats(int64_t m, int64_t group, int64_t kdim);
void inf__conv2d_direct_pack_w(int64_t m, int64_t group, int64_t kdim, const float *w, float *dst);
int64_t inf__conv2d_direct_scratch_floats(const inf__conv2d *g);
void inf__conv2d_direct_f32_avx2(inf__pool *pool, const inf__conv2d *g, const float *x, const float *wp,
                                 const float *bias, const float *res, float *scratch, float *y);
/* Its AVX-512 sibling (ops/x86/conv_direct_avx512.c; only when
 * inf__cpu_has_avx512()): the same W packing, scratch, arguments and bits.
 * It reads a padded X in place, borders included, when
 * inf__conv2d_direct_avx512_in_place(g, threads) (threads =
 * inf__pool_size(pool): the 3x3/2 pad-1 downsampling of an even input, at
 * 2+ threads only when ow >= 16): then it uses no scratch (may be NULL). */
bool inf__conv2d_direct_avx512_in_place(const inf__conv2d *g, int threads);
void inf__conv2d_direct_f32_avx512(inf__pool *pool, const inf__conv2d *g, const float *x, const float *wp,
                                   const float *bias, const float *res, float *scratch, float *y);
/* The depthwise variant (ops/x86/depthwise_avx2.c) for 2-D group == c == m:
 * w is the Conv's W as given ([m, 1, kh, kw]), no packing; any stride,
 * dilation and padding.  Same bits as ops/ref/conv.c's depthwise_planes then
 * + res and the activation (for finite weights: 0, then fma(w, x, sum) per
 * in-range tap in (ky, kx) order, + bias), same limits as above.
 * scratch: inf__conv2d_depthwise_scratch_floats(g, threads) floats, threads
 * = inf__pool_size(pool) (zero-padded copies of the input: two padded
 * planes per thread at row stride 1, channel blocks otherwise; NULL when
 * that is 0, or to take the slower unbuffered path). */
int64_t inf__conv2d_depthwise_scratch_floats(const inf__conv2d *g, int threads);
void inf__conv2d_depthwise_f32_avx2(inf__pool *pool, const inf__conv2d *g, const float *x, const float *w,
                                    const float *bias, const float *res, float *scratch, float *y);
/* Its padded-plane 3x3 (stride 1, dilation 1) on AVX-512 (ops/x86/depthwise_avx512.c;
 * only when inf__cpu_has_avx512()): one plane from buf (its zero-padded copy, pw
 * floats a row, pw >= ow rounded up to 16 plus 2) to y (oh x ow), + bias, + res
 * (NULL or oh x ow), act (INF_EPILOGUE_NONE, _RELU or _CLIP with [lo, hi]); the
 * AVX2 kernel's bits. */
void inf__conv2d_dw3_plane_avx512(const float *buf, int64_t pw, int64_t oh, int64_t ow, const float *w, float bias,
                                  const float *res, float *y, int act, float lo, float hi);
/* Its channel-blocked path on AVX-512 (the strided and the 5x5 / wider
 * depthwise Convs): one block of up to 16 channels of one image, the input
 * transposed into buf as [ph][pw][16] (buf zeroed by the caller, so the
 * padding reads +0), the taps' weight lanes in wv ([taps][16], the bias
 * lanes at wv - 16), 8 positions x 16 channels a step, transposed back to
 * the planes' NCHW rows with + res and the activation: the AVX2 path's
 * bits (depthwise_avx2.c cb_*), twice the channels a vector. */
typedef struct inf__dw_block16 {
    const inf__conv2d *g;
    int64_t pw;    /* padded input columns of buf */
    int nc;        /* channels of the block, 1..16 */
    bool has_bias;
    const float *x[16], *w[16], *res[16]; /* a plane each: ih x iw, kh x kw, oh x ow (res all NULL or none) */
    float *y[16];
    float bias[16];
    float *buf, *wv; /* 64-byte aligned */
} inf__dw_block16;
void inf__conv2d_dw_block16_avx512(const inf__dw_block16 *B);
/* Its stride-2 path on AVX-512 (ops/x86/depthwise_s2_avx512.c; only when
 * inf__cpu_has_avx512() and inf__conv2d_dw_s2_fits(g): stride 2 both ways,
 * dilation 1, kernels up to 5x5, ow >= 8): the whole Conv, X read in place
 * (no scratch); the same bits. */
bool inf__conv2d_dw_s2_fits(const inf__conv2d *g);
/* Its small-plane path on AVX-512 (ops/x86/depthwise_flat_avx512.c; only
 * when inf__cpu_has_avx512() and inf__conv2d_dw_flat_fits(g): stride 1,
 * ow == iw, oh * ow <= 64, kh * kw <= 9): each plane summed as one flat
 * row, X read in place (no scratch); the same bits. */
bool inf__conv2d_dw_flat_fits(const inf__conv2d *g);
void inf__conv2d_dw_flat_avx512(inf__pool *pool, const inf__conv2d *g, const float *x, const float *w,
                                const float *bias, const float *res, float *y);
void inf__conv2d_dw_s2_avx512(inf__pool *pool, const inf__conv2d *g, const float *x, const float *w, const float *bias,
                              const float *res, float *y);
/* The pointwise variant (ops/x86/pointwise_avx2.c) for 1x1, stride-1,
 * unpadded, one-group Convs (inf__conv2d_pointwise_fits(g)): its own
 * 4-channel x 24-position micro-kernel on w as given ([m, c]) and L1 copies
 * of X's strips, bias, res and the activation applied in the last K block's
 * store.  Same bits, arguments and limits as
 * inf__conv2d_f32_avx2.  Not to be called from inside a pool task. */
bool inf__conv2d_pointwise_fits(const inf__conv2d *g);
void inf__conv2d_pointwise_f32_avx2(inf__pool *pool, const inf__conv2d *g, const float *x, const float *w,
                                    const float *bias, const float *res, float *y);
/* Its AVX-512 sibling (ops/x86/pointwise_avx512.c; only when
 * inf__cpu_has_avx512()): the same arguments and bits, 16 positions a
 * vector.  Both take g->act NONE, RELU, CLIP or SILU. */
void inf__conv2d_pointwise_f32_avx512(inf__pool *pool, const inf__conv2d *g, const float *x, const float *w,
                                      const float *bias, const float *res, float *y);
/* The input as the direct and the rows kernels read it
 * (ops/x86/conv_direct_avx2.c): planes of ph x pw floats, X itself (pad
 * false) or zero-padded copies made per_pass images at a time into the
 * caller's scratch (inf__conv2d_direct_scratch_floats(g) floats).
 * inf__conv2d_input_pass returns images [n0, n0 + imgs) so. */
typedef struct inf__conv2d_input {
    int64_t ph, pw, per_pass;
    bool pad;
} inf__conv2d_input;
inf__conv2d_input inf__conv2d_input_geom(const inf__conv2d *g);
const float *inf__conv2d_input_pass(inf__pool *pool, const inf__conv2d *g, const inf__conv2d_input *xg,
                                    const float *x, int64_t n0, int64_t imgs, float *scratch);
/* The rows variant (ops/x86/conv_rows_avx2.c) for stride 1 along the row
 * and a shallow K (inf__conv2d_rows_fits(mg, kdim, sw): a network's stem):
 * output positions in the lanes, read straight from the (padded) input
 * rows; W packed in blocks of 4 channels (inf__conv2d_rows_pack_w), scratch
 * as the direct variant's.  Same bits, arguments and limits as
 * inf__conv2d_f32_avx2. */
bool inf__conv2d_rows_fits(int64_t mg, int64_t kdim, int64_t sw);
int64_t inf__conv2d_rows_w_floats(int64_t m, int64_t group, int64_t kdim);
void inf__conv2d_rows_pack_w(int64_t m, int64_t group, int64_t kdim, const float *w, float *dst);
void inf__conv2d_rows_f32_avx2(inf__pool *pool, const inf__conv2d *g, const float *x, const float *wp,
                               const float *bias, const float *res, float *scratch, float *y);
/* Its AVX-512 sibling (ops/x86/conv_rows_avx512.c; only when
 * inf__cpu_has_avx512()): the same W packing, scratch, arguments and bits. */
void inf__conv2d_rows_f32_avx512(inf__pool *pool, const inf__conv2d *g, const float *x, const float *wp,
                                 const float *bias, const float *res, float *scratch, float *y);
/* The pooled store of the rows variants (ops/x86/conv_pool_bands.c), for g->pool
 * set: tasks are bands of pooled rows of one image and group; a task
 * computes the conv rows its windows read (all the group's channels, bias
 * and activation applied) into a buffer on its stack with row(job, ng, oy,
 * dst, cstride) -- conv row oy of image-group ng, channel c at dst + c *
 * cstride -- and pools them with pool2d into y: the same bits as the Conv
 * then the MaxPool (max is exact).  Rows shared by two windows are computed
 * once per task (kept from the band before).  res must be NULL.
 * inf__conv2d_pooled_fits(g): one window's rows of every channel fit the
 * buffer (else the caller pools a full conv output). */
typedef void (*inf__conv2d_row_fn)(const void *job, int64_t ng, int64_t oy, float *dst, int64_t cstride);
struct inf__pool2d;
typedef void (*inf__pool2d_fn)(const struct inf__pool2d *g, const float *x, float *y, int64_t n_planes);
bool inf__conv2d_pooled_fits(const inf__conv2d *g);
void inf__conv2d_pooled_rows(inf__pool *pool, const inf__conv2d *g, int64_t imgs, const void *job,
                             inf__conv2d_row_fn row, inf__pool2d_fn pool2d, float *y);
/* The Winograd variant (ops/x86/conv_winograd_avx2.c) for 3x3, stride-1,
 * dilation-1, one-group Convs with enough channels, and 3x3/2 ones where it
 * pays: inf__conv2d_winograd_tile(g) gives the output tile side (2:
 * F(2x2,3x3), 4: F(4x4,3x3)), INF_WINOGRAD_S2 (F(2x2,3x3) at stride 2)
 * or 0 when the Conv is not one for it (at load only the
 * kernel fields of g need be set; with oh > 0 the pads are checked too).
 * W [k, c, 3, 3] is transformed and packed (inf__conv2d_winograd_pack_w,
 * at load for a constant W) into inf__conv2d_winograd_w_floats floats,
 * 32-byte aligned; scratch: inf__conv2d_winograd_scratch_floats(tile, g,
 * threads) floats, 64-byte aligned, threads = inf__pool_size(pool).  Bias,
 * res and the activation as inf__conv2d_f32_avx2.  Not the same bits as
 * the other variants (Winograd rounds differently, within a few 1e-6 of
 * sum |w||x|), but independent of the batch and the thread count. */
int inf__conv2d_winograd_tile(const inf__conv2d *g);
/* The tile value of F(2x2,3x3) at stride 2 (the four even/odd phases of
 * a 3x3/2 Conv, ops/x86/winograd_geom.h), which inf__conv2d_winograd_tile
 * names for a 3x3 stride-2 Conv where it pays (ops/x86/conv_winograd_avx2.c). */
enum { INF_WINOGRAD_S2 = 3 };
/* Whether that kernel computes g (3x3/2, dilation 1, one group, pads it
 * stages), whether or not the rule picks it (bench/bench_conv). */
bool inf__conv2d_winograd_s2_fits(const inf__conv2d *g);
/* The AVX2 kernel variant a float32 Conv of shape g runs on (1x1 stride-1
 * pointwise and depthwise convs are dispatched before it), a property of
 * W and the strides alone: Winograd, else direct, else rows, else panel
 * (ops/ref/conv.c; docs/convolutions.md has the table). */
typedef enum inf__conv2d_variant {
    INF_CONV2D_PANEL,
    INF_CONV2D_DIRECT,
    INF_CONV2D_ROWS,
    INF_CONV2D_WINO2,
    INF_CONV2D_WINO4,
    INF_CONV2D_WINO2S2, /* INF_WINOGRAD_S2 */
} inf__conv2d_variant;
inf__conv2d_variant inf__conv2d_avx2_variant(const inf__conv2d *g);
/* On path avx512 (inf__cpu_has_avx512), strided or 1x1 Convs with output
 * channels per group a multiple of 32 and K >= 32 take the direct variant
 * (its AVX-512 sibling), pointwise ones included (ops/ref/conv.c). */
bool inf__conv2d_direct_wide(const inf__conv2d *g);
int64_t inf__conv2d_winograd_w_floats(int tile, int64_t c, int64_t k);
void inf__conv2d_winograd_pack_w(int tile, int64_t c, int64_t k, const float *w, float *dst);
int64_t inf__conv2d_winograd_scratch_floats(int tile, const inf__conv2d *g, int threads);
void inf__conv2d_winograd_f32_avx2(inf__pool *pool, int tile, const inf__conv2d *g, const float *x,
                                   const float *up, const float *bias, const float *res, float *scratch,
                                   float *y);
/* Its AVX-512 sibling (ops/x86/conv_winograd_avx512.c; only when
 * inf__cpu_has_avx512()): the same U packing, scratch, arguments and bits. */
void inf__conv2d_winograd_f32_avx512(inf__pool *pool, int tile, const inf__conv2d *g, const float *x, const float *up,
                                     const float *bias, const float *res, float *scratch, float *y);
/* A 1x1, unpadded Conv on channels-last X and Y (and residual) as one GEMM per
 * output row (ops/x86/conv_1x1_rows.c; graph/passes/channels_last.c): wp is W^T
 * packed by inf__ops_sgemm_pack_b(true, c, m, W, c, wp); bias, res and (relu) a
 * Relu in the GEMM's store.  x86-64 with AVX2/FMA. */
void inf__conv2d_1x1_rows_f32(inf__pool *pool, const inf__conv2d *c, const float *x, const float *wp,
                              const float *bias, const float *res, bool relu, float *y);
/* ConvAdd (made by graph/passes/conv_add.c from a Conv node) uses the Conv's
 * W packed at its load, rather than packing W a second time (ops/ref/conv.c):
 * the pass brackets its rewrite with conv_add_packing_follows(true/false), so
 * the ConvAdd's init does not pack, then gives it the Conv's packing.  A
 * ConvAdd read from a bundle packs its constant W at init, as a Conv does. */
void inf__ops_conv_add_packing_follows(bool follows);
void inf__ops_conv_add_take_packing(inf__node *conv_add, const inf__node *conv);
/* ConvMaxPool (graph/passes/conv_pool.c) takes its Conv's packing the same way. */
/* MaxPool of x [n, c, ih, iw] (float32/64/16) into y [n, c, oh, ow] with
 * kh x kw windows at strides sh, sw (pool = {kh, kw, sh, sw}), no padding,
 * floor: the MaxPool kernel's code (ops/ref/pool.c), for ConvMaxPool's
 * general path. */
inf_status inf__ops_maxpool2d(inf__kernel_ctx *ctx, const int64_t pool[4], const inf_tensor *x, inf_tensor *y);
/* t[begin, end) = ep's activation (Relu, LeakyRelu or Clip; none: unchanged)
 * of t's values, float t (ops/util.c): the session's epilogue pass and the
 * fused nodes that apply it themselves. */
void inf__epilogue_apply(const inf__epilogue *ep, inf_tensor *t, int64_t begin, int64_t end);

/* 2-D float32 MaxPool / AveragePool without dilation or indices: the
 * AVX2 variant (ops/x86/pool_avx2.c; x86-64, only when
 * inf__cpu_has_avx2_fma(); input rows at most INF_POOL2D_MAX_W wide) and
 * its reference twin (the generic window loop of ops/ref/pool.c).  x and y
 * are n_planes planes of ih x iw and oh x ow (xplane, yplane floats apart
 * when those are set: a band of rows of each plane).  Max is bit-exact between
 * the two; the average within float rounding (the reference sums in double). */
#define INF_POOL2D_MAX_W 4096
typedef struct inf__pool2d {
    int64_t ih, iw, oh, ow, kh, kw, sh, sw;
    int64_t pt, pl, pb, pr; /* pads: top, left, bottom, right */
    bool max, count_include_pad;
    int64_t xplane, yplane; /* floats from one plane to the next: 0 for ih * iw and oh * ow */
} inf__pool2d;
static inline int64_t inf__pool2d_xplane(const inf__pool2d *g) {
    return g->xplane ? g->xplane : g->ih * g->iw;
}
static inline int64_t inf__pool2d_yplane(const inf__pool2d *g) {
    return g->yplane ? g->yplane : g->oh * g->ow;
}
void inf__ops_pool2d_f32_avx2(const inf__pool2d *g, const float *x, float *y, int64_t n_planes);
/* Its AVX-512 sibling (ops/x86/pool_avx512.c; only when inf__cpu_has_avx512()):
 * the 2x2 stride-2 window 16 outputs wide, the rest through the AVX2 kernel;
 * the same bits as the AVX2 kernel. */
void inf__ops_pool2d_f32_avx512(const inf__pool2d *g, const float *x, float *y, int64_t n_planes);
void inf__ops_pool2d_f32_ref(const inf__pool2d *g, const float *x, float *y, int64_t n_planes);
/* The sum of x[0..n) in double, as GlobalAveragePool's (ops/ref/pool.c's
 * sum_f32_as_f64, same order and bits), 16 floats a step (ops/x86/pool_avx2.c;
 * only when inf__cpu_has_avx2_fma()). */
double inf__sum_f32_as_f64_avx2(const float *x, int64_t n);

/* ---- helpers shared by kernels (ops/util.c) ---- */

/* Numpy broadcasting of two shapes into out (rank = max rank); INF_ESHAPE if
 * incompatible. */
inf_status inf__broadcast_shape(int na, const int64_t *a, int nb, const int64_t *b, int *nout,
                                int64_t *out);
/* Strides (in elements) of `shape` read as broadcast to out_shape (0 on
 * broadcast dimensions); in_ndim <= out_ndim. */
void inf__broadcast_strides(int in_ndim, const int64_t *in_dims, int out_ndim,
                            const int64_t *out_dims, int64_t *strides);
/* Reads element i of any numeric/bool tensor as double / int64. */
double inf__tensor_get_f64(const inf_tensor *t, int64_t i);
int64_t inf__tensor_get_i64(const inf_tensor *t, int64_t i);
/* Writes element i from double (converted to the tensor's dtype). */
void inf__tensor_set_f64(inf_tensor *t, int64_t i, double v);
/* Normalises an axis in [-rank, rank) to [0, rank); INF_EINVAL otherwise. */
inf_status inf__normalize_axis(inf__kernel_ctx *ctx, int64_t axis, int rank, int *out);
/* The sliding-window attributes of Conv, ConvTranspose, pooling, LpPool and
 * their quantized forms -- kernel_shape, strides, dilations (>= 1), pads
 * (>= 0, or any sign when negative_pads), output_padding and output_shape
 * (>= 0), whichever the node has -- must be at most INF_WINDOW_ATTR_MAX: no
 * real model comes near 2^31, and the bound keeps every geometry product
 * ((k-1)*d, 16*s, pads sums) inside int64.  For init; the error names the
 * node, attribute, index and value. */
#define INF_WINDOW_ATTR_MAX ((int64_t)INT32_MAX)
inf_status inf__check_window_attrs(const inf__node *node, inf_error *err, bool negative_pads);
/* Is dtype one of the float types (f16, bf16, f32, f64)? */
bool inf__dtype_is_float(inf_dtype t);
bool inf__dtype_is_int(inf_dtype t);  /* signed or unsigned integer */
bool inf__dtype_is_signed(inf_dtype t);
/* QuantizeLinear's output type: its zero point's type when it has one, else
 * its output_dtype attribute (opset 21; 0 when absent), else uint8.  The one
 * rule the kernel, the shape rule and the QDQ pass read. */
static inline inf_dtype inf__quantize_linear_out_type(bool has_zero_point, inf_dtype zero_point_type,
                                                      int64_t output_dtype) {
    return has_zero_point ? zero_point_type : output_dtype ? (inf_dtype)output_dtype : INF_DTYPE_U8;
}

#endif /* INF_OPS_H */
