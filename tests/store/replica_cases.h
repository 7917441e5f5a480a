/*
 * replica_cases.h -- the replica heartbeat cases of the store conformance
 * suite (included by conformance.c, which provides fx, EXPECT_RC, T0).
 * They hold every backend with ONCE_STORE_REPLICAS to store.h's "Replica
 * heartbeats" contract: a beat upserts the row of its id with every field,
 * the list answers every row by id, whatever bytes the version holds, the
 * rows of concurrent beaters do not clobber each other, and bad rows are
 * refused before they reach the backend. A backend without the capability
 * must say ONCE_EUNSUPPORTED, and the other cases are reported as SKIPPED.
 */
#ifndef ONCE_TESTS_STORE_REPLICA_CASES_H
#define ONCE_TESTS_STORE_REPLICA_CASES_H

#define NEED_REPLICAS(f)                                                                           \
    do {                                                                                           \
        if (!(once_store_caps((f)->s) & ONCE_STORE_REPLICAS)) {                                    \
            fprintf(stderr, "SKIP %s: backend %s lacks ONCE_STORE_REPLICAS\n", __func__, g_url);   \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

static once_replica replica_row(const char *id, const char *version, int64_t beat, int64_t leases)
{
    once_replica r;
    memset(&r, 0, sizeof r);
    snprintf(r.id, sizeof r.id, "%s", id);
    snprintf(r.version, sizeof r.version, "%s", version);
    r.started_at = T0;
    r.beat_at = beat;
    r.leases = leases;
    return r;
}

static void assert_same_replica(const once_replica *a, const once_replica *b)
{
    assert_string_equal(a->id, b->id);
    assert_string_equal(a->version, b->version);
    assert_int_equal(a->started_at, b->started_at);
    assert_int_equal(a->beat_at, b->beat_at);
    assert_int_equal(a->leases, b->leases);
    assert_int_equal(a->stopped, b->stopped);
}

static void replicas_unsupported_or_empty(void **state)
{
    fx *f = *state;
    once_replica_list l = {NULL, 7};
    once_replica r = replica_row("a", "1.0", T0, 0);
    if (!(once_store_caps(f->s) & ONCE_STORE_REPLICAS)) {
        EXPECT_RC(f, once_store_replica_beat(f->s, &r), ONCE_EUNSUPPORTED);
        EXPECT_RC(f, once_store_replicas(f->s, &l), ONCE_EUNSUPPORTED);
        assert_int_equal(l.n, 0);
        return;
    }
    EXPECT_RC(f, once_store_replicas(f->s, &l), ONCE_OK);
    assert_int_equal(l.n, 0);   /* a new store has no rows, and the output was zeroed */
    assert_null(l.v);
}

static void replica_beat_upserts(void **state)
{
    fx *f = *state;
    NEED_REPLICAS(f);
    /* Ids given out of order come back sorted; the version may hold
     * spaces and bytes above 0x7f, the id any byte a replica id holds. */
    once_replica b = replica_row("host-b-2", "0.9.1 (dev) \xc3\xa9", T0 + 5, 3);
    once_replica a = replica_row("host-a-1", "0.9.1", T0 + 1, 0);
    EXPECT_RC(f, once_store_replica_beat(f->s, &b), ONCE_OK);
    EXPECT_RC(f, once_store_replica_beat(f->s, &a), ONCE_OK);
    once_replica_list l;
    EXPECT_RC(f, once_store_replicas(f->s, &l), ONCE_OK);
    assert_int_equal(l.n, 2);
    assert_same_replica(&l.v[0], &a);
    assert_same_replica(&l.v[1], &b);
    once_replica_list_clear(&l);

    /* A later beat of an id replaces every field of its row, the other
     * row stays, and stopped comes back as written. */
    a.beat_at = T0 + 1000;
    a.leases = 7;
    snprintf(a.version, sizeof a.version, "0.9.2");
    EXPECT_RC(f, once_store_replica_beat(f->s, &a), ONCE_OK);
    b.stopped = 1;
    b.leases = 0;
    EXPECT_RC(f, once_store_replica_beat(f->s, &b), ONCE_OK);
    EXPECT_RC(f, once_store_replicas(f->s, &l), ONCE_OK);
    assert_int_equal(l.n, 2);
    assert_same_replica(&l.v[0], &a);
    assert_same_replica(&l.v[1], &b);
    once_replica_list_clear(&l);
    once_replica_list_clear(&l);   /* a second clear is harmless */
}

static void replica_limits(void **state)
{
    fx *f = *state;
    NEED_REPLICAS(f);
    /* The longest id and version the types hold round-trip exactly. */
    once_replica r = replica_row("", "", INT64_MAX / 2, INT64_MAX / 4);
    memset(r.id, 'i', ONCE_OWNER_MAX);
    memset(r.version, 'v', ONCE_REPLICA_VERSION_MAX);
    EXPECT_RC(f, once_store_replica_beat(f->s, &r), ONCE_OK);
    once_replica_list l;
    EXPECT_RC(f, once_store_replicas(f->s, &l), ONCE_OK);
    assert_int_equal(l.n, 1);
    assert_same_replica(&l.v[0], &r);
    once_replica_list_clear(&l);

    /* Refused before dispatch, nothing written: an empty id, negative
     * numbers, stopped other than 0/1, NULLs. */
    once_replica bad = replica_row("", "1", T0, 0);
    EXPECT_RC(f, once_store_replica_beat(f->s, &bad), ONCE_EINVAL);
    bad = replica_row("x", "1", -1, 0);
    EXPECT_RC(f, once_store_replica_beat(f->s, &bad), ONCE_EINVAL);
    bad = replica_row("x", "1", T0, -1);
    EXPECT_RC(f, once_store_replica_beat(f->s, &bad), ONCE_EINVAL);
    bad = replica_row("x", "1", T0, 0);
    bad.stopped = 2;
    EXPECT_RC(f, once_store_replica_beat(f->s, &bad), ONCE_EINVAL);
    EXPECT_RC(f, once_store_replica_beat(f->s, NULL), ONCE_EINVAL);
    EXPECT_RC(f, once_store_replica_beat(NULL, &r), ONCE_EINVAL);
    EXPECT_RC(f, once_store_replicas(f->s, NULL), ONCE_EINVAL);
    EXPECT_RC(f, once_store_replicas(f->s, &l), ONCE_OK);
    assert_int_equal(l.n, 1);
    once_replica_list_clear(&l);
}

#define REPLICA_BEATERS 4
#define REPLICA_BEATS 25

static void *replica_beater(void *p)
{
    void **a = p;
    once_store *s = a[0];
    int k = (int)(intptr_t)a[1];
    char id[16];
    snprintf(id, sizeof id, "r%d", k);
    for (int i = 1; i <= REPLICA_BEATS; i++) {
        once_replica r = replica_row(id, "1", T0 + i, i);
        if (once_store_replica_beat(s, &r) != ONCE_OK)
            return (void *)1;
    }
    return NULL;
}

static void replica_beats_race(void **state)
{
    fx *f = *state;
    NEED_REPLICAS(f);
    pthread_t t[REPLICA_BEATERS];
    void *args[REPLICA_BEATERS][2];
    for (int k = 0; k < REPLICA_BEATERS; k++) {
        args[k][0] = f->s;
        args[k][1] = (void *)(intptr_t)k;
        assert_int_equal(pthread_create(&t[k], NULL, replica_beater, args[k]), 0);
    }
    for (int k = 0; k < REPLICA_BEATERS; k++) {
        void *ret;
        assert_int_equal(pthread_join(t[k], &ret), 0);
        assert_null(ret);
    }
    /* Each replica's row holds its own last beat, none lost to another's. */
    once_replica_list l;
    EXPECT_RC(f, once_store_replicas(f->s, &l), ONCE_OK);
    assert_int_equal(l.n, REPLICA_BEATERS);
    for (int k = 0; k < REPLICA_BEATERS; k++) {
        char id[16];
        snprintf(id, sizeof id, "r%d", k);
        assert_string_equal(l.v[k].id, id);
        assert_int_equal(l.v[k].beat_at, T0 + REPLICA_BEATS);
        assert_int_equal(l.v[k].leases, REPLICA_BEATS);
    }
    once_replica_list_clear(&l);
}

#define REPLICA_CASES                                                                              \
    cmocka_unit_test_setup_teardown(replicas_unsupported_or_empty, setup, teardown),               \
        cmocka_unit_test_setup_teardown(replica_beat_upserts, setup, teardown),                    \
        cmocka_unit_test_setup_teardown(replica_limits, setup, teardown),                          \
        cmocka_unit_test_setup_teardown(replica_beats_race, setup, teardown)

#endif
