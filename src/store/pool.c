/*
 * pool.c -- see pool.h. The waits use CLOCK_MONOTONIC so a clock jump (the
 * demo's, or NTP's) never stretches or cuts them.
 */
#include "store/pool.h"

#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "store/store_int.h"

void once__pool_init(once__pool *p, const once__pool_ops *ops, void *owner, once_store *base,
                     size_t max, int wait_ms, int backoff_min_ms, int backoff_max_ms)
{
    pthread_condattr_t ca;

    p->ops = ops;
    p->owner = owner;
    p->base = base;
    p->max = max;
    p->wait_ms = wait_ms;
    p->backoff_min_ms = backoff_min_ms;
    p->backoff_max_ms = backoff_max_ms;
    p->idle = NULL;
    p->nopen = 0;
    p->down_until = 0;
    p->backoff_ms = 0;
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cv, &ca);
    pthread_condattr_destroy(&ca);
}

void once__pool_destroy(once__pool *p)
{
    while (p->idle) {
        once__pool_item *it = p->idle;
        p->idle = it->next;
        p->ops->close(it);
    }
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
}

void once__pool_adopt(once__pool *p, once__pool_item *it)
{
    pthread_mutex_lock(&p->mu);
    p->nopen++;
    it->next = p->idle;
    p->idle = it;
    pthread_mutex_unlock(&p->mu);
}

static void deadline_ts(struct timespec *ts, int ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

int once__pool_acquire(once__pool *p, once__pool_item **out)
{
    struct timespec until;
    once__pool_item *it;
    int rc;

    *out = NULL;
    deadline_ts(&until, p->wait_ms);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (p->idle) {
            it = p->idle;
            p->idle = it->next;
            it->next = NULL;
            pthread_mutex_unlock(&p->mu);
            if (!p->ops->stale(it)) {
                *out = it;
                return ONCE_OK;
            }
            p->ops->close(it);
            pthread_mutex_lock(&p->mu);
            p->nopen--;
            continue;
        }
        if (p->nopen < p->max) {
            int64_t now = once_monotonic_ms();
            if (now < p->down_until) {
                int wait = (int)(p->down_until - now);
                pthread_mutex_unlock(&p->mu);
                once__store_seterr(p->base, "%s unreachable (next connection attempt in %d ms)",
                                   p->ops->name, wait);
                return ONCE_ESTORE;
            }
            p->nopen++;
            pthread_mutex_unlock(&p->mu);
            rc = p->ops->connect(p->owner, &it, NULL, 0);
            pthread_mutex_lock(&p->mu);
            if (rc != ONCE_OK) {
                p->nopen--;
                p->backoff_ms = p->backoff_ms ? p->backoff_ms * 2 : p->backoff_min_ms;
                if (p->backoff_ms > p->backoff_max_ms)
                    p->backoff_ms = p->backoff_max_ms;
                p->down_until = once_monotonic_ms() + p->backoff_ms;
                pthread_cond_broadcast(&p->cv);
                pthread_mutex_unlock(&p->mu);
                return rc;
            }
            p->backoff_ms = 0;
            p->down_until = 0;
            pthread_mutex_unlock(&p->mu);
            *out = it;
            return ONCE_OK;
        }
        if (pthread_cond_timedwait(&p->cv, &p->mu, &until) == ETIMEDOUT) {
            pthread_mutex_unlock(&p->mu);
            once__store_seterr(p->base, "%s: all %zu connections busy for %d ms", p->ops->name,
                               p->max, p->wait_ms);
            return ONCE_EBUSY;
        }
    }
}

void once__pool_release(once__pool *p, once__pool_item *it, int broken)
{
    if (broken)
        p->ops->close(it);
    pthread_mutex_lock(&p->mu);
    if (broken) {
        p->nopen--;
    } else {
        it->next = p->idle;
        p->idle = it;
    }
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

int once__pool_run(once__pool *p, int attempts, once__pool_fn fn, void *arg)
{
    int attempt, rc;

    for (attempt = 1;; attempt++) {
        once__pool_item *it;
        int retry, again;

        rc = once__pool_acquire(p, &it);
        if (rc != ONCE_OK)
            return rc;
        it->broken = it->unsure = it->again = 0;
        rc = fn(p->owner, it, arg);
        again = it->again;
        retry = rc == ONCE_ESTORE && ((it->broken && !it->unsure) || again);
        if (p->ops->tidy)
            p->ops->tidy(it);
        once__pool_release(p, it, it->broken);
        if (!retry || attempt >= attempts)
            return rc;
        if (again) { /* let the transaction that won finish first */
            struct timespec ts = {0, (long)(1 + once_monotonic_ms() % 8) * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
}
