"""Generates tests/stream/data/embed.onnx for tests/stream/test_stream.sh: a
model whose engine run fails for some input values, as an embedding lookup
does for an id it has no row for.

  input  k      int64 [N, 1]  an id, 0..4
  output score  float32 [N, 2] = Flatten(Gather(table[5, 2], k))
An id outside [-5, 5) makes Gather fail (index out of range) for the whole
batch it is in: `infera stream` must turn only that event into a dead letter.
Run: /usr/bin/python3 tests/stream/gen_embed_model.py  (needs python3-onnx)
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

table = numpy_helper.from_array(np.arange(10, dtype=np.float32).reshape(5, 2) / 4, "table")
k = helper.make_tensor_value_info("k", TensorProto.INT64, [None, 1])
score = helper.make_tensor_value_info("score", TensorProto.FLOAT, [None, 2])
nodes = [
    helper.make_node("Gather", ["table", "k"], ["g"], axis=0),
    helper.make_node("Flatten", ["g"], ["score"], axis=1),
]
g = helper.make_graph(nodes, "embed", [k], [score], initializer=[table])
model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="infera-tests")
model.ir_version = 8
onnx.checker.check_model(model)
here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
onnx.save(model, os.path.join(here, "embed.onnx"))
