# bench/llm/austen_pair.sh -- sourced by speculative.sh and spec_generate.sh: the committed Austen pair
# (tests/llm/models) and the files made from it into the cache, never committed: the F32 target
# (make_models.py --f32-from-q8, bit for bit the Q8_0 file's numbers) and the Q4_0 draft
# (--draft-q4-from-f32).  Sets M, F32_DIR and PROMPTS (the four reference prompts).
M=tests/llm/models
F32_DIR="${INFERA_CACHE:-$HOME/.cache/infera}/models/$(sha256sum "$M/austen-target-q8_0.gguf" | cut -c1-16)"
if [ ! -f "$F32_DIR/austen-target-f32.gguf" ]; then
  mkdir -p "$F32_DIR" && cp "$M/austen-target-q8_0.gguf" "$F32_DIR/"
  /usr/bin/python3 "$M/make_models.py" --f32-from-q8 --out "$F32_DIR" >/dev/null
fi
if [ ! -f "$F32_DIR/austen-draft-q4_0.gguf" ]; then
  cp "$M/austen-draft-f32.gguf" "$F32_DIR/"
  /usr/bin/python3 "$M/make_models.py" --draft-q4-from-f32 --out "$F32_DIR" >/dev/null
fi
mapfile -t PROMPTS < <(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); [print(v["prompt"]) for v in r["target"].values()]' "$M/ref/reference.json")
