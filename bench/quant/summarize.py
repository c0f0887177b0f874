#!/usr/bin/python3
"""summarize.py -- the table of bench/quant/run.sh: medians over rounds, as ratios.

    /usr/bin/python3 bench/quant/summarize.py RAW.jsonl QUALITY.jsonl MACHINE.txt [CPU.jsonl]

CPU.jsonl (bench/quant/cpu_time.py) adds the batch-64 table from CPU time.
"""
import json
import statistics
import sys
from collections import defaultdict

raw = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
quality = {q["name"]: q for q in (json.loads(l) for l in open(sys.argv[2]) if l.strip())}
print("```")
print(open(sys.argv[3]).read().strip())
print("```\n")
tp, lat = defaultdict(list), defaultdict(list)
for r in raw:
    engine = "ort" if r["engine"].startswith("onnxruntime") or r["engine"] == "ort" else r["engine"]
    key = (engine, r["tag"], r["threads"])
    tp[key].append(r["throughput_rows_per_s"])
    lat[key].append(r["latency_us"]["p50"])
med = lambda d, k: statistics.median(d[k]) if d.get(k) else float("nan")
threads = sorted({r["threads"] for r in raw})
print("| model | threads | Infera FP32 rows/s | Infera INT8 rows/s | ORT INT8 rows/s | ORT FP32 rows/s "
      "| INT8 / own FP32 (target >= 2) | Infera INT8 / ORT INT8 (target >= 1) | top-1 agreement INT8 vs FP32 |")
print("|---|---|---|---|---|---|---|---|---|")
for m in ("mlp", "cnn", "bert"):
    for t in threads:
        f, i8 = med(tp, ("infera", m + " fp32", t)), med(tp, ("infera", m + " int8", t))
        o8, of = med(tp, ("ort", m + " int8", t)), med(tp, ("ort", m + " fp32", t))
        q = quality.get(m, {})
        print("| %s (batch 64) | %d | %.0f | %.0f | %.0f | %.0f | **%.2fx** | **%.2fx** | %.4f |" %
              (m, t, f, i8, o8, of, i8 / f, i8 / o8, q.get("top1_agreement", float("nan"))))
print()
print("| encoder batch 1 | threads | Infera FP32 p50 us | Infera INT8 p50 us | ORT INT8 p50 us | INT8 / FP32 latency (target <= 0.6) |")
print("|---|---|---|---|---|---|")
for t in threads:
    f, i8, o8 = (med(lat, (e, tag, t)) for e, tag in
                 (("infera", "bert fp32 b1"), ("infera", "bert int8 b1"), ("ort", "bert int8 b1")))
    print("| bert | %d | %.0f | %.0f | %.0f | **%.2fx** |" % (t, f, i8, o8, i8 / f))
print()
for m in ("mlp", "cnn", "bert"):
    if m in quality:
        q = quality[m]
        print("- %s: %d held-out rows (output rows), top-1 agreement %.4f, cosine similarity mean %.5f (min %.5f), "
              "max |INT8 - FP32| = %.3f of the FP32 output range (mean %.4f)" %
              (m, q["rows"], q["top1_agreement"], q["cosine_mean"], q["cosine_min"], q["max_abs_diff_rel_range"],
               q["mean_abs_diff_rel_range"]))

if len(sys.argv) > 4:
    cpu = defaultdict(list)
    for r in (json.loads(l) for l in open(sys.argv[4]) if l.strip()):
        cpu[(r["engine"], r["tag"])].append(r["rows_per_cpu_s"])
    if cpu:
        rounds = max(len(v) for v in cpu.values())
        print()
        print("Batch 64, 1 thread, from CPU time (bench/quant/cpu_time.py; medians of %d interleaved rounds):" % rounds)
        print()
        print("| model | Infera FP32 rows/cpu-s | Infera INT8 rows/cpu-s | ORT INT8 rows/cpu-s | ORT FP32 rows/cpu-s "
              "| INT8 / own FP32 (target >= 2) | Infera INT8 / ORT INT8 (target >= 1) |")
        print("|---|---|---|---|---|---|---|")
        for m in ("mlp", "cnn", "bert"):
            f, i8 = med(cpu, ("infera", m + " fp32")), med(cpu, ("infera", m + " int8"))
            o8, of = med(cpu, ("ort", m + " int8")), med(cpu, ("ort", m + " fp32"))
            print("| %s | %.0f | %.0f | %.0f | %.0f | **%.2fx** | **%.2fx** |" % (m, f, i8, o8, of, i8 / f, i8 / o8))
