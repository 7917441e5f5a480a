/*
 * pool.c -- see pool.h. The waits use CLOCK_MONOTONIC so a clock jump (the
 * demo's, or NTP's) never stretches or cuts them.
 *
 * The line: a caller that finds no idle connection and no room to open one
 * queues a waiter of its own (on its stack, with its own condition) and
 * sleeps. A release hands the connection to the head waiter directly, so a
 * caller arriving meanwhile cannot take it first; a freed slot (a broken
 * connection closed, a stale one dropped) wakes the head waiter to open one
 * itself. While anybody waits, a newcomer queues behind them even if a
 * connection is idle or a slot free: those are the head's. A failed
 * connect wakes every waiter, to find the backoff and fail at once.
 */
#include "store/pool.h"

#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "store/pool_stats.h"
#include "store/store_int.h"

void once__pool_init(once__pool *p, const once__pool_ops *ops, void *owner, once_store *base,
                     size_t max, int wait_ms, int backoff_min_ms, int backoff_max_ms)
{
    p->ops = ops;
    p->owner = owner;
    p->base = base;
    p->max = max;
    p->wait_ms = wait_ms;
    p->backoff_min_ms = backoff_min_ms;
    p->backoff_max_ms = backoff_max_ms;
    p->idle = NULL;
    p->line = NULL;
    p->line_tail = &p->line;
    p->nopen = 0;
    p->down_until = 0;
    p->backoff_ms = 0;
    p->waits = 0;
    p->wait_ns = 0;
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_init(&p->cattr);
    pthread_condattr_setclock(&p->cattr, CLOCK_MONOTONIC);
}

void once__pool_destroy(once__pool *p)
{
    while (p->idle) {
        once__pool_item *it = p->idle;
        p->idle = it->next;
        p->ops->close(it);
    }
    pthread_condattr_destroy(&p->cattr);
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

/* Monotonic nanoseconds: the waits are summed finer than once_monotonic_ms. */
static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

struct once__pool_waiter {
    once__pool_waiter *next;
    pthread_cond_t cv;
    once__pool_item *it; /* handed over by a release: now the waiter's */
    int turn;            /* taken off the line to look again (a slot freed, a connect failed) */
};

/* Under mu: take the head waiter off the line (NULL if nobody waits). */
static once__pool_waiter *line_pop(once__pool *p)
{
    once__pool_waiter *w = p->line;

    if (w) {
        p->line = w->next;
        if (!p->line)
            p->line_tail = &p->line;
        w->next = NULL;
    }
    return w;
}

/* Under mu: take w off the line, wherever it stands. */
static void line_remove(once__pool *p, once__pool_waiter *w)
{
    once__pool_waiter **at = &p->line;

    while (*at && *at != w)
        at = &(*at)->next;
    if (!*at)
        return;
    *at = w->next;
    if (p->line_tail == &w->next)
        p->line_tail = at;
    w->next = NULL;
}

/* Under mu: a slot to open a connection freed up: the head waiter opens it. */
static void wake_head(once__pool *p)
{
    once__pool_waiter *w = line_pop(p);

    if (w) {
        w->turn = 1;
        pthread_cond_signal(&w->cv);
    }
}

int once__pool_acquire(once__pool *p, once__pool_item **out)
{
    struct timespec until;
    once__pool_waiter w;
    once__pool_item *it;
    int rc, first = 0; /* 1: taken off the line, so what is free is ours */

    *out = NULL;
    deadline_ts(&until, p->wait_ms);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        int mine = first || !p->line;
        first = 0;
        if (mine && p->idle) {
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
            first = 1; /* its slot is ours to reopen */
            continue;
        }
        if (mine && p->nopen < p->max) {
            int64_t now = once_monotonic_ms();
            if (now < p->down_until) {
                int wait = (int)(p->down_until - now);
                wake_head(p); /* the next in line fails fast too */
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
                wake_head(p); /* which finds the backoff, fails, and wakes the next */
                pthread_mutex_unlock(&p->mu);
                return rc;
            }
            p->backoff_ms = 0;
            p->down_until = 0;
            pthread_mutex_unlock(&p->mu);
            *out = it;
            return ONCE_OK;
        }
        /* In line, behind whoever came first. */
        int64_t queued = now_ns();
        w.next = NULL;
        w.it = NULL;
        w.turn = 0;
        pthread_cond_init(&w.cv, &p->cattr);
        *p->line_tail = &w;
        p->line_tail = &w.next;
        rc = 0;
        while (!w.it && !w.turn && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&w.cv, &p->mu, &until);
        if (!w.it && !w.turn)
            line_remove(p, &w); /* timed out, still in line */
        pthread_cond_destroy(&w.cv);
        p->waits++;
        p->wait_ns += (uint64_t)(now_ns() - queued);
        if (w.it) {
            pthread_mutex_unlock(&p->mu);
            if (!p->ops->stale(w.it)) {
                *out = w.it;
                return ONCE_OK;
            }
            p->ops->close(w.it);
            pthread_mutex_lock(&p->mu);
            p->nopen--;
            first = 1; /* its slot is ours to reopen */
            continue;
        }
        if (w.turn) {
            first = 1;
            continue;
        }
        pthread_mutex_unlock(&p->mu);
        once__store_seterr(p->base, "%s: all %zu connections busy for %d ms", p->ops->name,
                           p->max, p->wait_ms);
        return ONCE_EBUSY;
    }
}

void once__pool_release(once__pool *p, once__pool_item *it, int broken)
{
    once__pool_waiter *w;

    if (broken)
        p->ops->close(it);
    pthread_mutex_lock(&p->mu);
    if (broken) {
        p->nopen--;
        wake_head(p); /* to open one in its place */
    } else if ((w = line_pop(p)) != NULL) {
        w->it = it; /* straight to the longest waiter */
        pthread_cond_signal(&w->cv);
    } else {
        it->next = p->idle;
        p->idle = it;
    }
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

size_t once__pool_waiting(once__pool *p)
{
    size_t n = 0;

    pthread_mutex_lock(&p->mu);
    for (once__pool_waiter *w = p->line; w; w = w->next)
        n++;
    pthread_mutex_unlock(&p->mu);
    return n;
}

void once__pool_stats_read(once__pool *p, once__pool_stats *out)
{
    size_t idle = 0, waiting = 0;

    pthread_mutex_lock(&p->mu);
    for (once__pool_item *it = p->idle; it; it = it->next)
        idle++;
    for (once__pool_waiter *w = p->line; w; w = w->next)
        waiting++;
    out->max = p->max;
    out->open = p->nopen;
    out->in_use = p->nopen - idle;
    out->waiting = waiting;
    out->waits = p->waits;
    out->wait_ns = p->wait_ns;
    pthread_mutex_unlock(&p->mu);
}

int once__store_pool_stats(once_store *s, once__pool_stats *calls, once__pool_stats *batch)
{
#ifdef ONCE_HAVE_PG
    if (s != NULL && s->m == &once__store_pg) {
        once__pg_pool_stats(s, calls, batch);
        return 1;
    }
#endif
#ifdef ONCE_HAVE_REDIS
    if (s != NULL && s->m == &once__store_redis) {
        once__rd_pool_stats(s, calls, batch);
        return 1;
    }
#endif
    (void)s;
    (void)calls;
    (void)batch;
    return 0;
}
