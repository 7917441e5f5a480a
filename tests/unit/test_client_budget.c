/*
 * test_client_budget.c -- the retry budget (token bucket): a full bucket
 * allows a burst, then under a sustained outage retries stay near
 * budget_ratio of the calls; time refills it at budget_refill_per_s up to
 * the burst and never beyond; a clock that goes back mints nothing; and the
 * bucket kept in the outbox is shared by every client on the same file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "client/client_int.h"

static once_retry_policy policy(double ratio, double burst, double refill)
{
    once_retry_policy p;
    once_retry_policy_default(&p);
    p.budget_ratio = ratio;
    p.budget_burst = burst;
    p.budget_refill_per_s = refill;
    return p;
}

static void test_burst_then_denied(void **state)
{
    once_retry_policy p = policy(0.1, 3, 0);
    once__bucket b;
    once__bucket_init(&b, &p, 0);
    assert_true(once__bucket_take(&b, &p, 0));
    assert_true(once__bucket_take(&b, &p, 0));
    assert_true(once__bucket_take(&b, &p, 0));
    assert_false(once__bucket_take(&b, &p, 0));
    assert_false(once__bucket_take(&b, &p, 1000000));   /* no time refill */
}

/* Under a sustained outage every call wants every retry it can get: the
 * retries granted stay at burst + ratio * calls. */
static void test_sustained_outage_ratio(void **state)
{
    once_retry_policy p = policy(0.1, 10, 0);
    once__bucket b;
    once__bucket_init(&b, &p, 0);
    unsigned calls = 1000, retries = 0;
    for (unsigned i = 0; i < calls; i++) {
        once__bucket_deposit(&b, &p, i);
        for (int k = 0; k < 4; k++)   /* max_attempts 5: four retries wanted */
            retries += (unsigned)once__bucket_take(&b, &p, i);
    }
    /* 10 burst + 0.1 * 1000 = 110; sums of 0.1 may round one token away. */
    assert_true(retries >= 109 && retries <= 110);
    double ratio = (double)(retries - 10) / calls;
    assert_true(ratio > 0.098 && ratio < 0.102);
}

static void test_tokens_never_exceed_burst(void **state)
{
    once_retry_policy p = policy(0.5, 2, 1);
    once__bucket b;
    once__bucket_init(&b, &p, 0);
    for (int i = 0; i < 100; i++)
        once__bucket_deposit(&b, &p, 0);
    assert_true(b.tokens <= 2.0);
    once__bucket_refill(&b, &p, 1000LL * 1000 * 1000);
    assert_true(b.tokens <= 2.0);
    assert_true(once__bucket_take(&b, &p, 1000LL * 1000 * 1000));
    assert_true(once__bucket_take(&b, &p, 1000LL * 1000 * 1000));
    assert_false(once__bucket_take(&b, &p, 1000LL * 1000 * 1000));
}

static void test_time_refill(void **state)
{
    once_retry_policy p = policy(0, 5, 0.5);   /* one token per 2 s */
    once__bucket b;
    once__bucket_init(&b, &p, 0);
    b.tokens = 0;
    assert_false(once__bucket_take(&b, &p, 1000));   /* 0.5 token */
    assert_true(once__bucket_take(&b, &p, 2000));    /* 1.0 token */
    assert_false(once__bucket_take(&b, &p, 2100));
    /* The clock goes back an hour: nothing minted, and no debt either. */
    assert_false(once__bucket_take(&b, &p, 2100 - 3600 * 1000));
    assert_true(b.tokens >= 0);
    assert_true(once__bucket_take(&b, &p, 2100 - 3600 * 1000 + 2000));
}

static char *tmp_path(void)
{
    static char path[256];
    snprintf(path, sizeof path, "/tmp/once-budget-%d-XXXXXX", (int)getpid());
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    return path;
}

static void cleanup(const char *path)
{
    char p[300];
    unlink(path);
    snprintf(p, sizeof p, "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", path);
    unlink(p);
}

/* Two handles on one file (as two `once` processes would be) draw from
 * one bucket per agent; another agent has its own. */
static void test_outbox_budget_shared(void **state)
{
    const char *path = tmp_path();
    once__outbox *a, *b;
    char err[256];
    assert_int_equal(once__outbox_open(path, &a, err, sizeof err), ONCE_OK);
    assert_int_equal(once__outbox_open(path, &b, err, sizeof err), ONCE_OK);
    once_retry_policy p = policy(0.5, 2, 0);
    int ok = -1;
    double left = -1;
    assert_int_equal(once__outbox_budget(a, "http://x/", 1, &p, 0, &ok, &left), ONCE_OK);
    assert_true(ok);
    assert_int_equal(once__outbox_budget(b, "http://x/", 1, &p, 0, &ok, &left), ONCE_OK);
    assert_true(ok);
    assert_int_equal(once__outbox_budget(a, "http://x/", 1, &p, 0, &ok, &left), ONCE_OK);
    assert_false(ok);
    assert_int_equal(once__outbox_budget(b, "http://y/", 1, &p, 0, &ok, &left), ONCE_OK);
    assert_true(ok);
    /* Two calls deposit 0.5 each: one more retry on x. */
    assert_int_equal(once__outbox_budget(a, "http://x/", 0, &p, 0, NULL, NULL), ONCE_OK);
    assert_int_equal(once__outbox_budget(b, "http://x/", 0, &p, 0, NULL, NULL), ONCE_OK);
    assert_int_equal(once__outbox_budget(a, "http://x/", 1, &p, 0, &ok, &left), ONCE_OK);
    assert_true(ok);
    assert_int_equal(once__outbox_budget(b, "http://x/", 1, &p, 0, &ok, &left), ONCE_OK);
    assert_false(ok);
    once__outbox_close(a);
    /* Survives reopening. */
    assert_int_equal(once__outbox_open(path, &a, err, sizeof err), ONCE_OK);
    assert_int_equal(once__outbox_budget(a, "http://x/", 1, &p, 0, &ok, &left), ONCE_OK);
    assert_false(ok);
    once__outbox_close(a);
    once__outbox_close(b);
    cleanup(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_then_denied),
        cmocka_unit_test(test_sustained_outage_ratio),
        cmocka_unit_test(test_tokens_never_exceed_burst),
        cmocka_unit_test(test_time_refill),
        cmocka_unit_test(test_outbox_budget_shared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
