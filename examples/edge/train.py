#!/usr/bin/python3
"""train.py -- trains the predictive-maintenance model of examples/edge/.

    /usr/bin/python3 examples/edge/train.py [--out DIR]

A vibration sensor on a rotating machine is sampled in windows of 64 values.
Healthy windows are the shaft's sine (random phase, amplitude and a little
frequency drift) plus noise; faulty ones add what bearing and imbalance faults
look like -- periodic impacts (spikes), a second harmonic, or a strong noise
floor.  A small MLP (64 -> 32 -> 16 -> 1, sigmoid) learns an anomaly score in
[0, 1].  Everything is seeded, so the outputs are the same on every run.

Writes (into --out, default: this folder):
    anomaly.onnx           the model: input "window" float32[batch, 64], output "score" float32[batch, 1]
    sample_windows.csv     24 windows (label, then 64 values), for the demo and the test
    sample_scores.txt      PyTorch's scores of those windows (the test's oracle), one per line
"""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn

WINDOW = 64


def make_windows(rng, n, faulty):
    t = np.arange(WINDOW, dtype=np.float64)
    freq = 2 * np.pi / 16 * (1 + rng.uniform(-0.05, 0.05, size=(n, 1)))
    phase = rng.uniform(0, 2 * np.pi, size=(n, 1))
    amp = rng.uniform(0.8, 1.2, size=(n, 1))
    x = amp * np.sin(freq * t + phase) + rng.normal(0, 0.05, size=(n, WINDOW))
    if faulty:
        kind = rng.integers(0, 3, size=n)
        for i in range(n):
            if kind[i] == 0:  # bearing: periodic impacts
                start = rng.integers(0, 8)
                x[i, start::8] += rng.uniform(1.0, 2.0)
            elif kind[i] == 1:  # imbalance / misalignment: a second harmonic
                x[i] += rng.uniform(0.5, 0.9) * np.sin(2 * freq[i] * t + phase[i])
            else:  # looseness: a raised noise floor
                x[i] += rng.normal(0, rng.uniform(0.4, 0.7), size=WINDOW)
    return x.astype(np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    a = ap.parse_args()
    rng = np.random.default_rng(22)
    torch.manual_seed(22)
    healthy, faulty = make_windows(rng, 3000, False), make_windows(rng, 3000, True)
    x = torch.from_numpy(np.concatenate([healthy, faulty]))
    y = torch.cat([torch.zeros(3000, 1), torch.ones(3000, 1)])
    model = nn.Sequential(nn.Linear(WINDOW, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 1), nn.Sigmoid())
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    loss_fn = nn.BCELoss()
    for epoch in range(40):
        perm = torch.randperm(len(x))
        for i in range(0, len(x), 128):
            idx = perm[i:i + 128]
            opt.zero_grad()
            loss = loss_fn(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
    model.eval()
    test_h, test_f = make_windows(rng, 500, False), make_windows(rng, 500, True)
    with torch.no_grad():
        acc = ((model(torch.from_numpy(test_h)) < 0.5).float().mean() + (model(torch.from_numpy(test_f)) >= 0.5).float().mean()) / 2
    print("held-out balanced accuracy: %.3f" % acc.item())
    path = os.path.join(a.out, "anomaly.onnx")
    torch.onnx.export(model, torch.zeros(1, WINDOW), path, input_names=["window"], output_names=["score"],
                      dynamic_axes={"window": {0: "batch"}, "score": {0: "batch"}}, opset_version=13)
    sample = np.concatenate([make_windows(rng, 12, False), make_windows(rng, 12, True)])
    labels = [0] * 12 + [1] * 12
    with open(os.path.join(a.out, "sample_windows.csv"), "w") as f:
        for lab, row in zip(labels, sample):
            f.write("%d,%s\n" % (lab, ",".join("%.6g" % v for v in row)))
    # the scores of the windows as written (parsed back from the text, as the demo reads them)
    parsed = np.array([[float(v) for v in line.split(",")[1:]] for line in open(os.path.join(a.out, "sample_windows.csv"))],
                      dtype=np.float32)
    with torch.no_grad():
        scores = model(torch.from_numpy(parsed)).numpy()[:, 0]
    with open(os.path.join(a.out, "sample_scores.txt"), "w") as f:
        f.write("".join("%.9g\n" % s for s in scores))
    print("wrote %s (%d bytes), sample_windows.csv, sample_scores.txt" % (path, os.path.getsize(path)))


if __name__ == "__main__":
    main()
