/*
 * quality_store.c -- the quality history of model versions (quality_store.h).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "infera/io.h"
#include "monitor/baseline_store.h"
#include "monitor/quality_store.h"

#define MAX_DOC_BYTES (64u << 20)

static int safe_name(const char *s) { return s && *s && !strchr(s, '/') && s[0] != '.' && strlen(s) < 200; }

static inf_status make_dir(const char *path, inf_error *err) {
    if (mkdir(path, 0755) && errno != EEXIST)
        return inf_error_set(err, INF_EIO, "quality store: cannot create %s: %s", path, strerror(errno));
    return INF_OK;
}

static cJSON *read_doc(const char *path, inf_status *st, inf_error *err) {
    void *data = NULL;
    size_t size = 0;
    *st = inf_file_read(path, "quality history", MAX_DOC_BYTES, &data, &size, err);
    if (*st) return NULL;
    cJSON *j = cJSON_ParseWithLength(data, size);
    inf_file_free(data);
    if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "windows"))) {
        cJSON_Delete(j);
        *st = inf_error_set(err, INF_EFORMAT, "quality store: %s is not a quality history", path);
        return NULL;
    }
    return j;
}

static const char *start_of(const cJSON *w) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(w, "start");
    return cJSON_IsString(s) ? s->valuestring : "";
}

static int cmp_start(const void *a, const void *b) {
    return strcmp(start_of(*(const cJSON *const *)a), start_of(*(const cJSON *const *)b));
}

/* doc's windows plus old's windows of starts doc does not have, sorted by
 * start (ISO-8601 UTC text of one format: its order is time order). */
static cJSON *merged(const cJSON *doc, const cJSON *old) {
    cJSON *out = cJSON_Duplicate(doc, 1);
    cJSON *win = cJSON_GetObjectItemCaseSensitive(out, "windows");
    if (!cJSON_IsArray(win)) {
        cJSON_Delete(out);
        return NULL;
    }
    const cJSON *ow, *nw;
    cJSON_ArrayForEach(ow, cJSON_GetObjectItemCaseSensitive(old, "windows")) {
        int dup = 0;
        cJSON_ArrayForEach(nw, cJSON_GetObjectItemCaseSensitive(doc, "windows")) dup |=
            !strcmp(start_of(ow), start_of(nw));
        if (!dup) cJSON_AddItemToArray(win, cJSON_Duplicate(ow, 1));
    }
    int n = cJSON_GetArraySize(win);
    cJSON **items = malloc((size_t)(n ? n : 1) * sizeof *items);
    if (!items) {
        cJSON_Delete(out);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        items[i] = cJSON_DetachItemFromArray(win, 0);
    qsort(items, (size_t)n, sizeof *items, cmp_start);
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(win, items[i]);
    free(items);
    return out;
}

inf_status inf__mon_quality_store(const char *home, const char *name, const char *version, const cJSON *doc,
                                  inf_error *err) {
    if (!safe_name(name) || !safe_name(version))
        return inf_error_set(err, INF_EINVAL, "quality store: '%s' version '%s' cannot be stored", name, version);
    char dir[4096], path[4400], tmp[4500];
    snprintf(dir, sizeof dir, "%s/quality", inf__mon_home(home));
    inf_status st = make_dir(inf__mon_home(home), err);
    if (!st) st = make_dir(dir, err);
    snprintf(dir, sizeof dir, "%s/quality/%s", inf__mon_home(home), name);
    if (!st) st = make_dir(dir, err);
    if (st) return st;
    snprintf(path, sizeof path, "%s/%s.json", dir, version);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    inf_error ignored;
    cJSON *old = access(path, R_OK) ? NULL : read_doc(path, &st, &ignored); /* an unreadable old file is replaced */
    cJSON *all = merged(doc, old);
    cJSON_Delete(old);
    char *text = all ? cJSON_PrintUnformatted(all) : NULL;
    cJSON_Delete(all);
    if (!text) return inf_error_set(err, INF_ENOMEM, "quality store: out of memory");
    FILE *f = fopen(tmp, "w");
    int bad = !f;
    if (f) {
        size_t n = strlen(text);
        bad = fwrite(text, 1, n, f) != n;
        bad |= fclose(f) != 0;
    }
    free(text);
    if (bad || rename(tmp, path)) {
        unlink(tmp);
        return inf_error_set(err, INF_EIO, "quality store: cannot write %s", path);
    }
    return INF_OK;
}

inf_status inf__mon_quality_find(const char *home, const char *name, const char *version, cJSON **out, inf_error *err) {
    *out = NULL;
    if (!safe_name(name) || !safe_name(version))
        return inf_error_set(err, INF_ENOENT, "no quality history for '%s' version '%s'", name, version);
    char path[4400];
    snprintf(path, sizeof path, "%s/quality/%s/%s.json", inf__mon_home(home), name, version);
    if (access(path, R_OK))
        return inf_error_set(err, INF_ENOENT, "no quality history for %s version %s (looked for %s)", name, version,
                             path);
    inf_status st;
    *out = read_doc(path, &st, err);
    return st;
}

static int cmp_entry(const void *a, const void *b) {
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    char *ex, *ey;
    long long vx = strtoll(x, &ex, 10), vy = strtoll(y, &ey, 10);
    if (ex != x && ey != y && *ex == '.' && *ey == '.' && vx != vy) return vx < vy ? -1 : 1; /* "2.json" < "10.json" */
    return strcmp(x, y);
}

/* The entries of dir (files ending in ".json" when json, else directories), sorted. */
static char **entries(const char *dir, int json, int *n) {
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    char **v = NULL;
    int cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || (json ? len < 6 || strcmp(e->d_name + len - 5, ".json") : e->d_type == DT_REG))
            continue;
        if (*n == cap) {
            char **nv = realloc(v, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *v);
            if (!nv) break;
            v = nv;
        }
        if (!(v[*n] = strdup(e->d_name))) break;
        (*n)++;
    }
    closedir(d);
    if (v) qsort(v, (size_t)*n, sizeof *v, cmp_entry);
    return v;
}

inf_status inf__mon_quality_list(const char *home, const char *name, cJSON **out, inf_error *err) {
    char dir[4400];
    *out = cJSON_CreateArray();
    if (!*out) return inf_error_set(err, INF_ENOMEM, "quality store: out of memory");
    if (name && !safe_name(name)) return INF_OK;
    if (name)
        snprintf(dir, sizeof dir, "%s/quality/%s", inf__mon_home(home), name);
    else
        snprintf(dir, sizeof dir, "%s/quality", inf__mon_home(home));
    int n;
    char **v = entries(dir, name != NULL, &n);
    for (int i = 0; i < n; i++) {
        if (!name)
            cJSON_AddItemToArray(*out, cJSON_CreateString(v[i]));
        else {
            char path[4700];
            inf_status st;
            inf_error ignored;
            snprintf(path, sizeof path, "%s/%s", dir, v[i]);
            cJSON *doc = read_doc(path, &st, &ignored);
            if (doc) cJSON_AddItemToArray(*out, doc);
        }
        free(v[i]);
    }
    free(v);
    return INF_OK;
}
