/*
 * onnx_value.h -- one tensor ValueInfoProto built in memory with protobuf-c,
 * for the kernel tests that assemble their models as structs (test_attention.c,
 * test_rnn.c, test_random.c, test_conv.c, test_pool_threads.c).  The protobuf-c structs point into the storage, so it
 * must live until the model is packed.
 */
#ifndef INF_TESTS_ONNX_VALUE_H
#define INF_TESTS_ONNX_VALUE_H

#include <stdint.h>

#include "onnx.pb-c.h"

enum { TEST_VALUE_MAX_DIMS = 8 };

typedef struct test_value {
    Onnx__ValueInfoProto vi;
    Onnx__TypeProto tp;
    Onnx__TypeProto__Tensor tt;
    Onnx__TensorShapeProto shp;
    Onnx__TensorShapeProto__Dimension dim[TEST_VALUE_MAX_DIMS], *dim_ptrs[TEST_VALUE_MAX_DIMS];
} test_value;

/* Fills v as the value `name` of element type elem (ONNX__TENSOR_PROTO__DATA_TYPE__*)
 * and shape dims[ndim] (a negative dim is the symbolic "batch"; ndim 0 leaves
 * the shape to the engine); returns its ValueInfoProto. */
static inline Onnx__ValueInfoProto *test_value_info(test_value *v, const char *name, int elem, int ndim,
                                                    const int64_t *dims) {
    v->shp = (Onnx__TensorShapeProto)ONNX__TENSOR_SHAPE_PROTO__INIT;
    for (int d = 0; d < ndim && d < TEST_VALUE_MAX_DIMS; d++) {
        v->dim[d] = (Onnx__TensorShapeProto__Dimension)ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
        if (dims[d] < 0) {
            v->dim[d].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            v->dim[d].dim_param = "batch";
        } else {
            v->dim[d].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            v->dim[d].dim_value = dims[d];
        }
        v->dim_ptrs[d] = &v->dim[d];
    }
    v->shp.dim = v->dim_ptrs;
    v->shp.n_dim = (size_t)(ndim < TEST_VALUE_MAX_DIMS ? ndim : TEST_VALUE_MAX_DIMS);
    v->tt = (Onnx__TypeProto__Tensor)ONNX__TYPE_PROTO__TENSOR__INIT;
    v->tt.has_elem_type = 1;
    v->tt.elem_type = elem;
    v->tt.shape = &v->shp;
    v->tp = (Onnx__TypeProto)ONNX__TYPE_PROTO__INIT;
    v->tp.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    v->tp.tensor_type = &v->tt;
    v->vi = (Onnx__ValueInfoProto)ONNX__VALUE_INFO_PROTO__INIT;
    v->vi.name = (char *)name;
    v->vi.type = &v->tp;
    return &v->vi;
}

#endif /* INF_TESTS_ONNX_VALUE_H */
