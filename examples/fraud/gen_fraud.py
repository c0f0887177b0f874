#!/usr/bin/python3
"""Synthetic card-transaction fraud data and an XGBoost model for Infera's examples.

Writes (next to this script), deterministic (seed 7):
  transactions.csv          5,000 scored-at-authorisation transactions: an id column, the
                            12 numeric features below (source order = model input order), and
                            the label is_fraud (~2% positive)
  fraud_xgb.json            the XGBoost booster (binary:logistic, 120 trees, depth 5)
  fraud_xgb.onnx            the same model as ONNX-ML (TreeEnsembleClassifier), input "input"
  sample_features.npy       the feature matrix of transactions.csv (float32, NaN = missing)
  sample_probabilities.npy  XGBoost's own probabilities [N, 2] for it (tests compare with them)

Features: amount, log_amount_ratio (amount vs the card's 30-day mean), merchant_category
(an MCC group code 0-9), hour, is_weekend, distance_from_home_km, distance_from_last_txn_km,
card_present, txn_count_1h, txn_count_24h, avg_amount_30d, days_since_last_txn.
Fraud is more likely for card-not-present, night-time, far-from-home, bursty cards, high
amounts relative to the card's history, and some merchant groups (electronics, gift cards,
travel); ~3% of distance and history values are missing (new cards, no GPS).
Training uses 60,000 rows; only the first 5,000 rows are committed.
Needs Debian's python3-numpy and python3-xgboost (and python3-onnx for the ONNX form).
"""
import csv
import os
import sys

import numpy as np
import xgboost as xgb

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "ml"))

FEATURES = ["amount", "log_amount_ratio", "merchant_category", "hour", "is_weekend", "distance_from_home_km",
            "distance_from_last_txn_km", "card_present", "txn_count_1h", "txn_count_24h", "avg_amount_30d",
            "days_since_last_txn"]
RISKY_MCC = {3: 1.2, 7: 1.5, 8: 0.9}  # electronics, gift cards, travel


def make(n, rng):
    avg30 = rng.lognormal(mean=3.6, sigma=0.8, size=n)                      # the card's usual spend
    amount = avg30 * rng.lognormal(mean=0.0, sigma=0.6, size=n)
    mcc = rng.choice(10, size=n, p=[.22, .16, .14, .08, .12, .1, .08, .03, .04, .03])
    hour = (rng.normal(14, 4.5, size=n) % 24).astype(int)
    weekend = (rng.random(n) < 2 / 7).astype(int)
    present = (rng.random(n) < 0.62).astype(int)
    home = rng.exponential(8, size=n) * np.where(rng.random(n) < 0.05, 30, 1)
    last = rng.exponential(5, size=n)
    c1h = rng.poisson(0.3, size=n)
    c24 = c1h + rng.poisson(2.0, size=n)
    days = rng.exponential(2.5, size=n)
    # fraud propensity (a logistic score), then labels at ~2%
    z = (-6.1 + 1.1 * np.log1p(amount / avg30) + 0.9 * (1 - present) + 0.6 * ((hour < 5) | (hour >= 23))
         + 0.5 * np.log1p(home / 20) + 0.35 * np.log1p(last / 10) + 0.45 * c1h + 0.08 * c24
         + np.vectorize(lambda m: RISKY_MCC.get(m, 0.0))(mcc) - 0.15 * np.log1p(days) + rng.normal(0, 0.6, size=n))
    fraud = (rng.random(n) < 1 / (1 + np.exp(-z))).astype(int)
    # fraudsters test a card with bursts of small amounts, then a large one
    burst = fraud.astype(bool) & (rng.random(n) < 0.4)
    c1h[burst] += rng.integers(2, 6, size=burst.sum())
    amount[burst] *= rng.choice([0.05, 4.0], size=burst.sum())
    x = np.column_stack([amount, np.log(amount / avg30), mcc, hour, weekend, home, last, present, c1h, c24, avg30,
                         days]).astype(np.float32)
    x[rng.random(n) < 0.03, 5] = np.nan   # no location
    x[rng.random(n) < 0.03, 6] = np.nan
    new_card = rng.random(n) < 0.02
    x[new_card, 10] = np.nan              # no history
    x[new_card, 11] = np.nan
    return np.round(x, 4), fraud


def main():
    rng = np.random.default_rng(7)
    x, y = make(60000, rng)
    print(f"fraud rate {y.mean():.3%}")
    params = dict(objective="binary:logistic", max_depth=5, eta=0.1, subsample=0.8, colsample_bytree=0.8,
                  eval_metric="auc", seed=7, nthread=1, min_child_weight=2)
    ntrain = 50000
    dtrain = xgb.DMatrix(x[:ntrain], label=y[:ntrain], missing=np.nan, feature_names=FEATURES)
    dvalid = xgb.DMatrix(x[ntrain:], label=y[ntrain:], missing=np.nan, feature_names=FEATURES)
    bst = xgb.train(params, dtrain, num_boost_round=120, evals=[(dvalid, "valid")], verbose_eval=40)
    bst.save_model(os.path.join(HERE, "fraud_xgb.json"))
    from ml_convert import xgb_to_onnx
    import onnx
    onnx.save(xgb_to_onnx(os.path.join(HERE, "fraud_xgb.json")), os.path.join(HERE, "fraud_xgb.onnx"))
    sample, labels = x[ntrain:ntrain + 5000], y[ntrain:ntrain + 5000]
    p = bst.predict(xgb.DMatrix(sample, missing=np.nan, feature_names=FEATURES))
    np.save(os.path.join(HERE, "sample_features.npy"), sample)
    np.save(os.path.join(HERE, "sample_probabilities.npy"), np.stack([1 - p, p], 1).astype(np.float32))
    with open(os.path.join(HERE, "transactions.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["transaction_id"] + FEATURES + ["is_fraud"])
        for i, (row, lab) in enumerate(zip(sample, labels)):
            w.writerow([f"t{ntrain + i:06d}"] + ["" if np.isnan(v) else f"{v:g}" for v in row] + [int(lab)])
    print(f"sample: {len(sample)} rows, {labels.sum()} fraud")


if __name__ == "__main__":
    main()
