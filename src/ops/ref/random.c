/*
 * random.c -- reference kernels for the random generators.
 *
 * ONNX ops:
 *   RandomUniform      opsets 1-17: shape, dtype (float32 default, float64,
 *                      float16), low (0), high (1), seed.
 *   RandomNormal       opsets 1-17: shape, dtype, mean (0), scale (1), seed.
 *   RandomUniformLike, RandomNormalLike  opsets 1-17: the shape of the input;
 *                      dtype defaults to the input's.
 *   Bernoulli          opsets 15-17: y = 1 with probability input[i] (float
 *                      types), else 0; dtype (default the input's) may be
 *                      any numeric type or bool.
 *   Multinomial        opsets 7-17: input [batch, classes] of unnormalised
 *                      log-probabilities (float32/float64), sample_size (1)
 *                      draws per row, dtype int32 (default) or int64.
 * Generator: xoshiro256** seeded through splitmix64; uniform doubles in
 * [0, 1) from the top 53 bits, normals by Box-Muller.
 * Deviations: values cannot match other implementations (nor the ONNX test
 *   data, which come from numpy).  With `seed`, every run of the node
 *   produces the same values (the generator restarts from the seed: a
 *   session is shared, read-only, across threads, so the node keeps no
 *   state); without it each run draws a fresh seed from a process-wide
 *   counter mixed with the clock.
 */
#include <math.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "ops/ops.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* ---- generator ---- */

typedef struct rng {
    uint64_t s[4];
} rng;

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(rng *r) {
    uint64_t *s = r->s, result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0], s[3] ^= s[1], s[1] ^= s[2], s[0] ^= s[3];
    s[2] ^= t, s[3] = rotl(s[3], 45);
    return result;
}

/* in [0, 1) */
static double rng_uniform(rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

static double rng_normal(rng *r) {
    double u1 = rng_uniform(r), u2 = rng_uniform(r);
    return sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * M_PI * u2);
}

static atomic_uint_fast64_t seed_counter;

static void rng_init(rng *r, bool has_seed, float seed) {
    uint64_t x;
    if (has_seed) {
        double d = seed;
        memcpy(&x, &d, sizeof x);
    } else {
        struct timespec ts;
        timespec_get(&ts, TIME_UTC);
        x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
            (atomic_fetch_add(&seed_counter, 1) * 0xD1B54A32D192ED03ull);
    }
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

/* ---- attributes ---- */

enum { GEN_UNIFORM, GEN_NORMAL, GEN_BERNOULLI, GEN_MULTINOMIAL };

typedef struct random_params {
    int kind;
    bool like;            /* shape from the input */
    bool has_seed;
    float seed;
    double a, b;          /* low/high or mean/scale */
    inf_dtype dtype;      /* UNDEFINED: the input's */
    int n_shape;
    const int64_t *shape;
    int64_t sample_size;
} random_params;

static bool float_dtype(inf_dtype t) {
    return t == INF_DTYPE_F32 || t == INF_DTYPE_F64 || t == INF_DTYPE_F16;
}

static inf_status random_init(inf__node *node, inf__arena *arena, inf_error *err) {
    random_params *p = inf__op_params(arena, random_params);
    if (!p) return INF_ENOMEM;
    const char *op = node->op_type;
    p->like = strstr(op, "Like") != NULL;
    if (!strncmp(op, "RandomUniform", 13)) p->kind = GEN_UNIFORM;
    else if (!strncmp(op, "RandomNormal", 12)) p->kind = GEN_NORMAL;
    else if (!strcmp(op, "Bernoulli")) p->kind = GEN_BERNOULLI;
    else p->kind = GEN_MULTINOMIAL;
    const inf__attr *seed = inf__node_attr(node, "seed");
    p->has_seed = seed != NULL;
    p->seed = inf__attr_float(node, "seed", 0);
    p->a = p->kind == GEN_UNIFORM ? inf__attr_float(node, "low", 0) : inf__attr_float(node, "mean", 0);
    p->b = p->kind == GEN_UNIFORM ? inf__attr_float(node, "high", 1) : inf__attr_float(node, "scale", 1);
    int64_t dflt = p->kind == GEN_MULTINOMIAL ? INF_DTYPE_I32 : p->like || p->kind == GEN_BERNOULLI ? 0 : INF_DTYPE_F32;
    int64_t dt = inf__attr_int(node, "dtype", dflt);
    p->dtype = (inf_dtype)dt;
    bool ok;
    if (p->kind == GEN_MULTINOMIAL) ok = dt == INF_DTYPE_I32 || dt == INF_DTYPE_I64;
    else if (p->kind == GEN_BERNOULLI) ok = dt == 0 || (dt > 0 && dt < INF_DTYPE_COUNT && dt != INF_DTYPE_STRING &&
                                                       dt != INF_DTYPE_C64 && dt != INF_DTYPE_C128);
    else ok = dt == 0 ? p->like : float_dtype((inf_dtype)dt);
    if (!ok) return inf__node_error(node, err, INF_EMODEL, "unsupported dtype %lld", (long long)dt);
    if (p->kind == GEN_UNIFORM && !(p->b >= p->a))
        return inf__node_error(node, err, INF_EMODEL, "high (%g) must be >= low (%g)", p->b, p->a);
    if (!p->like && (p->kind == GEN_UNIFORM || p->kind == GEN_NORMAL)) {
        p->shape = inf__attr_ints(node, "shape", &p->n_shape);
        if (!p->shape && !inf__node_attr(node, "shape"))
            return inf__node_error(node, err, INF_EMODEL, "attribute shape is required");
        if (p->n_shape > INF_MAX_DIMS)
            return inf__node_error(node, err, INF_EMODEL, "shape has %d dims, at most %d", p->n_shape, INF_MAX_DIMS);
        for (int i = 0; i < p->n_shape; i++)
            if (p->shape[i] < 0)
                return inf__node_error(node, err, INF_EMODEL, "shape[%d] = %lld is negative", i,
                                       (long long)p->shape[i]);
    }
    p->sample_size = inf__attr_int(node, "sample_size", 1);
    if (p->sample_size < 1)
        return inf__node_error(node, err, INF_EMODEL, "sample_size = %lld, must be >= 1",
                               (long long)p->sample_size);
    node->params = p;
    return INF_OK;
}

/* ---- kernels ---- */

static inf_status multinomial_run(inf__kernel_ctx *ctx, const random_params *p, rng *r) {
    char buf[96];
    const inf_tensor *x = ctx->in[0];
    if (x->dtype != INF_DTYPE_F32 && x->dtype != INF_DTYPE_F64)
        return inf__kernel_error(ctx, INF_ETYPE, "input: expected float32 or float64, got %s",
                                 inf_dtype_name(x->dtype));
    if (x->ndim != 2 || x->dims[1] < 1)
        return inf__kernel_error(ctx, INF_ESHAPE, "input: expected [batch, classes], got %s",
                                 inf__shape_str(x->ndim, x->dims, buf, sizeof buf));
    int64_t batch = x->dims[0], classes = x->dims[1], dims[2] = {batch, p->sample_size};
    inf_tensor *y;
    inf_status st = inf__kernel_output(ctx, 0, p->dtype, 2, dims, &y);
    if (st != INF_OK) return st;
    double *cdf = inf__kernel_scratch(ctx, (size_t)classes * sizeof(double));
    if (!cdf) return INF_ENOMEM;
    for (int64_t b = 0; b < batch; b++) {
        double mx = -INFINITY, total = 0;
        for (int64_t c = 0; c < classes; c++) mx = fmax(mx, inf__tensor_get_f64(x, b * classes + c));
        for (int64_t c = 0; c < classes; c++) {
            double v = inf__tensor_get_f64(x, b * classes + c);
            total += isfinite(mx) ? exp(v - mx) : 0;
            cdf[c] = total;
        }
        for (int64_t s = 0; s < p->sample_size; s++) {
            double u = rng_uniform(r) * total;
            int64_t lo = 0, hi = classes - 1; /* first c with cdf[c] > u */
            while (lo < hi) {
                int64_t mid = (lo + hi) / 2;
                if (cdf[mid] > u) hi = mid;
                else lo = mid + 1;
            }
            inf__tensor_set_f64(y, b * p->sample_size + s, (double)lo);
        }
    }
    return INF_OK;
}

static inf_status random_run(inf__kernel_ctx *ctx) {
    const random_params *p = ctx->node->params;
    rng r;
    rng_init(&r, p->has_seed, p->seed);
    if (p->kind == GEN_MULTINOMIAL) return multinomial_run(ctx, p, &r);
    const inf_tensor *x = ctx->n_in > 0 ? ctx->in[0] : NULL;
    bool from_input = p->like || p->kind == GEN_BERNOULLI;
    if (from_input && !x) return inf__kernel_error(ctx, INF_EINVAL, "input is required");
    if (p->kind == GEN_BERNOULLI && !float_dtype(x->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "input: expected float32, float64 or float16, got %s",
                                 inf_dtype_name(x->dtype));
    inf_dtype dt = p->dtype != INF_DTYPE_UNDEFINED ? p->dtype : x->dtype;
    if (p->kind != GEN_BERNOULLI && !float_dtype(dt))
        return inf__kernel_error(ctx, INF_ETYPE, "output dtype %s: expected a float type (set dtype)",
                                 inf_dtype_name(dt));
    inf_tensor *y;
    inf_status st = from_input ? inf__kernel_output(ctx, 0, dt, x->ndim, x->dims, &y)
                               : inf__kernel_output(ctx, 0, dt, p->n_shape, p->shape, &y);
    if (st != INF_OK) return st;
    for (int64_t i = 0, n = inf_tensor_numel(y); i < n; i++) {
        double v;
        if (p->kind == GEN_UNIFORM) v = p->a + (p->b - p->a) * rng_uniform(&r);
        else if (p->kind == GEN_NORMAL) v = p->a + p->b * rng_normal(&r);
        else v = rng_uniform(&r) < inf__tensor_get_f64(x, i) ? 1.0 : 0.0;
        inf__tensor_set_f64(y, i, v);
    }
    return INF_OK;
}

const inf__op_impl op_random = {random_init, random_run};
