#!/usr/bin/env bash
# test_monitor_register.sh -- `infera registry register NAME MODEL --baseline SRC` (issue 23; label: integration).
#   usage: test_monitor_register.sh INFERA SOURCE_DIR
# Registering the fraud model with --baseline stores the training data's baseline with the new version:
#   - the stored file's numeric features equal numpy: the raw inputs on the CSV's own values (rows,
#     missing rate, the 10 %..90 % quantile edges -- numpy linear, duplicates removed -- and the counts per
#     bin, numpy searchsorted side=right), the derived ones on `infera features` (float32: edges to 1e-6);
#   - the registry (read back with sqlite3) holds one monitor-baseline audit event for version 1 with the
#     file's SHA-256 (hashlib) and row count;
#   - `infera monitor drift NAME@1` finds it without --baseline;
#   - an unreadable --baseline SRC is refused before anything is registered (no version 2).
# Oracles: python3 numpy, hashlib, sqlite3.
set -u
. "$(dirname "$0")/../check.sh"
infera=$1
src=$2
py=/usr/bin/python3
$py -c "import numpy" 2>/dev/null || skip "needs python3-numpy (scripts/install-deps.sh)"
T=$(mktemp -d /tmp/infera-monreg-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
export INFERA_HOME=$T/home

cp "$src"/examples/fraud/{fraud_spec.json,fraud_xgb.onnx,card_features.db,transactions_raw.csv} .
head -2001 transactions_raw.csv >train.csv
"$infera" registry register fraud fraud_xgb.onnx --pipeline fraud_spec.json --baseline csv:train.csv >reg.out 2>reg.err
RC=$?
check "register --baseline: exit 0, version 1, baseline stored" \
    '[ $RC = 0 ] && grep -q "registered fraud@1" reg.out && grep -q "baseline of fraud@1 stored (2000 rows)" reg.err && [ -s home/baselines/fraud/1.json ]' \
    "rc $RC: $(cat reg.out reg.err)"
"$infera" features --spec fraud_spec.json --input csv:train.csv --output jsonl:feat.jsonl 2>/dev/null
V=$($py - <<'PY' 2>&1 | tail -1
import json, numpy as np
base = json.load(open("home/baselines/fraud/1.json"))
feat = [json.loads(l) for l in open("feat.jsonl")]
assert base["rows"] == len(feat) == 2000, (base["rows"], len(feat))
assert base["model"] == "fraud" and str(base["version"]) == "1", (base["model"], base["version"])
import csv
raw = list(csv.DictReader(open("train.csv")))
n = 0
for k, b in base["features"].items():
    if b["type"] != "number": continue
    if k in raw[0]:  # a raw input: numpy on the CSV's own values, exactly
        vals = [float(r[k]) if r[k] not in ("",) else None for r in raw]
        tol = 1e-12
    else:  # a derived feature: `infera features` writes it as the float32 the model gets
        vals = [r.get(k) for r in feat]
        tol = 1e-6
    x = np.array([float(v) for v in vals if v is not None])
    assert abs(b["missing_rate"] - (1 - len(x) / len(vals))) < 1e-12, (k, b["missing_rate"])
    edges = np.unique(np.quantile(x, np.arange(1, 10) / 10))
    assert np.allclose(b["edges"], edges, rtol=tol, atol=0), (k, b["edges"], edges.tolist())
    if tol == 1e-12:
        counts = np.bincount(np.searchsorted(np.array(b["edges"]), x, side="right"), minlength=len(b["edges"]) + 1)
        assert list(counts) == b["counts"], (k, b["counts"], counts.tolist())
    n += 1
assert n == 12, n
print("OK %d features" % n)
PY
)
check "the stored baseline = numpy on the training features (rows, missing, edges, counts)" '[ "${V%% *}" = OK ]' "$V"
A=$($py - <<'PY' 2>&1 | tail -1
import hashlib, json, sqlite3
c = sqlite3.connect("home/registry.db")
ev = c.execute("select version, detail from reg_audit where model='fraud' and action='monitor-baseline'").fetchall()
sha = hashlib.sha256(open("home/baselines/fraud/1.json", "rb").read()).hexdigest()
assert len(ev) == 1 and ev[0][0] == 1, ev
d = json.loads(ev[0][1])
assert d["sha256"] == sha and d["rows"] == 2000, (d, sha)
print("OK")
PY
)
check "registry (sqlite3): one monitor-baseline event for version 1, the file's SHA-256 and rows" '[ "$A" = OK ]' "$A"
"$infera" batch --model fraud@1 --input csv:train.csv --output jsonl:out.jsonl --log-predictions jsonl:log.jsonl \
    --progress none >/dev/null 2>&1
"$infera" monitor drift fraud@1 --log jsonl:log.jsonl --json >drift.json 2>drift.err
RC=$?
check "monitor drift fraud@1 finds the stored baseline (no --baseline); training traffic does not drift" \
    '[ $RC = 0 ] && $py -c "import json; d=json.load(open(\"drift.json\")); assert d[\"rows\"] == 2000 and max(v[\"psi\"] for v in d[\"features\"].values()) < 1e-9, d"' \
    "rc $RC $(cat drift.err)"
"$infera" registry register fraud fraud_xgb.onnx --pipeline fraud_spec.json --baseline csv:nosuch.csv >bad.out 2>bad.err
RC=$?
N=$($py -c "import sqlite3; print(sqlite3.connect('home/registry.db').execute(\"select count(*) from reg_versions where name='fraud'\").fetchone()[0])" 2>&1)
check "an unreadable --baseline SRC is refused before registering (still one version)" \
    '[ $RC != 0 ] && grep -q "nosuch.csv" bad.err && [ "$N" = 1 ]' "rc $RC, versions $N: $(cat bad.err)"

check "no sanitizer report" '! cat *.err 2>/dev/null | grep -q -E "Sanitizer|runtime error"' "$(cat *.err | grep -E -m3 'Sanitizer|runtime error')"
check_done
