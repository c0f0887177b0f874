/*
 * pow_square.c -- Pow(x, 2) becomes Mul(x, x): one multiply instead of a
 * libm pow() per element (PyTorch's x.pow(2) and x ** 2).
 *
 * PATTERN: y = Pow(x, c), c a one-element constant equal to 2, opset >= 7
 * (no legacy broadcast attributes), c of rank 0 or at most x's known rank
 * (a c of shape [1, 1, 1] would make y rank 3)  ->  y = Mul(x, x).
 *
 * WHY IT IS SAFE: for float types x * x rounded once is pow(x, 2) rounded
 * once (the kernel computes pow in double, where x^2 of a float is exact):
 * bit-identical, NaN and infinities included.  For an integer exponent the
 * Pow kernel multiplies exactly like Mul (wrapping) for every base type.
 * With a float exponent and an integer base Pow would truncate a double
 * result instead of wrapping, so the pass then requires the base to be
 * known float (declared type, or a float constant).
 */
#include <string.h>

#include "graph/passes/passes.h"
#include "ops/ops.h"

static bool exponent_is_two(const inf__pass_ctx *pc, int v, bool *is_float) {
    if (v < 0) return false;
    const inf__value *val = &pc->g->values[v];
    if (val->role != INF_VALUE_INITIALIZER || !val->constant) return false;
    const inf_tensor *t = val->constant;
    if (t->kind != INF_KIND_TENSOR || inf_tensor_numel(t) != 1) return false;
    *is_float = inf__dtype_is_float(t->dtype);
    if (!*is_float && !inf__dtype_is_int(t->dtype)) return false;
    return inf__tensor_get_f64(t, 0) == 2.0;
}

static bool known_float(const inf__pass_ctx *pc, int v) {
    const inf__value *val = &pc->g->values[v];
    if (val->constant && val->constant->kind == INF_KIND_TENSOR) return inf__dtype_is_float(val->constant->dtype);
    return val->has_info && inf__dtype_is_float(val->info.dtype);
}

inf_status inf__pass_pow_square(inf__pass_ctx *pc, int *n_rewritten, inf_error *err) {
    *n_rewritten = 0;
    for (int n = 0; n < pc->g->n_nodes; n++) {
        const inf__node *node = &pc->g->nodes[n];
        bool float_exp;
        if (!inf__pass_node_is(pc, n, "Pow") || node->opset < 7 || node->n_inputs != 2 || node->inputs[0] < 0 ||
            !exponent_is_two(pc, node->inputs[1], &float_exp) ||
            !inf__pass_const_fits(pc, node->inputs[1], node->inputs[0]))
            continue;
        if (float_exp && !known_float(pc, node->inputs[0])) {
            /* the base's type is not declared: it is float when it comes from
             * a node computing with a float constant */
            int p = pc->g->values[node->inputs[0]].producer;
            bool ok = false;
            for (int k = 0; p >= 0 && !pc->dead[p] && k < pc->g->nodes[p].n_inputs && !ok; k++) {
                const inf__node *pn = &pc->g->nodes[p];
                static const char *const same_type[] = {"Add", "Sub", "Mul", "Div"};
                for (size_t s = 0; s < 4; s++)
                    if (pn->op->domain == INF_DOMAIN_ONNX && !strcmp(pn->op_type, same_type[s]) && pn->inputs[k] >= 0)
                        ok = ok || known_float(pc, pn->inputs[k]);
            }
            if (!ok) continue;
        }
        int x = node->inputs[0], inputs[2] = {x, x};
        inf_status st = inf__pass_rewrite(pc, n, "", "Mul", node->opset, 2, inputs, 0, NULL, NULL, 0, err);
        if (st != INF_OK) return st;
        (*n_rewritten)++;
    }
    return INF_OK;
}
