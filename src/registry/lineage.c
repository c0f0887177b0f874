/*
 * lineage.c -- what used each model version: runners (batch jobs, stream
 * consumers, servers) call inf_registry_record_use with their source and
 * destination; together with the training-data reference stored at
 * registration this answers "which data made this version" and "which
 * versions wrote into this table".  Sources and destinations are stored
 * with any URL password removed.  Each use is also an audit record.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry/registry_int.h"

static const char *const use_kinds[] = {"batch", "stream", "serve", "sql", "other"};

inf_status inf_registry_record_use(inf_registry *r, const inf_registry_use *u, inf_error *err) {
    if (!u || !inf__reg_valid_name(u->name) || u->version <= 0)
        return inf_error_set(err, INF_EINVAL, "record use: needs a model name and a version >= 1");
    bool kind_ok = false;
    for (size_t i = 0; u->kind && i < sizeof use_kinds / sizeof use_kinds[0]; i++) kind_ok |= !strcmp(u->kind, use_kinds[i]);
    if (!kind_ok)
        return inf_error_set(err, INF_EINVAL, "record use of %s@%lld: kind '%s' is not batch, stream, serve, sql or other",
                             u->name, (long long)u->version, u->kind ? u->kind : "");
    inf_status rc = inf__auth_require(r, u->name, INF_REGISTRY_PREDICT, "use", u->version, err);
    if (rc) return rc;
    char src[1024], dst[1024], ts[32], vbuf[24];
    inf__reg_redact(u->source, src, sizeof src);
    inf__reg_redact(u->destination, dst, sizeof dst);
    snprintf(vbuf, sizeof vbuf, "%lld", (long long)u->version);
    if ((rc = inf__reg_begin(r, err))) return rc;
    const char *vp[2] = {u->name, vbuf};
    inf__rows *rows = NULL;
    if ((rc = inf__reg_sql(r, "SELECT count(*) FROM reg_versions WHERE name = ? AND version = ?", 2, vp, &rows, err)))
        goto rollback;
    bool exists = strtoll(inf__rows_get(rows, 0, 0), NULL, 10) > 0;
    inf__rows_free(rows);
    if (!exists) {
        rc = inf_error_set(err, INF_ENOENT, "record use: model '%s' has no version %s", u->name, vbuf);
        goto rollback;
    }
    if ((rc = inf__reg_sql(r, "SELECT coalesce(max(id), 0) + 1 FROM reg_lineage", 0, NULL, &rows, err))) goto rollback;
    char id[24];
    snprintf(id, sizeof id, "%s", inf__rows_get(rows, 0, 0));
    inf__rows_free(rows);
    inf__reg_now(ts);
    const char *params[9] = {id, ts, u->name, vbuf, u->kind, u->source ? src : NULL, u->destination ? dst : NULL,
                             r->principal, u->job_id};
    if ((rc = inf__reg_sql(r,
                           "INSERT INTO reg_lineage(id, ts, name, version, kind, source, destination, principal, job_id)"
                           " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           9, params, NULL, err)))
        goto rollback;
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "kind", u->kind);
    if (u->source) cJSON_AddStringToObject(d, "source", src);
    if (u->destination) cJSON_AddStringToObject(d, "destination", dst);
    if (u->job_id) cJSON_AddStringToObject(d, "job", u->job_id);
    char *detail = d ? cJSON_PrintUnformatted(d) : NULL;
    cJSON_Delete(d);
    if (!detail) {
        rc = inf_error_set(err, INF_ENOMEM, "registry: out of memory building the audit record");
        goto rollback;
    }
    rc = inf__audit_append(r, "use", u->name, u->version, "ok", detail, err);
    free(detail);
    if (rc || (rc = inf__reg_commit(r, err))) goto rollback;
    return INF_OK;
rollback:
    inf__reg_rollback(r);
    return rc;
}

static cJSON *use_row(const inf__rows *rows, int i, int first_col) {
    static const char *const keys[] = {"ts", "kind", "source", "destination", "principal", "job_id"};
    cJSON *u = cJSON_CreateObject();
    for (int k = 0; k < 6; k++) {
        const char *v = inf__rows_get(rows, i, first_col + k);
        if (v) cJSON_AddStringToObject(u, keys[k], v);
        else cJSON_AddNullToObject(u, keys[k]);
    }
    return u;
}

inf_status inf_registry_lineage_json(inf_registry *r, const char *ref, char **out, inf_error *err) {
    *out = NULL;
    bool one = strchr(ref ? ref : "", '@') != NULL;
    inf_registry_resolved v = {0};
    inf_status rc;
    if (one) {
        if ((rc = inf__reg_resolve_any(r, ref, &v, err))) return rc;
        inf_registry_resolved_clear(&v);
    } else {
        if (!inf__reg_valid_name(ref)) return inf_error_set(err, INF_EINVAL, "lineage: invalid model name '%s'", ref ? ref : "");
        if ((rc = inf__auth_require(r, ref, INF_REGISTRY_READ, "lineage", 0, err))) return rc;
        snprintf(v.name, sizeof v.name, "%s", ref);
    }
    char vbuf[24];
    snprintf(vbuf, sizeof vbuf, "%lld", (long long)v.version);
    const char *params[2] = {v.name, vbuf};
    inf__rows *vs = NULL, *uses = NULL;
    if ((rc = inf__reg_sql(r,
                           one ? "SELECT version, training_data, created_at, deleted_at FROM reg_versions"
                                 " WHERE name = ? AND version = ?"
                               : "SELECT version, training_data, created_at, deleted_at FROM reg_versions"
                                 " WHERE name = ? ORDER BY version",
                           one ? 2 : 1, params, &vs, err)))
        return rc;
    if (vs->n_rows == 0) {
        inf__rows_free(vs);
        return inf_error_set(err, INF_ENOENT, "unknown model '%s' in the registry at %s", v.name, r->location);
    }
    if ((rc = inf__reg_sql(r,
                           "SELECT version, ts, kind, source, destination, principal, job_id FROM reg_lineage"
                           " WHERE name = ? ORDER BY id",
                           1, params, &uses, err))) {
        inf__rows_free(vs);
        return rc;
    }
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "name", v.name);
    cJSON *arr = cJSON_AddArrayToObject(root, "versions");
    for (int i = 0; i < vs->n_rows; i++) {
        const char *ver = inf__rows_get(vs, i, 0);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, e);
        cJSON_AddNumberToObject(e, "version", (double)strtoll(ver, NULL, 10));
        const char *td = inf__rows_get(vs, i, 1);
        if (td) cJSON_AddStringToObject(e, "training_data", td);
        else cJSON_AddNullToObject(e, "training_data");
        cJSON_AddStringToObject(e, "created_at", inf__rows_get(vs, i, 2));
        cJSON_AddBoolToObject(e, "deleted", inf__rows_get(vs, i, 3) != NULL);
        cJSON *ua = cJSON_AddArrayToObject(e, "used_by");
        const char *derived = NULL; /* registered with --derived-from: the source version */
        for (int k = 0; k < uses->n_rows; k++) {
            if (strcmp(inf__rows_get(uses, k, 0), ver)) continue;
            if (!strcmp(inf__rows_get(uses, k, 2), "derived")) derived = inf__rows_get(uses, k, 3);
            else cJSON_AddItemToArray(ua, use_row(uses, k, 1));
        }
        if (derived) cJSON_AddStringToObject(e, "derived_from", derived);
        else cJSON_AddNullToObject(e, "derived_from");
    }
    inf__rows_free(vs);
    inf__rows_free(uses);
    *out = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    return *out ? INF_OK : inf_error_set(err, INF_ENOMEM, "registry: out of memory building lineage");
}

/* The table named by a destination: the "table=" parameter, else the whole string. */
static bool names_table(const char *dest, const char *table) {
    if (!dest) return false;
    if (!strcmp(dest, table)) return true;
    const char *q = strchr(dest, '?');
    for (const char *p = q; p && *p; p = strchr(p + 1, '&')) {
        const char *kv = p + 1;
        if (strncmp(kv, "table=", 6)) continue;
        size_t n = strcspn(kv + 6, "&");
        if (n == strlen(table) && !strncmp(kv + 6, table, n)) return true;
    }
    return false;
}

inf_status inf_registry_table_lineage_json(inf_registry *r, const char *table, char **out, inf_error *err) {
    *out = NULL;
    if (!table || !*table) return inf_error_set(err, INF_EINVAL, "lineage --table: no table given");
    inf__rows *rows = NULL;
    inf_status rc;
    if (r->auth_enabled && !r->authenticated && (rc = inf__auth_require(r, NULL, INF_REGISTRY_READ, "lineage", 0, err)))
        return rc;
    rc = inf__reg_sql(r,
                                 "SELECT name, version, ts, kind, source, destination, principal, job_id"
                                 " FROM reg_lineage WHERE destination IS NOT NULL ORDER BY id",
                                 0, NULL, &rows, err);
    if (rc) return rc;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "table", table);
    cJSON *arr = cJSON_AddArrayToObject(root, "writers");
    for (int i = 0; i < rows->n_rows; i++) {
        const char *name = inf__rows_get(rows, i, 0);
        if (!names_table(inf__rows_get(rows, i, 5), table)) continue;
        inf_error ignore;
        if (r->auth_enabled && inf__auth_require(r, name, INF_REGISTRY_READ, NULL, 0, &ignore)) continue;
        cJSON *u = use_row(rows, i, 2);
        cJSON_AddStringToObject(u, "name", name);
        cJSON_AddNumberToObject(u, "version", (double)strtoll(inf__rows_get(rows, i, 1), NULL, 10));
        cJSON_AddItemToArray(arr, u);
    }
    inf__rows_free(rows);
    *out = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    return *out ? INF_OK : inf_error_set(err, INF_ENOMEM, "registry: out of memory building lineage");
}
