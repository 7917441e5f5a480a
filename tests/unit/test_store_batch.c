/*
 * test_store_batch.c -- the group-commit engine every batching backend
 * shares (src/store/batch.c), over a run callback of the test's own: many
 * threads submit waiting and asynchronous ops at once, with one, two and
 * three leaders and batches of one or many. Every op must run exactly once
 * and get its own outcome (a waiting op from submit, an asynchronous one
 * from landed, exactly once, never inside the call that queued it), and no
 * more batches may run at once than the batch allows leaders. The SQLite
 * suite runs the engine with one leader against a real file, storepg with
 * PostgreSQL and Redis; this one runs everywhere, under TSan too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "store/batch.h"
#include "timeout.h"

#define THREADS 8
#define PER_THREAD 150
#define NOPS (THREADS * PER_THREAD)

typedef struct op_rec {
    once__batch_op op;
    int id;
    int async;
    int runs;    /* __atomic: times a batch ran it */
    int landed;  /* __atomic: times landed was called */
    int got;     /* the outcome its submitter or landed saw */
    int inside;  /* landed ran inside its own submit_async call */
} op_rec;

typedef struct run_state {
    int running;      /* __atomic: batches running now */
    int max_running;  /* __atomic: the most at once */
    int batches;      /* __atomic */
    size_t max_ops;
    int too_big;      /* __atomic: a batch past max_ops */
} run_state;

static op_rec recs[NOPS];
static run_state rs;
static once__batch b;
static int landed_total; /* __atomic */

/* The outcome a backend would give op id: its own, whatever its batch. */
static int outcome_of(int id)
{
    return id % 5 == 0 ? ONCE_ECONFLICT : ONCE_OK;
}

static void fake_run(void *owner, once__batch_op **ops, size_t n)
{
    run_state *r = owner;
    int now = __atomic_add_fetch(&r->running, 1, __ATOMIC_SEQ_CST);
    int seen = __atomic_load_n(&r->max_running, __ATOMIC_SEQ_CST);
    while (now > seen &&
           !__atomic_compare_exchange_n(&r->max_running, &seen, now, 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST))
        ;
    if (n > r->max_ops)
        __atomic_store_n(&r->too_big, 1, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&r->batches, 1, __ATOMIC_SEQ_CST);
    /* A commit takes a while: lets others queue (not relied on). */
    struct timespec ts = {0, 50 * 1000};
    nanosleep(&ts, NULL);
    for (size_t i = 0; i < n; i++) {
        op_rec *o = ops[i]->arg;
        __atomic_add_fetch(&o->runs, 1, __ATOMIC_SEQ_CST);
        ops[i]->rc = outcome_of(o->id);
    }
    __atomic_sub_fetch(&r->running, 1, __ATOMIC_SEQ_CST);
}

/* The op whose submit_async this thread is inside, if any. */
static __thread const op_rec *submitting;

static void on_landed(once__batch_op *op)
{
    op_rec *o = op->arg;
    o->got = op->rc;
    o->inside = submitting == o;
    __atomic_add_fetch(&o->landed, 1, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&landed_total, 1, __ATOMIC_SEQ_CST);
}

static void *submitter(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (int i = 0; i < PER_THREAD; i++) {
        op_rec *o = &recs[t * PER_THREAD + i];
        o->op.arg = o;
        if (o->async) {
            o->op.landed = on_landed;
            submitting = o;
            if (once__batch_submit_async(&b, &o->op) != ONCE_OK)
                o->got = -1;
            submitting = NULL;
        } else {
            o->got = once__batch_submit(&b, &o->op);
        }
    }
    return NULL;
}

/* async_every: every n-th op is asynchronous (0: none; 1: all). */
static void run_round(int leaders, size_t max_ops, int async_every)
{
    memset(recs, 0, sizeof recs);
    memset(&rs, 0, sizeof rs);
    rs.max_ops = max_ops;
    landed_total = 0;
    int nasync = 0;
    for (int i = 0; i < NOPS; i++) {
        recs[i].id = i;
        recs[i].async = async_every && i % async_every == 0;
        nasync += recs[i].async;
    }
    once__batch_init_run(&b, fake_run, &rs, leaders, max_ops);
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        assert_int_equal(pthread_create(&th[t], NULL, submitter, (void *)(intptr_t)t), 0);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    int64_t until = once_monotonic_ms() + tt_ms(20000);
    while (__atomic_load_n(&landed_total, __ATOMIC_SEQ_CST) < nasync &&
           once_monotonic_ms() < until) {
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(__atomic_load_n(&landed_total, __ATOMIC_SEQ_CST), nasync);
    assert_int_equal(once__batch_queued(&b), 0);
    once__batch_destroy(&b);

    for (int i = 0; i < NOPS; i++) {
        const op_rec *o = &recs[i];
        if (o->runs != 1)
            fail_msg("op %d ran %d times (leaders %d, max_ops %zu)", i, o->runs, leaders, max_ops);
        assert_int_equal(o->got, outcome_of(i));
        if (o->async) {
            assert_int_equal(o->landed, 1);
            assert_false(o->inside);   /* never run inside the call that queued it */
        } else {
            assert_int_equal(o->landed, 0);
        }
    }
    assert_true(rs.max_running <= leaders);
    assert_int_equal(rs.too_big, 0);
    assert_true(rs.batches >= 1 && rs.batches <= NOPS);
}

static void test_one_leader(void **state)
{
    (void)state;
    run_round(1, ONCE__BATCH_MAX, 0);
    run_round(1, ONCE__BATCH_MAX, 3);
    run_round(1, 1, 3);
}

static void test_several_leaders(void **state)
{
    (void)state;
    run_round(2, ONCE__BATCH_NET, 0);
    run_round(2, ONCE__BATCH_NET, 3);
    run_round(3, 4, 2);
}

static void test_async_only(void **state)
{
    (void)state;
    run_round(1, ONCE__BATCH_MAX, 1);
    run_round(3, ONCE__BATCH_NET, 1);
}

/* A handle that never takes an asynchronous op starts no thread, and a
 * lone waiting op runs on its own submitter's thread. */
static pthread_t ran_on;
static void where_run(void *owner, once__batch_op **ops, size_t n)
{
    (void)owner;
    ran_on = pthread_self();
    for (size_t i = 0; i < n; i++)
        ops[i]->rc = ONCE_OK;
}

static void test_lone_writer_leads_itself(void **state)
{
    (void)state;
    once__batch_op op;
    memset(&op, 0, sizeof op);
    once__batch_init_run(&b, where_run, NULL, 2, ONCE__BATCH_NET);
    assert_int_equal(once__batch_submit(&b, &op), ONCE_OK);
    assert_true(pthread_equal(ran_on, pthread_self()));
    assert_int_equal(b.ndrivers, 0);
    once__batch_destroy(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_leader),
        cmocka_unit_test(test_several_leaders),
        cmocka_unit_test(test_async_only),
        cmocka_unit_test(test_lone_writer_leads_itself),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
