#!/usr/bin/python3
"""Makes hf_arch/rmsnorm_edges.onnx: RMSNorm spelled as Hugging Face's Llama
and T5 code exports it (graph/passes/rmsnorm.c fuses these into
RMSNormalization) and near misses it must keep, for
tests/integration/test_hf_arch.sh (outputs against ONNX Runtime, op counts).

  input x [batch, 5, 16] float32 (opset 13: ReduceMean's axes an attribute)
  y_a = w * (x * Reciprocal(Sqrt(ReduceMean(Pow(x, 2), [-1]) + eps)))  dynamo's rsqrt    -> fused
  y_b = (Cast(x) * (1 / Sqrt(eps + ReduceMean(x * x, [-1])))) * w      TorchScript's,
        Cast(x, float) a no-op (export_noops.c), operands swapped                         -> fused
  y_c = w2 * (x / Sqrt(ReduceMean(Pow(x, 2), [-2, -1]) + eps)), w2 [5, 16]  k = 2         -> fused
  y_d = the y_a chain with ReduceMean(..., [1])                                kept (not trailing)
  y_e = the y_a chain with Pow(x, 4)                                           kept (not a square)
  y_f = the y_a chain whose mean of squares is also a graph output (f_ms)      kept (read outside)
  y_g = the y_a chain with the square of another tensor (x2 = x + 1)           kept (not x's)
  y_h = the y_a chain with w3 of rank 2 [5, 16] over k = 1                     kept (w over 2 axes)
  3 RMSNormalization, 5 chains left (5 Sqrt).

Run with Debian's python3-onnx:  /usr/bin/python3 tests/models/gen_rmsnorm_model.py
"""
import os

import numpy as np
from onnx import TensorProto, helper

from model_builder import Graph, float_input

g = Graph(seed=29)
node = g.node
w = g.const("w", [16], 0.5, 1.5)
w2 = g.const("w2", [5, 16], 0.5, 1.5)
w3 = g.const("w3", [5, 16], 0.5, 1.5)
eps = g.scalar("eps", 1e-6)
two = g.scalar("two", 2.0)
four = g.scalar("four", 4.0)
one = g.scalar("one", 1.0)


def rms(tag, x, sq_of=None, exponent=two, axes=(-1,), weight=w):
    """weight * (x * Reciprocal(Sqrt(ReduceMean(Pow(sq_of or x, exponent), axes) + eps)))"""
    p = node("Pow", [sq_of or x, exponent], tag + "_p")
    m = node("ReduceMean", [p], tag + "_ms", axes=list(axes), keepdims=1)
    r = node("Reciprocal", [node("Sqrt", [node("Add", [m, eps], tag + "_e")], tag + "_s")], tag + "_r")
    return node("Mul", [weight, node("Mul", [x, r], tag + "_n")], "y_" + tag)


rms("a", "x")
xc = node("Cast", ["x"], "b_x", to=TensorProto.FLOAT)
m_b = node("ReduceMean", [node("Mul", [xc, xc], "b_q")], "b_ms", axes=[-1], keepdims=1)
inv_b = node("Div", [one, node("Sqrt", [node("Add", [eps, m_b], "b_e")], "b_s")], "b_r")
node("Mul", [node("Mul", [xc, inv_b], "b_n"), w], "y_b")
m_c = node("ReduceMean", [node("Pow", ["x", two], "c_p")], "c_ms", axes=[-2, -1], keepdims=1)
node("Mul", [w2, node("Div", ["x", node("Sqrt", [node("Add", [m_c, eps], "c_e")], "c_s")], "c_n")], "y_c")
rms("d", "x", axes=(1,))
rms("e", "x", exponent=four)
rms("f", "x")
rms("g", "x", sq_of=node("Add", ["x", one], "x2"))
rms("h", "x", weight=w3)

outs = [float_input("y_" + t, [None, 5, 16]) for t in "abcdefgh"] + [float_input("f_ms", [None, 5, 1])]
g.save("hf_arch/rmsnorm_edges", [float_input("x", ["batch", 5, 16])], outs, "gen_rmsnorm_model.py")
rng = np.random.default_rng(1)
np.save(os.path.join(os.path.dirname(os.path.abspath(__file__)), "hf_arch", "rmsnorm_x.npy"),
        rng.standard_normal((3, 5, 16)).astype(np.float32))
