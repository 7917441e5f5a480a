/*
 * test_exec_jsonl.c -- the `--exec` JSON-lines protocol as pure functions
 * (src/exec/jsonl.c): every output line type parses into the command the
 * subprocess executor applies, every malformed line is refused with a reason
 * that names the problem and quotes the line (as valid UTF-8, since it ends
 * up in the task's status message), and the stdin input line carries every
 * documented field on one line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc_int.h"
#include "core/json_depth.h"
#include "core/quote.h"
#include "exec/jsonl.h"

static int parse(const char *line, once__exec_cmd *c, char *why, size_t cap)
{
    return once__exec_parse_line(line, strlen(line), c, why, cap);
}

/* The line must be refused with rc, and the reason must contain `needle`,
 * quote the start of the line, and be valid UTF-8 without control chars. */
static void refused(const char *line, int rc, const char *needle)
{
    once__exec_cmd c;
    char why[512];
    json_t *s;

    int got = parse(line, &c, why, sizeof why);
    if (got != rc || strstr(why, needle) == NULL)
        fail_msg("line %s: rc %d (want %d), reason \"%s\" (want \"%s\")", line, got, rc, why,
                 needle);
    assert_non_null(strstr(why, "(line: "));
    assert_null(c.msg);
    assert_null(c.text);
    s = json_string(why);   /* NULL for invalid UTF-8 */
    assert_non_null(s);
    json_decref(s);
    for (const char *p = why; *p; p++)
        assert_true((unsigned char)*p >= 0x20 && *p != 0x7F);
}

/* An agent's data and metadata nest at most ONCE_VALUE_MAX_DEPTH deep: a
 * line over it is refused with a reason naming the field and the limit. */
static void test_value_depth(void **state)
{
    (void)state;
    char v[256], line[512], need[64];
    once__exec_cmd c;
    char why[512];
    static const char *const shapes[][3] = {
        {"{\"artifact\":{\"parts\":[{\"data\":", "}]}}", "artifact.parts[0].data"},
        {"{\"artifact\":{\"parts\":[{\"text\":\"x\"}],\"metadata\":", "}}",
         "artifact.metadata"},
        {"{\"status\":\"completed\",\"message\":{\"parts\":[{\"text\":\"x\","
         "\"metadata\":",
         "}]}}", "message.parts[0].metadata"},
        {"{\"reply\":{\"parts\":[{\"text\":\"x\"}],\"metadata\":", "}}", ".metadata"},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        for (int over = 0; over <= 1; over++) {
            int n = ONCE_VALUE_MAX_DEPTH + over;
            size_t o = (size_t)snprintf(v, sizeof v, "{\"k\":");
            for (int k = 1; k < n; k++)
                o += (size_t)snprintf(v + o, sizeof v - o, "[");
            o += (size_t)snprintf(v + o, sizeof v - o, "1");
            for (int k = 1; k < n; k++)
                o += (size_t)snprintf(v + o, sizeof v - o, "]");
            snprintf(v + o, sizeof v - o, "}");
            snprintf(line, sizeof line, "%s%s%s", shapes[i][0], v, shapes[i][1]);
            if (!over) {
                if (parse(line, &c, why, sizeof why) != ONCE_OK)
                    fail_msg("%s refused: %s", line, why);
                once__exec_cmd_clear(&c);
            } else {
                snprintf(need, sizeof need, "%s nests deeper than %d levels", shapes[i][2],
                         ONCE_VALUE_MAX_DEPTH);
                refused(line, ONCE_EINVAL, need);
            }
        }
    }
}

static void test_status_states(void **state)
{
    static const struct {
        const char *name;
        once_state st;
    } ok[] = {
        {"working", ONCE_STATE_WORKING},
        {"input-required", ONCE_STATE_INPUT_REQUIRED},
        {"auth-required", ONCE_STATE_AUTH_REQUIRED},
        {"completed", ONCE_STATE_COMPLETED},
        {"failed", ONCE_STATE_FAILED},
        {"rejected", ONCE_STATE_REJECTED},
        {"TASK_STATE_WORKING", ONCE_STATE_WORKING},
        {"TASK_STATE_INPUT_REQUIRED", ONCE_STATE_INPUT_REQUIRED},
        {"TASK_STATE_AUTH_REQUIRED", ONCE_STATE_AUTH_REQUIRED},
        {"TASK_STATE_COMPLETED", ONCE_STATE_COMPLETED},
        {"TASK_STATE_FAILED", ONCE_STATE_FAILED},
        {"TASK_STATE_REJECTED", ONCE_STATE_REJECTED},
    };
    (void)state;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char line[128];
        once__exec_cmd c;
        snprintf(line, sizeof line, "{\"status\":\"%s\"}", ok[i].name);
        assert_int_equal(parse(line, &c, NULL, 0), ONCE_OK);
        assert_int_equal(c.kind, ONCE__EXEC_STATUS);
        assert_int_equal(c.state, ok[i].st);
        assert_null(c.msg);
        once__exec_cmd_clear(&c);
    }
    refused("{\"status\":\"canceled\"}", ONCE_EINVAL, "cannot be set by a command");
    refused("{\"status\":\"TASK_STATE_SUBMITTED\"}", ONCE_EINVAL, "cannot be set");
    refused("{\"status\":\"done\"}", ONCE_EINVAL, "unknown status \"done\"");
    refused("{\"status\":5}", ONCE_EINVAL, "status must be a string");
}

static void test_status_message(void **state)
{
    once__exec_cmd c;
    (void)state;

    /* text shorthand becomes a one-part message */
    assert_int_equal(parse("{\"status\":\"working\",\"text\":\"reading the contract\"}", &c,
                           NULL, 0),
                     ONCE_OK);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(c.msg, "parts"), 0),
                                          "text")),
        "reading the contract");
    assert_int_equal(json_array_size(json_object_get(c.msg, "parts")), 1);
    once__exec_cmd_clear(&c);

    /* a full message passes through untouched, parts of every kind */
    assert_int_equal(
        parse("{\"status\":\"input-required\",\"message\":{\"messageId\":\"m1\","
              "\"role\":\"ROLE_AGENT\",\"metadata\":{\"k\":1},\"parts\":[{\"text\":\"sign?\"},"
              "{\"data\":{\"a\":[1,2]},\"mediaType\":\"application/json\"}]}}",
              &c, NULL, 0),
        ONCE_OK);
    assert_int_equal(c.state, ONCE_STATE_INPUT_REQUIRED);
    assert_string_equal(json_string_value(json_object_get(c.msg, "messageId")), "m1");
    assert_int_equal(json_array_size(json_object_get(c.msg, "parts")), 2);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(c.msg, "metadata"), "k")),
                     1);
    once__exec_cmd_clear(&c);

    refused("{\"status\":\"failed\",\"text\":\"a\",\"message\":{\"parts\":[{\"text\":\"b\"}]}}",
            ONCE_EINVAL, "both message and text");
    refused("{\"status\":\"failed\",\"text\":7}", ONCE_EINVAL, "text must be a string");
    refused("{\"status\":\"failed\",\"message\":\"oops\"}", ONCE_EINVAL,
            "message must be an object");
    refused("{\"status\":\"failed\",\"message\":{\"parts\":[]}}", ONCE_EINVAL,
            "message.parts must be a non-empty array");
    refused("{\"status\":\"failed\",\"message\":{\"text\":\"x\"}}", ONCE_EINVAL,
            "unknown member \"text\"");
    refused("{\"status\":\"failed\",\"message\":{\"role\":\"ROLE_USER\",\"parts\":[{\"text\":"
            "\"x\"}]}}",
            ONCE_EINVAL, "role must be \"ROLE_AGENT\"");
    /* A2A 0.3 shapes are named as such */
    refused("{\"status\":\"failed\",\"message\":{\"parts\":[{\"kind\":\"text\",\"text\":\"x\"}]}}",
            ONCE_EINVAL, "message.parts[0] has \"kind\"");
    refused("{\"status\":\"working\",\"extra\":1}", ONCE_EINVAL,
            "status has unknown member \"extra\"");
}

static void test_artifact_parts(void **state)
{
    once__exec_cmd c;
    json_t *parts;
    (void)state;

    assert_int_equal(
        parse("{\"artifact\":{\"artifactId\":\"a1\",\"name\":\"report\",\"description\":\"d\","
              "\"metadata\":{\"x\":true},\"extensions\":[\"urn:e\"],\"parts\":["
              "{\"text\":\"hello\"},"
              "{\"raw\":\"aGVsbG8=\",\"filename\":\"h.bin\",\"mediaType\":"
              "\"application/octet-stream\"},"
              "{\"url\":\"https://example.com/r.pdf\",\"filename\":\"r.pdf\","
              "\"mediaType\":\"application/pdf\"},"
              "{\"data\":{\"score\":0.5},\"metadata\":{\"m\":1}}]},"
              "\"append\":false,\"lastChunk\":true}",
              &c, NULL, 0),
        ONCE_OK);
    assert_int_equal(c.kind, ONCE__EXEC_ARTIFACT);
    assert_int_equal(c.append, 0);
    assert_int_equal(c.last_chunk, 1);
    parts = json_object_get(c.msg, "parts");
    assert_int_equal(json_array_size(parts), 4);
    assert_string_equal(json_string_value(json_object_get(json_array_get(parts, 1), "filename")),
                        "h.bin");
    assert_string_equal(json_string_value(json_object_get(json_array_get(parts, 2), "mediaType")),
                        "application/pdf");
    assert_string_equal(json_string_value(json_object_get(c.msg, "name")), "report");
    once__exec_cmd_clear(&c);

    /* append / lastChunk default to false; id optional without append */
    assert_int_equal(parse("{\"artifact\":{\"parts\":[{\"text\":\"x\"}]}}", &c, NULL, 0),
                     ONCE_OK);
    assert_int_equal(c.append, 0);
    assert_int_equal(c.last_chunk, 0);
    once__exec_cmd_clear(&c);
    assert_int_equal(parse("{\"artifact\":{\"artifactId\":\"a\",\"parts\":[{\"raw\":\"\"}]},"
                           "\"append\":true}",
                           &c, NULL, 0),
                     ONCE_OK);
    assert_int_equal(c.append, 1);
    once__exec_cmd_clear(&c);
    /* unpadded and URL-safe base64 are what ProtoJSON accepts too */
    assert_int_equal(parse("{\"artifact\":{\"parts\":[{\"raw\":\"-_8\"}]}}", &c, NULL, 0),
                     ONCE_OK);
    once__exec_cmd_clear(&c);

    refused("{\"artifact\":{\"parts\":[{\"text\":\"x\"}]},\"append\":true}", ONCE_EINVAL,
            "append needs artifact.artifactId");
    refused("{\"artifact\":{\"parts\":[{\"text\":\"x\"}]},\"lastchunk\":true}", ONCE_EINVAL,
            "artifact has unknown member \"lastchunk\"");
    refused("{\"artifact\":{\"parts\":[{\"text\":\"x\"}]},\"lastChunk\":1}", ONCE_EINVAL,
            "lastChunk must be true or false");
    refused("{\"artifact\":{\"name\":\"n\"}}", ONCE_EINVAL, "artifact has no parts");
    refused("{\"artifact\":[]}", ONCE_EINVAL, "artifact must be an object");
    refused("{\"artifact\":{\"parts\":[{\"text\":\"x\",\"url\":\"u\"}]}}", ONCE_EINVAL,
            "artifact.parts[0] must hold exactly one of text, raw, url, data (found 2)");
    refused("{\"artifact\":{\"parts\":[{\"filename\":\"f\"}]}}", ONCE_EINVAL, "(found 0)");
    refused("{\"artifact\":{\"parts\":[{\"text\":\"x\"},{\"raw\":\"not base64!\"}]}}",
            ONCE_EINVAL, "artifact.parts[1].raw is not valid base64");
    refused("{\"artifact\":{\"parts\":[{\"raw\":\"QQ=A\"}]}}", ONCE_EINVAL, "not valid base64");
    refused("{\"artifact\":{\"parts\":[{\"raw\":\"QUJDR\"}]}}", ONCE_EINVAL, "not valid base64");
    refused("{\"artifact\":{\"parts\":[{\"url\":\"\"}]}}", ONCE_EINVAL,
            "url must be a non-empty string");
    refused("{\"artifact\":{\"parts\":[{\"text\":\"x\",\"filename\":3}]}}", ONCE_EINVAL,
            "artifact.parts[0].filename must be a string");
    refused("{\"artifact\":{\"artifactId\":\"\",\"parts\":[{\"text\":\"x\"}]}}", ONCE_EINVAL,
            "artifact.artifactId must not be empty");
    refused("{\"artifact\":{\"parts\":[{\"text\":\"x\"}],\"metadata\":[]}}", ONCE_EINVAL,
            "artifact.metadata must be an object");
}

static void test_reply_checkpoint_log(void **state)
{
    once__exec_cmd c;
    (void)state;

    assert_int_equal(parse("{\"reply\":{\"parts\":[{\"text\":\"42\"}]}}", &c, NULL, 0), ONCE_OK);
    assert_int_equal(c.kind, ONCE__EXEC_REPLY);
    assert_non_null(json_object_get(c.msg, "parts"));
    once__exec_cmd_clear(&c);
    refused("{\"reply\":{}}", ONCE_EINVAL, "reply has no parts");
    refused("{\"reply\":\"42\"}", ONCE_EINVAL, "reply must be an object");

    assert_int_equal(parse("{\"checkpoint\":\"{\\\"page\\\":3}\",\"step\":4}", &c, NULL, 0),
                     ONCE_OK);
    assert_int_equal(c.kind, ONCE__EXEC_CHECKPOINT);
    assert_string_equal(c.text, "{\"page\":3}");
    assert_int_equal(c.has_step, 1);
    assert_int_equal(c.step, 4);
    once__exec_cmd_clear(&c);
    assert_int_equal(parse("{\"checkpoint\":\"\"}", &c, NULL, 0), ONCE_OK);
    assert_int_equal(c.has_step, 0);
    assert_string_equal(c.text, "");
    once__exec_cmd_clear(&c);
    refused("{\"checkpoint\":{\"page\":3}}", ONCE_EINVAL, "checkpoint must be a string");
    refused("{\"checkpoint\":\"x\",\"step\":-1}", ONCE_EINVAL, "non-negative integer");
    refused("{\"checkpoint\":\"x\",\"step\":1.5}", ONCE_EINVAL, "non-negative integer");
    refused("{\"checkpoint\":\"x\",\"step\":\"2\"}", ONCE_EINVAL, "non-negative integer");

    assert_int_equal(parse("{\"log\":\"fetched 3 pages\"}", &c, NULL, 0), ONCE_OK);
    assert_int_equal(c.kind, ONCE__EXEC_LOG);
    assert_string_equal(c.text, "fetched 3 pages");
    once__exec_cmd_clear(&c);
    refused("{\"log\":null}", ONCE_EINVAL, "log must be a string");
}

static void test_line_framing(void **state)
{
    once__exec_cmd c;
    char why[512];
    (void)state;

    /* blank lines are tolerated; CRLF output is tolerated */
    assert_int_equal(parse("", &c, why, sizeof why), ONCE_OK);
    assert_int_equal(c.kind, ONCE__EXEC_BLANK);
    assert_int_equal(parse("  \t\r", &c, why, sizeof why), ONCE_OK);
    assert_int_equal(c.kind, ONCE__EXEC_BLANK);
    assert_int_equal(parse("{\"status\":\"completed\"}\r", &c, why, sizeof why), ONCE_OK);
    assert_int_equal(c.kind, ONCE__EXEC_STATUS);

    refused("garbage", ONCE_EPARSE, "not JSON");
    refused("Traceback (most recent call last):", ONCE_EPARSE, "(line: Traceback (most");
    refused("[1,2]", ONCE_EPARSE, "not a JSON object");
    refused("{\"status\":\"completed\"} trailing", ONCE_EPARSE, "not JSON");
    refused("{\"status\":\"completed\"", ONCE_EPARSE, "not JSON");
    refused("{\"status\":\"working\",\"status\":\"completed\"}", ONCE_EPARSE, "not JSON");
    refused("{}", ONCE_EINVAL, "unknown command");
    refused("{\"kind\":\"status-update\"}", ONCE_EINVAL, "unknown command");
    refused("{\"status\":\"completed\",\"log\":\"x\"}", ONCE_EINVAL, "two commands");
    /* invalid UTF-8 and control characters never reach the reason raw */
    refused("\xff\xfe{\"log\":\"x\"}\x01", ONCE_EPARSE, "(line: ??{\"log\":\"x\"}?)");
    refused("{\"log\":\"\xc3\"}", ONCE_EPARSE, "not JSON");

    /* the quote is cut, and says so */
    {
        char line[400];
        memset(line, 'x', sizeof line - 1);
        line[sizeof line - 1] = '\0';
        assert_int_equal(parse(line, &c, why, sizeof why), ONCE_EPARSE);
        assert_non_null(strstr(why, "..."));
        assert_true(strlen(why) < 300);
    }
}

static void test_line_too_long(void **state)
{
    size_t n = ONCE_EXEC_LINE_MAX + 1;
    char *line = once_malloc(n + 1);
    once__exec_cmd c;
    char why[512];
    (void)state;

    /* {"log":"xxxx..."} of exactly the limit is fine, one byte more is not */
    memset(line, 'x', n);
    memcpy(line, "{\"log\":\"", 8);
    memcpy(line + ONCE_EXEC_LINE_MAX - 2, "\"}", 2);
    assert_int_equal(once__exec_parse_line(line, ONCE_EXEC_LINE_MAX, &c, why, sizeof why),
                     ONCE_OK);
    assert_int_equal(strlen(c.text), ONCE_EXEC_LINE_MAX - 10);
    once__exec_cmd_clear(&c);
    assert_int_equal(once__exec_parse_line(line, n, &c, why, sizeof why), ONCE_ERANGE);
    assert_non_null(strstr(why, "longer than 1 MiB"));
    once_free(line);
}

static void test_quote(void **state)
{
    char out[32];
    (void)state;

    once__quote("abc", 3, 10, out, sizeof out);
    assert_string_equal(out, "abc");
    once__quote("abcdef", 6, 4, out, sizeof out);
    assert_string_equal(out, "abcd...");
    once__quote("a\nb\tc", 5, 10, out, sizeof out);
    assert_string_equal(out, "a?b?c");
    /* "é" is two bytes: a cut after one byte drops it whole */
    once__quote("x\xc3\xa9y", 4, 2, out, sizeof out);
    assert_string_equal(out, "x...");
    once__quote("x\xc3\xa9y", 4, 3, out, sizeof out);
    assert_string_equal(out, "x\xc3\xa9...");
    /* surrogates and overlongs are not UTF-8 */
    once__quote("\xed\xa0\x80\xc0\xaf", 5, 20, out, sizeof out);
    assert_string_equal(out, "?????");
    /* never more than the buffer, whatever max says */
    once__quote("0123456789012345678901234567890123456789", 40, 1000, out, 12);
    assert_true(strlen(out) < 12);
    assert_non_null(strstr(out, "..."));
}

static void test_input_line(void **state)
{
    once__exec_turn t = {
        .task_id = "t-1",
        .context_id = "c-1",
        .fence = 3,
        .step = 7,
        .resumed = 1,
        .message_json = "{\"messageId\":\"m\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":"
                        "\"hi\\nthere\"}]}",
        .task_json = "{\"id\":\"t-1\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}",
        .checkpoint = "line1\nline2",
    };
    char *out;
    size_t len;
    json_t *j;
    (void)state;

    assert_int_equal(once__exec_input(&t, &out, &len), ONCE_OK);
    assert_int_equal(strlen(out), len);
    /* exactly one line: the only newline is the last byte */
    assert_ptr_equal(strchr(out, '\n'), out + len - 1);
    j = json_loadb(out, len, 0, NULL);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "taskId")), "t-1");
    assert_string_equal(json_string_value(json_object_get(j, "contextId")), "c-1");
    assert_int_equal(json_integer_value(json_object_get(j, "fence")), 3);
    assert_int_equal(json_integer_value(json_object_get(j, "step")), 7);
    assert_true(json_is_true(json_object_get(j, "resumed")));
    assert_string_equal(json_string_value(json_object_get(j, "checkpoint")), "line1\nline2");
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "message"),
                                                          "messageId")),
                        "m");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(j, "task"), "status"), "state")),
                        "TASK_STATE_WORKING");
    json_decref(j);
    once_free(out);

    /* nothing known: every field still present, as null / false */
    t = (once__exec_turn){.task_id = "t-2", .context_id = "c-2"};
    assert_int_equal(once__exec_input(&t, &out, &len), ONCE_OK);
    j = json_loadb(out, len, 0, NULL);
    assert_non_null(j);
    assert_int_equal(json_object_size(j), 8);
    assert_true(json_is_null(json_object_get(j, "checkpoint")));
    assert_true(json_is_null(json_object_get(j, "message")));
    assert_true(json_is_null(json_object_get(j, "task")));
    assert_true(json_is_false(json_object_get(j, "resumed")));
    json_decref(j);
    once_free(out);
}

/* Out of memory anywhere ends in ONCE_ENOMEM and no leak (ASan checks);
 * an input built despite a failure is the whole input, never one with a
 * member silently null. JSON values count as allocations (src/core/alloc.c),
 * hence the many rounds. */
static void test_alloc_faults(void **state)
{
    static const char msg[] = "{\"parts\":[{\"text\":\"a text longer than sixteen\"}]}";
    static const char task[] = "{\"id\":\"t\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}";
    once__exec_turn t = {.task_id = "t",
                         .context_id = "c",
                         .checkpoint = "cp",
                         .message_json = msg,
                         .task_json = task};
    (void)state;
    char *want = NULL;
    size_t want_len;
    assert_int_equal(once__exec_input(&t, &want, &want_len), ONCE_OK);

    for (long i = 0;; i++) {
        once__exec_cmd c;
        char *out = NULL;
        size_t len;
        int rc1, rc2;
        once__alloc_fail_after(i);
        rc1 = once__exec_input(&t, &out, &len);
        rc2 = parse("{\"checkpoint\":\"state\",\"step\":1}", &c, NULL, 0);
        once__alloc_fail_after(-1);
        assert_true(rc1 == ONCE_OK || rc1 == ONCE_ENOMEM);
        assert_true(rc2 == ONCE_OK || rc2 == ONCE_ENOMEM);
        if (rc1 == ONCE_OK && strcmp(out, want) != 0)
            fail_msg("allocation %ld failed, yet the input was built: %s", i, out);
        once_free(out);
        once__exec_cmd_clear(&c);
        if (rc1 == ONCE_OK && rc2 == ONCE_OK)
            break;
        assert_true(i < 500);
    }
    once_free(want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_states),   cmocka_unit_test(test_status_message),
        cmocka_unit_test(test_artifact_parts),  cmocka_unit_test(test_reply_checkpoint_log),
        cmocka_unit_test(test_line_framing),    cmocka_unit_test(test_line_too_long),
        cmocka_unit_test(test_quote),           cmocka_unit_test(test_input_line),
        cmocka_unit_test(test_alloc_faults),
        cmocka_unit_test(test_value_depth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
