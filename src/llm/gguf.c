/*
 * gguf.c -- the GGUF reader (gguf.h): parse and validate once, read in O(1).
 *
 * Layout of a GGUF file (little-endian):
 *   "GGUF" u32 version  u64 n_tensors  u64 n_kv            (v1, with u32 counts, is refused)
 *   n_kv    x { string key, u32 value_type, value }
 *   n_tensors x { string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset }
 *   padding to `general.alignment` (default 32), then the tensor data section;
 *   each tensor's offset is relative to that section and aligned.
 *   string = u64 length + bytes; array = u32 elem_type, u64 n, n values.
 *
 * Every read goes through a cursor that checks `need <= size - off` (no
 * overflow), and every count is bounded by the bytes left before anything is
 * allocated, so a hostile count cannot make us allocate more than a small
 * multiple of the file size.  Arrays of arrays are refused (llama.cpp refuses
 * them too).  Keys and tensor names must be unique.
 */
#include "llm/gguf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"

/* ---- ggml type table ---- */

typedef struct ggml_type_info {
    const char *name;
    uint32_t block_size; /* elements per block */
    uint32_t type_size;  /* bytes per block */
} ggml_type_info;

static const ggml_type_info ggml_types[] = {
    [INF__GGML_F32] = {"f32", 1, 4},       [INF__GGML_F16] = {"f16", 1, 2},
    [INF__GGML_Q4_0] = {"q4_0", 32, 18},   [INF__GGML_Q4_1] = {"q4_1", 32, 20},
    [INF__GGML_Q5_0] = {"q5_0", 32, 22},   [INF__GGML_Q5_1] = {"q5_1", 32, 24},
    [INF__GGML_Q8_0] = {"q8_0", 32, 34},   [INF__GGML_Q8_1] = {"q8_1", 32, 36},
    [INF__GGML_Q2_K] = {"q2_K", 256, 84},  [INF__GGML_Q3_K] = {"q3_K", 256, 110},
    [INF__GGML_Q4_K] = {"q4_K", 256, 144}, [INF__GGML_Q5_K] = {"q5_K", 256, 176},
    [INF__GGML_Q6_K] = {"q6_K", 256, 210}, [INF__GGML_Q8_K] = {"q8_K", 256, 292},
    [INF__GGML_I8] = {"i8", 1, 1},         [INF__GGML_I16] = {"i16", 1, 2},
    [INF__GGML_I32] = {"i32", 1, 4},       [INF__GGML_I64] = {"i64", 1, 8},
    [INF__GGML_F64] = {"f64", 1, 8},       [INF__GGML_BF16] = {"bf16", 1, 2},
};
#define N_GGML_TYPES (sizeof ggml_types / sizeof ggml_types[0])

const char *inf__ggml_type_name(uint32_t type) { return type < N_GGML_TYPES ? ggml_types[type].name : NULL; }
uint32_t inf__ggml_block_size(uint32_t type) { return type < N_GGML_TYPES ? ggml_types[type].block_size : 0; }
uint32_t inf__ggml_type_size(uint32_t type) { return type < N_GGML_TYPES ? ggml_types[type].type_size : 0; }

/* Size in bytes of one scalar GGUF value; 0 for strings and arrays. */
static const uint8_t gguf_scalar_size[INF__GGUF_TYPE_COUNT] = {
    [INF__GGUF_U8] = 1,  [INF__GGUF_I8] = 1,  [INF__GGUF_U16] = 2, [INF__GGUF_I16] = 2,
    [INF__GGUF_U32] = 4, [INF__GGUF_I32] = 4, [INF__GGUF_F32] = 4, [INF__GGUF_BOOL] = 1,
    [INF__GGUF_U64] = 8, [INF__GGUF_I64] = 8, [INF__GGUF_F64] = 8,
};
static const char *const gguf_type_names[INF__GGUF_TYPE_COUNT] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64",
};

/* ---- the object ---- */

typedef struct gguf_kv {
    const char *key; /* in the map */
    size_t key_len;
    enum inf__gguf_type type;
    enum inf__gguf_type elem_type; /* arrays */
    uint64_t n;                    /* arrays: element count */
    const uint8_t *value;          /* scalars: the value; strings: the bytes; arrays: first element */
    size_t len;                    /* strings: byte length */
    uint64_t *str_offsets;         /* string arrays: offset of each u64 length prefix from value */
} gguf_kv;

struct inf__gguf {
    char *path;
    const uint8_t *base;
    size_t size;
    bool mapped;
    uint32_t version;
    size_t alignment;
    int64_t n_kv;
    gguf_kv *kv;
    uint64_t n_tensors;
    inf__gguf_tensor *tensors;
    char *names; /* NUL-terminated tensor names, one block */
    /* open-addressing hashes: slot -> index + 1, 0 = empty */
    uint32_t key_mask, tensor_mask;
    int64_t *key_slots, *tensor_slots;
};

/* ---- cursor ---- */

typedef struct cursor {
    const uint8_t *p;
    size_t size, off;
} cursor;

static bool cur_take(cursor *c, size_t n, const uint8_t **out) {
    if (n > c->size - c->off) return false;
    *out = c->p + c->off;
    c->off += n;
    return true;
}
static bool cur_u32(cursor *c, uint32_t *v) {
    const uint8_t *q;
    if (!cur_take(c, 4, &q)) return false;
    memcpy(v, q, 4);
    return true;
}
static bool cur_u64(cursor *c, uint64_t *v) {
    const uint8_t *q;
    if (!cur_take(c, 8, &q)) return false;
    memcpy(v, q, 8);
    return true;
}
static bool cur_str(cursor *c, const char **s, size_t *len) {
    uint64_t n;
    const uint8_t *q;
    if (!cur_u64(c, &n) || n > c->size - c->off || !cur_take(c, (size_t)n, &q)) return false;
    *s = (const char *)q;
    *len = (size_t)n;
    return true;
}
static size_t cur_left(const cursor *c) { return c->size - c->off; }

/* ---- hashing ---- */

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h;
}

static inf_status hash_new(uint64_t n, uint32_t *mask, int64_t **slots) {
    uint64_t cap = 16;
    while (cap < 2 * n) cap <<= 1;
    if (cap > ((uint64_t)1 << 31)) return INF_ENOMEM;
    *slots = inf__calloc((size_t)cap, sizeof **slots);
    if (!*slots) return INF_ENOMEM;
    *mask = (uint32_t)(cap - 1);
    return INF_OK;
}

/* ---- errors ---- */

static inf_status fail(inf_error *err, inf_status st, const inf__gguf *g, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inf_status fail(inf_error *err, inf_status st, const inf__gguf *g, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return inf_error_set(err, st, "%s: GGUF: %s", g->path, msg);
}

/* A printable, bounded copy of a key or name from the file for messages. */
static const char *shown(const char *s, size_t n, char *buf, size_t cap) {
    size_t k = 0;
    for (size_t i = 0; i < n && k + 4 < cap; i++) buf[k++] = (s[i] >= 32 && s[i] < 127) ? s[i] : '?';
    if (n > 0 && k < n && k + 4 <= cap) memcpy(buf + k, "...", 3), k += 3;
    buf[k] = 0;
    return buf;
}

/* ---- parsing ---- */

/* Reads a value of type t (not an array) at the cursor into kv. */
static bool read_scalar_or_string(cursor *c, enum inf__gguf_type t, gguf_kv *kv) {
    if (t == INF__GGUF_STRING) {
        const char *s;
        if (!cur_str(c, &s, &kv->len)) return false;
        kv->value = (const uint8_t *)s;
        return true;
    }
    return cur_take(c, gguf_scalar_size[t], &kv->value);
}

static bool valid_type(uint32_t t) { return t < INF__GGUF_TYPE_COUNT; }

static inf_status read_array(inf__gguf *g, cursor *c, gguf_kv *kv, const char *kname, inf_error *err) {
    uint32_t et;
    uint64_t n;
    if (!cur_u32(c, &et) || !cur_u64(c, &n))
        return fail(err, INF_EFORMAT, g, "key '%s': array header truncated", kname);
    if (!valid_type(et))
        return fail(err, INF_EUNSUPPORTED, g, "key '%s': unknown array element type %u", kname, et);
    if (et == INF__GGUF_ARRAY)
        return fail(err, INF_EUNSUPPORTED, g, "key '%s': arrays of arrays are not supported", kname);
    kv->elem_type = (enum inf__gguf_type)et;
    kv->n = n;
    kv->value = c->p + c->off;
    if (et != INF__GGUF_STRING) {
        size_t es = gguf_scalar_size[et];
        if (n > cur_left(c) / es)
            return fail(err, INF_EFORMAT, g, "key '%s': array of %llu %s elements runs past the end of the file",
                        kname, (unsigned long long)n, gguf_type_names[et]);
        c->off += (size_t)n * es;
        return INF_OK;
    }
    if (n > cur_left(c) / 8) /* each string needs at least its 8-byte length */
        return fail(err, INF_EFORMAT, g, "key '%s': array of %llu strings runs past the end of the file", kname,
                    (unsigned long long)n);
    kv->str_offsets = inf__malloc((size_t)(n ? n : 1) * sizeof *kv->str_offsets);
    if (!kv->str_offsets) return fail(err, INF_ENOMEM, g, "key '%s': no memory for a string index", kname);
    size_t start = c->off;
    for (uint64_t i = 0; i < n; i++) {
        const char *s;
        size_t len;
        kv->str_offsets[i] = c->off - start;
        if (!cur_str(c, &s, &len))
            return fail(err, INF_EFORMAT, g, "key '%s': string %llu of %llu truncated", kname,
                        (unsigned long long)i, (unsigned long long)n);
    }
    return INF_OK;
}

static inf_status read_kvs(inf__gguf *g, cursor *c, inf_error *err) {
    char kb[96];
    inf_status st = hash_new((uint64_t)g->n_kv, &g->key_mask, &g->key_slots);
    if (st) return fail(err, st, g, "no memory for %lld keys", (long long)g->n_kv);
    for (int64_t i = 0; i < g->n_kv; i++) {
        gguf_kv *kv = &g->kv[i];
        uint32_t t;
        if (!cur_str(c, &kv->key, &kv->key_len))
            return fail(err, INF_EFORMAT, g, "key %lld of %lld: name truncated", (long long)i, (long long)g->n_kv);
        const char *kname = shown(kv->key, kv->key_len, kb, sizeof kb);
        if (kv->key_len == 0) return fail(err, INF_EFORMAT, g, "key %lld: empty name", (long long)i);
        if (!cur_u32(c, &t)) return fail(err, INF_EFORMAT, g, "key '%s': value type truncated", kname);
        if (!valid_type(t)) return fail(err, INF_EUNSUPPORTED, g, "key '%s': unknown value type %u", kname, t);
        kv->type = (enum inf__gguf_type)t;
        if (t == INF__GGUF_ARRAY) {
            if ((st = read_array(g, c, kv, kname, err))) return st;
        } else if (!read_scalar_or_string(c, kv->type, kv)) {
            return fail(err, INF_EFORMAT, g, "key '%s': %s value truncated", kname, gguf_type_names[t]);
        }
        uint64_t h = hash_bytes(kv->key, kv->key_len);
        for (uint32_t s = (uint32_t)h & g->key_mask;; s = (s + 1) & g->key_mask) {
            int64_t j = g->key_slots[s] - 1;
            if (j < 0) {
                g->key_slots[s] = i + 1;
                break;
            }
            if (g->kv[j].key_len == kv->key_len && !memcmp(g->kv[j].key, kv->key, kv->key_len))
                return fail(err, INF_EFORMAT, g, "key '%s' appears twice", kname);
        }
    }
    return INF_OK;
}

/* The tensor's byte size from its shape and type; false on overflow. */
static bool tensor_nbytes(const inf__gguf_tensor *t, size_t *out) {
    uint32_t bs = inf__ggml_block_size(t->type), ts = inf__ggml_type_size(t->type);
    uint64_t rows = 1;
    for (uint32_t d = 1; d < INF__GGUF_MAX_DIMS; d++) {
        if (t->ne[d] != 0 && rows > (uint64_t)INT64_MAX / (uint64_t)t->ne[d]) return false;
        rows *= (uint64_t)t->ne[d];
    }
    uint64_t row_blocks = (uint64_t)t->ne[0] / bs;
    if (row_blocks > UINT64_MAX / ts) return false;
    uint64_t row_bytes = row_blocks * ts;
    if (row_bytes != 0 && rows > (uint64_t)SIZE_MAX / row_bytes) return false;
    *out = (size_t)(rows * row_bytes);
    return true;
}

static inf_status read_tensor_infos(inf__gguf *g, cursor *c, uint64_t *offsets, inf_error *err) {
    char nb[96];
    size_t names_bytes = 0;
    inf_status st = hash_new(g->n_tensors, &g->tensor_mask, &g->tensor_slots);
    if (st) return fail(err, st, g, "no memory for %llu tensors", (unsigned long long)g->n_tensors);
    /* first pass: the infos, names left in the map (name pointer + length kept in nbytes) */
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        inf__gguf_tensor *t = &g->tensors[i];
        const char *name;
        size_t len;
        uint32_t nd, type;
        if (!cur_str(c, &name, &len))
            return fail(err, INF_EFORMAT, g, "tensor %llu of %llu: name truncated", (unsigned long long)i,
                        (unsigned long long)g->n_tensors);
        const char *tn = shown(name, len, nb, sizeof nb);
        if (len == 0 || memchr(name, 0, len))
            return fail(err, INF_EFORMAT, g, "tensor %llu: empty name or name with a NUL byte", (unsigned long long)i);
        if (!cur_u32(c, &nd)) return fail(err, INF_EFORMAT, g, "tensor '%s': dimension count truncated", tn);
        if (nd == 0 || nd > INF__GGUF_MAX_DIMS)
            return fail(err, INF_EFORMAT, g, "tensor '%s': %u dimensions (1 to %d allowed)", tn, nd,
                        INF__GGUF_MAX_DIMS);
        t->n_dims = nd;
        for (int d = 0; d < INF__GGUF_MAX_DIMS; d++) t->ne[d] = 1;
        for (uint32_t d = 0; d < nd; d++) {
            uint64_t v;
            if (!cur_u64(c, &v)) return fail(err, INF_EFORMAT, g, "tensor '%s': shape truncated", tn);
            if (v > (uint64_t)INT64_MAX)
                return fail(err, INF_EFORMAT, g, "tensor '%s': dimension %u is %llu", tn, d, (unsigned long long)v);
            t->ne[d] = (int64_t)v;
        }
        if (!cur_u32(c, &type) || !cur_u64(c, &offsets[i]))
            return fail(err, INF_EFORMAT, g, "tensor '%s': type or offset truncated", tn);
        if (!inf__ggml_type_name(type))
            return fail(err, INF_EUNSUPPORTED, g, "tensor '%s': unknown ggml type %u", tn, type);
        t->type = type;
        if (t->ne[0] % inf__ggml_block_size(type))
            return fail(err, INF_EFORMAT, g, "tensor '%s': row of %lld elements is not a whole number of %s blocks (%u)",
                        tn, (long long)t->ne[0], inf__ggml_type_name(type), inf__ggml_block_size(type));
        if (!tensor_nbytes(t, &t->nbytes))
            return fail(err, INF_EFORMAT, g, "tensor '%s': size overflows", tn);
        t->name = name; /* in the map for now */
        t->data = (const void *)(uintptr_t)len;
        names_bytes += len + 1; /* len < file size: no overflow */
    }
    g->names = inf__malloc(names_bytes ? names_bytes : 1);
    if (!g->names) return fail(err, INF_ENOMEM, g, "no memory for tensor names");
    size_t off = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        inf__gguf_tensor *t = &g->tensors[i];
        size_t len = (size_t)(uintptr_t)t->data;
        memcpy(g->names + off, t->name, len);
        g->names[off + len] = 0;
        t->name = g->names + off;
        t->data = NULL;
        off += len + 1;
        uint64_t h = hash_bytes(t->name, len);
        for (uint32_t s = (uint32_t)h & g->tensor_mask;; s = (s + 1) & g->tensor_mask) {
            int64_t j = g->tensor_slots[s] - 1;
            if (j < 0) {
                g->tensor_slots[s] = (int64_t)i + 1;
                break;
            }
            if (!strcmp(g->tensors[j].name, t->name))
                return fail(err, INF_EFORMAT, g, "tensor '%s' appears twice", shown(t->name, len, nb, sizeof nb));
        }
    }
    return INF_OK;
}

static inf_status read_alignment(inf__gguf *g, inf_error *err) {
    g->alignment = INF__GGUF_DEFAULT_ALIGNMENT;
    if (inf__gguf_find_key(g, "general.alignment") < 0) return INF_OK;
    uint32_t a;
    inf_status st = inf__gguf_get_u32(g, "general.alignment", &a, err);
    if (st) return st;
    if (a == 0 || (a & (a - 1)))
        return fail(err, INF_EFORMAT, g, "key 'general.alignment': %u is not a power of two", a);
    g->alignment = a;
    return INF_OK;
}

static inf_status place_tensors(inf__gguf *g, size_t info_end, const uint64_t *offsets, inf_error *err) {
    size_t a = g->alignment;
    size_t data_start = info_end % a ? info_end + (a - info_end % a) : info_end;
    if (data_start < info_end) data_start = SIZE_MAX; /* overflow: nothing fits */
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        inf__gguf_tensor *t = &g->tensors[i];
        uint64_t off = offsets[i];
        if (off % a)
            return fail(err, INF_EFORMAT, g, "tensor '%s': offset %llu is not a multiple of the alignment %zu", t->name,
                        (unsigned long long)off, a);
        if (data_start > g->size || off > g->size - data_start || t->nbytes > g->size - data_start - off)
            return fail(err, INF_EFORMAT, g,
                        "tensor '%s': data (%zu bytes at offset %llu) runs past the end of the file (%zu bytes): "
                        "truncated?",
                        t->name, t->nbytes, (unsigned long long)off, g->size);
        t->data = g->base + data_start + off;
    }
    return INF_OK;
}

static inf_status parse(inf__gguf *g, inf_error *err) {
    cursor c = {g->base, g->size, 0};
    const uint8_t *magic;
    uint64_t n_tensors, n_kv;
    if (!cur_take(&c, 4, &magic) || memcmp(magic, "GGUF", 4))
        return fail(err, INF_EFORMAT, g, "not a GGUF file (no 'GGUF' magic)");
    if (!cur_u32(&c, &g->version)) return fail(err, INF_EFORMAT, g, "header truncated");
    if (g->version != 2 && g->version != 3)
        return fail(err, INF_EUNSUPPORTED, g, "version %u (2 and 3 are supported)", g->version);
    if (!cur_u64(&c, &n_tensors) || !cur_u64(&c, &n_kv)) return fail(err, INF_EFORMAT, g, "header truncated");
    /* a key needs >= 12 bytes (length + type) plus its value; a tensor info >= 8+4+8+4+8 */
    if (n_kv > cur_left(&c) / 13)
        return fail(err, INF_EFORMAT, g, "%llu keys cannot fit in a %zu-byte file", (unsigned long long)n_kv, g->size);
    if (n_tensors > cur_left(&c) / 32)
        return fail(err, INF_EFORMAT, g, "%llu tensors cannot fit in a %zu-byte file", (unsigned long long)n_tensors,
                    g->size);
    g->n_kv = (int64_t)n_kv;
    g->n_tensors = n_tensors;
    g->kv = inf__calloc((size_t)(n_kv ? n_kv : 1), sizeof *g->kv);
    g->tensors = inf__calloc((size_t)(n_tensors ? n_tensors : 1), sizeof *g->tensors);
    uint64_t *offsets = inf__malloc((size_t)(n_tensors ? n_tensors : 1) * sizeof *offsets);
    inf_status st = INF_OK;
    if (!g->kv || !g->tensors || !offsets) {
        st = fail(err, INF_ENOMEM, g, "no memory for %llu keys and %llu tensors", (unsigned long long)n_kv,
                  (unsigned long long)n_tensors);
        goto done;
    }
    if ((st = read_kvs(g, &c, err))) goto done;
    if ((st = read_alignment(g, err))) goto done;
    if ((st = read_tensor_infos(g, &c, offsets, err))) goto done;
    st = place_tensors(g, c.off, offsets, err);
done:
    inf__free(offsets);
    return st;
}

/* ---- open / close ---- */

static inf_status gguf_new(const char *name, inf__gguf **out, inf_error *err) {
    inf__gguf *g = inf__calloc(1, sizeof *g);
    if (!g || !(g->path = inf__strdup(name ? name : "<buffer>"))) {
        inf__free(g);
        return inf_error_set(err, INF_ENOMEM, "%s: no memory to open a GGUF file", name ? name : "<buffer>");
    }
    *out = g;
    return INF_OK;
}

inf_status inf__gguf_open_buffer(const void *data, size_t size, const char *name, inf__gguf **out, inf_error *err) {
    *out = NULL;
    inf__gguf *g = NULL;
    inf_status st = gguf_new(name, &g, err);
    if (st) return st;
    g->base = data;
    g->size = data ? size : 0;
    if ((st = parse(g, err))) {
        inf__gguf_close(g);
        return st;
    }
    *out = g;
    return INF_OK;
}

inf_status inf__gguf_open(const char *path, inf__gguf **out, inf_error *err) {
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return inf_error_set(err, INF_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return inf_error_set(err, INF_EIO, "%s: not a regular file", path);
    }
    if (sb.st_size < 24) {
        close(fd);
        return inf_error_set(err, INF_EFORMAT, "%s: GGUF: file of %lld bytes is too short for a header", path,
                          (long long)sb.st_size);
    }
    if ((uint64_t)sb.st_size > SIZE_MAX) {
        close(fd);
        return inf_error_set(err, INF_EIO, "%s: file too large to map", path);
    }
    void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return inf_error_set(err, INF_EIO, "%s: cannot map: %s", path, strerror(errno));
    inf__gguf *g = NULL;
    inf_status st = gguf_new(path, &g, err);
    if (st) {
        munmap(p, (size_t)sb.st_size);
        return st;
    }
    g->base = p;
    g->size = (size_t)sb.st_size;
    g->mapped = true;
    if ((st = parse(g, err))) {
        inf__gguf_close(g);
        return st;
    }
    *out = g;
    return INF_OK;
}

void inf__gguf_close(inf__gguf *g) {
    if (!g) return;
    if (g->kv)
        for (int64_t i = 0; i < g->n_kv; i++) inf__free(g->kv[i].str_offsets);
    inf__free(g->kv);
    inf__free(g->tensors);
    inf__free(g->names);
    inf__free(g->key_slots);
    inf__free(g->tensor_slots);
    if (g->mapped) munmap((void *)g->base, g->size);
    inf__free(g->path);
    inf__free(g);
}

uint32_t inf__gguf_version(const inf__gguf *g) { return g->version; }
size_t inf__gguf_alignment(const inf__gguf *g) { return g->alignment; }
const char *inf__gguf_path(const inf__gguf *g) { return g->path; }

/* ---- keys ---- */

int64_t inf__gguf_n_keys(const inf__gguf *g) { return g->n_kv; }

int64_t inf__gguf_find_key(const inf__gguf *g, const char *key) {
    if (!g->key_slots) return -1;
    size_t n = strlen(key);
    for (uint32_t s = (uint32_t)hash_bytes(key, n) & g->key_mask;; s = (s + 1) & g->key_mask) {
        int64_t j = g->key_slots[s] - 1;
        if (j < 0) return -1;
        if (g->kv[j].key_len == n && !memcmp(g->kv[j].key, key, n)) return j;
    }
}

enum inf__gguf_type inf__gguf_key_type(const inf__gguf *g, int64_t k) { return g->kv[k].type; }

const char *inf__gguf_key_name(const inf__gguf *g, int64_t k, size_t *len) {
    *len = g->kv[k].key_len;
    return g->kv[k].key;
}

static inf_status lookup(const inf__gguf *g, const char *key, const gguf_kv **kv, inf_error *err) {
    int64_t k = inf__gguf_find_key(g, key);
    if (k < 0) return inf_error_set(err, INF_ENOENT, "%s: GGUF: key '%s' is missing", g->path, key);
    *kv = &g->kv[k];
    return INF_OK;
}

static inf_status wrong_type(const inf__gguf *g, const char *key, const gguf_kv *kv, const char *want, inf_error *err) {
    return inf_error_set(err, INF_ETYPE, "%s: GGUF: key '%s' is %s%s%s, expected %s", g->path, key,
                      gguf_type_names[kv->type], kv->type == INF__GGUF_ARRAY ? " of " : "",
                      kv->type == INF__GGUF_ARRAY ? gguf_type_names[kv->elem_type] : "", want);
}

/* An integer value as int64/uint64; false for non-integer types. */
static bool int_value(const gguf_kv *kv, bool *negative, uint64_t *mag) {
    const uint8_t *v = kv->value;
    int64_t s;
    *negative = false;
    switch (kv->type) {
    case INF__GGUF_U8: *mag = v[0]; return true;
    case INF__GGUF_U16: { uint16_t x; memcpy(&x, v, 2); *mag = x; return true; }
    case INF__GGUF_U32: { uint32_t x; memcpy(&x, v, 4); *mag = x; return true; }
    case INF__GGUF_U64: memcpy(mag, v, 8); return true;
    case INF__GGUF_I8: s = (int8_t)v[0]; break;
    case INF__GGUF_I16: { int16_t x; memcpy(&x, v, 2); s = x; break; }
    case INF__GGUF_I32: { int32_t x; memcpy(&x, v, 4); s = x; break; }
    case INF__GGUF_I64: memcpy(&s, v, 8); break;
    default: return false;
    }
    *negative = s < 0;
    *mag = s < 0 ? (uint64_t)0 - (uint64_t)s : (uint64_t)s;
    return true;
}

inf_status inf__gguf_get_u32(const inf__gguf *g, const char *key, uint32_t *out, inf_error *err) {
    const gguf_kv *kv = NULL;
    bool neg;
    uint64_t m;
    inf_status st = lookup(g, key, &kv, err);
    if (st) return st;
    if (!int_value(kv, &neg, &m)) return wrong_type(g, key, kv, "an integer", err);
    if (neg || m > UINT32_MAX)
        return inf_error_set(err, INF_ERANGE, "%s: GGUF: key '%s' = %s%llu does not fit in 32 bits unsigned", g->path, key,
                          neg ? "-" : "", (unsigned long long)m);
    *out = (uint32_t)m;
    return INF_OK;
}

inf_status inf__gguf_get_i64(const inf__gguf *g, const char *key, int64_t *out, inf_error *err) {
    const gguf_kv *kv = NULL;
    bool neg;
    uint64_t m;
    inf_status st = lookup(g, key, &kv, err);
    if (st) return st;
    if (!int_value(kv, &neg, &m)) return wrong_type(g, key, kv, "an integer", err);
    if (!neg && m > (uint64_t)INT64_MAX)
        return inf_error_set(err, INF_ERANGE, "%s: GGUF: key '%s' = %llu does not fit in 64 bits signed", g->path, key,
                          (unsigned long long)m);
    *out = neg ? (int64_t)(0 - m) : (int64_t)m;
    return INF_OK;
}

inf_status inf__gguf_get_f32(const inf__gguf *g, const char *key, float *out, inf_error *err) {
    const gguf_kv *kv = NULL;
    inf_status st = lookup(g, key, &kv, err);
    if (st) return st;
    if (kv->type == INF__GGUF_F32) {
        memcpy(out, kv->value, 4);
    } else if (kv->type == INF__GGUF_F64) {
        double d;
        memcpy(&d, kv->value, 8);
        *out = (float)d;
    } else {
        return wrong_type(g, key, kv, "f32", err);
    }
    return INF_OK;
}

inf_status inf__gguf_get_bool(const inf__gguf *g, const char *key, bool *out, inf_error *err) {
    const gguf_kv *kv = NULL;
    inf_status st = lookup(g, key, &kv, err);
    if (st) return st;
    if (kv->type != INF__GGUF_BOOL) return wrong_type(g, key, kv, "bool", err);
    *out = kv->value[0] != 0;
    return INF_OK;
}

inf_status inf__gguf_get_str(const inf__gguf *g, const char *key, const char **s, size_t *len, inf_error *err) {
    const gguf_kv *kv = NULL;
    inf_status st = lookup(g, key, &kv, err);
    if (st) return st;
    if (kv->type != INF__GGUF_STRING) return wrong_type(g, key, kv, "string", err);
    *s = (const char *)kv->value;
    *len = kv->len;
    return INF_OK;
}

inf_status inf__gguf_get_arr(const inf__gguf *g, const char *key, enum inf__gguf_type *elem_type, uint64_t *n,
                             const void **data, inf_error *err) {
    const gguf_kv *kv = NULL;
    inf_status st = lookup(g, key, &kv, err);
    if (st) return st;
    if (kv->type != INF__GGUF_ARRAY) return wrong_type(g, key, kv, "an array", err);
    *elem_type = kv->elem_type;
    *n = kv->n;
    *data = kv->elem_type == INF__GGUF_STRING ? NULL : kv->value;
    return INF_OK;
}

inf_status inf__gguf_arr_str(const inf__gguf *g, const char *key, uint64_t i, const char **s, size_t *len,
                             inf_error *err) {
    const gguf_kv *kv = NULL;
    inf_status st = lookup(g, key, &kv, err);
    if (st) return st;
    if (kv->type != INF__GGUF_ARRAY || kv->elem_type != INF__GGUF_STRING)
        return wrong_type(g, key, kv, "an array of strings", err);
    if (i >= kv->n)
        return inf_error_set(err, INF_ERANGE, "%s: GGUF: key '%s': index %llu past the %llu strings", g->path, key,
                          (unsigned long long)i, (unsigned long long)kv->n);
    const uint8_t *p = kv->value + kv->str_offsets[i];
    uint64_t n;
    memcpy(&n, p, 8);
    *s = (const char *)p + 8;
    *len = (size_t)n;
    return INF_OK;
}

/* ---- tensors ---- */

const inf__gguf_tensor *inf__gguf_find_tensor(const inf__gguf *g, const char *name) {
    if (!g->tensor_slots) return NULL;
    size_t n = strlen(name);
    for (uint32_t s = (uint32_t)hash_bytes(name, n) & g->tensor_mask;; s = (s + 1) & g->tensor_mask) {
        int64_t j = g->tensor_slots[s] - 1;
        if (j < 0) return NULL;
        if (!strcmp(g->tensors[j].name, name)) return &g->tensors[j];
    }
}

uint64_t inf__gguf_n_tensors(const inf__gguf *g) { return g->n_tensors; }
const inf__gguf_tensor *inf__gguf_tensor_at(const inf__gguf *g, uint64_t i) {
    return i < g->n_tensors ? &g->tensors[i] : NULL;
}
