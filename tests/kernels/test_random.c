/*
 * test_random.c -- the distributions of the random generators (ops/ref/random.c):
 * RandomUniform, RandomNormal, RandomUniformLike, RandomNormalLike, Bernoulli
 * and Multinomial, each a one-node model built in memory and run with a fixed
 * seed through the public session API.
 *
 * Their values cannot match another runtime's (the ONNX test data come from
 * numpy's generator: tests/conformance/expected_failures.txt lists them), so
 * they are checked against the distribution the operator states instead:
 *   - sample mean and variance within 5 standard errors of the stated ones;
 *   - a Kolmogorov-Smirnov test against the stated CDF (uniform on [low, high),
 *     normal(mean, scale)): sqrt(n) * D below 1.95 (p ~ 0.001);
 *   - Bernoulli: values in {0, 1}, each group's ones within 5 sigma of n p;
 *   - Multinomial: class counts within 5 sigma of the softmax of the input;
 *   - a seed reproduces its values, another seed gives other values.
 * The seeds are fixed, so the test is deterministic.  Prints "N passed, M failed".
 */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infera/infera.h"
#include "infera/model.h"
#include "infera/session.h"
#include "infera/tensor.h"
#include "onnx.pb-c.h"
#include "onnx_value.h"

static int n_passed, n_failed;

/* One line per check: "ok   what: detail" or "FAIL what: detail". */
static void check(bool ok, const char *what, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void check(bool ok, const char *what, const char *fmt, ...) {
    va_list ap;
    if (ok) n_passed++;
    else n_failed++;
    printf("%s %s: ", ok ? "ok  " : "FAIL", what);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

/* ---- a one-node model ---- */

enum { MAX_ATTRS = 8 };

typedef struct node_spec {
    const char *op;
    int in_elem;             /* 0: no input */
    int64_t in_dims[2];
    int in_ndim;
    int out_elem;
    int64_t out_dims[2];
    int out_ndim;
    const char *fnames[MAX_ATTRS]; /* float attributes */
    float fvals[MAX_ATTRS];
    const char *inames[MAX_ATTRS]; /* int attributes */
    int64_t ivals[MAX_ATTRS];
    const int64_t *shape;          /* "shape" ints attribute, or NULL */
    int shape_n;
} node_spec;

static size_t build_model(const node_spec *sp, uint8_t **out) {
    Onnx__AttributeProto attrs[2 * MAX_ATTRS + 1], *attr_ptrs[2 * MAX_ATTRS + 1];
    int na = 0;
    for (int i = 0; i < MAX_ATTRS && sp->fnames[i]; i++, na++) {
        attrs[na] = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
        attrs[na].name = (char *)sp->fnames[i];
        attrs[na].has_type = 1, attrs[na].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
        attrs[na].has_f = 1, attrs[na].f = sp->fvals[i];
    }
    for (int i = 0; i < MAX_ATTRS && sp->inames[i]; i++, na++) {
        attrs[na] = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
        attrs[na].name = (char *)sp->inames[i];
        attrs[na].has_type = 1, attrs[na].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        attrs[na].has_i = 1, attrs[na].i = sp->ivals[i];
    }
    if (sp->shape) {
        attrs[na] = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
        attrs[na].name = "shape";
        attrs[na].has_type = 1, attrs[na].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        attrs[na].ints = (int64_t *)sp->shape, attrs[na].n_ints = (size_t)sp->shape_n;
        na++;
    }
    for (int i = 0; i < na; i++) attr_ptrs[i] = &attrs[i];
    char *in_name = "X", *out_name = "Y";
    Onnx__NodeProto node = ONNX__NODE_PROTO__INIT, *node_ptr = &node;
    node.op_type = (char *)sp->op;
    node.input = &in_name, node.n_input = sp->in_elem ? 1 : 0;
    node.output = &out_name, node.n_output = 1;
    node.attribute = attr_ptrs, node.n_attribute = (size_t)na;
    test_value vin, vout;
    Onnx__ValueInfoProto *in_ptr = sp->in_elem ? test_value_info(&vin, "X", sp->in_elem, sp->in_ndim, sp->in_dims) : NULL;
    Onnx__ValueInfoProto *out_ptr = test_value_info(&vout, "Y", sp->out_elem, sp->out_ndim, sp->out_dims);
    Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
    g.name = "random";
    g.node = &node_ptr, g.n_node = 1;
    g.input = &in_ptr, g.n_input = sp->in_elem ? 1 : 0;
    g.output = &out_ptr, g.n_output = 1;
    Onnx__OperatorSetIdProto op = ONNX__OPERATOR_SET_ID_PROTO__INIT, *ops[1] = {&op};
    op.domain = "", op.has_version = 1, op.version = 15;
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    m.has_ir_version = 1, m.ir_version = 8;
    m.opset_import = ops, m.n_opset_import = 1;
    m.graph = &g;
    size_t n = onnx__model_proto__get_packed_size(&m);
    *out = malloc(n);
    if (*out) onnx__model_proto__pack(&m, *out);
    return *out ? n : 0;
}

/* Runs the node on input x (NULL when it has none) and copies the n output
 * values to y as doubles.  false (printing why) on any error. */
static bool run_node(const node_spec *sp, const void *x, double *y, int64_t n) {
    uint8_t *bytes = NULL;
    size_t size = build_model(sp, &bytes);
    inf_model *m = NULL;
    inf_session *s = NULL;
    inf_error err = {0};
    bool ok = false;
    inf_tensor t;
    const inf_tensor *inputs[1] = {&t};
    inf_tensor *const *o;
    inf_session_options so = {.n_threads = 1};
    if (sp->in_elem)
        inf_tensor_init_view(&t, sp->in_elem == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE ? INF_DTYPE_F64 : INF_DTYPE_F32,
                             sp->in_ndim, sp->in_dims, (void *)x);
    if (!size || inf_model_load_buffer(bytes, size, NULL, NULL, &m, &err) != INF_OK ||
        inf_session_new(m, &so, &s, &err) != INF_OK || inf_session_run(s, sp->in_elem ? inputs : NULL, &o, &err) != INF_OK) {
        printf("FAIL %s: load/run: %s\n", sp->op, err.message);
        n_failed++;
        goto done;
    }
    if (inf_tensor_numel(o[0]) != n) {
        printf("FAIL %s: %lld values, expected %lld\n", sp->op, (long long)inf_tensor_numel(o[0]), (long long)n);
        n_failed++;
        goto done;
    }
    for (int64_t i = 0; i < n; i++) {
        switch (o[0]->dtype) {
        case INF_DTYPE_F32: y[i] = ((const float *)o[0]->data)[i]; break;
        case INF_DTYPE_F64: y[i] = ((const double *)o[0]->data)[i]; break;
        case INF_DTYPE_I32: y[i] = ((const int32_t *)o[0]->data)[i]; break;
        case INF_DTYPE_I64: y[i] = (double)((const int64_t *)o[0]->data)[i]; break;
        default:
            printf("FAIL %s: unexpected output dtype %s\n", sp->op, inf_dtype_name(o[0]->dtype));
            n_failed++;
            goto done;
        }
    }
    ok = true;
done:
    inf_session_free(s);
    inf_model_free(m);
    free(bytes);
    return ok;
}

/* ---- statistics ---- */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double cdf_uniform(double x, double lo, double hi) { return x <= lo ? 0 : x >= hi ? 1 : (x - lo) / (hi - lo); }
static double cdf_normal(double x, double mu, double sd) { return 0.5 * erfc(-(x - mu) / (sd * sqrt(2.0))); }

/* sqrt(n) * sup |F_n - F| over the sorted sample y (sorted in place). */
static double ks_stat(double *y, int64_t n, double (*cdf)(double, double, double), double a, double b) {
    qsort(y, (size_t)n, sizeof *y, cmp_double);
    double d = 0;
    for (int64_t i = 0; i < n; i++) {
        double f = cdf(y[i], a, b), lo = f - (double)i / n, hi = (double)(i + 1) / n - f;
        if (lo > d) d = lo;
        if (hi > d) d = hi;
    }
    return sqrt((double)n) * d;
}

/* Mean and variance within 5 standard errors of mu, var (fourth central moment m4). */
static void check_moments(const char *what, const double *y, int64_t n, double mu, double var, double m4) {
    double s = 0, q = 0;
    for (int64_t i = 0; i < n; i++) s += y[i];
    double mean = s / n;
    for (int64_t i = 0; i < n; i++) q += (y[i] - mean) * (y[i] - mean);
    double v = q / (n - 1);
    char name[128];
    snprintf(name, sizeof name, "%s mean", what);
    check(fabs(mean - mu) <= 5 * sqrt(var / n), name, "%.5f (stated %.5f, 5 standard errors)", mean, mu);
    snprintf(name, sizeof name, "%s variance", what);
    check(fabs(v - var) <= 5 * sqrt((m4 - var * var) / n), name, "%.5f (stated %.5f, 5 standard errors)", v, var);
}

enum { N = 200000 };
static double y[N], y2[N];

static void check_seed(const node_spec *sp, const void *x, const char *what) {
    node_spec other = *sp;
    for (int i = 0; i < MAX_ATTRS && other.fnames[i]; i++)
        if (!strcmp(other.fnames[i], "seed")) other.fvals[i] += 1;
    bool same = run_node(sp, x, y, N) && run_node(sp, x, y2, N) && !memcmp(y, y2, sizeof y);
    check(same, what, "%s", same ? "same values" : "differ");
    bool differ = run_node(&other, x, y2, N) && memcmp(y, y2, sizeof y) != 0;
    char name[128];
    snprintf(name, sizeof name, "%s: another seed gives other values", sp->op);
    check(differ, name, "%s", differ ? "yes" : "no");
}

static void uniform_checks(const node_spec *sp, const void *x, double lo, double hi) {
    if (!run_node(sp, x, y, N)) return;
    int64_t out = 0;
    for (int64_t i = 0; i < N; i++) out += !(y[i] >= lo && y[i] < hi);
    check(out == 0, sp->op, "%lld values outside [low, high)", (long long)out);
    double w = hi - lo;
    check_moments(sp->op, y, N, (lo + hi) / 2, w * w / 12, w * w * w * w / 80);
    double ks = ks_stat(y, N, cdf_uniform, lo, hi);
    char name[128];
    snprintf(name, sizeof name, "%s Kolmogorov-Smirnov vs uniform[%g, %g)", sp->op, lo, hi);
    check(ks < 1.95, name, "sqrt(n) D = %.3f (< 1.95, p ~ 0.001)", ks);
}

static void normal_checks(const node_spec *sp, const void *x, double mu, double sd) {
    if (!run_node(sp, x, y, N)) return;
    double v = sd * sd;
    check_moments(sp->op, y, N, mu, v, 3 * v * v);
    double ks = ks_stat(y, N, cdf_normal, mu, sd);
    char name[128];
    snprintf(name, sizeof name, "%s Kolmogorov-Smirnov vs normal(%g, %g)", sp->op, mu, sd);
    check(ks < 1.95, name, "sqrt(n) D = %.3f (< 1.95, p ~ 0.001)", ks);
}

int main(void) {
    enum { F = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, D = ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE,
           I32 = ONNX__TENSOR_PROTO__DATA_TYPE__INT32 };
    static const int64_t shape[1] = {N};
    static float xf[N];
    static double xd[N];

    node_spec u = {.op = "RandomUniform", .out_elem = F, .out_dims = {N}, .out_ndim = 1,
                   .fnames = {"low", "high", "seed"}, .fvals = {-2, 3, 7}, .shape = shape, .shape_n = 1};
    uniform_checks(&u, NULL, -2, 3);
    check_seed(&u, NULL, "RandomUniform: the seed reproduces its values");

    node_spec nrm = {.op = "RandomNormal", .out_elem = D, .out_dims = {N}, .out_ndim = 1,
                     .fnames = {"mean", "scale", "seed"}, .fvals = {1.5f, 2, 11}, .inames = {"dtype"},
                     .ivals = {D}, .shape = shape, .shape_n = 1};
    normal_checks(&nrm, NULL, 1.5, 2);
    check_seed(&nrm, NULL, "RandomNormal: the seed reproduces its values");

    node_spec ul = {.op = "RandomUniformLike", .in_elem = D, .in_dims = {N}, .in_ndim = 1, .out_elem = D,
                    .out_dims = {N}, .out_ndim = 1, .fnames = {"low", "high", "seed"}, .fvals = {10, 10.5f, 3}};
    uniform_checks(&ul, xd, 10, 10.5);

    node_spec nl = {.op = "RandomNormalLike", .in_elem = F, .in_dims = {N}, .in_ndim = 1, .out_elem = F,
                    .out_dims = {N}, .out_ndim = 1, .fnames = {"mean", "scale", "seed"}, .fvals = {-4, 0.25f, 5}};
    normal_checks(&nl, xf, -4, 0.25);

    /* Bernoulli: four groups of probabilities */
    static const float ps[4] = {0.0f, 0.05f, 0.5f, 0.9f};
    for (int64_t i = 0; i < N; i++) xf[i] = ps[i % 4];
    node_spec b = {.op = "Bernoulli", .in_elem = F, .in_dims = {N}, .in_ndim = 1, .out_elem = F, .out_dims = {N},
                   .out_ndim = 1, .fnames = {"seed"}, .fvals = {13}};
    if (run_node(&b, xf, y, N)) {
        int64_t ones[4] = {0}, other = 0;
        for (int64_t i = 0; i < N; i++) {
            if (y[i] == 1) ones[i % 4]++;
            else if (y[i] != 0) other++;
        }
        check(other == 0, "Bernoulli", "%lld values neither 0 nor 1", (long long)other);
        for (int g = 0; g < 4; g++) {
            double n = N / 4, p = ps[g], want = n * p;
            char name[64];
            snprintf(name, sizeof name, "Bernoulli p = %.2f: ones", p);
            check(fabs(ones[g] - want) <= 5 * sqrt(n * p * (1 - p)), name, "%lld (n p = %.1f, 5 sigma)",
                  (long long)ones[g], want);
        }
    }
    check_seed(&b, xf, "Bernoulli: the seed reproduces its values");

    /* Multinomial: one row of unnormalised log-probabilities, N draws */
    static const float logits[4] = {0.0f, 1.0f, -1.0f, 0.5f};
    node_spec mn = {.op = "Multinomial", .in_elem = F, .in_dims = {1, 4}, .in_ndim = 2, .out_elem = I32,
                    .out_dims = {1, N}, .out_ndim = 2, .fnames = {"seed"}, .fvals = {17},
                    .inames = {"sample_size"}, .ivals = {N}};
    if (run_node(&mn, logits, y, N)) {
        double z = 0, cnt[4] = {0};
        int64_t bad = 0;
        for (int k = 0; k < 4; k++) z += exp(logits[k]);
        for (int64_t i = 0; i < N; i++) {
            int k = (int)y[i];
            if (k < 0 || k > 3 || k != y[i]) bad++;
            else cnt[k]++;
        }
        check(bad == 0, "Multinomial", "%lld draws outside the classes 0..3", (long long)bad);
        for (int k = 0; k < 4; k++) {
            double p = exp(logits[k]) / z;
            char name[64];
            snprintf(name, sizeof name, "Multinomial class %d (p = %.4f): draws", k, p);
            check(fabs(cnt[k] - N * p) <= 5 * sqrt(N * p * (1 - p)), name, "%.0f (n p = %.1f, 5 sigma)", cnt[k], N * p);
        }
    }
    check_seed(&mn, logits, "Multinomial: the seed reproduces its values");

    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}
