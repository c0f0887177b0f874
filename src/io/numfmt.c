/*
 * numfmt.c -- numbers as text without printf (numfmt.h): %.17g from the
 * exact decimal value computed with 128-bit integers, integers from a
 * two-digit table.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "io/numfmt.h"

static const char DIGIT_PAIRS[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                     "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                     "8081828384858687888990919293949596979899";

int inf__fmt_digits(uint64_t v, int width, char *out) {
    int i = width;
    while (i >= 2) {
        memcpy(out + i - 2, DIGIT_PAIRS + 2 * (v % 100), 2);
        v /= 100;
        i -= 2;
    }
    if (i) out[0] = (char)('0' + v % 10);
    return width;
}

int inf__fmt_i64(int64_t v, char *out) {
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    int n = 1;
    for (uint64_t t = u; t >= 10; t /= 10) n++;
    char *p = out;
    if (v < 0) *p++ = '-';
    inf__fmt_digits(u, n, p);
    p[n] = 0;
    return (int)(p - out) + n;
}

/* v < 10^8 as exactly 8 digits: 32-bit halves and pairs (a few multiplies, no 64-bit division). */
static void digits8(uint32_t v, char *out) {
    uint32_t a = v / 10000, b = v % 10000;
    memcpy(out, DIGIT_PAIRS + 2 * (a / 100), 2);
    memcpy(out + 2, DIGIT_PAIRS + 2 * (a % 100), 2);
    memcpy(out + 4, DIGIT_PAIRS + 2 * (b / 100), 2);
    memcpy(out + 6, DIGIT_PAIRS + 2 * (b % 100), 2);
}

/* v < 10^17 as exactly 17 digits (inf__fmt_digits(v, 17, out), faster). */
static void digits17(uint64_t v, char *out) {
    uint64_t hi = v / 100000000; /* < 10^9 */
    uint32_t h = (uint32_t)hi;
    out[0] = (char)('0' + h / 100000000);
    digits8(h % 100000000, out + 1);
    digits8((uint32_t)(v - hi * 100000000), out + 9);
}

#ifdef __SIZEOF_INT128__
typedef unsigned __int128 u128;

#define E19 10000000000000000000ULL
/* 10^0 .. 10^38 (10^38 < 2^127) */
static const u128 P10[39] = {
    1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL, 100000000ULL, 1000000000ULL,
    10000000000ULL, 100000000000ULL, 1000000000000ULL, 10000000000000ULL, 100000000000000ULL,
    1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL, 1000000000000000000ULL, E19,
    (u128)E19 * 10ULL, (u128)E19 * 100ULL, (u128)E19 * 1000ULL, (u128)E19 * 10000ULL, (u128)E19 * 100000ULL,
    (u128)E19 * 1000000ULL, (u128)E19 * 10000000ULL, (u128)E19 * 100000000ULL, (u128)E19 * 1000000000ULL,
    (u128)E19 * 10000000000ULL, (u128)E19 * 100000000000ULL, (u128)E19 * 1000000000000ULL,
    (u128)E19 * 10000000000000ULL, (u128)E19 * 100000000000000ULL, (u128)E19 * 1000000000000000ULL,
    (u128)E19 * 10000000000000000ULL, (u128)E19 * 100000000000000000ULL, (u128)E19 * 1000000000000000000ULL,
    (u128)E19 * E19,
};

/* round(m * 2^e * 10^s), halves to even, into *q; 0 when it does not fit
 * the 128-bit arithmetic (the caller falls back to snprintf). */
static int scaled_round(uint64_t m, int e, int s, u128 *q) {
    if (s >= 0) {
        if (s > 22) return 0;
        u128 n = (u128)m * P10[s]; /* < 2^53 * 2^74 */
        if (e >= 0) {
            if (e > 127 || (n >> (127 - e)) != 0) return 0;
            *q = n << e;
            return 1;
        }
        int sh = -e;
        if (sh > 127) return 0;
        u128 r = n & (((u128)1 << sh) - 1), half = (u128)1 << (sh - 1);
        *q = n >> sh;
        if (r > half || (r == half && (*q & 1))) (*q)++;
        return 1;
    }
    int t = -s;
    if (t > 38 || e < 0 || e > 74) return 0;
    u128 n = (u128)m << e, p = P10[t];
    u128 r = n % p;
    *q = n / p;
    if (2 * r > p || (2 * r == p && (*q & 1))) (*q)++;
    return 1;
}

#else /* no 128-bit integers on this target: printf */
static int scaled_round(uint64_t m, int e, int s, uint64_t *q) {
    (void)m, (void)e, (void)s, (void)q;
    return 0;
}
typedef uint64_t u128;
static const u128 P10[18] = {[16] = 10000000000000000ULL, [17] = 100000000000000000ULL};
#endif

int inf__fmt_g17(double v, char *out) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    int be = (int)(bits >> 52 & 0x7ff);
    char *p = out;
    if (bits << 1 == 0) { /* zero: "0" or "-0" */
        if (bits >> 63) *p++ = '-';
        *p++ = '0';
        *p = 0;
        return (int)(p - out);
    }
    if (be == 0 || be == 0x7ff) return snprintf(out, INF__FMT_NUM_MAX, "%.17g", v); /* subnormal, inf, nan */
    /* an integer below 2^53 (< 10^17: 17 digits show it whole, no exponent, no point): %lld's digits */
    if (v > -0x1p53 && v < 0x1p53 && v == (double)(int64_t)v) return inf__fmt_i64((int64_t)v, out);
    uint64_t m = (bits & ((1ULL << 52) - 1)) | (1ULL << 52);
    int e = be - 1075; /* |v| = m * 2^e */
    /* x = floor(log10|v|): estimated as log10(2) * (exponent + mantissa fraction), a bound within 0.03
     * below log10|v| (log2(1 + f) >= f), so nearly always right; the digits correct it either way */
    double lg = ((be - 1023) + (double)(m - (1ULL << 52)) * 0x1.0p-52) * 0.30102999566398120;
    int x = (int)lg;
    x -= (double)x > lg; /* floor, without the libm call */
    u128 d = 0;
    for (int tries = 0;; tries++) {
        if (tries == 4 || !scaled_round(m, e, 16 - x, &d)) return snprintf(out, INF__FMT_NUM_MAX, "%.17g", v);
        if (d >= P10[17]) x++;
        else if (d < P10[16]) x--;
        else break;
    }
    /* the 17 digits; the copies below are of fixed sizes (no memcpy call): they read dig's unset
     * tail and write it past the text's end, within out's INF__FMT_NUM_MAX bytes (the NUL ends it) */
    char dig[40];
    digits17((uint64_t)d, dig);
    int nd = 17; /* significant digits once trailing zeros are gone */
    while (nd > 1 && dig[nd - 1] == '0') nd--;
    if (bits >> 63) *p++ = '-';
    if (x >= 0 && x < 17) { /* fixed notation, d.ddd: at most 1 + 17 + 1 + 16 bytes */
        memcpy(p, dig, 17);
        p += x + 1;
        if (nd > x + 1) {
            *p++ = '.';
            if (p + 16 <= out + INF__FMT_NUM_MAX - 1)
                memcpy(p, dig + x + 1, 16);
            else
                memcpy(p, dig + x + 1, (size_t)(nd - x - 1));
            p += nd - x - 1;
        }
    } else if (x >= -4 && x < 0) { /* 0.000ddd: at most 1 + 5 + 17 bytes */
        memcpy(p, "0.000", 5);
        p += 1 - x;
        memcpy(p, dig, 17);
        p += nd;
    } else { /* d.ddde+XX */
        *p = dig[0];
        if (nd > 1) {
            p[1] = '.';
            memcpy(p + 2, dig + 1, 16);
            p += nd + 1;
        } else {
            p++;
        }
        *p++ = 'e';
        *p++ = x < 0 ? '-' : '+';
        int ax = x < 0 ? -x : x;
        p += inf__fmt_digits((uint64_t)ax, ax >= 100 ? 3 : 2, p);
    }
    *p = 0;
    return (int)(p - out);
}
