/*
 * info_gguf.c -- `infera info REF` for a GGUF language model (REF a .gguf file
 * or a registry version whose artifact is one): architecture, sizes,
 * vocabulary and special tokens, weight type, parameters and the bytes one
 * decode step reads.  JSON keys are the registry signature's (kind,
 * architecture, name, context_length, vocab_size, weight_type, n_embd,
 * n_layer, n_head, n_head_kv, n_params, weight_bytes) plus the rest below;
 * eog_ids are the tokens that end generation as the tokenizer decides them
 * (EOS, EOT, and the ones llama.cpp recognises by their text).
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "infera/llm.h"
#include "infera/tokenizer.h"

static const char *CMD = "info";

static void print_eog(const inf_tokenizer *tok, bool json) {
    int n = 0;
    printf(json ? "[" : "");
    for (int32_t id = 0; tok && id < inf_tokenizer_n_vocab(tok); id++)
        if (inf_tokenizer_is_eog(tok, id)) printf(n++ ? (json ? ",%d" : ", %d") : "%d", id);
    printf(json ? "]" : (n ? "" : "none"));
}

static void print_json(const char *shown, const inf_llm_model_info *I, const inf_tokenizer *tok, bool chat_template,
                       unsigned long long size) {
    printf("{\"path\":");
    cli_json_string(shown);
    printf(",\"kind\":\"gguf\",\"architecture\":");
    cli_json_string(I->architecture);
    printf(",\"name\":");
    cli_json_string(I->name);
    printf(",\"context_length\":%d,\"vocab_size\":%d,\"weight_type\":", I->n_ctx_train, I->n_vocab);
    cli_json_string(I->weight_type);
    printf(",\"n_embd\":%d,\"n_layer\":%d,\"n_head\":%d,\"n_head_kv\":%d,\"head_dim\":%d,\"n_ff\":%d,"
           "\"n_params\":%lld,\"weight_bytes\":%llu,\"bytes_per_token\":%llu,\"bos_id\":%d,\"eos_id\":%d,"
           "\"eot_id\":%d,\"chat_template\":%s,\"file_bytes\":%llu",
           I->n_embd, I->n_layer, I->n_head, I->n_head_kv, I->n_head_dim, I->n_ff, (long long)I->n_params,
           (unsigned long long)I->weight_bytes, (unsigned long long)I->bytes_per_token, I->bos_id, I->eos_id, I->eot_id,
           chat_template ? "true" : "false", size);
    printf(",\"sliding_window\":%d,\"sliding_window_layers\":%d,\"attn_logit_softcapping\":%g,"
           "\"final_logit_softcapping\":%g,\"eog_ids\":",
           I->swa_window, I->swa_layers, I->attn_softcap, I->final_softcap);
    print_eog(tok, true);
    printf("}\n");
}

static void print_text(const char *shown, const inf_llm_model_info *I, const inf_tokenizer *tok, bool chat_template,
                       unsigned long long size) {
    printf("model:         %s\n", shown);
    printf("format:        GGUF language model (infera generate / tokenize / serve --model NAME=FILE)\n");
    printf("architecture:  %s\n", I->architecture ? I->architecture : "?");
    if (I->name && *I->name) printf("name:          %s\n", I->name);
    printf("context:       %d tokens (trained)\n", I->n_ctx_train);
    printf("vocabulary:    %d tokens; BOS %d, EOS %d, EOT %d (-1: none)\n", I->n_vocab, I->bos_id, I->eos_id,
           I->eot_id);
    printf("end tokens:    ");
    print_eog(tok, false);
    printf("\n");
    printf("layers:        %d; embedding %d; heads %d (KV heads %d, head dim %d); feed-forward %d\n", I->n_layer,
           I->n_embd, I->n_head, I->n_head_kv, I->n_head_dim, I->n_ff);
    if (I->swa_layers)
        printf("attention:     sliding window of %d positions on %d of %d layers\n", I->swa_window, I->swa_layers,
               I->n_layer);
    if (I->attn_softcap > 0 || I->final_softcap > 0)
        printf("soft-capping:  attention scores %g, logits %g (0: none)\n", I->attn_softcap, I->final_softcap);
    printf("weights:       %s (most matrices); %lld parameters, %.2f MiB of tensors\n",
           I->weight_type ? I->weight_type : "?", (long long)I->n_params, (double)I->weight_bytes / (1024.0 * 1024.0));
    printf("decode reads:  %.2f MiB of weights per token\n", (double)I->bytes_per_token / (1024.0 * 1024.0));
    printf("chat template: %s\n", chat_template ? "in the file" : "none (the documented default is used)");
    printf("file size:     %llu bytes\n", size);
}

int cli_info_gguf(const char *path, const char *shown, bool json) {
    inf_error err;
    inf_llm_model *m;
    inf_tokenizer *tok;
    if (inf_llm_model_load(path, &m, &err) != INF_OK) return cli_fail(CMD, "%s", err.message);
    if (inf_tokenizer_load(path, &tok, &err) != INF_OK) {
        inf_llm_model_free(m);
        return cli_fail(CMD, "%s", err.message);
    }
    const inf_llm_model_info *I = inf_llm_model_get_info(m);
    size_t len = 0;
    bool chat_template = inf_llm_model_meta_str(m, "tokenizer.chat_template", &len) != NULL && len > 0;
    struct stat sb;
    unsigned long long size = stat(path, &sb) == 0 ? (unsigned long long)sb.st_size : 0;
    if (json) print_json(shown, I, tok, chat_template, size);
    else print_text(shown, I, tok, chat_template, size);
    inf_tokenizer_free(tok);
    inf_llm_model_free(m);
    return 0;
}
