/*
 * write.c -- serialises a loaded, optimised model into a bundle image
 * (inf_bundle_write; `infera compile`).
 *
 * DESIGN: two byte streams are built side by side, the graph (GRAPH) and the
 * model facts (META), plus the WEIGHTS section where every tensor's data is
 * appended at a 64-byte boundary and referred to by offset.  Then the
 * header, the section table and the sections are laid out (each section
 * 64-byte aligned, so the weights are aligned in a mapped file) and the two
 * CRC32Cs written.  The stream encoding (little-endian, no padding):
 *   str    = u32 length, bytes (no NUL)
 *   info   = u8 kind, u8 optional, i32 dtype, i32 ndim, ndim x (i64 dim, str name or u32 0xFFFFFFFF)
 *   tensor = u8 kind, i32 dtype, i32 ndim, ndim x i64 dims, then
 *            TENSOR string: numel x str;  TENSOR other: u64 offset, u64 bytes (in WEIGHTS);
 *            SEQUENCE/MAP: u32 n, n x tensor;  NONE: nothing
 *   graph  = str name, u32 n_values, values, u32 n_inputs, i32s, u32 n_outputs, i32s, u32 n_nodes, nodes
 *   value  = str name, u8 role, i32 outer, u8 has_info, [info], u8 has_constant, [tensor]
 *   node   = str name, str op_type, str domain, i32 opset, u32+i32s inputs, u32+i32s outputs,
 *            u32+i32s implicit, u8 epilogue kind, f32 alpha, f32 lo, f32 hi, u32 n_attrs, attrs
 *   attr   = str name, u8 type, f32 f, i64 i, then by type: STRING str; TENSOR tensor; GRAPH graph;
 *            FLOATS u32+f32s; INTS u32+i64s; STRINGS u32+strs; TENSORS u32+tensors; GRAPHS u32+graphs;
 *            TYPE_PROTO(S) u32+infos
 *   META   = str producer_name, str producer_version, str doc_string, i64 ir_version, i64 model_version,
 *            u32 n_opsets x (str domain, i64 version), u32 n_metadata x (str key, str value),
 *            i32 n_nodes_written, u32 n_op_types x (str domain, str op_type, i32 count),
 *            i32 max_batch, 32 bytes source SHA-256, str source name, u64 source bytes
 * Initializers no node reads (the optimizer folded them into others) keep
 * their value entry but not their data.
 */
#include <string.h>

#include "bundle/bundle_int.h"
#include "graph/graph.h"
#include "ops/ops.h"

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
    bool oom;
} buf;

static void put(buf *b, const void *data, size_t n) {
    if (b->oom) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n) cap *= 2;
        uint8_t *np = inf__realloc(b->p, cap);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void put_u8(buf *b, uint8_t v) { put(b, &v, 1); }
static void put_u32(buf *b, uint32_t v) {
    uint8_t t[4];
    inf__wr_u32(t, v);
    put(b, t, 4);
}
static void put_i32(buf *b, int32_t v) { put_u32(b, (uint32_t)v); }
static void put_u64(buf *b, uint64_t v) {
    uint8_t t[8];
    inf__wr_u64(t, v);
    put(b, t, 8);
}
static void put_i64(buf *b, int64_t v) { put_u64(b, (uint64_t)v); }
static void put_f32(buf *b, float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    put_u32(b, u);
}
static void put_strn(buf *b, const char *s, size_t n) {
    put_u32(b, (uint32_t)n);
    put(b, s, n);
}
static void put_str(buf *b, const char *s) { put_strn(b, s ? s : "", s ? strlen(s) : 0); }
static void put_ints(buf *b, int n, const int *v) {
    put_u32(b, (uint32_t)n);
    for (int i = 0; i < n; i++) put_i32(b, v[i]);
}

static void pad_to(buf *b, size_t align) {
    static const uint8_t zeros[INF__BUNDLE_ALIGN];
    size_t r = b->n % align;
    if (r) put(b, zeros, align - r);
}

/* Where a constant's data went in WEIGHTS (to place packed panels of it). */
typedef struct placed {
    const uint8_t *data;
    uint64_t bytes, offset;
} placed;

/* A constant written as its GEMM panels alone (PREPACK flag SOLE). */
typedef struct sole {
    uint64_t offset; /* of the panels in WEIGHTS, which is the constant's data offset */
    bool trans_b;
    int64_t k, n, floats;
} sole;

typedef struct writer {
    buf graph, meta, weights, prepack, convpack;
    placed *placed;
    int n_placed, cap_placed;
    const inf__prepack_log *log; /* the panels the compiling load packed (NULL: none) */
    bool x86;                    /* the target's kernels use those panels */
    sole *sole;
    int n_sole, cap_sole;
    inf_error *err;
} writer;

static void put_info(buf *b, const inf_value_info *info) {
    put_u8(b, (uint8_t)info->kind);
    put_u8(b, (uint8_t)(info->is_optional != 0));
    put_i32(b, (int32_t)info->dtype);
    put_i32(b, info->ndim);
    for (int d = 0; d < info->ndim && d < INF_MAX_DIMS; d++) {
        put_i64(b, info->dims[d]);
        if (info->dim_names[d]) put_str(b, info->dim_names[d]);
        else put_u32(b, 0xFFFFFFFFu);
    }
}

static void put_tensor(writer *w, const inf_tensor *t) {
    buf *b = &w->graph;
    put_u8(b, t->kind);
    put_i32(b, (int32_t)t->dtype);
    put_i32(b, t->ndim);
    for (int d = 0; d < t->ndim; d++) put_i64(b, t->dims[d]);
    if (t->kind == INF_KIND_SEQUENCE || t->kind == INF_KIND_MAP) {
        put_u32(b, (uint32_t)t->n_items);
        for (int i = 0; i < t->n_items; i++) put_tensor(w, t->items[i]);
        return;
    }
    if (t->kind != INF_KIND_TENSOR) return;
    int64_t numel = inf_tensor_numel(t);
    if (t->dtype == INF_DTYPE_STRING) {
        char *const *s = t->data;
        for (int64_t i = 0; i < numel; i++) put_str(b, s && s[i] ? s[i] : "");
        return;
    }
    size_t bytes = t->data ? inf_tensor_nbytes(t) : 0;
    const void *data = t->data;
    float *plain = NULL;
    if (bytes && (t->flags & INF__TENSOR_GEMM_PANELS)) { /* panels only in the source bundle: the matrix back */
        bool tb = (t->flags & INF__TENSOR_GEMM_PANELS_T) != 0;
        if (!(plain = inf__aligned_alloc(bytes))) {
            w->weights.oom = true;
            return;
        }
        inf__ops_sgemm_unpack_b(tb, t->dims[tb ? 1 : 0], t->dims[tb ? 0 : 1], t->data, plain);
        data = plain;
    }
    pad_to(&w->weights, INF__BUNDLE_ALIGN);
    if (bytes && !plain) {
        if (inf__array_reserve((void **)&w->placed, &w->cap_placed, w->n_placed + 1, sizeof *w->placed))
            w->weights.oom = true;
        else
            w->placed[w->n_placed++] = (placed){t->data, bytes, w->weights.n};
    }
    put_u64(b, w->weights.n);
    put_u64(b, bytes);
    put(&w->weights, data, bytes);
    inf__aligned_free(plain);
}

/* ---- constants stored as their GEMM panels alone (format 2) ---- */

/* How each value of g is read, for panels only: 1 by GEMM kernels packing
 * op(B) = B, 2 packing B^T (ops.h inf__ops_gemm_b_panels_only), -1 any
 * other way (another op or input, a graph input or output, a subgraph),
 * 0 not at all. */
static void combine(int8_t *how, int v, int8_t as) {
    if (v >= 0) how[v] = how[v] == 0 || how[v] == as ? as : -1;
}

static void mark_panel_readers(const inf__graph *g, int8_t *how) {
    for (int i = 0; i < g->n_outputs; i++)
        combine(how, g->outputs[i], -1);
    for (int i = 0; i < g->n_inputs; i++)
        combine(how, g->inputs[i], -1);
    for (int n = 0; n < g->n_nodes; n++) {
        const inf__node *node = &g->nodes[n];
        for (int k = 0; k < node->n_inputs; k++) {
            bool tb;
            combine(how, node->inputs[k], inf__ops_gemm_b_panels_only(node, k, &tb) ? (tb ? 2 : 1) : -1);
        }
        for (int k = 0; k < node->n_implicit; k++)
            combine(how, node->implicit[k], -1);
        for (int a = 0; a < node->n_attrs; a++) {
            const inf__attr *at = &node->attrs[a];
            for (int k = 0; k < (at->type == INF_ATTR_GRAPHS ? at->n : at->type == INF_ATTR_GRAPH && at->g); k++) {
                const inf__graph *sub = at->type == INF_ATTR_GRAPHS ? at->graphs[k] : at->g;
                for (int v = 0; v < sub->n_values; v++)
                    if (sub->values[v].role == INF_VALUE_OUTER) combine(how, sub->values[v].outer, -1);
            }
        }
    }
}

/* The panels of constant t as readers packing op(B) (B^T when trans_b)
 * use them: the source bundle's own (panels only there), else the ones the
 * compiling load recorded, when packing t again gives the same bytes; NULL
 * when there are none. */
static const float *panels_of(const writer *w, const inf_tensor *t, bool trans_b, bool *oom) {
    int64_t k = t->dims[trans_b ? 1 : 0], n = t->dims[trans_b ? 0 : 1];
    if (t->flags & INF__TENSOR_GEMM_PANELS)
        return trans_b == ((t->flags & INF__TENSOR_GEMM_PANELS_T) != 0) ? t->data : NULL;
    for (int i = 0; w->log && i < w->log->n; i++) {
        const inf__prepack_entry *e = &w->log->items[i];
        if (e->b != t->data || e->trans_b != trans_b || e->k != k || e->n != n || e->ldb != t->dims[1] ||
            e->floats != inf__ops_sgemm_packed_floats(k, n))
            continue;
        size_t bytes = (size_t)e->floats * sizeof(float);
        float *again = inf__aligned_alloc(bytes);
        if (!again) {
            *oom = true;
            return NULL;
        }
        inf__ops_sgemm_pack_b(trans_b, k, n, t->data, t->dims[1], again);
        bool same = !memcmp(again, e->panels, bytes);
        inf__aligned_free(again);
        return same ? e->panels : NULL;
    }
    return NULL;
}

/* Writes constant t as its panels alone when its readers allow it (how:
 * mark_panel_readers) and the panels exist; false (nothing written) when
 * not.  The GRAPH entry is a plain constant's -- offset and byte size -- with
 * the offset of the panels, which are at least that long. */
static bool put_sole_tensor(writer *w, const inf_tensor *t, int8_t how) {
    if (!w->x86 || how <= 0 || t->kind != INF_KIND_TENSOR || t->dtype != INF_DTYPE_F32 || t->ndim != 2 || !t->data ||
        t->dims[0] <= 0 || t->dims[1] <= 0)
        return false;
    bool trans_b = how == 2, oom = false;
    const float *panels = panels_of(w, t, trans_b, &oom);
    if (oom) w->weights.oom = true;
    if (!panels || inf__array_reserve((void **)&w->sole, &w->cap_sole, w->n_sole + 1, sizeof *w->sole)) return false;
    int64_t k = t->dims[trans_b ? 1 : 0], n = t->dims[trans_b ? 0 : 1];
    sole *e = &w->sole[w->n_sole++];
    *e = (sole){0, trans_b, k, n, inf__ops_sgemm_packed_floats(k, n)};
    buf *b = &w->graph;
    put_u8(b, t->kind);
    put_i32(b, (int32_t)t->dtype);
    put_i32(b, t->ndim);
    for (int d = 0; d < t->ndim; d++)
        put_i64(b, t->dims[d]);
    pad_to(&w->weights, INF__BUNDLE_ALIGN);
    e->offset = w->weights.n;
    put_u64(b, e->offset);
    put_u64(b, inf_tensor_nbytes(t));
    put(&w->weights, panels, (size_t)e->floats * sizeof(float));
    return true;
}

static void put_graph(writer *w, const inf__graph *g);

static void put_attr(writer *w, const inf__attr *a) {
    buf *b = &w->graph;
    put_str(b, a->name);
    put_u8(b, (uint8_t)a->type);
    put_f32(b, a->f);
    put_i64(b, a->i);
    switch (a->type) {
    case INF_ATTR_STRING: put_strn(b, a->s ? a->s : "", a->s ? a->s_len : 0); break;
    case INF_ATTR_TENSOR: put_tensor(w, a->t); break;
    case INF_ATTR_GRAPH: put_graph(w, a->g); break;
    case INF_ATTR_FLOATS:
        put_u32(b, (uint32_t)a->n);
        for (int i = 0; i < a->n; i++) put_f32(b, a->floats[i]);
        break;
    case INF_ATTR_INTS:
        put_u32(b, (uint32_t)a->n);
        for (int i = 0; i < a->n; i++) put_i64(b, a->ints[i]);
        break;
    case INF_ATTR_STRINGS:
        put_u32(b, (uint32_t)a->n);
        for (int i = 0; i < a->n; i++) put_str(b, a->strings[i]);
        break;
    case INF_ATTR_TENSORS:
        put_u32(b, (uint32_t)a->n);
        for (int i = 0; i < a->n; i++) put_tensor(w, a->tensors[i]);
        break;
    case INF_ATTR_GRAPHS:
        put_u32(b, (uint32_t)a->n);
        for (int i = 0; i < a->n; i++) put_graph(w, a->graphs[i]);
        break;
    case INF_ATTR_TYPE_PROTO:
    case INF_ATTR_TYPE_PROTOS:
        put_u32(b, (uint32_t)a->n);
        for (int i = 0; i < a->n; i++) put_info(b, &a->type_protos[i]);
        break;
    default: break;
    }
}

static void put_node(writer *w, const inf__node *n) {
    buf *b = &w->graph;
    put_str(b, n->name);
    put_str(b, n->op_type);
    put_str(b, n->domain);
    put_i32(b, n->opset);
    put_ints(b, n->n_inputs, n->inputs);
    put_ints(b, n->n_outputs, n->outputs);
    put_ints(b, n->n_implicit, n->implicit);
    put_u8(b, (uint8_t)n->epilogue.kind);
    put_f32(b, n->epilogue.alpha);
    put_f32(b, n->epilogue.lo);
    put_f32(b, n->epilogue.hi);
    /* channels-last operands (graph/passes/channels_last.c) are an x86 kernel's choice: a bundle for another
     * architecture leaves every one out, which keeps the graph channels-first throughout */
    int n_attrs = 0;
    for (int a = 0; a < n->n_attrs; a++) n_attrs += w->x86 || strcmp(n->attrs[a].name, "channels_last") != 0;
    put_u32(b, (uint32_t)n_attrs);
    for (int a = 0; a < n->n_attrs; a++)
        if (w->x86 || strcmp(n->attrs[a].name, "channels_last") != 0) put_attr(w, &n->attrs[a]);
}

/* Marks what the graph (or one of its subgraphs, as an outer value) reads. */
static void mark_subgraph_reads(const inf__graph *sub, bool *read) {
    for (int v = 0; v < sub->n_values; v++)
        if (sub->values[v].role == INF_VALUE_OUTER && sub->values[v].outer >= 0) read[sub->values[v].outer] = true;
}

static void mark_reads(const inf__graph *g, bool *read) {
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] >= 0) read[g->outputs[i]] = true;
    for (int i = 0; i < g->n_inputs; i++) read[g->inputs[i]] = true;
    for (int n = 0; n < g->n_nodes; n++) {
        const inf__node *node = &g->nodes[n];
        for (int k = 0; k < node->n_inputs; k++)
            if (node->inputs[k] >= 0) read[node->inputs[k]] = true;
        for (int k = 0; k < node->n_implicit; k++) read[node->implicit[k]] = true;
        for (int a = 0; a < node->n_attrs; a++) {
            const inf__attr *at = &node->attrs[a];
            if (at->type == INF_ATTR_GRAPH && at->g) mark_subgraph_reads(at->g, read);
            for (int k = 0; at->type == INF_ATTR_GRAPHS && k < at->n; k++) mark_subgraph_reads(at->graphs[k], read);
        }
    }
}

static void put_graph(writer *w, const inf__graph *g) {
    buf *b = &w->graph;
    bool *read = inf__calloc((size_t)g->n_values + 1, sizeof *read);
    int8_t *how = inf__calloc((size_t)g->n_values + 1, sizeof *how);
    if (!read || !how) {
        inf__free(read);
        inf__free(how);
        b->oom = true;
        return;
    }
    mark_reads(g, read);
    mark_panel_readers(g, how);
    put_str(b, g->name);
    put_u32(b, (uint32_t)g->n_values);
    for (int i = 0; i < g->n_values; i++) {
        const inf__value *v = &g->values[i];
        bool keep = v->constant && read[i];
        /* an initializer nobody reads is written as a plain, unused value */
        inf__value_role role = v->role == INF_VALUE_INITIALIZER && !keep ? INF_VALUE_INTERMEDIATE : v->role;
        put_str(b, v->name);
        put_u8(b, (uint8_t)role);
        put_i32(b, v->outer);
        put_u8(b, (uint8_t)(v->has_info != 0));
        if (v->has_info) put_info(b, &v->info);
        put_u8(b, (uint8_t)keep);
        if (keep && !put_sole_tensor(w, v->constant, how[i])) put_tensor(w, v->constant);
    }
    inf__free(read);
    inf__free(how);
    put_ints(b, g->n_inputs, g->inputs);
    put_ints(b, g->n_outputs, g->outputs);
    put_u32(b, (uint32_t)g->n_nodes);
    for (int n = 0; n < g->n_nodes; n++) put_node(w, &g->nodes[n]);
}

static void put_meta(writer *w, const inf_model *m, const inf_bundle_write_options *o) {
    buf *b = &w->meta;
    put_str(b, m->producer_name);
    put_str(b, m->producer_version);
    put_str(b, m->doc_string);
    put_i64(b, m->ir_version);
    put_i64(b, m->model_version);
    put_u32(b, (uint32_t)m->n_opsets);
    for (int i = 0; i < m->n_opsets; i++) {
        put_str(b, m->opsets[i].domain);
        put_i64(b, m->opsets[i].version);
    }
    put_u32(b, (uint32_t)m->n_metadata);
    for (int i = 0; i < m->n_metadata; i++) {
        put_str(b, m->metadata_keys[i]);
        put_str(b, m->metadata_values[i]);
    }
    put_i32(b, m->n_nodes_written);
    put_u32(b, (uint32_t)m->n_op_types);
    for (int i = 0; i < m->n_op_types; i++) {
        put_str(b, m->op_types[i].domain);
        put_str(b, m->op_types[i].op_type);
        put_i32(b, m->op_types[i].count);
    }
    put_i32(b, o->max_batch > 0 ? o->max_batch : 1);
    static const uint8_t no_sha[32];
    put(b, o->source_sha256 ? o->source_sha256 : no_sha, 32);
    put_str(b, o->source_name);
    put_u64(b, m->file_bytes);
}

/* PREPACK = u32 n, n x (u64 b offset in WEIGHTS, u8 flags, i64 k, i64 n, i64 ldb,
 *                         u64 panels offset in WEIGHTS, i64 floats):
 * the GEMM panels the kernels packed from constant weights at the
 * compiling load (ops.h: inf__prepack_log), so a load uses them in place.
 * flags: INF__PP_TRANS_B (op(B) = B^T), INF__PP_SOLE (format.h: the
 * constant is stored as these panels alone -- put_sole_tensor -- so b offset
 * == panels offset; these come first).  Another entry is kept only when its
 * source lies in a written constant and packing that constant again gives
 * the same bytes (no stale entry of a constant the optimizer replaced). */
static void put_prepacked(writer *w, const inf__prepack_log *log) {
    buf *b = &w->prepack;
    int kept = 0;
    put_u32(b, 0); /* patched below */
    for (int i = 0; i < w->n_sole; i++, kept++) {
        const sole *e = &w->sole[i];
        put_u64(b, e->offset);
        put_u8(b, (uint8_t)(INF__PP_SOLE | (e->trans_b ? INF__PP_TRANS_B : 0)));
        put_i64(b, e->k);
        put_i64(b, e->n);
        put_i64(b, e->trans_b ? e->k : e->n);
        put_u64(b, e->offset);
        put_i64(b, e->floats);
    }
    for (int i = 0; log && i < log->n; i++) {
        const inf__prepack_entry *e = &log->items[i];
        const uint8_t *src = (const uint8_t *)e->b;
        const placed *at = NULL;
        for (int k = 0; k < w->n_placed && !at; k++)
            if (src >= w->placed[k].data && src < w->placed[k].data + w->placed[k].bytes) at = &w->placed[k];
        bool dup = false;
        for (int j = 0; j < i && !dup; j++) {
            const inf__prepack_entry *o = &log->items[j];
            dup = o->b == e->b && o->trans_b == e->trans_b && o->k == e->k && o->n == e->n && o->ldb == e->ldb;
        }
        if (!at || dup || e->floats <= 0) continue;
        size_t bytes = (size_t)e->floats * sizeof(float);
        float *again = inf__aligned_alloc(bytes);
        if (!again) {
            b->oom = true;
            return;
        }
        inf__ops_sgemm_pack_b(e->trans_b, e->k, e->n, e->b, e->ldb, again);
        bool same = !memcmp(again, e->panels, bytes);
        inf__aligned_free(again);
        if (!same) continue;
        pad_to(&w->weights, INF__BUNDLE_ALIGN);
        put_u64(b, at->offset + (uint64_t)(src - at->data));
        put_u8(b, e->trans_b ? INF__PP_TRANS_B : 0);
        put_i64(b, e->k);
        put_i64(b, e->n);
        put_i64(b, e->ldb);
        put_u64(b, w->weights.n);
        put_i64(b, e->floats);
        put(&w->weights, e->panels, bytes);
        kept++;
    }
    if (!b->oom) inf__wr_u32(b->p, (uint32_t)kept);
}

/* CONVPACK = u32 n, n x (u64 w offset in WEIGHTS, u32 variant, i64 m, i64 group,
 *                         i64 cg, i64 kdim, u64 packed offset in WEIGHTS, i64 floats):
 * convolution weights packed for their AVX2 variant at the compiling load
 * (ops.h: inf__convpack_entry), kept under the same rules as PREPACK. */
static void put_convpacked(writer *w, const inf__prepack_log *log) {
    buf *b = &w->convpack;
    int kept = 0;
    put_u32(b, 0); /* patched below */
    for (int i = 0; i < log->n_conv; i++) {
        const inf__convpack_entry *e = &log->conv[i];
        const uint8_t *src = (const uint8_t *)e->w;
        const placed *at = NULL;
        for (int k = 0; k < w->n_placed && !at; k++)
            if (src >= w->placed[k].data && src < w->placed[k].data + w->placed[k].bytes) at = &w->placed[k];
        bool dup = false;
        for (int j = 0; j < i && !dup; j++) {
            const inf__convpack_entry *o = &log->conv[j];
            dup = o->w == e->w && o->var == e->var && o->m == e->m && o->group == e->group && o->cg == e->cg &&
                  o->kdim == e->kdim;
        }
        const int64_t lim = INF__BUNDLE_CONVPACK_MAX_DIM;
        if (!at || dup || e->floats <= 0 || e->m >= lim || e->group >= lim || e->cg >= lim || e->kdim >= lim)
            continue;
        size_t bytes = (size_t)e->floats * sizeof(float);
        float *again = inf__aligned_alloc(bytes);
        if (!again) {
            b->oom = true;
            return;
        }
        inf__ops_conv_pack_again(e, again);
        bool same = !memcmp(again, e->packed, bytes);
        inf__aligned_free(again);
        if (!same) continue;
        pad_to(&w->weights, INF__BUNDLE_ALIGN);
        put_u64(b, at->offset + (uint64_t)(src - at->data));
        put_u32(b, (uint32_t)e->var);
        put_i64(b, e->m);
        put_i64(b, e->group);
        put_i64(b, e->cg);
        put_i64(b, e->kdim);
        put_u64(b, w->weights.n);
        put_i64(b, e->floats);
        put(&w->weights, e->packed, bytes);
        kept++;
    }
    if (!b->oom) inf__wr_u32(b->p, (uint32_t)kept);
}

typedef struct section {
    uint32_t kind;
    const buf *data;
} section;

static inf_status assemble(const section *secs, int n, inf_target target, void **out, size_t *size, inf_error *err) {
    uint64_t off = INF__BUNDLE_HEADER_BYTES + (uint64_t)n * INF__BUNDLE_SECTION_BYTES;
    uint64_t offsets[INF__BUNDLE_MAX_SECTIONS];
    for (int i = 0; i < n; i++) {
        off = (off + INF__BUNDLE_ALIGN - 1) & ~(uint64_t)(INF__BUNDLE_ALIGN - 1);
        offsets[i] = off;
        off += secs[i].data->n;
    }
    uint8_t *img = inf__aligned_alloc(off);
    if (!img) return inf_error_set(err, INF_ENOMEM, "bundle: out of memory assembling %llu bytes", (unsigned long long)off);
    memset(img, 0, off);
    memcpy(img + INF__BH_MAGIC, INF__BUNDLE_MAGIC, INF__BUNDLE_MAGIC_LEN);
    inf__wr_u32(img + INF__BH_VERSION, INF__BUNDLE_VERSION);
    inf__wr_u32(img + INF__BH_TARGET, (uint32_t)target);
    inf__wr_u64(img + INF__BH_FILE_SIZE, off);
    inf__wr_u32(img + INF__BH_N_SECTIONS, (uint32_t)n);
    for (int i = 0; i < n; i++) {
        uint8_t *e = img + INF__BUNDLE_HEADER_BYTES + (size_t)i * INF__BUNDLE_SECTION_BYTES;
        inf__wr_u32(e, secs[i].kind);
        inf__wr_u64(e + 8, offsets[i]);
        inf__wr_u64(e + 16, secs[i].data->n);
        if (secs[i].data->n) memcpy(img + offsets[i], secs[i].data->p, secs[i].data->n);
    }
    inf__wr_u32(img + INF__BH_BODY_CRC,
                inf__crc32c_striped(img + INF__BUNDLE_HEADER_BYTES, (size_t)off - INF__BUNDLE_HEADER_BYTES));
    inf__wr_u32(img + INF__BH_HEAD_CRC, inf__crc32c(0, img, INF__BH_HEAD_CRC));
    *out = img;
    *size = (size_t)off;
    return INF_OK;
}

inf_status inf_bundle_write(const inf_model *model, const inf_bundle_write_options *opts, void **out, size_t *size,
                            inf_error *err) {
    return inf__bundle_write_prepacked(model, opts, NULL, out, size, err);
}

inf_status inf__bundle_write_prepacked(const inf_model *model, const inf_bundle_write_options *opts,
                                       const inf__prepack_log *prepacked, void **out, size_t *size, inf_error *err) {
    inf_bundle_write_options dflt = {0};
    const inf_bundle_write_options *o = opts ? opts : &dflt;
    *out = NULL;
    *size = 0;
    inf_target target = o->target ? o->target : inf_target_host();
    if (!inf_target_name(target)) return inf_error_set(err, INF_EINVAL, "bundle: unknown target %d", (int)target);
    /* x86-64 panels only mean something to an x86-64 bundle */
    bool x86 = target == INF_TARGET_X86_64 || target == INF_TARGET_X86_64_AVX2;
    writer w = {.log = prepacked, .x86 = x86, .err = err};
    put_meta(&w, model, o);
    put_graph(&w, model->graph);
    if (x86 && ((prepacked && prepacked->n) || w.n_sole)) put_prepacked(&w, prepacked);
    if (prepacked && x86 && prepacked->n_conv) put_convpacked(&w, prepacked);
    buf pipeline = {(uint8_t *)o->pipeline, o->pipeline_len, o->pipeline_len, false};
    inf_status st = INF_OK;
    if (w.graph.oom || w.meta.oom || w.weights.oom || w.prepack.oom || w.convpack.oom) {
        st = inf_error_set(err, INF_ENOMEM, "bundle: out of memory serialising the model");
    } else {
        section secs[6] = {{INF__BS_META, &w.meta}, {INF__BS_GRAPH, &w.graph}, {INF__BS_WEIGHTS, &w.weights}};
        int n = 3;
        if (o->pipeline) secs[n++] = (section){INF__BS_PIPELINE, &pipeline};
        if (w.prepack.n) secs[n++] = (section){INF__BS_PREPACK, &w.prepack};
        if (w.convpack.n) secs[n++] = (section){INF__BS_CONVPACK, &w.convpack};
        st = assemble(secs, n, target, out, size, err);
    }
    inf__free(w.graph.p);
    inf__free(w.meta.p);
    inf__free(w.weights.p);
    inf__free(w.prepack.p);
    inf__free(w.convpack.p);
    inf__free(w.placed);
    inf__free(w.sole);
    return st;
}

void inf_bundle_buffer_free(void *data) { inf__aligned_free(data); }

/* ---- the kernels a model needs (for `infera compile --c-source`) ---- */

static int add_symbols(const inf__graph *g, const char **out, int n, int cap) {
    for (int i = 0; i < g->n_nodes; i++) {
        const inf__node *node = &g->nodes[i];
        if (node->op) {
            const char *sym = inf__op_impl_symbol[node->op - inf__op_table];
            int k = 0;
            while (k < n && strcmp(out[k], sym)) k++;
            if (k == n && n < cap) out[n++] = sym;
        }
        for (int a = 0; a < node->n_attrs; a++) {
            const inf__attr *at = &node->attrs[a];
            if (at->type == INF_ATTR_GRAPH && at->g) n = add_symbols(at->g, out, n, cap);
            for (int k = 0; at->type == INF_ATTR_GRAPHS && k < at->n; k++) n = add_symbols(at->graphs[k], out, n, cap);
        }
    }
    return n;
}

int inf__bundle_kernel_symbols(const inf_model *model, const char **out, int cap) {
    return add_symbols(model->graph, out, 0, cap);
}
