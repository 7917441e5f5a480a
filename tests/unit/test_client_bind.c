/*
 * test_client_bind.c -- the pure half of the client's binding seam
 * (src/client/bind_map.c): which interface of a card a call goes to, the
 * HTTP+JSON route of each JSON-RPC call, and the errors of the other two
 * bindings back in JSON-RPC's shape -- classified (policy.c) exactly as
 * onced's JSON-RPC answer for the same error is.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client/client_int.h"
#include "grpc/status.h"

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    assert_non_null(j);
    return j;
}

/* onced's card, as src/a2a/card.c writes it with --grpc-listen. */
#define ONCED_IFACES                                                                              \
    "[[\"JSONRPC\",\"http://10.0.0.1:8080/\"],[\"HTTP+JSON\",\"http://10.0.0.1:8080/\"],"         \
    "[\"GRPC\",\"10.0.0.1:9090\"]]"

static void test_pick(void **state)
{
    (void)state;
    json_t *ifs = parse(ONCED_IFACES);
    once__iface f;
    /* auto: the card's first, JSON-RPC, at the URL the client was given. */
    assert_int_equal(once__iface_pick(ifs, ONCE_BINDING_AUTO, "http://proxy:1/", &f), ONCE_OK);
    assert_int_equal(f.binding, ONCE_BINDING_JSONRPC);
    assert_string_equal(f.url, "http://proxy:1/");
    /* grpc: host:port from the card; TLS as the agent's URL says. */
    assert_int_equal(once__iface_pick(ifs, ONCE_BINDING_GRPC, "http://proxy:1/", &f), ONCE_OK);
    assert_int_equal(f.binding, ONCE_BINDING_GRPC);
    assert_string_equal(f.url, "10.0.0.1:9090");
    assert_int_equal(f.tls, 0);
    assert_int_equal(once__iface_pick(ifs, ONCE_BINDING_GRPC, "https://agent/", &f), ONCE_OK);
    assert_int_equal(f.tls, 1);
    /* http_json at the JSON-RPC URL: taken where the client was sent. */
    assert_int_equal(once__iface_pick(ifs, ONCE_BINDING_HTTP_JSON, "http://proxy:1/a2a", &f),
                     ONCE_OK);
    assert_int_equal(f.binding, ONCE_BINDING_HTTP_JSON);
    assert_string_equal(f.url, "http://proxy:1/a2a");
    json_decref(ifs);

    /* Another order, other URLs, schemes on the gRPC one. */
    ifs = parse("[[\"KAFKA\",\"x\"],[\"GRPC\",\"grpcs://g.example:443/\"],"
                "[\"HTTP+JSON\",\"https://rest.example/v1\"],"
                "[\"JSONRPC\",\"https://rpc.example/\"]]");
    assert_int_equal(once__iface_pick(ifs, ONCE_BINDING_AUTO, "http://a/", &f), ONCE_OK);
    assert_int_equal(f.binding, ONCE_BINDING_GRPC);
    assert_string_equal(f.url, "g.example:443");
    assert_int_equal(f.tls, 1);
    assert_int_equal(once__iface_pick(ifs, ONCE_BINDING_HTTP_JSON, "http://a/", &f), ONCE_OK);
    assert_string_equal(f.url, "https://rest.example/v1");
    /* jsonrpc: always the given URL, whatever the card says. */
    assert_int_equal(once__iface_pick(ifs, ONCE_BINDING_JSONRPC, "http://a/", &f), ONCE_OK);
    assert_int_equal(f.binding, ONCE_BINDING_JSONRPC);
    assert_string_equal(f.url, "http://a/");
    json_decref(ifs);

    /* None of a forced binding; no card at all. */
    ifs = parse("[[\"JSONRPC\",\"http://a/\"],[\"GRPC\",\"no-port\"]]");
    assert_int_equal(once__iface_pick(ifs, ONCE_BINDING_GRPC, "http://a/", &f), ONCE_ENOTFOUND);
    assert_int_equal(once__iface_pick(ifs, ONCE_BINDING_HTTP_JSON, "http://a/", &f),
                     ONCE_ENOTFOUND);
    json_decref(ifs);
    assert_int_equal(once__iface_pick(NULL, ONCE_BINDING_AUTO, "http://a/", &f), ONCE_OK);
    assert_int_equal(f.binding, ONCE_BINDING_JSONRPC);
    assert_int_equal(once__iface_pick(NULL, ONCE_BINDING_GRPC, "http://a/", &f), ONCE_ENOTFOUND);
}

static void route(const char *base, const char *method, const char *params, const char *verb,
                  const char *url, int has_body)
{
    json_t *p = parse(params);
    once__rest_call rc;
    char why[200];
    assert_int_equal(once__rest_route(base, method, p, &rc, why, sizeof why), ONCE_OK);
    assert_string_equal(rc.verb, verb);
    assert_string_equal(rc.url, url);
    if (has_body)
        assert_true(json_equal(rc.body, p));
    else
        assert_null(rc.body);
    once__rest_call_clear(&rc);
    json_decref(p);
}

static void test_rest_routes(void **state)
{
    (void)state;
    route("http://h:1/", "SendMessage", "{\"message\":{\"messageId\":\"m\"}}", "POST",
          "http://h:1/message:send", 1);
    route("http://h:1", "SendStreamingMessage", "{}", "POST", "http://h:1/message:stream", 1);
    route("http://h:1/", "GetTask", "{\"id\":\"a b/c\",\"historyLength\":3}", "GET",
          "http://h:1/tasks/a%20b%2Fc?historyLength=3", 0);
    route("http://h:1/", "CancelTask", "{\"id\":\"T\"}", "POST", "http://h:1/tasks/T:cancel", 1);
    route("http://h:1/", "SubscribeToTask", "{\"id\":\"T\"}", "POST",
          "http://h:1/tasks/T:subscribe", 1);
    route("http://h:1/", "GetTask", "{\"id\":\"T\",\"tenant\":\"acme\"}", "GET",
          "http://h:1/acme/tasks/T", 0);
    route("http://h:1/", "ListTasks",
          "{\"contextId\":\"c&d\",\"pageSize\":5,\"includeArtifacts\":true}", "GET",
          "http://h:1/tasks?contextId=c%26d&pageSize=5&includeArtifacts=true", 0);
    route("http://h:1/", "DeleteTaskPushNotificationConfig", "{\"taskId\":\"T\",\"id\":\"P\"}",
          "DELETE", "http://h:1/tasks/T/pushNotificationConfigs/P", 0);

    once__rest_call rc;
    char why[200];
    json_t *p = parse("{\"historyLength\":1}");
    assert_int_equal(once__rest_route("http://h/", "GetTask", p, &rc, why, sizeof why),
                     ONCE_EINVAL);
    assert_non_null(strstr(why, "params.id"));
    assert_int_equal(once__rest_route("http://h/", "tasks/get", p, &rc, why, sizeof why),
                     ONCE_EINVAL);
    assert_non_null(strstr(why, "no HTTP+JSON route"));
    json_decref(p);
}

/* onced's AIP-193 body for an error (src/a2a/errors.c's shape). */
static json_t *aip(int http, const char *status, const char *a2a_reason, const char *once_reason,
                   const char *meta_key, const char *meta_value)
{
    json_t *details = json_array();
    const char *reasons[2] = {a2a_reason, once_reason};
    const char *domains[2] = {"a2a-protocol.org", "once"};
    for (int i = 0; i < 2; i++) {
        if (reasons[i] == NULL)
            continue;
        json_t *meta = json_object();
        if (meta_key != NULL)
            json_object_set_new(meta, meta_key, json_string(meta_value));
        json_array_append_new(details,
                              json_pack("{s:s,s:s,s:s,s:o}", "@type",
                                        "type.googleapis.com/google.rpc.ErrorInfo", "reason",
                                        reasons[i], "domain", domains[i], "metadata", meta));
    }
    return json_pack("{s:{s:i,s:s,s:s,s:o}}", "error", "code", http, "status", status, "message",
                     "the message", "details", details);
}

/* The JSON-RPC error of an AIP-193 body, as an answer's verdict. */
static once__verdict verdict(const json_t *err, long http)
{
    char *env = once__rpc_envelope(NULL, "error", json_incref((json_t *)err));
    assert_non_null(env);
    json_t *doc = parse(env);
    once_free(env);
    once__verdict v = once__classify(http, doc);
    json_decref(doc);
    return v;
}

static void test_errors_as_jsonrpc(void **state)
{
    (void)state;
    /* An A2A error: the code of its A2A reason, the details as data. */
    json_t *body = aip(404, "NOT_FOUND", "TASK_NOT_FOUND", "TASK_EXPIRED", "taskId", "T");
    json_t *e = once__rpc_error_of_aip193(body);
    assert_non_null(e);
    assert_int_equal(json_integer_value(json_object_get(e, "code")), -32001);
    assert_string_equal(json_string_value(json_object_get(e, "message")), "the message");
    assert_true(json_equal(json_object_get(e, "data"),
                           json_object_get(json_object_get(body, "error"), "details")));
    assert_int_equal(verdict(e, 404), ONCE__REFUSED);
    once_call_result r;
    memset(&r, 0, sizeof r);
    once__result_from_error(&r, e);
    assert_int_equal(r.rpc_code, -32001);
    assert_string_equal(r.reason, "TASK_EXPIRED");   /* the last, most precise one */
    assert_string_equal(r.task_id, "T");
    once_call_result_clear(&r);
    json_decref(e);
    json_decref(body);

    /* once's reason for a JSON-RPC code. */
    body = aip(400, "INVALID_ARGUMENT", NULL, "INVALID_PARAMS", NULL, NULL);
    e = once__rpc_error_of_aip193(body);
    assert_int_equal(json_integer_value(json_object_get(e, "code")), -32602);
    assert_int_equal(verdict(e, 400), ONCE__ERROR);
    json_decref(e);
    json_decref(body);

    /* A store outage: retryable, as on JSON-RPC. */
    body = aip(503, "UNAVAILABLE", NULL, "STORE_UNAVAILABLE", "retryable", "true");
    e = once__rpc_error_of_aip193(body);
    assert_int_equal(json_integer_value(json_object_get(e, "code")), -32603);
    assert_int_equal(verdict(e, 200), ONCE__RETRY);
    json_decref(e);
    json_decref(body);

    /* No ErrorInfo: the status decides. */
    static const struct {
        const char *status;
        int code;
    } bare[] = {{"NOT_FOUND", -32001}, {"UNIMPLEMENTED", -32601}, {"INVALID_ARGUMENT", -32602},
                {"UNAVAILABLE", -32603}, {"UNAUTHENTICATED", -32603}};
    for (size_t i = 0; i < sizeof bare / sizeof bare[0]; i++) {
        body = json_pack("{s:{s:i,s:s}}", "error", "code", 500, "status", bare[i].status);
        e = once__rpc_error_of_aip193(body);
        assert_int_equal(json_integer_value(json_object_get(e, "code")), bare[i].code);
        assert_string_equal(json_string_value(json_object_get(e, "message")), "");
        assert_int_equal(json_array_size(json_object_get(e, "data")), 0);
        json_decref(e);
        json_decref(body);
    }
    body = parse("{\"result\":{}}");
    assert_null(once__rpc_error_of_aip193(body));
    json_decref(body);
}

/* A gRPC status (code, message, grpc-status-details-bin) as onced sends it
 * becomes the JSON-RPC error onced sends on JSON-RPC. */
static void test_grpc_status_as_jsonrpc(void **state)
{
    (void)state;
    json_t *body = aip(409, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE", NULL, "state",
                       "TASK_STATE_COMPLETED");
    int code;
    char *msg;
    uint8_t *details;
    size_t len;
    assert_int_equal(once__grpc_status_from_aip193(body, &code, &msg, &details, &len), ONCE_OK);
    assert_int_equal(code, 9);
    json_t *back = NULL;
    assert_int_equal(once__grpc_status_to_aip193(code, msg, details, len, &back), ONCE_OK);
    json_t *e = once__rpc_error_of_aip193(back);
    assert_int_equal(json_integer_value(json_object_get(e, "code")), -32002);
    assert_int_equal(verdict(e, once__grpc_http_status(code, "TASK_NOT_CANCELABLE")),
                     ONCE__REFUSED);
    once_call_result r;
    memset(&r, 0, sizeof r);
    once__result_from_error(&r, e);
    assert_string_equal(r.reason, "TASK_NOT_CANCELABLE");
    assert_int_equal(r.state, ONCE_STATE_COMPLETED);
    once_call_result_clear(&r);
    json_decref(e);
    json_decref(back);
    once_free(msg);
    once_free(details);
    json_decref(body);

    /* UNAVAILABLE with nothing more (a connection's trouble): a 503, retried. */
    assert_int_equal(once__grpc_status_to_aip193(14, "connection lost", NULL, 0, &back), ONCE_OK);
    e = once__rpc_error_of_aip193(back);
    assert_int_equal(verdict(e, once__grpc_http_status(14, NULL)), ONCE__RETRY);
    json_decref(e);
    json_decref(back);

    /* RetryInfo, gRPC's Retry-After, read back as delta-seconds */
    char ra[64] = "x";
    body = parse("{\"error\":{\"code\":503,\"status\":\"UNAVAILABLE\",\"details\":["
                 "{\"@type\":\"type.googleapis.com/google.rpc.ErrorInfo\",\"reason\":\"R\"},"
                 "{\"@type\":\"type.googleapis.com/google.rpc.RetryInfo\","
                 "\"retryDelay\":\"1.200s\"}]}}");
    once__retry_after_of_aip193(body, ra, sizeof ra);
    assert_string_equal(ra, "2");
    json_decref(body);
    static const char *const none[] = {
        "{\"error\":{\"details\":[{\"@type\":\"type.googleapis.com/google.rpc.ErrorInfo\"}]}}",
        "{\"error\":{\"details\":[{\"@type\":\"type.googleapis.com/google.rpc.RetryInfo\","
        "\"retryDelay\":\"soon\"}]}}",
        "{\"error\":{\"details\":[{\"@type\":\"type.googleapis.com/google.rpc.RetryInfo\","
        "\"retryDelay\":\"-1s\"}]}}",
        "{\"error\":{}}",
    };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        body = parse(none[i]);
        snprintf(ra, sizeof ra, "x");
        once__retry_after_of_aip193(body, ra, sizeof ra);
        assert_string_equal(ra, "");
        json_decref(body);
    }

    assert_int_equal(once__grpc_a2a_rpc_code("TASK_NOT_FOUND"), -32001);
    assert_int_equal(once__grpc_a2a_rpc_code("VERSION_NOT_SUPPORTED"), -32009);
    assert_int_equal(once__grpc_a2a_rpc_code("TASK_EXPIRED"), 0);
    assert_int_equal(once__grpc_a2a_rpc_code(NULL), 0);
}

static void test_envelope_and_names(void **state)
{
    (void)state;
    json_t *id = json_integer(1);
    char *env = once__rpc_envelope(id, "result", json_pack("{s:s}", "a", "b"));
    assert_string_equal(env, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":\"b\"}}");
    once_free(env);
    json_decref(id);
    env = once__rpc_envelope(NULL, "error", json_object());
    assert_string_equal(env, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{}}");
    once_free(env);

    static const char *const names[] = {"auto", "jsonrpc", "http_json", "grpc"};
    for (int i = 0; i < 4; i++) {
        once_binding b;
        assert_int_equal(once_binding_parse(names[i], &b), ONCE_OK);
        assert_int_equal(b, i);
        assert_string_equal(once_binding_name(b), names[i]);
    }
    once_binding b;
    assert_int_equal(once_binding_parse("GRPC", &b), ONCE_EINVAL);
    assert_int_equal(once_binding_parse(NULL, &b), ONCE_EINVAL);
    assert_string_equal(once_binding_name((once_binding)9), "unknown");
}

/* The i-th allocation fails, and every one after it. */
static int alloc_left = -1;
static void *fail_malloc(size_t n)
{
    return alloc_left < 0 || alloc_left-- > 0 ? malloc(n) : NULL;
}
static void *fail_calloc(size_t k, size_t n)
{
    return alloc_left < 0 || alloc_left-- > 0 ? calloc(k, n) : NULL;
}
static void *fail_realloc(void *p, size_t n)
{
    return alloc_left < 0 || alloc_left-- > 0 ? realloc(p, n) : NULL;
}
static const once_allocator failing = {fail_malloc, fail_calloc, fail_realloc, free};

/* Every mapping fails cleanly (ENOMEM or NULL, nothing left allocated:
 * valgrind and ASan check that) wherever memory runs out, and succeeds
 * once it does not. */
static void test_out_of_memory(void **state)
{
    (void)state;
    json_t *params = parse("{\"id\":\"a b\",\"historyLength\":3,\"tenant\":\"t\"}");
    json_t *body = aip(404, "NOT_FOUND", "TASK_NOT_FOUND", "TASK_EXPIRED", "taskId", "T");
    json_t *ifs = parse(ONCED_IFACES);
    int done = 0;
    for (int i = 0; !done && i < 1000; i++) {
        once_set_allocator(&failing);
        alloc_left = i;
        once__rest_call rc;
        char why[100];
        int r1 = once__rest_route("http://h/", "GetTask", params, &rc, why, sizeof why);
        json_t *e = once__rpc_error_of_aip193(body);
        char *env = e != NULL ? once__rpc_envelope(NULL, "error", json_incref(e)) : NULL;
        once__iface f;
        int r3 = once__iface_pick(ifs, ONCE_BINDING_GRPC, "http://h/", &f);
        alloc_left = -1;
        once_set_allocator(NULL);
        assert_true(r1 == ONCE_OK || r1 == ONCE_ENOMEM);
        assert_int_equal(r3, ONCE_OK);   /* allocates nothing */
        done = r1 == ONCE_OK && e != NULL && env != NULL;
        if (r1 == ONCE_OK)
            assert_string_equal(rc.url, "http://h/t/tasks/a%20b?historyLength=3");
        once__rest_call_clear(&rc);
        json_decref(e);
        once_free(env);
    }
    assert_true(done);
    json_decref(ifs);
    json_decref(body);
    json_decref(params);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pick),
        cmocka_unit_test(test_rest_routes),
        cmocka_unit_test(test_errors_as_jsonrpc),
        cmocka_unit_test(test_grpc_status_as_jsonrpc),
        cmocka_unit_test(test_envelope_and_names),
        cmocka_unit_test(test_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
