/*
 * test_engine_retention.c -- retention with a jumped clock (finished ->
 * TASK_EXPIRED after the retention window -> unknown after the tombstone
 * window; unfinished tasks are kept), compaction (a finished task's
 * events, read back through the engine), and ListTasks pagination, filters
 * and principal isolation.
 */
#include "core/generation.h"
#include "unit/engine_fixture.h"

#define HOUR (3600LL * 1000)

static const char *P = "alice";

static void test_retention(void **state)
{
    (void)state;
    once__engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.retention_ms = 72 * HOUR;
    cfg.tombstone_ms = 30 * 24 * HOUR;
    cfg.sweep_interval_ms = 3600 * 1000;
    fx_env env;
    fx_env_open(&env, &cfg, 1);
    assert_int_equal(once__engine_retention_ms(env.e), 72 * HOUR);
    assert_int_equal(once__engine_tombstone_ms(env.e), 30 * 24 * HOUR);

    once_send_res res;
    json_t *done = fx_msg("m-1", "hello", NULL, NULL);
    assert_int_equal(fx_send(env.e, P, done, 0, 0, &res), ONCE_OK);
    assert_string_equal(fx_state(&res), "TASK_STATE_COMPLETED");
    char tid[ONCE_ID_MAX + 1];
    snprintf(tid, sizeof tid, "%s", res.task_id);
    fx_res_clear(&res);
    json_t *waiting = fx_msg("m-2", "ask:q", NULL, NULL);
    assert_int_equal(fx_send(env.e, P, waiting, 0, 0, &res), ONCE_OK);
    char wid[ONCE_ID_MAX + 1];
    snprintf(wid, sizeof wid, "%s", res.task_id);
    fx_res_clear(&res);

    /* Just inside the window: still there. */
    once_manual_clock_advance(&env.clock, 72 * HOUR - 1000);
    assert_int_equal(once__engine_sweep_once(env.e), ONCE_OK);
    json_t *task = NULL;
    assert_int_equal(once__engine_get(env.e, P, tid, -1, &task, NULL), ONCE_OK);
    json_decref(task);

    once_manual_clock_advance(&env.clock, 2000);
    int64_t swept_at = once_now(&env.clock.base);
    assert_int_equal(once__engine_sweep_once(env.e), ONCE_OK);
    int64_t expired_at = 0;
    task = NULL;
    assert_int_equal(once__engine_get(env.e, P, tid, -1, &task, &expired_at), ONCE_ETOMBSTONE);
    assert_null(task);
    assert_int_equal(expired_at, swept_at);
    /* A replayed send is TASK_EXPIRED, never a re-execution. */
    assert_int_equal(fx_send(env.e, P, done, 0, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_TASK_EXPIRED);
    assert_int_equal(res.expired_at, swept_at);
    assert_string_equal(res.task_id, tid);
    json_t *other = fx_msg("m-3", "more", tid, NULL);
    assert_int_equal(fx_send(env.e, P, other, 1, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_TASK_EXPIRED);
    expired_at = 0;
    assert_int_equal(once__engine_cancel(env.e, P, tid, NULL, NULL, &expired_at), ONCE_ETOMBSTONE);
    assert_int_equal(expired_at, swept_at);
    assert_int_equal(fx_runs(&env.fx), 2);
    /* The interrupted task is not finished: kept in full. */
    assert_int_equal(once__engine_get(env.e, P, wid, -1, &task, NULL), ONCE_OK);
    json_decref(task);

    once__engine_stats st;
    once__engine_get_stats(env.e, &st);
    assert_int_equal(st.swept, 1);
    assert_int_equal(st.purged, 0);

    once_manual_clock_advance(&env.clock, 30 * 24 * HOUR + 1000);
    assert_int_equal(once__engine_sweep_once(env.e), ONCE_OK);
    assert_int_equal(once__engine_get(env.e, P, tid, -1, &task, NULL), ONCE_ENOTFOUND);
    once__engine_get_stats(env.e, &st);
    assert_int_equal(st.purged, 1);
    assert_int_equal(once__engine_get(env.e, P, wid, -1, &task, NULL), ONCE_OK);
    json_decref(task);

    json_decref(done);
    json_decref(waiting);
    json_decref(other);
    fx_env_close(&env);
}

/* Collect every page; returns the number of tasks seen. */
static size_t list_all(once__engine *e, const char *principal, size_t page_size,
                       const char *context_id, once_state state, char ids[][ONCE_ID_MAX + 1],
                       size_t max)
{
    char token[256] = "";
    size_t n = 0;
    int pages = 0;
    for (;;) {
        once_list_req req;
        memset(&req, 0, sizeof req);
        req.principal = principal;
        req.page_size = page_size;
        req.page_token = token[0] ? token : NULL;
        req.context_id = context_id;
        req.state = state;
        req.history_length = 0;
        json_t *tasks = NULL;
        char next[256];
        assert_int_equal(once__engine_list(e, &req, &tasks, next), ONCE_OK);
        assert_true(json_array_size(tasks) <= (page_size ? page_size : 50));
        size_t i;
        json_t *t;
        json_array_foreach(tasks, i, t) {
            assert_true(n < max);
            assert_null(json_object_get(t, "history"));
            assert_true(once__generation_of(t) > 0);
            snprintf(ids[n++], ONCE_ID_MAX + 1, "%s", json_string_value(json_object_get(t, "id")));
        }
        json_decref(tasks);
        pages++;
        assert_true(pages < 100);
        if (next[0] == '\0')
            break;
        snprintf(token, sizeof token, "%s", next);
    }
    return n;
}

static void test_list(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 1);   /* one instant: order falls back to task_id */
    once_send_res res;
    for (int i = 0; i < 7; i++) {
        char mid[16], tid[16];
        snprintf(mid, sizeof mid, "m-%d", i);
        snprintf(tid, sizeof tid, "t-%d", i);
        json_t *m = fx_msg(mid, i < 2 ? "ask:q" : "done", tid, i % 2 ? "ctx-odd" : NULL);
        assert_int_equal(fx_send(env.e, P, m, 1, 0, &res), ONCE_OK);
        assert_int_equal(res.verdict, ONCE_V_REGISTER);
        fx_res_clear(&res);
        json_decref(m);
    }
    for (int i = 0; i < 3; i++) {
        char mid[16], tid[16];
        snprintf(mid, sizeof mid, "b-%d", i);
        snprintf(tid, sizeof tid, "t-%d", i);   /* same IDs, other tenant */
        json_t *m = fx_msg(mid, "done", tid, NULL);
        assert_int_equal(fx_send(env.e, "bob", m, 1, 0, &res), ONCE_OK);
        fx_res_clear(&res);
        json_decref(m);
    }

    char ids[16][ONCE_ID_MAX + 1];
    size_t n = list_all(env.e, P, 3, NULL, ONCE_STATE_UNKNOWN, ids, 16);
    assert_int_equal(n, 7);
    for (size_t i = 0; i < n; i++) {
        char want[32];
        snprintf(want, sizeof want, "t-%zu", i);
        assert_string_equal(ids[i], want);   /* ascending, no gap, no repeat */
    }
    assert_int_equal(list_all(env.e, P, 7, NULL, ONCE_STATE_UNKNOWN, ids, 16), 7);
    assert_int_equal(list_all(env.e, P, 0, NULL, ONCE_STATE_UNKNOWN, ids, 16), 7);
    assert_int_equal(list_all(env.e, "bob", 2, NULL, ONCE_STATE_UNKNOWN, ids, 16), 3);
    assert_int_equal(list_all(env.e, "carol", 2, NULL, ONCE_STATE_UNKNOWN, ids, 16), 0);
    assert_int_equal(list_all(env.e, P, 2, NULL, ONCE_STATE_INPUT_REQUIRED, ids, 16), 2);
    assert_int_equal(list_all(env.e, P, 2, "ctx-odd", ONCE_STATE_UNKNOWN, ids, 16), 3);

    /* Malformed tokens and sizes are refused. */
    const char *bad[] = {"!!!", "A", "MTIz", "YWJjLnQtMQ", "MTIzLg", "LnQtMQ"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        once_list_req req;
        memset(&req, 0, sizeof req);
        req.principal = P;
        req.page_token = bad[i];
        json_t *tasks = NULL;
        char next[256];
        int rc = once__engine_list(env.e, &req, &tasks, next);
        if (rc != ONCE_EINVAL)
            fail_msg("token %s: %s", bad[i], once_errname(rc));
        assert_null(tasks);
    }
    once_list_req req;
    memset(&req, 0, sizeof req);
    req.principal = P;
    req.page_size = 101;
    json_t *tasks = NULL;
    char next[256];
    assert_int_equal(once__engine_list(env.e, &req, &tasks, next), ONCE_EINVAL);
    fx_env_close(&env);
}

/* On a store that compacts (SQLite with compact=0: at the first sweep), a
 * finished task keeps its last event alone, emptied; a reader behind it is
 * given the task as it ended at that generation, and a replay, GetTask and
 * the integrity check see nothing missing. */
static void test_compaction(void **state)
{
    (void)state;
    char dir[] = "/tmp/once-compact-XXXXXX", url[128];
    assert_non_null(mkdtemp(dir));
    snprintf(url, sizeof url, "sqlite:%s/c.db?compact=0", dir);
    once__engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.retention_ms = 72 * HOUR;
    assert_int_equal(setenv("ONCE_TEST_SWEEPER", "off", 1), 0);
    fx_env env;
    fx_env_open_url(&env, &cfg, 1, NULL, url);
    assert_int_equal(unsetenv("ONCE_TEST_SWEEPER"), 0);

    once_send_res res;
    json_t *m = fx_msg("m-1", "hello", NULL, NULL);
    assert_int_equal(fx_send(env.e, P, m, 0, 0, &res), ONCE_OK);
    char tid[ONCE_ID_MAX + 1];
    snprintf(tid, sizeof tid, "%s", res.task_id);
    fx_res_clear(&res);
    once_event_list l;
    assert_int_equal(once__engine_events_after(env.e, P, tid, 0, 0, &l), ONCE_OK);
    assert_true(l.n >= 2);
    int64_t g = l.v[l.n - 1].generation;
    once_event_list_clear(&l);

    once_manual_clock_advance(&env.clock, 1);
    assert_int_equal(once__engine_sweep_once(env.e), ONCE_OK);
    assert_int_equal(once_store_events(env.store, P, tid, 0, 0, &l), ONCE_OK);
    assert_int_equal(l.n, 1);   /* the store kept the last event, emptied */
    assert_int_equal(l.v[0].generation, g);
    assert_string_equal(l.v[0].payload, "");
    once_event_list_clear(&l);

    char stamp[64];
    snprintf(stamp, sizeof stamp, "\"generation\":%lld", (long long)g);
    for (int64_t after = 0; after < g; after += g - 1) {
        assert_int_equal(once__engine_events_after(env.e, P, tid, after, 0, &l), ONCE_OK);
        assert_int_equal(l.n, 1);
        assert_int_equal(l.v[0].generation, g);
        assert_true(strncmp(l.v[0].payload, "{\"task\":", 8) == 0);
        assert_non_null(strstr(l.v[0].payload, "TASK_STATE_COMPLETED"));
        assert_non_null(strstr(l.v[0].payload, "\"artifacts\""));
        assert_non_null(strstr(l.v[0].payload, stamp));
        once_event_list_clear(&l);
    }
    assert_int_equal(once__engine_events_after(env.e, P, tid, g, 0, &l), ONCE_OK);
    assert_int_equal(l.n, 0);
    once_event_list_clear(&l);

    once_check_report rep;
    assert_int_equal(once_store_check(env.store, &rep), ONCE_OK);
    assert_int_equal(rep.event_gaps + rep.bad_generation + rep.bad_state, 0);
    assert_string_equal(rep.first_problem, "");
    assert_int_equal(fx_send(env.e, P, m, 0, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REPLAY);
    assert_string_equal(fx_state(&res), "TASK_STATE_COMPLETED");
    fx_res_clear(&res);
    assert_int_equal(fx_runs(&env.fx), 1);

    json_decref(m);
    fx_env_close(&env);
    const char *files[] = {"c.db", "c.db-wal", "c.db-shm"};
    for (size_t i = 0; i < 3; i++) {
        char path[160];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        (void)unlink(path);
    }
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retention),
        cmocka_unit_test(test_compaction),
        cmocka_unit_test(test_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
