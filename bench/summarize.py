#!/usr/bin/python3
"""summarize.py -- medians and Infera/ONNX Runtime ratios from bench/run.sh's raw.jsonl.

    /usr/bin/python3 bench/summarize.py RAW.jsonl [MACHINE.txt]

Prints Markdown: the machine, a ratio table (one row per model x threads) and
the absolute medians behind it.  Ratios are Infera / ORT: below 1 is better
for latency, load and memory; above 1 is better for throughput.
"""
import collections
import json
import statistics
import sys

# issue 4's targets, per ratio column: (comparison, bound); mlp batch-1 latency is 0.5
TARGETS = {"p50_b1": ("<=", 1.0), "p99_b1": ("<=", 1.0), "thr_b64": (">=", 1.0),
           "thr_large": (">=", 1.0), "load_first": ("<=", 0.5), "rss": ("<=", 1.0)}


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    raw = sys.argv[1]
    runs = collections.defaultdict(list)  # (engine, model, threads, batch) -> [record]
    n_busy = n_all = 0
    with open(raw) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            eng = "infera" if r["engine"] == "infera" else "ort"
            n_all += 1
            n_busy += r.get("busy", 0) > 10
            runs[(eng, r["name"], r["threads"], r["batch"])].append(r)

    def med(eng, m, t, b, key):
        rs = runs.get((eng, m, t, b), [])
        if key == "load_first":
            return median([r["load_ms"] + r["first_run_ms"] for r in rs])
        if key in ("p50", "p99", "mean"):
            return median([r["latency_us"][key] for r in rs])
        return median([r[key] for r in rs])

    if len(sys.argv) > 2:
        with open(sys.argv[2]) as f:
            for line in f:
                print("    " + line.rstrip())
        print()
    if n_busy:
        print("Note: %d of %d measurements started while the machine was more than 10%% busy "
              "with other work (see \"busy\" in raw.jsonl).\n" % (n_busy, n_all))
    models = list(dict.fromkeys(k[1] for k in runs))
    threads = sorted({k[2] for k in runs})
    print("| model | thr | b1 p50 | b1 p99 | thr b64 | thr large | load+first | peak RSS (b1 / large) |")
    print("|---|---|---|---|---|---|---|---|")
    absolute = []
    for m in models:
        batches = sorted({k[3] for k in runs if k[1] == m})
        large = batches[-1]
        for t in threads:
            def ratio(key, b):
                i, o = med("infera", m, t, b, key), med("ort", m, t, b, key)
                return i / o if o else float("nan")

            def cell(name, v):
                cmp, bound = TARGETS[name]
                if name in ("p50_b1", "p99_b1") and m == "mlp":
                    bound = 0.5
                ok = v <= bound if cmp == "<=" else v >= bound
                return "%.2f%s" % (v, "" if ok else " ✗")

            rss = (ratio("peak_rss_mb", 1), ratio("peak_rss_mb", large))
            print("| %s | %d | %s | %s | %s | %s | %s | %s / %s |" % (
                m, t, cell("p50_b1", ratio("p50", 1)), cell("p99_b1", ratio("p99", 1)),
                cell("thr_b64", ratio("throughput_rows_per_s", 64)),
                cell("thr_large", ratio("throughput_rows_per_s", large)),
                cell("load_first", ratio("load_first", 1)), cell("rss", rss[0]), cell("rss", rss[1])))
            for b in batches:
                absolute.append((m, t, b) + tuple(
                    (med("infera", m, t, b, k), med("ort", m, t, b, k))
                    for k in ("p50", "p99", "throughput_rows_per_s", "load_first", "peak_rss_mb")))
    print("\nRatios are Infera / ORT (medians over rounds); ✗ marks a missed issue-4 target "
          "(latency <= 1.0, mlp <= 0.5; throughput >= 1.0; load+first <= 0.5; RSS <= 1.0). "
          "large = the largest batch run for the model.\n")
    print("| model | thr | batch | p50 us (I / O) | p99 us (I / O) | rows/s (I / O) | load+first ms (I / O) | RSS MB (I / O) |")
    print("|---|---|---|---|---|---|---|---|")
    for m, t, b, p50, p99, thr, lf, rss in absolute:
        print("| %s | %d | %d | %.0f / %.0f | %.0f / %.0f | %.0f / %.0f | %.1f / %.1f | %.1f / %.1f |" % (
            m, t, b, *p50, *p99, *thr, *lf, *rss))
    return 0


if __name__ == "__main__":
    sys.exit(main())
