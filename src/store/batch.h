/*
 * batch.h -- group commit for the networked backends (PostgreSQL, Redis):
 * concurrent writes share one round trip (not API).
 *
 * A writer submits its operation and waits. The first waiter that finds a
 * free leader place (fewer than max_leaders batches in flight) becomes a
 * leader: it takes every queued operation (up to max_ops), hands them to the
 * backend's run callback on one pooled connection, which sends them together
 * and sets each one's own outcome, then wakes them. A batch of waiting
 * writers is run by one of them, so a handle with no writers costs nothing.
 * An asynchronous operation (a new task's held create, engine/held.c) has
 * nobody waiting: it is run by whichever leader takes it, a waiting writer
 * or a driver thread, and told its outcome by a callback.
 *
 * The contract of run: every operation it was given gets op->rc, and an
 * operation is told ONCE_OK only after the store acknowledged it durably (the
 * batch's COMMIT returned, the reply was read). Outcomes are per operation:
 * one operation's conflict or failure must not become another's.
 */
#ifndef ONCE_STORE_BATCH_H
#define ONCE_STORE_BATCH_H

#include <pthread.h>
#include <stddef.h>

#include "store/pool.h"

#define ONCE__BATCH_MAX 64    /* operations per batch at the most */
#define ONCE__BATCH_DRIVERS 16 /* driver threads at the most (batch.c) */

/* One operation. The submitter owns it; arg is the backend's description of
 * the write. taken and done are guarded by the batch's mu; rc is written by
 * the leader before done is set, read by the submitter after. Its submitter
 * alone waits on cv: a batch that ends wakes its own operations and the one
 * at the head of the queue (the next leader), nobody else. */
typedef struct once__batch_op {
    struct once__batch_op *next; /* queue link */
    void *arg;
    int rc;
    int taken; /* a leader has it */
    int done;  /* rc is final */
    pthread_cond_t cv;
    /* An asynchronous op's completion (once__batch_submit_async): called
     * once with rc final, by the thread that ran its batch, without mu. */
    void (*landed)(struct once__batch_op *op);
} once__batch_op;

/* What a leader hands the backend: ops[0..n), n >= 1. */
typedef struct once__batch_slice {
    once__batch_op **ops;
    size_t n;
} once__batch_slice;

/* pool, run, max_leaders and max_ops are set by init and read-only after;
 * mu guards the queue, leaders, the drivers' state and every queued op's
 * flags. */
typedef struct once__batch {
    once__pool *pool;
    /* Runs a slice (its arg) on one connection of pool and sets every
     * op's rc; returns ONCE_OK (a failure is the ops'). */
    once__pool_fn run;
    int max_leaders; /* batches in flight at once */
    size_t max_ops;  /* operations per batch, 1..ONCE__BATCH_MAX */

    pthread_mutex_t mu;
    once__batch_op *head, **tail;
    int leaders;
    /* Drivers: threads that lead batches with asynchronous ops in them,
     * which have no caller waiting to lead. Started by the first such op,
     * up to max_leaders; they wait on dcv and stop at destroy. */
    pthread_cond_t dcv;
    pthread_t driver[ONCE__BATCH_DRIVERS];
    int ndrivers, idle, stopping;
} once__batch;

void once__batch_init(once__batch *b, once__pool *pool, once__pool_fn run, int max_leaders,
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

/* Queue op (op->arg set by the caller), wait until its batch has run, and
 * return op->rc. */
int once__batch_submit(once__batch *b, once__batch_op *op);

/* Queue op (op->arg and op->landed set by the caller) and return at once:
 * ONCE_OK, and op->landed(op) is called exactly once with op->rc final, on
 * the thread that ran its batch (a driver, or a waiting submitter that
 * led), never this one; or ONCE_ENOMEM (no driver could be started) and
 * nothing was queued. landed must not wait for the store: the thread that
 * calls it may be the one the next batch waits for. */
int once__batch_submit_async(once__batch *b, once__batch_op *op);

/* How many operations wait for a leader (tests use it to know that a batch
 * has formed). */
size_t once__batch_queued(once__batch *b);

/* Give every one of ops[0..n) the same outcome (a batch that failed as a
 * whole). */
void once__batch_set_all(once__batch_op **ops, size_t n, int rc);

#endif
