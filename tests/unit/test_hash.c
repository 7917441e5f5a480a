/*
 * test_hash.c -- SHA-256 against FIPS 180 vectors, HMAC-SHA256 against RFC
 * 4231, hex formatting and constant-time comparison.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc_int.h"
#include "once/once.h"

static void check_sha(const void *data, size_t n, const char *want)
{
    uint8_t d[ONCE_SHA256_LEN];
    char hex[ONCE_DIGEST_HEX + 1];
    once_sha256(data, n, d);
    once_hex(d, sizeof d, hex);
    assert_string_equal(hex, want);
}

static void test_sha256_vectors(void **state)
{
    (void)state;
    check_sha("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    check_sha("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    check_sha(NULL, 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    check_sha(two, strlen(two),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    static char million[1000000];
    memset(million, 'a', sizeof million);
    check_sha(million, sizeof million,
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void check_hmac(const void *key, size_t kl, const void *data, size_t n, const char *want)
{
    uint8_t d[ONCE_SHA256_LEN];
    char hex[ONCE_DIGEST_HEX + 1];
    once_hmac_sha256(key, kl, data, n, d);
    once_hex(d, sizeof d, hex);
    assert_string_equal(hex, want);
}

static void test_hmac_rfc4231(void **state)
{
    (void)state;
    uint8_t key[131], data[50];

    memset(key, 0x0b, 20); /* test case 1 */
    check_hmac(key, 20, "Hi There", 8,
               "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");

    const char *q = "what do ya want for nothing?"; /* test case 2 */
    check_hmac("Jefe", 4, q, strlen(q),
               "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");

    memset(key, 0xaa, 20); /* test case 3 */
    memset(data, 0xdd, 50);
    check_hmac(key, 20, data, 50,
               "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");

    for (int i = 0; i < 25; i++) /* test case 4 */
        key[i] = (uint8_t)(i + 1);
    memset(data, 0xcd, 50);
    check_hmac(key, 25, data, 50,
               "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");

    memset(key, 0xaa, 131); /* test case 6: key longer than a block */
    const char *t6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    check_hmac(key, 131, t6, strlen(t6),
               "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");

    const char *t7 = "This is a test using a larger than block-size key and a larger "
                     "than block-size data. The key needs to be hashed before being "
                     "used by the HMAC algorithm."; /* test case 7 */
    check_hmac(key, 131, t7, strlen(t7),
               "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

static void test_hmac_empty(void **state)
{
    (void)state;
    /* Empty key and empty data are legal inputs; NULL with 0 means empty. */
    uint8_t a[32], b[32];
    once_hmac_sha256(NULL, 0, NULL, 0, a);
    once_hmac_sha256("", 0, "", 0, b);
    assert_memory_equal(a, b, 32);
    char hex[65];
    once_hex(a, 32, hex);
    assert_string_equal(hex, "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

static void test_hash_ignores_allocator_faults(void **state)
{
    (void)state;
    /* Digests use OpenSSL's own memory, so an injected fault cannot turn
     * into a wrong digest. */
    once__alloc_fail_after(0);
    check_sha("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    once__alloc_fail_after(-1);
}

static void test_hex(void **state)
{
    (void)state;
    const uint8_t in[] = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xff};
    char out[13];
    memset(out, 'x', sizeof out);
    once_hex(in, sizeof in, out);
    assert_string_equal(out, "00017f80abff");
    char empty[1] = {'x'};
    once_hex(in, 0, empty);
    assert_int_equal(empty[0], '\0');
}

static void test_ct_equal(void **state)
{
    (void)state;
    uint8_t a[32], b[32];
    memset(a, 0x5a, sizeof a);
    memcpy(b, a, sizeof b);
    assert_int_equal(once_ct_equal(a, b, sizeof a), 1);
    for (size_t i = 0; i < sizeof a; i++) {
        b[i] ^= 0x01;
        assert_int_equal(once_ct_equal(a, b, sizeof a), 0);
        b[i] ^= 0x01;
    }
    b[31] = 0;
    assert_int_equal(once_ct_equal(a, b, 31), 1); /* only n bytes count */
    assert_int_equal(once_ct_equal(a, b, 0), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_vectors),
        cmocka_unit_test(test_hmac_rfc4231),
        cmocka_unit_test(test_hmac_empty),
        cmocka_unit_test(test_hash_ignores_allocator_faults),
        cmocka_unit_test(test_hex),
        cmocka_unit_test(test_ct_equal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
