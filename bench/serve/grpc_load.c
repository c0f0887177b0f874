/*
 * grpc_load.c -- closed-loop load generator for `infera serve --grpc-port`
 * on Debian's gRPC C core (no gRPC load tool is packaged in Debian: ghz is
 * Go and not in the archive; see bench/RESULTS.md).
 *
 *   grpc_load HOST:PORT MODEL SECONDS CONCURRENCY unary|stream [raw] [CHANNELS]
 *
 * Sends one-row fraud requests (the 12 features of bench/serve/run.sh's
 * FRAUD_BODY) as inference.ModelInferRequest: typed fp32_contents, or
 * raw_input_contents with "raw".  unary: CONCURRENCY ModelInfer calls in
 * flight at all times, a new call as soon as one ends.  stream:
 * CONCURRENCY ModelStreamInfer streams, each with one request in flight
 * (send, receive the answer, send the next).  CHANNELS HTTP/2 connections
 * (default 1; the calls are spread over them round robin), one
 * completion-queue thread.  Every answer is checked (OK
 * status, or a stream response without error_message); prints one line:
 *   requests=N seconds=S rps=R errors=E client_cpu_pct=C total=T
 * (N, S, R after a 0.5 s warm-up; T every answered request)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/time.h>

#include "kserve_v2.pb-c.h"

typedef struct slot {
    grpc_call *call;
    grpc_metadata_array md_in, trailers;
    grpc_byte_buffer *recv;
    grpc_status_code status;
    grpc_slice details;
    int started; /* stream: the call is open */
} slot;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static uint8_t *request_bytes(const char *model, int raw, size_t *n) {
    static float x[12] = {0.5f, 1.25f, 3, 0.1f, 2, 7, 0.3f, 1, 0, 12.5f, 3.3f, 0.9f};
    static int64_t shape[2] = {1, 12};
    Inference__InferTensorContents c = INFERENCE__INFER_TENSOR_CONTENTS__INIT;
    Inference__ModelInferRequest__InferInputTensor in = INFERENCE__MODEL_INFER_REQUEST__INFER_INPUT_TENSOR__INIT;
    in.name = (char *)"input";
    in.datatype = (char *)"FP32";
    in.n_shape = 2;
    in.shape = shape;
    Inference__ModelInferRequest__InferInputTensor *ins[1] = {&in};
    Inference__ModelInferRequest r = INFERENCE__MODEL_INFER_REQUEST__INIT;
    r.model_name = (char *)model;
    r.n_inputs = 1;
    r.inputs = ins;
    ProtobufCBinaryData blob = {sizeof x, (uint8_t *)x};
    if (raw) {
        r.n_raw_input_contents = 1;
        r.raw_input_contents = &blob;
    } else {
        c.n_fp32_contents = 12;
        c.fp32_contents = x;
        in.contents = &c;
    }
    *n = inference__model_infer_request__get_packed_size(&r);
    uint8_t *b = malloc(*n);
    inference__model_infer_request__pack(&r, b);
    return b;
}

/* Sends s its next request: unary, a new call carrying the whole exchange
 * (metadata, message, half-close; answer and status); stream, the message
 * and the receive of its answer on the open call (opened, with the
 * metadata, on the first).  0, or -1 when the batch cannot start. */
static int send_next(slot *s, int stream, grpc_channel *ch, grpc_completion_queue *cq, grpc_slice method,
                     grpc_slice *req) {
    int opening = !stream || !s->started;
    if (opening)
        s->call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq, method, NULL,
                                           gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    s->started = 1;
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(req, 1);
    grpc_op ops[6];
    memset(ops, 0, sizeof ops);
    int n = 0;
    if (opening) ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[n].op = GRPC_OP_SEND_MESSAGE;
    ops[n++].data.send_message.send_message = bb;
    if (!stream) ops[n++].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    if (opening) {
        ops[n].op = GRPC_OP_RECV_INITIAL_METADATA;
        ops[n++].data.recv_initial_metadata.recv_initial_metadata = &s->md_in;
    }
    ops[n].op = GRPC_OP_RECV_MESSAGE;
    ops[n++].data.recv_message.recv_message = &s->recv;
    if (!stream) {
        ops[n].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
        ops[n].data.recv_status_on_client.trailing_metadata = &s->trailers;
        ops[n].data.recv_status_on_client.status = &s->status;
        ops[n++].data.recv_status_on_client.status_details = &s->details;
    }
    int rc = grpc_call_start_batch(s->call, ops, (size_t)n, s, NULL) == GRPC_CALL_OK ? 0 : -1;
    grpc_byte_buffer_destroy(bb);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: grpc_load HOST:PORT MODEL SECONDS CONCURRENCY unary|stream [raw]\n");
        return 2;
    }
    const char *target = argv[1], *model = argv[2];
    double secs = atof(argv[3]);
    int conc = atoi(argv[4]);
    int stream = !strcmp(argv[5], "stream");
    int raw = argc > 6 && !strcmp(argv[6], "raw");
    int n_ch = argc > 7 ? atoi(argv[7]) : 1;
    if (n_ch < 1 || n_ch > 256) return 2;
    if (conc < 1 || conc > 4096 || secs <= 0) return 2;
    grpc_init();
    grpc_channel_credentials *creds = grpc_insecure_credentials_create();
    grpc_channel *chs[256];
    for (int i = 0; i < n_ch; i++) { /* a local subchannel pool each: its own TCP connection */
        grpc_arg a = {GRPC_ARG_INTEGER, (char *)GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, {.integer = 1}};
        grpc_channel_args args = {1, &a};
        chs[i] = grpc_channel_create(target, creds, &args);
    }
    grpc_channel_credentials_release(creds);
    grpc_completion_queue *cq = grpc_completion_queue_create_for_next(NULL);
    size_t req_n;
    uint8_t *req = request_bytes(model, raw, &req_n);
    grpc_slice req_slice = grpc_slice_from_copied_buffer((const char *)req, req_n);
    free(req);
    grpc_slice method = grpc_slice_from_static_string(stream ? "/inference.GRPCInferenceService/ModelStreamInfer"
                                                             : "/inference.GRPCInferenceService/ModelInfer");
    slot *slots = calloc((size_t)conc, sizeof *slots);
    long long done = 0, errors = 0;
    double t0 = now_s(), c0 = cpu_s(), end = t0 + secs, warm_end = t0 + (secs > 2 ? 0.5 : 0);
    long long warm_done = 0;
    double t_warm = t0, c_warm = c0;
    int in_flight = 0;

    /* start: a call per slot (unary: the whole exchange in one batch; stream: open it, then send+recv) */
    for (int i = 0; i < conc; i++) {
        slot *s = &slots[i];
        grpc_metadata_array_init(&s->md_in);
        grpc_metadata_array_init(&s->trailers);
    }
    for (int i = 0; i < conc; i++) {
        if (send_next(&slots[i], stream, chs[i % n_ch], cq, method, &req_slice)) {
            fprintf(stderr, "grpc_load: cannot start a call\n");
            return 1;
        }
        in_flight++;
    }
    while (in_flight > 0) {
        grpc_event ev = grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (ev.type != GRPC_OP_COMPLETE) break;
        slot *s = ev.tag;
        int ok = ev.success && s->recv;
        if (!stream) ok = ok && s->status == GRPC_STATUS_OK;
        if (ok && stream) { /* an error_message (field 1) is an error */
            grpc_byte_buffer_reader r;
            grpc_byte_buffer_reader_init(&r, s->recv);
            grpc_slice all = grpc_byte_buffer_reader_readall(&r);
            grpc_byte_buffer_reader_destroy(&r);
            if (GRPC_SLICE_LENGTH(all) && GRPC_SLICE_START_PTR(all)[0] == 0x0a) ok = 0;
            grpc_slice_unref(all);
        }
        if (s->recv) grpc_byte_buffer_destroy(s->recv);
        s->recv = NULL;
        if (ok) done++;
        else errors++;
        double t = now_s();
        if (!warm_done && t >= warm_end) warm_done = done, t_warm = t, c_warm = cpu_s();
        if (!stream) {
            grpc_call_unref(s->call);
            grpc_slice_unref(s->details);
            grpc_metadata_array_destroy(&s->md_in);
            grpc_metadata_array_destroy(&s->trailers);
            grpc_metadata_array_init(&s->md_in);
            grpc_metadata_array_init(&s->trailers);
        }
        if (t >= end || (!ok && stream)) {
            if (stream) grpc_call_cancel(s->call, NULL);
            in_flight--;
            continue;
        }
        if (send_next(s, stream, chs[(s - slots) % n_ch], cq, method, &req_slice)) {
            errors++;
            in_flight--;
        }
    }
    double t1 = now_s(), c1 = cpu_s();
    long long measured = done - warm_done;
    double span = t1 - t_warm;
    printf("requests=%lld seconds=%.2f rps=%.0f errors=%lld client_cpu_pct=%.0f total=%lld\n", measured, span,
           span > 0 ? measured / span : 0, errors, span > 0 ? 100.0 * (c1 - c_warm) / span : 0, done);
    /* streams were cancelled; the process exits without a graceful teardown */
    return errors && !done ? 1 : 0;
}
