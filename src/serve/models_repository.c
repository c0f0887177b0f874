/*
 * models_repository.c -- the repository API of the served models (KServe
 * V2 repository extension): load, unload, the index, and the registry
 * aliases served with --all-aliases.
 *
 * REPOSITORY API RULES.  A load names a served model and, optionally, a
 * reference.  Without one it reloads the name's configured reference (or
 * the registry model of that name).  A registry reference is always
 * allowed (the registry's grants decide).  A file path is allowed only with
 * --allow-repository-paths, and only when its real path (symlinks resolved;
 * a relative path is taken under the root) is a regular file under
 * --model-root; anything else -- missing, outside, a symlink out, a device
 * -- gets one generic "not found or not allowed" answer, so the API cannot
 * probe the file system.  Such a slot stays confined: each reload resolves
 * its path again, and a pipeline spec beside it must be under the root too.
 * New names stop at --max-models.  Every load and unload, allowed or not,
 * is written to the registry's audit log when a registry is in use, as the
 * calling principal (or the server's own with "caller" in the detail).
 */
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "infera/bundle.h"
#include "infera/llm.h"
#include "infera/pipeline.h"
#include "infera/registry.h"
#include "runtime/model.h"
#include "serve/models_internal.h"
#include "serve/serve.h"

/* ---- repository API: rules and audit ------------------------------------------ */

static int count_slots(srv_models *ms) {
    int n = 0;
    for (int i = 0; i < MAX_SLOTS; i++)
        n += ms->slots[i].used;
    return n;
}

/* One audit record of a repository action (load_lock held): in the
 * registry's log when a registry is in use -- as the calling principal,
 * else (auth off, or the caller's handle failed) as the server's own with
 * the caller named -- and always one server log line. */
void inf__serve_models_audit_repository(srv_models *ms, int who, const char *action, const char *served,
                                        const char *ref, const char *outcome, const char *message) {
    char principal[129] = "";
    char *token = NULL;
    pthread_mutex_lock(&ms->audit_lock);
    if (who >= 0 && who < ms->n_callers) {
        snprintf(principal, sizeof principal, "%s", ms->callers[who].principal);
        token = strdup(ms->callers[who].token);
    }
    pthread_mutex_unlock(&ms->audit_lock);
    fprintf(stderr, "infera serve: %s of '%s'%s%s by %s: %s%s%s\n", action, served, ref ? " from " : "", ref ? ref : "",
            principal[0] ? principal : "an unauthenticated caller", outcome, message && *message ? ": " : "",
            message ? message : "");
    int have_reg = ms->reg || ms->srv->opt.home || ms->srv->opt.registry;
    if (!have_reg) goto out;
    char model[129] = "";
    if (ref && !inf_registry_ref_is_path(ref)) {
        const char *at = strchr(ref, '@');
        snprintf(model, sizeof model, "%.*s", (int)(at ? (size_t)(at - ref) : strlen(ref)), ref);
    }
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "served_as", served);
    if (ref) cJSON_AddStringToObject(d, "ref", ref);
    cJSON_AddStringToObject(d, "source", ms->srv->listen_url);
    if (message && *message) cJSON_AddStringToObject(d, "error", message);
    char *detail = d ? cJSON_PrintUnformatted(d) : NULL;
    inf_error e = {0};
    inf_status st = INF_EAUTH;
    if (token) { /* as the caller */
        inf_registry *r = NULL;
        st = inf__serve_models_open_registry(ms, token, &r, &e);
        if (st == INF_OK) st = inf_registry_audit_event(r, action, model[0] ? model : NULL, 0, outcome, detail, &e);
        if (r) inf_registry_free(r);
    }
    if (st != INF_OK && inf__serve_models_loader_registry(ms, &e) == INF_OK) { /* as the server, naming the caller */
        if (principal[0]) cJSON_AddStringToObject(d, "caller", principal);
        free(detail);
        detail = d ? cJSON_PrintUnformatted(d) : NULL;
        st = inf_registry_audit_event(ms->reg, action, model[0] ? model : NULL, 0, outcome, detail, &e);
    }
    if (st != INF_OK) fprintf(stderr, "infera serve: audit of the %s of '%s' failed: %s\n", action, served, e.message);
    free(detail);
    cJSON_Delete(d);
out:
    if (token) {
        explicit_bzero(token, strlen(token));
        free(token);
    }
}

/* May the repository API load ref (a file path or a registry reference)?
 * (load_lock held) */
static inf_status check_ref(srv_models *ms, const char *ref, inf_error *err) {
    if (!inf_registry_ref_is_path(ref)) return INF_OK; /* the registry's grants decide */
    if (!ms->srv->opt.allow_repository_paths) {
        inf__serve_models_set_err(err, INF_EDENIED,
                                  "loading by file path is off: give a registry reference, or start the server with "
                                  "--allow-repository-paths and --model-root DIR%s%s",
                                  "", "");
        return INF_EDENIED;
    }
    char real[PATH_MAX];
    return inf__serve_models_confined_path(ms, ref, real, err);
}

/* The repository API on a generative (GGUF) model (load_lock held): *handled
 * = 1 when name is one, or ref (a file already allowed by check_ref, or a
 * registry reference) is a GGUF file; a reload first waits for the old
 * model's generations (inf__serve_llm_remove), then loads the new one. */
static inf_status load_llm(srv_models *ms, const char *name, const char *ref, int who, int *handled, inf_error *err) {
    *handled = 0;
    srv_llm *cur = inf__serve_llm_find(ms->srv, name);
    char source[1024] = "", real[PATH_MAX], gguf[4096], reg_name[129] = "";
    int64_t reg_version = 0;
    if (ref)
        inf__serve_copy_str(source, sizeof source, ref);
    else if (cur)
        inf__serve_copy_str(source, sizeof source, inf__serve_llm_ref_of(cur));
    else if (!inf__serve_models_find_slot(ms, name) && (ms->reg || ms->srv->opt.home || ms->srv->opt.registry))
        inf__serve_copy_str(source, sizeof source, name); /* NAME in the registry */
    if (!source[0]) return INF_OK;
    const char *at = source;
    if (ref && inf_registry_ref_is_path(ref) && inf__serve_models_confined_path(ms, ref, real, NULL) == INF_OK)
        at = real;
    if (!inf__serve_models_gguf_ref(ms, at, gguf, sizeof gguf, reg_name, &reg_version)) {
        if (!cur) return INF_OK; /* not a GGUF model: the ONNX path decides */
        *handled = 1;
        inf__serve_models_set_err(err, INF_EINVAL,
                                  "'%s' is a generative (GGUF) model; '%s' is not a GGUF file or GGUF registry model",
                                  name, source);
        inf__serve_models_audit_repository(ms, who, "serve-load", name, source, "refused", err ? err->message : NULL);
        return INF_EINVAL;
    }
    *handled = 1;
    inf_status st = INF_OK;
    if (inf__serve_models_find_slot(ms, name)) {
        st = INF_EEXIST;
        inf__serve_models_set_err(
            err, st, "model '%s' is served as an ONNX model; unload it before loading a GGUF file under its name%s",
            name, "");
    } else if (!cur && count_slots(ms) + inf__serve_llm_count(ms->srv) >= ms->srv->opt.max_models) {
        st = INF_EBUSY;
        char n_served[16];
        snprintf(n_served, sizeof n_served, "%d", count_slots(ms) + inf__serve_llm_count(ms->srv));
        inf__serve_models_set_err(
            err, st,
            "model '%s': the server already serves %s models, the most --max-models allows; unload "
            "one first",
            name, n_served);
    }
    if (st != INF_OK) {
        inf__serve_models_audit_repository(ms, who, "serve-load", name, source, "refused", err ? err->message : NULL);
        return st;
    }
    if (at == real) inf__serve_copy_str(source, sizeof source, real); /* a reload without a ref opens this file */
    /* a file that does not load leaves the old model serving (the check maps the file: cheap) */
    inf_llm_model *probe = NULL;
    if (cur && (st = inf_llm_model_load(gguf, &probe, err)) != INF_OK) {
        inf__serve_models_audit_repository(ms, who, "serve-load", name, source, "failed", err ? err->message : NULL);
        return st;
    }
    inf_llm_model_free(probe);
    if (cur) inf__serve_llm_remove(ms->srv, name, NULL); /* in-flight generations finish on the old one */
    st = inf__serve_llm_add(ms->srv, name, gguf, reg_name, reg_version, err);
    srv_llm *now = st == INF_OK ? inf__serve_llm_find(ms->srv, name) : NULL;
    if (now) inf__serve_llm_set_ref(now, source);
    if (st == INF_OK) fprintf(stderr, "infera serve: loaded generative model '%s' from %s\n", name, source);
    inf__serve_models_audit_repository(ms, who, "serve-load", name, source, st == INF_OK ? "ok" : "failed",
                                       st == INF_OK ? NULL
                                       : err        ? err->message
                                                    : NULL);
    return st;
}

inf_status inf__serve_models_load(srv_models *ms, const char *name, const char *ref, int who, inf_error *err) {
    if (!inf__serve_models_valid_name(name)) {
        inf__serve_models_set_err(err, INF_EINVAL, "invalid model name '%s'%s", name, "");
        return INF_EINVAL;
    }
    pthread_mutex_lock(&ms->load_lock);
    if (!ref || check_ref(ms, ref, NULL) == INF_OK) {
        int handled;
        inf_status lst = load_llm(ms, name, ref, who, &handled, err);
        if (handled) {
            pthread_mutex_unlock(&ms->load_lock);
            return lst;
        }
    }
    srv_slot *slot = inf__serve_models_find_slot(ms, name);
    int created = 0;
    inf_status st = INF_OK;
    char configured[1024] = "";
    if (slot) snprintf(configured, sizeof configured, "%s", slot->ref);
    const char *audit_ref = ref ? ref : slot ? configured : NULL;
    if (ref && (st = check_ref(ms, ref, err)) != INF_OK) goto refused;
    if (!slot) {
        const char *r = ref;
        if (!r && (ms->reg || ms->srv->opt.home || ms->srv->opt.registry)) r = name; /* NAME in the registry */
        audit_ref = r;
        if (!r) {
            st = INF_ENOENT;
            inf__serve_models_set_err(err, st,
                                      "model '%s' is not in the repository; give its file or registry reference as "
                                      "{\"parameters\": {\"ref\": \"...\"}}%s",
                                      name, "");
            goto refused;
        }
        if (count_slots(ms) >= ms->srv->opt.max_models) {
            st = INF_EBUSY;
            char n_served[16];
            snprintf(n_served, sizeof n_served, "%d", count_slots(ms));
            inf__serve_models_set_err(
                err, st,
                "model '%s': the server already serves %s models, the most --max-models allows; unload "
                "one first",
                name, n_served);
            goto refused;
        }
        pthread_mutex_lock(&ms->lock);
        slot = inf__serve_models_new_slot(ms, name, r);
        if (slot) slot->confined = inf_registry_ref_is_path(r), slot->from_api = 1;
        pthread_mutex_unlock(&ms->lock);
        if (!slot) {
            st = INF_ENOMEM;
            inf__serve_models_set_err(err, st, "model '%s': more than 64 models%s", name, "");
            goto refused;
        }
        created = 1;
        ref = NULL;
    }
    int was_confined = slot->confined;
    if (ref) slot->confined = inf_registry_ref_is_path(ref);
    st = inf__serve_models_reload(ms, slot, ref, 0, err);
    if (st != INF_OK) slot->confined = was_confined;
    if (st != INF_OK && created) {
        pthread_mutex_lock(&ms->lock);
        slot->used = 0;
        pthread_mutex_unlock(&ms->lock);
    }
    inf__serve_models_audit_repository(ms, who, "serve-load", name, audit_ref, st == INF_OK ? "ok" : "failed",
                                       st == INF_OK ? NULL
                                       : err        ? err->message
                                                    : NULL);
    pthread_mutex_unlock(&ms->load_lock);
    return st;
refused:
    inf__serve_models_audit_repository(ms, who, "serve-load", name, audit_ref, "refused", err ? err->message : NULL);
    pthread_mutex_unlock(&ms->load_lock);
    return st;
}

inf_status inf__serve_models_unload(srv_models *ms, const char *name, int who, inf_error *err) {
    pthread_mutex_lock(&ms->load_lock);
    srv_llm *llm = inf__serve_models_find_slot(ms, name) ? NULL : inf__serve_llm_find(ms->srv, name);
    if (llm) { /* a generative model: returns once its generations have finished */
        char ref[1024];
        inf__serve_copy_str(ref, sizeof ref, inf__serve_llm_ref_of(llm));
        inf_status st = inf__serve_llm_remove(ms->srv, name, err);
        inf__serve_models_audit_repository(ms, who, "serve-unload", name, ref, st == INF_OK ? "ok" : "refused",
                                           st == INF_OK ? NULL
                                           : err        ? err->message
                                                        : NULL);
        pthread_mutex_unlock(&ms->load_lock);
        return st;
    }
    pthread_mutex_lock(&ms->lock);
    srv_slot *slot = inf__serve_models_find_slot(ms, name);
    srv_version *old = slot ? slot->current : NULL;
    char ref[1024] = "";
    if (slot) {
        slot->current = NULL;
        snprintf(slot->state, sizeof slot->state, "UNAVAILABLE");
        snprintf(slot->reason, sizeof slot->reason, "unloaded");
        snprintf(ref, sizeof ref, "%s", slot->ref);
        if (slot->from_api) slot->used = 0; /* a name the API added goes with its unload */
    }
    pthread_mutex_unlock(&ms->lock);
    if (!slot) inf__serve_models_set_err(err, INF_ENOENT, "unknown model '%s'%s", name, "");
    inf__serve_models_audit_repository(ms, who, "serve-unload", name, slot ? ref : NULL, slot ? "ok" : "refused",
                                       slot  ? NULL
                                       : err ? err->message
                                             : NULL);
    pthread_mutex_unlock(&ms->load_lock);
    if (!slot) return INF_ENOENT;
    if (old) {
        if (old->metrics) atomic_store(&old->metrics->loaded, 0);
        fprintf(stderr, "infera serve: unloaded model '%s' version %s\n", name, old->version);
        inf__serve_version_release(old);
    }
    return INF_OK;
}

void inf__serve_models_index_json(srv_models *ms, int ready_only, srv_buf *out) {
    inf__serve_buf_put(out, "[", 1);
    int first = 1;
    pthread_mutex_lock(&ms->lock);
    for (int i = 0; i < MAX_SLOTS; i++) {
        srv_slot *s = &ms->slots[i];
        if (!s->used || (ready_only && !s->current)) continue;
        if (!first) inf__serve_buf_put(out, ",", 1);
        first = 0;
        inf__serve_buf_puts(out, "{\"name\":");
        inf__serve_buf_json_str(out, s->name, strlen(s->name));
        if (s->current) {
            inf__serve_buf_puts(out, ",\"version\":");
            inf__serve_buf_json_str(out, s->current->version, strlen(s->current->version));
        }
        inf__serve_buf_puts(out, ",\"state\":");
        inf__serve_buf_json_str(out, s->state, strlen(s->state));
        inf__serve_buf_puts(out, ",\"reason\":");
        inf__serve_buf_json_str(out, s->reason, strlen(s->reason));
        inf__serve_buf_put(out, "}", 1);
    }
    pthread_mutex_unlock(&ms->lock);
    inf__serve_llm_index_json(ms->srv, out, &first); /* generative (GGUF) models */
    inf__serve_buf_put(out, "]", 1);
}

int inf__serve_models_n_loaded(srv_models *ms) {
    int n = 0;
    pthread_mutex_lock(&ms->lock);
    for (int i = 0; i < MAX_SLOTS; i++)
        n += ms->slots[i].used && ms->slots[i].current;
    pthread_mutex_unlock(&ms->lock);
    return n;
}

int inf__serve_models_all_ready(srv_models *ms) {
    int ok = 1;
    pthread_mutex_lock(&ms->lock);
    for (int i = 0; i < MAX_SLOTS; i++)
        if (ms->slots[i].used && !ms->slots[i].current && strcmp(ms->slots[i].reason, "unloaded")) ok = 0;
    pthread_mutex_unlock(&ms->lock);
    return ok;
}

/* The registry model a served name predicts with (grants are per registry
 * model): the name part of its registry reference, else the name itself. */
void inf__serve_models_registry_name(srv_models *ms, const char *served, char *out, size_t size) {
    const char *at0 = strchr(served, '@'); /* NAME@ALIAS (--all-aliases), served or not */
    snprintf(out, size, "%.*s", (int)(at0 ? (size_t)(at0 - served) : strlen(served)), served);
    pthread_mutex_lock(&ms->lock);
    srv_slot *slot = inf__serve_models_find_slot(ms, served);
    if (slot && slot->from_registry) {
        const char *at = strchr(slot->ref, '@');
        snprintf(out, size, "%.*s", (int)(at ? (size_t)(at - slot->ref) : strlen(slot->ref)), slot->ref);
    }
    pthread_mutex_unlock(&ms->lock);
}

/* --all-aliases: one slot "NAME@ALIAS" per alias the server's principal can
 * see; new aliases are loaded, removed ones unloaded (load_lock held).  A
 * failed load of one alias is reported and retried at the next sync. */
inf_status inf__serve_models_sync_aliases(srv_models *ms, int at_start, inf_error *err) {
    inf_status st = inf__serve_models_loader_registry(ms, err);
    if (st != INF_OK) return st;
    char *json = NULL;
    inf_error e = {0};
    if ((st = inf_registry_list_json(ms->reg, &json, &e)) != INF_OK) {
        inf__serve_models_set_err(err, st, "--all-aliases: cannot list the registry: %s%s", e.message, "");
        return st;
    }
    cJSON *root = cJSON_Parse(json);
    inf_registry_string_free(json);
    if (!cJSON_IsArray(root)) {
        cJSON_Delete(root);
        inf__serve_models_set_err(err, INF_EFORMAT, "--all-aliases: the registry listing is not a JSON array%s%s", "",
                                  "");
        return INF_EFORMAT;
    }
    char seen[MAX_SLOTS][260];
    int n_seen = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, root) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(m, "name");
        const cJSON *aliases = cJSON_GetObjectItemCaseSensitive(m, "aliases");
        const cJSON *a;
        if (!cJSON_IsString(name)) continue;
        cJSON_ArrayForEach(a, aliases) {
            char ref[260];
            snprintf(ref, sizeof ref, "%s@%s", name->valuestring, a->string);
            if (n_seen < MAX_SLOTS) snprintf(seen[n_seen++], sizeof seen[0], "%s", ref);
            if (inf__serve_models_find_slot(ms, ref)) continue;
            pthread_mutex_lock(&ms->lock);
            srv_slot *slot = inf__serve_models_new_slot(ms, ref, ref);
            if (slot) slot->auto_alias = 1;
            pthread_mutex_unlock(&ms->lock);
            if (!slot) {
                fprintf(stderr, "infera serve: --all-aliases: more than %d models; %s not served\n", MAX_SLOTS, ref);
                continue;
            }
            inf_error le = {0};
            if (inf__serve_models_reload(ms, slot, NULL, 0, &le) != INF_OK) {
                pthread_mutex_lock(&ms->lock);
                slot->used = 0;
                pthread_mutex_unlock(&ms->lock);
            }
        }
    }
    cJSON_Delete(root);
    /* aliases that are gone */
    for (int i = 0; i < MAX_SLOTS && !at_start; i++) {
        srv_slot *s = &ms->slots[i];
        if (!s->used || !s->auto_alias) continue;
        int keep = 0;
        for (int k = 0; k < n_seen && !keep; k++)
            keep = !strcmp(seen[k], s->name);
        if (keep) continue;
        pthread_mutex_lock(&ms->lock);
        srv_version *old = s->current;
        s->current = NULL;
        s->used = 0;
        pthread_mutex_unlock(&ms->lock);
        fprintf(stderr, "infera serve: alias %s was removed from the registry; no longer served\n", s->name);
        if (old) {
            if (old->metrics) atomic_store(&old->metrics->loaded, 0);
            inf__serve_version_release(old);
        }
    }
    return INF_OK;
}

inf_status inf__serve_models_add_all_aliases(srv_models *ms, inf_error *err) {
    pthread_mutex_lock(&ms->load_lock);
    inf_status st = inf__serve_models_sync_aliases(ms, 1, err);
    pthread_mutex_unlock(&ms->load_lock);
    return st;
}
