# bench/serve/nginx_fast.sh -- sourced by run.sh and http_cpu.sh: nginx as the
# machine's HTTP reference, configured for speed as issue 25 asks (reuseport,
# multi_accept on, access_log off, one worker per core, no keep-alive limit),
# answering every request with a fixed 150-byte JSON body from memory (a file
# under a 0700 mktemp directory would be unreadable to nginx's workers and
# measure a 403 page instead).
#   start_nginx_fast DIR PORT [PIN_PREFIX...]: config, pid and logs in DIR.
start_nginx_fast() {
    local dir=$1 port=$2 body
    shift 2
    body=$(printf '%-150s' '{"model_name":"fraud","model_version":"1","outputs":[{"name":"probabilities","datatype":"FP32","shape":[1,2],"data":[0.0084542,0.9915458]}]}')
    cat >"$dir/nginx.conf" <<NGINX_CONF
worker_processes $(nproc);
pid $dir/nginx.pid;
error_log $dir/nginx-error.log;
daemon on;
events { worker_connections 4096; multi_accept on; }
http {
  access_log off;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$port reuseport;
    location / { default_type application/json; return 200 '$body'; }
  }
}
NGINX_CONF
    "$@" nginx -c "$dir/nginx.conf" -p "$dir"
}
