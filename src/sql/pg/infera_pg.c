/*
 * infera_pg.c -- Infera as a PostgreSQL extension (CREATE EXTENSION infera).
 *
 *   infera.predict(model_ref text, record jsonb) -> double precision
 *       the primary prediction (scorer.h) of one record; PARALLEL SAFE
 *   infera.predict_json(model_ref text, record jsonb) -> jsonb
 *       every prediction field + model_name, model_version, pipeline_hash
 *   infera.predict_query(model_ref text, query text, id_column text DEFAULT NULL,
 *                        batch_size integer DEFAULT 1024)
 *       -> TABLE(id text, prediction jsonb, error text)
 *       runs query through a cursor and scores its rows batch_size at a time;
 *       a rejected row gives error (and NULL prediction) instead of failing
 *   infera.generate(model_ref text, prompt text, max_tokens integer DEFAULT 128) -> text
 *       a GGUF language model's greedy completion (sql/generator.h)
 *   infera.embed(model_ref text, input text) -> jsonb
 *       its mean-pooled, L2-normalised final hidden state
 *
 * Prediction log (docs/monitoring.md): the GUCs infera.log_predictions (a
 * sink URI: jsonl:, csv:, sqlite:, postgresql://; empty = off) and
 * infera.log_sample (in (0, 1], default 1) log the predictions of predict,
 * predict_json and predict_query (monitor/predlog.h: the same rows as
 * `infera batch --log-predictions`).  Superuser settings (the server writes
 * the sink).  Each backend (and parallel worker) opens its own log on its
 * first call with the setting and reopens it when the setting changes; the
 * log's writer thread blocks every signal and never calls PostgreSQL; the
 * rows are drained when the backend exits (its counts in the server log).
 *
 * model_ref: a path to an .onnx file readable by the server, or NAME /
 * NAME@VERSION / NAME@ALIAS in the registry at the GUC infera.home (default:
 * the server's INFERA_HOME, else ./infera-data relative to the data
 * directory) or infera.registry (a postgresql:// registry URL).
 *
 * DESIGN.  Each backend (and each parallel worker) keeps the models it used
 * in a small cache (malloc'd, keyed by the reference string) for its whole
 * life: the engine is not PostgreSQL-memory-aware and a model is reused by
 * every call.  This per-backend cache is the one piece of static mutable
 * state, inherent to a PostgreSQL extension.  Sessions run with one thread
 * (the only thread a backend gets is the prediction log's writer, above).  Every failure is turned into
 * ereport(ERROR) after the engine's state is made consistent, so an error
 * never crashes the backend and the next call starts clean.
 */
#include "postgres.h"

#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "catalog/pg_type_d.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

#include <stdlib.h>
#include <string.h>

#include "monitor/predlog.h"
#include "sql/generator.h"
#include "sql/scorer.h"
#include "storage/ipc.h"

PG_MODULE_MAGIC;

#define EXPORT __attribute__((visibility("default")))

static char *guc_home = NULL;
static char *guc_registry = NULL;
static char *guc_log = NULL;
static double guc_log_sample = 1.0;

/* A scorer per (model reference, id column): predict_query's id column is
 * not a feature of a spec-less model (DESIGN.md §4), so it is part of how
 * the model is set up. */
typedef struct cached_scorer {
    inf__scorer *s;
    char *id_column; /* malloc'd, NULL for none */
} cached_scorer;

typedef struct backend_cache {
    cached_scorer *s;
    int n, cap;
} backend_cache;
static backend_cache cache;

/* The backend's prediction log (shared by its scorers) and the settings it
 * was opened with; a setting that failed to open is remembered (warned once). */
static struct {
    inf__mon_log *log;
    char *uri; /* malloc'd: the open (or failed) setting, NULL for none */
    double sample;
    int failed;
} plog;

static void log_set_all(inf__mon_log *log) {
    for (int i = 0; i < cache.n; i++)
        inf__scorer_set_log(cache.s[i].s, log);
}

/* Drains and closes the backend's log; its counts go to the server log. */
static void log_close(void) {
    if (!plog.log) return;
    log_set_all(NULL);
    inf__mon_log_stats st;
    inf_error err;
    inf_status closed = inf__mon_log_close(plog.log, &st, &err);
    plog.log = NULL;
    elog(closed ? WARNING : LOG, "infera: prediction log: %llu records, %llu sampled, %llu logged, %llu dropped%s%s",
         (unsigned long long)st.n_seen, (unsigned long long)st.n_sampled, (unsigned long long)st.n_written,
         (unsigned long long)st.n_dropped, closed ? ": " : "", closed ? err.message : "");
}

static void log_at_exit(int code, Datum arg) {
    (void)code;
    (void)arg;
    log_close();
}

/* Follows the GUCs: opens, reopens or closes the backend's log. */
static void log_sync(void) {
    const char *want = guc_log && *guc_log ? guc_log : NULL;
    if (!want && !plog.uri) return;
    if (want && plog.uri && !strcmp(want, plog.uri) && guc_log_sample == plog.sample) return;
    log_close();
    free(plog.uri);
    plog.uri = want ? strdup(want) : NULL;
    plog.sample = guc_log_sample;
    plog.failed = 0;
    if (!want) return;
    if (!plog.uri) ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("infera: out of memory")));
    static int registered;
    if (!registered) {
        on_proc_exit(log_at_exit, 0);
        registered = 1;
    }
    inf_error err;
    if (inf__mon_log_open(want, NULL, guc_log_sample, 0, &plog.log, &err)) {
        plog.failed = 1; /* logging never fails scoring: warn once, score without */
        ereport(WARNING, (errmsg("infera: %s (predictions are not logged)", err.message)));
        return;
    }
    log_set_all(plog.log);
}

EXPORT void _PG_init(void);
void _PG_init(void) {
    DefineCustomStringVariable("infera.home", "Infera home: the embedded registry and its artifacts.",
                               "Default: the server's INFERA_HOME, else ./infera-data.", &guc_home, NULL, PGC_SUSET, 0,
                               NULL, NULL, NULL);
    DefineCustomStringVariable("infera.registry", "A postgresql:// URL of a shared Infera registry.", NULL,
                               &guc_registry, NULL, PGC_SUSET, 0, NULL, NULL, NULL);
    DefineCustomStringVariable("infera.log_predictions", "Sink URI of the prediction log (empty: off).",
                               "jsonl:PATH, csv:PATH, sqlite:PATH?table=T or a postgresql:// URL ?table=T.", &guc_log,
                               NULL, PGC_SUSET, 0, NULL, NULL, NULL);
    DefineCustomRealVariable("infera.log_sample", "Fraction of the predictions logged.", NULL, &guc_log_sample, 1.0,
                             1e-9, 1.0, PGC_SUSET, 0, NULL, NULL, NULL);
}

/* The scorer of ref with id_column (may be NULL), loaded on first use. */
static inf__scorer *get_scorer(const char *ref, const char *id_column) {
    log_sync();
    for (int i = 0; i < cache.n; i++) {
        const char *id = cache.s[i].id_column;
        if (!strcmp(inf__scorer_ref(cache.s[i].s), ref) && (id && id_column ? !strcmp(id, id_column) : id == id_column))
            return cache.s[i].s;
    }
    if (cache.n == cache.cap) {
        int cap = cache.cap ? cache.cap * 2 : 4;
        cached_scorer *p = realloc(cache.s, (size_t)cap * sizeof *p);
        if (!p) ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("infera: out of memory")));
        cache.s = p;
        cache.cap = cap;
    }
    char *id_copy = id_column ? strdup(id_column) : NULL;
    if (id_column && !id_copy) ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("infera: out of memory")));
    inf__scorer_options o = {0};
    o.home = guc_home && *guc_home ? guc_home : NULL;
    o.registry_url = guc_registry && *guc_registry ? guc_registry : NULL;
    o.id_column = id_column;
    inf__scorer *s = NULL;
    inf_error err;
    if (inf__scorer_new(ref, &o, &s, &err)) {
        free(id_copy);
        ereport(ERROR, (errcode(err.status == INF_ENOENT ? ERRCODE_UNDEFINED_OBJECT : ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("infera: model \"%s\": %s", ref, err.message)));
    }
    inf__scorer_set_log(s, plog.log);
    cache.s[cache.n].s = s;
    cache.s[cache.n].id_column = id_copy;
    cache.n++;
    return s;
}

/* The record argument (jsonb or json) as JSON text.  jsonb sorts its keys,
 * so it is refused for a model without a pipeline spec (the default
 * pipeline maps numeric fields by their order): json keeps the order. */
static char *record_text(FunctionCallInfo fcinfo, const char *ref, inf__scorer *s) {
    if (get_fn_expr_argtype(fcinfo->flinfo, 1) == JSONOID) return text_to_cstring(PG_GETARG_TEXT_PP(1));
    Jsonb *jb = PG_GETARG_JSONB_P(1);
    if (!JB_ROOT_IS_OBJECT(jb) || JB_ROOT_IS_SCALAR(jb))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("infera: model \"%s\": the record must be a JSON object", ref)));
    if (inf__scorer_is_default(s))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("infera: model \"%s\" has no pipeline spec, so its inputs are the record's numeric "
                               "fields in order, and jsonb does not keep the order of keys",
                               ref),
                        errhint("Pass a json record (row_to_json(t), json_build_object(...)) or register the model "
                                "with a pipeline spec.")));
    return JsonbToCString(NULL, &jb->root, VARSIZE(jb));
}

/* Scores one record (argument 1); returns the output row (ereports on any failure). */
static int score_record(FunctionCallInfo fcinfo, const char *ref, inf__scorer **out) {
    if (!*ref) ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("infera: the model reference is empty")));
    inf__scorer *s = get_scorer(ref, NULL);
    char *json = record_text(fcinfo, ref, s);
    inf_error err;
    inf__scorer_clear(s);
    if (inf__scorer_add_json(s, json, strlen(json), &err)) {
        inf__scorer_clear(s);
        ereport(ERROR, (errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
                        errmsg("infera: model \"%s\": bad record: %s", ref, err.message)));
    }
    pfree(json);
    if (inf__scorer_score(s, &err)) {
        inf__scorer_clear(s);
        ereport(ERROR, (errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION), errmsg("infera: model \"%s\": %s", ref, err.message)));
    }
    const char *why = NULL;
    int row = inf__scorer_result(s, 0, &why);
    if (row < 0) {
        char msg[800];
        snprintf(msg, sizeof msg, "%s", why ? why : "rejected");
        inf__scorer_clear(s);
        ereport(ERROR, (errcode(ERRCODE_DATA_EXCEPTION), errmsg("infera: model \"%s\": record rejected: %s", ref, msg)));
    }
    *out = s;
    return row;
}

EXPORT Datum infera_pg_predict(PG_FUNCTION_ARGS);
PG_FUNCTION_INFO_V1(infera_pg_predict);
Datum infera_pg_predict(PG_FUNCTION_ARGS) {
    char *ref = text_to_cstring(PG_GETARG_TEXT_PP(0));
    inf__scorer *s;
    int row = score_record(fcinfo, ref, &s);
    const inf_value *v = inf__scorer_primary(s, row);
    double d = 0;
    int is_null = 0;
    switch (v ? v->type : INF_FIELD_NULL) {
    case INF_FIELD_BOOL: d = v->u.b; break;
    case INF_FIELD_INT: d = (double)v->u.i; break;
    case INF_FIELD_FLOAT: d = v->u.f; is_null = d != d; break;
    case INF_FIELD_NULL: is_null = 1; break;
    default: {
        char name[200];
        snprintf(name, sizeof name, "%s", inf__scorer_primary_name(s) ? inf__scorer_primary_name(s) : "?");
        inf__scorer_clear(s);
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                        errmsg("infera: model \"%s\": the primary prediction \"%s\" is not a number; use "
                               "infera.predict_json",
                               ref, name)));
    }
    }
    inf__scorer_clear(s);
    if (is_null) PG_RETURN_NULL();
    PG_RETURN_FLOAT8(d);
}

static int sinfo_write(const char *bytes, size_t n, void *user) {
    appendBinaryStringInfo((StringInfo)user, bytes, (int)n);
    return 0;
}

static Datum row_jsonb(inf__scorer *s, int row) {
    StringInfoData buf;
    initStringInfo(&buf);
    if (inf__scorer_row_json(s, row, 0, sinfo_write, &buf)) {
        inf__scorer_clear(s);
        ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("infera: out of memory")));
    }
    return DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data));
}

EXPORT Datum infera_pg_predict_json(PG_FUNCTION_ARGS);
PG_FUNCTION_INFO_V1(infera_pg_predict_json);
Datum infera_pg_predict_json(PG_FUNCTION_ARGS) {
    char *ref = text_to_cstring(PG_GETARG_TEXT_PP(0));
    inf__scorer *s;
    int row = score_record(fcinfo, ref, &s);
    Datum d = row_jsonb(s, row);
    inf__scorer_clear(s);
    PG_RETURN_DATUM(d);
}

/* Scores the records in s and appends one result row each. */
static void flush_batch(inf__scorer *s, const char *ref, ReturnSetInfo *rsinfo, char **ids, int n) {
    inf_error err;
    if (inf__scorer_score(s, &err)) {
        inf__scorer_clear(s);
        ereport(ERROR, (errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION), errmsg("infera: model \"%s\": %s", ref, err.message)));
    }
    for (int i = 0; i < n; i++) {
        Datum values[3];
        bool nulls[3] = {false, false, false};
        const char *why = NULL;
        int row = inf__scorer_result(s, i, &why);
        if (ids[i]) values[0] = CStringGetTextDatum(ids[i]);
        else nulls[0] = true;
        if (row >= 0) {
            values[1] = row_jsonb(s, row);
            nulls[2] = true;
        } else {
            nulls[1] = true;
            values[2] = CStringGetTextDatum(why ? why : "rejected");
        }
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
    inf__scorer_clear(s);
}

EXPORT Datum infera_pg_predict_query(PG_FUNCTION_ARGS);
PG_FUNCTION_INFO_V1(infera_pg_predict_query);
Datum infera_pg_predict_query(PG_FUNCTION_ARGS) {
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("infera: model_ref and query must not be NULL")));
    char *ref = text_to_cstring(PG_GETARG_TEXT_PP(0));
    char *query = text_to_cstring(PG_GETARG_TEXT_PP(1));
    char *id_col = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
    int batch = PG_ARGISNULL(3) ? 1024 : PG_GETARG_INT32(3);
    if (batch < 1 || batch > 1000000)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("infera: batch_size must be 1..1000000")));
    if (!*ref) ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("infera: the model reference is empty")));
    InitMaterializedSRF(fcinfo, 0);
    ReturnSetInfo *rsinfo = (ReturnSetInfo *)fcinfo->resultinfo;
    inf__scorer *s = get_scorer(ref, id_col);
    inf__scorer_clear(s);

    StringInfoData sql;
    initStringInfo(&sql);
    appendStringInfo(&sql, "SELECT row_to_json(infera_q)::text%s%s%s FROM (%s) AS infera_q",
                     id_col ? ", (infera_q." : "", id_col ? quote_identifier(id_col) : "", id_col ? ")::text" : "",
                     query);
    if (SPI_connect() != SPI_OK_CONNECT) ereport(ERROR, (errmsg("infera: SPI_connect failed")));
    Portal portal = SPI_cursor_open_with_args(NULL, sql.data, 0, NULL, NULL, NULL, true, 0);
    MemoryContext call_ctx = CurrentMemoryContext;
    MemoryContext batch_ctx = AllocSetContextCreate(call_ctx, "infera batch", ALLOCSET_DEFAULT_SIZES);
    char **ids = palloc0(sizeof(char *) * (size_t)batch);
    int64 ordinal = 0;
    for (;;) {
        SPI_cursor_fetch(portal, true, batch);
        uint64 n = SPI_processed;
        if (n == 0) break;
        SPITupleTable *tt = SPI_tuptable;
        for (uint64 i = 0; i < n; i++) {
            char *json = SPI_getvalue(tt->vals[i], tt->tupdesc, 1);
            char *id = id_col ? SPI_getvalue(tt->vals[i], tt->tupdesc, 2) : NULL;
            ordinal++;
            if (!id && !id_col) id = psprintf("%lld", (long long)ordinal);
            ids[i] = id;
            inf_error err;
            if (!json || inf__scorer_add_json(s, json, strlen(json), &err)) {
                inf__scorer_clear(s);
                ereport(ERROR, (errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
                                errmsg("infera: model \"%s\": row %lld is not a JSON object", ref, (long long)ordinal)));
            }
            pfree(json);
        }
        MemoryContext old = MemoryContextSwitchTo(batch_ctx);
        flush_batch(s, ref, rsinfo, ids, (int)n);
        MemoryContextSwitchTo(old);
        MemoryContextReset(batch_ctx);
        for (uint64 i = 0; i < n; i++)
            if (ids[i]) pfree(ids[i]);
        SPI_freetuptable(tt);
    }
    SPI_cursor_close(portal);
    SPI_finish();
    return (Datum)0;
}

/* ---- language models (generator.h): one per reference per backend ---- */

typedef struct gen_cache {
    inf__generator **g;
    int n, cap;
} gen_cache;
static gen_cache gens;

static inf__generator *get_generator(const char *ref) {
    if (!*ref) ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("infera: the model reference is empty")));
    for (int i = 0; i < gens.n; i++)
        if (!strcmp(inf__generator_ref(gens.g[i]), ref)) return gens.g[i];
    if (gens.n == gens.cap) {
        int cap = gens.cap ? gens.cap * 2 : 2;
        inf__generator **p = realloc(gens.g, (size_t)cap * sizeof *p);
        if (!p) ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("infera: out of memory")));
        gens.g = p;
        gens.cap = cap;
    }
    inf__generator *g = NULL;
    inf_error err;
    if (inf__generator_new(ref, guc_home && *guc_home ? guc_home : NULL, guc_registry && *guc_registry ? guc_registry : NULL,
                           &g, &err))
        ereport(ERROR, (errcode(err.status == INF_ENOENT ? ERRCODE_UNDEFINED_OBJECT : ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("infera: language model \"%s\": %s", ref, err.message)));
    gens.g[gens.n++] = g;
    return g;
}

EXPORT Datum infera_pg_generate(PG_FUNCTION_ARGS);
PG_FUNCTION_INFO_V1(infera_pg_generate);
Datum infera_pg_generate(PG_FUNCTION_ARGS) {
    char *ref = text_to_cstring(PG_GETARG_TEXT_PP(0));
    text *prompt = PG_GETARG_TEXT_PP(1);
    int32 max_tokens = PG_GETARG_INT32(2);
    if (max_tokens < 1 || max_tokens > 1000000)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("infera.generate: max_tokens must be from 1 to 1000000, not %d", max_tokens)));
    inf__generator *g = get_generator(ref);
    char *out = NULL;
    size_t n = 0;
    inf_error err;
    if (inf__generator_generate(g, VARDATA_ANY(prompt), VARSIZE_ANY_EXHDR(prompt), max_tokens, &out, &n, &err))
        ereport(ERROR, (errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
                        errmsg("infera.generate: model \"%s\": %s", ref, err.message)));
    text *t = cstring_to_text_with_len(out, (int)n);
    free(out);
    PG_RETURN_TEXT_P(t);
}

EXPORT Datum infera_pg_embed(PG_FUNCTION_ARGS);
PG_FUNCTION_INFO_V1(infera_pg_embed);
Datum infera_pg_embed(PG_FUNCTION_ARGS) {
    char *ref = text_to_cstring(PG_GETARG_TEXT_PP(0));
    text *input = PG_GETARG_TEXT_PP(1);
    inf__generator *g = get_generator(ref);
    char *json = NULL;
    inf_error err;
    if (inf__generator_embed_json(g, VARDATA_ANY(input), VARSIZE_ANY_EXHDR(input), &json, &err))
        ereport(ERROR, (errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
                        errmsg("infera.embed: model \"%s\": %s", ref, err.message)));
    Datum d = DirectFunctionCall1(jsonb_in, CStringGetDatum(json));
    free(json);
    PG_RETURN_DATUM(d);
}
