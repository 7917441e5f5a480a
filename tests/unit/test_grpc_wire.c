/*
 * test_grpc_wire.c -- the text forms of gRPC's HTTP/2 headers
 * (src/grpc/h2_wire.c): grpc-timeout read in every unit and rounded up to
 * whole milliseconds, refused when malformed; written back within gRPC's 8
 * digits; grpc-message percent-encoded; a message's 5-byte prefix.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "grpc/h2.h"
#include "grpc/status.h"
#include "once/once.h"

static void timeout_units(void **state)
{
    (void)state;
    assert_int_equal(once__grpc_timeout_parse("2H"), 7200000);
    assert_int_equal(once__grpc_timeout_parse("3M"), 180000);
    assert_int_equal(once__grpc_timeout_parse("5S"), 5000);
    assert_int_equal(once__grpc_timeout_parse("250m"), 250);
    assert_int_equal(once__grpc_timeout_parse("1500u"), 2);       /* rounded up */
    assert_int_equal(once__grpc_timeout_parse("1n"), 1);
    assert_int_equal(once__grpc_timeout_parse("0m"), 1);          /* at least 1 */
    assert_int_equal(once__grpc_timeout_parse("99999999S"), 99999999000LL);
}

static void timeout_refused(void **state)
{
    (void)state;
    const char *bad[] = {"", "S", "10", "10x", "10 S", "-1S", "123456789S", "1SS", "1s"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(once__grpc_timeout_parse(bad[i]), -1);
}

static void timeout_format(void **state)
{
    (void)state;
    char b[16];
    int64_t cases[] = {1, 999, 99999999, 100000000, 99999999999LL, 300000000000000LL};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        once__grpc_timeout_format(cases[i], b, sizeof b);
        assert_true(strlen(b) <= 9);
        int64_t back = once__grpc_timeout_parse(b);
        assert_true(back >= cases[i]);   /* never shorter than asked */
    }
    once__grpc_timeout_format(INT64_MAX / 2, b, sizeof b);
    assert_string_equal(b, "99999999H");   /* clamped to 8 digits */
    once__grpc_timeout_format(250, b, sizeof b);
    assert_string_equal(b, "250m");
}

static void message_encoding(void **state)
{
    (void)state;
    char *s = once__grpc_message_encode("ok: 100% \xc3\xa9\n");
    assert_string_equal(s, "ok: 100%25 %C3%A9%0A");
    once_free(s);
    s = once__grpc_message_encode("");
    assert_string_equal(s, "");
    once_free(s);
}

static void prefix(void **state)
{
    (void)state;
    uint8_t p[5];
    once__grpc_prefix_put(p, 0x01020304u);
    assert_memory_equal(p, "\x00\x01\x02\x03\x04", 5);
    assert_int_equal(once__grpc_prefix_len(p), 0x01020304u);
    p[0] = 1;   /* the compressed flag is not part of the length */
    assert_int_equal(once__grpc_prefix_len(p), 0x01020304u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(timeout_units),
        cmocka_unit_test(timeout_refused),
        cmocka_unit_test(timeout_format),
        cmocka_unit_test(message_encoding),
        cmocka_unit_test(prefix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
