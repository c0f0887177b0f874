"""Pipeline.fit: a spec template learned from records in Python equals what
`infera fit-spec` learns from the same records in a file (the CLI of the same
build), and its parameters equal numpy's statistics (the independent oracle:
population mean/std, numpy quantiles, category counts) -- from a list of dicts,
from CSV-typed rows and from a pandas DataFrame."""
import collections
import csv
import json
import math
import os
import subprocess

import numpy as np
import pytest

import infera


@pytest.fixture(scope="module")
def template(root):
    return os.path.join(root, "examples/fraud/fraud_template.json")


@pytest.fixture(scope="module")
def raw_rows(root):
    with open(os.path.join(root, "examples/fraud/transactions_raw.csv"), newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def cli_fitted(cli, root, template, tmp_path_factory):
    out = tmp_path_factory.mktemp("fit") / "fitted.json"
    subprocess.run([cli, "fit-spec", "--spec", template, "--input",
                    "csv:" + os.path.join(root, "examples/fraud/transactions_raw.csv"), "--output", str(out)],
                   check=True, capture_output=True)
    return json.loads(out.read_text())


def features_by_name(spec):
    return {f["name"]: f for f in spec["features"]}


def test_unfitted_template_refuses_features(template, raw_rows):
    p = infera.Pipeline(template)
    with pytest.raises(infera.Error, match="fit"):
        p.features(raw_rows[:3], text=True)


def test_fit_equals_cli_fit_spec(template, raw_rows, cli_fitted):
    p = infera.Pipeline(template).fit(raw_rows, text=True)
    assert json.loads(p.spec) == cli_fitted
    assert p.hash is not None


def test_fitted_parameters_equal_numpy(template, raw_rows):
    p = infera.Pipeline(template).fit(raw_rows, text=True)
    got = features_by_name(json.loads(p.spec))
    amount = np.array([float(r["amount"]) for r in raw_rows])
    log_amount = np.log1p(amount)
    assert got["log_amount_z"]["mean"] == pytest.approx(log_amount.mean(), rel=1e-12)
    assert got["log_amount_z"]["std"] == pytest.approx(log_amount.std(ddof=0), rel=1e-12)
    dist = np.array([float(r["distance_from_home_km"]) for r in raw_rows if r["distance_from_home_km"] != ""])
    assert got["distance"]["value"] == pytest.approx(dist.mean(), rel=1e-12)
    # bucketize reads the imputed distance: missing values became the mean before the quantiles
    imputed = np.array([float(r["distance_from_home_km"]) if r["distance_from_home_km"] != "" else dist.mean()
                        for r in raw_rows])
    edges = np.unique(np.quantile(imputed, [0.25, 0.5, 0.75]))
    assert np.allclose(got["distance_band"]["edges"], edges, rtol=1e-12)
    counts = collections.Counter(int(r["merchant_category"]) for r in raw_rows)
    want = [c for c, _ in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))][:6]
    assert [int(c) for c in got["mcc"]["categories"]] == want


def test_fit_from_dataframe_gives_cli_features(cli, root, template, raw_rows, cli_fitted, tmp_path):
    pandas = pytest.importorskip("pandas")
    frame = pandas.read_csv(os.path.join(root, "examples/fraud/transactions_raw.csv"))
    p = infera.Pipeline(template).fit(frame)
    fitted = json.loads(p.spec)
    for name, f in features_by_name(cli_fitted).items():
        for k, v in f.items():
            if isinstance(v, float):
                assert fitted_value(fitted, name, k) == pytest.approx(v, rel=1e-12), (name, k)
    # features of the fitted pipeline equal `infera features` with the saved spec, bit for bit
    spec_path = tmp_path / "spec.json"
    p.save(spec_path)
    out = tmp_path / "features.npy"
    src = os.path.join(root, "examples/fraud/transactions_raw.csv")
    subprocess.run([cli, "features", "--spec", str(spec_path), "--input", "csv:" + src, "--output", "npy:" + str(out)],
                   check=True, capture_output=True)
    want = np.load(out)
    rows = list(csv.DictReader(open(src, newline="")))
    got = infera.Pipeline(str(spec_path)).features(rows, text=True)
    assert got.shape == want.shape
    assert got.astype(want.dtype).tobytes() == want.tobytes()


def fitted_value(spec, name, key):
    return features_by_name(spec)[name][key]


def test_fit_errors_are_infera_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"inputs": {"a": {"type": "float"}},
                               "features": [{"name": "b", "op": "standardize", "from": "a", "fit": True}],
                               "model_inputs": {"x": {"order": ["b"]}}}))
    p = infera.Pipeline(str(bad))
    with pytest.raises(infera.Error):
        p.fit([{"a": None}, {"a": None}])  # nothing to learn a mean from
    assert math.isfinite(infera.Pipeline(str(bad)).fit([{"a": 1.0}, {"a": 3.0}]).features([{"a": 2.0}])[0, 0])
