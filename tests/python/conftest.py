"""Shared fixtures of the Python package tests: where the repository, the
`infera` CLI and the built extension are.  tests/python/run.sh builds the
extension into a temporary directory and puts it first on sys.path
(INFERA_PY_PATH); INFERA_CLI names the CLI of the same build."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if os.environ.get("INFERA_PY_PATH"):
    sys.path.insert(0, os.environ["INFERA_PY_PATH"])
else:
    sys.path.insert(0, os.path.join(ROOT, "python"))


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("INFERA_CLI", os.path.join(ROOT, "build", "infera"))
    if not os.access(path, os.X_OK):
        pytest.fail("the infera CLI is not built: %s" % path)
    return path
