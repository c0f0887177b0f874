/*
 * swiglu.c -- the reference SwiGLU gate (swiglu.h) with libm's expf, and the
 * choice of the AVX2 twin.
 */
#include "llm/swiglu.h"

#include <math.h>

#include "core/core.h"

void inf__llm_swiglu_ref(float *g, const float *u, size_t n) {
    for (size_t i = 0; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

inf__llm_swiglu_fn inf__llm_swiglu_get(bool force_ref) {
#if defined(__x86_64__)
    if (!force_ref && inf__cpu_has_avx2_fma()) return inf__llm_swiglu_avx2;
#endif
    return inf__llm_swiglu_ref;
}
