#!/usr/bin/python3
"""Makes conv_pool.onnx: Conv (-> Relu/Clip) -> MaxPool chains the optimizer's
ConvMaxPool pass (src/graph/passes/conv_pool.c) fuses, and ones it must keep,
for tests/unit/test_session.c (conv_pool_pass_*).

  input x [batch, 3, 33, 70] (opset 13)
  y_a = MaxPool 2x2/2 (Relu(Conv(x, 3 -> 32, 3x3 pad 1, bias)))     -> ConvMaxPool + Relu (rows kernel)
  y_b = MaxPool 3x3/2 (Clip(Conv(x, 3 -> 6, 3x3 pad 1), -0.3, 0.4)) -> ConvMaxPool + Clip (rows kernel)
  y_c = MaxPool 2x2/2 (Relu(Conv(x, 3 -> 32, 3x3/2 pad 1)))         -> ConvMaxPool + Relu (direct kernel)
  y_f = MaxPool 3x3/1 (Conv(x, 3 -> 5, 1x1, bias))                  -> ConvMaxPool (pointwise kernel)
  d   = Conv(x, 3 -> 4, 3x3) is a graph output too; y_d = MaxPool 2x2/2 (d) -> kept
  y_e = MaxPool 3x3/2 pad 1 (Conv(x, 3 -> 4, 3x3))                  -> kept (padding)
  y_g = MaxPool 2x2/2 (LeakyRelu(Conv(x, 3 -> 4, 3x3)))             -> kept (LeakyRelu)
  y_h = MaxPool 2x2/2 ceil_mode (Conv(x, 3 -> 4, 3x3))              -> kept (ceil mode)
  20 nodes become 12.

Run with Debian's python3-onnx:  /usr/bin/python3 tests/models/gen_conv_pool_model.py
"""
from model_builder import Graph, float_input

g = Graph(seed=23)
const, node = g.const, g.node


def conv(name, cout, k, bias=True, **attrs):
    ins = ["x", const(name + "_w", (cout, 3, k, k))]
    if bias:
        ins.append(const(name + "_b", (cout,)))
    return node("Conv", ins, name, **attrs)


p1, k2, k3 = dict(pads=[1, 1, 1, 1]), dict(kernel_shape=[2, 2], strides=[2, 2]), dict(kernel_shape=[3, 3], strides=[2, 2])
node("MaxPool", [node("Relu", [conv("ca", 32, 3, **p1)], "ra")], "y_a", **k2)
lo, hi = g.scalar("lo", -0.3), g.scalar("hi", 0.4)
node("MaxPool", [node("Clip", [conv("cb", 6, 3, bias=False, **p1), lo, hi], "rb")], "y_b", **k3)
node("MaxPool", [node("Relu", [conv("cc", 32, 3, strides=[2, 2], **p1)], "rc")], "y_c", **k2)
node("MaxPool", [conv("cf", 5, 1)], "y_f", kernel_shape=[3, 3])
node("MaxPool", [conv("d", 4, 3)], "y_d", **k2)
node("MaxPool", [conv("ce", 4, 3)], "y_e", pads=[1, 1, 1, 1], **k3)
node("MaxPool", [node("LeakyRelu", [conv("cg", 4, 3)], "rg", alpha=0.1)], "y_g", **k2)
node("MaxPool", [conv("ch", 4, 3)], "y_h", ceil_mode=1, **k2)

outs = [float_input(n, ["batch", None, None, None]) for n in ["y_a", "y_b", "y_c", "y_f", "d", "y_d", "y_e", "y_g", "y_h"]]
g.save("conv_pool", [float_input("x", ["batch", 3, 33, 70])], outs, "gen_conv_pool_model.py")
