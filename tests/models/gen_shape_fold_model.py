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
import numpy as np
from onnx import TensorProto, helper

from model_builder import Graph, float_input

g = Graph(seed=5)
node = g.node


def ints(name, vals):
    return g.scalar(name, vals, np.int64)


def dim(x, i, out):
    """Unsqueeze(Gather(Shape(x), i)): one dimension as a 1-element vector."""
    return node("Unsqueeze", [node("Gather", [node("Shape", [x], out + "_s"), ints(out + "_i", i)], out + "_g"),
                              ints(out + "_a", [0])], out)


g.const("w", (8, 4), -1, 1)
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

outs = [float_input("y1", ["batch", 6, 2, 2]), float_input("y2", ["batch", 6, 4]), float_input("y3", ["batch", 6]),
        float_input("y4", [4, None]), helper.make_tensor_value_info("shape_out", TensorProto.INT64, [3])]
g.save("shape_fold", [float_input("x", ["batch", 6, 8])], outs, "gen_shape_fold_model.py")
