#!/usr/bin/python3
"""Compare an output .npy against a reference .npy (numpy.allclose rule).

    /usr/bin/python3 tests/models/check_outputs.py GOT.npy REF.npy [--rtol 1e-4] [--atol 1e-5]

Exit 0 when shapes and dtypes match and |got - ref| <= atol + rtol * |ref| everywhere
(NaN never matches); exit 1 with a one-line reason otherwise; exit 2 on unreadable input.
"""
import argparse
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("got")
    ap.add_argument("ref")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-5)
    a = ap.parse_args()
    try:
        got, ref = np.load(a.got), np.load(a.ref)
    except Exception as e:  # noqa: BLE001
        print("check_outputs: cannot read: %s" % e, file=sys.stderr)
        return 2
    if got.shape != ref.shape:
        print("MISMATCH %s: shape %s, expected %s (%s)" % (a.got, got.shape, ref.shape, a.ref), file=sys.stderr)
        return 1
    if got.dtype != ref.dtype:
        print("MISMATCH %s: dtype %s, expected %s (%s)" % (a.got, got.dtype, ref.dtype, a.ref), file=sys.stderr)
        return 1
    g, r = got.astype(np.float64), ref.astype(np.float64)
    diff = np.abs(g - r)
    bad = ~(diff <= a.atol + a.rtol * np.abs(r))
    if bad.any():
        i = np.unravel_index(int(np.argmax(np.where(bad, diff, -1.0))), ref.shape) if ref.ndim else ()
        print("MISMATCH %s vs %s: %d of %d elements outside rtol %g / atol %g; worst at %s: got %r, expected %r "
              "(max abs diff %.3g)" % (a.got, a.ref, int(bad.sum()), bad.size, a.rtol, a.atol, tuple(int(v) for v in i),
                                       float(g[i]), float(r[i]), float(np.nanmax(diff)) if diff.size else 0.0),
              file=sys.stderr)
        return 1
    print("ok %s vs %s: shape %s, max abs diff %.3g" % (a.got, a.ref, ref.shape, float(diff.max()) if diff.size else 0.0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
