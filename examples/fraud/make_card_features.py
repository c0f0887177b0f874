#!/usr/bin/python3
"""Raw transactions and a card-history feature store for the fraud pipeline spec (fraud_spec.json).

Reads transactions.csv (the model's 12 features per transaction, made by gen_fraud.py) and writes,
deterministically (standard library only):
  transactions_raw.csv   what an authorisation system sees: transaction_id, card_id, ts (ISO-8601 UTC),
                         amount, merchant_category, distance_from_home_km, distance_from_last_txn_km,
                         card_present, is_fraud.  The card-history features are NOT in it: the
                         pipeline looks them up by card_id.
  card_features.db       SQLite, two tables keyed by card_id:
                           card_features          the online store: one row per card, the values as of
                                                  60 s before the card's transaction (updated_at)
                           card_features_history  every version: an older one (2 days before), the
                                                  current one (60 s before) and a later one (1 h after the
                                                  transaction, which point-in-time lookups must not see)
Each transaction has its own card, so the looked-up txn_count_1h, txn_count_24h, avg_amount_30d and
days_since_last_txn equal the row's values in transactions.csv; hour and is_weekend are encoded in ts.
"""
import csv
import os
import random
import sqlite3
from datetime import datetime, timedelta, timezone

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    rng = random.Random(7)
    rows = list(csv.DictReader(open(os.path.join(HERE, "transactions.csv"))))
    monday = datetime(2024, 3, 4, tzinfo=timezone.utc)
    db_path = os.path.join(HERE, "card_features.db")
    if os.path.exists(db_path):
        os.remove(db_path)
    db = sqlite3.connect(db_path)
    cols = "card_id TEXT, txn_count_1h INTEGER, txn_count_24h INTEGER, avg_amount_30d REAL, days_since_last_txn REAL, updated_at TEXT"
    db.execute(f"CREATE TABLE card_features ({cols}, PRIMARY KEY (card_id))")
    db.execute(f"CREATE TABLE card_features_history ({cols})")
    db.execute("CREATE INDEX card_features_history_card ON card_features_history (card_id, updated_at)")
    iso = lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ")
    num = lambda s: None if s == "" else float(s)
    with open(os.path.join(HERE, "transactions_raw.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["transaction_id", "card_id", "ts", "amount", "merchant_category", "distance_from_home_km",
                    "distance_from_last_txn_km", "card_present", "is_fraud"])
        for i, r in enumerate(rows):
            week = i % 4
            day = rng.choice([5, 6]) if r["is_weekend"] == "1" else rng.randrange(5)
            ts = monday + timedelta(days=7 * week + day, hours=int(r["hour"]), minutes=rng.randrange(60),
                                    seconds=rng.randrange(60))
            card = f"card{i:05d}"
            w.writerow([r["transaction_id"], card, iso(ts), r["amount"], r["merchant_category"],
                        r["distance_from_home_km"], r["distance_from_last_txn_km"], r["card_present"], r["is_fraud"]])
            cur = (card, int(r["txn_count_1h"]), int(r["txn_count_24h"]), num(r["avg_amount_30d"]),
                   num(r["days_since_last_txn"]), iso(ts - timedelta(seconds=60)))
            old = (card, 0, 1, 10.0, 9.0, iso(ts - timedelta(days=2)))
            later = (card, 9, 30, 999.0, 0.0, iso(ts + timedelta(hours=1)))
            db.execute("INSERT INTO card_features VALUES (?,?,?,?,?,?)", cur)
            db.executemany("INSERT INTO card_features_history VALUES (?,?,?,?,?,?)", [old, cur, later])
    db.commit()
    db.close()
    print(f"{len(rows)} transactions, {len(rows)} cards")


if __name__ == "__main__":
    main()
