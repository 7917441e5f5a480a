/*
 * test_pct.c -- percent-decoding for store URLs and inspector links
 * (src/core/pct.c): escapes in either case, '+' only where forms mean a
 * space, and a refusal for a cut or non-hex escape, an encoded NUL, or a
 * result that does not fit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/pct.h"

static void decodes(void **state)
{
    (void)state;
    char out[32];
    assert_true(once__pct_decode("p%40ss%2fw%2Bd", 14, 0, out, sizeof out));
    assert_string_equal(out, "p@ss/w+d");
    assert_true(once__pct_decode("a+b", 3, 0, out, sizeof out));
    assert_string_equal(out, "a+b");
    assert_true(once__pct_decode("a+b%20c", 7, 1, out, sizeof out));
    assert_string_equal(out, "a b c");
    /* n bounds the read; an empty input is an empty string. */
    assert_true(once__pct_decode("xyz", 0, 0, out, sizeof out));
    assert_string_equal(out, "");
}

static void refuses(void **state)
{
    (void)state;
    char out[8];
    const char *bad[] = {"%", "%4", "ab%4", "%g0", "%0g", "%00", "a%00b"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(once__pct_decode(bad[i], strlen(bad[i]), 0, out, sizeof out));
    /* 8 bytes hold 7 characters and the NUL, not 8. */
    assert_true(once__pct_decode("1234567", 7, 0, out, sizeof out));
    assert_false(once__pct_decode("12345678", 8, 0, out, sizeof out));
    assert_false(once__pct_decode("a", 1, 0, out, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(decodes),
        cmocka_unit_test(refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
