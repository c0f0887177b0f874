/*
 * swiglu.c -- the reference feed-forward gates (swiglu.h) with libm, and the
 * choice of their AVX2 twins.
 */
#include "llm/swiglu.h"

#include <math.h>

#include "core/core.h"

void inf__llm_swiglu_ref(float *g, const float *u, size_t n) {
    for (size_t i = 0; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

/* GELU (tanh form) of x times u, with libm's tanhf (the definition, not the identity the twin uses) */
void inf__llm_geglu_ref(float *g, const float *u, size_t n) {
    const float sqrt_2_over_pi = 0.79788456080286535588f, a = 0.044715f;
    for (size_t i = 0; i < n; i++) {
        float x = g[i];
        g[i] = 0.5f * x * (1.0f + tanhf(sqrt_2_over_pi * x * (1.0f + a * x * x))) * u[i];
    }
}

inf__llm_swiglu_fn inf__llm_gate_get(inf__llm_gate_kind kind, bool force_ref) {
    bool gelu = kind == INF__LLM_GATE_GELU_TANH;
#if defined(__x86_64__)
    if (!force_ref && inf__cpu_has_avx2_fma()) return gelu ? inf__llm_geglu_avx2 : inf__llm_swiglu_avx2;
#endif
    (void)force_ref;
    return gelu ? inf__llm_geglu_ref : inf__llm_swiglu_ref;
}

inf__llm_swiglu_fn inf__llm_swiglu_get(bool force_ref) { return inf__llm_gate_get(INF__LLM_GATE_SILU, force_ref); }
