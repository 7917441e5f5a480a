/*
 * powerloss.c -- every acknowledged write of the sqlite store survives a
 * power cut, at every point a cut can fall, and the test can tell when one
 * does not.
 *
 * A test-only SQLite VFS ("once-powerloss") wraps the default one and
 * plays the disk's volatile cache: a write reaches the file at once (so
 * SQLite reads it back as it would from the page cache), but until an
 * xSync of that file it is only remembered as an undo entry holding the
 * bytes it replaced; truncations likewise. xSync makes everything written
 * to the file so far durable and forgets its undo entries (no real fsync
 * is needed for that, so the sweep runs at memory speed). Power is cut
 * just before the k-th xWrite or xSync of the run: that call and every
 * later write, sync, truncate or delete fails as on a dead machine. The
 * "reboot" closes the store, rolls every file back to what its last xSync
 * made durable (undo entries newest first, then the size it had then), and
 * reopens it through the ordinary VFS.
 *
 * The workload is one thread creating and then twice updating a few tasks
 * through libonce (sqlite:PATH?vfs=once-powerloss&synchronous=...), the
 * creates and the updates in two sessions (a close checkpoints and removes
 * the WAL, the next open starts a new one), so run k cuts at the same
 * place every time. A write is acknowledged when its
 * call returned ONCE_OK; after the reboot the store must pass check() and
 * hold, for every task, at least the last acknowledged version, with the
 * text and events that version wrote (a write in flight at the cut may or
 * may not be there). k goes 1, 2, ... until a run ends before reaching k.
 *
 * At synchronous=full no cut point may lose anything. At
 * synchronous=normal commits are not synced, so some cut point must lose
 * an acknowledged write: that run shows the harness detects the breach it
 * exists for.
 *
 * Not modelled: torn writes inside one xWrite, and deletions that a cut
 * could undo (a delete is durable at once; it only happens to the WAL at
 * the last close, after the checkpoint was synced).
 */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include "store/util.h"

#define VFS_NAME "once-powerloss"
#define T0 INT64_C(1700000000000)
#define NTASK 5
#define NVERSION 3           /* create, then two updates per task */
#define MAX_FILES 8

/* ------------------------------------------------------------------------
 * The shim. One mutex guards every field below: the store's reader and
 * writer connections may run on different threads, and the last one to
 * close checkpoints through its own handle.
 */

/* Bytes a write or truncate replaced, to put back at the cut. */
typedef struct undo {
    sqlite3_int64 off;
    int len;
    unsigned char *old;
    struct undo *prev;   /* the entry before it (older) */
} undo;

/* One file as the disk sees it, shared by every handle open on it. */
typedef struct node {
    char path[1024];
    int used;
    sqlite3_int64 durable_size;   /* its size at the last xSync */
    undo *undo;                   /* newest first */
} node;

typedef struct pl_file {
    sqlite3_file base;
    sqlite3_file *real;   /* the wrapped file, allocated right after this */
    node *n;              /* NULL: a temp file, never durable */
} pl_file;

static struct {
    pthread_mutex_t mu;
    sqlite3_vfs *real;
    node files[MAX_FILES];
    long events;          /* xWrite + xSync calls this run */
    long cut_at;          /* 0: no cut armed */
    int dead;             /* the cut happened */
} G = {.mu = PTHREAD_MUTEX_INITIALIZER};

static sqlite3_file *real_of(sqlite3_file *f) { return ((pl_file *)f)->real; }

/* Count one write or sync; 1 if power is (now) off and it must fail. */
static int event_dead(void)
{
    if (G.dead)
        return 1;
    G.events++;
    if (G.cut_at > 0 && G.events == G.cut_at)
        G.dead = 1;
    return G.dead;
}

/* Remember what [off, off+len) held, so the cut can restore it. */
static int save_undo(pl_file *p, sqlite3_int64 off, int len)
{
    undo *u = malloc(sizeof *u);
    unsigned char *old = malloc(len > 0 ? (size_t)len : 1);
    if (!u || !old) {
        free(u);
        free(old);
        return SQLITE_NOMEM;
    }
    /* Past the end reads back as zeros (SQLITE_IOERR_SHORT_READ): the
     * size restored at the cut drops those bytes again. */
    int rc = p->real->pMethods->xRead(p->real, old, len, off);
    if (rc != SQLITE_OK && rc != SQLITE_IOERR_SHORT_READ) {
        free(u);
        free(old);
        return rc;
    }
    u->off = off;
    u->len = len;
    u->old = old;
    u->prev = p->n->undo;
    p->n->undo = u;
    return SQLITE_OK;
}

static void drop_undo(node *n)
{
    while (n->undo) {
        undo *u = n->undo;
        n->undo = u->prev;
        free(u->old);
        free(u);
    }
}

static int pl_close(sqlite3_file *f)
{
    return real_of(f)->pMethods->xClose(real_of(f));
}

static int pl_read(sqlite3_file *f, void *buf, int amt, sqlite3_int64 off)
{
    return real_of(f)->pMethods->xRead(real_of(f), buf, amt, off);
}

static int pl_write(sqlite3_file *f, const void *buf, int amt, sqlite3_int64 off)
{
    pl_file *p = (pl_file *)f;
    pthread_mutex_lock(&G.mu);
    int rc = event_dead() ? SQLITE_IOERR_WRITE : SQLITE_OK;
    if (rc == SQLITE_OK && p->n)
        rc = save_undo(p, off, amt);
    if (rc == SQLITE_OK)
        rc = p->real->pMethods->xWrite(p->real, buf, amt, off);
    pthread_mutex_unlock(&G.mu);
    return rc;
}

static int pl_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    pl_file *p = (pl_file *)f;
    sqlite3_int64 cur = 0;
    pthread_mutex_lock(&G.mu);
    int rc = G.dead ? SQLITE_IOERR_TRUNCATE : SQLITE_OK;
    if (rc == SQLITE_OK && p->n)
        rc = p->real->pMethods->xFileSize(p->real, &cur);
    if (rc == SQLITE_OK && p->n && cur > size)
        rc = save_undo(p, size, (int)(cur - size));
    if (rc == SQLITE_OK)
        rc = p->real->pMethods->xTruncate(p->real, size);
    pthread_mutex_unlock(&G.mu);
    return rc;
}

static int pl_sync(sqlite3_file *f, int flags)
{
    pl_file *p = (pl_file *)f;
    (void)flags;
    pthread_mutex_lock(&G.mu);
    int rc = event_dead() ? SQLITE_IOERR_FSYNC : SQLITE_OK;
    if (rc == SQLITE_OK && p->n) {
        rc = p->real->pMethods->xFileSize(p->real, &p->n->durable_size);
        drop_undo(p->n);
    }
    pthread_mutex_unlock(&G.mu);
    return rc;
}

static int pl_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
    return real_of(f)->pMethods->xFileSize(real_of(f), size);
}

static int pl_lock(sqlite3_file *f, int lock)
{
    return real_of(f)->pMethods->xLock(real_of(f), lock);
}

static int pl_unlock(sqlite3_file *f, int lock)
{
    return real_of(f)->pMethods->xUnlock(real_of(f), lock);
}

static int pl_check_reserved(sqlite3_file *f, int *out)
{
    return real_of(f)->pMethods->xCheckReservedLock(real_of(f), out);
}

static int pl_file_control(sqlite3_file *f, int op, void *arg)
{
    return real_of(f)->pMethods->xFileControl(real_of(f), op, arg);
}

static int pl_sector_size(sqlite3_file *f)
{
    return real_of(f)->pMethods->xSectorSize(real_of(f));
}

static int pl_device_characteristics(sqlite3_file *f)
{
    return real_of(f)->pMethods->xDeviceCharacteristics(real_of(f));
}

/* The WAL index (-shm) is memory SQLite rebuilds from the WAL after a
 * reboot, so it passes straight through. */
static int pl_shm_map(sqlite3_file *f, int pg, int pgsz, int extend, void volatile **pp)
{
    return real_of(f)->pMethods->xShmMap(real_of(f), pg, pgsz, extend, pp);
}

static int pl_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    return real_of(f)->pMethods->xShmLock(real_of(f), offset, n, flags);
}

static void pl_shm_barrier(sqlite3_file *f)
{
    real_of(f)->pMethods->xShmBarrier(real_of(f));
}

static int pl_shm_unmap(sqlite3_file *f, int del)
{
    return real_of(f)->pMethods->xShmUnmap(real_of(f), del);
}

/* Version 2: no xFetch, so SQLite never reads through a memory map that
 * the rollback at the cut would have to reach. */
static const sqlite3_io_methods pl_io = {
    .iVersion = 2,
    .xClose = pl_close,
    .xRead = pl_read,
    .xWrite = pl_write,
    .xTruncate = pl_truncate,
    .xSync = pl_sync,
    .xFileSize = pl_file_size,
    .xLock = pl_lock,
    .xUnlock = pl_unlock,
    .xCheckReservedLock = pl_check_reserved,
    .xFileControl = pl_file_control,
    .xSectorSize = pl_sector_size,
    .xDeviceCharacteristics = pl_device_characteristics,
    .xShmMap = pl_shm_map,
    .xShmLock = pl_shm_lock,
    .xShmBarrier = pl_shm_barrier,
    .xShmUnmap = pl_shm_unmap,
};

/* The node of path; a file first seen is durable as it stands. */
static node *node_of(const char *path, sqlite3_file *real)
{
    node *free_slot = NULL;
    for (int i = 0; i < MAX_FILES; i++) {
        if (G.files[i].used && strcmp(G.files[i].path, path) == 0)
            return &G.files[i];
        if (!G.files[i].used && !free_slot)
            free_slot = &G.files[i];
    }
    if (!free_slot || strlen(path) >= sizeof free_slot->path)
        return NULL;
    free_slot->used = 1;
    snprintf(free_slot->path, sizeof free_slot->path, "%s", path);
    free_slot->durable_size = 0;
    if (real->pMethods->xFileSize(real, &free_slot->durable_size) != SQLITE_OK)
        free_slot->durable_size = 0;
    return free_slot;
}

static int pl_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f, int flags,
                   int *out_flags)
{
    (void)vfs;
    pl_file *p = (pl_file *)f;
    memset(p, 0, sizeof *p);
    p->real = (sqlite3_file *)&p[1];
    int rc = G.real->xOpen(G.real, name, p->real, flags, out_flags);
    if (rc != SQLITE_OK) {
        p->base.pMethods = NULL;
        return rc;
    }
    if (name && (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL | SQLITE_OPEN_MAIN_JOURNAL))) {
        pthread_mutex_lock(&G.mu);
        p->n = node_of(name, p->real);
        pthread_mutex_unlock(&G.mu);
        if (!p->n) {
            p->real->pMethods->xClose(p->real);
            p->base.pMethods = NULL;
            return SQLITE_CANTOPEN;
        }
    }
    p->base.pMethods = &pl_io;
    return SQLITE_OK;
}

static int pl_delete(sqlite3_vfs *vfs, const char *name, int dir_sync)
{
    (void)vfs;
    pthread_mutex_lock(&G.mu);
    int rc = G.dead ? SQLITE_IOERR_DELETE : SQLITE_OK;
    if (rc == SQLITE_OK) {
        rc = G.real->xDelete(G.real, name, dir_sync);
        for (int i = 0; i < MAX_FILES; i++) {
            if (G.files[i].used && strcmp(G.files[i].path, name) == 0) {
                drop_undo(&G.files[i]);
                G.files[i].durable_size = 0;   /* a later file of that name starts empty */
            }
        }
    }
    pthread_mutex_unlock(&G.mu);
    return rc;
}

static int pl_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
    (void)vfs;
    return G.real->xAccess(G.real, name, flags, out);
}

static int pl_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
    (void)vfs;
    return G.real->xFullPathname(G.real, name, n, out);
}

static int pl_randomness(sqlite3_vfs *vfs, int n, char *out)
{
    (void)vfs;
    return G.real->xRandomness(G.real, n, out);
}

static int pl_sleep(sqlite3_vfs *vfs, int us)
{
    (void)vfs;
    return G.real->xSleep(G.real, us);
}

static int pl_current_time(sqlite3_vfs *vfs, double *out)
{
    (void)vfs;
    return G.real->xCurrentTime(G.real, out);
}

static int pl_last_error(sqlite3_vfs *vfs, int n, char *out)
{
    (void)vfs;
    return G.real->xGetLastError(G.real, n, out);
}

static int pl_current_time64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
    (void)vfs;
    return G.real->xCurrentTimeInt64(G.real, out);
}

static sqlite3_vfs pl_vfs = {
    .iVersion = 2,
    .zName = VFS_NAME,
    .xOpen = pl_open,
    .xDelete = pl_delete,
    .xAccess = pl_access,
    .xFullPathname = pl_full_pathname,
    .xRandomness = pl_randomness,
    .xSleep = pl_sleep,
    .xCurrentTime = pl_current_time,
    .xGetLastError = pl_last_error,
    .xCurrentTimeInt64 = pl_current_time64,
};

static void shim_register(void)
{
    if (G.real)
        return;
    G.real = sqlite3_vfs_find(NULL);
    assert_non_null(G.real);
    assert_true(G.real->iVersion >= 2);
    pl_vfs.szOsFile = (int)sizeof(pl_file) + G.real->szOsFile;
    pl_vfs.mxPathname = G.real->mxPathname;
    assert_int_equal(sqlite3_vfs_register(&pl_vfs, 0), SQLITE_OK);
}

/* A new run: nothing written yet, power on, cut before event cut_at. */
static void shim_arm(long cut_at)
{
    pthread_mutex_lock(&G.mu);
    for (int i = 0; i < MAX_FILES; i++) {
        drop_undo(&G.files[i]);
        memset(&G.files[i], 0, sizeof G.files[i]);
    }
    G.events = 0;
    G.cut_at = cut_at;
    G.dead = 0;
    pthread_mutex_unlock(&G.mu);
}

/* The reboot: every file back to what its last xSync made durable. Runs
 * after every handle through the shim is closed. */
static void shim_power_cycle(void)
{
    pthread_mutex_lock(&G.mu);
    for (int i = 0; i < MAX_FILES; i++) {
        node *n = &G.files[i];
        if (!n->used)
            continue;
        int fd = open(n->path, O_RDWR | O_CLOEXEC);
        if (fd < 0) {
            assert_null(n->undo);   /* deleted after its last write was synced */
            continue;
        }
        for (undo *u = n->undo; u; u = u->prev)
            assert_int_equal(pwrite(fd, u->old, (size_t)u->len, u->off), u->len);
        assert_int_equal(ftruncate(fd, n->durable_size), 0);
        close(fd);
        drop_undo(n);
    }
    G.cut_at = 0;
    G.dead = 0;
    pthread_mutex_unlock(&G.mu);
}

/* ------------------------------------------------------------------------
 * The workload and what it was told.
 */

typedef struct ack {
    int64_t version;   /* last version whose write returned ONCE_OK; 0 none */
    int64_t tried;     /* last version attempted (may have landed) */
} ack;

typedef struct run_result {
    long events;       /* events the run made (the cut is at most one more) */
    int reached_cut;
    long acked;        /* acknowledged writes */
    long lost;         /* acknowledged writes missing after the reboot */
    char first_loss[160];
} run_result;

static void task_text(char *buf, size_t n, int task, int64_t version)
{
    snprintf(buf, n, "{\"task\":%d,\"version\":%lld,\"pad\":\"%0200d\"}", task,
             (long long)version, task);
}

static void task_id(char *buf, size_t n, int task) { snprintf(buf, n, "t-%d", task); }

/* The record task holds at version v (generation v: one event per write). */
static void build(once_record *r, int task, int64_t v)
{
    char id[32], text[256];
    task_id(id, sizeof id, task);
    task_text(text, sizeof text, task, v);
    once_state st = v == NVERSION ? ONCE_STATE_COMPLETED : ONCE_STATE_WORKING;
    assert_int_equal(st_rec(r, "p", id, st, T0, text), 0);
    r->version = v;
    r->generation = v;
    r->updated_at = T0 + v;
}

/* One write: create for v == 1, else the CAS from v - 1. */
static int write_version(once_store *s, int task, int64_t v)
{
    once_record r;
    st_events ev;
    char tag[32];
    build(&r, task, v);
    snprintf(tag, sizeof tag, "t%d-v%lld", task, (long long)v);
    st_mkev(&ev, v, 1, tag);
    int rc = v == 1 ? once_store_create(s, &r, ev.ev, 1, NULL, NULL)
                    : once_store_update(s, &r, v - 1, ev.ev, 1);
    once_record_clear(&r);
    return rc;
}

/* After the reboot: a clean store holding every acknowledged version. */
static void verify(const char *path, const ack acks[NTASK], run_result *res)
{
    char url[4200], err[256] = "";
    /* The check itself needs no durability: no real fsync per run. */
    snprintf(url, sizeof url, "sqlite:%s?synchronous=off", path);
    once_store *s = NULL;
    int rc = once_store_open(url, NULL, &s, err, sizeof err);
    if (rc != ONCE_OK)
        fail_msg("cut %ld: reopen after the reboot: %s (%s)", G.cut_at, once_errname(rc), err);
    once_check_report rep;
    assert_int_equal(once_store_check(s, &rep), ONCE_OK);
    if (!st_clean(&rep))
        fail_msg("check after the reboot: %s", rep.first_problem);
    for (int t = 0; t < NTASK; t++) {
        if (acks[t].version == 0)
            continue;
        char id[32], want[256], ev_want[64];
        task_id(id, sizeof id, t);
        once_record r;
        rc = once_store_load(s, "p", id, &r, NULL);
        int64_t have = rc == ONCE_OK ? r.version : 0;
        if (have < acks[t].version) {
            res->lost += acks[t].version - have;
            if (!res->first_loss[0])
                snprintf(res->first_loss, sizeof res->first_loss,
                         "%s: version %lld acknowledged, %lld after the reboot", id,
                         (long long)acks[t].version, (long long)have);
        } else {
            /* What is there is exactly what some attempted write wrote. */
            assert_true(have <= acks[t].tried);
            task_text(want, sizeof want, t, have);
            assert_string_equal(r.task_json, want);
            assert_int_equal(r.generation, have);
            once_event_list el;
            assert_int_equal(once_store_events(s, "p", id, 0, 0, &el), ONCE_OK);
            assert_int_equal(el.n, (size_t)have);
            snprintf(ev_want, sizeof ev_want, "{\"g\":%lld,\"tag\":\"t%d-v%lld\"}",
                     (long long)have, t, (long long)have);
            assert_string_equal(el.v[el.n - 1].payload, ev_want);
            once_event_list_clear(&el);
        }
        if (rc == ONCE_OK)
            once_record_clear(&r);
    }
    once_store_close(s);
}

/* One run: cut before event cut_at (0: never), reboot, verify. */
static void run_once(const char *path, const char *sync, long cut_at, run_result *res)
{
    char url[4300], err[256] = "";
    ack acks[NTASK];
    memset(acks, 0, sizeof acks);
    memset(res, 0, sizeof *res);
    st_remove_db(path);
    shim_arm(cut_at);

    snprintf(url, sizeof url, "sqlite:%s?vfs=" VFS_NAME "&synchronous=%s", path, sync);
    /* Two sessions: the creates, then the updates, so that the sweep also
     * cuts through the checkpoint and WAL removal of a close and the WAL
     * being started again by the next open. Task by task, version by
     * version; everything stops at the first failure, since with the
     * power off nothing more can be acknowledged. */
    static const int64_t first_version[] = {1, 2, NVERSION + 1};
    int rc = ONCE_OK;
    for (int session = 0; session < 2 && rc == ONCE_OK; session++) {
        once_store *s = NULL;
        rc = once_store_open(url, NULL, &s, err, sizeof err);
        if (rc != ONCE_OK) {
            if (!G.dead)
                fail_msg("open %s: %s (%s)", url, once_errname(rc), err);
            break;
        }
        for (int64_t v = first_version[session]; v < first_version[session + 1] && rc == ONCE_OK;
             v++) {
            for (int t = 0; t < NTASK && rc == ONCE_OK; t++) {
                acks[t].tried = v;
                rc = write_version(s, t, v);
                if (rc == ONCE_OK) {
                    acks[t].version = v;
                    res->acked++;
                } else if (!G.dead) {
                    fail_msg("write t-%d v%lld failed with the power on: %s (%s)", t,
                             (long long)v, once_errname(rc), once_store_errmsg(s));
                }
            }
        }
        once_store_close(s);
    }
    pthread_mutex_lock(&G.mu);
    res->events = G.events;
    res->reached_cut = G.dead;
    pthread_mutex_unlock(&G.mu);
    shim_power_cycle();
    verify(path, acks, res);
}

/* Every cut point k = 1, 2, ... until a run ends before reaching it. */
typedef struct sweep {
    long runs, acked, lossy_runs, lost;
    long first_lossy_cut;
    char first_loss[160];
} sweep;

static void sweep_all(const char *sync, sweep *sw)
{
    char path[4096];
    assert_int_equal(st_tmp_path(path, sizeof path, "powerloss"), 0);
    shim_register();
    memset(sw, 0, sizeof *sw);

    run_result res;
    run_once(path, sync, 0, &res);   /* no cut: how many events a run makes */
    assert_int_equal(res.lost, 0);
    assert_int_equal(res.acked, NTASK * NVERSION);
    long total = res.events;
    for (long k = 1;; k++) {
        run_once(path, sync, k, &res);
        if (!res.reached_cut) {
            assert_true(k > total);   /* the run without a cut saw as many */
            break;
        }
        sw->runs++;
        sw->acked += res.acked;
        if (res.lost) {
            sw->lossy_runs++;
            sw->lost += res.lost;
            if (!sw->first_lossy_cut) {
                sw->first_lossy_cut = k;
                snprintf(sw->first_loss, sizeof sw->first_loss, "%s", res.first_loss);
            }
        }
    }
    st_remove_db(path);
    printf("powerloss synchronous=%s: %ld cut points (k = 1..%ld of %ld writes+syncs per run), "
           "%ld acknowledged writes checked after the reboots, %ld lost in %ld runs",
           sync, sw->runs, sw->runs, total, sw->acked, sw->lost, sw->lossy_runs);
    if (sw->first_lossy_cut)
        printf(" (first at k = %ld: %s)", sw->first_lossy_cut, sw->first_loss);
    printf("\n");
    fflush(stdout);
}

static void full_loses_nothing(void **state)
{
    (void)state;
    sweep sw;
    sweep_all("full", &sw);
    assert_true(sw.runs > NTASK * NVERSION);   /* at least a sync per commit */
    if (sw.lost)
        fail_msg("synchronous=full lost %ld acknowledged writes; first at cut %ld: %s", sw.lost,
                 sw.first_lossy_cut, sw.first_loss);
}

/* The same sweep must catch NORMAL losing acknowledged commits, or it
 * proves nothing about FULL. */
static void normal_is_caught(void **state)
{
    (void)state;
    sweep sw;
    sweep_all("normal", &sw);
    if (sw.lost == 0)
        fail_msg("synchronous=normal lost nothing over %ld cut points: the shim does not model "
                 "a power cut",
                 sw.runs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(full_loses_nothing),
        cmocka_unit_test(normal_is_caught),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
