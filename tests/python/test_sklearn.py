"""infera.sklearn.InferaClassifier against XGBoost's own probabilities of
the fraud example (examples/fraud/sample_probabilities.npy, written by
gen_fraud.py) and PyTorch's of the MLP (tests/models/*.torch.npy)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import infera
from infera.sklearn import InferaClassifier


def test_import_does_not_import_sklearn():
    code = "import infera.sklearn, sys; print('sklearn' in sys.modules)"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "False"


def test_fraud_probabilities_match_xgboost(root):
    X = np.load(os.path.join(root, "examples/fraud/sample_features.npy"))
    want = np.load(os.path.join(root, "examples/fraud/sample_probabilities.npy"))
    clf = InferaClassifier(os.path.join(root, "examples/fraud/fraud_xgb.onnx")).fit(X)
    proba = clf.predict_proba(X)
    assert proba.shape == want.shape
    np.testing.assert_allclose(proba, want, rtol=0, atol=2e-6)
    pred = clf.predict(X)
    assert pred.shape == (len(X),)
    # labels agree with the probabilities except on exact ties at 0.5
    clear = np.abs(want[:, 1] - 0.5) > 1e-5
    assert np.array_equal(pred[clear], np.argmax(want, axis=1)[clear])
    assert list(clf.classes_) == [0, 1]


def test_mlp_probabilities_match_torch(root):
    X = np.load(os.path.join(root, "tests/models/mlp_input.npy"))
    want = np.load(os.path.join(root, "tests/models/mlp_probabilities.torch.npy"))
    clf = InferaClassifier(os.path.join(root, "tests/models/mlp.onnx"))
    np.testing.assert_allclose(clf.predict_proba(X), want, rtol=1e-5, atol=1e-6)
    assert np.array_equal(clf.predict(X), np.argmax(want, axis=1))


def test_sklearn_metrics_accept_it(root):
    metrics = pytest.importorskip("sklearn.metrics")
    X = np.load(os.path.join(root, "examples/fraud/sample_features.npy"))[:500]
    want = np.load(os.path.join(root, "examples/fraud/sample_probabilities.npy"))[:500]
    clf = InferaClassifier(os.path.join(root, "examples/fraud/fraud_xgb.onnx"))
    y = (want[:, 1] > 0.5).astype(int)
    assert metrics.accuracy_score(y, clf.predict(X)) >= 0.99
    assert clf.get_params()["ref"].endswith("fraud_xgb.onnx")


def test_bad_input(root):
    clf = InferaClassifier(os.path.join(root, "examples/fraud/fraud_xgb.onnx"))
    with pytest.raises(ValueError, match="12"):
        clf.predict(np.zeros((2, 11), np.float32))
    with pytest.raises(ValueError):
        clf.predict(np.zeros(12, np.float32))
    with pytest.raises(infera.Error):
        InferaClassifier(os.path.join(root, "tests/models/bad_cycle.onnx")).predict(np.zeros((1, 1)))
