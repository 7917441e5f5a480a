/*
 * optional_cases.h -- the cases of the store conformance suite for the
 * optional slots that are not a table of rows of their own (included by
 * conformance.c, which provides fx, EXPECT_RC, T0, put, put_finished):
 * the change feed (ONCE_STORE_FEED), create_start (ONCE_STORE_CREATE_START,
 * ONCE_STORE_START_PUSH), budget (ONCE_STORE_BUDGET) and synchronous
 * (ONCE_STORE_SYNCHRONOUS). Each case
 * runs on every backend: one with the bit is held to the slot's contract
 * in store.h; one without it must answer ONCE_EUNSUPPORTED from the
 * dispatch helper, touch nothing, and leave the caller its fallback (the
 * plain create, no budget, no durability setting), which is what the
 * engine then does.
 */
#ifndef ONCE_TESTS_STORE_OPTIONAL_CASES_H
#define ONCE_TESTS_STORE_OPTIONAL_CASES_H

#include "timeout.h"

/* One started create: its answer and the thread that gave it. */
typedef struct started_create {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int calls;   /* done ran this many times */
    int rc;
    pthread_t by;
} started_create;

static void started_init(started_create *c)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
}

static void started_done(void *arg, int rc)
{
    started_create *c = arg;
    pthread_mutex_lock(&c->mu);
    c->calls++;
    c->rc = rc;
    c->by = pthread_self();
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* Wait for done (bounded: a create that never lands is a failure), then
 * return its answer; done must have run exactly once, not on this thread. */
static int started_wait(started_create *c)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    int64_t ms = tt_ms(10000);
    until.tv_sec += (time_t)(ms / 1000);
    pthread_mutex_lock(&c->mu);
    while (c->calls == 0 && pthread_cond_timedwait(&c->cv, &c->mu, &until) == 0)
        ;
    int calls = c->calls, rc = c->rc;
    pthread_t by = c->by;
    pthread_mutex_unlock(&c->mu);
    if (calls != 1)
        fail_msg("done ran %d times, want once", calls);
    assert_false(pthread_equal(by, pthread_self()));
    return rc;
}

static void started_destroy(started_create *c)
{
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
}

/* Start the create of (p, id) with one event and push_json push (may be
 * NULL); returns once_store_create_start's answer, and in *rc the create's
 * (done's) when it was queued. */
static int start_create(fx *f, const char *p, const char *id, const char *push, int *rc)
{
    once_record r;
    st_events e;
    started_create c;

    assert_int_equal(st_rec(&r, p, id, ONCE_STATE_COMPLETED, T0, "{\"started\":true}"), 0);
    r.generation = 1;
    if (push)
        assert_non_null(r.push_json = once_strdup(push));
    st_mkev(&e, 1, 1, id);
    started_init(&c);
    int qrc = once_store_create_start(f->s, &r, e.ev, 1, started_done, &c);
    if (qrc == ONCE_OK) {
        *rc = started_wait(&c);
    } else {
        assert_int_equal(c.calls, 0);   /* not queued: done never runs */
        *rc = qrc;
    }
    started_destroy(&c);
    once_record_clear(&r);
    return qrc;
}

/* A started create lands as the create slot would: stored with its event,
 * and a second start of the key (live or tombstoned) stores nothing. */
static void create_start_lands(void **state)
{
    fx *f = *state;
    unsigned caps = once_store_caps(f->s);
    int rc;

    if (!(caps & ONCE_STORE_CREATE_START)) {
        /* The fallback: refused before anything is queued, and the plain
         * create of the same record still works. */
        EXPECT_RC(f, start_create(f, "p", "s1", NULL, &rc), ONCE_EUNSUPPORTED);
        assert_false(once_store_can_start(f->s, NULL));
        EXPECT_RC(f, once_store_load(f->s, "p", "s1", &(once_record){0}, NULL), ONCE_ENOTFOUND);
        put(f, "p", "s1", ONCE_STATE_WORKING, T0, NULL, 1);
        return;
    }
    assert_true(once_store_can_start(f->s, NULL));
    EXPECT_RC(f, start_create(f, "p", "s1", NULL, &rc), ONCE_OK);
    EXPECT_RC(f, rc, ONCE_OK);
    once_record got;
    get(f, "p", "s1", &got);
    assert_string_equal(got.task_json, "{\"started\":true}");
    assert_int_equal(got.generation, 1);
    once_record_clear(&got);
    assert_int_equal(nevents(f, "p", "s1"), 1);

    /* The key is taken: EEXISTS, or ECONFLICT from a group that did not
     * write it; either way the stored record is the first. */
    EXPECT_RC(f, start_create(f, "p", "s1", NULL, &rc), ONCE_OK);
    if (rc != ONCE_EEXISTS && rc != ONCE_ECONFLICT)
        fail_msg("second start: %s, want EEXISTS or ECONFLICT", once_errname(rc));
    assert_int_equal(nevents(f, "p", "s1"), 1);

    /* A tombstoned key: ETOMBSTONE (or ECONFLICT), the tombstone stays. */
    put_finished(f, "p", "gone", ONCE_STATE_COMPLETED, T0 - 100);
    size_t n = 0;
    EXPECT_RC(f, once_store_sweep(f->s, T0, T0, 10, &n), ONCE_OK);
    EXPECT_RC(f, start_create(f, "p", "gone", NULL, &rc), ONCE_OK);
    if (rc != ONCE_ETOMBSTONE && rc != ONCE_ECONFLICT)
        fail_msg("start on a tombstone: %s, want ETOMBSTONE or ECONFLICT", once_errname(rc));
    EXPECT_RC(f, once_store_load(f->s, "p", "gone", &got, NULL), ONCE_ETOMBSTONE);

    /* The helper's argument checks come first, as for the create slot. */
    once_record bad;
    assert_int_equal(st_rec(&bad, "p", "", ONCE_STATE_WORKING, T0, NULL), 0);
    started_create c;
    started_init(&c);
    EXPECT_RC(f, once_store_create_start(f->s, &bad, NULL, 0, started_done, &c), ONCE_EINVAL);
    assert_int_equal(c.calls, 0);
    started_destroy(&c);
    once_record_clear(&bad);
}

/* A record with push configs: started (and its delivery rows written with
 * it) only under ONCE_STORE_START_PUSH; otherwise refused before queueing,
 * and the plain create takes it. */
static void create_start_push(void **state)
{
    fx *f = *state;
    unsigned caps = once_store_caps(f->s);
    const char *push = "[{\"id\":\"a\",\"since\":0}]";
    int rc;

    if (!(caps & ONCE_STORE_PUSH)) {
        fprintf(stderr, "SKIP %s: backend %s lacks ONCE_STORE_PUSH\n", __func__, g_url);
        skip();
    }
    int want = (caps & ONCE_STORE_CREATE_START) && (caps & ONCE_STORE_START_PUSH);
    once_record probe = {.push_json = (char *)push};
    assert_int_equal(once_store_can_start(f->s, &probe), want);
    EXPECT_RC(f, start_create(f, "p", "w", push, &rc), want ? ONCE_OK : ONCE_EUNSUPPORTED);
    if (!want) {
        EXPECT_RC(f, once_store_load(f->s, "p", "w", &(once_record){0}, NULL), ONCE_ENOTFOUND);
        return;
    }
    EXPECT_RC(f, rc, ONCE_OK);
    once_push_row_list rows;
    EXPECT_RC(f, once_store_push_rows(f->s, "p", "w", &rows), ONCE_OK);
    assert_int_equal(rows.n, 1);
    assert_string_equal(rows.v[0].config_id, "a");
    assert_int_equal(rows.v[0].target, 1);
    once_push_row_list_clear(&rows);
}

/* Many started creates at once, of distinct keys: each lands exactly once
 * and is stored. */
#define STARTED_MANY 64
static void create_start_many(void **state)
{
    fx *f = *state;
    static started_create c[STARTED_MANY];
    static once_record r[STARTED_MANY];
    static st_events e[STARTED_MANY];

    if (!(once_store_caps(f->s) & ONCE_STORE_CREATE_START)) {
        fprintf(stderr, "SKIP %s: backend %s lacks ONCE_STORE_CREATE_START\n", __func__, g_url);
        skip();
    }
    for (int i = 0; i < STARTED_MANY; i++) {
        char id[32];
        snprintf(id, sizeof id, "m%d", i);
        assert_int_equal(st_rec(&r[i], "p", id, ONCE_STATE_COMPLETED, T0 + i, NULL), 0);
        r[i].generation = 1;
        st_mkev(&e[i], 1, 1, id);
        started_init(&c[i]);
        EXPECT_RC(f, once_store_create_start(f->s, &r[i], e[i].ev, 1, started_done, &c[i]),
                  ONCE_OK);
    }
    for (int i = 0; i < STARTED_MANY; i++) {
        EXPECT_RC(f, started_wait(&c[i]), ONCE_OK);
        started_destroy(&c[i]);
        once_record got;
        get(f, "p", r[i].task_id, &got);
        assert_int_equal(got.created_at, T0 + i);
        once_record_clear(&got);
        once_record_clear(&r[i]);
    }
}

/* CAS (p, id) one version on, with one event. */
static void bump(fx *f, const char *id)
{
    once_record r;
    st_events e;

    get(f, "p", id, &r);
    r.version++;
    r.generation++;
    st_mkev(&e, r.generation, 1, id);
    EXPECT_RC(f, once_store_update(f->s, &r, r.version - 1, e.ev, 1), ONCE_OK);
    once_record_clear(&r);
}

/* Wait (bounded) until the feed tells of id; other keys may come too (a
 * key may come twice, or without its generation moving). */
static void feed_wait_for(fx *f, once_store_feed *fd, const char *id)
{
    int64_t until = once_monotonic_ms() + tt_ms(10000);
    for (;;) {
        once_key_list l;
        int lost = 0, seen = 0;
        EXPECT_RC(f, once_store_feed_next(fd, 100, &l, &lost), ONCE_OK);
        for (size_t i = 0; i < l.n; i++)
            seen |= strcmp(l.v[i].principal, "p") == 0 && strcmp(l.v[i].task_id, id) == 0;
        once_key_list_clear(&l);
        if (seen)
            return;
        if (once_monotonic_ms() > until)
            fail_msg("the feed told nothing of %s", id);
    }
}

/* The change feed tells of every update with events; its first answer
 * says lost. Without the bit there is no feed: followers poll. */
static void feed_tells_updates(void **state)
{
    fx *f = *state;
    once_store_feed *fd = (once_store_feed *)f;
    once_key_list l;
    int lost = 0;

    if (!(once_store_caps(f->s) & ONCE_STORE_FEED)) {
        EXPECT_RC(f, once_store_feed_open(f->s, &fd), ONCE_EUNSUPPORTED);
        assert_null(fd);
        return;
    }
    EXPECT_RC(f, once_store_feed_open(f->s, &fd), ONCE_OK);
    assert_ptr_equal(fd->store, f->s);
    EXPECT_RC(f, once_store_feed_next(fd, 0, &l, &lost), ONCE_OK);
    assert_int_equal(lost, 1);   /* the first answer: look at everything once */
    once_key_list_clear(&l);
    put(f, "p", "f1", ONCE_STATE_WORKING, T0, NULL, 1);
    put(f, "p", "f2", ONCE_STATE_WORKING, T0, NULL, 1);
    bump(f, "f2");
    feed_wait_for(f, fd, "f2");
    bump(f, "f1");
    feed_wait_for(f, fd, "f1");
    assert_int_equal(once_store_feed_next(fd, -1, &l, &lost), ONCE_EINVAL);
    once_store_feed_close(fd);
    once_store_feed_close(NULL);
}

/* The budget slot tells what the store holds; a taking read counts early
 * expiries as told. */
static void budget_reports(void **state)
{
    fx *f = *state;
    once_budget b;

    memset(&b, 0xff, sizeof b);
    if (!(once_store_caps(f->s) & ONCE_STORE_BUDGET)) {
        EXPECT_RC(f, once_store_budget(f->s, &b, 1), ONCE_EUNSUPPORTED);
        assert_int_equal(b.max_bytes, 0);   /* zeroed: no budget, nothing held */
        assert_int_equal(b.live, 0);
        return;
    }
    EXPECT_RC(f, once_store_budget(f->s, &b, 0), ONCE_OK);
    size_t live0 = b.live, bytes0 = b.bytes;
    put(f, "p", "b1", ONCE_STATE_WORKING, T0, "{\"some\":\"bytes\"}", 2);
    put(f, "p", "b2", ONCE_STATE_WORKING, T0, NULL, 1);
    EXPECT_RC(f, once_store_budget(f->s, &b, 1), ONCE_OK);
    assert_int_equal(b.live, live0 + 2);
    assert_true(b.bytes > bytes0);
    assert_true(b.early_new <= b.early);
    EXPECT_RC(f, once_store_budget(f->s, &b, 0), ONCE_OK);
    assert_int_equal(b.early_new, 0);   /* the taking read told them */
    assert_int_equal(once_store_budget(f->s, NULL, 0), ONCE_EINVAL);
}

/* The synchronous slot reads back a level once sets. */
static void synchronous_reads_back(void **state)
{
    fx *f = *state;
    int level = -1;

    if (!(once_store_caps(f->s) & ONCE_STORE_SYNCHRONOUS)) {
        EXPECT_RC(f, once_store_synchronous(f->s, &level), ONCE_EUNSUPPORTED);
        assert_int_equal(level, ONCE_SYNC_DEFAULT);
        return;
    }
    EXPECT_RC(f, once_store_synchronous(f->s, &level), ONCE_OK);
    assert_non_null(once_sync_name(level));
    /* The suite opens its stores with no setting: the default is FULL. */
    if (!strchr(g_url, '?'))
        assert_int_equal(level, ONCE_SYNC_FULL);
}

/* What a handle says it offers is what its table offers, less what its
 * URL turned off; a bit that needs slots has them (open checked). */
static void caps_match_table(void **state)
{
    fx *f = *state;
    unsigned caps = once_store_caps(f->s), table = f->s->m->caps;

    assert_int_equal(caps & ~table, 0);
    if (table & ONCE_STORE_START_PUSH)
        assert_true(table & ONCE_STORE_CREATE_START);
    if (caps & ONCE_STORE_CREATE_START)
        assert_non_null(f->s->m->create_start);
    if (caps & ONCE_STORE_BUDGET)
        assert_non_null(f->s->m->budget);
    if (caps & ONCE_STORE_SYNCHRONOUS)
        assert_non_null(f->s->m->synchronous);
}

#define OPTIONAL_CASES                                                                             \
    cmocka_unit_test_setup_teardown(feed_tells_updates, setup, teardown),                          \
        cmocka_unit_test_setup_teardown(create_start_lands, setup, teardown),                      \
        cmocka_unit_test_setup_teardown(create_start_push, setup, teardown),                       \
        cmocka_unit_test_setup_teardown(create_start_many, setup, teardown),                       \
        cmocka_unit_test_setup_teardown(budget_reports, setup, teardown),                          \
        cmocka_unit_test_setup_teardown(synchronous_reads_back, setup, teardown),                  \
        cmocka_unit_test_setup_teardown(caps_match_table, setup, teardown)

#endif
