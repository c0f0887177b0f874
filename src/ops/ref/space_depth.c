/*
 * space_depth.c -- rearranging blocks between the channel and spatial axes
 * and reversing sequences: ONNX DepthToSpace (1-17; mode DCR/CRD from 11),
 * SpaceToDepth (1-17) and ReverseSequence (10-17).  Every dtype (strings
 * too): the elements are only moved.
 *
 * DepthToSpace, input [N, C, H, W], blocksize b, output [N, C/b², H*b, W*b]:
 * output (n, c, h*b+i, w*b+j) reads input channel (i*b + j) * C/b² + c in
 * DCR mode (the default), c*b² + i*b + j in CRD mode.
 * SpaceToDepth is the inverse of DCR: output [N, C*b², H/b, W/b], channel
 * (i*b + j) * C + c reads input (n, c, h*b+i, w*b+j).
 *
 * ReverseSequence: input of rank >= 2 with time_axis and batch_axis being 0
 * and 1 (either way round); sequence_lens (int64, int32 accepted) gives for
 * each batch entry how many leading time steps are reversed (0..T); the
 * rest are copied.
 *
 * Deviations: none known.
 */
#include "ops/ref/data_move.h"

static inf_status sd_check(inf__kernel_ctx *ctx, const inf_tensor **x, int64_t *b) {
    inf_status st = move_input(ctx, 0, "input", true, x);
    if (st != INF_OK) return st;
    if ((*x)->ndim != 4)
        return inf__kernel_error(ctx, INF_ESHAPE,
                                 "input: expected rank 4 [N, C, H, W], got rank %d", (*x)->ndim);
    *b = inf__attr_int(ctx->node, "blocksize", 0);
    if (*b < 1 || *b > INF_WINDOW_ATTR_MAX) /* b² stays far from int64 overflow */
        return inf__kernel_error(ctx, INF_EINVAL, "attribute blocksize = %lld, must be in [1, %lld]", (long long)*b,
                                 (long long)INF_WINDOW_ATTR_MAX);
    return INF_OK;
}

/* a * b into *out, or an error naming `what` when it overflows int64. */
static inf_status sd_mul(inf__kernel_ctx *ctx, const char *what, int64_t a, int64_t b, int64_t *out) {
    if (__builtin_mul_overflow(a, b, out))
        return inf__kernel_error(ctx, INF_ESHAPE, "output %s: %lld x %lld overflows int64", what, (long long)a,
                                 (long long)b);
    return INF_OK;
}

static inf_status depth_to_space_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x;
    int64_t b = 1;
    inf_status st = sd_check(ctx, &x, &b);
    if (st != INF_OK) return st;
    const char *mode = inf__attr_string(ctx->node, "mode", "DCR");
    bool crd = !strcmp(mode, "CRD");
    if (!crd && strcmp(mode, "DCR"))
        return inf__kernel_error(ctx, INF_EINVAL, "attribute mode: expected DCR or CRD, got '%s'",
                                 mode);
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    if (C % (b * b))
        return inf__kernel_error(ctx, INF_ESHAPE,
                                 "input: channels (%lld) must be a multiple of blocksize² (%lld)",
                                 (long long)C, (long long)(b * b));
    int64_t dims[4] = {N, C / (b * b), 0, 0}, oc = dims[1];
    if ((st = sd_mul(ctx, "height", H, b, &dims[2])) != INF_OK || (st = sd_mul(ctx, "width", W, b, &dims[3])) != INF_OK)
        return st;
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, 4, dims, &y)) != INF_OK) return st;
    if (inf_tensor_numel(y) == 0) return INF_OK;
    int64_t dst = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < oc; c++)
            for (int64_t oh = 0; oh < H * b; oh++)
                for (int64_t ow = 0; ow < W * b; ow++, dst++) {
                    int64_t i = oh % b, j = ow % b;
                    int64_t ic = crd ? c * b * b + i * b + j : (i * b + j) * oc + c;
                    int64_t src = ((n * C + ic) * H + oh / b) * W + ow / b;
                    if ((st = move_copy(ctx, y, dst, x, src, 1)) != INF_OK) return st;
                }
    return INF_OK;
}

static inf_status space_to_depth_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x;
    int64_t b = 1;
    inf_status st = sd_check(ctx, &x, &b);
    if (st != INF_OK) return st;
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    if (H % b || W % b)
        return inf__kernel_error(ctx, INF_ESHAPE,
                                 "input: height %lld and width %lld must be multiples of blocksize "
                                 "%lld",
                                 (long long)H, (long long)W, (long long)b);
    int64_t oh = H / b, ow = W / b, dims[4] = {N, 0, oh, ow};
    if ((st = sd_mul(ctx, "channels", C, b * b, &dims[1])) != INF_OK) return st;
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, 4, dims, &y)) != INF_OK) return st;
    if (inf_tensor_numel(y) == 0) return INF_OK; /* no empty loop of C*b² turns */
    int64_t dst = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C * b * b; c++)
            for (int64_t h = 0; h < oh; h++)
                for (int64_t w = 0; w < ow; w++, dst++) {
                    int64_t blk = c / C, ic = c % C, i = blk / b, j = blk % b;
                    int64_t src = ((n * C + ic) * H + h * b + i) * W + w * b + j;
                    if ((st = move_copy(ctx, y, dst, x, src, 1)) != INF_OK) return st;
                }
    return INF_OK;
}

static inf_status reverse_sequence_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x, *lt;
    inf_status st;
    if ((st = move_input(ctx, 0, "input", true, &x)) != INF_OK ||
        (st = move_input(ctx, 1, "sequence_lens", true, &lt)) != INF_OK)
        return st;
    int64_t ta = inf__attr_int(ctx->node, "time_axis", 0),
            ba = inf__attr_int(ctx->node, "batch_axis", 1);
    if (x->ndim < 2)
        return inf__kernel_error(ctx, INF_ESHAPE, "input: expected rank >= 2, got %d", x->ndim);
    if (!((ta == 0 && ba == 1) || (ta == 1 && ba == 0)))
        return inf__kernel_error(
            ctx, INF_EINVAL, "attributes time_axis (%lld) and batch_axis (%lld) must be 0 and 1",
            (long long)ta, (long long)ba);
    if ((lt->dtype != INF_DTYPE_I64 && lt->dtype != INF_DTYPE_I32) || lt->ndim != 1 ||
        lt->dims[0] != x->dims[ba])
        return inf__kernel_error(ctx, INF_ESHAPE,
                                 "input sequence_lens: expected int64 [%lld] (the batch size)",
                                 (long long)x->dims[ba]);
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, x->ndim, x->dims, &y)) != INF_OK) return st;
    int64_t T = x->dims[ta], B = x->dims[ba], inner = move_prod(x->dims, 2, x->ndim);
    /* element (batch, time) starts at (t*B + b) or (b*T + t) times inner */
    for (int64_t bi = 0; bi < B; bi++) {
        int64_t len = inf__tensor_get_i64(lt, bi);
        if (len < 0 || len > T)
            return inf__kernel_error(ctx, INF_ERANGE,
                                     "input sequence_lens: element %lld is %lld, outside [0, %lld]",
                                     (long long)bi, (long long)len, (long long)T);
        for (int64_t t = 0; t < T; t++) {
            int64_t s = t < len ? len - 1 - t : t;
            int64_t dst = (ta == 0 ? t * B + bi : bi * T + t) * inner;
            int64_t src = (ta == 0 ? s * B + bi : bi * T + s) * inner;
            if ((st = move_copy(ctx, y, dst, x, src, inner)) != INF_OK) return st;
        }
    }
    return INF_OK;
}

const inf__op_impl op_depth_to_space = {NULL, depth_to_space_run};
const inf__op_impl op_space_to_depth = {NULL, space_to_depth_run};
const inf__op_impl op_reverse_sequence = {NULL, reverse_sequence_run};
