#!/usr/bin/python3
"""Makes conv_add.onnx: Conv -> Add (residual) chains the optimizer's
ConvAdd pass (src/graph/passes/conv_add.c) fuses, and one it must keep, for
tests/unit/test_session.c (conv_add_pass_*).

  input x [batch, 4, 6, 7] (opset 13)
  y_a = Relu(Add(Conv(x, 3x3 pad 1, bias), x))             -> ConvAdd + Relu
  y_b = Add(Conv(x, 3x3 stride 2 pad 1, bias),
            Conv(x, 1x1 stride 2, no bias))                  -> ConvAdd + Conv
  y_c = Clip(Add(Conv(x, 3x3 pad 1), zc [4,1,1]), -1, 1)   -> ConvAdd (broadcast) + Clip
  d   = Conv(x, 3x3 pad 1) is a graph output too;
  y_d = Add(d, x)                                          -> kept (Conv + Add)
  y_e = Relu(Add(x, Conv(x, 3x3 pad 1, group 2, bias)))   -> ConvAdd + Relu
  y_f = Add(Conv(x, depthwise 3x3 pad 1, bias), x)        -> ConvAdd
  16 nodes become 8.

Run with Debian's python3-onnx:  /usr/bin/python3 tests/models/gen_conv_add_model.py
"""
from model_builder import Graph, float_input

g = Graph(seed=11)
const, node = g.const, g.node


def conv(name, cout, cin, k, bias=True, **attrs):
    ins = ["x", const(name + "_w", (cout, cin, k, k))]
    if bias:
        ins.append(const(name + "_b", (cout,)))
    return node("Conv", ins, name, **attrs)


p1 = dict(pads=[1, 1, 1, 1])
node("Relu", [node("Add", [conv("ca", 4, 4, 3, **p1), "x"], "sa")], "y_a")
node("Add", [conv("cb", 6, 4, 3, strides=[2, 2], **p1), conv("sb", 6, 4, 1, bias=False, strides=[2, 2])], "y_b")
lo, hi = g.scalar("lo", -1), g.scalar("hi", 1)
node("Clip", [node("Add", [conv("cc", 4, 4, 3, bias=False, **p1), const("zc", (4, 1, 1))], "sc"), lo, hi], "y_c")
node("Add", [conv("d", 4, 4, 3, **p1), "x"], "y_d")
node("Relu", [node("Add", ["x", conv("ce", 4, 2, 3, group=2, **p1)], "se")], "y_e")
node("Add", [conv("cf", 4, 1, 3, group=4, **p1), "x"], "y_f")

outs = [float_input(n, ["batch", None, None, None]) for n in ["y_a", "y_b", "y_c", "d", "y_d", "y_e", "y_f"]]
g.save("conv_add", [float_input("x", ["batch", 4, 6, 7])], outs, "gen_conv_add_model.py")
