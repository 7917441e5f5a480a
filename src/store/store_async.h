/*
 * store_async.h -- a create that does not hold its caller's thread.
 *
 * The engine stores a new task that finished in its first turn with one
 * create (engine/held.c). With a backend that commits in groups, a caller
 * that waits for its group's commit is a thread put to sleep and woken
 * again per write; a create started here instead tells its outcome to a
 * callback, on the thread that committed it. The SQLite backend has it,
 * and PostgreSQL and Redis with group commit on (batch > 0: store/batch.h);
 * the contract is the create slot's (once/store.h), without the winner and
 * tombstone outputs. A networked backend's create that its batch did not
 * write is ONCE_ECONFLICT (nothing stored; it never runs alone there).
 */
#ifndef ONCE_STORE_ASYNC_H
#define ONCE_STORE_ASYNC_H

#include "once/store.h"

/* 1 if s takes once__store_create_start. */
int once__store_async(const once_store *s);
/* 1 if s takes once__store_create_start of rec (PostgreSQL: not a record
 * with delivery rows). */
int once__store_async_rec(const once_store *s, const once_record *rec);
/* 1 if s's reads are local (no network round trip): a thread that must
 * not wait for I/O may still read it (SQLite; memory runs every call
 * inline anyway). */
int once__store_local(const once_store *s);

/* Validate as once_store_create does and queue the create. ONCE_OK: done(arg,
 * rc) is called exactly once with the create's result (ONCE_OK, ONCE_EEXISTS,
 * ONCE_ETOMBSTONE, ONCE_ESTORE, ...), on the thread that commits it, never
 * this one (which may then be a thread that must not wait for a commit);
 * rec and ev[0..nev) must stay valid and unchanged until then.
 * Any other return: nothing was queued and done is never called
 * (ONCE_EUNSUPPORTED when !once__store_async(s)). done must not block on
 * the store: it may run on the thread that commits every write. */
int once__store_create_start(once_store *s, const once_record *rec, const once_event *ev,
                             size_t nev, void (*done)(void *arg, int rc), void *arg);

/* The backends' (sqlite.c, pg/pg_write.c, redis/redis_write.c); *_async:
 * group commit is on. */
int once__sqlite_create_start(once_store *s, const once_record *rec, const once_event *ev,
                              size_t nev, void (*done)(void *arg, int rc), void *arg);
int once__pg_async(const once_store *s);
int once__pg_create_start(once_store *s, const once_record *rec, const once_event *ev, size_t nev,
                          void (*done)(void *arg, int rc), void *arg);
int once__rd_async(const once_store *s);
int once__rd_create_start(once_store *s, const once_record *rec, const once_event *ev, size_t nev,
                          void (*done)(void *arg, int rc), void *arg);

#endif
