#!/usr/bin/python3
"""check.py -- bench/extra's output check: Infera against ONNX Runtime, once per model.

    /usr/bin/python3 bench/extra/check.py INFERA MODELS_DIR [NAME...]

For each model: a seeded uniform [-1, 1) input of batch 2 goes through
`INFERA run` and through bench/extra/ort_run.js (onnxruntime-node); the
outputs must agree within |a - o| <= 1e-4 + 1e-3 |o|.  Prints one line per
model (max abs difference, max |o|) and exits 1 if any disagrees.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPES = {"mlp_odd": [2, 37], "cnn_gray": [2, 1, 56, 56], "mobile": [2, 3, 96, 96], "enc17": [2, 64, 384],
          "conv1d_text": [2, 40, 256], "conv1d_m5": [2, 1, 8000], "resnet18": [2, 3, 224, 224],
          "resnet50": [2, 3, 224, 224], "mobilenetv2": [2, 3, 224, 224], "effnetb0": [2, 3, 224, 224]}


def check(infera, models, name, tmp):
    model = os.path.join(models, name + ".onnx")
    x = np.random.RandomState(1).uniform(-1, 1, SHAPES[name]).astype(np.float32)
    xn, xb, ob = (os.path.join(tmp, name + s) for s in ("_x.npy", "_x.bin", "_ort.bin"))
    np.save(xn, x)
    x.tofile(xb)
    subprocess.run(["node", os.path.join(HERE, "ort_run.js"), model, xb, json.dumps(SHAPES[name]), ob], check=True)
    out = os.path.join(tmp, "out_" + name)
    subprocess.run([infera, "run", model, "--input", "x=" + xn, "--output-dir", out], check=True,
                   stdout=subprocess.DEVNULL)
    a, o = np.load(os.path.join(out, "y.npy")).ravel(), np.fromfile(ob, np.float32)
    ok = a.shape == o.shape and bool(np.all(np.abs(a - o) <= 1e-4 + 1e-3 * np.abs(o)))
    diff = float(np.abs(a - o).max()) if a.shape == o.shape else float("nan")
    print("check %-9s %s  max |infera - ort| %.3g  (max |ort| %.3g)" % (name, "ok" if ok else "MISMATCH", diff,
                                                                         float(np.abs(o).max())))
    return ok


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    infera, models, names = sys.argv[1], sys.argv[2], sys.argv[3:] or list(SHAPES)
    with tempfile.TemporaryDirectory() as tmp:
        ok = [check(infera, models, n, tmp) for n in names]
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
