/*
 * tensor.h -- the values that flow through a model: tensors, sequences, maps
 * and empty optionals, plus their element types.
 *
 * An inf_tensor is a small descriptor (element type, shape, data pointer).
 * Its data is either owned (INF_TENSOR_OWNS_DATA: freed with the tensor) or
 * borrowed (the caller keeps it alive).  Data is dense, row-major, C order.
 * String elements are stored as an array of NUL-terminated char *, each owned
 * by the tensor when it owns its data.
 *
 * The same struct carries the non-tensor values of ONNX so that kernels and
 * runners handle one type:
 *   INF_KIND_SEQUENCE  items[0..n_items) are the elements (owned);
 *   INF_KIND_MAP       items[0] holds the keys, items[1] the values (1-D);
 *   INF_KIND_NONE      an empty optional.
 */
#ifndef INFERA_TENSOR_H
#define INFERA_TENSOR_H

#include "infera/infera.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Element types.  The numbers are ONNX's TensorProto.DataType, so models and
 * .pb files map without a table.  XX(NAME, onnx_id, size_in_bytes, "name") */
#define INF_DTYPE_MAP(XX)                     \
    XX(UNDEFINED, 0, 0, "undefined")          \
    XX(F32, 1, 4, "float32")                  \
    XX(U8, 2, 1, "uint8")                     \
    XX(I8, 3, 1, "int8")                      \
    XX(U16, 4, 2, "uint16")                   \
    XX(I16, 5, 2, "int16")                    \
    XX(I32, 6, 4, "int32")                    \
    XX(I64, 7, 8, "int64")                    \
    XX(STRING, 8, sizeof(char *), "string")   \
    XX(BOOL, 9, 1, "bool")                    \
    XX(F16, 10, 2, "float16")                 \
    XX(F64, 11, 8, "float64")                 \
    XX(U32, 12, 4, "uint32")                  \
    XX(U64, 13, 8, "uint64")                  \
    XX(C64, 14, 8, "complex64")               \
    XX(C128, 15, 16, "complex128")            \
    XX(BF16, 16, 2, "bfloat16")

typedef enum inf_dtype {
#define INF_DTYPE_ENUM(name, id, size, str) INF_DTYPE_##name = id,
    INF_DTYPE_MAP(INF_DTYPE_ENUM)
#undef INF_DTYPE_ENUM
    INF_DTYPE_COUNT
} inf_dtype;

/* Size of one element in bytes (0 for UNDEFINED or an unknown id). */
INF_API size_t inf_dtype_size(inf_dtype dtype);
/* NumPy-style name ("float32"); "invalid" for an unknown id. */
INF_API const char *inf_dtype_name(inf_dtype dtype);
/* Parses a name as printed by inf_dtype_name, also accepting ONNX/KServe
 * spellings ("FP32", "INT64", "BYTES", "float", "double"); UNDEFINED if unknown. */
INF_API inf_dtype inf_dtype_from_name(const char *name);
/* The KServe V2 datatype name ("FP32", "INT64", "BYTES", "BOOL", ...), or
 * NULL for a dtype KServe has no name for.  The one table of these names
 * (src/core/tensor.c), used by inf_dtype_from_name and by `infera serve`. */
INF_API const char *inf_dtype_kserve_name(inf_dtype dtype);
/* The dtype of the KServe V2 datatype name in the n bytes at s (exact,
 * case-sensitive, as the protocol spells it); UNDEFINED if unknown. */
INF_API inf_dtype inf_dtype_from_kserve_name(const char *s, size_t n);

typedef enum inf_value_kind {
    INF_KIND_TENSOR = 0,
    INF_KIND_SEQUENCE = 1,
    INF_KIND_MAP = 2,
    INF_KIND_NONE = 3, /* an optional without a value */
} inf_value_kind;

#define INF_MAX_DIMS 8

enum {
    INF_TENSOR_OWNS_DATA = 1,   /* data (and string elements) freed with the tensor */
    INF_TENSOR_OWNS_STRUCT = 2, /* the struct itself came from inf_tensor_new* */
};

typedef struct inf_tensor {
    inf_dtype dtype;           /* element type (of the elements, for a sequence) */
    uint8_t kind;              /* inf_value_kind */
    uint8_t flags;             /* INF_TENSOR_* */
    int ndim;                  /* 0 for a scalar */
    int64_t dims[INF_MAX_DIMS];
    void *data;                /* numel * inf_dtype_size(dtype) bytes */
    size_t capacity;           /* bytes usable at data (0 when borrowed) */
    int n_items;               /* SEQUENCE / MAP */
    struct inf_tensor **items; /* owned by the value */
} inf_tensor;

/* Number of elements (1 for a scalar, 0 if any dimension is 0). */
INF_API int64_t inf_tensor_numel(const inf_tensor *t);
/* Bytes of dense data: numel * element size. */
INF_API size_t inf_tensor_nbytes(const inf_tensor *t);

/* Fills *t as a tensor descriptor over borrowed data (no allocation). */
INF_API void inf_tensor_init_view(inf_tensor *t, inf_dtype dtype, int ndim, const int64_t *dims,
                                  void *data);

/* Allocates a tensor with owned, zeroed data (64-byte aligned).  Returns
 * INF_EINVAL for a bad dtype/shape (a negative dimension, or nonzero
 * dimensions multiplying past 2^48, also when another one is 0),
 * INF_ENOMEM when out of memory. */
INF_API inf_status inf_tensor_new(inf_dtype dtype, int ndim, const int64_t *dims, inf_tensor **out);
/* Allocates an empty sequence of elements of dtype (elements appended with
 * inf_tensor_sequence_append), or an empty optional (kind INF_KIND_NONE). */
INF_API inf_status inf_tensor_new_sequence(inf_dtype elem_dtype, inf_tensor **out);
INF_API inf_status inf_tensor_new_none(inf_tensor **out);
/* Appends item to a sequence; takes ownership of item, also on failure. */
INF_API inf_status inf_tensor_sequence_append(inf_tensor *seq, inf_tensor *item);
/* Deep copy of any value (tensor, sequence, map, none). */
INF_API inf_status inf_tensor_clone(const inf_tensor *src, inf_tensor **out);
/* Frees what the tensor owns, and the struct itself if it came from
 * inf_tensor_new*.  NULL is a no-op. */
INF_API void inf_tensor_free(inf_tensor *t);

/* Copies a string into element i of an owned string tensor. */
INF_API inf_status inf_tensor_set_string(inf_tensor *t, int64_t i, const char *s, size_t len);

/* Writes "float32[2,3]" (or "seq(float32)", "none") into buf. */
INF_API const char *inf_tensor_describe(const inf_tensor *t, char *buf, size_t size);

/* Half-precision conversions (round to nearest even). */
INF_API float inf_f16_to_f32(uint16_t h);
INF_API uint16_t inf_f32_to_f16(float f);
INF_API float inf_bf16_to_f32(uint16_t h);
INF_API uint16_t inf_f32_to_bf16(float f);

/* ---- Tensor files ----
 * .npy (NumPy format 1.0/2.0/3.0, C order, little-endian numeric types and bool)
 * and .pb (ONNX TensorProto, SequenceProto, OptionalProto, MapProto).
 * The loaders return owned values; errors name the file and the problem. */
INF_API inf_status inf_tensor_load_npy(const char *path, inf_tensor **out, inf_error *err);
INF_API inf_status inf_tensor_save_npy(const char *path, const inf_tensor *t, inf_error *err);
/* Loads a .pb file: a TensorProto, or, where the caller says the file holds one
 * (kind_hint INF_KIND_SEQUENCE / INF_KIND_NONE for optional / INF_KIND_MAP),
 * a SequenceProto, OptionalProto or MapProto.  kind_hint -1 guesses. */
INF_API inf_status inf_tensor_load_pb(const char *path, int kind_hint, inf_tensor **out,
                                      inf_error *err);
/* Writes a TensorProto (tensor), SequenceProto (sequence), MapProto (map)
 * or, with as_optional, an OptionalProto wrapping the value. */
INF_API inf_status inf_tensor_save_pb(const char *path, const char *name, const inf_tensor *t,
                                      int as_optional, inf_error *err);
/* Decodes a TensorProto from memory. */
INF_API inf_status inf_tensor_decode_pb(const void *data, size_t size, inf_tensor **out,
                                        inf_error *err);

#ifdef __cplusplus
}
#endif

#endif /* INFERA_TENSOR_H */
