#!/usr/bin/python3
"""cpu_time_env.py -- CPU time per batch of Infera runs that differ by binary, model file or environment.

    /usr/bin/python3 bench/quant/cpu_time_env.py [--rounds N] [--batch B] [--out RAW.jsonl] \
        NAME@[VAR=VALUE,...]@INFERA@MODEL@LO@HI ...

For kernel paths one machine can emulate but ONNX Runtime cannot be told to take, e.g. the AVX2 INT8
path of a CPU without VNNI on a VNNI machine: INFERA_CPU=avx2 INFERA_QGEMM=avx2 (ops/qgemm.h).  Each
run is `INFERA bench MODEL --threads 1 --batch B --iters LO|HI --warmup 1 --max-run-ms 0` with the
variables set; its CPU time (user + system, getrusage) for HI minus LO iterations, / (HI - LO), is one
batch -- start-up, load and warm-up cancel, time spent descheduled is not counted (bench/quant/cpu_time.py's
method).  Runs alternate order round by round; prints each run's median ms per batch and per-round values.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess


def cpu_seconds(cmd, env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--out")
    ap.add_argument("runs", nargs="+", help="NAME@VAR=VALUE,...@INFERA@MODEL@LO@HI")
    a = ap.parse_args()
    jobs = []
    for spec in a.runs:
        name, sets, infera, model, lo, hi = spec.split("@")
        env = dict(os.environ)
        for kv in filter(None, sets.split(",")):
            k, v = kv.split("=", 1)
            env[k] = v
        jobs.append((name, env, infera, model, int(lo), int(hi)))
    ms = {j[0]: [] for j in jobs}
    out = open(a.out, "a") if a.out else None
    for r in range(1, a.rounds + 1):
        for name, env, infera, model, lo, hi in (jobs if r % 2 else jobs[::-1]):
            cmd = lambda n: [infera, "bench", model, "--threads", "1", "--batch", str(a.batch), "--iters", str(n),
                             "--warmup", "1", "--max-run-ms", "0"]
            per = (cpu_seconds(cmd(hi), env) - cpu_seconds(cmd(lo), env)) / (hi - lo) * 1e3
            ms[name].append(per)
            if out:
                out.write(json.dumps({"name": name, "round": r, "batch": a.batch, "cpu_ms_per_batch": per}) + "\n")
                out.flush()
    for name, v in ms.items():
        print(f"{name:28s} {statistics.median(v):10.3f} ms  [{', '.join(f'{x:.3f}' for x in v)}]")


if __name__ == "__main__":
    main()
