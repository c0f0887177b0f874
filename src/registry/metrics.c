/*
 * metrics.c -- evaluation metrics added to an existing version
 * (`infera evaluate --register`).  A version's model and spec are immutable;
 * its metrics are what has been measured about it, so new measurements
 * are merged into the version's metrics object (a key measured again is
 * replaced).  Needs publisher on the model; audited as "metrics" with the
 * values stored.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry/registry_int.h"

inf_status inf_registry_add_metrics(inf_registry *r, const char *name, int64_t version, int n,
                                    const inf_registry_kv *kv, inf_error *err) {
    if (!inf__reg_valid_name(name) || version <= 0)
        return inf_error_set(err, INF_EINVAL, "add metrics: needs a model name and a version >= 1");
    inf_status rc = inf__auth_require(r, name, INF_REGISTRY_PUBLISH, "metrics", version, err);
    if (rc) return rc;
    char vbuf[24];
    snprintf(vbuf, sizeof vbuf, "%lld", (long long)version);
    const char *p[3] = {NULL, name, vbuf};
    inf__rows *rows = NULL;
    cJSON *obj = NULL, *added = cJSON_CreateObject();
    char *text = NULL, *detail = NULL;
    if (!added) return inf_error_set(err, INF_ENOMEM, "add metrics: out of memory");
    if ((rc = inf__reg_begin(r, err))) goto out;
    if ((rc = inf__reg_sql(r, "SELECT metrics FROM reg_versions WHERE name = ? AND version = ? AND deleted_at IS NULL",
                           2, p + 1, &rows, err)))
        goto rollback;
    if (rows->n_rows == 0) {
        rc = inf_error_set(err, INF_ENOENT, "add metrics: model '%s' has no live version %s", name, vbuf);
        goto rollback;
    }
    obj = cJSON_Parse(inf__rows_get(rows, 0, 0) ? inf__rows_get(rows, 0, 0) : "{}");
    if (!cJSON_IsObject(obj)) {
        cJSON_Delete(obj);
        obj = cJSON_CreateObject();
    }
    for (int i = 0; obj && i < n; i++) {
        char *end;
        double d = kv[i].value ? strtod(kv[i].value, &end) : NAN;
        if (!kv[i].key || !*kv[i].key || !kv[i].value || end == kv[i].value || *end || !isfinite(d)) {
            rc = inf_error_set(err, INF_EINVAL, "add metrics: '%s' is not KEY=finite number", kv[i].key ? kv[i].key : "");
            goto rollback;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(obj, kv[i].key);
        cJSON_AddNumberToObject(obj, kv[i].key, d);
        cJSON_AddNumberToObject(added, kv[i].key, d);
    }
    if (!obj || !(text = cJSON_PrintUnformatted(obj)) || !(detail = cJSON_PrintUnformatted(added))) {
        rc = inf_error_set(err, INF_ENOMEM, "add metrics: out of memory");
        goto rollback;
    }
    p[0] = text;
    if ((rc = inf__reg_sql(r, "UPDATE reg_versions SET metrics = ? WHERE name = ? AND version = ?", 3, p, NULL, err)) ||
        (rc = inf__audit_append(r, "metrics", name, version, "ok", detail, err)) || (rc = inf__reg_commit(r, err)))
        goto rollback;
    goto out;
rollback:
    inf__reg_rollback(r);
out:
    inf__rows_free(rows);
    cJSON_Delete(obj);
    cJSON_Delete(added);
    cJSON_free(text);
    cJSON_free(detail);
    return rc;
}
