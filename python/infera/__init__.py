"""Infera for Python: the same C engine and pipeline as the CLI and servers.

    import infera
    m = infera.Model("tests/models/mlp.onnx")          # or "fraud@production"
    y = m.run({"x": numpy_array})                     # {"output name": ndarray}

See docs/python.md.  Errors are raised as infera.Error (a RuntimeError)
carrying Infera's message.
"""
from ._infera import Error, Model, _Pipeline, version as _c_version
from .pipeline import Pipeline

__version__ = _c_version

__all__ = ["Error", "Model", "Pipeline", "__version__"]
