/*
 * numfmt.h -- numbers and timestamps as text without printf, for the sinks'
 * hot loops (a JSON line, a CSV cell, a prediction-log row): printf's %.17g
 * costs ~3,500 instructions a double, this ~150 (issue 23's logging cost).
 *
 * inf__fmt_g17 writes exactly what snprintf(buf, n, "%.17g", v) writes,
 * byte for byte (the same 17 significant digits, rounded half to even on
 * exact ties as glibc does, the same fixed/exponent choice and trailing-zero
 * removal): the exact decimal value is computed with 128-bit integers when
 * it fits (|v| within about 1e-6 .. 1e38, normal numbers), and snprintf
 * does the rest.  tests/io/test_numfmt.c checks it against snprintf.
 */
#ifndef INF_IO_NUMFMT_H
#define INF_IO_NUMFMT_H

#include <stddef.h>
#include <stdint.h>

#define INF__FMT_NUM_MAX 32 /* bytes a formatted number needs, with its NUL */

/* %.17g of v into out (INF__FMT_NUM_MAX bytes); returns the length. */
int inf__fmt_g17(double v, char *out);
/* %lld of v into out (INF__FMT_NUM_MAX bytes); returns the length. */
int inf__fmt_i64(int64_t v, char *out);
/* v as exactly `width` decimal digits, zero-padded on the left (v below
 * 10^width, width <= 20); returns width.  No NUL. */
int inf__fmt_digits(uint64_t v, int width, char *out);

#endif /* INF_IO_NUMFMT_H */
