/*
 * record_int.h -- the layout of inf_record_batch, shared by src/io and
 * src/pipeline (internal to the runtime layer; runners use include/infera/io.h).
 *
 * Row-major values with a stride of cap_fields, so adding a field keeps
 * existing rows in place until the capacity grows (then rows are re-laid).
 * Slots past n_fields are kept zeroed (= NULL values), so a new field reads
 * NULL in every existing row.  Names and strings live in two arenas: `names`
 * survives inf_record_batch_clear, `strs` does not.  A hash of the names
 * (open addressing, power-of-two size) makes find_field O(1).
 */
#ifndef INF_IO_RECORD_INT_H
#define INF_IO_RECORD_INT_H

#include "infera/io.h"

typedef struct inf__arena_block {
    struct inf__arena_block *next;
    size_t size, used;
    char data[];
} inf__arena_block;

typedef struct inf__rarena {
    inf__arena_block *head; /* current block; older blocks after it */
    inf__arena_block *free; /* blocks kept after a reset */
} inf__rarena;

char *inf__rarena_alloc(inf__rarena *a, size_t n);
void inf__rarena_reset(inf__rarena *a);
void inf__rarena_deinit(inf__rarena *a);

struct inf_record_batch {
    int n_rows, cap_rows;
    int n_fields, cap_fields;
    char **names;         /* n_fields, in `names_arena` */
    int *hash;            /* hash_size slots: field index + 1, 0 = empty */
    int hash_size;
    inf_value *vals;      /* cap_rows * cap_fields */
    inf__rarena names_arena;
    inf__rarena strs;
    char *id_field;       /* malloc'd: the field that identifies a record (its text is kept), or NULL */
    int id_slot;          /* that field's index + 1 in this schema, 0 = not (yet) a field */
};

/* True when field is the batch's id field (inf_record_batch_set_id_field):
 * text sources then keep the cell's exact characters as a string. */
static inline int inf__batch_is_id(const inf_record_batch *b, int field) { return b->id_slot == field + 1; }

static inline const inf_value *inf__batch_at(const inf_record_batch *b, int row, int field) {
    return &b->vals[(size_t)row * (size_t)b->cap_fields + (size_t)field];
}

/* Parses the n bytes at s as a decimal number ([+-]digits[.digits][e[+-]digits]
 * or .digits), the whole text.  Returns 0 and sets *out to exactly what
 * strtod gives (correctly rounded: values with at most 15 significant digits
 * and a decimal exponent within +-22 are computed exactly without strtod;
 * others call it), or -1 when the text is not such a number. */
int inf__parse_double(const char *s, size_t n, double *out);
/* Room for at least n rows (a batch without rows yet: exactly n, not the
 * default 64 -- the prediction log's small batches, predlog.c).  INF_ENOMEM. */
inf_status inf__record_batch_reserve_rows(inf_record_batch *b, int n);

/* Every row of b as JSON lines (inf_record_batch_row_to_json's text, then
 * '\n'), the field names escaped once for the batch.  INF_EIO (a write
 * failed), INF_ENOMEM. */
/* Empties b as inf_record_batch_clear does, but leaves the old rows' values in
 * place (not zeroed: rows added later start with them): for a caller that sets
 * every field of every row it adds (the prediction log's prebuilt rows). */
void inf__record_batch_clear_unzeroed(inf_record_batch *b);
inf_status inf__record_batch_write_jsonl(const inf_record_batch *b, inf_write_fn write, void *user);

#endif /* INF_IO_RECORD_INT_H */
