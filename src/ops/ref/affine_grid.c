/*
 * affine_grid.c -- ONNX AffineGrid (opsets 20-26), torch's affine_grid:
 * theta [N, 2, 3] and size (N, C, H, W) -> grid [N, H, W, 2], or theta
 * [N, 3, 4] and size (N, C, D, H, W) -> grid [N, D, H, W, 3]; each point is
 * theta [x, y (, z), 1] over the base coordinates of every axis of length
 * n: -1 + 2 i / (n - 1) with align_corners (-1 when n = 1), else
 * -1 + (2 i + 1) / n.  (x runs along W, y along H, z along D.)
 * dtypes: theta float32, float64, float16, bfloat16 (computed in double);
 *   size int64.
 * Deviations: none known.
 */
#include "ops/ref/data_move.h"

static double base_coord(int64_t i, int64_t n, bool align) {
    if (align) return n == 1 ? -1.0 : -1.0 + 2.0 * (double)i / (double)(n - 1);
    return -1.0 + (2.0 * (double)i + 1.0) / (double)n;
}

static inf_status affine_grid_run(inf__kernel_ctx *ctx) {
    const inf_tensor *theta = ctx->in[0], *size = ctx->in[1];
    bool align = inf__attr_int(ctx->node, "align_corners", 0) != 0;
    if (!inf__dtype_is_float(theta->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "input theta: expected a float type, got %s", inf_dtype_name(theta->dtype));
    int64_t sz[5];
    int n;
    inf_status st = move_read_ints(ctx, size, "size", false, 5, sz, &n);
    if (st != INF_OK) return st;
    if (n != 4 && n != 5) return inf__kernel_error(ctx, INF_ESHAPE, "input size: expected 4 or 5 values, got %d", n);
    int sp = n - 2; /* 2 or 3 spatial axes */
    if (theta->ndim != 3 || theta->dims[0] != sz[0] || theta->dims[1] != sp || theta->dims[2] != sp + 1)
        return inf__kernel_error(ctx, INF_ESHAPE, "input theta: expected [%lld, %d, %d]", (long long)sz[0], sp, sp + 1);
    for (int k = 0; k < n; k++)
        if (sz[k] < 0) return inf__kernel_error(ctx, INF_ESHAPE, "input size[%d] is negative", k);
    int64_t d = sp == 3 ? sz[2] : 1, h = sz[n - 2], w = sz[n - 1];
    int64_t dims[5] = {sz[0]};
    for (int k = 0; k < sp; k++) dims[1 + k] = sz[2 + k];
    dims[1 + sp] = sp;
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, theta->dtype, sp + 2, dims, &y)) != INF_OK) return st;
    int64_t o = 0;
    for (int64_t b = 0; b < sz[0]; b++)
        for (int64_t zi = 0; zi < d; zi++)
            for (int64_t yi = 0; yi < h; yi++)
                for (int64_t xi = 0; xi < w; xi++) {
                    double p[4] = {base_coord(xi, w, align), base_coord(yi, h, align), 0, 1};
                    if (sp == 3) p[2] = base_coord(zi, d, align);
                    else p[2] = 1;
                    for (int r = 0; r < sp; r++) {
                        double acc = 0;
                        for (int c = 0; c <= sp; c++)
                            acc += inf__tensor_get_f64(theta, (b * sp + r) * (sp + 1) + c) * p[c];
                        inf__tensor_set_f64(y, o++, acc);
                    }
                }
    return INF_OK;
}

const inf__op_impl op_affine_grid = {NULL, affine_grid_run};
