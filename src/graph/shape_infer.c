/*
 * shape_infer.c -- static shape inference with symbolic dimensions (see
 * shape_infer.h), for the optimizer's shape-subgraph folding.
 *
 * DESIGN: a dimension or element is a known number (>= 0) or a symbol
 * (< 0).  Symbols only ever stand for "whatever this is at run time": two
 * equal symbols are the same quantity (the same graph input axis carried
 * through), two different ones may still be equal.  Rules, per op:
 *   - element-wise unary ops, Softmax, LayerNormalization, ... : input 0;
 *     QuantizeLinear: input 0's shape, its zero point's (or output) type;
 *   - broadcasting ops: right-aligned; a 1 takes the other side, equal
 *     dimensions stay, a known dimension other than 1 wins over a symbol (a
 *     run where they differ fails in the op itself), otherwise a new symbol;
 *   - MatMul, Gemm, Transpose, Flatten, Reshape, Unsqueeze, Squeeze,
 *     Concat, Gather, GatherElements, Slice (steps of 1), Reduce* with
 *     constant axes, Shape;
 *   - int64 elements (rank <= 1, at most INF_MAX_DIMS of them) through
 *     Shape, Gather, Unsqueeze, Squeeze, Concat, Slice, Cast to int64 and
 *     Add/Sub/Mul/Div of known numbers.
 * Anything else: unknown rank.
 */
#include <string.h>

#include "graph/shape_infer.h"
#include "ops/ops.h"

typedef struct sym {
    int rank;                 /* -1: unknown */
    int64_t d[INF_MAX_DIMS];  /* >= 0 known, < 0 a symbol */
    inf_dtype dtype;          /* UNDEFINED when unknown */
    int n_el;                 /* int64 elements tracked, or -1 */
    int64_t el[INF_MAX_DIMS];
} sym;

struct inf__shape_infer {
    const inf__graph *g;
    sym *v;                   /* per value: what was inferred (graph inputs at creation) */
    int64_t next_sym;
};

static const sym UNKNOWN = {.rank = -1, .n_el = -1};

static int64_t fresh(inf__shape_infer *si) { return si->next_sym--; }

/* What is known of value v: constants from their tensor, the rest from si->v. */
static sym get(const inf__shape_infer *si, int v) {
    if (v < 0) return UNKNOWN;
    const inf__value *val = &si->g->values[v];
    const inf_tensor *t = val->role == INF_VALUE_INITIALIZER ? val->constant : NULL;
    if (!t) return si->v[v];
    if (t->kind != INF_KIND_TENSOR || t->ndim > INF_MAX_DIMS) return UNKNOWN;
    sym s = {.rank = t->ndim, .dtype = t->dtype, .n_el = -1};
    memcpy(s.d, t->dims, (size_t)t->ndim * sizeof(int64_t));
    int64_t n = inf_tensor_numel(t);
    if (t->dtype == INF_DTYPE_I64 && t->ndim <= 1 && n <= INF_MAX_DIMS && t->data) {
        s.n_el = (int)n;
        memcpy(s.el, t->data, (size_t)n * sizeof(int64_t));
        for (int i = 0; i < s.n_el; i++)
            if (s.el[i] < -1) s.n_el = -1; /* not a shape: no element may pass for a symbol */
    }
    return s;
}

inf__shape_infer *inf__shape_infer_new(const inf__graph *g) {
    inf__shape_infer *si = inf__calloc(1, sizeof *si);
    if (!si || !(si->v = inf__calloc((size_t)g->n_values + 1, sizeof(sym)))) {
        inf__free(si);
        return NULL;
    }
    si->g = g;
    si->next_sym = -2; /* -1 is Reshape's "infer this" and the rules' "not known" */
    for (int v = 0; v < g->n_values; v++) si->v[v] = UNKNOWN;
    for (int i = 0; i < g->n_inputs; i++) {
        const inf__value *val = &g->values[g->inputs[i]];
        sym *s = &si->v[g->inputs[i]];
        if (!val->has_info || val->info.kind != INF_KIND_TENSOR || val->info.ndim < 0) continue;
        s->rank = val->info.ndim;
        s->dtype = val->info.dtype;
        for (int k = 0; k < s->rank; k++) s->d[k] = val->info.dims[k] >= 0 ? val->info.dims[k] : fresh(si);
    }
    return si;
}

void inf__shape_infer_free(inf__shape_infer *si) {
    if (!si) return;
    inf__free(si->v);
    inf__free(si);
}

/* ---- helpers ---- */

/* Input k of node: its value index, or -1 when absent (a malformed node may
 * have fewer inputs than its op reads). */
static int input(const inf__node *node, int k) { return k < node->n_inputs ? node->inputs[k] : -1; }

/* Axis a of a rank-`rank` tensor counted from 0, or -1 when out of range. */
static int norm_axis(int64_t a, int rank) {
    if (a < 0) a += rank;
    return a >= 0 && a < rank ? (int)a : -1;
}

static bool all_known(const int64_t *x, int n) {
    for (int i = 0; i < n; i++)
        if (x[i] < 0) return false;
    return true;
}

/* The known int64 elements of value v (constant or inferred), or n = -1. */
static int known_ints(const inf__shape_infer *si, int v, int64_t *out) {
    sym s = get(si, v);
    if (s.n_el < 0 || !all_known(s.el, s.n_el)) return -1;
    memcpy(out, s.el, (size_t)s.n_el * sizeof(int64_t));
    return s.n_el;
}

/* The elements of an index-like input (Slice starts/ends/axes/steps,
 * Gather indices, Unsqueeze/Squeeze/Reduce axes): a constant's as they are
 * -- negative values count from the end there, they are not symbols --
 * else the known elements inferred for it, or n = -1. */
static int param_ints(const inf__shape_infer *si, int v, int64_t *out) {
    const inf__value *val = v >= 0 ? &si->g->values[v] : NULL;
    const inf_tensor *t = val && val->role == INF_VALUE_INITIALIZER ? val->constant : NULL;
    if (!t) return known_ints(si, v, out);
    int64_t n = inf_tensor_numel(t);
    if (t->kind != INF_KIND_TENSOR || t->dtype != INF_DTYPE_I64 || t->ndim > 1 || n > INF_MAX_DIMS || !t->data)
        return -1;
    memcpy(out, t->data, (size_t)n * sizeof(int64_t));
    return (int)n;
}

static int64_t broadcast_dim(inf__shape_infer *si, int64_t a, int64_t b) {
    if (a == 1) return b;
    if (b == 1 || a == b) return a;
    if (a >= 0 && b < 0) return a;
    if (b >= 0 && a < 0) return b;
    return fresh(si);
}

static sym broadcast(inf__shape_infer *si, const inf__node *node) {
    sym r = {.rank = 0, .n_el = -1};
    for (int k = 0; k < node->n_inputs; k++) {
        sym s = get(si, node->inputs[k]);
        if (s.rank < 0) return UNKNOWN;
        int rank = s.rank > r.rank ? s.rank : r.rank;
        sym out = {.rank = rank, .dtype = k == 0 ? s.dtype : r.dtype, .n_el = -1};
        for (int i = 0; i < rank; i++) {
            int ia = i - (rank - r.rank), ib = i - (rank - s.rank);
            int64_t a = ia >= 0 ? r.d[ia] : 1, b = ib >= 0 ? s.d[ib] : 1;
            out.d[i] = k == 0 ? b : broadcast_dim(si, a, b);
        }
        r = out;
    }
    return r;
}

/* Add/Sub/Mul/Div of two element lists of equal length (or one scalar). */
static void arith_elements(const inf__node *node, sym a, sym b, sym *r) {
    if (r->dtype != INF_DTYPE_I64 || a.n_el < 0 || b.n_el < 0 || r->rank > 1) return;
    int n = a.n_el > b.n_el ? a.n_el : b.n_el;
    if ((a.n_el != n && a.n_el != 1) || (b.n_el != n && b.n_el != 1) || !all_known(r->d, r->rank)) return;
    for (int i = 0; i < n; i++) {
        int64_t x = a.el[a.n_el == 1 ? 0 : i], y = b.el[b.n_el == 1 ? 0 : i];
        if (x < 0 || y < 0 || x > ((int64_t)1 << 40) || y > ((int64_t)1 << 40)) return; /* no overflow below */
        if (!strcmp(node->op_type, "Add")) r->el[i] = x + y;
        else if (!strcmp(node->op_type, "Sub")) r->el[i] = x - y;
        else if (!strcmp(node->op_type, "Mul") && (y == 0 || x <= INT64_MAX / y)) r->el[i] = x * y;
        else if (!strcmp(node->op_type, "Div") && y != 0) r->el[i] = x / y; /* both >= 0: C's truncation is floor */
        else return;
        if (r->el[i] < 0 || r->el[i] > ((int64_t)1 << 40)) return;
    }
    r->n_el = n;
}

/* ---- per-op rules ---- */

static sym infer_matmul(inf__shape_infer *si, sym a, sym b) {
    if (a.rank < 1 || b.rank < 1) return UNKNOWN;
    sym r = {.rank = 0, .dtype = a.dtype, .n_el = -1};
    int ba = a.rank >= 2 ? a.rank - 2 : 0, bb = b.rank >= 2 ? b.rank - 2 : 0;
    int nb = ba > bb ? ba : bb;
    for (int i = 0; i < nb; i++) {
        int ia = i - (nb - ba), ib = i - (nb - bb);
        r.d[r.rank++] = broadcast_dim(si, ia >= 0 ? a.d[ia] : 1, ib >= 0 ? b.d[ib] : 1);
    }
    if (a.rank >= 2) r.d[r.rank++] = a.d[a.rank - 2];
    if (b.rank >= 2) r.d[r.rank++] = b.d[b.rank - 1];
    return r;
}

static sym infer_transpose(const inf__node *node, sym x) {
    if (x.rank < 0) return UNKNOWN;
    int n = 0;
    const int64_t *perm = inf__attr_ints(node, "perm", &n);
    if (perm && n != x.rank) return UNKNOWN;
    sym r = x;
    r.n_el = -1;
    for (int i = 0; i < x.rank; i++) {
        int64_t p = perm ? perm[i] : x.rank - 1 - i;
        if (p < 0 || p >= x.rank) return UNKNOWN;
        r.d[i] = x.d[p];
    }
    return r;
}

/* The product of d[0..n) in *p; false when it overflows int64 (a fuzzed or
 * malformed shape: the dimension is then not known). */
static bool product(const int64_t *d, int n, int64_t *p) {
    *p = 1;
    for (int i = 0; i < n; i++)
        if (__builtin_mul_overflow(*p, d[i], p)) return false;
    return true;
}

/* Flatten's factor of d[lo, hi): the product if known, the dimension if
 * it is the only one that is not 1, else a new symbol. */
static int64_t flat_factor(inf__shape_infer *si, const int64_t *d, int lo, int hi) {
    int64_t p;
    if (all_known(d + lo, hi - lo) && product(d + lo, hi - lo, &p)) return p;
    int64_t only = -1;
    int n_not_one = 0;
    for (int i = lo; i < hi; i++)
        if (d[i] != 1) only = d[i], n_not_one++;
    return n_not_one == 1 ? only : fresh(si);
}

static sym infer_reshape(inf__shape_infer *si, const inf__node *node, sym x, sym shape) {
    if (shape.n_el < 0) return UNKNOWN;
    bool allowzero = inf__attr_int(node, "allowzero", 0) != 0;
    sym r = {.rank = shape.n_el, .dtype = x.dtype, .n_el = -1};
    int minus = -1;
    for (int i = 0; i < shape.n_el; i++) {
        int64_t e = shape.el[i];
        if (e == 0 && !allowzero) {
            if (i >= x.rank) return UNKNOWN;
            e = x.d[i];
        } else if (e == -1) {
            minus = i;
            e = 0;
        }
        r.d[i] = e;
    }
    if (minus >= 0) {
        r.d[minus] = 1;
        int64_t in = 0, out = 0, xd[INF_MAX_DIMS], rd[INF_MAX_DIMS];
        int nx = x.rank, nr = r.rank;
        if (nx >= 0) memcpy(xd, x.d, (size_t)nx * sizeof(int64_t));
        memcpy(rd, r.d, (size_t)nr * sizeof(int64_t));
        for (int i = 0; i < nx; i++) /* a symbol on both sides cancels: [b, s, 64] -> [b, s, -1, 16] gives 4 */
            for (int j = 0; xd[i] < 0 && j < nr; j++)
                if (rd[j] == xd[i]) xd[i] = rd[j] = 1;
        bool known = nx >= 0 && all_known(xd, nx) && all_known(rd, nr) && product(xd, nx, &in) &&
                     product(rd, nr, &out) && out > 0 && in % out == 0;
        r.d[minus] = known ? in / out : fresh(si);
    }
    if (x.n_el >= 0 && r.rank <= 1) r.n_el = x.n_el, memcpy(r.el, x.el, sizeof r.el);
    return r;
}

/* Axes of Unsqueeze/Squeeze/Reduce*: the attribute before `input_from`,
 * input 1 from it on.  n = -1 when they are not known. */
static int axes_of(const inf__shape_infer *si, const inf__node *node, int input_from, int64_t *axes) {
    if (node->opset < input_from) {
        int n = 0;
        const int64_t *a = inf__attr_ints(node, "axes", &n);
        if (n > INF_MAX_DIMS) return -1;
        if (a) memcpy(axes, a, (size_t)n * sizeof(int64_t));
        return n;
    }
    if (node->n_inputs < 2 || node->inputs[1] < 0) return 0;
    return param_ints(si, node->inputs[1], axes);
}

static sym infer_unsqueeze(const inf__shape_infer *si, const inf__node *node, sym x) {
    int64_t axes[INF_MAX_DIMS];
    int n = axes_of(si, node, 13, axes);
    if (x.rank < 0 || n <= 0 || x.rank + n > INF_MAX_DIMS) return UNKNOWN;
    sym r = {.rank = x.rank + n, .dtype = x.dtype, .n_el = x.n_el};
    bool is_new[INF_MAX_DIMS] = {false};
    for (int i = 0; i < n; i++) {
        int a = norm_axis(axes[i], r.rank);
        if (a < 0 || a >= r.rank || is_new[a]) return UNKNOWN;
        is_new[a] = true;
    }
    for (int i = 0, k = 0; i < r.rank; i++) r.d[i] = is_new[i] ? 1 : x.d[k++];
    memcpy(r.el, x.el, sizeof r.el);
    if (r.rank > 1) r.n_el = -1;
    return r;
}

static sym infer_squeeze(const inf__shape_infer *si, const inf__node *node, sym x) {
    int64_t axes[INF_MAX_DIMS];
    int n = axes_of(si, node, 13, axes);
    if (x.rank < 0 || n < 0) return UNKNOWN;
    bool drop[INF_MAX_DIMS] = {false};
    for (int i = 0; i < n; i++) {
        int a = norm_axis(axes[i], x.rank);
        if (a < 0 || a >= x.rank) return UNKNOWN;
        drop[a] = true;
    }
    for (int i = 0; n == 0 && i < x.rank; i++) {
        if (x.d[i] < 0) return UNKNOWN; /* no axes: every 1, which a symbol may be */
        drop[i] = x.d[i] == 1;
    }
    sym r = {.rank = 0, .dtype = x.dtype, .n_el = x.n_el};
    for (int i = 0; i < x.rank; i++)
        if (!drop[i]) r.d[r.rank++] = x.d[i];
    memcpy(r.el, x.el, sizeof r.el);
    return r;
}

static sym infer_reduce(const inf__shape_infer *si, const inf__node *node, sym x) {
    int64_t axes[INF_MAX_DIMS];
    int from = !strcmp(node->op_type, "ReduceSum") ? 13 : 18;
    int n = axes_of(si, node, from, axes);
    bool keep = inf__attr_int(node, "keepdims", 1) != 0;
    if (x.rank < 0 || n < 0 || (n == 0 && inf__attr_int(node, "noop_with_empty_axes", 0))) return UNKNOWN;
    bool red[INF_MAX_DIMS] = {false};
    for (int i = 0; i < n; i++) {
        int a = norm_axis(axes[i], x.rank);
        if (a < 0 || a >= x.rank) return UNKNOWN;
        red[a] = true;
    }
    sym r = {.rank = 0, .dtype = x.dtype, .n_el = -1};
    for (int i = 0; i < x.rank; i++) {
        if (n == 0 || red[i]) {
            if (keep) r.d[r.rank++] = 1;
        } else {
            r.d[r.rank++] = x.d[i];
        }
    }
    return r;
}

static sym infer_concat(const inf__shape_infer *si, const inf__node *node) {
    sym r = get(si, node->inputs[0]);
    if (r.rank < 0) return UNKNOWN;
    int axis = norm_axis(inf__attr_int(node, "axis", 0), r.rank);
    if (axis < 0 || axis >= r.rank) return UNKNOWN;
    for (int k = 1; k < node->n_inputs; k++) {
        sym s = get(si, node->inputs[k]);
        if (s.rank != r.rank) return UNKNOWN;
        if (r.d[axis] < 0 || s.d[axis] < 0 || __builtin_add_overflow(r.d[axis], s.d[axis], &r.d[axis])) r.d[axis] = -1;
        if (r.n_el >= 0 && s.n_el >= 0 && r.n_el + s.n_el <= INF_MAX_DIMS) {
            memcpy(r.el + r.n_el, s.el, (size_t)s.n_el * sizeof(int64_t));
            r.n_el += s.n_el;
        } else {
            r.n_el = -1;
        }
    }
    if (r.d[axis] == -1) r.d[axis] = r.n_el >= 0 ? r.n_el : INT64_MIN; /* INT64_MIN: a symbol of its own */
    return r;
}

static sym infer_gather(inf__shape_infer *si, const inf__node *node, sym data, sym idx) {
    if (data.rank < 1 || idx.rank < 0 || data.rank + idx.rank - 1 > INF_MAX_DIMS) return UNKNOWN;
    int axis = norm_axis(inf__attr_int(node, "axis", 0), data.rank);
    if (axis < 0 || axis >= data.rank) return UNKNOWN;
    sym r = {.rank = 0, .dtype = data.dtype, .n_el = -1};
    for (int i = 0; i < axis; i++) r.d[r.rank++] = data.d[i];
    for (int i = 0; i < idx.rank; i++) r.d[r.rank++] = idx.d[i];
    for (int i = axis + 1; i < data.rank; i++) r.d[r.rank++] = data.d[i];
    int64_t ix[INF_MAX_DIMS];
    int n = param_ints(si, input(node, 1), ix);
    if (data.rank == 1 && data.n_el >= 0 && n >= 0 && idx.rank <= 1) {
        for (int i = 0; i < n; i++) {
            int64_t j = ix[i] < 0 ? ix[i] + data.n_el : ix[i];
            if (j < 0 || j >= data.n_el) return r;
            r.el[i] = data.el[j];
        }
        r.n_el = n;
    }
    return r;
}

/* Slice with steps of 1 on the first axis of a tracked element list, or on
 * any axis of a shape (the sliced dimension known only for known bounds;
 * ends computed at run time, as torch's position_ids[:, :seq], give the
 * sliced axes new symbols). */
static sym infer_slice(inf__shape_infer *si, const inf__node *node, sym x) {
    int64_t st[INF_MAX_DIMS], en[INF_MAX_DIMS], ax[INF_MAX_DIMS], sp[INF_MAX_DIMS];
    if (x.rank < 1 || node->opset < 10 || node->n_inputs < 3) return UNKNOWN;
    int n = param_ints(si, node->inputs[1], st);
    bool ends_known = n >= 0 && param_ints(si, node->inputs[2], en) == n;
    if (n < 0 || (!ends_known && get(si, node->inputs[2]).n_el != n)) return UNKNOWN;
    int na = node->n_inputs > 3 && node->inputs[3] >= 0 ? param_ints(si, node->inputs[3], ax) : n;
    int ns = node->n_inputs > 4 && node->inputs[4] >= 0 ? param_ints(si, node->inputs[4], sp) : n;
    if (na != n || ns != n) return UNKNOWN;
    sym r = x;
    r.n_el = -1;
    for (int i = 0; i < n; i++) {
        int a = node->n_inputs > 3 && node->inputs[3] >= 0 ? norm_axis(ax[i], x.rank) : i;
        if (a < 0 || a >= x.rank || (node->n_inputs > 4 && node->inputs[4] >= 0 && sp[i] != 1)) return UNKNOWN;
        int64_t dim = x.d[a];
        if (dim < 0 || !ends_known) {
            r.d[a] = fresh(si);
            continue;
        }
        int64_t s = st[i] < 0 ? st[i] + dim : st[i], e = en[i] < 0 ? en[i] + dim : en[i];
        s = s < 0 ? 0 : s > dim ? dim : s;
        e = e < 0 ? 0 : e > dim ? dim : e;
        r.d[a] = e > s ? e - s : 0;
        if (x.rank == 1 && x.n_el >= 0 && a == 0) {
            memmove(r.el, x.el + s, (size_t)r.d[a] * sizeof(int64_t));
            r.n_el = (int)r.d[a];
        }
    }
    return r;
}

static sym infer_shape_op(const inf__node *node, sym x) {
    if (x.rank < 0) return UNKNOWN;
    int64_t s = inf__attr_int(node, "start", 0), e = inf__attr_int(node, "end", x.rank);
    s = s < 0 ? s + x.rank : s, e = e < 0 ? e + x.rank : e;
    s = s < 0 ? 0 : s > x.rank ? x.rank : s;
    e = e < 0 ? 0 : e > x.rank ? x.rank : e;
    sym r = {.rank = 1, .dtype = INF_DTYPE_I64, .n_el = (int)(e > s ? e - s : 0)};
    r.d[0] = r.n_el;
    memcpy(r.el, x.d + s, (size_t)r.n_el * sizeof(int64_t));
    return r;
}

/* Expand: x broadcast with the shape's elements (both ways, as Add would). */
static sym infer_expand(inf__shape_infer *si, sym x, sym shape) {
    if (x.rank < 0 || shape.n_el < 0 || shape.n_el > INF_MAX_DIMS) return UNKNOWN;
    int rank = x.rank > shape.n_el ? x.rank : shape.n_el;
    sym r = {.rank = rank, .dtype = x.dtype, .n_el = -1};
    for (int i = 0; i < rank; i++) {
        int ix = i - (rank - x.rank), is = i - (rank - shape.n_el);
        int64_t a = ix >= 0 ? x.d[ix] : 1, b = is >= 0 ? shape.el[is] : 1;
        if (b == -1) b = fresh(si); /* an element not known */
        r.d[i] = broadcast_dim(si, a, b);
    }
    return r;
}

/* Range(0, n, 1) on int64 scalars: [n] (torch's arange(seq), n a symbol
 * or a number); other starts and steps: rank 1, a new symbol. */
static sym infer_range(inf__shape_infer *si, const inf__node *node, sym start) {
    sym limit = get(si, input(node, 1)), delta = get(si, input(node, 2));
    if (start.rank != 0 || limit.rank != 0 || delta.rank != 0) return UNKNOWN;
    sym r = {.rank = 1, .dtype = start.dtype, .n_el = -1};
    bool simple = start.n_el == 1 && start.el[0] == 0 && delta.n_el == 1 && delta.el[0] == 1 && limit.n_el == 1 &&
                  limit.el[0] != -1 && start.dtype == INF_DTYPE_I64;
    r.d[0] = simple && limit.el[0] >= 0 ? limit.el[0] : simple ? limit.el[0] : fresh(si);
    return r;
}

/* Where(Equal(x, c), a, x) with c a constant of negative int64s and every
 * element of x a dimension (a number >= 0 or a symbol): no element of x
 * equals c's, so the result is x, element for element (TorchScript's
 * expand(-1) idiom: the -1s of an Expand's shape replaced by 1s). */
static void where_elements(const inf__shape_infer *si, const inf__node *node, sym *r) {
    if (node->n_inputs != 3 || node->inputs[0] < 0 || node->inputs[2] < 0) return;
    sym x = get(si, node->inputs[2]);
    if (x.rank != 1 || x.n_el < 0 || r->rank != 1 || r->d[0] != x.n_el) return;
    for (int i = 0; i < x.n_el; i++)
        if (x.el[i] == -1) return; /* not known */
    int p = si->g->values[node->inputs[0]].producer;
    if (p < 0 || strcmp(si->g->nodes[p].op_type, "Equal") || si->g->nodes[p].n_inputs != 2) return;
    const inf__node *eq = &si->g->nodes[p];
    int other = eq->inputs[0] == node->inputs[2]   ? eq->inputs[1]
                : eq->inputs[1] == node->inputs[2] ? eq->inputs[0]
                                                   : -1;
    const inf__value *ov = other >= 0 ? &si->g->values[other] : NULL;
    const inf_tensor *c = ov && ov->role == INF_VALUE_INITIALIZER ? ov->constant : NULL;
    if (!c || c->kind != INF_KIND_TENSOR || c->dtype != INF_DTYPE_I64 || !c->data) return;
    for (int64_t i = 0; i < inf_tensor_numel(c); i++)
        if (((const int64_t *)c->data)[i] >= 0) return;
    r->n_el = x.n_el;
    memcpy(r->el, x.el, (size_t)x.n_el * sizeof(int64_t));
}

static sym infer_output0(inf__shape_infer *si, const inf__node *node) {
    sym x = get(si, node->inputs[0]);
    const char *op = node->op_type;
    inf__shape_rule rule = inf__op_facts_of(node->op)->shape; /* ops/op_facts.c */
    if (rule == INF_SHAPE_SAME) return (x.n_el = -1, x);
    if (rule == INF_SHAPE_BROADCAST) {
        sym r = broadcast(si, node);
        if (node->n_inputs == 2 && strchr("ASMD", op[0]) && strlen(op) == 3)
            arith_elements(node, x, get(si, input(node, 1)), &r);
        if (!strcmp(op, "Where")) {
            r.dtype = get(si, input(node, 1)).dtype;
            if (r.dtype == INF_DTYPE_I64) where_elements(si, node, &r);
        }
        if (!strcmp(op, "Equal") || !strncmp(op, "Greater", 7) || !strncmp(op, "Less", 4)) r.dtype = INF_DTYPE_BOOL;
        return r;
    }
    if (!strcmp(op, "Cast")) {
        int64_t to = inf__attr_int(node, "to", 0);
        x.dtype = (inf_dtype)to;
        if (to != INF_DTYPE_I64) x.n_el = -1;
        return x;
    }
    if (!strcmp(op, "QuantizeLinear")) { /* x's shape; the zero point's type, else output_dtype, else uint8 */
        bool has_zp = input(node, 2) >= 0;
        x.dtype = inf__quantize_linear_out_type(has_zp, has_zp ? get(si, input(node, 2)).dtype : INF_DTYPE_UNDEFINED,
                                                inf__attr_int(node, "output_dtype", 0));
        x.n_el = -1;
        return x;
    }
    if (!strcmp(op, "DynamicQuantizeLinear")) { /* y: x's shape, uint8 (the scale and zero point stay unknown) */
        x.dtype = INF_DTYPE_U8;
        x.n_el = -1;
        return x;
    }
    if (!strcmp(op, "DequantizeLinear")) { /* x's shape (per axis or blocked too); the scale's type, else float32 */
        inf_dtype t = get(si, input(node, 1)).dtype;
        x.dtype = t != INF_DTYPE_UNDEFINED ? t : INF_DTYPE_F32;
        x.n_el = -1;
        return x;
    }
    if (!strcmp(op, "MatMul")) return infer_matmul(si, x, get(si, input(node, 1)));
    if (!strcmp(op, "MatMulInteger")) { /* MatMul's shape, int32 */
        sym r = infer_matmul(si, x, get(si, input(node, 1)));
        if (r.rank >= 0) r.dtype = INF_DTYPE_I32;
        return r;
    }
    if (!strcmp(op, "QLinearMatMul")) { /* a (input 0) x b (input 3); y_zero_point's (input 7) type */
        sym r = infer_matmul(si, x, get(si, input(node, 3)));
        if (r.rank >= 0) r.dtype = get(si, input(node, 7)).dtype;
        return r;
    }
    if (!strcmp(op, "Transpose")) return infer_transpose(node, x);
    if (!strcmp(op, "Reshape")) return infer_reshape(si, node, x, get(si, input(node, 1)));
    if (!strcmp(op, "Unsqueeze")) return infer_unsqueeze(si, node, x);
    if (!strcmp(op, "Squeeze")) return infer_squeeze(si, node, x);
    if (!strcmp(op, "Concat")) return infer_concat(si, node);
    if (!strcmp(op, "Gather")) return infer_gather(si, node, x, get(si, input(node, 1)));
    if (!strcmp(op, "GatherElements")) { /* the indices' shape, the data's type */
        sym r = get(si, input(node, 1));
        r.dtype = x.dtype, r.n_el = -1;
        return r;
    }
    if (!strcmp(op, "Slice")) return infer_slice(si, node, x);
    if (!strcmp(op, "Shape")) return infer_shape_op(node, x);
    if (!strcmp(op, "Expand")) return infer_expand(si, x, get(si, input(node, 1)));
    if (!strcmp(op, "Range")) return infer_range(si, node, x);
    if (!strncmp(op, "Reduce", 6)) return infer_reduce(si, node, x);
    if (!strcmp(op, "Flatten") && x.rank >= 0) {
        int64_t a = inf__attr_int(node, "axis", 1);
        if (a < 0) a += x.rank;
        if (a < 0 || a > x.rank) return UNKNOWN; /* Flatten's axis may equal the rank */
        int axis = (int)a;
        sym r = {.rank = 2, .dtype = x.dtype, .n_el = -1};
        r.d[0] = flat_factor(si, x.d, 0, axis), r.d[1] = flat_factor(si, x.d, axis, x.rank);
        return r;
    }
    return UNKNOWN;
}

/* QGemm (ai.infera, graph/passes/qdq.c: the QDQ MatMul / Gemm it replaced
 * runs before shape folding): x's shape with the last axis W's output
 * columns; the element type is left unknown (float32, or uint8 when the
 * store re-quantizes).  Its fused activation keeps the shape. */
static sym infer_qgemm(inf__shape_infer *si, const inf__node *node) {
    sym x = get(si, node->inputs[0]), w = node->n_inputs > 3 ? get(si, node->inputs[3]) : UNKNOWN;
    if (x.rank < 1 || w.rank != 2) return UNKNOWN;
    sym r = x;
    r.n_el = -1;
    r.dtype = (inf_dtype)0;
    r.d[x.rank - 1] = w.d[inf__attr_int(node, "trans_b", 0) ? 0 : 1];
    return r;
}

/* com.microsoft's quantized ops (ops/ref/ms_qlinear.c): the element-wise
 * ones keep X's shape and type, QLinearAdd / QLinearMul broadcast A (input
 * 0) with B (input 3), QLinearGlobalAveragePool keeps N and C, QGemm is
 * [M, N] (float without y_scale, else y_zero_point's type, uint8 without it). */
static sym infer_ms(inf__shape_infer *si, const inf__node *node) {
    const char *op = node->op_type;
    sym x = get(si, input(node, 0));
    x.n_el = -1;
    if (!strcmp(op, "QLinearLeakyRelu") || !strcmp(op, "QLinearSigmoid") || !strcmp(op, "QLinearSoftmax")) return x;
    if (!strcmp(op, "QLinearAdd") || !strcmp(op, "QLinearMul")) {
        sym b = get(si, input(node, 3));
        if (x.rank < 0 || b.rank < 0) return UNKNOWN;
        int rank = x.rank > b.rank ? x.rank : b.rank;
        sym r = {.rank = rank, .dtype = x.dtype, .n_el = -1};
        for (int i = 0; i < rank; i++) {
            int ia = i - (rank - x.rank), ib = i - (rank - b.rank);
            r.d[i] = broadcast_dim(si, ia >= 0 ? x.d[ia] : 1, ib >= 0 ? b.d[ib] : 1);
        }
        return r;
    }
    if (!strcmp(op, "QLinearGlobalAveragePool")) {
        if (x.rank < 3) return UNKNOWN;
        bool last = inf__attr_int(node, "channels_last", 0) != 0;
        for (int k = 1; k < x.rank; k++)
            if (last ? k < x.rank - 1 : k > 1) x.d[k] = 1;
        return x;
    }
    if (!strcmp(op, "QGemm")) {
        sym b = get(si, input(node, 3));
        if (x.rank != 2 || b.rank != 2) return UNKNOWN;
        sym r = {.rank = 2, .n_el = -1};
        r.d[0] = x.d[inf__attr_int(node, "transA", 0) ? 1 : 0];
        r.d[1] = b.d[inf__attr_int(node, "transB", 0) ? 0 : 1];
        r.dtype = input(node, 7) < 0   ? INF_DTYPE_F32
                  : input(node, 8) < 0 ? INF_DTYPE_U8
                                       : get(si, input(node, 8)).dtype;
        return r;
    }
    return UNKNOWN;
}

/* Split's outputs (all of them): sizes from input 1 (opset 13+) or the
 * `split` attribute when constant, else n equal parts of the axis --
 * ceil(d / n) each and the rest last (opset 18's num_outputs): a known
 * dimension gives known parts, a symbol a new symbol per part (whether d
 * divides is not known). */
static void infer_split(inf__shape_infer *si, const inf__node *node) {
    sym x = get(si, node->inputs[0]);
    int n = node->n_outputs, axis = x.rank >= 0 ? norm_axis(inf__attr_int(node, "axis", 0), x.rank) : -1;
    if (axis < 0 || n > INF_MAX_DIMS) return;
    int64_t sizes[INF_MAX_DIMS];
    int n_sizes = -1;
    sym sp = get(si, input(node, 1));
    const int64_t *attr = node->opset < 13 ? inf__attr_ints(node, "split", &n_sizes) : NULL;
    if (input(node, 1) >= 0) {
        if (sp.n_el != n) return;
        memcpy(sizes, sp.el, (size_t)n * sizeof(int64_t)), n_sizes = n;
    } else if (attr) {
        if (n_sizes != n) return;
        memcpy(sizes, attr, (size_t)n * sizeof(int64_t));
    } else {
        n_sizes = -1;
    }
    int64_t d = x.d[axis];
    for (int k = 0; k < n; k++) {
        if (node->outputs[k] < 0) continue;
        sym r = x;
        r.n_el = -1;
        if (n_sizes == n) r.d[axis] = sizes[k] >= 0 ? sizes[k] : fresh(si);
        else if (d >= 0) r.d[axis] = k < n - 1 ? (d + n - 1) / n : d - (int64_t)(n - 1) * ((d + n - 1) / n);
        else r.d[axis] = fresh(si);
        si->v[node->outputs[k]] = r;
    }
}

void inf__shape_infer_node(inf__shape_infer *si, const inf__node *node) {
    for (int k = 0; k < node->n_outputs; k++)
        if (node->outputs[k] >= 0) si->v[node->outputs[k]] = UNKNOWN;
    if (node->op && node->op->domain == INF_DOMAIN_INFERA && !strcmp(node->op_type, "QGemm") && node->n_outputs >= 1 &&
        node->outputs[0] >= 0 && node->inputs[0] >= 0) {
        si->v[node->outputs[0]] = infer_qgemm(si, node);
        return;
    }
    if (node->op && node->op->domain == INF_DOMAIN_INFERA && !strcmp(node->op_type, "Gelu") && node->n_outputs >= 1 &&
        node->outputs[0] >= 0 && node->inputs[0] >= 0) { /* the GELU pass's (graph/passes/gelu.c): element-wise */
        sym x = get(si, node->inputs[0]);
        x.n_el = -1;
        si->v[node->outputs[0]] = x;
        return;
    }
    if (node->op && node->op->domain == INF_DOMAIN_MS && node->n_outputs >= 1 && node->outputs[0] >= 0 &&
        node->inputs[0] >= 0) {
        sym r = infer_ms(si, node);
        for (int i = 0; i < r.rank; i++)
            if (r.d[i] == INT64_MIN || r.d[i] == -1) r.d[i] = fresh(si);
        si->v[node->outputs[0]] = r;
        return;
    }
    if (!node->op || node->op->domain != INF_DOMAIN_ONNX || node->n_inputs < 1 || node->n_outputs < 1 ||
        node->outputs[0] < 0 || node->inputs[0] < 0 || node->epilogue.kind != INF_EPILOGUE_NONE)
        return;
    if (!strcmp(node->op_type, "Split")) {
        infer_split(si, node);
        return;
    }
    sym r = infer_output0(si, node);
    for (int i = 0; i < r.rank; i++)
        if (r.d[i] == INT64_MIN || r.d[i] == -1) r.d[i] = fresh(si);
    si->v[node->outputs[0]] = r;
}

inf_status inf__shape_infer_constant(const inf__shape_infer *si, int v, inf_tensor **out) {
    *out = NULL;
    sym s = get(si, v);
    if (s.dtype != INF_DTYPE_I64 || s.n_el < 0 || s.rank < 0 || s.rank > 1 || !all_known(s.el, s.n_el) ||
        (s.rank == 0 && s.n_el != 1) || (s.rank == 1 && s.d[0] != s.n_el))
        return INF_OK;
    int64_t n = s.n_el;
    inf_status st = inf_tensor_new(INF_DTYPE_I64, s.rank, &n, out);
    if (st == INF_OK) memcpy((*out)->data, s.el, (size_t)n * sizeof(int64_t));
    return st;
}

int inf__shape_infer_dims(const inf__shape_infer *si, int v, int64_t *dims) {
    sym s = get(si, v);
    if (s.rank > 0) memcpy(dims, s.d, (size_t)s.rank * sizeof(int64_t));
    return s.rank;
}

inf_dtype inf__shape_infer_dtype(const inf__shape_infer *si, int v) {
    return v < 0 ? INF_DTYPE_UNDEFINED : get(si, v).dtype;
}
