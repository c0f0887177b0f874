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
    inf_sink_options so = {0, "id"};
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

int main(void) {
    if (!mkdtemp(dir)) return 1;
    test_timestamps();
    test_csv();
    test_jsonl();
    test_sqlite();
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) {}
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
