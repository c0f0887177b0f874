#!/usr/bin/python3
"""Models the other example models do not cover, with a fixed input and PyTorch's outputs,
for the model tests (tests/integration/test_models.sh, "unseen" section).

    /usr/bin/python3 tests/models/gen_unseen_models.py      # writes tests/models/unseen/
    node tests/models/ort_reference.js --unseen             # adds ONNX Runtime's outputs

Each model NAME has inputs x0, x1, ... (the first axis of each is its batch, 3 here)
and outputs y0, y1, ...; it writes
    unseen/NAME.onnx              the model (PyTorch export, or built node by node)
    unseen/NAME_x<i>.npy          input i (seeded)
    unseen/NAME_y<j>.torch.npy    PyTorch's output j (exported models only)
and ort_reference.js --unseen writes unseen/NAME_y<j>.ort.npy (ONNX Runtime 1.30.0).
The test runs `infera run` at 1 and 2 threads and compares every output with both
references (rtol 1e-4, atol 1e-5).

Families (torch 1.13, opsets 11-17): bidirectional 2-layer LSTM with initial states,
sequence-first GRU, grouped/strided/dilated ConvTranspose and Conv, a ResNet-style downsampling front (Conv ->
MaxPool, 3x3/2 convs of 32-128 channels) on odd sizes, pools with ceil_mode
and count_include_pad, BatchNorm1d/GroupNorm/InstanceNorm/LayerNorm over two axes
(decomposed at opset 13, LayerNormalization at 17), nn.MultiheadAttention with
key_padding_mask and attn_mask, a pre-norm GELU TransformerEncoderLayer, Embedding with
positions, einsum/topk/cumsum/where/argmax/gather, activations, and Resize with
align_corners at scale factors whose output length is not scale x input (2.5 x 5 -> 12).
Hand-built graphs: a GELU / Pow(x, 2) / LayerNorm chain whose one-element constants
have a higher rank than x (the fusions must keep the broadcast rank), Resize cubic
pytorch_half_pixel to a length-1 axis, Conv(group 2) -> BatchNormalization -> Relu,
Gemm/MatMul/Add/ConvTranspose with LeakyRelu/Clip/Relu, and quantized ops
(QuantizeLinear/DequantizeLinear per tensor and per axis, QLinearConv, QLinearMatMul,
MatMulInteger, ConvInteger, a QDQ MLP).
"""
import os

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "unseen")
BATCH = 3


def spec(shape, dtype="f", batch_axis=0, lo=0, hi=0):
    """Per-sample input shape; the batch is inserted at batch_axis (or fills a None there)."""
    return dict(shape=shape, dtype=dtype, batch_axis=batch_axis, lo=lo, hi=hi)


def make_inputs(specs, seed):
    rng = np.random.default_rng(seed)
    arrs = []
    for s in specs:
        shape = list(s["shape"])
        if s["batch_axis"] < len(shape) and shape[s["batch_axis"]] is None:
            shape[s["batch_axis"]] = BATCH
        else:
            shape.insert(s["batch_axis"], BATCH)
        if s["dtype"] == "f":
            a = rng.standard_normal(shape).astype(np.float32)
        elif s["dtype"] == "i":
            a = rng.integers(s["lo"], s["hi"], shape).astype(np.int64)
        elif s["dtype"] == "u8":
            a = rng.integers(0, 256, shape).astype(np.uint8)
        elif s["dtype"] == "i8":
            a = rng.integers(-128, 128, shape).astype(np.int8)
        else:  # "b": a mask with key 0 always kept
            a = rng.random(shape) > 0.7
            a[:, 0] = False
        arrs.append(a)
    return arrs


class Fn(nn.Module):
    """forward(*xs) = f(mods, *xs)."""

    def __init__(self, f, mods=()):
        super().__init__()
        self.f = f
        self.mods = nn.ModuleList(mods)

    def forward(self, *xs):
        return self.f(self.mods, *xs)


def flat(outs):
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    res = []
    for o in outs:
        res.extend(flat(o) if isinstance(o, (tuple, list)) else [o])
    return res


# --------------------------------------------------------------------------- PyTorch models

def lstm_bi2():
    m = nn.LSTM(4, 6, num_layers=2, bidirectional=True, batch_first=True)
    return Fn(lambda ms, x, h, c: ms[0](x, (h, c)), [m])


def gru_seqfirst():
    return Fn(lambda ms, x: ms[0](x), [nn.GRU(4, 5, bidirectional=True)])


def convs():
    a = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
    b = nn.ConvTranspose2d(6, 3, 4, stride=2, dilation=2)
    c = nn.Conv2d(3, 6, 3, padding=2, dilation=2, groups=3)
    d = nn.Conv2d(6, 6, 3, stride=2, padding=1, groups=6)
    e = nn.Conv1d(4, 4, 3, stride=2, groups=2)
    return Fn(lambda ms, x: (ms[3](ms[2](ms[1](torch.relu(ms[0](x))))), ms[4](x.flatten(2))), [a, b, c, d, e])


def downsample():
    """A ResNet-style front on odd sizes: Conv+Relu -> MaxPool 2 (fused into the conv's store), 3x3/2 convs of
    32 -> 64 and 64 -> 128 channels (the stride-2 Winograd's shapes), a Conv -> MaxPool 3/2 without an activation,
    and a conv whose output a MaxPool and an Add both read (not fused)."""
    stem, c1, c2, c3 = nn.Conv2d(3, 32, 3, padding=1), nn.Conv2d(32, 64, 3, stride=2, padding=1), \
        nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.Conv2d(128, 32, 3, padding=1)

    def f(ms, x):
        h = F.max_pool2d(torch.relu(ms[0](x)), 2)
        h = torch.relu(ms[1](h))
        g = ms[2](h)
        p = F.max_pool2d(ms[3](torch.relu(g)), 3, stride=2)
        return p, F.max_pool2d(g, 2) + g.mean((2, 3), keepdim=True)
    return Fn(f, [stem, c1, c2, c3])


def pools():
    return Fn(lambda ms, x: (
        F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=True),
        F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
        F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
        F.max_pool2d(x, 2, stride=1, padding=1, dilation=2),
        F.avg_pool1d(x.flatten(2), 5, stride=3, padding=2, ceil_mode=True)))


def norms():
    bn1, gn, inn, ln = nn.BatchNorm1d(4), nn.GroupNorm(2, 4), nn.InstanceNorm2d(4, affine=True), nn.LayerNorm([5, 6])
    with torch.no_grad():
        for m in (bn1, gn, inn, ln):
            for p in m.parameters():
                p.uniform_(-1, 1)
        bn1.running_mean.uniform_(-1, 1)
        bn1.running_var.uniform_(0.5, 2)
    return Fn(lambda ms, x: (ms[0](x.flatten(2)), ms[1](x), ms[2](x), ms[3](x)), [bn1, gn, inn, ln])


def mha_masks():
    m = nn.MultiheadAttention(8, 2, batch_first=True)
    mask = torch.triu(torch.full((5, 5), float("-inf")), diagonal=1)
    return Fn(lambda ms, x, kpm: ms[0](x, x, x, key_padding_mask=kpm, attn_mask=mask), [m])


def encoder_prenorm_gelu():
    m = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, activation="gelu", norm_first=True, batch_first=True)
    return Fn(lambda ms, x: ms[0](x), [m])


def embed_pos():
    e, p, lin = nn.Embedding(20, 8, padding_idx=0), nn.Embedding(6, 8), nn.Linear(8, 3)

    def f(ms, ids):
        h = ms[0](ids) + ms[1](torch.arange(ids.shape[1]).unsqueeze(0))
        return ms[2](h), h.mean(1)
    return Fn(f, [e, p, lin])


def tensor_ops():
    idx = torch.tensor([3, 0, 2, 2])

    def f(ms, x, y):
        v, i = torch.topk(x, 3, dim=-1)
        return (torch.einsum("bij,bjk->bik", x, y), torch.einsum("bij->bj", x), v, i,
                torch.topk(x, 2, dim=1, largest=False)[0], torch.cumsum(x, dim=1),
                x.masked_fill(x > 0.5, -1.0), torch.where(x > 0, x, x * 0.1), torch.argmax(x, dim=-1, keepdim=True),
                torch.argmin(x, dim=1), torch.index_select(x, 2, idx), torch.gather(x, 2, i))
    return Fn(f)


def activations():
    pr = nn.PReLU(4)
    with torch.no_grad():
        pr.weight.uniform_(-0.5, 0.5)

    def f(ms, x):
        return (ms[0](x), F.hardswish(x), F.silu(x), F.softplus(x), F.mish(x), F.elu(x, 0.7), F.selu(x),
                F.celu(x, 1.3), F.gelu(x), F.gelu(x, approximate="tanh"), F.hardsigmoid(x), F.softsign(x),
                F.logsigmoid(x), F.hardtanh(x, -0.5, 0.7), F.glu(x, dim=-1), F.pad(x, (2, 1, 3, 0), mode="reflect"),
                F.pad(x, (1, 2, 0, 3), mode="replicate"), F.pixel_shuffle(x, 2), torch.log_softmax(x, dim=1))
    return Fn(f, [pr])


def resize_align():
    return Fn(lambda ms, x: (
        F.interpolate(x, scale_factor=2.5, mode="bilinear", align_corners=True),
        F.interpolate(x, scale_factor=1.5, mode="bicubic", align_corners=True),
        F.interpolate(x, scale_factor=0.7, mode="bilinear", align_corners=True),
        F.interpolate(x, size=(13, 9), mode="bilinear", align_corners=False),
        F.interpolate(x, scale_factor=2, mode="nearest")))


# name: constructor, input specs, opset
TORCH_MODELS = {
    "lstm_bi2": (lstm_bi2, [spec([5, 4]), spec([4, None, 6], batch_axis=1), spec([4, None, 6], batch_axis=1)], 14),
    "gru_seqfirst": (gru_seqfirst, [spec([7, None, 4], batch_axis=1)], 11),
    "convs": (convs, [spec([4, 4, 5])], 13),
    "pools": (pools, [spec([2, 9, 8])], 17),
    "downsample": (downsample, [spec([3, 37, 35])], 13),
    "norms13": (norms, [spec([4, 5, 6])], 13),
    "norms17": (norms, [spec([4, 5, 6])], 17),
    "mha_masks": (mha_masks, [spec([5, 8]), spec([5], dtype="b")], 14),
    "encoder_prenorm_gelu": (encoder_prenorm_gelu, [spec([6, 16])], 14),
    "embed_pos": (embed_pos, [spec([6], dtype="i", lo=0, hi=20)], 13),
    "tensor_ops": (tensor_ops, [spec([6, 8]), spec([8, 5])], 12),
    "activations": (activations, [spec([4, 4, 4])], 14),
    "resize_align": (resize_align, [spec([2, 6, 5])], 13),
}


def export_torch(name, ctor, specs, opset):
    torch.manual_seed(0)
    model = ctor().eval()
    xs = make_inputs(specs, seed=len(name))
    with torch.no_grad():
        outs = flat(model(*[torch.from_numpy(a) for a in xs]))
    in_names = ["x%d" % i for i in range(len(xs))]
    out_names = ["y%d" % i for i in range(len(outs))]
    dyn = {n: {s["batch_axis"]: "batch"} for n, s in zip(in_names, specs)}
    # exported with autograd on: TransformerEncoderLayer's eval fast path has no ONNX form
    torch.onnx.export(model, tuple(torch.from_numpy(a) for a in xs), os.path.join(OUT, name + ".onnx"),
                      input_names=in_names, output_names=out_names, dynamic_axes=dyn, opset_version=opset)
    for i, a in enumerate(xs):
        np.save(os.path.join(OUT, "%s_x%d.npy" % (name, i)), a)
    for i, t in enumerate(outs):
        np.save(os.path.join(OUT, "%s_y%d.torch.npy" % (name, i)), t.numpy())


# --------------------------------------------------------------------------- hand-built graphs

def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, **attrs)


def out_info(names):
    return [onnx.ValueInfoProto(name=n) for n in names]  # types and shapes left to inference


def save_graph(name, nodes, inputs, n_out, inits, opset, specs):
    g = helper.make_graph(nodes, name, inputs, out_info(["y%d" % i for i in range(n_out)]),
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="gen_unseen_models.py")
    m.ir_version = 7
    onnx.save(m, os.path.join(OUT, name + ".onnx"))
    for i, a in enumerate(make_inputs(specs, seed=len(name))):
        np.save(os.path.join(OUT, "%s_x%d.npy" % (name, i)), a)


def fin(name, dims, t=TP.FLOAT):
    return helper.make_tensor_value_info(name, t, ["batch"] + dims)


def build_graphs():
    rng = np.random.default_rng(17)
    r = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    one = lambda v, rank: np.full((1,) * rank, v, np.float32)  # noqa: E731
    # exact GELU, Pow(x, 2) and a decomposed LayerNorm whose one-element constants are
    # rank 3 / 4 against an x of rank 2 / 3: every output gains leading 1s
    save_graph("rank_raising_consts", [
        node("Div", ["x0", "sqrt2"], ["u"]), node("Erf", ["u"], ["e"]), node("Add", ["e", "one"], ["t"]),
        node("Mul", ["x0", "t"], ["m"]), node("Mul", ["m", "half"], ["y0"]),
        node("Pow", ["x0", "two3"], ["y1"]),
        node("ReduceMean", ["x1"], ["mu"], axes=[-1]), node("Sub", ["x1", "mu"], ["d"]), node("Pow", ["d", "two"], ["q"]),
        node("ReduceMean", ["q"], ["var"], axes=[-1]), node("Add", ["var", "eps4"], ["ve"]), node("Sqrt", ["ve"], ["s"]),
        node("Div", ["d", "s"], ["nrm"]), node("Mul", ["nrm", "gamma"], ["gn"]), node("Add", ["gn", "beta"], ["y2"]),
    ], [fin("x0", [4]), fin("x1", [5, 6])], 3,
        {"sqrt2": np.float32(np.sqrt(2)), "one": np.float32(1), "half": one(0.5, 3), "two3": one(2, 3),
         "two": np.float32(2), "eps4": one(1e-5, 4), "gamma": r(6), "beta": r(6)}, 13, [spec([4]), spec([5, 6])])
    # cubic pytorch_half_pixel to a length-1 axis: source coordinate 0 (the operator's text, ORT)
    save_graph("resize_len1", [
        node("Resize", ["x0", "", "", "sizes"], ["y0"], mode="cubic", coordinate_transformation_mode="pytorch_half_pixel"),
        node("Resize", ["x0", "", "", "sizes2"], ["y1"], mode="linear", coordinate_transformation_mode="align_corners"),
    ], [helper.make_tensor_value_info("x0", TP.FLOAT, [BATCH, 2, 6, 5])], 2,
        {"sizes": np.array([BATCH, 2, 1, 7], np.int64), "sizes2": np.array([BATCH, 2, 4, 1], np.int64)}, 13,
        [spec([2, 6, 5])])
    bn = {"s": r(6), "bb": r(6), "mu": r(6), "var": np.abs(r(6)) + 0.5}
    save_graph("fusions", [
        node("Conv", ["x0", "w", "cb"], ["c"], group=2, pads=[1, 1, 1, 1]),
        node("BatchNormalization", ["c", "s", "bb", "mu", "var"], ["bn"], epsilon=1e-3), node("Relu", ["bn"], ["y0"]),
        node("Gemm", ["x1", "gw", "gb"], ["g"], transB=1, alpha=0.7, beta=1.3), node("LeakyRelu", ["g"], ["y1"], alpha=0.3),
        node("MatMul", ["x1", "mw"], ["mm"]), node("Clip", ["mm", "lo", ""], ["y2"]),
        node("Add", ["x1", "x1"], ["a2"]), node("Relu", ["a2"], ["y3"]),
        node("ConvTranspose", ["x0", "wt", "bt"], ["ct"], strides=[2, 2], output_padding=[1, 0], pads=[0, 1, 1, 0]),
        node("Clip", ["ct", "lo", "hi"], ["y4"]),
    ], [fin("x0", [4, 5, 5]), fin("x1", [6])], 5,
        dict(w=r(6, 2, 3, 3), cb=r(6), gw=r(5, 6), gb=r(5), mw=r(6, 4), lo=np.float32(-0.2), hi=np.float32(0.3),
             wt=r(4, 2, 3, 3), bt=r(2), **bn), 13, [spec([4, 5, 5]), spec([6])])
    # |w| < 64: ORT's AVX2 u8 x s8 kernels add products in pairs saturating at int16
    # (255 * 100 * 2 > 32767), which an exact int32 accumulation does not
    i8 = lambda *s: rng.integers(-63, 64, s).astype(np.int8)  # noqa: E731
    u8 = lambda *s: rng.integers(0, 256, s).astype(np.uint8)  # noqa: E731
    save_graph("quantized", [
        node("QuantizeLinear", ["x0", "s", "zp"], ["q"]), node("DequantizeLinear", ["q", "s", "zp"], ["y0"]),
        node("QuantizeLinear", ["x0", "sa", "zpa"], ["y1"], axis=1), node("DequantizeLinear", ["y1", "sa", "zpa"], ["y2"], axis=1),
        node("QLinearConv", ["x1", "xs", "xz", "w", "ws", "wz", "ys", "yz", "bias"], ["y3"], pads=[1, 1, 1, 1], strides=[2, 1]),
        node("QLinearMatMul", ["x2", "xs", "xz", "b", "bs", "bz", "ys", "yz"], ["y4"]),
        node("MatMulInteger", ["x2", "b", "xz", "bz"], ["y5"]),
        node("ConvInteger", ["x1", "wu", "xz"], ["y6"], pads=[0, 1, 2, 1]),
        node("DequantizeLinear", ["w2", "sw2"], ["w2d"], axis=1), node("MatMul", ["y0", "w2d"], ["y7"]),
    ], [fin("x0", [4, 5]), fin("x1", [3, 7, 6], TP.UINT8), fin("x2", [5, 8], TP.UINT8)], 8,
        {"s": np.float32(0.02), "zp": np.uint8(128), "sa": np.array([0.01, 0.02, 0.05, 0.1], np.float32),
         "zpa": np.array([0, -3, 5, 1], np.int8), "xs": np.float32(0.05), "xz": np.uint8(120), "w": i8(4, 3, 3, 3),
         "ws": np.array([0.01, 0.02, 0.005, 0.03], np.float32), "wz": np.zeros(4, np.int8), "ys": np.float32(0.3),
         "yz": np.uint8(100), "bias": rng.integers(-500, 500, 4).astype(np.int32), "b": u8(8, 6), "bs": np.float32(0.03),
         "bz": np.uint8(125), "wu": u8(2, 3, 3, 2), "w2": i8(5, 3), "sw2": np.array([0.01, 0.02, 0.03], np.float32)}, 13,
        [spec([4, 5]), spec([3, 7, 6], dtype="u8"), spec([5, 8], dtype="u8")])


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, (ctor, specs, opset) in TORCH_MODELS.items():
        export_torch(name, ctor, specs, opset)
    build_graphs()
    for f in sorted(os.listdir(OUT)):
        if f.endswith(".onnx"):
            print("%-28s %6d bytes" % (f, os.path.getsize(os.path.join(OUT, f))))


if __name__ == "__main__":
    main()
