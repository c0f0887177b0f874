/*
 * blocking.c -- the cache blocking of the dense float kernels (the packed
 * SGEMM of both widths, the Winograd and 1x1 convolutions) and of sub-batch
 * execution, derived from the cache sizes found at start-up (core/cpu.c:
 * CPUID leaf 4 / 0x8000001D, else sysconf, else sysfs, else defaults).
 *
 * DESIGN: every size here is "a share of one cache level, at most the value
 * measured best": the constants were measured on AMD Zen 3 (32 KiB L1d,
 * 512 KiB L2) and again on Zen 4 (32 KiB L1d, 1 MiB L2) -- at and above
 * 512 KiB of L2 the share exceeds the measured value, so both machines run
 * exactly the constants (same tiles, same task counts); a smaller L2 (Intel
 * client cores and Atoms: 256 KiB, some ARM cores: 128-256 KiB) shrinks
 * the blocks so they still fit.  Larger caches keep the measured values:
 * nothing bigger has been measured.  The L3 decides the widest packed slab
 * of B (half the L3, at most 16 MiB; 32 MiB L3 on both machines).
 *
 * The L1d decides one thing: whether the AVX-512 6x32 tile may run with A
 * packed (its 32 KiB pair of B micro-panels needs 48 KiB of L1d to stay
 * there; gemm_avx2.c).
 *
 * What is not derived: KC = 256, the depth of one block of k.  It fixes
 * the order of the float sums (per 256-deep block acc = 0, then
 * acc = fma(a, b, acc) in k order; DESIGN.md section 1: batch invariance,
 * and every conv kernel sums the GEMM's way), so a machine-dependent KC
 * would give machine-dependent bits, and packed bundles and the kernels'
 * bit tests assume it.  Its B micro-panel (256 x 16 floats = 16 KiB, 32 KiB
 * for the AVX-512 pair) fits any L1d of 32 KiB or more.
 *
 * Computed once, from inf_cpu_get_info()'s cache sizes (fixed after the
 * CPU's detection), at the first inf__blocking_get: the packed GEMM asks on
 * every call (~700 a run of the bench CNN at batch 1, the Winograd layers'
 * per-point products), and recomputing it with three trips through
 * inf_cpu_get_info's pthread_once each time cost ~120 instructions a call
 * (callgrind, ~80 k a run).  inf__blocking_for stays pure (the tests call
 * it with made-up caches).
 */
#include <pthread.h>

#include "core/cpu.h"
#include "ops/ops.h"

enum {
    GEMM_MR = 6,               /* rows of an A micro-panel */
    GEMM_KC = 256,             /* depth of one k block (fixed: see above) */
    GEMM_MC_MAX = 72,          /* rows of A per task, measured (the stack block's size) */
    GEMM_MC_MIN = 4 * GEMM_MR, /* fewer rows would re-read each B panel too often */
};
#define WIDE_PACKED_L1D_MIN ((int64_t)48 << 10) /* L1d for the 6x32 tile's B block + an A panel */
#define SLAB_MAX ((int64_t)16 << 20)       /* bytes of packed B per slab, measured */
#define SLAB_MIN ((int64_t)1 << 20)
#define SUBBATCH_MAX ((int64_t)256 << 10)  /* activations of one sub-batch, measured */
#define WINOGRAD_MAX ((int64_t)256 << 10)  /* V + M of one Winograd block, measured */
#define POINTWISE_W_MAX ((int64_t)128 << 10) /* W of one 1x1-conv channel block, measured */

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

void inf__blocking_for(int64_t l1d, int64_t l2, int64_t l3, inf__blocking *out) {
    /* the AVX-512 6x32 tile with A packed keeps a KC x 32 B block (32 KiB)
     * in L1d while 6 KiB A panels stream past it: at 32 KiB of L1d (Zen 4)
     * they evict each other (0.7-0.9x the AVX2 tile there), 48 KiB (Zen 5,
     * Intel since Ice Lake) leaves a third free (1.5-1.8x on Zen 5) */
    out->gemm_wide_packed = l1d >= WIDE_PACKED_L1D_MIN;
    /* the packed A block (mc x KC) takes at most a quarter of L2: the rest
     * holds the B slab streaming through and C */
    int64_t mc = l2 / 4 / (GEMM_KC * (int64_t)sizeof(float)) / GEMM_MR * GEMM_MR;
    out->gemm_mc = clamp64(mc, GEMM_MC_MIN, GEMM_MC_MAX);
    out->gemm_slab_floats = (l3 > 0 ? clamp64(l3 / 2, SLAB_MIN, SLAB_MAX) : SLAB_MAX) / (int64_t)sizeof(float);
    /* a sub-batch's activations and a Winograd block's V + M: half of L2
     * (the other half for the weights and the kernels' packing) */
    out->subbatch_bytes = clamp64(l2 / 2, 16 << 10, SUBBATCH_MAX);
    out->winograd_block_bytes = clamp64(l2 / 2, 16 << 10, WINOGRAD_MAX);
    /* the stride-2 Winograd streams its U (25/9 of W) once per block of
     * tiles: on Zen 5 (1 MiB L2) 64 -> 128 channels (U 800 KiB) ran 0.85x
     * the direct kernel's time at batch 1, 128 -> 256 (3.2 MiB) 1.25x */
    out->winograd_s2_u_bytes = l2;
    /* X or Y larger than L2 come from L3: the Winograd kernel prefetches
     * their rows (bench_conv batch 64 on Zen 5: 0.64-1.04x the time; within
     * L2, at batch 1, the prefetches cost 0-6 %) */
    out->winograd_prefetch_bytes = l2;
    /* a 1x1 convolution's W block: a quarter of L2 (it is re-read per strip) */
    out->pointwise_w_floats = clamp64(l2 / 4, 8 << 10, POINTWISE_W_MAX) / (int64_t)sizeof(float);
}

static pthread_once_t g_blocking_once = PTHREAD_ONCE_INIT;
static inf__blocking g_blocking; /* written once, under g_blocking_once; read-only after */

static void blocking_once(void) {
    inf__blocking_for(inf__cpu_l1d_bytes(), inf__cpu_l2_bytes(), inf_cpu_get_info()->l3_bytes, &g_blocking);
}

void inf__blocking_get(inf__blocking *out) {
    pthread_once(&g_blocking_once, blocking_once);
    *out = g_blocking;
}
