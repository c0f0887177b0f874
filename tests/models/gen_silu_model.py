#!/usr/bin/python3
"""Makes silu.onnx: Conv -> Sigmoid + Mul (SiLU, as PyTorch exports nn.SiLU)
chains the optimizer's SiLU pass (src/graph/passes/silu.c) fuses into the
Conv's epilogue, and ones it must keep, for tests/unit/test_session.c
(silu_pass_*).

  input x [batch, 4, 6, 7] (opset 13)
  a   = Conv(x, 3x3 pad 1, bias);            y_a = Mul(a, Sigmoid(a))   -> Conv + SiLU
  b   = Conv(x, depthwise 3x3 pad 1, bias);  y_b = Mul(Sigmoid(b), b)   -> Conv + SiLU (operands swapped)
  c   = Add(Conv(x, 1x1), x);                y_c = Mul(c, Sigmoid(c))   -> ConvAdd + SiLU
  d   = Conv(x, 3x3 pad 1) is a graph output too;  y_d = Mul(d, Sigmoid(d))   -> kept
  s_e = Sigmoid(e), e = Conv(x, 3x3 pad 1), is a graph output too;  y_e = Mul(e, s_e)   -> kept
  y_f = Mul(x, Sigmoid(Conv(x, 3x3 pad 1)))  (a gate, not SiLU)     -> kept
  a_raw = Conv(x, a's weights and bias)  (what y_a must be the SiLU of) -> kept
  20 nodes become 13.

Run with Debian's python3-onnx:  /usr/bin/python3 tests/models/gen_silu_model.py
"""
from model_builder import Graph, float_input

g = Graph(seed=28)
const, node = g.const, g.node


def conv(name, cout, cin, k, bias=True, **attrs):
    ins = ["x", const(name + "_w", (cout, cin, k, k))]
    if bias:
        ins.append(const(name + "_b", (cout,)))
    return node("Conv", ins, name, **attrs)


p1 = dict(pads=[1, 1, 1, 1])
a = conv("a", 4, 4, 3, **p1)
node("Mul", [a, node("Sigmoid", [a], "s_a")], "y_a")
node("Conv", ["x", "a_w", "a_b"], "a_raw", **p1)
b = conv("b", 4, 1, 3, group=4, **p1)
node("Mul", [node("Sigmoid", [b], "s_b"), b], "y_b")
c = node("Add", [conv("cc", 4, 4, 1, bias=False), "x"], "c")
node("Mul", [c, node("Sigmoid", [c], "s_c")], "y_c")
d = conv("d", 4, 4, 3, **p1)
node("Mul", [d, node("Sigmoid", [d], "s_d")], "y_d")
e = conv("e", 4, 4, 3, **p1)
node("Mul", [e, node("Sigmoid", [e], "s_e")], "y_e")
node("Mul", ["x", node("Sigmoid", [conv("f", 4, 4, 3, **p1)], "s_f")], "y_f")

outs = [float_input(n, ["batch", None, None, None]) for n in ["y_a", "y_b", "y_c", "d", "y_d", "s_e", "y_e", "y_f",
                                                             "a_raw"]]
g.save("silu", [float_input("x", ["batch", 4, 6, 7])], outs, "gen_silu_model.py")
