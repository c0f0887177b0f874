/*
 * onnx.h -- the ONNX front end: the only code that sees protobuf-c types.
 *
 * decode.c turns a ModelProto into the engine's IR (graph/graph.h);
 * tensor_proto.c converts TensorProto / SequenceProto / OptionalProto /
 * MapProto to and from inf_tensor values (for initializers, attributes and
 * the .pb files of `infera run` and the conformance suite).
 */
#ifndef INF_ONNX_H
#define INF_ONNX_H

#include "core/core.h"
#include "onnx.pb-c.h"
#include "onnx_data.pb-c.h"

/* Converts a TensorProto to an owned tensor.  base_dir locates external data
 * (NULL: external data is refused).  `what` names the tensor in errors. */
inf_status inf__onnx_tensor_from_proto(const Onnx__TensorProto *tp, const char *base_dir,
                                       const char *what, inf_tensor **out, inf_error *err);
/* The same, but tp must come from inf__protobuf_aligned_allocator: a large
 * raw_data buffer (4 KiB and up) becomes the tensor's data without a copy,
 * and tp loses it (has_raw_data cleared).  Other tensors are copied. */
inf_status inf__onnx_tensor_take_proto(Onnx__TensorProto *tp, const char *base_dir, const char *what,
                                       inf_tensor **out, inf_error *err);

/* Converts a tensor to a TensorProto whose buffers are allocated with
 * inf__malloc; free with inf__onnx_tensor_proto_free. */
inf_status inf__onnx_tensor_to_proto(const inf_tensor *t, const char *name, Onnx__TensorProto **out);
void inf__onnx_tensor_proto_free(Onnx__TensorProto *tp);

/* Reads a whole file into memory (inf__malloc'd); errors name the file. */
inf_status inf__read_file(const char *path, uint8_t **data, size_t *size, inf_error *err);

/* Nesting limits checked by wire_scan.c BEFORE protobuf-c decodes a message
 * (protobuf-c recurses without a limit: a deep enough file overflows the
 * stack).  The main graph is subgraph level 0. */
#define INF_ONNX_MAX_SUBGRAPH_DEPTH 64 /* If/Loop/Scan bodies inside each other */
#define INF_ONNX_MAX_TYPE_DEPTH 32     /* TypeProto sequence/map/optional nesting */
#define INF_ONNX_MAX_VALUE_DEPTH 64    /* SequenceProto/MapProto/OptionalProto nesting */

/* Walks the wire format of a ModelProto iteratively and refuses (INF_EMODEL)
 * nesting beyond the limits above, or malformed wire data (INF_EFORMAT);
 * `what` names the file in errors.  Call before onnx__model_proto__unpack. */
inf_status inf__onnx_wire_check_model(const void *data, size_t size, const char *what, inf_error *err);
/* The same for a value file: a SequenceProto (kind_hint INF_KIND_SEQUENCE),
 * MapProto (INF_KIND_MAP), OptionalProto (INF_KIND_NONE) or TensorProto. */
inf_status inf__onnx_wire_check_value(const void *data, size_t size, int kind_hint, const char *what, inf_error *err);

/* protobuf-c allocator routed through inf__malloc. */
extern ProtobufCAllocator inf__protobuf_allocator;
/* The same through inf__aligned_alloc (64-byte aligned, like tensor data):
 * for messages whose large raw_data buffers inf__onnx_tensor_take_proto
 * adopts (the model decoder). */
extern ProtobufCAllocator inf__protobuf_aligned_allocator;

#endif /* INF_ONNX_H */
