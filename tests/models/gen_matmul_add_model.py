#!/usr/bin/python3
"""Makes matmul_add.onnx: MatMul -> Add(bias) [-> Add(residual)] [-> GELU]
chains the optimizer's FusedMatMul pass (src/graph/passes/matmul_add.c)
fuses, and near misses it must keep, for tests/unit/test_matmul_add.c.

  input x [batch, 5, 24] (opset 13); W_* and b_* constants, GELU written
  out as PyTorch exports it (x * 0.5 * (1 + Erf(x / sqrt 2))), which the
  GELU pass turns into the internal Gelu first
  y_a = Add(x, Add(b_a, MatMul(x, W_a [24,24])))            -> FusedMatMul (residual)
  y_b = GELU(Add(MatMul(x, W_b [24,40]), b_b))               -> FusedMatMul (Gelu; 40 = 2.5 panels)
  y_c = GELU(Add(Add(MatMul(x, W_c), b_c), x))              -> FusedMatMul (residual, Gelu)
  m_d = MatMul(x, W_d) is a graph output; y_d = Add(m_d, b_d) -> kept
  y_e = Add(MatMul(x, W_e [24,16]), b_e [1,16])             -> kept (bias not [N])
  y_f = Add(MatMul(x, W_f), b_f), W_f = W0 + ReduceMean(x)  -> kept (W computed)
  y_g = Add(Add(MatMul(x, W_g), b_g), z_g [5,24])           -> FusedMatMul (residual broadcasts)
  y_h = Add(Add(MatMul(x, W_h [24,8]), b_h), z_h [3,1,1,8]) -> FusedMatMul (result grows to rank 4)
  y_i = Add(b_i, MatMul(Reshape(x, [-1, 120]), W_i [120,20])) -> FusedMatMul (a row per batch)
  y1_j = Add(MatMul(x, W_j), b_j) is a graph output; y_j = GELU(y1_j) -> FusedMatMul + Gelu
  y1_k = Add(MatMul(x, W_k), b_k) is a graph output; y_k = Add(y1_k, x) -> FusedMatMul + Add
  45 nodes become 19.

Run with Debian's python3-onnx:  /usr/bin/python3 tests/models/gen_matmul_add_model.py
"""
import numpy as np

from model_builder import Graph, float_input

g = Graph(seed=23)
const, node = g.const, g.node


def linear(name, x, k, n, bias_first=False):
    m = node("MatMul", [x, const("W_" + name, (k, n))], "m_" + name)
    b = const("b_" + name, (n,))
    return node("Add", [b, m] if bias_first else [m, b], "y1_" + name)


def gelu(x, out):
    u = node("Div", [x, "sqrt2"], out + "_u")
    t = node("Add", [node("Erf", [u], out + "_e"), "one"], out + "_t")
    return node("Mul", [node("Mul", [x, "half"], out + "_h"), t], out)


for name, v in [("sqrt2", np.sqrt(2.0)), ("one", 1.0), ("half", 0.5)]:
    g.scalar(name, v)
g.scalar("shape_i", [-1, 120], np.int64)

node("Add", ["x", linear("a", "x", 24, 24, bias_first=True)], "y_a")
gelu(linear("b", "x", 24, 40), "y_b")
gelu(node("Add", [linear("c", "x", 24, 24), "x"], "r_c"), "y_c")
node("Add", [node("MatMul", ["x", const("W_d", (24, 24))], "m_d"), const("b_d", (24,))], "y_d")
node("Add", [node("MatMul", ["x", const("W_e", (24, 16))], "m_e"), const("b_e", (1, 16))], "y_e")
w_f = node("Add", [const("W0_f", (24, 16)), node("ReduceMean", ["x"], "mean_f", keepdims=0)], "W_f")
node("Add", [node("MatMul", ["x", w_f], "m_f"), const("b_f", (16,))], "y_f")
node("Add", [linear("g", "x", 24, 24), const("z_g", (5, 24))], "y_g")
node("Add", [linear("h", "x", 24, 8), const("z_h", (3, 1, 1, 8))], "y_h")
r = node("Reshape", ["x", "shape_i"], "r_i")
node("Add", [const("b_i", (20,)), node("MatMul", [r, const("W_i", (120, 20))], "m_i")], "y_i")
gelu(linear("j", "x", 24, 24), "y_j")
node("Add", [linear("k", "x", 24, 24), "x"], "y_k")

names = ["y_a", "y_b", "y_c", "m_d", "y_d", "y_e", "y_f", "y_g", "y_h", "y_i", "y1_j", "y_j", "y1_k", "y_k"]
rank = {"y_h": 4, "y_i": 2}
outs = [float_input(n, [None] * rank.get(n, 3)) for n in names]
g.save("matmul_add", [float_input("x", ["batch", 5, 24])], outs, "gen_matmul_add_model.py")
