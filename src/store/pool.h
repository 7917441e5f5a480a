/*
 * pool.h -- the connection pool the networked backends (PostgreSQL, Redis)
 * share, and the retry loop every slot of theirs runs in (not API).
 *
 * A caller takes an idle connection (dropping any the backend finds stale)
 * or opens a new one, up to max; past that it waits up to wait_ms, in line:
 * a released connection goes to the longest waiter, never to a caller that
 * came later, so under a load of more callers than connections no caller
 * waits for more than its turn. A failed connect starts a backoff (min_ms
 * doubling to max_ms) during which callers get ONCE_ESTORE at once instead
 * of piling onto a server that is down.
 * Connections embed once__pool_item as their first member.
 */
#ifndef ONCE_STORE_POOL_H
#define ONCE_STORE_POOL_H

#include <pthread.h>
#include <stdint.h>

#include "once/store.h"

/* The flags describe the current call on the connection: the one thread
 * that holds it sets them, once__pool_run resets them before each attempt
 * and reads them after. */
typedef struct once__pool_item {
    struct once__pool_item *next; /* idle list link; guarded by once__pool.mu */
    int broken;                   /* I/O failed or the protocol is lost: close, do not pool */
    int unsure;                   /* a write was in flight when it failed */
    int again;                    /* the server undid the call (deadlock, serialization
                                     failure): running it again is safe */
} once__pool_item;

typedef struct once__pool_ops {
    const char *name; /* "postgres", "redis": in error messages */
    /* Open a connection for owner; ONCE_OK or an error with the store's
     * errmsg set, and its text in errbuf too when errbuf is not NULL (the
     * open's first connection: once__batch_conns_start). */
    int (*connect)(void *owner, once__pool_item **out, char *errbuf, size_t errlen);
    /* 1 if an idle connection can no longer be used. */
    int (*stale)(once__pool_item *it);
    void (*close)(once__pool_item *it);
    /* Before a connection goes back: finish what a call left open (an open
     * transaction) or set it->broken if it cannot be reused. */
    void (*tidy)(once__pool_item *it);
} once__pool_ops;

/* A caller waiting in line (pool.c). */
typedef struct once__pool_waiter once__pool_waiter;

/* ops, owner, base, max and the timings are set at init and read-only
 * afterwards; mu guards idle, the line, nopen, down_until, backoff_ms and
 * the wait totals. */
typedef struct once__pool {
    const once__pool_ops *ops;
    void *owner;
    once_store *base;
    size_t max;
    int wait_ms, backoff_min_ms, backoff_max_ms;

    pthread_mutex_t mu;
    pthread_condattr_t cattr; /* CLOCK_MONOTONIC, for the waiters' conditions */
    once__pool_item *idle;
    once__pool_waiter *line, **line_tail; /* callers waiting, oldest first */
    size_t nopen;       /* connections open or being opened */
    int64_t down_until; /* monotonic ms: no new connection attempt before */
    int backoff_ms;     /* last connect backoff (0 after a success) */
    uint64_t waits;     /* callers that joined the line, in all */
    uint64_t wait_ns;   /* the time they spent in it, in all */
} once__pool;

void once__pool_init(once__pool *p, const once__pool_ops *ops, void *owner, once_store *base,
                     size_t max, int wait_ms, int backoff_min_ms, int backoff_max_ms);
/* Close every idle connection and release the pool. */
void once__pool_destroy(once__pool *p);
/* Hand the pool a connection opened outside it (the one open used). */
void once__pool_adopt(once__pool *p, once__pool_item *it);
/* ONCE_OK, ONCE_ESTORE (server unreachable or in backoff), ONCE_EBUSY (every
 * connection busy for wait_ms). */
int once__pool_acquire(once__pool *p, once__pool_item **out);
/* Give a connection back; broken: close it instead of keeping it. */
void once__pool_release(once__pool *p, once__pool_item *it, int broken);
/* How many callers wait in line (tests use it to know a caller waits). */
size_t once__pool_waiting(once__pool *p);
/* The pool's numbers now (store/pool_stats.h). */
struct once__pool_stats;
void once__pool_stats_read(once__pool *p, struct once__pool_stats *out);

/* One slot's work on one connection; it must (re)initialise its outputs,
 * since it may run again on a fresh connection. */
typedef int (*once__pool_fn)(void *owner, once__pool_item *it, void *arg);
/* Acquire, run fn, tidy and release; run it again on a fresh connection,
 * at most attempts times in all, when it failed with ONCE_ESTORE and
 * nothing can have been written (the connection broke with no write in
 * flight, or the server undid the call: then after a pause of 1-8 ms). */
int once__pool_run(once__pool *p, int attempts, once__pool_fn fn, void *arg);

/* Define `int NAME(STORE *s, FN fn, void *arg)`: once__pool_run over
 * s->pool for a backend whose slot functions take its own types, FN being
 * int (*)(STORE *, CONN *, void *) with CONN embedding once__pool_item
 * first. */
#define ONCE__POOL_RUN_DEFINE(NAME, STORE, CONN, FN, ATTEMPTS)                                     \
    typedef struct NAME##_call {                                                                   \
        FN fn;                                                                                     \
        void *arg;                                                                                 \
    } NAME##_call;                                                                                 \
    static int NAME##_tramp(void *owner, once__pool_item *it, void *arg)                           \
    {                                                                                              \
        NAME##_call *k = arg;                                                                      \
        return k->fn((STORE *)owner, (CONN *)it, k->arg);                                          \
    }                                                                                              \
    int NAME(STORE *s, FN fn, void *arg)                                                           \
    {                                                                                              \
        NAME##_call k = {fn, arg};                                                                 \
        return once__pool_run(&s->pool, ATTEMPTS, NAME##_tramp, &k);                               \
    }

#endif
