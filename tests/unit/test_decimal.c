/*
 * test_decimal.c -- the decimal reader behind SSE ids, webhook timestamps
 * and counts, agent URL ports and the dates once parses
 * (src/core/decimal.c): digits only, 1..18 of them, the value exact up to
 * the largest 18-digit number, and nothing written on a refusal.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/civil.h"
#include "core/decimal.h"

static void reads_digits(void **state)
{
    (void)state;
    /* n bounds the read: what follows ("12x") does not matter. */
    static const struct {
        const char *s;
        size_t n;
        int64_t want;
    } ok[] = {{"0", 1, 0},
              {"0042", 4, 42},
              {"12x", 2, 12},
              {"999999999999999999", 18, INT64_C(999999999999999999)}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t v = -1;
        assert_true(once__decimal(ok[i].s, ok[i].n, &v));
        assert_int_equal(v, ok[i].want);
    }
}

static void refuses_the_rest(void **state)
{
    (void)state;
    const char *bad[] = {"", "+1", "-1", " 1", "1 ", "1e3", "0x10", "1.5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t v = 7;
        assert_false(once__decimal(bad[i], strlen(bad[i]), &v));
        assert_int_equal(v, 7);
    }
    /* 19 digits could overflow: refused whatever their value. */
    int64_t v = 7;
    assert_false(once__decimal("0000000000000000001", 19, &v));
    assert_int_equal(v, 7);
}

static void fixed_digits_reads_exactly_n(void **state)
{
    (void)state;
    int v = -1;
    assert_true(once__fixed_digits("2026-12-03", 4, &v));
    assert_int_equal(v, 2026);
    assert_false(once__fixed_digits("20x6", 4, &v));
    assert_false(once__fixed_digits("1", 0, &v));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reads_digits),
        cmocka_unit_test(refuses_the_rest),
        cmocka_unit_test(fixed_digits_reads_exactly_n),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
