/*
 * context.c -- one sequence on a model: the KV cache, the scratch buffers,
 * the thread pool, and the forward pass of the llama decoder.
 *
 * DESIGN: everything a forward pass touches is allocated in
 * inf_llm_context_new, sized for n_batch tokens at a time and n_ctx
 * positions, so inf_llm_context_eval allocates nothing.  A pass over n
 * tokens at positions p..p+n-1 (n = 1 is decoding, n > 1 prompt processing
 * or speculative verification) per layer:
 *   xb = rmsnorm(x) * attn_norm;  q,k,v = xb W{q,k,v}  (k, v straight into
 *   the cache);  RoPE on q and k;  causal attention of every (token, head)
 *   over the cached positions (attn.c: online softmax in blocks of 64 keys,
 *   grouped query heads share a kv head);  x += att Wo;  xb = rmsnorm(x) * ffn_norm;
 *   x += (act(xb Wgate) * (xb Wup)) Wdown   (act: silu, or gelu for gemma's GeGLU);
 * then logits = rmsnorm(x) * output_norm Woutput for the rows asked for.
 * Matrix products convert the activation rows once to the weight's
 * activation type (quant.h: q8_0 for q4_0/q8_0, as llama.cpp does) and split
 * the weight rows over the pool's threads; tokens are taken in blocks of 32
 * so the activations of a block stay in L1 while weight rows stream by.
 * Attention splits (token, head) pairs over the threads.
 * KV cache: per layer, [n_ctx][n_head_kv * head_dim] floats for K and for V.
 */
#include <math.h>
#include <string.h>

#include "llm/attn.h"
#include "llm/llm_int.h"
#include "llm/swiglu.h"

#define TOKEN_BLOCK 32
#define SMALL_PASS 8 /* tokens up to which a pass splits its jobs into one chunk per thread */
#define MAX_HEAD_DIM INF__LLM_MAX_HEAD_DIM


void inf_llm_context_options_init(inf_llm_context_options *o) {
    memset(o, 0, sizeof *o);
}

int inf_llm_context_n_ctx(const inf_llm_context *c) { return c->n_ctx; }
int inf_llm_context_n_past(const inf_llm_context *c) { return c->n_past; }
const inf_llm_model *inf_llm_context_model(const inf_llm_context *c) { return c->m; }

static void *scratch(size_t n_floats, bool *ok) {
    void *p = inf__aligned_alloc(n_floats * sizeof(float) + 64);
    if (!p) *ok = false;
    return p;
}

inf_status inf_llm_context_new(const inf_llm_model *m, const inf_llm_context_options *o, inf_llm_context **out,
                               inf_error *err) {
    *out = NULL;
    inf_llm_context_options d;
    inf_llm_context_options_init(&d);
    if (!o) o = &d;
    const inf_llm_model_info *I = &m->info;
    if (o->n_ctx < 0 || o->n_threads < 0 || o->n_batch < 0 || o->n_logits < 0)
        return inf_error_set(err, INF_EINVAL, "%s: negative context option", I->path);
    if (I->n_head_dim > MAX_HEAD_DIM)
        return inf_error_set(err, INF_EUNSUPPORTED, "%s: head size %d (at most %d)", I->path, I->n_head_dim, MAX_HEAD_DIM);
    inf_llm_context *c = inf__calloc(1, sizeof *c);
    if (!c) return inf_error_set(err, INF_ENOMEM, "%s: no memory for a context", I->path);
    c->m = m;
    c->n_ctx = o->n_ctx ? o->n_ctx : (I->n_ctx_train < 4096 ? I->n_ctx_train : 4096);
    c->n_batch = o->n_batch ? o->n_batch : 256;
    c->n_logits = o->n_logits ? o->n_logits : 16;
    if (c->n_logits > c->n_batch) c->n_logits = c->n_batch;
    c->n_threads = o->n_threads ? o->n_threads : 1;
    /* RoPE divisors: llama 3's, else LongRoPE's short or long factors by the context's size (as llama.cpp picks) */
    c->rope_freqs = m->rope_freqs                 ? m->rope_freqs
                    : c->n_ctx > m->rope_orig_ctx ? m->rope_factors_long
                                                  : m->rope_factors_short;
    size_t B = (size_t)c->n_batch, E = (size_t)I->n_embd, Qd = (size_t)I->n_head * I->n_head_dim,
           KVd = (size_t)I->n_head_kv * I->n_head_dim, F = (size_t)I->n_ff;
    size_t widest = E > F ? E : F;
    if (Qd > widest) widest = Qd;
    c->qx_cap = widest * sizeof(float);
    size_t cache = (size_t)I->n_layer * (size_t)c->n_ctx * KVd;
    if (c->n_ctx > (1 << 24) || cache / (size_t)c->n_ctx / KVd != (size_t)I->n_layer) {
        inf__free(c);
        return inf_error_set(err, INF_ERANGE, "%s: context of %d positions is too large", I->path, o->n_ctx);
    }
    bool ok = true;
    c->k_cache = scratch(cache, &ok);
    c->v_cache = scratch(cache, &ok);
    c->x = scratch(B * E, &ok);
    c->xb = scratch(B * widest, &ok);
    c->q = scratch(B * Qd, &ok);
    c->att = scratch(B * Qd, &ok);
    c->hb = scratch(B * F, &ok);
    c->hb2 = scratch(B * F, &ok);
    c->logits = scratch((size_t)c->n_logits * (size_t)I->n_vocab, &ok);
    c->rope = scratch(B * (size_t)m->rope_dim, &ok);
    if (m->swa_window > 0) c->rope_swa = scratch(B * (size_t)m->rope_dim, &ok);
    c->qx = scratch(B * widest, &ok);
    if (!ok || (c->n_threads > 1 && inf__pool_new(c->n_threads, &c->pool) != INF_OK)) {
        inf_llm_context_free(c);
        return inf_error_set(err, INF_ENOMEM, "%s: no memory for a context of %d positions (KV cache %.1f MiB)", I->path,
                          o->n_ctx ? o->n_ctx : I->n_ctx_train, 2.0 * cache * 4 / 1048576.0);
    }
    *out = c;
    return INF_OK;
}

void inf_llm_context_free(inf_llm_context *c) {
    if (!c) return;
    inf__pool_free(c->pool);
    float *bufs[] = {c->k_cache, c->v_cache, c->x, c->xb, c->q, c->att, c->hb, c->hb2, c->logits, c->rope, c->rope_swa};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) inf__aligned_free(bufs[i]);
    inf__aligned_free(c->qx);
    inf__free(c);
}

inf_status inf_llm_context_rewind(inf_llm_context *c, int n_past, inf_error *err) {
    if (n_past < 0 || n_past > c->n_past)
        return inf_error_set(err, INF_ERANGE, "rewind to position %d: the sequence has %d", n_past, c->n_past);
    c->n_past = n_past;
    return INF_OK;
}

/* ---- building blocks ---- */

static void rmsnorm(float *out, const float *x, const float *w, int n, float eps) {
    /* 8 partial sums (the compiler keeps them in vectors; one sum in a row
     * was a chain of n dependent double adds: ~4% of a small model's step),
     * added in one fixed order */
    double part[8] = {0}, sum = 0;
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int e = 0; e < 8; e++)
            part[e] += (double)x[i + e] * x[i + e];
    for (; i < n; i++)
        sum += (double)x[i] * x[i];
    sum += ((part[0] + part[4]) + (part[2] + part[6])) + ((part[1] + part[5]) + (part[3] + part[7]));
    float scale = 1.0f / sqrtf((float)(sum / n) + eps);
    for (i = 0; i < n; i++)
        out[i] = (x[i] * scale) * w[i];
}

/* Products that share their activations (q, k, v; gate, up) run as one job
 * over their concatenated rows: one fork/join of the pool instead of three. */
typedef struct matmul_part {
    const inf__llm_weight *w;
    float *y;
    size_t ldy;
    bool add;
    const float *bias;
} matmul_part;

#define MAX_PARTS 3
typedef struct matmul_job {
    matmul_part part[MAX_PARTS];
    int n_parts;
    int64_t first_row[MAX_PARTS + 1];
    const uint8_t *qx;
    size_t qx_stride;
    int n;
} matmul_job;

static inline void store(const matmul_part *p, int t, int64_t r, float v) {
    float *dst = p->y + (size_t)t * p->ldy + r;
    if (p->bias) v += p->bias[r];
    *dst = p->add ? *dst + v : v;
}

/* Rows in groups of eight through the eight-row kernel, eight tokens at a time;
 * the remaining rows through its one-row twin (the same sums). */
static void part_rows_gemm8(const matmul_job *j, const matmul_part *p, int64_t begin, int64_t end) {
    const inf__llm_weight *w = p->w;
    const inf__llm_qtype *q = w->q;
    for (int t0 = 0; t0 < j->n; t0 += TOKEN_BLOCK) {
        int t1 = t0 + TOKEN_BLOCK < j->n ? t0 + TOKEN_BLOCK : j->n;
        int64_t r = begin;
        for (; r + 8 <= end; r += 8) {
            const uint8_t *wr = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
            for (int t = t0; t < t1; t += INF__LLM_GEMM_TOKENS) {
                int nt = t1 - t < INF__LLM_GEMM_TOKENS ? t1 - t : INF__LLM_GEMM_TOKENS;
                float o[8 * INF__LLM_GEMM_TOKENS];
                q->gemm8(w->cols, wr, w->row_bytes, j->qx + (size_t)t * j->qx_stride, j->qx_stride, nt, o);
                for (int u = 0; u < nt; u++)
                    for (int e = 0; e < 8; e++) store(p, t + u, r + e, o[8 * u + e]);
            }
        }
        for (; r < end; r++) {
            const uint8_t *wr = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
            for (int t = t0; t < t1; t++) store(p, t, r, q->dot(w->cols, wr, j->qx + (size_t)t * j->qx_stride));
        }
    }
}

/* Rows [begin, end) of a packed tile (begin a multiple of the tile's rows):
 * the tile kernel, INF__LLM_TILE_TOKENS tokens at a time. */
static void part_rows_tile(const matmul_job *j, const matmul_part *p, int64_t begin) {
    const inf__llm_weight *w = p->w;
    const uint8_t *tile = (const uint8_t *)w->packed + (size_t)(begin / INF__LLM_TILE_ROWS) * w->tile_bytes;
    for (int t = 0; t < j->n; t += INF__LLM_TILE_TOKENS) {
        int nt = j->n - t < INF__LLM_TILE_TOKENS ? j->n - t : INF__LLM_TILE_TOKENS;
        float o[INF__LLM_TILE_ROWS * INF__LLM_TILE_TOKENS];
        w->q->tile(w->cols, tile, j->qx + (size_t)t * j->qx_stride, j->qx_stride, nt, o);
        for (int u = 0; u < nt; u++) {
            const float *ou = o + INF__LLM_TILE_ROWS * u;
            float *dst = p->y + (size_t)(t + u) * p->ldy + begin;
            if (p->bias)
                for (int e = 0; e < INF__LLM_TILE_ROWS; e++) store(p, t + u, begin + e, ou[e]);
            else if (p->add) /* 16 rows at once (a small model's products are a few tiles each) */
                for (int e = 0; e < INF__LLM_TILE_ROWS; e++) dst[e] += ou[e];
            else
                memcpy(dst, ou, sizeof(float) * INF__LLM_TILE_ROWS);
        }
    }
}

/* f32/f16: tiles of fblock_rows rows x fblock_tokens tokens (AVX2 4 x 8,
 * AVX-512 6 x 4), tokens in passes of at most fblock_pass (AVX2 32, AVX-512
 * 128), split evenly (128 tokens under a cap of 120 made passes of 120 and 8:
 * the weights streamed from DRAM twice) so that their rows stay in L2 while
 * the tile's weight rows sit in L1.  While a tile's rows meet the pass's
 * tokens, the next tile's rows are prefetched into L2, a slice per call, so
 * the weights stream from DRAM under the arithmetic instead of stalling the
 * first call on each row.  A pass of a few tokens (decoding, verification)
 * takes up to fblock_row_tokens tokens per call, a tile's rows per call (a
 * call per row cost ~6% of F32 decode and ~25% of a verification pass on the
 * L3-resident Austen F32 target, in calls and stores), through the type's
 * short-pass kernel where it has one (fblock_small; AVX-512: 1-2 tokens a row
 * at a time, 3-6 tokens two rows at a time, each row one stream: the 6 x 4
 * tile's six rows side by side measured 1.3-1.5x slower while other jobs
 * contend for L3 and DRAM, and the 2-token calls session 17 split 3-4 tokens
 * into read the weights twice; bench/llm/RESULTS.md, session 18).  Every
 * kernel sums in one order, so the results do not change. */
static void part_rows_fblock(const matmul_job *j, const matmul_part *p, int64_t begin, int64_t end) {
    const inf__llm_weight *w = p->w;
    const int R = w->q->fblock_rows, T = j->n > SMALL_PASS ? w->q->fblock_tokens : w->q->fblock_row_tokens;
    inf__llm_fblock_fn fblock = j->n <= SMALL_PASS && w->q->fblock_small ? w->q->fblock_small : w->q->fblock;
    int passes = (j->n + w->q->fblock_pass - 1) / w->q->fblock_pass;
    int TB = (j->n + passes - 1) / passes;
    TB = (TB + T - 1) / T * T;
    const uint8_t *w_end = (const uint8_t *)w->data + (size_t)end * w->row_bytes;
    for (int t0 = 0; t0 < j->n; t0 += TB) {
        int t1 = t0 + TB < j->n ? t0 + TB : j->n;
        size_t calls = (size_t)(t1 - t0 + T - 1) / T, step = ((size_t)R * w->row_bytes / calls + 63) / 64 * 64;
        for (int64_t r = begin; r < end; r += R) {
            int nr = end - r < R ? (int)(end - r) : R;
            const uint8_t *wr = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
            const uint8_t *pf = wr + (size_t)R * w->row_bytes; /* the next tile's rows */
            for (int t = t0; t < t1; t += T) {
                int nt = t1 - t < T ? t1 - t : T;
                if (j->n > SMALL_PASS)
                    for (size_t b = 0; b < step && pf < w_end; b += 64, pf += 64)
                        __builtin_prefetch(pf, 0, 2);
                float o[INF__LLM_FBLOCK_MAX];
                fblock(w->cols, wr, w->row_bytes, nr, j->qx + (size_t)t * j->qx_stride, j->qx_stride, nt, o);
                for (int u = 0; u < nt; u++)
                    for (int e = 0; e < nr; e++)
                        store(p, t + u, r + e, o[R * u + e]); /* out[t * R + r] */
            }
        }
    }
}

/* The most tokens a short pass multiplies per call on each block of weight
 * rows (layer 0's feed-forward weights stand for the model): a pass of more
 * tokens takes two calls per block (AVX-512 F32/F16: 6 + 1 tokens), which
 * costs far more than one token's arithmetic, so speculative decoding
 * verifies at most this many tokens at once (generate.c). */
int inf__llm_context_pass_tokens(const inf_llm_context *c) {
    const inf__llm_weight *w = &c->m->layers[0].w_gate;
    int n = SMALL_PASS;
    if (w->packed_rows > 0 && w->q->tiles)
        n = INF__LLM_TILE_TOKENS;
    else if (w->q->fblock)
        n = w->q->fblock_row_tokens;
    return n < SMALL_PASS ? n : SMALL_PASS;
}

/* ntiles tiles from row begin: a pass of <= INF__LLM_TILE_TOKENS tokens
 * (decoding, verification) in one call of the multi-tile kernel, straight
 * into the outputs (the same sums); longer passes tile by tile. */
static void part_rows_tiles(const matmul_job *j, const matmul_part *p, int64_t begin, int ntiles) {
    const inf__llm_weight *w = p->w;
    if (!w->q->tiles || p->bias || j->n > INF__LLM_TILE_TOKENS) {
        for (int i = 0; i < ntiles; i++)
            part_rows_tile(j, p, begin + (int64_t)i * INF__LLM_TILE_ROWS);
        return;
    }
    const uint8_t *tile = (const uint8_t *)w->packed + (size_t)(begin / INF__LLM_TILE_ROWS) * w->tile_bytes;
    w->q->tiles(w->cols, tile, w->tile_bytes, ntiles, j->qx, j->qx_stride, j->n, p->y + begin, p->ldy, p->add);
}

static void part_rows(const matmul_job *j, const matmul_part *p, int64_t begin, int64_t end) {
    const inf__llm_weight *w = p->w;
    const inf__llm_qtype *q = w->q;
    /* whole packed tiles from an aligned begin, up to end and the packed rows */
    int64_t tiled_end = end < w->packed_rows ? end : w->packed_rows;
    int ntiles =
        begin % INF__LLM_TILE_ROWS == 0 && tiled_end > begin ? (int)((tiled_end - begin) / INF__LLM_TILE_ROWS) : 0;
    if (ntiles) part_rows_tiles(j, p, begin, ntiles);
    begin += (int64_t)ntiles * INF__LLM_TILE_ROWS;
    if (begin >= end) return;
    if (q->gemm8) {
        part_rows_gemm8(j, p, begin, end);
        return;
    }
    if (q->fblock) {
        part_rows_fblock(j, p, begin, end);
        return;
    }
    for (int t0 = 0; t0 < j->n; t0 += TOKEN_BLOCK) {
        int t1 = t0 + TOKEN_BLOCK < j->n ? t0 + TOKEN_BLOCK : j->n;
        for (int64_t r = begin; r < end; r++) {
            const uint8_t *wr = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
            int t = t0;
            if (q->dot4)
                for (; t + 4 <= t1; t += 4) {
                    float o[4];
                    q->dot4(w->cols, wr, j->qx + (size_t)t * j->qx_stride, j->qx_stride, o);
                    for (int u = 0; u < 4; u++) store(p, t + u, r, o[u]);
                }
            for (; t < t1; t++) store(p, t, r, q->dot(w->cols, wr, j->qx + (size_t)t * j->qx_stride));
        }
    }
}

/* The job's range counts units of ROW_UNIT rows of each part (the last unit
 * of a part may be shorter), so threads split at tile boundaries. */
#define ROW_UNIT INF__LLM_TILE_ROWS

static void matmul_rows(void *arg, int64_t begin, int64_t end) {
    const matmul_job *j = arg;
    for (int i = 0; i < j->n_parts; i++) {
        int64_t b = begin > j->first_row[i] ? begin : j->first_row[i];
        int64_t e = end < j->first_row[i + 1] ? end : j->first_row[i + 1];
        if (b >= e) continue;
        int64_t rows = j->part[i].w->rows, r0 = (b - j->first_row[i]) * ROW_UNIT, r1 = (e - j->first_row[i]) * ROW_UNIT;
        part_rows(j, &j->part[i], r0, r1 < rows ? r1 : rows);
    }
}

/* Smallest chunk of a job of `units` over the pool.  A pass of a few tokens
 * (decoding, verification, a batched step) is cut into one chunk per thread:
 * it has ~5 fork/joins per layer of a few microseconds of work each, and
 * every extra chunk is a claim on a cache line shared between the cores
 * (llama.cpp's mat-vec does the same: one contiguous chunk per thread).  The
 * first chunk is the caller's, so each thread reads the same rows every
 * step.  Longer passes take ~4 chunks per thread, which balance better. */
static int64_t min_chunk(const inf_llm_context *c, int64_t units, int n_tokens) {
    int threads = inf__pool_size(c->pool);
    if (threads <= 1 || n_tokens > SMALL_PASS) return 1;
    return (units + threads - 1) / threads;
}

static void matmul_parts(inf_llm_context *c, const matmul_part *parts, int n_parts, const uint8_t *qx, size_t qx_stride,
                         int n) {
    matmul_job j = {.n_parts = n_parts, .qx = qx, .qx_stride = qx_stride, .n = n};
    for (int i = 0; i < n_parts; i++) {
        j.part[i] = parts[i];
        j.first_row[i + 1] = j.first_row[i] + (parts[i].w->rows + ROW_UNIT - 1) / ROW_UNIT;
    }
    inf__pool_range(c->pool, j.first_row[n_parts], min_chunk(c, j.first_row[n_parts], n), matmul_rows, &j);
}

/* The activation rows x[n][w->cols] (stride ldx floats) in w's activation
 * type: a pointer and the byte stride of its rows. */
static const uint8_t *convert_activations(inf_llm_context *c, const inf__llm_weight *w, const float *x, size_t ldx, int n,
                                          size_t *stride) {
    const inf__llm_qtype *act = inf__llm_qtype_get(w->q->act_type, c->m->force_ref);
    if (w->q->act_type == INF__GGML_F32) {
        *stride = ldx * sizeof(float);
        return (const uint8_t *)x;
    }
    *stride = inf__llm_row_bytes(act, w->cols);
    for (int t = 0; t < n; t++) act->from_float(x + (size_t)t * ldx, (uint8_t *)c->qx + (size_t)t * *stride, w->cols);
    return c->qx;
}

/* y_i[t][r] (+)= x[t] . w_i[r] (+ bias_i[r]) for every part i and t < n:
 * one job when the parts share their activation type, else one per part. */
static void matmul_group(inf_llm_context *c, const matmul_part *parts, int n_parts, const float *x, size_t ldx, int n) {
    bool same = true;
    for (int i = 1; i < n_parts; i++) same = same && parts[i].w->q->act_type == parts[0].w->q->act_type;
    size_t stride;
    if (same) {
        const uint8_t *qx = convert_activations(c, parts[0].w, x, ldx, n, &stride);
        matmul_parts(c, parts, n_parts, qx, stride, n);
        return;
    }
    for (int i = 0; i < n_parts; i++) {
        const uint8_t *qx = convert_activations(c, parts[i].w, x, ldx, n, &stride);
        matmul_parts(c, &parts[i], 1, qx, stride, n);
    }
}

static void matmul(inf_llm_context *c, const inf__llm_weight *w, const float *x, size_t ldx, int n, float *y, size_t ldy,
                   bool add, const float *bias) {
    matmul_part p = {w, y, ldy, add, bias};
    matmul_group(c, &p, 1, x, ldx, n);
}

/* Which sequence a token of a pass belongs to.  seqs NULL: every token is
 * c's own, at c->n_past + t (one sequence: prompt, decoding, verification);
 * else token t is seqs[t]'s next one, at seqs[t]->n_past (a batched decode
 * step of several sequences, inf_llm_context_eval_batch). */
static inline inf_llm_context *tok_seq(inf_llm_context *c, inf_llm_context *const *seqs, int t) {
    return seqs ? seqs[t] : c;
}
static inline int tok_pos(const inf_llm_context *c, inf_llm_context *const *seqs, int t) {
    return seqs ? seqs[t]->n_past : c->n_past + t;
}

/* cos/sin of every (token, rotation) pair into tab, for RoPE base `base` and position scale `freq_scale`, as ggml
 * computes theta (times LongRoPE's attn_factor, 1 elsewhere). */
static void rope_table_of(inf_llm_context *c, inf_llm_context *const *seqs, int n, float base, float freq_scale,
                          float *tab) {
    const inf_llm_model *m = c->m;
    int half = m->rope_dim / 2;
    float theta_scale = powf(base, -2.0f / (float)m->rope_dim);
    float mscale = m->rope_attn_factor;
    for (int t = 0; t < n; t++) {
        float theta = (float)tok_pos(c, seqs, t), *cs = tab + (size_t)t * m->rope_dim;
        for (int i = 0; i < half; i++) {
            float th = theta / (c->rope_freqs ? c->rope_freqs[i] : 1.0f) * freq_scale;
            cs[2 * i] = cosf(th) * mscale;
            cs[2 * i + 1] = sinf(th) * mscale;
            theta *= theta_scale;
        }
    }
}

/* The pass's RoPE tables: the model's, and the sliding-window layers' (their own base and scale) when it has them. */
static void rope_table(inf_llm_context *c, inf_llm_context *const *seqs, int n) {
    const inf_llm_model *m = c->m;
    rope_table_of(c, seqs, n, m->rope_base, m->rope_freq_scale, c->rope);
    if (c->rope_swa) rope_table_of(c, seqs, n, m->rope_base_swa, m->rope_freq_scale_swa, c->rope_swa);
}

static void rope_apply(const inf_llm_model *m, float *v, const float *cs) {
    int half = m->rope_dim / 2;
    for (int i = 0; i < half; i++) {
        int a = m->rope_type == INF__ROPE_NEOX ? i : 2 * i, b = m->rope_type == INF__ROPE_NEOX ? i + half : 2 * i + 1;
        float x0 = v[a], x1 = v[b], co = cs[2 * i], si = cs[2 * i + 1];
        v[a] = x0 * co - x1 * si;
        v[b] = x0 * si + x1 * co;
    }
}

typedef struct attn_job {
    inf_llm_context *c;
    inf_llm_context *const *seqs; /* the tokens' sequences (tok_seq) */
    int layer, n;
} attn_job;

/* Whether a pass's attention at `layer` takes the grouped path: a few tokens of one sequence whose keys all start
 * at one position -- 0, or for a single token (decoding) on a sliding-window layer past its window, that token's
 * window start (window_first); a few tokens there start at as many positions, and go one pair at a time. */
static bool grouped_pass(const inf_llm_context *c, int layer, int n, inf_llm_context *const *seqs) {
    const inf_llm_model *m = c->m;
    return n <= SMALL_PASS && !seqs && (n == 1 || !(m->layers[layer].swa && c->n_past + n > m->swa_window));
}

/* The first key position a query at pos attends to on a layer: pos - window + 1 on a sliding-window layer
 * (llama.cpp's is_masked_swa), else 0. */
static int window_first(const inf_llm_model *m, int layer, int pos) {
    int window = m->layers[layer].swa ? m->swa_window : 0;
    return window && pos + 1 > window ? pos + 1 - window : 0;
}

/* A short pass of one sequence with a multi-query kernel: task g = kv head
 * g, all the pass's (token, query head) pairs of its group in one call
 * (their keys and values are the same rows; the kernel interleaves them). */
static void attention_grouped(const attn_job *j, inf__llm_attn_multi_fn attend, int64_t begin, int64_t end) {
    inf_llm_context *c = j->c;
    const inf_llm_model_info *I = &c->m->info;
    int hd = I->n_head_dim, group = I->n_head / I->n_head_kv;
    size_t Qd = (size_t)I->n_head * hd, KVd = (size_t)I->n_head_kv * hd;
    const float *q[SMALL_PASS * INF__LLM_ATTN_MULTI];
    float *o[SMALL_PASS * INF__LLM_ATTN_MULTI];
    int nk[SMALL_PASS * INF__LLM_ATTN_MULTI];
    int first = window_first(c->m, j->layer, c->n_past + j->n - 1); /* 0 unless one token (grouped_pass) */
    for (int64_t g = begin; g < end; g++) {
        size_t off = (size_t)first * KVd + (size_t)g * hd;
        const float *kc = c->k_cache + (size_t)j->layer * c->n_ctx * KVd + off,
                    *vc = c->v_cache + (size_t)j->layer * c->n_ctx * KVd + off;
        /* up to SMALL_PASS * MULTI queries per call, in chunks of at most that */
        for (int p0 = 0; p0 < j->n * group; p0 += SMALL_PASS * INF__LLM_ATTN_MULTI) {
            int np = 0;
            for (int r = p0; r < j->n * group && np < SMALL_PASS * INF__LLM_ATTN_MULTI; r++, np++) {
                int t = r / group, h = (int)g * group + r % group;
                q[np] = c->q + (size_t)t * Qd + (size_t)h * hd;
                o[np] = c->att + (size_t)t * Qd + (size_t)h * hd;
                nk[np] = c->n_past + t + 1 - first;
            }
            attend(hd, np, q, nk, kc, vc, KVd, c->m->attn_scale, c->m->attn_softcap, o);
        }
    }
}

static void attention(void *arg, int64_t begin, int64_t end) {
    const attn_job *j = arg;
    inf__llm_attn_multi_fn multi = inf__llm_attn_multi_get(j->c->m->force_ref);
    if (multi && grouped_pass(j->c, j->layer, j->n, j->seqs)) {
        attention_grouped(j, multi, begin, end);
        return;
    }
    inf_llm_context *c = j->c;
    const inf_llm_model_info *I = &c->m->info;
    int hd = I->n_head_dim, group = I->n_head / I->n_head_kv;
    size_t Qd = (size_t)I->n_head * hd, KVd = (size_t)I->n_head_kv * hd;
    float scale = c->m->attn_scale;
    bool grouped_order = j->n <= SMALL_PASS && !j->seqs;
    inf__llm_attn_fn attend = inf__llm_attn_get(c->m->force_ref); /* attn.c / attn_avx2.c */
    for (int64_t task = begin; task < end; task++) {
        int t, h;
        if (grouped_order) {
            /* a few tokens of one sequence (decoding, verification): the pairs
             * of one kv head together, so its keys and values (a few KiB per
             * 100 positions) are read from L1 by every token and query head
             * of the group instead of once per token from L2 */
            int per_kv = j->n * group, g = (int)(task / per_kv), r = (int)(task % per_kv);
            t = r / group;
            h = g * group + r % group;
        } else {
            /* the costliest tokens at both ends, the cheapest in the middle: in a
             * causal pass the last tokens attend to the most keys, and the pool's
             * caller claims chunks from the front while workers claim from the back
             * (core/threadpool.c), so the chunks claimed last are the cheapest
             * (balance across threads).  Rank r (0: the last token) from the
             * task's place: 0, 2, 4, ... from the front, 1, 3, ... from the back. */
            int k = (int)(task / I->n_head), r = k < (j->n + 1) / 2 ? 2 * k : 2 * (j->n - 1 - k) + 1;
            t = j->n - 1 - r;
            h = (int)(task % I->n_head);
        }
        int pos = tok_pos(c, j->seqs, t);
        const inf_llm_context *sq = tok_seq(c, j->seqs, t);
        int first = window_first(c->m, j->layer, pos);
        size_t koff = (size_t)first * KVd + (size_t)(h / group) * hd;
        const float *kc = sq->k_cache + (size_t)j->layer * sq->n_ctx * KVd + koff,
                    *vc = sq->v_cache + (size_t)j->layer * sq->n_ctx * KVd + koff;
        const float *q = c->q + (size_t)t * Qd + (size_t)h * hd;
        float *o = c->att + (size_t)t * Qd + (size_t)h * hd;
        attend(hd, q, kc, vc, KVd, pos + 1 - first, scale, c->m->attn_softcap, o);
    }
}


/* Batched step: the keys and values of token t (rows t of c's own cache,
 * where the pass put them) go to their sequence's cache at its position. */
static void scatter_kv(inf_llm_context *c, inf_llm_context *const *seqs, int layer, int n) {
    size_t KVd = (size_t)c->m->info.n_head_kv * c->m->info.n_head_dim;
    for (int t = 0; t < n; t++) {
        inf_llm_context *s = seqs[t];
        size_t from = ((size_t)layer * c->n_ctx + (size_t)t) * KVd, to = ((size_t)layer * s->n_ctx + s->n_past) * KVd;
        memcpy(s->k_cache + to, c->k_cache + from, KVd * sizeof(float));
        memcpy(s->v_cache + to, c->v_cache + from, KVd * sizeof(float));
    }
}

/* The per-token steps between the matrix products (the norms, RoPE, the
 * SwiGLU gate): on the caller for a few tokens, split over the pool by
 * tokens for a long pass (each token's values are computed alone, so the
 * split changes no result; serial, they were ~4% of a 128-token prompt at
 * 2 threads). */
typedef enum { TOK_NORM, TOK_ROPE, TOK_SWIGLU, TOK_POST_NORM } tok_step;
typedef struct tok_job {
    inf_llm_context *c;
    tok_step step;
    const float *norm_w; /* TOK_NORM, TOK_POST_NORM */
    float *kc;           /* TOK_ROPE: the pass's first cache row */
    const inf__llm_layer *layer; /* TOK_ROPE: its q_norm / k_norm, when it has them */
} tok_job;

static void tok_rows(void *arg, int64_t begin, int64_t end) {
    const tok_job *j = arg;
    inf_llm_context *c = j->c;
    const inf_llm_model *m = c->m;
    const inf_llm_model_info *I = &m->info;
    int E = I->n_embd, hd = I->n_head_dim;
    size_t Qd = (size_t)I->n_head * hd, KVd = (size_t)I->n_head_kv * hd, F = (size_t)I->n_ff;
    for (int64_t t = begin; t < end; t++) {
        if (j->step == TOK_NORM) {
            rmsnorm(c->xb + (size_t)t * E, c->x + (size_t)t * E, j->norm_w, E, m->rms_eps);
        } else if (j->step == TOK_POST_NORM) { /* x += rmsnorm(xb) * w: a sublayer's output normed, then added */
            float *xb = c->xb + (size_t)t * E, *x = c->x + (size_t)t * E;
            rmsnorm(xb, xb, j->norm_w, E, m->rms_eps);
            for (int e = 0; e < E; e++) x[e] += xb[e];
        } else if (j->step == TOK_ROPE) {
            const float *cs = (j->layer->swa ? c->rope_swa : c->rope) + (size_t)t * m->rope_dim;
            for (int h = 0; h < I->n_head; h++) {
                float *q = c->q + t * Qd + (size_t)h * hd;
                if (j->layer->q_norm) rmsnorm(q, q, j->layer->q_norm, hd, m->rms_eps);
                rope_apply(m, q, cs);
            }
            for (int h = 0; h < I->n_head_kv; h++) {
                float *k = j->kc + t * KVd + (size_t)h * hd;
                if (j->layer->k_norm) rmsnorm(k, k, j->layer->k_norm, hd, m->rms_eps);
                rope_apply(m, k, cs);
            }
        } else {
            inf__llm_gate_get(m->gate, m->force_ref)(c->hb + t * F, c->hb2 + t * F, F);
        }
    }
}

static void per_token(inf_llm_context *c, tok_step step, const float *norm_w, float *kc, const inf__llm_layer *layer,
                      int n) {
    tok_job j = {c, step, norm_w, kc, layer};
    if (n <= SMALL_PASS || !c->pool) {
        tok_rows(&j, 0, n);
        return;
    }
    inf__pool_range(c->pool, n, 1, tok_rows, &j);
}

/* A sublayer's output projection into the residual stream: x += a W (+ bias), or with a post-norm (gemma3)
 * x += rmsnorm(a W (+ bias)) * post_norm, through xb (free again once the projection's input is made). */
static void sublayer_out(inf_llm_context *c, const inf__llm_weight *w, const float *a, size_t lda, const float *bias,
                         const float *post_norm, int n) {
    size_t E = (size_t)c->m->info.n_embd;
    if (!post_norm) {
        matmul(c, w, a, lda, n, c->x, E, true, bias);
        return;
    }
    matmul(c, w, a, lda, n, c->xb, E, false, bias);
    per_token(c, TOK_POST_NORM, post_norm, NULL, NULL, n);
}

/* One pass over n <= n_batch tokens at n_past (or, with seqs, one token of
 * each of n sequences: c's scratch, threads and cache rows 0..n-1 serve as
 * the pass's buffers); logits of rows [first, n). */
static void forward_seqs(inf_llm_context *c, inf_llm_context *const *seqs, const int32_t *tokens, int n, int first) {
    const inf_llm_model *m = c->m;
    const inf_llm_model_info *I = &m->info;
    int E = I->n_embd, hd = I->n_head_dim, F = I->n_ff;
    size_t Qd = (size_t)I->n_head * hd, KVd = (size_t)I->n_head_kv * hd;
    for (int t = 0; t < n; t++)
        m->tok_embd.q->to_float((const uint8_t *)m->tok_embd.data + (size_t)tokens[t] * m->tok_embd.row_bytes,
                                c->x + (size_t)t * E, E);
    if (m->embed_scale) { /* gemma: x * sqrt(n_embd), in float as ggml_scale */
        float s = sqrtf((float)E);
        for (size_t i = 0; i < (size_t)n * E; i++) c->x[i] *= s;
    }
    rope_table(c, seqs, n);
    for (int l = 0; l < I->n_layer; l++) {
        const inf__llm_layer *y = &m->layers[l];
        float *kc = c->k_cache + ((size_t)l * c->n_ctx + c->n_past) * KVd;
        float *vc = c->v_cache + ((size_t)l * c->n_ctx + c->n_past) * KVd;
        per_token(c, TOK_NORM, y->attn_norm, NULL, y, n);
        const matmul_part qkv[3] = {
            {&y->wq, c->q, Qd, false, y->bq}, {&y->wk, kc, KVd, false, y->bk}, {&y->wv, vc, KVd, false, y->bv}};
        matmul_group(c, qkv, 3, c->xb, E, n);
        per_token(c, TOK_ROPE, NULL, kc, y, n);
        if (seqs) scatter_kv(c, seqs, l, n);
        attn_job aj = {c, seqs, l, n};
        int64_t tasks = grouped_pass(c, l, n, seqs) && inf__llm_attn_multi_get(m->force_ref) ? I->n_head_kv
                                                                                             : (int64_t)n * I->n_head;
        inf__pool_range(c->pool, tasks, min_chunk(c, tasks, n), attention, &aj);
        sublayer_out(c, &y->wo, c->att, Qd, y->bo, y->post_attn_norm, n);
        per_token(c, TOK_NORM, y->ffn_norm, NULL, y, n);
        const matmul_part gate_up[2] = {{&y->w_gate, c->hb, F, false, NULL}, {&y->w_up, c->hb2, F, false, NULL}};
        matmul_group(c, gate_up, 2, c->xb, E, n);
        per_token(c, TOK_SWIGLU, NULL, NULL, y, n);
        sublayer_out(c, &y->w_down, c->hb, F, NULL, y->post_ffn_norm, n);
    }
    int rows = n - first;
    if (rows <= 0) return;
    for (int t = 0; t < rows; t++)
        rmsnorm(c->xb + (size_t)t * E, c->x + (size_t)(first + t) * E, m->output_norm, E, m->rms_eps);
    matmul(c, &m->output, c->xb, E, rows, c->logits, I->n_vocab, false, NULL);
    if (m->final_softcap > 0) { /* as ggml: scale by 1/c, tanh, scale by c */
        float cap = m->final_softcap;
        for (size_t i = 0; i < (size_t)rows * I->n_vocab; i++) c->logits[i] = tanhf(c->logits[i] * (1.0f / cap)) * cap;
    }
}

static void forward(inf_llm_context *c, const int32_t *tokens, int n, int first) {
    forward_seqs(c, NULL, tokens, n, first);
}

inf_status inf_llm_context_eval(inf_llm_context *c, const int32_t *tokens, int n, bool all_logits, const float **logits,
                                inf_error *err) {
    const inf_llm_model_info *I = &c->m->info;
    if (n <= 0) return inf_error_set(err, INF_EINVAL, "%s: no tokens to evaluate", I->path);
    if (n > c->n_ctx - c->n_past)
        return inf_error_set(err, INF_ERANGE, "%s: %d tokens do not fit: %d of the context's %d positions are used", I->path,
                          n, c->n_past, c->n_ctx);
    if (all_logits && n > c->n_logits)
        return inf_error_set(err, INF_ERANGE, "%s: logits of %d tokens asked for; the context returns at most %d", I->path,
                          n, c->n_logits);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= I->n_vocab)
            return inf_error_set(err, INF_ERANGE, "%s: token id %d outside the vocabulary of %d", I->path, tokens[i],
                              I->n_vocab);
    for (int done = 0; done < n;) {
        int k = n - done < c->n_batch ? n - done : c->n_batch;
        bool last = done + k == n;
        forward(c, tokens + done, k, last ? (all_logits ? 0 : k - 1) : k);
        c->n_past += k;
        done += k;
    }
    if (logits) *logits = c->logits;
    return INF_OK;
}

/* Added for the server's /v1/embeddings and SQL's infera_embed (h/llm-serve):
 * the final hidden states (after the output norm) of n tokens, mean-pooled
 * into out[n_embd]; the tokens stay in the cache like eval's. */
inf_status inf_llm_context_embed(inf_llm_context *c, const int32_t *tokens, int n, float *out, inf_error *err) {
    const inf_llm_model *m = c->m;
    const inf_llm_model_info *I = &m->info;
    int E = I->n_embd;
    if (n <= 0) return inf_error_set(err, INF_EINVAL, "%s: no tokens to embed", I->path);
    if (n > c->n_ctx - c->n_past)
        return inf_error_set(err, INF_ERANGE, "%s: %d tokens do not fit: %d of the context's %d positions are used", I->path,
                          n, c->n_past, c->n_ctx);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= I->n_vocab)
            return inf_error_set(err, INF_ERANGE, "%s: token id %d outside the vocabulary of %d", I->path, tokens[i],
                              I->n_vocab);
    for (int e = 0; e < E; e++) out[e] = 0.f;
    for (int done = 0; done < n;) {
        int k = n - done < c->n_batch ? n - done : c->n_batch;
        forward(c, tokens + done, k, k); /* no logits */
        for (int t = 0; t < k; t++) {
            rmsnorm(c->xb, c->x + (size_t)t * E, m->output_norm, E, m->rms_eps);
            for (int e = 0; e < E; e++) out[e] += c->xb[e];
        }
        c->n_past += k;
        done += k;
    }
    for (int e = 0; e < E; e++) out[e] /= (float)n;
    return INF_OK;
}

/* One decode step of n sequences in one pass (continuous batching): every
 * weight matrix is read once for all of them.  Each row's result is bit for
 * bit the one a single-token eval of that sequence gives (the row kernels do
 * not depend on the token count), so batched and lone greedy decoding agree. */
inf_status inf_llm_context_eval_batch(inf_llm_context *batch, inf_llm_context *const *seqs, const int32_t *tokens, int n,
                                      const float **logits, inf_error *err) {
    const inf_llm_model_info *I = &batch->m->info;
    if (n <= 0) return inf_error_set(err, INF_EINVAL, "%s: no sequences to decode", I->path);
    int cap = batch->n_batch < batch->n_logits ? batch->n_batch : batch->n_logits;
    if (cap > batch->n_ctx) cap = batch->n_ctx;
    if (n > cap)
        return inf_error_set(err, INF_ERANGE,
                          "%s: %d sequences in one step; the batch context takes at most %d (its n_ctx, n_batch and "
                          "n_logits)", I->path, n, cap);
    for (int i = 0; i < n; i++) {
        const inf_llm_context *s = seqs[i];
        if (!s || s == batch || s->m != batch->m)
            return inf_error_set(err, INF_EINVAL, "%s: sequence %d is not another context of the batch's model", I->path, i);
        if (s->n_past >= s->n_ctx)
            return inf_error_set(err, INF_ERANGE, "%s: sequence %d has used all %d positions of its context", I->path, i,
                              s->n_ctx);
        if (tokens[i] < 0 || tokens[i] >= I->n_vocab)
            return inf_error_set(err, INF_ERANGE, "%s: token id %d outside the vocabulary of %d", I->path, tokens[i],
                              I->n_vocab);
        for (int k = 0; k < i; k++)
            if (seqs[k] == s)
                return inf_error_set(err, INF_EINVAL, "%s: sequences %d and %d are the same context", I->path, k, i);
    }
    batch->n_past = 0;
    forward_seqs(batch, seqs, tokens, n, 0);
    for (int i = 0; i < n; i++) seqs[i]->n_past++;
    if (logits) *logits = batch->logits;
    return INF_OK;
}
