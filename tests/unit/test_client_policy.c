/*
 * test_client_policy.c -- the pure parts of the client's retry policy:
 * full-jitter backoff stays within [0, min(cap, base*2^k)] and actually
 * spreads over that range (seeded rng); Retry-After in both RFC 9110 forms;
 * which answers are retried, refused or errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "client/client_int.h"

static once_retry_policy policy(int64_t base, int64_t cap)
{
    once_retry_policy p;
    once_retry_policy_default(&p);
    p.backoff_base_ms = base;
    p.backoff_cap_ms = cap;
    return p;
}

static void test_ceiling_doubles_to_cap(void **state)
{
    once_retry_policy p = policy(100, 1000);
    assert_int_equal(once__backoff_ceiling(&p, 0), 100);
    assert_int_equal(once__backoff_ceiling(&p, 1), 200);
    assert_int_equal(once__backoff_ceiling(&p, 2), 400);
    assert_int_equal(once__backoff_ceiling(&p, 3), 800);
    assert_int_equal(once__backoff_ceiling(&p, 4), 1000);
    /* Far past any shift width: still the cap, no overflow. */
    assert_int_equal(once__backoff_ceiling(&p, 200), 1000);
    assert_int_equal(once__backoff_ceiling(&p, UINT32_MAX), 1000);
    once_retry_policy huge = policy(INT64_MAX / 3, INT64_MAX);
    assert_true(once__backoff_ceiling(&huge, 5) > 0);
    once_retry_policy flat = policy(500, 500);
    assert_int_equal(once__backoff_ceiling(&flat, 7), 500);
}

static void test_jitter_within_bounds_and_spread(void **state)
{
    once_seeded_rng rng;
    once_seeded_rng_init(&rng, 42);
    once_retry_policy p = policy(100, 1600);
    for (unsigned k = 0; k < 8; k++) {
        int64_t ceil = once__backoff_ceiling(&p, k), lo = INT64_MAX, hi = -1;
        double sum = 0;
        const int n = 4000;
        for (int i = 0; i < n; i++) {
            int64_t d;
            assert_int_equal(once__backoff_delay(&p, k, &rng.base, &d), ONCE_OK);
            assert_true(d >= 0 && d <= ceil);
            lo = d < lo ? d : lo;
            hi = d > hi ? d : hi;
            sum += (double)d;
        }
        /* Full jitter: the whole range is used and the mean is near half. */
        assert_true(lo <= ceil / 20);
        assert_true(hi >= ceil - ceil / 20);
        double mean = sum / n;
        assert_true(mean > ceil * 0.45 && mean < ceil * 0.55);
    }
}

static void test_jitter_is_reproducible_with_a_seed(void **state)
{
    once_seeded_rng a, b;
    once_seeded_rng_init(&a, 7);
    once_seeded_rng_init(&b, 7);
    once_retry_policy p = policy(200, 10000);
    int differs = 0;
    int64_t prev = -1;
    for (unsigned k = 0; k < 20; k++) {
        int64_t x, y;
        once__backoff_delay(&p, k, &a.base, &x);
        once__backoff_delay(&p, k, &b.base, &y);
        assert_int_equal(x, y);
        differs |= prev >= 0 && x != prev;
        prev = x;
    }
    assert_true(differs);
}

static void test_zero_base_means_no_sleep(void **state)
{
    once_seeded_rng rng;
    once_seeded_rng_init(&rng, 1);
    once_retry_policy p = policy(0, 0);
    int64_t d = 99;
    assert_int_equal(once__backoff_delay(&p, 3, &rng.base, &d), ONCE_OK);
    assert_int_equal(d, 0);
}

static void test_retry_after_seconds(void **state)
{
    int64_t ms = -1;
    assert_int_equal(once__retry_after_parse("1", 0, &ms), ONCE_OK);
    assert_int_equal(ms, 1000);
    assert_int_equal(once__retry_after_parse("  120 ", 0, &ms), ONCE_OK);
    assert_int_equal(ms, 120000);
    assert_int_equal(once__retry_after_parse("0", 0, &ms), ONCE_OK);
    assert_int_equal(ms, 0);
    assert_int_equal(once__retry_after_parse("-1", 0, &ms), ONCE_EINVAL);
    assert_int_equal(once__retry_after_parse("1.5", 0, &ms), ONCE_EINVAL);
    assert_int_equal(once__retry_after_parse("", 0, &ms), ONCE_EINVAL);
    assert_int_equal(once__retry_after_parse("soon", 0, &ms), ONCE_EINVAL);
    /* Past any deadline, not ignored (which would retry at once): the
     * call's deadline then ends it (retry.c). */
    assert_int_equal(once__retry_after_parse("99999999999999999999", 0, &ms), ONCE_OK);
    assert_true(ms >= INT64_MAX / 4);
    assert_int_equal(once__retry_after_parse(NULL, 0, &ms), ONCE_EINVAL);
}

static void test_retry_after_http_date(void **state)
{
    /* RFC 9110's example date: 1994-11-06T08:49:37Z = 784111777 s. */
    const int64_t at = 784111777LL * 1000;
    int64_t ms = -1;
    assert_int_equal(once__retry_after_parse("Sun, 06 Nov 1994 08:49:37 GMT", at - 5000, &ms), ONCE_OK);
    assert_int_equal(ms, 5000);
    /* A date in the past: retry now, not never. */
    assert_int_equal(once__retry_after_parse("Sun, 06 Nov 1994 08:49:37 GMT", at + 9000, &ms), ONCE_OK);
    assert_int_equal(ms, 0);
    /* Leap day and a year boundary go through the calendar arithmetic. */
    const int64_t leap = 1709164800LL * 1000;   /* 2024-02-29T00:00:00Z */
    assert_int_equal(once__retry_after_parse("Thu, 29 Feb 2024 00:00:10 GMT", leap, &ms), ONCE_OK);
    assert_int_equal(ms, 10000);
    const int64_t ny = 1767225600LL * 1000;     /* 2026-01-01T00:00:00Z */
    assert_int_equal(once__retry_after_parse("Thu, 01 Jan 2026 00:01:00 GMT", ny, &ms), ONCE_OK);
    assert_int_equal(ms, 60000);
    /* Obsolete and malformed forms are not guessed at. */
    assert_int_equal(once__retry_after_parse("Sunday, 06-Nov-94 08:49:37 GMT", 0, &ms), ONCE_EINVAL);
    assert_int_equal(once__retry_after_parse("Sun Nov  6 08:49:37 1994", 0, &ms), ONCE_EINVAL);
    assert_int_equal(once__retry_after_parse("Sun, 06 Nov 1994 08:49:37 UTC", 0, &ms), ONCE_EINVAL);
    assert_int_equal(once__retry_after_parse("Sun, 06 Foo 1994 08:49:37 GMT", 0, &ms), ONCE_EINVAL);
    assert_int_equal(once__retry_after_parse("Sun, 06 Nov 1994 25:49:37 GMT", 0, &ms), ONCE_EINVAL);
}

static json_t *err_doc(int code, const char *reason, const char *retryable)
{
    json_t *info = json_pack("{s:s,s:s,s:s,s:{}}", "@type", "type.googleapis.com/google.rpc.ErrorInfo",
                             "reason", reason, "domain", "once", "metadata");
    if (retryable != NULL)
        json_object_set_new(json_object_get(info, "metadata"), "retryable", json_string(retryable));
    return json_pack("{s:s,s:i,s:{s:i,s:s,s:[o]}}", "jsonrpc", "2.0", "id", 1, "error", "code", code,
                     "message", "m", "data", info);
}

static void test_classify(void **state)
{
    json_t *ok = json_pack("{s:s,s:i,s:{}}", "jsonrpc", "2.0", "id", 1, "result");
    assert_int_equal(once__classify(200, ok), ONCE__OK);
    /* No HTTP answer at all, and the gateway/overload statuses: retry. */
    assert_int_equal(once__classify(0, NULL), ONCE__RETRY);
    assert_int_equal(once__classify(429, NULL), ONCE__RETRY);
    assert_int_equal(once__classify(502, NULL), ONCE__RETRY);
    assert_int_equal(once__classify(503, NULL), ONCE__RETRY);
    assert_int_equal(once__classify(504, ok), ONCE__RETRY);
    /* Other statuses are not retried. */
    assert_int_equal(once__classify(500, NULL), ONCE__ERROR);
    assert_int_equal(once__classify(404, NULL), ONCE__ERROR);
    assert_int_equal(once__classify(200, NULL), ONCE__ERROR);

    json_t *store = err_doc(-32603, "STORE_UNAVAILABLE", "true");
    assert_int_equal(once__classify(503, store), ONCE__RETRY);
    assert_int_equal(once__classify(200, store), ONCE__RETRY);
    json_t *marked = err_doc(-32603, "SOMETHING", "true");
    assert_int_equal(once__classify(200, marked), ONCE__RETRY);
    json_t *internal = err_doc(-32603, "INTERNAL", NULL);
    assert_int_equal(once__classify(200, internal), ONCE__ERROR);

    /* Refusals: final, whatever the HTTP status. */
    const struct {
        int code;
        const char *reason;
    } refusals[] = {{-32004, "TASK_TERMINAL"}, {-32004, "TASK_NOT_ACCEPTING_INPUT"},
                    {-32001, "TASK_NOT_FOUND"}, {-32001, "TASK_EXPIRED"},
                    {-32602, "MESSAGE_ID_REUSED"}, {-32002, "TASK_NOT_CANCELABLE"}};
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
        json_t *d = err_doc(refusals[i].code, refusals[i].reason, NULL);
        assert_int_equal(once__classify(200, d), ONCE__REFUSED);
        assert_int_equal(once__classify(400, d), ONCE__REFUSED);
        json_decref(d);
    }
    json_t *badp = err_doc(-32602, "INVALID_PARAMS", NULL);
    assert_int_equal(once__classify(200, badp), ONCE__ERROR);
    json_t *ver = err_doc(-32009, "VERSION_NOT_SUPPORTED", NULL);
    assert_int_equal(once__classify(400, ver), ONCE__ERROR);
    json_decref(ok);
    json_decref(store);
    json_decref(marked);
    json_decref(internal);
    json_decref(badp);
    json_decref(ver);
}

static void test_result_from_error_names_state(void **state)
{
    json_t *d = err_doc(-32004, "TASK_TERMINAL", NULL);
    json_t *meta = json_object_get(json_array_get(json_object_get(json_object_get(d, "error"), "data"), 0),
                                   "metadata");
    json_object_set_new(meta, "state", json_string("TASK_STATE_COMPLETED"));
    json_object_set_new(meta, "taskId", json_string("t-1"));
    once_call_result r;
    memset(&r, 0, sizeof r);
    once__result_from_error(&r, json_object_get(d, "error"));
    assert_int_equal(r.rpc_code, -32004);
    assert_string_equal(r.reason, "TASK_TERMINAL");
    assert_int_equal(r.state, ONCE_STATE_COMPLETED);
    assert_string_equal(r.task_id, "t-1");
    assert_string_equal(r.error, "m");
    once_call_result_clear(&r);
    assert_null(r.error);
    json_decref(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ceiling_doubles_to_cap),
        cmocka_unit_test(test_jitter_within_bounds_and_spread),
        cmocka_unit_test(test_jitter_is_reproducible_with_a_seed),
        cmocka_unit_test(test_zero_base_means_no_sleep),
        cmocka_unit_test(test_retry_after_seconds),
        cmocka_unit_test(test_retry_after_http_date),
        cmocka_unit_test(test_classify),
        cmocka_unit_test(test_result_from_error_names_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
