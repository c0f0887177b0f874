"""ms_qlinear_check.py -- Infera's com.microsoft quantized ops (src/ops/ref/ms_qlinear.c) against ONNX Runtime.

  python ms_qlinear_check.py INFERA WORKDIR

One-node models (ai.onnx 13 + com.microsoft 1) per op, uint8 and int8, random data (numpy seed 5) with
saturating scales, scales that put results on rounding ties (powers of two), omitted optional zero points,
broadcasting, per-column QGemm weights; each run by ONNX Runtime (graph optimizations off, CPU) and by
`infera run`, compared: equal bytes where ORT's arithmetic is exact (Mul / pool / concat / QGemm / LeakyRelu,
and Add on ties), within one step elsewhere (ORT's sigmoid is a polynomial, its softmax sums truncated integer
exponentials, and MLAS's QLinearAdd folds the zero points in a float order that differs between its vector and
scalar paths, so a sum within ~1e-6 of a .5 tie may round either way).  Then bad inputs: the error names the node and the input.
Prints one line per check; exit status 1 on any failure.  Needs onnx and onnxruntime (tests/quant/test_ms_qlinear.sh
finds them).
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

INFERA, WORK = sys.argv[1], sys.argv[2]
os.makedirs(WORK, exist_ok=True)
rng = np.random.default_rng(5)
failures = 0
NP2ONNX = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8, np.float32: TensorProto.FLOAT,
           np.int32: TensorProto.INT32}


def q(dt, shape):
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max + 1, size=shape).astype(dt)


def build(name, op, inputs, consts, out_type, attrs=None):
    """inputs: list of (name, array) graph inputs; consts: dict name -> array initializers; node input order from
    `order` attribute of inputs+consts lists (None = omitted)."""
    return name, op, inputs, consts, out_type, attrs or {}


def run_case(name, op, order, feeds, consts, out_type, attrs=None, exact=True, expect_error=None):
    global failures
    graph_inputs = [helper.make_tensor_value_info(k, NP2ONNX[v.dtype.type], list(v.shape)) for k, v in feeds.items()]
    inits = [numpy_helper.from_array(v, k) for k, v in consts.items()]
    node = helper.make_node(op, [o or "" for o in order], ["y"], domain="com.microsoft", name=name, **(attrs or {}))
    out = helper.make_tensor_value_info("y", out_type, None)
    g = helper.make_graph([node], name, graph_inputs, [out], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 8
    d = os.path.join(WORK, name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "m.onnx")
    onnx.save(m, path)
    args = [INFERA, "run", path, "--output-dir", d]
    for k, v in feeds.items():
        np.save(os.path.join(d, k + ".npy"), v)
        args += ["--input", "%s=%s" % (k, os.path.join(d, k + ".npy"))]
    r = subprocess.run(args, capture_output=True, text=True)
    if expect_error is not None:
        ok = r.returncode != 0 and all(s in r.stderr for s in expect_error)
        print("%s %s: bad input refused (%s)" % ("ok" if ok else "FAIL", name, r.stderr.strip()[:200]))
        failures += not ok
        return
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    if r.returncode != 0:
        print("FAIL %s: infera run: %s" % (name, r.stderr.strip()[:300]))
        failures += 1
        return
    got = np.load(os.path.join(d, "y.npy"))
    if got.shape != want.shape or got.dtype != want.dtype:
        print("FAIL %s: shape/type %s %s, ORT %s %s" % (name, got.shape, got.dtype, want.shape, want.dtype))
        failures += 1
        return
    if want.dtype == np.float32:
        err = np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-6)) if want.size else 0
        ok = err <= 1e-6
        print("%s %s: float output, max relative error %.2g" % ("ok" if ok else "FAIL", name, err))
    else:
        diff = np.abs(got.astype(np.int32) - want.astype(np.int32))
        n_diff, mx = int(np.count_nonzero(diff)), int(diff.max()) if diff.size else 0
        lo, hi = np.iinfo(want.dtype).min, np.iinfo(want.dtype).max
        sat = int(np.count_nonzero((want == lo) | (want == hi)))
        ok = (n_diff == 0) if exact else mx <= 1
        print("%s %s: %d values, %d differ (max %d step), %d saturated%s" %
              ("ok" if ok else "FAIL", name, want.size, n_diff, mx, sat, "" if exact else " (one step allowed)"))
    failures += not ok


def f32(x):
    return np.array(x, dtype=np.float32)


for dt in (np.uint8, np.int8):
    t = dt.__name__
    zp = lambda v: np.array(v if dt == np.uint8 else v - 128, dtype=dt)
    for op in ("QLinearAdd", "QLinearMul"):
        # broadcast, random scales, output scale small enough to saturate a share
        a, b = q(dt, (2, 3, 4, 5)), q(dt, (1, 3, 1, 1))
        ys = 0.02 if op == "QLinearAdd" else 0.3
        run_case("%s_%s_bcast" % (op, t), op, ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], {"a": a, "b": b},
                 {"as": f32(0.013), "az": zp(131), "bs": f32(0.021), "bz": zp(120), "ys": f32(ys), "yz": zp(125)},
                 NP2ONNX[dt], exact=op == "QLinearMul")  # Add: MLAS's float order differs by path (vector / tail)
        # ties: power-of-two scales put every other result on .5
        a, b = q(dt, (4, 64)), q(dt, (4, 64))
        run_case("%s_%s_ties" % (op, t), op, ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], {"a": a, "b": b},
                 {"as": f32(0.5), "az": zp(128), "bs": f32(0.25), "bz": zp(127),
                  "ys": f32(1.0 if op == "QLinearAdd" else 16.0), "yz": zp(130)}, NP2ONNX[dt])
    for cl in (0, 1):
        x = q(dt, (2, 6, 5, 7))
        run_case("QLinearGlobalAveragePool_%s_cl%d" % (t, cl), "QLinearGlobalAveragePool",
                 ["x", "xs", "xz", "ys", "yz"], {"x": x},
                 {"xs": f32(0.05), "xz": zp(120), "ys": f32(0.01), "yz": zp(128)}, NP2ONNX[dt],
                 {"channels_last": cl})
    x = np.full((3, 4, 256), zp(128), dtype=dt)  # one value off the zero point per channel: mean k/256, v = k/2
    x[:, :, 7] = (zp(128).astype(np.int32) + rng.integers(-100, 101, size=(3, 4))).astype(dt)
    run_case("QLinearGlobalAveragePool_%s_ties" % t, "QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"],
             {"x": x.reshape(3, 4, 16, 16)}, {"xs": f32(0.5), "xz": zp(128), "ys": f32(1.0 / 256), "yz": zp(128)},
             NP2ONNX[dt])
    x = np.arange(np.iinfo(dt).min, np.iinfo(dt).max + 1, dtype=dt).reshape(4, 64)  # every byte
    run_case("QLinearLeakyRelu_%s" % t, "QLinearLeakyRelu", ["x", "xs", "xz", "ys", "yz"], {"x": x},
             {"xs": f32(0.1), "xz": zp(100), "ys": f32(0.05), "yz": zp(90)}, NP2ONNX[dt], {"alpha": 0.25})
    run_case("QLinearLeakyRelu_%s_ties" % t, "QLinearLeakyRelu", ["x", "xs", "xz", "ys", "yz"], {"x": x},
             {"xs": f32(0.5), "xz": zp(128), "ys": f32(1.0), "yz": zp(128)}, NP2ONNX[dt], {"alpha": 0.5})
    run_case("QLinearSigmoid_%s" % t, "QLinearSigmoid", ["x", "xs", "xz", "ys", "yz"], {"x": x},
             {"xs": f32(0.05), "xz": zp(128), "ys": f32(1 / 256.0), "yz": zp(0)}, NP2ONNX[dt], exact=False)
    for ax, ops in ((-1, 13), (1, 11), (1, 13)):
        run_case("QLinearSoftmax_%s_axis%d_opset%d" % (t, ax, ops), "QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"],
                 {"x": q(dt, (3, 5, 12))}, {"xs": f32(0.03), "xz": zp(128), "ys": f32(1 / 256.0), "yz": zp(0)},
                 NP2ONNX[dt], {"axis": ax, "opset": ops}, exact=False)
    for pname, attrs in (("k3s2p1", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
                         ("k3s2p1_incl_ceil", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 0, 1, 0],
                                               "count_include_pad": 1, "ceil_mode": 1}),
                         ("k2_same_upper", {"kernel_shape": [2, 3], "auto_pad": "SAME_UPPER"}),
                         ("k3_cl", {"kernel_shape": [3, 3], "strides": [1, 2], "channels_last": 1})):
        run_case("QLinearAveragePool_%s_%s" % (t, pname), "QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"],
                 {"x": q(dt, (2, 3, 9, 8))}, {"xs": f32(0.05), "xz": zp(128), "ys": f32(0.02), "yz": zp(128)},
                 NP2ONNX[dt], attrs, exact=False)
    x0, x1, x2 = q(dt, (2, 3, 4)), q(dt, (2, 5, 4)), q(dt, (2, 1, 4))
    run_case("QLinearConcat_%s" % t, "QLinearConcat",
             ["ys", "yz", "x0", "s0", "z0", "x1", "s1", "z1", "x2", "s2", "z2"], {"x0": x0, "x1": x1, "x2": x2},
             {"ys": f32(0.1), "yz": zp(128), "s0": f32(0.1), "z0": zp(128), "s1": f32(0.25), "z1": zp(100),
              "s2": f32(0.05), "z2": zp(140)}, NP2ONNX[dt], {"axis": 1})

# QGemm: A uint8 / int8, B int8 / uint8, per tensor and per column, C, quantized or float output
for at, bt in ((np.uint8, np.int8), (np.uint8, np.uint8), (np.int8, np.int8)):
    t = "%s_%s" % (at.__name__, bt.__name__)
    a, bw = q(at, (5, 37)), q(bt, (37, 11))
    bz = np.array(3 if bt == np.int8 else 130, dtype=bt)
    c = rng.integers(-5000, 5000, size=(11,)).astype(np.int32)
    base = {"as": f32(0.02), "az": np.array(7 if at == np.int8 else 128, dtype=at), "b": bw, "bs": f32(0.01),
            "bz": bz, "c": c}
    run_case("QGemm_%s_float" % t, "QGemm", ["a", "as", "az", "b", "bs", "bz", "c"], {"a": a}, base,
             TensorProto.FLOAT)
    run_case("QGemm_%s_q" % t, "QGemm", ["a", "as", "az", "b", "bs", "bz", "c", "ys", "yz"], {"a": a},
             dict(base, ys=f32(0.05), yz=np.array(10, dtype=at)), NP2ONNX[at], {"alpha": 0.5})
    bcol = rng.uniform(0.002, 0.02, size=(11,)).astype(np.float32)
    run_case("QGemm_%s_percol_transB" % t, "QGemm", ["a", "as", "az", "b", "bs", "bz", "c", "ys", "yz"], {"a": a},
             dict(base, b=np.ascontiguousarray(bw.T), bs=bcol, bz=np.full((11,), bz, dtype=bt),
                  ys=f32(0.08), yz=np.array(0, dtype=at)), NP2ONNX[at], {"transB": 1})
# ties and saturation: power-of-two scales on a 1-deep product
a, bw = q(np.uint8, (16, 1)), q(np.int8, (1, 16))
run_case("QGemm_ties", "QGemm", ["a", "as", "az", "b", "bs", "bz", "", "ys", "yz"], {"a": a},
         {"as": f32(0.5), "az": np.array(128, np.uint8), "b": bw, "bs": f32(0.5), "bz": np.array(0, np.int8),
          "ys": f32(8.0), "yz": np.array(128, np.uint8)}, TensorProto.UINT8)

# bad inputs: the error names the node and what is wrong
a, b = q(np.uint8, (2, 3)), q(np.uint8, (2, 3))
run_case("bad_scale_shape", "QLinearAdd", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], {"a": a, "b": b},
         {"as": f32([0.1, 0.2]), "az": np.array(0, np.uint8), "bs": f32(0.1), "bz": np.array(0, np.uint8),
          "ys": f32(0.1), "yz": np.array(0, np.uint8)}, TensorProto.UINT8, expect_error=["bad_scale_shape", "A_scale"])
run_case("bad_zp_type", "QLinearMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], {"a": a, "b": b},
         {"as": f32(0.1), "az": np.array(0, np.int8), "bs": f32(0.1), "bz": np.array(0, np.uint8),
          "ys": f32(0.1), "yz": np.array(0, np.uint8)}, TensorProto.UINT8, expect_error=["bad_zp_type", "A_zero_point"])
run_case("bad_channels_last", "QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"],
         {"x": q(np.uint8, (1, 2, 3, 3))}, {"xs": f32(0.1), "xz": np.array(0, np.uint8), "ys": f32(0.1),
                                           "yz": np.array(0, np.uint8)}, TensorProto.UINT8, {"channels_last": 2},
         expect_error=["bad_channels_last", "channels_last"])
run_case("bad_missing_zp", "QLinearGlobalAveragePool", ["x", "xs", "", "ys", "yz"],
         {"x": q(np.uint8, (1, 2, 3, 3))}, {"xs": f32(0.1), "ys": f32(0.1), "yz": np.array(0, np.uint8)},
         TensorProto.UINT8, expect_error=["bad_missing_zp", "input 2"])
sys.exit(1 if failures else 0)
