"""test_grpc_tritonclient.py -- `infera serve --grpc-port` driven by NVIDIA's own
client, PyPI tritonclient[grpc] (pinned in test_grpc_tritonclient.sh, which
runs this file in its venv): the real-world client of the KServe V2 gRPC
protocol, with its own generated stubs -- not ours.

    python test_grpc_tritonclient.py INFERA SOURCE_DIR

Checks health, metadata, the repository index, ModelInfer of the fraud model
(raw tensors, as tritonclient sends them) against XGBoost's own
probabilities (examples/fraud/sample_probabilities.npy, the oracle), BYTES
through the identity model, a ModelStreamInfer of 200 requests answered in
order, and errors surfacing as tritonclient's InferenceServerException with
the server's message.
"""
import os
import queue
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import tritonclient.grpc as tc
from tritonclient.utils import InferenceServerException

INFERA, SRC = sys.argv[1], sys.argv[2]
FAILS = []


def check(what, ok, detail=None):
    ok = bool(ok)
    print("%s %s%s" % ("ok  " if ok else "FAIL", what, "" if ok or detail is None else ": " + str(detail)))
    if not ok:
        FAILS.append(what)


import socket  # noqa: E402

s = socket.socket()
s.bind(("127.0.0.1", 0))
gport = s.getsockname()[1]
s.close()
log = tempfile.NamedTemporaryFile("w+", suffix=".log")
proc = subprocess.Popen([INFERA, "serve", "--port", "0", "--grpc-port", str(gport),
                         "--model", "fraud=" + os.path.join(SRC, "examples/fraud/fraud_xgb.onnx"),
                         "--model", "idb=" + os.path.join(SRC, "tests/serve/models/id_bytes.onnx"),
                         "--model", "llm=" + os.path.join(SRC, "tests/llm/models/austen-draft-q8_0.gguf")],
                        stderr=log, stdout=subprocess.DEVNULL)
try:
    for _ in range(200):
        log.seek(0)
        if re.search(r"listening on http://", log.read()) or proc.poll() is not None:
            break
        time.sleep(0.05)
    c = tc.InferenceServerClient("127.0.0.1:%d" % gport)
    for _ in range(100):
        try:
            if c.is_server_live():
                break
        except InferenceServerException:
            time.sleep(0.1)
    check("is_server_live / is_server_ready", c.is_server_live() and c.is_server_ready())
    check("is_model_ready(fraud), not (nope)", c.is_model_ready("fraud") and not c.is_model_ready("nope"))
    meta = c.get_server_metadata()
    check("get_server_metadata", meta.name == "infera" and "model_repository" in meta.extensions, meta)
    md = c.get_model_metadata("fraud", as_json=True)
    check("get_model_metadata", md["inputs"][0]["name"] == "input" and md["inputs"][0]["shape"] == ["-1", "12"] and
          [o["name"] for o in md["outputs"]] == ["label", "probabilities"], md)
    cfg = c.get_model_config("fraud", as_json=True)["config"]
    check("get_model_config: batched, input dims [12] FP32", cfg.get("max_batch_size") == 64 and
          cfg["input"][0]["data_type"] == "TYPE_FP32" and cfg["input"][0]["dims"] == ["12"], cfg)
    idx = c.get_model_repository_index(as_json=True)
    check("get_model_repository_index", sorted(m["name"] for m in idx["models"]) == ["fraud", "idb", "llm"], idx)
    # a GGUF language model: ready, described as platform gguf without tensors, /infer refused naming why
    lmd = c.get_model_metadata("llm", as_json=True)
    check("GGUF model: ready, metadata platform gguf, version 1, no tensors",
          c.is_model_ready("llm") and lmd.get("platform") == "gguf" and lmd.get("versions") == ["1"] and
          not lmd.get("inputs") and not lmd.get("outputs"), lmd)
    try:
        c.infer("llm", [tc.InferInput("x", [1], "FP32")])
        check("ModelInfer on a GGUF model is refused", False)
    except InferenceServerException as e:
        check("ModelInfer on a GGUF model: INVALID_ARGUMENT naming the OpenAI routes",
              "INVALID_ARGUMENT" in str(e.status()) and "GGUF language model" in e.message(), e)

    X = np.load(os.path.join(SRC, "examples/fraud/sample_features.npy")).astype(np.float32)
    P = np.load(os.path.join(SRC, "examples/fraud/sample_probabilities.npy")).astype(np.float32)
    n = min(len(X), 32)
    i = tc.InferInput("input", [n, 12], "FP32")
    i.set_data_from_numpy(X[:n])
    r = c.infer("fraud", [i], request_id="t1")
    p = r.as_numpy("probabilities")
    check("infer: probabilities equal XGBoost's own (|d| <= 1e-6)", p is not None and p.shape == (n, 2) and
          np.max(np.abs(p - P[:n])) <= 1e-6)
    check("infer: label and id", (r.as_numpy("label") == (P[:n, 1] > 0.5)).all() and r.get_response().id == "t1")
    b = np.array([[b"x", "\u00e9".encode(), b""]], dtype=object)
    i = tc.InferInput("x", [1, 3], "BYTES")
    i.set_data_from_numpy(b)
    y = c.infer("idb", [i]).as_numpy("y")
    check("infer: BYTES round trip", y is not None and y.tolist() == b.tolist(), y)

    try:
        i = tc.InferInput("input", [1, 11], "FP32")
        i.set_data_from_numpy(np.zeros((1, 11), np.float32))
        c.infer("fraud", [i])
        check("a bad shape is refused", False)
    except InferenceServerException as e:
        check("a bad shape -> INVALID_ARGUMENT with the server's message",
              "INVALID_ARGUMENT" in str(e.status()) and "shape [1,11]" in e.message(), (e.status(), e.message()))

    q = queue.Queue()
    c.start_stream(callback=lambda result, error: q.put((result, error)))
    N = 200
    for k in range(N):
        i = tc.InferInput("input", [1, 12], "FP32")
        i.set_data_from_numpy(X[k % len(X)][None])
        c.async_stream_infer("fraud", [i], request_id=str(k))
    got = []
    deadline = time.time() + 30
    while len(got) < N and time.time() < deadline:
        try:
            got.append(q.get(timeout=1))
        except queue.Empty:
            pass
    c.stop_stream()
    ids = [res.get_response().id if res else "error:%s" % err for res, err in got]
    check("stream: %d answers in request order" % N, ids == [str(k) for k in range(N)], ids[:5])
    ok = all(res is not None and np.max(np.abs(res.as_numpy("probabilities")[0] - P[k % len(X)])) <= 1e-6
             for k, (res, _) in enumerate(got))
    check("stream: each answer is its own row's (XGBoost oracle)", ok)
finally:
    proc.terminate()
    proc.wait(timeout=30)
print("%d failure(s)" % len(FAILS))
sys.exit(1 if FAILS else 0)
