/*
 * quota.c -- per-caller request limits stored in the registry (`infera
 * registry quota set|remove|list`), read by `infera serve`, which enforces
 * them with token buckets (src/serve/quota.c).  A quota names a principal
 * (the token's owner), "anonymous" (callers without a token while auth is
 * off) or "*" (every principal without a quota of its own), and limits
 * requests per second and rows per second, with a burst in seconds of
 * either rate (default 1 s).  0 means "no limit" for that rate.  Setting and
 * removing need admin and are audited; listing needs read.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry/registry_int.h"

static bool valid_quota_principal(const char *p) {
    return p && (!strcmp(p, "*") || inf__auth_valid_principal(p));
}

static bool valid_rate(double v) { return isfinite(v) && v >= 0 && v <= 1e12; }

inf_status inf_registry_quota_set(inf_registry *r, const inf_registry_quota *q, inf_error *err) {
    if (!q || !valid_quota_principal(q->principal))
        return inf_error_set(err, INF_EINVAL, "quota set: '%s' is not a principal name (letters, digits, . _ - @ :), "
                             "'anonymous' or '*'", q ? q->principal : "");
    if (!valid_rate(q->requests_per_s) || !valid_rate(q->rows_per_s))
        return inf_error_set(err, INF_EINVAL, "quota set %s: rates must be finite numbers >= 0 (0 = no limit)",
                             q->principal);
    if (!(isfinite(q->burst_s) && q->burst_s >= 0 && q->burst_s <= 3600))
        return inf_error_set(err, INF_EINVAL, "quota set %s: burst must be 0..3600 seconds of the rate (0 = 1 s)",
                             q->principal);
    if (q->requests_per_s == 0 && q->rows_per_s == 0)
        return inf_error_set(err, INF_EINVAL, "quota set %s: give --rps or --rows-per-s (remove a quota with "
                             "`quota remove`)", q->principal);
    inf_status rc = inf__auth_require(r, NULL, INF_REGISTRY_ADMIN, "quota-set", 0, err);
    if (rc) return rc;
    char rps[32], rows[32], burst[32], ts[32];
    snprintf(rps, sizeof rps, "%.17g", q->requests_per_s);
    snprintf(rows, sizeof rows, "%.17g", q->rows_per_s);
    snprintf(burst, sizeof burst, "%.17g", q->burst_s > 0 ? q->burst_s : 1.0);
    inf__reg_now(ts);
    const char *p[6] = {q->principal, rps, rows, burst, ts, r->principal};
    char detail[400];
    snprintf(detail, sizeof detail, "{\"principal\":\"%s\",\"requests_per_s\":%s,\"rows_per_s\":%s,\"burst_s\":%s}",
             q->principal, rps, rows, burst);
    if ((rc = inf__reg_begin(r, err))) return rc;
    if ((rc = inf__reg_sql(r, "INSERT INTO reg_quotas(principal, rps, rows_per_s, burst_s, updated_at, updated_by)"
                              " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(principal) DO UPDATE SET rps = excluded.rps,"
                              " rows_per_s = excluded.rows_per_s, burst_s = excluded.burst_s,"
                              " updated_at = excluded.updated_at, updated_by = excluded.updated_by",
                           6, p, NULL, err)) ||
        (rc = inf__audit_append(r, "quota-set", NULL, 0, "ok", detail, err)) || (rc = inf__reg_commit(r, err)))
        inf__reg_rollback(r);
    return rc;
}

inf_status inf_registry_quota_remove(inf_registry *r, const char *principal, inf_error *err) {
    if (!valid_quota_principal(principal))
        return inf_error_set(err, INF_EINVAL, "quota remove: '%s' is not a principal name", principal ? principal : "");
    inf_status rc = inf__auth_require(r, NULL, INF_REGISTRY_ADMIN, "quota-remove", 0, err);
    if (rc) return rc;
    const char *p[1] = {principal};
    inf__rows *rows = NULL;
    char detail[200];
    snprintf(detail, sizeof detail, "{\"principal\":\"%s\"}", principal);
    if ((rc = inf__reg_begin(r, err))) return rc;
    if ((rc = inf__reg_sql(r, "SELECT count(*) FROM reg_quotas WHERE principal = ?", 1, p, &rows, err))) goto rollback;
    if (strtoll(inf__rows_get(rows, 0, 0), NULL, 10) == 0) {
        rc = inf_error_set(err, INF_ENOENT, "quota remove: '%s' has no quota", principal);
        goto rollback;
    }
    if ((rc = inf__reg_sql(r, "DELETE FROM reg_quotas WHERE principal = ?", 1, p, NULL, err)) ||
        (rc = inf__audit_append(r, "quota-remove", NULL, 0, "ok", detail, err)) || (rc = inf__reg_commit(r, err)))
        goto rollback;
    inf__rows_free(rows);
    return INF_OK;
rollback:
    inf__rows_free(rows);
    inf__reg_rollback(r);
    return rc;
}

inf_status inf_registry_quotas(inf_registry *r, inf_registry_quota **out, int *n, inf_error *err) {
    *out = NULL, *n = 0;
    inf_status rc = inf__auth_require(r, NULL, INF_REGISTRY_READ, "quota-list", 0, err);
    if (rc) return rc;
    inf__rows *rows = NULL;
    if ((rc = inf__reg_sql(r, "SELECT principal, rps, rows_per_s, burst_s FROM reg_quotas ORDER BY principal COLLATE BINARY",
                           0, NULL, &rows, err)))
        return rc;
    inf_registry_quota *q = calloc(rows->n_rows > 0 ? (size_t)rows->n_rows : 1, sizeof *q);
    if (!q) {
        inf__rows_free(rows);
        return inf_error_set(err, INF_ENOMEM, "quota list: out of memory");
    }
    for (int i = 0; i < rows->n_rows; i++) {
        snprintf(q[i].principal, sizeof q[i].principal, "%s", inf__rows_get(rows, i, 0));
        q[i].requests_per_s = strtod(inf__rows_get(rows, i, 1), NULL);
        q[i].rows_per_s = strtod(inf__rows_get(rows, i, 2), NULL);
        q[i].burst_s = strtod(inf__rows_get(rows, i, 3), NULL);
    }
    *out = q, *n = rows->n_rows;
    inf__rows_free(rows);
    return INF_OK;
}

void inf_registry_quotas_free(inf_registry_quota *q) { free(q); }
