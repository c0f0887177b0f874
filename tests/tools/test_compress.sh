#!/usr/bin/env bash
# Model compression tools (docs/compression.md): `infera evaluate`, `prune`, `distill`, and registry lineage.
#   - evaluate's metrics equal scikit-learn's, computed from the predictions `infera run` writes, within
#     1e-9 (binary with tied scores, multi-class, regression); --baseline, --max-drop exit status;
#   - structured pruning keeps the output names and shapes, makes the model smaller, the least-squares
#     refit brings it closer to the original, and ONNX Runtime runs the pruned model with the same outputs;
#   - distillation of the fraud trees: the same --seed gives the same file byte for byte; ONNX Runtime
#     runs the student with the same outputs as Infera;
#   - bad input gets a clear error: a model without MatMul/Conv, an empty source, a missing label column;
#   - `registry register --derived-from` and `evaluate --register` show in lineage and show.
# Oracles: scikit-learn (Debian python3-sklearn), ONNX Runtime (onnxruntime-node, tests/models/ort).
# Exits 77 (skipped) without python3-sklearn / python3-onnx; the ORT checks are skipped, with a
# message, when onnxruntime-node is not installed.
#   test_compress.sh INFERA SOURCE_DIR
set -u
. "$(dirname "$0")/../check.sh"
infera=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") # absolute: one check runs from another directory
src=$(cd "$2" && pwd)
py=/usr/bin/python3
oracle=$src/tests/tools/compress_oracle.py
if ! $py -c 'import numpy, sklearn, onnx' 2>/dev/null; then
    skip "needs python3-numpy, python3-sklearn and python3-onnx (scripts/install-deps.sh)"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export INFERA_HOME=$work/home
have_ort=0
node -e "require('$src/tests/models/ort/node_modules/onnxruntime-node')" >/dev/null 2>&1 && have_ort=1
[ $have_ort = 1 ] || echo "note: onnxruntime-node not installed ((cd tests/models/ort && npm ci --ignore-scripts)): ONNX Runtime checks skipped"

d=$work/d
mkdir -p "$d"
$py "$oracle" data "$d" || { bad "cannot make the test data"; check_done; }
mlp=$src/tests/models/mlp.onnx
fraud=$src/examples/fraud

# ---- evaluate vs scikit-learn -------------------------------------------------------------
for c in binary ties multiclass regression; do
    m=$d/$c.onnx
    [ $c = binary ] && m=$mlp
    task=$c
    [ $c = ties ] && task=binary
    if ! "$infera" evaluate "$m" --data "csv:$d/$c.csv" --label y --id-column id --json >"$d/$c.json" 2>"$d/err"; then
        bad "evaluate $c: $(cat "$d/err")"
        continue
    fi
    "$infera" run "$m" --input "$d/$c.npy" --output-dir "$d/$c.out" >/dev/null || { bad "run $c"; continue; }
    if $py "$oracle" metrics $task "$d/$c.json" "$d/$c.out" "$d/$c.y.npy" >"$d/cmp" 2>&1; then ok "evaluate $c = scikit-learn (1e-9)"
    else bad "evaluate $c vs scikit-learn: $(grep -v '^ok' "$d/cmp" | tr '\n' ' ')"; fi
done
# without a spec, a numeric field past the model's width is not a feature: the same metrics, and it is reported
awk -F, 'BEGIN { OFS = "," } NR == 1 { print $0, "extra"; next } { print $0, 7 }' "$d/regression.csv" >"$d/regx.csv"
if "$infera" evaluate "$d/regression.onnx" --data "csv:$d/regx.csv" --label y --id-column id --json >"$d/regx.json" 2>"$d/err" &&
    $py -c 'import json, sys; a, b = (json.load(open(f))["metrics"] for f in sys.argv[1:]); sys.exit(a != b)' "$d/regx.json" "$d/regression.json" &&
    [ "$(grep -c "1 more ignored" "$d/err")" = 1 ]; then
    ok "evaluate: an extra numeric field is reported once and changes nothing"
else
    bad "evaluate with an extra numeric field: $(cat "$d/err")"
fi
# the same through a JSON lines source and a SQLite table
$py - "$d" <<'EOF'
import csv, json, sqlite3, sys
d = sys.argv[1]
rows = list(csv.DictReader(open(d + "/multiclass.csv")))
with open(d + "/multiclass.jsonl", "w") as f:
    for r in rows:
        f.write(json.dumps({k: (v if k == "id" else float(v) if k != "y" else int(v)) for k, v in r.items()}) + "\n")
db = sqlite3.connect(d + "/mc.db")
cols = list(rows[0].keys())
db.execute("CREATE TABLE t (%s)" % ", ".join('"%s" %s' % (c, "TEXT" if c == "id" else "INTEGER" if c == "y" else "REAL") for c in cols))
db.executemany("INSERT INTO t VALUES (%s)" % ",".join("?" * len(cols)), [[r[c] for c in cols] for r in rows])
db.commit()
EOF
for s in "jsonl:$d/multiclass.jsonl" "sqlite:$d/mc.db?table=t"; do
    "$infera" evaluate "$d/multiclass.onnx" --data "$s" --label y --id-column id --json >"$d/s.json" 2>"$d/err" &&
        $py "$oracle" metrics multiclass "$d/s.json" "$d/multiclass.out" "$d/multiclass.y.npy" >/dev/null &&
        ok "evaluate from ${s%%:*} = scikit-learn" || bad "evaluate from $s: $(cat "$d/err")"
done
# --spec: a pipeline spec that feeds the MLP its 32 fields in reverse order; the oracle scores the reversed
# features (an MLP run on X[:, ::-1]) -- so the spec, not the default mapping, decided what the model saw
mkspec() { # FILE natural|reverse: binary.csv's fields f0..f31 -> the MLP's 'input'
    $py - "$1" "$2" <<'PYEOF'
import json, sys
order = ["f%d" % j for j in range(32)]
if sys.argv[2] == "reverse":
    order.reverse()
inputs = {"id": {"type": "string", "id": True}}
inputs.update({"f%d" % j: {"type": "float", "required": True} for j in range(32)})
json.dump({"spec_version": 1, "name": "mlp", "inputs": inputs,
           "model_inputs": {"input": {"dtype": "float32", "order": order}}}, open(sys.argv[1], "w"))
PYEOF
}
mkspec "$d/natural.json" natural
mkspec "$d/reverse.json" reverse
$py -c "import numpy as np, sys; np.save(sys.argv[1], np.load(sys.argv[2])[:, ::-1].copy())" "$d/binary_rev.npy" "$d/binary.npy"
if "$infera" evaluate "$mlp" --data "csv:$d/binary.csv" --label y --spec "$d/reverse.json" --json >"$d/spec.json" 2>"$d/err" &&
   "$infera" run "$mlp" --input "$d/binary_rev.npy" --output-dir "$d/binary_rev.out" >/dev/null; then
    $py "$oracle" metrics binary "$d/spec.json" "$d/binary_rev.out" "$d/binary.y.npy" >"$d/cmp" 2>&1 &&
        ok "evaluate --spec (fields reordered by the spec) = scikit-learn" || bad "evaluate --spec: $(grep -v '^ok' "$d/cmp" | tr '\n' ' ')"
else
    bad "evaluate --spec: $(cat "$d/err")"
fi
# the fraud example's real spec: raw authorisation records + the card-history lookup -> the 12 features;
# the oracle: `infera batch` with the same spec scores the records, scikit-learn computes the metrics from
# those scores (fraud_score = P(fraud)) and the raw file's labels
mkdir -p "$d/fraud" && cp "$src"/examples/fraud/{fraud_xgb.onnx,fraud_spec.json,card_features.db,transactions_raw.csv} "$d/fraud/"
if (cd "$d/fraud" && "$infera" evaluate fraud_xgb.onnx --data csv:transactions_raw.csv --label is_fraud \
        --spec fraud_spec.json --json >"$d/raw.json" 2>"$d/err" &&
    "$infera" batch --model fraud_xgb.onnx --pipeline fraud_spec.json --input csv:transactions_raw.csv \
        --output csv:scored.csv >/dev/null 2>>"$d/err"); then
    $py - "$d/raw.json" "$d/fraud/scored.csv" "$d/fraud/transactions_raw.csv" <<'PYEOF' >"$d/cmp" 2>&1 &&
import csv, json, sys
import numpy as np
from sklearn import metrics as M
got = json.load(open(sys.argv[1]))
score = {r["transaction_id"]: float(r["fraud_score"]) for r in csv.DictReader(open(sys.argv[2]))}
rows = list(csv.DictReader(open(sys.argv[3])))
y = np.array([int(r["is_fraud"]) for r in rows])
p1 = np.array([score[r["transaction_id"]] for r in rows])
pred = (p1 > 0.5).astype(np.int64)
want = {"accuracy": M.accuracy_score(y, pred), "precision": M.precision_score(y, pred, zero_division=0),
        "recall": M.recall_score(y, pred, zero_division=0), "f1": M.f1_score(y, pred, zero_division=0),
        "auc": M.roc_auc_score(y, p1), "logloss": M.log_loss(y, p1, labels=[0, 1])}
assert got["rows"] == len(rows) == 5000, got["rows"]
for k, v in want.items():
    assert abs(got["metrics"][k] - v) <= 1e-9, (k, got["metrics"][k], v)
PYEOF
        ok "evaluate --spec on raw records (lookup, derived features) = scikit-learn on batch's scores" ||
        bad "evaluate --spec, fraud raw records: $(cat "$d/cmp")"
else
    bad "evaluate --spec, fraud raw records: $(cat "$d/err")"
fi

# ---- structured pruning -------------------------------------------------------------------
if "$infera" prune "$mlp" -o "$d/p50.onnx" --sparsity 0.5 --structured --calibration "csv:$d/binary.csv" >"$d/out" 2>&1 &&
   "$infera" prune "$mlp" -o "$d/p50raw.onnx" --sparsity 0.5 --structured >/dev/null 2>&1; then
    grep -q "refitted by least squares" "$d/out" && ok "prune --structured refits the next layer" || bad "prune: no refit: $(cat "$d/out")"
    "$infera" info "$mlp" | sed -n '/^inputs:/,/^ops/{/^ops/!p}' >"$d/io.a"
    "$infera" info "$d/p50.onnx" | sed -n '/^inputs:/,/^ops/{/^ops/!p}' >"$d/io.b"
    cmp -s "$d/io.a" "$d/io.b" && ok "pruned model keeps input/output names and shapes" || bad "pruned model changed its inputs/outputs: $(diff "$d/io.a" "$d/io.b" | tr '\n' ' ')"
    pa=$("$infera" info "$mlp" | sed -n 's/^parameters: \([0-9]*\).*/\1/p')
    pb=$("$infera" info "$d/p50.onnx" | sed -n 's/^parameters: \([0-9]*\).*/\1/p')
    [ "$pb" -lt $((pa / 2)) ] && ok "50 % structured pruning: $pa -> $pb parameters" || bad "parameters $pa -> $pb"
    for m in mlp p50 p50raw; do
        f=$d/$m.onnx
        [ $m = mlp ] && f=$mlp
        "$infera" run "$f" --input "$d/binary.npy" --output-dir "$d/$m.out" >/dev/null || bad "run $m"
    done
    $py - "$d" <<'EOF' && ok "least-squares refit brings the pruned logits closer to the original" || bad "refit does not help"
import numpy as np, sys
d = sys.argv[1]
o, a, b = (np.load(d + "/%s.out/logits.npy" % m) for m in ("mlp", "p50", "p50raw"))
ea, eb = np.mean((a - o) ** 2), np.mean((b - o) ** 2)
print("  mse vs original: refitted %.4g, magnitude only %.4g" % (ea, eb))
sys.exit(0 if ea < eb else 1)
EOF
    if [ $have_ort = 1 ]; then
        if node "$src/tests/tools/ort_run.js" "$d/p50.onnx" "$d/binary.npy" "$d/p50.ort" 2>"$d/err"; then
            for o in logits probabilities; do
                $py "$oracle" close "$d/p50.out/$o.npy" "$d/p50.ort/$o.npy" 1e-4 1e-5 >"$d/cmp" &&
                    ok "ONNX Runtime runs the pruned model: $o as Infera" || bad "pruned $o differs from ORT: $(cat "$d/cmp")"
            done
        else bad "ONNX Runtime cannot run the pruned model: $(cat "$d/err")"; fi
    fi
else
    bad "prune --structured: $(cat "$d/out")"
fi
# MatMul + Add layers; the refit is numpy's least-squares solution (calibration = the same records)
if "$infera" prune "$d/mm.onnx" -o "$d/mm50.onnx" --sparsity 0.5 --structured --calibration "csv:$d/binary.csv" >"$d/out" 2>&1; then
    $py "$oracle" lstsq "$d/mm.onnx" "$d/mm50.onnx" "$d/binary.npy" && ok "MatMul+Add refit = numpy lstsq" || bad "MatMul+Add refit is not the least-squares fit"
else
    bad "prune MatMul+Add: $(cat "$d/out")"
fi
# Conv channels: a residual CNN; the pruned model runs in ONNX Runtime as in Infera
cnn=$src/tests/models/cnn.onnx
if "$infera" prune "$cnn" -o "$d/cnn50.onnx" --sparsity 0.5 --structured >"$d/out" 2>&1 && grep -q "channels" "$d/out"; then
    "$infera" info "$cnn" | sed -n '/^inputs:/,/^ops/{/^ops/!p}' >"$d/io.a"
    "$infera" info "$d/cnn50.onnx" | sed -n '/^inputs:/,/^ops/{/^ops/!p}' >"$d/io.b"
    cmp -s "$d/io.a" "$d/io.b" && ok "channel-pruned CNN keeps its inputs/outputs" || bad "CNN io changed"
    "$infera" run "$d/cnn50.onnx" --input "$src/tests/models/cnn_input.npy" --output-dir "$d/cnn50.out" >/dev/null || bad "run pruned CNN"
    if [ $have_ort = 1 ]; then
        node "$src/tests/tools/ort_run.js" "$d/cnn50.onnx" "$src/tests/models/cnn_input.npy" "$d/cnn50.ort" 2>"$d/err" &&
            $py "$oracle" close "$d/cnn50.out/logits.npy" "$d/cnn50.ort/logits.npy" 1e-4 1e-5 >"$d/cmp" &&
            ok "ONNX Runtime runs the channel-pruned CNN as Infera" || bad "pruned CNN vs ORT: $(cat "$d/err" "$d/cmp")"
    fi
else
    bad "prune CNN channels: $(cat "$d/out")"
fi
# --spec for the calibration records: the fields in their natural order give the very same file as the
# default mapping; reversed, the refit sees other inputs and the file differs
if "$infera" prune "$mlp" -o "$d/p50spec.onnx" --sparsity 0.5 --structured --calibration "csv:$d/binary.csv" \
       --spec "$d/natural.json" >/dev/null 2>"$d/err" &&
   "$infera" prune "$mlp" -o "$d/p50rev.onnx" --sparsity 0.5 --structured --calibration "csv:$d/binary.csv" \
       --spec "$d/reverse.json" >/dev/null 2>>"$d/err"; then
    cmp -s "$d/p50.onnx" "$d/p50spec.onnx" && ! cmp -s "$d/p50.onnx" "$d/p50rev.onnx" &&
        ok "prune --calibration --spec: the spec maps the calibration records" || bad "prune --spec: natural spec != default mapping, or reversed == natural"
else
    bad "prune --spec: $(cat "$d/err")"
fi
# unstructured: the share of zeros counted in the written weights (numpy), not taken from the report
if "$infera" prune "$mlp" -o "$d/u90.onnx" --sparsity 0.9 >"$d/out" 2>&1 &&
   "$infera" run "$d/u90.onnx" --input "$d/binary.npy" --output-dir "$d/u90.out" >/dev/null && grep -q "90.0 % zero" "$d/out"; then
    $py - "$mlp" "$d/u90.onnx" <<'PYEOF' >"$d/cmp" 2>&1 && ok "unstructured 90 %: $(cat "$d/cmp")" || bad "unstructured prune: $(cat "$d/cmp")"
import numpy as np, onnx, sys
from onnx import numpy_helper
a, b = ({t.name: numpy_helper.to_array(t) for t in onnx.load(f).graph.initializer} for f in sys.argv[1:3])
ws = [k for k, v in a.items() if v.ndim == 2]
z = sum(int((b[k] == 0).sum()) for k in ws) / sum(b[k].size for k in ws)
kept = all(np.array_equal(b[k][b[k] != 0], a[k][b[k] != 0]) for k in ws)
print("%.4f of the weight matrices zero, the rest unchanged: %s" % (z, kept))
sys.exit(0 if abs(z - 0.9) < 0.01 and kept else 1)
PYEOF
else
    bad "unstructured prune: $(cat "$d/out")"
fi

# ---- distillation -------------------------------------------------------------------------
dist() { "$infera" distill --teacher "$fraud/fraud_xgb.onnx" --data "csv:$fraud/transactions.csv" --label is_fraud \
             --student mlp:16,8 --epochs 15 --quiet "$@"; }
if dist --seed 11 -o "$d/s1.onnx" >"$d/out" 2>&1 && dist --seed 11 -o "$d/s2.onnx" >/dev/null 2>&1 &&
   dist --seed 12 -o "$d/s3.onnx" >/dev/null 2>&1; then
    cmp -s "$d/s1.onnx" "$d/s2.onnx" && ok "distill: same seed, same file" || bad "distill: the same seed gave different files"
    cmp -s "$d/s1.onnx" "$d/s3.onnx" && bad "distill: another seed gave the same file" || ok "distill: another seed, another file"
    grep -q "fidelity" "$d/out" && grep -q "student " "$d/out" && ok "distill prints fidelity and holdout quality" || bad "distill report: $(cat "$d/out")"
    "$infera" info "$fraud/fraud_xgb.onnx" | sed -n '/^inputs:/,/^ops/{/^ops/!p}' | sed 's/\[[^]]*,/[N,/' >"$d/io.a"
    "$infera" info "$d/s1.onnx" | sed -n '/^inputs:/,/^ops/{/^ops/!p}' | sed 's/\[[^]]*,/[N,/' >"$d/io.b"
    cmp -s "$d/io.a" "$d/io.b" && ok "student has the teacher's input and outputs" || bad "student io: $(diff "$d/io.a" "$d/io.b" | tr '\n' ' ')"
    "$infera" run "$d/s1.onnx" --input "$fraud/sample_features.npy" --output-dir "$d/s1.out" >/dev/null || bad "run student"
    if [ $have_ort = 1 ]; then
        if node "$src/tests/tools/ort_run.js" "$d/s1.onnx" "$fraud/sample_features.npy" "$d/s1.ort" 2>"$d/err"; then
            $py "$oracle" close "$d/s1.out/probabilities.npy" "$d/s1.ort/probabilities.npy" 1e-4 1e-5 >"$d/cmp" &&
                $py "$oracle" close "$d/s1.out/label.npy" "$d/s1.ort/label.npy" 0 0 >>"$d/cmp" &&
                ok "ONNX Runtime runs the student (NaN inputs included) as Infera" || bad "student differs from ORT: $(cat "$d/cmp")"
        else bad "ONNX Runtime cannot run the student: $(cat "$d/err")"; fi
    fi
    # --holdout F: F of the rows held out (5000 rows); --temperature T softens the teacher's targets, so
    # another T trains another student; both reproducible with the seed
    if dist --seed 11 --holdout 0.3 --temperature 1 -o "$d/s4.onnx" >"$d/out4" 2>&1 &&
       dist --seed 11 --holdout 0.3 --temperature 1 -o "$d/s5.onnx" >/dev/null 2>&1 &&
       dist --seed 11 --temperature 1 -o "$d/s6.onnx" >"$d/out6" 2>&1; then
        grep -q "training   3500 rows, holdout 1500 rows" "$d/out4" && grep -q "training   4000 rows, holdout 1000 rows" "$d/out6" &&
            ok "distill --holdout 0.3: 3500 / 1500 rows (default 0.2: 4000 / 1000)" || bad "distill --holdout: $(head -2 "$d/out4" "$d/out6")"
        cmp -s "$d/s4.onnx" "$d/s5.onnx" && ok "distill --holdout --temperature: same seed, same file" || bad "distill --holdout --temperature: not reproducible"
        cmp -s "$d/s1.onnx" "$d/s6.onnx" && bad "distill --temperature 1 gave the default (2) student" || ok "distill --temperature 1: another student than T = 2"
    else
        bad "distill --holdout/--temperature: $(cat "$d/out4" "$d/out6" 2>/dev/null)"
    fi
else
    bad "distill: $(cat "$d/out")"
fi

# a teacher whose scores are logits (the multiclass model without its Softmax) teaches through their softmax, and
# the student writes logits: ONNX Runtime runs teacher and students, numpy compares (the students of the logits and
# of the softmax teacher, same seed, must give the same probabilities)
dl() { "$infera" distill --data "csv:$d/multiclass.csv" --label y --student mlp:16 --seed 5 --quiet "$@"; }
if dl --teacher "$d/multiclass_logits.onnx" -o "$d/sl.onnx" >"$d/out" 2>&1 &&
   dl --teacher "$d/multiclass.onnx" -o "$d/sp.onnx" >>"$d/out" 2>&1; then
    if [ $have_ort = 1 ]; then
        if node "$src/tests/tools/ort_run.js" "$d/sl.onnx" "$d/multiclass.npy" "$d/sl.ort" 2>"$d/err" &&
           node "$src/tests/tools/ort_run.js" "$d/sp.onnx" "$d/multiclass.npy" "$d/sp.ort" 2>>"$d/err" &&
           node "$src/tests/tools/ort_run.js" "$d/multiclass_logits.onnx" "$d/multiclass.npy" "$d/tl.ort" 2>>"$d/err"; then
            $py - "$d/tl.ort/logits.npy" "$d/sl.ort/logits.npy" "$d/sp.ort/probabilities.npy" <<'PYEOF' >"$d/cmp" 2>&1 &&
import numpy as np, sys
t, s, p = (np.load(f) for f in sys.argv[1:4])
def softmax(z):
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)
agree = float((t.argmax(1) == s.argmax(1)).mean())
tv = float(np.abs(softmax(t) - softmax(s)).sum(1).mean() / 2)
same = float(np.abs(softmax(s) - p).max())
logits = not np.allclose(s.sum(1), 1, atol=1e-3)
print("output 'logits' %s, not probabilities: %s; top-1 agreement with the teacher %.3f, mean total variation "
      "%.3f; softmax = the softmax teacher's student within %.1e" % (s.shape, logits, agree, tv, same))
sys.exit(0 if s.shape == t.shape and logits and agree >= 0.9 and tv < 0.1 and same < 1e-5 else 1)
PYEOF
                ok "distill, a logits teacher: $(cat "$d/cmp")" || bad "distill, a logits teacher: $(cat "$d/cmp")"
        else bad "ONNX Runtime cannot run the logits teacher's student: $(cat "$d/err")"; fi
    fi
else
    bad "distill, a logits teacher: $(cat "$d/out")"
fi

# ---- bad input ----------------------------------------------------------------------------
expect_error() { # WHAT PATTERN CMD...
    local what=$1 pat=$2
    shift 2
    if "$@" >"$d/out" 2>&1; then bad "$what: accepted"
    elif grep -q "$pat" "$d/out"; then ok "$what: $(head -1 "$d/out" | cut -c1-110)"
    else bad "$what: unclear error: $(cat "$d/out")"; fi
}
printf 'id,f0,y\n' >"$d/empty.csv"
expect_error "prune a tree model" "no Gemm, MatMul or Conv" "$infera" prune "$fraud/fraud_xgb.onnx" -o "$d/x.onnx" --sparsity 0.5
expect_error "structured prune, no hidden layer" "no hidden layer" "$infera" prune "$d/multiclass.onnx" -o "$d/x.onnx" --sparsity 0.5 --structured
expect_error "prune, empty calibration" "has no records" "$infera" prune "$mlp" -o "$d/x.onnx" --sparsity 0.5 --structured --calibration "csv:$d/empty.csv"
expect_error "evaluate, empty source" "has no records" "$infera" evaluate "$mlp" --data "csv:$d/empty.csv" --label y
expect_error "evaluate, missing label column" "label column 'nope' is not in" "$infera" evaluate "$mlp" --data "csv:$d/binary.csv" --label nope
expect_error "distill, missing label column" "label column 'nope' is not in" "$infera" distill --teacher "$fraud/fraud_xgb.onnx" --data "csv:$fraud/transactions.csv" --label nope --student mlp:4 -o "$d/x.onnx"
expect_error "prune, sparsity out of range" "between 0 and 1" "$infera" prune "$mlp" -o "$d/x.onnx" --sparsity 1.5
expect_error "distill, temperature 0" "temperature must be a number in" "$infera" distill --teacher "$fraud/fraud_xgb.onnx" --data "csv:$fraud/transactions.csv" --student mlp:4 --temperature 0 -o "$d/x.onnx"
expect_error "distill, holdout 0.95" "holdout must be a number in" "$infera" distill --teacher "$fraud/fraud_xgb.onnx" --data "csv:$fraud/transactions.csv" --student mlp:4 --holdout 0.95 -o "$d/x.onnx"
expect_error "distill, empty source" "has no records" "$infera" distill --teacher "$fraud/fraud_xgb.onnx" --data "csv:$d/empty.csv" --student mlp:4 -o "$d/x.onnx"
expect_error "evaluate, bad --max-drop" "expects METRIC=X" "$infera" evaluate "$mlp" --data "csv:$d/binary.csv" --label y --baseline "$mlp" --max-drop auc
expect_error "evaluate, --max-drop without --baseline" "give --baseline REF" "$infera" evaluate "$mlp" --data "csv:$d/binary.csv" --label y --max-drop auc=0.01

# ---- baseline, release gate, registry lineage ---------------------------------------------
"$infera" registry register fraud "$fraud/fraud_xgb.onnx" >/dev/null 2>&1 || bad "register fraud"
if [ -f "$d/s1.onnx" ]; then
    "$infera" evaluate "$d/s1.onnx" --data "csv:$fraud/transactions.csv" --label is_fraud --baseline fraud@1 --json >"$d/b.json" 2>"$d/err"
    $py - "$d/b.json" <<'EOF' && ok "evaluate --baseline: delta = model - baseline" || bad "baseline json: $(cat "$d/b.json" "$d/err")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["baseline"]["model"] == "fraud@1"
for k, v in j["delta"].items():
    assert abs(v - (j["metrics"][k] - j["baseline"]["metrics"][k])) < 1e-12, k
EOF
    "$infera" evaluate "$d/s1.onnx" --data "csv:$fraud/transactions.csv" --label is_fraud --baseline fraud@1 --max-drop auc=1 >/dev/null 2>&1 &&
        ok "--max-drop auc=1 passes" || bad "--max-drop auc=1 failed"
    "$infera" evaluate "$d/p50raw.onnx" --data "csv:$d/binary.csv" --label y --baseline "$mlp" --max-drop logloss=0 --max-drop accuracy=0 >/dev/null 2>"$d/err"
    [ $? -eq 1 ] && grep -q "more than the 0 allowed" "$d/err" && ok "--max-drop exceeded: exit 1" || bad "--max-drop: $(cat "$d/err")"
    "$infera" registry register fraud-mlp "$d/s1.onnx" --derived-from fraud@1 >/dev/null 2>"$d/err" || bad "register --derived-from: $(cat "$d/err")"
    "$infera" evaluate fraud-mlp@1 --data "csv:$fraud/transactions.csv" --label is_fraud --register >/dev/null 2>"$d/err" || bad "evaluate --register: $(cat "$d/err")"
    "$infera" registry lineage fraud-mlp@1 --json >"$d/lin.json" 2>&1
    "$infera" registry show fraud-mlp@1 --json >"$d/show.json" 2>&1
    $py - "$d" <<'EOF' && ok "lineage: derived from fraud@1; metrics stored on the version" || bad "lineage/metrics: $(cat "$d/lin.json" "$d/show.json")"
import json, sys
d = sys.argv[1]
lin = json.load(open(d + "/lin.json"))
assert lin["versions"][0]["derived_from"] == "fraud@1", lin
show = json.load(open(d + "/show.json"))
m = show.get("metrics") or show.get("version", {}).get("metrics")
assert m and "auc" in m and "logloss" in m, show
EOF
    expect_error "register --derived-from unknown" "derived-from" "$infera" registry register fraud-mlp "$d/s1.onnx" --derived-from nosuch@3
fi

check_done
