#!/usr/bin/env bash
# test_cpu_info.sh INFERA -- `infera info --cpu [--json]` against the
# kernel's own view of the CPU (an independent oracle): every feature
# Infera reports must be in /proc/cpuinfo's flags and vice versa (for the
# features Infera knows), the L1d/L2 sizes must match sysfs, and
# INFERA_CPU lowers the kernel path but never raises it.  Skips (77) off
# Linux/x86.
set -euo pipefail
. "$(dirname "$0")/../check.sh"
INFERA=$1
[[ -r /proc/cpuinfo && $(uname -m) == x86_64 ]] || skip "needs Linux x86-64"
command -v python3 >/dev/null || skip "needs python3"
"$INFERA" info --cpu >/dev/null
json=$("$INFERA" info --cpu --json)
# Linux flag names for Infera's feature names
python3 - "$json" <<'PY' && ok "info --cpu --json matches /proc/cpuinfo" || bad "info --cpu --json vs /proc/cpuinfo"
import json, sys, os
ci = json.loads(sys.argv[1])
flags = set()
for line in open('/proc/cpuinfo'):
    if line.startswith('flags'):
        flags = set(line.split(':', 1)[1].split()); break
linux = {'sse4_2': 'sse4_2', 'avx': 'avx', 'avx2': 'avx2', 'fma': 'fma', 'f16c': 'f16c',
         'avx512f': 'avx512f', 'avx512dq': 'avx512dq', 'avx512cd': 'avx512cd', 'avx512bw': 'avx512bw',
         'avx512vl': 'avx512vl', 'avx512vbmi': 'avx512vbmi', 'avx512vnni': 'avx512_vnni',
         'avx512bf16': 'avx512_bf16', 'avx512fp16': 'avx512_fp16', 'avx_vnni': 'avx_vnni',
         'amx_tile': 'amx_tile', 'amx_int8': 'amx_int8', 'amx_bf16': 'amx_bf16'}
got = set(ci['features'])
bad = 0
for ours, theirs in linux.items():
    if (ours in got) != (theirs in flags):
        print(f"feature {ours}: infera says {ours in got}, /proc/cpuinfo says {theirs in flags}"); bad = 1
def sysfs(level, kind):
    base = '/sys/devices/system/cpu/cpu0/cache'
    for d in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        p = os.path.join(base, d)
        try:
            if int(open(p + '/level').read()) == level and open(p + '/type').read().strip() in kind:
                return int(open(p + '/size').read().strip().rstrip('K')) * 1024
        except (OSError, ValueError):
            pass
    return None
for key, level, kind in (('l1d_bytes', 1, ('Data',)), ('l2_bytes', 2, ('Unified', 'Data'))):
    want = sysfs(level, kind)
    if want is not None and ci['cache'][key] != want:
        print(f"cache {key}: infera {ci['cache'][key]}, sysfs {want}"); bad = 1
avx512 = all(f in got for f in ('avx512f', 'avx512bw', 'avx512vl', 'avx512dq'))
avx2 = all(f in got for f in ('avx', 'avx2', 'fma'))
best = 'avx512' if avx2 and avx512 else 'avx2' if avx2 else 'generic'
if ci['best_path'] != best or ci['path'] != best or ci['forced']:
    print(f"path {ci['path']} / best {ci['best_path']}, expected {best}"); bad = 1
print(f"cpu: {ci['brand']}; features {' '.join(sorted(got))}; L1d {ci['cache']['l1d_bytes']} L2 {ci['cache']['l2_bytes']}")
sys.exit(bad)
PY
best=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["best_path"])' "$json")
rank() { case $1 in generic) echo 0;; avx2) echo 1;; avx512) echo 2;; esac; }
for want in generic avx2 avx512; do
  got=$(INFERA_CPU=$want "$INFERA" info --cpu --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["path"])')
  exp=$want; (( $(rank "$want") > $(rank "$best") )) && exp=$best
  [[ $got == "$exp" ]] || bad "INFERA_CPU=$want: path $got, expected $exp"
done
warn=$(INFERA_CPU=sse9 "$INFERA" info --cpu 2>&1 >/dev/null)
[[ $warn == *INFERA_CPU* ]] || bad "an unknown INFERA_CPU value was not warned about"
"$INFERA" info --cpu somemodel.onnx >/dev/null 2>&1 && bad "--cpu with a model must be a usage error"
# every bench --json result names its machine: the same object under "cpu", after DESIGN's keys (and "profile")
model=$(cd "$(dirname "$0")/../models" && pwd)/mlp.onnx
if [[ -f $model ]]; then
  for extra in "" --profile; do
    out=$("$INFERA" bench "$model" --iters 3 --warmup 1 --json $extra)
    python3 - "$out" "$json" <<'PY' || bad "bench --json $extra: no matching \"cpu\" object" "$(head -c 600 <<<"$out")"
import json, sys
b, c = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert b["cpu"] == c, (b["cpu"], c)
assert list(b)[-1] == "cpu" and "peak_rss_mb" in b
PY
  done
fi
check_done
