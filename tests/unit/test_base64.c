/*
 * test_base64.c -- src/core/base64.c: RFC 4648 section 10 vectors in both
 * alphabets, and the decoder's acceptance rules (ProtoJSON's padded or not,
 * standard or URL-safe; nothing else).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/base64.h"

static const struct {
    const char *plain, *std, *url;
} vectors[] = {
    {"", "", ""},
    {"f", "Zg==", "Zg"},
    {"fo", "Zm8=", "Zm8"},
    {"foo", "Zm9v", "Zm9v"},
    {"foob", "Zm9vYg==", "Zm9vYg"},
    {"fooba", "Zm9vYmE=", "Zm9vYmE"},
    {"foobar", "Zm9vYmFy", "Zm9vYmFy"},
};

static void test_rfc4648(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
        const char *p = vectors[i].plain;
        size_t n = strlen(p);
        char out[16];
        uint8_t back[16];
        assert_int_equal(once__base64_len(n, 0), strlen(vectors[i].std));
        assert_int_equal(once__base64_encode((const uint8_t *)p, n, out, 0), strlen(vectors[i].std));
        assert_string_equal(out, vectors[i].std);
        assert_int_equal(once__base64_len(n, 1), strlen(vectors[i].url));
        once__base64_encode((const uint8_t *)p, n, out, 1);
        assert_string_equal(out, vectors[i].url);
        assert_int_equal(once__base64_decode(vectors[i].std, strlen(vectors[i].std), back, sizeof back), n);
        assert_memory_equal(back, p, n);
        assert_int_equal(once__base64_decode(vectors[i].url, strlen(vectors[i].url), back, sizeof back), n);
        assert_memory_equal(back, p, n);
    }
}

static void test_alphabets(void **state)
{
    (void)state;
    const uint8_t bytes[] = {0xfb, 0xff, 0xbf};
    char out[8];
    uint8_t back[3];
    once__base64_encode(bytes, 3, out, 0);
    assert_string_equal(out, "+/+/");
    once__base64_encode(bytes, 3, out, 1);
    assert_string_equal(out, "-_-_");
    assert_int_equal(once__base64_decode("+/+/", 4, back, 3), 3);
    assert_memory_equal(back, bytes, 3);
    assert_int_equal(once__base64_decode("-_-_", 4, back, 3), 3);
    assert_memory_equal(back, bytes, 3);
}

static void test_rejects(void **state)
{
    (void)state;
    static const char *const bad[] = {"Z", "Zg=", "Zg===", "Z===", "Zm 9v", "Zm9v\n", "Zg==Zg==",
                                      "=Zg", "Zm9*", "Zm8==", NULL};
    for (size_t i = 0; bad[i]; i++) {
        assert_false(once__base64_valid(bad[i], strlen(bad[i])));
        assert_int_equal(once__base64_decode(bad[i], strlen(bad[i]), NULL, 0), -1);
    }
    assert_true(once__base64_valid("", 0));
    /* cap: the output never overruns */
    uint8_t back[2];
    assert_int_equal(once__base64_decode("Zm9v", 4, back, sizeof back), -1);
    assert_int_equal(once__base64_decode("Zm8", 3, back, sizeof back), 2);
    /* measuring without output */
    assert_int_equal(once__base64_decode("Zm9vYmFy", 8, NULL, 0), 6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc4648),
        cmocka_unit_test(test_alphabets),
        cmocka_unit_test(test_rejects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
