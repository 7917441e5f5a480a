/*
 * test_store_mem_budget.c -- the memory store's budget (memory:?max=SIZE)
 * and its compact tombstones (memory:?tombs=compact).
 *
 * The write that needs room makes it, with no sweep at all: it expires
 * the oldest finished tasks before their retention into tombstones that
 * answer like retention's (ETOMBSTONE with expired_at), never a running
 * task, so every create leaves the store within its budget; when running
 * tasks and tombstones leave no room a new key is refused ONCE_EBUSY with
 * nothing expired in vain and every tombstone kept. A
 * compact tombstone answers its exact key only, and purge takes them by
 * time, costing what it removes. The store's check recounts the bytes the
 * budget counts, so every assert_clean also proves the counter exact; the
 * allocation-fault sweep runs the new paths with it. (The URL settings are
 * checked with the others in test_store_mem.c.)
 */
#include <stdarg.h>
#include <setjmp.h>
#include <stddef.h>
#include <cmocka.h>

#include "test_store_mem.h"

#define T0 1700000000000LL
#define PAD 2000   /* bytes of task text per task */

static once_store *open_url(const char *url)
{
    once_store *s = NULL;
    char err[256] = "";
    if (once_store_open(url, NULL, &s, err, sizeof err) != ONCE_OK)
        fail_msg("%s: %s", url, err);
    return s;
}

/* A task record with PAD bytes of text: finished at `finished` when st is
 * terminal. The caller clears it. */
static void mk(once_record *r, const char *principal, const char *id, once_state st,
               int64_t finished)
{
    char text[PAD + sizeof r->task_id + 32];
    snprintf(text, sizeof text, "{\"id\":\"%s\",\"pad\":\"%0*d\"}", id, PAD, 0);
    assert_int_equal(st_rec(r, principal, id, st, T0 - 100000, text), 0);
    if (once_state_terminal(st))
        r->finished_at = r->updated_at = finished;
}

static int put(once_store *s, const char *principal, const char *id, once_state st,
               int64_t finished)
{
    once_record r;
    mk(&r, principal, id, st, finished);
    int rc = once_store_create(s, &r, NULL, 0, NULL, NULL);
    once_record_clear(&r);
    return rc;
}

static int load_p(once_store *s, const char *principal, const char *id, once_tombstone *t)
{
    once_record r;
    int rc = once_store_load(s, principal, id, &r, t);
    once_record_clear(&r);
    return rc;
}

static once_budget budget(once_store *s)
{
    once_budget b;
    assert_int_equal(once_store_budget(s, &b, 1), ONCE_OK);
    return b;
}

/* Sweep with nothing past retention (finished_before T0 - 1000000) until a
 * batch comes back short; the count of what it expired. */
static size_t sweep_all(once_store *s, int64_t finished_before, int64_t now)
{
    size_t n, total = 0;
    do {
        assert_int_equal(once_store_sweep(s, finished_before, now, 64, &n), ONCE_OK);
        total += n;
    } while (n == 64);
    return total;
}

/* The bound, checked after every write. */
static void assert_within(once_store *s)
{
    once_budget b;
    assert_int_equal(once_store_budget(s, &b, 0), ONCE_OK);
    if (b.bytes > b.max_bytes)
        fail_msg("the store holds %zu bytes of a %zu-byte budget", b.bytes, b.max_bytes);
}

/* 1 MiB budget and no sweep at all (as if the sweeper were stopped): 1000
 * finished tasks of ~2 KiB, about twice the budget, each create checked
 * against the bound. The writes expire the oldest finished tasks into
 * tombstones that answer like retention's, entombed at the time of the
 * write that needed the room, and no more than needed; the newer ones and
 * every running task stay. */
static void test_writes_keep_the_bound(void **state)
{
    (void)state;
    once_store *s = open_url("memory:?max=1M&cold=off");
    char id[32];
    int i, kept = -1;

    for (i = 0; i < 10; i++) {   /* running, created before every finished one */
        snprintf(id, sizeof id, "run-%d", i);
        assert_int_equal(put(s, "p", id, ONCE_STATE_WORKING, 0), ONCE_OK);
    }
    for (i = 0; i < 1000; i++) {
        snprintf(id, sizeof id, "done-%04d", i);
        assert_int_equal(put(s, "p", id, ONCE_STATE_COMPLETED, T0 + i), ONCE_OK);
        assert_within(s);
    }
    once_budget b = budget(s);
    assert_true(b.early > 0);
    assert_int_equal(b.early_new, b.early);
    assert_int_equal(budget(s).early_new, 0);   /* told once */
    assert_true(b.bytes > b.max_bytes - 4 * (PAD + 512));   /* no more than needed */
    assert_int_equal(b.live, 1010 - b.early);
    assert_int_equal(b.tombs, b.early);
    for (i = 0; i < 1000; i++) {
        once_tombstone t;
        snprintf(id, sizeof id, "done-%04d", i);
        int rc = load_p(s, "p", id, &t);
        if (rc == ONCE_OK && kept < 0)
            kept = i;
        if (kept < 0) {   /* the oldest, up to the first one kept */
            assert_int_equal(rc, ONCE_ETOMBSTONE);
            assert_int_equal(t.finished_at, T0 + i);
            assert_true(t.expired_at > T0 + i && t.expired_at < T0 + 1000);
        } else {
            assert_int_equal(rc, ONCE_OK);
        }
    }
    assert_int_equal(kept, (int)b.early);
    assert_int_equal(b.early_last, T0 + kept - 1);
    for (i = 0; i < 10; i++) {
        snprintf(id, sizeof id, "run-%d", i);
        assert_int_equal(load_p(s, "p", id, NULL), ONCE_OK);
    }
    assert_clean(s);
    once_store_close(s);
}

/* Running tasks past the budget: every finished task is expired to make
 * room, not one running task; then a new task is refused ONCE_EBUSY,
 * named, with nothing stored and nothing more expired, while a key the
 * store holds still gets its answer. A running task that finishes is room
 * again. An update of an admitted task is never refused for room: it is
 * the one way past the budget. */
static void test_running_tasks_fill_the_budget(void **state)
{
    (void)state;
    once_store *s = open_url("memory:?max=1M&cold=off");
    char id[32];
    int i, made = 0, rc = ONCE_OK;

    for (i = 0; i < 100; i++) {
        snprintf(id, sizeof id, "done-%04d", i);
        assert_int_equal(put(s, "p", id, ONCE_STATE_COMPLETED, T0 + i), ONCE_OK);
    }
    for (i = 0; rc == ONCE_OK && i < 1000; i++) {
        snprintf(id, sizeof id, "run-%d", i);
        rc = put(s, "p", id, ONCE_STATE_WORKING, 0);
        made += rc == ONCE_OK;
        assert_within(s);
    }
    assert_int_equal(rc, ONCE_EBUSY);
    assert_non_null(strstr(once_store_errmsg(s), "memory store full"));
    assert_true(made > 300 && made < 600);
    for (i = 0; i < 100; i++) {
        snprintf(id, sizeof id, "done-%04d", i);
        assert_int_equal(load_p(s, "p", id, NULL), ONCE_ETOMBSTONE);
    }
    for (i = 0; i < made; i++) {
        snprintf(id, sizeof id, "run-%d", i);
        assert_int_equal(load_p(s, "p", id, NULL), ONCE_OK);
    }
    snprintf(id, sizeof id, "run-%d", made);
    assert_int_equal(load_p(s, "p", id, NULL), ONCE_ENOTFOUND);   /* nothing stored */
    once_budget b = budget(s);
    assert_int_equal(put(s, "p", "run-0", ONCE_STATE_WORKING, 0), ONCE_EEXISTS);
    assert_int_equal(put(s, "p", "new", ONCE_STATE_WORKING, 0), ONCE_EBUSY);
    assert_int_equal(budget(s).early, b.early);   /* refused without expiring anything */

    /* run-0 finishes: its room is the next task's. */
    once_record r;
    mk(&r, "p", "run-0", ONCE_STATE_COMPLETED, T0 + 500);
    r.version = 2;
    assert_int_equal(once_store_update(s, &r, 1, NULL, 0), ONCE_OK);
    once_record_clear(&r);
    assert_int_equal(put(s, "p", "new", ONCE_STATE_WORKING, 0), ONCE_OK);
    assert_within(s);
    assert_int_equal(load_p(s, "p", "run-0", NULL), ONCE_ETOMBSTONE);

    /* run-1 writes 8 KiB more with nothing finished left: taken, past the
     * budget; then new tasks are refused. */
    char big[8 * 1024 + 64];
    snprintf(big, sizeof big, "{\"pad\":\"%0*d\"}", 8 * 1024, 0);
    mk(&r, "p", "run-1", ONCE_STATE_WORKING, 0);
    assert_int_equal(st_set_json(&r, big), 0);
    r.version = 2;
    assert_int_equal(once_store_update(s, &r, 1, NULL, 0), ONCE_OK);
    once_record_clear(&r);
    assert_true(budget(s).bytes > budget(s).max_bytes);
    assert_int_equal(put(s, "p", "newer", ONCE_STATE_WORKING, 0), ONCE_EBUSY);
    assert_clean(s);
    once_store_close(s);
}

/* Without a budget nothing is expired early; over one, a sweep after
 * writes had to expire tasks deflates the finished tasks the store keeps
 * at once, not 2 s after they finished, and so the writes that follow
 * expire fewer than on a store that may not deflate. */
static void test_budget_deflates_what_it_keeps(void **state)
{
    (void)state;
    static const char *const urls[] = {"memory:?cold=off", "memory:?max=1M&cold=off",
                                       "memory:?max=1M"};
    size_t expired[3];
    char id[32];

    for (int u = 0; u < 3; u++) {
        once_store *s = open_url(urls[u]);
        for (int i = 0; i < 2000; i++) {
            snprintf(id, sizeof id, "done-%04d", i);
            assert_int_equal(put(s, "p", id, ONCE_STATE_COMPLETED, T0 + i), ONCE_OK);
            if (i % 100 == 99)   /* a sweep now and then; all finished < 2 s ago */
                for (int k = 0; k < 4; k++)
                    (void)sweep_all(s, T0 - 1000000, T0 + i + 1);
        }
        expired[u] = budget(s).early;
        if (u == 2)
            assert_true(once__mem_cools(s) > 0);
        assert_clean(s);
        once_store_close(s);
    }
    assert_int_equal(expired[0], 0);
    assert_true(expired[1] > 0);
    assert_true(expired[2] < expired[1]);
}

/* Tombstones that leave no room for a task (full ones and compact ones,
 * made by retention): a new key is refused ONCE_EBUSY, named; every
 * tombstone still answers; a key that exists still gets its answer; after
 * a purge new keys are taken again. Compact tombstones whose ring would
 * have to grow past the budget wait: retention holds the task back (it
 * still answers in full) rather than pass the budget. */
static void full_store_refuses(const char *url)
{
    once_store *s = open_url(url);
    char id[160];
    int i, made = 0, swept = 0, rc = ONCE_OK;

    for (i = 0; rc == ONCE_OK && i < 200000; i++) {
        /* long IDs: a full tombstone keeps the key's text */
        snprintf(id, sizeof id, "%0120d", i);
        rc = put(s, "p", id, ONCE_STATE_COMPLETED, T0 + i);
        if (rc == ONCE_OK) {
            size_t n;
            made++;
            assert_int_equal(once_store_sweep(s, T0 + i + 1, T0 + i, 8, &n), ONCE_OK);
            swept += (int)n;
            assert_true(swept == made || strstr(url, "compact"));   /* held back: the ring */
        }
    }
    assert_int_equal(rc, ONCE_EBUSY);
    assert_non_null(strstr(once_store_errmsg(s), "memory store full"));
    once_budget b = budget(s);   /* tombstones hold most of it; what they */
    assert_true(b.tomb_bytes >= b.max_bytes / 2);  /* leave is too little for a task */
    assert_true(b.bytes <= b.max_bytes);
    for (i = 0; i < made; i++) {
        once_tombstone t;
        snprintf(id, sizeof id, "%0120d", i);
        if (i >= swept) {   /* still held in full */
            assert_int_equal(load_p(s, "p", id, NULL), ONCE_OK);
            continue;
        }
        assert_int_equal(load_p(s, "p", id, &t), ONCE_ETOMBSTONE);
        assert_int_equal(t.expired_at, T0 + i);
    }
    snprintf(id, sizeof id, "%0120d", 0);
    assert_int_equal(put(s, "p", id, ONCE_STATE_COMPLETED, T0), ONCE_ETOMBSTONE);
    snprintf(id, sizeof id, "n%0119d", 0);   /* as large as the one refused */
    assert_int_equal(put(s, "p", id, ONCE_STATE_WORKING, 0), ONCE_EBUSY);
    assert_clean(s);

    size_t n = 0, got;
    do {   /* the oldest three quarters go at their time */
        assert_int_equal(once_store_purge(s, T0 + made * 3 / 4, 1000, &got), ONCE_OK);
        n += got;
    } while (got == 1000);
    assert_int_equal(n, (size_t)(made * 3 / 4 < swept ? made * 3 / 4 : swept));
    assert_int_equal(put(s, "p", id, ONCE_STATE_WORKING, 0), ONCE_OK);
    assert_clean(s);
    once_store_close(s);
}

static void test_tombstone_full_store_refuses(void **state)
{
    (void)state;
    full_store_refuses("memory:?max=256K");
    full_store_refuses("memory:?max=256K&tombs=compact");
}

/* A compact tombstone answers its exact key: not a near key, not another
 * principal's same ID, not a split of the same bytes between the two. */
static void test_compact_tombstone_exact_key(void **state)
{
    (void)state;
    once_store *s = open_url("memory:?tombs=compact");
    once_tombstone t;
    size_t n;

    assert_int_equal(put(s, "p", "t1", ONCE_STATE_COMPLETED, T0), ONCE_OK);
    assert_int_equal(put(s, "p", "t2", ONCE_STATE_WORKING, 0), ONCE_OK);
    assert_int_equal(once_store_sweep(s, T0 + 1, T0 + 7, 10, &n), ONCE_OK);
    assert_int_equal(n, 1);

    assert_int_equal(load_p(s, "p", "t1", &t), ONCE_ETOMBSTONE);
    assert_string_equal(t.principal, "p");
    assert_string_equal(t.task_id, "t1");
    assert_int_equal(t.finished_at, 0);   /* not kept */
    assert_int_equal(t.expired_at, T0 + 7);
    assert_int_equal(load_p(s, "p", "t2", NULL), ONCE_OK);
    static const char *const near[][2] = {{"p", "t1x"}, {"p", "t"}, {"p", "T1"},
                                          {"q", "t1"},  {"pt", "1"}, {"p", "t10"}};
    for (size_t i = 0; i < sizeof near / sizeof near[0]; i++)
        assert_int_equal(load_p(s, near[i][0], near[i][1], NULL), ONCE_ENOTFOUND);

    /* create: the tombstone answers, the near keys are new */
    once_record r;
    mk(&r, "p", "t1", ONCE_STATE_WORKING, 0);
    memset(&t, 0, sizeof t);
    assert_int_equal(once_store_create(s, &r, NULL, 0, NULL, &t), ONCE_ETOMBSTONE);
    assert_int_equal(t.expired_at, T0 + 7);
    r.version = 2;
    assert_int_equal(once_store_update(s, &r, 1, NULL, 0), ONCE_ECONFLICT);
    once_record_clear(&r);
    assert_int_equal(put(s, "q", "t1", ONCE_STATE_WORKING, 0), ONCE_OK);
    assert_int_equal(put(s, "p", "t1x", ONCE_STATE_WORKING, 0), ONCE_OK);

    once_check_report rep;
    assert_int_equal(once_store_check(s, &rep), ONCE_OK);
    assert_int_equal(rep.tombstones, 1);
    assert_clean(s);
    once_store_close(s);
}

/* Compact tombstones purged by time, from the front: ten groups of 50
 * expired ten apart, purged two groups at a time as they come, so that
 * the ring wraps before it grows; a purge looks at what it removes and
 * the one that stops it, and stops at its time. */
static void test_compact_purge_by_time(void **state)
{
    (void)state;
    once_store *s = open_url("memory:?tombs=compact");
    char id[32];
    size_t n;
    int g, i;

    for (g = 0; g < 10; g++) {
        for (i = 0; i < 50; i++) {
            snprintf(id, sizeof id, "g%d-%d", g, i);
            assert_int_equal(put(s, "p", id, ONCE_STATE_COMPLETED, T0 + g), ONCE_OK);
        }
        assert_int_equal(once_store_sweep(s, T0 + g + 1, T0 + 100 + 10 * g, 100, &n), ONCE_OK);
        assert_int_equal(n, 50);
        if (g % 2 == 1) {   /* up to the group before this one */
            uint64_t v0 = once__mem_visits(s);
            assert_int_equal(once_store_purge(s, T0 + 100 + 10 * (g - 1) + 1, 1000, &n),
                             ONCE_OK);
            assert_int_equal(n, g == 1 ? 50 : 100);
            assert_true(once__mem_visits(s) - v0 <= n + 1);
        }
        assert_clean(s);
    }
    for (g = 0; g < 10; g++) {
        for (i = 0; i < 50; i++) {
            snprintf(id, sizeof id, "g%d-%d", g, i);
            assert_int_equal(load_p(s, "p", id, NULL), g < 9 ? ONCE_ENOTFOUND : ONCE_ETOMBSTONE);
        }
    }
    uint64_t v0 = once__mem_visits(s);
    assert_int_equal(once_store_purge(s, T0 + 190, 1000, &n), ONCE_OK);   /* expired at 190 */
    assert_int_equal(n, 0);
    assert_true(once__mem_visits(s) - v0 <= 1);
    assert_int_equal(once_store_purge(s, T0 + 191, 1000, &n), ONCE_OK);
    assert_int_equal(n, 50);
    assert_int_equal(load_p(s, "p", "g9-0", NULL), ONCE_ENOTFOUND);
    assert_clean(s);
    once_store_close(s);
}

/* One run with allocation i failing, on a store with a budget of 64 KiB
 * and compact tombstones: finished tasks past the budget, a running one,
 * sweeps that expire early, deflate and entomb, a purge, the readers. */
static int fault_run(long i)
{
    once_store *s = open_url("memory:?max=64K&tombs=compact&cold=off");
    once_record r[40];
    char id[32];
    size_t n;
    int k, running = 0;

    for (k = 0; k < 40; k++) {   /* built before injection: only the store's allocations count */
        snprintf(id, sizeof id, "t%d", k);
        mk(&r[k], "p", id, k == 0 ? ONCE_STATE_WORKING : ONCE_STATE_COMPLETED, T0 + k);
    }
    once__alloc_fail_after(i);
    for (k = 0; k < 40; k++) {
        int rc = once_store_create(s, &r[k], NULL, 0, NULL, NULL);
        ok_or_oom(rc, ONCE_OK);
        running += k == 0 && rc == ONCE_OK;
    }
    ok_or_oom(once_store_sweep(s, T0 + 5, T0 + 100, 100, &n), ONCE_OK);
    ok_or_oom(once_store_sweep(s, T0 + 5, T0 + 101, 100, &n), ONCE_OK);
    int got = load_p(s, "p", "t39", NULL);   /* created or not, expired early or not */
    ok_or_oom(got == ONCE_ENOTFOUND || got == ONCE_ETOMBSTONE ? ONCE_OK : got, ONCE_OK);
    ok_or_oom(once_store_purge(s, T0 + 101, 10, &n), ONCE_OK);
    long used = once__alloc_count();
    once__alloc_fail_after(-1);
    for (k = 0; k < 40; k++)
        once_record_clear(&r[k]);

    /* Whole, and a sweep without faults gets it under the budget with the
     * running task (if its create got through) kept. */
    assert_clean(s);
    sweep_all(s, T0 + 5, T0 + 102);
    once_budget b = budget(s);
    assert_true(b.bytes <= b.max_bytes);
    assert_int_equal(load_p(s, "p", "t0", NULL), running ? ONCE_OK : ONCE_ENOTFOUND);
    assert_clean(s);
    once_store_close(s);
    return used <= i;
}

static void test_allocation_faults(void **state)
{
    (void)state;
    fault_sweep(fault_run, 20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writes_keep_the_bound),
        cmocka_unit_test(test_running_tasks_fill_the_budget),
        cmocka_unit_test(test_budget_deflates_what_it_keeps),
        cmocka_unit_test(test_tombstone_full_store_refuses),
        cmocka_unit_test(test_compact_tombstone_exact_key),
        cmocka_unit_test(test_compact_purge_by_time),
        cmocka_unit_test(test_allocation_faults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
