#!/usr/bin/env bash
# test_monitor_stream.sh -- drift windows in `infera stream` (issue 23; label: integration).
#   usage: test_monitor_stream.sh INFERA SOURCE_DIR
# The fraud model, a baseline of 2,500 training rows, and 2,500 events whose distance from home is
# shifted (x4 + 30 km).  `infera stream --baseline` reports each drift window as a
# {"event":"drift",...} line on stderr; every PSI / JS / KS there must equal numpy / scipy
# (scipy.spatial.distance.jensenshannon, scipy.stats.ks_2samp) computed on the rows the same run
# logged (--log-predictions, sample 1) against the baseline file: the shifted input and the score
# are flagged, the other inputs are not.  Windows that end while the stream runs are reported once,
# complete, in time order, and each equals the oracle on the logged rows of its time range; the
# baseline stored with a registry version is found without --baseline; the summary carries the CPU
# cost per million predictions.
set -u
. "$(dirname "$0")/../check.sh"
infera=$1
src=$2
py=/usr/bin/python3
$py -c "import numpy, scipy" 2>/dev/null || skip "needs python3-numpy and python3-scipy (scripts/install-deps.sh)"
T=$(mktemp -d /tmp/infera-monstream-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
export INFERA_HOME=$T/home

cp "$src"/examples/fraud/{fraud_spec.json,fraud_xgb.onnx,card_features.db,transactions_raw.csv} .
"$infera" registry register fraud fraud_xgb.onnx --pipeline fraud_spec.json >/dev/null || { bad "setup: $LINENO"; check_done; }
head -2501 transactions_raw.csv >train.csv
$py - <<'PY'
import csv, json
rows = list(csv.DictReader(open("transactions_raw.csv")))[2500:]
def num(v):
    try: return float(v) if "." in v else int(v)
    except ValueError: return v if v != "" else None
with open("ev.jsonl", "w") as f:
    for r in rows:
        d = {k: num(v) for k, v in r.items()}
        if d["distance_from_home_km"] is not None: d["distance_from_home_km"] = d["distance_from_home_km"] * 4 + 30
        f.write(json.dumps(d) + "\n")
PY
head -1000 ev.jsonl >ev1.jsonl
sed -n 1001,2000p ev.jsonl >ev2.jsonl
"$infera" monitor baseline fraud@1 --data csv:train.csv -o base.json 2>/dev/null

# the oracle: drift events of a run against scipy on the rows the run logged
cat >oracle.py <<'PY'
import datetime, json, sys, numpy as np
from scipy import stats
from scipy.spatial.distance import jensenshannon
EPS = 1e-4
events_path, log_path, expect_complete = sys.argv[1], sys.argv[2], sys.argv[3]
base = json.load(open("base.json"))
events = [json.loads(l) for l in open(events_path) if l.startswith('{"event":"drift"')]
log = [json.loads(l) for l in open(log_path)]
def ts(r):
    return datetime.datetime.strptime(r["logged_at"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()
def psi(e, a):
    e, a = np.maximum(e, EPS), np.maximum(a, EPS)
    return float(np.sum((a - e) * np.log(a / e)))
assert events, "no drift event"
assert sum(e["rows"] for e in events) == len(log), ([e["rows"] for e in events], len(log))
starts = [e["start"] for e in events]
assert starts == sorted(set(starts)), starts  # each window once, in time order
for e in events[:-1]:
    assert e["complete"] is True, e["complete"]
if expect_complete == "last-open":  # the window in progress at the end of the run
    assert events[-1]["complete"] is False, events[-1]["complete"]
checked = 0
for ev in events:
    rows = [r for r in log if ev["start"] <= ts(r) < ev["end"]]
    assert len(rows) == ev["rows"], (ev["start"], ev["rows"], len(rows))
    for sec in ("features", "outputs"):
        for k, b in base[sec].items():
            got = ev[sec][k]
            if b["type"] != "number":
                continue
            x = np.array([float(r[k]) for r in rows if r.get(k) is not None])
            edges, counts = np.array(b["edges"]), np.array(b["counts"], dtype=float)
            a = np.bincount(np.searchsorted(edges, x, side="right"), minlength=len(counts)).astype(float)
            e, a = counts / counts.sum(), a / a.sum()
            want = {"psi": psi(e, a), "js": float(jensenshannon(e, a)),
                    "ks": float(stats.ks_2samp(x, np.array(b["sample"])).statistic)}
            for metric, w in want.items():
                assert abs(got[metric] - w) <= 1e-9 * max(1, abs(w)), (k, metric, got[metric], w)
                checked += 1
    if ev["rows"] >= 500:  # the synthetic shift is flagged, the untouched inputs are not
        assert ev["features"]["distance_from_home_km"]["psi"] > 1, ev["features"]["distance_from_home_km"]
        for k in ("amount", "merchant_category", "hour", "card_present"):
            assert ev["features"][k]["psi"] < 0.1, (k, ev["features"][k])
print("OK %d windows, %d metrics equal scipy" % (len(events), checked))
PY

# 1. one window (a day long): the whole run, reported at the end as the window in progress
"$infera" stream --model fraud@1 --input jsonl:ev.jsonl --output jsonl:out.jsonl --baseline base.json \
    --monitor-window 86400 --log-predictions jsonl:log1.jsonl --max-batch 100 2>err1.txt
RC=$?
check "stream --baseline: exit 0, every event scored" '[ $RC = 0 ] && [ "$(wc -l <out.jsonl)" = 2500 ]' "$(tail -3 err1.txt)"
V=$($py oracle.py err1.txt log1.jsonl last-open 2>&1 | tail -1)
# a run that straddles midnight UTC has two windows: the oracle splits the log the same way
check "stream: drift event = numpy/scipy on the logged rows; the shift flagged, the rest not" '[ "${V%% *}" = OK ]' "$V"
SUM=$(grep '"event":"summary"' err1.txt)
check "stream: the summary carries cpu_s and cpu_s_per_million" \
    'echo "$SUM" | $py -c "import json,sys; s=json.load(sys.stdin); assert s[\"cpu_s\"] > 0 and abs(s[\"cpu_s_per_million\"] - s[\"cpu_s\"] / 2500 * 1e6) <= 1e6 * 0.0006 / 2500 + 0.001"' "$SUM"

# 2. one-second windows over a stream that pauses: windows end while it runs and are reported
#    as they end (complete), the one in progress at the end last
{ cat ev1.jsonl; sleep 2.3; cat ev2.jsonl; } |
    "$infera" stream --model fraud@1 --input jsonl:- --output jsonl:out2.jsonl --baseline base.json \
        --monitor-window 1 --log-predictions jsonl:log2.jsonl --max-batch 100 2>err2.txt
V=$($py oracle.py err2.txt log2.jsonl any 2>&1 | tail -1)
N=$(grep -c '"event":"drift"' err2.txt)
check "stream: 1 s windows: each ended window once, complete, = scipy on its rows" '[ "${V%% *}" = OK ] && [ "$N" -ge 2 ]' \
    "$V ($N events)"
FIRST=$(grep -n '"event":"drift"' err2.txt | head -1 | cut -d: -f1)
SUMLINE=$(grep -n '"event":"summary"' err2.txt | cut -d: -f1)
check "stream: the first window is reported before the run ends" '[ "$FIRST" -lt "$SUMLINE" ] && [ "$N" -ge 2 ]'

# 3. the baseline stored with the registry version, found without --baseline
"$infera" monitor baseline fraud@1 --data csv:train.csv --register >/dev/null 2>&1
"$infera" stream --model fraud@1 --input jsonl:ev.jsonl --output jsonl:out3.jsonl --monitor-window 86400 \
    --log-predictions jsonl:log3.jsonl 2>err3.txt
V=$($py oracle.py err3.txt log3.jsonl last-open 2>&1 | tail -1)
check "stream: the registry version's stored baseline (no --baseline)" \
    'grep -q "drift against the baseline stored with fraud@1" err3.txt && [ "${V%% *}" = OK ]' "$V $(head -3 err3.txt)"

# 4. errors
"$infera" stream --no-score --input jsonl:ev.jsonl --output jsonl:x.jsonl --baseline base.json 2>err4.txt
RC=$?
check "stream: --baseline with --no-score is a usage error (2)" '[ $RC = 2 ]' "$(cat err4.txt)"
"$infera" stream --model fraud@1 --input jsonl:ev.jsonl --output jsonl:x.jsonl --baseline nosuch.json 2>err5.txt
RC=$?
check "stream: a missing baseline file fails before scoring" '[ $RC = 1 ] && grep -q "nosuch.json" err5.txt && [ ! -s x.jsonl ]' \
    "$(cat err5.txt)"

check_done
