/*
 * fuzz_wire_scan.c -- libFuzzer target for the protobuf nesting check
 * (src/onnx/wire_scan.c) in front of protobuf-c.
 *
 * Any byte string is scanned as a ModelProto and as each value file root
 * (SequenceProto, MapProto, OptionalProto, TensorProto); the scan must end
 * (it is iterative: no recursion, no allocation).  Whatever it accepts is
 * then unpacked by protobuf-c, whose recursion the scan bounds: a nested
 * input that slips through would overflow the stack here.  Seeds: nested
 * If/type/sequence files from tests/fuzz/gen_hostile.py (scripts/test.sh).
 */
#include <stdint.h>
#include <stdlib.h>

#include "onnx/onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    inf_error err;
    if (inf__onnx_wire_check_model(data, size, "fuzz", &err) == INF_OK) {
        Onnx__ModelProto *mp = onnx__model_proto__unpack(&inf__protobuf_allocator, size, data);
        if (mp) onnx__model_proto__free_unpacked(mp, &inf__protobuf_allocator);
    }
    if (inf__onnx_wire_check_value(data, size, INF_KIND_SEQUENCE, "fuzz", &err) == INF_OK) {
        Onnx__SequenceProto *sp = onnx__sequence_proto__unpack(&inf__protobuf_allocator, size, data);
        if (sp) onnx__sequence_proto__free_unpacked(sp, &inf__protobuf_allocator);
    }
    if (inf__onnx_wire_check_value(data, size, INF_KIND_MAP, "fuzz", &err) == INF_OK) {
        Onnx__MapProto *mp = onnx__map_proto__unpack(&inf__protobuf_allocator, size, data);
        if (mp) onnx__map_proto__free_unpacked(mp, &inf__protobuf_allocator);
    }
    if (inf__onnx_wire_check_value(data, size, INF_KIND_NONE, "fuzz", &err) == INF_OK) {
        Onnx__OptionalProto *op = onnx__optional_proto__unpack(&inf__protobuf_allocator, size, data);
        if (op) onnx__optional_proto__free_unpacked(op, &inf__protobuf_allocator);
    }
    return 0;
}
