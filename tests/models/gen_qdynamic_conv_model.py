#!/usr/bin/python3
"""Makes qdynamic_conv.onnx: dynamically quantized convolutions
(DynamicQuantizeLinear -> ConvInteger -> Cast -> Mul(x_scale * w_scale) [-> Add bias] [-> Relu]) in both
spellings -- `infera quantize --mode dynamic`'s and ONNX Runtime's quantize_dynamic's -- which the optimizer's
pass (src/graph/passes/qdynamic.c, inf__pass_qdynamic_conv) turns into QConv, and near misses it must keep
whole or in part, for tests/unit/test_qdynamic.c.

  input x [2, 4, 8, 8] (opset 13); xq, xs, xz = DynamicQuantizeLinear(x)
  y_a = Relu(Add(Mul(Cast(ConvInteger(xq, Wa uint8 [8,4,3,3], xz, 128)), Mul(xs, wsa [1,8,1,1])), ba [1,8,1,1]))
        Infera's per-channel spelling, pads 1, bias, Relu                          -> QConv+Relu
  y_b = Add(Mul(s_b, Cast(ConvInteger(xq, Wb int8 [6,4,3,3], xz, 0))), Reshape(bb [6], [1,6,1,1]))
        ORT's spelling: s_b = Mul(xs, wsb) first, operands swapped, the bias a Reshape (a constant once folded),
        stride 2                                                                 -> QConv
  y_c = MaxPool2(Mul(Cast(ConvInteger(cq, Wc int8 [4,8,1,1], cz, wzc int8 3)), Mul(cs, wsc [4,1,1])))
        cq, cs, cz = DynamicQuantizeLinear(y_a); a weight zero point (per tensor: ONNX Runtime's ConvInteger,
        the oracle of tests/quant/test_quantize.sh, takes no other), no bias -> QConv with the pool
  y_e = Relu(Add(Add(Mul(Cast(ConvInteger(eq, We int8 [8,8,3,3], ez)), Mul(es, wse)), be [1,8,1,1]), y_a))
        eq, es, ez = a second DynamicQuantizeLinear(y_a) (merged into c's); a residual join -> QConv + residual
  y_f = Add(Mul(Cast(ConvInteger(xq, Wf int8 [8,4,3,3], xz)), Mul(xs, wsf)), bf [8])
        bias [8] broadcasts along the last axis (W = 8), not the channels: the Add is kept, the rest -> QConv
  y_g = Mul(Cast(ConvInteger(xq, Wg int8 [8,4,3,3], xz)), Mul(xs, wsg [8]))
        a scale [8] (also along W): kept whole
  36 nodes become 12 once optimised.
  qdynamic_conv_input.npy: an x for tests/quant/test_quantize.sh (ONNX Runtime as the oracle of the fused graph).

Run with Debian's python3-onnx:  /usr/bin/python3 tests/models/gen_qdynamic_conv_model.py
"""
import os

import numpy as np
from onnx import TensorProto, helper

from model_builder import Graph, float_input

g = Graph(seed=29)
rng = g.rng
node = g.node


def ints(name, shape, lo, hi, dtype):
    """An 8-bit initializer uniform in [lo, hi]."""
    g.scalar(name, rng.integers(lo, hi + 1, shape).astype(dtype).tolist(), dtype)
    return name


def dql(x, tag):
    g.nodes.append(helper.make_node("DynamicQuantizeLinear", [x], [f"{tag}_q", f"{tag}_s", f"{tag}_z"]))
    return f"{tag}_q", f"{tag}_s", f"{tag}_z"


def conv_int(tag, x, w, xz, wz=None, **attrs):
    ins = [x, w, xz] + ([wz] if wz else [])
    node("ConvInteger", ins, f"acc_{tag}", **attrs)
    return node("Cast", [f"acc_{tag}"], f"f_{tag}", to=TensorProto.FLOAT)


xq, xs, xz = dql("x", "x")
# a: Infera's per-channel spelling
f = conv_int("a", xq, ints("Wa", [8, 4, 3, 3], 0, 255, np.uint8), xz, g.scalar("wza", 128, np.uint8), pads=[1, 1, 1, 1])
node("Mul", [xs, g.const("wsa", [1, 8, 1, 1], 0.005, 0.02)], "s_a")
node("Mul", [f, "s_a"], "m_a")
node("Add", ["m_a", g.const("ba", [1, 8, 1, 1])], "a_a")
node("Relu", ["a_a"], "y_a")
# b: ORT's spelling, scale product first, operands swapped, bias through a Reshape, stride 2
node("Mul", [xs, g.scalar("wsb", 0.0123)], "s_b")
f = conv_int("b", xq, ints("Wb", [6, 4, 3, 3], -127, 127, np.int8), xz, g.scalar("wzb", 0, np.int8),
             pads=[1, 1, 1, 1], strides=[2, 2], kernel_shape=[3, 3])
node("Mul", ["s_b", f], "m_b")
node("Reshape", [g.const("bb", [6]), g.scalar("bb_shape", [1, 6, 1, 1], np.int64)], "bb_r")
node("Add", ["m_b", "bb_r"], "y_b")
# c: a 1x1 conv after a second DynamicQuantizeLinear, a weight zero point, no bias, then MaxPool
cq, cs, cz = dql("y_a", "c")
f = conv_int("c", cq, ints("Wc", [4, 8, 1, 1], -127, 127, np.int8), cz, g.scalar("wzc", 3, np.int8))
node("Mul", [cs, g.const("wsc", [4, 1, 1], 0.005, 0.02)], "s_c")
node("Mul", [f, "s_c"], "m_c")
node("MaxPool", ["m_c"], "y_c", kernel_shape=[2, 2], strides=[2, 2])
# e: its own DynamicQuantizeLinear of y_a (merged into c's), a residual join with y_a
eq, es, ez = dql("y_a", "e")
f = conv_int("e", eq, ints("We", [8, 8, 3, 3], -127, 127, np.int8), ez, pads=[1, 1, 1, 1])
node("Mul", [f, node("Mul", [es, g.scalar("wse", 0.0071)], "s_e")], "m_e")
node("Add", ["m_e", g.const("be", [1, 8, 1, 1])], "a_e")
node("Add", ["a_e", "y_a"], "r_e")
node("Relu", ["r_e"], "y_e")
# f: a bias of [8] adds along the last axis (W = 8), not the channels: that Add stays
f = conv_int("f", xq, ints("Wf", [8, 4, 3, 3], -127, 127, np.int8), xz, pads=[1, 1, 1, 1])
node("Mul", [f, node("Mul", [xs, g.scalar("wsf", 0.0093)], "s_f")], "m_f")
node("Add", ["m_f", g.const("bf", [8])], "y_f")
# g: a scale of [8] (along W too): the chain is kept
f = conv_int("g", xq, ints("Wg", [8, 4, 3, 3], -127, 127, np.int8), xz, pads=[1, 1, 1, 1])
node("Mul", [f, node("Mul", [xs, g.const("wsg", [8], 0.005, 0.02)], "s_g")], "y_g")

outs = [("y_a", [2, 8, 8, 8]), ("y_b", [2, 6, 4, 4]), ("y_c", [2, 4, 4, 4]), ("y_e", [2, 8, 8, 8]),
        ("y_f", [2, 8, 8, 8]), ("y_g", [2, 8, 8, 8])]
g.save("qdynamic_conv", [float_input("x", [2, 4, 8, 8])], [float_input(n, d) for n, d in outs],
       "gen_qdynamic_conv_model.py")
x = np.random.default_rng(291).uniform(-2.0, 3.0, (2, 4, 8, 8)).astype(np.float32)
x[0, 0, 0, 5] = 0.0
np.save(os.path.join(os.path.dirname(os.path.abspath(__file__)), "qdynamic_conv_input.npy"), x)
