/*
 * attn_avx2.c -- the AVX2/FMA twin of the reference attention kernel
 * (attn.c): the same blocks of 64 keys and online softmax, with
 *  - the scores of 8 keys at a time (8 accumulators over the head, one
 *    transposing horizontal sum gives the 8 scores in one register),
 *  - exp of 8 scores at a time (vmath_avx2.h), and their soft cap (Gemma 2)
 *    through the same exp,
 *  - the weighted sum of the values as FMAs over the head.
 * Results differ from the reference by rounding only (tests/llm/test_llm.c
 * checks the distance); for given inputs they are the same whatever the
 * batch or thread split, as every (token, head) pair is computed alone.
 */
#include <immintrin.h>
#include <math.h>

#include "llm/attn.h"
#include "llm/vmath_avx2.h"

#define KEY_BLOCK 64

/* lane i = the sum of the 8 lanes of a[i] */
static inline __m256 hsum8x8_ps(const __m256 a[8]) {
    __m256 s01 = _mm256_hadd_ps(a[0], a[1]), s23 = _mm256_hadd_ps(a[2], a[3]);
    __m256 s45 = _mm256_hadd_ps(a[4], a[5]), s67 = _mm256_hadd_ps(a[6], a[7]);
    __m256 s0123 = _mm256_hadd_ps(s01, s23), s4567 = _mm256_hadd_ps(s45, s67);
    return _mm256_add_ps(_mm256_permute2f128_ps(s0123, s4567, 0x20), _mm256_permute2f128_ps(s0123, s4567, 0x31));
}

/* cap tanh(x / cap) in 8 lanes: tanh(y) = 1 - 2 / (1 + e^2y) with the vector exp (its clamps give +-1 far out) */
static inline __m256 softcap8(__m256 x, float cap) {
    __m256 e = inf__exp_ps(_mm256_mul_ps(x, _mm256_set1_ps(2.0f / cap))), one = _mm256_set1_ps(1.0f);
    __m256 t = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(one, e)));
    return _mm256_mul_ps(t, _mm256_set1_ps(cap));
}

/* scale * q . k_j (soft-capped when cap > 0) for the nb keys of a block (s: 64 floats, nb rounded up to 8 with -inf) */
static inline void block_scores(int hd, const float *q, const float *k, size_t stride, int nb, float scale, float cap,
                                float *s) {
    int u = 0;
    for (; u + 8 <= nb; u += 8) {
        __m256 a[8];
        for (int i = 0; i < 8; i++) a[i] = _mm256_setzero_ps();
        for (int e = 0; e < hd; e += 8) {
            __m256 qv = _mm256_loadu_ps(q + e);
            for (int i = 0; i < 8; i++)
                a[i] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + (size_t)(u + i) * stride + e), a[i]);
        }
        _mm256_storeu_ps(s + u, _mm256_mul_ps(hsum8x8_ps(a), _mm256_set1_ps(scale)));
    }
    for (; u < nb; u++) {
        __m256 a = _mm256_setzero_ps();
        for (int e = 0; e < hd; e += 8) a = _mm256_fmadd_ps(_mm256_loadu_ps(q + e), _mm256_loadu_ps(k + (size_t)u * stride + e), a);
        s[u] = inf__hsum_ps(a) * scale;
    }
    if (cap > 0) /* whole vectors (the lanes past nb are overwritten with -inf below) */
        for (int w = 0; w < nb; w += 8) _mm256_storeu_ps(s + w, softcap8(_mm256_loadu_ps(s + w), cap));
    for (; u % 8; u++) s[u] = -INFINITY;
}

void inf__llm_attn_avx2(int hd, const float *q, const float *k, const float *v, size_t stride, int n_keys, float scale,
                        float cap, float *o) {
    if (hd % 8 || hd > INF__LLM_MAX_HEAD_DIM) {
        inf__llm_attn_ref(hd, q, k, v, stride, n_keys, scale, cap, o);
        return;
    }
    float acc[INF__LLM_MAX_HEAD_DIM] __attribute__((aligned(32))) = {0};
    float s[KEY_BLOCK] __attribute__((aligned(32))), mx = -INFINITY, l = 0;
    for (int j0 = 0; j0 < n_keys; j0 += KEY_BLOCK) {
        int nb = n_keys - j0 < KEY_BLOCK ? n_keys - j0 : KEY_BLOCK, nb8 = (nb + 7) & ~7;
        const float *kb = k + (size_t)j0 * stride, *vb = v + (size_t)j0 * stride;
        block_scores(hd, q, kb, stride, nb, scale, cap, s);
        __m256 m = _mm256_set1_ps(-INFINITY);
        for (int u = 0; u < nb8; u += 8) m = _mm256_max_ps(m, _mm256_load_ps(s + u));
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        float bmax = _mm_cvtss_f32(_mm_max_ss(m4, _mm_movehdup_ps(m4)));
        float mnew = bmax > mx ? bmax : mx;
        if (mx != mnew) {
            float corr = expf(mx - mnew);
            for (int e = 0; e < hd; e += 8)
                _mm256_store_ps(acc + e, _mm256_mul_ps(_mm256_load_ps(acc + e), _mm256_set1_ps(corr)));
            l *= corr;
        }
        mx = mnew;
        __m256 vmx = _mm256_set1_ps(mx), lsum = _mm256_setzero_ps();
        for (int u = 0; u < nb8; u += 8) { /* the padding's -inf gives 0 */
            __m256 p = inf__exp_ps(_mm256_sub_ps(_mm256_load_ps(s + u), vmx));
            _mm256_store_ps(s + u, p);
            lsum = _mm256_add_ps(lsum, p);
        }
        l += inf__hsum_ps(lsum);
        for (int e = 0; e < hd; e += 8) {
            __m256 a0 = _mm256_load_ps(acc + e), a1 = _mm256_setzero_ps();
            int u = 0;
            for (; u + 2 <= nb; u += 2) {
                a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(s + u), _mm256_loadu_ps(vb + (size_t)u * stride + e), a0);
                a1 = _mm256_fmadd_ps(_mm256_broadcast_ss(s + u + 1), _mm256_loadu_ps(vb + (size_t)(u + 1) * stride + e), a1);
            }
            if (u < nb) a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(s + u), _mm256_loadu_ps(vb + (size_t)u * stride + e), a0);
            _mm256_store_ps(acc + e, _mm256_add_ps(a0, a1));
        }
    }
    __m256 il = _mm256_set1_ps(1.0f / l);
    for (int e = 0; e < hd; e += 8) _mm256_storeu_ps(o + e, _mm256_mul_ps(_mm256_load_ps(acc + e), il));
}
