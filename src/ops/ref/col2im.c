/*
 * col2im.c -- ONNX Col2Im (opsets 18-26), torch's fold: input
 * [N, C * prod(block), L] column blocks -> output [N, C, image...], each
 * block value added to the image pixel it covers; image_shape and
 * block_shape (int64, one value per spatial axis, at least 2), attributes
 * strides, pads (begins then ends), dilations.  L must be the number of
 * block positions: prod over axes of (image + pads - dilation (block - 1)
 * - 1) / stride + 1.  Positions falling in the padding are dropped.
 * dtypes: float32, float64, float16, bfloat16 (summed in double).
 * Deviations: none known.
 */
#include "ops/ref/data_move.h"

#define C2I_MAX (INF_MAX_DIMS - 2)

static inf_status col2im_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x = ctx->in[0];
    int64_t img[C2I_MAX], blk[C2I_MAX], stride[C2I_MAX], dil[C2I_MAX], pb[C2I_MAX], pe[C2I_MAX], pos[C2I_MAX];
    int ni, nb;
    inf_status st = move_read_ints(ctx, ctx->in[1], "image_shape", false, C2I_MAX, img, &ni);
    if (st == INF_OK) st = move_read_ints(ctx, ctx->in[2], "block_shape", false, C2I_MAX, blk, &nb);
    if (st != INF_OK) return st;
    if (ni != nb || ni < 1) return inf__kernel_error(ctx, INF_ESHAPE, "image_shape and block_shape need the same length");
    if (!inf__dtype_is_float(x->dtype) || x->ndim != 3)
        return inf__kernel_error(ctx, INF_ETYPE, "input: expected a 3-D float tensor, got %s rank %d",
                                 inf_dtype_name(x->dtype), x->ndim);
    int ns, np, nd;
    const int64_t *s = inf__attr_ints(ctx->node, "strides", &ns), *p = inf__attr_ints(ctx->node, "pads", &np),
                  *dl = inf__attr_ints(ctx->node, "dilations", &nd);
    if ((s && ns != ni) || (p && np != 2 * ni) || (dl && nd != ni))
        return inf__kernel_error(ctx, INF_EMODEL, "strides/dilations need %d values and pads %d", ni, 2 * ni);
    int64_t block_size = 1, positions = 1;
    for (int k = 0; k < ni; k++) {
        stride[k] = s ? s[k] : 1, dil[k] = dl ? dl[k] : 1, pb[k] = p ? p[k] : 0, pe[k] = p ? p[ni + k] : 0;
        if (stride[k] < 1 || dil[k] < 1 || pb[k] < 0 || pe[k] < 0 || blk[k] < 1 || img[k] < 0)
            return inf__kernel_error(ctx, INF_EMODEL, "axis %d: strides, dilations, block >= 1 and pads, image >= 0", k);
        int64_t most = INF_WINDOW_ATTR_MAX; /* keeps the span below far from int64 overflow */
        if (stride[k] > most || dil[k] > most || pb[k] > most || pe[k] > most || blk[k] > most || img[k] > most)
            return inf__kernel_error(ctx, INF_EMODEL,
                                     "axis %d: strides, dilations, pads, image and block must be at most %lld", k,
                                     (long long)most);
        int64_t span = img[k] + pb[k] + pe[k] - dil[k] * (blk[k] - 1) - 1;
        pos[k] = span < 0 ? 0 : span / stride[k] + 1;
        if (__builtin_mul_overflow(block_size, blk[k], &block_size) ||
            __builtin_mul_overflow(positions, pos[k], &positions))
            return inf__kernel_error(ctx, INF_EMODEL, "axis %d: the block size or the block positions overflow int64",
                                     k);
    }
    if (x->dims[1] % block_size || x->dims[2] != positions)
        return inf__kernel_error(ctx, INF_ESHAPE, "input [N, %lld, %lld]: expected C * %lld rows and %lld block positions",
                                 (long long)x->dims[1], (long long)x->dims[2], (long long)block_size, (long long)positions);
    int64_t n = x->dims[0], ch = x->dims[1] / block_size, dims[INF_MAX_DIMS] = {n, ch}, image = 1;
    for (int k = 0; k < ni; k++)
        dims[2 + k] = img[k];
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, 2 + ni, dims, &y)) != INF_OK) return st;
    for (int k = 0; k < ni; k++)
        image *= img[k]; /* the output's shape is valid: no overflow */
    double *acc = inf__kernel_scratch(ctx, sizeof(double) * (size_t)(image ? image : 1));
    if (!acc) return INF_ENOMEM;
    for (int64_t plane = 0; plane < n * ch; plane++) {
        for (int64_t i = 0; i < image; i++) acc[i] = 0;
        for (int64_t bo = 0; bo < block_size; bo++)
            for (int64_t l = 0; l < positions; l++) {
                int64_t off = 0, rb = bo, rl = l;
                bool inside = true;
                for (int k = ni - 1; k >= 0; k--) { /* block offset and position, last axis fastest */
                    int64_t kk = rb % blk[k], pp = rl % pos[k];
                    rb /= blk[k], rl /= pos[k];
                    int64_t at = pp * stride[k] - pb[k] + kk * dil[k];
                    inside &= at >= 0 && at < img[k];
                    if (inside) off += at * move_prod(img, k + 1, ni); /* outside, at * ... may overflow */
                }
                if (inside) acc[off] += inf__tensor_get_f64(x, ((plane / ch) * ch * block_size + (plane % ch) * block_size + bo) * positions + l);
            }
        for (int64_t i = 0; i < image; i++) inf__tensor_set_f64(y, plane * image + i, acc[i]);
    }
    return INF_OK;
}

const inf__op_impl op_col2im = {NULL, col2im_run};
