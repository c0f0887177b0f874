#!/usr/bin/python3
"""Makes tests/models/subbatch/*.onnx: small graphs for the sub-batch
proof (src/graph/subbatch.c), for tests/unit/test_subbatch.c.

  sep_*   batch-separable: every node keeps the rows of axis 0 apart; the
          test runs them split and whole and compares the bits.
  mix_*   not separable: one node mixes rows (or cannot be proven not to);
          the session must run their batches whole.

Inputs are x float32 [batch, ...] (opset 13 unless noted).

Run with Debian's python3-onnx:  /usr/bin/python3 tests/models/gen_subbatch_models.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "subbatch")
rng = np.random.default_rng(23)


def save(name, nodes, inits, in_shape, out_names, opset=13):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)
    outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in out_names]
    g = helper.make_graph(nodes, name, [x], outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="gen_subbatch_models")
    onnx.save(m, os.path.join(here, name + ".onnx"))


def f32(name, shape):
    return numpy_helper.from_array(rng.uniform(-0.5, 0.5, shape).astype(np.float32), name)


def i64(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


N = helper.make_node

# element-wise with broadcast constants, softmax, transpose, reshape keeping dim 0, Gemm, Relu
save("sep_elementwise", [
    N("Add", ["x", "c8"], ["a"]), N("Mul", ["a", "c138"], ["m"]), N("Softmax", ["m"], ["s"], axis=-1),
    N("Transpose", ["s"], ["t"], perm=[0, 2, 1]), N("Reshape", ["t", "shape"], ["r"]),
    N("Gemm", ["r", "w", "b"], ["g"], transB=1), N("Relu", ["g"], ["y"]),
], [f32("c8", [8]), f32("c138", [1, 3, 8]), i64("shape", [0, -1]), f32("w", [5, 24]), f32("b", [5])],
    ["batch", 3, 8], ["y", "s"])

# reductions off axis 0, unsqueeze/squeeze, concat, layer norm (opset 17), flatten, matmul
save("sep_reduce_norm", [
    N("ReduceMean", ["x"], ["r"], axes=[1], keepdims=0), N("Unsqueeze", ["r", "ax1"], ["u"]),
    N("Concat", ["u", "u"], ["c"], axis=1), N("LayerNormalization", ["x", "g", "bt"], ["ln"], axis=-1),
    N("Concat", ["ln", "c"], ["cat"], axis=1), N("Flatten", ["cat"], ["f"], axis=1),
    N("MatMul", ["f", "w"], ["mm"]), N("Squeeze", ["u", "ax1"], ["sq"]),
], [i64("ax1", [1]), f32("g", [8]), f32("bt", [8]), f32("w", [40, 6])],
    ["batch", 3, 8], ["mm", "sq"], opset=17)

# batched matmul of two batched operands (attention scores), Conv + pools
save("sep_batched_matmul", [
    N("Transpose", ["x"], ["xt"], perm=[0, 2, 1]), N("MatMul", ["x", "xt"], ["s"]),
    N("Softmax", ["s"], ["p"], axis=2), N("MatMul", ["p", "x"], ["y"]),
], [], ["batch", 3, 8], ["y"])

save("sep_conv_pool", [
    N("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), N("Relu", ["c"], ["r"]),
    N("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
    N("AveragePool", ["p"], ["a"], kernel_shape=[2, 2], pads=[0, 0, 1, 1]),
    N("GlobalAveragePool", ["a"], ["y"]),
], [f32("w", [6, 2, 3, 3]), f32("b", [6])], ["batch", 2, 7, 9], ["y", "p"])

# not separable
save("mix_reshape_dim0", [N("Reshape", ["x", "shape"], ["y"])], [i64("shape", [-1, 8])], ["batch", 3, 8], ["y"])
save("mix_softmax_axis0", [N("Softmax", ["x"], ["y"], axis=0)], [], ["batch", 8], ["y"])
save("mix_transpose", [N("Transpose", ["x"], ["y"], perm=[1, 0, 2])], [], ["batch", 3, 8], ["y"])
save("mix_gemm_trans_a", [N("Gemm", ["x", "w"], ["y"], transA=1)], [f32("w", [3, 5])], ["batch", 3], ["y"])
save("mix_add_rowwise", [N("Add", ["x", "c"], ["y"])], [f32("c", [3, 8])], [3, 8], ["y"])
save("mix_reduce_all", [N("ReduceSum", ["x"], ["y"], keepdims=1)], [], ["batch", 8], ["y"])
save("mix_flatten_axis2", [N("Flatten", ["x"], ["y"], axis=2)], [], ["batch", 3, 8], ["y"])
save("mix_shape", [N("Shape", ["x"], ["s"]), N("Cast", ["s"], ["y"], to=TensorProto.FLOAT)], [], ["batch", 8], ["y"])
save("mix_maxpool_indices", [
    helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2]),
    N("Cast", ["i"], ["yi"], to=TensorProto.FLOAT),
], [], ["batch", 2, 8], ["y", "yi"])

# BERT's head split as PyTorch exports it: the batch size read with
# Shape -> Gather(0) -> Unsqueeze, concatenated with constants, reshaped to.
BATCH_SIZE = [N("Shape", ["x"], ["s"]), N("Gather", ["s", "zero"], ["b"]), N("Unsqueeze", ["b", "ax0"], ["u"])]
BATCH_INITS = [i64("zero", 0), i64("ax0", [0])]
save("sep_reshape_batch_shape", BATCH_SIZE + [
    N("Concat", ["u", "heads"], ["c1"], axis=0), N("Reshape", ["x", "c1"], ["r"]),
    N("Transpose", ["r"], ["t"], perm=[0, 2, 1, 3]),
    N("Concat", ["u", "rest"], ["c2"], axis=0), N("Reshape", ["t", "c2"], ["y"]),
], BATCH_INITS + [i64("heads", [6, 2, 4]), i64("rest", [-1, 4])], ["batch", 6, 8], ["y"])
save("mix_batch_size_value", BATCH_SIZE + [
    N("Cast", ["u"], ["f"], to=TensorProto.FLOAT), N("Add", ["x", "f"], ["y"]),
], BATCH_INITS, ["batch", 8], ["y"])
save("mix_reshape_batch_not_first", BATCH_SIZE + [
    N("Concat", ["first", "u", "last"], ["c"], axis=0), N("Reshape", ["x", "c"], ["y"]),
], BATCH_INITS + [i64("first", [2]), i64("last", [-1])], ["batch", 4, 8], ["y"])

# Pad (reflect on the last axes, constant elsewhere) that leaves axis 0 alone; and one that pads the batch
save("sep_pad", [
    N("Pad", ["x", "pads_r"], ["p"], mode="reflect"), N("Pad", ["p", "pads_c", "cval"], ["y"]),
], [i64("pads_r", [0, 0, 1, 2, 0, 0, 2, 1]), i64("pads_c", [0, 1, 0, 0, 0, 2, 0, 0]),
    numpy_helper.from_array(np.float32(0.5), "cval")], ["batch", 3, 5, 6], ["y"])
save("mix_pad_batch", [N("Pad", ["x", "pads"], ["y"])], [i64("pads", [1, 0, 0, 0])], ["batch", 8], ["y"])

# QuantizeLinear (graph/passes/qdq.c keeps one for the products it feeds): one scale, or scales along axis 1
u8 = numpy_helper.from_array(np.uint8(128), "z")
save("sep_quantize", [
    N("QuantizeLinear", ["x", "s", "z"], ["q"]), N("Cast", ["q"], ["y"], to=TensorProto.FLOAT),
    N("QuantizeLinear", ["x", "s3"], ["q3"], axis=1), N("Cast", ["q3"], ["y3"], to=TensorProto.FLOAT),
], [numpy_helper.from_array(np.float32(0.01), "s"), u8,
    numpy_helper.from_array(np.array([0.01, 0.02, 0.005], np.float32), "s3")], ["batch", 3, 8], ["y", "y3"])
save("mix_quantize_axis0", [
    N("QuantizeLinear", ["x", "s3"], ["q"], axis=0), N("Cast", ["q"], ["y"], to=TensorProto.FLOAT),
], [numpy_helper.from_array(np.array([0.01, 0.02, 0.005], np.float32), "s3")], [3, 8], ["y"])
