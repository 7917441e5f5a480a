/*
 * test_webhook_sig.c -- Standard Webhooks signatures (src/core/webhook_sig.c):
 * the published example vector, whsec_ secrets, rotation (several entries
 * and several secrets), and every reason a receiver must refuse: tampered
 * body, tampered signature, a stale or future timestamp, missing or
 * malformed headers; the webhook-id that names a delivery's subscription
 * (round trip, every malformed shape refused) and the principal tag (fixed
 * length, per principal, per key).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "once/webhook.h"

/* The example of the Standard Webhooks / Svix documentation. */
#define EX_SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define EX_ID "msg_p5jXN8AQM9LWM0D4loKWxJek"
#define EX_TS "1614265330"
#define EX_BODY "{\"test\": 2432232314}"
#define EX_SIG "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
#define EX_NOW INT64_C(1614265330)

static int verify(const char *const *secrets, size_t n, const char *id, const char *ts,
                  const char *sig, const char *body, int64_t now)
{
    return once_webhook_verify(secrets, n, id, ts, sig, body, strlen(body), now, 300);
}

static void known_vector(void **state)
{
    (void)state;
    char out[ONCE_WEBHOOK_SIG_LEN + 1];
    assert_int_equal(once_webhook_sign(EX_SECRET, EX_ID, EX_TS, EX_BODY, strlen(EX_BODY), out),
                     ONCE_OK);
    assert_string_equal(out, EX_SIG);
    /* A plain secret is its own bytes (value computed with Python's hmac). */
    assert_int_equal(once_webhook_sign("plain-secret-of-enough-length", "t-1.3", "1700000000",
                                       "{\"a\":1}", 7, out),
                     ONCE_OK);
    assert_string_equal(out, "v1,voUIpPmYw0LZ7+4xlgqShWbD+bQkh3uJYIRiQGYebzo=");
    const char *s[] = {EX_SECRET};
    assert_int_equal(verify(s, 1, EX_ID, EX_TS, EX_SIG, EX_BODY, EX_NOW), ONCE_OK);
}

static void refusals(void **state)
{
    (void)state;
    const char *s[] = {EX_SECRET};
    /* tampered body, signature, id, timestamp (the MAC covers all three) */
    assert_int_equal(verify(s, 1, EX_ID, EX_TS, EX_SIG, "{\"test\": 2432232315}", EX_NOW),
                     ONCE_EINVAL);
    assert_int_equal(verify(s, 1, EX_ID, EX_TS,
                            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ2OE=", EX_BODY, EX_NOW),
                     ONCE_EINVAL);
    assert_int_equal(verify(s, 1, "msg_other", EX_TS, EX_SIG, EX_BODY, EX_NOW), ONCE_EINVAL);
    assert_int_equal(verify(s, 1, EX_ID, "1614265331", EX_SIG, EX_BODY, EX_NOW), ONCE_EINVAL);
    /* a wrong secret */
    const char *other[] = {"whsec_dGhpcyBpcyBhbm90aGVyIHNlY3JldA=="};
    assert_int_equal(verify(other, 1, EX_ID, EX_TS, EX_SIG, EX_BODY, EX_NOW), ONCE_EINVAL);
    /* stale and future timestamps, just inside and just outside 300 s */
    assert_int_equal(verify(s, 1, EX_ID, EX_TS, EX_SIG, EX_BODY, EX_NOW + 300), ONCE_OK);
    assert_int_equal(verify(s, 1, EX_ID, EX_TS, EX_SIG, EX_BODY, EX_NOW + 301), ONCE_ERANGE);
    assert_int_equal(verify(s, 1, EX_ID, EX_TS, EX_SIG, EX_BODY, EX_NOW - 301), ONCE_ERANGE);
    /* missing or malformed headers */
    assert_int_equal(once_webhook_verify(s, 1, NULL, EX_TS, EX_SIG, EX_BODY, 20, EX_NOW, 300),
                     ONCE_EPARSE);
    assert_int_equal(once_webhook_verify(s, 1, EX_ID, NULL, EX_SIG, EX_BODY, 20, EX_NOW, 300),
                     ONCE_EPARSE);
    assert_int_equal(once_webhook_verify(s, 1, EX_ID, EX_TS, NULL, EX_BODY, 20, EX_NOW, 300),
                     ONCE_EPARSE);
    assert_int_equal(verify(s, 1, EX_ID, "16142653x0", EX_SIG, EX_BODY, EX_NOW), ONCE_EPARSE);
    assert_int_equal(verify(s, 1, EX_ID, "", EX_SIG, EX_BODY, EX_NOW), ONCE_EPARSE);
    /* entries of another version, or not base64, never match */
    assert_int_equal(verify(s, 1, EX_ID, EX_TS,
                            "v2,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", EX_BODY, EX_NOW),
                     ONCE_EINVAL);
    assert_int_equal(verify(s, 1, EX_ID, EX_TS, "v1,***", EX_BODY, EX_NOW), ONCE_EINVAL);
    assert_int_equal(verify(s, 1, EX_ID, EX_TS, "v1", EX_BODY, EX_NOW), ONCE_EINVAL);
}

/* During a rotation the sender signs with several secrets and the receiver
 * accepts several: any match is enough, in any position. */
static void rotation(void **state)
{
    (void)state;
    const char *oldk = "whsec_b2xkLXNlY3JldC1vbGQtc2VjcmV0";
    const char *newk = "whsec_bmV3LXNlY3JldC1uZXctc2VjcmV0";
    char a[ONCE_WEBHOOK_SIG_LEN + 1], b[ONCE_WEBHOOK_SIG_LEN + 1], hdr[200];
    assert_int_equal(once_webhook_sign(newk, "t.1", EX_TS, "{}", 2, a), ONCE_OK);
    assert_int_equal(once_webhook_sign(oldk, "t.1", EX_TS, "{}", 2, b), ONCE_OK);
    assert_string_not_equal(a, b);
    snprintf(hdr, sizeof hdr, "%s %s", a, b);
    const char *only_old[] = {oldk}, *only_new[] = {newk}, *both[] = {newk, oldk};
    const char *unrelated[] = {"whsec_dW5yZWxhdGVkLXVucmVsYXRlZA=="};
    assert_int_equal(verify(only_old, 1, "t.1", EX_TS, hdr, "{}", EX_NOW), ONCE_OK);
    assert_int_equal(verify(only_new, 1, "t.1", EX_TS, hdr, "{}", EX_NOW), ONCE_OK);
    assert_int_equal(verify(both, 2, "t.1", EX_TS, b, "{}", EX_NOW), ONCE_OK);
    assert_int_equal(verify(unrelated, 1, "t.1", EX_TS, hdr, "{}", EX_NOW), ONCE_EINVAL);
    /* extra spaces between entries are tolerated */
    snprintf(hdr, sizeof hdr, "  v1,AAAA  %s ", b);
    assert_int_equal(verify(only_old, 1, "t.1", EX_TS, hdr, "{}", EX_NOW), ONCE_OK);
}

static void secret_decoding(void **state)
{
    (void)state;
    uint8_t key[ONCE_WEBHOOK_KEY_MAX];
    size_t len;
    assert_int_equal(once_webhook_key("whsec_aGVsbG8=", key, &len), ONCE_OK);
    assert_int_equal(len, 5);
    assert_memory_equal(key, "hello", 5);
    assert_int_equal(once_webhook_key("whsec_aGVsbG8", key, &len), ONCE_OK); /* unpadded */
    assert_int_equal(len, 5);
    assert_int_equal(once_webhook_key("hello", key, &len), ONCE_OK);
    assert_int_equal(len, 5);
    assert_int_equal(once_webhook_key("whsec_", key, &len), ONCE_EINVAL);
    assert_int_equal(once_webhook_key("whsec_a$b=", key, &len), ONCE_EINVAL);
    assert_int_equal(once_webhook_key("", key, &len), ONCE_EINVAL);
    assert_int_equal(once_webhook_key(NULL, key, &len), ONCE_EINVAL);
    char big[ONCE_WEBHOOK_KEY_MAX + 2];
    memset(big, 'k', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(once_webhook_key(big, key, &len), ONCE_ERANGE);
    char sig[ONCE_WEBHOOK_SIG_LEN + 1];
    assert_int_equal(once_webhook_sign("whsec_@@", "a.1", "1", "{}", 2, sig), ONCE_EINVAL);
    assert_string_equal(sig, "");
}

static void webhook_id(void **state)
{
    (void)state;
    once_webhook_id id = {.tag = "0123456789abcdef",
                          .config_id = "cfg.1",
                          .since = 4,
                          .task_id = "job-1.2",
                          .generation = 5};
    char out[ONCE_WEBHOOK_ID_MAX + 1];
    assert_int_equal(once_webhook_id_format(&id, out), ONCE_OK);
    assert_string_equal(out, "0123456789abcdef/cfg.1/4/job-1.2.5");
    once_webhook_id back;
    assert_int_equal(once_webhook_id_parse(out, &back), ONCE_OK);
    assert_string_equal(back.tag, id.tag);
    assert_string_equal(back.config_id, "cfg.1");
    assert_string_equal(back.task_id, "job-1.2"); /* dots in a task ID stay */
    assert_int_equal(back.since, 4);
    assert_int_equal(back.generation, 5);
    id.generation = 4; /* not after since */
    assert_int_equal(once_webhook_id_format(&id, out), ONCE_EINVAL);
    const char *bad[] = {
        "job-1.5",                                           /* the old shape: no subscription */
        "0123456789abcdef/cfg/0/job-1",                      /* no generation */
        "0123456789abcdef/cfg/0/job-1.0",                    /* generation 0 */
        "0123456789abcdef/cfg/5/job-1.5",                    /* generation <= since */
        "0123456789abcdef/cfg/-1/job-1.5",                   /* signed since */
        "0123456789abcdef/cfg/x/job-1.5",                    /* since not a number */
        "0123456789ABCDEF/cfg/0/job-1.5",                    /* tag not lowercase hex */
        "0123456789abcde/cfg/0/job-1.5",                     /* tag too short */
        "0123456789abcdef//0/job-1.5",                       /* no config id */
        "0123456789abcdef/cfg/0/a/job-1.5",                  /* one part too many */
        "0123456789abcdef/cfg/0/bad id.5",                   /* not an ID */
        "0123456789abcdef/cfg/0/job-1.99999999999999999999", /* overflow */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (once_webhook_id_parse(bad[i], &back) != ONCE_EINVAL)
            fail_msg("accepted %s", bad[i]);
}

static void principal_tag(void **state)
{
    (void)state;
    char a[ONCE_WEBHOOK_TAG_LEN + 1], a2[ONCE_WEBHOOK_TAG_LEN + 1], b[ONCE_WEBHOOK_TAG_LEN + 1],
        k2[ONCE_WEBHOOK_TAG_LEN + 1];
    once_webhook_principal_tag("key-1", 5, "alice", a);
    once_webhook_principal_tag("key-1", 5, "alice", a2);
    once_webhook_principal_tag("key-1", 5, "bob", b);
    once_webhook_principal_tag("key-2", 5, "alice", k2);
    assert_int_equal(strlen(a), ONCE_WEBHOOK_TAG_LEN);
    assert_string_equal(a, a2);     /* every replica computes the same */
    assert_string_not_equal(a, b);  /* principals apart */
    assert_string_not_equal(a, k2); /* keyed: not a plain hash of the name */
    assert_null(strstr(a, "alice"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(known_vector), cmocka_unit_test(refusals),
        cmocka_unit_test(rotation),     cmocka_unit_test(secret_decoding),
        cmocka_unit_test(webhook_id),   cmocka_unit_test(principal_tag),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
