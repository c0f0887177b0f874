#!/usr/bin/python3
"""Builds the ai.onnx.ml test models of tests/ml/data (run from anywhere; needs
Debian's python3-onnx, python3-numpy, python3-sklearn, python3-xgboost).

Each case writes data/<case>.onnx (or .json for XGBoost models),
data/<case>.in.<input>.npy, and data/<case>.want.<output>.npy (or .pb for
string tensors, .seq.pb for sequences) holding the expected output computed
here with numpy / scikit-learn / XGBoost.  data/manifest.txt lists
"case model-file input-names... : output-names... : tolerance".
ort_run.js then adds data/<case>.ort.<output>.npy from ONNX Runtime, and
ort_extra.py (PyPI onnxruntime) the ORT outputs node cannot return (string
tensors, sequences of maps) and tree_reg_average_none.  test_ml.sh fails an
output that has neither a .want nor an .ort reference.

ONNX-ML graphs are built by hand from the fitted models' internals
(skl2onnx/onnxmltools are not in Debian).  Deterministic: fixed seeds.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
sys.path.insert(0, HERE)
from ml_convert import xgb_to_onnx, sk_trees_to_onnx, svm_to_onnx  # noqa: E402

MANIFEST = []
rng = np.random.default_rng(1234)


def save_value(path_base, arr):
    arr = np.ascontiguousarray(arr)
    if arr.dtype.kind in "OUS":
        t = numpy_helper.from_array(arr.astype(object))
        with open(path_base + ".pb", "wb") as f:
            f.write(t.SerializeToString())
    else:
        np.save(path_base + ".npy", arr)


def save_seq_of_maps(path_base, keys, rows):
    maps = []
    for r in rows:
        m = onnx.MapProto()
        if isinstance(keys[0], str):
            m.key_type = TensorProto.STRING
            m.string_keys.extend([k.encode() for k in keys])
        else:
            m.key_type = TensorProto.INT64
            m.keys.extend([int(k) for k in keys])
        m.values.elem_type = 1
        m.values.tensor_values.append(numpy_helper.from_array(np.asarray(r, np.float32)))
        maps.append(m)
    s = onnx.SequenceProto()
    s.elem_type = 4
    s.map_values.extend(maps)
    with open(path_base + ".seq.pb", "wb") as f:
        f.write(s.SerializeToString())


def case(name, model, inputs, wants, tol=1e-5, ext="onnx"):
    """model: ModelProto or a path already written; inputs/wants: dicts."""
    mfile = f"{name}.{ext}"
    if isinstance(model, onnx.ModelProto):
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(DATA, mfile))
    for k, v in inputs.items():
        save_value(os.path.join(DATA, f"{name}.in.{k}"), v)
    outs = []
    for k, v in wants.items():
        if isinstance(v, tuple) and v[0] == "seqmap":
            save_seq_of_maps(os.path.join(DATA, f"{name}.want.{k}"), v[1], v[2])
        elif v is not None:
            save_value(os.path.join(DATA, f"{name}.want.{k}"), v)
        outs.append(k)
    MANIFEST.append(f"{name} {mfile} {' '.join(inputs)} : {' '.join(outs)} : {tol}")


def ml_model(nodes, inputs, outputs, opset_ml=3, extra=()):
    g = helper.make_graph(nodes, "g", inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", opset_ml)],
                          producer_name="infera-tests")
    m.ir_version = 8
    return m


def vi(name, dt, shape):
    return helper.make_tensor_value_info(name, dt, shape)


F, I64, S, D = TensorProto.FLOAT, TensorProto.INT64, TensorProto.STRING, TensorProto.DOUBLE

# ------------------------------------------------------------------ hand-written trees
# Tree 0 uses every branch mode; NaN routing via missing_value_tracks_true.
MODES = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"]


def hand_forest():
    """3 trees over 4 features; returns node attribute lists and leaf list."""
    nodes = []  # (tree, id, feature, mode, value, true, false, missing_true)
    leaves = []  # (tree, id)
    # tree 0: depth 3 chain of modes
    nodes += [(0, 0, 0, "BRANCH_LEQ", 0.5, 1, 2, 1), (0, 1, 1, "BRANCH_LT", 0.0, 3, 4, 0),
              (0, 2, 2, "BRANCH_GTE", 1.0, 5, 6, 1), (0, 3, 0, "LEAF", 0, 0, 0, 0), (0, 4, 3, "BRANCH_EQ", 2.0, 7, 8, 0),
              (0, 5, 0, "LEAF", 0, 0, 0, 0), (0, 6, 1, "BRANCH_NEQ", 1.0, 9, 10, 0), (0, 7, 0, "LEAF", 0, 0, 0, 0),
              (0, 8, 0, "LEAF", 0, 0, 0, 0), (0, 9, 0, "LEAF", 0, 0, 0, 0), (0, 10, 0, "LEAF", 0, 0, 0, 0)]
    # tree 1 (listed out of id order): BRANCH_GT
    nodes += [(1, 0, 3, "BRANCH_GT", -0.25, 2, 1, 0), (1, 2, 0, "LEAF", 0, 0, 0, 0), (1, 1, 2, "BRANCH_LEQ", 0.1, 3, 4, 1),
              (1, 3, 0, "LEAF", 0, 0, 0, 0), (1, 4, 0, "LEAF", 0, 0, 0, 0)]
    # tree 7 (non-contiguous id): a single leaf
    nodes += [(7, 0, 0, "LEAF", 0, 0, 0, 0)]
    for n in nodes:
        if n[3] == "LEAF":
            leaves.append((n[0], n[1]))
    return nodes, leaves


def hand_inputs(n=300):
    x = rng.normal(size=(n, 4)).astype(np.float32)
    x[rng.random(size=x.shape) < 0.15] = np.nan
    x[::7, 3] = 2.0          # hits BRANCH_EQ
    x[::5, 1] = 1.0          # BRANCH_NEQ false side
    x[::11, 0] = 0.5         # ties at thresholds
    return x


def node_attrs(nodes, values_as_tensor=False):
    a = dict(nodes_treeids=[n[0] for n in nodes], nodes_nodeids=[n[1] for n in nodes],
             nodes_featureids=[n[2] for n in nodes], nodes_modes=[n[3] for n in nodes],
             nodes_truenodeids=[n[5] for n in nodes], nodes_falsenodeids=[n[6] for n in nodes],
             nodes_missing_value_tracks_true=[n[7] for n in nodes])
    if values_as_tensor:
        a["nodes_values_as_tensor"] = numpy_helper.from_array(np.array([n[4] for n in nodes], np.float64))
    else:
        a["nodes_values"] = [float(n[4]) for n in nodes]
    return a


def hand_cases():
    nodes, leaves = hand_forest()
    x = hand_inputs()
    # regressor, 2 targets, each aggregate and a few post transforms
    w_t, w_n, w_i, w_w = [], [], [], []
    for k, (t, i) in enumerate(leaves):
        for target in (0, 1):
            if (k + target) % 3 == 2:
                continue  # some leaves vote for one target only
            w_t.append(t); w_n.append(i); w_i.append(target); w_w.append(float(np.round(rng.normal(), 3)))
    for agg in ["SUM", "AVERAGE", "MIN", "MAX"]:
        for post in (["NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO"] if agg == "SUM" else ["NONE"]):
            attrs = node_attrs(nodes, values_as_tensor=(agg == "AVERAGE"))
            attrs.update(target_treeids=w_t, target_nodeids=w_n, target_ids=w_i, target_weights=w_w, n_targets=2,
                         aggregate_function=agg, post_transform=post)
            if agg != "MIN":
                attrs["base_values"] = [0.25, -0.5]
            node = helper.make_node("TreeEnsembleRegressor", ["X"], ["Y"], domain="ai.onnx.ml", **attrs)
            m = ml_model([node], [vi("X", F, [None, 4])], [vi("Y", F, [None, 2])])
            case(f"tree_reg_{agg.lower()}_{post.lower()}", m, {"X": x}, {"Y": None})
    # classifiers: 3 classes (int and string labels), binary margin, binary probabilities
    c_t, c_n, c_i, c_w = [], [], [], []
    for k, (t, i) in enumerate(leaves):
        for cls in range(3):
            if (k + cls) % 2:
                c_t.append(t); c_n.append(i); c_i.append(cls); c_w.append(float(np.round(rng.normal(), 3)))
    for post in ["NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"]:
        attrs = node_attrs(nodes)
        attrs.update(class_treeids=c_t, class_nodeids=c_n, class_ids=c_i, class_weights=c_w, post_transform=post,
                     classlabels_int64s=[10, 20, 30])
        if post in ("SOFTMAX", "LOGISTIC"):
            attrs["base_values"] = [0.1, 0.2, -0.3]
        node = helper.make_node("TreeEnsembleClassifier", ["X"], ["label", "probabilities"], domain="ai.onnx.ml", **attrs)
        m = ml_model([node], [vi("X", F, [None, 4])], [vi("label", I64, [None]), vi("probabilities", F, [None, 3])])
        xin = np.clip(x, -1, 1) * 0.4 + 0.5 if post == "PROBIT" else x
        case(f"tree_cls3_{post.lower()}", m, {"X": xin}, {"label": None, "probabilities": None})
    attrs = node_attrs(nodes)
    attrs.update(class_treeids=c_t, class_nodeids=c_n, class_ids=c_i, class_weights=c_w, post_transform="SOFTMAX",
                 classlabels_strings=["cat", "dog", "emu"])
    node = helper.make_node("TreeEnsembleClassifier", ["X"], ["label", "probabilities"], domain="ai.onnx.ml", **attrs)
    m = ml_model([node], [vi("X", F, [None, 4])], [vi("label", S, [None]), vi("probabilities", F, [None, 3])])
    case("tree_cls3_strings", m, {"X": x}, {"label": None, "probabilities": None})
    m = ml_model([node], [vi("X", D, [None, 4])], [vi("label", S, [None]), vi("probabilities", F, [None, 3])])
    case("tree_cls3_double", m, {"X": x.astype(np.float64)}, {"label": None, "probabilities": None})
    # binary, margins in class 0 only (the XGBoost form), and probabilities (all >= 0)
    for kind in ["margin", "proba"]:
        ws = [float(np.round(rng.normal(), 3)) if kind == "margin" else float(np.round(rng.random() / 3, 3)) for _ in leaves]
        attrs = node_attrs(nodes)
        attrs.update(class_treeids=[t for t, _ in leaves], class_nodeids=[i for _, i in leaves], class_ids=[0] * len(leaves),
                     class_weights=ws, classlabels_int64s=[0, 1],
                     post_transform="LOGISTIC" if kind == "margin" else "NONE")
        if kind == "margin":
            attrs["base_values"] = [0.3]
        node = helper.make_node("TreeEnsembleClassifier", ["X"], ["label", "probabilities"], domain="ai.onnx.ml", **attrs)
        m = ml_model([node], [vi("X", F, [None, 4])], [vi("label", I64, [None]), vi("probabilities", F, [None, 2])])
        case(f"tree_bin_{kind}", m, {"X": x}, {"label": None, "probabilities": None})
    # ZipMap after a classifier (int labels) and alone (string labels)
    attrs = node_attrs(nodes)
    attrs.update(class_treeids=c_t, class_nodeids=c_n, class_ids=c_i, class_weights=c_w, post_transform="SOFTMAX",
                 classlabels_int64s=[10, 20, 30])
    n1 = helper.make_node("TreeEnsembleClassifier", ["X"], ["label", "probs"], domain="ai.onnx.ml", **attrs)
    n2 = helper.make_node("ZipMap", ["probs"], ["probabilities"], domain="ai.onnx.ml", classlabels_int64s=[10, 20, 30])
    seqmap = onnx.TypeProto()
    seqmap.sequence_type.elem_type.map_type.key_type = I64
    seqmap.sequence_type.elem_type.map_type.value_type.tensor_type.elem_type = F
    m = ml_model([n1, n2], [vi("X", F, [None, 4])],
                 [vi("label", I64, [None]), helper.make_value_info("probabilities", seqmap)])
    case("tree_zipmap", m, {"X": x[:20]}, {"label": None, "probabilities": None})
    p = rng.random(size=(5, 3)).astype(np.float32)
    n = helper.make_node("ZipMap", ["X"], ["Z"], domain="ai.onnx.ml", classlabels_strings=["a", "b", "c"])
    seqmap2 = onnx.TypeProto()
    seqmap2.sequence_type.elem_type.map_type.key_type = S
    seqmap2.sequence_type.elem_type.map_type.value_type.tensor_type.elem_type = F
    m = ml_model([n], [vi("X", F, [None, 3])], [helper.make_value_info("Z", seqmap2)], opset_ml=1)
    case("zipmap_strings", m, {"X": p}, {"Z": ("seqmap", ["a", "b", "c"], p)})


# ------------------------------------------------------------------ scikit-learn trees
def sklearn_cases():
    from sklearn.datasets import make_classification, make_regression
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestRegressor
    from sklearn.tree import DecisionTreeRegressor
    x, y = make_regression(n_samples=600, n_features=6, noise=0.3, random_state=0, n_targets=2)
    x = x.astype(np.float32)
    dt = DecisionTreeRegressor(max_depth=6, random_state=0).fit(x, y)
    case("sk_dtree_reg2", sk_trees_to_onnx([dt], 6, n_targets=2, agg="SUM"), {"X": x},
         {"Y": dt.predict(x).astype(np.float32)}, tol=1e-4)
    rf = RandomForestRegressor(n_estimators=15, max_depth=5, random_state=0).fit(x, y[:, 0])
    case("sk_forest_avg", sk_trees_to_onnx(rf.estimators_, 6, n_targets=1, agg="AVERAGE"), {"X": x},
         {"Y": rf.predict(x).astype(np.float32)[:, None]}, tol=1e-4)
    xc, yc = make_classification(n_samples=600, n_features=8, n_informative=5, n_classes=3, random_state=0)
    xc = xc.astype(np.float32)
    gb = GradientBoostingClassifier(n_estimators=20, max_depth=3, random_state=0).fit(xc, yc)
    case("sk_gbc3", sk_trees_to_onnx(gb, 8, classifier=True), {"X": xc},
         {"label": gb.predict(xc).astype(np.int64), "probabilities": gb.predict_proba(xc).astype(np.float32)}, tol=1e-4)


# ------------------------------------------------------------------ XGBoost
def xgb_cases():
    import xgboost as xgb
    n, f = 4000, 10
    x = rng.normal(size=(n, f)).astype(np.float32)
    x[:, 3] = np.round(x[:, 3] * 2)      # ties with split thresholds
    lin = x[:, 0] * 1.5 - x[:, 1] + np.sin(3 * x[:, 2]) + 0.5 * x[:, 3] * x[:, 4]
    xm = x.copy()
    xm[rng.random(size=x.shape) < 0.1] = np.nan
    targets = {
        "binary": ("binary:logistic", (lin + rng.normal(size=n) * 0.5 > 0).astype(int), {}),
        "multi": ("multi:softprob", np.digitize(lin + rng.normal(size=n) * 0.3, [-1.0, 0.0, 1.0]), {"num_class": 4}),
        "reg": ("reg:squarederror", lin + rng.normal(size=n) * 0.1, {}),
        "binary_base": ("binary:logistic", (lin > 0.8).astype(int), {"base_score": 0.2}),
    }
    for name, (obj, y, extra) in targets.items():
        params = dict(objective=obj, max_depth=5, eta=0.3, seed=0, nthread=1, **extra)
        bst = xgb.train(params, xgb.DMatrix(xm, label=y, missing=np.nan), num_boost_round=40)
        path = os.path.join(DATA, f"xgb_{name}.json")
        bst.save_model(path)
        pred = bst.predict(xgb.DMatrix(xm, missing=np.nan))
        if obj == "binary:logistic":
            wants = {"label": (pred > 0.5).astype(np.int64), "probabilities": np.stack([1 - pred, pred], 1).astype(np.float32)}
        elif obj.startswith("multi"):
            wants = {"label": pred.argmax(1).astype(np.int64), "probabilities": pred.astype(np.float32)}
        else:
            wants = {"variable": pred.astype(np.float32)[:, None]}
        case(f"xgb_{name}", None, {"input": xm}, wants, tol=1e-6, ext="json")
        if name == "binary":  # 13 rows: the fast tree path's lone-row tail (trees interleaved) and a short batch
            bst.save_model(os.path.join(DATA, "xgb_binary_13rows.json"))
            case("xgb_binary_13rows", None, {"input": xm[:13]}, {k: v[:13] for k, v in wants.items()}, tol=1e-6,
                 ext="json")
        # the same booster as ONNX-ML
        case(f"xgb_{name}_onnx", xgb_to_onnx(path), {"input": xm}, wants, tol=1e-6)


# ------------------------------------------------------------------ linear models
def linear_cases():
    from sklearn.linear_model import LinearRegression, LogisticRegression
    x = rng.normal(size=(200, 5)).astype(np.float32)
    y3 = np.digitize(x[:, 0] + x[:, 1], [-0.5, 0.5])
    lr = LogisticRegression(max_iter=500).fit(x, y3)
    node = helper.make_node("LinearClassifier", ["X"], ["label", "probabilities"], domain="ai.onnx.ml",
                            coefficients=lr.coef_.astype(np.float32).ravel().tolist(),
                            intercepts=lr.intercept_.astype(np.float32).tolist(), classlabels_ints=[0, 1, 2],
                            post_transform="SOFTMAX", multi_class=1)
    m = ml_model([node], [vi("X", F, [None, 5])], [vi("label", I64, [None]), vi("probabilities", F, [None, 3])], opset_ml=1)
    case("linear_cls3_softmax", m, {"X": x},
         {"label": lr.predict(x).astype(np.int64), "probabilities": lr.predict_proba(x).astype(np.float32)}, tol=1e-4)
    lb = LogisticRegression(max_iter=500).fit(x, (x[:, 2] > 0).astype(int))
    for post in ["NONE", "LOGISTIC"]:
        node = helper.make_node("LinearClassifier", ["X"], ["label", "probabilities"], domain="ai.onnx.ml",
                                coefficients=lb.coef_.astype(np.float32).ravel().tolist(),
                                intercepts=lb.intercept_.astype(np.float32).tolist(), classlabels_strings=["no", "yes"],
                                post_transform=post)
        m = ml_model([node], [vi("X", F, [None, 5])], [vi("label", S, [None]), vi("probabilities", F, [None, 2])], opset_ml=1)
        s = (x @ lb.coef_.T + lb.intercept_)[:, 0].astype(np.float32)
        label = np.where(s > 0, "yes", "no")
        if post == "LOGISTIC":
            s = 1 / (1 + np.exp(-s))
        case(f"linear_bin_{post.lower()}", m, {"X": x},
             {"label": label, "probabilities": np.stack([1 - s, s], 1).astype(np.float32)}, tol=1e-4)
    y2 = np.stack([x @ np.arange(5) + 1, x[:, 0] - 2], 1)
    reg = LinearRegression().fit(x, y2)
    node = helper.make_node("LinearRegressor", ["X"], ["Y"], domain="ai.onnx.ml",
                            coefficients=reg.coef_.astype(np.float32).ravel().tolist(),
                            intercepts=reg.intercept_.astype(np.float32).tolist(), targets=2)
    m = ml_model([node], [vi("X", F, [None, 5])], [vi("Y", F, [None, 2])], opset_ml=1)
    case("linear_reg2", m, {"X": x}, {"Y": reg.predict(x).astype(np.float32)}, tol=1e-4)
    node = helper.make_node("LinearRegressor", ["X"], ["Y"], domain="ai.onnx.ml", coefficients=[0.5, -1, 2, 0, 1],
                            intercepts=[0.25])
    m = ml_model([node], [vi("X", I64, [None, 5])], [vi("Y", F, [None, 1])], opset_ml=1)
    xi = rng.integers(-5, 5, size=(30, 5)).astype(np.int64)
    case("linear_reg_int64", m, {"X": xi}, {"Y": (xi @ np.array([0.5, -1, 2, 0, 1]) + 0.25).astype(np.float32)[:, None]})


# ------------------------------------------------------------------ preprocessing
def unary(op, x, xdt, ydt, yshape, want, opset_ml=1, name=None, **attrs):
    node = helper.make_node(op, ["X"], ["Y"], domain="ai.onnx.ml", **attrs)
    m = ml_model([node], [vi("X", xdt, list(np.shape(x)))], [vi("Y", ydt, list(np.shape(want)))], opset_ml=opset_ml)
    case(name or op.lower(), m, {"X": x}, {"Y": want})


def preprocess_cases():
    x = rng.normal(size=(20, 4)).astype(np.float32)
    x[3] = 0
    for norm in ["MAX", "L1", "L2"]:
        if norm == "MAX":
            d = x.max(1, keepdims=True)
        elif norm == "L1":
            d = np.abs(x).sum(1, keepdims=True)
        else:
            d = np.sqrt((x * x).sum(1, keepdims=True))
        want = np.where(d != 0, x / np.where(d == 0, 1, d), x).astype(np.float32)
        unary("Normalizer", x, F, F, None, want, name=f"normalizer_{norm.lower()}", norm=norm)
    off, sc = [0.5, -1.0, 0.0, 2.0], [2.0, 0.5, 1.0, -1.0]
    unary("Scaler", x, F, F, None, ((x - np.array(off)) * np.array(sc)).astype(np.float32), offset=off, scale=sc)
    xd = x.astype(np.float64)
    unary("Scaler", xd, D, F, None, ((xd - 0.5) * 3).astype(np.float32), name="scaler_double_scalar", offset=[0.5], scale=[3.0])
    unary("Binarizer", x, F, F, None, (x > 0.3).astype(np.float32), threshold=0.3)
    xn = x.copy()
    xn[rng.random(size=x.shape) < 0.3] = np.nan
    unary("Imputer", xn, F, F, None, np.where(np.isnan(xn), np.array([1, 2, 3, 4], np.float32), xn),
          imputed_value_floats=[1.0, 2.0, 3.0, 4.0], replaced_value_float=float("nan"))
    xi = rng.integers(0, 4, size=(6, 3)).astype(np.int64)
    unary("Imputer", xi, I64, I64, None, np.where(xi == 2, -7, xi), name="imputer_int64", imputed_value_int64s=[-7],
          replaced_value_int64=2)
    # ArrayFeatureExtractor (float and string)
    idx = np.array([3, 0, 3], np.int64)
    for nm, xa, dt in [("afe_float", x, F), ("afe_string", np.array([["a", "b", "c", "d"], ["e", "f", "g", "h"]], object), S)]:
        node = helper.make_node("ArrayFeatureExtractor", ["X", "I"], ["Y"], domain="ai.onnx.ml")
        m = ml_model([node], [vi("X", dt, list(xa.shape)), vi("I", I64, [3])], [vi("Y", dt, [len(xa), 3])], opset_ml=1)
        case(nm, m, {"X": xa, "I": idx}, {"Y": xa[:, idx]})
    # FeatureVectorizer: truncate and pad
    a, b = rng.normal(size=(5, 3)).astype(np.float32), rng.integers(0, 9, size=(5, 2)).astype(np.int64)
    node = helper.make_node("FeatureVectorizer", ["A", "B"], ["Y"], domain="ai.onnx.ml", inputdimensions=[2, 4])
    m = ml_model([node], [vi("A", F, [None, 3]), vi("B", I64, [None, 2])], [vi("Y", F, [None, 6])], opset_ml=1)
    want = np.zeros((5, 6), np.float32)
    want[:, :2] = a[:, :2]
    want[:, 2:4] = b
    case("feature_vectorizer", m, {"A": a, "B": b}, {"Y": want})
    # OneHotEncoder
    xo = np.array([[1, 5, 9], [5, 5, 2]], np.int64)
    cats = [1, 2, 5]
    unary("OneHotEncoder", xo, I64, F, None, (xo[..., None] == np.array(cats)).astype(np.float32), cats_int64s=cats)
    xs = np.array(["x", "z", "q"], object)
    unary("OneHotEncoder", xs, S, F, None, (xs[..., None] == np.array(["z", "x"], object)).astype(np.float32),
          name="onehot_strings", cats_strings=["z", "x"])
    # LabelEncoder forms
    xs = np.array(["b", "a", "zz", "c"], object)
    unary("LabelEncoder", xs, S, I64, None, np.array([1, 0, -1, 2], np.int64), name="labelenc_v1_s2i",
          classes_strings=["a", "b", "c"], default_int64=-1)
    unary("LabelEncoder", np.array([2, 0, 7], np.int64), I64, S, None, np.array(["c", "a", "none"], object),
          name="labelenc_v1_i2s", classes_strings=["a", "b", "c"], default_string="none")
    unary("LabelEncoder", xs, S, F, None, np.array([2.5, 1.5, -1, -1], np.float32), opset_ml=2, name="labelenc_v2_s2f",
          keys_strings=["a", "b"], values_floats=[1.5, 2.5], default_float=-1.0)
    unary("LabelEncoder", np.array([3, 4, 9], np.int64), I64, S, None, np.array(["three", "four", "?"], object), opset_ml=2,
          name="labelenc_v2_i2s", keys_int64s=[4, 3], values_strings=["four", "three"], default_string="?")
    unary("LabelEncoder", np.array([0.5, 1.0, 7.0], np.float32), F, I64, None, np.array([5, 10, 0], np.int64), opset_ml=2,
          name="labelenc_v2_f2i", keys_floats=[1.0, 0.5], values_int64s=[10, 5], default_int64=0)
    # CategoryMapper
    unary("CategoryMapper", xs, S, I64, None, np.array([20, 10, -5, -5], np.int64), name="catmap_s2i",
          cats_strings=["a", "b"], cats_int64s=[10, 20], default_int64=-5)
    unary("CategoryMapper", np.array([20, 11], np.int64), I64, S, None, np.array(["b", "?"], object), name="catmap_i2s",
          cats_strings=["a", "b"], cats_int64s=[10, 20], default_string="?")

# ------------------------------------------------------------------ SVMs
def svm_cases():
    """scikit-learn SVC / SVR / NuSVR / OneClassSVM converted by hand (svm_to_onnx in ml_convert.py)."""
    from sklearn.datasets import make_classification, make_regression
    from sklearn.svm import SVC, SVR, NuSVR, OneClassSVM
    r = np.random.default_rng(77)
    xc, yc = make_classification(n_samples=300, n_features=6, n_informative=4, n_classes=3, n_clusters_per_class=1,
                                 random_state=3)
    xc = xc.astype(np.float32)
    xt = (xc + r.normal(scale=0.3, size=xc.shape)).astype(np.float32)  # scored rows
    # multi-class, RBF, Platt probabilities: labels = predict, probabilities = predict_proba
    m = SVC(kernel="rbf", C=2.0, gamma="scale", probability=True, random_state=0).fit(xc, yc)
    case("svm_cls3_rbf_proba", svm_to_onnx(m, 6, labels=[10, 20, 30]), {"X": xt},
         {"label": np.array([10, 20, 30])[m.predict(xt)].astype(np.int64),
          "probabilities": m.predict_proba(xt).astype(np.float32)}, tol=1e-4)
    # multi-class, polynomial kernel, no probabilities: Z = one-vs-one decision values
    m = SVC(kernel="poly", degree=3, coef0=0.5, gamma=0.2, C=1.0, decision_function_shape="ovo").fit(xc, yc)
    case("svm_cls3_poly", svm_to_onnx(m, 6, labels=[0, 1, 2]), {"X": xt},
         {"label": m.predict(xt).astype(np.int64), "probabilities": m.decision_function(xt).astype(np.float32)}, tol=1e-4)
    # binary, linear kernel, string labels: Z = [-s, s] with s libsvm's raw decision value for the pair
    # (class 0 vs class 1, > 0 votes class 0), which is -decision_function in scikit-learn (as ORT)
    yb = (yc == 1).astype(int)
    m = SVC(kernel="linear", C=0.5).fit(xc, yb)
    d = m.decision_function(xt)
    case("svm_bin_linear_strings", svm_to_onnx(m, 6, labels=["no", "yes"]), {"X": xt},
         {"label": np.array(["no", "yes"], object)[m.predict(xt)],
          "probabilities": np.stack([d, -d], 1).astype(np.float32)}, tol=1e-4)
    # binary, sigmoid kernel with probabilities (label by votes, as ORT and libsvm)
    m = SVC(kernel="sigmoid", gamma=0.05, coef0=-0.2, C=1.0, probability=True, random_state=0).fit(xc, yb)
    case("svm_bin_sigmoid_proba", svm_to_onnx(m, 6, labels=[0, 1]), {"X": xt},
         {"label": m.predict(xt).astype(np.int64), "probabilities": None}, tol=1e-4)
    # regressors: SVR (RBF), NuSVR (poly), one-class (RBF, +1/-1), float64 input
    xr, yr = make_regression(n_samples=250, n_features=5, noise=0.5, random_state=4)
    yr = yr / np.std(yr)
    xr = xr.astype(np.float32)
    m = SVR(kernel="rbf", C=3.0, epsilon=0.05, gamma="scale").fit(xr, yr)
    case("svm_svr_rbf", svm_to_onnx(m, 5), {"X": xr}, {"Y": m.predict(xr).astype(np.float32)[:, None]}, tol=1e-4)
    m = NuSVR(kernel="poly", degree=2, gamma=0.1, coef0=1.0, nu=0.4, C=2.0).fit(xr, yr)
    case("svm_nusvr_poly", svm_to_onnx(m, 5), {"X": xr}, {"Y": m.predict(xr).astype(np.float32)[:, None]}, tol=1e-4)
    m = OneClassSVM(kernel="rbf", gamma=0.1, nu=0.2).fit(xr)
    xo = np.concatenate([xr[:100], r.normal(scale=3.0, size=(50, 5))]).astype(np.float32)
    case("svm_oneclass", svm_to_onnx(m, 5, one_class=True), {"X": xo},
         {"Y": m.predict(xo).astype(np.float32)[:, None]}, tol=1e-5)
    case("svm_oneclass_score", svm_to_onnx(m, 5), {"X": xo},
         {"Y": m.decision_function(xo).astype(np.float32)[:, None]}, tol=1e-4)
    # liblinear mode (no support vectors): 3 classes, scores X.coef + rho[0], SOFTMAX
    coef = r.normal(size=(3, 4)).round(3)
    xl = r.normal(size=(40, 4)).astype(np.float32)
    node = helper.make_node("SVMClassifier", ["X"], ["label", "probabilities"], domain="ai.onnx.ml",
                            coefficients=coef.ravel().tolist(), rho=[0.25], classlabels_ints=[5, 6, 7], kernel_params=[0.0, 0.0, 1.0],
                            post_transform="SOFTMAX")
    m = ml_model([node], [vi("X", F, [None, 4])], [vi("label", I64, [None]), vi("probabilities", F, [None, 3])], opset_ml=1)
    s = xl.astype(np.float64) @ coef.T + 0.25
    e = np.exp(s - s.max(1, keepdims=True))
    case("svm_linear_mode", m, {"X": xl}, {"label": np.array([5, 6, 7])[s.argmax(1)].astype(np.int64),
                                           "probabilities": (e / e.sum(1, keepdims=True)).astype(np.float32)})


def bad_cases():
    """Malformed ensembles: data/bad_<what>.onnx + .expect (text the load error must contain)."""
    base = [(0, 0, 0, "BRANCH_LEQ", 0.5, 1, 2, 0), (0, 1, 0, "LEAF", 0, 0, 0, 0), (0, 2, 1, "BRANCH_LT", 0.1, 3, 4, 0),
            (0, 3, 0, "LEAF", 0, 0, 0, 0), (0, 4, 0, "LEAF", 0, 0, 0, 0)]
    leaves = [1, 3, 4]

    def make(name, expect, nodes=base, class_ids=(0, 1, 2), mutate=None):
        attrs = node_attrs(nodes)
        attrs.update(class_treeids=[0] * 3, class_nodeids=leaves, class_ids=list(class_ids), class_weights=[0.1, 0.2, 0.3],
                     classlabels_int64s=[0, 1, 2])
        if mutate:
            mutate(attrs)
        node = helper.make_node("TreeEnsembleClassifier", ["X"], ["label", "probabilities"], domain="ai.onnx.ml", **attrs)
        m = ml_model([node], [vi("X", F, [None, 2])], [vi("label", I64, [None]), vi("probabilities", F, [None, 3])])
        onnx.save(m, os.path.join(DATA, f"bad_{name}.onnx"))
        with open(os.path.join(DATA, f"bad_{name}.expect"), "w") as f:
            f.write(expect)

    nodes = list(base)
    nodes[2] = (0, 2, 1, "BRANCH_LT", 0.1, 3, 9, 0)
    make("node_id_range", "nodes_falsenodeids", nodes)
    nodes = list(base)
    nodes[2] = (0, 2, 1, "BRANCH_LT", 0.1, 3, 0, 0)
    make("cycle", "reached twice", nodes)
    make("class_id", "class_ids", class_ids=(0, 1, 5))
    make("lengths", "nodes_values", mutate=lambda a: a.update(nodes_values=a["nodes_values"][:-1]))
    make("mode", "nodes_modes", mutate=lambda a: a.update(nodes_modes=["BRANCH_XX"] + a["nodes_modes"][1:]))
    make("weight_on_branch", "is not a LEAF", mutate=lambda a: a.update(class_nodeids=[1, 2, 4]))
    make("duplicate_node", "twice", mutate=lambda a: a.update(nodes_nodeids=[0, 1, 2, 3, 3]))


# ------------------------------------------------------------------ opset-5 TreeEnsemble
def tree5_eval(x, a):
    """numpy reference of ai.onnx.ml TreeEnsemble (opset 5), from the operator's spec text."""
    modes, splits = a["nodes_modes"], a["nodes_splits"]
    sets, k = {}, 0
    mem = list(a.get("membership_values", []))
    for i, m in enumerate(modes):
        if m == 6:
            j = k
            while j < len(mem) and not np.isnan(mem[j]):
                j += 1
            sets[i] = mem[k:j]
            k = j + 1
    nt, agg, post = a["n_targets"], a["aggregate_function"], a["post_transform"]
    out = np.zeros((x.shape[0], nt), np.float64)
    for r in range(x.shape[0]):
        votes = [[] for _ in range(nt)]
        for root in a["tree_roots"]:
            i = root
            while True:
                v = x[r, a["nodes_featureids"][i]]
                t, m = splits[i], modes[i]
                go = [v <= t, v < t, v >= t, v > t, v == t, v != t, v in sets.get(i, [])][m]
                if np.isnan(v) and a["nodes_missing_value_tracks_true"][i]:
                    go = True
                leaf = a["nodes_trueleafs"][i] if go else a["nodes_falseleafs"][i]
                i = a["nodes_truenodeids"][i] if go else a["nodes_falsenodeids"][i]
                if leaf:
                    votes[a["leaf_targetids"][i]].append(a["leaf_weights"][i])
                    break
        for c in range(nt):
            w = votes[c]
            if not w:
                continue
            average = lambda q: np.sum(q) / len(a["tree_roots"])  # noqa: E731 (over all trees, as ORT)
            out[r, c] = [average, np.sum, np.min, np.max][agg](w)
    if post == 2:
        out = 1 / (1 + np.exp(-out))
    elif post == 1:
        e = np.exp(out - out.max(axis=1, keepdims=True))
        out = e / e.sum(axis=1, keepdims=True)
    return out


def tree5_cases():
    """TreeEnsemble (ai.onnx.ml opset 5): every mode incl. BRANCH_MEMBER, NaN routing, leaf/node children, the four
    aggregates, float and double; expected outputs from tree5_eval and ONNX Runtime (ort_run.js skips the
    2-target SOFTMAX/LOGISTIC cases: ORT 1.30 swaps post_transform 1 and 2 against the spec)."""
    r5 = np.random.default_rng(55)
    # tree 0: LEQ(f0) -> [LT(f1) -> leaf0 | MEMBER(f2 in {1,2,5}) -> leaf1 | GTE(f3) -> leaf2 | leaf3]
    #         | [GT(f0) -> EQ(f3) -> leaf4 | leaf5 ; NEQ(f1) -> leaf6 | leaf7]
    # tree 1: MEMBER(f2 in {0, 3}) -> leaf8 | LT(f1) -> leaf9 | leaf10 (root listed last)
    feat = [0, 1, 2, 3, 0, 3, 1, 2, 1]
    modes = [0, 1, 6, 2, 3, 4, 5, 6, 1]
    splits = [0.25, 0.0, 0.0, 0.5, 0.75, 2.0, 1.0, 0.0, -0.5]
    tru = [1, 0, 1, 2, 5, 4, 6, 8, 9]
    fal = [4, 2, 3, 3, 6, 5, 7, 8, 10]
    tleaf = [0, 1, 1, 1, 0, 1, 1, 1, 1]
    fleaf = [0, 0, 0, 1, 0, 1, 1, 0, 1]
    miss = [1, 0, 1, 0, 0, 1, 0, 0, 1]
    members = [1.0, 2.0, 5.0, np.nan, 0.0, 3.0]
    roots = [0, 7]
    fal[7] = 8  # MEMBER false -> node 8
    x = r5.normal(size=(400, 4)).astype(np.float32)
    x[:, 2] = r5.integers(0, 7, size=400)
    x[::9, 3] = 2.0
    x[::5, 1] = 1.0
    x[r5.random(size=x.shape) < 0.12] = np.nan
    for nt in (1, 2):
        targets = [int(r5.integers(0, nt)) for _ in range(11)]
        weights = [float(np.round(r5.normal(), 3)) for _ in range(11)]
        for agg in range(4):
            for post in ([0, 2, 1] if agg == 1 else [0]):
                if post == 1 and nt == 1:
                    continue
                for dt, npdt in ((F, np.float32), (D, np.float64)):
                    if dt == D and (agg, post) != (1, 0):
                        continue
                    a = dict(nodes_featureids=feat, nodes_modes=np.array(modes, np.uint8), nodes_splits=np.array(splits, npdt),
                             nodes_truenodeids=tru, nodes_falsenodeids=fal, nodes_trueleafs=tleaf, nodes_falseleafs=fleaf,
                             nodes_missing_value_tracks_true=miss, membership_values=np.array(members, npdt),
                             tree_roots=roots, leaf_targetids=targets, leaf_weights=np.array(weights, npdt), n_targets=nt,
                             aggregate_function=agg, post_transform=post)
                    attrs = {k: (numpy_helper.from_array(v) if isinstance(v, np.ndarray) else v) for k, v in a.items()}
                    node = helper.make_node("TreeEnsemble", ["X"], ["Y"], domain="ai.onnx.ml", **attrs)
                    m = ml_model([node], [vi("X", dt, [None, 4])], [vi("Y", dt, [None, nt])], opset_ml=5)
                    xin = x.astype(npdt)
                    want = tree5_eval(xin.astype(np.float64), {k: (list(v) if isinstance(v, np.ndarray) else v) for k, v in a.items()})
                    if nt == 1 and post == 2:
                        want = None  # ORT applies only PROBIT to a single target (as its TreeEnsembleRegressor)
                    name = f"tree5_t{nt}_agg{agg}_post{post}_{'f64' if dt == D else 'f32'}"
                    # the checker of Debian's onnx 1.12 does not know TreeEnsemble: save without it
                    onnx.save(m, os.path.join(DATA, f"{name}.onnx"))
                    case(name, f"{name}.onnx", {"X": xin}, {"Y": None if want is None else want.astype(npdt)}, tol=1e-5)

    def bad5(name, expect, **change):
        a = dict(nodes_featureids=[0, 1], nodes_modes=np.array([0, 6], np.uint8), nodes_splits=np.array([0.5, 0], np.float32),
                 nodes_truenodeids=[1, 0], nodes_falsenodeids=[0, 1], nodes_trueleafs=[0, 1], nodes_falseleafs=[1, 1],
                 membership_values=np.array([1, 2], np.float32), tree_roots=[0], leaf_targetids=[0, 0],
                 leaf_weights=np.array([1, 2], np.float32), n_targets=1)
        a.update(change)
        attrs = {k: (numpy_helper.from_array(v) if isinstance(v, np.ndarray) else v) for k, v in a.items()}
        node = helper.make_node("TreeEnsemble", ["X"], ["Y"], domain="ai.onnx.ml", **attrs)
        m = ml_model([node], [vi("X", F, [None, 2])], [vi("Y", F, [None, 1])], opset_ml=5)
        onnx.save(m, os.path.join(DATA, f"bad_{name}.onnx"))
        with open(os.path.join(DATA, f"bad_{name}.expect"), "w") as f:
            f.write(expect)

    bad5("tree5_cycle", "cycle", nodes_trueleafs=[0, 0])
    bad5("tree5_leaf_range", "nodes_falsenodeids", nodes_falsenodeids=[0, 7])
    bad5("tree5_lengths", "nodes_splits", nodes_splits=np.array([0.5], np.float32))
    bad5("tree5_root", "tree_roots", tree_roots=[0, 5])
    bad5("tree5_target", "leaf_targetids", leaf_targetids=[0, 3])


# ------------------------------------------------------------------ XGBoost UBJSON
def ubj_cases():
    """The XGBoost JSON test models re-saved by XGBoost as UBJSON (.ubj, XGBoost >= 1.6): same inputs; the expected
    outputs are XGBoost's predictions with the booster loaded back from the .ubj file."""
    import shutil
    import xgboost as xgb
    for name in ("xgb_binary", "xgb_multi", "xgb_reg"):
        bst = xgb.Booster(model_file=os.path.join(DATA, f"{name}.json"))
        ubj = os.path.join(DATA, f"{name}_ubj.ubj")
        bst.save_model(ubj)
        back = xgb.Booster(model_file=ubj)
        x = np.load(os.path.join(DATA, f"{name}.in.input.npy"))
        pred = back.inplace_predict(x)
        outs = ["variable"] if name == "xgb_reg" else ["label", "probabilities"]
        want = {o: np.load(os.path.join(DATA, f"{name}.want.{o}.npy")) for o in outs}
        got = pred.reshape(want[outs[-1]].shape[0], -1)
        if name == "xgb_binary":
            got = np.stack([1 - got[:, 0], got[:, 0]], axis=1)
        assert np.abs(got - want[outs[-1]]).max() <= 1e-6, name
        shutil.copy(os.path.join(DATA, f"{name}.in.input.npy"), os.path.join(DATA, f"{name}_ubj.in.input.npy"))
        for o in outs:
            shutil.copy(os.path.join(DATA, f"{name}.want.{o}.npy"), os.path.join(DATA, f"{name}_ubj.want.{o}.npy"))
        MANIFEST.append(f"{name}_ubj {name}_ubj.ubj input : {' '.join(outs)} : 1e-06")


def main():
    os.makedirs(DATA, exist_ok=True)
    for f in os.listdir(DATA):
        os.remove(os.path.join(DATA, f))
    hand_cases()
    sklearn_cases()
    xgb_cases()
    linear_cases()
    preprocess_cases()
    bad_cases()
    svm_cases()
    tree5_cases()
    ubj_cases()
    with open(os.path.join(DATA, "manifest.txt"), "w") as f:
        f.write("\n".join(MANIFEST) + "\n")
    print(f"{len(MANIFEST)} cases in {DATA}")


if __name__ == "__main__":
    main()
