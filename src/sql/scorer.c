/*
 * scorer.c -- small-batch scoring of JSON records for the SQL extensions
 * (see scorer.h).  Callers: src/sql/sqlite_ext.c, src/sql/pg/infera_pg.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "runtime/model.h"
#include "runtime/score.h"
#include "sql/scorer.h"

struct inf__scorer {
    char *ref;
    inf__rt_model m;
    inf_session *session;
    inf_pipeline_exec *exec;
    inf_record_batch *in, *out;
    int *row_of;     /* per record: output row or -1 */
    char **why;      /* per record: rejection reason (owned) or NULL */
    int cap;
    int n_records;
    const char **skip; /* fields left out of row JSON: passthrough + pipeline_hash (+ id) */
    cJSON *spec;       /* the canonical spec, parsed (NULL for the default pipeline) */
    const cJSON *passthrough; /* its "passthrough" array, or NULL */
    int n_skip, cap_skip;
    int primary;     /* field index in out, -1 */
    int n_classified; /* fields of out classified into skip/primary so far */
    char id_column[256];
    inf__rt_scorer core; /* the scoring core (runtime/score.h); a call whose every record fails alone fails */
};

inf_status inf__scorer_new(const char *ref, const inf__scorer_options *opts, inf__scorer **out, inf_error *err) {
    *out = NULL;
    inf__scorer *s = calloc(1, sizeof *s);
    if (!s || !(s->ref = strdup(ref ? ref : ""))) {
        free(s);
        return inf_error_set(err, INF_ENOMEM, "infera: out of memory loading %s", ref ? ref : "");
    }
    inf__rt_model_options mo = {0};
    if (opts) {
        mo.home = opts->home;
        mo.registry_url = opts->registry_url;
        mo.id_column = opts->id_column;
        if (opts->id_column) snprintf(s->id_column, sizeof s->id_column, "%s", opts->id_column);
    }
    inf_status st = inf__rt_model_open(ref, &mo, &s->m, err);
    if (st) goto fail;
    if (!s->id_column[0] && inf_pipeline_id_column(s->m.pipeline))
        snprintf(s->id_column, sizeof s->id_column, "%s", inf_pipeline_id_column(s->m.pipeline));
    /* The spec's passthrough list says which output fields are copies of input
     * fields; an output may share its name with an input field (the fraud
     * spec's is_fraud prediction and the raw records' is_fraud label). */
    const char *canon = inf_pipeline_is_default(s->m.pipeline) ? NULL : inf_pipeline_canonical(s->m.pipeline);
    if (canon && *canon == '{') {
        if (!(s->spec = cJSON_Parse(canon))) {
            st = inf_error_set(err, INF_ENOMEM, "infera: out of memory loading %s", ref);
            goto fail;
        }
        s->passthrough = cJSON_GetObjectItemCaseSensitive(s->spec, "passthrough");
    }
    if ((st = inf__rt_model_session(&s->m, 1, 0, &s->session, &s->exec, err))) goto fail;
    inf_pipeline_exec_map_each_batch(s->exec, 1); /* calls are independent: each maps its own keys */
    if ((st = inf__rt_scorer_init(&s->core, s->session, s->exec, INF__RT_ALL_FAILED_FATAL))) {
        inf_error_set(err, st, "infera: out of memory loading %s", ref);
        goto fail;
    }
    if ((st = inf_record_batch_new(&s->in)) || (st = inf_record_batch_new(&s->out))) {
        inf_error_set(err, st, "infera: out of memory loading %s", ref);
        goto fail;
    }
    if (s->id_column[0] && (st = inf_record_batch_set_id_field(s->in, s->id_column))) { /* ids are text */
        inf_error_set(err, st, "infera: out of memory loading %s", ref);
        goto fail;
    }
    s->primary = -1;
    *out = s;
    return INF_OK;
fail:
    inf__scorer_free(s);
    return st;
}

void inf__scorer_free(inf__scorer *s) {
    if (!s) return;
    inf__scorer_clear(s);
    inf__rt_scorer_deinit(&s->core);
    inf_pipeline_exec_free(s->exec);
    inf_session_free(s->session);
    inf_record_batch_free(s->in);
    inf_record_batch_free(s->out);
    inf__rt_model_close(&s->m);
    free(s->row_of);
    free(s->why);
    free(s->skip);
    cJSON_Delete(s->spec);
    free(s->ref);
    free(s);
}

const char *inf__scorer_ref(const inf__scorer *s) { return s->ref; }
const char *inf__scorer_model_name(const inf__scorer *s) { return s->m.name; }
const char *inf__scorer_model_version(const inf__scorer *s) { return s->m.version; }
int inf__scorer_is_default(const inf__scorer *s) { return inf_pipeline_is_default(s->m.pipeline); }

void inf__scorer_set_log(inf__scorer *s, struct inf__mon_log *log) {
    s->core.log = log;
    s->core.log_pipeline = s->m.pipeline;
}

/* Records of one query have one shape, so both batches keep their schema
 * between calls (clear, not reset): a warm scorer re-adds no field names and
 * classifies the output fields once.  A record without one of the kept
 * fields reads NULL there, exactly as with a fresh batch (a spec maps fields
 * by name).  Schemas that keep growing (records with ever new keys) are
 * dropped past MAX_KEPT_FIELDS.
 * The default pipeline (no spec) takes the numeric fields of the records in
 * their order: the input batch is reset instead, so it holds exactly the keys
 * of the records of this call, and records with other keys (another query,
 * another json_object(...) on the same connection) are mapped by their own
 * (inf_pipeline_exec_map_each_batch). */
#define MAX_KEPT_FIELDS 256

void inf__scorer_clear(inf__scorer *s) {
    for (int i = 0; i < s->n_records; i++) {
        free(s->why[i]);
        s->why[i] = NULL;
    }
    s->n_records = 0;
    if (s->in) {
        if (inf_record_batch_n_fields(s->in) > MAX_KEPT_FIELDS || inf_pipeline_is_default(s->m.pipeline))
            inf_record_batch_reset(s->in);
        else
            inf_record_batch_clear(s->in);
    }
    if (s->out) {
        if (inf_record_batch_n_fields(s->out) > MAX_KEPT_FIELDS) {
            inf_record_batch_reset(s->out);
            s->n_classified = 0;
        } else {
            inf_record_batch_clear(s->out);
        }
    }
}

inf_status inf__scorer_add_json(inf__scorer *s, const char *json, size_t len, inf_error *err) {
    if (s->n_records == s->cap) {
        int cap = s->cap ? s->cap * 2 : 16;
        int *r = realloc(s->row_of, (size_t)cap * sizeof *r);
        if (r) s->row_of = r;
        char **w = r ? realloc(s->why, (size_t)cap * sizeof *w) : NULL;
        if (!r || !w) return inf_error_set(err, INF_ENOMEM, "infera: out of memory");
        s->why = w;
        for (int i = s->cap; i < cap; i++) s->why[i] = NULL;
        s->cap = cap;
    }
    inf_status st = inf_record_batch_add_json(s->in, json, len, err);
    if (st) return st;
    s->row_of[s->n_records] = -1;
    s->why[s->n_records] = NULL;
    s->n_records++;
    return INF_OK;
}

int inf__scorer_n_records(const inf__scorer *s) { return s->n_records; }

/* 1 when name is one of the spec's passthrough fields. */
static int is_passthrough(const inf__scorer *s, const char *name) {
    const cJSON *it;
    cJSON_ArrayForEach(it, s->passthrough) {
        if (cJSON_IsString(it) && !strcmp(it->valuestring, name)) return 1;
    }
    return 0;
}

static int add_skip(inf__scorer *s, const char *name) {
    if (s->n_skip + 2 > s->cap_skip) {
        int cap = s->cap_skip ? s->cap_skip * 2 : 16;
        const char **p = realloc(s->skip, (size_t)cap * sizeof *p);
        if (!p) return -1;
        s->skip = p;
        s->cap_skip = cap;
    }
    s->skip[s->n_skip++] = name;
    s->skip[s->n_skip] = NULL;
    return 0;
}

/* Which output fields are predictions (see scorer.h): classifies the fields
 * of out added since the last call. */
static inf_status classify_fields(inf__scorer *s, inf_error *err) {
    int nf = inf_record_batch_n_fields(s->out);
    if (s->n_classified > nf) s->n_classified = 0; /* out was reset */
    if (s->n_classified == 0) {
        s->n_skip = 0;
        s->primary = -1;
    }
    for (int f = s->n_classified; f < nf; f++) {
        const char *name = inf_record_batch_field_name(s->out, f);
        int lineage = !strcmp(name, "model_name") || !strcmp(name, "model_version") || !strcmp(name, "pipeline_hash");
        int is_id = s->id_column[0] && !strcmp(name, s->id_column);
        int passthrough = !is_id && !lineage && is_passthrough(s, name);
        if (is_id || passthrough || !strcmp(name, "pipeline_hash"))
            if (add_skip(s, name)) {
                s->n_classified = 0; /* start over next time */
                return inf_error_set(err, INF_ENOMEM, "infera: out of memory");
            }
        if (!is_id && !passthrough && !lineage && s->primary < 0) s->primary = f;
    }
    s->n_classified = nf;
    return INF_OK;
}

/* The scoring core's results (runtime/score.h): prediction rows are
 * appended to out (row_of maps each record to its row), rejections keep
 * their reason in why. */
static inf_status on_scored(void *user, const inf_record_batch *pred, const int *in_rows, int n) {
    inf__scorer *s = user;
    int base = inf_record_batch_n_rows(s->out);
    inf_status st = inf__rt_append_rows(s->out, pred, 0, n);
    for (int k = 0; !st && k < n; k++)
        if (in_rows[k] >= 0 && in_rows[k] < s->n_records) s->row_of[in_rows[k]] = base + k;
    return st;
}

static inf_status on_rejected(void *user, int row, const char *field, const char *reason) {
    inf__scorer *s = user;
    if (row < 0 || row >= s->n_records) return INF_OK;
    char buf[700];
    snprintf(buf, sizeof buf, "%s%s%s", field && *field ? field : "", field && *field ? ": " : "", reason);
    free(s->why[row]);
    return (s->why[row] = strdup(buf)) ? INF_OK : INF_ENOMEM;
}

static void on_restart(void *user) {
    inf__scorer *s = user;
    inf_record_batch_clear(s->out);
    for (int i = 0; i < s->n_records; i++) {
        s->row_of[i] = -1;
        free(s->why[i]);
        s->why[i] = NULL;
    }
}

inf_status inf__scorer_score(inf__scorer *s, inf_error *err) {
    inf_record_batch_clear(s->out);
    if (!s->n_records) return INF_OK;
    inf__rt_results results = {s, on_scored, on_rejected, on_restart};
    inf_status st = inf__rt_score_batch(&s->core, s->in, &results, err);
    if (st) return st;
    return classify_fields(s, err);
}

int inf__scorer_result(const inf__scorer *s, int i, const char **why) {
    if (i < 0 || i >= s->n_records) return -1;
    if (s->row_of[i] < 0 && why) *why = s->why[i] ? s->why[i] : "rejected by the pipeline";
    return s->row_of[i];
}

const inf_value *inf__scorer_primary(const inf__scorer *s, int row) {
    if (s->primary < 0 || row < 0) return NULL;
    return inf_record_batch_get(s->out, row, s->primary);
}

const char *inf__scorer_primary_name(const inf__scorer *s) {
    return s->primary < 0 ? NULL : inf_record_batch_field_name(s->out, s->primary);
}

int inf__scorer_buf_write(const char *bytes, size_t n, void *user) {
    inf__scorer_buf *b = user;
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->cap ? b->cap * 2 : 256) + n;
        char *p = realloc(b->p, cap);
        if (!p) return -1;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, bytes, n);
    b->n += n;
    return 0;
}

inf_status inf__scorer_row_json(const inf__scorer *s, int row, int with_id, inf_write_fn write, void *user) {
    inf__scorer_buf b = {0};
    /* skip list without the id when with_id */
    const char *skip[256];
    int k = 0;
    for (int i = 0; i < s->n_skip && k < 255; i++)
        if (!(with_id && s->id_column[0] && !strcmp(s->skip[i], s->id_column))) skip[k++] = s->skip[i];
    skip[k] = NULL;
    inf_status st = inf_record_batch_row_to_json(s->out, row, skip, inf__scorer_buf_write, &b);
    if (!st && b.n >= 2 && b.p[b.n - 1] == '}') {
        b.n--; /* add the pipeline hash under its lineage name */
        char tail[128];
        int n = snprintf(tail, sizeof tail, "%s\"pipeline_hash\":\"%s\"}", b.n > 1 ? "," : "",
                         inf_pipeline_hash(s->m.pipeline));
        if (inf__scorer_buf_write(tail, (size_t)n, &b)) st = INF_ENOMEM;
    }
    if (!st && write(b.p, b.n, user)) st = INF_ENOMEM;
    free(b.p);
    return st;
}
