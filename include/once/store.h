/*
 * store.h -- the task registry contract. One vtable (once_store_methods), one
 * base struct (once_store), four backends: memory, sqlite, postgres, redis.
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
 */
#ifndef ONCE_STORE_H
#define ONCE_STORE_H

#include "once/once.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ONCE_PRINCIPAL_MAX 128
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
 */
typedef enum once_record_kind {
    ONCE_KIND_TASK = 0,
    ONCE_KIND_MESSAGE = 1 /* the agent answered with a direct Message */
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
} once_record;

/* Free the owned strings and zero the record. NULL is a no-op. */
void once_record_clear(once_record *r);
/* Deep copy src into dst (dst is overwritten, not cleared first). */
int once_record_copy(once_record *dst, const once_record *src);

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
void once_event_list_clear(once_event_list *l);

typedef struct once_key {
    char principal[ONCE_PRINCIPAL_MAX + 1];
    char task_id[ONCE_ID_MAX + 1];
} once_key;

typedef struct once_key_list {
    once_key *v;
    size_t n;
} once_key_list;
void once_key_list_clear(once_key_list *l);

typedef struct once_record_list {
    once_record *v;
    size_t n;
} once_record_list;
void once_record_list_clear(once_record_list *l);

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
} once_check_report;

/* Capability bits. */
#define ONCE_STORE_SHARED  0x1u  /* several processes/hosts may share the data */
#define ONCE_STORE_DURABLE 0x2u  /* an acknowledged write survives a crash */

/* Durability of a commit (SQLite's PRAGMA synchronous). A zeroed options
 * struct means the safe default, FULL: an fsync per commit. */
#define ONCE_SYNC_DEFAULT 0
#define ONCE_SYNC_OFF 1
#define ONCE_SYNC_NORMAL 2
#define ONCE_SYNC_FULL 3

typedef struct once_store_options {
    const once_clock *clock;     /* NULL = system clock */
    int synchronous;             /* ONCE_SYNC_*: 0 = default (FULL) */
    int busy_timeout_ms;         /* sqlite: default 5000 */
} once_store_options;

typedef struct once_store once_store;

#define ONCE_STORE_METHODS_VERSION 1

/*
 * The vtable. Every slot returns ONCE_OK or a negative once_err; ONCE_ESTORE
 * and ONCE_EBUSY mean "the store could not answer" (retryable: no verdict may
 * be drawn from them). Output structs are zeroed by the slot before use, so
 * the caller may clear them whatever the result.
 */
typedef struct once_store_methods {
    int version;           /* ONCE_STORE_METHODS_VERSION */
    const char *scheme;    /* URL scheme: "memory", "sqlite", ... */
    unsigned caps;         /* ONCE_STORE_* bits */

    /* Open the store named by url (the whole URL, scheme included). On
     * success *out points at a struct whose first member is once_store. On
     * failure *out is NULL, nothing needs closing, and errbuf (if non-NULL)
     * holds a message. Creates the schema if absent. */
    int (*open)(const char *url, const once_store_options *opt, once_store **out,
                char *errbuf, size_t errlen);

    /* Release everything. Never called with NULL, never after a failed open.
     * No other slot may be running. */
    void (*close)(once_store *s);

    /* Create-if-absent. Inserts rec (rec->version must be 1) and its events
     * ev[0..nev) atomically, unless the key already holds something:
     *   ONCE_EEXISTS     a live record exists; *winner (if non-NULL) receives
     *                    a copy of it. Nothing was written.
     *   ONCE_ETOMBSTONE  the key is tombstoned; *tomb (if non-NULL) receives it.
     * Exactly one of any number of concurrent creates of one key succeeds. */
    int (*create)(once_store *s, const once_record *rec, const once_event *ev, size_t nev,
                  once_record *winner, once_tombstone *tomb);

    /* Load the record for (principal, task_id):
     *   ONCE_OK          *out filled;
     *   ONCE_ETOMBSTONE  *tomb (if non-NULL) filled, *out zeroed;
     *   ONCE_ENOTFOUND   neither exists. */
    int (*load)(once_store *s, const char *principal, const char *task_id, once_record *out,
                once_tombstone *tomb);

    /* Compare-and-swap. Replaces the stored record of rec's key with rec if
     * the stored version equals expect_version, and appends ev[0..nev) in the
     * same atomic write. Requires rec->version == expect_version + 1 and the
     * events numbered stored.generation+1 .. rec->generation consecutively
     * (ONCE_EINVAL otherwise, nothing written).
     *   ONCE_ECONFLICT   stored version differs, or the key holds no record.
     * Callers re-load and decide again on ECONFLICT. */
    int (*update)(once_store *s, const once_record *rec, int64_t expect_version,
                  const once_event *ev, size_t nev);

    /* Events of one task with generation > after, ascending, at most max
     * (0 = no limit). A missing key yields an empty list, not an error. */
    int (*events)(once_store *s, const char *principal, const char *task_id, int64_t after,
                  size_t max, once_event_list *out);

    /* Keys of non-terminal records whose lease_until is non-zero and < now,
     * at most max, oldest lease first. Claiming is the caller's CAS. */
    int (*expired_leases)(once_store *s, int64_t now, size_t max, once_key_list *out);

    /* Turn up to max terminal records with finished_at < finished_before into
     * tombstones (expired_at = now), deleting their events. *n = how many. */
    int (*sweep)(once_store *s, int64_t finished_before, int64_t now, size_t max, size_t *n);

    /* Delete up to max tombstones with expired_at < expired_before. */
    int (*purge)(once_store *s, int64_t expired_before, size_t max, size_t *n);

    /* One page of a principal's records (see once_list_query). */
    int (*list)(once_store *s, const once_list_query *q, once_record_list *out);

    /* Store-wide named value, created once: if name is absent, insert
     * init_value (insert-if-absent); either way *out receives the stored value
     * (once_malloc'd). Used for the secret behind derived task IDs, which
     * must be the same on every replica (DESIGN.md section 13). */
    int (*meta)(once_store *s, const char *name, const char *init_value, char **out);

    /* Integrity check over everything stored (tests, chaos, fault sweeps). */
    int (*check)(once_store *s, once_check_report *rep);
} once_store_methods;

/* The base every backend struct starts with. `m` is set by open; errmsg is a
 * per-handle detail message for humans (last failure, best effort). */
struct once_store {
    const once_store_methods *m;
    char errmsg[256];
};

/* Open by URL: "memory:", "sqlite:PATH" (later "postgres://", "redis://").
 * errbuf may be NULL. */
int once_store_open(const char *url, const once_store_options *opt, once_store **out,
                    char *errbuf, size_t errlen);
void once_store_close(once_store *s);          /* NULL is a no-op */
const char *once_store_errmsg(const once_store *s);
unsigned once_store_caps(const once_store *s);

/* Dispatch helpers: s->m->slot(s, ...). */
int once_store_create(once_store *s, const once_record *rec, const once_event *ev, size_t nev,
                      once_record *winner, once_tombstone *tomb);
int once_store_load(once_store *s, const char *principal, const char *task_id, once_record *out,
                    once_tombstone *tomb);
int once_store_update(once_store *s, const once_record *rec, int64_t expect_version,
                      const once_event *ev, size_t nev);
int once_store_events(once_store *s, const char *principal, const char *task_id, int64_t after,
                      size_t max, once_event_list *out);
int once_store_expired_leases(once_store *s, int64_t now, size_t max, once_key_list *out);
int once_store_sweep(once_store *s, int64_t finished_before, int64_t now, size_t max, size_t *n);
int once_store_purge(once_store *s, int64_t expired_before, size_t max, size_t *n);
int once_store_list(once_store *s, const once_list_query *q, once_record_list *out);
int once_store_meta(once_store *s, const char *name, const char *init_value, char **out);
int once_store_check(once_store *s, once_check_report *rep);

#ifdef __cplusplus
}
#endif
#endif /* ONCE_STORE_H */
