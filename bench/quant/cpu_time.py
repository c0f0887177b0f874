#!/usr/bin/python3
"""cpu_time.py -- throughput from CPU time, for a machine shared with other jobs.

    /usr/bin/python3 bench/quant/cpu_time.py --infera PATH --ort-bench PATH --rounds N \
        --threads T --out RAW.jsonl  TAG:MODEL.onnx:LO:HI ...

Wall-clock timings on a loaded machine measure the other jobs as much as the
engine.  This measures each engine's CPU time (user + system of the child
process, getrusage) for HI and for LO iterations at batch 64 and takes the
difference: per-batch CPU cost with process start, model load and warm-up
cancelled out.  Engines (Infera FP32 / INT8, ONNX Runtime INT8 / FP32 on the
same files) alternate order round by round; one JSON line per measurement:
{"engine","tag","round","threads","cpu_s_per_batch","rows_per_cpu_s"}.
With --threads 1 CPU time is the time one core spends: the ratio of two
engines is what an otherwise idle core would show, up to cache sharing.
"""
import argparse
import json
import resource
import subprocess


def cpu_seconds(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--infera", required=True)
    ap.add_argument("--ort-bench", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--out", required=True)
    ap.add_argument("runs", nargs="+", help="TAG:MODEL:LO:HI, TAG like 'cnn int8'")
    a = ap.parse_args()

    def command(engine, model, iters):
        common = ["--threads", str(a.threads), "--batch", str(a.batch), "--iters", str(iters), "--warmup", "1"]
        if engine == "ort":
            return ["node", a.ort_bench, model] + common
        return [a.infera, "bench", model] + common + ["--json"]

    jobs = []
    for spec in a.runs:
        tag, model, lo, hi = spec.rsplit(":", 3)
        for engine in ("infera", "ort"):
            jobs.append((engine, tag, model, int(lo), int(hi)))
    with open(a.out, "a") as out:
        for r in range(1, a.rounds + 1):
            for engine, tag, model, lo, hi in (jobs if r % 2 else jobs[::-1]):
                per_batch = (cpu_seconds(command(engine, model, hi)) - cpu_seconds(command(engine, model, lo))) / (hi - lo)
                out.write(json.dumps({"engine": engine, "tag": tag, "round": r, "threads": a.threads,
                                      "cpu_s_per_batch": per_batch, "rows_per_cpu_s": a.batch / per_batch}) + "\n")
                out.flush()


main()
