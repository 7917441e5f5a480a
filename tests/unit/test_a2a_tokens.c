/*
 * test_a2a_tokens.c -- the --auth-tokens file and bearer lookup: the file
 * format (comments, blank lines, tabs), every refusal naming its line, and
 * the lookup a request's Authorization header goes through (scheme case,
 * unknown tokens, prefixes of real tokens, missing header).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "http/http.h"

/* The lookups, with the principal copied into a buffer of the test's. */
static char who[ONCE_PRINCIPAL_MAX + 1];
#define principal(t, a) once__tokens_principal(t, a, who)
#define session(t, v, now) once__session_principal(t, v, now, who)

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
    assert_string_equal(principal(t, "Bearer tok-alice"), "alice");
    assert_string_equal(principal(t, "bearer tok-bob"), "bob");
    assert_string_equal(principal(t, "BEARER   tok-alice-2  "), "alice");
    assert_null(principal(t, "Bearer tok-alic"));
    assert_null(principal(t, "Bearer tok-alice "  "x"));
    assert_null(principal(t, "Bearer "));
    assert_null(principal(t, "Bearer"));
    assert_null(principal(t, "Basic dG9rLWFsaWNlOg=="));
    assert_null(principal(t, "tok-alice"));
    assert_null(principal(t, "Bearertok-alice"));
    assert_null(principal(t, NULL));
    assert_null(principal(NULL, "Bearer tok-alice"));
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
    assert_string_equal(principal(t, "Bearer secret-2"), "tenant-b");
    once__tokens_free(t);
    unlink(path);
    assert_int_equal(once__tokens_load(path, &t, err, sizeof err), ONCE_EIO);
    assert_non_null(strstr(err, path));
    assert_null(t);
}

/* The inspector's sessions (auth.c): signed by a token's digest, naming
 * its principal, good until their expiry, worthless once tampered with or
 * once the table no longer holds the token that signed them. */
static void test_sessions(void **state)
{
    (void)state;
    once_tokens *t = parse("secret-1 tenant-a\nsecret-2 tenant-b\nsecret-3 tenant-a\n", ONCE_OK,
                           NULL);
    char s[ONCE__SESSION_MAX], s3[ONCE__SESSION_MAX];
    assert_int_equal(once__session_make(t, "secret-1", 1000, 60, s, sizeof s), ONCE_OK);
    assert_null(strstr(s, "secret-1"));
    assert_string_equal(session(t, s, 1000), "tenant-a");
    assert_string_equal(session(t, s, 1059), "tenant-a");
    assert_null(session(t, s, 1060));         /* expired */
    /* Another token of the same principal signs its own. */
    assert_int_equal(once__session_make(t, "secret-3", 1000, 60, s3, sizeof s3), ONCE_OK);
    assert_string_equal(session(t, s3, 1000), "tenant-a");
    assert_int_equal(once__session_make(t, "nope", 1000, 60, s3, sizeof s3), ONCE_ENOTFOUND);
    assert_int_equal(once__session_make(t, "secret-1", 1000, 60, s3, 20), ONCE_ERANGE);
    /* Tampering: the expiry, the principal (tenant-b), the MAC. */
    char bad[ONCE__SESSION_MAX];
    snprintf(bad, sizeof bad, "v1.2000%s", strchr(s + 3, '.'));
    assert_null(session(t, bad, 1000));
    snprintf(bad, sizeof bad, "%s", s);
    char *ph = strchr(bad + 3, '.') + 1;
    memcpy(ph, "74656e616e742d62", 16);                   /* "tenant-b" */
    assert_null(session(t, bad, 1000));
    snprintf(bad, sizeof bad, "%s", s);
    bad[strlen(bad) - 1] = bad[strlen(bad) - 1] == '0' ? '1' : '0';
    assert_null(session(t, bad, 1000));
    const char *junk[] = {"", "v1", "v1.", "v1..", "v1.1.2.3", "v2.9999.61.00", "secret-1",
                          "v1.99999999999999999999.74.00"};
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++)
        assert_null(session(t, junk[i], 1000));
    assert_null(session(NULL, s, 1000));
    once__tokens_free(t);
    /* A table without secret-1 (rotated): its session is revoked; one with
     * it again (the same file later) takes it. */
    t = parse("secret-9 tenant-a\n", ONCE_OK, NULL);
    assert_null(session(t, s, 1000));
    once__tokens_free(t);
    t = parse("secret-1 tenant-a\n", ONCE_OK, NULL);
    assert_string_equal(session(t, s, 1000), "tenant-a");
    once__tokens_free(t);
}

/* SIGHUP's re-read (once__tokens_swap): the handle serves the new tokens
 * at once, a removed token and its sessions stop working, and lookups
 * running on another thread while tables come and go each see one whole
 * table (under TSan: no race, no use after free). */
static void *lookups(void *arg)
{
    const once_tokens *t = arg;
    char mine[ONCE_PRINCIPAL_MAX + 1];
    for (int i = 0; i < 20000; i++) {
        const char *p = once__tokens_principal(t, "Bearer keep", mine);
        if (p == NULL || strcmp(p, "kept") != 0)
            return (void *)1;
    }
    return NULL;
}

static void test_swap(void **state)
{
    (void)state;
    once_tokens *t = parse("keep kept\nold alice\n", ONCE_OK, NULL);
    char s[ONCE__SESSION_MAX];
    assert_int_equal(once__session_make(t, "old", 1000, 60, s, sizeof s), ONCE_OK);
    once__tokens_swap(t, parse("keep kept\nnew bob\n", ONCE_OK, NULL));
    assert_null(principal(t, "Bearer old"));
    assert_string_equal(principal(t, "Bearer new"), "bob");
    assert_null(session(t, s, 1000));
    assert_int_equal(once__tokens_count(t), 2);

    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, lookups, t), 0);
    for (int i = 0; i < 200; i++)
        once__tokens_swap(t, parse(i % 2 ? "keep kept\n" : "keep kept\nx y\n", ONCE_OK, NULL));
    void *bad = NULL;
    assert_int_equal(pthread_join(th, &bad), 0);
    assert_null(bad);
    once__tokens_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_format),
        cmocka_unit_test(test_file_errors),
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_sessions),
        cmocka_unit_test(test_swap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
