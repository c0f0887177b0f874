"""infera.Registry: register from a path and from in-memory ONNX bytes, show,
versions, aliases, lineage and models loaded through it -- checked against
the CLI's view of the same registry (`infera registry ... --json`) and
against the file's own SHA-256 (hashlib, the oracle for the artifact digest)."""
import hashlib
import json
import os
import subprocess

import numpy as np
import pytest

import infera


def cli_json(cli, home, *args):
    env = dict(os.environ, INFERA_HOME=home)
    env.pop("INFERA_REGISTRY", None)
    out = subprocess.run([cli, "registry", *args, "--json"], env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def test_register_show_alias_lineage(cli, root, tmp_path):
    home = str(tmp_path / "reg")
    reg = infera.Registry(home=home)
    mlp = os.path.join(root, "tests/models/mlp.onnx")
    v1 = reg.register("mlp", mlp, description="first", metrics={"auc": 0.91}, meta={"owner": "py"},
                      training_data="file:train.csv")
    with open(mlp, "rb") as f:
        data = f.read()
    v2 = reg.register("mlp", data, derived_from="mlp@1")  # bytes: e.g. what skl2onnx returns
    assert (v1, v2) == (1, 2)
    shown = reg.show("mlp@2")
    assert shown == cli_json(cli, home, "show", "mlp@2")
    assert reg.resolve("mlp@1")["sha256"] == hashlib.sha256(data).hexdigest()
    assert [v["version"] for v in reg.versions("mlp")] == [1, 2] or \
        [v["version"] for v in reg.versions("mlp")["versions"]] == [1, 2]
    reg.alias("mlp", 1, "production")
    assert reg.resolve("mlp@production")["version"] == 1
    x = np.load(os.path.join(root, "tests/models/mlp_input.npy"))
    want = infera.Model(mlp).run({"input": x})["logits"]
    assert reg.model("mlp@production").run({"input": x})["logits"].tobytes() == want.tobytes()
    reg.unalias("mlp", "production")
    with pytest.raises(infera.Error):
        reg.resolve("mlp@production")
    lineage = reg.lineage("mlp")
    assert lineage == cli_json(cli, home, "lineage", "mlp")
    assert "file:train.csv" in json.dumps(lineage) and "mlp@1" in json.dumps(lineage)
    assert reg.list() == cli_json(cli, home, "list")


def test_register_refuses_bad_models(root, tmp_path):
    reg = infera.Registry(home=str(tmp_path / "reg"))
    with pytest.raises(infera.Error):
        reg.register("junk", b"not an onnx model")
    with pytest.raises(infera.Error):
        reg.register("mlp", os.path.join(root, "tests/models/mlp.onnx"),
                     pipeline={"inputs": {"a": {"type": "float"}}, "features": [],
                               "model_inputs": {"nope": {"order": ["a"]}}})
    assert reg.list() in ([], {"models": []}) or not reg.list()
    with pytest.raises(infera.Error):
        infera.Registry(home=str(tmp_path / "missing"), create=False)


def test_version_and_stubs_match_the_package():
    """The package's version is the C library's, and every public name has a type stub."""
    import ast
    import pathlib
    import re
    pkg = pathlib.Path(infera.__file__).parent
    header = pathlib.Path(__file__).resolve().parents[2] / "include" / "infera" / "infera.h"
    assert infera.__version__ == re.search(r'INFERA_VERSION_STRING "([^"]+)"', header.read_text()).group(1)
    stub = ast.parse((pkg / "__init__.pyi").read_text())
    stubbed = {n.name for n in stub.body if isinstance(n, ast.ClassDef)}
    assert {"Error", "Model", "Pipeline", "Registry"} <= stubbed
    for cls in ("Pipeline", "Registry"):
        node = next(n for n in stub.body if isinstance(n, ast.ClassDef) and n.name == cls)
        methods = {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
        public = {m for m in vars(getattr(infera, cls)) if not m.startswith("_") and callable(getattr(getattr(infera, cls), m))}
        assert public <= methods, (cls, public - methods)
    assert (pkg / "py.typed").exists()
