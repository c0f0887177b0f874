/*
 * cmd_generate.c -- `infera generate REF --prompt TEXT [...]`: text from a
 * GGUF language model (shared/DESIGN.md §4).
 *
 * The prompt is tokenized as llama.cpp does (BOS as the file says, special
 * tokens written in the text recognised), the completion streams to stdout
 * token by token as it is made; with --json one object is printed instead:
 * {"text","tokens","prompt_tokens","completion_tokens","ttft_ms","tpot_ms",
 *  "tokens_per_s","draft":{"proposed","accepted","acceptance_rate"}|null}.
 * --draft REF adds speculative decoding with a smaller model of the same
 * vocabulary.  Generation stops at an end-of-generation token of the
 * tokenizer (EOS, EOT, end of turn), at --max-tokens, or when the context
 * is full.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "infera/llm.h"
#include "infera/tokenizer.h"
#include "registry/llm_ref.h"

#define CMD "generate"

typedef struct gen_opts {
    const char *ref, *prompt, *draft_ref;
    int max_tokens, top_k, draft_tokens, ctx, threads;
    float temperature, top_p;
    unsigned long long seed;
    bool json;
} gen_opts;

typedef struct out_state {
    const inf_tokenizer *tok;
    bool json;
    char *text; /* --json: the completion so far */
    size_t len, cap;
    int32_t *ids;
    size_t n_ids, cap_ids;
    bool oom;
    size_t n_printed; /* tokens streamed to stdout */
} out_state;

static int on_token(void *user, int32_t id) {
    out_state *o = user;
    if (!o->json) {
        char buf[256];
        size_t n = 0;
        inf_tokenizer_piece(o->tok, id, buf, sizeof buf, &n);
        fwrite(buf, 1, n < sizeof buf ? n : sizeof buf, stdout);
        fflush(stdout);
        o->n_printed++;
        return 0;
    }
    if (o->n_ids + 1 > o->cap_ids) {
        size_t cap_ids = (o->cap_ids + 1) * 2;
        int32_t *ids = realloc(o->ids, cap_ids * sizeof *ids);
        if (!ids) {
            o->oom = true;
            return 1;
        }
        o->ids = ids;
        o->cap_ids = cap_ids;
    }
    if (inf_tokenizer_append_piece(o->tok, id, &o->text, &o->len, &o->cap) == INF_ENOMEM) {
        o->oom = true;
        return 1;
    }
    o->ids[o->n_ids++] = id;
    return 0;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid. */
static int utf8_len(const unsigned char *s, size_t left) {
    int n = s[0] < 0x80 ? 1 : (s[0] >> 5) == 6 ? 2 : (s[0] >> 4) == 14 ? 3 : (s[0] >> 3) == 30 ? 4 : 0;
    if (n == 0 || (size_t)n > left || (n == 2 && s[0] < 0xc2)) return 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    return n;
}

/* A JSON string of len bytes; invalid UTF-8 becomes U+FFFD. */
static void json_text(const char *s, size_t len) {
    putchar('"');
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)s[i];
        int n = utf8_len((const unsigned char *)s + i, len - i);
        if (n == 0) {
            fputs("\\ufffd", stdout);
            i++;
        } else if (n > 1) {
            fwrite(s + i, 1, (size_t)n, stdout);
            i += (size_t)n;
        } else {
            if (c == '"' || c == '\\') printf("\\%c", c);
            else if (c == '\n') fputs("\\n", stdout);
            else if (c == '\t') fputs("\\t", stdout);
            else if (c < 0x20 || c == 0x7f) printf("\\u%04x", c);
            else putchar(c);
            i++;
        }
    }
    putchar('"');
}

static int parse(int argc, char **argv, gen_opts *o) {
    memset(o, 0, sizeof *o);
    o->max_tokens = 128, o->top_k = 40, o->top_p = 0.95f, o->draft_tokens = 4, o->threads = 1;
    for (int i = 1; i < argc; i++) {
        bool missing = false;
        const char *v;
        char *end;
#define FLAG(name) ((v = cli_flag_value(argc, argv, &i, name, &missing)) != NULL)
        if (FLAG("--prompt")) o->prompt = v;
        else if (FLAG("--draft")) o->draft_ref = v;
        else if (FLAG("--max-tokens")) { if (!cli_parse_int(CMD, "--max-tokens", v, 1, 1 << 24, &o->max_tokens)) return 2; }
        else if (FLAG("--top-k")) { if (!cli_parse_int(CMD, "--top-k", v, 0, 1 << 24, &o->top_k)) return 2; }
        else if (FLAG("--draft-tokens")) { if (!cli_parse_int(CMD, "--draft-tokens", v, 1, 64, &o->draft_tokens)) return 2; }
        else if (FLAG("--ctx")) { if (!cli_parse_int(CMD, "--ctx", v, 8, 1 << 22, &o->ctx)) return 2; }
        else if (FLAG("--threads")) { if (!cli_parse_int(CMD, "--threads", v, 1, 256, &o->threads)) return 2; }
        else if (FLAG("--temperature")) {
            o->temperature = strtof(v, &end);
            if (*end || !(o->temperature >= 0 && o->temperature <= 100))
                return cli_usage(CMD, "--temperature must be a number in [0, 100], got '%s'", v);
        } else if (FLAG("--top-p")) {
            o->top_p = strtof(v, &end);
            if (*end || !(o->top_p > 0 && o->top_p <= 1)) return cli_usage(CMD, "--top-p must be in (0, 1], got '%s'", v);
        } else if (FLAG("--seed")) {
            o->seed = strtoull(v, &end, 10);
            if (*end || !*v || *v == '-') return cli_usage(CMD, "--seed must be a non-negative integer, got '%s'", v);
        } else if (missing) return cli_usage(CMD, "%s needs a value", argv[i]);
        else if (!strcmp(argv[i], "--json")) o->json = true;
        else if (argv[i][0] == '-' && argv[i][1] == '-') return cli_usage(CMD, "unknown option '%s'", argv[i]);
        else if (!o->ref) o->ref = argv[i];
        else return cli_usage(CMD, "unexpected argument '%s'", argv[i]);
#undef FLAG
    }
    if (!o->ref) return cli_usage(CMD, "missing REF (a GGUF file)");
    if (!o->prompt) return cli_usage(CMD, "missing --prompt TEXT");
    return 0;
}

typedef struct loaded {
    inf_llm_model *model;
    inf_llm_context *ctx;
} loaded;

static int load(const char *ref, const gen_opts *o, int n_logits, loaded *l, inf_error *err) {
    struct stat sb;
    if (stat(ref, &sb) != 0)
        return inf_error_set(err, INF_ENOENT, "%s: no such file (generate takes a GGUF file)", ref), 1;
    if (inf_llm_model_load(ref, &l->model, err) != INF_OK) return 1;
    inf_llm_context_options co;
    inf_llm_context_options_init(&co);
    co.n_ctx = o->ctx;
    co.n_threads = o->threads;
    co.n_logits = n_logits;
    return inf_llm_context_new(l->model, &co, &l->ctx, err) != INF_OK;
}

int cmd_generate(int argc, char **argv) {
    gen_opts o;
    int rc = parse(argc, argv, &o);
    if (rc) return rc;
    inf_error err = {0};
    inf_tokenizer *tok = NULL;
    loaded t = {0}, d = {0};
    int32_t *prompt = NULL, *stops = NULL;
    out_state out = {0};
    rc = 1;
    /* NAME@ALIAS and other registry references name a registered GGUF file */
    static char ref_path[4200], draft_path[4200];
    if (inf__llm_ref_resolve(o.ref, ref_path, sizeof ref_path, &err) != INF_OK ||
        (o.draft_ref && inf__llm_ref_resolve(o.draft_ref, draft_path, sizeof draft_path, &err) != INF_OK)) {
        cli_fail(CMD, "%s", err.message);
        goto done;
    }
    o.ref = ref_path;
    if (o.draft_ref) o.draft_ref = draft_path;
    if (inf_tokenizer_load(o.ref, &tok, &err) != INF_OK) {
        cli_fail(CMD, "%s", err.message);
        goto done;
    }
    if (load(o.ref, &o, o.draft_tokens + 1, &t, &err) || (o.draft_ref && load(o.draft_ref, &o, 1, &d, &err))) {
        cli_fail(CMD, "%s", err.message);
        goto done;
    }
    if (inf_tokenizer_n_vocab(tok) != inf_llm_model_get_info(t.model)->n_vocab) {
        cli_fail(CMD, "%s: the tokenizer has %d tokens, the model's embedding %d", o.ref, inf_tokenizer_n_vocab(tok),
                 inf_llm_model_get_info(t.model)->n_vocab);
        goto done;
    }
    size_t n = 0;
    if (inf_tokenizer_encode_alloc(tok, o.prompt, strlen(o.prompt), true, &prompt, &n, &err) != INF_OK) {
        cli_fail(CMD, "%s: %s", o.ref, err.message);
        goto done;
    }
    if (n == 0) {
        cli_fail(CMD, "the prompt has no tokens");
        goto done;
    }
    /* the tokenizer's end-of-generation tokens stop generation */
    int n_vocab = inf_tokenizer_n_vocab(tok), n_stops = 0;
    if (!(stops = malloc((size_t)n_vocab * sizeof *stops))) {
        cli_fail(CMD, "out of memory");
        goto done;
    }
    for (int32_t id = 0; id < n_vocab; id++)
        if (inf_tokenizer_is_eog(tok, id)) stops[n_stops++] = id;
    inf_llm_generate_options go;
    inf_llm_generate_options_init(&go);
    go.max_tokens = o.max_tokens;
    go.sampling.temperature = o.temperature;
    go.sampling.top_k = o.top_k;
    go.sampling.top_p = o.top_p;
    go.sampling.seed = o.seed;
    go.draft_tokens = o.draft_tokens;
    go.stop_ids = stops;
    go.n_stop_ids = n_stops;
    out.tok = tok;
    out.json = o.json;
    inf_llm_generate_stats st;
    if (inf_llm_generate(t.ctx, d.ctx, prompt, (int)n, &go, on_token, &out, &st, &err) != INF_OK) {
        if (out.n_printed) putchar('\n');
        cli_fail(CMD, "%s", err.message);
        goto done;
    }
    if (out.oom) {
        cli_fail(CMD, "out of memory for the completion");
        goto done;
    }
    if (!o.json) {
        putchar('\n');
    } else {
        printf("{\"text\":");
        json_text(out.text ? out.text : "", out.len);
        printf(",\"tokens\":[");
        for (size_t i = 0; i < out.n_ids; i++) printf("%s%d", i ? "," : "", (int)out.ids[i]);
        printf("],\"prompt_tokens\":%d,\"completion_tokens\":%d,\"ttft_ms\":%.3f,\"tpot_ms\":%.3f,\"tokens_per_s\":%.3f,"
               "\"draft\":",
               st.prompt_tokens, st.completion_tokens, st.ttft_ms, st.tpot_ms, st.tokens_per_s);
        if (d.ctx)
            printf("{\"proposed\":%d,\"accepted\":%d,\"acceptance_rate\":%.4f}", st.draft_proposed, st.draft_accepted,
                   st.draft_proposed ? (double)st.draft_accepted / st.draft_proposed : 0.0);
        else
            printf("null");
        printf("}\n");
    }
    rc = 0;
done:
    free(prompt), free(stops), free(out.text), free(out.ids);
    inf_llm_context_free(t.ctx), inf_llm_context_free(d.ctx);
    inf_llm_model_free(t.model), inf_llm_model_free(d.model);
    inf_tokenizer_free(tok);
    return rc;
}
