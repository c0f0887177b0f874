"""infera.Registry: Infera's model registry from Python.

The same registry the CLI (`infera registry ...`), the servers and the
runners use -- SQLite under a home folder, or PostgreSQL -- through the C
library, so access control, audit and the checks made at registration (the
model loads, its spec fits its signature) are exactly the CLI's:

    reg = infera.Registry(home="infera-data")       # or url="postgresql://..."
    v = reg.register("fraud", "fraud.onnx", pipeline="fraud_spec.json",
                     metrics={"auc": 0.97}, training_data="s3://bucket/train.parquet")
    v = reg.register("fraud", onnx_bytes)            # a model in memory (e.g. skl2onnx output)
    reg.alias("fraud", v, "production")
    reg.show("fraud@production")["version"]
    reg.versions("fraud"); reg.lineage("fraud"); reg.list()
    model = reg.model("fraud@production")            # an infera.Model

Views are the JSON the CLI prints with --json, parsed into dicts and lists.
The handle serialises its calls (one database connection); open one per
thread for parallel use.
"""
import json
import os
import tempfile

from . import _infera


class Registry:
    """Registry(home=None, url=None, token=None, create=True)

    home: the registry folder (SQLite); url: a PostgreSQL URL; token: an API
    token when access control is on.  Unset arguments come from INFERA_HOME,
    INFERA_REGISTRY and INFERA_TOKEN like the CLI's.  create=False refuses a
    registry that does not exist yet.
    """

    def __init__(self, home=None, url=None, token=None, create=True):
        self._home = os.fspath(home) if home is not None else None
        self._url = url
        self._r = _infera._Registry(self._home, url, token, bool(create))
        info = self._r._info()
        self.location, self.principal, self.auth = info["location"], info["principal"], info["auth"]

    def register(self, name, model, pipeline=None, description=None, training_data=None, meta=None,
                 metrics=None, derived_from=None):
        """Registers model (a path, or the bytes of an ONNX model) as the next
        version of name; returns the version number.  pipeline: a spec path, a
        spec as a dict, or None."""
        with tempfile.TemporaryDirectory(prefix="infera-register-") as tmp:
            if isinstance(model, (bytes, bytearray, memoryview)):
                path = os.path.join(tmp, name + ".onnx")
                with open(path, "wb") as f:
                    f.write(model)
            else:
                path = os.fspath(model)
            if isinstance(pipeline, dict):
                spec_path = os.path.join(tmp, name + "_spec.json")
                with open(spec_path, "w", encoding="utf-8") as f:
                    json.dump(pipeline, f)
                pipeline = spec_path
            elif pipeline is not None:
                pipeline = os.fspath(pipeline)
            return self._r._register(name, path, pipeline, description, training_data, meta, metrics,
                                     derived_from)

    def show(self, ref):
        """The version ref resolves to (NAME, NAME@VERSION or NAME@ALIAS) with its
        signature, metrics, aliases and lineage, as a dict."""
        return json.loads(self._r._show_json(ref))

    def versions(self, name):
        """Every version of name, oldest first."""
        return json.loads(self._r._versions_json(name))

    def list(self):
        """Every model with its latest version and aliases."""
        return json.loads(self._r._list_json())

    def lineage(self, ref):
        """Training data -> version(s) -> the jobs and servers that used them."""
        return json.loads(self._r._lineage_json(ref))

    def resolve(self, ref):
        """{name, version, alias, sha256, artifact_path, pipeline} of ref."""
        return self._r.resolve(ref)

    def alias(self, name, version, alias, protect=None):
        """Points name@alias at version (audited; moving a protected alias needs an approver)."""
        self._r._alias_set(name, int(version), alias, -1 if protect is None else int(bool(protect)))

    def unalias(self, name, alias):
        self._r._alias_remove(name, alias)

    def model(self, ref, threads=1):
        """An infera.Model loaded from ref through this registry (its SHA-256 checked)."""
        return _infera.Model(ref, threads=threads, home=self._home, url=self._url)

    def __repr__(self):
        return "infera.Registry(%r)" % self.location
