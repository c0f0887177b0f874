/*
 * test_numparse.c -- the JSON number parser of the server (src/serve/json_num.c)
 * against strtod: millions of random values in the shapes requests carry
 * (%.9g floats, %.17g doubles, short decimals, integers, exponents, long
 * mantissas, subnormals, huge values), bit-for-bit, plus the JSON grammar
 * (what is and is not a number, also for the skipper inf__serve_number_len)
 * and the integer parsers' ranges; and the
 * float32 formatter (inf__serve_format_f32) against the printf/strtof rule
 * it replaces, byte for byte, on millions of random and consecutive floats.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve.h"

#define CHECK_PRINT_PASSES
#include "../check.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double rand_double(void) {
    uint64_t bits = next();
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* One string in one of several shapes. */
static void make(char *buf, size_t size, int kind) {
    switch (kind) {
    case 0: { /* float32 as printed by %.9g */
        uint32_t b = (uint32_t)next();
        float f;
        memcpy(&f, &b, 4);
        if (!isfinite(f)) f = 1.5f;
        snprintf(buf, size, "%.9g", (double)f);
        break;
    }
    case 1: { /* any double, %.17g */
        double d = rand_double();
        if (!isfinite(d)) d = -2.25;
        snprintf(buf, size, "%.17g", d);
        break;
    }
    case 2: /* short decimals like features: 12.5, -0.0031 */
        snprintf(buf, size, "%.*f", (int)(next() % 7), ((double)(int64_t)(next() % 2000001) - 1000000) / pow(10, (double)(next() % 6)));
        break;
    case 3: /* integers */
        snprintf(buf, size, "%lld", (long long)((int64_t)next() >> (next() % 64)));
        break;
    case 4: { /* random digit strings with exponents, up to 25 digits */
        int nd = 1 + (int)(next() % 25), k = 0;
        int dot = 1 + (int)(next() % (unsigned)(nd + 1)); /* == nd: no fraction */
        if (next() & 1) buf[k++] = '-';
        buf[k++] = (char)('1' + next() % 9);
        for (int i = 1; i < nd; i++) {
            if (i == dot) buf[k++] = '.';
            buf[k++] = (char)('0' + next() % 10);
        }
        if (buf[k - 1] == '.') buf[k++] = '0';
        if (next() & 1) k += snprintf(buf + k, size - (size_t)k, "e%d", (int)(next() % 700) - 350);
        buf[k] = 0;
        break;
    }
    default: { /* values around float/double limits and %g printing */
        double d = ldexp((double)(next() % 1000000) + 1, (int)(next() % 2100) - 1100);
        snprintf(buf, size, "%.*g", 1 + (int)(next() % 17), d);
        break;
    }
    }
}

/* The formatting rule written with printf/strtof: the oracle for
 * inf__serve_format_f32 (integral and |v| < 1e7 -> integer, else the first of
 * %.7g/%.8g/%.9g that strtof reads back). */
static int format_ref(float v, char *out, size_t size) {
    if (fabsf(v) < 1e7f && v == (float)(int32_t)v) return snprintf(out, size, "%d", (int)(int32_t)v);
    int n = 0;
    for (int prec = 7; prec <= 9; prec++) {
        n = snprintf(out, size, "%.*g", prec, (double)v);
        if (prec == 9 || strtof(out, NULL) == v) break;
    }
    return n;
}

/* One float: byte-identical to the oracle and read back bit-exactly by strtof
 * (and by the server's own parser).  Returns 1 on success. */
static int check_format_one(float v, char *why, size_t whysize) {
    char got[INF__SERVE_F32_MAX + 1], want[64];
    size_t n = inf__serve_format_f32(v, got);
    got[n] = 0;
    int wn = format_ref(v, want, sizeof want);
    float back = strtof(got, NULL);
    double pd = 0;
    size_t pn = inf__serve_parse_double(got, got + n, &pd);
    if ((size_t)wn != n || memcmp(got, want, n) || back != v /* -0 prints as 0, as before */ || pn != n || (float)pd != v) {
        snprintf(why, whysize, "%.9g: got '%s', printf rule '%s'", (double)v, got, want);
        return 0;
    }
    return 1;
}

static void test_format_f32(void) {
    char why[160] = "";
    long bad = 0, n = 0;
    /* random bit patterns: every exponent, subnormals included */
    for (long i = 0; i < 1500000; i++) {
        uint32_t bits = (uint32_t)next();
        float v;
        memcpy(&v, &bits, sizeof v);
        if (!isfinite(v)) continue;
        n++;
        if (!check_format_one(v, why, sizeof why) && bad++ == 0) printf("  first mismatch: %s\n", why);
    }
    CHECK(bad == 0, "format_f32: %ld random finite float bit patterns match the printf rule and read back exactly", n);
    /* the values models emit: probabilities, scores, small regressions */
    bad = 0;
    for (long i = 0; i < 1000000; i++) {
        float v = (float)((double)(next() >> 11) / 9007199254740992.0);
        if (i % 4 == 1) v = -v * 1000.0f;
        if (i % 4 == 2) v = v * 1e-6f;
        if (i % 4 == 3) v = 1.0f - v;
        if (!check_format_one(v, why, sizeof why) && bad++ == 0) printf("  first mismatch: %s\n", why);
    }
    CHECK(bad == 0, "format_f32: 1M probabilities/scores in [0,1], [-1000,0], [0,1e-6] match and read back exactly");
    /* every float in a few dense ranges, and the edges */
    bad = 0;
    n = 0;
    const float starts[] = {0.1f, 0.5f, 1.0f, 9.99999f, 1e7f, 123456.7f, 1e-5f, 1e-14f, 1e22f, 1e-38f};
    for (size_t s = 0; s < sizeof starts / sizeof starts[0]; s++) {
        float v = starts[s];
        for (int i = 0; i < 40000; i++, n++) {
            if (!check_format_one(v, why, sizeof why) && bad++ == 0) printf("  first mismatch: %s\n", why);
            if (!check_format_one(-v, why, sizeof why) && bad++ == 0) printf("  first mismatch: %s\n", why);
            v = nextafterf(v, INFINITY);
        }
    }
    const float edge[] = {0.0f, -0.0f, 1e-45f, -1e-45f, 1.17549435e-38f, 1.1754942e-38f, 3.40282347e38f,
                          -3.40282347e38f, 9999999.0f, 10000000.0f, -16777216.0f, 2147483648.0f, 0.3f, 1e-4f,
                          9.9999997e-5f, 123456792.0f};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++, n++)
        if (!check_format_one(edge[i], why, sizeof why) && bad++ == 0) printf("  first mismatch: %s\n", why);
    CHECK(bad == 0, "format_f32: %ld consecutive floats around 0.1, 1, 1e7, 1e-14, 1e22, subnormal edge and specials", n);
    char out[INF__SERVE_F32_MAX + 1];
    size_t k = inf__serve_format_f32(0.1f, out);
    out[k] = 0;
    CHECK(!strcmp(out, "0.1"), "0.1f formats as 0.1 (%s)", out);
    k = inf__serve_format_f32(-2.5e-7f, out);
    out[k] = 0;
    CHECK(!strcmp(out, "-2.5e-07"), "-2.5e-7f formats as -2.5e-07 (%s)", out);
}

/* The parsers over the first n characters of s. */
static size_t parse_double_n(const char *s, size_t n, double *d) { return inf__serve_parse_double(s, s + n, d); }
static size_t parse_i64_n(const char *s, size_t n, int64_t *v) { return inf__serve_parse_i64(s, s + n, v); }
static size_t parse_u64_n(const char *s, size_t n, uint64_t *v) { return inf__serve_parse_u64(s, s + n, v); }

int main(void) {
    const long N = 3000000;
    long bad = 0, total = 0, bad_len = 0;
    char buf[96], first_bad[96] = "";
    for (long i = 0; i < N; i++) {
        int kind = (int)(i % 6);
        make(buf, sizeof buf, kind);
        size_t len = strlen(buf);
        double got = 0;
        size_t n = inf__serve_parse_double(buf, buf + len, &got);
        double want = strtod(buf, NULL);
        total++;
        if (n != len || memcmp(&got, &want, sizeof got)) {
            if (!bad) snprintf(first_bad, sizeof first_bad, "%s", buf);
            bad++;
        }
        if (inf__serve_number_len(buf, buf + len) != n) bad_len++; /* the skipper agrees with the parser */
        /* float32 requests: (float) of the double equals (float)strtod */
        if ((float)got != (float)want && !(isnan(got) && isnan(want))) bad++;
    }
    CHECK(bad == 0, "%ld random numbers parse bit-identical to strtod (%ld mismatches%s%s)", total, bad,
          bad ? ", first: " : "", first_bad);
    CHECK(bad_len == 0, "inf__serve_number_len measures the same length as the parser on all %ld (%ld differ)", total,
          bad_len);

    const char *good[] = {"0", "-0", "1", "-1", "0.5", "1e5", "1E+5", "1e-5", "123.456e-7", "9007199254740993",
                          "1.7976931348623157e308", "4.9e-324", "2.2250738585072011e-308", "1e400", "0.000000000000000000000000000001",
                          "123456789012345678901234567890"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        double got = 0, want = strtod(good[i], NULL);
        size_t n = inf__serve_parse_double(good[i], good[i] + strlen(good[i]), &got);
        CHECK(n == strlen(good[i]) && !memcmp(&got, &want, sizeof got), "'%s' parses like strtod (%.17g)", good[i], got);
        CHECK(inf__serve_number_len(good[i], good[i] + strlen(good[i])) == n, "'%s' is skipped whole", good[i]);
    }
    const char *notnum[] = {"+1", ".5", "1.", "01", "-", "NaN", "Infinity", "e5", "1e", "1e+", "--1", ""};
    for (size_t i = 0; i < sizeof notnum / sizeof notnum[0]; i++) {
        double got = 0;
        size_t n = inf__serve_parse_double(notnum[i], notnum[i] + strlen(notnum[i]), &got);
        /* "1." and "1e" consume "1" at most in a lenient parser; JSON rejects them as a whole */
        CHECK(n == 0 && inf__serve_number_len(notnum[i], notnum[i] + strlen(notnum[i])) == 0,
              "'%s' is not a JSON number (parser and skipper)", notnum[i]);
    }
    double d = 0;
    CHECK(parse_double_n("0x10", 4, &d) == 1, "'0x10': only the '0' is a number (the caller rejects the rest)");
    /* bounded: never reads past end */
    CHECK(parse_double_n("12345", 3, &d) == 3 && d == 123.0, "stops at the end pointer");
    int64_t v = 0;
    uint64_t u = 0;
    CHECK(parse_i64_n("-9223372036854775808", 20, &v) == 20 && v == INT64_MIN,
          "INT64_MIN parses");
    CHECK(parse_i64_n("9223372036854775808", 19, &v) == 0, "INT64_MAX+1 is rejected");
    CHECK(parse_u64_n("18446744073709551615", 20, &u) == 20 && u == UINT64_MAX,
          "UINT64_MAX parses");
    CHECK(parse_i64_n("1.5", 3, &v) == 0, "1.5 is not an integer");
    CHECK(parse_i64_n("1e3", 3, &v) == 0, "1e3 is not an integer literal");
    test_format_f32();
    return check_summary("numparse");
}
