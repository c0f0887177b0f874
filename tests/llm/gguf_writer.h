/*
 * gguf_writer.h -- a tiny in-memory GGUF writer for tests: header, keys and
 * tensors appended to a growing buffer, then finished (infos + aligned data).
 * Used to build valid files (and, by cutting or patching them, malformed
 * ones) and random llama-architecture models without any file on disk.
 * Test code only: aborts on out-of-memory.
 */
#ifndef TEST_GGUF_WRITER_H
#define TEST_GGUF_WRITER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gw_buf {
    uint8_t *p;
    size_t n, cap;
} gw_buf;

static inline void gw_put(gw_buf *b, const void *data, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    if (n) memcpy(b->p + b->n, data, n);
    b->n += n;
}
static inline void gw_u32(gw_buf *b, uint32_t v) { gw_put(b, &v, 4); }
static inline void gw_u64(gw_buf *b, uint64_t v) { gw_put(b, &v, 8); }
static inline void gw_str(gw_buf *b, const char *s) {
    gw_u64(b, strlen(s));
    gw_put(b, s, strlen(s));
}

typedef struct gw {
    gw_buf kv, info, data;
    uint64_t n_kv, n_tensors;
    uint32_t alignment;
} gw;

static inline void gw_init(gw *w) {
    memset(w, 0, sizeof *w);
    w->alignment = 32;
}
static inline void gw_key_u32(gw *w, const char *k, uint32_t v) { gw_str(&w->kv, k); gw_u32(&w->kv, 4); gw_u32(&w->kv, v); w->n_kv++; }
static inline void gw_key_i32(gw *w, const char *k, int32_t v) { gw_str(&w->kv, k); gw_u32(&w->kv, 5); gw_put(&w->kv, &v, 4); w->n_kv++; }
static inline void gw_key_f32(gw *w, const char *k, float v) { gw_str(&w->kv, k); gw_u32(&w->kv, 6); gw_put(&w->kv, &v, 4); w->n_kv++; }
static inline void gw_key_bool(gw *w, const char *k, int v) { uint8_t x = (uint8_t)v; gw_str(&w->kv, k); gw_u32(&w->kv, 7); gw_put(&w->kv, &x, 1); w->n_kv++; }
static inline void gw_key_str(gw *w, const char *k, const char *v) { gw_str(&w->kv, k); gw_u32(&w->kv, 8); gw_str(&w->kv, v); w->n_kv++; }
static inline void gw_key_arr_str(gw *w, const char *k, const char *const *v, uint64_t n) {
    gw_str(&w->kv, k); gw_u32(&w->kv, 9); gw_u32(&w->kv, 8); gw_u64(&w->kv, n);
    for (uint64_t i = 0; i < n; i++) gw_str(&w->kv, v[i]);
    w->n_kv++;
}
static inline void gw_key_arr_f32(gw *w, const char *k, const float *v, uint64_t n) {
    gw_str(&w->kv, k); gw_u32(&w->kv, 9); gw_u32(&w->kv, 6); gw_u64(&w->kv, n);
    gw_put(&w->kv, v, n * 4);
    w->n_kv++;
}
static inline void gw_key_arr_i32(gw *w, const char *k, const int32_t *v, uint64_t n) {
    gw_str(&w->kv, k); gw_u32(&w->kv, 9); gw_u32(&w->kv, 5); gw_u64(&w->kv, n);
    gw_put(&w->kv, v, n * 4);
    w->n_kv++;
}
/* A tensor of ggml type `type` with n_dims dims ne[], data of nbytes. */
static inline void gw_tensor(gw *w, const char *name, uint32_t type, uint32_t n_dims, const int64_t *ne, const void *data,
                      size_t nbytes) {
    while (w->data.n % w->alignment) gw_put(&w->data, "", 1);
    gw_str(&w->info, name);
    gw_u32(&w->info, n_dims);
    for (uint32_t d = 0; d < n_dims; d++) gw_u64(&w->info, (uint64_t)ne[d]);
    gw_u32(&w->info, type);
    gw_u64(&w->info, w->data.n);
    gw_put(&w->data, data, nbytes);
    w->n_tensors++;
}
/* The whole file; caller frees *out. */
static inline void gw_finish(gw *w, uint32_t version, uint8_t **out, size_t *size) {
    gw_buf f = {0};
    gw_put(&f, "GGUF", 4);
    gw_u32(&f, version);
    gw_u64(&f, w->n_tensors);
    gw_u64(&f, w->n_kv);
    gw_put(&f, w->kv.p, w->kv.n);
    gw_put(&f, w->info.p, w->info.n);
    while (f.n % w->alignment) gw_put(&f, "", 1);
    gw_put(&f, w->data.p, w->data.n);
    free(w->kv.p), free(w->info.p), free(w->data.p);
    memset(w, 0, sizeof *w);
    *out = f.p;
    *size = f.n;
}
static inline int gw_write_file(const char *path, const uint8_t *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t k = fwrite(p, 1, n, f);
    return fclose(f) == 0 && k == n ? 0 : -1;
}

#endif
