#!/usr/bin/python3
"""gen_extra_models.py -- exports the "other models" of bench/extra/ to bench/extra/models/.

    /usr/bin/python3 bench/extra/gen_extra_models.py [--out DIR] [--force]

Models the fast paths were not tuned on (the benchmark models of bench/ are
mlp, cnn and bert), so that generalisation stays measured.  float32, dynamic
batch axis "N" on input x and output y, default eval-mode export:

    mobile    MobileNet-style: conv3x3/2(32)-bn-relu6, then six depthwise-separable
              blocks (depthwise 3x3 + bn + relu6, pointwise 1x1 + bn + relu6) 32-64,
              64-128/2, 128-128, 128-256/2, 256-256, 256-512/2, global average
              pool, fc 10; input 3x96x96, opset 13.
    cnn_gray  1x56x56: conv5x5(16)-relu, maxpool 2, conv3x3(32)-bn-relu, avgpool 2,
              conv3x3/2(64)-relu, flatten, fc 10; opset 13.
    enc17     nn.TransformerEncoder, 2 layers, norm_first, d_model 384, 6 heads,
              FFN 1536 with GELU, sequence 64; opset 17 (native LayerNormalization).
    mlp_odd   37 -> 300 (ReLU) -> 129 (Tanh) -> 3; opset 13.

Weights are random (torch.manual_seed(0), models made in the order above's
enc17, mobile, mlp_odd, cnn_gray).  The .onnx files are git-ignored;
bench/extra/run.sh calls this script when they are missing.  The command line
and the export loop are export_models.py's.
"""
import sys

import torch
import torch.nn as nn

import export_models

NAMES = ("enc17", "mobile", "mlp_odd", "cnn_gray")


def dw_block(c_in, c_out, s):
    return nn.Sequential(nn.Conv2d(c_in, c_in, 3, s, 1, groups=c_in, bias=False), nn.BatchNorm2d(c_in), nn.ReLU6(),
                         nn.Conv2d(c_in, c_out, 1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU6())


def build():
    """(name, module, example input, opset) in the order the seed is consumed."""
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(384, 6, 1536, dropout=0.0, activation="gelu",
                                                           batch_first=True, norm_first=True), 2)
    yield "enc17", enc, torch.randn(1, 64, 384), 17
    mobile = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1), nn.BatchNorm2d(32), nn.ReLU6(), dw_block(32, 64, 1),
                           dw_block(64, 128, 2), dw_block(128, 128, 1), dw_block(128, 256, 2), dw_block(256, 256, 1),
                           dw_block(256, 512, 2), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 10))
    yield "mobile", mobile, torch.randn(1, 3, 96, 96), 13
    mlp = nn.Sequential(nn.Linear(37, 300), nn.ReLU(), nn.Linear(300, 129), nn.Tanh(), nn.Linear(129, 3))
    yield "mlp_odd", mlp, torch.randn(1, 37), 13
    cnn = nn.Sequential(nn.Conv2d(1, 16, 5, 1, 2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, 1, 1),
                        nn.BatchNorm2d(32), nn.ReLU(), nn.AvgPool2d(2), nn.Conv2d(32, 64, 3, 2, 1), nn.ReLU(),
                        nn.Flatten(), nn.Linear(64 * 7 * 7, 10))
    yield "cnn_gray", cnn, torch.randn(1, 1, 56, 56), 13


if __name__ == "__main__":
    sys.exit(export_models.main("gen_extra_models", __doc__, build))
