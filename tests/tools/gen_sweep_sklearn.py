#!/usr/bin/env python3
"""gen_sweep_sklearn.py -- scikit-learn / LightGBM / XGBoost models through skl2onnx / onnxmltools, with
labelled CSV data, for a sweep of `infera evaluate`, `distill` and `quantize` on models they have not met.

  gen_sweep_sklearn.py OUT_DIR

Writes OUT_DIR/<name>.onnx, OUT_DIR/<name>.csv (id, f0..fK-1, y) and OUT_DIR/<name>.npy (features, float32).
Needs a venv with the pinned skl2onnx==1.17.0, onnxmltools==1.12.0, lightgbm==4.5.0 (and Debian's sklearn,
xgboost, numpy through --system-site-packages).
"""
import os
import sys

import numpy as np
from sklearn.datasets import make_classification, make_regression
from sklearn.ensemble import GradientBoostingRegressor, RandomForestClassifier
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.neural_network import MLPClassifier, MLPRegressor
from skl2onnx import convert_sklearn
from skl2onnx.common.data_types import FloatTensorType

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
K = 6


def write(name, X, y, onx):
    with open(os.path.join(OUT, name + ".onnx"), "wb") as f:
        f.write(onx.SerializeToString())
    np.save(os.path.join(OUT, name + ".npy"), X.astype(np.float32))
    with open(os.path.join(OUT, name + ".csv"), "w") as f:
        f.write("id," + ",".join("f%d" % j for j in range(K)) + ",y\n")
        for i in range(len(X)):
            lab = y[i] if isinstance(y[i], str) else repr(y[i].item())
            f.write("r%d," % i + ",".join(repr(float(v)) for v in X[i].astype(np.float32)) + "," + lab + "\n")


def skl(name, model, X, y, **opts):
    model.fit(X, y)
    onx = convert_sklearn(model, initial_types=[("input", FloatTensorType([None, K]))], target_opset=15,
                          options={id(model): opts} if opts else None)
    write(name, X, y, onx)


Xb, yb = make_classification(300, K, n_informative=4, random_state=1)
Xm, ym = make_classification(300, K, n_informative=4, n_classes=3, random_state=2)
Xr, yr = make_regression(300, K, noise=3.0, random_state=3)
Xb, Xm, Xr = (a.astype(np.float32) for a in (Xb, Xm, Xr))
names = np.array(["cat", "dog", "eel"])
skl("logreg_zipmap", LogisticRegression(max_iter=500), Xb, yb)
skl("logreg_nozipmap", LogisticRegression(max_iter=500), Xb, yb, zipmap=False)
skl("rf_strings", RandomForestClassifier(20, max_depth=5, random_state=0), Xm, names[ym])
skl("rf_multi", RandomForestClassifier(20, max_depth=5, random_state=0), Xm, ym, zipmap=False)
skl("mlp_multi", MLPClassifier((16,), max_iter=300, random_state=0), Xm, ym, zipmap=False)
skl("linreg", LinearRegression(), Xr, yr.astype(np.float32))
skl("gbr", GradientBoostingRegressor(n_estimators=30, random_state=0), Xr, yr.astype(np.float32))
skl("mlp_reg", MLPRegressor((16,), max_iter=500, random_state=0), Xr, yr.astype(np.float32))

import lightgbm
import xgboost
from onnxmltools import convert_lightgbm, convert_xgboost
from onnxmltools.convert.common.data_types import FloatTensorType as FT

m = lightgbm.LGBMClassifier(n_estimators=20, num_leaves=8, verbose=-1).fit(Xb, yb)
write("lgbm_bin", Xb, yb, convert_lightgbm(m, initial_types=[("input", FT([None, K]))], target_opset=15, zipmap=False))
m = xgboost.XGBRegressor(n_estimators=20, max_depth=3).fit(Xr, yr)
write("xgb_reg", Xr, yr.astype(np.float32), convert_xgboost(m, initial_types=[("input", FT([None, K]))], target_opset=15))
