#!/usr/bin/python3
"""Generate Infera's example models, their fixed inputs and PyTorch reference outputs.

Run with Debian's python (python3-torch 1.13, python3-onnx 1.12, python3-numpy):

    /usr/bin/python3 tests/models/gen_models.py            # writes into tests/models/
    /usr/bin/python3 tests/models/gen_models.py --out DIR  # writes elsewhere

Everything is seeded, so a rerun reproduces the same weights, inputs and reference
outputs (bit-for-bit on the same machine and library versions).

Per model NAME it writes:
    NAME.onnx                    the exported model (dynamic batch axis "batch")
    NAME_input.npy / .pb         the fixed input, batch 4 (.pb = ONNX TensorProto named "input")
    NAME_<output>.torch.npy      PyTorch's output for that input, one file per graph output
"""
import argparse
import collections
import json
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
BATCH = 4


# --------------------------------------------------------------------------- models

class TabularMLP(nn.Module):
    """32 features -> 64 -> 64 -> 2 logits, plus softmax probabilities."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 64)
        self.fc3 = nn.Linear(64, 2)
        self.act = nn.ReLU()

    def forward(self, x):
        h = self.act(self.fc1(x))
        h = self.act(self.fc2(h))
        logits = self.fc3(h)
        return logits, torch.softmax(logits, dim=1)


class BasicBlock(nn.Module):
    """ResNet basic block: conv-bn-relu-conv-bn (+ projection shortcut when shape changes), relu."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))
        else:
            self.shortcut = nn.Identity()

    def forward(self, x):
        h = self.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        return self.relu(h + self.shortcut(x))


class SmallResNet(nn.Module):
    """3x32x32 -> stem conv-bn-relu (16) -> maxpool -> block(16) -> block(32, stride 2) -> GAP -> fc 10."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.pool = nn.MaxPool2d(2)                 # 32x32 -> 16x16
        self.block1 = BasicBlock(16, 16, 1)         # 16x16
        self.block2 = BasicBlock(16, 32, 2)         # 8x8
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        h = self.pool(self.stem(x))
        h = self.block2(self.block1(h))
        h = torch.flatten(self.gap(h), 1)
        return self.fc(h)


class TinyTransformer(nn.Module):
    """2-layer post-norm transformer encoder (d_model 64, 4 heads, ff 128), per-token linear head to 10."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128,
                                           dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        return self.head(self.encoder(x))


def randomize_transformer(model, gen):
    """nn.TransformerEncoder deep-copies one layer, so every layer starts with identical
    weights, zero biases and unit LayerNorm scales (the exporter then dedups them into
    Identity nodes).  Re-draw every parameter so each layer is distinct and non-trivial."""
    for name, p in model.named_parameters():
        if p.dim() >= 2:
            fan_in, fan_out = p.shape[1], p.shape[0]
            std = (2.0 / (fan_in + fan_out)) ** 0.5
            p.copy_(torch.randn(p.shape, generator=gen) * std)
        elif "norm" in name and name.endswith("weight"):
            p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
        else:
            p.copy_(0.05 * torch.randn(p.shape, generator=gen))


def randomize_batchnorm(model, gen):
    """Give BatchNorm layers non-trivial running stats and affine params (defaults are identity-ish)."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(torch.randn(c, generator=gen) * 0.2)
            m.running_var.copy_(torch.rand(c, generator=gen) * 0.8 + 0.6)
            m.weight.data.copy_(torch.rand(c, generator=gen) * 0.8 + 0.6)
            m.bias.data.copy_(torch.randn(c, generator=gen) * 0.1)


# --------------------------------------------------------------------------- specs

# name, constructor, per-sample input shape, output names, opset, seed
SPECS = [
    ("mlp", TabularMLP, (32,), ["logits", "probabilities"], 13, 1001),
    ("cnn", SmallResNet, (3, 32, 32), ["logits"], 13, 1002),
    ("transformer", TinyTransformer, (16, 64), ["logits"], 17, 1003),
]


def ops_of(model_proto):
    counts = collections.Counter(n.op_type for n in model_proto.graph.node)
    return dict(sorted(counts.items()))


def dims_of(value_info):
    out = []
    for d in value_info.type.tensor_type.shape.dim:
        out.append(d.dim_param if d.dim_param else d.dim_value)
    return out


def build(name, ctor, in_shape, out_names, opset, seed, out_dir):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = ctor()
    with torch.no_grad():
        randomize_batchnorm(model, gen)
        if isinstance(model, TinyTransformer):
            randomize_transformer(model, gen)
    model.eval()

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((BATCH,) + in_shape).astype(np.float32)

    with torch.no_grad():
        ref = model(torch.from_numpy(x))
    if isinstance(ref, torch.Tensor):
        ref = (ref,)
    assert len(ref) == len(out_names)

    onnx_path = os.path.join(out_dir, name + ".onnx")
    dynamic_axes = {"input": {0: "batch"}}
    for o in out_names:
        dynamic_axes[o] = {0: "batch"}
    # Default eval-mode export (training=EVAL, constant folding on): PyTorch folds
    # BatchNormalization into the preceding Conv, and drops Dropout.
    torch.onnx.export(model, torch.from_numpy(x), onnx_path,
                      input_names=["input"], output_names=out_names,
                      dynamic_axes=dynamic_axes, opset_version=opset)

    m = onnx.load(onnx_path)
    onnx.checker.check_model(m, full_check=True)

    np.save(os.path.join(out_dir, name + "_input.npy"), x)
    with open(os.path.join(out_dir, name + "_input.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, name="input").SerializeToString())
    for o, t in zip(out_names, ref):
        np.save(os.path.join(out_dir, "%s_%s.torch.npy" % (name, o)), t.numpy())

    info = {
        "file": name + ".onnx",
        "opset": [(i.domain or "ai.onnx", i.version) for i in m.opset_import],
        "inputs": [(i.name, dims_of(i)) for i in m.graph.input],
        "outputs": [(o.name, dims_of(o)) for o in m.graph.output],
        "ref_shapes": {o: list(t.shape) for o, t in zip(out_names, ref)},
        "params": int(sum(int(np.prod(t.dims)) for t in m.graph.initializer)),
        "bytes": os.path.getsize(onnx_path),
        "ops": ops_of(m),
    }
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=HERE, help="output directory (default: this script's folder)")
    ap.add_argument("--only", nargs="*", help="model names to build (default: all)")
    ap.add_argument("--list-ops", action="store_true",
                    help="only print inputs, outputs and op counts of the existing .onnx files")
    args = ap.parse_args()
    if args.list_ops:
        for spec in SPECS:
            path = os.path.join(args.out, spec[0] + ".onnx")
            m = onnx.load(path)
            print("%s: opset %s" % (os.path.basename(path),
                                    ",".join("%s:%d" % (i.domain or "ai.onnx", i.version) for i in m.opset_import)))
            print("  inputs : %s" % [(i.name, dims_of(i)) for i in m.graph.input])
            print("  outputs: %s" % [(o.name, dims_of(o)) for o in m.graph.output])
            print("  ops    : %s" % ", ".join("%s x%d" % kv for kv in ops_of(m).items()))
        return 0
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(1)  # deterministic reductions

    print("torch %s, onnx %s, numpy %s" % (torch.__version__, onnx.__version__, np.__version__))
    for spec in SPECS:
        if args.only and spec[0] not in args.only:
            continue
        info = build(*spec, out_dir=args.out)
        print("\n== %s (%d bytes, %d params, opset %s)" % (info["file"], info["bytes"], info["params"], info["opset"]))
        print("   inputs : %s" % info["inputs"])
        print("   outputs: %s   (reference shapes %s)" % (info["outputs"], info["ref_shapes"]))
        print("   ops    : %s" % json.dumps(info["ops"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
