"""infera.Model against `infera run` (the CLI of the same build, whose own
outputs are checked against ONNX Runtime / PyTorch / XGBoost by the
conformance suite and tests/models/check_outputs.py): bit for bit, plus
metadata, errors, zero-copy/conversion of inputs, threads, leaks."""
import os
import subprocess
import threading
import tracemalloc

import numpy as np
import pytest

import infera


def cli_run(cli, model, inputs, tmp_path):
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    args = [cli, "run", model, "--output-dir", str(out)]
    for name, arr in inputs.items():
        p = tmp_path / ("in_%s.npy" % name)
        np.save(p, arr)
        args += ["--input", "%s=%s" % (name, p)]
    subprocess.run(args, check=True, capture_output=True)
    return {f[:-4]: np.load(out / f) for f in os.listdir(out) if f.endswith(".npy")}


CASES = [
    ("tests/models/mlp.onnx", "tests/models/mlp_input.npy"),
    ("tests/models/cnn.onnx", "tests/models/cnn_input.npy"),
    ("examples/fraud/fraud_xgb.onnx", "examples/fraud/sample_features.npy"),
    ("examples/fraud/fraud_xgb.json", "examples/fraud/sample_features.npy"),
]


@pytest.mark.parametrize("model,inp", CASES)
def test_run_equals_cli_bit_for_bit(root, cli, tmp_path, model, inp):
    m = infera.Model(os.path.join(root, model))
    x = np.load(os.path.join(root, inp))
    feeds = {m.inputs[0]["name"]: x}
    got = m.run(feeds)
    want = cli_run(cli, os.path.join(root, model), feeds, tmp_path)
    assert set(got) == set(want) and got
    for name in want:
        assert got[name].dtype == want[name].dtype, name
        assert got[name].shape == want[name].shape, name
        assert got[name].tobytes() == want[name].tobytes(), name


def test_metadata_and_version(root):
    m = infera.Model(os.path.join(root, "tests/models/mlp.onnx"), threads=2)
    assert m.inputs == [{"name": "input", "dtype": "float32", "shape": ["batch", 32], "kind": "tensor",
                         "optional": False}]
    assert [o["name"] for o in m.outputs] == ["logits", "probabilities"]
    hdr = open(os.path.join(root, "include/infera/infera.h")).read()
    assert '#define INFERA_VERSION_STRING "%s"' % infera.__version__ in hdr


def test_inputs_converted_when_layout_differs(root):
    m = infera.Model(os.path.join(root, "tests/models/mlp.onnx"))
    x = np.load(os.path.join(root, "tests/models/mlp_input.npy"))
    ref = m.run({"input": x})["logits"]
    # float64, Fortran order and a strided view all give the same result
    for variant in (x.astype(np.float64), np.asfortranarray(x), np.repeat(x, 2, axis=0)[::2]):
        assert m.run({"input": variant})["logits"].tobytes() == ref.tobytes()
    # outputs are copies: later runs do not change them
    m.run({"input": x * 2})
    assert m.run({"input": x})["logits"].tobytes() == ref.tobytes()


def test_errors_carry_infera_messages(root, tmp_path):
    with pytest.raises(infera.Error, match="cycle") as e:
        infera.Model(os.path.join(root, "tests/models/bad_cycle.onnx"))
    assert isinstance(e.value, RuntimeError) and e.value.status == "INF_EMODEL"
    with pytest.raises(infera.Error):
        infera.Model(str(tmp_path / "missing.onnx"))
    with pytest.raises(infera.Error):
        infera.Model("no_such_model@production", home=str(tmp_path / "reg"))
    m = infera.Model(os.path.join(root, "tests/models/mlp.onnx"))
    with pytest.raises(infera.Error, match="input"):
        m.run({"input": np.zeros((2, 31), np.float32)})      # wrong width: Infera's ESHAPE
    with pytest.raises(infera.Error, match="missing"):
        m.run({})
    with pytest.raises(infera.Error):
        m.run({"input": np.zeros((1, 32), np.float32), "other": np.zeros(1)})
    with pytest.raises((ValueError, TypeError)):
        m.run({"input": "not numbers"})


def test_precision_bf16_equals_cli(root, cli, tmp_path):
    """precision="bf16" is the CLI's --precision bf16, bit for bit (or refused, as the CLI refuses it,
    on a CPU without AVX512_BF16); fp32 stays the default; an unknown name is a ValueError."""
    path = os.path.join(root, "tests/models/mlp.onnx")
    x = np.load(os.path.join(root, "tests/models/mlp_input.npy"))
    with pytest.raises(ValueError, match="fp32"):
        infera.Model(path, precision="int4")
    assert infera.Model(path, precision="fp32").run({"input": x})["logits"].tobytes() == \
        infera.Model(path).run({"input": x})["logits"].tobytes()
    out = tmp_path / "bf16"
    r = subprocess.run([cli, "run", path, "--input", "input=" + os.path.join(root, "tests/models/mlp_input.npy"),
                        "--output-dir", str(out), "--precision", "bf16"], capture_output=True, text=True)
    if r.returncode != 0:
        assert "AVX512_BF16" in r.stderr
        with pytest.raises(infera.Error, match="AVX512_BF16"):
            infera.Model(path, precision="bf16")
        return
    got = infera.Model(path, precision="bf16").run({"input": x})
    for name in ("logits", "probabilities"):
        assert got[name].tobytes() == np.load(out / (name + ".npy")).tobytes(), name


def test_threads_share_one_model(root):
    m = infera.Model(os.path.join(root, "tests/models/mlp.onnx"))
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal((1 + i % 5, 32)).astype(np.float32) for i in range(8)]
    want = [m.run({"input": x})["probabilities"].tobytes() for x in xs]
    errors = []

    def worker(k):
        try:
            for _ in range(200):
                i = (k * 3 + _) % len(xs)
                if m.run({"input": xs[i]})["probabilities"].tobytes() != want[i]:
                    errors.append("mismatch")
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(repr(exc))

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_no_leaks_over_10000_runs(root):
    m = infera.Model(os.path.join(root, "examples/fraud/fraud_xgb.onnx"))
    x = np.load(os.path.join(root, "examples/fraud/sample_features.npy"))[:1].astype(np.float32)
    for _ in range(200):
        m.run({"input": x})
    tracemalloc.start()
    rss0 = rss_kib()
    snap0 = tracemalloc.take_snapshot()
    for _ in range(10000):
        m.run({"input": x})
    snap1 = tracemalloc.take_snapshot()
    rss1 = rss_kib()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in snap1.compare_to(snap0, "filename") if s.size_diff > 0)
    assert grown < 64 * 1024, grown           # Python objects
    if not os.environ.get("INFERA_PY_SANITIZED"):  # ASan's quarantine holds freed memory: RSS grows
        assert rss1 - rss0 < 1024, (rss0, rss1)   # C memory: under 1 MiB over 10,000 runs
