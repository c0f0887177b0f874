/*
 * store.c -- what the two store drivers share: result rows, and the small
 * registry-level wrappers over the driver vtable (registry_int.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry/registry_int.h"

const char *inf__rows_get(const inf__rows *rows, int row, int col) {
    if (!rows || row < 0 || row >= rows->n_rows || col < 0 || col >= rows->n_cols) return NULL;
    return rows->cells[(size_t)row * rows->n_cols + col];
}

void inf__rows_free(inf__rows *rows) {
    if (!rows) return;
    for (size_t i = 0; i < (size_t)rows->n_rows * rows->n_cols; i++) free(rows->cells[i]);
    free(rows->cells);
    free(rows);
}

inf_status inf__reg_sql(inf_registry *r, const char *sql, int n, const char *const *params, inf__rows **out,
                        inf_error *err) {
    if (out) *out = NULL;
    return r->store->ops->query(r->store, sql, n, params, out, err);
}

/* Takes the write lock, then makes sure auth is still off when this handle
 * believes so: another process may have created the first token since the
 * handle was opened, and the checks this handle made (all allowed while auth
 * was off) must not let its write through. */
inf_status inf__reg_begin(inf_registry *r, inf_error *err) {
    inf_status rc = r->store->ops->begin_write(r->store, err);
    if (rc || r->auth_enabled) return rc;
    inf__rows *rows = NULL;
    if ((rc = inf__reg_sql(r, "SELECT value FROM reg_meta WHERE key = 'auth_enabled'", 0, NULL, &rows, err))) {
        r->store->ops->rollback(r->store);
        return rc;
    }
    bool now_on = inf__rows_get(rows, 0, 0) && !strcmp(inf__rows_get(rows, 0, 0), "1");
    inf__rows_free(rows);
    if (!now_on) return INF_OK;
    r->store->ops->rollback(r->store);
    r->auth_enabled = true;
    r->authenticated = false;
    r->principal[0] = '\0';
    snprintf(r->auth_error, sizeof r->auth_error,
             "authentication required: auth was turned on in the registry at %s after it was opened; pass --token "
             "or set INFERA_TOKEN",
             r->location);
    return inf_error_set(err, INF_EAUTH, "not authenticated: %s", r->auth_error);
}
inf_status inf__reg_commit(inf_registry *r, inf_error *err) { return r->store->ops->commit(r->store, err); }
void inf__reg_rollback(inf_registry *r) { r->store->ops->rollback(r->store); }

char *inf__reg_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

void inf__reg_redact(const char *s, char *out, size_t size) {
    if (!size) return;
    out[0] = '\0';
    if (!s) return;
    size_t o = 0;
    const char *scheme = strstr(s, "://");
    const char *p = s;
    if (scheme) {
        const char *auth = scheme + 3;
        const char *end = auth + strcspn(auth, "/?#");
        const char *at = NULL;
        for (const char *q = auth; q < end; q++)
            if (*q == '@') at = q;
        const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
        if (colon) { /* copy up to ':' then "@..." */
            size_t n = (size_t)(colon - s);
            if (n >= size) n = size - 1;
            memcpy(out, s, n);
            o = n;
            p = at;
        }
    }
    while (*p && o + 1 < size) {
        if (!strncmp(p, "password=", 9)) {
            const char *tail = "password=***";
            for (const char *t = tail; *t && o + 1 < size; t++) out[o++] = *t;
            p += 9;
            while (*p && *p != '&' && *p != ' ') p++;
            continue;
        }
        out[o++] = *p++;
    }
    out[o] = '\0';
}
