/*
 * test_conv.c -- Conv's direct paths (ops/ref/conv.c: depthwise 2-D, 1x1;
 * on AVX2 the panel and the direct 16-channel kernels of ops/x86) and the
 * im2col + sgemm path against a plain double-precision convolution
 * written here from the ONNX definition, through the public API (a one-node
 * model built with protobuf-c, X, W and B as graph inputs, and again with W
 * as an initializer so the load-time paths run too).
 *
 * Random 2-D shapes: batch 1..3, channels 1..9, depthwise (group = C = M),
 * grouped, 1x1 (stride 1 and 2) and general kernels up to 5x5, strides 1..3,
 * dilations 1..2, asymmetric pads, with and without bias; 1 and 2 threads;
 * and "wide" ones (16..64 output channels per group, K >= 96: the AVX2
 * direct kernel, with its zero-padded copy of X and, when W is a graph
 * input, W packed at run time).  A second run of the batch allocates
 * nothing (the kernels' scratch comes from the session's pool).
 * Tolerance per element: 1e-5 * sum |w x| + 1e-6.  Also checks that each
 * image alone gives the same bits as inside the batch (batch invariance),
 * and a depthwise Conv's bits against fmaf in (ky, kx) order, the contract
 * of all its paths (ctest runs this again with INFERA_CPU=avx2 and
 * =generic: ops/ref/conv.c's depthwise_planes).
 * Prints "N passed, M failed".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infera/session.h"
#include "onnx/onnx.h"
#include "onnx_value.h"
#include "ops/ops.h"
#include "test_allocs.h"

static int n_passed, n_failed;
#define KERNEL_TEST_SEED 0xD1B54A32D192ED03ull
#include "test_rng.h"

typedef struct conv_case {
    int64_t n, c, m, group, ih, iw, kh, kw, s[2], d[2], pads[4];
    bool bias, w_const;
} conv_case;

static Onnx__AttributeProto *ints_attr(const char *name, int n, int64_t *v) {
    Onnx__AttributeProto *a = calloc(1, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = (char *)name, a->has_type = 1, a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    a->n_ints = (size_t)n, a->ints = v;
    return a;
}

/* Packs a one-node Conv model; *size receives its length. */
static uint8_t *conv_model(const conv_case *cc, const float *w, size_t *size) {
    int64_t xd[4] = {-1, cc->c, cc->ih, cc->iw}, wd[4] = {cc->m, cc->c / cc->group, cc->kh, cc->kw};
    int64_t bd[1] = {cc->m};
    int64_t kshape[2] = {cc->kh, cc->kw}, strides[2] = {cc->s[0], cc->s[1]}, dil[2] = {cc->d[0], cc->d[1]};
    int64_t pads[4] = {cc->pads[0], cc->pads[1], cc->pads[2], cc->pads[3]};
    Onnx__AttributeProto *attrs[5];
    attrs[0] = ints_attr("kernel_shape", 2, kshape);
    attrs[1] = ints_attr("strides", 2, strides);
    attrs[2] = ints_attr("dilations", 2, dil);
    attrs[3] = ints_attr("pads", 4, pads);
    attrs[4] = calloc(1, sizeof *attrs[4]);
    onnx__attribute_proto__init(attrs[4]);
    attrs[4]->name = "group", attrs[4]->has_type = 1, attrs[4]->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    attrs[4]->has_i = 1, attrs[4]->i = cc->group;
    const char *in_names[3] = {"X", "W", "B"}, *out_names[1] = {"Y"};
    Onnx__NodeProto node;
    onnx__node_proto__init(&node);
    node.op_type = "Conv", node.n_input = cc->bias ? 3 : 2, node.input = (char **)in_names;
    node.n_output = 1, node.output = (char **)out_names, node.n_attribute = 5, node.attribute = attrs;
    Onnx__NodeProto *np = &node;
    const int f32 = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    test_value vals[4];
    Onnx__ValueInfoProto *ins[3] = {test_value_info(&vals[0], "X", f32, 4, xd),
                                    test_value_info(&vals[1], "W", f32, 4, wd),
                                    test_value_info(&vals[2], "B", f32, 1, bd)};
    Onnx__ValueInfoProto *out = test_value_info(&vals[3], "Y", f32, 0, NULL); /* shape left to the engine */
    Onnx__TensorProto init;
    onnx__tensor_proto__init(&init);
    int64_t wdims[4] = {wd[0], wd[1], wd[2], wd[3]};
    init.name = "W", init.has_data_type = 1, init.data_type = 1, init.n_dims = 4, init.dims = wdims;
    init.n_float_data = (size_t)(wd[0] * wd[1] * wd[2] * wd[3]), init.float_data = (float *)w;
    Onnx__TensorProto *initp = &init;
    Onnx__ValueInfoProto *graph_ins[3] = {ins[0], cc->w_const ? ins[2] : ins[1], ins[2]};
    Onnx__GraphProto graph;
    onnx__graph_proto__init(&graph);
    graph.name = "conv", graph.n_node = 1, graph.node = &np;
    graph.n_input = (size_t)(1 + !cc->w_const + cc->bias), graph.input = graph_ins;
    graph.n_output = 1, graph.output = &out;
    if (cc->w_const) graph.n_initializer = 1, graph.initializer = &initp;
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
    for (int i = 0; i < 5; i++)
        free(attrs[i]);
    return bytes;
}

static int64_t out_dim(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe) {
    int64_t span = in + pb + pe - ((k - 1) * d + 1);
    return span < 0 ? 0 : span / s + 1;
}

/* Runs images [n0, n0 + nb) of x through s (W and B as graph inputs unless
 * W is an initializer); false with err set when the run fails. */
static bool run_images(inf_session *s, const conv_case *cc, const float *x, const float *w, const float *b, int64_t n0,
                       int64_t nb, inf_tensor *const **outs, inf_error *err) {
    int64_t xd[4] = {nb, cc->c, cc->ih, cc->iw}, wd[4] = {cc->m, cc->c / cc->group, cc->kh, cc->kw}, bd[1] = {cc->m};
    inf_tensor tx, tw, tb;
    inf_tensor_init_view(&tx, INF_DTYPE_F32, 4, xd, (void *)(x + n0 * cc->c * cc->ih * cc->iw));
    inf_tensor_init_view(&tw, INF_DTYPE_F32, 4, wd, (void *)w);
    inf_tensor_init_view(&tb, INF_DTYPE_F32, 1, bd, (void *)b);
    const inf_tensor *inputs[3] = {&tx, cc->w_const ? &tb : &tw, &tb};
    return inf_session_run(s, inputs, outs, err) == INF_OK;
}

/* A depthwise Conv's bits, on every kernel path (docs/convolutions.md): per
 * output 0, then fmaf(w, x, sum) over the in-range taps in (ky, kx) order,
 * then + bias.  False (printed) at the first output that differs. */
static bool depthwise_bits_ok(const conv_case *cc, const float *x, const float *w, const float *b, const float *y,
                              int64_t oh, int64_t ow) {
    for (int64_t n = 0; n < cc->n; n++)
        for (int64_t m = 0; m < cc->m; m++)
            for (int64_t oy = 0; oy < oh; oy++)
                for (int64_t ox = 0; ox < ow; ox++) {
                    float sum = 0.0f;
                    for (int64_t ky = 0; ky < cc->kh; ky++)
                        for (int64_t kx = 0; kx < cc->kw; kx++) {
                            int64_t iy = oy * cc->s[0] - cc->pads[0] + ky * cc->d[0];
                            int64_t ix = ox * cc->s[1] - cc->pads[1] + kx * cc->d[1];
                            if (iy >= 0 && iy < cc->ih && ix >= 0 && ix < cc->iw)
                                sum = fmaf(w[(m * cc->kh + ky) * cc->kw + kx],
                                           x[((n * cc->c + m) * cc->ih + iy) * cc->iw + ix], sum);
                        }
                    if (cc->bias) sum += b[m];
                    float got = y[((n * cc->m + m) * oh + oy) * ow + ox];
                    if (memcmp(&got, &sum, sizeof sum)) {
                        fprintf(stderr, "  depthwise y[%lld,%lld,%lld,%lld] = %.9g, fmaf in (ky, kx) order %.9g\n",
                                (long long)n, (long long)m, (long long)oy, (long long)ox, got, sum);
                        return false;
                    }
                }
    return true;
}

static void check_case(const conv_case *cc, int threads) {
    int64_t oh = out_dim(cc->ih, cc->kh, cc->s[0], cc->d[0], cc->pads[0], cc->pads[2]);
    int64_t ow = out_dim(cc->iw, cc->kw, cc->s[1], cc->d[1], cc->pads[1], cc->pads[3]);
    if (oh < 1 || ow < 1) return;
    int64_t cg = cc->c / cc->group, mg = cc->m / cc->group;
    size_t nx = (size_t)(cc->n * cc->c * cc->ih * cc->iw), nw = (size_t)(cc->m * cg * cc->kh * cc->kw);
    size_t ny = (size_t)(cc->n * cc->m * oh * ow), plane_y = (size_t)(cc->m * oh * ow);
    test_allocs A = {0};
    float *x = test_alloc(&A, nx * sizeof *x), *w = test_alloc(&A, nw * sizeof *w);
    float *b = test_alloc(&A, (size_t)cc->m * sizeof *b), *yfull = test_alloc(&A, ny * sizeof *yfull);
    bool ok = !A.failed;
    for (size_t i = 0; ok && i < nx; i++) x[i] = uniform();
    for (size_t i = 0; ok && i < nw; i++) w[i] = uniform();
    for (int64_t i = 0; ok && i < cc->m; i++) b[i] = uniform();
    size_t size = 0;
    uint8_t *bytes = ok ? conv_model(cc, w, &size) : NULL;
    inf_model *model = NULL;
    inf_session *s = NULL;
    inf_error err = {0};
    ok = bytes && inf_model_load_buffer(bytes, size, NULL, NULL, &model, &err) == INF_OK;
    inf_session_options opts;
    inf_session_options_init(&opts);
    opts.n_threads = threads;
    ok = ok && inf_session_new(model, &opts, &s, &err) == INF_OK;
    for (int pass = 0; ok && pass <= cc->n; pass++) {
        /* pass 0: the whole batch; pass i: image i - 1 alone */
        int64_t n0 = pass ? pass - 1 : 0, nb = pass ? 1 : cc->n;
        inf_tensor *const *outs;
        if (!run_images(s, cc, x, w, b, n0, nb, &outs, &err)) {
            fprintf(stderr, "  run: %s\n", err.message);
            ok = false;
            break;
        }
        const float *y = outs[0]->data;
        if (pass) {
            ok = memcmp(y, yfull + n0 * plane_y, plane_y * sizeof *y) == 0;
            if (!ok) fprintf(stderr, "  image %lld alone differs from the batch\n", (long long)n0);
            continue;
        }
        memcpy(yfull, y, ny * sizeof *y);
        if (cc->group == cc->c && cc->m == cc->c && !depthwise_bits_ok(cc, x, w, b, y, oh, ow)) ok = false;
        for (int64_t n = 0; n < cc->n && ok; n++)
            for (int64_t m = 0; m < cc->m && ok; m++)
                for (int64_t oy = 0; oy < oh && ok; oy++)
                    for (int64_t ox = 0; ox < ow && ok; ox++) {
                        int64_t gi = m / mg;
                        double acc = cc->bias ? b[m] : 0.0, mag = 0.0;
                        for (int64_t ci = 0; ci < cg; ci++)
                            for (int64_t ky = 0; ky < cc->kh; ky++)
                                for (int64_t kx = 0; kx < cc->kw; kx++) {
                                    int64_t iy = oy * cc->s[0] - cc->pads[0] + ky * cc->d[0];
                                    int64_t ix = ox * cc->s[1] - cc->pads[1] + kx * cc->d[1];
                                    if (iy < 0 || iy >= cc->ih || ix < 0 || ix >= cc->iw) continue;
                                    double pv = (double)w[((m * cg + ci) * cc->kh + ky) * cc->kw + kx] *
                                                x[((n * cc->c + gi * cg + ci) * cc->ih + iy) * cc->iw + ix];
                                    acc += pv, mag += fabs(pv);
                                }
                        float got = y[((n * cc->m + m) * oh + oy) * ow + ox];
                        if (!(fabs(got - acc) <= 1e-5 * mag + 1e-6)) {
                            fprintf(stderr, "  y[%lld,%lld,%lld,%lld] = %.9g, want %.9g\n", (long long)n, (long long)m,
                                    (long long)oy, (long long)ox, got, acc);
                            ok = false;
                        }
                    }
    }
    /* warm: the same batch again allocates nothing */
    inf_tensor *const *outs;
    inf_alloc_stats before, after;
    ok = ok && run_images(s, cc, x, w, b, 0, cc->n, &outs, &err);
    inf_alloc_get_stats(&before);
    ok = ok && run_images(s, cc, x, w, b, 0, cc->n, &outs, &err);
    inf_alloc_get_stats(&after);
    if (ok && after.n_allocs != before.n_allocs) {
        fprintf(stderr, "  a warm run made %llu allocations\n", (unsigned long long)(after.n_allocs - before.n_allocs));
        ok = false;
    }
    if (ok) {
        n_passed++;
    } else {
        n_failed++;
        fprintf(stderr,
                "FAIL conv threads=%d n=%lld c=%lld m=%lld group=%lld in=%lldx%lld k=%lldx%lld s=%lld,%lld d=%lld,%lld "
                "pads=%lld,%lld,%lld,%lld bias=%d w_const=%d%s%s\n",
                threads, (long long)cc->n, (long long)cc->c, (long long)cc->m, (long long)cc->group, (long long)cc->ih,
                (long long)cc->iw, (long long)cc->kh, (long long)cc->kw, (long long)cc->s[0], (long long)cc->s[1],
                (long long)cc->d[0], (long long)cc->d[1], (long long)cc->pads[0], (long long)cc->pads[1],
                (long long)cc->pads[2], (long long)cc->pads[3], cc->bias, cc->w_const, err.message[0] ? ": " : "",
                err.message);
    }
    inf_session_free(s);
    inf_model_free(model);
    free(bytes);
    test_allocs_free(&A);
}

int main(void) {
    for (int i = 0; i < 400; i++) {
        conv_case cc;
        memset(&cc, 0, sizeof cc);
        int kind = (int)(next_u64() % 5); /* depthwise, 1x1, grouped, general, wide */
        cc.n = rand_in(1, 3), cc.c = kind == 4 ? rand_in(11, 40) : rand_in(1, 9);
        cc.group = kind == 0 ? cc.c : kind == 2 ? (cc.c % 3 == 0 ? 3 : cc.c % 2 == 0 ? 2 : 1) : 1;
        if (kind == 4) cc.m = 16 * rand_in(1, 3) + (next_u64() % 2 ? 0 : rand_in(1, 15));
        else cc.m = kind == 0 ? cc.c : cc.group * rand_in(1, 4);
        cc.kh = kind == 1 ? 1 : rand_in(1, 5), cc.kw = kind == 1 ? 1 : rand_in(1, 5);
        if (kind == 4) cc.kh = rand_in(3, 4), cc.kw = rand_in(3, 4); /* K >= 11 * 9 */
        cc.ih = rand_in(1, 24), cc.iw = rand_in(1, 40);
        for (int d = 0; d < 2; d++) {
            cc.s[d] = kind == 1 ? rand_in(1, 2) : rand_in(1, 3);
            cc.d[d] = kind == 1 || next_u64() % 3 ? 1 : 2;
        }
        for (int q = 0; q < 4; q++) cc.pads[q] = kind == 1 ? 0 : rand_in(0, (q % 2 ? cc.kw : cc.kh) - 1);
        cc.bias = next_u64() % 2;
        cc.w_const = next_u64() % 2;
        check_case(&cc, 1 + (int)(next_u64() % 2));
    }
    printf("conv (depthwise, 1x1, grouped, general, wide) vs direct double loops: %s\n", n_failed ? "FAILED" : "ok");
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}
