#!/usr/bin/python3
"""Makes fold.onnx: a graph where most nodes compute on constants only (as
PyTorch exports do), for the constant-folding tests.

  c  = Constant([[1,-2,3],[-4,5,-6]])         (folded)
  r  = Relu(Neg(c))                            (folded)
  s  = Cast(Shape(c), float) -> Unsqueeze      (folded)
  d  = Relu(c) (unused)                        (removed as dead)
  y  = Add(Mul(x, r), s_broadcast)             (kept: depends on x)

Run with Debian's python3-onnx:  /usr/bin/python3 tests/models/gen_fold_model.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.dirname(os.path.abspath(__file__))
c = np.array([[1, -2, 3], [-4, 5, -6]], dtype=np.float32)
nodes = [
    helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(c)),
    helper.make_node("Neg", ["c"], ["nc"]),
    helper.make_node("Relu", ["nc"], ["r"]),
    helper.make_node("Shape", ["c"], ["shape"]),
    helper.make_node("Cast", ["shape"], ["shape_f"], to=TensorProto.FLOAT),
    helper.make_node("Constant", [], ["axes"], value=numpy_helper.from_array(np.array([0], dtype=np.int64))),
    helper.make_node("Unsqueeze", ["shape_f", "axes"], ["s"]),
    helper.make_node("Relu", ["c"], ["unused"]),
    helper.make_node("Mul", ["x", "r"], ["xr"]),
    helper.make_node("ReduceSum", ["s"], ["ssum"], keepdims=1),
    helper.make_node("Add", ["xr", "ssum"], ["y"]),
]
graph = helper.make_graph(nodes, "fold", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(model)
onnx.save(model, os.path.join(here, "fold.onnx"))
