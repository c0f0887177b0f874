#!/usr/bin/python3
"""gen_eval_models.py -- labelled models for measuring what `--precision bf16` changes in quality.

    /usr/bin/python3 bench/precision/gen_eval_models.py [--out DIR]     (default bench/precision/models)

Trains two PyTorch MLPs (seed 0, Adam) on scikit-learn's bundled data sets (no download) and
exports each with a held-out test CSV (`infera evaluate` reads the CSV's feature columns in
order; the label column is `label`):

    digits_mlp.onnx + digits_test.csv   8x8 digit images (64 features, 10 classes), standardised
        inside the model; 64 -> 512 -> 512 -> 10, ReLU, softmax output "probabilities";
        train 1297 rows, test 500 rows.
    cancer_mlp.onnx + cancer_test.csv   breast cancer (30 features, binary), standardised
        inside the model; 30 -> 256 -> 256 -> 2, ReLU, softmax "probabilities";
        train 369 rows, test 200 rows.

Both are float32 ONNX (opset 13) whose MatMul/Gemm weights the bf16 session rounds.
"""
import argparse
import csv
import os

import numpy as np
import torch
import torch.nn as nn
from sklearn.datasets import load_breast_cancer, load_digits


class MLP(nn.Module):
    def __init__(self, mean, std, sizes):
        super().__init__()
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32))
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32))
        layers = []
        for a, b in zip(sizes[:-1], sizes[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        self.net = nn.Sequential(*layers[:-1])

    def forward(self, x):
        return torch.softmax(self.net((x - self.mean) / self.std), dim=1)


def train(x, y, sizes, epochs):
    torch.manual_seed(0)
    mean, std = x.mean(0), x.std(0) + 1e-3
    m = MLP(mean, std, sizes)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    xt, yt = torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.int64)
    for _ in range(epochs):
        perm = torch.randperm(len(xt))
        for i in range(0, len(xt), 64):
            idx = perm[i:i + 64]
            opt.zero_grad()
            loss = nn.functional.nll_loss(torch.log(m(xt[idx]) + 1e-12), yt[idx])
            loss.backward()
            opt.step()
    return m.eval()


def export(m, n_features, path):
    torch.onnx.export(m, torch.zeros(1, n_features), path, input_names=["input"], output_names=["probabilities"],
                      dynamic_axes={"input": {0: "batch"}, "probabilities": {0: "batch"}}, opset_version=13)


def write_csv(path, x, y):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["f%d" % i for i in range(x.shape[1])] + ["label"])
        for row, label in zip(x, y):
            w.writerow(["%.9g" % v for v in row] + [int(label)])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "models"))
    out = ap.parse_args().out
    os.makedirs(out, exist_ok=True)
    for name, data, sizes, n_test, epochs in (("digits", load_digits(), [64, 512, 512, 10], 500, 40),
                                              ("cancer", load_breast_cancer(), [30, 256, 256, 2], 200, 60)):
        x, y = data.data.astype(np.float32), data.target
        rng = np.random.default_rng(0)
        perm = rng.permutation(len(x))
        test, tr = perm[:n_test], perm[n_test:]
        m = train(x[tr], y[tr], sizes, epochs)
        export(m, x.shape[1], os.path.join(out, name + "_mlp.onnx"))
        write_csv(os.path.join(out, name + "_test.csv"), x[test], y[test])
        with torch.no_grad():
            acc = (m(torch.tensor(x[test])).argmax(1).numpy() == y[test]).mean()
        print("%s_mlp.onnx: test accuracy %.4f (PyTorch)" % (name, acc))


if __name__ == "__main__":
    main()
