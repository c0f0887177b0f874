/*
 * baseline_store.c -- baselines kept with registry versions (baseline_store.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "monitor/baseline_store.h"

const char *inf__mon_home(const char *home) {
    if (home && *home) return home;
    const char *env = getenv("INFERA_HOME");
    return env && *env ? env : "./infera-data";
}

static int safe_name(const char *name) {
    return name && *name && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, "..") && strlen(name) < 200;
}

static inf_status mkdir_p(char *path, inf_error *err) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        int bad = mkdir(path, 0755) && errno != EEXIST;
        *p = '/';
        if (bad) return inf_error_set(err, INF_EIO, "baseline store: cannot create %s: %s", path, strerror(errno));
    }
    if (mkdir(path, 0755) && errno != EEXIST)
        return inf_error_set(err, INF_EIO, "baseline store: cannot create %s: %s", path, strerror(errno));
    return INF_OK;
}

inf_status inf__mon_baseline_store(inf_registry *r, const char *home, const char *name, int64_t version,
                                   const char *json, int64_t rows, inf_error *err) {
    if (!safe_name(name)) return inf_error_set(err, INF_EINVAL, "baseline store: model name '%s' cannot be stored", name);
    inf_status st = inf_registry_check(r, name, INF_REGISTRY_PUBLISH, "monitor-baseline", err);
    if (st) return st;
    char dir[4096], path[4200], tmp[4300];
    snprintf(dir, sizeof dir, "%s/baselines/%s", inf__mon_home(home), name);
    if ((st = mkdir_p(dir, err))) return st;
    snprintf(path, sizeof path, "%s/%lld.json", dir, (long long)version);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return inf_error_set(err, INF_EIO, "baseline store: cannot write %s: %s", tmp, strerror(errno));
    size_t n = strlen(json);
    int bad = fwrite(json, 1, n, f) != n;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path)) {
        unlink(tmp);
        return inf_error_set(err, INF_EIO, "baseline store: cannot write %s", path);
    }
    char hex[65];
    inf_sha256_hex(json, n, hex);
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "sha256", hex);
    cJSON_AddNumberToObject(d, "rows", (double)rows);
    cJSON_AddStringToObject(d, "path", path);
    char *text = cJSON_PrintUnformatted(d);
    cJSON_Delete(d);
    st = text ? inf_registry_audit_event(r, "monitor-baseline", name, version, "ok", text, err)
              : inf_error_set(err, INF_ENOMEM, "baseline store: out of memory");
    free(text);
    return st;
}

inf_status inf__mon_baseline_find(const char *home, const char *name, int64_t version, inf__mon_profile **out,
                                  inf_error *err) {
    *out = NULL;
    if (!safe_name(name)) return inf_error_set(err, INF_ENOENT, "no stored baseline for '%s'", name);
    char path[4200];
    snprintf(path, sizeof path, "%s/baselines/%s/%lld.json", inf__mon_home(home), name, (long long)version);
    if (access(path, R_OK))
        return inf_error_set(err, INF_ENOENT, "no baseline stored with %s@%lld (looked for %s; `infera monitor baseline "
                             "%s@%lld --data SRC --register` stores one)", name, (long long)version, path, name,
                             (long long)version);
    return inf__mon_profile_load(path, out, err);
}
