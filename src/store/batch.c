/*
 * batch.c -- see batch.h.
 *
 * Invariants, all under mu:
 *   - an op in the queue is claimed by nobody: any leader may take it.
 *     The op a leader hands its lead to is unlinked first, so it is in no
 *     batch but the one it then leads;
 *   - leaders < max_leaders only while the queue is empty or a new leader
 *     is about to take it: a leader drops its lead (leaders--) only when it
 *     finds the queue empty after its batch, and hands it on otherwise;
 *   - a lead handed to the drivers (drive) is taken by one of them: at
 *     least one driver exists once an asynchronous op was queued, and a
 *     driver looks at drive before it sleeps.
 * A waiting op may be touched past the lock only until it is posted (its
 * submitter may return at once); an asynchronous one only until landed.
 */
#include "store/batch.h"

#include <errno.h>

#include "once/store.h"

static void batch_setup(once__batch *b, int max_leaders, size_t max_ops)
{
    b->max_leaders = max_leaders > 0 ? max_leaders : 1;
    b->max_ops = max_ops < 1 ? 1 : max_ops > ONCE__BATCH_MAX ? ONCE__BATCH_MAX : max_ops;
    b->head = NULL;
    b->tail = &b->head;
    b->leaders = 0;
    b->ndrivers = b->idle = b->drive = b->stopping = 0;
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->dcv, NULL);
}

/* The pooled run: one batch on one connection, not retried (the backend's
 * fn decides what may be sent again). */
static void pooled_run(void *owner, once__batch_op **ops, size_t n)
{
    once__batch *b = owner;
    once__batch_slice slice = {ops, n};
    int rc = once__pool_run(b->pool, 1, b->pool_fn, &slice);

    if (rc != ONCE_OK)
        once__batch_set_all(ops, n, rc);
}

void once__batch_init_run(once__batch *b, once__batch_run_fn run, void *owner, int max_leaders,
                          size_t max_ops)
{
    b->run = run;
    b->owner = owner;
    b->pool = NULL;
    b->pool_fn = NULL;
    batch_setup(b, max_leaders, max_ops);
}

void once__batch_init(once__batch *b, once__pool *pool, once__pool_fn run, int max_leaders,
                      size_t max_ops)
{
    once__batch_init_run(b, pooled_run, b, max_leaders, max_ops);
    b->pool = pool;
    b->pool_fn = run;
}

void once__batch_destroy(once__batch *b)
{
    pthread_mutex_lock(&b->mu);
    b->stopping = 1;
    pthread_cond_broadcast(&b->dcv);
    int n = b->ndrivers;
    pthread_mutex_unlock(&b->mu);
    for (int i = 0; i < n; i++)
        pthread_join(b->driver[i], NULL);
    pthread_cond_destroy(&b->dcv);
    pthread_mutex_destroy(&b->mu);
}

void once__batch_conns_init(once__pool *pool, once__pool *bpool, once__batch *b,
                            const once__batch_conns_cfg *cfg)
{
    once__pool_init(pool, cfg->ops, cfg->owner, cfg->base, cfg->pool_max, cfg->wait_ms,
                    cfg->backoff_min_ms, cfg->backoff_max_ms);
    once__pool_init(bpool, cfg->ops, cfg->owner, cfg->base, (size_t)cfg->leaders, cfg->wait_ms,
                    cfg->backoff_min_ms, cfg->backoff_max_ms);
    once__batch_init(b, bpool, cfg->run, cfg->leaders, ONCE__BATCH_NET);
}

void once__batch_conns_destroy(once__pool *pool, once__pool *bpool, once__batch *b)
{
    if (!pool->ops)
        return;
    once__batch_destroy(b);   /* its drivers first: they run on bpool */
    once__pool_destroy(pool);
    once__pool_destroy(bpool);
}

int once__batch_conns_start(once__pool *pool, once__pool *bpool, once__batch *b,
                            const once__batch_conns_cfg *cfg, char *errbuf, size_t errlen)
{
    once__pool_item *first = NULL;
    int rc;

    once__batch_conns_init(pool, bpool, b, cfg);
    rc = cfg->ops->connect(cfg->owner, &first, errbuf, errlen);
    if (rc != ONCE_OK)
        return rc;
    rc = cfg->setup(cfg->owner, first, cfg->setup_arg);
    if (rc != ONCE_OK) {
        cfg->ops->close(first);
        return rc;
    }
    once__pool_adopt(pool, first);
    return ONCE_OK;
}

static void enqueue(once__batch *b, once__batch_op *op)
{
    op->next = NULL;
    *b->tail = op;
    b->tail = &op->next;
}

/* Under mu: unlink up to max queued ops from the head into ops[]. */
static size_t take(once__batch *b, once__batch_op **ops, size_t max)
{
    size_t n = 0;

    while (b->head && n < max) {
        once__batch_op *op = b->head;
        b->head = op->next;
        op->next = NULL;
        ops[n++] = op;
    }
    if (!b->head)
        b->tail = &b->head;
    return n;
}

/* Under mu: hand a lead to the drivers, starting one more when none is
 * idle and there is room (best effort: a busy driver takes it after its
 * batch). */
static void hand_to_driver(once__batch *b);

/* Tell every op of a finished batch but the caller's own (mine, or NULL)
 * its outcome: a post for a waiting op, landed() for an asynchronous one. */
static void finish(once__batch_op **ops, size_t n, const once__batch_op *mine)
{
    for (size_t i = 0; i < n; i++) {
        once__batch_op *op = ops[i];
        if (op == mine)
            continue;
        if (op->landed) {
            op->landed(op);
        } else {
            op->done = 1;
            sem_post(&op->wake);
        }
    }
}

/* Lead, holding one of the leads: run mine (a waiting caller's op, or NULL
 * for a driver) with what is queued, hand the lead on, tell the batch its
 * outcome; again while the lead stays here (a driver, while the queue's
 * head is asynchronous). The lead goes, under mu, to the waiting op at the
 * head of the queue (unlinked, posted to lead), to a driver when the head
 * is asynchronous, or back (leaders--) when the queue is empty. It passes
 * before this batch is told its outcome, so the next commit does not wait
 * for these wake-ups, and a waiting caller that led returns once its own
 * batch is committed. */
static void lead(once__batch *b, once__batch_op *mine)
{
    for (;;) {
        once__batch_op *ops[ONCE__BATCH_MAX];
        size_t n = 0;
        if (mine)
            ops[n++] = mine;
        pthread_mutex_lock(&b->mu);
        n += take(b, ops + n, b->max_ops - n);
        pthread_mutex_unlock(&b->mu);

        if (n)
            b->run(b->owner, ops, n);

        pthread_mutex_lock(&b->mu);
        once__batch_op *next = b->head;
        once__batch_op *wake = NULL;
        int again = 0;
        if (!next) {
            b->leaders--;
        } else if (!next->landed) {
            take(b, &wake, 1);
        } else if (!mine) {
            again = 1;
        } else {
            hand_to_driver(b);
        }
        pthread_mutex_unlock(&b->mu);
        if (wake)
            sem_post(&wake->wake);   /* "you lead": done stays 0 */
        finish(ops, n, mine);
        if (!again)
            return;
    }
}

/* Sleep until op is posted (sem_wait is interruptible by signals). */
static void wait_post(once__batch_op *op)
{
    while (sem_wait(&op->wake) != 0 && errno == EINTR)
        ;
}

int once__batch_submit(once__batch *b, once__batch_op *op)
{
    op->rc = ONCE_ESTORE;
    op->done = 0;
    op->landed = NULL;
    op->next = NULL;
    if (sem_init(&op->wake, 0, 0) != 0)
        return ONCE_ENOMEM;
    pthread_mutex_lock(&b->mu);
    if (b->leaders < b->max_leaders) {
        b->leaders++;   /* lead at once, on this thread */
        pthread_mutex_unlock(&b->mu);
    } else {
        enqueue(b, op);
        pthread_mutex_unlock(&b->mu);
        wait_post(op);   /* done, or the lead is ours (op unlinked) */
    }
    if (!op->done)
        lead(b, op);
    sem_destroy(&op->wake);
    return op->rc;
}

static void *driver_main(void *arg)
{
    once__batch *b = arg;

    pthread_mutex_lock(&b->mu);
    for (;;) {
        while (!b->drive && !b->stopping) {
            b->idle++;
            pthread_cond_wait(&b->dcv, &b->mu);
            b->idle--;
        }
        if (!b->drive)
            break;
        b->drive--;
        pthread_mutex_unlock(&b->mu);
        lead(b, NULL);
        pthread_mutex_lock(&b->mu);
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

/* Under mu: start a driver; 0 if it could not be. */
static int start_driver(once__batch *b)
{
    if (pthread_create(&b->driver[b->ndrivers], NULL, driver_main, b) != 0)
        return 0;
    b->ndrivers++;
    return 1;
}

static void hand_to_driver(once__batch *b)
{
    b->drive++;
    if (b->idle == 0 && b->ndrivers < b->max_leaders && b->ndrivers < ONCE__BATCH_DRIVERS)
        (void)start_driver(b);
    pthread_cond_signal(&b->dcv);
}

int once__batch_submit_async(once__batch *b, once__batch_op *op)
{
    op->rc = ONCE_ESTORE;
    op->done = 0;
    pthread_mutex_lock(&b->mu);
    /* The first driver, started by the first asynchronous op: a handle
     * that never takes one (the tools, the tests of other slots) has no
     * extra thread; and with one, a lead handed to the drivers is always
     * taken. */
    if (b->ndrivers == 0 && !start_driver(b)) {
        pthread_mutex_unlock(&b->mu);
        return ONCE_ENOMEM;
    }
    enqueue(b, op);
    if (b->leaders < b->max_leaders) {
        b->leaders++;   /* nobody leads it: a driver does, never this thread */
        hand_to_driver(b);
    }
    pthread_mutex_unlock(&b->mu);
    return ONCE_OK;   /* a leader in flight, or the next, takes it */
}

void once__batch_set_all(once__batch_op **ops, size_t n, int rc)
{
    for (size_t i = 0; i < n; i++)
        ops[i]->rc = rc;
}

size_t once__batch_queued(once__batch *b)
{
    size_t n = 0;

    pthread_mutex_lock(&b->mu);
    for (const once__batch_op *op = b->head; op; op = op->next)
        n++;
    pthread_mutex_unlock(&b->mu);
    return n;
}
