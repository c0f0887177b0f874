/*
 * llm_ref.c -- a GGUF language model reference (a file, or NAME / NAME@VERSION
 * / NAME@ALIAS in the registry) turned into the path of the file to map.
 * Used by `infera generate`, the SQL functions and (for the path only) serve.
 * A registry version's artifact is checked against its SHA-256 like an ONNX
 * model's before it is used.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "infera/registry.h"
#include "registry/llm_ref.h"

/* The SHA-256 of the file at path, streamed. */
static int file_sha256(const char *path, char hex[65]) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    inf_sha256 c;
    inf_sha256_init(&c);
    static _Thread_local unsigned char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) inf_sha256_update(&c, buf, n);
    int bad = ferror(f);
    fclose(f);
    uint8_t d[32];
    inf_sha256_final(&c, d);
    inf_sha256_to_hex(d, hex);
    return bad ? -1 : 0;
}

inf_status inf__llm_ref_resolve(const char *ref, char *path, size_t size, inf_error *err) {
    return inf__llm_ref_resolve_at(ref, NULL, NULL, path, size, err);
}

/* true when the file at path starts with the GGUF magic */
static bool file_is_gguf(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    char magic[4];
    bool yes = fread(magic, 1, 4, f) == 4 && !memcmp(magic, "GGUF", 4);
    fclose(f);
    return yes;
}

/* A registry reference -> its artifact's path, SHA-256 checked.  gguf_only: an
 * artifact that is not a GGUF file is neither hashed nor returned (*is_gguf false). */
static inf_status resolve_registry(const char *ref, const char *home, const char *registry_url, bool gguf_only,
                                   bool *is_gguf, char *path, size_t size, inf_error *err) {
    inf_registry_options o;
    inf_registry_options_from_env(&o);
    if (home) o.home = home;
    if (registry_url) o.url = registry_url;
    inf_registry *r = NULL;
    inf_status st = inf_registry_open(&o, &r, err);
    if (st != INF_OK) return st;
    inf_registry_resolved v;
    memset(&v, 0, sizeof v);
    st = inf_registry_resolve(r, ref, &v, err);
    inf_registry_free(r);
    if (st != INF_OK) return st;
    *is_gguf = file_is_gguf(v.artifact_path);
    char hex[65];
    if (gguf_only && !*is_gguf)
        ; /* not a language model: the caller reads it its own way */
    else if (file_sha256(v.artifact_path, hex))
        st = inf_error_set(err, INF_EIO, "%s: cannot read the artifact %s", ref, v.artifact_path);
    else if (strcmp(hex, v.sha256))
        st = inf_error_set(err, INF_EFORMAT, "%s: the artifact %s does not match its SHA-256 %.16s... (damaged)", ref,
                           v.artifact_path, v.sha256);
    else
        snprintf(path, size, "%s", v.artifact_path);
    inf_registry_resolved_clear(&v);
    return st;
}

inf_status inf__llm_ref_resolve_at(const char *ref, const char *home, const char *registry_url, char *path,
                                   size_t size, inf_error *err) {
    size_t n = strlen(ref);
    if (inf_registry_ref_is_path(ref) || (n > 5 && !strcasecmp(ref + n - 5, ".gguf"))) {
        snprintf(path, size, "%s", ref);
        return INF_OK;
    }
    bool is_gguf;
    return resolve_registry(ref, home, registry_url, false, &is_gguf, path, size, err);
}

bool inf__llm_ref_names_gguf(const char *ref, char *path, size_t size) {
    struct stat sb;
    if (stat(ref, &sb) == 0) { /* a file: its magic decides */
        snprintf(path, size, "%s", ref);
        return S_ISREG(sb.st_mode) && file_is_gguf(ref);
    }
    if (inf_registry_ref_is_path(ref)) return false;
    inf_error err;
    bool is_gguf = false;
    return resolve_registry(ref, NULL, NULL, true, &is_gguf, path, size, &err) == INF_OK && is_gguf;
}
