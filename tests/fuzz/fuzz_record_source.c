/*
 * fuzz_record_source.c -- libFuzzer target for the file record sources of
 * batch and stream: CSV (src/io/csv.c: quoting, header, cell types through
 * the number parser) and JSON lines (src/io/jsonl.c), opened as production
 * opens them, inf_source_open("csv:PATH") / ("jsonl:PATH").
 *
 * The first byte picks the format and the rows per batch; the rest is the
 * file (an in-memory file: memfile.h).  Every batch is read to the end of the
 * file -- a malformed record fails its call and the source goes on past it --
 * and each row is written back as JSON (inf_record_batch_row_to_json).
 * Must never crash, leak, loop or read out of bounds.  Seeds:
 * tests/fuzz/seeds/records_*.{csv,jsonl}.  Built with -DINFERA_FUZZ=ON and clang.
 */
#include <stdlib.h>

#include "infera/io.h"
#include "memfile.h"

static int count_bytes(const char *bytes, size_t n, void *user) {
    (void)bytes;
    *(size_t *)user += n;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    char path[64], uri[80];
    int fd = fuzz_memfile(data + 1, size - 1, path, sizeof path);
    if (fd < 0)
        return 0;
    snprintf(uri, sizeof uri, "%s:%s", data[0] & 1 ? "jsonl" : "csv", path);
    inf_source_options opts = {.max_rows = 1 + (data[0] >> 1) % 8};
    inf_source *src = NULL;
    inf_record_batch *b = NULL;
    inf_error err;
    if (inf_record_batch_new(&b) == INF_OK && inf_source_open(uri, &opts, &src, &err) == INF_OK) {
        int eof = 0;
        size_t json_bytes = 0;
        /* a call consumes a byte or more, ends the file, or reports an error kept from the call before */
        for (size_t calls = 0; !eof; calls++) {
            if (calls > 2 * size + 4)
                abort();
            if (inf_source_next(src, b, &eof, &err) != INF_OK)
                continue;
            for (int r = 0; r < inf_record_batch_n_rows(b); r++)
                (void)inf_record_batch_row_to_json(b, r, NULL, count_bytes, &json_bytes);
        }
        inf_source_close(src);
    }
    inf_record_batch_free(b);
    close(fd);
    return 0;
}
