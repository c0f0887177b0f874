"""Build of the `infera` Python package: a CPython extension (_infera) over
libinfera and libinfera_runtime.

The C libraries come from the CMake build: by default ../build (this
repository's `scripts/build.sh release`), or the directory named by
INFERA_BUILD_DIR (where libinfera.so and libinfera_runtime.so are), with the
headers from INFERA_INCLUDE_DIR (default ../include).  The extension records
the library directory as its rpath, so no LD_LIBRARY_PATH is needed.

    scripts/build.sh release
    /usr/bin/python3 -m pip install --no-build-isolation ./python
    # or, for tests:  cd python && /usr/bin/python3 setup.py build_ext --inplace
"""
import os

import numpy
from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.path.abspath(os.environ.get("INFERA_BUILD_DIR", os.path.join(ROOT, "build")))
INCLUDE = os.path.abspath(os.environ.get("INFERA_INCLUDE_DIR", os.path.join(ROOT, "include")))


def c_version():
    """The C library's version, read from include/infera/infera.h."""
    with open(os.path.join(INCLUDE, "infera", "infera.h"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("#define INFERA_VERSION_STRING"):
                return line.split('"')[1]
    raise RuntimeError("INFERA_VERSION_STRING not found in infera.h")


extension = Extension(
    "infera._infera",
    sources=[os.path.join("src", n) for n in ("module.c", "model.c", "pipeline.c", "registry.c", "fit.c")],
    include_dirs=[INCLUDE, numpy.get_include()],
    library_dirs=[BUILD],
    runtime_library_dirs=[BUILD],
    libraries=["infera_runtime", "infera"],
    extra_compile_args=["-std=c11", "-Wall", "-Wextra", "-Wno-missing-field-initializers",
                        "-Wno-cast-function-type"],
)

setup(
    name="infera",
    version=c_version(),
    description="Infera inference engine and pipeline for Python (numpy; pandas optional)",
    packages=["infera"],
    package_data={"infera": ["py.typed", "*.pyi"]},
    ext_modules=[extension],
    python_requires=">=3.9",
)
