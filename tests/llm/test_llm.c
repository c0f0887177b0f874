/*
 * test_llm.c -- the decoder, KV cache, kernels, sampler and speculative
 * decoding on random llama models (llm_testmodel.h) in every supported type.
 *
 *  - kernels: every AVX2 row kernel (dot, dot4, activation quantizers)
 *    against its reference twin on random rows;
 *  - the forward pass with the fast kernels against the reference kernels;
 *  - KV cache: logits of token i decoded one at a time after the cached
 *    prefix equal those of recomputing the whole prefix in one pass, and a
 *    rewound cache gives the same logits as a fresh one;
 *  - threads: 1 and 2 threads give the same logits;
 *  - no allocation per decoded token (allocator counters);
 *  - greedy speculative decoding equals the target alone (draft = another
 *    random model, and the target itself), with sampling it is reproducible
 *    by seed and its first tokens follow the target's distribution;
 *  - malformed models (missing tensor, wrong shape, unsupported architecture
 *    or type) are refused with an error naming the tensor or key;
 *  - the weight region (weight_region.c): matrices copied into it give the
 *    logits, bit for bit, of the same matrices read from the mapping
 *    (INFERA_LLM_NO_HUGEPAGES=1), and every allocation failure while loading
 *    is refused cleanly, leaking nothing.
 * The oracle for real numbers is elsewhere (PyTorch logits of the committed
 * models, llama.cpp's tokens): this file checks the engine's invariants.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infera/llm.h"
#include "llm/attn.h"
#include "llm/llm_int.h"
#include "llm/swiglu.h"
#include "llm_testmodel.h"

#include "../check.h"

static const uint32_t types[] = {0, 1, 8, 2, 3};
static const char *type_names[] = {"f32", "f16", "q8_0", "q4_0", "q4_1"};

static tm_params params(uint32_t type, uint64_t seed) {
    tm_params p = {.vocab = 93,
                   .embd = 64,
                   .layers = 2,
                   .heads = 4,
                   .heads_kv = 2,
                   .ff = 128,
                   .ctx = 128,
                   .type = type,
                   .seed = seed}; /* 93: output rows not a multiple of 8 */
    return p;
}

static inf_llm_model *load(const tm_params *p, bool ref, uint8_t **keep) {
    size_t n;
    tm_build(p, keep, &n);
    inf__gguf *g;
    inf_llm_model *m = NULL;
    inf_error err;
    if (inf__gguf_open_buffer(*keep, n, "random.gguf", &g, &err) ||
        inf__llm_model_from_gguf(g, ref, &m, &err)) {
        fprintf(stderr, "load: %s\n", err.message);
        return NULL;
    }
    return m;
}

static float max_abs_diff(const float *a, const float *b, size_t n) {
    float m = 0;
    for (size_t i = 0; i < n; i++) m = fmaxf(m, fabsf(a[i] - b[i]));
    return m;
}
static float max_abs(const float *a, size_t n) {
    float m = 0;
    for (size_t i = 0; i < n; i++) m = fmaxf(m, fabsf(a[i]));
    return m;
}

/* ---- kernels ---- */

#if defined(__x86_64__) /* x86-64 only: the SIMD twins are built on x86 only (CMakeLists.txt) */
/* Every x86 twin, per ISA, in the order of types[]. */
typedef struct isa_set {
    const char *name;
    bool (*available)(void);
    inf__llm_dot_fn dot[5];
    inf__llm_dot4_fn dot4[5];
    inf__llm_from_float_fn q8_0, q8_1;
} isa_set;
static bool has_avx2(void) { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
static bool has_vnni(void) { return has_avx2() && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl"); }
static const isa_set isas[] = {
    {"avx2", has_avx2,
     {inf__llm_dot_f32_avx2, inf__llm_dot_f16_avx2, inf__llm_dot_q8_0_avx2, inf__llm_dot_q4_0_avx2, inf__llm_dot_q4_1_avx2},
     {NULL, NULL, inf__llm_dot4_q8_0_avx2, inf__llm_dot4_q4_0_avx2, inf__llm_dot4_q4_1_avx2},
     inf__llm_quantize_q8_0_avx2, inf__llm_quantize_q8_1_avx2},
    {"vnni", has_vnni,
     {inf__llm_dot_f32_zmm, inf__llm_dot_f16_zmm, inf__llm_dot_q8_0_vnni, inf__llm_dot_q4_0_vnni, inf__llm_dot_q4_1_vnni},
     {NULL, NULL, inf__llm_dot4_q8_0_vnni, inf__llm_dot4_q4_0_vnni, inf__llm_dot4_q4_1_vnni},
     inf__llm_quantize_q8_0_vnni, inf__llm_quantize_q8_1_vnni},
};

#endif
static void test_kernels(void) {
#if defined(__x86_64__)
    uint64_t s = 42;
    enum { K = 256 };
    float w[K], x[4][K];
    uint8_t wq[K * 4], xq[4][K * 4], xq_ref[K * 4];
    for (size_t is = 0; is < sizeof isas / sizeof isas[0]; is++) {
        const isa_set *I = &isas[is];
        if (!I->available()) {
            printf("kernels: %s not available on this CPU, skipped\n", I->name);
            continue;
        }
        int tested = 0;
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            const inf__llm_qtype *ref = inf__llm_qtype_get(types[ti], true);
            const inf__llm_qtype *aref = inf__llm_qtype_get(ref->act_type, true);
            inf__llm_from_float_fn conv = ref->act_type == INF__LLM_ACT_Q8_0   ? I->q8_0
                                          : ref->act_type == INF__LLM_ACT_Q8_1 ? I->q8_1
                                                                               : aref->from_float;
            for (int trial = 0; trial < 20; trial++) {
                for (int i = 0; i < K; i++) w[i] = tm_rand(&s) * (trial + 1);
                for (int r = 0; r < 4; r++)
                    for (int i = 0; i < K; i++) x[r][i] = tm_rand(&s) * 3;
                tm_quantize(types[ti], w, K, wq);
                size_t xs = inf__llm_row_bytes(aref, K);
                for (int r = 0; r < 4; r++) {
                    if (ref->act_type == INF__GGML_F32) memcpy(xq[r], x[r], K * 4);
                    else conv(x[r], xq[r], K);
                }
                if (aref->from_float) { /* activation converter == reference, byte for byte */
                    aref->from_float(x[0], xq_ref, K);
                    CHECK(!memcmp(xq[0], xq_ref, xs), "%s %s: activation converter differs from the reference",
                          I->name, type_names[ti]);
                }
                float scale = 0;
                for (int i = 0; i < K; i++) scale += fabsf(w[i] * x[0][i]);
                float want = ref->dot(K, wq, xq[0]), got = I->dot[ti](K, wq, xq[0]);
                CHECK(fabsf(got - want) <= 1e-5f * scale + 1e-6f, "%s %s dot: %g, reference %g", I->name,
                      type_names[ti], got, want);
                tested++;
                if (I->dot4[ti]) {
                    float o[4];
                    uint8_t packed[4 * K * 4];
                    for (int r = 0; r < 4; r++) memcpy(packed + r * xs, xq[r], xs);
                    I->dot4[ti](K, wq, packed, xs, o);
                    for (int r = 0; r < 4; r++) {
                        float wr = ref->dot(K, wq, packed + r * xs);
                        CHECK(fabsf(o[r] - wr) <= 1e-5f * scale * 4 + 1e-5f, "%s %s dot4 row %d: %g, reference %g",
                              I->name, type_names[ti], r, o[r], wr);
                    }
                }
            }
        }
        /* eight-row kernels: every (row, token) bit for bit its one-row twin, near the reference */
        static const uint32_t q_types[3] = {8, 2, 3};
        inf__llm_gemm8_fn g8[2][3] = {{inf__llm_gemm8_q8_0_avx2, inf__llm_gemm8_q4_0_avx2, inf__llm_gemm8_q4_1_avx2},
                                      {inf__llm_gemm8_q8_0_vnni, inf__llm_gemm8_q4_0_vnni, inf__llm_gemm8_q4_1_vnni}};
        inf__llm_dot_fn rx[2][3] = {{inf__llm_rowx_q8_0_avx2, inf__llm_rowx_q4_0_avx2, inf__llm_rowx_q4_1_avx2},
                                    {inf__llm_rowx_q8_0_vnni, inf__llm_rowx_q4_0_vnni, inf__llm_rowx_q4_1_vnni}};
        for (int qt = 0; qt < 3; qt++) {
            const inf__llm_qtype *ref = inf__llm_qtype_get(q_types[qt], true);
            const inf__llm_qtype *aref = inf__llm_qtype_get(ref->act_type, true);
            size_t rb = inf__llm_row_bytes(ref, K), xs = inf__llm_row_bytes(aref, K);
            static uint8_t W[8 * K * 4], X[INF__LLM_GEMM_TOKENS * K * 4];
            float row[K];
            for (int r = 0; r < 8; r++) {
                for (int i = 0; i < K; i++) row[i] = tm_rand(&s) * (r + 1);
                tm_quantize(q_types[qt], row, K, W + r * rb);
            }
            for (int t = 0; t < INF__LLM_GEMM_TOKENS; t++) {
                for (int i = 0; i < K; i++) row[i] = tm_rand(&s) * 2;
                (qt == 2 ? I->q8_1 : I->q8_0)(row, X + t * xs, K);
            }
            for (int n = 1; n <= INF__LLM_GEMM_TOKENS; n++) {
                float o[8 * INF__LLM_GEMM_TOKENS];
                g8[is][qt](K, W, rb, X, xs, n, o);
                int exact = 1;
                float worst = 0;
                for (int t = 0; t < n; t++)
                    for (int r = 0; r < 8; r++) {
                        float one = rx[is][qt](K, W + r * rb, X + t * xs), want = ref->dot(K, W + r * rb, X + t * xs);
                        exact &= memcmp(&one, &o[8 * t + r], 4) == 0;
                        worst = fmaxf(worst, fabsf(one - want) / (fabsf(want) + 1));
                    }
                CHECK(exact, "%s %s gemm8 (n=%d) differs from its one-row twin", I->name, type_names[qt + 2], n);
                CHECK(worst < 1e-4f, "%s %s one-row twin vs reference: %g", I->name, type_names[qt + 2], worst);
            }
        }
        /* 16-row tiles (q8_0 and q4_0; VNNI and AVX2): every (row, token) bit for bit the one-row twin */
        inf__llm_pack_fn tpack[2][2] = {{inf__llm_pack_q8_0_avx2, inf__llm_pack_q4_0_avx2},
                                        {inf__llm_pack_q8_0_vnni, inf__llm_pack_q4_0_vnni}};
        inf__llm_tile_fn tmul[2][2] = {{inf__llm_tile_q8_0_avx2, inf__llm_tile_q4_0_avx2},
                                       {inf__llm_tile_q8_0_vnni, inf__llm_tile_q4_0_vnni}};
        for (int qt = 0; qt < 2; qt++) {
            const inf__llm_qtype *ref = inf__llm_qtype_get(q_types[qt], true);
            const inf__llm_qtype *aref = inf__llm_qtype_get(ref->act_type, true);
            size_t rb = inf__llm_row_bytes(ref, K), xs = inf__llm_row_bytes(aref, K);
            static uint8_t W[16 * K * 4], X[INF__LLM_TILE_TOKENS * K * 4], T[16 * K * 4];
            float row[K];
            for (int r = 0; r < 16; r++) {
                for (int i = 0; i < K; i++) row[i] = tm_rand(&s) * (r + 1);
                if (r == 3) for (int i = 0; i < K; i++) row[i] = 0; /* a zero row */
                tm_quantize(q_types[qt], row, K, W + r * rb);
            }
            for (int t = 0; t < INF__LLM_TILE_TOKENS; t++) {
                for (int i = 0; i < K; i++) row[i] = tm_rand(&s) * 2;
                if (t == 2) for (int i = 0; i < K; i++) row[i] = 0; /* a zero activation row */
                I->q8_0(row, X + t * xs, K);
            }
            tpack[is][qt](W, rb, K, T);
            for (int n = 1; n <= INF__LLM_TILE_TOKENS; n++) {
                float o[16 * INF__LLM_TILE_TOKENS];
                tmul[is][qt](K, T, X, xs, n, o);
                int exact = 1;
                for (int t = 0; t < n; t++)
                    for (int r = 0; r < 16; r++) {
                        float one = rx[is][qt](K, W + r * rb, X + t * xs);
                        exact &= memcmp(&one, &o[16 * t + r], 4) == 0;
                    }
                CHECK(exact, "%s %s tile (n=%d) differs from its one-row twin", I->name, type_names[qt + 2], n);
                if (is != 1) continue;
                /* the multi-tile kernel (VNNI): the tile twice in a row, into a strided output, stored then added */
                inf__llm_tiles_fn tiles = qt == 0 ? inf__llm_tiles_q8_0_vnni : inf__llm_tiles_q4_0_vnni;
                enum { LDY = 40 };
                float y[LDY * INF__LLM_TILE_TOKENS];
                size_t tb = (size_t)(K / 32) * (qt == 0 ? 32 + 16 * 32 : 32 + 16 * 16);
                memcpy(T + tb, T, tb);
                for (int add = 0; add < 2; add++) {
                    for (int i = 0; i < LDY * INF__LLM_TILE_TOKENS; i++)
                        y[i] = add ? 0.5f * (float)i : -1.0f;
                    tiles(K, T, tb, 2, X, xs, n, y, LDY, add);
                    exact = 1;
                    for (int t = 0; t < n; t++)
                        for (int r = 0; r < 32; r++) {
                            float want = o[16 * t + r % 16];
                            if (add) want = 0.5f * (float)(t * LDY + r) + want;
                            exact &= memcmp(&want, &y[t * LDY + r], 4) == 0;
                        }
                    for (int t = 0; t < n; t++)
                        exact &= y[t * LDY + 32] == (add ? 0.5f * (float)(t * LDY + 32) : -1.0f);
                    CHECK(exact, "%s %s tiles (n=%d, add %d) differ from the tile kernel", I->name, type_names[qt + 2],
                          n, add);
                }
            }
        }
        printf("kernels: %s: %d row products checked against the reference\n", I->name, tested);
    }
#else
    printf("kernels: no SIMD twins of the LLM row kernels on this architecture, skipped\n");
#endif
    printf("kernels: the engine uses %s\n", inf__llm_kernel_isa());
}

/* q5_0, q5_1, q4_K, q6_K rows of random bytes with finite random scales. */
static __attribute__((unused)) void random_rows(uint32_t type, int rows, int64_t k, uint8_t *dst, uint64_t *s) {
    const inf__llm_qtype *q = inf__llm_qtype_get(type, true);
    size_t rb = inf__llm_row_bytes(q, k);
    for (size_t i = 0; i < rb * (size_t)rows; i++) dst[i] = (uint8_t)(tm_rand(s) * 1e6);
    for (size_t b = 0; b < rb * (size_t)rows / q->size; b++) {
        uint8_t *blk = dst + b * q->size;
        uint16_t d = inf__llm_fp32_to_fp16(tm_rand(s) * 0.01f), m = inf__llm_fp32_to_fp16(tm_rand(s) * 0.01f);
        size_t d_at = type == INF__GGML_Q6_K ? 208 : 0; /* q6_K: d last; others: d first, then m / dmin */
        memcpy(blk + d_at, &d, 2);
        if (type == INF__GGML_Q5_1 || type == INF__GGML_Q4_1 || type == INF__GGML_Q4_K) memcpy(blk + 2, &m, 2);
    }
}

/* The types added with the K-quants: q5_0/q5_1 eight-row kernels bit for bit
 * their one-row twins and near the reference; q4_K/q6_K fast == reference bit
 * for bit (same integers, same fmaf sequence); q8_K activations as ggml's. */
static void test_kernels_k(void) {
#if defined(__x86_64__) /* the SIMD twins are built on x86 only (CMakeLists.txt) */
    uint64_t s = 99;
    enum { K = 512 };
    static uint8_t W[8 * K * 2], X[INF__LLM_GEMM_TOKENS * K * 2];
    float row[K];
    const char *isa = inf__llm_kernel_isa();
    if (!strcmp(isa, "reference")) {
        printf("kernels: no fast kernels on this CPU, q5/K twins skipped\n");
        return;
    }
    int vnni = !strcmp(isa, "vnni");
    static const uint32_t q5[2] = {INF__GGML_Q5_0, INF__GGML_Q5_1};
    inf__llm_gemm8_fn g8[2][2] = {{inf__llm_gemm8_q5_0_avx2, inf__llm_gemm8_q5_1_avx2},
                                  {inf__llm_gemm8_q5_0_vnni, inf__llm_gemm8_q5_1_vnni}};
    inf__llm_dot_fn rx[2][2] = {{inf__llm_rowx_q5_0_avx2, inf__llm_rowx_q5_1_avx2},
                                {inf__llm_rowx_q5_0_vnni, inf__llm_rowx_q5_1_vnni}};
    for (int is = 0; is <= vnni; is++)
        for (int qt = 0; qt < 2; qt++) {
            const inf__llm_qtype *ref = inf__llm_qtype_get(q5[qt], true);
            const inf__llm_qtype *aref = inf__llm_qtype_get(ref->act_type, true);
            size_t rb = inf__llm_row_bytes(ref, K), xs = inf__llm_row_bytes(aref, K);
            random_rows(q5[qt], 8, K, W, &s);
            for (int t = 0; t < INF__LLM_GEMM_TOKENS; t++) {
                for (int i = 0; i < K; i++) row[i] = tm_rand(&s) * 2;
                aref->from_float(row, X + t * xs, K);
            }
            for (int n = 1; n <= INF__LLM_GEMM_TOKENS; n += 3) {
                float o[8 * INF__LLM_GEMM_TOKENS];
                g8[is][qt](K, W, rb, X, xs, n, o);
                int exact = 1;
                float worst = 0;
                for (int t = 0; t < n; t++)
                    for (int r = 0; r < 8; r++) {
                        float one = rx[is][qt](K, W + r * rb, X + t * xs), want = ref->dot(K, W + r * rb, X + t * xs);
                        exact &= memcmp(&one, &o[8 * t + r], 4) == 0;
                        worst = fmaxf(worst, fabsf(one - want) / (fabsf(want) + 1));
                    }
                CHECK(exact, "%s %s gemm8 (n=%d) differs from its one-row twin", is ? "vnni" : "avx2", ref->name, n);
                CHECK(worst < 1e-4f, "%s %s one-row twin vs reference: %g", is ? "vnni" : "avx2", ref->name, worst);
            }
        }
    /* q5_0 and q4_1 in AVX2 16-row tiles (random bytes: every fifth-bit pattern, any minimum): bit for bit the
     * one-row twin */
    static const struct {
        uint32_t type;
        inf__llm_pack_fn pack;
        inf__llm_tile_fn tile;
        inf__llm_dot_fn rowx;
    } tiled[] = {{INF__GGML_Q5_0, inf__llm_pack_q5_0_avx2, inf__llm_tile_q5_0_avx2, inf__llm_rowx_q5_0_avx2},
                 {INF__GGML_Q4_1, inf__llm_pack_q4_1_avx2, inf__llm_tile_q4_1_avx2, inf__llm_rowx_q4_1_avx2}};
    for (size_t ti = 0; ti < sizeof tiled / sizeof tiled[0]; ti++) {
        static uint8_t W16[16 * K * 2], T[16 * K * 2];
        const inf__llm_qtype *ref = inf__llm_qtype_get(tiled[ti].type, true);
        const inf__llm_qtype *aref = inf__llm_qtype_get(ref->act_type, true);
        size_t rb = inf__llm_row_bytes(ref, K), xs = inf__llm_row_bytes(aref, K);
        random_rows(tiled[ti].type, 16, K, W16, &s);
        for (int t = 0; t < INF__LLM_TILE_TOKENS; t++) {
            for (int i = 0; i < K; i++) row[i] = tm_rand(&s) * 2;
            aref->from_float(row, X + t * xs, K);
        }
        tiled[ti].pack(W16, rb, K, T);
        for (int n = 1; n <= INF__LLM_TILE_TOKENS; n++) {
            float o[16 * INF__LLM_TILE_TOKENS];
            tiled[ti].tile(K, T, X, xs, n, o);
            int exact = 1;
            float worst = 0;
            for (int t = 0; t < n; t++)
                for (int r = 0; r < 16; r++) {
                    float one = tiled[ti].rowx(K, W16 + r * rb, X + t * xs), want = ref->dot(K, W16 + r * rb, X + t * xs);
                    exact &= memcmp(&one, &o[16 * t + r], 4) == 0;
                    worst = fmaxf(worst, fabsf(o[16 * t + r] - want) / (fabsf(want) + 1));
                }
            CHECK(exact, "avx2 %s tile (n=%d) differs from its one-row twin", ref->name, n);
            CHECK(worst < 1e-4f, "avx2 %s tile (n=%d) vs the reference: %g", ref->name, n, worst);
        }
    }
    static const uint32_t kt[2] = {INF__GGML_Q4_K, INF__GGML_Q6_K};
    inf__llm_dot_fn kd[2][2] = {{inf__llm_dot_q4_K_avx2, inf__llm_dot_q6_K_avx2},
                                {inf__llm_dot_q4_K_vnni, inf__llm_dot_q6_K_vnni}};
    for (int qt = 0; qt < 2; qt++) {
        const inf__llm_qtype *ref = inf__llm_qtype_get(kt[qt], true);
        const inf__llm_qtype *aref = inf__llm_qtype_get(ref->act_type, true);
        CHECK(aref && aref->from_float, "%s: q8_K activations", ref->name);
        for (int trial = 0; trial < 20; trial++) {
            random_rows(kt[qt], 1, K, W, &s);
            for (int i = 0; i < K; i++) row[i] = tm_rand(&s) * (trial + 1);
            if (trial == 3) memset(row, 0, sizeof row);
            aref->from_float(row, X, K);
            const inf__blk_q8_Ka *xb = (const inf__blk_q8_Ka *)X;
            int sums_ok = 1, range_ok = 1;
            for (int b = 0; b < K / QK_K; b++)
                for (int j = 0; j < 16; j++) {
                    int sum = 0;
                    for (int e = 0; e < 16; e++) {
                        sum += xb[b].qs[16 * j + e];
                        range_ok &= xb[b].qs[16 * j + e] >= -127;
                    }
                    sums_ok &= sum == xb[b].bsums[j];
                }
            CHECK(sums_ok && range_ok, "q8_K activations: 16-element sums / range");
            float want = ref->dot(K, W, X);
            for (int is = 0; is <= vnni; is++) {
                float got = kd[is][qt](K, W, X);
                CHECK(!memcmp(&got, &want, 4), "%s %s dot: %.9g, reference %.9g", is ? "vnni" : "avx2", ref->name, got,
                      want);
            }
            /* four activation rows at once: bit for bit the reference per row */
            if (trial < 5) {
                inf__llm_dot4_fn k4[2][2] = {{inf__llm_dot4_q4_K_avx2, inf__llm_dot4_q6_K_avx2},
                                             {inf__llm_dot4_q4_K_vnni, inf__llm_dot4_q6_K_vnni}};
                size_t xs = inf__llm_row_bytes(aref, K);
                for (int t = 1; t < 4; t++) {
                    for (int i = 0; i < K; i++) row[i] = tm_rand(&s) * (t + 1);
                    aref->from_float(row, X + t * xs, K);
                }
                for (int is = 0; is <= vnni; is++) {
                    float o4[4];
                    k4[is][qt](K, W, X, xs, o4);
                    int exact = 1;
                    for (int t = 0; t < 4; t++) {
                        float w1 = ref->dot(K, W, X + t * xs);
                        exact &= !memcmp(&w1, &o4[t], 4);
                    }
                    CHECK(exact, "%s %s dot4 differs from the reference", is ? "vnni" : "avx2", ref->name);
                }
            }
            /* against the dequantized row in double (the activation's own rounding aside) */
            float wf[K], xf[K];
            ref->to_float(W, wf, K);
            double exact = 0, mag = 0;
            for (int b = 0; b < K / QK_K; b++)
                for (int e = 0; e < QK_K; e++) xf[b * QK_K + e] = xb[b].d * xb[b].qs[e];
            for (int i = 0; i < K; i++) exact += (double)wf[i] * xf[i], mag += fabs((double)wf[i] * xf[i]);
            CHECK(fabs(want - exact) <= 1e-4 * mag + 1e-6, "%s dot %g vs dequantized %g", ref->name, want, exact);
        }
    }
    printf("kernels: q5_0, q5_1, q4_K, q6_K twins checked\n");
#else
    printf("kernels: the q5/K SIMD twins are x86-64 kernels, skipped here\n");
#endif
}

#if defined(__x86_64__)
/* f32/f16 tiles (AVX2: 4 rows x 8 tokens, f32_tile_avx2.c; AVX-512: 6 x 4,
 * and its short-pass kernel, rows streamed two at a time against 1-6 tokens):
 * every (row, token) of every tile shape bit for bit the one-row kernel of
 * the same ISA (so verifying K+1 tokens in one pass picks what decoding them
 * one by one picks), and that one near the double-precision reference. */
typedef struct float_isa {
    const char *name;
    bool vnni; /* available only where inf__llm_kernel_isa() says "vnni" */
    int rows, tokens, row_tokens; /* row_tokens: tokens of a call in a pass of a few tokens */
    inf__llm_dot_fn dot[2];       /* f32, f16 */
    inf__llm_fblock_fn block[2];
    inf__llm_fblock_fn small[2]; /* a short pass's kernel (NULL: block) */
} float_isa;

static void check_float_tile(const float_isa *F, int ft, int k, uint64_t *s) {
    enum { KMAX = 576, TMAX = 8, RMAX = 6 };
    static uint8_t W[RMAX * KMAX * 4], X[TMAX * KMAX * 4];
    float row[KMAX];
    const inf__llm_qtype *ref = inf__llm_qtype_get(ft ? INF__GGML_F16 : INF__GGML_F32, true);
    size_t rb = inf__llm_row_bytes(ref, k);
    int nx = F->row_tokens > F->tokens ? F->row_tokens : F->tokens;
    for (int r = 0; r < F->rows + nx; r++) {
        uint8_t *dst = r < F->rows ? W + r * rb : X + (r - F->rows) * rb;
        for (int i = 0; i < k; i++) row[i] = tm_rand(s) * (r < F->rows ? 1 : 3);
        if (ft) ref->from_float(row, dst, k);
        else memcpy(dst, row, rb);
    }
    for (int kind = 0; kind < (F->small[ft] ? 2 : 1); kind++)
        for (int nr = 1; nr <= F->rows; nr++)
            for (int nt = 1; nt <= F->row_tokens; nt++) {
                float o[INF__LLM_FBLOCK_MAX];
                (kind ? F->small : F->block)[ft](k, W, rb, nr, X, rb, nt, o);
                int exact = 1;
                float worst = 0;
                for (int t = 0; t < nt; t++)
                    for (int r = 0; r < nr; r++) {
                        float one = F->dot[ft](k, W + r * rb, X + t * rb);
                        exact &= !memcmp(&one, &o[F->rows * t + r], 4);
                        worst = fmaxf(worst, fabsf(one - ref->dot(k, W + r * rb, X + t * rb)));
                    }
                CHECK(exact, "%s %s %s (%d x %d, k %d) differs from the row kernel", F->name, ref->name,
                      kind ? "short-pass kernel" : "tile", nr, nt, k);
                CHECK(worst < 1e-3f, "%s %s row kernel vs reference: %g (k %d)", F->name, ref->name, worst, k);
            }
}

#endif

static void test_kernels_float(void) {
#if defined(__x86_64__)
    static const float_isa isas_f[] = {
        {"avx2",
         false,
         4,
         8,
         8,
         {inf__llm_dot_f32_avx2, inf__llm_dot_f16_avx2},
         {inf__llm_tile_f32_avx2, inf__llm_tile_f16_avx2},
         {NULL, NULL}},
        {"zmm",
         true,
         6,
         4,
         6,
         {inf__llm_dot_f32_zmm, inf__llm_dot_f16_zmm},
         {inf__llm_block_f32_zmm, inf__llm_block_f16_zmm},
         {inf__llm_small_f32_zmm, inf__llm_small_f16_zmm}},
    };
    /* whole 16s (even and odd counts, a short last segment, one chunk), an odd 8, tails, shorter than a chunk */
    static const int ks[] = {512, 256, 560, 200, 48, 16, 72, 40, 43, 8, 5};
    const char *isa = inf__llm_kernel_isa();
    uint64_t s = 7;
    for (size_t is = 0; is < sizeof isas_f / sizeof isas_f[0]; is++) {
        const float_isa *F = &isas_f[is];
        if (!strcmp(isa, "reference") || (F->vnni && strcmp(isa, "vnni"))) {
            printf("kernels: %s f32/f16 tiles not available on this CPU, skipped\n", F->name);
            continue;
        }
        for (int ft = 0; ft < 2; ft++)
            for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) check_float_tile(F, ft, ks[ki], &s);
        printf("kernels: %s f32/f16 tiles checked\n", F->name);
    }
    /* what the table hands out: the tile and the row kernel of one ISA */
    const inf__llm_qtype *f32 = inf__llm_qtype_get(INF__GGML_F32, false);
    if (strcmp(isa, "reference"))
        CHECK(f32->fblock && f32->fblock_rows * f32->fblock_tokens <= INF__LLM_FBLOCK_MAX &&
                  f32->fblock_rows * f32->fblock_row_tokens <= INF__LLM_FBLOCK_MAX &&
                  f32->fblock_row_tokens >= f32->fblock_tokens &&
                  (f32->fblock == inf__llm_tile_f32_avx2) == (f32->dot == inf__llm_dot_f32_avx2) &&
                  (f32->fblock_small == NULL) == (f32->fblock == inf__llm_tile_f32_avx2),
              "f32 kernels of the table: tile %d x %d", f32->fblock_rows, f32->fblock_tokens);
#endif
}

/* ---- forward pass ---- */

static int32_t tokens[64];

static void test_forward(uint32_t type, const char *tn) {
    tm_params p = params(type, 7);
    uint8_t *b1, *b2;
    inf_llm_model *m = load(&p, false, &b1), *mr = load(&p, true, &b2);
    CHECK(m && mr, "%s: load", tn);
    if (!m || !mr) return;
    int V = p.vocab, N = 24;
    inf_llm_context *c, *cr, *c2;
    inf_llm_context_options o;
    inf_llm_context_options_init(&o);
    o.n_logits = 32;
    o.n_batch = 32;
    inf_error err;
    CHECK(inf_llm_context_new(m, &o, &c, &err) == INF_OK, "%s", err.message);
    CHECK(inf_llm_context_new(mr, &o, &cr, &err) == INF_OK, "%s", err.message);
    o.n_threads = 2;
    o.n_batch = 8; /* the prompt split into passes of 8 */
    CHECK(inf_llm_context_new(m, &o, &c2, &err) == INF_OK, "%s", err.message);
    /* all logits of N tokens in one pass, fast vs reference kernels */
    float *all = malloc(sizeof(float) * N * V), *allr = malloc(sizeof(float) * N * V), *one = malloc(sizeof(float) * V);
    const float *l;
    CHECK(inf_llm_context_eval(c, tokens, N, true, &l, &err) == INF_OK, "%s", err.message);
    memcpy(all, l, sizeof(float) * N * V);
    CHECK(inf_llm_context_eval(cr, tokens, N, true, &l, &err) == INF_OK, "%s", err.message);
    memcpy(allr, l, sizeof(float) * N * V);
    float mag = max_abs(allr, (size_t)N * V), d = max_abs_diff(all, allr, (size_t)N * V);
    /* activations are rounded to 8 bits before q8_0/q4 products: a last-bit
     * difference of the float sums can move one rounding step (1/127 of a
     * block's range), so quantized types get a looser bound */
    float tol = type <= 1 ? 1e-3f : 2e-2f;
    CHECK(mag > 0.5f && d <= tol * mag, "%s: fast vs reference kernels: max diff %g (logits up to %g)", tn, d, mag);
    /* KV cache: token i decoded alone after the cached prefix == row i of the full pass */
    float worst = 0;
    inf_llm_context_rewind(c, 0, NULL);
    for (int i = 0; i < N; i++) {
        CHECK(inf_llm_context_eval(c, &tokens[i], 1, false, &l, &err) == INF_OK, "%s", err.message);
        worst = fmaxf(worst, max_abs_diff(l, all + (size_t)i * V, V));
    }
    /* exact: the kernels of a batch sum in the order of a single token's, so
     * greedy speculative decoding (batched verification) is the target's own */
    CHECK(worst == 0, "%s: cached decoding vs whole-prefix recompute: max diff %g", tn, worst);
    /* recompute each prefix from scratch in a fresh pass (2 threads, passes of 8) */
    worst = 0;
    for (int i = 1; i <= N; i += 5) {
        inf_llm_context_rewind(c2, 0, NULL);
        CHECK(inf_llm_context_eval(c2, tokens, i, false, &l, &err) == INF_OK, "%s", err.message);
        worst = fmaxf(worst, max_abs_diff(l, all + (size_t)(i - 1) * V, V));
    }
    CHECK(worst == 0, "%s: prefix recompute with 2 threads, passes of 8: max diff %g", tn, worst);
    /* one pass of N > 8 tokens on 2 threads (the per-token steps split over the pool too) */
    inf_llm_context *c3;
    o.n_batch = 32;
    CHECK(inf_llm_context_new(m, &o, &c3, &err) == INF_OK, "%s", err.message);
    CHECK(inf_llm_context_eval(c3, tokens, N, true, &l, &err) == INF_OK, "%s", err.message);
    CHECK(max_abs_diff(l, all, (size_t)N * V) == 0, "%s: %d tokens in one pass on 2 threads vs 1: max diff %g", tn, N,
          max_abs_diff(l, all, (size_t)N * V));
    inf_llm_context_free(c3);
    /* rewind then re-evaluate gives the same logits */
    inf_llm_context_rewind(c, 10, NULL);
    CHECK(inf_llm_context_eval(c, &tokens[10], 1, false, &l, &err) == INF_OK, "%s", err.message);
    CHECK(max_abs_diff(l, all + 10 * V, V) == 0, "%s: rewind", tn);
    /* no allocation per token once warm */
    inf_alloc_stats a0, a1;
    inf_alloc_get_stats(&a0);
    for (int i = 11; i < 20; i++) inf_llm_context_eval(c2, &tokens[i], 1, false, &l, &err);
    inf_alloc_get_stats(&a1);
    CHECK(a1.n_allocs == a0.n_allocs, "%s: %llu allocations in 9 decode steps", tn,
          (unsigned long long)(a1.n_allocs - a0.n_allocs));
    /* errors: out-of-vocabulary token, full context */
    int32_t bad = V;
    CHECK(inf_llm_context_eval(c, &bad, 1, false, &l, &err) == INF_ERANGE && strstr(err.message, "vocabulary"), "%s",
          err.message);
    free(all), free(allr), free(one);
    inf_llm_context_free(c), inf_llm_context_free(cr), inf_llm_context_free(c2);
    inf_llm_model_free(m), inf_llm_model_free(mr);
    free(b1), free(b2);
}

/* ---- other architectures ---- */

/* All N logits rows of tokens[0..N) in one pass of a fresh context (n_threads threads, passes of n_batch). */
static float *all_logits(inf_llm_model *m, int N, int threads, int n_batch) {
    inf_llm_context_options o;
    inf_llm_context_options_init(&o);
    o.n_logits = o.n_batch = n_batch;
    o.n_threads = threads;
    inf_llm_context *c;
    inf_error err;
    const float *l;
    int V = inf_llm_model_get_info(m)->n_vocab;
    float *out = malloc(sizeof(float) * (size_t)N * V);
    if (!out || inf_llm_context_new(m, &o, &c, &err)) return free(out), NULL;
    for (int done = 0; done < N; done += n_batch) {
        int k = N - done < n_batch ? N - done : n_batch;
        if (inf_llm_context_eval(c, tokens + done, k, true, &l, &err)) {
            fprintf(stderr, "all_logits: %s\n", err.message);
            inf_llm_context_free(c);
            return free(out), NULL;
        }
        memcpy(out + (size_t)done * V, l, sizeof(float) * (size_t)k * V);
    }
    inf_llm_context_free(c);
    return out;
}

/* Decoded one token at a time (decoding, the grouped attention path) == the rows of one pass, bit for bit, and
 * 2 threads in passes of 8 == 1 thread. */
static void check_passes_agree(inf_llm_model *m, int N, const char *what) {
    int V = inf_llm_model_get_info(m)->n_vocab;
    float *whole = all_logits(m, N, 1, 32), *split = all_logits(m, N, 2, 8), *ones = all_logits(m, N, 1, 1);
    CHECK(whole && split && ones, "%s: evaluated", what);
    if (whole && split && ones) {
        CHECK(max_abs(whole, (size_t)N * V) > 0.1f, "%s: logits not all ~0", what);
        CHECK(!memcmp(whole, ones, sizeof(float) * (size_t)N * V), "%s: decoded one by one == one pass: max diff %g",
              what, max_abs_diff(whole, ones, (size_t)N * V));
        CHECK(!memcmp(whole, split, sizeof(float) * (size_t)N * V),
              "%s: 2 threads in passes of 8 == 1 thread: max diff %g", what, max_abs_diff(whole, split, (size_t)N * V));
    }
    free(whole), free(split), free(ones);
}

static void test_batch_of(const tm_params *pp, const char *tn); /* below, with the batching tests */

static void test_architectures(void) {
    uint8_t *b1, *b2;
    int N = 24;
    /* phi3's fused attn_qkv / ffn_up are read as views of their rows: the same logits, bit for bit, as qwen2 (the
     * same NeoX RoPE, no biases) with the rows in separate matrices */
    for (int t = 0; t < 3; t++) {
        tm_params p = params(types[t == 2 ? 3 : t], 31);
        p.arch = "qwen2";
        inf_llm_model *sep = load(&p, false, &b1);
        p.arch = "phi3", p.fused = 1;
        inf_llm_model *fused = load(&p, false, &b2);
        CHECK(sep && fused, "phi3 / qwen2 %s: load", type_names[t == 2 ? 3 : t]);
        if (sep && fused) {
            float *a = all_logits(sep, N, 1, 32), *b = all_logits(fused, N, 1, 32);
            int V = p.vocab;
            CHECK(a && b && !memcmp(a, b, sizeof(float) * (size_t)N * V),
                  "phi3 fused qkv and gate|up == qwen2 separate (%s): max diff %g", type_names[t == 2 ? 3 : t],
                  a && b ? max_abs_diff(a, b, (size_t)N * V) : -1.0f);
            free(a), free(b);
        }
        inf_llm_model_free(sep), inf_llm_model_free(fused);
        free(b1), free(b2);
    }
    /* gemma3 (q/k head norms, post-norms, layers 0 and 2 sliding over 5 positions) and gemma2 (soft-capped scores
     * and logits, every other layer sliding): decoding, threads and pass splits agree; logits within the final cap */
    tm_params g3 = params(8, 37);
    g3.layers = 4, g3.arch = "gemma3", g3.head_norms = 1, g3.post_norms = 1, g3.swa_window = 5, g3.swa_pattern = 2;
    tm_params g2 = params(0, 41);
    g2.layers = 3, g2.arch = "gemma2", g2.post_norms = 1, g2.swa_window = 6, g2.swa_pattern = 2;
    g2.attn_softcap = 2.0f, g2.final_softcap = 3.0f;
    const tm_params *gs[2] = {&g3, &g2};
    for (int i = 0; i < 2; i++) {
        inf_llm_model *m = load(gs[i], false, &b1);
        CHECK(m != NULL, "%s: load", gs[i]->arch);
        if (m) {
            check_passes_agree(m, N, gs[i]->arch);
            float *l = all_logits(m, N, 1, 32);
            if (l && gs[i]->final_softcap > 0)
                CHECK(max_abs(l, (size_t)N * gs[i]->vocab) < gs[i]->final_softcap, "%s: logits within the final cap",
                      gs[i]->arch);
            free(l);
        }
        inf_llm_model_free(m);
        free(b1);
    }
    /* continuous batching on sliding-window layers (a batched step's tokens at their own window starts) and
     * soft-capped scores: every batched row == the same token decoded alone */
    test_batch_of(&g3, "gemma3 batched");
    test_batch_of(&g2, "gemma2 batched");
    /* the window: a one-layer gemma3 whose only layer slides over W positions sees, at position p, only tokens
     * p - W + 1 .. p, so its logits there equal the last row of a fresh pass over just those W tokens (RoPE is
     * relative: equal up to rounding) */
    tm_params w1 = params(0, 43);
    int W = 4;
    w1.layers = 1, w1.arch = "gemma3", w1.swa_window = W, w1.swa_pattern = 0; /* pattern 0: every layer slides */
    inf_llm_model *m = load(&w1, false, &b1);
    CHECK(m != NULL, "gemma3 window: load");
    if (m) {
        int V = w1.vocab;
        float *full = all_logits(m, N, 1, 32), worst = 0, mag = 0;
        inf_llm_context *c;
        inf_error err;
        inf_llm_context_options o;
        inf_llm_context_options_init(&o);
        CHECK(full && inf_llm_context_new(m, &o, &c, &err) == INF_OK, "gemma3 window: context");
        for (int p = W; p < N && full; p++) {
            const float *l;
            inf_llm_context_rewind(c, 0, NULL);
            CHECK(inf_llm_context_eval(c, tokens + p - W + 1, W, false, &l, &err) == INF_OK, "%s", err.message);
            worst = fmaxf(worst, max_abs_diff(l, full + (size_t)p * V, V));
            mag = fmaxf(mag, max_abs(l, V));
        }
        CHECK(mag > 0.1f && worst <= 1e-4f * mag,
              "gemma3 window of %d: position p == the last %d tokens alone: max "
              "diff %g (logits up to %g)",
              W, W, worst, mag);
        free(full);
        inf_llm_context_free(c);
    }
    inf_llm_model_free(m);
    free(b1);
}

/* ---- batched decoding of several sequences (continuous batching) ---- */

/* NS sequences with prompts of different lengths decode in batched steps
 * whose membership changes every step (sequences join and leave); every
 * batched row must equal, bit for bit, the same token decoded alone on a
 * context of its own (the oracle: plain single-sequence decoding, itself
 * checked against whole-prefix recomputation above and PyTorch/llama.cpp in
 * llm_reference). */
#define NS 5
static void test_batch_of(const tm_params *pp, const char *tn) {
    tm_params p = *pp;
    uint32_t type = p.type;
    uint8_t *buf;
    inf_llm_model *m = load(&p, false, &buf);
    CHECK(m != NULL, "%s: load", tn);
    if (!m) return;
    int V = p.vocab;
    inf_llm_context *seq[NS], *alone[NS], *batch = NULL;
    inf_llm_context_options o;
    inf_llm_context_options_init(&o);
    o.n_ctx = 64;
    inf_error err;
    for (int i = 0; i < NS; i++) {
        CHECK(inf_llm_context_new(m, &o, &seq[i], &err) == INF_OK, "%s", err.message);
        CHECK(inf_llm_context_new(m, &o, &alone[i], &err) == INF_OK, "%s", err.message);
    }
    o.n_ctx = o.n_batch = o.n_logits = NS;
    o.n_threads = type == 8 ? 2 : 1; /* the batch's own threads do not change a row */
    CHECK(inf_llm_context_new(m, &o, &batch, &err) == INF_OK, "%s", err.message);
    const float *l;
    for (int i = 0; i < NS; i++) { /* prompts of 2 + 3i tokens */
        CHECK(inf_llm_context_eval(seq[i], tokens + 7 * i, 2 + 3 * i, false, &l, &err) == INF_OK, "%s", err.message);
        CHECK(inf_llm_context_eval(alone[i], tokens + 7 * i, 2 + 3 * i, false, &l, &err) == INF_OK, "%s",
              err.message);
    }
    int mismatches = 0, rows = 0;
    inf_alloc_stats a0, a1;
    inf_alloc_get_stats(&a0);
    for (int step = 0; step < 12; step++) {
        inf_llm_context *in[NS];
        int32_t tok[NS];
        int who[NS], n = 0;
        for (int i = 0; i < NS; i++)
            if ((step + i) % 3 != 0 || step % 4 == 0) { /* leave and rejoin; every 4th step all of them */
                who[n] = i;
                in[n] = seq[i];
                tok[n++] = tokens[(step * 7 + i * 5) % 64];
            }
        CHECK(inf_llm_context_eval_batch(batch, in, tok, n, &l, &err) == INF_OK, "%s: %s", tn, err.message);
        for (int k = 0; k < n; k++) {
            const float *one;
            CHECK(inf_llm_context_eval(alone[who[k]], &tok[k], 1, false, &one, &err) == INF_OK, "%s", err.message);
            mismatches += memcmp(one, l + (size_t)k * V, sizeof(float) * V) != 0;
            rows++;
            CHECK(inf_llm_context_n_past(seq[who[k]]) == inf_llm_context_n_past(alone[who[k]]), "%s: positions", tn);
        }
    }
    inf_alloc_get_stats(&a1);
    CHECK(mismatches == 0, "%s: %d of %d batched rows differ from lone decoding", tn, mismatches, rows);
    CHECK(a1.n_allocs == a0.n_allocs, "%s: %llu allocations in batched steps", tn,
          (unsigned long long)(a1.n_allocs - a0.n_allocs));
    /* errors: the same sequence twice, more sequences than the batch takes, a foreign token */
    inf_llm_context *twice[2] = {seq[0], seq[0]}, *six[NS + 1];
    int32_t toks[NS + 1] = {3, 3, 3, 3, 3, 3};
    for (int i = 0; i <= NS; i++) six[i] = i < NS ? seq[i] : alone[0];
    CHECK(inf_llm_context_eval_batch(batch, twice, toks, 2, &l, &err) == INF_EINVAL && strstr(err.message, "same"),
          "%s: a sequence twice: %s", tn, err.message);
    CHECK(inf_llm_context_eval_batch(batch, six, toks, NS + 1, &l, &err) == INF_ERANGE, "%s: too many: %s", tn,
          err.message);
    toks[1] = V;
    CHECK(inf_llm_context_eval_batch(batch, six, toks, 2, &l, &err) == INF_ERANGE && strstr(err.message, "vocabulary"),
          "%s: foreign token: %s", tn, err.message);
    for (int i = 0; i < NS; i++) inf_llm_context_free(seq[i]), inf_llm_context_free(alone[i]);
    inf_llm_context_free(batch);
    inf_llm_model_free(m);
    free(buf);
}

static void test_batch(uint32_t type, const char *tn) {
    tm_params p = params(type, 11);
    test_batch_of(&p, tn);
}

/* ---- generation and speculative decoding ---- */

typedef struct collect {
    int32_t ids[256];
    int n;
} collect;
static int on_tok(void *u, int32_t t) {
    collect *c = u;
    if (c->n < 256) c->ids[c->n++] = t;
    return 0;
}

static void run_gen(inf_llm_context *t, inf_llm_context *d, const int32_t *prompt, int np, float temp, uint64_t seed,
                    int max, int k, collect *out, inf_llm_generate_stats *st) {
    inf_llm_generate_options o;
    inf_llm_generate_options_init(&o);
    o.max_tokens = max;
    o.sampling.temperature = temp;
    o.sampling.top_k = 0;
    o.sampling.top_p = 1;
    o.sampling.seed = seed;
    o.draft_tokens = k;
    inf_error err;
    out->n = 0;
    inf_status s = inf_llm_generate(t, d, prompt, np, &o, on_tok, out, st, &err);
    CHECK(s == INF_OK, "generate: %s", err.message);
}

static void test_speculative(uint32_t type, const char *tn) {
    tm_params pt = params(type, 11), pd = params(type, 12);
    pd.layers = 1;
    pd.embd = 32, pd.heads = 2, pd.heads_kv = 1, pd.ff = 64;
    uint8_t *bt, *bd;
    inf_llm_model *mt = load(&pt, false, &bt), *md = load(&pd, false, &bd);
    if (!mt || !md) return;
    inf_llm_context *ct, *cd, *cself;
    inf_error err;
    inf_llm_context_new(mt, NULL, &ct, &err);
    inf_llm_context_new(md, NULL, &cd, &err);
    inf_llm_context_new(mt, NULL, &cself, &err);
    collect alone, spec;
    inf_llm_generate_stats sa, ss;
    int mismatches = 0, prompts = 0;
    for (int pr = 0; pr < 12; pr++) {
        int32_t prompt[8];
        for (int i = 0; i < 8; i++) prompt[i] = 3 + (pr * 13 + i * 7) % (pt.vocab - 3);
        int np = 3 + pr % 6;
        run_gen(ct, NULL, prompt, np, 0, 0, 40, 0, &alone, &sa);
        /* k fixed and the adaptive draft length (INFERA_LLM_DRAFT_ADAPTIVE: at most k) */
        for (int fixed = 0; fixed < 2; fixed++)
            for (int k = 1; k <= 9; k += k < 6 ? 1 : 2) { /* passes of 2..7 tokens (each kernel shape) and 9 */
                if (!fixed) setenv("INFERA_LLM_DRAFT_ADAPTIVE", "1", 1);
                run_gen(ct, cd, prompt, np, 0, 0, 40, k, &spec, &ss);
                unsetenv("INFERA_LLM_DRAFT_ADAPTIVE");
                prompts++;
                if (spec.n != alone.n || memcmp(spec.ids, alone.ids, sizeof(int32_t) * alone.n)) mismatches++;
                CHECK(ss.draft_proposed > 0 && ss.draft_accepted <= ss.draft_proposed, "%s: draft stats", tn);
            }
        run_gen(ct, cself, prompt, np, 0, 0, 40, 4, &spec, &ss);
        CHECK(spec.n == alone.n && !memcmp(spec.ids, alone.ids, sizeof(int32_t) * alone.n) &&
                  ss.draft_accepted == ss.draft_proposed,
              "%s: self-draft accepts everything (%d/%d) and matches", tn, ss.draft_accepted, ss.draft_proposed);
    }
    CHECK(mismatches == 0, "%s: greedy speculative output differs from the target's on %d of %d runs", tn, mismatches,
          prompts);
    CHECK(sa.completion_tokens > 0 && sa.prompt_tokens > 0, "%s: stats", tn);
    /* sampling: reproducible by seed */
    int32_t prompt[4] = {5, 6, 7, 8};
    collect a, b;
    run_gen(ct, cd, prompt, 4, 1.0f, 99, 30, 3, &a, &ss);
    run_gen(ct, cd, prompt, 4, 1.0f, 99, 30, 3, &b, &ss);
    CHECK(a.n == b.n && !memcmp(a.ids, b.ids, sizeof(int32_t) * a.n), "%s: same seed, same tokens", tn);
    inf_llm_context_free(ct), inf_llm_context_free(cd), inf_llm_context_free(cself);
    inf_llm_model_free(mt), inf_llm_model_free(md);
    free(bt), free(bd);
}

/* The adaptive draft length: K proposals when they always pass, one when
 * they seldom do, never more as alpha falls, never outside 1..K; alpha
 * rises after a step that passed whole and falls after a miss. */
static void test_draft_policy(void) {
    for (int kmax = 1; kmax <= 16; kmax++) {
        int prev = 1;
        bool ok = true;
        for (double a = 0; a < 1; a += 0.01) {
            int k = inf__llm_draft_k(a, kmax);
            ok = ok && k >= prev && k >= 1 && k <= kmax;
            prev = k;
        }
        CHECK(ok, "draft length: not within 1..%d or not growing with alpha", kmax);
        CHECK(inf__llm_draft_k(0.999, kmax) == kmax && inf__llm_draft_k(0.1, kmax) == 1,
              "draft length at alpha 0.999 / 0.1: %d / %d (K %d)", inf__llm_draft_k(0.999, kmax),
              inf__llm_draft_k(0.1, kmax), kmax);
    }
    double a = 0.7, b = inf__llm_draft_alpha(a, 4, 4), c = inf__llm_draft_alpha(a, 0, 4),
           d = inf__llm_draft_alpha(a, 2, 4);
    CHECK(b > a && c < a && d > c && b < 1 && c > 0, "alpha after 4/4, 0/4, 2/4 accepted: %g %g %g", b, c, d);
    double x = 0.5;
    for (int i = 0; i < 200; i++)
        x = inf__llm_draft_alpha(x, 3, 3);
    CHECK(x < 1 && inf__llm_draft_k(x, 8) == 8, "alpha after 200 whole steps: %g (draft length %d)", x,
          inf__llm_draft_k(x, 8));
}

/* With sampling, the second token's distribution under speculative decoding
 * is the target's (chi-square against the target's own probabilities). */
static void test_speculative_distribution(void) {
    tm_params pt = params(0, 21), pd = params(0, 22);
    pt.vocab = pd.vocab = 8;
    uint8_t *bt, *bd;
    inf_llm_model *mt = load(&pt, false, &bt), *md = load(&pd, false, &bd);
    if (!mt || !md) return;
    inf_llm_context *ct, *cd;
    inf_error err;
    inf_llm_context_new(mt, NULL, &ct, &err);
    inf_llm_context_new(md, NULL, &cd, &err);
    int32_t prompt[3] = {3, 4, 5};
    /* exact distribution of (t1, t2) under the target: p(t1) * p(t2 | t1) */
    double p2[8] = {0}, p1[8];
    const float *l;
    float probs[8];
    inf_llm_sampler *s;
    inf_llm_sampling sp = {1.0f, 0, 1.0f, 0};
    inf_llm_sampler_new(&sp, 8, &s, &err);
    inf_llm_context_rewind(ct, 0, NULL);
    inf_llm_context_eval(ct, prompt, 3, false, &l, &err);
    inf_llm_sampler_probs(s, l, probs);
    for (int i = 0; i < 8; i++) p1[i] = probs[i];
    for (int t1 = 0; t1 < 8; t1++) {
        if (t1 == 2) continue; /* eos ends the sequence */
        inf_llm_context_rewind(ct, 3, NULL);
        inf_llm_context_eval(ct, (int32_t[]){t1}, 1, false, &l, &err);
        inf_llm_sampler_probs(s, l, probs);
        for (int i = 0; i < 8; i++) p2[i] += p1[t1] * probs[i];
    }
    int counts[8] = {0}, runs = 3000, total = 0;
    collect out;
    inf_llm_generate_stats st;
    for (int r = 0; r < runs; r++) {
        run_gen(ct, cd, prompt, 3, 1.0f, (uint64_t)r + 1000, 2, 2, &out, &st);
        if (out.n == 2) counts[out.ids[1]]++, total++;
        else if (out.n == 1 && st.stopped_by_eos) counts[2]++, total++;
    }
    double chi = 0, mass = 0;
    for (int i = 0; i < 8; i++) mass += p2[i];
    int dof = -1;
    for (int i = 0; i < 8; i++) {
        double e = p2[i] / mass * total;
        if (e < 5) continue;
        chi += (counts[i] - e) * (counts[i] - e) / e;
        dof++;
    }
    CHECK(dof > 0 && chi < 3 * dof + 20, "speculative sampling: chi-square %g with %d degrees of freedom", chi, dof);
    inf_llm_sampler_free(s);
    inf_llm_context_free(ct), inf_llm_context_free(cd);
    inf_llm_model_free(mt), inf_llm_model_free(md);
    free(bt), free(bd);
}

/* ---- malformed models ---- */

static void expect_refused(void (*mutate)(gw *), const char *needle, inf_status want) {
    gw w;
    gw_init(&w);
    mutate(&w);
    uint8_t *p;
    size_t n;
    gw_finish(&w, 3, &p, &n);
    inf__gguf *g;
    inf_llm_model *m = NULL;
    inf_error err = {0};
    inf_status st = inf__gguf_open_buffer(p, n, "bad.gguf", &g, &err);
    if (st == INF_OK) st = inf__llm_model_from_gguf(g, false, &m, &err);
    CHECK(st == want && strstr(err.message, needle), "refused with %s '%s' (got %s: %s)", inf_status_name(want), needle,
          inf_status_name(st), err.message);
    inf_llm_model_free(m);
    free(p);
}
static void base_keys_e(gw *w, const char *arch, uint32_t embd) {
    char k[64];
    gw_key_str(w, "general.architecture", arch);
#define K(x) (snprintf(k, sizeof k, "%s.%s", arch, x), k)
    gw_key_u32(w, K("embedding_length"), embd);
    gw_key_u32(w, K("block_count"), 1);
    gw_key_u32(w, K("feed_forward_length"), 64);
    gw_key_u32(w, K("attention.head_count"), 2);
#undef K
}
static void base_keys(gw *w, const char *arch) { base_keys_e(w, arch, 32); }
static void m_arch(gw *w) { base_keys(w, "mamba"); }
static void m_missing(gw *w) {
    base_keys(w, "llama");
    float x[32 * 8] = {0};
    int64_t ne[2] = {32, 8};
    gw_tensor(w, "token_embd.weight", 0, 2, ne, x, sizeof x);
    gw_tensor(w, "output_norm.weight", 0, 1, ne, x, 128);
}
static void m_shape(gw *w) {
    base_keys(w, "llama");
    float x[32 * 8] = {0};
    int64_t ne[2] = {32, 8};
    gw_tensor(w, "token_embd.weight", 0, 2, ne, x, sizeof x);
    int64_t ne2[1] = {16};
    gw_tensor(w, "output_norm.weight", 0, 1, ne2, x, 64);
}
static void m_type(gw *w) {
    base_keys_e(w, "llama", 256);
    uint8_t x[4 * 176] = {0};
    int64_t ne[2] = {256, 4};
    gw_tensor(w, "token_embd.weight", 13, 2, ne, x, sizeof x); /* q5_K: not supported */
}
static void m_heads(gw *w) {
    base_keys(w, "llama");
    gw_key_u32(w, "llama.attention.head_count_kv", 3);
}
static void m_nokey(gw *w) { gw_key_str(w, "general.architecture", "llama"); }

static void test_malformed(void) {
    expect_refused(m_arch, "architecture 'mamba' is not supported", INF_EUNSUPPORTED);
    expect_refused(m_missing, "tensor 'blk.0.attn_norm.weight' is missing", INF_EMODEL);
    expect_refused(m_shape, "tensor 'output_norm.weight' has shape [16,1], expected [32]", INF_ESHAPE);
    expect_refused(m_type, "token_embd.weight' is of type q5_K", INF_EUNSUPPORTED);
    expect_refused(m_heads, "heads 2/3", INF_EMODEL);
    expect_refused(m_nokey, "'llama.embedding_length' is missing", INF_EMODEL);
}

/* The attention kernels (attn_avx2.c; attn_avx512.c where the CPU has
 * AVX-512, and the one inf__llm_attn_get picks) against the reference
 * (attn.c): head sizes with and without a fallback, key counts around the
 * 64-key blocks and the 8- and 16-key groups, growing scores (the running
 * maximum moves), strided cache rows. */
static void test_attention(void) {
    uint64_t s = 7;
    enum { MAXK = 200, STRIDE = 3 * 136 };
    static float K[MAXK * STRIDE], V[MAXK * STRIDE];
    float q[136], o[136], want[136];
    static const int hds[6] = {64, 128, 36, 32, 16, 48}, nks[9] = {1, 7, 8, 15, 16, 17, 64, 65, 200};
    inf__llm_attn_fn fast[3] = {inf__llm_attn_get(false), NULL, NULL};
    const char *names[3] = {"picked", "avx2", "avx512"};
#if defined(__x86_64__)
    if (inf__cpu_has_avx2_fma()) fast[1] = inf__llm_attn_avx2;
    if (inf__cpu_has_avx512_vnni()) fast[2] = inf__llm_attn_avx512;
#endif
    for (int ci = 0; ci < 3; ci++) /* no cap; Gemma 2's 50; a cap of 1.5 that squashes these scores */
        for (int hi = 0; hi < 6; hi++)
            for (int ni = 0; ni < 9; ni++) {
                int hd = hds[hi], nk = nks[ni];
                float cap = ci == 0 ? 0 : ci == 1 ? 50.0f : 1.5f;
                for (int i = 0; i < hd; i++) q[i] = tm_rand(&s) * 2;
                for (int j = 0; j < nk; j++)
                    for (int i = 0; i < hd; i++) {
                        K[(size_t)j * STRIDE + i] = tm_rand(&s) * (1 + j * 0.05f); /* later keys score higher */
                        V[(size_t)j * STRIDE + i] = tm_rand(&s);
                    }
                float scale = 1.0f / sqrtf((float)hd);
                inf__llm_attn_ref(hd, q, K, V, STRIDE, nk, scale, cap, want);
                for (int f = 0; f < 3; f++) {
                    if (!fast[f]) continue;
                    fast[f](hd, q, K, V, STRIDE, nk, scale, cap, o);
                    float d = max_abs_diff(o, want, (size_t)hd), m = max_abs(want, (size_t)hd);
                    CHECK(d <= 2e-5f * (m + 1),
                          "attention (%s) hd %d keys %d cap %g: differs from the reference by %g (magnitude %g)",
                          names[f], hd, nk, cap, d, m);
                }
            }
    /* The multi-query kernel: up to 11 queries of a short pass (their own key
     * counts, around the 64-key blocks) over one head's keys, each bit for
     * bit what the one-query kernel gives it alone. */
    inf__llm_attn_multi_fn multi = inf__llm_attn_multi_get(false);
    for (int ci = 0; ci < 2; ci++)
        for (int hi = 0; multi && hi < 6; hi++)
            for (int nq = 1; nq <= 11; nq += 5) {
                float cap = ci ? 2.0f : 0;
                enum { NQ = 11 };
                int hd = hds[hi], nk[NQ];
                static float qs[NQ][136], os[NQ][136];
                const float *qp[NQ];
                float *op[NQ];
                for (int j = 0; j < 130; j++)
                    for (int i = 0; i < hd; i++)
                        K[(size_t)j * STRIDE + i] = tm_rand(&s), V[(size_t)j * STRIDE + i] = tm_rand(&s);
                for (int i = 0; i < nq; i++) {
                    for (int e = 0; e < hd; e++) qs[i][e] = tm_rand(&s) * 3;
                    nk[i] = 60 + 7 * i, qp[i] = qs[i], op[i] = os[i];
                }
                float scale = 1.0f / sqrtf((float)hd);
                multi(hd, nq, qp, nk, K, V, STRIDE, scale, cap, op);
                for (int i = 0; i < nq; i++) {
                    inf__llm_attn_get(false)(hd, qs[i], K, V, STRIDE, nk[i], scale, cap, o);
                    CHECK(!memcmp(o, os[i], sizeof(float) * (size_t)hd),
                          "attention multi hd %d: query %d of %d differs from the one-query kernel", hd, i, nq);
                }
            }
    /* SwiGLU: the vector exp over the whole range silu meets (saturating ends included), and a tail */
    enum { NG = 1003 };
    static float g[NG], g2[NG], u[NG];
    for (int i = 0; i < NG; i++) g[i] = g2[i] = (i - NG / 2) * 0.2f, u[i] = tm_rand(&s) + 1.5f;
    inf__llm_swiglu_ref(g, u, NG);
    inf__llm_swiglu_get(false)(g2, u, NG);
    float worst = 0;
    for (int i = 0; i < NG; i++) /* (g << -87: the reference's 0 against e^88 in the denominator, ~1e-36) */
        worst = fmaxf(worst, fabsf(g2[i] - g[i]) / (fabsf(g[i]) + 1e-20f));
    CHECK(worst <= 1e-6f, "swiglu differs from the reference by %g relative", worst);
    /* GeGLU (gemma): the AVX2 twin's x / (1 + e^-2z) against the reference's tanhf form and a double oracle.
     * Where GELU is tiny (x < -3) the float reference loses digits to 1 + tanh ~ 0, so each is held to the
     * double value within 2e-6 of |x u| (the rounding of the inputs' product) */
    for (int i = 0; i < NG; i++) g[i] = g2[i] = (i - NG / 2) * 0.02f, u[i] = tm_rand(&s) + 1.5f;
    static float x0[NG];
    memcpy(x0, g, sizeof g);
    inf__llm_geglu_ref(g, u, NG);
    inf__llm_gate_get(INF__LLM_GATE_GELU_TANH, false)(g2, u, NG);
    double worst_ref = 0, worst_fast = 0;
    for (int i = 0; i < NG; i++) {
        double x = x0[i], want = 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))) * u[i];
        double tol = 2e-6 * fabs(x * u[i]) + 1e-30;
        worst_ref = fmax(worst_ref, fabs(g[i] - want) / tol), worst_fast = fmax(worst_fast, fabs(g2[i] - want) / tol);
    }
    CHECK(worst_ref <= 1 && worst_fast <= 1, "geglu: reference %g, fast %g of the tolerance from the double oracle",
          worst_ref, worst_fast);
    CHECK(inf__llm_gate_get(INF__LLM_GATE_SILU, true) == inf__llm_swiglu_ref &&
              inf__llm_gate_get(INF__LLM_GATE_GELU_TANH, true) == inf__llm_geglu_ref,
          "the forced-reference gates are not the references");
    printf("attention, swiglu, geglu: the fast kernels against the references checked\n");
}

/* ---- the weight region (weight_region.c) ---- */

/* Loads the model in buf (which must outlive it), NULL on failure. */
static inf_llm_model *load_buffer(const uint8_t *buf, size_t n) {
    inf__gguf *g;
    inf_llm_model *m = NULL;
    inf_error err;
    if (inf__gguf_open_buffer(buf, n, "random.gguf", &g, &err) || inf__llm_model_from_gguf(g, false, &m, &err)) {
        fprintf(stderr, "load: %s\n", err.message);
        return NULL;
    }
    return m;
}

/* Does w's data lie inside the file buffer? */
static bool on_mapping(const inf__llm_weight *w, const uint8_t *buf, size_t n) {
    return (const uint8_t *)w->data >= buf && (const uint8_t *)w->data < buf + n;
}

static void test_weight_region(uint32_t type, const char *tn, int tied) {
    tm_params p = params(type, 11);
    p.tied = tied;
    uint8_t *buf;
    size_t n;
    tm_build(&p, &buf, &n);
    setenv("INFERA_LLM_NO_HUGEPAGES", "1", 1);
    inf_llm_model *mm = load_buffer(buf, n); /* matrices read from the mapping, tiles in the region */
    unsetenv("INFERA_LLM_NO_HUGEPAGES");
    inf_llm_model *mc = load_buffer(buf, n); /* copied where huge pages are available */
    CHECK(mm && mc, "%s: load", tn);
    if (!mm || !mc) return;
    bool packed = mm->layers[0].wq.packed != NULL;
    CHECK(packed || (on_mapping(&mm->layers[0].wq, buf, n) && on_mapping(&mm->output, buf, n)),
          "%s: INFERA_LLM_NO_HUGEPAGES=1 keeps the unpacked matrices on the mapping", tn);
    CHECK(mm->region_copied == 0, "%s: INFERA_LLM_NO_HUGEPAGES=1 copies nothing", tn);
    if (mc->region_copied && !packed) /* (nothing copied where huge pages are unavailable; a q8_0 tied head is tiled) */
        CHECK(!on_mapping(&mc->layers[0].wq, buf, n) && (mc->output.packed || !on_mapping(&mc->output, buf, n)) &&
                  (!tied || on_mapping(&mc->tok_embd, buf, n)),
              "%s: unpacked matrices copied into the region, the embedding lookups on the mapping", tn);
    inf_llm_context_options o;
    inf_llm_context_options_init(&o);
    o.n_logits = 16;
    o.n_batch = 16;
    inf_llm_context *cm, *cc;
    inf_error err;
    CHECK(inf_llm_context_new(mm, &o, &cm, &err) == INF_OK && inf_llm_context_new(mc, &o, &cc, &err) == INF_OK, "%s",
          err.message);
    const float *l;
    int V = p.vocab;
    float *a = malloc(sizeof(float) * 16 * V);
    CHECK(inf_llm_context_eval(cm, tokens, 16, true, &l, &err) == INF_OK, "%s", err.message);
    memcpy(a, l, sizeof(float) * 16 * V);
    CHECK(inf_llm_context_eval(cc, tokens, 16, true, &l, &err) == INF_OK, "%s", err.message);
    CHECK(max_abs_diff(a, l, (size_t)16 * V) == 0, "%s%s: region vs mapping, 16-token pass: max diff %g", tn,
          tied ? " (tied head)" : "", max_abs_diff(a, l, (size_t)16 * V));
    float worst = 0;
    for (int i = 16; i < 24; i++) { /* decode steps */
        CHECK(inf_llm_context_eval(cm, &tokens[i], 1, false, &l, &err) == INF_OK, "%s", err.message);
        memcpy(a, l, sizeof(float) * V);
        CHECK(inf_llm_context_eval(cc, &tokens[i], 1, false, &l, &err) == INF_OK, "%s", err.message);
        worst = fmaxf(worst, max_abs_diff(a, l, V));
    }
    CHECK(worst == 0, "%s: region vs mapping, decode steps: max diff %g", tn, worst);
    free(a);
    inf_llm_context_free(cm), inf_llm_context_free(cc);
    inf_llm_model_free(mm), inf_llm_model_free(mc);
    free(buf);
}

/* Every allocation of a model load failing in turn: an error, nothing leaked. */
static void test_load_faults(void) {
    tm_params p = params(8, 3); /* q8_0: tiles and unpacked rows (output rows not a multiple of 16) */
    uint8_t *buf;
    size_t n;
    tm_build(&p, &buf, &n);
    int failed = 0;
    for (uint64_t k = 1; k < 10000; k++) {
        inf_alloc_stats s0, s1;
        inf_alloc_get_stats(&s0);
        inf_alloc_fail_after(k);
        inf__gguf *g;
        inf_llm_model *m = NULL;
        inf_error err;
        inf_status st = inf__gguf_open_buffer(buf, n, "random.gguf", &g, &err);
        if (st == INF_OK) st = inf__llm_model_from_gguf(g, false, &m, &err);
        inf_alloc_fail_after(0);
        if (st == INF_OK) {
            inf_llm_model_free(m);
            break;
        }
        failed++;
        inf_alloc_get_stats(&s1);
        CHECK(st == INF_ENOMEM && s1.bytes_live == s0.bytes_live,
              "allocation %llu failing: status %d (%s), %lld bytes left allocated", (unsigned long long)k, (int)st,
              err.message, (long long)(s1.bytes_live - s0.bytes_live));
    }
    CHECK(failed > 3, "load fault injection reached %d allocations", failed);
    free(buf);
}

int main(void) {
    uint64_t s = 5;
    for (int i = 0; i < 64; i++) tokens[i] = 3 + (int32_t)((tm_rand(&s) + 1) * 40) % 90;
    test_kernels();
    test_kernels_k();
    test_attention();
    test_kernels_float();
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        test_forward(types[i], type_names[i]);
        test_batch(types[i], type_names[i]);
        test_speculative(types[i], type_names[i]);
    }
    test_draft_policy();
    test_speculative_distribution();
    test_architectures();
    test_malformed();
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        test_weight_region(types[i], type_names[i], 0);
        test_weight_region(types[i], type_names[i], 1);
    }
    test_load_faults();
    return check_summary("llm");
}
