/*
 * edit.c -- the ONNX model editor of edit.h: unpack a ModelProto, change it
 * in place, pack it again.
 *
 * DESIGN: the message is unpacked with inf__protobuf_allocator, and every
 * string, array and sub-message this file adds is allocated with inf__malloc
 * too, so onnx__model_proto__free_unpacked frees old and new parts alike.
 * Arrays grow by one element at a time (models have thousands of nodes at
 * most, and the tools edit each once).  Only the main graph is edited.
 */
#include <stdio.h>
#include <string.h>

#include "onnx/edit.h"
#include "onnx/onnx.h"

struct inf__onnx_edit {
    Onnx__ModelProto *mp;
    char *path;
};

static inf_status nomem(const inf__onnx_edit *ed, inf_error *err) {
    return inf_error_set(err, INF_ENOMEM, "out of memory editing '%s'", ed->path);
}

inf_status inf__onnx_edit_open(const char *path, inf__onnx_edit **out, inf_error *err) {
    *out = NULL;
    uint8_t *data;
    size_t size;
    inf_status st = inf__read_file(path, &data, &size, err);
    if (st != INF_OK) return st;
    inf__onnx_edit *ed = inf__calloc(1, sizeof *ed);
    if (!ed || !(ed->path = inf__strdup(path))) {
        inf__free(data);
        inf__free(ed);
        return inf_error_set(err, INF_ENOMEM, "out of memory reading '%s'", path);
    }
    ed->mp = onnx__model_proto__unpack(&inf__protobuf_allocator, size, data);
    inf__free(data);
    if (!ed->mp || !ed->mp->graph) {
        inf__onnx_edit_free(ed);
        return inf_error_set(err, INF_EFORMAT, "'%s' is not an ONNX model (protobuf decoding failed)", path);
    }
    const Onnx__GraphProto *g = ed->mp->graph;
    for (size_t i = 0; i < g->n_initializer; i++)
        if (g->initializer[i]->has_data_location && g->initializer[i]->data_location == 1) {
            inf__onnx_edit_free(ed);
            return inf_error_set(err, INF_EUNSUPPORTED, "'%s': initializer '%s' uses external data (not supported)",
                              path, g->initializer[i]->name ? g->initializer[i]->name : "");
        }
    *out = ed;
    return INF_OK;
}

void inf__onnx_edit_free(inf__onnx_edit *ed) {
    if (!ed) return;
    if (ed->mp) onnx__model_proto__free_unpacked(ed->mp, &inf__protobuf_allocator);
    inf__free(ed->path);
    inf__free(ed);
}

/* ---- reading ---- */

int inf__onnx_edit_n_nodes(const inf__onnx_edit *ed) { return (int)ed->mp->graph->n_node; }

static const char *str_or_empty(const char *s) { return s ? s : ""; }

void inf__onnx_edit_node(const inf__onnx_edit *ed, int i, inf__onnx_node_view *out) {
    const Onnx__NodeProto *n = ed->mp->graph->node[i];
    out->name = str_or_empty(n->name);
    out->op_type = str_or_empty(n->op_type);
    out->domain = str_or_empty(n->domain);
    out->n_inputs = (int)n->n_input;
    out->inputs = (const char *const *)n->input;
    out->n_outputs = (int)n->n_output;
    out->outputs = (const char *const *)n->output;
}

static const Onnx__AttributeProto *find_attr(const Onnx__NodeProto *n, const char *name) {
    for (size_t a = 0; a < n->n_attribute; a++)
        if (n->attribute[a]->name && !strcmp(n->attribute[a]->name, name)) return n->attribute[a];
    return NULL;
}

int64_t inf__onnx_edit_attr_int(const inf__onnx_edit *ed, int i, const char *name, int64_t dflt) {
    const Onnx__AttributeProto *a = find_attr(ed->mp->graph->node[i], name);
    return a && a->has_i ? a->i : dflt;
}

float inf__onnx_edit_attr_float(const inf__onnx_edit *ed, int i, const char *name, float dflt) {
    const Onnx__AttributeProto *a = find_attr(ed->mp->graph->node[i], name);
    return a && a->has_f ? a->f : dflt;
}

static bool domain_is(const char *d, const char *want) {
    bool d_onnx = !d || !*d || !strcmp(d, "ai.onnx"), w_onnx = !*want || !strcmp(want, "ai.onnx");
    return d_onnx || w_onnx ? d_onnx && w_onnx : !strcmp(d, want);
}

int64_t inf__onnx_edit_opset(const inf__onnx_edit *ed, const char *domain) {
    for (size_t i = 0; i < ed->mp->n_opset_import; i++)
        if (domain_is(ed->mp->opset_import[i]->domain, domain)) return ed->mp->opset_import[i]->version;
    return 0;
}

/* Grows a protobuf-c repeated pointer field by one slot; false when out of memory. */
static bool grow(void ***arr, size_t *n) {
    void **a = inf__realloc(*arr, (*n + 1) * sizeof *a);
    if (!a) return false;
    *arr = a;
    return true;
}

inf_status inf__onnx_edit_set_opset(inf__onnx_edit *ed, const char *domain, int64_t version, inf_error *err) {
    for (size_t i = 0; i < ed->mp->n_opset_import; i++)
        if (domain_is(ed->mp->opset_import[i]->domain, domain)) {
            if (ed->mp->opset_import[i]->version < version) ed->mp->opset_import[i]->version = version;
            return INF_OK;
        }
    Onnx__OperatorSetIdProto *op = inf__calloc(1, sizeof *op);
    if (!op || !grow((void ***)&ed->mp->opset_import, &ed->mp->n_opset_import)) {
        inf__free(op);
        return nomem(ed, err);
    }
    onnx__operator_set_id_proto__init(op);
    op->domain = inf__strdup(domain);
    op->has_version = 1, op->version = version;
    ed->mp->opset_import[ed->mp->n_opset_import++] = op;
    return op->domain ? INF_OK : nomem(ed, err);
}

int inf__onnx_edit_n_inputs(const inf__onnx_edit *ed) { return (int)ed->mp->graph->n_input; }

const char *inf__onnx_edit_input(const inf__onnx_edit *ed, int i) {
    return str_or_empty(ed->mp->graph->input[i]->name);
}

bool inf__onnx_edit_is_output(const inf__onnx_edit *ed, const char *name) {
    const Onnx__GraphProto *g = ed->mp->graph;
    for (size_t i = 0; i < g->n_output; i++)
        if (g->output[i]->name && !strcmp(g->output[i]->name, name)) return true;
    return false;
}

static int find_initializer(const inf__onnx_edit *ed, const char *name) {
    const Onnx__GraphProto *g = ed->mp->graph;
    for (size_t i = 0; i < g->n_initializer; i++)
        if (g->initializer[i]->name && !strcmp(g->initializer[i]->name, name)) return (int)i;
    return -1;
}

bool inf__onnx_edit_is_constant(const inf__onnx_edit *ed, const char *name) {
    const Onnx__GraphProto *g = ed->mp->graph;
    for (size_t i = 0; i < g->n_input; i++)
        if (g->input[i]->name && !strcmp(g->input[i]->name, name)) return false;
    return find_initializer(ed, name) >= 0;
}

inf_status inf__onnx_edit_get_initializer(const inf__onnx_edit *ed, const char *name, inf_tensor **out,
                                          inf_error *err) {
    *out = NULL;
    int k = find_initializer(ed, name);
    if (k < 0) return INF_OK;
    char what[256];
    snprintf(what, sizeof what, "'%s': initializer '%s'", ed->path, name);
    return inf__onnx_tensor_from_proto(ed->mp->graph->initializer[k], NULL, what, out, err);
}

inf_status inf__onnx_edit_set_initializer(inf__onnx_edit *ed, const char *name, const inf_tensor *t,
                                          inf_error *err) {
    Onnx__TensorProto *tp;
    if (inf__onnx_tensor_to_proto(t, name, &tp) != INF_OK) return nomem(ed, err);
    Onnx__GraphProto *g = ed->mp->graph;
    int k = find_initializer(ed, name);
    if (k >= 0) {
        onnx__tensor_proto__free_unpacked(g->initializer[k], &inf__protobuf_allocator);
        g->initializer[k] = tp;
        return INF_OK;
    }
    if (!grow((void ***)&g->initializer, &g->n_initializer)) {
        inf__onnx_tensor_proto_free(tp);
        return nomem(ed, err);
    }
    g->initializer[g->n_initializer++] = tp;
    return INF_OK;
}

void inf__onnx_edit_drop_unused_initializer(inf__onnx_edit *ed, const char *name) {
    Onnx__GraphProto *g = ed->mp->graph;
    int k = find_initializer(ed, name);
    if (k < 0 || inf__onnx_edit_is_output(ed, name)) return;
    for (size_t n = 0; n < g->n_node; n++)
        for (size_t i = 0; i < g->node[n]->n_input; i++)
            if (!strcmp(g->node[n]->input[i], name)) return;
    for (size_t i = 0; i < g->n_input; i++) /* an overridable initializer stays declared */
        if (g->input[i]->name && !strcmp(g->input[i]->name, name)) return;
    onnx__tensor_proto__free_unpacked(g->initializer[k], &inf__protobuf_allocator);
    memmove(&g->initializer[k], &g->initializer[k + 1], (g->n_initializer - (size_t)k - 1) * sizeof *g->initializer);
    g->n_initializer--;
}

size_t inf__onnx_edit_weight_bytes(const inf__onnx_edit *ed) {
    const Onnx__GraphProto *g = ed->mp->graph;
    size_t total = 0;
    for (size_t i = 0; i < g->n_initializer; i++) {
        const Onnx__TensorProto *t = g->initializer[i];
        total += t->has_raw_data ? t->raw_data.len
                                 : t->n_float_data * 4 + t->n_int32_data * 4 + t->n_int64_data * 8 +
                                       t->n_double_data * 8 + t->n_uint64_data * 8;
    }
    return total;
}

/* ---- writing nodes ---- */

static char **copy_names(int n, const char *const *names) {
    char **a = inf__calloc((size_t)n + 1, sizeof *a);
    if (!a) return NULL;
    for (int i = 0; i < n; i++)
        if (!(a[i] = inf__strdup(names[i] ? names[i] : ""))) {
            for (int j = 0; j < i; j++) inf__free(a[j]);
            inf__free(a);
            return NULL;
        }
    return a;
}

static Onnx__AttributeProto *make_attr(const inf__onnx_attr_arg *arg) {
    Onnx__AttributeProto *a = inf__calloc(1, sizeof *a);
    if (!a) return NULL;
    onnx__attribute_proto__init(a);
    a->name = inf__strdup(arg->name);
    a->has_type = 1;
    if (arg->kind == 'f') {
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, a->has_f = 1, a->f = arg->f;
    } else if (arg->kind == 'I') {
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        a->ints = inf__calloc((size_t)arg->n_ints + 1, sizeof(int64_t));
        if (a->ints) memcpy(a->ints, arg->ints, (size_t)arg->n_ints * sizeof(int64_t)), a->n_ints = (size_t)arg->n_ints;
    } else {
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, a->has_i = 1, a->i = arg->i;
    }
    if (!a->name || (arg->kind == 'I' && !a->ints)) {
        onnx__attribute_proto__free_unpacked(a, &inf__protobuf_allocator);
        return NULL;
    }
    return a;
}

static void free_attrs(Onnx__NodeProto *n) {
    for (size_t a = 0; a < n->n_attribute; a++)
        onnx__attribute_proto__free_unpacked(n->attribute[a], &inf__protobuf_allocator);
    inf__free(n->attribute);
    n->attribute = NULL, n->n_attribute = 0;
}

static bool set_attrs(Onnx__NodeProto *n, int n_attrs, const inf__onnx_attr_arg *attrs) {
    n->attribute = inf__calloc((size_t)n_attrs + 1, sizeof *n->attribute);
    if (!n->attribute) return false;
    for (int a = 0; a < n_attrs; a++) {
        if (!(n->attribute[a] = make_attr(&attrs[a]))) return false;
        n->n_attribute++;
    }
    return true;
}

static void free_names(char **a, size_t n) {
    for (size_t i = 0; i < n; i++) inf__free(a[i]);
    inf__free(a);
}

static bool set_io(Onnx__NodeProto *n, int n_inputs, const char *const *inputs, int n_outputs,
                   const char *const *outputs) {
    char **in = copy_names(n_inputs, inputs), **out = copy_names(n_outputs, outputs);
    if (!in || !out) {
        if (in) free_names(in, (size_t)n_inputs);
        if (out) free_names(out, (size_t)n_outputs);
        return false;
    }
    free_names(n->input, n->n_input);
    free_names(n->output, n->n_output);
    n->input = in, n->n_input = (size_t)n_inputs;
    n->output = out, n->n_output = (size_t)n_outputs;
    return true;
}

inf_status inf__onnx_edit_insert_node(inf__onnx_edit *ed, int before, const char *op_type, const char *domain,
                                      const char *name, int n_inputs, const char *const *inputs, int n_outputs,
                                      const char *const *outputs, int n_attrs, const inf__onnx_attr_arg *attrs,
                                      inf_error *err) {
    Onnx__GraphProto *g = ed->mp->graph;
    Onnx__NodeProto *n = inf__calloc(1, sizeof *n);
    if (!n) return nomem(ed, err);
    onnx__node_proto__init(n);
    n->op_type = inf__strdup(op_type);
    n->name = inf__strdup(name);
    n->domain = domain && *domain ? inf__strdup(domain) : NULL;
    bool ok = n->op_type && n->name && (!domain || !*domain || n->domain) &&
              set_io(n, n_inputs, inputs, n_outputs, outputs) && set_attrs(n, n_attrs, attrs) &&
              grow((void ***)&g->node, &g->n_node);
    if (!ok) {
        onnx__node_proto__free_unpacked(n, &inf__protobuf_allocator);
        return nomem(ed, err);
    }
    if (before < 0 || (size_t)before > g->n_node) before = (int)g->n_node;
    memmove(&g->node[before + 1], &g->node[before], (g->n_node - (size_t)before) * sizeof *g->node);
    g->node[before] = n;
    g->n_node++;
    return INF_OK;
}

inf_status inf__onnx_edit_retype_node(inf__onnx_edit *ed, int i, const char *op_type, int n_inputs,
                                      const char *const *inputs, int n_outputs, const char *const *outputs,
                                      bool keep_attrs, int n_attrs, const inf__onnx_attr_arg *attrs,
                                      inf_error *err) {
    Onnx__NodeProto *n = ed->mp->graph->node[i];
    char *type = inf__strdup(op_type);
    if (!type || !set_io(n, n_inputs, inputs, n_outputs, outputs)) {
        inf__free(type);
        return nomem(ed, err);
    }
    inf__free(n->op_type);
    n->op_type = type;
    if (!keep_attrs) {
        free_attrs(n);
        if (!set_attrs(n, n_attrs, attrs)) return nomem(ed, err);
    }
    return INF_OK;
}

inf_status inf__onnx_edit_set_node_input(inf__onnx_edit *ed, int i, int k, const char *name, inf_error *err) {
    Onnx__NodeProto *n = ed->mp->graph->node[i];
    char *s = inf__strdup(name);
    if (!s) return nomem(ed, err);
    inf__free(n->input[k]);
    n->input[k] = s;
    return INF_OK;
}

inf_status inf__onnx_edit_add_output(inf__onnx_edit *ed, const char *name, inf_error *err) {
    Onnx__GraphProto *g = ed->mp->graph;
    if (inf__onnx_edit_is_output(ed, name)) return INF_OK;
    Onnx__ValueInfoProto *vi = inf__calloc(1, sizeof *vi);
    Onnx__TypeProto *tp = inf__calloc(1, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = inf__calloc(1, sizeof *tt);
    if (!vi || !tp || !tt || !grow((void ***)&g->output, &g->n_output)) {
        inf__free(vi), inf__free(tp), inf__free(tt);
        return nomem(ed, err);
    }
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1, tt->elem_type = INF_DTYPE_F32;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->type = tp;
    vi->name = inf__strdup(name);
    g->output[g->n_output++] = vi;
    return vi->name ? INF_OK : nomem(ed, err);
}

inf_status inf__onnx_edit_set_metadata(inf__onnx_edit *ed, const char *key, const char *value, inf_error *err) {
    Onnx__ModelProto *mp = ed->mp;
    for (size_t i = 0; i < mp->n_metadata_props; i++)
        if (mp->metadata_props[i]->key && !strcmp(mp->metadata_props[i]->key, key)) {
            char *v = inf__strdup(value);
            if (!v) return nomem(ed, err);
            inf__free(mp->metadata_props[i]->value);
            mp->metadata_props[i]->value = v;
            return INF_OK;
        }
    Onnx__StringStringEntryProto *e = inf__calloc(1, sizeof *e);
    if (!e || !grow((void ***)&mp->metadata_props, &mp->n_metadata_props)) {
        inf__free(e);
        return nomem(ed, err);
    }
    onnx__string_string_entry_proto__init(e);
    e->key = inf__strdup(key);
    e->value = inf__strdup(value);
    mp->metadata_props[mp->n_metadata_props++] = e;
    return e->key && e->value ? INF_OK : nomem(ed, err);
}

/* ---- serialising ---- */

inf_status inf__onnx_edit_to_buffer(const inf__onnx_edit *ed, void **data, size_t *size, inf_error *err) {
    *size = onnx__model_proto__get_packed_size(ed->mp);
    *data = inf__malloc(*size ? *size : 1);
    if (!*data) return nomem(ed, err);
    onnx__model_proto__pack(ed->mp, *data);
    return INF_OK;
}

void inf__onnx_edit_buffer_free(void *data) { inf__free(data); }

inf_status inf__onnx_edit_save(const inf__onnx_edit *ed, const char *path, size_t *size, inf_error *err) {
    void *data;
    size_t n;
    inf_status st = inf__onnx_edit_to_buffer(ed, &data, &n, err);
    if (st != INF_OK) return st;
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(data, 1, n, f) == n;
    if (f && fclose(f) != 0) ok = false;
    inf__free(data);
    if (!ok) return inf_error_set(err, INF_EIO, "cannot write '%s'", path);
    if (size) *size = n;
    return INF_OK;
}
