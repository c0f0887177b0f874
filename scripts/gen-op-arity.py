#!/usr/bin/python3
"""Fills the arity columns of src/ops/ops.def from ONNX's operator schemas.

Each OP line may carry, after its impl, the minimum and maximum number of
inputs and outputs a node of that op may have, over the opsets the row
covers, and a bit mask of the inputs that are required (never empty) in all
of them:  OP(ONNX, "Conv", 1, 17, op_conv, 2, 3, 1, 1, 0x3).  The loader rejects a
node outside those bounds before its kernel sees it.  This script (a
development tool) computes them from onnx.defs and rewrites the lines in
place; run it after adding an operator.  Debian's python3-onnx knows opsets up
to 17 only: for the versions of 18-26 use the pinned oracle's ONNX 1.23
(tests/conformance/setup_oracle.sh), which gives the same columns for <= 17.
Usage: /tmp/opset-venv/bin/python scripts/gen-op-arity.py [src/ops/ops.def]
"""
import re
import sys

import onnx.defs

VARIADIC = 2147483647
DOMAINS = {"ONNX": "", "ML": "ai.onnx.ml", "TRAINING": "ai.onnx.preview.training"}
LINE = re.compile(r'^OP\((\w+), "(\w+)", (\d+), (\d+), (\w+)(?:, -?\d+, -?\d+, -?\d+, -?\d+(?:, 0x[0-9a-f]+)?)?\)$')
SINGLE = onnx.defs.OpSchema.FormalParameterOption.Single


def arity(domain, name, first, last):
    lo_in = lo_out = None
    hi_in = hi_out = 0
    required = (1 << 31) - 1
    for version in range(first, last + 1):
        try:
            s = onnx.defs.get_schema(name, version, domain)
        except Exception:
            continue
        if s.since_version < first and version != first:
            continue
        lo_in = s.min_input if lo_in is None else min(lo_in, s.min_input)
        lo_out = s.min_output if lo_out is None else min(lo_out, s.min_output)
        hi_in = max(hi_in, s.max_input)
        hi_out = max(hi_out, s.max_output)
        mask = 0
        for i, p in enumerate(s.inputs[:31]):
            if p.option == SINGLE:
                mask |= 1 << i
        required &= mask
    if lo_in is None:
        return None
    cap = lambda n: -1 if n >= VARIADIC else n  # -1: no upper bound
    return lo_in, cap(hi_in), lo_out, cap(hi_out), required


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "src/ops/ops.def"
    out, missing = [], []
    for line in open(path).read().split("\n"):
        m = LINE.match(line)
        if not m:
            out.append(line)
            continue
        dom, name, first, last, impl = m.group(1), m.group(2), int(m.group(3)), int(m.group(4)), m.group(5)
        if dom not in DOMAINS:  # ai.infera's fused ops: no ONNX schema, arity set by hand
            out.append(line)
            continue
        a = arity(DOMAINS[dom], name, first, last)
        if a is None:
            missing.append(name)
            out.append(f'OP({dom}, "{name}", {first}, {last}, {impl})')
        else:
            out.append(f'OP({dom}, "{name}", {first}, {last}, {impl}, {a[0]}, {a[1]}, {a[2]}, {a[3]}, {a[4]:#x})')
    open(path, "w").write("\n".join(out))
    if missing:
        print("no ONNX schema for:", ", ".join(missing), file=sys.stderr)


main()
