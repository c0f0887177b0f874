"""ms_qoperator_models.py -- files quantized by ONNX Runtime's own quantizer in QOperator format (its contrib ops:
com.microsoft QLinearAdd, QLinearGlobalAveragePool, QGemm...) run in Infera, compared with ONNX Runtime.

  python ms_qoperator_models.py INFERA SWEEP_DIR WORKDIR

SWEEP_DIR: tests/quant/gen_sweep_models.py's output (<m>.onnx, <m>.x.npy).  Each model is quantized with
onnxruntime.quantization.quantize_static (QOperator; per tensor and per channel; uint8 activations, int8 weights,
the .npy rows as calibration) and quantize_dynamic (QOperator), then run by ORT (CPU) and `infera run` on the same
input.  Check: every output within one step of the output's quantization (the scale of the DequantizeLinear that
makes it; 1e-5 relative for a dynamic file's float output), and the com.microsoft ops the file holds are listed.
Prints "ok NAME ..." / "FAIL NAME ..." lines (tests/check.sh check_lines).
"""
import contextlib
import io
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic,
                                      quantize_static)

INFERA, SWEEP, WORK = sys.argv[1:4]
os.makedirs(WORK, exist_ok=True)
failures = 0


class Reader(CalibrationDataReader):
    def __init__(self, x, batch=1):
        self.rows = iter([{"x": x[i:i + batch]} for i in range(0, x.shape[0] - batch + 1, batch)])

    def get_next(self):
        return next(self.rows, None)


def out_step(model, name):
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    for n in model.graph.node:
        if name in n.output and n.op_type == "DequantizeLinear":
            return float(np.max(inits.get(n.input[1], np.array([0.0]))))
    return None


def check(m, tag, qpath, x, fixed_batch):
    global failures
    model = onnx.load(qpath)
    ms_ops = sorted({n.op_type for n in model.graph.node if n.domain == "com.microsoft"})
    name = "%s %s" % (m, tag)
    d = os.path.join(WORK, "%s.%s" % (m, tag))
    os.makedirs(d, exist_ok=True)
    xin = x if not fixed_batch else x[:fixed_batch]
    np.save(os.path.join(d, "x.npy"), xin)
    r = subprocess.run([INFERA, "run", qpath, "--input", "x=" + os.path.join(d, "x.npy"), "--output-dir", d],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print("FAIL %s: infera run: %s" % (name, r.stderr.strip()[:300]))
        failures += 1
        return
    try:
        sess = ort.InferenceSession(qpath, providers=["CPUExecutionProvider"])
    except Exception as e:  # e.g. ConvInteger with int8 weights: ORT has no kernel, no oracle
        print("%s: ONNX Runtime cannot run the file, not compared (%s)" % (name, str(e)[:160]))
        return
    outs = sess.run(None, {"x": xin})
    for o, want in zip(sess.get_outputs(), outs):
        got = np.load(os.path.join(d, o.name + ".npy"))
        step = out_step(model, o.name)
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        tol = step * 1.0001 if step else 1e-5 * max(1.0, float(np.max(np.abs(want))))
        ok = got.shape == want.shape and float(diff.max()) <= tol
        print("%s %s %s: max |Infera - ORT| %.3g (%s), %d of %d equal; com.microsoft ops: %s" %
              ("ok" if ok else "FAIL", name, o.name, float(diff.max()),
               "one step %.3g" % step if step else "float, tol %.2g" % tol, int(np.count_nonzero(diff == 0)),
               want.size, ", ".join(ms_ops) or "none"))
        failures += not ok


MODELS = [("res_cnn", 0), ("res_cnn_fixed", 2), ("conv1d", 0), ("linchain", 0), ("encoder", 0)]
for m, fixed in MODELS:
    src = os.path.join(SWEEP, m + ".onnx")
    if not os.path.exists(src):
        print("FAIL %s: not generated" % m)
        failures += 1
        continue
    x = np.load(os.path.join(SWEEP, m + ".x.npy"))
    for tag, pc in (("qop", False), ("qop-pc", True)):
        q = os.path.join(WORK, "%s.%s.onnx" % (m, tag))
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # the quantizer prints the protobufs it meets
                quantize_static(src, q, Reader(x, fixed or 1), quant_format=QuantFormat.QOperator,
                                per_channel=pc, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
        except Exception as e:  # the quantizer's own failure is not Infera's: report it, do not count it
            print("%s %s: ORT's quantizer failed (%s)" % (m, tag, str(e)[:200]))
            continue
        check(m, tag, q, x, fixed)
    q = os.path.join(WORK, "%s.dyn-qop.onnx" % m)
    with contextlib.redirect_stdout(io.StringIO()):
        quantize_dynamic(src, q, weight_type=QuantType.QInt8)
    check(m, "dyn-qop", q, x, fixed)
sys.exit(1 if failures else 0)
