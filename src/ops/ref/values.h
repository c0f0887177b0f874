/*
 * values.h -- private helpers of the kernels that handle whole ONNX values
 * (control_flow.c, sequence.c, optional.c): copying a tensor's elements,
 * handing a copy of any value to an output, naming a value's kind.
 * Not a public header: static functions only, no state.
 *
 * Ownership: a tensor output lives in a session buffer (inf__kernel_output),
 * so copying one allocates nothing on a warm run; a sequence, map or empty
 * optional can only be handed over as a heap value (inf_tensor_clone +
 * inf__kernel_output_value).  String elements are char * owned by their
 * tensor: they are duplicated, never shared.
 */
#ifndef INF_OPS_REF_VALUES_H
#define INF_OPS_REF_VALUES_H

#include <string.h>

#include "ops/ops.h"
#include "ops/ref/data_move.h" /* move_copy: element copies, strings duplicated */

static inline const char *value_kind_name(const inf_tensor *t) {
    if (!t) return "missing value";
    switch (t->kind) {
    case INF_KIND_TENSOR: return "tensor";
    case INF_KIND_SEQUENCE: return "sequence";
    case INF_KIND_MAP: return "map";
    default: return "empty optional";
    }
}

/* Output i becomes a copy of src: a tensor is copied into a session buffer,
 * any other value is deep-copied into a heap value.  A NULL src (an absent
 * optional) becomes an empty optional. */
static inline inf_status value_output_copy(inf__kernel_ctx *ctx, int i, const inf_tensor *src) {
    inf_status st;
    if (src && src->kind == INF_KIND_TENSOR) {
        inf_tensor *y;
        st = inf__kernel_output(ctx, i, src->dtype, src->ndim, src->dims, &y);
        if (st != INF_OK) return st;
        return move_copy(ctx, y, 0, src, 0, inf_tensor_numel(src));
    }
    inf_tensor *copy;
    st = src ? inf_tensor_clone(src, &copy) : inf_tensor_new_none(&copy);
    if (st != INF_OK) return inf__kernel_error(ctx, st, "out of memory copying output %d", i);
    return inf__kernel_output_value(ctx, i, copy);
}

#endif /* INF_OPS_REF_VALUES_H */
