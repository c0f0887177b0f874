#!/usr/bin/python3
"""ONNX Runtime references for the outputs ort_run.js cannot write: string
tensors, sequences of maps (onnxruntime-node returns neither), and models ORT
refuses as they are.  Third step after gen_ml_models.py and ort_run.js; needs
PyPI onnxruntime==1.30.0 (the version of tests/models/ort/package.json) beside
Debian's python3-onnx and python3-numpy, e.g.

    python3 -m venv --system-site-packages /tmp/ortvenv
    /tmp/ortvenv/bin/pip install onnxruntime==1.30.0
    /tmp/ortvenv/bin/python tests/ml/ort_extra.py

Writes data/<case>.ort.<output>.{npy,pb,seq.pb} for:
  tree_cls3_strings, tree_cls3_double  label (string tensors -> .pb)
  tree_zipmap                          label and probabilities (seq(map) -> .seq.pb)
  tree_reg_average_none                Y: ORT refuses `nodes_values_as_tensor`
      for a float input, so it runs the same model with the thresholds as the
      float list `nodes_values`.  That is the same function as long as no input
      equals float32(threshold) for a threshold a float cannot hold exactly;
      asserted here.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
sys.path.insert(0, HERE)
from gen_ml_models import save_seq_of_maps, save_value  # noqa: E402

assert ort.__version__ == "1.30.0", f"onnxruntime {ort.__version__}: the references are made with 1.30.0"


def load_inputs(name, model):
    return {i.name: np.load(os.path.join(DATA, f"{name}.in.{i.name}.npy")) for i in model.graph.input}


def run(name, model_bytes, inputs):
    s = ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, inputs)))


def write(name, output, value):
    base = os.path.join(DATA, f"{name}.ort.{output}")
    if isinstance(value, list):  # a sequence of maps (ZipMap)
        keys = list(value[0].keys())
        assert all(list(r.keys()) == keys for r in value), f"{name}/{output}: maps with different keys"
        save_seq_of_maps(base, keys, [[r[k] for k in keys] for r in value])
    else:
        save_value(base, np.asarray(value))
    print(f"ok   {name}.ort.{output}")


def plain(name, outputs):
    model = onnx.load(os.path.join(DATA, f"{name}.onnx"))
    got = run(name, model.SerializeToString(), load_inputs(name, model))
    for o in outputs:
        write(name, o, got[o])


def thresholds_as_floats(name):
    model = onnx.load(os.path.join(DATA, f"{name}.onnx"))
    node = model.graph.node[0]
    attr = next(a for a in node.attribute if a.name == "nodes_values_as_tensor")
    values = numpy_helper.to_array(attr.t).astype(np.float64)
    inputs = load_inputs(name, model)
    x = inputs["X"].astype(np.float32)
    for v in values:
        if np.float64(np.float32(v)) != v:
            assert not np.any(x == np.float32(v)), f"{name}: an input equals float32({v}); the float model differs"
    node.attribute.remove(attr)
    node.attribute.append(helper.make_attribute("nodes_values", [float(v) for v in values]))
    write(name, "Y", run(name, model.SerializeToString(), inputs)["Y"])


def main():
    plain("tree_cls3_strings", ["label"])
    plain("tree_cls3_double", ["label"])
    plain("tree_zipmap", ["label", "probabilities"])
    thresholds_as_floats("tree_reg_average_none")


if __name__ == "__main__":
    main()
