/*
 * grpc_internal.h -- what the two files of the gRPC endpoint share
 * (grpc_server.c: transport, calls, inference and streams; grpc_methods.c:
 * health, metadata, ModelConfig and repository methods).  Private to them.
 */
#ifndef INF_SERVE_GRPC_INTERNAL_H
#define INF_SERVE_GRPC_INTERNAL_H

#include <grpc/byte_buffer.h>
#include <grpc/grpc.h>
#include <grpc/slice.h>
#include <grpc/support/time.h>

#include "kserve_v2.pb-c.h"
#include "serve/serve.h"

#define MAX_THREADS 16
#define N_CODES 17 /* grpc_status_code 0..16 */

typedef struct gcall gcall;
typedef void (*gtag_fn)(gcall *c, int ok);
typedef struct gtag {
    gtag_fn fn;
    gcall *call;
} gtag;

enum { OPEN_HEALTH = 1, PREDICT = 2, ADMIN = 3 };

typedef void (*unary_fn)(gcall *c, const uint8_t *msg, size_t n);
typedef struct method_def {
    const char *name;
    unary_fn fn;
    int access;
    int streaming;
} method_def;

struct srv_grpc {
    srv_server *srv;
    grpc_server *server;
    void *infer_method; /* ModelInfer, registered: its payload arrives with the call (one batch less) */
    /* one completion queue per thread: a call's steps complete on the queue
     * its request was posted to, so they stay on one thread (no hand-off
     * between pollers of a shared queue) */
    struct grpc_worker {
        struct srv_grpc *g;
        grpc_completion_queue *cq;
        pthread_t thread;
        int started;
    } workers[MAX_THREADS];
    int n_workers; /* queues created (and registered) */
    _Atomic int64_t in_flight;
    _Atomic int stopping;
    gtag shutdown_tag;
    _Atomic int shutdown_done;
    _Atomic uint64_t calls[16][N_CODES]; /* by method (methods[] index, last = unknown) and status code */
};

struct gcall {
    struct srv_grpc *g;
    grpc_completion_queue *cq; /* where its steps complete, and where its successor is posted */
    grpc_call *call;
    grpc_call_details details;
    grpc_metadata_array md;
    const method_def *method;
    int method_index;
    gtag t_new, t_recv, t_send, t_final;
    grpc_byte_buffer *recv;
    grpc_byte_buffer *send;
    grpc_slice status_details;
    int has_details;
    int cancelled;
    int counted; /* counts toward the endpoint's calls in flight (--grpc-max-in-flight) */
    int busy;    /* counts toward the server's requests in flight (the SIGTERM drain waits for them): a unary
                    call from start to end, a stream only while one of its messages is being answered, so an
                    idle open stream does not hold the drain */
    int refuse_code;       /* != 0: refused at its start (answered after its first message) */
    int sent_initial;      /* initial metadata sent (else finish sends it) */
    gpr_timespec deadline; /* registered calls */
    char refuse_msg[300];
    /* ModelInfer / stream message state */
    Inference__ModelInferRequest *msg;
    int raw_out;
    srv_infer_call ic; /* last: the large part, zeroed once by inf__serve_infer_call_init (not before, by calloc) */
};

/* Answers the call: an optional response message (bytes, malloc'd, taken)
 * and the status; c must not be touched afterwards. */
void inf__serve_grpc_finish(gcall *c, int code, const char *message, uint8_t *resp, size_t resp_n);
/* A protobuf-c message packed and sent with OK. */
void inf__serve_grpc_reply(gcall *c, const ProtobufCMessage *m);
/* The HTTP routes' access rule for the call's method: 0 to go on (c->ic.caller
 * set), -1 after answering the refusal.  admin_level 2: an admin only. */
int inf__serve_grpc_authorize(gcall *c, const char *model, int admin_level);
/* Unpacks a request message of descriptor d, or answers INVALID_ARGUMENT (NULL). */
ProtobufCMessage *inf__serve_grpc_unpack_msg(gcall *c, const ProtobufCMessageDescriptor *d, const uint8_t *msg,
                                             size_t n);

/* grpc_methods.c: the unary methods besides ModelInfer */
void inf__serve_grpc_server_live(gcall *c, const uint8_t *msg, size_t n);
void inf__serve_grpc_server_ready(gcall *c, const uint8_t *msg, size_t n);
void inf__serve_grpc_model_ready(gcall *c, const uint8_t *msg, size_t n);
void inf__serve_grpc_server_metadata(gcall *c, const uint8_t *msg, size_t n);
void inf__serve_grpc_model_metadata(gcall *c, const uint8_t *msg, size_t n);
void inf__serve_grpc_model_config(gcall *c, const uint8_t *msg, size_t n);
void inf__serve_grpc_repo_index(gcall *c, const uint8_t *msg, size_t n);
void inf__serve_grpc_repo_load(gcall *c, const uint8_t *msg, size_t n);
void inf__serve_grpc_repo_unload(gcall *c, const uint8_t *msg, size_t n);

#endif /* INF_SERVE_GRPC_INTERNAL_H */
