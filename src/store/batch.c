/*
 * batch.c -- see batch.h. Leaders are bounded so that a burst of writers
 * does not take every pooled connection at once; while max_leaders batches
 * are in flight, newcomers queue and the next leader takes them all, which
 * is where the sharing comes from.
 *
 * Who leads next: when a batch ends, the op at the head of the queue gets
 * the lead if a waiting writer submitted it (its cv is signalled), a driver
 * if it is asynchronous (dcv). A leader of either kind takes whatever is
 * queued, both kinds mixed. A driver that finishes a batch looks at the
 * queue again before it sleeps, and at least one driver exists once an
 * asynchronous op was queued, so an asynchronous head is never left with
 * nobody to lead it: every batch's end signals or is followed by a driver's
 * look. Under a steady load of asynchronous ops the drivers commit batch
 * after batch with no hand-off per write; a second driver starts when one
 * is busy and a leader's place is free, up to max_leaders.
 */
#include "store/batch.h"

#include "once/store.h"

void once__batch_init(once__batch *b, once__pool *pool, once__pool_fn run, int max_leaders,
                      size_t max_ops)
{
    b->pool = pool;
    b->run = run;
    b->max_leaders = max_leaders > 0 ? max_leaders : 1;
    b->max_ops = max_ops < 1 ? 1 : max_ops > ONCE__BATCH_MAX ? ONCE__BATCH_MAX : max_ops;
    b->head = NULL;
    b->tail = &b->head;
    b->leaders = 0;
    b->ndrivers = b->idle = b->stopping = 0;
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->dcv, NULL);
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
    once__batch_init(b, bpool, cfg->run, cfg->leaders, ONCE__BATCH_MAX);
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

/* Under mu: unlink up to max_ops operations from the head into ops[]. */
static size_t take(once__batch *b, once__batch_op **ops)
{
    size_t n = 0;

    while (b->head && n < b->max_ops) {
        once__batch_op *op = b->head;
        b->head = op->next;
        op->next = NULL;
        op->taken = 1;
        ops[n++] = op;
    }
    if (!b->head)
        b->tail = &b->head;
    return n;
}

/* One batch on one connection, not retried: the run callback decides what
 * may be sent again. Without a connection every op gets the pool's error. */
static void run(once__batch *b, once__batch_op **ops, size_t n)
{
    once__batch_slice slice = {ops, n};
    int rc = once__pool_run(b->pool, 1, b->run, &slice);

    if (rc != ONCE_OK)
        once__batch_set_all(ops, n, rc);
}

/* Under mu: give the lead to the queue's head, if any: its waiting
 * submitter, or a driver when it is asynchronous. */
static void pass_lead(once__batch *b)
{
    if (!b->head)
        return;
    if (b->head->landed)
        pthread_cond_signal(&b->dcv);
    else
        pthread_cond_signal(&b->head->cv);
}

/* Under mu, with a leader's place free and the queue not empty: take a
 * batch, run it without mu, pass the lead on and tell the batch's ops their
 * outcome. Returns with mu held. A waiting op is signalled under mu (its
 * submitter may return at once: it is not touched after); an asynchronous
 * one is told after mu is dropped, by landed, and not touched after either. */
static void lead(once__batch *b)
{
    once__batch_op *ops[ONCE__BATCH_MAX], *async[ONCE__BATCH_MAX];
    size_t n, na = 0, i;

    n = take(b, ops);
    b->leaders++;
    pthread_mutex_unlock(&b->mu);
    run(b, ops, n);
    pthread_mutex_lock(&b->mu);
    b->leaders--;
    for (i = 0; i < n; i++) {
        if (ops[i]->landed) {
            async[na++] = ops[i];
        } else {
            ops[i]->done = 1;
            pthread_cond_signal(&ops[i]->cv);
        }
    }
    pass_lead(b);
    if (na == 0)
        return;
    pthread_mutex_unlock(&b->mu);
    for (i = 0; i < na; i++)
        async[i]->landed(async[i]);
    pthread_mutex_lock(&b->mu);
}

int once__batch_submit(once__batch *b, once__batch_op *op)
{
    op->next = NULL;
    op->rc = 0;
    op->taken = op->done = 0;
    op->landed = NULL;
    pthread_cond_init(&op->cv, NULL);
    pthread_mutex_lock(&b->mu);
    *b->tail = op;
    b->tail = &op->next;
    while (!op->done) {
        if (!op->taken && b->leaders < b->max_leaders) {
            lead(b);
            continue;
        }
        pthread_cond_wait(&op->cv, &b->mu);
    }
    pthread_mutex_unlock(&b->mu);
    pthread_cond_destroy(&op->cv);
    return op->rc;
}

static void *driver_main(void *arg)
{
    once__batch *b = arg;

    pthread_mutex_lock(&b->mu);
    for (;;) {
        if (b->head && b->leaders < b->max_leaders) {
            lead(b);
            continue;
        }
        if (b->stopping)
            break;
        b->idle++;
        pthread_cond_wait(&b->dcv, &b->mu);
        b->idle--;
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

int once__batch_submit_async(once__batch *b, once__batch_op *op)
{
    op->next = NULL;
    op->rc = 0;
    op->taken = op->done = 0;
    pthread_mutex_lock(&b->mu);
    /* A driver for it: the first, or one more when every driver is busy
     * and a leader's place is free. Started under mu, so no two callers
     * start the same one; the new driver looks at the queue first thing. */
    if (b->ndrivers == 0 || (b->idle == 0 && b->leaders < b->max_leaders &&
                             b->ndrivers < b->max_leaders && b->ndrivers < ONCE__BATCH_DRIVERS)) {
        if (pthread_create(&b->driver[b->ndrivers], NULL, driver_main, b) == 0)
            b->ndrivers++;
        else if (b->ndrivers == 0) {
            pthread_mutex_unlock(&b->mu);
            return ONCE_ENOMEM;
        }
    }
    *b->tail = op;
    b->tail = &op->next;
    if (b->leaders < b->max_leaders && b->idle > 0)
        pthread_cond_signal(&b->dcv);
    pthread_mutex_unlock(&b->mu);
    return ONCE_OK;
}

void once__batch_set_all(once__batch_op **ops, size_t n, int rc)
{
    size_t i;

    for (i = 0; i < n; i++)
        ops[i]->rc = rc;
}

size_t once__batch_queued(once__batch *b)
{
    once__batch_op *op;
    size_t n = 0;

    pthread_mutex_lock(&b->mu);
    for (op = b->head; op; op = op->next)
        n++;
    pthread_mutex_unlock(&b->mu);
    return n;
}
