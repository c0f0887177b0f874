"""calib_csv.py DIR SET OUT.csv OUT_spec.json -- for tests/integration/test_hf_bert.sh (no numpy needed): the
input set's three int64 [rows, seq] .npy files as one CSV record per row (a column per token position) and the
pipeline spec that maps them back to input_ids / attention_mask / token_type_ids, for `infera quantize
--calibration csv:OUT.csv --spec OUT_spec.json` (docs/compression.md, calibration of a multi-input model)."""
import array
import ast
import json
import sys

d, tag, csv_path, spec_path = sys.argv[1:5]
names = ["input_ids", "attention_mask", "token_type_ids"]
cols, data = [], []
for k, n in enumerate(names):
    buf = open(f"{d}/{n}_{tag}.npy", "rb").read()
    hlen = int.from_bytes(buf[8:10], "little")
    hdr = ast.literal_eval(buf[10:10 + hlen].decode("latin1"))
    assert hdr["descr"] == "<i8" and not hdr["fortran_order"]
    rows, seq = hdr["shape"]
    a = array.array("q")
    a.frombytes(buf[10 + hlen:])
    data.append([a[r * seq:(r + 1) * seq] for r in range(rows)])
    cols.append([f"{n[0]}{j}" for j in range(seq)])
with open(csv_path, "w") as f:
    f.write(",".join(c for cs in cols for c in cs) + "\n")
    for r in range(len(data[0])):
        f.write(",".join(str(v) for k in range(3) for v in data[k][r]) + "\n")
spec = {"name": "hf_bert_calibration", "inputs": {c: {"type": "int"} for cs in cols for c in cs},
        "model_inputs": {n: {"dtype": "int64", "order": cols[k]} for k, n in enumerate(names)}}
json.dump(spec, open(spec_path, "w"))
