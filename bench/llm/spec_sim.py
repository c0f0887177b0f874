#!/usr/bin/env python3
"""bench/llm/spec_sim.py -- simulates greedy speculative decoding on traces written by spec_trace.

Greedy speculation is deterministic, so a trace (per position of the target's greedy sequence: the
draft's argmax and its probability) and the measured costs (a draft step, a two-token draft pass, a
target pass of n tokens) give the time of any drafting policy without running it: the loop of
src/llm/generate.c is replayed round by round (the draft catches up on 1 or 2 tokens, proposes until
the policy stops or k_max, the target verifies cur + the proposals in one pass, the tokens up to the
first disagreement are kept plus the target's own).

usage: spec_sim.py TRACE.jsonl [TRACE.jsonl ...]
Prints the measured costs (c = draft step / target step, v(n) = n-token pass / target step), then per K the
simulated speed-up (target alone / speculative, the mean over the traces of the time ratio), the acceptance
(accepted / proposed, as `infera generate --json` reports it) and tokens per round, for a fixed K and for K
adapted by the last round (grow by one when every proposal passed, else shrink to accepted + 1), and the
oracle bound: a draft that proposes exactly the tokens the target will accept (no draft step or verified
token wasted) -- no drafting policy can beat it with these costs.
"""
import json
import sys


def load(path):
    rows, cost = [], None
    for line in open(path):
        d = json.loads(line)
        if "cost" in d:
            cost = d["cost"]
        else:
            rows.append(d)
    return rows, cost


def simulate(rows, cost, kmax, pmin=0.0, adapt=None):
    """Time of speculative decoding over the trace / time of the target alone."""
    n = len(rows)
    step = cost["target_step_ms"]
    t = 0.0
    i = 0  # position of the next token to make (the target's cache holds everything before it but `cur`)
    pending = 0  # tokens the draft has not seen besides cur
    proposed = accepted = rounds = 0
    k_cur = kmax
    while i < n:
        k = min(k_cur, n - i)
        # the draft catches up on pending + cur, then proposes while the policy lets it
        t += cost["draft_pass2_ms"] if pending else cost["draft_step_ms"]
        props = 0
        for j in range(k):
            r = rows[i + j]
            if props > 0 and r["p"] < pmin:
                break
            props += 1
            if r["draft"] != r["target"]:
                # later proposals are made from a wrong prefix: they are rejected whatever they are
                pass
            if j + 1 < k:
                t += cost["draft_step_ms"]  # the draft evaluates its proposal to propose the next
        # drafted tokens beyond the first disagreement are wasted but still cost
        if props and rows[i]["p"] < pmin and pmin > 0:
            pass
        t += cost["pass_ms"][props]  # cur + props tokens: pass_ms[n-1] is an n-token pass
        acc = 0
        while acc < props and rows[i + acc]["draft"] == rows[i + acc]["target"]:
            acc += 1
        proposed += props
        accepted += acc
        rounds += 1
        # the draft evaluated cur, d1..d(props-1); it keeps cur + accepted ones it saw
        pending = 1 if acc == props and props > 0 else 0
        i += acc + 1
        if adapt:
            k_cur = adapt(k_cur, acc, props, kmax)
    alone = n * step
    return t / alone, rounds, proposed, accepted


def grow_shrink(k, acc, props, kmax):
    if acc == props:
        return min(k + 1, kmax)
    return max(1, acc + 1) if acc + 1 < k else k


def oracle(rows, cost):
    t, i, n = 0.0, 0, len(rows)
    while i < n:
        run = 0
        while i + run < n and run < len(cost["pass_ms"]) - 1 and rows[i + run]["draft"] == rows[i + run]["target"]:
            run += 1
        t += cost["draft_step_ms"] * max(run, 1) + cost["pass_ms"][run]
        i += run + 1
    return t / (n * cost["target_step_ms"])


def main():
    paths = [a for a in sys.argv[1:] if a.endswith(".jsonl")]
    traces = [load(p) for p in paths]
    for p, (rows, cost) in zip(paths, traces):
        st = cost["target_step_ms"]
        agree = sum(r["draft"] == r["target"] for r in rows) / len(rows)
        print(f"{p}: {len(rows)} tokens, draft agrees {agree:.3f}, step {st:.4f} ms, c {cost['draft_step_ms'] / st:.3f}, "
              f"v(n=1..) {' '.join('%.2f' % (x / st) for x in cost['pass_ms'])}")
    total = sum(len(t[0]) for t in traces)
    for name, adapt in (("fixed", None), ("adaptive", grow_shrink)):
        for kmax in range(1, 9):
            res = [simulate(rows, cost, kmax, adapt=adapt) for rows, cost in traces]
            rel = sum(r[0] for r in res) / len(res)
            prop, acc = sum(r[2] for r in res), sum(r[3] for r in res)
            print(f"{name:8s} K={kmax} speed-up {1 / rel:5.2f}x acceptance {acc / max(prop, 1):.3f} "
                  f"tokens/round {total / sum(r[1] for r in res):.2f}")
    rel = sum(oracle(rows, cost) for rows, cost in traces) / len(traces)
    print(f"oracle   speed-up {1 / rel:5.2f}x")


if __name__ == "__main__":
    main()
