/*
 * vfs_shim.c -- the test-only SQLite VFS "once-powerloss" (vfs_shim.h):
 * the disk's volatile cache for the power-cut sweep (powerloss.c), and a
 * gate that holds a commit's WAL fsync for the group commit tests
 * (group_fsync.c).
 */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sqlite/vfs_shim.h"
#include "timeout.h"

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
    int wal;              /* a -wal file: its xSync is a commit's fsync */
} pl_file;

/* The sync gate (shim_hold_syncs): gate is GATE_OPEN, GATE_HELD while
 * one WAL xSync waits in it, GATE_RELEASED once the test let it go with
 * gate_rc; cv signals every change. */
enum { GATE_OPEN, GATE_HELD, GATE_RELEASED };

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sqlite3_vfs *real;
    node files[MAX_FILES];
    long events;          /* xWrite + xSync calls this run */
    long cut_at;          /* 0: no cut armed */
    int dead;             /* the cut happened */
    int hold;             /* WAL syncs stop at the gate */
    int gate, gate_rc;
} G = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

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

/* Under G.mu: with the gate held, wait there until the test releases this
 * sync; its verdict. */
static int gate_pass(const pl_file *p)
{
    if (!p->wal || !G.hold)
        return SQLITE_OK;
    G.gate = GATE_HELD;
    pthread_cond_broadcast(&G.cv);
    while (G.gate == GATE_HELD)
        pthread_cond_wait(&G.cv, &G.mu);
    G.gate = GATE_OPEN;
    pthread_cond_broadcast(&G.cv);
    return G.gate_rc;
}

static int pl_sync(sqlite3_file *f, int flags)
{
    pl_file *p = (pl_file *)f;
    (void)flags;
    pthread_mutex_lock(&G.mu);
    int rc = gate_pass(p);
    if (rc != SQLITE_OK) {
        pthread_mutex_unlock(&G.mu);
        return rc;
    }
    rc = event_dead() ? SQLITE_IOERR_FSYNC : SQLITE_OK;
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
    p->wal = (flags & SQLITE_OPEN_WAL) != 0;
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
    .zName = SHIM_VFS,
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

void shim_register(void)
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
void shim_arm(long cut_at)
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
void shim_power_cycle(void)
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

void shim_counts(long *events, int *dead)
{
    pthread_mutex_lock(&G.mu);
    *events = G.events;
    *dead = G.dead;
    pthread_mutex_unlock(&G.mu);
}

int shim_dead(void)
{
    pthread_mutex_lock(&G.mu);
    int dead = G.dead;
    pthread_mutex_unlock(&G.mu);
    return dead;
}

long shim_cut_at(void)
{
    pthread_mutex_lock(&G.mu);
    long cut = G.cut_at;
    pthread_mutex_unlock(&G.mu);
    return cut;
}

void shim_hold_syncs(int on)
{
    pthread_mutex_lock(&G.mu);
    G.hold = on;
    pthread_mutex_unlock(&G.mu);
}

static int gate_held(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&G.mu);
    int held = G.gate == GATE_HELD;
    pthread_mutex_unlock(&G.mu);
    return held;
}

int shim_wait_held(int64_t timeout_ms)
{
    return tt_wait_until(gate_held, NULL, timeout_ms);
}

void shim_release(int fail)
{
    pthread_mutex_lock(&G.mu);
    assert_int_equal(G.gate, GATE_HELD);
    G.gate_rc = fail ? SQLITE_IOERR_FSYNC : SQLITE_OK;
    G.gate = GATE_RELEASED;
    pthread_cond_broadcast(&G.cv);
    while (G.gate == GATE_RELEASED)   /* the sync took its verdict */
        pthread_cond_wait(&G.cv, &G.mu);
    pthread_mutex_unlock(&G.mu);
}
