# bench_lib.sh -- sourced by the serve benchmarks (http_cpu.sh, grpc_bench.sh):
# the pieces they share.
#
#   free_port                 prints a free loopback TCP port
#   write_fraud_post_lua FILE wrk script: POST one single-row fraud request (KServe V2 JSON)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

write_fraud_post_lua() {
    cat >"$1" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"inputs":[{"name":"input","shape":[1,12],"datatype":"FP32","data":[0.5,1.25,3,0.1,2,7,0.3,1,0,12.5,3.3,0.9]}]}'
LUA
}
