/*
 * test_a2a_errors.c -- how every engine outcome reaches the wire (docs/design.md
 * section 10): the exact code, ErrorInfo reason and metadata per verdict;
 * store failures as retryable 503s and never as verdicts; REPLAY flagged
 * for the Idempotent-Replayed header; the fixed "not supported" answers;
 * what the codec hands the engine (extension flag, legacy mode, blocking,
 * historyLength, principal); and the 0.1 shapes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "a2a_fake.h"

static fake F;
static once__a2a *A;

static int setup(void **state)
{
    (void)state;
    fake_reset(&F);
    A = fake_codec(&F, 0, NULL);
    return A ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    once__a2a_free(A);
    fake_reset(&F);
    return 0;
}

static const char send_body[] =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"SendMessage\",\"params\":{\"message\":"
    "{\"messageId\":\"m-1\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"hi\"}],"
    "\"taskId\":\"t-1\"}}}";

static json_t *send(const char *ext, once__a2a_response *r)
{
    json_t *doc = fake_call(A, "1.0", ext, send_body, r);
    assert_non_null(doc);
    return doc;
}

/* error.data of doc: A2A's error type first (domain a2a-protocol.org,
 * A2A 1.0 section 9.5) for an A2A code, then once's reason (domain once)
 * unless it is that type; a JSON-RPC code has once's reason alone. */
static void expect_error_infos(const json_t *doc, const char *a2a_type, const char *reason)
{
    const json_t *data = json_object_get(json_object_get(doc, "error"), "data");
    size_t want = a2a_type == NULL || strcmp(a2a_type, reason) != 0 ? 1 : 0;
    want += a2a_type != NULL;
    assert_int_equal(json_array_size(data), want);
    size_t i = 0;
    if (a2a_type != NULL) {
        const json_t *d = json_array_get(data, i++);
        assert_string_equal(json_string_value(json_object_get(d, "reason")), a2a_type);
        assert_string_equal(json_string_value(json_object_get(d, "domain")), "a2a-protocol.org");
        assert_string_equal(json_string_value(json_object_get(json_object_get(d, "metadata"),
                                                              "taskId")),
                            "t-1");
    }
    if (i < want) {
        const json_t *d = json_array_get(data, i);
        assert_string_equal(json_string_value(json_object_get(d, "reason")), reason);
        assert_string_equal(json_string_value(json_object_get(d, "domain")), "once");
    }
}

static void expect_send_error(once_verdict v, once_state st, int code, const char *reason)
{
    F.rc = ONCE_OK;
    F.verdict = v;
    F.state = st;
    F.expired_at = 1764676800000LL; /* 2025-12-02T12:00:00.000Z */
    once__a2a_response r;
    json_t *doc = send(NULL, &r);
    assert_int_equal(err_code(doc), code);
    assert_string_equal(err_reason(doc), reason);
    assert_string_equal(err_meta(doc, "taskId"), "t-1");
    expect_error_infos(doc,
                       code == -32001   ? "TASK_NOT_FOUND"
                       : code == -32004 ? "UNSUPPORTED_OPERATION"
                                        : NULL,
                       reason);
    assert_int_equal(r.http_status, 200);
    assert_false(r.replayed);
    if (v == ONCE_V_REJECT_BUSY || v == ONCE_V_REJECT_TERMINAL) {
        assert_string_equal(err_meta(doc, "state"), once_state_name(st));
        /* the human message names the state too */
        const char *msg =
            json_string_value(json_object_get(json_object_get(doc, "error"), "message"));
        assert_non_null(strstr(msg, once_state_name(st)));
    }
    if (v == ONCE_V_TASK_EXPIRED)
        assert_string_equal(err_meta(doc, "expiredAt"), "2025-12-02T12:00:00.000Z");
    if (v == ONCE_V_IDEMPOTENCY_CONFLICT)
        assert_string_equal(err_meta(doc, "messageId"), "m-1");
    json_decref(doc);
    once__a2a_response_clear(&r);
}

static void test_verdict_errors(void **state)
{
    (void)state;
    expect_send_error(ONCE_V_TASK_NOT_FOUND, 0, -32001, "TASK_NOT_FOUND");
    expect_send_error(ONCE_V_TASK_EXPIRED, 0, -32001, "TASK_EXPIRED");
    expect_send_error(ONCE_V_IDEMPOTENCY_CONFLICT, 0, -32602, "MESSAGE_ID_REUSED");
    expect_send_error(ONCE_V_REJECT_BUSY, ONCE_STATE_WORKING, -32004, "TASK_NOT_ACCEPTING_INPUT");
    expect_send_error(ONCE_V_REJECT_BUSY, ONCE_STATE_SUBMITTED, -32004,
                      "TASK_NOT_ACCEPTING_INPUT");
    expect_send_error(ONCE_V_REJECT_TERMINAL, ONCE_STATE_COMPLETED, -32004, "TASK_TERMINAL");
    expect_send_error(ONCE_V_REJECT_TERMINAL, ONCE_STATE_FAILED, -32004, "TASK_TERMINAL");
    expect_send_error(ONCE_V_REJECT_TERMINAL, ONCE_STATE_CANCELED, -32004, "TASK_TERMINAL");
    expect_send_error(ONCE_V_REJECT_TERMINAL, ONCE_STATE_REJECTED, -32004, "TASK_TERMINAL");
}

static void test_results_and_replay(void **state)
{
    (void)state;
    F.result = json_loads("{\"task\":{\"id\":\"t-1\",\"contextId\":\"c\",\"status\":{\"state\":"
                          "\"TASK_STATE_COMPLETED\"},\"history\":[{\"messageId\":\"a\"},"
                          "{\"messageId\":\"b\"},{\"messageId\":\"c\"}]}}",
                          0, NULL);
    once_verdict vs[] = {ONCE_V_REGISTER, ONCE_V_CONTINUE, ONCE_V_REPLAY};
    for (size_t i = 0; i < 3; i++) {
        F.verdict = vs[i];
        once__a2a_response r;
        json_t *doc = send(ONCE_A2A_EXTENSION_URI, &r);
        assert_null(json_object_get(doc, "error"));
        json_t *task = json_object_get(json_object_get(doc, "result"), "task");
        assert_string_equal(json_string_value(json_object_get(task, "id")), "t-1");
        assert_int_equal(r.replayed, vs[i] == ONCE_V_REPLAY);
        assert_int_equal(r.extension, 1);
        assert_int_equal(F.sent_extension, 1);
        json_decref(doc);
        once__a2a_response_clear(&r);
    }
    /* without the header the engine is told the extension is off */
    once__a2a_response r;
    json_t *doc = send("https://other/ext", &r);
    assert_int_equal(F.sent_extension, 0);
    assert_int_equal(r.extension, 0);
    assert_string_equal(F.sent_task_id, "t-1");
    assert_string_equal(F.sent_principal, "alice");
    assert_int_equal(F.sent_legacy, 0);
    assert_int_equal(F.sent_immediately, 0);
    assert_int_equal(F.sent_history, -1);
    json_decref(doc);
    once__a2a_response_clear(&r);

    /* configuration: historyLength trims, returnImmediately passes through */
    doc = fake_call(A, "1.0", NULL,
                    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"SendMessage\",\"params\":{"
                    "\"message\":{\"messageId\":\"m-2\",\"role\":\"ROLE_USER\",\"parts\":[{"
                    "\"text\":\"x\"}]},\"configuration\":{\"historyLength\":2,"
                    "\"returnImmediately\":true,\"acceptedOutputModes\":[\"text/plain\"]}}}",
                    &r);
    assert_int_equal(F.sent_history, 2);
    assert_int_equal(F.sent_immediately, 1);
    assert_string_equal(F.sent_task_id, "");
    json_t *hist =
        json_object_get(json_object_get(json_object_get(doc, "result"), "task"), "history");
    assert_int_equal(json_array_size(hist), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(hist, 0), "messageId")),
                        "b");
    json_decref(doc);
    once__a2a_response_clear(&r);
}

static void test_store_errors_are_retryable(void **state)
{
    (void)state;
    /* ECLOSED: a stopped engine (onced shutting down) applied nothing */
    const struct {
        int rc;
        const char *reason;
    } rows[] = {{ONCE_ESTORE, "STORE_UNAVAILABLE"},
                {ONCE_EBUSY, "STORE_UNAVAILABLE"},
                {ONCE_ECLOSED, "SHUTTING_DOWN"}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        F.rc = rows[i].rc;
        once__a2a_response r;
        json_t *doc = send(NULL, &r);
        assert_int_equal(err_code(doc), -32603);
        assert_string_equal(err_reason(doc), rows[i].reason);
        assert_string_equal(err_meta(doc, "retryable"), "true");
        assert_int_equal(r.http_status, 503);
        assert_int_equal(r.retry_after, 1);
        json_decref(doc);
        once__a2a_response_clear(&r);

        doc = fake_call(A, "1.0", NULL,
                        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"GetTask\",\"params\":"
                        "{\"id\":\"t\"}}",
                        &r);
        assert_string_equal(err_reason(doc), rows[i].reason);
        assert_int_equal(r.http_status, 503);
        json_decref(doc);
        once__a2a_response_clear(&r);
    }
    /* an engine EINVAL names its field */
    F.rc = ONCE_EINVAL;
    F.field = "message.contextId";
    once__a2a_response r;
    json_t *doc = send(NULL, &r);
    assert_int_equal(err_code(doc), -32602);
    assert_string_equal(err_reason(doc), "INVALID_PARAMS");
    assert_string_equal(err_meta(doc, "field"), "message.contextId");
    json_decref(doc);
    once__a2a_response_clear(&r);
}

static json_t *rpc(const char *method, const char *params, once__a2a_response *r)
{
    char body[1024];
    snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"%s\",\"params\":%s}",
             method, params);
    json_t *doc = fake_call(A, "1.0", NULL, body, r);
    assert_non_null(doc);
    return doc;
}

/* An answer the writer refuses (nested past ONCE_JSON_MAX_DEPTH; the value
 * limit keeps stored values short of it) is its own error, with the
 * request's id, never "out of memory" with id null. */
static void test_unwritable_answer(void **state)
{
    (void)state;
    once__a2a_response r;
    json_t *deep = json_string("leaf");
    for (int i = 0; i < ONCE_JSON_MAX_DEPTH; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "k", deep);
        deep = o;
    }
    F.rc = ONCE_OK;
    F.result = json_pack("{s:s, s:s, s:{s:s}, s:o}", "id", "t-9", "contextId", "c-1", "status",
                         "state", "TASK_STATE_COMPLETED", "metadata", deep);
    json_t *doc = rpc("GetTask", "{\"id\":\"t-9\"}", &r);
    assert_int_equal(r.http_status, 500);
    assert_int_equal(json_integer_value(json_object_get(doc, "id")), 3);
    assert_int_equal(err_code(doc), -32603);
    assert_string_equal(err_reason(doc), "RESPONSE_NOT_WRITABLE");
    const char *msg = json_string_value(json_object_get(json_object_get(doc, "error"), "message"));
    assert_non_null(msg);
    assert_null(strstr(msg, "out of memory"));
    json_decref(doc);
    once__a2a_response_clear(&r);
}

static void test_get_cancel(void **state)
{
    (void)state;
    once__a2a_response r;
    F.rc = ONCE_ENOTFOUND;
    json_t *doc = rpc("GetTask", "{\"id\":\"t-9\"}", &r);
    assert_int_equal(err_code(doc), -32001);
    assert_string_equal(err_reason(doc), "TASK_NOT_FOUND");
    assert_string_equal(err_meta(doc, "taskId"), "t-9");
    json_decref(doc);
    once__a2a_response_clear(&r);

    F.rc = ONCE_ETOMBSTONE;
    F.expired_at = 0;
    doc = rpc("CancelTask", "{\"id\":\"t-9\"}", &r);
    assert_string_equal(err_reason(doc), "TASK_EXPIRED");
    assert_string_equal(err_meta(doc, "expiredAt"), "1970-01-01T00:00:00.000Z");
    json_decref(doc);
    once__a2a_response_clear(&r);

    F.rc = ONCE_EILLEGAL;
    F.state = ONCE_STATE_COMPLETED;
    doc = rpc("CancelTask", "{\"id\":\"t-9\"}", &r);
    assert_int_equal(err_code(doc), -32002);
    assert_string_equal(err_reason(doc), "TASK_NOT_CANCELABLE");
    assert_string_equal(err_meta(doc, "state"), "TASK_STATE_COMPLETED");
    json_decref(doc);
    once__a2a_response_clear(&r);

    F.rc = ONCE_OK;
    F.result = json_loads("{\"id\":\"t-9\",\"status\":{\"state\":\"TASK_STATE_WORKING\"},"
                          "\"history\":[{\"messageId\":\"a\"}]}",
                          0, NULL);
    doc = rpc("GetTask", "{\"id\":\"t-9\",\"historyLength\":0}", &r);
    assert_int_equal(F.sent_history, 0);
    assert_null(json_object_get(json_object_get(doc, "result"), "history"));
    assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "result"), "id")),
                        "t-9");
    json_decref(doc);
    once__a2a_response_clear(&r);

    /* bad params never reach the engine */
    int before = F.calls;
    const char *bad[][2] = {{"GetTask", "{}"},
                            {"GetTask", "{\"id\":5}"},
                            {"GetTask", "{\"id\":\"x y\"}"},
                            {"GetTask", "{\"id\":\"t\",\"historyLength\":-1}"},
                            {"CancelTask", "{\"id\":\"t\",\"metadata\":3}"},
                            {"SendMessage", "{}"},
                            {"SendMessage", "{\"message\":\"hi\"}"}};
    const char *fields[] = {"id", "id", "id", "historyLength", "metadata", "message", "message"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        doc = rpc(bad[i][0], bad[i][1], &r);
        assert_int_equal(err_code(doc), -32602);
        assert_string_equal(err_reason(doc), "INVALID_PARAMS");
        assert_string_equal(err_meta(doc, "field"), fields[i]);
        json_decref(doc);
        once__a2a_response_clear(&r);
    }
    assert_int_equal(F.calls, before);
}

static void test_list(void **state)
{
    (void)state;
    once__a2a_response r;
    F.result = json_loads(
        "[{\"id\":\"a\",\"status\":{\"state\":\"TASK_STATE_WORKING\",\"timestamp\":"
        "\"2026-01-01T00:00:00Z\"},\"artifacts\":[],\"history\":[{},{}]},{\"id\":\"b\","
        "\"status\":{\"state\":\"TASK_STATE_WORKING\",\"timestamp\":\"2026-06-01T00:00:00Z\"},"
        "\"artifacts\":[{}]}]",
        0, NULL);
    snprintf(F.next_token, sizeof F.next_token, "tok-2");
    json_t *doc = rpc("ListTasks",
                      "{\"pageSize\":2,\"status\":\"TASK_STATE_WORKING\",\"contextId\":\"c\","
                      "\"historyLength\":1}",
                      &r);
    json_t *res = json_object_get(doc, "result");
    assert_int_equal(json_array_size(json_object_get(res, "tasks")), 2);
    assert_string_equal(json_string_value(json_object_get(res, "nextPageToken")), "tok-2");
    assert_int_equal(json_integer_value(json_object_get(res, "pageSize")), 2);
    json_t *t0 = json_array_get(json_object_get(res, "tasks"), 0);
    assert_null(json_object_get(t0, "artifacts")); /* omitted unless includeArtifacts */
    assert_int_equal(json_array_size(json_object_get(t0, "history")), 1);
    assert_int_equal((int)F.sent_list.page_size, 2);
    assert_int_equal(F.sent_list.state, ONCE_STATE_WORKING);
    json_decref(doc);
    once__a2a_response_clear(&r);

    doc = rpc("ListTasks",
              "{\"includeArtifacts\":true,\"statusTimestampAfter\":\"2026-03-01T00:00:00Z\","
              "\"status\":2}",
              &r);
    res = json_object_get(doc, "result");
    assert_int_equal(json_array_size(json_object_get(res, "tasks")), 1);
    t0 = json_array_get(json_object_get(res, "tasks"), 0);
    assert_string_equal(json_string_value(json_object_get(t0, "id")), "b");
    assert_non_null(json_object_get(t0, "artifacts"));
    assert_int_equal(F.sent_list.state, ONCE_STATE_WORKING); /* proto enum 2 */
    assert_int_equal((int)F.sent_list.page_size, 50);
    json_decref(doc);
    once__a2a_response_clear(&r);

    const char *bad[][2] = {{"{\"pageSize\":0}", "pageSize"},
                            {"{\"pageSize\":101}", "pageSize"},
                            {"{\"pageSize\":\"5\"}", "pageSize"},
                            {"{\"status\":\"TASK_STATE_RUNNING\"}", "status"},
                            {"{\"pageToken\":5}", "pageToken"},
                            {"{\"contextId\":\"a b\"}", "contextId"},
                            {"{\"statusTimestampAfter\":\"yesterday\"}", "statusTimestampAfter"},
                            {"{\"includeArtifacts\":1}", "includeArtifacts"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        doc = rpc("ListTasks", bad[i][0], &r);
        assert_int_equal(err_code(doc), -32602);
        assert_string_equal(err_meta(doc, "field"), bad[i][1]);
        json_decref(doc);
        once__a2a_response_clear(&r);
    }
    F.rc = ONCE_EINVAL; /* the engine did not recognise the token */
    doc = rpc("ListTasks", "{\"pageToken\":\"forged\"}", &r);
    assert_int_equal(err_code(doc), -32602);
    assert_string_equal(err_meta(doc, "field"), "pageToken");
    json_decref(doc);
    once__a2a_response_clear(&r);
}

static void test_not_supported(void **state)
{
    (void)state;
    const struct {
        const char *method;
        int code;
        const char *reason;
    } rows[] = {
        {"SendStreamingMessage", -32004, "UNSUPPORTED_OPERATION"},
        {"SubscribeToTask", -32004, "UNSUPPORTED_OPERATION"},
        {"CreateTaskPushNotificationConfig", -32003, "PUSH_NOTIFICATION_NOT_SUPPORTED"},
        {"GetTaskPushNotificationConfig", -32003, "PUSH_NOTIFICATION_NOT_SUPPORTED"},
        {"ListTaskPushNotificationConfigs", -32003, "PUSH_NOTIFICATION_NOT_SUPPORTED"},
        {"DeleteTaskPushNotificationConfig", -32003, "PUSH_NOTIFICATION_NOT_SUPPORTED"},
        {"GetExtendedAgentCard", -32007, "EXTENDED_AGENT_CARD_NOT_CONFIGURED"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        once__a2a_response r;
        json_t *doc = rpc(rows[i].method, "{}", &r);
        assert_int_equal(err_code(doc), rows[i].code);
        assert_string_equal(err_reason(doc), rows[i].reason);
        json_decref(doc);
        once__a2a_response_clear(&r);
    }
    /* a push config inside SendMessage is refused the same way */
    once__a2a_response r;
    json_t *doc = rpc("SendMessage",
                      "{\"message\":{\"messageId\":\"m\",\"role\":\"ROLE_USER\",\"parts\":[{"
                      "\"text\":\"x\"}]},\"configuration\":{\"taskPushNotificationConfig\":{"
                      "\"url\":\"https://x\"}}}",
                      &r);
    assert_int_equal(err_code(doc), -32003);
    json_decref(doc);
    once__a2a_response_clear(&r);
    assert_int_equal(F.calls, 0);
}

static void test_legacy_send(void **state)
{
    (void)state;
    F.verdict = ONCE_V_REPLAY;
    F.result = json_loads("{\"task\":{\"id\":\"t-01\",\"contextId\":\"s-1\",\"status\":{"
                          "\"state\":\"TASK_STATE_COMPLETED\"}}}",
                          0, NULL);
    once__a2a_response r;
    json_t *doc = fake_call(
        A, NULL, NULL,
        "{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"method\":\"tasks/send\",\"params\":{\"id\":\"t-01\","
        "\"sessionId\":\"s-1\",\"message\":{\"role\":\"user\",\"parts\":[{\"type\":\"text\","
        "\"text\":\"hi\"}]}}}",
        &r);
    assert_non_null(doc);
    json_t *res = json_object_get(doc, "result");
    assert_string_equal(json_string_value(json_object_get(res, "id")), "t-01");
    assert_string_equal(json_string_value(json_object_get(res, "sessionId")), "s-1");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(res, "status"), "state")), "completed");
    assert_int_equal(r.replayed, 1);
    assert_int_equal(F.sent_legacy, 1);
    assert_string_equal(F.sent_task_id, "t-01");
    /* the engine got a 1.0 message carrying the 0.1 envelope's ids */
    json_t *want = json_loads("{\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"hi\"}],\"taskId\":"
                              "\"t-01\",\"contextId\":\"s-1\"}",
                              0, NULL);
    assert_true(json_equal(F.sent_message, want));
    json_decref(want);
    json_decref(doc);
    once__a2a_response_clear(&r);

    const char *bad[][2] = {
        {"{\"message\":{\"role\":\"user\",\"parts\":[{\"text\":\"x\"}]}}", "id"},
        {"{\"id\":\"bad id\",\"message\":{\"role\":\"user\",\"parts\":[{\"text\":\"x\"}]}}", "id"},
        {"{\"id\":\"t\"}", "message"},
        {"{\"id\":\"t\",\"message\":{\"role\":\"agent\",\"parts\":[{\"text\":\"x\"}]}}",
         "message.role"},
        {"{\"id\":\"t\",\"sessionId\":\"a b\",\"message\":{\"role\":\"user\",\"parts\":[]}}",
         "sessionId"},
        {"{\"id\":\"t\",\"message\":{\"role\":\"user\",\"parts\":[{\"type\":\"text\"}]}}",
         "message.parts[0]"},
        {"{\"id\":\"t\",\"message\":{\"role\":\"user\",\"taskId\":\"u\",\"parts\":[{\"text\":"
         "\"x\"}]}}",
         "message.taskId"},
    };
    int before = F.calls;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char body[512];
        snprintf(body, sizeof body,
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tasks/send\",\"params\":%s}",
                 bad[i][0]);
        doc = fake_call(A, NULL, NULL, body, &r);
        assert_int_equal(err_code(doc), -32602);
        if (strcmp(err_meta(doc, "field"), bad[i][1]) != 0)
            fail_msg("case %zu: field %s, want %s", i, err_meta(doc, "field"), bad[i][1]);
        json_decref(doc);
        once__a2a_response_clear(&r);
    }
    assert_int_equal(F.calls, before);
}

static void test_http_layer_errors(void **state)
{
    (void)state;
    once__a2a_response r;
    assert_int_equal(once__a2a_error_response(413, -32600, "PAYLOAD_TOO_LARGE", "too big", &r),
                     ONCE_OK);
    assert_int_equal(r.http_status, 413);
    json_t *doc = json_loadb(r.body, r.len, 0, NULL);
    assert_true(json_is_null(json_object_get(doc, "id")));
    assert_int_equal(err_code(doc), -32600);
    assert_string_equal(err_reason(doc), "PAYLOAD_TOO_LARGE");
    json_decref(doc);
    once__a2a_response_clear(&r);
    once__a2a_response_clear(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_verdict_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_results_and_replay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_errors_are_retryable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unwritable_answer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_supported, setup, teardown),
        cmocka_unit_test_setup_teardown(test_legacy_send, setup, teardown),
        cmocka_unit_test(test_http_layer_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
