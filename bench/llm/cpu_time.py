#!/usr/bin/env python3
"""cpu_time.py -- 1-thread prompt processing (pp) and decode (tg) speed of Infera
(bench_llm) and llama.cpp (llama-bench) measured in CPU time, not wall time.

The machine is shared by many jobs, so wall-clock tokens/s mostly measure the
scheduler.  A 1-thread run's CPU time (getrusage of the child) does not count
the time it waited for a core.  Each side runs its benchmark twice, with R1
and R2 repetitions; the difference of the two CPU times is the cost of
R2 - R1 repetitions alone (model loading, warm-up and the bandwidth probe
cancel out).  Rounds alternate ours/theirs; the median of the rounds is
reported.  Caches and memory bandwidth are still shared with the other jobs:
read the numbers as ratios measured side by side, not as absolute speeds.

usage: cpu_time.py BENCH_LLM LLAMA_BENCH MODEL... [--pp 128] [--tg 32] [--rounds 3]
"""
import argparse, os, resource, statistics, subprocess, sys


def cpu_of(cmd, env=None):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def rate(make_cmd, tokens, r1, r2, env=None):
    """tokens per CPU-second of one repetition"""
    t1 = cpu_of(make_cmd(r1), env)
    t2 = cpu_of(make_cmd(r2), env)
    return (r2 - r1) * tokens / max(t2 - t1, 1e-9)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bench_llm")
    ap.add_argument("llama_bench")
    ap.add_argument("models", nargs="+")
    ap.add_argument("--pp", type=int, default=128)
    ap.add_argument("--tg", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    env = dict(os.environ, BENCH_LLM_NO_BW="1")
    print("%-36s %10s %10s %6s %10s %10s %6s" % ("model (1 thread, CPU time)", "pp ours", "pp llama", "ratio",
                                                 "tg ours", "tg llama", "ratio"))
    for m in a.models:
        res = {k: [] for k in ("op", "lp", "ot", "lt")}
        for _ in range(a.rounds):
            # bench_llm does reps + 1 runs (the first warms up); llama-bench a warm-up run + r
            res["op"].append(rate(lambda r: [a.bench_llm, m, "--threads", "1", "--pp", str(a.pp), "--tg", "0",
                                             "--reps", str(r)], a.pp, 1, 4, env))
            res["lp"].append(rate(lambda r: [a.llama_bench, "-m", m, "-t", "1", "-p", str(a.pp), "-n", "0",
                                             "-r", str(r)], a.pp, 1, 4))
            res["ot"].append(rate(lambda r: [a.bench_llm, m, "--threads", "1", "--pp", "0", "--tg", str(a.tg),
                                             "--reps", str(r)], a.tg, 1, 4, env))
            res["lt"].append(rate(lambda r: [a.llama_bench, "-m", m, "-t", "1", "-p", "0", "-n", str(a.tg),
                                             "-r", str(r)], a.tg, 1, 4))
        med = {k: statistics.median(v) for k, v in res.items()}
        print("%-36s %10.1f %10.1f %6.2f %10.1f %10.1f %6.2f" % (
            os.path.basename(m), med["op"], med["lp"], med["op"] / med["lp"], med["ot"], med["lt"],
            med["ot"] / med["lt"]), flush=True)


if __name__ == "__main__":
    sys.exit(main())
