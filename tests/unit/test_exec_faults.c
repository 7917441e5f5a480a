/*
 * test_exec_faults.c -- an allocation fault sweep over the built-in echo
 * executor run by a real engine (src/exec/echo.c): fail the i-th
 * allocation of a send and the turn it starts, JSON values included
 * (src/core/alloc.c), for i = 0, 1, ... until a run hits no fault. What a
 * user of the agent relies on, at every i:
 *   - a task that completed carries the right answer (the artifact echoes
 *     the text sent), never a confident wrong one built from a message the
 *     executor could not read;
 *   - the store passes its integrity check; nothing leaks (ASan).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/alloc_int.h"
#include "engine/engine.h"
#include "once/executor.h"
#include "once/store.h"
#include "timeout.h"

#define TEXT "echo this text, longer than sixteen bytes"

typedef struct run {
    once_store *store;
    const char *task_id;
} run;

static int settled(void *arg)
{
    run *r = arg;
    once_record rec;
    if (once_store_load(r->store, "alice", r->task_id, &rec, NULL) != ONCE_OK)
        return 1; /* not registered: nothing will move */
    int done = once_state_terminal(rec.state) || once_state_interrupted(rec.state);
    once_record_clear(&rec);
    return done;
}

/* The echoed text of a completed task's artifact ("" when there is none)
 * and the task as stored (both cut to n bytes). */
static void answer_of(once_store *s, const char *task_id, once_state *state, char *out, char *task,
                      size_t n)
{
    once_record rec;
    out[0] = task[0] = '\0';
    *state = ONCE_STATE_UNKNOWN;
    if (once_store_load(s, "alice", task_id, &rec, NULL) != ONCE_OK)
        return;
    *state = rec.state;
    snprintf(task, n, "%s", rec.task_json);
    json_t *t = json_loads(rec.task_json, 0, NULL);
    const json_t *part = json_array_get(
        json_object_get(json_array_get(json_object_get(t, "artifacts"), 0), "parts"), 0);
    const char *text = json_string_value(json_object_get(part, "text"));
    snprintf(out, n, "%s", text != NULL ? text : "");
    json_decref(t);
    once_record_clear(&rec);
}

/* One run with allocation i failing. Returns 1 when no fault was hit. */
static int run_once(long i)
{
    once_store *s = NULL;
    assert_int_equal(once_store_open("memory:", NULL, &s, NULL, 0), ONCE_OK);
    once__engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.store = s;
    cfg.executor = once_executor_echo();
    cfg.replica_id = "faults";
    cfg.workers = 1;
    once__engine *e = NULL;
    assert_int_equal(once__engine_new(&cfg, &e, NULL, 0), ONCE_OK);
    assert_int_equal(once__engine_start(e), ONCE_OK);
    json_t *m = json_pack("{s:s, s:s, s:s, s:[{s:s}]}", "messageId", "m-1", "role", "ROLE_USER",
                          "taskId", "t-echo", "parts", "text", TEXT);
    assert_non_null(m);
    once_send_req req = {.principal = "alice",
                         .message = m,
                         .task_id = "t-echo",
                         .extension = 1,
                         .return_immediately = 1,
                         .history_length = -1};
    once_send_res res;
    memset(&res, 0, sizeof res);

    once__alloc_fail_after(i);
    int rc = once__engine_send(e, &req, &res);
    run r = {s, "t-echo"};
    if (rc == ONCE_OK)
        (void)tt_wait_until(settled, &r, 200); /* unsettled: nothing to check */
    long used = once__alloc_count();
    once__alloc_fail_after(-1);

    if (rc != ONCE_OK && rc != ONCE_ENOMEM)
        fail_msg("allocation %ld failed: send gave %s", i, once_errname(rc));
    json_decref(res.result);
    json_decref(m);
    once__engine_free(e);

    once_state st;
    char got[2048], task[2048];
    answer_of(s, "t-echo", &st, got, task, sizeof got);
    if (st == ONCE_STATE_COMPLETED && strcmp(got, TEXT) != 0)
        fail_msg("allocation %ld failed, yet the task completed with \"%s\": %s", i, got, task);
    once_check_report rep;
    assert_int_equal(once_store_check(s, &rep), ONCE_OK);
    if (rep.bad_generation || rep.event_gaps || rep.orphan_events || rep.bad_state)
        fail_msg("allocation %ld failed: store check: %s", i, rep.first_problem);
    once_store_close(s);
    return used <= i;
}

static void echo_under_allocation_faults(void **state)
{
    (void)state;
    long i;
    for (i = 0; i < 5000; i++)
        if (run_once(i))
            break;
    print_message("echo: %ld allocations swept\n", i);
    assert_true(i > 5 && i < 5000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(echo_under_allocation_faults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
