/*
 * pg_check.c -- the PostgreSQL backend's integrity check.
 *
 * One REPEATABLE READ, READ ONLY transaction, so the report describes one
 * consistent snapshot even while other replicas write; rows are walked with
 * server-side cursors in batches, so a large registry is never loaded at
 * once. Events are summarised per key in SQL (count, min, max); the primary
 * key makes generations unique, which is what once__check_gapless and
 * once__check_compacted need; a trimmed row's event (pg_compact.c) is
 * counted as the row it stands for.
 * Delivery rows are compared with push_json in the same snapshot
 * (pg_push.c).
 */
#include <stdio.h>
#include <string.h>

#include "store/pg/pg_int.h"
#include "store/store_int.h"

#define CHECK_BATCH "500"

static const char rows_sql[] =
    "DECLARE once_check_rows BINARY NO SCROLL CURSOR FOR "
    "SELECT t.principal, t.task_id, t.context_id, t.state, t.kind, t.version, t.generation, "
    "t.fence, t.step, t.lease_owner, t.lease_until, t.created_at, t.updated_at, "
    "t.finished_at, t.digests IS NOT NULL, t.task_json IS NOT NULL, t.tomb, t.first_digest, "
    "t.expired_at, coalesce(e.n, 0), coalesce(e.mn, 0), coalesce(e.mx, 0) "
    "FROM once_tasks t LEFT JOIN (SELECT principal, task_id, count(*)::int8 AS n, "
    "min(generation) AS mn, max(generation) AS mx FROM (SELECT principal, task_id, generation "
    "FROM once_events UNION ALL SELECT principal, task_id, trimmed FROM once_tasks "
    "WHERE trimmed IS NOT NULL) g "
    "GROUP BY principal, task_id) e ON e.principal = t.principal AND e.task_id = t.task_id";

static const char orphans_sql[] =
    "DECLARE once_check_orphans BINARY NO SCROLL CURSOR FOR "
    "SELECT e.principal, e.task_id, count(*)::int8 FROM once_events e "
    "WHERE NOT EXISTS (SELECT 1 FROM once_tasks t "
    "WHERE t.principal = e.principal AND t.task_id = e.task_id) "
    "GROUP BY e.principal, e.task_id";

enum { C_DIGESTS = 14, C_TASK_JSON, C_TOMB, C_FIRST_DIGEST, C_EXPIRED_AT, C_N, C_MIN, C_MAX };

static int one_row(pg_store *s, pg_conn *c, const PGresult *r, int i, once_check_report *rep)
{
    static char empty[] = "";
    size_t nev = (size_t)once__pg_i64(r, i, C_N);
    once_record rec;

    (void)s;
    (void)c;
    memset(&rec, 0, sizeof rec);
    if (once__pg_fixed(r, i, 0, rec.principal, sizeof rec.principal) != ONCE_OK ||
        once__pg_fixed(r, i, 1, rec.task_id, sizeof rec.task_id) != ONCE_OK ||
        once__pg_fixed(r, i, 2, rec.context_id, sizeof rec.context_id) != ONCE_OK ||
        once__pg_fixed(r, i, 9, rec.lease_owner, sizeof rec.lease_owner) != ONCE_OK) {
        rep->bad_state++;
        once__check_problem(rep, "%.40s/%.40s: a key or name does not fit its field", rec.principal,
                            rec.task_id);
        return ONCE_OK;
    }
    if (once__pg_i64(r, i, C_TOMB)) {
        once_tombstone t;
        memset(&t, 0, sizeof t);
        memcpy(t.principal, rec.principal, sizeof t.principal);
        memcpy(t.task_id, rec.task_id, sizeof t.task_id);
        if (once__pg_fixed(r, i, C_FIRST_DIGEST, t.first_digest, sizeof t.first_digest) !=
            ONCE_OK) {
            rep->bad_state++;
            once__check_problem(rep, "%s/%s: tombstone digest does not fit", t.principal,
                                t.task_id);
        }
        t.finished_at = once__pg_i64(r, i, 13);
        t.expired_at = once__pg_i64(r, i, C_EXPIRED_AT);
        once__check_tombstone(rep, &t, nev);
        return ONCE_OK;
    }
    rec.state = (once_state)once__pg_i64(r, i, 3);
    rec.kind = (once_record_kind)once__pg_i64(r, i, 4);
    rec.version = once__pg_i64(r, i, 5);
    rec.generation = once__pg_i64(r, i, 6);
    rec.fence = once__pg_i64(r, i, 7);
    rec.step = once__pg_i64(r, i, 8);
    rec.lease_until = once__pg_i64(r, i, 10);
    rec.created_at = once__pg_i64(r, i, 11);
    rec.updated_at = once__pg_i64(r, i, 12);
    rec.finished_at = once__pg_i64(r, i, 13);
    rec.digests = once__pg_i64(r, i, C_DIGESTS) ? empty : NULL;
    rec.task_json = once__pg_i64(r, i, C_TASK_JSON) ? empty : NULL;
    int64_t lo = once__pg_i64(r, i, C_MIN), hi = once__pg_i64(r, i, C_MAX);
    /* A compacted task (pg_compact.c) is whole with its last event alone. */
    once__check_record(rep, &rec, nev, hi,
                       once__check_gapless(nev, lo, hi) ||
                           once__check_compacted(&rec, nev, lo, hi));
    return ONCE_OK;
}

static int one_orphan(pg_store *s, pg_conn *c, const PGresult *r, int i, once_check_report *rep)
{
    char principal[ONCE_PRINCIPAL_MAX + 1], task_id[ONCE_ID_MAX + 1];

    (void)s;
    (void)c;
    if (once__pg_fixed(r, i, 0, principal, sizeof principal) != ONCE_OK)
        snprintf(principal, sizeof principal, "?");
    if (once__pg_fixed(r, i, 1, task_id, sizeof task_id) != ONCE_OK)
        snprintf(task_id, sizeof task_id, "?");
    once__check_orphans(rep, principal, task_id, (size_t)once__pg_i64(r, i, 2));
    return ONCE_OK;
}

int once__pg_walk(pg_store *s, pg_conn *c, const char *declare, const char *cursor,
                  pg_walk_fn fn, once_check_report *rep)
{
    char fetch[96];
    PGresult *r;
    int rc, i, n;

    rc = once__pg_simple_done(s, c, declare);
    if (rc != ONCE_OK)
        return rc;
    snprintf(fetch, sizeof fetch, "FETCH " CHECK_BATCH " FROM %s", cursor);
    do {
        rc = once__pg_simple(s, c, fetch, &r);
        if (rc != ONCE_OK)
            return rc;
        n = PQntuples(r);
        for (i = 0; rc == ONCE_OK && i < n; i++)
            rc = fn(s, c, r, i, rep);
        PQclear(r);
    } while (rc == ONCE_OK && n > 0);
    if (rc != ONCE_OK)
        return rc;
    snprintf(fetch, sizeof fetch, "CLOSE %s", cursor);
    return once__pg_simple_done(s, c, fetch);
}

static int check_fn(pg_store *s, pg_conn *c, void *arg)
{
    once_check_report *rep = arg;
    int rc;

    memset(rep, 0, sizeof *rep);
    rc = once__pg_simple_done(s, c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    if (rc != ONCE_OK)
        return rc;
    rc = once__pg_walk(s, c, rows_sql, "once_check_rows", one_row, rep);
    if (rc == ONCE_OK)
        rc = once__pg_walk(s, c, orphans_sql, "once_check_orphans", one_orphan, rep);
    if (rc == ONCE_OK)
        rc = once__pg_check_push(s, c, rep);
    if (rc == ONCE_OK)
        rc = once__pg_simple_done(s, c, "COMMIT");
    return rc; /* release rolls back whatever is left open */
}

int once__pg_check(once_store *s, once_check_report *rep)
{
    return once__pg_run((pg_store *)s, check_fn, rep);
}
