/*
 * vmath.h -- vectorised float32 math for kernels: exp, tanh, erf, sigmoid,
 * GELU, and the per-row loops of Softmax, LayerNormalization and
 * RMSNormalization.
 *
 * DESIGN: one table of function pointers per implementation, the same
 * algorithms in both (src/ops/ref/vmath.c describes them and their error
 * bounds; tests/kernels/test_vmath.c asserts the bounds against double-
 * precision libm over millions of values, NaN, +-inf and denormals):
 *   inf__vmath_portable  plain C (ops/ref/vmath.c), any CPU;
 *   inf__vmath_avx2      AVX2 + FMA, 8 lanes (ops/x86/math_avx2.c), x86-64 only;
 *   inf__vmath_avx512    AVX-512, 16 lanes (ops/x86/math_avx512.c), x86-64 only:
 *                        bit for bit the AVX2 table's results (same element
 *                        arithmetic, same order of the row sums);
 *   inf__vmath_neon      NEON, 4 lanes (ops/arm/math_neon.c), aarch64 only.
 * inf__vmath_best() picks one once per process (AVX-512, else AVX2, when the
 * CPU has it and INFERA_CPU allows).
 *
 * Determinism: every element is computed by the same instruction sequence
 * wherever it sits in the array (the AVX2 tail goes through the vector code
 * on a padded copy), and a row function reduces its row in a fixed order.
 * So results never depend on how a kernel splits work across threads or on
 * which rows share a batch -- only on the CPU's implementation choice.
 *
 * Elementwise functions: y[i] = f(x[i]) for 0 <= i < n; y may equal x.
 * NaN in gives NaN out.
 */
#ifndef INF_OPS_VMATH_H
#define INF_OPS_VMATH_H

#include <stdbool.h>
#include <stdint.h>

typedef void (*inf__vmath_fn)(const float *x, float *y, int64_t n);

typedef struct inf__vmath {
    const char *name;
    inf__vmath_fn exp, tanh, erf, sigmoid;
    inf__vmath_fn gelu; /* 0.5 x (1 + erf(x / sqrt 2)), exact-erf GELU */
    /* y = softmax(x) over n contiguous floats: exp(x - max) / sum, the sum
     * accumulated in double.  A row of only -inf gives NaN (as the
     * reference kernel). */
    void (*softmax_row)(const float *x, float *y, int64_t n);
    /* y = (x - mean) * inv * scale + bias (bias may be NULL) over n floats,
     * mean and variance accumulated in double; inv = 1 / sqrt(var + eps).
     * *mean and *inv receive the statistics. */
    void (*layernorm_row)(const float *x, float *y, int64_t n, const float *scale, const float *bias,
                          double eps, double *mean, double *inv);
    /* y = x * inv * scale over n floats, inv = 1 / sqrt(mean(x^2) + eps),
     * the squares summed in double (RMSNormalization's row; the float32
     * products in that order, inv rounded to float32 once, as in
     * layernorm_row).  y may equal x.  NULL in the edge runtime (INF_EDGE:
     * its size budget, docs/edge.md; RMSNormalization takes the kernel's
     * generic row there). */
    void (*rmsnorm_row)(const float *x, float *y, int64_t n, const float *scale, double eps);
} inf__vmath;

#ifdef INF_EDGE
#define INF__VMATH_RMSNORM(f) NULL
#else
#define INF__VMATH_RMSNORM(f) f
#endif

extern const inf__vmath inf__vmath_portable;
#if defined(__x86_64__)
extern const inf__vmath inf__vmath_avx2;   /* call only when inf__cpu_has_avx2_fma() */
extern const inf__vmath inf__vmath_avx512; /* call only when inf__cpu_has_avx512() */
/* the AVX2 table's rmsnorm_row, which the AVX-512 table shares */
void inf__rmsnorm_row_avx2(const float *x, float *y, int64_t n, const float *scale, double eps);
#elif defined(__aarch64__)
extern const inf__vmath inf__vmath_neon; /* ops/arm/math_neon.c; call only when inf__cpu_has_neon() */
#endif

/* The best implementation for this CPU (chosen once, cached). */
const inf__vmath *inf__vmath_best(void);

/* GPT-2's tanh-form GELU, y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
 * computed as x * sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)) -- the same
 * function with no 1 + tanh cancellation -- in blocks of 256 through vm's
 * sigmoid (ops/ref/vmath.c: the algorithm and its error bound).  y may
 * equal x.  Element-wise and position-independent like the table's
 * functions.  inf__vmath_gelu_tanh_best is it with inf__vmath_best(), an
 * inf__vmath_fn for the Gelu kernel and FusedMatMul's epilogue.  The edge
 * runtime (INF_EDGE, its size budget) has only _best, computing in double. */
#ifndef INF_EDGE
void inf__vmath_gelu_tanh(const inf__vmath *vm, const float *x, float *y, int64_t n);
#endif
void inf__vmath_gelu_tanh_best(const float *x, float *y, int64_t n);

#endif /* INF_OPS_VMATH_H */
