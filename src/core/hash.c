/*
 * hash.c -- SHA-256, HMAC-SHA256, hex and constant-time compare over OpenSSL
 * libcrypto.
 *
 * The digest functions return void because callers (derived task IDs, request
 * digests, webhook signatures) cannot do anything sensible with a failure and
 * a wrong digest would silently break dedup; OpenSSL only fails here on its own
 * internal allocation failure, so we abort rather than return garbage.
 *
 * SHA-256 is fetched from OpenSSL's providers once per process: EVP_sha256()
 * makes every EVP_Digest() fetch it again (a lock and a lookup, about as
 * much work as hashing a request). The fetched method is kept for the
 * process's life and only read after pthread_once, so threads share it.
 */
#include "once/once.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdlib.h>

/* OpenSSL may treat a NULL pointer with length 0 specially; give it a real
 * (empty) buffer instead. */
static const unsigned char empty_buf[1];

static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;
static EVP_MD *sha256_fetched;

static void sha256_fetch(void)
{
    sha256_fetched = EVP_MD_fetch(NULL, "SHA256", NULL);
}

/* The fetched SHA-256, or (if the fetch failed) the implicit one, which
 * works the same, only slower. */
static const EVP_MD *sha256_md(void)
{
    if (pthread_once(&sha256_once, sha256_fetch) != 0 || sha256_fetched == NULL)
        return EVP_sha256();
    return sha256_fetched;
}

void once_sha256(const void *data, size_t n, uint8_t out[ONCE_SHA256_LEN])
{
    unsigned int len = 0;
    if (data == NULL)
        data = empty_buf;
    if (!EVP_Digest(data, n, out, &len, sha256_md(), NULL) || len != ONCE_SHA256_LEN)
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
    if (HMAC(sha256_md(), key, (int)keylen, data, n, out, &len) == NULL ||
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
