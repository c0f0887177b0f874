/*
 * attention_geom.h -- the shapes and strides of the fused attention ops
 * (ai.infera Attention, ops/ref/attention.c, and its INT8 form QAttention,
 * ops/ref/qattention.c): inputs Q, K, V [, mask] read as [B, S, H, D]
 * (rank 3: B = 1) with broadcasting batch/head dimensions, the output
 * [B, Sq, H, Dv], and the mask's strides over the scores [B, H, Sq, Sk].
 */
#ifndef INF_OPS_ATTENTION_GEOM_H
#define INF_OPS_ATTENTION_GEOM_H

#include "ops/ops.h"

typedef struct inf__attention_geom {
    const float *q, *k, *v, *mask;
    float *y;
    int64_t b, h, sq, sk, d, dv;    /* output batch and heads, lengths, head sizes */
    int64_t qb, qh, kb, kh, vb, vh; /* element strides of batch and head (0: broadcast) */
    int64_t ldq, ldk, ldv, ldy;     /* row strides (H*D, H*Dv of each input) */
    int64_t mb, mh, mi, mj;         /* mask strides over [B, H, Sq, Sk] (0: broadcast) */
} inf__attention_geom;

/* Checks the float32 inputs of ctx, fills g and makes the output (*y). */
inf_status inf__attention_geometry(inf__kernel_ctx *ctx, inf__attention_geom *g, inf_tensor **y);

#endif /* INF_OPS_ATTENTION_GEOM_H */
