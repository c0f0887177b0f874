#!/usr/bin/python3
"""Makes pow_int.onnx: float32 Pow with the exponents the Pow kernel computes
by multiplication (ops/ref/binary.c, pow_int_range) and one it does not, for
tests/kernels/test_pow_int.c (loaded with no_optimize: Pow(x, 2) stays a Pow).

  input x [n] float32 (opset 13)
  y2 = Pow(x, 2.0)   y3 = Pow(x, 3.0)   y4 = Pow(x, 4)  (int64 exponent)
  y5 = Pow(x, 3.5)   (the general pow() path)
  ye = Pow(x, e), e a graph input (float32 [1]): the exponent known only at run time

Run with Debian's python3-onnx:  /usr/bin/python3 tests/models/gen_pow_int_model.py
"""
import numpy as np

from model_builder import Graph, float_input

g = Graph(seed=0)
g.node("Pow", ["x", g.scalar("two", 2.0)], "y2")
g.node("Pow", ["x", g.scalar("three", 3.0)], "y3")
g.node("Pow", ["x", g.scalar("four", 4, dtype=np.int64)], "y4")
g.node("Pow", ["x", g.scalar("three_half", 3.5)], "y5")
g.node("Pow", ["x", "e"], "ye")
g.save("pow_int", [float_input("x", ["n"]), float_input("e", [1])],
       [float_input(y, ["n"]) for y in ("y2", "y3", "y4", "y5", "ye")], "gen_pow_int_model.py")
