#!/usr/bin/python3
"""gen_bench_models.py -- exports the three benchmark models of bench/ to bench/models/.

    /usr/bin/python3 bench/gen_bench_models.py [--out DIR] [--force]

Models (float32, dynamic batch axis "batch" on the input and output, opset 13,
default eval-mode export: BatchNormalization is folded into the Conv weights,
LayerNormalization and GELU stay decomposed the way PyTorch emits them):

    mlp   tabular MLP: 64 features -> 256 -> 256 -> 128 -> 8 logits (ReLU), + softmax.
          ~0.12 M parameters; per-call overhead dominates at batch 1.
    cnn   ResNet-style CNN on 3x64x64: stem conv3x3(32)-bn-relu, maxpool 2 -> 32x32,
          basic blocks 32 (32x32), 64 /2 (16x16), 128 /2 (8x8), global average pool,
          fc 10.  ~0.3 M parameters, ~52 M multiply-adds per image.
    bert  BERT-style encoder: 4 post-norm layers, d_model 256, 4 heads, FFN 1024
          with GELU (erf), sequence 128; input is the embedded sequence
          [batch, 128, 256] (token embedding lookup left out).  ~3.2 M parameters,
          ~0.44 G multiply-adds per sequence.

Weights are random (fixed seeds): the benchmark measures speed, not accuracy.
The .onnx files are git-ignored; bench/run.sh calls this script when they are
missing.
"""
import argparse
import math
import os
import sys

import torch
import torch.nn as nn

OPSET = 13


class TabularMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(64, 256), nn.ReLU(),
            nn.Linear(256, 256), nn.ReLU(),
            nn.Linear(256, 128), nn.ReLU(),
            nn.Linear(128, 8))

    def forward(self, x):
        logits = self.net(x)
        return logits, torch.softmax(logits, dim=1)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.shortcut = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        h = self.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        return self.relu(h + self.shortcut(x))


class ResNetCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(32), nn.ReLU())
        self.pool = nn.MaxPool2d(2)
        self.blocks = nn.Sequential(BasicBlock(32, 32, 1), BasicBlock(32, 64, 2),
                                    BasicBlock(64, 128, 2))
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(128, 10)

    def forward(self, x):
        h = self.blocks(self.pool(self.stem(x)))
        return self.fc(torch.flatten(self.gap(h), 1))


class LayerNorm(nn.Module):
    """Written out (mean, variance, rsqrt) so the export is the decomposed
    pattern that BERT exports carry at opsets below 17."""

    def __init__(self, d, eps=1e-12):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))
        self.eps = eps

    def forward(self, x):
        u = x.mean(-1, keepdim=True)
        s = (x - u).pow(2).mean(-1, keepdim=True)
        return self.weight * ((x - u) / torch.sqrt(s + self.eps)) + self.bias


class EncoderLayer(nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.heads, self.dh = heads, d // heads
        self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.o = nn.Linear(d, d)
        self.ln1, self.ln2 = LayerNorm(d), LayerNorm(d)
        self.ff1, self.ff2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.dh).permute(0, 2, 1, 3)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        att = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.dh)
        ctx = torch.matmul(torch.softmax(att, dim=-1), v)
        ctx = ctx.permute(0, 2, 1, 3).reshape(b, s, d)
        h = self.ln1(x + self.o(ctx))
        f = self.ff2(nn.functional.gelu(self.ff1(h)))
        return self.ln2(h + f)


class BertEncoder(nn.Module):
    def __init__(self, d=256, heads=4, ff=1024, layers=4):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d, heads, ff) for _ in range(layers))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


# name, constructor, per-sample input shape, output names, seed
SPECS = [
    ("mlp", TabularMLP, (64,), ["logits", "probabilities"], 2001),
    ("cnn", ResNetCNN, (3, 64, 64), ["logits"], 2002),
    ("bert", BertEncoder, (128, 256), ["hidden"], 2003),
]


def randomize(model, gen):
    """Non-trivial weights everywhere (BatchNorm statistics included), so no
    exporter dedup or constant folding turns layers into identities."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                fan_in = p[0].numel()
                p.copy_(torch.randn(p.shape, generator=gen) * (2.0 / fan_in) ** 0.5)
            elif name.endswith("weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(0.05 * torch.randn(p.shape, generator=gen))
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(torch.randn(m.num_features, generator=gen) * 0.2)
                m.running_var.copy_(torch.rand(m.num_features, generator=gen) * 0.8 + 0.6)


def export(name, ctor, in_shape, out_names, seed, out_dir):
    torch.manual_seed(seed)
    model = ctor()
    randomize(model, torch.Generator().manual_seed(seed))
    model.eval()
    x = torch.randn((2,) + in_shape, generator=torch.Generator().manual_seed(seed))
    path = os.path.join(out_dir, name + ".onnx")
    axes = {"input": {0: "batch"}}
    axes.update({o: {0: "batch"} for o in out_names})
    with torch.no_grad():
        torch.onnx.export(model, x, path, input_names=["input"], output_names=out_names,
                          dynamic_axes=axes, opset_version=OPSET)
    n_params = sum(p.numel() for p in model.parameters())
    print("%-5s %s  %.2f M parameters" % (name, path, n_params / 1e6))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(here, "models"))
    ap.add_argument("--force", action="store_true", help="re-export models that exist")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for spec in SPECS:
        if args.force or not os.path.exists(os.path.join(args.out, spec[0] + ".onnx")):
            export(*spec, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
