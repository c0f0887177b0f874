/*
 * cmd_tokenize.c -- `infera tokenize REF --text TEXT [--json]`: the token ids of TEXT as `infera
 * generate` feeds them to the model (BOS/EOS as the GGUF file says, special tokens written in the
 * text recognised).  Plain output is the ids separated by spaces on one line; --json prints
 * {"tokens":[...]} (shared/DESIGN.md §4).
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "infera/tokenizer.h"
#include "registry/llm_ref.h"

static int print_tokens(const int32_t *ids, size_t n, bool json) {
    if (json) printf("{\"tokens\":[");
    for (size_t i = 0; i < n; i++) printf(json ? "%s%d" : "%s%d", i ? (json ? "," : " ") : "", (int)ids[i]);
    printf(json ? "]}\n" : "\n");
    return 0;
}

int cmd_tokenize(int argc, char **argv) {
    const char *ref = NULL, *text = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        bool missing = false;
        const char *v;
        if ((v = cli_flag_value(argc, argv, &i, "--text", &missing)) != NULL) text = v;
        else if (missing) return cli_usage("tokenize", "--text needs a value");
        else if (!strcmp(argv[i], "--json")) json = true;
        else if (argv[i][0] == '-' && argv[i][1] == '-') return cli_usage("tokenize", "unknown option '%s'", argv[i]);
        else if (!ref) ref = argv[i];
        else return cli_usage("tokenize", "unexpected argument '%s'", argv[i]);
    }
    if (!ref) return cli_usage("tokenize", "missing REF (a GGUF file or a registry reference)");
    if (!text) return cli_usage("tokenize", "missing --text TEXT");

    inf_error err = {0};
    inf_tokenizer *tok = NULL;
    static char path[4200]; /* NAME@ALIAS and other registry references name a registered GGUF file, as in generate */
    if (inf__llm_ref_resolve(ref, path, sizeof path, &err) != INF_OK) return cli_fail("tokenize", "%s", err.message);
    if (inf_tokenizer_load(path, &tok, &err) != INF_OK) return cli_fail("tokenize", "%s", err.message);
    size_t n = 0;
    int32_t *ids = NULL;
    inf_status st = inf_tokenizer_encode_alloc(tok, text, strlen(text), true, &ids, &n, &err);
    int rc = st == INF_OK ? print_tokens(ids, n, json) : cli_fail("tokenize", "%s: %s", ref, err.message);
    free(ids);
    inf_tokenizer_free(tok);
    return rc;
}
