/*
 * sqlite_check.c -- the integrity check of the sqlite backend: every
 * record with a summary of its events, every tombstone, and events under
 * no task, and the push delivery rows against push_json
 * (sqlite_push.c), all read in one read transaction (one snapshot, so a
 * concurrent commit cannot show up as a gap). Counting is the shared
 * once__check_* accounting (store_int.h); generations are unique per key
 * (primary key), so count/min/max decide gaplessness.
 */
#include <string.h>

#include "store/sqlite_int.h"
#include "store/store_int.h"

static const char q_tasks[] =
    "SELECT " SQ_TASK_COLS ","
    " (SELECT count(*) FROM events e WHERE e.tid=t.rid),"
    " (SELECT min(generation) FROM events e WHERE e.tid=t.rid),"
    " (SELECT max(generation) FROM events e WHERE e.tid=t.rid),"
    " EXISTS(SELECT 1 FROM tombstones b WHERE b.principal=t.principal AND b.task_id=t.task_id)"
    " FROM tasks t";
/* Events are keyed by their task's rid, so none can sit under a tombstone's
 * key: the count column is 0, and events whose rid holds no task are the
 * orphans, named by that rid. */
static const char q_tombs[] =
    "SELECT principal, task_id, first_digest, finished_at, expired_at, 0 FROM tombstones";
static const char q_orphans[] =
    "SELECT '?', 'rid ' || tid, count(*) FROM events e"
    " WHERE NOT EXISTS(SELECT 1 FROM tasks t WHERE t.rid=e.tid) GROUP BY tid";

typedef int (*row_fn)(sqlite3_stmt *st, once_check_report *rep);

static int task_row(sqlite3_stmt *st, once_check_report *rep)
{
    once_record r;
    int rc = once__sq_row_record(st, 0, &r);
    if (rc == ONCE_ENOMEM)
        return rc;
    if (rc != ONCE_OK) {
        rep->records++;
        rep->bad_state++;
        once__check_problem(rep, "a task row does not decode (%s)", once_strerror(rc));
        return ONCE_OK;
    }
    size_t nev = (size_t)sqlite3_column_int64(st, SQ_TASK_NCOLS);
    int64_t lo = sqlite3_column_int64(st, SQ_TASK_NCOLS + 1);
    int64_t hi = sqlite3_column_int64(st, SQ_TASK_NCOLS + 2);
    once__check_record(rep, &r, nev, hi,
                       once__check_gapless(nev, lo, hi) || once__check_compacted(&r, nev, lo, hi));
    if (sqlite3_column_int(st, SQ_TASK_NCOLS + 3)) {
        rep->bad_state++;
        once__check_problem(rep, "%s/%s: both a record and a tombstone", r.principal, r.task_id);
    }
    once_record_clear(&r);
    return ONCE_OK;
}

static int tomb_row(sqlite3_stmt *st, once_check_report *rep)
{
    once_tombstone t;
    if (once__sq_row_tomb(st, 0, &t) != ONCE_OK) {
        rep->tombstones++;
        rep->bad_state++;
        once__check_problem(rep, "a tombstone row does not decode");
        return ONCE_OK;
    }
    once__check_tombstone(rep, &t, (size_t)sqlite3_column_int64(st, 5));
    return ONCE_OK;
}

static int orphan_row(sqlite3_stmt *st, once_check_report *rep)
{
    const unsigned char *p = sqlite3_column_text(st, 0);
    const unsigned char *t = sqlite3_column_text(st, 1);
    once__check_orphans(rep, p ? (const char *)p : "?", t ? (const char *)t : "?",
                        (size_t)sqlite3_column_int64(st, 2));
    return ONCE_OK;
}

static int scan(sq_conn *c, const char *sql, row_fn fn, once_check_report *rep)
{
    sqlite3_stmt *st;
    int src = once__sq_prepare(c->db, sql, &st);
    int rc = ONCE_OK;
    while (src == SQLITE_OK || src == SQLITE_ROW) {
        src = once__sq_step(st);
        if (src != SQLITE_ROW)
            break;
        rc = fn(st, rep);
        if (rc != ONCE_OK)
            break;
    }
    if (rc == ONCE_OK && src != SQLITE_DONE)
        rc = once__db_err(src);
    if (st && rc == ONCE_OK) {
        int rrc = once__sq_reset(st);
        if (rrc != SQLITE_OK)
            rc = once__db_err(rrc);
    }
    sqlite3_finalize(st);
    return rc;
}

int once__sq_check(sq_store *s, once_check_report *rep)
{
    memset(rep, 0, sizeof *rep);
    sq_conn *c;
    int rc = once__sq_reader(s, &c);
    if (rc != ONCE_OK)
        return rc;
    rc = once__sq_run(c, SQ_BEGIN_READ);
    if (rc == ONCE_OK)
        rc = scan(c, q_tasks, task_row, rep);
    if (rc == ONCE_OK)
        rc = scan(c, q_tombs, tomb_row, rep);
    if (rc == ONCE_OK)
        rc = scan(c, q_orphans, orphan_row, rep);
    if (rc == ONCE_OK)
        rc = once__sq_check_push(c, rep);
    if (rc == ONCE_OK)
        rc = once__sq_run(c, SQ_COMMIT);
    if (rc != ONCE_OK) {
        once__sq_seterr(s, c->db, "check", rc);
        memset(rep, 0, sizeof *rep);
    }
    once__sq_release(s, c);
    return rc;
}
