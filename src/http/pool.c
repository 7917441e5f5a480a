/*
 * pool.c -- worker threads for JSON-RPC calls.
 *
 * One mutex guards the queue, the idle stack and the closing flag. A job is
 * handed straight to an idle worker when there is one: the submitter pops the
 * worker from the idle stack, puts the job in the worker's own slot and posts
 * the worker's own semaphore after unlocking. So each hand-off wakes exactly
 * one thread, once, and the woken thread does not queue for the mutex its
 * waker still holds (with one condition variable, a worker signalled under the
 * lock woke only to sleep again on the mutex: two switches per call instead of
 * one, and the commonest wait on a busy server). The idle stack is LIFO, so
 * the worker that ran last, with its stack and caches warm, runs next, and
 * workers beyond what the load needs stay asleep.
 *
 * Jobs wait in the ring only while every worker is busy; a worker that
 * finishes takes the oldest queued job before it goes idle. Shutdown drains: a
 * job accepted by once__http_pool_submit always runs, because its HTTP
 * connection is suspended and only the job resumes it.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>

#include "http/pool.h"
#include "once/once.h"

struct job {
    once_pool_fn fn;
    void *arg;
};

typedef struct pool_worker {
    once_pool *pool;
    pthread_t thread;
    sem_t wake;     /* posted once per hand-off, or to stop */
    struct job job; /* written by the submitter before the post; fn NULL = stop */
} pool_worker;

struct once_pool {
    pthread_mutex_t mu;
    struct job *ring;           /* [cap], guarded by mu */
    size_t cap, head, count;    /* guarded by mu */
    pool_worker **idle;         /* [nthreads] stack of sleeping workers, guarded by mu */
    unsigned nidle;             /* guarded by mu */
    int closing;                /* guarded by mu */
    pool_worker *workers;       /* [nthreads], set at creation */
    unsigned nthreads;          /* threads started */
};

/* Take the next job for w: the oldest queued one, else sleep on the idle
 * stack until a submitter hands one over. A job with fn NULL means stop. */
static struct job next_job(pool_worker *w)
{
    once_pool *p = w->pool;
    struct job j = {NULL, NULL};

    pthread_mutex_lock(&p->mu);
    if (p->count > 0) {
        j = p->ring[p->head];
        p->head = (p->head + 1) % p->cap;
        p->count--;
        pthread_mutex_unlock(&p->mu);
        return j;
    }
    if (p->closing) { /* drained: nothing will be handed over any more */
        pthread_mutex_unlock(&p->mu);
        return j;
    }
    p->idle[p->nidle++] = w;
    pthread_mutex_unlock(&p->mu);
    while (sem_wait(&w->wake) != 0 && errno == EINTR)
        ;
    return w->job; /* written before the post that woke us */
}

static void *worker(void *arg)
{
    pool_worker *w = arg;
    for (;;) {
        struct job j = next_job(w);
        if (j.fn == NULL)
            return NULL;
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
    p->idle = once_calloc(nthreads, sizeof *p->idle);
    p->workers = once_calloc(nthreads, sizeof *p->workers);
    if (p->ring == NULL || p->idle == NULL || p->workers == NULL) {
        once_free(p->ring);
        once_free(p->idle);
        once_free(p->workers);
        once_free(p);
        return ONCE_ENOMEM;
    }
    p->cap = queue_cap;
    pthread_mutex_init(&p->mu, NULL);
    for (unsigned i = 0; i < nthreads; i++) {
        pool_worker *w = &p->workers[i];
        w->pool = p;
        if (sem_init(&w->wake, 0, 0) != 0) {
            once__http_pool_free(p);
            return ONCE_ERROR;
        }
        if (pthread_create(&w->thread, NULL, worker, w) != 0) {
            sem_destroy(&w->wake);
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
    pool_worker *w = NULL;
    int rc = ONCE_OK;

    pthread_mutex_lock(&p->mu);
    if (p->closing) {
        rc = ONCE_ECLOSED;
    } else if (p->nidle > 0) {
        w = p->idle[--p->nidle];
        w->job = (struct job){fn, arg};
    } else if (p->count == p->cap) {
        rc = ONCE_EBUSY;
    } else {
        p->ring[(p->head + p->count) % p->cap] = (struct job){fn, arg};
        p->count++;
    }
    pthread_mutex_unlock(&p->mu);
    if (w != NULL)
        sem_post(&w->wake); /* w is off the stack: only this post wakes it */
    return rc;
}

void once__http_pool_free(once_pool *p)
{
    if (p == NULL)
        return;
    /* Closing: workers still running drain the ring and then stop on their
     * own; the sleeping ones are told to stop. A worker that goes idle after
     * this sees closing first, so none is left asleep. */
    pthread_mutex_lock(&p->mu);
    p->closing = 1;
    while (p->nidle > 0) {
        pool_worker *w = p->idle[--p->nidle];
        w->job = (struct job){NULL, NULL};
        sem_post(&w->wake);
    }
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->nthreads; i++) {
        pthread_join(p->workers[i].thread, NULL);
        sem_destroy(&p->workers[i].wake);
    }
    pthread_mutex_destroy(&p->mu);
    once_free(p->ring);
    once_free(p->idle);
    once_free(p->workers);
    once_free(p);
}
