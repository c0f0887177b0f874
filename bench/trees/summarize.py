#!/usr/bin/python3
"""Medians of bench/trees/run.sh's raw.jsonl as a markdown table, and the max
abs difference of Infera's probabilities from XGBoost's.
  summarize.py OUT_DIR MODEL..."""
import json
import os
import statistics
import sys

import numpy as np

out, models = sys.argv[1], sys.argv[2:]
here = os.path.dirname(os.path.abspath(__file__))
runs = {}
for line in open(os.path.join(out, "raw.jsonl")):
    j = json.loads(line)
    engine = "ort" if j["engine"].startswith("onnxruntime") else j["engine"]  # ort_bench.js names its version
    key = (j["model_name"], engine, j["threads"], j["batch"])
    runs.setdefault(key, []).append(j)


def med(m, e, th, b, field):
    v = runs.get((m, e, th, b))
    if not v:
        return float("nan")
    return statistics.median(x["throughput_rows_per_s"] if field == "tput" else x["latency_us"]["p50"] for x in v)


print("| model | threads | infera rows/s | xgboost rows/s | ort rows/s | infera/xgb | infera/ort "
      "| infera batch-1 p50 µs | xgb batch-1 p50 µs | ort batch-1 p50 µs | max abs diff (json, onnx) |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for m in models:
    ref = np.load(os.path.join(here, "models", f"{m}.xgb.npy"))
    diffs = []
    for form in ["json", "onnx"]:
        p = os.path.join(out, f"pred-{m}-{form}", "probabilities.npy")
        diffs.append(float(np.abs(np.load(p) - ref).max()) if os.path.exists(p) else float("nan"))
    for th in [1, 2]:
        i, x, o = (med(m, e, th, 100000, "tput") for e in ["infera", "xgboost", "ort"])
        li, lx, lo = (med(m, e, th, 1, "lat") for e in ["infera", "xgboost", "ort"])
        print(f"| {m} | {th} | {i:,.0f} | {x:,.0f} | {o:,.0f} | {i / x:.1f}x | {i / o:.1f}x "
              f"| {li:.1f} | {lx:.1f} | {lo:.1f} | {diffs[0]:.1e}, {diffs[1]:.1e} |")
