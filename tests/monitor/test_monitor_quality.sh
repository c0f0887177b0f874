#!/usr/bin/env bash
# tests/monitor/test_monitor_quality.sh -- online quality rules (issue 23): labels that arrive after the
# predictions, joined by id with the prediction log on every check of `infera serve --monitor` and
# `infera stream --monitor` (the rules file's "labels" section):
#   - before the labels exist nothing fires; once they arrive (late, 10 % missing, duplicates whose
#     second label is the opposite one, ids never logged) the accuracy rule breaches: the webhook gets
#     the alert once and fraud@production moves back from version 2 to 1 exactly once, audited;
#   - the infera_model_quality{model,version,metric} gauges equal scikit-learn's metrics on the same
#     joined rows (the log read back with python's sqlite3, the first label per id), and so does the
#     stored quality history (HOME/quality/fraud/2.json) window by window;
#   - on a protected alias a publisher's server is refused the rollback (the alias stays);
#   - `infera stream --monitor` reports the quality of its drained log at its end (scikit-learn's
#     numbers again) and rolls back with an approver's token;
#   - `infera monitor report --html` without --labels draws the stored history.
# Oracles: Debian python3-sklearn / python3-numpy.  Usage: test_monitor_quality.sh INFERA_BIN REPO_DIR.
set -u
. "$(dirname "$0")/../check.sh"
infera=$(realpath "$1")
repo=$(realpath "$2")
py=/usr/bin/python3
$py -c 'import numpy, sklearn' 2>/dev/null && command -v curl >/dev/null && command -v sqlite3 >/dev/null ||
    skip "needs python3-numpy, python3-sklearn, curl and sqlite3 (scripts/install-deps.sh)"
. "$repo/scripts/serve_port.sh"
work=$(mktemp -d)
SERVER_PID= HOOK_PID=
trap '[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; [ -n "$HOOK_PID" ] && kill "$HOOK_PID" 2>/dev/null; rm -rf "$work"' EXIT
[ -n "${KEEP_WORK:-}" ] && trap '[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; [ -n "$HOOK_PID" ] && kill "$HOOK_PID" 2>/dev/null; echo "kept $work"' EXIT
cp "$repo"/examples/fraud/{fraud_spec.json,fraud_xgb.onnx,card_features.db,transactions_raw.csv} "$work"/
cd "$work" || exit 1
CHECK_DIR=$work
export INFERA_HOME="$work/home"
unset INFERA_TOKEN INFERA_REGISTRY
stop() { [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null; SERVER_PID=; }
abort() { bad "$1" "$(tail -20 server.log 2>/dev/null)"; check_done; }

# 300 production records (6 requests) and, once they are scored, their labels: flipped (the model
# now looks wrong), every 10th missing, every 7th twice (the second time the true one: the first
# counts), 5 ids never logged
$py - <<'PY'
import csv, json
rows = list(csv.DictReader(open("transactions_raw.csv")))[2500:2800]
def num(v):
    try: return float(v) if "." in v or "e" in v.lower() else int(v)
    except ValueError: return v if v != "" else None
recs = [{k: num(v) for k, v in r.items()} for r in rows]
for i in range(0, 300, 50): json.dump({"records": recs[i:i + 50]}, open("req_%d.json" % (i // 50), "w"))
with open("records.jsonl", "w") as f:
    for r in recs: f.write(json.dumps(r) + "\n")
with open("labels.late", "w", newline="") as f:
    w = csv.writer(f); w.writerow(["txn", "label"])
    for i, r in enumerate(rows):
        if i % 10 == 3: continue
        y = int(r["is_fraud"])
        w.writerow([r["transaction_id"], 1 - y])
        if i % 7 == 2: w.writerow([r["transaction_id"], y])
    for k in range(5): w.writerow(["t9%05d" % k, 1])
PY

"$infera" registry register fraud fraud_xgb.onnx --pipeline fraud_spec.json >/dev/null || abort "register"
"$infera" registry register fraud fraud_xgb.onnx --pipeline fraud_spec.json --description v2 >/dev/null || abort "register"
"$infera" registry alias fraud@2 production >/dev/null || abort "alias"

$py "$repo"/tests/monitor/webhook_receiver.py &
HOOK_PID=$!
for _ in $(seq 50); do [ -s hook.port ] && break; sleep 0.1; done
cat > rules.json <<EOF2
{"labels": {"source": "csv:labels.csv", "id_column": "txn", "label_column": "label", "window": "1d"},
 "rules": [{"name": "accuracy drop", "metric": "accuracy", "threshold": 0.8, "window": "1d", "min_rows": 100,
            "action": ["webhook", "rollback"], "webhook": "http://127.0.0.1:$(cat hook.port)/alert",
            "alias": "production"}]}
EOF2

serve() { # serve LOG_DB: fraud@production with the quality rules, checked every second
    "$infera" serve --port 0 --model fraud=fraud@production --poll-secs 1 --log-predictions "sqlite:$1?table=log" \
        --monitor rules.json --monitor-interval 1 2>server.log &
    SERVER_PID=$!
    PORT=$(serve_port server.log) || abort "server did not start"
    url=http://127.0.0.1:$PORT
    for _ in $(seq 100); do curl -sf "$url/v2/models/fraud/ready" >/dev/null && break; sleep 0.1; done
}
post_all() { # post_all [CURL ARGS]: the 6 requests
    for i in 0 1 2 3 4 5; do
        curl -sf "$@" -X POST --data-binary @"req_$i.json" "$url/v2/models/fraud/records" >/dev/null || return 1
    done
}

# ---- 1. serve: predictions first, labels later
serve log.db
check_run "serve: 300 records scored by version 2" post_all
sleep 3
curl -sf "$url/metrics" >metrics0.txt
check "no labels yet: no quality gauge, no alert, the missing source reported once" \
    '! grep -q "^infera_model_quality{" metrics0.txt && [ ! -s hook.jsonl ] &&
     [ "$(grep -c "quality of .fraud. version 2: .*labels.csv" server.log)" = 1 ]' "$(grep quality server.log)"
cp labels.late labels.tmp && mv labels.tmp labels.csv   # the labels arrive (whole: renamed into place)
for _ in $(seq 150); do grep -q 'now serves version 1' server.log && [ -s hook.jsonl ] && break; sleep 0.1; done
curl -sf "$url/metrics" >metrics1.txt
check "late labels breach the accuracy rule: rolled back 2 -> 1, the server follows" \
    'grep -q "rolled fraud@production back from version 2 to 1" server.log && grep -q "now serves version 1" server.log'
sleep 2.2   # two more checks of the same breach
stop
check "the prediction log holds the 300 rows" '[ "$(sqlite3 log.db "select count(*) from log")" = 300 ]'
check "no sanitizer report" '! grep -q -E "Sanitizer|runtime error" server.log'
"$infera" registry resolve fraud@production >resolve1.txt 2>&1
check "fraud@production is at version 1" 'grep -q "@1\|version 1\|\"version\": *1" resolve1.txt' "$(cat resolve1.txt)"
"$infera" registry audit --model fraud --json >audit1.json
check_quiet "gauges, stored history, webhook and audit equal scikit-learn / happened once" $py - <<'PY'
import csv, json, re, sqlite3, numpy as np
from datetime import datetime, timezone
from sklearn import metrics as skm
db = sqlite3.connect("log.db")
log = db.execute("select record_id, fraud_score, logged_at from log where model_version = '2'").fetchall()
assert len(log) == 300, len(log)
first = {}
for r in csv.DictReader(open("labels.csv")): first.setdefault(r["txn"], int(r["label"]))
def day(ts):
    t = datetime.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    return int(t.timestamp()) // 86400
windows = {}
for rid, score, ts in log:
    if rid in first: windows.setdefault(day(ts), []).append((first[rid], score))
assert sum(len(v) for v in windows.values()) == 270
def oracle(pairs):
    y = np.array([a for a, _ in pairs]); p = np.array([b for _, b in pairs])
    return {"accuracy": skm.accuracy_score(y, p > 0.5), "precision": skm.precision_score(y, p > 0.5, zero_division=0),
            "recall": skm.recall_score(y, p > 0.5, zero_division=0), "f1": skm.f1_score(y, p > 0.5, zero_division=0),
            "auc": skm.roc_auc_score(y, p), "logloss": skm.log_loss(y, p, labels=[0, 1])}
newest = oracle(windows[max(windows)])
gauges = {}
for line in open("metrics1.txt"):
    m = re.match(r'infera_model_quality\{model="fraud",version="2",metric="(\w+)"\} (\S+)$', line)
    if m: gauges[m.group(1)] = float(m.group(2))
assert set(gauges) == set(newest), (gauges, newest)
for k, v in newest.items(): assert abs(gauges[k] - v) <= 1e-12 * max(1, abs(v)), (k, gauges[k], v)
rows = re.search(r'^infera_model_quality_rows\{model="fraud",version="2"\} (\d+)$', open("metrics1.txt").read(), re.M)
assert rows and int(rows.group(1)) == len(windows[max(windows)]), rows
assert newest["accuracy"] < 0.8
doc = json.load(open("home/quality/fraud/2.json"))
assert doc["model"] == "fraud" and doc["version"] == "2" and doc["window_s"] == 86400, doc
assert [day(w["start"]) for w in doc["windows"]] == sorted(windows), doc["windows"]
for w in doc["windows"]:
    want = oracle(windows[day(w["start"])])
    assert w["rows"] == len(windows[day(w["start"])])
    for k, v in want.items(): assert abs(w["metrics"][k] - v) <= 1e-12 * max(1, abs(v)), (w["start"], k, w["metrics"][k], v)
hooks = [json.loads(l) for l in open("hook.jsonl")]
assert len(hooks) == 1, hooks
h = hooks[0]
assert h["rule"] == "accuracy drop" and h["metric"] == "accuracy" and h["status"] == "firing", h
assert abs(h["value"] - newest["accuracy"]) <= 1e-12 and h["rollback"] == {"alias": "production", "from": 2, "to": 1}, h
text = json.dumps(json.load(open("audit1.json")))
assert text.count("monitor-rollback") == 1, text.count("monitor-rollback")
print("quality: %d windows, gauges and history equal scikit-learn; one alert, one audited rollback" % len(windows))
PY

# ---- 2. a protected alias: the server of a publisher is refused the rollback
"$infera" registry alias fraud@2 production --protect >/dev/null || abort "protect"
admin=$("$infera" registry token create root --role admin | grep -o 'inf_[A-Za-z0-9_]*' | head -1)
export INFERA_TOKEN=$admin
pub=$("$infera" registry token create bot --role publisher --model fraud | grep -o 'inf_[A-Za-z0-9_]*' | head -1)
appr=$("$infera" registry token create lead --role approver --model fraud | grep -o 'inf_[A-Za-z0-9_]*' | head -1)
[ -n "$admin" ] && [ -n "$pub" ] && [ -n "$appr" ] || abort "tokens"
: >hook.jsonl
export INFERA_TOKEN=$pub   # the server's own token: its rollbacks are the publisher's
serve log2.db
export INFERA_TOKEN=$admin
check_run "serve as a publisher: 300 records scored by version 2" post_all -H "Authorization: Bearer $admin"
for _ in $(seq 100); do grep -q "rollback of fraud@production refused" server.log && break; sleep 0.1; done
sleep 1.2
stop
check "protected alias: the publisher's rollback refused, once" \
    '[ "$(grep -c "rollback of fraud@production refused" server.log)" = 1 ] && [ "$(wc -l <hook.jsonl)" = 1 ] &&
     grep -q "\"error\"" hook.jsonl' "$(grep -i rollback server.log; cat hook.jsonl)"
"$infera" registry resolve fraud@production >resolve2.txt 2>&1
check "the protected alias stays at version 2" 'grep -q "@2\|version 2\|\"version\": *2" resolve2.txt' "$(cat resolve2.txt)"

# ---- 3. stream: the quality of its drained log at its end; an approver's token rolls back once
INFERA_TOKEN=$appr "$infera" stream --model fraud@2 --input jsonl:- --output jsonl:s_out.jsonl --monitor rules.json \
    --log-predictions jsonl:s_log.jsonl --max-batch 50 <records.jsonl 2>stream.err
RC=$?
check "stream --monitor: exit 0, quality reported, one alert, rolled back once" \
    '[ $RC = 0 ] && [ "$(grep -c "^{\"event\":\"quality\"" stream.err)" -ge 1 ] &&
     [ "$(grep -c "^{\"event\":\"alert\"" stream.err)" = 1 ] &&
     grep -q "rolled fraud@production back from version 2 to 1" stream.err' "$(tail -5 stream.err)"
check_quiet "stream quality event equals scikit-learn on its log" $py - <<'PY'
import csv, json, numpy as np
from sklearn import metrics as skm
ev = [json.loads(l) for l in open("stream.err") if l.startswith('{"event":"quality"')][-1]   # the last: the drained log
first = {}
for r in csv.DictReader(open("labels.csv")): first.setdefault(r["txn"], int(r["label"]))
pairs = [(first[r["record_id"]], r["fraud_score"]) for r in map(json.loads, open("s_log.jsonl")) if r["record_id"] in first]
y = np.array([a for a, _ in pairs]); p = np.array([b for _, b in pairs])
assert ev["rows"] == len(pairs) == 270 and ev["model"] == "fraud" and ev["version"] == "2", ev
for k, v in {"accuracy": skm.accuracy_score(y, p > 0.5), "auc": skm.roc_auc_score(y, p), "logloss": skm.log_loss(y, p)}.items():
    assert abs(ev["metrics"][k] - v) <= 1e-12, (k, ev["metrics"][k], v)
PY

"$infera" registry audit --model fraud --json > audit3.json
check "stream's rollback by an approver is audited with its reason (a monitor-rollback event)" \
    '! grep -q "reason could not be" stream.err &&
     [ "$(grep -o "monitor-rollback" audit3.json | wc -l)" = 2 ]' "$(grep -c monitor-rollback audit3.json) events; $(grep reason stream.err)"

# ---- 4. monitor report without --labels draws the stored history
"$infera" monitor baseline fraud@2 --data csv:transactions_raw.csv -o base.json 2>/dev/null
"$infera" monitor report fraud@2 --log "sqlite:log.db?table=log" --baseline base.json --html report.html 2>report.err
check "report --html draws the stored quality history" \
    'grep -q "class=\"chart quality-chart\"" report.html && grep -q "\"quality_windows\":\[{" report.html' "$(cat report.err)"
check_done
