#!/usr/bin/env python3
"""sensitivity_check.py -- `infera quantize --sensitivity / --min-sqnr / --sensitivity-json` against ONNX Runtime.

    python sensitivity_check.py INFERA WORKDIR [--reduce-range]

Builds an MLP (16 -> 32 -> 32 -> 32 -> 10, Relu between, logits and softmax outputs) whose second layer is made
deliberately sensitive: unit 5 of the first layer has a bias of 60, so the second layer's input (the first layer's
Relu output) has a range ~60x wider than its other units need, and 8 bits over [0, 60+] crush them; fc2 reads that
unit with tiny weights, so the FP32 model is unaffected.  Then for each node Infera reports, the file with that node
alone quantized (`infera quantize --exclude <every other node>`) and the FP32 model run in ONNX Runtime over the same
calibration rows; SQNR (10 log10(sum ref^2 / sum (q - ref)^2) over both float outputs), max abs error and top-1
agreement (argmax over the last dim) are computed in numpy and must agree with Infera's JSON:
  SQNR within 0.5 dB: both runtimes compute the same quantized graph; they differ only where an activation rounds
  to the neighbouring uint8 level (FP32 sums in another order), a change of one step in a few values against the
  quantization noise of every value: measured < 0.05 dB here, 0.5 leaves room for other CPUs' kernels;
  max abs error within 10 % + 1e-4 (the largest error is one value: one step of rounding can move it);
  top-1 within 1 % of the rows (a tie broken the other way).
The ranking's worst node must be fc2.  --min-sqnr between two reported figures keeps exactly the nodes below it FP32
(the written file's Gemms read float weights; checked with onnx), and the output model's figures agree with ORT on
that file.  Bad input: --sensitivity without --calibration, a model whose only output is int64 (and one with a float
and an int64 output: the int64 one is left out and said so), an empty calibration .npy, a bad --min-sqnr, a
threshold above every node.  Prints "ok NAME" / "FAIL NAME: why" lines (tests/check.sh's check_lines).
"""
import json
import math
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

INFERA, WORK = sys.argv[1], sys.argv[2]
EXTRA = sys.argv[3:]  # --reduce-range on CPUs whose ORT kernels would saturate
FAILS = 0
SQNR_TOL_DB, MAXERR_REL, TOP1_TOL = 0.5, 0.10, 0.01
FEED_ROWS = 64  # Infera's calibration batches (INF__QUANT_FEED_ROWS)


def ok(name):
    print("ok " + name, flush=True)


def fail(name, why):
    global FAILS
    FAILS += 1
    print("FAIL %s: %s" % (name, why), flush=True)


def check(name, cond, why=""):
    (ok if cond else lambda n: fail(n, why))(name)


def gemm_layer(nodes, inits, name, x, w, b, relu):
    inits += [numpy_helper.from_array(w, name + ".weight"), numpy_helper.from_array(b, name + ".bias")]
    y = "/%s/Gemm_output_0" % name
    nodes.append(helper.make_node("Gemm", [x, name + ".weight", name + ".bias"], [y], name="/%s/Gemm" % name, transB=1))
    if not relu:
        return y
    nodes.append(helper.make_node("Relu", [y], [y + "_relu"], name="/%s/Relu" % name))
    return y + "_relu"


def make_mlp(path, extra_int_output=False, only_int_output=False):
    rng = np.random.default_rng(7)
    sizes = [16, 32, 32, 32, 10]
    nodes, inits = [], []
    x = "input"
    for i in range(4):
        w = (rng.standard_normal((sizes[i + 1], sizes[i])) / math.sqrt(sizes[i])).astype(np.float32)
        b = (0.1 * rng.standard_normal(sizes[i + 1])).astype(np.float32)
        if i == 0:
            b[5] = 60.0  # unit 5 of fc1: always ~60, the wide range fc2's quantized input must cover
        if i == 1:
            w[:, 5] = 1e-3  # fc2 barely reads it: FP32 unaffected
        x = gemm_layer(nodes, inits, "fc%d" % (i + 1), x, w, b, relu=i < 3)
    nodes[-1].output[0] = "logits"
    outputs = []
    if not only_int_output:
        nodes.append(helper.make_node("Softmax", ["logits"], ["probabilities"], name="/softmax", axis=-1))
        outputs += [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10]),
                    helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", 10])]
    if extra_int_output or only_int_output:
        nodes.append(helper.make_node("ArgMax", ["logits"], ["label"], name="/argmax", axis=-1, keepdims=0))
        outputs.append(helper.make_tensor_value_info("label", TensorProto.INT64, ["N"]))
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 16])],
                          outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="sensitivity_check")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)


def infera_quantize(args):
    p = subprocess.run([INFERA, "quantize"] + args, capture_output=True, text=True)
    if "Sanitizer" in p.stderr:  # an ASan/UBSan build: a report is a failure even where an error was expected
        fail("no sanitizer report: quantize " + " ".join(args), p.stderr[-2000:])
    return p.returncode, p.stdout, p.stderr


def ort_outputs(path, x):
    """The model's outputs on x, run in batches of FEED_ROWS rows as Infera feeds the calibration data (dynamic
    quantization's ranges are per batch)."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in s.get_outputs()]
    parts = [s.run(None, {"input": x[i:i + FEED_ROWS]}) for i in range(0, len(x), FEED_ROWS)]
    return {n: np.concatenate([p[k] for p in parts]) for k, n in enumerate(names)}


def fidelity(ref, q):
    """SQNR / max abs err / top-1 over the float outputs, in float64 (the figures Infera reports)."""
    ref2 = err2 = maxerr = 0.0
    agree = rows = 0
    for name, r in ref.items():
        if r.dtype != np.float32:
            continue
        r64, q64 = r.astype(np.float64), q[name].astype(np.float64)
        ref2 += float(np.sum(r64 * r64))
        err2 += float(np.sum((q64 - r64) ** 2))
        maxerr = max(maxerr, float(np.max(np.abs(q64 - r64))))
        if r.shape[-1] > 1:
            agree += int(np.sum(np.argmax(r, axis=-1) == np.argmax(q[name], axis=-1)))
            rows += r.size // r.shape[-1]
    sqnr = math.inf if err2 == 0 else 10 * math.log10(ref2 / err2)
    return {"sqnr_db": sqnr, "max_abs_err": maxerr, "top1_agreement": agree / rows if rows else None}


def agrees(tag, got, want):
    g = math.inf if got["sqnr_db"] is None else got["sqnr_db"]
    check(tag + " SQNR %.2f dB (ORT %.2f)" % (g, want["sqnr_db"]),
          abs(g - want["sqnr_db"]) <= SQNR_TOL_DB or (math.isinf(g) and math.isinf(want["sqnr_db"])),
          "Infera %.3f dB vs ORT+numpy %.3f dB" % (g, want["sqnr_db"]))
    check(tag + " max abs err %.4g (ORT %.4g)" % (got["max_abs_err"], want["max_abs_err"]),
          abs(got["max_abs_err"] - want["max_abs_err"]) <= MAXERR_REL * want["max_abs_err"] + 1e-4,
          "Infera %g vs %g" % (got["max_abs_err"], want["max_abs_err"]))
    check(tag + " top-1 %.4f (ORT %.4f)" % (got["top1_agreement"], want["top1_agreement"]),
          abs(got["top1_agreement"] - want["top1_agreement"]) <= TOP1_TOL,
          "Infera %s vs %s" % (got["top1_agreement"], want["top1_agreement"]))


def gemm_weights(path):
    """{Gemm node name: True when its weight is a float initializer (left FP32)}."""
    m = onnx.load(path)
    floats = {i.name for i in m.graph.initializer if i.data_type == TensorProto.FLOAT}
    return {n.name: n.input[1] in floats for n in m.graph.node if n.op_type == "Gemm"}


def run_config(tag, model, calib, x, ref, opts):
    js = os.path.join(WORK, tag + ".json")
    out = os.path.join(WORK, tag + ".onnx")
    rc, so, se = infera_quantize([model, "-o", out, "--calibration", calib, "--sensitivity",
                                  "--sensitivity-json", js] + opts + EXTRA)
    if rc != 0:
        fail(tag + " --sensitivity runs", se.strip())
        return None
    check(tag + " report prints the table", "sensitivity: each node quantized alone" in so and "/fc2/Gemm" in so, so)
    rep = json.load(open(js))
    nodes = rep["nodes"]
    names = [n["name"] for n in nodes]
    check(tag + " every Gemm analysed once", sorted(names) == ["/fc%d/Gemm" % i for i in (1, 2, 3, 4)], names)
    check(tag + " records = calibration rows", rep["records"] == len(x), rep["records"])
    sq = [n["alone"]["sqnr_db"] for n in nodes]
    check(tag + " worst SQNR first", all(a <= b for a, b in zip(sq, sq[1:])), sq)
    oracle = {}
    for n in nodes:
        alone = os.path.join(WORK, "%s.%s.onnx" % (tag, n["name"].split("/")[1]))
        excl = sum((["--exclude", o] for o in names if o != n["name"]), [])
        rc, _, se = infera_quantize([model, "-o", alone, "--calibration", calib] + excl + opts + EXTRA)
        if rc != 0:
            fail(tag + " node-alone file " + n["name"], se.strip())
            continue
        w = gemm_weights(alone)
        check(tag + " %s alone: only it quantized" % n["name"],
              all(fp32 == (k != n["name"]) for k, fp32 in w.items()), w)
        oracle[n["name"]] = fidelity(ref, ort_outputs(alone, x))
        agrees("%s %s alone:" % (tag, n["name"]), n["alone"], oracle[n["name"]])
    # QDQ quantizes a Gemm's input only: the wide tensor is fc2's alone.  QOperator also quantizes each node's
    # output (QLinearMatMul writes uint8), so fc1 -- whose output it is -- loses as much: the two worst.
    want = {"/fc2/Gemm"} if "qoperator" not in opts else {"/fc1/Gemm", "/fc2/Gemm"}
    worst_oracle = set(sorted(oracle, key=lambda k: oracle[k]["sqnr_db"])[:len(want)])
    check(tag + " worst: the deliberately sensitive " + " ".join(sorted(want)), set(names[:len(want)]) == want,
          "Infera's order %s (SQNR %s)" % (names, sq))
    check(tag + " ORT's worst agree", worst_oracle == want, worst_oracle)
    agrees(tag + " all quantized:", rep["all_quantized"], fidelity(ref, ort_outputs(out, x)))
    check(tag + " without --min-sqnr OUT is all quantized", all(not fp for fp in gemm_weights(out).values()))
    return rep


def check_min_sqnr(tag, model, calib, x, ref, opts, rep):
    sq = [n["alone"]["sqnr_db"] for n in rep["nodes"]]
    for k in (1, 2):  # thresholds between the k-th and the next worst
        thr = (sq[k - 1] + sq[k]) / 2
        out = os.path.join(WORK, "%s.min%d.onnx" % (tag, k))
        js = os.path.join(WORK, "%s.min%d.json" % (tag, k))
        rc, so, se = infera_quantize([model, "-o", out, "--calibration", calib, "--min-sqnr", "%.3f" % thr,
                                      "--sensitivity-json", js] + opts + EXTRA)
        if rc != 0:
            fail("%s --min-sqnr %.2f runs" % (tag, thr), se.strip())
            continue
        r2 = json.load(open(js))
        below = {n["name"] for n in rep["nodes"] if n["alone"]["sqnr_db"] < thr}
        kept = {name for name, fp32 in gemm_weights(out).items() if fp32}
        check("%s --min-sqnr %.2f keeps exactly the %d nodes below it FP32" % (tag, thr, k), kept == below,
              "FP32 in the file: %s, below: %s" % (sorted(kept), sorted(below)))
        flagged = {n["name"] for n in r2["nodes"] if n["excluded_by_min_sqnr"]}
        check("%s --min-sqnr %.2f JSON marks them" % (tag, thr), flagged == below, flagged)
        check("%s --min-sqnr %.2f report says so" % (tag, thr),
              "%d node%s excluded by --min-sqnr" % (k, "" if k == 1 else "s") in so and
              "excluded by --min-sqnr" in so, so)
        want = fidelity(ref, ort_outputs(out, x))
        agrees("%s --min-sqnr %.2f output model:" % (tag, thr), r2["output_model"], want)
        check("%s --min-sqnr %.2f output better than all quantized" % (tag, thr),
              want["sqnr_db"] > r2["all_quantized"]["sqnr_db"], (want, r2["all_quantized"]))
        # with --exclude as well: both kept FP32
        out3 = os.path.join(WORK, "%s.min%d.excl.onnx" % (tag, k))
        rc, so, se = infera_quantize([model, "-o", out3, "--calibration", calib, "--min-sqnr", "%.3f" % thr,
                                      "--exclude", "/fc4/Gemm"] + opts + EXTRA)
        kept = {name for name, fp32 in gemm_weights(out3).items() if fp32} if rc == 0 else None
        check("%s --min-sqnr %.2f with --exclude /fc4/Gemm" % (tag, thr), kept == below | {"/fc4/Gemm"},
              se.strip() or kept)


def expect_error(name, args, pattern):
    rc, so, se = infera_quantize(args)
    check(name, rc != 0 and rc < 126 and pattern in se, "rc %d, stderr %r" % (rc, se))


def main():
    os.makedirs(WORK, exist_ok=True)
    model = os.path.join(WORK, "mlp.onnx")
    make_mlp(model)
    rng = np.random.default_rng(11)
    x = rng.standard_normal((300, 16)).astype(np.float32)
    calib = os.path.join(WORK, "calib.npy")
    np.save(calib, x)
    ref = ort_outputs(model, x)
    configs = [("qdq", []), ("qop-pc", ["--format", "qoperator", "--per-channel"]),
               ("pct", ["--method", "percentile"])]
    for tag, opts in configs:
        rep = run_config(tag, model, calib, x, ref, opts)
        if rep and tag != "pct":
            check_min_sqnr(tag, model, calib, x, ref, opts, rep)

    # bad input and edge cases
    out = os.path.join(WORK, "bad.onnx")
    expect_error("--sensitivity without --calibration", [model, "-o", out, "--sensitivity"], "need --calibration")
    expect_error("--min-sqnr without --calibration", [model, "-o", out, "--min-sqnr", "30"], "need --calibration")
    expect_error("--min-sqnr not a number", [model, "-o", out, "--calibration", calib, "--min-sqnr", "x"],
                 "--min-sqnr needs a number")
    expect_error("--min-sqnr above every node", [model, "-o", out, "--calibration", calib, "--min-sqnr", "500"],
                 "keeps every node FP32")
    intonly = os.path.join(WORK, "int_only.onnx")
    make_mlp(intonly, only_int_output=True)
    expect_error("model with only an int64 output", [intonly, "-o", out, "--calibration", calib, "--sensitivity"],
                 "no float32 output to compare")
    empty = os.path.join(WORK, "empty.npy")
    np.save(empty, np.zeros((0, 16), np.float32))
    expect_error("empty calibration", [model, "-o", out, "--calibration", empty, "--sensitivity"], "is empty")
    mixed = os.path.join(WORK, "mixed.onnx")
    make_mlp(mixed, extra_int_output=True)
    js = os.path.join(WORK, "mixed.json")
    rc, so, se = infera_quantize([mixed, "-o", out, "--calibration", calib, "--sensitivity-json", js] + EXTRA)
    check("float + int64 outputs: int64 left out, said so",
          rc == 0 and "output 'label' is not float32" in so and json.load(open(js))["skipped_outputs"] == ["label"],
          se or so)
    if rc == 0:
        got = json.load(open(js))["all_quantized"]
        refm = ort_outputs(mixed, x)
        agrees("float + int64 outputs, all quantized:", got, fidelity(refm, ort_outputs(out, x)))
    # records of a batch source through the default mapping, fewer than the source has (a partial last batch)
    csv = os.path.join(WORK, "calib.csv")
    with open(csv, "w") as f:
        f.write("id," + ",".join("f%d" % j for j in range(16)) + "\n")
        for i, row in enumerate(x):
            f.write("r%d," % i + ",".join("%.9g" % v for v in row) + "\n")
    js = os.path.join(WORK, "csv.json")
    rc, so, se = infera_quantize([model, "-o", out, "--calibration", "csv:" + csv, "--calibration-rows", "130",
                                  "--sensitivity-json", js] + EXTRA)
    if rc == 0:
        got = json.load(open(js))
        check("csv records: 130 compared", got["records"] == 130, got["records"])
        agrees("csv records, all quantized:", got["all_quantized"],
               fidelity({k: v[:130] for k, v in ref.items()}, ort_outputs(out, x[:130])))
    else:
        fail("csv records --sensitivity runs", se.strip())
    # a model with one candidate: fine
    one = os.path.join(WORK, "one.onnx")
    m = onnx.load(model)
    keep = [n.name for n in m.graph.node if n.op_type == "Gemm"][1:]
    rc, so, se = infera_quantize([model, "-o", one, "--calibration", calib, "--sensitivity",
                                  "--sensitivity-json", js] + sum((["--exclude", k] for k in keep), []) + EXTRA)
    rows = json.load(open(js))["nodes"] if rc == 0 else []
    check("one candidate (the others --exclude'd): one row", rc == 0 and [r["name"] for r in rows] == ["/fc1/Gemm"],
          se or rows)
    # dynamic mode takes --calibration for the analysis
    js = os.path.join(WORK, "dyn.json")
    rc, so, se = infera_quantize([model, "-o", out, "--mode", "dynamic", "--calibration", calib,
                                  "--sensitivity-json", js] + EXTRA)
    if rc == 0:
        agrees("dynamic, all quantized:", json.load(open(js))["all_quantized"], fidelity(ref, ort_outputs(out, x)))
    else:
        fail("dynamic --sensitivity runs", se.strip())
    expect_error("dynamic --calibration without --sensitivity still refused",
                 [model, "-o", out, "--mode", "dynamic", "--calibration", calib], "are for --mode static")
    sys.exit(1 if FAILS else 0)


main()
