#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: installs dependencies, builds
# Infera, then runs the fraud example end to end on the embedded default
# (SQLite, nothing to install by hand):
#   1. registers the fraud model with its pipeline spec in the embedded
#      registry (./example-output/infera-data) and points `production` at it;
#   2. batch-scores raw card transactions (card history looked up in SQLite,
#      features computed by the spec) into a SQLite table, with a progress bar
#      and a summary;
#   3. shows a few scored rows, the job's lineage and the audit chain;
#   4. scores inside SQLite with the infera_predict_json() SQL function.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release
infera=$PWD/build/infera
out=$PWD/example-output
rm -rf "$out"
mkdir -p "$out"
export INFERA_HOME=$out/infera-data
fraud=examples/fraud

echo "== register the fraud model (XGBoost trees as ONNX-ML) with its pipeline spec"
$infera registry register fraud $fraud/fraud_xgb.onnx --pipeline $fraud/fraud_spec.json \
  --description "card-transaction fraud score" --training-data $fraud/gen_fraud.py \
  --metric auc=0.81 --approved-use "transaction screening"
$infera registry alias fraud@1 production
$infera registry show fraud@production
echo
echo "== batch-score raw transactions into SQLite (features and card-history lookups by the spec)"
$infera batch --model fraud@production --pipeline $fraud/fraud_spec.json \
  --input csv:$fraud/transactions_raw.csv --output "sqlite:$out/scores.db?table=fraud_scores" \
  --id-column transaction_id --threads 2 --progress bar
echo
echo "== the five riskiest transactions"
sqlite3 -header -column "$out/scores.db" \
  "SELECT * FROM fraud_scores ORDER BY fraud_score DESC LIMIT 5"
echo
echo "== lineage and audit"
$infera registry lineage fraud@production
$infera registry audit verify
echo
echo "== scoring inside SQLite, next to the data (model 'fraud-features' takes the 12 computed features)"
$infera registry register fraud-features $fraud/fraud_xgb.onnx --description "same trees, feature-level input"
query="SELECT infera_predict_json('fraud-features', json_object('amount', 3.05, 'log_amount_ratio', -0.67,
  'merchant_category', 5, 'hour', 16, 'is_weekend', 1, 'distance_from_home_km', 12.3,
  'distance_from_last_txn_km', 4.4, 'card_present', 1, 'txn_count_1h', 0, 'txn_count_24h', 4,
  'avg_amount_30d', 5.98, 'days_since_last_txn', 0.03))"
echo "sqlite3 :memory: \".load ./build/infera_sqlite\" \"$query\""
sqlite3 :memory: ".load ./build/infera_sqlite" "$query"
