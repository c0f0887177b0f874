"""masked_row_zero.py Y.npy -- for tests/integration/test_hf_bert.sh (no numpy needed): Y is float32
[batch, 5, 2, 4] from sdpa_edges.onnx; exits 0 when every batch's query row 0 (fully masked) is all zeros and
row 1 is not."""
import array
import ast
import sys

buf = open(sys.argv[1], "rb").read()
hlen = int.from_bytes(buf[8:10], "little")
hdr = ast.literal_eval(buf[10:10 + hlen].decode("latin1"))
y = array.array("f")
y.frombytes(buf[10 + hlen:])
b, s, h, d = hdr["shape"]
assert hdr["descr"] == "<f4" and len(y) == b * s * h * d
row = lambda i, r: y[(i * s + r) * h * d:(i * s + r + 1) * h * d]
sys.exit(0 if all(v == 0 for i in range(b) for v in row(i, 0)) and any(v != 0 for i in range(b) for v in row(i, 1))
         else 1)
