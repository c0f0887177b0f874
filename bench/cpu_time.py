#!/usr/bin/env python3
"""cpu_time.py -- CPU milliseconds per inference of Infera builds and ONNX Runtime, for a shared machine.

    bench/cpu_time.py MODEL BATCH N1 N2 REPS ENGINE...

ENGINE is NAME=PATH (an `infera` executable), NAME=VAR=VALUE,...:PATH (with environment settings,
e.g. avx2=INFERA_CPU=avx2:build/infera) or NAME=ort (bench/ort_bench.js with onnxruntime-node).
Each engine runs its benchmark at 1 thread twice, N1 and N2 iterations (warm-up 1); the CPU
seconds the child used (user + system) for the difference, / (N2 - N1), is one inference -- load,
start-up and warm-up cancel. Engines are interleaved, REPS times; the median is printed, with the
ratios to ORT. Time spent descheduled is not counted, so on a machine shared with other jobs this
reads close to a quiet machine's wall time at 1 thread (cache and SMT-sibling sharing still count).
Not for 2 threads: CPU time does not show how well the threads overlap.
"""
import os
import resource
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_engine(spec):
    name, rest = spec.split('=', 1)
    env = {}
    if ':' in rest:
        sets, rest = rest.rsplit(':', 1)
        for kv in sets.split(','):
            k, v = kv.split('=', 1)
            env[k] = v
    cmd = ['node', os.path.join(HERE, 'ort_bench.js')] if rest == 'ort' else [rest, 'bench']
    return name, cmd, env


def cpu_seconds(cmd, env):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def ms(sec):
    """CPU time per inference, in us under 1 ms (batch-1 and small models)."""
    return f'{sec * 1e6:.1f} us' if sec < 1e-3 else f'{sec * 1e3:.3f} ms'


def main(argv):
    if len(argv) < 7:
        sys.exit(__doc__)
    model, batch, n1, n2, reps = argv[1], argv[2], int(argv[3]), int(argv[4]), int(argv[5])
    engines = [parse_engine(s) for s in argv[6:]]
    path = model if model.endswith('.onnx') else os.path.join(HERE, 'models', model + '.onnx')
    per = {name: [] for name, _, _ in engines}
    for _ in range(reps):
        for name, cmd, env in engines:
            def run(iters):
                args = [path, '--threads', '1', '--batch', batch, '--iters', str(iters), '--warmup', '1']
                return cpu_seconds(cmd + args, env)
            a, b = run(n1), run(n2)
            per[name].append((b - a) / (n2 - n1))
    med = {name: statistics.median(v) for name, v in per.items()}
    line = f'{os.path.basename(path)} batch {batch}: ' + ', '.join(f'{n} {ms(med[n])}' for n in med)
    if 'ort' in med:
        line += ' | / ort: ' + ', '.join(f'{n} {med[n] / med["ort"]:.3f}' for n in med if n != 'ort')
        line += ' | per repeat / ort: ' + ', '.join(
            f'{n} ' + '/'.join(f'{x / o:.2f}' for x, o in zip(per[n], per['ort'])) for n in med if n != 'ort')
    with open('/proc/loadavg') as f:
        line += ' | load ' + f.read().split()[0]
    print(line)


if __name__ == '__main__':
    main(sys.argv)
