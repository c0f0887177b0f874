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
 *
 * The file also formats float32 outputs for JSON responses (see
 * inf__serve_format_f32 below): exact, and without printf on the common path.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
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

static const char *digits(const char *p, const char *end) {
    while (p < end && (unsigned)(*p - '0') < 10) p++;
    return p;
}

size_t inf__serve_number_len(const char *s, const char *end) {
    const char *p = s;
    if (p < end && *p == '-') p++;
    if (p >= end || (unsigned)(*p - '0') >= 10) return 0;
    if (*p == '0') {
        p++;
        if (p < end && (unsigned)(*p - '0') < 10) return 0; /* leading zero */
    } else {
        p = digits(p, end);
    }
    if (p < end && *p == '.') {
        p++;
        if (p >= end || (unsigned)(*p - '0') >= 10) return 0;
        p = digits(p, end);
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || (unsigned)(*p - '0') >= 10) return 0;
        p = digits(p, end);
    }
    return (size_t)(p - s);
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

/* ---- float32 formatting ---------------------------------------------------
 *
 * inf__serve_format_f32 writes what the reference rule below writes, byte for
 * byte, without printf or strtof on the common path:
 *
 *   integral and |v| < 1e7  -> the integer;  else the first of %.7g, %.8g,
 *   %.9g that strtof reads back to v (%.9g always does for a float).
 *
 * FAST PATH.  For 1e-14 <= |v| < 1e22 the P-digit decimal D * 10^k nearest
 * to v is found in double arithmetic: r = |v| * 10^s with 10^s exact
 * (|s| <= 22), one rounding, so r is within 2^-53 relative of the true
 * product; when r's fraction is within 1e-6 of one half the nearest integer
 * is not certain and the slow path decides.  The read-back D * 10^k is one
 * correctly rounded IEEE operation (D < 2^53, |k| <= 22); its float rounding
 * equals the exact value's unless it lands exactly on a midpoint between two
 * floats (no double lies between the exact value and its rounding), and that
 * case goes to the slow path too.  tests/serve/test_numparse.c compares this
 * against the printf rule and strtof on millions of random floats. */
static const uint32_t pow10_u32[10] = {1u, 10u, 100u, 1000u, 10000u, 100000u, 1000000u,
                                       10000000u, 100000000u, 1000000000u};

static size_t format_f32_slow(float v, char *out) {
    char tmp[32];
    int n = 0;
    for (int prec = 7; prec <= 9; prec++) {
        n = snprintf(tmp, sizeof tmp, "%.*g", prec, (double)v);
        if (prec == 9 || strtof(tmp, NULL) == v) break;
    }
    memcpy(out, tmp, (size_t)n);
    return (size_t)n;
}

static double scale10(double a, int s) { return s >= 0 ? a * pow10_exact[s] : a / pow10_exact[-s]; }

/* 1 if the double x lies exactly halfway between two adjacent floats. */
static int is_float_midpoint(double x) {
    float f = (float)x;
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    uint32_t ub = bits + 1, db = bits - 1;
    float up, dn;
    memcpy(&up, &ub, sizeof up);
    memcpy(&dn, &db, sizeof dn);
    return x == ((double)f + (double)up) * 0.5 || x == ((double)f + (double)dn) * 0.5;
}

/* The P-digit decimal nearest to a (> 0): *d in [10^(P-1), 10^P), *x the
 * decimal exponent of its first digit (%g's X).  0 when not certain. */
static int nearest_digits(double a, int p, int x_guess, uint32_t *d, int *x) {
    int e = x_guess;
    for (int tries = 0; tries < 3; tries++) {
        int s = p - 1 - e;
        if (s < -22 || s > 22) return 0;
        double r = scale10(a, s);
        double fl = floor(r);
        double frac = r - fl;
        if (fabs(frac - 0.5) < 1e-6) return 0;
        double di = frac > 0.5 ? fl + 1 : fl;
        if (di >= (double)pow10_u32[p]) {
            e++;
        } else if (di < (double)pow10_u32[p - 1]) {
            e--;
        } else {
            *d = (uint32_t)di;
            *x = e;
            return 1;
        }
    }
    return 0;
}

/* %g layout of digits d (p of them) with exponent x, trailing zeros cut. */
static size_t layout_g(int neg, uint32_t d, int p, int x, char *out) {
    char dig[10];
    int nd = p;
    while (nd > 1 && d % 10 == 0) d /= 10, nd--;
    for (int i = nd - 1; i >= 0; i--) dig[i] = (char)('0' + d % 10), d /= 10;
    size_t k = 0;
    if (neg) out[k++] = '-';
    if (x < p && x >= -4) {
        if (x >= 0) {
            for (int i = 0; i <= x; i++) out[k++] = i < nd ? dig[i] : '0';
            if (nd > x + 1) {
                out[k++] = '.';
                for (int i = x + 1; i < nd; i++) out[k++] = dig[i];
            }
        } else {
            out[k++] = '0';
            out[k++] = '.';
            for (int i = 0; i < -x - 1; i++) out[k++] = '0';
            for (int i = 0; i < nd; i++) out[k++] = dig[i];
        }
    } else {
        out[k++] = dig[0];
        if (nd > 1) {
            out[k++] = '.';
            for (int i = 1; i < nd; i++) out[k++] = dig[i];
        }
        out[k++] = 'e';
        out[k++] = x < 0 ? '-' : '+';
        int ax = x < 0 ? -x : x;
        if (ax >= 100) out[k++] = (char)('0' + ax / 100);
        out[k++] = (char)('0' + ax / 10 % 10);
        out[k++] = (char)('0' + ax % 10);
    }
    return k;
}

static size_t format_u32(int neg, uint32_t u, char *out) {
    char tmp[12];
    int i = 12;
    do {
        tmp[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    size_t k = 0;
    if (neg) out[k++] = '-';
    memcpy(out + k, tmp + i, (size_t)(12 - i));
    return k + (size_t)(12 - i);
}

size_t inf__serve_format_f32(float v, char out[INF__SERVE_F32_MAX]) {
    if (fabsf(v) < 1e7f && v == (float)(int32_t)v) {
        int32_t i = (int32_t)v;
        return format_u32(i < 0, i < 0 ? (uint32_t)(-(int64_t)i) : (uint32_t)i, out);
    }
    double a = fabs((double)v);
    if (!(a >= 1e-14 && a < 1e22)) return format_f32_slow(v, out);
    int e2;
    frexp(a, &e2);
    int x_guess = (int)floor((double)(e2 - 1) * 0.30102999566398120);
    for (int p = 7; p <= 9; p++) {
        uint32_t d;
        int x;
        if (!nearest_digits(a, p, x_guess, &d, &x)) return format_f32_slow(v, out);
        if (p < 9) {
            double back = scale10((double)d, x - p + 1);
            if (is_float_midpoint(back)) return format_f32_slow(v, out);
            if ((float)back != (float)a) continue;
        }
        return layout_g(v < 0, d, p, x, out);
    }
    return format_f32_slow(v, out); /* not reached */
}
