/*
 * artifact.c -- model files as the registry stores them, content-addressed
 * under ARTIFACTS/sha256/.
 *
 * A self-contained model (ONNX or XGBoost) is one file, ARTIFACTS/sha256/<hex>,
 * where hex is the SHA-256 of its bytes.  A model whose weights live in
 * external-data files is a folder, ARTIFACTS/sha256/<hex>/, holding the model
 * as model.onnx and each external file under its location (relative to the
 * model, as the model names it).  Its hex digests a manifest: the model
 * file's SHA-256, then each external location and its file's SHA-256, so the
 * same graph with other weights is another artifact.  Loading re-computes the
 * digest and refuses an artifact that does not match.  Both forms are written
 * atomically (a temporary name, then rename).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry/registry_int.h"

#define BUNDLE_MODEL_NAME "model.onnx"

/* mkdir -p */
int inf__reg_make_dirs(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0755) && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(buf, 0755) && errno != EEXIST) return -1;
    return 0;
}

/* Opens external data file `name` of the model in dir: inside dir once
 * symlinks are resolved, a regular file (a symlink to a secret elsewhere is
 * refused, not copied into the store). */
static inf_status open_external(const char *dir, const char *name, FILE **out, inf_error *err) {
    int fd;
    uint64_t size;
    *out = NULL;
    inf_status st = inf_file_open_within(dir, name, "external data file", 0, &fd, &size, err);
    if (st) return st;
    if (!(*out = fdopen(fd, "rb"))) {
        close(fd);
        return inf_error_set(err, INF_EIO, "cannot open external data file %s/%s: %s", dir, name, strerror(errno));
    }
    return INF_OK;
}

/* SHA-256 of an external data file, streamed (it can be gigabytes). */
static inf_status hash_file(const char *dir, const char *name, char hex[65], uint64_t *bytes, inf_error *err) {
    FILE *f;
    inf_status st = open_external(dir, name, &f, err);
    if (st) return st;
    inf_sha256 c;
    inf_sha256_init(&c);
    unsigned char buf[1 << 16];
    size_t got;
    *bytes = 0;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
        inf_sha256_update(&c, buf, got);
        *bytes += got;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) return inf_error_set(err, INF_EIO, "cannot read external data file %s/%s: %s", dir, name, strerror(errno));
    uint8_t digest[32];
    inf_sha256_final(&c, digest);
    inf_sha256_to_hex(digest, hex);
    return INF_OK;
}

/* The manifest digest of a model with external files (see the top). */
static inf_status bundle_digest(inf__artifact *a, inf_error *err) {
    char model_hex[65], file_hex[65];
    inf_sha256_hex(a->data, a->size, model_hex);
    inf_sha256 c;
    inf_sha256_init(&c);
    static const char tag[] = "infera-artifact-v1\n";
    inf_sha256_update(&c, tag, sizeof tag - 1);
    inf_sha256_update(&c, model_hex, 64);
    a->total_bytes = a->size;
    for (int i = 0; i < a->n_files; i++) {
        uint64_t bytes = 0;
        inf_status st = hash_file(a->dir, a->files[i], file_hex, &bytes, err);
        if (st) return st;
        inf_sha256_update(&c, "\n", 1);
        inf_sha256_update(&c, a->files[i], strlen(a->files[i]) + 1); /* with its NUL: names can't run into digests */
        inf_sha256_update(&c, file_hex, 64);
        a->total_bytes += bytes;
    }
    uint8_t digest[32];
    inf_sha256_final(&c, digest);
    inf_sha256_to_hex(digest, a->sha256);
    return INF_OK;
}

static void dir_of(const char *path, char *out, size_t size) {
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(out, size, ".");
    else if (slash == path) snprintf(out, size, "/");
    else snprintf(out, size, "%.*s", (int)(slash - path), path);
}

int inf__artifact_is_gguf(const inf__artifact *a) { return a->size >= 4 && !memcmp(a->data, "GGUF", 4); }

inf_status inf__artifact_read(const char *model_path, inf__artifact *a, inf_error *err) {
    memset(a, 0, sizeof *a);
    void *bytes = NULL; /* the one whole-file reader (core/file.c): a regular file within the model limit */
    inf_status st = inf_file_read(model_path, "model", INF_FILE_MAX_MODEL_BYTES, &bytes, &a->size, err);
    if (st) return st;
    a->data = bytes;
    dir_of(model_path, a->dir, sizeof a->dir);
    inf_error e;
    if (inf__artifact_is_gguf(a)) { /* a GGUF language model is one file */
        inf_sha256_hex(a->data, a->size, a->sha256);
        a->total_bytes = a->size;
        return INF_OK;
    }
    if ((st = inf_model_external_files(a->data, a->size, &a->files, &a->n_files, &e))) {
        inf_error_set(err, st, "model %s does not load: %s", model_path, e.message);
        goto fail;
    }
    for (int i = 0; i < a->n_files; i++)
        if (!strcmp(a->files[i], BUNDLE_MODEL_NAME)) {
            st = inf_error_set(err, INF_EUNSUPPORTED, "model %s: an external data file named '%s' is not supported",
                               model_path, BUNDLE_MODEL_NAME);
            goto fail;
        }
    if (a->n_files == 0) {
        inf_sha256_hex(a->data, a->size, a->sha256);
        a->total_bytes = a->size;
        return INF_OK;
    }
    if ((st = bundle_digest(a, err))) goto fail;
    return INF_OK;
fail:
    inf__artifact_clear(a);
    return st;
}

void inf__artifact_clear(inf__artifact *a) {
    inf_file_free(a->data);
    inf_model_external_files_free(a->files, a->n_files);
    memset(a, 0, sizeof *a);
}

void inf__artifact_path(const char *artifacts, const char *hex, char *path, size_t size) {
    struct stat st;
    snprintf(path, size, "%s/sha256/%s", artifacts, hex);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) snprintf(path, size, "%s/sha256/%s/%s", artifacts, hex, BUNDLE_MODEL_NAME);
}

/* Artifacts are private to the registry's owner: a model or its weights
 * may be confidential (a 0600 secret once became 0644 in the store). */
#define ARTIFACT_FILE_MODE 0600
#define ARTIFACT_DIR_MODE 0700

static FILE *create_private(const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, ARTIFACT_FILE_MODE);
    if (fd < 0) return NULL;
    fchmod(fd, ARTIFACT_FILE_MODE); /* a file left by a crashed writer keeps its old mode otherwise */
    FILE *f = fdopen(fd, "wb");
    if (!f) close(fd);
    return f;
}

/* Writes size bytes to path (mode 0600) and syncs them. */
static bool write_synced(const char *path, const void *data, size_t size) {
    FILE *f = create_private(path);
    if (!f) return false;
    bool ok = fwrite(data, 1, size, f) == size && fflush(f) == 0 && fsync(fileno(f)) == 0;
    return (fclose(f) == 0) && ok;
}

static inf_status copy_file(const char *dir, const char *name, const char *to, inf_error *err) {
    FILE *in;
    inf_status st = open_external(dir, name, &in, err);
    if (st) return st;
    FILE *out = create_private(to);
    bool ok = out != NULL;
    unsigned char buf[1 << 16];
    size_t got;
    while (ok && (got = fread(buf, 1, sizeof buf, in)) > 0) ok = fwrite(buf, 1, got, out) == got;
    ok = ok && !ferror(in) && fflush(out) == 0 && fsync(fileno(out)) == 0;
    int e = errno;
    fclose(in);
    if (out && fclose(out)) ok = false;
    if (!ok) return inf_error_set(err, INF_EIO, "cannot copy external data %s/%s to %s: %s", dir, name, to, strerror(e));
    return INF_OK;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* Fills the temporary folder tmp with the model and its external files. */
static inf_status fill_bundle(const inf__artifact *a, const char *tmp, inf_error *err) {
    char to[8192], parent[8192];
    snprintf(to, sizeof to, "%s/%s", tmp, BUNDLE_MODEL_NAME);
    if (!write_synced(to, a->data, a->size))
        return inf_error_set(err, INF_EIO, "cannot write artifact %s: %s", to, strerror(errno));
    for (int i = 0; i < a->n_files; i++) {
        snprintf(to, sizeof to, "%s/%s", tmp, a->files[i]);
        dir_of(to, parent, sizeof parent);
        if (inf__reg_make_dirs(parent))
            return inf_error_set(err, INF_EIO, "cannot create artifact directory %s: %s", parent, strerror(errno));
        inf_status st = copy_file(a->dir, a->files[i], to, err);
        if (st) return st;
    }
    return INF_OK;
}

/* 1 when the artifact stored under a's digest still has that digest (a
 * damaged copy is replaced by the next registration of the same content). */
static int stored_intact(const char *artifacts, const inf__artifact *a) {
    char path[4300];
    inf__artifact stored;
    inf__artifact_path(artifacts, a->sha256, path, sizeof path);
    if (inf__artifact_read(path, &stored, NULL)) return 0;
    int same = !strcmp(stored.sha256, a->sha256);
    inf__artifact_clear(&stored);
    return same;
}

inf_status inf__artifact_store(const char *artifacts, const inf__artifact *a, char *path, size_t path_size,
                               inf_error *err) {
    char dir[4096], final[4200], tmp[4300], aside[4400];
    snprintf(dir, sizeof dir, "%s/sha256", artifacts);
    snprintf(final, sizeof final, "%s/%s", dir, a->sha256);
    struct stat st;
    bool exists = stat(final, &st) == 0;
    if (exists && (a->n_files ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode)) && stored_intact(artifacts, a)) {
        chmod(final, a->n_files ? ARTIFACT_DIR_MODE : ARTIFACT_FILE_MODE); /* stored 0644 by older versions */
        inf__artifact_path(artifacts, a->sha256, path, path_size);
        return INF_OK;
    }
    if (inf__reg_make_dirs(dir))
        return inf_error_set(err, INF_EIO, "cannot create artifact directory %s: %s", dir, strerror(errno));
    snprintf(tmp, sizeof tmp, "%s/.tmp-%ld-%s", dir, (long)getpid(), a->sha256);
    inf_status rc = INF_OK;
    if (a->n_files == 0) {
        if (!write_synced(tmp, a->data, a->size))
            rc = inf_error_set(err, INF_EIO, "cannot write artifact %s: %s", tmp, strerror(errno));
    } else if (mkdir(tmp, ARTIFACT_DIR_MODE)) {
        rc = inf_error_set(err, INF_EIO, "cannot create artifact directory %s: %s", tmp, strerror(errno));
    } else {
        rc = fill_bundle(a, tmp, err);
    }
    /* a damaged folder is moved aside first: rename() replaces files, not folders */
    aside[0] = '\0';
    if (!rc && exists && S_ISDIR(st.st_mode)) {
        snprintf(aside, sizeof aside, "%s/.damaged-%ld-%s", dir, (long)getpid(), a->sha256);
        if (rename(final, aside)) aside[0] = '\0';
    }
    if (!rc && rename(tmp, final)) {
        /* a concurrent writer may have stored the same content first */
        if (!(a->n_files && (errno == ENOTEMPTY || errno == EEXIST) && stat(final, &st) == 0 && S_ISDIR(st.st_mode)))
            rc = inf_error_set(err, INF_EIO, "cannot write artifact %s: %s", final, strerror(errno));
    }
    if (rc || a->n_files) nftw(tmp, remove_entry, 16, FTW_DEPTH | FTW_PHYS); /* no-op after a rename */
    if (aside[0]) nftw(aside, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (!rc) inf__artifact_path(artifacts, a->sha256, path, path_size);
    return rc;
}

inf_status inf__artifact_load(const char *artifact_path, const char *expect_sha256, const char *what,
                              const inf_model_options *opts, inf_model **model, inf_error *err) {
    *model = NULL;
    inf__artifact a;
    inf_status rc = inf__artifact_read(artifact_path, &a, err);
    if (rc) {
        char msg[INF_ERROR_MESSAGE_MAX];
        snprintf(msg, sizeof msg, "%s", err ? err->message : "");
        return inf_error_set(err, rc, "artifact of %s is missing or unreadable: %s", what, msg);
    }
    if (strcmp(a.sha256, expect_sha256)) {
        rc = inf_error_set(err, INF_EFORMAT, "artifact of %s is corrupt: %s has sha256 %.12s..., expected %.12s...",
                           what, artifact_path, a.sha256, expect_sha256);
    } else {
        inf_error e;
        /* external data is read beside the stored model.onnx */
        rc = a.n_files ? inf_model_load(artifact_path, opts, model, &e)
                       : inf_model_load_buffer(a.data, a.size, NULL, opts, model, &e);
        if (rc) inf_error_set(err, rc, "%s: %s", what, e.message);
    }
    inf__artifact_clear(&a);
    return rc;
}
