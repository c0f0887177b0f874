#!/usr/bin/python3
"""Makes tests/models/memplan/*.onnx: small graphs for the memory planner
and in-place execution (src/graph/memplan.c), for tests/unit/test_memplan.c.

  chain   ten Softmax nodes in a row (not in-place ops): the arena must hold
          two intermediates, not ten.
  unary   ten element-wise unary ops in a row: each runs in place in the
          first node's buffer.
  fanout  a value read by two nodes, a graph output read by a later node, and
          a broadcast Add whose smaller operand dies there: none of these may
          be overwritten in place.  y = (sigmoid(t) + tanh(t) + sum(x, axis 0))
          * abs(g), t = relu(x), g = exp(x); outputs y and g.

Input x float32 [batch, 256] (fanout: [batch, 8]), opset 13.

Run with Debian's python3-onnx:  /usr/bin/python3 tests/models/gen_memplan_models.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "memplan")
N = helper.make_node


def save(name, nodes, inits, width, out_names):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])
    outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, ["batch", width]) for o in out_names]
    g = helper.make_graph(nodes, name, [x], outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="gen_memplan_models")
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(here, name + ".onnx"))


def chain(ops, extra_inputs=None):
    nodes = []
    for i, op in enumerate(ops):
        src = "x" if i == 0 else "v%d" % (i - 1)
        dst = "y" if i == len(ops) - 1 else "v%d" % i
        nodes.append(N(op, [src] + (extra_inputs or {}).get(op, []), [dst], **({"axis": -1} if op == "Softmax" else {})))
    return nodes


def main():
    os.makedirs(here, exist_ok=True)
    save("chain", chain(["Softmax"] * 10), [], 256, ["y"])
    bounds = [numpy_helper.from_array(np.array(v, dtype=np.float32), n) for n, v in (("lo", -0.5), ("hi", 2.0))]
    unary = ["Relu", "Sigmoid", "Tanh", "Exp", "Neg", "Abs", "Sqrt", "LeakyRelu", "Erf", "Clip"]
    save("unary", chain(unary, {"Clip": ["lo", "hi"]}), bounds, 256, ["y"])
    axes = numpy_helper.from_array(np.array([0], dtype=np.int64), "axes")
    fanout = [
        N("Relu", ["x"], ["t"]),
        N("Sigmoid", ["t"], ["a"]),
        N("Tanh", ["t"], ["b"]),
        N("Add", ["a", "b"], ["c"]),
        N("ReduceSum", ["x", "axes"], ["u"], keepdims=1),
        N("Add", ["c", "u"], ["d"]),
        N("Exp", ["x"], ["g"]),
        N("Abs", ["g"], ["h"]),
        N("Mul", ["d", "h"], ["y"]),
    ]
    save("fanout", fanout, [axes], 8, ["y", "g"])


main()
