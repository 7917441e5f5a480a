/*
 * test_engine_follow.c -- following a task's events (src/engine/follow.c):
 * the events after a generation, the task's head, and the wait that a local
 * write ends at once, that sees another engine's writes on a shared store by
 * polling, and that engine shutdown ends.
 */
#include "engine_fixture.h"

static int64_t elapsed_since(int64_t t0)
{
    return once_monotonic_ms() - t0;
}

/* Register a task with text and return its id (res cleared). */
static void start(once_engine *e, const char *mid, const char *text, char *id, size_t idlen)
{
    once_send_res res;
    json_t *m = fx_msg(mid, text, NULL, NULL);
    assert_int_equal(fx_send(e, "alice", m, 0, 1, &res), ONCE_OK);
    snprintf(id, idlen, "%s", res.task_id);
    fx_res_clear(&res);
    json_decref(m);
}

static void test_events_and_head(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    char id[ONCE_ID_MAX + 1];
    start(env.e, "m-1", "hello", id, sizeof id);
    fx_wait_state(env.store, "alice", id, ONCE_STATE_COMPLETED);

    int64_t gen = 0;
    once_state st = ONCE_STATE_UNKNOWN;
    assert_int_equal(once_engine_task_head(env.e, "alice", id, &gen, &st), ONCE_OK);
    assert_int_equal(st, ONCE_STATE_COMPLETED);
    assert_true(gen >= 3);

    once_event_list l;
    assert_int_equal(once_engine_events_after(env.e, "alice", id, 0, 0, &l), ONCE_OK);
    assert_int_equal((int64_t)l.n, gen);
    for (size_t i = 0; i < l.n; i++)
        assert_int_equal(l.v[i].generation, (int64_t)i + 1);
    assert_non_null(strstr(l.v[0].payload, "{\"task\":"));
    once_event_list_clear(&l);
    /* After a generation, at most max. */
    assert_int_equal(once_engine_events_after(env.e, "alice", id, 1, 1, &l), ONCE_OK);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.v[0].generation, 2);
    once_event_list_clear(&l);
    assert_int_equal(once_engine_events_after(env.e, "alice", id, gen, 0, &l), ONCE_OK);
    assert_int_equal(l.n, 0);
    once_event_list_clear(&l);

    /* Another principal sees nothing; unknown and malformed IDs neither. */
    assert_int_equal(once_engine_events_after(env.e, "bob", id, 0, 0, &l), ONCE_OK);
    assert_int_equal(l.n, 0);
    once_event_list_clear(&l);
    assert_int_equal(once_engine_task_head(env.e, "bob", id, &gen, &st), ONCE_ENOTFOUND);
    assert_int_equal(once_engine_task_head(env.e, "alice", "no such/id", &gen, &st),
                     ONCE_ENOTFOUND);
    assert_int_equal(once_engine_events_after(env.e, "alice", "no such/id", 0, 0, &l), ONCE_OK);
    assert_int_equal(l.n, 0);
    once_event_list_clear(&l);
    assert_int_equal(once_engine_events_after(env.e, NULL, id, 0, 0, &l), ONCE_EINVAL);

    /* A direct Message is not a task, for the head as for GetTask. */
    char mid[ONCE_ID_MAX + 1];
    start(env.e, "m-2", "reply", mid, sizeof mid);
    fx_wait_state(env.store, "alice", mid, ONCE_STATE_COMPLETED);
    assert_int_equal(once_engine_task_head(env.e, "alice", mid, &gen, &st), ONCE_ENOTFOUND);
    fx_env_close(&env);
}

static void test_wait_local_write(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    char id[ONCE_ID_MAX + 1];
    start(env.e, "m-1", "sleep:300", id, sizeof id);
    fx_wait_state(env.store, "alice", id, ONCE_STATE_WORKING);
    int64_t gen;
    once_state st;
    assert_int_equal(once_engine_task_head(env.e, "alice", id, &gen, &st), ONCE_OK);

    /* Already past: at once, even with no time to wait. */
    assert_int_equal(once_engine_wait_generation(env.e, "alice", id, gen - 1, 0), ONCE_OK);
    /* Nothing new and no time: a timeout, at once. */
    assert_int_equal(once_engine_wait_generation(env.e, "alice", id, gen, 0), ONCE_ETIMEDOUT);
    /* The completion (a local write) ends the wait. */
    int64_t t0 = once_monotonic_ms();
    assert_int_equal(once_engine_wait_generation(env.e, "alice", id, gen, 5000), ONCE_OK);
    assert_true(elapsed_since(t0) < 2000);
    once_event_list l;
    assert_int_equal(once_engine_events_after(env.e, "alice", id, gen, 0, &l), ONCE_OK);
    assert_true(l.n >= 1);
    once_event_list_clear(&l);

    /* A task that does not move: the wait lasts its timeout. */
    fx_wait_state(env.store, "alice", id, ONCE_STATE_COMPLETED);
    assert_int_equal(once_engine_task_head(env.e, "alice", id, &gen, &st), ONCE_OK);
    t0 = once_monotonic_ms();
    assert_int_equal(once_engine_wait_generation(env.e, "alice", id, gen, 150), ONCE_ETIMEDOUT);
    int64_t took = elapsed_since(t0);
    assert_true(took >= 140 && took < 2000);
    assert_int_equal(once_engine_wait_generation(env.e, "alice", "t-missing", 0, 60),
                     ONCE_ETIMEDOUT);
    fx_env_close(&env);
}

/* Two engines on one store: B waits for a task A executes. B's waiters get
 * no in-process signal from A's writes; only the polling sees them. */
static void test_wait_other_replica(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    once_engine_config c;
    memset(&c, 0, sizeof c);
    c.store = env.store;
    c.executor = &env.fx.ex;
    c.replica_id = "replica-b";
    once_engine *b = NULL;
    assert_int_equal(once_engine_new(&c, &b, NULL, 0), ONCE_OK);   /* not started: runs nothing */

    char id[ONCE_ID_MAX + 1];
    start(env.e, "m-1", "sleep:200", id, sizeof id);
    int64_t gen = 0;
    once_state st;
    assert_int_equal(once_engine_task_head(b, "alice", id, &gen, &st), ONCE_OK);
    int64_t seen = gen;
    int64_t t0 = once_monotonic_ms();
    while (st != ONCE_STATE_COMPLETED && elapsed_since(t0) < 5000) {
        int rc = once_engine_wait_generation(b, "alice", id, seen, 5000);
        assert_int_equal(rc, ONCE_OK);
        assert_int_equal(once_engine_task_head(b, "alice", id, &gen, &st), ONCE_OK);
        assert_true(gen > seen);
        seen = gen;
    }
    assert_int_equal(st, ONCE_STATE_COMPLETED);
    once_engine_free(b);
    fx_env_close(&env);
}

typedef struct waiter_arg {
    once_engine *e;
    const char *id;
    int rc;
    int64_t took;
} waiter_arg;

static void *waiter(void *p)
{
    waiter_arg *a = p;
    int64_t t0 = once_monotonic_ms();
    a->rc = once_engine_wait_generation(a->e, "alice", a->id, 1000, 20000);
    a->took = elapsed_since(t0);
    return NULL;
}

static void test_wait_ends_at_shutdown(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    char id[ONCE_ID_MAX + 1];
    start(env.e, "m-1", "hello", id, sizeof id);
    fx_wait_state(env.store, "alice", id, ONCE_STATE_COMPLETED);
    fx_wait_done(&env.fx, 1);
    waiter_arg a = {env.e, id, 0, 0};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, waiter, &a), 0);
    usleep(100 * 1000);
    /* Free waits for the follower to leave, which it does promptly. */
    once_engine_free(env.e);
    pthread_join(t, NULL);
    assert_int_equal(a.rc, ONCE_ECLOSED);
    assert_true(a.took < 5000);
    once_store_close(env.store);
    fx_destroy(&env.fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_events_and_head),
        cmocka_unit_test(test_wait_local_write),
        cmocka_unit_test(test_wait_other_replica),
        cmocka_unit_test(test_wait_ends_at_shutdown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
