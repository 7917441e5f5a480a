/*
 * store_async.h -- a create that does not hold its caller's thread.
 *
 * The engine stores a new task that finished in its first turn with one
 * create (engine/held.c). With a backend that commits in groups, a caller
 * that waits for its group's commit is a thread put to sleep and woken
 * again per write; a create started here instead tells its outcome to a
 * callback, on the thread that committed it. Only the SQLite backend has
 * it; the contract is the create slot's (once/store.h), without the winner
 * and tombstone outputs.
 */
#ifndef ONCE_STORE_ASYNC_H
#define ONCE_STORE_ASYNC_H

#include "once/store.h"

/* 1 if s takes once__store_create_start. */
int once__store_async(const once_store *s);

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

/* sqlite.c */
int once__sqlite_create_start(once_store *s, const once_record *rec, const once_event *ev,
                              size_t nev, void (*done)(void *arg, int rc), void *arg);

#endif
