/*
 * test_ids.c -- task ID validation, ULID and UUIDv4 minting, derived IDs,
 * child IDs and side-effect keys (docs/design.md sections 3 and 8).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc_int.h"
#include "once/once.h"

static const char crockford[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/* A string of n copies of c, in a static buffer. */
static const char *rep(char c, size_t n)
{
    static char buf[512];
    assert_true(n < sizeof buf);
    memset(buf, c, n);
    buf[n] = '\0';
    return buf;
}

/* --- validation ----------------------------------------------------------- */

static void test_id_valid_table(void **state)
{
    (void)state;
    static const struct {
        const char *id;
        int ok;
    } cases[] = {
        {"a", 1},
        {"Z", 1},
        {"0", 1},
        {"01ARYZ6S41TSV4RRFFQ69G5FAV", 1},
        {"643aa6ce-4581-8eca-ae1c-e21126e154db", 1},
        {"a.b", 1},
        {"a_b", 1},
        {"a:b", 1},
        {"a-b", 1},
        {"a.", 1},
        {"a-_.:", 1},
        {"", 0},
        {"-a", 0},
        {".a", 0},
        {"_a", 0},
        {":a", 0},
        {"a b", 0},
        {" a", 0},
        {"a/b", 0},
        {"a+b", 0},
        {"a@b", 0},
        {"a\tb", 0},
        {"a\nb", 0},
        {"caf\xc3\xa9", 0},
        {"a\x7f", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (once_id_valid(cases[i].id) != cases[i].ok)
            fail_msg("once_id_valid(\"%s\") != %d", cases[i].id, cases[i].ok);
    }
    assert_int_equal(once_id_valid(NULL), 0);
    assert_int_equal(once_id_valid(rep('a', 127)), 1);
    assert_int_equal(once_id_valid(rep('a', 128)), 1);
    assert_int_equal(once_id_valid(rep('a', 129)), 0);
    assert_int_equal(once_id_valid(rep('a', 400)), 0);
}

/* --- ULID ----------------------------------------------------------------- */

static int64_t ulid_time(const char *u)
{
    int64_t v = 0;
    for (int i = 0; i < 10; i++) {
        const char *p = strchr(crockford, u[i]);
        assert_non_null(p);
        v = v * 32 + (p - crockford);
    }
    return v;
}

static void test_ulid_shape(void **state)
{
    (void)state;
    once_manual_clock mc;
    once_manual_clock_init(&mc, 1469918176385LL);
    char u[ONCE_ULID_LEN + 1];
    assert_int_equal(once_ulid(&mc.base, once_rng_system(), u), ONCE_OK);
    assert_int_equal(strlen(u), ONCE_ULID_LEN);
    for (int i = 0; i < ONCE_ULID_LEN; i++)
        assert_non_null(strchr(crockford, u[i]));
    assert_true(u[0] <= '7'); /* 128 bits in 130: the top char holds 3 bits */
    assert_int_equal(once_id_valid(u), 1);
    /* Time prefix of the ULID spec's example timestamp. */
    assert_memory_equal(u, "01ARYZ6S41", 10);
    assert_true(ulid_time(u) == 1469918176385LL);

    /* The random part is the rng output, big-endian in base32. */
    once_seeded_rng r1, r2;
    once_seeded_rng_init(&r1, 9);
    once_seeded_rng_init(&r2, 9);
    char a[27], b[27];
    assert_int_equal(once_ulid(&mc.base, &r1.base, a), ONCE_OK);
    assert_int_equal(once_ulid(&mc.base, &r2.base, b), ONCE_OK);
    assert_string_equal(a, b);
    assert_int_equal(once_ulid(&mc.base, &r1.base, b), ONCE_OK);
    assert_string_not_equal(a, b);
    assert_memory_equal(a, b, 10);

    /* The epoch itself is a valid timestamp. */
    once_manual_clock_init(&mc, 0);
    assert_int_equal(once_ulid(&mc.base, &r1.base, a), ONCE_OK);
    assert_memory_equal(a, "0000000000", 10);
}

static void test_ulid_time_order(void **state)
{
    (void)state;
    once_manual_clock mc;
    once_manual_clock_init(&mc, 1700000000000LL);
    char prev[27], cur[27];
    assert_int_equal(once_ulid(&mc.base, once_rng_system(), prev), ONCE_OK);
    const int64_t steps[] = {1, 1, 31, 32, 1000, 86400000LL, 1LL << 40};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        once_manual_clock_advance(&mc, steps[i]);
        assert_int_equal(once_ulid(&mc.base, once_rng_system(), cur), ONCE_OK);
        assert_true(strcmp(prev, cur) < 0); /* later clock sorts later */
        assert_true(ulid_time(cur) == once_now(&mc.base));
        memcpy(prev, cur, sizeof cur);
    }
    /* Largest 48-bit time, and the first out of range. */
    once_manual_clock_init(&mc, (1LL << 48) - 1);
    assert_int_equal(once_ulid(&mc.base, once_rng_system(), cur), ONCE_OK);
    assert_memory_equal(cur, "7ZZZZZZZZZ", 10);
    once_manual_clock_init(&mc, 1LL << 48);
    assert_int_equal(once_ulid(&mc.base, once_rng_system(), cur), ONCE_ERANGE);
    once_manual_clock_init(&mc, -1);
    assert_int_equal(once_ulid(&mc.base, once_rng_system(), cur), ONCE_ERANGE);
    assert_int_equal(once_ulid(NULL, once_rng_system(), cur), ONCE_EINVAL);
    assert_int_equal(once_ulid(&mc.base, NULL, cur), ONCE_EINVAL);
}

/* An rng that always fails, to check error propagation. */
static int failing_fill(const once_rng *r, void *buf, size_t n)
{
    (void)r;
    (void)buf;
    (void)n;
    return ONCE_EIO;
}

/* An rng of constant bytes. */
static int ff_fill(const once_rng *r, void *buf, size_t n)
{
    (void)r;
    memset(buf, 0xff, n);
    return ONCE_OK;
}

static void test_ulid_random_bits(void **state)
{
    (void)state;
    once_manual_clock mc;
    once_manual_clock_init(&mc, 1);
    once_rng ff = {ff_fill};
    char u[27];
    assert_int_equal(once_ulid(&mc.base, &ff, u), ONCE_OK);
    assert_string_equal(u, "0000000001ZZZZZZZZZZZZZZZZ");
    once_rng bad = {failing_fill};
    assert_int_equal(once_ulid(&mc.base, &bad, u), ONCE_EIO);
}

/* --- UUIDs ---------------------------------------------------------------- */

static void check_uuid_shape(const char *u, char version)
{
    assert_int_equal(strlen(u), ONCE_UUID_LEN);
    for (int i = 0; i < ONCE_UUID_LEN; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23)
            assert_int_equal(u[i], '-');
        else
            assert_non_null(strchr("0123456789abcdef", u[i]));
    }
    assert_int_equal(u[14], version);
    assert_non_null(strchr("89ab", u[19])); /* variant 10xx */
    assert_int_equal(once_id_valid(u), 1);
}

static void test_uuid4(void **state)
{
    (void)state;
    char a[37], b[37];
    for (int i = 0; i < 200; i++) {
        assert_int_equal(once_uuid4(once_rng_system(), a), ONCE_OK);
        check_uuid_shape(a, '4');
    }
    assert_int_equal(once_uuid4(once_rng_system(), b), ONCE_OK);
    assert_string_not_equal(a, b);
    /* Version/variant bits are forced even when the source sets all bits. */
    once_rng ff = {ff_fill};
    assert_int_equal(once_uuid4(&ff, a), ONCE_OK);
    assert_string_equal(a, "ffffffff-ffff-4fff-bfff-ffffffffffff");
    once_rng bad = {failing_fill};
    assert_int_equal(once_uuid4(&bad, a), ONCE_EIO);
    assert_int_equal(once_uuid4(NULL, a), ONCE_EINVAL);
}

static int64_t clock_at(const once_clock *c)
{
    (void)c;
    return 0x0123456789abLL;
}

static void test_uuid7(void **state)
{
    (void)state;
    char a[37], b[37];
    once_clock fixed = {clock_at};
    once_rng ff = {ff_fill};
    /* The 48-bit ms timestamp leads; version 7, variant 10xx. */
    assert_int_equal(once_uuid7(&fixed, &ff, a), ONCE_OK);
    assert_string_equal(a, "01234567-89ab-7fff-bfff-ffffffffffff");
    check_uuid_shape(a, '7');
    assert_true(once_id_valid(a));
    /* Later milliseconds sort later as strings, whatever the random bits. */
    once_offset_clock later;
    once_offset_clock_init(&later, 0);
    assert_int_equal(once_uuid7(&later.base, &ff, a), ONCE_OK);
    once_offset_clock_set(&later, 1);
    assert_int_equal(once_uuid7(&later.base, once_rng_system(), b), ONCE_OK);
    check_uuid_shape(b, '7');
    assert_true(strcmp(a, b) < 0);
    once_rng bad = {failing_fill};
    assert_int_equal(once_uuid7(&fixed, &bad, a), ONCE_EIO);
    assert_int_equal(once_uuid7(NULL, &ff, a), ONCE_EINVAL);
    assert_int_equal(once_uuid7(&fixed, NULL, a), ONCE_EINVAL);
}

static void test_derive_task_id(void **state)
{
    (void)state;
    const uint8_t secret[] = "server-secret";
    const size_t sl = sizeof secret - 1;
    char a[37], b[37];
    assert_int_equal(once_derive_task_id(secret, sl, "alice", "msg-1", a), ONCE_OK);
    check_uuid_shape(a, '8');
    /* Pinned: replicas and releases must all derive the same ID. */
    assert_string_equal(a, "643aa6ce-4581-8eca-ae1c-e21126e154db");
    assert_int_equal(once_derive_task_id(secret, sl, "alice", "msg-1", b), ONCE_OK);
    assert_string_equal(a, b);

    assert_int_equal(once_derive_task_id(secret, sl, "bob", "msg-1", b), ONCE_OK);
    assert_string_not_equal(a, b);
    check_uuid_shape(b, '8');
    assert_int_equal(once_derive_task_id(secret, sl, "alice", "msg-2", b), ONCE_OK);
    assert_string_not_equal(a, b);
    const uint8_t other[] = "other-secret";
    assert_int_equal(once_derive_task_id(other, sizeof other - 1, "alice", "msg-1", b), ONCE_OK);
    assert_string_not_equal(a, b);
    /* Moving the principal/messageId boundary changes the ID. */
    assert_int_equal(once_derive_task_id(secret, sl, "alic", "emsg-1", b), ONCE_OK);
    assert_string_not_equal(a, b);

    /* Long inputs take the heap path and report allocation failure. */
    const char *longmsg = rep('m', 300);
    assert_int_equal(once_derive_task_id(secret, sl, "alice", longmsg, a), ONCE_OK);
    check_uuid_shape(a, '8');
    once__alloc_fail_after(0);
    assert_int_equal(once_derive_task_id(secret, sl, "alice", longmsg, b), ONCE_ENOMEM);
    once__alloc_fail_after(-1);
    assert_int_equal(once_derive_task_id(secret, sl, "alice", longmsg, b), ONCE_OK);
    assert_string_equal(a, b);

    assert_int_equal(once_derive_task_id(secret, sl, NULL, "m", a), ONCE_EINVAL);
    assert_int_equal(once_derive_task_id(secret, sl, "p", NULL, a), ONCE_EINVAL);
    assert_int_equal(once_derive_task_id(NULL, 4, "p", "m", a), ONCE_EINVAL);
}

/* --- child IDs and effect keys -------------------------------------------- */

static void test_child_id_short(void **state)
{
    (void)state;
    char out[ONCE_ID_MAX + 1];
    assert_int_equal(once_child_id("task-1", 3, out), ONCE_OK);
    assert_string_equal(out, "task-1.3");
    assert_int_equal(once_child_id("task-1.3", 0, out), ONCE_OK);
    assert_string_equal(out, "task-1.3.0");
    assert_int_equal(once_child_id("t", UINT64_MAX, out), ONCE_OK);
    assert_string_equal(out, "t.18446744073709551615");

    /* Exactly 128 chars still nests. */
    char parent[ONCE_ID_MAX + 1];
    memcpy(parent, rep('a', 126), 127);
    assert_int_equal(once_child_id(parent, 5, out), ONCE_OK);
    assert_int_equal(strlen(out), 128);
    assert_memory_equal(out, parent, 126);
    assert_string_equal(out + 126, ".5");
    assert_int_equal(once_id_valid(out), 1);
}

static void test_child_id_hashed(void **state)
{
    (void)state;
    char out[ONCE_ID_MAX + 1], again[ONCE_ID_MAX + 1];
    char parent[ONCE_ID_MAX + 1];
    memcpy(parent, rep('a', 127), 128);
    assert_int_equal(once_child_id(parent, 5, out), ONCE_OK); /* 129: too long */
    assert_string_equal(out, "h8a9c682b909f4cd91039b1124de208ceb738147a54ee5ac34e8584b6db5df7f");
    assert_int_equal(once_id_valid(out), 1);
    assert_int_equal(once_child_id(parent, 5, again), ONCE_OK);
    assert_string_equal(out, again);
    assert_int_equal(once_child_id(parent, 6, again), ONCE_OK);
    assert_string_not_equal(out, again);

    /* The hash input is parent "." step-decimal. */
    char in[200];
    memcpy(parent, rep('b', 128), 129);
    int n = snprintf(in, sizeof in, "%s.%d", parent, 12345);
    uint8_t d[32];
    char hex[65];
    once_sha256(in, (size_t)n, d);
    once_hex(d, 32, hex);
    assert_int_equal(once_child_id(parent, 12345, out), ONCE_OK);
    assert_int_equal(out[0], 'h');
    assert_memory_equal(out + 1, hex, 63);
    assert_int_equal(strlen(out), 64);

    /* Chains of delegation stay valid at every depth. */
    char cur[ONCE_ID_MAX + 1] = "01ARYZ6S41TSV4RRFFQ69G5FAV";
    for (uint64_t step = 0; step < 200; step++) {
        assert_int_equal(once_child_id(cur, step * 7919, out), ONCE_OK);
        assert_int_equal(once_id_valid(out), 1);
        memcpy(cur, out, sizeof out);
    }
}

static void test_child_id_invalid(void **state)
{
    (void)state;
    char out[ONCE_ID_MAX + 1];
    assert_int_equal(once_child_id(NULL, 1, out), ONCE_EINVAL);
    assert_int_equal(once_child_id("", 1, out), ONCE_EINVAL);
    assert_int_equal(once_child_id("-x", 1, out), ONCE_EINVAL);
    assert_int_equal(once_child_id("a b", 1, out), ONCE_EINVAL);
    assert_int_equal(once_child_id(rep('a', 129), 1, out), ONCE_EINVAL);
}

static void test_effect_key(void **state)
{
    (void)state;
    char out[ONCE_EFFECT_KEY_MAX + 1];
    assert_int_equal(once_effect_key("task-1", 0, out), ONCE_OK);
    assert_string_equal(out, "task-1:step-0");
    assert_int_equal(once_effect_key("01ARYZ6S41TSV4RRFFQ69G5FAV", 42, out), ONCE_OK);
    assert_string_equal(out, "01ARYZ6S41TSV4RRFFQ69G5FAV:step-42");
    /* The longest key fills the buffer exactly. */
    char id[ONCE_ID_MAX + 1];
    memcpy(id, rep('z', 128), 129);
    assert_int_equal(once_effect_key(id, UINT64_MAX, out), ONCE_OK);
    assert_int_equal(strlen(out), ONCE_EFFECT_KEY_MAX);
    assert_string_equal(out + 128, ":step-18446744073709551615");
    assert_int_equal(once_effect_key(NULL, 1, out), ONCE_EINVAL);
    assert_int_equal(once_effect_key("", 1, out), ONCE_EINVAL);
    assert_int_equal(once_effect_key(".x", 1, out), ONCE_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_id_valid_table),
        cmocka_unit_test(test_ulid_shape),
        cmocka_unit_test(test_ulid_time_order),
        cmocka_unit_test(test_ulid_random_bits),
        cmocka_unit_test(test_uuid4),
        cmocka_unit_test(test_uuid7),
        cmocka_unit_test(test_derive_task_id),
        cmocka_unit_test(test_child_id_short),
        cmocka_unit_test(test_child_id_hashed),
        cmocka_unit_test(test_child_id_invalid),
        cmocka_unit_test(test_effect_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
