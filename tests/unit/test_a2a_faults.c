/*
 * test_a2a_faults.c -- an allocation fault sweep over the JSON-RPC codec
 * (src/a2a): each request below is handled with allocation i failing, for
 * i = 0, 1, ... until a run hits no fault. JSON values are allocations like
 * any other (src/core/alloc.c), so this fails the building of requests,
 * answers and errors too. What a client relies on, at every i:
 *   - the answer is exactly the one given without the fault (same status,
 *     same bytes), or a whole -32603 INTERNAL error for the request's id, or
 *     once__a2a_handle says ONCE_ENOMEM (the HTTP layer then answers 500):
 *     never a response with a member silently missing, never a parse error
 *     or invalid-params verdict for a well-formed request;
 *   - nothing leaks (ASan).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "a2a_fake.h"

typedef fake_answer answer;

static answer handle(once__a2a *a, const char *version, const char *body)
{
    once__a2a_request req = {
        .principal = "alice", .version = version, .body = body, .len = strlen(body)};
    once__a2a_response r;
    int rc = once__a2a_handle(a, &req, &r);
    return fake_keep(rc, &r);
}

typedef struct jsonrpc_call {
    once__a2a *a;
    const char *version, *body;
} jsonrpc_call;

static answer run_call(void *arg)
{
    jsonrpc_call *c = arg;
    return handle(c->a, c->version, c->body);
}

/* A whole JSON-RPC error -32603 INTERNAL for the request's id. */
static int internal_error(const answer *got, const answer *want)
{
    json_t *g = json_loads(got->body, 0, NULL), *w = json_loads(want->body, 0, NULL);
    const json_t *err = json_object_get(g, "error");
    const json_t *info = json_array_get(json_object_get(err, "data"), 0);
    int ok = got->rc == ONCE_OK && json_is_string(json_object_get(g, "jsonrpc")) &&
             strcmp(json_string_value(json_object_get(g, "jsonrpc")), "2.0") == 0 &&
             json_equal(json_object_get(g, "id"), json_object_get(w, "id")) &&
             json_integer_value(json_object_get(err, "code")) == ONCE_RPC_INTERNAL &&
             json_is_string(json_object_get(err, "message")) &&
             json_is_object(json_object_get(info, "metadata")) &&
             strcmp(json_string_value(json_object_get(info, "reason")), "INTERNAL") == 0;
    json_decref(g);
    json_decref(w);
    return ok;
}

/* Sweep one request with the fake answering rc / result. */
static void sweep(const char *what, const char *version, const char *body, int rc,
                  const char *result_json)
{
    fake f;
    once__a2a *a = fake_scripted(&f, rc, result_json);
    assert_non_null(a);
    answer want = handle(a, version, body);
    assert_int_equal(want.rc, ONCE_OK);
    jsonrpc_call c = {a, version, body};
    fake_fault_sweep(what, run_call, &c, &want, internal_error);
    free(want.body);
    once__a2a_free(a);
    fake_reset(&f);
}

static const char task_result[] =
    "{\"task\":{\"id\":\"t-1\",\"contextId\":\"c-1\",\"status\":{\"state\":"
    "\"TASK_STATE_COMPLETED\",\"timestamp\":\"2026-01-01T00:00:00.000Z\"},\"artifacts\":[{"
    "\"artifactId\":\"a-1\",\"parts\":[{\"text\":\"an answer longer than sixteen bytes\"}]}],"
    "\"history\":[{\"messageId\":\"m-1\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"hi\"}]}]}}";

static void send_message(void **state)
{
    (void)state;
    sweep("SendMessage", "1.0",
          "{\"jsonrpc\":\"2.0\",\"id\":\"request-id-longer-than-16\",\"method\":\"SendMessage\","
          "\"params\":{\"message\":{\"messageId\":\"m-1\",\"role\":\"ROLE_USER\","
          "\"parts\":[{\"text\":\"hi there, a text longer than sixteen bytes\"}],"
          "\"taskId\":\"t-1\"}}}",
          ONCE_OK, task_result);
}

static void legacy_send(void **state)
{
    (void)state;
    sweep("tasks/send", NULL,
          "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tasks/send\",\"params\":{\"id\":\"t-1\","
          "\"sessionId\":\"c-1\",\"message\":{\"role\":\"user\",\"parts\":[{\"type\":\"text\","
          "\"text\":\"hi\"}]}}}",
          ONCE_OK, task_result);
}

static void get_task(void **state)
{
    (void)state;
    sweep("GetTask", "1.0",
          "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"GetTask\",\"params\":{\"id\":\"t-1\"}}",
          ONCE_OK,
          "{\"id\":\"t-1\",\"contextId\":\"c-1\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}");
}

static void errors(void **state)
{
    (void)state;
    const char *get = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"GetTask\",\"params\":{\"id\":"
                      "\"t-missing\"}}";
    sweep("TASK_NOT_FOUND", "1.0", get, ONCE_ENOTFOUND, NULL);
    sweep("STORE_UNAVAILABLE", "1.0", get, ONCE_ESTORE, NULL);
    sweep("invalid params", "1.0",
          "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"SendMessage\",\"params\":{\"message\":"
          "{\"role\":\"ROLE_USER\",\"parts\":[]}}}",
          ONCE_OK, NULL);
    sweep("parse error", "1.0", "{\"jsonrpc\":\"2.0\",\"id\":5,", ONCE_OK, NULL);
}

static void list_tasks(void **state)
{
    (void)state;
    sweep("ListTasks", "1.0",
          "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ListTasks\",\"params\":{\"pageSize\":2}}",
          ONCE_OK,
          "[{\"id\":\"t-1\",\"contextId\":\"c-1\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}},"
          "{\"id\":\"t-2\",\"contextId\":\"c-1\",\"status\":{\"state\":\"TASK_STATE_FAILED\"}}]");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(send_message), cmocka_unit_test(legacy_send), cmocka_unit_test(get_task),
        cmocka_unit_test(errors),       cmocka_unit_test(list_tasks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
