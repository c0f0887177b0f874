#!/usr/bin/env python3
"""tests/monitor/test_monitor_infer.py -- monitoring of serve's tensor endpoint (issue 23).

A real `infera serve` (HTTP and, when the build and python3-grpcio allow, gRPC) answers /infer
requests whose input tensor is the fraud model's 12 features, computed from raw records by
`infera features` with a shifted distance from home:
  - every row is logged (--log-sample 1): the log read back has the request's id per row, the
    spec's feature names for the input columns (the served spec maps onto the tensor), the values
    sent (float32 -> float64 exactly) and the outputs the server answered (label, probabilities[j]);
  - the drift gauges on /metrics equal numpy/scipy (PSI by the formula, scipy jensenshannon,
    scipy ks_2samp) on the logged rows against the registry version's stored baseline, and those of
    the spec's outputs (fraud_score, is_fraud, decision: chi-square for the category) on the outputs
    the server answered, mapped through the spec as its records endpoint would;
  - a model served without a spec logs its columns as NAME[j] and a 10 % sample logs ~10 % of the
    rows, and the counts the server prints agree with the rows read back.
Oracles: Debian python3-numpy / python3-scipy; the values the client sent and got.
Usage: test_monitor_infer.py INFERA_BIN REPO_DIR.  Exits 77 without numpy/scipy.
"""
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

try:
    import numpy as np
    from scipy import stats
    from scipy.spatial.distance import jensenshannon
except ImportError:
    print("SKIP: needs python3-numpy and python3-scipy")
    sys.exit(77)

INFERA, SRC = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2])
TMP = tempfile.mkdtemp(prefix="infera_mon_infer_")
os.chdir(TMP)
ENV = dict(os.environ, INFERA_HOME=os.path.join(TMP, "home"))
FAILS = []
SERVERS = []


def check(what, ok, detail=None):
    print("%s %s%s" % ("ok  " if ok else "FAIL", what, "" if ok or detail is None else ": " + str(detail)[:2000]))
    if not ok:
        FAILS.append(what)


def run(*args):
    r = subprocess.run([INFERA] + list(args), env=ENV, capture_output=True, text=True)
    if r.returncode:
        print("FAIL: infera %s: %s" % (" ".join(args), r.stderr))
        finish(1)
    return r.stdout


def finish(code):
    for p, _ in SERVERS:
        if p.poll() is None:
            p.kill()
    if code == 0 and not FAILS:
        shutil.rmtree(TMP, ignore_errors=True)
    else:
        print("files kept in " + TMP)
    sys.exit(code or (1 if FAILS else 0))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start(args, logname):
    log = open(logname, "w+")
    p = subprocess.Popen([INFERA, "serve", "--port", "0"] + args, stderr=log, stdout=subprocess.DEVNULL, env=ENV)
    SERVERS.append((p, log))
    for _ in range(200):
        log.seek(0)
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", log.read())
        if m:
            return p, "http://127.0.0.1:%s" % m.group(1)
        if p.poll() is not None:
            break
        time.sleep(0.05)
    log.seek(0)
    print("FAIL: server did not start:\n" + log.read())
    finish(1)


def stop(p, logname):
    p.terminate()
    p.wait(timeout=30)
    text = open(logname).read()
    check("server exits cleanly, no sanitizer report", p.returncode in (0, -15) and
          not re.search(r"Sanitizer|runtime error", text), text[-2000:])
    return text


def post(url, body, headers=None):
    req = urllib.request.Request(url, data=body, headers=headers or {"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read()


def get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read().decode()


for f in ("fraud_spec.json", "fraud_xgb.onnx", "card_features.db", "transactions_raw.csv"):
    shutil.copy(os.path.join(SRC, "examples", "fraud", f), TMP)

# training rows for the baseline; production rows whose distance from home shifted (x4 + 30 km)
lines = open("transactions_raw.csv").read().splitlines()
head = lines[0].split(",")
dcol = head.index("distance_from_home_km")
open("train.csv", "w").write("\n".join(lines[:2501]) + "\n")
prod = [lines[0]]
for ln in lines[2501:2901]:
    v = ln.split(",")
    if v[dcol] != "":
        v[dcol] = repr(float(v[dcol]) * 4 + 30)
    prod.append(",".join(v))
open("prod.csv", "w").write("\n".join(prod) + "\n")

run("registry", "register", "fraud", "fraud_xgb.onnx", "--pipeline", "fraud_spec.json")
run("monitor", "baseline", "fraud@1", "--data", "csv:train.csv", "--register")
base = json.load(open(os.path.join(TMP, "home", "baselines", "fraud", "1.json")))
# the production features, as a client that computed them itself would send them
run("features", "--spec", "fraud_spec.json", "--input", "csv:prod.csv", "--output", "npy:prod.npy")
X = np.load("prod.npy").astype(np.float32)
spec_cols = list(base["features"].keys())
check("12 feature columns from `infera features`", X.shape[1] == 12 and len(spec_cols) == 12, (X.shape, spec_cols))

# ---- the spec-served model over HTTP (and gRPC) ------------------------------------------------
grpc_ok = False
try:
    import grpc
    from grpc_tools import protoc
    grpc_ok = protoc.main(["protoc", "-I" + os.path.join(SRC, "proto"), "--python_out=" + TMP,
                           "--grpc_python_out=" + TMP, os.path.join(SRC, "proto", "kserve_v2.proto")]) == 0
except ImportError:
    pass
gport = free_port()
args = ["--model", "fraud=fraud@1", "--log-predictions", "jsonl:log.jsonl", "--log-sample", "1",
        "--monitor-window", "86400"]
if grpc_ok:
    args += ["--grpc-port", str(gport)]
srv, url = start(args, "server1.log")

sent = {}  # record_id -> (features, label, probabilities)
n_http = 300
for r in range(n_http // 50):
    rid = "h%d" % r
    x = X[r * 50:(r + 1) * 50]
    body = {"id": rid, "inputs": [{"name": "input", "shape": list(x.shape), "datatype": "FP32",
                                    "data": x.ravel().tolist()}]}
    if r % 2:  # every other request binary: the tensor arrives as bytes
        hdr = json.dumps({"id": rid, "inputs": [{"name": "input", "shape": list(x.shape), "datatype": "FP32",
                                                  "parameters": {"binary_data_size": x.nbytes}}]}).encode()
        resp = json.loads(post(url + "/v2/models/fraud/infer", hdr + x.tobytes(),
                               {"Inference-Header-Content-Length": str(len(hdr)),
                                "Content-Type": "application/octet-stream"}))
    else:
        resp = json.loads(post(url + "/v2/models/fraud/infer", json.dumps(body).encode()))
    out = {o["name"]: np.array(o["data"]).reshape(o["shape"]) for o in resp["outputs"]}
    for k in range(len(x)):
        # the JSON's shortest float32 spelling, read back as that float32
        sent["%s[%d]" % (rid, k)] = (x[k], int(out["label"][k]), out["probabilities"][k].astype(np.float32))
n_grpc = 0
if grpc_ok:
    sys.path.insert(0, TMP)
    import kserve_v2_pb2 as pb  # noqa: E402
    import kserve_v2_pb2_grpc as pbg  # noqa: E402
    ch = grpc.insecure_channel("127.0.0.1:%d" % gport)
    grpc.channel_ready_future(ch).result(timeout=10)
    stub = pbg.GRPCInferenceServiceStub(ch)
    for r in range(2):
        rid = "g%d" % r
        x = X[n_http + r * 50:n_http + (r + 1) * 50]
        req = pb.ModelInferRequest(model_name="fraud", id=rid)
        t = req.inputs.add()
        t.name, t.datatype = "input", "FP32"
        t.shape.extend(x.shape)
        req.raw_input_contents.append(x.tobytes())
        resp = stub.ModelInfer(req)
        outs = {}
        for i, o in enumerate(resp.outputs):
            dt = np.int64 if o.datatype == "INT64" else np.float32
            outs[o.name] = np.frombuffer(resp.raw_output_contents[i], dtype=dt).reshape(list(o.shape))
        for k in range(len(x)):
            sent["%s[%d]" % (rid, k)] = (x[k], int(outs["label"][k]), outs["probabilities"][k])
        n_grpc += len(x)
    ch.close()
n_all = n_http + n_grpc
time.sleep(1.2)  # the window's drift is refreshed at most once a second
metrics = get(url + "/metrics")
check("infera_monitor_records_total counts every /infer row (HTTP %d + gRPC %d)" % (n_http, n_grpc),
      'infera_monitor_records_total{model="fraud",version="1"} %d\n' % n_all in metrics,
      re.findall(r"infera_monitor_records_total.*", metrics))
check("the drift window holds every row",
      'infera_monitor_window_rows{model="fraud",version="1"} %d\n' % n_all in metrics,
      re.findall(r"infera_monitor_window_rows.*", metrics))
text = stop(srv, "server1.log")
check("shutdown counts: every row sampled and logged, none dropped",
      "prediction log: %d records, %d sampled, %d logged, 0 dropped" % (n_all, n_all, n_all) in text,
      re.findall(r"prediction log.*", text))

log = [json.loads(ln) for ln in open("log.jsonl")]
check("the log has one row per row sent", len(log) == n_all and sorted(r["record_id"] for r in log) == sorted(sent),
      (len(log), n_all))
bad = []
for r in log:
    x, label, prob = sent[r["record_id"]]
    got = [r.get(c) for c in spec_cols]
    if (r["model_name"], r["model_version"]) != ("fraud", "1") or "card_id" in r:
        bad.append(("stamp", r))
    if got != [float(v) if np.isfinite(v) else None for v in x]:  # the float32 sent, as float64 exactly; NaN = null
        bad.append(("features", r["record_id"], got, x.tolist()))
    if r.get("label") != label or [r.get("probabilities[0]"), r.get("probabilities[1]")] != [float(p) for p in prob]:
        bad.append(("outputs", r["record_id"], r.get("label"), label, prob.tolist()))
check("every log row holds the spec-named features sent and the outputs answered", not bad, bad[:3])

# drift gauges against numpy/scipy on the logged rows
EPS = 1e-4
gauges = {}
for line in metrics.splitlines():
    m = re.match(r'infera_feature_drift\{model="fraud",version="1",feature="([^"]+)",metric="(\w+)"\} (\S+)', line)
    if m:
        gauges[(m.group(1), m.group(2))] = float(m.group(3))


def psi(e, a):
    e, a = np.maximum(e, EPS), np.maximum(a, EPS)
    return float(np.sum((a - e) * np.log(a / e)))


wrong, checked = [], 0
for k, b in base["features"].items():
    if b["type"] != "number":
        continue
    x = np.array([float(r[k]) for r in log if r.get(k) is not None])
    edges, counts = np.array(b["edges"]), np.array(b["counts"], dtype=float)
    a = np.bincount(np.searchsorted(edges, x, side="right"), minlength=len(counts)).astype(float)
    e, a = counts / counts.sum(), a / a.sum()
    want = {"psi": psi(e, a), "js": float(jensenshannon(e, a)),
            "ks": float(stats.ks_2samp(x, np.array(b["sample"])).statistic)}
    for metric, w in want.items():
        got = gauges.get((k, metric))
        checked += 1
        if got is None or abs(got - w) > 1e-5 * max(1, abs(w)):  # the gauge prints 6 digits
            wrong.append((k, metric, got, w))
check("%d drift gauges of the input columns equal numpy/scipy on the logged rows" % checked,
      checked == 36 and not wrong, wrong)
# the spec's outputs, worked out from the output tensors as the records endpoint's pipeline would
# (fraud_score = probabilities[:, 1]; is_fraud = fraud_score >= 0.5; decision = review at >= 0.8):
# the window's values are the ones the server answered
score = np.array([float(p[1]) for _, _, p in sent.values()])
outs = {"fraud_score": score, "is_fraud": (score >= 0.5).astype(float),
        "decision": np.where(score >= 0.8, "review", "approve")}
wrong, checked_out = [], 0
for k, b in base["outputs"].items():
    y = outs[k]
    if b["type"] == "number":
        edges, counts = np.array(b["edges"]), np.array(b["counts"], dtype=float)
        a = np.bincount(np.searchsorted(edges, y, side="right"), minlength=len(counts)).astype(float)
        e, a = counts / counts.sum(), a / a.sum()
        want = {"psi": psi(e, a), "js": float(jensenshannon(e, a)),
                "ks": float(stats.ks_2samp(y, np.array(b["sample"])).statistic)}
    else:
        cats = sorted(set(b["frequencies"]) | set(y.tolist()))
        e = np.array([b["frequencies"].get(c, 0) for c in cats], dtype=float)
        e /= e.sum()
        o = np.array([np.sum(y == c) for c in cats], dtype=float)
        a = o / o.sum()
        E = o.sum() * np.maximum(e, EPS)
        want = {"psi": psi(e, a), "js": float(jensenshannon(e, a)), "chi2": float(np.sum((o - E) ** 2 / E))}
    for metric, w in want.items():
        got = gauges.get((k, metric))
        checked_out += 1
        if got is None or abs(got - w) > 1e-5 * max(1, abs(w)):
            wrong.append((k, metric, got, w))
check("%d drift gauges of the spec's outputs (fraud_score, is_fraud, decision) equal numpy/scipy on the answers"
      % checked_out, checked_out == 9 and sorted(base["outputs"]) == ["decision", "fraud_score", "is_fraud"] and
      not wrong, (sorted(base["outputs"]), wrong))
check("the shifted input stands out", gauges.get(("distance_from_home_km", "psi"), 0) > 1 and
      gauges.get(("amount", "psi"), 9) < 0.1,
      (gauges.get(("distance_from_home_km", "psi")), gauges.get(("amount", "psi"))))

# ---- a model without a spec: NAME[j] columns, a 10 % sample ------------------------------------
srv, url = start(["--model", "idf=" + os.path.join(SRC, "tests", "serve", "models", "id_fp32.onnx"),
                  "--log-predictions", "jsonl:log2.jsonl", "--log-sample", "0.1"], "server2.log")
rng = np.random.default_rng(23)
Y = rng.normal(size=(1000, 3)).astype(np.float32)
for r in range(10):
    y = Y[r * 100:(r + 1) * 100]
    post(url + "/v2/models/idf/infer", json.dumps({"inputs": [{"name": "x", "shape": [100, 3], "datatype": "FP32",
                                                                "data": y.ravel().tolist()}]}).encode())
text = stop(srv, "server2.log")
m = re.search(r"prediction log: (\d+) records, (\d+) sampled, (\d+) logged, (\d+) dropped", text)
log2 = [json.loads(ln) for ln in open("log2.jsonl")]
check("10 %% sample: counts printed agree with the rows read back (%s)" % str(m.groups() if m else None),
      m and m.group(1) == "1000" and m.group(2) == m.group(3) == str(len(log2)) and m.group(4) == "0" and
      50 <= len(log2) <= 150, (m and m.groups(), len(log2)))
rows = {tuple(v) for v in Y.astype(np.float64).tolist()}
check("columns named x[j] / y[j], values sent and answered (identity model), record_id null without an id",
      all(set(r) == {"record_id", "logged_at", "model_name", "model_version", "x[0]", "x[1]", "x[2]", "y[0]", "y[1]",
                     "y[2]"} and r["record_id"] is None and (r["x[0]"], r["x[1]"], r["x[2]"]) in rows and
          [r["y[0]"], r["y[1]"], r["y[2]"]] == [r["x[0]"], r["x[1]"], r["x[2]"]] and r["model_name"] == "idf"
          for r in log2), log2[:2])
print("tensor monitoring: %d rows logged (HTTP %d, gRPC %d), %d gauges == scipy" % (n_all, n_http, n_grpc, checked))
finish(0)
