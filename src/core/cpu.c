/*
 * cpu.c -- the processor, detected once (pthread_once) at the first
 * question: CPUID vendor/family/model/brand, the SIMD features the kernels
 * use (checked against XGETBV, so a feature the OS does not save counts as
 * absent), cache sizes per level (CPUID leaf 4 on Intel, 0x8000001D on AMD;
 * else sysconf, else sysfs, else Zen 3-like defaults), and the kernel path:
 * avx512 (F+BW+VL+DQ with ZMM state), avx2 (AVX2+FMA with YMM state) or
 * generic, lowered by INFERA_CPU=generic|avx2|avx512 (read once).
 *
 * Feature bits come from one table (leaf, subleaf, register, bit), so a new
 * feature is one row.  On aarch64 the path is neon (NEON is part of
 * ARMv8-A), lowered by INFERA_CPU=generic, with the dot-product extension
 * read from the kernel's HWCAP (getauxval); caches from sysconf or sysfs.
 * Elsewhere everything is "generic" with sysconf caches.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "core/cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define INF_CPU_X86 1
#elif defined(__aarch64__)
#include <sys/auxv.h>
#define INF_CPU_ARM64 1
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1ul << 20)
#endif
#endif

enum { REG_EAX, REG_EBX, REG_ECX, REG_EDX };

typedef struct feature_row {
    uint32_t bit;
    const char *name;
    unsigned leaf, subleaf, reg, shift;
    uint64_t xcr0; /* XCR0 bits the OS must set for it to be usable (0: none) */
} feature_row;

#define XCR0_YMM 0x6ull    /* SSE + AVX state */
#define XCR0_ZMM 0xE6ull   /* + opmask, ZMM_Hi256, Hi16_ZMM */

static const feature_row FEATURES[INF_CPU_N_FEATURES] = {
    {INF_CPU_SSE4_2, "sse4_2", 1, 0, REG_ECX, 20, 0},
    {INF_CPU_AVX, "avx", 1, 0, REG_ECX, 28, XCR0_YMM},
    {INF_CPU_AVX2, "avx2", 7, 0, REG_EBX, 5, XCR0_YMM},
    {INF_CPU_FMA, "fma", 1, 0, REG_ECX, 12, XCR0_YMM},
    {INF_CPU_F16C, "f16c", 1, 0, REG_ECX, 29, XCR0_YMM},
    {INF_CPU_AVX512F, "avx512f", 7, 0, REG_EBX, 16, XCR0_ZMM},
    {INF_CPU_AVX512DQ, "avx512dq", 7, 0, REG_EBX, 17, XCR0_ZMM},
    {INF_CPU_AVX512CD, "avx512cd", 7, 0, REG_EBX, 28, XCR0_ZMM},
    {INF_CPU_AVX512BW, "avx512bw", 7, 0, REG_EBX, 30, XCR0_ZMM},
    {INF_CPU_AVX512VL, "avx512vl", 7, 0, REG_EBX, 31, XCR0_ZMM},
    {INF_CPU_AVX512VBMI, "avx512vbmi", 7, 0, REG_ECX, 1, XCR0_ZMM},
    {INF_CPU_AVX512VNNI, "avx512vnni", 7, 0, REG_ECX, 11, XCR0_ZMM},
    {INF_CPU_AVX512BF16, "avx512bf16", 7, 1, REG_EAX, 5, XCR0_ZMM},
    {INF_CPU_AVX512FP16, "avx512fp16", 7, 0, REG_EDX, 23, XCR0_ZMM},
    {INF_CPU_AVXVNNI, "avx_vnni", 7, 1, REG_EAX, 4, XCR0_YMM},
    {INF_CPU_AMX_TILE, "amx_tile", 7, 0, REG_EDX, 24, 0},
    {INF_CPU_AMX_INT8, "amx_int8", 7, 0, REG_EDX, 25, 0},
    {INF_CPU_AMX_BF16, "amx_bf16", 7, 0, REG_EDX, 22, 0},
};

#ifdef INF_CPU_ARM64
static const char *const PATH_NAMES[] = {"generic", "neon"};
#else
static const char *const PATH_NAMES[] = {"generic", "avx2", "avx512"};
#endif
#define N_PATHS ((int)(sizeof PATH_NAMES / sizeof *PATH_NAMES))

/* Used when nothing reports a size: a Zen 3 / Skylake-class core. */
#define DEFAULT_L1D (32 * 1024)
#define DEFAULT_L2 (512 * 1024)

typedef struct cpu_state {
    inf_cpu_info info;
    inf__cpu_path path;
    bool dotprod; /* aarch64: sdot/udot */
} cpu_state;

/* Written once under pthread_once, read-only afterwards. */
static cpu_state g_cpu;
#ifdef INF_NO_THREADS /* single-threaded edge build: a flag does what pthread_once does, no libpthread */
static void run_once(pthread_once_t *once, void (*fn)(void)) {
    static int done;
    (void)once;
    if (!done) done = 1, fn();
}
#define pthread_once(once, fn) run_once(once, fn)
#endif
static pthread_once_t g_cpu_once = PTHREAD_ONCE_INIT;

#ifdef INF_CPU_X86
/* CPUID, each (leaf, subleaf) asked of the CPU once: in a virtual machine
 * every CPUID traps to the hypervisor (~4 us each on the Zen 5 VM of
 * docs/edge.md), and detection asks ~100 of them, many the same -- 0.4 ms
 * of a process's first model load before this memo.  Only detect_once calls
 * it (under pthread_once), so the memo needs no lock. */
static bool cpuid(unsigned leaf, unsigned subleaf, unsigned r[4]) {
    static struct { unsigned leaf, subleaf, r[4]; } memo[48];
    static int n_memo;
    static unsigned max_leaf[2]; /* the highest basic and extended leaf */
    static bool max_known[2];
    for (int i = 0; i < n_memo; i++)
        if (memo[i].leaf == leaf && memo[i].subleaf == subleaf) {
            memcpy(r, memo[i].r, sizeof memo[i].r);
            return true;
        }
    int range = leaf >> 31;
    if (!max_known[range]) max_leaf[range] = __get_cpuid_max(leaf & 0x80000000u, NULL), max_known[range] = true;
    if (max_leaf[range] < leaf) {
        r[0] = r[1] = r[2] = r[3] = 0;
        return false;
    }
    __cpuid_count(leaf, subleaf, r[0], r[1], r[2], r[3]);
    if (n_memo < (int)(sizeof memo / sizeof memo[0])) {
        memo[n_memo].leaf = leaf, memo[n_memo].subleaf = subleaf;
        memcpy(memo[n_memo++].r, r, sizeof memo[0].r);
    }
    return true;
}

static uint64_t read_xcr0(void) {
    unsigned r[4];
    if (!cpuid(1, 0, r) || !(r[REG_ECX] & (1u << 27))) return 0; /* no OSXSAVE */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static void detect_identity(inf_cpu_info *ci) {
    unsigned r[4];
    cpuid(0, 0, r);
    memcpy(ci->vendor, &r[REG_EBX], 4);
    memcpy(ci->vendor + 4, &r[REG_EDX], 4);
    memcpy(ci->vendor + 8, &r[REG_ECX], 4);
    ci->vendor[12] = '\0';
    cpuid(1, 0, r);
    int base_family = (int)((r[REG_EAX] >> 8) & 0xf), base_model = (int)((r[REG_EAX] >> 4) & 0xf);
    ci->family = base_family == 0xf ? base_family + (int)((r[REG_EAX] >> 20) & 0xff) : base_family;
    ci->model = base_family == 0xf || base_family == 0x6 ? base_model | (int)(((r[REG_EAX] >> 16) & 0xf) << 4)
                                                         : base_model;
    ci->stepping = (int)(r[REG_EAX] & 0xf);
    char brand[49] = {0};
    for (unsigned i = 0; i < 3; i++) {
        if (!cpuid(0x80000002u + i, 0, r)) break;
        memcpy(brand + 16 * i, r, 16);
    }
    const char *s = brand;
    while (*s == ' ') s++;
    snprintf(ci->brand, sizeof ci->brand, "%s", s);
    for (size_t n = strlen(ci->brand); n > 0 && ci->brand[n - 1] == ' '; n--) ci->brand[n - 1] = '\0';
}

static uint32_t detect_features(void) {
    uint64_t xcr0 = read_xcr0();
    uint32_t bits = 0;
    for (int i = 0; i < INF_CPU_N_FEATURES; i++) {
        const feature_row *f = &FEATURES[i];
        unsigned r[4];
        if (f->subleaf > 0) {
            unsigned r7[4];
            if (!cpuid(7, 0, r7) || r7[REG_EAX] < f->subleaf) continue; /* subleaf not reported */
        }
        if (!cpuid(f->leaf, f->subleaf, r) || !((r[f->reg] >> f->shift) & 1u)) continue;
        if ((xcr0 & f->xcr0) != f->xcr0) continue;
        bits |= f->bit;
    }
    return bits;
}

/* Deterministic cache parameters (Intel leaf 4, AMD 0x8000001D share the
 * layout): per data/unified level, ways x partitions x line x sets. */
static bool detect_caches_cpuid(inf_cpu_info *ci) {
    unsigned leaf = 4, r[4];
    if (!strcmp(ci->vendor, "AuthenticAMD") || !strcmp(ci->vendor, "HygonGenuine")) {
        if (!cpuid(0x80000001u, 0, r) || !(r[REG_ECX] & (1u << 22))) return false; /* no TOPOEXT */
        leaf = 0x8000001Du;
    }
    bool any = false;
    for (unsigned sub = 0; sub < 16; sub++) {
        if (!cpuid(leaf, sub, r)) return false;
        unsigned type = r[REG_EAX] & 0x1f, level = (r[REG_EAX] >> 5) & 0x7;
        if (type == 0) break;
        if (type == 2) continue; /* instruction cache */
        int64_t line = (r[REG_EBX] & 0xfff) + 1, parts = ((r[REG_EBX] >> 12) & 0x3ff) + 1;
        int64_t ways = (r[REG_EBX] >> 22) + 1, sets = (int64_t)r[REG_ECX] + 1;
        int64_t size = ways * parts * line * sets;
        if (level == 1) ci->l1d_bytes = size, ci->line_bytes = (int)line;
        else if (level == 2) ci->l2_bytes = size;
        else if (level == 3) ci->l3_bytes = size;
        any = true;
    }
    return any && ci->l1d_bytes > 0 && ci->l2_bytes > 0;
}
#endif

static bool detect_caches_sysconf(inf_cpu_info *ci) {
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE)
    long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (l1 <= 0 || l2 <= 0) return false;
    ci->l1d_bytes = l1, ci->l2_bytes = l2;
#ifdef _SC_LEVEL3_CACHE_SIZE
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    ci->l3_bytes = l3 > 0 ? l3 : 0;
#endif
#ifdef _SC_LEVEL1_DCACHE_LINESIZE
    long line = sysconf(_SC_LEVEL1_DCACHE_LINESIZE);
    if (line > 0) ci->line_bytes = (int)line;
#endif
    return true;
#else
    (void)ci;
    return false;
#endif
}

/* /sys/devices/system/cpu/cpu0/cache/indexN/{level,type,size} ("32K"). */
static bool detect_caches_sysfs(inf_cpu_info *ci) {
    bool any = false;
    for (int idx = 0; idx < 8; idx++) {
        char path[96], type[32] = "";
        int level = 0;
        long kib = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", idx);
        FILE *f = fopen(path, "r");
        if (!f) break;
        if (fscanf(f, "%d", &level) != 1) level = 0;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", idx);
        if ((f = fopen(path, "r"))) {
            if (fscanf(f, "%31s", type) != 1) type[0] = '\0';
            fclose(f);
        }
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", idx);
        if ((f = fopen(path, "r"))) {
            if (fscanf(f, "%ldK", &kib) != 1) kib = 0;
            fclose(f);
        }
        if (kib <= 0 || !strcmp(type, "Instruction")) continue;
        int64_t bytes = (int64_t)kib * 1024;
        if (level == 1) ci->l1d_bytes = bytes;
        else if (level == 2) ci->l2_bytes = bytes;
        else if (level == 3) ci->l3_bytes = bytes;
        any = true;
    }
    return any && ci->l1d_bytes > 0 && ci->l2_bytes > 0;
}

static void detect_caches(inf_cpu_info *ci) {
    ci->line_bytes = 64;
#ifdef INF_CPU_X86
    if (detect_caches_cpuid(ci)) {
        ci->cache_source = "cpuid";
        return;
    }
#endif
    if (detect_caches_sysconf(ci)) ci->cache_source = "sysconf";
    else if (detect_caches_sysfs(ci)) ci->cache_source = "sysfs";
    else {
        ci->l1d_bytes = DEFAULT_L1D, ci->l2_bytes = DEFAULT_L2, ci->l3_bytes = 0;
        ci->cache_source = "default";
    }
}

static inf__cpu_path best_path(uint32_t f) {
#ifdef INF_CPU_ARM64
    (void)f;
    return INF__CPU_NEON;
#endif
    const uint32_t avx512 = INF_CPU_AVX512F | INF_CPU_AVX512BW | INF_CPU_AVX512VL | INF_CPU_AVX512DQ;
    const uint32_t avx2 = INF_CPU_AVX | INF_CPU_AVX2 | INF_CPU_FMA;
    if ((f & avx2) != avx2) return INF__CPU_GENERIC;
    return (f & avx512) == avx512 ? INF__CPU_AVX512 : INF__CPU_AVX2;
}

/* INFERA_CPU lowers the path; -1 when unset or unknown (warned). */
static int forced_path(void) {
    const char *env = getenv("INFERA_CPU");
    if (!env || !*env) return -1;
    for (int p = 0; p < N_PATHS; p++)
        if (!strcmp(env, PATH_NAMES[p])) return p;
    inf__log(INF_LOG_WARN, "INFERA_CPU='%s' is not one of %s; ignored", env,
             N_PATHS == 2 ? "generic, neon" : "generic, avx2, avx512");
    return -1;
}

static void detect_once(void) {
    inf_cpu_info *ci = &g_cpu.info;
    memset(ci, 0, sizeof *ci);
#ifdef INF_CPU_X86
    detect_identity(ci);
    ci->features = detect_features();
#elif defined(INF_CPU_ARM64)
    g_cpu.dotprod = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    ci->n_logical = n > 0 ? (int)n : 1;
    detect_caches(ci);
    inf__cpu_path best = best_path(ci->features), use = best;
    int forced = forced_path();
    if (forced >= 0 && forced < (int)best) use = (inf__cpu_path)forced, ci->forced = true;
    ci->best_path = PATH_NAMES[best];
    ci->path = PATH_NAMES[use];
    g_cpu.path = use;
}

const inf_cpu_info *inf_cpu_get_info(void) {
    pthread_once(&g_cpu_once, detect_once);
    return &g_cpu.info;
}

const char *inf_cpu_feature_name(uint32_t bit) {
    for (int i = 0; i < INF_CPU_N_FEATURES; i++)
        if (FEATURES[i].bit == bit) return FEATURES[i].name;
    return NULL;
}

uint32_t inf_cpu_feature_at(int i) { return i >= 0 && i < INF_CPU_N_FEATURES ? FEATURES[i].bit : 0; }

inf__cpu_path inf__cpu_path_get(void) {
    pthread_once(&g_cpu_once, detect_once);
    return g_cpu.path;
}

bool inf__cpu_has_avx512(void) { return inf__cpu_path_get() >= INF__CPU_AVX512; }

bool inf__cpu_has_neon(void) {
#ifdef INF_CPU_ARM64
    return inf__cpu_path_get() >= INF__CPU_NEON;
#else
    return false;
#endif
}

bool inf__cpu_has_neon_dotprod(void) { return inf__cpu_has_neon() && g_cpu.dotprod; }

bool inf__cpu_path_allows(inf__cpu_path min, uint32_t features) {
    return inf__cpu_path_get() >= min && (inf_cpu_get_info()->features & features) == features;
}

int64_t inf__cpu_l1d_bytes(void) {
    int64_t v = inf_cpu_get_info()->l1d_bytes;
    return v > 0 ? v : DEFAULT_L1D;
}

int64_t inf__cpu_l2_bytes(void) {
    int64_t v = inf_cpu_get_info()->l2_bytes;
    return v > 0 ? v : DEFAULT_L2;
}
