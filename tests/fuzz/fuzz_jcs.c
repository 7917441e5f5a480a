/*
 * fuzz_jcs.c -- libFuzzer target for the JCS canonicaliser and the digest.
 *
 * For any input: once_jcs() either fails with one of its documented errors
 * or succeeds, and then its output is a fixed point (canonicalising it again
 * succeeds and yields the same bytes). once_message_digest() must agree
 * with once_jcs() about which inputs parse. Seeds: tests/fuzz/corpus/jcs/.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "once/once.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "fuzz_jcs: %s\n", what);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    char *once = NULL;
    size_t n1 = 0;
    int rc = once_jcs(in, size, &once, &n1);
    check(rc == ONCE_OK || rc == ONCE_EPARSE || rc == ONCE_EINVAL || rc == ONCE_ERANGE ||
              rc == ONCE_ENOMEM,
          "undocumented error from once_jcs");

    uint8_t digest[ONCE_SHA256_LEN];
    int drc = once_message_digest(in, size, digest);

    if (rc != ONCE_OK) {
        check(once == NULL, "output set on failure");
        check(drc != ONCE_OK, "digest accepted what once_jcs refused");
        return 0;
    }
    check(once != NULL && strlen(once) == n1, "output length or terminator wrong");

    char *twice = NULL;
    size_t n2 = 0;
    rc = once_jcs(once, n1, &twice, &n2);
    check(rc == ONCE_OK, "canonical output does not parse again");
    check(n1 == n2 && memcmp(once, twice, n1) == 0, "canonicalisation is not idempotent");

    /* A digest exists exactly for objects, and depends only on the kept
     * members, so the canonical text digests the same. */
    if (once[0] == '{') {
        uint8_t again[ONCE_SHA256_LEN];
        check(drc == ONCE_OK, "digest refused an object");
        check(once_message_digest(once, n1, again) == ONCE_OK, "digest refused canonical object");
        check(memcmp(digest, again, sizeof digest) == 0, "digest changed under canonicalisation");
    } else {
        check(drc == ONCE_EINVAL, "digest of a non-object was not ONCE_EINVAL");
    }
    once_free(once);
    once_free(twice);
    return 0;
}
