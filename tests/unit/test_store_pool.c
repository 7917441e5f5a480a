/*
 * test_store_pool.c -- the connection pool of the networked backends
 * (src/store/pool.c), over fake connections:
 *
 *   line_is_fifo             three callers waiting for the one connection
 *                            get it in the order they came, each from the
 *                            release before, never a later one first; the
 *                            pool's numbers (/metrics) count them in line,
 *                            then as waits that took time
 *   freed_slot_to_the_head   a connection released broken frees its slot:
 *                            the head waiter opens a new one
 *   stale_handoff_reopens    a connection handed over that the backend
 *                            finds stale is closed and its taker opens one
 *   failed_connect_fails_all a connect that fails while callers wait fails
 *                            every one of them at once with the backoff's
 *                            ONCE_ESTORE (none waits out wait_ms)
 *   timeout_leaves_the_line  a waiter past wait_ms gets ONCE_EBUSY and
 *                            leaves the line; the next release pools the
 *                            connection instead of handing it to nobody;
 *                            its wait is counted all the same
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "store/pool.h"
#include "store/pool_stats.h"
#include "timeout.h"

typedef struct fake_conn {
    once__pool_item item; /* first */
    int id;
    int stale;
} fake_conn;

static int g_connects;     /* connections opened (atomic) */
static int g_closes;       /* connections closed (atomic) */
static int g_fail_connect; /* next connects fail (atomic) */
static pthread_mutex_t g_gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_gate_cv = PTHREAD_COND_INITIALIZER;
static int g_gate_closed; /* a connect waits while set (under g_gate_mu) */
static int g_at_gate;     /* connects waiting at the gate */

static int fake_connect(void *owner, once__pool_item **out, char *errbuf, size_t errlen)
{
    (void)owner, (void)errbuf, (void)errlen;
    pthread_mutex_lock(&g_gate_mu);
    g_at_gate++;
    while (g_gate_closed)
        pthread_cond_wait(&g_gate_cv, &g_gate_mu);
    g_at_gate--;
    pthread_mutex_unlock(&g_gate_mu);
    if (__atomic_load_n(&g_fail_connect, __ATOMIC_ACQUIRE))
        return ONCE_ESTORE;
    fake_conn *c = once_calloc(1, sizeof *c);
    if (c == NULL)
        return ONCE_ENOMEM;
    c->id = __atomic_add_fetch(&g_connects, 1, __ATOMIC_ACQ_REL);
    *out = &c->item;
    return ONCE_OK;
}

static int fake_stale(once__pool_item *it)
{
    return ((fake_conn *)it)->stale;
}

static void fake_close(once__pool_item *it)
{
    __atomic_add_fetch(&g_closes, 1, __ATOMIC_ACQ_REL);
    once_free(it);
}

static const once__pool_ops fake_ops = {"fake", fake_connect, fake_stale, fake_close, NULL};

static once__pool g_pool;

static void pool_up(size_t max, int wait_ms)
{
    g_connects = g_closes = g_fail_connect = 0;
    g_gate_closed = g_at_gate = 0;
    once__pool_init(&g_pool, &fake_ops, NULL, NULL, max, wait_ms, 50, 50);
}

static size_t waiting(void)
{
    return once__pool_waiting(&g_pool);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {0, (long)ms * 1000000L};
    nanosleep(&ts, NULL);
}

static int waiting_is(void *want)
{
    return waiting() == *(size_t *)want;
}

static void wait_waiting(size_t n)
{
    assert_true(tt_wait_until(waiting_is, &n, 10000));
}

/* A caller on its own thread: acquire, note the order it got in, and hold
 * the connection until told to release it (broken or not). */
typedef struct caller {
    pthread_t th;
    int rc;
    fake_conn *got;
    int order;   /* 1, 2, ...: when it got its connection (atomic) */
    int release; /* 0 hold, 1 release, 2 release broken (atomic) */
    int done;    /* returned (atomic) */
} caller;

static int g_order;

static void *caller_main(void *arg)
{
    caller *c = arg;
    once__pool_item *it = NULL;
    c->rc = once__pool_acquire(&g_pool, &it);
    if (c->rc == ONCE_OK) {
        c->got = (fake_conn *)it;
        __atomic_store_n(&c->order, __atomic_add_fetch(&g_order, 1, __ATOMIC_ACQ_REL),
                         __ATOMIC_RELEASE);
        int r;
        while ((r = __atomic_load_n(&c->release, __ATOMIC_ACQUIRE)) == 0)
            sleep_ms(1);
        once__pool_release(&g_pool, it, r == 2);
    }
    __atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void caller_start(caller *c)
{
    memset(c, 0, sizeof *c);
    assert_int_equal(pthread_create(&c->th, NULL, caller_main, c), 0);
}

static int has_order(void *arg)
{
    return __atomic_load_n(&((caller *)arg)->order, __ATOMIC_ACQUIRE) != 0;
}

static int is_done(void *arg)
{
    return __atomic_load_n(&((caller *)arg)->done, __ATOMIC_ACQUIRE) != 0;
}

static void caller_let_go(caller *c, int how)
{
    __atomic_store_n(&c->release, how, __ATOMIC_RELEASE);
}

static void line_is_fifo(void **state)
{
    (void)state;
    caller holder, w[3];
    pool_up(1, 60000);
    g_order = 0;
    caller_start(&holder);
    assert_true(tt_wait_until(has_order, &holder, 10000));
    for (int i = 0; i < 3; i++) { /* each in line before the next comes */
        caller_start(&w[i]);
        wait_waiting((size_t)i + 1);
    }
    once__pool_stats ps;
    once__pool_stats_read(&g_pool, &ps);
    assert_int_equal(ps.max, 1);
    assert_int_equal(ps.open, 1);
    assert_int_equal(ps.in_use, 1);
    assert_int_equal(ps.waiting, 3);
    assert_int_equal(ps.waits, 0); /* a wait is counted when it ends */
    caller_let_go(&holder, 1);
    for (int i = 0; i < 3; i++) {
        assert_true(tt_wait_until(has_order, &w[i], 10000));
        assert_int_equal(w[i].order, i + 2); /* the holder was 1 */
        assert_int_equal(w[i].rc, ONCE_OK);
        assert_int_equal(w[i].got->id, 1); /* the one connection, handed on */
        for (int j = i + 1; j < 3; j++)
            assert_int_equal(__atomic_load_n(&w[j].order, __ATOMIC_ACQUIRE), 0);
        caller_let_go(&w[i], 1);
    }
    pthread_join(holder.th, NULL);
    for (int i = 0; i < 3; i++)
        pthread_join(w[i].th, NULL);
    assert_int_equal(g_connects, 1);
    assert_int_equal(waiting(), 0);
    once__pool_stats_read(&g_pool, &ps);
    assert_int_equal(ps.open, 1);
    assert_int_equal(ps.in_use, 0); /* idle again */
    assert_int_equal(ps.waiting, 0);
    assert_int_equal(ps.waits, 3);
    assert_true(ps.wait_ns > 0);
    once__pool_destroy(&g_pool);
    assert_int_equal(g_closes, 1);
}

/* The holder's connection goes back unusable (broken: closed at release;
 * stale: found so by its taker): the waiter opens connection 2. */
static void reopened_for_the_head(int stale)
{
    caller holder, w;
    pool_up(1, 60000);
    g_order = 0;
    caller_start(&holder);
    assert_true(tt_wait_until(has_order, &holder, 10000));
    caller_start(&w);
    wait_waiting(1);
    if (stale)
        holder.got->stale = 1; /* the server dropped it while it was held */
    caller_let_go(&holder, stale ? 1 : 2);
    assert_true(tt_wait_until(has_order, &w, 10000));
    assert_int_equal(w.rc, ONCE_OK);
    assert_int_equal(w.got->id, 2); /* a new connection */
    caller_let_go(&w, 1);
    pthread_join(holder.th, NULL);
    pthread_join(w.th, NULL);
    once__pool_destroy(&g_pool);
    assert_int_equal(g_connects, 2);
    assert_int_equal(g_closes, 2);
}

static void freed_slot_to_the_head(void **state)
{
    (void)state;
    reopened_for_the_head(0);
}

static void stale_handoff_reopens(void **state)
{
    (void)state;
    reopened_for_the_head(1);
}

static void failed_connect_fails_all(void **state)
{
    (void)state;
    caller holder, opener, w[3];
    pool_up(2, 3600 * 1000); /* an hour: a waiter that waited it out would hang the test */
    g_order = 0;
    caller_start(&holder); /* takes connection 1 */
    assert_true(tt_wait_until(has_order, &holder, 10000));
    pthread_mutex_lock(&g_gate_mu);
    g_gate_closed = 1;
    pthread_mutex_unlock(&g_gate_mu);
    caller_start(&opener); /* opens the second slot, held at the gate */
    for (;;) {
        pthread_mutex_lock(&g_gate_mu);
        int at = g_at_gate;
        pthread_mutex_unlock(&g_gate_mu);
        if (at == 1)
            break;
        sleep_ms(1);
    }
    for (int i = 0; i < 3; i++) {
        caller_start(&w[i]);
        wait_waiting((size_t)i + 1);
    }
    __atomic_store_n(&g_fail_connect, 1, __ATOMIC_RELEASE);
    pthread_mutex_lock(&g_gate_mu);
    g_gate_closed = 0;
    pthread_cond_broadcast(&g_gate_cv);
    pthread_mutex_unlock(&g_gate_mu);
    assert_true(tt_wait_until(is_done, &opener, 10000));
    assert_int_equal(opener.rc, ONCE_ESTORE);
    for (int i = 0; i < 3; i++) {
        assert_true(tt_wait_until(is_done, &w[i], 10000));
        assert_int_equal(w[i].rc, ONCE_ESTORE); /* the backoff's answer, not EBUSY */
    }
    assert_int_equal(waiting(), 0);
    caller_let_go(&holder, 1);
    pthread_join(holder.th, NULL);
    pthread_join(opener.th, NULL);
    for (int i = 0; i < 3; i++)
        pthread_join(w[i].th, NULL);
    once__pool_destroy(&g_pool);
    assert_int_equal(g_connects, 1);
}

static void timeout_leaves_the_line(void **state)
{
    (void)state;
    caller holder, w;
    pool_up(1, 50);
    g_order = 0;
    caller_start(&holder);
    assert_true(tt_wait_until(has_order, &holder, 10000));
    caller_start(&w);
    assert_true(tt_wait_until(is_done, &w, 10000));
    assert_int_equal(w.rc, ONCE_EBUSY);
    assert_int_equal(waiting(), 0);
    once__pool_stats ps;
    once__pool_stats_read(&g_pool, &ps);
    assert_int_equal(ps.waits, 1);
    assert_true(ps.wait_ns > 0); /* a wait that gave up counts too */
    caller_let_go(&holder, 1);
    pthread_join(holder.th, NULL);
    pthread_join(w.th, NULL);
    /* Pooled, not handed to the waiter that left: the next caller gets it. */
    once__pool_item *it = NULL;
    assert_int_equal(once__pool_acquire(&g_pool, &it), ONCE_OK);
    assert_int_equal(((fake_conn *)it)->id, 1);
    once__pool_release(&g_pool, it, 0);
    once__pool_destroy(&g_pool);
    assert_int_equal(g_connects, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(line_is_fifo),
        cmocka_unit_test(freed_slot_to_the_head),
        cmocka_unit_test(stale_handoff_reopens),
        cmocka_unit_test(failed_connect_fails_all),
        cmocka_unit_test(timeout_leaves_the_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
