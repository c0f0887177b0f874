/*
 * test_session.c -- loading and running models through the public API:
 * the op table, model errors (corrupt, unknown op, cycles), input checks,
 * the example MLP against ONNX Runtime's output, the zero-allocation warm
 * run, and allocation-failure injection over load, compile and run.
 */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>

#include "core/cpu.h"
#include "infera/session.h"
#include "onnx/onnx.h"
#include "ops/ops.h"
#include "test.h"

/* ---- a tiny ModelProto builder (protobuf-c structs, packed to bytes) ---- */

typedef struct mini_model {
    uint8_t *bytes;
    size_t size;
} mini_model;

static Onnx__ValueInfoProto *value_info(const char *name, int elem_type, int ndim, const int64_t *dims) {
    Onnx__ValueInfoProto *vi = calloc(1, sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = (char *)name;
    Onnx__TypeProto *tp = calloc(1, sizeof *tp);
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = calloc(1, sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = elem_type;
    Onnx__TensorShapeProto *shape = calloc(1, sizeof *shape);
    onnx__tensor_shape_proto__init(shape);
    shape->n_dim = (size_t)ndim;
    shape->dim = calloc((size_t)ndim + 1, sizeof *shape->dim);
    for (int i = 0; i < ndim; i++) {
        shape->dim[i] = calloc(1, sizeof **shape->dim);
        onnx__tensor_shape_proto__dimension__init(shape->dim[i]);
        shape->dim[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        shape->dim[i]->dim_value = dims[i];
    }
    tt->shape = shape;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->type = tp;
    return vi;
}

static void value_info_free(Onnx__ValueInfoProto *vi) {
    Onnx__TensorShapeProto *shape = vi->type->tensor_type->shape;
    for (size_t i = 0; i < shape->n_dim; i++) free(shape->dim[i]);
    free(shape->dim);
    free(shape);
    free(vi->type->tensor_type);
    free(vi->type);
    free(vi);
}

/* A graph of one node per (op_type, input, output) triple, chained by name. */
static mini_model build_model(int n_nodes, const char *const *op_types, const char *const *node_in,
                              const char *const *node_out, const char *graph_in, const char *graph_out, int opset) {
    int64_t dims[2] = {2, 3};
    Onnx__NodeProto **nodes = calloc((size_t)n_nodes, sizeof *nodes);
    for (int i = 0; i < n_nodes; i++) {
        nodes[i] = calloc(1, sizeof **nodes);
        onnx__node_proto__init(nodes[i]);
        nodes[i]->op_type = (char *)op_types[i];
        nodes[i]->n_input = 1;
        nodes[i]->input = (char **)&node_in[i];
        nodes[i]->n_output = 1;
        nodes[i]->output = (char **)&node_out[i];
    }
    Onnx__ValueInfoProto *in = value_info(graph_in, 1, 2, dims), *out = value_info(graph_out, 1, 2, dims);
    Onnx__GraphProto graph;
    onnx__graph_proto__init(&graph);
    graph.name = "g";
    graph.n_node = (size_t)n_nodes;
    graph.node = nodes;
    graph.n_input = 1;
    graph.input = &in;
    graph.n_output = 1;
    graph.output = &out;
    Onnx__OperatorSetIdProto os;
    onnx__operator_set_id_proto__init(&os);
    os.domain = "";
    os.has_version = 1;
    os.version = opset;
    Onnx__OperatorSetIdProto *osp = &os;
    Onnx__ModelProto mp;
    onnx__model_proto__init(&mp);
    mp.has_ir_version = 1;
    mp.ir_version = 8;
    mp.n_opset_import = 1;
    mp.opset_import = &osp;
    mp.graph = &graph;
    mini_model m;
    m.size = onnx__model_proto__get_packed_size(&mp);
    m.bytes = malloc(m.size);
    onnx__model_proto__pack(&mp, m.bytes);
    for (int i = 0; i < n_nodes; i++) free(nodes[i]);
    free(nodes);
    value_info_free(in);
    value_info_free(out);
    return m;
}

static mini_model relu_model(void) {
    static const char *ops[] = {"Relu"}, *in[] = {"x"}, *out[] = {"y"};
    return build_model(1, ops, in, out, "x", "y", 13);
}

/* ---- the op table ---- */

TEST(ops_table_sorted_and_complete) {
    for (int i = 1; i < inf__op_count; i++) {
        const inf__op *a = &inf__op_table[i - 1], *b = &inf__op_table[i];
        if (a->domain > b->domain || (a->domain == b->domain && strcmp(a->name, b->name) >= 0))
            TEST_FAIL_AT("ops.def is not sorted at %s / %s", a->name, b->name);
    }
    for (int i = 0; i < inf__op_count; i++) {
        if (!inf__op_table[i].impl) TEST_FAIL_AT("operator %s has no kernel", inf__op_table[i].name);
        if (inf__op_find(inf__op_table[i].domain, inf__op_table[i].name) != &inf__op_table[i])
            TEST_FAIL_AT("lookup of %s fails", inf__op_table[i].name);
    }
    ASSERT_TRUE(inf__op_find(INF_DOMAIN_ONNX, "NoSuchOp") == NULL);
}

/* Every ops.def row of a model domain follows ONNX's schema history: its
 * range starts at a since-version and ends where the next schema version
 * starts (or at the domain's newest opset, or at the last version of a
 * deprecated op), so a range never splits a schema version. */
TEST(ops_schema_ranges) {
    for (int i = 1; i < inf__op_schema_count; i++) {
        const inf__op_schema *a = &inf__op_schemas[i - 1], *b = &inf__op_schemas[i];
        if (a->domain > b->domain || (a->domain == b->domain && strcmp(a->name, b->name) >= 0))
            TEST_FAIL_AT("schema_versions.def is not sorted at %s / %s", a->name, b->name);
    }
    for (int i = 0; i < inf__op_count; i++) {
        const inf__op *op = &inf__op_table[i];
        if (op->domain == INF_DOMAIN_INFERA || op->domain == INF_DOMAIN_MS) continue; /* no ONNX schema history */
        const inf__op_schema *s = inf__op_schema_find(op->domain, op->name);
        if (!s) TEST_FAIL_AT("%s is not in ONNX's schema history", op->name);
        if (inf__op_schema_effective(s, op->first_opset) != op->first_opset)
            TEST_FAIL_AT("%s starts at opset %d, not at a schema version", op->name, op->first_opset);
        int next = 0;
        for (int k = 0; k < INF_SCHEMA_MAX_VERSIONS && s->since[k] && !next; k++)
            if (s->since[k] > op->last_opset) next = s->since[k];
        bool ok = op->last_opset == inf__domain_max_opset(op->domain) || (next && next == op->last_opset + 1) ||
                  (!next && inf__op_schema_effective(s, op->last_opset) == op->last_opset);
        if (!ok) TEST_FAIL_AT("%s ends at opset %d, inside schema version %d", op->name, op->last_opset,
                              inf__op_schema_effective(s, op->last_opset));
        if (op->last_opset > inf__domain_max_opset(op->domain))
            TEST_FAIL_AT("%s goes past the domain's newest opset", op->name);
    }
    /* every operator ONNX defines up to the newest opsets Infera knows is implemented or listed as left out */
    static const struct {
        inf__domain domain;
        const char *name;
    } left_out[] = {
#define LEFT_OUT(domain, name, reason) {INF_DOMAIN_##domain, name},
#include "ops/left_out.def"
#undef LEFT_OUT
    };
    for (int i = 0; i < inf__op_schema_count; i++) {
        const inf__op_schema *s = &inf__op_schemas[i];
        if (s->since[0] > inf__domain_max_opset(s->domain) || inf__op_find(s->domain, s->name)) continue;
        bool listed = false;
        for (size_t k = 0; k < sizeof left_out / sizeof left_out[0]; k++)
            listed |= left_out[k].domain == s->domain && !strcmp(left_out[k].name, s->name);
        if (!listed) TEST_FAIL_AT("%s (since opset %d) is neither implemented nor in ops/left_out.def", s->name, s->since[0]);
    }
    /* ONNX Runtime's contrib ops: a model names the domain; version 1 only */
    ASSERT_EQ(inf__domain_from_string("com.microsoft"), (int)INF_DOMAIN_MS);
    ASSERT_EQ(inf__domain_from_string("ai.infera"), -1);
    ASSERT_TRUE(inf__op_find(INF_DOMAIN_MS, "QLinearAdd") != NULL && inf__op_find(INF_DOMAIN_MS, "QGemm") != NULL);
    ASSERT_EQ(inf__domain_max_opset(INF_DOMAIN_MS), 1);
    const inf__op_schema *add = inf__op_schema_find(INF_DOMAIN_ONNX, "Add");
    ASSERT_TRUE(add != NULL);
    ASSERT_EQ(inf__op_schema_effective(add, 26), 14);
    ASSERT_EQ(inf__op_schema_effective(add, 12), 7);
}

/* Every operator has its row of facts (ops/op_facts.c), in ops.def's order,
 * so inf__op_facts_of finds it by position; and the facts the graph layer
 * relies on hold for the operators it names. */
TEST(ops_facts_complete) {
    ASSERT_EQ(inf__op_facts_count, inf__op_count);
    for (int i = 0; i < inf__op_count && i < inf__op_facts_count; i++)
        if (inf__op_facts_table[i].domain != inf__op_table[i].domain ||
            strcmp(inf__op_facts_table[i].name, inf__op_table[i].name) != 0)
            TEST_FAIL_AT("op_facts.c row %d is %s, ops.def row %d is %s", i, inf__op_facts_table[i].name, i,
                         inf__op_table[i].name);
    ASSERT_EQ(inf__op_facts_of(inf__op_find(INF_DOMAIN_ONNX, "Add"))->inplace_inputs, 3u);
    ASSERT_EQ(inf__op_facts_of(inf__op_find(INF_DOMAIN_INFERA, "Gelu"))->inplace_inputs, 1u);
    /* sub-batch rules are facts too (graph/subbatch.c reads them): the input letters and the further check */
    const inf__op_facts *sm = inf__op_facts_of(inf__op_find(INF_DOMAIN_ONNX, "Softmax"));
    ASSERT_TRUE(sm->batch && !strcmp(sm->batch, "B") && sm->batch_check == INF_BATCH_SOFTMAX);
    ASSERT_TRUE(!strcmp(inf__op_facts_of(inf__op_find(INF_DOMAIN_ONNX, "Add"))->batch, "E"));
    ASSERT_TRUE(!inf__op_facts_of(inf__op_find(INF_DOMAIN_ONNX, "NonZero"))->batch); /* mixes rows */
    ASSERT_TRUE(!inf__op_facts_of(inf__op_find(INF_DOMAIN_ML, "TreeEnsembleClassifier"))->batch);
    for (int i = 0; i < inf__op_facts_count; i++) /* a check only with input letters, and a known one */
        if (inf__op_facts_table[i].batch_check != INF_BATCH_NONE &&
            (!inf__op_facts_table[i].batch || inf__op_facts_table[i].batch_check >= INF_BATCH_CHECK_COUNT))
            TEST_FAIL_AT("op_facts.c row %d (%s): batch_check without a batch rule", i, inf__op_facts_table[i].name);
    ASSERT_EQ(inf__op_facts_of(inf__op_find(INF_DOMAIN_ONNX, "Gelu"))->inplace_inputs, 0u);
    ASSERT_TRUE(inf__op_facts_of(inf__op_find(INF_DOMAIN_ONNX, "RandomNormal"))->nondeterministic);
    ASSERT_TRUE(inf__op_facts_of(inf__op_find(INF_DOMAIN_TRAINING, "Adam"))->nondeterministic);
    ASSERT_TRUE(inf__op_facts_of(inf__op_find(INF_DOMAIN_INFERA, "ConvAdd"))->takes_activation);
    ASSERT_TRUE(inf__op_facts_of(NULL)->shape == INF_SHAPE_OTHER);
}

/* ---- model errors ---- */

TEST(model_load_rejects_corrupt_bytes) {
    inf_model *m = NULL;
    inf_error err;
    static const uint8_t junk[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01};
    ASSERT_STATUS(inf_model_load_buffer(junk, sizeof junk, NULL, NULL, &m, &err), INF_EFORMAT);
    ASSERT_CONTAINS(err.message, "not a valid ONNX model");
    ASSERT_TRUE(m == NULL);
    mini_model mm = relu_model();
    for (size_t cut = 1; cut < mm.size; cut += 3) { /* every truncation fails cleanly or loads */
        inf_status st = inf_model_load_buffer(mm.bytes, cut, NULL, NULL, &m, &err);
        if (st == INF_OK) inf_model_free(m);
        m = NULL;
    }
    free(mm.bytes);
    ASSERT_STATUS(inf_model_load("/nonexistent/model.onnx", NULL, &m, &err), INF_ENOENT);
    ASSERT_CONTAINS(err.message, "/nonexistent/model.onnx");
}

TEST(model_load_names_unknown_op) {
    static const char *ops[] = {"FrobnicateTensor"}, *in[] = {"x"}, *out[] = {"y"};
    mini_model mm = build_model(1, ops, in, out, "x", "y", 13);
    inf_model *m = NULL;
    inf_error err;
    ASSERT_STATUS(inf_model_load_buffer(mm.bytes, mm.size, NULL, NULL, &m, &err), INF_EUNSUPPORTED);
    ASSERT_CONTAINS(err.message, "FrobnicateTensor");
    ASSERT_CONTAINS(err.message, "opset 13");
    ASSERT_CONTAINS(err.message, "FrobnicateTensor_0");
    free(mm.bytes);
}

TEST(model_load_sorts_nodes_and_rejects_cycles) {
    /* listed out of order: b = Relu(a) before a = Relu(x) */
    static const char *ops[] = {"Relu", "Relu"}, *in[] = {"a", "x"}, *out[] = {"y", "a"};
    mini_model mm = build_model(2, ops, in, out, "x", "y", 13);
    inf_model *m = NULL;
    inf_error err;
    ASSERT_OK(inf_model_load_buffer(mm.bytes, mm.size, NULL, NULL, &m, &err));
    inf_model_free(m);
    free(mm.bytes);
    static const char *cin[] = {"b", "a"}, *cout[] = {"a", "b"};
    mm = build_model(2, ops, cin, cout, "x", "b", 13);
    ASSERT_STATUS(inf_model_load_buffer(mm.bytes, mm.size, NULL, NULL, &m, &err), INF_EMODEL);
    ASSERT_CONTAINS(err.message, "cycle");
    free(mm.bytes);
    static const char *uin[] = {"nowhere"}, *uout[] = {"y"};
    mm = build_model(1, ops, uin, uout, "x", "y", 13);
    ASSERT_STATUS(inf_model_load_buffer(mm.bytes, mm.size, NULL, NULL, &m, &err), INF_EMODEL);
    ASSERT_CONTAINS(err.message, "nowhere");
    free(mm.bytes);
}

/* ---- running ---- */

TEST(session_checks_inputs) {
    mini_model mm = relu_model();
    inf_model *m;
    inf_session *s;
    inf_error err;
    ASSERT_OK(inf_model_load_buffer(mm.bytes, mm.size, NULL, NULL, &m, &err));
    ASSERT_OK(inf_session_new(m, NULL, &s, &err));
    float data[6] = {-1, 2, -3, 4, -5, 6};
    int64_t good[2] = {2, 3}, bad[2] = {3, 2};
    inf_tensor x;
    inf_tensor_init_view(&x, INF_DTYPE_F32, 2, good, data);
    const inf_tensor *in[1] = {&x};
    inf_tensor *const *out;
    ASSERT_OK(inf_session_run(s, in, &out, &err));
    ASSERT_NEAR(((float *)out[0]->data)[0], 0, 0);
    ASSERT_NEAR(((float *)out[0]->data)[5], 6, 0);
    inf_tensor_init_view(&x, INF_DTYPE_F32, 2, bad, data);
    ASSERT_STATUS(inf_session_run(s, in, &out, &err), INF_ESHAPE);
    ASSERT_CONTAINS(err.message, "input 'x': expected float32[2,3], got float32[3,2]");
    inf_tensor_init_view(&x, INF_DTYPE_F64, 2, good, data);
    ASSERT_STATUS(inf_session_run(s, in, &out, &err), INF_ETYPE);
    const inf_tensor *none[1] = {NULL};
    ASSERT_STATUS(inf_session_run(s, none, &out, &err), INF_EINVAL);
    ASSERT_CONTAINS(err.message, "missing");
    inf_session_free(s);
    inf_model_free(m);
    free(mm.bytes);
}

static inf_status load_example(const char *file, inf_model **m, inf_tensor **input, inf_tensor **ref, inf_error *err) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/models/%s.onnx", INFERA_SOURCE_DIR, file);
    inf_status st = inf_model_load(path, NULL, m, err);
    if (st != INF_OK) return st;
    snprintf(path, sizeof path, "%s/tests/models/%s_input.npy", INFERA_SOURCE_DIR, file);
    if ((st = inf_tensor_load_npy(path, input, err)) != INF_OK) return st;
    snprintf(path, sizeof path, "%s/tests/models/%s_logits.ort.npy", INFERA_SOURCE_DIR, file);
    return inf_tensor_load_npy(path, ref, err);
}

TEST(example_mlp_matches_onnxruntime) {
    inf_model *m;
    inf_tensor *x, *ref;
    inf_session *s;
    inf_error err;
    ASSERT_OK(load_example("mlp", &m, &x, &ref, &err));
    for (int threads = 1; threads <= 2; threads++) {
        inf_session_options o;
        inf_session_options_init(&o);
        o.n_threads = threads;
        ASSERT_OK(inf_session_new(m, &o, &s, &err));
        const inf_tensor *in[1] = {x};
        inf_tensor *const *out;
        ASSERT_OK(inf_session_run(s, in, &out, &err));
        ASSERT_EQ(inf_tensor_numel(out[0]), inf_tensor_numel(ref));
        for (int64_t i = 0; i < inf_tensor_numel(ref); i++) {
            double got = ((float *)out[0]->data)[i], want = ((float *)ref->data)[i];
            ASSERT_NEAR(got, want, 1e-5 + 1e-4 * fabs(want));
        }
        inf_session_free(s);
    }
    inf_tensor_free(x);
    inf_tensor_free(ref);
    inf_model_free(m);
}

TEST(warm_run_allocates_nothing) {
    inf_model *m;
    inf_tensor *x, *ref;
    inf_session *s;
    inf_error err;
    ASSERT_OK(load_example("mlp", &m, &x, &ref, &err));
    ASSERT_OK(inf_session_new(m, NULL, &s, &err));
    const inf_tensor *in[1] = {x};
    inf_tensor *const *out;
    for (int i = 0; i < 3; i++) ASSERT_OK(inf_session_run(s, in, &out, &err)); /* warm up */
    inf_alloc_stats before, after;
    inf_alloc_get_stats(&before);
    for (int i = 0; i < 200; i++) ASSERT_OK(inf_session_run(s, in, &out, &err));
    inf_alloc_get_stats(&after);
    ASSERT_EQ(after.n_allocs - before.n_allocs, 0);
    ASSERT_EQ(after.n_frees - before.n_frees, 0);
    inf_session_free(s);
    inf_tensor_free(x);
    inf_tensor_free(ref);
    inf_model_free(m);
}

/* Fails allocation N for N = 1, 2, ... until the whole path succeeds; every
 * failure must be reported (never crash, never succeed half-way). */
TEST(fault_injection_load_compile_run) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/models/mlp.onnx", INFERA_SOURCE_DIR);
    inf_tensor *x;
    inf_error err;
    snprintf(path, sizeof path, "%s/tests/models/mlp_input.npy", INFERA_SOURCE_DIR);
    ASSERT_OK(inf_tensor_load_npy(path, &x, &err));
    snprintf(path, sizeof path, "%s/tests/models/mlp.onnx", INFERA_SOURCE_DIR);
    int failures = 0;
    for (uint64_t n = 1; n < 100000; n++) {
        inf_model *m = NULL;
        inf_session *s = NULL;
        inf_alloc_fail_after(n);
        inf_status st = inf_model_load(path, NULL, &m, &err);
        if (st == INF_OK) st = inf_session_new(m, NULL, &s, &err);
        const inf_tensor *in[1] = {x};
        inf_tensor *const *out;
        if (st == INF_OK) st = inf_session_run(s, in, &out, &err);
        inf_alloc_fail_after(0);
        inf_session_free(s);
        inf_model_free(m);
        if (st == INF_OK) break;
        failures++;
        if (st != INF_ENOMEM) TEST_FAIL_AT("allocation %llu failed but the error was %s: %s", (unsigned long long)n, inf_status_name(st), err.message);
    }
    ASSERT_TRUE(failures > 10);
    inf_tensor_free(x);
}

TEST(outputs_never_borrow_caller_inputs) {
    static const char *ops[] = {"Identity"}, *in[] = {"x"}, *out[] = {"y"};
    mini_model mm = build_model(1, ops, in, out, "x", "y", 13);
    inf_model *m;
    inf_session *s;
    inf_error err;
    ASSERT_OK(inf_model_load_buffer(mm.bytes, mm.size, NULL, NULL, &m, &err));
    ASSERT_OK(inf_session_new(m, NULL, &s, &err));
    float data[6] = {1, 2, 3, 4, 5, 6};
    int64_t dims[2] = {2, 3};
    inf_tensor x;
    inf_tensor_init_view(&x, INF_DTYPE_F32, 2, dims, data);
    const inf_tensor *inputs[1] = {&x};
    inf_tensor *const *outs;
    ASSERT_OK(inf_session_run(s, inputs, &outs, &err));
    data[0] = 100; /* the caller reuses its buffer */
    ASSERT_NEAR(((float *)outs[0]->data)[0], 1, 0);
    ASSERT_TRUE(outs[0] != &x);
    inf_session_free(s);
    inf_model_free(m);
    free(mm.bytes);
}

/* Inputs the fuzzers once crashed or hung on (tests/fuzz/regressions): each
 * must load and run, or fail with an error.  Sessions cap subgraph runs as
 * the fuzzer does (model-loop-huge-trip-count.onnx asks for 2^47 Loop
 * iterations). */
TEST(fuzz_regressions_fail_cleanly) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/fuzz/regressions", INFERA_SOURCE_DIR);
    DIR *d = opendir(dir);
    ASSERT_TRUE(d != NULL);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        uint8_t buf[1 << 16];
        size_t size = fread(buf, 1, sizeof buf, f);
        fclose(f);
        inf_error err;
        inf_tensor *t = NULL;
        if (inf_tensor_decode_pb(buf, size, &t, &err) == INF_OK) inf_tensor_free(t);
        if (strstr(e->d_name, ".npy") && inf_tensor_load_npy(path, &t, &err) == INF_OK)
            inf_tensor_free(t);
        inf_model *m = NULL;
        if (inf_model_load_buffer(buf, size, NULL, NULL, &m, &err) == INF_OK) {
            inf_session *s = NULL;
            inf_session_options opts;
            inf_session_options_init(&opts);
            opts.max_subgraph_runs = 10000;
            if (inf_session_new(m, &opts, &s, &err) == INF_OK) {
                int64_t dims[INF_MAX_DIMS];
                inf_tensor *inputs[8] = {0};
                int ni = inf_model_n_inputs(m);
                for (int i = 0; i < ni && i < 8; i++) {
                    const inf_value_info *info = inf_model_input(m, i);
                    for (int k = 0; k < info->ndim; k++) dims[k] = info->dims[k] < 0 ? 1 : info->dims[k];
                    if (info->ndim >= 0 && info->dtype != INF_DTYPE_UNDEFINED)
                        inf_tensor_new(info->dtype, info->ndim, dims, &inputs[i]);
                }
                inf_tensor *const *out;
                if (ni <= 8) inf_session_run(s, (const inf_tensor *const *)inputs, &out, &err);
                for (int i = 0; i < 8; i++) inf_tensor_free(inputs[i]);
                inf_session_free(s);
            }
            inf_model_free(m);
        }
        n++;
    }
    closedir(d);
    ASSERT_TRUE(n >= 2);
}

/* options.max_subgraph_runs: profile_loop.onnx's Loop runs its body 4
 * times a run, so a limit of 4 passes and 3 fails with INF_ERANGE naming
 * the option; the count starts again at each run; the fuzzer's Loop of
 * 2^47 iterations stops at the limit instead of running for days. */
static inf_status run_loop_model(const char *file, int64_t limit, inf_error *err) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", INFERA_SOURCE_DIR, file);
    inf_model *m = NULL;
    inf_status st = inf_model_load(path, NULL, &m, err);
    if (st != INF_OK) return st;
    inf_session_options opts;
    inf_session_options_init(&opts);
    opts.max_subgraph_runs = limit;
    inf_session *s = NULL;
    if ((st = inf_session_new(m, &opts, &s, err)) == INF_OK) {
        int64_t dims[2] = {2, 3};
        inf_tensor *x = NULL;
        if ((st = inf_tensor_new(INF_DTYPE_F32, 2, dims, &x)) == INF_OK) {
            inf_tensor *const *out;
            for (int run = 0; run < 3 && st == INF_OK; run++) st = inf_session_run(s, (const inf_tensor *const *)&x, &out, err);
        }
        inf_tensor_free(x);
    }
    inf_session_free(s);
    inf_model_free(m);
    return st;
}

TEST(subgraph_run_limit_stops_long_loops) {
    inf_error err;
    ASSERT_EQ(run_loop_model("tests/models/profile_loop.onnx", 4, &err), INF_OK);
    ASSERT_EQ(run_loop_model("tests/models/profile_loop.onnx", 0, &err), INF_OK);
    ASSERT_EQ(run_loop_model("tests/models/profile_loop.onnx", 3, &err), INF_ERANGE);
    ASSERT_TRUE(strstr(err.message, "max_subgraph_runs") != NULL);
    ASSERT_EQ(run_loop_model("tests/fuzz/regressions/model-loop-huge-trip-count.onnx", 1000, &err), INF_ERANGE);
    ASSERT_TRUE(strstr(err.message, "limit of 1000") != NULL);
}

/* fold.onnx (tests/models/gen_fold_model.py): 11 nodes, of which only the
 * two reading x survive optimisation; results are equal either way. */
TEST(constant_folding_keeps_results) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/models/fold.onnx", INFERA_SOURCE_DIR);
    inf_model *plain, *optimized;
    inf_error err;
    inf_model_options no_opt = {.no_optimize = 1};
    ASSERT_OK(inf_model_load(path, &no_opt, &plain, &err));
    ASSERT_OK(inf_model_load(path, NULL, &optimized, &err));
    inf_model_summary a, b;
    inf_model_get_summary(plain, &a);
    inf_model_get_summary(optimized, &b);
    ASSERT_EQ(a.n_nodes_optimized, 11);
    ASSERT_EQ(b.n_nodes, 11);
    ASSERT_EQ(b.n_nodes_optimized, 2); /* Mul and Add */
    float data[6] = {1, 2, 3, 4, 5, 6};
    int64_t dims[2] = {2, 3};
    inf_tensor x;
    inf_tensor_init_view(&x, INF_DTYPE_F32, 2, dims, data);
    const inf_tensor *in[1] = {&x};
    inf_session *s1, *s2;
    inf_tensor *const *o1, *const *o2;
    ASSERT_OK(inf_session_new(plain, NULL, &s1, &err));
    ASSERT_OK(inf_session_new(optimized, NULL, &s2, &err));
    ASSERT_OK(inf_session_run(s1, in, &o1, &err));
    ASSERT_OK(inf_session_run(s2, in, &o2, &err));
    /* y = x * relu(-c) + sum(shape(c)) = x * relu(-c) + 5 */
    static const float want[6] = {5, 2 * 2 + 5, 5, 4 * 4 + 5, 5, 6 * 6 + 5};
    for (int i = 0; i < 6; i++) {
        ASSERT_NEAR(((float *)o1[0]->data)[i], want[i], 0);
        ASSERT_NEAR(((float *)o2[0]->data)[i], want[i], 0);
    }
    inf_session_free(s1);
    inf_session_free(s2);
    inf_model_free(plain);
    inf_model_free(optimized);
}

void test_fill_uniform(float *x, int n, uint64_t seed, double lo, double hi) {
    uint64_t r = seed;
    for (int i = 0; i < n; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        x[i] = (float)((double)(r >> 11) / 9007199254740992.0 * (hi - lo) + lo);
    }
}

void test_run_floats(const char *path, bool optimize, int threads, const inf_tensor *x, float *out, int n_out, int cap,
                     int *n_nodes) {
    inf_model *m;
    inf_error err;
    inf_model_options opt = {.no_optimize = !optimize};
    ASSERT_OK(inf_model_load(path, &opt, &m, &err));
    inf_model_summary sum;
    inf_model_get_summary(m, &sum);
    *n_nodes = sum.n_nodes_optimized;
    inf_session_options so = {.n_threads = threads};
    inf_session *s;
    ASSERT_OK(inf_session_new(m, &so, &s, &err));
    const inf_tensor *in[1] = {x};
    inf_tensor *const *o;
    ASSERT_OK(inf_session_run(s, in, &o, &err));
    ASSERT_EQ(inf_model_n_outputs(m), n_out);
    for (int k = 0; k < n_out; k++) {
        int64_t n = inf_tensor_numel(o[k]);
        ASSERT_TRUE(n <= cap && o[k]->dtype == INF_DTYPE_F32);
        memcpy(out + (size_t)k * cap, o[k]->data, (size_t)n * sizeof(float));
    }
    inf_session_free(s);
    inf_model_free(m);
}

void test_run_plain_and_fused(const char *path, const inf_tensor *x, float *plain, float *fused, int n_out, int cap,
                              int want_plain, int want_fused) {
    int n_plain = 0, n_fused = 0;
    memset(plain, 0, (size_t)n_out * (size_t)cap * sizeof(float));
    memset(fused, 0, (size_t)n_out * (size_t)cap * sizeof(float));
    test_run_floats(path, false, 1, x, plain, n_out, cap, &n_plain);
    test_run_floats(path, true, 1, x, fused, n_out, cap, &n_fused);
    ASSERT_EQ(n_plain, want_plain);
    ASSERT_EQ(n_fused, want_fused);
}

/* patterns.onnx (tests/models/gen_pattern_models.py): 3 LayerNorm chains
 * (one must stay: its variance is a graph output), 4 GELU chains (one
 * must stay: wrong constant), Pow(x, 2) and Pow(x, 3).  49 nodes become 22;
 * every output agrees with the unoptimised graph within 1e-5 relative
 * (|a - b| <= 1e-5 max(|b|, 1): LayerNorm outputs cross zero), on 1 and 2
 * threads, the fused results identical across thread counts. */
TEST(pattern_passes_fuse_and_keep_results) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/models/patterns.onnx", INFERA_SOURCE_DIR);
    enum { N_OUT = 10, CAP = 96 };
    static float data[96], plain[N_OUT * CAP], fused[N_OUT * CAP], fused2[N_OUT * CAP];
    test_fill_uniform(data, 96, 0x9E3779B97F4A7C15ull, -4.0, 4.0);
    data[5] = -9.0f, data[6] = 7.5f, data[7] = 0.0f; /* GELU's tails and zero */
    int64_t dims[3] = {2, 3, 16};
    inf_tensor x;
    inf_tensor_init_view(&x, INF_DTYPE_F32, 3, dims, data);
    test_run_plain_and_fused(path, &x, plain, fused, N_OUT, CAP, 49, 22);
    int n_fused = 0;
    for (int k = 0; k < N_OUT; k++) {
        int n = k == N_OUT - 1 ? 6 : 96; /* the last output is ln_c's variance [2,3,1] */
        for (int i = 0; i < n; i++) {
            float a = fused[k * CAP + i], b = plain[k * CAP + i];
            float tol = 1e-5f * (fabsf(b) > 1 ? fabsf(b) : 1);
            if (!(fabsf(a - b) <= tol)) TEST_FAIL_AT("output %d element %d: fused %.9g, plain %.9g", k, i, a, b);
        }
    }
    test_run_floats(path, true, 2, &x, fused2, N_OUT, CAP, &n_fused);
    ASSERT_TRUE(memcmp(fused, fused2, sizeof fused) == 0);
}

/* conv_add.onnx (tests/models/gen_conv_add_model.py): five Conv -> Add
 * residuals (same shape with Relu, Add of two Convs, a broadcast [4,1,1]
 * addend with Clip, the Conv as the Add's second operand with Relu, a
 * depthwise Conv) become ConvAdd; one whose Conv output is also a graph
 * output stays.  16 nodes become 8.  The fused results are bit-identical to
 * the unoptimised graph (each element is the Conv's value plus the addend,
 * one float add, as before), on 1 and 2 threads, and each image run alone
 * gives the bits it has inside the batch. */
TEST(conv_add_pass_fuses_residuals_bit_exactly) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/models/conv_add.onnx", INFERA_SOURCE_DIR);
    enum { N_OUT = 7, CAP = 336 };
    static float data[336], plain[N_OUT * CAP], fused[N_OUT * CAP], fused2[N_OUT * CAP], one[N_OUT * CAP];
    static const int numel[N_OUT] = {336, 144, 336, 336, 336, 336, 336};
    test_fill_uniform(data, 336, 0x2545F4914F6CDD1Dull, -2.0, 2.0);
    int64_t dims[4] = {2, 4, 6, 7};
    inf_tensor x;
    inf_tensor_init_view(&x, INF_DTYPE_F32, 4, dims, data);
    test_run_plain_and_fused(path, &x, plain, fused, N_OUT, CAP, 16, 8);
    int n_fused = 0;
    for (int k = 0; k < N_OUT; k++)
        for (int i = 0; i < numel[k]; i++) {
            float a = fused[k * CAP + i], b = plain[k * CAP + i];
            if (memcmp(&a, &b, sizeof a)) TEST_FAIL_AT("output %d element %d: fused %.9g, plain %.9g", k, i, a, b);
        }
    test_run_floats(path, true, 2, &x, fused2, N_OUT, CAP, &n_fused);
    ASSERT_TRUE(memcmp(fused, fused2, sizeof fused) == 0);
    dims[0] = 1; /* image 0 alone */
    inf_tensor_init_view(&x, INF_DTYPE_F32, 4, dims, data);
    test_run_floats(path, true, 2, &x, one, N_OUT, CAP, &n_fused);
    for (int k = 0; k < N_OUT; k++)
        ASSERT_TRUE(memcmp(one + k * CAP, fused + k * CAP, (size_t)numel[k] / 2 * sizeof(float)) == 0);
}

/* silu.onnx (tests/models/gen_silu_model.py): three Conv -> Sigmoid + Mul
 * (SiLU) chains -- a Conv, a depthwise Conv with the Mul's operands swapped,
 * a ConvAdd -- take the Conv's SiLU epilogue; three stay (the Conv's output
 * also a graph output, the Sigmoid's output a graph output, a Sigmoid gate
 * multiplying another value).  20 nodes become 13.  The fused results are
 * bit-identical to the unoptimised graph (the Sigmoid kernel's sigmoid, then
 * one float multiply), on 1, 2 and 3 threads, and image 1 run alone gives
 * the bits it has in the batch.  The fused y_a is also checked against
 * x / (1 + exp(-x)) in double of a_raw, the same Conv left unfused. */
TEST(silu_pass_fuses_conv_sigmoid_mul_bit_exactly) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/models/silu.onnx", INFERA_SOURCE_DIR);
    enum { N_OUT = 9, CAP = 336, IMG = 168 };
    static float data[336], plain[N_OUT * CAP], fused[N_OUT * CAP], other[N_OUT * CAP];
    test_fill_uniform(data, 336, 0xD1B54A32D192ED03ull, -3.0, 3.0);
    int64_t dims[4] = {2, 4, 6, 7};
    inf_tensor x;
    inf_tensor_init_view(&x, INF_DTYPE_F32, 4, dims, data);
    test_run_plain_and_fused(path, &x, plain, fused, N_OUT, CAP, 20, 13);
    for (int k = 0; k < N_OUT; k++)
        for (int i = 0; i < CAP; i++)
            if (memcmp(&fused[k * CAP + i], &plain[k * CAP + i], sizeof(float)))
                TEST_FAIL_AT("output %d element %d: fused %.9g, plain %.9g", k, i, fused[k * CAP + i],
                             plain[k * CAP + i]);
    for (int i = 0; i < CAP; i++) { /* y_a (output 0) against SiLU of a_raw (output 8) in double */
        double v = fused[8 * CAP + i], want = v / (1.0 + exp(-v));
        if (!(fabs(fused[i] - want) <= 1e-6 * fabs(want) + 1e-7))
            TEST_FAIL_AT("y_a element %d: %.9g, SiLU of a_raw %.9g", i, fused[i], want);
    }
    int n_fused = 0;
    for (int threads = 2; threads <= 3; threads++) {
        test_run_floats(path, true, threads, &x, other, N_OUT, CAP, &n_fused);
        ASSERT_TRUE(memcmp(fused, other, sizeof fused) == 0);
    }
    dims[0] = 1; /* image 1 alone */
    inf_tensor_init_view(&x, INF_DTYPE_F32, 4, dims, data + IMG);
    test_run_floats(path, true, 2, &x, other, N_OUT, CAP, &n_fused);
    for (int k = 0; k < N_OUT; k++)
        ASSERT_TRUE(memcmp(other + k * CAP, fused + k * CAP + IMG, IMG * sizeof(float)) == 0);
}

/* The optimiser tests' check on a batch of two images (x: 4-D dims at data, img floats an image): the optimised
 * graph's n_out outputs (numel[k] floats, cap apart) equal the unoptimised graph's bit for bit (want_plain and
 * want_fused nodes), on 2 and 3 threads too, and image 1 run alone gives its half of each. */
static void check_fused_batch_of_two(const char *path, int64_t *dims, const float *data, int img, int n_out, int cap,
                                     const int *numel, int want_plain, int want_fused, float *plain, float *fused,
                                     float *other) {
    size_t bytes = (size_t)n_out * (size_t)cap * sizeof(float);
    inf_tensor x;
    inf_tensor_init_view(&x, INF_DTYPE_F32, 4, dims, (void *)data);
    test_run_plain_and_fused(path, &x, plain, fused, n_out, cap, want_plain, want_fused);
    for (int k = 0; k < n_out; k++)
        for (int i = 0; i < numel[k]; i++)
            if (memcmp(&fused[k * cap + i], &plain[k * cap + i], sizeof(float)))
                TEST_FAIL_AT("output %d element %d: fused %.9g, plain %.9g", k, i, fused[k * cap + i],
                             plain[k * cap + i]);
    int n_fused = 0;
    for (int threads = 2; threads <= 3; threads++) {
        test_run_floats(path, true, threads, &x, other, n_out, cap, &n_fused);
        ASSERT_TRUE(memcmp(fused, other, bytes) == 0);
    }
    dims[0] = 1; /* image 1 alone */
    inf_tensor_init_view(&x, INF_DTYPE_F32, 4, dims, (void *)(data + img));
    test_run_floats(path, true, 2, &x, other, n_out, cap, &n_fused);
    for (int k = 0; k < n_out; k++)
        ASSERT_TRUE(memcmp(other + k * cap, fused + k * cap + numel[k] / 2, (size_t)numel[k] / 2 * sizeof(float)) == 0);
}

/* conv_pool.onnx (tests/models/gen_conv_pool_model.py): four Conv (+ Relu /
 * Clip) -> MaxPool chains become ConvMaxPool -- two on the rows kernel, which
 * pools in its store (2x2/2 and an overlapping 3x3/2 on a 33 x 70 input,
 * odd rows dropped by floor; several bands a task), one on the direct and
 * one on the pointwise kernel, which pool after the Conv; four stay (the
 * Conv's output also a graph output, a padded pool, a LeakyRelu, ceil mode).
 * 20 nodes become 12.  The fused results are bit-identical to the
 * unoptimised graph (max is exact, the activation comes before it) on 1, 2
 * and 3 threads, and image 1 run alone gives the bits it has in the batch.
 * ctest runs it again on the AVX2 and the generic paths (unit_conv_pool_*). */
TEST(conv_pool_pass_fuses_maxpool_bit_exactly) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/models/conv_pool.onnx", INFERA_SOURCE_DIR);
    enum { N_OUT = 9, CAP = 35840, IMG = 3 * 33 * 70 };
    static float data[2 * IMG], plain[N_OUT * CAP], fused[N_OUT * CAP], other[N_OUT * CAP];
    static const int numel[N_OUT] = {35840, 6528, 8704, 21080, 16864, 4080, 4352, 4080, 4352};
    test_fill_uniform(data, 2 * IMG, 0x9E3779B97F4A7C15ull, -2.0, 2.0);
    int64_t dims[4] = {2, 3, 33, 70};
    check_fused_batch_of_two(path, dims, data, IMG, N_OUT, CAP, numel, 20, 12, plain, fused, other);
}

/* channels_last.onnx (tests/models/gen_channels_last_model.py): a ResNet-style
 * graph whose insides the channels-last pass holds [n][h][w][c] -- a
 * ConvMaxPool stem (AVX-512: pooled in registers, stored channels-last),
 * Winograd Convs (stride 1 and 2), two ConvAdds (a channels-last residual), a
 * 1x1/2 shortcut as GEMM rows -- and values it must leave channels-first
 * (graph input and outputs, a 1x1 whose output a Sigmoid reads, so its input
 * too).  The optimised graph gives the unoptimised one's bits on 1, 2 and 3
 * threads (the kernels' channels-last stores do the same operations per
 * element; the 1x1 GEMM rows sum K = 32 in the direct kernel's order), image
 * 1 alone gives its bits in the batch, and each Conv carries the
 * channels_last bits the pass documents.  ctest runs it again on the AVX2
 * and generic paths (unit_channels_last_avx2, unit_channels_last_generic). */
TEST(channels_last_pass_keeps_results_bit_exactly) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/models/channels_last.onnx", INFERA_SOURCE_DIR);
    enum { N_OUT = 3, CAP = 2 * 24 * 12 * 13, IMG = 3 * 24 * 26 };
    static float data[2 * IMG], plain[N_OUT * CAP], fused[N_OUT * CAP], other[N_OUT * CAP];
    static const int numel[N_OUT] = {2 * 40 * 6 * 7, 2 * 24 * 12 * 13, 2 * 40}; /* y_f, y_h, y_g */
    test_fill_uniform(data, 2 * IMG, 0xA0761D6478BD642Full, -2.0, 2.0);
    int64_t dims[4] = {2, 3, 24, 26};
    check_fused_batch_of_two(path, dims, data, IMG, N_OUT, CAP, numel, 21, 11, plain, fused, other);
    /* the layouts, by the node's output name: with AVX2 the Winograd and 1x1 kernels take them, with AVX-512
     * also the stem's pooled store */
    if (!inf__cpu_has_avx2_fma()) return;
    bool wide = inf__cpu_has_avx512();
    const struct {
        const char *out;
        int bits;
    } want[] = {{"s", wide ? 2 : 0}, {"a", wide ? 3 : 2}, {"b", 7}, {"c", 3}, {"d", 3}, {"e", 7},
                {"y_f", 1},          {"k", wide ? 1 : 0}, {"h", 0}};
    inf_model *m;
    inf_error err;
    ASSERT_OK(inf_model_load(path, NULL, &m, &err));
    const inf__graph *g = m->graph;
    int found = 0;
    for (int n = 0; n < g->n_nodes; n++) {
        const inf__node *node = &g->nodes[n];
        const char *out = g->values[node->outputs[0]].name;
        int64_t bits = inf__attr_int(node, "channels_last", 0);
        for (int i = 0; i < (int)(sizeof want / sizeof want[0]); i++)
            if (!strcmp(out, want[i].out)) {
                found++;
                if (bits != want[i].bits)
                    TEST_FAIL_AT("%s: channels_last %lld, want %d", out, (long long)bits, want[i].bits);
            }
    }
    ASSERT_EQ(found, (int)(sizeof want / sizeof want[0]));
    inf_model_free(m);
}

/* Runs model `path` on x three times, then `runs` times more: those allocate nothing. */
static void warm_runs_allocate_nothing(const char *path, const inf_tensor *x, int threads, int runs) {
    inf_model *m;
    inf_session *s;
    inf_error err;
    ASSERT_OK(inf_model_load(path, NULL, &m, &err));
    inf_session_options so = {.n_threads = threads};
    ASSERT_OK(inf_session_new(m, &so, &s, &err));
    const inf_tensor *in[1] = {x};
    inf_tensor *const *out;
    for (int i = 0; i < 3; i++)
        ASSERT_OK(inf_session_run(s, in, &out, &err)); /* warm up */
    inf_alloc_stats before, after;
    inf_alloc_get_stats(&before);
    for (int i = 0; i < runs; i++)
        ASSERT_OK(inf_session_run(s, in, &out, &err));
    inf_alloc_get_stats(&after);
    ASSERT_EQ(after.n_allocs - before.n_allocs, 0);
    inf_session_free(s);
    inf_model_free(m);
}

/* A warm run of conv_pool.onnx allocates nothing: the pooled rows kernel's
 * band buffer is on its stack, the other ConvMaxPools' conv output in the
 * kernel's scratch. */
TEST(conv_pool_warm_run_allocates_nothing) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/models/conv_pool.onnx", INFERA_SOURCE_DIR);
    static float data[3 * 33 * 70];
    int64_t dims[4] = {1, 3, 33, 70};
    inf_tensor x;
    inf_tensor_init_view(&x, INF_DTYPE_F32, 4, dims, data);
    warm_runs_allocate_nothing(path, &x, 2, 10);
}

/* A warm run of conv_add.onnx allocates nothing, its broadcast ConvAdd (y_c)
 * included: the Conv's output before the broadcast Add lives in the
 * kernel's scratch, counted against the session's memory limit (it was a
 * heap tensor made and freed every run, outside the limit:
 * tests/fuzz/regressions/bundle-conv-add-broadcast.bundle ran 20 s). */
TEST(conv_add_broadcast_warm_run_allocates_nothing) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/models/conv_add.onnx", INFERA_SOURCE_DIR);
    static float data[336];
    int64_t dims[4] = {2, 4, 6, 7};
    inf_tensor x;
    inf_tensor_init_view(&x, INF_DTYPE_F32, 4, dims, data);
    warm_runs_allocate_nothing(path, &x, 1, 20);
}
