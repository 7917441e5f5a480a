/*
 * db.h -- the small SQLite helper under every SQLite user in once: the
 * store's sqlite backend (src/store/sqlite*.c), the client's outbox
 * (src/client/outbox*.c) and its webhook receiver's processed-set
 * (src/client/webhook.c). Not API.
 *
 * What it holds is what all three need alike: a statement prepared with
 * its arguments bound from a type string, run to completion, a transaction
 * that commits or rolls back, and what a busy database means (which codes,
 * how long to wait, which once error a code becomes). Every function
 * returns SQLite's own result code unless it says otherwise, so callers
 * keep their messages (sqlite3_errmsg) and their mapping.
 */
#ifndef ONCE_DB_DB_H
#define ONCE_DB_DB_H

#include <sqlite3.h>
#include <stdarg.h>
#include <stdint.h>

/* Open (or create) path read-write for one thread at a time, waiting
 * busy_ms on locks. On failure *db may still be set (for sqlite3_errmsg);
 * the caller closes it. */
int once__db_open(const char *path, int busy_ms, sqlite3 **db);

/* Bind ?1, ?2, ... from types, one character each: 's' a NUL-terminated
 * string (NULL binds NULL), 't' a string and its size_t length, 'i' an
 * int64_t, 'd' a double, '-' leaves that parameter unbound (takes no
 * argument). Text is copied: the arguments need not outlive the call. */
int once__db_vbind(sqlite3_stmt *st, const char *types, va_list ap);

/* Prepare sql and bind its arguments; *st is NULL on failure. */
int once__db_prepare(sqlite3 *db, sqlite3_stmt **st, const char *sql, const char *types, ...);

int once__db_vprepare(sqlite3 *db, sqlite3_stmt **st, const char *sql, const char *types,
                      va_list ap);

/* Prepare, bind, step once and finalize: SQLITE_OK when the step gave a
 * row or finished. */
int once__db_run(sqlite3 *db, const char *sql, const char *types, ...);
int once__db_vrun(sqlite3 *db, const char *sql, const char *types, va_list ap);

/* BEGIN IMMEDIATE; and its end: COMMIT when ok (SQLITE_OK or the commit's
 * error), else ROLLBACK (and ok's own value is returned). */
int once__db_begin(sqlite3 *db);
int once__db_end(sqlite3 *db, int ok);

/* 1 for the codes that mean another connection holds the lock
 * (SQLITE_BUSY, SQLITE_LOCKED and their extended forms). */
int once__db_is_busy(int sqlite_rc);

/* A failed SQLite call as a once error: busy -> ONCE_EBUSY, out of memory
 * -> ONCE_ENOMEM, anything else -> ONCE_ESTORE. */
int once__db_err(int sqlite_rc);

void once__db_sleep_ms(int ms);

/* Call attempt(ctx) until it returns a code that is not busy or wait_ms
 * has passed, 5 ms apart; its last code. For what SQLite does not wait for
 * through the busy handler (switching a new file to WAL). */
int once__db_while_busy(int (*attempt)(void *ctx), void *ctx, int64_t wait_ms);

#endif /* ONCE_DB_DB_H */
