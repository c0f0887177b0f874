/*
 * test_blocking.c -- the cache blocking of the dense kernels derived from
 * the cache sizes (ops/blocking.c).  The expected values are the measured
 * constants the kernels used before the derivation (MC 72 rows, 16 MiB B
 * slabs, 256 KiB sub-batches and Winograd blocks, 128 KiB 1x1-conv W
 * blocks): on the two machines they were measured on -- Zen 3 (32 KiB L1d,
 * 512 KiB L2, 32 MiB L3) and Zen 4 (1 MiB L2) -- and on bigger caches the
 * derivation must give exactly them (so it changes nothing there); a
 * smaller L2 must shrink every L2-sized block, never below its floor, with
 * MC a multiple of the 6-row micro-panel; an unknown L3 keeps 16 MiB slabs.
 * L1d 48 KiB allows the AVX-512 6x32 tile with A packed, 32 KiB does not.
 * Then this machine's blocking is printed with its cache sizes.
 */
#include <stdio.h>

#include "core/cpu.h"
#include "ops/ops.h"

static int n_passed, n_failed;

static void expect(const char *what, int64_t got, int64_t want) {
    if (got == want) {
        n_passed++;
        return;
    }
    n_failed++;
    printf("FAIL %s: %lld, expected %lld\n", what, (long long)got, (long long)want);
}

#define KIB ((int64_t)1 << 10)
#define MIB ((int64_t)1 << 20)

static void measured_machines(void) {
    const int64_t l2s[] = {512 * KIB, 1 * MIB, 2 * MIB, 32 * MIB};
    for (size_t i = 0; i < sizeof l2s / sizeof l2s[0]; i++) {
        inf__blocking b;
        inf__blocking_for(32 * KIB, l2s[i], 32 * MIB, &b);
        char what[96];
        snprintf(what, sizeof what, "L2 %lld KiB gemm_mc", (long long)(l2s[i] / KIB));
        expect(what, b.gemm_mc, 72);
        expect("gemm_slab_floats", b.gemm_slab_floats, 4 * MIB);
        expect("subbatch_bytes", b.subbatch_bytes, 256 * KIB);
        expect("winograd_block_bytes", b.winograd_block_bytes, 256 * KIB);
        expect("pointwise_w_floats", b.pointwise_w_floats, 32 * KIB);
        expect("winograd_s2_u_bytes", b.winograd_s2_u_bytes, l2s[i]); /* U within L2 */
        expect("winograd_prefetch_bytes", b.winograd_prefetch_bytes, l2s[i]);
    }
}

static void small_caches(void) {
    inf__blocking b;
    inf__blocking_for(32 * KIB, 256 * KIB, 8 * MIB, &b); /* Intel client core */
    expect("L2 256 KiB gemm_mc", b.gemm_mc, 60);         /* 64 KiB A block: 64 rows, down to 6s */
    expect("L3 8 MiB gemm_slab_floats", b.gemm_slab_floats, 1 * MIB); /* 4 MiB slab */
    expect("L2 256 KiB subbatch_bytes", b.subbatch_bytes, 128 * KIB);
    expect("L2 256 KiB winograd_block_bytes", b.winograd_block_bytes, 128 * KIB);
    expect("L2 256 KiB pointwise_w_floats", b.pointwise_w_floats, 16 * KIB);
    expect("L2 256 KiB winograd_s2_u_bytes", b.winograd_s2_u_bytes, 256 * KIB);
    expect("L2 256 KiB winograd_prefetch_bytes", b.winograd_prefetch_bytes, 256 * KIB);
    inf__blocking_for(16 * KIB, 32 * KIB, 0, &b); /* tiny L2, unknown L3: floors, 16 MiB slabs */
    expect("L2 32 KiB gemm_mc", b.gemm_mc, 24);
    expect("L3 unknown gemm_slab_floats", b.gemm_slab_floats, 4 * MIB);
    expect("L2 32 KiB subbatch_bytes", b.subbatch_bytes, 16 * KIB);
    expect("L2 32 KiB pointwise_w_floats", b.pointwise_w_floats, 2 * KIB);
    /* every L2 from 32 KiB to 4 MiB: MC a multiple of 6 in [24, 72], never shrinking as L2 grows */
    int64_t last = 0;
    for (int64_t l2 = 32 * KIB; l2 <= 4 * MIB; l2 += 32 * KIB) {
        inf__blocking_for(32 * KIB, l2, 32 * MIB, &b);
        bool ok = b.gemm_mc % 6 == 0 && b.gemm_mc >= 24 && b.gemm_mc <= 72 && b.gemm_mc >= last;
        expect("gemm_mc in range and monotone", ok, true);
        last = b.gemm_mc;
    }
}

/* The AVX-512 6x32 tile with A packed: its 32 KiB B block needs a 48 KiB
 * L1d (Zen 5, Intel since Ice Lake), not 32 KiB (Zen 3, Zen 4, where it
 * measured slower); nothing else changes with the L1d. */
static void wide_tile_l1d(void) {
    inf__blocking b32, b48;
    inf__blocking_for(32 * KIB, 1 * MIB, 32 * MIB, &b32);
    inf__blocking_for(48 * KIB, 1 * MIB, 32 * MIB, &b48);
    expect("L1d 32 KiB gemm_wide_packed", b32.gemm_wide_packed, false);
    expect("L1d 48 KiB gemm_wide_packed", b48.gemm_wide_packed, true);
    expect("L1d 48 KiB gemm_mc", b48.gemm_mc, b32.gemm_mc);
}

int main(void) {
    measured_machines();
    wide_tile_l1d();
    small_caches();
    const inf_cpu_info *ci = inf_cpu_get_info();
    inf__blocking b;
    inf__blocking_get(&b);
    printf("this machine (%s; L1d %lld, L2 %lld, L3 %lld bytes, from %s): gemm_mc %lld, slab %lld floats, "
           "sub-batch %lld bytes, winograd block %lld bytes, 1x1 W block %lld floats\n",
           *ci->brand ? ci->brand : "unknown CPU", (long long)ci->l1d_bytes, (long long)ci->l2_bytes,
           (long long)ci->l3_bytes, ci->cache_source, (long long)b.gemm_mc, (long long)b.gemm_slab_floats,
           (long long)b.subbatch_bytes, (long long)b.winograd_block_bytes, (long long)b.pointwise_w_floats);
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}
