/*
 * jsonl.c -- `jsonl:PATH` sources and sinks: one JSON object per line
 * (`-` = stdin/stdout).
 *
 * Source: blank lines are skipped; a malformed line fails the next() call
 * that reaches it with its line number, after the records before it were
 * returned (the batch ends early, the error comes on the following call), and
 * reading goes on after it.  Sink: one object per row (inf_record_batch_row_to_json),
 * fields in batch order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_int.h"

typedef struct jsonl_source {
    FILE *f;
    int owns;
    int max_rows;
    long line;
    char *buf;
    size_t cap;
    inf_error pending; /* an error found after some rows were read */
    int has_pending;
    char path[512];
} jsonl_source;

static void jsonl_source_close(void *state) {
    jsonl_source *s = state;
    if (!s) return;
    if (s->owns && s->f) fclose(s->f);
    free(s->buf);
    free(s);
}

static inf_status jsonl_source_open(const char *uri, const char *rest, const inf_source_options *opts, void **state,
                                    inf_error *err) {
    jsonl_source *s = calloc(1, sizeof *s);
    if (!s) return inf_error_set(err, INF_ENOMEM, "%s: out of memory", uri);
    snprintf(s->path, sizeof s->path, "%s", rest);
    s->max_rows = opts->max_rows > 0 ? opts->max_rows : 1024;
    inf_status st = inf__io_open_input(uri, rest, &s->f, &s->owns, err);
    if (st) {
        free(s);
        return st;
    }
    *state = s;
    return INF_OK;
}

static inf_status jsonl_source_next(void *state, inf_record_batch *b, int *eof, inf_error *err) {
    jsonl_source *s = state;
    if (s->has_pending) {
        s->has_pending = 0;
        if (err) *err = s->pending;
        return s->pending.status;
    }
    while (b->n_rows < s->max_rows) {
        ssize_t n = getline(&s->buf, &s->cap, s->f);
        if (n < 0) {
            *eof = 1;
            return INF_OK;
        }
        s->line++;
        while (n && (s->buf[n - 1] == '\n' || s->buf[n - 1] == '\r' || s->buf[n - 1] == ' ')) n--;
        if (!n) continue;
        inf_error e;
        inf_status st = inf_record_batch_add_json(b, s->buf, (size_t)n, &e);
        if (st) {
            inf_error *target = b->n_rows ? &s->pending : err;
            inf_error_set(target, st, "jsonl:%s: line %ld: %s", s->path, s->line, e.message);
            if (b->n_rows && st != INF_ENOMEM) {
                s->has_pending = 1;
                return INF_OK;
            }
            return st;
        }
    }
    return INF_OK;
}

const inf_source_type inf__io_jsonl_source = {"jsonl", jsonl_source_open, jsonl_source_next, NULL,
                                              jsonl_source_close};

static int write_file(const char *bytes, size_t n, void *user) { return fwrite(bytes, 1, n, (FILE *)user) == n ? 0 : -1; }

/* The sink's state is its output file alone (an inf__io_out). */
static inf_status jsonl_sink_open(const char *uri, const char *rest, const inf_sink_options *opts, void **state,
                                  inf_error *err) {
    return inf__io_out_new(sizeof(inf__io_out), "jsonl", uri, rest, opts->append, state, err);
}

static inf_status jsonl_sink_write(void *state, const inf_record_batch *b, inf_error *err) {
    inf__io_out *s = state;
    inf_status st = inf__record_batch_write_jsonl(b, write_file, s->f);
    if (st == INF_ENOMEM) return inf_error_set(err, st, "jsonl:%s: out of memory", s->path);
    if (st) return inf_error_set(err, INF_EIO, "jsonl:%s: write failed: %s", s->path, strerror(errno));
    return INF_OK;
}

static inf_status jsonl_sink_close(void *state, inf_error *err) {
    inf_status st = inf__io_out_close(state, err);
    free(state);
    return st;
}

const inf_sink_type inf__io_jsonl_sink = {"jsonl", jsonl_sink_open, jsonl_sink_write, inf__io_out_commit,
                                          jsonl_sink_close};
