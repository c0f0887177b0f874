"""Minimal GGUF v3 writer/reader for the test models (numpy only; no third-party GGUF package).

Writes F32, Q8_0 and Q4_0 tensors with ggml's reference quantizers (quantize_row_q8_0_ref /
quantize_row_q4_0_ref in ggml-quants.c) and reads back what it wrote, so a model's F32 copy can be
regenerated from its committed Q8_0 copy (see make_models.py).
"""
import struct

import numpy as np

GGUF_MAGIC = b"GGUF"
T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR, T_U64, T_I64, T_F64 = range(13)
GGML_F32, GGML_F16, GGML_Q4_0, GGML_Q8_0 = 0, 1, 2, 8
QK = 32
ALIGN = 32


def quantize_q8_0(x):
    """x: float32 [rows, cols], cols % 32 == 0 -> bytes of Q8_0 blocks (f16 d, 32 x int8)."""
    b = x.astype(np.float32).reshape(-1, QK)
    amax = np.abs(b).max(axis=1)
    d = (amax / 127.0).astype(np.float32)
    idv = np.where(d != 0, np.float32(1.0) / np.where(d != 0, d, 1), 0).astype(np.float32)
    q = np.round(b * idv[:, None]).astype(np.int8)  # roundf: half away from zero; np.round: half to even
    q = np.where(np.abs(b * idv[:, None] - np.trunc(b * idv[:, None])) == 0.5,
                 np.trunc(b * idv[:, None]) + np.sign(b), q).astype(np.int8)
    out = np.zeros(b.shape[0], dtype=[("d", "<f2"), ("q", "i1", (QK,))])
    out["d"] = d.astype(np.float16)
    out["q"] = q
    return out.tobytes()


def dequantize_q8_0(buf, n):
    blocks = np.frombuffer(buf, dtype=[("d", "<f2"), ("q", "i1", (QK,))], count=n // QK)
    return (blocks["d"].astype(np.float32)[:, None] * blocks["q"].astype(np.float32)).reshape(-1)


def quantize_q4_0(x):
    b = x.astype(np.float32).reshape(-1, QK)
    idx = np.abs(b).argmax(axis=1)
    mx = b[np.arange(b.shape[0]), idx]
    d = (mx / -8.0).astype(np.float32)
    idv = np.where(d != 0, np.float32(1.0) / np.where(d != 0, d, 1), 0).astype(np.float32)
    q = np.minimum(15, (b * idv[:, None] + np.float32(8.5)).astype(np.int8)).astype(np.uint8)
    packed = (q[:, :16] | (q[:, 16:] << 4)).astype(np.uint8)
    out = np.zeros(b.shape[0], dtype=[("d", "<f2"), ("q", "u1", (16,))])
    out["d"] = d.astype(np.float16)
    out["q"] = packed
    return out.tobytes()


def snap_to_q8_0(x):
    """The values a Q8_0 round trip gives: writing these as F32 makes Q8_0 lossless."""
    return dequantize_q8_0(quantize_q8_0(x), x.size).reshape(x.shape)


def _str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _value(v):
    """(type, payload) for a python value: str, bool, int (u32), float (f32), or ('arr', type, list)."""
    if isinstance(v, tuple) and v[0] == "arr":
        et, items = v[1], v[2]
        body = struct.pack("<IQ", et, len(items))
        if et == T_STR:
            body += b"".join(_str(s) for s in items)
        elif et == T_F32:
            body += np.asarray(items, dtype="<f4").tobytes()
        elif et == T_I32:
            body += np.asarray(items, dtype="<i4").tobytes()
        else:
            raise ValueError("array type")
        return T_ARR, body
    if isinstance(v, bool):
        return T_BOOL, struct.pack("<?", v)
    if isinstance(v, str):
        return T_STR, _str(v)
    if isinstance(v, int):
        return T_U32, struct.pack("<I", v)
    if isinstance(v, float):
        return T_F32, struct.pack("<f", v)
    raise ValueError(type(v))


def write_gguf(path, kvs, tensors):
    """kvs: list of (key, value); tensors: list of (name, np.float32 array, ggml type)."""
    infos, blobs, offset = [], [], 0
    for name, arr, gtype in tensors:
        arr = np.ascontiguousarray(arr, dtype=np.float32)
        if gtype == GGML_F32:
            data = arr.astype("<f4").tobytes()
        elif gtype == GGML_F16:
            data = arr.astype("<f2").tobytes()
        elif gtype == GGML_Q8_0:
            data = quantize_q8_0(arr)
        elif gtype == GGML_Q4_0:
            data = quantize_q4_0(arr)
        else:
            raise ValueError(gtype)
        ne = list(reversed(arr.shape))  # ne[0] is the contiguous dimension
        infos.append(_str(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
                     + struct.pack("<IQ", gtype, offset))
        pad = (-len(data)) % ALIGN
        blobs.append(data + b"\0" * pad)
        offset += len(data) + pad
    with open(path, "wb") as f:
        head = GGUF_MAGIC + struct.pack("<IQQ", 3, len(tensors), len(kvs))
        for k, v in kvs:
            t, body = _value(v)
            head += _str(k) + struct.pack("<I", t) + body
        head += b"".join(infos)
        head += b"\0" * ((-len(head)) % ALIGN)
        f.write(head)
        for b in blobs:
            f.write(b)


def as_arch(kvs, arch):
    """the key/value pairs of a llama file renamed for another architecture: general.architecture = arch and
    every llama.* key as arch.* (the tests rewrite the committed models into qwen2, phi3, gemma... files)"""
    return [("general.architecture", arch) if k == "general.architecture" else
            (arch + k[len("llama"):] if k.startswith("llama.") else k, v) for k, v in kvs]


def read_gguf(path):
    """Returns (kvs as an ordered list of (key, value)), tensors as a list of (name, f32 array, type)."""
    buf = open(path, "rb").read()
    assert buf[:4] == GGUF_MAGIC
    ver, n_t, n_kv = struct.unpack_from("<IQQ", buf, 4)
    pos = 24

    def rd(fmt):
        nonlocal pos
        v = struct.unpack_from(fmt, buf, pos)
        pos += struct.calcsize(fmt)
        return v[0]

    def rs():
        nonlocal pos
        n = rd("<Q")
        s = buf[pos:pos + n].decode("utf-8")
        pos += n
        return s

    scalar = {T_U8: "<B", T_I8: "<b", T_U16: "<H", T_I16: "<h", T_U32: "<I", T_I32: "<i", T_F32: "<f",
              T_BOOL: "<?", T_U64: "<Q", T_I64: "<q", T_F64: "<d"}

    def rv(t):
        if t == T_STR:
            return rs()
        if t == T_ARR:
            et, n = rd("<I"), rd("<Q")
            return ("arr", et, [rv(et) for _ in range(n)])
        return rd(scalar[t])

    kvs = []
    for _ in range(n_kv):
        k = rs()
        kvs.append((k, rv(rd("<I"))))
    infos = []
    for _ in range(n_t):
        name = rs()
        nd = rd("<I")
        ne = [rd("<Q") for _ in range(nd)]
        infos.append((name, ne, rd("<I"), rd("<Q")))
    base = pos + ((-pos) % ALIGN)
    tensors = []
    for name, ne, gtype, off in infos:
        n = int(np.prod(ne))
        shape = tuple(reversed(ne))
        if gtype == GGML_F32:
            arr = np.frombuffer(buf, dtype="<f4", count=n, offset=base + off).astype(np.float32)
        elif gtype == GGML_Q8_0:
            arr = dequantize_q8_0(buf[base + off: base + off + n // QK * 34], n)
        else:
            raise ValueError("read_gguf: type %d" % gtype)
        tensors.append((name, arr.reshape(shape), gtype))
    return kvs, tensors
