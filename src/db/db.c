/*
 * db.c -- the SQLite helper (db.h) the store's sqlite backend and the
 * client's outbox and webhook receiver share.
 *
 * Invariant: no statement outlives the call that prepared it unless it is
 * handed to the caller (once__db_prepare); every failure path finalizes.
 */
#include <errno.h>
#include <time.h>

#include "db/db.h"
#include "once/once.h"

int once__db_open(const char *path, int busy_ms, sqlite3 **db)
{
    *db = NULL;
    int src = sqlite3_open_v2(path, db,
                              SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                              NULL);
    return src == SQLITE_OK ? sqlite3_busy_timeout(*db, busy_ms) : src;
}

int once__db_vbind(sqlite3_stmt *st, const char *types, va_list ap)
{
    int src = SQLITE_OK;
    for (int i = 0; types[i] != '\0' && src == SQLITE_OK; i++) {
        const char *s;
        switch (types[i]) {
        case 's':
            s = va_arg(ap, const char *);
            src = s != NULL ? sqlite3_bind_text(st, i + 1, s, -1, SQLITE_TRANSIENT)
                            : sqlite3_bind_null(st, i + 1);
            break;
        case 't':
            s = va_arg(ap, const char *);
            src = sqlite3_bind_text64(st, i + 1, s, (sqlite3_uint64)va_arg(ap, size_t),
                                      SQLITE_TRANSIENT, SQLITE_UTF8);
            break;
        case 'i':
            src = sqlite3_bind_int64(st, i + 1, (sqlite3_int64)va_arg(ap, int64_t));
            break;
        case 'd':
            src = sqlite3_bind_double(st, i + 1, va_arg(ap, double));
            break;
        case '-':
            break;
        default:
            src = SQLITE_MISUSE;
        }
    }
    return src;
}

int once__db_vprepare(sqlite3 *db, sqlite3_stmt **st, const char *sql, const char *types,
                      va_list ap)
{
    int src = sqlite3_prepare_v2(db, sql, -1, st, NULL);
    if (src == SQLITE_OK)
        src = once__db_vbind(*st, types, ap);
    if (src != SQLITE_OK) {
        sqlite3_finalize(*st);
        *st = NULL;
    }
    return src;
}

int once__db_prepare(sqlite3 *db, sqlite3_stmt **st, const char *sql, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    int src = once__db_vprepare(db, st, sql, types, ap);
    va_end(ap);
    return src;
}

int once__db_vrun(sqlite3 *db, const char *sql, const char *types, va_list ap)
{
    sqlite3_stmt *st = NULL;
    int src = once__db_vprepare(db, &st, sql, types, ap);
    if (src == SQLITE_OK) {
        src = sqlite3_step(st);
        if (src == SQLITE_DONE || src == SQLITE_ROW)
            src = SQLITE_OK;
    }
    sqlite3_finalize(st);
    return src;
}

int once__db_run(sqlite3 *db, const char *sql, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    int src = once__db_vrun(db, sql, types, ap);
    va_end(ap);
    return src;
}

int once__db_begin(sqlite3 *db)
{
    return sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
}

int once__db_end(sqlite3 *db, int ok)
{
    if (ok == SQLITE_OK) {
        ok = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
        if (ok == SQLITE_OK)
            return SQLITE_OK;
    }
    /* A failed COMMIT may leave the transaction open (SQLITE_BUSY). */
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return ok;
}

int once__db_is_busy(int sqlite_rc)
{
    int p = sqlite_rc & 0xff;
    return p == SQLITE_BUSY || p == SQLITE_LOCKED;
}

int once__db_err(int sqlite_rc)
{
    if (once__db_is_busy(sqlite_rc))
        return ONCE_EBUSY;
    if ((sqlite_rc & 0xff) == SQLITE_NOMEM)
        return ONCE_ENOMEM;
    return ONCE_ESTORE;
}

void once__db_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

int once__db_while_busy(int (*attempt)(void *ctx), void *ctx, int64_t wait_ms)
{
    int64_t deadline = once_monotonic_ms() + wait_ms;
    for (;;) {
        int src = attempt(ctx);
        if (!once__db_is_busy(src) || once_monotonic_ms() >= deadline)
            return src;
        once__db_sleep_ms(5);
    }
}
