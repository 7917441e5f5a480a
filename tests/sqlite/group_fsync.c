/*
 * group_fsync.c -- the sqlite backend's leader/follower group commit
 * (sqlite_commit.c) around the fsync of a commit, made deterministic by
 * the shim's sync gate (vfs_shim.h): a first writer (the leader) is held
 * inside its COMMIT's fsync while NFOLLOW more writers queue behind it,
 * one of them on a key that already exists.
 *   - own_outcomes: the queued writers are committed as one batch (one
 *     more COMMIT), none is answered before that batch's fsync returned,
 *     and each gets its own outcome: EEXISTS with the stored record for
 *     the conflicting one, ONCE_OK for the rest;
 *   - failed_fsync: the batch's fsync fails: every writer in it gets
 *     ONCE_ESTORE (the conflicting one too: its verdict came from a
 *     transaction that never committed), none of their records is there
 *     afterwards, the leader's is, and the store goes on writing.
 * The same two with the followers' creates started without waiting
 * (once_store_create_start, what a held new task of the engine uses): none
 * lands before its batch's fsync returned, each lands once with its own
 * outcome, and on the thread that committed it, never the one that started
 * it (it may be an HTTP thread).
 * "Not answered yet" is asserted only while a sync is known to wait in the
 * gate; every wait is for a condition, bounded by tt_ms().
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sqlite/vfs_shim.h"
#include "store/sqlite_fault.h"
#include "store/util.h"
#include "timeout.h"

#define NFOLLOW 8
#define CONFLICT 3            /* the follower that creates DUP_ID */
#define DUP_ID "dup"
#define DUP_JSON "{\"by\":\"setup\"}"
#define T0 INT64_C(1700000000000)
#define WAIT_MS 10000

/* One create on its own thread, or started without waiting (async); the
 * main thread reads rc and winner only after join (or done, async), done at
 * any time. */
typedef struct writer {
    once_store *s;
    char id[32];
    char json[48];
    int rc;
    char winner[64];           /* EEXISTS: the stored record's task_json */
    atomic_int done;
    pthread_t th;
    int async;
    once_record rec;           /* async: what the create holds until it lands */
    once_event ev;
    atomic_int landings;       /* async: how many times it landed */
    pthread_t landed_on;
} writer;

static int create(once_store *s, const char *id, const char *json, once_record *winner)
{
    once_record rec;
    if (st_rec(&rec, "p", id, ONCE_STATE_WORKING, T0, json) != 0)
        return ONCE_ENOMEM;
    rec.generation = 1;
    once_event e = {1, "{\"ev\":1}"};
    int rc = once_store_create(s, &rec, &e, 1, winner, NULL);
    once_record_clear(&rec);
    return rc;
}

static void *write_one(void *arg)
{
    writer *w = arg;
    once_record win;
    memset(&win, 0, sizeof win);
    w->rc = create(w->s, w->id, w->json, &win);
    if (w->rc == ONCE_EEXISTS && win.task_json)
        snprintf(w->winner, sizeof w->winner, "%s", win.task_json);
    once_record_clear(&win);
    atomic_store(&w->done, 1);
    return NULL;
}

static void start(writer *w, once_store *s, const char *id, const char *json)
{
    memset(w, 0, sizeof *w);
    w->s = s;
    snprintf(w->id, sizeof w->id, "%s", id);
    snprintf(w->json, sizeof w->json, "%s", json);
    atomic_init(&w->done, 0);
    assert_int_equal(pthread_create(&w->th, NULL, write_one, w), 0);
}

static void landed(void *arg, int rc)
{
    writer *w = arg;
    w->rc = rc;
    w->landed_on = pthread_self();
    atomic_fetch_add(&w->landings, 1);
    atomic_store(&w->done, 1);
}

/* The same create, started from this thread without waiting. */
static void start_async(writer *w, once_store *s, const char *id, const char *json)
{
    memset(w, 0, sizeof *w);
    w->s = s;
    w->async = 1;
    snprintf(w->id, sizeof w->id, "%s", id);
    snprintf(w->json, sizeof w->json, "%s", json);
    atomic_init(&w->done, 0);
    atomic_init(&w->landings, 0);
    assert_int_equal(st_rec(&w->rec, "p", w->id, ONCE_STATE_WORKING, T0, w->json), 0);
    w->rec.generation = 1;
    w->ev = (once_event){1, "{\"ev\":1}"};
    assert_int_equal(once_store_create_start(s, &w->rec, &w->ev, 1, landed, w), ONCE_OK);
}

static int writer_done(void *arg)
{
    return atomic_load(&((writer *)arg)->done);
}

typedef struct fx {
    char path[4096];
    once_store *s;
    writer lead;
    writer fol[NFOLLOW];
    int async;                 /* the followers start their creates without waiting */
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    char url[4200], err[256];
    shim_register();
    shim_arm(0);
    if (!f || st_tmp_path(f->path, sizeof f->path, "gf") != 0)
        return -1;
    snprintf(url, sizeof url, "sqlite:%s?vfs=" SHIM_VFS "&synchronous=full", f->path);
    if (once_store_open(url, NULL, &f->s, err, sizeof err) != ONCE_OK) {
        fprintf(stderr, "open: %s\n", err);
        return -1;
    }
    /* Also the WAL's first commit, whose header sync is not a batch's. */
    if (create(f->s, DUP_ID, DUP_JSON, NULL) != ONCE_OK)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    shim_hold_syncs(0);
    once_store_close(f->s);
    for (int i = 0; i < NFOLLOW; i++)
        once_record_clear(&f->fol[i].rec);
    st_remove_db(f->path);
    free(f);
    return 0;
}

static int all_queued(void *arg)
{
    return once__sqlite_queued(arg) == NFOLLOW;
}

/* The leader held in its COMMIT's fsync, NFOLLOW writers queued behind it,
 * the CONFLICT-th on DUP_ID. */
static void pile_up(fx *f)
{
    shim_hold_syncs(1);
    start(&f->lead, f->s, "lead", "{\"by\":\"lead\"}");
    assert_true(shim_wait_held(WAIT_MS));
    for (int i = 0; i < NFOLLOW; i++) {
        char id[32], json[48];
        snprintf(id, sizeof id, "f-%d", i);
        snprintf(json, sizeof json, "{\"by\":%d}", i);
        if (f->async)
            start_async(&f->fol[i], f->s, i == CONFLICT ? DUP_ID : id, json);
        else
            start(&f->fol[i], f->s, i == CONFLICT ? DUP_ID : id, json);
    }
    assert_true(tt_wait_until(all_queued, f->s, WAIT_MS));
    assert_int_equal(atomic_load(&f->lead.done), 0);   /* its fsync has not returned */
}

/* Let the leader's fsync go; then the followers' batch is held at its own. */
static void lead_through(fx *f)
{
    shim_release(0);
    pthread_join(f->lead.th, NULL);
    assert_int_equal(f->lead.rc, ONCE_OK);
    assert_true(shim_wait_held(WAIT_MS));
    for (int i = 0; i < NFOLLOW; i++)
        assert_int_equal(atomic_load(&f->fol[i].done), 0);   /* none answered before its fsync */
}

static void join_followers(fx *f)
{
    for (int i = 0; i < NFOLLOW; i++) {
        writer *w = &f->fol[i];
        if (!w->async) {
            pthread_join(w->th, NULL);
            continue;
        }
        assert_true(tt_wait_until(writer_done, w, WAIT_MS));
        assert_int_equal(atomic_load(&w->landings), 1);
        assert_false(pthread_equal(w->landed_on, pthread_self()));   /* not the starter */
    }
}

static void assert_clean(once_store *s)
{
    once_check_report rep;
    assert_int_equal(once_store_check(s, &rep), ONCE_OK);
    if (!st_clean(&rep))
        fail_msg("check: %s", rep.first_problem);
}

static void own_outcomes(void **state)
{
    fx *f = *state;
    long c0 = once__sqlite_commits(), o0 = once__sqlite_committed_ops();
    pile_up(f);
    lead_through(f);
    shim_hold_syncs(0);
    shim_release(0);
    join_followers(f);

    for (int i = 0; i < NFOLLOW; i++) {
        if (i == CONFLICT) {
            assert_int_equal(f->fol[i].rc, ONCE_EEXISTS);
            if (!f->async)   /* a started create has no winner output */
                assert_string_equal(f->fol[i].winner, DUP_JSON);
        } else if (f->fol[i].rc != ONCE_OK) {
            fail_msg("follower %d: %s", i, once_errname(f->fol[i].rc));
        }
    }
    assert_int_equal(once__sqlite_commits() - c0, 2);   /* the leader's, then all followers' */
    assert_int_equal(once__sqlite_committed_ops() - o0, 1 + NFOLLOW);
    for (int i = 0; i < NFOLLOW; i++) {
        once_record r;
        assert_int_equal(once_store_load(f->s, "p", f->fol[i].id, &r, NULL), ONCE_OK);
        assert_string_equal(r.task_json, i == CONFLICT ? DUP_JSON : f->fol[i].json);
        once_record_clear(&r);
    }
    assert_clean(f->s);
}

static void failed_fsync(void **state)
{
    fx *f = *state;
    long c0 = once__sqlite_commits();
    pile_up(f);
    lead_through(f);
    shim_hold_syncs(0);
    shim_release(1);
    join_followers(f);

    for (int i = 0; i < NFOLLOW; i++)
        if (f->fol[i].rc != ONCE_ESTORE)
            fail_msg("follower %d of the failed batch: %s", i, once_errname(f->fol[i].rc));
    assert_int_equal(once__sqlite_commits() - c0, 1);   /* the leader's only */
    for (int i = 0; i < NFOLLOW; i++) {
        once_record r;
        int rc = once_store_load(f->s, "p", f->fol[i].id, &r, NULL);
        if (i == CONFLICT) {
            assert_int_equal(rc, ONCE_OK);
            assert_string_equal(r.task_json, DUP_JSON);
            once_record_clear(&r);
        } else {
            assert_int_equal(rc, ONCE_ENOTFOUND);
        }
    }
    once_record r;
    assert_int_equal(once_store_load(f->s, "p", "lead", &r, NULL), ONCE_OK);
    once_record_clear(&r);
    assert_int_equal(create(f->s, "after", "{}", NULL), ONCE_OK);
    assert_clean(f->s);
}

static void own_outcomes_async(void **state)
{
    ((fx *)*state)->async = 1;
    own_outcomes(state);
}

static void failed_fsync_async(void **state)
{
    ((fx *)*state)->async = 1;
    failed_fsync(state);
}

/* Nobody leads: the started create is committed by another thread (the
 * store's driver), and the starter returns before it lands. */
static void lone_async(void **state)
{
    fx *f = *state;
    writer w;
    shim_hold_syncs(1);
    start_async(&w, f->s, "lone", "{\"by\":\"lone\"}");
    assert_true(shim_wait_held(WAIT_MS));   /* its commit is in its fsync ... */
    assert_int_equal(atomic_load(&w.done), 0);   /* ... and it has not landed */
    shim_hold_syncs(0);
    shim_release(0);
    assert_true(tt_wait_until(writer_done, &w, WAIT_MS));
    assert_int_equal(w.rc, ONCE_OK);
    assert_int_equal(atomic_load(&w.landings), 1);
    assert_false(pthread_equal(w.landed_on, pthread_self()));
    once_record_clear(&w.rec);
    once_record r;
    assert_int_equal(once_store_load(f->s, "p", "lone", &r, NULL), ONCE_OK);
    once_record_clear(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(own_outcomes, setup, teardown),
        cmocka_unit_test_setup_teardown(failed_fsync, setup, teardown),
        cmocka_unit_test_setup_teardown(own_outcomes_async, setup, teardown),
        cmocka_unit_test_setup_teardown(failed_fsync_async, setup, teardown),
        cmocka_unit_test_setup_teardown(lone_async, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
