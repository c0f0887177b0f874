/*
 * tile.c -- ONNX Tile, opsets 6-17, every dtype (strings too); repeats is
 * int64 (int32 accepted), one non-negative value per input axis.
 *
 * output.dims[a] = input.dims[a] * repeats[a]; output element c reads input
 * element c mod input.dims.  Each output row (last axis) is the matching
 * input row copied repeats[last] times.
 *
 * Deviations: the opset 1 form (inputs tiles and axis) is not implemented.
 */
#include "ops/ref/data_move.h"

static inf_status tile_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x, *rt;
    inf_status st;
    if ((st = move_input(ctx, 0, "input", true, &x)) != INF_OK ||
        (st = move_input(ctx, 1, "repeats", true, &rt)) != INF_OK)
        return st;
    int64_t reps[INF_MAX_DIMS];
    int n;
    if ((st = move_read_ints(ctx, rt, "repeats", true, INF_MAX_DIMS, reps, &n)) != INF_OK)
        return st;
    int r = x->ndim;
    if (n != r)
        return inf__kernel_error(ctx, INF_ESHAPE, "input repeats has %d values, expected %d (rank)",
                                 n, r);
    int64_t dims[INF_MAX_DIMS];
    for (int a = 0; a < r; a++) {
        if (reps[a] < 0)
            return inf__kernel_error(ctx, INF_EINVAL, "input repeats: value %d is negative (%lld)",
                                     a, (long long)reps[a]);
        if (__builtin_mul_overflow(x->dims[a], reps[a], &dims[a]))
            return inf__kernel_error(ctx, INF_ESHAPE,
                                     "input repeats: value %d (%lld) times dimension %lld overflows int64", a,
                                     (long long)reps[a], (long long)x->dims[a]);
    }
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, r, dims, &y)) != INF_OK) return st;
    if (inf_tensor_numel(y) == 0) return INF_OK;
    if (r == 0) return move_copy(ctx, y, 0, x, 0, 1);

    int64_t n_rows = move_prod(dims, 0, r - 1), w = x->dims[r - 1];
    int64_t c[INF_MAX_DIMS] = {0}, xs[INF_MAX_DIMS], s = 1;
    for (int a = r - 1; a >= 0; a--) {
        xs[a] = s;
        s *= x->dims[a];
    }
    int64_t dst = 0;
    for (int64_t row = 0; row < n_rows; row++) {
        int64_t src = 0;
        for (int a = 0; a < r - 1; a++) src += (c[a] % x->dims[a]) * xs[a];
        for (int64_t k = 0; k < reps[r - 1]; k++, dst += w)
            if ((st = move_copy(ctx, y, dst, x, src, w)) != INF_OK) return st;
        for (int a = r - 2; a >= 0; a--) { /* next row */
            if (++c[a] < dims[a]) break;
            c[a] = 0;
        }
    }
    return INF_OK;
}

const inf__op_impl op_tile = {NULL, tile_run};
