/*
 * sqlite_lease.c -- renew, the sqlite backend's lease-only write (store.h).
 *
 * A renewal is queued like every write, so a heartbeat over many leases
 * shares the group commit (sqlite_commit.c) with the turns' own writes
 * instead of paying an fsync each. It is one UPDATE of lease_until guarded
 * by key, fence, owner and state; the tasks_lease index follows by itself,
 * so expired_leases answers from the new value at once.
 *
 * What it costs: lease_until is an integer column stored before the text
 * columns, and SQLite writes only the pages whose bytes changed, so a
 * renewal adds two pages to the WAL (the row's cell and its tasks_lease
 * entry) whatever the size of task_json; the overflow pages of a large
 * record are not rewritten. SQLite does still rebuild the row image in
 * memory (linear in its size, CPU only): making that constant too would
 * take the lease out of the tasks row (a schema change).
 *
 * Only when the UPDATE matches nothing does a second statement run, in the
 * same transaction under the same write lock, to tell a live record whose
 * fence, owner or state moved (EFENCED) from no record (ENOTFOUND; a
 * tombstone lives in its own table, so it is "no record" here too).
 *
 * The UPDATE's text lives here rather than in once__sq_sql: this file
 * prepares it into the writer's cache slot SQ_TASK_RENEW itself.
 */
#include "store/sqlite_int.h"
#include "store/store_int.h"

/* ?1 principal, ?2 task_id, ?3 owner, ?4 fence, ?5 until. "state IN (1, 2)"
 * is once__state_renewable. */
static const char renew_sql[] = "UPDATE tasks SET lease_until=?5 "
                                "WHERE principal=?1 AND task_id=?2 AND fence=?4 "
                                "AND lease_owner=?3 AND state IN (1, 2)";

/* The writer's cached renew statement, prepared on first use. */
static int renew_stmt(sq_conn *w, sqlite3_stmt **out)
{
    sqlite3_stmt **slot = &w->st[SQ_TASK_RENEW];
    int src = *slot ? SQLITE_OK : once__sq_prepare(w->db, renew_sql, slot);
    if (src != SQLITE_OK) {
        sqlite3_finalize(*slot);
        *slot = NULL;
    }
    *out = *slot;
    return src == SQLITE_OK ? ONCE_OK : once__db_err(src);
}

/* Bind ?1 ?2 (the key) and step st once: SQLITE_ROW, SQLITE_DONE or an
 * error code. The caller resets st. */
static int step_key(sqlite3_stmt *st, const sq_op *op)
{
    int src = once__sq_bind(st, 1, "ss", op->principal, op->task_id);
    return src == SQLITE_OK ? once__sq_step(st) : src;
}

/* *live = whether the key holds a record. */
static int holds_record(sq_conn *w, const sq_op *op, int *live)
{
    sqlite3_stmt *st;
    int rc = once__sq_stmt(w, SQ_TASK_HEAD, &st);
    if (rc != ONCE_OK)
        return rc;
    int src = step_key(st, op);
    int rrc = once__sq_reset(st);
    if (src != SQLITE_ROW && src != SQLITE_DONE)
        return once__db_err(src);
    *live = src == SQLITE_ROW;
    return rrc == SQLITE_OK ? ONCE_OK : once__db_err(rrc);
}

int once__sq_op_renew(sq_store *s, sq_conn *w, sq_op *op)
{
    sqlite3_stmt *st;
    int rc = renew_stmt(w, &st);
    if (rc != ONCE_OK)
        return rc;
    int src = once__sq_bind(st, 3, "sii", op->owner, op->fence, op->until);
    if (src == SQLITE_OK)
        src = step_key(st, op);
    int rrc = once__sq_reset(st);
    if (src != SQLITE_DONE)
        return once__db_err(src == SQLITE_ROW ? SQLITE_ERROR : src);
    if (rrc != SQLITE_OK)
        return once__db_err(rrc);
    int renewed = sqlite3_changes(w->db) == 1, live = 1;
    if (!renewed && (rc = holds_record(w, op, &live)) != ONCE_OK)
        return rc;
    return once__store_renew_result(&s->base, op->task_id, renewed, live);
}

int once__sq_renew(once_store *s, const char *principal, const char *task_id, const char *owner,
                   int64_t fence, int64_t until)
{
    sq_op op = {.kind = SQ_OP_RENEW, .principal = principal, .task_id = task_id,
                .owner = owner, .fence = fence, .until = until};
    return once__sq_submit((sq_store *)s, &op);
}
