/*
 * sample.c -- from logits to a token: greedy, or temperature + top-k +
 * top-p over a seeded generator (xoshiro256** seeded by splitmix64).
 *
 * DESIGN: the sampler owns candidate buffers sized for the vocabulary, so
 * sampling allocates nothing.  The distribution is computed in the order
 * Hugging Face applies the warpers: logits / temperature, keep the top_k
 * largest, softmax, keep the smallest set whose mass reaches top_p, renormalise.
 * inf_llm_sampler_probs exposes that distribution (speculative decoding's
 * acceptance test needs it); greedy is its one-hot limit.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "llm/llm_int.h"

typedef struct cand {
    float logit;
    int32_t id;
} cand;

struct inf_llm_sampler {
    inf_llm_sampling s;
    int n_vocab;
    cand *c;
    uint64_t rng[4];
};

void inf_llm_sampling_init(inf_llm_sampling *s) {
    s->temperature = 0;
    s->top_k = 40;
    s->top_p = 0.95f;
    s->seed = 0;
}

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static uint64_t next_u64(uint64_t *s) {
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0], s[3] ^= s[1], s[1] ^= s[2], s[0] ^= s[3], s[2] ^= t, s[3] = rotl(s[3], 45);
    return r;
}

double inf_llm_sampler_uniform(inf_llm_sampler *s) { return (double)(next_u64(s->rng) >> 11) * 0x1.0p-53; }

inf_status inf_llm_sampler_new(const inf_llm_sampling *p, int n_vocab, inf_llm_sampler **out, inf_error *err) {
    *out = NULL;
    if (n_vocab <= 0 || !(p->temperature >= 0) || p->top_k < 0 || !(p->top_p > 0 && p->top_p <= 1))
        return inf_error_set(err, INF_EINVAL,
                          "sampling: temperature %g must be >= 0, top_k %d >= 0, top_p %g in (0, 1]",
                          p->temperature, p->top_k, p->top_p);
    inf_llm_sampler *s = inf__calloc(1, sizeof *s);
    if (!s || !(s->c = inf__malloc((size_t)n_vocab * sizeof *s->c))) {
        inf__free(s);
        return inf_error_set(err, INF_ENOMEM, "sampling: no memory for %d candidates", n_vocab);
    }
    s->s = *p;
    s->n_vocab = n_vocab;
    uint64_t x = p->seed;
    for (int i = 0; i < 4; i++) s->rng[i] = splitmix64(&x);
    *out = s;
    return INF_OK;
}

void inf_llm_sampler_free(inf_llm_sampler *s) {
    if (!s) return;
    inf__free(s->c);
    inf__free(s);
}

static int32_t argmax(const float *x, int n) {
    int32_t best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

static int by_logit_desc(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->logit != y->logit) return x->logit < y->logit ? 1 : -1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Min-heap sift-down on logit (ties: larger id is "smaller", so lower ids win). */
static bool heap_less(const cand *a, const cand *b) { return a->logit < b->logit || (a->logit == b->logit && a->id > b->id); }
static void sift_down(cand *h, int n, int i) {
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && heap_less(&h[l], &h[m])) m = l;
        if (r < n && heap_less(&h[r], &h[m])) m = r;
        if (m == i) return;
        cand t = h[i];
        h[i] = h[m], h[m] = t, i = m;
    }
}

/* The candidates after top-k and top-p, with probabilities in .logit,
 * sorted by probability (descending); returns their count. */
static int candidates(inf_llm_sampler *s, const float *logits) {
    int n = s->n_vocab, k = s->s.top_k > 0 && s->s.top_k < n ? s->s.top_k : n;
    cand *c = s->c;
    if (k < n) { /* the k largest through a min-heap */
        for (int i = 0; i < k; i++) c[i] = (cand){logits[i], i};
        for (int i = k / 2 - 1; i >= 0; i--) sift_down(c, k, i);
        for (int i = k; i < n; i++)
            if (heap_less(&c[0], &(cand){logits[i], i})) {
                c[0] = (cand){logits[i], i};
                sift_down(c, k, 0);
            }
    } else {
        for (int i = 0; i < n; i++) c[i] = (cand){logits[i], i};
    }
    qsort(c, (size_t)k, sizeof *c, by_logit_desc);
    float inv_t = 1.0f / s->s.temperature, mx = c[0].logit;
    double sum = 0;
    for (int i = 0; i < k; i++) sum += c[i].logit = expf((c[i].logit - mx) * inv_t);
    int kept = k;
    double cum = 0;
    for (int i = 0; i < k; i++) {
        cum += c[i].logit / sum;
        if (cum >= s->s.top_p) {
            kept = i + 1;
            break;
        }
    }
    double kept_sum = 0;
    for (int i = 0; i < kept; i++) kept_sum += c[i].logit;
    for (int i = 0; i < kept; i++) c[i].logit = (float)(c[i].logit / kept_sum);
    return kept;
}

void inf_llm_sampler_probs(inf_llm_sampler *s, const float *logits, float *probs) {
    memset(probs, 0, (size_t)s->n_vocab * sizeof *probs);
    if (s->s.temperature == 0) {
        probs[argmax(logits, s->n_vocab)] = 1;
        return;
    }
    int n = candidates(s, logits);
    for (int i = 0; i < n; i++) probs[s->c[i].id] = s->c[i].logit;
}

int32_t inf_llm_sampler_sample(inf_llm_sampler *s, const float *logits) {
    if (s->s.temperature == 0) return argmax(logits, s->n_vocab);
    int n = candidates(s, logits);
    double u = inf_llm_sampler_uniform(s), cum = 0;
    for (int i = 0; i < n; i++) {
        cum += s->c[i].logit;
        if (u < cum) return s->c[i].id;
    }
    return s->c[n - 1].id;
}
