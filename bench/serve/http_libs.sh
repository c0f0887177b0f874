#!/usr/bin/env bash
# bench/serve/http_libs.sh -- the HTTP library choice of `infera serve`,
# measured: minimal servers of each candidate (bench/serve/minimal/: the same
# fixed 150-byte JSON body for every request) next to nginx serving that body
# as a static file, side by side on loopback with Debian's wrk.  Rounds
# alternate the servers; medians are printed with the ratio to nginx.
# Not part of CI; installs libevent-dev / libh2o-evloop-dev when missing.
#
#   bench/serve/http_libs.sh [ROUNDS] [SECONDS]     (default 3 rounds of 3 s)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${1:-3}
SECS=${2:-3}
command -v wrk >/dev/null || apt-get install -y wrk >/dev/null
command -v nginx >/dev/null || apt-get install -y nginx-light >/dev/null
[ -f /usr/include/event2/http.h ] || apt-get install -y libevent-dev >/dev/null
[ -f /usr/include/h2o.h ] || apt-get install -y libh2o-evloop-dev >/dev/null
NPROC=$(nproc)

TMP=$(mktemp -d /tmp/infera-bench-libs-XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    [ -f "$TMP/nginx.pid" ] && kill "$(cat "$TMP/nginx.pid")" 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT

cc -O2 -o "$TMP/mhd" "$HERE/minimal/mhd.c" -lmicrohttpd
cc -O2 -o "$TMP/evhttp" "$HERE/minimal/evhttp.c" -levent -lpthread
cc -O2 -o "$TMP/h2o" "$HERE/minimal/h2o.c" -lh2o-evloop -lssl -lcrypto -lz -lpthread

printf '%-150s' '{"model_name":"fraud","model_version":"1","outputs":[{"name":"probabilities","datatype":"FP32","shape":[1,2],"data":[0.0084542,0.9915458]}]}' >"$TMP/body.json"
cat >"$TMP/nginx.conf" <<NGX
worker_processes $NPROC;
pid $TMP/nginx.pid;
error_log $TMP/nginx-error.log;
daemon on;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:18510;
    # the body from memory (a file under the 0700 mktemp directory would be
    # unreadable to nginx's workers and measure a 403 page instead)
    location / { default_type application/json; return 200 '$(cat "$TMP/body.json")'; }
  }
}
NGX
nginx -c "$TMP/nginx.conf" -p "$TMP"
"$TMP/mhd" 18511 "$NPROC" & PIDS+=($!)
"$TMP/mhd" 18512 "$NPROC" per-conn & PIDS+=($!)
"$TMP/evhttp" 18513 "$NPROC" & PIDS+=($!)
"$TMP/h2o" 18514 "$NPROC" & PIDS+=($!)
NAMES=(nginx mhd-epoll-pool mhd-thread-per-conn evhttp h2o)
PORTS=(18510 18511 18512 18513 18514)
for p in "${PORTS[@]}"; do
    for _ in $(seq 50); do curl -sf "http://127.0.0.1:$p/x" -o /dev/null && break; sleep 0.1; done
    curl -sf "http://127.0.0.1:$p/x" -o /dev/null || { echo "server on $p not answering"; cat "$TMP/nginx-error.log" 2>/dev/null; exit 1; }
done

rps() { sed -nE 's/^Requests\/sec: +([0-9.]+).*/\1/p'; }
p50() { sed -nE "s/^ +50% +([0-9.]+)(us|ms|s).*/\1 \2/p" | awk '{v=$1; if($2=="ms")v*=1000; if($2=="s")v*=1e6; printf "%.0f", v}'; }
for r in $(seq "$ROUNDS"); do
    for i in "${!PORTS[@]}"; do
        url="http://127.0.0.1:${PORTS[$i]}/x"
        echo "${NAMES[$i]} c64 $(wrk -t2 -c64 -d"${SECS}s" "$url" | rps)" >>"$TMP/res.txt"
        echo "${NAMES[$i]} c1 $(wrk -t1 -c1 -d"${SECS}s" --latency "$url" | p50)" >>"$TMP/res.txt"
    done
done
median() { sort -n | awk '{a[NR]=$1} END{print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}'; }
N64=$(awk '$1=="nginx" && $2=="c64"{print $3}' "$TMP/res.txt" | median)
N1=$(awk '$1=="nginx" && $2=="c1"{print $3}' "$TMP/res.txt" | median)
echo "HTTP libraries vs nginx, $(date -u +%Y-%m-%dT%H:%MZ), $NPROC cores, $ROUNDS rounds x ${SECS}s, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| %-20s | %14s | %9s | %16s | %9s |\n' server "req/s, 64 conn" "/ nginx" "1-conn p50 (us)" "/ nginx"
printf '|%s|%s|%s|%s|%s|\n' ---------------------- ---------------- ----------- ------------------ -----------
for n in "${NAMES[@]}"; do
    a=$(awk -v n="$n" '$1==n && $2=="c64"{print $3}' "$TMP/res.txt" | median)
    b=$(awk -v n="$n" '$1==n && $2=="c1"{print $3}' "$TMP/res.txt" | median)
    printf '| %-20s | %14.0f | %9.2f | %16s | %9.2f |\n' "$n" "$a" "$(awk -v a="$a" -v b="$N64" 'BEGIN{print a/b}')" "$b" \
        "$(awk -v a="$b" -v b="$N1" 'BEGIN{print a/b}')"
done
