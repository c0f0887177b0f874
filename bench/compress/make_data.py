#!/usr/bin/python3
"""Data and the MLP for bench/compress/run.sh (model compression benchmark).

  make_data.py WORK_DIR

Uses the generator of examples/fraud/gen_fraud.py (the fraud tree model's own distribution):
  train.csv  the 50,000 rows of seed 7 the XGBoost teacher was trained on (labels is_fraud)
  calib.csv  the 10,000 rows of seed 7 after them (the teacher's validation rows): calibration
  test.csv   100,000 fresh rows (seed 2026), never seen by any model: every quality number
and trains the tabular MLP of the benchmark on train.csv with scikit-learn (MLPClassifier,
hidden 256-256-128 ReLU, like bench/'s tabular MLP, Adam, early stopping, seed 0), exported
with onnx.helper as fraud_mlp.onnx: input "input" [N,12] -> standardise (missing = mean)
-> Gemm/Relu x3 -> Gemm -> Softmax "probabilities" [N,2], ArgMax "label" [N].
Needs Debian's python3-numpy, python3-sklearn, python3-onnx, python3-xgboost (gen_fraud imports it).
"""
import csv
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "fraud"))
from gen_fraud import FEATURES, make  # noqa: E402


def write_csv(path, x, y, first_id):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["transaction_id"] + FEATURES + ["is_fraud"])
        for i, (row, lab) in enumerate(zip(x, y)):
            w.writerow([f"t{first_id + i:07d}"] + ["" if np.isnan(v) else f"{v:g}" for v in row] + [int(lab)])


def export_mlp(clf, mean, std, path):
    from onnx import TensorProto, helper, numpy_helper
    inits = [numpy_helper.from_array(mean.astype(np.float32), "mean"),
             numpy_helper.from_array((1 / std).astype(np.float32), "inv_std"),
             numpy_helper.from_array(np.array(0, np.float32), "zero")]
    nodes = [helper.make_node("Sub", ["input", "mean"], ["c"]), helper.make_node("Mul", ["c", "inv_std"], ["s"]),
             helper.make_node("IsNaN", ["s"], ["nan"]), helper.make_node("Where", ["nan", "zero", "s"], ["h0"])]
    h = "h0"
    L = len(clf.coefs_)
    for l, (W, b) in enumerate(zip(clf.coefs_, clf.intercepts_)):
        if l == L - 1:  # one logistic unit z -> softmax([-z/2, z/2]) = [1 - sigmoid(z), sigmoid(z)]
            W = np.concatenate([-W / 2, W / 2], axis=1)
            b = np.concatenate([-b / 2, b / 2])
        inits += [numpy_helper.from_array(W.astype(np.float32), f"W{l}"), numpy_helper.from_array(b.astype(np.float32), f"b{l}")]
        z = f"z{l}"
        nodes.append(helper.make_node("Gemm", [h, f"W{l}", f"b{l}"], [z], name=f"dense{l}"))
        if l < L - 1:
            h = f"h{l + 1}"
            nodes.append(helper.make_node("Relu", [z], [h]))
    nodes.append(helper.make_node("Softmax", [z], ["probabilities"], axis=1))
    nodes.append(helper.make_node("ArgMax", ["probabilities"], ["label"], axis=1, keepdims=0))
    g = helper.make_graph(nodes, "fraud_mlp", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 12])],
                          [helper.make_tensor_value_info("label", TensorProto.INT64, ["N"]),
                           helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", 2])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    x, y = make(60000, np.random.default_rng(7))
    xt, yt = make(100000, np.random.default_rng(2026))
    write_csv(os.path.join(out, "train.csv"), x[:50000], y[:50000], 0)
    write_csv(os.path.join(out, "calib.csv"), x[50000:], y[50000:], 50000)
    write_csv(os.path.join(out, "test.csv"), xt, yt, 1000000)
    from sklearn.neural_network import MLPClassifier
    xtr = x[:50000].astype(np.float64)
    mean, std = np.nanmean(xtr, 0), np.nanstd(xtr, 0)
    std[std == 0] = 1
    xs = np.nan_to_num((xtr - mean) / std, nan=0.0)
    clf = MLPClassifier(hidden_layer_sizes=(256, 256, 128), max_iter=40, early_stopping=True, random_state=0,
                        batch_size=256, learning_rate_init=1e-3, alpha=1e-4, n_iter_no_change=5)
    clf.fit(xs, y[:50000])
    export_mlp(clf, mean, std, os.path.join(out, "fraud_mlp.onnx"))
    print(f"train {len(xtr)} rows ({y[:50000].mean():.2%} fraud), test {len(xt)} rows ({yt.mean():.2%} fraud); "
          f"MLP trained {clf.n_iter_} epochs")


if __name__ == "__main__":
    main()
