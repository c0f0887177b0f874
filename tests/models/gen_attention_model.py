#!/usr/bin/python3
"""Makes attention.onnx: scaled-dot-product attention chains as PyTorch 1.13
exports them (bench/gen_bench_models.py's BERT heads), which the optimizer's
attention pass (src/graph/passes/attention.c) fuses, and near-misses it must
leave alone, for tests/unit/test_attention.c.

  input x [2, 5, 24] (opset 13), 3 heads of 8; each chain projects x with its
  own weights (MatMul + bias Add), splits heads with Reshape + Transpose
  (K: perm [0, 2, 3, 1]), and merges them back with Transpose + Reshape.
  att_a = the BERT export exactly: Reshape shapes built by
          Shape -> Gather -> Unsqueeze -> Concat, MatMul, Div(sqrt 8),
          Softmax(-1), MatMul                                   -> Attention
  att_b = constant Reshape shapes [0, 0, 3, 8], Mul(1/sqrt 8), then
          Add(mask, scores) with a [5, 5] mask                  -> Attention
  att_c = like att_b with Softmax over axis 2                   -> kept
  att_d = like att_a, the softmax output also a graph output   -> kept
  att_e = like att_b, divided by a [5] vector, not a scalar     -> kept

Run with Debian's python3-onnx:  /usr/bin/python3 tests/models/gen_attention_model.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(11)
nodes, inits, outputs = [], [], []
B, S, H, D = 2, 5, 3, 8


def const(name, value, dtype=np.float32):
    inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
    return name


def node(op, ins, out, **attrs):
    nodes.append(helper.make_node(op, ins, [out], **attrs))
    return out


def dim_of(p, x, i):
    g = node("Gather", [node("Shape", [x], f"{p}shape{i}"), const(f"{p}idx{i}", i, np.int64)], f"{p}dim{i}", axis=0)
    return node("Unsqueeze", [g, const(f"{p}ax{i}", [0], np.int64)], f"{p}udim{i}")


def project(p, x):
    w = const(p + "w", rng.normal(0, 0.3, (H * D, H * D)))
    return node("Add", [const(p + "b", rng.normal(0, 0.1, H * D)), node("MatMul", [x, w], p + "mm")], p + "proj")


def heads(p, x, perm, shape_subgraph):
    y = project(p, x)
    if shape_subgraph:
        shape = node("Concat", [dim_of(p, y, 0), dim_of(p, y, 1), const(p + "h", [H], np.int64),
                                const(p + "d", [D], np.int64)], p + "shape", axis=0)
    else:
        shape = const(p + "shape", [0, 0, H, D], np.int64)
    return node("Transpose", [node("Reshape", [y, shape], p + "r")], p + "t", perm=perm)


def attention(p, x, scale="div", mask=False, axis=-1, shape_subgraph=False, p_out=False):
    q = heads(p + "q_", x, [0, 2, 1, 3], shape_subgraph)
    k = heads(p + "k_", x, [0, 2, 3, 1], shape_subgraph)
    v = heads(p + "v_", x, [0, 2, 1, 3], shape_subgraph)
    s = node("MatMul", [q, k], p + "s")
    if scale == "div":
        s = node("Div", [s, const(p + "c", np.sqrt(D))], p + "ss")
    elif scale == "mul":
        s = node("Mul", [s, const(p + "c", 1 / np.sqrt(D))], p + "ss")
    else:  # a vector: broadcasts, but is not a scalar scale
        s = node("Div", [s, const(p + "c", np.full(S, np.sqrt(D)))], p + "ss")
    if mask:
        m = np.where(rng.uniform(size=(S, S)) < 0.3, -1e4, 0.0)
        s = node("Add", [const(p + "mask", m), s], p + "sm")
    pr = node("Softmax", [s], p + "p", axis=axis)
    if p_out:
        outputs.append(helper.make_tensor_value_info(pr, TensorProto.FLOAT, [B, H, S, S]))
    ctx = node("Transpose", [node("MatMul", [pr, v], p + "ctx")], p + "ctx_t", perm=[0, 2, 1, 3])
    if shape_subgraph:
        shape = node("Concat", [dim_of(p + "o_", x, 0), dim_of(p + "o_", x, 1), dim_of(p + "o_", x, 2)],
                     p + "o_shape", axis=0)
    else:
        shape = const(p + "o_shape", [0, 0, H * D], np.int64)
    return node("Reshape", [ctx, shape], p + "y")


x = "x"
results = [
    attention("att_a_", x, shape_subgraph=True),
    attention("att_b_", x, scale="mul", mask=True),
    attention("att_c_", x, scale="mul", mask=True, axis=2),
    attention("att_d_", x, shape_subgraph=True, p_out=True),
    attention("att_e_", x, scale="vector"),
]
outputs = [helper.make_tensor_value_info(r, TensorProto.FLOAT, [B, S, H * D]) for r in results] + outputs
graph = helper.make_graph(nodes, "attention", [helper.make_tensor_value_info(x, TensorProto.FLOAT, [B, S, H * D])],
                          outputs, initializer=inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 7
onnx.checker.check_model(model)
onnx.save(model, os.path.join(here, "attention.onnx"))
print("attention.onnx:", len(nodes), "nodes")
