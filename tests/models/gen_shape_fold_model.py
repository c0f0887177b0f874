#!/usr/bin/python3
"""Makes shape_fold.onnx: the shape arithmetic PyTorch exports write
(Shape -> Gather -> Unsqueeze -> Concat -> Reshape, Slice and Div on shapes)
around a tensor with a symbolic batch, for tests/unit/test_layout.c
(shape_folding_*).  Static shape inference (src/graph/shape_infer.c) must
fold every element that is fixed (6, 4, 4 / 2, the Slice [6, 4], the kept 1
of a ReduceMean, the 4 after a Transpose) and keep everything that depends
on the batch.

  input x [batch, 6, 8] (opset 13), h = MatMul(x, w [8, 4])  -> [batch, 6, 4]
  y1 = Reshape(h, Concat(batch, 6, 2, Div(4, 2)))           -> [batch, 6, 2, 2]
  y2 = Reshape(h, Concat([-1], Slice(Shape(h), 1, 3)))       -> [batch, 6, 4]
  y3 = Reshape(ReduceMean(h, -1), Concat(batch, Shape(r)[1])) -> [batch, 6]
  y4 = Reshape(Transpose(h, 021), Concat(Shape(t)[1], [-1])) -> [4, batch * 6]
  shape_out = Shape(x)                                       -> kept (has the batch)

Run with Debian's python3-onnx:  /usr/bin/python3 tests/models/gen_shape_fold_model.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(5)
nodes, inits = [], []


def node(op, ins, out, **attrs):
    nodes.append(helper.make_node(op, ins, [out], **attrs))
    return out


def ints(name, vals):
    inits.append(numpy_helper.from_array(np.array(vals, dtype=np.int64), name))
    return name


def dim(x, i, out):
    """Unsqueeze(Gather(Shape(x), i)): one dimension as a 1-element vector."""
    return node("Unsqueeze", [node("Gather", [node("Shape", [x], out + "_s"), ints(out + "_i", i)], out + "_g"),
                              ints(out + "_a", [0])], out)


inits.append(numpy_helper.from_array(rng.uniform(-1, 1, (8, 4)).astype(np.float32), "w"))
node("MatMul", ["x", "w"], "h")
half = node("Unsqueeze", [node("Div", [node("Gather", [node("Shape", ["h"], "d_s"), ints("d_i", 2)], "d_g"),
                                       ints("two", 2)], "d_div"), ints("d_a", [0])], "d")
node("Reshape", ["h", node("Concat", [dim("h", 0, "b1"), dim("h", 1, "c1"), ints("two_v", [2]), half], "s1", axis=0)],
     "y1")
sl = node("Slice", [node("Shape", ["h"], "e_s"), ints("e_st", [1]), ints("e_en", [3])], "e")
node("Reshape", ["h", node("Concat", [ints("m1", [-1]), sl], "s2", axis=0)], "y2")
node("ReduceMean", ["h"], "r", axes=[-1], keepdims=1)
node("Reshape", ["r", node("Concat", [dim("r", 0, "b3"), dim("r", 1, "c3")], "s3", axis=0)], "y3")
node("Transpose", ["h"], "t", perm=[0, 2, 1])
node("Reshape", ["t", node("Concat", [dim("t", 1, "c4"), ints("m1b", [-1])], "s4", axis=0)], "y4")
node("Shape", ["x"], "shape_out")

x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 6, 8])
outs = [helper.make_tensor_value_info("y1", TensorProto.FLOAT, ["batch", 6, 2, 2]),
        helper.make_tensor_value_info("y2", TensorProto.FLOAT, ["batch", 6, 4]),
        helper.make_tensor_value_info("y3", TensorProto.FLOAT, ["batch", 6]),
        helper.make_tensor_value_info("y4", TensorProto.FLOAT, [4, None]),
        helper.make_tensor_value_info("shape_out", TensorProto.INT64, [3])]
graph = helper.make_graph(nodes, "shape_fold", [x], outs, inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="gen_shape_fold_model.py")
onnx.checker.check_model(model)
onnx.save(model, os.path.join(here, "shape_fold.onnx"))
