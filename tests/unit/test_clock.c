/*
 * test_clock.c -- the system clock reads real time, the offset and manual
 * clocks move exactly as told, the monotonic clock never goes back, and
 * once_format_time produces RFC 3339 UTC for known instants.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "once/once.h"
#include "timeout.h"

#define HOUR_MS (3600LL * 1000)

static void test_system_clock(void **state)
{
    (void)state;
    const once_clock *c = once_clock_system();
    assert_non_null(c);
    assert_ptr_equal(c, once_clock_system());
    int64_t before = (int64_t)time(NULL) * 1000;
    int64_t now = once_now(c);
    int64_t after = (int64_t)time(NULL) * 1000 + 1000;
    assert_true(now >= before - 1000 && now <= after);
}

static void test_offset_clock(void **state)
{
    (void)state;
    once_offset_clock oc;
    once_offset_clock_init(&oc, 0);
    assert_int_equal(once_offset_clock_get(&oc), 0);
    const once_clock *sys = once_clock_system();

    int64_t s0 = once_now(sys);
    int64_t o0 = once_now(&oc.base);
    int64_t s1 = once_now(sys);
    assert_true(o0 >= s0 && o0 <= s1);

    /* The demo jump: 72 hours forward. */
    once_offset_clock_set(&oc, 72 * HOUR_MS);
    assert_int_equal(once_offset_clock_get(&oc), 72 * HOUR_MS);
    s0 = once_now(sys);
    o0 = once_now(&oc.base);
    s1 = once_now(sys);
    assert_true(o0 >= s0 + 72 * HOUR_MS && o0 <= s1 + 72 * HOUR_MS);

    once_offset_clock_set(&oc, -5000);
    s0 = once_now(sys);
    o0 = once_now(&oc.base);
    s1 = once_now(sys);
    assert_true(o0 >= s0 - 5000 && o0 <= s1 - 5000);

    once_offset_clock init2;
    once_offset_clock_init(&init2, 1234);
    assert_int_equal(once_offset_clock_get(&init2), 1234);
}

static void test_manual_clock(void **state)
{
    (void)state;
    once_manual_clock mc;
    once_manual_clock_init(&mc, 1000);
    const once_clock *c = &mc.base;
    assert_int_equal(once_now(c), 1000);
    assert_int_equal(once_now(c), 1000); /* does not move by itself */
    once_manual_clock_advance(&mc, 500);
    assert_int_equal(once_now(c), 1500);
    once_manual_clock_advance(&mc, 72 * HOUR_MS);
    assert_int_equal(once_now(c), 1500 + 72 * HOUR_MS);
    once_manual_clock_advance(&mc, -1500 - 72 * HOUR_MS);
    assert_int_equal(once_now(c), 0);
}

static void test_monotonic(void **state)
{
    (void)state;
    int64_t prev = once_monotonic_ms();
    assert_true(prev >= 0);
    for (int i = 0; i < 100000; i++) {
        int64_t now = once_monotonic_ms();
        assert_true(now >= prev);
        prev = now;
    }
    struct timespec ts = {0, 20 * 1000 * 1000};
    int64_t a = once_monotonic_ms();
    nanosleep(&ts, NULL);
    int64_t b = once_monotonic_ms();
    assert_true(b - a >= 19 && b - a < tt_ms(5000));
}

static void check_fmt(int64_t ms, const char *want)
{
    char out[25];
    memset(out, 'x', sizeof out);
    once_format_time(ms, out);
    assert_string_equal(out, want);
    assert_int_equal(strlen(out), 24);
}

static void test_format_time(void **state)
{
    (void)state;
    check_fmt(0, "1970-01-01T00:00:00.000Z");
    check_fmt(1, "1970-01-01T00:00:00.001Z");
    check_fmt(999, "1970-01-01T00:00:00.999Z");
    check_fmt(1796212800000LL, "2026-12-02T12:00:00.000Z");
    check_fmt(1709251199000LL + 999, "2024-02-29T23:59:59.999Z");
    check_fmt(1709251199000LL + 1000, "2024-03-01T00:00:00.000Z");
    check_fmt(951782400000LL, "2000-02-29T00:00:00.000Z");
    check_fmt(68169600000LL, "1972-02-29T00:00:00.000Z");
    /* 2100 is not a leap year: Feb 28 is followed by Mar 1. */
    check_fmt(4107542400000LL - 1, "2100-02-28T23:59:59.999Z");
    check_fmt(4107542400000LL, "2100-03-01T00:00:00.000Z");
    /* Before the epoch the millisecond field stays non-negative. */
    check_fmt(-1, "1969-12-31T23:59:59.999Z");
    check_fmt(-1000, "1969-12-31T23:59:59.000Z");
    check_fmt(-1001, "1969-12-31T23:59:58.999Z");
    /* Range ends; beyond them the value is clamped to stay 24 chars. */
    check_fmt(253402300799999LL, "9999-12-31T23:59:59.999Z");
    check_fmt(INT64_MAX, "9999-12-31T23:59:59.999Z");
    check_fmt(-62167219200000LL, "0000-01-01T00:00:00.000Z");
    check_fmt(INT64_MIN, "0000-01-01T00:00:00.000Z");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_system_clock),
        cmocka_unit_test(test_offset_clock),
        cmocka_unit_test(test_manual_clock),
        cmocka_unit_test(test_monotonic),
        cmocka_unit_test(test_format_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
