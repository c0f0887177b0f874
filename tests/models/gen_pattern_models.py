#!/usr/bin/python3
"""Makes patterns.onnx: the decomposed chains the optimizer's pattern passes
(src/graph/passes/) fuse, in the variants exporters write, plus chains that
must stay as they are, for tests/unit/test_session.c (pattern_passes_*).

  input x [2, 3, 16] (opset 13)
  ln_a  = LayerNorm as bench/gen_bench_models.py's BERT exports it:
          ReduceMean, Sub, Pow(2), ReduceMean, Add(eps), Sqrt, Div,
          Mul(gamma, .), Add(., beta)                          -> LayerNormalization
  ln_b  = the same with Mul(d, d) for Pow, operands swapped, axes [-2, -1],
          no beta                                              -> LayerNormalization
  ln_c  = like ln_a, but the variance is also a graph output   -> kept (9 nodes)
  g_a   = Mul(Mul(x, Add(Erf(Div(x, sqrt2)), 1)), 0.5)        -> Gelu
  g_b   = Mul(Mul(x, 0.5), Add(1, Erf(Mul(x, 1/sqrt2))))     -> Gelu
  g_c   = Mul(x, Mul(Add(Erf(Div(x, sqrt2)), 1), 0.5))       -> Gelu
  g_d   = like g_a with Div(x, 1.5)                            -> kept (5 nodes)
  p2    = Pow(Sub(x, 0.25), 2)                                 -> Mul(s, s)
  p3    = Pow(x, 3)                                            -> kept

Run with Debian's python3-onnx:  /usr/bin/python3 tests/models/gen_pattern_models.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(7)
nodes, inits, outputs = [], [], []


def const(name, value):
    inits.append(numpy_helper.from_array(np.asarray(value, dtype=np.float32), name))
    return name


def node(op, ins, out, **attrs):
    nodes.append(helper.make_node(op, ins, [out], **attrs))
    return out


def layernorm(p, x, axes, square_by_mul=False, swap=False, beta=True, var_out=False):
    shape = [3, 16] if len(axes) == 2 else [16]
    m = node("ReduceMean", [x], p + "m", axes=axes, keepdims=1)
    d = node("Sub", [x, m], p + "d")
    q = node("Mul", [d, d], p + "q") if square_by_mul else node("Pow", [d, const(p + "two", 2.0)], p + "q")
    v = node("ReduceMean", [q], p + "v", axes=axes, keepdims=1)
    if var_out:
        outputs.append(helper.make_tensor_value_info(v, TensorProto.FLOAT, [2, 3, 1]))
    eps = const(p + "eps", 1e-5)
    e = node("Add", [eps, v] if swap else [v, eps], p + "e")
    s = node("Sqrt", [e], p + "s")
    n = node("Div", [d, s], p + "n")
    gamma = const(p + "gamma", rng.uniform(0.5, 1.5, shape))
    g = node("Mul", [n, gamma] if swap else [gamma, n], p + "g")
    if not beta:
        return g
    return node("Add", [g, const(p + "beta", rng.uniform(-1, 1, shape))], p + "y")


def erf_term(p, x, by_mul=False, one_first=False, divisor=1.4142135381698608):
    u = (node("Mul", [x, const(p + "c", 1 / np.sqrt(2))], p + "u") if by_mul
         else node("Div", [x, const(p + "c", divisor)], p + "u"))
    e = node("Erf", [u], p + "erf")
    one = const(p + "one", 1.0)
    return node("Add", [one, e] if one_first else [e, one], p + "t")


x = "x"
results = [
    layernorm("ln_a_", x, [-1]),
    layernorm("ln_b_", x, [-2, -1], square_by_mul=True, swap=True, beta=False),
    layernorm("ln_c_", x, [-1], var_out=True),
]
t = erf_term("g_a_", x)
results.append(node("Mul", [node("Mul", [x, t], "g_a_xt"), const("g_a_half", 0.5)], "g_a_y"))
t = erf_term("g_b_", x, by_mul=True, one_first=True)
results.append(node("Mul", [node("Mul", [x, const("g_b_half", 0.5)], "g_b_hx"), t], "g_b_y"))
t = erf_term("g_c_", x)
results.append(node("Mul", [x, node("Mul", [t, const("g_c_half", 0.5)], "g_c_th")], "g_c_y"))
t = erf_term("g_d_", x, divisor=1.5)
results.append(node("Mul", [node("Mul", [x, t], "g_d_xt"), const("g_d_half", 0.5)], "g_d_y"))
s = node("Sub", [x, const("p2_quarter", 0.25)], "p2_s")
results.append(node("Pow", [s, const("p2_two", 2.0)], "p2_y"))
results.append(node("Pow", [x, const("p3_three", 3.0)], "p3_y"))

outputs = [helper.make_tensor_value_info(r, TensorProto.FLOAT, [2, 3, 16]) for r in results] + outputs
graph = helper.make_graph(nodes, "patterns", [helper.make_tensor_value_info(x, TensorProto.FLOAT, [2, 3, 16])],
                          outputs, initializer=inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(model)
onnx.save(model, os.path.join(here, "patterns.onnx"))
print("patterns.onnx:", len(nodes), "nodes")
