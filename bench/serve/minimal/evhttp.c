/*
 * evhttp.c -- the smallest libevent (evhttp) server that answers every
 * request with the same fixed 150-byte JSON body as mhd.c, one event base
 * per thread accepting on one shared listening socket.  Bench only
 * (bench/serve/run.sh installs libevent-dev when it is missing).
 *
 *   evhttp PORT THREADS
 */
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char BODY[] =
    "{\"model_name\":\"fraud\",\"model_version\":\"1\",\"outputs\":[{\"name\":\"probabilities\",\"datatype\":\"FP32\","
    "\"shape\":[1,2],\"data\":[0.0084542,0.9915458]}]}      ";

static void on_request(struct evhttp_request *req, void *arg) {
    (void)arg;
    struct evbuffer *out = evhttp_request_get_output_buffer(req);
    evbuffer_add_reference(out, BODY, sizeof BODY - 1, NULL, NULL);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
    evhttp_send_reply(req, 200, "OK", NULL);
}

static void *loop(void *arg) {
    int fd = *(int *)arg;
    struct event_base *base = event_base_new();
    struct evhttp *http = base ? evhttp_new(base) : NULL;
    if (!http || evhttp_accept_socket(http, fd)) {
        fprintf(stderr, "evhttp: cannot start an event loop\n");
        exit(1);
    }
    evhttp_set_gencb(http, on_request, NULL);
    event_base_dispatch(base);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: evhttp PORT THREADS\n");
        return 2;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 1024)) {
        perror("evhttp: listen");
        return 1;
    }
    int n = atoi(argv[2]);
    pthread_t th[64];
    for (int i = 1; i < n && i < 64; i++) pthread_create(&th[i], NULL, loop, &fd);
    loop(&fd);
    return 0;
}
