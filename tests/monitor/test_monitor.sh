#!/usr/bin/env bash
# tests/monitor/test_monitor.sh -- the prediction log and `infera monitor` (issue 23) on the fraud
# example (examples/fraud):
#   - drift metrics equal numpy/scipy on the same samples: quantile edges (numpy.quantile), PSI,
#     Jensen-Shannon distance (scipy.spatial.distance.jensenshannon), KS (scipy.stats.ks_2samp),
#     categorical PSI / JS / chi-square;
#   - a synthetic shift of chosen features is flagged, the other features are not;
#   - the label join handles late (shuffled, days later), missing and duplicate labels; its metrics
#     equal scikit-learn's on the joined pairs;
#   - sensitive fields (a lookup key, a model input marked sensitive, a passthrough) never reach the
#     log; --log-sample samples: from two threads, to JSON lines and SQLite, every sampled record is
#     logged once and equals the job's own output row and the raw record.
# Oracles: Debian python3-numpy / python3-scipy / python3-sklearn run by /usr/bin/python3.
# Usage: test_monitor.sh INFERA_BIN REPO_DIR.  Exits 77 (skipped) without those modules.
set -euo pipefail
. "$(dirname "$0")/../check.sh"
infera=$(realpath "$1")
repo=$(realpath "$2")
py=/usr/bin/python3
if ! $py -c 'import numpy, scipy, sklearn' 2>/dev/null; then
    skip "needs python3-numpy, python3-scipy and python3-sklearn (scripts/install-deps.sh)"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$repo"/examples/fraud/{fraud_spec.json,fraud_xgb.onnx,card_features.db,transactions_raw.csv} "$work"/
cd "$work"
export INFERA_HOME="$work/home"

# Training half and a "production" half whose distances from home / last transaction shifted.
$py - <<'PY'
import csv
rows = list(csv.DictReader(open("transactions_raw.csv")))
cols = list(rows[0].keys())
train, cur = rows[:2500], rows[2500:]
for r in cur:
    if r["distance_from_home_km"]:
        r["distance_from_home_km"] = "%.4f" % (float(r["distance_from_home_km"]) * 4 + 30)
    if r["distance_from_last_txn_km"]:
        r["distance_from_last_txn_km"] = "%.4f" % (float(r["distance_from_last_txn_km"]) * 3 + 10)
for name, part in (("train.csv", train), ("current.csv", cur)):
    w = csv.DictWriter(open(name, "w", newline=""), fieldnames=cols)
    w.writeheader()
    w.writerows(part)
PY

M=(fraud_xgb.onnx --pipeline fraud_spec.json)
"$infera" batch --model fraud_xgb.onnx --pipeline fraud_spec.json --input csv:train.csv --output jsonl:train_out.jsonl \
    --log-predictions jsonl:train_log.jsonl --progress none >/dev/null 2>batch1.err
"$infera" batch --model fraud_xgb.onnx --pipeline fraud_spec.json --input csv:current.csv --output jsonl:cur_out.jsonl \
    --log-predictions jsonl:cur_log.jsonl --progress none >/dev/null 2>batch2.err
grep -q "prediction log: 2500 records, 2500 sampled, 2500 logged, 0 dropped" batch2.err || { cat batch2.err; bad "log counts"; check_done; }
"$infera" monitor baseline "${M[@]}" --data csv:train.csv -o base.json
"$infera" monitor drift "${M[@]}" --log jsonl:cur_log.jsonl --baseline base.json --json > drift.json
"$infera" monitor drift "${M[@]}" --log jsonl:cur_log.jsonl --data csv:train.csv --json > drift_data.json
"$infera" monitor drift "${M[@]}" --log jsonl:train_log.jsonl --baseline base.json --json > drift_self.json

$py - <<'PY'
import json, numpy as np
from scipy import stats
from scipy.spatial.distance import jensenshannon
EPS = 1e-4
def load(path): return [json.loads(l) for l in open(path)]
train, cur = load("train_log.jsonl"), load("cur_log.jsonl")
base, drift = json.load(open("base.json")), json.load(open("drift.json"))
assert drift == json.load(open("drift_data.json")), "--baseline FILE and --data SRC disagree"
assert drift["rows"] == 2500 and drift["model"] == "fraud_xgb", drift
assert drift["version"].startswith("sha256:")
feats = ["amount", "log_amount_ratio", "merchant_category", "hour", "is_weekend", "distance_from_home_km",
         "distance_from_last_txn_km", "card_present", "txn_count_1h", "txn_count_24h", "avg_amount_30d",
         "days_since_last_txn"]
assert list(drift["features"]) == feats, list(drift["features"])
assert set(drift["outputs"]) == {"fraud_score", "is_fraud", "decision"}, drift["outputs"]
def values(rows, k): return np.array([float(r[k]) for r in rows if r.get(k) is not None])
def close(a, b, what):
    assert abs(a - b) <= 1e-9 * max(1.0, abs(b)), "%s: infera %r, oracle %r" % (what, a, b)
def psi(e, a):
    e, a = np.maximum(e, EPS), np.maximum(a, EPS)
    return float(np.sum((a - e) * np.log(a / e)))
for sec in ("features", "outputs"):
    for k, got in drift[sec].items():
        if k == "decision": continue
        x, y = values(train, k), values(cur, k)
        edges = np.unique(np.quantile(x, [i / 10 for i in range(1, 10)]))
        b = base[sec][k]
        assert len(b["edges"]) == len(edges) and np.allclose(b["edges"], edges, rtol=1e-12, atol=0), (k, b["edges"], edges)
        e = np.bincount(np.searchsorted(edges, x, side="right"), minlength=len(edges) + 1) / len(x)
        a = np.bincount(np.searchsorted(edges, y, side="right"), minlength=len(edges) + 1) / len(y)
        assert np.array_equal(np.array(b["counts"]) / len(x), e), k
        close(got["psi"], psi(e, a), k + " psi")
        close(got["js"], float(jensenshannon(e, a)), k + " js")
        close(got["ks"], float(stats.ks_2samp(x, y, method="asymp").statistic), k + " ks")
# the categorical output
cats = sorted(set(r["decision"] for r in train) | set(r["decision"] for r in cur))
e = np.array([sum(r["decision"] == c for r in train) for c in cats]) / len(train)
o = np.array([sum(r["decision"] == c for r in cur) for c in cats], dtype=float)
a = o / o.sum()
E = o.sum() * np.maximum(e, EPS)
got = drift["outputs"]["decision"]
close(got["psi"], psi(e, a), "decision psi")
close(got["js"], float(jensenshannon(e, a)), "decision js")
close(got["chi2"], float(np.sum((o - E) ** 2 / E)), "decision chi2")
# the shifted features are flagged, the others are not
shifted = {"distance_from_home_km", "distance_from_last_txn_km"}
for k, m in drift["features"].items():
    if k in shifted:
        assert m["psi"] > 0.25 and m["ks"] > 0.2, (k, m)
    else:
        assert m["psi"] < 0.1 and m["ks"] < 0.1, (k, m)
# the training log against its own baseline: no drift at all
for sec in ("features", "outputs"):
    for k, m in json.load(open("drift_self.json"))[sec].items():
        assert abs(m["psi"]) < 1e-12 and m["js"] < 1e-6 and m.get("ks", 0) < 1e-12, (k, m)
print("drift: %d features and %d outputs equal numpy/scipy; shift flagged on %s only"
      % (len(drift["features"]), len(drift["outputs"]), sorted(shifted)))
PY

# --window / --since: the training log stamped in hour 0, the shifted log in hour 1 (minute and second
# vary); each window's drift equals the drift of its own rows, --since keeps the second hour only.
$py - <<'PY'
import json
with open("timed_log.jsonl", "w") as f:
    for hour, path in ((0, "train_log.jsonl"), (1, "cur_log.jsonl")):
        for i, l in enumerate(open(path)):
            r = json.loads(l); r["logged_at"] = "2024-03-01T%02d:%02d:%02dZ" % (hour, i % 60, (i * 7) % 60)
            f.write(json.dumps(r) + "\n")
PY
"$infera" monitor drift "${M[@]}" --log jsonl:timed_log.jsonl --baseline base.json --window 1h --json > windows.json
"$infera" monitor drift "${M[@]}" --log jsonl:timed_log.jsonl --baseline base.json --since 2024-03-01T01:00:00Z --json > since.json
$py - <<'PY'
import json
w = json.load(open("windows.json"))
assert w["window_s"] == 3600 and len(w["windows"]) == 2, w.keys()
w0, w1 = w["windows"]
assert (w0["start"], w0["end"], w1["start"]) == ("2024-03-01T00:00:00Z", "2024-03-01T01:00:00Z", "2024-03-01T01:00:00Z"), (w0["start"], w1["start"])
for got, want in ((w0, json.load(open("drift_self.json"))), (w1, json.load(open("drift.json"))), (json.load(open("since.json")), json.load(open("drift.json")))):
    for k in ("rows", "features", "outputs"): assert got[k] == want[k], k
print("windows: 2 hourly windows, each equal to its rows' drift; --since keeps the second")
PY

# Late, missing and duplicate labels: every 10th id has none, every 7th comes twice (the second
# time with the opposite label: the first wins), 20 ids were never logged, order shuffled, days late.
$py - <<'PY'
import csv, random
rows = list(csv.DictReader(open("current.csv")))
random.seed(7)
out = []
for i, r in enumerate(rows):
    if i % 10 == 3: continue
    out.append((r["transaction_id"], r["is_fraud"]))
    if i % 7 == 2: out.append((r["transaction_id"], str(1 - int(r["is_fraud"]))))
first = list(out)
random.shuffle(out)
# the first occurrence must still be the true label after shuffling: put duplicates after it
seen, ordered, later = set(), [], []
for tid, y in out:
    (later if tid in seen else ordered).append((tid, y)); seen.add(tid)
true = {tid: y for tid, y in reversed(first)}  # first occurrence in generation order
ordered = [(tid, true[tid]) for tid, _ in ordered] + [(tid, str(1 - int(true[tid]))) for tid, _ in later]
for k in range(20): ordered.append(("t9%05d" % k, "1"))
with open("labels.csv", "w", newline="") as f:
    w = csv.writer(f); w.writerow(["txn", "label", "labelled_at"])
    for tid, y in ordered: w.writerow([tid, y, "2024-04-02T00:00:00Z"])
PY
"$infera" monitor labels "${M[@]}" --log jsonl:cur_log.jsonl --labels csv:labels.csv --id-column txn \
    --label-column label --json > labels.json
$py - <<'PY'
import csv, json, numpy as np
from sklearn import metrics as skm
j = json.load(open("labels.json"))
log = {json.loads(l)["record_id"]: json.loads(l)["fraud_score"] for l in open("cur_log.jsonl")}
truth = {}
for r in csv.DictReader(open("current.csv")): truth[r["transaction_id"]] = int(r["is_fraud"])
ids = [tid for i, tid in enumerate(truth) if i % 10 != 3]
n_dup = sum(1 for i in range(2500) if i % 7 == 2 and i % 10 != 3)
expect = {"rows_joined": len(ids), "predictions": 2500, "unlabelled": 250, "labels_unmatched": 20,
          "duplicate_labels": n_dup, "duplicate_predictions": 0, "missing": 0, "labels": len(ids) + n_dup + 20}
for k, v in expect.items(): assert j[k] == v, (k, j[k], v)
assert j["task"] == "binary" and j["prediction_column"] == "fraud_score", j
y = np.array([truth[t] for t in ids]); p = np.array([log[t] for t in ids])
oracle = {"accuracy": skm.accuracy_score(y, p > 0.5), "precision": skm.precision_score(y, p > 0.5),
          "recall": skm.recall_score(y, p > 0.5), "f1": skm.f1_score(y, p > 0.5),
          "auc": skm.roc_auc_score(y, p), "logloss": skm.log_loss(y, p)}
for k, v in oracle.items():
    assert abs(j["metrics"][k] - v) <= 1e-9, (k, j["metrics"][k], v)
print("labels: %d joined, %d duplicate, 250 unlabelled, 20 unmatched; metrics equal scikit-learn" % (j["rows_joined"], n_dup))
PY

# Without a spec (the default mapping) the log holds the model's input columns and outputs by name: the
# prediction judged is the model's P(class 1), probabilities_1, as `infera evaluate` scores it -- not the
# first float column of the log (a feature)
cp "$repo"/examples/fraud/transactions.csv tx.csv
$py - <<'PY'
import csv
rows = list(csv.DictReader(open("tx.csv")))
cols = [c for c in rows[0] if c != "is_fraud"]
with open("tx_features.csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore"); w.writeheader(); w.writerows(rows[:1000])
with open("tx_labels.csv", "w", newline="") as f:
    w = csv.writer(f); w.writerow(["id", "fraud"]); w.writerows((r["transaction_id"], r["is_fraud"]) for r in rows[:1000])
PY
"$infera" batch --model fraud_xgb.onnx --input csv:tx_features.csv --output jsonl:tx_out.jsonl --id-column transaction_id \
    --log-predictions jsonl:tx_log.jsonl --progress none >/dev/null 2>&1
"$infera" monitor labels fraud_xgb.onnx --log jsonl:tx_log.jsonl --labels csv:tx_labels.csv --id-column id \
    --label-column fraud --json >tx_labels.json
$py - <<'PY'
import csv, json
from sklearn import metrics as skm
j = json.load(open("tx_labels.json"))
assert j["prediction_column"] == "probabilities_1" and j["task"] == "binary", (j["prediction_column"], j["task"])
p = {json.loads(l)["transaction_id"]: json.loads(l)["probabilities_1"] for l in open("tx_out.jsonl")}
y = {r["id"]: int(r["fraud"]) for r in csv.DictReader(open("tx_labels.csv"))}
ids = sorted(y)
yy, pp = [y[i] for i in ids], [p[i] for i in ids]
assert j["rows_joined"] == 1000, j["rows_joined"]
for k, v in {"auc": skm.roc_auc_score(yy, pp), "logloss": skm.log_loss(yy, pp),
             "accuracy": skm.accuracy_score(yy, [q > 0.5 for q in pp])}.items():
    assert abs(j["metrics"][k] - v) <= 1e-9, (k, j["metrics"][k], v)
print("labels without a spec: probabilities_1 judged, metrics equal scikit-learn")
PY
ok "monitor labels, default mapping: the model's P(class 1) is the prediction"

# Sensitive fields never reach the log: card_id (a lookup key, here also a passthrough) and
# distance_from_home_km (a model input) marked sensitive.
$py - <<'PY'
import json
s = json.load(open("fraud_spec.json"))
s["inputs"]["distance_from_home_km"]["sensitive"] = True
s["passthrough"] = ["card_id", "ts"]
json.dump(s, open("sensitive_spec.json", "w"))
PY
"$infera" batch --model fraud_xgb.onnx --pipeline sensitive_spec.json --input csv:current.csv --output jsonl:s_out.jsonl \
    --log-predictions jsonl:s_log.jsonl --progress none >/dev/null 2>&1
"$infera" batch --model fraud_xgb.onnx --pipeline sensitive_spec.json --input csv:current.csv --output sqlite:s.db?table=p \
    --log-predictions "sqlite:s_log.db?table=log" --progress none >/dev/null 2>&1
test -s s_log.jsonl || { bad "empty log"; check_done; }
if grep -q -e card_id -e 'card0' -e distance_from_home_km s_log.jsonl; then bad "a sensitive field is in the log"; check_done; fi
if sqlite3 s_log.db .dump | grep -q -e card_id -e 'card0' -e distance_from_home_km; then
    bad "a sensitive field is in the SQLite log"; check_done
fi
grep -q '"ts":' s_log.jsonl && { bad "a passthrough field was taken for an output"; check_done; }
grep -q '"distance_from_last_txn_km":' s_log.jsonl || { bad "a plain feature is missing from the log"; check_done; }
[ "$(sqlite3 s_log.db 'select count(*) from log')" = 2500 ] || { bad "SQLite log rows"; check_done; }
echo "sensitive: card_id and distance_from_home_km absent from the JSON-lines and SQLite logs"

# --log-sample: about the fraction, each record at most once.
"$infera" batch --model fraud_xgb.onnx --pipeline fraud_spec.json --input csv:current.csv --output jsonl:o3.jsonl \
    --log-predictions jsonl:sample_log.jsonl --log-sample 0.2 --progress none >/dev/null 2>&1
$py - <<'PY'
import json
ids = [json.loads(l)["record_id"] for l in open("sample_log.jsonl")]
assert 375 <= len(ids) <= 625 and len(set(ids)) == len(ids), len(ids)
print("sample: %d of 2500 logged at --log-sample 0.2" % len(ids))
PY
"$infera" batch --model fraud_xgb.onnx --pipeline fraud_spec.json --input csv:current.csv --output jsonl:o4.jsonl \
    --log-predictions jsonl:x.jsonl --log-sample 1.5 --progress none >/dev/null 2>&1 && { bad "--log-sample 1.5 accepted"; check_done; }
# infera stream logs through the same core: the same rows, sensitive fields left out.
$py - <<'PY'
import csv, json
with open("events.jsonl", "w") as f:
    for r in list(csv.DictReader(open("current.csv")))[:300]:
        r = {k: v for k, v in r.items() if v != ""}
        for k in ("amount", "distance_from_home_km", "distance_from_last_txn_km"):
            if k in r: r[k] = float(r[k])
        r["merchant_category"] = int(r["merchant_category"]); r["card_present"] = r["card_present"] == "1"
        f.write(json.dumps(r) + "\n")
PY
"$infera" stream --model fraud_xgb.onnx --pipeline sensitive_spec.json --input jsonl:events.jsonl --output jsonl:st_out.jsonl \
    --log-predictions jsonl:st_log.jsonl --progress-ms 0 >/dev/null 2>st.err || { cat st.err; bad "stream"; check_done; }
grep -q "prediction log: 300 records, 300 sampled, 300 logged, 0 dropped" st.err || { cat st.err; bad "stream log counts"; check_done; }
if grep -q -e card_id -e 'card0' -e distance_from_home_km st_log.jsonl; then bad "a sensitive field is in the stream log"; check_done; fi
$py - <<'PY'
import json
st = {json.loads(l)["record_id"]: json.loads(l) for l in open("st_log.jsonl")}
ba = {json.loads(l)["record_id"]: json.loads(l) for l in open("s_log.jsonl")}
assert len(st) == 300
for k, r in st.items():
    b = ba[k]
    for f in r:
        if f != "logged_at": assert r[f] == b[f], (k, f, r[f], b[f])
print("stream: 300 log rows equal batch's, field by field")
PY

# A failing log sink never fails scoring: every row is scored and written, the log rows are counted
# as dropped and the sink's error reported.
"$infera" batch --model fraud_xgb.onnx --pipeline fraud_spec.json --input csv:current.csv --output jsonl:o5.jsonl \
    --log-predictions jsonl:/dev/full --progress none >/dev/null 2>full.err || { cat full.err; bad "a log error failed the job"; check_done; }
[ "$(wc -l < o5.jsonl)" = 2500 ] || { bad "rows lost to a log error"; check_done; }
grep -q "2500 records, 2500 sampled, 0 logged, 2500 dropped" full.err && grep -q "No space left" full.err ||
    { cat full.err; bad "dropped log rows not counted"; check_done; }
echo "log sink error: job done, 2500 rows scored, 2500 log rows counted as dropped"
# monitor report: one self-contained HTML file whose numbers are the drift / labels commands' own,
# with quality per window equal to scikit-learn on each window's joined pairs.  The log's times are
# spread over five hours (by record order) so the report has windows.
$py - <<'PY'
import json
rows = [json.loads(l) for l in open("cur_log.jsonl")]
with open("spread_log.jsonl", "w") as f:
    for i, r in enumerate(rows):
        r["logged_at"] = "2024-04-01T%02d:%02d:00Z" % (10 + i * 5 // len(rows), i % 60)
        f.write(json.dumps(r) + "\n")
PY
"$infera" monitor report "${M[@]}" --log jsonl:spread_log.jsonl --baseline base.json --window 1h \
    --labels csv:labels.csv --id-column txn --label-column label --html report.html 2>report.err || { cat report.err; bad "report"; check_done; }
"$infera" monitor drift "${M[@]}" --log jsonl:spread_log.jsonl --baseline base.json --window 1h --json > spread_drift.json
"$infera" monitor labels "${M[@]}" --log jsonl:spread_log.jsonl --labels csv:labels.csv --id-column txn \
    --label-column label --json > spread_labels.json
$py - <<'PY'
import csv, json, re, numpy as np
from sklearn import metrics as skm
html = open("report.html").read()
assert not re.search(r'<(link|img|iframe)\b|<script[^>]*\bsrc=|url\(|@import|href="http', html), "external asset"
assert html.count("<script") == 1 and 'type="application/json" id="report-data"' in html
data = json.loads(re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.S).group(1).replace("<\\/", "</"))
drift, labels = json.load(open("spread_drift.json")), json.load(open("spread_labels.json"))
assert [w["start"] for w in data["windows"]] == [w["start"] for w in drift["windows"]] and len(drift["windows"]) == 5
for a, b in zip(data["windows"], drift["windows"]):
    assert a["features"] == b["features"] and a["outputs"] == b["outputs"] and a["rows"] == b["rows"]
assert data["quality"]["metrics"] == labels["metrics"] and data["rows"] == 2500
# quality per window: scikit-learn on the pairs whose prediction was logged in that hour
log = [json.loads(l) for l in open("spread_log.jsonl")]
first = {}
for r in csv.DictReader(open("labels.csv")): first.setdefault(r["txn"], int(r["label"]))
hours = {}
for r in log:
    if r["record_id"] in first: hours.setdefault(r["logged_at"][:13], []).append((first[r["record_id"]], r["fraud_score"]))
assert len(data["quality_windows"]) == 5
for w in data["quality_windows"]:
    pairs = hours[w["start"][:13]]
    y = np.array([a for a, _ in pairs]); p = np.array([b for _, b in pairs])
    assert w["rows"] == len(pairs)
    for k, v in {"accuracy": skm.accuracy_score(y, p > 0.5), "auc": skm.roc_auc_score(y, p),
                 "logloss": skm.log_loss(y, p)}.items():
        assert abs(w["metrics"][k] - v) <= 1e-9, (w["start"], k, w["metrics"][k], v)
# the charts: a drift line per drawn column, a point per window; a histogram per baseline column
drift_svg = re.search(r'class="chart drift-chart".*?</svg>', html, re.S).group(0)
assert drift_svg.count('class="series"') == 10 and drift_svg.count("<circle") == 50
assert 'data-name="distance_from_home_km"' in drift_svg
assert html.count('<figure class="hist">') == len(data["histograms"]) == 15
assert re.search(r'class="chart quality-chart"', html)
for h in data["histograms"].values(): assert abs(sum(h["baseline"]) - 1) < 1e-9 and abs(sum(h["current"]) - 1) < 1e-9
print("report: 5 windows of drift and quality equal the drift/labels commands and scikit-learn; no external asset")
PY
# quality rules in `monitor check --labels`: AUC per hour from scikit-learn decides which rules fire
$py - <<'PY'
import csv, json, numpy as np
from sklearn import metrics as skm
log = [json.loads(l) for l in open("spread_log.jsonl")]
first = {}
for r in csv.DictReader(open("labels.csv")): first.setdefault(r["txn"], int(r["label"]))
hours = {}
for r in log:
    if r["record_id"] in first: hours.setdefault(r["logged_at"][:13], []).append((first[r["record_id"]], r["fraud_score"]))
auc = [skm.roc_auc_score([a for a, _ in hours[h]], [b for _, b in hours[h]]) for h in sorted(hours)]
rules = [{"name": "auc fell", "metric": "auc", "threshold": auc[-1] + 0.001, "window": "1h", "min_rows": 10},
         {"name": "auc holds", "metric": "auc", "threshold": auc[-1] - 0.001, "window": "1h", "min_rows": 10},
         {"name": "auc fell 2h", "metric": "auc", "threshold": max(auc[-2:]) + 0.001, "window": "1h", "for": "2h", "min_rows": 10},
         {"name": "not 2h", "metric": "auc", "threshold": min(auc[-2:]) + 0.0005 if auc[-1] > auc[-2] else auc[-2] - 0.0005,
          "window": "1h", "for": "2h", "min_rows": 10}]
json.dump({"rules": rules}, open("qrules.json", "w"))
json.dump(auc, open("auc.json", "w"))
PY
set +e
"$infera" monitor check "${M[@]}" --log jsonl:spread_log.jsonl --rules qrules.json --labels csv:labels.csv \
    --id-column txn --label-column label --dry-run --json > qcheck.json 2>qcheck.err
rc=$?
set -e
[ "$rc" = 3 ] || { cat qcheck.err; bad "quality check exit $rc (want 3)"; check_done; }
$py - <<'PY'
import json
c, auc = json.load(open("qcheck.json")), json.load(open("auc.json"))
names = [a["rule"] for a in c["firing"]]
assert names == ["auc fell", "auc fell 2h"], names
assert abs(c["firing"][0]["value"] - auc[-1]) <= 1e-9 and c["firing"][1]["windows"] == 2, c
print("quality rules: AUC per hour as scikit-learn's; the breaching rules fire, 'for' needs every window")
PY
# A 10 % sample from two scoring threads (the log's row plans, recycled batches and one commit per flush):
# every sampled record logged once, none dropped, the sample's size within 5 sigma of 10 %, and each
# logged row equal to the job's own output row of that id (fraud_score, decision) and to the record's
# raw fields (amount, distance_from_home_km; the spec feeds them to the model as they are).
for dst in jsonl:mt_log.jsonl "sqlite:mt_log.db?table=log"; do
    "$infera" batch --model fraud_xgb.onnx --pipeline fraud_spec.json --input csv:current.csv --output jsonl:mt_out.jsonl \
        --threads 2 --chunk-rows 100 --log-predictions "$dst" --log-sample 0.1 --progress none >/dev/null 2>mt.err
    grep -qE "prediction log: 2500 records, ([0-9]+) sampled, \1 logged, 0 dropped" mt.err || { cat mt.err; bad "sample counts ($dst)"; check_done; }
done
$py - <<'PY'
import csv, json, math, re, sqlite3
n_sampled = int(re.search(r"(\d+) sampled", open("mt.err").read()).group(1))
out = {r["transaction_id"]: r for r in map(json.loads, open("mt_out.jsonl"))}
raw = {r["transaction_id"]: r for r in csv.DictReader(open("current.csv"))}
con = sqlite3.connect("mt_log.db")
con.row_factory = sqlite3.Row
for name, rows in (("jsonl", [json.loads(l) for l in open("mt_log.jsonl")]),
                   ("sqlite", [dict(r) for r in con.execute("SELECT * FROM log")])):
    ids = [r["record_id"] for r in rows]
    assert len(ids) == len(set(ids)), name + ": a record logged twice"
    assert abs(len(ids) - 250) <= 5 * math.sqrt(2500 * 0.1 * 0.9), (name, len(ids))
    for r in rows:
        o, x = out[r["record_id"]], raw[r["record_id"]]
        assert r["fraud_score"] == o["fraud_score"] and r["decision"] == o["decision"], (name, r, o)
        assert abs(r["amount"] - float(x["amount"])) <= 1e-6 * abs(float(x["amount"])), (name, r, x)
        d = x["distance_from_home_km"]
        assert (r["distance_from_home_km"] is None) if d == "" else abs(r["distance_from_home_km"] - float(d)) <= 1e-4, (name, r, x)
        assert "card_id" not in r
    print("sampled log (%s): %d of 2500 rows, each once, equal to the job's output and the raw records" % (name, len(rows)))
assert len(rows) == n_sampled
PY
# One-record batches (a scored batch per record, as serve's one-record requests make): the writer keeps
# up with thousands of tiny batches a second, nothing dropped.
"$infera" batch --model fraud_xgb.onnx --pipeline fraud_spec.json --input csv:transactions_raw.csv --output jsonl:one_out.jsonl \
    --chunk-rows 1 --log-predictions jsonl:one_log.jsonl --progress none >/dev/null 2>one.err
grep -q "prediction log: 5000 records, 5000 sampled, 5000 logged, 0 dropped" one.err || { cat one.err; bad "one-record batches"; check_done; }
[ "$(wc -l < one_log.jsonl)" = 5000 ] || { bad "one-record batches: $(wc -l < one_log.jsonl) log rows"; check_done; }
ok "monitor: every check above"
check_done
