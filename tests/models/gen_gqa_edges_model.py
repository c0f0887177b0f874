#!/usr/bin/python3
"""Makes hf_arch/gqa_edges.onnx: a decoder's grouped-query attention as transformers writes it (Q after rotary
embeddings read as [b, h, s, d]; K and V repeated for the query heads by repeat_kv: Unsqueeze(x, 2) -> Expand ->
Reshape; K^T a Transpose(.., [0, 1, 3, 2])), which the attention pass (src/graph/passes/attention.c) fuses into
Attention with kv_heads, and near misses it must keep, for tests/integration/test_hf_arch.sh.

  inputs q [batch, 4, 5, 8] (the query heads after rotary), k [batch, 2, 5, 8] (K after rotary), v [batch, 5, 2, 8]
  (V's projection viewed as heads), k1 [1, 2, 5, 8]; opset 17, batch symbolic; the additive mask a constant [5, 5]
  (causal, -inf above the diagonal).
  y_a = repeat_kv(k), repeat_kv(Transpose(v)) (Expand shape [1, 2, 2, 1, 1], Reshape [0, 4, -1, 8]) -> Attention
  y_b = like y_a with Unsqueeze(x, 1) (head j reads j % 2, not j / 2)                             -> kept
  y_c = K repeated, V not (V has 4 heads of its own: k_v4 [batch, 5, 4, 8])                       -> kept
  y_d = K from k1 with an Expand that also broadcasts the batch (shape [2, 2, 2, 1, 1])             -> kept
Writes the inputs beside it (batch 2): gqa_q.npy, gqa_k.npy, gqa_v.npy, gqa_v4.npy, gqa_k1.npy.

Run with Debian's python3-onnx:  /usr/bin/python3 tests/models/gen_gqa_edges_model.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hf_arch")
rng = np.random.default_rng(30)
nodes, inits = [], []
S, H, HKV, D = 5, 4, 2, 8


def const(name, value, dtype=np.float32):
    inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
    return name


def node(op, ins, out, **attrs):
    nodes.append(helper.make_node(op, ins, [out], **attrs))
    return out


mask = np.triu(np.full((S, S), -np.inf, np.float32), 1)
const("mask", mask)
const("scale", np.float32(1 / np.sqrt(D)))


def repeat_kv(p, x, axis=2, shape=(1, HKV, H // HKV, 1, 1)):
    u = node("Unsqueeze", [x, const(p + "ax", [axis], np.int64)], p + "u")
    e = node("Expand", [u, const(p + "es", list(shape), np.int64)], p + "e")
    return node("Reshape", [e, const(p + "rs", [0, H, -1, D], np.int64)], p + "r")


def attention(p, k, v, k_axis=2, v_axis=2, v_repeat=True, k_shape=(1, HKV, H // HKV, 1, 1)):
    kr = repeat_kv(p + "k_", k, k_axis, k_shape)
    vt = node("Transpose", [v], p + "vt", perm=[0, 2, 1, 3])
    vr = repeat_kv(p + "v_", vt, v_axis) if v_repeat else vt
    kt = node("Transpose", [kr], p + "kt", perm=[0, 1, 3, 2])
    s = node("MatMul", [node("Mul", ["q", "scale"], p + "qs"), kt], p + "s")
    pr = node("Softmax", [node("Add", [s, "mask"], p + "sm")], p + "p", axis=-1)
    pv = node("MatMul", [pr, vr], p + "pv")
    return node("Transpose", [pv], "y_" + p[0], perm=[0, 2, 1, 3])


attention("a_", "k", "v")
attention("b_", "k", "v", k_axis=1, v_axis=1)
attention("c_", "k", "v4", v_repeat=False)
attention("d_", "k1", "v", k_shape=(2, HKV, H // HKV, 1, 1))
inputs = [helper.make_tensor_value_info("q", TensorProto.FLOAT, ["batch", H, S, D]),
          helper.make_tensor_value_info("k", TensorProto.FLOAT, ["batch", HKV, S, D]),
          helper.make_tensor_value_info("v", TensorProto.FLOAT, ["batch", S, HKV, D]),
          helper.make_tensor_value_info("v4", TensorProto.FLOAT, ["batch", S, H, D]),
          helper.make_tensor_value_info("k1", TensorProto.FLOAT, [1, HKV, S, D])]
outputs = [helper.make_tensor_value_info("y_" + c, TensorProto.FLOAT, ["batch", S, H, D]) for c in "abcd"]
graph = helper.make_graph(nodes, "gqa_edges", inputs, outputs, initializer=inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(here, "gqa_edges.onnx"))
for name, shape in (("q", (2, H, S, D)), ("k", (2, HKV, S, D)), ("v", (2, S, HKV, D)), ("v4", (2, S, H, D)),
                    ("k1", (1, HKV, S, D))):
    np.save(os.path.join(here, f"gqa_{name}.npy"), rng.standard_normal(shape).astype(np.float32))
