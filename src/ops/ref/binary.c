/*
 * binary.c -- element-wise ops with numpy (multidirectional) broadcasting:
 *
 *   Add, Sub, Mul, Div          opsets 1-17   T: float16/32/64, bfloat16, int8..int64, uint8..uint64
 *   Pow                         opsets 1-17   T (base) and T1 (exponent) may differ (opset 12+)
 *   Equal                       opsets 1-17   T: numeric, bool, string -> bool
 *   Less, Greater               opsets 1-17   T: numeric -> bool
 *   LessOrEqual, GreaterOrEqual opsets 12-17  T: numeric -> bool
 *   And, Or, Xor                opsets 1-17   T: bool -> bool
 *   BitwiseAnd, BitwiseOr,      opsets 18-26  T: int8..int64, uint8..uint64
 *   BitwiseXor
 *   Where                       opsets 9-17   condition bool, X/Y any type (incl. string)
 *
 * Opsets 1-6 (all of the above but Where): with the attribute
 * broadcast=1, B is broadcast onto A starting at `axis` (default: B aligned
 * with A's trailing dimensions, or B a scalar); the output has A's shape.
 * With broadcast=0 the spec wants equal shapes; we accept numpy broadcasting
 * there too (a superset).  Older opsets also restrict the dtypes (floats
 * only); we accept every type the newest opset accepts.
 *
 * Design: the output shape and each input's broadcast strides are computed,
 * then dimensions that are contiguous for every operand are merged, so
 * same-shape and scalar-broadcast cases become one flat span.  float32
 * Add/Sub/Mul/Div run as plain loops over the span (vectorised by the
 * compiler, split across the session's threads when large).  Every other
 * case converts blocks of 256 elements to double (float types; float16 and
 * bfloat16 are computed in double and rounded once) or to int64 (integer and
 * bool types, exact for 64-bit values), computes, and converts back.
 *
 * Integer semantics: Add/Sub/Mul wrap around (two's complement); Div
 * truncates toward zero like C, and division by zero is reported as
 * INF_ERANGE (INT_MIN / -1 wraps); Pow with integer base and exponent is exact
 * repeated multiplication (wrapping), a negative exponent gives 0 except for
 * bases 1 and -1; Pow with an integer base and a float exponent computes
 * pow() in double and converts the result to the base type (truncation).
 * float32 Pow with a one-element exponent 2, 3 or 4 multiplies instead of
 * calling pow() (pow_int_range: correctly rounded in double, then float).
 */
#include <math.h>
#include <string.h>

#include "ops/ops.h"

/* ==================== broadcast span iterator ==================== */

enum { MAX_OPERANDS = 3, BLOCK = 256 };

/* The output (contiguous) and up to three inputs read through strides, over
 * a shape whose dimensions were coalesced where possible. */
typedef struct span_iter {
    int ndim; /* >= 1 */
    int n_in;
    int64_t numel;
    int64_t dims[INF_MAX_DIMS];
    int64_t strides[MAX_OPERANDS][INF_MAX_DIMS];
} span_iter;

/* fn handles n output elements starting at out_off; input j is read at
 * off[j] + i * stride[j] (stride is 0 or 1). */
typedef void (*span_fn)(void *arg, const int64_t *off, const int64_t *stride, int64_t out_off,
                        int64_t n);

static void span_iter_init(span_iter *it, int out_ndim, const int64_t *out_dims, int n_in,
                           const int *in_ndims, const int64_t *const *in_dims) {
    int64_t full[MAX_OPERANDS][INF_MAX_DIMS];
    for (int j = 0; j < n_in; j++)
        inf__broadcast_strides(in_ndims[j], in_dims[j], out_ndim, out_dims, full[j]);
    it->n_in = n_in;
    it->numel = inf__shape_numel(out_ndim, out_dims);
    int nd = 0;
    for (int k = 0; k < out_ndim; k++) {
        if (out_dims[k] == 1) continue; /* size-1 dimensions never move an index */
        bool merge = nd > 0;
        for (int j = 0; j < n_in && merge; j++)
            merge = it->strides[j][nd - 1] == full[j][k] * out_dims[k];
        if (merge) {
            it->dims[nd - 1] *= out_dims[k];
            for (int j = 0; j < n_in; j++) it->strides[j][nd - 1] = full[j][k];
        } else {
            it->dims[nd] = out_dims[k];
            for (int j = 0; j < n_in; j++) it->strides[j][nd] = full[j][k];
            nd++;
        }
    }
    if (nd == 0) { /* scalar output */
        it->dims[0] = 1;
        for (int j = 0; j < n_in; j++) it->strides[j][0] = 0;
        nd = 1;
    }
    it->ndim = nd;
}

/* Calls fn over the output elements [begin, end), one call per inner span. */
static void span_iter_range(const span_iter *it, int64_t begin, int64_t end, span_fn fn,
                            void *arg) {
    int nd = it->ndim, last = nd - 1;
    int64_t idx[INF_MAX_DIMS], off[MAX_OPERANDS] = {0}, stride[MAX_OPERANDS];
    int64_t rem = begin;
    for (int k = last; k >= 0; k--) {
        idx[k] = rem % it->dims[k];
        rem /= it->dims[k];
    }
    for (int j = 0; j < it->n_in; j++) {
        stride[j] = it->strides[j][last];
        for (int k = 0; k < nd; k++) off[j] += idx[k] * it->strides[j][k];
    }
    int64_t inner = it->dims[last];
    for (int64_t pos = begin; pos < end;) {
        int64_t n = inner - idx[last];
        if (n > end - pos) n = end - pos;
        fn(arg, off, stride, pos, n);
        pos += n;
        idx[last] += n;
        for (int j = 0; j < it->n_in; j++) off[j] += n * stride[j];
        for (int k = last; k > 0 && idx[k] == it->dims[k]; k--) {
            idx[k] = 0;
            idx[k - 1]++;
            for (int j = 0; j < it->n_in; j++)
                off[j] += it->strides[j][k - 1] - it->dims[k] * it->strides[j][k];
        }
    }
}

typedef struct range_job {
    const span_iter *it;
    span_fn fn;
    void *arg;
} range_job;

static void range_job_run(void *arg, int64_t begin, int64_t end) {
    const range_job *job = arg;
    span_iter_range(job->it, begin, end, job->fn, job->arg);
}

/* Runs fn over the whole output; pool may be NULL (inline). fn must only
 * write its own output elements. */
static void span_iter_run(const span_iter *it, inf__pool *pool, span_fn fn, void *arg) {
    if (it->numel <= 0) return;
    range_job job = {it, fn, arg};
    if (pool && it->numel >= 65536)
        inf__pool_range(pool, it->numel, 32768, range_job_run, &job);
    else
        span_iter_range(it, 0, it->numel, fn, arg);
}

/* ==================== block conversions ==================== */

#define LOAD_LOOP(ctype, expr)                                        \
    do {                                                              \
        const ctype *p = (const ctype *)t->data + off;                \
        for (int64_t i = 0; i < n; i++) dst[i] = expr(p[i * stride]);   \
    } while (0)

static double f16_f64(uint16_t h) { return inf_f16_to_f32(h); }
static double bf16_f64(uint16_t h) { return inf_bf16_to_f32(h); }
static double bool_f64(uint8_t b) { return b ? 1.0 : 0.0; }
static int64_t bool_i64(uint8_t b) { return b ? 1 : 0; }
#define AS_IS(x) x

static void load_f64(const inf_tensor *t, int64_t off, int64_t stride, int64_t n, double *dst) {
    switch (t->dtype) {
    case INF_DTYPE_F32: LOAD_LOOP(float, AS_IS); break;
    case INF_DTYPE_F64: LOAD_LOOP(double, AS_IS); break;
    case INF_DTYPE_F16: LOAD_LOOP(uint16_t, f16_f64); break;
    case INF_DTYPE_BF16: LOAD_LOOP(uint16_t, bf16_f64); break;
    case INF_DTYPE_I8: LOAD_LOOP(int8_t, AS_IS); break;
    case INF_DTYPE_I16: LOAD_LOOP(int16_t, AS_IS); break;
    case INF_DTYPE_I32: LOAD_LOOP(int32_t, AS_IS); break;
    case INF_DTYPE_I64: LOAD_LOOP(int64_t, (double)); break;
    case INF_DTYPE_U8: LOAD_LOOP(uint8_t, AS_IS); break;
    case INF_DTYPE_U16: LOAD_LOOP(uint16_t, AS_IS); break;
    case INF_DTYPE_U32: LOAD_LOOP(uint32_t, AS_IS); break;
    case INF_DTYPE_U64: LOAD_LOOP(uint64_t, (double)); break;
    case INF_DTYPE_BOOL: LOAD_LOOP(uint8_t, bool_f64); break;
    default:
        for (int64_t i = 0; i < n; i++) dst[i] = 0;
        break;
    }
}

/* Integers and bool as int64 (uint64 keeps its bits); floats truncated. */
static void load_i64(const inf_tensor *t, int64_t off, int64_t stride, int64_t n, int64_t *dst) {
    switch (t->dtype) {
    case INF_DTYPE_I8: LOAD_LOOP(int8_t, AS_IS); break;
    case INF_DTYPE_I16: LOAD_LOOP(int16_t, AS_IS); break;
    case INF_DTYPE_I32: LOAD_LOOP(int32_t, AS_IS); break;
    case INF_DTYPE_I64: LOAD_LOOP(int64_t, AS_IS); break;
    case INF_DTYPE_U8: LOAD_LOOP(uint8_t, AS_IS); break;
    case INF_DTYPE_U16: LOAD_LOOP(uint16_t, AS_IS); break;
    case INF_DTYPE_U32: LOAD_LOOP(uint32_t, AS_IS); break;
    case INF_DTYPE_U64: LOAD_LOOP(uint64_t, (int64_t)); break;
    case INF_DTYPE_BOOL: LOAD_LOOP(uint8_t, bool_i64); break;
    default:
        for (int64_t i = 0; i < n; i++) dst[i] = inf__tensor_get_i64(t, off + i * stride);
        break;
    }
}

#undef LOAD_LOOP
#undef AS_IS

static void store_f64(inf_tensor *y, int64_t off, int64_t n, const double *src) {
    if (y->dtype == INF_DTYPE_F32) {
        float *p = (float *)y->data + off;
        for (int64_t i = 0; i < n; i++) p[i] = (float)src[i];
    } else if (y->dtype == INF_DTYPE_F64) {
        memcpy((double *)y->data + off, src, (size_t)n * sizeof *src);
    } else {
        for (int64_t i = 0; i < n; i++) inf__tensor_set_f64(y, off + i, src[i]);
    }
}

/* Truncates to the integer width (wrap-around). */
static void store_i64(inf_tensor *y, int64_t off, int64_t n, const int64_t *src) {
    void *d = y->data;
    for (int64_t i = 0; i < n; i++) {
        uint64_t v = (uint64_t)src[i];
        switch (y->dtype) {
        case INF_DTYPE_I8: ((int8_t *)d)[off + i] = (int8_t)(uint8_t)v; break;
        case INF_DTYPE_U8: ((uint8_t *)d)[off + i] = (uint8_t)v; break;
        case INF_DTYPE_I16: ((int16_t *)d)[off + i] = (int16_t)(uint16_t)v; break;
        case INF_DTYPE_U16: ((uint16_t *)d)[off + i] = (uint16_t)v; break;
        case INF_DTYPE_I32: ((int32_t *)d)[off + i] = (int32_t)(uint32_t)v; break;
        case INF_DTYPE_U32: ((uint32_t *)d)[off + i] = (uint32_t)v; break;
        case INF_DTYPE_I64: ((int64_t *)d)[off + i] = src[i]; break;
        case INF_DTYPE_U64: ((uint64_t *)d)[off + i] = v; break;
        case INF_DTYPE_BOOL: ((uint8_t *)d)[off + i] = v != 0; break;
        default: inf__tensor_set_f64(y, off + i, (double)src[i]); break;
        }
    }
}

/* ==================== binary ops ==================== */

typedef enum binop {
    BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV, BIN_POW,
    BIN_BIT_AND, BIN_BIT_OR, BIN_BIT_XOR, /* integers only */
    BIN_EQ, BIN_LT, BIN_GT, BIN_LE, BIN_GE, /* from here on the output is bool */
    BIN_AND, BIN_OR, BIN_XOR,
} binop;

static const struct {
    const char *name;
    binop op;
} binop_names[] = {
    {"Add", BIN_ADD},  {"Sub", BIN_SUB},  {"Mul", BIN_MUL},      {"Div", BIN_DIV},
    {"Pow", BIN_POW},  {"Equal", BIN_EQ}, {"Less", BIN_LT},      {"Greater", BIN_GT},
    {"LessOrEqual", BIN_LE},              {"GreaterOrEqual", BIN_GE},
    {"And", BIN_AND},  {"Or", BIN_OR},    {"Xor", BIN_XOR},
    {"BitwiseAnd", BIN_BIT_AND},          {"BitwiseOr", BIN_BIT_OR}, {"BitwiseXor", BIN_BIT_XOR},
};

static bool binop_is_bitwise(binop op) { return op >= BIN_BIT_AND && op <= BIN_BIT_XOR; }

static bool binop_is_compare(binop op) { return op >= BIN_EQ; }
static bool binop_is_logical(binop op) { return op >= BIN_AND; }

typedef struct binary_params {
    binop op;
    bool legacy_broadcast; /* opset < 7 with broadcast=1 */
    bool has_axis;
    int64_t axis;
} binary_params;

static inf_status binary_init(inf__node *node, inf__arena *arena, inf_error *err) {
    binary_params *p = inf__op_params(arena, binary_params);
    if (!p) return INF_ENOMEM;
    size_t k = 0, n = sizeof binop_names / sizeof binop_names[0];
    while (k < n && strcmp(binop_names[k].name, node->op_type) != 0) k++;
    if (k == n)
        return inf__node_error(node, err, INF_EINTERNAL, "op_binary does not implement %s",
                               node->op_type);
    p->op = binop_names[k].op;
    if (node->opset < 7 && inf__attr_int(node, "broadcast", 0) != 0) {
        p->legacy_broadcast = true;
        p->has_axis = inf__node_attr(node, "axis") != NULL;
        p->axis = inf__attr_int(node, "axis", 0);
    }
    node->params = p;
    return INF_OK;
}

typedef enum domain { DOM_F64, DOM_I64, DOM_U64 } domain;

typedef struct binary_job {
    binop op;
    domain dom;
    const inf_tensor *a, *b;
    inf_tensor *y;
    bool div_by_zero; /* integer domains only (run single-threaded) */
} binary_job;

static void compute_f64(binop op, const double *a, const double *b, int64_t n, double *r,
                        uint8_t *m) {
    int64_t i;
    switch (op) {
    case BIN_ADD: for (i = 0; i < n; i++) r[i] = a[i] + b[i]; break;
    case BIN_SUB: for (i = 0; i < n; i++) r[i] = a[i] - b[i]; break;
    case BIN_MUL: for (i = 0; i < n; i++) r[i] = a[i] * b[i]; break;
    case BIN_DIV: for (i = 0; i < n; i++) r[i] = a[i] / b[i]; break;
    case BIN_POW: for (i = 0; i < n; i++) r[i] = pow(a[i], b[i]); break;
    case BIN_EQ: for (i = 0; i < n; i++) m[i] = a[i] == b[i]; break;
    case BIN_LT: for (i = 0; i < n; i++) m[i] = a[i] < b[i]; break;
    case BIN_GT: for (i = 0; i < n; i++) m[i] = a[i] > b[i]; break;
    case BIN_LE: for (i = 0; i < n; i++) m[i] = a[i] <= b[i]; break;
    case BIN_GE: for (i = 0; i < n; i++) m[i] = a[i] >= b[i]; break;
    default: break; /* logical ops take bool, computed as integers */
    }
}

/* base^e by squaring, wrapping; negative e: 0 unless base is 1 or -1
 * (an exponent read as a negative int64 counts as negative). */
static int64_t ipow(int64_t base, int64_t e, bool unsigned_base) {
    if (e < 0) {
        if (base == 1) return 1;
        if (base == -1 && !unsigned_base) return (e & 1) ? -1 : 1;
        return 0;
    }
    uint64_t r = 1, b = (uint64_t)base, ue = (uint64_t)e;
    while (ue) {
        if (ue & 1) r *= b;
        b *= b;
        ue >>= 1;
    }
    return (int64_t)r;
}

/* Returns false on an integer division by zero (that element is set to 0). */
static bool compute_int(binop op, bool u, const int64_t *a, const int64_t *b, int64_t n,
                        int64_t *r, uint8_t *m) {
    bool ok = true;
    for (int64_t i = 0; i < n; i++) {
        uint64_t ua = (uint64_t)a[i], ub = (uint64_t)b[i];
        switch (op) {
        case BIN_ADD: r[i] = (int64_t)(ua + ub); break;
        case BIN_SUB: r[i] = (int64_t)(ua - ub); break;
        case BIN_MUL: r[i] = (int64_t)(ua * ub); break;
        case BIN_DIV:
            if (b[i] == 0) {
                ok = false;
                r[i] = 0;
            } else if (u) {
                r[i] = (int64_t)(ua / ub);
            } else {
                r[i] = b[i] == -1 ? (int64_t)(0 - ua) : a[i] / b[i];
            }
            break;
        case BIN_POW: r[i] = ipow(a[i], b[i], u); break;
        case BIN_BIT_AND: r[i] = a[i] & b[i]; break; /* sign-extended loads: the low bits are the operands' */
        case BIN_BIT_OR: r[i] = a[i] | b[i]; break;
        case BIN_BIT_XOR: r[i] = a[i] ^ b[i]; break;
        case BIN_EQ: m[i] = a[i] == b[i]; break;
        case BIN_LT: m[i] = u ? ua < ub : a[i] < b[i]; break;
        case BIN_GT: m[i] = u ? ua > ub : a[i] > b[i]; break;
        case BIN_LE: m[i] = u ? ua <= ub : a[i] <= b[i]; break;
        case BIN_GE: m[i] = u ? ua >= ub : a[i] >= b[i]; break;
        case BIN_AND: m[i] = a[i] && b[i]; break;
        case BIN_OR: m[i] = a[i] || b[i]; break;
        case BIN_XOR: m[i] = !a[i] != !b[i]; break;
        }
    }
    return ok;
}

/* float32 Add/Sub/Mul/Div over one span: loops the compiler vectorises.  y
 * may be a or b itself (in-place execution, graph/memplan.c: only an operand
 * of the output's full shape), so no restrict; each loop reads index i before
 * it writes index i. */
static void f32_arith_span(binop op, const float *a, int64_t sa, const float *b, int64_t sb, float *y,
                           int64_t n) {
    int64_t i;
    if (sa && sb) {
        switch (op) {
        case BIN_ADD: for (i = 0; i < n; i++) y[i] = a[i] + b[i]; break;
        case BIN_SUB: for (i = 0; i < n; i++) y[i] = a[i] - b[i]; break;
        case BIN_MUL: for (i = 0; i < n; i++) y[i] = a[i] * b[i]; break;
        default: for (i = 0; i < n; i++) y[i] = a[i] / b[i]; break;
        }
    } else if (sa) {
        float s = b[0];
        switch (op) {
        case BIN_ADD: for (i = 0; i < n; i++) y[i] = a[i] + s; break;
        case BIN_SUB: for (i = 0; i < n; i++) y[i] = a[i] - s; break;
        case BIN_MUL: for (i = 0; i < n; i++) y[i] = a[i] * s; break;
        default: for (i = 0; i < n; i++) y[i] = a[i] / s; break;
        }
    } else if (sb) {
        float s = a[0];
        switch (op) {
        case BIN_ADD: for (i = 0; i < n; i++) y[i] = s + b[i]; break;
        case BIN_SUB: for (i = 0; i < n; i++) y[i] = s - b[i]; break;
        case BIN_MUL: for (i = 0; i < n; i++) y[i] = s * b[i]; break;
        default: for (i = 0; i < n; i++) y[i] = s / b[i]; break;
        }
    } else {
        float s, x = a[0], z = b[0];
        switch (op) {
        case BIN_ADD: s = x + z; break;
        case BIN_SUB: s = x - z; break;
        case BIN_MUL: s = x * z; break;
        default: s = x / z; break;
        }
        for (i = 0; i < n; i++) y[i] = s;
    }
}

static void binary_f32_span(void *arg, const int64_t *off, const int64_t *stride, int64_t out_off,
                            int64_t n) {
    const binary_job *job = arg;
    f32_arith_span(job->op, (const float *)job->a->data + off[0], stride[0],
                   (const float *)job->b->data + off[1], stride[1],
                   (float *)job->y->data + out_off, n);
}

static void binary_block_span(void *arg, const int64_t *off, const int64_t *stride,
                              int64_t out_off, int64_t n) {
    binary_job *job = arg;
    bool cmp = binop_is_compare(job->op);
    for (int64_t done = 0; done < n; done += BLOCK) {
        int64_t m = n - done < BLOCK ? n - done : BLOCK;
        int64_t oa = off[0] + done * stride[0], ob = off[1] + done * stride[1];
        uint8_t *mask = cmp ? (uint8_t *)job->y->data + out_off + done : NULL;
        if (job->dom == DOM_F64) {
            double a[BLOCK], b[BLOCK], r[BLOCK];
            load_f64(job->a, oa, stride[0], m, a);
            load_f64(job->b, ob, stride[1], m, b);
            compute_f64(job->op, a, b, m, r, mask);
            if (!cmp) store_f64(job->y, out_off + done, m, r);
        } else {
            int64_t a[BLOCK], b[BLOCK], r[BLOCK];
            load_i64(job->a, oa, stride[0], m, a);
            load_i64(job->b, ob, stride[1], m, b);
            if (!compute_int(job->op, job->dom == DOM_U64, a, b, m, r, mask))
                job->div_by_zero = true;
            if (!cmp) store_i64(job->y, out_off + done, m, r);
        }
    }
}

static void binary_string_span(void *arg, const int64_t *off, const int64_t *stride,
                               int64_t out_off, int64_t n) {
    const binary_job *job = arg;
    char *const *a = (char *const *)job->a->data + off[0];
    char *const *b = (char *const *)job->b->data + off[1];
    uint8_t *y = (uint8_t *)job->y->data + out_off;
    for (int64_t i = 0; i < n; i++) {
        const char *x = a[i * stride[0]], *z = b[i * stride[1]];
        y[i] = strcmp(x ? x : "", z ? z : "") == 0;
    }
}

#ifndef INF_EDGE /* the edge runtime's size budget (docs/edge.md): pow() there, the same bits */
/* float32 Pow with a one-element exponent 2, 3 or 4 (GPT-2's x^3, variances'
 * x^2): the power by multiplications in double -- x*x is exact there, so
 * the double result is rounded once (x^3 = (x*x)*x, x^4 = (x*x)*(x*x)) --
 * then rounded to float32, the general path's two roundings with pow()
 * replaced by correctly rounded multiplication: the same bits as pow()
 * wherever glibc's pow is correctly rounded (tests/kernels/test_pow_int.c
 * checks every 97th float bit pattern).  No libm call, vectorisable. */
typedef struct pow_int_job {
    const float *x;
    float *y;
    int e;
} pow_int_job;

static void pow_int_range(void *arg, int64_t begin, int64_t end) {
    const pow_int_job *job = arg;
    const float *x = job->x;
    float *y = job->y;
    int64_t i;
    switch (job->e) {
    case 2:
        for (i = begin; i < end; i++) y[i] = (float)((double)x[i] * x[i]);
        break;
    case 3:
        for (i = begin; i < end; i++) {
            double v = x[i];
            y[i] = (float)(v * v * v);
        }
        break;
    default:
        for (i = begin; i < end; i++) {
            double v = (double)x[i] * x[i];
            y[i] = (float)(v * v);
        }
        break;
    }
}

/* The small integer exponent (2..4) of a float32 Pow whose exponent is one element, else 0. */
static int pow_small_int(binop op, const inf_tensor *a, const inf_tensor *b) {
    if (op != BIN_POW || a->dtype != INF_DTYPE_F32 || inf_tensor_numel(b) != 1 || !b->data) return 0;
    double e = inf__tensor_get_f64(b, 0);
    return e == 2.0 || e == 3.0 || e == 4.0 ? (int)e : 0;
}
#endif

static bool dtype_is_numeric(inf_dtype t) { return inf__dtype_is_float(t) || inf__dtype_is_int(t); }

/* Checks the operand dtypes for the op; returns the output dtype via *out. */
static inf_status binary_check_types(inf__kernel_ctx *ctx, binop op, const inf_tensor *a,
                                     const inf_tensor *b, inf_dtype *out) {
    const char *name = ctx->node->op_type;
    if (op == BIN_POW) {
        if (!dtype_is_numeric(a->dtype))
            return inf__kernel_error(ctx, INF_ETYPE, "input X: expected a numeric type, got %s",
                                     inf_dtype_name(a->dtype));
        if (!dtype_is_numeric(b->dtype))
            return inf__kernel_error(ctx, INF_ETYPE, "input Y: expected a numeric type, got %s",
                                     inf_dtype_name(b->dtype));
        *out = a->dtype;
        return INF_OK;
    }
    bool ok = binop_is_logical(op) ? a->dtype == INF_DTYPE_BOOL :
              binop_is_bitwise(op) ? inf__dtype_is_int(a->dtype) :
              dtype_is_numeric(a->dtype) ||
              (op == BIN_EQ && (a->dtype == INF_DTYPE_BOOL || a->dtype == INF_DTYPE_STRING)) ||
              (binop_is_compare(op) && a->dtype == INF_DTYPE_BOOL);
    if (!ok)
        return inf__kernel_error(ctx, INF_ETYPE, "input A: %s does not accept %s", name,
                                 inf_dtype_name(a->dtype));
    if (b->dtype != a->dtype)
        return inf__kernel_error(ctx, INF_ETYPE, "input B: expected %s (the type of input A), got %s",
                                 inf_dtype_name(a->dtype), inf_dtype_name(b->dtype));
    *out = binop_is_compare(op) ? INF_DTYPE_BOOL : a->dtype;
    return INF_OK;
}

/* Opsets 1-6 with broadcast=1: B's dims, padded with 1s to A's rank so that
 * they line up with A's dims from `axis`. */
static inf_status legacy_b_dims(inf__kernel_ctx *ctx, const binary_params *p, const inf_tensor *a,
                                const inf_tensor *b, int64_t *dims) {
    char sa[96], sb[96];
    for (int k = 0; k < a->ndim; k++) dims[k] = 1;
    if (inf_tensor_numel(b) == 1 && b->ndim <= 1) return INF_OK; /* scalar B */
    int64_t axis = p->has_axis ? p->axis : a->ndim - b->ndim;
    if (axis < 0) axis += a->ndim;
    if (axis < 0 || axis + b->ndim > a->ndim)
        return inf__kernel_error(ctx, INF_ESHAPE,
                                 "input B %s cannot be broadcast onto input A %s at axis %lld",
                                 inf__shape_str(b->ndim, b->dims, sb, sizeof sb),
                                 inf__shape_str(a->ndim, a->dims, sa, sizeof sa), (long long)axis);
    for (int k = 0; k < b->ndim; k++) {
        int64_t d = b->dims[k];
        if (d != 1 && d != a->dims[axis + k])
            return inf__kernel_error(ctx, INF_ESHAPE,
                                     "input B %s does not match input A %s at axis %lld",
                                     inf__shape_str(b->ndim, b->dims, sb, sizeof sb),
                                     inf__shape_str(a->ndim, a->dims, sa, sizeof sa),
                                     (long long)axis);
        dims[axis + k] = d;
    }
    return INF_OK;
}

static domain binary_domain(binop op, const inf_tensor *a, const inf_tensor *b) {
    if (inf__dtype_is_float(a->dtype)) return DOM_F64;
    if (op == BIN_POW && inf__dtype_is_float(b->dtype)) return DOM_F64;
    if (inf__dtype_is_int(a->dtype) && !inf__dtype_is_signed(a->dtype))
        return DOM_U64; /* uint8..uint64: unsigned compare and divide */
    return DOM_I64;
}

static inf_status binary_run(inf__kernel_ctx *ctx) {
    const binary_params *p = ctx->node->params;
    const inf_tensor *a = ctx->in[0], *b = ctx->n_in > 1 ? ctx->in[1] : NULL;
    if (!a || !b)
        return inf__kernel_error(ctx, INF_EINVAL, "expected two inputs, input %s is missing",
                                 a ? "B" : "A");
    inf_dtype out_dtype = INF_DTYPE_UNDEFINED;
    inf_status st = binary_check_types(ctx, p->op, a, b, &out_dtype);
    if (st != INF_OK) return st;

    int64_t b_dims[INF_MAX_DIMS], y_dims[INF_MAX_DIMS];
    int b_ndim = b->ndim, y_ndim;
    const int64_t *bd = b->dims;
    if (p->legacy_broadcast) {
        st = legacy_b_dims(ctx, p, a, b, b_dims);
        if (st != INF_OK) return st;
        b_ndim = a->ndim;
        bd = b_dims;
    }
    if (inf__broadcast_shape(a->ndim, a->dims, b_ndim, bd, &y_ndim, y_dims) != INF_OK) {
        char sa[96], sb[96];
        return inf__kernel_error(ctx, INF_ESHAPE, "inputs A %s and B %s cannot be broadcast together",
                                 inf__shape_str(a->ndim, a->dims, sa, sizeof sa),
                                 inf__shape_str(b->ndim, b->dims, sb, sizeof sb));
    }
    inf_tensor *y;
    st = inf__kernel_output(ctx, 0, out_dtype, y_ndim, y_dims, &y);
    if (st != INF_OK) return st;

    span_iter it;
    int nds[2] = {a->ndim, b_ndim};
    const int64_t *dims[2] = {a->dims, bd};
    span_iter_init(&it, y_ndim, y_dims, 2, nds, dims);
    binary_job job = {p->op, binary_domain(p->op, a, b), a, b, y, false};

#ifndef INF_EDGE
    int pow_e = pow_small_int(p->op, a, b);
    if (pow_e && inf_tensor_numel(y) == inf_tensor_numel(a)) { /* y is a's elements in a's order */
        pow_int_job pj = {(const float *)a->data, (float *)y->data, pow_e};
        inf__pool_range(ctx->pool, inf_tensor_numel(y), 32768, pow_int_range, &pj);
    } else
#endif
        if (a->dtype == INF_DTYPE_STRING) {
        span_iter_run(&it, NULL, binary_string_span, &job);
    } else if (a->dtype == INF_DTYPE_F32 && p->op <= BIN_DIV) {
        span_iter_run(&it, ctx->pool, binary_f32_span, &job);
    } else if (job.dom == DOM_F64) {
        span_iter_run(&it, ctx->pool, binary_block_span, &job);
    } else {
        span_iter_run(&it, NULL, binary_block_span, &job);
        if (job.div_by_zero)
            return inf__kernel_error(ctx, INF_ERANGE, "input B: integer division by zero");
    }
    return INF_OK;
}

const inf__op_impl op_binary = {binary_init, binary_run};

/* ==================== Where ==================== */

typedef struct where_job {
    const inf_tensor *c, *x, *yv;
    inf_tensor *out;
    size_t esize;
    inf_status status; /* strings only (run single-threaded) */
} where_job;

static void where_span(void *arg, const int64_t *off, const int64_t *stride, int64_t out_off,
                       int64_t n) {
    where_job *job = arg;
    const uint8_t *c = (const uint8_t *)job->c->data + off[0];
    size_t es = job->esize;
    const char *x = (const char *)job->x->data + (size_t)off[1] * es;
    const char *y = (const char *)job->yv->data + (size_t)off[2] * es;
    char *o = (char *)job->out->data + (size_t)out_off * es;
    int64_t sc = stride[0], sx = stride[1], sy = stride[2];
    switch (es) {
    case 1:
        for (int64_t i = 0; i < n; i++) o[i] = c[i * sc] ? x[i * sx] : y[i * sy];
        break;
    case 2: {
        const uint16_t *px = (const uint16_t *)x, *py = (const uint16_t *)y;
        uint16_t *po = (uint16_t *)o;
        for (int64_t i = 0; i < n; i++) po[i] = c[i * sc] ? px[i * sx] : py[i * sy];
        break;
    }
    case 4: {
        const uint32_t *px = (const uint32_t *)x, *py = (const uint32_t *)y;
        uint32_t *po = (uint32_t *)o;
        for (int64_t i = 0; i < n; i++) po[i] = c[i * sc] ? px[i * sx] : py[i * sy];
        break;
    }
    case 8: {
        const uint64_t *px = (const uint64_t *)x, *py = (const uint64_t *)y;
        uint64_t *po = (uint64_t *)o;
        for (int64_t i = 0; i < n; i++) po[i] = c[i * sc] ? px[i * sx] : py[i * sy];
        break;
    }
    default:
        for (int64_t i = 0; i < n; i++)
            memcpy(o + (size_t)i * es,
                   c[i * sc] ? x + (size_t)(i * sx) * es : y + (size_t)(i * sy) * es, es);
        break;
    }
}

static void where_string_span(void *arg, const int64_t *off, const int64_t *stride,
                              int64_t out_off, int64_t n) {
    where_job *job = arg;
    const uint8_t *c = (const uint8_t *)job->c->data + off[0];
    char *const *x = (char *const *)job->x->data + off[1];
    char *const *y = (char *const *)job->yv->data + off[2];
    for (int64_t i = 0; i < n && job->status == INF_OK; i++) {
        const char *s = c[i * stride[0]] ? x[i * stride[1]] : y[i * stride[2]];
        if (!s) s = "";
        job->status = inf_tensor_set_string(job->out, out_off + i, s, strlen(s));
    }
}

static inf_status where_run(inf__kernel_ctx *ctx) {
    static const char *const names[3] = {"condition", "X", "Y"};
    for (int j = 0; j < 3; j++)
        if (j >= ctx->n_in || !ctx->in[j])
            return inf__kernel_error(ctx, INF_EINVAL, "input %s is missing", names[j]);
    const inf_tensor *c = ctx->in[0], *x = ctx->in[1], *yv = ctx->in[2];
    if (c->dtype != INF_DTYPE_BOOL)
        return inf__kernel_error(ctx, INF_ETYPE, "input condition: expected bool, got %s",
                                 inf_dtype_name(c->dtype));
    if (yv->dtype != x->dtype)
        return inf__kernel_error(ctx, INF_ETYPE, "input Y: expected %s (the type of X), got %s",
                                 inf_dtype_name(x->dtype), inf_dtype_name(yv->dtype));
    if (inf_dtype_size(x->dtype) == 0)
        return inf__kernel_error(ctx, INF_ETYPE, "input X: unsupported type %s",
                                 inf_dtype_name(x->dtype));
    int64_t t_dims[INF_MAX_DIMS], y_dims[INF_MAX_DIMS];
    int t_ndim, y_ndim;
    if (inf__broadcast_shape(c->ndim, c->dims, x->ndim, x->dims, &t_ndim, t_dims) != INF_OK ||
        inf__broadcast_shape(t_ndim, t_dims, yv->ndim, yv->dims, &y_ndim, y_dims) != INF_OK) {
        char sc[96], sx[96], sy[96];
        return inf__kernel_error(ctx, INF_ESHAPE,
                                 "inputs condition %s, X %s and Y %s cannot be broadcast together",
                                 inf__shape_str(c->ndim, c->dims, sc, sizeof sc),
                                 inf__shape_str(x->ndim, x->dims, sx, sizeof sx),
                                 inf__shape_str(yv->ndim, yv->dims, sy, sizeof sy));
    }
    inf_tensor *out;
    inf_status st = inf__kernel_output(ctx, 0, x->dtype, y_ndim, y_dims, &out);
    if (st != INF_OK) return st;
    span_iter it;
    int nds[3] = {c->ndim, x->ndim, yv->ndim};
    const int64_t *dims[3] = {c->dims, x->dims, yv->dims};
    span_iter_init(&it, y_ndim, y_dims, 3, nds, dims);
    where_job job = {c, x, yv, out, inf_dtype_size(x->dtype), INF_OK};
    if (x->dtype == INF_DTYPE_STRING) {
        span_iter_run(&it, NULL, where_string_span, &job);
        return job.status;
    }
    span_iter_run(&it, ctx->pool, where_span, &job);
    return INF_OK;
}

const inf__op_impl op_where = {NULL, where_run};
