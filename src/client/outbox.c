/*
 * outbox.c -- the client's durable outbox: one SQLite file (WAL,
 * synchronous=FULL) holding every intent the client means to deliver.
 *
 * Invariants:
 *   - an intent is on disk before the first byte of it is sent (callers add
 *     it, then send); ONCE_OK from any write here means it survived a crash;
 *   - every state change is a read-check-write in one IMMEDIATE transaction,
 *     checked by once__intent_transition_ok: pending -> acknowledged ->
 *     final, pending|acknowledged -> refused|abandoned, and nothing leaves
 *     final, refused or abandoned (only prune removes them);
 *   - the schema's version is PRAGMA user_version; an older file is brought
 *     up to date in one transaction when it is opened.
 *   - the message of an intent is written once and never changed, so every
 *     resend carries the same body; the mode (ext/plain) is set once.
 * Several processes may share the file: SQLite's locks serialise them and a
 * busy timeout absorbs short contention.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "client/client_int.h"
#include "client/outbox_int.h"
#include "db/db.h"

#define SCHEMA_VERSION 6
/* How long a writer waits for another process's lock on the file. */
#define BUSY_MS 10000
#define ONCE__XSTR(x) #x
#define ONCE__STR(x) ONCE__XSTR(x)

/* The intents table as this version writes it. Version 2 added
 * 'abandoned' to the state check, version 3 the push column (the
 * configuration.taskPushNotificationConfig sent with the message, JSON),
 * version 5 the endpoint column (the URL of the agent that last answered
 * about the intent; agent stays the agent's name, see ENDPOINTS_TABLE). */
#define INTENTS_TABLE(name)                                                                       \
    "CREATE TABLE " name "("                                                                      \
    " seq INTEGER PRIMARY KEY AUTOINCREMENT,"                                                     \
    " kind TEXT NOT NULL CHECK(kind IN ('send','continue')),"                                     \
    " agent TEXT NOT NULL,"                                                                       \
    " task_id TEXT,"                                                                              \
    " message_id TEXT NOT NULL,"                                                                  \
    " message TEXT NOT NULL,"                                                                     \
    " mode TEXT CHECK(mode IS NULL OR mode IN ('ext','plain')),"                                  \
    " state TEXT NOT NULL CHECK(state IN ('pending','acknowledged','final','refused',"            \
    "'abandoned')),"                                                                              \
    " task_state TEXT,"                                                                           \
    " attempts INTEGER NOT NULL DEFAULT 0,"                                                       \
    " last_error TEXT,"                                                                           \
    " refusal TEXT,"                                                                              \
    " created_ms INTEGER NOT NULL,"                                                               \
    " updated_ms INTEGER NOT NULL,"                                                               \
    " acked_ms INTEGER,"                                                                          \
    " finished_ms INTEGER,"                                                                       \
    " push TEXT,"                                                                                 \
    " endpoint TEXT);"

#define INTENTS_INDEXES                                                                           \
    "CREATE INDEX IF NOT EXISTS intents_state ON intents(state, seq);"                            \
    "CREATE INDEX IF NOT EXISTS intents_task ON intents(task_id);"

/* The URLs an agent answers at (replicas addressed directly), in the
 * order they are tried: url belongs to one agent; agent is the name the
 * intents, the mode cache and the budget know it by (its first URL when it
 * was first named); answered_ms is when the URL last answered, so that a
 * call starts where the last one got through. */
#define ENDPOINTS_TABLE                                                                           \
    "CREATE TABLE endpoints("                                                                     \
    " url TEXT PRIMARY KEY, agent TEXT NOT NULL, pos INTEGER NOT NULL, answered_ms INTEGER);"    \
    "CREATE INDEX endpoints_agent ON endpoints(agent, pos);"

/* A new file. */
static const char schema_new[] =
    INTENTS_TABLE("intents") INTENTS_INDEXES ENDPOINTS_TABLE
    "CREATE TABLE agents("
    " agent TEXT PRIMARY KEY, ext INTEGER NOT NULL, checked_ms INTEGER NOT NULL, a2a TEXT,"
    " interfaces TEXT);"
    "CREATE TABLE budget("
    " agent TEXT PRIMARY KEY, tokens REAL NOT NULL, updated_ms INTEGER NOT NULL);";

/* Version 1 -> 3 (SQLite cannot change a CHECK in place): a new table, the
 * rows copied, the sequence kept so that no seq is handed out twice. */
#define V1_COLUMNS                                                                                \
    "seq,kind,agent,task_id,message_id,message,mode,state,task_state,attempts,last_error,"        \
    "refusal,created_ms,updated_ms,acked_ms,finished_ms"
static const char schema_v1[] =
    INTENTS_TABLE("intents_v2")
    "INSERT INTO intents_v2(" V1_COLUMNS ") SELECT " V1_COLUMNS " FROM intents;"
    "DELETE FROM sqlite_sequence WHERE name='intents_v2';"
    "INSERT INTO sqlite_sequence(name,seq) SELECT 'intents_v2',seq FROM sqlite_sequence"
    " WHERE name='intents';"
    "DROP TABLE intents;"
    "ALTER TABLE intents_v2 RENAME TO intents;" INTENTS_INDEXES;

/* Version 2 -> 3. */
static const char schema_v2[] = "ALTER TABLE intents ADD COLUMN push TEXT;";

/* Version 3 -> 4: the A2A version the agent's card says it speaks ('1.0',
 * '0.3'; NULL: read by an older once, taken as 1.0 until the card is read
 * again). */
static const char schema_v3[] = "ALTER TABLE agents ADD COLUMN a2a TEXT;";

/* Version 4 -> 5 (from 1, INTENTS_TABLE has the column already): every
 * agent an older once wrote was one URL, its only endpoint. */
static const char schema_v4_column[] = "ALTER TABLE intents ADD COLUMN endpoint TEXT;";
static const char schema_v4[] =
    ENDPOINTS_TABLE
    "INSERT OR IGNORE INTO endpoints(url,agent,pos)"
    " SELECT agent, agent, 0 FROM intents UNION SELECT agent, agent, 0 FROM agents;";

/* Version 5 -> 6: the card's A2A 1.0 interfaces, {"url": the endpoint
 * whose card it was, "list": [[binding, url], ...] in the card's order}
 * (binding.c picks one); NULL: read by an older once. */
static const char schema_v5[] = "ALTER TABLE agents ADD COLUMN interfaces TEXT;";

int once__ob_fail(once__outbox *o, int src, const char *what)
{
    /* what may be a whole SQL script: name its start only. */
    snprintf(o->err, sizeof o->err, "outbox %.60s: %.200s", what, sqlite3_errmsg(o->db));
    return once__db_is_busy(src) ? ONCE_EBUSY : ONCE_ESTORE;
}

const char *once__outbox_errmsg(const once__outbox *o)
{
    return o ? o->err : "no outbox";
}

int once__ob_exec(once__outbox *o, const char *sql)
{
    int src = sqlite3_exec(o->db, sql, NULL, NULL, NULL);
    return src == SQLITE_OK ? ONCE_OK : once__ob_fail(o, src, sql);
}

int once__ob_prepare(once__outbox *o, sqlite3_stmt **st, const char *sql, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    int src = once__db_vprepare(o->db, st, sql, types, ap);
    va_end(ap);
    return src == SQLITE_OK ? ONCE_OK : once__ob_fail(o, src, "prepare");
}

int once__ob_one(once__outbox *o, sqlite3_stmt **st, const char *sql, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    int src = once__db_vprepare(o->db, st, sql, types, ap);
    va_end(ap);
    if (src == SQLITE_OK && (src = sqlite3_step(*st)) == SQLITE_ROW)
        return ONCE_OK;
    int rc = src == SQLITE_DONE ? ONCE_ENOTFOUND : once__ob_fail(o, src, "read");
    sqlite3_finalize(*st);
    *st = NULL;
    return rc;
}

int once__ob_run(once__outbox *o, const char *sql, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    int src = once__db_vrun(o->db, sql, types, ap);
    va_end(ap);
    return src == SQLITE_OK ? ONCE_OK : once__ob_fail(o, src, "write");
}

int once__ob_begin(once__outbox *o)
{
    int src = once__db_begin(o->db);
    return src == SQLITE_OK ? ONCE_OK : once__ob_fail(o, src, "BEGIN IMMEDIATE");
}

int once__ob_end(once__outbox *o, int rc)
{
    int src = once__db_end(o->db, rc == ONCE_OK ? SQLITE_OK : SQLITE_ABORT);
    if (rc == ONCE_OK && src != SQLITE_OK)
        rc = once__ob_fail(o, src, "COMMIT");
    return rc;
}

/* Switching a new file to WAL needs a lock SQLite does not wait for through
 * the busy handler: two processes opening one fresh outbox at once get
 * SQLITE_BUSY at once. Retry for as long as the busy timeout would wait. */
static int wal_attempt(void *db)
{
    return sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
}

static int wal_mode(once__outbox *o)
{
    int src = once__db_while_busy(wal_attempt, o->db, BUSY_MS);
    return src == SQLITE_OK ? ONCE_OK : once__ob_fail(o, src, "PRAGMA journal_mode=WAL");
}

static int schema_version(once__outbox *o, int *v)
{
    sqlite3_stmt *q;
    int rc = once__ob_prepare(o, &q, "PRAGMA user_version", "");
    if (rc != ONCE_OK)
        return rc;
    int src = sqlite3_step(q);
    if (src == SQLITE_ROW)
        *v = sqlite3_column_int(q, 0);
    else
        rc = once__ob_fail(o, src, "PRAGMA user_version");
    sqlite3_finalize(q);
    return rc;
}

/* Create the schema, or bring an older file up to date, in one IMMEDIATE
 * transaction: of several processes opening one file, one does the work
 * and the others find it done. */
static int schema(once__outbox *o)
{
    int v = 0;
    int rc = schema_version(o, &v);
    if (rc != ONCE_OK || v == SCHEMA_VERSION)
        return rc;
    if ((rc = once__ob_begin(o)) != ONCE_OK)
        return rc;
    rc = schema_version(o, &v);
    if (rc == ONCE_OK && v > SCHEMA_VERSION) {
        snprintf(o->err, sizeof o->err, "outbox schema %d is newer than this once knows (%d)", v,
                 SCHEMA_VERSION);
        rc = ONCE_ESTORE;
    }
    if (rc == ONCE_OK && v == 0)
        rc = once__ob_exec(o, schema_new);
    if (rc == ONCE_OK && v == 1)
        rc = once__ob_exec(o, schema_v1);
    if (rc == ONCE_OK && v == 2)
        rc = once__ob_exec(o, schema_v2);
    if (rc == ONCE_OK && v <= 3 && v >= 1)
        rc = once__ob_exec(o, schema_v3);
    if (rc == ONCE_OK && v <= 4 && v >= 2)
        rc = once__ob_exec(o, schema_v4_column);
    if (rc == ONCE_OK && v <= 4 && v >= 1)
        rc = once__ob_exec(o, schema_v4);
    if (rc == ONCE_OK && v <= 5 && v >= 1)
        rc = once__ob_exec(o, schema_v5);
    if (rc == ONCE_OK && v != SCHEMA_VERSION)
        rc = once__ob_exec(o, "PRAGMA user_version=" ONCE__STR(SCHEMA_VERSION));
    return once__ob_end(o, rc);
}

int once__outbox_open(const char *path, once__outbox **out, char *err, size_t errlen)
{
    *out = NULL;
    once__outbox *o = once_calloc(1, sizeof *o);
    if (o == NULL)
        return ONCE_ENOMEM;
    int src = once__db_open(path ? path : ":memory:", BUSY_MS, &o->db);
    int rc = ONCE_OK;
    if (src != SQLITE_OK) {
        rc = o->db != NULL ? once__ob_fail(o, src, "open") : ONCE_ENOMEM;
    } else {
        /* WAL: readers never block the writer; FULL: a commit is on disk. */
        if (path != NULL)
            rc = wal_mode(o);
        if (rc == ONCE_OK)
            rc = once__ob_exec(o, "PRAGMA synchronous=FULL");
        if (rc == ONCE_OK)
            rc = schema(o);
    }
    if (rc != ONCE_OK) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "%s (%s)", o->err, path ? path : ":memory:");
        once__outbox_close(o);
        return rc;
    }
    *out = o;
    return ONCE_OK;
}

void once__outbox_close(once__outbox *o)
{
    if (o == NULL)
        return;
    sqlite3_close_v2(o->db);
    once_free(o);
}

int once__outbox_add(once__outbox *o, const char *kind, const char *agent, const char *task_id,
                     const char *message_id, const char *message, const char *push, int64_t now,
                     int64_t *seq)
{
    int rc = once__ob_run(o,
                          "INSERT INTO intents(kind,agent,task_id,message_id,message,push,state,"
                          "created_ms,updated_ms) VALUES(?,?,?,?,?,?,'pending',?,?)",
                          "ssssssii", kind, agent, task_id, message_id, message, push, now, now);
    *seq = rc == ONCE_OK ? sqlite3_last_insert_rowid(o->db) : 0;
    return rc;
}

/* The state of seq (inside a transaction). */
static int state_of(once__outbox *o, int64_t seq, once_intent_state *st)
{
    sqlite3_stmt *q;
    int rc = once__ob_one(o, &q, "SELECT state FROM intents WHERE seq=?", "i", seq);
    if (rc == ONCE_OK)
        *st = once__intent_state_parse((const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    return rc;
}

/* Move intent seq to state `to` by running the UPDATE sql (bound as by
 * once__ob_run), in one transaction with the check that the intent's state
 * may become `to`. */
static int move(once__outbox *o, int64_t seq, once_intent_state to, const char *sql,
                const char *types, ...)
{
    int rc = once__ob_begin(o);
    if (rc != ONCE_OK)
        return rc;
    once_intent_state from = 0;
    rc = state_of(o, seq, &from);
    if (rc == ONCE_OK && !once__intent_transition_ok(from, to)) {
        snprintf(o->err, sizeof o->err, "outbox: intent %lld is %s, cannot become %s",
                 (long long)seq, once_intent_state_name(from), once_intent_state_name(to));
        rc = ONCE_EILLEGAL;
    }
    if (rc == ONCE_OK) {
        va_list ap;
        va_start(ap, types);
        int src = once__db_vrun(o->db, sql, types, ap);
        va_end(ap);
        if (src != SQLITE_OK)
            rc = once__ob_fail(o, src, "write");
    }
    return once__ob_end(o, rc);
}

int once__outbox_attempt(once__outbox *o, int64_t seq, int64_t now)
{
    /* Only a pending intent is sent: an answered one never is again. */
    return move(o, seq, ONCE_INTENT_PENDING,
                "UPDATE intents SET attempts=attempts+1, updated_ms=? WHERE seq=?", "ii", now, seq);
}

int once__outbox_error(once__outbox *o, int64_t seq, const char *err, int64_t now)
{
    /* Only a pending intent's error means anything: an answered one has its answer. */
    return once__ob_run(o,
                        "UPDATE intents SET last_error=?, updated_ms=? WHERE seq=? AND state='pending'",
                        "sii", err, now, seq);
}

int once__outbox_set_mode(once__outbox *o, int64_t seq, int ext, int64_t now, int *ext_out)
{
    int rc = once__ob_begin(o);
    if (rc != ONCE_OK)
        return rc;
    /* Plain mode: the agent mints the task ID, so a first message's
     * minted ID lives on only as its messageId until the answer names it. */
    rc = once__ob_run(o,
                      "UPDATE intents SET mode=?1, updated_ms=?2,"
                      " task_id=CASE WHEN ?1='plain' AND kind='send' THEN NULL ELSE task_id END"
                      " WHERE seq=?3 AND mode IS NULL",
                      "sii", ext ? "ext" : "plain", now, seq);
    sqlite3_stmt *q = NULL;
    if (rc == ONCE_OK)
        rc = once__ob_one(o, &q, "SELECT mode FROM intents WHERE seq=?", "i", seq);
    if (rc == ONCE_OK)
        *ext_out = strcmp((const char *)sqlite3_column_text(q, 0), "ext") == 0;
    sqlite3_finalize(q);
    return once__ob_end(o, rc);
}

/* The task state an answer named, as the task_state column keeps it: NULL
 * when it named none. */
static const char *stored_state(once_state st)
{
    return st == ONCE_STATE_UNKNOWN ? NULL : once_state_name(st);
}

int once__outbox_ack(once__outbox *o, int64_t seq, const char *task_id, once_state st, int final,
                     const char *endpoint, int64_t now)
{
    final = final || once_state_terminal(st);
    once_intent_state to = final ? ONCE_INTENT_FINAL : ONCE_INTENT_ACKNOWLEDGED;
    return move(o, seq, to,
                "UPDATE intents SET state=?, task_id=COALESCE(task_id, ?), task_state=?,"
                " last_error=NULL, acked_ms=COALESCE(acked_ms, ?), updated_ms=?,"
                " finished_ms=CASE WHEN ? THEN ? ELSE NULL END,"
                " endpoint=COALESCE(?, endpoint) WHERE seq=?",
                "sssiiiisi", once_intent_state_name(to), task_id, stored_state(st), now, now,
                (int64_t)final, now, endpoint, seq);
}

int once__outbox_refuse(once__outbox *o, int64_t seq, const char *reason, once_state st,
                        const char *endpoint, int64_t now)
{
    return move(o, seq, ONCE_INTENT_REFUSED,
                "UPDATE intents SET state='refused', refusal=?,"
                " task_state=COALESCE(?, task_state), updated_ms=?, finished_ms=?,"
                " endpoint=COALESCE(?, endpoint) WHERE seq=?",
                "ssiisi", reason ? reason : "REFUSED", stored_state(st), now, now, endpoint, seq);
}

int once__outbox_observe(once__outbox *o, const char *agent, const char *task_id, once_state st,
                         const char *endpoint, int64_t now)
{
    if (st == ONCE_STATE_UNKNOWN)
        return ONCE_OK;
    int final = once_state_terminal(st);
    return once__ob_run(o,
                        "UPDATE intents SET task_state=?, updated_ms=?,"
                        " state=CASE WHEN ? THEN 'final' ELSE state END,"
                        " finished_ms=CASE WHEN ? THEN ? ELSE finished_ms END,"
                        " endpoint=COALESCE(?, endpoint)"
                        " WHERE agent=? AND task_id=? AND state='acknowledged'",
                        "siiiisss", once_state_name(st), now, (int64_t)final, (int64_t)final, now,
                        endpoint, agent, task_id);
}

int once__outbox_abandon(once__outbox *o, const char *id, int64_t now, once_intent_fn fn,
                         void *ctx, unsigned *abandoned)
{
    *abandoned = 0;
    int rc = once__ob_begin(o);
    if (rc != ONCE_OK)
        return rc;
    char sql[320];
    snprintf(sql, sizeof sql, "SELECT %s FROM intents WHERE task_id=?1 OR message_id=?1 ORDER BY seq",
             once__ob_columns);
    sqlite3_stmt *q;
    rc = once__ob_prepare(o, &q, sql, "s", id);
    unsigned total = 0, open = 0;
    int src = SQLITE_DONE;
    while (rc == ONCE_OK && (src = sqlite3_step(q)) == SQLITE_ROW) {
        once_intent it;
        once__ob_row_view(q, &it);
        total++;
        if (once__intent_transition_ok(it.state, ONCE_INTENT_ABANDONED)) {
            open++;
        } else {
            /* The newest finished one names the state in the message. */
            snprintf(o->err, sizeof o->err,
                     "intent %lld of %s is %s%s%s: only a pending or acknowledged intent can be "
                     "abandoned",
                     (long long)it.seq, id, once_intent_state_name(it.state),
                     it.task_state != ONCE_STATE_UNKNOWN ? ", its task " : "",
                     it.task_state != ONCE_STATE_UNKNOWN ? once_state_name(it.task_state) : "");
        }
        if (fn != NULL)
            fn(ctx, &it);
    }
    if (rc == ONCE_OK && src != SQLITE_DONE)
        rc = once__ob_fail(o, src, "read");
    sqlite3_finalize(q);
    if (rc == ONCE_OK && total == 0) {
        snprintf(o->err, sizeof o->err, "the outbox has no intent for %s", id);
        rc = ONCE_ENOTFOUND;
    } else if (rc == ONCE_OK && open == 0) {
        rc = ONCE_EILLEGAL;
    }
    if (rc == ONCE_OK)
        rc = once__ob_run(o,
                          "UPDATE intents SET state='abandoned', updated_ms=?1, finished_ms=?1"
                          " WHERE (task_id=?2 OR message_id=?2)"
                          " AND state IN ('pending','acknowledged')",
                          "is", now, id);
    if (rc == ONCE_OK)
        *abandoned = (unsigned)sqlite3_changes(o->db);
    return once__ob_end(o, rc);
}

#define NO_VIEW ((size_t)-1)

/* The text columns (positions in once__ob_columns) a loaded intent keeps
 * copies of: `copy` is the copy's offset in once__intent_row, `view` that
 * of the once_intent pointer that shows it (NO_VIEW: none does).
 * once__outbox_load makes the copies, once__intent_row_clear frees them. */
static const struct row_string {
    int col;
    size_t copy, view;
} row_strings[] = {
    {1, offsetof(once__intent_row, kind), offsetof(once_intent, kind)},
    {2, offsetof(once__intent_row, agent), offsetof(once_intent, agent)},
    {3, offsetof(once__intent_row, task_id), offsetof(once_intent, task_id)},
    {4, offsetof(once__intent_row, message_id), offsetof(once_intent, message_id)},
    {5, offsetof(once__intent_row, mode), offsetof(once_intent, mode)},
    {9, offsetof(once__intent_row, last_error), offsetof(once_intent, last_error)},
    {10, offsetof(once__intent_row, refusal), offsetof(once_intent, refusal)},
    {15, offsetof(once__intent_row, message), NO_VIEW},
    {16, offsetof(once__intent_row, push), NO_VIEW},
    {17, offsetof(once__intent_row, endpoint), offsetof(once_intent, endpoint)},
};
#define NROW_STRINGS (sizeof row_strings / sizeof row_strings[0])

static char **row_copy(once__intent_row *r, size_t i)
{
    return (char **)((char *)r + row_strings[i].copy);
}

void once__intent_row_clear(once__intent_row *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < NROW_STRINGS; i++)
        once_free(*row_copy(r, i));
    memset(r, 0, sizeof *r);
}

const char once__ob_columns[] =
    "seq,kind,agent,task_id,message_id,mode,state,task_state,attempts,last_error,refusal,"
    "created_ms,updated_ms,acked_ms,finished_ms,message,push,endpoint";

void once__ob_row_view(sqlite3_stmt *q, once_intent *it)
{
    memset(it, 0, sizeof *it);
    it->seq = sqlite3_column_int64(q, 0);
    it->kind = (const char *)sqlite3_column_text(q, 1);
    it->agent = (const char *)sqlite3_column_text(q, 2);
    it->task_id = (const char *)sqlite3_column_text(q, 3);
    it->message_id = (const char *)sqlite3_column_text(q, 4);
    it->mode = (const char *)sqlite3_column_text(q, 5);
    it->state = once__intent_state_parse((const char *)sqlite3_column_text(q, 6));
    const char *ts = (const char *)sqlite3_column_text(q, 7);
    it->task_state = ts ? once_state_parse(ts) : ONCE_STATE_UNKNOWN;
    it->attempts = (unsigned)sqlite3_column_int64(q, 8);
    it->last_error = (const char *)sqlite3_column_text(q, 9);
    it->refusal = (const char *)sqlite3_column_text(q, 10);
    it->created_ms = sqlite3_column_int64(q, 11);
    it->updated_ms = sqlite3_column_int64(q, 12);
    it->acked_ms = sqlite3_column_int64(q, 13);
    it->finished_ms = sqlite3_column_int64(q, 14);
    it->endpoint = (const char *)sqlite3_column_text(q, 17);
}

int once__outbox_load(once__outbox *o, int64_t seq, once__intent_row *row)
{
    memset(row, 0, sizeof *row);
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT %s FROM intents WHERE seq=?", once__ob_columns);
    sqlite3_stmt *q;
    int rc = once__ob_one(o, &q, sql, "i", seq);
    if (rc == ONCE_OK)
        once__ob_row_view(q, &row->it);
    /* The view's strings are the statement's until it is finalized: each
     * is pointed at its copy. A copy is NULL only where the column is (the
     * schema says which may be). */
    for (size_t i = 0; rc == ONCE_OK && i < NROW_STRINGS; i++) {
        int col = row_strings[i].col;
        const char *t = (const char *)sqlite3_column_text(q, col);
        char **copy = row_copy(row, i);
        if (t != NULL)
            *copy = once_strdup(t);
        if (*copy == NULL && sqlite3_column_type(q, col) != SQLITE_NULL)
            rc = ONCE_ENOMEM;
        if (row_strings[i].view != NO_VIEW)
            *(const char **)((char *)&row->it + row_strings[i].view) = *copy;
    }
    sqlite3_finalize(q);
    if (rc != ONCE_OK)
        once__intent_row_clear(row);
    return rc;
}
