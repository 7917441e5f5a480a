/*
 * pool.c -- worker threads for JSON-RPC calls.
 *
 * One mutex guards the ring buffer and the closing flag; workers sleep on
 * `ready` while the ring is empty. Shutdown drains: a job accepted by
 * once__http_pool_submit always runs, because its HTTP connection is suspended
 * and only the job resumes it.
 */
#include <pthread.h>

#include "core/condwait.h"
#include "http/pool.h"
#include "once/once.h"

struct job {
    once_pool_fn fn;
    void *arg;
};

struct once_pool {
    pthread_mutex_t mu;
    pthread_cond_t ready;      /* signalled on submit and on close */
    struct job *ring;          /* [cap], guarded by mu */
    size_t cap, head, count;   /* guarded by mu */
    int closing;               /* guarded by mu */
    pthread_t *threads;        /* set at creation, read at free */
    unsigned nthreads;
};

static void *worker(void *arg)
{
    once_pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (p->count == 0 && !p->closing)
            pthread_cond_wait(&p->ready, &p->mu);
        if (p->count == 0) { /* closing and drained */
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        struct job j = p->ring[p->head];
        p->head = (p->head + 1) % p->cap;
        p->count--;
        pthread_mutex_unlock(&p->mu);
        j.fn(j.arg);
    }
}

int once__http_pool_new(unsigned nthreads, size_t queue_cap, once_pool **out)
{
    *out = NULL;
    if (nthreads == 0 || queue_cap == 0)
        return ONCE_EINVAL;
    once_pool *p = once_calloc(1, sizeof *p);
    if (p == NULL)
        return ONCE_ENOMEM;
    p->ring = once_calloc(queue_cap, sizeof *p->ring);
    p->threads = once_calloc(nthreads, sizeof *p->threads);
    if (p->ring == NULL || p->threads == NULL) {
        once_free(p->ring);
        once_free(p->threads);
        once_free(p);
        return ONCE_ENOMEM;
    }
    p->cap = queue_cap;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->ready, NULL);
    for (unsigned i = 0; i < nthreads; i++) {
        if (pthread_create(&p->threads[i], NULL, worker, p) != 0) {
            p->nthreads = i;
            once__http_pool_free(p);
            return ONCE_ERROR;
        }
        p->nthreads = i + 1;
    }
    *out = p;
    return ONCE_OK;
}

int once__http_pool_submit(once_pool *p, once_pool_fn fn, void *arg)
{
    int rc = ONCE_OK;
    pthread_mutex_lock(&p->mu);
    if (p->closing) {
        rc = ONCE_ECLOSED;
    } else if (p->count == p->cap) {
        rc = ONCE_EBUSY;
    } else {
        p->ring[(p->head + p->count) % p->cap] = (struct job){fn, arg};
        p->count++;
        pthread_cond_signal(&p->ready);
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

void once__http_pool_free(once_pool *p)
{
    if (p == NULL)
        return;
    once__cond_raise(&p->mu, &p->ready, &p->closing);
    for (unsigned i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->ready);
    pthread_mutex_destroy(&p->mu);
    once_free(p->ring);
    once_free(p->threads);
    once_free(p);
}
