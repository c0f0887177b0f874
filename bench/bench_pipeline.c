/*
 * bench_pipeline.c -- per-record overhead of the pipeline (issue 6 target:
 * < 1 us per record for a 30-field record without lookups), and store round
 * trips per batch with a SQLite lookup.
 *
 * The records: 30 fields (20 floats, 5 ints, 3 strings, 2 timestamps: one
 * ISO-8601 string, one epoch number), typed as a JSON source gives them, in
 * batches of 1024.  The spec declares all 30 with range checks, derives 10
 * features (standardize x5, log1p x2, one_hot of 5 categories, hour,
 * ratio) and assembles a float32 [N, 39] tensor.  Timed (thread CPU time,
 * so a busy machine does not inflate it): inf_pipeline_prepare
 * (validation, transforms, tensor assembly) per record, best of 5 runs.
 * usage: bench_pipeline [--batches N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "infera/pipeline.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* CPU time: the machine may be shared */
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static char spec[16384];

static void make_spec(const char *lookup) {
    size_t n = 0;
    n += (size_t)snprintf(spec + n, sizeof spec - n, "{\"name\":\"bench30\",\"inputs\":{\"id\":{\"type\":\"string\",\"id\":true}");
    for (int i = 0; i < 20; i++)
        n += (size_t)snprintf(spec + n, sizeof spec - n, ",\"f%d\":{\"type\":\"float\",\"min\":-1e9,\"max\":1e9}", i);
    for (int i = 0; i < 5; i++) n += (size_t)snprintf(spec + n, sizeof spec - n, ",\"i%d\":{\"type\":\"int\",\"default\":0}", i);
    n += (size_t)snprintf(spec + n, sizeof spec - n,
                          ",\"s0\":{\"type\":\"string\",\"categories\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\"]},"
                          "\"s1\":{\"type\":\"string\"},\"t0\":{\"type\":\"timestamp\"},\"t1\":{\"type\":\"timestamp\"}}");
    if (lookup) n += (size_t)snprintf(spec + n, sizeof spec - n, ",%s", lookup);
    n += (size_t)snprintf(spec + n, sizeof spec - n, ",\"features\":[");
    for (int i = 0; i < 5; i++)
        n += (size_t)snprintf(spec + n, sizeof spec - n, "{\"name\":\"z%d\",\"op\":\"standardize\",\"from\":\"f%d\",\"mean\":1,\"std\":2},", i, i);
    n += (size_t)snprintf(spec + n, sizeof spec - n,
                          "{\"name\":\"l0\",\"op\":\"log1p\",\"from\":\"f5\"},{\"name\":\"l1\",\"op\":\"log1p\",\"from\":\"f6\"},"
                          "{\"name\":\"oh\",\"op\":\"one_hot\",\"from\":\"s0\",\"categories\":[\"a\",\"b\",\"c\",\"d\",\"e\"],\"unknown\":\"other\"},"
                          "{\"name\":\"hr\",\"op\":\"hour\",\"from\":\"t0\"},{\"name\":\"rt\",\"op\":\"ratio\",\"from\":[\"f7\",\"f8\"],\"default\":0}]");
    n += (size_t)snprintf(spec + n, sizeof spec - n, ",\"model_inputs\":{\"input\":{\"dtype\":\"float32\",\"order\":[");
    for (int i = 0; i < 20; i++) n += (size_t)snprintf(spec + n, sizeof spec - n, "\"f%d\",", i);
    for (int i = 0; i < 5; i++) n += (size_t)snprintf(spec + n, sizeof spec - n, "\"i%d\",", i);
    n += (size_t)snprintf(spec + n, sizeof spec - n, "\"t1\",\"z0\",\"z1\",\"z2\",\"z3\",\"z4\",\"l0\",\"l1\",\"oh\",\"hr\",\"rt\"%s]}}}",
                          lookup ? ",\"cnt\",\"avg\"" : "");
}

static void make_batch(inf_record_batch *b, int n) {
    int f[31];
    const char *names[31];
    char buf[31][8];
    names[0] = "id";
    for (int i = 0; i < 20; i++) snprintf(buf[i], sizeof buf[i], "f%d", i), names[1 + i] = buf[i];
    for (int i = 0; i < 5; i++) snprintf(buf[20 + i], sizeof buf[20 + i], "i%d", i), names[21 + i] = buf[20 + i];
    names[26] = "s0", names[27] = "s1", names[28] = "t0", names[29] = "t1", names[30] = "key";
    for (int i = 0; i < 31; i++) inf_record_batch_add_field(b, names[i], &f[i]);
    static const char *cats[] = {"a", "b", "c", "d", "e", "f"};
    for (int r = 0; r < n; r++) {
        int row;
        char id[32], key[32];
        inf_record_batch_add_row(b, &row);
        snprintf(id, sizeof id, "rec%06d", r);
        inf_record_batch_set_string(b, row, f[0], id, strlen(id));
        for (int i = 0; i < 20; i++) inf_record_batch_set_float(b, row, f[1 + i], (r * 31 + i) % 1000 * 0.37);
        for (int i = 0; i < 5; i++) inf_record_batch_set_int(b, row, f[21 + i], (r + i) % 17);
        inf_record_batch_set_string(b, row, f[26], cats[r % 6], 1);
        inf_record_batch_set_string(b, row, f[27], "free text", 9);
        inf_record_batch_set_string(b, row, f[28], "2024-03-04T12:34:56Z", 20);
        inf_record_batch_set_int(b, row, f[29], 1709555696 + r);
        snprintf(key, sizeof key, "k%d", r % 500);
        inf_record_batch_set_string(b, row, f[30], key, strlen(key));
    }
}

static double run(const char *lookup, int batches, int batch_rows, double *round_trips) {
    inf_pipeline *p;
    inf_pipeline_exec *e;
    inf_error err;
    make_spec(lookup);
    if (inf_pipeline_load_string(spec, strlen(spec), NULL, NULL, &p, &err)) {
        fprintf(stderr, "bench_pipeline: spec: %s\n", err.message);
        exit(1);
    }
    if (inf_pipeline_exec_new(p, &e, &err)) {
        fprintf(stderr, "bench_pipeline: %s\n", err.message);
        exit(1);
    }
    inf_record_batch *b;
    inf_record_batch_new(&b);
    make_batch(b, batch_rows);
    const inf_tensor *const *x;
    if (inf_pipeline_prepare(e, b, &x, &err) || inf_pipeline_n_accepted(e) != batch_rows) {
        fprintf(stderr, "bench_pipeline: prepare: %s (%d accepted)\n", err.message, inf_pipeline_n_accepted(e));
        exit(1);
    }
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now_s();
        for (int i = 0; i < batches; i++) inf_pipeline_prepare(e, b, &x, &err);
        double dt = (now_s() - t0) / ((double)batches * batch_rows);
        if (dt < best) best = dt;
    }
    inf_pipeline_stats st;
    inf_pipeline_get_stats(p, &st);
    if (round_trips) *round_trips = (double)st.n_lookups / (5.0 * batches + 1);
    inf_record_batch_free(b);
    inf_pipeline_exec_free(e);
    inf_pipeline_free(p);
    return best;
}

int main(int argc, char **argv) {
    int batches = 200;
    if (argc == 3 && !strcmp(argv[1], "--batches")) batches = atoi(argv[2]);
    printf("bench_pipeline: 30-field records, batches of 1024, %d batches x 5 runs (best)\n", batches);
    double us = run(NULL, batches, 1024, NULL) * 1e6;
    printf("  no lookups:      %.3f us/record (prepare: validate 30 fields, 10 transforms, float32 [N,39])  target < 1 us: %s\n",
           us, us < 1.0 ? "met" : "NOT met");
    /* with a SQLite lookup: 500 distinct keys per batch */
    char db[] = "/tmp/bench-pipeline-XXXXXX";
    int fd = mkstemp(db);
    if (fd >= 0) close(fd);
    sqlite3 *h;
    sqlite3_open(db, &h);
    sqlite3_exec(h, "CREATE TABLE s (key TEXT PRIMARY KEY, cnt INTEGER, avg REAL, at REAL)", NULL, NULL, NULL);
    sqlite3_exec(h, "BEGIN", NULL, NULL, NULL);
    for (int i = 0; i < 100000; i++) {
        char sql[200];
        snprintf(sql, sizeof sql, "INSERT INTO s VALUES ('k%d', %d, %d.5, 1e12)", i, i % 9, i % 100);
        sqlite3_exec(h, sql, NULL, NULL, NULL);
    }
    sqlite3_exec(h, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(h);
    char lookup[1024];
    snprintf(lookup, sizeof lookup,
             "\"lookups\":[{\"name\":\"s\",\"store\":\"sqlite:%s?table=s\",\"key\":\"key\",\"features\":{\"cnt\":\"int\",\"avg\":\"float\"},"
             "\"as_of\":\"at\",\"max_age_s\":3600}]",
             db);
    double rt = 0;
    us = -1;
    {
        /* the spec with the lookup, and its key declared as an input */
        static char with_key[1400];
        snprintf(with_key, sizeof with_key, "%s", lookup);
        make_spec(with_key);
        char *ins = strstr(spec, "\"t1\":{\"type\":\"timestamp\"}");
        if (ins) {
            static char patched[17000];
            size_t off = (size_t)(ins - spec);
            snprintf(patched, sizeof patched, "%.*s\"key\":{\"type\":\"string\"},%s", (int)off, spec, ins);
            inf_pipeline *p;
            inf_pipeline_exec *e;
            inf_error err;
            if (inf_pipeline_load_string(patched, strlen(patched), NULL, NULL, &p, &err) || inf_pipeline_exec_new(p, &e, &err)) {
                fprintf(stderr, "bench_pipeline: lookup spec: %s\n", err.message);
                return 1;
            }
            inf_pipeline_exec_set_now(e, 1e12);
            inf_record_batch *b;
            inf_record_batch_new(&b);
            make_batch(b, 1024);
            const inf_tensor *const *x;
            int nb = batches / 4 > 10 ? batches / 4 : 10;
            double t0 = now_s();
            for (int i = 0; i < nb; i++) inf_pipeline_prepare(e, b, &x, &err);
            us = (now_s() - t0) / (nb * 1024.0) * 1e6;
            inf_pipeline_stats st;
            inf_pipeline_get_stats(p, &st);
            rt = (double)st.n_lookups / nb;
            inf_record_batch_free(b);
            inf_pipeline_exec_free(e);
            inf_pipeline_free(p);
        }
    }
    printf("  SQLite lookup:   %.3f us/record, %.2f store round trips per batch of 1024 (500 distinct keys, 100k-row table)\n",
           us, rt);
    unlink(db);
    return 0;
}
