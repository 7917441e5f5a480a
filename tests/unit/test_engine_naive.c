/*
 * test_engine_naive.c -- the experiment-only switch behind onced
 * --experiment-naive (once__engine_config.experiment_naive): the baseline of
 * the amplification experiment (demo/amplify.sh) must really be a server
 * without idempotency, or the experiment measures nothing; and the default
 * engine must keep deduplicating (the switch is off unless set).
 */
#include "unit/engine_fixture.h"

static const char *P = "alice";

static void open_naive(fx_env *env, int naive)
{
    once__engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.experiment_naive = naive;
    fx_env_open(env, &cfg, 0);
}

/* The same first message sent twice (a blind retry with the same
 * messageId): two tasks under two server-minted IDs, two executor runs. */
static void test_naive_retry_makes_a_second_task(void **state)
{
    (void)state;
    fx_env env;
    open_naive(&env, 1);
    json_t *m = fx_msg("m-1", "hello", NULL, NULL);
    once_send_res a, b;
    assert_int_equal(fx_send(env.e, P, m, 0, 0, &a), ONCE_OK);
    assert_int_equal(a.verdict, ONCE_V_REGISTER);
    assert_int_equal(fx_send(env.e, P, m, 0, 0, &b), ONCE_OK);
    assert_int_equal(b.verdict, ONCE_V_REGISTER);
    assert_int_equal(b.replayed, 0);
    assert_string_not_equal(a.task_id, b.task_id);
    assert_true(once_id_valid(a.task_id));
    assert_int_equal(strlen(a.task_id), ONCE_UUID_LEN);
    assert_string_equal(fx_state(&a), "TASK_STATE_COMPLETED");
    assert_string_equal(fx_state(&b), "TASK_STATE_COMPLETED");
    fx_wait_done(&env.fx, 2);
    assert_int_equal(fx_runs(&env.fx), 2);
    /* Not the derived ID a deduplicating server gives that messageId. */
    once_record r;
    assert_int_equal(once_store_load(env.store, P, a.task_id, &r, NULL), ONCE_OK);
    once_record_clear(&r);
    fx_check_events(env.store, P, a.task_id);
    fx_check_events(env.store, P, b.task_id);

    once__engine_stats st;
    once__engine_get_stats(env.e, &st);
    assert_int_equal(st.registered, 2);
    assert_int_equal(st.replayed, 0);
    fx_res_clear(&a);
    fx_res_clear(&b);
    json_decref(m);
    fx_env_close(&env);
}

/* The idempotency extension is ignored: a client-minted ID does not
 * register (TASK_NOT_FOUND), nothing is stored, nothing runs. */
static void test_naive_ignores_the_extension(void **state)
{
    (void)state;
    fx_env env;
    open_naive(&env, 1);
    json_t *m = fx_msg("m-1", "hello", "t-client-1", NULL);
    once_send_res res;
    assert_int_equal(fx_send(env.e, P, m, 1, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_TASK_NOT_FOUND);
    once_record r;
    assert_int_equal(once_store_load(env.store, P, "t-client-1", &r, NULL), ONCE_ENOTFOUND);
    assert_int_equal(fx_runs(&env.fx), 0);
    fx_res_clear(&res);
    json_decref(m);
    fx_env_close(&env);
}

/* A continuation of a task it made still works: only first messages and
 * registration change. */
static void test_naive_continuation(void **state)
{
    (void)state;
    fx_env env;
    open_naive(&env, 1);
    json_t *m1 = fx_msg("m-1", "ask:which?", NULL, NULL);
    once_send_res res;
    assert_int_equal(fx_send(env.e, P, m1, 0, 0, &res), ONCE_OK);
    assert_string_equal(fx_state(&res), "TASK_STATE_INPUT_REQUIRED");
    char tid[ONCE_ID_MAX + 1];
    snprintf(tid, sizeof tid, "%s", res.task_id);
    fx_res_clear(&res);
    json_t *m2 = fx_msg("m-2", "this one", tid, NULL);
    assert_int_equal(fx_send(env.e, P, m2, 0, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_CONTINUE);
    assert_string_equal(fx_state(&res), "TASK_STATE_COMPLETED");
    fx_res_clear(&res);
    json_decref(m1);
    json_decref(m2);
    fx_env_close(&env);
}

/* The default (switch off): the same retry replays the one task. */
static void test_default_dedups(void **state)
{
    (void)state;
    fx_env env;
    open_naive(&env, 0);
    json_t *m = fx_msg("m-1", "hello", NULL, NULL);
    once_send_res a, b;
    assert_int_equal(fx_send(env.e, P, m, 0, 0, &a), ONCE_OK);
    assert_int_equal(fx_send(env.e, P, m, 0, 0, &b), ONCE_OK);
    assert_int_equal(b.verdict, ONCE_V_REPLAY);
    assert_string_equal(a.task_id, b.task_id);
    assert_int_equal(fx_runs(&env.fx), 1);
    fx_res_clear(&a);
    fx_res_clear(&b);
    json_decref(m);
    fx_env_close(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_naive_retry_makes_a_second_task),
        cmocka_unit_test(test_naive_ignores_the_extension),
        cmocka_unit_test(test_naive_continuation),
        cmocka_unit_test(test_default_dedups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
