/*
 * cmd_compile.c -- `infera compile REF -o OUT [--target T] [--max-batch N]
 * [--c-source]`: loads and optimises a model (an ONNX/XGBoost file, a
 * registry version, or a bundle), and writes it as a bundle (bundle/write.c)
 * with its lineage (the source file's SHA-256) and its pipeline spec when it
 * has one (the registry version's, or <model>.pipeline.json beside a file).
 * With --c-source, OUT is a C file holding the bundle as a 64-byte aligned
 * array and one accessor, for programs that link libinfera_edge.a.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bundle/bundle_int.h"
#include "cli/cli.h"
#include "infera/bundle.h"
#include "infera/pipeline.h"
#include "infera/registry.h"

typedef struct compile_opts {
    const char *ref, *out;
    inf_target target;
    int max_batch;
    bool c_source;
} compile_opts;

/* What the bundle carries besides the model: lineage and the spec bytes. */
typedef struct source_facts {
    uint8_t sha256[32];
    bool has_sha;
    char *spec;       /* malloc'd or NULL */
    size_t spec_len;
    char name[4096];
} source_facts;

static bool file_digest(const char *path, uint8_t out[32]) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    inf_sha256 c;
    inf_sha256_init(&c);
    unsigned char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) inf_sha256_update(&c, buf, n);
    bool ok = !ferror(f);
    fclose(f);
    inf_sha256_final(&c, out);
    return ok;
}

static bool hex_digest(const char *hex, uint8_t out[32]) {
    for (int i = 0; i < 32; i++) {
        unsigned v;
        if (!isxdigit((unsigned char)hex[2 * i]) || !isxdigit((unsigned char)hex[2 * i + 1]) ||
            sscanf(hex + 2 * i, "%2x", &v) != 1)
            return false;
        out[i] = (uint8_t)v;
    }
    return true;
}

/* A file model's spec, as the runners find it: <model without .onnx>.pipeline.json. */
static void read_spec_beside(const char *ref, source_facts *sf) {
    char path[4200];
    size_t n = strlen(ref);
    if (n > 5 && !strcasecmp(ref + n - 5, ".onnx")) n -= 5;
    if ((size_t)snprintf(path, sizeof path, "%.*s.pipeline.json", (int)n, ref) >= sizeof path) return;
    void *data;
    size_t size;
    if (inf_file_read(path, "pipeline spec", INF_FILE_MAX_SPEC_BYTES, &data, &size, NULL)) return;
    sf->spec = malloc(size + 1);
    if (sf->spec) {
        memcpy(sf->spec, data, size);
        sf->spec[size] = 0;
        sf->spec_len = size;
    }
    inf_file_free(data);
}

static inf_status load_source(const char *ref, inf_model **model, source_facts *sf, inf_error *err) {
    if (inf_registry_ref_is_path(ref)) {
        inf_status st = inf_model_load(ref, NULL, model, err);
        if (st) return st;
        inf_bundle_info bi;
        if (inf_model_bundle_info(*model, &bi)) { /* recompiling a bundle keeps its lineage and spec */
            sf->has_sha = bi.source_sha256[0] && hex_digest(bi.source_sha256, sf->sha256);
            snprintf(sf->name, sizeof sf->name, "%s", bi.source_name ? bi.source_name : ref);
            if (bi.pipeline && (sf->spec = malloc(bi.pipeline_len + 1))) {
                memcpy(sf->spec, bi.pipeline, bi.pipeline_len);
                sf->spec[bi.pipeline_len] = 0;
                sf->spec_len = bi.pipeline_len;
            }
            return INF_OK;
        }
        sf->has_sha = file_digest(ref, sf->sha256);
        const char *base = strrchr(ref, '/');
        snprintf(sf->name, sizeof sf->name, "%s", base ? base + 1 : ref);
        read_spec_beside(ref, sf);
        return INF_OK;
    }
    inf_registry_options ro;
    inf_registry_options_from_env(&ro);
    inf_registry *r = NULL;
    inf_status st = inf_registry_open(&ro, &r, err);
    if (st) return st;
    inf_registry_resolved v;
    memset(&v, 0, sizeof v);
    st = inf_registry_load_model(r, ref, NULL, model, &v, err);
    if (!st) {
        sf->has_sha = hex_digest(v.sha256, sf->sha256);
        snprintf(sf->name, sizeof sf->name, "%s@%lld", v.name, (long long)v.version);
        if (v.pipeline && (sf->spec = strdup(v.pipeline))) sf->spec_len = strlen(v.pipeline);
    }
    inf_registry_resolved_clear(&v);
    inf_registry_free(r);
    return st;
}

/* The accessor's name: infera_bundle_<OUT's stem, [A-Za-z0-9_] only>. */
static void accessor_name(const char *out, char *name, size_t cap) {
    const char *base = strrchr(out, '/');
    base = base ? base + 1 : out;
    size_t n = strcspn(base, ".");
    int w = snprintf(name, cap, "infera_bundle_");
    for (size_t i = 0; i < n && (size_t)w + 1 < cap; i++)
        name[w++] = isalnum((unsigned char)base[i]) ? base[i] : '_';
    name[w] = 0;
}

/* The kernels the model runs, referenced strongly: a program linking the
 * static libinfera_edge.a gets exactly these (the op table's references are
 * weak, so an archive member nobody else names is left out). */
static void write_kernel_refs(FILE *f, const inf_model *model) {
    const char *syms[512];
    int n = inf__bundle_kernel_symbols(model, syms, 512);
    fprintf(f, "/* the kernels this model runs (declared by address only) */\n");
    for (int i = 0; i < n; i++) fprintf(f, "extern const char %s[];\n", syms[i]);
    fprintf(f, "static const void *const kernels[] = {\n");
    for (int i = 0; i < n; i++) fprintf(f, "    %s,\n", syms[i]);
    fprintf(f, "    0};\n\n");
}

static bool write_c_source(const char *path, const uint8_t *img, size_t size, const source_facts *sf,
                           const char *target, const inf_model *model) {
    FILE *f = fopen(path, "w");
    if (!f) return false;
    char fn[200];
    accessor_name(path, fn, sizeof fn);
    fprintf(f,
            "/* Generated by `infera compile --c-source` from %s: an Infera bundle (format in docs/edge.md),\n"
            " * target %s, %zu bytes.  Load it in place with\n"
            " *     size_t n; const void *b = %s(&n);\n"
            " *     inf_bundle_load_static(b, n, \"model\", &model, &err);   (or inf_session_new_in)\n"
            " * Do not edit: recompile the model instead. */\n"
            "#include <stddef.h>\n\n"
            "const void *%s(size_t *size);\n\n"
            "static const _Alignas(64) unsigned char bundle_data[%zu] = {\n",
            sf->name, target, size, fn, fn, size);
    for (size_t i = 0; i < size; i++) fprintf(f, "%s0x%02x,%s", i % 16 ? "" : "    ", img[i], i % 16 == 15 || i + 1 == size ? "\n" : "");
    fprintf(f, "};\n\n");
    write_kernel_refs(f, model);
    fprintf(f,
            "const void *%s(size_t *size) {\n"
            "    __asm__ volatile(\"\" : : \"r\"(kernels) : \"memory\"); /* keeps the kernel references linked */\n"
            "    *size = sizeof bundle_data;\n"
            "    return bundle_data;\n"
            "}\n",
            fn);
    bool ok = !ferror(f);
    return fclose(f) == 0 && ok;
}

static bool write_file(const char *path, const void *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(data, 1, size, f) == size;
    return fclose(f) == 0 && ok;
}

static int parse_args(int argc, char **argv, compile_opts *o) {
    const char *cmd = "compile";
    for (int i = 1; i < argc; i++) {
        bool missing = false;
        const char *v;
        if ((v = cli_flag_value(argc, argv, &i, "-o", &missing)) ||
            (v = cli_flag_value(argc, argv, &i, "--output", &missing))) {
            o->out = v;
        } else if ((v = cli_flag_value(argc, argv, &i, "--target", &missing))) {
            if (!(o->target = inf_target_from_name(v)))
                return cli_usage(cmd, "unknown target '%s' (x86_64, x86_64-avx2 or aarch64)", v);
        } else if ((v = cli_flag_value(argc, argv, &i, "--max-batch", &missing))) {
            if (!cli_parse_int(cmd, "--max-batch", v, 1, 1 << 20, &o->max_batch)) return 2;
        } else if (missing) {
            return cli_usage(cmd, "%s needs a value", argv[i]);
        } else if (!strcmp(argv[i], "--c-source")) {
            o->c_source = true;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage(cmd, "unknown option '%s'", argv[i]);
        } else if (!o->ref) {
            o->ref = argv[i];
        } else {
            return cli_usage(cmd, "unexpected argument '%s'", argv[i]);
        }
    }
    if (!o->ref || !o->out) return cli_usage(cmd, "usage: infera compile REF -o OUT [--target T] [--max-batch N] [--c-source]");
    return 0;
}

int cmd_compile(int argc, char **argv) {
    const char *cmd = "compile";
    compile_opts o = {0};
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc;
    if (!o.target) o.target = inf_target_host();
    if (!o.max_batch) o.max_batch = 1;
    source_facts sf;
    memset(&sf, 0, sizeof sf);
    inf_error err;
    inf_model *model = NULL;
    inf__prepack_log packed = {0}; /* the panels the kernels pack while the model loads go into the bundle */
    inf__ops_prepack_begin(&packed);
    inf_status lst = load_source(o.ref, &model, &sf, &err);
    inf__ops_prepack_end();
    if (lst) {
        free(sf.spec);
        inf__free(packed.items);
        inf__free(packed.conv);
        return cli_fail(cmd, "%s", err.message);
    }
    if (sf.spec) { /* the spec must fit the model before it is frozen into the bundle */
        inf_pipeline *p = NULL;
        inf_status st = inf_pipeline_load_string(sf.spec, sf.spec_len, model, NULL, &p, &err);
        inf_pipeline_free(p);
        if (st) {
            rc = cli_fail(cmd, "%s: its pipeline spec does not load: %s", o.ref, err.message);
            goto done;
        }
    }
    inf_bundle_write_options wo = {o.target, o.max_batch, sf.name, sf.has_sha ? sf.sha256 : NULL, sf.spec, sf.spec_len};
    void *img = NULL;
    size_t size = 0;
    if (inf__bundle_write_prepacked(model, &wo, packed.oom ? NULL : &packed, &img, &size, &err)) {
        rc = cli_fail(cmd, "%s: %s", o.ref, err.message);
        goto done;
    }
    bool ok = o.c_source ? write_c_source(o.out, img, size, &sf, inf_target_name(o.target), model) : write_file(o.out, img, size);
    int write_errno = errno;
    inf_bundle_buffer_free(img);
    if (!ok) {
        rc = cli_fail(cmd, "cannot write '%s': %s", o.out, strerror(write_errno));
        goto done;
    }
    inf_model_summary s;
    inf_model_get_summary(model, &s);
    printf("compiled %s -> %s%s (target %s, max batch %d, %zu bytes: %d nodes -> %d after optimisation, %lld "
           "parameters%s)\n",
           o.ref, o.out, o.c_source ? " (C source)" : "", inf_target_name(o.target), o.max_batch, size, s.n_nodes,
           s.n_nodes_optimized, (long long)s.n_parameters, sf.spec ? ", with pipeline spec" : "");
done:
    inf_model_free(model);
    inf__free(packed.items);
    inf__free(packed.conv);
    free(sf.spec);
    return rc;
}
