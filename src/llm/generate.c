/*
 * generate.c -- the generation loop: prompt processing, decoding, and
 * speculative decoding with a draft model; token metrics.
 *
 * DESIGN (speculative step).  Invariant between steps: the target's cache
 * holds every token of the sequence except `cur`, the last one made; the
 * draft's cache lags by `pending` tokens (tokens the target accepted that
 * the draft has not seen).  A step:
 *   1. the draft evaluates pending + cur in one pass and proposes
 *      d1..dK, each sampled from its distribution q_i (kept);
 *   2. the target evaluates cur, d1..dK in one pass: rows p_0..p_K;
 *   3. d_i is accepted with probability min(1, p_{i-1}(d_i) / q_i(d_i));
 *      at the first rejection the next token is drawn from
 *      norm(max(0, p_{i-1} - q_i)), and when all K pass a bonus token is
 *      drawn from p_K.  Greedy sampling makes p and q one-hot, so this is
 *      "accept while the draft agrees with the target's argmax, then take the
 *      target's argmax": the output is the target's own.
 *   4. both caches are rewound past the rejected tokens.
 * K = draft_tokens, or, with INFERA_LLM_DRAFT_ADAPTIVE=1, adapted to the
 * draft (inf__llm_draft_k below) with draft_tokens its upper bound.
 * The buffers (K+1 target rows, K draft rows, a residual) are allocated once
 * per call, before the first token; the loop allocates nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "llm/llm_int.h"

/* Draft length per step.  A fixed K is a bet on the acceptance rate: too
 * short leaves the verification pass's cheap extra tokens unused, too long
 * pays draft steps and verified tokens after the first miss.  The loop keeps
 * alpha, the running probability that a proposal is accepted given that the
 * ones before it were (an exponential average over the proposals up to and
 * including each step's first rejection: the later ones say nothing), and
 * proposes the k <= K that maximises the expected tokens of a step,
 * E(k) = 1 + alpha + ... + alpha^k, over its cost in target decode steps,
 * 1 + SPEC_TOKEN_COST * k (a target pass of k + 1 tokens and k draft steps).
 * It uses no clock, so a seeded sampled run repeats itself exactly.  Opt-in
 * (INFERA_LLM_DRAFT_ADAPTIVE=1): on the committed pair it measured 0-8%
 * below the best fixed K = 4 (bench/llm/RESULTS.md, session 17), so the
 * default proposes draft_tokens every step. */
#define SPEC_TOKEN_COST 0.15 /* a verified token + a draft step, in target steps (bench/llm/RESULTS.md) */
#define SPEC_ALPHA_START 0.7
#define SPEC_ALPHA_WEIGHT 0.1

int inf__llm_draft_k(double alpha, int k_max) {
    int best = 1;
    double e = 1, p = 1, best_rate = 0;
    for (int k = 1; k <= k_max; k++) {
        p *= alpha;
        e += p;
        double rate = e / (1 + SPEC_TOKEN_COST * k);
        if (rate > best_rate) best_rate = rate, best = k;
    }
    return best;
}

/* alpha after a step whose k proposals had `accepted` accepted */
double inf__llm_draft_alpha(double alpha, int accepted, int k) {
    for (int i = 0; i < accepted; i++)
        alpha += SPEC_ALPHA_WEIGHT * (1 - alpha);
    if (accepted < k) alpha -= SPEC_ALPHA_WEIGHT * alpha;
    return alpha;
}

void inf_llm_generate_options_init(inf_llm_generate_options *o) {
    memset(o, 0, sizeof *o);
    o->max_tokens = 128;
    inf_llm_sampling_init(&o->sampling);
    o->draft_tokens = 4;
}

typedef struct gen {
    inf_llm_context *t, *d;
    const inf_llm_generate_options *o;
    inf_llm_token_fn on_token;
    void *user;
    inf_llm_generate_stats *stats;
    inf_llm_sampler *sampler;
    int n_vocab;
    double t0, t_first;
    bool done;
} gen;

static bool is_eog(const gen *g, int32_t tok) {
    if (g->o->stop_ids) {
        for (int i = 0; i < g->o->n_stop_ids; i++)
            if (g->o->stop_ids[i] == tok) return true;
        return false;
    }
    const inf_llm_model_info *I = &g->t->m->info;
    return tok == I->eos_id || tok == I->eot_id;
}

/* Hands a completion token to the caller; false when generation ends. */
static bool emit(gen *g, int32_t tok) {
    if (g->stats->completion_tokens == 0) g->t_first = inf__now_seconds();
    if (is_eog(g, tok)) {
        g->stats->stopped_by_eos = true;
        g->done = true;
        return false;
    }
    g->stats->completion_tokens++;
    if ((g->on_token && g->on_token(g->user, tok)) ||
        (g->o->max_tokens > 0 && g->stats->completion_tokens >= g->o->max_tokens))
        g->done = true;
    return !g->done;
}

static int32_t sample_probs(inf_llm_sampler *s, const float *p, int n) {
    double u = inf_llm_sampler_uniform(s), cum = 0, total = 0;
    for (int i = 0; i < n; i++) total += p[i];
    if (!(total > 0)) return 0;
    int32_t last = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] <= 0) continue;
        cum += p[i] / total;
        last = i;
        if (u < cum) return i;
    }
    return last;
}

static inf_status plain_loop(gen *g, int32_t cur, inf_error *err) {
    const float *logits;
    while (!g->done) {
        if (inf_llm_context_n_past(g->t) >= inf_llm_context_n_ctx(g->t)) break;
        inf_status st = inf_llm_context_eval(g->t, &cur, 1, false, &logits, err);
        if (st) return st;
        cur = inf_llm_sampler_sample(g->sampler, logits);
        emit(g, cur);
    }
    return INF_OK;
}

static inf_status speculative_loop(gen *g, int32_t cur, const int32_t *prompt, int n_prompt, inf_error *err) {
    inf_llm_context *T = g->t, *D = g->d;
    const bool fixed = getenv("INFERA_LLM_DRAFT_ADAPTIVE") == NULL;
    int K = g->o->draft_tokens > 0 ? g->o->draft_tokens : 4;
    if (K + 1 > T->n_logits) K = T->n_logits - 1;
    /* the adaptive length stays within the passes the target verifies in one call per weight block */
    int k_max = fixed || K + 1 <= inf__llm_context_pass_tokens(T) ? K : inf__llm_context_pass_tokens(T) - 1;
    int V = g->n_vocab;
    const bool greedy = g->o->sampling.temperature == 0;
    size_t cap = (size_t)n_prompt + (size_t)K + 2;
    int32_t *pending = inf__malloc(cap * sizeof *pending), *batch = inf__malloc(((size_t)K + 1) * sizeof *batch);
    float *q = inf__malloc((size_t)K * V * sizeof *q), *p = inf__malloc((size_t)V * sizeof *p);
    inf_status st = INF_OK;
    if (!pending || !batch || !q || !p) {
        st = inf_error_set(err, INF_ENOMEM, "speculative decoding: no memory for %d draft rows of %d", K, V);
        goto done;
    }
    memcpy(pending, prompt, (size_t)n_prompt * sizeof *pending);
    int n_pending = n_prompt;
    const float *logits;
    double alpha = SPEC_ALPHA_START;
    while (!g->done) {
        int room = T->n_ctx - T->n_past - 1, droom = D->n_ctx - D->n_past - n_pending - 1;
        int k = fixed ? K : inf__llm_draft_k(alpha, k_max);
        if (k > room) k = room;
        if (k > droom) k = droom;
        if (g->o->max_tokens > 0 && k > g->o->max_tokens - g->stats->completion_tokens - 1)
            k = g->o->max_tokens - g->stats->completion_tokens - 1;
        if (k <= 0) { /* no room left to speculate: finish with the target alone */
            st = plain_loop(g, cur, err);
            goto done;
        }
        /* 1. the draft catches up (pending) and proposes k tokens */
        int t_base = T->n_past;
        if (INF_NEVER(D->n_past + n_pending != t_base)) {
            st = inf_error_set(err, INF_EINTERNAL, "speculative decoding: draft at %d + %d, target at %d", D->n_past,
                            n_pending, t_base);
            goto done;
        }
        pending[n_pending++] = cur;
        if ((st = inf_llm_context_eval(D, pending, n_pending, false, &logits, err))) goto done;
        n_pending = 0;
        batch[0] = cur;
        for (int i = 0; i < k; i++) {
            if (greedy) { /* q_i is one-hot at the draft's argmax: no distribution to keep */
                batch[i + 1] = inf_llm_sampler_sample(g->sampler, logits);
            } else {
                float *qi = q + (size_t)i * V;
                inf_llm_sampler_probs(g->sampler, logits, qi);
                batch[i + 1] = sample_probs(g->sampler, qi, V);
            }
            if (i + 1 < k && (st = inf_llm_context_eval(D, &batch[i + 1], 1, false, &logits, err))) goto done;
        }
        /* 2. the target checks cur, d1..dk */
        const float *rows;
        if ((st = inf_llm_context_eval(T, batch, k + 1, true, &rows, err))) goto done;
        g->stats->draft_proposed += k;
        /* 3. accept or resample */
        int accepted = 0;
        int32_t next = -1;
        /* greedy: p_i and q_i one-hot, so d_i passes iff it is the target's
         * argmax, and the residual at the first rejection is p_i: its argmax */
        for (int i = 0; greedy && i <= k && next < 0; i++) {
            int32_t best = inf_llm_sampler_sample(g->sampler, rows + (size_t)i * V);
            if (i < k && best == batch[i + 1])
                accepted++;
            else
                next = best;
        }
        for (int i = 0; !greedy && i < k; i++) {
            inf_llm_sampler_probs(g->sampler, rows + (size_t)i * V, p);
            const float *qi = q + (size_t)i * V;
            int32_t di = batch[i + 1];
            double ratio = qi[di] > 0 ? (double)p[di] / qi[di] : 0;
            if (ratio >= 1 || inf_llm_sampler_uniform(g->sampler) < ratio) {
                accepted++;
                continue;
            }
            /* the residual; when rounding leaves nothing of it (p == q), p itself */
            double mass = 0;
            for (int v = 0; v < V; v++) mass += p[v] > qi[v] ? p[v] - qi[v] : 0;
            if (mass > 0)
                for (int v = 0; v < V; v++) p[v] = p[v] > qi[v] ? p[v] - qi[v] : 0;
            next = sample_probs(g->sampler, p, V);
            break;
        }
        if (next < 0) next = inf_llm_sampler_sample(g->sampler, rows + (size_t)k * V);
        g->stats->draft_accepted += accepted;
        alpha = inf__llm_draft_alpha(alpha, accepted, k);
        /* 4. roll back: the target keeps cur + the accepted drafts; the draft
         *    (cur, d1..d(k-1)) the same, and learns d_k later if it was kept */
        int keep = t_base + 1 + accepted;
        inf_llm_context_rewind(T, keep, NULL);
        inf_llm_context_rewind(D, D->n_past < keep ? D->n_past : keep, NULL);
        for (int pos = D->n_past; pos < keep; pos++) pending[n_pending++] = batch[pos - t_base];
        for (int i = 0; i < accepted && !g->done; i++) emit(g, batch[i + 1]);
        if (g->done) break;
        cur = next;
        emit(g, cur);
    }
done:
    inf__free(pending);
    inf__free(batch);
    inf__free(q);
    inf__free(p);
    return st;
}

inf_status inf_llm_generate(inf_llm_context *target, inf_llm_context *draft, const int32_t *prompt, int n_prompt,
                            const inf_llm_generate_options *o, inf_llm_token_fn on_token, void *user,
                            inf_llm_generate_stats *stats, inf_error *err) {
    inf_llm_generate_options dflt;
    inf_llm_generate_stats local;
    if (!o) inf_llm_generate_options_init(&dflt), o = &dflt;
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    const inf_llm_model_info *I = &target->m->info;
    if (n_prompt <= 0) return inf_error_set(err, INF_EINVAL, "%s: empty prompt (no tokens)", I->path);
    if (draft && draft->m->info.n_vocab != I->n_vocab)
        return inf_error_set(err, INF_EINVAL, "draft %s has %d tokens in its vocabulary, the target %s %d",
                          draft->m->info.path, draft->m->info.n_vocab, I->path, I->n_vocab);
    if (n_prompt >= target->n_ctx)
        return inf_error_set(err, INF_ERANGE, "%s: prompt of %d tokens does not fit the context of %d", I->path, n_prompt,
                          target->n_ctx);
    gen g = {target, draft, o, on_token, user, stats, NULL, I->n_vocab, 0, 0, false};
    inf_status st = inf_llm_sampler_new(&o->sampling, I->n_vocab, &g.sampler, err);
    if (st) return st;
    inf_llm_context_rewind(target, 0, NULL);
    if (draft) inf_llm_context_rewind(draft, 0, NULL);
    stats->prompt_tokens = n_prompt;
    g.t0 = inf__now_seconds();
    const float *logits;
    if ((st = inf_llm_context_eval(target, prompt, n_prompt, false, &logits, err))) goto done;
    stats->prompt_ms = (inf__now_seconds() - g.t0) * 1e3;
    int32_t cur = inf_llm_sampler_sample(g.sampler, logits);
    if (o->max_tokens >= 0 && emit(&g, cur)) {
        if (draft && (n_prompt + 2 < draft->n_ctx))
            st = speculative_loop(&g, cur, prompt, n_prompt, err);
        else
            st = plain_loop(&g, cur, err);
    }
    double t_end = inf__now_seconds();
    if (stats->completion_tokens > 0 || stats->stopped_by_eos) stats->ttft_ms = (g.t_first - g.t0) * 1e3;
    if (stats->completion_tokens > 1) {
        stats->tpot_ms = (t_end - g.t_first) * 1e3 / (stats->completion_tokens - 1);
        stats->tokens_per_s = stats->tpot_ms > 0 ? 1000.0 / stats->tpot_ms : 0;
    }
done:
    inf_llm_sampler_free(g.sampler);
    return st;
}
