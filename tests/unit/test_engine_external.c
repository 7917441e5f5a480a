/*
 * test_engine_external.c -- once__engine_external_artifact: a worker outside
 * the engine's turns that holds the current fence publishes its artifact
 * (record and event, generation + 1); one whose fence moved is refused with
 * ONCE_EFENCED and nothing of it is anywhere (record, events, version); a
 * task that is not working, a malformed artifact, an unknown task are
 * refused without a write.
 */
#include "unit/engine_fixture.h"

static const char *P = "alice";

/* A task parked in input-required with fence 1 ("ask:"), then continued
 * ("block" parks the fence-2 turn at the fixture's gate while working). */
static void park_then_continue(fx_env *env, const char *tid)
{
    once_send_res res;
    json_t *m = fx_msg("m-1", "ask:which law?", tid, NULL);
    assert_int_equal(fx_send(env->e, P, m, 1, 0, &res), ONCE_OK);
    assert_string_equal(fx_state(&res), "TASK_STATE_INPUT_REQUIRED");
    json_decref(m);
    fx_res_clear(&res);
    m = fx_msg("m-2", "block", tid, NULL);
    assert_int_equal(fx_send(env->e, P, m, 1, 1, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_CONTINUE);
    json_decref(m);
    fx_res_clear(&res);
    fx_wait_blocked(&env->fx, 1);
}

static size_t count_events(once_store *s, const char *tid, const char *needle)
{
    once_event_list ev;
    memset(&ev, 0, sizeof ev);
    assert_int_equal(once_store_events(s, P, tid, 0, 0, &ev), ONCE_OK);
    size_t n = 0;
    for (size_t i = 0; i < ev.n; i++)
        n += needle == NULL || strstr(ev.v[i].payload, needle) != NULL;
    once_event_list_clear(&ev);
    return n;
}

static void test_stale_fence_leaves_no_trace(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    park_then_continue(&env, "t-ext-1");
    once_record before;
    fx_load(env.store, P, "t-ext-1", &before);
    assert_int_equal(before.fence, 2);
    assert_int_equal(before.state, ONCE_STATE_WORKING);
    size_t nev = count_events(env.store, "t-ext-1", NULL);

    once_external_write w = {.principal = P,
                             .task_id = "t-ext-1",
                             .fence = 1,
                             .artifact_json =
                                 "{\"artifactId\":\"half\",\"parts\":[{\"text\":\"HALF-RESULT\"}]}",
                             .last_chunk = 1};
    once_external_result r;
    assert_int_equal(once__engine_external_artifact(env.e, &w, &r), ONCE_EFENCED);
    assert_int_equal(r.stored_fence, 2);
    assert_int_equal(r.state, ONCE_STATE_WORKING);
    assert_int_equal(r.generation, 0);

    once_record after;
    fx_load(env.store, P, "t-ext-1", &after);
    assert_int_equal(after.version, before.version);
    assert_int_equal(after.generation, before.generation);
    assert_null(strstr(after.task_json, "HALF-RESULT"));
    assert_int_equal(count_events(env.store, "t-ext-1", NULL), nev);
    assert_int_equal(count_events(env.store, "t-ext-1", "HALF-RESULT"), 0);
    once__engine_stats st;
    once__engine_get_stats(env.e, &st);
    assert_true(st.fenced_writes >= 1);
    once_record_clear(&before);
    once_record_clear(&after);

    /* The holder of the current fence writes through the same path. */
    w.fence = 2;
    w.artifact_json = "{\"artifactId\":\"full\",\"parts\":[{\"text\":\"FULL-RESULT\"}]}";
    assert_int_equal(once__engine_external_artifact(env.e, &w, &r), ONCE_OK);
    fx_load(env.store, P, "t-ext-1", &after);
    assert_int_equal(r.generation, after.generation);
    assert_int_equal(after.fence, 2);
    assert_non_null(strstr(after.task_json, "FULL-RESULT"));
    assert_int_equal(count_events(env.store, "t-ext-1", "FULL-RESULT"), 1);
    assert_int_equal(count_events(env.store, "t-ext-1", NULL), nev + 1);
    /* The lease still belongs to the turn's replica. */
    assert_string_equal(after.lease_owner, "replica-a");
    once_record_clear(&after);

    fx_open_gate(&env.fx);
    fx_wait_state(env.store, P, "t-ext-1", ONCE_STATE_COMPLETED);
    fx_env_close(&env);
}

static void test_refusals_write_nothing(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    once_send_res res;
    json_t *m = fx_msg("m-1", "ask:which law?", "t-ext-2", NULL);
    assert_int_equal(fx_send(env.e, P, m, 1, 0, &res), ONCE_OK);
    json_decref(m);
    fx_res_clear(&res);
    once_record before;
    fx_load(env.store, P, "t-ext-2", &before);

    const char *art = "{\"artifactId\":\"a\",\"parts\":[{\"text\":\"x\"}]}";
    once_external_write w = {
        .principal = P, .task_id = "t-ext-2", .fence = before.fence, .artifact_json = art};
    /* Parked in input-required: only a continuation may resume it. */
    assert_int_equal(once__engine_external_artifact(env.e, &w, NULL), ONCE_EILLEGAL);
    w.artifact_json = "{\"parts\":[]}";
    assert_int_equal(once__engine_external_artifact(env.e, &w, NULL), ONCE_EINVAL);
    w.artifact_json = "{\"parts\":[{\"text\":\"x\"}]}";
    w.append = 1; /* appending needs an artifactId */
    assert_int_equal(once__engine_external_artifact(env.e, &w, NULL), ONCE_EINVAL);
    w.append = 0;
    w.fence = 0;
    assert_int_equal(once__engine_external_artifact(env.e, &w, NULL), ONCE_EINVAL);
    w.fence = before.fence;
    w.artifact_json = art;
    w.task_id = "t-nobody";
    assert_int_equal(once__engine_external_artifact(env.e, &w, NULL), ONCE_ENOTFOUND);
    w.task_id = "t-ext-2";
    w.principal = "mallory"; /* another tenant's key is another task */
    assert_int_equal(once__engine_external_artifact(env.e, &w, NULL), ONCE_ENOTFOUND);

    once_record after;
    fx_load(env.store, P, "t-ext-2", &after);
    assert_int_equal(after.version, before.version);
    assert_int_equal(after.generation, before.generation);
    once_record_clear(&before);
    once_record_clear(&after);
    fx_env_close(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stale_fence_leaves_no_trace),
        cmocka_unit_test(test_refusals_write_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
