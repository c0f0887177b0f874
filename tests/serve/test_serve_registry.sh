#!/usr/bin/env bash
# test_serve_registry.sh -- `infera serve` with the model registry (real
# SQLite registry in a temp home, real server on loopback, curl as client):
# bearer-token auth (401 / 403 / 200, open health and metrics), swap under
# load while the alias moves three times (zero failed requests, every
# response names the version that served it), a failed load (corrupted
# artifact) keeps the old version, predictions are audited per calling
# principal, and --all-aliases serves every NAME@ALIAS (new aliases picked
# up, removed ones dropped); the repository API's rules with auth on (file
# paths need the admin role, refs outside --model-root are refused alike,
# loads and unloads audited as the caller) and token edge cases.
#
#   test_serve_registry.sh INFERA_BINARY SOURCE_DIR
# Prints one line per check and closes with "N passed, M failed".
set -u
. "$(dirname "$0")/../check.sh"
INFERA=$1
SRC=$2
. "$SRC/scripts/serve_port.sh"

TMP=$(mktemp -d /tmp/infera-serve-reg-XXXXXX)
SERVER_PID=
LOAD_PIDS=()
cleanup() {
    for p in "${LOAD_PIDS[@]}"; do kill "$p" 2>/dev/null; done
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    [ "$FAIL" = 0 ] && rm -rf "$TMP"
}
trap cleanup EXIT

export INFERA_HOME=$TMP/home
unset INFERA_REGISTRY INFERA_TOKEN
MODEL=$SRC/examples/fraud/fraud_xgb.onnx
for i in 1 2 3 4; do
    "$INFERA" registry register fraud "$MODEL" --description "version $i" >/dev/null || { bad "register"; check_done; }
done
"$INFERA" registry alias fraud@1 production >/dev/null
ADMIN=$("$INFERA" registry token create alice --role admin | tail -1)
export INFERA_TOKEN=$ADMIN
BOB=$("$INFERA" registry token create bob --role predictor --model fraud | tail -1)
EVE=$("$INFERA" registry token create eve --role viewer | tail -1)
CAROL=$("$INFERA" registry token create carol --role predictor --model fraud | tail -1)
PUB=$("$INFERA" registry token create pat --role publisher --model fraud | tail -1)
mkdir -p "$TMP/root"
cp "$MODEL" "$TMP/root/fraud2.onnx"
check_run "registry: auth on with tokens for admin, predictor and viewer" test -n "$BOB" -a -n "$EVE"

# --port 0: the kernel picks a free port; the server prints it
"$INFERA" serve --port 0 --model fraud@production --poll-secs 1 --auth-cache-secs 1 \
    --access-log "$TMP/access.log" --allow-repository-paths --model-root "$TMP/root" 2>"$TMP/server.log" &
SERVER_PID=$!
PORT=$(serve_port "$TMP/server.log") || true
URL=http://127.0.0.1:$PORT
for _ in $(seq 100); do curl -sf "$URL/v2/health/live" >/dev/null && break; sleep 0.1; done
check_run "server from the registry is live" curl -sf "$URL/v2/health/live" -o /dev/null

BODY='{"inputs":[{"name":"input","shape":[1,12],"datatype":"FP32","data":[0.5,1.25,3,0.1,2,7,0.3,1,0,12.5,3.3,0.9]}]}'
infer() { # infer TOKEN -> "status body"
    local auth=()
    [ -n "$1" ] && auth=(-H "Authorization: Bearer $1")
    curl -s -o "$TMP/out.json" -w '%{http_code}' "${auth[@]}" -X POST "$URL/v2/models/fraud/infer" -d "$BODY"
}
code=$(infer "")
check_run "no token -> 401 ($code: $(cat "$TMP/out.json"))" test "$code" = 401
code=$(infer "inf_bogus_token")
check_run "unknown token -> 401 ($code)" test "$code" = 401
code=$(infer "$EVE")
check_run "viewer without predictor -> 403 naming the role ($code: $(cat "$TMP/out.json"))" \
    bash -c "test $code = 403 && grep -q 'needs role predictor' $TMP/out.json"
code=$(infer "$BOB")
check_run "predictor -> 200 from version 1 ($code: $(cat "$TMP/out.json"))" \
    bash -c "test $code = 200 && grep -q '\"model_version\":\"1\"' $TMP/out.json"
check_run "health stays open without a token" curl -sf "$URL/v2/health/ready" -o /dev/null
check_run "metrics stay open without a token" bash -c "curl -sf $URL/metrics | grep -q nv_inference_request_success"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$URL/v2/repository/models/fraud/unload")
check_run "repository control needs a token too ($code)" test "$code" = 401

# ---- swap under load: 3 clients loop while the alias moves 1 -> 2 -> 3 -> 1
load_client() { # writes "status version" per request
    local out=$1
    while :; do
        curl -s -H "Authorization: Bearer $BOB" -X POST "$URL/v2/models/fraud/infer" -d "$BODY" -w ' %{http_code}\n' |
            sed -E 's/.*"model_version":"([0-9]+)".* ([0-9]+)$/\2 \1/; s/^\{"error".* ([0-9]+)$/\1 error/' >>"$out"
    done
}
for c in 1 2 3; do
    load_client "$TMP/load$c.txt" &
    LOAD_PIDS+=($!)
done
wait_version() { # wait until responses name version $1
    for _ in $(seq 60); do
        infer "$BOB" >/dev/null
        grep -q "\"model_version\":\"$1\"" "$TMP/out.json" && return 0
        sleep 0.2
    done
    return 1
}
sleep 1
"$INFERA" registry alias fraud@2 production >/dev/null
check_run "alias moved to 2: the server follows" wait_version 2
sleep 1
"$INFERA" registry alias fraud@3 production >/dev/null
check_run "alias moved to 3: the server follows" wait_version 3
sleep 1
"$INFERA" registry alias fraud@1 production >/dev/null
check_run "alias moved back to 1: the server follows" wait_version 1
sleep 1
for p in "${LOAD_PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
LOAD_PIDS=()
cat "$TMP"/load*.txt | grep -E '^[0-9]{3} ' >"$TMP/all.txt"
total=$(wc -l <"$TMP/all.txt")
bad=$(grep -vc '^200 [0-9]' "$TMP/all.txt")
check_run "swap under load: $total requests, $bad failed or without a version" test "$total" -gt 50 -a "$bad" = 0
versions=$(cut -d' ' -f2 "$TMP/all.txt" | sort -u | tr '\n' ' ')
check_run "responses were served by versions 1, 2 and 3 ($versions)" test "$versions" = "1 2 3 "

# ---- a failed load keeps the old version: corrupt version 4's artifact
ART=$(find "$INFERA_HOME" -path '*sha256*' -type f | head -1)
cp "$ART" "$TMP/artifact.bak"
printf 'corrupted' >"$ART"
"$INFERA" registry alias fraud@4 production >/dev/null
sleep 3
code=$(infer "$BOB")
check_run "after a failed load, version 1 still serves ($code: $(head -c 200 "$TMP/out.json"))" \
    bash -c "test $code = 200 && grep -q '\"model_version\":\"1\"' $TMP/out.json"
check_run "the failure is reported (server log)" grep -q "load of fraud@production failed" "$TMP/server.log"
code=$(curl -s -o "$TMP/index.json" -w '%{http_code}' -H "Authorization: Bearer $ADMIN" -X POST "$URL/v2/repository/index")
check_run "repository index names the failed load ($code: $(head -c 300 "$TMP/index.json"))" \
    bash -c "test $code = 200 && grep -q 'previous version keeps serving' $TMP/index.json"
cp "$TMP/artifact.bak" "$ART"
check_run "metrics count the load failure" bash -c "curl -s $URL/metrics | grep -Eq '^infera_model_load_failures_total [1-9]'"
check_run "metrics show load and warm-up seconds per version" \
    bash -c "curl -s $URL/metrics | grep -q 'infera_model_warmup_seconds{model=\"fraud\",version=\"2\"}'"

# ---- a second caller, audited under its own name
for _ in 1 2 3; do infer "$CAROL" >/dev/null; done
code=$(infer "$CAROL")
check_run "second predictor (carol) -> 200 ($code)" test "$code" = 200

# ---- token edge cases (issue 27, what held): 401 / 431
code=$(curl -s -o "$TMP/out.json" -w '%{http_code}' -H "Authorization: Bearer " -X POST "$URL/v2/models/fraud/infer" -d "$BODY")
check_run "an empty bearer token -> 401 ($code)" test "$code" = 401
code=$(curl -s -o "$TMP/out.json" -w '%{http_code}' -H "Authorization: Basic $BOB" -X POST "$URL/v2/models/fraud/infer" -d "$BODY")
check_run "a token under another scheme (Basic) -> 401 ($code)" test "$code" = 401
code=$(curl -s -o "$TMP/out.json" -w '%{http_code}' -H "Authorization: Bearer ${BOB}x" -X POST "$URL/v2/models/fraud/infer" -d "$BODY")
check_run "a token with a byte appended -> 401 ($code)" test "$code" = 401
BIG=$(head -c 9000 /dev/zero | tr '\0' a)
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $BIG" -X POST "$URL/v2/models/fraud/infer" -d "$BODY")
check_run "a 9000-byte token -> 431 ($code)" test "$code" = 431

# ---- repository API with auth (issue 27, finding 5): who may load what, and the audit
repo() { # repo TOKEN load|unload NAME [REF] -> status (body in $TMP/repo.json)
    local body='' auth=()
    [ -n "$1" ] && auth=(-H "Authorization: Bearer $1")
    [ -n "${4:-}" ] && body="{\"parameters\":{\"ref\":\"$4\"}}"
    curl -s -o "$TMP/repo.json" -w '%{http_code}' "${auth[@]}" -X POST "$URL/v2/repository/models/$3/$2" -d "$body"
}
code=$(repo "$PUB" load fraud "$TMP/root/fraud2.onnx")
check_run "a publisher of fraud loading a file path into it -> 403 naming the admin role ($code: $(cat "$TMP/repo.json"))" \
    bash -c "test $code = 403 && grep -q 'needs the admin role' $TMP/repo.json"
code=$(repo "$EVE" load fraud)
check_run "a viewer reloading a model -> 403 ($code)" test "$code" = 403
code=$(repo "$PUB" load fraud)
check_run "a publisher on fraud reloads it from the registry -> 200 ($code: $(cat "$TMP/repo.json"))" test "$code" = 200
code=$(repo "$ADMIN" load fraud2 /etc/passwd)
check_run "an admin loading a file outside --model-root -> 404, nothing said of it ($code: $(cat "$TMP/repo.json"))" \
    bash -c "test $code = 404 && grep -q 'not found or not allowed' $TMP/repo.json && ! grep -q protobuf $TMP/repo.json"
code=$(repo "$ADMIN" load fraud2 fraud2.onnx)
check_run "an admin loading a file under --model-root -> 200 ($code: $(cat "$TMP/repo.json"))" test "$code" = 200
code=$(repo "$ADMIN" unload fraud2)
check_run "an admin unloading it -> 200 ($code)" test "$code" = 200

# ---- drain and audit
stop_child "$SERVER_PID"
rc=$?
SERVER_PID=
check_run "server exits 0 on SIGTERM ($rc)" test "$rc" = 0
"$INFERA" registry audit --model fraud >"$TMP/audit.txt" 2>&1
check_run "predictions audited per version (mode serve, rows, no inputs)" \
    bash -c "grep -E 'predict +fraud@2 ' $TMP/audit.txt | grep -q '\"mode\":\"serve\"' && grep -E 'predict +fraud@3 ' $TMP/audit.txt | grep -q '\"rows\":'"
check_run "denied calls are audited" grep -Eq "eve +serve +fraud +denied" "$TMP/audit.txt"
# carol's 4 rows, whichever versions served them: the poller retries fraud@4
# every second, and once its artifact is restored (above) it may load it
# between carol's calls
carol_rows=$(grep -E ' carol +predict +fraud@[0-9]+ +ok' "$TMP/audit.txt" | sed -nE 's/.*"rows":([0-9]+).*/\1/p' |
    awk '{s += $1} END {print s + 0}')
check_run "predictions are audited per calling principal: bob's and carol's records apart (carol: $carol_rows rows)" \
    bash -c "grep -Eq ' bob +predict +fraud@[0-9]+ +ok' $TMP/audit.txt && test $carol_rows = 4"
check_run "no predict record is written under the server's own principal (alice) for these calls" \
    bash -c "! grep -Eq ' alice +predict ' $TMP/audit.txt"
"$INFERA" registry audit >"$TMP/audit_all.txt" 2>&1
check_run "repository loads and unloads are audited with the caller: pat's reload, alice's load, refusal and unload" \
    bash -c "grep -Eq ' pat +serve-load +fraud .*ok' $TMP/audit_all.txt &&
             grep -Eq ' alice +serve-load .*refused' $TMP/audit_all.txt &&
             grep -Eq ' alice +serve-load .*ok.*fraud2' $TMP/audit_all.txt &&
             grep -Eq ' alice +serve-unload .*ok.*fraud2' $TMP/audit_all.txt"
check_run "tokens never reach the access log or the server log" \
    bash -c "! grep -q -e '$BOB' -e '$ADMIN' -e '$EVE' $TMP/access.log $TMP/server.log"
check_run "access log lines name model and version" grep -q '"model":"fraud","version":"2"' "$TMP/access.log"
# ---- --all-aliases: every NAME@ALIAS, following new and removed aliases
"$INFERA" registry alias fraud@2 staging >/dev/null
"$INFERA" serve --port 0 --all-aliases --poll-secs 1 2>"$TMP/server2.log" &
SERVER_PID=$!
PORT=$(serve_port "$TMP/server2.log") || true
URL=http://127.0.0.1:$PORT
alias_version() { # alias_version NAME@ALIAS -> the version that answered, or the HTTP code
    curl -s -H "Authorization: Bearer $BOB" -X POST "$URL/v2/models/$1/infer" -d "$BODY" -w ' %{http_code}' |
        sed -E 's/.*"model_version":"([0-9]+)".* 200$/\1/; s/^.* ([0-9]{3})$/\1/'
}
check_run "--all-aliases serves fraud@production (version 4 since the move above)" test "$(alias_version fraud@production)" = 4
check_run "--all-aliases serves fraud@staging (version 2)" test "$(alias_version fraud@staging)" = 2
"$INFERA" registry alias fraud@3 canary >/dev/null
"$INFERA" registry unalias fraud staging >/dev/null
wait_alias() { # wait_alias NAME@ALIAS WANT
    for _ in $(seq 50); do
        [ "$(alias_version "$1")" = "$2" ] && return 0
        sleep 0.2
    done
    return 1
}
check_run "a new alias is picked up (fraud@canary -> 3)" wait_alias fraud@canary 3
check_run "a removed alias is dropped (fraud@staging -> 404)" wait_alias fraud@staging 404
stop_child "$SERVER_PID"
SERVER_PID=
check_done
