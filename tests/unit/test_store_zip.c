/*
 * test_store_zip.c -- zip.c's encoder writes raw deflate that zlib's
 * inflater, with the same dictionary, gives back byte for byte.
 *
 * Texts of every shape the stores hand it (task-like JSON with IDs that
 * repeat, one byte repeated, a block repeated further back than the 4 KiB
 * window, random bytes that do not shrink, texts past the size whose
 * buffers are kept), whole and in pieces; the same text deflates to the
 * same bytes whatever came before it (the hash table is never cleared, its
 * old entries must not leak into a new text); a text that does not fit is
 * ONCE_ERANGE and leaves the codec usable; and 300 texts of every shape
 * (random bytes, copies at every distance code's edges and the window's,
 * runs, dictionary words) given room to spare round-trip.
 */
#include <stdarg.h>
#include <setjmp.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "once/once.h"
#include "store/zip.h"

/* t[0..n) deflated in pieces of `piece` bytes (0: whole) into out[0..cap). */
static int deflate_text(once__zip *z, const char *t, size_t n, size_t piece, unsigned char *out,
                        size_t cap, size_t *outlen)
{
    int rc = once__zip_begin(z, out, cap);
    size_t at = 0;

    while (rc == ONCE_OK && at < n) {
        size_t k = piece && piece < n - at ? piece : n - at;
        rc = once__zip_add(z, t + at, k);
        at += k;
    }
    return rc == ONCE_OK ? once__zip_end(z, outlen) : rc;
}

/* t deflated into `cap` bytes of room, inflated, compared; returns the
 * deflated size, or 0 when it did not fit. */
static size_t round_trip_in(once__zip *z, const char *t, size_t n, size_t piece, size_t cap)
{
    unsigned char *out = malloc(cap + 1);
    char *back = malloc(n + 1);
    size_t len = 0;

    assert_non_null(out);
    assert_non_null(back);
    int rc = deflate_text(z, t, n, piece, out, cap, &len);
    if (rc == ONCE_ERANGE) {
        len = 0;
    } else {
        assert_int_equal(rc, ONCE_OK);
        assert_true(len > 0 && len <= cap);
        assert_int_equal(once__zip_inflate(z, out, len, back, n), ONCE_OK);
        assert_memory_equal(back, t, n);
    }
    free(out);
    free(back);
    return len;
}

/* Room n, as the stores give it: 0 when it would not shrink. */
static size_t round_trip(once__zip *z, const char *t, size_t n, size_t piece)
{
    return round_trip_in(z, t, n, piece, n);
}

/* A finished task's texts as the memory store deflates them: digest line,
 * task JSON, journal, events, each with its NUL; i varies the IDs. */
static size_t task_text(char *b, size_t cap, int i)
{
    char id[40], ctx[40];
    int n;
    snprintf(id, sizeof id, "t-%08d-%x", i, (unsigned)(i * 2654435761u));
    snprintf(ctx, sizeof ctx, "ctx-%012x", (unsigned)(i * 40503u));
    n = snprintf(b, cap,
                 "%064x %s\n%c{\"id\":\"%s\",\"contextId\":\"%s\",\"status\":{\"state\":"
                 "\"TASK_STATE_COMPLETED\",\"timestamp\":\"2026-12-05T16:%02d:20.505Z\"},"
                 "\"artifacts\":[{\"artifactId\":\"echo\",\"parts\":[{\"text\":\"hello %d\"}]}]}%c"
                 "{\"statusUpdate\":{\"taskId\":\"%s\",\"contextId\":\"%s\",\"status\":{\"state\":"
                 "\"TASK_STATE_WORKING\"},\"metadata\":{\"urn:once:a2a:idempotency:v1\":"
                 "{\"generation\":2}}}}%c",
                 (unsigned)i, id, 0, id, ctx, i % 60, i, 0, id, ctx, 0);
    assert_true(n > 0 && (size_t)n < cap);
    return (size_t)n;
}

static void test_task_texts_round_trip(void **state)
{
    (void)state;
    once__zip z;
    char b[2048];
    size_t raw = 0, zipped = 0;

    memset(&z, 0, sizeof z);
    for (int i = 0; i < 3000; i++) {
        size_t n = task_text(b, sizeof b, i);
        size_t k = round_trip(&z, b, n, (size_t)(i % 7) * 13);
        assert_true(k > 0);
        raw += n;
        zipped += k;
    }
    /* The dictionary's words and the repeated IDs: well under half. */
    assert_true(zipped * 3 < raw);
    once__zip_free(&z);
}

/* The same text, after others, deflates to the same bytes; in pieces or
 * whole, too. */
static void test_same_text_same_bytes(void **state)
{
    (void)state;
    once__zip z;
    char a[2048], b[2048];
    unsigned char first[2048], again[2048];
    size_t na = task_text(a, sizeof a, 7), nb, l1, l2;

    memset(&z, 0, sizeof z);
    assert_int_equal(deflate_text(&z, a, na, 0, first, na, &l1), ONCE_OK);
    for (int i = 0; i < 50; i++) {   /* texts with a's hashes, at other places */
        nb = task_text(b, sizeof b, i == 25 ? 7 : 1000 + i);
        assert_int_equal(deflate_text(&z, b, nb, 0, again, nb, &l2), ONCE_OK);
    }
    assert_int_equal(deflate_text(&z, a, na, 5, again, na, &l2), ONCE_OK);
    assert_int_equal(l2, l1);
    assert_memory_equal(again, first, l1);
    once__zip_free(&z);
}

static void fill_random(char *b, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        b[i] = (char)(seed >> 16);
    }
}

/* Long texts: one byte over and over (matches of 258 that overlap
 * themselves), a random block repeated at 5,000 bytes (past the window:
 * its repeats must not be referenced) and at 3,000 (within it), random
 * bytes (do not fit: ERANGE), then a short text again (the long ones'
 * buffers were let go). */
static void test_long_and_random_texts(void **state)
{
    (void)state;
    once__zip z;
    size_t n = 300000;
    char *t = malloc(n);
    assert_non_null(t);
    memset(&z, 0, sizeof z);

    memset(t, 'a', n);
    assert_true(round_trip(&z, t, n, 0) < n / 50);
    for (size_t i = 0; i < n; i++)
        t[i] = (char)('a' + i % 26);
    assert_true(round_trip(&z, t, n, 4096) < n / 50);
    fill_random(t, 5000, 1);
    for (size_t i = 5000; i < n; i++)
        t[i] = t[i % 5000];
    assert_int_equal(round_trip(&z, t, n, 0), 0);   /* nothing within reach: no shrink */
    fill_random(t, 3000, 2);
    for (size_t i = 3000; i < n; i++)
        t[i] = t[i % 3000];
    assert_true(round_trip(&z, t, n, 777) < n / 10);   /* inner positions of matches are not hashed: not n / 100 */
    for (size_t len = 1; len < 9000; len = len * 3 + 1) {
        fill_random(t, len, (uint32_t)len);
        assert_int_equal(round_trip(&z, t, len, 0), 0);
    }
    char b[2048];
    size_t nb = task_text(b, sizeof b, 3);
    assert_true(round_trip(&z, b, nb, 0) > 0);
    free(t);
    once__zip_free(&z);
}

/* t deflated with room to spare (2n + 64: even bytes that do not shrink
 * fit, as 9-bit literals) and inflated back; the deflated size. */
static size_t round_trip_roomy(once__zip *z, const char *t, size_t n)
{
    size_t len = round_trip_in(z, t, n, 0, 2 * n + 64);

    assert_true(len > 0);
    return len;
}

/* Texts of every shape, inflated back: random bytes (every literal code,
 * 8 and 9 bits), copies of earlier bytes at the distances where deflate's
 * codes change and at the window's edge (4,096 reaches, 4,097 must not be
 * used), runs of one byte of every length up to past 258, and the
 * dictionary's words; 300 texts of up to 20,000 bytes from a fixed seed. */
static void test_every_shape_round_trips(void **state)
{
    (void)state;
    static const char *const words[] = {"TASK_STATE_COMPLETED", "\"contextId\":\"",
                                         "{\"statusUpdate\":{\"taskId\":\"", "\"}]}"};
    static const size_t dists[] = {1, 2, 3, 4, 5, 8, 9, 16, 17, 1024, 1025, 4095, 4096, 4097};
    enum { MAXN = 20000 };
    char *t = malloc(MAXN + 600);
    uint32_t seed = 35;
    once__zip z;

    assert_non_null(t);
    memset(&z, 0, sizeof z);
    for (int k = 0; k < 300; k++) {
        size_t n = 0, goal;
        seed = seed * 1103515245u + 12345u;
        goal = 1 + (seed >> 8) % MAXN;
        while (n < goal) {
            seed = seed * 1103515245u + 12345u;
            unsigned kind = (seed >> 16) % 4, len = 1 + (seed >> 20) % 300;
            if (kind == 0) {   /* random bytes */
                fill_random(t + n, len, seed);
            } else if (kind == 1 && n > 0) {   /* a copy from d back */
                size_t d = dists[(seed >> 8) % (sizeof dists / sizeof dists[0])];
                if (d > n)
                    d = n;
                for (unsigned i = 0; i < len; i++)
                    t[n + i] = t[n + i - d];
            } else if (kind == 2) {   /* a run */
                memset(t + n, 'a' + (int)(seed % 26), len);
            } else {   /* a dictionary word */
                const char *w = words[(seed >> 4) % (sizeof words / sizeof words[0])];
                len = (unsigned)strlen(w);
                memcpy(t + n, w, len);
            }
            n += len;
        }
        round_trip_roomy(&z, t, n);
    }
    for (size_t len = 1; len < 9000; len = len * 3 + 1) {   /* no shrink: all literals */
        fill_random(t, len, (uint32_t)len + 7);
        assert_true(round_trip_roomy(&z, t, len) >= len);
    }
    free(t);
    once__zip_free(&z);
}

/* A text longer than begin's room is ERANGE at add; one that deflates to
 * more than the room is ERANGE at end; the codec works after both. */
static void test_no_room(void **state)
{
    (void)state;
    once__zip z;
    char b[2048];
    unsigned char out[2048];
    size_t n = task_text(b, sizeof b, 11), len;

    memset(&z, 0, sizeof z);
    assert_int_equal(once__zip_begin(&z, out, n - 1), ONCE_OK);
    assert_int_equal(once__zip_add(&z, b, n), ONCE_ERANGE);
    assert_int_equal(deflate_text(&z, b, n, 0, out, 20, &len), ONCE_ERANGE);
    assert_true(round_trip(&z, b, n, 0) > 0);
    once__zip_free(&z);
    once__zip_free(&z);   /* freed twice: the second is a no-op */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_task_texts_round_trip),
        cmocka_unit_test(test_same_text_same_bytes),
        cmocka_unit_test(test_long_and_random_texts),
        cmocka_unit_test(test_no_room),
        cmocka_unit_test(test_every_shape_round_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
