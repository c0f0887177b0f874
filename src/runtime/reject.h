/*
 * reject.h -- the rejection row every runner writes for a record it could
 * not score (batch's --errors rows, stream's dead letters): one shape,
 * built in one place (reject.c).
 *
 *   KEY, id, field, reason, record
 *
 * KEY names where the record came from (batch: `source_row`, its 1-based
 * number in the source; stream: `event_id`).  `id` is the record's id as
 * text (ids are text, io.h), null when it has none.  `field` the spec field
 * at fault, or null.  `record` the record as JSON without the fields the
 * spec marks sensitive, or null (a malformed source record has none).
 */
#ifndef INF_RUNTIME_REJECT_H
#define INF_RUNTIME_REJECT_H

#include "infera/io.h"

/* Appends one rejection row to errs.  key_name/key: the KEY column and its
 * value (key may be NULL: null); id may be NULL; field NULL or "" = null;
 * records/row: the record (row < 0 or records NULL: no record); sensitive: a
 * NULL-terminated list of fields left out of it (may be NULL).  INF_ENOMEM. */
inf_status inf__rt_reject_row(inf_record_batch *errs, const char *key_name, const inf_value *key, const inf_value *id,
                              const char *field, const char *reason, const inf_record_batch *records, int row,
                              const char *const *sensitive);

#endif /* INF_RUNTIME_REJECT_H */
