/*
 * test_store_url.c -- a store URL as onced's start-up line shows it
 * (once__store_url_redact, src/store/url_param.c): no password of the user
 * part or of a password= parameter survives, everything else does, and a
 * short buffer cuts the text without ever overrunning it. And the URL forms
 * onced --help lists (once__store_url_forms): every one for the docs, the
 * built-in ones for this build, each a scheme once_store_open takes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "store/store_info.h"

static void shown(const char *url, const char *want)
{
    char out[256];
    once__store_url_redact(url, out, sizeof out);
    if (strcmp(out, want) != 0)
        fail_msg("%s: got \"%s\", want \"%s\"", url, out, want);
}

static void test_passwords_hidden(void **state)
{
    (void)state;
    shown("postgres://app:s3cret@db.example:5432/once?sslmode=require",
          "postgres://app:***@db.example:5432/once?sslmode=require");
    shown("postgresql://app:p%40ss@db/once", "postgresql://app:***@db/once");
    shown("redis://:hunter2@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0");
    shown("redis://user:hunter2@[::1]:6379", "redis://user:***@[::1]:6379");
    shown("postgres://app@db/once?password=s3cret&pool=8",
          "postgres://app@db/once?password=***&pool=8");
    shown("postgres://db/once?pool=8&password=s3cret", "postgres://db/once?pool=8&password=***");
    shown("postgres://a:b@db/once?password=c", "postgres://a:***@db/once?password=***");
}

static void test_the_rest_kept(void **state)
{
    (void)state;
    shown("memory:", "memory:");
    shown("sqlite:/var/lib/once/registry.db", "sqlite:/var/lib/once/registry.db");
    shown("postgres://app@db/once", "postgres://app@db/once");
    /* an '@' or ':' past the host is not a user part */
    shown("postgres://db:5432/once?application_name=a@b:c",
          "postgres://db:5432/once?application_name=a@b:c");
    shown("dynamodb://tasks?region=eu-west-1&endpoint=http://127.0.0.1:8000",
          "dynamodb://tasks?region=eu-west-1&endpoint=http://127.0.0.1:8000");
    shown("postgres://db/once?mypassword=x&&a=1", "postgres://db/once?mypassword=x&&a=1");
}

static void test_cut_to_fit(void **state)
{
    (void)state;
    char out[12];
    memset(out, 'Z', sizeof out);
    once__store_url_redact("postgres://app:s3cret@db/once", out, 10);
    assert_string_equal(out, "postgres:");
    assert_int_equal(out[10], 'Z');
    once__store_url_redact("redis://:hunter2@h", out, sizeof out);
    assert_string_equal(out, "redis://:**");
    once__store_url_redact("memory:", out, 1);
    assert_string_equal(out, "");
}

static void test_url_forms(void **state)
{
    (void)state;
    char all[256], built[256], cut[12];
    once__store_url_forms(1, all, sizeof all);
    assert_string_equal(all, "memory:, sqlite:PATH, postgres://..., redis://..., "
                             "dynamodb://TABLE?region=R");
    /* This build's: memory and SQLite always; each form it lists is one
     * whose scheme the store check takes. */
    once__store_url_forms(0, built, sizeof built);
    assert_true(strncmp(built, "memory:, sqlite:PATH", 20) == 0);
    for (char *form = built, *next; form != NULL; form = next) {
        next = strstr(form, ", ");
        if (next != NULL) {
            *next = '\0';
            next += 2;
        }
        char url[64], err[256];
        snprintf(url, sizeof url, "%.*s:x", (int)strcspn(form, ":"), form);
        if (once__store_url_check(url, err, sizeof err) != 0)
            fail_msg("%s is listed but not taken: %s", form, err);
        assert_non_null(strstr(all, form));
    }
    /* A short buffer: cut, terminated, never overrun. */
    memset(cut, 'x', sizeof cut);
    once__store_url_forms(1, cut, sizeof cut - 2);
    assert_true(strlen(cut) < sizeof cut - 2);
    assert_int_equal(cut[sizeof cut - 1], 'x');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_passwords_hidden),
        cmocka_unit_test(test_the_rest_kept),
        cmocka_unit_test(test_cut_to_fit),
        cmocka_unit_test(test_url_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
