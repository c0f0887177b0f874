/*
 * model_write.c -- an ONNX ModelProto opened for editing and written back
 * (include/infera/model_write.h): the generic protobuf side of the
 * model-rewriting tools (src/tools/: quantize, prune, distill) -- the one
 * ONNX editor of the code base.
 *
 * Design: the model is unpacked with inf__protobuf_allocator, so every
 * buffer in it comes from inf__malloc.  Edits allocate the same way and
 * splice into the unpacked message in place (a replaced sub-message is freed
 * with protobuf-c's free_unpacked), so one free_unpacked releases the whole
 * edited model and packing it writes the edited graph.  No IR is involved:
 * what is not touched is written back byte for byte as it was read.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "infera/model_write.h"
#include "onnx/onnx.h"

struct inf_model_edit {
    Onnx__ModelProto *mp;
};

#define G(m) ((m)->mp->graph)

static inf_status nomem(inf_error *err, const char *what) {
    return inf_error_set(err, INF_ENOMEM, "model edit: out of memory %s", what);
}

/* Grows a repeated field (array of pointers) by one slot; 0 or -1. */
static int grow(void ***arr, size_t n) {
    void **a = inf__realloc(*arr, (n + 1) * sizeof *a);
    if (!a) return -1;
    *arr = a;
    return 0;
}

/* Reads every main-graph initializer stored as external data (base_dir: the model's folder; NULL refuses) into
 * the model, so that what is written back is one self-contained file. */
static inf_status inline_external_data(Onnx__ModelProto *mp, const char *base_dir, const char *what, inf_error *err) {
    for (size_t i = 0; i < mp->graph->n_initializer; i++) {
        Onnx__TensorProto *tp = mp->graph->initializer[i];
        if (!tp->n_external_data) continue;
        if (!base_dir)
            return inf_error_set(err, INF_EUNSUPPORTED,
                                 "%s: initializer '%s' is stored as external data, which a model read from memory "
                                 "cannot reach",
                                 what, tp->name ? tp->name : "");
        char where[512];
        snprintf(where, sizeof where, "%s: initializer '%s'", what, tp->name ? tp->name : "");
        inf_tensor *t;
        inf_status st = inf__onnx_tensor_from_proto(tp, base_dir, where, &t, err);
        if (st != INF_OK) return st;
        Onnx__TensorProto *inline_tp;
        st = inf__onnx_tensor_to_proto(t, tp->name ? tp->name : "", &inline_tp);
        inf_tensor_free(t);
        if (st != INF_OK) return nomem(err, "reading external data");
        onnx__tensor_proto__free_unpacked(tp, &inf__protobuf_allocator);
        mp->graph->initializer[i] = inline_tp;
    }
    return INF_OK;
}

static inf_status open_buffer(const void *data, size_t size, const char *what, const char *base_dir,
                              inf_model_edit **out, inf_error *err) {
    *out = NULL;
    /* protobuf-c recurses: the nesting check (and a precise message for a file
     * that is no ONNX model) before it sees the bytes, as the loader does */
    inf_status st = inf__onnx_wire_check_model(data, size, what, err);
    if (st)
        return st;
    Onnx__ModelProto *mp = onnx__model_proto__unpack(&inf__protobuf_allocator, size, data);
    if (!mp || !mp->graph) {
        if (mp) onnx__model_proto__free_unpacked(mp, &inf__protobuf_allocator);
        return inf_error_set(err, INF_EFORMAT, "%s: not an ONNX model with a graph", what);
    }
    st = inline_external_data(mp, base_dir, what, err);
    if (st != INF_OK) {
        onnx__model_proto__free_unpacked(mp, &inf__protobuf_allocator);
        return st;
    }
    inf_model_edit *m = inf__calloc(1, sizeof *m);
    if (!m) {
        onnx__model_proto__free_unpacked(mp, &inf__protobuf_allocator);
        return nomem(err, "opening a model");
    }
    m->mp = mp;
    *out = m;
    return INF_OK;
}

inf_status inf_model_edit_open_buffer(const void *data, size_t size, const char *what, inf_model_edit **out,
                                      inf_error *err) {
    return open_buffer(data, size, what, NULL, out, err);
}

inf_status inf_model_edit_open(const char *path, inf_model_edit **out, inf_error *err) {
    *out = NULL;
    uint8_t *data;
    size_t size;
    inf_status st = inf__read_file(path, &data, &size, err);
    if (st) return st;
    char *dir = inf__strdup(path);
    if (!dir) {
        inf__free(data);
        return nomem(err, "opening a model");
    }
    char *slash = strrchr(dir, '/');
    if (slash) slash[slash == dir] = 0; /* "/m.onnx" -> "/" */
    else strcpy(dir, ".");
    st = open_buffer(data, size, path, dir, out, err);
    inf__free(dir);
    inf__free(data);
    return st;
}

inf_status inf_model_edit_clone(const inf_model_edit *m, inf_model_edit **out, inf_error *err) {
    void *data;
    size_t size;
    inf_status st = inf_model_edit_serialize(m, &data, &size, err);
    if (st) return st;
    st = inf_model_edit_open_buffer(data, size, "model copy", out, err);
    inf__free(data);
    return st;
}

void inf_model_edit_clear_value_info(inf_model_edit *m) {
    Onnx__GraphProto *g = G(m);
    for (size_t i = 0; i < g->n_value_info; i++)
        onnx__value_info_proto__free_unpacked(g->value_info[i], &inf__protobuf_allocator);
    g->n_value_info = 0;
}

inf_status inf_model_edit_new(int64_t opset, const char *graph_name, inf_model_edit **out, inf_error *err) {
    *out = NULL;
    inf_model_edit *m = inf__calloc(1, sizeof *m);
    Onnx__ModelProto *mp = inf__calloc(1, sizeof *mp);
    Onnx__GraphProto *g = inf__calloc(1, sizeof *g);
    Onnx__OperatorSetIdProto *os = inf__calloc(1, sizeof *os);
    Onnx__OperatorSetIdProto **osa = inf__calloc(1, sizeof *osa);
    char *gname = inf__strdup(graph_name ? graph_name : "graph"), *prod = inf__strdup("infera"),
         *dom = inf__strdup("");
    if (!m || !mp || !g || !os || !osa || !gname || !prod || !dom) {
        inf__free(m), inf__free(mp), inf__free(g), inf__free(os), inf__free(osa), inf__free(gname), inf__free(prod);
        inf__free(dom);
        return nomem(err, "creating a model");
    }
    onnx__model_proto__init(mp);
    onnx__graph_proto__init(g);
    onnx__operator_set_id_proto__init(os);
    os->domain = dom;
    os->has_version = 1;
    os->version = opset;
    osa[0] = os;
    mp->has_ir_version = 1;
    mp->ir_version = 8;
    mp->n_opset_import = 1;
    mp->opset_import = osa;
    mp->producer_name = prod;
    g->name = gname;
    mp->graph = g;
    m->mp = mp;
    *out = m;
    return INF_OK;
}

void inf_model_edit_free(inf_model_edit *m) {
    if (!m) return;
    if (m->mp) onnx__model_proto__free_unpacked(m->mp, &inf__protobuf_allocator);
    inf__free(m);
}

inf_status inf_model_edit_serialize(const inf_model_edit *m, void **data, size_t *size, inf_error *err) {
    size_t n = onnx__model_proto__get_packed_size(m->mp);
    uint8_t *buf = inf__malloc(n ? n : 1);
    if (!buf) return nomem(err, "serialising the model");
    *size = onnx__model_proto__pack(m->mp, buf);
    *data = buf;
    return INF_OK;
}

void inf_model_edit_buffer_free(void *data) { inf__free(data); }

inf_status inf_model_edit_save(const inf_model_edit *m, const char *path, inf_error *err) {
    void *data;
    size_t size;
    inf_status st = inf_model_edit_serialize(m, &data, &size, err);
    if (st) return st;
    FILE *f = fopen(path, "wb");
    if (!f) {
        int e = errno;
        inf__free(data);
        return inf_error_set(err, INF_EIO, "cannot write %s: %s", path, strerror(e));
    }
    size_t wrote = fwrite(data, 1, size, f);
    int closed = fclose(f);
    inf__free(data);
    if (wrote != size || closed) return inf_error_set(err, INF_EIO, "cannot write %s (disk full?)", path);
    return INF_OK;
}

inf_status inf_model_edit_add_metadata(inf_model_edit *m, const char *key, const char *value, inf_error *err) {
    Onnx__StringStringEntryProto *e = inf__calloc(1, sizeof *e);
    if (!e) return nomem(err, "adding metadata");
    onnx__string_string_entry_proto__init(e);
    e->key = inf__strdup(key);
    e->value = inf__strdup(value);
    if (!e->key || !e->value || grow((void ***)&m->mp->metadata_props, m->mp->n_metadata_props)) {
        onnx__string_string_entry_proto__free_unpacked(e, &inf__protobuf_allocator);
        return nomem(err, "adding metadata");
    }
    m->mp->metadata_props[m->mp->n_metadata_props++] = e;
    return INF_OK;
}

inf_status inf_model_edit_set_metadata(inf_model_edit *m, const char *key, const char *value, inf_error *err) {
    Onnx__ModelProto *mp = m->mp;
    for (size_t i = 0; i < mp->n_metadata_props; i++)
        if (mp->metadata_props[i]->key && !strcmp(mp->metadata_props[i]->key, key)) {
            char *v = inf__strdup(value);
            if (!v) return nomem(err, "setting metadata");
            inf__free(mp->metadata_props[i]->value);
            mp->metadata_props[i]->value = v;
            return INF_OK;
        }
    return inf_model_edit_add_metadata(m, key, value, err);
}

static bool domain_is(const char *d, const char *want) {
    bool d_onnx = !d || !*d || !strcmp(d, "ai.onnx"), w_onnx = !want || !*want || !strcmp(want, "ai.onnx");
    return d_onnx || w_onnx ? d_onnx && w_onnx : !strcmp(d, want);
}

int64_t inf_model_edit_opset(const inf_model_edit *m, const char *domain) {
    for (size_t i = 0; i < m->mp->n_opset_import; i++)
        if (domain_is(m->mp->opset_import[i]->domain, domain)) return m->mp->opset_import[i]->version;
    return 0;
}

size_t inf_model_edit_weight_bytes(const inf_model_edit *m) {
    size_t total = 0;
    for (size_t i = 0; i < G(m)->n_initializer; i++) {
        const Onnx__TensorProto *t = G(m)->initializer[i];
        total += t->has_raw_data ? t->raw_data.len
                                 : t->n_float_data * 4 + t->n_int32_data * 4 + t->n_int64_data * 8 +
                                       t->n_double_data * 8 + t->n_uint64_data * 8;
    }
    return total;
}

/* ---- Nodes ---- */

static const char *or_empty(const char *s) { return s ? s : ""; }

void inf_model_edit_view_node(const inf_model_edit *m, int i, inf_model_edit_node_view *out) {
    const Onnx__NodeProto *n = G(m)->node[i];
    out->name = or_empty(n->name);
    out->op_type = or_empty(n->op_type);
    out->domain = or_empty(n->domain);
    out->n_inputs = (int)n->n_input;
    out->inputs = (const char *const *)n->input;
    out->n_outputs = (int)n->n_output;
    out->outputs = (const char *const *)n->output;
}

int inf_model_edit_n_nodes(const inf_model_edit *m) { return (int)G(m)->n_node; }
const char *inf_model_edit_node_op(const inf_model_edit *m, int i) { return or_empty(G(m)->node[i]->op_type); }
const char *inf_model_edit_node_domain(const inf_model_edit *m, int i) { return or_empty(G(m)->node[i]->domain); }
const char *inf_model_edit_node_name(const inf_model_edit *m, int i) { return or_empty(G(m)->node[i]->name); }
int inf_model_edit_node_n_inputs(const inf_model_edit *m, int i) { return (int)G(m)->node[i]->n_input; }
const char *inf_model_edit_node_input(const inf_model_edit *m, int i, int k) {
    return k < (int)G(m)->node[i]->n_input ? or_empty(G(m)->node[i]->input[k]) : "";
}
int inf_model_edit_node_n_outputs(const inf_model_edit *m, int i) { return (int)G(m)->node[i]->n_output; }
const char *inf_model_edit_node_output(const inf_model_edit *m, int i, int k) {
    return k < (int)G(m)->node[i]->n_output ? or_empty(G(m)->node[i]->output[k]) : "";
}

static const Onnx__AttributeProto *find_attr(const Onnx__NodeProto *n, const char *name) {
    for (size_t a = 0; a < n->n_attribute; a++)
        if (n->attribute[a]->name && !strcmp(n->attribute[a]->name, name)) return n->attribute[a];
    return NULL;
}

int64_t inf_model_edit_node_attr_int(const inf_model_edit *m, int i, const char *name, int64_t def) {
    const Onnx__AttributeProto *a = find_attr(G(m)->node[i], name);
    return a && a->has_i ? a->i : def;
}

double inf_model_edit_node_attr_float(const inf_model_edit *m, int i, const char *name, double def) {
    const Onnx__AttributeProto *a = find_attr(G(m)->node[i], name);
    return a && a->has_f ? a->f : def;
}

int inf_model_edit_node_has_subgraph(const inf_model_edit *m, int i) {
    const Onnx__NodeProto *n = G(m)->node[i];
    for (size_t a = 0; a < n->n_attribute; a++)
        if (n->attribute[a]->g || n->attribute[a]->n_graphs) return 1;
    return 0;
}

inf_status inf_model_edit_node_set_input(inf_model_edit *m, int i, int k, const char *value, inf_error *err) {
    Onnx__NodeProto *n = G(m)->node[i];
    char *s = inf__strdup(value ? value : "");
    if (!s) return nomem(err, "setting a node input");
    if (k < (int)n->n_input) {
        inf__free(n->input[k]);
        n->input[k] = s;
        return INF_OK;
    }
    if (k != (int)n->n_input || grow((void ***)&n->input, n->n_input)) {
        inf__free(s);
        return k != (int)n->n_input ? inf_error_set(err, INF_EINVAL, "model edit: input %d of node %d out of range", k, i)
                                    : nomem(err, "setting a node input");
    }
    n->input[n->n_input++] = s;
    return INF_OK;
}

void inf_model_edit_remove_node(inf_model_edit *m, int i) {
    Onnx__GraphProto *g = G(m);
    if (i < 0 || i >= (int)g->n_node) return;
    onnx__node_proto__free_unpacked(g->node[i], &inf__protobuf_allocator);
    memmove(&g->node[i], &g->node[i + 1], (g->n_node - (size_t)i - 1) * sizeof *g->node);
    g->n_node--;
}

static char **copy_strings(int n, const char *const *s) {
    char **a = inf__calloc((size_t)n + 1, sizeof *a);
    for (int i = 0; a && i < n; i++)
        if (!(a[i] = inf__strdup(s[i] ? s[i] : ""))) {
            for (int k = 0; k < i; k++) inf__free(a[k]);
            inf__free(a);
            return NULL;
        }
    return a;
}

static Onnx__AttributeProto *make_attr(const inf_model_edit_attr *arg) {
    Onnx__AttributeProto *a = inf__calloc(1, sizeof *a);
    if (!a) return NULL;
    onnx__attribute_proto__init(a);
    a->name = inf__strdup(arg->name);
    a->has_type = 1;
    if (arg->ints) {
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        a->ints = inf__calloc((size_t)arg->n_ints + 1, sizeof(int64_t));
        if (a->ints) memcpy(a->ints, arg->ints, (size_t)arg->n_ints * sizeof(int64_t)), a->n_ints = (size_t)arg->n_ints;
    } else if (arg->is_float) {
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, a->has_f = 1, a->f = (float)arg->f;
    } else {
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, a->has_i = 1, a->i = arg->i;
    }
    if (!a->name || (arg->ints && !a->ints)) {
        onnx__attribute_proto__free_unpacked(a, &inf__protobuf_allocator);
        return NULL;
    }
    return a;
}

/* Replaces node n's attributes by attrs; false when out of memory. */
static bool set_attrs(Onnx__NodeProto *n, int n_attrs, const inf_model_edit_attr *attrs) {
    for (size_t a = 0; a < n->n_attribute; a++)
        onnx__attribute_proto__free_unpacked(n->attribute[a], &inf__protobuf_allocator);
    inf__free(n->attribute);
    n->attribute = NULL, n->n_attribute = 0;
    if (!n_attrs) return true;
    if (!(n->attribute = inf__calloc((size_t)n_attrs, sizeof *n->attribute))) return false;
    for (int a = 0; a < n_attrs; a++) {
        if (!(n->attribute[a] = make_attr(&attrs[a]))) return false;
        n->n_attribute++;
    }
    return true;
}

static void free_strings(char **a, size_t n) {
    for (size_t i = 0; a && i < n; i++) inf__free(a[i]);
    inf__free(a);
}

/* Replaces node n's inputs and outputs by copies; false when out of memory (n unchanged). */
static bool set_io(Onnx__NodeProto *n, int n_inputs, const char *const *inputs, int n_outputs,
                   const char *const *outputs) {
    char **in = copy_strings(n_inputs, inputs), **out = copy_strings(n_outputs, outputs);
    if (!in || !out) {
        free_strings(in, (size_t)n_inputs);
        free_strings(out, (size_t)n_outputs);
        return false;
    }
    free_strings(n->input, n->n_input);
    free_strings(n->output, n->n_output);
    n->input = in, n->n_input = (size_t)n_inputs;
    n->output = out, n->n_output = (size_t)n_outputs;
    return true;
}

/* A new node at index `before`; the domain field is written as given, or
 * left out (the default domain) when domain is NULL. */
static inf_status add_node_at(inf_model_edit *m, int before, const char *op, const char *domain, const char *name,
                              int n_inputs, const char *const *inputs, int n_outputs, const char *const *outputs,
                              int n_attrs, const inf_model_edit_attr *attrs, inf_error *err) {
    Onnx__NodeProto *n = inf__calloc(1, sizeof *n);
    if (!n) return nomem(err, "adding a node");
    onnx__node_proto__init(n);
    n->op_type = inf__strdup(op);
    n->name = inf__strdup(name ? name : "");
    n->domain = domain ? inf__strdup(domain) : NULL;
    bool ok = n->op_type && n->name && (!domain || n->domain) && set_io(n, n_inputs, inputs, n_outputs, outputs) &&
              set_attrs(n, n_attrs, attrs);
    if (!ok || grow((void ***)&G(m)->node, G(m)->n_node)) {
        onnx__node_proto__free_unpacked(n, &inf__protobuf_allocator);
        return nomem(err, "adding a node");
    }
    Onnx__GraphProto *g = G(m);
    if (before < 0 || (size_t)before > g->n_node) before = (int)g->n_node;
    memmove(&g->node[before + 1], &g->node[before], (g->n_node - (size_t)before) * sizeof *g->node);
    g->node[before] = n;
    g->n_node++;
    return INF_OK;
}

inf_status inf_model_edit_insert_node(inf_model_edit *m, int before, const char *op, const char *domain,
                                      const char *name, int n_inputs, const char *const *inputs, int n_outputs,
                                      const char *const *outputs, int n_attrs, const inf_model_edit_attr *attrs,
                                      inf_error *err) {
    return add_node_at(m, before, op, domain && *domain ? domain : NULL, name, n_inputs, inputs, n_outputs, outputs,
                       n_attrs, attrs, err);
}

inf_status inf_model_edit_add_node(inf_model_edit *m, const char *op, const char *name, int n_inputs,
                                   const char *const *inputs, int n_outputs, const char *const *outputs,
                                   int n_attrs, const inf_model_edit_attr *attrs, inf_error *err) {
    return add_node_at(m, -1, op, "", name, n_inputs, inputs, n_outputs, outputs, n_attrs, attrs, err);
}

inf_status inf_model_edit_retype_node(inf_model_edit *m, int i, const char *op, int n_inputs,
                                      const char *const *inputs, int n_outputs, const char *const *outputs,
                                      int keep_attrs, int n_attrs, const inf_model_edit_attr *attrs,
                                      inf_error *err) {
    Onnx__NodeProto *n = G(m)->node[i];
    char *type = inf__strdup(op);
    if (!type || !set_io(n, n_inputs, inputs, n_outputs, outputs)) {
        inf__free(type);
        return nomem(err, "changing a node");
    }
    inf__free(n->op_type);
    n->op_type = type;
    if (!keep_attrs && !set_attrs(n, n_attrs, attrs)) return nomem(err, "changing a node");
    return INF_OK;
}

/* ---- Initializers ---- */

static int find_init(const inf_model_edit *m, const char *value) {
    for (size_t i = 0; i < G(m)->n_initializer; i++)
        if (G(m)->initializer[i]->name && !strcmp(G(m)->initializer[i]->name, value)) return (int)i;
    return -1;
}

int inf_model_edit_has_initializer(const inf_model_edit *m, const char *value) { return find_init(m, value) >= 0; }

inf_status inf_model_edit_get_initializer(const inf_model_edit *m, const char *value, inf_tensor **out,
                                          inf_error *err) {
    *out = NULL;
    int i = find_init(m, value);
    if (i < 0) return inf_error_set(err, INF_ENOENT, "model edit: '%s' is not an initializer", value);
    return inf__onnx_tensor_from_proto(G(m)->initializer[i], NULL, value, out, err);
}

inf_status inf_model_edit_set_initializer(inf_model_edit *m, const char *value, const inf_tensor *t, inf_error *err) {
    Onnx__TensorProto *tp;
    if (inf__onnx_tensor_to_proto(t, value, &tp) != INF_OK) return nomem(err, "storing an initializer");
    int i = find_init(m, value);
    if (i >= 0) {
        onnx__tensor_proto__free_unpacked(G(m)->initializer[i], &inf__protobuf_allocator);
        G(m)->initializer[i] = tp;
        return INF_OK;
    }
    if (grow((void ***)&G(m)->initializer, G(m)->n_initializer)) {
        inf__onnx_tensor_proto_free(tp);
        return nomem(err, "storing an initializer");
    }
    G(m)->initializer[G(m)->n_initializer++] = tp;
    return INF_OK;
}

int inf_model_edit_is_constant(const inf_model_edit *m, const char *value) {
    for (size_t i = 0; i < G(m)->n_input; i++)
        if (G(m)->input[i]->name && !strcmp(G(m)->input[i]->name, value)) return 0;
    return find_init(m, value) >= 0;
}

void inf_model_edit_drop_unused_initializer(inf_model_edit *m, const char *value) {
    Onnx__GraphProto *g = G(m);
    int k = find_init(m, value);
    if (k < 0 || inf_model_edit_is_output(m, value)) return;
    for (size_t n = 0; n < g->n_node; n++)
        for (size_t i = 0; i < g->node[n]->n_input; i++)
            if (g->node[n]->input[i] && !strcmp(g->node[n]->input[i], value)) return;
    for (size_t i = 0; i < g->n_input; i++) /* an overridable initializer stays declared */
        if (g->input[i]->name && !strcmp(g->input[i]->name, value)) return;
    onnx__tensor_proto__free_unpacked(g->initializer[k], &inf__protobuf_allocator);
    memmove(&g->initializer[k], &g->initializer[k + 1], (g->n_initializer - (size_t)k - 1) * sizeof *g->initializer);
    g->n_initializer--;
}

int inf_model_edit_bypass_constant_identities(inf_model_edit *m, inf_error *err) {
    Onnx__GraphProto *g = G(m);
    int has_subgraphs = 0, rewired = 0;
    for (size_t n = 0; n < g->n_node; n++) has_subgraphs |= inf_model_edit_node_has_subgraph(m, (int)n);
    for (size_t n = g->n_node; n-- > 0;) {
        Onnx__NodeProto *id = g->node[n];
        if (strcmp(id->op_type, "Identity") || (id->domain && id->domain[0]) || id->n_input != 1 || id->n_output != 1 ||
            !inf_model_edit_is_constant(m, id->input[0]) || inf_model_edit_is_output(m, id->output[0]))
            continue;
        const char *from = id->output[0], *to = id->input[0];
        for (size_t k = 0; k < g->n_node; k++)
            for (size_t i = 0; i < g->node[k]->n_input; i++)
                if (k != n && g->node[k]->input[i] && !strcmp(g->node[k]->input[i], from)) {
                    if (inf_model_edit_node_set_input(m, (int)k, (int)i, to, err) != INF_OK) return -1;
                    rewired++;
                }
        if (!has_subgraphs) inf_model_edit_remove_node(m, (int)n);
    }
    return rewired;
}

/* ---- Graph inputs and outputs ---- */

int inf_model_edit_is_output(const inf_model_edit *m, const char *value) {
    for (size_t i = 0; i < G(m)->n_output; i++)
        if (G(m)->output[i]->name && !strcmp(G(m)->output[i]->name, value)) return 1;
    return 0;
}

int inf_model_edit_n_outputs(const inf_model_edit *m) { return (int)G(m)->n_output; }
const char *inf_model_edit_output(const inf_model_edit *m, int i) { return or_empty(G(m)->output[i]->name); }
int inf_model_edit_n_inputs(const inf_model_edit *m) { return (int)G(m)->n_input; }
const char *inf_model_edit_input(const inf_model_edit *m, int i) { return or_empty(G(m)->input[i]->name); }

static Onnx__ValueInfoProto *make_value_info(const char *name, inf_dtype dtype, int ndim, const int64_t *dims,
                                             const char *const *dim_names) {
    Onnx__ValueInfoProto *v = inf__calloc(1, sizeof *v);
    Onnx__TypeProto *tp = inf__calloc(1, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = inf__calloc(1, sizeof *tt);
    if (!v || !tp || !tt) goto fail;
    onnx__value_info_proto__init(v);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    v->type = tp;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    tt = NULL;
    tp->tensor_type->has_elem_type = 1;
    tp->tensor_type->elem_type = (int32_t)dtype;
    if (!(v->name = inf__strdup(name))) goto fail_v;
    if (ndim >= 0) {
        Onnx__TensorShapeProto *sh = inf__calloc(1, sizeof *sh);
        if (!sh) goto fail_v;
        onnx__tensor_shape_proto__init(sh);
        tp->tensor_type->shape = sh;
        if (ndim && !(sh->dim = inf__calloc((size_t)ndim, sizeof *sh->dim))) goto fail_v;
        for (int d = 0; d < ndim; d++) {
            Onnx__TensorShapeProto__Dimension *dm = inf__calloc(1, sizeof *dm);
            if (!dm) goto fail_v;
            onnx__tensor_shape_proto__dimension__init(dm);
            sh->dim[sh->n_dim++] = dm;
            if (dims[d] >= 0) {
                dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                dm->dim_value = dims[d];
            } else if (dim_names && dim_names[d]) {
                if (!(dm->dim_param = inf__strdup(dim_names[d]))) goto fail_v;
                dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            }
        }
    }
    return v;
fail_v:
    onnx__value_info_proto__free_unpacked(v, &inf__protobuf_allocator);
    return NULL;
fail:
    inf__free(v), inf__free(tp), inf__free(tt);
    return NULL;
}

static inf_status add_value_info(Onnx__ValueInfoProto ***arr, size_t *n, const char *name, inf_dtype dtype, int ndim,
                                 const int64_t *dims, const char *const *dim_names, inf_error *err) {
    if (ndim > INF_MAX_DIMS) return inf_error_set(err, INF_EINVAL, "model edit: '%s' has too many dimensions", name);
    Onnx__ValueInfoProto *v = make_value_info(name, dtype, ndim, dims, dim_names);
    if (!v || grow((void ***)arr, *n)) {
        if (v) onnx__value_info_proto__free_unpacked(v, &inf__protobuf_allocator);
        return nomem(err, "declaring a graph input/output");
    }
    (*arr)[(*n)++] = v;
    return INF_OK;
}

inf_status inf_model_edit_add_input(inf_model_edit *m, const char *name, inf_dtype dtype, int ndim, const int64_t *dims,
                                    const char *const *dim_names, inf_error *err) {
    return add_value_info(&G(m)->input, &G(m)->n_input, name, dtype, ndim, dims, dim_names, err);
}

inf_status inf_model_edit_add_output(inf_model_edit *m, const char *name, inf_dtype dtype, int ndim,
                                     const int64_t *dims, const char *const *dim_names, inf_error *err) {
    return add_value_info(&G(m)->output, &G(m)->n_output, name, dtype, ndim, dims, dim_names, err);
}
