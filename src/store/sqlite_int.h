/*
 * sqlite_int.h -- internals shared by the sqlite backend's files:
 *   sqlite.c         slots, URL settings and options, open/close, the
 *                    method table
 *   sqlite_call.c    fault-counted wrappers over the sqlite3 API
 *   sqlite_conn.c    connections, the per-connection statement cache, the
 *                    reader pool, rollback/poison handling
 *   sqlite_schema.c  the schema and every SQL statement's text
 *   sqlite_commit.c  group commit: the write queue and the batch transaction
 *   sqlite_write.c   the write ops, each run inside its own SAVEPOINT
 *   sqlite_read.c    load, events, list, expired_leases, meta lookup
 *   sqlite_check.c   the integrity check
 *   sqlite_push.c    push delivery rows: sync with push_json, claim, ack
 *   sqlite_lease.c   renew: the lease-only write
 *
 * Invariants: only the current group-commit leader touches the writer
 * connection; a reader connection is owned by one thread between
 * acquire and release; every statement is reset before its connection
 * changes hands, so no connection holds a stale read snapshot.
 */
#ifndef ONCE_STORE_SQLITE_INT_H
#define ONCE_STORE_SQLITE_INT_H

#include <pthread.h>
#include <stdarg.h>
#include <sqlite3.h>

#include "db/db.h"
#include "once/store.h"
#include "store/batch.h"
#include "store/store_int.h"
#include "store/zip.h"

/* 1 -> 2: tasks.push_json, push_deliveries; 2 -> 3: tasks.journal; 3 -> 4: replicas;
 * 4 -> 5: an index per list filter; 5 -> 6: tasks.packed; 6 -> 7: tasks.rid, events
 * keyed by it */
#define SQ_SCHEMA_VERSION 7
#define SQ_BATCH_MAX 256      /* ops per group commit */
#define SQ_STMT_SPILL (120 << 10) /* savepoint journal bytes kept in memory (sqlite_call.c) */
/* Idle reader connections kept open: as many as onced runs calls at once
 * (64 HTTP workers by default), so a steady load reuses them instead of
 * opening a connection (file opens, schema parse, statement prepares) per
 * read. An idle reader holds two descriptors and the pages it has cached. */
#define SQ_IDLE_READERS 64
#define SQ_BUSY_RETRIES 3     /* retries after busy_timeout gave up */
#define SQ_BUSY_DEFAULT_MS 5000
#define SQ_BUSY_MAX_MS 3600000
/* WAL pages after which a commit checkpoints (sqlite_conn.c). */
#define SQ_CKPT_PAGES 500
#define SQ_VFS_NAME_MAX 63

/* What PRAGMA synchronous reads back for the levels once sets (SQLite's
 * own numbering; EXTRA, 3, is never set). */
#define SQ_PRAGMA_SYNC_OFF 0
#define SQ_PRAGMA_SYNC_NORMAL 1
#define SQ_PRAGMA_SYNC_FULL 2

/* One commit durability: the ONCE_SYNC_* level, the keyword both the URL
 * and PRAGMA synchronous take, and what the PRAGMA reads back. */
typedef struct sq_sync_level {
    int level;
    const char *name;
    int pragma;
} sq_sync_level;

/* Cached statements; texts in sqlite_schema.c (once__sq_sql). */
typedef enum sq_stmt_id {
    SQ_BEGIN,
    SQ_COMMIT,
    SQ_ROLLBACK,
    SQ_SAVEPOINT,
    SQ_RELEASE,
    SQ_ROLLBACK_TO,
    SQ_BEGIN_READ,
    SQ_TASK_GET,
    SQ_TOMB_GET,
    SQ_TASK_HEAD,       /* version, generation, rid of one key */
    SQ_TASK_INSERT,
    SQ_TASK_UPDATE,
    SQ_EVENT_INSERT,    /* one event row; _2.._4: that many in one statement */
    SQ_EVENT_INSERT_2,
    SQ_EVENT_INSERT_3,
    SQ_EVENT_INSERT_4,
    SQ_EVENTS_GET,
    SQ_LEASES,
    SQ_LIST,            /* one page; the seven after it in this order, since */
    SQ_LIST_AFTER,      /* sqlite_read.c picks one by arithmetic: +1 from a */
    SQ_LIST_CTX,        /* cursor, +2 by context, +4 by state */
    SQ_LIST_CTX_AFTER,
    SQ_LIST_STATE,
    SQ_LIST_STATE_AFTER,
    SQ_LIST_CTX_STATE,
    SQ_LIST_CTX_STATE_AFTER,
    SQ_SWEEP_PICK,
    SQ_COMPACT_PICK,    /* finished tasks past the compaction age, in order */
    SQ_TASK_TEXTS,      /* task_json, journal of one unpacked task, by rid */
    SQ_TASK_PACK,       /* ... replaced by packed (a new row, a new rid) */
    SQ_EVENTS_MOVE,     /* a task's events from one rid to another */
    SQ_EVENTS_TRIM,     /* a task's events before its last */
    SQ_EVENT_EMPTY,     /* its last event's payload, emptied */
    SQ_TOMB_INSERT,
    SQ_EVENTS_DELETE,
    SQ_TASK_DELETE,
    SQ_PURGE,
    SQ_META_GET,
    SQ_META_INSERT,
    SQ_PUSH_ROWS,       /* the rows of one key */
    SQ_PUSH_GET,        /* one row */
    SQ_PUSH_PUT,        /* insert or replace one row */
    SQ_PUSH_DELETE_KEY,
    SQ_PUSH_DUE,        /* due rows, oldest next_attempt_at first */
    SQ_PUSH_LEASE,
    SQ_TASK_RENEW,      /* text in sqlite_lease.c, which prepares it itself */
    SQ_REPLICA_PUT,     /* upsert one heartbeat row */
    SQ_REPLICAS,        /* every heartbeat row, by id */
    SQ_NSTMT
} sq_stmt_id;

/* Rows one SQ_EVENT_INSERT_k statement takes at most. */
#define SQ_EVENT_ROWS_MAX 4

extern const char *const once__sq_sql[SQ_NSTMT];
/* Columns of a task row as written (SQ_TASK_INSERT), and as SELECTed by
 * SQ_TASK_GET and the list queries: those and packed (NULL unless the task
 * was compacted: then its task_json and journal, sqlite_read.c). */
#define SQ_TASK_WRITE_COLS                                                                \
    "principal, task_id, context_id, state, kind, version, generation, fence, step, "   \
    "lease_owner, lease_until, created_at, updated_at, finished_at, digests, task_json, " \
    "checkpoint, push_json, journal"
#define SQ_TASK_COLS SQ_TASK_WRITE_COLS ", packed"
#define SQ_TASK_NCOLS 20
#define SQ_TASK_PACKED_COL 19
/* Columns of a push_deliveries row after its key (sqlite_push.c decodes). */
#define SQ_PUSH_COLS                                                                      \
    "config_id, since, delivered, target, attempts, next_attempt_at, lease_owner, "      \
    "lease_until, disabled, last_error, deliveries, retries, failures"

/* One connection and its statement cache. Owned by one thread at a time
 * (the leader for the writer, the acquirer for a reader); nothing here is
 * locked. st[] entries are prepared lazily and kept until the connection
 * is closed. */
typedef struct sq_conn {
    sqlite3 *db;
    sqlite3_stmt *st[SQ_NSTMT];
    struct sq_conn *next;   /* idle-pool link; guarded by sq_store.pmu */
} sq_conn;

typedef enum sq_op_kind {
    SQ_OP_CREATE,
    SQ_OP_UPDATE,
    SQ_OP_SWEEP,
    SQ_OP_PURGE,
    SQ_OP_META,
    SQ_OP_SYNC,         /* test hook: read the writer's PRAGMA synchronous */
    SQ_OP_PUSH_CLAIM,
    SQ_OP_PUSH_ACK,
    SQ_OP_RENEW,
    SQ_OP_REPLICA,
    SQ_OP_COMPACT
} sq_op_kind;

/* A queued write. The caller fills the arguments and waits; the leader
 * that takes it writes the outputs and rc (store/batch.h says who posts
 * whom). The caller reads nothing before its submit returns. An op with
 * `landed` set is
 * asynchronous (once__sq_submit_async): nobody waits on it; the leader
 * that committed it calls landed(op) once, and the op is the callee's
 * from then on. */
typedef struct sq_op {
    sq_op_kind kind;
    const once_record *rec;           /* create, update */
    const once_event *ev;
    size_t nev;
    int64_t expect_version;           /* update */
    once_record *winner;              /* create outputs (may be NULL) */
    once_tombstone *tomb;
    int64_t before;                   /* sweep: finished_before; purge: expired_before */
    int64_t now;                      /* sweep */
    size_t max;                       /* sweep, purge */
    size_t *n;                        /* sweep, purge, sync output */
    const char *name;                 /* meta */
    const char *init_value;
    char **out;                       /* meta output */
    const char *owner;                /* push claim, renew */
    const char *principal, *task_id;  /* renew */
    int64_t fence, until;
    int64_t lease_ms;
    once_push_claim_list *claims;     /* push claim output */
    const once_push_ack *ack;         /* push ack */
    const once_replica *replica;      /* replica beat */
    const struct sq_mark *from;       /* compact: where the last one stopped */
    struct sq_mark *mark;             /* compact output: where this one stops */

    int rc;
    void (*landed)(struct sq_op *op); /* asynchronous: called instead of a post */
    once__batch_op bop;               /* its place in the group commit (arg: this op) */
} sq_op;

/* Compaction's place on the finished tasks' order (finished_at, key):
 * every task up to it was compacted or passed over (sqlite_write.c). */
typedef struct sq_mark {
    int64_t finished_at;
    char principal[ONCE_PRINCIPAL_MAX + 1];
    char task_id[ONCE_ID_MAX + 1];
} sq_mark;

#define SQ_COMPACT_DEFAULT_MS 60000   /* sqlite:FILE?compact=MS|off */
#define SQ_COMPACT_MAX_MS (365LL * 24 * 3600 * 1000)
#define SQ_COMPACT_ROUNDS 64          /* batches per sweep (sqlite.c sq_sweep) */

/*
 * The handle. Set at open and read-only afterwards: base.m, path,
 * open_name, open_flags, sync, busy_ms. batch is the group commit
 * (store/batch.h) with one leader at a time; writer belongs to that
 * leader and is touched only by it. pmu guards the idle reader list.
 * base.errmsg is written through once__store_seterr (its own lock).
 */
typedef struct sq_store {
    once_store base;
    char *path;             /* the file, as the URL names it */
    char *open_name;        /* what connections open: path, or a file: URI
                             * naming the URL's vfs */
    int open_flags;         /* SQLITE_OPEN_URI with a vfs, else 0 */
    const sq_sync_level *sync;
    int busy_ms;

    once__batch batch;
    sq_conn *writer;
    once__zip zip;          /* the writer's deflater (compaction); the leader's alone */

    pthread_mutex_t pmu;
    sq_conn *idle;
    size_t nidle;

    int64_t compact_ms;     /* finished this long: compacted by the sweep; < 0 never */
    pthread_mutex_t cmu;    /* guards mark: sweeps may overlap (several engines) */
    sq_mark mark;
} sq_store;

/* ---- sqlite_call.c: wrappers (fault-counted) and result mapping ---- */
int once__sq_open(const char *path, int flags, sqlite3 **db);
int once__sq_busy_timeout(sqlite3 *db, int ms);
int once__sq_exec(sqlite3 *db, const char *sql);
int once__sq_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st);
int once__sq_bind_text(sqlite3_stmt *st, int i, const char *s);   /* NULL binds NULL */
int once__sq_bind_int64(sqlite3_stmt *st, int i, int64_t v);
/* Bind parameters first, first + 1, ... from types, one argument each:
 * 's' a const char * as once__sq_bind_text, 'i' an int64_t (cast it: the
 * argument list has no types). Stops at the first failure and returns its
 * code, else SQLITE_OK; every bind is one fault point, as the single ones. */
int once__sq_bind(sqlite3_stmt *st, int first, const char *types, ...);
int once__sq_vbind(sqlite3_stmt *st, int first, const char *types, va_list ap);
int once__sq_step(sqlite3_stmt *st);
int once__sq_reset(sqlite3_stmt *st);
void once__sq_count_commit(size_t ops);
void once__sq_count_rerun(void);
/* SQLITE_BUSY/LOCKED -> ONCE_EBUSY, NOMEM -> ONCE_ENOMEM, else ONCE_ESTORE. */

/* ---- sqlite_conn.c ---- */
/* Open a connection to s->open_name with the handle's busy timeout; the
 * writer also gets PRAGMA synchronous=<s->sync>, a reader query_only.
 * create: may create the file (the schema connection only). */
int once__sq_conn_open(sq_store *s, int writer, int create, sq_conn **out);
/* Finalize and close: ONCE_OK, or the close's error (the connection is
 * gone either way). NULL is a no-op. */
int once__sq_conn_close(sq_conn *c);
/* The cached statement id, prepared on first use. */
int once__sq_stmt(sq_conn *c, sq_stmt_id id, sqlite3_stmt **out);
/* Step a statement that returns no rows, then reset it. */
int once__sq_run(sq_conn *c, sq_stmt_id id);
/* The cached statement id with ?1, ?2, ... bound from types as
 * once__sq_bind binds them: ONCE_OK with *out ready to step, else the
 * error, and a statement whose binding failed is reset at once, so it
 * keeps no pointer into the caller's buffers. The step every slot that
 * runs a statement on its own arguments begins with. */
int once__sq_stmt_bind(sq_conn *c, sq_stmt_id id, sqlite3_stmt **out, const char *types, ...);
int once__sq_stmt_vbind(sq_conn *c, sq_stmt_id id, sqlite3_stmt **out, const char *types,
                        va_list ap);
/* once__sq_stmt_bind, then once__sq_finish: a statement that returns no
 * rows, run on the arguments types describes. */
int once__sq_run_bound(sq_conn *c, sq_stmt_id id, const char *types, ...);
/* The end of a statement that returns no rows, whose binding returned src:
 * stepped (when the binding worked), then always reset, so no failed
 * binding leaves pointers to the caller's buffers bound. ONCE_OK on
 * SQLITE_DONE; a row is an error. */
int once__sq_finish(sqlite3_stmt *st, int src);
/* End whatever transaction c has open: 0 if c is clean afterwards, -1 if
 * it must be closed (a ROLLBACK failed). */
int once__sq_abort(sq_conn *c);
/* Reader pool. release closes c instead of pooling it when it is left
 * inside a transaction or the pool is full. */
int once__sq_reader(sq_store *s, sq_conn **out);
void once__sq_release(sq_store *s, sq_conn *c);
/* A read op on one reader connection, retried with backoff while the file
 * is busy; fn cleans its outputs on failure, and a failure's detail goes to
 * the handle's errmsg under what. */
typedef int (*sq_read_fn)(sq_conn *c, void *arg);
int once__sq_with_reader(sq_store *s, const char *what, sq_read_fn fn, void *arg);
/* The generations slot (sqlite_read.c). */
int once__sq_generations(sq_store *s, const once_key *keys, size_t n, int64_t *gens);
/* base.errmsg: what failed, rc's text and db's last message (db may be
 * NULL; only the thread owning db may pass it). */
void once__sq_seterr(sq_store *s, sqlite3 *db, const char *what, int rc);

/* ---- sqlite_schema.c ---- */
/* Create, migrate or verify the schema on a fresh writer-capable
 * connection, as sc says (store_int.h, once__schema). */
int once__sq_schema(sq_store *s, sq_conn *c, once__schema *sc);

/* ---- sqlite_commit.c ---- */
/* Queue op, wait for a leader (maybe this thread) to run it; op->rc. */
int once__sq_submit(sq_store *s, sq_op *op);
/* Queue op (op->landed set) and return without waiting: ONCE_OK, and
 * op->landed(op) is called once, with op->rc final, on the thread that
 * commits it (never this one); or an error, op untouched and landed never
 * called. */
int once__sq_submit_async(sq_store *s, sq_op *op);
/* The handle's group commit: set up at parse, before anything can fail;
 * destroyed at release (nothing is queued then). */
void once__sq_batch_init(sq_store *s);
void once__sq_batch_destroy(sq_store *s);

/* ---- sqlite_write.c ---- */
/* What runs one kind of op: every kind's function has this shape, so that
 * once__sq_op_exec picks it from a table. */
typedef int (*sq_op_fn)(sq_store *s, sq_conn *w, sq_op *op);
/* Run one op inside the open transaction (the caller wraps a SAVEPOINT). */
int once__sq_op_exec(sq_store *s, sq_conn *w, sq_op *op);
/* Drop outputs an op wrote before its batch failed. */
void once__sq_op_discard(sq_op *op);

/* ---- sqlite_read.c ---- */
/* Column col, which must be TEXT shorter than cap, into dst: ONCE_ECORRUPT
 * for anything else, ONCE_ENOMEM when SQLite could not give the text. */
int once__sq_text(char *dst, size_t cap, sqlite3_stmt *st, int col);
int once__sq_row_record(sqlite3_stmt *st, int col0, once_record *out);
int once__sq_row_tomb(sqlite3_stmt *st, int col0, once_tombstone *out);
int once__sq_load(sq_store *s, const char *principal, const char *task_id, once_record *out,
                  once_tombstone *tomb);
int once__sq_events(sq_store *s, const char *principal, const char *task_id, int64_t after,
                    size_t max, once_event_list *out);
int once__sq_expired_leases(sq_store *s, int64_t now, size_t max, once_key_list *out);
int once__sq_list(sq_store *s, const once_list_query *q, once_record_list *out);
/* ONCE_OK and *out, or ONCE_ENOTFOUND. */
int once__sq_meta_get(sq_store *s, const char *name, char **out);

/* ---- sqlite_check.c ---- */
int once__sq_check(sq_store *s, once_check_report *rep);

/* ---- sqlite_push.c ---- */
/* Inside a write op, after the task row of rec was written: make the key's
 * delivery rows match rec->push_json (store_int.h, once__push_sync). */
int once__sq_push_sync(sq_conn *w, const once_record *rec);
/* Inside a write op: drop the key's rows (entomb). */
int once__sq_push_drop(sq_conn *w, const char *principal, const char *task_id);
int once__sq_op_push_claim(sq_store *s, sq_conn *w, sq_op *op);
int once__sq_op_push_ack(sq_store *s, sq_conn *w, sq_op *op);
/* The slots (claim checks on a reader first, so an idle poll never takes
 * the write lock). */
int once__sq_push_claim(sq_store *s, const char *owner, int64_t now, int64_t lease_ms,
                        size_t max, once_push_claim_list *out);
int once__sq_push_ack(sq_store *s, const once_push_ack *ack);
int once__sq_push_rows(sq_store *s, const char *principal, const char *task_id,
                       once_push_row_list *out);
/* check(): rows vs push_json over one read transaction on c. */
int once__sq_check_push(sq_conn *c, once_check_report *rep);

/* ---- sqlite_lease.c ---- */
/* The renew slot (arguments checked by once_store_renew) and its op. */
int once__sq_renew(once_store *s, const char *principal, const char *task_id, const char *owner,
                   int64_t fence, int64_t until);
int once__sq_op_renew(sq_store *s, sq_conn *w, sq_op *op);

/* ---- sqlite_replica.c ---- */
/* The replica slots (store.h) and the beat's op. */
int once__sq_replica_beat(once_store *s, const once_replica *r);
int once__sq_replicas(once_store *s, once_replica_list *out);
int once__sq_op_replica(sq_store *s, sq_conn *w, sq_op *op);

#endif
