/*
 * test_store_mem_budget_engine.c -- the memory store's budget as the
 * engine lives with it: tasks expired early answer TASK_EXPIRED with
 * expiredAt (never run again) and are counted in early_expired; a store
 * whose tombstones fill the budget refuses new tasks ONCE_EBUSY (the
 * retryable 503) while every earlier ID still answers, none re-executed.
 *
 * The engine's sweeper runs on its own (every 100 ms with a budget), so
 * the tests wait for its counters rather than for a time.
 */
#include "store/mem.h"
#include "unit/engine_fixture.h"

#define HOUR (3600LL * 1000)
#define NTASKS 100

static const char *P = "alice";

static void open_budget(fx_env *env, const char *url)
{
    once__engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.retention_ms = 72 * HOUR;   /* nothing is due: whatever goes, goes early */
    cfg.tombstone_ms = 30 * 24 * HOUR;
    fx_env_open_url(env, &cfg, 1, NULL, url);
}

static int early_seen(void *arg)
{
    once__engine_stats st;
    once__engine_get_stats(arg, &st);
    return st.early_expired > 0;
}

/* One new echo task, a millisecond after the last; its ID into id. */
static int send_new(fx_env *env, int i, char id[ONCE_ID_MAX + 1])
{
    char mid[32];
    once_send_res res;
    snprintf(mid, sizeof mid, "m-%d", i);
    json_t *m = fx_msg(mid, "hello, budget", NULL, NULL);
    once_manual_clock_advance(&env->clock, 1);   /* finished in the order sent */
    int rc = fx_send(env->e, P, m, 0, 0, &res);
    if (rc == ONCE_OK)
        snprintf(id, ONCE_ID_MAX + 1, "%s", res.task_id);
    fx_res_clear(&res);
    json_decref(m);
    return rc;
}

/* Replay of message i: TASK_EXPIRED with its expiredAt, or the task as it
 * is; 1 if expired. */
static int replay_expired(fx_env *env, int i, const char *id)
{
    char mid[32];
    once_send_res res;
    snprintf(mid, sizeof mid, "m-%d", i);
    json_t *m = fx_msg(mid, "hello, budget", NULL, NULL);
    assert_int_equal(fx_send(env->e, P, m, 0, 0, &res), ONCE_OK);
    assert_string_equal(res.task_id, id);
    int expired = res.verdict == ONCE_V_TASK_EXPIRED;
    if (expired)
        assert_true(res.expired_at > 0);
    else
        assert_int_equal(res.verdict, ONCE_V_REPLAY);
    fx_res_clear(&res);
    json_decref(m);
    return expired;
}

static void test_engine_expires_early(void **state)
{
    (void)state;
    fx_env env;
    char ids[NTASKS][ONCE_ID_MAX + 1];
    open_budget(&env, "memory:?max=64K&cold=off&tombs=compact");

    for (int i = 0; i < NTASKS; i++)   /* ~2 KiB each: three times the budget */
        assert_int_equal(send_new(&env, i, ids[i]), ONCE_OK);
    assert_true(tt_wait_until(early_seen, env.e, 10000));
    assert_int_equal(once__engine_sweep_once(env.e), ONCE_OK);   /* a whole pass since */

    once__engine_stats st;
    once__engine_get_stats(env.e, &st);
    assert_int_equal(st.swept, st.early_expired);   /* nothing was due by --retention */
    int64_t expired_at = 0;
    json_t *task = NULL;
    assert_int_equal(once__engine_get(env.e, P, ids[0], -1, &task, &expired_at), ONCE_ETOMBSTONE);
    assert_true(expired_at > 0);
    assert_int_equal(once__engine_get(env.e, P, ids[NTASKS - 1], -1, &task, NULL), ONCE_OK);
    json_decref(task);
    int expired = 0;
    for (int i = 0; i < NTASKS; i++)
        expired += replay_expired(&env, i, ids[i]);
    assert_true(expired > 0 && expired < NTASKS);
    assert_int_equal(fx_runs(&env.fx), NTASKS);   /* not one ran twice */
    fx_env_close(&env);
}

/* Compact tombstones past a 64 KiB budget: a ring of 4096 (96 KiB and its
 * index) once 2048 are held; the loop sweeps every 64 sends, so the store
 * refuses well before FILL. */
#define FILL 4000

static void test_engine_refuses_when_tombstones_fill(void **state)
{
    (void)state;
    fx_env env;
    static char ids[FILL + 1][ONCE_ID_MAX + 1];
    int i, rc = ONCE_OK;
    open_budget(&env, "memory:?max=64K&cold=off&tombs=compact");

    for (i = 0; i <= FILL && rc == ONCE_OK; i++) {
        rc = send_new(&env, i, ids[i]);
        if (i % 64 == 63)   /* as the sweeper would: everything finished goes */
            assert_int_equal(once__engine_sweep_once(env.e), ONCE_OK);
    }
    assert_int_equal(rc, ONCE_EBUSY);
    int made = i - 1;
    assert_true(made > 2048 && made <= 2048 + 2 * 64);
    once__engine_stats st;
    once__engine_get_stats(env.e, &st);
    assert_true(st.store_errors > 0);

    /* Every ID sent before answers as itself; none ran again. */
    for (i = 0; i < made; i++)
        (void)replay_expired(&env, i, ids[i]);
    assert_int_equal(fx_runs(&env.fx), made);
    fx_env_close(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_engine_expires_early),
        cmocka_unit_test(test_engine_refuses_when_tombstones_fill),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
