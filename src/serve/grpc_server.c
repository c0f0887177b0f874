/*
 * grpc_server.c -- KServe V2 over gRPC (`infera serve --grpc-port P`): the
 * inference.GRPCInferenceService of proto/kserve_v2.proto on Debian's gRPC
 * C core (grpc/grpc.h), messages by protobuf-c (grpc_codec.c).  This file
 * runs the calls, ModelInfer and ModelStreamInfer; the other unary methods
 * are in grpc_methods.c (shared declarations: grpc_internal.h).
 *
 * TRANSPORT.  One completion queue per thread (--http-threads, default one
 * per core), each thread looping on its queue's grpc_completion_queue_next.
 * Each queue keeps PENDING_CALLS requests for calls posted (of ModelInfer,
 * and of any method); a call's steps complete on the queue it arrived on,
 * which posts its successor there.  Every completion's tag is a gtag naming
 * the call and the step it finishes.
 * A call is a small state machine:
 *   new call  -> {SEND_INITIAL_METADATA, RECV_MESSAGE}
 *   message   -> the method's handler; it answers with inf__serve_grpc_finish
 *                now, or
 *                later from the batcher's scheduler thread (ModelInfer)
 *   finish    -> {SEND_MESSAGE?, SEND_STATUS_FROM_SERVER, RECV_CLOSE_ON_SERVER}
 *   closed    -> the call is freed.
 * ModelInfer, the hot path, is a registered method whose request message
 * gRPC reads before handing the call over (GRPC_SRM_PAYLOAD_READ_INITIAL_
 * BYTE_BUFFER): its first step is the handler, and finish sends the initial
 * metadata with the answer -- two batches per call instead of three.
 * ModelStreamInfer loops instead: message -> inference -> SEND_MESSAGE of a
 * ModelStreamInferResponse -> RECV_MESSAGE of the next; one message is in
 * the server at a time per stream, so responses leave in request order.  A
 * failed inference is a response with error_message (Triton's rule: the
 * stream goes on); the client's half-close ends the stream with OK.
 *
 * SHARED WITH HTTP.  Models, batchers, the inference path (infer_call.c),
 * input validation (infer_bind.c), auth (a bearer token in the
 * `authorization` metadata, the same roles per method as the HTTP routes),
 * the audit, metrics (per-model counters; calls by method and status code
 * under infera_grpc_*), and limits: --max-body-bytes bounds a message
 * (gRPC core refuses bigger ones with RESOURCE_EXHAUSTED before we see them),
 * --grpc-max-in-flight bounds the calls served at once, --request-timeout-ms
 * and the request parameter "timeout" bound the queue wait.  Errors carry
 * the HTTP endpoint's messages with the matching gRPC status code
 * (grpc_codec.c inf__serve_grpc_status_of).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/time.h>

#include "serve/grpc_internal.h"

#define PENDING_CALLS 32
static const char *const code_names[N_CODES] = {
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
    "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
    "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};

static void h_model_infer(gcall *c, const uint8_t *msg, size_t n);

static const method_def methods[] = {
    {"ServerLive", inf__serve_grpc_server_live, OPEN_HEALTH, 0},
    {"ServerReady", inf__serve_grpc_server_ready, OPEN_HEALTH, 0},
    {"ModelReady", inf__serve_grpc_model_ready, OPEN_HEALTH, 0},
    {"ServerMetadata", inf__serve_grpc_server_metadata, OPEN_HEALTH, 0},
    {"ModelMetadata", inf__serve_grpc_model_metadata, OPEN_HEALTH, 0},
    {"ModelInfer", h_model_infer, PREDICT, 0},
    {"ModelStreamInfer", NULL, PREDICT, 1},
    {"ModelConfig", inf__serve_grpc_model_config, OPEN_HEALTH, 0},
    {"RepositoryIndex", inf__serve_grpc_repo_index, ADMIN, 0},
    {"RepositoryModelLoad", inf__serve_grpc_repo_load, ADMIN, 0},
    {"RepositoryModelUnload", inf__serve_grpc_repo_unload, ADMIN, 0},
};
#define N_METHODS ((int)(sizeof methods / sizeof methods[0]))
#define SERVICE_PREFIX "/inference.GRPCInferenceService/"

/* ---- calls ------------------------------------------------------------------------ */

static void on_new(gcall *c, int ok);
static void on_recv(gcall *c, int ok);
static void on_stream_recv(gcall *c, int ok);
static void on_stream_sent(gcall *c, int ok);
static void on_final(gcall *c, int ok);

static void on_new_infer(gcall *c, int ok);

/* Posts a request for the next call on cq: a ModelInfer call (infer: the
 * registered method, GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, arriving
 * with its request message read) or any other method. */
static void post_call(struct srv_grpc *g, grpc_completion_queue *cq, int infer) {
    if (atomic_load(&g->stopping)) return;
    gcall *c = malloc(sizeof *c);
    if (!c) return; /* fewer calls posted: the next completed call posts again */
    memset(c, 0, offsetof(gcall, ic)); /* ic: by inf__serve_infer_call_init below */
    c->g = g;
    c->cq = cq;
    c->t_new = (gtag){infer ? on_new_infer : on_new, c};
    c->t_recv = (gtag){on_recv, c};
    c->t_send = (gtag){on_stream_sent, c};
    c->t_final = (gtag){on_final, c};
    grpc_call_details_init(&c->details);
    grpc_metadata_array_init(&c->md);
    inf__serve_infer_call_init(&c->ic, g->srv);
    grpc_call_error e = infer ? grpc_server_request_registered_call(g->server, g->infer_method, &c->call, &c->deadline,
                                                                    &c->md, &c->recv, cq, cq, &c->t_new)
                              : grpc_server_request_call(g->server, &c->call, &c->details, &c->md, cq, cq, &c->t_new);
    if (e != GRPC_CALL_OK) {
        grpc_call_details_destroy(&c->details);
        grpc_metadata_array_destroy(&c->md);
        free(c);
    }
}

static void set_busy(gcall *c, int busy) {
    if (c->busy == busy) return;
    c->busy = busy;
    atomic_fetch_add(&c->g->srv->in_flight, busy ? 1 : -1);
}

static void free_call(gcall *c) {
    inf__serve_infer_call_free(&c->ic);
    inf__serve_grpc_free_infer(c->msg);
    if (c->recv) grpc_byte_buffer_destroy(c->recv);
    if (c->send) grpc_byte_buffer_destroy(c->send);
    if (c->has_details) grpc_slice_unref(c->status_details);
    if (c->call) grpc_call_unref(c->call);
    grpc_call_details_destroy(&c->details);
    grpc_metadata_array_destroy(&c->md);
    if (c->counted) atomic_fetch_sub(&c->g->in_flight, 1);
    set_busy(c, 0);
    free(c);
}

static void on_final(gcall *c, int ok) {
    (void)ok;
    free_call(c);
}

/* Answers the call: an optional response message (bytes, malloc'd, taken)
 * and the status.  The last step of every unary call and of a stream. */
void inf__serve_grpc_finish(gcall *c, int code, const char *message, uint8_t *resp, size_t resp_n) {
    int mi = c->method ? c->method_index : N_METHODS;
    atomic_fetch_add_explicit(&c->g->calls[mi][code], 1, memory_order_relaxed);
    grpc_op ops[4];
    memset(ops, 0, sizeof ops);
    int n = 0;
    if (!c->sent_initial) ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
    if (resp && code == GRPC_STATUS_OK) {
        grpc_slice s = grpc_slice_new(resp, resp_n, free);
        c->send = grpc_raw_byte_buffer_create(&s, 1);
        grpc_slice_unref(s);
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n++].data.send_message.send_message = c->send;
    } else {
        free(resp);
    }
    c->status_details = grpc_slice_from_copied_string(message ? message : "");
    c->has_details = 1;
    ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[n].data.send_status_from_server.status = (grpc_status_code)code;
    ops[n++].data.send_status_from_server.status_details = &c->status_details;
    ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    ops[n++].data.recv_close_on_server.cancelled = &c->cancelled;
    if (grpc_call_start_batch(c->call, ops, (size_t)n, &c->t_final, NULL) != GRPC_CALL_OK) free_call(c);
}

/* A protobuf-c message packed into malloc'd bytes, then inf__serve_grpc_finish(OK). */
void inf__serve_grpc_reply(gcall *c, const ProtobufCMessage *m) {
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        inf__serve_grpc_finish(c, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory", NULL, 0);
        return;
    }
    protobuf_c_message_pack(m, buf);
    inf__serve_grpc_finish(c, GRPC_STATUS_OK, "", buf, n);
}

static const method_def *find_method(grpc_slice path, int *index) {
    size_t n = GRPC_SLICE_LENGTH(path), pre = strlen(SERVICE_PREFIX);
    const char *p = (const char *)GRPC_SLICE_START_PTR(path);
    if (n <= pre || memcmp(p, SERVICE_PREFIX, pre)) return NULL;
    for (int i = 0; i < N_METHODS; i++)
        if (strlen(methods[i].name) == n - pre && !memcmp(p + pre, methods[i].name, n - pre)) {
            *index = i;
            return &methods[i];
        }
    return NULL;
}

/* The bearer token of the call's `authorization` metadata (copied into
 * buf), or NULL. */
static const char *bearer(gcall *c, char *buf, size_t size) {
    for (size_t i = 0; i < c->md.count; i++) {
        const grpc_metadata *m = &c->md.metadata[i];
        if (grpc_slice_str_cmp(m->key, "authorization")) continue;
        size_t n = GRPC_SLICE_LENGTH(m->value);
        const char *v = (const char *)GRPC_SLICE_START_PTR(m->value);
        if (n < 7 || strncasecmp(v, "Bearer ", 7) || n - 7 >= size) return NULL;
        memcpy(buf, v + 7, n - 7);
        buf[n - 7] = 0;
        return buf;
    }
    return NULL;
}

/* The HTTP routes' access rule for the method (routes.c): INF_OK when the
 * call may go on (c->ic.caller set), else the refusal (EAUTH, EDENIED, or
 * another status when the registry cannot answer) with its message in e. */
static inf_status check_access(gcall *c, const char *model, int admin_level, inf_error *e) {
    srv_server *srv = c->g->srv;
    int acc = c->method->access;
    int need = acc == PREDICT || acc == ADMIN || (acc == OPEN_HEALTH && srv->opt.auth_health);
    if (!admin_level && acc == ADMIN) admin_level = 1;
    if ((!need && !admin_level) || !inf__serve_models_auth_enabled(srv->models)) return INF_OK;
    char tok[512];
    char reg[160];
    const char *regp = NULL;
    if (model && model[0]) {
        inf__serve_models_registry_name(srv->models, model, reg, sizeof reg);
        regp = reg;
    }
    inf_error ae = {0};
    inf_status st = inf__serve_models_authorize(srv->models, bearer(c, tok, sizeof tok), regp, admin_level,
                                                &c->ic.caller, &ae);
    if (st != INF_OK) inf_error_set(e, st, "%s: %s", c->method->name, ae.message);
    return st;
}

static int access_code(inf_status st) {
    return st == INF_EAUTH ? GRPC_STATUS_UNAUTHENTICATED : st == INF_EDENIED ? GRPC_STATUS_PERMISSION_DENIED
                                                                              : GRPC_STATUS_UNAVAILABLE;
}

/* check_access, answering a refusal (the call is then finished: the caller
 * must not touch c any more, only free its own things). */
int inf__serve_grpc_authorize(gcall *c, const char *model, int admin_level) {
    inf_error e = {0};
    inf_status st = check_access(c, model, admin_level, &e);
    if (st == INF_OK) return 0;
    inf__serve_grpc_finish(c, access_code(st), e.message, NULL, 0);
    return -1;
}

/* The whole message of a received byte buffer (one contiguous slice). */
static grpc_slice read_all(grpc_byte_buffer *bb) {
    grpc_byte_buffer_reader r;
    if (!grpc_byte_buffer_reader_init(&r, bb)) return grpc_empty_slice();
    grpc_slice s = grpc_byte_buffer_reader_readall(&r);
    grpc_byte_buffer_reader_destroy(&r);
    return s;
}

/* 1 (and c's refusal set) when a new call cannot be served now: the server
 * is draining, or in_flight calls (this one included) exceed the limit. */
static int refuse_busy(gcall *c, int64_t in_flight) {
    srv_server *srv = c->g->srv;
    if (atomic_load(&srv->draining)) {
        c->refuse_code = GRPC_STATUS_UNAVAILABLE;
        snprintf(c->refuse_msg, sizeof c->refuse_msg, "the server is shutting down");
    } else if (in_flight > srv->opt.grpc_max_in_flight) {
        c->refuse_code = GRPC_STATUS_RESOURCE_EXHAUSTED;
        snprintf(c->refuse_msg, sizeof c->refuse_msg,
                 "too many gRPC calls in flight (limit %d, --grpc-max-in-flight); retry later",
                 srv->opt.grpc_max_in_flight);
    }
    return c->refuse_code != 0;
}

static void on_new(gcall *c, int ok) {
    struct srv_grpc *g = c->g;
    if (!ok) { /* the server is shutting down */
        free_call(c);
        return;
    }
    post_call(g, c->cq, 0);
    c->counted = 1;
    int64_t now = atomic_fetch_add(&g->in_flight, 1) + 1;
    c->method = find_method(c->details.method, &c->method_index);
    if (!c->method || !c->method->streaming) set_busy(c, 1);
    /* a refused call still reads its first message before the status: a
     * status sent on a call whose message was never read does not reach
     * the client */
    if (!c->method) {
        int n = (int)GRPC_SLICE_LENGTH(c->details.method);
        c->refuse_code = GRPC_STATUS_UNIMPLEMENTED;
        snprintf(c->refuse_msg, sizeof c->refuse_msg,
                 "no method %.*s on this server (inference.GRPCInferenceService: see 'infera help serve')",
                 n > 200 ? 200 : n, (const char *)GRPC_SLICE_START_PTR(c->details.method));
    } else if (!refuse_busy(c, now) && c->method->streaming) {
        c->t_recv.fn = on_stream_recv;
    }
    grpc_op ops[2];
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_RECV_MESSAGE;
    ops[1].data.recv_message.recv_message = &c->recv;
    c->sent_initial = 1;
    if (grpc_call_start_batch(c->call, ops, 2, &c->t_recv, NULL) != GRPC_CALL_OK)
        inf__serve_grpc_finish(c, GRPC_STATUS_INTERNAL, "cannot start the call", NULL, 0);
}

static void on_new_infer(gcall *c, int ok) {
    struct srv_grpc *g = c->g;
    if (!ok) {
        free_call(c);
        return;
    }
    post_call(g, c->cq, 1);
    c->counted = 1;
    set_busy(c, 1);
    int64_t now = atomic_fetch_add(&g->in_flight, 1) + 1;
    for (int i = 0; i < N_METHODS; i++)
        if (methods[i].fn == h_model_infer) c->method = &methods[i], c->method_index = i;
    refuse_busy(c, now);
    on_recv(c, 1);
}

/* A call refused at its start (on_new), answered once its message was read. */
static int refused(gcall *c) {
    if (!c->refuse_code) return 0;
    inf__serve_grpc_finish(c, c->refuse_code, c->refuse_msg, NULL, 0);
    return 1;
}

static void on_recv(gcall *c, int ok) {
    if (refused(c)) return;
    if (!ok || !c->recv) {
        inf__serve_grpc_finish(c, GRPC_STATUS_INVALID_ARGUMENT, "the call ended before its request message", NULL, 0);
        return;
    }
    grpc_slice s = read_all(c->recv);
    grpc_byte_buffer_destroy(c->recv);
    c->recv = NULL;
    c->method->fn(c, GRPC_SLICE_START_PTR(s), GRPC_SLICE_LENGTH(s));
    grpc_slice_unref(s);
}

/* ---- inference (ModelInfer and each stream message) ------------------------------ */

static void stream_answer(gcall *c, int code, const char *message, uint8_t *resp, size_t n);

/* The outcome of one inference: the serialized ModelInferResponse (taken)
 * or a failure (code, message), as the call's reply or the stream's next message. */
static void answer(gcall *c, int code, const char *message, uint8_t *resp, size_t n) {
    if (c->method->streaming) stream_answer(c, code, message, resp, n);
    else inf__serve_grpc_finish(c, code, message, resp, n);
}

/* Encodes the finished run's outputs and answers. */
static void infer_complete(gcall *c) {
    srv_infer_call *ic = &c->ic;
    inf_error e = {0};
    uint8_t *out = NULL;
    size_t n = 0;
    inf_status st = inf__serve_infer_call_result(ic, &e);
    if (st == INF_OK) {
        srv_version *v = ic->version;
        st = inf__serve_grpc_encode_infer(&ic->infer, v->model, v->name, v->version, ic->job_outputs, c->raw_out, &out,
                                          &n, &e);
        if (st != INF_OK) inf__serve_infer_call_count_failure(ic, SRV_FAIL_OTHER);
        else inf__serve_infer_call_succeeded(ic);
    }
    inf__serve_infer_call_release(ic);
    inf__serve_grpc_free_infer(c->msg);
    c->msg = NULL;
    if (st != INF_OK) answer(c, inf__serve_grpc_status_of(st), e.message, NULL, 0);
    else answer(c, GRPC_STATUS_OK, "", out, n);
}

static void infer_queued_done(srv_infer_call *ic) { infer_complete(ic->user); }

static void infer_refuse(gcall *c, inf_status st, const char *message) {
    inf__serve_infer_call_release(&c->ic);
    inf__serve_grpc_free_infer(c->msg);
    c->msg = NULL;
    answer(c, inf__serve_grpc_status_of(st), message, NULL, 0);
}

/* The time left before the client's deadline (grpc-timeout), in us, as the
 * request's queue timeout when it gives none of its own ("timeout"
 * parameter); 0 when the call has no deadline. */
static int64_t deadline_us(gcall *c) {
    gpr_timespec d = c->method && c->method->fn == h_model_infer && c->deadline.tv_sec ? c->deadline
                                                                                      : c->details.deadline;
    if (!d.tv_sec || gpr_time_cmp(d, gpr_inf_future(d.clock_type)) == 0) return 0;
    gpr_timespec left = gpr_time_sub(gpr_convert_clock_type(d, GPR_CLOCK_MONOTONIC), gpr_now(GPR_CLOCK_MONOTONIC));
    int64_t us = (int64_t)left.tv_sec * 1000000 + left.tv_nsec / 1000;
    return us > 0 ? us : 1;
}

static void start_infer(gcall *c, const uint8_t *buf, size_t n) {
    srv_infer_call *ic = &c->ic;
    inf_error e = {0};
    ic->t_start_ns = inf__serve_now_ns();
    ic->done = infer_queued_done;
    ic->user = c;
    if (inf__serve_grpc_unpack_infer(buf, n, &c->msg, &e) != INF_OK) {
        infer_refuse(c, e.status, e.message);
        return;
    }
    inf_status ast = check_access(c, c->msg->model_name, 0, &e);
    if (ast != INF_OK) { /* the whole call ends, a stream too: its one token is refused */
        inf__serve_grpc_free_infer(c->msg);
        c->msg = NULL;
        inf__serve_grpc_finish(c, access_code(ast), e.message, NULL, 0);
        return;
    }
    if (!c->msg->model_name[0]) {
        infer_refuse(c, INF_EINVAL, "model_name is empty");
        return;
    }
    inf_status st = inf__serve_infer_call_acquire(ic, c->msg->model_name, c->msg->model_version, &e);
    if (st != INF_OK) {
        infer_refuse(c, st, e.message);
        return;
    }
    st = inf__serve_grpc_decode_infer(c->msg, ic->version->model, &ic->infer, &c->raw_out, &e);
    if (st != INF_OK) {
        inf__serve_infer_call_count_failure(ic, SRV_FAIL_BAD_REQUEST);
        infer_refuse(c, st, e.message);
        return;
    }
    if (!ic->infer.timeout_us && !c->method->streaming) ic->infer.timeout_us = deadline_us(c);
    int r = inf__serve_infer_call_run(ic, &e);
    if (r < 0) infer_refuse(c, e.status, e.message);
    else if (r == 0) infer_complete(c);
    /* r == 1: infer_queued_done answers from the scheduler thread */
}

static void h_model_infer(gcall *c, const uint8_t *msg, size_t n) { start_infer(c, msg, n); }

/* ---- ModelStreamInfer -------------------------------------------------------------- */

static size_t put_varint(uint8_t *p, uint64_t v) {
    size_t k = 0;
    while (v >= 0x80) p[k++] = (uint8_t)(v | 0x80), v >>= 7;
    p[k++] = (uint8_t)v;
    return k;
}

/* A ModelStreamInferResponse around resp (field 2) or the error (field 1),
 * framed by hand: the inner message is already serialized. */
static uint8_t *stream_message(const char *error, const uint8_t *resp, size_t n, size_t *out_n) {
    size_t len = error ? strlen(error) : n;
    uint8_t *b = malloc(len + 11);
    if (!b) return NULL;
    b[0] = error ? 0x0a : 0x12;
    size_t k = 1 + put_varint(b + 1, len);
    if (len) memcpy(b + k, error ? (const uint8_t *)error : resp, len);
    *out_n = k + len;
    return b;
}

static void stream_recv_next(gcall *c) {
    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_MESSAGE;
    op.data.recv_message.recv_message = &c->recv;
    if (grpc_call_start_batch(c->call, &op, 1, &c->t_recv, NULL) != GRPC_CALL_OK)
        inf__serve_grpc_finish(c, GRPC_STATUS_INTERNAL, "cannot read the stream", NULL, 0);
}

static void stream_answer(gcall *c, int code, const char *message, uint8_t *resp, size_t n) {
    size_t len = 0;
    uint8_t *b = stream_message(code == GRPC_STATUS_OK ? NULL : message, resp, n, &len);
    free(resp);
    if (!b) {
        inf__serve_grpc_finish(c, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory", NULL, 0);
        return;
    }
    int mi = c->method_index;
    atomic_fetch_add_explicit(&c->g->calls[mi][code], 1, memory_order_relaxed);
    set_busy(c, 0);
    grpc_slice s = grpc_slice_new(b, len, free);
    if (c->send) grpc_byte_buffer_destroy(c->send);
    c->send = grpc_raw_byte_buffer_create(&s, 1);
    grpc_slice_unref(s);
    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_SEND_MESSAGE;
    op.data.send_message.send_message = c->send;
    if (grpc_call_start_batch(c->call, &op, 1, &c->t_send, NULL) != GRPC_CALL_OK)
        inf__serve_grpc_finish(c, GRPC_STATUS_INTERNAL, "cannot write the stream", NULL, 0);
}

static void on_stream_sent(gcall *c, int ok) {
    if (c->send) grpc_byte_buffer_destroy(c->send);
    c->send = NULL;
    if (!ok) { /* the client went away */
        inf__serve_grpc_finish(c, GRPC_STATUS_CANCELLED, "the stream was closed", NULL, 0);
        return;
    }
    stream_recv_next(c);
}

static void on_stream_recv(gcall *c, int ok) {
    if (refused(c)) return;
    if (!ok || !c->recv) { /* half-close: every message has been answered */
        inf__serve_grpc_finish(c, GRPC_STATUS_OK, "", NULL, 0);
        return;
    }
    grpc_slice s = read_all(c->recv);
    grpc_byte_buffer_destroy(c->recv);
    c->recv = NULL;
    set_busy(c, 1);
    start_infer(c, GRPC_SLICE_START_PTR(s), GRPC_SLICE_LENGTH(s));
    grpc_slice_unref(s);
}

/* ---- server ---------------------------------------------------------------------------- */

static void on_shutdown(gcall *c, int ok) {
    (void)c, (void)ok;
}

static void *cq_loop(void *arg) {
    struct grpc_worker *w = arg;
    struct srv_grpc *g = w->g;
    for (;;) {
        grpc_event ev = grpc_completion_queue_next(w->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN) break;
        if (ev.type != GRPC_OP_COMPLETE) continue;
        gtag *t = ev.tag;
        if (t == &g->shutdown_tag) {
            atomic_store(&g->shutdown_done, 1);
            continue;
        }
        t->fn(t->call, ev.success);
    }
    return NULL;
}

/* Shuts the queues down, joins their threads and frees g (the server destroyed). */
static void free_workers(struct srv_grpc *g) {
    for (int i = 0; i < g->n_workers; i++) grpc_completion_queue_shutdown(g->workers[i].cq);
    for (int i = 0; i < g->n_workers; i++) {
        struct grpc_worker *w = &g->workers[i];
        if (w->started) pthread_join(w->thread, NULL);
        else
            while (grpc_completion_queue_next(w->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
                   GRPC_QUEUE_SHUTDOWN)
                continue;
        grpc_completion_queue_destroy(w->cq);
    }
    grpc_shutdown();
    free(g);
}

inf_status inf__serve_grpc_start(srv_server *srv, inf_error *err) {
    if (srv->opt.grpc_port <= 0) return INF_OK;
    struct srv_grpc *g = calloc(1, sizeof *g);
    if (!g) return inf_error_set(err, INF_ENOMEM, "gRPC endpoint: out of memory");
    g->srv = srv;
    g->shutdown_tag = (gtag){on_shutdown, NULL};
    grpc_init();
    int max_msg = srv->opt.max_body_bytes > INT32_MAX ? INT32_MAX : (int)srv->opt.max_body_bytes;
    grpc_arg args[4];
    args[0].type = GRPC_ARG_INTEGER, args[0].key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
    args[0].value.integer = max_msg;
    args[1].type = GRPC_ARG_INTEGER, args[1].key = (char *)GRPC_ARG_MAX_SEND_MESSAGE_LENGTH,
    args[1].value.integer = -1;
    args[2].type = GRPC_ARG_INTEGER, args[2].key = (char *)GRPC_ARG_ALLOW_REUSEPORT, args[2].value.integer = 0;
    /* no channelz: its per-call counters are introspection this server does not offer */
    args[3].type = GRPC_ARG_INTEGER, args[3].key = (char *)GRPC_ARG_ENABLE_CHANNELZ, args[3].value.integer = 0;
    grpc_channel_args chargs = {4, args};
    g->server = grpc_server_create(&chargs, NULL);
    int threads = srv->opt.http_threads > 0 ? srv->opt.http_threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (threads < 1) threads = 1;
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    for (; g->n_workers < threads; g->n_workers++) {
        struct grpc_worker *w = &g->workers[g->n_workers];
        w->g = g;
        w->cq = grpc_completion_queue_create_for_next(NULL);
        grpc_server_register_completion_queue(g->server, w->cq, NULL);
    }
    char addr[320];
    int v6 = strchr(srv->opt.host, ':') != NULL;
    snprintf(addr, sizeof addr, "%s%s%s:%d", v6 ? "[" : "", srv->opt.host, v6 ? "]" : "", srv->opt.grpc_port);
    grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
    int port = grpc_server_add_http2_port(g->server, addr, creds);
    grpc_server_credentials_release(creds);
    if (port <= 0) {
        grpc_server_destroy(g->server);
        free_workers(g);
        return inf_error_set(err, INF_EIO, "gRPC endpoint: cannot listen on %s (address in use, or not a local "
                                           "address?)", addr);
    }
    srv->opt.grpc_port = port;
    g->infer_method = grpc_server_register_method(g->server, SERVICE_PREFIX "ModelInfer", NULL,
                                                  GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
    grpc_server_start(g->server);
    int started = 0;
    for (int q = 0; q < g->n_workers; q++) {
        struct grpc_worker *w = &g->workers[q];
        for (int i = 0; i < PENDING_CALLS; i++) post_call(g, w->cq, 0);
        for (int i = 0; g->infer_method && i < PENDING_CALLS; i++) post_call(g, w->cq, 1);
        w->started = pthread_create(&w->thread, NULL, cq_loop, w) == 0;
        started += w->started;
    }
    srv->grpc = g;
    if (started < g->n_workers) { /* a queue without its thread would hold its calls forever */
        inf__serve_grpc_stop(srv);
        return inf_error_set(err, INF_EIO, "gRPC endpoint: cannot start its threads");
    }
    return INF_OK;
}

void inf__serve_grpc_stop(srv_server *srv) {
    struct srv_grpc *g = srv->grpc;
    if (!g) return;
    atomic_store(&g->stopping, 1);
    int polled = g->n_workers > 0 && g->workers[0].started;
    grpc_server_shutdown_and_notify(g->server, g->workers[0].cq, &g->shutdown_tag);
    /* calls in flight finish (main.c drained them); streams still open are cut */
    uint64_t deadline = inf__serve_now_ns() + 2000000000ull;
    while (polled && !atomic_load(&g->shutdown_done) && inf__serve_now_ns() < deadline) usleep(2000);
    if (!atomic_load(&g->shutdown_done)) grpc_server_cancel_all_calls(g->server);
    while (polled && !atomic_load(&g->shutdown_done)) usleep(2000);
    grpc_server_destroy(g->server);
    srv->grpc = NULL;
    free_workers(g);
}

void inf__serve_grpc_metrics_render(srv_server *srv, srv_buf *out) {
    struct srv_grpc *g = srv->grpc;
    if (!g) return;
    inf__serve_buf_puts(out, "# HELP infera_grpc_calls_total gRPC calls (stream messages for ModelStreamInfer) by "
                             "method and status code.\n# TYPE infera_grpc_calls_total counter\n");
    for (int m = 0; m <= N_METHODS; m++)
        for (int k = 0; k < N_CODES; k++) {
            uint64_t v = atomic_load_explicit(&g->calls[m][k], memory_order_relaxed);
            if (!v) continue;
            inf__serve_buf_printf(out, "infera_grpc_calls_total{protocol=\"grpc\",method=\"%s\",code=\"%s\"} %llu\n",
                                  m < N_METHODS ? methods[m].name : "unknown", code_names[k], (unsigned long long)v);
        }
    inf__serve_buf_printf(out, "# HELP infera_grpc_calls_in_flight gRPC calls being served.\n"
                               "# TYPE infera_grpc_calls_in_flight gauge\ninfera_grpc_calls_in_flight %lld\n",
                          (long long)atomic_load(&g->in_flight));
}
