#!/usr/bin/python3
"""XGBoost's side of bench/trees/run.sh: times Booster.inplace_predict (the
native predictor, no DMatrix construction) on MODEL.json and prints one JSON
line with the fields of `infera bench --json` that summarize.py reads.

  xgb_bench.py MODEL.json ROWS.npy --threads N --batch B [--iters N] [--warmup N]
"""
import argparse
import json
import time

import numpy as np
import xgboost as xgb

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("rows")
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--batch", type=int, default=1)
ap.add_argument("--iters", type=int, default=5)
ap.add_argument("--warmup", type=int, default=1)
a = ap.parse_args()
bst = xgb.Booster(model_file=a.model)
bst.set_param({"nthread": a.threads, "predictor": "cpu_predictor"})
x = np.load(a.rows)[: a.batch].copy()
for _ in range(a.warmup):
    bst.inplace_predict(x)
lat = []
for _ in range(a.iters):
    t0 = time.perf_counter()
    bst.inplace_predict(x)
    lat.append((time.perf_counter() - t0) * 1e6)
lat.sort()
mean = sum(lat) / len(lat)
print(json.dumps({"engine": "xgboost", "model": a.model, "threads": a.threads, "batch": a.batch, "iters": a.iters,
                  "latency_us": {"mean": mean, "p50": lat[len(lat) // 2]},
                  "throughput_rows_per_s": a.batch / (mean / 1e6)}))
