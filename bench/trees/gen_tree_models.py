#!/usr/bin/python3
"""Makes the tree-ensemble benchmark models of bench/trees (Debian's
python3-xgboost, python3-onnx, python3-numpy):

  models/t300d8.json|.onnx   binary:logistic, 300 trees, max_depth 8, 32 features
  models/t1000d6.json|.onnx  binary:logistic, 1000 trees, max_depth 6, 32 features
  models/rows.npy            100,000 float32 rows to score (uniform [-1, 1), 1% NaN)
  models/<m>.xgb.npy         XGBoost's probabilities for rows.npy (the reference)

Synthetic data: a nonlinear function of the 32 features plus noise, so the
trees grow to full depth.  Rows are drawn from the distribution `infera bench`
and ort_bench.js use for random inputs (uniform [-1, 1)), so all three
engines walk realistic paths.  Deterministic (fixed seeds).
"""
import os
import sys

import numpy as np
import xgboost as xgb

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "models")
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "ml"))
from ml_convert import xgb_to_onnx  # noqa: E402
import onnx  # noqa: E402

F = 32


def data(rng, n):
    x = rng.uniform(-1, 1, size=(n, F)).astype(np.float32)
    z = (np.sin(3 * x[:, 0]) + x[:, 1] * x[:, 2] - x[:, 3] ** 2 + 0.5 * np.cos(4 * x[:, 4] * x[:, 5])
         + 0.3 * x[:, 6:16].sum(1) - 0.2 * x[:, 16:32].prod(1) * 100 + rng.normal(scale=0.5, size=n))
    return x, (z > np.median(z)).astype(int)


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(2024)
    x, y = data(rng, 50000)
    x[rng.random(size=x.shape) < 0.01] = np.nan
    rows = rng.uniform(-1, 1, size=(100000, F)).astype(np.float32)
    rows[rng.random(size=rows.shape) < 0.01] = np.nan
    np.save(os.path.join(OUT, "rows.npy"), rows)
    for name, trees, depth in [("t300d8", 300, 8), ("t1000d6", 1000, 6)]:
        params = dict(objective="binary:logistic", max_depth=depth, eta=0.05, seed=0, nthread=2, tree_method="hist",
                      min_child_weight=0, gamma=0, subsample=0.8)
        bst = xgb.train(params, xgb.DMatrix(x, label=y, missing=np.nan), num_boost_round=trees)
        path = os.path.join(OUT, f"{name}.json")
        bst.save_model(path)
        onnx.save(xgb_to_onnx(path), os.path.join(OUT, f"{name}.onnx"))
        p = bst.inplace_predict(rows)
        np.save(os.path.join(OUT, f"{name}.xgb.npy"), np.stack([1 - p, p], 1).astype(np.float32))
        print(f"{name}: {trees} trees, depth {depth}")


if __name__ == "__main__":
    main()
