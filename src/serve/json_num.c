/*
 * json_num.c -- JSON number parsing for tensor data, the hot loop of a JSON
 * inference request.
 *
 * DESIGN.  One pass over the digits collects up to 19 significant digits in
 * a uint64 mantissa w and a decimal exponent q (value = w * 10^q).  When w
 * fits 53 bits and |q| <= 22, both w and 10^|q| are exact doubles and one
 * IEEE multiplication or division gives the correctly rounded result
 * (Clinger's fast path, the one strtod implementations take first).  When
 * q > 22 but w * 10^(q-22) still fits 53 bits the excess is moved into w.
 * Anything else (more than 19 digits, huge or tiny exponents, big
 * mantissas with negative exponents) is handed to strtod on a NUL-terminated
 * copy, so the result always equals strtod's.  tests/serve/test_numparse.c
 * checks this on millions of random inputs.
 *
 * The grammar is JSON's: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
 * ("+1", ".5", "1.", "01", "NaN" are not numbers).  Callers: kserve_v2.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve.h"

static const double pow10_exact[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                       1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
static const uint64_t pow10_u64[20] = {1ull,
                                       10ull,
                                       100ull,
                                       1000ull,
                                       10000ull,
                                       100000ull,
                                       1000000ull,
                                       10000000ull,
                                       100000000ull,
                                       1000000000ull,
                                       10000000000ull,
                                       100000000000ull,
                                       1000000000000ull,
                                       10000000000000ull,
                                       100000000000000ull,
                                       1000000000000000ull,
                                       10000000000000000ull,
                                       100000000000000000ull,
                                       1000000000000000000ull,
                                       10000000000000000000ull};

/* Validates the JSON number grammar; returns its length or 0. */
static size_t scan_number(const char *s, const char *end) {
    const char *p = s;
    if (p < end && *p == '-') p++;
    if (p >= end) return 0;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && (unsigned)(*p - '0') < 10) p++;
    } else {
        return 0;
    }
    if (p < end && *p == '.') {
        p++;
        if (p >= end || (unsigned)(*p - '0') >= 10) return 0;
        while (p < end && (unsigned)(*p - '0') < 10) p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || (unsigned)(*p - '0') >= 10) return 0;
        while (p < end && (unsigned)(*p - '0') < 10) p++;
    }
    return (size_t)(p - s);
}

static double slow_path(const char *s, size_t n) {
    char small[128];
    char *copy = n < sizeof small ? small : malloc(n + 1);
    if (!copy) return 0.0; /* cannot happen for sane bodies; keep going */
    memcpy(copy, s, n);
    copy[n] = 0;
    double v = strtod(copy, NULL);
    if (copy != small) free(copy);
    return v;
}

size_t inf__serve_parse_double(const char *s, const char *end, double *out) {
    const char *p = s;
    int neg = 0;
    if (p < end && *p == '-') neg = 1, p++;
    if (p >= end || (unsigned)(*p - '0') >= 10) return 0;
    uint64_t w = 0;
    int nd = 0;      /* significant digits taken into w */
    int dropped = 0; /* significant digits beyond 19 (integer part: scale up) */
    int64_t q = 0;
    int lost = 0;    /* a nonzero digit did not fit */
    if (*p == '0') {
        p++;
        if (p < end && (unsigned)(*p - '0') < 10) return 0; /* leading zero */
    } else {
        while (p < end && (unsigned)(*p - '0') < 10) {
            if (nd < 19) {
                w = w * 10 + (uint64_t)(*p - '0');
                nd++;
            } else {
                dropped++;
                if (*p != '0') lost = 1;
            }
            p++;
        }
    }
    q = dropped;
    if (p < end && *p == '.') {
        p++;
        if (p >= end || (unsigned)(*p - '0') >= 10) return 0;
        while (p < end && (unsigned)(*p - '0') < 10) {
            if (nd < 19) {
                if (w || *p != '0') { /* leading zeros of 0.000x are not significant */
                    w = w * 10 + (uint64_t)(*p - '0');
                    nd++;
                }
                q--;
            } else if (*p != '0') {
                lost = 1;
            }
            p++;
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        int eneg = 0;
        if (p < end && (*p == '+' || *p == '-')) eneg = *p == '-', p++;
        if (p >= end || (unsigned)(*p - '0') >= 10) return 0;
        int64_t e = 0;
        while (p < end && (unsigned)(*p - '0') < 10) {
            if (e < 100000000) e = e * 10 + (*p - '0');
            p++;
        }
        q += eneg ? -e : e;
    }
    size_t n = (size_t)(p - s);
    if (w == 0 && !lost) {
        *out = neg ? -0.0 : 0.0;
        return n;
    }
    if (!lost && w <= (1ull << 53)) {
        double d = (double)w;
        if (q >= 0 && q <= 22) {
            *out = neg ? -(d * pow10_exact[q]) : d * pow10_exact[q];
            return n;
        }
        if (q < 0 && q >= -22) {
            *out = neg ? -(d / pow10_exact[-q]) : d / pow10_exact[-q];
            return n;
        }
        if (q > 22 && q <= 22 + 19) {
            uint64_t m = pow10_u64[q - 22];
            if (w <= (1ull << 53) / m) {
                d = (double)(w * m);
                *out = neg ? -(d * 1e22) : d * 1e22;
                return n;
            }
        }
    }
    *out = slow_path(s, n);
    return n;
}

size_t inf__serve_parse_i64(const char *s, const char *end, int64_t *out) {
    size_t n = scan_number(s, end);
    if (!n) return 0;
    const char *p = s;
    int neg = 0;
    if (*p == '-') neg = 1, p++;
    uint64_t v = 0;
    for (; p < s + n; p++) {
        if ((unsigned)(*p - '0') >= 10) return 0; /* fraction or exponent */
        if (v > (UINT64_MAX - 9) / 10) return 0;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX) return 0;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return n;
}

size_t inf__serve_parse_u64(const char *s, const char *end, uint64_t *out) {
    size_t n = scan_number(s, end);
    if (!n || *s == '-') return 0;
    uint64_t v = 0;
    for (const char *p = s; p < s + n; p++) {
        if ((unsigned)(*p - '0') >= 10) return 0;
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) return 0;
        v = v * 10 + d;
    }
    *out = v;
    return n;
}
