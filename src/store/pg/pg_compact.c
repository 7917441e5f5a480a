/*
 * pg_compact.c -- the PostgreSQL backend's compaction of finished tasks
 * (store.h, the events slot's "Compaction"; docs/design.md section 7),
 * run by the sweep slot after retention (pg_write.c).
 *
 * A task finished compact_ms ago keeps no event row: the row's trimmed
 * column holds the generation of its last event, which a read of its
 * events gives back with an empty payload (PG_EVENTS: "is there an event
 * after generation g" answers as before, and the check counts the task
 * whole, as SQLite's one kept row). Its task_json and journal are
 * deflated into packed (pack.h) when that is smaller, and its first_digest
 * is left for the sweep to derive where the digest line gives it; a read
 * unpacks the texts (pg_conn.c). What stays is about 900 bytes of a
 * trivial task, indexes included (bench/README.md, "Bytes at rest"). A
 * task a push delivery is still owed from is passed over: the deliverer
 * reads its events.
 *
 * The pass walks the finished tasks in the sweep index's order
 * (finished_at, principal, task_id) from a mark in the handle, in batches
 * of the sweep's max, each one transaction (PG_COMPACT locks and trims
 * them, PG_TRIM rewrites each row, COMMIT), until a batch comes back short
 * or after PG_COMPACT_ROUNDS. The mark moves only when a batch committed:
 * a batch that failed, or whose COMMIT is in doubt, is walked again by the
 * next pass, and doing it twice is harmless (a trimmed task loses nothing
 * more, a trimmed and packed one is not written again). A restarted onced starts from
 * the beginning and finds those done with nothing to do but the read.
 *
 * Rows another transaction holds are passed over (SKIP LOCKED in
 * PG_COMPACT): another replica's pass compacts them, and a task being
 * written is left whole, which is only bytes (an update writes its texts
 * back unpacked anyway). Replicas each keep their own mark and walk all
 * the finished tasks, the second finding them done.
 */
#include <string.h>

#include "store/pg/pg_int.h"
#include "store/store_int.h"

/* PG_COMPACT's columns. */
enum { C_PRINCIPAL, C_TASK_ID, C_FINISHED_AT, C_TASK_JSON, C_JOURNAL, C_UNTRIMMED };

typedef struct compact_arg {
    int64_t before; /* finished before this: compacted */
    size_t max;     /* tasks per batch */
    pg_mark from;   /* where the last committed batch stopped */
    pg_mark to;     /* out: where this one stopped (once committed) */
    size_t seen;    /* out: the tasks it looked at */
} compact_arg;

/* Row i trimmed (PG_COMPACT deleted its events) and its texts into packed,
 * when the row brought them (not owed, not packed already) and deflate
 * makes them smaller; a row already both is not written. */
static int trim_row(pg_store *s, pg_conn *c, const PGresult *r, int i, const pg_mark *key)
{
    const char *journal = NULL;
    unsigned char *buf = NULL;
    size_t n = 0, jl = 0;
    pg_params p;
    int rc;

    if (!PQgetisnull(r, i, C_TASK_JSON)) {
        if (!PQgetisnull(r, i, C_JOURNAL)) {
            journal = PQgetvalue(r, i, C_JOURNAL);
            jl = (size_t)PQgetlength(r, i, C_JOURNAL);
        }
        rc = once__pack_texts(&s->zip, PQgetvalue(r, i, C_TASK_JSON),
                              (size_t)PQgetlength(r, i, C_TASK_JSON), journal, jl, &buf, &n);
        if (rc != ONCE_OK && rc != ONCE_ERANGE) /* ERANGE: it would not be smaller */
            return rc;
    }
    if (buf == NULL && once__pg_i64(r, i, C_UNTRIMMED) == 0)
        return ONCE_OK;
    once__pg_p_init(&p);
    once__pg_p_str(&p, key->principal);
    once__pg_p_str(&p, key->task_id);
    if (buf != NULL)
        once__pg_p_bytes(&p, buf, n);
    else
        once__pg_p_null(&p);
    rc = once__pg_exec_done(s, c, PG_TRIM, &p);
    once_free(buf);
    return rc;
}

/* Row i's place on the order. */
static int row_mark(const PGresult *r, int i, pg_mark *m)
{
    int rc = once__pg_fixed(r, i, C_PRINCIPAL, m->principal, sizeof m->principal);

    if (rc == ONCE_OK)
        rc = once__pg_fixed(r, i, C_TASK_ID, m->task_id, sizeof m->task_id);
    m->finished_at = once__pg_i64(r, i, C_FINISHED_AT);
    return rc;
}

/* One batch, one transaction; once__pg_run runs it again from a.from on a
 * connection that broke before COMMIT. */
static int batch_fn(pg_store *s, pg_conn *c, void *arg)
{
    compact_arg *a = arg;
    pg_mark at = a->from;
    pg_params p;
    PGresult *r;
    int rc, i, n = 0;

    a->seen = 0;
    if ((rc = once__pg_begin(s, c)) != ONCE_OK)
        return rc;
    once__pg_p_init(&p);
    once__pg_p_i64(&p, a->before);
    once__pg_p_i64(&p, a->from.finished_at);
    once__pg_p_str(&p, a->from.principal);
    once__pg_p_str(&p, a->from.task_id);
    once__pg_p_i64(&p, a->max > INT64_MAX ? INT64_MAX : (int64_t)a->max);
    if ((rc = once__pg_exec(s, c, PG_COMPACT, &p, &r)) != ONCE_OK)
        return rc; /* release rolls the transaction back */
    n = PQntuples(r);
    for (i = 0; rc == ONCE_OK && i < n; i++) {
        rc = row_mark(r, i, &at);
        if (rc == ONCE_OK)
            rc = trim_row(s, c, r, i, &at);
    }
    PQclear(r);
    if (rc == ONCE_OK)
        rc = once__pg_commit(s, c);
    if (rc == ONCE_OK) {
        a->to = at;
        a->seen = (size_t)n;
    }
    return rc;
}

void once__pg_compact(pg_store *s, int64_t now, size_t max)
{
    /* One pass per handle at a time: a sweep that finds another running
     * (several engines on one handle) leaves the work to it rather than
     * walk the same tasks behind it. */
    if (s->compact_ms < 0 || max == 0 || pthread_mutex_trylock(&s->cmu) != 0)
        return;
    for (int i = 0; i < PG_COMPACT_ROUNDS; i++) {
        compact_arg a;
        memset(&a, 0, sizeof a);
        a.before = now - s->compact_ms;
        a.max = max;
        a.from = s->mark;
        if (once__pg_run(s, batch_fn, &a) != ONCE_OK)
            break;
        s->mark = a.to;
        if (a.seen < max)
            break;
    }
    pthread_mutex_unlock(&s->cmu);
}
