#!/bin/bash
# Consistency: the same raw records through `infera features` + `infera run`
# and through the pipeline C API (pipeline_score) give bit-identical features
# and predictions.  Runners join this test as they land (batch, serve, stream).
# usage: test_consistency.sh INFERA PIPELINE_SCORE NPY_COMPARE SOURCE_DIR
. "$(dirname "$0")/../check.sh"
INFERA=$1 SCORE=$2 CMP=$3 SRC=$4
EX=$SRC/examples/fraud
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
CHECK_DIR=$T # check_quiet (check.sh): a command succeeds; its output is shown when it fails
mkdir -p "$T/api" "$T/cli"
check_quiet "pipeline API scores the raw transactions" "$SCORE" "$EX/fraud_spec.json" "$EX/fraud_xgb.onnx" "csv:$EX/transactions_raw.csv" "$T/api"
check_quiet "infera features writes the feature matrix" "$INFERA" features --spec "$EX/fraud_spec.json" --model "$EX/fraud_xgb.onnx" \
    --input "csv:$EX/transactions_raw.csv" --output "npy:$T/cli/features.npy"
check_quiet "infera run scores the features" "$INFERA" run "$EX/fraud_xgb.onnx" --input "input=$T/cli/features.npy" --output-dir "$T/cli"
check_quiet "features bit-identical (API vs infera features)" "$CMP" "$T/cli/features.npy" "$T/api/features.npy" 0 0
check_quiet "probabilities bit-identical (API vs infera run)" "$CMP" "$T/cli/probabilities.npy" "$T/api/probabilities.npy" 0 0
check_quiet "labels identical" "$CMP" "$T/cli/label.npy" "$T/api/label.npy" 0 0
# the batch runner (infera batch --pipeline) gives the same prediction fields
cols() { # FILE: transaction_id,fraud_score,is_fraud,decision by header name
    awk -F, 'NR==1 {for (i=1;i<=NF;i++) c[$i]=i; next} {print $c["transaction_id"]","$c["fraud_score"]","$c["is_fraud"]","$c["decision"]}' "$1"
}
# (always: it was skipped without a word when `infera help batch` failed)
check_quiet "infera batch scores with the spec" "$INFERA" batch --home "$T/home" --model "$EX/fraud_xgb.onnx" --pipeline "$EX/fraud_spec.json" \
    --input "csv:$EX/transactions_raw.csv" --output "csv:$T/batch.csv" --progress none
cols "$T/batch.csv" > "$T/batch.cols"; cols "$T/api/predictions.csv" > "$T/api.cols"
check_quiet "infera batch predictions identical to the API's (5000 rows)" bash -c "[ \$(wc -l < '$T/api.cols') = 5000 ] && cmp '$T/batch.cols' '$T/api.cols'"
# the same through JSON lines (types arrive differently: numbers, not CSV text)
check_quiet "infera features via csv output" "$INFERA" features --spec "$EX/fraud_spec.json" --input "csv:$EX/transactions_raw.csv" --output "jsonl:$T/feat.jsonl"
# point in time against the history table gives the same features (the online
# rows are the history's versions as of each transaction)
check_quiet "point-in-time features" "$INFERA" features --spec "$EX/fraud_spec.json" --input "csv:$EX/transactions_raw.csv" \
    --output "npy:$T/pit.npy" --as-of ts --history "sqlite:$EX/card_features.db?table=card_features_history"
check_quiet "point-in-time features equal the online lookup's" "$CMP" "$T/pit.npy" "$T/api/features.npy" 0 0
# fit-spec: learn a standardize + categories template, then use the result
cat > "$T/template.json" <<'J'
{"inputs": {"transaction_id": {"type": "string", "id": true}, "amount": {"type": "float"}, "merchant_category": {"type": "int"}},
 "features": [{"name": "amount_z", "op": "standardize", "from": "amount", "fit": true},
              {"name": "amount_b", "op": "bucketize", "from": "amount", "n_buckets": 4, "fit": true},
              {"name": "amount_bz", "op": "min_max", "from": "amount_b", "fit": true},
              {"name": "mcc", "op": "one_hot", "from": "merchant_category", "fit": true, "max_categories": 3, "unknown": "other"}],
 "model_inputs": {"x": {"order": ["amount_z", "amount_bz", "mcc"]}}}
J
check_quiet "fit-spec learns the template's parameters" "$INFERA" fit-spec --spec "$T/template.json" --input "csv:$EX/transactions_raw.csv" --output "$T/fitted.json"
check_quiet "fitted spec has mean/std, edges, min/max, categories" grep -q '"std"' "$T/fitted.json"
check_quiet "fitted spec computes features" "$INFERA" features --spec "$T/fitted.json" --input "csv:$EX/transactions_raw.csv" --output "csv:$T/fitted.csv"
check_quiet "fitted standardize gives mean 0 / std 1" awk -F, 'NR>1 {s+=$2; q+=$2*$2; n++} END {m=s/n; v=q/n-m*m; exit !(m*m < 1e-20 && (v-1)^2 < 1e-12)}' "$T/fitted.csv"
cat > "$T/bad.json" <<'J'
{"inputs": {"a": {"type": "float"}}, "features": [{"name": "b", "op": "nope", "from": "a"}], "model_inputs": {"x": {"order": ["b"]}}}
J
"$INFERA" features --spec "$T/bad.json" --input "csv:$EX/transactions_raw.csv" --output "csv:$T/bad.csv" 2>"$T/bad.err"
check_quiet "bad spec: non-zero exit" test $? -ne 0
check_quiet "bad spec: the error names the field" grep -q "features\[0\] (b).op: unknown transform 'nope'" "$T/bad.err"
check_done
