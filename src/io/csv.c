/*
 * csv.c -- `csv:PATH` sources and sinks (RFC 4180; `-` = stdin/stdout).
 *
 * Source: the first record is the header (field names).  Quoted cells may
 * hold commas, doubled quotes and newlines; CRLF and LF both end a record.
 * Unquoted cells are typed (inf__io_set_text_cell); quoted cells are strings.
 * A record with more cells than the header is an error naming its line; one
 * with fewer gets NULLs.  Reading is streaming: one batch at a time.
 * Sink: the header is the first batch's fields; later batches are written by
 * field name (new fields ignored, absent ones empty).  Floats use %.17g (exact
 * round trip), timestamps ISO-8601, null an empty cell.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_int.h"
#include "io/numfmt.h"

typedef struct csv_source {
    FILE *f;
    int owns;
    int max_rows;
    long line;          /* line number of the next record (1-based) */
    char *cell;         /* current cell buffer */
    size_t cell_len, cell_cap;
    char **header;      /* header names */
    int n_header;
    int *fields;        /* n_header: each header column's field index in the batch */
    int at_start;       /* nothing read yet: a UTF-8 byte order mark may come first */
    char path[512];
} csv_source;

static void csv_source_close(void *state) {
    csv_source *s = state;
    if (!s) return;
    if (s->owns && s->f) fclose(s->f);
    for (int i = 0; i < s->n_header; i++) free(s->header[i]);
    free(s->header);
    free(s->fields);
    free(s->cell);
    free(s);
}

static int cell_push(csv_source *s, int c) {
    if (s->cell_len + 1 >= s->cell_cap) {
        size_t cap = s->cell_cap ? s->cell_cap * 2 : 256;
        char *p = realloc(s->cell, cap);
        if (!p) return -1;
        s->cell = p;
        s->cell_cap = cap;
    }
    s->cell[s->cell_len++] = (char)c;
    return 0;
}

/* Reads one cell.  Returns 1 when a record ends after it, 0 when another
 * cell follows, -1 at EOF before any character, -2 on a malformed quote,
 * -3 out of memory.  *quoted tells whether the cell was quoted. */
static int read_cell(csv_source *s, int *quoted) {
    FILE *f = s->f;
    s->cell_len = 0;
    *quoted = 0;
    int c = getc_unlocked(f);
    if (s->at_start) {
        /* a byte order mark (EF BB BF) before the header is not part of it,
         * also when the first header cell is quoted */
        s->at_start = 0;
        if (c == 0xEF) {
            int c2 = getc_unlocked(f), c3 = c2 == 0xBB ? getc_unlocked(f) : EOF;
            if (c2 == 0xBB && c3 == 0xBF) {
                c = getc_unlocked(f);
            } else {
                /* not a BOM: the bytes are the start of an unquoted cell */
                if (cell_push(s, 0xEF)) return -3;
                if (c2 == 0xBB && cell_push(s, 0xBB)) return -3;
                c = c2 == 0xBB ? c3 : c2;
                goto unquoted;
            }
        }
    }
    if (c == EOF) return -1;
    if (c == '"') {
        *quoted = 1;
        for (;;) {
            c = getc_unlocked(f);
            if (c == EOF) return -2;
            if (c == '"') {
                c = getc_unlocked(f);
                if (c == '"') {
                    if (cell_push(s, '"')) return -3;
                    continue;
                }
                break;
            }
            if (c == '\n') s->line++;
            if (cell_push(s, c)) return -3;
        }
    }
unquoted:
    for (;; c = getc_unlocked(f)) {
        if (c == ',') return 0;
        if (c == '\n' || c == EOF) {
            s->line++;
            return 1;
        }
        if (c == '\r') {
            int d = getc_unlocked(f);
            if (d != '\n' && d != EOF) ungetc(d, f);
            s->line++;
            return 1;
        }
        if (*quoted) return -2; /* text after a closing quote */
        if (cell_push(s, c)) return -3;
    }
}

static inf_status csv_source_open(const char *uri, const char *rest, const inf_source_options *opts, void **state,
                                  inf_error *err) {
    csv_source *s = calloc(1, sizeof *s);
    if (!s) return inf_error_set(err, INF_ENOMEM, "%s: out of memory", uri);
    snprintf(s->path, sizeof s->path, "%s", rest);
    s->max_rows = opts->max_rows > 0 ? opts->max_rows : 1024;
    s->line = 1;
    s->at_start = 1;
    s->cell_cap = 256; /* never NULL: an empty cell is copied from it (memcpy of 0 bytes from NULL is undefined) */
    if (!(s->cell = malloc(s->cell_cap))) {
        free(s);
        return inf_error_set(err, INF_ENOMEM, "%s: out of memory", uri);
    }
    inf_status st = inf__io_open_input(uri, rest, &s->f, &s->owns, err);
    if (st) {
        csv_source_close(s);
        return st;
    }
    /* header */
    for (;;) {
        int quoted, rc = read_cell(s, &quoted);
        if (rc == -1 && s->n_header == 0) {
            csv_source_close(s);
            return inf_error_set(err, INF_EFORMAT, "%s: empty file (no header row)", uri);
        }
        if (rc < -1 || rc == -1) {
            csv_source_close(s);
            return inf_error_set(err, rc == -3 ? INF_ENOMEM : INF_EFORMAT, "%s: line 1: malformed header", uri);
        }
        char **h = realloc(s->header, (size_t)(s->n_header + 1) * sizeof *h);
        char *name = malloc(s->cell_len + 1);
        if (!h || !name) {
            if (h) s->header = h;
            free(name);
            csv_source_close(s);
            return inf_error_set(err, INF_ENOMEM, "%s: out of memory", uri);
        }
        s->header = h;
        memcpy(name, s->cell, s->cell_len);
        name[s->cell_len] = 0;
        s->header[s->n_header++] = name;
        if (rc == 1) break;
    }
    if (!(s->fields = calloc((size_t)s->n_header, sizeof *s->fields))) {
        csv_source_close(s);
        return inf_error_set(err, INF_ENOMEM, "%s: out of memory", uri);
    }
    *state = s;
    return INF_OK;
}

/* After a malformed cell: reads up to the end of its record (rc is the last
 * read_cell result), so the next record starts on a record boundary. */
static int skip_record(csv_source *s, int rc) {
    int quoted;
    while (rc == 0 || rc == -2) rc = read_cell(s, &quoted);
    return rc;
}

static inf_status csv_source_next(void *state, inf_record_batch *b, int *eof, inf_error *err) {
    csv_source *s = state;
    int *fields = s->fields;
    for (int i = 0; i < s->n_header; i++) {
        inf_status st = inf_record_batch_add_field(b, s->header[i], &fields[i]);
        if (st) return inf_error_set(err, st, "csv:%s: out of memory", s->path);
    }
    while (b->n_rows < s->max_rows) {
        long line = s->line;
        int quoted, rc = read_cell(s, &quoted);
        if (rc == -1) {
            *eof = 1;
            return INF_OK;
        }
        if (rc == 1 && s->cell_len == 0 && !quoted && s->n_header > 1) continue; /* blank line */
        int row;
        if (inf_record_batch_add_row(b, &row)) return inf_error_set(err, INF_ENOMEM, "csv:%s: out of memory", s->path);
        for (int col = 0;; col++) {
            if (rc == -2 || rc == -3 || rc == -1) {
                b->n_rows--;
                memset(b->vals + (size_t)row * b->cap_fields, 0, (size_t)b->cap_fields * sizeof *b->vals);
                if (rc == -3) return inf_error_set(err, INF_ENOMEM, "csv:%s: out of memory", s->path);
                if (skip_record(s, rc) == -3) return inf_error_set(err, INF_ENOMEM, "csv:%s: out of memory", s->path);
                if (feof(s->f)) /* a quote never closed: the rest of the file was read as its cell */
                    return inf_error_set(
                        err, INF_EFORMAT,
                        "csv:%s: line %ld: malformed quoted cell in column %d: its quote is not closed "
                        "before the end of the file (every line from %ld on is inside it)",
                        s->path, line, col + 1, line);
                return inf_error_set(err, INF_EFORMAT, "csv:%s: line %ld: malformed quoted cell in column %d", s->path,
                                    line, col + 1);
            }
            if (col >= s->n_header) {
                /* skip the rest of the record, report it */
                rc = skip_record(s, rc);
                b->n_rows--;
                memset(b->vals + (size_t)row * b->cap_fields, 0, (size_t)b->cap_fields * sizeof *b->vals);
                return inf_error_set(err, INF_EFORMAT, "csv:%s: line %ld: more cells than the %d header columns",
                                    s->path, line, s->n_header);
            }
            inf_status st = quoted ? inf_record_batch_set_string(b, row, fields[col], s->cell, s->cell_len)
                                   : inf__io_set_text_cell(b, row, fields[col], s->cell, s->cell_len);
            if (st) return inf_error_set(err, st, "csv:%s: out of memory", s->path);
            if (rc == 1) break;
            rc = read_cell(s, &quoted);
            if (rc == -1) rc = 1; /* last line without newline: handled by read_cell returning 1 */
        }
    }
    return INF_OK;
}

const inf_source_type inf__io_csv_source = {"csv", csv_source_open, csv_source_next, NULL, csv_source_close};

/* ---- sink ----------------------------------------------------------------- */

typedef struct csv_sink {
    inf__io_out out; /* first: the state is also an inf__io_out */
    int n_cols;
    char **cols;
    int *map;        /* n_cols: each column's field in the batch being written, -1 = absent */
} csv_sink;

static void put_cell_string(FILE *f, const char *s, size_t len) {
    int needs = len == 0 || strpbrk(s, ",\"\r\n") != NULL;
    if (!needs) {
        fwrite(s, 1, len, f);
        return;
    }
    fputc('"', f);
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '"') fputc('"', f);
        fputc(s[i], f);
    }
    fputc('"', f);
}

static inf_status csv_sink_open(const char *uri, const char *rest, const inf_sink_options *opts, void **state,
                                inf_error *err) {
    inf_status st = inf__io_out_new(sizeof(csv_sink), "csv", uri, rest, opts->append, state, err);
    if (st) return st;
    csv_sink *s = *state;
    /* appending after a header: take the columns from the first batch silently */
    if (s->out.owns && opts->append && ftell(s->out.f) > 0) s->n_cols = -1;
    return INF_OK;
}

static inf_status csv_sink_write(void *state, const inf_record_batch *b, inf_error *err) {
    csv_sink *s = state;
    if (s->n_cols <= 0) {
        int write_header = s->n_cols == 0;
        s->cols = calloc((size_t)(b->n_fields ? b->n_fields : 1), sizeof *s->cols);
        s->map = calloc((size_t)(b->n_fields ? b->n_fields : 1), sizeof *s->map);
        if (!s->cols || !s->map) return inf_error_set(err, INF_ENOMEM, "csv:%s: out of memory", s->out.path);
        for (int i = 0; i < b->n_fields; i++) {
            s->cols[i] = strdup(b->names[i]);
            if (!s->cols[i]) return inf_error_set(err, INF_ENOMEM, "csv:%s: out of memory", s->out.path);
            if (write_header) {
                if (i) fputc(',', s->out.f);
                put_cell_string(s->out.f, b->names[i], strlen(b->names[i]));
            }
        }
        s->n_cols = b->n_fields;
        if (write_header) fputc('\n', s->out.f);
    }
    int *map = s->map;
    for (int i = 0; i < s->n_cols; i++) map[i] = inf_record_batch_find_field(b, s->cols[i]);
    char num[64];
    for (int r = 0; r < b->n_rows; r++) {
        for (int i = 0; i < s->n_cols; i++) {
            if (i) fputc(',', s->out.f);
            if (map[i] < 0) continue;
            const inf_value *v = inf__batch_at(b, r, map[i]);
            switch (v->type) {
            case INF_FIELD_BOOL: fputs(v->u.b ? "true" : "false", s->out.f); break;
            case INF_FIELD_INT: fwrite(num, 1, (size_t)inf__fmt_i64(v->u.i, num), s->out.f); break;
            case INF_FIELD_FLOAT:
                if (isnan(v->u.f)) break; /* missing */
                fwrite(num, 1, (size_t)inf__fmt_g17(v->u.f, num), s->out.f); /* %.17g, without printf */
                break;
            case INF_FIELD_STRING: put_cell_string(s->out.f, v->u.s.ptr, v->u.s.len); break;
            case INF_FIELD_TIMESTAMP: fputs(inf_format_timestamp(v->u.ts, num, sizeof num), s->out.f); break;
            default: break;
            }
        }
        fputc('\n', s->out.f);
    }
    if (ferror(s->out.f)) return inf_error_set(err, INF_EIO, "csv:%s: write failed: %s", s->out.path, strerror(errno));
    return INF_OK;
}

static inf_status csv_sink_close(void *state, inf_error *err) {
    csv_sink *s = state;
    inf_status st = inf__io_out_close(&s->out, err);
    for (int i = 0; i < s->n_cols; i++) free(s->cols[i]);
    free(s->cols);
    free(s->map);
    free(s);
    return st;
}

const inf_sink_type inf__io_csv_sink = {"csv", csv_sink_open, csv_sink_write, inf__io_out_commit, csv_sink_close};
