#!/usr/bin/env python3
"""scaling.py -- 1 -> 2 thread scaling of Infera builds and ONNX Runtime, interleaved, on a shared machine.

    bench/scaling.py MODEL BATCH N1 N2 ROUNDS ENGINE...

ENGINE is NAME=PATH (an `infera` executable), NAME=VAR=VALUE,...:PATH (with environment settings) or
NAME=ort (bench/ort_bench.js with onnxruntime-node).  In each round every engine runs its benchmark at
1 and at 2 threads, twice each (N1 and N2 timed iterations, warm-up 5); the differences of the two runs'
wall time and CPU time (user + system of the child), / (N2 - N1), are one inference's wall and CPU
time -- load, start-up and warm-up cancel.  Also kept: the benchmark's own p50 of the N2 run, and the
cache-line round trip between the two vCPUs before it (build/bench/bench_core_rtt, if found: ~90 ns
when they share an L3, ~400+ ns when not).  Prints per round and the medians:

    wall us    one inference's wall time
    cpu/wall   how many CPUs the run had busy (its threads spin while waiting, so ~threads when it got
               them; less when other processes took them)
    scaling    wall at 1 thread / wall at 2 threads, same engine, same round

Run it in a nice -20 autogroup on a shared machine:
    setsid sh -c 'echo -20 > /proc/self/autogroup; exec nice -n -20 bench/scaling.py ...'
"""
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cpu_time import parse_engine  # noqa: E402  (one ENGINE syntax for both tools)


def timed(cmd, env):
    """(wall s, cpu s, p50 us) of one benchmark run."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env={**os.environ, **env}, capture_output=True, text=True, check=True).stdout
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    p50 = json.loads(out.strip().splitlines()[-1])['latency_us']['p50']
    return wall, cpu, p50


def rtt_ns():
    tool = os.path.join(os.path.dirname(HERE), 'build', 'bench', 'bench_core_rtt')
    if not os.access(tool, os.X_OK):
        return -1
    try:
        return int(float(subprocess.run([tool], capture_output=True, text=True).stdout.split()[0]))
    except (ValueError, IndexError):
        return -1


def main(argv):
    if len(argv) < 7:
        sys.exit(__doc__)
    model, batch, n1, n2, rounds = argv[1], argv[2], int(argv[3]), int(argv[4]), int(argv[5])
    engines = [parse_engine(s) for s in argv[6:]]
    path = model if model.endswith('.onnx') else os.path.join(HERE, 'models', model + '.onnx')
    rows = {}  # (engine, threads) -> list of (wall us, cpu/wall, p50, rtt)
    for rnd in range(rounds):
        for name, cmd, env in engines:
            for threads in (1, 2):
                def run(iters):
                    args = [path, '--threads', str(threads), '--batch', batch, '--iters', str(iters), '--warmup', '5']
                    return timed(cmd + args + ([] if 'ort_bench.js' in cmd[-1] else ['--json']), env)
                rtt = rtt_ns()
                wa, ca, _ = run(n1)
                wb, cb, p50 = run(n2)
                wall, cpu = (wb - wa) / (n2 - n1), (cb - ca) / (n2 - n1)
                rows.setdefault((name, threads), []).append((wall * 1e6, cpu / wall, p50, rtt))
                print(f'round {rnd + 1} {name:>8} {threads} thr: wall {wall * 1e6:9.1f} us  cpu/wall {cpu / wall:4.2f}  '
                      f'p50 {p50:9.1f} us  rtt {rtt} ns', flush=True)
    print(f'\n{model} batch {batch}, medians of {rounds} rounds (load {os.getloadavg()[0]:.1f} at the end)')
    print('| engine | wall us 1 thr | wall us 2 thr | p50 us 1 / 2 thr | cpu/wall 2 thr | scaling (wall) | '
          'scaling per round |')
    print('|---|---|---|---|---|---|---|')
    for name, _, _ in engines:
        one, two = rows[(name, 1)], rows[(name, 2)]
        per = [a[0] / b[0] for a, b in zip(one, two)]
        med = lambda xs, i: statistics.median(x[i] for x in xs)
        print(f'| {name} | {med(one, 0):.1f} | {med(two, 0):.1f} | {med(one, 2):.1f} / {med(two, 2):.1f} | '
              f'{med(two, 1):.2f} | {statistics.median(per):.2f} | {" ".join(f"{x:.2f}" for x in per)} |')


if __name__ == '__main__':
    main(sys.argv)
