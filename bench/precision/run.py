#!/usr/bin/python3
"""run.py -- what `--precision bf16` buys (speed) and costs (quality), bf16 against fp32 side by side.

    /usr/bin/python3 bench/precision/run.py [--infera build/infera] [--rounds 3] [--threads 1,2] [--out DIR]

Speed: `infera bench --json` on bench/models/mlp.onnx and bert.onnx (bench/gen_bench_models.py)
at batch 1 and 64, fp32 and bf16 interleaved (the order alternating by round).  On a shared
machine wall time says little, so the figure is CPU time per run: each configuration runs twice,
with N1 and N2 timed iterations, and (CPU_2 - CPU_1) / (N2 - N1) from the children's rusage
(user + system) cancels load, packing and warm-up.  The wall-clock p50 of the longer run is kept
too.  Medians over the rounds; the ratio is fp32 / bf16 (> 1: bf16 faster).

Quality: `infera evaluate M --precision bf16 --baseline M --json` on the labelled models of
gen_eval_models.py (digits: multi-class; breast cancer: binary): bf16's metrics and the delta
against the same model in fp32.

Prints a markdown table (also DIR/table.md; raw JSON lines in DIR/raw.jsonl) with the CPU line
and the load average.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# model: [(batch, n1, n2, warmup)]
SPEED = {"mlp": [(1, 1000, 11000, 200), (64, 200, 2200, 50)],
         "bert": [(1, 3, 13, 2), (64, 1, 4, 1)]}


def cpu_of_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def bench(infera, model, batch, iters, warmup, threads, precision):
    c0 = cpu_of_children()
    out = subprocess.run([infera, "bench", model, "--batch", str(batch), "--iters", str(iters), "--warmup", str(warmup),
                          "--threads", str(threads), "--precision", precision, "--json"],
                         capture_output=True, text=True, check=True).stdout
    return cpu_of_children() - c0, json.loads(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--infera", default=os.path.join(ROOT, "build", "infera"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--models", default="mlp,bert")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "precision-" + time.strftime("%Y%m%d-%H%M")))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    raw = open(os.path.join(a.out, "raw.jsonl"), "w")
    models = os.path.join(ROOT, "bench", "models")
    if any(not os.path.exists(os.path.join(models, m + ".onnx")) for m in a.models.split(",")):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_bench_models.py")], check=True)
    evals = os.path.join(HERE, "models")
    if not os.path.exists(os.path.join(evals, "digits_mlp.onnx")):
        subprocess.run([sys.executable, os.path.join(HERE, "gen_eval_models.py")], check=True)
    cpu = json.loads(subprocess.run([a.infera, "info", "--cpu", "--json"], capture_output=True, text=True).stdout)
    load0 = os.getloadavg()

    speed = {}  # (model, threads, batch, precision) -> lists
    for rnd in range(a.rounds):
        for m in a.models.split(","):
            for t in [int(x) for x in a.threads.split(",")]:
                for batch, n1, n2, wu in SPEED[m]:
                    order = ("fp32", "bf16") if rnd % 2 == 0 else ("bf16", "fp32")
                    for p in order:
                        path = os.path.join(models, m + ".onnx")
                        c1, _ = bench(a.infera, path, batch, n1, wu, t, p)
                        c2, j = bench(a.infera, path, batch, n2, wu, t, p)
                        per_run = (c2 - c1) / (n2 - n1)
                        rec = {"model": m, "threads": t, "batch": batch, "precision": p, "round": rnd,
                               "cpu_us_per_run": per_run * 1e6, "wall_p50_us": j["latency_us"]["p50"],
                               "load": os.getloadavg()[0]}
                        raw.write(json.dumps(rec) + "\n")
                        raw.flush()
                        d = speed.setdefault((m, t, batch, p), {"cpu": [], "wall": []})
                        d["cpu"].append(rec["cpu_us_per_run"])
                        d["wall"].append(rec["wall_p50_us"])
                        print(json.dumps(rec), file=sys.stderr)

    quality = []
    for name in ("digits", "cancer"):
        mp = os.path.join(evals, name + "_mlp.onnx")
        r = subprocess.run([a.infera, "evaluate", mp, "--data", "csv:" + os.path.join(evals, name + "_test.csv"),
                            "--label", "label", "--precision", "bf16", "--baseline", mp, "--json"],
                           capture_output=True, text=True, check=True)
        j = json.loads(r.stdout)
        raw.write(json.dumps(j) + "\n")
        quality.append((name, j))
    load1 = os.getloadavg()

    lines = ["cpu: %s family %d model %d, %d logical CPUs, path %s, features %s" %
             (cpu.get("brand"), cpu.get("family", 0), cpu.get("model", 0), cpu.get("logical_cpus", 0), cpu.get("path"),
              " ".join(cpu.get("features", []))),
             "load average (1 min) %.1f at start, %.1f at end; %d rounds, fp32/bf16 interleaved" % (load0[0], load1[0], a.rounds),
             "",
             "| model | threads | batch | fp32 CPU us/run | bf16 CPU us/run | CPU ratio fp32/bf16 | fp32 wall p50 us | bf16 wall p50 us | wall ratio |",
             "|---|---|---|---|---|---|---|---|---|"]
    for m in a.models.split(","):
        for t in [int(x) for x in a.threads.split(",")]:
            for batch, *_ in SPEED[m]:
                f, b = speed[(m, t, batch, "fp32")], speed[(m, t, batch, "bf16")]
                fc, bc = statistics.median(f["cpu"]), statistics.median(b["cpu"])
                fw, bw = statistics.median(f["wall"]), statistics.median(b["wall"])
                lines.append("| %s | %d | %d | %.1f | %.1f | %.2fx | %.1f | %.1f | %.2fx |" %
                             (m, t, batch, fc, bc, fc / bc if bc else 0, fw, bw, fw / bw if bw else 0))
    lines += ["", "| model (test rows) | metric | fp32 | bf16 | delta bf16 - fp32 |", "|---|---|---|---|---|"]
    for name, j in quality:
        for k, v in j["metrics"].items():
            lines.append("| %s (%d) | %s | %.6f | %.6f | %+.6f |" % (name, j["rows"], k, j["baseline"]["metrics"][k], v, j["delta"][k]))
    table = "\n".join(lines)
    print(table)
    with open(os.path.join(a.out, "table.md"), "w") as f:
        f.write(table + "\n")


if __name__ == "__main__":
    main()
