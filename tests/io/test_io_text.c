/*
 * test_io_text.c -- the sinks' text without printf (issue 23's logging cost):
 *   - src/io/numfmt.c against the C library's printf (the oracle):
 *     inf__fmt_g17 must write exactly snprintf's "%.17g" and inf__fmt_i64
 *     exactly "%lld", for random bit patterns, decimal-looking values (the
 *     features a prediction log sees), integers, powers of ten, halfway
 *     cases and the edges (zeros, subnormals, inf, nan, extremes);
 *   - inf_format_timestamp against gmtime_r + strftime;
 *   - inf_record_batch_row_to_json's string escaping (8 bytes at a time)
 *     parsed back by cJSON (the oracle) for random strings of controls,
 *     quotes, backslashes and UTF-8 bytes.
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include <cjson/cJSON.h>

#include "infera/io.h"
#include "io/numfmt.h"

static uint64_t state = 0x243f6a8885a308d3ULL;
static uint64_t next(void) { /* xorshift64* */
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 2685821657736338717ULL;
}

static int failures;

static void check_double(double v) {
    char want[64], got[INF__FMT_NUM_MAX];
    int wn = snprintf(want, sizeof want, "%.17g", v);
    int gn = inf__fmt_g17(v, got);
    if (wn != gn || strcmp(want, got)) {
        if (failures++ < 20) fprintf(stderr, "g17(%a): got '%s' (%d), want '%s' (%d)\n", v, got, gn, want, wn);
    }
}

static void check_int(int64_t v) {
    char want[64], got[INF__FMT_NUM_MAX];
    int wn = snprintf(want, sizeof want, "%lld", (long long)v);
    int gn = inf__fmt_i64(v, got);
    if (wn != gn || strcmp(want, got)) {
        if (failures++ < 20) fprintf(stderr, "i64(%" PRId64 "): got '%s', want '%s'\n", v, got, want);
    }
}

static void check_timestamp(int64_t us) {
    char want[64], got[64];
    time_t secs = (time_t)(us >= 0 ? us / 1000000 : -((-us + 999999) / 1000000));
    int64_t frac = us - (int64_t)secs * 1000000;
    struct tm tm;
    gmtime_r(&secs, &tm);
    size_t n = strftime(want, sizeof want, "%Y-%m-%dT%H:%M:%S", &tm);
    if (frac) snprintf(want + n, sizeof want - n, ".%06dZ", (int)frac);
    else snprintf(want + n, sizeof want - n, "Z");
    inf_format_timestamp(us, got, sizeof got);
    if (strcmp(want, got) && failures++ < 20) fprintf(stderr, "timestamp %lld: got '%s', want '%s'\n", (long long)us, got, want);
}

static int collect(const char *bytes, size_t n, void *user) {
    char **buf = user;
    size_t have = strlen(*buf);
    char *p = realloc(*buf, have + n + 1);
    if (!p) return -1;
    memcpy(p + have, bytes, n);
    p[have + n] = 0;
    *buf = p;
    return 0;
}

static void check_json_string(const char *s, size_t len) {
    inf_record_batch *b;
    int row, f;
    char *text = calloc(1, 1);
    if (!text || inf_record_batch_new(&b) || inf_record_batch_add_row(b, &row) ||
        inf_record_batch_add_field(b, "s", &f) || inf_record_batch_set_string(b, row, f, s, len) ||
        inf_record_batch_row_to_json(b, row, NULL, collect, &text)) {
        fprintf(stderr, "FAIL: out of memory\n");
        exit(1);
    }
    cJSON *j = cJSON_Parse(text);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "s");
    if ((!cJSON_IsString(v) || strlen(v->valuestring) != len || memcmp(v->valuestring, s, len)) && failures++ < 20)
        fprintf(stderr, "json string of %zu bytes: '%s' does not parse back\n", len, text);
    cJSON_Delete(j);
    inf_record_batch_free(b);
    free(text);
}

int main(void) {
    const double edges[] = {0.0, -0.0, 1.0, -1.0, 0.1, 0.5, 1e-4, 9.9999999999999995e-5, 1e-5, 1e16, 1e17,
                            9.9999999999999998e16, 123456789012345678.0, DBL_MAX, -DBL_MAX, DBL_MIN, DBL_TRUE_MIN,
                            5e-324, 1e-310, INFINITY, -INFINITY, NAN, 1e22, 1e23, 1e38, 1e39, 1e-6, 1e-7,
                            0.046557776120139567, 40.7337, 0.0064497343264520168, 2.8285};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) check_double(edges[i]);
    for (int k = -330; k <= 310; k++) {
        double p = pow(10.0, k);
        check_double(p);
        check_double(nextafter(p, 0));
        check_double(nextafter(p, INFINITY));
    }
    for (int i = 0; i < 400000; i++) {
        uint64_t b = next();
        double v;
        memcpy(&v, &b, sizeof v);
        check_double(v);                                           /* any bit pattern */
        check_double((double)(int64_t)(next() % 2000000001) / 10000.0 - 100000.0); /* 4-decimal data */
        check_double(ldexp((double)(next() >> 11), (int)(next() % 160) - 110));    /* 1e-16 .. 1e32 */
        check_double((double)(next() >> (next() % 64)));           /* integers up to 2^64: ties at 17 digits */
        check_double((float)((double)(next() >> 11) * 0x1.0p-53)); /* float32 outputs (probabilities) */
        check_double((float)((double)(int64_t)(next() % 2000000001) / 10000.0 - 100000.0)); /* float32 features */
        check_double(-(double)(next() >> (11 + next() % 53)));                /* negative integers below 2^53 */
        check_double(ldexp((double)(next() >> 11), (int)(next() % 10) - 9));  /* 1e13 .. 1e16 with a fraction */
        check_double(ldexp((double)(next() >> 11), (int)(next() % 16) - 68)); /* 1e-5 .. 1e-1 (0.000ddd) */
        check_int((int64_t)next() >> (next() % 64));
    }
    for (int i = 0; i < 200000; i++) {
        int64_t us = (int64_t)(next() % 253402300800ULL) * 1000000; /* years 1970 .. 9999 */
        check_timestamp(us);
        check_timestamp(us + (int64_t)(next() % 1000000));
    }
    const char alphabet[] = "ab\"\\\n\t\r\x01\x1f \x7f\xc3\xa9/x";
    for (int i = 0; i < 20000; i++) {
        char s[48];
        size_t len = next() % sizeof s;
        for (size_t k = 0; k < len; k++) s[k] = alphabet[next() % (sizeof alphabet - 1)];
        check_json_string(s, len);
    }
    check_int(INT64_MIN);
    check_int(INT64_MAX);
    check_int(0);
    if (failures) {
        fprintf(stderr, "FAIL: %d mismatches with printf\n", failures);
        return 1;
    }
    printf("io text: %%.17g, %%lld and timestamps equal printf/strftime; JSON strings parse back\n");
    return 0;
}
