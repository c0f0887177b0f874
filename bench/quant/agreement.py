#!/usr/bin/python3
"""agreement.py -- quality of an INT8 model against its FP32 original on held-out data.

    /usr/bin/python3 bench/quant/agreement.py FP32.npy INT8.npy

Both are the first output of the models (logits [..., classes]).  Prints one
JSON object: top-1 agreement (argmax over the last axis equal), the cosine
similarity of each row (mean, min), and the largest
and mean absolute difference relative to the FP32 output's range.
"""
import json
import sys

import numpy as np

a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
a2, b2 = a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])
rng = float(a2.max() - a2.min()) or 1.0
cos = (a2 * b2).sum(1) / np.maximum(np.linalg.norm(a2, axis=1) * np.linalg.norm(b2, axis=1), 1e-30)
print(json.dumps({"rows": int(a2.shape[0]), "top1_agreement": float((a2.argmax(1) == b2.argmax(1)).mean()),
                  "cosine_mean": float(cos.mean()), "cosine_min": float(cos.min()),
                  "max_abs_diff_rel_range": float(np.abs(a2 - b2).max() / rng),
                  "mean_abs_diff_rel_range": float(np.abs(a2 - b2).mean() / rng)}))
