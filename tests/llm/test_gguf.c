/*
 * test_gguf.c -- the GGUF reader against files built by tests/llm/gguf_writer.h:
 * a valid file reads back every key and tensor exactly; every truncation of
 * it, and a set of hand-made malformed files (bad magic, version, counts,
 * lengths, types, offsets, alignment, duplicates), are refused with an error
 * that names the key or tensor, never a crash (run under ASan in CI).
 * With an argument DIR, also writes the valid file as DIR/tiny.gguf (the
 * fuzzer's seed), and checks the tokenizer's end-of-generation ids from the
 * tokenizer.ggml.fim_{pad,rep,sep}_token_id keys (test_fim_keys).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "gguf_writer.h"
#include "infera/tokenizer.h"
#include "llm/gguf.h"

#include "../check.h"

static void build_valid(uint8_t **p, size_t *n, uint32_t alignment) {
    gw w;
    gw_init(&w);
    w.alignment = alignment;
    gw_key_str(&w, "general.architecture", "llama");
    gw_key_u32(&w, "general.alignment", alignment);
    gw_key_u32(&w, "llama.block_count", 2);
    gw_key_i32(&w, "some.negative", -5);
    gw_key_f32(&w, "llama.rope.freq_base", 10000.0f);
    gw_key_bool(&w, "tokenizer.ggml.add_bos_token", 1);
    const char *toks[] = {"<s>", "</s>", "hello", ""};
    gw_key_arr_str(&w, "tokenizer.ggml.tokens", toks, 4);
    float scores[] = {0, 0, -1.5f, -2};
    gw_key_arr_f32(&w, "tokenizer.ggml.scores", scores, 4);
    float a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int64_t ne_a[2] = {4, 2};
    gw_tensor(&w, "a.weight", 0, 2, ne_a, a, sizeof a);
    uint8_t q[34 * 2] = {0};
    int64_t ne_q[2] = {32, 2};
    gw_tensor(&w, "q.weight", 8, 2, ne_q, q, sizeof q);
    gw_finish(&w, 3, p, n);
}

static void test_valid(void) {
    uint8_t *p;
    size_t n;
    build_valid(&p, &n, 64);
    inf__gguf *g = NULL;
    inf_error err;
    inf_status st = inf__gguf_open_buffer(p, n, "valid.gguf", &g, &err);
    CHECK(st == INF_OK, "%s", err.message);
    if (st) return;
    const char *s;
    size_t len;
    uint32_t u;
    int64_t i64;
    float f;
    bool b;
    CHECK(inf__gguf_version(g) == 3 && inf__gguf_alignment(g) == 64, "version/alignment");
    CHECK(inf__gguf_get_str(g, "general.architecture", &s, &len, &err) == INF_OK && len == 5 && !memcmp(s, "llama", 5),
          "architecture");
    CHECK(inf__gguf_get_u32(g, "llama.block_count", &u, &err) == INF_OK && u == 2, "block_count");
    CHECK(inf__gguf_get_i64(g, "some.negative", &i64, &err) == INF_OK && i64 == -5, "i64");
    CHECK(inf__gguf_get_u32(g, "some.negative", &u, &err) == INF_ERANGE && strstr(err.message, "some.negative"),
          "negative into u32: %s", err.message);
    CHECK(inf__gguf_get_f32(g, "llama.rope.freq_base", &f, &err) == INF_OK && f == 10000.0f, "f32");
    CHECK(inf__gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &b, &err) == INF_OK && b, "bool");
    CHECK(inf__gguf_get_u32(g, "general.architecture", &u, &err) == INF_ETYPE &&
              strstr(err.message, "general.architecture"),
          "wrong type: %s", err.message);
    CHECK(inf__gguf_get_u32(g, "nope", &u, &err) == INF_ENOENT && strstr(err.message, "'nope'"), "missing: %s",
          err.message);
    CHECK(inf__gguf_find_key(g, "nope") == -1, "find missing");
    CHECK(inf__gguf_key_type(g, inf__gguf_find_key(g, "tokenizer.ggml.tokens")) == INF__GGUF_ARRAY, "array type");
    CHECK(inf__gguf_arr_str(g, "tokenizer.ggml.tokens", 2, &s, &len, &err) == INF_OK && len == 5 &&
              !memcmp(s, "hello", 5),
          "arr_str");
    CHECK(inf__gguf_arr_str(g, "tokenizer.ggml.tokens", 3, &s, &len, &err) == INF_OK && len == 0, "empty string");
    CHECK(inf__gguf_arr_str(g, "tokenizer.ggml.tokens", 4, &s, &len, &err) == INF_ERANGE, "past the end");
    enum inf__gguf_type et;
    uint64_t cnt;
    const void *data;
    CHECK(inf__gguf_get_arr(g, "tokenizer.ggml.scores", &et, &cnt, &data, &err) == INF_OK && et == INF__GGUF_F32 &&
              cnt == 4,
          "f32 array");
    float sc;
    memcpy(&sc, (const char *)data + 8, 4);
    CHECK(sc == -1.5f, "array value");
    CHECK(inf__gguf_n_tensors(g) == 2, "n_tensors");
    const inf__gguf_tensor *t = inf__gguf_find_tensor(g, "a.weight");
    CHECK(t && t->type == 0 && t->n_dims == 2 && t->ne[0] == 4 && t->ne[1] == 2 && t->ne[2] == 1 && t->nbytes == 32,
          "tensor a");
    if (t) {
        float x;
        memcpy(&x, (const char *)t->data + 28, 4);
        CHECK(x == 8 && ((uintptr_t)((const uint8_t *)t->data - p)) % 64 == 0, "tensor a data/alignment");
    }
    t = inf__gguf_find_tensor(g, "q.weight");
    CHECK(t && t->nbytes == 68 && t->type == INF__GGML_Q8_0, "tensor q");
    CHECK(!inf__gguf_find_tensor(g, "missing"), "missing tensor");
    inf__gguf_close(g);
    free(p);
}

/* Every proper prefix of a valid file is refused with an error. */
static void test_truncations(void) {
    uint8_t *p;
    size_t n;
    build_valid(&p, &n, 32);
    int refused = 0;
    for (size_t k = 0; k < n; k++) {
        uint8_t *cut = malloc(k ? k : 1); /* exact size: ASan sees any overread */
        memcpy(cut, p, k);
        inf__gguf *g = NULL;
        inf_error err;
        inf_status st = inf__gguf_open_buffer(cut, k, "cut.gguf", &g, &err);
        if (st != INF_OK) refused++;
        else CHECK(0, "prefix of %zu of %zu bytes accepted", k, n);
        if (st != INF_OK) CHECK(strstr(err.message, "cut.gguf: GGUF:") != NULL, "message: %s", err.message);
        inf__gguf_close(g);
        free(cut);
    }
    CHECK(refused == (int)n, "all %zu truncations refused (%d)", n, refused);
    free(p);
}

typedef struct mutation {
    const char *what;
    size_t at;     /* byte offset to patch */
    uint64_t value;
    int width;     /* bytes */
    inf_status want;
    const char *needle; /* in the message */
} mutation;

static void test_malformed(void) {
    uint8_t *p;
    size_t n;
    build_valid(&p, &n, 32);
    /* offsets in the file: header 24 bytes; first key "general.architecture" (20) at 24 */
    size_t key0_type = 24 + 8 + 20, key0_len = 24;
    /* locate "a.weight" tensor info to patch its fields */
    size_t a_info = 0;
    for (size_t i = 0; i + 8 < n; i++)
        if (!memcmp(p + i, "a.weight", 8)) { a_info = i + 8; break; }
    size_t a_ndims = a_info, a_ne0 = a_info + 4, a_type = a_info + 4 + 16, a_off = a_type + 4;
    /* general.alignment value: after its key */
    size_t align_val = 0;
    for (size_t i = 0; i + 17 < n; i++)
        if (!memcmp(p + i, "general.alignment", 17)) { align_val = i + 17 + 4; break; }
    size_t tokens_n = 0;
    for (size_t i = 0; i + 21 < n; i++)
        if (!memcmp(p + i, "tokenizer.ggml.tokens", 21)) { tokens_n = i + 21 + 4 + 4; break; }
    const mutation ms[] = {
        {"magic", 0, 'X', 1, INF_EFORMAT, "magic"},
        {"version 1", 4, 1, 4, INF_EUNSUPPORTED, "version 1"},
        {"version 4", 4, 4, 4, INF_EUNSUPPORTED, "version 4"},
        {"huge tensor count", 8, UINT64_MAX, 8, INF_EFORMAT, "tensors cannot fit"},
        {"huge key count", 16, (uint64_t)1 << 60, 8, INF_EFORMAT, "keys cannot fit"},
        {"key length past the end", key0_len, UINT64_MAX - 3, 8, INF_EFORMAT, "name truncated"},
        {"unknown value type", key0_type, 13, 4, INF_EUNSUPPORTED, "unknown value type 13"},
        {"string array length", tokens_n, (uint64_t)1 << 62, 8, INF_EFORMAT, "tokenizer.ggml.tokens"},
        {"alignment not a power of two", align_val, 48, 4, INF_EFORMAT, "general.alignment"},
        {"zero alignment", align_val, 0, 4, INF_EFORMAT, "general.alignment"},
        {"tensor dims 0", a_ndims, 0, 4, INF_EFORMAT, "a.weight"},
        {"tensor dims 5", a_ndims, 5, 4, INF_EFORMAT, "a.weight"},
        {"tensor dim huge", a_ne0, (uint64_t)1 << 62, 8, INF_EFORMAT, "a.weight"},
        {"tensor dim negative", a_ne0, UINT64_MAX, 8, INF_EFORMAT, "a.weight"},
        {"unknown tensor type", a_type, 99, 4, INF_EUNSUPPORTED, "a.weight"},
        {"tensor offset unaligned", a_off, 4, 8, INF_EFORMAT, "a.weight"},
        {"tensor offset past the end", a_off, 1 << 20, 8, INF_EFORMAT, "a.weight"},
        {"tensor offset overflow", a_off, UINT64_MAX - 31, 8, INF_EFORMAT, "a.weight"},
        {"q8_0 row not whole blocks", a_type, 8, 4, INF_EFORMAT, "a.weight"},
    };
    for (size_t m = 0; m < sizeof ms / sizeof ms[0]; m++) {
        uint8_t *q = malloc(n);
        memcpy(q, p, n);
        memcpy(q + ms[m].at, &ms[m].value, ms[m].width);
        inf__gguf *g = NULL;
        inf_error err;
        err.message[0] = 0;
        inf_status st = inf__gguf_open_buffer(q, n, "bad.gguf", &g, &err);
        CHECK(st == ms[m].want && strstr(err.message, ms[m].needle), "%s: status %d, message '%s'", ms[m].what, st,
              err.message);
        inf__gguf_close(g);
        free(q);
    }
    free(p);
    /* duplicates and nested arrays, built directly */
    gw w;
    uint8_t *d;
    size_t dn;
    inf__gguf *g = NULL;
    inf_error err;
    gw_init(&w);
    gw_key_u32(&w, "k", 1);
    gw_key_u32(&w, "k", 2);
    gw_finish(&w, 3, &d, &dn);
    CHECK(inf__gguf_open_buffer(d, dn, "dup.gguf", &g, &err) == INF_EFORMAT && strstr(err.message, "'k' appears twice"),
          "duplicate key: %s", err.message);
    free(d);
    gw_init(&w);
    float x[4] = {0};
    int64_t ne[1] = {4};
    gw_tensor(&w, "t", 0, 1, ne, x, 16);
    gw_tensor(&w, "t", 0, 1, ne, x, 16);
    gw_finish(&w, 2, &d, &dn);
    CHECK(inf__gguf_open_buffer(d, dn, "dup.gguf", &g, &err) == INF_EFORMAT && strstr(err.message, "'t' appears twice"),
          "duplicate tensor: %s", err.message);
    free(d);
    gw_init(&w);
    gw_str(&w.kv, "nested");
    gw_u32(&w.kv, 9);
    gw_u32(&w.kv, 9);
    gw_u64(&w.kv, 0);
    w.n_kv++;
    gw_finish(&w, 3, &d, &dn);
    CHECK(inf__gguf_open_buffer(d, dn, "nested.gguf", &g, &err) == INF_EUNSUPPORTED && strstr(err.message, "nested"),
          "nested array: %s", err.message);
    free(d);
    /* a missing file and a file too short, through the mmap path */
    CHECK(inf__gguf_open("/nonexistent/x.gguf", &g, &err) == INF_EIO && strstr(err.message, "/nonexistent/x.gguf"),
          "missing file: %s", err.message);
}

static void test_file(const char *dir) {
    uint8_t *p;
    size_t n;
    build_valid(&p, &n, 32);
    char path[4096];
    snprintf(path, sizeof path, "%s/tiny.gguf", dir);
    CHECK(gw_write_file(path, p, n) == 0, "write %s", path);
    inf__gguf *g = NULL;
    inf_error err;
    CHECK(inf__gguf_open(path, &g, &err) == INF_OK, "%s", err.message);
    if (g) CHECK(inf__gguf_find_tensor(g, "a.weight") != NULL && !strcmp(inf__gguf_path(g), path), "mapped file");
    inf__gguf_close(g);
    snprintf(path, sizeof path, "%s/short.gguf", dir);
    gw_write_file(path, p, 10);
    CHECK(inf__gguf_open(path, &g, &err) == INF_EFORMAT && strstr(err.message, "too short"), "%s", err.message);
    free(p);
}

/* End of generation and the fill-in-the-middle keys: without
 * tokenizer.ggml.fim_{pad,rep,sep}_token_id the pad/repository/separator
 * tokens are found by their text (llama.cpp's lists: <|fim_pad|> before
 * <PAD>, <|file_sep|>); with the keys, the ids they give (any text) and not
 * the named tokens -- as llama.cpp's llama-vocab.cpp decides. */
static void test_fim_keys(const char *dir) {
    const char *toks[] = {"<unk>",
                          "<s>",
                          "</s>",
                          "<|fim_pad|>",
                          "<PAD>",
                          "\xE2\x96\x81"
                          "a",
                          "<|file_sep|>",
                          "<my_sep>",
                          "<rep>"};
    const int32_t types[] = {2, 3, 3, 3, 3, 1, 3, 3, 3};
    float scores[9] = {0};
    for (int keyed = 0; keyed < 2; keyed++) {
        gw w;
        gw_init(&w);
        gw_key_str(&w, "general.architecture", "llama");
        gw_key_str(&w, "tokenizer.ggml.model", "llama");
        gw_key_arr_str(&w, "tokenizer.ggml.tokens", toks, 9);
        gw_key_arr_f32(&w, "tokenizer.ggml.scores", scores, 9);
        gw_key_arr_i32(&w, "tokenizer.ggml.token_type", types, 9);
        gw_key_u32(&w, "tokenizer.ggml.eos_token_id", 2);
        if (keyed) {
            gw_key_u32(&w, "tokenizer.ggml.fim_pad_token_id", 4);
            gw_key_u32(&w, "tokenizer.ggml.fim_rep_token_id", 8);
            gw_key_u32(&w, "tokenizer.ggml.fim_sep_token_id", 7);
        }
        uint8_t *p;
        size_t n;
        gw_finish(&w, 3, &p, &n);
        char path[1024];
        snprintf(path, sizeof path, "%s/fim_keys_%d.gguf", dir, keyed);
        gw_write_file(path, p, n);
        free(p);
        inf_tokenizer *t = NULL;
        inf_error err;
        inf_status st = inf_tokenizer_load(path, &t, &err);
        CHECK(st == INF_OK, "fim keys %d: %s", keyed, err.message);
        if (st) continue;
        /* ids 0..8: eog without the keys {2, 3, 6}; with them {2, 4, 7, 8} */
        static const bool want[2][9] = {{0, 0, 1, 1, 0, 0, 1, 0, 0}, {0, 0, 1, 0, 1, 0, 0, 1, 1}};
        for (int32_t id = 0; id < 9; id++)
            CHECK(inf_tokenizer_is_eog(t, id) == want[keyed][id], "fim keys %d: token %d (%s) end of generation %d",
                  keyed, id, toks[id], (int)inf_tokenizer_is_eog(t, id));
        inf_tokenizer_free(t);
    }
}

int main(int argc, char **argv) {
    test_valid();
    test_truncations();
    test_malformed();
    test_file(argc > 1 ? argv[1] : "/tmp");
    test_fim_keys(argc > 1 ? argv[1] : "/tmp");
    return check_summary("gguf");
}
