/*
 * fields.c -- the integer fields of a record and of a push delivery row,
 * named once for every backend that keeps them in columns or attributes of
 * their own (SQLite, PostgreSQL, DynamoDB, Redis): which fields there are,
 * where each sits in the struct, at which column of the SQL row, under which
 * DynamoDB attribute and Redis hash field.
 *
 * A reader walks the table and stores each value with once__field_set; a
 * writer that names its fields (DynamoDB, Redis) walks it with once__field_get. So
 * a field added to once_record or once_push_row is added here, to the
 * schemas (sqlite_schema.c, pg_schema.c) and to the SQL writers' statements,
 * and no reader keeps a list of its own to forget.
 *
 * Invariant: SQLite's SQ_RECORD_COLS / SQ_PUSH_COLS and PostgreSQL's
 * PG_RECORD_COLS / PG_PUSH_COLS list their columns in the same order, so one
 * column index serves both.
 */
#include <stddef.h>
#include <string.h>

#include "store/store_int.h"

_Static_assert(sizeof(once_state) == sizeof(int) && sizeof(once_record_kind) == sizeof(int),
               "ONCE__FIELD_INT stores an int");

#define REC(m) offsetof(once_record, m)
const once__int_field once__record_ints[ONCE__RECORD_NINT] = {
    {REC(state), ONCE__FIELD_INT, 3, "st", "s"},
    {REC(kind), ONCE__FIELD_INT, 4, "kd", "k"},
    {REC(version), ONCE__FIELD_I64, 5, "v", "v"},
    {REC(generation), ONCE__FIELD_I64, 6, "g", "g"},
    {REC(fence), ONCE__FIELD_I64, 7, "f", "f"},
    {REC(step), ONCE__FIELD_I64, 8, "sp", "n"},
    {REC(lease_until), ONCE__FIELD_I64, 10, "lu", "u"},
    {REC(created_at), ONCE__FIELD_I64, 11, "ca", "ca"},
    {REC(updated_at), ONCE__FIELD_I64, 12, "ua", "ua"},
    {REC(finished_at), ONCE__FIELD_I64, 13, "fa", "fa"},
};
#undef REC

/* DynamoDB keeps push rows as JSON (dy_push.c), Redis as hashes of its own
 * (redis_push.c): no
 * attribute names here. */
#define ROW(m) offsetof(once_push_row, m)
const once__int_field once__push_row_ints[ONCE__PUSH_ROW_NINT] = {
    {ROW(since), ONCE__FIELD_I64, 1, NULL, NULL},
    {ROW(delivered), ONCE__FIELD_I64, 2, NULL, NULL},
    {ROW(target), ONCE__FIELD_I64, 3, NULL, NULL},
    {ROW(attempts), ONCE__FIELD_I64, 4, NULL, NULL},
    {ROW(next_attempt_at), ONCE__FIELD_I64, 5, NULL, NULL},
    {ROW(lease_until), ONCE__FIELD_I64, 7, NULL, NULL},
    {ROW(disabled), ONCE__FIELD_BOOL, 8, NULL, NULL},
    {ROW(deliveries), ONCE__FIELD_I64, 10, NULL, NULL},
    {ROW(retries), ONCE__FIELD_I64, 11, NULL, NULL},
    {ROW(failures), ONCE__FIELD_I64, 12, NULL, NULL},
};
#undef ROW

void once__field_set(void *obj, const once__int_field *f, int64_t v)
{
    char *at = (char *)obj + f->off;
    int i;

    switch (f->type) {
    case ONCE__FIELD_I64:
        memcpy(at, &v, sizeof v);
        return;
    case ONCE__FIELD_INT:
        i = (int)v;
        memcpy(at, &i, sizeof i);
        return;
    case ONCE__FIELD_BOOL:
        i = v != 0;
        memcpy(at, &i, sizeof i);
        return;
    }
}

int64_t once__field_get(const void *obj, const once__int_field *f)
{
    const char *at = (const char *)obj + f->off;
    int64_t v;
    int i;

    if (f->type == ONCE__FIELD_I64) {
        memcpy(&v, at, sizeof v);
        return v;
    }
    memcpy(&i, at, sizeof i);
    return i;
}
