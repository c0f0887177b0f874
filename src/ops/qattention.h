/*
 * qattention.h -- the INT8 fused attention (ai.infera QAttention, made by
 * the optimizer's attention pass from the QDQ chain `infera quantize` and
 * ONNX Runtime's quantizer write around attention's two activation MatMuls,
 * graph/passes/attention.c):
 *
 *   Y = QAttention(Q, K, V [, mask]; scale, q_scale, quant = [sq, zq, sk, zk, sp, zp, sv, zv])
 *   for every (b, h), with q8(x, s, z) = QuantizeLinear's uint8 bytes:
 *     S = (q8(q_scale * Q_bh, sq, zq) - zq) (q8(K_bh, sk, zk) - zk)^T     exact int32 sums
 *     P = q8(softmax_rows(sq * sk * scale * S + M_bh), sp, zp)            float softmax
 *     Y_bh = sp * sv * (P - zp) (q8(V_bh, sv, zv) - zv)                   exact int32 sums
 * Shapes, broadcasting and the mask as Attention's (ops/attention_geom.h).
 *
 * The integer products are inf__qgemm_raw (ops/qgemm.h) on K^T and V
 * quantized and packed per (batch, head) unit as uint8 B (shifted to int8
 * with the zero point, exactly): AVX-512 VNNI vpdpbusd, AVX-VNNI, or on
 * AVX2-only CPUs vpmaddwd on 16-bit operands -- exact for any bytes, where
 * vpmaddubsw's u8 x s8 pair sums would saturate (uint8 K and V span the
 * whole [-128, 127] after the shift, not the 7-bit weights of --reduce-range).
 * The reference twin is the same driver on INF_QGEMM_REF (plain C sums, the
 * portable QuantizeLinear); tests/kernels/test_qattention.c compares them.
 */
#ifndef INF_OPS_QATTENTION_H
#define INF_OPS_QATTENTION_H

#include "ops/attention_geom.h"
#include "ops/qgemm.h"
#include "ops/vmath.h"

enum { INF_QATT_Q, INF_QATT_K, INF_QATT_P, INF_QATT_V };

typedef struct inf__qattention_job {
    inf__attention_geom g;
    float scale, q_scale; /* on the scores; on Q before its quantization */
    float qs[4];          /* scales of Q, K, P, V (INF_QATT_*) */
    int32_t qz[4];        /* their uint8 zero points */
    inf__qgemm_isa isa;   /* inf__qgemm_best_isa(), or INF_QGEMM_REF (the twin) */
    const inf__vmath *vm; /* the softmax */
} inf__qattention_job;

/* Bytes of scratch for `threads` parts (64-byte aligned memory). */
size_t inf__qattention_scratch_bytes(const inf__qattention_job *j, int threads);
/* Y for every (b, h), units split over min(pool's threads, B * H) parts. */
void inf__qattention_run(const inf__qattention_job *j, inf__pool *pool, void *scratch);

#endif /* INF_OPS_QATTENTION_H */
