#!/usr/bin/python3
"""test_grpc.py -- `infera serve --grpc-port` spoken to with a real gRPC client.

    test_grpc.py INFERA SOURCE_DIR

The client is Debian's python3-grpcio with stubs generated at test time by
python3-grpc-tools from the repository's proto/kserve_v2.proto (into a temp
dir), so the server is checked against the .proto it claims to serve.
Checks, each against something the server did not compute itself:
  * every method: ServerLive/Ready, ServerMetadata, ModelReady, ModelMetadata
    (equal to HTTP GET /v2/models/{name}), ModelInfer, ModelStreamInfer,
    RepositoryIndex/ModelLoad/ModelUnload (index equal to HTTP's);
  * the fraud model's probabilities through JSON HTTP, binary-extension HTTP,
    gRPC typed contents and gRPC raw_input_contents are identical to each
    other and equal XGBoost's own (examples/fraud/sample_probabilities.npy,
    written by XGBoost, the oracle);
  * FP32 and BYTES identity models: every value comes back as sent (typed and
    raw, NaN/Inf included);
  * errors: the gRPC status code and the same message the HTTP endpoint gives
    for the same bad request; NOT_FOUND, UNIMPLEMENTED;
  * 10,000 ModelStreamInfer requests come back in order, each with its own
    answer; an error inside the stream is an error_message and the stream
    goes on;
  * malformed protobuf bytes -> INVALID_ARGUMENT, a message over
    --max-body-bytes -> RESOURCE_EXHAUSTED, while calls in parallel go on;
  * bearer-token auth in `authorization` metadata (registry tokens):
    UNAUTHENTICATED / PERMISSION_DENIED / OK, as HTTP's 401 / 403 / 200;
  * /metrics counts gRPC calls by method and status code.
Exits 77 (skip) when grpcio or grpc_tools is missing.
"""
import atexit
import hashlib
import json
import math
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

try:
    import grpc
    import numpy as np
    from grpc_tools import protoc
except ImportError as e:  # pragma: no cover
    print("SKIP: %s (apt-get install python3-grpcio python3-grpc-tools python3-numpy)" % e)
    sys.exit(77)

INFERA, SRC = sys.argv[1], sys.argv[2]
TMP = tempfile.mkdtemp(prefix="infera-grpc-test-")
FAILS = []


def check(what, ok, detail=None):
    ok = bool(ok)
    print("%s %s%s" % ("ok  " if ok else "FAIL", what, "" if ok or detail is None else ": " + str(detail)))
    if not ok:
        FAILS.append(what)


# ---- stubs from the repository's .proto ------------------------------------------------
rc = protoc.main(["protoc", "-I" + os.path.join(SRC, "proto"), "--python_out=" + TMP, "--grpc_python_out=" + TMP,
                  os.path.join(SRC, "proto", "kserve_v2.proto")])
if rc != 0:
    print("FAIL: grpc_tools could not compile proto/kserve_v2.proto")
    sys.exit(1)
sys.path.insert(0, TMP)
import kserve_v2_pb2 as pb  # noqa: E402
import kserve_v2_pb2_grpc as pbg  # noqa: E402


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


SERVERS = []


def stop_servers():
    for p in SERVERS:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


atexit.register(stop_servers)


def start_server(args, env=None):
    gport = free_port()
    log = open(os.path.join(TMP, "server%d.log" % len(SERVERS)), "w+")
    p = subprocess.Popen([INFERA, "serve", "--port", "0", "--grpc-port", str(gport)] + args, stderr=log,
                         stdout=subprocess.DEVNULL, env=env)
    SERVERS.append(p)
    http = None
    for _ in range(200):
        log.seek(0)
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", log.read())
        if m:
            http = "http://127.0.0.1:%s" % m.group(1)
            break
        if p.poll() is not None:
            break
        time.sleep(0.05)
    if not http:
        log.seek(0)
        print("FAIL: server did not start:\n" + log.read())
        finish(1)
    ch = grpc.insecure_channel("127.0.0.1:%d" % gport)
    grpc.channel_ready_future(ch).result(timeout=10)
    return p, http, ch


def finish(code):
    stop_servers()
    for i, p in enumerate(SERVERS):
        if p.returncode not in (0, -15):
            print("FAIL: server %d exited with %s" % (i, p.returncode))
            code = 1
    if code == 0:
        shutil.rmtree(TMP, ignore_errors=True)
    else:
        print("logs kept in " + TMP)
    sys.exit(code)


def http_req(url, body=None, headers=None):
    req = urllib.request.Request(url, data=body, headers=headers or {}, method="POST" if body is not None else "GET")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read(), dict(e.headers)


def rpc_error(fn, *a, **kw):
    try:
        fn(*a, **kw)
        return None, None
    except grpc.RpcError as e:
        return e.code(), e.details()


# ---- servers ---------------------------------------------------------------------------
models = os.path.join(SRC, "tests", "serve", "models")
FRAUD = os.path.join(SRC, "examples", "fraud", "fraud_xgb.onnx")
proc, HTTP, ch = start_server(["--model", "fraud=" + FRAUD, "--model", "idf=" + os.path.join(models, "id_fp32.onnx"),
                               "--model", "idb=" + os.path.join(models, "id_bytes.onnx"),
                               "--max-body-bytes", "65536"])
stub = pbg.GRPCInferenceServiceStub(ch)

# ---- health and metadata ---------------------------------------------------------------
check("ServerLive", stub.ServerLive(pb.ServerLiveRequest()).live is True)
check("ServerReady", stub.ServerReady(pb.ServerReadyRequest()).ready is True)
meta = stub.ServerMetadata(pb.ServerMetadataRequest())
hs, hb, _ = http_req(HTTP + "/v2")
hmeta = json.loads(hb)
check("ServerMetadata equals GET /v2", meta.name == hmeta["name"] and meta.version == hmeta["version"] and
      list(meta.extensions) == hmeta["extensions"], (meta, hmeta))
check("ModelReady fraud", stub.ModelReady(pb.ModelReadyRequest(name="fraud")).ready is True)
check("ModelReady unknown model -> ready false",
      stub.ModelReady(pb.ModelReadyRequest(name="nope")).ready is False)
for name in ("fraud", "idf", "idb"):
    md = stub.ModelMetadata(pb.ModelMetadataRequest(name=name))
    _, hb, _ = http_req(HTTP + "/v2/models/" + name)
    h = json.loads(hb)

    def tens(ts):
        return [(t.name, t.datatype, list(t.shape)) for t in ts]

    def htens(ts):
        return [(t["name"], t["datatype"], t["shape"]) for t in ts]

    check("ModelMetadata %s equals GET /v2/models/%s" % (name, name),
          md.name == h["name"] and list(md.versions) == h["versions"] and md.platform == h["platform"] and
          tens(md.inputs) == htens(h["inputs"]) and tens(md.outputs) == htens(h["outputs"]), (md, h))
cfg = stub.ModelConfig(pb.ModelConfigRequest(name="fraud")).config
check("ModelConfig fraud: batched (max_batch_size 64), dims without the batch dimension, Triton data types",
      cfg.name == "fraud" and cfg.max_batch_size == 64 and
      [(i.name, i.data_type, list(i.dims)) for i in cfg.input] == [("input", pb.TYPE_FP32, [12])] and
      [(o.name, o.data_type, list(o.dims)) for o in cfg.output] ==
      [("label", pb.TYPE_INT64, []), ("probabilities", pb.TYPE_FP32, [2])], cfg)
code, _ = rpc_error(stub.ModelConfig, pb.ModelConfigRequest(name="nope"))
check("ModelConfig unknown -> NOT_FOUND", code == grpc.StatusCode.NOT_FOUND, code)
code, msg = rpc_error(stub.ModelMetadata, pb.ModelMetadataRequest(name="nope"))
hs, hb, _ = http_req(HTTP + "/v2/models/nope")
check("ModelMetadata unknown -> NOT_FOUND with HTTP's message", code == grpc.StatusCode.NOT_FOUND and
      hs == 404 and msg == json.loads(hb)["error"], (code, msg, hb))

# ---- inference: JSON, binary HTTP, gRPC typed and raw give the oracle's answer ----------
X = np.load(os.path.join(SRC, "examples", "fraud", "sample_features.npy")).astype(np.float32)
P = np.load(os.path.join(SRC, "examples", "fraud", "sample_probabilities.npy")).astype(np.float32)
N = min(len(X), 64)
x = X[:N]


def grpc_typed(name, arr, dtype="FP32", inp="input", outputs=()):
    req = pb.ModelInferRequest(model_name=name, id="typed")
    t = req.inputs.add()
    t.name, t.datatype = inp, dtype
    t.shape.extend(arr.shape)
    if dtype == "BYTES":
        t.contents.bytes_contents.extend(arr.ravel().tolist())
    else:
        t.contents.fp32_contents.extend(arr.ravel().tolist())
    for o in outputs:
        req.outputs.add().name = o
    return req


def grpc_raw(name, arr, dtype="FP32", inp="input"):
    req = pb.ModelInferRequest(model_name=name)
    t = req.inputs.add()
    t.name, t.datatype = inp, dtype
    t.shape.extend(arr.shape)
    if dtype == "BYTES":
        req.raw_input_contents.append(b"".join(struct.pack("<I", len(e)) + e for e in arr.ravel().tolist()))
    else:
        req.raw_input_contents.append(arr.tobytes())
    return req


def out_of(resp, name):
    for i, o in enumerate(resp.outputs):
        if o.name != name:
            continue
        shape = tuple(o.shape)
        if resp.raw_output_contents:
            raw = resp.raw_output_contents[i]
            if o.datatype == "BYTES":
                vals, off = [], 0
                while off < len(raw):
                    (n,) = struct.unpack_from("<I", raw, off)
                    vals.append(raw[off + 4:off + 4 + n])
                    off += 4 + n
                return np.array(vals, dtype=object).reshape(shape)
            dt = {"FP32": np.float32, "INT64": np.int64}[o.datatype]
            return np.frombuffer(raw, dtype=dt).reshape(shape)
        c = o.contents
        if o.datatype == "FP32":
            return np.array(c.fp32_contents, dtype=np.float32).reshape(shape)
        if o.datatype == "INT64":
            return np.array(c.int64_contents, dtype=np.int64).reshape(shape)
        if o.datatype == "BYTES":
            return np.array(list(c.bytes_contents), dtype=object).reshape(shape)
    raise KeyError(name)


r_typed = stub.ModelInfer(grpc_typed("fraud", x))
r_raw = stub.ModelInfer(grpc_raw("fraud", x))
# a file model's version is its lineage stamp, sha256:<first 12 hex of the file's SHA-256> (hashlib: the oracle)
with open(FRAUD, "rb") as f:
    FRAUD_VERSION = "sha256:" + hashlib.sha256(f.read()).hexdigest()[:12]
check("ModelInfer echoes id and names the model", r_typed.id == "typed" and r_typed.model_name == "fraud" and
      r_typed.model_version == FRAUD_VERSION, (r_typed.id, r_typed.model_version))
check("typed request -> typed contents, raw request -> raw_output_contents",
      not r_typed.raw_output_contents and len(r_raw.raw_output_contents) == 2)
p_typed, p_raw = out_of(r_typed, "probabilities"), out_of(r_raw, "probabilities")
body = json.dumps({"inputs": [{"name": "input", "shape": list(x.shape), "datatype": "FP32",
                               "data": [float(v) if not math.isnan(v) else "NaN" for v in x.ravel()]}]})
body = body.replace('"NaN"', "NaN")
hs, hb, _ = http_req(HTTP + "/v2/models/fraud/infer", body.encode(), {"Content-Type": "application/json"})
hj = json.loads(hb)
p_json = np.array([o for o in hj["outputs"] if o["name"] == "probabilities"][0]["data"], dtype=np.float32).reshape(N, 2)
hdr = json.dumps({"inputs": [{"name": "input", "shape": list(x.shape), "datatype": "FP32",
                              "parameters": {"binary_data_size": x.nbytes}}],
                  "outputs": [{"name": "probabilities", "parameters": {"binary_data": True}}]}).encode()
hs2, hb2, hh2 = http_req(HTTP + "/v2/models/fraud/infer", hdr + x.tobytes(),
                         {"Inference-Header-Content-Length": str(len(hdr)),
                          "Content-Type": "application/octet-stream"})
jl = int(hh2.get("Inference-Header-Content-Length", 0))
p_bin = np.frombuffer(hb2[jl:], dtype=np.float32).reshape(N, 2)
check("HTTP JSON and binary answered 200", hs == 200 and hs2 == 200, (hs, hs2))
check("gRPC typed == gRPC raw == HTTP JSON == HTTP binary (bit for bit)",
      p_typed.tobytes() == p_raw.tobytes() == p_json.tobytes() == p_bin.tobytes())
check("fraud probabilities equal XGBoost's own (oracle, |d| <= 1e-6)",
      np.max(np.abs(p_typed - P[:N])) <= 1e-6, np.max(np.abs(p_typed - P[:N])))
lab = out_of(r_typed, "label")
check("fraud label = argmax of XGBoost's probabilities", (lab == (P[:N, 1] > 0.5)).all())
r_dl = stub.ModelInfer(grpc_raw("fraud", x), timeout=10)  # a client deadline becomes the queue timeout
check("a call with a client deadline is answered", out_of(r_dl, "probabilities").tobytes() == p_raw.tobytes())
r_one = stub.ModelInfer(grpc_typed("fraud", x, outputs=("probabilities",)))
check("requested outputs only", [o.name for o in r_one.outputs] == ["probabilities"])

# identity models: values come back as sent
v = np.array([[0.5, -0.0, float("nan")], [float("inf"), -float("inf"), 3.4e38]], dtype=np.float32)
for kind, req in (("typed", grpc_typed("idf", v, inp="x")), ("raw", grpc_raw("idf", v, inp="x"))):
    y = out_of(stub.ModelInfer(req), "y")
    check("FP32 identity (%s): NaN, -0, infinities and 3.4e38 come back bit for bit" % kind,
          y.tobytes() == v.tobytes())
s = np.array([[b"a", "\u00e9t\u00e9".encode(), b""], [b"\xff\xfe", b"x" * 300, b"z"]], dtype=object)
for kind, req in (("typed", grpc_typed("idb", s, "BYTES", inp="x")), ("raw", grpc_raw("idb", s, "BYTES", inp="x"))):
    y = out_of(stub.ModelInfer(req), "y")
    check("BYTES identity (%s): every element as sent (non-UTF-8 included)" % kind,
          y.shape == s.shape and list(y.ravel()) == list(s.ravel()), y)

# ---- errors: gRPC code and HTTP's message ------------------------------------------------


def same_error(what, req, json_body, want_code):
    code, msg = rpc_error(stub.ModelInfer, req)
    hs, hb, _ = http_req(HTTP + "/v2/models/%s/infer" % req.model_name, json.dumps(json_body).encode())
    try:
        hmsg = json.loads(hb)["error"]
    except Exception:
        hmsg = hb
    check("%s -> %s with the HTTP message" % (what, want_code.name), code == want_code and msg == hmsg,
          (code, msg, hs, hmsg))


bad_dtype = pb.ModelInferRequest(model_name="fraud")
t = bad_dtype.inputs.add()
t.name, t.datatype = "input", "INT32"
t.shape.extend([1, 12])
t.contents.int_contents.extend([1] * 12)
same_error("wrong datatype", bad_dtype,
           {"inputs": [{"name": "input", "datatype": "INT32", "shape": [1, 12], "data": [1] * 12}]},
           grpc.StatusCode.INVALID_ARGUMENT)
same_error("wrong shape", grpc_typed("fraud", np.zeros((1, 11), np.float32)),
           {"inputs": [{"name": "input", "datatype": "FP32", "shape": [1, 11], "data": [0] * 11}]},
           grpc.StatusCode.INVALID_ARGUMENT)
same_error("unknown input", grpc_typed("fraud", np.zeros((1, 12), np.float32), inp="nope"),
           {"inputs": [{"name": "nope", "datatype": "FP32", "shape": [1, 12], "data": [0] * 12}]},
           grpc.StatusCode.INVALID_ARGUMENT)
same_error("too few elements", pb.ModelInferRequest(model_name="fraud", inputs=[pb.ModelInferRequest.InferInputTensor(
    name="input", datatype="FP32", shape=[2, 12], contents=pb.InferTensorContents(fp32_contents=[0] * 12))]),
           {"inputs": [{"name": "input", "datatype": "FP32", "shape": [2, 12], "data": [0] * 12}]},
           grpc.StatusCode.INVALID_ARGUMENT)
same_error("unknown model", grpc_typed("nope", np.zeros((1, 12), np.float32)),
           {"inputs": [{"name": "input", "datatype": "FP32", "shape": [1, 12], "data": [0] * 12}]},
           grpc.StatusCode.NOT_FOUND)
same_error("BYTES element with a NUL", grpc_typed("idb", np.array([[b"a\0b", b"", b""]], dtype=object), "BYTES",
                                                  inp="x"),
           {"inputs": [{"name": "x", "datatype": "BYTES", "shape": [1, 3], "data": ["a\u0000b", "", ""]}]},
           grpc.StatusCode.INVALID_ARGUMENT)
raw_short = grpc_raw("fraud", np.zeros((1, 12), np.float32))
raw_short.raw_input_contents[0] = b"\0" * 40
code, msg = rpc_error(stub.ModelInfer, raw_short)
check("raw_input_contents of the wrong size -> INVALID_ARGUMENT naming the input and sizes",
      code == grpc.StatusCode.INVALID_ARGUMENT and "input 'input'" in msg and "40" in msg and "48" in msg, msg)
code, msg = rpc_error(ch.unary_unary("/inference.GRPCInferenceService/ModelStatistics",
                                     request_serializer=lambda b: b, response_deserializer=lambda b: b), b"")
check("a method the server does not have -> UNIMPLEMENTED", code == grpc.StatusCode.UNIMPLEMENTED, code)

# ---- malformed and oversized messages, with calls in parallel ---------------------------
raw_infer = ch.unary_unary("/inference.GRPCInferenceService/ModelInfer", request_serializer=lambda b: b,
                           response_deserializer=lambda b: b)
good = grpc_typed("fraud", x[:1])
stop = threading.Event()
parallel = {"ok": 0, "bad": 0}


def hammer():
    while not stop.is_set():
        try:
            r = stub.ModelInfer(good)
            ok = out_of(r, "probabilities").tobytes() == p_typed[:1].tobytes()
            parallel["ok" if ok else "bad"] += 1
        except grpc.RpcError:
            parallel["bad"] += 1


th = threading.Thread(target=hammer)
th.start()
junk = [b"\xff\xff\xff\xff", b"\x0a\xff\xff\xff\xff\x0f", b"\x2a\x05\x0a\x03abc\x2a", bytes(range(256)) * 4]
codes = [rpc_error(raw_infer, j)[0] for j in junk]
check("malformed protobuf -> INVALID_ARGUMENT (%d cases)" % len(junk),
      all(c == grpc.StatusCode.INVALID_ARGUMENT for c in codes), codes)
code, msg = rpc_error(raw_infer, grpc_raw("fraud", np.zeros((2000, 12), np.float32)).SerializeToString())
check("a message over --max-body-bytes (96 KB > 64 KiB) -> RESOURCE_EXHAUSTED",
      code == grpc.StatusCode.RESOURCE_EXHAUSTED, (code, msg))
time.sleep(0.2)
stop.set()
th.join()
check("calls in parallel all answered correctly (%d)" % parallel["ok"], parallel["ok"] > 0 and parallel["bad"] == 0,
      parallel)
check("the server is still live", stub.ServerLive(pb.ServerLiveRequest()).live)

# ---- ModelStreamInfer: 10,000 requests, in order -----------------------------------------
STREAM_N = 10000
rows = [grpc_raw("fraud", X[i % len(X)][None, :]) for i in range(len(X))]
for i, r in enumerate(rows):
    r.id = ""


def gen():
    for i in range(STREAM_N):
        r = rows[i % len(rows)]
        r.id = str(i)
        yield r
        if i == 5000:  # an error in the middle: an error_message, and the stream goes on
            yield pb.ModelInferRequest(model_name="nope", id="err")


t0 = time.time()
got, order_ok, values_ok, err_seen = 0, True, True, None
for resp in stub.ModelStreamInfer(gen()):
    if resp.error_message:
        err_seen = resp.error_message
        continue
    ir = resp.infer_response
    if ir.id != str(got):
        order_ok = False
    elif got < 64 or got % 997 == 0:
        pr = out_of(ir, "probabilities")
        if np.max(np.abs(pr[0] - P[got % len(X)])) > 1e-6:
            values_ok = False
    got += 1
dt = time.time() - t0
check("stream: %d responses for %d requests (%.1f s)" % (got, STREAM_N, dt), got == STREAM_N)
check("stream: responses in request order (ids 0..9999)", order_ok)
check("stream: each response is its own row's answer (XGBoost oracle)", values_ok)
check("stream: an unknown model inside the stream is an error_message and the stream goes on",
      err_seen == "unknown model 'nope'", err_seen)

# ---- repository ------------------------------------------------------------------------
idx = stub.RepositoryIndex(pb.RepositoryIndexRequest())
hs, hb, _ = http_req(HTTP + "/v2/repository/index", b"{}")
hidx = json.loads(hb)
check("RepositoryIndex equals POST /v2/repository/index",
      [(m.name, m.version, m.state) for m in idx.models] ==
      [(m["name"], m.get("version", ""), m["state"]) for m in hidx], (idx, hidx))
stub.RepositoryModelUnload(pb.RepositoryModelUnloadRequest(model_name="idf"))
check("RepositoryModelUnload -> the model is not ready",
      stub.ModelReady(pb.ModelReadyRequest(name="idf")).ready is False)
code, _ = rpc_error(stub.ModelInfer, grpc_typed("idf", v, inp="x"))
check("inference on an unloaded model -> NOT_FOUND", code == grpc.StatusCode.NOT_FOUND, code)
stub.RepositoryModelLoad(pb.RepositoryModelLoadRequest(model_name="idf"))
check("RepositoryModelLoad -> ready again and answering",
      stub.ModelReady(pb.ModelReadyRequest(name="idf")).ready is True and
      out_of(stub.ModelInfer(grpc_raw("idf", v, inp="x")), "y").tobytes() == v.tobytes())
code, msg = rpc_error(stub.RepositoryModelUnload, pb.RepositoryModelUnloadRequest(model_name="nope"))
check("RepositoryModelUnload of an unknown model -> NOT_FOUND", code == grpc.StatusCode.NOT_FOUND, (code, msg))

# ---- metrics ---------------------------------------------------------------------------
_, mb, _ = http_req(HTTP + "/metrics")
mt = mb.decode()
m = re.search(r'infera_grpc_calls_total\{protocol="grpc",method="ModelStreamInfer",code="OK"\} (\d+)', mt)
check("/metrics counts stream messages by method and code", m and int(m.group(1)) >= STREAM_N, m)
check("/metrics counts refused calls (INVALID_ARGUMENT)",
      re.search(r'method="ModelInfer",code="INVALID_ARGUMENT"\} \d+', mt) is not None)

# ---- auth: bearer token in metadata -------------------------------------------------------
home = os.path.join(TMP, "home")
env = dict(os.environ, INFERA_HOME=home)
env.pop("INFERA_TOKEN", None)
env.pop("INFERA_REGISTRY", None)


def cli(*a, token=None):
    e = dict(env)
    if token:
        e["INFERA_TOKEN"] = token
    return subprocess.run([INFERA] + list(a), env=e, capture_output=True, text=True, check=True).stdout


cli("registry", "register", "fraud", FRAUD)
admin = cli("registry", "token", "create", "alice", "--role", "admin").strip().splitlines()[-1]
bob = cli("registry", "token", "create", "bob", "--role", "predictor", "--model", "fraud",
          token=admin).strip().splitlines()[-1]
eve = cli("registry", "token", "create", "eve", "--role", "viewer", token=admin).strip().splitlines()[-1]
proc2, HTTP2, ch2 = start_server(["--model", "fraud", "--home", home, "--auth-cache-secs", "0"],
                             env=dict(env, INFERA_TOKEN=admin))
stub2 = pbg.GRPCInferenceServiceStub(ch2)
req = grpc_raw("fraud", x[:1])
results = {}
for who, tok in (("none", None), ("bogus", "inf_bogus"), ("viewer", eve), ("predictor", bob)):
    md = [("authorization", "Bearer " + tok)] if tok else []
    code, msg = rpc_error(stub2.ModelInfer, req, metadata=md)
    hdr = {"Authorization": "Bearer " + tok} if tok else {}
    hs, hb, _ = http_req(HTTP2 + "/v2/models/fraud/infer",
                         json.dumps({"inputs": [{"name": "input", "datatype": "FP32", "shape": [1, 12],
                                                 "data": [0] * 12}]}).encode(), hdr)
    results[who] = (code, hs, msg)
check("auth: no token -> UNAUTHENTICATED (HTTP 401)", results["none"][:2] == (grpc.StatusCode.UNAUTHENTICATED, 401),
      results["none"])
check("auth: unknown token -> UNAUTHENTICATED (HTTP 401)",
      results["bogus"][:2] == (grpc.StatusCode.UNAUTHENTICATED, 401), results["bogus"])
check("auth: viewer -> PERMISSION_DENIED (HTTP 403)",
      results["viewer"][:2] == (grpc.StatusCode.PERMISSION_DENIED, 403), results["viewer"])
check("auth: predictor -> OK (HTTP 200)", results["predictor"][:2] == (None, 200), results["predictor"])
check("auth: health stays open", stub2.ServerLive(pb.ServerLiveRequest()).live)
code, _ = rpc_error(stub2.RepositoryModelUnload, pb.RepositoryModelUnloadRequest(model_name="fraud"),
                    metadata=[("authorization", "Bearer " + bob)])
check("auth: a predictor may not unload -> PERMISSION_DENIED", code == grpc.StatusCode.PERMISSION_DENIED, code)
# bob's one gRPC and one HTTP prediction (1 row each) are audited as bob's rows (flushed by the drain)
stub2.ModelInfer(grpc_raw("fraud", x[:3]), metadata=[("authorization", "Bearer " + bob)])
proc2.terminate()
proc2.wait(timeout=30)
audit = cli("registry", "audit", "--model", "fraud", token=admin)
bob_rows = sum(int(m) for m in re.findall(r' bob +predict +fraud@\d+ +ok.*?"rows":(\d+)', audit))
check("audit: bob's gRPC and HTTP predictions recorded as his rows (1 + 3 gRPC + 1 HTTP = 5)", bob_rows == 5,
      audit)
check("audit: the viewer's gRPC and HTTP denials recorded", len(re.findall(r"eve +serve +fraud +denied", audit)) >= 2,
      audit)

# ---- SIGTERM: an idle open stream does not hold the drain ---------------------------------
release = threading.Event()


def one_then_wait():
    yield grpc_raw("fraud", x[:1])
    release.wait(30)


it = stub.ModelStreamInfer(one_then_wait())
first = next(it)
t0 = time.time()
proc.terminate()
try:
    rc = proc.wait(timeout=15)
except subprocess.TimeoutExpired:
    rc = None
release.set()
check("SIGTERM with an idle stream open: the server exits 0 within seconds (%.1f s)" % (time.time() - t0),
      first.infer_response.model_name == "fraud" and rc == 0 and time.time() - t0 < 10, rc)

print("%d failure(s)" % len(FAILS))
finish(1 if FAILS else 0)
