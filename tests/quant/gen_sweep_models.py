#!/usr/bin/python3
"""gen_sweep_models.py -- models `infera quantize` / `prune` has not met, for a sweep of the compression tools.

  gen_sweep_models.py OUT_DIR

Writes OUT_DIR/<name>.onnx and one OUT_DIR/<name>.<input>.npy per graph input (numpy seed 11; torch seed 0):
PyTorch-exported CNNs (grouped / depthwise / dilated convs, stride 2 on odd sizes, 1-D convs, ConvTranspose,
unfolded BatchNorm, global average pool, residual adds, Flatten / Reshape before Gemm), a transformer encoder
(nn.TransformerEncoder: MultiheadAttention, LayerNorm, GELU), batched 3-D / 4-D MatMul, Gemm with transA /
transB / alpha / beta, a model with two inputs and two outputs, fixed and dynamic batch, opsets 13-21.
Needs Debian's python3-torch, python3-onnx, python3-numpy (no network).
"""
import os
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1] if len(sys.argv) > 1 else "sweep"
os.makedirs(OUT, exist_ok=True)
torch.manual_seed(0)
rng = np.random.default_rng(11)


def save_inputs(name, feeds):
    for k, v in feeds.items():
        np.save(os.path.join(OUT, "%s.%s.npy" % (name, k)), v)


def export(name, model, shapes, opset=13, dynamic=True, names=None, outs=None):
    model.eval()
    names = names or ["x%d" % i for i in range(len(shapes))] if len(shapes) > 1 else (names or ["x"])
    args = tuple(torch.tensor(rng.standard_normal(s).astype(np.float32)) for s in shapes)
    outs = outs or ["y"]
    dyn = {n: {0: "N"} for n in names + outs} if dynamic else None
    path = os.path.join(OUT, name + ".onnx")
    torch.onnx.export(model, args if len(args) > 1 else args[0], path, input_names=names, output_names=outs,
                      opset_version=opset, dynamic_axes=dyn, do_constant_folding=True)
    save_inputs(name, {n: a.numpy() for n, a in zip(names, args)})


class Res(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.c2 = torch.nn.Conv2d(8, 8, 3, padding=2, dilation=2)
        self.c3 = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)  # depthwise
        self.c4 = torch.nn.Conv2d(8, 16, 3, padding=1, groups=4)  # grouped
        self.fc = torch.nn.Linear(16, 5)

    def forward(self, x):
        y = torch.relu(self.bn(self.c1(x)))
        y = y + torch.relu(self.c2(y))
        y = torch.relu(self.c4(self.c3(y)))
        y = torch.nn.functional.adaptive_avg_pool2d(y, 1)
        return self.fc(torch.flatten(y, 1))


class Conv1d(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv1d(4, 6, 5, stride=2)
        self.c2 = torch.nn.Conv1d(6, 6, 3, padding=1, groups=3)
        self.fc = torch.nn.Linear(6 * 9, 3)

    def forward(self, x):
        y = torch.relu(self.c2(torch.relu(self.c1(x))))
        return self.fc(y.reshape(y.shape[0], -1))


class Deconv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c = torch.nn.Conv2d(2, 4, 3, stride=2)
        self.t = torch.nn.ConvTranspose2d(4, 2, 3, stride=2, output_padding=0)

    def forward(self, x):
        return self.t(torch.relu(self.c(x)))


class Enc(torch.nn.Module):
    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, activation="gelu", batch_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.enc(x).mean(dim=1))


class TwoIO(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(6, 8)
        self.b = torch.nn.Linear(4, 8)
        self.o1 = torch.nn.Linear(8, 2)
        self.o2 = torch.nn.Linear(8, 1)

    def forward(self, x0, x1):
        h = torch.tanh(self.a(x0) + self.b(x1))
        return torch.softmax(self.o1(h), dim=1), self.o2(h)


class Bmm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(8, 6) * 0.3)
        self.w4 = torch.nn.Parameter(torch.randn(2, 6, 5) * 0.3)

    def forward(self, x):  # x: N x 3 x 8 -> N x 3 x 6 (3-D x 2-D), then 4-D batched with a 3-D weight
        y = torch.matmul(x, self.w)
        y = y.unsqueeze(1).expand(-1, 2, -1, -1)
        return torch.matmul(y, self.w4)


def gemm_variants():  # Gemm with transA, transB, alpha, beta; fixed batch; opset set by hand up to 21
    for opset in (13, 17, 19, 21):
        for ta, tb, alpha, beta in ((0, 1, 1.0, 1.0), (1, 0, 0.5, 2.0), (0, 0, 1.5, 0.0)):
            k, n, m = 7, 5, 4
            a_shape = [k, m] if ta else [m, k]
            W = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
            C = rng.standard_normal((n,)).astype(np.float32)
            node = helper.make_node("Gemm", ["x", "W", "C"], ["h"], transA=ta, transB=tb, alpha=alpha, beta=beta)
            relu = helper.make_node("Relu", ["h"], ["y"])
            g = helper.make_graph([node, relu], "gemm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, a_shape)],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])],
                                  [numpy_helper.from_array(W, "W"), numpy_helper.from_array(C, "C")])
            mdl = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
            mdl.ir_version = 8 if opset <= 18 else 9
            name = "gemm_o%d_t%d%d_a%g_b%g" % (opset, ta, tb, alpha, beta)
            onnx.save(mdl, os.path.join(OUT, name + ".onnx"))
            save_inputs(name, {"x": rng.standard_normal(a_shape).astype(np.float32)})


def matmul_nd(opset=21):  # 4-D activation x 2-D weight MatMul, hand-built at a new opset
    W = rng.standard_normal((6, 4)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Relu", ["h"], ["y"])]
    g = helper.make_graph(nodes, "mm4", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, 3, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2, 3, 4])],
                          [numpy_helper.from_array(W, "W")])
    mdl = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    mdl.ir_version = 9
    onnx.save(mdl, os.path.join(OUT, "matmul4d_o21.onnx"))
    save_inputs("matmul4d_o21", {"x": rng.standard_normal((3, 2, 3, 6)).astype(np.float32)})


def no_weights():  # a graph with nothing to quantize (only element-wise ops)
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    g = helper.make_graph(nodes, "relu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])])
    mdl = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    mdl.ir_version = 8
    onnx.save(mdl, os.path.join(OUT, "noweights.onnx"))
    save_inputs("noweights", {"x": rng.standard_normal((3, 4)).astype(np.float32)})


def shared_weights():  # weights reached through Identity, as TorchScript exports of ALBERT (shared layers) write them
    W = rng.standard_normal((8, 8)).astype(np.float32)
    G = rng.standard_normal((8, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    c = rng.standard_normal(8).astype(np.float32)  # one bias for both layers: each node scales it by its own input
    nodes = [helper.make_node("Identity", ["W"], ["W_again"]), helper.make_node("Identity", ["b"], ["b_again"]),
             helper.make_node("Identity", ["c"], ["c_again"]),
             helper.make_node("Gemm", ["x", "W", "c"], ["h1"]), helper.make_node("Relu", ["h1"], ["r1"]),
             helper.make_node("Gemm", ["r1", "W_again", "c_again"], ["h2"]), helper.make_node("Relu", ["h2"], ["r2"]),
             helper.make_node("Gemm", ["r2", "G", "b_again"], ["y"])]
    g = helper.make_graph(nodes, "shared", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
                          [numpy_helper.from_array(W, "W"), numpy_helper.from_array(G, "G"),
                           numpy_helper.from_array(b, "b"), numpy_helper.from_array(c, "c")])
    mdl = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    mdl.ir_version = 8
    onnx.save(mdl, os.path.join(OUT, "shared_weights.onnx"))
    save_inputs("shared_weights", {"x": rng.standard_normal((5, 8)).astype(np.float32)})
    # the same weights as external data beside the model (torch.onnx's dynamo exporter writes them so)
    onnx.save(mdl, os.path.join(OUT, "external_data.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="external_data.onnx.data", size_threshold=0)
    save_inputs("external_data", {"x": np.load(os.path.join(OUT, "shared_weights.x.npy"))})


export("res_cnn", Res(), [(4, 3, 15, 15)])
export("res_cnn_fixed", Res(), [(2, 3, 15, 15)], dynamic=False, opset=17)
export("conv1d", Conv1d(), [(4, 4, 21)])
export("deconv", Deconv(), [(3, 2, 11, 11)])
export("encoder", Enc(), [(3, 7, 16)], opset=14)
export("two_io", TwoIO(), [(5, 6), (5, 4)], names=["a", "b"], outs=["p", "r"])
export("bmm", Bmm(), [(4, 3, 8)])
gemm_variants()
matmul_nd()
no_weights()
shared_weights()
# Gemm -> Gemm with no activation between (the QOperator rewrite's output names meet the next input's)
export("linchain", torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Linear(8, 8), torch.nn.Linear(8, 3)), [(5, 6)])


def zipmap_models():
    """A 3-class LinearClassifier (ai.onnx.ml, softmax) with and without a ZipMap, int64 and string class labels,
    and labelled CSVs: zipmap.csv (labels 0-2), zipmap_str.csv (cat/dog/eel), zipmap_nan.csv (a NaN and an
    infinite feature: the linear model's scores become NaN)."""
    K, C, n = 4, 3, 60
    coef = rng.standard_normal((C, K)).astype(np.float32)
    icpt = rng.standard_normal(C).astype(np.float32)
    X = rng.standard_normal((n, K)).astype(np.float32)
    y = (X @ coef.T + icpt + rng.standard_normal((n, C)).astype(np.float32)).argmax(1)
    names = ["cat", "dog", "eel"]
    for tag, labels in (("int", None), ("str", names)):
        for zm in (True, False):
            lab_attr = {"classlabels_strings": labels} if labels else {"classlabels_ints": list(range(C))}
            nodes = [helper.make_node("LinearClassifier", ["x"], ["label", "prob"], domain="ai.onnx.ml",
                                      coefficients=coef.reshape(-1).tolist(), intercepts=icpt.tolist(),
                                      post_transform="SOFTMAX", **lab_attr)]
            ltype = TensorProto.STRING if labels else TensorProto.INT64
            outs = [helper.make_tensor_value_info("label", ltype, ["N"])]
            if zm:
                zm_attr = {"classlabels_strings": labels} if labels else {"classlabels_int64s": list(range(C))}
                nodes.append(helper.make_node("ZipMap", ["prob"], ["probabilities"], domain="ai.onnx.ml", **zm_attr))
                seq = onnx.TypeProto()  # seq(map(label type, float)); onnx 1.12's helper has no map type
                seq.sequence_type.elem_type.map_type.key_type = ltype
                seq.sequence_type.elem_type.map_type.value_type.tensor_type.elem_type = TensorProto.FLOAT
                outs.append(helper.make_value_info("probabilities", seq))
            else:
                nodes.append(helper.make_node("Identity", ["prob"], ["probabilities"]))
                outs.append(helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", C]))
            g = helper.make_graph(nodes, "lc", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", K])], outs)
            mdl = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("ai.onnx.ml", 1)])
            mdl.ir_version = 8
            onnx.save(mdl, os.path.join(OUT, "lc_%s%s.onnx" % (tag, "_zipmap" if zm else "")))
    for fname, lab, bad in (("zipmap.csv", [str(v) for v in y], False), ("zipmap_str.csv", [names[v] for v in y], False),
                            ("zipmap_nan.csv", [str(v) for v in y], True)):
        with open(os.path.join(OUT, fname), "w") as f:
            f.write("id," + ",".join("f%d" % j for j in range(K)) + ",y\n")
            for i in range(n):
                vals = [repr(float(v)) for v in X[i]]
                if bad and i == 5: vals[1] = "nan"
                if bad and i == 7: vals[2] = "inf"
                f.write("r%d," % i + ",".join(vals) + "," + lab[i] + "\n")

    # a regression Gemm [N, 4] -> [N, 1] and labels with an infinity (reg_inf.csv)
    W = rng.standard_normal((K, 1)).astype(np.float32)
    g = helper.make_graph([helper.make_node("Gemm", ["x", "W"], ["y"])], "reg",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", K])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1])], [numpy_helper.from_array(W, "W")])
    mdl = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    mdl.ir_version = 8
    onnx.save(mdl, os.path.join(OUT, "reg.onnx"))
    with open(os.path.join(OUT, "reg_inf.csv"), "w") as f:
        f.write("id," + ",".join("f%d" % j for j in range(K)) + ",y\n")
        for i in range(n):
            f.write("r%d," % i + ",".join(repr(float(v)) for v in X[i]) + "," + ("inf" if i == 3 else repr(float(i))) + "\n")


zipmap_models()
