/*
 * quantize_conv.h -- the integer convolution's parameters, geometry and
 * packed run, shared by ConvInteger / QLinearConv (quantize_conv.c) and the
 * optimizer's fused QConv (quantize_fused.c).
 */
#ifndef INF_OPS_REF_QUANTIZE_CONV_H
#define INF_OPS_REF_QUANTIZE_CONV_H

#include "ops/ops.h"
#include "ops/qgemm.h"

enum { AUTO_NOTSET, AUTO_SAME_UPPER, AUTO_SAME_LOWER, AUTO_VALID };
#define MAX_SP (INF_MAX_DIMS - 2)

typedef struct qconv_params {
    int auto_pad;
    int64_t group;
    int n_kernel, n_strides, n_dilations, n_pads;
    const int64_t *kernel, *strides, *dilations, *pads;
    /* W packed at load per group (ops/qgemm.h), for 1-D/2-D convs */
    bool packed;
    const void *w_src;
    int64_t w_dims[INF_MAX_DIMS];
    int w_ndim;
    inf__qgemm_b *bg; /* [group] */
    /* fused QConv (graph/passes/qdq_chain.c): x / y uint8 channels last (u8_in / u8_out) */
    bool nhwc_in, nhwc_out;
    int64_t cgp;     /* W packed with channels padded to cgp (ops/qgemm.h inf__qconv_geom), or 0 */
    int64_t pool[4]; /* fused MaxPool (graph/passes/qdq_chain.c): kernel h, w, strides h, w; or 0s */
    inf__qdw_w dw;   /* a depthwise conv (group == channels, one output each): W packed for it too */
    bool has_dw;
    inf__qwino_w wino; /* a 3x3 stride-1 conv on the AVX2 kernels: W transformed for the INT8 Winograd too */
    bool has_wino;
    inf__qconv_rgb rgb; /* an RGB stem on the AVX2 pair-safe kernel: W packed densely too (inf__qconv_geom.rgb) */
    bool has_rgb;
} qconv_params;

typedef struct qconv_geom {
    int nd;
    int64_t n, c, m, cg, mg;
    int64_t in[MAX_SP], out[MAX_SP], k[MAX_SP], s[MAX_SP], d[MAX_SP], pb[MAX_SP];
    int64_t in_total, out_total, k_total;
} qconv_geom;

typedef struct qconv_args {
    const inf_tensor *x, *w, *xzp, *wzp, *bias;
    const inf_tensor *xs, *ws, *ys, *yzp; /* QLinearConv */
    inf_tensor *y;
} qconv_args;

/* Reads the Conv attributes (and the fused node's u8_in/u8_out/pool ones)
 * and packs a constant W for the integer GEMM when the CPU has one. */
inf_status inf__qconv_op_init(inf__node *node, inf__arena *arena, inf_error *err);
/* Checks x and w against the attributes and fills g. */
inf_status inf__qconv_op_geometry(inf__kernel_ctx *ctx, const qconv_params *p, const inf_tensor *x, const inf_tensor *w,
                                  qconv_geom *g);
/* Output 0 of type dt, [n, m, out...]. */
inf_status inf__qconv_op_output(inf__kernel_ctx *ctx, const qconv_geom *g, inf_dtype dt, inf_tensor **y);
/* Does the W packed at load fit this call (a 1-D/2-D conv, per-tensor x zero point)? */
bool inf__qconv_op_packed_fits(const inf__kernel_ctx *ctx, const qconv_geom *g, const qconv_args *q);
/* Runs the conv on the packed W, storing through out into y. */
inf_status inf__qconv_op_run_packed(inf__kernel_ctx *ctx, const qconv_geom *g, const qconv_args *q,
                                    const inf__qout *out, void *y);
/* mult[j] = x_scale * w_scale[j] (/ y_scale when ys) for j < n. */
void inf__qconv_op_scale_products(const inf_tensor *xs, const inf_tensor *ws, const inf_tensor *ys, int64_t n,
                                  float *mult);
/* Per-channel multipliers of a QLinearConv / QConv, in scratch (NULL when out of memory). */
float *inf__qconv_op_mults(inf__kernel_ctx *ctx, const qconv_geom *g, const qconv_args *q);

#endif
