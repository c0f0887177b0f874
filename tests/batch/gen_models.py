"""Generates the small models of tests/batch/test_batch.sh and tests/sql/test_sql.sh.

  data/sum3.onnx      X float32 [N, 3] -> Y = X @ [1, 10, 100]  ([N, 1]): each feature lands in its
                      own decimal digit, so a prediction shows which field went where (a=1, b=2,
                      c=3 -> 321; a missing or NaN feature -> NaN)
  data/wide1500.onnx  X float32 [N, 1500] -> Y = the row sum ([N, 1]): records wider than 1024 fields
Run: /usr/bin/python3 tests/batch/gen_models.py  (needs python3-onnx)
"""
import os

import onnx
from onnx import TensorProto, helper


def save(graph, path):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="infera-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def matmul_model(path, weights):
    n = len(weights)
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, n])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, 1])
    w = helper.make_tensor("W", TensorProto.FLOAT, [n, 1], weights)
    save(helper.make_graph([helper.make_node("MatMul", ["X", "W"], ["Y"])], os.path.basename(path), [x], [y], [w]),
         path)


here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
os.makedirs(here, exist_ok=True)
matmul_model(os.path.join(here, "sum3.onnx"), [1.0, 10.0, 100.0])
matmul_model(os.path.join(here, "wide1500.onnx"), [1.0] * 1500)
