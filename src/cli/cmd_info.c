/*
 * cmd_info.c -- `infera info REF [--json]`: what a model is (an ONNX model or
 * bundle here; a GGUF language model in info_gguf.c).
 */
#include <string.h>

#include "infera/bundle.h"
#include "cli/cli.h"
#include "cli/cpu_report.h"
#include "registry/llm_ref.h"

static const char *CMD = "info";

static void format_type(const inf_value_info *info, char *buf, size_t size) {
    size_t off = 0;
    const char *kind = info->kind == INF_KIND_SEQUENCE ? "seq(" : info->kind == INF_KIND_MAP ? "map(" : "";
    off += (size_t)snprintf(buf + off, size - off, "%s%s%s", info->is_optional ? "optional(" : "", kind,
                            inf_dtype_name(info->dtype));
    if (info->kind == INF_KIND_TENSOR && info->ndim >= 0) {
        off += (size_t)snprintf(buf + off, size - off, "[");
        for (int i = 0; i < info->ndim && off < size; i++) {
            if (info->dims[i] >= 0) off += (size_t)snprintf(buf + off, size - off, "%s%lld", i ? "," : "", (long long)info->dims[i]);
            else off += (size_t)snprintf(buf + off, size - off, "%s%s", i ? "," : "", info->dim_names[i] ? info->dim_names[i] : "?");
        }
        if (off < size) off += (size_t)snprintf(buf + off, size - off, "]");
    }
    if (off < size && *kind) off += (size_t)snprintf(buf + off, size - off, ")");
    if (off < size && info->is_optional) snprintf(buf + off, size - off, ")");
}

static void json_value_info(const inf_value_info *info) {
    printf("{\"name\":");
    cli_json_string(info->name);
    printf(",\"kind\":\"%s\",\"optional\":%s,\"dtype\":\"%s\",\"shape\":",
           info->kind == INF_KIND_SEQUENCE ? "sequence" : info->kind == INF_KIND_MAP ? "map" : "tensor",
           info->is_optional ? "true" : "false", inf_dtype_name(info->dtype));
    if (info->ndim < 0) {
        printf("null}");
        return;
    }
    printf("[");
    for (int i = 0; i < info->ndim; i++) {
        if (i) printf(",");
        if (info->dims[i] >= 0) printf("%lld", (long long)info->dims[i]);
        else if (info->dim_names[i]) cli_json_string(info->dim_names[i]);
        else printf("null");
    }
    printf("]}");
}

/* The optimised graph's ops, "Op" or "Op+Activation", with their counts in
 * first-seen order; returns how many distinct ones (at most cap). */
typedef struct op_count {
    char name[128];
    int count;
} op_count;

static int optimized_ops(const inf_model *m, int n_nodes, op_count *out, int cap) {
    int n = 0;
    for (int i = 0; i < n_nodes; i++) {
        const char *op, *act;
        char name[128];
        inf_model_optimized_node(m, i, &op, &act);
        snprintf(name, sizeof name, "%s%s%s", op ? op : "?", act ? "+" : "", act ? act : "");
        int k = 0;
        while (k < n && strcmp(out[k].name, name)) k++;
        if (k == n) {
            if (n == cap) continue;
            snprintf(out[n].name, sizeof out[n].name, "%s", name);
            out[n++].count = 0;
        }
        out[k].count++;
    }
    return n;
}

static void print_optimized_ops(const inf_model *m, const inf_model_summary *s, int json) {
    op_count ops[256];
    int n = optimized_ops(m, s->n_nodes_optimized, ops, 256);
    for (int i = 0; i < n; i++) {
        if (!json) {
            printf("  %-24s %d\n", ops[i].name, ops[i].count);
            continue;
        }
        printf(i ? "," : "");
        cli_json_string(ops[i].name);
        printf(":%d", ops[i].count);
    }
}

static void print_json(const inf_model *m, const inf_model_summary *s) {
    printf("{\"path\":");
    cli_json_string(s->path);
    printf(",\"producer\":");
    cli_json_string(s->producer_name);
    printf(",\"producer_version\":");
    cli_json_string(s->producer_version);
    printf(",\"ir_version\":%lld,\"opsets\":{", (long long)s->ir_version);
    for (int i = 0; i < s->n_opsets; i++) {
        printf(i ? "," : "");
        cli_json_string(*s->opsets[i].domain ? s->opsets[i].domain : "ai.onnx");
        printf(":%lld", (long long)s->opsets[i].version);
    }
    printf("},\"inputs\":[");
    for (int i = 0; i < inf_model_n_inputs(m); i++) {
        printf(i ? "," : "");
        json_value_info(inf_model_input(m, i));
    }
    printf("],\"outputs\":[");
    for (int i = 0; i < inf_model_n_outputs(m); i++) {
        printf(i ? "," : "");
        json_value_info(inf_model_output(m, i));
    }
    printf("],\"nodes\":%d,\"nodes_optimized\":%d,\"ops\":{", s->n_nodes, s->n_nodes_optimized);
    for (int i = 0; i < inf_model_n_op_types(m); i++) {
        const char *domain, *op;
        int count;
        inf_model_op_type(m, i, &domain, &op, &count);
        char key[256];
        snprintf(key, sizeof key, "%s%s%s", *domain ? domain : "", *domain ? "." : "", op);
        printf(i ? "," : "");
        cli_json_string(key);
        printf(":%d", count);
    }
    printf("},\"ops_optimized\":{");
    print_optimized_ops(m, s, 1);
    printf("},\"parameters\":%lld,\"parameter_bytes\":%llu,\"file_bytes\":%llu}\n", (long long)s->n_parameters,
           (unsigned long long)s->parameter_bytes, (unsigned long long)s->file_bytes);
}

static void print_text(const inf_model *m, const inf_model_summary *s) {
    char type[512];
    printf("model:      %s\n", s->path);
    if (*s->graph_name) printf("graph:      %s\n", s->graph_name);
    if (*s->producer_name) printf("producer:   %s %s\n", s->producer_name, s->producer_version);
    printf("ir_version: %lld\n", (long long)s->ir_version);
    printf("opsets:    ");
    for (int i = 0; i < s->n_opsets; i++)
        printf(" %s=%lld", *s->opsets[i].domain ? s->opsets[i].domain : "ai.onnx", (long long)s->opsets[i].version);
    printf("\ninputs:\n");
    for (int i = 0; i < inf_model_n_inputs(m); i++) {
        format_type(inf_model_input(m, i), type, sizeof type);
        printf("  %-24s %s\n", inf_model_input(m, i)->name, type);
    }
    printf("outputs:\n");
    for (int i = 0; i < inf_model_n_outputs(m); i++) {
        format_type(inf_model_output(m, i), type, sizeof type);
        printf("  %-24s %s\n", inf_model_output(m, i)->name, type);
    }
    printf("ops (%d nodes, %d after load-time optimisation):\n", s->n_nodes, s->n_nodes_optimized);
    for (int i = 0; i < inf_model_n_op_types(m); i++) {
        const char *domain, *op;
        int count;
        inf_model_op_type(m, i, &domain, &op, &count);
        printf("  %-24s %d\n", op, count);
    }
    printf("ops after optimisation (fused activations as Op+Activation):\n");
    print_optimized_ops(m, s, 0);
    printf("parameters: %lld (%.2f MiB)\n", (long long)s->n_parameters, (double)s->parameter_bytes / (1024.0 * 1024.0));
    printf("file size:  %llu bytes\n", (unsigned long long)s->file_bytes);
    inf_bundle_info bi; /* a compiled bundle (infera compile): what it was made for and from */
    if (inf_model_bundle_info(m, &bi))
        printf("bundle:     format %u, target %s, max batch %d, %d packed weight matrices (%d as panels only), %d "
               "packed convolution weights, pipeline spec %s\n"
               "source:     %s, sha256 %s\n",
               bi.format_version, inf_target_name(bi.target), bi.max_batch, bi.n_prepacked, bi.n_panels_only,
               bi.n_convpacked, bi.pipeline ? "yes" : "no", bi.source_name && *bi.source_name ? bi.source_name : "?",
               *bi.source_sha256 ? bi.source_sha256 : "?");
    for (int i = 0; i < inf_model_n_metadata(m); i++) {
        const char *k, *v;
        inf_model_metadata(m, i, &k, &v);
        printf("%s %s: %s\n", i ? "          " : "metadata:  ", k, v);
    }
}

int cmd_info(int argc, char **argv) {
    const char *ref = NULL;
    bool json = false, cpu = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = true;
        else if (!strcmp(argv[i], "--cpu")) cpu = true;
        else if (argv[i][0] == '-' && argv[i][1]) return cli_usage(CMD, "unknown option '%s'", argv[i]);
        else if (!ref) ref = argv[i];
        else return cli_usage(CMD, "unexpected argument '%s'", argv[i]);
    }
    if (cpu) { /* the machine, not a model (cpu_report.c) */
        if (ref) return cli_usage(CMD, "--cpu takes no model (usage: infera info --cpu [--json])");
        if (json) cli_cpu_print_json(), printf("\n");
        else cli_cpu_print_text();
        return 0;
    }
    if (!ref) return cli_usage(CMD, "missing model (usage: infera info REF)");
    char gguf_path[4200];
    if (inf__llm_ref_names_gguf(ref, gguf_path, sizeof gguf_path)) return cli_info_gguf(gguf_path, ref, json);
    inf_error err;
    inf_model *m;
    if (cli_load_model(ref, &m, &err) != INF_OK) return cli_fail(CMD, "%s", err.message);
    inf_model_summary s;
    inf_model_get_summary(m, &s);
    if (!strcmp(s.path, "<memory>")) s.path = ref; /* a registry model is loaded from its artifact's bytes */
    if (json) print_json(m, &s);
    else print_text(m, &s);
    inf_model_free(m);
    return 0;
}
