/*
 * test_backoff.c -- the retry timing the client and push delivery share
 * (src/core/backoff.c): the backoff bound doubles up to its cap and never
 * overflows, full jitter stays under the bound, and a Retry-After value is
 * parsed and never asks for more than the caller's cap, whatever number or
 * year a peer sends.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/backoff.h"

static void ceiling_doubles_to_the_cap(void **state)
{
    (void)state;
    assert_int_equal(once__backoff_ceiling_ms(100, 0, 1000), 100);
    assert_int_equal(once__backoff_ceiling_ms(100, 3, 1000), 800);
    assert_int_equal(once__backoff_ceiling_ms(100, 4, 1000), 1000);
    assert_int_equal(once__backoff_ceiling_ms(100, UINT64_MAX, 1000), 1000);
    /* A base past the cap is the cap; non-positive inputs count as 0. */
    assert_int_equal(once__backoff_ceiling_ms(5000, 0, 1000), 1000);
    assert_int_equal(once__backoff_ceiling_ms(-5, 3, 1000), 0);
    assert_int_equal(once__backoff_ceiling_ms(100, 3, -1), 0);
}

static void ceiling_never_overflows(void **state)
{
    (void)state;
    /* base * 2 alone is past INT64_MAX: the answer is the cap, not a wrap. */
    const int64_t base = INT64_C(1) << 62;
    assert_int_equal(once__backoff_ceiling_ms(base, 1, INT64_MAX), INT64_MAX);
    assert_int_equal(once__backoff_ceiling_ms(base, 1000, INT64_MAX), INT64_MAX);
    assert_int_equal(once__backoff_ceiling_ms(INT64_MAX / 3, 2, INT64_MAX - 1), INT64_MAX - 1);
    for (uint64_t k = 0; k < 70; k++) {
        int64_t c = once__backoff_ceiling_ms(1, k, INT64_MAX);
        assert_true(c >= 1 && c <= INT64_MAX);
    }
}

/* An rng whose every byte is 0xff: once_rng_uniform then gives the largest
 * draw its rejection step allows, which finds off-by-ones at the top. */
static int ones_fill(const once_rng *r, void *buf, size_t n)
{
    (void)r;
    memset(buf, 0xff, n);
    return ONCE_OK;
}

static int broken_fill(const once_rng *r, void *buf, size_t n)
{
    (void)r;
    (void)buf;
    (void)n;
    return ONCE_EIO;
}

static void jitter_stays_under_the_bound(void **state)
{
    (void)state;
    once_seeded_rng rng;
    once_seeded_rng_init(&rng, 11);
    for (uint64_t k = 0; k < 80; k++) {
        int64_t d = -1, ceil = once__backoff_ceiling_ms(INT64_C(1) << 60, k, INT64_MAX);
        assert_int_equal(once__backoff_jitter_ms(INT64_C(1) << 60, k, INT64_MAX, &rng.base, &d),
                         ONCE_OK);
        assert_true(d >= 0 && d <= ceil);
    }
    const once_rng ones = {ones_fill};
    int64_t d = -1;
    assert_int_equal(once__backoff_jitter_ms(INT64_C(1) << 62, 1, INT64_MAX, &ones, &d), ONCE_OK);
    assert_true(d >= 0);
    /* Nothing to wait: no draw at all. */
    const once_rng broken = {broken_fill};
    assert_int_equal(once__backoff_jitter_ms(0, 5, 1000, &broken, &d), ONCE_OK);
    assert_int_equal(d, 0);
    assert_int_equal(once__backoff_jitter_ms(10, 5, 1000, &broken, &d), ONCE_EIO);
    assert_int_equal(d, 0);
}

#define NOW_MS INT64_C(784111777000) /* Sun, 06 Nov 1994 08:49:37 GMT */

static int64_t ra(const char *v, int64_t cap)
{
    int64_t ms = -7;
    if (once__retry_after_ms(v, NOW_MS, cap, &ms) != ONCE_OK)
        return -1;
    return ms;
}

static void retry_after_forms(void **state)
{
    (void)state;
    const int64_t big = INT64_C(1) << 40;
    assert_int_equal(ra("120", big), 120000);
    assert_int_equal(ra(" 0\r\n", big), 0);
    assert_int_equal(ra("\t7 ", big), 7000);
    assert_int_equal(ra("Sun, 06 Nov 1994 08:49:47 GMT\r\n", big), 10000);
    assert_int_equal(ra("Sun, 06 Nov 1994 08:49:00 GMT", big), 0); /* past: at once */
    assert_int_equal(ra("Thu, 29 Feb 1996 00:00:00 GMT", big), INT64_C(825552000000) - NOW_MS);
    /* Not a Retry-After. */
    assert_int_equal(ra("soon", big), -1);
    assert_int_equal(ra("12x", big), -1);
    assert_int_equal(ra("-1", big), -1);
    assert_int_equal(ra("1.5", big), -1);
    assert_int_equal(ra("", big), -1);
    assert_int_equal(ra(" \r\n", big), -1);
    assert_int_equal(ra("Sun, 06 Foo 1994 08:49:47 GMT", big), -1);
    assert_int_equal(ra("Sunday, 06-Nov-94 08:49:37 GMT", big), -1);
    assert_int_equal(ra("Sun Nov  6 08:49:37 1994", big), -1);
    assert_int_equal(ra("Sun, 06 Nov 1994 25:49:37 GMT", big), -1);
    int64_t ms;
    assert_int_equal(once__retry_after_ms(NULL, NOW_MS, big, &ms), ONCE_EINVAL);
}

static void retry_after_is_capped(void **state)
{
    (void)state;
    const int64_t cap = 300000;
    /* "9999" would be 2.7 hours; a date in 2100, a century. */
    assert_int_equal(ra("9999", cap), cap);
    assert_int_equal(ra("Fri, 01 Jan 2100 00:00:00 GMT", cap), cap);
    assert_int_equal(ra("Fri, 31 Dec 9999 23:59:59 GMT", cap), cap);
    assert_int_equal(ra("300", cap), cap);
    assert_int_equal(ra("299", cap), 299000);
    /* Any number of digits saturates, even against the widest cap. */
    assert_int_equal(ra("99999999999999999999999999999999", cap), cap);
    assert_int_equal(ra("99999999999999999999999999999999", INT64_MAX), INT64_MAX);
    assert_int_equal(ra("9223372036854775", INT64_MAX), INT64_C(9223372036854775000));
    assert_int_equal(ra("9223372036854776", INT64_MAX), INT64_MAX);
    assert_int_equal(ra("Fri, 31 Dec 9999 23:59:59 GMT", INT64_MAX),
                     INT64_C(253402300799000) - NOW_MS);
    /* A cap of 0 (or below) allows no wait at all. */
    assert_int_equal(ra("5", 0), 0);
    assert_int_equal(ra("5", -10), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ceiling_doubles_to_the_cap),   cmocka_unit_test(ceiling_never_overflows),
        cmocka_unit_test(jitter_stays_under_the_bound), cmocka_unit_test(retry_after_forms),
        cmocka_unit_test(retry_after_is_capped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
