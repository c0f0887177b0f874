#!/usr/bin/python3
"""gen_data.py -- calibration and held-out inputs for bench/quant/run.sh.

    /usr/bin/python3 bench/quant/gen_data.py OUT_DIR

The bench models (bench/gen_bench_models.py) have random weights, so "held-out
data" is fresh draws from the input distribution the benchmark uses
(standard normal), disjoint from the calibration draws (other seed):
    mlp_calib.csv    512 records, columns id, f0..f63 (calibrated as records
                     through the default mapping, the way a tabular user would)
    mlp_heldout.npy  4096 x 64
    cnn_calib.npy    64 x 3 x 64 x 64       cnn_heldout.npy   512 x 3 x 64 x 64
    bert_calib.npy   16 x 128 x 256         bert_heldout.npy  64 x 128 x 256
"""
import os
import sys

import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
cal, held = np.random.default_rng(101), np.random.default_rng(202)
x = cal.standard_normal((512, 64)).astype(np.float32)
with open(os.path.join(out, "mlp_calib.csv"), "w") as f:
    f.write("id," + ",".join("f%d" % j for j in range(64)) + "\n")
    for i, row in enumerate(x):
        f.write("r%d," % i + ",".join("%.6g" % v for v in row) + "\n")
np.save(os.path.join(out, "mlp_heldout.npy"), held.standard_normal((4096, 64)).astype(np.float32))
np.save(os.path.join(out, "cnn_calib.npy"), cal.standard_normal((64, 3, 64, 64)).astype(np.float32))
np.save(os.path.join(out, "cnn_heldout.npy"), held.standard_normal((512, 3, 64, 64)).astype(np.float32))
np.save(os.path.join(out, "bert_calib.npy"), cal.standard_normal((16, 128, 256)).astype(np.float32))
np.save(os.path.join(out, "bert_heldout.npy"), held.standard_normal((64, 128, 256)).astype(np.float32))
