/*
 * test_engine_journal.c -- the task's journal (src/engine/journal.c): a
 * replay and a refusal write nothing when they are answered and are counted
 * by one journal-only write at the next sweep; a turn's start and end ride
 * in its own writes; the journal keeps its newest entries and counts the
 * rest. (The takeover's and the stale worker's entries: test_engine_fence.)
 */
#include "unit/engine_fixture.h"
#include "engine/engine_int.h"
#include "engine/inspect.h"

static const char *P = "alice";

/* The store's update slot, counted. Installed before the engine starts. */
static struct {
    const once_store_methods *inner;
    once_store_methods m;
    int updates; /* __atomic */
    int loads;   /* __atomic */
} wr;

static int counted_load(once_store *s, const char *principal, const char *task_id,
                        once_record *out, once_tombstone *tomb)
{
    __atomic_fetch_add(&wr.loads, 1, __ATOMIC_SEQ_CST);
    return wr.inner->load(s, principal, task_id, out, tomb);
}

static int counted_update(once_store *s, const once_record *rec, int64_t expect_version,
                          const once_event *ev, size_t nev)
{
    __atomic_fetch_add(&wr.updates, 1, __ATOMIC_SEQ_CST);
    return wr.inner->update(s, rec, expect_version, ev, nev);
}

static void count_install(once_store *s)
{
    memset(&wr, 0, sizeof wr);
    wr.inner = s->m;
    wr.m = *wr.inner;
    wr.m.update = counted_update;
    wr.m.load = counted_load;
    s->m = &wr.m;
}

static int updates(void)
{
    return __atomic_load_n(&wr.updates, __ATOMIC_SEQ_CST);
}

/* One turn worker, the store's updates counted, sweeps run by the test. */
static void open_counted(fx_env *env)
{
    once__engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.workers = 1;
    cfg.sweep_interval_ms = 3600 * 1000;
    fx_env_open_with(env, &cfg, 0, count_install);
}

/* Five replays and a reused messageId write nothing when answered; the
 * next sweep writes them as one journal-only update (version + 1, the same
 * generation, fence and state). */
static void replays_counted_then_flushed(void **state)
{
    (void)state;
    fx_env env;
    open_counted(&env);
    json_t *m = fx_msg("m-1", "hello", NULL, NULL);
    once_send_res res;
    assert_int_equal(fx_send(env.e, P, m, 0, 0, &res), ONCE_OK);
    char tid[ONCE_ID_MAX + 1];
    snprintf(tid, sizeof tid, "%s", res.task_id);
    fx_res_clear(&res);
    fx_wait_state(env.store, P, tid, ONCE_STATE_COMPLETED);
    fx_settle(env.e, env.store, P);

    once_record before;
    fx_load(env.store, P, tid, &before);
    int writes = updates();
    for (int i = 0; i < 5; i++) {
        assert_int_equal(fx_send(env.e, P, m, 0, 0, &res), ONCE_OK);
        assert_int_equal(res.replayed, 1);
        fx_res_clear(&res);
    }
    json_t *other = fx_msg("m-1", "something else", NULL, NULL);
    assert_int_equal(fx_send(env.e, P, other, 0, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_IDEMPOTENCY_CONFLICT);
    fx_res_clear(&res);
    assert_int_equal(updates(), writes); /* answered, nothing written */
    once_record mid;
    fx_load(env.store, P, tid, &mid);
    assert_int_equal(mid.version, before.version);
    once_record_clear(&mid);

    assert_int_equal(once__engine_sweep_once(env.e), ONCE_OK);
    assert_int_equal(updates(), writes + 1);
    once_record after;
    fx_load(env.store, P, tid, &after);
    assert_int_equal(after.version, before.version + 1);
    assert_int_equal(after.generation, before.generation);
    assert_int_equal(after.fence, before.fence);
    assert_int_equal(after.state, before.state);
    assert_string_equal(after.task_json, before.task_json);
    once_record_clear(&after);
    once_record_clear(&before);
    json_t *j = fx_journal_of(env.store, P, tid);
    assert_int_equal(fx_num(json_object_get(j, "replays"), "n"), 5);
    assert_true(fx_num(json_object_get(j, "replays"), "last") > 0);
    json_t *reused = json_object_get(json_object_get(j, "refused"), "MESSAGE_ID_REUSED");
    assert_int_equal(fx_num(reused, "n"), 1);
    /* The turn that ran it, from its own writes. */
    json_t *turn = fx_journal_entry(j, "turn", 0, NULL);
    assert_non_null(turn);
    assert_string_equal(fx_str(turn, "replica"), "replica-a");
    assert_int_equal(fx_num(turn, "fence"), 1);
    assert_false(json_is_true(json_object_get(turn, "resumed")));
    assert_string_equal(fx_str(turn, "result"), "TASK_STATE_COMPLETED");
    json_decref(j);

    /* The inspector's timeline shows them: the count, a replay entry, the
     * refusal by reason, the turn. */
    json_t *tl = NULL;
    assert_int_equal(once__engine_inspect(env.e, P, tid, &tl), ONCE_OK);
    assert_int_equal(fx_num(json_object_get(tl, "replays"), "count"), 5);
    json_t *rp = fx_journal_entry(tl, "replay", 0, NULL);
    assert_non_null(rp);
    assert_string_equal(fx_str(rp, "summary"), "replayed 5 times");
    json_t *rf = fx_journal_entry(tl, "refusal", 0, NULL);
    assert_non_null(rf);
    assert_string_equal(fx_str(rf, "reason"), "MESSAGE_ID_REUSED");
    assert_int_equal(fx_num(rf, "count"), 1);
    json_t *tt = fx_journal_entry(tl, "turn", 0, NULL);
    assert_non_null(tt);
    assert_non_null(strstr(fx_str(tt, "summary"), "new turn on replica-a, fence 1"));
    json_decref(tl);

    /* Nothing held: the next sweep writes nothing; counts add up. */
    assert_int_equal(once__engine_sweep_once(env.e), ONCE_OK);
    assert_int_equal(updates(), writes + 1);
    assert_int_equal(fx_send(env.e, P, m, 0, 0, &res), ONCE_OK);
    fx_res_clear(&res);
    assert_int_equal(once__engine_sweep_once(env.e), ONCE_OK);
    j = fx_journal_of(env.store, P, tid);
    assert_int_equal(fx_num(json_object_get(j, "replays"), "n"), 6);
    json_decref(j);

    json_decref(other);
    json_decref(m);
    fx_env_close(&env);
}

/* A replay of a task whose turn holds a live lease is counted, but not
 * flushed while the lease lives: a journal-only update writes back the
 * lease_until it loaded, and a renewal (which does not move the version)
 * landing between its load and its CAS would be undone. Later passes do
 * not load the task again until its lease runs out or it is written; once
 * the turn ends (a write), the next sweep writes the count. */
static void live_lease_waits(void **state)
{
    (void)state;
    fx_env env;
    open_counted(&env);
    json_t *m = fx_msg("m-b", "block", NULL, NULL);
    once_send_res res;
    assert_int_equal(fx_send(env.e, P, m, 0, 1, &res), ONCE_OK);
    char tid[ONCE_ID_MAX + 1];
    snprintf(tid, sizeof tid, "%s", res.task_id);
    fx_res_clear(&res);
    fx_wait_blocked(&env.fx, 1); /* the turn runs, holding its lease */

    int writes = updates();
    assert_int_equal(fx_send(env.e, P, m, 0, 1, &res), ONCE_OK);
    assert_int_equal(res.replayed, 1);
    fx_res_clear(&res);
    assert_int_equal(once__engine_sweep_once(env.e), ONCE_OK);
    assert_int_equal(updates(), writes); /* the sweep passed; nothing written */
    /* Nor does the next pass load the task again while its lease runs:
     * the count waits for the lease's end or a write of the task. */
    int loads = __atomic_load_n(&wr.loads, __ATOMIC_SEQ_CST);
    assert_int_equal(once__engine_sweep_once(env.e), ONCE_OK);
    assert_int_equal(__atomic_load_n(&wr.loads, __ATOMIC_SEQ_CST), loads);
    json_t *j = fx_journal_of(env.store, P, tid);
    assert_null(json_object_get(j, "replays"));
    json_decref(j);

    fx_open_gate(&env.fx);
    fx_wait_state(env.store, P, tid, ONCE_STATE_COMPLETED);
    fx_wait_done(&env.fx, 1);
    fx_settle(env.e, env.store, P);
    assert_int_equal(once__engine_sweep_once(env.e), ONCE_OK);
    j = fx_journal_of(env.store, P, tid);
    assert_int_equal(fx_num(json_object_get(j, "replays"), "n"), 1);
    json_decref(j);
    json_decref(m);
    fx_env_close(&env);
}

/* 100 takeovers of one record: the newest 64 entries stay, 36 are counted
 * as dropped, and the text stays within ONCE_JOURNAL_MAX. */
static void journal_is_bounded(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    once_record cur, next;
    memset(&cur, 0, sizeof cur);
    memset(cur.lease_owner, 'o', ONCE_OWNER_MAX);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(once_record_copy(&next, &cur), ONCE_OK);
        next.fence = cur.fence + 1;
        assert_int_equal(once__journal_takeover(env.e, &cur, &next), ONCE_OK);
        once_record_clear(&cur);
        cur = next;
        memset(&next, 0, sizeof next);
    }
    assert_true(strlen(cur.journal) <= ONCE_JOURNAL_MAX);
    json_t *j = json_loads(cur.journal, 0, NULL);
    assert_non_null(j);
    json_t *ent = json_object_get(j, "entries");
    assert_int_equal(json_array_size(ent), 64);
    assert_int_equal(fx_num(j, "dropped"), 36);
    assert_int_equal(fx_num(json_array_get(ent, 63), "newFence"), 100); /* the newest */
    assert_int_equal(fx_num(json_array_get(ent, 0), "newFence"), 37);
    json_decref(j);
    once_record_clear(&cur);
    fx_env_close(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(replays_counted_then_flushed),
        cmocka_unit_test(live_lease_waits),
        cmocka_unit_test(journal_is_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
