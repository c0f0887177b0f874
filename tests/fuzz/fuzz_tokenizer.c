/*
 * fuzz_tokenizer.c -- libFuzzer target for the GGUF tokenizers on arbitrary
 * bytes (src/llm/tokenizer*.c, inf_tokenizer_encode): every prompt of
 * `infera serve`'s OpenAI endpoints and of `infera generate` goes through it,
 * so any byte string, valid UTF-8 or not, must encode without a crash, a
 * leak or a read outside the text.
 *
 * The first byte picks the vocabulary and whether special tokens are
 * recognised; the rest is the text (copied into an exact-size heap block).
 * Checked: inf_tokenizer_encode_alloc (what serve, generate and SQL call)
 * succeeds; every id is inside the vocabulary; inf_tokenizer_encode with a
 * short buffer reports INF_ERANGE with the same count and the same first
 * ids; every id has a piece (written whole, or cut at the buffer with its
 * full length).
 * Vocabularies: the SentencePiece one of tests/llm/models/austen-draft-q8_0.gguf
 * (under INFERA_SOURCE_DIR, compiled in), and every file named in
 * INFERA_FUZZ_VOCABS (colon-separated; llama.cpp's models/ggml-vocab-*.gguf
 * give the BPE pre-tokenizers: scripts/test.sh passes them when installed).
 * Built with -DINFERA_FUZZ=ON and clang.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infera/tokenizer.h"

#define MAX_VOCABS 32
#define SHORT_CAP 8

static inf_tokenizer *vocabs[MAX_VOCABS];
static int n_vocabs;

static void load(const char *path) {
    inf_error err;
    if (n_vocabs == MAX_VOCABS)
        return;
    if (inf_tokenizer_load(path, &vocabs[n_vocabs], &err) == INF_OK)
        n_vocabs++;
    else
        fprintf(stderr, "fuzz_tokenizer: %s: %s\n", path, err.message); /* unsupported vocabularies are skipped */
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    load(INFERA_SOURCE_DIR "/tests/llm/models/austen-draft-q8_0.gguf");
    const char *list = getenv("INFERA_FUZZ_VOCABS");
    char *copy = list ? strdup(list) : NULL, *save = NULL;
    for (char *p = copy ? strtok_r(copy, ":", &save) : NULL; p; p = strtok_r(NULL, ":", &save))
        load(p);
    free(copy);
    if (!n_vocabs)
        abort();
    fprintf(stderr, "fuzz_tokenizer: %d vocabularies\n", n_vocabs);
    return 0;
}

static void check_pieces(const inf_tokenizer *t, const int32_t *ids, size_t n) {
    char buf[16];
    for (size_t i = 0; i < n; i++) {
        size_t len = 0;
        if (inf_tokenizer_piece(t, ids[i], buf, sizeof buf, &len) != INF_OK)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    const inf_tokenizer *t = vocabs[(data[0] >> 1) % n_vocabs];
    bool special = data[0] & 1;
    size_t len = size - 1;
    char *text = malloc(len ? len : 1); /* exact size: a read past the text is caught */
    if (!text)
        return 0;
    memcpy(text, data + 1, len);
    size_t n = 0, n_short = 0;
    int32_t *ids = NULL, few[SHORT_CAP];
    inf_error err;
    inf_status st = inf_tokenizer_encode_alloc(t, text, len, special, &ids, &n, &err);
    if (st != INF_OK && st != INF_ENOMEM)
        abort(); /* any bytes encode */
    if (st == INF_OK) {
        int32_t n_vocab = inf_tokenizer_n_vocab(t);
        for (size_t i = 0; i < n; i++)
            if (ids[i] < 0 || ids[i] >= n_vocab)
                abort();
        st = inf_tokenizer_encode(t, text, len, special, few, SHORT_CAP, &n_short, &err);
        if (n_short != n || (st == INF_ERANGE) != (n > SHORT_CAP) ||
            memcmp(few, ids, (n < SHORT_CAP ? n : SHORT_CAP) * sizeof *ids))
            abort(); /* a short buffer changes nothing but how much is written */
        check_pieces(t, ids, n);
    }
    free(ids);
    free(text);
    return 0;
}
