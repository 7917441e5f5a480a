/*
 * test_shape.c -- one Part/Message validator for everything once takes in
 * (src/core/shape.c): a client's request (src/a2a/validate.c) and an agent's
 * output line (src/exec/jsonl.c) are judged by the same Part rules and
 * refused with the same reason, word for word; only what the rules say
 * differs by sender (role, required members, unknown members, ID syntax).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "a2a/a2a_int.h"
#include "core/json_depth.h"
#include "exec/jsonl.h"

static int client_msg(const char *text, a2a_verr *e)
{
    json_t *m = json_loads(text, 0, NULL);
    assert_non_null(m);
    memset(e, 0, sizeof *e);
    int rc = once__a2a_check_message(m, "message", 0, 64, e);
    json_decref(m);
    return rc;
}

/* A client's message with the one part p, through the request validator:
 * ONCE_OK, or the refusal in *e. */
static int client_part(const char *p, a2a_verr *e)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"messageId\":\"m-1\",\"role\":\"ROLE_USER\",\"parts\":[%s]}", p);
    return client_msg(text, e);
}

static int agent_line(const char *line, char *why, size_t cap)
{
    once__exec_cmd c;
    int rc = once__exec_parse_line(line, strlen(line), &c, why, cap);
    once__exec_cmd_clear(&c);
    return rc;
}

/* The same part in an agent's status line: ONCE_OK, or the reason. */
static int agent_part(const char *p, char *why, size_t cap)
{
    char line[1024];
    snprintf(line, sizeof line, "{\"status\":\"working\",\"message\":{\"parts\":[%s]}}", p);
    return agent_line(line, why, cap);
}

/* Every bad Part is refused on both paths, naming the same field and with
 * the same reason (the agent's reason then quotes its line). */
static void test_parts_judged_once(void **state)
{
    (void)state;
    char deep[256];
    size_t o = 0;
    for (int i = 0; i <= ONCE_VALUE_MAX_DEPTH; i++)
        o += (size_t)snprintf(deep + o, sizeof deep - o, "[");
    for (int i = 0; i <= ONCE_VALUE_MAX_DEPTH; i++)
        o += (size_t)snprintf(deep + o, sizeof deep - o, "]");
    char deep_part[300];
    snprintf(deep_part, sizeof deep_part, "{\"data\":%s}", deep);

    static const char *const fixed[][2] = {
        {"\"hi\"", "message.parts[0]"},
        {"{}", "message.parts[0]"},
        {"{\"metadata\":{}}", "message.parts[0]"},
        {"{\"text\":\"a\",\"url\":\"b\"}", "message.parts[0]"},
        {"{\"text\":1}", "message.parts[0].text"},
        {"{\"raw\":\"not base64!\"}", "message.parts[0].raw"},
        {"{\"raw\":5}", "message.parts[0].raw"},
        {"{\"url\":\"\"}", "message.parts[0].url"},
        {"{\"url\":7}", "message.parts[0].url"},
        {"{\"text\":\"a\",\"kind\":\"text\"}", "message.parts[0].kind"},
        {"{\"text\":\"a\",\"colour\":\"red\"}", "message.parts[0].colour"},
        {"{\"text\":\"a\",\"metadata\":[]}", "message.parts[0].metadata"},
        {"{\"raw\":\"YQ==\",\"filename\":3}", "message.parts[0].filename"},
        {"{\"raw\":\"YQ==\",\"mediaType\":null}", "message.parts[0].mediaType"},
    };
    for (size_t i = 0; i <= sizeof fixed / sizeof fixed[0]; i++) {
        const char *p = i < sizeof fixed / sizeof fixed[0] ? fixed[i][0] : deep_part;
        const char *field =
            i < sizeof fixed / sizeof fixed[0] ? fixed[i][1] : "message.parts[0].data";
        a2a_verr e;
        char why[512];
        if (client_part(p, &e) != ONCE_EINVAL || strcmp(e.field, field) != 0)
            fail_msg("client part %s: field \"%s\", want %s", p, e.field, field);
        if (agent_part(p, why, sizeof why) != ONCE_EINVAL)
            fail_msg("agent part %s accepted", p);
        size_t n = strlen(e.why);
        if (n == 0 || strncmp(why, e.why, n) != 0 || strncmp(why + n, " (line: ", 8) != 0)
            fail_msg("part %s: the client hears \"%s\", the agent \"%s\"", p, e.why, why);
        if (strstr(e.why, "message.parts[0]") == NULL)
            fail_msg("part %s: reason \"%s\" does not name the part", p, e.why);
    }
}

static void test_good_parts_pass_both(void **state)
{
    (void)state;
    static const char *const good[] = {
        "{\"text\":\"hi\"}",
        "{\"raw\":\"aGVsbG8=\",\"filename\":\"a.txt\",\"mediaType\":\"text/plain\"}",
        "{\"url\":\"https://x/y\",\"metadata\":{\"k\":1}}",
        "{\"data\":{\"a\":[1,2]}}",
        "{\"data\":null}",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        a2a_verr e;
        char why[512];
        if (client_part(good[i], &e) != ONCE_OK)
            fail_msg("client part %s refused: %s", good[i], e.why);
        if (agent_part(good[i], why, sizeof why) != ONCE_OK)
            fail_msg("agent part %s refused: %s", good[i], why);
    }
}

static int agent_msg(const char *msg, char *why, size_t cap)
{
    char line[1024];
    snprintf(line, sizeof line, "{\"reply\":%s}", msg);
    return agent_line(line, why, cap);
}

/* What differs by sender is the rules, not the checks: a client must name
 * its message and be the user; an agent may leave both out and is the
 * agent; a client's unknown member is tolerated (forward compatibility),
 * an agent's is a typo to report. */
static void test_rules_by_sender(void **state)
{
    (void)state;
    a2a_verr e;
    char why[512];

    assert_int_equal(client_msg("{\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"x\"}]}", &e),
                     ONCE_EINVAL);
    assert_string_equal(e.field, "message.messageId");
    assert_int_equal(agent_msg("{\"parts\":[{\"text\":\"x\"}]}", why, sizeof why), ONCE_OK);

    assert_int_equal(
        client_msg("{\"messageId\":\"m\",\"role\":\"ROLE_AGENT\",\"parts\":[{\"text\":\"x\"}]}",
                   &e),
        ONCE_EINVAL);
    assert_string_equal(e.field, "message.role");
    assert_int_equal(agent_msg("{\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"x\"}]}", why,
                               sizeof why),
                     ONCE_EINVAL);
    assert_non_null(strstr(why, "reply.role must be \"ROLE_AGENT\" (or left out)"));

    assert_int_equal(client_msg("{\"messageId\":\"m\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":"
                                "\"x\"}],\"future\":1}",
                                &e),
                     ONCE_OK);
    assert_int_equal(agent_msg("{\"parts\":[{\"text\":\"x\"}],\"future\":1}", why, sizeof why),
                     ONCE_EINVAL);
    assert_non_null(strstr(why, "reply has unknown member \"future\""));

    /* A client's IDs become store keys; an agent's message ID is its own. */
    assert_int_equal(client_msg("{\"messageId\":\"has space\",\"role\":\"ROLE_USER\",\"parts\":[{"
                                "\"text\":\"x\"}]}",
                                &e),
                     ONCE_EINVAL);
    assert_string_equal(e.field, "message.messageId");
    assert_int_equal(agent_msg("{\"messageId\":\"has space\",\"parts\":[{\"text\":\"x\"}]}", why,
                               sizeof why),
                     ONCE_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parts_judged_once),
        cmocka_unit_test(test_good_parts_pass_both),
        cmocka_unit_test(test_rules_by_sender),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
