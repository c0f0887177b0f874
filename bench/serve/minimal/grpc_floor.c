/*
 * grpc_floor.c -- the floor of a gRPC C-core unary server: the same
 * transport set-up as `infera serve --grpc-port` (src/serve/grpc_server.c)
 * with no work at all, to tell gRPC core's cost per call from Infera's.
 *
 *   grpc_floor PORT [THREADS]
 *
 * ModelInfer is a registered method whose request message gRPC reads before
 * handing the call over (GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER), one
 * completion queue and thread per THREADS (default 1), 32 calls posted per
 * queue; a call is answered at once with one batch {SEND_INITIAL_METADATA,
 * SEND_MESSAGE, SEND_STATUS_FROM_SERVER OK, RECV_CLOSE_ON_SERVER} carrying a
 * fixed 78-byte ModelInferResponse-sized message (the size of Infera's
 * answer to a one-row fraud request), then freed and re-posted.  The
 * request is neither decoded nor looked at: what is left is gRPC core's own
 * cost (HTTP/2 framing, HPACK, the call and batch machinery, the completion
 * queue, polling) plus this loop.  Driven by bench/serve/grpc_load.c exactly
 * as the real server is (bench/serve/grpc_floor.sh).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/time.h>

#define PENDING 32
#define ANSWER_BYTES 78

typedef struct fcall {
    grpc_completion_queue *cq;
    grpc_call *call;
    gpr_timespec deadline;
    grpc_metadata_array md;
    grpc_byte_buffer *recv, *send;
    grpc_slice details;
    int cancelled, stage; /* 0: posted, 1: answering */
} fcall;

static grpc_server *server;
static void *method;
static uint8_t answer[ANSWER_BYTES];

static void post(grpc_completion_queue *cq) {
    fcall *c = calloc(1, sizeof *c);
    if (!c) return;
    c->cq = cq;
    grpc_metadata_array_init(&c->md);
    if (grpc_server_request_registered_call(server, method, &c->call, &c->deadline, &c->md, &c->recv, cq, cq, c) !=
        GRPC_CALL_OK) {
        grpc_metadata_array_destroy(&c->md);
        free(c);
    }
}

static void done(fcall *c) {
    if (c->recv) grpc_byte_buffer_destroy(c->recv);
    if (c->send) grpc_byte_buffer_destroy(c->send);
    if (c->call) grpc_call_unref(c->call);
    grpc_metadata_array_destroy(&c->md);
    free(c);
}

static void on_event(fcall *c, int ok) {
    if (c->stage == 1 || !ok) {
        done(c);
        return;
    }
    post(c->cq);
    c->stage = 1;
    grpc_slice s = grpc_slice_from_static_buffer(answer, sizeof answer);
    c->send = grpc_raw_byte_buffer_create(&s, 1);
    c->details = grpc_empty_slice();
    grpc_op ops[4];
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = c->send;
    ops[2].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[2].data.send_status_from_server.status = GRPC_STATUS_OK;
    ops[2].data.send_status_from_server.status_details = &c->details;
    ops[3].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    ops[3].data.recv_close_on_server.cancelled = &c->cancelled;
    if (grpc_call_start_batch(c->call, ops, 4, c, NULL) != GRPC_CALL_OK) done(c);
}

static void *loop(void *arg) {
    grpc_completion_queue *cq = arg;
    for (;;) {
        grpc_event ev = grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN) break;
        if (ev.type == GRPC_OP_COMPLETE) on_event(ev.tag, ev.success);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: grpc_floor PORT [THREADS]\n");
        return 2;
    }
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    if (threads < 1 || threads > 64) threads = 1;
    for (int i = 0; i < ANSWER_BYTES; i++)
        answer[i] = (uint8_t)i;
    grpc_init();
    grpc_arg args[2];
    args[0].type = GRPC_ARG_INTEGER, args[0].key = (char *)GRPC_ARG_ALLOW_REUSEPORT, args[0].value.integer = 0;
    args[1].type = GRPC_ARG_INTEGER, args[1].key = (char *)GRPC_ARG_ENABLE_CHANNELZ, args[1].value.integer = 0;
    grpc_channel_args chargs = {2, args};
    server = grpc_server_create(&chargs, NULL);
    grpc_completion_queue *cqs[64];
    for (int i = 0; i < threads; i++) {
        cqs[i] = grpc_completion_queue_create_for_next(NULL);
        grpc_server_register_completion_queue(server, cqs[i], NULL);
    }
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%s", argv[1]);
    grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
    int port = grpc_server_add_http2_port(server, addr, creds);
    grpc_server_credentials_release(creds);
    if (port <= 0) {
        fprintf(stderr, "grpc_floor: cannot listen on %s\n", addr);
        return 1;
    }
    method = grpc_server_register_method(server, "/inference.GRPCInferenceService/ModelInfer", NULL,
                                         GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
    grpc_server_start(server);
    fprintf(stderr, "grpc_floor: listening on %s, %d thread(s)\n", addr, threads);
    pthread_t th[64];
    for (int i = 0; i < threads; i++) {
        for (int k = 0; k < PENDING; k++)
            post(cqs[i]);
        pthread_create(&th[i], NULL, loop, cqs[i]);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL); /* until killed */
    return 0;
}
