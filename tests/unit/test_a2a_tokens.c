/*
 * test_a2a_tokens.c -- the --auth-tokens file and bearer lookup: the file
 * format (comments, blank lines, tabs), every refusal naming its line, and
 * the lookup a request's Authorization header goes through (scheme case,
 * unknown tokens, prefixes of real tokens, missing header).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "http/http.h"

static once_tokens *parse(const char *text, int expect_rc, const char *expect_err)
{
    once_tokens *t = NULL;
    char err[200] = "";
    int rc = once__tokens_parse(text, strlen(text), &t, err, sizeof err);
    assert_int_equal(rc, expect_rc);
    if (expect_err != NULL && strstr(err, expect_err) == NULL)
        fail_msg("error \"%s\" does not mention \"%s\"", err, expect_err);
    if (rc != ONCE_OK)
        assert_null(t);
    return t;
}

static void test_file_format(void **state)
{
    (void)state;
    once_tokens *t = parse("# tokens for the e2e tests\n"
                           "\n"
                           "tok-alice alice\n"
                           "   tok-bob\tbob   \r\n"
                           "  # indented comment\n"
                           "tok-alice-2 alice",
                           ONCE_OK, NULL);
    assert_int_equal(once__tokens_count(t), 3);
    assert_string_equal(once__tokens_principal(t, "Bearer tok-alice"), "alice");
    assert_string_equal(once__tokens_principal(t, "bearer tok-bob"), "bob");
    assert_string_equal(once__tokens_principal(t, "BEARER   tok-alice-2  "), "alice");
    assert_null(once__tokens_principal(t, "Bearer tok-alic"));
    assert_null(once__tokens_principal(t, "Bearer tok-alice "  "x"));
    assert_null(once__tokens_principal(t, "Bearer "));
    assert_null(once__tokens_principal(t, "Bearer"));
    assert_null(once__tokens_principal(t, "Basic dG9rLWFsaWNlOg=="));
    assert_null(once__tokens_principal(t, "tok-alice"));
    assert_null(once__tokens_principal(t, "Bearertok-alice"));
    assert_null(once__tokens_principal(t, NULL));
    assert_null(once__tokens_principal(NULL, "Bearer tok-alice"));
    once__tokens_free(t);
    once__tokens_free(NULL);
}

static void test_file_errors(void **state)
{
    (void)state;
    parse("", ONCE_EINVAL, "no tokens");
    parse("# only comments\n\n", ONCE_EINVAL, "no tokens");
    parse("a alice\nlonely\n", ONCE_EINVAL, "line 2");
    parse("a alice extra\n", ONCE_EINVAL, "line 1");
    parse("a alice\nb bob\na carol\n", ONCE_EINVAL, "line 3: duplicate");
    parse("a ali\x01" "ce\n", ONCE_EINVAL, "line 1");
    parse("t\xc3\xa9 alice\n", ONCE_EINVAL, "line 1");
    char big[300];
    memset(big, 'p', sizeof big);
    memcpy(big, "tok ", 4);
    big[sizeof big - 1] = '\0';
    parse(big, ONCE_EINVAL, "longer than");
}

static void test_load(void **state)
{
    (void)state;
    char path[] = "/tmp/once-tokens-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char text[] = "secret-1 tenant-a\nsecret-2 tenant-b\n";
    assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    once_tokens *t = NULL;
    char err[256];
    assert_int_equal(once__tokens_load(path, &t, err, sizeof err), ONCE_OK);
    assert_string_equal(once__tokens_principal(t, "Bearer secret-2"), "tenant-b");
    once__tokens_free(t);
    unlink(path);
    assert_int_equal(once__tokens_load(path, &t, err, sizeof err), ONCE_EIO);
    assert_non_null(strstr(err, path));
    assert_null(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_format),
        cmocka_unit_test(test_file_errors),
        cmocka_unit_test(test_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
