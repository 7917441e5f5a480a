/*
 * test_engine_fence.c -- fencing, leases, takeover and cancel: a worker
 * whose fence moved is refused and nothing it writes is visible; an expired
 * lease is taken over by another replica with fence + 1 that resumes from
 * the checkpoint, and the journal names both turns, the takeover and the
 * refused write with both fences; heartbeats keep a live lease from being taken; cancel
 * stops the worker and is idempotent.
 */
#include "unit/engine_fixture.h"

static const char *P = "alice";

static int has_artifact(once_store *s, const char *task_id, const char *artifact_id)
{
    once_record r;
    fx_load(s, P, task_id, &r);
    int found = strstr(r.task_json, artifact_id) != NULL;
    once_record_clear(&r);
    return found;
}

/* Bump the stored fence behind the worker's back (what a takeover or
 * cancel on another replica does). */
static void bump_fence(once_store *s, const char *task_id)
{
    once_record cur, next;
    fx_load(s, P, task_id, &cur);
    assert_int_equal(once_record_copy(&next, &cur), ONCE_OK);
    next.fence = cur.fence + 1;
    next.version = cur.version + 1;
    assert_int_equal(once_store_update(s, &next, cur.version, NULL, 0), ONCE_OK);
    once_record_clear(&cur);
    once_record_clear(&next);
}

static void test_stale_fence_refused(void **state)
{
    (void)state;
    once__engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.workers = 1;   /* fx_settle */
    cfg.sweep_interval_ms = 3600 * 1000; /* a sweep would write the refusal's journal note */
    fx_env env;
    fx_env_open(&env, &cfg, 0);
    once_send_res res;
    json_t *m = fx_msg("m-1", "block", NULL, NULL);
    assert_int_equal(fx_send(env.e, P, m, 0, 1, &res), ONCE_OK);
    char tid[ONCE_ID_MAX + 1];
    snprintf(tid, sizeof tid, "%s", res.task_id);
    fx_res_clear(&res);
    fx_wait_blocked(&env.fx, 1);

    bump_fence(env.store, tid);
    once_record before;
    fx_load(env.store, P, tid, &before);
    fx_open_gate(&env.fx);
    /* The worker tries its artifact, is refused, returns; the engine must
     * not complete or fail the task on its behalf. */
    int64_t until = once_monotonic_ms() + tt_ms(5000);
    while (__atomic_load_n(&env.fx.last_write_rc, __ATOMIC_SEQ_CST) == 0 &&
           once_monotonic_ms() < until)
        usleep(2000);
    assert_int_equal(__atomic_load_n(&env.fx.last_write_rc, __ATOMIC_SEQ_CST), ONCE_EFENCED);
    fx_settle(env.e, env.store, P);
    once_record after;
    fx_load(env.store, P, tid, &after);
    assert_int_equal(after.version, before.version);
    assert_int_equal(after.generation, before.generation);
    assert_int_equal(after.state, ONCE_STATE_WORKING);
    assert_false(has_artifact(env.store, tid, "stale"));
    once__engine_stats st;
    once__engine_get_stats(env.e, &st);
    assert_true(st.fenced_writes >= 1);
    fx_check_events(env.store, P, tid);
    once_record_clear(&before);
    once_record_clear(&after);
    json_decref(m);
    fx_env_close(&env);
}

/* Replica A's worker hangs (no heartbeat); its lease expires; replica B's
 * sweep takes the task with fence + 1, resumes from the checkpoint and
 * completes; A's late write is refused and invisible. */
static void test_takeover(void **state)
{
    (void)state;
    once__engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.lease_ms = 1000;
    cfg.heartbeat_ms = 3600 * 1000;     /* A never heartbeats: it is "stopped" */
    cfg.sweep_interval_ms = 3600 * 1000;
    cfg.workers = 1;                    /* A: fx_settle */
    fx_env env;
    fx_env_open(&env, &cfg, 1);

    fx_exec fxb;
    fx_init(&fxb);
    fxb.no_block = 1;
    once__engine_config cb = cfg;
    cb.store = env.store;
    cb.clock = &env.clock.base;
    cb.executor = &fxb.ex;
    cb.replica_id = "replica-b";
    cb.workers = 2;
    once__engine *b;
    assert_int_equal(once__engine_new(&cb, &b, NULL, 0), ONCE_OK);
    assert_int_equal(once__engine_start(b), ONCE_OK);

    once_send_res res;
    json_t *m = fx_msg("m-1", "block", NULL, NULL);
    assert_int_equal(fx_send(env.e, P, m, 0, 1, &res), ONCE_OK);
    char tid[ONCE_ID_MAX + 1];
    snprintf(tid, sizeof tid, "%s", res.task_id);
    fx_res_clear(&res);
    fx_wait_blocked(&env.fx, 1);

    /* Lease still valid: B takes nothing. */
    assert_int_equal(once__engine_sweep_once(b), ONCE_OK);
    once__engine_stats st;
    once__engine_get_stats(b, &st);
    assert_int_equal(st.takeovers, 0);

    once_manual_clock_advance(&env.clock, 1500);
    assert_int_equal(once__engine_sweep_once(b), ONCE_OK);
    once__engine_get_stats(b, &st);
    assert_int_equal(st.takeovers, 1);
    fx_wait_state(env.store, P, tid, ONCE_STATE_COMPLETED);

    once_record r;
    fx_load(env.store, P, tid, &r);
    assert_int_equal(r.fence, 2);
    assert_string_equal(r.lease_owner, "");
    assert_int_equal(r.step, 3);
    once_record_clear(&r);
    pthread_mutex_lock(&fxb.mu);
    assert_int_equal(fxb.resumed_seen, 1);
    assert_int_equal(fxb.step_seen, 3);
    assert_string_equal(fxb.checkpoint_seen, "cp-1");
    char want_key[ONCE_EFFECT_KEY_MAX + 1];
    snprintf(want_key, sizeof want_key, "%s:step-3", tid);
    assert_string_equal(fxb.effect_key_seen, want_key);
    pthread_mutex_unlock(&fxb.mu);

    /* The journal: A's turn (never ended), the takeover from A (fence 1)
     * to B (fence 2), B's resumed turn from step 3 to its end. */
    json_t *j = fx_journal_of(env.store, P, tid);
    size_t at_a = 0, at_t = 0;
    json_t *ta = fx_journal_entry(j, "turn", 0, &at_a);
    assert_non_null(ta);
    assert_string_equal(fx_str(ta, "replica"), "replica-a");
    assert_int_equal(fx_num(ta, "fence"), 1);
    assert_null(json_object_get(ta, "end"));
    json_t *tk = fx_journal_entry(j, "takeover", at_a, &at_t);
    assert_non_null(tk);
    assert_string_equal(fx_str(tk, "from"), "replica-a");
    assert_string_equal(fx_str(tk, "to"), "replica-b");
    assert_int_equal(fx_num(tk, "fence"), 1);
    assert_int_equal(fx_num(tk, "newFence"), 2);
    json_t *tb = fx_journal_entry(j, "turn", at_t, NULL);
    assert_non_null(tb);
    assert_string_equal(fx_str(tb, "replica"), "replica-b");
    assert_int_equal(fx_num(tb, "fence"), 2);
    assert_true(json_is_true(json_object_get(tb, "resumed")));
    assert_int_equal(fx_num(tb, "step"), 3);
    assert_string_equal(fx_str(tb, "result"), "TASK_STATE_COMPLETED");
    assert_null(fx_journal_entry(j, "fenced", 0, NULL));
    json_decref(j);

    /* A wakes up and writes: refused, invisible. */
    fx_load(env.store, P, tid, &r);
    int64_t version = r.version;
    once_record_clear(&r);
    fx_open_gate(&env.fx);
    int64_t until = once_monotonic_ms() + tt_ms(5000);
    while (__atomic_load_n(&env.fx.last_write_rc, __ATOMIC_SEQ_CST) == 0 &&
           once_monotonic_ms() < until)
        usleep(2000);
    assert_int_equal(__atomic_load_n(&env.fx.last_write_rc, __ATOMIC_SEQ_CST), ONCE_EFENCED);
    fx_settle(env.e, env.store, P);
    fx_load(env.store, P, tid, &r);
    assert_int_equal(r.version, version);
    assert_int_equal(r.state, ONCE_STATE_COMPLETED);
    once_record_clear(&r);
    assert_false(has_artifact(env.store, tid, "stale"));
    assert_true(has_artifact(env.store, tid, "echo"));
    fx_check_events(env.store, P, tid);
    /* A's refused write, written by A's next sweep: both fences. */
    assert_int_equal(once__engine_sweep_once(env.e), ONCE_OK);
    j = fx_journal_of(env.store, P, tid);
    json_t *fz = fx_journal_entry(j, "fenced", 0, NULL);
    assert_non_null(fz);
    assert_string_equal(fx_str(fz, "replica"), "replica-a");
    assert_int_equal(fx_num(fz, "fence"), 1);
    assert_int_equal(fx_num(fz, "storedFence"), 2);
    assert_string_equal(fx_str(fz, "what"), "write");
    json_decref(j);

    /* A later sweep finds nothing more to take. */
    once_manual_clock_advance(&env.clock, 5000);
    assert_int_equal(once__engine_sweep_once(b), ONCE_OK);
    once__engine_get_stats(b, &st);
    assert_int_equal(st.takeovers, 1);

    json_decref(m);
    once__engine_free(b);
    fx_destroy(&fxb);
    fx_env_close(&env);
}

/* With heartbeats, a lease outlives its nominal length while the worker
 * lives, so another replica does not take the task. */
static void test_heartbeat_keeps_lease(void **state)
{
    (void)state;
    once__engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.lease_ms = tt_ms(500);
    cfg.heartbeat_ms = cfg.lease_ms / 10;
    cfg.sweep_interval_ms = 3600 * 1000;
    fx_env env;
    fx_env_open(&env, &cfg, 0);
    fx_exec fxb;
    fx_init(&fxb);
    once__engine_config cb = cfg;
    cb.store = env.store;
    cb.executor = &fxb.ex;
    cb.replica_id = "replica-b";
    cb.workers = 1;
    once__engine *b;
    assert_int_equal(once__engine_new(&cb, &b, NULL, 0), ONCE_OK);

    once_send_res res;
    json_t *m = fx_msg("m-1", "block", NULL, NULL);
    assert_int_equal(fx_send(env.e, P, m, 0, 1, &res), ONCE_OK);
    char tid[ONCE_ID_MAX + 1];
    snprintf(tid, sizeof tid, "%s", res.task_id);
    fx_res_clear(&res);
    /* The turn runs until the gate opens; B sweeps until the turn is older
     * than two nominal leases: only A's heartbeats can have kept it. */
    fx_wait_blocked(&env.fx, 1);
    int64_t t0 = once_monotonic_ms();
    do {
        usleep(150 * 1000);
        assert_int_equal(once__engine_sweep_once(b), ONCE_OK);
    } while (once_monotonic_ms() - t0 < 2 * cfg.lease_ms);
    once__engine_stats st;
    once__engine_get_stats(b, &st);
    assert_int_equal(st.takeovers, 0);
    once_record r;
    fx_load(env.store, P, tid, &r);
    assert_int_equal(r.fence, 1);
    assert_string_equal(r.lease_owner, "replica-a");
    assert_true(r.lease_until > once_now(once_clock_system()));
    once_record_clear(&r);
    fx_open_gate(&env.fx);
    fx_wait_state(env.store, P, tid, ONCE_STATE_COMPLETED);
    fx_load(env.store, P, tid, &r);
    assert_int_equal(r.lease_until, 0);
    once_record_clear(&r);
    fx_check_events(env.store, P, tid);
    json_decref(m);
    once__engine_free(b);
    fx_destroy(&fxb);
    fx_env_close(&env);
}

static void test_cancel(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    once_send_res res;
    json_t *m = fx_msg("m-1", "sleep:10000", NULL, NULL);
    assert_int_equal(fx_send(env.e, P, m, 0, 1, &res), ONCE_OK);
    char tid[ONCE_ID_MAX + 1];
    snprintf(tid, sizeof tid, "%s", res.task_id);
    fx_res_clear(&res);
    fx_wait_state(env.store, P, tid, ONCE_STATE_WORKING);

    /* Another principal cannot see it, let alone cancel it. */
    once_state st = ONCE_STATE_UNKNOWN;
    json_t *task = NULL;
    assert_int_equal(once__engine_cancel(env.e, "mallory", tid, &task, &st, NULL), ONCE_ENOTFOUND);
    assert_null(task);

    int64_t t0 = once_monotonic_ms();
    assert_int_equal(once__engine_cancel(env.e, P, tid, &task, &st, NULL), ONCE_OK);
    assert_int_equal(st, ONCE_STATE_CANCELED);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(task, "status"), "state")),
        "TASK_STATE_CANCELED");
    json_decref(task);
    /* The sleeping worker wakes at once (not after its 10 s) and its write
     * is refused. */
    int64_t until = t0 + tt_ms(3000);
    while (__atomic_load_n(&env.fx.last_write_rc, __ATOMIC_SEQ_CST) == 0 &&
           once_monotonic_ms() < until)
        usleep(2000);
    assert_true(once_monotonic_ms() - t0 < tt_ms(2000));
    assert_int_equal(__atomic_load_n(&env.fx.saw_cancel, __ATOMIC_SEQ_CST), 1);
    assert_int_equal(__atomic_load_n(&env.fx.last_write_rc, __ATOMIC_SEQ_CST), ONCE_EFENCED);
    assert_false(has_artifact(env.store, tid, "late"));

    once_record r;
    fx_load(env.store, P, tid, &r);
    assert_int_equal(r.fence, 2);
    assert_int_equal(r.state, ONCE_STATE_CANCELED);
    assert_string_equal(r.lease_owner, "");
    assert_true(r.finished_at > 0);
    int64_t version = r.version;
    once_record_clear(&r);

    /* Idempotent: canceling again changes nothing. */
    assert_int_equal(once__engine_cancel(env.e, P, tid, &task, &st, NULL), ONCE_OK);
    assert_int_equal(st, ONCE_STATE_CANCELED);
    json_decref(task);
    fx_load(env.store, P, tid, &r);
    assert_int_equal(r.version, version);
    once_record_clear(&r);

    /* A new message to it is refused naming CANCELED. */
    json_t *m2 = fx_msg("m-2", "hi", tid, NULL);
    assert_int_equal(fx_send(env.e, P, m2, 0, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REJECT_TERMINAL);
    assert_int_equal(res.state, ONCE_STATE_CANCELED);

    /* Cancel of another terminal state: EILLEGAL naming the state. */
    json_t *m3 = fx_msg("m-3", "done", NULL, NULL);
    assert_int_equal(fx_send(env.e, P, m3, 0, 0, &res), ONCE_OK);
    char done[ONCE_ID_MAX + 1];
    snprintf(done, sizeof done, "%s", res.task_id);
    fx_res_clear(&res);
    task = NULL;
    assert_int_equal(once__engine_cancel(env.e, P, done, &task, &st, NULL), ONCE_EILLEGAL);
    assert_int_equal(st, ONCE_STATE_COMPLETED);
    assert_null(task);

    /* An interrupted task can be canceled too. */
    json_t *m4 = fx_msg("m-4", "ask:q", NULL, NULL);
    assert_int_equal(fx_send(env.e, P, m4, 0, 0, &res), ONCE_OK);
    char asked[ONCE_ID_MAX + 1];
    snprintf(asked, sizeof asked, "%s", res.task_id);
    fx_res_clear(&res);
    assert_int_equal(once__engine_cancel(env.e, P, asked, NULL, &st, NULL), ONCE_OK);
    assert_int_equal(st, ONCE_STATE_CANCELED);
    assert_int_equal(once__engine_cancel(env.e, P, "unknown-task", NULL, &st, NULL),
                     ONCE_ENOTFOUND);

    fx_check_events(env.store, P, tid);
    fx_check_events(env.store, P, asked);
    json_decref(m);
    json_decref(m2);
    json_decref(m3);
    json_decref(m4);
    fx_env_close(&env);
}

/* Shutting an engine down stops its workers without finishing their tasks:
 * the lease is left to expire for a takeover. */
static void test_shutdown_leaves_task(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    once_send_res res;
    json_t *m = fx_msg("m-1", "sleep:10000", NULL, NULL);
    assert_int_equal(fx_send(env.e, P, m, 0, 1, &res), ONCE_OK);
    char tid[ONCE_ID_MAX + 1];
    snprintf(tid, sizeof tid, "%s", res.task_id);
    fx_res_clear(&res);
    fx_wait_state(env.store, P, tid, ONCE_STATE_WORKING);
    int64_t t0 = once_monotonic_ms();
    once__engine_free(env.e);
    env.e = NULL;
    assert_true(once_monotonic_ms() - t0 < tt_ms(2000));   /* not the turn's 10 s */
    once_record r;
    fx_load(env.store, P, tid, &r);
    assert_int_equal(r.state, ONCE_STATE_WORKING);
    assert_string_equal(r.lease_owner, "replica-a");
    once_record_clear(&r);
    json_decref(m);
    fx_env_close(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stale_fence_refused),
        cmocka_unit_test(test_takeover),
        cmocka_unit_test(test_heartbeat_keeps_lease),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_shutdown_leaves_task),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
