/*
 * madd_ceiling.c -- the multiply-add ceiling of 256-bit INT8 dot products
 * against FP32 FMA on this CPU: register-only loops of 12 independent sums
 * (no loads), products per nanosecond of CPU time, for
 *   fma     vfmadd231ps                                   8 products / op
 *   ubs     vpmaddubsw + vpmaddwd by ones + vpaddd        32 products (the AVX2 pair-safe kernel's step)
 *   shift   vpmaddubsw, then the int16 pair sums widened by vpsrad / vpslld + vpsrad and two vpaddd
 *           (no second multiply: worth it only where shifts have pipes the multiplies lack)
 *   hyb3:1  three sums of four as ubs, one as shift;  hyb1:1  alternating
 *   ubs2    two vpmaddubsw added in int16 (vpaddw), then one vpmaddwd by ones + vpaddd: 64 products,
 *           three multiplies -- exact only where the 4 weights of each int16 slot have positive sum
 *           <= 128 and negative sum >= -128 (bench/quant/quad_safe.py counts them in real files):
 *           the ceiling of that form, not a kernel Infera has
 *   mwd     vpmaddwd + vpaddd (the int16 Winograd GEMM's step, x86/qgemm_avx2.c): 16 products, one multiply;
 *           written as an asm loop (registers only: the C loops above may keep a sum in memory where 12 sums,
 *           the operands and a temporary exceed the 16 ymm registers)
 * An empty asm before each step hides the operands' constancy, so each step
 * is computed (not hoisted).  Run on an idle-ish core; compare ratios.
 *
 *   gcc -O2 -mavx2 -mfma bench/quant/madd_ceiling.c -o /tmp/madd_ceiling && /tmp/madd_ceiling
 */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

enum { ITERS = 100000000 };

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#define R12(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11)
#define DECLF(i) __m256 a##i = _mm256_set1_ps(s + i);
#define DECLI(i) __m256i a##i = _mm256_set1_epi32(s + i);
#define SUMF(i) r += a##i[0];
#define SUMI(i) r += _mm256_extract_epi32(a##i, 0);
#define FMA(i)                                                                                                         \
    __asm__ volatile("" : "+x"(b));                                                                                    \
    a##i = _mm256_fmadd_ps(a##i, b, c);
#define UBS(i)                                                                                                         \
    __asm__ volatile("" : "+x"(x));                                                                                    \
    a##i = _mm256_add_epi32(a##i, _mm256_madd_epi16(_mm256_maddubs_epi16(x, w), one));
#define SHF(i)                                                                                                         \
    {                                                                                                                  \
        __asm__ volatile("" : "+x"(x));                                                                                \
        __m256i p = _mm256_maddubs_epi16(x, w);                                                                        \
        a##i = _mm256_add_epi32(a##i, _mm256_srai_epi32(p, 16));                                                       \
        a##i = _mm256_add_epi32(a##i, _mm256_srai_epi32(_mm256_slli_epi32(p, 16), 16));                                \
    }
#define UBS2(i)                                                                                                        \
    {                                                                                                                  \
        __asm__ volatile("" : "+x"(x), "+x"(x2));                                                                      \
        __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(x, w), _mm256_maddubs_epi16(x2, w));                         \
        a##i = _mm256_add_epi32(a##i, _mm256_madd_epi16(p, one));                                                      \
    }
#define HYB(i)                                                                                                         \
    if ((i) % 4 == 3) SHF(i) else { UBS(i) }
#define HYB2(i)                                                                                                        \
    if ((i) % 2 == 1) SHF(i) else { UBS(i) }

__attribute__((noinline)) static double fma_rate(float s) {
    R12(DECLF)
    __m256 b = _mm256_set1_ps(1.0001f), c = _mm256_set1_ps(0.999f);
    double t = now();
    for (long n = 0; n < ITERS; n++) {
        R12(FMA)
    }
    t = now() - t;
    float r = 0;
    R12(SUMF)
    if (r == 1) puts("");
    return (double)ITERS * 12 * 8 / t / 1e9;
}

#define INT_RATE(name, OP, PER)                                                                                           \
    __attribute__((noinline)) static double name(int s) {                                                              \
        R12(DECLI)                                                                                                     \
        __m256i x = _mm256_set1_epi8(3), x2 = _mm256_set1_epi8(2), w = _mm256_set1_epi8(5);                           \
        __m256i one = _mm256_set1_epi16(1);                                                                            \
        (void)one;                                                                                                     \
        (void)x2;                                                                                                      \
        double t = now();                                                                                              \
        for (long n = 0; n < ITERS; n++) {                                                                             \
            R12(OP)                                                                                                    \
        }                                                                                                              \
        t = now() - t;                                                                                                 \
        int r = 0;                                                                                                     \
        R12(SUMI)                                                                                                      \
        if (r == 1) puts("");                                                                                          \
        return (double)ITERS * 12 * (PER) / t / 1e9;                                                                    \
    }
INT_RATE(ubs_rate, UBS, 32)
INT_RATE(shift_rate, SHF, 32)
INT_RATE(hyb_rate, HYB, 32)
INT_RATE(hyb2_rate, HYB2, 32)
INT_RATE(ubs2_rate, UBS2, 64)

/* vpmaddwd + vpaddd into 12 sums held in ymm0-ymm11 (operands ymm12, ymm13, product ymm14). */
#define MWD_STEP(i) "vpmaddwd %%ymm12, %%ymm13, %%ymm14\n\tvpaddd %%ymm14, %%ymm" #i ", %%ymm" #i "\n\t"
__attribute__((noinline)) static double mwd_rate(int s) {
    (void)s;
    long n = ITERS;
    double t = now();
    __asm__ volatile("vpxor %%xmm12, %%xmm12, %%xmm12\n\tvpcmpeqd %%ymm13, %%ymm13, %%ymm13\n\t"
                     "1:\n\t" MWD_STEP(0) MWD_STEP(1) MWD_STEP(2) MWD_STEP(3) MWD_STEP(4) MWD_STEP(5) MWD_STEP(6)
                         MWD_STEP(7) MWD_STEP(8) MWD_STEP(9) MWD_STEP(10) MWD_STEP(11) "dec %0\n\tjnz 1b\n\tvzeroupper"
                     : "+r"(n)
                     :
                     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
                       "xmm12", "xmm13", "xmm14", "cc");
    t = now() - t;
    return (double)ITERS * 12 * 16 / t / 1e9;
}

int main(int argc, char **argv) {
    (void)argv;
    for (int r = 0; r < 3; r++) {
        double f = fma_rate((float)argc), u = ubs_rate(argc), s = shift_rate(argc), h = hyb_rate(argc),
               h2 = hyb2_rate(argc), u2 = ubs2_rate(argc), m = mwd_rate(argc);
        printf("fma %.1f  ubs %.1f (%.2fx)  shift %.1f (%.2fx)  hyb3:1 %.1f (%.2fx)  hyb1:1 %.1f (%.2fx)  ubs2 %.1f "
               "(%.2fx) "
               "mwd %.1f (%.2fx) products/ns\n",
               f, u, u / f, s, s / f, h, h / f, h2, h2 / f, u2, u2 / f, m, m / f);
    }
    return 0;
}
