#!/usr/bin/env python3
"""Generates Infera's conformance suite for ONNX opsets 18-26 (tests/conformance/data/opset18plus/).

Each case is a small model for one (operator, schema version) -- or an unchanged operator imported at a
newer opset -- with seeded inputs; ONNX Runtime computes the expected outputs, so every model in the
suite also runs in ORT and the suite cannot drift from its oracle.  The layout is the ONNX backend
tests' (test_<name>/model.onnx, test_data_set_0/input_K.pb, output_K.pb), run by
`infera conformance --suite opset18plus`.

It also writes tests/conformance/data/opset18plus_errors/<name>.onnx: models ORT refuses or that break
a rule of the new versions, with the error text Infera must give in <name>.expect (checked by
tests/conformance/test_opset18plus_errors.sh).

Pinned oracle (not needed by the build or CI, which use the committed files):
    tests/conformance/setup_oracle.sh /tmp/opset-venv     # onnx==1.23.2 onnxruntime==1.30.0
    /tmp/opset-venv/bin/python tests/conformance/gen_opset18plus.py
The PyPI onnx wheel ships no backend node test data (onnx/backend/test/data/node is absent from 1.23.2), so this
suite is the oracle for opsets 18-26.
"""
import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "data", "opset18plus")
ERR = os.path.join(HERE, "data", "opset18plus_errors")
IR_VERSION = 10  # what ORT 1.30 reads for every opset up to 26

rng = np.random.default_rng(18)


def rand(*shape, dtype=np.float32, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def ints(*shape, lo=0, hi=10, dtype=np.int64):
    return rng.integers(lo, hi, size=shape).astype(dtype)


class MapInput:
    """A map input (ai.onnx.ml CastMap, DictVectorizer): a dict, its key type and its value type."""

    def __init__(self, d, key_type, value_dtype):
        self.d, self.key_type, self.value_dtype = d, key_type, np.dtype(value_dtype)

    def type_proto(self):
        value = helper.make_tensor_type_proto(helper.np_dtype_to_tensor_dtype(self.value_dtype), None)
        return helper.make_map_type_proto(self.key_type, value)

    def to_proto(self, name):
        """A MapProto as onnx.numpy_helper.from_dict writes one (a one-element tensor per value), with the
        value type given (from_dict would make Python floats double)."""
        m = onnx.MapProto(name=name, key_type=self.key_type)
        if self.key_type == TensorProto.STRING:
            m.string_keys.extend(k.encode() for k in self.d)
        else:
            m.keys.extend(self.d)
        m.values.elem_type = onnx.SequenceProto.TENSOR
        for v in self.d.values():
            m.values.tensor_values.append(numpy_helper.from_array(np.array(v, dtype=self.value_dtype)))
        return m


def value_info(name, a):
    if isinstance(a, MapInput):
        return helper.make_value_info(name, a.type_proto())
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)


def make_model(nodes, inputs, outputs, opset, ml_opset=None, initializers=()):
    """inputs: list of (name, array or MapInput); outputs: names (types filled from ORT's run)."""
    vin = [value_info(n, a) for n, a in inputs]
    vout = [onnx.ValueInfoProto(name=n) for n in outputs]
    graph = helper.make_graph(nodes, "g", vin, vout, initializer=list(initializers))
    imports = [helper.make_opsetid("", opset)]
    if ml_opset:
        imports.append(helper.make_opsetid("ai.onnx.ml", ml_opset))
    model = helper.make_model(graph, opset_imports=imports, ir_version=IR_VERSION, producer_name="gen_opset18plus")
    return model


def run_ort(model, inputs):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, {n: a.d if isinstance(a, MapInput) else a for n, a in inputs})


cases = []


def case(name, nodes, inputs, outputs, opset, ml_opset=None, initializers=()):
    cases.append((name, nodes, inputs, outputs, opset, ml_opset, initializers))


def single(name, op, opset, inputs, n_out=1, **attrs):
    """One node; inputs: list of (name, array) -- an empty name is an omitted input."""
    in_names = [n for n, _ in inputs]
    outs = ["y%d" % i for i in range(n_out)]
    node = helper.make_node(op, in_names, outs, **attrs)
    case(name, [node], [(n, a) for n, a in inputs if n], outs, opset)


def write_case(name, model, inputs, outputs):
    d = os.path.join(OUT, "test_" + name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    for i, (n, a) in enumerate(inputs):
        with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % i), "wb") as f:
            f.write((a.to_proto(n) if isinstance(a, MapInput) else numpy_helper.from_array(a, n)).SerializeToString())
    for i, (n, a) in enumerate(outputs):
        with open(os.path.join(d, "test_data_set_0", "output_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(a), n).SerializeToString())


# ---------------------------------------------------------------- the cases

def unchanged_operators():
    """An MLP-ish chain of operators whose schemas did not change after 17, at 17 and at every newer opset:
    same model, same outputs (ORT's)."""
    x = rand(3, 4)
    w = numpy_helper.from_array(rand(4, 5), "w")
    b = numpy_helper.from_array(rand(5), "b")
    shape = numpy_helper.from_array(np.array([5, 3], np.int64), "shape")
    idx = numpy_helper.from_array(np.array([2, 0], np.int64), "idx")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"]),
        helper.make_node("Add", ["m", "b"], ["a"]),
        helper.make_node("Relu", ["a"], ["r"]),
        helper.make_node("Softmax", ["r"], ["s"], axis=-1),
        helper.make_node("Transpose", ["s"], ["t"], perm=[1, 0]),
        helper.make_node("Reshape", ["t", "shape"], ["rs"]),
        helper.make_node("Gather", ["rs", "idx"], ["g"], axis=0),
        helper.make_node("Concat", ["g", "g"], ["c"], axis=1),
        helper.make_node("Mul", ["c", "c"], ["y0"]),
        helper.make_node("ReduceSum", ["c"], ["y1"], keepdims=0),
        helper.make_node("Sigmoid", ["a"], ["sg"]),
        helper.make_node("Tanh", ["sg"], ["y2"]),
    ]
    for opset in range(17, 27):
        case("unchanged_chain_opset%d" % opset, nodes, [("x", x)], ["y0", "y1", "y2"], opset,
             initializers=[w, b, shape, idx])


def reduce_18():
    x = rand(2, 3, 4)
    for op in ["ReduceL1", "ReduceL2", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd",
               "ReduceSumSquare"]:
        low = op.lower()[6:]
        single("%s_axes_input_opset18" % low, op, 18, [("x", x), ("axes", np.array([1], np.int64))], keepdims=1)
        single("%s_axes_neg_nokeep_opset18" % low, op, 18, [("x", x), ("axes", np.array([-1, 0], np.int64))],
               keepdims=0)
        single("%s_no_axes_opset18" % low, op, 18, [("x", x)], keepdims=0)
        single("%s_empty_axes_noop_opset18" % low, op, 18, [("x", x), ("axes", np.zeros(0, np.int64))],
               noop_with_empty_axes=1)
    single("logsum_axes_input_opset18", "ReduceLogSum", 18, [("x", np.abs(x) + 0.5), ("axes", np.array([2], np.int64))])
    single("reducemax_int_opset20", "ReduceMax", 20, [("x", ints(3, 4, lo=-50, hi=50)), ("axes", np.array([1], np.int64))])
    single("reducemin_opset20", "ReduceMin", 20, [("x", x), ("axes", np.array([0, 2], np.int64))], keepdims=0)
    single("reducesum_noop_opset18", "ReduceSum", 18, [("x", x), ("axes", np.zeros(0, np.int64))], noop_with_empty_axes=1)
    single("reducemean_opset26", "ReduceMean", 26, [("x", x), ("axes", np.array([1, 2], np.int64))])


def split_18():
    x = rand(5, 6)
    single("split_num_outputs_even_opset18", "Split", 18, [("x", x)], n_out=3, axis=1, num_outputs=3)
    single("split_num_outputs_uneven_opset18", "Split", 18, [("x", x)], n_out=3, axis=0, num_outputs=3)
    single("split_input_opset18", "Split", 18, [("x", x), ("split", np.array([1, 5], np.int64))], n_out=2, axis=1)
    single("split_num_outputs_opset24", "Split", 24, [("x", x)], n_out=2, axis=-1, num_outputs=2)


def pad_18_19():
    x = rand(3, 4)
    pads = np.array([1, 2, 2, 1], np.int64)
    single("pad_axes_opset18", "Pad", 18, [("x", x), ("pads", np.array([1, 3], np.int64)), ("v", np.array(0.5, np.float32)),
                                             ("axes", np.array([1], np.int64))], mode="constant")
    single("pad_axes_negative_opset18", "Pad", 18, [("x", x), ("pads", np.array([2, 0], np.int64)), ("", None),
                                                      ("axes", np.array([-2], np.int64))], mode="edge")
    single("pad_wrap_opset19", "Pad", 19, [("x", x), ("pads", pads)], mode="wrap")
    # Not covered, for want of an oracle: wrap pads wider than the axis (onnxruntime 1.30 differs from the
    # spec's numpy wrap, which Infera follows) and wrap with negative pads (onnxruntime 1.30 outputs
    # uninitialised memory there; Infera crops first, then wraps over what is kept).
    single("pad_reflect_opset21", "Pad", 21, [("x", x), ("pads", pads)], mode="reflect")
    single("pad_wrap_axes_opset23", "Pad", 23, [("x", x), ("pads", np.array([1, 2], np.int64)), ("", None),
                                                  ("axes", np.array([1], np.int64))], mode="wrap")


def scatter_18():
    data = rand(3, 4)
    idx = np.array([[0, 1], [2, 2], [1, 0]], np.int64)
    upd = rand(3, 2)
    for red in ["max", "min"]:
        single("scatterelements_%s_opset18" % red, "ScatterElements", 18, [("d", data), ("i", idx), ("u", upd)],
               axis=1, reduction=red)
        single("scatternd_%s_opset18" % red, "ScatterND", 18,
               [("d", data), ("i", np.array([[0], [2], [0]], np.int64)), ("u", rand(3, 4))], reduction=red)


def pools():
    x = rand(1, 2, 7, 7)
    single("averagepool_dilations_opset19", "AveragePool", 19, [("x", x)], kernel_shape=[2, 2], dilations=[2, 2])
    single("averagepool_dilations_pads_opset19", "AveragePool", 19, [("x", x)], kernel_shape=[3, 2], dilations=[2, 3],
           strides=[2, 1], pads=[1, 1, 1, 1], count_include_pad=0)
    single("averagepool_opset22", "AveragePool", 22, [("x", x)], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    single("maxpool_opset22", "MaxPool", 22, [("x", x)], kernel_shape=[2, 2], dilations=[2, 1])
    single("globalaveragepool_opset22", "GlobalAveragePool", 22, [("x", x)])
    single("globalmaxpool_opset22", "GlobalMaxPool", 22, [("x", x)])
    single("conv_opset22", "Conv", 22, [("x", x), ("w", rand(3, 2, 3, 3)), ("b", rand(3))], pads=[1, 1, 1, 1])
    single("convtranspose_opset22", "ConvTranspose", 22, [("x", x), ("w", rand(2, 3, 2, 2))], strides=[2, 2])
    single("instancenorm_opset22", "InstanceNormalization", 22, [("x", x), ("s", rand(2)), ("b", rand(2))])


def casts():
    x = np.array([[-3.7, -0.5, 0.5, 1.5], [2.5, 300.0, -300.0, 7.0]], np.float32)
    single("cast_saturate_to_int32_opset19", "Cast", 19, [("x", x)], to=TensorProto.INT32, saturate=1)
    single("cast_to_uint8_opset21", "Cast", 21, [("x", np.abs(x) % 200)], to=TensorProto.UINT8)
    single("cast_to_float16_opset23", "Cast", 23, [("x", x)], to=TensorProto.FLOAT16)
    single("cast_to_double_opset24", "Cast", 24, [("x", x)], to=TensorProto.DOUBLE)
    single("cast_int_to_float_opset25", "Cast", 25, [("x", ints(2, 3, lo=-9, hi=9))], to=TensorProto.FLOAT)
    single("castlike_opset19", "CastLike", 19, [("x", x), ("t", np.zeros(1, np.int64))])
    single("castlike_opset25", "CastLike", 25, [("x", ints(4)), ("t", np.zeros(1, np.float64))])


def misc_types():
    x = np.array([[1.0, np.inf, -np.inf, np.nan], [0.0, -2.0, 3.0, np.nan]], np.float32)
    single("isinf_opset20", "IsInf", 20, [("x", x)])
    single("isinf_negative_only_opset20", "IsInf", 20, [("x", x)], detect_positive=0)
    single("isnan_opset20", "IsNaN", 20, [("x", x)])
    single("isnan_float16_opset20", "IsNaN", 20, [("x", x.astype(np.float16))])
    single("constantofshape_opset20", "ConstantOfShape", 20, [("s", np.array([2, 3], np.int64))],
           value=numpy_helper.from_array(np.array([1.5], np.float32)))
    single("constantofshape_int_opset21", "ConstantOfShape", 21, [("s", np.array([3], np.int64))],
           value=numpy_helper.from_array(np.array([7], np.int32)))
    single("equal_string_opset19", "Equal", 19, [("a", np.array(["a", "bc", "", "d"], dtype=object)),
                                                  ("b", np.array(["a", "b", "", "e"], dtype=object))])
    single("equal_string_broadcast_opset19", "Equal", 19, [("a", np.array([["x", "y"], ["y", "x"]], dtype=object)),
                                                            ("b", np.array(["x"], dtype=object))])
    y = rand(2, 3, 4)
    single("shape_start_end_opset21", "Shape", 21, [("x", y)], start=1, end=-1)
    single("size_opset23", "Size", 23, [("x", y)])
    single("reshape_opset25", "Reshape", 25, [("x", y), ("s", np.array([0, -1], np.int64))])
    single("flatten_opset24", "Flatten", 24, [("x", y)], axis=2)
    single("squeeze_opset21", "Squeeze", 21, [("x", rand(1, 3, 1)), ("a", np.array([0], np.int64))])
    single("unsqueeze_opset23", "Unsqueeze", 23, [("x", rand(3)), ("a", np.array([0, 2], np.int64))])
    single("transpose_opset25", "Transpose", 25, [("x", y)], perm=[2, 0, 1])
    single("identity_opset25", "Identity", 25, [("x", y)])
    single("topk_opset24", "TopK", 24, [("x", y), ("k", np.array([2], np.int64))], n_out=2, axis=1, largest=0)
    for op in ["Acos", "Asin", "Atan"]:
        single("%s_opset22" % op.lower(), op, 22, [("x", rand(5, lo=-0.9, hi=0.9))])
    for op in ["Cos", "Sin", "Tan", "Cosh", "Sinh", "Asinh", "Elu", "Selu", "Softplus", "Softsign", "HardSigmoid",
               "HardSwish", "Round", "ThresholdedRelu"]:
        single("%s_opset22" % op.lower(), op, 22, [("x", rand(2, 5))])
    single("atanh_opset22", "Atanh", 22, [("x", rand(5, lo=-0.9, hi=0.9))])
    single("acosh_opset22", "Acosh", 22, [("x", rand(5, lo=1.0, hi=4.0))])
    single("lpnormalization_opset22", "LpNormalization", 22, [("x", rand(3, 4))], p=2, axis=1)
    single("eyelike_opset22", "EyeLike", 22, [("x", rand(3, 4))], k=1)
    single("det_opset22", "Det", 22, [("x", rand(2, 3, 3))])
    single("dropout_opset22", "Dropout", 22, [("x", rand(2, 3))])


def gridsample_20():
    # float64: cubic weights make values near 0 whose float32 rounding in ORT exceeds the relative tolerance
    x = rand(1, 2, 4, 5, dtype=np.float64)
    g = rand(1, 3, 3, 2, lo=-1.1, hi=1.1, dtype=np.float64)
    for mode in ["linear", "nearest", "cubic"]:
        for pad in ["zeros", "border", "reflection"]:
            single("gridsample_%s_%s_opset20" % (mode, pad), "GridSample", 20, [("x", x), ("g", g)], mode=mode,
                   padding_mode=pad, align_corners=1 if pad == "border" else 0)
    single("gridsample_default_opset22", "GridSample", 22, [("x", x), ("g", g)])


def quantize_21():
    x = rand(2, 3, 4)
    single("quantizelinear_output_dtype_int8_opset21", "QuantizeLinear", 21, [("x", x), ("s", np.array(0.05, np.float32))],
           output_dtype=TensorProto.INT8)
    single("quantizelinear_per_axis_opset21", "QuantizeLinear", 21,
           [("x", x), ("s", np.array([0.02, 0.05, 0.1], np.float32)), ("z", np.array([0, 10, -5], np.int8))], axis=1)
    single("dequantizelinear_per_axis_opset21", "DequantizeLinear", 21,
           [("x", ints(2, 3, 4, lo=0, hi=255, dtype=np.uint8)), ("s", np.array([0.1, 0.2, 0.3, 0.4], np.float32)),
            ("z", np.array([1, 2, 3, 128], np.uint8))], axis=-1)
    single("dequantizelinear_opset23", "DequantizeLinear", 23,
           [("x", ints(2, 3, lo=-128, hi=127, dtype=np.int8)), ("s", np.array(0.5, np.float32))])
    single("quantizelinear_blocked_opset21", "QuantizeLinear", 21,
           [("x", rand(2, 5, 3)), ("s", rand(2, 3, 3, lo=0.01, hi=0.1)), ("z", ints(2, 3, 3, lo=-20, hi=20, dtype=np.int8))],
           axis=1, block_size=2)
    single("dequantizelinear_blocked_opset21", "DequantizeLinear", 21,
           [("x", ints(4, 6, hi=255, dtype=np.uint8)), ("s", rand(4, 2, lo=0.01, hi=0.1))], axis=-1, block_size=3)
    single("quantizelinear_int16_opset21", "QuantizeLinear", 21,
           [("x", rand(3, 4, lo=-100, hi=100)), ("s", np.array(0.002, np.float32)), ("z", np.array(-7, np.int16))])
    single("quantizelinear_uint16_output_dtype_opset21", "QuantizeLinear", 21,
           [("x", rand(3, 4, lo=0, hi=100)), ("s", np.array(0.002, np.float32))], output_dtype=TensorProto.UINT16)
    single("dequantizelinear_int16_per_axis_opset21", "DequantizeLinear", 21,
           [("x", ints(3, 4, lo=-30000, hi=30000, dtype=np.int16)), ("s", rand(3, lo=0.001, hi=0.01)),
            ("z", np.array([0, 5, -5], np.int16))], axis=0)
    single("quantizelinear_opset25", "QuantizeLinear", 25, [("x", x), ("s", np.array(0.05, np.float32)),
                                                             ("z", np.array(128, np.uint8))])


def rnn_22():
    x = rand(4, 2, 3)
    single("lstm_opset22", "LSTM", 22, [("x", x), ("w", rand(1, 16, 3)), ("r", rand(1, 16, 4))], n_out=3, hidden_size=4)
    single("gru_opset22", "GRU", 22, [("x", x), ("w", rand(1, 12, 3)), ("r", rand(1, 12, 4))], n_out=2, hidden_size=4)


def new_operators():
    a, b = ints(3, 4, lo=-100, hi=100, dtype=np.int32), ints(4, lo=-100, hi=100, dtype=np.int32)
    for op in ["BitwiseAnd", "BitwiseOr", "BitwiseXor"]:
        single("%s_int32_broadcast_opset18" % op.lower(), op, 18, [("a", a), ("b", b)])
        single("%s_uint8_opset18" % op.lower(), op, 18, [("a", ints(5, hi=256, dtype=np.uint8)),
                                                        ("b", ints(5, hi=256, dtype=np.uint8))])
    single("bitwisenot_int64_opset18", "BitwiseNot", 18, [("a", ints(2, 3, lo=-1000, hi=1000))])
    single("bitwisenot_uint16_opset18", "BitwiseNot", 18, [("a", ints(6, hi=65535, dtype=np.uint16))])
    single("bitwisenot_int8_opset26", "BitwiseNot", 26, [("a", ints(6, lo=-128, hi=127, dtype=np.int8))])
    x = rand(2, 3, 8, lo=-4, hi=4)
    single("gelu_opset20", "Gelu", 20, [("x", x)])
    # (|x| < 3: beyond, ORT's float32 1 + tanh(...) cancels and is ~0.4% off the exact value, which Infera gives)
    single("gelu_tanh_opset20", "Gelu", 20, [("x", np.clip(x, -3, 3))], approximate="tanh")
    single("gelu_opset22", "Gelu", 22, [("x", x)])
    single("mish_opset18", "Mish", 18, [("x", x)])
    single("mish_opset22", "Mish", 22, [("x", x)])
    single("groupnormalization_per_group_opset18", "GroupNormalization", 18, [("x", rand(2, 6, 3)), ("s", rand(2)),
                                                                               ("b", rand(2))], num_groups=2)
    g = rand(2, 6, 3, 2)
    single("groupnormalization_per_channel_opset21", "GroupNormalization", 21, [("x", g), ("s", rand(6)), ("b", rand(6))],
           num_groups=3, epsilon=1e-3)
    single("groupnormalization_one_group_opset21", "GroupNormalization", 21, [("x", g), ("s", rand(6)), ("b", rand(6))],
           num_groups=1)
    single("rmsnormalization_opset23", "RMSNormalization", 23, [("x", x), ("s", rand(8))])
    single("rmsnormalization_axis1_opset23", "RMSNormalization", 23, [("x", x), ("s", rand(3, 8))], axis=1,
           epsilon=1e-2)
    single("swish_opset24", "Swish", 24, [("x", x)], alpha=0.7)


def fusion_patterns():
    """Chains the optimizer fuses, written with the opset 18+ forms: LayerNorm with Reduce* axes as inputs,
    MatMul + Add + native Gelu."""
    x = rand(2, 5, 8)
    axes = numpy_helper.from_array(np.array([-1], np.int64), "axes")
    eps = numpy_helper.from_array(np.array(1e-5, np.float32), "eps")
    gamma = numpy_helper.from_array(rand(8), "gamma")
    beta = numpy_helper.from_array(rand(8), "beta")
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    ln = [
        helper.make_node("ReduceMean", ["x", "axes"], ["m"]),
        helper.make_node("Sub", ["x", "m"], ["d"]),
        helper.make_node("Pow", ["d", "two"], ["q"]),
        helper.make_node("ReduceMean", ["q", "axes"], ["v"]),
        helper.make_node("Add", ["v", "eps"], ["ve"]),
        helper.make_node("Sqrt", ["ve"], ["s"]),
        helper.make_node("Div", ["d", "s"], ["n"]),
        helper.make_node("Mul", ["n", "gamma"], ["g"]),
        helper.make_node("Add", ["g", "beta"], ["y0"]),
    ]
    for opset in (18, 23):
        case("fusion_layernorm_reduce_axes_input_opset%d" % opset, ln, [("x", x)], ["y0"], opset,
             initializers=[axes, eps, gamma, beta, two])
    w = numpy_helper.from_array(rand(8, 16), "w")
    bias = numpy_helper.from_array(rand(16), "bias")
    mlp = [helper.make_node("MatMul", ["x", "w"], ["mm"]), helper.make_node("Add", ["mm", "bias"], ["a"]),
           helper.make_node("Gelu", ["a"], ["y0"])]
    case("fusion_matmul_add_gelu_opset20", mlp, [("x", x)], ["y0"], 20, initializers=[w, bias])


def resize_18_19():
    x = rand(1, 2, 4, 6)
    e = ("", None)
    f = lambda *v: np.array(v, np.float32)
    i = lambda *v: np.array(v, np.int64)
    single("resize_linear_scales_opset18", "Resize", 18, [("x", x), e, ("s", f(1, 1, 2, 1.5))], mode="linear")
    single("resize_axes_scales_opset18", "Resize", 18, [("x", x), e, ("s", f(0.5, 2.0))], mode="linear", axes=[3, 2])
    single("resize_axes_sizes_nearest_opset18", "Resize", 18, [("x", x), e, e, ("z", i(7, 3))], axes=[-2, -1])
    single("resize_not_larger_opset18", "Resize", 18, [("x", x), e, e, ("z", i(8, 8))], mode="linear", axes=[2, 3],
           keep_aspect_ratio_policy="not_larger")
    single("resize_not_smaller_opset18", "Resize", 18, [("x", x), e, e, ("z", i(5, 5))], mode="cubic", axes=[2, 3],
           keep_aspect_ratio_policy="not_smaller")
    big = rand(1, 2, 9, 12)
    for mode in ["linear", "cubic"]:
        single("resize_antialias_%s_opset18" % mode, "Resize", 18, [("x", big), e, ("s", f(1, 1, 0.5, 0.3))], mode=mode,
               antialias=1)
        single("resize_antialias_%s_sizes_exclude_opset18" % mode, "Resize", 18, [("x", big), e, e, ("z", i(4, 5))],
               mode=mode, antialias=1, axes=[2, 3], exclude_outside=1)
        single("resize_antialias_%s_up_down_opset19" % mode, "Resize", 19, [("x", big), e, ("s", f(1, 1, 1.5, 0.7))],
               mode=mode, antialias=1, coordinate_transformation_mode="pytorch_half_pixel")
    single("resize_antialias_nearest_opset18", "Resize", 18, [("x", x), e, ("s", f(1, 1, 0.5, 0.5))], mode="nearest")
    for mode in ["linear", "cubic", "nearest"]:
        single("resize_half_pixel_symmetric_%s_opset19" % mode, "Resize", 19, [("x", x), e, ("s", f(1, 1, 1.7, 0.6))],
               mode=mode, coordinate_transformation_mode="half_pixel_symmetric")
    single("resize_crop_and_resize_axes_opset19", "Resize", 19, [("x", x), ("roi", f(0.1, 0.2, 0.8, 0.9)), e,
                                                                   ("z", i(3, 4))], mode="linear", axes=[2, 3],
           coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-1.0)
    single("resize_pytorch_half_pixel_opset24", "Resize", 24, [("x", x), e, ("s", f(1, 1, 2, 2))], mode="linear",
           coordinate_transformation_mode="pytorch_half_pixel")


def lppool_18():
    x = rand(1, 2, 7, 6)
    single("lppool_dilations_opset18", "LpPool", 18, [("x", x)], kernel_shape=[2, 2], dilations=[2, 2], p=2)
    single("lppool_ceil_mode_opset18", "LpPool", 18, [("x", x)], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1, p=3)
    single("lppool_ceil_pads_dilations_opset18", "LpPool", 18, [("x", x)], kernel_shape=[2, 3], strides=[2, 2],
           dilations=[2, 1], pads=[1, 0, 1, 1], ceil_mode=1)
    single("lppool_opset22", "LpPool", 22, [("x", x)], kernel_shape=[3, 2], p=1)
    single("globallppool_opset18", "GlobalLpPool", 18, [("x", x)])


def dft_20():
    # float64: bins that are exactly 0 carry float32 rounding noise (~1e-6) in ORT's float32 DFT
    x = rand(2, 8, 1, dtype=np.float64)
    c = rand(2, 5, 2, dtype=np.float64)
    e = ("", None)
    single("dft_default_axis_opset20", "DFT", 20, [("x", x)])
    single("dft_axis_input_opset20", "DFT", 20, [("x", rand(3, 4, 1, dtype=np.float64)), e, ("a", np.array(0, np.int64))])
    single("dft_length_onesided_opset20", "DFT", 20, [("x", x), ("n", np.array(6, np.int64)), ("a", np.array(-2, np.int64))],
           onesided=1)
    single("dft_inverse_complex_opset20", "DFT", 20, [("x", c), ("n", np.array(7, np.int64))], inverse=1)


def attention_23():
    B, Hq, Hkv, S, L, D = 2, 4, 2, 3, 5, 4
    q4, k4, v4 = rand(B, Hq, S, D), rand(B, Hkv, L, D), rand(B, Hkv, L, 6)
    e = ("", None)
    single("attention_4d_gqa_opset23", "Attention", 23, [("q", q4), ("k", k4), ("v", v4)])
    single("attention_4d_causal_scale_opset23", "Attention", 23, [("q", rand(B, 2, 5, D)), ("k", rand(B, 2, 5, D)),
                                                                    ("v", rand(B, 2, 5, D))], is_causal=1, scale=0.3)
    single("attention_4d_bool_mask_opset23", "Attention", 23,
           [("q", q4), ("k", k4), ("v", v4), ("m", rng.random((S, L)) > 0.3)])
    single("attention_4d_float_mask_broadcast_opset23", "Attention", 23,
           [("q", q4), ("k", k4), ("v", v4), ("m", rand(B, 1, S, L))])
    single("attention_3d_heads_opset23", "Attention", 23, [("q", rand(B, S, Hq * D)), ("k", rand(B, L, Hkv * D)),
                                                            ("v", rand(B, L, Hkv * 3))], q_num_heads=Hq, kv_num_heads=Hkv)
    single("attention_past_present_causal_opset23", "Attention", 23,
           [("q", q4), ("k", rand(B, Hkv, S, D)), ("v", rand(B, Hkv, S, 6)), e, ("pk", rand(B, Hkv, 2, D)),
            ("pv", rand(B, Hkv, 2, 6))], n_out=3, is_causal=1)
    single("attention_softcap_qk_softmax_opset23", "Attention", 23, [("q", q4), ("k", k4), ("v", v4)], n_out=4,
           softcap=2.0, qk_matmul_output_mode=3)
    single("attention_qk_with_bias_opset23", "Attention", 23, [("q", q4), ("k", k4), ("v", v4), ("m", rand(S, L))],
           n_out=4, qk_matmul_output_mode=2)
    single("attention_nonpad_opset24", "Attention", 24, [("q", q4), ("k", k4), ("v", v4), e, e, e,
                                                          ("n", np.array([5, 3], np.int64))], is_causal=1)
    single("attention_fully_masked_row_opset23", "Attention", 23,
           [("q", q4), ("k", k4), ("v", v4), ("m", np.array([[True] * L, [False] * L, [True, False] * 2 + [True]]))])
    single("attention_opset26", "Attention", 26, [("q", q4), ("k", k4), ("v", v4)], is_causal=1)


def rotary_23():
    B, H, S, D = 2, 3, 4, 8
    pos_cache = rand(10, D // 2), rand(10, D // 2)
    pos = ints(B, S, hi=10)
    single("rotaryembedding_4d_opset23", "RotaryEmbedding", 23,
           [("x", rand(B, H, S, D)), ("c", rand(B, S, D // 2)), ("s", rand(B, S, D // 2))])
    single("rotaryembedding_interleaved_positions_opset23", "RotaryEmbedding", 23,
           [("x", rand(B, H, S, D)), ("c", pos_cache[0]), ("s", pos_cache[1]), ("p", pos)], interleaved=1)
    single("rotaryembedding_3d_partial_opset23", "RotaryEmbedding", 23,
           [("x", rand(B, S, H * D)), ("c", rand(10, 2)), ("s", rand(10, 2)), ("p", pos)], num_heads=H,
           rotary_embedding_dim=4)


def more_new_operators():
    single("cumprod_opset26", "CumProd", 26, [("x", rand(3, 4, lo=0.5, hi=1.5)), ("a", np.array(1, np.int64))])
    single("cumprod_exclusive_reverse_opset26", "CumProd", 26, [("x", ints(2, 5, lo=-3, hi=4)), ("a", np.array(-1, np.int64))],
           exclusive=1, reverse=1)
    single("bitcast_float_to_int32_opset26", "BitCast", 26, [("x", rand(2, 3))], to=TensorProto.INT32)
    single("bitcast_uint16_to_float16_opset26", "BitCast", 26, [("x", ints(4, hi=30000, dtype=np.uint16))],
           to=TensorProto.FLOAT16)
    single("tensorscatter_linear_opset24", "TensorScatter", 24,
           [("c", rand(2, 3, 6, 4)), ("u", rand(2, 3, 2, 4)), ("w", np.array([1, 4], np.int64))])
    single("tensorscatter_circular_opset24", "TensorScatter", 24,
           [("c", rand(2, 5, 3)), ("u", rand(2, 3, 3)), ("w", np.array([4, 0], np.int64))], axis=1, mode="circular")
    single("tensorscatter_no_indices_opset24", "TensorScatter", 24, [("c", rand(1, 4, 2)), ("u", rand(1, 2, 2))])
    strs = np.array([["a b  c", " lead and trail "], ["", "x,,y,z"]], dtype=object)
    single("stringconcat_broadcast_opset20", "StringConcat", 20, [("a", strs), ("b", np.array(["_s"], dtype=object))])
    single("stringsplit_whitespace_opset20", "StringSplit", 20, [("x", strs)], n_out=2)
    single("stringsplit_delimiter_opset20", "StringSplit", 20, [("x", strs)], n_out=2, delimiter=",")
    single("stringsplit_maxsplit_opset20", "StringSplit", 20, [("x", strs)], n_out=2, maxsplit=1)
    single("stringsplit_delimiter_maxsplit_opset20", "StringSplit", 20, [("x", strs)], n_out=2, delimiter=",", maxsplit=1)
    x = rand(3, 5, 4)
    single("centercroppad_crop_pad_opset18", "CenterCropPad", 18, [("x", x), ("s", np.array([2, 8, 3], np.int64))])
    single("centercroppad_axes_opset18", "CenterCropPad", 18, [("x", x), ("s", np.array([7, 1], np.int64))], axes=[-1, 0])
    single("col2im_opset18", "Col2Im", 18, [("x", rand(1, 5 * 4, 12)), ("i", np.array([4, 5], np.int64)),
                                            ("b", np.array([2, 2], np.int64))])
    single("col2im_strides_pads_dilations_opset18", "Col2Im", 18,
           [("x", rand(2, 2 * 4, 6)), ("i", np.array([5, 5], np.int64)), ("b", np.array([2, 2], np.int64))],
           strides=[2, 2], pads=[1, 0, 0, 1], dilations=[2, 1])
    single("affinegrid_2d_opset20", "AffineGrid", 20, [("t", rand(2, 2, 3)), ("s", np.array([2, 3, 4, 5], np.int64))])
    # (not an axis of length 1 with align_corners: ORT 1.30 puts its point at +1, the reference and PyTorch at -1,
    # which Infera follows)
    single("affinegrid_2d_align_opset20", "AffineGrid", 20, [("t", rand(1, 2, 3)), ("s", np.array([1, 1, 3, 2], np.int64))],
           align_corners=1)
    single("affinegrid_3d_opset20", "AffineGrid", 20, [("t", rand(1, 3, 4)), ("s", np.array([1, 2, 2, 3, 4], np.int64))])


def ml_opset5():
    """ai.onnx.ml opset 5 (with ai.onnx 21): LabelEncoder's version 4 (tensor keys/values), TreeEnsemble (5), and
    operators whose schema did not change."""
    def ml(name, node, inputs, outputs):
        case(name, [node], inputs, outputs, 21, ml_opset=5)
    keys = numpy_helper.from_array(np.array([1, 5, 9], np.int64), "k")
    vals = numpy_helper.from_array(np.array([0.5, -1.5, 2.25], np.float32), "v")
    dflt = numpy_helper.from_array(np.array([7.0], np.float32), "d")
    ml("labelencoder_tensor_attrs_ml5", helper.make_node("LabelEncoder", ["x"], ["y0"], domain="ai.onnx.ml", keys_tensor=keys,
                                                         values_tensor=vals, default_tensor=dflt),
       [("x", np.array([[1, 2], [9, 5]], np.int64))], ["y0"])
    ml("labelencoder_strings_ml5", helper.make_node("LabelEncoder", ["x"], ["y0"], domain="ai.onnx.ml",
                                                    keys_strings=["a", "b"], values_int64s=[3, 4], default_int64=-1),
       [("x", np.array(["b", "z", "a"], dtype=object))], ["y0"])
    ml("scaler_ml5", helper.make_node("Scaler", ["x"], ["y0"], domain="ai.onnx.ml", offset=[0.5, -1.0, 2.0],
                                      scale=[2.0, 0.5, 1.0]), [("x", rand(4, 3))], ["y0"])
    ml("treeensemble_ml5", helper.make_node(
        "TreeEnsemble", ["x"], ["y0"], domain="ai.onnx.ml", aggregate_function=1, n_targets=1,
        tree_roots=[0], nodes_featureids=[0, 1], nodes_modes=numpy_helper.from_array(np.array([0, 0], np.uint8)),
        nodes_splits=numpy_helper.from_array(np.array([0.0, 0.5], np.float32)), nodes_truenodeids=[1, 2],
        nodes_trueleafs=[0, 1], nodes_falsenodeids=[0, 1], nodes_falseleafs=[1, 1], leaf_targetids=[0, 0, 0],
        leaf_weights=numpy_helper.from_array(np.array([1.0, 2.0, 3.0], np.float32))), [("x", rand(5, 2))], ["y0"])


def deform_conv_19_22():
    """DeformConv: offsets moving points inside, across and beyond the image edge, groups and offset groups,
    strides/pads/dilations, with and without bias and mask (ORT implements 2-D)."""
    def offsets(n, groups, k, oh, ow, scale=1.5):
        return rand(n, groups * 2 * k, oh, ow, lo=-scale, hi=scale)
    x = rand(1, 2, 5, 5)
    single("deformconv_basic_opset19", "DeformConv", 19, [("x", x), ("w", rand(3, 2, 3, 3)), ("o", offsets(1, 1, 9, 3, 3))],
           kernel_shape=[3, 3])
    single("deformconv_bias_mask_opset19", "DeformConv", 19,
           [("x", x), ("w", rand(3, 2, 3, 3)), ("o", offsets(1, 1, 9, 3, 3, 3.0)), ("b", rand(3)),
            ("m", rand(1, 9, 3, 3, lo=0.0, hi=1.0))], kernel_shape=[3, 3])
    single("deformconv_groups_pads_strides_opset22", "DeformConv", 22,
           [("x", rand(2, 4, 6, 7)), ("w", rand(6, 2, 2, 3)), ("o", offsets(2, 2, 6, 4, 2)), ("b", rand(6))],
           kernel_shape=[2, 3], group=2, offset_group=2, pads=[1, 1, 1, 0], strides=[2, 2], dilations=[1, 2])
    single("deformconv_no_bias_with_mask_opset22", "DeformConv", 22,
           [("x", rand(1, 3, 4, 4)), ("w", rand(2, 3, 2, 2)), ("o", offsets(1, 1, 4, 3, 3, 4.0)), ("", None),
            ("m", rand(1, 4, 3, 3, lo=0.0, hi=1.0))], kernel_shape=[2, 2])
    single("deformconv_zero_offsets_is_conv_opset19", "DeformConv", 19,
           [("x", x), ("w", rand(2, 2, 3, 3)), ("o", np.zeros((1, 18, 5, 5), np.float32))], kernel_shape=[3, 3],
           pads=[1, 1, 1, 1])


def regex_20():
    """RegexFullMatch: RE2 syntax (ORT matches with RE2, Infera with PCRE2 after a rewrite): anchors, classes,
    Unicode, flags, repetitions, alternation, empty strings and an empty tensor."""
    def rx(name, pattern, strs, opset=20):
        single("regexfullmatch_%s_opset%d" % (name, opset), "RegexFullMatch", opset,
               [("x", np.array(strs, dtype=object))], pattern=pattern)
    rx("literal", "abc", ["abc", "abcd", "xabc", "", "ABC"])
    rx("email", r"(\W|^)[\w.\-]{0,25}@(yahoo|gmail)\.com(\W|$)", [["account@gmail.com", "x@yahoo.com "],
                                                                   ["not an email", "a b@gmail.com"]])
    rx("dot_newline", "a.c", ["abc", "a\nc", "a\u00e9c", "a\rc", "ac"])
    rx("dotall_flag", "(?s)a.c", ["a\nc", "abc"])
    rx("perl_classes", r"\d+\s*\w+", ["12 ab_9", "12\u000bab", "\u0663 x", "1\t\n\f\rz", "12"])
    rx("negated_classes", r"[\D][\S]\W", ["a\u000b!", "1b!", "ab1", "\u00e9\u00e9 "])
    rx("posix_classes", r"[[:alpha:][:digit:]]+[[:^space:]][[:punct:]]*", ["ab1x!?", "ab \u000b", "a\u000b", "\u00e9x"])
    rx("anchors_dollar_newline", "^abc$", ["abc", "abc\n", "\nabc"])
    rx("multiline", r"(?m)^a$\n^b$", ["a\nb", "a\nc", "a\n\nb"])
    rx("multiline_scoped", r"((?m)a$)\nb$", ["a\nb", "a\nb\n"])
    rx("text_anchors", r"\Aa+\z", ["aaa", "aab", ""])
    rx("word_boundary", r".*\bcat\b.*", ["the cat sat", "concatenate", "cat", "\u00e9cat\u00e9"])
    rx("alternation", "a|ab|abc", ["a", "ab", "abc", "abcd", ""])
    rx("unicode_literal", "日本.+", ["日本語", "日本", "日本語です", "にほん"])
    rx("unicode_script", r"\p{Greek}+\P{Greek}?", ["αβγ", "αβγa", "abc", "αβ\u03b3\u03b4!"])
    rx("unicode_category", r"\p{Lu}\p{Ll}*\pN?", ["Hello", "hello", "\u00c9t\u00e9", "Ab\u0663"])
    rx("case_insensitive", "(?i)stra(ss|ß)e", ["STRASSE", "Straße", "strasse", "STRAE"])
    rx("case_insensitive_group", "(?i:ab)C", ["ABC", "abC", "abc"])
    rx("ungreedy_flag", "(?U)(a+)(a+?)", ["aaa", "a"])
    rx("counted", "a{2,3}b{2}c{1,}", ["aabbc", "aaabbccc", "abbc", "aaaabbc", "aabbb"])
    rx("literal_brace", "a{,2}x{", ["a{,2}x{", "aax{"])
    rx("nongreedy", "a*?b+?", ["aaab", "b", "a"])
    rx("empty_pattern", "", ["", "a", " "])
    rx("empty_alternative", "a|", ["", "a", "aa"])
    rx("escapes", r"\x41\x{65e5}\101\t\$\.\*", ["A日A\t$.*", "A日A $.*"])
    rx("quoted", r"\Qa.b*\E+", ["a.b*", "a.b**", "axb"])
    rx("class_edges", r"[]a-]+[^]x]", ["]a-b", "a]", "-x"])
    rx("vertical_tab_escape", r"\v[\v]", ["\u000b\u000b", "\n\n"])
    rx("named_groups", "(?P<year>\\d{4})-(?<month>\\d{2})", ["2024-07", "24-07"])
    rx("nested_star", "(a*)*b", ["a" * 40 + "c", "aab", "b"])
    rx("empty_strings", ".*", ["", "", "x"])
    single("regexfullmatch_empty_tensor_opset20", "RegexFullMatch", 20, [("x", np.zeros((0, 3), dtype=object))],
           pattern="a+")
    rx("repetition_after_flags", "ab(?i)+c", ["abbbC", "abc", "aBc", "ac"])
    rx("optional_assertion_alternation", r"\Qa.\E\B?\b|", ["a", "a.", "", "a.b"])
    rx("opset26", r"[a-z]+\d", ["abc1", "ABC1"], opset=26)


def ml_maps():
    """ai.onnx.ml CastMap and DictVectorizer: map inputs (keys in any order), dense and sparse packing, the casts
    ORT makes (float -> string is %f, float -> int64 truncates).  Only float-valued maps: onnxruntime's Python
    API builds no other map from a dict (map(int64, string), map(string, int64), double values: "cannot be linked
    to C type" / "Unexpected input data type"), so the string -> number casts have no oracle here."""
    def ml(name, node, inputs):
        case(name, [node], inputs, ["y0"], 21, ml_opset=5)
    i64, s = TensorProto.INT64, TensorProto.STRING
    fmap = MapInput({5: 1.5, 1: -2.25, 3: 0.5, 0: 7.0}, i64, np.float32)
    def castmap(name, x, **attrs):
        ml("castmap_%s_ml5" % name, helper.make_node("CastMap", ["x"], ["y0"], domain="ai.onnx.ml", **attrs), [("x", x)])
    castmap("float_to_float", fmap)
    castmap("float_to_int64", MapInput({0: 1.9, 1: -1.9, 2: 100.0, 3: -0.0}, i64, np.float32), cast_to="TO_INT64")
    castmap("float_to_string", MapInput({1: 1.5, 0: -0.1, 2: 1e10}, i64, np.float32), cast_to="TO_STRING")
    castmap("sparse_float", fmap, map_form="SPARSE", max_map=5)
    castmap("sparse_to_int64", MapInput({3: 9.5, 1: -4.0}, i64, np.float32), cast_to="TO_INT64", map_form="SPARSE",
            max_map=6)
    castmap("sparse_to_string", MapInput({2: 0.25}, i64, np.float32), cast_to="TO_STRING", map_form="SPARSE",
            max_map=4)
    def dv(name, x, **attrs):
        ml("dictvectorizer_%s_ml5" % name, helper.make_node("DictVectorizer", ["x"], ["y0"], domain="ai.onnx.ml",
                                                            **attrs), [("x", x)])
    words = ["a", "b", "c", "d", "é"]
    dv("string_float", MapInput({"c": 1.5, "a": -2.0, "zz": 9.0, "é": 3.25}, s, np.float32), string_vocabulary=words)
    dv("int64_float_repeated_vocabulary", MapInput({1: 0.5, 2: -1.5}, i64, np.float32), int64_vocabulary=[1, 2, 1, 5])
    dv("int64_float_negative_keys", MapInput({-4: 2.5, 4: -1.0}, i64, np.float32), int64_vocabulary=[4, -4, 0])


def attention_fused_23():
    """ONNX Attention where it runs on Infera's fused float32 kernel (and near misses that must not): a Llama
    layer's grouped-query causal attention with a padding mask, fewer queries than keys, 3-D multi-query with a
    bool mask, a past with present outputs, present outputs without a past.  tests/conformance/test_attention_paths.sh asserts the kernel each case takes.
    (Generated with onnxruntime 1.31.1, PyPI, /work/wt/venvs/torch: `--only attention_fused`.)"""
    B, Hq, Hkv, S, D = 2, 4, 2, 24, 16
    pad = np.zeros((B, 1, S, S), np.float32)  # ORT wants the mask's query axis; batch row 1 has 5 padded keys
    pad[1, :, :, S - 5:] = -np.inf
    single("attention_fused_llama_gqa_causal_opset23", "Attention", 23,
           [("q", rand(B, Hq, S, D)), ("k", rand(B, Hkv, S, D)), ("v", rand(B, Hkv, S, D)), ("m", pad)], is_causal=1)
    single("attention_fused_causal_short_q_opset23", "Attention", 23,
           [("q", rand(B, Hq, 3, D)), ("k", rand(B, Hkv, 7, D)), ("v", rand(B, Hkv, 7, 5))], is_causal=1)
    single("attention_fused_3d_mqa_bool_opset23", "Attention", 23,
           [("q", rand(B, 6, 4 * 8)), ("k", rand(B, 19, 8)), ("v", rand(B, 19, 12)), ("m", rng.random((B, 1, 6, 19)) > 0.4)],
           q_num_heads=4, kv_num_heads=1)
    single("attention_fused_past_present_3d_opset23", "Attention", 23,
           [("q", rand(B, 4, Hq * 8)), ("k", rand(B, 4, Hkv * 8)), ("v", rand(B, 4, Hkv * 8)), ("", None),
            ("pk", rand(B, Hkv, 5, 8)), ("pv", rand(B, Hkv, 5, 8))], n_out=3, is_causal=1, q_num_heads=Hq,
           kv_num_heads=Hkv, scale=0.25)
    single("attention_fused_present_no_past_opset23", "Attention", 23,
           [("q", rand(B, Hq, 5, D)), ("k", rand(B, Hkv, 9, D)), ("v", rand(B, Hkv, 9, 7))], n_out=3)


def optional_18():
    """OptionalHasElement's input became optional at opset 18: without it, the answer is false."""
    single("optionalhaselement_no_input_opset18", "OptionalHasElement", 18, [])
    single("optionalhaselement_tensor_opset18", "OptionalHasElement", 18, [("x", rand(2))])


# (new groups go last: each draws from the one seeded generator, so earlier cases keep their data)
GROUPS = [unchanged_operators, reduce_18, split_18, pad_18_19, scatter_18, pools, casts, misc_types, gridsample_20,
          quantize_21, rnn_22, new_operators, fusion_patterns, resize_18_19, lppool_18, dft_20, attention_23, rotary_23,
          more_new_operators, ml_opset5, deform_conv_19_22, regex_20, ml_maps,
          optional_18, attention_fused_23]


# ---------------------------------------------------------------- error cases
# (name, model, the text Infera's error must contain).  Every input is a constant, so `infera run` needs none.

def error_cases():
    errs = []

    def err(name, nodes, inits, outputs, opset, expect, ml_opset=None, inputs=()):
        model = make_model(nodes, list(inputs), outputs, opset, ml_opset, inits)
        for o in model.graph.output:
            o.CopyFrom(helper.make_tensor_value_info(o.name, TensorProto.FLOAT, None))
        errs.append((name, model, expect))

    c = lambda name, a: numpy_helper.from_array(np.asarray(a), name)
    x = c("x", rand(2, 6, 3))
    f8 = helper.make_tensor("f8", TensorProto.FLOAT8E4M3FN, [2], [1.0, 2.0])
    err("float8_initializer", [helper.make_node("Identity", ["f8"], ["y"])], [f8], ["y"], 19,
        "element type float8e4m3fn (ONNX type 17) is not implemented")
    m = make_model([helper.make_node("Identity", ["q"], ["y"])], [], ["y"], 21)
    m.graph.input.append(helper.make_tensor_value_info("q", TensorProto.INT4, [4]))
    m.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", TensorProto.INT4, [4]))
    errs.append(("int4_graph_input", m, "value 'q': element type int4 (ONNX type 22) is not implemented"))
    err("cast_to_float8", [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E5M2)], [x], ["y"], 19,
        "attribute 'to': element type float8e5m2 (ONNX type 19) is not implemented")
    err("opset_27", [helper.make_node("Add", ["x", "x"], ["y"])], [x], ["y"], 27, "Infera knows opsets up to 26")
    err("tree_ensemble_ml_opset5", [helper.make_node("TreeEnsembleRegressor", ["x"], ["y"], domain="ai.onnx.ml",
                                                     n_targets=1, nodes_treeids=[0], nodes_nodeids=[0],
                                                     nodes_featureids=[0], nodes_modes=["LEAF"], nodes_values=[0.0],
                                                     nodes_truenodeids=[0], nodes_falsenodeids=[0], target_treeids=[0],
                                                     target_nodeids=[0], target_ids=[0], target_weights=[1.0])],
        [x], ["y"], 21, "selects version 5 of TreeEnsembleRegressor's schema", ml_opset=5)
    err("reduce_axes_attribute_opset18", [helper.make_node("ReduceMean", ["x"], ["y"], axes=[1])], [x], ["y"], 18,
        "axes is an input at opset 18, not an attribute")
    err("split_no_num_outputs_opset18", [helper.make_node("Split", ["x"], ["y", "z"], axis=1)], [x], ["y", "z"], 18,
        "opset 18 needs input split or attribute num_outputs")
    err("split_num_outputs_mismatch_opset18", [helper.make_node("Split", ["x"], ["y", "z"], axis=1, num_outputs=3)],
        [x], ["y", "z"], 18, "attribute num_outputs is 3, the node has 2 outputs")
    err("split_both_opset18", [helper.make_node("Split", ["x", "s"], ["y", "z"], axis=1, num_outputs=2)],
        [x, c("s", np.array([3, 3], np.int64))], ["y", "z"], 18, "input split and attribute num_outputs are both given")
    err("pad_wrap_opset18", [helper.make_node("Pad", ["x", "p"], ["y"], mode="wrap")],
        [x, c("p", np.array([0, 1, 0, 0, 1, 0], np.int64))], ["y"], 18, "(wrap from opset 19)")
    err("resize_antialias_too_many_taps_opset18",
        [helper.make_node("Resize", ["w", "", "s"], ["y"], mode="linear", antialias=1)],
        [c("w", rand(1, 1, 400)), c("s", np.array([1, 1, 0.005], np.float32))], ["y"], 18,
        "antialias: scale 0.005 on axis 2 needs 402 taps")
    err("dft_axis_attribute_opset20", [helper.make_node("DFT", ["x"], ["y"], axis=1)], [x], ["y"], 20,
        "axis is an input from opset 20, not an attribute")
    err("quantize_blocked_scale_shape_opset21", [helper.make_node("QuantizeLinear", ["x", "s"], ["y"], block_size=2, axis=1)],
        [x, c("s", rand(2, 2, 3, lo=0.1, hi=1))], ["y"], 21, "block_size 2 on axis 1 needs x's shape with 3 blocks")
    err("quantize_output_float8_opset21", [helper.make_node("QuantizeLinear", ["x", "s"], ["y"],
                                                            output_dtype=TensorProto.FLOAT8E4M3FN)],
        [x, c("s", np.array(0.1, np.float32))], ["y"], 21, "output_dtype: element type float8e4m3fn (ONNX type 17)")
    err("groupnorm_groups_opset21", [helper.make_node("GroupNormalization", ["x", "g", "b"], ["y"], num_groups=4)],
        [x, c("g", rand(6)), c("b", rand(6))], ["y"], 21, "num_groups 4 does not divide the 6 channels")
    err("groupnorm_scale_shape_opset21", [helper.make_node("GroupNormalization", ["x", "g", "b"], ["y"], num_groups=2)],
        [x, c("g", rand(2)), c("b", rand(2))], ["y"], 21, "input scale has 2 elements; expected 6")
    err("gridsample_bilinear_opset20", [helper.make_node("GridSample", ["i", "g"], ["y"], mode="bilinear")],
        [c("i", rand(1, 1, 3, 3)), c("g", rand(1, 2, 2, 2))], ["y"], 20, "'bilinear' is not a mode of opset 20")
    err("lppool_dilations_opset17", [helper.make_node("LpPool", ["i"], ["y"], kernel_shape=[2, 2], dilations=[2, 2])],
        [c("i", rand(1, 1, 5, 5))], ["y"], 17, "dilations and ceil_mode are attributes of opset 18+")
    err("gelu_approximate_opset20", [helper.make_node("Gelu", ["x"], ["y"], approximate="fast")], [x], ["y"], 20,
        "attribute approximate: expected none or tanh, got 'fast'")
    err("bitwise_float_opset18", [helper.make_node("BitwiseAnd", ["x", "x"], ["y"])], [x], ["y"], 18,
        "BitwiseAnd does not accept float32")
    # RegexFullMatch: patterns RE2 (so ORT) refuses, refused at load with the node named
    strs = c("s", np.array(["a", "b"], dtype=object))
    for name, pattern, expect in [
            ("lookahead", "(?=a)a", "invalid or unsupported group syntax"),
            ("backreference", r"(a)\1", "backreference \\1 is not RE2 syntax at offset 3"),
            ("count_over_1000", "a{1001}", "bad repetition operator {1001} (RE2 allows counts up to 1000)"),
            ("nested_counts", "(a{10}){101}", "bad repetition operator: nested counts multiply to more than 1000"),
            ("possessive", "a*+", "bad repetition operator: stacked or possessive repetition *+ at offset 1"),
            ("unclosed_group", "(ab", "missing ) at offset 0"),
            ("unclosed_class", "[ab", "missing ] of a character class at offset 0"),
            ("bad_escape", r"a\Z", "invalid escape \\Z (not RE2 syntax) at offset 1"),
            ("unknown_posix_class", "[[:foo:]]", "invalid character class [:foo:]")]:
        err("regexfullmatch_" + name, [helper.make_node("RegexFullMatch", ["s"], ["y"], pattern=pattern,
                                                        name="rx_" + name)], [strs], ["y"], 20,
            "node 'rx_%s' (RegexFullMatch): attribute pattern '%s': %s" % (name, pattern, expect))
    err("regexfullmatch_unknown_script", [helper.make_node("RegexFullMatch", ["s"], ["y"], pattern=r"\p{Klingon}")],
        [strs], ["y"], 20, "attribute pattern: unknown property")  # (PCRE2's message: it knows the script names)
    err("regexfullmatch_no_pattern", [helper.make_node("RegexFullMatch", ["s"], ["y"])], [strs], ["y"], 20,
        "attribute pattern (a string, RE2 syntax) is required")
    err("castmap_cast_to", [helper.make_node("CastMap", ["m"], ["y"], domain="ai.onnx.ml", cast_to="TO_DOUBLE")], [],
        ["y"], 21, "attribute cast_to: expected TO_FLOAT, TO_INT64 or TO_STRING, got 'TO_DOUBLE'", ml_opset=5,
        inputs=[("m", MapInput({1: 1.0}, TensorProto.INT64, np.float32))])
    err("dictvectorizer_two_vocabularies", [helper.make_node("DictVectorizer", ["m"], ["y"], domain="ai.onnx.ml",
                                                             string_vocabulary=["a"], int64_vocabulary=[1])], [],
        ["y"], 21, "exactly one of string_vocabulary or int64_vocabulary must be set", ml_opset=5,
        inputs=[("m", MapInput({"a": 1.0}, TensorProto.STRING, np.float32))])
    return errs


def write_errors():
    shutil.rmtree(ERR, ignore_errors=True)
    os.makedirs(ERR)
    errs = error_cases()
    for name, model, expect in errs:
        with open(os.path.join(ERR, name + ".onnx"), "wb") as f:
            f.write(model.SerializeToString())
        with open(os.path.join(ERR, name + ".expect"), "w") as f:
            f.write(expect + "\n")
    print("%d error cases written to %s" % (len(errs), ERR))


def main():
    # --only PREFIX: (re)write only the cases whose name starts with PREFIX (every group still draws its inputs,
    # so they are what a full run writes), keeping the others' files and the error cases as they are
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    if not only:
        write_errors()
    for g in GROUPS:
        g()
    if not only:
        shutil.rmtree(OUT, ignore_errors=True)
        os.makedirs(OUT)
    failed = written = 0
    for name, nodes, inputs, outputs, opset, ml_opset, inits in cases:
        if only and not name.startswith(only):
            continue
        written += 1
        shutil.rmtree(os.path.join(OUT, "test_" + name), ignore_errors=True)
        model = make_model(nodes, inputs, outputs, opset, ml_opset, inits)
        try:
            results = run_ort(model, inputs)
        except Exception as e:  # a case ORT cannot run is a bug of this script
            print("ORT refuses %s: %s" % (name, e), file=sys.stderr)
            failed += 1
            continue
        for o, r in zip(model.graph.output, results):
            r = np.asarray(r)
            o.CopyFrom(helper.make_tensor_value_info(o.name, helper.np_dtype_to_tensor_dtype(r.dtype), r.shape))
        try:
            onnx.checker.check_model(model)
        except onnx.checker.ValidationError as e:  # GroupNormalization-18 is deprecated, yet ORT runs it
            if "deprecated" not in str(e):
                raise
        write_case(name, model, inputs, list(zip(outputs, results)))
    print("%d cases written to %s, %d refused by ORT" % (written - failed, OUT, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
