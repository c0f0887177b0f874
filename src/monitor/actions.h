/*
 * actions.h -- what a firing alert rule does (rules.h), shared by `infera
 * monitor check` and `infera serve --monitor`: an HTTP webhook (POST of the
 * alert JSON) and the rollback of a registry alias.
 *
 * ROLLBACK.  The alias is moved back only when it still points at the
 * version whose traffic breached (a second evaluation of the same breach, a
 * cron re-run, another server: nothing happens -- the move happens exactly
 * once), to the newest live version below it.  The move goes through
 * inf_registry_alias_set, so the registry's rules hold (publisher for an
 * alias, approver for a protected one; a refusal is the registry's error,
 * audited by it) and the move is audited with the old and new version; a
 * "monitor-rollback" audit event records the alert that caused it.
 */
#ifndef INF_MONITOR_ACTIONS_H
#define INF_MONITOR_ACTIONS_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "infera/registry.h"
#include "monitor/rules.h"

/* POSTs body (JSON) to url (http://host[:port]/path; no TLS) within
 * timeout_ms.  *http_status gets the response's status.  INF_EINVAL (the
 * URL), INF_EIO (connection, time-out; err says which). */
inf_status inf__mon_webhook_post(const char *url, const char *body, int timeout_ms, int *http_status, inf_error *err);

/* Moves model@alias from from_version back to the newest live version below
 * it (see ROLLBACK).  *to_version gets the new version, 0 when nothing moved
 * (the alias no longer points at from_version).  reason_json (an object
 * text, the alert) goes into the audit event.  INF_ENOENT (no earlier live
 * version, unknown alias), the registry's INF_EDENIED / INF_EAUTH. */
inf_status inf__mon_rollback(inf_registry *r, const char *model, int64_t from_version, const char *alias,
                             const char *reason_json, int64_t *to_version, inf_error *err);

/* What the actions of one firing did. */
typedef struct inf__mon_act_result {
    int64_t rolled_to;  /* the version the alias moved to; 0: no move */
    int rollback_failed, webhook_ok, webhook_failed;
} inf__mon_act_result;

/* Runs the actions of rule r firing with alert (rules.h alert JSON; a
 * "rollback" object {"alias","from","to"|"skipped"|"error"} is added):
 * the log line on stderr (prefixed by who), the rollback of model@alias
 * from version (registry reg; refused when the model is not a registry
 * model: version 0 or reg NULL), then the webhook (whose body is the alert,
 * so it carries the rollback's outcome). */
void inf__mon_alert_act(const inf__mon_rule *r, cJSON *alert, inf_registry *reg, const char *model, int64_t version,
                        const char *who, inf__mon_act_result *res);

#endif /* INF_MONITOR_ACTIONS_H */
