#!/usr/bin/env python3
"""Sweeps every ai.onnx operator version of opsets 18-26: does Infera load what ONNX Runtime loads?

For each operator of ONNX 1.23's schemas, each opset in {its since-versions in 18..26} + {26} and each float or
integer type (and bool, string) its input 0 allows, a minimal one-node model (required inputs only, the others
of the first type their constraint allows from a preference list, rank unknown; required attributes filled
from a small table) is loaded by ONNX Runtime 1.30 (CPU, no graph
optimisations) and, when ORT accepts it, by `infera info` (which parses, binds and initialises every node).
Prints one line per (operator, opset) that ORT accepts and Infera refuses -- the gaps -- with Infera's error,
marked VERSION when the error is about opsets/versions, then a summary.  A model ORT refuses is counted as
"not checked" (ORT lacks a CPU kernel for those types, or the minimal model is not valid for the operator).

A development tool, not a CI test (it needs the pinned oracle):
    tests/conformance/setup_oracle.sh /tmp/opset-venv
    /tmp/opset-venv/bin/python tests/conformance/sweep_opset_versions.py build/infera [-v]
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, defs, helper, numpy_helper

TYPE_PREFERENCE = ["tensor(float)", "tensor(int64)", "tensor(int32)", "tensor(bool)", "tensor(string)",
                   "tensor(uint8)", "tensor(int8)", "tensor(double)", "tensor(float16)", "seq(tensor(float))",
                   "seq(tensor(int64))", "optional(tensor(float))"]
# Each operator is tried with each of these its input 0 allows (the float and integer types ORT implements).
MAIN_TYPES = ["tensor(float)", "tensor(double)", "tensor(float16)", "tensor(int64)", "tensor(int32)",
              "tensor(int8)", "tensor(uint8)", "tensor(bool)", "tensor(string)"]
ELEM = {"float": TensorProto.FLOAT, "int64": TensorProto.INT64, "int32": TensorProto.INT32, "bool": TensorProto.BOOL,
        "string": TensorProto.STRING, "uint8": TensorProto.UINT8, "int8": TensorProto.INT8,
        "double": TensorProto.DOUBLE, "float16": TensorProto.FLOAT16}
SKIP = {"If", "Loop", "Scan", "SequenceMap"}  # graph attributes: a body would be more than a minimal model

# Required attributes (or ones without which ORT refuses the node), per operator.
ATTRS = {
    "Cast": {"to": TensorProto.FLOAT}, "BitCast": {"to": TensorProto.INT32},
    "Constant": {"value": numpy_helper.from_array(np.array([1.0], np.float32))},
    "RegexFullMatch": {"pattern": "a+"}, "Split": {"num_outputs": 1},
    "EyeLike": {}, "RandomNormal": {"shape": [2]}, "RandomUniform": {"shape": [2]},
    "LSTM": {"hidden_size": 2}, "GRU": {"hidden_size": 2}, "RNN": {"hidden_size": 2},
    "AveragePool": {"kernel_shape": [1, 1]}, "MaxPool": {"kernel_shape": [1, 1]}, "LpPool": {"kernel_shape": [1, 1]},
    "MaxRoiPool": {"pooled_shape": [1, 1]}, "DeformConv": {}, "Col2Im": {},
    "BitShift": {"direction": "LEFT"},
    "TfIdfVectorizer": {"mode": "TF", "min_gram_length": 1, "max_gram_length": 1, "max_skip_count": 0,
                        "ngram_counts": [0], "ngram_indexes": [0], "pool_int64s": [1]},
    "Optional": {"type": helper.make_tensor_type_proto(TensorProto.FLOAT, None)},
}
# Operators whose minimal model needs given inputs (None: an omitted one), not just the required ones.
INPUTS = {"Resize": ["tensor(float)", None, "tensor(float)"]}


def allowed_types(schema, formal):
    for tc in schema.type_constraints:
        if tc.type_param_str == formal.type_str:
            return list(tc.allowed_type_strs)
    return [formal.type_str]


def pick_type(schema, formal, main_type):
    """main_type for the inputs sharing input 0's type constraint, else the first preferred type allowed."""
    allowed = allowed_types(schema, formal)
    if main_type in allowed and formal.type_str == schema.inputs[0].type_str:
        return main_type
    for t in TYPE_PREFERENCE:
        if t in allowed:
            return t
    return None


def type_proto(t):
    if t.startswith("tensor("):
        return helper.make_tensor_type_proto(ELEM[t[7:-1]], None)
    if t.startswith("seq("):
        return helper.make_sequence_type_proto(type_proto(t[4:-1]))
    if t.startswith("optional("):
        return helper.make_optional_type_proto(type_proto(t[9:-1]))
    raise KeyError(t)


def default_attr(a):
    A = defs.OpSchema.AttrType
    return {A.INT: 1, A.FLOAT: 1.0, A.STRING: "", A.INTS: [1], A.FLOATS: [1.0], A.STRINGS: ["a"],
            A.TENSOR: numpy_helper.from_array(np.array([1.0], np.float32))}.get(a.type)


def minimal_model(schema, opset, main_type):
    inputs, names = [], []
    types = INPUTS.get(schema.name) or [pick_type(schema, f, main_type) for f in schema.inputs
                                        if f.option != defs.OpSchema.FormalParameterOption.Optional]
    for i, t in enumerate(types):
        name = "x%d" % i if t else ""
        if t:
            inputs.append(helper.make_value_info(name, type_proto(t)))
        names.append(name)
    if schema.name not in INPUTS and None in types:
        return None
    n_out = max(1, sum(1 for f in schema.outputs if f.option != defs.OpSchema.FormalParameterOption.Optional))
    attrs = dict(ATTRS.get(schema.name, {}))
    for a in schema.attributes.values():
        if a.required and a.name not in attrs:
            v = default_attr(a)
            if v is None:
                return None
            attrs[a.name] = v
    node = helper.make_node(schema.name, names, ["y%d" % i for i in range(n_out)], **attrs)
    outputs = [onnx.ValueInfoProto(name="y%d" % i) for i in range(n_out)]
    graph = helper.make_graph([node], "g", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def ort_loads(model):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 4
    try:
        ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        return True, ""
    except Exception as e:  # noqa: BLE001 -- any refusal
        return False, str(e).splitlines()[0][:160]


def infera_loads(infera, model, tmp):
    path = os.path.join(tmp, "m.onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    r = subprocess.run([infera, "info", path], capture_output=True, text=True)
    return r.returncode == 0, (r.stderr.strip().splitlines() or [""])[-1]


def main():
    infera = sys.argv[1] if len(sys.argv) > 1 else "build/infera"
    verbose = "-v" in sys.argv
    latest = {}
    for s in defs.get_all_schemas_with_history():
        if s.domain == "" and not s.deprecated:
            latest.setdefault(s.name, []).append(s.since_version)
    ok = gaps = unchecked = 0
    with tempfile.TemporaryDirectory() as tmp:
        for op in sorted(latest):
            if op in SKIP:
                continue
            opsets = sorted({v for v in latest[op] if 18 <= v <= 26} | {26})
            for opset in opsets:
                try:
                    schema = defs.get_schema(op, opset, "")
                except defs.SchemaError:  # an operator of an opset newer than 26
                    continue
                if schema.deprecated:
                    continue
                main_types = [t for t in MAIN_TYPES if schema.inputs and t in allowed_types(schema, schema.inputs[0])]
                for main_type in main_types or [None]:
                    what = "%s-%d %s" % (op, opset, main_type or "")
                    model = minimal_model(schema, opset, main_type)
                    if model is None:
                        unchecked += 1
                        if verbose:
                            print("skip  %s: no minimal model" % what)
                        continue
                    good, why = ort_loads(model)
                    if not good:
                        unchecked += 1
                        if verbose:
                            print("ORT-  %s: %s" % (what, why))
                        continue
                    good, why = infera_loads(infera, model, tmp)
                    if good:
                        ok += 1
                        if verbose:
                            print("ok    %s" % what)
                    else:
                        gaps += 1
                        kind = "VERSION" if "opset" in why or "version" in why else "other"
                        print("GAP   %s (%s): %s" % (what, kind, why))
    print("%d loaded by both, %d gaps (ORT loads, Infera refuses), %d not checked" % (ok, gaps, unchecked))
    return 1 if gaps else 0


if __name__ == "__main__":
    sys.exit(main())
