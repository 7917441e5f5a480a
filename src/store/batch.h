/*
 * batch.h -- group commit for the networked backends (PostgreSQL, Redis):
 * concurrent writes share one round trip (not API).
 *
 * A writer submits its operation and waits. The first waiter that finds a
 * free leader place (fewer than max_leaders batches in flight) becomes a
 * leader: it takes every queued operation (up to max_ops), hands them to the
 * backend's run callback, which sends them together and sets each one's own
 * outcome, then wakes the others. No thread of its own: a batch is always
 * run by one of its callers, so a handle with no writers costs nothing.
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

#define ONCE__BATCH_MAX 64 /* operations per batch at the most */

/* One operation. The submitter owns it; arg is the backend's description of
 * the write. taken and done are guarded by the batch's mu; rc is written by
 * the leader before done is set, read by the submitter after. */
typedef struct once__batch_op {
    struct once__batch_op *next; /* queue link */
    void *arg;
    int rc;
    int taken; /* a leader has it */
    int done;  /* rc is final */
} once__batch_op;

/* Runs ops[0..n) (n >= 1) on owner's store and sets each ops[i]->rc. */
typedef void (*once__batch_run_fn)(void *owner, once__batch_op **ops, size_t n);

/* run, owner, max_leaders and max_ops are set by init and read-only after;
 * mu guards the queue, leaders and every queued op's flags. */
typedef struct once__batch {
    once__batch_run_fn run;
    void *owner;
    int max_leaders; /* batches in flight at once */
    size_t max_ops;  /* operations per batch, 1..ONCE__BATCH_MAX */

    pthread_mutex_t mu;
    pthread_cond_t cv; /* broadcast when a batch ends */
    once__batch_op *head, **tail;
    int leaders;
} once__batch;

void once__batch_init(once__batch *b, once__batch_run_fn run, void *owner, int max_leaders,
                      size_t max_ops);
/* No operation may be queued (every submitter has returned). */
void once__batch_destroy(once__batch *b);
/* Queue op (op->arg set by the caller), wait until its batch has run, and
 * return op->rc. */
int once__batch_submit(once__batch *b, once__batch_op *op);

#endif
