/*
 * group_commit.c -- the sqlite backend's group commit under 32 writer
 * threads (sqlite_commit.c):
 *   - batching: 32 x 200 creates finish with fewer COMMITs than writes, and
 *     every one of the 6400 records (and its event) is stored;
 *   - same_key_races: ops on one key inside one batch are isolated by their
 *     savepoints: exactly one create per key wins, every loser gets EEXISTS
 *     with the winner's record;
 *   - fault_in_batch: a failed sqlite call in the middle of concurrent
 *     batches fails only ops that are not acknowledged; every acknowledged
 *     create is stored and the file passes check();
 *   - the same three with every other create started without waiting
 *     (once_store_create_start) among the waiting ones: each lands exactly once,
 *     with the outcome a waiting create would have had.
 * Threads only record results; assertions run on the main thread.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "store/sqlite_fault.h"
#include "store/sqlite_int.h" /* SQ_BATCH_MAX */
#include "store/util.h"
#include "timeout.h"

#define NTHREADS 32
#define PER_THREAD 200
#define SHARED_KEYS 50
#define T0 INT64_C(1700000000000)

/* A create started without waiting: what it holds until it lands. */
typedef struct started {
    struct run *r;
    int i;
    once_record rec;
    char ev[64];
    once_event e;
} started;

typedef struct run {
    once_store *s;
    int thread;
    int n;                      /* creates to issue */
    int shared;                 /* 1: every thread creates the same keys */
    int round;                  /* key prefix, so rounds on one file never collide */
    int mixed;                  /* 1: every other create is started, not waited for */
    int rc[PER_THREAD];
    char winner[PER_THREAD][64];/* shared: EEXISTS winner's task_json */
    started st[PER_THREAD];
    atomic_int landings[PER_THREAD];
} run;

static pthread_barrier_t start;
static atomic_long landed_total;

static void landed(void *arg, int rc)
{
    started *a = arg;
    a->r->rc[a->i] = rc;
    atomic_fetch_add(&a->r->landings[a->i], 1);
    atomic_fetch_add(&landed_total, 1);
}

static void key_of(const run *r, int i, char *id, size_t n)
{
    if (r->shared)
        snprintf(id, n, "k%d", i);
    else
        snprintf(id, n, "r%d-g%d-%d", r->round, r->thread, i);
}

static void *writer(void *arg)
{
    run *r = arg;
    pthread_barrier_wait(&start);
    for (int i = 0; i < r->n; i++) {
        char id[32], json[64], ev[64];
        once_record rec, win;
        key_of(r, i, id, sizeof id);
        snprintf(json, sizeof json, "{\"by\":%d,\"i\":%d}", r->thread, i);
        snprintf(ev, sizeof ev, "{\"ev\":\"%s\"}", id);
        if (st_rec(&rec, "p", id, ONCE_STATE_WORKING, T0 + i, json) != 0) {
            r->rc[i] = ONCE_ENOMEM;
            continue;
        }
        rec.generation = 1;
        if (r->mixed && i % 2 == 0) {
            started *a = &r->st[i];
            a->r = r;
            a->i = i;
            a->rec = rec;   /* held until it lands; cleared by run_all */
            snprintf(a->ev, sizeof a->ev, "%s", ev);
            a->e = (once_event){1, a->ev};
            int rc = once_store_create_start(r->s, &a->rec, &a->e, 1, landed, a);
            if (rc != ONCE_OK) {
                r->rc[i] = rc;
                atomic_fetch_add(&r->landings[i], 1);
                atomic_fetch_add(&landed_total, 1);
            }
            continue;
        }
        once_event e = {1, ev};
        r->rc[i] = once_store_create(r->s, &rec, &e, 1, &win, NULL);
        if (r->rc[i] == ONCE_EEXISTS && win.task_json)
            snprintf(r->winner[i], sizeof r->winner[i], "%s", win.task_json);
        once_record_clear(&win);
        once_record_clear(&rec);
    }
    return NULL;
}

static run runs[NTHREADS];
static int mixed;   /* the test runs with started creates among the waiting ones */

static int all_landed(void *arg)
{
    return atomic_load(&landed_total) == *(long *)arg;
}

static void run_all(once_store *s, int n, int shared, int round)
{
    pthread_t th[NTHREADS];
    memset(runs, 0, sizeof runs);
    atomic_store(&landed_total, 0);
    assert_int_equal(pthread_barrier_init(&start, NULL, NTHREADS), 0);
    for (int t = 0; t < NTHREADS; t++) {
        runs[t] = (run){.s = s, .thread = t, .n = n, .shared = shared, .round = round,
                        .mixed = mixed};
        assert_int_equal(pthread_create(&th[t], NULL, writer, &runs[t]), 0);
    }
    for (int t = 0; t < NTHREADS; t++)
        pthread_join(th[t], NULL);
    pthread_barrier_destroy(&start);
    if (!mixed)
        return;
    long want = (long)NTHREADS * ((n + 1) / 2);
    assert_true(tt_wait_until(all_landed, &want, 30000));
    for (int t = 0; t < NTHREADS; t++)
        for (int i = 0; i < n; i += 2) {
            assert_int_equal(atomic_load(&runs[t].landings[i]), 1);
            once_record_clear(&runs[t].st[i].rec);
        }
}

typedef struct fx {
    char path[4096];
    once_store *s;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    char url[4200], err[256];
    if (!f || st_tmp_path(f->path, sizeof f->path, "gc") != 0)
        return -1;
    snprintf(url, sizeof url, "sqlite:%s", f->path);
    if (once_store_open(url, NULL, &f->s, err, sizeof err) != ONCE_OK) {
        fprintf(stderr, "open: %s\n", err);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    once__sqlite_fault_at(-1);
    once_store_close(f->s);
    st_remove_db(f->path);
    free(f);
    return 0;
}

static void assert_clean(once_store *s, size_t records)
{
    once_check_report rep;
    assert_int_equal(once_store_check(s, &rep), ONCE_OK);
    if (!st_clean(&rep))
        fail_msg("check: %s", rep.first_problem);
    assert_int_equal(rep.records, records);
    assert_int_equal(rep.events, records);
}

static void batching(void **state)
{
    fx *f = *state;
    long c0 = once__sqlite_commits(), o0 = once__sqlite_committed_ops();
    run_all(f->s, PER_THREAD, 0, 0);
    long commits = once__sqlite_commits() - c0, ops = once__sqlite_committed_ops() - o0;
    const long writes = NTHREADS * PER_THREAD;

    for (int t = 0; t < NTHREADS; t++)
        for (int i = 0; i < PER_THREAD; i++)
            if (runs[t].rc[i] != ONCE_OK)
                fail_msg("thread %d create %d: %s", t, i, once_errname(runs[t].rc[i]));
    fprintf(stderr, "group commit: %ld writes in %ld commits (%.1f per commit)\n", writes,
            commits, commits ? (double)ops / (double)commits : 0.0);
    assert_int_equal(ops, writes);
    assert_true(commits < writes);

    assert_clean(f->s, (size_t)writes);
    for (int t = 0; t < NTHREADS; t++)
        for (int i = 0; i < PER_THREAD; i++) {
            char id[48];
            once_record r;
            key_of(&runs[t], i, id, sizeof id);
            assert_int_equal(once_store_load(f->s, "p", id, &r, NULL), ONCE_OK);
            assert_int_equal(r.created_at, T0 + i);
            once_record_clear(&r);
        }
}

static void same_key_races(void **state)
{
    fx *f = *state;
    run_all(f->s, SHARED_KEYS, 1, 0);
    for (int i = 0; i < SHARED_KEYS; i++) {
        char id[48];
        once_record r;
        int wins = 0;
        key_of(&runs[0], i, id, sizeof id);
        assert_int_equal(once_store_load(f->s, "p", id, &r, NULL), ONCE_OK);
        for (int t = 0; t < NTHREADS; t++) {
            if (runs[t].rc[i] == ONCE_OK) {
                char json[64];
                snprintf(json, sizeof json, "{\"by\":%d,\"i\":%d}", t, i);
                assert_string_equal(r.task_json, json);   /* the winner is what is stored */
                wins++;
            } else {
                assert_int_equal(runs[t].rc[i], ONCE_EEXISTS);
                if (!(mixed && i % 2 == 0))   /* a started create has no winner output */
                    assert_string_equal(runs[t].winner[i], r.task_json);
            }
        }
        assert_int_equal(wins, 1);
        once_record_clear(&r);
    }
    assert_clean(f->s, SHARED_KEYS);
}

/* Rounds of 32 x 50 creates, each with one fault armed at a different
 * call: depending on where it lands it fails one op (one that had changed
 * no row yet, or one rolled back to its savepoint), or a whole batch
 * (BEGIN, SAVEPOINT, RELEASE, COMMIT), or none: a fault after an op's first
 * change makes its batch run again, each op in its own savepoint, and the
 * fault is spent. Whatever it did, no acknowledged write is lost. */
static void fault_in_batch(void **state)
{
    fx *f = *state;
    const int n = 50, rounds = 8;
    int acked = 0, failed = 0;
    long reran_total = 0;
    size_t stored = 0;

    once__sqlite_fault_code(SQLITE_IOERR);
    for (int round = 1; round <= rounds; round++) {
        long faults0 = once__sqlite_faults(), reruns0 = once__sqlite_reruns();
        once__sqlite_fault_at(300 + 397 * round);   /* inside the round's ~30k calls */
        run_all(f->s, n, 0, round);
        once__sqlite_fault_at(-1);
        assert_int_equal(once__sqlite_faults() - faults0, 1);
        int round_failed = 0;
        for (int t = 0; t < NTHREADS; t++)
            for (int i = 0; i < n; i++) {
                char id[48];
                once_record r;
                key_of(&runs[t], i, id, sizeof id);
                int rc = once_store_load(f->s, "p", id, &r, NULL);
                assert_true(rc == ONCE_OK || rc == ONCE_ENOTFOUND);
                stored += rc == ONCE_OK;
                if (runs[t].rc[i] == ONCE_OK) {
                    acked++;
                    assert_int_equal(rc, ONCE_OK);   /* no acknowledged write lost */
                } else {
                    assert_int_equal(runs[t].rc[i], ONCE_ESTORE);
                    round_failed++;
                }
                once_record_clear(&r);
            }
        long reran = once__sqlite_reruns() - reruns0;
        assert_true(reran <= 1);
        /* A batch of waiting writers holds one op per thread at the most;
         * started creates do not wait, so a thread may have many in one
         * batch (the batch's own cap, SQ_BATCH_MAX, then bounds it). */
        const int batch_max = mixed ? SQ_BATCH_MAX : NTHREADS;
        if (reran == 0)   /* one op or one batch */
            assert_in_range(round_failed, 1, batch_max);
        else              /* the rerun's savepoints, then maybe a batch */
            assert_in_range(round_failed, 0, batch_max);
        failed += round_failed;
        reran_total += reran;
    }
    fprintf(stderr, "fault in batch: %d acknowledged, %d failed, %ld batches run again\n", acked,
            failed, reran_total);
    assert_clean(f->s, stored);
}

static void batching_mixed(void **state)
{
    mixed = 1;
    batching(state);
    mixed = 0;
}

static void same_key_races_mixed(void **state)
{
    mixed = 1;
    same_key_races(state);
    mixed = 0;
}

static void fault_in_batch_mixed(void **state)
{
    mixed = 1;
    fault_in_batch(state);
    mixed = 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(batching, setup, teardown),
        cmocka_unit_test_setup_teardown(same_key_races, setup, teardown),
        cmocka_unit_test_setup_teardown(fault_in_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(batching_mixed, setup, teardown),
        cmocka_unit_test_setup_teardown(same_key_races_mixed, setup, teardown),
        cmocka_unit_test_setup_teardown(fault_in_batch_mixed, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
