/*
 * einsum.c -- Einsum, opsets 12-17.
 *
 *   T: float16/32/64, bfloat16, int8..int64, uint8..uint64 (all inputs the
 *   same type).  equation: "term,term,...[->output]"; a term is a list of
 *   letters (a-z, A-Z) with at most one "..." standing for the leading or
 *   middle dimensions not named; spaces are ignored.
 *
 * Semantics (numpy.einsum): a letter repeated within one term takes the
 * diagonal; letters absent from the output are summed over.  Without "->"
 * the output is the broadcast "..." dimensions followed by the letters that
 * occur exactly once, in ASCII order.  "..." dimensions of the operands are
 * aligned from the right and broadcast against each other; a dimension of
 * size 1 also broadcasts against a letter's size elsewhere (a superset of
 * the spec).  An explicit output without "..." sums the "..." dimensions.
 *
 * Design: a general loop evaluator.  Each distinct label (letter or "..."
 * dimension) gets a size and, per operand, a stride (the sum of the strides
 * of its dimensions labelled so, giving diagonals for free; 0 where the
 * operand lacks the label or broadcasts it).  An odometer walks the output
 * labels then the summed labels, multiplies the operands' elements and
 * accumulates into the output element.  The operands are first converted to
 * double in one scratch block, so integers are exact only up to 2^53.
 */
#include <stdio.h>
#include <string.h>

#include "ops/ref/math_util.h"

enum {
    MAX_OPERANDS = 16,
    N_LETTERS = 52,
    ELLIPSIS_BASE = N_LETTERS,                 /* label ids of "..." dimensions */
    MAX_LABELS = N_LETTERS + INF_MAX_DIMS,
    ELLIPSIS_MARK = -1,                        /* "..." inside a parsed term */
};

typedef struct einsum_term {
    int n;                      /* entries in label[] (letters and one mark) */
    int label[INF_MAX_DIMS + 1];
    bool has_ellipsis;
} einsum_term;

typedef struct einsum_params {
    int n_terms;
    einsum_term terms[MAX_OPERANDS];
    bool explicit_out;
    einsum_term out;
} einsum_params;

static int letter_id(char c) {
    if (c >= 'a' && c <= 'z') return c - 'a';
    if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
    return -1;
}

/* ASCII order of the label ids (uppercase first). */
static int letter_rank(int id) { return id >= 26 ? id - 26 : id + 26; }

/* Parses one term from s[0..len); returns false (message in why) if bad. */
static bool parse_term(const char *s, size_t len, einsum_term *t, const char **why) {
    t->n = 0;
    t->has_ellipsis = false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ' ') continue;
        if (t->n > INF_MAX_DIMS) {
            *why = "a term has more labels than the supported rank";
            return false;
        }
        if (s[i] == '.') {
            if (t->has_ellipsis || i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.') {
                *why = "a '.' that is not part of one \"...\" per term";
                return false;
            }
            t->has_ellipsis = true;
            t->label[t->n++] = ELLIPSIS_MARK;
            i += 2;
            continue;
        }
        int id = letter_id(s[i]);
        if (id < 0) {
            *why = "a character other than a letter, '.', ',', ' ' or \"->\"";
            return false;
        }
        t->label[t->n++] = id;
    }
    return true;
}

static inf_status einsum_init(inf__node *node, inf__arena *arena, inf_error *err) {
    einsum_params *p = inf__op_params(arena, einsum_params);
    if (!p) return INF_ENOMEM;
    const char *eq = inf__attr_string(node, "equation", NULL);
    if (!eq) return inf__node_error(node, err, INF_EMODEL, "attribute equation is required");
    const char *arrow = strstr(eq, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);
    const char *why = NULL;
    for (size_t start = 0; start <= lhs_len && !why;) {
        const char *comma = memchr(eq + start, ',', lhs_len - start);
        size_t end = comma ? (size_t)(comma - eq) : lhs_len;
        if (p->n_terms == MAX_OPERANDS) {
            why = "more than 16 operands";
            break;
        }
        parse_term(eq + start, end - start, &p->terms[p->n_terms++], &why);
        start = end + 1;
    }
    if (!why && arrow) {
        p->explicit_out = true;
        parse_term(arrow + 2, strlen(arrow + 2), &p->out, &why);
        for (int i = 0; i < p->out.n && !why; i++)
            for (int j = i + 1; j < p->out.n; j++)
                if (p->out.label[i] == p->out.label[j]) why = "a label repeated in the output";
    }
    if (why) return inf__node_error(node, err, INF_EMODEL, "equation \"%s\": %s", eq, why);
    node->params = p;
    return INF_OK;
}

/* The labels, sizes and strides of one run. */
typedef struct einsum_plan {
    int n_ell;                                /* broadcast rank of "..." */
    int64_t size[MAX_LABELS];                 /* -1: label unused */
    int64_t stride[MAX_OPERANDS + 1][MAX_LABELS]; /* [n_terms] is the output */
    int order[MAX_LABELS];                    /* output labels, then summed labels */
    int n_order, n_out;
} einsum_plan;

/* Assigns operand j's dimensions to labels: sizes and strides. */
static inf_status plan_operand(inf__kernel_ctx *ctx, einsum_plan *pl, const einsum_term *t, int j,
                               const inf_tensor *x) {
    int n_letters = t->n - (t->has_ellipsis ? 1 : 0);
    int e = x->ndim - n_letters;
    if (e < 0 || (!t->has_ellipsis && e != 0))
        return inf__kernel_error(ctx, INF_ESHAPE, "input %d: rank %d does not match its term (%d labels%s)",
                                 j, x->ndim, n_letters, t->has_ellipsis ? " and \"...\"" : "");
    int64_t xstride = 1, strides[INF_MAX_DIMS];
    int labels[INF_MAX_DIMS];
    for (int d = x->ndim - 1; d >= 0; d--) {
        strides[d] = xstride;
        xstride *= x->dims[d];
    }
    for (int i = 0, d = 0; i < t->n; i++) {
        if (t->label[i] != ELLIPSIS_MARK) {
            labels[d++] = t->label[i];
            continue;
        }
        for (int q = 0; q < e; q++) labels[d++] = ELLIPSIS_BASE + pl->n_ell - e + q;
    }
    for (int d = 0; d < x->ndim; d++) {
        int l = labels[d];
        int64_t n = x->dims[d];
        if (pl->size[l] < 0 || pl->size[l] == 1) {
            if (n != 1 || pl->size[l] < 0) pl->size[l] = n;
        } else if (n != pl->size[l] && n != 1) {
            return inf__kernel_error(ctx, INF_ESHAPE, "input %d: dimension %d has size %lld, expected %lld for its label",
                                     j, d, (long long)n, (long long)pl->size[l]);
        }
        /* a size-1 dimension always reads index 0: stride 0 lets it broadcast */
        if (n != 1) pl->stride[j][l] += strides[d];
    }
    return INF_OK;
}

static inf_status einsum_plan_build(inf__kernel_ctx *ctx, const einsum_params *p, einsum_plan *pl) {
    memset(pl, 0, sizeof *pl);
    for (int l = 0; l < MAX_LABELS; l++) pl->size[l] = -1;
    for (int j = 0; j < p->n_terms; j++) {
        const einsum_term *t = &p->terms[j];
        int e = ctx->in[j]->ndim - (t->n - (t->has_ellipsis ? 1 : 0));
        if (t->has_ellipsis && e > pl->n_ell) pl->n_ell = e;
    }
    for (int j = 0; j < p->n_terms; j++) {
        inf_status st = plan_operand(ctx, pl, &p->terms[j], j, ctx->in[j]);
        if (st != INF_OK) return st;
    }
    /* output labels */
    bool in_out[MAX_LABELS] = {false};
    if (p->explicit_out) {
        for (int i = 0; i < p->out.n; i++) {
            int l = p->out.label[i];
            if (l == ELLIPSIS_MARK) {
                for (int q = 0; q < pl->n_ell; q++) pl->order[pl->n_order++] = ELLIPSIS_BASE + q;
                continue;
            }
            if (pl->size[l] < 0)
                return inf__kernel_error(ctx, INF_EINVAL, "output label '%c' appears in no input",
                                         l < 26 ? 'a' + l : 'A' + l - 26);
            pl->order[pl->n_order++] = l;
        }
    } else {
        int count[N_LETTERS] = {0};
        for (int j = 0; j < p->n_terms; j++)
            for (int i = 0; i < p->terms[j].n; i++)
                if (p->terms[j].label[i] != ELLIPSIS_MARK) count[p->terms[j].label[i]]++;
        for (int q = 0; q < pl->n_ell; q++) pl->order[pl->n_order++] = ELLIPSIS_BASE + q;
        for (int r = 0; r < N_LETTERS; r++)
            for (int l = 0; l < N_LETTERS; l++)
                if (letter_rank(l) == r && count[l] == 1) pl->order[pl->n_order++] = l;
    }
    pl->n_out = pl->n_order;
    if (pl->n_out > INF_MAX_DIMS)
        return inf__kernel_error(ctx, INF_EUNSUPPORTED, "output rank %d exceeds %d", pl->n_out,
                                 INF_MAX_DIMS);
    for (int i = 0; i < pl->n_out; i++) in_out[pl->order[i]] = true;
    for (int l = 0; l < MAX_LABELS; l++)
        if (pl->size[l] >= 0 && !in_out[l]) pl->order[pl->n_order++] = l;
    /* output strides (row-major over the output labels) */
    int64_t s = 1;
    for (int i = pl->n_out - 1; i >= 0; i--) {
        pl->stride[p->n_terms][pl->order[i]] = s;
        s *= pl->size[pl->order[i]];
    }
    return INF_OK;
}

/* acc[out] += prod_j x_j[...] over every combination of label values. */
static void einsum_loop(const einsum_plan *pl, int n_ops, double *const *x, double *acc) {
    int n = pl->n_order;
    int64_t idx[MAX_LABELS] = {0}, off[MAX_OPERANDS + 1] = {0};
    for (int k = 0; k < n; k++)
        if (pl->size[pl->order[k]] == 0) return;
    for (;;) {
        double v = 1;
        for (int j = 0; j < n_ops; j++) v *= x[j][off[j]];
        acc[off[n_ops]] += v;
        int k = n - 1;
        for (; k >= 0; k--) {
            int l = pl->order[k];
            for (int j = 0; j <= n_ops; j++) off[j] += pl->stride[j][l];
            if (++idx[k] < pl->size[l]) break;
            for (int j = 0; j <= n_ops; j++) off[j] -= pl->stride[j][l] * pl->size[l];
            idx[k] = 0;
        }
        if (k < 0) return;
    }
}

static inf_status einsum_run(inf__kernel_ctx *ctx) {
    const einsum_params *p = ctx->node->params;
    if (ctx->n_in != p->n_terms)
        return inf__kernel_error(ctx, INF_EINVAL, "the equation has %d terms but the node has %d inputs",
                                 p->n_terms, ctx->n_in);
    size_t total = 0;
    for (int j = 0; j < ctx->n_in; j++) {
        const inf_tensor *x;
        char name[16];
        snprintf(name, sizeof name, "Inputs[%d]", j);
        inf_status st = math_input(ctx, j, name, true, &x);
        if (st != INF_OK) return st;
        if (!math_is_numeric(x->dtype) || x->dtype != ctx->in[0]->dtype)
            return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected a numeric type equal to input 0's, got %s",
                                     name, inf_dtype_name(x->dtype));
        total += (size_t)inf_tensor_numel(x);
    }
    einsum_plan pl;
    inf_status st = einsum_plan_build(ctx, p, &pl);
    if (st != INF_OK) return st;
    int64_t dims[INF_MAX_DIMS];
    for (int i = 0; i < pl.n_out; i++) dims[i] = pl.size[pl.order[i]];
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, ctx->in[0]->dtype, pl.n_out, dims, &y)) != INF_OK) return st;
    int64_t n_y = inf_tensor_numel(y);
    double *buf = inf__kernel_scratch(ctx, (total + (size_t)n_y + 1) * sizeof(double));
    if (!buf) return INF_ENOMEM;
    double *xs[MAX_OPERANDS], *acc = buf;
    memset(acc, 0, (size_t)n_y * sizeof *acc);
    double *at = buf + n_y;
    for (int j = 0; j < ctx->n_in; j++) {
        xs[j] = at;
        for (int64_t i = 0, n = inf_tensor_numel(ctx->in[j]); i < n; i++)
            *at++ = inf__tensor_get_f64(ctx->in[j], i);
    }
    einsum_loop(&pl, ctx->n_in, xs, acc);
    for (int64_t i = 0; i < n_y; i++) inf__tensor_set_f64(y, i, acc[i]);
    return INF_OK;
}

const inf__op_impl op_einsum = {einsum_init, einsum_run};
