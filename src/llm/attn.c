/*
 * attn.c -- the reference attention kernel of one (token, head) pair (attn.h)
 * and the choice of the fast twin.  Blocks of 64 keys: their scores, the
 * block maximum, the running sums rescaled when the maximum grows (online
 * softmax), exp with libm's expf; soft-capped scores with libm's tanhf.
 */
#include "llm/attn.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "core/core.h"

#define KEY_BLOCK 64

void inf__llm_attn_ref(int hd, const float *q, const float *k, const float *v, size_t stride, int n_keys, float scale,
                       float cap, float *o) {
    float acc[INF__LLM_MAX_HEAD_DIM] = {0}, s[KEY_BLOCK], mx = -INFINITY, l = 0;
    for (int j0 = 0; j0 < n_keys; j0 += KEY_BLOCK) {
        int nb = n_keys - j0 < KEY_BLOCK ? n_keys - j0 : KEY_BLOCK;
        float bmax = -INFINITY;
        for (int u = 0; u < nb; u++) {
            const float *kj = k + (size_t)(j0 + u) * stride;
            double d = 0;
            for (int e = 0; e < hd; e++) d += (double)q[e] * kj[e];
            s[u] = (float)d * scale;
            if (cap > 0) s[u] = tanhf(s[u] * (1.0f / cap)) * cap;
            if (s[u] > bmax) bmax = s[u];
        }
        float mnew = bmax > mx ? bmax : mx, corr = expf(mx - mnew);
        if (mx != mnew) {
            for (int e = 0; e < hd; e++) acc[e] *= corr;
            l *= corr;
        }
        mx = mnew;
        for (int u = 0; u < nb; u++) {
            float p = expf(s[u] - mx);
            const float *vj = v + (size_t)(j0 + u) * stride;
            l += p;
            for (int e = 0; e < hd; e++) acc[e] += p * vj[e];
        }
    }
    for (int e = 0; e < hd; e++) o[e] = acc[e] / l;
}

/* 0: not decided yet, 1: reference, 2: AVX2, 3: AVX-512 (the environment
 * is read once: a forward pass asks for the kernel in every layer) */
static atomic_int picked;

inf__llm_attn_fn inf__llm_attn_get(bool force_ref) {
    if (force_ref) return inf__llm_attn_ref;
    int p = atomic_load_explicit(&picked, memory_order_relaxed);
    if (!p) {
        p = 1;
#if defined(__x86_64__)
        /* as quant.c picks the LLM kernels (INFERA_LLM_NO_AVX512 keeps AVX2); INFERA_LLM_ATTN_AVX2 for comparisons */
        if (inf__cpu_has_avx512_vnni() && !getenv("INFERA_LLM_NO_AVX512") && !getenv("INFERA_LLM_ATTN_AVX2"))
            p = 3;
        else if (inf__cpu_has_avx2_fma())
            p = 2;
#endif
        atomic_store_explicit(&picked, p, memory_order_relaxed);
    }
#if defined(__x86_64__)
    if (p == 3) return inf__llm_attn_avx512;
    if (p == 2) return inf__llm_attn_avx2;
#endif
    return inf__llm_attn_ref;
}

inf__llm_attn_multi_fn inf__llm_attn_multi_get(bool force_ref) {
#if defined(__x86_64__)
    if (inf__llm_attn_get(force_ref) == inf__llm_attn_avx512) return inf__llm_attn_multi_avx512;
#endif
    (void)force_ref;
    return NULL;
}
