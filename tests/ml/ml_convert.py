"""Hand-written converters to ONNX-ML (skl2onnx / onnxmltools are not in Debian).

xgb_to_onnx(json_path): an XGBoost JSON model (binary:logistic, multi:softprob,
    multi:softmax, reg:squarederror) -> TreeEnsembleClassifier/Regressor with
    input "input" and outputs label/probabilities or variable, the same form
    `infera` imports natively (src/import/xgboost.c).
sk_trees_to_onnx(model_or_trees, n_features, ...): scikit-learn decision trees,
    random forests (AVERAGE) and GradientBoostingClassifier.
svm_to_onnx(model, n_features, ...): scikit-learn SVC / NuSVC (SVMClassifier),
    SVR / NuSVR / OneClassSVM (SVMRegressor), from libsvm's raw dual
    coefficients and intercepts (_dual_coef_, _intercept_: the binary SVC's
    public ones have their sign flipped).
"""
import json
import math

import numpy as np
import onnx
from onnx import TensorProto, helper


def _model(node, n_features, outputs, ml_opset=3):
    g = helper.make_graph([node], "trees", [helper.make_tensor_value_info(node.input[0], TensorProto.FLOAT, [None, n_features])],
                          outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", ml_opset)],
                          producer_name="infera-ml-convert")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def _num(v):
    if isinstance(v, str):
        return float(v.strip("[]"))
    return float(v)


def xgb_to_onnx(path):
    with open(path) as f:
        js = json.load(f)
    learner = js["learner"]
    obj = learner["objective"]["name"]
    param = learner["learner_model_param"]
    n_features = int(param["num_feature"])
    base = _num(param["base_score"])
    num_class = int(param.get("num_class", "0"))
    model = learner["gradient_booster"]["model"]
    nodes = dict(treeids=[], nodeids=[], featureids=[], modes=[], values=[], truenodeids=[], falsenodeids=[], missing=[])
    w = dict(treeids=[], nodeids=[], ids=[], weights=[])
    for t, (tree, cls) in enumerate(zip(model["trees"], model["tree_info"])):
        left, right = tree["left_children"], tree["right_children"]
        stack = [0]
        while stack:
            i = stack.pop()
            leaf = left[i] == -1
            nodes["treeids"].append(t)
            nodes["nodeids"].append(i)
            nodes["featureids"].append(0 if leaf else tree["split_indices"][i])
            nodes["modes"].append("LEAF" if leaf else "BRANCH_LT")
            nodes["values"].append(0.0 if leaf else tree["split_conditions"][i])
            nodes["truenodeids"].append(0 if leaf else left[i])
            nodes["falsenodeids"].append(0 if leaf else right[i])
            nodes["missing"].append(0 if leaf else int(tree["default_left"][i]))
            if leaf:
                w["treeids"].append(t)
                w["nodeids"].append(i)
                w["ids"].append(cls if num_class > 2 else 0)
                w["weights"].append(tree["split_conditions"][i])
            else:
                stack += [right[i], left[i]]
    attrs = dict(nodes_treeids=nodes["treeids"], nodes_nodeids=nodes["nodeids"], nodes_featureids=nodes["featureids"],
                 nodes_modes=nodes["modes"], nodes_values=nodes["values"], nodes_truenodeids=nodes["truenodeids"],
                 nodes_falsenodeids=nodes["falsenodeids"], nodes_missing_value_tracks_true=nodes["missing"])
    if obj == "binary:logistic" or obj.startswith("multi:"):
        k = 2 if obj == "binary:logistic" else num_class
        base_values = [-math.log(1 / base - 1)] if k == 2 else [base] * k
        node = helper.make_node("TreeEnsembleClassifier", ["input"], ["label", "probabilities"], domain="ai.onnx.ml",
                                class_treeids=w["treeids"], class_nodeids=w["nodeids"], class_ids=w["ids"],
                                class_weights=w["weights"], classlabels_int64s=list(range(k)), base_values=base_values,
                                post_transform="LOGISTIC" if k == 2 else "SOFTMAX", **attrs)
        return _model(node, n_features, [helper.make_tensor_value_info("label", TensorProto.INT64, [None]),
                                         helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, k])])
    if obj.startswith("reg:squarederror"):
        node = helper.make_node("TreeEnsembleRegressor", ["input"], ["variable"], domain="ai.onnx.ml",
                                target_treeids=w["treeids"], target_nodeids=w["nodeids"], target_ids=w["ids"],
                                target_weights=w["weights"], n_targets=1, base_values=[base], **attrs)
        return _model(node, n_features, [helper.make_tensor_value_info("variable", TensorProto.FLOAT, [None, 1])])
    raise ValueError(f"objective {obj} not handled")


def _sk_tree(tree, t, acc, leaf_weights):
    tr = tree.tree_
    for i in range(tr.node_count):
        leaf = tr.children_left[i] == -1
        acc["nodes_treeids"].append(t)
        acc["nodes_nodeids"].append(i)
        acc["nodes_featureids"].append(0 if leaf else int(tr.feature[i]))
        acc["nodes_modes"].append("LEAF" if leaf else "BRANCH_LEQ")
        acc["nodes_values"].append(0.0 if leaf else float(tr.threshold[i]))
        acc["nodes_truenodeids"].append(0 if leaf else int(tr.children_left[i]))
        acc["nodes_falsenodeids"].append(0 if leaf else int(tr.children_right[i]))
        if leaf:
            for target, value in leaf_weights(tr.value[i]):
                acc["w_t"].append(t)
                acc["w_n"].append(i)
                acc["w_i"].append(target)
                acc["w_w"].append(float(value))


def sk_trees_to_onnx(model, n_features, n_targets=1, agg="SUM", classifier=False):
    acc = {k: [] for k in ["nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_modes", "nodes_values",
                           "nodes_truenodeids", "nodes_falsenodeids", "w_t", "w_n", "w_i", "w_w"]}
    if classifier:  # GradientBoostingClassifier, multi-class: estimators_[i, k] votes for class k
        lr = model.learning_rate
        k_classes = model.estimators_.shape[1]
        t = 0
        for row in model.estimators_:
            for k, tree in enumerate(row):
                _sk_tree(tree, t, acc, lambda v, k=k: [(k, lr * v[0, 0])])
                t += 1
        init = model._raw_predict_init(np.zeros((1, n_features), np.float32))[0]
        w = {k: acc.pop(k) for k in ["w_t", "w_n", "w_i", "w_w"]}
        node = helper.make_node("TreeEnsembleClassifier", ["X"], ["label", "probabilities"], domain="ai.onnx.ml",
                                class_treeids=w["w_t"], class_nodeids=w["w_n"], class_ids=w["w_i"], class_weights=w["w_w"],
                                classlabels_int64s=list(range(k_classes)), base_values=[float(v) for v in init],
                                post_transform="SOFTMAX", **acc)
        return _model(node, n_features, [helper.make_tensor_value_info("label", TensorProto.INT64, [None]),
                                         helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, k_classes])])
    for t, tree in enumerate(model):
        _sk_tree(tree, t, acc, lambda v: [(k, v[k, 0]) for k in range(n_targets)])
    w = {k: acc.pop(k) for k in ["w_t", "w_n", "w_i", "w_w"]}
    node = helper.make_node("TreeEnsembleRegressor", ["X"], ["Y"], domain="ai.onnx.ml", target_treeids=w["w_t"],
                            target_nodeids=w["w_n"], target_ids=w["w_i"], target_weights=w["w_w"], n_targets=n_targets,
                            aggregate_function=agg, **acc)
    return _model(node, n_features, [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, n_targets])])


def svm_to_onnx(model, n_features, labels=None, one_class=False, post="NONE"):
    kernel = model.kernel.upper()
    params = [float(model._gamma), float(model.coef0), float(model.degree)]
    sv = model.support_vectors_.astype(np.float64).ravel().tolist()
    coef = np.asarray(model._dual_coef_, np.float64)
    rho = np.asarray(model._intercept_, np.float64).ravel().tolist()
    common = dict(kernel_type=kernel, kernel_params=params, support_vectors=sv, rho=rho, post_transform=post)
    if labels is not None:
        attrs = dict(common, coefficients=coef.ravel().tolist(), vectors_per_class=[int(v) for v in model.n_support_])
        if isinstance(labels[0], str):
            attrs["classlabels_strings"] = list(labels)
        else:
            attrs["classlabels_ints"] = [int(v) for v in labels]
        if getattr(model, "probability", False):
            attrs["prob_a"] = np.asarray(model.probA_, np.float64).tolist()
            attrs["prob_b"] = np.asarray(model.probB_, np.float64).tolist()
            n_scores = len(labels)
        else:
            n_scores = len(labels) * (len(labels) - 1) // 2 if len(labels) > 2 else 2
        node = helper.make_node("SVMClassifier", ["X"], ["label", "probabilities"], domain="ai.onnx.ml", **attrs)
        lab_t = TensorProto.STRING if isinstance(labels[0], str) else TensorProto.INT64
        return _model(node, n_features, [helper.make_tensor_value_info("label", lab_t, [None]),
                                         helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, n_scores])],
                      ml_opset=1)
    node = helper.make_node("SVMRegressor", ["X"], ["Y"], domain="ai.onnx.ml", coefficients=coef.ravel().tolist(),
                            n_supports=int(coef.shape[1]), one_class=int(one_class), **common)
    return _model(node, n_features, [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, 1])], ml_opset=1)
