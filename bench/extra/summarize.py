#!/usr/bin/python3
"""summarize.py -- medians and Infera/ONNX Runtime ratios from bench/extra/run.sh's raw.jsonl.

    /usr/bin/python3 bench/extra/summarize.py RAW.jsonl [MACHINE.txt [CHECK.txt]]

Prints Markdown: the machine and output check (when given), then one row per
model x threads: batch-1 p50 latency (Infera / ORT, below 1 is better) and
the throughput at the model's largest batch (64; 8 for the 224x224 models)
(Infera / ORT, above 1 is better), with the medians over rounds behind them.
"""
import collections
import json
import statistics
import sys


def main():
    runs = collections.defaultdict(list)  # (engine, model, threads, batch) -> [record]
    with open(sys.argv[1]) as f:
        for line in f:
            if line.strip().startswith("{"):
                r = json.loads(line)
                eng = "infera" if r.get("engine") == "infera" else "ort"
                runs[(eng, r["name"], r["threads"], r["batch"])].append(r)
    for extra in sys.argv[2:]:
        with open(extra) as f:
            print("".join("    " + line for line in f))

    def med(eng, m, t, b, key):
        rs = runs.get((eng, m, t, b), [])
        vals = [r["latency_us"]["p50"] if key == "p50" else r[key] for r in rs]
        return statistics.median(vals) if vals else float("nan")

    def cell(m, t, b, key):
        i, o = med("infera", m, t, b, key), med("ort", m, t, b, key)
        if i != i or o != o:
            return "-"
        unit = "us" if key == "p50" else "rows/s"
        return "%.2f (%.0f / %.0f %s)" % (i / o if o else float("nan"), i, o, unit)

    print("| model | threads | b1 p50: Infera/ORT (I / O) | batch B throughput: Infera/ORT (I / O) |")
    print("|---|---|---|---|")
    for m in dict.fromkeys(k[1] for k in runs):
        big = max([k[3] for k in runs if k[1] == m and k[3] > 1], default=0)  # 64, or 8 for the 224x224 models
        for t in sorted({k[2] for k in runs if k[1] == m}):
            tp = "B=%d: %s" % (big, cell(m, t, big, "throughput_rows_per_s")) if big else "-"
            print("| %s | %d | %s | %s |" % (m, t, cell(m, t, 1, "p50"), tp))
    print("\nMedians over rounds; latency ratio below 1 and throughput ratio above 1 favour Infera.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
