/*
 * store_int.h -- what the store backends share and nothing else sees: the
 * backend tables once_store_open dispatches over, and the argument checks,
 * written once so that "what is a legal create/update" has one answer
 * whatever the backend. store.c runs the static checks (key, create,
 * update, query, renew, ack) once, before it dispatches: a backend's slots
 * are only ever called with arguments that passed them.
 *
 * Validation order of an update (so every backend reports the same error
 * for the same call):
 *   1. once__store_valid_update()  static checks (store.c) -> ONCE_EINVAL
 *   2. key absent / tombstoned / stored version differs   -> ONCE_ECONFLICT
 *   3. once__store_valid_events()  numbering vs the stored generation
 *                                                          -> ONCE_EINVAL
 * Step 2 comes before step 3 because a stale writer's events are numbered
 * from a stale generation; it must hear "re-load", not "bad arguments".
 */
#ifndef ONCE_STORE_INT_H
#define ONCE_STORE_INT_H

#include "once/store.h"

extern const once_store_methods once__store_memory;
extern const once_store_methods once__store_sqlite;
#ifdef ONCE_HAVE_DYNAMODB
extern const once_store_methods once__store_dynamo;
#endif
#ifdef ONCE_HAVE_PG
extern const once_store_methods once__store_pg;
#endif
#ifdef ONCE_HAVE_REDIS
extern const once_store_methods once__store_redis;
#endif

/*
 * The schema step of an open (store/migrate.c). Every backend with a handle
 * of its own keeps a schema version: SQLite in PRAGMA user_version,
 * PostgreSQL in once_migrations, Redis in the key "<prefix>:schema",
 * DynamoDB in the meta item "schema_version". Version 0 is a store with no
 * schema yet. start reads the version found, asks once__schema_gate what
 * to do, and applies versions found+1 .. target only when told to.
 *   flags   in: ONCE_STORE_OPEN_NO_MIGRATE (refuse rather than migrate) or
 *           ONCE__OPEN_PROBE (neither: read the version and change
 *           nothing; the handle then serves close and nothing else: its
 *           layout may be older than the slots expect);
 *   found   out: the version before this open;
 *   target  out: the version this once keeps (the backend's
 *           schema_version).
 */
#define ONCE__OPEN_PROBE 0x100u

typedef struct once__schema {
    unsigned flags;
    int found;
    int target;
} once__schema;

/* What start does with a store at version found (sets sc->found and
 * sc->target): 1 apply the migrations found+1 .. target; 0 nothing to
 * write (up to date, or a probe); ONCE_EUNSUPPORTED with s->errmsg set for
 * a version above target (a newer once wrote it) and, under NO_MIGRATE,
 * below it. where names the store in the message ("schema \"public\"",
 * "prefix once"); may be NULL. */
int once__schema_gate(once_store *s, once__schema *sc, const char *where, int found, int target);

/*
 * What a backend with a handle of its own gives once__backend_open
 * (backend.c): the handle's size (once_store first), the schema version
 * it keeps its data in, and three hooks.
 *   parse    reads url into the zeroed handle s: defaults, settings, checks
 *            that need no server or file. ONCE_EINVAL with a message in
 *            errbuf for a bad URL.
 *   start    connects, creates or migrates the schema as sc says (see
 *            once__schema). Its error may sit in errbuf or in s->errmsg
 *            (copied to errbuf when errbuf is empty).
 *   release  frees everything parse and start made, whatever point either
 *            stopped at; it is also the backend's close slot, so its answer
 *            is close's (ONCE_OK, or ONCE_ESTORE when a last flush failed).
 * name is the error text's prefix ("postgres: out of memory").
 */
typedef struct once__backend {
    const char *name;
    size_t size;
    int schema_version;
    int (*parse)(once_store *s, const char *url, char *errbuf, size_t errlen);
    int (*start)(once_store *s, once__schema *sc, char *errbuf, size_t errlen);
    int (*release)(once_store *s);
} once__backend;

/* The hooks of the built-in backends (once__store_migrate finds them by
 * scheme; store_info.h reads their schema_version). */
extern const once__backend once__sq_backend;
#ifdef ONCE_HAVE_DYNAMODB
extern const once__backend once__dy_backend;
#endif
#ifdef ONCE_HAVE_PG
extern const once__backend once__pg_backend;
#endif
#ifdef ONCE_HAVE_REDIS
extern const once__backend once__rd_backend;
#endif

/* The built-in backend of url's scheme: its methods table in *m and its
 * hooks in *hooks (if non-NULL; NULL for memory:). ONCE_EINVAL for an
 * unknown scheme, ONCE_EUNSUPPORTED for one not built in (errbuf says). */
int once__store_find(const char *url, const once_store_methods **m, const once__backend **hooks,
                     char *errbuf, size_t errlen);

/* Allocate, parse, start (sc: in flags, out the versions); on failure
 * release and leave *out NULL. */
int once__backend_open(const once__backend *b, const char *url, once__schema *sc,
                       once_store **out, char *errbuf, size_t errlen);

/*
 * The integer fields of a record and of a push row (fields.c), in one
 * table each: where a field sits in its struct, how wide it is, its column
 * in the SQL row counted from the row's first column, and (records only)
 * its DynamoDB attribute and Redis hash field.
 */
typedef enum once__field_type {
    ONCE__FIELD_I64,  /* int64_t */
    ONCE__FIELD_INT,  /* int or an int-sized enum */
    ONCE__FIELD_BOOL, /* int, stored as 0 or 1 */
} once__field_type;

typedef struct once__int_field {
    size_t off;
    once__field_type type;
    int col;
    const char *attr; /* DynamoDB */
    const char *hf;   /* Redis (redis_keys.c reads the hash with a table of its own) */
} once__int_field;

#define ONCE__RECORD_NINT 10
#define ONCE__PUSH_ROW_NINT 10
extern const once__int_field once__record_ints[ONCE__RECORD_NINT];
extern const once__int_field once__push_row_ints[ONCE__PUSH_ROW_NINT];

/* Store v as field f of *obj (a once_record or once_push_row as f's table
 * says), narrowed to the field's width; read it back widened. */
void once__field_set(void *obj, const once__int_field *f, int64_t v);
int64_t once__field_get(const void *obj, const once__int_field *f);

/* printf into s->errmsg (best effort: writers are serialised, readers of
 * once_store_errmsg may see a message being replaced). s may be NULL. */
void once__store_seterr(once_store *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* printf into errbuf[0..errlen) if errbuf is non-NULL (open's error path). */
void once__store_errbuf(char *errbuf, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A key is legal when both strings are non-NULL, non-empty and fit their
 * once_record arrays. ONCE_OK or ONCE_EINVAL (with s->errmsg set). */
int once__store_valid_key(once_store *s, const char *principal, const char *task_id);

/* A record may be stored when: its key is legal; context_id and lease_owner
 * are NUL-terminated within their arrays; state is SUBMITTED..REJECTED;
 * kind is TASK or MESSAGE; finished_at is non-zero exactly when the state is
 * terminal; version >= 1; generation, fence, step, lease_until >= 0;
 * digests and task_json are non-NULL; push_json, if set, passes
 * once__push_json_flaw. ONCE_OK or ONCE_EINVAL. */
int once__store_valid_record(once_store *s, const once_record *rec);

/* Events ev[0..nev) continue a history whose last generation is base_gen up
 * to rec->generation: nev == rec->generation - base_gen, ev[i].generation ==
 * base_gen + 1 + i, every payload non-NULL. ev may be NULL when nev == 0. */
int once__store_valid_events(once_store *s, int64_t base_gen, const once_record *rec,
                             const once_event *ev, size_t nev);

/* All of create's argument checks: a storable record with version 1 and
 * events numbered 1..rec->generation. */
int once__store_valid_create(once_store *s, const once_record *rec, const once_event *ev,
                             size_t nev);

/* update's static checks (step 1 above): a storable record, expect_version
 * >= 1, rec->version == expect_version + 1, and events that agree with
 * rec->generation among themselves (numbered rec->generation - nev + 1 ..
 * rec->generation, payloads non-NULL). Step 3 then only has to compare
 * stored.generation with rec->generation - nev. */
int once__store_valid_update(once_store *s, const once_record *rec, int64_t expect_version,
                             const once_event *ev, size_t nev);

/* renew's arguments (store.h): a legal key, owner 1..ONCE_OWNER_MAX bytes,
 * fence >= 0, until > 0 (0 means "no lease", which a renewal cannot
 * grant). */
int once__store_valid_renew(once_store *s, const char *principal, const char *task_id,
                            const char *owner, int64_t fence, int64_t until);

/* The states renew may extend a lease in: neither terminal nor interrupted.
 * The SQL and Lua texts spell this "state IN (1, 2)" (state numbers are
 * stored, so they never change; the assertion keeps the texts honest). */
_Static_assert(ONCE_STATE_SUBMITTED == 1 && ONCE_STATE_WORKING == 2,
               "renew texts say state IN (1, 2)");
static inline int once__state_renewable(once_state st)
{
    return st == ONCE_STATE_SUBMITTED || st == ONCE_STATE_WORKING;
}

/* renew's answer, the same from every backend: ONCE_OK if it renewed, else
 * ONCE_EFENCED when the key holds a live record (its fence, owner or state
 * differ) and ONCE_ENOTFOUND when it holds none; a refusal also says which
 * in s->errmsg. */
int once__store_renew_result(once_store *s, const char *task_id, int renewed, int live);

/* ListTasks query: principal legal, context_id (if set) fits, state within
 * the enum, limit 1..1000, after_task_id (if set) fits. */
#define ONCE_LIST_MAX 1000
int once__store_valid_query(once_store *s, const once_list_query *q);

/* ---------------------------------------------------------------------------
 * Integrity-check accounting, shared so every backend counts problems the
 * same way. A backend zeroes the report, then feeds it each record and each
 * tombstone; it may compute the event summary any way it likes (a walk, or
 * SQL count/min/max given unique generations).
 */

/* One record with nev events whose greatest generation is last_gen (0 when
 * nev == 0); gapless says whether they are exactly 1..last_gen. Counts the
 * record, its events and any bad_generation / event_gaps / bad_state. */
void once__check_record(once_check_report *rep, const once_record *r, size_t nev,
                        int64_t last_gen, int gapless);

/* 1 if events with unique generations, n of them between min and max, are
 * exactly 1..n. */
static inline int once__check_gapless(size_t n, int64_t min_gen, int64_t max_gen)
{
    return n == 0 || (min_gen == 1 && max_gen == (int64_t)n);
}

/* 1 when a record's events are what compaction leaves of a finished
 * task's: its last event alone (store.h, the compact rule). */
static inline int once__check_compacted(const once_record *r, size_t n, int64_t min_gen,
                                        int64_t max_gen)
{
    return once_state_terminal(r->state) && n == 1 && min_gen == max_gen &&
           max_gen == r->generation;
}

/* One tombstone with nev events still stored under its key (orphans). */
void once__check_tombstone(once_check_report *rep, const once_tombstone *t, size_t nev);

/* nev events under a key that holds neither record nor tombstone. */
void once__check_orphans(once_check_report *rep, const char *principal, const char *task_id,
                         size_t nev);

/* Note a problem: keeps the first description only. */
void once__check_problem(once_check_report *rep, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---------------------------------------------------------------------------
 * Push delivery rows (push_rows.c): what every ONCE_STORE_PUSH backend
 * means by "sync the rows with push_json" and "apply an ack", written once.
 */

/* One element of push_json as the store sees it. */
typedef struct once__push_elem {
    char id[ONCE_ID_MAX + 1];
    int64_t since;
} once__push_elem;

/* Why push_json (non-NULL) may not be stored with a record at generation
 * `generation`, or NULL if it may: an array of at most ONCE_PUSH_CONFIGS_MAX
 * objects with unique valid "id" strings and integer "since" in
 * 0..generation. once__store_valid_record runs it. */
const char *once__push_json_flaw(const char *push_json, int64_t generation);

/* The elements of a push_json that passed once__push_json_flaw (NULL ->
 * none): out[0..*n), in array order. ONCE_ENOMEM, or ONCE_ECORRUPT if it
 * does not parse after all. */
int once__push_elems(const char *push_json, once__push_elem out[ONCE_PUSH_CONFIGS_MAX],
                     size_t *n);

/* The rows a record change leaves: for each element, the old row of its id
 * (reset when since changed) or a fresh row; every row's target = target.
 * old[0..nold) are the key's rows before; out must hold n rows. Returns how
 * many old rows were dropped (their ids left push_json). */
size_t once__push_sync(const once_push_row *old, size_t nold, const once__push_elem *el,
                       size_t n, int64_t target, once_push_row *out);

/* 1 if r is due at now. */
int once__push_due(const once_push_row *r, int64_t now);

/* Apply ack to the row it names (the contract of push_ack): ONCE_OK with *r
 * changed, or ONCE_EFENCED / ONCE_ECONFLICT with *r untouched. */
int once__push_apply_ack(once_push_row *r, const once_push_ack *ack);

/* The start of a push_claim slot: empty out, check the arguments (owner
 * 1..ONCE_OWNER_MAX bytes, lease_ms > 0, now + lease_ms representable).
 * 0: go on and claim. 1: answer *rc at once (ONCE_EINVAL with errmsg set,
 * or ONCE_OK when max is 0). */
int once__store_claim_begin(once_store *s, const char *owner, int64_t now, int64_t lease_ms,
                            size_t max, once_push_claim_list *out, int *rc);

/* push_ack's static checks (keys, owner, outcome). ONCE_OK or ONCE_EINVAL. */
int once__store_valid_ack(once_store *s, const once_push_ack *ack);

/* push_rows' request, for a backend that runs it as a callback (postgres,
 * redis): the key, and out, which gets the rows. */
typedef struct once__push_rows_req {
    const char *principal, *task_id;
    once_push_row_list *out;
} once__push_rows_req;

/* Copy v[0..n) into out (cleared first): ONCE_OK or ONCE_ENOMEM. */
int once__push_rows_out(once_push_row_list *out, const once_push_row *v, size_t n);

/* Why the delivery rows rows[0..n) of a live record (push_json may be NULL,
 * generation its generation) disagree with it, or NULL when they agree:
 * exactly one row per element, aimed at the generation, delivered no
 * further. What check() counts as bad_push; for backends that read the
 * rows back (postgres, redis). */
const char *once__push_rows_flaw(const char *push_json, int64_t generation,
                                 const once_push_row *rows, size_t n);

#endif /* ONCE_STORE_INT_H */
