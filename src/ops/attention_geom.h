/*
 * attention_geom.h -- the shapes and strides of the fused attention ops
 * (ai.infera Attention, ops/ref/attention.c, and its INT8 form QAttention,
 * ops/ref/qattention.c): inputs Q, K, V [, mask] read as [B, S, H, D]
 * (rank 3: B = 1) with broadcasting batch/head dimensions, the output
 * [B, Sq, H, Dv], and the mask's strides over the scores [B, H, Sq, Sk].
 * Attention's layout attributes (inf__attention_layout) may read any of
 * Q, K, V and Y as [B, H, S, D] instead (rank 3: [H, S, D]) and give K and
 * V fewer heads than Q (grouped-query attention: query head h reads
 * key/value head h / group).
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
    int64_t yb, yh;                 /* element strides of Y's batch and head */
    int64_t group;                  /* query heads a key/value head (1: K/V heads as Q's or broadcast) */
} inf__attention_geom;

/* Which tensors are [B, H, S, D] (bits of bhsd) and how many key/value
 * heads K and V have: kv_heads 0: as many as Q, or 1 broadcast (numpy
 * rules); kv_heads h: K and V have h heads or 1 (broadcast to h), Q has
 * q_heads or 1 (broadcast; q_heads 0: Q's own), a multiple of h, and query
 * head j reads key/value head j / (q_heads / h). */
enum { INF_ATT_BHSD_Q = 1, INF_ATT_BHSD_K = 2, INF_ATT_BHSD_V = 4, INF_ATT_BHSD_Y = 8 };
typedef struct inf__attention_layout {
    int bhsd;
    int64_t kv_heads, q_heads;
} inf__attention_layout;

/* Checks the float32 inputs of ctx, fills g and makes the output (*y);
 * layout NULL: every tensor [B, S, H, D], heads broadcast. */
inf_status inf__attention_geometry(inf__kernel_ctx *ctx, const inf__attention_layout *layout, inf__attention_geom *g,
                                   inf_tensor **y);

#endif /* INF_OPS_ATTENTION_GEOM_H */
