/*
 * test_runtime_lib.c -- libinfera_runtime is a real library (issue 19): this
 * program links only libinfera_runtime.so and libinfera.so (no sources of
 * the tree) and uses the public API of include/infera/io.h:
 *   - ids are text (issue 27): a CSV id of 19+ digits, `1e3` and `007` come
 *     back with the file's exact characters; other cells keep their types;
 *   - the shard predicate quotes the id column as PostgreSQL wants
 *     (embedded double quotes doubled: PostgreSQL manual, 4.1.1 "Identifiers").
 * Expected values are the literal inputs, not the code's own output.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "infera/io.h"

#define CHECK_PRINT_PASSES
#include "../check.h"

int main(void) {
    char path[] = "/tmp/infera-runtime-lib-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return 77;
    const char *csv = "id,x\n1000000000000000001,1\n1000000000000000000,2\n1e3,3\n1000,4\n007,5\n";
    if (write(fd, csv, strlen(csv)) != (ssize_t)strlen(csv)) return 1;
    close(fd);
    char uri[64];
    snprintf(uri, sizeof uri, "csv:%s", path);
    inf_source_options so = {0};
    so.id_column = "id";
    inf_source *src = NULL;
    inf_record_batch *b = NULL;
    inf_error e;
    int eof = 0;
    CHECK(inf_source_open(uri, &so, &src, &e) == INF_OK && inf_record_batch_new(&b) == INF_OK, "open %s", uri);
    CHECK(src && b && inf_source_next(src, b, &eof, &e) == INF_OK, "read the rows");
    const char *want[] = {"1000000000000000001", "1000000000000000000", "1e3", "1000", "007"};
    int fid = b ? inf_record_batch_find_field(b, "id") : -1, fx = b ? inf_record_batch_find_field(b, "x") : -1;
    CHECK(b && inf_record_batch_n_rows(b) == 5, "5 rows");
    for (int r = 0; b && r < 5 && r < inf_record_batch_n_rows(b); r++) {
        const inf_value *v = inf_record_batch_get(b, r, fid), *x = inf_record_batch_get(b, r, fx);
        CHECK(v->type == INF_FIELD_STRING && v->u.s.len == strlen(want[r]) && !memcmp(v->u.s.ptr, want[r], v->u.s.len),
              "id of row %d is the text '%s'", r + 1, want[r]);
        CHECK(x->type == INF_FIELD_INT && x->u.i == r + 1, "x of row %d stays an int", r + 1);
    }
    inf_record_batch_free(b);
    inf_source_close(src);
    unlink(path);
    char where[128];
    CHECK(inf_io_shard_predicate("a\"b", 1, 4, where, sizeof where) == 0 &&
              !strcmp(where, "abs(hashtext(\"a\"\"b\"::text)::bigint) % 4 = 1"),
          "shard predicate quotes the id column: %s", where);
    CHECK(inf_io_shard_predicate("id", 4, 4, where, sizeof where) != 0, "shard 4/4 refused");
    return check_summary("runtime library");
}
