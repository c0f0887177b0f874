#!/usr/bin/env bash
# Instructions per inference of the aarch64 build under qemu-user, NEON
# kernels (path neon) against the generic C ones (INFERA_CPU=generic), for
# the example models -- the speed ratio docs/edge-aarch64.md reports (wall
# time under emulation means little).  Counts with a QEMU TCG plugin
# (insn_count_plugin.c, built here with the host compiler); per inference =
# (count at ITERS2 - count at ITERS1) / (ITERS2 - ITERS1), so loading and
# start-up cancel out.  One thread (the plugin's counter is not atomic).
#   bench/aarch64/insn_count.sh [BUILD_DIR (build-aarch64)] [MODEL.onnx...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build-aarch64}
shift || true
models=("$@")
[ ${#models[@]} -gt 0 ] || models=("$root/tests/models/mlp.onnx" "$root/tests/models/cnn.onnx"
                                   "$root/tests/models/transformer.onnx")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -shared -fPIC -Wall -Wextra -o "$work/insn.so" "$here/insn_count_plugin.c"
libs=$build/sysroot/usr/lib/aarch64-linux-gnu:$build/sysroot/lib/aarch64-linux-gnu
ITERS1=${ITERS1:-1} ITERS2=${ITERS2:-4}

count() { # path iters model -> instructions of the whole run
    local env=() log=$work/log
    [ "$1" = generic ] && env=(-E INFERA_CPU=generic)
    qemu-aarch64 -L /usr/aarch64-linux-gnu -E "LD_LIBRARY_PATH=$libs" "${env[@]}" -plugin "$work/insn.so" \
        -d plugin -D "$log" "$build/infera" bench "$3" --threads 1 --warmup 0 --iters "$2" >/dev/null
    awk '/^insns/ {print $2}' "$log"
}

printf '%-16s %16s %16s %8s\n' model generic neon ratio
for m in "${models[@]}"; do
    declare -A per=()
    for path in generic neon; do
        a=$(count "$path" "$ITERS1" "$m")
        b=$(count "$path" "$ITERS2" "$m")
        per[$path]=$(((b - a) / (ITERS2 - ITERS1)))
    done
    printf '%-16s %16d %16d %7.2fx\n' "$(basename "$m" .onnx)" "${per[generic]}" "${per[neon]}" \
        "$(awk -v g="${per[generic]}" -v n="${per[neon]}" 'BEGIN {print g / n}')"
done
