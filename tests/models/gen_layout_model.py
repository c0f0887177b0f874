#!/usr/bin/python3
"""Makes layout.onnx: Transpose and Reshape chains the optimizer's layout
pass (src/graph/passes/layout.c) collapses, and near misses it must keep,
for tests/unit/test_layout.c.

  input x [batch, 3, 4, 5] (opset 13)
  y_a = T(T(x, 0231), 0312)                  -> Identity (NHWC round trip)
  y_b = T(T(x, 0231), 0213)                  -> one Transpose
  y_c = T(T(T(x, 1023), 0132), 3210)         -> one Transpose
  y_d = T(x, 0123)                           -> Identity
  y_e = Reshape(Flatten(x), [-1, 4, 15])     -> one Reshape
  y_f = Reshape(Unsqueeze(Reshape(x, [-1, 60]), [1]), [-1, 3, 20]) -> one Reshape
  t_g = T(x, 0231) is a graph output too; y_g = T(t_g, 0312)      -> kept
  y_h = Reshape(Flatten(x), [0, 60])         -> kept (a 0 copies a dimension)
  y_i = T(Relu(T(x, 0231)), 0312)            -> kept (not adjacent)
  20 nodes become 13.

Run with Debian's python3-onnx:  /usr/bin/python3 tests/models/gen_layout_model.py
"""
import numpy as np

from model_builder import Graph, float_input

g = Graph(seed=0)
node = g.node


def tr(x, perm, out):
    return node("Transpose", [x], out, perm=[int(c) for c in perm])


def shape(name, dims):
    return g.scalar(name, dims, np.int64)


tr(tr("x", "0231", "a1"), "0312", "y_a")
tr(tr("x", "0231", "b1"), "0213", "y_b")
tr(tr(tr("x", "1023", "c1"), "0132", "c2"), "3210", "y_c")
tr("x", "0123", "y_d")
node("Reshape", [node("Flatten", ["x"], "e1"), shape("s_e", [-1, 4, 15])], "y_e")
f1 = node("Reshape", ["x", shape("s_f1", [-1, 60])], "f1")
node("Reshape", [node("Unsqueeze", [f1, shape("ax_f", [1])], "f2"), shape("s_f", [-1, 3, 20])], "y_f")
tr(tr("x", "0231", "t_g"), "0312", "y_g")
node("Reshape", [node("Flatten", ["x"], "h1"), shape("s_h", [0, 60])], "y_h")
tr(node("Relu", [tr("x", "0231", "i1")], "i2"), "0312", "y_i")

ranks = {"y_a": 4, "y_b": 4, "y_c": 4, "y_d": 4, "y_e": 3, "y_f": 3, "t_g": 4, "y_g": 4, "y_h": 2, "y_i": 4}
outs = [float_input(n, [None] * r) for n, r in ranks.items()]
g.save("layout", [float_input("x", ["batch", 3, 4, 5])], outs, "gen_layout_model.py")
