/*
 * io_int.h -- internal helpers shared by the source/sink kinds of src/io.
 *
 * Each kind (csv.c, jsonl.c, sqlite.c, npy.c, and later pg.c, redis.c,
 * mqtt.c) defines `const inf_source_type inf__io_<kind>_source` and/or
 * `const inf_sink_type inf__io_<kind>_sink`; io.c lists them in its scheme
 * tables.  Adding a kind = one file + one row in each table it implements.
 */
#ifndef INF_IO_INT_H
#define INF_IO_INT_H

#include <stdio.h>

#include "infera/io.h"
#include "io/record_int.h"

extern const inf_source_type inf__io_csv_source, inf__io_jsonl_source, inf__io_sqlite_source;
extern const inf_sink_type inf__io_csv_sink, inf__io_jsonl_sink, inf__io_sqlite_sink, inf__io_npy_sink;
extern const inf_source_type inf__io_postgresql_source; /* postgres.c */
extern const inf_sink_type inf__io_postgresql_sink;
extern const inf_sink_type inf__io_redis_sink; /* redis.c */
extern const inf_sink_type inf__io_mqtt_sink;  /* mqtt.c (a stub without libmosquitto) */

/* Connects to u's host and port (timeout_s for the connection and for each
 * reply) and authenticates with u's user and password when it has them
 * (redis.c; used by the Redis sink, the stream source and online lookups).
 * Errors start with `who`. */
struct redisContext;
inf_status inf__io_redis_connect(const inf_net_uri *u, int timeout_s, const char *who, struct redisContext **out,
                                 inf_error *err);

/* PostgreSQL URIs (postgres.c; also the batch runner's job-level table
 * operations, src/batch/target.c): the libpq connection URI of uri without
 * infera's parameters (table, query, shard); "schema.table" or "table"
 * quoted as identifiers by the server's rules (PQescapeIdentifier). */
struct pg_conn;
void inf__io_pg_conninfo(const char *uri, char *conninfo, size_t size);
void inf__io_pg_quote_table(struct pg_conn *c, const char *table, char *out, size_t size);

#ifdef INFERA_WITH_MQTT
/* A libmosquitto client (the library set up once per process) with u's
 * credentials, connecting to u's host and port (mqtt.c; used by the MQTT
 * sink and the stream source).  Callbacks are set by the caller afterwards;
 * they run once its network loop runs.  On failure *out may be non-NULL:
 * the caller destroys it.  Errors start with `who`. */
struct mosquitto;
inf_status inf__io_mqtt_connect(const inf_net_uri *u, const char *client_id, int clean_session, void *obj,
                                const char *who, struct mosquitto **out, inf_error *err);
#endif

/* Errors: inf_error_set (include/infera/infera.h), printf-format checked. */

/* Finds the query parameter `key` in "PATH?k=v&k2=v2" (URL-decoded into buf);
 * returns buf, or NULL when absent.  inf__io_uri_path copies PATH. */
const char *inf__io_uri_param(const char *rest, const char *key, char *buf, size_t size);
const char *inf__io_uri_path(const char *rest, char *buf, size_t size);

/* The refusal of a sink with keep_table_shape: an existing table lacks the
 * n_missing columns listed in missing (fields of the first batch).  who
 * names the sink ("sqlite:PATH", a redacted PostgreSQL URI).  INF_EINVAL. */
inf_status inf__io_table_shape_refused(inf_error *err, const char *who, const char *table, const char *const *missing,
                                       int n_missing);

/* Types a text cell as CSV sources do (empty -> null, integer, float, bool, string). */
inf_status inf__io_set_text_cell(inf_record_batch *b, int row, int field, const char *s, size_t len);

/* File plumbing of the file kinds (csv.c, jsonl.c).  rest is the path, "-"
 * meaning stdin/stdout (then *owns is 0 and the stream must not be closed).
 * inf__io_open_input opens for reading: INF_ENOENT or INF_EIO, err
 * "URI: cannot open: why".  inf__io_open_output opens for writing (appending
 * when append, else truncating): INF_EIO, err "URI: cannot create: why".
 * inf__io_flush flushes f and checks its error flag: INF_EIO, err
 * "KIND:PATH: write failed: why". */
inf_status inf__io_open_input(const char *uri, const char *rest, FILE **f, int *owns, inf_error *err);
inf_status inf__io_open_output(const char *uri, const char *rest, int append, FILE **f, int *owns, inf_error *err);
inf_status inf__io_flush(FILE *f, const char *kind, const char *path, inf_error *err);

/* The output file of a file sink (csv.c, jsonl.c).  It comes first in the
 * sink's state, so the state is also an inf__io_out.
 * inf__io_out_new allocates a zeroed state of state_size bytes (at least an
 * inf__io_out) and opens rest in it as inf__io_open_output does (kind names
 * the sink in messages); on failure nothing is left allocated: INF_ENOMEM
 * ("URI: out of memory") or inf__io_open_output's error.
 * inf__io_out_commit is the file sinks' commit: inf__io_flush.
 * inf__io_out_close flushes, then closes f when it was opened here (also
 * after a failed flush, whose error it returns); a failed close: INF_EIO,
 * err "KIND:PATH: close failed: why".  It does not free the state. */
typedef struct inf__io_out {
    FILE *f;
    int owns;         /* f opened here (not stdout): inf__io_out_close closes it */
    const char *kind; /* "csv", "jsonl" */
    char path[512];
} inf__io_out;
inf_status inf__io_out_new(size_t state_size, const char *kind, const char *uri, const char *rest, int append,
                           void **state, inf_error *err);
inf_status inf__io_out_commit(void *state, inf_error *err);
inf_status inf__io_out_close(inf__io_out *o, inf_error *err);

/* name as a double-quoted SQL identifier (embedded quotes doubled) in out,
 * cut to fit size; nothing written when size < 3.  For the SQLite and
 * PostgreSQL sources and sinks and the pipeline's online lookups. */
void inf__io_quote_ident(char *out, size_t size, const char *name);

/* A growable byte buffer; inf__io_buf_write is an inf_write_fn appending to
 * it (user = the buffer), -1 when out of memory.  Free p with free(). */
typedef struct inf__io_buf {
    char *p;
    size_t n, cap;
} inf__io_buf;
int inf__io_buf_write(const char *bytes, size_t n, void *user);

/* A value as text (strings as is, numbers in decimal with round-trip
 * precision, bools true/false, timestamps ISO-8601, null ""); returns a
 * pointer to the text (v's own string or buf) and sets *len. */
const char *inf__io_value_text(const inf_value *v, char *buf, size_t size, size_t *len);

#endif /* INF_IO_INT_H */
