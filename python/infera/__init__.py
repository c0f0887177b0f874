"""Infera for Python: the same C engine and pipeline as the CLI and servers.

    import infera
    m = infera.Model("tests/models/mlp.onnx")          # or "fraud@production"
    y = m.run({"x": numpy_array})                     # {"output name": ndarray}

    reg = infera.Registry(home="infera-data")           # register, show, alias, lineage
    import infera.dask                                  # infera.dask.score(ddf, "fraud@production")

See docs/python.md.  Errors are raised as infera.Error (a RuntimeError)
carrying Infera's message.
"""
from ._infera import Error, Model, _Pipeline, version as _c_version
from .pipeline import Pipeline
from .registry import Registry

__version__ = _c_version

__all__ = ["Error", "Model", "Pipeline", "Registry", "__version__"]
