/*
 * test_store_mem.c -- the memory store's retention costs what it removes.
 *
 * A store holding many finished tasks, a few running ones and many
 * tombstones: sweep, purge and expired_leases look at the entries they
 * act on (plus the one that stops them), never at the whole table, counted
 * by once__mem_visits. And the queues that make that possible keep their
 * order when tasks finish out of order, when a clock goes back, and when an
 * update turns a running task into a finished one: exactly the entries the
 * contract names are swept and purged, and the store's own check (which
 * checks the queues against the table) stays clean. Last, an allocation
 * fault sweep over the slots that pack, grow, compact and entomb.
 */
#include <stdarg.h>
#include <setjmp.h>
#include <stddef.h>
#include <cmocka.h>

#include "test_store_mem.h"

#define T0 1700000000000LL
#define FINISHED 4000
#define RUNNING 40

/* A record created in state st; terminal ones finished at `finished`,
 * running ones leased until `lease_until`. */
static void put(once_store *s, const char *id, once_state st, int64_t finished, int64_t lease_until)
{
    once_record r;
    assert_int_equal(st_rec(&r, "p", id, st, T0 - 1000000, "{\"id\":\"x\"}"), 0);
    if (once_state_terminal(st))
        r.finished_at = finished;
    if (lease_until) {
        snprintf(r.lease_owner, sizeof r.lease_owner, "replica-a");
        r.lease_until = lease_until;
    }
    assert_int_equal(once_store_create(s, &r, NULL, 0, NULL, NULL), ONCE_OK);
    once_record_clear(&r);
}

static int load_rc(once_store *s, const char *id)
{
    once_record r;
    int rc = once_store_load(s, "p", id, &r, NULL);
    once_record_clear(&r);
    return rc;
}

static void test_retention_cost_is_what_it_removes(void **state)
{
    (void)state;
    once_store *s = open_mem();
    char id[32];
    size_t n;
    int i;

    for (i = 0; i < FINISHED; i++) {
        snprintf(id, sizeof id, "done-%d", i);
        put(s, id, ONCE_STATE_COMPLETED, T0 + i, 0);
    }
    for (i = 0; i < RUNNING; i++) {   /* half of the leases have run out at T0 */
        snprintf(id, sizeof id, "run-%d", i);
        put(s, id, ONCE_STATE_WORKING, 0, i % 2 ? T0 - 10 : T0 + 1000000);
    }

    /* Sweep 100 of 4000 finished: 100 looks, and one at the entry that stops it. */
    uint64_t v0 = once__mem_visits(s);
    assert_int_equal(once_store_sweep(s, T0 + 100, T0 + 5000, 256, &n), ONCE_OK);
    assert_int_equal(n, 100);
    assert_true(once__mem_visits(s) - v0 <= 101);

    /* Nothing more is due: one look. */
    v0 = once__mem_visits(s);
    assert_int_equal(once_store_sweep(s, T0 + 100, T0 + 5000, 256, &n), ONCE_OK);
    assert_int_equal(n, 0);
    assert_true(once__mem_visits(s) - v0 <= 1);

    /* A batch stops at max without looking further. */
    v0 = once__mem_visits(s);
    assert_int_equal(once_store_sweep(s, T0 + 3000, T0 + 6000, 50, &n), ONCE_OK);
    assert_int_equal(n, 50);
    assert_true(once__mem_visits(s) - v0 <= 50);

    /* Purge: the 100 tombstones of T0 + 5000 and not the 50 of T0 + 6000. */
    v0 = once__mem_visits(s);
    assert_int_equal(once_store_purge(s, T0 + 5001, 64, &n), ONCE_OK);
    assert_int_equal(n, 64);
    assert_int_equal(once_store_purge(s, T0 + 5001, 64, &n), ONCE_OK);
    assert_int_equal(n, 36);
    assert_true(once__mem_visits(s) - v0 <= 64 + 37);

    /* Leases: only the running tasks are looked at, not the 3850 finished. */
    once_key_list keys;
    v0 = once__mem_visits(s);
    assert_int_equal(once_store_expired_leases(s, T0, 1000, &keys), ONCE_OK);
    assert_int_equal(keys.n, RUNNING / 2);
    assert_true(once__mem_visits(s) - v0 <= RUNNING);
    once_key_list_clear(&keys);

    assert_int_equal(load_rc(s, "done-99"), ONCE_ENOTFOUND);     /* purged */
    assert_int_equal(load_rc(s, "done-100"), ONCE_ETOMBSTONE);   /* swept at T0 + 6000 */
    assert_int_equal(load_rc(s, "done-150"), ONCE_OK);
    assert_clean(s);
    once_store_close(s);
}

/* Tasks finishing out of order, an update that finishes a running task, a
 * clock that goes back between sweeps: the queues stay ordered, and sweep
 * and purge take exactly what their cutoffs name. */
static void test_queues_keep_their_order(void **state)
{
    (void)state;
    once_store *s = open_mem();
    static const int64_t at[] = {50, 10, 40, 10, 30, 20, 60, 5};
    char id[32];
    size_t n, i;

    for (i = 0; i < sizeof at / sizeof at[0]; i++) {
        snprintf(id, sizeof id, "t%zu", i);
        put(s, id, ONCE_STATE_COMPLETED, T0 + at[i], 0);
    }
    put(s, "late", ONCE_STATE_WORKING, 0, T0 + 100);
    once_record r;
    assert_int_equal(once_store_load(s, "p", "late", &r, NULL), ONCE_OK);
    r.state = ONCE_STATE_FAILED;
    r.finished_at = T0 + 15;   /* finishes now, but earlier than most */
    r.version++;
    r.lease_owner[0] = '\0';
    r.lease_until = 0;
    assert_int_equal(once_store_update(s, &r, r.version - 1, NULL, 0), ONCE_OK);
    once_record_clear(&r);
    assert_clean(s);

    /* finished_at < T0 + 25: t1, t3, t5, t7 and late; swept at T0 + 900. */
    assert_int_equal(once_store_sweep(s, T0 + 25, T0 + 900, 100, &n), ONCE_OK);
    assert_int_equal(n, 5);
    /* The clock went back: these tombstones are older than the first ones. */
    assert_int_equal(once_store_sweep(s, T0 + 45, T0 + 700, 100, &n), ONCE_OK);
    assert_int_equal(n, 2);   /* t2 (40), t4 (30) */
    /* And forward again, between the two: t0's tombstone goes in the middle. */
    assert_int_equal(once_store_sweep(s, T0 + 55, T0 + 800, 100, &n), ONCE_OK);
    assert_int_equal(n, 1);   /* t0 (50) */
    assert_clean(s);
    assert_int_equal(load_rc(s, "t6"), ONCE_OK);

    once_tombstone t;
    assert_int_equal(once_store_load(s, "p", "late", &r, &t), ONCE_ETOMBSTONE);
    assert_int_equal(t.finished_at, T0 + 15);
    assert_int_equal(t.expired_at, T0 + 900);
    char hex[ONCE_DIGEST_HEX + 1];
    st_hex(hex, 'a');
    assert_string_equal(t.first_digest, hex);

    /* Purge before T0 + 800 takes the two of T0 + 700 only (strict <). */
    assert_int_equal(once_store_purge(s, T0 + 800, 100, &n), ONCE_OK);
    assert_int_equal(n, 2);
    assert_int_equal(load_rc(s, "t2"), ONCE_ENOTFOUND);
    assert_int_equal(load_rc(s, "t4"), ONCE_ENOTFOUND);
    assert_int_equal(load_rc(s, "t1"), ONCE_ETOMBSTONE);
    assert_int_equal(load_rc(s, "t0"), ONCE_ETOMBSTONE);
    assert_int_equal(once_store_purge(s, T0 + 901, 100, &n), ONCE_OK);
    assert_int_equal(n, 6);
    assert_clean(s);
    once_store_close(s);
}

/* One run with allocation i failing: a task created running with an event,
 * finished by an update with two more, a second task finished at create,
 * then sweep, purge and the readers. Returns 1 when no fault was hit. */
static int fault_run(long i)
{
    once_store *s = open_mem();
    once_record r, r2, got;
    st_events ev, ev2;
    once_key_list keys;
    once_event_list evl;
    size_t n;

    put(s, "kept", ONCE_STATE_COMPLETED, T0 + 500, 0);   /* outside the cutoffs */
    /* Built before injection starts: only the store's allocations count. */
    assert_int_equal(st_rec(&r, "p", "f1", ONCE_STATE_WORKING, T0, NULL), 0);
    assert_int_equal(st_rec(&r2, "p", "f2", ONCE_STATE_FAILED, T0, NULL), 0);
    r.generation = 1;
    st_mkev(&ev, 1, 1, "a");
    st_mkev(&ev2, 2, 2, "b");
    once__alloc_fail_after(i);
    int created = once_store_create(s, &r, ev.ev, 1, NULL, NULL);
    ok_or_oom(created, ONCE_OK);
    if (created == ONCE_OK) {
        r.version = 2;
        r.generation = 3;
        r.state = ONCE_STATE_COMPLETED;
        r.finished_at = T0 + 10;
        ok_or_oom(once_store_update(s, &r, 1, ev2.ev, 2), ONCE_OK);
    }
    ok_or_oom(once_store_create(s, &r2, NULL, 0, NULL, NULL), ONCE_OK);
    ok_or_oom(once_store_sweep(s, T0 + 100, T0 + 200, 10, &n), ONCE_OK);
    ok_or_oom(once_store_load(s, "p", "kept", &got, NULL), ONCE_OK);
    once_record_clear(&got);
    ok_or_oom(once_store_events(s, "p", "kept", 0, 0, &evl), ONCE_OK);
    once_event_list_clear(&evl);
    ok_or_oom(once_store_expired_leases(s, T0 + 1000000, 10, &keys), ONCE_OK);
    once_key_list_clear(&keys);
    ok_or_oom(once_store_purge(s, T0 + 150, 10, &n), ONCE_OK);   /* before the sweep's now */
    long used = once__alloc_count();
    once__alloc_fail_after(-1);
    once_record_clear(&r);
    once_record_clear(&r2);

    /* Whole: the check is clean, and a sweep and purge without faults
     * finish what the faults interrupted. */
    assert_clean(s);
    assert_int_equal(once_store_sweep(s, T0 + 100, T0 + 200, 10, &n), ONCE_OK);
    assert_int_equal(once_store_purge(s, T0 + 201, 10, &n), ONCE_OK);
    assert_int_equal(load_rc(s, "f2"), ONCE_ENOTFOUND);
    assert_int_equal(load_rc(s, "kept"), ONCE_OK);
    assert_clean(s);
    once_store_close(s);
    return used <= i;
}

/* Every call made under fault injection ends in its normal answer or
 * ONCE_ENOMEM (nothing else), and afterwards the store is whole. */
static void test_allocation_faults(void **state)
{
    (void)state;
    fault_sweep(fault_run, 5);
}

/* memory:?cold=MS|off, max=SIZE|off and tombs=full|compact are read;
 * anything else, and any text between "memory:" and '?', is refused,
 * named. */
static void test_url_settings(void **state)
{
    (void)state;
    static const char *const good[] = {
        "memory:",         "memory:?cold=off", "memory:?cold=0",  "memory:?cold=60000",
        "memory:?max=64M", "memory:?max=65536", "memory:?max=1g", "memory:?max=off",
        "memory:?tombs=compact&max=512K&cold=off", "memory:?tombs=FULL"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        once_store *s = NULL;
        assert_int_equal(once_store_open(good[i], NULL, &s, NULL, 0), ONCE_OK);
        once_store_close(s);
    }
    static const char *const bad[] = {
        "memory:?cold=soon", "memory:?colder=1",  "memory:?cold=-1",   "memory:?max=64X",
        "memory:?max=1K",    "memory:?max=",      "memory:?max=-1M",   "memory:?max=2000G",
        "memory:?tombs=small"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        once_store *s = NULL;
        char err[256] = "";
        assert_int_equal(once_store_open(bad[i], NULL, &s, err, sizeof err), ONCE_EINVAL);
        assert_null(s);
        assert_non_null(strstr(err, "cold=MILLISECONDS|off, max=SIZE[K|M|G]|off"));
    }
    /* Text between "memory:" and '?' was once ignored: "memory:max=1G" (a
     * '?' forgotten) opened a store without a budget. Refused, named. */
    static const char *const label[][2] = {
        {"memory:junk", "junk"}, {"memory:max=1G", "max=1G"}, {"memory:x?cold=off", "x"}};
    for (size_t i = 0; i < sizeof label / sizeof label[0]; i++) {
        once_store *s = NULL;
        char err[256] = "";
        assert_int_equal(once_store_open(label[i][0], NULL, &s, err, sizeof err), ONCE_EINVAL);
        assert_null(s);
        assert_non_null(strstr(err, label[i][1]));
    }
    /* An unknown parameter names itself. */
    once_store *s = NULL;
    char err[256] = "";
    assert_int_equal(once_store_open("memory:?junk=1", NULL, &s, err, sizeof err), ONCE_EINVAL);
    assert_non_null(strstr(err, "parameter junk"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retention_cost_is_what_it_removes),
        cmocka_unit_test(test_queues_keep_their_order),
        cmocka_unit_test(test_allocation_faults),
        cmocka_unit_test(test_url_settings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
