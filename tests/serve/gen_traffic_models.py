"""Models for tests/serve/test_serve_traffic.sh, written into a folder:
  const.onnx -- the fraud model's signature (input float[N,12] -> label int64[N],
                probabilities float[N,2]) answering label 1, probabilities
                [0.3, 0.7] for every row: a shadow whose agreement and mean
                absolute difference with the primary the test computes itself;
  slow.onnx  -- the same signature, tens of milliseconds of compute per call
                (a Loop of small MatMuls), to show a slow shadow leaves the
                primary's latency alone.
usage: gen_traffic_models.py OUT_DIR"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

out = sys.argv[1]
inp = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 12])
outs = [helper.make_tensor_value_info("label", TensorProto.INT64, ["N"]),
        helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", 2])]


def const_tail(nodes, inits, source):
    """label = 1 and probabilities = [0.3, 0.7] per row of `source` ([N, k])."""
    inits += [numpy_helper.from_array(np.zeros((12, 2), np.float32), "zero_w"),
              numpy_helper.from_array(np.array([0.3, 0.7], np.float32), "p"),
              numpy_helper.from_array(np.array([1], np.int64), "axis1")]
    nodes += [helper.make_node("MatMul", [source, "zero_w"], ["zeros2"]),
              helper.make_node("Add", ["zeros2", "p"], ["probabilities"]),
              helper.make_node("ArgMax", ["probabilities"], ["label"], axis=1, keepdims=0)]


nodes, inits = [], []
const_tail(nodes, inits, "input")
g = helper.make_graph(nodes, "const", [inp], outs, inits)
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), os.path.join(out, "const.onnx"))

# slow: a Loop of 3000 iterations, each a 64x64 MatMul + Tanh on a carried state
body_in = [helper.make_tensor_value_info("i", TensorProto.INT64, []),
           helper.make_tensor_value_info("c", TensorProto.BOOL, []),
           helper.make_tensor_value_info("s", TensorProto.FLOAT, [64, 64])]
body_out = [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("s_out", TensorProto.FLOAT, [64, 64])]
rng = np.random.default_rng(0)
w = numpy_helper.from_array((rng.standard_normal((64, 64)) * 0.1).astype(np.float32), "w")
body = helper.make_graph([helper.make_node("Identity", ["c"], ["c_out"]),
                          helper.make_node("MatMul", ["s", "w"], ["m"]),
                          helper.make_node("Tanh", ["m"], ["s_out"])], "body", body_in, body_out, [w])
nodes = [helper.make_node("Loop", ["trip", "cond", "s0"], ["s_final"], body=body),
         helper.make_node("ReduceSum", ["s_final"], ["total"], keepdims=0),
         helper.make_node("Mul", ["total", "zero"], ["zero_scalar"]),
         helper.make_node("Add", ["input", "zero_scalar"], ["input2"])]
inits = [numpy_helper.from_array(np.array(3000, np.int64), "trip"),
         numpy_helper.from_array(np.array(True), "cond"),
         numpy_helper.from_array(np.ones((64, 64), np.float32), "s0"),
         numpy_helper.from_array(np.array(0, np.float32), "zero")]
const_tail(nodes, inits, "input2")
g = helper.make_graph(nodes, "slow", [inp], outs, inits)
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), os.path.join(out, "slow.onnx"))
