/*
 * test_http_pool.c -- the worker pool that runs JSON-RPC calls
 * (src/http/pool.c): every accepted job runs exactly once whether it is
 * handed straight to an idle worker or waits in the queue, a full queue
 * refuses with ONCE_EBUSY while every worker is busy, and freeing the pool
 * runs every job it accepted before the workers stop.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "http/pool.h"
#include "timeout.h"

#define SUBMITTERS 4
#define PER_SUBMITTER 2000

static int ran[SUBMITTERS * PER_SUBMITTER]; /* times each job ran */
static int total;                            /* jobs run, all kinds */

static void count_job(void *arg)
{
    __atomic_fetch_add((int *)arg, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&total, 1, __ATOMIC_RELEASE);
}

typedef struct submitter {
    once_pool *p;
    int first;
    int busy; /* submissions refused with ONCE_EBUSY, then retried */
} submitter;

static void *submit_many(void *arg)
{
    submitter *s = arg;
    for (int i = 0; i < PER_SUBMITTER; i++) {
        int rc;
        while ((rc = once__http_pool_submit(s->p, count_job, &ran[s->first + i])) == ONCE_EBUSY)
            s->busy++;
        if (rc != ONCE_OK)
            return (void *)1;
    }
    return NULL;
}

static int total_is(void *want)
{
    return __atomic_load_n(&total, __ATOMIC_ACQUIRE) == *(int *)want;
}

/* Four threads submit at once to three workers: each job runs once. */
static void every_job_runs_once(void **state)
{
    (void)state;
    once_pool *p;
    memset(ran, 0, sizeof ran);
    total = 0;
    assert_int_equal(once__http_pool_new(3, 64, &p), ONCE_OK);

    pthread_t th[SUBMITTERS];
    submitter s[SUBMITTERS];
    for (int i = 0; i < SUBMITTERS; i++) {
        s[i] = (submitter){p, i * PER_SUBMITTER, 0};
        assert_int_equal(pthread_create(&th[i], NULL, submit_many, &s[i]), 0);
    }
    for (int i = 0; i < SUBMITTERS; i++) {
        void *res;
        assert_int_equal(pthread_join(th[i], &res), 0);
        assert_null(res);
    }
    int want = SUBMITTERS * PER_SUBMITTER;
    assert_true(tt_wait_until(total_is, &want, 30000));
    once__http_pool_free(p);
    for (int i = 0; i < want; i++)
        assert_int_equal(ran[i], 1);
    assert_int_equal(total, want);
}

/* A job that holds its worker until the gate opens. */
typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int started, open;
} gate;

static void gated_job(void *arg)
{
    gate *g = arg;
    pthread_mutex_lock(&g->mu);
    g->started++;
    pthread_cond_broadcast(&g->cv);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

static int gate_started(void *arg)
{
    gate *g = arg;
    pthread_mutex_lock(&g->mu);
    int n = g->started;
    pthread_mutex_unlock(&g->mu);
    return n == 2;
}

/* Two workers, both held by gated jobs; a queue of two takes two more, the
 * next is refused with ONCE_EBUSY and never runs; freeing the pool after the
 * gate opens runs the two queued ones. */
static void full_queue_refuses_and_free_drains(void **state)
{
    (void)state;
    once_pool *p;
    gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    int queued[3] = {0, 0, 0};
    assert_int_equal(once__http_pool_new(2, 2, &p), ONCE_OK);

    assert_int_equal(once__http_pool_submit(p, gated_job, &g), ONCE_OK);
    assert_int_equal(once__http_pool_submit(p, gated_job, &g), ONCE_OK);
    /* Both workers are inside a gated job: none is idle from here on. */
    assert_true(tt_wait_until(gate_started, &g, 30000));

    total = 0;
    assert_int_equal(once__http_pool_submit(p, count_job, &queued[0]), ONCE_OK);
    assert_int_equal(once__http_pool_submit(p, count_job, &queued[1]), ONCE_OK);
    assert_int_equal(once__http_pool_submit(p, count_job, &queued[2]), ONCE_EBUSY);
    assert_int_equal(__atomic_load_n(&total, __ATOMIC_ACQUIRE), 0);

    pthread_mutex_lock(&g.mu);
    g.open = 1;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    once__http_pool_free(p);
    assert_int_equal(queued[0], 1);
    assert_int_equal(queued[1], 1);
    assert_int_equal(queued[2], 0);
    assert_int_equal(total, 2);
}

/* A pool whose workers never got a job stops when freed; so does one freed
 * with jobs still queued behind a busy worker (they run first). */
static void free_stops_idle_and_runs_queued(void **state)
{
    (void)state;
    once_pool *p;
    assert_int_equal(once__http_pool_new(4, 8, &p), ONCE_OK);
    once__http_pool_free(p);

    gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    int queued[5] = {0};
    assert_int_equal(once__http_pool_new(1, 8, &p), ONCE_OK);
    assert_int_equal(once__http_pool_submit(p, gated_job, &g), ONCE_OK);
    total = 0;
    for (int i = 0; i < 5; i++)
        assert_int_equal(once__http_pool_submit(p, count_job, &queued[i]), ONCE_OK);
    pthread_mutex_lock(&g.mu);
    g.open = 1;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    once__http_pool_free(p);
    for (int i = 0; i < 5; i++)
        assert_int_equal(queued[i], 1);
    assert_int_equal(total, 5);
}

static void rejects_zero_sizes(void **state)
{
    (void)state;
    once_pool *p = (once_pool *)&p;
    assert_int_equal(once__http_pool_new(0, 8, &p), ONCE_EINVAL);
    assert_null(p);
    assert_int_equal(once__http_pool_new(2, 0, &p), ONCE_EINVAL);
    assert_null(p);
    once__http_pool_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_job_runs_once),
        cmocka_unit_test(full_queue_refuses_and_free_drains),
        cmocka_unit_test(free_stops_idle_and_runs_queued),
        cmocka_unit_test(rejects_zero_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
