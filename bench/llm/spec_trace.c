/*
 * spec_trace.c -- what speculative decoding of a (target, draft) pair can
 * gain, measured once and simulated offline (bench/llm/spec_sim.py).
 *
 * Greedy speculation is deterministic: the output is the target's greedy
 * sequence x_1..x_N, and a proposal at position i is the draft's argmax d_i
 * given the prompt and x_1..x_{i-1} (an accepted proposal equals x_i, so the
 * draft never sees anything else).  So one lock-step run of both models over
 * the target's sequence records everything a drafting policy depends on:
 * per position the draft's argmax, its probability (softmax of the draft's
 * logits) and whether it equals the target's token.  The costs come from the
 * same contexts: a draft step, a target step and a target pass of n = 2..12
 * tokens (all logits), in the thread's CPU time, at the sequence's middle.
 *
 * usage: spec_trace TARGET.gguf DRAFT.gguf --prompt TEXT [--tokens N] [--reps R] [--loop WHAT N]
 * --loop target1|targetN|draft1 N: after the trace, N more target steps, target passes of --pass tokens,
 * or draft steps at the middle position (something steady for `perf record`); prints nothing more.
 * Prints JSON lines: {"pos","target","draft","p"} per position, then
 * {"cost":{"target_step_ms","draft_step_ms","draft_pass2_ms","pass_ms":[n=1..12]}}.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "infera/llm.h"
#include "infera/tokenizer.h"

#define MAX_PASS 12

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int argmax(const float *l, int n, float *p_top) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (l[i] > l[best]) best = i;
    double s = 0;
    for (int i = 0; i < n; i++)
        s += exp((double)l[i] - l[best]);
    *p_top = (float)(1.0 / s);
    return best;
}

static int die(const inf_error *err) {
    fprintf(stderr, "spec_trace: %s\n", err->message);
    return 1;
}

/* Best CPU time of `reps` x 40 passes of n tokens at position pos. */
static double pass_ms(inf_llm_context *c, const int32_t *seq, int pos, int n, int reps) {
    const float *l;
    double best = 1e30;
    for (int r = 0; r < reps + 1; r++) {
        double t0 = cpu_now();
        for (int i = 0; i < 40; i++) {
            inf_llm_context_rewind(c, pos, NULL);
            inf_llm_context_eval(c, seq + pos, n, n > 1, &l, NULL);
        }
        double t = (cpu_now() - t0) / 40 * 1e3;
        if (r > 0 && t < best) best = t;
    }
    return best;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: spec_trace TARGET.gguf DRAFT.gguf --prompt TEXT [--tokens N] [--reps R]\n");
        return 2;
    }
    const char *prompt = NULL;
    const char *loop = NULL;
    int n_gen = 256, reps = 3, loops = 0, loop_pass = 5;
    for (int i = 3; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--prompt"))
            prompt = argv[i + 1];
        else if (!strcmp(argv[i], "--tokens"))
            n_gen = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--pass"))
            loop_pass = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--loop") && i + 2 < argc)
            loop = argv[i + 1], loops = atoi(argv[i + 2]), i++;
    }
    if (!prompt || n_gen < 16 || reps < 1 || loop_pass < 1 || loop_pass > MAX_PASS) {
        fprintf(stderr, "spec_trace: --prompt TEXT needed; --tokens >= 16, --reps >= 1, --pass 1..12\n");
        return 2;
    }
    inf_error err;
    inf_llm_model *mt, *md;
    inf_tokenizer *tok;
    if (inf_llm_model_load(argv[1], &mt, &err) || inf_llm_model_load(argv[2], &md, &err) ||
        inf_tokenizer_load(argv[1], &tok, &err))
        return die(&err);
    int cap = (int)strlen(prompt) + 8;
    size_t n_out = 0;
    int32_t *seq = malloc(sizeof(int32_t) * (size_t)(cap + n_gen + MAX_PASS + 1));
    if (!seq) return 1;
    if (inf_tokenizer_encode(tok, prompt, strlen(prompt), true, seq, (size_t)cap, &n_out, &err)) return die(&err);
    int n_prompt = (int)n_out;
    inf_llm_context_options o;
    inf_llm_context_options_init(&o);
    o.n_ctx = n_prompt + n_gen + MAX_PASS + 2;
    o.n_logits = MAX_PASS;
    inf_llm_context *ct, *cd;
    if (inf_llm_context_new(mt, &o, &ct, &err) || inf_llm_context_new(md, &o, &cd, &err)) return die(&err);
    const int V = inf_llm_model_get_info(mt)->n_vocab;
    const float *lt, *ld;
    if (inf_llm_context_eval(ct, seq, n_prompt, false, &lt, &err) ||
        inf_llm_context_eval(cd, seq, n_prompt, false, &ld, &err))
        return die(&err);
    int n = n_prompt;
    for (int i = 0; i < n_gen; i++) {
        float pt, pd;
        int32_t x = argmax(lt, V, &pt), d = argmax(ld, V, &pd);
        printf("{\"pos\":%d,\"target\":%d,\"draft\":%d,\"p\":%.5f}\n", i, x, d, pd);
        seq[n++] = x;
        if (inf_llm_context_eval(ct, &x, 1, false, &lt, &err) || inf_llm_context_eval(cd, &x, 1, false, &ld, &err))
            return die(&err);
    }
    for (int i = 0; i < MAX_PASS; i++)
        seq[n + i] = seq[n_prompt + i]; /* tokens for the passes past the end */
    int mid = n_prompt + n_gen / 2;
    if (loop) {
        inf_llm_context *c = !strcmp(loop, "draft1") ? cd : ct;
        int np = !strcmp(loop, "targetN") ? loop_pass : 1;
        for (int i = 0; i < loops; i++) {
            inf_llm_context_rewind(c, mid, NULL);
            inf_llm_context_eval(c, seq + mid, np, np > 1, &lt, NULL);
        }
        return 0;
    }
    printf("{\"cost\":{\"position\":%d,\"target_step_ms\":%.5f,\"draft_step_ms\":%.5f,\"draft_pass2_ms\":%.5f,\"pass_"
           "ms\":[",
           mid, pass_ms(ct, seq, mid, 1, reps), pass_ms(cd, seq, mid, 1, reps), pass_ms(cd, seq, mid, 2, reps));
    for (int k = 1; k <= MAX_PASS; k++)
        printf("%s%.5f", k > 1 ? "," : "", pass_ms(ct, seq, mid, k, reps));
    printf("]}}\n");
    inf_llm_context_free(ct);
    inf_llm_context_free(cd);
    inf_tokenizer_free(tok);
    inf_llm_model_free(mt);
    inf_llm_model_free(md);
    free(seq);
    return 0;
}
