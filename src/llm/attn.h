/*
 * attn.h -- causal attention of one (token, head) pair over the cached keys
 * and values (context.c runs one per task): the reference kernel (attn.c)
 * and its AVX2 and AVX-512 twins (attn_avx2.c, attn_avx512.c), picked at
 * run time.
 *
 * o[hd] = sum_j softmax_j(s_j) v_j over j < n_keys, s_j = scale * q . k_j, or
 * with cap > 0 soft-capped, cap tanh(scale * q . k_j / cap) (Gemma 2's
 * attn_logit_softcapping; cap 0: none), where key j is k + j * stride
 * (floats) and value j is v + j * stride; computed with an online softmax
 * over blocks of keys, so nothing grows with n_keys.
 */
#ifndef INF_LLM_ATTN_H
#define INF_LLM_ATTN_H

#include <stdbool.h>
#include <stddef.h>

#define INF__LLM_MAX_HEAD_DIM 256

typedef void (*inf__llm_attn_fn)(int hd, const float *q, const float *k, const float *v, size_t stride, int n_keys,
                                 float scale, float cap, float *o);

/* The kernel for this CPU (the reference one when force_ref). */
inf__llm_attn_fn inf__llm_attn_get(bool force_ref);
void inf__llm_attn_ref(int hd, const float *q, const float *k, const float *v, size_t stride, int n_keys, float scale,
                       float cap, float *o);
/* AVX2/FMA (attn_avx2.c): head sizes that are multiples of 8, else the reference. */
/* AVX-512 (attn_avx512.c): head sizes that are multiples of 16, else the AVX2 kernel. */
void inf__llm_attn_avx512(int hd, const float *q, const float *k, const float *v, size_t stride, int n_keys,
                          float scale, float cap, float *o);
/* Queries q[i] (n_keys[i] keys each, outputs o[i]) over one head's keys and
 * values; query i's output is bit for bit inf__llm_attn_avx512's for it alone
 * (the queries are taken INF__LLM_ATTN_MULTI at a time, their steps
 * interleaved: see attn_avx512.c). */
#define INF__LLM_ATTN_MULTI 8
typedef void (*inf__llm_attn_multi_fn)(int hd, int nq, const float *const *q, const int *n_keys, const float *k,
                                       const float *v, size_t stride, float scale, float cap, float *const *o);
void inf__llm_attn_multi_avx512(int hd, int nq, const float *const *q, const int *n_keys, const float *k,
                                const float *v, size_t stride, float scale, float cap, float *const *o);
/* The multi-query kernel for this CPU, NULL when there is none (then the
 * caller runs the one-query kernel per query). */
inf__llm_attn_multi_fn inf__llm_attn_multi_get(bool force_ref);
void inf__llm_attn_avx2(int hd, const float *q, const float *k, const float *v, size_t stride, int n_keys, float scale,
                        float cap, float *o);

#endif
