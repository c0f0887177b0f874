#!/usr/bin/python3
"""Turns bench/compress/run.sh's outputs (WORK_DIR/eval_*.json, speed.jsonl) into RESULTS.md."""
import json
import os
import re
import statistics
import subprocess
import sys

work = sys.argv[1]


def cpu():
    info = open("/proc/cpuinfo").read()
    name = re.search(r"model name\s*:\s*(.*)", info).group(1)
    flags = re.search(r"flags\s*:\s*(.*)", info).group(1).split()
    simd = [f for f in ("avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16") if f in flags]
    try:
        caches = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        caches = "; ".join(l.split(":")[0].strip() + " " + l.split(":")[1].strip()
                           for l in caches.splitlines() if re.match(r"\s*L[123]", l))
    except OSError:
        caches = ""
    return f"{name}, {os.cpu_count()} cores visible; {' '.join(simd)}; {caches}"


speed = {}
for line in open(os.path.join(work, "speed.jsonl")):
    j = json.loads(line)
    eng = "ort" if "engine_name" in j else "infera"
    speed.setdefault((eng, j["name"]), []).append(j["throughput_rows_per_s"])


def thr(eng, name):
    v = speed.get((eng, name))
    return statistics.median(v) if v else None


def ratio(eng, a, b):
    """median over rounds of the per-round ratio a/b (rounds are interleaved)"""
    x, y = speed.get((eng, a)), speed.get((eng, b))
    if not x or not y:
        return None
    return statistics.median(p / q for p, q in zip(x, y))


cpu_ms = {}
if os.path.exists(os.path.join(work, "cpu.jsonl")):
    for line in open(os.path.join(work, "cpu.jsonl")):
        j = json.loads(line)
        cpu_ms.setdefault(j["name"], {})[j["round"]] = j["cpu_ms_per_batch"]


def cpu_ratio(a, b):
    """CPU time: median over rounds of b's ms per batch / a's (> 1: a is faster)"""
    x, y = cpu_ms.get(a), cpu_ms.get(b)
    if not x or not y:
        return None
    return statistics.median(y[r] / x[r] for r in x if r in y)


def ev(name):
    return json.load(open(os.path.join(work, f"eval_{name}.json")))


rounds = len(speed.get(("infera", "fraud_mlp"), []))
out = []
out.append("# Model compression benchmark (bench/compress/run.sh)\n")
out.append(f"CPU: {cpu()}.  One thread; {rounds} interleaved rounds; throughput = batch 64 / mean latency "
           "(`infera bench --batch 64` and bench/ort_bench.js on the same files), median over rounds; "
           "speed-ups are medians of per-round ratios.  Quality: `infera evaluate` on test.csv, 100,000 rows "
           "no model has seen (2.35 % fraud).  Up to 8 helpers share the 2 cores: single numbers are noisy, "
           "ratios less so.\n")
out.append("## Structured pruning of the tabular MLP (12 -> 256 -> 256 -> 128 -> 2)\n")
out.append("| model | parameters | AUC | AUC loss (points) | infera rows/s (b=64) | speed-up vs FP32 MLP | "
           "speed-up, CPU time | ORT rows/s | ORT speed-up |")
out.append("|---|---|---|---|---|---|---|---|---|")
base = ev("mlp_s50")["baseline"]


def fmt(v, f="{:,.0f}"):
    return "-" if v is None else f.format(v)


out.append(f"| fraud_mlp (source) | {base['cost']['parameters']:,} | {base['metrics']['auc']:.4f} | - | "
           f"{fmt(thr('infera', 'fraud_mlp'))} | 1.00 | 1.00 | {fmt(thr('ort', 'fraud_mlp'))} | 1.00 |")
labels = {"mlp_s50": "structured 50 %, least-squares refit (calib.csv)",
          "mlp_s50_magnitude": "structured 50 %, magnitude only", "mlp_u90": "unstructured 90 % zeros",
          "mlp_int8": "INT8 static per-channel (quantize, calib.csv)"}
for m, label in labels.items():
    e = ev(m)
    out.append(f"| {label} | {e['cost']['parameters']:,} | {e['metrics']['auc']:.4f} | "
               f"{-100 * e['delta']['auc']:+.2f} | {fmt(thr('infera', m))} | {fmt(ratio('infera', m, 'fraud_mlp'), '{:.2f}')} | "
               f"{fmt(cpu_ratio(m, 'fraud_mlp'), '{:.2f}')} | "
               f"{fmt(thr('ort', m))} | {fmt(ratio('ort', m, 'fraud_mlp'), '{:.2f}')} |")
out.append("")
out.append("## Distilling the fraud tree ensemble (XGBoost, 120 trees) into an MLP\n")
e = ev("student")
out.append("| model | size (bytes) | AUC | AUC loss (points) | log-loss | infera rows/s (b=64) | speed-up, CPU time | ORT rows/s |")
out.append("|---|---|---|---|---|---|---|---|")
out.append(f"| fraud_xgb (teacher) | {e['baseline']['cost']['size_bytes']:,} | {e['baseline']['metrics']['auc']:.4f} | - | "
           f"{e['baseline']['metrics']['logloss']:.4f} | {fmt(thr('infera', 'fraud_xgb'))} | 1.00 | {fmt(thr('ort', 'fraud_xgb'))} |")
out.append(f"| student mlp:64,32 (seed 1) | {e['cost']['size_bytes']:,} | {e['metrics']['auc']:.4f} | "
           f"{-100 * e['delta']['auc']:+.2f} | {e['metrics']['logloss']:.4f} | {fmt(thr('infera', 'student'))} | "
           f"{fmt(cpu_ratio('student', 'fraud_xgb'), '{:.2f}')} | "
           f"{fmt(thr('ort', 'student'))} |")
out.append("")
if cpu_ms:
    out.append("CPU time per batch of 64 (ms, bench/quant/cpu_time_env.py, 1 thread, medians of interleaved rounds): " +
               ", ".join(f"{k} {statistics.median(v.values()):.4f}" for k, v in cpu_ms.items()) + "\n")
for f in ("prune.txt", "distill.txt", "quantize.txt"):
    out.append(f"`{f}`:\n\n```\n" + open(os.path.join(work, f)).read().rstrip() + "\n```\n")
print("\n".join(out))
