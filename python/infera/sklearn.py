"""scikit-learn style wrapper over infera.Model, for existing evaluation code.

    from infera.sklearn import InferaClassifier
    clf = InferaClassifier("examples/fraud/fraud_xgb.onnx")   # or "fraud@production"
    clf.predict_proba(X)        # [n, n_classes] float64
    clf.predict(X)              # class labels

Importing this module does not import scikit-learn: the wrapper follows the
estimator conventions (get_params/set_params, classes_, fit as a no-op that
checks the input width) without inheriting from sklearn's classes.
"""
import numpy as np

from ._infera import Error, Model


class InferaClassifier:
    """A classifier backed by an ONNX/XGBoost model run by Infera.

    ref: model path or registry reference.  input: the input to bind X to
    (default: the model's only input).  proba_output / label_output: the
    outputs holding class probabilities and labels (default: the first output
    whose name contains "prob", and the first integer or string output named
    like "label"); without a label output, predict() is the argmax of the
    probabilities mapped through classes_.
    """

    def __init__(self, ref, threads=1, input=None, proba_output=None, label_output=None, home=None):
        self.ref, self.threads, self.input = ref, threads, input
        self.proba_output, self.label_output, self.home = proba_output, label_output, home
        self._model = None

    # --- estimator conventions ---
    def get_params(self, deep=True):
        return {k: getattr(self, k) for k in ("ref", "threads", "input", "proba_output", "label_output", "home")}

    def set_params(self, **params):
        for k, v in params.items():
            setattr(self, k, v)
        self._model = None
        return self

    def fit(self, X, y=None):
        """Models are trained elsewhere: fit only opens the model and checks X."""
        self._check(X)
        return self

    # --- the model ---
    @property
    def model(self):
        if self._model is None:
            self._model = Model(self.ref, threads=self.threads, home=self.home)
        return self._model

    def _input(self):
        m = self.model
        if self.input is not None:
            return self.input
        if len(m.inputs) != 1:
            raise Error("model has %d inputs: name the one X binds to with input=" % len(m.inputs))
        return m.inputs[0]["name"]

    def _outputs(self):
        outs = self.model.outputs
        proba = self.proba_output or next((o["name"] for o in outs if "prob" in o["name"].lower()), None)
        label = self.label_output or next(
            (o["name"] for o in outs if "label" in o["name"].lower() and o["kind"] == "tensor"), None)
        if proba is None:
            raise Error("no probability output found in %s: name it with proba_output=" % [o["name"] for o in outs])
        return proba, label

    def _check(self, X):
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError("X must be 2-D [n_samples, n_features], got shape %s" % (X.shape,))
        info = next(i for i in self.model.inputs if i["name"] == self._input())
        width = info["shape"][1] if info["shape"] and len(info["shape"]) == 2 else None
        if isinstance(width, int) and X.shape[1] != width:
            raise ValueError("X has %d features, the model expects %d" % (X.shape[1], width))
        return X

    def _run(self, X):
        return self.model.run({self._input(): self._check(X)})

    @staticmethod
    def _proba_array(value):
        if isinstance(value, list):  # ZipMap: a list of {class: probability}
            keys = sorted(value[0]) if value else []
            return np.array([[d[k] for k in keys] for d in value], np.float64), np.array(keys)
        value = np.asarray(value, np.float64)
        if value.ndim == 1:  # one column: probability of the positive class
            value = np.stack([1.0 - value, value], 1)
        return value, None

    def predict_proba(self, X):
        proba_name, _ = self._outputs()
        proba, keys = self._proba_array(self._run(X)[proba_name])
        self.classes_ = keys if keys is not None else np.arange(proba.shape[1])
        return proba

    def predict(self, X):
        proba_name, label_name = self._outputs()
        out = self._run(X)
        proba, keys = self._proba_array(out[proba_name])
        self.classes_ = keys if keys is not None else np.arange(proba.shape[1])
        if label_name is not None:
            return np.asarray(out[label_name]).reshape(-1)
        return self.classes_[np.argmax(proba, axis=1)]

    def score(self, X, y):
        """Mean accuracy, as sklearn classifiers' score."""
        return float(np.mean(self.predict(X) == np.asarray(y)))
