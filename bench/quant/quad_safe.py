#!/usr/bin/python3
"""quad_safe.py -- how many int8 weights of a quantized model would let an AVX2 kernel add two vpmaddubsw
results in int16 before widening (madd_ceiling.c's "ubs2" form), exactly.

    /usr/bin/python3 bench/quant/quad_safe.py MODEL_INT8.onnx ...
    /usr/bin/python3 bench/quant/quad_safe.py --dump DIR MODEL_INT8.onnx ...   (the weights, for route_bench.c)

vpmaddubsw sums the u8 x s8 products of a K pair into a saturating int16; adding two of them (K quads q and
q + 1 of a column) sums 4 products per int16 slot: K = {8g, 8g+1, 8g+4, 8g+5} and {8g+2, 8g+3, 8g+6, 8g+7}
in the packed K order (Gemm/MatMul: K; Conv: kernel tap then channel, as qgemm packs it).  With activations
anywhere in [0, 255] such a slot is exact iff 255 x (sum of its positive weights) <= 32767 and 255 x (sum of
|its negative weights|) <= 32768, i.e. both sums <= 128 ("signed" below); the simpler sum |b| <= 128 is the
sufficient test pair-safety uses now ("abs").  Prints, per weight and in total, the share of slots that pass
of output columns (and 8-column panels) whose every slot passes -- a kernel choosing per panel at pack time
could use the two-step form only there -- and of (panel, 8-K group) blocks whose 16 slots pass: a kernel routing
each group of a panel by its weights could use it there.
"""
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def weights(path):
    """(name, W[K, N] int) for each int8 weight behind a DequantizeLinear feeding Gemm / MatMul / Conv."""
    m = onnx.load(path)
    inits = {t.name: t for t in m.graph.initializer}
    dq_src = {n.output[0]: n.input[0] for n in m.graph.node if n.op_type == "DequantizeLinear"}
    for n in m.graph.node:
        if n.op_type not in ("Gemm", "MatMul", "Conv", "QLinearMatMul", "QLinearConv", "MatMulInteger",
                             "ConvInteger"):
            continue
        wi = {"QLinearMatMul": 3, "QLinearConv": 3}.get(n.op_type, 1)
        src = dq_src.get(n.input[wi], n.input[wi])
        if src not in inits:
            continue
        w = numpy_helper.to_array(inits[src])
        if w.dtype != np.int8:
            continue
        w = w.astype(np.int64)
        if n.op_type in ("Gemm",):
            tb = next((a.i for a in n.attribute if a.name == "transB"), 0)
            w = w.T if tb else w
        elif "Conv" in n.op_type:  # [M, C, kh, kw] -> K = (kh, kw, c), N = M
            w = w.transpose(2, 3, 1, 0).reshape(-1, w.shape[0])
        yield n.name or src, w


def census(w):
    k, n = w.shape
    kp = (k + 7) // 8 * 8
    w = np.concatenate([w, np.zeros((kp - k, n), np.int64)])
    g = w.reshape(kp // 8, 8, n)
    slots = np.stack([g[:, [0, 1, 4, 5], :], g[:, [2, 3, 6, 7], :]], axis=1)  # [groups, 2, 4, N]
    pos = np.where(slots > 0, slots, 0).sum(axis=2)
    neg = np.where(slots < 0, -slots, 0).sum(axis=2)
    ok_signed = (pos <= 128) & (neg <= 128)
    ok_abs = np.abs(slots).sum(axis=2) <= 128
    res = {}
    for tag, ok in (("signed", ok_signed), ("abs", ok_abs)):
        col = ok.all(axis=(0, 1))
        npan = (n + 7) // 8
        pan = [col[8 * p:8 * p + 8].all() for p in range(npan)]
        grp = ok.all(axis=1)  # [groups, N]
        blocks = [grp[:, 8 * p:8 * p + 8].all(axis=1) for p in range(npan)]  # each [groups]
        res[tag] = (ok.mean(), col.mean(), float(np.mean(pan)), ok.size, n, npan, float(np.mean(blocks)),
                    sum(b.size for b in blocks))
    return res


def dump(out_dir, paths):
    """Writes each weight as raw int8 [K, N] to OUT_DIR/TAG_I_K_N.bin (TAG the file's stem), for route_bench.c."""
    import os
    for path in paths:
        tag = os.path.basename(path).split(".")[0].replace("_", "")
        for i, (_, w) in enumerate(weights(path)):
            w.astype(np.int8).tofile(os.path.join(out_dir, "%s_%d_%d_%d.bin" % (tag, i, w.shape[0], w.shape[1])))


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--dump":
        dump(sys.argv[2], sys.argv[3:])
        return
    for path in sys.argv[1:]:
        tot = {"signed": [0] * 8, "abs": [0] * 8}
        print(path)
        for name, w in weights(path):
            r = census(w)
            s, a = r["signed"], r["abs"]
            print("  %-32s K %5d N %4d  max|b| %3d  slots ok %.4f (abs %.4f)  columns ok %.3f  panels ok %.3f"
                  "  panel-groups ok %.3f" % (name[-32:], w.shape[0], w.shape[1], np.abs(w).max(), s[0], a[0], s[1],
                                              s[2], s[6]))
            for tag in tot:
                v = r[tag]
                tot[tag][0] += v[0] * v[3]
                tot[tag][1] += v[3]
                tot[tag][2] += v[1] * v[4]
                tot[tag][3] += v[4]
                tot[tag][4] += v[2] * v[5]
                tot[tag][5] += v[5]
                tot[tag][6] += v[6] * v[7]
                tot[tag][7] += v[7]
        for tag, t in tot.items():
            if t[1]:
                print("  all (%s): slots ok %.4f, columns ok %.3f, panels ok %.3f, panel-groups ok %.3f"
                      % (tag, t[0] / t[1], t[2] / t[3], t[4] / t[5], t[6] / t[7]))


if __name__ == "__main__":
    main()
