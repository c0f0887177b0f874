#!/usr/bin/env bash
# tests/monitor/test_monitor_serve.sh -- online monitoring in `infera serve` (issue 23):
#   - serve --log-predictions logs the records endpoint's scored records (sensitive card_id never);
#   - the drift window's infera_feature_drift gauges on /metrics equal numpy/scipy (PSI by the direct
#     formula, JS by scipy jensenshannon, KS by scipy ks_2samp) on the rows the server logged, against
#     the baseline's bins and sample;
#   - a shifted feature breaches a --monitor rule: the webhook (a local python receiver) gets the alert
#     JSON once, the registry alias `production` moves back from version 2 to 1 exactly once, audited
#     (alias move + monitor-rollback event), and the server follows the alias;
#   - `infera monitor check` on the same log fires the same rule (exit 1, JSON) and a clean log does not.
# Oracles: Debian python3-numpy / python3-scipy.  Usage: test_monitor_serve.sh INFERA_BIN REPO_DIR.
set -euo pipefail
. "$(dirname "$0")/../check.sh"
infera=$(realpath "$1")
repo=$(realpath "$2")
py=/usr/bin/python3
if ! $py -c 'import numpy, scipy' 2>/dev/null || ! command -v curl >/dev/null; then
    skip "needs python3-numpy, python3-scipy and curl (scripts/install-deps.sh)"
fi
. "$repo/scripts/serve_port.sh"
work=$(mktemp -d)
SERVER_PID= HOOK_PID=
trap '[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; [ -n "$HOOK_PID" ] && kill "$HOOK_PID" 2>/dev/null; rm -rf "$work"' EXIT
cp "$repo"/examples/fraud/{fraud_spec.json,fraud_xgb.onnx,card_features.db,transactions_raw.csv} "$work"/
cd "$work"
export INFERA_HOME="$work/home"
fail() { bad "$*"; [ -f server.log ] && tail -20 server.log; check_done; }

# training rows, and production records (JSON) whose distance from home shifted
$py - <<'PY'
import csv, json
rows = list(csv.DictReader(open("transactions_raw.csv")))
cols = list(rows[0].keys())
w = csv.DictWriter(open("train.csv", "w", newline=""), fieldnames=cols)
w.writeheader(); w.writerows(rows[:2500])
def num(v):
    try: return float(v) if "." in v or "e" in v.lower() else int(v)
    except ValueError: return v if v != "" else None
cur = []
for r in rows[2500:3100]:
    r = {k: num(v) for k, v in r.items()}
    if r["distance_from_home_km"] is not None: r["distance_from_home_km"] = r["distance_from_home_km"] * 4 + 30
    cur.append(r)
for i in range(0, len(cur), 50):
    json.dump({"records": cur[i:i + 50]}, open("req_%02d.json" % (i // 50), "w"))
PY

"$infera" registry register fraud fraud_xgb.onnx --pipeline fraud_spec.json >/dev/null
"$infera" registry register fraud fraud_xgb.onnx --pipeline fraud_spec.json --description v2 >/dev/null
"$infera" registry alias fraud@2 production >/dev/null
"$infera" monitor baseline fraud@2 --data csv:train.csv -o base.json 2>/dev/null

# the webhook receiver: appends every POST body as one line
$py "$repo"/tests/monitor/webhook_receiver.py & HOOK_PID=$!
for _ in $(seq 50); do [ -s hook.port ] && break; sleep 0.1; done
hook_port=$(cat hook.port)
cat > rules.json <<EOF2
{"rules": [{"name": "distance shift", "metric": "psi", "feature": "distance_from_home_km", "threshold": 0.25,
            "window": "1d", "for": "0s", "min_rows": 200, "action": ["webhook", "rollback"],
            "webhook": "http://127.0.0.1:$hook_port/alert", "alias": "production"},
           {"name": "any ks", "metric": "ks", "threshold": 0.99, "min_rows": 200}]}
EOF2

"$infera" serve --port 0 --model fraud=fraud@production --poll-secs 1 --log-predictions jsonl:serve_log.jsonl \
    --baseline fraud=base.json --monitor rules.json --monitor-interval 1 --monitor-window 86400 \
    --cpu-price-per-hour 0.05 2>server.log &
SERVER_PID=$!
PORT=$(serve_port server.log) || fail "server did not start"
url=http://127.0.0.1:$PORT
for f in req_0[0-5].json; do   # 300 records: enough for min_rows, before the first evaluation can fire
    curl -sf -X POST --data-binary @"$f" "$url/v2/models/fraud/records" >/dev/null || fail "records request $f"
done
sleep 1.2   # the window's drift is refreshed at most once a second
curl -sf "$url/metrics" > metrics1.txt
# the cost gauges: CPU time as the kernel counts it (/proc/PID/stat utime + stime, read right after)
awk '{print ($14 + $15) / '"$(getconf CLK_TCK)"'}' "/proc/$SERVER_PID/stat" > proc_cpu.txt
grep -q '^infera_monitor_records_total{model="fraud",version="2"} 300$' metrics1.txt || fail "records count: $(grep monitor_records metrics1.txt)"

# wait for the rule thread: alert, webhook, rollback, and the server following the alias
for _ in $(seq 100); do
    [ -s hook.jsonl ] && grep -q 'now serves version 1' server.log && break
    sleep 0.1
done
grep -q "rolled fraud@production back from version 2 to 1" server.log || fail "no rollback in the server log"
grep -q 'now serves version 1' server.log || fail "the server did not follow the alias"
"$infera" registry resolve fraud@production | grep -q '@1\|version 1\|"version": *1' || { "$infera" registry resolve fraud@production; fail "alias not at 1"; }
# the server's log is flushed at shutdown
kill "$SERVER_PID"; wait "$SERVER_PID" || true; SERVER_PID=
! grep -q -E 'Sanitizer|runtime error' server.log || { cat server.log; fail "sanitizer report in the server log"; }
grep -q "prediction log: 300 records, 300 sampled, 300 logged, 0 dropped" server.log || fail "log counts: $(grep 'prediction log' server.log)"
"$infera" registry audit --model fraud --json > audit.json

$py - <<'PY'
import json, re, numpy as np
from scipy import stats
from scipy.spatial.distance import jensenshannon
EPS = 1e-4
log = [json.loads(l) for l in open("serve_log.jsonl")]
assert len(log) == 300, len(log)
assert all("card_id" not in r and r["model_name"] == "fraud" and r["model_version"] == "2" for r in log), log[0]
base = json.load(open("base.json"))
gauges = {}
for line in open("metrics1.txt"):
    m = re.match(r'infera_feature_drift\{model="fraud",version="2",feature="([^"]+)",metric="(\w+)"\} (\S+)', line)
    if m: gauges[(m.group(1), m.group(2))] = float(m.group(3))
assert gauges, "no infera_feature_drift gauges"
def psi(e, a):
    e, a = np.maximum(e, EPS), np.maximum(a, EPS)
    return float(np.sum((a - e) * np.log(a / e)))
checked = 0
for sec in ("features", "outputs"):
    for k, b in base[sec].items():
        if b["type"] != "number": continue
        x = np.array([float(r[k]) for r in log if r.get(k) is not None])
        edges, counts = np.array(b["edges"]), np.array(b["counts"], dtype=float)
        a = np.bincount(np.searchsorted(edges, x, side="right"), minlength=len(counts)).astype(float)
        e, a = counts / counts.sum(), a / a.sum()
        want = {"psi": psi(e, a), "js": float(jensenshannon(e, a)),
                "ks": float(stats.ks_2samp(x, np.array(b["sample"])).statistic)}
        for metric, w in want.items():
            got = gauges[(k, metric)]
            assert abs(got - w) <= 1e-5 * max(1, abs(w)), (k, metric, got, w)   # the gauge prints 6 digits
            checked += 1
assert checked >= 30, checked
assert gauges[("distance_from_home_km", "psi")] > 1, gauges[("distance_from_home_km", "psi")]
assert gauges[("amount", "psi")] < 0.1
# cost per prediction
def gauge(name):
    return float(re.search(r"^%s (\S+)$" % name, open("metrics1.txt").read(), re.M).group(1))
cpu, n = gauge("infera_process_cpu_seconds_total"), gauge("infera_predictions_total")
proc_cpu = float(open("proc_cpu.txt").read())
assert n == 300, n
assert cpu - 0.02 <= proc_cpu <= cpu + 0.5, (cpu, proc_cpu)
got = gauge("infera_cpu_seconds_per_million_predictions")
assert abs(got - cpu / n * 1e6) <= (1e-5 * cpu + 0.0006) / n * 1e6, (got, cpu, n)
# the CPU counter is printed with 3 decimals: the gauges may differ by its rounding
cost = gauge("infera_cost_per_million_predictions")
assert abs(cost - cpu / 3600 * 0.05 / n * 1e6) <= (1e-5 * cpu + 0.0006) / 3600 * 0.05 / n * 1e6, (cost, cpu, n)
hooks = [json.loads(l) for l in open("hook.jsonl")]
assert len(hooks) == 1, hooks
h = hooks[0]
assert h["rule"] == "distance shift" and h["feature"] == "distance_from_home_km" and h["status"] == "firing", h
assert h["value"] > 0.25 and h["rollback"] == {"alias": "production", "from": 2, "to": 1}, h
audit = json.load(open("audit.json"))
audit = audit.get("records", audit) if isinstance(audit, dict) else audit
text = json.dumps(audit)
assert text.count("monitor-rollback") == 1, text[-2000:]
print("serve monitoring: %d drift gauges equal numpy/scipy; alert, webhook and rollback once" % checked)
PY

# a baseline stored with the registry version is the default of drift (and equals the file's)
"$infera" monitor baseline fraud@2 --data csv:train.csv --register 2>register.err || fail "register: $(cat register.err)"
"$infera" monitor drift fraud@2 --log jsonl:serve_log.jsonl --baseline base.json --json > drift_file.json
"$infera" monitor drift fraud@2 --log jsonl:serve_log.jsonl --json > drift_stored.json
cmp -s drift_file.json drift_stored.json || fail "drift against the stored baseline differs from the file's"
"$infera" monitor drift fraud@1 --log jsonl:serve_log.jsonl --json >/dev/null 2>nobase.err && fail "drift of fraud@1 without a baseline"
grep -q "no baseline stored with fraud@1" nobase.err || fail "no-baseline message: $(cat nobase.err)"
"$infera" registry audit --model fraud --json | grep -q monitor-baseline || fail "storing the baseline was not audited"

# offline: monitor check over the server's log fires the same rule; the training log does not
set +e
"$infera" monitor check fraud@2 --log jsonl:serve_log.jsonl --baseline base.json --rules rules.json --dry-run --json > check.json
rc=$?
set -e
[ "$rc" = 3 ] || fail "monitor check exit $rc (want 3: firing)"
$py -c '
import json; c = json.load(open("check.json"))
f = c["firing"]
assert [a["rule"] for a in f] == ["distance shift"], c
assert f[0]["feature"] == "distance_from_home_km" and f[0]["rows"] == 300, f
'
# a log of training traffic fires nothing (exit 0)
"$infera" batch --model fraud@2 --input csv:train.csv --output jsonl:train_out.jsonl \
    --log-predictions jsonl:train_log.jsonl --progress none >/dev/null 2>&1
"$infera" monitor check fraud@2 --log jsonl:train_log.jsonl --baseline base.json --rules rules.json --dry-run --json > clean.json \
    || fail "monitor check on training traffic exit $?"
grep -q '"firing":[[:space:]]*\[\]' clean.json || fail "rules fire on training traffic: $(cat clean.json)"

# rollback by `monitor check` (cron): refused on a protected alias for a publisher, done once by an approver
"$infera" registry alias fraud@2 production --protect >/dev/null
admin=$("$infera" registry token create root --role admin | grep -o 'inf_[A-Za-z0-9_]*' | head -1)
[ -n "$admin" ] || fail "no admin token"
export INFERA_TOKEN=$admin
pub=$("$infera" registry token create bot --role publisher --model fraud | grep -o 'inf_[A-Za-z0-9_]*' | head -1)
appr=$("$infera" registry token create lead --role approver --model fraud | grep -o 'inf_[A-Za-z0-9_]*' | head -1)
[ -n "$pub" ] && [ -n "$appr" ] || fail "no tokens"
mcheck() { INFERA_TOKEN=$1 "$infera" monitor check fraud@2 --log jsonl:serve_log.jsonl --baseline base.json --rules rules.json --json; }
set +e
mcheck "$pub" > refused.json 2>refused.err; rc1=$?
mcheck "$appr" > moved.json 2>moved.err; rc2=$?
mcheck "$appr" > again.json 2>again.err; rc3=$?
set -e
[ "$rc1" = 3 ] && [ "$rc2" = 3 ] && [ "$rc3" = 3 ] || fail "check exits $rc1 $rc2 $rc3 (want 3: firing)"
grep -q 'rollback of fraud@production refused' refused.err || fail "publisher moved a protected alias: $(cat refused.err)"
grep -q 'rolled fraud@production back from version 2 to 1' moved.err || fail "approver rollback: $(cat moved.err)"
! grep -q 'rolled' again.err || fail "a second check rolled back again"
"$infera" registry audit --model fraud --json > audit2.json
$py - <<'PY'
import json
r, m, a = (json.load(open(f))["firing"][0]["rollback"] for f in ("refused.json", "moved.json", "again.json"))
assert "error" in r and "to" not in r, r
assert m == {"alias": "production", "from": 2, "to": 1}, m
assert "skipped" in a, a
text = json.dumps(json.load(open("audit2.json")))
assert text.count("monitor-rollback") == 2, text.count("monitor-rollback")   # serve's and the approver's
PY
ok "monitor serve: every check above"
check_done
