#!/usr/bin/python3
"""Makes hf_bert/sdpa_edges.onnx: torch's scaled_dot_product_attention as torch.onnx.export writes it
(sqrt(scale) on Q and on K^T, Softmax -> Where(IsNaN(P), 0, P), P V reshaped before the last Transpose),
fused by the attention pass (src/graph/passes/attention.c), and near misses it must keep, for
tests/integration/test_hf_bert.sh.

  inputs q, k, v [batch, 5, 2, 4] (opset 17; batch symbolic), pv_shape int64 [4]; the additive mask is a
  constant [5, 5] with -inf entries and a fully masked first row (its softmax is NaN, the Where makes it 0).
  y_a = P V reshaped to Concat(Shape(PV)[0], -1, Shape(Qt)[2], Shape(Vt)[3]) (the TorchScript spelling;
        Q, V and P V also read by those Shape nodes)           -> Attention, the Reshape dropped
  y_b = P V reshaped to the graph input pv_shape               -> Attention, pv_shape checked at run time
  y_c = like y_a with Where(IsNaN(P), 1, P)                    -> kept (not the NaN-safe softmax)
  y_d = like y_a with Transpose(q) also a graph output (qt_d)  -> Attention reading that Transpose's output as
        [b, h, s, d] (session 30; kept before: the Transpose could not be absorbed)
Writes the inputs beside it: sdpa_q.npy, sdpa_k.npy, sdpa_v.npy (batch 2), sdpa_pv_shape.npy ([2, 2, 5, 4],
P V's shape) and sdpa_pv_shape_bad.npy ([2, 5, 2, 4]: same size, another shape -- ONNX Runtime reshapes, the
fused Attention reports an error).

Run with Debian's python3-onnx:  /usr/bin/python3 tests/models/gen_sdpa_edges_model.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hf_bert")
rng = np.random.default_rng(28)
nodes, inits = [], []
S, H, D = 5, 2, 4


def const(name, value, dtype=np.float32):
    inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
    return name


def node(op, ins, out, **attrs):
    nodes.append(helper.make_node(op, ins, [out], **attrs))
    return out


def dim_of(p, x, i):
    g = node("Gather", [node("Shape", [x], f"{p}shape{i}"), const(f"{p}idx{i}", i, np.int64)], f"{p}dim{i}", axis=0)
    return node("Unsqueeze", [g, const(f"{p}ax{i}", [0], np.int64)], f"{p}udim{i}")


mask = np.zeros((S, S), np.float32)
mask[0, :] = -np.inf
mask[2, 3:] = -np.inf
const("mask", mask)


def sdpa(p, where_value=0.0, shape=None):
    qt = node("Transpose", ["q"], p + "qt", perm=[0, 2, 1, 3])
    kt = node("Transpose", ["k"], p + "kt", perm=[0, 2, 3, 1])
    vt = node("Transpose", ["v"], p + "vt", perm=[0, 2, 1, 3])
    c = const(p + "c", np.float32(np.sqrt(1 / np.sqrt(D))))
    s = node("MatMul", [node("Mul", [qt, c], p + "qs"), node("Mul", [kt, c], p + "ks")], p + "s")
    pr = node("Softmax", [node("Add", [s, "mask"], p + "sm")], p + "p", axis=-1)
    pn = node("Where", [node("IsNaN", [pr], p + "nan"), const(p + "z", np.float32(where_value)), pr], p + "pn")
    pv = node("MatMul", [pn, vt], p + "pv")
    if shape is None:
        shape = node("Concat", [dim_of(p + "pv_", pv, 0), const(p + "m1", [-1], np.int64), dim_of(p + "q_", qt, 2),
                                dim_of(p + "v_", vt, 3)], p + "shape", axis=0)
    return node("Transpose", [node("Reshape", [pv, shape], p + "r")], "y_" + p[0], perm=[0, 2, 1, 3]), qt


ya, _ = sdpa("a_")
yb, _ = sdpa("b_", shape="pv_shape")
yc, _ = sdpa("c_", where_value=1.0)
yd, qt_d = sdpa("d_")
f4 = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", S, H, D])
outputs = [f4(y) for y in (ya, yb, yc, yd)] + [helper.make_tensor_value_info(qt_d, TensorProto.FLOAT,
                                                                            ["batch", H, S, D])]
inputs = [f4(n) for n in "qkv"] + [helper.make_tensor_value_info("pv_shape", TensorProto.INT64, [4])]
graph = helper.make_graph(nodes, "sdpa_edges", inputs, outputs, initializer=inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(here, "sdpa_edges.onnx"))
for n in "qkv":
    np.save(os.path.join(here, f"sdpa_{n}.npy"), rng.normal(0, 1, (2, S, H, D)).astype(np.float32))
np.save(os.path.join(here, "sdpa_pv_shape.npy"), np.array([2, H, S, D], np.int64))
np.save(os.path.join(here, "sdpa_pv_shape_bad.npy"), np.array([2, S, H, D], np.int64))
print("sdpa_edges.onnx:", len(nodes), "nodes")
