# serve_port.sh -- sourced by the serve tests and benchmarks: the port a
# server started with `infera serve --port 0 ... 2>LOG` picked.
#
#   PORT=$(serve_port LOG [TRIES])
#
# Waits up to TRIES x 0.1 s (default 100) for the "listening on
# http://127.0.0.1:PORT" line in LOG, prints PORT and returns 0; returns 1
# (printing nothing) if it never appears.
serve_port() {
    local log=$1 tries=${2:-100} port=
    for _ in $(seq "$tries"); do
        port=$(sed -nE 's/.*listening on http:\/\/127\.0\.0\.1:([0-9]+).*/\1/p' "$log")
        [ -n "$port" ] && { echo "$port"; return 0; }
        sleep 0.1
    done
    return 1
}
