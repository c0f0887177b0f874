#!/usr/bin/env python3
"""Writes the seeds of the decoder fuzzers that have no real files to start from
(fuzz_npy, fuzz_tokenizer, fuzz_pipeline, fuzz_record_source, fuzz_monitor_rules):
small valid inputs of each format, so libFuzzer starts inside the decoder.
Run from this folder; python3 only (no numpy)."""
import csv
import io
import json
import struct

def npy(descr, shape, data, version=1):
    shape_txt = "(" + "".join(f"{d}, " for d in shape).rstrip(" ") + ")" if len(shape) != 1 else f"({shape[0]},)"
    if not shape:
        shape_txt = "()"
    hdr = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_txt}, }}"
    pre = 10 if version == 1 else 12
    hdr += " " * (-(pre + len(hdr) + 1) % 64) + "\n"
    size = struct.pack("<H", len(hdr)) if version == 1 else struct.pack("<I", len(hdr))
    return b"\x93NUMPY" + bytes([version, 0]) + size + hdr.encode() + data

seeds = {
    "npy_f4_2x3.npy": npy("<f4", (2, 3), struct.pack("<6f", *range(6))),
    "npy_i8_scalar.npy": npy("<i8", (), struct.pack("<q", -7)),
    "npy_b1_4.npy": npy("|b1", (4,), bytes([1, 0, 1, 1])),
    "npy_u2_v2.npy": npy("<u2", (1, 2, 1), struct.pack("<2H", 1, 65535), version=2),
    "npy_f8_empty.npy": npy("<f8", (0, 5), b""),
}

# tokenizer: first byte = vocabulary * 2 + recognise specials
texts = [b"Hello, world! It is a truth universally acknowledged.", "caf\u00e9 \u65e5\u672c\u8a9e \U0001F600 \u2581x".encode(),
         b"<s> and </s> <unk> <|im_start|>user\n<|im_end|>", b"\xff\xfe\xc3\x28 broken \xe2\x82 utf8 \xf0\x9f",
         b"   leading  and trailing   \t\n\n", b"12345 3.14159 don't we'll I'M"]
for i, t in enumerate(texts):
    seeds[f"tok_{i}.bin"] = bytes([(2 * i + (i & 1)) & 0xFF]) + t

# pipeline: spec NUL records (one JSON object a line)
here = "../../../"
spec = json.load(open(here + "tests/pipeline/data/transforms_spec.json"))
rows = list(csv.DictReader(open(here + "tests/pipeline/data/transforms_input.csv")))
recs = "\n".join(json.dumps(r) for r in rows[:6]).encode()
seeds["pipeline_transforms.bin"] = json.dumps(spec).encode() + b"\0" + recs
fraud = json.load(open(here + "examples/fraud/fraud_spec.json"))
lk = fraud.pop("lookups")[0]  # the lookup's columns become inputs: a spec the fuzzer executes
for name, kind in lk["features"].items():
    fraud["inputs"][name] = {"type": kind}
raw = list(csv.DictReader(open(here + "examples/fraud/transactions_raw.csv")))[:4]
for r in raw:
    r.update({"txn_count_1h": 1, "txn_count_24h": 3, "avg_amount_30d": 20.5, "days_since_last_txn": 0.5})
    for k in ("amount", "distance_from_home_km", "distance_from_last_txn_km"):
        r[k] = float(r[k]) if r[k] else None
    r["merchant_category"] = int(r["merchant_category"])
    r["card_present"] = r["card_present"] == "1"
seeds["pipeline_fraud.bin"] = json.dumps(fraud).encode() + b"\0" + "\n".join(json.dumps(r) for r in raw).encode()
seeds["pipeline_default.bin"] = b"\0" + "\n".join(json.dumps({f"f{i}": i * 0.5 for i in range(12)}) for _ in range(3)).encode()

# record sources: first byte = rows per batch * 2 + (1 = jsonl, 0 = csv)
out = io.StringIO()
w = csv.writer(out, lineterminator="\n")
w.writerow(["id", "x", "s", "t", "b"])
w.writerows([["r1", "1.5", "a,b", "2024-03-04T00:00:00Z", "true"], ["r2", "-2e3", 'say "hi"\nthere', "", "0"],
             ["r3", "nan", "", "2024-03-04 12:00:00", "false"]])
seeds["records_basic.csv"] = bytes([2 * 3]) + out.getvalue().encode()
seeds["records_crlf.csv"] = bytes([2 * 1]) + b"a,b\r\n1,2\r\n\"3\",\"x\"\"y\"\r\n4\r\n"
seeds["records_basic.jsonl"] = bytes([2 * 2 + 1]) + b'{"id": "r1", "x": 1.5, "v": [1, 2], "o": {"k": null}}\n' \
    b'{"id": "r2", "x": -1e308, "b": true, "t": "2024-03-04T00:00:00.123456Z"}\n\n{"id": 3}\n'

seeds["rules_basic.json"] = json.dumps({"rules": [
    {"name": "distance drift", "metric": "psi", "feature": "distance_from_home_km", "threshold": 0.25,
     "window": "1h", "for": "0s", "min_rows": 100, "action": ["webhook", "rollback"],
     "webhook": "http://127.0.0.1:9/hook", "alias": "production"},
    {"name": "auc fell", "metric": "auc", "threshold": 0.8, "window": 900, "action": "log"}],
    "labels": {"source": "csv:labels.csv", "id_column": "txn", "label_column": "label", "window": "1d"}}).encode()

for name, data in seeds.items():
    open(name, "wb").write(data)
