#!/usr/bin/python3
"""Oracles for tests/tools/test_compress.sh (infera evaluate / prune / distill).

  compress_oracle.py data DIR
      writes small deterministic test cases (numpy seed 3): for each of
      binary (tests/models/mlp.onnx, 32 features), ties (binary, tied scores), multiclass and regression
      (tiny Gemm models built here with onnx.helper):
        DIR/<case>.csv   id, the features, the label `y` (source order = model input order)
        DIR/<case>.npy   the features as float32 (what `infera run` reads)
        DIR/<case>.y.npy the labels
  compress_oracle.py metrics TASK EVAL.json OUT_DIR LABELS.npy
      computes scikit-learn's metrics from the predictions `infera run` wrote
      (OUT_DIR/probabilities.npy, or OUT_DIR/y.npy for regression) and checks
      that `infera evaluate --json` (EVAL.json) has them within 1e-9.
  compress_oracle.py lstsq ORIG.onnx PRUNED.onnx X.npy
      for the one-hidden-layer MatMul+Add model of `data` (DIR/mm.onnx): checks that the pruned model's
      refitted output layer is numpy's least-squares fit of the original pre-activations on the kept
      hidden units (residuals equal to 1e-6 relative).
  compress_oracle.py close A.npy B.npy RTOL ATOL
      exits 1 unless the arrays have the same shape and are close.

Needs Debian's python3-numpy, python3-sklearn and python3-onnx.
"""
import json
import os
import sys

import numpy as np


def write_case(d, name, X, y):
    np.save(os.path.join(d, name + ".npy"), X.astype(np.float32))
    np.save(os.path.join(d, name + ".y.npy"), y)
    with open(os.path.join(d, name + ".csv"), "w") as f:
        f.write("id," + ",".join("f%d" % j for j in range(X.shape[1])) + ",y\n")
        for i in range(X.shape[0]):
            lab = ("%d" % y[i]) if y.dtype.kind in "iu" else repr(float(y[i]))
            f.write("r%05d," % i + ",".join(repr(float(v)) for v in X[i].astype(np.float32)) + "," + lab + "\n")


def gemm_model(path, W, b, head):
    from onnx import TensorProto, helper, numpy_helper
    k, c = W.shape
    nodes = [helper.make_node("Gemm", ["x", "W", "b"], ["z"])]
    outs = []
    if head == "softmax":
        nodes.append(helper.make_node("Softmax", ["z"], ["probabilities"], axis=1))
        outs.append(helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", c]))
    elif head == "logits":
        nodes.append(helper.make_node("Identity", ["z"], ["logits"]))
        outs.append(helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", c]))
    else:
        nodes.append(helper.make_node("Identity", ["z"], ["y"]))
        outs.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1]))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", k])], outs,
                          [numpy_helper.from_array(W.astype(np.float32), "W"), numpy_helper.from_array(b.astype(np.float32), "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def make_data(d):
    rng = np.random.default_rng(3)
    # binary: tests/models/mlp.onnx (32 features -> 2 classes); labels loosely tied to a feature mix
    X = rng.normal(size=(600, 32)).astype(np.float32)
    X[:, :4] = np.round(X[:, :4], 1)  # repeated values: ties in the scores too
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=1.5, size=600) > 0).astype(np.int64)
    write_case(d, "binary", X, y)
    # binary with tied scores: the score depends only on a feature with few distinct values
    W = np.zeros((4, 2))
    W[0, 1] = 1.5
    gemm_model(os.path.join(d, "ties.onnx"), W, np.zeros(2), "softmax")
    X = rng.normal(size=(300, 4)).astype(np.float32)
    X[:, 0] = np.round(X[:, 0] * 2) / 2
    y = (X[:, 0] + rng.normal(size=300) > 0.3).astype(np.int64)
    write_case(d, "ties", X, y)
    # one hidden layer as MatMul + Add (a PyTorch-style export), 32 features as the binary case
    from onnx import TensorProto, helper, numpy_helper
    W1, b1 = (rng.normal(size=(32, 64)) * 0.3).astype(np.float32), rng.normal(size=64).astype(np.float32)
    W2, b2 = (rng.normal(size=(64, 2)) * 0.3).astype(np.float32), rng.normal(size=2).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["input", "W1"], ["m1"]), helper.make_node("Add", ["m1", "b1"], ["a1"]),
             helper.make_node("Relu", ["a1"], ["h1"]), helper.make_node("MatMul", ["h1", "W2"], ["m2"]),
             helper.make_node("Add", ["b2", "m2"], ["logits"]),
             helper.make_node("Softmax", ["logits"], ["probabilities"], axis=1)]
    g = helper.make_graph(nodes, "mm", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 32])],
                          [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", 2])],
                          [numpy_helper.from_array(v, n) for v, n in ((W1, "W1"), (b1, "b1"), (W2, "W2"), (b2, "b2"))])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    with open(os.path.join(d, "mm.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    # multiclass: 8 features -> 3 classes
    W = rng.normal(size=(8, 3))
    b = rng.normal(size=3)
    gemm_model(os.path.join(d, "multiclass.onnx"), W, b, "softmax")
    gemm_model(os.path.join(d, "multiclass_logits.onnx"), W, b, "logits")  # the same model without its Softmax
    X = rng.normal(size=(500, 8)).astype(np.float32)
    y = np.argmax(X @ W + b + rng.gumbel(size=(500, 3)) * 1.5, axis=1).astype(np.int64)
    write_case(d, "multiclass", X, y)
    # regression: 6 features -> 1 value
    W = rng.normal(size=(6, 1))
    b = rng.normal(size=1)
    gemm_model(os.path.join(d, "regression.onnx"), W, b, "identity")
    X = rng.normal(size=(400, 6)).astype(np.float32)
    y = (X @ W + b)[:, 0] + rng.normal(scale=0.3, size=400)
    write_case(d, "regression", X, y)


def sklearn_metrics(task, out_dir, y):
    from sklearn import metrics as M
    if task == "regression":
        p = np.load(os.path.join(out_dir, "y.npy")).astype(np.float64).reshape(-1)
        return {"rmse": M.mean_squared_error(y, p, squared=False), "mae": M.mean_absolute_error(y, p),
                "r2": M.r2_score(y, p)}
    P = np.load(os.path.join(out_dir, "probabilities.npy")).astype(np.float64)
    if task == "binary":
        p1 = P[:, 1]
        pred = (p1 > 0.5).astype(np.int64)
        return {"accuracy": M.accuracy_score(y, pred), "precision": M.precision_score(y, pred, zero_division=0),
                "recall": M.recall_score(y, pred, zero_division=0), "f1": M.f1_score(y, pred, zero_division=0),
                "auc": M.roc_auc_score(y, p1), "logloss": M.log_loss(y, p1, labels=[0, 1])}
    pred = np.argmax(P, axis=1)
    avg = dict(average="macro", zero_division=0)
    return {"accuracy": M.accuracy_score(y, pred), "precision": M.precision_score(y, pred, **avg),
            "recall": M.recall_score(y, pred, **avg), "f1": M.f1_score(y, pred, **avg),
            "auc": M.roc_auc_score(y, P, multi_class="ovr"), "logloss": M.log_loss(y, P, labels=list(range(P.shape[1])))}


def check_metrics(task, eval_json, out_dir, labels):
    got = json.load(open(eval_json))
    y = np.load(labels)
    want = sklearn_metrics(task, out_dir, y)
    bad = 0
    if got["task"] != task or got["rows"] != len(y):
        print("task/rows: infera says %s/%d, expected %s/%d" % (got["task"], got["rows"], task, len(y)))
        bad = 1
    if set(got["metrics"]) != set(want):
        print("metric names: infera %s, sklearn %s" % (sorted(got["metrics"]), sorted(want)))
        bad = 1
    for k, v in want.items():
        g = got["metrics"].get(k)
        ok = g is not None and abs(g - v) <= 1e-9
        print("%-4s %-10s infera %.15g  sklearn %.15g" % ("ok" if ok else "FAIL", k, g if g is not None else float("nan"), v))
        bad |= not ok
    for k in ("size_bytes", "parameters", "latency_us_p50", "latency_us_p99", "throughput_rows_per_s", "peak_rss_mb"):
        if k not in got["cost"]:
            print("FAIL cost.%s missing" % k)
            bad = 1
    return bad


def main():
    if sys.argv[1] == "data":
        make_data(sys.argv[2])
        return 0
    if sys.argv[1] == "metrics":
        return check_metrics(*sys.argv[2:6])
    if sys.argv[1] == "lstsq":
        import onnx
        from onnx import numpy_helper
        def weights(path):
            return {t.name: numpy_helper.to_array(t).astype(np.float64) for t in onnx.load(path).graph.initializer}
        o, p = weights(sys.argv[2]), weights(sys.argv[3])
        X = np.load(sys.argv[4]).astype(np.float64)
        T = np.maximum(X @ o["W1"] + o["b1"], 0) @ o["W2"] + o["b2"]
        Hk = np.maximum(X @ p["W1"] + p["b1"], 0)
        A = np.hstack([Hk, np.ones((len(Hk), 1))])
        best = A @ np.linalg.lstsq(A, T, rcond=None)[0]
        ours = Hk @ p["W2"] + p["b2"]
        r_best, r_ours = np.mean((best - T) ** 2), np.mean((ours - T) ** 2)
        print("  kept %d of %d hidden units; residual: infera %.9g, numpy lstsq %.9g" % (Hk.shape[1], o["W1"].shape[1], r_ours, r_best))
        return 0 if abs(r_ours - r_best) <= 1e-6 * max(r_best, 1e-12) + 1e-9 else 1
    if sys.argv[1] == "close":
        a, b = np.load(sys.argv[2]), np.load(sys.argv[3])
        rtol, atol = float(sys.argv[4]), float(sys.argv[5])
        if a.shape != b.shape:
            print("shape %s vs %s" % (a.shape, b.shape))
            return 1
        if not np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol):
            print("max |diff| %.3g" % np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
            return 1
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
