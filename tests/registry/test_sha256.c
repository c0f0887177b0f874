/*
 * test_sha256.c -- the registry's SHA-256 (src/registry/sha256.c) against
 * the FIPS 180-4 / NIST example vectors, padding-boundary lengths (digests
 * from coreutils sha256sum) and streaming in uneven chunks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infera/registry.h"

static int passed, failed;

static void check(const char *name, const char *got, const char *want) {
    if (!strcmp(got, want)) {
        passed++;
        printf("ok   %s\n", name);
    } else {
        failed++;
        printf("FAIL %s: got %s, want %s\n", name, got, want);
    }
}

int main(void) {
    static const struct {
        const char *name, *msg, *hex;
    } vectors[] = {
        {"empty", "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"448 bits", "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"896 bits",
         "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    char hex[65];
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
        inf_sha256_hex(vectors[i].msg, strlen(vectors[i].msg), hex);
        check(vectors[i].name, hex, vectors[i].hex);
    }

    /* lengths around the 56- and 64-byte padding boundaries */
    static const struct {
        int n;
        const char *hex;
    } lengths[] = {
        {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
        {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
        {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
        {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
        {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
        {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
        {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
        {127, "c57e9278af78fa3cab38667bef4ce29d783787a2f731d4e12200270f0c32320a"},
        {128, "6836cf13bac400e9105071cd6af47084dfacad4e5e302c94bfed24e013afb73e"},
    };
    char a[128];
    memset(a, 'a', sizeof a);
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "%d x 'a'", lengths[i].n);
        inf_sha256_hex(a, (size_t)lengths[i].n, hex);
        check(name, hex, lengths[i].hex);
    }

    /* one million 'a', fed in uneven chunks (1, 2, 3, ... bytes) */
    char *m = malloc(1000000);
    if (!m) return 1;
    memset(m, 'a', 1000000);
    inf_sha256 c;
    uint8_t d[32];
    inf_sha256_init(&c);
    size_t off = 0;
    for (size_t step = 1; off < 1000000; step = step % 97 + 1) {
        size_t n = off + step > 1000000 ? 1000000 - off : step;
        inf_sha256_update(&c, m + off, n);
        off += n;
    }
    inf_sha256_final(&c, d);
    inf_sha256_to_hex(d, hex);
    check("million 'a' streamed", hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    inf_sha256_hex(m, 1000000, hex);
    check("million 'a' one-shot", hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(m);

    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
