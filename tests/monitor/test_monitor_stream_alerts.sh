#!/usr/bin/env bash
# test_monitor_stream_alerts.sh -- alert rules in `infera stream --monitor RULES` (issue 23; label: integration).
#   usage: test_monitor_stream_alerts.sh INFERA SOURCE_DIR
# The rules file serve --monitor reads, checked against every drift window the stream reports:
#   - shifted events (distance from home x4 + 30 km) in one-second windows over a stream that pauses:
#     several windows breach, the rule fires ONCE: one {"event":"alert"} line, one webhook POST (a local
#     python receiver), the registry alias production moved back from version 2 to 1 once and audited
#     (alias move + one monitor-rollback event, read back from the registry's SQLite file with sqlite3);
#     the alert's value equals numpy's PSI on the rows the same run logged in the alert's window;
#   - unshifted events with the alias back on 2: no alert, no POST, the alias stays;
#   - --monitor without drift windows, or with --no-score, is refused.
# Oracles: python3 numpy (PSI by the formula), python3 sqlite3 on the registry file.
set -u
. "$(dirname "$0")/../check.sh"
infera=$1
src=$2
py=/usr/bin/python3
$py -c "import numpy" 2>/dev/null || skip "needs python3-numpy (scripts/install-deps.sh)"
T=$(mktemp -d /tmp/infera-monalert-test.XXXXXX)
HOOK_PID=
trap '[ -n "$HOOK_PID" ] && kill "$HOOK_PID" 2>/dev/null; rm -rf "$T"' EXIT
cd "$T" || exit 1
export INFERA_HOME=$T/home

cp "$src"/examples/fraud/{fraud_spec.json,fraud_xgb.onnx,card_features.db,transactions_raw.csv} .
"$infera" registry register fraud fraud_xgb.onnx --pipeline fraud_spec.json >/dev/null || { bad "setup: $LINENO"; check_done; }
"$infera" registry register fraud fraud_xgb.onnx --pipeline fraud_spec.json --description v2 >/dev/null || { bad "setup: $LINENO"; check_done; }
"$infera" registry alias fraud@2 production >/dev/null || { bad "setup: $LINENO"; check_done; }
head -2501 transactions_raw.csv >train.csv
"$infera" monitor baseline fraud@2 --data csv:train.csv --register >/dev/null 2>&1 || { bad "setup: $LINENO"; check_done; }
$py - <<'PY'
import csv, json
rows = list(csv.DictReader(open("transactions_raw.csv")))[2500:]
def num(v):
    try: return float(v) if "." in v else int(v)
    except ValueError: return v if v != "" else None
with open("shift.jsonl", "w") as f, open("clean.jsonl", "w") as g:
    for r in rows:
        d = {k: num(v) for k, v in r.items()}
        g.write(json.dumps(d) + "\n")
        if d["distance_from_home_km"] is not None: d["distance_from_home_km"] = d["distance_from_home_km"] * 4 + 30
        f.write(json.dumps(d) + "\n")
PY

$py "$src"/tests/monitor/webhook_receiver.py & HOOK_PID=$!
for _ in $(seq 50); do [ -s hook.port ] && break; sleep 0.1; done
cat > rules.json <<EOF2
{"rules": [{"name": "distance shift", "metric": "psi", "feature": "distance_from_home_km", "threshold": 0.25,
            "min_rows": 100, "action": ["webhook", "rollback"],
            "webhook": "http://127.0.0.1:$(cat hook.port)/alert", "alias": "production"},
           {"name": "any ks", "metric": "ks", "threshold": 0.99, "min_rows": 100}]}
EOF2

# 1. shifted traffic in 1 s windows: several windows breach, the rule fires once
{ head -1000 shift.jsonl; sleep 2.3; sed -n 1001,2500p shift.jsonl; } |
    "$infera" stream --model fraud@2 --input jsonl:- --output jsonl:out1.jsonl --monitor rules.json \
        --monitor-window 1 --log-predictions jsonl:log1.jsonl --max-batch 100 2>err1.txt
RC=$?
NW=$($py -c "import json; print(sum(1 for l in open('err1.txt') if l.startswith('{\"event\":\"drift\"') and json.loads(l)['rows'] >= 100 and json.loads(l)['features']['distance_from_home_km']['psi'] > 0.25))")
NA=$(grep -c '^{"event":"alert"' err1.txt)
check "shifted stream: exit 0, $NW windows breach, one alert event" '[ $RC = 0 ] && [ "$NW" -ge 2 ] && [ "$NA" = 1 ]' \
    "rc $RC, $NW breaching windows, $NA alerts: $(grep -v '"event":"progress"' err1.txt | tail -5)"
check "shifted stream: the log line and the rollback line" \
    'grep -q "alert .distance shift. firing" err1.txt && grep -q "rolled fraud@production back from version 2 to 1" err1.txt && grep -q -- "--monitor: 1 alert(s) fired" err1.txt' \
    "$(grep -i alert err1.txt | head -5)"
check "the webhook got one POST" '[ "$(wc -l <hook.jsonl 2>/dev/null)" = 1 ]' "$(cat hook.jsonl 2>/dev/null)"
V=$($py - <<'PY' 2>&1 | tail -1
import datetime, json, numpy as np
EPS = 1e-4
alert = [json.loads(l) for l in open("err1.txt") if l.startswith('{"event":"alert"')][0]
hook = json.loads(open("hook.jsonl").readline())
base = json.load(open("home/baselines/fraud/2.json"))["features"]["distance_from_home_km"]
log = [json.loads(l) for l in open("log1.jsonl")]
def ts(r):
    return datetime.datetime.strptime(r["logged_at"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()
def iso(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp() \
        if isinstance(s, str) else s
lo, hi = iso(alert["window_start"]), iso(alert["window_end"])
rows = [r for r in log if lo <= ts(r) < hi]
x = np.array([float(r["distance_from_home_km"]) for r in rows if r.get("distance_from_home_km") is not None])
edges, counts = np.array(base["edges"]), np.array(base["counts"], dtype=float)
a = np.bincount(np.searchsorted(edges, x, side="right"), minlength=len(counts)).astype(float)
e, a = np.maximum(counts / counts.sum(), EPS), np.maximum(a / a.sum(), EPS)
psi = float(np.sum((a - e) * np.log(a / e)))
assert alert["rule"] == "distance shift" and alert["status"] == "firing" and alert["rows"] == len(rows), (alert, len(rows))
assert abs(alert["value"] - psi) <= 1e-9 * max(1, psi), (alert["value"], psi)
assert alert["rollback"] == {"alias": "production", "from": 2, "to": 1}, alert["rollback"]
assert hook["rule"] == "distance shift" and hook["rollback"] == alert["rollback"], hook
print("OK psi %.4f on %d rows" % (psi, len(rows)))
PY
)
check "the alert's value = numpy PSI on the logged rows of its window; the webhook body is the alert" '[ "${V%% *}" = OK ]' "$V"
# the registry, read back with sqlite3: alias at 1, one monitor-rollback audit event
REG=$($py - <<'PY' 2>&1 | tail -1
import sqlite3
c = sqlite3.connect("home/registry.db")
v = [r[0] for r in c.execute("select version from reg_aliases where name='fraud' and alias='production'")]
n = c.execute("select count(*) from reg_audit where model='fraud' and action='monitor-rollback'").fetchone()[0]
print("OK", v, n)
PY
)
check "registry (sqlite3): production at version 1, one monitor-rollback event" '[ "$REG" = "OK [1] 1" ]' "$REG"

# 2. unshifted traffic, the alias back on 2: nothing fires
"$infera" registry alias fraud@2 production >/dev/null
{ head -1000 clean.jsonl; sleep 2.3; sed -n 1001,2500p clean.jsonl; } |
    "$infera" stream --model fraud@2 --input jsonl:- --output jsonl:out2.jsonl --monitor rules.json \
        --monitor-window 1 --max-batch 100 2>err2.txt
RC=$?
check "unshifted stream: exit 0, drift reported, no alert, no POST, alias stays on 2" \
    '[ $RC = 0 ] && grep -q "\"event\":\"drift\"" err2.txt && ! grep -q "\"event\":\"alert\"" err2.txt && grep -q -- "--monitor: 0 alert(s) fired" err2.txt && [ "$(wc -l <hook.jsonl)" = 1 ] && "$infera" registry resolve fraud@production | grep -q "fraud@2"' \
    "rc $RC: $(grep -i -E 'alert|rolled' err2.txt | head -3); $("$infera" registry resolve fraud@production)"

# 3. errors
"$infera" stream --model fraud@1 --input jsonl:clean.jsonl --output jsonl:x.jsonl --monitor rules.json 2>err3.txt
RC=$?
check "--monitor without drift windows: refused (1) before scoring" '[ $RC = 1 ] && grep -q "no drift windows" err3.txt && [ ! -s x.jsonl ]' "$RC $(cat err3.txt)"
"$infera" stream --no-score --input jsonl:clean.jsonl --output jsonl:x.jsonl --monitor rules.json 2>err4.txt
RC=$?
check "--monitor with --no-score: usage error (2)" '[ $RC = 2 ]' "$RC $(cat err4.txt)"

check "no sanitizer report" '! cat err*.txt 2>/dev/null | grep -q -E "Sanitizer|runtime error"' "$(cat err*.txt | grep -E -m3 'Sanitizer|runtime error')"
check_done
