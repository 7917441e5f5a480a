/*
 * test_engine_watch.c -- watching a task without a thread (follow.c,
 * once__engine_watch_add): this process's writes to the key call the watch
 * back, writes to other keys and other principals' tasks do not, a removed
 * watch is never called again, and a stopping engine refuses new watches.
 * What the SSE hub relies on to wake a stream at once.
 */
#include "engine/engine_int.h"
#include "engine_fixture.h"

typedef struct counter {
    int n;   /* __atomic */
} counter;

static void count(void *arg)
{
    counter *c = arg;
    __atomic_add_fetch(&c->n, 1, __ATOMIC_RELAXED);
}

static int counted(const counter *c)
{
    return __atomic_load_n(&c->n, __ATOMIC_RELAXED);
}

static int called(void *arg)
{
    return counted(arg) > 0;
}

/* The engine has finished a turn: its last write, and that write's
 * notification of local followers, are over. */
static int one_turn_finished(void *arg)
{
    once__engine_stats st;
    once__engine_get_stats(arg, &st);
    return st.turns_completed >= 1;
}

static void test_local_writes_call_the_watch(void **state)
{
    (void)state;
    fx_env env;
    /* Without the shared poller (feed.c): it tells a key it sees for the
     * first time as moved, once (a read for nothing, by design), which
     * would call the watches added below for a task that did not move. */
    assert_int_equal(setenv("ONCE_TEST_FEED", "off", 1), 0);
    fx_env_open(&env, NULL, 0);
    assert_int_equal(unsetenv("ONCE_TEST_FEED"), 0);
    char id[ONCE_ID_MAX + 1], gone[ONCE_ID_MAX + 1], other[ONCE_ID_MAX + 1];
    fx_start(env.e, "m-1", "block", id, sizeof id);   /* both work until the gate opens */
    fx_start(env.e, "m-2", "block", gone, sizeof gone);
    fx_wait_blocked(&env.fx, 2);
    fx_start(env.e, "m-3", "sleep:1", other, sizeof other);
    fx_wait_state(env.store, "alice", other, ONCE_STATE_COMPLETED);
    /* Stored is not yet notified: the turn counts as finished only after
     * its last write notified the followers, so no write of it is left to
     * reach the watches added below. */
    assert_true(tt_wait_until(one_turn_finished, env.e, 5000));

    counter mine = {0}, removed = {0}, bob = {0}, elsewhere = {0};
    once__engine_watch *w = NULL, *wr = NULL, *wb = NULL, *wo = NULL;
    assert_int_equal(once__engine_watch_add(env.e, "alice", id, count, &mine, &w), ONCE_OK);
    assert_int_equal(once__engine_watch_add(env.e, "alice", gone, count, &removed, &wr),
                     ONCE_OK);
    assert_int_equal(once__engine_watch_add(env.e, "bob", id, count, &bob, &wb), ONCE_OK);
    assert_int_equal(once__engine_watch_add(env.e, "alice", other, count, &elsewhere, &wo),
                     ONCE_OK);
    assert_int_equal(counted(&mine), 0);
    once__engine_watch_remove(env.e, wr);   /* removed before its task moves */

    /* The turns' writes (local ones) call the watch of their key only. */
    fx_open_gate(&env.fx);
    fx_wait_state(env.store, "alice", id, ONCE_STATE_COMPLETED);
    fx_wait_state(env.store, "alice", gone, ONCE_STATE_COMPLETED);
    assert_true(tt_wait_until(called, &mine, 5000));
    assert_int_equal(counted(&removed), 0);
    assert_int_equal(counted(&bob), 0);
    assert_int_equal(counted(&elsewhere), 0);

    once__engine_watch_remove(env.e, w);
    once__engine_watch_remove(env.e, wb);
    once__engine_watch_remove(env.e, wo);
    once__engine_watch_remove(env.e, NULL);
    fx_env_close(&env);
}

static void test_refusals(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    counter c = {0};
    once__engine_watch *w = (once__engine_watch *)&c;
    assert_int_equal(once__engine_watch_add(env.e, NULL, "t-1", count, &c, &w), ONCE_EINVAL);
    assert_null(w);
    assert_int_equal(once__engine_watch_add(env.e, "alice", NULL, count, &c, &w), ONCE_EINVAL);
    assert_int_equal(once__engine_watch_add(env.e, "alice", "t-1", NULL, &c, &w), ONCE_EINVAL);
    char long_id[ONCE_ID_MAX + 2];
    memset(long_id, 'a', sizeof long_id - 1);
    long_id[sizeof long_id - 1] = '\0';
    assert_int_equal(once__engine_watch_add(env.e, "alice", long_id, count, &c, &w), ONCE_EINVAL);
    once__engine_stop(env.e);
    assert_int_equal(once__engine_watch_add(env.e, "alice", "t-1", count, &c, &w), ONCE_ECLOSED);
    assert_null(w);
    fx_env_close(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_local_writes_call_the_watch),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
