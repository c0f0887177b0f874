/*
 * test_attention.c -- the fused Attention kernel (ops/ref/attention.c, made
 * by the optimizer's attention pass, graph/passes/attention.c) against a
 * plain double-precision attention written here, over random shapes.
 *
 * Each case builds, in memory, the ONNX chain PyTorch exports for
 * scaled-dot-product attention (Transposes of q, k, v; MatMul; Div by a
 * constant (on the scores at rank 4, on Q at rank 3 as
 * nn.MultiheadAttention does); optional Add of a mask; Softmax; MatMul;
 * Transpose back), loads it optimised (must become one Attention node) and
 * unoptimised, and checks both against the reference within
 * 1e-5 * max(1, |ref|), the fused run on 2 and 3 threads bit-identical to
 * 1 (the (batch, head) units cut into one run a thread: runs of unequal
 * length, fewer units than threads) and to a second run of the same session
 * (the parts' scratch is the pool's, kept between runs).
 * Shapes: rank 3 and 4, odd sizes, batch and length 1, head sizes up to 70,
 * masks of several broadcast shapes (-30 for "masked": a fully masked row
 * then keeps float32 precision), K/V batch 1 broadcast against Q's; and a
 * batch-1 encoder's (4 heads of 64, 128 tokens: every thread runs units).
 * Also the AVX2 scaled K^T copy (ops/x86/attention_avx2.c) against the
 * plain loop written here, bit for bit, over sizes across the 8x8 blocks'
 * edges and row strides wider than D (when the CPU has AVX2/FMA); and the
 * softmax numerator rows (ops/attention_exp.h): the portable one against
 * exp and sums in double (2 ulp a term, 1e-6 the sum), the AVX2 and
 * AVX-512 ones against the portable one bit for bit (those the CPU runs;
 * the others are named as skipped), over lengths across the 8- and 16-lane
 * edges with -inf (masked) terms, terms below exp's cut-off and whole rows
 * of -inf.
 * Prints one line per failure and "N passed, M failed".
 */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/cpu.h"
#include "infera/infera.h"
#include "infera/model.h"
#include "infera/session.h"
#include "infera/tensor.h"
#include "kernel_paths.h"
#include "onnx.pb-c.h"
#include "onnx_value.h"
#include "ops/attention_exp.h"
#include "ops/ops.h"

static int n_passed, n_failed;
static uint64_t rng = 0x2545F4914F6CDD1Dull;

static uint64_t next_u64(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}
static int rand_int(int lo, int hi) { return lo + (int)(next_u64() % (uint64_t)(hi - lo + 1)); }
static float uniform(float a) { return (float)((double)(next_u64() >> 11) / 9007199254740992.0 * 2.0 - 1.0) * a; }

/* ---- one case: shapes in [B, S, H, D] terms (rank 3: B = 1, dropped) ---- */
typedef struct att_case {
    int rank, b, kvb, sq, sk, h, d, dv;
    int mask_rank;            /* 0: no mask */
    int64_t mask_dims[4];
    float scale_div;          /* the Div constant */
} att_case;

/* ---- building the ONNX model with protobuf-c ---- */
typedef struct builder {
    Onnx__NodeProto nodes[10], *node_ptrs[10];
    Onnx__AttributeProto attrs[10], *attr_ptrs[10];
    int64_t perms[10][4];
    char *ins[10][2], *outs[10][1];
    int n_nodes;
    test_value vals[5];
    Onnx__ValueInfoProto *vi_ptrs[5];
    int n_vi;
    Onnx__TensorProto c;
    Onnx__TensorProto *c_ptr;
    float c_val;
} builder;

static void add_node(builder *bd, const char *op, const char *in0, const char *in1, const char *out, const int64_t *perm,
                     int n_perm, const char *attr_name, int64_t attr_i) {
    int n = bd->n_nodes++;
    Onnx__NodeProto *node = &bd->nodes[n];
    *node = (Onnx__NodeProto)ONNX__NODE_PROTO__INIT;
    node->op_type = (char *)op;
    bd->ins[n][0] = (char *)in0, bd->ins[n][1] = (char *)in1;
    node->input = bd->ins[n];
    node->n_input = in1 ? 2 : 1;
    bd->outs[n][0] = (char *)out;
    node->output = bd->outs[n];
    node->n_output = 1;
    if (attr_name) {
        Onnx__AttributeProto *a = &bd->attrs[n];
        *a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
        a->name = (char *)attr_name;
        a->has_type = 1;
        if (perm) {
            a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
            memcpy(bd->perms[n], perm, (size_t)n_perm * sizeof *perm);
            a->ints = bd->perms[n];
            a->n_ints = (size_t)n_perm;
        } else {
            a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
            a->has_i = 1;
            a->i = attr_i;
        }
        bd->attr_ptrs[n] = a;
        node->attribute = &bd->attr_ptrs[n];
        node->n_attribute = 1;
    }
    bd->node_ptrs[n] = node;
}

static Onnx__ValueInfoProto *add_value(builder *bd, const char *name, int ndim, const int64_t *dims) {
    int i = bd->n_vi++;
    bd->vi_ptrs[i] = test_value_info(&bd->vals[i], name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, ndim, dims);
    return bd->vi_ptrs[i];
}

/* The input shapes of a case: q, k, v, mask (in[3] only with a mask), y. */
static void case_dims(const att_case *c, int64_t dims[5][4]) {
    int64_t q[4] = {c->b, c->sq, c->h, c->d}, k[4] = {c->kvb, c->sk, c->h, c->d}, v[4] = {c->kvb, c->sk, c->h, c->dv},
            y[4] = {c->b, c->sq, c->h, c->dv};
    int off = 4 - c->rank;
    memcpy(dims[0], q + off, sizeof(int64_t) * (size_t)c->rank);
    memcpy(dims[1], k + off, sizeof(int64_t) * (size_t)c->rank);
    memcpy(dims[2], v + off, sizeof(int64_t) * (size_t)c->rank);
    memcpy(dims[3], c->mask_dims, sizeof c->mask_dims);
    memcpy(dims[4], y + off, sizeof(int64_t) * (size_t)c->rank);
}

/* Serialises the case's chain; returns malloc'd bytes in *out. */
static size_t build_model(const att_case *c, uint8_t **out) {
    static const int64_t swap4[4] = {0, 2, 1, 3}, kt4[4] = {0, 2, 3, 1}, swap3[3] = {1, 0, 2}, kt3[3] = {1, 2, 0};
    const int64_t *swap = c->rank == 4 ? swap4 : swap3, *kt = c->rank == 4 ? kt4 : kt3;
    builder *bd = calloc(1, sizeof *bd);
    if (!bd) return 0;
    int64_t dims[5][4];
    case_dims(c, dims);
    add_node(bd, "Transpose", "q", NULL, "qt", swap, c->rank, "perm", 0);
    add_node(bd, "Transpose", "k", NULL, "kt", kt, c->rank, "perm", 0);
    add_node(bd, "Transpose", "v", NULL, "vt", swap, c->rank, "perm", 0);
    if (c->rank == 3) { /* nn.MultiheadAttention: Q scaled before the product */
        add_node(bd, "Div", "qt", "c", "qs", NULL, 0, NULL, 0);
        add_node(bd, "MatMul", "qs", "kt", "ss", NULL, 0, NULL, 0);
    } else {
        add_node(bd, "MatMul", "qt", "kt", "s", NULL, 0, NULL, 0);
        add_node(bd, "Div", "s", "c", "ss", NULL, 0, NULL, 0);
    }
    if (c->mask_rank) add_node(bd, "Add", "ss", "mask", "sm", NULL, 0, NULL, 0);
    add_node(bd, "Softmax", c->mask_rank ? "sm" : "ss", NULL, "p", NULL, 0, "axis", -1);
    add_node(bd, "MatMul", "p", "vt", "ctx", NULL, 0, NULL, 0);
    add_node(bd, "Transpose", "ctx", NULL, "y", swap, c->rank, "perm", 0);
    add_value(bd, "q", c->rank, dims[0]);
    add_value(bd, "k", c->rank, dims[1]);
    add_value(bd, "v", c->rank, dims[2]);
    if (c->mask_rank) add_value(bd, "mask", c->mask_rank, dims[3]);
    Onnx__ValueInfoProto *y = add_value(bd, "y", c->rank, dims[4]);
    bd->c = (Onnx__TensorProto)ONNX__TENSOR_PROTO__INIT;
    bd->c.name = "c";
    bd->c.has_data_type = 1;
    bd->c.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    bd->c_val = c->scale_div;
    bd->c.float_data = &bd->c_val;
    bd->c.n_float_data = 1;
    bd->c_ptr = &bd->c;
    Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
    g.name = "attention";
    g.node = bd->node_ptrs;
    g.n_node = (size_t)bd->n_nodes;
    g.input = bd->vi_ptrs;
    g.n_input = (size_t)(bd->n_vi - 1);
    Onnx__ValueInfoProto *outs[1] = {y};
    g.output = outs;
    g.n_output = 1;
    g.initializer = &bd->c_ptr;
    g.n_initializer = 1;
    Onnx__OperatorSetIdProto op = ONNX__OPERATOR_SET_ID_PROTO__INIT, *ops[1] = {&op};
    op.domain = "";
    op.has_version = 1;
    op.version = 13;
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    m.has_ir_version = 1;
    m.ir_version = 7;
    m.opset_import = ops;
    m.n_opset_import = 1;
    m.graph = &g;
    size_t n = onnx__model_proto__get_packed_size(&m);
    *out = malloc(n);
    if (*out) onnx__model_proto__pack(&m, *out);
    free(bd);
    return *out ? n : 0;
}

/* ---- the reference: double precision, numpy broadcasting of B/H and mask ---- */
static double at4(const float *x, const int64_t *dims, int rank, int64_t b, int64_t s, int64_t h, int64_t d) {
    int64_t B = rank == 4 ? dims[0] : 1, S = dims[rank - 3], H = dims[rank - 2], D = dims[rank - 1];
    if (B == 1) b = 0;
    return x[((b * S + s) * H + h) * D + d];
}

static double mask_at(const float *m, int rank, const int64_t *md, const int64_t *idx4 /* b, h, i, j */) {
    int64_t off = 0;
    for (int a = 0; a < rank; a++) {
        int64_t i = idx4[4 - rank + a];
        off = off * md[a] + (md[a] == 1 ? 0 : i);
    }
    return m[off];
}

static void reference(const att_case *c, float *const *in, double *y) {
    int64_t dims[5][4];
    case_dims(c, dims);
    double *s = malloc((size_t)c->sk * sizeof *s);
    if (!s) abort();
    for (int64_t b = 0; b < c->b; b++)
        for (int64_t h = 0; h < c->h; h++)
            for (int64_t i = 0; i < c->sq; i++) {
                double mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < c->sk; j++) {
                    double acc = 0;
                    for (int64_t p = 0; p < c->d; p++)
                        acc += at4(in[0], dims[0], c->rank, b, i, h, p) * at4(in[1], dims[1], c->rank, b, j, h, p);
                    s[j] = acc / c->scale_div;
                    int64_t idx[4] = {b, h, i, j};
                    if (c->mask_rank) s[j] += mask_at(in[3], c->mask_rank, dims[3], idx);
                    if (s[j] > mx) mx = s[j];
                }
                for (int64_t j = 0; j < c->sk; j++) sum += (s[j] = exp(s[j] - mx));
                for (int64_t e = 0; e < c->dv; e++) {
                    double acc = 0;
                    for (int64_t j = 0; j < c->sk; j++) acc += s[j] / sum * at4(in[2], dims[2], c->rank, b, j, h, e);
                    y[((b * c->sq + i) * c->h + h) * c->dv + e] = acc;
                }
            }
    free(s);
}

/* Loads and runs the model; copies the output into out (n floats).  On
 * several threads runs it again and checks the bits repeat. */
static bool run_model(const uint8_t *bytes, size_t size, bool optimize, int threads, const att_case *c,
                      float *const *in, float *out, int64_t n, int *n_nodes) {
    inf_model_options mo = {.no_optimize = !optimize};
    inf_model *m = NULL;
    inf_session *s = NULL;
    inf_error err = {0};
    bool ok = false;
    int64_t dims[5][4];
    case_dims(c, dims);
    inf_tensor t[4];
    const inf_tensor *inputs[4];
    for (int i = 0; i < 4; i++) {
        int nd = i < 3 ? c->rank : c->mask_rank;
        inf_tensor_init_view(&t[i], INF_DTYPE_F32, nd, dims[i], in[i]);
        inputs[i] = &t[i];
    }
    inf_session_options so = {.n_threads = threads};
    inf_tensor *const *o;
    if (inf_model_load_buffer(bytes, size, NULL, &mo, &m, &err) != INF_OK ||
        inf_session_new(m, &so, &s, &err) != INF_OK || inf_session_run(s, inputs, &o, &err) != INF_OK) {
        fprintf(stderr, "  load/run failed: %s\n", err.message);
        goto done;
    }
    inf_model_summary sum;
    inf_model_get_summary(m, &sum);
    *n_nodes = sum.n_nodes_optimized;
    if (inf_tensor_numel(o[0]) != n || o[0]->dtype != INF_DTYPE_F32) {
        fprintf(stderr, "  output has %lld elements, want %lld\n", (long long)inf_tensor_numel(o[0]), (long long)n);
        goto done;
    }
    memcpy(out, o[0]->data, (size_t)n * sizeof(float));
    /* on several threads each part's scratch is the pool's, kept from run
     * to run (inf__pool_slot_workspace): a second run gives the same bits */
    if (threads > 1) {
        if (inf_session_run(s, inputs, &o, &err) != INF_OK) {
            fprintf(stderr, "  second run failed: %s\n", err.message);
            goto done;
        }
        if (memcmp(out, o[0]->data, (size_t)n * sizeof(float)) != 0) {
            fprintf(stderr, "  second run on %d threads differs from the first\n", threads);
            goto done;
        }
    }
    ok = true;
done:
    inf_session_free(s);
    inf_model_free(m);
    return ok;
}

static void random_case(att_case *c, int trial) {
    memset(c, 0, sizeof *c);
    c->rank = trial % 2 ? 3 : 4;
    c->b = c->rank == 4 ? rand_int(1, 3) : 1;
    c->kvb = c->b > 1 && trial % 5 == 0 ? 1 : c->b; /* K/V batch broadcast against Q's */
    c->sq = trial % 7 == 0 ? 1 : rand_int(1, 37);
    c->sk = trial % 11 == 0 ? 1 : rand_int(1, 41);
    c->h = rand_int(1, 4);
    c->d = trial % 3 == 0 ? 64 : rand_int(1, 70);
    c->dv = rand_int(1, 33);
    c->scale_div = sqrtf((float)c->d);
    int64_t full[4] = {c->b, c->h, c->sq, c->sk};
    switch (trial % 4) {
    case 0: break; /* no mask */
    case 1: c->mask_rank = 2, c->mask_dims[0] = c->sq, c->mask_dims[1] = c->sk; break;
    case 2: c->mask_rank = 1, c->mask_dims[0] = c->sk; break;
    default: /* the full scores' shape, some dimensions broadcast */
        c->mask_rank = c->rank;
        for (int a = 0; a < c->rank; a++) c->mask_dims[a] = next_u64() % 3 == 0 ? 1 : full[4 - c->rank + a];
        break;
    }
}

static int64_t numel(const int64_t *dims, int nd) {
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= dims[i];
    return n;
}

/* Trial N_RANDOM: a batch-1 encoder's shape (4 heads of 64, 128 tokens),
 * units large enough that every thread runs its own. */
enum { N_RANDOM = 48 };

static void check_case(int trial) {
    att_case c;
    if (trial < N_RANDOM)
        random_case(&c, trial);
    else
        c = (att_case){.rank = 4, .b = 1, .kvb = 1, .sq = 128, .sk = 128, .h = 4, .d = 64, .dv = 64, .scale_div = 8.0f};
    int64_t dims[5][4];
    case_dims(&c, dims);
    float *in[4] = {NULL, NULL, NULL, NULL};
    for (int i = 0; i < 4; i++) {
        int64_t n = i < 3 ? numel(dims[i], c.rank) : numel(dims[3], c.mask_rank);
        in[i] = malloc((size_t)n * sizeof(float));
        if (!in[i]) abort();
        for (int64_t e = 0; e < n; e++) in[i][e] = i < 3 ? uniform(2.0f) : (next_u64() % 4 == 0 ? -30.0f : uniform(1.0f));
    }
    int64_t ny = numel(dims[4], c.rank);
    double *ref = malloc((size_t)ny * sizeof *ref);
    float *fused = malloc((size_t)ny * sizeof *fused), *fused2 = malloc((size_t)ny * sizeof *fused2),
          *fused3 = malloc((size_t)ny * sizeof *fused3), *plain = malloc((size_t)ny * sizeof *plain);
    uint8_t *bytes = NULL;
    size_t size = build_model(&c, &bytes);
    if (!ref || !fused || !fused2 || !fused3 || !plain || !size) abort();
    reference(&c, in, ref);
    int n_fused = 0, n_plain = 0, n2 = 0, n3 = 0;
    char what[160];
    snprintf(what, sizeof what, "rank %d b %d (k/v %d) sq %d sk %d h %d d %d dv %d mask rank %d", c.rank, c.b, c.kvb,
             c.sq, c.sk, c.h, c.d, c.dv, c.mask_rank);
    bool ok = run_model(bytes, size, true, 1, &c, in, fused, ny, &n_fused) &&
              run_model(bytes, size, true, 2, &c, in, fused2, ny, &n2) &&
              run_model(bytes, size, true, 3, &c, in, fused3, ny, &n3) &&
              run_model(bytes, size, false, 1, &c, in, plain, ny, &n_plain);
    if (ok && n_fused != 1) {
        fprintf(stderr, "FAIL %s: %d nodes after optimisation, want 1 (Attention)\n", what, n_fused);
        ok = false;
    }
    for (int64_t e = 0; ok && e < ny; e++) {
        double tol = 1e-5 * (fabs(ref[e]) > 1 ? fabs(ref[e]) : 1);
        if (!(fabs(fused[e] - ref[e]) <= tol) || !(fabs(plain[e] - ref[e]) <= tol)) {
            fprintf(stderr, "FAIL %s: element %lld fused %.9g unfused %.9g reference %.9g\n", what, (long long)e,
                    fused[e], plain[e], ref[e]);
            ok = false;
        }
    }
    if (ok && memcmp(fused, fused2, (size_t)ny * sizeof(float)) != 0) {
        fprintf(stderr, "FAIL %s: 2 threads differ from 1\n", what);
        ok = false;
    }
    if (ok && memcmp(fused, fused3, (size_t)ny * sizeof(float)) != 0) {
        fprintf(stderr, "FAIL %s: 3 threads differ from 1\n", what);
        ok = false;
    }
    if (ok) n_passed++;
    else n_failed++;
    for (int i = 0; i < 4; i++) free(in[i]);
    free(ref), free(fused), free(fused2), free(fused3), free(plain), free(bytes);
}

/* inf__attention_kt_avx2 against kt[p * sk + t] = scale * k[t * ldk + p],
 * bit for bit (both one float multiply an element). */
static void check_kt_avx2(void) {
#if defined(__x86_64__)
    if (!inf__cpu_has_avx2_fma()) {
        printf("attention: no AVX2/FMA: the AVX2 K^T copy not run\n");
        return;
    }
    static const int64_t sks[] = {1, 7, 8, 9, 16, 23, 64, 128, 131};
    static const int64_t ds[] = {1, 5, 8, 15, 16, 64, 70};
    int cases = 0, bad = 0;
    for (size_t a = 0; a < sizeof sks / sizeof *sks; a++)
        for (size_t b = 0; b < sizeof ds / sizeof *ds; b++)
            for (int wide = 0; wide < 2; wide++) {
                int64_t sk = sks[a], d = ds[b], ldk = wide ? 4 * d + 3 : d;
                float scale = wide ? 0.125f : 0.3f, *k = malloc((size_t)(sk * ldk) * sizeof(float));
                float *want = malloc((size_t)(sk * d) * sizeof(float)), *got = malloc((size_t)(sk * d) * sizeof(float));
                for (int64_t i = 0; i < sk * ldk; i++)
                    k[i] = uniform(3.0f);
                for (int64_t t = 0; t < sk; t++)
                    for (int64_t p = 0; p < d; p++)
                        want[p * sk + t] = scale * k[t * ldk + p];
                memset(got, 0xff, (size_t)(sk * d) * sizeof(float));
                inf__attention_kt_avx2(k, ldk, sk, d, scale, got);
                cases++;
                if (memcmp(want, got, (size_t)(sk * d) * sizeof(float))) {
                    printf("FAIL K^T copy sk %lld d %lld ldk %lld: not the plain loop's bits\n", (long long)sk,
                           (long long)d, (long long)ldk);
                    bad++;
                }
                free(k), free(want), free(got);
            }
    if (bad)
        n_failed++;
    else
        n_passed++;
    printf("attention: AVX2 K^T copy, %d shapes bit for bit against the plain loop\n", cases);
#endif
}

/* A row of scores: uniform in [-a, a], some -inf, some 60..140 below the
 * rest (terms under exp's cut-off), or (kind 3) all -inf. */
static void exp_row_input(float *x, int64_t n, int kind) {
    float a = kind == 0 ? 2.0f : 12.0f;
    for (int64_t t = 0; t < n; t++) {
        uint64_t r = next_u64() % 8;
        x[t] = kind == 3            ? -INFINITY
               : kind > 0 && r == 0 ? -INFINITY
               : kind > 0 && r == 1 ? -60.0f - 80.0f * fabsf(uniform(1.0f))
                                    : uniform(a);
    }
}

/* The portable row against double exp: each term within 2 float ulp of
 * exp(x - max) (0 where that is below exp(-87) -- the cut-off), 1 / sum
 * within 1e-6. */
static bool exp_row_vs_double(const float *x, const float *e, float inv, int64_t n) {
    float mx = -INFINITY;
    double sum = 0;
    for (int64_t t = 0; t < n; t++)
        mx = x[t] > mx ? x[t] : mx;
    if (mx == -INFINITY)
        return isinf(inv); /* all masked: the sum is 0 */
    for (int64_t t = 0; t < n; t++) {
        double d = (double)(x[t] - mx), want = exp(d); /* the difference in float, as the unfused Softmax */
        sum += (double)e[t];
        if (d < -87.0 ? e[t] != 0.0f : fabs(e[t] - want) > 2.0 * want * FLT_EPSILON) {
            printf("  term %lld: x - max %.9g: %.9g, exp in double %.9g\n", (long long)t, d, e[t], want);
            return false;
        }
    }
    if (fabs(inv * sum - 1.0) <= 1e-6)
        return true;
    printf("  1 / sum %.9g, in double %.9g\n", inv, 1.0 / sum);
    return false;
}

typedef void (*exp_rows_fn)(float *s, int64_t m, int64_t n, float *inv);

/* The softmax numerator rows: portable vs double, the vector ones vs it;
 * each case is a block of 3 rows of one kind (all masked: kind 3). */
static void check_exp_rows(void) {
    exp_rows_fn fns[2] = {NULL, NULL};
    const char *names[2] = {"AVX2", "AVX-512"};
#if defined(__x86_64__)
    if (inf__cpu_has_avx2_fma())
        fns[0] = inf__attention_exp_rows_avx2;
    if (inf__cpu_has_avx512())
        fns[1] = inf__attention_exp_rows_avx512;
#endif
    static const int64_t ns[] = {1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 64, 100, 128, 131, 512};
    enum { ROWS = 3 };
    int bad = 0, cases = 0;
    float x[ROWS * 512], e[ROWS * 512], v[ROWS * 512], inv[ROWS], vinv[ROWS];
    for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
        for (int kind = 0; kind < 4; kind++) {
            int64_t n = ns[a];
            exp_row_input(x, ROWS * n, kind);
            memcpy(e, x, (size_t)(ROWS * n) * sizeof(float));
            inf__attention_exp_rows(e, ROWS, n, inv);
            cases++;
            for (int r = 0; r < ROWS; r++)
                if (!exp_row_vs_double(x + r * n, e + r * n, inv[r], n)) {
                    printf("FAIL softmax numerator n %lld kind %d row %d: portable row off exp in double\n",
                           (long long)n, kind, r);
                    bad++;
                }
            for (int f = 0; f < 2; f++) {
                if (!fns[f])
                    continue;
                memcpy(v, x, (size_t)(ROWS * n) * sizeof(float));
                fns[f](v, ROWS, n, vinv);
                if (memcmp(v, e, (size_t)(ROWS * n) * sizeof(float)) || memcmp(vinv, inv, sizeof inv)) {
                    printf("FAIL softmax numerator n %lld kind %d: %s rows not the portable bits\n", (long long)n, kind,
                           names[f]);
                    bad++;
                }
            }
        }
    if (bad)
        n_failed++;
    else
        n_passed++;
    printf("attention: softmax numerator rows, %d blocks (portable vs double%s%s)\n", cases,
           fns[0] ? ", AVX2 bit for bit" : "; no AVX2/FMA: AVX2 rows skipped",
           fns[1] ? ", AVX-512 bit for bit" : "; no AVX-512 (or forced lower): AVX-512 rows skipped");
}

int main(int argc, char **argv) {
    int skip = kernel_paths_begin(argc, argv, "attention");
    if (skip) return skip;
    for (int trial = 0; trial <= N_RANDOM; trial++)
        check_case(trial);
    printf("attention: fused and unfused against a double reference, %d random shapes and an encoder's\n",
           n_passed + n_failed - 1);
    check_kt_avx2();
    check_exp_rows();
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}
