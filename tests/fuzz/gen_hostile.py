#!/usr/bin/env python3
"""Writes hostile ONNX files for the hardening tests (tests/integration/
test_hostile.sh) and the fuzzers' seed corpus (scripts/test.sh), byte by
byte: no onnx module needed, and nothing large is committed.

  gen_hostile.py nested-if DEPTH OUT.onnx     If bodies nested DEPTH levels
      (a valid model: input `cond` bool scalar, output `y` float [1]; with
      cond true the innermost then-branch answers, its Constant is DEPTH)
  gen_hostile.py nested-type DEPTH OUT.onnx   an input typed seq(seq(...(float)))
  gen_hostile.py nested-seq DEPTH OUT.pb      a SequenceProto nested DEPTH deep
  gen_hostile.py loop TRIP OUT.onnx           Loop with trip count TRIP adding 1
      per iteration to `x` (float [1]), output `y`
  gen_hostile.py bool 0|1 OUT.pb              a bool scalar TensorProto
  gen_hostile.py float V1,V2,... OUT.pb       a float [n] TensorProto
  gen_hostile.py external LOCATION OFFSET LENGTH OUT.onnx
      one float[4] initializer `w` in external data at LOCATION (output `y` = w)
  gen_hostile.py window OP DIMS OUT.onnx OUT.pb
      node `the_pool`, OP (AveragePool, MaxPool, or Conv with a zero weight
      of the window's shape) over input `x` (float [1,1,DIMS], DIMS
      comma-separated; OUT.pb: zeros of that shape) with a window as large as
      the input and pads one short of it on both sides: each of the ~2x
      outputs per dim reads up to the whole input (L^2 work)

Field numbers are those of onnx.proto (Debian libonnx-dev) and
src/onnx/onnx_data.proto."""
import struct
import sys


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wire):
    return varint(field << 3 | wire)


def vint(field, n):
    return key(field, 0) + varint(n)


def ld(field, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return key(field, 2) + varint(len(payload)) + payload


FLOAT, BOOL = 1, 9


def tensor_type(elem, dims):
    shape = b"".join(ld(1, vint(1, d)) for d in dims)
    return ld(1, vint(1, elem) + ld(2, shape))  # TypeProto.tensor_type


def value_info(name, type_proto):
    return ld(1, name) + ld(2, type_proto)


def attr_graph(name, graph):
    return ld(1, name) + ld(6, graph) + vint(20, 5)


def attr_tensor(name, tensor):
    return ld(1, name) + ld(5, tensor) + vint(20, 4)


def attr_int(name, v):
    return ld(1, name) + vint(3, v) + vint(20, 2)


def attr_ints(name, vs):
    return ld(1, name) + b"".join(vint(8, v) for v in vs) + vint(20, 7)


def node(op, inputs, outputs, attrs=(), name=""):
    body = b"".join(ld(1, i) for i in inputs) + b"".join(ld(2, o) for o in outputs)
    body += ld(3, name or op) + ld(4, op) + b"".join(ld(5, a) for a in attrs)
    return body


def float_tensor(name, values):
    t = b"".join(vint(1, d) for d in [len(values)]) + vint(2, FLOAT)
    return t + ld(8, name) + ld(9, struct.pack("<%df" % len(values), *values))


def graph(name, nodes, inputs, outputs, initializers=()):
    g = b"".join(ld(1, n) for n in nodes) + ld(2, name)
    g += b"".join(ld(5, t) for t in initializers)
    g += b"".join(ld(11, v) for v in inputs) + b"".join(ld(12, v) for v in outputs)
    return g


def model(g, opset=13):
    return vint(1, 8) + ld(2, "gen_hostile") + ld(8, ld(1, "") + vint(2, opset)) + ld(7, g)


def out_f1(name):
    return value_info(name, tensor_type(FLOAT, [1]))


def chain(core, levels):
    """Nests core inside `levels` wrappers, innermost first, in linear time:
    each wrapper is a function of the inner length giving (prefix, suffix)."""
    pres, sufs, n = [], [], len(core)
    for wrap in levels:
        pre, suf = wrap(n)
        pres.append(pre)
        sufs.append(suf)
        n += len(pre) + len(suf)
    return b"".join(reversed(pres)) + core + b"".join(sufs)


def sub(field, n):
    """The header of a length-delimited field holding n bytes."""
    return key(field, 2) + varint(n)


def if_level(level):
    """Graph `g<level>` holding one If whose then_branch is the inner graph."""
    def wrap(inner):
        a_pre, a_suf = ld(1, "then_branch") + sub(6, inner), vint(20, 5)
        a_len = len(a_pre) + inner + len(a_suf)
        other = graph("else%d" % level, [node("Constant", [], ["e%d" % level],
                      [attr_tensor("value", float_tensor("c", [-1.0]))])], [], [out_f1("e%d" % level)])
        n_pre = ld(1, "cond") + ld(2, "y%d" % level) + ld(3, "if%d" % level) + ld(4, "If") + sub(5, a_len) + a_pre
        n_suf = a_suf + ld(5, attr_graph("else_branch", other))
        n_len = len(n_pre) + inner + len(n_suf)
        inputs = [value_info("cond", tensor_type(BOOL, []))] if level == 0 else []
        g_pre = sub(1, n_len) + n_pre
        g_suf = n_suf + ld(2, "g%d" % level if level else "main") + b"".join(ld(11, v) for v in inputs)
        g_suf += ld(12, out_f1("y%d" % level))
        if level == 0:  # the model around the main graph
            g_len = len(g_pre) + inner + len(g_suf)
            head = vint(1, 8) + ld(2, "gen_hostile") + ld(8, ld(1, "") + vint(2, 13)) + sub(7, g_len)
            return head + g_pre, g_suf
        return g_pre, g_suf
    return wrap


def nested_if(depth):
    leaf = graph("leaf%d" % depth, [node("Constant", [], ["y%d" % depth],
                 [attr_tensor("value", float_tensor("c", [float(depth)]))])], [], [out_f1("y%d" % depth)])
    return chain(leaf, [if_level(level) for level in range(depth - 1, -1, -1)])


def nested_type(depth):
    t = chain(tensor_type(FLOAT, [1]), [lambda n: (sub(4, n + len(sub(1, n))) + sub(1, n), b"")] * depth)
    g = graph("main", [node("Identity", ["x"], ["y"])], [value_info("x", t)], [value_info("y", t)])
    return model(g)


def nested_seq(depth):
    core = vint(2, 1) + ld(3, float_tensor("t", [1.0]))
    return chain(core, [lambda n: (vint(2, 3) + sub(5, n), b"")] * depth)


def loop(trip):
    body = graph("body", [node("Add", ["v_in", "one"], ["v_out"]), node("Identity", ["cond_in"], ["cond_out"])],
                 [value_info("i", tensor_type(7, [])), value_info("cond_in", tensor_type(BOOL, [])),
                  out_f1("v_in")], [value_info("cond_out", tensor_type(BOOL, [])), out_f1("v_out")])
    m_t = vint(2, 7) + ld(8, "M") + ld(9, struct.pack("<q", trip))
    one = float_tensor("one", [1.0])
    g = graph("main", [node("Loop", ["M", "", "x"], ["y"], [attr_graph("body", body)], name="the_loop")],
              [out_f1("x")], [out_f1("y")], initializers=[m_t, one])
    return model(g)


def external(location, offset, length):
    t = vint(1, 4) + vint(2, FLOAT) + ld(8, "w") + vint(14, 1)  # data_location = EXTERNAL
    for k, v in (("location", location), ("offset", offset), ("length", length)):
        if v != "-":
            t += ld(13, ld(1, k) + ld(2, v))
    g = graph("main", [node("Identity", ["w"], ["y"])], [], [value_info("y", tensor_type(FLOAT, [4]))],
              initializers=[t])
    return model(g)


def window(op, dims):
    shape = [1, 1] + dims
    attrs = [attr_ints("kernel_shape", dims), attr_ints("pads", [d - 1 for d in dims] * 2)]
    n = 1
    for d in shape:
        n *= d
    inputs, inits = ["x"], []
    if op == "Conv":
        inputs.append("w")
        inits.append(b"".join(vint(1, d) for d in shape) + vint(2, FLOAT) + ld(8, "w") + ld(9, bytes(4 * n)))
    g = graph("main", [node(op, inputs, ["y"], attrs, name="the_pool")], [value_info("x", tensor_type(FLOAT, shape))],
              [value_info("y", tensor_type(FLOAT, [1, 1] + [2 * d - 1 for d in dims]))], initializers=inits)
    x = b"".join(vint(1, d) for d in shape) + vint(2, FLOAT) + ld(8, "x") + ld(9, bytes(4 * n))
    return model(g), x


def main(argv):
    kind = argv[1]
    if kind == "nested-if":
        data, out = nested_if(int(argv[2])), argv[3]
    elif kind == "nested-type":
        data, out = nested_type(int(argv[2])), argv[3]
    elif kind == "nested-seq":
        data, out = nested_seq(int(argv[2])), argv[3]
    elif kind == "loop":
        data, out = loop(int(argv[2])), argv[3]
    elif kind == "bool":
        data, out = vint(2, BOOL) + ld(9, bytes([int(argv[2])])), argv[3]
    elif kind == "float":
        vals = [float(v) for v in argv[2].split(",")]
        data, out = float_tensor("x", vals), argv[3]
    elif kind == "external":
        data, out = external(argv[2], argv[3], argv[4]), argv[5]
    elif kind == "window":
        data, x = window(argv[2], [int(d) for d in argv[3].split(",")])
        out = argv[4]
        with open(argv[5], "wb") as f:
            f.write(x)
    else:
        sys.exit("unknown kind " + kind)
    with open(out, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main(sys.argv)
