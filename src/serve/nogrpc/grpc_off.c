/*
 * grpc_off.c -- `infera serve` built without gRPC (no libgrpc for the target,
 * e.g. the aarch64 cross build's sysroot): --grpc-port is refused with that
 * reason, and there is nothing to stop or to report on /metrics.  CMake
 * compiles this file instead of grpc_*.c when libgrpc is not found.
 */
#include "serve/serve.h"

inf_status inf__serve_grpc_start(srv_server *srv, inf_error *err) {
    if (srv->opt.grpc_port <= 0) return INF_OK;
    return inf_error_set(err, INF_EUNSUPPORTED,
                         "--grpc-port %d: this infera was built without gRPC (libgrpc-dev was not found at build time)",
                         srv->opt.grpc_port);
}

void inf__serve_grpc_stop(srv_server *srv) { (void)srv; }

void inf__serve_grpc_metrics_render(srv_server *srv, srv_buf *out) { (void)srv, (void)out; }
