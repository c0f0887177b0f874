/*
 * reject.c -- the rejection row of every runner (reject.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_int.h"
#include "runtime/reject.h"

static int write_mem(const char *bytes, size_t n, void *user) {
    return fwrite(bytes, 1, n, (FILE *)user) == n ? 0 : -1;
}

/* Row `row` of records as JSON (without the sensitive fields) into column f. */
static inf_status set_record_json(inf_record_batch *errs, int r, int f, const inf_record_batch *records, int row,
                                  const char *const *sensitive) {
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) return INF_ENOMEM;
    inf_status st = inf_record_batch_row_to_json(records, row, sensitive, write_mem, m);
    if (fclose(m) && !st) st = INF_ENOMEM;
    if (!st && buf) st = inf_record_batch_set_string(errs, r, f, buf, len);
    free(buf);
    return st;
}

inf_status inf__rt_reject_row(inf_record_batch *errs, const char *key_name, const inf_value *key, const inf_value *id,
                              const char *field, const char *reason, const inf_record_batch *records, int row,
                              const char *const *sensitive) {
    int r, f_key, f_id, f_field, f_reason, f_rec;
    inf_status st;
    if ((st = inf_record_batch_add_field(errs, key_name, &f_key)) || (st = inf_record_batch_add_field(errs, "id", &f_id)) ||
        (st = inf_record_batch_add_field(errs, "field", &f_field)) ||
        (st = inf_record_batch_add_field(errs, "reason", &f_reason)) ||
        (st = inf_record_batch_add_field(errs, "record", &f_rec)) || (st = inf_record_batch_add_row(errs, &r)))
        return st;
    if (key && (st = inf_record_batch_set(errs, r, f_key, key))) return st;
    if (id && id->type != INF_FIELD_NULL) { /* as text: a table of rejections keeps one type for `id` */
        char buf[64];
        size_t n;
        const char *text = inf__io_value_text(id, buf, sizeof buf, &n);
        if ((st = inf_record_batch_set_string(errs, r, f_id, text, n))) return st;
    }
    if (field && *field && (st = inf_record_batch_set_string(errs, r, f_field, field, strlen(field)))) return st;
    if ((st = inf_record_batch_set_string(errs, r, f_reason, reason, strlen(reason)))) return st;
    if (records && row >= 0) return set_record_json(errs, r, f_rec, records, row, sensitive);
    return INF_OK;
}
