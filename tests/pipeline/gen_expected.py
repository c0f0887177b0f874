#!/usr/bin/python3
"""Expected outputs of every pipeline transform, computed independently with NumPy.

Writes (committed; the C test reads them, without Python):
  data/transforms_spec.json     a spec using every transform (model input float64, so no cast)
  data/transforms_input.csv     raw records with edge cases (missing values, zero divisors, unknown
                                categories, timestamps with offsets, before 1970, epoch numbers)
  data/transforms_expected.csv  the feature matrix, one column per feature column, repr() floats,
                                empty = NaN
Semantics implemented here from docs/pipeline-spec.md, not from the C code.
Run: /usr/bin/python3 tests/pipeline/gen_expected.py
"""
import csv
import json
import os
from datetime import datetime

import numpy as np

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

ROWS = [
    # id, x, y, s, code, t
    ("r01", "1.5", "2", "a", "1", "2024-03-04T00:00:00Z"),
    ("r02", "-0.5", "0", "b", "2", "2024-03-09T23:59:59Z"),
    ("r03", "", "3", "c", "5", "2024-03-10T12:30:00+02:00"),
    ("r04", "10", "", "zzz", "7", "1700000000.5"),
    ("r05", "-1", "-4", "", "", "-86399"),
    ("r06", "2.5", "2.5", "a", "2", "2024-02-29 06:15:00"),
    ("r07", "0", "1e-3", "B", "1", "2024-12-31T23:00:00-01:00"),
    ("r08", "1e6", "7", "b", "5", "2000-01-01"),
    ("r09", "-3", "-3", "c", "3", "1969-12-31T23:59:59Z"),
    ("r10", "7", "0.5", "é", "1", "2038-01-19T03:14:07Z"),
    ("r11", "3.25", "-0", "a", "5", "0"),
    ("r12", "-2.75", "8", "b", "2", "2024-07-14T14:07:00.250Z"),
]

SPEC = {
    "spec_version": 1,
    "name": "all-transforms",
    "inputs": {
        "id": {"type": "string", "id": True},
        "x": {"type": "float"},
        "y": {"type": "float"},
        "s": {"type": "string"},
        "code": {"type": "int"},
        "t": {"type": "timestamp"},
    },
    "on_invalid": "count",
    "features": [
        {"name": "std", "op": "standardize", "from": "x", "mean": 1.5, "std": 2.5},
        {"name": "mm", "op": "min_max", "from": "x", "min": -3, "max": 7},
        {"name": "lg", "op": "log1p", "from": "x"},
        {"name": "cl", "op": "clip", "from": "x", "min": -1, "max": 2},
        {"name": "cl_lo", "op": "clip", "from": "y", "min": 0},
        {"name": "bk", "op": "bucketize", "from": "x", "edges": [-1, 0, 2.5, 10]},
        {"name": "oh", "op": "one_hot", "from": "s", "categories": ["a", "b", "c"], "unknown": "other"},
        {"name": "ohn", "op": "one_hot", "from": "code", "categories": [1, 2, 5]},
        {"name": "ord", "op": "ordinal", "from": "s", "categories": ["b", "a"]},
        {"name": "le", "op": "label_encode", "from": "s", "categories": ["c"], "unknown_value": -1},
        {"name": "hb", "op": "hash_bucket", "from": "s", "n_buckets": 7},
        {"name": "hbn", "op": "hash_bucket", "from": "code", "n_buckets": 5},
        {"name": "imc", "op": "impute", "from": "x", "value": 0.25},
        {"name": "imm", "op": "impute", "from": "y", "strategy": "mean", "value": 1.75},
        {"name": "hr", "op": "hour", "from": "t"},
        {"name": "dw", "op": "day_of_week", "from": "t"},
        {"name": "rt", "op": "ratio", "from": ["x", "y"], "default": -1},
        {"name": "rtc", "op": "ratio", "from": "x", "value": 4},
        {"name": "rtn", "op": "ratio", "from": ["y", "x"]},
        {"name": "df", "op": "difference", "from": ["x", "y"]},
        {"name": "dfc", "op": "difference", "from": "x", "value": 1},
        {"name": "sm", "op": "sum", "from": ["x", "y"]},
        {"name": "pr", "op": "product", "from": "x", "value": -2},
        {"name": "gt", "op": "greater", "from": "x", "value": 1},
        {"name": "ge", "op": "greater_equal", "from": ["x", "y"]},
        {"name": "lt", "op": "less", "from": ["x", "y"]},
        {"name": "le2", "op": "less_equal", "from": "y", "value": 2},
        {"name": "eq", "op": "equal", "from": "s", "value": "a"},
        {"name": "eqn", "op": "equal", "from": ["x", "y"]},
        {"name": "ne", "op": "not_equal", "from": "code", "value": 2},
        {"name": "hr_std", "op": "standardize", "from": "hr", "mean": 12, "std": 6},
        {"name": "ident", "op": "identity", "from": "y"},
    ],
    "model_inputs": {"input": {"dtype": "float64", "order": []}},
}
SPEC["model_inputs"]["input"]["order"] = [f["name"] for f in SPEC["features"]]


def num(s):
    return np.nan if s == "" else float(s)


def ts(s):
    if s == "":
        return np.nan
    try:
        return round(float(s) * 1e6) / 1e6
    except ValueError:
        d = datetime.fromisoformat(s.replace("Z", "+00:00").replace(" ", "T"))
        if d.tzinfo is None:
            from datetime import timezone
            d = d.replace(tzinfo=timezone.utc)
        return round(d.timestamp() * 1e6) / 1e6


def fnv1a(b):
    h = 0xcbf29ce484222325
    for c in b:
        h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def main():
    os.makedirs(HERE, exist_ok=True)
    x = np.array([num(r[1]) for r in ROWS])
    y = np.array([num(r[2]) for r in ROWS])
    s = [r[3] if r[3] != "" else None for r in ROWS]
    code = np.array([num(r[4]) for r in ROWS])
    t = np.array([ts(r[5]) for r in ROWS])
    cols = {}
    with np.errstate(all="ignore"):
        cols["std"] = (x - 1.5) / 2.5
        cols["mm"] = (x - (-3)) / (7 - (-3))
        cols["lg"] = np.where(x > -1, np.log1p(x), np.nan)
        cols["cl"] = np.clip(x, -1, 2)
        cols["cl_lo"] = np.where(np.isnan(y), np.nan, np.maximum(y, 0))
        edges = np.array([-1, 0, 2.5, 10.0])
        cols["bk"] = np.where(np.isnan(x), np.nan, np.searchsorted(edges, x, side="right").astype(float))
        for c in ["a", "b", "c"]:
            cols[f"oh={c}"] = np.array([1.0 if v == c else 0.0 for v in s])
        cols["oh=other"] = np.array([0.0 if v in ("a", "b", "c") else 1.0 for v in s])
        for c in [1, 2, 5]:
            cols[f"ohn={c}"] = np.where(code == c, 1.0, 0.0)
        cols["ord"] = np.array([["b", "a"].index(v) if v in ("b", "a") else 2.0 for v in s], dtype=float)
        cols["le"] = np.array([0.0 if v == "c" else -1.0 for v in s])
        cols["hb"] = np.array([np.nan if v is None else float(fnv1a(v.encode()) % 7) for v in s])
        cols["hbn"] = np.array([np.nan if np.isnan(v) else float(fnv1a(format(v, ".17g").encode()) % 5) for v in code])
        cols["imc"] = np.where(np.isnan(x), 0.25, x)
        cols["imm"] = np.where(np.isnan(y), 1.75, y)
        cols["hr"] = np.floor((t - 86400.0 * np.floor(t / 86400.0)) / 3600.0)
        days = np.floor(t / 86400.0) + 3.0
        cols["dw"] = days - 7.0 * np.floor(days / 7.0)
        ok = (y != 0) & ~np.isnan(y) & ~np.isnan(x)
        cols["rt"] = np.where(ok, x / np.where(ok, y, 1), -1.0)
        cols["rtc"] = np.where(np.isnan(x), np.nan, x / 4)
        ok2 = (x != 0) & ~np.isnan(x) & ~np.isnan(y)
        cols["rtn"] = np.where(ok2, y / np.where(ok2, x, 1), np.nan)
        cols["df"] = x - y
        cols["dfc"] = x - 1
        cols["sm"] = x + y
        cols["pr"] = x * -2

        def cmp(a, b, f):
            return np.where(np.isnan(a) | np.isnan(b), np.nan, f(a, b).astype(float))
        cols["gt"] = cmp(x, np.full_like(x, 1), np.greater)
        cols["ge"] = cmp(x, y, np.greater_equal)
        cols["lt"] = cmp(x, y, np.less)
        cols["le2"] = cmp(y, np.full_like(y, 2), np.less_equal)
        cols["eq"] = np.array([np.nan if v is None else float(v == "a") for v in s])
        cols["eqn"] = cmp(x, y, np.equal)
        cols["ne"] = cmp(code, np.full_like(code, 2), np.not_equal)
        cols["hr_std"] = (cols["hr"] - 12) / 6
        cols["ident"] = y
    names = list(cols.keys())
    with open(os.path.join(HERE, "transforms_spec.json"), "w") as f:
        json.dump(SPEC, f, indent=1, ensure_ascii=False)
    with open(os.path.join(HERE, "transforms_input.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "x", "y", "s", "code", "t"])
        w.writerows(ROWS)
    with open(os.path.join(HERE, "transforms_expected.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(names)
        for i in range(len(ROWS)):
            w.writerow(["" if np.isnan(cols[n][i]) else repr(float(cols[n][i])) for n in names])
    print(f"{len(ROWS)} rows, {len(names)} feature columns")


if __name__ == "__main__":
    main()
