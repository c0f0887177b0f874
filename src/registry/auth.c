/*
 * auth.c -- access control of the registry: principals, API tokens, roles
 * granted globally or per model, and the checks every registry call makes.
 *
 * Tokens look like "inf_<id>_<secret>": id is 12 public hex digits (shown in
 * listings and audit records), secret 64 hex digits from /dev/urandom.  Only
 * SHA-256(token) is stored; the token itself is returned once at creation.
 *
 * Roles are sets of capabilities (one table below).  A principal's
 * capabilities on model M are the union of its global grants and its grants
 * on M.  Auth is off until the first token is created (bootstrap: that token
 * must belong to a global admin) or `auth enable`; once on it stays on.
 * Every denial is written to the audit log with the action and the reason.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "registry/registry_int.h"

#define CAP(a) (1u << (a))

static const struct role {
    const char *name;
    unsigned caps;
} roles[] = {
    {"viewer", CAP(INF_REGISTRY_READ)},
    {"predictor", CAP(INF_REGISTRY_READ) | CAP(INF_REGISTRY_PREDICT)},
    {"publisher", CAP(INF_REGISTRY_READ) | CAP(INF_REGISTRY_PREDICT) | CAP(INF_REGISTRY_PUBLISH) |
                      CAP(INF_REGISTRY_MOVE_ALIAS)},
    {"approver", CAP(INF_REGISTRY_READ) | CAP(INF_REGISTRY_PREDICT) | CAP(INF_REGISTRY_MOVE_ALIAS) |
                     CAP(INF_REGISTRY_MOVE_PROTECTED) | CAP(INF_REGISTRY_AUDIT)},
    {"admin", ~0u},
};

/* Per action: its name in messages and the least role that grants it. */
static const struct action_info {
    const char *name;
    const char *role;
} actions[] = {
    [INF_REGISTRY_READ] = {"read", "viewer"},
    [INF_REGISTRY_PREDICT] = {"predict with", "predictor"},
    [INF_REGISTRY_PUBLISH] = {"publish or delete versions of", "publisher"},
    [INF_REGISTRY_MOVE_ALIAS] = {"move aliases of", "publisher"},
    [INF_REGISTRY_MOVE_PROTECTED] = {"move protected aliases of", "approver"},
    [INF_REGISTRY_AUDIT] = {"read the audit log of", "approver"},
    [INF_REGISTRY_ADMIN] = {"administer", "admin"},
};

const char *inf__auth_action_name(inf_registry_action action) {
    return (unsigned)action < sizeof actions / sizeof actions[0] ? actions[action].name : "?";
}

static const struct role *find_role(const char *name) {
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++)
        if (name && !strcmp(roles[i].name, name)) return &roles[i];
    return NULL;
}

static bool valid_principal(const char *s) {
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 128) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  (i > 0 && (c == '.' || c == '_' || c == '-' || c == '@' || c == ':'));
        if (!ok) return false;
    }
    return true;
}

static inf_status meta_get(inf_registry *r, const char *key, char *out, size_t size, inf_error *err) {
    const char *params[1] = {key};
    inf__rows *rows = NULL;
    inf_status rc = inf__reg_sql(r, "SELECT value FROM reg_meta WHERE key = ?", 1, params, &rows, err);
    if (rc) return rc;
    snprintf(out, size, "%s", inf__rows_get(rows, 0, 0) ? inf__rows_get(rows, 0, 0) : "");
    inf__rows_free(rows);
    return INF_OK;
}

static void local_user(char *out, size_t size) {
    const char *u = getenv("USER");
    if (!u || !*u) u = getenv("LOGNAME");
    if (u && *u)
        snprintf(out, size, "local:%s", u);
    else
        snprintf(out, size, "local:uid%ld", (long)getuid());
}

inf_status inf__auth_load(inf_registry *r, const char *token, inf_error *err) {
    char flag[8];
    inf_status rc = meta_get(r, "auth_enabled", flag, sizeof flag, err);
    if (rc) return rc;
    r->auth_enabled = !strcmp(flag, "1");
    r->authenticated = false;
    r->principal[0] = r->token_id[0] = r->auth_error[0] = '\0';
    if (!r->auth_enabled) {
        local_user(r->principal, sizeof r->principal);
        r->authenticated = true;
        return INF_OK;
    }
    if (!token || !*token) {
        snprintf(r->auth_error, sizeof r->auth_error,
                 "authentication required: the registry at %s has auth enabled; pass --token or set INFERA_TOKEN",
                 r->location);
        return INF_OK;
    }
    char hex[65];
    inf_sha256_hex(token, strlen(token), hex);
    const char *params[1] = {hex};
    inf__rows *rows = NULL;
    if ((rc = inf__reg_sql(r, "SELECT id, principal, revoked_at FROM reg_tokens WHERE hash = ?", 1, params, &rows, err)))
        return rc;
    if (rows->n_rows == 0) {
        snprintf(r->auth_error, sizeof r->auth_error, "invalid API token (not issued by the registry at %s)",
                 r->location);
    } else if (inf__rows_get(rows, 0, 2)) {
        snprintf(r->token_id, sizeof r->token_id, "%s", inf__rows_get(rows, 0, 0));
        snprintf(r->auth_error, sizeof r->auth_error, "API token %s of '%s' was revoked at %s", r->token_id,
                 inf__rows_get(rows, 0, 1), inf__rows_get(rows, 0, 2));
    } else {
        snprintf(r->token_id, sizeof r->token_id, "%s", inf__rows_get(rows, 0, 0));
        snprintf(r->principal, sizeof r->principal, "%s", inf__rows_get(rows, 0, 1));
        r->authenticated = true;
    }
    inf__rows_free(rows);
    return INF_OK;
}

/* Capabilities of principal on model (NULL = global grants only); roles_desc
 * lists every grant it holds, for messages. */
static inf_status caps_of(inf_registry *r, const char *principal, const char *model, unsigned *caps, char *roles_desc,
                          size_t desc_size, inf_error *err) {
    const char *params[1] = {principal};
    inf__rows *rows = NULL;
    inf_status rc = inf__reg_sql(r,
                                 "SELECT role, model FROM reg_grants WHERE principal = ?"
                                 " ORDER BY model COLLATE BINARY, role",
                                 1, params, &rows, err);
    if (rc) return rc;
    *caps = 0;
    size_t o = 0;
    if (roles_desc && desc_size) roles_desc[0] = '\0';
    for (int i = 0; i < rows->n_rows; i++) {
        const struct role *role = find_role(inf__rows_get(rows, i, 0));
        const char *m = inf__rows_get(rows, i, 1);
        bool applies = !m || !*m || (model && !strcmp(m, model));
        if (role && applies) *caps |= role->caps;
        if (roles_desc && o < desc_size)
            o += (size_t)snprintf(roles_desc + o, desc_size - o, "%s%s%s%s", i ? ", " : "", inf__rows_get(rows, i, 0),
                                  m && *m ? " on " : "", m && *m ? m : "");
    }
    inf__rows_free(rows);
    return INF_OK;
}

/* Pure check: INF_OK, or EAUTH/EDENIED with the reason in why. */
static inf_status check(inf_registry *r, const char *model, inf_registry_action action, char *why, size_t why_size,
                        inf_error *err) {
    if (!r->auth_enabled) return INF_OK;
    if (!r->authenticated) {
        snprintf(why, why_size, "%s", r->auth_error);
        return INF_EAUTH;
    }
    unsigned caps;
    char held[200];
    inf_status rc = caps_of(r, r->principal, model, &caps, held, sizeof held, err);
    if (rc) return rc;
    if (caps & CAP(action)) return INF_OK;
    const struct action_info *a = &actions[action];
    if (model)
        snprintf(why, why_size, "'%s' may not %s model '%s': needs role %s (has: %s)", r->principal, a->name, model,
                 a->role, held[0] ? held : "no roles");
    else
        snprintf(why, why_size, "'%s' may not %s the registry: needs global role %s (has: %s)", r->principal,
                 a->name, a->role, held[0] ? held : "no roles");
    return INF_EDENIED;
}

inf_status inf__auth_require(inf_registry *r, const char *model, inf_registry_action action, const char *what,
                             int64_t version, inf_error *err) {
    char why[400];
    inf_status rc = check(r, model, action, why, sizeof why, err);
    if (rc != INF_EAUTH && rc != INF_EDENIED) return rc;
    if (what) inf__audit_denied(r, what, model, version, why);
    return inf_error_set(err, rc, "%s: %s", rc == INF_EAUTH ? "not authenticated" : "permission denied", why);
}

inf_status inf_registry_check(inf_registry *r, const char *model, inf_registry_action action, const char *what,
                              inf_error *err) {
    if ((unsigned)action > INF_REGISTRY_ADMIN) return inf_error_set(err, INF_EINVAL, "registry check: unknown action");
    return inf__auth_require(r, model, action, what ? what : "check", 0, err);
}

/* ---------------------------------------------------------------------------
 * Grants
 * ------------------------------------------------------------------------- */
static inf_status ensure_principal(inf_registry *r, const char *principal, const char *ts, inf_error *err) {
    const char *params[3] = {principal, ts, r->principal};
    return inf__reg_sql(r, "INSERT INTO reg_principals(name, created_at, created_by) VALUES (?, ?, ?) "
                           "ON CONFLICT DO NOTHING",
                        3, params, NULL, err);
}

static char *grant_detail(const char *principal, const char *role, const char *model, const char *token_id) {
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "principal", principal);
    if (role) cJSON_AddStringToObject(d, "role", role);
    if (role) cJSON_AddStringToObject(d, "scope", model && *model ? model : "global");
    if (token_id) cJSON_AddStringToObject(d, "token_id", token_id);
    char *s = d ? cJSON_PrintUnformatted(d) : NULL;
    cJSON_Delete(d);
    return s;
}

static inf_status audit_and_commit(inf_registry *r, const char *action, const char *model, char *detail,
                                   inf_error *err) {
    if (!detail) return inf_error_set(err, INF_ENOMEM, "registry: out of memory building the audit record");
    inf_status rc = inf__audit_append(r, action, model, 0, "ok", detail, err);
    free(detail);
    return rc ? rc : inf__reg_commit(r, err);
}

/* When auth is on, at least one global admin must keep a live token. */
static inf_status keeps_an_admin(inf_registry *r, inf_error *err) {
    if (!r->auth_enabled) return INF_OK;
    inf__rows *rows = NULL;
    inf_status rc = inf__reg_sql(r,
                                 "SELECT count(*) FROM reg_grants g JOIN reg_tokens t ON t.principal = g.principal"
                                 " WHERE g.role = 'admin' AND g.model = '' AND t.revoked_at IS NULL",
                                 0, NULL, &rows, err);
    if (rc) return rc;
    bool ok = strtoll(inf__rows_get(rows, 0, 0) ? inf__rows_get(rows, 0, 0) : "0", NULL, 10) > 0;
    inf__rows_free(rows);
    return ok ? INF_OK
              : inf_error_set(err, INF_EINVAL,
                              "refused: no global admin with a live token would remain (grant admin to someone "
                              "else first)");
}

static inf_status check_grant_args(const char *what, const char *principal, const char *role, const char *model,
                                   inf_error *err) {
    if (!valid_principal(principal))
        return inf_error_set(err, INF_EINVAL, "%s: invalid principal '%s' (letters, digits, '.', '_', '-', '@', ':')",
                             what, principal ? principal : "");
    if (role && !find_role(role))
        return inf_error_set(err, INF_EINVAL,
                             "%s: unknown role '%s' (roles: admin, publisher, approver, predictor, viewer)", what, role);
    /* "" is refused, not read as global: an empty --model "$M" must not widen a grant */
    if (model && !inf__reg_valid_name(model))
        return inf_error_set(err, INF_EINVAL, "%s: invalid model name '%s' (omit --model for a global role)", what,
                             model);
    return INF_OK;
}

inf_status inf_registry_grant(inf_registry *r, const char *principal, const char *role, const char *model,
                              inf_error *err) {
    inf_status rc = check_grant_args("grant", principal, role, model, err);
    if (!rc && !role) rc = inf_error_set(err, INF_EINVAL, "grant: no role given");
    if (rc || (rc = inf__auth_require(r, NULL, INF_REGISTRY_ADMIN, "grant", 0, err))) return rc;
    if ((rc = inf__reg_begin(r, err))) return rc;
    char ts[32];
    inf__reg_now(ts);
    const char *params[5] = {principal, role, model ? model : "", ts, r->principal};
    if ((rc = ensure_principal(r, principal, ts, err)) ||
        (rc = inf__reg_sql(r, "INSERT INTO reg_grants(principal, role, model, granted_at, granted_by)"
                              " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                           5, params, NULL, err)) ||
        (rc = audit_and_commit(r, "grant", model, grant_detail(principal, role, model, NULL), err)))
        inf__reg_rollback(r);
    return rc;
}

inf_status inf_registry_revoke(inf_registry *r, const char *principal, const char *role, const char *model,
                               inf_error *err) {
    inf_status rc = check_grant_args("revoke", principal, role, model, err);
    if (!rc && !role) rc = inf_error_set(err, INF_EINVAL, "revoke: no role given");
    if (rc || (rc = inf__auth_require(r, NULL, INF_REGISTRY_ADMIN, "revoke", 0, err))) return rc;
    if ((rc = inf__reg_begin(r, err))) return rc;
    const char *params[3] = {principal, role, model ? model : ""};
    inf__rows *rows = NULL;
    if ((rc = inf__reg_sql(r, "SELECT count(*) FROM reg_grants WHERE principal = ? AND role = ? AND model = ?", 3,
                           params, &rows, err)))
        goto rollback;
    bool had = strtoll(inf__rows_get(rows, 0, 0), NULL, 10) > 0;
    inf__rows_free(rows);
    if (!had) {
        rc = inf_error_set(err, INF_ENOENT, "revoke: '%s' has no role %s %s%s", principal, role,
                           model && *model ? "on model " : "globally", model && *model ? model : "");
        goto rollback;
    }
    if ((rc = inf__reg_sql(r, "DELETE FROM reg_grants WHERE principal = ? AND role = ? AND model = ?", 3, params, NULL,
                           err)) ||
        (rc = keeps_an_admin(r, err)) ||
        (rc = audit_and_commit(r, "revoke", model, grant_detail(principal, role, model, NULL), err)))
        goto rollback;
    return INF_OK;
rollback:
    inf__reg_rollback(r);
    return rc;
}

/* ---------------------------------------------------------------------------
 * Tokens
 * ------------------------------------------------------------------------- */
static inf_status random_hex(char *out, size_t n_bytes, inf_error *err) {
    unsigned char buf[64];
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(buf, 1, n_bytes, f) != n_bytes) {
        if (f) fclose(f);
        return inf_error_set(err, INF_EIO, "cannot read /dev/urandom to make a token");
    }
    fclose(f);
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n_bytes; i++) {
        out[2 * i] = hex[buf[i] >> 4];
        out[2 * i + 1] = hex[buf[i] & 15];
    }
    out[2 * n_bytes] = '\0';
    return INF_OK;
}

inf_status inf_registry_token_create(inf_registry *r, const char *principal, const char *role, const char *model,
                                     char token[INF_REGISTRY_TOKEN_MAX], char id[32], inf_error *err) {
    token[0] = id[0] = '\0';
    inf_status rc = check_grant_args("token create", principal, role, model, err);
    if (rc || (rc = inf__auth_require(r, NULL, INF_REGISTRY_ADMIN, "token-create", 0, err))) return rc;
    char secret[65], hash[65], ts[32];
    if ((rc = random_hex(id, 6, err)) || (rc = random_hex(secret, 32, err))) return rc;
    snprintf(token, INF_REGISTRY_TOKEN_MAX, "inf_%s_%s", id, secret);
    inf_sha256_hex(token, strlen(token), hash);
    memset(secret, 0, sizeof secret);
    if ((rc = inf__reg_begin(r, err))) goto wipe;
    inf__reg_now(ts);
    bool enabling = false;
    {
        char flag[8];
        if ((rc = meta_get(r, "auth_enabled", flag, sizeof flag, err))) goto rollback;
        enabling = strcmp(flag, "1") != 0;
    }
    if ((rc = ensure_principal(r, principal, ts, err))) goto rollback;
    if (role) {
        const char *gp[5] = {principal, role, model ? model : "", ts, r->principal};
        if ((rc = inf__reg_sql(r, "INSERT INTO reg_grants(principal, role, model, granted_at, granted_by)"
                                  " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                               5, gp, NULL, err)))
            goto rollback;
        char *d = grant_detail(principal, role, model, NULL);
        if (!d) {
            rc = inf_error_set(err, INF_ENOMEM, "registry: out of memory");
            goto rollback;
        }
        rc = inf__audit_append(r, "grant", model, 0, "ok", d, err);
        free(d);
        if (rc) goto rollback;
    }
    if (enabling) {
        unsigned caps;
        if ((rc = caps_of(r, principal, NULL, &caps, NULL, 0, err))) goto rollback;
        if (caps != ~0u) {
            rc = inf_error_set(err, INF_EINVAL,
                               "the first token turns auth on and must belong to a global admin: run 'infera registry "
                               "token create %s --role admin'",
                               principal);
            goto rollback;
        }
        const char *ep[1] = {"1"};
        if ((rc = inf__reg_sql(r, "UPDATE reg_meta SET value = ? WHERE key = 'auth_enabled'", 1, ep, NULL, err)) ||
            (rc = inf__audit_append(r, "auth-enable", NULL, 0, "ok", "{\"by\":\"first token\"}", err)))
            goto rollback;
    }
    {
        const char *tp[5] = {id, principal, hash, ts, r->principal};
        if ((rc = inf__reg_sql(r, "INSERT INTO reg_tokens(id, principal, hash, created_at, created_by)"
                                  " VALUES (?, ?, ?, ?, ?)",
                               5, tp, NULL, err)))
            goto rollback;
    }
    if ((rc = audit_and_commit(r, "token-create", NULL, grant_detail(principal, NULL, NULL, id), err))) goto rollback;
    if (enabling) r->auth_enabled = true;
    return INF_OK;
rollback:
    inf__reg_rollback(r);
wipe:
    memset(token, 0, INF_REGISTRY_TOKEN_MAX);
    id[0] = '\0';
    return rc;
}

inf_status inf_registry_token_revoke(inf_registry *r, const char *principal, const char *token_id, int *n_revoked,
                                     inf_error *err) {
    if (n_revoked) *n_revoked = 0;
    inf_status rc = check_grant_args("token revoke", principal, NULL, NULL, err);
    if (rc || (rc = inf__auth_require(r, NULL, INF_REGISTRY_ADMIN, "token-revoke", 0, err))) return rc;
    if ((rc = inf__reg_begin(r, err))) return rc;
    char ts[32];
    inf__reg_now(ts);
    inf__rows *rows = NULL;
    const char *sp[2] = {principal, token_id};
    if ((rc = inf__reg_sql(r,
                           token_id ? "SELECT id FROM reg_tokens WHERE principal = ? AND id = ? AND revoked_at IS NULL"
                                    : "SELECT id FROM reg_tokens WHERE principal = ? AND revoked_at IS NULL",
                           token_id ? 2 : 1, sp, &rows, err)))
        goto rollback;
    int n = rows->n_rows;
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "principal", principal);
    cJSON *ids = cJSON_AddArrayToObject(d, "token_ids");
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(ids, cJSON_CreateString(inf__rows_get(rows, i, 0)));
    inf__rows_free(rows);
    char *detail = d ? cJSON_PrintUnformatted(d) : NULL;
    cJSON_Delete(d);
    if (n == 0) {
        free(detail);
        rc = inf_error_set(err, INF_ENOENT, "token revoke: '%s' has no live token%s%s", principal,
                           token_id ? " with id " : "", token_id ? token_id : "");
        goto rollback;
    }
    const char *up[4] = {ts, r->principal, principal, token_id};
    if ((rc = inf__reg_sql(r,
                           token_id ? "UPDATE reg_tokens SET revoked_at = ?, revoked_by = ? WHERE principal = ? AND id = ?"
                                      " AND revoked_at IS NULL"
                                    : "UPDATE reg_tokens SET revoked_at = ?, revoked_by = ? WHERE principal = ?"
                                      " AND revoked_at IS NULL",
                           token_id ? 4 : 3, up, NULL, err)) ||
        (rc = keeps_an_admin(r, err))) {
        free(detail);
        goto rollback;
    }
    if ((rc = audit_and_commit(r, "token-revoke", NULL, detail, err))) goto rollback;
    if (n_revoked) *n_revoked = n;
    return INF_OK;
rollback:
    inf__reg_rollback(r);
    return rc;
}

inf_status inf_registry_tokens_json(inf_registry *r, const char *principal, char **out, inf_error *err) {
    *out = NULL;
    inf_status rc = inf__auth_require(r, NULL, INF_REGISTRY_ADMIN, "token-list", 0, err);
    if (rc) return rc;
    inf__rows *ps = NULL, *ts = NULL, *gs = NULL;
    const char *params[1] = {principal};
    if ((rc = inf__reg_sql(r,
                           principal ? "SELECT name, created_at FROM reg_principals WHERE name = ?"
                                     : "SELECT name, created_at FROM reg_principals ORDER BY name COLLATE BINARY",
                           principal ? 1 : 0, params, &ps, err)) ||
        (rc = inf__reg_sql(r, "SELECT principal, id, created_at, created_by, revoked_at FROM reg_tokens ORDER BY created_at",
                           0, NULL, &ts, err)) ||
        (rc = inf__reg_sql(r, "SELECT principal, role, model FROM reg_grants ORDER BY model COLLATE BINARY, role", 0,
                           NULL, &gs, err)))
        goto done;
    if (principal && ps->n_rows == 0) {
        rc = inf_error_set(err, INF_ENOENT, "unknown principal '%s'", principal);
        goto done;
    }
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; arr && i < ps->n_rows; i++) {
        const char *name = inf__rows_get(ps, i, 0);
        cJSON *p = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, p);
        cJSON_AddStringToObject(p, "principal", name);
        cJSON_AddStringToObject(p, "created_at", inf__rows_get(ps, i, 1));
        cJSON *g = cJSON_AddArrayToObject(p, "roles");
        for (int k = 0; k < gs->n_rows; k++) {
            if (strcmp(inf__rows_get(gs, k, 0), name)) continue;
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "role", inf__rows_get(gs, k, 1));
            const char *m = inf__rows_get(gs, k, 2);
            cJSON_AddStringToObject(e, "scope", m && *m ? m : "global");
            cJSON_AddItemToArray(g, e);
        }
        cJSON *t = cJSON_AddArrayToObject(p, "tokens");
        for (int k = 0; k < ts->n_rows; k++) {
            if (strcmp(inf__rows_get(ts, k, 0), name)) continue;
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "id", inf__rows_get(ts, k, 1));
            cJSON_AddStringToObject(e, "created_at", inf__rows_get(ts, k, 2));
            cJSON_AddStringToObject(e, "created_by", inf__rows_get(ts, k, 3));
            const char *rv = inf__rows_get(ts, k, 4);
            if (rv)
                cJSON_AddStringToObject(e, "revoked_at", rv);
            else
                cJSON_AddNullToObject(e, "revoked_at");
            cJSON_AddItemToArray(t, e);
        }
    }
    *out = arr ? cJSON_Print(arr) : NULL;
    cJSON_Delete(arr);
    if (!*out) rc = inf_error_set(err, INF_ENOMEM, "registry: out of memory listing tokens");
done:
    inf__rows_free(ps);
    inf__rows_free(ts);
    inf__rows_free(gs);
    return rc;
}

inf_status inf_registry_auth_enable(inf_registry *r, inf_error *err) {
    if (r->auth_enabled) return INF_OK;
    inf_status rc = inf__reg_begin(r, err);
    if (rc) return rc;
    inf__rows *rows = NULL;
    if ((rc = inf__reg_sql(r,
                           "SELECT count(*) FROM reg_grants g JOIN reg_tokens t ON t.principal = g.principal"
                           " WHERE g.role = 'admin' AND g.model = '' AND t.revoked_at IS NULL",
                           0, NULL, &rows, err)))
        goto rollback;
    bool ok = strtoll(inf__rows_get(rows, 0, 0), NULL, 10) > 0;
    inf__rows_free(rows);
    if (!ok) {
        rc = inf_error_set(err, INF_EINVAL,
                           "auth enable: no global admin has a live token; create one first with 'infera registry "
                           "token create NAME --role admin' (which also enables auth)");
        goto rollback;
    }
    const char *ep[1] = {"1"};
    if ((rc = inf__reg_sql(r, "UPDATE reg_meta SET value = ? WHERE key = 'auth_enabled'", 1, ep, NULL, err)) ||
        (rc = inf__audit_append(r, "auth-enable", NULL, 0, "ok", "{}", err)) || (rc = inf__reg_commit(r, err)))
        goto rollback;
    r->auth_enabled = true;
    return INF_OK;
rollback:
    inf__reg_rollback(r);
    return rc;
}

bool inf__auth_valid_principal(const char *s) { return valid_principal(s); }
