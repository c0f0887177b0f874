/*
 * io.h -- records, batches of records, and the sources and sinks that move
 * them (shared/DESIGN.md §1, §4: batch and stream runners, `infera features`).
 *
 * RECORDS.  A record is a set of named, typed fields: null, bool, int (64-bit),
 * float (double), string (UTF-8 bytes) or timestamp (UTC, microseconds since
 * the Unix epoch).  Records travel in batches.  A batch is row-major: it has a
 * schema (an ordered list of field names, shared by all its rows) and
 * n_rows * n_fields values; a field a record does not have is NULL.  Sources
 * that meet a new field name mid-batch (JSON lines, HTTP bodies) add a column;
 * rows already in the batch see NULL there.
 *
 * OWNERSHIP.  A batch owns everything in it: field names and string values
 * are copied into an arena that belongs to the batch, so a source may reuse
 * its read buffer at once.  inf_record_batch_clear() drops the rows and the
 * strings but keeps the schema and the capacity, so a runner that reuses one
 * batch per loop allocates nothing once warm.  Pointers into a batch (string
 * values, names) stay valid until the next clear/reset/free of that batch.
 * A batch is used by one thread at a time.
 *
 * SOURCES AND SINKS.  One small vtable each (Redis ConnectionType style), picked
 * by the URI scheme from one table (src/io/io.c):
 *
 *   csv:PATH                      header row = field names; `-` = stdin/stdout
 *   jsonl:PATH                    one JSON object per line; `-` = stdin/stdout
 *   sqlite:PATH?table=T           a table (a sink creates it when missing,
 *                                 with column types from the first batch)
 *   sqlite:PATH?query=SQL         a query (sources only); SQL is URL-decoded
 *   redis://H:P/STREAM            sink: XADD to a Redis stream, deduplicated by
 *                                 the key column (src/io/redis.c)
 *   mqtt://H:P/TOPIC              sink: QoS 1 publishes, commit() waits for the
 *                                 broker's PUBACKs (src/io/mqtt.c)
 *
 * Adding a kind (postgresql://, redis://, mqtt://) is one file defining an
 * inf_source_type / inf_sink_type and one row in the scheme table of
 * src/io/io.c; nothing else changes.  A source yields batches of at most
 * max_rows records; ack() tells it that every record of the batches it
 * returned so far is durably handled (streams then acknowledge their
 * messages; files ignore it).  A sink's write() may buffer; commit() makes
 * everything written so far durable (a transaction commit, an fflush), and
 * close() commits what is left.  A source or sink is used by one thread at a
 * time (it may move between threads).
 *
 * TYPES IN TEXT SOURCES.  CSV cells are typed by looking at them: empty ->
 * null, an integer literal -> int, a decimal/exponent literal (or nan, inf)
 * -> float, true/false -> bool, anything else -> string.  Timestamps arrive as
 * strings (ISO-8601) or numbers (epoch seconds) and become INF_FIELD_TIMESTAMP
 * only where a pipeline spec declares the field a timestamp
 * (inf_value_to_timestamp).  JSON numbers without '.', 'e' or 'E' that fit in
 * int64 are int; other numbers float; JSON null -> null; nested arrays and
 * objects are kept as their JSON text (string).  The id field is the
 * exception everywhere: its exact text (inf_record_batch_set_id_field).
 */
#ifndef INFERA_IO_H
#define INFERA_IO_H

#include <stdint.h>

#include "infera/infera.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Values ---------------------------------------------------------------- */

typedef enum inf_field_type {
    INF_FIELD_NULL = 0,
    INF_FIELD_BOOL = 1,
    INF_FIELD_INT = 2,
    INF_FIELD_FLOAT = 3,
    INF_FIELD_STRING = 4,
    INF_FIELD_TIMESTAMP = 5, /* UTC microseconds since 1970-01-01T00:00:00Z */
} inf_field_type;

/* "null", "bool", "int", "float", "string", "timestamp". */
INF_API const char *inf_field_type_name(inf_field_type type);
/* Parses those names (also "integer", "double", "str", "datetime"); -1 if unknown. */
INF_API int inf_field_type_from_name(const char *name);

/* One field value.  For strings, s.ptr points into the owning batch's arena
 * (borrowed; NUL-terminated; s.len bytes without the NUL). */
typedef struct inf_value {
    inf_field_type type;
    union {
        int b;      /* BOOL: 0 or 1 */
        int64_t i;  /* INT */
        double f;   /* FLOAT */
        int64_t ts; /* TIMESTAMP: microseconds since the epoch, UTC */
        struct {
            const char *ptr;
            uint32_t len;
        } s; /* STRING */
    } u;
} inf_value;

/* Numeric view of a value: bool/int/float as double, a timestamp as epoch
 * seconds, a string parsed as a number.  Returns 0 and sets *out, or -1 when
 * the value is null or not a number (*out untouched). */
INF_API int inf_value_to_double(const inf_value *v, double *out);
/* Timestamp view: TIMESTAMP as is, INT/FLOAT as epoch seconds, STRING as
 * ISO-8601 ("2024-03-01T12:30:00Z", "2024-03-01 12:30:00.25+02:00",
 * "2024-03-01"; no zone = UTC) or a number of epoch seconds.  0 or -1. */
INF_API int inf_value_to_timestamp(const inf_value *v, int64_t *out_us);
/* Parses an ISO-8601 date/time or decimal epoch seconds (len bytes at s). */
INF_API int inf_parse_timestamp(const char *s, size_t len, int64_t *out_us);
/* Writes a timestamp as "YYYY-MM-DDTHH:MM:SS[.ffffff]Z" into buf (>= 32 bytes). */
INF_API const char *inf_format_timestamp(int64_t us, char *buf, size_t size);

/* ---- Batches of records ---------------------------------------------------- */

typedef struct inf_record_batch inf_record_batch;

/* A new empty batch (no schema, no rows).  INF_ENOMEM. */
INF_API inf_status inf_record_batch_new(inf_record_batch **out);
INF_API void inf_record_batch_free(inf_record_batch *b);
/* Drops rows and string values; keeps the schema and the capacity. */
INF_API void inf_record_batch_clear(inf_record_batch *b);
/* Drops rows, strings and the schema; keeps the capacity. */
INF_API void inf_record_batch_reset(inf_record_batch *b);

INF_API int inf_record_batch_n_rows(const inf_record_batch *b);
INF_API int inf_record_batch_n_fields(const inf_record_batch *b);
/* Name of field i (borrowed from the batch). */
INF_API const char *inf_record_batch_field_name(const inf_record_batch *b, int i);
/* Index of the field called name, or -1.  O(1) amortised (hashed). */
INF_API int inf_record_batch_find_field(const inf_record_batch *b, const char *name);
/* Index of the field called name, adding it (NULL in every existing row) when
 * missing.  The name is copied.  INF_ENOMEM. */
INF_API inf_status inf_record_batch_add_field(inf_record_batch *b, const char *name, int *out_index);

/* Names the field that identifies a record (NULL: none); kept across
 * clear/reset.  IDS ARE TEXT: the text sources (CSV cells, JSON number
 * literals) and the SQL sources (an integer column as its exact decimal text,
 * any other type as the database prints it) store that field as a string
 * with the source's exact characters, so `1000000000000000001` never
 * becomes the float 1e18 and `1e3` stays distinct from `1000`; an empty CSV
 * cell and JSON/SQL null stay null.  Sources opened with
 * inf_source_options.id_column set it on the batches they fill.  INF_ENOMEM. */
INF_API inf_status inf_record_batch_set_id_field(inf_record_batch *b, const char *name);
/* The id field's name, or NULL. */
INF_API const char *inf_record_batch_id_field(const inf_record_batch *b);

/* Appends a row of NULLs; *out_row (may be NULL) gets its index.  INF_ENOMEM. */
INF_API inf_status inf_record_batch_add_row(inf_record_batch *b, int *out_row);
/* The value at (row, field); borrowed.  Out-of-range indices give a NULL value. */
INF_API const inf_value *inf_record_batch_get(const inf_record_batch *b, int row, int field);
/* Setters: row and field must exist.  Strings are copied into the batch
 * (len bytes; embedded NULs are kept but end the C string view).  INF_ENOMEM,
 * INF_EINVAL for a bad index. */
INF_API inf_status inf_record_batch_set(inf_record_batch *b, int row, int field, const inf_value *v);
INF_API inf_status inf_record_batch_set_null(inf_record_batch *b, int row, int field);
INF_API inf_status inf_record_batch_set_bool(inf_record_batch *b, int row, int field, int v);
INF_API inf_status inf_record_batch_set_int(inf_record_batch *b, int row, int field, int64_t v);
INF_API inf_status inf_record_batch_set_float(inf_record_batch *b, int row, int field, double v);
INF_API inf_status inf_record_batch_set_timestamp(inf_record_batch *b, int row, int field, int64_t us);
INF_API inf_status inf_record_batch_set_string(inf_record_batch *b, int row, int field, const char *s,
                                               size_t len);

/* Parses one JSON object (an HTTP body's record, a JSON line) into a new row,
 * adding fields as needed.  Errors (INF_EFORMAT: not an object, bad JSON)
 * name the offset; the batch is left without the partial row. */
INF_API inf_status inf_record_batch_add_json(inf_record_batch *b, const char *json, size_t len,
                                             inf_error *err);
/* Writes row as one JSON object (no newline) through the callback, which
 * gets (bytes, n, user); timestamps as ISO-8601 strings, non-finite floats as
 * null.  Fields listed in skip (NULL-terminated, may be NULL) are left out. */
typedef int (*inf_write_fn)(const char *bytes, size_t n, void *user);
INF_API inf_status inf_record_batch_row_to_json(const inf_record_batch *b, int row,
                                                const char *const *skip, inf_write_fn write,
                                                void *user);

/* ---- Sources and sinks ----------------------------------------------------- */

typedef struct inf_source inf_source;
typedef struct inf_sink inf_sink;

typedef struct inf_source_options {
    int max_rows;          /* rows per batch; 0 = 1024 */
    const char *id_column; /* informative: the column that identifies a record (may be NULL) */
} inf_source_options;

/* The vtable a source kind implements.  Every function gets the source's own
 * state (void *).  next() fills a cleared batch with up to max_rows records
 * and sets *eof when nothing is left (a batch may be non-empty AND eof).
 * Errors fill err with the URI (without credentials), the row and why. */
typedef struct inf_source_type {
    const char *scheme; /* "csv", "jsonl", "sqlite", ... */
    inf_status (*open)(const char *uri, const char *rest, const inf_source_options *opts, void **state,
                       inf_error *err);
    inf_status (*next)(void *state, inf_record_batch *batch, int *eof, inf_error *err);
    inf_status (*ack)(void *state, inf_error *err); /* may be NULL: nothing to acknowledge */
    void (*close)(void *state);
} inf_source_type;

typedef struct inf_sink_options {
    int append;             /* 1: append to an existing file/table; 0: replace (files) */
    const char *key_column; /* tables: primary key for idempotent upserts (may be NULL) */
    int keep_table_shape;   /* tables: 1 = an existing table must already have every field of the first
                             * batch as a column (the shape of an earlier run of the same job) -- it is
                             * refused, naming the missing columns, instead of being given new columns
                             * and a unique index on the key; 0 = adapt it (add both) */
} inf_sink_options;

/* write() gets a batch whose schema may differ between calls only by adding
 * fields at the end; a table sink fixes its columns at the first batch and
 * ignores later extra fields. */
typedef struct inf_sink_type {
    const char *scheme;
    inf_status (*open)(const char *uri, const char *rest, const inf_sink_options *opts, void **state,
                       inf_error *err);
    inf_status (*write)(void *state, const inf_record_batch *batch, inf_error *err);
    inf_status (*commit)(void *state, inf_error *err);
    inf_status (*close)(void *state, inf_error *err); /* commits, then frees state, even on error */
} inf_sink_type;

/* Opens a source from a URI ("csv:data.csv", "jsonl:-", "sqlite:f.db?table=t").
 * opts may be NULL.  INF_EINVAL for an unknown scheme or bad URI, INF_EIO /
 * INF_ENOENT when it cannot be opened. */
INF_API inf_status inf_source_open(const char *uri, const inf_source_options *opts, inf_source **out,
                                   inf_error *err);
/* Clears batch, then reads the next records into it.  *eof = 1 when the source
 * is exhausted.  A malformed record fails the call with its row number; the
 * source may be read further (the bad record is skipped). */
INF_API inf_status inf_source_next(inf_source *src, inf_record_batch *batch, int *eof, inf_error *err);
/* Acknowledges everything returned so far. */
INF_API inf_status inf_source_ack(inf_source *src, inf_error *err);
INF_API void inf_source_close(inf_source *src);

INF_API inf_status inf_sink_open(const char *uri, const inf_sink_options *opts, inf_sink **out,
                                 inf_error *err);
INF_API inf_status inf_sink_write(inf_sink *sink, const inf_record_batch *batch, inf_error *err);
INF_API inf_status inf_sink_commit(inf_sink *sink, inf_error *err);
/* Commits and frees; the sink is gone even when an error is returned. */
INF_API inf_status inf_sink_close(inf_sink *sink, inf_error *err);

/* The scheme table, for `infera help` and tests: n kinds of each. */
INF_API int inf_io_n_source_types(void);
INF_API const inf_source_type *inf_io_source_type(int i);
INF_API int inf_io_n_sink_types(void);
INF_API const inf_sink_type *inf_io_sink_type(int i);

/* A network URI "scheme://[user[:password]@]host[:port][/path][?query]"
 * split into its parts, for the redis:// and mqtt:// sources and sinks
 * (src/io, src/stream).  path is what follows the first '/' up to '?'
 * (URL-decoded; "" when absent); port is default_port when absent.
 * INF_EINVAL (err names the URI without credentials) when it does not parse. */
typedef struct inf_net_uri {
    char scheme[16];
    char user[128], password[256];
    char host[256];
    int port;
    char path[512];
} inf_net_uri;
INF_API inf_status inf_io_parse_net_uri(const char *uri, int default_port, inf_net_uri *out, inf_error *err);
/* The query parameter key of uri ("...?k=v&k2=v2"), URL-decoded into buf;
 * returns buf, or NULL when absent. */
INF_API const char *inf_io_uri_param(const char *uri, const char *key, char *buf, size_t size);
/* Sets (row, field) from text typed the way CSV cells are (see TYPES IN TEXT
 * SOURCES): empty -> null, integer, float, bool, else string.  INF_ENOMEM,
 * INF_EINVAL for a bad index. */
INF_API inf_status inf_record_batch_set_text(inf_record_batch *b, int row, int field, const char *s, size_t len);

/* A URI with any password ("user:pass@", "password=...") replaced by "***",
 * for error messages and logs.  Writes into buf; returns buf. */
INF_API const char *inf_io_redact_uri(const char *uri, char *buf, size_t size);

/* The SQL (PostgreSQL) predicate that selects shard k of n (0 <= k < n) by
 * the id column: `abs(hashtext("ID"::text)::bigint) % n = k`, the column
 * quoted as an identifier (embedded quotes doubled).  Written into out (size
 * bytes); 0, or -1 when k/n are out of range or it does not fit.  The one
 * definition the PostgreSQL source and `infera batch --shard` share. */
INF_API int inf_io_shard_predicate(const char *id_column, int k, int n, char *out, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* INFERA_IO_H */
