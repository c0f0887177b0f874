#!/usr/bin/env python3
"""Makes the small XGBoost seeds of the model-loader fuzzer's corpus
(scripts/test.sh copies tests/fuzz/seeds/* into it): a 2-tree, depth-2
binary model saved as JSON and as UBJSON, so libFuzzer starts inside both
importers.  Needs Debian's python3-xgboost; run from this folder."""
import numpy as np
import xgboost as xgb

rng = np.random.default_rng(0)
X = rng.normal(size=(64, 3)).astype(np.float32)
y = (X[:, 0] > 0).astype(int)
booster = xgb.train({"max_depth": 2, "objective": "binary:logistic"},
                    xgb.DMatrix(X, label=y), num_boost_round=2)
booster.save_model("xgb_tiny.json")
booster.save_model("xgb_tiny.ubj")
