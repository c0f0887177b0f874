#!/usr/bin/python3
"""Makes profile_loop.onnx: a Loop whose body reads an outer value, then a
node after it, for the per-node profile test (tests/unit/test_profile.c).

  yl = Loop(M = 4, cond = true, y = x)   body: cond = Identity(cond_in) ("body_cond"),
                                               y  = Add(y_in, x)        ("body_add")
  z  = Mul(yl, x)                         ("mul")        x: float [2, 3]

Run with Debian's python3-onnx:  /usr/bin/python3 tests/models/gen_profile_model.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.dirname(os.path.abspath(__file__))
body = helper.make_graph(
    [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
     helper.make_node("Add", ["y_in", "x"], ["y_out"], name="body_add")],
    "body",
    [helper.make_tensor_value_info("iter", TensorProto.INT64, []),
     helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
     helper.make_tensor_value_info("y_in", TensorProto.FLOAT, [2, 3])],
    [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
     helper.make_tensor_value_info("y_out", TensorProto.FLOAT, [2, 3])])
graph = helper.make_graph(
    [helper.make_node("Loop", ["M", "cond", "x"], ["yl"], name="loop", body=body),
     helper.make_node("Mul", ["yl", "x"], ["z"], name="mul")],
    "profile_loop",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
    [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])],
    [numpy_helper.from_array(np.array(4, dtype=np.int64), "M"),
     numpy_helper.from_array(np.array(True), "cond")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="gen_profile_model")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(here, "profile_loop.onnx"))
