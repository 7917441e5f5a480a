/*
 * test_engine_follow.c -- following a task's events (src/engine/follow.c):
 * the events after a generation, the task's head, and the wait that a local
 * write ends at once (also one landing between the wait's first look and its
 * sleep), that sees another engine's writes on a shared store by polling,
 * and that engine shutdown ends.
 */
#include "engine/engine_int.h"
#include "engine_fixture.h"

static int64_t elapsed_since(int64_t t0)
{
    return once_monotonic_ms() - t0;
}

/* 1 if a follower waits on (alice, task_id) in e now. */
static int has_waiter(once__engine *e, const char *task_id)
{
    int found = 0;
    pthread_mutex_lock(&e->mu);
    for (once__waiter *w = e->waiters; w != NULL; w = w->next)
        found |= strcmp(w->principal, "alice") == 0 && strcmp(w->task_id, task_id) == 0;
    pthread_mutex_unlock(&e->mu);
    return found;
}

/* Opens the executor's gate once a follower waits on the task: the write
 * that follows lands while the follower sleeps. */
typedef struct opener_arg {
    fx_env *env;
    const char *id;
    int waited;
} opener_arg;

static int opener_ready(void *p)
{
    opener_arg *a = p;
    return has_waiter(a->env->e, a->id);
}

static void *opener(void *p)
{
    opener_arg *a = p;
    a->waited = tt_wait_until(opener_ready, a, 10000);
    fx_open_gate(&a->env->fx);
    return NULL;
}

/* Register a task with text and return its id (res cleared). */
static void test_events_and_head(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    char id[ONCE_ID_MAX + 1];
    fx_start(env.e, "m-1", "hello", id, sizeof id);
    fx_wait_state(env.store, "alice", id, ONCE_STATE_COMPLETED);

    int64_t gen = 0;
    once_state st = ONCE_STATE_UNKNOWN;
    assert_int_equal(once__engine_task_head(env.e, "alice", id, &gen, &st), ONCE_OK);
    assert_int_equal(st, ONCE_STATE_COMPLETED);
    assert_true(gen >= 3);

    once_event_list l;
    assert_int_equal(once__engine_events_after(env.e, "alice", id, 0, 0, &l), ONCE_OK);
    assert_int_equal((int64_t)l.n, gen);
    for (size_t i = 0; i < l.n; i++)
        assert_int_equal(l.v[i].generation, (int64_t)i + 1);
    assert_non_null(strstr(l.v[0].payload, "{\"task\":"));
    once_event_list_clear(&l);
    /* After a generation, at most max. */
    assert_int_equal(once__engine_events_after(env.e, "alice", id, 1, 1, &l), ONCE_OK);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.v[0].generation, 2);
    once_event_list_clear(&l);
    assert_int_equal(once__engine_events_after(env.e, "alice", id, gen, 0, &l), ONCE_OK);
    assert_int_equal(l.n, 0);
    once_event_list_clear(&l);

    /* Another principal sees nothing; unknown and malformed IDs neither. */
    assert_int_equal(once__engine_events_after(env.e, "bob", id, 0, 0, &l), ONCE_OK);
    assert_int_equal(l.n, 0);
    once_event_list_clear(&l);
    assert_int_equal(once__engine_task_head(env.e, "bob", id, &gen, &st), ONCE_ENOTFOUND);
    assert_int_equal(once__engine_task_head(env.e, "alice", "no such/id", &gen, &st),
                     ONCE_ENOTFOUND);
    assert_int_equal(once__engine_events_after(env.e, "alice", "no such/id", 0, 0, &l), ONCE_OK);
    assert_int_equal(l.n, 0);
    once_event_list_clear(&l);
    assert_int_equal(once__engine_events_after(env.e, NULL, id, 0, 0, &l), ONCE_EINVAL);
    /* The wait answers the same key checks: a bad key is refused, a
     * malformed ID never moves. */
    assert_int_equal(once__engine_wait_generation(env.e, NULL, id, 0, 0), ONCE_EINVAL);
    assert_int_equal(once__engine_wait_generation(env.e, "alice", "no such/id", 0, 0),
                     ONCE_ETIMEDOUT);

    /* A direct Message is not a task, for the head as for GetTask. */
    char mid[ONCE_ID_MAX + 1];
    fx_start(env.e, "m-2", "reply", mid, sizeof mid);
    fx_wait_state(env.store, "alice", mid, ONCE_STATE_COMPLETED);
    assert_int_equal(once__engine_task_head(env.e, "alice", mid, &gen, &st), ONCE_ENOTFOUND);
    fx_env_close(&env);
}

static void test_wait_local_write(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    char id[ONCE_ID_MAX + 1];
    fx_start(env.e, "m-1", "block", id, sizeof id);   /* works until the gate opens */
    fx_wait_blocked(&env.fx, 1);
    int64_t gen;
    once_state st;
    assert_int_equal(once__engine_task_head(env.e, "alice", id, &gen, &st), ONCE_OK);

    /* Already past: at once, even with no time to wait. */
    assert_int_equal(once__engine_wait_generation(env.e, "alice", id, gen - 1, 0), ONCE_OK);
    /* Nothing new and no time: a timeout, at once. */
    assert_int_equal(once__engine_wait_generation(env.e, "alice", id, gen, 0), ONCE_ETIMEDOUT);
    /* The turn's next write (a local one), made once the follower waits,
     * ends the wait: at once, not at its timeout. */
    opener_arg oa = {&env, id, 0};
    pthread_t ot;
    assert_int_equal(pthread_create(&ot, NULL, opener, &oa), 0);
    int64_t t0 = once_monotonic_ms();
    int wrc = once__engine_wait_generation(env.e, "alice", id, gen, tt_ms(5000));
    int64_t waited = elapsed_since(t0);
    pthread_join(ot, NULL);
    assert_true(oa.waited);
    assert_int_equal(wrc, ONCE_OK);
    assert_true(waited < tt_ms(2000));
    once_event_list l;
    assert_int_equal(once__engine_events_after(env.e, "alice", id, gen, 0, &l), ONCE_OK);
    assert_true(l.n >= 1);
    once_event_list_clear(&l);

    /* A task that does not move: the wait lasts its timeout. */
    fx_wait_state(env.store, "alice", id, ONCE_STATE_COMPLETED);
    assert_int_equal(once__engine_task_head(env.e, "alice", id, &gen, &st), ONCE_OK);
    t0 = once_monotonic_ms();
    assert_int_equal(once__engine_wait_generation(env.e, "alice", id, gen, 150), ONCE_ETIMEDOUT);
    int64_t took = elapsed_since(t0);
    assert_true(took >= 140 && took < tt_ms(2000));
    assert_int_equal(once__engine_wait_generation(env.e, "alice", "t-missing", 0, 60),
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
    once__engine *b = fx_engine_beside(&env, "replica-b");

    char id[ONCE_ID_MAX + 1];
    fx_start(env.e, "m-1", "sleep:200", id, sizeof id);
    int64_t gen = 0;
    once_state st;
    assert_int_equal(once__engine_task_head(b, "alice", id, &gen, &st), ONCE_OK);
    int64_t seen = gen;
    int64_t t0 = once_monotonic_ms();
    while (st != ONCE_STATE_COMPLETED && elapsed_since(t0) < tt_ms(5000)) {
        int rc = once__engine_wait_generation(b, "alice", id, seen, tt_ms(5000));
        assert_int_equal(rc, ONCE_OK);
        assert_int_equal(once__engine_task_head(b, "alice", id, &gen, &st), ONCE_OK);
        assert_true(gen > seen);
        seen = gen;
    }
    assert_int_equal(st, ONCE_STATE_COMPLETED);
    once__engine_free(b);
    fx_env_close(&env);
}

/*
 * A write that lands between the follower's look at the store and its
 * sleep. The store's events slot is wrapped: the first probe after `armed`
 * is set, for `task_id`, answers "nothing new" and then, before returning,
 * makes a local write (a cancel through the engine), noting whether a
 * waiter of that key was registered for its notification to wake. A
 * follower that looked before it registered has none yet, so it would
 * sleep through the write until the next poll.
 */
static struct gap_hook {
    const once_store_methods *inner;
    once_store_methods m;
    once__engine *e;
    const char *task_id;
    int armed;
    int probed; /* the probe ran and found nothing new */
    int write_rc;
    int waiting; /* a waiter of the key was registered as the write landed */
} gap;

static int gap_events(once_store *s, const char *principal, const char *task_id, int64_t after,
                      size_t max, once_event_list *out)
{
    int rc = gap.inner->events(s, principal, task_id, after, max, out);
    /* armed first: task_id and e are set before it is (and read after) */
    if (rc == ONCE_OK && out->n == 0 && __atomic_load_n(&gap.armed, __ATOMIC_SEQ_CST) &&
        strcmp(task_id, gap.task_id) == 0 && __atomic_exchange_n(&gap.armed, 0, __ATOMIC_SEQ_CST)) {
        gap.probed = 1;
        gap.waiting = has_waiter(gap.e, task_id);
        gap.write_rc = once__engine_cancel(gap.e, principal, task_id, NULL, NULL, NULL);
    }
    return rc;
}

/* The hook goes in before the engine's threads start: they read the store's
 * method table from then on (TSan). Disarmed, it passes everything through. */
static void gap_install(once_store *s)
{
    memset(&gap, 0, sizeof gap);
    gap.inner = s->m;
    gap.m = *gap.inner;
    gap.m.events = gap_events;
    s->m = &gap.m;
}

static void test_write_between_look_and_wait(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open_with(&env, NULL, 0, gap_install);
    char id[ONCE_ID_MAX + 1];
    fx_start(env.e, "m-1", "ask:which?", id, sizeof id);
    fx_wait_state(env.store, "alice", id, ONCE_STATE_INPUT_REQUIRED);
    int64_t gen;
    once_state st;
    assert_int_equal(once__engine_task_head(env.e, "alice", id, &gen, &st), ONCE_OK);

    gap.e = env.e;
    gap.task_id = id;
    __atomic_store_n(&gap.armed, 1, __ATOMIC_SEQ_CST);

    assert_int_equal(once__engine_wait_generation(env.e, "alice", id, gen, tt_ms(10000)),
                     ONCE_OK);
    assert_true(gap.probed);
    assert_int_equal(gap.write_rc, ONCE_OK);
    /* The point: the write in the gap woke the follower, not a later poll. */
    if (!gap.waiting)
        fail_msg("the write after the follower's look found no waiter to wake");
    assert_int_equal(once__engine_task_head(env.e, "alice", id, &gen, &st), ONCE_OK);
    assert_int_equal(st, ONCE_STATE_CANCELED);
    fx_env_close(&env);
}

typedef struct waiter_arg {
    once__engine *e;
    const char *id;
    int rc;
    int64_t took;
} waiter_arg;

static void *waiter(void *p)
{
    waiter_arg *a = p;
    int64_t t0 = once_monotonic_ms();
    a->rc = once__engine_wait_generation(a->e, "alice", a->id, 1000, 20000);
    a->took = elapsed_since(t0);
    return NULL;
}

static void test_wait_ends_at_shutdown(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    char id[ONCE_ID_MAX + 1];
    fx_start(env.e, "m-1", "hello", id, sizeof id);
    fx_wait_state(env.store, "alice", id, ONCE_STATE_COMPLETED);
    fx_wait_done(&env.fx, 1);
    waiter_arg a = {env.e, id, 0, 0};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, waiter, &a), 0);
    opener_arg w = {&env, id, 0};
    assert_true(tt_wait_until(opener_ready, &w, 10000));   /* the follower waits */
    /* Free waits for the follower to leave, which it does promptly (not
     * after its 20 s). */
    once__engine_free(env.e);
    pthread_join(t, NULL);
    assert_int_equal(a.rc, ONCE_ECLOSED);
    assert_true(a.took < tt_ms(5000));
    once_store_close(env.store);
    fx_destroy(&env.fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_events_and_head),
        cmocka_unit_test(test_wait_local_write),
        cmocka_unit_test(test_wait_other_replica),
        cmocka_unit_test(test_write_between_look_and_wait),
        cmocka_unit_test(test_wait_ends_at_shutdown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
