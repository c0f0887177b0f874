"""What the small graph generators of tests/models (gen_conv_add_model.py,
gen_matmul_add_model.py, gen_conv_bn_model.py, gen_layout_model.py,
gen_shape_fold_model.py) share: a graph being built -- nodes, float32
constants drawn in call order from one seeded generator, scalars -- and
saving it as a checked ONNX model.  Needs Debian's python3-onnx and numpy.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Graph:
    """Nodes and initializers in the order they are made (the saved bytes depend on it)."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []

    def const(self, name, shape, lo=-0.5, hi=0.5):
        """A float32 initializer uniform in [lo, hi); returns its name."""
        self.inits.append(numpy_helper.from_array(self.rng.uniform(lo, hi, shape).astype(np.float32), name))
        return name

    def scalar(self, name, value, dtype=np.float32):
        """A 0-d initializer (or an array when value is a list) of dtype; returns its name."""
        self.inits.append(numpy_helper.from_array(np.array(value, dtype=dtype) if isinstance(value, list)
                                                  else dtype(value), name))
        return name

    def node(self, op, ins, out, **attrs):
        """Appends a one-output node; returns the output's name."""
        self.nodes.append(helper.make_node(op, ins, [out], **attrs))
        return out

    def save(self, name, inputs, outputs, script, opset=13):
        """Checks and writes tests/models/<name>.onnx; inputs and outputs are ValueInfoProtos,
        script the generator's file name (the model's producer)."""
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name=script)
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".onnx"))


def float_input(name, dims):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)
