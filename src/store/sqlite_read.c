/*
 * sqlite_read.c -- the read slots of the sqlite backend, on reader
 * connections from the pool so they never wait behind a group commit (WAL
 * gives each statement a snapshot while the writer commits).
 *
 * A read either answers from what it read or fails with ONCE_ESTORE /
 * ONCE_EBUSY: a failed step is never taken for "no row" (ENOTFOUND, an empty
 * list), because callers draw verdicts from those. SQLITE_BUSY is retried
 * a few times (after the busy handler) before it becomes ONCE_EBUSY.
 *
 * load reads the record, then the tombstone, each in its own snapshot. That
 * is still linearizable: a key only moves none -> record -> tombstone ->
 * none, so "no record, then no tombstone" means the key was empty at some
 * instant between the two reads.
 */
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include "core/alloc_int.h"
#include "store/pack.h"
#include "store/sqlite_int.h"
#include "store/store_int.h"

int once__sq_text(char *dst, size_t cap, sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) != SQLITE_TEXT)
        return ONCE_ECORRUPT;
    const unsigned char *t = sqlite3_column_text(st, col);
    size_t n = (size_t)sqlite3_column_bytes(st, col);
    if (!t)
        return ONCE_ENOMEM;
    if (n >= cap)
        return ONCE_ECORRUPT;
    memcpy(dst, t, n);
    dst[n] = '\0';
    return ONCE_OK;
}

/* *out = a copy of the column (NULL for SQL NULL when nullable). */
static int dup_text(char **out, sqlite3_stmt *st, int col, int nullable)
{
    *out = NULL;
    int type = sqlite3_column_type(st, col);
    if (type == SQLITE_NULL)
        return nullable ? ONCE_OK : ONCE_ECORRUPT;
    if (type != SQLITE_TEXT)
        return ONCE_ECORRUPT;
    const unsigned char *t = sqlite3_column_text(st, col);
    if (!t)
        return ONCE_ENOMEM;
    *out = once_strndup((const char *)t, (size_t)sqlite3_column_bytes(st, col));
    return *out ? ONCE_OK : ONCE_ENOMEM;
}

/* A text column a row reader copies into a struct: at off, a char array
 * of cap bytes, or (cap 0) an owned copy that may be NULL for SQL NULL
 * where nullable. A row's columns are listed once, in one table per type. */
typedef struct text_col {
    size_t off, cap;
    int col, nullable;
} text_col;

#define TEXT_FIXED(type, m, col) {offsetof(type, m), sizeof(((type *)0)->m), col, 0}
#define TEXT_OWNED(type, m, col, nullable) {offsetof(type, m), 0, col, nullable}

static const text_col record_texts[] = {
    TEXT_FIXED(once_record, principal, 0),      TEXT_FIXED(once_record, task_id, 1),
    TEXT_FIXED(once_record, context_id, 2),     TEXT_FIXED(once_record, lease_owner, 9),
    TEXT_OWNED(once_record, digests, 14, 0),    TEXT_OWNED(once_record, task_json, 15, 0),
    TEXT_OWNED(once_record, checkpoint, 16, 1), TEXT_OWNED(once_record, push_json, 17, 1),
    TEXT_OWNED(once_record, journal, 18, 1),
};

static const text_col tomb_texts[] = {
    TEXT_FIXED(once_tombstone, principal, 0),
    TEXT_FIXED(once_tombstone, task_id, 1),
    TEXT_FIXED(once_tombstone, first_digest, 2),
};

/* The n text columns of cols, from column c on, into obj; stops at the
 * first that fails (what was copied before stays for the caller to free). */
static int row_texts(sqlite3_stmt *st, int c, void *obj, const text_col *cols, size_t n)
{
    int rc = ONCE_OK;
    for (size_t i = 0; rc == ONCE_OK && i < n; i++) {
        char *at = (char *)obj + cols[i].off;
        rc = cols[i].cap ? once__sq_text(at, cols[i].cap, st, c + cols[i].col)
                         : dup_text((char **)(void *)at, st, c + cols[i].col, cols[i].nullable);
    }
    return rc;
}

/* A compacted task's packed column (sqlite_write.c pack_texts, pack.h)
 * back into its task_json and journal. */
static int unpack_texts(sqlite3_stmt *st, int col, once_record *r)
{
    const unsigned char *p = sqlite3_column_blob(st, col);
    size_t n = (size_t)sqlite3_column_bytes(st, col);
    if (!p)
        return n == 0 ? ONCE_ECORRUPT : ONCE_ENOMEM;
    return once__unpack_texts(p, n, r);
}

int once__sq_row_record(sqlite3_stmt *st, int c, once_record *r)
{
    memset(r, 0, sizeof *r);
    int rc = row_texts(st, c, r, record_texts, sizeof record_texts / sizeof record_texts[0]);
    if (rc == ONCE_OK && sqlite3_column_type(st, c + SQ_TASK_PACKED_COL) != SQLITE_NULL)
        rc = unpack_texts(st, c + SQ_TASK_PACKED_COL, r);
    if (rc != ONCE_OK) {
        once_record_clear(r);
        return rc;
    }
    for (int k = 0; k < ONCE__RECORD_NINT; k++) {
        const once__int_field *f = &once__record_ints[k];
        once__field_set(r, f, sqlite3_column_int64(st, c + f->col));
    }
    return ONCE_OK;
}

int once__sq_row_tomb(sqlite3_stmt *st, int c, once_tombstone *t)
{
    memset(t, 0, sizeof *t);
    int rc = row_texts(st, c, t, tomb_texts, sizeof tomb_texts / sizeof tomb_texts[0]);
    if (rc != ONCE_OK) {
        memset(t, 0, sizeof *t);
        return rc;
    }
    t->finished_at = sqlite3_column_int64(st, c + 3);
    t->expired_at = sqlite3_column_int64(st, c + 4);
    return ONCE_OK;
}

int once__sq_with_reader(sq_store *s, const char *what, sq_read_fn fn, void *arg)
{
    int rc = ONCE_EBUSY;
    for (int i = 0; rc == ONCE_EBUSY && i <= SQ_BUSY_RETRIES; i++) {
        if (i)
            once__db_sleep_ms(1 << i);
        sq_conn *c;
        rc = once__sq_reader(s, &c);
        if (rc != ONCE_OK)
            continue;
        rc = fn(c, arg);
        if (rc == ONCE_ESTORE || rc == ONCE_EBUSY || rc == ONCE_ENOMEM || rc == ONCE_ECORRUPT)
            once__sq_seterr(s, c->db, what, rc);
        once__sq_release(s, c);
    }
    return rc;
}

/* Bind ?1, ?2 to a key and step once: ONCE_OK on a row (st stays on it),
 * ONCE_ENOTFOUND when there is none, else an error. */
static int keyed_row(sq_conn *c, sq_stmt_id id, const char *principal, const char *task_id,
                     sqlite3_stmt **out)
{
    int rc = once__sq_stmt(c, id, out);
    if (rc != ONCE_OK)
        return rc;
    int src = once__sq_bind(*out, 1, "ss", principal, task_id);
    if (src == SQLITE_OK)
        src = once__sq_step(*out);
    if (src == SQLITE_ROW)
        return ONCE_OK;
    return src == SQLITE_DONE ? ONCE_ENOTFOUND : once__db_err(src);
}

/* Reset st; a failed reset turns a result into an error (the row may not
 * have been the statement's last word). */
static int end_stmt(sqlite3_stmt *st, int rc)
{
    if (!st)
        return rc;
    int rrc = once__sq_reset(st);
    return rrc == SQLITE_OK || (rc != ONCE_OK && rc != ONCE_ENOTFOUND && rc != ONCE_ETOMBSTONE)
               ? rc
               : once__db_err(rrc);
}

/* Arguments and outputs of one read op, on the caller's stack (the op runs
 * on the caller's thread; nothing is shared). */
typedef struct load_arg {
    const char *principal, *task_id;
    once_record *out;
    once_tombstone *tomb;
} load_arg;

static int load_fn(sq_conn *c, void *p)
{
    load_arg *a = p;
    sqlite3_stmt *st = NULL;
    int rc = keyed_row(c, SQ_TASK_GET, a->principal, a->task_id, &st);
    if (rc == ONCE_OK)
        rc = once__sq_row_record(st, 0, a->out);
    rc = end_stmt(st, rc);
    if (rc != ONCE_ENOTFOUND) {
        if (rc != ONCE_OK)
            once_record_clear(a->out);
        return rc;
    }
    st = NULL;
    rc = keyed_row(c, SQ_TOMB_GET, a->principal, a->task_id, &st);
    if (rc == ONCE_OK) {
        once_tombstone t;
        rc = once__sq_row_tomb(st, 0, &t);
        if (rc == ONCE_OK) {
            if (a->tomb)
                *a->tomb = t;
            rc = ONCE_ETOMBSTONE;
        }
    }
    rc = end_stmt(st, rc);
    if (rc != ONCE_ETOMBSTONE && a->tomb)
        memset(a->tomb, 0, sizeof *a->tomb);
    return rc;
}

int once__sq_load(sq_store *s, const char *principal, const char *task_id, once_record *out,
                  once_tombstone *tomb)
{
    memset(out, 0, sizeof *out);
    if (tomb)
        memset(tomb, 0, sizeof *tomb);
    load_arg a = {principal, task_id, out, tomb};
    return once__sq_with_reader(s, "load", load_fn, &a);
}

/* Step st (its arguments bound) to its end, appending one element of
 * size bytes per row to the array at pv (T **, *n in use) through decode,
 * which fills a zeroed element. Ends the statement. On failure the
 * elements decoded so far are dropped (drop frees what decode allocated
 * in one; NULL when nothing) and the array freed, so the list is empty
 * and a retry starts afresh. */
typedef int (*row_fn)(sqlite3_stmt *st, void *elem);

static int collect(sqlite3_stmt *st, void *pv, size_t *n, size_t size, row_fn decode,
                   void (*drop)(void *elem))
{
    size_t cap = 0;
    int rc = ONCE_OK, src;
    char *v = NULL;
    while ((src = once__sq_step(st)) == SQLITE_ROW) {
        if (*n == cap && (rc = once__grow(pv, &cap, size, 16)) != ONCE_OK)
            break;
        memcpy(&v, pv, sizeof v);
        memset(v + *n * size, 0, size);
        if ((rc = decode(st, v + *n * size)) != ONCE_OK) {
            if (drop)
                drop(v + *n * size);   /* what decode filled before it failed */
            break;
        }
        (*n)++;
    }
    if (rc == ONCE_OK && src != SQLITE_DONE)
        rc = once__db_err(src);
    rc = end_stmt(st, rc);
    if (rc != ONCE_OK) {
        memcpy(&v, pv, sizeof v);
        for (size_t i = 0; drop && i < *n; i++)
            drop(v + i * size);
        once_free(v);
        v = NULL;
        memcpy(pv, &v, sizeof v);
        *n = 0;
    }
    return rc;
}

/* A list read: one statement, bound from types and the arguments that
 * follow them in read_rows' call, its rows collected as collect does. */
typedef struct rows_arg {
    sq_stmt_id id;
    const char *types;
    va_list *args;
    void *pv;
    size_t *n, size;
    row_fn decode;
    void (*drop)(void *elem);
} rows_arg;

static int rows_fn(sq_conn *c, void *p)
{
    rows_arg *a = p;
    sqlite3_stmt *st;
    va_list ap;
    va_copy(ap, *a->args);   /* a retry binds them again */
    int rc = once__sq_stmt_vbind(c, a->id, &st, a->types, ap);
    va_end(ap);
    return rc == ONCE_OK ? collect(st, a->pv, a->n, a->size, a->decode, a->drop) : rc;
}

static int read_rows(sq_store *s, const char *what, void *pv, size_t *n, size_t size,
                     row_fn decode, void (*drop)(void *elem), sq_stmt_id id, const char *types,
                     ...)
{
    va_list ap;
    va_start(ap, types);
    rows_arg a = {id, types, &ap, pv, n, size, decode, drop};
    int rc = once__sq_with_reader(s, what, rows_fn, &a);
    va_end(ap);
    return rc;
}

static int event_row(sqlite3_stmt *st, void *elem)
{
    once_event *e = elem;
    e->generation = sqlite3_column_int64(st, 0);
    return dup_text(&e->payload, st, 1, 0);
}

static void event_drop(void *elem)
{
    once_free(((once_event *)elem)->payload);
}

int once__sq_events(sq_store *s, const char *principal, const char *task_id, int64_t after,
                    size_t max, once_event_list *out)
{
    memset(out, 0, sizeof *out);
    return read_rows(s, "events", &out->v, &out->n, sizeof *out->v, event_row, event_drop,
                     SQ_EVENTS_GET, "ssii", principal, task_id, after,
                     max == 0 || max > INT64_MAX ? (int64_t)-1 : (int64_t)max);
}

static int key_row(sqlite3_stmt *st, void *elem)
{
    once_key *k = elem;
    int rc = once__sq_text(k->principal, sizeof k->principal, st, 0);
    return rc == ONCE_OK ? once__sq_text(k->task_id, sizeof k->task_id, st, 1) : rc;
}

int once__sq_expired_leases(sq_store *s, int64_t now, size_t max, once_key_list *out)
{
    memset(out, 0, sizeof *out);
    if (max == 0)
        return ONCE_OK;
    return read_rows(s, "expired_leases", &out->v, &out->n, sizeof *out->v, key_row, NULL,
                     SQ_LEASES, "ii", now, max > INT64_MAX ? (int64_t)-1 : (int64_t)max);
}

typedef struct list_arg {
    const once_list_query *q;
    once_record_list *out;
} list_arg;

/* The statement for q's filter and cursor (sqlite_int.h orders them). */
static sq_stmt_id list_stmt(const once_list_query *q)
{
    return (sq_stmt_id)(SQ_LIST + (q->after_task_id ? 1 : 0) + (q->context_id ? 2 : 0) +
                        (q->state != ONCE_STATE_UNKNOWN ? 4 : 0));
}

static int list_fn(sq_conn *c, void *p)
{
    list_arg *a = p;
    const once_list_query *q = a->q;
    sqlite3_stmt *st;
    int rc = once__sq_stmt(c, list_stmt(q), &st);
    if (rc != ONCE_OK)
        return rc;
    int src = once__sq_bind(st, 1, "ssii", q->principal, q->context_id, (int64_t)q->state,
                            (int64_t)q->limit);
    if (src == SQLITE_OK && q->after_task_id)
        src = once__sq_bind_int64(st, 5, q->after_created_at);
    if (src == SQLITE_OK && q->after_task_id)
        src = once__sq_bind_text(st, 6, q->after_task_id);
    if (src == SQLITE_OK) {
        a->out->v = once_calloc(q->limit, sizeof *a->out->v);   /* limit <= ONCE_LIST_MAX */
        if (!a->out->v)
            rc = ONCE_ENOMEM;
    }
    while (rc == ONCE_OK && (src == SQLITE_OK || src == SQLITE_ROW) && a->out->n < q->limit) {
        if ((src = once__sq_step(st)) != SQLITE_ROW)
            break;
        rc = once__sq_row_record(st, 0, &a->out->v[a->out->n]);
        if (rc == ONCE_OK)
            a->out->n++;
    }
    if (rc == ONCE_OK && src != SQLITE_DONE && src != SQLITE_ROW)
        rc = once__db_err(src);
    rc = end_stmt(st, rc);
    if (rc != ONCE_OK || a->out->n == 0)
        once_record_list_clear(a->out);
    return rc;
}

int once__sq_list(sq_store *s, const once_list_query *q, once_record_list *out)
{
    memset(out, 0, sizeof *out);
    list_arg a = {q, out};
    return once__sq_with_reader(s, "list", list_fn, &a);
}

typedef struct meta_arg {
    const char *name;
    char **out;
} meta_arg;

static int meta_fn(sq_conn *c, void *p)
{
    meta_arg *a = p;
    sqlite3_stmt *st;
    int rc = once__sq_stmt_bind(c, SQ_META_GET, &st, "s", a->name);
    if (rc != ONCE_OK)
        return rc;
    int src = once__sq_step(st);
    if (src == SQLITE_ROW)
        rc = dup_text(a->out, st, 0, 0);
    else
        rc = src == SQLITE_DONE ? ONCE_ENOTFOUND : once__db_err(src);
    rc = end_stmt(st, rc);
    if (rc != ONCE_OK) {
        once_free(*a->out);
        *a->out = NULL;
    }
    return rc;
}

int once__sq_meta_get(sq_store *s, const char *name, char **out)
{
    *out = NULL;
    meta_arg a = {name, out};
    return once__sq_with_reader(s, "meta", meta_fn, &a);
}

typedef struct gens_arg {
    const once_key *keys;
    size_t n;
    int64_t *gens;
} gens_arg;

/* Each key's head on one reader connection inside one read transaction:
 * every generation from the same snapshot, and one connection and
 * prepared statement for the shared poller's whole round. */
static int gens_fn(sq_conn *c, void *p)
{
    gens_arg *a = p;
    int rc = once__sq_run(c, SQ_BEGIN_READ);
    for (size_t i = 0; rc == ONCE_OK && i < a->n; i++) {
        sqlite3_stmt *st = NULL;
        rc = keyed_row(c, SQ_TASK_HEAD, a->keys[i].principal, a->keys[i].task_id, &st);
        a->gens[i] = rc == ONCE_OK ? sqlite3_column_int64(st, 1) : -1;
        rc = end_stmt(st, rc);
        if (rc == ONCE_ENOTFOUND)
            rc = ONCE_OK;
    }
    return once__sq_abort(c) == 0 ? rc : ONCE_ESTORE;   /* ends the read */
}

int once__sq_generations(sq_store *s, const once_key *keys, size_t n, int64_t *gens)
{
    gens_arg a = {keys, n, gens};
    return once__sq_with_reader(s, "generations", gens_fn, &a);
}
