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

/* protobuf-c allocator routed through inf__malloc. */
extern ProtobufCAllocator inf__protobuf_allocator;
/* The same through inf__aligned_alloc (64-byte aligned, like tensor data):
 * for messages whose large raw_data buffers inf__onnx_tensor_take_proto
 * adopts (the model decoder). */
extern ProtobufCAllocator inf__protobuf_aligned_allocator;

#endif /* INF_ONNX_H */
