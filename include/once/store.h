/*
 * store.h -- the task registry contract. One vtable (once_store_methods), one
 * base struct (once_store), five backends: memory, sqlite, postgres, redis,
 * dynamodb.
 *
 * The store keeps three kinds of rows, keyed by (principal, task_id):
 *   - the task record (once_record): A2A task JSON plus the fields the
 *     idempotency layer needs (version, generation, fence, lease, digests);
 *   - its events (once_event): one per generation, appended in the same
 *     atomic write as the record change that produced them;
 *   - the tombstone (once_tombstone) a finished record becomes after its
 *     retention window, until it is purged.
 * A key holds at most one of record / tombstone at any time.
 *
 * A backend never decides lifecycle: it stores what the engine hands it,
 * atomically, and reports conflicts. Every slot is safe to call from many
 * threads on one handle at once; backends flagged ONCE_STORE_SHARED are also
 * correct when several processes (or machines) share the same data.
 *
 * Writing a backend: this file is the whole contract.
 *   1. A handle struct whose first member is `once_store` (below).
 *   2. One `once_store_methods` table: version ONCE_STORE_METHODS_VERSION,
 *      its URL scheme, its capability bits (caps), and the slots. The
 *      slots from open to renew are required; every other slot belongs to
 *      one capability bit and is filled exactly when caps has that bit
 *      (NULL otherwise: the engine then takes the fallback the bit's
 *      comment names, and never calls it). The engine decides what to do
 *      from the bits alone (once_store_caps), never from which backend it
 *      is.
 *   3. Its open may clear, for one handle, a bit its URL turns off
 *      (once_store.caps_off).
 *   4. The once_store_* helpers at the end of this file check arguments
 *      and zero outputs before a slot runs, so slots take them as valid.
 * A backend built outside libonce opens through once_store_open_methods,
 * which refuses a table of another version or one whose bits name a NULL
 * slot. Inside libonce a backend is one more row of store.c's scheme
 * table and spells its table with ONCE__STORE_TABLE (src/store/slots.h),
 * which makes it name every slot; the store conformance suite
 * (tests/store/conformance.c URL) then runs every case against it,
 * including each optional slot its bits claim and the fallback of each
 * one they do not.
 */
#ifndef ONCE_STORE_H
#define ONCE_STORE_H

#include "once/once.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ONCE_OWNER_MAX 64

/*
 * The task record. String fields are NUL-terminated; the char* members are
 * owned by the record (allocated with once_malloc) and released by
 * once_record_clear(). A record returned by a store slot is the caller's.
 *
 *   version     CAS guard: 1 at create, +1 on every update.
 *   generation  number of the last event appended (0 = none yet). Events are
 *               numbered 1, 2, 3 ... without gaps.
 *   fence       bumped by the engine whenever who-may-write changes
 *               (register, continuation, cancel, takeover).
 *   step        next side-effect step index (persisted checkpoint counter).
 *   lease_owner replica holding the execution lease ("" = none);
 *   lease_until lease expiry, ms since epoch (0 = no lease).
 *   digests     accepted messages, one per line: "<64 hex> <messageId>\n"
 *               (messageId empty for 0.1 tasks/send). Never NULL in a stored
 *               record (may be "").
 *   task_json   the A2A 1.0 outcome as JSON text: a Task object, or a Message
 *               when kind == ONCE_KIND_MESSAGE. Never NULL in a stored record.
 *   checkpoint  executor checkpoint text, or NULL.
 *   push_json   the task's push notification configs, or NULL (none): a JSON
 *               array of at most ONCE_PUSH_CONFIGS_MAX objects, each with a
 *               unique "id" (a valid task-ID-shaped string) and an integer
 *               "since" (0..generation: events after it are delivered); other
 *               members are the engine's. Stored and returned verbatim;
 *               backends with ONCE_STORE_PUSH keep one delivery row per
 *               element (see "Push delivery"), backends without it may
 *               drop it (the engine refuses push configs on them).
 *   journal     the task's timeline facts the events do not carry (turns,
 *               takeovers, replays, refusals, fenced writes) as the engine's
 *               compact JSON object, or NULL (none). Every backend stores
 *               and returns it verbatim with the record; the engine bounds
 *               it (ONCE_JOURNAL_MAX bytes).
 */
typedef enum once_record_kind {
    ONCE_KIND_TASK = 0,
    ONCE_KIND_MESSAGE = 1, /* the agent answered with a direct Message */
    ONCE_KIND_RESUME = 2   /* only in a list page, last: where a bounded
                            * scan stopped (see the list slot) */
} once_record_kind;

typedef struct once_record {
    char principal[ONCE_PRINCIPAL_MAX + 1];
    char task_id[ONCE_ID_MAX + 1];
    char context_id[ONCE_ID_MAX + 1];
    once_state state;
    once_record_kind kind;
    int64_t version;
    int64_t generation;
    int64_t fence;
    int64_t step;
    char lease_owner[ONCE_OWNER_MAX + 1];
    int64_t lease_until;
    int64_t created_at;   /* ms since epoch */
    int64_t updated_at;
    int64_t finished_at;  /* 0 until the state is terminal */
    char *digests;
    char *task_json;
    char *checkpoint;
    char *push_json;      /* push configs (see "Push delivery" below) or NULL */
    char *journal;        /* timeline facts (engine's JSON) or NULL */
} once_record;

/* The most bytes of journal the engine stores with a record. */
#define ONCE_JOURNAL_MAX (16 * 1024)

/* Free the owned strings and zero the record. NULL is a no-op. */
ONCE_API void once_record_clear(once_record *r);
/* Deep copy src into dst (dst is overwritten, not cleared first). */
ONCE_API int once_record_copy(once_record *dst, const once_record *src);

/* What remains of a record after retention: enough to answer TASK_EXPIRED. */
typedef struct once_tombstone {
    char principal[ONCE_PRINCIPAL_MAX + 1];
    char task_id[ONCE_ID_MAX + 1];
    char first_digest[ONCE_DIGEST_HEX + 1];  /* first accepted message's digest */
    int64_t finished_at;
    int64_t expired_at;   /* when it became a tombstone */
} once_tombstone;

/* One event: the A2A StreamResponse JSON produced by mutation `generation`. */
typedef struct once_event {
    int64_t generation;
    char *payload;        /* owned when returned by a store */
} once_event;

typedef struct once_event_list {
    once_event *v;
    size_t n;
} once_event_list;
ONCE_API void once_event_list_clear(once_event_list *l);

typedef struct once_key {
    char principal[ONCE_PRINCIPAL_MAX + 1];
    char task_id[ONCE_ID_MAX + 1];
} once_key;

typedef struct once_key_list {
    once_key *v;
    size_t n;
} once_key_list;
ONCE_API void once_key_list_clear(once_key_list *l);

typedef struct once_record_list {
    once_record *v;
    size_t n;
} once_record_list;
ONCE_API void once_record_list_clear(once_record_list *l);

/* ListTasks filter and cursor. Records are ordered by (created_at, task_id)
 * ascending; the page starts strictly after (after_created_at, after_task_id)
 * when after_task_id is non-NULL. context_id / state filter when set. */
typedef struct once_list_query {
    const char *principal;
    const char *context_id;      /* NULL = any */
    once_state state;            /* ONCE_STATE_UNKNOWN = any */
    int64_t after_created_at;
    const char *after_task_id;   /* NULL = from the start */
    size_t limit;                /* 1..1000 */
} once_list_query;

/* Result of the integrity check (conformance tests, fault sweeps, chaos). */
typedef struct once_check_report {
    size_t records;
    size_t tombstones;
    size_t events;
    size_t bad_generation;   /* record.generation != its last event's generation */
    size_t event_gaps;       /* events not numbered 1..generation without gaps */
    size_t orphan_events;    /* events whose key has no record */
    size_t bad_state;        /* state outside the enum, or finished_at inconsistent */
    char first_problem[256]; /* human description of the first problem found */
    size_t bad_push;         /* delivery rows and push_json disagree (ONCE_STORE_PUSH) */
} once_check_report;

/* Capability bits (once_store_methods.caps). Each bit either promises a
 * property or names the optional slots the backend fills; after the
 * colon, what the engine does on a backend without it (the fallback).
 * A bit that names slots needs all of them (once_store_open_methods
 * refuses the table otherwise); without the bit its slots may be NULL and
 * are never called. */
#define ONCE_STORE_SHARED  0x1u  /* several processes/hosts may share the data:
                                  * without, the data is one process's */
#define ONCE_STORE_DURABLE 0x2u  /* an acknowledged write survives a crash */
#define ONCE_STORE_PUSH    0x4u  /* push_* slots: push configs are refused */
#define ONCE_STORE_FEED    0x8u  /* feed_* slots: followers poll the store */
#define ONCE_STORE_GENERATIONS 0x10u /* generations slot: followers poll one
                                      * task at a time */
#define ONCE_STORE_REPLICAS 0x20u /* replica_* slots: no cluster view */
#define ONCE_STORE_CREATE_START 0x40u /* create_start slot: a new task's create
                                       * waits on the caller's thread */
#define ONCE_STORE_START_PUSH 0x80u /* create_start takes records with
                                     * push_json: those wait as above */
#define ONCE_STORE_LOCAL   0x100u /* reads make no network round trip (no slot):
                                   * sends never run on a thread that must
                                   * not wait (engine.h once__engine_holds) */
#define ONCE_STORE_BUDGET  0x200u /* budget slot: no early-expiry counts, the
                                   * sweep keeps its interval */
#define ONCE_STORE_SYNCHRONOUS 0x400u /* synchronous slot: no durability
                                       * level to report */
#define ONCE_STORE_LIST_SEEK 0x800u /* list seeks every filter in an index
                                     * (no slot): a filtered page may stop
                                     * after ONCE_LIST_SCAN_MAX entries */

/* The most entries one list call examines on a backend without
 * ONCE_STORE_LIST_SEEK (see the list slot). */
#define ONCE_LIST_SCAN_MAX 1000

/* The most keys one generations call takes (DynamoDB's BatchGetItem). */
#define ONCE_STORE_GENERATIONS_MAX 100

/*
 * Durability of a commit, for a backend that has the choice (SQLite's PRAGMA
 * synchronous), as once_store_synchronous reads it back:
 *   FULL    the default: a write is acknowledged after its commit reached
 *           the disk (fsync), so it survives a power cut;
 *   NORMAL  the WAL is synced only at checkpoints: survives a crash of the
 *           process, not a power cut (the last commits can be lost);
 *   OFF     no sync at all (tests that measure something else).
 * ONCE_SYNC_DEFAULT (0) names no level.
 *
 * Backend settings live in the store URL and nowhere else, for every
 * backend; SQLite's are
 *     sqlite:PATH?synchronous=full|normal|off&busy_timeout=MS&vfs=NAME
 * (defaults: full, 5000 ms; vfs: a registered SQLite VFS, for tests). An
 * unknown or malformed setting fails open with ONCE_EINVAL naming it.
 */
#define ONCE_SYNC_DEFAULT 0
#define ONCE_SYNC_OFF 1
#define ONCE_SYNC_NORMAL 2
#define ONCE_SYNC_FULL 3

/* Open flags (once_store_options.flags).
 *   NO_MIGRATE  open changes no schema: a store whose schema is older than
 *               this once's, or not there yet, is refused with
 *               ONCE_EUNSUPPORTED ("store schema is at version N, this once
 *               needs M: run onced migrate") instead of migrated, so that
 *               replicas of a rollout start only on a store migrated
 *               beforehand (`onced migrate`). A store without a schema
 *               (memory:) ignores it. */
#define ONCE_STORE_OPEN_NO_MIGRATE 0x1u

/* What the caller, not the URL, gives a store: only what a URL cannot
 * carry. Zero it before setting fields: a zero field is the default. */
typedef struct once_store_options {
    const once_clock *clock;     /* NULL = system clock */
    unsigned flags;              /* ONCE_STORE_OPEN_* bits; 0 = migrate at open */
} once_store_options;

struct once_store;

/* "off", "normal", "full" for ONCE_SYNC_OFF..FULL; NULL otherwise. */
ONCE_API const char *once_sync_name(int level);
/* The level an open store commits at, read back from the store itself
 * (SQLite: its writer connection's PRAGMA synchronous): ONCE_SYNC_OFF,
 * NORMAL or FULL in *level (the synchronous slot). ONCE_EUNSUPPORTED for
 * backends without ONCE_STORE_SYNCHRONOUS; ONCE_ESTORE if it cannot be
 * read. */
ONCE_API int once_store_synchronous(struct once_store *s, int *level);

/*
 * Push delivery (ONCE_STORE_PUSH). A delivery row exists for every element of
 * a live record's push_json, keyed by (principal, task_id, config id). The
 * backend creates, resets and deletes rows itself, in the same atomic write
 * as the record change that implies it:
 *   - create/update: an id new to push_json gets a row with delivered = since;
 *     an id whose "since" changed is reset (delivered = since, attempts 0,
 *     enabled, lease and error cleared; counters kept); an id no longer in
 *     push_json loses its row; every row of the key learns the record's
 *     generation (target);
 *   - sweep: the key's rows go with the record.
 * A row is due when it is enabled, delivered < target, next_attempt_at <= now
 * and its lease is free or expired (lease_until <= now). Generations are
 * delivered one at a time, in order, by the lease holder only, so per task
 * and config the order is the event order and at most one sender is active.
 */
#define ONCE_PUSH_CONFIGS_MAX 16   /* elements of one push_json */
#define ONCE_PUSH_ERROR_MAX 255    /* last_error bytes kept */

/* A due row leased to the caller by push_claim. */
typedef struct once_push_claim {
    char principal[ONCE_PRINCIPAL_MAX + 1];
    char task_id[ONCE_ID_MAX + 1];
    char config_id[ONCE_ID_MAX + 1];
    int64_t generation;   /* delivered + 1: the event to send now */
    int64_t target;       /* the record's generation when claimed */
    int64_t attempts;     /* failed attempts already made at `generation` */
    int64_t lease_until;
} once_push_claim;

typedef struct once_push_claim_list {
    once_push_claim *v;
    size_t n;
} once_push_claim_list;
ONCE_API void once_push_claim_list_clear(once_push_claim_list *l);

/* A delivery row as stored (push_rows; status and counters for humans). */
typedef struct once_push_row {
    char config_id[ONCE_ID_MAX + 1];
    int64_t since;
    int64_t delivered;        /* last generation acknowledged 2xx (or since) */
    int64_t target;
    int64_t attempts;         /* failed attempts at delivered + 1 */
    int64_t next_attempt_at;  /* ms; 0 = now */
    char lease_owner[ONCE_OWNER_MAX + 1];
    int64_t lease_until;
    int disabled;             /* 410, or attempts exhausted: nothing more is sent */
    char last_error[ONCE_PUSH_ERROR_MAX + 1];
    int64_t deliveries;       /* events acknowledged 2xx */
    int64_t retries;          /* failed attempts after which a retry was scheduled */
    int64_t failures;         /* failed attempts (retried or not) */
} once_push_row;

typedef struct once_push_row_list {
    once_push_row *v;
    size_t n;
} once_push_row_list;
ONCE_API void once_push_row_list_clear(once_push_row_list *l);

typedef enum once_push_outcome {
    ONCE_PUSH_DELIVERED = 1,   /* delivered = generation, attempts 0, deliveries + 1 */
    ONCE_PUSH_RETRY = 2,       /* attempts, retries, failures + 1; next_attempt_at set */
    ONCE_PUSH_DISABLE = 3,     /* attempts, failures + 1; disabled */
    ONCE_PUSH_RELEASE = 4      /* only give the lease back (generation ignored) */
} once_push_outcome;

/* What the lease holder reports about one attempt. */
typedef struct once_push_ack {
    const char *principal, *task_id, *config_id;
    const char *owner;          /* the claimer */
    int64_t generation;         /* the generation attempted (must be delivered + 1) */
    once_push_outcome outcome;
    int64_t now;                /* ms; the lease must still run past it */
    int64_t lease_ms;           /* DELIVERED: > 0 keeps the lease until now + lease_ms
                                 * (to send the next generation); 0 releases it */
    int64_t next_attempt_at;    /* RETRY */
    const char *error;          /* RETRY, DISABLE: why (truncated); may be NULL */
} once_push_ack;

/*
 * Replica heartbeats (ONCE_STORE_REPLICAS): one row per onced process that
 * ran on the store, keyed by its replica id (the lease owner name its
 * turns write), written by that replica's heartbeat every beat and read by
 * the cluster view (once/admin/replicas, /inspect/). A row says what the
 * replica last told; whether it is alive is the reader's call from beat_at
 * (the engine: within 3 heartbeat intervals, engine.h). Rows are never
 * deleted by the store: a replica that stops cleanly marks its row
 * stopped, one that crashes leaves it as it last beat.
 */
#define ONCE_REPLICA_VERSION_MAX 31

typedef struct once_replica {
    char id[ONCE_OWNER_MAX + 1];                 /* 1..ONCE_OWNER_MAX bytes */
    char version[ONCE_REPLICA_VERSION_MAX + 1];  /* the once version it runs */
    int64_t started_at;   /* ms since epoch: when the replica's engine started */
    int64_t beat_at;      /* ms since epoch: its last beat */
    int64_t leases;       /* task leases it held at that beat (turns running there) */
    int stopped;          /* 1: it stopped cleanly (its last write said so) */
} once_replica;

typedef struct once_replica_list {
    once_replica *v;
    size_t n;
} once_replica_list;
ONCE_API void once_replica_list_clear(once_replica_list *l);

/*
 * A memory budget (ONCE_STORE_BUDGET): what a store that holds its data in
 * the process's memory (memory:?max=SIZE) reports to the engine, which
 * counts and logs the finished tasks the budget expired before their
 * retention ran out and shortens its sweep interval while there is a
 * budget (engine/sweep.c).
 */
typedef struct once_budget {
    size_t max_bytes;         /* the budget; 0: none */
    size_t bytes, tomb_bytes; /* held now: in all, by tombstones */
    uint64_t early;           /* finished tasks expired early, in all */
    uint64_t early_new;       /* of them, not yet told to a taking read */
    int64_t early_last;       /* finished_at of the newest one expired early */
    size_t live, tombs;       /* tasks held (running or finished), tombstones held */
    size_t cold;              /* of live, finished tasks held deflated (memory: cold
                                 path); last, so a backend that predates it leaves
                                 it 0 (once_store_budget zeroes *out first) */
} once_budget;

typedef struct once_store once_store;

/* The layout and meaning of once_store_methods. once_store_open_methods
 * refuses a table with any other version (ONCE_EUNSUPPORTED): a backend
 * built against another store.h may take other arguments or promise other
 * things than this libonce calls its slots for. Bumped whenever a slot's
 * arguments or contract change. */
#define ONCE_STORE_METHODS_VERSION 4

/* A backend's change feed (the feed_* slots): its own struct, whose first
 * member is this base (set by once_store_feed_open). */
typedef struct once_store_feed {
    once_store *store;
} once_store_feed;

/*
 * The vtable, read like sqlite3_io_methods: each slot below says what it
 * returns and what the caller (the engine, through the once_store_* helpers
 * at the end of this file) does with each answer. What holds for every slot:
 *   ONCE_OK          done, outputs filled;
 *   ONCE_ESTORE      the store could not answer (connection lost, I/O error,
 *   ONCE_EBUSY       overloaded, locked, throttled): the write may or may not
 *                    have landed and no verdict may be drawn. The engine
 *                    answers the request 503 STORE_UNAVAILABLE + Retry-After,
 *                    or, inside a turn, waits with backoff, re-loads and
 *                    decides again;
 *   ONCE_ENOMEM      an allocation failed; nothing was written and no
 *                    verdict may be drawn: the request fails as an
 *                    internal error;
 *   ONCE_EINVAL      arguments the helpers let through but the backend cannot
 *                    take (too large for its limits: ONCE_ERANGE where the
 *                    slot says so); nothing written. A bug or a client error:
 *                    the engine reports it and does not retry.
 * The helpers check keys and arguments before dispatch (ONCE_EINVAL), so a
 * slot may take them as valid. Output structs are zeroed before the slot
 * runs, so the caller may clear them whatever the result. Any other code is
 * named by the slot that returns it.
 */
typedef struct once_store_methods {
    int version;           /* ONCE_STORE_METHODS_VERSION */
    const char *scheme;    /* URL scheme: "memory", "sqlite", ... */
    unsigned caps;         /* ONCE_STORE_* bits */

    /* Open the store named by url (the whole URL, scheme included). On
     * success *out points at a struct whose first member is once_store. On
     * failure *out is NULL, nothing needs closing, and errbuf (if non-NULL)
     * holds a message. Creates the schema if absent and migrates an older
     * one, unless opt->flags has ONCE_STORE_OPEN_NO_MIGRATE. opt may be
     * NULL (all defaults).
     *   ONCE_EINVAL        the URL or one of its settings is malformed or
     *                      unknown (the message names it): fix the URL;
     *   ONCE_EUNSUPPORTED  the data was written by a newer once, the
     *                      server lacks a feature, or opt->flags has
     *                      ONCE_STORE_OPEN_NO_MIGRATE and the schema needs
     *                      a migration: do not start;
     *   ONCE_ESTORE        the store cannot be reached or read: onced exits
     *                      (its supervisor restarts it). */
    int (*open)(const char *url, const once_store_options *opt, once_store **out,
                char *errbuf, size_t errlen);

    /* Release everything. Never called with NULL, never after a failed open.
     * No other slot may be running. The handle is gone whatever it returns:
     *   ONCE_OK      everything acknowledged before is where open finds it;
     *   ONCE_ESTORE  a last flush or close failed (SQLite: closing a
     *   ONCE_EBUSY   connection): acknowledged writes are durable as the
     *                backend's caps say, but the caller reports it (onced
     *                prints it and exits 1). */
    int (*close)(once_store *s);

    /* Create-if-absent. Inserts rec (rec->version must be 1) and its events
     * ev[0..nev) atomically, unless the key already holds something:
     *   ONCE_EEXISTS     a live record exists; *winner (if non-NULL) receives
     *                    a copy of it. Nothing was written.
     *   ONCE_ETOMBSTONE  the key is tombstoned; *tomb (if non-NULL) receives it.
     *   ONCE_ERANGE      the record or an event is larger than the backend
     *                    keeps (DynamoDB's item limit); nothing written.
     * Exactly one of any number of concurrent creates of one key succeeds.
     * The engine answers EEXISTS from the winner (a replay, a continuation
     * or a refusal, decided by core/decide) and ETOMBSTONE with
     * TASK_EXPIRED; it never retries a create that returned either. */
    int (*create)(once_store *s, const once_record *rec, const once_event *ev, size_t nev,
                  once_record *winner, once_tombstone *tomb);

    /* Load the record for (principal, task_id):
     *   ONCE_OK          *out filled;
     *   ONCE_ETOMBSTONE  *tomb (if non-NULL) filled, *out zeroed;
     *   ONCE_ENOTFOUND   neither exists.
     * The engine answers TASK_EXPIRED for a tombstone and TASK_NOT_FOUND (or
     * a registration, on a send) for ENOTFOUND. */
    int (*load)(once_store *s, const char *principal, const char *task_id, once_record *out,
                once_tombstone *tomb);

    /* Compare-and-swap. Replaces the stored record of rec's key with rec if
     * the stored version equals expect_version, and appends ev[0..nev) in the
     * same atomic write. Requires rec->version == expect_version + 1 and the
     * events numbered stored.generation+1 .. rec->generation consecutively
     * (ONCE_EINVAL otherwise, nothing written).
     *   ONCE_ECONFLICT   stored version differs, or the key holds no record;
     *   ONCE_ERANGE      as for create; nothing written.
     * Callers re-load and decide again on ECONFLICT (the fence and the state
     * machine then say whether the write still applies). */
    int (*update)(once_store *s, const once_record *rec, int64_t expect_version,
                  const once_event *ev, size_t nev);

    /* Events of one task with generation > after, ascending, at most max
     * (0 = no limit). A missing key yields an empty list, not an error. Only
     * the common codes.
     *
     * Compaction: a backend may let a finished task (terminal state, no
     * push delivery owed) keep only its last event -- the one at the
     * record's generation -- with an empty payload (PostgreSQL keeps it as
     * a column of the record's row, not a row). events then returns
     * that one event for any `after` below it, and the engine hands a
     * reader the task as it ended in its place (engine/follow.c); check
     * counts such a task as whole. SQLite and PostgreSQL compact in their
     * sweep (URL setting compact=MS|off). */
    int (*events)(once_store *s, const char *principal, const char *task_id, int64_t after,
                  size_t max, once_event_list *out);

    /* Keys of non-terminal records whose lease_until is non-zero and < now,
     * at most max, oldest lease first. Claiming is the caller's CAS. Only the
     * common codes: the sweep tries again at its next tick, and takes nothing
     * over until a lease period after the store last failed. */
    int (*expired_leases)(once_store *s, int64_t now, size_t max, once_key_list *out);

    /* Turn up to max terminal records with finished_at < finished_before into
     * tombstones (expired_at = now), deleting their events. *n = how many;
     * a batch is atomic per key, so after ESTORE a part of it may be done and
     * the next tick carries on. */
    int (*sweep)(once_store *s, int64_t finished_before, int64_t now, size_t max, size_t *n);

    /* Delete up to max tombstones with expired_at < expired_before; *n =
     * how many. Codes and retries as for sweep. */
    int (*purge)(once_store *s, int64_t expired_before, size_t max, size_t *n);

    /* One page of a principal's records (see once_list_query): at most
     * limit records in the page order, each matching the filter. The
     * work of one call must not grow with what the principal stored: a
     * backend that cannot seek to a filter (no ONCE_STORE_LIST_SEEK)
     * examines at most ONCE_LIST_SCAN_MAX entries, and when it stops
     * with fewer than limit matches and entries left to examine, it ends
     * the page with one ONCE_KIND_RESUME record that carries only the
     * created_at and task_id of the last entry examined (n counts it; the
     * next page starts after it; every other field zero). Only the
     * common codes: ListTasks answers 503 on ESTORE/EBUSY. */
    int (*list)(once_store *s, const once_list_query *q, once_record_list *out);

    /* Store-wide named value, created once: if name is absent, insert
     * init_value (insert-if-absent); either way *out receives the stored value
     * (once_malloc'd). Used for the secret behind derived task IDs, which
     * must be the same on every replica (docs/design.md section 13). Only
     * the common codes: the engine does not start without the secret. The
     * slot never sees an empty name: once_store_meta refuses one
     * (ONCE_EINVAL) before dispatch. */
    int (*meta)(once_store *s, const char *name, const char *init_value, char **out);

    /* Integrity check over everything stored (tests, chaos, fault sweeps).
     * ONCE_OK with problems counted in *rep; an error only when the store
     * could not be read. */
    int (*check)(once_store *s, once_check_report *rep);

    /* Lease-only write: set lease_until of the key's record to until, without
     * touching anything else (version, generation, updated_at and the task
     * text stay as they are, so a concurrent CAS by the turn itself does not
     * conflict), provided the stored record still has this fence,
     * lease_owner == owner and a state that is neither terminal nor
     * interrupted (SUBMITTED or WORKING):
     *   ONCE_OK          the lease now runs until `until` (earlier or later
     *                    than before: it is set, not extended), and
     *                    expired_leases answers from the new value;
     *   ONCE_EFENCED     fence or owner differ, or the state is final or
     *                    interrupted: nothing written, the turn must stop;
     *   ONCE_ENOTFOUND   no live record (tombstoned or absent).
     * once_store_renew refuses bad arguments with ONCE_EINVAL before the
     * slot runs (a key as everywhere, owner 1..ONCE_OWNER_MAX bytes,
     * fence >= 0, until > 0), so the slot takes them as valid. Re-running a
     * renewal is harmless, so backends may retry one whose reply was lost.
     * The cost is independent of the record's size. A renewal racing a
     * takeover is decided by the fence: whoever wrote second under the old
     * fence loses. On EFENCED and ENOTFOUND the turn stops; on ESTORE/EBUSY
     * the heartbeat tries again within 100 ms, and the turn stops when the
     * lease runs out unrenewed. */
    int (*renew)(once_store *s, const char *principal, const char *task_id, const char *owner,
                 int64_t fence, int64_t until);

    /* ---- push delivery; NULL unless caps has ONCE_STORE_PUSH ---- */

    /* Atomically lease up to max due rows (see "Push delivery") to owner
     * until now + lease_ms, oldest next_attempt_at first. Exactly one of
     * several concurrent claimers gets any one row. Only the common codes:
     * the delivery thread polls again later. */
    int (*push_claim)(once_store *s, const char *owner, int64_t now, int64_t lease_ms,
                      size_t max, once_push_claim_list *out);

    /* Record one attempt's outcome, fenced by the lease:
     *   ONCE_ENOTFOUND  the row is gone (config deleted, task swept);
     *   ONCE_EFENCED    owner does not hold the lease, or it ran out
     *                   (lease_until <= ack->now): nothing written;
     *   ONCE_ECONFLICT  generation is not delivered + 1 (nothing written);
     *   ONCE_EINVAL     bad arguments.
     * ENOTFOUND, EFENCED and ECONFLICT mean the row moved on without this
     * sender; after ESTORE/EBUSY the lease runs out and a claimer makes the
     * attempt again, so a receiver may see an event twice (push is at least
     * once). */
    int (*push_ack)(once_store *s, const once_push_ack *ack);

    /* The key's delivery rows, by config id. Missing key: empty list. Only
     * the common codes. */
    int (*push_rows)(once_store *s, const char *principal, const char *task_id,
                     once_push_row_list *out);

    /* ---- the change feed; NULL unless caps has ONCE_STORE_FEED ----
     *
     * How a replica learns of other replicas' writes without asking about
     * every task it follows (PostgreSQL LISTEN/NOTIFY, Redis pub/sub): the
     * store tells the feed the key of every record an update (the update
     * slot, by any process) wrote with events. Creates, renewals, sweeps
     * and purges are not told: nobody follows a task before it exists, and
     * none of the others moves a generation. */

    /* A new feed on s (*out; freed by feed_close). It need not reach the
     * store yet: its first feed_next does. ONCE_ENOMEM only. */
    int (*feed_open)(once_store *s, once_store_feed **out);

    /* Wait up to wait_ms for keys (*out; a key may come twice, or come
     * although its generation did not move: the caller reads the store to
     * see). Returns as soon as it has any, else ONCE_OK with an empty list
     * after wait_ms. *lost = 1 says updates may have been missed before
     * this answer (the first answer, and the first after a failure:
     * the subscription is in place again, and the caller looks at
     * everything it follows once). ONCE_ESTORE: the feed is down (the
     * connection failed); until an answer with *lost = 1, the caller
     * polls. Called from one thread at a time. */
    int (*feed_next)(once_store_feed *f, int64_t wait_ms, once_key_list *out, int *lost);

    /* Release the feed (its connection). Never NULL. */
    void (*feed_close)(once_store_feed *f);

    /* ---- batched heads; NULL unless caps has ONCE_STORE_GENERATIONS ----
     *
     * How a replica on a store without a feed learns of other writers'
     * updates without a read per follower: one shared poller asks for the
     * generations of every followed task in as few requests as the store
     * allows (one SQLite statement, one DynamoDB BatchGetItem per
     * ONCE_STORE_GENERATIONS_MAX keys). gens[i] receives the generation of
     * keys[i]'s live record, or -1 where the key holds none (absent or a
     * tombstone). 1 <= n <= ONCE_STORE_GENERATIONS_MAX. Only the common
     * codes. */
    int (*generations)(once_store *s, const once_key *keys, size_t n, int64_t *gens);

    /* ---- replica heartbeats; NULL unless caps has ONCE_STORE_REPLICAS ---- */

    /* Upsert the row of r->id with every field of r (the last writer of an
     * id wins; only that replica writes it). once_store_replica_beat
     * checks r first (ONCE_EINVAL: an id of 0 or more than ONCE_OWNER_MAX
     * bytes, a version past ONCE_REPLICA_VERSION_MAX, negative times or
     * leases). Only the common codes: the heartbeat writes again at its
     * next beat. */
    int (*replica_beat)(once_store *s, const once_replica *r);

    /* Every replica row, by id ascending (byte order). Only the common
     * codes. */
    int (*replicas)(once_store *s, once_replica_list *out);

    /* ---- a create that does not wait; NULL unless caps has
     *      ONCE_STORE_CREATE_START ----
     *
     * With a backend that commits in groups, a caller that waits for its
     * group's commit is a thread put to sleep and woken again per write;
     * the engine instead leaves a new task's one create here and answers
     * from done (engine/held.c). The create slot's contract, without the
     * winner and tombstone outputs: queue the create of rec and
     * ev[0..nev) and return ONCE_OK, after which done(arg, rc) is called
     * exactly once with the create's answer (ONCE_OK, ONCE_EEXISTS,
     * ONCE_ETOMBSTONE, ONCE_ESTORE, ...), on the thread that commits it,
     * never inside this call (the caller may be a thread that must not
     * wait for a commit); rec and
     * ev stay valid and unchanged until then. A backend may also answer
     * ONCE_ECONFLICT through done for a create its group did not write
     * (nothing stored; the engine decides again from what is stored). Any
     * other return: nothing was queued and done is never called. Without
     * ONCE_STORE_START_PUSH, a record with push_json is never handed in
     * (its delivery rows need a write of their own). done must not block
     * on the store: it may run on the thread that commits every write. */
    int (*create_start)(once_store *s, const once_record *rec, const once_event *ev,
                        size_t nev, void (*done)(void *arg, int rc), void *arg);

    /* ---- a memory budget; NULL unless caps has ONCE_STORE_BUDGET ----
     *
     * Fill *out (see once_budget). take = 1: early_new is then counted as
     * told, so the next taking read reports only what came after (one
     * reader takes: the engine's sweep); take = 0 leaves it (stats,
     * tests). Never fails: ONCE_OK. */
    int (*budget)(once_store *s, once_budget *out, int take);

    /* ---- commit durability; NULL unless caps has
     *      ONCE_STORE_SYNCHRONOUS ----
     *
     * The ONCE_SYNC_* level the store commits at, read back from the store
     * itself (not from the URL it was opened with). ONCE_ESTORE if it
     * cannot be read or reads as a level once never sets. */
    int (*synchronous)(once_store *s, int *level);
} once_store_methods;

/* The base every backend struct starts with. `m` is set by open; errmsg is a
 * per-handle detail message for humans (last failure, best effort).
 * caps_off: bits of m->caps this handle does not offer, set by the open
 * slot when its URL turned a capability off (PostgreSQL and Redis with
 * batch=0 start no create: ONCE_STORE_CREATE_START); once_store_caps
 * answers m->caps without them. */
struct once_store {
    const once_store_methods *m;
    unsigned caps_off;
    char errmsg[256];
};

/* Open by URL: "memory:", "sqlite:PATH", "postgres://...", "redis://...",
 * "dynamodb://TABLE?region=R...".
 * errbuf may be NULL. */
ONCE_API int once_store_open(const char *url, const once_store_options *opt, once_store **out,
                    char *errbuf, size_t errlen);
/* Open a backend built outside libonce through its own methods table, under
 * the same contract as the built-in ones (m->open gets url). Before the open
 * slot runs: ONCE_EUNSUPPORTED when m->version is not
 * ONCE_STORE_METHODS_VERSION, ONCE_EINVAL when a slot the caps call for is
 * NULL. m must outlive the handle. */
ONCE_API int once_store_open_methods(const once_store_methods *m, const char *url,
                            const once_store_options *opt, once_store **out, char *errbuf,
                            size_t errlen);
/* The close slot's answer (see close above); NULL is a no-op (ONCE_OK). */
ONCE_API int once_store_close(once_store *s);
ONCE_API const char *once_store_errmsg(const once_store *s);
/* The capability bits of this handle: the table's, less caps_off. */
ONCE_API unsigned once_store_caps(const once_store *s);

/* Dispatch helpers: s->m->slot(s, ...). */
ONCE_API int once_store_create(once_store *s, const once_record *rec, const once_event *ev,
                               size_t nev, once_record *winner, once_tombstone *tomb);
ONCE_API int once_store_load(once_store *s, const char *principal, const char *task_id,
                             once_record *out, once_tombstone *tomb);
ONCE_API int once_store_update(once_store *s, const once_record *rec, int64_t expect_version,
                      const once_event *ev, size_t nev);
ONCE_API int once_store_events(once_store *s, const char *principal, const char *task_id,
                               int64_t after, size_t max, once_event_list *out);
ONCE_API int once_store_expired_leases(once_store *s, int64_t now, size_t max, once_key_list *out);
ONCE_API int once_store_sweep(once_store *s, int64_t finished_before, int64_t now, size_t max,
                              size_t *n);
ONCE_API int once_store_purge(once_store *s, int64_t expired_before, size_t max, size_t *n);
ONCE_API int once_store_list(once_store *s, const once_list_query *q, once_record_list *out);
ONCE_API int once_store_meta(once_store *s, const char *name, const char *init_value, char **out);
ONCE_API int once_store_check(once_store *s, once_check_report *rep);
ONCE_API int once_store_renew(once_store *s, const char *principal, const char *task_id,
                     const char *owner, int64_t fence, int64_t until);
/* Push slots; ONCE_EUNSUPPORTED when the backend lacks ONCE_STORE_PUSH. */
ONCE_API int once_store_push_claim(once_store *s, const char *owner, int64_t now, int64_t lease_ms,
                          size_t max, once_push_claim_list *out);
ONCE_API int once_store_push_ack(once_store *s, const once_push_ack *ack);
ONCE_API int once_store_push_rows(once_store *s, const char *principal, const char *task_id,
                         once_push_row_list *out);
/* Feed slots; ONCE_EUNSUPPORTED when the backend lacks ONCE_STORE_FEED.
 * once_store_feed_close(NULL) is a no-op. */
ONCE_API int once_store_feed_open(once_store *s, once_store_feed **out);
ONCE_API int once_store_feed_next(once_store_feed *f, int64_t wait_ms, once_key_list *out,
                                  int *lost);
ONCE_API void once_store_feed_close(once_store_feed *f);
/* The generations slot; ONCE_EUNSUPPORTED without ONCE_STORE_GENERATIONS,
 * ONCE_EINVAL for n outside 1..ONCE_STORE_GENERATIONS_MAX or a bad key. */
ONCE_API int once_store_generations(once_store *s, const once_key *keys, size_t n,
                                    int64_t *gens);

/* Replica slots; ONCE_EUNSUPPORTED when the backend lacks
 * ONCE_STORE_REPLICAS. */
ONCE_API int once_store_replica_beat(once_store *s, const once_replica *r);
ONCE_API int once_store_replicas(once_store *s, once_replica_list *out);

/* The create_start slot, after the checks of once_store_create (done must
 * not be NULL); ONCE_EUNSUPPORTED (nothing queued, done never called) when
 * the handle lacks ONCE_STORE_CREATE_START, or rec has push_json and it
 * lacks ONCE_STORE_START_PUSH: the caller then runs once_store_create. */
ONCE_API int once_store_create_start(once_store *s, const once_record *rec, const once_event *ev,
                                     size_t nev, void (*done)(void *arg, int rc), void *arg);
/* 1 if s would take once_store_create_start of rec (rec NULL: of a record
 * without push_json), else 0. */
ONCE_API int once_store_can_start(const once_store *s, const once_record *rec);
/* The budget slot; *out zeroed and ONCE_EUNSUPPORTED without
 * ONCE_STORE_BUDGET. */
ONCE_API int once_store_budget(once_store *s, once_budget *out, int take);

#ifdef __cplusplus
}
#endif
#endif /* ONCE_STORE_H */
