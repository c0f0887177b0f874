/*
 * passes.h -- the optimizer's pattern passes (graph/optimize.c runs them
 * after constant folding, before activation fusion) and the matching and
 * rewriting helpers they share (passes/match.c).
 *
 * DESIGN: a pass walks the node list, matches a chain backwards from its
 * last node through value producers (graph.h keeps one producer per value,
 * no consumer lists), and rewrites that last node in place into the fused
 * op -- it sits where the chain's result was, so every input is computed
 * before it and the topological order holds -- while the chain's other
 * nodes are marked dead (optimize.c compacts them away).  A node joins a
 * match only if its output has exactly one reader inside the chain (graph
 * outputs count as readers), so nothing outside the chain sees a removed
 * value.  Consumer counts are kept exact for dead-node elimination.
 */
#ifndef INF_GRAPH_PASSES_H
#define INF_GRAPH_PASSES_H

#include "graph/graph.h"

typedef struct inf__pass_ctx {
    struct inf_model *model; /* its arena receives the rewritten nodes' inputs, attributes, params */
    inf__graph *g;
    bool *dead;              /* per node; set for the nodes a rewrite removes */
} inf__pass_ctx;

/* ---- the passes: each returns INF_OK or INF_ENOMEM (a node's init failing
 * is reported as what it is); *n_rewritten counts the fused chains ---- */
/* exporters' no-ops: inference Dropout, Reshapes that keep the shape, K^T as Reshape/Transpose/Reshape; first */
inf_status inf__pass_export_noops(inf__pass_ctx *pc, int *n_rewritten, inf_error *err); /* passes/export_noops.c */
inf_status inf__pass_layernorm(inf__pass_ctx *pc, int *n_rewritten, inf_error *err);  /* passes/layernorm.c */
inf_status inf__pass_rmsnorm(inf__pass_ctx *pc, int *n_rewritten, inf_error *err);    /* passes/rmsnorm.c */
inf_status inf__pass_gelu(inf__pass_ctx *pc, int *n_rewritten, inf_error *err);       /* passes/gelu.c */
inf_status inf__pass_pow_square(inf__pass_ctx *pc, int *n_rewritten, inf_error *err); /* passes/pow_square.c */
inf_status inf__pass_attention(inf__pass_ctx *pc, int *n_rewritten, inf_error *err);  /* passes/attention.c */
inf_status inf__pass_conv_bn(inf__pass_ctx *pc, int *n_rewritten, inf_error *err);    /* passes/conv_bn.c */
inf_status inf__pass_conv_add(inf__pass_ctx *pc, int *n_rewritten, inf_error *err);   /* passes/conv_add.c */
/* Conv -> Sigmoid + Mul (SiLU) -> the Conv's SILU epilogue; after ConvAdd */
inf_status inf__pass_silu(inf__pass_ctx *pc, int *n_rewritten, inf_error *err);       /* passes/silu.c */
inf_status inf__pass_matmul_add(inf__pass_ctx *pc, int *n_rewritten, inf_error *err); /* passes/matmul_add.c */
inf_status inf__pass_layout(inf__pass_ctx *pc, int *n_rewritten, inf_error *err);     /* passes/layout.c */
/* Activation Q -> DQ pairs no integer kernel reads are dropped (exact ones after data-movement ops only when
 * exact_only); keep_act keeps the operands of a MatMul of two pairs (attention, for QAttention).  Before
 * inf__pass_qdq, and again without keep_act after the attention pass when the first run dropped bounded pairs
 * (optimize.c) */
inf_status inf__pass_qdq_activations(inf__pass_ctx *pc, bool exact_only, bool keep_act, int *n_exact, int *n_bounded,
                                     inf_error *err); /* passes/qdq_activations.c */
/* QDQ MatMul/Gemm/Conv -> QGemm/QConv; runs before constant folding (optimize.c) */
inf_status inf__pass_qdq(inf__pass_ctx *pc, int *n_rewritten, inf_error *err);        /* passes/qdq.c */
/* DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul [-> Add] [-> Relu] -> QGemm reading the DQL's bytes, and
 * DQLs of the same value merged (both counted); with inf__pass_qdq */
inf_status inf__pass_qdynamic(inf__pass_ctx *pc, int *n_rewritten, inf_error *err); /* passes/qdynamic.c */
/* DynamicQuantizeLinear -> ConvInteger -> Cast -> Mul [-> Add] [-> Relu] -> QConv reading the DQL's bytes; after
 * constant folding (ORT's bias is a Reshape of a constant) */
inf_status inf__pass_qdynamic_conv(inf__pass_ctx *pc, int *n_rewritten, inf_error *err); /* passes/qdynamic.c */
/* QGemm -> Gelu -> QGemm with its GELU in the store; after the Gelu pass */
inf_status inf__pass_qdq_gelu(inf__pass_ctx *pc, int *n_rewritten, inf_error *err);   /* passes/qdq.c */
/* float Conv (+ Relu/Clip) -> MaxPool -> ConvMaxPool; after activation fusion */
inf_status inf__pass_conv_pool(inf__pass_ctx *pc, int *n_rewritten, inf_error *err); /* passes/conv_pool.c */
/* activations between Winograd / 1x1 Convs held channels-last (attribute channels_last); last of all */
inf_status inf__pass_channels_last(inf__pass_ctx *pc, int *n_rewritten, inf_error *err); /* passes/channels_last.c */
/* QConv -> MaxPool fused; QConv -> QConv with the activation kept uint8 channels last; after activation fusion */
inf_status inf__pass_qdq_chain(inf__pass_ctx *pc, int *n_rewritten, inf_error *err);  /* passes/qdq_chain.c */

/* ---- matching (passes/match.c) ---- */
/* Is node n live, of ai.onnx type op_type, without a fused epilogue? */
bool inf__pass_node_is(const inf__pass_ctx *pc, int n, const char *op_type);
/* The node producing value v if inf__pass_node_is(op_type), or -1. */
int inf__pass_producer(const inf__pass_ctx *pc, int v, const char *op_type);
/* Is value v read exactly n times (graph outputs count)? */
bool inf__pass_uses(const inf__pass_ctx *pc, int v, int n);
/* The constant tensor of value v if it is an initializer of the given dtype,
 * else NULL: float32 weights and scalars, uint8 zero points, int64 axes
 * (opset 18+ Reduce*). */
const inf_tensor *inf__pass_const_of(const inf__pass_ctx *pc, int v, inf_dtype dtype);
/* The constant tensor of value v, any dtype, when it is an initializer no graph input of that name replaces (the
 * quantized forms' weights, scales and zero points), else NULL. */
const inf_tensor *inf__pass_const_tensor(const inf__pass_ctx *pc, int v);
/* MaxPool node mp's 2-D kernel and strides {kh, kw, sh, sw} in pool when it
 * is a plain one: live, one output (no Indices), no padding, dilation 1,
 * floor mode; windows that overlap (stride < kernel) only when overlap. */
bool inf__pass_plain_maxpool(const inf__pass_ctx *pc, int mp, bool overlap, int64_t *pool);
/* attrs = node's attributes, then pool_kernel = pool[0..1] and pool_strides
 * = pool[2..3] (kept in the model's arena): node->n_attrs + 2 entries.
 * False when out of memory. */
bool inf__pass_pool_attrs(inf__pass_ctx *pc, const inf__node *node, const int64_t *pool, inf__attr *attrs);
/* Is node i a live Gelu without epilogue, one input: the optimizer's
 * (passes/gelu.c), or ONNX's own (opset 20+, what torch's dynamo exporter
 * writes) in its exact form (approximate = "none")? */
bool inf__pass_exact_gelu(const inf__pass_ctx *pc, int i);
/* The same test by form: 1 exact (erf), 2 approximate = "tanh", 0 not such a Gelu. */
int inf__pass_gelu_form(const inf__pass_ctx *pc, int i);
/* Is value v a one-element float32 constant?  Its value in *out. */
bool inf__pass_scalar(const inf__pass_ctx *pc, int v, float *out);
/* Is value v a one-element constant within tol of want? */
bool inf__pass_scalar_is(const inf__pass_ctx *pc, int v, float want, float tol);
/* Can constant c broadcast against value x without raising x's rank (c has
 * rank 0, or x's rank -- declared, or a constant's -- is known and at least
 * c's)?  A one-element operand of higher rank gives a node's output a larger
 * rank, which a fused kernel computing "the same shape as x" would lose. */
bool inf__pass_const_fits(const inf__pass_ctx *pc, int c, int x);
/* The k of a ReduceMean's axes = [-k .. -1] (any order) with keepdims = 1,
 * or 0.  The axes are an attribute below opset 18 and a constant input
 * from 18 on (LayerNorm's and RMSNorm's statistics). */
int inf__pass_trailing_axes(const inf__pass_ctx *pc, const inf__node *node);

/* ---- rewriting (passes/match.c) ----
 * Live nodes after index `after` that read value `from` read `to` instead (consumer counts moved); returns how
 * many reads moved.  Graph outputs and subgraphs' reads by name stay on `from`. */
int inf__pass_redirect_reads(inf__pass_ctx *pc, int after, int from, int to);
/* Node n is dead: its reads are forgotten and its outputs lose their producer. */
void inf__pass_remove_node(inf__pass_ctx *pc, int n);
/*
 * Turns node `target` into op (domain ai.onnx or ai.infera by op->domain,
 * version opset) with the given inputs and attributes (copied into the
 * model arena), runs the op's init, and marks the nodes in removed[] dead.
 * Consumer counts and producers are updated. */
inf_status inf__pass_rewrite(inf__pass_ctx *pc, int target, const char *domain, const char *op_type, int opset,
                             int n_inputs, const int *inputs, int n_attrs, const inf__attr *attrs,
                             const int *removed, int n_removed, inf_error *err);

#endif /* INF_GRAPH_PASSES_H */
