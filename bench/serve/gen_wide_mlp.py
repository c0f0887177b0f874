#!/usr/bin/env python3
"""Generate the compute-heavy MLP of the serving batching benchmark.

    python3 bench/serve/gen_wide_mlp.py OUT.onnx

wide_mlp: 512 features -> 1024 -> 1024 -> 512 -> 1 score (ReLU, sigmoid),
2.1 M parameters, ~4.2 MFLOP per row -- the size of a typical served
ranking / risk model, where one row costs far more than its HTTP round trip,
unlike bench/models/mlp.onnx (0.12 M parameters).  Same export conventions as
bench/gen_bench_models.py (dynamic batch axis, opset 13, He-scaled random
weights from a fixed seed).  bench/serve/run.sh generates it into its
temporary directory (8 MB; not committed).  Needs Debian's python3-torch.
"""
import sys

import torch
import torch.nn as nn

SEED = 2024


class WideMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(512, 1024), nn.ReLU(),
            nn.Linear(1024, 1024), nn.ReLU(),
            nn.Linear(1024, 512), nn.ReLU(),
            nn.Linear(512, 1))

    def forward(self, x):
        return torch.sigmoid(self.net(x))


def main():
    if len(sys.argv) != 2:
        print("usage: gen_wide_mlp.py OUT.onnx", file=sys.stderr)
        return 2
    gen = torch.Generator().manual_seed(SEED)
    model = WideMLP()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=gen) * (2.0 / p.shape[1]) ** 0.5)
            else:
                p.copy_(0.05 * torch.randn(p.shape, generator=gen))
    model.eval()
    x = torch.randn((2, 512), generator=gen)
    torch.onnx.export(model, x, sys.argv[1], input_names=["input"], output_names=["score"],
                      dynamic_axes={"input": {0: "batch"}, "score": {0: "batch"}}, opset_version=13)
    return 0


if __name__ == "__main__":
    sys.exit(main())
