#!/usr/bin/env python3
"""cpu_time.py -- 1-thread prompt processing (pp) and decode (tg) speed of Infera
(bench_llm) and llama.cpp (llama-bench) measured in CPU time, not wall time.

The machine is shared by many jobs, so wall-clock tokens/s mostly measure the
scheduler.  A 1-thread run's CPU time (getrusage of the child) does not count
the time it waited for a core.  llama.cpp runs its benchmark twice, with R1
and R2 repetitions; the difference of the two CPU times is the cost of
R2 - R1 repetitions alone (model loading and warm-up cancel out).  bench_llm
sums the process CPU time of its R2 timed repetitions itself (its load time
varies too much between runs for a difference: the weight region's fresh
2 MiB pages).  Rounds alternate ours/theirs; the median of the rounds is
reported.  Caches and memory bandwidth are still shared with the other jobs:
read the numbers as ratios measured side by side, not as absolute speeds.

Also prints the wall-clock tokens/s each tool reported (best of the rounds),
which on a loaded machine mostly measures the run queue.  --threads 1,2: at
2 threads the CPU time counts both threads (a spinning pool costs CPU).

usage: cpu_time.py BENCH_LLM LLAMA_BENCH MODEL... [--pp 128] [--tg 32] [--rounds 3] [--threads 1,2]
"""
import argparse, json, os, resource, statistics, subprocess, sys


def cpu_of(cmd, env=None):
    """CPU seconds (user + sys) of the child and its stdout"""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), out


def wall_of(out, tool):
    """best wall-clock tokens/s the tool itself reported (bench_llm: best repetition; llama-bench: best sample)"""
    try:
        if tool == "ours":
            j = json.loads(out)
            return max(j["pp_tokens_per_s"], j["tg_tokens_per_s"])
        return max(max(x.get("samples_ts") or [x["avg_ts"]]) for x in json.loads(out))
    except (ValueError, KeyError, TypeError):
        return float("nan")


def rate(make_cmd, tokens, r1, r2, tool, env=None):
    """(tokens per CPU-second of one repetition, best wall tokens/s)"""
    if tool == "ours":
        # bench_llm sums the process CPU time of its timed repetitions itself: loading the model (its weight
        # region on 2 MiB pages costs 0.1-1.4 s of system time on a VM, varying from run to run) and the warm-up
        # stay out of the figure, as the difference of two runs removes them from llama-bench's
        _, out = cpu_of(make_cmd(r2), env)
        j = json.loads(out)
        spent = j["pp_cpu_s_sum"] if j["tg"] == 0 else j["tg_cpu_s_sum"]
        return r2 * tokens / max(spent, 1e-9), wall_of(out, tool)
    t1, _ = cpu_of(make_cmd(r1), env)
    t2, out = cpu_of(make_cmd(r2), env)
    return (r2 - r1) * tokens / max(t2 - t1, 1e-9), wall_of(out, tool)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bench_llm")
    ap.add_argument("llama_bench")
    ap.add_argument("models", nargs="+")
    ap.add_argument("--pp", type=int, default=128)
    ap.add_argument("--tg", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="1", help="comma-separated thread counts, e.g. 1,2")
    a = ap.parse_args()
    env = dict(os.environ, BENCH_LLM_NO_BW="1")
    print("%-30s %3s %9s %9s %6s %9s %9s %6s | wall: %8s %8s %8s %8s" % (
        "model (CPU time)", "thr", "pp ours", "pp llama", "ratio", "tg ours", "tg llama", "ratio", "pp ours",
        "pp llama", "tg ours", "tg llama"))
    for m in a.models:
        for th in [int(x) for x in a.threads.split(",")]:
            res = {k: [] for k in ("op", "lp", "ot", "lt")}
            wall = {k: [] for k in res}
            T = str(th)
            for _ in range(a.rounds):
                # bench_llm does reps + 1 runs (the first warms up); llama-bench a warm-up run + r
                runs = {
                    "op": (lambda r: [a.bench_llm, m, "--threads", T, "--pp", str(a.pp), "--tg", "0", "--reps", str(r)],
                           a.pp, "ours", env),
                    "lp": (lambda r: [a.llama_bench, "-m", m, "-t", T, "-p", str(a.pp), "-n", "0", "-r", str(r), "-o",
                                      "json"], a.pp, "llama", None),
                    "ot": (lambda r: [a.bench_llm, m, "--threads", T, "--pp", "0", "--tg", str(a.tg), "--reps", str(r)],
                           a.tg, "ours", env),
                    "lt": (lambda r: [a.llama_bench, "-m", m, "-t", T, "-p", "0", "-n", str(a.tg), "-r", str(r), "-o",
                                      "json"], a.tg, "llama", None),
                }
                for k, (cmd, tokens, tool, e) in runs.items():
                    c, w = rate(cmd, tokens, 1, 4, tool, e)
                    res[k].append(c)
                    wall[k].append(w)
            med = {k: statistics.median(v) for k, v in res.items()}
            best = {k: max(v) for k, v in wall.items()}
            print("%-30s %3d %9.1f %9.1f %6.2f %9.1f %9.1f %6.2f | wall: %8.1f %8.1f %8.1f %8.1f" % (
                os.path.basename(m), th, med["op"], med["lp"], med["op"] / med["lp"], med["ot"], med["lt"],
                med["ot"] / med["lt"], best["op"], best["lp"], best["ot"], best["lt"]), flush=True)


if __name__ == "__main__":
    sys.exit(main())
