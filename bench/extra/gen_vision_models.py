#!/usr/bin/env python3
"""gen_vision_models.py -- exports torchvision's standard ImageNet models to bench/extra/models/.

    PY bench/extra/gen_vision_models.py [--out DIR] [--force]

PY: a Python with torch and torchvision (bench/extra/run.sh uses $TORCH_PYTHON,
default python3).  Made with torch 2.15.0 + torchvision 0.29.2 (the newest
torchvision on PyPI; it asks torch >= 2.14.0) and pillow 11.3.0.

The models a user tries first, at 1x3x224x224, float32, 1000 classes, dynamic
batch axis "N" on input x and output y, opset 17, TorchScript exporter
(dynamo=False) in eval mode, which folds each BatchNormalization into its Conv:

    resnet18     torchvision.models.resnet18: 7x7/2 stem, 3x3/2 maxpool, basic blocks
                 (3x3 convs, 64-512 channels, 56x56 -> 7x7), global average pool, fc.
    resnet50     torchvision.models.resnet50: the same stem, bottleneck blocks
                 (1x1 -> 3x3 -> 1x1, up to 2048 channels), global average pool, fc.
    mobilenetv2  torchvision.models.mobilenet_v2: inverted residuals (1x1 expand,
                 depthwise 3x3 + ReLU6, 1x1 project, Add), 1280-channel head.
    effnetb0     torchvision.models.efficientnet_b0: MBConv with SiLU, squeeze-
                 and-excitation (GlobalAveragePool, 1x1 convs, Sigmoid, Mul),
                 depthwise 3x3 and 5x5.

Weights are random (no download: weights=None; torch.manual_seed(0), models
made in the order above).  prepare() gives every BatchNorm random running
statistics and affine parameters (from the same seed), as a trained model has,
so that the folded weights are not torchvision's identity-BN initialisation.
The .onnx files are git-ignored; bench/extra/run.sh calls this script when
they are missing.  The command line and the export loop are export_models.py's.
"""
import sys

import torch
import torchvision

import export_models

NAMES = ("resnet18", "resnet50", "mobilenetv2", "effnetb0")


def build():
    """(name, module, example input, opset) in the order the seed is consumed."""
    x = torch.randn(1, 3, 224, 224)
    m = torchvision.models
    yield "resnet18", m.resnet18(weights=None), x, 17
    yield "resnet50", m.resnet50(weights=None), x, 17
    yield "mobilenetv2", m.mobilenet_v2(weights=None), x, 17
    yield "effnetb0", m.efficientnet_b0(weights=None), x, 17


def prepare(module):
    """Trained-looking BatchNorm statistics: mean ~ N(0, 0.1), var in [0.5, 1.5), gamma in [0.5, 1.5),
    beta ~ N(0, 0.1)."""
    for bn in module.modules():
        if isinstance(bn, torch.nn.BatchNorm2d):
            c = bn.num_features
            with torch.no_grad():
                bn.running_mean.copy_(0.1 * torch.randn(c))
                bn.running_var.copy_(0.5 + torch.rand(c))
                bn.weight.copy_(0.5 + torch.rand(c))
                bn.bias.copy_(0.1 * torch.randn(c))


if __name__ == "__main__":
    sys.exit(export_models.main("gen_vision_models", __doc__, build, prepare=prepare, no_grad=True, dynamo=False))
