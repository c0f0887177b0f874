#!/usr/bin/python3
"""gen_grpc_seeds.py DIR -- seed inputs for fuzz_grpc_msg: serialized
inference.ModelInferRequest messages (typed and raw contents, FP32, BYTES,
the fraud model's input, parameters, requested outputs), built with
python3-protobuf from stubs grpc_tools generates from proto/kserve_v2.proto.
Writes nothing (exit 0) when grpc_tools is missing."""
import os
import struct
import sys
import tempfile

try:
    from grpc_tools import protoc
except ImportError:
    sys.exit(0)
out = sys.argv[1]
src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "proto")
tmp = tempfile.mkdtemp()
protoc.main(["protoc", "-I" + src, "--python_out=" + tmp, os.path.join(src, "kserve_v2.proto")])
sys.path.insert(0, tmp)
import kserve_v2_pb2 as pb  # noqa: E402


def req(name, inp, dtype, shape, typed=None, raw=None, **kw):
    r = pb.ModelInferRequest(model_name=name, id="s")
    t = r.inputs.add(name=inp, datatype=dtype, shape=shape)
    if typed is not None:
        getattr(t.contents, typed[0]).extend(typed[1])
    if raw is not None:
        r.raw_input_contents.append(raw)
    for k, v in kw.items():
        r.parameters[k].int64_param = v
    return r


seeds = [
    req("idf", "x", "FP32", [2, 3], typed=("fp32_contents", [1, 2, 3, 4, 5, 6])),
    req("idf", "x", "FP32", [1, 3], raw=struct.pack("<3f", 1, 2, 3), timeout=1000),
    req("idb", "x", "BYTES", [1, 3], typed=("bytes_contents", [b"a", b"bc", b""])),
    req("idb", "x", "BYTES", [1, 3], raw=b"".join(struct.pack("<I", len(e)) + e for e in (b"a", b"bc", b""))),
    req("fraud", "input", "FP32", [1, 12], typed=("fp32_contents", [0.5] * 12)),
    req("fraud", "input", "FP32", [1, 12], raw=struct.pack("<12f", *([1.0] * 12))),
]
seeds[4].outputs.add(name="probabilities")
for i, s in enumerate(seeds):
    with open(os.path.join(out, "seed%d.pb" % i), "wb") as f:
        f.write(s.SerializeToString())
