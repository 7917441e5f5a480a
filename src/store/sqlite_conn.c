/*
 * sqlite_conn.c -- connections of the sqlite backend: opening one with the
 * handle's settings, its lazily prepared statement cache, ending a
 * transaction whatever state it was left in, and the reader pool.
 *
 * A connection whose ROLLBACK failed is closed rather than reused:
 * sqlite3_close_v2 rolls back what is open, so no later op can commit on
 * top of a half-done one. The pool hands each reader to one thread at a
 * time (SQLITE_OPEN_NOMUTEX is then safe) and keeps at most
 * SQ_IDLE_READERS idle.
 */
#include <stdio.h>
#include <string.h>

#include "store/sqlite_int.h"
#include "store/store_int.h"

int once__sq_conn_close(sq_conn *c)
{
    if (!c)
        return ONCE_OK;
    for (int i = 0; i < SQ_NSTMT; i++)
        sqlite3_finalize(c->st[i]);
    int src = sqlite3_close_v2(c->db);
    once_free(c);
    return src == SQLITE_OK ? ONCE_OK : once__db_err(src);
}

int once__sq_conn_open(sq_store *s, int writer, int create, sq_conn **out)
{
    *out = NULL;
    sq_conn *c = once_calloc(1, sizeof *c);
    if (!c)
        return ONCE_ENOMEM;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0) |
                s->open_flags;
    int rc = once__sq_open(s->open_name, flags, &c->db);
    if (rc == SQLITE_OK)
        rc = once__sq_busy_timeout(c->db, s->busy_ms);
    if (rc == SQLITE_OK) {
        char sql[48];
        if (writer)
            snprintf(sql, sizeof sql, "PRAGMA synchronous=%s", s->sync->name);
        else
            snprintf(sql, sizeof sql, "PRAGMA query_only=1");
        rc = once__sq_exec(c->db, sql);
    }
    /* The writer checkpoints (SQLite's automatic checkpoint, inside the
     * COMMIT that passes the limit, on the group-commit leader) every
     * SQ_CKPT_PAGES WAL pages instead of SQLite's 1000: every write queued
     * behind that commit waits for the checkpoint, so smaller ones shorten
     * the tail (bench/README.md, "After run I: the writer checkpoints every
     * 500 WAL pages", has the p99 at each limit). It only sets a number on
     * an open connection: nothing to fail or inject. */
    if (rc == SQLITE_OK && writer)
        (void)sqlite3_wal_autocheckpoint(c->db, SQ_CKPT_PAGES);
    if (rc != SQLITE_OK) {
        once__sq_seterr(s, c->db, writer ? "open writer" : "open reader", once__db_err(rc));
        once__sq_conn_close(c);
        return once__db_err(rc);
    }
    *out = c;
    return ONCE_OK;
}

int once__sq_stmt(sq_conn *c, sq_stmt_id id, sqlite3_stmt **out)
{
    if (!c->st[id]) {
        int rc = once__sq_prepare(c->db, once__sq_sql[id], &c->st[id]);
        if (rc != SQLITE_OK) {
            sqlite3_finalize(c->st[id]);
            c->st[id] = NULL;
            *out = NULL;
            return once__db_err(rc);
        }
    }
    *out = c->st[id];
    return ONCE_OK;
}

int once__sq_stmt_vbind(sq_conn *c, sq_stmt_id id, sqlite3_stmt **out, const char *types,
                        va_list ap)
{
    int rc = once__sq_stmt(c, id, out);
    if (rc != ONCE_OK)
        return rc;
    int src = once__sq_vbind(*out, 1, types, ap);
    if (src == SQLITE_OK)
        return ONCE_OK;
    (void)once__sq_reset(*out);
    return once__db_err(src);
}

int once__sq_stmt_bind(sq_conn *c, sq_stmt_id id, sqlite3_stmt **out, const char *types, ...)
{
    va_list ap;

    va_start(ap, types);
    int rc = once__sq_stmt_vbind(c, id, out, types, ap);
    va_end(ap);
    return rc;
}

int once__sq_run_bound(sq_conn *c, sq_stmt_id id, const char *types, ...)
{
    sqlite3_stmt *st;
    va_list ap;

    va_start(ap, types);
    int rc = once__sq_stmt_vbind(c, id, &st, types, ap);
    va_end(ap);
    return rc == ONCE_OK ? once__sq_finish(st, SQLITE_OK) : rc;
}

int once__sq_finish(sqlite3_stmt *st, int src)
{
    if (src == SQLITE_OK)
        src = once__sq_step(st);
    int rrc = once__sq_reset(st);
    if (src != SQLITE_DONE)
        return once__db_err(src == SQLITE_ROW ? SQLITE_ERROR : src);
    return rrc == SQLITE_OK ? ONCE_OK : once__db_err(rrc);
}

int once__sq_run(sq_conn *c, sq_stmt_id id)
{
    sqlite3_stmt *st;
    int rc = once__sq_stmt(c, id, &st);
    if (rc != ONCE_OK)
        return rc;
    int src = once__sq_step(st);
    int rrc = once__sq_reset(st);
    if (src != SQLITE_DONE && src != SQLITE_ROW)
        return once__db_err(src);
    return rrc == SQLITE_OK ? ONCE_OK : once__db_err(rrc);
}

int once__sq_abort(sq_conn *c)
{
    if (sqlite3_get_autocommit(c->db))
        return 0;
    (void)once__sq_run(c, SQ_ROLLBACK);
    return sqlite3_get_autocommit(c->db) ? 0 : -1;
}

int once__sq_reader(sq_store *s, sq_conn **out)
{
    pthread_mutex_lock(&s->pmu);
    sq_conn *c = s->idle;
    if (c) {
        s->idle = c->next;
        s->nidle--;
        c->next = NULL;
    }
    pthread_mutex_unlock(&s->pmu);
    if (c) {
        *out = c;
        return ONCE_OK;
    }
    return once__sq_conn_open(s, 0, 0, out);
}

void once__sq_release(sq_store *s, sq_conn *c)
{
    if (!c)
        return;
    if (once__sq_abort(c) != 0) {
        once__sq_conn_close(c);
        return;
    }
    pthread_mutex_lock(&s->pmu);
    if (s->nidle < SQ_IDLE_READERS) {
        c->next = s->idle;
        s->idle = c;
        s->nidle++;
        c = NULL;
    }
    pthread_mutex_unlock(&s->pmu);
    once__sq_conn_close(c);
}

void once__sq_seterr(sq_store *s, sqlite3 *db, const char *what, int rc)
{
    if (db)
        once__store_seterr(&s->base, "sqlite %s: %s (last sqlite message: %s)", what,
                           once_strerror(rc), sqlite3_errmsg(db));
    else
        once__store_seterr(&s->base, "sqlite %s: %s", what, once_strerror(rc));
}
