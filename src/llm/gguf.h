/*
 * gguf.h -- a reader of GGUF files (the llama.cpp model format, v2 and v3).
 *
 * DESIGN: the file is mapped read-only; inf__gguf_open walks the header, the
 * key/value pairs and the tensor infos once, checks every count, length and
 * offset against the file size (overflow-safe), and builds small indexes
 * (a hash of keys and tensor names, the offsets of each string of a string
 * array) so that every getter afterwards is O(1) and cannot read outside
 * the map.  Nothing in the file is trusted: a malformed or truncated file is
 * refused with an error naming the file, the key or tensor, what and why.
 * Values stay in the map (strings are borrowed and not NUL-terminated;
 * numeric arrays may be unaligned: read them with memcpy).  Tensor names are
 * copied once, NUL-terminated, so inf__gguf_tensor.name is a C string.
 *
 * Callers: the LLM model loader (model.c) and the tokenizer (tokenizer*.c).
 * A gguf object is immutable after open and may be read from many threads.
 */
#ifndef INF_LLM_GGUF_H
#define INF_LLM_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "infera/infera.h"

typedef struct inf__gguf inf__gguf;

/* GGUF value type ids (gguf.md), prefixed. */
enum inf__gguf_type {
    INF__GGUF_U8 = 0,
    INF__GGUF_I8 = 1,
    INF__GGUF_U16 = 2,
    INF__GGUF_I16 = 3,
    INF__GGUF_U32 = 4,
    INF__GGUF_I32 = 5,
    INF__GGUF_F32 = 6,
    INF__GGUF_BOOL = 7,
    INF__GGUF_STRING = 8,
    INF__GGUF_ARRAY = 9,
    INF__GGUF_U64 = 10,
    INF__GGUF_I64 = 11,
    INF__GGUF_F64 = 12,
    INF__GGUF_TYPE_COUNT
};

/* ggml tensor type ids the reader knows the block layout of. */
enum inf__ggml_type {
    INF__GGML_F32 = 0,
    INF__GGML_F16 = 1,
    INF__GGML_Q4_0 = 2,
    INF__GGML_Q4_1 = 3,
    INF__GGML_Q5_0 = 6,
    INF__GGML_Q5_1 = 7,
    INF__GGML_Q8_0 = 8,
    INF__GGML_Q8_1 = 9,
    INF__GGML_Q2_K = 10,
    INF__GGML_Q3_K = 11,
    INF__GGML_Q4_K = 12,
    INF__GGML_Q5_K = 13,
    INF__GGML_Q6_K = 14,
    INF__GGML_Q8_K = 15,
    INF__GGML_I8 = 24,
    INF__GGML_I16 = 25,
    INF__GGML_I32 = 26,
    INF__GGML_I64 = 27,
    INF__GGML_F64 = 28,
    INF__GGML_BF16 = 30,
};

#define INF__GGUF_MAX_DIMS 4
#define INF__GGUF_DEFAULT_ALIGNMENT 32

/* Opens and validates path (mmap).  *out owned by the caller (inf__gguf_close).
 * Errors: INF_EIO (cannot open/map), INF_EFORMAT (malformed, truncated),
 * INF_EUNSUPPORTED (version, value type or tensor type unknown). */
inf_status inf__gguf_open(const char *path, inf__gguf **out, inf_error *err);
/* The same over a caller-owned buffer that must outlive the object (fuzzer,
 * tests); name is used in messages.  The buffer is not copied. */
inf_status inf__gguf_open_buffer(const void *data, size_t size, const char *name, inf__gguf **out,
                                 inf_error *err);
void inf__gguf_close(inf__gguf *g); /* NULL ok */

uint32_t inf__gguf_version(const inf__gguf *g);
size_t inf__gguf_alignment(const inf__gguf *g);
const char *inf__gguf_path(const inf__gguf *g);

/* ---- key/value pairs ---- */
int64_t inf__gguf_n_keys(const inf__gguf *g);
int64_t inf__gguf_find_key(const inf__gguf *g, const char *key); /* index or -1 */
enum inf__gguf_type inf__gguf_key_type(const inf__gguf *g, int64_t k);
/* The k-th key (borrowed, not NUL-terminated). */
const char *inf__gguf_key_name(const inf__gguf *g, int64_t k, size_t *len);

/* Typed getters: INF_OK, or INF_ENOENT / INF_ETYPE naming the key. */
/* Any integer type whose value fits in a uint32_t. */
inf_status inf__gguf_get_u32(const inf__gguf *g, const char *key, uint32_t *out, inf_error *err);
/* Any integer type whose value fits in an int64_t. */
inf_status inf__gguf_get_i64(const inf__gguf *g, const char *key, int64_t *out, inf_error *err);
/* F32 or F64 (converted). */
inf_status inf__gguf_get_f32(const inf__gguf *g, const char *key, float *out, inf_error *err);
inf_status inf__gguf_get_bool(const inf__gguf *g, const char *key, bool *out, inf_error *err);
/* Borrowed, not NUL-terminated. */
inf_status inf__gguf_get_str(const inf__gguf *g, const char *key, const char **s, size_t *len,
                             inf_error *err);

/* Arrays.  For numeric/bool arrays *data points at the first element in the
 * map (may be unaligned: memcpy).  For string arrays *data is NULL: use
 * inf__gguf_arr_str. */
inf_status inf__gguf_get_arr(const inf__gguf *g, const char *key, enum inf__gguf_type *elem_type,
                             uint64_t *n, const void **data, inf_error *err);
/* i-th string of a string array (O(1): index built at open). */
inf_status inf__gguf_arr_str(const inf__gguf *g, const char *key, uint64_t i, const char **s,
                             size_t *len, inf_error *err);

/* ---- tensors ---- */
typedef struct {
    const char *name;  /* NUL-terminated, owned by g */
    uint32_t type;     /* ggml type id (enum inf__ggml_type) */
    uint32_t n_dims;
    int64_t ne[INF__GGUF_MAX_DIMS]; /* ne[0] is the contiguous dimension; unused dims are 1 */
    const void *data;  /* in the map, aligned to the file's alignment */
    size_t nbytes;
} inf__gguf_tensor;

const inf__gguf_tensor *inf__gguf_find_tensor(const inf__gguf *g, const char *name); /* NULL if absent */
uint64_t inf__gguf_n_tensors(const inf__gguf *g);
const inf__gguf_tensor *inf__gguf_tensor_at(const inf__gguf *g, uint64_t i);

/* ggml type facts: name ("q4_0"), elements per block, bytes per block.
 * Unknown types: NULL name, 0 sizes. */
const char *inf__ggml_type_name(uint32_t type);
uint32_t inf__ggml_block_size(uint32_t type);
uint32_t inf__ggml_type_size(uint32_t type);

#endif /* INF_LLM_GGUF_H */
