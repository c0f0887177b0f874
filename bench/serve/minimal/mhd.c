/*
 * mhd.c -- the smallest libmicrohttpd server that answers every request
 * (GET or POST, body read and dropped) with a fixed 150-byte JSON body.
 * bench/serve/run.sh measures it next to nginx and evhttp to show what the
 * HTTP library itself costs on this machine (issue #8: "measure a minimal
 * server of each candidate against nginx's static response").
 *
 *   mhd PORT THREADS [per-conn]   (per-conn: thread per connection instead
 *                                  of a pool of epoll threads)
 */
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char BODY[] =
    "{\"model_name\":\"fraud\",\"model_version\":\"1\",\"outputs\":[{\"name\":\"probabilities\",\"datatype\":\"FP32\","
    "\"shape\":[1,2],\"data\":[0.0084542,0.9915458]}]}      ";

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **state) {
    (void)cls, (void)url, (void)method, (void)version, (void)upload;
    if (!*state) { /* first call: headers only */
        *state = (void *)1;
        return MHD_YES;
    }
    if (*upload_size) { /* drop the body */
        *upload_size = 0;
        return MHD_YES;
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(sizeof BODY - 1, (void *)BODY, MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: mhd PORT THREADS [per-conn]\n");
        return 2;
    }
    int per_conn = argc > 3 && !strcmp(argv[3], "per-conn");
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_TURBO;
    flags |= per_conn ? MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL : MHD_USE_EPOLL;
    struct MHD_Daemon *d =
        per_conn ? MHD_start_daemon(flags, (uint16_t)atoi(argv[1]), NULL, NULL, on_request, NULL,
                                    MHD_OPTION_CONNECTION_LIMIT, 4000u, MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u,
                                    MHD_OPTION_END)
                 : MHD_start_daemon(flags, (uint16_t)atoi(argv[1]), NULL, NULL, on_request, NULL,
                                    MHD_OPTION_THREAD_POOL_SIZE, (unsigned)atoi(argv[2]), MHD_OPTION_CONNECTION_LIMIT,
                                    4000u, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384,
                                    MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "mhd: cannot listen on port %s\n", argv[1]);
        return 1;
    }
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGTERM);
    sigaddset(&s, SIGINT);
    sigprocmask(SIG_BLOCK, &s, NULL);
    int sig;
    sigwait(&s, &sig);
    MHD_stop_daemon(d);
    return 0;
}
