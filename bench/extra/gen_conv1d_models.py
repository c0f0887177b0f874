#!/usr/bin/python3
"""gen_conv1d_models.py -- exports two Conv1d networks to bench/extra/models/ (conv1d kernels' benchmark).

    /usr/bin/python3 bench/extra/gen_conv1d_models.py [--out DIR] [--force]

float32, dynamic batch axis "N" on input x and output y, opset 13, default
eval-mode export (BatchNormalization folded into the Conv weights):

    conv1d_text  text/feature CNN on [N, 40, 256] (40 features x 256 frames):
                 conv5(64)-bn-relu, conv3(64)-bn-relu, conv3/2(128)-bn-relu,
                 conv3 dilation 2 (128)-bn-relu, conv3(128)-bn-relu, global
                 average pool, fc 10.  ~30 M multiply-adds per sample.
    conv1d_m5    M5-style raw-audio net on [N, 1, 8000]: conv80/16(32)-bn-relu,
                 maxpool 4, three conv3-bn-relu-maxpool 4 (32, 64, 64), global
                 average pool, fc 35.

Weights are random (torch.manual_seed(0)); the files are git-ignored.  Run
them with bench/extra/run.sh --models "conv1d_text conv1d_m5" after adding
them there, or `infera bench` and bench/ort_bench.js directly.  The command
line and the export loop are export_models.py's.
"""
import sys

import torch
import torch.nn as nn

import export_models


def cbr(c_in, c_out, k, s=1, p=0, d=1):
    return [nn.Conv1d(c_in, c_out, k, s, p, d, bias=False), nn.BatchNorm1d(c_out), nn.ReLU()]


def build():
    """(name, module, example input, opset) in the order the seed is consumed."""
    text = nn.Sequential(*cbr(40, 64, 5, p=2), *cbr(64, 64, 3, p=1), *cbr(64, 128, 3, s=2, p=1),
                         *cbr(128, 128, 3, p=2, d=2), *cbr(128, 128, 3, p=1), nn.AdaptiveAvgPool1d(1), nn.Flatten(),
                         nn.Linear(128, 10))
    yield "conv1d_text", text, torch.randn(1, 40, 256), 13
    m5 = nn.Sequential(*cbr(1, 32, 80, s=16), nn.MaxPool1d(4), *cbr(32, 32, 3), nn.MaxPool1d(4), *cbr(32, 64, 3),
                       nn.MaxPool1d(4), *cbr(64, 64, 3), nn.MaxPool1d(4), nn.AdaptiveAvgPool1d(1), nn.Flatten(),
                       nn.Linear(64, 35))
    yield "conv1d_m5", m5, torch.randn(1, 1, 8000), 13


def randomize_bn(m, gen):
    """Non-trivial BatchNorm statistics, so the folded weights are not the raw ones."""
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm1d):
            n = mod.num_features
            mod.running_mean.copy_(torch.randn(n, generator=gen) * 0.1)
            mod.running_var.copy_(torch.rand(n, generator=gen) + 0.5)
            mod.weight.data.copy_(torch.rand(n, generator=gen) + 0.5)
            mod.bias.data.copy_(torch.randn(n, generator=gen) * 0.1)


def main():
    gen = torch.Generator().manual_seed(1)
    return export_models.main("gen_conv1d_models", __doc__, build, prepare=lambda m: randomize_bn(m, gen),
                              no_grad=True)


if __name__ == "__main__":
    sys.exit(main())
