"""infera.dask on a real LocalCluster with two worker processes: every row of
the fraud example scored exactly once, predictions equal to `infera batch`
(the CLI, same build) bit for bit, each worker process opening the model once,
the job recorded once in the registry's lineage, and rejected rows reported
with their index.  Skips (77 via pytest's skip) without python3-dask."""
import csv
import json
import os
import subprocess
import sys

import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pandas = pytest.importorskip("pandas")

import infera  # noqa: E402
import infera.dask  # noqa: E402


@pytest.fixture(scope="module")
def home(cli, root, tmp_path_factory):
    h = str(tmp_path_factory.mktemp("dask-registry"))
    env = dict(os.environ, INFERA_HOME=h)
    env.pop("INFERA_REGISTRY", None)
    fraud = os.path.join(root, "examples/fraud")
    subprocess.run([cli, "registry", "register", "fraud", os.path.join(fraud, "fraud_xgb.onnx"), "--pipeline",
                    os.path.join(fraud, "fraud_spec.json")], env=env, check=True, capture_output=True)
    subprocess.run([cli, "registry", "alias", "fraud@1", "production"], env=env, check=True, capture_output=True)
    return h


@pytest.fixture(scope="module")
def client():
    # worker processes import infera from the same place as this process
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (sys.path[0], os.environ.get("PYTHONPATH")) if p)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                       silence_logs=40)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def test_dask_scores_every_row_once_like_infera_batch(cli, root, home, client, tmp_path):
    src = os.path.join(root, "examples/fraud/transactions_raw.csv")
    env = dict(os.environ, INFERA_HOME=home)
    env.pop("INFERA_REGISTRY", None)
    out = tmp_path / "batch.jsonl"
    subprocess.run([cli, "batch", "--model", "fraud@production", "--input", "csv:" + src, "--output",
                    "jsonl:" + str(out)], env=env, check=True, capture_output=True)
    want = {}
    for line in out.read_text().splitlines():
        rec = json.loads(line)
        want[rec["transaction_id"]] = rec
    # strings typed as the CLI types CSV cells: the same records, bit for bit
    frame = pandas.read_csv(src, dtype=str, keep_default_na=False)
    ddf = dd.from_pandas(frame, npartitions=7)
    got = infera.dask.score(ddf, "fraud@production", home=home, text=True).compute()
    ids = list(got["transaction_id"])
    assert len(ids) == len(set(ids)) == len(want) == len(frame)
    score_cols = [c for c in got.columns if c not in ("transaction_id",)]
    for rec in got.to_dict("records"):
        ref = want[rec["transaction_id"]]
        for c in score_cols:
            assert json.dumps(rec[c]) == json.dumps(ref[c]), (rec["transaction_id"], c)
    # each worker process opened the model once and kept it
    opened = client.run(lambda: len(infera.dask._OPEN_PIPELINES))
    assert sorted(opened.values()) == [1, 1]
    got2 = infera.dask.score(ddf, "fraud@production", home=home, text=True).compute()
    assert client.run(lambda: len(infera.dask._OPEN_PIPELINES)) == opened
    assert len(got2) == len(frame)
    # the job is in the lineage once per score() call, not once per partition
    lineage = json.dumps(infera.Registry(home=home).lineage("fraud"))
    assert lineage.count("dask:dask-") == 2


def test_dask_reports_rejected_rows(root, home, client):
    src = os.path.join(root, "examples/fraud/transactions_raw.csv")
    frame = pandas.read_csv(src, dtype=str, keep_default_na=False).head(300)
    frame.loc[frame.index[17], "amount"] = "-5"      # below the spec's minimum
    frame.loc[frame.index[230], "ts"] = ""           # required field missing
    ddf = dd.from_pandas(frame, npartitions=3)
    preds = infera.dask.score(ddf, "fraud@production", home=home, text=True, record_lineage=False).compute()
    rej = infera.dask.rejects(ddf, "fraud@production", home=home, text=True).compute()
    assert len(preds) == 298
    assert sorted(rej["row"]) == [17, 230]
    assert set(rej["field"]) == {"amount", "ts"}


def test_dask_bad_model_raises_infera_error(root, client):
    ddf = dd.from_pandas(pandas.DataFrame({"a": ["1"]}), npartitions=1)
    with pytest.raises(infera.Error):
        infera.dask.score(ddf, os.path.join(root, "tests/models/no_such_model.onnx"))
