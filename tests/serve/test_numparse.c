/*
 * test_numparse.c -- the JSON number parser of the server (src/serve/json_num.c)
 * against strtod: millions of random values in the shapes requests carry
 * (%.9g floats, %.17g doubles, short decimals, integers, exponents, long
 * mantissas, subnormals, huge values), bit-for-bit, plus the JSON grammar
 * (what is and is not a number) and the integer parsers' ranges.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve.h"

static int n_pass, n_fail;
#define CHECK(cond, ...)                                  \
    do {                                                  \
        if (cond) n_pass++, printf("PASS ");              \
        else n_fail++, printf("FAIL ");                   \
        printf(__VA_ARGS__);                              \
        printf("\n");                                     \
    } while (0)

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

int main(void) {
    const long N = 3000000;
    long bad = 0, total = 0;
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
        /* float32 requests: (float) of the double equals (float)strtod */
        if ((float)got != (float)want && !(isnan(got) && isnan(want))) bad++;
    }
    CHECK(bad == 0, "%ld random numbers parse bit-identical to strtod (%ld mismatches%s%s)", total, bad,
          bad ? ", first: " : "", first_bad);

    const char *good[] = {"0", "-0", "1", "-1", "0.5", "1e5", "1E+5", "1e-5", "123.456e-7", "9007199254740993",
                          "1.7976931348623157e308", "4.9e-324", "2.2250738585072011e-308", "1e400", "0.000000000000000000000000000001",
                          "123456789012345678901234567890"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        double got = 0, want = strtod(good[i], NULL);
        size_t n = inf__serve_parse_double(good[i], good[i] + strlen(good[i]), &got);
        CHECK(n == strlen(good[i]) && !memcmp(&got, &want, sizeof got), "'%s' parses like strtod (%.17g)", good[i], got);
    }
    const char *notnum[] = {"+1", ".5", "1.", "01", "-", "NaN", "Infinity", "e5", "1e", "1e+", "--1", ""};
    for (size_t i = 0; i < sizeof notnum / sizeof notnum[0]; i++) {
        double got = 0;
        size_t n = inf__serve_parse_double(notnum[i], notnum[i] + strlen(notnum[i]), &got);
        /* "1." and "1e" consume "1" at most in a lenient parser; JSON rejects them as a whole */
        CHECK(n == 0, "'%s' is not a JSON number", notnum[i]);
    }
    double d = 0;
    CHECK(inf__serve_parse_double("0x10", "0x10" + 4, &d) == 1, "'0x10': only the '0' is a number (the caller rejects the rest)");
    /* bounded: never reads past end */
    CHECK(inf__serve_parse_double("12345", "12345" + 3, &d) == 3 && d == 123.0, "stops at the end pointer");
    int64_t v = 0;
    uint64_t u = 0;
    CHECK(inf__serve_parse_i64("-9223372036854775808", "-9223372036854775808" + 20, &v) == 20 && v == INT64_MIN,
          "INT64_MIN parses");
    CHECK(inf__serve_parse_i64("9223372036854775808", "9223372036854775808" + 19, &v) == 0, "INT64_MAX+1 is rejected");
    CHECK(inf__serve_parse_u64("18446744073709551615", "18446744073709551615" + 20, &u) == 20 && u == UINT64_MAX,
          "UINT64_MAX parses");
    CHECK(inf__serve_parse_i64("1.5", "1.5" + 3, &v) == 0, "1.5 is not an integer");
    CHECK(inf__serve_parse_i64("1e3", "1e3" + 3, &v) == 0, "1e3 is not an integer literal");
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
