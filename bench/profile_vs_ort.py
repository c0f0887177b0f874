#!/usr/bin/python3
"""profile_vs_ort.py -- where the time goes, Infera vs ONNX Runtime, by op group.

    bench/profile_vs_ort.py MODEL.onnx [MODEL.onnx ...] [--infera PATH] [--threads N]
                            [--batch B] [--iters N] [--warmup N] [--rounds R]

For each model and round it runs `infera bench --json --profile` and
bench/ort_profile.js (onnxruntime-node with enableProfiling), alternating which
goes first, then prints per op group the mean microseconds per run of each
engine (median over the rounds) and the Infera/ORT ratio (median, and its
range over the rounds).  Node names differ after each engine's fusions, so
the comparison is by group:

    conv dw      depthwise Conv (weight [C, 1, kh, kw], group = C)
    conv 1x1     pointwise Conv (1x1 kernel, not depthwise)
    conv kxk     other Conv (dense kxk, grouped, 1-D)
    gemm/matmul  Gemm, MatMul and their fused forms (FusedMatMul, FusedGemm)
    pooling      *Pool
    elementwise  Add, Mul, Relu, Clip, ... (activations fused into a Conv or
                 Gemm count with that Conv or Gemm, in both engines)
    other        everything else (ORT's NCHWc ReorderInput/ReorderOutput,
                 Flatten, Reshape, ...), listed by op type

Conv kinds come from the weight's shape: ORT reports it in its trace; for
Infera it is looked up in the ONNX model by node name (Infera keeps the Conv's
name when it fuses).  "nodes" is the sum of the node times, "run" the mean
time of a whole run (ORT: its model_run event; Infera: inf_session_run).
Both engines time each node with a clock read before and after it, so both
carry the same small per-node overhead.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
GROUPS = ["conv dw", "conv 1x1", "conv kxk", "gemm/matmul", "pooling", "elementwise", "other"]
ELEMENTWISE = {"Add", "Sub", "Mul", "Div", "Relu", "LeakyRelu", "Clip", "Sigmoid", "Tanh", "Erf", "Gelu", "FastGelu",
               "BiasGelu", "Sqrt", "Pow", "Exp", "Log", "Neg", "Abs", "HardSigmoid", "HardSwish", "Softplus", "Max",
               "Min", "Where", "Cast", "BatchNormalization", "Elu", "Selu", "PRelu", "Reciprocal", "Floor", "Ceil"}
GEMM = {"Gemm", "MatMul", "FusedMatMul", "FusedGemm", "MatMulInteger", "QGemm", "MatMulNBits"}


def conv_kind(weight_shape):
    """'conv dw', 'conv 1x1' or 'conv kxk' from a Conv weight shape [M, C/g, k...]."""
    if not weight_shape or len(weight_shape) < 3:
        return "conv kxk"
    kernel = weight_shape[2:]
    if weight_shape[1] == 1 and weight_shape[0] > 1:
        return "conv dw"
    return "conv 1x1" if all(k == 1 for k in kernel) else "conv kxk"


def group_of(op, weight_shape):
    op = op.split("+")[0]  # Infera's "Conv+Clip": op and fused activation
    if "Conv" in op:
        return conv_kind(weight_shape)
    if op in GEMM:
        return "gemm/matmul"
    if op.endswith("Pool"):
        return "pooling"
    if op in ELEMENTWISE:
        return "elementwise"
    return "other"


def conv_weight_shapes(model_path):
    """Infera's side: Conv node name -> weight shape, from the ONNX model."""
    import onnx
    model = onnx.shape_inference.infer_shapes(onnx.load(model_path))
    g = model.graph
    shapes = {t.name: list(t.dims) for t in g.initializer}
    for vi in list(g.value_info) + list(g.input):
        dims = vi.type.tensor_type.shape.dim
        if vi.name not in shapes and all(d.HasField("dim_value") for d in dims):
            shapes[vi.name] = [d.dim_value for d in dims]
    for node in g.node:  # Constant weights
        if node.op_type == "Constant" and node.attribute and node.attribute[0].t.dims:
            shapes.setdefault(node.output[0], list(node.attribute[0].t.dims))
    return {n.name: shapes.get(n.input[1]) for n in g.node if "Conv" in n.op_type and len(n.input) > 1}


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def infera_groups(args, model, weights):
    d = run_json([args.infera, "bench", model, "--json", "--profile", "--threads", str(args.threads), "--batch",
                  str(args.batch), "--iters", str(args.iters), "--warmup", str(args.warmup)])
    groups, ops = {g: 0.0 for g in GROUPS}, {}
    for n in d["profile"]:
        if n["parent"] is not None:
            continue  # inside an If/Loop body: counted in its parent
        g = group_of(n["op"], weights.get(n["node"]))
        groups[g] += n["us_per_run"]
        if g == "other":
            ops[n["op"]] = ops.get(n["op"], 0) + n["us_per_run"]
    return groups, ops, d["profile_run_us"]


def ort_groups(args, model):
    d = run_json(["node", os.path.join(HERE, "ort_profile.js"), model, "--threads", str(args.threads), "--batch",
                  str(args.batch), "--iters", str(args.iters), "--warmup", str(args.warmup)])
    groups, ops = {g: 0.0 for g in GROUPS}, {}
    runs = max(1, d["runs"])
    for n in d["nodes"]:
        weight = n["inputs"][1] if n["op"].endswith("Conv") and len(n["inputs"]) > 1 else None
        g = group_of(n["op"], weight)
        groups[g] += n["total_us"] / runs
        if g == "other":
            ops[n["op"]] = ops.get(n["op"], 0) + n["total_us"] / runs
    return groups, ops, d["run_us"], d["engine"]


def fmt_ratio(values):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    med = statistics.median(values)
    return f"{med:5.2f}" + (f"  ({min(values):.2f}-{max(values):.2f})" if len(values) > 1 else "")


def compare(args, model):
    weights = conv_weight_shapes(model)
    inf_rounds, ort_rounds, engine = [], [], ""
    for r in range(args.rounds):
        order = ["infera", "ort"] if r % 2 == 0 else ["ort", "infera"]
        for side in order:
            if side == "infera":
                inf_rounds.append(infera_groups(args, model, weights))
            else:
                res = ort_groups(args, model)
                engine = res[3]
                ort_rounds.append(res[:3])
    print(f"\n{os.path.relpath(model, ROOT)}: threads {args.threads}, batch {args.batch}, {args.iters} runs "
          f"x {args.rounds} rounds (medians; ratio range over rounds); ORT = {engine}")
    print(f"  {'group':<14} {'infera us/run':>14} {'ort us/run':>11}   infera/ort")

    def row(name, inf_vals, ort_vals):
        im, om = statistics.median(inf_vals), statistics.median(ort_vals)
        if im < 0.05 and om < 0.05:
            return
        ratios = [i / o if o > 0 else None for i, o in zip(inf_vals, ort_vals)]
        print(f"  {name:<14} {im:14.1f} {om:11.1f}   {fmt_ratio(ratios)}")

    for g in GROUPS:
        row(g, [x[0][g] for x in inf_rounds], [x[0][g] for x in ort_rounds])
    row("nodes", [sum(x[0].values()) for x in inf_rounds], [sum(x[0].values()) for x in ort_rounds])
    row("run", [x[2] for x in inf_rounds], [x[2] for x in ort_rounds])
    for name, rounds in (("infera", inf_rounds), ("ort", ort_rounds)):
        other = rounds[-1][1]
        if other:
            print(f"  other ({name}, last round): " +
                  ", ".join(f"{op} {us:.1f}" for op, us in sorted(other.items(), key=lambda kv: -kv[1])))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="+")
    p.add_argument("--infera", default=os.path.join(ROOT, "build", "infera"))
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    if not os.access(args.infera, os.X_OK):
        sys.exit(f"profile_vs_ort: no infera binary at {args.infera} (give --infera PATH)")
    for model in args.models:
        if not os.path.exists(model):
            sys.exit(f"profile_vs_ort: {model} not found (bench/gen_bench_models.py makes bench/models/*.onnx)")
        compare(args, model)


if __name__ == "__main__":
    main()
