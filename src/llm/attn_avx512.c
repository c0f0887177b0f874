/*
 * attn_avx512.c -- the AVX-512 twin of the reference attention kernel
 * (attn.c): the same blocks of 64 keys and online softmax, with
 *  - the scores of 16 keys at a time: one partial-sum register per key over
 *    the head, then one transposing tree (45 shuffles and adds) turns the 16
 *    registers into one whose lane u is key u's score,
 *  - exp of 16 scores at a time (the polynomial of vmath_avx2.h in 16 lanes),
 *    and their soft cap (Gemma 2) through the same exp,
 *  - the weighted sum of the values with each key's weight permuted out of
 *    the register of 16 (not read back from memory: see accum_values), in
 *    2 or 4 accumulators per 16 elements of the head (keys u mod 2 or 4).
 * Head sizes that are not a multiple of 16 go to the AVX2 kernel.  Results
 * differ from the reference by rounding only (tests/llm/test_llm.c checks
 * the distance).  inf__llm_attn_multi_avx512 takes up to 8 queries that
 * share a kv head (the query heads of a group, the tokens of a short pass)
 * and runs every step of the one-query kernel for each of them in turn, so
 * their dependency chains overlap (one query alone waits on its own
 * max -> exp -> accumulate chain); each query's operations are the same
 * whatever the other queries, so batches and thread splits do not change a
 * result (the one-query entry point is the same code with one query).
 */
#include <immintrin.h>
#include <math.h>

#include "llm/attn.h"

#define KEY_BLOCK 64

/* e^x in 16 lanes: vmath_avx2.h's inf__exp_ps, the same operations. */
static inline __m512 exp16(__m512 x) {
    const __m512 lo = _mm512_set1_ps(-87.3f);
    __mmask16 tiny = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
    x = _mm512_min_ps(_mm512_max_ps(x, lo), _mm512_set1_ps(88.0f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.0f / 720);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_maskz_mul_ps((__mmask16)~tiny, p, _mm512_castsi512_ps(e));
}

/* lane u = the sum of the 16 lanes of a[u] */
static inline __m512 hsum16x16(const __m512 a[16]) {
    __m512 b[8], c[4];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
        b[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        __m512d x = _mm512_castps_pd(b[2 * i]), y = _mm512_castps_pd(b[2 * i + 1]);
        c[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)), _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
    }
    __m512 e0 = _mm512_add_ps(_mm512_shuffle_f32x4(c[0], c[1], _MM_SHUFFLE(2, 0, 2, 0)),
                              _mm512_shuffle_f32x4(c[0], c[1], _MM_SHUFFLE(3, 1, 3, 1)));
    __m512 e1 = _mm512_add_ps(_mm512_shuffle_f32x4(c[2], c[3], _MM_SHUFFLE(2, 0, 2, 0)),
                              _mm512_shuffle_f32x4(c[2], c[3], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_add_ps(_mm512_shuffle_f32x4(e0, e1, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(e0, e1, _MM_SHUFFLE(3, 1, 3, 1)));
}

/* cap tanh(x / cap) in 16 lanes: tanh(y) = 1 - 2 / (1 + e^2y) with exp16 (its clamps give +-1 far out) */
static inline __m512 softcap16(__m512 x, float cap) {
    __m512 e = exp16(_mm512_mul_ps(x, _mm512_set1_ps(2.0f / cap))), one = _mm512_set1_ps(1.0f);
    __m512 t = _mm512_sub_ps(one, _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(one, e)));
    return _mm512_mul_ps(t, _mm512_set1_ps(cap));
}

/* scale * q . k_j (soft-capped when cap > 0) of keys u0 .. u0+15 (those below nb; the others -inf) */
static inline __m512 scores16(int hd, const float *q, const float *k, size_t stride, int u0, int nb, float scale,
                              float cap) {
    __m512 a[16];
    int n = nb - u0 < 16 ? nb - u0 : 16;
#pragma GCC unroll 16
    for (int u = 0; u < 16; u++) {
        const float *kj = k + (size_t)(u0 + (u < n ? u : 0)) * stride; /* past the keys: key 0 again, masked */
        __m512 s = _mm512_mul_ps(_mm512_loadu_ps(q), _mm512_loadu_ps(kj));
        for (int e = 16; e < hd; e += 16)
            s = _mm512_fmadd_ps(_mm512_loadu_ps(q + e), _mm512_loadu_ps(kj + e), s);
        a[u] = s;
    }
    __m512 s = _mm512_mul_ps(hsum16x16(a), _mm512_set1_ps(scale));
    if (cap > 0) s = softcap16(s, cap);
    return _mm512_mask_blend_ps((__mmask16)((1u << n) - 1), _mm512_set1_ps(-INFINITY), s);
}

/* acc[c0 .. c0 + 16 nc) += sum over the n keys u of p[u] * v_u: key u's
 * weight is taken from p's lane by a permute (a broadcast from memory just
 * written as a vector stalls on store forwarding), and the keys rotate over
 * ns sets of accumulators (u mod ns) so that 2 ns independent FMA chains of
 * 4-cycle latency keep both FMA pipes busy; the sets are summed at the end
 * as ((a0 + a1) + (a2 + a3)). */
static inline __attribute__((always_inline)) void accum_values(int nc, int ns, __m512 p, const float *v, size_t stride,
                                                               int n, float *acc) {
    __m512 a[4][4];
#pragma GCC unroll 4
    for (int c = 0; c < nc; c++) {
        a[0][c] = _mm512_load_ps(acc + 16 * c);
#pragma GCC unroll 4
        for (int i = 1; i < ns; i++)
            a[i][c] = _mm512_setzero_ps();
    }
    int u = 0;
    for (; u + ns <= n; u += ns) {
#pragma GCC unroll 4
        for (int i = 0; i < ns; i++) {
            __m512 bi = _mm512_permutexvar_ps(_mm512_set1_epi32(u + i), p);
            const float *vi = v + (size_t)(u + i) * stride;
#pragma GCC unroll 4
            for (int c = 0; c < nc; c++)
                a[i][c] = _mm512_fmadd_ps(bi, _mm512_loadu_ps(vi + 16 * c), a[i][c]);
        }
    }
    for (int i = 0; u < n; u++, i++) {
        __m512 bi = _mm512_permutexvar_ps(_mm512_set1_epi32(u), p);
#pragma GCC unroll 4
        for (int c = 0; c < nc; c++)
            a[i][c] = _mm512_fmadd_ps(bi, _mm512_loadu_ps(v + (size_t)u * stride + 16 * c), a[i][c]);
    }
#pragma GCC unroll 4
    for (int c = 0; c < nc; c++) {
        __m512 r = ns == 4 ? _mm512_add_ps(_mm512_add_ps(a[0][c], a[1][c]), _mm512_add_ps(a[2][c], a[3][c]))
                           : _mm512_add_ps(a[0][c], a[1][c]);
        _mm512_store_ps(acc + 16 * c, r);
    }
}

static void accum_head(int hd, __m512 p, const float *v, size_t stride, int n, float *acc) {
    if (hd == 16) return accum_values(1, 4, p, v, stride, n, acc);
    if (hd == 32) return accum_values(2, 4, p, v, stride, n, acc);
    for (int c0 = 0; c0 < hd; c0 += 64) {
        int nc = (hd - c0) / 16 < 4 ? (hd - c0) / 16 : 4;
        switch (nc) {
        case 1:
            accum_values(1, 4, p, v + c0, stride, n, acc + c0);
            break;
        case 2:
            accum_values(2, 4, p, v + c0, stride, n, acc + c0);
            break;
        case 3:
            accum_values(3, 2, p, v + c0, stride, n, acc + c0);
            break;
        default:
            accum_values(4, 2, p, v + c0, stride, n, acc + c0);
            break;
        }
    }
}

/* The queries' state: running sums, maximum, denominator, block scores. */
typedef struct attn_state {
    float acc[INF__LLM_ATTN_MULTI][INF__LLM_MAX_HEAD_DIM] __attribute__((aligned(64)));
    float s[INF__LLM_ATTN_MULTI][KEY_BLOCK] __attribute__((aligned(64)));
    float mx[INF__LLM_ATTN_MULTI], l[INF__LLM_ATTN_MULTI];
} attn_state;

/* One block of 64 keys (from j0) for every query that still has keys
 * there: each step of the one-query kernel, taken query after query, so
 * that independent chains sit side by side in the instruction stream. */
static void attn_block(int hd, int nq, const float *const *q, const int *n_keys, const float *k, const float *v,
                       size_t stride, float scale, float cap, int j0, attn_state *st) {
    const float *kb = k + (size_t)j0 * stride, *vb = v + (size_t)j0 * stride;
    int nb[INF__LLM_ATTN_MULTI], top = 0;
    __m512 m[INF__LLM_ATTN_MULTI], lsum[INF__LLM_ATTN_MULTI];
    for (int i = 0; i < nq; i++) {
        int r = n_keys[i] - j0;
        nb[i] = r <= 0 ? 0 : r < KEY_BLOCK ? r : KEY_BLOCK;
        top = nb[i] > top ? nb[i] : top;
        m[i] = _mm512_set1_ps(-INFINITY);
        lsum[i] = _mm512_setzero_ps();
    }
    for (int u = 0; u < top; u += 16)
        for (int i = 0; i < nq; i++) {
            if (u >= nb[i]) continue;
            __m512 sc = scores16(hd, q[i], kb, stride, u, nb[i], scale, cap);
            _mm512_store_ps(st->s[i] + u, sc);
            m[i] = _mm512_max_ps(m[i], sc);
        }
    __m512 vmx[INF__LLM_ATTN_MULTI];
    for (int i = 0; i < nq; i++) {
        if (!nb[i]) continue;
        float bmax = _mm512_reduce_max_ps(m[i]), mx = st->mx[i];
        float mnew = bmax > mx ? bmax : mx;
        if (mx != mnew) {
            float corr = expf(mx - mnew);
            for (int e = 0; e < hd; e += 16)
                _mm512_store_ps(st->acc[i] + e, _mm512_mul_ps(_mm512_load_ps(st->acc[i] + e), _mm512_set1_ps(corr)));
            st->l[i] *= corr;
        }
        st->mx[i] = mnew;
        vmx[i] = _mm512_set1_ps(mnew);
    }
    for (int u = 0; u < top; u += 16) /* the padding's -inf gives 0 */
        for (int i = 0; i < nq; i++) {
            if (u >= nb[i]) continue;
            __m512 p = exp16(_mm512_sub_ps(_mm512_load_ps(st->s[i] + u), vmx[i]));
            lsum[i] = _mm512_add_ps(lsum[i], p);
            accum_head(hd, p, vb + (size_t)u * stride, stride, nb[i] - u < 16 ? nb[i] - u : 16, st->acc[i]);
        }
    for (int i = 0; i < nq; i++)
        if (nb[i]) st->l[i] += _mm512_reduce_add_ps(lsum[i]);
}

void inf__llm_attn_multi_avx512(int hd, int nq, const float *const *q, const int *n_keys, const float *k,
                                const float *v, size_t stride, float scale, float cap, float *const *o) {
    if (hd % 16 || hd > INF__LLM_MAX_HEAD_DIM) {
        for (int i = 0; i < nq; i++) inf__llm_attn_avx2(hd, q[i], k, v, stride, n_keys[i], scale, cap, o[i]);
        return;
    }
    for (int i0 = 0; i0 < nq; i0 += INF__LLM_ATTN_MULTI) {
        int n = nq - i0 < INF__LLM_ATTN_MULTI ? nq - i0 : INF__LLM_ATTN_MULTI, most = 0;
        attn_state st;
        for (int i = 0; i < n; i++) {
            for (int e = 0; e < hd; e += 16)
                _mm512_store_ps(st.acc[i] + e, _mm512_setzero_ps());
            st.mx[i] = -INFINITY;
            st.l[i] = 0;
            most = n_keys[i0 + i] > most ? n_keys[i0 + i] : most;
        }
        for (int j0 = 0; j0 < most; j0 += KEY_BLOCK)
            attn_block(hd, n, q + i0, n_keys + i0, k, v, stride, scale, cap, j0, &st);
        for (int i = 0; i < n; i++) {
            __m512 il = _mm512_set1_ps(1.0f / st.l[i]);
            for (int e = 0; e < hd; e += 16)
                _mm512_storeu_ps(o[i0 + i] + e, _mm512_mul_ps(_mm512_load_ps(st.acc[i] + e), il));
        }
    }
}

void inf__llm_attn_avx512(int hd, const float *q, const float *k, const float *v, size_t stride, int n_keys,
                          float scale, float cap, float *o) {
    inf__llm_attn_multi_avx512(hd, 1, &q, &n_keys, k, v, stride, scale, cap, &o);
}
