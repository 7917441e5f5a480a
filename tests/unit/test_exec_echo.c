/*
 * test_exec_echo.c -- the built-in echo executor through a real engine on
 * the memory: store: every route (plain text, ask + continuation, sleep,
 * cancel during sleep, fail, bad sleep) ends in the state and the exact
 * A2A JSON the e2e tests and the README quickstart rely on; and echo is
 * never a silent default (an engine without an executor is refused).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "engine/engine.h"
#include "once/executor.h"
#include "once/store.h"
#include "timeout.h"

typedef struct fx {
    once_store *store;
    once__engine *engine;
    int msgno;
} fx;

static int setup(void **state)
{
    static fx f;
    once__engine_config cfg;
    char err[256];

    memset(&f, 0, sizeof f);
    assert_int_equal(once_store_open("memory:", NULL, &f.store, err, sizeof err), ONCE_OK);
    memset(&cfg, 0, sizeof cfg);
    cfg.store = f.store;
    cfg.executor = once_executor_echo();
    cfg.replica_id = "test";
    cfg.workers = 2;
    cfg.max_wait_ms = 10000;
    assert_int_equal(once__engine_new(&cfg, &f.engine, err, sizeof err), ONCE_OK);
    assert_int_equal(once__engine_start(f.engine), ONCE_OK);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    once__engine_free(f->engine);
    once_store_close(f->store);
    return 0;
}

/* Send text (a first message when task_id is NULL); returns the Task. */
static json_t *send_text(fx *f, const char *task_id, const char *text, int immediately,
                         char out_id[ONCE_ID_MAX + 1])
{
    char mid[32];
    once_send_req req;
    once_send_res res;
    json_t *m, *task;

    snprintf(mid, sizeof mid, "echo-%d", ++f->msgno);
    m = json_pack("{s:s, s:s, s:[{s:s}]}", "messageId", mid, "role", "ROLE_USER", "parts",
                  "text", text);
    if (task_id)
        json_object_set_new(m, "taskId", json_string(task_id));
    memset(&req, 0, sizeof req);
    req.principal = "bob";
    req.message = m;
    req.task_id = task_id;
    req.return_immediately = immediately;
    req.history_length = -1;
    memset(&res, 0, sizeof res);
    assert_int_equal(once__engine_send(f->engine, &req, &res), ONCE_OK);
    json_decref(m);
    if (out_id)
        snprintf(out_id, ONCE_ID_MAX + 1, "%s", res.task_id);
    task = json_incref(json_object_get(res.result, "task"));
    assert_non_null(task);
    json_decref(res.result);
    return task;
}

static once_state state_of(const json_t *task)
{
    return once_state_parse(
        json_string_value(json_object_get(json_object_get(task, "status"), "state")));
}

static const char *status_text(const json_t *task)
{
    json_t *parts = json_object_get(
        json_object_get(json_object_get(task, "status"), "message"), "parts");
    const char *s = json_string_value(json_object_get(json_array_get(parts, 0), "text"));
    return s ? s : "";
}

/* The task's artifacts must be exactly [{"artifactId":"echo","name":"echo",
 * "parts":[{"text": text}]}]. */
static void expect_echo_artifact(const json_t *task, const char *text)
{
    json_t *want = json_pack("[{s:s, s:s, s:[{s:s}]}]", "artifactId", "echo", "name", "echo",
                             "parts", "text", text);
    json_t *got = json_object_get(task, "artifacts");
    if (!json_equal(want, got)) {
        char *g = json_dumps(got, JSON_COMPACT);
        fail_msg("artifacts %s", g ? g : "(none)");
    }
    json_decref(want);
}

static void test_plain_text_echoes(void **state)
{
    json_t *task = send_text(*state, NULL, "hello, world", 0, NULL);
    assert_int_equal(state_of(task), ONCE_STATE_COMPLETED);
    expect_echo_artifact(task, "hello, world");
    json_decref(task);
}

static void test_ask_then_answer(void **state)
{
    char id[ONCE_ID_MAX + 1];
    json_t *task = send_text(*state, NULL, "ask:Which jurisdiction?", 0, id);

    assert_int_equal(state_of(task), ONCE_STATE_INPUT_REQUIRED);
    assert_string_equal(status_text(task), "Which jurisdiction?");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(task, "status"), "message"), "role")),
                        "ROLE_AGENT");
    assert_null(json_object_get(task, "artifacts"));
    json_decref(task);

    /* the answer is echoed, even one that looks like a command */
    task = send_text(*state, id, "fail", 0, NULL);
    assert_int_equal(state_of(task), ONCE_STATE_COMPLETED);
    expect_echo_artifact(task, "fail");
    json_decref(task);
}

static void test_sleep_then_complete(void **state)
{
    int64_t t0 = once_monotonic_ms();
    json_t *task = send_text(*state, NULL, "sleep:0.3", 0, NULL);

    assert_true(once_monotonic_ms() - t0 >= 300);
    assert_int_equal(state_of(task), ONCE_STATE_COMPLETED);
    expect_echo_artifact(task, "sleep:0.3");
    json_decref(task);
}

static void test_sleep_is_cancelable(void **state)
{
    fx *shared = *state, f = *shared;
    char id[ONCE_ID_MAX + 1], err[256];
    once__engine_config cfg;
    once_state st = ONCE_STATE_UNKNOWN;
    int64_t exp, until;
    json_t *task, *got = NULL;

    /* An engine of its own with one worker: a task sent after the sleeper
     * runs only once the sleeper's turn is over. */
    memset(&cfg, 0, sizeof cfg);
    cfg.store = shared->store;
    cfg.executor = once_executor_echo();
    cfg.replica_id = "test-one-worker";
    cfg.workers = 1;
    cfg.max_wait_ms = 10000;
    assert_int_equal(once__engine_new(&cfg, &f.engine, err, sizeof err), ONCE_OK);
    assert_int_equal(once__engine_start(f.engine), ONCE_OK);
    f.msgno = shared->msgno + 1000;   /* message IDs of its own */

    task = send_text(&f, NULL, "sleep:30", 1, id);
    json_decref(task);
    /* let it start sleeping */
    until = once_monotonic_ms() + tt_ms(2000);
    do {
        assert_int_equal(once__engine_get(f.engine, "bob", id, -1, &got, &exp), ONCE_OK);
        st = state_of(got);
        json_decref(got);
        if (st != ONCE_STATE_WORKING)
            tt_nap_ms(10);
    } while (st != ONCE_STATE_WORKING && once_monotonic_ms() < until);
    assert_int_equal(st, ONCE_STATE_WORKING);
    assert_int_equal(once__engine_cancel(f.engine, "bob", id, &got, &st, &exp), ONCE_OK);
    json_decref(got);
    /* nothing of the sleeper lands: once the next task through the one
     * worker completed, the sleeper's turn is over, and the task stayed
     * canceled, with no artifact */
    task = send_text(&f, NULL, "after the sleeper", 0, NULL);
    assert_int_equal(state_of(task), ONCE_STATE_COMPLETED);
    json_decref(task);
    assert_int_equal(once__engine_get(f.engine, "bob", id, -1, &got, &exp), ONCE_OK);
    assert_int_equal(state_of(got), ONCE_STATE_CANCELED);
    assert_null(json_object_get(got, "artifacts"));
    json_decref(got);
    once__engine_free(f.engine);
    shared->msgno = f.msgno;
}

static void test_fail_and_bad_sleep(void **state)
{
    json_t *task = send_text(*state, NULL, "fail", 0, NULL);
    assert_int_equal(state_of(task), ONCE_STATE_FAILED);
    assert_string_equal(status_text(task), "echo: asked to fail");
    json_decref(task);

    task = send_text(*state, NULL, "sleep:soon", 0, NULL);
    assert_int_equal(state_of(task), ONCE_STATE_FAILED);
    assert_non_null(strstr(status_text(task), "sleep:N"));
    json_decref(task);
}

/* Echo is only ever chosen: an engine given no executor refuses to start
 * rather than answering every task with an echo nobody asked for. */
static void test_no_executor_is_refused(void **state)
{
    (void)state;
    once_store *s = NULL;
    assert_int_equal(once_store_open("memory:", NULL, &s, NULL, 0), ONCE_OK);
    once__engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.store = s;
    char err[256] = "";
    once__engine *e = (once__engine *)&cfg; /* must come back NULL */
    assert_int_equal(once__engine_new(&cfg, &e, err, sizeof err), ONCE_EINVAL);
    assert_null(e);
    assert_non_null(strstr(err, "executor"));
    const once_executor no_run = {.name = "no-run"};
    cfg.executor = &no_run;
    assert_int_equal(once__engine_new(&cfg, &e, err, sizeof err), ONCE_EINVAL);
    cfg.executor = once_executor_echo();
    assert_int_equal(once__engine_new(&cfg, &e, err, sizeof err), ONCE_OK);
    once__engine_free(e);
    once_store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_text_echoes),  cmocka_unit_test(test_ask_then_answer),
        cmocka_unit_test(test_sleep_then_complete), cmocka_unit_test(test_sleep_is_cancelable),
        cmocka_unit_test(test_fail_and_bad_sleep),
        cmocka_unit_test(test_no_executor_is_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
