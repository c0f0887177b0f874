/*
 * test_io.c -- records, timestamps, and the csv / jsonl / sqlite / npy
 * sources and sinks (include/infera/io.h) on real files.
 * Prints one line per check and "N passed, M failed".
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "infera/io.h"
#include "infera/tensor.h"
#include "io/record_int.h" /* inf__parse_double */

static int n_pass, n_fail;
static char dir[] = "/tmp/infera-io-XXXXXX";

static void check(int ok, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("%s: ", ok ? "PASS" : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    if (ok) n_pass++;
    else n_fail++;
}

static void write_file(const char *name, const char *text) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    fputs(text, f);
    fclose(f);
}

static const char *uri(const char *scheme, const char *name, const char *query) {
    static char buf[4][600];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s:%s/%s%s", scheme, dir, name, query ? query : "");
    return buf[k];
}

static int is_str(const inf_value *v, const char *s) {
    return v->type == INF_FIELD_STRING && v->u.s.len == strlen(s) && !memcmp(v->u.s.ptr, s, v->u.s.len);
}

static void test_timestamps(void) {
    int64_t us;
    char buf[64];
    check(!inf_parse_timestamp("2024-03-01T12:30:00Z", 20, &us) && us == 1709296200000000LL, "ISO-8601 with Z");
    check(!inf_parse_timestamp("2024-03-01 14:30:00.25+02:00", 28, &us) && us == 1709296200250000LL,
          "space separator, fraction, +02:00 offset");
    check(!inf_parse_timestamp("2024-03-01", 10, &us) && us == 1709251200000000LL, "date only = midnight UTC");
    check(!inf_parse_timestamp("-86399", 6, &us) && us == -86399000000LL, "epoch seconds, negative");
    check(inf_parse_timestamp("2024-13-01", 10, &us) != 0 && inf_parse_timestamp("yesterday", 9, &us) != 0,
          "bad month and text are rejected");
    check(!strcmp(inf_format_timestamp(1709296200250000LL, buf, sizeof buf), "2024-03-01T12:30:00.250000Z") &&
              !strcmp(inf_format_timestamp(-1000000, buf, sizeof buf), "1969-12-31T23:59:59Z"),
          "formatting, also before 1970");
    check(!strcmp(inf_io_redact_uri("postgresql://u:secret@h:5432/db?table=t", buf, sizeof buf),
                  "postgresql://u:***@h:5432/db?table=t") &&
              !strstr(inf_io_redact_uri("redis://h:1/0?password=abc&x=1", buf, sizeof buf), "abc"),
          "credentials redacted from URIs");
}

static void test_csv(void) {
    write_file("a.csv", "\xEF\xBB\xBFid,n,x,s,b\r\n"
                        "1,42,2.5,plain,true\r\n"
                        "2,-7,1e-3,\"with, comma\",false\r\n"
                        "3,,nan,\"multi\nline \"\"quoted\"\"\",\r\n"
                        "4,1,2,3,4,5\n"
                        "5,99999999999999999999,x,\"007\",\n"
                        "6,1,2,last");
    inf_source *src;
    inf_error err;
    inf_source_options so = {3, NULL};
    inf_status st = inf_source_open(uri("csv", "a.csv", NULL), &so, &src, &err);
    check(st == INF_OK, "csv source opens (%s)", st ? err.message : "ok");
    if (st) return;
    inf_record_batch *b;
    inf_record_batch_new(&b);
    int eof = 0;
    st = inf_source_next(src, b, &eof, &err);
    check(st == INF_OK && inf_record_batch_n_rows(b) == 3 && !eof, "first batch of 3 (max_rows)");
    check(!strcmp(inf_record_batch_field_name(b, 0), "id"), "BOM stripped from the header");
    const inf_value *v = inf_record_batch_get(b, 0, 1);
    check(v->type == INF_FIELD_INT && v->u.i == 42, "integer cell -> int");
    v = inf_record_batch_get(b, 1, 2);
    check(v->type == INF_FIELD_FLOAT && v->u.f == 1e-3, "exponent cell -> float");
    check(inf_record_batch_get(b, 0, 4)->type == INF_FIELD_BOOL && inf_record_batch_get(b, 0, 4)->u.b == 1, "true -> bool");
    check(is_str(inf_record_batch_get(b, 1, 3), "with, comma"), "quoted comma");
    check(is_str(inf_record_batch_get(b, 2, 3), "multi\nline \"quoted\""), "quoted newline and doubled quotes");
    check(inf_record_batch_get(b, 2, 1)->type == INF_FIELD_NULL && isnan(inf_record_batch_get(b, 2, 2)->u.f) &&
              inf_record_batch_get(b, 2, 4)->type == INF_FIELD_NULL,
          "empty cells -> null, nan -> float NaN");
    st = inf_source_next(src, b, &eof, &err);
    check(st == INF_EFORMAT && strstr(err.message, "line 6: more cells than the 5 header columns"),
          "too many cells: error with the line number (%s)", err.message);
    st = inf_source_next(src, b, &eof, &err);
    check(st == INF_OK && eof && inf_record_batch_n_rows(b) == 2, "reading goes on after the bad record; EOF");
    check(inf_record_batch_get(b, 0, 1)->type == INF_FIELD_FLOAT && is_str(inf_record_batch_get(b, 0, 3), "007"),
          "a 20-digit integer (beyond int64 parsing) reads as float; quoted digits stay a string");
    check(is_str(inf_record_batch_get(b, 1, 3), "last") && inf_record_batch_get(b, 1, 4)->type == INF_FIELD_NULL,
          "last line without newline; missing trailing cells -> null");
    inf_source_close(src);

    /* write what we read, read it back */
    inf_sink *sink;
    inf_record_batch_reset(b);
    int f0, f1, f2, f3, r;
    inf_record_batch_add_field(b, "s", &f0);
    inf_record_batch_add_field(b, "x", &f1);
    inf_record_batch_add_field(b, "t", &f2);
    inf_record_batch_add_field(b, "i", &f3);
    inf_record_batch_add_row(b, &r);
    inf_record_batch_set_string(b, r, f0, "a \"b\",\nc", 8);
    inf_record_batch_set_float(b, r, f1, 0.1);
    inf_record_batch_set_timestamp(b, r, f2, 1709296200000000LL);
    inf_record_batch_set_int(b, r, f3, -3);
    st = inf_sink_open(uri("csv", "out.csv", NULL), NULL, &sink, &err);
    if (!st) st = inf_sink_write(sink, b, &err);
    if (!st) st = inf_sink_close(sink, &err);
    check(st == INF_OK, "csv sink writes (%s)", st ? err.message : "ok");
    inf_record_batch *c;
    inf_record_batch_new(&c);
    inf_source_open(uri("csv", "out.csv", NULL), NULL, &src, &err);
    inf_source_next(src, c, &eof, &err);
    inf_source_close(src);
    check(inf_record_batch_n_rows(c) == 1 && is_str(inf_record_batch_get(c, 0, 0), "a \"b\",\nc") &&
              inf_record_batch_get(c, 0, 1)->u.f == 0.1 && is_str(inf_record_batch_get(c, 0, 2), "2024-03-01T12:30:00Z") &&
              inf_record_batch_get(c, 0, 3)->u.i == -3,
          "csv round trip: quoting, exact floats, ISO timestamps, ints");
    inf_record_batch_free(b);
    inf_record_batch_free(c);
}

/* An empty header cell (pandas writes one for its index column) names a field "", also as the
 * first cell of the file (fuzz_record_source, regressions/records-empty-header-cell.csv). */
static void test_csv_empty_header_cell(void) {
    write_file("e.csv", ",a\n1,2\n");
    inf_source *src;
    inf_error err;
    inf_status st = inf_source_open(uri("csv", "e.csv", NULL), NULL, &src, &err);
    check(st == INF_OK, "csv with an empty first header cell opens (%s)", st ? err.message : "ok");
    if (st)
        return;
    inf_record_batch *b;
    inf_record_batch_new(&b);
    int eof = 0;
    st = inf_source_next(src, b, &eof, &err);
    check(st == INF_OK && inf_record_batch_n_rows(b) == 1 && !strcmp(inf_record_batch_field_name(b, 0), "") &&
              inf_record_batch_get(b, 0, 0)->u.i == 1,
          "the empty header cell names field \"\" holding 1");
    inf_record_batch_free(b);
    inf_source_close(src);
}

static void test_jsonl(void) {
    write_file("a.jsonl", "{\"a\": 1, \"b\": \"x\", \"c\": [1,2]}\n\n{\"a\": 2.5, \"d\": null, \"e\": true}\n{bad\n{\"a\": 3}\n");
    inf_source *src;
    inf_error err;
    inf_record_batch *b;
    inf_record_batch_new(&b);
    int eof = 0;
    inf_status st = inf_source_open(uri("jsonl", "a.jsonl", NULL), NULL, &src, &err);
    if (!st) st = inf_source_next(src, b, &eof, &err);
    check(st == INF_OK && inf_record_batch_n_rows(b) == 2 && !eof, "jsonl: the records before a bad line come first");
    int fa = inf_record_batch_find_field(b, "a"), fc = inf_record_batch_find_field(b, "c"),
        fe = inf_record_batch_find_field(b, "e");
    check(inf_record_batch_get(b, 0, fa)->type == INF_FIELD_INT && inf_record_batch_get(b, 1, fa)->u.f == 2.5 &&
              is_str(inf_record_batch_get(b, 0, fc), "[1,2]") && inf_record_batch_get(b, 1, fe)->u.b == 1 &&
              inf_record_batch_get(b, 0, fe)->type == INF_FIELD_NULL,
          "jsonl types: int, float, nested JSON as text, bool; absent field -> null in earlier rows");
    st = inf_source_next(src, b, &eof, &err);
    check(st == INF_EFORMAT && strstr(err.message, "line 4"), "jsonl: bad line reported with its number (%s)", err.message);
    st = inf_source_next(src, b, &eof, &err);
    check(st == INF_OK && eof && inf_record_batch_n_rows(b) == 1, "jsonl: reading goes on after it");
    inf_source_close(src);
    inf_record_batch_free(b);
}

static void test_sqlite(void) {
    inf_record_batch *b;
    inf_record_batch_new(&b);
    int fid, fx, fs, fb, r;
    inf_error err;
    inf_record_batch_add_field(b, "id", &fid);
    inf_record_batch_add_field(b, "x", &fx);
    inf_record_batch_add_field(b, "s", &fs);
    inf_record_batch_add_field(b, "b", &fb);
    for (int i = 0; i < 3; i++) {
        inf_record_batch_add_row(b, &r);
        inf_record_batch_set_int(b, r, fid, i);
        if (i != 1) inf_record_batch_set_float(b, r, fx, i * 1.5);
        inf_record_batch_set_string(b, r, fs, "v", 1);
        inf_record_batch_set_bool(b, r, fb, i & 1);
    }
    inf_sink *sink;
    inf_sink_options so = {0, "id", 0};
    inf_status st = inf_sink_open(uri("sqlite", "o.db", "?table=preds"), &so, &sink, &err);
    if (!st) st = inf_sink_write(sink, b, &err);
    if (!st) st = inf_sink_commit(sink, &err);
    if (!st) st = inf_sink_write(sink, b, &err); /* a resumed job writes the same keys again */
    if (!st) st = inf_sink_close(sink, &err);
    check(st == INF_OK, "sqlite sink creates the table and writes twice (%s)", st ? err.message : "ok");
    char path[512];
    snprintf(path, sizeof path, "%s/o.db", dir);
    sqlite3 *db;
    sqlite3_open(path, &db);
    sqlite3_stmt *s;
    sqlite3_prepare_v2(db, "SELECT sql, (SELECT count(*) FROM preds) FROM sqlite_master WHERE name='preds'", -1, &s, NULL);
    int ok = sqlite3_step(s) == SQLITE_ROW;
    const char *sql = ok ? (const char *)sqlite3_column_text(s, 0) : "";
    check(ok && strstr(sql, "\"id\" INTEGER PRIMARY KEY") && strstr(sql, "\"x\" REAL") && strstr(sql, "\"s\" TEXT") &&
              strstr(sql, "\"b\" INTEGER"),
          "column types from the first batch: %s", sql);
    check(ok && sqlite3_column_int(s, 1) == 3, "keyed writes are upserts: 3 rows after writing 3 twice");
    sqlite3_finalize(s);
    sqlite3_close(db);
    inf_source *src;
    int eof;
    inf_record_batch_reset(b);
    st = inf_source_open(uri("sqlite", "o.db", "?query=SELECT%20id,%20x%20FROM%20preds%20ORDER%20BY%20id"), NULL, &src, &err);
    if (!st) st = inf_source_next(src, b, &eof, &err);
    check(st == INF_OK && inf_record_batch_n_rows(b) == 3 && inf_record_batch_get(b, 1, 1)->type == INF_FIELD_NULL &&
              inf_record_batch_get(b, 2, 1)->u.f == 3.0 && inf_record_batch_get(b, 2, 0)->type == INF_FIELD_INT,
          "sqlite query source (URL-encoded SQL): storage classes kept, NULL -> null");
    inf_source_close(src);
    st = inf_source_open(uri("sqlite", "o.db", "?table=nope"), NULL, &src, &err);
    check(st != INF_OK && strstr(err.message, "nope"), "missing table: error names it (%s)", err.message);
    st = inf_source_open("parquet:/x", NULL, &src, &err);
    check(st == INF_EINVAL && strstr(err.message, "unknown scheme 'parquet'"), "unknown scheme rejected");

    /* npy sink: numeric fields only */
    st = inf_sink_open(uri("npy", "m.npy", NULL), NULL, &sink, &err);
    inf_record_batch_reset(b);
    inf_record_batch_add_field(b, "id", &fid);
    inf_record_batch_add_field(b, "x", &fx);
    inf_record_batch_add_field(b, "y", &fs);
    for (int i = 0; i < 4; i++) {
        inf_record_batch_add_row(b, &r);
        char id[8];
        snprintf(id, sizeof id, "r%d", i);
        inf_record_batch_set_string(b, r, fid, id, strlen(id));
        inf_record_batch_set_float(b, r, fx, i + 0.5);
        if (i) inf_record_batch_set_int(b, r, fs, i);
    }
    if (!st) st = inf_sink_write(sink, b, &err);
    if (!st) st = inf_sink_write(sink, b, &err);
    if (!st) st = inf_sink_close(sink, &err);
    inf_tensor *t = NULL;
    snprintf(path, sizeof path, "%s/m.npy", dir);
    if (!st) st = inf_tensor_load_npy(path, &t, &err);
    check(st == INF_OK && t->dtype == INF_DTYPE_F32 && t->dims[0] == 8 && t->dims[1] == 2 && ((float *)t->data)[2] == 1.5f &&
              isnan(((float *)t->data)[1]),
          "npy sink: float32 [8, 2], the string id left out, null -> NaN");
    inf_tensor_free(t);
    inf_record_batch_free(b);
}

/* The SQLite sink keeps a value bound while the next row has the same one
 * (bindings survive a reset): runs of equal values, a value coming back,
 * null <-> value, NaN, one timestamp shared by rows, across two writes --
 * read back with sqlite3 itself. */
static void test_sqlite_value_runs(void) {
    inf_record_batch *b;
    inf_record_batch_new(&b);
    int fs, fx, ft, fi, r;
    inf_record_batch_add_field(b, "s", &fs);
    inf_record_batch_add_field(b, "x", &fx);
    inf_record_batch_add_field(b, "t", &ft);
    inf_record_batch_add_field(b, "i", &fi);
    static const char *const strs[] = {"a", "a", "b", NULL, "a", "a", "bb"};
    static const double xs[] = {1, 1, 2, NAN, NAN, 1, 1};
    static const int64_t ts[] = {5000000, 5000000, 5000000, 6000000, 5000000, 5000000, 5000000};
    static const int nulls_i[] = {0, 1, 1, 0, 0, 1, 0};
    for (int i = 0; i < 7; i++) {
        inf_record_batch_add_row(b, &r);
        if (strs[i]) inf_record_batch_set_string(b, r, fs, strs[i], strlen(strs[i]));
        inf_record_batch_set_float(b, r, fx, xs[i]);
        inf_record_batch_set_timestamp(b, r, ft, ts[i]);
        if (!nulls_i[i]) inf_record_batch_set_int(b, r, fi, 7);
    }
    inf_sink *sink;
    inf_error err;
    inf_status st = inf_sink_open(uri("sqlite", "runs.db", "?table=t"), NULL, &sink, &err);
    for (int k = 0; !st && k < 2; k++) st = inf_sink_write(sink, b, &err);
    if (!st) st = inf_sink_close(sink, &err);
    char path[512], want[600] = "", got[600] = "";
    snprintf(path, sizeof path, "%s/runs.db", dir);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 7; i++) {
            char row[80];
            snprintf(row, sizeof row, "%s|%s|%s|%s;", strs[i] ? strs[i] : "NULL",
                     isnan(xs[i]) ? "NULL" : xs[i] == 1 ? "1.0" : "2.0",
                     ts[i] == 5000000 ? "1970-01-01T00:00:05Z" : "1970-01-01T00:00:06Z", nulls_i[i] ? "NULL" : "7");
            strcat(want, row);
        }
    sqlite3 *db;
    sqlite3_stmt *q;
    sqlite3_open(path, &db);
    sqlite3_prepare_v2(db, "SELECT coalesce(s, 'NULL'), CASE WHEN x IS NULL THEN 'NULL' ELSE printf('%.1f', x) END, t, coalesce(i, 'NULL') "
                           "FROM t ORDER BY rowid", -1, &q, NULL);
    while (sqlite3_step(q) == SQLITE_ROW) {
        char row[200];
        snprintf(row, sizeof row, "%s|%s|%s|%s;", sqlite3_column_text(q, 0), sqlite3_column_text(q, 1),
                 sqlite3_column_text(q, 2), sqlite3_column_text(q, 3));
        if (strlen(got) + strlen(row) < sizeof got) strcat(got, row);
    }
    sqlite3_finalize(q);
    sqlite3_close(db);
    check(st == INF_OK && !strcmp(got, want), "sqlite sink: runs of equal values, nulls, NaN, a shared timestamp:\n  %s\n  %s",
          got, want);
    inf_record_batch_free(b);
}

/* inf__parse_double must give strtod's double, bit for bit, on every form
 * (its exact fast path and its fallback), and refuse what is not a number. */
static void test_parse_double(void) {
    srand(12345);
    int n_bad = 0, n_fast = 0;
    char first_bad[80] = "";
    for (int i = 0; i < 300000; i++) {
        char s[80];
        int n = 0;
        if (rand() % 3 == 0) s[n++] = '-';
        int int_digits = rand() % 18, frac_digits = rand() % 18;
        if (rand() % 4 == 0) s[n++] = '0';
        for (int k = 0; k < int_digits; k++) s[n++] = (char)('0' + (k == 0 ? 1 + rand() % 9 : rand() % 10));
        if (!int_digits && !frac_digits) s[n++] = '7';
        if (frac_digits) {
            s[n++] = '.';
            for (int k = 0; k < frac_digits; k++) s[n++] = (char)('0' + rand() % 10);
        }
        if (rand() % 3 == 0) n += snprintf(s + n, sizeof s - (size_t)n, "e%d", rand() % 80 - 40);
        s[n] = '\0';
        double got = 0, want = strtod(s, NULL);
        if (inf__parse_double(s, (size_t)n, &got) || memcmp(&got, &want, sizeof got)) {
            if (!n_bad++) snprintf(first_bad, sizeof first_bad, "%s", s);
        }
        n_fast += int_digits + frac_digits <= 15;
    }
    check(n_bad == 0, "inf__parse_double == strtod bit for bit on 300000 decimal strings (%d short ones; first bad: %s)",
          n_fast, first_bad[0] ? first_bad : "none");
    const char *good[] = {"0", "-0", "1.", ".5", "+2.5", "1e5", "1E-5", "123456789012345678901234567890", "0.1",
                          "4.9406564584124654e-324", "1.7976931348623157e308", "1e400", "0.000000000000000000001"};
    int ok = 1;
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        double got = 0, want = strtod(good[i], NULL);
        ok &= !inf__parse_double(good[i], strlen(good[i]), &got) && !memcmp(&got, &want, sizeof got);
    }
    check(ok, "inf__parse_double: edge forms (1., .5, +2.5, 30 digits, subnormal, max, overflow) as strtod");
    const char *bad[] = {"", "-", ".", "e5", "1e", "1e+", "1.2.3", "1 ", " 1", "0x10", "nan", "1,5", "--1"};
    ok = 1;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        double got;
        ok &= inf__parse_double(bad[i], strlen(bad[i]), &got) == -1;
    }
    check(ok, "inf__parse_double refuses non-numbers (empty, sign only, 1e, 1.2.3, spaces, hex, nan)");
}

/* The flat-object fast path of inf_record_batch_add_json must give exactly
 * what the cJSON path gives: each record is added as is, and again with a
 * nested field appended (which sends it down the cJSON path). */
static void test_json_paths(void) {
    const char *recs[] = {
        "{\"a\":1,\"b\":-2.5,\"c\":\"x y\",\"d\":true,\"e\":false,\"f\":null}",
        " { \"a\" : 1e3 , \"b\":\t0.1,\n\"c\":\"\" } ",
        "{\"n\":9007199254740993,\"m\":2.0,\"k\":-0,\"big\":1e400,\"tiny\":4.9e-324,\"p\":12345678901234567890}",
        "{\"dup\":1,\"dup\":2,\"z\":null,\"z\":3,\"y\":4,\"y\":null}",
        "{\"esc\":\"a\\\"b\\u00e9\\n\",\"u\":\"\xc3\xa9t\xc3\xa9\"}",
        "{\"\":5,\"amount\":3.0503,\"log\":-0.6724,\"x\":0.0343}",
        "{}",
    };
    int ok = 1;
    char why[200] = "";
    for (size_t i = 0; i < sizeof recs / sizeof *recs && ok; i++) {
        char nested[600];
        size_t n = strlen(recs[i]);
        const char *close = strrchr(recs[i], '}');
        int empty = strchr(recs[i], ':') == NULL;
        snprintf(nested, sizeof nested, "%.*s%s\"zz_nested\":[1]}", (int)(close - recs[i]), recs[i], empty ? "" : ",");
        inf_record_batch *a, *b;
        inf_error err;
        inf_record_batch_new(&a);
        inf_record_batch_new(&b);
        int st = inf_record_batch_add_json(a, recs[i], n, &err) | inf_record_batch_add_json(b, nested, strlen(nested), &err);
        if (st) {
            ok = 0;
            snprintf(why, sizeof why, "record %zu: %s", i, err.message);
        }
        for (int f = 0; ok && f < inf_record_batch_n_fields(a); f++) {
            const char *name = inf_record_batch_field_name(a, f);
            const inf_value *x = inf_record_batch_get(a, 0, f);
            const inf_value *y = inf_record_batch_get(b, 0, inf_record_batch_find_field(b, name));
            int same = x->type == y->type &&
                       (x->type == INF_FIELD_STRING ? x->u.s.len == y->u.s.len && !memcmp(x->u.s.ptr, y->u.s.ptr, x->u.s.len)
                        : x->type == INF_FIELD_FLOAT ? !memcmp(&x->u.f, &y->u.f, sizeof x->u.f)
                        : x->type == INF_FIELD_INT   ? x->u.i == y->u.i
                        : x->type == INF_FIELD_BOOL  ? x->u.b == y->u.b
                                                     : 1);
            if (!same) {
                ok = 0;
                snprintf(why, sizeof why, "record %zu field '%s' differs", i, name);
            }
        }
        if (ok && inf_record_batch_n_fields(b) != inf_record_batch_n_fields(a) + 1) {
            ok = 0;
            snprintf(why, sizeof why, "record %zu: %d vs %d fields", i, inf_record_batch_n_fields(a),
                     inf_record_batch_n_fields(b));
        }
        inf_record_batch_free(a);
        inf_record_batch_free(b);
    }
    check(ok, "JSON records: the flat fast path and the full parser give the same fields and values%s%s", why[0] ? ": " : "",
          why);
    const char *bad[] = {"{\"a\":1,}", "{\"a\" 1}", "{\"a\":01}", "{\"a\":1.}", "[1]", "{\"a\":tru}", "{\"a\":\"x}", ""};
    ok = 1;
    inf_record_batch *a;
    inf_record_batch_new(&a);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        inf_error err;
        if (inf_record_batch_add_json(a, bad[i], strlen(bad[i]), &err) == INF_OK && i >= 4) ok = 0;
    }
    check(ok && inf_record_batch_n_rows(a) <= 4, "JSON records: malformed objects are refused (lenient forms go to cJSON)");
    inf_record_batch_free(a);
}

/* Row i of the multi-row test's batch of n (write w): runs of equal strings and a null, a
 * timestamp that changes every 3 rows, a number with NaN and null, an int key. */
static void multirow_cell(int w, int n, int i, const char **str, double *x, int64_t *t, int *x_null) {
    static const char *const strs[] = {"m", "m", "m", "n", NULL, "m"};
    *str = strs[(i / 2) % 6];
    *x = (i % 11 == 5) ? NAN : w * 1000.0 + n + i * 0.25;
    *x_null = i % 13 == 7;
    *t = 1700000000000000LL + (int64_t)(i / 3) * 1000 + w;
}

/* The SQLite sink writes a batch as INSERTs of 64, 16, 4 and 1 rows: batches of every size
 * around those (1 .. 150 rows), one write after another into one table, read back with sqlite3
 * itself in rowid order; a keyed table with keys repeated inside one statement keeps the last
 * row per key; ?journal=wal&synchronous=normal set the pragmas, a value outside SQLite's refused. */
static void test_sqlite_multirow(void) {
    static const int sizes[] = {1, 3, 4, 5, 16, 17, 21, 63, 64, 65, 85, 150};
    enum { N_SIZES = sizeof sizes / sizeof *sizes };
    inf_sink *sink;
    inf_error err;
    inf_status st =
        inf_sink_open(uri("sqlite", "multi.db", "?table=t&journal=wal&synchronous=normal"), NULL, &sink, &err);
    for (int w = 0; !st && w < N_SIZES; w++) {
        inf_record_batch *b;
        inf_record_batch_new(&b);
        int fs, fx, ft, fk, r;
        inf_record_batch_add_field(b, "k", &fk);
        inf_record_batch_add_field(b, "s", &fs);
        inf_record_batch_add_field(b, "x", &fx);
        inf_record_batch_add_field(b, "t", &ft);
        for (int i = 0; i < sizes[w]; i++) {
            const char *str;
            double x;
            int64_t t;
            int x_null;
            multirow_cell(w, sizes[w], i, &str, &x, &t, &x_null);
            inf_record_batch_add_row(b, &r);
            inf_record_batch_set_int(b, r, fk, w * 1000 + i);
            if (str) inf_record_batch_set_string(b, r, fs, str, strlen(str));
            if (!x_null) inf_record_batch_set_float(b, r, fx, x);
            inf_record_batch_set_timestamp(b, r, ft, t);
        }
        st = inf_sink_write(sink, b, &err);
        if (!st && w % 3 == 2) st = inf_sink_commit(sink, &err);
        inf_record_batch_free(b);
    }
    if (!st)
        st = inf_sink_close(sink, &err);
    else
        inf_sink_close(sink, &(inf_error){0});
    char path[512];
    snprintf(path, sizeof path, "%s/multi.db", dir);
    sqlite3 *db;
    sqlite3_stmt *q;
    sqlite3_open(path, &db);
    sqlite3_prepare_v2(db, "SELECT k, s, x, t FROM t ORDER BY rowid", -1, &q, NULL);
    int rows = 0, bad = 0, want_rows = 0;
    char first_bad[300] = "";
    for (int w = 0; w < N_SIZES; w++)
        for (int i = 0; i < sizes[w]; i++, want_rows++) {
            if (sqlite3_step(q) != SQLITE_ROW) continue;
            rows++;
            const char *str;
            double x;
            int64_t t;
            int x_null;
            multirow_cell(w, sizes[w], i, &str, &x, &t, &x_null);
            char ts[40];
            inf_format_timestamp(t, ts, sizeof ts);
            const char *got_s = (const char *)sqlite3_column_text(q, 1);
            const char *got_t = (const char *)sqlite3_column_text(q, 3);
            int x_is_null = sqlite3_column_type(q, 2) == SQLITE_NULL;
            int ok = sqlite3_column_int64(q, 0) == w * 1000 + i && (str ? got_s && !strcmp(got_s, str) : !got_s) &&
                     (x_null || isnan(x) ? x_is_null : !x_is_null && sqlite3_column_double(q, 2) == x) && got_t &&
                     !strcmp(got_t, ts);
            if (!ok && !bad++)
                snprintf(first_bad, sizeof first_bad, "batch of %d, row %d: k=%lld s=%s x=%g t=%s", sizes[w], i,
                         (long long)sqlite3_column_int64(q, 0), got_s ? got_s : "NULL", sqlite3_column_double(q, 2),
                         got_t ? got_t : "NULL");
        }
    int extra = sqlite3_step(q) == SQLITE_ROW;
    sqlite3_finalize(q);
    sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &q, NULL);
    int wal = sqlite3_step(q) == SQLITE_ROW && !strcmp((const char *)sqlite3_column_text(q, 0), "wal");
    sqlite3_finalize(q);
    sqlite3_close(db);
    check(
        st == INF_OK && rows == want_rows && !bad && !extra,
        "sqlite sink: batches of 1-150 rows in multi-row INSERTs read back row for row (%d of %d rows, %d differ%s%s)",
        rows, want_rows, bad, bad ? ": " : "", first_bad);
    check(wal, "sqlite sink: ?journal=wal sets the database's journal mode");

    /* keys repeated within one statement: INSERT OR REPLACE keeps the last row per key */
    inf_sink_options so = {0};
    so.key_column = "id";
    st = inf_sink_open(uri("sqlite", "multi.db", "?table=keyed"), &so, &sink, &err);
    inf_record_batch *b;
    inf_record_batch_new(&b);
    int fid, fv, r;
    inf_record_batch_add_field(b, "id", &fid);
    inf_record_batch_add_field(b, "v", &fv);
    for (int i = 0; i < 150; i++) {
        inf_record_batch_add_row(b, &r);
        inf_record_batch_set_int(b, r, fid, i % 50);
        inf_record_batch_set_int(b, r, fv, i);
    }
    if (!st) st = inf_sink_write(sink, b, &err);
    if (!st) st = inf_sink_close(sink, &err);
    inf_record_batch_free(b);
    sqlite3_open(path, &db);
    sqlite3_prepare_v2(db, "SELECT count(*), sum(v = id + 100) FROM keyed", -1, &q, NULL);
    int ok = sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int(q, 0) == 50 && sqlite3_column_int(q, 1) == 50;
    sqlite3_finalize(q);
    sqlite3_close(db);
    check(st == INF_OK && ok,
          "sqlite sink: 150 keyed rows, 50 keys, keys repeated inside one INSERT: the last row of each kept");

    st = inf_sink_open(uri("sqlite", "multi.db", "?table=t&synchronous=sometimes"), NULL, &sink, &err);
    check(st == INF_EINVAL && strstr(err.message, "synchronous=sometimes"),
          "sqlite sink: ?synchronous=sometimes refused (%s)", st ? err.message : "accepted");
    if (!st) inf_sink_close(sink, &err);
}

int main(void) {
    if (!mkdtemp(dir)) return 1;
    test_parse_double();
    test_json_paths();
    test_timestamps();
    test_csv();
    test_csv_empty_header_cell();
    test_jsonl();
    test_sqlite();
    test_sqlite_value_runs();
    test_sqlite_multirow();
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) {}
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
