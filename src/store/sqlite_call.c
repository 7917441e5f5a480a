/*
 * sqlite_call.c -- the only place the sqlite backend calls sqlite3_* APIs
 * that can fail. Each wrapper ticks a process-wide call counter and, when
 * the armed fault count reaches this call, returns the fault code instead
 * (sqlite_fault.h). Real and injected failures then take the same paths.
 *
 * Counters are C11 atomics: wrappers run on many threads at once.
 */
#include <stdarg.h>
#include <stdatomic.h>

#include "store/sqlite_fault.h"
#include "store/sqlite_int.h"

static atomic_long calls;
static atomic_long countdown = -1;   /* > 0: calls left before the fault */
static atomic_long faults;
static atomic_int fault_rc = SQLITE_IOERR;
static atomic_long commits;
static atomic_long committed_ops;
static atomic_long reruns;

void once__sqlite_fault_at(long n)
{
    atomic_store(&countdown, n > 0 ? n : -1);
}

void once__sqlite_fault_code(int sqlite_rc)
{
    atomic_store(&fault_rc, sqlite_rc);
}

long once__sqlite_calls(void) { return atomic_load(&calls); }
long once__sqlite_faults(void) { return atomic_load(&faults); }
long once__sqlite_commits(void) { return atomic_load(&commits); }
long once__sqlite_committed_ops(void) { return atomic_load(&committed_ops); }
long once__sqlite_reruns(void) { return atomic_load(&reruns); }
void once__sq_count_rerun(void) { atomic_fetch_add(&reruns, 1); }

void once__sq_count_commit(size_t ops)
{
    atomic_fetch_add(&commits, 1);
    atomic_fetch_add(&committed_ops, (long)ops);
}

/* Count one call; the SQLite code to fail it with, or 0 to let it run. */
static int tick(void)
{
    atomic_fetch_add(&calls, 1);
    long c = atomic_load(&countdown);
    while (c > 0) {
        if (atomic_compare_exchange_weak(&countdown, &c, c == 1 ? -1 : c - 1)) {
            if (c != 1)
                return 0;
            atomic_fetch_add(&faults, 1);
            return atomic_load(&fault_rc);
        }
    }
    return 0;
}

/* Each op of a batch runs in a SAVEPOINT whose journal SQLite keeps in
 * memory up to a spill threshold (64 KiB by default), then moves to a
 * temporary file; once moved, every later op of that transaction writes its
 * savepoint journal to the file (two pwrites a page). One op with a few page
 * splits passes 64 KiB, so under load batches spilled often (bench/README.md,
 * "Run G", counts the files opened and the pwrites). The threshold is also
 * the journal's one allocation, so it is raised to SQ_STMT_SPILL, not made
 * unlimited (that would allocate 1 KiB chunks). It stays under 128 KiB:
 * the spill writes the whole allocation in one call, and SQLite's unix VFS
 * writes at most 128 KiB - 1 bytes a call (it masks the length with
 * 0x1ffff), so a larger threshold made every spill fail with SQLITE_FULL
 * ("database or disk is full") and the op with it (sqlite/basics
 * version_6_migrates_a_large_file). It is a
 * process-wide setting that SQLite takes only before it initializes: if the
 * application started SQLite first, the default stays and only speed
 * differs. */
static pthread_once_t spill_once = PTHREAD_ONCE_INIT;

static void raise_spill(void)
{
    (void)sqlite3_config(SQLITE_CONFIG_STMTJRNL_SPILL, SQ_STMT_SPILL);
}

int once__sq_open(const char *path, int flags, sqlite3 **db)
{
    *db = NULL;
    pthread_once(&spill_once, raise_spill);
    int f = tick();
    if (f)
        return f;
    int rc = sqlite3_open_v2(path, db, flags, NULL);
    if (rc != SQLITE_OK) {
        sqlite3_close_v2(*db);  /* a handle may come back even on failure */
        *db = NULL;
    }
    return rc;
}

int once__sq_busy_timeout(sqlite3 *db, int ms)
{
    int f = tick();
    return f ? f : sqlite3_busy_timeout(db, ms);
}

int once__sq_exec(sqlite3 *db, const char *sql)
{
    int f = tick();
    return f ? f : sqlite3_exec(db, sql, NULL, NULL, NULL);
}

int once__sq_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
    *st = NULL;
    int f = tick();
    if (f)
        return f;
    return sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
}

int once__sq_bind_text(sqlite3_stmt *st, int i, const char *s)
{
    int f = tick();
    if (f)
        return f;
    /* SQLITE_STATIC: callers keep s alive until the statement is reset. */
    return s ? sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC) : sqlite3_bind_null(st, i);
}

int once__sq_bind_int64(sqlite3_stmt *st, int i, int64_t v)
{
    int f = tick();
    return f ? f : sqlite3_bind_int64(st, i, (sqlite3_int64)v);
}

int once__sq_bind(sqlite3_stmt *st, int first, const char *types, ...)
{
    va_list ap;

    va_start(ap, types);
    int rc = once__sq_vbind(st, first, types, ap);
    va_end(ap);
    return rc;
}

int once__sq_vbind(sqlite3_stmt *st, int first, const char *types, va_list ap)
{
    int rc = SQLITE_OK;

    for (int i = 0; rc == SQLITE_OK && types[i]; i++) {
        if (types[i] == 's')
            rc = once__sq_bind_text(st, first + i, va_arg(ap, const char *));
        else
            rc = once__sq_bind_int64(st, first + i, va_arg(ap, int64_t));
    }
    return rc;
}

int once__sq_step(sqlite3_stmt *st)
{
    int f = tick();
    return f ? f : sqlite3_step(st);
}

int once__sq_reset(sqlite3_stmt *st)
{
    int f = tick();
    /* A real reset always resets (its code reports the last step); keep
     * that under injection so no statement keeps a read snapshot open.
     * Clearing the bindings drops the SQLITE_STATIC pointers into the
     * caller's buffers, which do not outlive the call. */
    int rc = sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return f ? f : rc;
}
