/*
 * openai.c -- the OpenAI-compatible endpoints of `infera serve` for
 * generative (GGUF) models (shared/DESIGN.md §5):
 *
 *   POST /v1/completions        prompt -> text
 *   POST /v1/chat/completions   messages -> a chat template -> text
 *   POST /v1/embeddings         input -> mean-pooled, L2-normalised final hidden state
 *   GET  /v1/models             the generative models served
 *
 * A request is decoded and checked by openai_request.c (OpenAI's parameters),
 * its caller authorized and its model found here (errors in OpenAI's shape
 * {"error":{"message","type","param","code"}}), its prompt tokenized, then
 * queued on the model's scheduler (llm_scheduler.c).
 *
 * NON-STREAMED: the connection is suspended; the scheduler's emit callback
 * collects the text and resumes it when the generation ends; then
 * inf__serve_openai_complete writes the response.
 * STREAMED ("stream": true): the response starts at once (200,
 * text/event-stream) with http.c reading its body through stream_read.  The
 * emit callback appends `data: {chunk}\n\n` events; the reader sends them and,
 * when there is nothing to send yet, suspends the connection, which the next
 * emit resumes (both under the request's lock, so a resume never comes
 * before its suspend).  A client that goes away makes libmicrohttpd destroy
 * the response (at the next write): stream_free cancels the generation,
 * which frees its slot at the scheduler's next step.  A non-streamed
 * client's socket is looked at by the emit callback at each token
 * (peer_gone): one that closed cancels its generation the same way.
 *
 * CHAT TEMPLATES: openai_request.c.
 */
#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "infera/tokenizer.h"
#include "serve/openai_request.h"
#include "serve/serve.h"

typedef struct oai_state {
    _Atomic int refs;
    srv_llm_req *req;
    struct MHD_Connection *conn; /* NULL once the response is gone */
    int stream, chat, include_usage;
    int suspended;               /* the stream reader suspended the connection */
    int started;                 /* streamed: the first chunk (with the role) was made */
    int done;
    const char *finish;
    srv_buf text;                /* non-streamed: the completion */
    srv_buf out;                 /* streamed: events not yet sent */
    size_t sent;
    char id[48];
    long long created;
    char model[129];
    srv_server *srv;
    srv_llm *llm;
    int who;                     /* the caller (auth) for the audit */
    int fd;                      /* non-streamed: the client's socket, watched while the connection is suspended */
} oai_state;

/* True when the client of a suspended (non-streamed) request has closed its
 * side: libmicrohttpd does not watch a suspended connection, so the emit
 * callback looks (a poll of no time, at each token) and cancels the
 * generation, which frees its slot at the scheduler's next step. */
static int peer_gone(int fd) {
    if (fd < 0) return 0;
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
    if (poll(&p, 1, 0) <= 0) return 0;
    if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return 1;
    char c; /* readable: a pipelined request (data) or the end of the stream (0) */
    return recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

static void state_unref(oai_state *s) {
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
    inf__serve_llm_req_release(s->req);
    inf__serve_llm_release(s->llm);
    inf__serve_buf_free(&s->text);
    inf__serve_buf_free(&s->out);
    free(s);
}

/* ---- errors -------------------------------------------------------------------- */

static void oai_error(srv_request *rq, int status, const char *param, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void oai_error(srv_request *rq, int status, const char *param, const char *code, const char *fmt, ...) {
    char msg[INF_ERROR_MESSAGE_MAX + 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    static const struct {
        int status;
        const char *type;
    } types[] = {{400, "invalid_request_error"}, {401, "authentication_error"}, {403, "permission_error"},
                 {404, "invalid_request_error"}, {429, "rate_limit_error"},    {503, "server_error"}};
    const char *type = "server_error";
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (types[i].status == status) type = types[i].type;
    inf__serve_buf_free(&rq->resp);
    rq->status = status;
    rq->content_type = "application/json";
    inf__serve_buf_puts(&rq->resp, "{\"error\":{\"message\":");
    inf__serve_buf_json_str(&rq->resp, msg, strlen(msg));
    inf__serve_buf_printf(&rq->resp, ",\"type\":\"%s\",\"param\":", type);
    if (param) inf__serve_buf_json_str(&rq->resp, param, strlen(param));
    else inf__serve_buf_puts(&rq->resp, "null");
    inf__serve_buf_puts(&rq->resp, ",\"code\":");
    if (code) inf__serve_buf_json_str(&rq->resp, code, strlen(code));
    else inf__serve_buf_puts(&rq->resp, "null");
    inf__serve_buf_puts(&rq->resp, "}}");
}

/* ---- response pieces ------------------------------------------------------------ */

static void usage_json(srv_buf *b, srv_llm_req *r) {
    int p = 0, c = 0;
    inf__serve_llm_req_usage(r, &p, &c);
    inf__serve_buf_printf(b, "\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d}", p, c,
                          p + c);
}

static void head_json(srv_buf *b, const oai_state *s, const char *object) {
    inf__serve_buf_printf(b, "{\"id\":\"%s\",\"object\":\"%s\",\"created\":%lld,\"model\":", s->id, object, s->created);
    inf__serve_buf_json_str(b, s->model, strlen(s->model));
}

/* One SSE event with text (and finish when the generation ended). */
static void sse_chunk(oai_state *s, const char *text, size_t n, const char *finish, int role) {
    srv_buf *b = &s->out;
    inf__serve_buf_puts(b, "data: ");
    head_json(b, s, s->chat ? "chat.completion.chunk" : "text_completion");
    inf__serve_buf_puts(b, ",\"choices\":[{\"index\":0,");
    if (s->chat) {
        inf__serve_buf_puts(b, "\"delta\":{");
        if (role) inf__serve_buf_puts(b, "\"role\":\"assistant\"");
        if (n || !finish) {
            if (role) inf__serve_buf_puts(b, ",");
            inf__serve_buf_puts(b, "\"content\":");
            inf__serve_buf_json_str(b, text, n);
        }
        inf__serve_buf_puts(b, "}");
    } else {
        inf__serve_buf_puts(b, "\"text\":");
        inf__serve_buf_json_str(b, text, n);
    }
    inf__serve_buf_puts(b, ",\"logprobs\":null,\"finish_reason\":");
    if (finish) inf__serve_buf_printf(b, "\"%s\"", finish);
    else inf__serve_buf_puts(b, "null");
    inf__serve_buf_puts(b, "}]}\n\n");
}

/* The scheduler's emit (request lock held). */
static void on_emit(srv_llm_req *r, void *user, const char *text, size_t n, const char *finish) {
    oai_state *s = user;
    int cancelled = finish && !strcmp(finish, "cancelled");
    if (cancelled) finish = "length";
    if (!s->stream) {
        inf__serve_buf_put(&s->text, text, n);
        if (!finish && s->conn && peer_gone(s->fd)) inf__serve_llm_req_cancel(r);
    } else {
        int first = !s->started;
        if (n || (first && s->chat)) sse_chunk(s, text, n, NULL, s->chat && first);
        s->started = 1;
        if (finish) {
            sse_chunk(s, "", 0, finish, 0);
            if (s->include_usage) {
                inf__serve_buf_puts(&s->out, "data: ");
                head_json(&s->out, s, s->chat ? "chat.completion.chunk" : "text_completion");
                inf__serve_buf_puts(&s->out, ",\"choices\":[],");
                usage_json(&s->out, r);
                inf__serve_buf_puts(&s->out, "}\n\n");
            }
            inf__serve_buf_puts(&s->out, "data: [DONE]\n\n");
        }
    }
    if (finish) {
        s->done = 1;
        s->finish = finish;
    }
    if (s->stream && s->suspended && s->conn) {
        s->suspended = 0;
        MHD_resume_connection(s->conn);
    } else if (!s->stream && finish && s->conn) {
        MHD_resume_connection(s->conn);
    }
    if (finish && !cancelled && inf__serve_llm_audit_metrics(s->llm))
        inf__serve_models_note_rows(s->srv->models, inf__serve_llm_audit_metrics(s->llm), s->who, 1);
    /* the scheduler's reference: nothing is emitted after finish (the
     * scheduler still holds r, so the lock held here outlives s) */
    if (finish) state_unref(s);
}

/* ---- the streamed body ----------------------------------------------------------- */

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    oai_state *s = cls;
    (void)pos;
    pthread_mutex_t *lk = inf__serve_llm_req_lock(s->req);
    pthread_mutex_lock(lk);
    ssize_t n;
    if (s->out.n > s->sent) {
        size_t k = s->out.n - s->sent;
        if (k > max) k = max;
        memcpy(buf, s->out.p + s->sent, k);
        s->sent += k;
        if (s->sent == s->out.n) s->sent = s->out.n = 0; /* the buffer is reused */
        n = (ssize_t)k;
    } else if (s->done) {
        n = MHD_CONTENT_READER_END_OF_STREAM;
    } else {
        s->suspended = 1;
        MHD_suspend_connection(s->conn);
        n = 0;
    }
    pthread_mutex_unlock(lk);
    return n;
}

static void stream_free(void *cls) {
    oai_state *s = cls;
    pthread_mutex_t *lk = inf__serve_llm_req_lock(s->req);
    pthread_mutex_lock(lk);
    s->conn = NULL;
    s->suspended = 0;
    int done = s->done;
    pthread_mutex_unlock(lk);
    if (!done) inf__serve_llm_req_cancel(s->req);
    state_unref(s);
}

/* ---- requests -------------------------------------------------------------------- */

/* The reply to a request the decoder refused (openai_request.c), in OpenAI's shape. */
static void refuse(srv_request *rq, const oai_fail *f) {
    oai_error(rq, f->status, f->param[0] ? f->param : NULL, f->code, "%s", f->message);
}

/* The predictor role on the registry model behind the served name (or the
 * served name itself for a file), checked before saying whether it exists. */
static int authorize(srv_request *rq, const char *model) {
    srv_models *ms = rq->srv->models;
    if (!inf__serve_models_auth_enabled(ms)) return 0;
    const char *h = inf__serve_http_header(rq, "Authorization");
    const char *tok = h && !strncasecmp(h, "Bearer ", 7) ? h + 7 : NULL;
    inf_error e = {0};
    char reg_name[160];
    srv_llm *l = inf__serve_llm_acquire(rq->srv, model);
    if (l && inf__serve_llm_registry_name(l)[0])
        inf__serve_copy_str(reg_name, sizeof reg_name, inf__serve_llm_registry_name(l));
    else
        inf__serve_models_registry_name(ms, model, reg_name, sizeof reg_name);
    inf__serve_llm_release(l);
    inf_status st = inf__serve_models_authorize(ms, tok, reg_name, 0, &rq->caller, &e);
    if (st == INF_OK) return 0;
    oai_error(rq, st == INF_EAUTH ? 401 : st == INF_EDENIED ? 403 : 503, NULL, NULL, "%s", e.message);
    return -1;
}

/* The body decoded, the caller authorized for its model, the model found, then the endpoint's parameters
 * checked: 0 with *out holding a reference (inf__serve_llm_release), or -1 with the error answered. */
static int decode(srv_request *rq, oai_kind kind, oai_request *o, srv_llm **out) {
    oai_fail f = {0};
    *out = NULL;
    if (inf__oai_parse(rq->body, rq->body_len, o, &f)) {
        refuse(rq, &f);
        return -1;
    }
    inf__serve_copy_str(rq->log_model, sizeof rq->log_model, o->model);
    if (authorize(rq, o->model)) return -1;
    if (!(*out = inf__serve_llm_acquire(rq->srv, o->model))) {
        oai_error(rq, 404, "model", "model_not_found",
                  "the model '%s' does not exist (not a generative model served here)", o->model);
        return -1;
    }
    if (inf__oai_check(o, kind, &f)) {
        refuse(rq, &f);
        return -1;
    }
    return 0;
}

/* Text -> token ids (BOS and special tokens as the file says); NULL and an error answered. */
static int32_t *tokenize(srv_request *rq, srv_llm *l, const char *text, size_t len, int *n_out) {
    const inf_tokenizer *t = inf__serve_llm_tokenizer(l);
    size_t n = 0;
    int32_t *ids = NULL;
    inf_error e = {0};
    inf_status st = inf_tokenizer_encode_alloc(t, text, len, true, &ids, &n, &e);
    if (st != INF_OK) {
        oai_error(rq, st == INF_ENOMEM ? 503 : 400, NULL, NULL, "cannot tokenize the prompt: %s", e.message);
        return NULL;
    }
    *n_out = (int)n;
    return ids;
}

/* Checks the limits and starts the generation. */
static int start(srv_request *rq, oai_request *o, srv_llm *l, int32_t *ids, int n_ids, int chat,
                 const char *prompt_param) {
    int n_ctx = inf__serve_llm_n_ctx(l);
    if (n_ids == 0) {
        free(ids);
        oai_error(rq, 400, prompt_param, NULL, "the prompt has no tokens");
        return 0;
    }
    if (!o->max_tokens_given) o->p.max_tokens = chat ? n_ctx - n_ids : 16;
    if (n_ids + o->p.max_tokens > n_ctx) {
        free(ids);
        oai_error(rq, 400, o->max_tokens_given ? "max_tokens" : prompt_param, "context_length_exceeded",
                  "this model's maximum context length is %d tokens; you requested %d tokens (%d in the prompt, %d "
                  "for the completion): reduce the prompt or max_tokens",
                  n_ctx, n_ids + o->p.max_tokens, n_ids, o->p.max_tokens);
        return 0;
    }
    oai_state *s = calloc(1, sizeof *s);
    if (!s) {
        free(ids);
        oai_error(rq, 503, NULL, NULL, "out of memory");
        return 0;
    }
    atomic_init(&s->refs, 2); /* the HTTP side, the scheduler */
    s->stream = o->stream;
    s->chat = chat;
    s->include_usage = o->include_usage;
    s->conn = rq->conn;
    s->fd = -1;
    if (!o->stream) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci) s->fd = ci->connect_fd;
    }
    s->srv = rq->srv;
    s->llm = l;
    inf__serve_llm_ref(l); /* the state's own, for its life */
    s->who = rq->caller;
    s->created = (long long)time(NULL);
    snprintf(s->id, sizeof s->id, "%s-%llu", chat ? "chatcmpl" : "cmpl", (unsigned long long)rq->request_no);
    inf__serve_copy_str(s->model, sizeof s->model, inf__serve_llm_name(l));
    inf_error e = {0};
    int stream = s->stream;
    if (!stream) {
        rq->llm = s;
        rq->state = SRV_RQ_SUSPENDED;
        inf__serve_http_suspend(rq);
    }
    inf_status st = inf__serve_llm_submit(l, ids, n_ids, &o->p, on_emit, s, &s->req, &e);
    free(ids);
    if (st != INF_OK) {
        rq->llm = NULL;
        inf__serve_llm_release(s->llm);
        free(s);
        oai_error(rq, st == INF_EBUSY ? 429 : 503, NULL, st == INF_EBUSY ? "queue_full" : NULL, "%s", e.message);
        if (st == INF_EBUSY) rq->retry_after_s = 1; /* a queue moves in about a generation's time */
        if (!stream) {
            rq->state = SRV_RQ_COMPLETED;
            inf__serve_http_resume(rq);
            return 1;
        }
        return 0;
    }
    /* the request's second reference (for the scheduler) is dropped by the scheduler itself */
    if (!stream) return 1;
    rq->status = 200;
    rq->content_type = "text/event-stream";
    rq->stream_read = stream_read;
    rq->stream_free = stream_free;
    rq->stream_cls = s;
    return 0;
}

int inf__serve_openai_completions(srv_request *rq) {
    oai_request o;
    srv_llm *l;
    int rc = 0;
    if (decode(rq, OAI_COMPLETIONS, &o, &l)) goto done;
    int32_t *ids = NULL;
    int n = 0;
    if (o.prompt) {
        if (!(ids = tokenize(rq, l, o.prompt, strlen(o.prompt), &n))) goto done;
    } else {
        oai_fail f = {0};
        if (inf__oai_prompt_ids(o.prompt_ids, inf_tokenizer_n_vocab(inf__serve_llm_tokenizer(l)), &ids, &n, &f)) {
            refuse(rq, &f);
            goto done;
        }
    }
    rc = start(rq, &o, l, ids, n, 0, "prompt");
done:
    inf__serve_llm_release(l);
    inf__oai_request_free(&o);
    return rc;
}

int inf__serve_openai_chat(srv_request *rq) {
    oai_request o;
    srv_llm *l;
    int rc = 0;
    if (decode(rq, OAI_CHAT, &o, &l)) goto done;
    srv_buf text = {0};
    inf__oai_render_chat(inf__serve_llm_chat_template(l), o.messages, &text);
    if (text.oom) {
        inf__serve_buf_free(&text);
        oai_error(rq, 503, NULL, NULL, "out of memory");
        goto done;
    }
    int n = 0;
    int32_t *ids = tokenize(rq, l, text.p ? text.p : "", text.n, &n);
    inf__serve_buf_free(&text);
    if (ids) rc = start(rq, &o, l, ids, n, 1, "messages");
done:
    inf__serve_llm_release(l);
    inf__oai_request_free(&o);
    return rc;
}

void inf__serve_openai_complete(srv_request *rq) {
    oai_state *s = rq->llm;
    pthread_mutex_t *lk = inf__serve_llm_req_lock(s->req);
    pthread_mutex_lock(lk);
    srv_buf *b = &rq->resp;
    inf__serve_buf_free(b);
    rq->status = 200;
    rq->content_type = "application/json";
    head_json(b, s, s->chat ? "chat.completion" : "text_completion");
    inf__serve_buf_puts(b, ",\"choices\":[{\"index\":0,");
    if (s->chat) {
        inf__serve_buf_puts(b, "\"message\":{\"role\":\"assistant\",\"content\":");
        inf__serve_buf_json_str(b, s->text.p ? s->text.p : "", s->text.n);
        inf__serve_buf_puts(b, "}");
    } else {
        inf__serve_buf_puts(b, "\"text\":");
        inf__serve_buf_json_str(b, s->text.p ? s->text.p : "", s->text.n);
    }
    inf__serve_buf_printf(b, ",\"logprobs\":null,\"finish_reason\":\"%s\"}],", s->finish ? s->finish : "stop");
    usage_json(b, s->req);
    inf__serve_buf_puts(b, "}");
    pthread_mutex_unlock(lk);
}

void inf__serve_openai_release(srv_request *rq) {
    oai_state *s = rq->llm;
    rq->llm = NULL;
    if (!s) return;
    pthread_mutex_t *lk = inf__serve_llm_req_lock(s->req);
    pthread_mutex_lock(lk);
    s->conn = NULL;
    int done = s->done;
    pthread_mutex_unlock(lk);
    if (!done) inf__serve_llm_req_cancel(s->req);
    state_unref(s);
}

/* ---- models and embeddings ------------------------------------------------------- */

int inf__serve_openai_models(srv_request *rq) {
    rq->status = 200;
    rq->content_type = "application/json";
    inf__serve_buf_puts(&rq->resp, "{\"object\":\"list\",\"data\":[");
    inf__serve_llm_list_json(rq->srv, NULL, &rq->resp);
    inf__serve_buf_puts(&rq->resp, "]}");
    return 0;
}

/* GET /v1/models/{name}: OpenAI's "retrieve model" -- the object /v1/models lists, or 404 model_not_found. */
int inf__serve_openai_model(srv_request *rq) {
    srv_buf one = {0};
    if (!inf__serve_llm_list_json(rq->srv, rq->params[0], &one)) {
        inf__serve_buf_free(&one);
        oai_error(rq, 404, "model", "model_not_found", "the model '%s' does not exist", rq->params[0]);
        return 0;
    }
    rq->status = 200;
    rq->content_type = "application/json";
    inf__serve_buf_put(&rq->resp, one.p, one.n);
    inf__serve_buf_free(&one);
    return 0;
}

int inf__serve_openai_embeddings(srv_request *rq) {
    oai_request o;
    srv_llm *l;
    if (decode(rq, OAI_EMBEDDINGS, &o, &l)) goto done;
    const cJSON *one = cJSON_IsString(o.input) ? o.input : NULL, *x = one ? one : o.input->child;
    srv_buf *b = &rq->resp;
    int total = 0;
    inf__serve_buf_puts(b, "{\"object\":\"list\",\"data\":[");
    for (int i = 0; x; i++, x = one ? NULL : x->next) { /* the decoder checked that each is a string */
        int n = 0;
        int32_t *ids = tokenize(rq, l, x->valuestring, strlen(x->valuestring), &n);
        if (!ids) goto done;
        if (n == 0 || n > inf__serve_llm_n_ctx(l)) {
            free(ids);
            oai_error(rq, 400, "input", n ? "context_length_exceeded" : NULL,
                      "input[%d] has %d tokens; the model takes 1 to %d", i, n, inf__serve_llm_n_ctx(l));
            goto done;
        }
        float *v = NULL;
        int dim = 0;
        inf_error e = {0};
        inf_status st = inf__serve_llm_embed(l, ids, n, &v, &dim, &e);
        free(ids);
        if (st != INF_OK) {
            oai_error(rq, st == INF_EBUSY ? 429 : 400, "input", NULL, "%s", e.message);
            goto done;
        }
        total += n;
        inf__serve_buf_printf(b, "%s{\"object\":\"embedding\",\"index\":%d,\"embedding\":[", i ? "," : "", i);
        for (int k = 0; k < dim; k++) {
            if (k) inf__serve_buf_put(b, ",", 1);
            inf__serve_buf_f32(b, v[k]);
        }
        inf__serve_buf_puts(b, "]}");
        free(v);
    }
    inf__serve_buf_puts(b, "],\"model\":");
    inf__serve_buf_json_str(b, inf__serve_llm_name(l), strlen(inf__serve_llm_name(l)));
    inf__serve_buf_printf(b, ",\"usage\":{\"prompt_tokens\":%d,\"total_tokens\":%d}}", total, total);
    rq->status = 200;
    rq->content_type = "application/json";
done:
    inf__serve_llm_release(l);
    inf__oai_request_free(&o);
    return 0;
}
