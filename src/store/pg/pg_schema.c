/*
 * pg_schema.c -- what the PostgreSQL backend stores, its migrations, and
 * every SQL text it runs.
 *
 * One row per key in once_tasks, whether it holds a record or a tombstone
 * (tomb = true): the primary key then makes "a key holds at most one of
 * record / tombstone" structural, and create-if-absent is a single
 * INSERT ... ON CONFLICT DO NOTHING whose loser reads whatever the key holds,
 * record or tombstone, with no window in which a concurrent sweep could let
 * a record and a tombstone coexist. A tombstone row keeps key, first_digest,
 * finished_at and expired_at; its blobs are emptied. first_digest is kept
 * up to date by every write so that sweep is pure SQL (a compacted row
 * leaves it to be derived from the digest line: PG_FIRST_DIGEST).
 *
 * Migrations: once_migrations lists applied versions. open takes
 * pg_advisory_xact_lock(key of the schema) in a transaction, creates the
 * schema and the migrations table if absent, and applies each missing
 * migration in order, all in that one transaction: several processes
 * starting at once serialise on the lock, the first applies, the others
 * find nothing to do. A database migrated by a newer once (a version above
 * PG_SCHEMA_VERSION) is refused rather than written with an old layout.
 * The version is read before anything is created, so that a probe (`onced
 * migrate --dry-run`) and a refusal (--no-migrate) leave the database as
 * they found it (store/migrate.c).
 *
 * Push delivery rows (version 2) live in once_push, one per element of a
 * live record's push_json (store.h, "Push delivery"); their partial index
 * once_push_due holds exactly the rows that may become due (enabled, behind
 * their target), so an idle claim is one index probe. A tombstone has no
 * push_json and no rows.
 *
 * A compacted task (version 6, pg_compact.c) keeps its task_json and
 * journal in packed (pack.h) and an empty task_json and NULL journal in
 * their columns; every write of a task row sets packed to NULL, so what a
 * write gives is what a read returns, whole.
 *
 * State numbers are once_state's: 5..8 are the terminal states.
 */
#include <stdio.h>
#include <string.h>

#include "store/pg/pg_int.h"
#include "store/store_int.h"

#define P_KEY "principal = $1::bytea AND task_id = $2::bytea"
/* One live record by its key. tomb is NOT NULL, so this is NOT tomb, but
 * written so that the planner cannot answer it from the partial index
 * once_tasks_list (principal, created_at, task_id) WHERE NOT tomb: on a
 * table without statistics yet (a new schema) it preferred that index to
 * the primary key, and a scan of it for one key walks every task of the
 * principal. The generic plan a pooled connection caches then stayed so:
 * a returnImmediately task cost the server far more CPU, growing with the
 * tasks stored (bench/backends.md, "Group commit on by default";
 * storepg/backend keyed_plans). */
#define P_LIVE_KEY P_KEY " AND tomb IS NOT TRUE"

/* A record's first digest, kept in first_digest so that the sweep writes a
 * tombstone in pure SQL; a compacted row leaves it empty when the digest
 * line's first entry (once__digests_append writes its hex at the start) is
 * it, and the sweep takes it from there (65 bytes a finished task keeps no
 * longer). */
#define PG_DIGEST_HEX_SQL "64"
_Static_assert(ONCE_DIGEST_HEX == 64, "PG_DIGEST_HEX_SQL is ONCE_DIGEST_HEX");
#define PG_FIRST_DIGEST(t)                                                                       \
    "CASE WHEN " t ".first_digest = ''::bytea THEN substring(" t ".digests from 1 for "      \
    PG_DIGEST_HEX_SQL ") ELSE " t ".first_digest END"

#define PG_LIST_SQL(filter, limit)                                                     \
    "SELECT " PG_TASK_COLS " FROM once_tasks WHERE principal = $1::bytea AND NOT tomb" filter \
    " ORDER BY created_at, task_id LIMIT " limit "::int8"
#define PG_LIST_BY_CTX " AND context_id = $2::bytea"
#define PG_LIST_CURSOR(at, id) " AND (created_at, task_id) > (" at "::int8, " id "::bytea)"

/* clang-format off */
const char *const once__pg_sql[PG_NSTMT] = {
    [PG_LOAD] = "SELECT " PG_TASK_COLS ", tomb, first_digest, expired_at "
                "FROM once_tasks WHERE " P_KEY,
    [PG_HEAD] = "SELECT tomb, version, generation FROM once_tasks WHERE " P_KEY,
    /* $1..$19 the record, $20 first digest, $21 payloads (generations 1..n).
     * Delivery rows of a push_json are written by pg_push.c in the same
     * transaction. */
    [PG_CREATE] =
        "WITH ins AS (INSERT INTO once_tasks(" PG_TASK_WRITE_COLS ", first_digest, tomb, "
        "expired_at) "
        "VALUES($1::bytea, $2::bytea, $3::bytea, $4::int2, $5::int2, $6::int8, $7::int8, "
        "$8::int8, $9::int8, $10::bytea, $11::int8, $12::int8, $13::int8, $14::int8, "
        "$15::bytea, $16::bytea, $17::bytea, $18::bytea, $19::bytea, $20::bytea, false, 0) "
        "ON CONFLICT (principal, task_id) DO NOTHING RETURNING 1), "
        "ev AS (INSERT INTO once_events(principal, task_id, generation, payload) "
        "SELECT $1::bytea, $2::bytea, e.i, e.p FROM ins, "
        "unnest($21::bytea[]) WITH ORDINALITY AS e(p, i)) "
        "SELECT count(*) FROM ins",
    /* As create, plus $22 expected version and $23 the stored generation the
     * events continue from. A concurrent writer that got the row lock first
     * makes this one re-check its WHERE against the new row and match nothing.
     * A record without push_json loses its delivery rows here; one with
     * push_json has them reshaped by pg_push.c in the same transaction.
     * An update with events tells the change feeds (pg_feed.c) at COMMIT;
     * a SELECT in a WITH runs only when read, hence the join on `told`. */
    [PG_UPDATE] =
        "WITH up AS (UPDATE once_tasks SET context_id = $3::bytea, state = $4::int2, "
        "kind = $5::int2, version = $6::int8, generation = $7::int8, fence = $8::int8, "
        "step = $9::int8, lease_owner = $10::bytea, lease_until = $11::int8, "
        "created_at = $12::int8, updated_at = $13::int8, finished_at = $14::int8, "
        "digests = $15::bytea, task_json = $16::bytea, checkpoint = $17::bytea, "
        "push_json = $18::bytea, journal = $19::bytea, first_digest = $20::bytea, "
        "packed = NULL WHERE " P_LIVE_KEY " AND version = $22::int8 AND generation = $23::int8 "
        "RETURNING 1), "
        "ev AS (INSERT INTO once_events(principal, task_id, generation, payload) "
        "SELECT $1::bytea, $2::bytea, $23::int8 + e.i, e.p FROM up, "
        "unnest($21::bytea[]) WITH ORDINALITY AS e(p, i)), "
        "pd AS (DELETE FROM once_push d USING up WHERE $18::bytea IS NULL "
        "AND d.principal = $1::bytea AND d.task_id = $2::bytea), "
        "nt AS (SELECT pg_notify(" PG_FEED_CHANNEL_SQL ", " PG_FEED_PAYLOAD_SQL ") FROM up "
        "WHERE cardinality($21::bytea[]) > 0) "
        "SELECT count(*) FROM up, (SELECT count(*) FROM nt) AS told",
    /* $1 $2 the key, $3 owner, $4 fence, $5 until. Returns (renewed, live):
     * the EXISTS reads the statement's snapshot, so a key that holds a
     * record which did not match answers EFENCED and an absent or tombstoned
     * key ENOTFOUND, in one round trip. Only lease_until changes: the big
     * values stay where TOAST keeps them, so the new row version costs the
     * same whatever the record's size. "state IN (1, 2)" is
     * once__state_renewable (so renew never meets a packed row, which is
     * a finished task's, and need not clear packed). */
    [PG_RENEW] =
        "WITH up AS (UPDATE once_tasks SET lease_until = $5::int8 "
        "WHERE " P_LIVE_KEY " AND fence = $4::int8 AND lease_owner = $3::bytea "
        "AND state IN (1, 2) RETURNING 1) "
        "SELECT (SELECT count(*) FROM up), "
        "EXISTS (SELECT 1 FROM once_tasks WHERE " P_LIVE_KEY ")",
    /* $4 NULL = no limit. */
    /* A compacted task (trimmed, migration 7) has no event rows: its last
     * event, emptied, is the row's trimmed generation (pg_compact.c). */
    [PG_EVENTS] = "SELECT generation, payload FROM once_events WHERE " P_KEY
                  " AND generation > $3::int8 UNION ALL SELECT trimmed, ''::bytea "
                  "FROM once_tasks WHERE " P_LIVE_KEY " AND trimmed > $3::int8 "
                  "ORDER BY 1 LIMIT $4::int8",
    /* A plain read: claiming is the caller's CAS (store.h). A row lock here
     * would end with this autocommit statement, before any claim, so it
     * would only cost a write per row read and hide rows that other writers
     * hold (a plain read never waits for them either). */
    [PG_LEASES] = "SELECT principal, task_id FROM once_tasks "
                  "WHERE NOT tomb AND state < 5 AND lease_until > 0 AND lease_until < $1::int8 "
                  "ORDER BY lease_until, principal, task_id LIMIT $2::int8",
    /* $1 finished_before, $2 now, $3 max. Replicas sweeping at once take
     * disjoint rows (SKIP LOCKED) instead of queueing behind each other. */
    [PG_SWEEP] =
        "WITH picked AS (SELECT principal, task_id FROM once_tasks "
        "WHERE NOT tomb AND state >= 5 AND finished_at < $1::int8 "
        "ORDER BY finished_at, principal, task_id LIMIT $3::int8 FOR UPDATE SKIP LOCKED), "
        "gone AS (DELETE FROM once_events e USING picked p "
        "WHERE e.principal = p.principal AND e.task_id = p.task_id), "
        "pd AS (DELETE FROM once_push d USING picked p "
        "WHERE d.principal = p.principal AND d.task_id = p.task_id), "
        "up AS (UPDATE once_tasks t SET tomb = true, expired_at = $2::int8, "
        "digests = ''::bytea, task_json = ''::bytea, checkpoint = NULL, push_json = NULL, "
        "journal = NULL, packed = NULL, trimmed = NULL, first_digest = " PG_FIRST_DIGEST("t") ", "
        "lease_owner = ''::bytea, lease_until = 0 FROM picked p "
        "WHERE t.principal = p.principal AND t.task_id = p.task_id RETURNING 1) "
        "SELECT count(*) FROM up",
    /* $1 expired_before, $2 max. */
    [PG_PURGE] =
        "WITH picked AS (SELECT principal, task_id FROM once_tasks "
        "WHERE tomb AND expired_at < $1::int8 "
        "ORDER BY expired_at, principal, task_id LIMIT $2::int8 FOR UPDATE SKIP LOCKED), "
        "gone AS (DELETE FROM once_events e USING picked p "
        "WHERE e.principal = p.principal AND e.task_id = p.task_id), "
        "del AS (DELETE FROM once_tasks t USING picked p "
        "WHERE t.principal = p.principal AND t.task_id = p.task_id RETURNING 1) "
        "SELECT count(*) FROM del",
    /* One statement per filter, each served by its index (migration 5):
     * the parameters are $1 principal, then the filter's own (context
     * bytea, state int2), then the limit and the cursor (created_at,
     * task_id), numbered on from there. A statement that tested its
     * filter at run time ($2 IS NULL OR ...) would get one generic plan
     * for every filter, and that plan cannot seek on a column it may not
     * constrain. */
    [PG_LIST] = PG_LIST_SQL("", "$2"),
    [PG_LIST_AFTER] = PG_LIST_SQL(PG_LIST_CURSOR("$3", "$4"), "$2"),
    [PG_LIST_CTX] = PG_LIST_SQL(PG_LIST_BY_CTX, "$3"),
    [PG_LIST_CTX_AFTER] = PG_LIST_SQL(PG_LIST_BY_CTX PG_LIST_CURSOR("$4", "$5"), "$3"),
    [PG_LIST_STATE] = PG_LIST_SQL(" AND state = $2::int2", "$3"),
    [PG_LIST_STATE_AFTER] =
        PG_LIST_SQL(" AND state = $2::int2" PG_LIST_CURSOR("$4", "$5"), "$3"),
    [PG_LIST_CTX_STATE] = PG_LIST_SQL(PG_LIST_BY_CTX " AND state = $3::int2", "$4"),
    [PG_LIST_CTX_STATE_AFTER] =
        PG_LIST_SQL(PG_LIST_BY_CTX " AND state = $3::int2" PG_LIST_CURSOR("$5", "$6"), "$4"),
    [PG_META_INSERT] = "INSERT INTO once_meta(name, value) VALUES($1::bytea, $2::bytea) "
                       "ON CONFLICT (name) DO NOTHING RETURNING value",
    [PG_META_GET] = "SELECT value FROM once_meta WHERE name = $1::bytea",
    [PG_PUSH_ROWS] = "SELECT " PG_PUSH_COLS " FROM once_push WHERE " P_KEY " ORDER BY config_id",
    /* Inside a record write's transaction: the rows to reshape, locked in
     * one order (config_id), waiting for an ack in flight to finish. */
    [PG_PUSH_LOCK] = "SELECT " PG_PUSH_COLS " FROM once_push WHERE " P_KEY
                     " ORDER BY config_id FOR UPDATE",
    [PG_PUSH_GET_LOCK] = "SELECT " PG_PUSH_COLS " FROM once_push WHERE " P_KEY
                         " AND config_id = $3::bytea FOR UPDATE",
    /* $3..$15 the row (PG_PUSH_COLS order; disabled as int2). */
    [PG_PUSH_PUT] =
        "INSERT INTO once_push(principal, task_id, " PG_PUSH_COLS ") "
        "VALUES($1::bytea, $2::bytea, $3::bytea, $4::int8, $5::int8, $6::int8, $7::int8, "
        "$8::int8, $9::bytea, $10::int8, $11::int2 <> 0, $12::bytea, $13::int8, $14::int8, "
        "$15::int8) ON CONFLICT (principal, task_id, config_id) DO UPDATE SET "
        "since = EXCLUDED.since, delivered = EXCLUDED.delivered, target = EXCLUDED.target, "
        "attempts = EXCLUDED.attempts, next_attempt_at = EXCLUDED.next_attempt_at, "
        "lease_owner = EXCLUDED.lease_owner, lease_until = EXCLUDED.lease_until, "
        "disabled = EXCLUDED.disabled, last_error = EXCLUDED.last_error, "
        "deliveries = EXCLUDED.deliveries, retries = EXCLUDED.retries, "
        "failures = EXCLUDED.failures",
    [PG_PUSH_DROP] = "DELETE FROM once_push WHERE " P_KEY " AND config_id = $3::bytea",
    /* $1 owner, $2 now, $3 lease_until, $4 max. Due rows (store.h) in
     * next_attempt_at, key order; rows another claimer is leasing right now
     * are skipped, and one it leased since our snapshot fails the re-check
     * of the WHERE on the locked row, so each row goes to one claimer. */
    [PG_PUSH_CLAIM] =
        "WITH due AS (SELECT principal, task_id, config_id FROM once_push "
        "WHERE NOT disabled AND delivered < target AND next_attempt_at <= $2::int8 "
        "AND lease_until <= $2::int8 "
        "ORDER BY next_attempt_at, principal, task_id, config_id LIMIT $4::int8 "
        "FOR UPDATE SKIP LOCKED), "
        "up AS (UPDATE once_push d SET lease_owner = $1::bytea, lease_until = $3::int8 "
        "FROM due WHERE d.principal = due.principal AND d.task_id = due.task_id "
        "AND d.config_id = due.config_id "
        "RETURNING d.principal, d.task_id, d.config_id, d.delivered, d.target, d.attempts, "
        "d.next_attempt_at) "
        "SELECT principal, task_id, config_id, delivered, target, attempts FROM up "
        "ORDER BY next_attempt_at, principal, task_id, config_id",
    /* $1 id, $2 version, $3 started_at, $4 beat_at, $5 leases, $6 stopped. */
    [PG_REPLICA_PUT] =
        "INSERT INTO once_replicas(id, version, started_at, beat_at, leases, stopped) "
        "VALUES($1::bytea, $2::bytea, $3::int8, $4::int8, $5::int8, $6::int2 <> 0) "
        "ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version, "
        "started_at = EXCLUDED.started_at, beat_at = EXCLUDED.beat_at, "
        "leases = EXCLUDED.leases, stopped = EXCLUDED.stopped",
    [PG_REPLICAS] = "SELECT id, version, started_at, beat_at, leases, stopped "
                    "FROM once_replicas ORDER BY id",
    /* $1 finished before, $2..$4 the mark (finished_at, principal,
     * task_id), $5 max: the next finished tasks in the sweep index's
     * order. Each not owed a push delivery (an enabled row behind its
     * target, once_push_due's rows) loses its event rows (PG_TRIM then
     * puts the last one's generation on the row); the rows come back with
     * the texts pg_compact.c packs (NULL: owed, or packed already) and
     * whether the row is yet to be trimmed. SKIP LOCKED: a row another replica's pass or a
     * write holds is passed over, not waited for (and so no lock order
     * to agree with the batches, which lock by key). */
    [PG_COMPACT] =
        "WITH picked AS (SELECT t.principal, t.task_id, t.finished_at, "
        "EXISTS (SELECT 1 FROM once_push d WHERE d.principal = t.principal "
        "AND d.task_id = t.task_id AND NOT d.disabled AND d.delivered < d.target) AS owed, "
        "t.packed IS NULL AS whole, t.trimmed IS DISTINCT FROM t.generation AS untrimmed, "
        "t.task_json, t.journal FROM once_tasks t "
        "WHERE NOT t.tomb AND t.state >= 5 AND t.finished_at < $1::int8 "
        "AND (t.finished_at, t.principal, t.task_id) > ($2::int8, $3::bytea, $4::bytea) "
        "ORDER BY t.finished_at, t.principal, t.task_id LIMIT $5::int8 "
        "FOR UPDATE OF t SKIP LOCKED), "
        "gone AS (DELETE FROM once_events e USING picked p WHERE NOT p.owed "
        "AND e.principal = p.principal AND e.task_id = p.task_id) "
        "SELECT principal, task_id, finished_at, "
        "CASE WHEN whole AND NOT owed THEN task_json END, journal, "
        "untrimmed AND NOT owed FROM picked "
        "ORDER BY finished_at, principal, task_id",
    /* $3 the packed texts, or NULL (they stay as they are), of a task
     * PG_COMPACT holds locked: trimmed takes the generation (the event
     * PG_COMPACT deleted last) and first_digest, where it is the digest
     * line's first, is left for the sweep to derive (PG_FIRST_DIGEST). A
     * plain UPDATE: under MVCC it writes a new row version whatever it
     * changes (the old one is vacuumed and its space reused), so, unlike
     * SQLite (sqlite_schema.c SQ_TASK_PACK), there is no shrinking in
     * place to avoid here. */
    [PG_TRIM] = "UPDATE once_tasks SET trimmed = generation, first_digest = CASE WHEN "
                "first_digest = substring(digests from 1 for " PG_DIGEST_HEX_SQL ") "
                "THEN ''::bytea ELSE first_digest END, "
                "task_json = CASE WHEN $3::bytea IS NULL THEN task_json ELSE ''::bytea END, "
                "journal = CASE WHEN $3::bytea IS NULL THEN journal END, "
                "packed = coalesce($3::bytea, packed) WHERE " P_LIVE_KEY,
};
/* clang-format on */

const unsigned char once__pg_writes[PG_NSTMT] = {
    [PG_CREATE] = 1,   [PG_UPDATE] = 1,   [PG_SWEEP] = 1,     [PG_PURGE] = 1,
    [PG_META_INSERT] = 1, [PG_PUSH_PUT] = 1, [PG_PUSH_DROP] = 1, [PG_PUSH_CLAIM] = 1,
    [PG_COMPACT] = 1,  [PG_TRIM] = 1,
    /* PG_PUSH_*LOCK lock rows but write nothing a retry could duplicate;
     * PG_RENEW and PG_REPLICA_PUT write, but running either twice leaves
     * what running it once does, so one whose reply was lost is simply
     * retried. */
};

/* Migration n brings the schema from version n-1 to n. Never edit one that
 * has shipped: add the next. */
static const char *const migrations[PG_SCHEMA_VERSION] = {
    /* 1: tasks (records and tombstones), events, meta. */
    "CREATE TABLE once_tasks("
    " principal bytea NOT NULL, task_id bytea NOT NULL, context_id bytea NOT NULL,"
    " state int2 NOT NULL, kind int2 NOT NULL, version int8 NOT NULL,"
    " generation int8 NOT NULL, fence int8 NOT NULL, step int8 NOT NULL,"
    " lease_owner bytea NOT NULL, lease_until int8 NOT NULL,"
    " created_at int8 NOT NULL, updated_at int8 NOT NULL, finished_at int8 NOT NULL,"
    " digests bytea NOT NULL, task_json bytea NOT NULL, checkpoint bytea,"
    " first_digest bytea NOT NULL, tomb bool NOT NULL, expired_at int8 NOT NULL,"
    " PRIMARY KEY (principal, task_id));"
    "CREATE INDEX once_tasks_lease ON once_tasks(lease_until, principal, task_id)"
    " WHERE NOT tomb AND state < 5 AND lease_until > 0;"
    "CREATE INDEX once_tasks_sweep ON once_tasks(finished_at, principal, task_id)"
    " WHERE NOT tomb AND state >= 5;"
    "CREATE INDEX once_tasks_purge ON once_tasks(expired_at, principal, task_id) WHERE tomb;"
    "CREATE INDEX once_tasks_list ON once_tasks(principal, created_at, task_id) WHERE NOT tomb;"
    "CREATE TABLE once_events("
    " principal bytea NOT NULL, task_id bytea NOT NULL, generation int8 NOT NULL,"
    " payload bytea NOT NULL, PRIMARY KEY (principal, task_id, generation));"
    "CREATE TABLE once_meta(name bytea PRIMARY KEY, value bytea NOT NULL);",
    /* 2: push_json on records, push delivery rows. */
    "ALTER TABLE once_tasks ADD COLUMN push_json bytea;"
    "CREATE TABLE once_push("
    " principal bytea NOT NULL, task_id bytea NOT NULL, config_id bytea NOT NULL,"
    " since int8 NOT NULL, delivered int8 NOT NULL, target int8 NOT NULL,"
    " attempts int8 NOT NULL, next_attempt_at int8 NOT NULL,"
    " lease_owner bytea NOT NULL, lease_until int8 NOT NULL,"
    " disabled bool NOT NULL, last_error bytea NOT NULL,"
    " deliveries int8 NOT NULL, retries int8 NOT NULL, failures int8 NOT NULL,"
    " PRIMARY KEY (principal, task_id, config_id));"
    "CREATE INDEX once_push_due ON once_push(next_attempt_at, principal, task_id, config_id)"
    " WHERE NOT disabled AND delivered < target;",
    /* 3: the journal on records (the inspector's turns, replays, refusals). */
    "ALTER TABLE once_tasks ADD COLUMN journal bytea;",
    /* 4: the replicas' heartbeat rows (the cluster view). */
    "CREATE TABLE once_replicas("
    " id bytea PRIMARY KEY, version bytea NOT NULL, started_at int8 NOT NULL,"
    " beat_at int8 NOT NULL, leases int8 NOT NULL, stopped bool NOT NULL);",
    /* 5: an index per ListTasks filter, the filter's columns then the page
     * order, so a page is one index seek whatever the principal stored.
     * IF NOT EXISTS: a DBA may have built them beforehand CONCURRENTLY
     * (docs/production.md, "Upgrade"), sparing the write lock a build here
     * holds on once_tasks. */
    "CREATE INDEX IF NOT EXISTS once_tasks_list_ctx ON once_tasks(principal, context_id,"
    " created_at, task_id) WHERE NOT tomb;"
    "CREATE INDEX IF NOT EXISTS once_tasks_list_state ON once_tasks(principal, state,"
    " created_at, task_id) WHERE NOT tomb;"
    "CREATE INDEX IF NOT EXISTS once_tasks_list_ctx_state ON once_tasks(principal, context_id,"
    " state, created_at, task_id) WHERE NOT tomb;",
    /* 6: a compacted task's task_json and journal, deflated (pg_compact.c,
     * pack.h); NULL for every other row. Adding a nullable column without
     * a default rewrites nothing. */
    "ALTER TABLE once_tasks ADD COLUMN packed bytea;",
    /* 7: a compacted task keeps no event row: trimmed is the generation of
     * its last event, which reads synthesize (PG_EVENTS) and the check
     * counts; NULL for every other row. Its first_digest is then left empty
     * where the digest line's first gives it (PG_FIRST_DIGEST). Rows
     * compacted at version 6 keep their event row until a pass trims them. */
    "ALTER TABLE once_tasks ADD COLUMN trimmed int8;",
};

/* A 63-bit FNV-1a of the schema name: the advisory lock key, so that
 * migrations of different schemas in one database do not wait on each other. */
static int64_t lock_key(const char *schema)
{
    static const char tag[] = "once-migrate:";
    uint64_t h = 1469598103934665603ull;
    const unsigned char *p;

    for (p = (const unsigned char *)tag; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    for (p = (const unsigned char *)schema; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return (int64_t)(h >> 1);
}

/* Commands whose results do not matter; PQexec because a migration is several
 * statements (the extended protocol takes one at a time). */
static int simple(pg_store *s, pg_conn *c, const char *sql)
{
    PGresult *r = PQexec(c->pg, sql);

    if (!r || (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK))
        return once__pg_fail(s, c, r, "migration");
    PQclear(r);
    return ONCE_OK;
}

/* The version the schema is at: 0 when once_migrations is not there. */
static int read_version(pg_store *s, pg_conn *c, int have_table, int64_t *have)
{
    PGresult *r;
    int rc;

    *have = 0;
    if (!have_table)
        return ONCE_OK;
    rc = once__pg_simple(s, c, "SELECT coalesce(max(version), 0)::int8 FROM once_migrations", &r);
    if (rc != ONCE_OK)
        return rc;
    *have = PQntuples(r) == 1 ? once__pg_i64(r, 0, 0) : 0;
    PQclear(r);
    return ONCE_OK;
}

/* Versions have+1 .. PG_SCHEMA_VERSION, the schema and the migrations
 * table first when they are not there. */
static int apply(pg_store *s, pg_conn *c, int have_schema, int have_table, int64_t have)
{
    char sql[512];
    int rc, v;

    if (!have_schema) {
        snprintf(sql, sizeof sql, "CREATE SCHEMA IF NOT EXISTS \"%s\"", s->schema);
        if ((rc = simple(s, c, sql)) != ONCE_OK)
            return rc;
    }
    if (!have_table) {
        rc = simple(s, c,
                    "CREATE TABLE IF NOT EXISTS once_migrations("
                    " version int4 PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())");
        if (rc != ONCE_OK)
            return rc;
    }
    for (v = (int)have + 1; v <= PG_SCHEMA_VERSION; v++) {
        if ((rc = simple(s, c, migrations[v - 1])) != ONCE_OK)
            return rc;
        snprintf(sql, sizeof sql, "INSERT INTO once_migrations(version) VALUES(%d)", v);
        if ((rc = simple(s, c, sql)) != ONCE_OK)
            return rc;
    }
    return ONCE_OK;
}

static int migrate_locked(pg_store *s, pg_conn *c, once__schema *sc, int reset)
{
    char sql[512], where[PG_SCHEMA_MAX + 16];
    PGresult *r;
    int64_t have;
    int rc, have_schema, have_table;

    snprintf(sql, sizeof sql, "SELECT pg_advisory_xact_lock(%lld)", (long long)lock_key(s->schema));
    if ((rc = simple(s, c, sql)) != ONCE_OK)
        return rc;
    /* Look before creating: CREATE ... IF NOT EXISTS still needs the
     * privilege to create, which a least-privilege role running against
     * tables a DBA set up does not have. (The name is checked to be
     * [A-Za-z0-9_], so it can sit inside the literals.) */
    snprintf(sql, sizeof sql,
             "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = '%s'), "
             "to_regclass('\"%s\".once_migrations') IS NOT NULL",
             s->schema, s->schema);
    if ((rc = once__pg_simple(s, c, sql, &r)) != ONCE_OK)
        return rc;
    have_schema = PQntuples(r) == 1 && once__pg_i64(r, 0, 0);
    have_table = PQntuples(r) == 1 && once__pg_i64(r, 0, 1);
    PQclear(r);
    /* Decide before creating anything: a probe or a refusal writes nothing. */
    if ((rc = read_version(s, c, have_table, &have)) != ONCE_OK)
        return rc;
    snprintf(where, sizeof where, "\"%s\"", s->schema);
    rc = once__schema_gate(&s->base, sc, where, (int)have, PG_SCHEMA_VERSION);
    if (rc < 0 || (sc->flags & ONCE__OPEN_PROBE))
        return rc < 0 ? rc : ONCE_OK;
    if (rc == 1 && (rc = apply(s, c, have_schema, have_table, have)) != ONCE_OK)
        return rc;
    if (reset)
        rc = simple(s, c, "TRUNCATE once_tasks, once_events, once_meta, once_push, once_replicas");
    return rc;
}

int once__pg_migrate(pg_store *s, pg_conn *c, once__schema *sc, int reset)
{
    int rc;

    /* ON CONFLICT, SKIP LOCKED, WITH ORDINALITY, to_regclass: 9.5. */
    if (PQserverVersion(c->pg) < 90500) {
        once__store_seterr(&s->base, "postgres: server version %d is older than 9.5",
                           PQserverVersion(c->pg));
        return ONCE_EUNSUPPORTED;
    }
    rc = simple(s, c, "BEGIN");
    if (rc != ONCE_OK)
        return rc;
    rc = migrate_locked(s, c, sc, reset);
    if (rc == ONCE_OK)
        rc = simple(s, c, "COMMIT");
    if (rc != ONCE_OK && !c->item.broken) {
        PGresult *r = PQexec(c->pg, "ROLLBACK");
        PQclear(r);
    }
    return rc;
}
