#!/usr/bin/env bash
# bench/monitor/console_load.sh -- issue 23's console target (pages load in <= 200 ms with a registry
# of 100 models and 10,000 audit rows), measured in Debian's chromium (bench/monitor/console_load.js).
#
#   bench/monitor/console_load.sh INFERA_BINARY [RUNS]
#
# Registers 100 models (the fraud model under m000..m099, each with its spec), adds audit rows up to
# 10,000 (registry alias moves through the CLI for the first ones; the rest inserted into reg_audit
# directly -- the console lists them and never verifies the chain, so their hashes do not matter here), serves
# 64 of them (serve's limit) with --ui and loads /ui RUNS times (default 5) in a fresh tab; the page's
# registry views (100 models, the newest 50 audit records -- a page --, the first model's lineage) and the
# quality view (100 models with a stored history of 30 windows; the first model's chart) are waited for too.  UI_ONLY=1: `infera ui --home` (no model served) instead of serve.
set -euo pipefail
INFERA=$(realpath "$1")
RUNS=${2:-10}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
UI="$REPO/tests/monitor/ui"
CHROMIUM=$(command -v chromium || command -v chromium-browser)
[ -d "$UI/node_modules/puppeteer-core" ] || (cd "$UI" && npm ci --ignore-scripts --no-audit --no-fund >/dev/null)
. "$REPO/scripts/serve_port.sh"
TMP=$(mktemp -d)
SERVER=
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$TMP"' EXIT
cp "$REPO"/examples/fraud/{fraud_spec.json,fraud_xgb.onnx,card_features.db} "$TMP"/
cd "$TMP"
export INFERA_HOME="$TMP/home"
MODELS=()
for i in $(seq -f "%03g" 0 99); do
    "$INFERA" registry register "m$i" fraud_xgb.onnx --pipeline fraud_spec.json >/dev/null
    "$INFERA" registry alias "m$i@1" production >/dev/null
    [ "$i" -lt 64 ] && MODELS+=(--model "m$i=m$i@production") # serve's limit: 64 served models
done
/usr/bin/python3 - "$INFERA_HOME/registry.db" <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
n, top = con.execute("SELECT count(*), coalesce(max(seq), 0) FROM reg_audit").fetchone()
con.executemany("INSERT INTO reg_audit VALUES (?, '2026-12-02T00:00:00Z', 'bench', 'alias.set', ?, 1, 'ok', '{}', '', '')",
                [(top + 1 + i, "m%03d" % (i % 100)) for i in range(10000 - n)])
con.commit()
print("audit rows:", con.execute("SELECT count(*) FROM reg_audit").fetchone()[0])
# a quality history per model (as serve --monitor stores it: 30 daily windows, six metrics), drawn by the
# console's quality view
import json, os
home = os.path.dirname(sys.argv[1])
for i in range(100):
    os.makedirs("%s/quality/m%03d" % (home, i), exist_ok=True)
    ws = [{"start": "2026-11-%02dT00:00:00.000000Z" % (d + 1), "end": "2026-11-%02dT00:00:00.000000Z" % (d + 2),
           "rows": 1000 + d, "task": "binary", "metrics": {"accuracy": 0.9 + d / 1000, "precision": 0.7, "recall": 0.4,
           "f1": 0.5, "auc": 0.8 + d / 500, "logloss": 0.2}} for d in range(30)]
    json.dump({"model": "m%03d" % i, "version": "1", "window_s": 86400, "updated": "2026-12-01T00:00:00Z",
               "rows_joined": 30435, "windows": ws}, open("%s/quality/m%03d/1.json" % (home, i), "w"))
PY
if [ "${UI_ONLY:-0}" = 1 ]; then
    MODELS=()
    "$INFERA" ui --home "$INFERA_HOME" --port 0 2>s.log &
else
    "$INFERA" serve --port 0 --ui "${MODELS[@]}" 2>s.log &
fi
# 64 served models, the console's models table and traffic table list each
SERVER=$!
PORT=$(serve_port s.log 600) || { cat s.log; exit 1; }
echo "state JSON: $(curl -s "http://127.0.0.1:$PORT/ui/state" | wc -c) bytes; page: $(curl -s "http://127.0.0.1:$PORT/ui" | wc -c) bytes"
# the server's part: time to the last byte of the page and of the state, 20 times each (medians, ms)
for path in /ui /ui/state /ui/registry "/ui/audit?limit=50" "/ui/audit?limit=200" "/ui/lineage?ref=m000" /ui/quality; do
    echo "$path: median $(for _ in $(seq 20); do curl -s -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$PORT$path"; done |
        sort -g | awk '{a[NR] = $1 * 1000} END{printf "%.2f ms (max %.2f)", a[int((NR + 1) / 2)], a[NR]}')"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
NODE_PATH="$UI/node_modules" node "$HERE/console_load.js" "$CHROMIUM" "http://127.0.0.1:$PORT" $((${#MODELS[@]} / 2)) "$RUNS" \
    "$SERVER" 100
