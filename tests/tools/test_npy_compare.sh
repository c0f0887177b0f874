#!/usr/bin/env bash
# The comparator behind the model, ML and conformance tests must be able to fail:
# writes tiny float32 .npy files byte by byte (no numpy) and checks that
# npy_compare accepts equal and close arrays and refuses NaN against a number,
# a number against NaN, +inf against a large number, and a value beyond tolerance.
#   test_npy_compare.sh NPY_COMPARE
set -u
. "$(dirname "$0")/../check.sh"
compare=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# npy v1 header for a float32 vector of N elements, padded to 128 bytes
npy_f32() { # FILE N HEXBYTES...
    local file=$1 n=$2
    shift 2
    local dict="{'descr': '<f4', 'fortran_order': False, 'shape': ($n,), }"
    local pad=$((128 - 10 - ${#dict} - 1))
    {
        printf '\x93NUMPY\x01\x00'
        printf "\\x$(printf %02x $((128 - 10)))\\x00"
        printf '%s%*s\n' "$dict" "$pad" ''
        for b in "$@"; do printf "\\x$b"; done
    } >"$file"
}
ONE="00 00 80 3f"; NAN="00 00 c0 7f"; INF="00 00 80 7f"; BIG="ff ff 7f 7f"; ONE_EPS="01 00 80 3f"; TWO="00 00 00 40"
npy_f32 "$work/one.npy" 2 $ONE $ONE
npy_f32 "$work/one_eps.npy" 2 $ONE $ONE_EPS
npy_f32 "$work/nan.npy" 2 $ONE $NAN
npy_f32 "$work/nan2.npy" 2 $ONE $NAN
npy_f32 "$work/inf.npy" 2 $ONE $INF
npy_f32 "$work/big.npy" 2 $ONE $BIG
npy_f32 "$work/two.npy" 2 $ONE $TWO

expect() { # WANT(0|1) GOT WANT-FILE what
    "$compare" "$work/$2" "$work/$3" 1e-4 1e-5 >/dev/null 2>&1
    local rc=$?
    if [ "$rc" -eq "$1" ]; then ok "$4"; else bad "$4" "exit $rc, expected $1"; fi
}
expect 0 one.npy one.npy "equal arrays match"
expect 0 one_eps.npy one.npy "a one-ulp difference is within tolerance"
expect 0 nan.npy nan2.npy "NaN matches NaN"
expect 1 nan.npy one.npy "NaN against a number is a mismatch"
expect 1 one.npy nan.npy "a number against NaN is a mismatch"
expect 1 inf.npy big.npy "+inf against FLT_MAX is a mismatch"
expect 1 two.npy one.npy "2 against 1 is a mismatch"
check_done
