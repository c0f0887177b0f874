"""gen_serve_models.py -- the identity models of tests/serve/test_serve.c's
datatype checks (check_datatypes): y = Identity(x), x and y [batch, 3] of one
KServe datatype each, so a response carries exactly the values a request sent
(NaN and infinities, BYTES elements).

    python3 tests/serve/models/gen_serve_models.py     (writes beside itself)
"""
import os

import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
TYPES = {"fp32": TensorProto.FLOAT, "bytes": TensorProto.STRING}

for name, dtype in TYPES.items():
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "id_" + name,
        [helper.make_tensor_value_info("x", dtype, ["batch", 3])],
        [helper.make_tensor_value_info("y", dtype, ["batch", 3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="infera-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, "id_%s.onnx" % name))
