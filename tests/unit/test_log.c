/*
 * test_log.c -- the structured log's line builder (src/core/log.c): a line
 * is one well-formed record whatever its values hold (quotes, newlines,
 * control bytes, more text than fits), the thread's task and trace context
 * are added, only valid W3C traceparents are carried, and nothing is
 * written below the level or before the log is set up.
 */
#include <fcntl.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/log.h"

#define TP "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static int pipe_fds[2];

static int setup(void **state)
{
    (void)state;
    once__log_ctx_clear();
    if (pipe(pipe_fds) != 0)
        return -1;
    return fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    once__log_setup(-1, ONCE_LOG_TEXT, 2);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return 0;
}

/* Everything written to the pipe so far, NUL-terminated, in buf. */
static size_t drain(char *buf, size_t cap)
{
    ssize_t n = read(pipe_fds[0], buf, cap - 1);
    size_t len = n > 0 ? (size_t)n : 0;
    buf[len] = '\0';
    return len;
}

static void test_json_line_survives_hostile_values(void **state)
{
    (void)state;
    once__log_setup(ONCE_LOG_INFO, ONCE_LOG_JSON, pipe_fds[1]);
    once__log_ctx_task("t-1");
    once__log_ctx_traceparent(TP);
    once__logline l;
    once__log_begin(&l, ONCE_LOG_INFO, "request");
    once__log_str(&l, "principal", "al\"ice\\\n\x01");
    once__log_int(&l, "status", 200);
    once__log_end(&l);
    char buf[8192];
    drain(buf, sizeof buf);
    size_t n = strlen(buf);
    assert_true(n > 0 && buf[n - 1] == '\n');
    assert_null(memchr(buf, '\n', n - 1));   /* one line */
    json_error_t err;
    json_t *j = json_loads(buf, 0, &err);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "event")), "request");
    assert_string_equal(json_string_value(json_object_get(j, "level")), "info");
    assert_string_equal(json_string_value(json_object_get(j, "principal")), "al\"ice\\\n\x01");
    assert_int_equal(json_integer_value(json_object_get(j, "status")), 200);
    assert_string_equal(json_string_value(json_object_get(j, "task")), "t-1");
    assert_string_equal(json_string_value(json_object_get(j, "traceparent")), TP);
    json_decref(j);
}

static void test_text_line_quotes_what_needs_it(void **state)
{
    (void)state;
    once__log_setup(ONCE_LOG_INFO, ONCE_LOG_TEXT, pipe_fds[1]);
    once__logline l;
    once__log_begin(&l, ONCE_LOG_WARN, "push_failed");
    once__log_str(&l, "task", "t-2");
    once__log_str(&l, "error", "connect: refused \"x\"\n");
    once__log_end(&l);
    char buf[4096];
    drain(buf, sizeof buf);
    const char *rest = strstr(buf, "Z warn push_failed ");
    assert_non_null(rest);
    assert_string_equal(rest, "Z warn push_failed task=t-2 error=\"connect: refused \\\"x\\\"\\u000a\"\n");
}

/* A value that does not fit is left out whole and the line says cut: it is
 * still one line, and still JSON. */
static void test_long_value_cut_whole(void **state)
{
    (void)state;
    once__log_setup(ONCE_LOG_INFO, ONCE_LOG_JSON, pipe_fds[1]);
    char big[3000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    once__logline l;
    once__log_begin(&l, ONCE_LOG_INFO, "request");
    once__log_str(&l, "method", "SendMessage");
    once__log_str(&l, "error", big);
    once__log_int(&l, "status", 500);
    once__log_end(&l);
    char buf[8192];
    size_t n = drain(buf, sizeof buf);
    assert_true(n <= ONCE__LOG_LINE);
    json_error_t err;
    json_t *j = json_loads(buf, 0, &err);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "method")), "SendMessage");
    assert_null(json_object_get(j, "error"));
    assert_true(json_is_true(json_object_get(j, "cut")));
    json_decref(j);
}

static void test_level_and_setup(void **state)
{
    (void)state;
    once__log_setup(-1, ONCE_LOG_TEXT, pipe_fds[1]);
    assert_false(once__log_enabled(ONCE_LOG_ERROR));   /* off until set up */
    once__log_setup(ONCE_LOG_WARN, ONCE_LOG_TEXT, pipe_fds[1]);
    assert_true(once__log_enabled(ONCE_LOG_ERROR));
    assert_true(once__log_enabled(ONCE_LOG_WARN));
    assert_false(once__log_enabled(ONCE_LOG_INFO));
    /* A line below the level is not begun (the caller adds nothing); the
     * one at the level that follows is the only one written. */
    once__logline l;
    assert_int_equal(once__log_begin(&l, ONCE_LOG_INFO, "below"), 0);
    assert_int_equal(once__log_begin(&l, ONCE_LOG_WARN, "at_level"), 1);
    once__log_end(&l);
    char buf[4096];
    drain(buf, sizeof buf);
    assert_non_null(strstr(buf, "Z warn at_level"));
    assert_null(strstr(buf, "below"));
    assert_int_equal(once__log_level_parse("debug"), ONCE_LOG_DEBUG);
    assert_int_equal(once__log_level_parse("verbose"), -1);
    assert_int_equal(once__log_format_parse("json"), ONCE_LOG_JSON);
    assert_int_equal(once__log_format_parse("xml"), -1);
}

static void test_traceparent_validation(void **state)
{
    (void)state;
    assert_true(once__traceparent_valid(TP));
    /* a later version may append fields */
    assert_true(once__traceparent_valid(
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra"));
    const char *bad[] = {
        NULL,
        "",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", /* 00 is exactly 55 */
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   /* version ff */
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   /* zero trace id */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   /* zero parent id */
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   /* uppercase */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",      /* short */
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(once__traceparent_valid(bad[i]));
    once__log_ctx_traceparent(TP);
    assert_string_equal(once__log_ctx()->traceparent, TP);
    once__log_ctx_traceparent("00-zz");
    assert_string_equal(once__log_ctx()->traceparent, "");
}

/* The first outcome noted is the one the request line reports. */
static void test_first_outcome_kept(void **state)
{
    (void)state;
    once__log_ctx_outcome("registered");
    once__log_ctx_outcome("INVALID_PARAMS");
    assert_string_equal(once__log_ctx()->outcome, "registered");
    once__log_ctx_clear();
    assert_string_equal(once__log_ctx()->outcome, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_json_line_survives_hostile_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_text_line_quotes_what_needs_it, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_value_cut_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(test_level_and_setup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_traceparent_validation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_first_outcome_kept, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
