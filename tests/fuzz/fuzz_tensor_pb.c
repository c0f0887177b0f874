/*
 * fuzz_tensor_pb.c -- libFuzzer target for the TensorProto decoder used by
 * `infera run` and the conformance runner: load or reject, never crash.
 */
#include "infera/tensor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    inf_tensor *t = NULL;
    inf_error err;
    if (inf_tensor_decode_pb(data, size, &t, &err) == INF_OK) inf_tensor_free(t);
    return 0;
}
