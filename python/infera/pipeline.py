"""infera.Pipeline: the pipeline spec (docs/pipeline-spec.md) from Python.

The records go through the same C code as `infera features`, `infera batch`
and `infera serve`, so a record gives bit-identical features everywhere.
Records may be a list of dicts, a dict of columns, or a pandas DataFrame
(duck-typed: anything with .columns and .itertuples()).  Values are typed as
JSON records are (None or NaN = missing); with text=True, strings are typed
as the CLI types CSV cells ("" missing, "12" int, "1.5" float, ...).
"""
import csv
import datetime
import json
import math
import os
import tempfile

from . import _infera


def _normalise(records):
    """-> (columns: list[str], rows: list[tuple]); for a DataFrame, rows are
    its columns as 1-D numpy arrays instead (see _by_column)."""
    if _by_column(records):  # pandas.DataFrame: column by column
        columns = [str(c) for c in records.columns]
        return columns, [records[c].to_numpy() for c in records.columns]
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

    A spec template whose transforms say "fit": true is learned from training
    records with fit() (what `infera fit-spec` does, by the same C code)
    before features() or score(); .spec is the spec's JSON text.
    """

    def __init__(self, spec_or_ref, model=None, home=None):
        spec = os.fspath(spec_or_ref)
        is_spec = _looks_like_spec(spec)
        if isinstance(model, (str, os.PathLike)):
            model = _infera.Model(os.fspath(model), home=home)
        self._p, self.spec, self._template = None, None, None
        self.feature_columns = []
        self.accepted, self.rejected = [], []
        if is_spec:
            self.model = model
            with open(spec, encoding="utf-8") as f:
                text = f.read()
            if _needs_fit(text):  # loaded by fit(): its parameters are not known yet
                self._template, self.spec = text, text
                self.name, self.hash, self.id_column = _template_name(text), None, None
                return
            self.spec = text
            self._p = _infera._Pipeline(spec, model)
        else:
            self.model = model if model is not None else _infera.Model(spec, home=home)
            self._p = _infera._Pipeline(None, self.model)
        self._read_info()

    def _read_info(self):
        info = self._p._info()
        self.name, self.hash, self.id_column = info["name"], info["hash"], info["id_column"]

    def _loaded(self):
        if self._p is None:
            raise _infera.Error("pipeline '%s' has transforms to fit (\"fit\": true): call .fit(records) first"
                                % self.name)
        return self._p

    def fit(self, records, text=False, as_of=None, history=None):
        """Learns the template's "fit": true parameters from records (a list of
        dicts, a dict of columns or a DataFrame) exactly as `infera fit-spec`
        does, then loads the fitted spec; returns self.  as_of/history: the
        point-in-time join of fit-spec's --as-of/--history.  Refitting starts
        again from the template."""
        template = self._template if self._template is not None else self.spec
        if template is None:
            raise _infera.Error("pipeline '%s' comes from a model's default mapping: nothing to fit" % self.name)
        columns, rows = _normalise(records)
        if _by_column(records):
            rows = list(zip(*rows))
        with tempfile.TemporaryDirectory(prefix="infera-fit-") as tmp:
            source = _write_source(tmp, columns, rows, text)
            fitted = _infera._fit_spec(template, source, as_of, history)
            spec_path = os.path.join(tmp, "fitted_spec.json")
            with open(spec_path, "w", encoding="utf-8") as f:
                f.write(fitted)
            self._p = _infera._Pipeline(spec_path, self.model)
        self._template, self.spec = template, fitted
        self._read_info()
        return self

    def save(self, path):
        """Writes the spec (fitted when fit() ran) to path, for `infera` and the registry."""
        with open(os.fspath(path), "w", encoding="utf-8") as f:
            f.write(self.spec)

    def features(self, records, text=False):
        """float64 ndarray [accepted records, feature columns] -- what `infera features` writes."""
        p = self._loaded()
        columns, rows = _normalise(records)
        x, self.feature_columns, self.accepted, self.rejected = p._prepare(columns, rows, bool(text),
                                                                           _by_column(records))
        return x

    def score(self, records, text=False, as_frame=None):
        """Prediction records (id, passthrough, outputs, model_name, model_version,
        pipeline_hash) of the accepted records: a list of dicts, or a pandas
        DataFrame when the records were one (or as_frame=True)."""
        p = self._loaded()
        columns, rows = _normalise(records)
        (names, preds), self.accepted, self.rejected = p._score(columns, rows, bool(text), _by_column(records))
        if as_frame is None:
            as_frame = hasattr(records, "itertuples")
        if as_frame:
            import pandas  # only when asked for a DataFrame
            return pandas.DataFrame.from_records(preds, columns=names)
        return [dict(zip(names, r)) for r in preds]


def _by_column(records):
    """A pandas DataFrame (duck-typed) is passed column by column."""
    return hasattr(records, "columns") and hasattr(records, "itertuples")


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


def _needs_fit(text):
    """True when some transform of the spec text says "fit": true."""
    try:
        doc = json.loads(text)
    except ValueError:
        return False  # the C loader reports what is wrong with it

    def walk(v):
        if isinstance(v, dict):
            return v.get("fit") is True or any(walk(x) for x in v.values())
        if isinstance(v, list):
            return any(walk(x) for x in v)
        return False
    return walk(doc)


def _template_name(text):
    try:
        return str(json.loads(text).get("name", "pipeline"))
    except (ValueError, AttributeError):
        return "pipeline"


def _json_cell(v):
    """A cell as JSON records carry it: None/NaN missing, numpy scalars as numbers."""
    if v is None:
        return None
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):  # numpy scalar
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    if isinstance(v, (datetime.datetime, datetime.date)) or hasattr(v, "isoformat"):
        return v.isoformat()
    if isinstance(v, bytes):
        return v.decode("utf-8")
    return v


def _write_source(folder, columns, rows, text):
    """Writes the records as a batch source file; returns its URI (csv: with
    text=True, so cells are typed as the CLI types CSV cells; jsonl: else)."""
    if text:
        path = os.path.join(folder, "records.csv")
        with open(path, "w", encoding="utf-8", newline="") as f:
            w = csv.writer(f)
            w.writerow(columns)
            for r in rows:
                w.writerow(["" if c is None else c for c in r])
        return "csv:" + path
    path = os.path.join(folder, "records.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            rec = {c: _json_cell(v) for c, v in zip(columns, r)}
            f.write(json.dumps({k: v for k, v in rec.items() if v is not None}, allow_nan=False))
            f.write("\n")
    return "jsonl:" + path
