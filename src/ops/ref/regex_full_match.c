/*
 * regex_full_match.c -- RegexFullMatch, opsets 20-26.
 *
 * Y (bool, X's shape) = whether each string of X matches the attribute
 * `pattern` (RE2 syntax) as a whole, as ONNX Runtime's RE2::FullMatch.
 * The pattern is checked and rewritten for PCRE2 (re2_syntax.c) and
 * compiled once at load, into the model's arena; a pattern RE2 refuses fails
 * the load with the node named.  Matching uses PCRE2's DFA matcher, which
 * does not backtrack (RE2 guarantees linear time; a backtracking matcher
 * could take exponential time on patterns such as (a*)*b).  An element that
 * is not valid UTF-8 matches nothing (as in RE2, whose UTF-8 automaton never
 * accepts it).  Needs libpcre2-8 (INF_WITH_PCRE2): a build without it (the
 * edge library) refuses the operator at load, saying so.
 * Deviations: see re2_syntax.c (case-folded \p classes, \p{C}).
 */
#include <string.h>

#include "ops/ops.h"
#include "ops/ref/re2_syntax.h"

#ifdef INF_WITH_PCRE2
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

/* Room for PCRE2's general context and one-pair match data, carved per run from kernel scratch. */
#define RUN_HEAP_BYTES 1024

typedef struct regex_params {
    pcre2_code *code;
    size_t workspace_ints; /* the DFA matcher's state list, sized from the compiled pattern */
} regex_params;

/* PCRE2 allocates through these: from the model's arena at load (freed with the model), and
 * from a bump region of kernel scratch at run time (so a warm run allocates nothing). */
typedef struct bump_heap {
    unsigned char *base;
    size_t used, size;
} bump_heap;

static void *arena_malloc(size_t size, void *arena) { return inf__arena_alloc(arena, size); }

static void *bump_malloc(size_t size, void *heap) {
    bump_heap *h = heap;
    size = (size + 15) & ~(size_t)15;
    if (h->size - h->used < size) return NULL;
    void *p = h->base + h->used;
    h->used += size;
    return p;
}

static void no_free(void *p, void *heap) {
    (void)p;
    (void)heap;
}

/* Compiles (?:pattern)\z, anchored: a full match.  (Not PCRE2_ENDANCHORED: PCRE2 10.42's DFA matcher
 * accepts a\.(?:\B)?(?:\b)| on "a" with it.) */
static inf_status compile_pattern(inf__node *node, inf__arena *arena, const char *pcre_pattern, pcre2_code **out,
                                  inf_error *err) {
    pcre2_general_context *gc = pcre2_general_context_create(arena_malloc, no_free, arena);
    pcre2_compile_context *cc = gc ? pcre2_compile_context_create(gc) : NULL;
    size_t len = strlen(pcre_pattern);
    char *full = inf__arena_alloc(arena, len + 8);
    if (!cc || !full || pcre2_set_newline(cc, PCRE2_NEWLINE_LF) != 0)
        return inf__node_error(node, err, INF_ENOMEM, "out of memory");
    memcpy(full, "(?:", 3);
    memcpy(full + 3, pcre_pattern, len);
    memcpy(full + 3 + len, ")\\z", 4);
    /* RE2's semantics: UTF-8, (?m)^ also after a final newline */
    uint32_t options = PCRE2_UTF | PCRE2_ALT_CIRCUMFLEX | PCRE2_NEVER_BACKSLASH_C | PCRE2_ANCHORED;
    int code;
    PCRE2_SIZE at;
    *out = pcre2_compile((PCRE2_SPTR)full, PCRE2_ZERO_TERMINATED, options, &code, &at, cc);
    if (*out) return INF_OK;
    PCRE2_UCHAR msg[160];
    pcre2_get_error_message(code, msg, sizeof msg);
    return inf__node_error(node, err, INF_EMODEL, "attribute pattern: %s", (const char *)msg);
}

static inf_status regex_init(inf__node *node, inf__arena *arena, inf_error *err) {
    const inf__attr *a = inf__node_attr(node, "pattern");
    if (!a || a->type != INF_ATTR_STRING)
        return inf__node_error(node, err, INF_EMODEL, "attribute pattern (a string, RE2 syntax) is required");
    const char *pattern = inf__attr_string(node, "pattern", "");
    char why[256];
    char *pcre_pattern = inf__re2_to_pcre2(pattern, why, sizeof why);
    if (!pcre_pattern) return inf__node_error(node, err, INF_EMODEL, "attribute pattern '%.80s': %s", pattern, why);
    regex_params *p = inf__op_params(arena, regex_params);
    inf_status st = p ? compile_pattern(node, arena, pcre_pattern, &p->code, err)
                      : inf__node_error(node, err, INF_ENOMEM, "out of memory");
    inf__free(pcre_pattern);
    if (st != INF_OK) return st;
    size_t bytes = 0;
    pcre2_pattern_info(p->code, PCRE2_INFO_SIZE, &bytes);
    p->workspace_ints = bytes * 6 > 1000 ? bytes * 6 : 1000; /* two lists of (state, count, data) per opcode */
    node->params = p;
    return INF_OK;
}

static inf_status regex_run(inf__kernel_ctx *ctx) {
    const regex_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0];
    if (x->kind != INF_KIND_TENSOR || x->dtype != INF_DTYPE_STRING)
        return inf__kernel_error(ctx, INF_ETYPE, "input X must be a string tensor, got %s", inf_dtype_name(x->dtype));
    inf_tensor *y;
    inf_status st = inf__kernel_output(ctx, 0, INF_DTYPE_BOOL, x->ndim, x->dims, &y);
    if (st != INF_OK) return st;
    int64_t n = inf_tensor_numel(x);
    if (!n) return INF_OK;
    int *workspace = inf__kernel_scratch(ctx, p->workspace_ints * sizeof(int));
    bump_heap heap = {inf__kernel_scratch(ctx, RUN_HEAP_BYTES), 0, RUN_HEAP_BYTES};
    if (!workspace || !heap.base) return INF_ENOMEM;
    pcre2_general_context *gc = pcre2_general_context_create(bump_malloc, no_free, &heap);
    pcre2_match_data *md = gc ? pcre2_match_data_create(1, gc) : NULL;
    if (!md) return inf__kernel_error(ctx, INF_ENOMEM, "out of memory for the match data");
    uint8_t *out = y->data;
    for (int64_t i = 0; i < n; i++) {
        const char *s = ((char *const *)x->data)[i];
        if (!s) s = "";
        int rc = pcre2_dfa_match(p->code, (PCRE2_SPTR)s, strlen(s), 0, 0, md, NULL, workspace, p->workspace_ints);
        if (rc == PCRE2_ERROR_DFA_WSSIZE)
            return inf__kernel_error(ctx, INF_ERANGE, "element %lld: the pattern's matcher ran out of states", (long long)i);
        /* >= 0: a match (0: more than one, the vector holds one); UTF-8 errors: no match */
        out[i] = rc >= 0;
    }
    return INF_OK;
}

const inf__op_impl op_regex_full_match = {regex_init, regex_run};

#else /* no libpcre2 in this build */

static inf_status regex_unavailable(inf__node *node, inf__arena *arena, inf_error *err) {
    (void)arena;
    return inf__node_error(node, err, INF_EUNSUPPORTED,
                           "this build of Infera has no regular expression library (RegexFullMatch needs "
                           "libpcre2-8: install libpcre2-dev and rebuild; the edge library leaves it out)");
}

static inf_status regex_never_runs(inf__kernel_ctx *ctx) {
    return inf__kernel_error(ctx, INF_EUNSUPPORTED, "RegexFullMatch is not built in");
}

const inf__op_impl op_regex_full_match = {regex_unavailable, regex_never_runs};

#endif
