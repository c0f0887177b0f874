/*
 * swiglu.h -- the gate of the feed-forward block, g[i] = act(g[i]) * u[i]:
 * SwiGLU (llama, qwen, phi3: act = silu(x) = x / (1 + e^-x)) and GeGLU
 * (gemma: act = GELU's tanh form, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
 * computed as x / (1 + e^-2z) with z the tanh's argument, the same identity).
 * The references (swiglu.c, libm) and their AVX2 twins (swiglu_avx2.c, a
 * vector exp), picked at run time.
 */
#ifndef INF_LLM_SWIGLU_H
#define INF_LLM_SWIGLU_H

#include <stdbool.h>
#include <stddef.h>

typedef enum inf__llm_gate_kind { INF__LLM_GATE_SILU, INF__LLM_GATE_GELU_TANH } inf__llm_gate_kind;

typedef void (*inf__llm_swiglu_fn)(float *g, const float *u, size_t n);

/* The gate of `kind`: the AVX2 twin when the CPU has it, unless force_ref. */
inf__llm_swiglu_fn inf__llm_gate_get(inf__llm_gate_kind kind, bool force_ref);
inf__llm_swiglu_fn inf__llm_swiglu_get(bool force_ref);
void inf__llm_swiglu_ref(float *g, const float *u, size_t n);
void inf__llm_swiglu_avx2(float *g, const float *u, size_t n);
void inf__llm_geglu_ref(float *g, const float *u, size_t n);
void inf__llm_geglu_avx2(float *g, const float *u, size_t n);

#endif
