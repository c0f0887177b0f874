"""infera.Pipeline against `infera features` (the CLI of the same build) on
the fraud example (examples/fraud: spec, raw records, SQLite card history),
with records carrying missing and invalid values: the same features bit for
bit and the same rejections; score() against Model.run on those features."""
import csv
import json
import os
import subprocess

import numpy as np
import pytest

import infera

BAD_ROWS = [
    "tbad1,card00001,2024-03-11T11:04:52Z,-5,6,7.4,7.2,1,0",      # amount below its minimum
    "tbad2,card00002,,48.1,6,7.4,7.2,1,0",                        # ts missing (required)
    "tbad3,card00003,2024-03-11T11:04:52Z,abc,6,,7.2,1,0",       # amount not a number
    "tbad4,card00003,2024-03-11T11:04:52Z,10,12,1,7.2,1,0",      # merchant_category above max
    "tmiss,card00004,2024-03-11T11:04:52Z,12.5,3,,,0,0",          # optional fields missing
    "tnew,card99999,2024-03-11T11:04:52Z,1.25,3,1.5,2.5,true,0",  # unknown card: lookup defaults
]


@pytest.fixture(scope="module")
def raw_csv(root, tmp_path_factory):
    src = os.path.join(root, "examples/fraud/transactions_raw.csv")
    with open(src) as f:
        lines = f.read().splitlines()[:301]
    path = tmp_path_factory.mktemp("fraud") / "raw.csv"
    path.write_text("\n".join(lines + BAD_ROWS) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def cli_features(cli, root, raw_csv, tmp_path_factory):
    out = tmp_path_factory.mktemp("cli")
    spec = os.path.join(root, "examples/fraud/fraud_spec.json")
    res = {}
    for fmt in ("jsonl", "npy"):
        dst = str(out / ("f." + fmt))
        r = subprocess.run([cli, "features", "--spec", spec, "--input", "csv:" + raw_csv, "--output",
                            "%s:%s" % (fmt, dst)], capture_output=True, text=True, check=True)
        res[fmt] = dst
        res["stderr"] = r.stderr
    return res


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_features_equal_cli_bit_for_bit(root, raw_csv, cli_features):
    p = infera.Pipeline(os.path.join(root, "examples/fraud/fraud_spec.json"))
    x = p.features(read_rows(raw_csv), text=True)
    with open(cli_features["jsonl"]) as f:
        recs = [json.loads(line) for line in f]
    assert x.dtype == np.float64 and x.shape == (len(recs), len(p.feature_columns))
    want = np.array([[np.nan if r[c] is None else r[c] for c in p.feature_columns] for r in recs], np.float64)
    assert x.tobytes() == want.tobytes()
    npy = np.load(cli_features["npy"])
    assert x.astype(npy.dtype).tobytes() == npy.tobytes()
    # the same records rejected, for the same reasons (the CLI counts records from 1)
    n_data = len(read_rows(raw_csv))
    assert [r[0] for r in p.rejected] == [n_data - 6, n_data - 5, n_data - 4, n_data - 3]
    for row, field, msg in p.rejected:
        assert "record %d rejected: %s" % (row + 1, msg) in cli_features["stderr"]
    assert [r[1] for r in p.rejected] == ["amount", "ts", "amount", "merchant_category"]
    assert len(p.accepted) == n_data - 4


def test_record_shapes_agree(root, raw_csv):
    """list of dicts, dict of columns and typed values give the same features."""
    p = infera.Pipeline(os.path.join(root, "examples/fraud/fraud_spec.json"))
    rows = read_rows(raw_csv)[:50]
    a = p.features(rows, text=True)
    cols = {k: [r[k] for r in rows] for k in rows[0]}
    b = p.features(cols, text=True)
    typed = [{"transaction_id": r["transaction_id"], "card_id": r["card_id"], "ts": r["ts"],
              "amount": float(r["amount"]), "merchant_category": int(r["merchant_category"]),
              "distance_from_home_km": float(r["distance_from_home_km"]) if r["distance_from_home_km"] else None,
              "distance_from_last_txn_km": float(r["distance_from_last_txn_km"])
              if r["distance_from_last_txn_km"] else float("nan"),
              "card_present": r["card_present"] == "1"} for r in rows]
    c = p.features(typed)
    assert a.tobytes() == b.tobytes() == c.tobytes()


def test_score_matches_model_run(root, raw_csv):
    model = infera.Model(os.path.join(root, "examples/fraud/fraud_xgb.onnx"))
    p = infera.Pipeline(os.path.join(root, "examples/fraud/fraud_spec.json"), model=model)
    rows = read_rows(raw_csv)
    preds = p.score(rows, text=True)
    assert len(preds) == len(p.accepted) == len(rows) - 4
    x = p.features(rows, text=True).astype(np.float32)
    y = model.run({"input": x})
    assert [r["transaction_id"] for r in preds] == [rows[i]["transaction_id"] for i in p.accepted]
    assert all(r["pipeline_hash"] == p.hash for r in preds)
    prob_field = [k for k in preds[0] if "prob" in k or "score" in k]
    assert prob_field, preds[0]
    got = np.array([r[prob_field[0]] for r in preds], np.float64)
    want = y["probabilities"][:, 1].astype(np.float64)
    assert got.tobytes() == want.tobytes()


def test_errors(root, tmp_path):
    with pytest.raises(infera.Error):
        infera.Pipeline(str(tmp_path / "missing_spec.json"), model=None)
    bad = tmp_path / "bad.json"
    bad.write_text('{"spec_version": 1, "features": 3}')
    with pytest.raises(infera.Error):
        infera.Pipeline(str(bad))
    p = infera.Pipeline(os.path.join(root, "examples/fraud/fraud_spec.json"))
    with pytest.raises(TypeError):
        p.features([{"amount": object()}])
    with pytest.raises(TypeError):
        p.features(42)
    with pytest.raises(infera.Error, match="model"):
        p.score([{"amount": 1.0}])
    x = p.features([{"amount": "x"}])          # a bad record is rejected, not raised
    assert x.shape[0] == 0 and len(p.rejected) == 1


def test_score_equals_infera_batch(cli, root, raw_csv, tmp_path):
    """score() gives the prediction records `infera batch` writes (same values, same rejected rows)."""
    fraud = os.path.join(root, "examples/fraud")
    out = str(tmp_path / "preds.jsonl")
    subprocess.run([cli, "batch", "--model", os.path.join(fraud, "fraud_xgb.onnx"), "--pipeline",
                    os.path.join(fraud, "fraud_spec.json"), "--input", "csv:" + raw_csv, "--output", "jsonl:" + out,
                    "--errors", "jsonl:" + str(tmp_path / "errors.jsonl"), "--progress", "none"],
                   check=True, capture_output=True)
    with open(out) as f:
        want = [json.loads(line) for line in f]
    p = infera.Pipeline(os.path.join(fraud, "fraud_spec.json"), model=os.path.join(fraud, "fraud_xgb.onnx"))
    got = p.score(read_rows(raw_csv), text=True)
    assert len(got) == len(want) and got
    common = [k for k in want[0] if k in got[0]]
    assert "model_version" in common and "pipeline_hash" in common
    assert "transaction_id" in common and len(common) >= 3, (list(want[0]), list(got[0]))
    for g, w in zip(got, want):
        for k in common:
            gv, wv = g[k], w[k]
            if isinstance(wv, float) or isinstance(gv, float):
                assert np.float64(gv).tobytes() == np.float64(wv).tobytes(), (k, gv, wv)
            else:
                assert gv == wv, (k, gv, wv)


def test_dataframe_columns_equal_records(root, raw_csv):
    """A DataFrame goes to C column by column (numbers read from the arrays);
    its features and rejections equal the same rows given as dicts."""
    pandas = pytest.importorskip("pandas")
    frame = pandas.read_csv(raw_csv)  # float64 with NaN, int64, object (str) columns
    frame["card_present"] = frame["card_present"].astype(bool)
    frame["distance32"] = frame["distance_from_last_txn_km"].astype("float32")
    records = [{k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
               for r in frame.to_dict("records")]
    p = infera.Pipeline(os.path.join(root, "examples/fraud/fraud_spec.json"))
    by_col = p.features(frame)
    rej_col = p.rejected
    by_row = p.features(records)
    assert by_col.shape == by_row.shape and by_col.shape[0] > 0
    assert np.array_equal(by_col, by_row, equal_nan=True)
    assert rej_col == p.rejected and len(rej_col) > 0
