/*
 * sqlite_schema.c -- what the sqlite backend stores and every SQL text it
 * runs. Schema version lives in PRAGMA user_version (SQ_SCHEMA_VERSION).
 *
 * Creation is safe when several processes open one new file at once: the
 * switch to WAL is retried while another opener holds the lock, and the
 * tables are created inside BEGIN IMMEDIATE after re-reading user_version,
 * so exactly one opener creates them and the others see the final version.
 * Migration from an older version runs the same way: one opener adds what
 * the later versions brought (migrate[v]) in one transaction with the
 * version bump, the others wait on the lock and find the new version.
 *
 * Index choices follow the queries: tasks_lease is a covering partial index
 * for expired_leases (non-terminal rows with a lease), tasks_sweep a partial
 * index over terminal rows by finished_at. list has one statement and one
 * index per filter (none, context, state, both), each index the filter's
 * columns then the page order (created_at, task_id): a page is one seek and
 * a walk of the rows it returns, whatever else the principal stored, and
 * the cursor is a seek too. The list statements name their index (INDEXED
 * BY) so no statistics can move them to a scan. State numbers are
 * once_state's: 5..8 are the terminal states. push_due is a partial index
 * over exactly the rows a claim may want (enabled, behind their task).
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "store/sqlite_int.h"
#include "store/store_int.h"

/* The events of one write go in as one statement of up to four rows (a new
 * task's write has four): each statement costs its own preparation and
 * step besides its rows' B-tree inserts (bench/README.md, "Single steps the
 * code's comments cite"). ?1 is the task's rid. */
#define SQ_EVENT_ROWS "INSERT INTO events(tid, generation, payload) "
/* A list statement: ?1 principal, ?2 context, ?3 state, ?4 limit, ?5 ?6 the
 * cursor; a statement binds all six whether or not its filter reads them. */
#define SQ_LIST_SQL(index, filter)                                                  \
    "SELECT " SQ_TASK_COLS " FROM tasks INDEXED BY " index " WHERE principal=?1" filter \
    " ORDER BY created_at, task_id LIMIT ?4"
#define SQ_LIST_CURSOR " AND (created_at, task_id) > (?5, ?6)"
#define SQ_TASK_PARAMS "?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19"

const char *const once__sq_sql[SQ_NSTMT] = {
    [SQ_BEGIN] = "BEGIN IMMEDIATE",
    [SQ_COMMIT] = "COMMIT",
    [SQ_ROLLBACK] = "ROLLBACK",
    [SQ_SAVEPOINT] = "SAVEPOINT op",
    [SQ_RELEASE] = "RELEASE op",
    [SQ_ROLLBACK_TO] = "ROLLBACK TO op",
    [SQ_BEGIN_READ] = "BEGIN",
    [SQ_TASK_GET] = "SELECT " SQ_TASK_COLS " FROM tasks WHERE principal=?1 AND task_id=?2",
    [SQ_TOMB_GET] = "SELECT principal, task_id, first_digest, finished_at, expired_at "
                    "FROM tombstones WHERE principal=?1 AND task_id=?2",
    [SQ_TASK_HEAD] = "SELECT version, generation, rid FROM tasks WHERE principal=?1 AND task_id=?2",
    [SQ_TASK_INSERT] = "INSERT INTO tasks(" SQ_TASK_WRITE_COLS ") VALUES(" SQ_TASK_PARAMS
                       ") ON CONFLICT DO NOTHING",
    [SQ_TASK_UPDATE] = "UPDATE tasks SET context_id=?3, state=?4, kind=?5, version=?6, "
                       "generation=?7, fence=?8, step=?9, lease_owner=?10, lease_until=?11, "
                       "created_at=?12, updated_at=?13, finished_at=?14, digests=?15, "
                       "task_json=?16, checkpoint=?17, push_json=?18, journal=?19, "
                       "packed=NULL WHERE principal=?1 AND task_id=?2 AND version=?20",
    [SQ_EVENT_INSERT] = SQ_EVENT_ROWS "VALUES(?1,?2,?3)",
    [SQ_EVENT_INSERT_2] = SQ_EVENT_ROWS "VALUES(?1,?2,?3),(?1,?4,?5)",
    [SQ_EVENT_INSERT_3] = SQ_EVENT_ROWS "VALUES(?1,?2,?3),(?1,?4,?5),(?1,?6,?7)",
    [SQ_EVENT_INSERT_4] = SQ_EVENT_ROWS "VALUES(?1,?2,?3),(?1,?4,?5),(?1,?6,?7),(?1,?8,?9)",
    [SQ_EVENTS_GET] = "SELECT e.generation, e.payload FROM tasks t, events e "
                      "WHERE t.principal=?1 AND t.task_id=?2 AND e.tid=t.rid "
                      "AND e.generation>?3 ORDER BY e.generation LIMIT ?4",
    [SQ_LEASES] = "SELECT principal, task_id FROM tasks INDEXED BY tasks_lease "
                  "WHERE state<5 AND lease_until>0 AND lease_until<?1 "
                  "ORDER BY lease_until, principal, task_id LIMIT ?2",
    [SQ_LIST] = SQ_LIST_SQL("tasks_list", ""),
    [SQ_LIST_AFTER] = SQ_LIST_SQL("tasks_list", SQ_LIST_CURSOR),
    [SQ_LIST_CTX] = SQ_LIST_SQL("tasks_list_ctx", " AND context_id=?2"),
    [SQ_LIST_CTX_AFTER] = SQ_LIST_SQL("tasks_list_ctx", " AND context_id=?2" SQ_LIST_CURSOR),
    [SQ_LIST_STATE] = SQ_LIST_SQL("tasks_list_state", " AND state=?3"),
    [SQ_LIST_STATE_AFTER] = SQ_LIST_SQL("tasks_list_state", " AND state=?3" SQ_LIST_CURSOR),
    [SQ_LIST_CTX_STATE] = SQ_LIST_SQL("tasks_list_ctx_state", " AND context_id=?2 AND state=?3"),
    [SQ_LIST_CTX_STATE_AFTER] = SQ_LIST_SQL("tasks_list_ctx_state",
                                            " AND context_id=?2 AND state=?3" SQ_LIST_CURSOR),
    [SQ_SWEEP_PICK] = "SELECT principal, task_id, digests, finished_at, rid FROM tasks "
                      "WHERE state>=5 AND finished_at<?1 "
                      "ORDER BY finished_at, principal, task_id LIMIT ?2",
    /* ?1 finished before, ?2..?4 the mark (finished_at, principal,
     * task_id), ?5 limit; the last column: a push delivery still owed
     * (such a task keeps its events for it). */
    [SQ_COMPACT_PICK] = "SELECT t.principal, t.task_id, t.generation, t.finished_at, t.rid,"
                        " EXISTS(SELECT 1 FROM push_deliveries d WHERE d.principal=t.principal"
                        " AND d.task_id=t.task_id AND d.disabled=0 AND d.delivered<d.target)"
                        " FROM tasks t INDEXED BY tasks_sweep WHERE t.state>=5"
                        " AND t.finished_at<?1 AND (t.finished_at, t.principal, t.task_id)"
                        " > (?2, ?3, ?4) ORDER BY t.finished_at, t.principal, t.task_id"
                        " LIMIT ?5",
    [SQ_TASK_TEXTS] = "SELECT task_json, journal FROM tasks WHERE rid=?1 "
                      "AND packed IS NULL",
    /* A new row (REPLACE: the old one deleted, this one at the end, under
     * a new rid its events then follow), not an UPDATE: a row made smaller
     * in place leaves its page's space to no one (new rows go at the end),
     * while the pages the old rows leave merge and are reused
     * (bench/README.md, "Bytes at rest"). */
    [SQ_TASK_PACK] = "REPLACE INTO tasks(" SQ_TASK_WRITE_COLS ", packed) SELECT principal, "
                     "task_id, context_id, state, kind, version, generation, fence, step, "
                     "lease_owner, lease_until, created_at, updated_at, finished_at, digests, "
                     "'', checkpoint, push_json, NULL, ?2 FROM tasks "
                     "WHERE rid=?1 AND packed IS NULL",
    [SQ_EVENTS_MOVE] = "UPDATE events SET tid=?2 WHERE tid=?1",
    [SQ_EVENTS_TRIM] = "DELETE FROM events WHERE tid=?1 AND generation<?2",
    [SQ_EVENT_EMPTY] = "UPDATE events SET payload='' WHERE tid=?1 AND generation=?2 "
                       "AND payload<>''",
    [SQ_TOMB_INSERT] = "INSERT OR REPLACE INTO tombstones"
                       "(principal, task_id, first_digest, finished_at, expired_at) "
                       "VALUES(?1,?2,?3,?4,?5)",
    [SQ_EVENTS_DELETE] = "DELETE FROM events WHERE tid=?1",
    [SQ_TASK_DELETE] = "DELETE FROM tasks WHERE rid=?1",
    [SQ_PURGE] = "DELETE FROM tombstones WHERE rowid IN (SELECT rowid FROM tombstones "
                 "WHERE expired_at<?1 ORDER BY expired_at, principal, task_id LIMIT ?2)",
    [SQ_META_GET] = "SELECT value FROM meta WHERE name=?1",
    [SQ_META_INSERT] = "INSERT INTO meta(name, value) VALUES(?1,?2) ON CONFLICT DO NOTHING",
    [SQ_PUSH_ROWS] = "SELECT " SQ_PUSH_COLS " FROM push_deliveries "
                     "WHERE principal=?1 AND task_id=?2 ORDER BY config_id",
    [SQ_PUSH_GET] = "SELECT " SQ_PUSH_COLS " FROM push_deliveries "
                    "WHERE principal=?1 AND task_id=?2 AND config_id=?3",
    [SQ_PUSH_PUT] = "INSERT OR REPLACE INTO push_deliveries(principal, task_id, " SQ_PUSH_COLS
                    ") VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15)",
    [SQ_PUSH_DELETE_KEY] = "DELETE FROM push_deliveries WHERE principal=?1 AND task_id=?2",
    [SQ_PUSH_DUE] = "SELECT principal, task_id, " SQ_PUSH_COLS " FROM push_deliveries "
                    "INDEXED BY push_due WHERE disabled=0 AND delivered<target "
                    "AND next_attempt_at<=?1 AND lease_until<=?1 "
                    "ORDER BY next_attempt_at, principal, task_id, config_id LIMIT ?2",
    [SQ_PUSH_LEASE] = "UPDATE push_deliveries SET lease_owner=?4, lease_until=?5 "
                      "WHERE principal=?1 AND task_id=?2 AND config_id=?3",
    [SQ_REPLICA_PUT] = "INSERT OR REPLACE INTO replicas(id, version, started_at, beat_at, "
                       "leases, stopped) VALUES(?1,?2,?3,?4,?5,?6)",
    [SQ_REPLICAS] = "SELECT id, version, started_at, beat_at, leases, stopped FROM replicas "
                    "ORDER BY id",
};

/* The tasks table: rid, an INTEGER PRIMARY KEY, is the row's rowid by name,
 * so VACUUM keeps it: events are keyed by it (below). (principal, task_id)
 * is the unique key every call looks a task up by. */
#define TASKS_TABLE                                                                       \
    "CREATE TABLE IF NOT EXISTS tasks(rid INTEGER PRIMARY KEY,"                           \
    " principal TEXT NOT NULL, task_id TEXT NOT NULL, context_id TEXT NOT NULL,"        \
    " state INTEGER NOT NULL, kind INTEGER NOT NULL, version INTEGER NOT NULL,"         \
    " generation INTEGER NOT NULL, fence INTEGER NOT NULL, step INTEGER NOT NULL,"      \
    " lease_owner TEXT NOT NULL, lease_until INTEGER NOT NULL,"                         \
    " created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, finished_at INTEGER NOT NULL," \
    " digests TEXT NOT NULL, task_json TEXT NOT NULL, checkpoint TEXT, push_json TEXT,"  \
    " journal TEXT, packed BLOB,"                                                        \
    " UNIQUE(principal, task_id)) STRICT;"
#define TASKS_INDEXES                                                                     \
    "CREATE INDEX IF NOT EXISTS tasks_lease ON tasks(lease_until, principal, task_id)"  \
    " WHERE state<5 AND lease_until>0;"                                                  \
    "CREATE INDEX IF NOT EXISTS tasks_sweep ON tasks(finished_at, principal, task_id)"  \
    " WHERE state>=5;"                                                                   \
    "CREATE INDEX IF NOT EXISTS tasks_list ON tasks(principal, created_at, task_id);"
/* A task's events under its rid, which counts up as tasks are created: a
 * new task's event rows go at the end of the table whatever its ID, where
 * rows keyed by the ID would land on a random page for a client minting
 * random IDs, and a commit writes every page it dirtied to the WAL
 * (bench/README.md, "Events keyed by the task's row"). */
#define EVENTS_TABLE                                                                      \
    "CREATE TABLE IF NOT EXISTS events("                                                 \
    " tid INTEGER NOT NULL, generation INTEGER NOT NULL, payload TEXT NOT NULL,"         \
    " PRIMARY KEY(tid, generation)) STRICT, WITHOUT ROWID;"

static const char ddl[] =
    TASKS_TABLE TASKS_INDEXES EVENTS_TABLE
    "CREATE TABLE IF NOT EXISTS tombstones("
    " principal TEXT NOT NULL, task_id TEXT NOT NULL, first_digest TEXT NOT NULL,"
    " finished_at INTEGER NOT NULL, expired_at INTEGER NOT NULL,"
    " PRIMARY KEY(principal, task_id)) STRICT;"
    "CREATE INDEX IF NOT EXISTS tombstones_purge ON tombstones(expired_at, principal, task_id);"
    "CREATE TABLE IF NOT EXISTS meta("
    " name TEXT NOT NULL PRIMARY KEY, value TEXT NOT NULL) STRICT;";

/* What version 2 adds to tables (also run alone to migrate from 1). */
#define PUSH_TABLE                                                                      \
    "CREATE TABLE IF NOT EXISTS push_deliveries("                                      \
    " principal TEXT NOT NULL, task_id TEXT NOT NULL, config_id TEXT NOT NULL,"        \
    " since INTEGER NOT NULL, delivered INTEGER NOT NULL, target INTEGER NOT NULL,"    \
    " attempts INTEGER NOT NULL, next_attempt_at INTEGER NOT NULL,"                    \
    " lease_owner TEXT NOT NULL, lease_until INTEGER NOT NULL,"                        \
    " disabled INTEGER NOT NULL, last_error TEXT NOT NULL,"                            \
    " deliveries INTEGER NOT NULL, retries INTEGER NOT NULL, failures INTEGER NOT NULL," \
    " PRIMARY KEY(principal, task_id, config_id)) STRICT, WITHOUT ROWID;"              \
    "CREATE INDEX IF NOT EXISTS push_due ON push_deliveries(next_attempt_at, principal," \
    " task_id, config_id) WHERE disabled=0 AND delivered<target;"

/* What version 4 adds: the replicas' heartbeat rows (store.h). */
#define REPLICA_TABLE                                                                     \
    "CREATE TABLE IF NOT EXISTS replicas("                                               \
    " id TEXT NOT NULL PRIMARY KEY, version TEXT NOT NULL, started_at INTEGER NOT NULL," \
    " beat_at INTEGER NOT NULL, leases INTEGER NOT NULL, stopped INTEGER NOT NULL)"      \
    " STRICT, WITHOUT ROWID;"

/* What version 5 adds: an index per list filter (see the header). */
#define LIST_INDEXES                                                                      \
    "CREATE INDEX IF NOT EXISTS tasks_list_ctx ON tasks(principal, context_id,"          \
    " created_at, task_id);"                                                             \
    "CREATE INDEX IF NOT EXISTS tasks_list_state ON tasks(principal, state,"             \
    " created_at, task_id);"                                                             \
    "CREATE INDEX IF NOT EXISTS tasks_list_ctx_state ON tasks(principal, context_id,"    \
    " state, created_at, task_id);"

static const char ddl_later[] = PUSH_TABLE REPLICA_TABLE LIST_INDEXES;
/* What each older version lacks: a file at version v runs migrate[v]. */
#define JOURNAL_COLUMN "ALTER TABLE tasks ADD COLUMN journal TEXT;"
/* What version 6 adds: a compacted task's task_json and journal, deflated
 * (sqlite_write.c op_compact). */
#define PACKED_COLUMN "ALTER TABLE tasks ADD COLUMN packed BLOB;"
/* What version 7 changes: the tasks table gains rid and events are keyed
 * by it (above). Both tables are rebuilt: the old ones renamed away (their
 * indexes go with them), the new ones created and filled (a task keeps its
 * rowid as rid), the old ones dropped, the indexes built again. Events
 * under no task, which the check reports as a problem, are not carried
 * over: they have no rid to go under. */
#define TASK_COPY_COLS                                                                    \
    SQ_TASK_WRITE_COLS ", packed"
#define REKEY_EVENTS                                                                      \
    "ALTER TABLE tasks RENAME TO tasks_v6;"                                              \
    "ALTER TABLE events RENAME TO events_v6;"                                            \
    TASKS_TABLE EVENTS_TABLE                                                              \
    "INSERT INTO tasks(rid, " TASK_COPY_COLS ") SELECT rowid, " TASK_COPY_COLS           \
    " FROM tasks_v6 ORDER BY rowid;"                                                     \
    "INSERT INTO events(tid, generation, payload) SELECT t.rid, e.generation, e.payload" \
    " FROM events_v6 e JOIN tasks t ON t.principal=e.principal AND t.task_id=e.task_id"  \
    " ORDER BY t.rid, e.generation;"                                                     \
    "DROP TABLE events_v6; DROP TABLE tasks_v6;" TASKS_INDEXES LIST_INDEXES
static const char *const migrate[SQ_SCHEMA_VERSION] = {
    [1] = "ALTER TABLE tasks ADD COLUMN push_json TEXT;" PUSH_TABLE JOURNAL_COLUMN REPLICA_TABLE
        PACKED_COLUMN REKEY_EVENTS,
    [2] = JOURNAL_COLUMN REPLICA_TABLE PACKED_COLUMN REKEY_EVENTS,
    [3] = REPLICA_TABLE PACKED_COLUMN REKEY_EVENTS,
    [4] = PACKED_COLUMN REKEY_EVENTS,
    [5] = PACKED_COLUMN REKEY_EVENTS,
    [6] = REKEY_EVENTS,
};

/* One-row PRAGMA: its first column as text (journal_mode) or integer. */
static int pragma_row(sq_conn *c, const char *sql, char *text, size_t cap, int64_t *num)
{
    sqlite3_stmt *st;
    int rc = once__sq_prepare(c->db, sql, &st);
    if (rc != SQLITE_OK) {
        sqlite3_finalize(st);
        return rc;
    }
    rc = once__sq_step(st);
    if (rc == SQLITE_ROW) {
        if (text) {
            const unsigned char *t = sqlite3_column_text(st, 0);
            size_t n = t ? strlen((const char *)t) : 0;
            if (n >= cap)
                n = cap - 1;
            if (t)
                memcpy(text, t, n);
            text[n] = '\0';
        }
        if (num)
            *num = sqlite3_column_int64(st, 0);
        rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
        rc = SQLITE_ERROR;   /* every PRAGMA used here returns a row */
    }
    sqlite3_finalize(st);
    return rc;
}

/* Switch the file to WAL. Changing the journal mode needs an exclusive lock
 * and does not always go through the busy handler, so retry here for up to
 * the busy timeout while other openers hold the file. */
typedef struct wal_try {
    sq_conn *c;
    char mode[16];
} wal_try;

static int wal_attempt(void *ctx)
{
    wal_try *t = ctx;
    return pragma_row(t->c, "PRAGMA journal_mode=WAL", t->mode, sizeof t->mode, NULL);
}

static int wal_on(sq_store *s, sq_conn *c)
{
    wal_try t = {c, ""};
    int rc = once__db_while_busy(wal_attempt, &t, s->busy_ms);
    if (rc != SQLITE_OK) {
        once__sq_seterr(s, c->db, "journal_mode=WAL", once__db_err(rc));
        return once__db_err(rc);
    }
    if (strcmp(t.mode, "wal") != 0) {
        once__sq_seterr(s, c->db, "journal_mode=WAL refused", ONCE_EUNSUPPORTED);
        return ONCE_EUNSUPPORTED;
    }
    return ONCE_OK;
}

/* The file's version, and what once__schema_gate says about it: 1 migrate,
 * 0 leave it, or an error (s->errmsg set). */
static int gate(sq_store *s, sq_conn *c, once__schema *sc, int64_t *v)
{
    int rc = pragma_row(c, "PRAGMA user_version", NULL, 0, v);
    if (rc != SQLITE_OK) {
        once__sq_seterr(s, c->db, "read user_version", once__db_err(rc));
        return once__db_err(rc);
    }
    return once__schema_gate(&s->base, sc, NULL, *v > INT_MAX ? -1 : (int)*v, SQ_SCHEMA_VERSION);
}

static int create_tables(sq_store *s, sq_conn *c, once__schema *sc)
{
    int rc = ONCE_EBUSY;
    for (int i = 0; i <= SQ_BUSY_RETRIES && rc == ONCE_EBUSY; i++) {
        if (i)
            once__db_sleep_ms(1 << i);
        rc = once__sq_run(c, SQ_BEGIN);
    }
    if (rc != ONCE_OK) {
        once__sq_seterr(s, c->db, "schema: BEGIN IMMEDIATE", rc);
        return rc;
    }
    int64_t v = 0;
    rc = gate(s, c, sc, &v);   /* another process may have won the race */
    if (rc == 1) {
        /* 0: a new file gets everything; 1..6: add what the later versions
         * brought (the rebuild of version 7 reads every task and event
         * once). */
        char bump[32];
        snprintf(bump, sizeof bump, "PRAGMA user_version=%d;", SQ_SCHEMA_VERSION);
        const char *const parts[] = {v == 0 ? ddl : migrate[v], v == 0 ? ddl_later : "", bump};
        int src = SQLITE_OK;
        for (size_t i = 0; src == SQLITE_OK && i < sizeof parts / sizeof parts[0]; i++)
            if (parts[i][0])
                src = once__sq_exec(c->db, parts[i]);
        rc = src == SQLITE_OK ? ONCE_OK : once__db_err(src);
        if (rc != ONCE_OK)
            once__sq_seterr(s, c->db, v == 0 ? "schema: create tables" : "schema: migrate",
                            rc);
    }
    if (rc == ONCE_OK) {
        rc = once__sq_run(c, SQ_COMMIT);
        if (rc != ONCE_OK)
            once__sq_seterr(s, c->db, "schema: COMMIT", rc);
    }
    if (rc != ONCE_OK)
        (void)once__sq_abort(c);   /* the caller closes c on failure anyway */
    return rc;
}

/* The version is read before the switch to WAL, which writes the file: a
 * probe and a refusal leave it as it was. */
int once__sq_schema(sq_store *s, sq_conn *c, once__schema *sc)
{
    int64_t v = 0;
    int rc = gate(s, c, sc, &v);
    if (rc < 0 || (sc->flags & ONCE__OPEN_PROBE))
        return rc < 0 ? rc : ONCE_OK;
    int apply = rc;
    rc = wal_on(s, c);
    if (rc != ONCE_OK || !apply)
        return rc;
    return create_tables(s, c, sc);
}
