/*
 * swiglu.h -- the gate of the llama feed-forward block, g[i] = silu(g[i]) * u[i]
 * (silu(x) = x / (1 + e^-x)): the reference (swiglu.c) and its AVX2 twin
 * (swiglu_avx2.c, a vector exp), picked at run time.
 */
#ifndef INF_LLM_SWIGLU_H
#define INF_LLM_SWIGLU_H

#include <stdbool.h>
#include <stddef.h>

typedef void (*inf__llm_swiglu_fn)(float *g, const float *u, size_t n);

inf__llm_swiglu_fn inf__llm_swiglu_get(bool force_ref);
void inf__llm_swiglu_ref(float *g, const float *u, size_t n);
void inf__llm_swiglu_avx2(float *g, const float *u, size_t n);

#endif
