#!/usr/bin/python3
"""Makes dwconv.onnx: a small MobileNet-style network with depthwise
convolutions (group == channels), for the INT8 depthwise kernel
(src/ops/ref/qdepthwise.c) in tests/quant/test_quantize.sh: quantized by
`infera quantize` and run by Infera and ONNX Runtime on the same file.

  input [batch, 3, 16, 16] (opset 13)
  Conv 3->16 3x3 pad 1, Relu; depthwise 3x3 pad 1, Relu; pointwise 16->32, Relu;
  depthwise 3x3 stride 2 pad 1 (+ BN folded), Relu; pointwise 32->32; GlobalAveragePool; Linear 32->10
  dwconv_input.npy: 8 random images.

Run with Debian's python3-torch and python3-onnx:  /usr/bin/python3 tests/models/gen_dwconv_model.py
"""
import os

import numpy as np
import onnx
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))


class DwNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1, groups=16), nn.ReLU(),
            nn.Conv2d(16, 32, 1), nn.ReLU(),
            nn.Conv2d(32, 32, 3, stride=2, padding=1, groups=32, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 32, 1))
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(self.body(x), 1), 1))


def main():
    torch.manual_seed(5)
    model = DwNet()
    with torch.no_grad():
        bn = model.body[7]
        bn.running_mean.uniform_(-0.2, 0.2)
        bn.running_var.uniform_(0.5, 1.5)
    model.eval()
    x = np.random.default_rng(5).standard_normal((8, 3, 16, 16)).astype(np.float32)
    path = os.path.join(HERE, "dwconv.onnx")
    torch.onnx.export(model, torch.from_numpy(x), path, input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}}, opset_version=13)
    onnx.checker.check_model(onnx.load(path), full_check=True)
    np.save(os.path.join(HERE, "dwconv_input.npy"), x)


if __name__ == "__main__":
    main()
