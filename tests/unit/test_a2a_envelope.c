/*
 * test_a2a_envelope.c -- the JSON-RPC 2.0 envelope as clients meet it: what
 * is a parse error (-32700), an invalid request (-32600), an unknown method
 * (-32601), a refused protocol version (-32009); which id comes back; that
 * batches and notifications are refused; that the bounded reader stops at
 * depth 64, invalid UTF-8, NUL bytes and duplicate keys; and that nothing
 * malformed ever reaches the engine.
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

/* Send body with A2A-Version 1.0; return the response document. */
static json_t *call(const char *body, once__a2a_response *r)
{
    json_t *doc = fake_call(A, "1.0", NULL, body, r);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "jsonrpc")), "2.0");
    return doc;
}

static void expect_error(const char *body, int code, const char *reason, int id_null)
{
    once__a2a_response r;
    json_t *doc = call(body, &r);
    assert_int_equal(err_code(doc), code);
    assert_string_equal(err_reason(doc), reason);
    assert_non_null(json_object_get(doc, "id"));
    if (id_null)
        assert_true(json_is_null(json_object_get(doc, "id")));
    assert_null(json_object_get(doc, "result"));
    assert_int_equal(r.http_status, 200);
    /* the ErrorInfo shape on every error */
    const json_t *d = json_array_get(json_object_get(json_object_get(doc, "error"), "data"), 0);
    assert_string_equal(json_string_value(json_object_get(d, "@type")),
                        "type.googleapis.com/google.rpc.ErrorInfo");
    assert_string_equal(json_string_value(json_object_get(d, "domain")),
                        code <= -32001 && code >= -32009 ? "a2a-protocol.org" : "once");
    assert_true(json_is_string(json_object_get(json_object_get(doc, "error"), "message")));
    json_decref(doc);
    once__a2a_response_clear(&r);
}

static void test_parse_errors(void **state)
{
    (void)state;
    expect_error("", ONCE_RPC_PARSE_ERROR, "PARSE_ERROR", 1);
    expect_error("{", ONCE_RPC_PARSE_ERROR, "PARSE_ERROR", 1);
    expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"GetTask\"} trailing",
                 ONCE_RPC_PARSE_ERROR, "PARSE_ERROR", 1);
    /* invalid UTF-8 inside a string */
    expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"Get\xff\"}", ONCE_RPC_PARSE_ERROR,
                 "PARSE_ERROR", 1);
    /* duplicate keys make the digest ambiguous */
    expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"GetTask\"}",
                 ONCE_RPC_PARSE_ERROR, "PARSE_ERROR", 1);
    assert_int_equal(F.calls, 0);
}

static void test_reader_limits(void **state)
{
    (void)state;
    char buf[300];
    json_t *v = NULL;
    char why[200];
    /* 64 levels parse, 65 do not */
    for (int depth = 64; depth <= 65; depth++) {
        memset(buf, '[', (size_t)depth);
        memset(buf + depth, ']', (size_t)depth);
        int rc = once__a2a_json_parse(buf, (size_t)depth * 2, &v, why, sizeof why);
        if (depth == 64) {
            assert_int_equal(rc, ONCE_OK);
            json_decref(v);
        } else {
            assert_int_equal(rc, ONCE_ERANGE);
            assert_null(v);
            assert_non_null(strstr(why, "64"));
        }
    }
    /* brackets inside strings do not count */
    snprintf(buf, sizeof buf, "[\"%s\"]", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                                          "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[");
    assert_int_equal(once__a2a_json_parse(buf, strlen(buf), &v, why, sizeof why), ONCE_OK);
    json_decref(v);
    /* an escaped quote does not end a string */
    const char *esc = "[\"\\\"[[[\"]";
    assert_int_equal(once__a2a_json_parse(esc, strlen(esc), &v, NULL, 0), ONCE_OK);
    json_decref(v);
    /* NUL byte, overlong encoding, UTF-16 surrogate, truncated sequence */
    const char nul[] = "[\"a\0b\"]";
    assert_int_equal(once__a2a_json_parse(nul, sizeof nul - 1, &v, why, sizeof why),
                     ONCE_EPARSE);
    const char *bad[] = {"[\"\xc0\xaf\"]", "[\"\xed\xa0\x80\"]", "[\"\xe2\x82\"]",
                         "[\"\xf4\x90\x80\x80\"]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(once__a2a_json_parse(bad[i], strlen(bad[i]), &v, why, sizeof why),
                         ONCE_EPARSE);
    /* valid multi-byte text passes */
    const char *ok = "[\"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80\"]";
    assert_int_equal(once__a2a_json_parse(ok, strlen(ok), &v, why, sizeof why), ONCE_OK);
    json_decref(v);
}

static void test_too_deep_request(void **state)
{
    (void)state;
    /* A request whose metadata nests 70 deep: refused before any handler. */
    char body[512];
    size_t n = (size_t)snprintf(body, sizeof body,
                                "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"SendMessage\","
                                "\"params\":{\"metadata\":{\"x\":");
    for (int i = 0; i < 70; i++)
        body[n++] = '[';
    for (int i = 0; i < 70; i++)
        body[n++] = ']';
    body[n++] = '}';
    body[n++] = '}';
    body[n++] = '}';
    body[n] = '\0';
    expect_error(body, ONCE_RPC_PARSE_ERROR, "PARSE_ERROR", 1);
    assert_int_equal(F.calls, 0);
}

static void test_invalid_requests(void **state)
{
    (void)state;
    expect_error("[]", ONCE_RPC_INVALID_REQUEST, "BATCH_NOT_SUPPORTED", 1);
    expect_error("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"GetTask\",\"params\":{\"id\":\"t\"}}]",
                 ONCE_RPC_INVALID_REQUEST, "BATCH_NOT_SUPPORTED", 1);
    expect_error("1", ONCE_RPC_INVALID_REQUEST, "INVALID_REQUEST", 1);
    expect_error("\"x\"", ONCE_RPC_INVALID_REQUEST, "INVALID_REQUEST", 1);
    expect_error("null", ONCE_RPC_INVALID_REQUEST, "INVALID_REQUEST", 1);
    /* notification: no id */
    expect_error("{\"jsonrpc\":\"2.0\",\"method\":\"GetTask\",\"params\":{\"id\":\"t\"}}",
                 ONCE_RPC_INVALID_REQUEST, "INVALID_REQUEST", 1);
    /* bad id types answer with id null */
    expect_error("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"GetTask\"}",
                 ONCE_RPC_INVALID_REQUEST, "INVALID_REQUEST", 1);
    expect_error("{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"GetTask\"}",
                 ONCE_RPC_INVALID_REQUEST, "INVALID_REQUEST", 1);
    expect_error("{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"GetTask\"}",
                 ONCE_RPC_INVALID_REQUEST, "INVALID_REQUEST", 1);
    /* jsonrpc missing or wrong, method missing or wrong, params scalar */
    expect_error("{\"id\":1,\"method\":\"GetTask\"}", ONCE_RPC_INVALID_REQUEST,
                 "INVALID_REQUEST", 0);
    expect_error("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"GetTask\"}",
                 ONCE_RPC_INVALID_REQUEST, "INVALID_REQUEST", 0);
    expect_error("{\"jsonrpc\":2.0,\"id\":1,\"method\":\"GetTask\"}", ONCE_RPC_INVALID_REQUEST,
                 "INVALID_REQUEST", 0);
    expect_error("{\"jsonrpc\":\"2.0\",\"id\":1}", ONCE_RPC_INVALID_REQUEST, "INVALID_REQUEST",
                 0);
    expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}", ONCE_RPC_INVALID_REQUEST,
                 "INVALID_REQUEST", 0);
    expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"GetTask\",\"params\":3}",
                 ONCE_RPC_INVALID_REQUEST, "INVALID_REQUEST", 0);
    assert_int_equal(F.calls, 0);
}

static void test_id_echo(void **state)
{
    (void)state;
    once__a2a_response r;
    json_t *doc = call("{\"jsonrpc\":\"2.0\",\"id\":\"abc-1\",\"method\":\"Nope\"}", &r);
    assert_string_equal(json_string_value(json_object_get(doc, "id")), "abc-1");
    json_decref(doc);
    once__a2a_response_clear(&r);
    doc = call("{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"Nope\"}", &r);
    assert_int_equal(json_integer_value(json_object_get(doc, "id")), 42);
    json_decref(doc);
    once__a2a_response_clear(&r);
    doc = call("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"Nope\"}", &r);
    assert_true(json_is_null(json_object_get(doc, "id")));
    assert_int_equal(err_code(doc), ONCE_RPC_METHOD_NOT_FOUND);
    json_decref(doc);
    once__a2a_response_clear(&r);
}

static void test_unknown_and_admin_methods(void **state)
{
    (void)state;
    /* a 0.3 name is served (h_v03.c): its params are checked as 1.0's */
    expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"message/send\",\"params\":{}}",
                 ONCE_RPC_INVALID_PARAMS, "INVALID_PARAMS", 0);
    expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tasks/list\",\"params\":{}}",
                 ONCE_RPC_METHOD_NOT_FOUND, "METHOD_NOT_FOUND", 0);
    expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"sendmessage\",\"params\":{}}",
                 ONCE_RPC_METHOD_NOT_FOUND, "METHOD_NOT_FOUND", 0);
    /* admin methods do not exist without --test-admin */
    expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"once/admin/setClockOffset\","
                 "\"params\":{\"offsetMs\":1000}}",
                 ONCE_RPC_METHOD_NOT_FOUND, "METHOD_NOT_FOUND", 0);

    /* with it, the clock moves */
    once_offset_clock clk;
    once_offset_clock_init(&clk, 0);
    fake f2;
    memset(&f2, 0, sizeof f2);
    once__a2a *adm = fake_codec(&f2, 1, &clk);
    assert_non_null(adm);
    once__a2a_response r;
    json_t *doc = fake_call(adm, NULL, NULL,
                            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                            "\"once/admin/setClockOffset\",\"params\":{\"offsetMs\":259200000}}",
                            &r);
    assert_non_null(doc);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "result"),
                                                        "offsetMs")),
                     259200000);
    assert_int_equal(once_offset_clock_get(&clk), 259200000);
    json_decref(doc);
    once__a2a_response_clear(&r);
    doc = fake_call(adm, NULL, NULL,
                    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"once/admin/setClockOffset\","
                    "\"params\":{\"offsetMs\":\"1h\"}}",
                    &r);
    assert_int_equal(err_code(doc), ONCE_RPC_INVALID_PARAMS);
    assert_string_equal(err_meta(doc, "field"), "offsetMs");
    json_decref(doc);
    once__a2a_response_clear(&r);
    /* stats count calls and errors per method */
    doc = fake_call(adm, NULL, NULL,
                    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"once/admin/stats\"}", &r);
    json_t *m = json_object_get(json_object_get(json_object_get(doc, "result"), "methods"),
                                "once/admin/setClockOffset");
    assert_int_equal(json_integer_value(json_object_get(m, "calls")), 2);
    assert_int_equal(json_integer_value(json_object_get(m, "errors")), 1);
    json_decref(doc);
    once__a2a_response_clear(&r);
    once__a2a_free(adm);
    fake_reset(&f2);
}

static const char get_body[] =
    "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"GetTask\",\"params\":{\"id\":\"t-1\"}}";

static void test_version(void **state)
{
    (void)state;
    F.rc = ONCE_ENOTFOUND;
    const char *refused[] = {NULL, "", "0.3", "0.2", "2.0", "1", "1.0x", "1.1"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        once__a2a_response r;
        json_t *doc = fake_call(A, refused[i], NULL, get_body, &r);
        assert_int_equal(err_code(doc), ONCE_RPC_VERSION_NOT_SUPPORTED);
        assert_string_equal(err_reason(doc), "VERSION_NOT_SUPPORTED");
        assert_string_equal(err_meta(doc, "version"),
                            refused[i] && refused[i][0] ? refused[i] : "0.3");
        assert_int_equal(json_integer_value(json_object_get(doc, "id")), 7);
        json_decref(doc);
        once__a2a_response_clear(&r);
    }
    assert_int_equal(F.calls, 0);
    const char *accepted[] = {"1.0", " 1.0 ", "1.0.1"};
    for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++) {
        once__a2a_response r;
        json_t *doc = fake_call(A, accepted[i], NULL, get_body, &r);
        assert_int_equal(err_code(doc), ONCE_RPC_TASK_NOT_FOUND);
        json_decref(doc);
        once__a2a_response_clear(&r);
    }
    /* 0.1 names predate the header */
    once__a2a_response r;
    json_t *doc = fake_call(
        A, NULL, NULL,
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tasks/get\",\"params\":{\"id\":\"t-1\"}}", &r);
    assert_int_equal(err_code(doc), ONCE_RPC_TASK_NOT_FOUND);
    json_decref(doc);
    once__a2a_response_clear(&r);
}

static void test_params_by_position(void **state)
{
    (void)state;
    once__a2a_response r;
    json_t *doc = call("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"GetTask\",\"params\":[\"t\"]}",
                       &r);
    assert_int_equal(err_code(doc), ONCE_RPC_INVALID_PARAMS);
    assert_string_equal(err_meta(doc, "field"), "params");
    json_decref(doc);
    once__a2a_response_clear(&r);
    /* absent params = {}: GetTask then misses its id */
    doc = call("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"GetTask\"}", &r);
    assert_int_equal(err_code(doc), ONCE_RPC_INVALID_PARAMS);
    assert_string_equal(err_meta(doc, "field"), "id");
    json_decref(doc);
    once__a2a_response_clear(&r);
    assert_int_equal(F.calls, 0);
}

static void test_header_parsers(void **state)
{
    (void)state;
    assert_true(once__a2a_extension_active("urn:once:a2a:idempotency:v1"));
    assert_true(once__a2a_extension_active(" https://x/y , urn:once:a2a:idempotency:v1 "));
    assert_true(once__a2a_extension_active("urn:once:a2a:idempotency:v1,https://x"));
    assert_false(once__a2a_extension_active(NULL));
    assert_false(once__a2a_extension_active(""));
    assert_false(once__a2a_extension_active("urn:once:a2a:idempotency:v11"));
    assert_false(once__a2a_extension_active("urn:once:a2a:idempotency"));
    assert_false(once__a2a_extension_active("xurn:once:a2a:idempotency:v1"));
    assert_true(once__a2a_version_ok("1.0"));
    assert_false(once__a2a_version_ok("1.0."));
    assert_false(once__a2a_version_ok("10.0"));
}

static void test_card(void **state)
{
    (void)state;
    size_t len;
    const char *text = once__a2a_card(A, &len);
    json_t *card = json_loadb(text, len, 0, NULL);
    assert_non_null(card);
    json_t *itf = json_array_get(json_object_get(card, "supportedInterfaces"), 0);
    assert_string_equal(json_string_value(json_object_get(itf, "url")), "http://127.0.0.1:1/");
    assert_string_equal(json_string_value(json_object_get(itf, "protocolBinding")), "JSONRPC");
    assert_string_equal(json_string_value(json_object_get(itf, "protocolVersion")), "1.0");
    json_t *caps = json_object_get(card, "capabilities");
    assert_true(json_is_false(json_object_get(caps, "streaming")));
    assert_true(json_is_false(json_object_get(caps, "pushNotifications")));
    json_t *ext = json_array_get(json_object_get(caps, "extensions"), 0);
    assert_string_equal(json_string_value(json_object_get(ext, "uri")),
                        "urn:once:a2a:idempotency:v1");
    assert_true(json_is_false(json_object_get(ext, "required")));
    json_t *params = json_object_get(ext, "params");
    assert_int_equal(json_integer_value(json_object_get(params, "retentionSeconds")), 259200);
    assert_int_equal(json_integer_value(json_object_get(params, "tombstoneSeconds")), 2592000);
    assert_null(json_object_get(card, "securitySchemes")); /* no auth configured */
    assert_true(json_is_string(json_object_get(card, "name")));
    assert_true(json_is_string(json_object_get(card, "version")));
    assert_true(json_array_size(json_object_get(card, "skills")) >= 1);
    json_decref(card);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_parse_errors, setup, teardown),
        cmocka_unit_test(test_reader_limits),
        cmocka_unit_test_setup_teardown(test_too_deep_request, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_requests, setup, teardown),
        cmocka_unit_test_setup_teardown(test_id_echo, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_and_admin_methods, setup, teardown),
        cmocka_unit_test_setup_teardown(test_version, setup, teardown),
        cmocka_unit_test_setup_teardown(test_params_by_position, setup, teardown),
        cmocka_unit_test(test_header_parsers),
        cmocka_unit_test_setup_teardown(test_card, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
