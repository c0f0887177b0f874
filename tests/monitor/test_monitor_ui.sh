#!/usr/bin/env bash
# tests/monitor/test_monitor_ui.sh -- `infera serve --ui` in a real headless browser (Debian's chromium
# driven by npm puppeteer-core, pinned in tests/monitor/ui/package.json and installed here once):
# the console renders, its live request counter follows requests sent after it loaded, its drift
# value for the shifted feature equals /metrics' gauge, charts are drawn, no console error, no
# external asset.  A screenshot is saved in ARTIFACT_DIR (monitor_ui.png).
# Usage: test_monitor_ui.sh INFERA_BIN REPO_DIR [ARTIFACT_DIR].  Exits 77 without chromium / node.
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
work=$(mktemp -d)
SERVER_PID=
trap '[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; rm -rf "$work"' EXIT
cp "$repo"/examples/fraud/{fraud_spec.json,fraud_xgb.onnx,card_features.db,transactions_raw.csv} "$work"/
cd "$work"
export INFERA_HOME="$work/home"
/usr/bin/python3 - <<'PY'
import csv, json
rows = list(csv.DictReader(open("transactions_raw.csv")))
w = csv.DictWriter(open("train.csv", "w", newline=""), fieldnames=list(rows[0].keys()))
w.writeheader(); w.writerows(rows[:2000])
def num(v):
    try: return float(v) if "." in v else int(v)
    except ValueError: return v if v != "" else None
cur = [{k: num(v) for k, v in r.items()} for r in rows[2500:2540]]
for r in cur:
    if r["distance_from_home_km"] is not None: r["distance_from_home_km"] = r["distance_from_home_km"] * 4 + 30
json.dump({"records": cur}, open("records.json", "w"))
PY
"$infera" registry register fraud fraud_xgb.onnx --pipeline fraud_spec.json >/dev/null
# the baseline stored with the version: serve finds it without --baseline
"$infera" monitor baseline fraud --data csv:train.csv --register 2>/dev/null
"$infera" serve --port 0 --model fraud=fraud --ui 2>server.log &
SERVER_PID=$!
PORT=$(serve_port server.log) || { cat server.log; bad "server did not start"; check_done; }
curl -sf -X POST --data-binary @records.json "http://127.0.0.1:$PORT/v2/models/fraud/records" >/dev/null
NODE_PATH="$ui/node_modules" node "$ui/console_test.js" "$chromium" "http://127.0.0.1:$PORT" records.json \
    "$artifacts/monitor_ui.png"
# without --ui there is no console
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/ui/nope")
[ "$code" = 404 ] || { bad "/ui/nope answered $code"; check_done; }
kill "$SERVER_PID"; wait "$SERVER_PID" || true; SERVER_PID=
if grep -q -E 'Sanitizer|runtime error' server.log; then cat server.log; bad "sanitizer report"; check_done; fi
ok "monitor ui: every check above"
check_done
