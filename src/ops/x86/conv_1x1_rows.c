/*
 * conv_1x1_rows.c -- a 1x1 Conv without padding on channels-last X and Y
 * (graph/passes/channels_last.c: ResNet's shortcuts between the Winograd
 * Convs) as one GEMM per output row: the row's positions, every sw-th of
 * input row oy * sh ([ow][C] with lda = sw * C), by W^T packed as the
 * GEMM's B (inf__ops_sgemm_pack_b of W [M][C], transposed), into Y's row
 * [ow][M]; bias, residual (channels-last, Y's layout) and a Relu in the
 * GEMM's store (inf__gemm_epilogue).
 *
 * Called from ops/ref/conv.c (conv_avx2) on a CPU with AVX2/FMA, which
 * packs W at load (conv_params.w_rows) or into scratch.  A plain C file:
 * the GEMM it calls is the AVX2/AVX-512 driver (ops/x86/gemm_avx2.c).
 * Bits: each output is the GEMM's sum over C in k order, + bias, + res,
 * then the Relu; a row's sums do not depend on the rows beside it, so
 * neither on the batch nor on the threads.
 */
#if defined(__x86_64__)

#include "ops/ops.h"

typedef struct rows_job {
    const inf__conv2d *c;
    const float *x, *wp, *res;
    float *y;
    inf__gemm_epilogue ep;
} rows_job;

/* Output rows [begin, end) of all images (image * oh + oy), one GEMM each. */
static void rows_tasks(void *arg, int64_t begin, int64_t end) {
    const rows_job *J = arg;
    const inf__conv2d *c = J->c;
    for (int64_t r = begin; r < end; r++) {
        int64_t n = r / c->oh, oy = r % c->oh, out = r * c->ow * c->m;
        inf__gemm_epilogue ep = J->ep;
        if (J->res) ep.res = J->res + out;
        inf__ops_sgemm_packed_ep_avx2(NULL, false, c->ow, c->m, c->c, 1.0f,
                                      J->x + (n * c->ih + oy * c->sh) * c->iw * c->c, c->sw * c->c, J->wp, 0.0f,
                                      J->y + out, c->m, &ep);
    }
}

void inf__conv2d_1x1_rows_f32(inf__pool *pool, const inf__conv2d *c, const float *x, const float *wp,
                              const float *bias, const float *res, bool relu, float *y) {
    rows_job J = {c, x, wp, res, y, {bias, NULL, c->m, relu ? inf__ops_relu_row : NULL, relu}};
    inf__pool_range(pool, c->n * c->oh, 1, rows_tasks, &J);
}

#endif /* x86-64 */
