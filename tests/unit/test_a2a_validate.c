/*
 * test_a2a_validate.c -- parameter validation: which Messages and Parts are
 * accepted, and for each refusal the exact field a client is told to fix.
 * Also base64, RFC 3339 and historyLength.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "a2a/a2a_int.h"
#include "core/base64.h"
#include "core/json_depth.h"

/* Check msg (JSON text); expect_field NULL = accepted. */
static void check_msg(const char *text, int legacy, const char *expect_field)
{
    json_error_t jerr;
    json_t *m = json_loads(text, 0, &jerr);
    if (m == NULL)
        fail_msg("bad test JSON %s: %s", text, jerr.text);
    a2a_verr e;
    memset(&e, 0, sizeof e);
    int rc = once__a2a_check_message(m, "message", legacy, ONCE_A2A_MAX_PARTS, &e);
    if (expect_field == NULL) {
        if (rc != ONCE_OK)
            fail_msg("%s refused: %s: %s", text, e.field, e.why);
    } else {
        if (rc != ONCE_EINVAL)
            fail_msg("%s accepted, expected a refusal of %s", text, expect_field);
        if (strcmp(e.field, expect_field) != 0)
            fail_msg("%s: field %s, expected %s (%s)", text, e.field, expect_field, e.why);
        assert_true(strlen(e.why) > 0);
    }
    json_decref(m);
}

#define P "\"parts\":[{\"text\":\"hi\"}]"
#define U "\"role\":\"ROLE_USER\""
#define M "\"messageId\":\"m-1\""

/* n nested arrays around 1 (n = 0: just 1) into buf, as JSON text; an
 * object when obj (then n >= 1). */
static void nested(char *buf, size_t cap, int n, int obj)
{
    size_t o = 0;
    for (int i = 0; i < n; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s", obj && i == 0 ? "{\"k\":" : "[");
    o += (size_t)snprintf(buf + o, cap - o, "1");
    for (int i = n - 1; i >= 0; i--)
        o += (size_t)snprintf(buf + o, cap - o, "%s", obj && i == 0 ? "}" : "]");
}

/* Supplied values nest at most ONCE_VALUE_MAX_DEPTH deep, each field
 * named when it is over; the limit leaves room for every envelope. */
static void test_value_depth(void **state)
{
    (void)state;
    char v[256], msg[512];
    static const char *const shapes[][3] = {
        {"{" M "," U ",\"parts\":[{\"data\":", "}]}", "message.parts[0].data"},
        {"{" M "," U ",\"parts\":[{\"text\":\"x\",\"metadata\":", "}]}",
         "message.parts[0].metadata"},
        {"{" M "," U "," P ",\"metadata\":", "}", "message.metadata"},
    };
    assert_true(ONCE_VALUE_MAX_DEPTH + ONCE_ENVELOPE_MAX_DEPTH <= ONCE_JSON_MAX_DEPTH);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        nested(v, sizeof v, ONCE_VALUE_MAX_DEPTH, 1);
        snprintf(msg, sizeof msg, "%s%s%s", shapes[i][0], v, shapes[i][1]);
        check_msg(msg, 0, NULL);
        nested(v, sizeof v, ONCE_VALUE_MAX_DEPTH + 1, 1);
        snprintf(msg, sizeof msg, "%s%s%s", shapes[i][0], v, shapes[i][1]);
        check_msg(msg, 0, shapes[i][2]);
    }
    json_t *j = json_loads("[[1],[[[2]]],{}]", 0, NULL);
    assert_int_equal(once__json_depth(j, 10), 4);
    assert_int_equal(once__json_depth(j, 2), 3);   /* stops one past the limit */
    json_decref(j);
    j = json_integer(5);
    assert_int_equal(once__json_depth(j, 0), 0);
    json_decref(j);
}

static void test_message_accepted(void **state)
{
    (void)state;
    check_msg("{" M "," U "," P "}", 0, NULL);
    check_msg("{" M "," U ",\"parts\":[{\"raw\":\"aGVsbG8=\",\"filename\":\"a.txt\","
              "\"mediaType\":\"text/plain\",\"metadata\":{\"k\":1}}]}",
              0, NULL);
    check_msg("{" M "," U ",\"parts\":[{\"url\":\"https://x/y\"},{\"data\":{\"a\":[1,2]}},"
              "{\"data\":null},{\"data\":\"s\"}]}",
              0, NULL);
    check_msg("{" M "," U "," P ",\"taskId\":\"t-01HZX.a:b_c\",\"contextId\":\"c1\","
              "\"metadata\":{},\"extensions\":[\"urn:x\"],\"referenceTaskIds\":[\"t2\"]}",
              0, NULL);
    /* unknown members of a Message are tolerated (forward compatibility) */
    check_msg("{" M "," U "," P ",\"future\":1}", 0, NULL);
    /* 0.1: no messageId, role "user" */
    check_msg("{\"role\":\"user\"," P "}", 1, NULL);
}

static void test_message_refused(void **state)
{
    (void)state;
    check_msg("[]", 0, "message");
    check_msg("{" U "," P "}", 0, "message.messageId");
    check_msg("{\"messageId\":\"\"," U "," P "}", 0, "message.messageId");
    check_msg("{\"messageId\":5," U "," P "}", 0, "message.messageId");
    check_msg("{\"messageId\":\"has space\"," U "," P "}", 0, "message.messageId");
    check_msg("{\"messageId\":\"a\\nb\"," U "," P "}", 0, "message.messageId");
    check_msg("{\"messageId\":\"-leading-dash\"," U "," P "}", 0, "message.messageId");
    check_msg("{" M "," P "}", 0, "message.role");
    check_msg("{" M ",\"role\":\"ROLE_AGENT\"," P "}", 0, "message.role");
    check_msg("{" M ",\"role\":\"user\"," P "}", 0, "message.role");  /* 0.1 only */
    check_msg("{" M ",\"role\":1," P "}", 0, "message.role");
    check_msg("{" M "," U "}", 0, "message.parts");
    check_msg("{" M "," U ",\"parts\":{}}", 0, "message.parts");
    check_msg("{" M "," U ",\"parts\":[]}", 0, "message.parts");
    check_msg("{" M "," U ",\"parts\":[\"hi\"]}", 0, "message.parts[0]");
    check_msg("{" M "," U ",\"parts\":[{\"text\":\"a\"},{}]}", 0, "message.parts[1]");
    check_msg("{" M "," U ",\"parts\":[{\"text\":\"a\",\"url\":\"b\"}]}", 0, "message.parts[0]");
    check_msg("{" M "," U ",\"parts\":[{\"text\":1}]}", 0, "message.parts[0].text");
    check_msg("{" M "," U ",\"parts\":[{\"raw\":\"not base64!\"}]}", 0, "message.parts[0].raw");
    check_msg("{" M "," U ",\"parts\":[{\"url\":\"\"}]}", 0, "message.parts[0].url");
    check_msg("{" M "," U ",\"parts\":[{\"text\":\"a\",\"kind\":\"text\"}]}", 0,
              "message.parts[0].kind");
    check_msg("{" M "," U ",\"parts\":[{\"text\":\"a\",\"metadata\":[]}]}", 0,
              "message.parts[0].metadata");
    check_msg("{" M "," U ",\"parts\":[{\"raw\":\"YQ==\",\"filename\":3}]}", 0,
              "message.parts[0].filename");
    check_msg("{" M "," U ",\"parts\":[{\"raw\":\"YQ==\",\"mediaType\":null}]}", 0,
              "message.parts[0].mediaType");
    check_msg("{" M "," U "," P ",\"taskId\":\"bad id\"}", 0, "message.taskId");
    check_msg("{" M "," U "," P ",\"taskId\":7}", 0, "message.taskId");
    check_msg("{" M "," U "," P ",\"contextId\":\"\"}", 0, "message.contextId");
    check_msg("{" M "," U "," P ",\"metadata\":\"x\"}", 0, "message.metadata");
    check_msg("{" M "," U "," P ",\"extensions\":\"urn:x\"}", 0, "message.extensions");
    check_msg("{" M "," U "," P ",\"extensions\":[1]}", 0, "message.extensions[0]");
    check_msg("{" M "," U "," P ",\"referenceTaskIds\":[\"ok\",\"no way\"]}", 0,
              "message.referenceTaskIds[1]");
}

static void test_part_limit(void **state)
{
    (void)state;
    for (int n = 64; n <= 65; n++) {
        json_t *parts = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(parts, json_pack("{s:s}", "text", "x"));
        json_t *m = json_pack("{s:s, s:s, s:o}", "messageId", "m", "role", "ROLE_USER", "parts",
                              parts);
        a2a_verr e;
        int rc = once__a2a_check_message(m, "message", 0, ONCE_A2A_MAX_PARTS, &e);
        if (n == 64) {
            assert_int_equal(rc, ONCE_OK);
        } else {
            assert_int_equal(rc, ONCE_EINVAL);
            assert_string_equal(e.field, "message.parts");
            assert_non_null(strstr(e.why, "64"));
        }
        json_decref(m);
    }
}

static void test_id_length(void **state)
{
    (void)state;
    char id[ONCE_ID_MAX + 2];
    memset(id, 'a', sizeof id);
    id[ONCE_ID_MAX] = '\0';
    json_t *v = json_string(id);
    a2a_verr e;
    assert_int_equal(once__a2a_check_id(v, "id", &e), ONCE_OK);
    json_decref(v);
    id[ONCE_ID_MAX] = 'a';
    id[ONCE_ID_MAX + 1] = '\0';
    v = json_string(id);
    assert_int_equal(once__a2a_check_id(v, "id", &e), ONCE_EINVAL);
    assert_string_equal(e.field, "id");
    json_decref(v);
    v = json_string("t\xc3\xa9");
    assert_int_equal(once__a2a_check_id(v, "x.id", &e), ONCE_EINVAL);
    assert_string_equal(e.field, "x.id");
    json_decref(v);
}

static void test_base64(void **state)
{
    (void)state;
    const char *ok[] = {"", "YQ==", "YWI=", "YWJj", "YQ", "YWI", "-_-_", "aGVsbG8gd29ybGQ="};
    const char *bad[] = {"Y", "YQ=", "YQ===", "Y===", "a b", "YQ==YQ==", "é"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        assert_true(once__base64_valid(ok[i], strlen(ok[i])));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (once__base64_valid(bad[i], strlen(bad[i])))
            fail_msg("accepted %s", bad[i]);
}

static void test_time(void **state)
{
    (void)state;
    int64_t ms;
    assert_int_equal(once__a2a_parse_time("1970-01-01T00:00:00Z", &ms), ONCE_OK);
    assert_int_equal(ms, 0);
    assert_int_equal(once__a2a_parse_time("2026-12-02T12:00:00.123Z", &ms), ONCE_OK);
    char back[25];
    once_format_time(ms, back);
    assert_string_equal(back, "2026-12-02T12:00:00.123Z");
    assert_int_equal(once__a2a_parse_time("2026-12-02T14:00:00+02:00", &ms), ONCE_OK);
    once_format_time(ms, back);
    assert_string_equal(back, "2026-12-02T12:00:00.000Z");
    assert_int_equal(once__a2a_parse_time("2024-02-29T00:00:00.5Z", &ms), ONCE_OK);
    once_format_time(ms, back);
    assert_string_equal(back, "2024-02-29T00:00:00.500Z");
    const char *bad[] = {"2026-12-02", "2026-13-01T00:00:00Z", "2026-12-02T12:00:00",
                         "2026-12-02T25:00:00Z", "2026-12-02T12:00:00.Z", "x",
                         "2026-12-02T12:00:00Zjunk"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (once__a2a_parse_time(bad[i], &ms) == ONCE_OK)
            fail_msg("accepted %s", bad[i]);
}

static void test_history(void **state)
{
    (void)state;
    int n;
    a2a_verr e;
    assert_int_equal(once__a2a_check_history(NULL, "historyLength", &n, &e), ONCE_OK);
    assert_int_equal(n, -1);
    json_t *v = json_integer(0);
    assert_int_equal(once__a2a_check_history(v, "historyLength", &n, &e), ONCE_OK);
    assert_int_equal(n, 0);
    json_decref(v);
    v = json_integer(-1);
    assert_int_equal(once__a2a_check_history(v, "historyLength", &n, &e), ONCE_EINVAL);
    assert_string_equal(e.field, "historyLength");
    json_decref(v);
    v = json_string("3");
    assert_int_equal(once__a2a_check_history(v, "configuration.historyLength", &n, &e),
                     ONCE_EINVAL);
    assert_string_equal(e.field, "configuration.historyLength");
    json_decref(v);
    v = json_integer(3000000000LL);
    assert_int_equal(once__a2a_check_history(v, "historyLength", &n, &e), ONCE_EINVAL);
    json_decref(v);
}

static void test_legacy_in(void **state)
{
    (void)state;
    json_t *m = json_loads("{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"hi\"},"
                           "{\"type\":\"file\",\"file\":{\"name\":\"a.txt\",\"mimeType\":"
                           "\"text/plain\",\"bytes\":\"YQ==\"}},{\"type\":\"data\",\"data\":"
                           "{\"k\":1},\"metadata\":{\"m\":2}}],\"metadata\":{\"x\":1}}",
                           0, NULL);
    assert_non_null(m);
    json_t *out = NULL;
    a2a_verr e;
    assert_int_equal(once__a2a_legacy_message_in(m, &out, &e), ONCE_OK);
    json_t *want = json_loads("{\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"hi\"},{\"raw\":"
                              "\"YQ==\",\"filename\":\"a.txt\",\"mediaType\":\"text/plain\"},"
                              "{\"data\":{\"k\":1},\"metadata\":{\"m\":2}}],\"metadata\":{\"x\":1}}",
                              0, NULL);
    assert_true(json_equal(out, want));
    assert_int_equal(once__a2a_check_message(out, "message", 1, 64, &e), ONCE_OK);
    json_decref(out);
    json_decref(want);
    json_decref(m);

    m = json_loads("{\"role\":\"user\",\"parts\":[{\"type\":\"video\"}]}", 0, NULL);
    assert_int_equal(once__a2a_legacy_message_in(m, &out, &e), ONCE_EINVAL);
    assert_string_equal(e.field, "message.parts[0]");
    json_decref(m);
}

static void test_legacy_out(void **state)
{
    (void)state;
    json_t *t = json_loads(
        "{\"task\":{\"id\":\"t1\",\"contextId\":\"c1\",\"status\":{\"state\":"
        "\"TASK_STATE_INPUT_REQUIRED\",\"message\":{\"messageId\":\"a1\",\"role\":\"ROLE_AGENT\","
        "\"parts\":[{\"text\":\"which?\"}]},\"timestamp\":\"2026-12-02T12:00:00.000Z\"},"
        "\"artifacts\":[{\"artifactId\":\"x\",\"name\":\"n\",\"parts\":[{\"url\":\"u\","
        "\"mediaType\":\"image/png\"}]}],\"history\":[{\"messageId\":\"m1\",\"role\":\"ROLE_USER\","
        "\"parts\":[{\"data\":[1]}]}]}}",
        0, NULL);
    assert_non_null(t);
    json_t *o = once__a2a_legacy_task_out(t, "t1");
    json_t *want = json_loads(
        "{\"id\":\"t1\",\"sessionId\":\"c1\",\"status\":{\"state\":\"input-required\","
        "\"message\":{\"role\":\"agent\",\"parts\":[{\"type\":\"text\",\"text\":\"which?\"}],"
        "\"messageId\":\"a1\"},\"timestamp\":\"2026-12-02T12:00:00.000Z\"},\"artifacts\":[{"
        "\"name\":\"n\",\"parts\":[{\"type\":\"file\",\"file\":{\"uri\":\"u\",\"mimeType\":"
        "\"image/png\"}}],\"index\":0}],\"history\":[{\"role\":\"user\",\"parts\":[{\"type\":"
        "\"data\",\"data\":[1]}],\"messageId\":\"m1\"}]}",
        0, NULL);
    if (!json_equal(o, want)) {
        char *s = json_dumps(o, JSON_COMPACT);
        fail_msg("got %s", s);
    }
    json_decref(o);
    json_decref(want);
    json_decref(t);
    /* a direct Message result becomes a completed 0.1 task */
    t = json_loads("{\"message\":{\"messageId\":\"a\",\"role\":\"ROLE_AGENT\",\"contextId\":\"c\","
                   "\"parts\":[{\"text\":\"done\"}]}}",
                   0, NULL);
    o = once__a2a_legacy_task_out(t, "t9");
    assert_string_equal(json_string_value(json_object_get(o, "id")), "t9");
    assert_string_equal(json_string_value(json_object_get(o, "sessionId")), "c");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(o, "status"), "state")), "completed");
    json_decref(o);
    json_decref(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_message_accepted), cmocka_unit_test(test_message_refused),
        cmocka_unit_test(test_part_limit),       cmocka_unit_test(test_id_length),
        cmocka_unit_test(test_base64),           cmocka_unit_test(test_time),
        cmocka_unit_test(test_history),          cmocka_unit_test(test_legacy_in),
        cmocka_unit_test(test_legacy_out),
        cmocka_unit_test(test_value_depth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
