#!/usr/bin/env bash
# tests/monitor/test_monitor_ui_registry.sh -- `infera ui --home DIR`: the console on its own, with the
# registry's models, versions and aliases, a model's lineage graph and the audit log, in a real headless
# browser (Debian's chromium driven by npm puppeteer-core, pinned in tests/monitor/ui/package.json).
# The oracle is the registry's own SQLite file read with python's sqlite3.  Also: `infera ui` serves no
# model route (infer, records, repository load: 404) and needs --home or --registry.  Quality over time:
# a stored quality history (HOME/quality/fraud/{1,2}.json, written here as serve --monitor writes it) is
# drawn as one SVG chart per version whose points carry the stored values.
# Screenshots in ARTIFACT_DIR (monitor_ui_registry.png, _lineage.png, _quality.png).
# Usage: test_monitor_ui_registry.sh INFERA_BIN REPO_DIR [ARTIFACT_DIR].  Exits 77 without chromium/node.
set -euo pipefail
. "$(dirname "$0")/../check.sh"
infera=$(realpath "$1")
repo=$(realpath "$2")
artifacts=${3:-$PWD}
chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium" ] || ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    skip "needs Debian's chromium and node/npm (scripts/install-deps.sh)"
fi
ui="$repo/tests/monitor/ui"
if [ ! -d "$ui/node_modules/puppeteer-core" ]; then
    (cd "$ui" && npm ci --ignore-scripts --no-audit --no-fund >/dev/null 2>&1) ||
        skip "npm could not install puppeteer-core"
fi
. "$repo/scripts/serve_port.sh"
mkdir -p "$artifacts"
artifacts=$(realpath "$artifacts")
work=$(mktemp -d)
SERVER_PID=
trap '[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; rm -rf "$work"' EXIT
cp "$repo"/examples/fraud/{fraud_spec.json,fraud_xgb.onnx,card_features.db,transactions_raw.csv} "$work"/
cd "$work"
home="$work/reg"
fail() { bad "$*"; [ -f ui.log ] && tail -20 ui.log; check_done; }
head -301 transactions_raw.csv >train.csv
export INFERA_HOME="$home"
"$infera" registry register fraud fraud_xgb.onnx --pipeline fraud_spec.json >/dev/null
"$infera" registry register fraud fraud_xgb.onnx --pipeline fraud_spec.json --training-data csv:train.csv \
    --baseline csv:train.csv >/dev/null 2>&1
"$infera" registry alias fraud@2 production >/dev/null
"$infera" registry alias fraud@1 canary >/dev/null
"$infera" registry register scorer fraud_xgb.onnx --pipeline fraud_spec.json --training-data "sqlite:train.db?table=t" >/dev/null
"$infera" batch --model fraud@2 --input csv:train.csv --output "sqlite:preds.db?table=scores" --progress none >/dev/null 2>&1
"$infera" batch --model fraud@1 --input csv:train.csv --output jsonl:old.jsonl --progress none >/dev/null 2>&1
"$infera" registry delete fraud@1 --reason "superseded" >/dev/null 2>&1 || true
unset INFERA_HOME   # `infera ui` gets the registry from --home alone

/usr/bin/python3 - <<'PY'
import json, sqlite3
c = sqlite3.connect("reg/registry.db")
# audit rows up to 120 (the console pages them 50 at a time: pages of 50, 50, 20); their hash chain is
# not what this test reads
n, top = c.execute("select count(*), coalesce(max(seq), 0) from reg_audit").fetchone()
c.executemany("insert into reg_audit values (?, '2026-12-02T00:00:00Z', 'test', 'alias.set', ?, 1, 'ok', '{}', '', '')",
              [(top + 1 + i, "pad%03d" % i) for i in range(120 - n)])
c.commit()
models = []
for (name,) in c.execute("select name from reg_models order by name"):
    latest = c.execute("select max(version) from reg_versions where name=?", (name,)).fetchone()[0]
    live = c.execute("select count(*) from reg_versions where name=? and deleted_at is null", (name,)).fetchone()[0]
    al = sorted(c.execute("select alias, version from reg_aliases where name=?", (name,)).fetchall())
    models.append({"name": name, "latest": latest, "live": live,
                   "aliases": ", ".join("%s -> %d" % a for a in al) or "-"})
data, vers, uses, edges = set(), [], set(), 0
for v, td, deleted in c.execute("select version, training_data, deleted_at from reg_versions where name='fraud'"):
    vers.append("fraud@%d%s" % (v, " (deleted)" if deleted else ""))
    if td: data.add(td); edges += 1
    for kind, src, dst in c.execute("select kind, source, destination from reg_lineage where name='fraud' and version=?", (v,)):
        uses.add("%s %s" % (kind, dst or src or "")); edges += 1
audit = [[s, a, m or "-"] for s, a, m in c.execute("select seq, action, model from reg_audit order by seq desc")]
# a quality history as serve --monitor stores it (monitor/quality_store.h): the page must draw these values
import os
quality = []
for ver, base in (("1", 0.93), ("2", 0.88)):
    ws = []
    for k in range(4):
        m = {"accuracy": base - 0.01 * k, "precision": 0.5 + 0.05 * k, "recall": 0.25 + 0.125 * k, "f1": 0.4,
             "auc": 0.9 - 0.02 * k, "logloss": 0.3 + 0.1 * k}
        start = "2026-12-0%dT00:00:00.000000Z" % (k + 1)
        ws.append({"start": start, "end": start, "rows": 100 + k, "task": "binary", "metrics": m})
        quality += [[ver, name, start, v] for name, v in m.items()]
    os.makedirs("reg/quality/fraud", exist_ok=True)
    json.dump({"model": "fraud", "version": ver, "window_s": 86400, "updated": "2026-12-05T00:00:00Z",
               "rows_joined": 406, "windows": ws}, open("reg/quality/fraud/%s.json" % ver, "w"))
json.dump({"quality": sorted(quality), "models": models, "lineage": {"model": "fraud", "data": sorted(data), "versions": vers,
           "uses": sorted(uses), "edges": edges}, "audit": audit[:50], "audit_pages": [audit[:50], audit[50:100], audit[100:]]},
          open("expected.json", "w"))
PY

set +e
"$infera" ui --port 0 >noreg.log 2>&1; rc=$?
set -e
[ "$rc" = 2 ] || fail "infera ui without --home/--registry: exit $rc (want 2)"
"$infera" ui --home "$home" --port 0 2>ui.log &
SERVER_PID=$!
PORT=$(serve_port ui.log) || fail "infera ui did not start"
url=http://127.0.0.1:$PORT
for path in "POST /v2/models/fraud/infer" "POST /v2/models/fraud/records" "POST /v2/repository/models/fraud/load" \
            "GET /v2/models/fraud"; do
    code=$(curl -s -o /dev/null -w '%{http_code}' -X "${path%% *}" -d '{}' "$url${path#* }")
    [ "$code" = 404 ] || fail "infera ui answered $path with $code (want 404)"
done
[ "$(curl -s -o /dev/null -w '%{http_code}' "$url/v2/health/live")" = 200 ] || fail "health"
NODE_PATH="$ui/node_modules" node "$ui/registry_console_test.js" "$chromium" "$url" expected.json \
    "$artifacts/monitor_ui_registry" || fail "browser checks"
# the server keeps one registry handle: a change made meanwhile shows at the next view
INFERA_HOME="$home" "$infera" registry register late fraud_xgb.onnx --pipeline fraud_spec.json >/dev/null
INFERA_HOME="$home" "$infera" registry alias fraud@2 staging >/dev/null
curl -s "$url/ui/registry" | /usr/bin/python3 -c '
import json, sys
m = {x["name"]: x for x in json.load(sys.stdin)["models"]}
assert "late" in m and "staging" in m["fraud"]["aliases"], m.keys()' || fail "a registry change after the first view is not shown"
kill "$SERVER_PID"; wait "$SERVER_PID" || true; SERVER_PID=
if grep -q -E 'Sanitizer|runtime error' ui.log; then cat ui.log; fail "sanitizer report"; fi
ok "monitor ui registry: every check above"
check_done
