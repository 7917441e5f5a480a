/*
 * sqlite.c -- the "sqlite:PATH" store backend (also "sqlite://PATH"): one
 * database file in WAL mode that any number of threads and processes may
 * share (ONCE_STORE_SHARED) and that keeps every acknowledged write across
 * a crash at synchronous=FULL (ONCE_STORE_DURABLE).
 *
 * Design, file by file (sqlite_int.h has the map):
 *   - writes (create, update, sweep, purge, meta insert) are queued and run
 *     by group commit (store/batch.h, one leader at a time; the batch is
 *     sqlite_commit.c's): one writer connection, one BEGIN IMMEDIATE ...
 *     COMMIT per batch of concurrent callers. One op's failure never
 *     touches another's: an op that failed before changing a row has
 *     nothing to undo, and a batch in which one failed after a change is
 *     rolled back and run again with each op in its own SAVEPOINT (only
 *     then: savepoints cost ~11k instructions an op);
 *   - reads (load, events, list, expired_leases, meta lookup, check) run on
 *     pooled reader connections and never wait behind a commit;
 *   - other processes are kept out by SQLite's own locking: every write
 *     transaction takes the write lock first (IMMEDIATE), so create's
 *     tombstone check + INSERT ... ON CONFLICT DO NOTHING + winner read is
 *     atomic across processes; SQLITE_BUSY waits busy_timeout, then is
 *     retried a few times, then surfaces as ONCE_EBUSY;
 *   - every fallible sqlite3 call is fault-injectable (sqlite_fault.h);
 *   - push delivery rows (ONCE_STORE_PUSH) live in push_deliveries and
 *     change in the same transaction as the record that implies them.
 *
 * Settings come from the URL, sqlite:PATH?key=value&... (url_param.h):
 *     synchronous=full|normal|off  commit durability (store.h, ONCE_SYNC_*);
 *                                  full by default: a write is acknowledged
 *                                  only after its commit was synced
 *     busy_timeout=MS              wait for another process's write lock
 *                                  (default 5000)
 *     compact=MS|off               a task finished this long keeps only its
 *                                  last event, emptied (default 60000; see
 *                                  sqlite_write.c op_compact)
 *     vfs=NAME                     TESTS: open through a registered SQLite
 *                                  VFS (the power-loss test's shim)
 * An unknown key, a bad value or a key given twice fails the open. The URL
 * is the only source (once_store_options carries none of them), so a store
 * never commits at a durability other than the one its operator wrote down.
 *
 * The file is created mode 0600 (WAL and shm files inherit its mode).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "store/sqlite_fault.h"
#include "store/sqlite_int.h"
#include "store/slots.h"
#include "store/store_int.h"
#include "store/url_param.h"

/* The first row is the default. */
static const sq_sync_level sync_levels[] = {
    {ONCE_SYNC_FULL, "full", SQ_PRAGMA_SYNC_FULL},
    {ONCE_SYNC_NORMAL, "normal", SQ_PRAGMA_SYNC_NORMAL},
    {ONCE_SYNC_OFF, "off", SQ_PRAGMA_SYNC_OFF},
};
#define N_SYNC_LEVELS (sizeof sync_levels / sizeof sync_levels[0])

static const sq_sync_level *sync_by_level(int level)
{
    for (size_t i = 0; i < N_SYNC_LEVELS; i++)
        if (sync_levels[i].level == level)
            return &sync_levels[i];
    return NULL;
}

const char *once_sync_name(int level)
{
    const sq_sync_level *l = sync_by_level(level);
    return l ? l->name : NULL;
}

static sq_store *sq(once_store *s) { return (sq_store *)s; }

/* What the URL and the options ask for, before anything is opened. */
typedef struct sq_settings {
    char *path;                         /* owned */
    int sync;                           /* ONCE_SYNC_*, DEFAULT = not given */
    long long busy_ms;                  /* -1 = not given */
    long long compact_ms;               /* -2 = not given, -1 = off */
    char vfs[SQ_VFS_NAME_MAX + 1];      /* "" = SQLite's default VFS */
} sq_settings;

#define SQ_URL_KEYS "synchronous, busy_timeout, compact, vfs"

static int url_bad(char *errbuf, size_t errlen, const once__url_param *p, const char *why)
{
    once__store_errbuf(errbuf, errlen, "sqlite URL: %.*s=%.*s: %s",
                       (int)(p->klen > 32 ? 32 : p->klen), p->key,
                       (int)(p->vlen > 64 ? 64 : p->vlen), p->val, why);
    return ONCE_EINVAL;
}

/* One "?key=value" of the URL into st. A setting given twice is refused:
 * which of the two was meant is not ours to guess. */
static int url_setting(sq_settings *st, const once__url_param *p, char *errbuf, size_t errlen)
{
    if (once__url_param_is(p, "synchronous")) {
        if (st->sync != ONCE_SYNC_DEFAULT)
            return url_bad(errbuf, errlen, p, "given twice");
        for (size_t i = 0; i < N_SYNC_LEVELS; i++)
            if (once__url_param_val_is(p, sync_levels[i].name))
                st->sync = sync_levels[i].level;
        if (st->sync == ONCE_SYNC_DEFAULT)
            return url_bad(errbuf, errlen, p, "must be full, normal or off");
    } else if (once__url_param_is(p, "busy_timeout")) {
        if (st->busy_ms >= 0)
            return url_bad(errbuf, errlen, p, "given twice");
        if (once__url_param_num(p, 0, SQ_BUSY_MAX_MS, &st->busy_ms) != 0) {
            char why[48];
            snprintf(why, sizeof why, "must be milliseconds, 0..%d", SQ_BUSY_MAX_MS);
            return url_bad(errbuf, errlen, p, why);
        }
    } else if (once__url_param_is(p, "compact")) {
        if (st->compact_ms != -2)
            return url_bad(errbuf, errlen, p, "given twice");
        if (once__url_param_val_is(p, "off"))
            st->compact_ms = -1;
        else if (once__url_param_num(p, 0, SQ_COMPACT_MAX_MS, &st->compact_ms) != 0)
            return url_bad(errbuf, errlen, p, "must be milliseconds or off");
    } else if (once__url_param_is(p, "vfs")) {
        if (st->vfs[0])
            return url_bad(errbuf, errlen, p, "given twice");
        if (once__url_param_copy(p, st->vfs, sizeof st->vfs) != 0 || !sqlite3_vfs_find(st->vfs))
            return url_bad(errbuf, errlen, p, "not a registered SQLite VFS");
    } else {
        once__store_errbuf(errbuf, errlen, "sqlite URL: unknown parameter '%.*s' (known: %s)",
                           (int)(p->klen > 32 ? 32 : p->klen), p->key, SQ_URL_KEYS);
        return ONCE_EINVAL;
    }
    return ONCE_OK;
}

/* "sqlite:PATH[?SETTINGS]" or "sqlite://PATH[?SETTINGS]" into st (a PATH
 * therefore holds no '?'). The URL is the only place a setting comes from,
 * as for every backend: nothing in once_store_options can weaken it. */
static int parse_url(const char *url, sq_settings *st, char *errbuf, size_t errlen)
{
    static const char scheme[] = "sqlite:";
    memset(st, 0, sizeof *st);
    st->busy_ms = -1;
    st->compact_ms = -2;
    if (!url || strncmp(url, scheme, sizeof scheme - 1) != 0)
        goto no_path;
    const char *p = url + sizeof scheme - 1;
    if (p[0] == '/' && p[1] == '/')
        p += 2;
    size_t n = strcspn(p, "?");
    if (n == 0 || (n == 8 && memcmp(p, ":memory:", 8) == 0))
        goto no_path;
    if (!(st->path = once_strndup(p, n))) {
        once__store_errbuf(errbuf, errlen, "sqlite: out of memory");
        return ONCE_ENOMEM;
    }
    const char *q = p[n] ? p + n + 1 : NULL;
    once__url_param prm;
    while (once__url_param_next(&q, &prm)) {
        int rc = url_setting(st, &prm, errbuf, errlen);
        if (rc != ONCE_OK)
            return rc;
    }
    if (st->busy_ms < 0)
        st->busy_ms = SQ_BUSY_DEFAULT_MS;
    if (st->compact_ms == -2)
        st->compact_ms = SQ_COMPACT_DEFAULT_MS;
    return ONCE_OK;

no_path:
    once__store_errbuf(errbuf, errlen, "sqlite store URL must be sqlite:PATH to a file");
    return ONCE_EINVAL;
}

/* src appended at o with every byte outside a safe set %-escaped, so that
 * nothing in it can end the path or add a parameter. The new end. */
static char *uri_escape(char *o, const char *src)
{
    static const char hex[] = "0123456789abcdef";
    for (; *src; src++) {
        unsigned char ch = (unsigned char)*src;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            ch == '/' || ch == '.' || ch == '-' || ch == '_') {
            *o++ = (char)ch;
        } else {
            *o++ = '%';
            *o++ = hex[ch >> 4];
            *o++ = hex[ch & 15];
        }
    }
    return o;
}

/* A file: URI that opens path through the named VFS (once__sq_open takes
 * no VFS argument; SQLITE_OPEN_URI lets the name carry it). */
static char *vfs_uri(const char *path, const char *vfs)
{
    static const char tail[] = "?vfs=";
    const char *head = path[0] == '/' ? "file://" : "file:";
    size_t hn = strlen(head);
    char *u = once_malloc(hn + sizeof tail + 3 * (strlen(path) + strlen(vfs)));
    if (!u)
        return NULL;
    memcpy(u, head, hn);
    char *o = uri_escape(u + hn, path);
    memcpy(o, tail, sizeof tail - 1);
    o = uri_escape(o + sizeof tail - 1, vfs);
    *o = '\0';
    return u;
}

/* The release hook, and so the close slot: everything goes; the first
 * connection's close error is the answer. */
static int sq_release(once_store *base)
{
    sq_store *s = sq(base);
    once__sq_batch_destroy(s);
    int rc = once__sq_conn_close(s->writer);
    while (s->idle) {
        sq_conn *c = s->idle;
        s->idle = c->next;
        int crc = once__sq_conn_close(c);
        if (rc == ONCE_OK)
            rc = crc;
    }
    pthread_mutex_destroy(&s->pmu);
    pthread_mutex_destroy(&s->cmu);
    once__zip_free(&s->zip);
    if (s->open_name != s->path)
        once_free(s->open_name);
    once_free(s->path);
    once_free(s);
    return rc;
}

/* The parse hook: the URL's settings into the handle (the locks first, so
 * that release may always destroy them). */
static int sq_parse(once_store *base, const char *url, char *errbuf, size_t errlen)
{
    sq_store *s = sq(base);
    sq_settings st;

    once__sq_batch_init(s);
    pthread_mutex_init(&s->pmu, NULL);
    pthread_mutex_init(&s->cmu, NULL);
    int rc = parse_url(url, &st, errbuf, errlen);
    s->path = s->open_name = st.path;
    if (rc != ONCE_OK)
        return rc;
    if (!sqlite3_threadsafe()) {
        once__store_errbuf(errbuf, errlen, "sqlite: library built without thread safety");
        return ONCE_EUNSUPPORTED;
    }
    if (st.vfs[0]) {
        char *uri = vfs_uri(st.path, st.vfs);
        if (!uri)
            return ONCE_ENOMEM;
        s->open_name = uri;
        s->open_flags = SQLITE_OPEN_URI;
    }
    s->sync = sync_by_level(st.sync == ONCE_SYNC_DEFAULT ? sync_levels[0].level : st.sync);
    s->busy_ms = (int)st.busy_ms;
    s->compact_ms = st.compact_ms;
    return ONCE_OK;
}

/* The start hook: the file (0600 whatever the umask allows, so we create
 * it ourselves), the writer's connection and the schema. An open that may
 * not migrate creates nothing: a missing file is a store at version 0. */
static int sq_start(once_store *base, once__schema *sc, char *errbuf, size_t errlen)
{
    sq_store *s = sq(base);
    const char *path = s->path;
    int keep = (sc->flags & (ONCE__OPEN_PROBE | ONCE_STORE_OPEN_NO_MIGRATE)) != 0;

    int fd = open(path, (keep ? O_RDONLY : O_RDWR | O_CREAT) | O_CLOEXEC, 0600);
    int rc = ONCE_OK;
    if (fd < 0 && keep && errno == ENOENT) {
        rc = once__schema_gate(base, sc, NULL, 0, SQ_SCHEMA_VERSION);
        if (rc < 0)
            once__store_errbuf(errbuf, errlen, "%s (%s)", s->base.errmsg, path);
        return rc < 0 ? rc : ONCE_OK;
    }
    if (fd < 0) {
        once__store_errbuf(errbuf, errlen, "sqlite: cannot open %s: %s", path, strerror(errno));
        return ONCE_ESTORE;
    }
    close(fd);

    sq_conn *w;
    rc = once__sq_conn_open(s, 1, !keep, &w);
    if (rc == ONCE_OK) {
        rc = once__sq_schema(s, w, sc);
        if (rc != ONCE_OK)
            once__sq_conn_close(w);
        else
            s->writer = w;
    }
    if (rc != ONCE_OK)
        once__store_errbuf(errbuf, errlen, "%s (%s)", s->base.errmsg, path);
    return rc;
}

const once__backend once__sq_backend = {"sqlite", sizeof(sq_store), SQ_SCHEMA_VERSION, sq_parse,
                                        sq_start, sq_release};

ONCE__STORE_OPEN(sq, once__sq_backend)

static int sq_create(once_store *s, const once_record *rec, const once_event *ev, size_t nev,
                     once_record *winner, once_tombstone *tomb)
{
    if (winner)
        memset(winner, 0, sizeof *winner);
    if (tomb)
        memset(tomb, 0, sizeof *tomb);
    sq_op op = {.kind = SQ_OP_CREATE, .rec = rec, .ev = ev, .nev = nev, .winner = winner,
                .tomb = tomb};
    return once__sq_submit(sq(s), &op);
}

/* An asynchronous create: the op and the caller's completion. */
typedef struct sq_async {
    sq_op op;
    void (*done)(void *arg, int rc);
    void *arg;
} sq_async;

static void async_landed(sq_op *op)
{
    sq_async *a = (sq_async *)op;
    void (*done)(void *, int) = a->done;
    void *arg = a->arg;
    int rc = op->rc;
    once_free(a);
    done(arg, rc);
}

static int sq_create_start(once_store *s, const once_record *rec, const once_event *ev,
                              size_t nev, void (*done)(void *arg, int rc), void *arg)
{
    sq_async *a = once_calloc(1, sizeof *a);
    if (a == NULL)
        return ONCE_ENOMEM;
    a->op.kind = SQ_OP_CREATE;
    a->op.rec = rec;
    a->op.ev = ev;
    a->op.nev = nev;
    a->op.landed = async_landed;
    a->done = done;
    a->arg = arg;
    int rc = once__sq_submit_async(sq(s), &a->op);
    if (rc != ONCE_OK)
        once_free(a);
    return rc;
}

static int sq_load(once_store *s, const char *principal, const char *task_id, once_record *out,
                   once_tombstone *tomb)
{
    return once__sq_load(sq(s), principal, task_id, out, tomb);
}

static int sq_update(once_store *s, const once_record *rec, int64_t expect_version,
                     const once_event *ev, size_t nev)
{
    sq_op op = {.kind = SQ_OP_UPDATE, .rec = rec, .ev = ev, .nev = nev,
                .expect_version = expect_version};
    return once__sq_submit(sq(s), &op);
}

static int sq_generations(once_store *s, const once_key *keys, size_t n, int64_t *gens)
{
    return once__sq_generations(sq(s), keys, n, gens);
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

static int mark_cmp(const sq_mark *a, const sq_mark *b)
{
    if (a->finished_at != b->finished_at)
        return a->finished_at < b->finished_at ? -1 : 1;
    int c = strcmp(a->principal, b->principal);
    return c ? c : strcmp(a->task_id, b->task_id);
}

/* Up to max finished tasks past the compaction age keep only their last
 * event (sqlite_write.c op_compact), from where the last pass stopped; *n
 * of them looked at. */
static int compact(sq_store *s, int64_t now, size_t max, size_t *n)
{
    sq_mark from, to;
    pthread_mutex_lock(&s->cmu);
    from = to = s->mark;
    pthread_mutex_unlock(&s->cmu);
    sq_op op = {.kind = SQ_OP_COMPACT, .before = now - s->compact_ms, .max = max,
                .n = n, .from = &from, .mark = &to};
    int rc = once__sq_submit(s, &op);
    if (rc == ONCE_OK) {
        pthread_mutex_lock(&s->cmu);
        if (mark_cmp(&to, &s->mark) > 0)
            s->mark = to;
        pthread_mutex_unlock(&s->cmu);
    }
    return rc;
}

static int sq_sweep(once_store *s, int64_t finished_before, int64_t now, size_t max, size_t *n)
{
    *n = 0;
    if (max == 0)
        return ONCE_OK;
    sq_op op = {.kind = SQ_OP_SWEEP, .before = finished_before, .now = now, .max = max, .n = n};
    int rc = once__sq_submit(sq(s), &op);
    /* The answer is the sweep's: a compaction that failed changed nothing
     * and the next sweep runs it again from the same mark. Batches of max,
     * each its own transaction (writes go on between them), until one comes
     * back short: a sweep a second keeps up with up to SQ_COMPACT_ROUNDS
     * times max tasks finishing a second. */
    for (int i = 0; rc == ONCE_OK && sq(s)->compact_ms >= 0 && i < SQ_COMPACT_ROUNDS; i++) {
        size_t seen = 0;
        if (compact(sq(s), now, max, &seen) != ONCE_OK || seen < max)
            break;
    }
    return rc;
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

/* The synchronous slot: the writer connection's PRAGMA, as a level. */
static int sq_synchronous(once_store *s, int *level)
{
    int pragma = -1;
    int rc = once__sqlite_synchronous(s, &pragma);
    if (rc != ONCE_OK)
        return rc;
    for (size_t i = 0; i < N_SYNC_LEVELS; i++)
        if (sync_levels[i].pragma == pragma)
            *level = sync_levels[i].level;
    if (*level != ONCE_SYNC_DEFAULT)
        return ONCE_OK;
    once__store_seterr(s, "sqlite: PRAGMA synchronous reads %d, a level once never sets", pragma);
    return ONCE_ESTORE;
}

/* The slots named otherwise, and those SQLite has not (slots.h). */
#define sq_close sq_release
#define sq_renew once__sq_renew
#define sq_replica_beat once__sq_replica_beat
#define sq_replicas once__sq_replicas
#define sq_feed_open NULL
#define sq_feed_next NULL
#define sq_feed_close NULL
#define sq_budget NULL

/* LOCAL: reads run on this process's connections; CREATE_START: creates
 * go through the group commit (sqlite_commit.c) like every write, so one
 * may be queued without waiting; START_PUSH: a create's delivery rows are
 * written by the same op, in its group's transaction. */
const once_store_methods once__store_sqlite =
    ONCE__STORE_TABLE(sq, "sqlite",
                      ONCE_STORE_SHARED | ONCE_STORE_DURABLE | ONCE_STORE_PUSH |
                          ONCE_STORE_GENERATIONS | ONCE_STORE_REPLICAS | ONCE_STORE_CREATE_START |
                          ONCE_STORE_START_PUSH | ONCE_STORE_LOCAL | ONCE_STORE_SYNCHRONOUS |
                          ONCE_STORE_LIST_SEEK);
