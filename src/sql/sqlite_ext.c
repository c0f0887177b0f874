/*
 * sqlite_ext.c -- Infera as a loadable SQLite extension (build/infera_sqlite.so).
 *
 *   sqlite> .load ./build/infera_sqlite
 *   sqlite> SELECT infera_predict('fraud@production', json_object('amount', amount, ...)) FROM t;
 *
 * Functions (docs/sql.md):
 *   infera_predict(model_ref, json_record)       the primary prediction
 *                                                (INTEGER, REAL or TEXT)
 *   infera_predict_json(model_ref, json_record)  every prediction field, with
 *                                                model_name, model_version
 *                                                and pipeline_hash, as JSON text
 *   infera_generate(model_ref, prompt [, max_tokens])  a GGUF language model's
 *                                                greedy completion (TEXT;
 *                                                max_tokens default 128)
 *   infera_embed(model_ref, text)                its mean-pooled, L2-normalised
 *                                                final hidden state (JSON array)
 *   infera_log_predictions(sink_uri [, sample])  logs the predictions of this
 *                                                connection's infera_predict /
 *                                                infera_predict_json calls from now
 *                                                on (monitor/predlog.h; sample in
 *                                                (0, 1], default 1); NULL stops.
 *                                                Returns the counts of the log it
 *                                                closed (JSON text), else NULL.
 * model_ref is a path to an .onnx file or NAME / NAME@VERSION / NAME@ALIAS in
 * the embedded registry ($INFERA_HOME, default ./infera-data; $INFERA_REGISTRY
 * for a PostgreSQL registry).  Each connection keeps the models it used
 * (keyed by the reference string, resolved on first use) until it closes.
 * Every failure -- unknown model, bad JSON, a record the pipeline rejects --
 * is an SQL error naming the model and why; NULL arguments give NULL.
 *
 * Entry points: sqlite3_inferasqlite_init (the name SQLite derives from
 * "infera_sqlite") and sqlite3_extension_init.
 */
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "monitor/predlog.h"
#include "sql/generator.h"
#include "sql/scorer.h"

typedef struct conn_cache {
    inf__scorer **scorers;
    int n, cap;
    inf__mon_log *log;     /* the connection's prediction log, shared by its scorers (NULL: none) */
    inf__generator **gens; /* language models (infera_generate / infera_embed) */
    int n_gens, cap_gens;
} conn_cache;

static void cache_free(void *p) {
    conn_cache *c = p;
    if (!c) return;
    inf_error err;
    inf__mon_log_close(c->log, NULL, &err); /* drained before the scorers (their pipelines) go */
    for (int i = 0; i < c->n; i++) inf__scorer_free(c->scorers[i]);
    free(c->scorers);
    for (int i = 0; i < c->n_gens; i++) inf__generator_free(c->gens[i]);
    free(c->gens);
    free(c);
}

static inf__scorer *cache_get(sqlite3_context *ctx, conn_cache *c, const char *ref) {
    for (int i = 0; i < c->n; i++)
        if (!strcmp(inf__scorer_ref(c->scorers[i]), ref)) return c->scorers[i];
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 4;
        inf__scorer **p = realloc(c->scorers, (size_t)cap * sizeof *p);
        if (!p) {
            sqlite3_result_error_nomem(ctx);
            return NULL;
        }
        c->scorers = p;
        c->cap = cap;
    }
    inf__scorer *s = NULL;
    inf_error err;
    if (inf__scorer_new(ref, NULL, &s, &err)) {
        char msg[700];
        snprintf(msg, sizeof msg, "infera: model '%s': %s", ref, err.message);
        sqlite3_result_error(ctx, msg, -1);
        return NULL;
    }
    inf__scorer_set_log(s, c->log);
    c->scorers[c->n++] = s;
    return s;
}

/* Scores argv[1] with the model argv[0]; returns the output row or -1 after
 * setting an error result. */
static int score_one(sqlite3_context *ctx, sqlite3_value **argv, inf__scorer **out) {
    conn_cache *c = sqlite3_user_data(ctx);
    const char *ref = (const char *)sqlite3_value_text(argv[0]);
    const char *json = (const char *)sqlite3_value_text(argv[1]);
    int len = sqlite3_value_bytes(argv[1]);
    if (!ref || !*ref) {
        sqlite3_result_error(ctx, "infera: the model reference (argument 1) is empty", -1);
        return -1;
    }
    if (!json) {
        sqlite3_result_error(ctx, "infera: the record (argument 2) must be a JSON object", -1);
        return -1;
    }
    inf__scorer *s = cache_get(ctx, c, ref);
    if (!s) return -1;
    inf_error err;
    char msg[900];
    inf__scorer_clear(s);
    if (inf__scorer_add_json(s, json, (size_t)len, &err)) {
        snprintf(msg, sizeof msg, "infera: model '%s': the record is not a JSON object: %s", ref, err.message);
        sqlite3_result_error(ctx, msg, -1);
        return -1;
    }
    if (inf__scorer_score(s, &err)) {
        snprintf(msg, sizeof msg, "infera: model '%s': %s", ref, err.message);
        sqlite3_result_error(ctx, msg, -1);
        return -1;
    }
    const char *why = NULL;
    int row = inf__scorer_result(s, 0, &why);
    if (row < 0) {
        snprintf(msg, sizeof msg, "infera: model '%s': record rejected: %s", ref, why ? why : "");
        sqlite3_result_error(ctx, msg, -1);
        return -1;
    }
    *out = s;
    return row;
}

static void fn_predict(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL) {
        sqlite3_result_null(ctx);
        return;
    }
    inf__scorer *s = NULL;
    int row = score_one(ctx, argv, &s);
    if (row < 0) return;
    const inf_value *v = inf__scorer_primary(s, row);
    char ts[40];
    switch (v ? v->type : INF_FIELD_NULL) {
    case INF_FIELD_BOOL: sqlite3_result_int(ctx, v->u.b); break;
    case INF_FIELD_INT: sqlite3_result_int64(ctx, v->u.i); break;
    case INF_FIELD_FLOAT:
        if (v->u.f != v->u.f) sqlite3_result_null(ctx);
        else sqlite3_result_double(ctx, v->u.f);
        break;
    case INF_FIELD_STRING: sqlite3_result_text(ctx, v->u.s.ptr, (int)v->u.s.len, SQLITE_TRANSIENT); break;
    case INF_FIELD_TIMESTAMP:
        sqlite3_result_text(ctx, inf_format_timestamp(v->u.ts, ts, sizeof ts), -1, SQLITE_TRANSIENT);
        break;
    default: sqlite3_result_null(ctx);
    }
}

static void fn_predict_json(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL) {
        sqlite3_result_null(ctx);
        return;
    }
    inf__scorer *s = NULL;
    int row = score_one(ctx, argv, &s);
    if (row < 0) return;
    inf__scorer_buf b = {0};
    if (inf__scorer_row_json(s, row, 0, inf__scorer_buf_write, &b)) {
        free(b.p);
        sqlite3_result_error_nomem(ctx);
        return;
    }
    sqlite3_result_text(ctx, b.p ? b.p : "{}", (int)b.n, SQLITE_TRANSIENT);
    free(b.p);
}

/* ---- the prediction log ---- */

/* infera_log_predictions(sink_uri [, sample]): closes the connection's log
 * (drained: its rows are written) and opens sink_uri's, or none for NULL. */
static void fn_log_predictions(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    conn_cache *c = sqlite3_user_data(ctx);
    const char *uri = (const char *)sqlite3_value_text(argv[0]);
    double sample = argc == 2 && sqlite3_value_type(argv[1]) != SQLITE_NULL ? sqlite3_value_double(argv[1]) : 1.0;
    inf_error err;
    char msg[900];
    inf__mon_log *log = NULL;
    if (uri && inf__mon_log_open(uri, NULL, sample, 0, &log, &err)) {
        snprintf(msg, sizeof msg, "infera_log_predictions: %s", err.message);
        sqlite3_result_error(ctx, msg, -1);
        return;
    }
    inf__mon_log *old = c->log;
    c->log = log;
    for (int i = 0; i < c->n; i++)
        inf__scorer_set_log(c->scorers[i], log);
    if (!old) {
        sqlite3_result_null(ctx);
        return;
    }
    inf__mon_log_stats st;
    inf_status closed = inf__mon_log_close(old, &st, &err);
    cJSON *o = cJSON_CreateObject();
    if (o) {
        cJSON_AddNumberToObject(o, "seen", (double)st.n_seen);
        cJSON_AddNumberToObject(o, "sampled", (double)st.n_sampled);
        cJSON_AddNumberToObject(o, "written", (double)st.n_written);
        cJSON_AddNumberToObject(o, "dropped", (double)st.n_dropped);
        if (closed) cJSON_AddStringToObject(o, "error", err.message);
    }
    char *json = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!json)
        sqlite3_result_error_nomem(ctx);
    else
        sqlite3_result_text(ctx, json, -1, cJSON_free);
}

/* ---- language models ---- */

static inf__generator *gen_get(sqlite3_context *ctx, conn_cache *c, const char *ref) {
    for (int i = 0; i < c->n_gens; i++)
        if (!strcmp(inf__generator_ref(c->gens[i]), ref)) return c->gens[i];
    if (c->n_gens == c->cap_gens) {
        int cap = c->cap_gens ? c->cap_gens * 2 : 2;
        inf__generator **p = realloc(c->gens, (size_t)cap * sizeof *p);
        if (!p) {
            sqlite3_result_error_nomem(ctx);
            return NULL;
        }
        c->gens = p;
        c->cap_gens = cap;
    }
    inf__generator *g = NULL;
    inf_error err;
    if (inf__generator_new(ref, NULL, NULL, &g, &err)) {
        char msg[700];
        snprintf(msg, sizeof msg, "infera: language model '%s': %s", ref, err.message);
        sqlite3_result_error(ctx, msg, -1);
        return NULL;
    }
    c->gens[c->n_gens++] = g;
    return g;
}

/* The model and text arguments; NULL (after setting the result) when a NULL gives NULL or on error. */
static inf__generator *gen_args(sqlite3_context *ctx, sqlite3_value **argv, const char **text, int *len) {
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL) {
        sqlite3_result_null(ctx);
        return NULL;
    }
    const char *ref = (const char *)sqlite3_value_text(argv[0]);
    if (!ref || !*ref) {
        sqlite3_result_error(ctx, "infera: the model reference (argument 1) is empty", -1);
        return NULL;
    }
    *text = (const char *)sqlite3_value_text(argv[1]);
    *len = sqlite3_value_bytes(argv[1]);
    if (!*text) {
        sqlite3_result_error_nomem(ctx);
        return NULL;
    }
    return gen_get(ctx, sqlite3_user_data(ctx), ref);
}

static void fn_generate(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    const char *prompt;
    int len, max_tokens = 128;
    inf__generator *g = gen_args(ctx, argv, &prompt, &len);
    if (!g) return;
    if (argc == 3 && sqlite3_value_type(argv[2]) != SQLITE_NULL) {
        sqlite3_int64 m = sqlite3_value_int64(argv[2]);
        if (sqlite3_value_type(argv[2]) != SQLITE_INTEGER || m < 1 || m > 1000000) {
            sqlite3_result_error(ctx, "infera_generate: max_tokens (argument 3) must be an integer from 1 to 1000000", -1);
            return;
        }
        max_tokens = (int)m;
    }
    char *text = NULL;
    size_t n = 0;
    inf_error err;
    if (inf__generator_generate(g, prompt, (size_t)len, max_tokens, &text, &n, &err)) {
        char msg[900];
        snprintf(msg, sizeof msg, "infera_generate: model '%s': %s", inf__generator_ref(g), err.message);
        sqlite3_result_error(ctx, msg, -1);
        return;
    }
    sqlite3_result_text(ctx, text, (int)n, free);
}

static void fn_embed(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    const char *text;
    int len;
    inf__generator *g = gen_args(ctx, argv, &text, &len);
    if (!g) return;
    char *json = NULL;
    inf_error err;
    if (inf__generator_embed_json(g, text, (size_t)len, &json, &err)) {
        char msg[900];
        snprintf(msg, sizeof msg, "infera_embed: model '%s': %s", inf__generator_ref(g), err.message);
        sqlite3_result_error(ctx, msg, -1);
        return;
    }
    sqlite3_result_text(ctx, json, -1, free);
}

#ifdef _WIN32
__declspec(dllexport)
#else
__attribute__((visibility("default")))
#endif
int sqlite3_inferasqlite_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
    SQLITE_EXTENSION_INIT2(pApi);
    conn_cache *c = calloc(1, sizeof *c);
    if (!c) {
        if (pzErrMsg) *pzErrMsg = sqlite3_mprintf("infera: out of memory");
        return SQLITE_NOMEM;
    }
    /* the cache lives as long as the connection: the last function's
     * destructor frees it (both share one user-data pointer, so only the
     * second registration carries the destructor) */
    int rc = sqlite3_create_function_v2(db, "infera_predict", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, c, fn_predict, NULL,
                                        NULL, NULL);
    static const struct {
        const char *name;
        int n_args;
        void (*fn)(sqlite3_context *, int, sqlite3_value **);
    } llm_fns[] = {{"infera_generate", 2, fn_generate}, {"infera_generate", 3, fn_generate}, {"infera_embed", 2, fn_embed}};
    /* it writes files: direct SQL only, never from a trigger, view or schema */
    for (int n_args = 1; rc == SQLITE_OK && n_args <= 2; n_args++)
        rc = sqlite3_create_function_v2(db, "infera_log_predictions", n_args, SQLITE_UTF8 | SQLITE_DIRECTONLY, c,
                                        fn_log_predictions, NULL, NULL, NULL);
    for (size_t i = 0; rc == SQLITE_OK && i < sizeof llm_fns / sizeof llm_fns[0]; i++)
        rc = sqlite3_create_function_v2(db, llm_fns[i].name, llm_fns[i].n_args, SQLITE_UTF8 | SQLITE_DETERMINISTIC, c,
                                        llm_fns[i].fn, NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function_v2(db, "infera_predict_json", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, c,
                                        fn_predict_json, NULL, NULL, cache_free);
    else
        cache_free(c);
    if (rc != SQLITE_OK && pzErrMsg) *pzErrMsg = sqlite3_mprintf("infera: cannot register functions: %s", sqlite3_errmsg(db));
    return rc;
}

__attribute__((visibility("default"))) int sqlite3_extension_init(sqlite3 *db, char **pzErrMsg,
                                                                   const sqlite3_api_routines *pApi) {
    return sqlite3_inferasqlite_init(db, pzErrMsg, pApi);
}
