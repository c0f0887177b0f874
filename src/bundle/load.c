/*
 * load.c -- a bundle image -> an inf_model, with no protobuf and no JSON.
 *
 * DESIGN: the image is checked before anything is read from it (magic,
 * format version, target, declared size, header CRC, section table, body
 * CRC), so a truncated, corrupted, foreign or future bundle is refused with
 * one sentence naming the file and the reason.  Then the META and GRAPH
 * streams (layout in write.c) are decoded with a bounds-checked reader into
 * the model arena -- every count, index and offset is validated, because a
 * fuzzer (tests/fuzz/fuzz_bundle.c) feeds it arbitrary bytes with a valid
 * checksum -- and tensor data is not copied: constants are views of the
 * WEIGHTS section, which must outlive the model (a mapped file, owned by
 * the model, or a caller's static array).  Nodes are bound to their kernels
 * (internal fused ops included; their init packs weights as at ONNX load)
 * and the graph is not optimised again: it was optimised before it was
 * written.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bundle/bundle_int.h"
#include "graph/graph.h"
#include "infera/cpu.h"
#include "ops/ops.h"

/* ---- targets ---- */

typedef struct target_row {
    inf_target target;
    const char *name;
} target_row;

static const target_row k_targets[] = {
    {INF_TARGET_X86_64, "x86_64"},
    {INF_TARGET_X86_64_AVX2, "x86_64-avx2"},
    {INF_TARGET_AARCH64, "aarch64"},
};
#define N_TARGETS ((int)(sizeof k_targets / sizeof k_targets[0]))

const char *inf_target_name(inf_target target) {
    for (int i = 0; i < N_TARGETS; i++)
        if (k_targets[i].target == target) return k_targets[i].name;
    return NULL;
}

inf_target inf_target_from_name(const char *name) {
    for (int i = 0; name && i < N_TARGETS; i++)
        if (!strcmp(k_targets[i].name, name)) return k_targets[i].target;
    return (inf_target)0;
}

inf_target inf_target_host(void) {
#if defined(__aarch64__)
    return INF_TARGET_AARCH64;
#else
    return INF_TARGET_X86_64;
#endif
}

/* Why this host cannot run a bundle made for target, or NULL when it can. */
static const char *target_mismatch(inf_target target) {
#if defined(__x86_64__)
    if (target == INF_TARGET_X86_64) return NULL;
    if (target == INF_TARGET_X86_64_AVX2) {
        const uint32_t need = INF_CPU_AVX2 | INF_CPU_FMA;
        return (inf_cpu_get_info()->features & need) == need ? NULL : "this CPU has no AVX2/FMA";
    }
    return "this host is x86_64";
#elif defined(__aarch64__)
    return target == INF_TARGET_AARCH64 ? NULL : "this host is aarch64";
#else
    (void)target;
    return "this host's architecture has no bundle target";
#endif
}

/* ---- bounds-checked stream reader ---- */

typedef struct reader {
    const uint8_t *p, *end;
    bool bad;
} reader;

static const uint8_t *take(reader *r, size_t n) {
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = true;
        return NULL;
    }
    const uint8_t *at = r->p;
    r->p += n;
    return at;
}
static uint8_t get_u8(reader *r) {
    const uint8_t *p = take(r, 1);
    return p ? *p : 0;
}
static uint32_t get_u32(reader *r) {
    const uint8_t *p = take(r, 4);
    return p ? inf__rd_u32(p) : 0;
}
static int32_t get_i32(reader *r) { return (int32_t)get_u32(r); }
static uint64_t get_u64(reader *r) {
    const uint8_t *p = take(r, 8);
    return p ? inf__rd_u64(p) : 0;
}
static int64_t get_i64(reader *r) { return (int64_t)get_u64(r); }
static float get_f32(reader *r) {
    uint32_t u = get_u32(r);
    float f;
    memcpy(&f, &u, 4);
    return f;
}
/* A count of items that each take at least min_bytes: bounded by what is left. */
static int get_count(reader *r, size_t min_bytes) {
    uint32_t n = get_u32(r);
    if (r->bad || n > INT32_MAX / 2 || (size_t)n * min_bytes > (size_t)(r->end - r->p)) {
        r->bad = true;
        return 0;
    }
    return (int)n;
}

typedef struct loader {
    inf_model *model;
    reader r;
    const uint8_t *weights;
    uint64_t weights_size;
    const char *what;
    inf_error *err;
    int depth;
} loader;

#define CORRUPT(L, ...) inf_error_set((L)->err, INF_EFORMAT, __VA_ARGS__)
#define OOM(L) inf_error_set((L)->err, INF_ENOMEM, "%s: out of memory loading the bundle", (L)->what)

static char *get_str(loader *L) {
    uint32_t n = get_u32(&L->r);
    const uint8_t *s = take(&L->r, n);
    if (!s) return NULL;
    char *c = inf__arena_strndup(&L->model->arena, (const char *)s, n);
    if (!c) L->r.bad = true;
    return c;
}

static inf_status stream_error(loader *L, const char *where) {
    return CORRUPT(L, "%s: corrupted bundle: %s is malformed", L->what, where);
}

static inf_status get_info(loader *L, inf_value_info *info) {
    reader *r = &L->r;
    memset(info, 0, sizeof *info);
    info->kind = (inf_value_kind)get_u8(r);
    info->is_optional = get_u8(r);
    info->dtype = (inf_dtype)get_i32(r);
    info->ndim = get_i32(r);
    if (r->bad || info->kind > INF_KIND_NONE || info->ndim < -1 || info->ndim > INF_MAX_DIMS ||
        (unsigned)info->dtype >= INF_DTYPE_COUNT)
        return stream_error(L, "a value type");
    for (int d = 0; d < info->ndim; d++) {
        info->dims[d] = get_i64(r);
        uint32_t n = get_u32(r);
        if (n == 0xFFFFFFFFu) continue;
        r->p -= 4;
        if (!(info->dim_names[d] = get_str(L))) return r->bad ? stream_error(L, "a dimension name") : OOM(L);
    }
    return r->bad ? stream_error(L, "a value type") : INF_OK;
}

static inf_status get_tensor(loader *L, inf_tensor **out);

static inf_status get_tensor_body(loader *L, inf_tensor *t) {
    reader *r = &L->r;
    if (t->kind == INF_KIND_SEQUENCE || t->kind == INF_KIND_MAP) {
        int n = get_count(r, 9);
        t->flags |= INF_TENSOR_OWNS_DATA; /* items are freed with the value */
        if (n && !(t->items = inf__calloc((size_t)n, sizeof *t->items))) return OOM(L);
        for (int i = 0; i < n; i++) {
            inf_status st = get_tensor(L, &t->items[i]);
            t->n_items++; /* a partly decoded item is freed with the value too */
            if (st) return st;
        }
        return r->bad ? stream_error(L, "a sequence constant") : INF_OK;
    }
    if (t->kind != INF_KIND_TENSOR) return INF_OK;
    int64_t numel = inf_tensor_numel(t);
    if (t->dtype == INF_DTYPE_STRING) {
        if (numel > (int64_t)(r->end - r->p) / 4) return stream_error(L, "a string constant");
        t->data = inf__aligned_alloc((size_t)(numel ? numel : 1) * sizeof(char *));
        if (!t->data) return OOM(L);
        memset(t->data, 0, (size_t)(numel ? numel : 1) * sizeof(char *));
        t->flags |= INF_TENSOR_OWNS_DATA;
        char **s = t->data;
        for (int64_t i = 0; i < numel; i++) {
            uint32_t n = get_u32(r);
            const uint8_t *bytes = take(r, n);
            if (!bytes) return stream_error(L, "a string constant");
            if (!(s[i] = inf__strndup((const char *)bytes, n))) return OOM(L);
        }
        return INF_OK;
    }
    uint64_t off = get_u64(r), bytes = get_u64(r);
    size_t esize = inf_dtype_size(t->dtype);
    if (r->bad || esize == 0 || numel < 0 || (uint64_t)numel > UINT64_MAX / esize ||
        bytes != (uint64_t)numel * esize || off % INF__BUNDLE_ALIGN || off > L->weights_size ||
        bytes > L->weights_size - off)
        return CORRUPT(L, "%s: corrupted bundle: a constant's data lies outside the weights section", L->what);
    t->data = bytes ? (void *)(L->weights + off) : NULL; /* a view: the bundle outlives the model */
    return INF_OK;
}

static inf_status get_tensor(loader *L, inf_tensor **out) {
    reader *r = &L->r;
    *out = NULL;
    if (L->depth >= INF__BUNDLE_MAX_DEPTH) return stream_error(L, "a constant (nested too deeply)");
    inf_tensor *t = inf__calloc(1, sizeof *t);
    if (!t) return OOM(L);
    t->flags = INF_TENSOR_OWNS_STRUCT;
    *out = t;
    t->kind = get_u8(r);
    t->dtype = (inf_dtype)get_i32(r);
    t->ndim = get_i32(r);
    if (r->bad || t->kind > INF_KIND_NONE || t->ndim < 0 || t->ndim > INF_MAX_DIMS ||
        (unsigned)t->dtype >= INF_DTYPE_COUNT)
        return stream_error(L, "a constant");
    for (int d = 0; d < t->ndim; d++)
        if ((t->dims[d] = get_i64(r)) < 0 || t->dims[d] > (int64_t)1 << 40) return stream_error(L, "a constant's shape");
    if (t->kind == INF_KIND_TENSOR && inf__shape_numel(t->ndim, t->dims) < 0) return stream_error(L, "a constant's shape");
    L->depth++;
    inf_status st = get_tensor_body(L, t);
    L->depth--;
    return st;
}

static inf_status get_graph(loader *L, inf__graph *parent, inf__graph **out);

static inf_status get_list_alloc(loader *L, int n, size_t elem, void **out) {
    *out = inf__arena_alloc(&L->model->arena, ((size_t)n + 1) * elem);
    return *out ? INF_OK : OOM(L);
}

static inf_status get_attr(loader *L, inf__graph *g, inf__attr *a) {
    reader *r = &L->r;
    inf_status st;
    if (!(a->name = get_str(L))) return r->bad ? stream_error(L, "an attribute") : OOM(L);
    a->type = (inf__attr_type)get_u8(r);
    a->f = get_f32(r);
    a->i = get_i64(r);
    if (r->bad) return stream_error(L, "an attribute");
    switch (a->type) {
    case INF_ATTR_FLOAT:
    case INF_ATTR_INT:
    case INF_ATTR_UNDEFINED: break;
    case INF_ATTR_STRING: {
        uint32_t n = get_u32(r);
        r->p -= r->bad ? 0 : 4;
        if (!(a->s = get_str(L))) return r->bad ? stream_error(L, "a string attribute") : OOM(L);
        a->s_len = n;
        break;
    }
    case INF_ATTR_TENSOR: return get_tensor(L, &a->t);
    case INF_ATTR_GRAPH: return get_graph(L, g, &a->g);
    case INF_ATTR_FLOATS:
        a->n = get_count(r, 4);
        if ((st = get_list_alloc(L, a->n, sizeof(float), (void **)&a->floats))) return st;
        for (int i = 0; i < a->n; i++) a->floats[i] = get_f32(r);
        break;
    case INF_ATTR_INTS:
        a->n = get_count(r, 8);
        if ((st = get_list_alloc(L, a->n, sizeof(int64_t), (void **)&a->ints))) return st;
        for (int i = 0; i < a->n; i++) a->ints[i] = get_i64(r);
        break;
    case INF_ATTR_STRINGS:
        a->n = get_count(r, 4);
        if ((st = get_list_alloc(L, a->n, sizeof(char *), (void **)&a->strings))) return st;
        for (int i = 0; i < a->n; i++)
            if (!(a->strings[i] = get_str(L))) return r->bad ? stream_error(L, "a strings attribute") : OOM(L);
        break;
    case INF_ATTR_TENSORS: {
        int n = get_count(r, 9);
        if ((st = get_list_alloc(L, n, sizeof(inf_tensor *), (void **)&a->tensors))) return st;
        for (a->n = 0; a->n < n; a->n++)
            if ((st = get_tensor(L, &a->tensors[a->n]))) {
                a->n++; /* freed with the model */
                return st;
            }
        break;
    }
    case INF_ATTR_GRAPHS: {
        int n = get_count(r, 16);
        if ((st = get_list_alloc(L, n, sizeof(inf__graph *), (void **)&a->graphs))) return st;
        for (a->n = 0; a->n < n; a->n++)
            if ((st = get_graph(L, g, &a->graphs[a->n]))) {
                if (a->graphs[a->n]) a->n++;
                return st;
            }
        break;
    }
    case INF_ATTR_TYPE_PROTO:
    case INF_ATTR_TYPE_PROTOS:
        a->n = get_count(r, 10);
        if ((st = get_list_alloc(L, a->n, sizeof(inf_value_info), (void **)&a->type_protos))) return st;
        for (int i = 0; i < a->n; i++)
            if ((st = get_info(L, &a->type_protos[i]))) return st;
        break;
    default: return stream_error(L, "an attribute type");
    }
    return r->bad ? stream_error(L, "an attribute") : INF_OK;
}

static inf_status get_indices(loader *L, const inf__graph *g, bool allow_absent, int *n_out, int **out) {
    int n = get_count(&L->r, 4);
    inf_status st = get_list_alloc(L, n, sizeof(int), (void **)out);
    if (st) return st;
    for (int i = 0; i < n; i++) {
        int v = get_i32(&L->r);
        if (v < (allow_absent ? -1 : 0) || v >= g->n_values) return stream_error(L, "a value index");
        (*out)[i] = v;
    }
    *n_out = n;
    return L->r.bad ? stream_error(L, "an index list") : INF_OK;
}

static inf_status get_node(loader *L, inf__graph *g, int index, inf__node *node) {
    reader *r = &L->r;
    inf_status st;
    node->graph = g;
    if (!(node->name = get_str(L)) || !(node->op_type = get_str(L)) || !(node->domain = get_str(L)))
        return r->bad ? stream_error(L, "a node") : OOM(L);
    node->opset = get_i32(r);
    if ((st = get_indices(L, g, true, &node->n_inputs, &node->inputs)) ||
        (st = get_indices(L, g, true, &node->n_outputs, &node->outputs)) ||
        (st = get_indices(L, g, false, &node->n_implicit, &node->implicit)))
        return st;
    node->epilogue.kind = (inf__epilogue_kind)get_u8(r);
    node->epilogue.alpha = get_f32(r);
    node->epilogue.lo = get_f32(r);
    node->epilogue.hi = get_f32(r);
    if (r->bad || node->epilogue.kind > INF_EPILOGUE_SILU) return stream_error(L, "a node's activation");
    int n_attrs = get_count(r, 18);
    if ((st = get_list_alloc(L, n_attrs, sizeof(inf__attr), (void **)&node->attrs))) return st;
    for (node->n_attrs = 0; node->n_attrs < n_attrs;) {
        st = get_attr(L, g, &node->attrs[node->n_attrs]);
        node->n_attrs++; /* what was decoded is freed with the model */
        if (st) return st;
    }
    for (int k = 0; k < node->n_outputs; k++) {
        int v = node->outputs[k];
        if (v < 0) continue;
        if (g->values[v].producer >= 0 || g->values[v].role != INF_VALUE_INTERMEDIATE)
            return CORRUPT(L, "%s: corrupted bundle: node '%s' writes '%s', which is already defined", L->what,
                           node->name, g->values[v].name);
        g->values[v].producer = index;
    }
    return INF_OK;
}

static inf_status get_values(loader *L, inf__graph *g) {
    reader *r = &L->r;
    inf_status st;
    int n = get_count(r, 11);
    if ((st = get_list_alloc(L, n, sizeof(inf__value), (void **)&g->values))) return st;
    for (int i = 0; i < n; i++) {
        inf__value *v = &g->values[i];
        v->producer = -1;
        if (!(v->name = get_str(L))) return r->bad ? stream_error(L, "a value") : OOM(L);
        v->role = (inf__value_role)get_u8(r);
        v->outer = get_i32(r);
        v->has_info = get_u8(r);
        v->info.ndim = -1;
        g->n_values = i + 1;
        if (v->has_info && (st = get_info(L, &v->info))) return st;
        v->info.name = v->name;
        if (get_u8(r) && (st = get_tensor(L, &v->constant))) return st;
        bool outer_ok = v->role != INF_VALUE_OUTER || (g->parent && v->outer >= 0 && v->outer < g->parent->n_values);
        if (r->bad || v->role > INF_VALUE_OUTER || !outer_ok || (v->role == INF_VALUE_INITIALIZER) != (v->constant != NULL))
            return stream_error(L, "a value");
    }
    return INF_OK;
}

static inf_status get_graph(loader *L, inf__graph *parent, inf__graph **out) {
    reader *r = &L->r;
    inf_status st;
    if (L->depth >= INF__BUNDLE_MAX_DEPTH) return stream_error(L, "a graph (nested too deeply)");
    inf__graph *g = *out = inf__arena_alloc(&L->model->arena, sizeof *g);
    if (!g) return OOM(L);
    g->parent = parent;
    g->model = L->model;
    if (!(g->name = get_str(L))) return r->bad ? stream_error(L, "a graph") : OOM(L);
    L->depth++;
    st = get_values(L, g);
    if (!st) st = get_indices(L, g, false, &g->n_inputs, &g->inputs);
    if (!st) st = get_indices(L, g, false, &g->n_outputs, &g->outputs);
    int n_nodes = st ? 0 : get_count(r, 40);
    if (!st && !(st = get_list_alloc(L, n_nodes, sizeof(inf__node), (void **)&g->nodes)))
        for (g->n_nodes = 0; g->n_nodes < n_nodes && !st;) {
            st = get_node(L, g, g->n_nodes, &g->nodes[g->n_nodes]);
            g->n_nodes++;
        }
    L->depth--;
    if (st) return st;
    if ((st = inf__graph_finalize(g, L->err))) {
        inf__error_prefix(L->err, "%s: corrupted bundle", L->what);
        return st;
    }
    return INF_OK;
}

/* ---- META ---- */

static inf_status get_meta(loader *L, inf__bundle_facts *facts) {
    inf_model *m = L->model;
    reader *r = &L->r;
    inf_status st;
    if (!(m->producer_name = get_str(L)) || !(m->producer_version = get_str(L)) || !(m->doc_string = get_str(L)))
        return r->bad ? stream_error(L, "the model facts") : OOM(L);
    m->ir_version = get_i64(r);
    m->model_version = get_i64(r);
    int n = get_count(r, 12);
    if ((st = get_list_alloc(L, n, sizeof(inf_opset), (void **)&m->opsets))) return st;
    for (m->n_opsets = 0; m->n_opsets < n; m->n_opsets++) {
        if (!(m->opsets[m->n_opsets].domain = get_str(L))) return r->bad ? stream_error(L, "an opset") : OOM(L);
        m->opsets[m->n_opsets].version = get_i64(r);
    }
    n = get_count(r, 8);
    if ((st = get_list_alloc(L, n, sizeof(char *), (void **)&m->metadata_keys)) ||
        (st = get_list_alloc(L, n, sizeof(char *), (void **)&m->metadata_values)))
        return st;
    for (m->n_metadata = 0; m->n_metadata < n; m->n_metadata++)
        if (!(m->metadata_keys[m->n_metadata] = get_str(L)) || !(m->metadata_values[m->n_metadata] = get_str(L)))
            return r->bad ? stream_error(L, "the metadata") : OOM(L);
    m->n_nodes_written = get_i32(r);
    n = get_count(r, 12);
    if ((st = get_list_alloc(L, n, sizeof *m->op_types, (void **)&m->op_types))) return st;
    for (m->n_op_types = 0; m->n_op_types < n; m->n_op_types++) {
        if (!(m->op_types[m->n_op_types].domain = get_str(L)) || !(m->op_types[m->n_op_types].op_type = get_str(L)))
            return r->bad ? stream_error(L, "the op counts") : OOM(L);
        m->op_types[m->n_op_types].count = get_i32(r);
    }
    facts->max_batch = get_i32(r);
    const uint8_t *sha = take(r, 32);
    if (sha) memcpy(facts->source_sha256, sha, 32);
    if (!(facts->source_name = get_str(L))) return r->bad ? stream_error(L, "the lineage") : OOM(L);
    facts->source_bytes = get_u64(r);
    if (r->bad || facts->max_batch < 1) return stream_error(L, "the model facts");
    return INF_OK;
}

/* ---- PREPACK: panels used in place (write.c put_prepacked) ---- */

/* A panels-only constant (PREPACK flag SOLE; ops.h INF__TENSOR_GEMM_PANELS):
 * its data are the panels of op(B).  The shape must be the entry's; a host
 * whose kernels take the panels keeps them in place, flagged; another (no
 * AVX2/FMA) gets the plain matrix back in a block the tensor owns. */
static inf_status take_sole(loader *L, inf_tensor *t, const inf__prepack_entry *e) {
    int64_t d0 = e->trans_b ? e->n : e->k, d1 = e->trans_b ? e->k : e->n;
    if (t->dtype != INF_DTYPE_F32 || t->ndim != 2 || t->dims[0] != d0 || t->dims[1] != d1 || e->ldb != d1 ||
        (t->flags & (INF_TENSOR_OWNS_DATA | INF__TENSOR_GEMM_PANELS)))
        return stream_error(L, "a panels-only weight matrix");
    if (inf__cpu_has_avx2_fma()) {
        t->flags |= INF__TENSOR_GEMM_PANELS | (e->trans_b ? INF__TENSOR_GEMM_PANELS_T : 0);
        return INF_OK;
    }
    float *plain = inf__aligned_alloc((size_t)(d0 * d1) * sizeof(float));
    if (!plain) return OOM(L);
    inf__ops_sgemm_unpack_b(e->trans_b, e->k, e->n, e->panels, plain);
    t->data = plain;
    t->flags |= INF_TENSOR_OWNS_DATA;
    return INF_OK;
}

/* take_sole for every constant value of g (and of its subgraphs) whose data
 * are e's panels; *found counts them. */
static inf_status take_sole_in(loader *L, inf__graph *g, const inf__prepack_entry *e, int *found) {
    inf_status st;
    for (int v = 0; v < g->n_values; v++) {
        inf_tensor *t = g->values[v].constant;
        if (t && t->kind == INF_KIND_TENSOR && t->data == (const void *)e->panels) {
            ++*found;
            if ((st = take_sole(L, t, e))) return st;
        }
    }
    for (int n = 0; n < g->n_nodes; n++)
        for (int a = 0; a < g->nodes[n].n_attrs; a++) {
            const inf__attr *at = &g->nodes[n].attrs[a];
            if (at->type == INF_ATTR_GRAPH && at->g && (st = take_sole_in(L, at->g, e, found))) return st;
            for (int k = 0; at->type == INF_ATTR_GRAPHS && k < at->n; k++)
                if ((st = take_sole_in(L, at->graphs[k], e, found))) return st;
        }
    return INF_OK;
}

static inf_status get_prepacked(loader *L, const inf__bundle_facts *f, inf__prepack_log *log, int *n_sole) {
    memset(log, 0, sizeof *log);
    log->supply = true;
    *n_sole = 0;
    if (!f->has_section[INF__BS_PREPACK]) return INF_OK;
    reader *r = &L->r;
    *r = (reader){f->sections[INF__BS_PREPACK], f->sections[INF__BS_PREPACK] + f->section_bytes[INF__BS_PREPACK], false};
    int n = get_count(r, 49);
    inf_status st = get_list_alloc(L, n, sizeof *log->items, (void **)&log->items);
    if (st) return st;
    for (int i = 0; i < n; i++) {
        uint64_t b_off = get_u64(r);
        uint8_t flags = get_u8(r);
        int64_t k = get_i64(r), cols = get_i64(r), ldb = get_i64(r);
        uint64_t p_off = get_u64(r);
        int64_t floats = get_i64(r);
        bool sole = flags & INF__PP_SOLE;
        bool ok = !r->bad && flags <= (INF__PP_TRANS_B | INF__PP_SOLE) && k > 0 && cols > 0 && k < ((int64_t)1 << 31) &&
                  cols < ((int64_t)1 << 31) && floats == inf__ops_sgemm_packed_floats(k, cols) &&
                  b_off < L->weights_size && p_off % INF__BUNDLE_ALIGN == 0 && p_off <= L->weights_size &&
                  (uint64_t)floats <= (L->weights_size - p_off) / sizeof(float) && (!sole || b_off == p_off);
        if (!ok) return stream_error(L, "the packed weights");
        inf__prepack_entry e = {(const float *)(L->weights + b_off),
                                (flags & INF__PP_TRANS_B) != 0,
                                k,
                                cols,
                                ldb,
                                (const float *)(L->weights + p_off),
                                floats};
        if (sole) { /* the constant stored as these panels: found, checked and flagged (or unpacked) */
            int found = 0;
            if ((st = take_sole_in(L, L->model->graph, &e, &found))) return st;
            if (!found) return stream_error(L, "a panels-only weight matrix (no constant holds it)");
            ++*n_sole;
        }
        log->items[log->n++] = e;
    }
    return INF_OK;
}

/* ---- CONVPACK: convolution weights used in place (write.c put_convpacked) ---- */

static inf_status get_convpacked(loader *L, const inf__bundle_facts *f, inf__prepack_log *log) {
    if (!f->has_section[INF__BS_CONVPACK]) return INF_OK;
    reader *r = &L->r;
    *r = (reader){f->sections[INF__BS_CONVPACK], f->sections[INF__BS_CONVPACK] + f->section_bytes[INF__BS_CONVPACK],
                  false};
    int n = get_count(r, 60);
    inf_status st = get_list_alloc(L, n, sizeof *log->conv, (void **)&log->conv);
    if (st) return st;
    for (int i = 0; i < n; i++) {
        uint64_t w_off = get_u64(r);
        int32_t var = get_i32(r);
        int64_t m = get_i64(r), group = get_i64(r), cg = get_i64(r), kdim = get_i64(r);
        uint64_t p_off = get_u64(r);
        int64_t floats = get_i64(r);
        const int64_t lim = INF__BUNDLE_CONVPACK_MAX_DIM;
        /* the float count is checked against the variant's when a kernel takes the entry (ops/ref/conv.c) */
        bool ok = !r->bad && m > 0 && m < lim && group > 0 && group < lim && cg > 0 && cg < lim && kdim > 0 &&
                  kdim < lim && floats > 0 && w_off < L->weights_size &&
                  p_off % INF__BUNDLE_ALIGN == 0 && p_off <= L->weights_size &&
                  (uint64_t)floats <= (L->weights_size - p_off) / sizeof(float);
        if (!ok) return stream_error(L, "the packed convolution weights");
        log->conv[log->n_conv++] = (inf__convpack_entry){(const float *)(L->weights + w_off), var, m, group, cg, kdim,
                                                         (const float *)(L->weights + p_off), floats};
    }
    return INF_OK;
}

/* ---- binding and model facts ---- */

/* Binds every node to its kernel, as the ONNX loader does (ops/op_table.c),
 * except that the optimizer's internal ops (ai.infera) are allowed: a bundle
 * holds the graph after optimisation. */
static inf_status bind_graph(loader *L, inf__graph *g) {
    for (int n = 0; n < g->n_nodes; n++) {
        inf__node *node = &g->nodes[n];
        int dom = !strcmp(node->domain, "ai.infera") ? INF_DOMAIN_INFERA : inf__domain_from_string(node->domain);
        const inf__op *op = dom < 0 ? NULL : inf__op_find((inf__domain)dom, node->op_type);
        if (!op || !op->impl)
            return inf_error_set(L->err, INF_EUNSUPPORTED,
                              "%s: node '%s' uses operator %s (domain '%s'), which this build does not have",
                              L->what, node->name, node->op_type, node->domain);
        if (dom != INF_DOMAIN_INFERA && (node->opset < op->first_opset || node->opset > op->last_opset))
            return inf_error_set(L->err, INF_EUNSUPPORTED, "%s: node '%s' (%s) is at opset %d; this build has %d-%d",
                              L->what, node->name, node->op_type, node->opset, op->first_opset, op->last_opset);
        if (node->n_inputs < op->min_inputs || (op->max_inputs >= 0 && node->n_inputs > op->max_inputs) ||
            node->n_outputs < op->min_outputs || (op->max_outputs >= 0 && node->n_outputs > op->max_outputs))
            return CORRUPT(L, "%s: corrupted bundle: node '%s' (%s) has %d inputs and %d outputs", L->what,
                           node->name, node->op_type, node->n_inputs, node->n_outputs);
        node->op = op;
        inf_status st = op->impl->init ? op->impl->init(node, &L->model->arena, L->err) : INF_OK;
        if (st) {
            inf__error_prefix(L->err, "%s", L->what);
            return st;
        }
        for (int a = 0; a < node->n_attrs; a++) {
            const inf__attr *at = &node->attrs[a];
            if (at->type == INF_ATTR_GRAPH && at->g && (st = bind_graph(L, at->g))) return st;
            for (int k = 0; at->type == INF_ATTR_GRAPHS && k < at->n; k++)
                if ((st = bind_graph(L, at->graphs[k]))) return st;
        }
    }
    return INF_OK;
}

static inf_status collect_io_infos(loader *L) {
    inf_model *m = L->model;
    inf__graph *g = m->graph;
    m->input_infos = inf__arena_alloc(&m->arena, ((size_t)g->n_inputs + 1) * sizeof(inf_value_info));
    m->output_infos = inf__arena_alloc(&m->arena, ((size_t)g->n_outputs + 1) * sizeof(inf_value_info));
    if (!m->input_infos || !m->output_infos) return OOM(L);
    for (int i = 0; i < g->n_inputs; i++) m->input_infos[i] = g->values[g->inputs[i]].info;
    for (int i = 0; i < g->n_outputs; i++) m->output_infos[i] = g->values[g->outputs[i]].info;
    return INF_OK;
}

/* ---- the checked image ---- */

static inf_status check_image(const uint8_t *d, size_t size, const char *what, inf__bundle_facts *f,
                              inf_error *err) {
    if (size < INF__BUNDLE_MAGIC_LEN || memcmp(d, INF__BUNDLE_MAGIC, INF__BUNDLE_MAGIC_LEN))
        return inf_error_set(err, INF_EFORMAT, "%s: not an Infera bundle (bad magic)", what);
    if (size < INF__BUNDLE_HEADER_BYTES)
        return inf_error_set(err, INF_EFORMAT, "%s: truncated bundle: %zu bytes, shorter than its 64-byte header", what,
                          size);
    if (inf__crc32c(0, d, INF__BH_HEAD_CRC) != inf__rd_u32(d + INF__BH_HEAD_CRC))
        return inf_error_set(err, INF_EFORMAT, "%s: corrupted bundle: header checksum mismatch", what);
    uint32_t version = inf__rd_u32(d + INF__BH_VERSION);
    if (version != INF__BUNDLE_VERSION)
        return inf_error_set(err, INF_EUNSUPPORTED,
                             "%s: bundle format version %u; this build reads version %u (rebuild it from its "
                             "source model: infera compile MODEL -o OUT)",
                             what, version, INF__BUNDLE_VERSION);
    f->target = (inf_target)inf__rd_u32(d + INF__BH_TARGET);
    const char *tname = inf_target_name(f->target);
    if (!tname) return inf_error_set(err, INF_EUNSUPPORTED, "%s: bundle for unknown target %u", what, (unsigned)f->target);
    const char *why = target_mismatch(f->target);
    if (why)
        return inf_error_set(err, INF_EUNSUPPORTED, "%s: bundle compiled for target %s, but %s (compile it with --target %s)",
                          what, tname, why, inf_target_name(inf_target_host()));
    uint64_t declared = inf__rd_u64(d + INF__BH_FILE_SIZE);
    if (declared != size)
        return inf_error_set(err, INF_EFORMAT, "%s: %s bundle: the header says %llu bytes, the file has %zu", what,
                          declared > size ? "truncated" : "oversized", (unsigned long long)declared, size);
    uint32_t n = inf__rd_u32(d + INF__BH_N_SECTIONS);
    if (n > INF__BUNDLE_MAX_SECTIONS || INF__BUNDLE_HEADER_BYTES + (uint64_t)n * INF__BUNDLE_SECTION_BYTES > size)
        return inf_error_set(err, INF_EFORMAT, "%s: corrupted bundle: %u sections", what, n);
    if (inf__crc32c_striped(d + INF__BUNDLE_HEADER_BYTES, size - INF__BUNDLE_HEADER_BYTES) != inf__rd_u32(d + INF__BH_BODY_CRC))
        return inf_error_set(err, INF_EFORMAT, "%s: corrupted bundle: checksum mismatch (CRC32C over %zu bytes)", what,
                          size - INF__BUNDLE_HEADER_BYTES);
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *e = d + INF__BUNDLE_HEADER_BYTES + (size_t)i * INF__BUNDLE_SECTION_BYTES;
        uint32_t kind = inf__rd_u32(e);
        uint64_t off = inf__rd_u64(e + 8), len = inf__rd_u64(e + 16);
        if (off % INF__BUNDLE_ALIGN || off > size || len > size - off)
            return inf_error_set(err, INF_EFORMAT, "%s: corrupted bundle: section %u lies outside the file", what, i);
        if (kind >= 1 && kind <= INF__BS_LAST) {
            f->sections[kind] = d + off;
            f->section_bytes[kind] = len;
            f->has_section[kind] = true;
        } /* other kinds: optional sections of a later minor revision, skipped */
    }
    for (int k = INF__BS_META; k <= INF__BS_WEIGHTS; k++)
        if (!f->has_section[k]) return inf_error_set(err, INF_EFORMAT, "%s: corrupted bundle: section %d missing", what, k);
    return INF_OK;
}

static void release_bundle(inf_model *m) {
    inf__bundle_facts *f = m->bundle;
    if (f && f->release) f->release((void *)f->image, f->image_size);
}

inf_status inf__bundle_load_image(const void *data, size_t size, const char *what, void (*release)(void *, size_t),
                                  inf_model **out, inf_error *err) {
    *out = NULL;
    const uint8_t *d = data;
    if ((uintptr_t)d % INF__BUNDLE_ALIGN)
        return inf_error_set(err, INF_EINVAL, "%s: a bundle in memory must be 64-byte aligned", what);
    inf__bundle_facts facts;
    memset(&facts, 0, sizeof facts);
    inf_status st = check_image(d, size, what, &facts, err);
    if (st) return st;
    inf_model *m = inf__calloc(1, sizeof *m);
    if (!m) return inf_error_set(err, INF_ENOMEM, "%s: out of memory loading the bundle", what);
    inf__arena_init(&m->arena, 1 << 14);
    m->bundle = inf__arena_alloc(&m->arena, sizeof facts);
    loader L = {m, {0}, facts.sections[INF__BS_WEIGHTS], facts.section_bytes[INF__BS_WEIGHTS], what, err, 0};
    if (!m->bundle || !(m->path = inf__arena_strdup(&m->arena, what))) {
        st = OOM(&L);
        goto fail;
    }
    m->file_bytes = size;
    L.r = (reader){facts.sections[INF__BS_META], facts.sections[INF__BS_META] + facts.section_bytes[INF__BS_META], false};
    if ((st = get_meta(&L, &facts))) goto fail;
    L.r = (reader){facts.sections[INF__BS_GRAPH], facts.sections[INF__BS_GRAPH] + facts.section_bytes[INF__BS_GRAPH], false};
    if ((st = get_graph(&L, NULL, &m->graph))) goto fail;
    inf__prepack_log prepacked;
    if ((st = get_prepacked(&L, &facts, &prepacked, &facts.n_panels_only)) ||
        (st = get_convpacked(&L, &facts, &prepacked)))
        goto fail;
    facts.n_prepacked = prepacked.n;
    facts.n_convpacked = prepacked.n_conv;
    inf__ops_prepack_begin(&prepacked); /* kernels' init takes the stored panels instead of packing */
    st = bind_graph(&L, m->graph);
    inf__ops_prepack_end();
    if (st || (st = collect_io_infos(&L))) goto fail;
    facts.image = data;
    facts.image_size = size;
    facts.release = release;
    *(inf__bundle_facts *)m->bundle = facts;
    m->on_free = release_bundle;
    *out = m;
    return INF_OK;
fail:
    inf_model_free(m); /* the image stays the caller's on failure */
    return st;
}

inf_status inf_bundle_load_static(const void *data, size_t size, const char *name, inf_model **out, inf_error *err) {
    return inf__bundle_load_image(data, size, name ? name : "<bundle>", NULL, out, err);
}

static void unmap_image(void *p, size_t size) { munmap(p, size); }

static void free_copy(void *p, size_t size) {
    (void)size;
    inf__aligned_free(p);
}

inf_status inf__bundle_load_copy(const void *data, size_t size, const char *what, inf_model **out, inf_error *err) {
    *out = NULL;
    void *copy = inf__aligned_alloc(size ? size : 1);
    if (!copy) return inf_error_set(err, INF_ENOMEM, "%s: out of memory copying a %zu-byte bundle", what, size);
    memcpy(copy, data, size);
    inf_status st = inf__bundle_load_image(copy, size, what, free_copy, out, err);
    if (st) inf__aligned_free(copy);
    return st;
}

inf_status inf__bundle_load_mapped(void *mapping, size_t size, const char *path, inf_model **out, inf_error *err) {
    return inf__bundle_load_image(mapping, size, path, unmap_image, out, err);
}

inf_status inf_bundle_load(const char *path, inf_model **out, inf_error *err) {
    int fd;
    uint64_t n;
    *out = NULL;
    inf_status st = inf_file_open(path, "bundle", INF_FILE_MAX_MODEL_BYTES, &fd, &n, err);
    if (st) return st;
    if (n == 0 || n > SIZE_MAX) {
        close(fd);
        return inf_error_set(err, INF_EFORMAT, "%s: not an Infera bundle (empty file)", path);
    }
    /* No MAP_POPULATE: populating walks every page in one call, which costs
     * more than the fault-around of first touches (bench/edge: 0.14 -> 0.10 ms
     * to the MLP's first result) */
    void *p = mmap(NULL, (size_t)n, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return inf_error_set(err, INF_EIO, "%s: cannot map the bundle", path);
    st = inf__bundle_load_mapped(p, (size_t)n, path, out, err);
    if (st) munmap(p, (size_t)n);
    return st;
}

int inf_model_bundle_info(const inf_model *model, inf_bundle_info *out) {
    const inf__bundle_facts *f = model ? model->bundle : NULL;
    if (!f) return 0;
    memset(out, 0, sizeof *out);
    out->format_version = INF__BUNDLE_VERSION;
    out->target = f->target;
    out->max_batch = f->max_batch;
    static const uint8_t zero[32];
    if (memcmp(f->source_sha256, zero, 32))
        for (int i = 0; i < 32; i++) snprintf(out->source_sha256 + 2 * i, 3, "%02x", f->source_sha256[i]);
    out->source_name = f->source_name;
    out->n_prepacked = f->n_prepacked;
    out->n_convpacked = f->n_convpacked;
    out->n_panels_only = f->n_panels_only;
    if (f->has_section[INF__BS_PIPELINE]) {
        out->pipeline = (const char *)f->sections[INF__BS_PIPELINE];
        out->pipeline_len = (size_t)f->section_bytes[INF__BS_PIPELINE];
    }
    return 1;
}

int inf_bundle_is_bundle(const void *data, size_t size) {
    return data && size >= INF__BUNDLE_MAGIC_LEN && !memcmp(data, INF__BUNDLE_MAGIC, INF__BUNDLE_MAGIC_LEN);
}
