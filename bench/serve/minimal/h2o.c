/*
 * h2o.c -- the smallest libh2o (evloop) server that answers every request
 * with the same fixed 150-byte JSON body as mhd.c: one event loop per
 * thread, each with its own SO_REUSEPORT listening socket.  Bench only
 * (bench/serve/run.sh installs libh2o-evloop-dev when it is missing).
 *
 *   h2o PORT THREADS
 */
#define H2O_USE_LIBUV 0
#include <h2o.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

static const char BODY[] =
    "{\"model_name\":\"fraud\",\"model_version\":\"1\",\"outputs\":[{\"name\":\"probabilities\",\"datatype\":\"FP32\","
    "\"shape\":[1,2],\"data\":[0.0084542,0.9915458]}]}      ";

static h2o_globalconf_t config;
static int port;

typedef struct loop {
    h2o_context_t ctx;
    h2o_accept_ctx_t accept;
} loop;

static int on_req(h2o_handler_t *self, h2o_req_t *req) {
    (void)self;
    static h2o_generator_t gen = {NULL, NULL};
    req->res.status = 200;
    req->res.reason = "OK";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("application/json"));
    req->res.content_length = sizeof BODY - 1;
    h2o_start_response(req, &gen);
    h2o_iovec_t body = h2o_iovec_init(BODY, sizeof BODY - 1);
    h2o_send(req, &body, 1, H2O_SEND_STATE_FINAL);
    return 0;
}

static void on_accept(h2o_socket_t *listener, const char *err) {
    if (err) return;
    h2o_socket_t *sock = h2o_evloop_socket_accept(listener);
    if (sock) h2o_accept(listener->data, sock);
}

static void *run(void *arg) {
    (void)arg;
    loop *l = calloc(1, sizeof *l);
    h2o_context_init(&l->ctx, h2o_evloop_create(), &config);
    l->accept.ctx = &l->ctx;
    l->accept.hosts = config.hosts;
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 1024)) {
        perror("h2o: listen");
        exit(1);
    }
    h2o_socket_t *sock = h2o_evloop_socket_create(l->ctx.loop, fd, H2O_SOCKET_FLAG_DONT_READ);
    sock->data = &l->accept;
    h2o_socket_read_start(sock, on_accept);
    while (h2o_evloop_run(l->ctx.loop, INT32_MAX) == 0)
        ;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: h2o PORT THREADS\n");
        return 2;
    }
    port = atoi(argv[1]);
    h2o_config_init(&config);
    h2o_hostconf_t *host = h2o_config_register_host(&config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_pathconf_t *path = h2o_config_register_path(host, "/", 0);
    h2o_handler_t *h = h2o_create_handler(path, sizeof *h);
    h->on_req = on_req;
    int n = atoi(argv[2]);
    pthread_t th[64];
    for (int i = 1; i < n && i < 64; i++) pthread_create(&th[i], NULL, run, NULL);
    run(NULL);
    return 0;
}
