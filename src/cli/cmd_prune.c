/*
 * cmd_prune.c -- `infera prune IN -o OUT --sparsity S [--structured]
 * [--calibration SRC [--spec FILE] [--calibration-rows N]] [--threads N]`
 * (shared/DESIGN.md §4; the method is in src/tools/prune.c, the guide in
 * docs/compression.md).  IN is any model reference; its pipeline (or
 * --spec) maps the calibration records.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "infera/registry.h"
#include "runtime/model.h"
#include "tools/tools.h"

static const char *CMD = "prune";

int cmd_prune(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *spec = NULL, *sparsity = NULL;
    inf__prune_options o = {0};
    o.threads = 1;
    for (int i = 1; i < argc; i++) {
        bool missing = false;
        const char *v;
        if ((v = cli_flag_value(argc, argv, &i, "-o", &missing)) || (v = cli_flag_value(argc, argv, &i, "--output", &missing)))
            out = v;
        else if ((v = cli_flag_value(argc, argv, &i, "--sparsity", &missing))) sparsity = v;
        else if ((v = cli_flag_value(argc, argv, &i, "--calibration", &missing))) o.calibration = v;
        else if ((v = cli_flag_value(argc, argv, &i, "--spec", &missing))) spec = v;
        else if ((v = cli_flag_value(argc, argv, &i, "--calibration-rows", &missing))) {
            if (!cli_parse_int(CMD, "--calibration-rows", v, 1, 10000000, &o.calibration_rows)) return 2;
        } else if ((v = cli_flag_value(argc, argv, &i, "--threads", &missing))) {
            if (!cli_parse_int(CMD, "--threads", v, 1, 256, &o.threads)) return 2;
        } else if (!strcmp(argv[i], "--structured")) o.structured = 1;
        else if (missing) return cli_usage(CMD, "%s needs a value", argv[i]);
        else if (argv[i][0] == '-' && argv[i][1]) return cli_usage(CMD, "unknown option '%s' (see 'infera help prune')", argv[i]);
        else if (!in) in = argv[i];
        else return cli_usage(CMD, "unexpected argument '%s'", argv[i]);
    }
    if (!in || !out || !sparsity)
        return cli_usage(CMD,
                         "missing %s (usage: infera prune IN -o OUT --sparsity S [--structured] [--calibration SRC])",
                         !in    ? "IN, the model to prune"
                         : !out ? "-o OUT"
                                : "--sparsity S");
    char *end;
    o.sparsity = strtod(sparsity, &end);
    if (end == sparsity || *end || !(o.sparsity > 0 && o.sparsity < 1))
        return cli_usage(CMD, "--sparsity must be a fraction between 0 and 1 (got '%s')", sparsity);
    if (spec && !o.calibration) return cli_usage(CMD, "--spec maps calibration records: give --calibration SRC too");
    if (o.calibration && !o.structured) { /* not even opened: a model the default mapping cannot feed prunes too */
        fprintf(stderr, "infera prune: note: --calibration is used by --structured only (unstructured pruning is by magnitude)\n");
        o.calibration = NULL, spec = NULL;
    }
    size_t cl = o.calibration ? strlen(o.calibration) : 0;
    if (cl > 4 && !strchr(o.calibration, ':') &&
        (!strcmp(o.calibration + cl - 4, ".npy") || !strcmp(o.calibration + cl - 3, ".pb")))
        return cli_usage(CMD,
                         "--calibration '%s': prune refits from records (csv:, jsonl:, sqlite:, postgresql:), not a "
                         "tensor file",
                         o.calibration);

    /* the file to rewrite; with calibration data, also the pipeline that maps the records */
    inf__rt_model m;
    memset(&m, 0, sizeof m);
    inf_registry_resolved rv;
    memset(&rv, 0, sizeof rv);
    const char *path = in;
    inf_error e;
    if (o.calibration) {
        inf__rt_model_options mo = {0};
        mo.pipeline_path = spec;
        if (inf__rt_model_open(in, &mo, &m, &e)) return cli_fail(CMD, "model %s: %s", in, e.message);
        o.pipeline = m.pipeline;
        path = m.source;
    } else if (!inf_registry_ref_is_path(in)) {
        inf_registry_options ro;
        inf_registry_options_from_env(&ro);
        inf_registry *r = NULL;
        if (inf_registry_open(&ro, &r, &e) || inf_registry_resolve(r, in, &rv, &e)) {
            inf_registry_free(r);
            return cli_fail(CMD, "model %s: %s", in, e.message);
        }
        inf_registry_free(r);
        path = rv.artifact_path;
    }
    inf__prune_report rep;
    int rc = 0;
    if (inf__prune(path, out, &o, &rep, &e)) /* the message names the file when it is about one */
        rc = strstr(e.message, in) || strstr(e.message, out) ? cli_fail(CMD, "%s", e.message)
                                                             : cli_fail(CMD, "%s: %s", in, e.message);
    inf__rt_model_close(&m);
    inf_registry_resolved_clear(&rv);
    if (rc) return rc;
    printf("pruned     %s -> %s (%s, sparsity %.3g)\n", in, out, o.structured ? "structured" : "unstructured", o.sparsity);
    fputs(rep.detail, stdout);
    if (o.structured)
        printf("units      %d -> %d neurons/channels in %d hidden layer(s); %d refitted from %s\n", rep.neurons_before, rep.neurons_after,
               rep.n_layers, rep.compensated, o.calibration ? o.calibration : "(no calibration data)");
    else printf("weights    %d tensors; %lld weights are now zero\n", rep.n_layers, (long long)rep.zeros_after);
    printf("parameters %lld -> %lld (x%.2f)\n", (long long)rep.params_before, (long long)rep.params_after,
           rep.params_after ? (double)rep.params_before / rep.params_after : 0);
    return 0;
}
