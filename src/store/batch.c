/*
 * batch.c -- see batch.h. Leaders are bounded so that a burst of writers
 * does not take every pooled connection at once; while max_leaders batches
 * are in flight, newcomers queue and the next leader takes them all, which
 * is where the sharing comes from.
 */
#include "store/batch.h"

void once__batch_init(once__batch *b, once__batch_run_fn run, void *owner, int max_leaders,
                      size_t max_ops)
{
    b->run = run;
    b->owner = owner;
    b->max_leaders = max_leaders > 0 ? max_leaders : 1;
    b->max_ops = max_ops < 1 ? 1 : max_ops > ONCE__BATCH_MAX ? ONCE__BATCH_MAX : max_ops;
    b->head = NULL;
    b->tail = &b->head;
    b->leaders = 0;
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
}

void once__batch_destroy(once__batch *b)
{
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
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

int once__batch_submit(once__batch *b, once__batch_op *op)
{
    op->next = NULL;
    op->rc = 0;
    op->taken = op->done = 0;
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
            b->run(b->owner, ops, n);
            pthread_mutex_lock(&b->mu);
            for (i = 0; i < n; i++)
                ops[i]->done = 1;
            b->leaders--;
            pthread_cond_broadcast(&b->cv);
            continue;
        }
        pthread_cond_wait(&b->cv, &b->mu);
    }
    pthread_mutex_unlock(&b->mu);
    return op->rc;
}
