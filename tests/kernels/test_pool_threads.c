/*
 * test_pool_threads.c -- MaxPool and AveragePool through the public API on
 * pools of 1, 2 and 3 threads: the driver's splits (ops/ref/pool.c: by
 * channel planes, or by bands of output rows when the batch is smaller than
 * the threads) must give the bits of the reference twin
 * inf__ops_pool2d_f32_ref, the plain window loop, at every thread count.
 *
 * Cases: a one-node model (X a graph input, batch left symbolic) with
 * random 2-D shapes -- channels 1..40, input 1..70 x 1..70, kernel 1..4,
 * strides 1..3, pads (top pads keep the plane split, no top pad takes the
 * row split at batch 1), max and average -- at batch 1, 2 and 3; and the
 * bench CNN's MaxPool (2x2 / 2 on 32 x 64 x 64, batch 1).  Max must be
 * bit-identical to the reference; the average within 1e-6 relative (the
 * reference sums in double), and identical across thread counts.
 * Prints "N passed, M failed"; skips on a CPU without AVX2/FMA (the fast
 * driver then does not run).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu.h"
#include "infera/session.h"
#include "onnx/onnx.h"
#include "onnx_value.h"
#include "ops/ops.h"

static int n_passed, n_failed;
#define KERNEL_TEST_SEED 0x9E3779B97F4A7C15ull
#include "test_rng.h"

#if defined(__x86_64__)

typedef struct pool_case {
    int64_t c, ih, iw, kh, kw, sh, sw, pads[4]; /* pads: top, left, bottom, right */
    bool max;
} pool_case;

static Onnx__AttributeProto *ints_attr(const char *name, int n, int64_t *v) {
    Onnx__AttributeProto *a = calloc(1, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = (char *)name, a->has_type = 1, a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    a->n_ints = (size_t)n, a->ints = v;
    return a;
}

/* Packs a one-node MaxPool / AveragePool model; *size receives its length. */
static uint8_t *pool_model(const pool_case *pc, size_t *size) {
    int64_t xd[4] = {-1, pc->c, pc->ih, pc->iw};
    int64_t kshape[2] = {pc->kh, pc->kw}, strides[2] = {pc->sh, pc->sw};
    int64_t pads[4] = {pc->pads[0], pc->pads[1], pc->pads[2], pc->pads[3]};
    Onnx__AttributeProto *attrs[3] = {ints_attr("kernel_shape", 2, kshape), ints_attr("strides", 2, strides),
                                      ints_attr("pads", 4, pads)};
    const char *in_names[1] = {"X"}, *out_names[1] = {"Y"};
    Onnx__NodeProto node;
    onnx__node_proto__init(&node);
    node.op_type = pc->max ? "MaxPool" : "AveragePool", node.n_input = 1, node.input = (char **)in_names;
    node.n_output = 1, node.output = (char **)out_names, node.n_attribute = 3, node.attribute = attrs;
    Onnx__NodeProto *np = &node;
    test_value vx, vy;
    Onnx__ValueInfoProto *in = test_value_info(&vx, "X", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, xd),
                         *out = test_value_info(&vy, "Y", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0,
                                                NULL); /* shape left to the engine */
    Onnx__GraphProto graph;
    onnx__graph_proto__init(&graph);
    graph.name = "pool", graph.n_node = 1, graph.node = &np;
    graph.n_input = 1, graph.input = &in, graph.n_output = 1, graph.output = &out;
    Onnx__OperatorSetIdProto os;
    onnx__operator_set_id_proto__init(&os);
    os.domain = "", os.has_version = 1, os.version = 13;
    Onnx__OperatorSetIdProto *osp = &os;
    Onnx__ModelProto mp;
    onnx__model_proto__init(&mp);
    mp.has_ir_version = 1, mp.ir_version = 8, mp.n_opset_import = 1, mp.opset_import = &osp, mp.graph = &graph;
    *size = onnx__model_proto__get_packed_size(&mp);
    uint8_t *bytes = malloc(*size);
    if (bytes) onnx__model_proto__pack(&mp, bytes);
    for (int i = 0; i < 3; i++)
        free(attrs[i]);
    return bytes;
}

static int64_t out_dim(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe) {
    int64_t span = in + pb + pe - k;
    return span < 0 ? -1 : span / s + 1;
}

/* Runs the case at batch n on `threads` threads into y (false on any error). */
static bool run_threads(const pool_case *pc, const uint8_t *bytes, size_t size, int64_t n, int threads, const float *x,
                        float *y, int64_t ny) {
    inf_model *m = NULL;
    inf_session *s = NULL;
    inf_error err;
    inf_session_options opts;
    inf_session_options_init(&opts);
    opts.n_threads = threads;
    bool ok = inf_model_load_buffer(bytes, size, NULL, NULL, &m, &err) == INF_OK &&
              inf_session_new(m, &opts, &s, &err) == INF_OK;
    inf_tensor xt;
    int64_t xd[4] = {n, pc->c, pc->ih, pc->iw};
    inf_tensor_init_view(&xt, INF_DTYPE_F32, 4, xd, (void *)x);
    const inf_tensor *in[1] = {&xt};
    inf_tensor *const *out = NULL;
    ok = ok && inf_session_run(s, in, &out, &err) == INF_OK && inf_tensor_numel(out[0]) == ny;
    if (ok)
        memcpy(y, out[0]->data, (size_t)ny * sizeof(float));
    else
        fprintf(stderr, "run failed (%d threads): %s\n", threads, err.message);
    inf_session_free(s);
    inf_model_free(m);
    return ok;
}

static void check_case(const pool_case *pc, int64_t n) {
    inf__pool2d q = {pc->ih,      pc->iw,      0,           0,           pc->kh,  pc->kw, pc->sh, pc->sw,
                     pc->pads[0], pc->pads[1], pc->pads[2], pc->pads[3], pc->max, false,  0,      0};
    q.oh = out_dim(pc->ih, pc->kh, pc->sh, pc->pads[0], pc->pads[2]);
    q.ow = out_dim(pc->iw, pc->kw, pc->sw, pc->pads[1], pc->pads[3]);
    if (q.oh < 1 || q.ow < 1) return;
    int64_t nx = n * pc->c * pc->ih * pc->iw, ny = n * pc->c * q.oh * q.ow;
    float *x = malloc((size_t)nx * sizeof *x), *ref = malloc((size_t)ny * sizeof *ref);
    float *y[3] = {malloc((size_t)ny * sizeof(float)), malloc((size_t)ny * sizeof(float)),
                   malloc((size_t)ny * sizeof(float))};
    size_t size = 0;
    uint8_t *bytes = pool_model(pc, &size);
    bool ok = x && ref && y[0] && y[1] && y[2] && bytes;
    for (int64_t i = 0; ok && i < nx; i++)
        x[i] = next_u64() % 50 ? uniform() : next_u64() % 2 ? -0.0f : 0.0f;
    if (ok) inf__ops_pool2d_f32_ref(&q, x, ref, n * pc->c);
    for (int t = 0; ok && t < 3; t++)
        ok = run_threads(pc, bytes, size, n, t + 1, x, y[t], ny);
    for (int t = 0; ok && t < 3; t++) {
        if (t > 0 && memcmp(y[t], y[0], (size_t)ny * sizeof(float))) {
            fprintf(stderr, "%d threads differ from 1\n", t + 1);
            ok = false;
        }
        for (int64_t i = 0; ok && i < ny; i++) {
            bool same = pc->max ? !memcmp(&y[t][i], &ref[i], sizeof(float))
                                : fabsf(y[t][i] - ref[i]) <= 1e-6f * (fabsf(ref[i]) + 1.0f);
            if (!same) {
                fprintf(stderr, "element %lld: %g, reference %g (%d threads)\n", (long long)i, y[t][i], ref[i], t + 1);
                ok = false;
            }
        }
    }
    if (ok)
        n_passed++;
    else {
        n_failed++;
        fprintf(stderr, "FAIL %s n=%lld c=%lld in=%lldx%lld k=%lldx%lld s=%lldx%lld pads=%lld,%lld,%lld,%lld\n",
                pc->max ? "max" : "avg", (long long)n, (long long)pc->c, (long long)pc->ih, (long long)pc->iw,
                (long long)pc->kh, (long long)pc->kw, (long long)pc->sh, (long long)pc->sw, (long long)pc->pads[0],
                (long long)pc->pads[1], (long long)pc->pads[2], (long long)pc->pads[3]);
    }
    free(bytes), free(x), free(ref), free(y[0]), free(y[1]), free(y[2]);
}

int main(void) {
    if (!inf__cpu_has_avx2_fma()) {
        printf("pool threads: CPU without AVX2/FMA (the fast driver does not run), skipped\n");
        return 77;
    }
    pool_case bench = {32, 64, 64, 2, 2, 2, 2, {0, 0, 0, 0}, true}; /* the bench CNN's MaxPool */
    check_case(&bench, 1);
    for (int i = 0; i < 150; i++) {
        pool_case pc;
        pc.c = rand_in(1, 40), pc.ih = rand_in(1, 70), pc.iw = rand_in(1, 70);
        pc.kh = rand_in(1, 4), pc.kw = rand_in(1, 4), pc.sh = rand_in(1, 3), pc.sw = rand_in(1, 3);
        for (int k = 0; k < 4; k++)
            pc.pads[k] = next_u64() % 3 ? 0 : rand_in(0, (k % 2 ? pc.kw : pc.kh) - 1);
        pc.max = next_u64() % 4 != 0;
        check_case(&pc, i % 3 + 1);
    }
    printf("pool threads (1, 2, 3) vs ref: %s\n", n_failed ? "FAILED" : "ok");
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}
#else
int main(void) {
    (void)n_passed, (void)n_failed;
    printf("pool threads: the x86-64 pooling kernels are not built on this architecture, skipped\n");
    return 77;
}
#endif
