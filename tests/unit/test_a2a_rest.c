/*
 * test_a2a_rest.c -- the HTTP+JSON binding of the codec (src/a2a/rest.c)
 * over the scripted backend: each route reaches its method with the params
 * its path, query and body make; the answer carries no JSON-RPC envelope;
 * errors are AIP-193 with the section 5.4 status; and an allocation fault
 * sweep over every route: at each failing allocation the answer is the one
 * given without the fault, a whole 500 INTERNAL AIP-193 error, or
 * ONCE_ENOMEM (the HTTP layer answers 500), and nothing leaks (ASan).
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

static answer rest(once__a2a *a, const char *method, const char *path, const char *const *query,
                   const char *body)
{
    once__a2a_rest_request req = {.base = {.principal = "alice",
                                          .version = "1.0",
                                          .body = body ? body : "",
                                          .len = body ? strlen(body) : 0},
                                 .method = method,
                                 .path = path,
                                 .query = query};
    once__a2a_response r;
    int rc = once__a2a_rest_handle(a, &req, &r);
    return fake_keep(rc, &r);
}

/* error.status and details[0].reason of an AIP-193 body ("" if absent). */
static void aip193(const answer *got, int http, const char *status, const char *reason)
{
    json_t *doc = json_loads(got->body, 0, NULL);
    const json_t *err = json_object_get(doc, "error");
    const json_t *info = json_array_get(json_object_get(err, "details"), 0);
    assert_int_equal(got->rc, ONCE_OK);
    assert_int_equal(got->http_status, http);
    assert_null(json_object_get(doc, "jsonrpc"));
    assert_int_equal(json_integer_value(json_object_get(err, "code")), http);
    assert_string_equal(json_string_value(json_object_get(err, "status")), status);
    assert_string_equal(json_string_value(json_object_get(info, "reason")), reason);
    json_decref(doc);
}

static const char task_json[] = "{\"id\":\"t-1\",\"contextId\":\"c-1\",\"status\":{\"state\":"
                                "\"TASK_STATE_WORKING\"}}";

static void routes_reach_their_methods(void **state)
{
    (void)state;
    fake f;
    memset(&f, 0, sizeof f);
    once__a2a *a = fake_codec(&f, 0, NULL);
    f.result = json_loads(task_json, 0, NULL);

    const char *q1[] = {"historyLength", "3", NULL};
    answer got = rest(a, "GET", "/tasks/t-1", q1, NULL);
    assert_int_equal(got.http_status, 200);
    assert_string_equal(f.sent_task_id, "t-1");
    assert_int_equal(f.sent_history, 3);
    json_t *doc = json_loads(got.body, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(doc, "id")), "t-1"); /* no envelope */
    json_decref(doc);
    free(got.body);

    got = rest(a, "GET", "/acme/tasks/t-2", NULL, NULL); /* below a tenant */
    assert_int_equal(got.http_status, 200);
    assert_string_equal(f.sent_task_id, "t-2");
    free(got.body);

    f.state = ONCE_STATE_CANCELED;
    got = rest(a, "POST", "//tasks/t-3:cancel", NULL, NULL); /* "//": a joined base URL */
    assert_int_equal(got.http_status, 200);
    assert_string_equal(f.sent_task_id, "t-3");
    free(got.body);

    json_decref(f.result);
    f.result = json_loads("[]", 0, NULL);
    const char *q2[] = {"pageSize", "7", "status", "working", "A2A-Version", "1.0", NULL};
    got = rest(a, "GET", "/tasks", q2, NULL);
    assert_int_equal(got.http_status, 200);
    assert_int_equal(f.sent_list.page_size, 7);
    assert_int_equal(f.sent_list.state, ONCE_STATE_WORKING);
    free(got.body);

    f.verdict = ONCE_V_REGISTER;
    f.state = ONCE_STATE_COMPLETED;
    json_decref(f.result);
    f.result = json_pack("{s:o}", "task", json_loads(task_json, 0, NULL));
    got = rest(a, "POST", "/message:send", NULL,
               "{\"message\":{\"messageId\":\"m-1\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":"
               "\"hi\"}]},\"configuration\":{\"returnImmediately\":true}}");
    assert_int_equal(got.http_status, 200);
    assert_int_equal(f.sent_immediately, 1);
    free(got.body);

    once__a2a_free(a);
    fake_reset(&f);
}

static void refusals(void **state)
{
    (void)state;
    fake f;
    memset(&f, 0, sizeof f);
    once__a2a *a = fake_codec(&f, 0, NULL);
    answer got;

    f.rc = ONCE_ENOTFOUND;
    got = rest(a, "GET", "/tasks/t-9", NULL, NULL);
    aip193(&got, 404, "NOT_FOUND", "TASK_NOT_FOUND");
    free(got.body);
    f.rc = ONCE_ESTORE;
    got = rest(a, "GET", "/tasks/t-9", NULL, NULL);
    aip193(&got, 503, "UNAVAILABLE", "STORE_UNAVAILABLE");
    free(got.body);
    f.rc = ONCE_OK;

    const char *bad_q[] = {"colour", "red", NULL};
    got = rest(a, "GET", "/tasks", bad_q, NULL);
    aip193(&got, 400, "INVALID_ARGUMENT", "INVALID_PARAMS");
    free(got.body);
    const char *bad_utf8[] = {"contextId", "\xff", NULL};
    got = rest(a, "GET", "/tasks", bad_utf8, NULL);
    aip193(&got, 400, "INVALID_ARGUMENT", "INVALID_PARAMS");
    free(got.body);
    got = rest(a, "POST", "/tasks/t-1/pushNotificationConfigs", NULL,
               "{\"taskId\":\"t-2\",\"url\":\"https://example.com/h\"}");
    aip193(&got, 400, "INVALID_ARGUMENT", "INVALID_PARAMS");
    free(got.body);
    got = rest(a, "POST", "/message:send", NULL, "{\"message\":");
    aip193(&got, 400, "INVALID_ARGUMENT", "PARSE_ERROR");
    free(got.body);
    got = rest(a, "GET", "/extendedAgentCard", NULL, NULL);
    aip193(&got, 400, "FAILED_PRECONDITION", "EXTENDED_AGENT_CARD_NOT_CONFIGURED");
    free(got.body);
    got = rest(a, "PUT", "/tasks/t-1", NULL, NULL);
    aip193(&got, 405, "UNIMPLEMENTED", "METHOD_NOT_ALLOWED");
    free(got.body);
    got = rest(a, "GET", "/nothing/here/at/all", NULL, NULL);
    aip193(&got, 404, "NOT_FOUND", "NOT_FOUND");
    free(got.body);
    assert_int_equal(f.calls, 2); /* only the two GetTask calls reached the backend */

    assert_true(once__a2a_rest_known("/tasks/t-1/pushNotificationConfigs/c-1"));
    assert_true(once__a2a_rest_known("/acme/message:stream"));
    assert_false(once__a2a_rest_known("/"));
    assert_false(once__a2a_rest_known("/tasks/t-1/elsewhere"));
    once__a2a_free(a);
    fake_reset(&f);
}

/* A whole AIP-193 500 INTERNAL error. */
static int internal_error(const answer *got, const answer *want)
{
    (void)want;
    json_t *g = json_loads(got->body, 0, NULL);
    const json_t *err = json_object_get(g, "error");
    const json_t *info = json_array_get(json_object_get(err, "details"), 0);
    int ok = got->rc == ONCE_OK && got->http_status == 500 &&
             json_integer_value(json_object_get(err, "code")) == 500 &&
             json_is_string(json_object_get(err, "message")) &&
             json_is_object(json_object_get(info, "metadata")) &&
             strcmp(json_string_value(json_object_get(info, "reason")), "INTERNAL") == 0;
    json_decref(g);
    return ok;
}

typedef struct rest_call {
    once__a2a *a;
    const char *method, *path, *body;
    const char *const *query;
} rest_call;

static answer run_rest(void *arg)
{
    rest_call *c = arg;
    return rest(c->a, c->method, c->path, c->query, c->body);
}

static void sweep(const char *what, const char *method, const char *path,
                  const char *const *query, const char *body, int rc, const char *result_json)
{
    fake f;
    once__a2a *a = fake_scripted(&f, rc, result_json);
    assert_non_null(a);
    answer want = rest(a, method, path, query, body);
    assert_int_equal(want.rc, ONCE_OK);
    rest_call c = {a, method, path, body, query};
    fake_fault_sweep(what, run_rest, &c, &want, internal_error);
    free(want.body);
    once__a2a_free(a);
    fake_reset(&f);
}

static void fault_sweep(void **state)
{
    (void)state;
    const char *q[] = {"historyLength", "2", NULL};
    sweep("GET /tasks/{id}", "GET", "/tenant-1/tasks/t-1", q, NULL, ONCE_OK, task_json);
    const char *lq[] = {"pageSize", "2", "includeArtifacts", "true", NULL};
    sweep("GET /tasks", "GET", "/tasks", lq, NULL, ONCE_OK, "[]");
    sweep("POST /message:send", "POST", "/message:send", NULL,
          "{\"message\":{\"messageId\":\"m-1\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":"
          "\"a text longer than sixteen bytes\"}],\"taskId\":\"t-1\"}}",
          ONCE_OK, "{\"task\":{\"id\":\"t-1\",\"contextId\":\"c-1\",\"status\":{\"state\":"
                   "\"TASK_STATE_COMPLETED\"}}}");
    sweep("TASK_NOT_FOUND", "GET", "/tasks/t-missing", NULL, NULL, ONCE_ENOTFOUND, NULL);
    const char *bad[] = {"colour", "red", NULL};
    sweep("unknown query parameter", "GET", "/tasks", bad, NULL, ONCE_OK, NULL);
    sweep("parse error", "POST", "/message:send", NULL, "{\"message\":", ONCE_OK, NULL);
    sweep("405", "DELETE", "/tasks", NULL, NULL, ONCE_OK, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(routes_reach_their_methods),
        cmocka_unit_test(refusals),
        cmocka_unit_test(fault_sweep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
