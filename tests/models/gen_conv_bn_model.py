#!/usr/bin/python3
"""Makes conv_bn.onnx: Conv -> BatchNormalization chains the optimizer's
Conv+BatchNorm pass (src/graph/passes/conv_bn.c) folds, and near misses it
must keep, for tests/unit/test_conv_bn.c.

  input x [batch, 4, 6, 7] (opset 15)
  y_a = Relu(BN(Conv(x, 3x3 pad 1, bias)))          -> Conv + Relu
  y_b = BN(Conv(x, 1x1 stride 2, no bias))          -> Conv
  y_c = Add(BN(Conv(x, 3x3 pad 1)), x)              -> ConvAdd
  y_d = BN(Conv(x, depthwise 3x3 pad 1, bias))      -> Conv
  c_e = Conv(x, 3x3 pad 1) is a graph output too;
  y_e = BN(c_e)                                     -> kept (Conv + BN)
  y_f = BN(Conv(x, 3x3 pad 1), training_mode = 1)   -> kept
  y_g = BN(Conv(x, w_g)), y_h = BN(Conv(x, w_g))    -> kept: w_g is shared
  18 nodes become 12.

Run with Debian's python3-onnx:  /usr/bin/python3 tests/models/gen_conv_bn_model.py
"""
from model_builder import Graph, float_input

g = Graph(seed=23)
const, node = g.const, g.node


def conv(name, cout, cin, k, bias=True, w=None, **attrs):
    ins = ["x", w or const(name + "_w", (cout, cin, k, k))]
    if bias:
        ins.append(const(name + "_b", (cout,)))
    return node("Conv", ins, name, **attrs)


def bn(name, c, x, **attrs):
    ps = [const(name + "_s", (c,), 0.5, 1.5), const(name + "_o", (c,)), const(name + "_m", (c,)),
          const(name + "_v", (c,), 0.1, 2.0)]
    return node("BatchNormalization", [x] + ps, name, epsilon=1e-3, **attrs)


p1 = dict(pads=[1, 1, 1, 1])
node("Relu", [bn("ba", 5, conv("ca", 5, 4, 3, **p1))], "y_a")
bn("y_b", 6, conv("cb", 6, 4, 1, bias=False, strides=[2, 2]))
node("Add", [bn("bc", 4, conv("cc", 4, 4, 3, bias=False, **p1)), "x"], "y_c")
bn("y_d", 4, conv("cd", 4, 1, 3, group=4, **p1))
bn("y_e", 3, conv("c_e", 3, 4, 3, **p1))
bn("y_f", 3, conv("cf", 3, 4, 3, **p1), training_mode=1)
w_g = const("w_g", (3, 4, 3, 3))
bn("y_g", 3, conv("cg", 3, 4, 3, bias=False, w=w_g, **p1))
bn("y_h", 3, conv("ch", 3, 4, 3, bias=False, w=w_g, **p1))

outs = [float_input(n, ["batch", None, None, None]) for n in ["y_a", "y_b", "y_c", "y_d", "c_e", "y_e", "y_f", "y_g", "y_h"]]
g.save("conv_bn", [float_input("x", ["batch", 4, 6, 7])], outs, "gen_conv_bn_model.py", opset=15)
