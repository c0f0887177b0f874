#!/usr/bin/python3
"""Makes external/linear.onnx, a Gemm whose weights live in external/linear.weights
(ONNX external data: location, offset, length), and its input/expected output.

Run with Debian's python3-onnx and python3-numpy:  /usr/bin/python3 tests/models/gen_external.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "external")
os.makedirs(here, exist_ok=True)
rng = np.random.default_rng(7)
w = rng.standard_normal((16, 8)).astype(np.float32)
b = rng.standard_normal((8,)).astype(np.float32)
x = rng.standard_normal((3, 16)).astype(np.float32)

wt = numpy_helper.from_array(w, "W")
bt = numpy_helper.from_array(b, "B")
graph = helper.make_graph(
    [helper.make_node("Gemm", ["x", "W", "B"], ["y"], name="linear")], "external_data",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])], [wt, bt])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
onnx.save_model(model, os.path.join(here, "linear.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                location="linear.weights", size_threshold=0)
np.save(os.path.join(here, "linear_input.npy"), x)
np.save(os.path.join(here, "linear_expected.npy"), x @ w + b)

# The same model with its weights pointing outside the model's folder: must be refused.
escape = onnx.load(os.path.join(here, "linear.onnx"), load_external_data=False)
for t in escape.graph.initializer:
    for kv in t.external_data:
        if kv.key == "location":
            kv.value = "../../../../etc/passwd"
with open(os.path.join(here, "escape.onnx"), "wb") as f:
    f.write(escape.SerializeToString())
