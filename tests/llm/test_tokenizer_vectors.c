/*
 * test_tokenizer_vectors.c -- our GGUF tokenizers against llama.cpp's tokenizer test vectors.
 *
 * usage: test_tokenizer_vectors VOCAB.gguf...
 * Each VOCAB.gguf comes with VOCAB.gguf.inp (texts separated by "\n__ggml_vocab_test__\n") and
 * VOCAB.gguf.out (the ids llama.cpp produced, one line per text), as llama.cpp's
 * tests/test-tokenizer-0.cpp reads them; texts are encoded without BOS/EOS and without parsing
 * control tokens (add_special = false there).  The oracle is llama.cpp: the .out files ship with
 * it (npm node-llama-cpp@3.21.1, llama/gitRelease.bundle, models/).
 * Prints one line per vocabulary: PASS, FAIL (with the first differing case) or SKIP (tokenizer
 * or pre-tokenizer not supported, or no vectors).  Exit 0 when every supported vocabulary passes,
 * 1 on any failure, 77 when nothing could run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infera/tokenizer.h"

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *b = realloc(buf, 2 * cap + 1);
            if (!b) { free(buf); buf = NULL; break; }
            buf = b;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) return NULL;
    buf[n] = 0;
    *len = n;
    return buf;
}

static const char SEP[] = "\n__ggml_vocab_test__\n";

typedef struct {
    int passed, failed, skipped;
} totals;

static void print_escaped(const char *s, size_t n) {
    for (size_t i = 0; i < n && i < 80; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n') fputs("\\n", stdout);
        else if (c == '\t') fputs("\\t", stdout);
        else if (c < 0x20) printf("\\x%02x", c);
        else putchar(c);
    }
}

static bool valid_utf8(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = u[i] < 0x80 ? 1 : (u[i] & 0xE0) == 0xC0 ? 2 : (u[i] & 0xF0) == 0xE0 ? 3 : (u[i] & 0xF8) == 0xF0 ? 4 : 0;
        if (k == 0 || i + k > n) return false;
        for (size_t j = 1; j < k; j++)
            if ((u[i + j] & 0xC0) != 0x80) return false;
        i += k;
    }
    return true;
}

/* The pieces of the ids spell the text again (SentencePiece: after the prefix space).  Texts with
 * invalid UTF-8 are exempt (byte-level BPE writes them as U+FFFD, as llama.cpp). */
static bool round_trips(const inf_tokenizer *t, const int32_t *ids, size_t n, const char *text, size_t len) {
    size_t cap = 8 * len + 64, at = 0;
    char *buf = malloc(cap);
    if (!buf) return false;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        if (inf_tokenizer_piece(t, ids[i], at < cap ? buf + at : NULL, at < cap ? cap - at : 0, &k) != INF_OK) k = 0;
        at += k;
    }
    bool ok = at <= cap && ((at == len && memcmp(buf, text, len) == 0) ||
                            (at == len + 1 && buf[0] == ' ' && memcmp(buf + 1, text, len) == 0));
    free(buf);
    return ok || !valid_utf8(text, len);
}

static int run_vocab(const char *path, totals *tot) {
    char inp_path[4096], out_path[4096];
    snprintf(inp_path, sizeof inp_path, "%s.inp", path);
    snprintf(out_path, sizeof out_path, "%s.out", path);
    size_t inp_len = 0, out_len = 0;
    char *inp = read_file(inp_path, &inp_len), *out = read_file(out_path, &out_len);
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    if (!inp || !out) {
        printf("SKIP %s: no .inp/.out vectors\n", name);
        free(inp), free(out);
        tot->skipped++;
        return 0;
    }
    inf_error err = {0};
    inf_tokenizer *t = NULL;
    if (inf_tokenizer_load(path, &t, &err) != INF_OK) {
        bool unsupported = err.status == INF_EUNSUPPORTED;
        printf("%s %s: %s\n", unsupported ? "SKIP" : "FAIL", name, err.message);
        free(inp), free(out);
        if (unsupported) tot->skipped++;
        else tot->failed++;
        return unsupported ? 0 : 1;
    }
    int cases = 0, bad = 0;
    size_t ip = 0;
    char *line = out, *save = NULL;
    (void)save;
    size_t cap = 1 << 16;
    int32_t *ids = malloc(cap * sizeof *ids);
    while (ids && ip <= inp_len) {
        const char *next = strstr(inp + ip, SEP);
        size_t tlen = next ? (size_t)(next - (inp + ip)) : inp_len - ip;
        if (!next && tlen == 0 && cases > 0) break;
        /* expected ids: one line of out */
        char *eol = strchr(line, '\n');
        if (eol) *eol = 0;
        int32_t want[4096];
        int n_want = 0;
        for (char *p = line, *end; n_want < 4096; p = end) {
            long v = strtol(p, &end, 10);
            if (end == p) break;
            want[n_want++] = (int32_t)v;
        }
        size_t n = 0;
        inf_status st = inf_tokenizer_encode(t, inp + ip, tlen, false, ids, cap, &n, &err);
        bool ok = st == INF_OK && n == (size_t)n_want;
        for (size_t i = 0; ok && i < n; i++) ok = ids[i] == want[i];
        if (ok && n > 1) { /* a short buffer: INF_ERANGE, the full count, the first ids */
            int32_t one = -1;
            size_t need = 0;
            inf_status st1 = inf_tokenizer_encode(t, inp + ip, tlen, false, &one, 1, &need, NULL);
            if (st1 != INF_ERANGE || need != n || one != ids[0]) {
                printf("  %s case %d: with room for 1 id: status %d, count %zu (want %d, %zu)\n", name, cases,
                       (int)st1, need, (int)INF_ERANGE, n);
                ok = false;
            }
        }
        if (ok && !round_trips(t, ids, n, inp + ip, tlen)) {
            printf("  %s case %d: the pieces do not give the text back\n", name, cases);
            ok = false;
        }
        if (!ok) {
            if (bad == 0) {
                printf("  %s case %d '", name, cases);
                print_escaped(inp + ip, tlen);
                printf("':\n    want");
                for (int i = 0; i < n_want; i++) printf(" %d", want[i]);
                printf("\n    got ");
                if (st != INF_OK) printf(" error: %s", err.message);
                for (size_t i = 0; st == INF_OK && i < n; i++) printf(" %d", ids[i]);
                printf("\n");
            }
            bad++;
        }
        cases++;
        line = eol ? eol + 1 : line + strlen(line);
        if (!next) break;
        ip = (size_t)(next - inp) + sizeof SEP - 1;
    }
    /* invalid UTF-8: each byte is U+FFFD, two tokens in falcon's vocabulary, so 40 bytes need more
     * than the len + 8 ids serve, generate and SQL used to allocate (fuzz_tokenizer): the allocating
     * encoder sizes its array to what the text needs, the same ids as a roomy buffer gets */
    char junk[40];
    memset(junk, 0xff, sizeof junk);
    int32_t *got = NULL;
    size_t n_got = 0, n_roomy = 0;
    inf_status st_alloc = inf_tokenizer_encode_alloc(t, junk, sizeof junk, true, &got, &n_got, &err);
    inf_status st_roomy = ids ? inf_tokenizer_encode(t, junk, sizeof junk, true, ids, cap, &n_roomy, NULL) : INF_ENOMEM;
    if (st_alloc != INF_OK || st_roomy != INF_OK || n_got != n_roomy || memcmp(got, ids, n_got * sizeof *got)) {
        printf("  %s: 40 invalid bytes: encode_alloc status %d, %zu ids (a roomy buffer: %zu)\n", name, (int)st_alloc,
               n_got, n_roomy);
        bad++;
    }
    free(got);
    printf("%s %s: %d/%d cases\n", bad ? "FAIL" : "PASS", name, cases - bad, cases);
    if (bad) tot->failed++;
    else tot->passed++;
    free(ids);
    inf_tokenizer_free(t);
    free(inp), free(out);
    return bad ? 1 : 0;
}

int main(int argc, char **argv) {
    totals tot = {0};
    for (int i = 1; i < argc; i++) run_vocab(argv[i], &tot);
    printf("%d passed, %d failed, %d skipped\n", tot.passed, tot.failed, tot.skipped);
    if (tot.failed) return 1;
    return tot.passed ? 0 : 77;
}
