/*
 * npy.c -- `npy:PATH` sink: the numeric fields of the records as one float32
 * matrix [rows, fields] in a NumPy .npy file (format 1.0), the form
 * `infera run --input NAME=PATH` reads.  Made for `infera features`, so a
 * feature matrix can be fed to the model unchanged.
 *
 * Columns are fixed at the first batch: every field except those whose first
 * non-null value there is a string or a timestamp (an id column), and except
 * fields listed in ?skip=a,b.  Values are cast to float32 (null -> NaN).  The
 * header is written with room for the final row count and rewritten at close.
 * A file path is required (not stdout: the header is rewritten).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_int.h"

#define NPY_HEADER 128

typedef struct npy_sink {
    FILE *f;
    int n_cols, set_up;
    char **cols;
    long long n_rows;
    char skip[512];
    char path[512];
} npy_sink;

static int write_header(npy_sink *s) {
    char h[NPY_HEADER];
    memset(h, ' ', sizeof h);
    memcpy(h, "\x93NUMPY\x01\x00", 8);
    h[8] = NPY_HEADER - 10;
    h[9] = 0;
    int n = snprintf(h + 10, NPY_HEADER - 10, "{'descr': '<f4', 'fortran_order': False, 'shape': (%lld, %d), }",
                     s->n_rows, s->n_cols);
    h[10 + n] = ' ';
    h[NPY_HEADER - 1] = '\n';
    if (fseek(s->f, 0, SEEK_SET)) return -1;
    return fwrite(h, 1, NPY_HEADER, s->f) == NPY_HEADER ? 0 : -1;
}

static inf_status npy_sink_open(const char *uri, const char *rest, const inf_sink_options *opts, void **state,
                                inf_error *err) {
    npy_sink *s = calloc(1, sizeof *s);
    if (!s) return inf_error_set(err, INF_ENOMEM, "%s: out of memory", uri);
    inf__io_uri_path(rest, s->path, sizeof s->path);
    inf__io_uri_param(rest, "skip", s->skip, sizeof s->skip);
    if (!strcmp(s->path, "-")) {
        free(s);
        return inf_error_set(err, INF_EINVAL, "%s: npy output needs a file path", uri);
    }
    s->f = fopen(s->path, "w+b");
    if (!s->f) {
        free(s);
        return inf_error_set(err, INF_EIO, "%s: cannot create: %s", uri, strerror(errno));
    }
    *state = s;
    return INF_OK;
}

static int skipped(const npy_sink *s, const char *name) {
    size_t n = strlen(name);
    for (const char *p = s->skip; *p;) {
        size_t k = strcspn(p, ",");
        if (k == n && !strncmp(p, name, n)) return 1;
        p += k;
        if (*p) p++;
    }
    return 0;
}

static inf_status npy_sink_write(void *state, const inf_record_batch *b, inf_error *err) {
    npy_sink *s = state;
    if (!s->set_up) {
        s->set_up = 1;
        s->cols = calloc((size_t)(b->n_fields ? b->n_fields : 1), sizeof *s->cols);
        if (!s->cols) return inf_error_set(err, INF_ENOMEM, "npy:%s: out of memory", s->path);
        for (int f = 0; f < b->n_fields; f++) {
            int text = 0;
            for (int r = 0; r < b->n_rows; r++) {
                int t = inf__batch_at(b, r, f)->type;
                if (t == INF_FIELD_NULL) continue;
                text = t == INF_FIELD_STRING || t == INF_FIELD_TIMESTAMP;
                break;
            }
            if (text || skipped(s, b->names[f])) continue;
            if (!(s->cols[s->n_cols] = strdup(b->names[f]))) return inf_error_set(err, INF_ENOMEM, "npy: out of memory");
            s->n_cols++;
        }
        if (write_header(s)) return inf_error_set(err, INF_EIO, "npy:%s: write failed: %s", s->path, strerror(errno));
    }
    int map[1024];
    if (s->n_cols > 1024) return inf_error_set(err, INF_EUNSUPPORTED, "npy:%s: more than 1024 columns", s->path);
    for (int c = 0; c < s->n_cols; c++) map[c] = inf_record_batch_find_field(b, s->cols[c]);
    for (int r = 0; r < b->n_rows; r++) {
        float row[1024];
        for (int c = 0; c < s->n_cols; c++) {
            double v;
            row[c] = map[c] >= 0 && !inf_value_to_double(inf__batch_at(b, r, map[c]), &v) ? (float)v : NAN;
        }
        if (fwrite(row, sizeof(float), (size_t)s->n_cols, s->f) != (size_t)s->n_cols)
            return inf_error_set(err, INF_EIO, "npy:%s: write failed: %s", s->path, strerror(errno));
        s->n_rows++;
    }
    return INF_OK;
}

static inf_status npy_sink_commit(void *state, inf_error *err) {
    npy_sink *s = state;
    if (fflush(s->f)) return inf_error_set(err, INF_EIO, "npy:%s: write failed: %s", s->path, strerror(errno));
    return INF_OK;
}

static inf_status npy_sink_close(void *state, inf_error *err) {
    npy_sink *s = state;
    inf_status st = INF_OK;
    if (write_header(s)) st = inf_error_set(err, INF_EIO, "npy:%s: write failed", s->path);
    if (fclose(s->f) && !st) st = inf_error_set(err, INF_EIO, "npy:%s: close failed", s->path);
    for (int c = 0; c < s->n_cols; c++) free(s->cols[c]);
    free(s->cols);
    free(s);
    return st;
}

const inf_sink_type inf__io_npy_sink = {"npy", npy_sink_open, npy_sink_write, npy_sink_commit, npy_sink_close};
