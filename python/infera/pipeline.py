"""infera.Pipeline: the pipeline spec (docs/pipeline-spec.md) from Python.

The records go through the same C code as `infera features`, `infera batch`
and `infera serve`, so a record gives bit-identical features everywhere.
Records may be a list of dicts, a dict of columns, or a pandas DataFrame
(duck-typed: anything with .columns and .itertuples()).  Values are typed as
JSON records are (None or NaN = missing); with text=True, strings are typed
as the CLI types CSV cells ("" missing, "12" int, "1.5" float, ...).
"""
import json
import os

from . import _infera


def _normalise(records):
    """-> (columns: list[str], rows: list[tuple])."""
    if hasattr(records, "columns") and hasattr(records, "itertuples"):  # pandas.DataFrame
        columns = [str(c) for c in records.columns]
        return columns, [tuple(r) for r in records.itertuples(index=False, name=None)]
    if isinstance(records, dict):
        columns = [str(c) for c in records]
        cols = [list(v) for v in records.values()]
        n = len(cols[0]) if cols else 0
        if any(len(c) != n for c in cols):
            raise ValueError("a dict of columns needs columns of one length")
        return columns, list(zip(*cols)) if cols else []
    if isinstance(records, (list, tuple)):
        index = {}
        for rec in records:
            if not isinstance(rec, dict):
                raise TypeError("records must be dicts (got %s)" % type(rec).__name__)
            for k in rec:
                if k not in index:
                    index[k] = len(index)
        columns = list(index)
        return columns, [tuple(rec.get(c) for c in columns) for rec in records]
    raise TypeError("records must be a list of dicts, a dict of columns or a DataFrame")


class Pipeline:
    """Pipeline(spec_or_ref, model=None, home=None)

    spec_or_ref: a spec file (.json) -- with model (an infera.Model or a
    reference) for scoring, or alone for features only; or a model reference
    (path or NAME[@VERSION|@ALIAS]) whose registry entry's spec is used (the
    default mapping when it has none).

    After features() or score(), .rejected is the list of (record index,
    field, reason) of the records left out, and .accepted the indices kept.
    Calls on one Pipeline are serialised by a lock.
    """

    def __init__(self, spec_or_ref, model=None, home=None):
        spec = os.fspath(spec_or_ref)
        is_spec = _looks_like_spec(spec)
        if isinstance(model, (str, os.PathLike)):
            model = _infera.Model(os.fspath(model), home=home)
        if is_spec:
            self.model = model
            self._p = _infera._Pipeline(spec, model)
        else:
            self.model = model if model is not None else _infera.Model(spec, home=home)
            self._p = _infera._Pipeline(None, self.model)
        info = self._p._info()
        self.name, self.hash, self.id_column = info["name"], info["hash"], info["id_column"]
        self.feature_columns = []
        self.accepted, self.rejected = [], []

    def features(self, records, text=False):
        """float64 ndarray [accepted records, feature columns] -- what `infera features` writes."""
        columns, rows = _normalise(records)
        x, self.feature_columns, self.accepted, self.rejected = self._p._prepare(columns, rows, bool(text))
        return x

    def score(self, records, text=False, as_frame=None):
        """Prediction records (id, passthrough, outputs, model_name, model_version,
        pipeline_hash) of the accepted records: a list of dicts, or a pandas
        DataFrame when the records were one (or as_frame=True)."""
        columns, rows = _normalise(records)
        (names, preds), self.accepted, self.rejected = self._p._score(columns, rows, bool(text))
        if as_frame is None:
            as_frame = hasattr(records, "itertuples")
        if as_frame:
            import pandas  # only when asked for a DataFrame
            return pandas.DataFrame.from_records(preds, columns=names)
        return [dict(zip(names, r)) for r in preds]


def _looks_like_spec(path):
    """A .json file that is not an XGBoost model (those have a "learner")."""
    if not (path.lower().endswith(".json") and os.path.isfile(path)):
        return False
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return True  # let the C loader report what is wrong with it
    return not (isinstance(doc, dict) and "learner" in doc)
