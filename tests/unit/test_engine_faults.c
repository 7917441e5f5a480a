/*
 * test_engine_faults.c -- allocation fault sweep over the engine: fail the
 * i-th allocation during a send (and the turn it starts, and a cancel) for
 * i = 0, 1, 2 ... until a run hits no fault. Every run must end in success
 * or ENOMEM, leave a store that passes its integrity check, and leak
 * nothing (ASan).
 */
#include "core/alloc_int.h"
#include "unit/engine_fixture.h"

static const char *P = "alice";

static int settled_or_gone(once_store *s, const char *task_id)
{
    once_record r;
    int rc = once_store_load(s, P, task_id, &r, NULL);
    if (rc != ONCE_OK)
        return 1;
    int done = once_state_terminal(r.state) || once_state_interrupted(r.state);
    once_record_clear(&r);
    return done;
}

static void check_store(once_store *s)
{
    once_check_report rep;
    assert_int_equal(once_store_check(s, &rep), ONCE_OK);
    if (rep.bad_generation || rep.event_gaps || rep.orphan_events || rep.bad_state)
        fail_msg("store check: %s", rep.first_problem);
}

/* One run with allocation i failing. Returns 1 when no fault was hit. */
static int run_once(long i, const char *text, int cancel)
{
    fx_env env;
    once__engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.workers = 1;
    fx_env_open(&env, &cfg, 0);

    json_t *m = fx_msg("m-1", text, "t-fault", NULL);
    once_send_res res;
    once__alloc_fail_after(i);
    int rc = fx_send(env.e, P, m, 1, 1, &res);
    if (rc != ONCE_OK && rc != ONCE_ENOMEM)
        fail_msg("alloc %ld: send gave %s", i, once_errname(rc));
    /* Until the turn is over: the task settled, or the executor returned (a
     * fault after it may leave the task unsettled). A fault that kept the
     * turn from being queued leaves nothing to wait for: the bound ends
     * those runs (scaled, so that a slow build still sweeps the turn). */
    int64_t until = once_monotonic_ms() + tt_ms(100);
    while (rc == ONCE_OK && !settled_or_gone(env.store, "t-fault") &&
           __atomic_load_n(&env.fx.done, __ATOMIC_SEQ_CST) == 0 && once_monotonic_ms() < until)
        usleep(1000);
    if (cancel && rc == ONCE_OK) {
        int crc = once__engine_cancel(env.e, P, "t-fault", NULL, NULL, NULL);
        if (crc != ONCE_OK && crc != ONCE_ENOMEM && crc != ONCE_EILLEGAL)
            fail_msg("alloc %ld: cancel gave %s", i, once_errname(crc));
    }
    long used = once__alloc_count();
    once__alloc_fail_after(-1);
    fx_res_clear(&res);
    json_decref(m);
    once__engine_free(env.e);
    env.e = NULL;
    check_store(env.store);
    fx_env_close(&env);
    return used <= i;
}

static void sweep(const char *text, int cancel)
{
    long i;
    for (i = 0; i < 2000; i++) {
        if (run_once(i, text, cancel))
            break;
    }
    print_message("%s: %ld allocations swept\n", text, i);
    assert_true(i > 5);      /* the sweep did fail something */
    assert_true(i < 2000);   /* and found the end */
}

static void test_fault_register_complete(void **state)
{
    (void)state;
    sweep("hello", 0);
}

static void test_fault_ask_then_cancel(void **state)
{
    (void)state;
    sweep("ask:q", 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fault_register_complete),
        cmocka_unit_test(test_fault_ask_then_cancel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
