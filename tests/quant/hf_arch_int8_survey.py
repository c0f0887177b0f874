#!/usr/bin/env python3
"""hf_arch_int8_survey.py -- the INT8 path on the Hugging Face exports of tests/models/hf_arch (RoBERTa, GPT-2,
Llama, T5 encoder; TorchScript and dynamo exporters): every quantizer Infera and ONNX Runtime offer, each INT8 file in
both runtimes, and what Infera's optimizer makes of it.  A survey tool, not a CI test (it needs PyPI onnxruntime with
its quantization package); one line per file and mode.

  python hf_arch_int8_survey.py INFERA OUT_DIR [--fixture DIR] [--only ARCH...] [--modes MODE...]
  python hf_arch_int8_survey.py INFERA OUT_DIR --bench DIR [--rounds N] [--runs N]   (speed, batch 1, 1 thread)

Modes: dyn (`infera quantize --mode dynamic`), dyn-qop (the same, `--format qoperator`), st-qdq (`--mode static`,
calibrated through a spec: one record per sequence, columns i0.. / m0.., docs/compression.md "Calibration"), st-qop
(the same, `--format qoperator`), st-pc (static QDQ `--per-channel`), ort-dyn (onnxruntime.quantization
.quantize_dynamic, default options), ort-qdq (quantize_static, QDQ, the same records), ort-qop (quantize_static,
QOperator).  Per file: the quantize report (or its error), ONNX Runtime and Infera on the INT8 file (max |infera -
ort|, and max |ort int8 - ort fp32|, the quantization error it is measured against; ort-qdq files, whose activation
pairs Infera drops since session 31, pass when |infera int8 - fp32| is at most that), and the ops left after Infera's
optimizer (`infera info --json` ops_optimized).

--bench DIR: the hidden-256, 4-layer, 128-token models of `tests/models/gen_hf_arch_models.py --bench DIR`; each
FP32 file and its dyn / st-qdq / st-qop / ort-dyn / ort-qdq INT8 files timed in Infera (`infera bench --json` p50, inputs of
the generator) and ONNX Runtime (same process as this script, intra_op_num_threads 1, p50), interleaved, the order
reversed every other round; medians over the rounds, the load average printed with each round.

Made with onnxruntime==1.31.1 onnx==1.23.2 numpy (the torch venv, /work/wt/venvs/torch), session 30.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic,
                                      quantize_static)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARCHS = ["roberta", "gpt2", "llama", "t5enc"]
EXPORTERS = ["torchscript", "dynamo", "dynamo_static"]
ALL_MODES = ["dyn", "dyn-qop", "st-qdq", "st-qop", "st-pc", "ort-dyn", "ort-qdq", "ort-qop"]
SHOWN = ["QGemm", "QAttention", "Attention", "DynamicQuantizeLinear", "QuantizeLinear", "DequantizeLinear",
         "MatMulInteger", "QLinearMatMul", "MatMul", "FusedMatMul", "Gemm", "Softmax", "LayerNormalization",
         "RMSNormalization", "Gelu", "Pow", "Tanh"]


def calibration(out, seq, n, vocab_hi, rng):
    """n records of seq tokens (a padded tail on every other row) as CSV + spec, and the same as arrays."""
    ids = rng.integers(3, vocab_hi, (n, seq)).astype(np.int64)
    mask = np.ones((n, seq), np.int64)
    for r in range(1, n, 2):
        mask[r, rng.integers(seq // 2, seq):] = 0
    csv, spec = os.path.join(out, "cal%d.csv" % seq), os.path.join(out, "cal%d.spec.json" % seq)
    cols_i, cols_m = ["i%d" % j for j in range(seq)], ["m%d" % j for j in range(seq)]
    with open(csv, "w") as f:
        f.write(",".join(cols_i + cols_m) + "\n")
        for r in range(n):
            f.write(",".join(str(v) for v in list(ids[r]) + list(mask[r])) + "\n")
    inputs = {c: {"type": "int", "required": True} for c in cols_i + cols_m}
    with open(spec, "w") as f:
        json.dump({"spec_version": 1, "name": "hf_arch_cal", "inputs": inputs,
                   "model_inputs": {"input_ids": {"dtype": "int64", "order": cols_i},
                                    "attention_mask": {"dtype": "int64", "order": cols_m}}}, f)
    return csv, spec, ids, mask


class Reader(CalibrationDataReader):
    def __init__(self, ids, mask, rows):
        self.batches = [{"input_ids": ids[r:r + rows], "attention_mask": mask[r:r + rows]}
                        for r in range(0, len(ids), rows)]
        self.i = 0

    def get_next(self):
        self.i += 1
        return self.batches[self.i - 1] if self.i <= len(self.batches) else None


def fixed_batch(path):
    import onnx
    d = onnx.load(path, load_external_data=False).graph.input[0].type.tensor_type.shape.dim[0]
    return d.dim_value if d.HasField("dim_value") else 0


def quantize(infera, mode, src, dst, cal):
    """(ok, report lines or error) for one mode."""
    csv, spec, ids, mask = cal
    try:
        if mode.startswith("ort-"):
            if mode == "ort-dyn":
                quantize_dynamic(src, dst)
            else:
                rows = fixed_batch(src) or 8
                quantize_static(src, dst, Reader(ids, mask, rows),
                                quant_format=QuantFormat.QDQ if mode == "ort-qdq" else QuantFormat.QOperator,
                                activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
            return True, "onnxruntime.quantization"
        args = [infera, "quantize", src, "-o", dst]
        args += {"dyn": ["--mode", "dynamic"], "dyn-qop": ["--mode", "dynamic", "--format", "qoperator"],
                 "st-qdq": ["--mode", "static"], "st-qop": ["--mode", "static", "--format", "qoperator"],
                 "st-pc": ["--mode", "static", "--per-channel"]}[mode]
        if mode.startswith("st-"):
            args += ["--calibration", "csv:" + csv, "--spec", spec]
        r = subprocess.run(args, capture_output=True, text=True)
        if r.returncode:
            return False, (r.stdout + r.stderr).strip()[-400:]
        return True, " / ".join(line.strip() for line in r.stdout.splitlines()[1:3])
    except Exception as e:  # noqa: BLE001 -- a survey line, not a crash
        return False, "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300] if str(e) else "")


def infera_run(infera, path, feeds, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    args = [infera, "run", path, "--output-dir", out_dir]
    for k, v in feeds.items():
        np.save(os.path.join(out_dir, k + ".in.npy"), v)
        args += ["--input", "%s=%s" % (k, os.path.join(out_dir, k + ".in.npy"))]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(r.stderr.strip()[:300])
    return np.load(os.path.join(out_dir, "last_hidden_state.npy"))


def ort_session(path, threads=1):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def ops_of(infera, path):
    r = subprocess.run([infera, "info", path, "--json"], capture_output=True, text=True)
    if r.returncode:
        return None
    return json.loads(r.stdout).get("ops_optimized", {})


def fmt_ops(ops):
    return ", ".join("%s %d" % (k, ops[k]) for k in SHOWN if k in ops) if ops is not None else "(info failed)"


def survey(a):
    fix = a.fixture
    feeds = {"input_ids": np.load(os.path.join(fix, "input_ids_a.npy")),
             "attention_mask": np.load(os.path.join(fix, "attention_mask_a.npy"))}
    cal = calibration(a.out, feeds["input_ids"].shape[1], 32, 95, np.random.default_rng(3))
    for arch in a.only or ARCHS:
        for exp in EXPORTERS:
            src = os.path.join(fix, "%s.%s.onnx" % (arch, exp))
            if not os.path.exists(src):
                continue
            tag = "%s.%s" % (arch, exp)
            o32 = ort_session(src).run(None, feeds)[0]
            print("%-24s fp32    fused: %s" % (tag, fmt_ops(ops_of(a.infera, src))), flush=True)
            for mode in a.modes:
                dst = os.path.join(a.out, "%s.%s.onnx" % (tag, mode))
                ok, rep = quantize(a.infera, mode, src, dst, cal)
                if not ok:
                    print("FAIL %-19s %-7s quantize: %s" % (tag, mode, rep.replace("\n", " | ")), flush=True)
                    continue
                try:
                    o8 = ort_session(dst).run(None, feeds)[0]
                except Exception as e:  # noqa: BLE001
                    o8 = None
                    print("FAIL %-19s %-7s onnxruntime: %s" % (tag, mode, str(e).splitlines()[0][:200]), flush=True)
                try:
                    y8 = infera_run(a.infera, dst, feeds, dst + ".out")
                except Exception as e:  # noqa: BLE001
                    print("FAIL %-19s %-7s infera: %s" % (tag, mode, e), flush=True)
                    continue
                ops = ops_of(a.infera, dst)
                if o8 is None:
                    print("     %-19s %-7s |infera8-fp32| %.3g (no ONNX Runtime output to compare with)" %
                          (tag, mode, float(np.abs(y8 - o32).max())), flush=True)
                else:
                    d = float(np.abs(y8 - o8).max())
                    qe = float(np.abs(o8 - o32).max())
                    dt = float(np.abs(y8 - o32).max())
                    # ORT's static QDQ files: Infera drops the activation pairs no integer kernel reads (session 31,
                    # docs/optimizer.md "QDQ files"), so it is judged by its error against FP32, at most ORT's own
                    verdict = "ok  " if d <= max(1e-4, 0.1 * qe) or (mode == "ort-qdq" and dt <= qe) else "DIFF"
                    print("%s %-19s %-7s |infera-ort| %.3g  (|ort8-fp32| %.3g, |infera8-fp32| %.3g)" %
                          (verdict, tag, mode, d, qe, dt), flush=True)
                print("     %-19s %-7s %s" % (tag, mode, rep), flush=True)
                print("     %-19s %-7s fused: %s" % (tag, mode, fmt_ops(ops)), flush=True)


def bench(a):
    d = a.bench
    inputs = {k: os.path.join(d, k + ".npy") for k in ("input_ids", "attention_mask")}
    feeds = {k: np.load(v) for k, v in inputs.items()}
    cal = calibration(a.out, feeds["input_ids"].shape[1], 16, 500, np.random.default_rng(5))
    files = []
    for arch in a.only or ARCHS:
        for exp in ("torchscript", "dynamo"):
            src = os.path.join(d, "%s.%s.onnx" % (arch, exp))
            if not os.path.exists(src):
                continue
            files.append(("%s.%s fp32" % (arch, exp), src))
            for mode in a.bench_modes:
                dst = os.path.join(a.out, "bench.%s.%s.%s.onnx" % (arch, exp, mode))
                if not os.path.exists(dst):
                    ok, rep = quantize(a.infera, mode, src, dst, cal)
                    if not ok:
                        print("FAIL %s.%s %s quantize: %s" % (arch, exp, mode, rep), flush=True)
                        continue
                files.append(("%s.%s %s" % (arch, exp, mode), dst))
    sessions = {}
    for tag, p in files:
        try:
            s = ort_session(p)
            for _ in range(5):
                s.run(None, feeds)
            sessions[tag] = s
        except Exception as e:  # noqa: BLE001 -- ONNX Runtime fails on some of its own files (T5 ort-qdq)
            print("note: %s: onnxruntime cannot run it: %s" % (tag, str(e).splitlines()[0][:150]), flush=True)
    res = {(tag, e): [] for tag, _ in files for e in ("infera", "ort")}
    for r in range(a.rounds):
        print("round %d load %s" % (r + 1, " ".join("%.2f" % x for x in os.getloadavg())), flush=True)
        for tag, path in (files if r % 2 == 0 else files[::-1]):
            args = [a.infera, "bench", path, "--threads", "1", "--iters", str(a.runs), "--warmup", "5", "--json"]
            for k, v in inputs.items():
                args += ["--input", "%s=%s" % (k, v)]
            out = subprocess.run(args, capture_output=True, text=True)
            if out.returncode == 0:
                res[(tag, "infera")].append(json.loads(out.stdout)["latency_us"]["p50"] / 1e3)
            if tag not in sessions:
                continue
            s, lat = sessions[tag], []
            for _ in range(a.runs):
                t0 = time.perf_counter()
                s.run(None, feeds)
                lat.append((time.perf_counter() - t0) * 1e3)
            res[(tag, "ort")].append(statistics.median(lat))
    print("%-32s %12s %12s   (ms, median of %d rounds' p50; min in parentheses)" % ("file", "infera", "ort", a.rounds))
    for tag, _ in files:
        i, o = res[(tag, "infera")] or [float("nan")], res[(tag, "ort")] or [float("nan")]
        print("%-32s %6.2f (%5.2f) %6.2f (%5.2f)" % (tag, statistics.median(i), min(i), statistics.median(o), min(o)))
    with open(os.path.join(a.out, "bench.json"), "w") as f:
        json.dump({"%s|%s" % k: v for k, v in res.items()}, f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("infera")
    ap.add_argument("out")
    ap.add_argument("--fixture", default=os.path.join(ROOT, "tests/models/hf_arch"))
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--modes", nargs="*", default=ALL_MODES)
    ap.add_argument("--bench")
    ap.add_argument("--bench-modes", nargs="*", default=["dyn", "st-qdq", "st-qop", "ort-dyn", "ort-qdq"])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=50)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.bench:
        bench(a)
    else:
        survey(a)


if __name__ == "__main__":
    sys.exit(main())
