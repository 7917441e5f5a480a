/*
 * batch.h -- group commit, the one engine of every backend that commits in
 * groups: SQLite (one writer connection, sqlite_commit.c), PostgreSQL and
 * Redis (a pipelined round trip per batch on a pooled connection,
 * pg_batch.c, redis_batch.c). Not API.
 *
 * A writer submits its operation. If fewer than max_leaders batches are in
 * flight it leads at once, on its own thread: it runs its op with whatever
 * is queued (up to max_ops) through the backend's run callback, so a lone
 * writer never hands off to another thread. Otherwise it queues and sleeps
 * on its op's semaphore, which is posted exactly once: with the op's
 * outcome, or with the lead of the next batch. A leader whose commit
 * returned hands its lead to the queue's head under the lock (unlinked, so
 * no other leader can take it into a batch and post it twice), and only
 * then posts its batch's outcomes, outside the lock: the next commit does
 * not wait for this one's wake-ups, and a batch of N is N wake-ups, not N
 * wake-ups that then queue on one mutex.
 *
 * An asynchronous operation (a new task's held create, engine/held.c) has
 * nobody waiting: it is queued, never led on its caller's thread (which may
 * be one that must not wait, an HTTP thread), and told its outcome by its
 * landed callback on the thread that committed it. When the lead would go
 * to an asynchronous op, it goes to a driver, a thread of the batch's own
 * (the first started by the first such op, more up to max_leaders while
 * every driver is busy), which keeps leading while the queue's head is
 * asynchronous. So under a steady load of held creates one thread commits
 * batch after batch with no hand-off per write.
 *
 * The backend's part is run: every operation it is given gets op->rc, an
 * operation is told ONCE_OK only after the store acknowledged it durably
 * (the COMMIT returned, with its fsync; the reply was read), and outcomes
 * are per operation: one operation's conflict or failure must not become
 * another's (SQLite re-runs a failed batch op by op in savepoints,
 * PostgreSQL and Redis send the ops that did not land alone).
 */
#ifndef ONCE_STORE_BATCH_H
#define ONCE_STORE_BATCH_H

#include <pthread.h>
#include <semaphore.h>
#include <stddef.h>

#include "store/pool.h"

#define ONCE__BATCH_MAX 256   /* operations per batch at the most (SQLite's) */
#define ONCE__BATCH_NET 64    /* per batch of a networked backend: one pipeline */
#define ONCE__BATCH_DRIVERS 16 /* driver threads at the most (batch.c) */

/* One operation. The submitter owns it; arg is the backend's description of
 * the write. next is guarded by the batch's mu while queued; rc and done
 * are written by the leader that ran it before wake is posted, and read by
 * the submitter after. */
typedef struct once__batch_op {
    struct once__batch_op *next; /* queue link */
    void *arg;
    int rc;
    int done;  /* rc is final; a post with done 0 hands the lead */
    sem_t wake; /* a waiting op's one post */
    /* An asynchronous op's completion (once__batch_submit_async): called
     * once with rc final, by the thread that ran its batch, without mu. */
    void (*landed)(struct once__batch_op *op);
} once__batch_op;

/* What a pooled run hands the backend: ops[0..n), n >= 1. */
typedef struct once__batch_slice {
    once__batch_op **ops;
    size_t n;
} once__batch_slice;

/* The backend's part: run ops[0..n) as one batch and set every op's rc
 * (owner: what init was given). */
typedef void (*once__batch_run_fn)(void *owner, once__batch_op **ops, size_t n);

/* run, owner, pool, pool_fn, max_leaders and max_ops are set by init and
 * read-only after; mu guards the queue, leaders and the drivers' state.
 * leaders counts the leads held: by a thread that runs batches, or handed
 * to a driver not yet awake (drive). */
typedef struct once__batch {
    once__batch_run_fn run;
    void *owner;
    once__pool *pool;     /* the pooled run's (once__batch_init), else NULL */
    once__pool_fn pool_fn;
    int max_leaders; /* batches in flight at once */
    size_t max_ops;  /* operations per batch, 1..ONCE__BATCH_MAX */

    pthread_mutex_t mu;
    once__batch_op *head, **tail;
    int leaders;
    pthread_cond_t dcv;
    pthread_t driver[ONCE__BATCH_DRIVERS];
    int ndrivers, idle, drive, stopping;
} once__batch;

/* A batch whose run is fn on one connection of pool (PostgreSQL, Redis):
 * fn gets a once__batch_slice; without a connection every op gets the
 * pool's error. */
void once__batch_init(once__batch *b, once__pool *pool, once__pool_fn run, int max_leaders,
                      size_t max_ops);
/* A batch whose run is run(owner, ...) (SQLite: one writer connection,
 * max_leaders 1). */
void once__batch_init_run(once__batch *b, once__batch_run_fn run, void *owner, int max_leaders,
                          size_t max_ops);
/* No operation may be queued (every submitter has returned, every
 * asynchronous op landed). Stops the drivers. */
void once__batch_destroy(once__batch *b);
/*
 * The connections of a backend that batches (PostgreSQL, Redis): pool for
 * the slots, bpool for the batches (one connection per batch in flight, so
 * a batch never waits behind the reads for one), and the batch b over
 * bpool. once__batch_conns_init sets up all three from one description;
 * once__batch_conns_destroy undoes it, and is a no-op when init never ran
 * (pool still zeroed), so a backend's release may always call it.
 */
typedef struct once__batch_conns_cfg {
    const once__pool_ops *ops;
    void *owner; /* the backend handle, passed to ops and run */
    once_store *base;
    size_t pool_max;
    int leaders; /* batches in flight; 0: bpool opens none, every write runs alone */
    once__pool_fn run;
    int wait_ms, backoff_min_ms, backoff_max_ms; /* for both pools */
    /* What open does on its first connection before the pool keeps it
     * (schema migrations, script loading), given setup_arg (the open's
     * once__schema): ONCE_OK or an error in the store's errmsg. */
    int (*setup)(void *owner, once__pool_item *first, void *setup_arg);
    void *setup_arg;
} once__batch_conns_cfg;

void once__batch_conns_init(once__pool *pool, once__pool *bpool, once__batch *b,
                            const once__batch_conns_cfg *cfg);
void once__batch_conns_destroy(once__pool *pool, once__pool *bpool, once__batch *b);
/* The start of an open: once__batch_conns_init, then one connection (why
 * it failed in errbuf), cfg->setup on it, and the pool keeps it. A
 * connection whose setup failed is closed. */
int once__batch_conns_start(once__pool *pool, once__pool *bpool, once__batch *b,
                            const once__batch_conns_cfg *cfg, char *errbuf, size_t errlen);

/* Run op (op->arg set by the caller) in a batch, leading one or waiting for
 * one, and return op->rc; ONCE_ENOMEM if its semaphore could not be made
 * (nothing ran). */
int once__batch_submit(once__batch *b, once__batch_op *op);

/* Queue op (op->arg and op->landed set by the caller) and return at once:
 * ONCE_OK, and op->landed(op) is called exactly once with op->rc final, on
 * the thread that ran its batch (a driver, or a waiting submitter that
 * led, perhaps this thread in a later submit), never inside this call;
 * or ONCE_ENOMEM (no driver could be started) and nothing was queued. landed must not wait for the store: the thread that
 * calls it may be the one the next batch waits for. */
int once__batch_submit_async(once__batch *b, once__batch_op *op);

/* How many operations wait for a leader (tests use it to know that a batch
 * has formed). */
size_t once__batch_queued(once__batch *b);

/* Give every one of ops[0..n) the same outcome (a batch that failed as a
 * whole). */
void once__batch_set_all(once__batch_op **ops, size_t n, int rc);

#endif
