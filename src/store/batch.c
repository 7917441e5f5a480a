/*
 * batch.c -- see batch.h. Leaders are bounded so that a burst of writers
 * does not take every pooled connection at once; while max_leaders batches
 * are in flight, newcomers queue and the next leader takes them all, which
 * is where the sharing comes from.
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
    pthread_mutex_init(&b->mu, NULL);
}

void once__batch_destroy(once__batch *b)
{
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
    once__pool_destroy(pool);
    once__pool_destroy(bpool);
    once__batch_destroy(b);
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
    rc = cfg->setup(cfg->owner, first);
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

int once__batch_submit(once__batch *b, once__batch_op *op)
{
    op->next = NULL;
    op->rc = 0;
    op->taken = op->done = 0;
    pthread_cond_init(&op->cv, NULL);
    pthread_mutex_lock(&b->mu);
    *b->tail = op;
    b->tail = &op->next;
    while (!op->done) {
        if (!op->taken && b->leaders < b->max_leaders) {
            once__batch_op *ops[ONCE__BATCH_MAX];
            size_t n, i;

            n = take(b, ops);
            b->leaders++;
            pthread_mutex_unlock(&b->mu);
            run(b, ops, n);
            pthread_mutex_lock(&b->mu);
            b->leaders--;
            for (i = 0; i < n; i++) {
                ops[i]->done = 1;
                pthread_cond_signal(&ops[i]->cv);
            }
            if (b->head) /* its submitter leads the next batch */
                pthread_cond_signal(&b->head->cv);
            continue;
        }
        pthread_cond_wait(&op->cv, &b->mu);
    }
    pthread_mutex_unlock(&b->mu);
    pthread_cond_destroy(&op->cv);
    return op->rc;
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
