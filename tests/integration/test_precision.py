#!/usr/bin/python3
"""Session precision (`--precision fp32|bf16`, docs/sessions.md) end to end through `infera run`.

    /usr/bin/python3 tests/integration/test_precision.py INFERA SOURCE_DIR

Models: tests/models mlp and transformer, and unseen/ encoder_prenorm_gelu (FusedMatMul with GELU),
fusions (Gemm/MatMul with activations) and embed_pos; oracle: ONNX Runtime's FP32 outputs committed
beside them (*.ort.npy, tests/models/ort_reference.js).

  - FP32 stays the default, bit for bit: the run without --precision writes the same bytes as
    --precision fp32, within the usual 1e-4 / 1e-5 of ONNX Runtime;
  - a CPU without AVX512_BF16 (here: INFERA_CPU=avx2 lowers the path) refuses --precision bf16 with
    an error naming AVX512_BF16 -- never a silent fallback to FP32;
  - bf16 (when the CPU has AVX512_BF16): every output within 1% of the output's largest magnitude
    of ONNX Runtime's FP32 one (measured: <= 0.42%), and the models with MatMul/Gemm differ from
    FP32 (the option took effect); 2 threads give 1 thread's bits; `bench --json` reports "precision":"bf16".
Exit 77 (SKIP) after the FP32 and refusal checks when the CPU has no AVX512_BF16.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

BF16_REL = 1e-2  # |bf16 - ort| <= BF16_REL * max|ort| + 1e-5

failures = 0


def check(ok, what):
    global failures
    print(("PASS " if ok else "FAIL ") + what)
    if not ok:
        failures += 1


def cases(models):
    out = [("mlp", {"input": "mlp_input.npy"}, {"logits": "mlp_logits.ort.npy", "probabilities": "mlp_probabilities.ort.npy"}),
           ("transformer", {"input": "transformer_input.npy"}, {"logits": "transformer_logits.ort.npy"})]
    for name in ("encoder_prenorm_gelu", "fusions", "embed_pos"):
        ins = {os.path.basename(p)[len(name) + 1:-4]: "unseen/" + os.path.basename(p)
               for p in sorted(glob.glob(os.path.join(models, "unseen", name + "_x*.npy")))}
        outs = {os.path.basename(p)[len(name) + 1:-8]: "unseen/" + os.path.basename(p)
                for p in sorted(glob.glob(os.path.join(models, "unseen", name + "_y*.ort.npy")))}
        out.append(("unseen/" + name, ins, outs))
    return out


def run(infera, models, name, ins, outdir, precision, env=None):
    args = [infera, "run", os.path.join(models, name + ".onnx"), "--output-dir", outdir]
    for k, v in ins.items():
        args += ["--input", "%s=%s" % (k, os.path.join(models, v))]
    if precision:
        args += ["--precision", precision]
    return subprocess.run(args, capture_output=True, text=True, env=env)


def main():
    infera, src = sys.argv[1], sys.argv[2]
    models = os.path.join(src, "tests", "models")
    cpu = json.loads(subprocess.run([infera, "info", "--cpu", "--json"], capture_output=True, text=True, check=True).stdout)
    has_bf16 = "avx512bf16" in cpu.get("features", []) and cpu.get("path") == "avx512"
    tmp = tempfile.mkdtemp(prefix="infera_precision_")
    for name, ins, outs in cases(models):
        dirs = {}
        for prec in ("", "fp32") + (("bf16",) if has_bf16 else ()):
            d = os.path.join(tmp, name.replace("/", "_") + "_" + (prec or "default"))
            r = run(infera, models, name, ins, d, prec)
            check(r.returncode == 0, "%s: run --precision %s%s" % (name, prec or "(default)", (": " + r.stderr.strip()) if r.returncode else ""))
            dirs[prec] = d
        changed = False
        for out, ref in outs.items():
            want = np.load(os.path.join(models, ref))
            got = {p: np.load(os.path.join(d, out + ".npy")) for p, d in dirs.items() if os.path.exists(os.path.join(d, out + ".npy"))}
            if "" not in got or "fp32" not in got:
                check(False, "%s %s: output missing" % (name, out))
                continue
            check(got[""].tobytes() == got["fp32"].tobytes() and got[""].dtype == got["fp32"].dtype,
                  "%s %s: default == --precision fp32, bit for bit" % (name, out))
            check(np.allclose(got[""], want, rtol=1e-4, atol=1e-5), "%s %s: default within 1e-4 of ONNX Runtime" % (name, out))
            if "bf16" in got:
                err = float(np.max(np.abs(got["bf16"].astype(np.float64) - want))) if want.size else 0.0
                scale = float(np.max(np.abs(want))) if want.size else 0.0
                check(got["bf16"].shape == want.shape and err <= BF16_REL * scale + 1e-5,
                      "%s %s: bf16 within %.0f%% of ONNX Runtime's FP32 (max |diff| %.3g, max |ort| %.3g)"
                      % (name, out, BF16_REL * 100, err, scale))
                changed = changed or got["bf16"].tobytes() != got["fp32"].tobytes()
        if has_bf16 and name in ("mlp", "transformer", "unseen/encoder_prenorm_gelu"):
            check(changed, "%s: bf16 outputs differ from fp32 (the option took effect)" % name)

    env = dict(os.environ, INFERA_CPU="avx2")
    r = run(infera, models, "mlp", {"input": "mlp_input.npy"}, os.path.join(tmp, "refused"), "bf16", env)
    check(r.returncode != 0 and "AVX512_BF16" in r.stderr and "fp32" in r.stderr,
          "INFERA_CPU=avx2: --precision bf16 refused naming AVX512_BF16 (%s)" % r.stderr.strip())
    r = subprocess.run([infera, "run", os.path.join(models, "mlp.onnx"), "--precision", "int4"], capture_output=True, text=True)
    check(r.returncode == 2 and "fp32 or bf16" in r.stderr, "--precision int4: usage error")

    if not has_bf16:
        print("test_precision: this CPU has no AVX512_BF16 on the avx512 path: bf16 checks skipped (%d failures so far)" % failures)
        return 1 if failures else 77
    # bf16 on 2 threads (sub-batches, column panels split): the same bits as on 1
    one, two = os.path.join(tmp, "t1"), os.path.join(tmp, "t2")
    for d, t in ((one, "1"), (two, "2")):
        subprocess.run([infera, "run", os.path.join(models, "transformer.onnx"), "--input",
                        "input=" + os.path.join(models, "transformer_input.npy"), "--precision", "bf16", "--threads", t,
                        "--output-dir", d], capture_output=True, check=False)
    same = all(os.path.exists(os.path.join(d, "logits.npy")) for d in (one, two)) and \
        np.load(os.path.join(one, "logits.npy")).tobytes() == np.load(os.path.join(two, "logits.npy")).tobytes()
    check(same, "transformer bf16: 2 threads == 1 thread, bit for bit")
    r = subprocess.run([infera, "bench", os.path.join(models, "mlp.onnx"), "--precision", "bf16", "--iters", "5", "--json"],
                       capture_output=True, text=True)
    check(r.returncode == 0 and json.loads(r.stdout).get("precision") == "bf16", "bench --json --precision bf16")
    print("%d failed" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
