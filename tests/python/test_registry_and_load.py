"""Registry references (NAME, NAME@VERSION, NAME@ALIAS) through the public
API, the registry entry's own spec, and Pipeline under load: 10,000 calls
without growth, threads sharing one Pipeline."""
import csv
import gc
import os
import subprocess
import threading
import tracemalloc

import numpy as np
import pytest

import infera


@pytest.fixture(scope="module")
def home(cli, root, tmp_path_factory):
    h = str(tmp_path_factory.mktemp("registry"))
    env = dict(os.environ, INFERA_HOME=h)
    env.pop("INFERA_REGISTRY", None)
    fraud = os.path.join(root, "examples/fraud")
    subprocess.run([cli, "registry", "register", "fraud", os.path.join(fraud, "fraud_xgb.onnx"), "--pipeline",
                    os.path.join(fraud, "fraud_spec.json")], env=env, check=True, capture_output=True)
    subprocess.run([cli, "registry", "register", "mlp", os.path.join(root, "tests/models/mlp.onnx")], env=env,
                   check=True, capture_output=True)
    subprocess.run([cli, "registry", "alias", "fraud@1", "production"], env=env, check=True, capture_output=True)
    return h


def fraud_rows(root, n):
    with open(os.path.join(root, "examples/fraud/transactions_raw.csv"), newline="") as f:
        return [r for _, r in zip(range(n), csv.DictReader(f))]


def test_model_from_registry(root, home):
    x = np.load(os.path.join(root, "tests/models/mlp_input.npy"))
    want = infera.Model(os.path.join(root, "tests/models/mlp.onnx")).run({"input": x})
    for ref in ("mlp", "mlp@1"):
        got = infera.Model(ref, home=home).run({"input": x})
        assert got["logits"].tobytes() == want["logits"].tobytes()
    with pytest.raises(infera.Error, match="mlp@7|version"):
        infera.Model("mlp@7", home=home)
    with pytest.raises(infera.Error):
        infera.Model("nosuch@production", home=home)


def test_pipeline_from_registry_uses_its_spec(root, home):
    rows = fraud_rows(root, 200)
    by_file = infera.Pipeline(os.path.join(root, "examples/fraud/fraud_spec.json"),
                              model=os.path.join(root, "examples/fraud/fraud_xgb.onnx"))
    # the registry stores the spec text; relative store paths resolve from the current directory
    cwd = os.getcwd()
    os.chdir(os.path.join(root, "examples/fraud"))
    try:
        by_ref = infera.Pipeline("fraud@production", home=home)
        got = by_ref.score(rows, text=True)
    finally:
        os.chdir(cwd)
    want = by_file.score(rows, text=True)
    assert {(r["model_name"], r["model_version"]) for r in got} == {("fraud", "1")}
    assert {r["pipeline_hash"] for r in got} == {by_ref.hash}
    stamp = ("model_name", "model_version", "pipeline_hash")
    strip = lambda rs: [{k: v for k, v in r.items() if k not in stamp} for r in rs]
    assert strip(got) == strip(want) and len(got) == 200


def test_pipeline_features_10000_calls_no_growth(root):
    p = infera.Pipeline(os.path.join(root, "examples/fraud/fraud_spec.json"))
    rows = fraud_rows(root, 4)
    for _ in range(200):
        p.features(rows, text=True)
    # warm up under tracemalloc too: CPython's tuple free lists fill then, and objects parked on them
    # (not leaked, never freed to the allocator) would otherwise count as growth
    tracemalloc.start()
    for _ in range(3000):
        p.features(rows, text=True)
    gc.collect()
    snap0 = tracemalloc.take_snapshot()
    for _ in range(10000):
        p.features(rows, text=True)
    gc.collect()
    snap1 = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in snap1.compare_to(snap0, "filename") if s.size_diff > 0)
    assert grown < 64 * 1024, grown


def test_threads_share_one_pipeline(root):
    model = infera.Model(os.path.join(root, "examples/fraud/fraud_xgb.onnx"))
    p = infera.Pipeline(os.path.join(root, "examples/fraud/fraud_spec.json"), model=model)
    rows = fraud_rows(root, 64)
    want = [p.score(rows[i:i + 8], text=True) for i in range(0, 64, 8)]
    errors = []

    def worker(k):
        for j in range(50):
            i = (k + j) % 8
            if p.score(rows[i * 8:i * 8 + 8], text=True) != want[i]:
                errors.append((k, j))

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []
