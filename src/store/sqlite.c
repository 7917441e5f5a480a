/*
 * sqlite.c -- the "sqlite:PATH" store backend (also "sqlite://PATH"): one
 * database file in WAL mode that any number of threads and processes may
 * share (ONCE_STORE_SHARED) and that keeps every acknowledged write across
 * a crash at synchronous=FULL (ONCE_STORE_DURABLE).
 *
 * Design, file by file (sqlite_int.h has the map):
 *   - writes (create, update, sweep, purge, meta insert) are queued and run
 *     by group commit (sqlite_commit.c): one writer connection, one
 *     BEGIN IMMEDIATE ... COMMIT per batch of concurrent callers, each op in
 *     its own SAVEPOINT so one op's failure never touches another's;
 *   - reads (load, events, list, expired_leases, meta lookup, check) run on
 *     pooled reader connections and never wait behind a commit;
 *   - other processes are kept out by SQLite's own locking: every write
 *     transaction takes the write lock first (IMMEDIATE), so create's
 *     tombstone check + INSERT ... ON CONFLICT DO NOTHING + winner read is
 *     atomic across processes; SQLITE_BUSY waits busy_timeout_ms, then is
 *     retried a few times, then surfaces as ONCE_EBUSY;
 *   - every fallible sqlite3 call is fault-injectable (sqlite_fault.h);
 *   - push delivery rows (ONCE_STORE_PUSH) live in push_deliveries and
 *     change in the same transaction as the record that implies them.
 *
 * The file is created mode 0600 (WAL and shm files inherit its mode).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "store/sqlite_fault.h"
#include "store/sqlite_int.h"
#include "store/store_int.h"

#define SQ_DEFAULT_SYNC 2 /* PRAGMA synchronous=FULL */
#define SQ_DEFAULT_BUSY_MS 5000

static sq_store *sq(once_store *s) { return (sq_store *)s; }

/* "sqlite:PATH" or "sqlite://PATH" -> PATH (a pointer into url). */
static const char *url_path(const char *url)
{
    static const char scheme[] = "sqlite:";
    if (strncmp(url, scheme, sizeof scheme - 1) != 0)
        return NULL;
    const char *p = url + sizeof scheme - 1;
    if (p[0] == '/' && p[1] == '/')
        p += 2;
    return p[0] ? p : NULL;
}

static void sq_free(sq_store *s)
{
    if (!s)
        return;
    once__sq_conn_close(s->writer);
    while (s->idle) {
        sq_conn *c = s->idle;
        s->idle = c->next;
        once__sq_conn_close(c);
    }
    pthread_mutex_destroy(&s->qmu);
    pthread_mutex_destroy(&s->pmu);
    once_free(s->path);
    once_free(s);
}

static int sq_open(const char *url, const once_store_options *opt, once_store **out,
                   char *errbuf, size_t errlen)
{
    *out = NULL;
    const char *path = url ? url_path(url) : NULL;
    if (!path || strcmp(path, ":memory:") == 0) {
        once__store_errbuf(errbuf, errlen, "sqlite store URL must be sqlite:PATH to a file");
        return ONCE_EINVAL;
    }
    /* ONCE_SYNC_OFF..FULL are PRAGMA synchronous 0..2; 0 (default) is FULL. */
    int want = opt ? opt->synchronous : ONCE_SYNC_DEFAULT;
    int sync = want == ONCE_SYNC_DEFAULT ? SQ_DEFAULT_SYNC : want - 1;
    int busy = opt && opt->busy_timeout_ms ? opt->busy_timeout_ms : SQ_DEFAULT_BUSY_MS;
    if (want < ONCE_SYNC_DEFAULT || want > ONCE_SYNC_FULL || busy < 0) {
        once__store_errbuf(errbuf, errlen,
                           "sqlite: synchronous must be a ONCE_SYNC_* value, busy_timeout >= 0");
        return ONCE_EINVAL;
    }
    if (!sqlite3_threadsafe()) {
        once__store_errbuf(errbuf, errlen, "sqlite: library built without thread safety");
        return ONCE_EUNSUPPORTED;
    }

    sq_store *s = once_calloc(1, sizeof *s);
    if (!s || !(s->path = once_strdup(path))) {
        once_free(s);
        once__store_errbuf(errbuf, errlen, "sqlite: out of memory");
        return ONCE_ENOMEM;
    }
    s->synchronous = sync;
    s->busy_ms = busy;
    pthread_mutex_init(&s->qmu, NULL);
    pthread_mutex_init(&s->pmu, NULL);

    /* Create the file ourselves so it is 0600 whatever the umask allows. */
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        once__store_errbuf(errbuf, errlen, "sqlite: cannot open %s: %s", path, strerror(errno));
        sq_free(s);
        return ONCE_ESTORE;
    }
    close(fd);

    sq_conn *w;
    int rc = once__sq_conn_open(s, 1, 1, &w);
    if (rc == ONCE_OK) {
        rc = once__sq_schema(s, w);
        if (rc != ONCE_OK)
            once__sq_conn_close(w);
        else
            s->writer = w;
    }
    if (rc != ONCE_OK) {
        once__store_errbuf(errbuf, errlen, "%s (%s)", s->base.errmsg, path);
        sq_free(s);
        return rc;
    }
    s->base.m = &once__store_sqlite;
    *out = &s->base;
    return ONCE_OK;
}

static void sq_close(once_store *s) { sq_free(sq(s)); }

static int sq_create(once_store *s, const once_record *rec, const once_event *ev, size_t nev,
                     once_record *winner, once_tombstone *tomb)
{
    if (winner)
        memset(winner, 0, sizeof *winner);
    if (tomb)
        memset(tomb, 0, sizeof *tomb);
    int rc = once__store_valid_create(s, rec, ev, nev);
    if (rc != ONCE_OK)
        return rc;
    sq_op op = {.kind = SQ_OP_CREATE, .rec = rec, .ev = ev, .nev = nev, .winner = winner,
                .tomb = tomb};
    return once__sq_submit(sq(s), &op);
}

static int sq_load(once_store *s, const char *principal, const char *task_id, once_record *out,
                   once_tombstone *tomb)
{
    return once__sq_load(sq(s), principal, task_id, out, tomb);
}

static int sq_update(once_store *s, const once_record *rec, int64_t expect_version,
                     const once_event *ev, size_t nev)
{
    int rc = once__store_valid_update(s, rec, expect_version, ev, nev);
    if (rc != ONCE_OK)
        return rc;
    sq_op op = {.kind = SQ_OP_UPDATE, .rec = rec, .ev = ev, .nev = nev,
                .expect_version = expect_version};
    return once__sq_submit(sq(s), &op);
}

static int sq_events(once_store *s, const char *principal, const char *task_id, int64_t after,
                     size_t max, once_event_list *out)
{
    return once__sq_events(sq(s), principal, task_id, after, max, out);
}

static int sq_expired_leases(once_store *s, int64_t now, size_t max, once_key_list *out)
{
    return once__sq_expired_leases(sq(s), now, max, out);
}

static int sq_sweep(once_store *s, int64_t finished_before, int64_t now, size_t max, size_t *n)
{
    *n = 0;
    if (max == 0)
        return ONCE_OK;
    sq_op op = {.kind = SQ_OP_SWEEP, .before = finished_before, .now = now, .max = max, .n = n};
    return once__sq_submit(sq(s), &op);
}

static int sq_purge(once_store *s, int64_t expired_before, size_t max, size_t *n)
{
    *n = 0;
    if (max == 0)
        return ONCE_OK;
    sq_op op = {.kind = SQ_OP_PURGE, .before = expired_before, .max = max, .n = n};
    return once__sq_submit(sq(s), &op);
}

static int sq_list(once_store *s, const once_list_query *q, once_record_list *out)
{
    return once__sq_list(sq(s), q, out);
}

/* Read first: the common case (the value exists) costs no write. */
static int sq_meta(once_store *s, const char *name, const char *init_value, char **out)
{
    *out = NULL;
    if (!name[0]) {
        once__store_seterr(s, "meta: empty name");
        return ONCE_EINVAL;
    }
    int rc = once__sq_meta_get(sq(s), name, out);
    if (rc != ONCE_ENOTFOUND || !init_value)
        return rc;
    sq_op op = {.kind = SQ_OP_META, .name = name, .init_value = init_value, .out = out};
    return once__sq_submit(sq(s), &op);
}

static int sq_check(once_store *s, once_check_report *rep)
{
    return once__sq_check(sq(s), rep);
}

static int sq_push_claim(once_store *s, const char *owner, int64_t now, int64_t lease_ms,
                         size_t max, once_push_claim_list *out)
{
    return once__sq_push_claim(sq(s), owner, now, lease_ms, max, out);
}

static int sq_push_ack(once_store *s, const once_push_ack *ack)
{
    return once__sq_push_ack(sq(s), ack);
}

static int sq_push_rows(once_store *s, const char *principal, const char *task_id,
                        once_push_row_list *out)
{
    return once__sq_push_rows(sq(s), principal, task_id, out);
}

int once__sqlite_synchronous(once_store *s, int *out)
{
    size_t v = 0;
    sq_op op = {.kind = SQ_OP_SYNC, .n = &v};
    int rc = once__sq_submit(sq(s), &op);
    *out = (int)v;
    return rc;
}

const once_store_methods once__store_sqlite = {
    .version = ONCE_STORE_METHODS_VERSION,
    .scheme = "sqlite",
    .caps = ONCE_STORE_SHARED | ONCE_STORE_DURABLE | ONCE_STORE_PUSH,
    .open = sq_open,
    .close = sq_close,
    .create = sq_create,
    .load = sq_load,
    .update = sq_update,
    .events = sq_events,
    .expired_leases = sq_expired_leases,
    .sweep = sq_sweep,
    .purge = sq_purge,
    .list = sq_list,
    .meta = sq_meta,
    .check = sq_check,
    .push_claim = sq_push_claim,
    .push_ack = sq_push_ack,
    .push_rows = sq_push_rows,
};
