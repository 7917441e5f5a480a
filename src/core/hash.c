/*
 * hash.c -- SHA-256, HMAC-SHA256, hex and constant-time compare over OpenSSL
 * libcrypto.
 *
 * The digest functions return void because callers (derived task IDs, request
 * digests, webhook signatures) cannot do anything sensible with a failure and
 * a wrong digest would silently break dedup; OpenSSL only fails here on its own
 * internal allocation failure, so we abort rather than return garbage.
 */
#include "once/once.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>

/* OpenSSL may treat a NULL pointer with length 0 specially; give it a real
 * (empty) buffer instead. */
static const unsigned char empty_buf[1];

void once_sha256(const void *data, size_t n, uint8_t out[ONCE_SHA256_LEN])
{
    unsigned int len = 0;
    if (data == NULL)
        data = empty_buf;
    if (!EVP_Digest(data, n, out, &len, EVP_sha256(), NULL) || len != ONCE_SHA256_LEN)
        abort();
}

void once_hmac_sha256(const void *key, size_t keylen, const void *data, size_t n,
                      uint8_t out[ONCE_SHA256_LEN])
{
    unsigned int len = 0;
    if (key == NULL)
        key = empty_buf;
    if (data == NULL)
        data = empty_buf;
    if (keylen > INT32_MAX)
        abort(); /* HMAC() takes an int key length; no caller comes close */
    if (HMAC(EVP_sha256(), key, (int)keylen, data, n, out, &len) == NULL ||
        len != ONCE_SHA256_LEN)
        abort();
}

void once_hex(const uint8_t *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 0x0f];
    }
    out[2 * n] = '\0';
}

int once_ct_equal(const void *a, const void *b, size_t n)
{
    if (n == 0)
        return 1;
    return CRYPTO_memcmp(a, b, n) == 0;
}
