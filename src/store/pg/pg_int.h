/*
 * pg_int.h -- internals shared by the PostgreSQL backend's files:
 *   pg.c         URL and options, open/close, the method table
 *   pg_conn.c    the connection pool, reconnect with backoff, prepared
 *                statements, binary parameters and result decoding, error
 *                classification and the retry loop (once__pg_run)
 *   pg_schema.c  the versioned migrations and every SQL text
 *   pg_write.c   create, update, renew, sweep, purge, meta
 *   pg_compact.c the sweep's compaction of finished tasks
 *   pg_read.c    load, events, expired_leases, list
 *   pg_check.c   the integrity check
 *   pg_push.c    push delivery rows: sync with push_json, claim, ack, rows,
 *                and their part of the integrity check
 *   pg_feed.c    the change feed: LISTEN on the channel updates NOTIFY
 *   pg_batch.c   group commit: concurrent creates and updates share one
 *                pipelined round trip and one COMMIT (store/batch.h)
 *
 * Every write is one autocommit statement, or one of a batch's statements
 * that share a transaction (pg_batch.c) (create and update fold their
 * event inserts into it, sweep its event and delivery-row deletes, with
 * data-modifying CTEs); the extra reads some slots make (create's loser,
 * update's diagnosis) never write. The exceptions are the writes whose
 * delivery rows must be computed from the stored ones by push_rows.c
 * (create/update of a record carrying push_json, push_ack), and a batch of
 * compaction, whose rows are packed in C (pg_compact.c): they run as one
 * explicit transaction (once__pg_begin .. once__pg_commit). So a failed
 * statement or an unfinished transaction leaves nothing behind, and "did it
 * commit?" is only ever in doubt when the connection broke while an
 * autocommit write or a COMMIT was in flight: that case, and only that one,
 * is reported as ONCE_ESTORE without a retry.
 *
 * Text travels as bytea in the binary protocol: every value is stored byte
 * for byte whatever the database encoding, and ORDER BY on keys compares
 * bytes, which is strcmp's order (the memory backend's).
 */
#ifndef ONCE_STORE_PG_INT_H
#define ONCE_STORE_PG_INT_H

#include <pthread.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "once/store.h"
#include "store/batch.h"
#include "store/pack.h"
#include "store/pool.h"
#include "store/slots.h"
#include "store/store_int.h"

#define PG_SCHEMA_MAX 63      /* PostgreSQL identifier length */
#define PG_SCHEMA_VERSION 7   /* migrations in pg_schema.c */
#define PG_POOL_DEFAULT 16    /* connections per handle */
#define PG_POOL_WAIT_MS 30000 /* a caller waits this long for a free connection */
#define PG_BACKOFF_MIN_MS 50
#define PG_BACKOFF_MAX_MS 2000
#define PG_ATTEMPTS 3 /* tries of one slot on a broken connection / deadlock */
#define PG_BATCH_DEFAULT 2 /* batches in flight per handle (URL batch=N; 0: none) */
#define PG_BATCH_MAX 16
#define PG_COMPACT_DEFAULT_MS 60000 /* URL compact=MS|off (pg.c), as SQLite's */
#define PG_COMPACT_MAX_MS (365LL * 24 * 3600 * 1000)
#define PG_COMPACT_ROUNDS 64        /* batches per sweep (pg_compact.c) */

/* Prepared statements; texts in pg_schema.c. Prepared lazily per connection. */
typedef enum pg_stmt_id {
    PG_LOAD,
    PG_HEAD,
    PG_CREATE,
    PG_UPDATE,
    PG_EVENTS,
    PG_LEASES,
    PG_SWEEP,
    PG_PURGE,
    PG_LIST,            /* one page; the seven after it in this order, since */
    PG_LIST_AFTER,      /* pg_read.c picks one by arithmetic: +1 from a */
    PG_LIST_CTX,        /* cursor, +2 by context, +4 by state */
    PG_LIST_CTX_AFTER,
    PG_LIST_STATE,
    PG_LIST_STATE_AFTER,
    PG_LIST_CTX_STATE,
    PG_LIST_CTX_STATE_AFTER,
    PG_META_INSERT,
    PG_META_GET,
    PG_PUSH_ROWS,
    PG_PUSH_LOCK,
    PG_PUSH_GET_LOCK,
    PG_PUSH_PUT,
    PG_PUSH_DROP,
    PG_PUSH_CLAIM,
    PG_RENEW,
    PG_REPLICA_PUT,
    PG_REPLICAS,
    PG_COMPACT,         /* a batch of finished tasks: events trimmed, texts read */
    PG_TRIM,            /* one of them: trimmed, its texts replaced by packed */
    PG_NSTMT
} pg_stmt_id;
/* pg_conn's `prepared` keeps one bit per statement. */
_Static_assert(PG_NSTMT <= 32, "pg_conn.prepared has a bit per statement: widen it");

extern const char *const once__pg_sql[PG_NSTMT];
/* 1 for statements that write: if the connection breaks while one is in
 * flight, nobody knows whether it committed. */
extern const unsigned char once__pg_writes[PG_NSTMT];

/* The change feed (pg_feed.c): updates with events NOTIFY the channel
 * "once.<schema>" (current_schema(): connections set search_path to it)
 * with the key as "<hex principal>:<hex task_id>" (a payload is text:
 * hex keeps any byte of a key). */
#define PG_FEED_CHANNEL_SQL "'once.' || current_schema()"
#define PG_FEED_PAYLOAD_SQL "encode($1::bytea, 'hex') || ':' || encode($2::bytea, 'hex')"

/* Columns of a task row as written (PG_CREATE), and as selected by PG_LOAD
 * and the list queries: those and packed (NULL unless the task was
 * compacted: then its task_json and journal, pack.h), in this order
 * (once__pg_row_record reads them from column col0 on). */
#define PG_TASK_WRITE_COLS                                                                         \
    "principal, task_id, context_id, state, kind, version, generation, fence, step, "              \
    "lease_owner, lease_until, created_at, updated_at, finished_at, digests, task_json, "          \
    "checkpoint, push_json, journal"
#define PG_TASK_COLS PG_TASK_WRITE_COLS ", packed"
#define PG_TASK_NCOLS 20
#define PG_TASK_PACKED_COL 19

/* Columns of a delivery row after its key (pg_push.c decodes them). */
#define PG_PUSH_COLS                                                                               \
    "config_id, since, delivered, target, attempts, next_attempt_at, lease_owner, lease_until, "    \
    "disabled, last_error, deliveries, retries, failures"

/* One connection. Owned by one thread between acquire and release; nothing
 * here is locked. item's flags (broken, unsure, again: store/pool.h) and
 * in_tx describe the current slot call only. */
typedef struct pg_conn {
    once__pool_item item; /* first: the pool links idle connections through it */
    PGconn *pg;
    uint32_t prepared;    /* bit id: statement id prepared on this connection */
    int in_tx;            /* inside once__pg_begin: a write is not yet in doubt */
} pg_conn;

/* Compaction's place on the finished tasks' order (finished_at, key):
 * every task up to it was compacted or passed over (pg_compact.c). */
typedef struct pg_mark {
    int64_t finished_at;
    char principal[ONCE_PRINCIPAL_MAX + 1];
    char task_id[ONCE_ID_MAX + 1];
} pg_mark;

/*
 * The handle. conninfo, schema, pool_max, batch_leaders, compact_ms and
 * base.m are set by open and read-only afterwards; the pool and the batch
 * guard themselves (store/pool.h, store/batch.h). mark and zip belong to
 * whoever holds cmu: one compaction pass at a time (pg_compact.c).
 * base.errmsg is written through once__store_seterr (its own lock).
 */
typedef struct pg_store {
    once_store base;
    char *conninfo; /* the URL minus once's own query parameters */
    char schema[PG_SCHEMA_MAX + 1];
    size_t pool_max;
    int batch_leaders; /* 0: every write runs alone */
    int reset;         /* URL reset=1: empty once's tables at open (tests only) */

    once__pool pool;    /* connections (store/pool.h) */
    once__pool bpool;   /* the batches' own connections, one per batch in flight: a
                           batch never waits behind the reads for one */
    once__batch batch;  /* group commit of creates and updates (pg_batch.c) */

    int64_t compact_ms;   /* finished this long: compacted by the sweep; < 0 never */
    pthread_mutex_t cmu;  /* held by the compaction pass running, if any */
    pg_mark mark;         /* where the last committed batch stopped */
    once__zip zip;        /* the pass's deflater */
} pg_store;

/* ---- pg_conn.c: parameters ---- */

#define PG_MAXPARAM 24

/* Binary-format parameters for one statement. Integers are stored
 * big-endian in num[]; blob owns the encoded bytea[] of events (if any). */
typedef struct pg_params {
    int n;
    const char *v[PG_MAXPARAM];
    int len[PG_MAXPARAM];
    int fmt[PG_MAXPARAM];
    unsigned char num[PG_MAXPARAM][8];
    char *blob;
} pg_params;

void once__pg_p_init(pg_params *p);
void once__pg_p_free(pg_params *p);               /* frees blob */
void once__pg_p_i64(pg_params *p, int64_t x);     /* int8 */
void once__pg_p_i16(pg_params *p, int x);         /* int2 */
void once__pg_p_str(pg_params *p, const char *s); /* bytea; NULL binds SQL NULL */
void once__pg_p_bytes(pg_params *p, const void *b, size_t n); /* bytea of n bytes */
void once__pg_p_null(pg_params *p);
/* bytea[] of the payloads ev[0..n) (an empty array when n == 0). */
int once__pg_p_payloads(pg_params *p, const once_event *ev, size_t n);

/* ---- pg_conn.c: results ---- */

int64_t once__pg_i64(const PGresult *r, int row, int col); /* bool/int2/4/8; NULL -> 0 */
/* Copy a bytea column into a fixed char array of cap bytes (NUL-terminated):
 * ONCE_ECORRUPT if it does not fit or holds a NUL byte. */
int once__pg_fixed(const PGresult *r, int row, int col, char *dst, size_t cap);
/* once_malloc'd copy of a bytea column; SQL NULL gives *out = NULL. */
int once__pg_dup(const PGresult *r, int row, int col, char **out);
/* Columns col0 .. col0+19 (PG_TASK_COLS) into *out (zeroed first); a
 * packed task's texts come out whole. */
int once__pg_row_record(const PGresult *r, int row, int col0, once_record *out);
/* Fills elem (zeroed) from row `row` of r; once__pg_rows' decoder. */
typedef int (*pg_row_fn)(const PGresult *r, int row, void *elem, void *arg);
/* Runs statement id and decodes each row it returns into one element of a
 * fresh zeroed array of `size`-byte elements: *v (NULL when no row came), *n
 * the elements decoded so far, the one a decoder failed on included, so that
 * the list's clear frees whatever a failure left. */
int once__pg_rows(pg_store *s, pg_conn *c, pg_stmt_id id, const pg_params *p, size_t size,
                  pg_row_fn fn, void *arg, void **v, size_t *n);

/* ---- pg_conn.c: connections and statements ---- */

extern const once__pool_ops once__pg_pool_ops;

/* Prepare statement id on c unless it is already. */
int once__pg_prepare(pg_store *s, pg_conn *c, pg_stmt_id id);
/* Run a prepared statement (preparing it on first use); *out is the result
 * on ONCE_OK (PQclear it). Failures set c's flags and s's errmsg. */
int once__pg_exec(pg_store *s, pg_conn *c, pg_stmt_id id, const pg_params *p, PGresult **out);
/* Run a parameterless command or query text (binary results). */
int once__pg_simple(pg_store *s, pg_conn *c, const char *sql, PGresult **out);
/* once__pg_exec and once__pg_simple of a statement whose result nobody
 * reads (a write whose count does not matter, BEGIN, DECLARE, CLOSE): the
 * result is dropped here. */
int once__pg_exec_done(pg_store *s, pg_conn *c, pg_stmt_id id, const pg_params *p);
int once__pg_simple_done(pg_store *s, pg_conn *c, const char *sql);
/* Classify a failed result (r may be NULL), set flags and errmsg, PQclear r. */
int once__pg_fail(pg_store *s, pg_conn *c, PGresult *r, const char *what);
/* An explicit transaction on c. Until COMMIT is sent nothing is in doubt,
 * so a broken connection inside it may be retried; while COMMIT is in
 * flight it is (c->item.unsure). Anything left open is rolled back before
 * the connection goes back to the pool, so error paths need not call
 * once__pg_rollback. */
int once__pg_begin(pg_store *s, pg_conn *c);
int once__pg_commit(pg_store *s, pg_conn *c);
void once__pg_rollback(pg_conn *c);

/* One slot's work on one connection, run by once__pg_run: once__pool_run
 * (store/pool.h) on s->pool, at most PG_ATTEMPTS times. */
typedef int (*pg_fn)(pg_store *s, pg_conn *c, void *arg);
int once__pg_run(pg_store *s, pg_fn fn, void *arg);

/* ---- pg_batch.c ---- */

/* One write of a batch: a conditional statement (PG_CREATE, PG_UPDATE)
 * whose first row's first column counts the rows it wrote. */
typedef struct pg_bop {
    pg_stmt_id id;
    const pg_params *p;
    const char *principal, *task_id; /* its key: batches lock in key order */
    int64_t count;                   /* out: 1 written, 0 not (a conflict) */
} pg_bop;

/* once__pg_batch_write's answer when nothing of the batch was written: the
 * caller runs its write alone (once__pg_run), which meets its own error. */
#define PG_ALONE 1

/* The run callback (store/batch.h) of s->batch. */
int once__pg_batch_run(void *owner, once__pool_item *it, void *arg);
/* Run op's statement in a batch: ONCE_OK with op->count once committed,
 * PG_ALONE, or an error (ONCE_ESTORE when the commit is in doubt). */
int once__pg_batch_write(pg_store *s, pg_bop *op);

/* ---- pg_compact.c ---- */

/* After the sweep's retention: finished tasks past compact_ms keep only
 * their last event, emptied, and their texts packed. Never fails the
 * sweep: what a failed batch left is redone by the next pass. */
void once__pg_compact(pg_store *s, int64_t now, size_t max);

/* ---- pg_schema.c ---- */

/* Apply the pending migrations on c (under an advisory lock) as sc says
 * (store_int.h, once__schema), then empty every table when reset is set. */
int once__pg_migrate(pg_store *s, pg_conn *c, once__schema *sc, int reset);

/* ---- slots (pg_write.c, pg_read.c, pg_check.c, pg_push.c; store/slots.h) ---- */

/* What (principal, task_id) holds, on c: ONCE_OK and *out (if non-NULL),
 * ONCE_ETOMBSTONE and *tomb (if non-NULL), ONCE_ENOTFOUND, or a failure. */
int once__pg_read_key(pg_store *s, pg_conn *c, const char *principal, const char *task_id,
                      once_record *out, once_tombstone *tomb);

ONCE__STORE_SLOTS(once__pg);
ONCE__STORE_PUSH_REPLICA_SLOTS(once__pg);
ONCE__STORE_CONN_FEED_SLOTS(once__pg);
ONCE__STORE_CREATE_START_SLOT(once__pg);

/* ---- pg_push.c ---- */

/* Inside the transaction that just created/updated rec: make the key's
 * delivery rows match rec->push_json (non-NULL) with once__push_sync. */
int once__pg_push_sync(pg_store *s, pg_conn *c, const once_record *rec);
/* check(): inside check's snapshot on c, count bad_push. */
/* One row of a cursor walk: ONCE_OK to go on, an error to stop with. */
typedef int (*pg_walk_fn)(pg_store *s, pg_conn *c, const PGresult *r, int i,
                          once_check_report *rep);
/* Run declare (a DECLARE of cursor), hand fn every row in batches, CLOSE
 * it: what the integrity checks read the tables with (pg_check.c). */
int once__pg_walk(pg_store *s, pg_conn *c, const char *declare, const char *cursor,
                  pg_walk_fn fn, once_check_report *rep);
int once__pg_check_push(pg_store *s, pg_conn *c, once_check_report *rep);

#endif /* ONCE_STORE_PG_INT_H */
