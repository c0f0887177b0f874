"""Generates the ZipMap test models of tests/pipeline/test_pipeline.c (test_zipmap).

Both take X float32 [N, 3] and return label = ArgMax(X, axis 1) (int64 [N]) and
output_probability = ZipMap(X): one {class -> score} map per row, the form in which
scikit-learn classifiers exported by skl2onnx return their probabilities.
  zipmap_str.onnx: string class labels "cat", "dog", "emu"
  zipmap_int.onnx: int64 class labels 10, 20, 30
Run: /usr/bin/python3 tests/pipeline/gen_zipmap_models.py  (needs python3-onnx)
"""
import os

import onnx
from onnx import TensorProto, helper


def make(path, **labels):
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, 3])
    label = helper.make_tensor_value_info("label", TensorProto.INT64, [None])
    probs = onnx.ValueInfoProto()
    probs.name = "output_probability"
    m = probs.type.sequence_type.elem_type.map_type
    m.key_type = TensorProto.STRING if "classlabels_strings" in labels else TensorProto.INT64
    m.value_type.tensor_type.elem_type = TensorProto.FLOAT
    nodes = [
        helper.make_node("ArgMax", ["X"], ["label"], axis=1, keepdims=0),
        helper.make_node("ZipMap", ["X"], ["output_probability"], domain="ai.onnx.ml", **labels),
    ]
    g = helper.make_graph(nodes, "zipmap", [x], [label, probs])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("ai.onnx.ml", 1)],
                              producer_name="infera-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
make(os.path.join(here, "zipmap_str.onnx"), classlabels_strings=["cat", "dog", "emu"])
make(os.path.join(here, "zipmap_int.onnx"), classlabels_int64s=[10, 20, 30])
