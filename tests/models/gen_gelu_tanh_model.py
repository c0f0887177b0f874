#!/usr/bin/python3
"""Makes hf_arch/gelu_tanh_edges.onnx: GPT-2's tanh-form GELU,
0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), spelled as the exporters write
it (graph/passes/gelu.c fuses these into Gelu approximate="tanh") and near
misses it must keep, for tests/integration/test_hf_arch.sh (outputs against
ONNX Runtime, op counts).

  input x [batch, 5, 16] float32 (opset 13)
  y_a = Mul(Mul(x, 0.5), Add(Tanh(Mul(Add(x, Mul(Pow(x, 3), h)), k)), 1))   both exporters' GPT-2  -> Gelu
  y_b = Mul(Mul(x, t), 0.5), t = Add(1, Tanh(Mul(k, Add(Mul(h, x*x*x), x))))  operands swapped,
        the cube as Mul(Mul(x, x), x)                                                              -> Gelu
  y_c = the y_a chain on MatMul(x, W) + bias, as Mul(m, Mul(t, 0.5))          -> FusedMatMul(GeluTanh)
  y_d = the y_a chain with h = 0.04                                           kept (not GPT-2's constant)
  y_e = the y_a chain with Pow(x, 2)                                          kept (not a cube; Pow -> Mul)
  y_f = the y_a chain whose Tanh is also a graph output (f_t)                 kept (read outside)
  2 Gelu, 1 FusedMatMul, 3 chains left (3 Tanh, 2 Pow).

Run with Debian's python3-onnx:  /usr/bin/python3 tests/models/gen_gelu_tanh_model.py
"""
import os

import numpy as np

from model_builder import Graph, float_input

g = Graph(seed=29)
node = g.node
w = g.const("w", [16, 16], -0.5, 0.5)
bias = g.const("bias", [16], -0.5, 0.5)
half = g.scalar("half", 0.5)
one = g.scalar("one", 1.0)
three = g.scalar("three", 3.0)
two = g.scalar("two", 2.0)
h = g.scalar("h", 0.044715)
h_off = g.scalar("h_off", 0.04)
k = g.scalar("k", 0.7978845608028654)


def term(tag, x, coef=h, exponent=three):
    """Add(Tanh(Mul(Add(x, Mul(Pow(x, exponent), coef)), k)), 1)"""
    c = node("Mul", [node("Pow", [x, exponent], tag + "_p"), coef], tag + "_c")
    t = node("Tanh", [node("Mul", [node("Add", [x, c], tag + "_a"), k], tag + "_w")], tag + "_t")
    return node("Add", [t, one], tag + "_1t")


def gelu_a(tag, x, **kw):
    return node("Mul", [node("Mul", [x, half], tag + "_hx"), term(tag, x, **kw)], "y_" + tag)


gelu_a("a", "x")
cube = node("Mul", [node("Mul", ["x", "x"], "b_sq"), "x"], "b_cube")
a_b = node("Add", [node("Mul", [h, cube], "b_c"), "x"], "b_a")
t_b = node("Add", [one, node("Tanh", [node("Mul", [k, a_b], "b_w")], "b_t")], "b_1t")
node("Mul", [node("Mul", ["x", t_b], "b_xt"), half], "y_b")
m = node("Add", [node("MatMul", ["x", w], "c_mm"), bias], "c_m")
node("Mul", [m, node("Mul", [term("c", m), half], "c_th")], "y_c")
gelu_a("d", "x", coef=h_off)
gelu_a("e", "x", exponent=two)
gelu_a("f", "x")

outs = [float_input("y_" + t, [None, 5, 16]) for t in "abcdef"] + [float_input("f_t", [None, 5, 16])]
g.save("hf_arch/gelu_tanh_edges", [float_input("x", ["batch", 5, 16])], outs, "gen_gelu_tanh_model.py")
rng = np.random.default_rng(2)
np.save(os.path.join(os.path.dirname(os.path.abspath(__file__)), "hf_arch", "gelu_tanh_x.npy"),
        (3 * rng.standard_normal((3, 5, 16))).astype(np.float32))
