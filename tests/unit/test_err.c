/*
 * test_err.c -- every once_err code has its own name and description, and
 * unknown codes get the documented fallbacks (never NULL).
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "once/once.h"

static void test_every_code_named(void **state)
{
    (void)state;
    for (int e = 0; e >= ONCE_ERR_MIN; e--) {
        const char *name = once_errname(e);
        const char *text = once_strerror(e);
        assert_non_null(name);
        assert_non_null(text);
        assert_int_equal(strncmp(name, "ONCE_", 5), 0);
        assert_string_not_equal(name, "ONCE_E?");
        assert_string_not_equal(text, "unknown error");
        assert_true(strlen(text) > 0);
        /* Names and texts are distinct, so a log line identifies the code. */
        for (int f = e + 1; f <= 0; f++) {
            assert_string_not_equal(name, once_errname(f));
            assert_string_not_equal(text, once_strerror(f));
        }
    }
}

static void test_names_match_enum(void **state)
{
    (void)state;
    assert_string_equal(once_errname(ONCE_OK), "ONCE_OK");
    assert_string_equal(once_errname(ONCE_ERROR), "ONCE_ERROR");
    assert_string_equal(once_errname(ONCE_ENOMEM), "ONCE_ENOMEM");
    assert_string_equal(once_errname(ONCE_EINVAL), "ONCE_EINVAL");
    assert_string_equal(once_errname(ONCE_EEXISTS), "ONCE_EEXISTS");
    assert_string_equal(once_errname(ONCE_ENOTFOUND), "ONCE_ENOTFOUND");
    assert_string_equal(once_errname(ONCE_ETOMBSTONE), "ONCE_ETOMBSTONE");
    assert_string_equal(once_errname(ONCE_ECONFLICT), "ONCE_ECONFLICT");
    assert_string_equal(once_errname(ONCE_EFENCED), "ONCE_EFENCED");
    assert_string_equal(once_errname(ONCE_EILLEGAL), "ONCE_EILLEGAL");
    assert_string_equal(once_errname(ONCE_ESTORE), "ONCE_ESTORE");
    assert_string_equal(once_errname(ONCE_EBUSY), "ONCE_EBUSY");
    assert_string_equal(once_errname(ONCE_EIO), "ONCE_EIO");
    assert_string_equal(once_errname(ONCE_ERANGE), "ONCE_ERANGE");
    assert_string_equal(once_errname(ONCE_EPARSE), "ONCE_EPARSE");
    assert_string_equal(once_errname(ONCE_ECORRUPT), "ONCE_ECORRUPT");
    assert_string_equal(once_errname(ONCE_EUNSUPPORTED), "ONCE_EUNSUPPORTED");
    assert_string_equal(once_errname(ONCE_ETIMEDOUT), "ONCE_ETIMEDOUT");
    assert_string_equal(once_errname(ONCE_ECLOSED), "ONCE_ECLOSED");
    assert_string_equal(once_errname(ONCE_ECANCELED), "ONCE_ECANCELED");
    assert_string_equal(once_strerror(ONCE_ENOMEM), "out of memory");
}

static void test_unknown_codes(void **state)
{
    (void)state;
    const int bad[] = {1, 42, ONCE_ERR_MIN - 1, -1000, INT_MIN, INT_MAX};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_string_equal(once_strerror(bad[i]), "unknown error");
        assert_string_equal(once_errname(bad[i]), "ONCE_E?");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_code_named),
        cmocka_unit_test(test_names_match_enum),
        cmocka_unit_test(test_unknown_codes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
