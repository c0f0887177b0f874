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
 * --loop alt N: N rounds of a draft step then a target pass of --pass tokens (models in turn, as in speculative
 * decoding), then N rounds where each is measured after 8 runs of the same model in a row; prints
 * {"alt":{"draft_in_turn_ms","target_in_turn_ms","draft_in_row_ms","target_in_row_ms"}} (means; on a loaded
 * machine the longer in-row rounds are preempted more often, which cools the caches too).
 * --generate K1,K2,.. [--rounds R]: instead, the real thing in this process: inf_llm_generate of --tokens
 * greedy tokens (no stop token) with the target alone and with the draft at each K, R rounds interleaved
 * (alone, K1, K2, ...), thread CPU time; per K one line {"generate":{"k","alone_ms","spec_ms","speedup",
 * "acceptance","tokens"}} with the minimum over the rounds (and the medians).  K fixed; "aK" (e.g. a8,
 * INFERA_LLM_DRAFT_ADAPTIVE set for the run): generate.c's adaptive draft length with K at most ("k":"a8" in the line).  Unlike
 * the costs above, the two models then take turns in the caches, as they do in `infera generate --draft`.
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

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define MAX_KS 8
#define MAX_ROUNDS 64

/* inf_llm_generate alone and with the draft at each K of ks ("2,3,4"), rounds interleaved. */
static int generate_rounds(inf_llm_context *ct, inf_llm_context *cd, const int32_t *prompt, int n_prompt, int n_gen,
                           const char *ks, int rounds) {
    int K[MAX_KS], nk = 0;
    bool adaptive[MAX_KS] = {false};
    for (const char *p = ks; *p && nk < MAX_KS; p++) {
        if (*p == 'a') adaptive[nk] = true, p++;
        K[nk++] = atoi(p);
        while (p[1] && p[1] != ',')
            p++;
        if (p[1] == ',') p++;
    }
    if (rounds > MAX_ROUNDS) rounds = MAX_ROUNDS;
    static double t[MAX_KS + 1][MAX_ROUNDS];
    int prop[MAX_KS] = {0}, acc[MAX_KS] = {0}, made[MAX_KS + 1] = {0};
    const int32_t never = -1; /* no stop token: every run makes n_gen tokens */
    inf_llm_generate_options o;
    inf_llm_generate_options_init(&o);
    o.max_tokens = n_gen;
    o.sampling.temperature = 0;
    o.stop_ids = &never;
    o.n_stop_ids = 1;
    inf_error err;
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i <= nk; i++) {
            inf_llm_generate_stats st;
            o.draft_tokens = i ? K[i - 1] : 4;
            if (i && adaptive[i - 1])
                setenv("INFERA_LLM_DRAFT_ADAPTIVE", "1", 1);
            else
                unsetenv("INFERA_LLM_DRAFT_ADAPTIVE");
            double t0 = cpu_now();
            if (inf_llm_generate(ct, i ? cd : NULL, prompt, n_prompt, &o, NULL, NULL, &st, &err)) return die(&err);
            t[i][r] = (cpu_now() - t0) * 1e3;
            made[i] = st.completion_tokens;
            if (i) prop[i - 1] = st.draft_proposed, acc[i - 1] = st.draft_accepted;
        }
    for (int i = 0; i <= nk; i++)
        qsort(t[i], (size_t)rounds, sizeof(double), cmp_double);
    for (int i = 0; i < nk; i++)
        printf("{\"generate\":{\"k\":\"%s%d\",\"tokens\":%d,\"alone_ms\":%.3f,\"spec_ms\":%.3f,\"speedup\":%.3f,"
               "\"median_speedup\":%.3f,\"acceptance\":%.4f,\"rounds\":%d}}\n",
               adaptive[i] ? "a" : "", K[i], made[i + 1], t[0][0], t[i + 1][0], t[0][0] / t[i + 1][0],
               t[0][rounds / 2] / t[i + 1][rounds / 2], prop[i] ? (double)acc[i] / prop[i] : 0.0, rounds);
    (void)made;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: spec_trace TARGET.gguf DRAFT.gguf --prompt TEXT [--tokens N] [--reps R]\n");
        return 2;
    }
    const char *prompt = NULL;
    const char *loop = NULL;
    int n_gen = 256, reps = 3, loops = 0, loop_pass = 5, rounds = 5;
    const char *gen_ks = NULL;
    for (int i = 3; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--prompt"))
            prompt = argv[i + 1];
        else if (!strcmp(argv[i], "--tokens"))
            n_gen = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--pass"))
            loop_pass = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--generate"))
            gen_ks = argv[i + 1];
        else if (!strcmp(argv[i], "--rounds"))
            rounds = atoi(argv[i + 1]);
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
    int rc = 0;
    if (gen_ks) {
        rc = generate_rounds(ct, cd, seq, n_prompt, n_gen, gen_ks, rounds > 0 ? rounds : 1);
        goto done;
    }
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
    if (loop && !strcmp(loop, "alt")) { /* --loop alt N: draft step, target pass of --pass tokens, in turn */
        double td = 0, tt = 0, tds = 0, tts = 0;
        for (int mode = 0; mode < 2; mode++)
            for (int i = 0; i < loops; i++) { /* mode 0: in turn; mode 1: each model N times in a row */
                inf_llm_context_rewind(cd, mid, NULL);
                inf_llm_context_rewind(ct, mid, NULL);
                double t0 = cpu_now();
                inf_llm_context_eval(cd, seq + mid, 1, false, &ld, NULL);
                double t1 = cpu_now();
                if (mode == 1) {
                    for (int r = 0; r < 8; r++) {
                        inf_llm_context_rewind(cd, mid, NULL);
                        t0 = cpu_now();
                        inf_llm_context_eval(cd, seq + mid, 1, false, &ld, NULL);
                        t1 = cpu_now();
                    }
                    for (int r = 0; r < 8; r++) {
                        inf_llm_context_rewind(ct, mid, NULL);
                        inf_llm_context_eval(ct, seq + mid, loop_pass, loop_pass > 1, &lt, NULL);
                    }
                    inf_llm_context_rewind(ct, mid, NULL);
                }
                double t2 = cpu_now();
                inf_llm_context_eval(ct, seq + mid, loop_pass, loop_pass > 1, &lt, NULL);
                double t3 = cpu_now();
                if (mode == 0) td += t1 - t0, tt += t3 - t2;
                else tds += t1 - t0, tts += t3 - t2;
            }
        printf("{\"alt\":{\"pass\":%d,\"draft_in_turn_ms\":%.5f,\"target_in_turn_ms\":%.5f,\"draft_in_row_ms\":%.5f,"
               "\"target_in_row_ms\":%.5f}}\n", loop_pass, td / loops * 1e3, tt / loops * 1e3, tds / loops * 1e3,
               tts / loops * 1e3);
        goto done;
    }
    if (loop) {
        inf_llm_context *c = !strcmp(loop, "draft1") ? cd : ct;
        int np = !strcmp(loop, "targetN") ? loop_pass : 1;
        for (int i = 0; i < loops; i++) {
            inf_llm_context_rewind(c, mid, NULL);
            inf_llm_context_eval(c, seq + mid, np, np > 1, &lt, NULL);
        }
        goto done;
    }
    printf("{\"cost\":{\"position\":%d,\"target_step_ms\":%.5f,\"draft_step_ms\":%.5f,\"draft_pass2_ms\":%.5f,\"pass_"
           "ms\":[",
           mid, pass_ms(ct, seq, mid, 1, reps), pass_ms(cd, seq, mid, 1, reps), pass_ms(cd, seq, mid, 2, reps));
    for (int k = 1; k <= MAX_PASS; k++)
        printf("%s%.5f", k > 1 ? "," : "", pass_ms(ct, seq, mid, k, reps));
    printf("]}}\n");
done: /* every mode ends here: one release of what main made */
    inf_llm_context_free(ct);
    inf_llm_context_free(cd);
    inf_tokenizer_free(tok);
    inf_llm_model_free(mt);
    inf_llm_model_free(md);
    free(seq);
    return rc;
}
