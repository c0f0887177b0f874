#!/usr/bin/python3
"""Makes qdynamic.onnx: dynamically quantized MatMuls (DynamicQuantizeLinear ->
MatMulInteger -> Cast -> Mul(x_scale * w_scale) [-> Add bias] [-> Relu]) in
both spellings -- `infera quantize --mode dynamic`'s and ONNX Runtime's
quantize_dynamic's -- which the optimizer's pass (src/graph/passes/qdynamic.c)
turns into QGemm, and a near miss it must keep, for tests/unit/test_qdynamic.c.

  input x [2, 3, 16] (opset 13); xq, xs, xz = DynamicQuantizeLinear(x), read by a, b and d
  y_a = Relu(Add(Mul(Cast(MatMulInteger(xq, Wa int8 [16,24], xz)), Mul(xs, wsa)), ba))
        Infera's spelling, per tensor, bias, Relu                        -> QGemm+Relu
  y_b = Mul(Mul(wsb [8], xs), Cast(MatMulInteger(xq, Wb int8 [16,8], xz, wzb int8 [8])))
        ORT's per-channel spelling, operands swapped, weight zero points  -> QGemm
  y_c = Add(Mul(Cast(MatMulInteger(DynamicQuantizeLinear(y_a), Wc uint8 [24,8], ., wzc 128)), Mul(.)), bc)
        uint8 weights, a second DynamicQuantizeLinear                    -> QGemm
  f_d = Cast(MatMulInteger(dq, Wd int8 [16,8], dz)) is a graph output; y_d = Mul(f_d, Mul(ds, wsd)) -> kept,
        dq, ds, dz = a second DynamicQuantizeLinear(x)                  -> merged into the first
  22 nodes become 9.

Run with Debian's python3-onnx:  /usr/bin/python3 tests/models/gen_qdynamic_model.py
"""
import numpy as np
from onnx import TensorProto, helper

from model_builder import Graph, float_input

g = Graph(seed=28)
rng = g.rng
node = g.node


def ints(name, shape, lo, hi, dtype):
    """An 8-bit initializer uniform in [lo, hi]."""
    g.scalar(name, rng.integers(lo, hi + 1, shape).astype(dtype).tolist(), dtype)
    return name


def dql(x, tag):
    g.nodes.append(helper.make_node("DynamicQuantizeLinear", [x], [f"{tag}_q", f"{tag}_s", f"{tag}_z"]))
    return f"{tag}_q", f"{tag}_s", f"{tag}_z"


xq, xs, xz = dql("x", "x")
# a: Infera's spelling
node("MatMulInteger", [xq, ints("Wa", [16, 24], -127, 127, np.int8), xz], "acc_a")
node("Cast", ["acc_a"], "f_a", to=TensorProto.FLOAT)
node("Mul", [xs, g.scalar("wsa", 0.0123)], "s_a")
node("Mul", ["f_a", "s_a"], "m_a")
node("Add", ["m_a", g.const("ba", [24])], "a_a")
node("Relu", ["a_a"], "y_a")
# b: ORT's per-channel spelling, operands swapped
node("MatMulInteger", [xq, ints("Wb", [16, 8], -127, 127, np.int8), xz, ints("wzb", [8], -3, 3, np.int8)], "acc_b")
node("Cast", ["acc_b"], "f_b", to=TensorProto.FLOAT)
node("Mul", [g.const("wsb", [8], 0.005, 0.02), xs], "s_b")
node("Mul", ["s_b", "f_b"], "y_b")
# c: uint8 weights after a second DynamicQuantizeLinear
cq, cs, cz = dql("y_a", "c")
node("MatMulInteger", [cq, ints("Wc", [24, 8], 0, 255, np.uint8), cz, g.scalar("wzc", 128, np.uint8)], "acc_c")
node("Cast", ["acc_c"], "f_c", to=TensorProto.FLOAT)
node("Mul", [cs, g.scalar("wsc", 0.0071)], "s_c")
node("Mul", ["f_c", "s_c"], "m_c")
node("Add", ["m_c", g.const("bc", [8])], "y_c")
# d: its own DynamicQuantizeLinear of x (Infera's quantizer writes one per MatMul), merged into the first;
# the Cast's output is a graph output -> the chain is kept
dq, _, dz = dql("x", "d")
node("MatMulInteger", [dq, ints("Wd", [16, 8], -127, 127, np.int8), dz], "acc_d")
node("Cast", ["acc_d"], "f_d", to=TensorProto.FLOAT)
node("Mul", ["d_s", g.scalar("wsd", 0.0093)], "s_d")
node("Mul", ["f_d", "s_d"], "y_d")

outs = [("y_a", 24), ("y_b", 8), ("y_c", 8), ("y_d", 8), ("f_d", 8)]
g.save("qdynamic", [float_input("x", [2, 3, 16])],
       [float_input(n, [2, 3, c]) for n, c in outs], "gen_qdynamic_model.py")
