#!/usr/bin/python3
"""Makes the models of tests/unit/test_constant_inputs.c: kernels that prepare
constant inputs at load (BatchNormalization's per-channel coefficients, MatMul's
packed weights) must give the bits of the per-run path, and must prepare a
constant reached through a folded node (an Identity) as well as an initializer.

  bn_const.onnx   x2 [N,5] -> BatchNormalization -> y2;  x4 [N,3,4,5] -> BatchNormalization -> y4
                  (scale, B, mean, var are initializers; epsilon 1e-3)
  bn_inputs.onnx  the same, with scale, B, mean, var as graph inputs (s2, b2, m2, v2, s4, b4, m4, v4)
                  Parameters of channel c (C channels): scale = 0.5 + 0.25 c, B = 0.1 c - 0.3,
                  mean = 0.2 c - 0.4, var = 0.3 + 0.5 c  (the test recomputes them).
  pad_zero.onnx   x [2,3,4] -> Pad(pads all 0) -> y1 (a graph output), and -> Pad(0) -> Relu -> y2
                  (a Pad that pads nothing shares its input; PyTorch writes one before AveragePool)
  weights_plain.onnx   x [N,64] -> MatMul(x, W) -> MatMul(., W) -> y        (W [64,64] initializer)
  weights_shared.onnx  x [N,64] -> MatMul(x, W) -> MatMul(., Identity(W)) -> y
                  (PyTorch writes an Identity when layers share equal weights)
Run with Debian's python3-onnx:  /usr/bin/python3 tests/models/gen_constant_inputs_models.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.dirname(os.path.abspath(__file__))


def bn_params(c):
    ch = np.arange(c, dtype=np.float32)
    return [0.5 + 0.25 * ch, 0.1 * ch - 0.3, 0.2 * ch - 0.4, 0.3 + 0.5 * ch]


def save(graph, name):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)], producer_name="infera-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(here, name))


def bn_model(as_inputs):
    inputs = [helper.make_tensor_value_info("x2", TensorProto.FLOAT, ["N", 5]),
              helper.make_tensor_value_info("x4", TensorProto.FLOAT, ["N", 3, 4, 5])]
    inits, nodes = [], []
    for tag, c in (("2", 5), ("4", 3)):
        names = [p + tag for p in ("s", "b", "m", "v")]
        for name, value in zip(names, bn_params(c)):
            if as_inputs:
                inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, [c]))
            else:
                inits.append(numpy_helper.from_array(value.astype(np.float32), name))
        nodes.append(helper.make_node("BatchNormalization", ["x" + tag] + names, ["y" + tag], epsilon=1e-3))
    outputs = [helper.make_tensor_value_info("y2", TensorProto.FLOAT, ["N", 5]),
               helper.make_tensor_value_info("y4", TensorProto.FLOAT, ["N", 3, 4, 5])]
    save(helper.make_graph(nodes, "bn", inputs, outputs, inits), "bn_inputs.onnx" if as_inputs else "bn_const.onnx")


def weights_model(shared):
    w = np.random.RandomState(7).uniform(-0.2, 0.2, (64, 64)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"])]
    second = "W"
    if shared:
        nodes.append(helper.make_node("Identity", ["W"], ["W_copy"]))
        second = "W_copy"
    nodes.append(helper.make_node("MatMul", ["h", second], ["y"]))
    g = helper.make_graph(nodes, "weights", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 64])],
                          [numpy_helper.from_array(w, "W")])
    save(g, "weights_shared.onnx" if shared else "weights_plain.onnx")


def pad_zero_model():
    pads = numpy_helper.from_array(np.zeros(6, dtype=np.int64), "pads")
    nodes = [helper.make_node("Pad", ["x", "pads"], ["y1"]), helper.make_node("Pad", ["x", "pads"], ["p"]),
             helper.make_node("Relu", ["p"], ["y2"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3, 4]) for n in ("y1", "y2")]
    save(helper.make_graph(nodes, "pad_zero", [x], outs, [pads]), "pad_zero.onnx")


pad_zero_model()
bn_model(False)
bn_model(True)
weights_model(False)
weights_model(True)
