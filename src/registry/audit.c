/*
 * audit.c -- the registry's tamper-evident audit log.
 *
 * Each record (seq, ts, principal, action, model, version, outcome, detail)
 * is chained to the one before it:
 *
 *     hash[n] = SHA-256( hash[n-1] || canonical(record n) ),  hash[0] = 64 x '0'
 *
 * canonical() writes every field length-prefixed ("<len>:<bytes>;", "~;" for
 * NULL), so no two different records share a canonical form.  seq starts at
 * 1 and has no gaps; the head (last seq and hash) is also kept in reg_meta.
 * `verify` recomputes the chain and names the first record that does not fit:
 * an edited field changes its hash, a removed record breaks the seq run or
 * the next prev_hash, an added or removed tail disagrees with the head.
 * Records are appended inside the writer's transaction (the write lock makes
 * the chain linear); the tables also refuse UPDATE/DELETE by trigger.
 *
 * Details hold what happened, never data values: a prediction record names
 * the source, the row count and the SHA-256 of the inputs.
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "registry/registry_int.h"

static const char zero_hash[65] = "0000000000000000000000000000000000000000000000000000000000000000";

static void feed_field(inf_sha256 *c, const char *s) {
    if (!s) {
        inf_sha256_update(c, "~;", 2);
        return;
    }
    char len[24];
    int n = snprintf(len, sizeof len, "%zu:", strlen(s));
    inf_sha256_update(c, len, (size_t)n);
    inf_sha256_update(c, s, strlen(s));
    inf_sha256_update(c, ";", 1);
}

/* fields: seq, ts, principal, action, model, version, outcome, detail */
static void record_hash(const char *prev, const char *const f[8], char out[65]) {
    inf_sha256 c;
    uint8_t d[32];
    inf_sha256_init(&c);
    inf_sha256_update(&c, prev, strlen(prev));
    for (int i = 0; i < 8; i++) feed_field(&c, f[i]);
    inf_sha256_final(&c, d);
    inf_sha256_to_hex(d, out);
}

inf_status inf__audit_append(inf_registry *r, const char *action, const char *model, int64_t version,
                             const char *outcome, const char *detail_json, inf_error *err) {
    inf__rows *rows = NULL;
    inf_status rc = inf__reg_sql(r, "SELECT seq, hash FROM reg_audit ORDER BY seq DESC LIMIT 1", 0, NULL, &rows, err);
    if (rc) return rc;
    long long seq = rows->n_rows ? strtoll(inf__rows_get(rows, 0, 0), NULL, 10) + 1 : 1;
    char prev[65];
    snprintf(prev, sizeof prev, "%s", rows->n_rows ? inf__rows_get(rows, 0, 1) : zero_hash);
    inf__rows_free(rows);
    char seqbuf[24], vbuf[24], ts[32], hash[65], head[100];
    snprintf(seqbuf, sizeof seqbuf, "%lld", seq);
    snprintf(vbuf, sizeof vbuf, "%lld", (long long)version);
    inf__reg_now(ts);
    const char *principal = r->authenticated ? r->principal : r->token_id[0] ? r->token_id : "anonymous";
    char who[200];
    if (!r->authenticated && r->token_id[0]) {
        snprintf(who, sizeof who, "token:%s", r->token_id);
        principal = who;
    }
    const char *f[8] = {seqbuf, ts, principal, action, model, version ? vbuf : NULL, outcome,
                        detail_json ? detail_json : "{}"};
    record_hash(prev, f, hash);
    const char *params[10] = {f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], prev, hash};
    if ((rc = inf__reg_sql(r,
                           "INSERT INTO reg_audit(seq, ts, principal, action, model, version, outcome, detail,"
                           " prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           10, params, NULL, err)))
        return rc;
    snprintf(head, sizeof head, "%lld %s", seq, hash);
    const char *hp[1] = {head};
    return inf__reg_sql(r,
                        "INSERT INTO reg_meta(key, value) VALUES ('audit_head', ?)"
                        " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                        1, hp, NULL, err);
}

void inf__audit_denied(inf_registry *r, const char *action, const char *model, int64_t version, const char *why) {
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "reason", why);
    char *detail = d ? cJSON_PrintUnformatted(d) : NULL;
    cJSON_Delete(d);
    if (!detail) return;
    if (inf__reg_begin(r, NULL) == INF_OK) {
        if (inf__audit_append(r, action, model, version, "denied", detail, NULL) || inf__reg_commit(r, NULL))
            inf__reg_rollback(r);
    }
    free(detail);
}

/* ---------------------------------------------------------------------------
 * Verify
 * ------------------------------------------------------------------------- */
inf_status inf_registry_audit_verify(inf_registry *r, inf_registry_audit_report *rep, inf_error *err) {
    memset(rep, 0, sizeof *rep);
    inf_status rc = inf__auth_require(r, NULL, INF_REGISTRY_AUDIT, "audit-verify", 0, err);
    if (rc) return rc;
    char prev[65];
    memcpy(prev, zero_hash, sizeof prev);
    long long expect = 1;
    for (;;) {
        char after[24];
        snprintf(after, sizeof after, "%lld", expect - 1);
        const char *params[1] = {after};
        inf__rows *rows = NULL;
        if ((rc = inf__reg_sql(r,
                               "SELECT seq, ts, principal, action, model, version, outcome, detail, prev_hash, hash"
                               " FROM reg_audit WHERE seq > ? ORDER BY seq LIMIT 1000",
                               1, params, &rows, err)))
            return rc;
        int n = rows->n_rows;
        for (int i = 0; i < n && !rep->first_bad_seq; i++) {
            const char *f[8];
            for (int k = 0; k < 8; k++) f[k] = inf__rows_get(rows, i, k);
            long long seq = strtoll(f[0], NULL, 10);
            const char *stored_prev = inf__rows_get(rows, i, 8), *stored = inf__rows_get(rows, i, 9);
            char h[65];
            record_hash(prev, f, h);
            if (seq != expect) {
                rep->first_bad_seq = expect;
                snprintf(rep->reason, sizeof rep->reason, "record %lld is missing (next record is %lld)", expect, seq);
            } else if (!stored_prev || strcmp(stored_prev, prev)) {
                rep->first_bad_seq = seq;
                snprintf(rep->reason, sizeof rep->reason,
                         "record %lld does not link to record %lld (prev_hash %.12s..., expected %.12s...)", seq,
                         seq - 1, stored_prev ? stored_prev : "NULL", prev);
            } else if (!stored || strcmp(stored, h)) {
                rep->first_bad_seq = seq;
                snprintf(rep->reason, sizeof rep->reason,
                         "record %lld was altered (its content hashes to %.12s..., stored %.12s...)", seq, h,
                         stored ? stored : "NULL");
            } else {
                memcpy(prev, stored, 65);
                expect++;
                rep->n_records++;
            }
        }
        inf__rows_free(rows);
        if (rep->first_bad_seq || n < 1000) break;
    }
    snprintf(rep->head_hash, sizeof rep->head_hash, "%s", prev);
    if (!rep->first_bad_seq) {
        inf__rows *rows = NULL;
        if ((rc = inf__reg_sql(r, "SELECT value FROM reg_meta WHERE key = 'audit_head'", 0, NULL, &rows, err))) return rc;
        const char *head = inf__rows_get(rows, 0, 0);
        char want[100];
        snprintf(want, sizeof want, "%lld %s", expect - 1, prev);
        if (head ? strcmp(head, want) != 0 : rep->n_records > 0) {
            long long head_seq = head ? strtoll(head, NULL, 10) : 0;
            rep->first_bad_seq = head_seq > expect - 1 ? expect : expect - 1;
            snprintf(rep->reason, sizeof rep->reason,
                     "the log ends at record %lld but its recorded head is '%.30s...' (records removed or added at "
                     "the end)",
                     expect - 1, head ? head : "none");
        }
        inf__rows_free(rows);
    }
    if (rep->first_bad_seq)
        return inf_error_set(err, INF_EFORMAT, "audit log broken at record %lld: %s", (long long)rep->first_bad_seq,
                             rep->reason);
    return INF_OK;
}

/* ---------------------------------------------------------------------------
 * Listing
 * ------------------------------------------------------------------------- */
static int field(const char *s, size_t at, size_t len) {
    int v = 0;
    for (size_t i = at; i < at + len; i++) v = v * 10 + (s[i] - '0');
    return v;
}

/* The date and time of an ISO prefix (digits already in place) exist:
 * month 1-12, a day of that month (leap years), hour < 24, minute and
 * second < 60.  "2024-13-45" matched the shape and was compared as text. */
static bool valid_calendar(const char *s, size_t n) {
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int year = field(s, 0, 4), month = field(s, 5, 2), day = field(s, 8, 2);
    if (month < 1 || month > 12 || day < 1) return false;
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    if (day > days[month - 1] + (month == 2 && leap)) return false;
    if (n >= 13 && field(s, 11, 2) > 23) return false;
    if (n >= 16 && field(s, 14, 2) > 59) return false;
    if (n >= 19 && field(s, 17, 2) > 59) return false;
    return true;
}

/* "7d", "2h", "30m", "90s" -> ISO time that long ago; ISO prefixes pass. */
static bool since_to_iso(const char *since, char out[32]) {
    size_t n = strlen(since);
    if (n >= 2 && isdigit((unsigned char)since[0]) && strchr("smhd", since[n - 1]) && n < 12) {
        char *end;
        long long v = strtoll(since, &end, 10);
        if (end != since + n - 1 || v < 0) return false;
        long long mult = since[n - 1] == 's' ? 1 : since[n - 1] == 'm' ? 60 : since[n - 1] == 'h' ? 3600 : 86400;
        time_t t = time(NULL) - (time_t)(v * mult);
        if (t < 0) return false; /* before 1970: an age no record can have */
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
        return true;
    }
    /* YYYY-MM-DD[THH[:MM[:SS[.mmm]]]][Z] (' ' for 'T' too; a record's own
     * ts pastes): digits and separators in place, ending after a whole
     * field.  Records are stamped in UTC ("...:SS.mmmZ"), so a trailing Z is
     * dropped rather than compared. */
    static const char shape[] = "dddd-dd-ddTdd:dd:dd.ddd";
    if (n && (since[n - 1] == 'Z' || since[n - 1] == 'z')) n--;
    if (n != 10 && n != 13 && n != 16 && n != 19 && n != 23) return false;
    for (size_t i = 0; i < n; i++) {
        char c = since[i], s = shape[i];
        if (s == 'd' ? !isdigit((unsigned char)c) : (c != s && !(s == 'T' && c == ' '))) return false;
    }
    if (!valid_calendar(since, n)) return false;
    snprintf(out, 32, "%.*s", (int)n, since);
    if (n > 10) out[10] = 'T';
    return true;
}

inf_status inf_registry_audit_json(inf_registry *r, const inf_registry_audit_filter *f, char **out, inf_error *err) {
    *out = NULL;
    const char *model = f ? f->model : NULL;
    inf_status rc = inf__auth_require(r, model, INF_REGISTRY_AUDIT, "audit", 0, err);
    if (rc) return rc;
    char since[32] = "";
    if (f && f->since && !since_to_iso(f->since, since))
        return inf_error_set(err, INF_EINVAL,
                             "audit --since '%s': expected a real UTC date and time (2024-05-01, 2024-05-01T12:00) or an age (90s, "
                             "30m, 2h, 7d)",
                             f->since);
    char sql[512], limit[24];
    const char *params[3];
    int n = 0;
    snprintf(sql, sizeof sql,
             "SELECT seq, ts, principal, action, model, version, outcome, detail, hash FROM reg_audit WHERE 1 = 1");
    if (model) strcat(sql, " AND model = ?"), params[n++] = model;
    if (since[0]) strcat(sql, " AND ts COLLATE BINARY >= ?"), params[n++] = since;
    if (f && f->limit > 0) { /* the newest N of the filtered records, oldest first */
        char inner[512];
        snprintf(limit, sizeof limit, "%d", f->limit);
        snprintf(inner, sizeof inner, "SELECT * FROM (%s ORDER BY seq DESC LIMIT ?) newest", sql);
        snprintf(sql, sizeof sql, "%s", inner);
        params[n++] = limit;
    }
    strcat(sql, " ORDER BY seq");
    inf__rows *rows = NULL;
    if ((rc = inf__reg_sql(r, sql, n, params, &rows, err))) return rc;
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; arr && i < rows->n_rows; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, e);
        cJSON_AddNumberToObject(e, "seq", (double)strtoll(inf__rows_get(rows, i, 0), NULL, 10));
        cJSON_AddStringToObject(e, "ts", inf__rows_get(rows, i, 1));
        cJSON_AddStringToObject(e, "principal", inf__rows_get(rows, i, 2));
        cJSON_AddStringToObject(e, "action", inf__rows_get(rows, i, 3));
        const char *m = inf__rows_get(rows, i, 4), *v = inf__rows_get(rows, i, 5);
        if (m) cJSON_AddStringToObject(e, "model", m);
        else cJSON_AddNullToObject(e, "model");
        if (v) cJSON_AddNumberToObject(e, "version", (double)strtoll(v, NULL, 10));
        else cJSON_AddNullToObject(e, "version");
        cJSON_AddStringToObject(e, "outcome", inf__rows_get(rows, i, 6));
        cJSON *d = cJSON_Parse(inf__rows_get(rows, i, 7));
        cJSON_AddItemToObject(e, "detail", d ? d : cJSON_CreateString(inf__rows_get(rows, i, 7)));
        cJSON_AddStringToObject(e, "hash", inf__rows_get(rows, i, 8));
    }
    inf__rows_free(rows);
    *out = arr ? cJSON_Print(arr) : NULL;
    cJSON_Delete(arr);
    return *out ? INF_OK : inf_error_set(err, INF_ENOMEM, "registry: out of memory listing the audit log");
}

/* ---------------------------------------------------------------------------
 * Prediction records (runners)
 * ------------------------------------------------------------------------- */
static bool valid_hex64(const char *s) {
    if (strlen(s) != 64) return false;
    for (; *s; s++)
        if (!isxdigit((unsigned char)*s)) return false;
    return true;
}

inf_status inf_registry_audit_prediction(inf_registry *r, const inf_registry_prediction *p, inf_error *err) {
    if (!p || !inf__reg_valid_name(p->name) || p->version <= 0 || p->n_rows < 0)
        return inf_error_set(err, INF_EINVAL, "audit prediction: needs a model name, a version >= 1 and rows >= 0");
    if (p->inputs_sha256 && !valid_hex64(p->inputs_sha256))
        return inf_error_set(err, INF_EINVAL, "audit prediction %s@%lld: inputs_sha256 must be 64 hex digits", p->name,
                             (long long)p->version);
    inf_status rc = inf__auth_require(r, p->name, INF_REGISTRY_PREDICT, "predict", p->version, err);
    if (rc) return rc;
    char buf[1024];
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "mode", p->mode ? p->mode : "unknown");
    inf__reg_redact(p->source, buf, sizeof buf);
    if (p->source) cJSON_AddStringToObject(d, "source", buf);
    inf__reg_redact(p->destination, buf, sizeof buf);
    if (p->destination) cJSON_AddStringToObject(d, "destination", buf);
    cJSON_AddNumberToObject(d, "rows", (double)p->n_rows);
    if (p->inputs_sha256) cJSON_AddStringToObject(d, "inputs_sha256", p->inputs_sha256);
    if (p->job_id) cJSON_AddStringToObject(d, "job", p->job_id);
    char *detail = d ? cJSON_PrintUnformatted(d) : NULL;
    cJSON_Delete(d);
    if (!detail) return inf_error_set(err, INF_ENOMEM, "registry: out of memory building the audit record");
    if ((rc = inf__reg_begin(r, err)) == INF_OK) {
        if ((rc = inf__audit_append(r, "predict", p->name, p->version, "ok", detail, err)) ||
            (rc = inf__reg_commit(r, err)))
            inf__reg_rollback(r);
    }
    free(detail);
    return rc;
}

/* What recording a runner's event needs: the right of the act it records.  A
 * monitor's rollback is an alias move (an approver may make it on a protected
 * alias), so recording why needs only that right; any other event (serve's
 * repository loads and unloads) needs publisher. */
static inf_registry_action audit_event_right(const char *action) {
    static const struct {
        const char *action;
        inf_registry_action right;
    } rights[] = {{"monitor-rollback", INF_REGISTRY_MOVE_ALIAS}};
    for (size_t i = 0; i < sizeof rights / sizeof rights[0]; i++)
        if (!strcmp(action, rights[i].action)) return rights[i].right;
    return INF_REGISTRY_PUBLISH;
}

/* A runner's event on served models, on model (NULL: globally), so a record
 * names who did it; the right it needs is audit_event_right's. */
inf_status inf_registry_audit_event(inf_registry *r, const char *action, const char *model, int64_t version,
                                    const char *outcome, const char *detail_json, inf_error *err) {
    bool action_ok = action && *action && strlen(action) <= 32;
    for (const char *p = action; action_ok && *p; p++)
        action_ok = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-';
    if (!action_ok || (model && !inf__reg_valid_name(model)) || version < 0 || !outcome)
        return inf_error_set(err, INF_EINVAL, "audit event: needs an action (a-z, 0-9, '-'), a valid model name or "
                                              "none, a version >= 0 and an outcome");
    cJSON *d = detail_json ? cJSON_Parse(detail_json) : cJSON_CreateObject();
    bool object = cJSON_IsObject(d);
    char *detail = object ? cJSON_PrintUnformatted(d) : NULL;
    cJSON_Delete(d);
    if (!object) return inf_error_set(err, INF_EINVAL, "audit event %s: the detail must be a JSON object", action);
    if (!detail) return inf_error_set(err, INF_ENOMEM, "registry: out of memory building the audit record");
    inf_status rc = inf__auth_require(r, model, audit_event_right(action), action, version, err);
    if (rc == INF_OK && (rc = inf__reg_begin(r, err)) == INF_OK) {
        if ((rc = inf__audit_append(r, action, model, version, outcome, detail, err)) || (rc = inf__reg_commit(r, err)))
            inf__reg_rollback(r);
    }
    free(detail);
    return rc;
}
