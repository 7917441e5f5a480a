/*
 * test_push_faults.c -- a fault sweep over the sqlite backend's push
 * delivery paths (sqlite_push.c): fail the i-th wrapped sqlite3 call of a
 * fixed workload (create with push_json, claim, ack, config change, sweep),
 * for i = 1, 2, ... until a run hits no fault.
 *
 * Each run proves what a deliverer and an operator rely on:
 *   - every call answers normally or with a clean retryable error
 *     (ONCE_ESTORE / ONCE_EBUSY), never a wrong verdict;
 *   - after the fault a fresh open passes check(): delivery rows and
 *     push_json never disagree, whichever statement failed;
 *   - an acknowledged delivery is never lost: once an ack returned ONCE_OK,
 *     the row shows it after a reopen;
 *   - a row leased to one owner is never handed to another within the lease.
 * Both SQLITE_IOERR and SQLITE_BUSY are injected.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <stdio.h>

#include "store/sqlite_fault.h"
#include "store/util.h"

#define T0 INT64_C(5000000)

static int clean_error(int rc)
{
    return rc == ONCE_ESTORE || rc == ONCE_EBUSY;
}

#define OK_OR_CLEAN(call)                                                                          \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != ONCE_OK && !clean_error(rc_))                                                   \
            fail_msg("run %ld: %s = %s", run, #call, once_errname(rc_));                           \
    } while (0)

static int put(once_store *s, const char *id, int nev, const char *push)
{
    once_record r;
    st_events e;
    if (st_rec(&r, "p", id, ONCE_STATE_WORKING, T0, NULL) != 0)
        return ONCE_ENOMEM;
    r.generation = nev;
    r.push_json = once_strdup(push);
    st_mkev(&e, 1, (size_t)nev, id);
    int rc = once_store_create(s, &r, e.ev, (size_t)nev, NULL, NULL);
    once_record_clear(&r);
    return rc;
}

/* Add one event and a new push_json; a conflict (an earlier faulted
 * write may or may not have landed) is no verdict here. */
static int change(once_store *s, const char *id, const char *push, int finish)
{
    once_record r;
    st_events e;
    int rc = once_store_load(s, "p", id, &r, NULL);
    if (rc != ONCE_OK)
        return rc == ONCE_ENOTFOUND ? ONCE_OK : rc;
    int64_t v = r.version;
    once_free(r.push_json);
    r.push_json = once_strdup(push);
    st_mkev(&e, r.generation + 1, 1, id);
    r.generation++;
    r.version = v + 1;
    if (finish) {
        r.state = ONCE_STATE_COMPLETED;
        r.finished_at = T0 + 10;
    }
    rc = once_store_update(s, &r, v, e.ev, 1);
    once_record_clear(&r);
    return rc == ONCE_ECONFLICT ? ONCE_OK : rc;
}

static int ack(once_store *s, const once_push_claim *c, const char *owner, once_push_outcome o,
               int64_t now)
{
    once_push_ack a = {.principal = c->principal,
                       .task_id = c->task_id,
                       .config_id = c->config_id,
                       .owner = owner,
                       .generation = c->generation,
                       .outcome = o,
                       .now = now,
                       .lease_ms = 0,
                       .next_attempt_at = now + 50,
                       .error = "injected"};
    return once_store_push_ack(s, &a);
}

/* The workload; returns 1 if an ack of t1/c generation 1 was acknowledged. */
static int workload(once_store *s, long run)
{
    once_push_claim_list a, b;
    int acked = 0;
    OK_OR_CLEAN(put(s, "t1", 2, "[{\"id\":\"c\",\"since\":0,\"url\":\"http://x/\"}]"));
    OK_OR_CLEAN(put(s, "t2", 1, "[{\"id\":\"c\",\"since\":0}]"));
    int rc = once_store_push_claim(s, "r1", T0, 1000, 8, &a);
    OK_OR_CLEAN(rc);
    /* within r1's lease, r2 must not get what r1 holds */
    OK_OR_CLEAN(once_store_push_claim(s, "r2", T0 + 10, 1000, 8, &b));
    for (size_t i = 0; i < a.n; i++)
        for (size_t j = 0; j < b.n; j++)
            if (strcmp(a.v[i].task_id, b.v[j].task_id) == 0 &&
                strcmp(a.v[i].config_id, b.v[j].config_id) == 0)
                fail_msg("run %ld: %s/%s leased to r1 and r2", run, a.v[i].task_id,
                         a.v[i].config_id);
    for (size_t i = 0; i < a.n; i++) {
        int r =
            ack(s, &a.v[i], "r1",
                strcmp(a.v[i].task_id, "t1") == 0 ? ONCE_PUSH_DELIVERED : ONCE_PUSH_RETRY, T0 + 20);
        if (r != ONCE_OK && !clean_error(r))
            fail_msg("run %ld: ack = %s", run, once_errname(r));
        if (r == ONCE_OK && strcmp(a.v[i].task_id, "t1") == 0 && a.v[i].generation == 1)
            acked = 1;
    }
    for (size_t j = 0; j < b.n; j++)
        OK_OR_CLEAN(ack(s, &b.v[j], "r2", ONCE_PUSH_DISABLE, T0 + 30));
    once_push_claim_list_clear(&a);
    once_push_claim_list_clear(&b);
    OK_OR_CLEAN(change(s, "t1", "[{\"id\":\"c\",\"since\":0},{\"id\":\"d\",\"since\":3}]", 0));
    OK_OR_CLEAN(change(s, "t2", NULL, 1));
    size_t n;
    OK_OR_CLEAN(once_store_sweep(s, T0 + 100, T0 + 100, 8, &n));
    once_push_row_list l;
    OK_OR_CLEAN(once_store_push_rows(s, "p", "t1", &l));
    once_push_row_list_clear(&l);
    return acked;
}

static void sweep(int code)
{
    char path[256], url[300];
    long run, faulted = 1;
    once__sqlite_fault_code(code);
    for (run = 1; faulted && run < 2000; run++) {
        assert_int_equal(st_tmp_path(path, sizeof path, "pushfault"), 0);
        /* No fsync: what a fault leaves does not depend on it, and the
         * sweep stays fast. */
        snprintf(url, sizeof url, "sqlite:%s?synchronous=off", path);
        once_store *s = NULL;
        long before = once__sqlite_faults();
        once__sqlite_fault_at(run);
        int acked = 0;
        if (once_store_open(url, NULL, &s, NULL, 0) == ONCE_OK) {
            acked = workload(s, run);
            once_store_close(s);
        }
        once__sqlite_fault_at(-1);
        faulted = once__sqlite_faults() > before;

        assert_int_equal(once_store_open(url, NULL, &s, NULL, 0), ONCE_OK);
        once_check_report rep;
        assert_int_equal(once_store_check(s, &rep), ONCE_OK);
        if (!st_clean(&rep) || rep.bad_push)
            fail_msg("run %ld: check after the fault: %s", run, rep.first_problem);
        once_push_row_list l;
        assert_int_equal(once_store_push_rows(s, "p", "t1", &l), ONCE_OK);
        if (acked) {
            int seen = 0;
            for (size_t i = 0; i < l.n; i++)
                if (strcmp(l.v[i].config_id, "c") == 0 && l.v[i].delivered >= 1)
                    seen = 1;
            if (!seen)
                fail_msg("run %ld: an acknowledged delivery was lost", run);
        }
        once_push_row_list_clear(&l);
        once_store_close(s);
        st_remove_db(path);
    }
    printf("push fault sweep: %ld runs\n", run - 1);
    assert_false(faulted); /* the sweep reached a fault-free run */
    assert_true(run > 20); /* and the workload made enough calls to matter */
}

static void sweep_ioerr(void **state)
{
    (void)state;
    sweep(SQLITE_IOERR);
}

static void sweep_busy(void **state)
{
    (void)state;
    sweep(SQLITE_BUSY);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sweep_ioerr),
        cmocka_unit_test(sweep_busy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
