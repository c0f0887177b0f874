/*
 * shape_infer.h -- static shape inference over the graph IR, for the
 * optimizer's shape-subgraph folding (graph/optimize.c).
 *
 * Each value gets a rank and dimensions that are either known numbers or
 * symbols (a dimension the caller chooses at run time, such as the batch:
 * one symbol per graph input axis, carried through the ops that keep it),
 * and, for small int64 values of the shape arithmetic exporters write
 * (Shape -> Gather -> Unsqueeze -> Concat -> Reshape), the elements in the
 * same form.  An element that is known for every run becomes a constant.
 * Ops without a rule here give unknown shapes, which only means less is
 * folded; a rule never guesses (graph inputs' fixed dimensions are checked
 * against the caller's tensors before a run).
 */
#ifndef INF_GRAPH_SHAPE_INFER_H
#define INF_GRAPH_SHAPE_INFER_H

#include "graph/graph.h"

typedef struct inf__shape_infer inf__shape_infer;

/* Shapes of g's graph inputs (declared types) and constants; NULL when out
 * of memory. */
inf__shape_infer *inf__shape_infer_new(const inf__graph *g);
void inf__shape_infer_free(inf__shape_infer *si);

/* Infers the outputs of node from what is known of its inputs; call for
 * every node in topological order. */
void inf__shape_infer_node(inf__shape_infer *si, const inf__node *node);

/* If value v is an int64 tensor of rank <= 1 whose every element is known,
 * a new tensor holding it (the caller owns it) in *out; NULL otherwise.
 * Returns INF_ENOMEM only when the tensor cannot be made. */
inf_status inf__shape_infer_constant(const inf__shape_infer *si, int v, inf_tensor **out);

/* Value v's dimensions as far as they are known, into dims (INF_MAX_DIMS
 * room): each a number (>= 0) or a symbol (< 0; the same symbol is the same
 * run-time quantity, different ones may still be equal).  Returns the rank,
 * or -1 when not known. */
int inf__shape_infer_dims(const inf__shape_infer *si, int v, int64_t *dims);

/* Value v's element type when known, else INF_DTYPE_UNDEFINED. */
inf_dtype inf__shape_infer_dtype(const inf__shape_infer *si, int v);

#endif /* INF_GRAPH_SHAPE_INFER_H */
