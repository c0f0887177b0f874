/*
 * attention.h -- the float32 fused attention kernel (ops/ref/attention.c)
 * as a function: the internal ai.infera Attention op and ONNX's opset-23
 * Attention (ops/ref/attention_onnx.c, where it fits) run it on a geometry
 * (ops/attention_geom.h: layouts, grouped-query heads, the mask's strides).
 *
 *   for every (b, query head h), with k = h / group:
 *     Y_bh = softmax_rows(Q_bh (scale K_bk)^T + M_bh [+ causal]) V_bk
 *   causal: query i sees keys t <= i + Sk - Sq only (-inf on the others),
 *   or t <= i + causal_offset with causal_at (ONNX's Attention: the past's
 *   length P, which is Sk - Sq only when there are as many new keys as queries).
 *   nan_to_zero: a row whose softmax is NaN (no finite sum) gives zeros;
 *   masked_to_zero: a row whose every score is -inf gives zeros.
 */
#ifndef INF_OPS_ATTENTION_H
#define INF_OPS_ATTENTION_H

#include "ops/attention_geom.h"

typedef struct inf__attention_opts {
    float scale;
    bool nan_to_zero, masked_to_zero, causal;
    bool causal_at; /* causal_offset given (else Sk - Sq) */
    int64_t causal_offset;
} inf__attention_opts;

/* Bytes of scratch (64-byte aligned) the job needs on the pool's threads (pool NULL: one). */
size_t inf__attention_scratch_bytes(const inf__attention_geom *g, const inf__attention_opts *o, inf__pool *pool);
/* Writes Y; units split over min(pool's threads, B * H) parts; the bits
 * depend on neither the split nor the batch. */
void inf__attention_compute(const inf__attention_geom *g, const inf__attention_opts *o, inf__pool *pool, void *scratch);

#endif /* INF_OPS_ATTENTION_H */
