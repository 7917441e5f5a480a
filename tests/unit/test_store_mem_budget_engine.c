/*
 * test_store_mem_budget_engine.c -- the memory store's budget as the
 * engine lives with it: tasks expired early answer TASK_EXPIRED with
 * expiredAt (never run again) and are counted in early_expired; a store
 * whose tombstones fill the budget refuses new tasks ONCE_EBUSY (the
 * retryable 503) while every earlier ID still answers, none re-executed.
 *
 * No sweeper runs (ONCE_TEST_SWEEPER=off, as if it had fallen behind for
 * good): the budget holds on the writes alone, checked after every send.
 */
#include <stdlib.h>

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
    assert_int_equal(setenv("ONCE_TEST_SWEEPER", "off", 1), 0);
    fx_env_open_url(env, &cfg, 1, NULL, url);
    assert_int_equal(unsetenv("ONCE_TEST_SWEEPER"), 0);
}

static void assert_within(fx_env *env)
{
    once_budget b;
    assert_int_equal(once_store_budget(env->store, &b, 0), ONCE_OK);
    if (b.bytes > b.max_bytes)
        fail_msg("the store holds %zu bytes of a %zu-byte budget", b.bytes, b.max_bytes);
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

    for (int i = 0; i < NTASKS; i++) {   /* ~2 KiB each: three times the budget */
        assert_int_equal(send_new(&env, i, ids[i]), ONCE_OK);
        assert_within(&env);
    }
    once__engine_stats st;
    once__engine_get_stats(env.e, &st);
    assert_true(st.early_expired > 0);
    assert_int_equal(st.swept, 0);   /* no sweep did it */
    assert_int_equal(st.sweeps, 0);
    assert_int_equal(st.mem_max_bytes, 64 * 1024);
    assert_true(st.mem_bytes <= st.mem_max_bytes);
    assert_int_equal(st.mem_tasks + st.mem_tombstones, NTASKS);
    assert_int_equal(st.mem_tombstones, st.early_expired);
    int64_t expired_at = 0;
    json_t *task = NULL;
    assert_int_equal(once__engine_get(env.e, P, ids[0], -1, &task, &expired_at), ONCE_ETOMBSTONE);
    assert_true(expired_at > 0);
    assert_int_equal(once__engine_get(env.e, P, ids[NTASKS - 1], -1, &task, NULL), ONCE_OK);
    json_decref(task);
    int expired = 0;
    for (int i = 0; i < NTASKS; i++)
        expired += replay_expired(&env, i, ids[i]);
    assert_int_equal((uint64_t)expired, st.early_expired);
    assert_int_equal(fx_runs(&env.fx), NTASKS);   /* not one ran twice */
    fx_env_close(&env);
}

/* Compact tombstones in a 64 KiB budget: their ring of 1024 (24 KiB and
 * its 8 KiB index) cannot double beside the tasks the store must hold, so
 * once 1024 are held the store refuses new tasks, well before FILL. */
#define FILL 4000

static void test_engine_refuses_when_tombstones_fill(void **state)
{
    (void)state;
    fx_env env;
    static char ids[FILL + 1][ONCE_ID_MAX + 1];
    int i, rc = ONCE_OK;
    open_budget(&env, "memory:?max=64K&cold=off&tombs=compact");

    /* The task admitted last may pass the budget by its own writes (its
     * completion: with the ring full no finished task can be expired for
     * them), never by more than one task's, and then nothing new enters. */
    size_t over = 0;
    for (i = 0; i <= FILL && rc == ONCE_OK; i++) {
        rc = send_new(&env, i, ids[i]);
        if (over)
            assert_int_equal(rc, ONCE_EBUSY);
        once_budget b;
        assert_int_equal(once_store_budget(env.store, &b, 0), ONCE_OK);
        over = b.bytes > b.max_bytes ? b.bytes - b.max_bytes : 0;
        assert_true(over <= 4096);
    }
    assert_int_equal(rc, ONCE_EBUSY);
    int made = i - 1;
    assert_true(made > 1024 && made <= 1024 + 64);
    once__engine_stats st;
    once__engine_get_stats(env.e, &st);
    assert_true(st.store_errors > 0);
    assert_int_equal(st.mem_tombstones, 1024);

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
