/*
 * llm_scheduler.c -- generative (GGUF) models in `infera serve`: one model's
 * weights and tokenizer, a fixed set of sequence slots and one scheduler
 * thread that decodes them (continuous batching).
 *
 * SLOTS.  --llm-slots N contexts (inf_llm_context: a KV cache each) are made
 * at load.  A request waits in a bounded FIFO (--llm-queue; beyond it the
 * submit fails with INF_EBUSY -> 429) until a slot is free; it joins between
 * decode steps and leaves as soon as it ends (end-of-generation token, a stop
 * string, max_tokens, the context full, or its client gone).
 *
 * ROUNDS.  One round of the scheduler first processes the prompt of each
 * slot that joined (one eval of all its tokens on its own context, then its
 * first token), then decodes one token for every other active slot in ONE
 * batched forward pass (inf_llm_context_eval_batch on a batch context that
 * lends its scratch): each weight matrix is read once per step for all
 * sequences, each sequence attends to its own KV cache at its own position.
 * Requests join and leave between rounds.  A batched row is bit for bit a
 * lone decode step's, so greedy output is exactly `infera generate`'s.
 * INFERA_LLM_SCHEDULE=round-robin (read at load; a benchmark baseline)
 * decodes the slots one after another instead, one eval each.
 *
 * TEXT.  Token pieces are appended to the request's text; a stop string ends
 * it (cut before the stop); the emit callback gets only text that cannot
 * change any more: no incomplete UTF-8 sequence, no tail that could still
 * become a stop string.
 *
 * LIFE.  A model is refcounted: the server's list holds one reference, each
 * HTTP request that uses it another (inf__serve_llm_acquire / _release).
 * The repository API's unload (inf__serve_llm_remove) takes it off the list
 * (new requests get 404), waits until its queue, slots and embedding jobs
 * are empty (in-flight generations finish), stops its scheduler thread and
 * drops the list's reference; the last reference frees it.
 *
 * LOCKS.  srv->llm_lock guards the model list; each model's lock guards its
 * queue and slots' membership; each request's lock guards what the HTTP side
 * reads (emit runs under it).  The scheduler never holds a model lock while
 * evaluating.
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "infera/llm.h"
#include "infera/tokenizer.h"
#include "serve/serve.h"

#define LLM_MAX_STOP 4
#define LLM_N_TIME_BOUNDS 16
#define LLM_N_BATCH_BOUNDS 9

static const int batch_bounds[LLM_N_BATCH_BOUNDS] = {1, 2, 4, 8, 16, 32, 64, 128, 256};

static const double time_bounds[LLM_N_TIME_BOUNDS] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                                      0.25,  0.5,   0.75, 1.0,  2.5,  5.0,  10.0, 30.0};

/* A histogram in seconds (vLLM's buckets, trimmed); sum kept in ns. */
typedef struct llm_hist {
    _Atomic uint64_t counts[LLM_N_TIME_BOUNDS + 1];
    _Atomic uint64_t sum_ns, count;
} llm_hist;

struct srv_llm_req {
    pthread_mutex_t lock;
    _Atomic int refs;
    _Atomic int cancelled;
    int32_t *prompt;
    int n_prompt;
    srv_llm_params p;
    char *stops[LLM_MAX_STOP];
    size_t max_stop_len;
    srv_llm_emit_fn emit;
    void *user;
    /* progress (scheduler) */
    char *text;
    size_t len, cap, emitted;
    int completion_tokens;
    int32_t last;
    int finished;
    uint64_t t_arrive_ns, t_first_ns;
    inf_llm_sampler *sampler;
    srv_llm_req *next; /* queue */
};

typedef struct llm_slot {
    inf_llm_context *ctx;
    srv_llm_req *req; /* NULL: free */
} llm_slot;

struct srv_llm {
    _Atomic int refs;
    char name[129];
    char ref[1024];             /* what it was loaded from (a file or a registry reference) */
    char registry_name[129];
    int64_t registry_version;
    inf_llm_model *model;
    inf_tokenizer *tok;
    unsigned char *eog; /* n_vocab flags: end-of-generation tokens */
    int n_vocab;
    char *chat_template;
    int n_slots, n_ctx, max_queue;
    llm_slot *slots;
    int round_robin;            /* INFERA_LLM_SCHEDULE=round-robin: no batched decode */
    inf_llm_context *batch;     /* scratch of the batched decode step (n_slots rows) */
    inf_llm_context **step_ctx; /* this step's sequences, tokens and slots (n_slots each) */
    int32_t *step_tok;
    int *step_slot;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_cond_t idle;        /* signalled when a round leaves no request (remove waits for it) */
    int removing;
    pthread_t thread;
    int thread_started, stop;
    srv_llm_req *head, *tail;
    int n_waiting;
    /* embedding jobs are run by the scheduler between rounds */
    struct embed_job *embeds;
    inf_llm_context *embed_ctx; /* made when an embedding finds every slot busy */
    srv_model_metrics *audit; /* from the registry: the entry models.c's auditor writes from */
    /* metrics */
    _Atomic uint64_t prompt_tokens, generation_tokens;
    _Atomic uint64_t finished[3]; /* by vLLM's finished_reason: stop, length, abort (cancelled) */
    _Atomic int running, waiting;
    llm_hist ttft, tpot, e2e, queue_time;
    _Atomic uint64_t batch_counts[LLM_N_BATCH_BOUNDS + 1], batch_sum, batch_steps; /* sequences per decode step */
    srv_llm *next;
};

typedef struct embed_job {
    const int32_t *tokens;
    int n;
    float *out;
    inf_status st;
    inf_error err;
    int done;
    pthread_cond_t cond;
    struct embed_job *next;
} embed_job;

static void hist_observe(llm_hist *h, double seconds) {
    int i = 0;
    while (i < LLM_N_TIME_BOUNDS && seconds > time_bounds[i]) i++;
    atomic_fetch_add_explicit(&h->counts[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_ns, (uint64_t)(seconds * 1e9), memory_order_relaxed);
    atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
}

/* ---- requests ------------------------------------------------------------------ */

static void req_free(srv_llm_req *r) {
    for (int i = 0; i < LLM_MAX_STOP; i++) free(r->stops[i]);
    free(r->prompt);
    free(r->text);
    inf_llm_sampler_free(r->sampler);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

void inf__serve_llm_req_release(srv_llm_req *r) {
    if (r && atomic_fetch_sub(&r->refs, 1) == 1) req_free(r);
}

void inf__serve_llm_req_cancel(srv_llm_req *r) {
    if (r) atomic_store(&r->cancelled, 1);
}

pthread_mutex_t *inf__serve_llm_req_lock(srv_llm_req *r) { return &r->lock; }

void inf__serve_llm_req_usage(srv_llm_req *r, int *prompt_tokens, int *completion_tokens) {
    *prompt_tokens = r->n_prompt;
    *completion_tokens = r->completion_tokens;
}

/* Bytes of text[0..len) that form complete UTF-8 sequences at the end: a
 * trailing lead byte whose sequence is still incomplete is held back. */
static size_t complete_utf8(const char *s, size_t len) {
    size_t i = len, back = 0;
    while (i > 0 && back < 4 && ((unsigned char)s[i - 1] & 0xc0) == 0x80) i--, back++;
    if (i == 0) return len;
    unsigned char lead = (unsigned char)s[i - 1];
    size_t need = lead < 0x80 ? 1 : (lead >> 5) == 6 ? 2 : (lead >> 4) == 14 ? 3 : (lead >> 3) == 30 ? 4 : 1;
    return back + 1 >= need ? len : i - 1;
}

/* After an emit has handed text to its consumer (the HTTP thread that
 * streams it, woken by the emit): give up the rest of this time slice, so
 * that a consumer the kernel queued on this CPU runs now instead of after
 * the next decode step.  Measured (session 18, bench/llm/ttft.py, SmolLM2
 * Q4_1, 1 thread): without it ~1 streamed request in 3 got its first chunk
 * one decode step late (2-4 ms after the server's first token instead of
 * 0.2-0.7 ms: the woken thread waited behind the decoding one); with it
 * 2 in 40.  One syscall per emitted token, next to a decode step of ms. */
static void let_consumer_run(void) { sched_yield(); }

/* Ends r (scheduler): emits what is left with the finish reason. */
static void req_finish(srv_llm *l, srv_llm_req *r, const char *finish) {
    uint64_t now = inf__serve_now_ns();
    pthread_mutex_lock(&r->lock);
    r->finished = 1;
    if (r->emit) r->emit(r, r->user, r->text + r->emitted, r->len - r->emitted, finish);
    r->emitted = r->len;
    pthread_mutex_unlock(&r->lock);
    let_consumer_run();
    int cancelled = atomic_load(&r->cancelled);
    atomic_fetch_add(&l->finished[cancelled ? 2 : finish && !strcmp(finish, "length") ? 1 : 0], 1);
    if (!cancelled) {
        hist_observe(&l->e2e, (double)(now - r->t_arrive_ns) / 1e9);
        if (r->completion_tokens > 1 && r->t_first_ns)
            hist_observe(&l->tpot, (double)(now - r->t_first_ns) / 1e9 / (r->completion_tokens - 1));
    }
}

/* Appends token t's text; 1 when a stop string ended the text. */
static int req_append(srv_llm *l, srv_llm_req *r, int32_t t) {
    size_t old = r->len;
    if (inf_tokenizer_append_piece(l->tok, t, &r->text, &r->len, &r->cap) == INF_ENOMEM)
        return 1; /* out of memory: end the text where it is */
    for (int i = 0; i < r->p.n_stop; i++) {
        size_t sl = strlen(r->stops[i]);
        size_t from = old >= sl ? old - sl + 1 : 0;
        const char *hit = sl ? strstr(r->text + from, r->stops[i]) : NULL;
        if (hit) {
            r->len = (size_t)(hit - r->text);
            r->text[r->len] = 0;
            return 1;
        }
    }
    size_t safe = r->len > (r->max_stop_len ? r->max_stop_len - 1 : 0) ? r->len - (r->max_stop_len ? r->max_stop_len - 1 : 0) : 0;
    safe = complete_utf8(r->text, safe);
    if (safe > r->emitted) {
        pthread_mutex_lock(&r->lock);
        if (r->emit) r->emit(r, r->user, r->text + r->emitted, safe - r->emitted, NULL);
        r->emitted = safe;
        pthread_mutex_unlock(&r->lock);
        let_consumer_run();
    }
    return 0;
}

/* ---- the scheduler ------------------------------------------------------------- */

/* Slot s's request made a token from logits: sample, account, append;
 * returns 1 when the request ended (the slot is then free). */
static int advance(srv_llm *l, llm_slot *s, const float *logits) {
    srv_llm_req *r = s->req;
    int32_t t = inf_llm_sampler_sample(r->sampler, logits);
    if (t >= 0 && t < l->n_vocab && l->eog[t]) {
        if (!r->t_first_ns) hist_observe(&l->ttft, (double)(inf__serve_now_ns() - r->t_arrive_ns) / 1e9);
        r->t_first_ns = inf__serve_now_ns();
        req_finish(l, r, "stop");
        return 1;
    }
    r->completion_tokens++;
    atomic_fetch_add(&l->generation_tokens, 1);
    r->last = t;
    int stopped = req_append(l, r, t);
    if (r->completion_tokens == 1) {
        r->t_first_ns = inf__serve_now_ns();
        hist_observe(&l->ttft, (double)(r->t_first_ns - r->t_arrive_ns) / 1e9);
    }
    if (stopped) {
        req_finish(l, r, "stop");
        return 1;
    }
    if (r->completion_tokens >= r->p.max_tokens || inf_llm_context_n_past(s->ctx) >= inf_llm_context_n_ctx(s->ctx)) {
        req_finish(l, r, "length");
        return 1;
    }
    return 0;
}

/* The request in a slot has not had its prompt processed yet. */
static int needs_prompt(const llm_slot *s) {
    return !s->req->t_first_ns && s->req->completion_tokens == 0 && inf_llm_context_n_past(s->ctx) == 0;
}

/* One step of slot s alone: its prompt (first step) or its last token, then
 * one new token.  Returns 1 when the request ended. */
static int step(srv_llm *l, llm_slot *s) {
    srv_llm_req *r = s->req;
    inf_error e = {0};
    const float *logits = NULL;
    if (atomic_load(&r->cancelled)) {
        req_finish(l, r, "cancelled");
        return 1;
    }
    inf_status st;
    if (needs_prompt(s)) {
        st = inf_llm_context_eval(s->ctx, r->prompt, r->n_prompt, false, &logits, &e);
        if (st == INF_OK) atomic_fetch_add(&l->prompt_tokens, (uint64_t)r->n_prompt);
    } else {
        st = inf_llm_context_eval(s->ctx, &r->last, 1, false, &logits, &e);
    }
    if (st != INF_OK) {
        req_finish(l, r, "length");
        return 1;
    }
    return advance(l, s, logits);
}

static void batch_observe(srv_llm *l, int n) {
    int i = 0;
    while (i < LLM_N_BATCH_BOUNDS && n > batch_bounds[i]) i++;
    atomic_fetch_add_explicit(&l->batch_counts[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&l->batch_sum, (uint64_t)n, memory_order_relaxed);
    atomic_fetch_add_explicit(&l->batch_steps, 1, memory_order_relaxed);
}

/* Frees slot i once its request ended (scheduler). */
static void slot_release(srv_llm *l, int i) {
    srv_llm_req *r = l->slots[i].req;
    pthread_mutex_lock(&l->lock);
    l->slots[i].req = NULL;
    pthread_mutex_unlock(&l->lock);
    atomic_fetch_sub(&l->running, 1);
    inf__serve_llm_req_release(r);
}

/* One round: prompts of the slots that joined, then one decode step of every
 * other active slot -- batched, or one by one (round-robin baseline). */
static void run_round(srv_llm *l) {
    int n = 0;
    for (int i = 0; i < l->n_slots; i++) {
        llm_slot *s = &l->slots[i];
        if (!s->req) continue;
        if (l->stop) atomic_store(&s->req->cancelled, 1);
        if (l->round_robin || needs_prompt(s) || atomic_load(&s->req->cancelled)) {
            if (step(l, s)) slot_release(l, i);
            else if (l->round_robin) batch_observe(l, 1);
            continue;
        }
        l->step_ctx[n] = s->ctx;
        l->step_tok[n] = s->req->last;
        l->step_slot[n++] = i;
    }
    if (!n) return;
    const float *logits = NULL;
    inf_error e = {0};
    if (inf_llm_context_eval_batch(l->batch, l->step_ctx, l->step_tok, n, &logits, &e) != INF_OK) {
        fprintf(stderr, "infera serve: model '%s': batched decode step failed (%s); stepping one by one\n", l->name,
                e.message);
        for (int k = 0; k < n; k++)
            if (step(l, &l->slots[l->step_slot[k]])) slot_release(l, l->step_slot[k]);
        return;
    }
    batch_observe(l, n);
    for (int k = 0; k < n; k++)
        if (advance(l, &l->slots[l->step_slot[k]], logits + (size_t)k * l->n_vocab)) slot_release(l, l->step_slot[k]);
}

static void run_embed(srv_llm *l, embed_job *j);

static void *scheduler(void *arg) {
    srv_llm *l = arg;
    pthread_mutex_lock(&l->lock);
    for (;;) {
        /* admit waiting requests into free slots */
        for (int i = 0; i < l->n_slots && l->head; i++) {
            if (l->slots[i].req) continue;
            srv_llm_req *r = l->head;
            l->head = r->next;
            if (!l->head) l->tail = NULL;
            r->next = NULL;
            l->n_waiting--;
            atomic_fetch_sub(&l->waiting, 1);
            atomic_fetch_add(&l->running, 1);
            l->slots[i].req = r;
            hist_observe(&l->queue_time, (double)(inf__serve_now_ns() - r->t_arrive_ns) / 1e9);
            inf_error e = {0};
            inf_llm_context_rewind(l->slots[i].ctx, 0, &e);
        }
        int active = 0;
        for (int i = 0; i < l->n_slots; i++) active += l->slots[i].req != NULL;
        embed_job *ej = l->embeds;
        if (ej) l->embeds = ej->next;
        if (!active && !ej) {
            if (l->removing && !l->head) pthread_cond_broadcast(&l->idle);
            if (l->stop) break;
            pthread_cond_wait(&l->wake, &l->lock);
            continue;
        }
        pthread_mutex_unlock(&l->lock);
        if (ej) run_embed(l, ej);
        run_round(l);
        pthread_mutex_lock(&l->lock);
        if (l->stop) { /* the queue ends too */
            while (l->head) {
                srv_llm_req *r = l->head;
                l->head = r->next;
                l->n_waiting--;
                atomic_fetch_sub(&l->waiting, 1);
                pthread_mutex_unlock(&l->lock);
                atomic_store(&r->cancelled, 1);
                req_finish(l, r, "cancelled");
                inf__serve_llm_req_release(r);
                pthread_mutex_lock(&l->lock);
            }
            l->tail = NULL;
        }
    }
    pthread_mutex_unlock(&l->lock);
    return NULL;
}

/* ---- embeddings ---------------------------------------------------------------- */

/* An embedding borrows a free slot's context (the scheduler thread runs it
 * between rounds, so no slot is mid-step); when every slot is generating it
 * uses a context of its own, made on first need and kept. */
static void run_embed(srv_llm *l, embed_job *j) {
    inf_llm_context *c = NULL;
    for (int i = 0; i < l->n_slots && !c; i++)
        if (!l->slots[i].req) c = l->slots[i].ctx;
    if (!c && !l->embed_ctx) {
        inf_llm_context_options co;
        inf_llm_context_options_init(&co);
        co.n_ctx = l->n_ctx;
        if (inf_llm_context_new(l->model, &co, &l->embed_ctx, &j->err) != INF_OK) l->embed_ctx = NULL;
    }
    if (!c) c = l->embed_ctx;
    if (!c) {
        j->st = j->err.status ? j->err.status : INF_ENOMEM;
    } else {
        inf_llm_context_rewind(c, 0, &j->err);
        j->st = inf_llm_context_embed(c, j->tokens, j->n, j->out, &j->err);
        inf_error e = {0};
        inf_llm_context_rewind(c, 0, &e);
    }
    pthread_mutex_lock(&l->lock);
    j->done = 1;
    pthread_cond_signal(&j->cond);
    pthread_mutex_unlock(&l->lock);
}

inf_status inf__serve_llm_embed(srv_llm *l, const int32_t *tokens, int n, float **out, int *dim, inf_error *err) {
    int d = inf_llm_model_get_info(l->model)->n_embd;
    float *v = malloc((size_t)d * sizeof *v);
    if (!v) return inf_error_set(err, INF_ENOMEM, "out of memory for an embedding of %d floats", d);
    embed_job j = {.tokens = tokens, .n = n, .out = v};
    pthread_cond_init(&j.cond, NULL);
    pthread_mutex_lock(&l->lock);
    if (l->stop) {
        pthread_mutex_unlock(&l->lock);
        pthread_cond_destroy(&j.cond);
        free(v);
        return inf_error_set(err, INF_EBUSY, "model '%s' is shutting down", l->name);
    }
    embed_job **tail = &l->embeds;
    while (*tail) tail = &(*tail)->next;
    *tail = &j;
    pthread_cond_signal(&l->wake);
    while (!j.done) pthread_cond_wait(&j.cond, &l->lock);
    pthread_mutex_unlock(&l->lock);
    pthread_cond_destroy(&j.cond);
    if (j.st != INF_OK) {
        free(v);
        if (err) *err = j.err;
        return j.st;
    }
    /* L2-normalised */
    double ss = 0;
    for (int i = 0; i < d; i++) ss += (double)v[i] * v[i];
    float inv = ss > 0 ? (float)(1.0 / sqrt(ss)) : 0.f;
    for (int i = 0; i < d; i++) v[i] *= inv;
    *out = v;
    *dim = d;
    return INF_OK;
}

/* ---- submit -------------------------------------------------------------------- */

inf_status inf__serve_llm_submit(srv_llm *l, const int32_t *prompt, int n_prompt, const srv_llm_params *p,
                                 srv_llm_emit_fn emit, void *user, srv_llm_req **out, inf_error *err) {
    *out = NULL;
    srv_llm_req *r = calloc(1, sizeof *r);
    if (!r) return inf_error_set(err, INF_ENOMEM, "out of memory");
    pthread_mutex_init(&r->lock, NULL);
    atomic_init(&r->refs, 2);
    r->p = *p;
    r->emit = emit;
    r->user = user;
    r->n_prompt = n_prompt;
    r->t_arrive_ns = inf__serve_now_ns();
    r->prompt = malloc((size_t)n_prompt * sizeof *r->prompt);
    int oom = !r->prompt;
    for (int i = 0; i < p->n_stop && i < LLM_MAX_STOP && !oom; i++) {
        r->stops[i] = strdup(p->stop[i]);
        oom = !r->stops[i];
        if (!oom && strlen(r->stops[i]) > r->max_stop_len) r->max_stop_len = strlen(r->stops[i]);
        r->p.stop[i] = NULL;
    }
    inf_llm_sampling s;
    inf_llm_sampling_init(&s);
    s.temperature = p->temperature;
    s.top_k = p->top_k;
    s.top_p = p->top_p;
    s.seed = p->seed;
    if (oom || inf_llm_sampler_new(&s, l->n_vocab, &r->sampler, err) != INF_OK) {
        req_free(r);
        return oom ? inf_error_set(err, INF_ENOMEM, "out of memory") : INF_ENOMEM;
    }
    memcpy(r->prompt, prompt, (size_t)n_prompt * sizeof *prompt);
    pthread_mutex_lock(&l->lock);
    if (l->stop || l->n_waiting >= l->max_queue) {
        int stopping = l->stop;
        pthread_mutex_unlock(&l->lock);
        req_free(r);
        if (stopping) return inf_error_set(err, INF_EBUSY, "model '%s' is shutting down", l->name);
        return inf_error_set(err, INF_EBUSY,
                             "model '%s': %d requests are already waiting for one of %d slots (--llm-queue); "
                             "retry later",
                             l->name, l->max_queue, l->n_slots);
    }
    if (l->tail) l->tail->next = r;
    else l->head = r;
    l->tail = r;
    l->n_waiting++;
    atomic_fetch_add(&l->waiting, 1);
    pthread_cond_signal(&l->wake);
    pthread_mutex_unlock(&l->lock);
    *out = r;
    return INF_OK;
}

/* ---- models -------------------------------------------------------------------- */

static void llm_free(srv_llm *l) {
    if (!l) return;
    for (int i = 0; l->slots && i < l->n_slots; i++) inf_llm_context_free(l->slots[i].ctx);
    inf_llm_context_free(l->embed_ctx);
    inf_llm_context_free(l->batch);
    free(l->step_ctx);
    free(l->step_tok);
    free(l->step_slot);
    free(l->slots);
    free(l->eog);
    free(l->chat_template);
    inf_tokenizer_free(l->tok);
    inf_llm_model_free(l->model);
    pthread_mutex_destroy(&l->lock);
    pthread_cond_destroy(&l->wake);
    pthread_cond_destroy(&l->idle);
    free(l);
}

srv_llm *inf__serve_llm_acquire(srv_server *srv, const char *name) {
    pthread_mutex_lock(&srv->llm_lock);
    srv_llm *l = srv->llms;
    while (l && strcmp(l->name, name)) l = l->next;
    if (l) atomic_fetch_add(&l->refs, 1);
    pthread_mutex_unlock(&srv->llm_lock);
    return l;
}

void inf__serve_llm_ref(srv_llm *l) {
    if (l) atomic_fetch_add(&l->refs, 1);
}

void inf__serve_llm_release(srv_llm *l) {
    if (!l || atomic_fetch_sub(&l->refs, 1) != 1) return;
    if (l->thread_started) { /* not reached through remove (which joins first); kept safe */
        pthread_mutex_lock(&l->lock);
        l->stop = 1;
        pthread_cond_signal(&l->wake);
        pthread_mutex_unlock(&l->lock);
        pthread_join(l->thread, NULL);
    }
    llm_free(l);
}

const char *inf__serve_llm_ref_of(const srv_llm *l) { return l->ref; }
void inf__serve_llm_set_ref(srv_llm *l, const char *ref) { inf__serve_copy_str(l->ref, sizeof l->ref, ref); }

inf_status inf__serve_llm_remove(srv_server *srv, const char *name, inf_error *err) {
    pthread_mutex_lock(&srv->llm_lock);
    srv_llm **pp = &srv->llms;
    while (*pp && strcmp((*pp)->name, name)) pp = &(*pp)->next;
    srv_llm *l = *pp;
    if (l) *pp = l->next;
    pthread_mutex_unlock(&srv->llm_lock);
    if (!l) return inf_error_set(err, INF_ENOENT, "no generative model named '%s'", name);
    /* in-flight generations (queued ones too) and embeddings finish first */
    pthread_mutex_lock(&l->lock);
    l->removing = 1;
    pthread_cond_signal(&l->wake);
    for (;;) {
        int busy = l->head != NULL || l->embeds != NULL;
        for (int i = 0; i < l->n_slots && !busy; i++) busy = l->slots[i].req != NULL;
        if (!busy) break;
        pthread_cond_wait(&l->idle, &l->lock);
    }
    l->stop = 1;
    pthread_cond_signal(&l->wake);
    pthread_mutex_unlock(&l->lock);
    if (l->thread_started) {
        pthread_join(l->thread, NULL);
        l->thread_started = 0;
    }
    if (l->audit) atomic_store(&l->audit->loaded, 0);
    fprintf(stderr, "infera serve: unloaded generative model '%s' (%s)\n", l->name, l->ref);
    inf__serve_llm_release(l);
    return INF_OK;
}

int inf__serve_llm_count(srv_server *srv) {
    int n = 0;
    pthread_mutex_lock(&srv->llm_lock);
    for (srv_llm *l = srv->llms; l; l = l->next) n++;
    pthread_mutex_unlock(&srv->llm_lock);
    return n;
}

int inf__serve_llm_ready(srv_server *srv, const char *name, const char *version) {
    srv_llm *l = inf__serve_llm_acquire(srv, name);
    if (!l)
        return 0;
    char v[32];
    snprintf(v, sizeof v, "%lld", (long long)(l->registry_version > 0 ? l->registry_version : 1)); /* a file: "1" */
    int ready = !version || !*version || !strcmp(version, v);
    inf__serve_llm_release(l);
    return ready;
}

int inf__serve_ready(srv_server *srv) {
    return !atomic_load(&srv->draining) && inf__serve_models_all_ready(srv->models) &&
           inf__serve_models_n_loaded(srv->models) + inf__serve_llm_count(srv) > 0;
}

void inf__serve_llm_index_json(srv_server *srv, srv_buf *out, int *first) {
    pthread_mutex_lock(&srv->llm_lock);
    for (srv_llm *l = srv->llms; l; l = l->next) {
        if (!*first) inf__serve_buf_put(out, ",", 1);
        *first = 0;
        inf__serve_buf_puts(out, "{\"name\":");
        inf__serve_buf_json_str(out, l->name, strlen(l->name));
        if (l->registry_version > 0) inf__serve_buf_printf(out, ",\"version\":\"%lld\"", (long long)l->registry_version);
        inf__serve_buf_puts(out, ",\"state\":\"READY\",\"reason\":\"\",\"kind\":\"gguf\"}");
    }
    pthread_mutex_unlock(&srv->llm_lock);
}

inf_status inf__serve_llm_add(srv_server *srv, const char *name, const char *path, const char *registry_name,
                              int64_t registry_version, inf_error *err) {
    if (inf__serve_llm_find(srv, name)) return inf_error_set(err, INF_EEXIST, "a model named '%s' is already served", name);
    srv_llm *l = calloc(1, sizeof *l);
    if (!l) return inf_error_set(err, INF_ENOMEM, "out of memory");
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->wake, NULL);
    pthread_cond_init(&l->idle, NULL);
    atomic_init(&l->refs, 1);
    inf__serve_copy_str(l->name, sizeof l->name, name);
    inf__serve_copy_str(l->ref, sizeof l->ref, path);
    inf__serve_copy_str(l->registry_name, sizeof l->registry_name, registry_name);
    l->registry_version = registry_version;
    l->n_slots = srv->opt.llm_slots > 0 ? srv->opt.llm_slots : 4;
    l->max_queue = srv->opt.llm_queue > 0 ? srv->opt.llm_queue : 64;
    inf_status st = inf_llm_model_load(path, &l->model, err);
    if (st == INF_OK) st = inf_tokenizer_load(path, &l->tok, err);
    if (st == INF_OK && inf_tokenizer_n_vocab(l->tok) != inf_llm_model_get_info(l->model)->n_vocab)
        st = inf_error_set(err, INF_EMODEL, "%s: the tokenizer has %d tokens, the model's embedding %d", path,
                           inf_tokenizer_n_vocab(l->tok), inf_llm_model_get_info(l->model)->n_vocab);
    if (st != INF_OK) {
        llm_free(l);
        return st;
    }
    l->n_vocab = inf_tokenizer_n_vocab(l->tok);
    size_t tl = 0;
    const char *tpl = inf_llm_model_meta_str(l->model, "tokenizer.chat_template", &tl);
    l->eog = calloc((size_t)l->n_vocab, 1);
    l->chat_template = malloc(tl + 1);
    l->slots = calloc((size_t)l->n_slots, sizeof *l->slots);
    l->step_ctx = calloc((size_t)l->n_slots, sizeof *l->step_ctx);
    l->step_tok = calloc((size_t)l->n_slots, sizeof *l->step_tok);
    l->step_slot = calloc((size_t)l->n_slots, sizeof *l->step_slot);
    if (!l->eog || !l->chat_template || !l->slots || !l->step_ctx || !l->step_tok || !l->step_slot) {
        llm_free(l);
        return inf_error_set(err, INF_ENOMEM, "out of memory");
    }
    if (tl) memcpy(l->chat_template, tpl, tl);
    l->chat_template[tl] = 0;
    for (int32_t id = 0; id < l->n_vocab; id++) l->eog[id] = inf_tokenizer_is_eog(l->tok, id);
    inf_llm_context_options co;
    inf_llm_context_options_init(&co);
    co.n_ctx = srv->opt.llm_ctx;
    co.n_threads = srv->opt.threads > 0 ? srv->opt.threads : 1;
    for (int i = 0; i < l->n_slots && st == INF_OK; i++) st = inf_llm_context_new(l->model, &co, &l->slots[i].ctx, err);
    const char *schedule = getenv("INFERA_LLM_SCHEDULE");
    l->round_robin = schedule && !strcmp(schedule, "round-robin");
    if (st == INF_OK && !l->round_robin) { /* the batched step's scratch: one row per slot, KV rows as buffers */
        inf_llm_context_options bo = co;
        bo.n_ctx = bo.n_batch = bo.n_logits = l->n_slots;
        st = inf_llm_context_new(l->model, &bo, &l->batch, err);
    }
    if (st != INF_OK) {
        llm_free(l);
        return st;
    }
    l->n_ctx = inf_llm_context_n_ctx(l->slots[0].ctx);
    if (registry_version > 0) { /* generations are audited like predictions (one row each) */
        char version[32];
        snprintf(version, sizeof version, "%lld", (long long)registry_version);
        l->audit = inf__serve_metrics_get(&srv->metrics, name, version);
        if (l->audit) {
            l->audit->registry_version = registry_version;
            inf__serve_copy_str(l->audit->registry_name, sizeof l->audit->registry_name, registry_name);
            atomic_store(&l->audit->loaded, 1);
        }
    }
    if (pthread_create(&l->thread, NULL, scheduler, l)) {
        llm_free(l);
        return inf_error_set(err, INF_ENOMEM, "cannot start the scheduler thread of model '%s'", name);
    }
    l->thread_started = 1;
    pthread_mutex_lock(&srv->llm_lock);
    srv_llm **tail = &srv->llms;
    while (*tail) tail = &(*tail)->next;
    *tail = l;
    pthread_mutex_unlock(&srv->llm_lock);
    return INF_OK;
}

srv_llm *inf__serve_llm_find(srv_server *srv, const char *name) {
    pthread_mutex_lock(&srv->llm_lock);
    srv_llm *l = srv->llms;
    while (l && strcmp(l->name, name)) l = l->next;
    pthread_mutex_unlock(&srv->llm_lock);
    return l;
}

const char *inf__serve_llm_name(const srv_llm *l) { return l->name; }
srv_model_metrics *inf__serve_llm_audit_metrics(const srv_llm *l) { return l->audit; }
const char *inf__serve_llm_registry_name(const srv_llm *l) { return l->registry_name; }
const char *inf__serve_llm_chat_template(const srv_llm *l) { return l->chat_template; }
int inf__serve_llm_n_ctx(const srv_llm *l) { return l->n_ctx; }
int64_t inf__serve_llm_registry_version(const srv_llm *l) { return l->registry_version; }
const struct inf_tokenizer *inf__serve_llm_tokenizer(const srv_llm *l) { return l->tok; }

int inf__serve_llm_list_json(srv_server *srv, const char *only, srv_buf *out) {
    pthread_mutex_lock(&srv->llm_lock);
    int first = 1;
    for (srv_llm *l = srv->llms; l; l = l->next) {
        if (only && strcmp(only, l->name)) continue;
        if (!first) inf__serve_buf_puts(out, ",");
        first = 0;
        inf__serve_buf_puts(out, "{\"id\":");
        inf__serve_buf_json_str(out, l->name, strlen(l->name));
        inf__serve_buf_printf(out, ",\"object\":\"model\",\"created\":0,\"owned_by\":\"infera\",\"max_model_len\":%d}",
                              l->n_ctx);
    }
    pthread_mutex_unlock(&srv->llm_lock);
    return !first;
}

void inf__serve_llm_shutdown(srv_server *srv) {
    pthread_mutex_lock(&srv->llm_lock);
    for (srv_llm *l = srv->llms; l; l = l->next) {
        pthread_mutex_lock(&l->lock);
        l->stop = 1;
        pthread_cond_signal(&l->wake);
        pthread_mutex_unlock(&l->lock);
    }
    for (srv_llm *l = srv->llms; l; l = l->next)
        if (l->thread_started) {
            pthread_join(l->thread, NULL);
            l->thread_started = 0;
        }
    pthread_mutex_unlock(&srv->llm_lock);
}

void inf__serve_llm_free_all(srv_server *srv) {
    inf__serve_llm_shutdown(srv);
    srv_llm *l = srv->llms;
    srv->llms = NULL;
    while (l) { /* the list's reference; requests still holding one free it last */
        srv_llm *next = l->next;
        inf__serve_llm_release(l);
        l = next;
    }
}

/* ---- metrics ------------------------------------------------------------------- */

static void label(srv_buf *o, const srv_llm *l) {
    inf__serve_buf_puts(o, "{model_name=");
    inf__serve_buf_json_str(o, l->name, strlen(l->name));
}

static void render_hist(srv_buf *o, srv_llm *head, const char *name, const char *help, size_t offset) {
    inf__serve_buf_printf(o, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    for (srv_llm *l = head; l; l = l->next) {
        llm_hist *h = (llm_hist *)((char *)l + offset);
        uint64_t cum = 0;
        for (int i = 0; i <= LLM_N_TIME_BOUNDS; i++) {
            cum += atomic_load(&h->counts[i]);
            inf__serve_buf_printf(o, "%s_bucket", name);
            label(o, l);
            if (i < LLM_N_TIME_BOUNDS) inf__serve_buf_printf(o, ",le=\"%g\"} %llu\n", time_bounds[i], (unsigned long long)cum);
            else inf__serve_buf_printf(o, ",le=\"+Inf\"} %llu\n", (unsigned long long)cum);
        }
        inf__serve_buf_printf(o, "%s_sum", name);
        label(o, l);
        inf__serve_buf_printf(o, "} %.6f\n%s_count", (double)atomic_load(&h->sum_ns) / 1e9, name);
        label(o, l);
        inf__serve_buf_printf(o, "} %llu\n", (unsigned long long)atomic_load(&h->count));
    }
}

/* Sequences per decode step (vLLM's iteration_tokens_total: tokens one
 * engine step decoded); a prompt is not counted. */
static void render_batch_hist(srv_buf *o, srv_llm *head) {
    const char *name = "vllm:iteration_tokens_total";
    inf__serve_buf_printf(o, "# HELP %s Sequences decoded together in one decode step\n# TYPE %s histogram\n", name,
                          name);
    for (srv_llm *l = head; l; l = l->next) {
        uint64_t cum = 0;
        for (int i = 0; i <= LLM_N_BATCH_BOUNDS; i++) {
            cum += atomic_load(&l->batch_counts[i]);
            inf__serve_buf_printf(o, "%s_bucket", name);
            label(o, l);
            if (i < LLM_N_BATCH_BOUNDS) inf__serve_buf_printf(o, ",le=\"%d\"} %llu\n", batch_bounds[i], (unsigned long long)cum);
            else inf__serve_buf_printf(o, ",le=\"+Inf\"} %llu\n", (unsigned long long)cum);
        }
        inf__serve_buf_printf(o, "%s_sum", name);
        label(o, l);
        inf__serve_buf_printf(o, "} %llu\n%s_count", (unsigned long long)atomic_load(&l->batch_sum), name);
        label(o, l);
        inf__serve_buf_printf(o, "} %llu\n", (unsigned long long)atomic_load(&l->batch_steps));
    }
}

typedef struct { const char *name, *type, *help; size_t offset; int is_int; } scalar_row;

void inf__serve_llm_metrics_render(srv_server *srv, srv_buf *o) {
    static const scalar_row rows[] = {
        {"vllm:prompt_tokens_total", "counter", "Prompt tokens processed", offsetof(srv_llm, prompt_tokens), 0},
        {"vllm:generation_tokens_total", "counter", "Generation tokens produced", offsetof(srv_llm, generation_tokens), 0},
        {"vllm:num_requests_running", "gauge", "Sequences in a slot (being decoded)", offsetof(srv_llm, running), 1},
        {"vllm:num_requests_waiting", "gauge", "Requests waiting for a slot", offsetof(srv_llm, waiting), 1},
    };
    pthread_mutex_lock(&srv->llm_lock);
    if (!srv->llms) {
        pthread_mutex_unlock(&srv->llm_lock);
        return;
    }
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        inf__serve_buf_printf(o, "# HELP %s %s\n# TYPE %s %s\n", rows[r].name, rows[r].help, rows[r].name,
                              rows[r].type);
        for (srv_llm *l = srv->llms; l; l = l->next) {
            inf__serve_buf_puts(o, rows[r].name);
            label(o, l);
            long long v = rows[r].is_int ? (long long)atomic_load((_Atomic int *)((char *)l + rows[r].offset))
                                         : (long long)atomic_load((_Atomic uint64_t *)((char *)l + rows[r].offset));
            inf__serve_buf_printf(o, "} %lld\n", v);
        }
    }
    static const char *const reasons[3] = {"stop", "length", "abort"};
    inf__serve_buf_puts(o, "# HELP vllm:request_success_total Generations that finished, by finish reason (abort: the "
                           "client went away)\n# TYPE vllm:request_success_total counter\n");
    for (srv_llm *l = srv->llms; l; l = l->next)
        for (int k = 0; k < 3; k++) {
            inf__serve_buf_puts(o, "vllm:request_success_total");
            label(o, l);
            inf__serve_buf_printf(o, ",finished_reason=\"%s\"} %llu\n", reasons[k],
                                  (unsigned long long)atomic_load(&l->finished[k]));
        }
    render_hist(o, srv->llms, "vllm:time_to_first_token_seconds", "Time to first token (request arrival to first token)",
                offsetof(srv_llm, ttft));
    render_hist(o, srv->llms, "vllm:time_per_output_token_seconds", "Mean time per output token after the first",
                offsetof(srv_llm, tpot));
    render_hist(o, srv->llms, "vllm:e2e_request_latency_seconds", "Request latency, arrival to last token",
                offsetof(srv_llm, e2e));
    render_hist(o, srv->llms, "vllm:request_queue_time_seconds", "Time a request waited for a slot",
                offsetof(srv_llm, queue_time));
    render_batch_hist(o, srv->llms);
    pthread_mutex_unlock(&srv->llm_lock);
}
