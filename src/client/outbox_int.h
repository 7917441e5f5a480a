/*
 * outbox_int.h -- what outbox.c shares with outbox_aux.c: the handle and
 * small SQLite helpers. Not API.
 */
#ifndef ONCE_CLIENT_OUTBOX_INT_H
#define ONCE_CLIENT_OUTBOX_INT_H

#include <sqlite3.h>

#include "client/client_int.h"

/* One connection, used by one thread at a time (the client's). err holds
 * the last failure's text. */
struct once__outbox {
    sqlite3 *db;
    char err[512];
};

/* Record a SQLite failure; ONCE_EBUSY for lock contention, else ONCE_ESTORE. */
int once__ob_fail(once__outbox *o, int src, const char *what);
int once__ob_exec(once__outbox *o, const char *sql);
/* Prepare sql and bind by types ('s' text or NULL, 'i' int64, 'd' double). */
int once__ob_prepare(once__outbox *o, sqlite3_stmt **st, const char *sql, const char *types, ...);
/* Prepare, bind and step to the first row: ONCE_OK with *st on it (the
 * caller finalizes), ONCE_ENOTFOUND when there is none, or the failure;
 * *st is NULL unless ONCE_OK. */
int once__ob_one(once__outbox *o, sqlite3_stmt **st, const char *sql, const char *types, ...);
/* Prepare, bind, step once, finalize. */
int once__ob_run(once__outbox *o, const char *sql, const char *types, ...);
int once__ob_begin(once__outbox *o);
/* COMMIT when rc is ONCE_OK, else ROLLBACK; returns the final rc. */
int once__ob_end(once__outbox *o, int rc);

/* The column list of an intent row, in once__ob_row_view order. */
extern const char once__ob_columns[];
/* Point it at the columns of the current row (valid until the next step). */
void once__ob_row_view(sqlite3_stmt *q, once_intent *it);

#endif /* ONCE_CLIENT_OUTBOX_INT_H */
