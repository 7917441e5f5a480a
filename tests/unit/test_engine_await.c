/*
 * test_engine_await.c -- deferred blocking sends (src/engine/await.c):
 *   - a send with `defer` whose task has not settled returns at once,
 *     pending, and writes nothing more than a blocking send would;
 *   - the wait fires when a local write settles the task (not before: the
 *     turn is seen running first), hands over the settled record, and the
 *     answer then is the settled task;
 *   - it fires at its deadline with the task as it stands;
 *   - a task that settled here before the wait was registered is answered
 *     at once: the registration says ONCE_EEXISTS;
 *   - another engine's writes on a shared store are found by polling;
 *   - per-principal and total limits answer ONCE_EBUSY (counted), and other
 *     principals still wait;
 *   - release fires every wait and refuses new ones; freeing the engine
 *     releases too.
 */
#include "engine/engine_int.h"
#include "engine_fixture.h"

typedef struct fired {
    int n;             /* __atomic: callbacks run */
    once_state handed; /* the state of the record handed over; 0: none */
} fired;

static void on_ready(void *arg, once_record *rec)
{
    fired *f = arg;
    if (rec != NULL) {
        f->handed = rec->state;
        once_record_clear(rec);
        once_free(rec);
    }
    __atomic_fetch_add(&f->n, 1, __ATOMIC_SEQ_CST);
}

static int fired_once(void *arg)
{
    return __atomic_load_n(&((fired *)arg)->n, __ATOMIC_SEQ_CST) >= 1;
}

static int fired_n(const fired *f)
{
    return __atomic_load_n(&f->n, __ATOMIC_SEQ_CST);
}

/* A deferred blocking send of text as alice (extension off). */
static void send_deferred(once__engine *e, const char *mid, const char *text, once_send_res *res)
{
    json_t *m = fx_msg(mid, text, NULL, NULL);
    once_send_req req;
    memset(&req, 0, sizeof req);
    req.principal = "alice";
    req.message = m;
    req.history_length = -1;
    req.defer = 1;
    memset(res, 0, sizeof *res);
    assert_int_equal(once__engine_send(e, &req, res), ONCE_OK);
    json_decref(m);
}

static const char *answer_state(once__engine *e, const char *id)
{
    once_send_res res;
    memset(&res, 0, sizeof res);
    assert_int_equal(once__engine_send_answer(e, "alice", id, NULL, -1, &res), ONCE_OK);
    static char state[64];
    snprintf(state, sizeof state, "%s", fx_state(&res));
    fx_res_clear(&res);
    return state;
}

static void test_local_settle(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    once_send_res res;
    send_deferred(env.e, "m-1", "block", &res);
    assert_int_equal(res.verdict, ONCE_V_REGISTER);
    assert_true(res.pending);
    assert_null(res.result);
    assert_true(res.wait_until > once_monotonic_ms());
    char id[ONCE_ID_MAX + 1];
    snprintf(id, sizeof id, "%s", res.task_id);

    fired f = {0};
    assert_int_equal(once__engine_await(env.e, "alice", id, res.generation,
                                       res.wait_seq, once_monotonic_ms() + tt_ms(60000), on_ready, &f),
                     ONCE_OK);
    /* The turn runs (and wrote its checkpoint): the task moved, but has
     * not settled, so the wait has not fired. */
    fx_wait_blocked(&env.fx, 1);
    assert_string_equal(answer_state(env.e, id), "TASK_STATE_WORKING");
    once__engine_stats st;
    once__engine_get_stats(env.e, &st);
    assert_int_equal(st.waiting, 1);
    assert_int_equal(fired_n(&f), 0);

    fx_open_gate(&env.fx);
    assert_true(tt_wait_until(fired_once, &f, 10000));
    assert_string_equal(answer_state(env.e, id), "TASK_STATE_COMPLETED");
    assert_int_equal(f.handed, ONCE_STATE_COMPLETED);
    once__engine_get_stats(env.e, &st);
    assert_int_equal(st.waiting, 0);
    assert_int_equal(fired_n(&f), 1);
    fx_env_close(&env);
}

static void test_deadline(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    once_send_res res;
    send_deferred(env.e, "m-1", "block", &res);
    assert_true(res.pending);
    fx_wait_blocked(&env.fx, 1);
    fired f = {0};
    assert_int_equal(once__engine_await(env.e, "alice", res.task_id, res.generation,
                                       res.wait_seq, once_monotonic_ms() + 50, on_ready, &f),
                     ONCE_OK);
    assert_true(tt_wait_until(fired_once, &f, 10000));
    assert_string_equal(answer_state(env.e, res.task_id), "TASK_STATE_WORKING");
    fx_open_gate(&env.fx);
    fx_env_close(&env);
}

typedef struct probe {
    once__engine *e;
    const char *id;
} probe;

static int completed(void *arg)
{
    probe *p = arg;
    json_t *task = NULL;
    if (once__engine_get(p->e, "alice", p->id, -1, &task, NULL) != ONCE_OK)
        return 0;
    const char *s =
        json_string_value(json_object_get(json_object_get(task, "status"), "state"));
    int done = s != NULL && strcmp(s, "TASK_STATE_COMPLETED") == 0;
    json_decref(task);
    return done;
}

static void test_settled_before_registration(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    once_send_res res;
    send_deferred(env.e, "m-1", "block", &res);
    assert_true(res.pending);
    fx_open_gate(&env.fx);
    probe p = {env.e, res.task_id};
    assert_true(tt_wait_until(completed, &p, 10000));
    /* The completing write found no wait: the registration must say so,
     * and the caller answers at once. */
    fired f = {0};
    assert_int_equal(once__engine_await(env.e, "alice", res.task_id, res.generation,
                                       res.wait_seq, once_monotonic_ms() + tt_ms(60000),
                                       on_ready, &f),
                     ONCE_EEXISTS);
    assert_int_equal(fired_n(&f), 0);
    assert_string_equal(answer_state(env.e, res.task_id), "TASK_STATE_COMPLETED");
    /* So is a wait whose send predates every settle here (seq 0). */
    assert_int_equal(once__engine_await(env.e, "alice", res.task_id, res.generation, 0,
                                       once_monotonic_ms() + tt_ms(60000), on_ready, &f),
                     ONCE_EEXISTS);
    fx_env_close(&env);
}

/* Engine B (not started: it runs nothing) waits for a task A runs; B gets
 * no in-process signal from A's writes, only its polls see them. */
static void test_other_replica(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    once__engine *b = fx_engine_beside(&env, "replica-b");

    once_send_res res;
    send_deferred(env.e, "m-1", "block", &res);
    assert_true(res.pending);
    fired f = {0};
    assert_int_equal(once__engine_await(b, "alice", res.task_id, res.generation, 0, once_monotonic_ms() + tt_ms(60000), on_ready, &f),
                     ONCE_OK);
    fx_wait_blocked(&env.fx, 1);
    assert_int_equal(fired_n(&f), 0);
    fx_open_gate(&env.fx);
    assert_true(tt_wait_until(fired_once, &f, 10000));
    assert_string_equal(answer_state(b, res.task_id), "TASK_STATE_COMPLETED");
    once__engine_free(b);
    fx_env_close(&env);
}

static void test_limits(void **state)
{
    (void)state;
    once__engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.max_waits_per_principal = 2;
    cfg.max_waits = 3;
    fx_env env;
    fx_env_open(&env, &cfg, 0);
    int64_t until = once_monotonic_ms() + tt_ms(60000);
    fired f[5] = {{0}};
    /* Waits on tasks that do not exist: they never settle (the probe finds
     * no event), so they stay until release. */
    assert_int_equal(once__engine_await(env.e, "alice", "t-1", 0, 0, until, on_ready, &f[0]), ONCE_OK);
    assert_int_equal(once__engine_await(env.e, "alice", "t-2", 0, 0, until, on_ready, &f[1]), ONCE_OK);
    assert_int_equal(once__engine_await(env.e, "alice", "t-3", 0, 0, until, on_ready, &f[2]),
                     ONCE_EBUSY);
    assert_int_equal(once__engine_await(env.e, "bob", "t-4", 0, 0, until, on_ready, &f[3]), ONCE_OK);
    assert_int_equal(once__engine_await(env.e, "carol", "t-5", 0, 0, until, on_ready, &f[4]),
                     ONCE_EBUSY);   /* the engine's total */
    once__engine_stats st;
    once__engine_get_stats(env.e, &st);
    assert_int_equal(st.waits_shed, 2);
    assert_int_equal(st.waiting, 3);

    once__engine_await_release(env.e);
    assert_int_equal(fired_n(&f[0]) + fired_n(&f[1]) + fired_n(&f[3]), 3);
    assert_int_equal(fired_n(&f[2]) + fired_n(&f[4]), 0);
    assert_int_equal(once__engine_await(env.e, "bob", "t-6", 0, 0, until, on_ready, &f[4]),
                     ONCE_ECLOSED);
    fx_env_close(&env);
}

static void test_free_releases(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    fired f = {0};
    assert_int_equal(once__engine_await(env.e, "alice", "t-x", 0, 0,
                                       once_monotonic_ms() + tt_ms(60000), on_ready, &f),
                     ONCE_OK);
    fx_env_close(&env);
    assert_int_equal(fired_n(&f), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_local_settle),
        cmocka_unit_test(test_deadline),
        cmocka_unit_test(test_settled_before_registration),
        cmocka_unit_test(test_other_replica),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_free_releases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
