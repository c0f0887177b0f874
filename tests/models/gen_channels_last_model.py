#!/usr/bin/python3
"""Makes channels_last.onnx: a ResNet-style graph whose insides the optimizer's
channels-last pass (src/graph/passes/channels_last.c) holds [n][h][w][c], and
values it must leave channels-first, for tests/unit/test_session.c
(channels_last_pass_*).

  input x [batch, 3, 24, 26] (opset 13)
  s   = MaxPool 2x2/2 (Relu(Conv(x, 3 -> 16, 3x3 pad 1, bias)))   ConvMaxPool, the AVX-512 rows kernel
                                                      pooling in registers (a stem)  -> 2 (Y; AVX-512 only)
  a   = Relu(Conv(s, 16 -> 32, 3x3 pad 1, bias))     Winograd, s 16 x 12 x 13 (odd width: partial tiles) -> 3
  b   = Relu(Conv(a, 32 -> 32, 3x3 pad 1) + a)        ConvAdd, residual a          -> 7 (X, Y, residual)
  c   = Conv(b, 32 -> 48, 1x1 stride 2, bias)         1x1 rows (a shortcut)        -> 3 (X, Y)
  d   = Relu(Conv(b, 32 -> 48, 3x3/2 pad 1, bias))    Winograd stride 2            -> 3
  e   = Relu(Conv(d, 48 -> 48, 3x3 pad 1, bias) + c)  ConvAdd, residual c          -> 7
  y_f = Relu(Conv(e, 48 -> 40, 3x3 pad 1, bias))      a graph output: Y stays      -> 1 (X)
  k   = Relu(Conv(s, 16 -> 16, 3x3 pad 1))            its reader h cannot take k channels-last -> 1 (X)
  h   = Conv(k, 16 -> 24, 1x1), y_h = Sigmoid(h)      a 1x1 takes X and Y together; h goes to a Sigmoid -> 0
  y_g = GlobalAveragePool(y_f)
  21 nodes become 11 (ConvMaxPool, 2 ConvAdd; 7 Relus become their producers' epilogues).

Run with Debian's python3-onnx:  /usr/bin/python3 tests/models/gen_channels_last_model.py
"""
from model_builder import Graph, float_input

g = Graph(seed=31)
const, node = g.const, g.node
p1 = dict(pads=[1, 1, 1, 1])


def conv(name, x, cin, cout, k, bias=True, **attrs):
    ins = [x, const(name + "_w", (cout, cin, k, k))]
    if bias:
        ins.append(const(name + "_b", (cout,)))
    return node("Conv", ins, name, **attrs)


stem = node("Relu", [conv("cs", "x", 3, 16, 3, **p1)], "rs")
s = node("MaxPool", [stem], "s", kernel_shape=[2, 2], strides=[2, 2])
a = node("Relu", [conv("ca", s, 16, 32, 3, **p1)], "a")
b = node("Relu", [node("Add", [conv("cb", a, 32, 32, 3, bias=False, **p1), a], "sb")], "b")
c = conv("c", b, 32, 48, 1, strides=[2, 2])
d = node("Relu", [conv("cd", b, 32, 48, 3, strides=[2, 2], **p1)], "d")
e = node("Relu", [node("Add", [conv("ce", d, 48, 48, 3, **p1), c], "se")], "e")
f = node("Relu", [conv("cf", e, 48, 40, 3, **p1)], "y_f")
k = node("Relu", [conv("ck", s, 16, 16, 3, bias=False, **p1)], "k")
node("Sigmoid", [conv("h", k, 16, 24, 1, bias=False)], "y_h")
node("GlobalAveragePool", [f], "y_g")

outs = [float_input(n, ["batch", None, None, None]) for n in ["y_f", "y_h", "y_g"]]
g.save("channels_last", [float_input("x", ["batch", 3, 24, 26])], outs, "gen_channels_last_model.py")
