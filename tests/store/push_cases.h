/*
 * push_cases.h -- the push delivery cases of the store conformance suite
 * (included by conformance.c, which provides fx, put/get, EXPECT_RC, T0).
 * They hold every backend with ONCE_STORE_PUSH to store.h's "Push delivery"
 * contract: rows follow push_json atomically, a claim leases each due row to
 * exactly one claimer, acks are fenced by the lease, generations advance
 * one at a time, retries wait, disabled rows stay quiet, rows go with a
 * swept task. A backend without ONCE_STORE_PUSH must say so
 * (ONCE_EUNSUPPORTED) and every other case is reported as SKIPPED.
 */
#ifndef ONCE_TESTS_STORE_PUSH_CASES_H
#define ONCE_TESTS_STORE_PUSH_CASES_H

/* Skip (visibly, in cmocka's summary) when the backend has no push rows. */
#define NEED_PUSH(f)                                                                               \
    do {                                                                                           \
        if (!(once_store_caps((f)->s) & ONCE_STORE_PUSH)) {                                        \
            fprintf(stderr, "SKIP %s: backend %s lacks ONCE_STORE_PUSH\n", __func__, g_url);       \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

/* A live task with n events and the given push_json (may be NULL). */
static void put_push(fx *f, const char *principal, const char *id, size_t n, const char *push)
{
    once_record r;
    st_events e;

    assert_int_equal(st_rec(&r, principal, id, ONCE_STATE_WORKING, T0, NULL), 0);
    r.generation = (int64_t)n;
    if (push)
        assert_non_null(r.push_json = once_strdup(push));
    st_mkev(&e, 1, n, id);
    EXPECT_RC(f, once_store_create(f->s, &r, e.ev, n, NULL, NULL), ONCE_OK);
    once_record_clear(&r);
}

/* CAS the record to a new push_json, appending nev events. */
static void set_push(fx *f, const char *principal, const char *id, size_t nev, const char *push)
{
    once_record r;
    st_events e;
    int64_t v;

    get(f, principal, id, &r);
    v = r.version;
    once_free(r.push_json);
    r.push_json = push ? once_strdup(push) : NULL;
    if (push)
        assert_non_null(r.push_json);
    st_mkev(&e, r.generation + 1, nev, id);
    r.generation += (int64_t)nev;
    r.version = v + 1;
    EXPECT_RC(f, once_store_update(f->s, &r, v, e.ev, nev), ONCE_OK);
    once_record_clear(&r);
}

static void rows_of(fx *f, const char *principal, const char *id, once_push_row_list *l)
{
    EXPECT_RC(f, once_store_push_rows(f->s, principal, id, l), ONCE_OK);
}

static int ack(fx *f, const once_push_claim *c, const char *owner, once_push_outcome o, int64_t gen,
               int64_t now, int64_t lease_ms, int64_t next, const char *err)
{
    once_push_ack a = {.principal = c->principal,
                       .task_id = c->task_id,
                       .config_id = c->config_id,
                       .owner = owner,
                       .generation = gen,
                       .outcome = o,
                       .now = now,
                       .lease_ms = lease_ms,
                       .next_attempt_at = next,
                       .error = err};
    return once_store_push_ack(f->s, &a);
}

/* Backends say what they are: push slots work exactly when the cap is set. */
static void push_capability_honest(void **state)
{
    fx *f = *state;
    once_push_claim_list l;
    once_push_row_list rows;
    int want = (once_store_caps(f->s) & ONCE_STORE_PUSH) ? ONCE_OK : ONCE_EUNSUPPORTED;

    if (want == ONCE_EUNSUPPORTED)
        fprintf(stderr, "NOTE %s has no ONCE_STORE_PUSH: push cases below are skipped\n", g_url);
    EXPECT_RC(f, once_store_push_claim(f->s, "r1", T0, 1000, 4, &l), want);
    assert_int_equal(l.n, 0);
    EXPECT_RC(f, once_store_push_rows(f->s, "p", "none", &rows), want);
    assert_int_equal(rows.n, 0);
}

/* push_json is stored verbatim; rows follow it: new ids appear at their
 * since, kept ids keep their progress, a changed since resets, a dropped id
 * or a NULL push_json removes rows; every row aims at the generation. */
static void push_rows_follow_push_json(void **state)
{
    fx *f = *state;
    static const char two[] = "[{\"id\":\"b\",\"since\":0,\"url\":\"http://x/\\u00e9\"},"
                              "{\"id\":\"a\",\"since\":1,\"token\":\"t\"}]";
    once_push_row_list l;
    once_push_claim_list c;
    once_record got;

    NEED_PUSH(f);
    put_push(f, "p", "t1", 2, two);
    get(f, "p", "t1", &got);
    assert_string_equal(got.push_json, two);
    once_record_clear(&got);
    rows_of(f, "p", "t1", &l);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.v[0].config_id, "a"); /* by config id */
    assert_int_equal(l.v[0].since, 1);
    assert_int_equal(l.v[0].delivered, 1);
    assert_int_equal(l.v[0].target, 2);
    assert_string_equal(l.v[1].config_id, "b");
    assert_int_equal(l.v[1].delivered, 0);
    assert_int_equal(l.v[1].disabled, 0);
    once_push_row_list_clear(&l);

    /* Deliver b's first generation, then change the configs: b kept (its
     * progress too), a dropped, c new at since 3. */
    EXPECT_RC(f, once_store_push_claim(f->s, "r1", T0, 1000, 10, &c), ONCE_OK);
    assert_int_equal(c.n, 2);
    for (size_t i = 0; i < c.n; i++)
        if (strcmp(c.v[i].config_id, "b") == 0)
            EXPECT_RC(f, ack(f, &c.v[i], "r1", ONCE_PUSH_DELIVERED, 1, T0, 0, 0, NULL), ONCE_OK);
    once_push_claim_list_clear(&c);
    set_push(f, "p", "t1", 1, "[{\"id\":\"b\",\"since\":0},{\"id\":\"c\",\"since\":3}]");
    rows_of(f, "p", "t1", &l);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.v[0].config_id, "b");
    assert_int_equal(l.v[0].delivered, 1);
    assert_int_equal(l.v[0].deliveries, 1);
    assert_int_equal(l.v[0].target, 3);
    assert_string_equal(l.v[1].config_id, "c");
    assert_int_equal(l.v[1].delivered, 3);
    once_push_row_list_clear(&l);

    /* A new since for b resets its progress but keeps its counters. */
    set_push(f, "p", "t1", 0, "[{\"id\":\"b\",\"since\":2},{\"id\":\"c\",\"since\":3}]");
    rows_of(f, "p", "t1", &l);
    assert_int_equal(l.v[0].delivered, 2);
    assert_int_equal(l.v[0].since, 2);
    assert_int_equal(l.v[0].deliveries, 1);
    once_push_row_list_clear(&l);

    set_push(f, "p", "t1", 1, NULL);
    rows_of(f, "p", "t1", &l);
    assert_int_equal(l.n, 0);
    get(f, "p", "t1", &got);
    assert_null(got.push_json);
    once_record_clear(&got);
    rows_of(f, "p", "missing", &l);
    assert_int_equal(l.n, 0);
}

/* A push_json the contract forbids never reaches storage. */
static void push_json_validated(void **state)
{
    fx *f = *state;
    static const char *const bad[] = {
        "{}",                                /* not an array */
        "[1]",                               /* not objects */
        "[{\"since\":0}]",                   /* no id */
        "[{\"id\":\"bad id\",\"since\":0}]", /* id not ID-shaped */
        "[{\"id\":\"a\"}]",                  /* no since */
        "[{\"id\":\"a\",\"since\":3}]",      /* since > generation */
        "[{\"id\":\"a\",\"since\":-1}]",
        "[{\"id\":\"a\",\"since\":0},{\"id\":\"a\",\"since\":0}]", /* duplicate id */
        "[{\"id\":\"a\",\"since\":0}",                             /* not JSON */
    };
    once_record r, got;
    char many[2048];
    size_t i, k = 0;

    NEED_PUSH(f);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(st_rec(&r, "p", "v", ONCE_STATE_WORKING, T0, NULL), 0);
        r.generation = 0;
        r.push_json = once_strdup(bad[i]);
        if (once_store_create(f->s, &r, NULL, 0, NULL, NULL) != ONCE_EINVAL)
            fail_msg("push_json %s was accepted", bad[i]);
        once_record_clear(&r);
    }
    k += (size_t)snprintf(many + k, sizeof many - k, "[");
    for (i = 0; i <= ONCE_PUSH_CONFIGS_MAX; i++)
        k += (size_t)snprintf(many + k, sizeof many - k, "%s{\"id\":\"c%zu\",\"since\":0}",
                              i ? "," : "", i);
    snprintf(many + k, sizeof many - k, "]");
    assert_int_equal(st_rec(&r, "p", "v", ONCE_STATE_WORKING, T0, NULL), 0);
    r.push_json = once_strdup(many);
    EXPECT_RC(f, once_store_create(f->s, &r, NULL, 0, NULL, NULL), ONCE_EINVAL);
    once_record_clear(&r);
    EXPECT_RC(f, once_store_load(f->s, "p", "v", &got, NULL), ONCE_ENOTFOUND);

    /* An update is held to the same rules. */
    put_push(f, "p", "v", 1, "[{\"id\":\"a\",\"since\":0}]");
    get(f, "p", "v", &r);
    once_free(r.push_json);
    r.push_json = once_strdup("[{\"id\":\"a\",\"since\":9}]");
    r.version = 2;
    EXPECT_RC(f, once_store_update(f->s, &r, 1, NULL, 0), ONCE_EINVAL);
    once_record_clear(&r);
}

/* Claim: only due rows, oldest next_attempt_at first, each to one owner
 * until its lease runs out; then another owner may take it and the first
 * one's acks are refused. */
static void push_claim_lease_and_fence(void **state)
{
    fx *f = *state;
    once_push_claim_list a, b;
    once_push_row_list l;

    NEED_PUSH(f);
    put_push(f, "p", "done", 0, "[{\"id\":\"c\",\"since\":0}]"); /* nothing to send */
    put_push(f, "p", "t1", 2, "[{\"id\":\"c\",\"since\":0}]");
    put_push(f, "q", "t2", 1, "[{\"id\":\"c\",\"since\":0}]");
    put_push(f, "p", "none", 3, NULL);

    EXPECT_RC(f, once_store_push_claim(f->s, "r1", T0, 1000, 1, &a), ONCE_OK);
    assert_int_equal(a.n, 1);                   /* max honoured */
    assert_string_equal(a.v[0].principal, "p"); /* ties by key */
    assert_string_equal(a.v[0].task_id, "t1");
    assert_string_equal(a.v[0].config_id, "c");
    assert_int_equal(a.v[0].generation, 1);
    assert_int_equal(a.v[0].target, 2);
    assert_int_equal(a.v[0].attempts, 0);
    assert_int_equal(a.v[0].lease_until, T0 + 1000);

    /* Another owner gets only the other due row; then nothing. */
    EXPECT_RC(f, once_store_push_claim(f->s, "r2", T0 + 10, 1000, 10, &b), ONCE_OK);
    assert_int_equal(b.n, 1);
    assert_string_equal(b.v[0].task_id, "t2");
    EXPECT_RC(f, ack(f, &b.v[0], "r2", ONCE_PUSH_DELIVERED, 1, T0 + 15, 0, 0, NULL), ONCE_OK);
    once_push_claim_list_clear(&b);
    EXPECT_RC(f, once_store_push_claim(f->s, "r2", T0 + 20, 1000, 10, &b), ONCE_OK);
    assert_int_equal(b.n, 0);

    /* Fencing: not the owner; the owner but out of time; wrong generation. */
    EXPECT_RC(f, ack(f, &a.v[0], "r2", ONCE_PUSH_DELIVERED, 1, T0 + 30, 0, 0, NULL), ONCE_EFENCED);
    EXPECT_RC(f, ack(f, &a.v[0], "r1", ONCE_PUSH_DELIVERED, 2, T0 + 30, 0, 0, NULL),
              ONCE_ECONFLICT);
    EXPECT_RC(f, ack(f, &a.v[0], "r1", ONCE_PUSH_DELIVERED, 1, T0 + 1000, 0, 0, NULL),
              ONCE_EFENCED);
    rows_of(f, "p", "t1", &l);
    assert_int_equal(l.v[0].delivered, 0); /* nothing written by refused acks */
    assert_int_equal(l.v[0].deliveries, 0);
    once_push_row_list_clear(&l);

    /* The lease ran out: r2 takes the row; r1 is fenced for good. */
    EXPECT_RC(f, once_store_push_claim(f->s, "r2", T0 + 1000, 5000, 10, &b), ONCE_OK);
    assert_int_equal(b.n, 1);
    assert_string_equal(b.v[0].task_id, "t1");
    assert_int_equal(b.v[0].generation, 1);
    EXPECT_RC(f, ack(f, &a.v[0], "r1", ONCE_PUSH_DELIVERED, 1, T0 + 1001, 0, 0, NULL),
              ONCE_EFENCED);

    /* r2 delivers 1 and keeps the lease for 2; nobody else can claim. */
    EXPECT_RC(f, ack(f, &b.v[0], "r2", ONCE_PUSH_DELIVERED, 1, T0 + 1100, 5000, 0, NULL), ONCE_OK);
    once_push_claim_list_clear(&a);
    EXPECT_RC(f, once_store_push_claim(f->s, "r1", T0 + 1200, 1000, 10, &a), ONCE_OK);
    assert_int_equal(a.n, 0);
    EXPECT_RC(f, ack(f, &b.v[0], "r2", ONCE_PUSH_DELIVERED, 1, T0 + 1200, 5000, 0, NULL),
              ONCE_ECONFLICT); /* order: 1 is done, 2 is next */
    EXPECT_RC(f, ack(f, &b.v[0], "r2", ONCE_PUSH_DELIVERED, 2, T0 + 1300, 0, 0, NULL), ONCE_OK);
    rows_of(f, "p", "t1", &l);
    assert_int_equal(l.v[0].delivered, 2);
    assert_int_equal(l.v[0].deliveries, 2);
    assert_string_equal(l.v[0].lease_owner, "");
    assert_int_equal(l.v[0].lease_until, 0);
    once_push_row_list_clear(&l);

    /* Caught up: not due until the task moves on. */
    once_push_claim_list_clear(&a);
    EXPECT_RC(f, once_store_push_claim(f->s, "r1", T0 + 1400, 1000, 10, &a), ONCE_OK);
    assert_int_equal(a.n, 0);
    set_push(f, "p", "t1", 1, "[{\"id\":\"c\",\"since\":0}]");
    EXPECT_RC(f, once_store_push_claim(f->s, "r1", T0 + 1500, 1000, 10, &a), ONCE_OK);
    assert_int_equal(a.n, 1);
    assert_int_equal(a.v[0].generation, 3);
    /* RELEASE gives the lease back without progress. */
    EXPECT_RC(f, ack(f, &a.v[0], "r1", ONCE_PUSH_RELEASE, 0, T0 + 1501, 0, 0, NULL), ONCE_OK);
    once_push_claim_list_clear(&b);
    EXPECT_RC(f, once_store_push_claim(f->s, "r2", T0 + 1502, 1000, 10, &b), ONCE_OK);
    assert_int_equal(b.n, 1);
    assert_int_equal(b.v[0].generation, 3);
    once_push_claim_list_clear(&a);
    once_push_claim_list_clear(&b);
}

/* A failed attempt waits until next_attempt_at; counters and the error are
 * kept; a disabled row is never due again. Rows go with a swept task. */
static void push_retry_disable_sweep(void **state)
{
    fx *f = *state;
    once_push_claim_list a;
    once_push_row_list l;
    once_record r;
    st_events e;
    size_t n;
    char longerr[600];

    NEED_PUSH(f);
    put_push(f, "p", "t1", 2, "[{\"id\":\"c\",\"since\":0},{\"id\":\"d\",\"since\":0}]");
    EXPECT_RC(f, once_store_push_claim(f->s, "r1", T0, 1000, 10, &a), ONCE_OK);
    assert_int_equal(a.n, 2);
    memset(longerr, 'x', sizeof longerr - 1);
    longerr[sizeof longerr - 1] = '\0';
    EXPECT_RC(f, ack(f, &a.v[0], "r1", ONCE_PUSH_RETRY, 1, T0 + 1, 0, T0 + 500, "HTTP 500"),
              ONCE_OK);
    EXPECT_RC(f, ack(f, &a.v[1], "r1", ONCE_PUSH_DISABLE, 1, T0 + 1, 0, 0, longerr), ONCE_OK);
    once_push_claim_list_clear(&a);

    EXPECT_RC(f, once_store_push_claim(f->s, "r1", T0 + 499, 1000, 10, &a), ONCE_OK);
    assert_int_equal(a.n, 0); /* c waits, d is disabled */
    EXPECT_RC(f, once_store_push_claim(f->s, "r2", T0 + 500, 1000, 10, &a), ONCE_OK);
    assert_int_equal(a.n, 1);
    assert_string_equal(a.v[0].config_id, "c");
    assert_int_equal(a.v[0].generation, 1);
    assert_int_equal(a.v[0].attempts, 1);
    EXPECT_RC(f, ack(f, &a.v[0], "r2", ONCE_PUSH_RETRY, 1, T0 + 501, 0, T0 + 600, "timeout"),
              ONCE_OK);
    once_push_claim_list_clear(&a);

    rows_of(f, "p", "t1", &l);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.v[0].attempts, 2);
    assert_int_equal(l.v[0].retries, 2);
    assert_int_equal(l.v[0].failures, 2);
    assert_int_equal(l.v[0].next_attempt_at, T0 + 600);
    assert_string_equal(l.v[0].last_error, "timeout");
    assert_int_equal(l.v[1].disabled, 1);
    assert_int_equal(l.v[1].failures, 1);
    assert_int_equal(l.v[1].retries, 0);
    assert_int_equal(strlen(l.v[1].last_error), ONCE_PUSH_ERROR_MAX); /* truncated */
    once_push_row_list_clear(&l);

    /* Finish the task and sweep it: rows go, acks find nothing. */
    get(f, "p", "t1", &r);
    r.version++;
    r.state = ONCE_STATE_COMPLETED;
    r.finished_at = T0 + 700;
    r.generation = 3;
    st_mkev(&e, 3, 1, "t1");
    EXPECT_RC(f, once_store_update(f->s, &r, r.version - 1, e.ev, 1), ONCE_OK);
    once_record_clear(&r);
    EXPECT_RC(f, once_store_push_claim(f->s, "r1", T0 + 700, 1000, 10, &a), ONCE_OK);
    assert_int_equal(a.n, 1);
    EXPECT_RC(f, once_store_sweep(f->s, T0 + 800, T0 + 800, 10, &n), ONCE_OK);
    assert_int_equal(n, 1);
    rows_of(f, "p", "t1", &l);
    assert_int_equal(l.n, 0);
    EXPECT_RC(f, ack(f, &a.v[0], "r1", ONCE_PUSH_DELIVERED, 1, T0 + 801, 0, 0, NULL),
              ONCE_ENOTFOUND);
    once_push_claim_list_clear(&a);
    EXPECT_RC(f, once_store_push_claim(f->s, "r1", T0 + 5000, 1000, 10, &a), ONCE_OK);
    assert_int_equal(a.n, 0);
}

#define PUSH_THREADS 8
#define PUSH_TASKS 24

typedef struct push_race_arg {
    once_store *s;
    pthread_barrier_t *bar;
    char owner[16];
    once_push_claim_list got;
    int rc;
} push_race_arg;

static void *push_race_worker(void *p)
{
    push_race_arg *a = p;
    once_push_claim_list l;
    size_t i;

    pthread_barrier_wait(a->bar);
    for (int round = 0; round < 8 && a->rc == ONCE_OK; round++) {
        a->rc = once_store_push_claim(a->s, a->owner, T0, 60000, 3, &l);
        for (i = 0; a->rc == ONCE_OK && i < l.n; i++) {
            once_push_claim *g = once_realloc(a->got.v, (a->got.n + 1) * sizeof *g);
            if (!g) {
                a->rc = ONCE_ENOMEM;
                break;
            }
            a->got.v = g;
            a->got.v[a->got.n++] = l.v[i];
        }
        once_push_claim_list_clear(&l);
    }
    return NULL;
}

/* Racing claimers on one handle: every due row goes to exactly one of them. */
static void push_claim_race(void **state)
{
    fx *f = *state;
    push_race_arg args[PUSH_THREADS];
    pthread_t th[PUSH_THREADS];
    pthread_barrier_t bar;
    int seen[PUSH_TASKS] = {0};
    size_t total = 0, i, j;

    NEED_PUSH(f);
    for (i = 0; i < PUSH_TASKS; i++) {
        char id[16];
        snprintf(id, sizeof id, "t%02zu", i);
        put_push(f, "p", id, 1, "[{\"id\":\"c\",\"since\":0}]");
    }
    assert_int_equal(pthread_barrier_init(&bar, NULL, PUSH_THREADS), 0);
    for (i = 0; i < PUSH_THREADS; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].s = f->s;
        args[i].bar = &bar;
        snprintf(args[i].owner, sizeof args[i].owner, "r%zu", i);
        assert_int_equal(pthread_create(&th[i], NULL, push_race_worker, &args[i]), 0);
    }
    for (i = 0; i < PUSH_THREADS; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);
    for (i = 0; i < PUSH_THREADS; i++) {
        if (args[i].rc != ONCE_OK)
            fail_msg("claimer %zu: %s", i, once_errname(args[i].rc));
        for (j = 0; j < args[i].got.n; j++) {
            long k = strtol(args[i].got.v[j].task_id + 1, NULL, 10);
            assert_true(k >= 0 && k < PUSH_TASKS);
            seen[k]++;
            /* the row says who holds it */
            once_push_row_list l;
            rows_of(f, "p", args[i].got.v[j].task_id, &l);
            assert_string_equal(l.v[0].lease_owner, args[i].owner);
            once_push_row_list_clear(&l);
        }
        total += args[i].got.n;
        once_push_claim_list_clear(&args[i].got);
    }
    assert_int_equal(total, PUSH_TASKS);
    for (i = 0; i < PUSH_TASKS; i++)
        assert_int_equal(seen[i], 1);
}

#define PUSH_CASES                                                                                 \
    cmocka_unit_test_setup_teardown(push_capability_honest, setup, teardown),                      \
        cmocka_unit_test_setup_teardown(push_rows_follow_push_json, setup, teardown),              \
        cmocka_unit_test_setup_teardown(push_json_validated, setup, teardown),                     \
        cmocka_unit_test_setup_teardown(push_claim_lease_and_fence, setup, teardown),              \
        cmocka_unit_test_setup_teardown(push_retry_disable_sweep, setup, teardown),                \
        cmocka_unit_test_setup_teardown(push_claim_race, setup, teardown)

#endif
