/*
 * test_a2a_flags.c -- onced's command-line value parsers: durations
 * (--retention 72h, --clock-offset -5m), byte sizes (--max-body 1MiB) and
 * listen addresses. Malformed values are refused, overflow is an error and
 * never wraps, and a refused parse leaves the output untouched.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "http/http.h"

static void test_durations(void **state)
{
    (void)state;
    const struct {
        const char *s;
        int64_t ms;
    } ok[] = {
        {"0", 0},           {"500ms", 500},          {"30s", 30000},
        {"5m", 300000},     {"72h", 259200000},      {"30d", 2592000000LL},
        {"1h30m", 5400000}, {"1d2h3m4s5ms", 93784005}, {"0s", 0},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t ms = -7;
        assert_int_equal(once__parse_duration(ok[i].s, 0, &ms), ONCE_OK);
        assert_int_equal(ms, ok[i].ms);
    }
    const char *bad[] = {"", "5", "10x", "ms", "5 m", "-5m", "+5m", "1.5h", "5mm", "h5", "5m ",
                         "5M"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t ms = -7;
        if (once__parse_duration(bad[i], 0, &ms) != ONCE_EINVAL)
            fail_msg("accepted \"%s\"", bad[i]);
        assert_int_equal(ms, -7);
    }
    assert_int_equal(once__parse_duration(NULL, 0, &(int64_t){0}), ONCE_EINVAL);
    /* signed, for --clock-offset */
    int64_t ms = 0;
    assert_int_equal(once__parse_duration("-72h", 1, &ms), ONCE_OK);
    assert_int_equal(ms, -259200000);
    assert_int_equal(once__parse_duration("+1s", 1, &ms), ONCE_OK);
    assert_int_equal(ms, 1000);
    assert_int_equal(once__parse_duration("-0", 1, &ms), ONCE_OK);
    assert_int_equal(ms, 0);
    assert_int_equal(once__parse_duration("--1s", 1, &ms), ONCE_EINVAL);
    /* overflow */
    assert_int_equal(once__parse_duration("9223372036854775807ms", 0, &ms), ONCE_OK);
    assert_int_equal(ms, INT64_MAX);
    assert_int_equal(once__parse_duration("9223372036854775808ms", 0, &ms), ONCE_ERANGE);
    assert_int_equal(once__parse_duration("200000000000d", 0, &ms), ONCE_ERANGE);
    assert_int_equal(once__parse_duration("9223372036854775807ms1ms", 0, &ms), ONCE_ERANGE);
}

static void test_sizes(void **state)
{
    (void)state;
    const struct {
        const char *s;
        uint64_t n;
    } ok[] = {
        {"0", 0},          {"1048576", 1048576}, {"512k", 524288}, {"512K", 524288},
        {"64KiB", 65536},  {"1MiB", 1048576},    {"2m", 2097152},  {"1G", 1073741824},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint64_t n = 7;
        assert_int_equal(once__parse_size(ok[i].s, &n), ONCE_OK);
        assert_int_equal(n, ok[i].n);
    }
    const char *bad[] = {"", "k", "1kb", "1 MiB", "-1", "1.5M", "0x10"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t n = 7;
        if (once__parse_size(bad[i], &n) == ONCE_OK)
            fail_msg("accepted \"%s\"", bad[i]);
        assert_int_equal(n, 7);
    }
    uint64_t n;
    assert_int_equal(once__parse_size("18446744073709551616", &n), ONCE_ERANGE);
    assert_int_equal(once__parse_size("18014398509481984k", &n), ONCE_ERANGE);
}

static void test_listen(void **state)
{
    (void)state;
    char host[64];
    int port = -1;
    assert_int_equal(once__parse_listen("127.0.0.1:8080", host, sizeof host, &port), ONCE_OK);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 8080);
    assert_int_equal(once__parse_listen("localhost:0", host, sizeof host, &port), ONCE_OK);
    assert_int_equal(port, 0);
    assert_int_equal(once__parse_listen("[::1]:443", host, sizeof host, &port), ONCE_OK);
    assert_string_equal(host, "::1");
    assert_int_equal(port, 443);
    const char *bad[] = {"", "8080", "host:", ":80", "::1:80", "[::1]80", "h:65536", "h:8o"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        port = -1;
        if (once__parse_listen(bad[i], host, sizeof host, &port) == ONCE_OK)
            fail_msg("accepted \"%s\"", bad[i]);
        assert_int_equal(port, -1);
    }
    char tiny[4];
    assert_int_equal(once__parse_listen("localhost:1", tiny, sizeof tiny, &port), ONCE_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_listen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
