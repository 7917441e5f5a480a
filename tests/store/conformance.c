/*
 * conformance.c -- THE store conformance suite: one set of cases written
 * against the once_store contract (include/once/store.h) and run unchanged
 * against every backend. The store URL is argv[1]:
 *
 *   memory:            a fresh in-process store per case
 *   sqlite:            a fresh temporary file per case (mkstemp in $TMPDIR)
 *   sqlite:PATH        PATH.<pid>.<case> per case, removed afterwards
 *   anything else      opened as given for every case (it must start empty;
 *                      backends with a server reset themselves in open)
 *
 * Every case ends with check(): whatever a case did, the store must report
 * no integrity problem. The push delivery cases live in push_cases.h, the
 * replica heartbeat cases in replica_cases.h, those of the other optional
 * slots (create_start, budget, synchronous) in optional_cases.h; on a
 * backend without the capability they check the ONCE_EUNSUPPORTED
 * fallback or are reported as skipped. Thread races run on one handle (the contract says
 * every slot is safe from many threads at once); the cross-process races
 * live in race_procs.c and kill9.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/util.h"

static const char *g_url = "memory:";
static int g_case;

/* Per-case fixture. */
typedef struct fx {
    once_store *s;
    char path[PATH_MAX];   /* sqlite file to remove, or "" */
} fx;

#define T0 INT64_C(1700000000000)   /* a fixed "now" for time-based slots */

#define EXPECT_RC(f, got, want)                                                        \
    do {                                                                               \
        int got_ = (got);                                                              \
        if (got_ != (want))                                                            \
            fail_msg("%s = %s, want %s (%s)", #got, once_errname(got_), once_errname(want), \
                     once_store_errmsg((f)->s));                                       \
    } while (0)

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    char url[PATH_MAX + 16];
    char err[256];
    int rc;

    if (!f)
        return -1;
    g_case++;
    if (strcmp(g_url, "sqlite:") == 0) {
        if (st_tmp_path(f->path, sizeof f->path, "conf") != 0)
            return -1;
        snprintf(url, sizeof url, "sqlite:%s", f->path);
    } else if (strncmp(g_url, "sqlite:", 7) == 0) {
        snprintf(f->path, sizeof f->path, "%s.%d.%d", g_url + 7, (int)getpid(), g_case);
        st_remove_db(f->path);
        snprintf(url, sizeof url, "sqlite:%s", f->path);
    } else {
        snprintf(url, sizeof url, "%s", g_url);
    }
    rc = once_store_open(url, NULL, &f->s, err, sizeof err);
    if (rc != ONCE_OK) {
        fprintf(stderr, "open %s: %s: %s\n", url, once_errname(rc), err);
        if (f->path[0])
            st_remove_db(f->path);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    once_check_report rep;
    int rc;

    rc = once_store_check(f->s, &rep);
    once_store_close(f->s);
    if (f->path[0])
        st_remove_db(f->path);
    free(f);
    if (rc != ONCE_OK || !st_clean(&rep)) {
        fprintf(stderr, "check after case: %s, problem: %s\n", once_errname(rc),
                rep.first_problem);
        return -1;
    }
    return 0;
}

/* Create a record built by st_rec with n events (1..n). */
static void put(fx *f, const char *principal, const char *id, once_state st, int64_t created,
                const char *json, size_t n)
{
    once_record r;
    st_events e;

    assert_int_equal(st_rec(&r, principal, id, st, created, json), 0);
    r.generation = (int64_t)n;
    st_mkev(&e, 1, n, id);
    EXPECT_RC(f, once_store_create(f->s, &r, e.ev, n, NULL, NULL), ONCE_OK);
    once_record_clear(&r);
}

static void get(fx *f, const char *principal, const char *id, once_record *out)
{
    EXPECT_RC(f, once_store_load(f->s, principal, id, out, NULL), ONCE_OK);
}

static size_t nevents(fx *f, const char *principal, const char *id)
{
    once_event_list l;
    size_t n;

    EXPECT_RC(f, once_store_events(f->s, principal, id, 0, 0, &l), ONCE_OK);
    n = l.n;
    once_event_list_clear(&l);
    return n;
}

/* An optional string member: NULL stays NULL, text comes back as written. */
static void assert_same_optional(const char *a, const char *b)
{
    if (a) {
        assert_non_null(b);
        assert_string_equal(a, b);
    } else {
        assert_null(b);
    }
}

static void assert_same_record(const once_record *a, const once_record *b)
{
    assert_string_equal(a->principal, b->principal);
    assert_string_equal(a->task_id, b->task_id);
    assert_string_equal(a->context_id, b->context_id);
    assert_int_equal(a->state, b->state);
    assert_int_equal(a->kind, b->kind);
    assert_int_equal(a->version, b->version);
    assert_int_equal(a->generation, b->generation);
    assert_int_equal(a->fence, b->fence);
    assert_int_equal(a->step, b->step);
    assert_string_equal(a->lease_owner, b->lease_owner);
    assert_int_equal(a->lease_until, b->lease_until);
    assert_int_equal(a->created_at, b->created_at);
    assert_int_equal(a->updated_at, b->updated_at);
    assert_int_equal(a->finished_at, b->finished_at);
    assert_non_null(b->digests);
    assert_string_equal(a->digests, b->digests);
    assert_non_null(b->task_json);
    assert_string_equal(a->task_json, b->task_json);
    assert_same_optional(a->checkpoint, b->checkpoint);
    assert_same_optional(a->journal, b->journal);
}

/* ------------------------------------------------------------------------
 * create / load
 */

/* Every field survives create + load, at the size limits, with UTF-8, JSON
 * escapes and a large task_json; events come back as written. */
static void create_load_round_trip(void **state)
{
    fx *f = *state;
    once_record r, got;
    once_event_list l;
    st_events e;
    char principal[ONCE_PRINCIPAL_MAX + 1], id[ONCE_ID_MAX + 1];
    char hex[ONCE_DIGEST_HEX + 1], hex2[ONCE_DIGEST_HEX + 1], lines[200];
    static const char prefix[] = "{\"s\":\"caf\xc3\xa9 \\\"q\\\" \\n \xe2\x82\xac\",\"pad\":\"";
    size_t big = 200 * 1024, i;
    char *json;

    memset(principal, 'p', ONCE_PRINCIPAL_MAX);
    principal[ONCE_PRINCIPAL_MAX] = '\0';
    memset(id, 'I', ONCE_ID_MAX);
    id[ONCE_ID_MAX] = '\0';
    id[0] = '0';
    id[5] = ':';
    id[9] = '.';
    assert_int_equal(st_rec(&r, principal, id, ONCE_STATE_INPUT_REQUIRED, T0, "{}"), 0);
    memset(r.context_id, 'c', ONCE_ID_MAX);
    r.context_id[ONCE_ID_MAX] = '\0';
    r.kind = ONCE_KIND_MESSAGE;
    r.generation = 3;
    r.fence = 7;
    r.step = 11;
    memset(r.lease_owner, 'o', ONCE_OWNER_MAX);
    r.lease_owner[ONCE_OWNER_MAX] = '\0';
    r.lease_until = T0 + 30000;
    r.created_at = T0 - 5;
    r.updated_at = T0 + 9;
    st_hex(hex, 'e');
    st_hex(hex2, '7');
    snprintf(lines, sizeof lines, "%s m-1\n%s \n", hex, hex2);
    once_free(r.digests);
    r.digests = once_strdup(lines);
    json = once_malloc(big + 1);
    assert_non_null(json);
    memcpy(json, prefix, sizeof prefix - 1);
    for (i = sizeof prefix - 1; i < big - 2; i++)
        json[i] = (char)('a' + i % 26);
    memcpy(json + big - 2, "\"}", 3);
    once_free(r.task_json);
    r.task_json = json;
    r.checkpoint = once_strdup("{\"step\":11,\"note\":\"\xc3\xbc\"}");
    r.journal = once_strdup("{\"v\":1,\"entries\":[{\"k\":\"turn\",\"at\":1,\"r\":\"caf\xc3\xa9\"}]}");
    st_mkev(&e, 1, 3, "rt");

    EXPECT_RC(f, once_store_create(f->s, &r, e.ev, 3, NULL, NULL), ONCE_OK);
    get(f, principal, id, &got);
    assert_same_record(&r, &got);
    once_record_clear(&got);

    EXPECT_RC(f, once_store_events(f->s, principal, id, 0, 0, &l), ONCE_OK);
    assert_int_equal(l.n, 3);
    for (i = 0; i < 3; i++) {
        assert_int_equal(l.v[i].generation, (int64_t)i + 1);
        assert_string_equal(l.v[i].payload, e.text[i]);
    }
    once_event_list_clear(&l);
    once_record_clear(&r);

    /* A terminal record with no events, an empty digests string and no
     * checkpoint: NULL stays NULL, "" stays "". */
    assert_int_equal(st_rec(&r, "p2", "t-term", ONCE_STATE_COMPLETED, T0, "{\"k\":1}"), 0);
    once_free(r.digests);
    r.digests = once_strdup("");
    r.finished_at = T0 + 1234;
    EXPECT_RC(f, once_store_create(f->s, &r, NULL, 0, NULL, NULL), ONCE_OK);
    get(f, "p2", "t-term", &got);
    assert_same_record(&r, &got);
    once_record_clear(&got);
    once_record_clear(&r);
}

static void load_not_found(void **state)
{
    fx *f = *state;
    once_record got;
    once_tombstone t;

    memset(&got, 0x5a, sizeof got);
    memset(&t, 0x5a, sizeof t);
    EXPECT_RC(f, once_store_load(f->s, "anonymous", "nope", &got, &t), ONCE_ENOTFOUND);
    assert_null(got.task_json);
    assert_int_equal(got.version, 0);
    once_record_clear(&got);
    put(f, "anonymous", "t-1", ONCE_STATE_SUBMITTED, T0, NULL, 0);
    EXPECT_RC(f, once_store_load(f->s, "someone-else", "t-1", &got, NULL), ONCE_ENOTFOUND);
    EXPECT_RC(f, once_store_load(f->s, "anonymous", "t-2", &got, NULL), ONCE_ENOTFOUND);
    EXPECT_RC(f, once_store_load(f->s, "anonymous", "t-1", &got, NULL), ONCE_OK);
    once_record_clear(&got);
}

/* The loser of a create gets the winner's record; nothing of its own is
 * written (neither record nor events). */
static void create_exists_returns_winner(void **state)
{
    fx *f = *state;
    once_record a, b, w, got;
    once_event_list l;
    st_events ea, eb;

    assert_int_equal(st_rec(&a, "pr", "t-x", ONCE_STATE_WORKING, T0, "{\"who\":\"winner\"}"), 0);
    a.generation = 1;
    a.fence = 4;
    snprintf(a.lease_owner, sizeof a.lease_owner, "replica-a");
    a.lease_until = T0 + 100;
    st_mkev(&ea, 1, 1, "winner");
    EXPECT_RC(f, once_store_create(f->s, &a, ea.ev, 1, NULL, NULL), ONCE_OK);

    assert_int_equal(st_rec(&b, "pr", "t-x", ONCE_STATE_SUBMITTED, T0 + 7, "{\"who\":\"loser\"}"),
                     0);
    b.generation = 2;
    snprintf(b.context_id, sizeof b.context_id, "other-ctx");
    st_mkev(&eb, 1, 2, "loser");
    EXPECT_RC(f, once_store_create(f->s, &b, eb.ev, 2, &w, NULL), ONCE_EEXISTS);
    assert_same_record(&a, &w);
    once_record_clear(&w);
    /* winner may be NULL */
    EXPECT_RC(f, once_store_create(f->s, &b, eb.ev, 2, NULL, NULL), ONCE_EEXISTS);

    get(f, "pr", "t-x", &got);
    assert_same_record(&a, &got);
    once_record_clear(&got);
    EXPECT_RC(f, once_store_events(f->s, "pr", "t-x", 0, 0, &l), ONCE_OK);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.v[0].payload, ea.text[0]);
    once_event_list_clear(&l);
    once_record_clear(&a);
    once_record_clear(&b);
}

/* 64 threads create one key, each with its own marker: exactly one wins and
 * every loser sees the winner's marker. Several keys, to give the race more
 * chances. */
#define RACE_THREADS 64
#define RACE_KEYS 4

typedef struct race_arg {
    once_store *s;
    pthread_barrier_t *bar;
    const char *key;
    int idx;
    int rc;
    char seen[64];      /* winner's task_json on EEXISTS */
    int fail;           /* setup trouble in the thread */
} race_arg;

static void *race_create(void *p)
{
    race_arg *a = p;
    once_record r, w;
    st_events e;
    char json[64];

    snprintf(json, sizeof json, "{\"marker\":%d}", a->idx);
    if (st_rec(&r, "racer", a->key, ONCE_STATE_WORKING, T0, json) != 0) {
        a->fail = 1;
        pthread_barrier_wait(a->bar);
        return NULL;
    }
    r.generation = 1;
    st_mkev(&e, 1, 1, "race");
    pthread_barrier_wait(a->bar);
    a->rc = once_store_create(a->s, &r, e.ev, 1, &w, NULL);
    if (a->rc == ONCE_EEXISTS && w.task_json)
        snprintf(a->seen, sizeof a->seen, "%s", w.task_json);
    once_record_clear(&w);
    once_record_clear(&r);
    return NULL;
}

static void race_create_if_absent(void **state)
{
    fx *f = *state;
    static race_arg args[RACE_THREADS];
    pthread_t th[RACE_THREADS];
    pthread_barrier_t bar;
    char key[32], want[64];
    once_record got;
    int k, i, winners, winner;

    for (k = 0; k < RACE_KEYS; k++) {
        snprintf(key, sizeof key, "race-%d", k);
        assert_int_equal(pthread_barrier_init(&bar, NULL, RACE_THREADS), 0);
        for (i = 0; i < RACE_THREADS; i++) {
            memset(&args[i], 0, sizeof args[i]);
            args[i].s = f->s;
            args[i].bar = &bar;
            args[i].key = key;
            args[i].idx = i;
            assert_int_equal(pthread_create(&th[i], NULL, race_create, &args[i]), 0);
        }
        for (i = 0; i < RACE_THREADS; i++)
            pthread_join(th[i], NULL);
        pthread_barrier_destroy(&bar);

        winners = 0;
        winner = -1;
        for (i = 0; i < RACE_THREADS; i++) {
            assert_false(args[i].fail);
            if (args[i].rc == ONCE_OK) {
                winners++;
                winner = i;
            } else if (args[i].rc != ONCE_EEXISTS) {
                fail_msg("thread %d: %s", i, once_errname(args[i].rc));
            }
        }
        assert_int_equal(winners, 1);
        snprintf(want, sizeof want, "{\"marker\":%d}", winner);
        for (i = 0; i < RACE_THREADS; i++)
            if (i != winner)
                assert_string_equal(args[i].seen, want);
        get(f, "racer", key, &got);
        assert_string_equal(got.task_json, want);
        assert_int_equal(got.version, 1);
        once_record_clear(&got);
        assert_int_equal(nevents(f, "racer", key), 1);
    }
}

/* ------------------------------------------------------------------------
 * update (CAS)
 */

static void cas_update_appends_events(void **state)
{
    fx *f = *state;
    once_record r, got;
    once_event_list l;
    st_events e;

    put(f, "p", "t-cas", ONCE_STATE_SUBMITTED, T0, "{\"v\":1}", 1);
    get(f, "p", "t-cas", &r);
    r.version = 2;
    r.generation = 3;
    r.state = ONCE_STATE_INPUT_REQUIRED;
    r.fence = 2;
    r.step = 5;
    snprintf(r.lease_owner, sizeof r.lease_owner, "replica-b");
    r.lease_until = T0 + 500;
    r.updated_at = T0 + 50;
    assert_int_equal(st_set_json(&r, "{\"v\":2}"), 0);
    r.checkpoint = once_strdup("ck-2");
    r.journal = once_strdup("{\"v\":1,\"replays\":{\"n\":2,\"last\":5}}");
    st_mkev(&e, 2, 2, "cas");
    EXPECT_RC(f, once_store_update(f->s, &r, 1, e.ev, 2), ONCE_OK);
    get(f, "p", "t-cas", &got);
    assert_same_record(&r, &got);
    once_record_clear(&got);

    EXPECT_RC(f, once_store_events(f->s, "p", "t-cas", 0, 0, &l), ONCE_OK);
    assert_int_equal(l.n, 3);
    assert_int_equal(l.v[0].generation, 1);
    assert_int_equal(l.v[1].generation, 2);
    assert_string_equal(l.v[1].payload, e.text[0]);
    assert_int_equal(l.v[2].generation, 3);
    assert_string_equal(l.v[2].payload, e.text[1]);
    once_event_list_clear(&l);

    /* A write without events (a lease heartbeat) keeps the generation. */
    r.version = 3;
    r.lease_until = T0 + 900;
    once_free(r.checkpoint);
    r.checkpoint = NULL;
    once_free(r.journal);
    r.journal = NULL;
    EXPECT_RC(f, once_store_update(f->s, &r, 2, NULL, 0), ONCE_OK);
    get(f, "p", "t-cas", &got);
    assert_same_record(&r, &got);
    once_record_clear(&got);
    assert_int_equal(nevents(f, "p", "t-cas"), 3);

    /* To a terminal state. */
    r.version = 4;
    r.generation = 4;
    r.state = ONCE_STATE_COMPLETED;
    r.finished_at = T0 + 1000;
    r.lease_owner[0] = '\0';
    r.lease_until = 0;
    st_mkev(&e, 4, 1, "done");
    EXPECT_RC(f, once_store_update(f->s, &r, 3, e.ev, 1), ONCE_OK);
    get(f, "p", "t-cas", &got);
    assert_same_record(&r, &got);
    once_record_clear(&got);
    once_record_clear(&r);
}

static void stale_update_conflicts(void **state)
{
    fx *f = *state;
    once_record r, stale, got;
    once_event_list l;
    st_events e;

    put(f, "p", "t-st", ONCE_STATE_WORKING, T0, "{\"v\":1}", 1);
    get(f, "p", "t-st", &r);
    assert_int_equal(once_record_copy(&stale, &r), ONCE_OK);
    r.version = 2;
    r.generation = 2;
    assert_int_equal(st_set_json(&r, "{\"v\":2}"), 0);
    st_mkev(&e, 2, 1, "first");
    EXPECT_RC(f, once_store_update(f->s, &r, 1, e.ev, 1), ONCE_OK);

    /* The second writer read version 1 too. */
    stale.version = 2;
    stale.generation = 2;
    assert_int_equal(st_set_json(&stale, "{\"v\":\"stale\"}"), 0);
    st_mkev(&e, 2, 1, "stale");
    EXPECT_RC(f, once_store_update(f->s, &stale, 1, e.ev, 1), ONCE_ECONFLICT);
    /* A version from the future conflicts as well. */
    stale.version = 4;
    stale.generation = 3;
    st_mkev(&e, 3, 1, "future");
    EXPECT_RC(f, once_store_update(f->s, &stale, 3, e.ev, 1), ONCE_ECONFLICT);

    get(f, "p", "t-st", &got);
    assert_same_record(&r, &got);
    once_record_clear(&got);
    EXPECT_RC(f, once_store_events(f->s, "p", "t-st", 0, 0, &l), ONCE_OK);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.v[1].payload, "{\"g\":2,\"tag\":\"first\"}");
    once_event_list_clear(&l);
    once_record_clear(&r);
    once_record_clear(&stale);
}

static void update_missing_conflicts(void **state)
{
    fx *f = *state;
    once_record r, got;
    st_events e;

    assert_int_equal(st_rec(&r, "p", "t-missing", ONCE_STATE_WORKING, T0, NULL), 0);
    r.version = 2;
    r.generation = 1;
    st_mkev(&e, 1, 1, "m");
    EXPECT_RC(f, once_store_update(f->s, &r, 1, e.ev, 1), ONCE_ECONFLICT);
    EXPECT_RC(f, once_store_load(f->s, "p", "t-missing", &got, NULL), ONCE_ENOTFOUND);
    assert_int_equal(nevents(f, "p", "t-missing"), 0);
    once_record_clear(&r);
}

/* Every malformed write is refused with EINVAL and changes nothing. */
static void bad_event_numbering_rejected(void **state)
{
    fx *f = *state;
    once_record base, r, got;
    st_events e;
    once_check_report rep;
    static const struct {
        int64_t version, generation, first;
        size_t nev;
        int null_payload;
    } bad[] = {
        {2, 3, 3, 1, 0},  /* skips generation 2 */
        {2, 3, 2, 1, 0},  /* count short of rec->generation */
        {2, 2, 1, 1, 0},  /* restarts numbering at 1 */
        {2, 2, 0, 0, 0},  /* generation moved without an event */
        {2, 1, 2, 1, 0},  /* an event the generation does not count */
        {2, 0, 0, 0, 0},  /* generation goes backwards */
        {3, 2, 2, 1, 0},  /* version is not expect + 1 */
        {1, 2, 2, 1, 0},  /* version not bumped */
        {2, 2, 2, 1, 1},  /* NULL payload */
    };
    size_t i;

    put(f, "p", "t-bad", ONCE_STATE_WORKING, T0, "{\"v\":1}", 1);
    get(f, "p", "t-bad", &base);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(once_record_copy(&r, &base), ONCE_OK);
        r.version = bad[i].version;
        r.generation = bad[i].generation;
        assert_int_equal(st_set_json(&r, "{\"v\":\"bad\"}"), 0);
        st_mkev(&e, bad[i].first, bad[i].nev, "bad");
        if (bad[i].null_payload)
            e.ev[0].payload = NULL;
        if (once_store_update(f->s, &r, 1, e.ev, bad[i].nev) != ONCE_EINVAL)
            fail_msg("bad update %zu was not refused with EINVAL", i);
        once_record_clear(&r);
        get(f, "p", "t-bad", &got);
        assert_same_record(&base, &got);
        once_record_clear(&got);
        assert_int_equal(nevents(f, "p", "t-bad"), 1);
    }

    /* Creates: version must be 1, events 1..generation. */
    assert_int_equal(st_rec(&r, "p", "t-bad-create", ONCE_STATE_WORKING, T0, NULL), 0);
    r.generation = 2;
    st_mkev(&e, 2, 2, "c");
    EXPECT_RC(f, once_store_create(f->s, &r, e.ev, 2, NULL, NULL), ONCE_EINVAL);
    st_mkev(&e, 1, 1, "c");
    EXPECT_RC(f, once_store_create(f->s, &r, e.ev, 1, NULL, NULL), ONCE_EINVAL);
    r.generation = 1;
    r.version = 2;
    EXPECT_RC(f, once_store_create(f->s, &r, e.ev, 1, NULL, NULL), ONCE_EINVAL);
    r.version = 1;
    /* Records the contract says a store never holds. */
    r.state = ONCE_STATE_UNKNOWN;
    EXPECT_RC(f, once_store_create(f->s, &r, e.ev, 1, NULL, NULL), ONCE_EINVAL);
    r.state = ONCE_STATE_WORKING;
    once_free(r.task_json);
    r.task_json = NULL;
    EXPECT_RC(f, once_store_create(f->s, &r, e.ev, 1, NULL, NULL), ONCE_EINVAL);
    memset(&got, 0, sizeof got);      /* empty key */
    got.task_json = "{}";
    got.digests = "";
    got.state = ONCE_STATE_WORKING;
    got.version = 1;
    EXPECT_RC(f, once_store_create(f->s, &got, NULL, 0, NULL, NULL), ONCE_EINVAL);
    EXPECT_RC(f, once_store_load(f->s, "p", "", &got, NULL), ONCE_EINVAL);
    EXPECT_RC(f, once_store_load(f->s, "p", "t-bad-create", &got, NULL), ONCE_ENOTFOUND);
    assert_int_equal(nevents(f, "p", "t-bad-create"), 0);
    once_record_clear(&r);
    once_record_clear(&base);

    EXPECT_RC(f, once_store_check(f->s, &rep), ONCE_OK);
    assert_int_equal(rep.records, 1);
    assert_int_equal(rep.events, 1);
}

/* 16 threads CAS-increment one record: every success is one version and one
 * event, no success is lost, no event is skipped or doubled. */
#define CAS_THREADS 16
#define CAS_ATTEMPTS 25

typedef struct cas_arg {
    once_store *s;
    pthread_barrier_t *bar;
    int idx;
    int ok, conflicts, other;
} cas_arg;

static void *cas_worker(void *p)
{
    cas_arg *a = p;
    once_record r;
    st_events e;
    char json[64];
    int k, rc;

    pthread_barrier_wait(a->bar);
    for (k = 0; k < CAS_ATTEMPTS; k++) {
        int64_t expect;
        rc = once_store_load(a->s, "cas", "t-counter", &r, NULL);
        if (rc != ONCE_OK) {
            a->other++;
            continue;
        }
        expect = r.version;
        r.version++;
        r.generation++;
        snprintf(json, sizeof json, "{\"by\":%d,\"k\":%d}", a->idx, k);
        if (st_set_json(&r, json) != 0) {
            a->other++;
            once_record_clear(&r);
            continue;
        }
        st_mkev(&e, r.generation, 1, "inc");
        rc = once_store_update(a->s, &r, expect, e.ev, 1);
        if (rc == ONCE_OK)
            a->ok++;
        else if (rc == ONCE_ECONFLICT)
            a->conflicts++;
        else
            a->other++;
        once_record_clear(&r);
    }
    return NULL;
}

static void race_cas_increments(void **state)
{
    fx *f = *state;
    cas_arg args[CAS_THREADS];
    pthread_t th[CAS_THREADS];
    pthread_barrier_t bar;
    once_event_list l;
    once_record got;
    int i, ok = 0;
    size_t j;

    put(f, "cas", "t-counter", ONCE_STATE_WORKING, T0, NULL, 1);
    assert_int_equal(pthread_barrier_init(&bar, NULL, CAS_THREADS), 0);
    for (i = 0; i < CAS_THREADS; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].s = f->s;
        args[i].bar = &bar;
        args[i].idx = i;
        assert_int_equal(pthread_create(&th[i], NULL, cas_worker, &args[i]), 0);
    }
    for (i = 0; i < CAS_THREADS; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);
    for (i = 0; i < CAS_THREADS; i++) {
        if (args[i].other)
            fail_msg("thread %d: %d unexpected results", i, args[i].other);
        ok += args[i].ok;
    }
    assert_true(ok >= 1);

    get(f, "cas", "t-counter", &got);
    assert_int_equal(got.version, 1 + ok);
    assert_int_equal(got.generation, 1 + ok);
    EXPECT_RC(f, once_store_events(f->s, "cas", "t-counter", 0, 0, &l), ONCE_OK);
    assert_int_equal(l.n, (size_t)got.generation);
    for (j = 0; j < l.n; j++)
        assert_int_equal(l.v[j].generation, (int64_t)j + 1);
    once_event_list_clear(&l);
    once_record_clear(&got);
}

/* ------------------------------------------------------------------------
 * events
 */

static void events_paging(void **state)
{
    fx *f = *state;
    once_event_list l;
    once_record r;
    st_events e;
    int64_t after = 0;
    size_t pages = 0, seen = 0, i;

    put(f, "p", "t-ev", ONCE_STATE_WORKING, T0, NULL, 4);
    get(f, "p", "t-ev", &r);
    r.version = 2;
    r.generation = 10;
    st_mkev(&e, 5, 6, "t-ev");
    EXPECT_RC(f, once_store_update(f->s, &r, 1, e.ev, 6), ONCE_OK);
    once_record_clear(&r);

    /* Pages of 3 from the start: 3, 3, 3, 1, then empty. */
    for (;;) {
        EXPECT_RC(f, once_store_events(f->s, "p", "t-ev", after, 3, &l), ONCE_OK);
        if (l.n == 0)
            break;
        assert_true(l.n <= 3);
        for (i = 0; i < l.n; i++) {
            char want[96];
            assert_int_equal(l.v[i].generation, after + 1);
            snprintf(want, sizeof want, "{\"g\":%lld,\"tag\":\"t-ev\"}", (long long)after + 1);
            assert_string_equal(l.v[i].payload, want);
            after = l.v[i].generation;
        }
        seen += l.n;
        pages++;
        once_event_list_clear(&l);
        assert_true(pages <= 4);
    }
    assert_int_equal(seen, 10);
    assert_int_equal(pages, 4);

    EXPECT_RC(f, once_store_events(f->s, "p", "t-ev", 7, 0, &l), ONCE_OK);
    assert_int_equal(l.n, 3);
    assert_int_equal(l.v[0].generation, 8);
    assert_int_equal(l.v[2].generation, 10);
    once_event_list_clear(&l);
    EXPECT_RC(f, once_store_events(f->s, "p", "t-ev", 10, 5, &l), ONCE_OK);
    assert_int_equal(l.n, 0);
    once_event_list_clear(&l);
    EXPECT_RC(f, once_store_events(f->s, "p", "t-ev", 9, 5, &l), ONCE_OK);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.v[0].generation, 10);
    once_event_list_clear(&l);
    /* A missing key is an empty list, not an error. */
    EXPECT_RC(f, once_store_events(f->s, "p", "t-nothing", 0, 0, &l), ONCE_OK);
    assert_int_equal(l.n, 0);
    once_event_list_clear(&l);
}

/* ------------------------------------------------------------------------
 * leases, sweep, purge
 */

static void put_lease(fx *f, const char *principal, const char *id, once_state st,
                      int64_t lease_until)
{
    once_record r;

    assert_int_equal(st_rec(&r, principal, id, st, T0 - 100000, NULL), 0);
    snprintf(r.lease_owner, sizeof r.lease_owner, "%s", lease_until ? "replica-a" : "");
    r.lease_until = lease_until;
    EXPECT_RC(f, once_store_create(f->s, &r, NULL, 0, NULL, NULL), ONCE_OK);
    once_record_clear(&r);
}

static void expired_leases_only_live_expired(void **state)
{
    fx *f = *state;
    once_key_list k;
    once_record r;

    put_lease(f, "p", "a", ONCE_STATE_WORKING, T0 - 1000);
    put_lease(f, "p", "b", ONCE_STATE_WORKING, T0 - 5000);
    put_lease(f, "p", "c-nolease", ONCE_STATE_WORKING, 0);
    put_lease(f, "p", "d-now", ONCE_STATE_WORKING, T0);
    put_lease(f, "p", "e-future", ONCE_STATE_WORKING, T0 + 1000);
    put_lease(f, "p", "f-terminal", ONCE_STATE_COMPLETED, T0 - 9000);
    put_lease(f, "q", "g", ONCE_STATE_SUBMITTED, T0 - 3000);
    put_lease(f, "p", "h", ONCE_STATE_INPUT_REQUIRED, T0 - 2000);

    EXPECT_RC(f, once_store_expired_leases(f->s, T0, 10, &k), ONCE_OK);
    assert_int_equal(k.n, 4);
    assert_string_equal(k.v[0].task_id, "b");
    assert_string_equal(k.v[0].principal, "p");
    assert_string_equal(k.v[1].task_id, "g");
    assert_string_equal(k.v[1].principal, "q");
    assert_string_equal(k.v[2].task_id, "h");
    assert_string_equal(k.v[3].task_id, "a");
    once_key_list_clear(&k);

    EXPECT_RC(f, once_store_expired_leases(f->s, T0, 2, &k), ONCE_OK);
    assert_int_equal(k.n, 2);
    assert_string_equal(k.v[0].task_id, "b");
    assert_string_equal(k.v[1].task_id, "g");
    once_key_list_clear(&k);

    /* Claiming (a CAS that renews the lease) takes it off the list. */
    get(f, "p", "b", &r);
    r.version = 2;
    r.fence = 2;
    r.lease_until = T0 + 60000;
    EXPECT_RC(f, once_store_update(f->s, &r, 1, NULL, 0), ONCE_OK);
    once_record_clear(&r);
    EXPECT_RC(f, once_store_expired_leases(f->s, T0, 10, &k), ONCE_OK);
    assert_int_equal(k.n, 3);
    assert_string_equal(k.v[0].task_id, "g");
    once_key_list_clear(&k);

    /* Earlier "now": only leases that ended before it. */
    EXPECT_RC(f, once_store_expired_leases(f->s, T0 - 2500, 10, &k), ONCE_OK);
    assert_int_equal(k.n, 1);
    assert_string_equal(k.v[0].task_id, "g");
    once_key_list_clear(&k);
}

/* A finished record with 3 events, digests "<e..> m1\n<7..> m2\n". */
static void put_finished(fx *f, const char *principal, const char *id, once_state st,
                         int64_t finished_at)
{
    once_record r;
    st_events e;
    char a[ONCE_DIGEST_HEX + 1], b[ONCE_DIGEST_HEX + 1], lines[160];

    assert_int_equal(st_rec(&r, principal, id, st, finished_at - 10, NULL), 0);
    r.finished_at = finished_at;
    r.generation = 3;
    st_hex(a, 'e');
    st_hex(b, '7');
    snprintf(lines, sizeof lines, "%s m1\n%s m2\n", a, b);
    once_free(r.digests);
    r.digests = once_strdup(lines);
    st_mkev(&e, 1, 3, id);
    EXPECT_RC(f, once_store_create(f->s, &r, e.ev, 3, NULL, NULL), ONCE_OK);
    once_record_clear(&r);
}

static void assert_tomb(fx *f, const char *principal, const char *id, int64_t finished_at,
                        int64_t expired_at)
{
    once_record got;
    once_tombstone t;
    char hex[ONCE_DIGEST_HEX + 1];

    memset(&got, 0x5a, sizeof got);
    EXPECT_RC(f, once_store_load(f->s, principal, id, &got, &t), ONCE_ETOMBSTONE);
    assert_null(got.task_json);
    assert_int_equal(got.version, 0);
    assert_string_equal(t.principal, principal);
    assert_string_equal(t.task_id, id);
    st_hex(hex, 'e');
    assert_string_equal(t.first_digest, hex);
    assert_int_equal(t.finished_at, finished_at);
    assert_int_equal(t.expired_at, expired_at);
}

/* How many of principal's records one page (of up to 100) lists under the
 * filter. */
/* One call of list: checks the page's shape, takes a ONCE_KIND_RESUME
 * record off its end (store.h, the list slot) and moves q's cursor (kept in
 * after[]) past the page. *more: whether another call may find more. */
static void list_step(fx *f, once_list_query *q, once_record_list *l,
                      char after[ONCE_ID_MAX + 1], int *more, int *resumed)
{
    EXPECT_RC(f, once_store_list(f->s, q, l), ONCE_OK);
    assert_true(l->n <= q->limit);
    *resumed = l->n > 0 && l->v[l->n - 1].kind == ONCE_KIND_RESUME;
    if (*resumed) {
        const once_record *m = &l->v[l->n - 1];
        assert_true(!(once_store_caps(f->s) & ONCE_STORE_LIST_SEEK));
        assert_true(once_id_valid(m->task_id));
        assert_null(m->task_json);
        /* The marker moves the cursor forward. */
        if (q->after_task_id)
            assert_true(m->created_at > q->after_created_at ||
                        (m->created_at == q->after_created_at &&
                         strcmp(m->task_id, q->after_task_id) > 0));
    }
    for (size_t i = 0; i + (size_t)*resumed < l->n; i++) {
        assert_int_not_equal(l->v[i].kind, ONCE_KIND_RESUME);
        assert_string_equal(l->v[i].principal, q->principal);
        assert_non_null(l->v[i].task_json);
        if (q->context_id)
            assert_string_equal(l->v[i].context_id, q->context_id);
        if (q->state != ONCE_STATE_UNKNOWN)
            assert_int_equal(l->v[i].state, q->state);
    }
    *more = *resumed || l->n == q->limit;
    if (l->n > 0) {
        snprintf(after, ONCE_ID_MAX + 1, "%s", l->v[l->n - 1].task_id);
        q->after_created_at = l->v[l->n - 1].created_at;
        q->after_task_id = after;
    }
    if (*resumed)
        once_record_clear(&l->v[--l->n]);
}

/* How many records (principal, filter) lists, following every page. */
static size_t nlisted(fx *f, const char *principal, const char *ctx, once_state st)
{
    once_list_query q = {.principal = principal, .context_id = ctx, .state = st, .limit = 100};
    once_record_list l;
    char after[ONCE_ID_MAX + 1];
    size_t n = 0;
    int more = 1, resumed;
    while (more) {
        list_step(f, &q, &l, after, &more, &resumed);
        n += l.n;
        once_record_list_clear(&l);
    }
    return n;
}

static void sweep_makes_tombstones(void **state)
{
    fx *f = *state;
    once_record r, w;
    once_tombstone t;
    once_check_report rep;
    once_key_list k;
    once_record_list l;
    once_list_query q = {.principal = "p", .limit = 100};
    size_t n;

    put_finished(f, "p", "t1", ONCE_STATE_COMPLETED, T0 - 100);
    put_finished(f, "p", "t2", ONCE_STATE_FAILED, T0 - 50);
    put_finished(f, "p", "t3", ONCE_STATE_CANCELED, T0);        /* not before the cutoff */
    put_finished(f, "p", "t4", ONCE_STATE_REJECTED, T0 + 10);
    put_lease(f, "p", "t5", ONCE_STATE_WORKING, T0 - 99999);     /* live, however old */
    put_lease(f, "p", "t6", ONCE_STATE_INPUT_REQUIRED, 0);

    EXPECT_RC(f, once_store_sweep(f->s, T0, T0 + 500, 1, &n), ONCE_OK);
    assert_int_equal(n, 1);
    EXPECT_RC(f, once_store_sweep(f->s, T0, T0 + 500, 100, &n), ONCE_OK);
    assert_int_equal(n, 1);
    EXPECT_RC(f, once_store_sweep(f->s, T0, T0 + 500, 100, &n), ONCE_OK);
    assert_int_equal(n, 0);

    assert_tomb(f, "p", "t1", T0 - 100, T0 + 500);
    assert_tomb(f, "p", "t2", T0 - 50, T0 + 500);
    assert_int_equal(nevents(f, "p", "t1"), 0);
    assert_int_equal(nevents(f, "p", "t2"), 0);
    get(f, "p", "t3", &r);
    once_record_clear(&r);
    get(f, "p", "t4", &r);
    once_record_clear(&r);
    get(f, "p", "t5", &r);
    once_record_clear(&r);
    assert_int_equal(nevents(f, "p", "t3"), 3);

    /* A tombstoned key refuses create (with the tombstone) and update. */
    assert_int_equal(st_rec(&r, "p", "t1", ONCE_STATE_SUBMITTED, T0 + 600, NULL), 0);
    EXPECT_RC(f, once_store_create(f->s, &r, NULL, 0, &w, &t), ONCE_ETOMBSTONE);
    assert_null(w.task_json);
    assert_string_equal(t.task_id, "t1");
    assert_int_equal(t.finished_at, T0 - 100);
    assert_int_equal(t.expired_at, T0 + 500);
    EXPECT_RC(f, once_store_create(f->s, &r, NULL, 0, NULL, NULL), ONCE_ETOMBSTONE);
    r.version = 2;
    EXPECT_RC(f, once_store_update(f->s, &r, 1, NULL, 0), ONCE_ECONFLICT);
    once_record_clear(&r);
    assert_tomb(f, "p", "t1", T0 - 100, T0 + 500);

    /* Tombstones are not listed, whatever the filter, and hold no lease. */
    EXPECT_RC(f, once_store_list(f->s, &q, &l), ONCE_OK);
    assert_int_equal(l.n, 4);
    once_record_list_clear(&l);
    assert_int_equal(nlisted(f, "p", "ctx-0", ONCE_STATE_UNKNOWN), 4);
    assert_int_equal(nlisted(f, "p", NULL, ONCE_STATE_COMPLETED), 0);
    assert_int_equal(nlisted(f, "p", "ctx-0", ONCE_STATE_FAILED), 0);
    assert_int_equal(nlisted(f, "p", "ctx-0", ONCE_STATE_CANCELED), 1);
    EXPECT_RC(f, once_store_expired_leases(f->s, T0 + 1000000, 10, &k), ONCE_OK);
    assert_int_equal(k.n, 1);
    assert_string_equal(k.v[0].task_id, "t5");
    once_key_list_clear(&k);

    EXPECT_RC(f, once_store_check(f->s, &rep), ONCE_OK);
    assert_true(st_clean(&rep));
    assert_int_equal(rep.records, 4);
    assert_int_equal(rep.tombstones, 2);
    assert_int_equal(rep.events, 6);
}

/* The generations slot (ONCE_STORE_GENERATIONS): a live record's
 * generation, -1 for an absent key, a tombstone and another principal's
 * key, in the order asked, including the same key twice; after an update
 * the new generation; bad calls refused. A backend without the capability
 * answers ONCE_EUNSUPPORTED. */
static void generations_batch(void **state)
{
    fx *f = *state;
    once_key k[6];
    int64_t g[ONCE_STORE_GENERATIONS_MAX + 1];
    size_t n;

    memset(k, 0, sizeof k);
    put(f, "p", "live", ONCE_STATE_WORKING, T0, NULL, 2);
    put_finished(f, "p", "gone", ONCE_STATE_COMPLETED, T0 - 100);
    EXPECT_RC(f, once_store_sweep(f->s, T0, T0 + 1000, 10, &n), ONCE_OK);
    assert_int_equal(n, 1);
    const char *ask[6][2] = {{"p", "live"}, {"p", "absent"}, {"p", "gone"},
                             {"q", "live"}, {"p", "live"}, {"p", "absent2"}};
    for (int i = 0; i < 6; i++) {
        snprintf(k[i].principal, sizeof k[i].principal, "%s", ask[i][0]);
        snprintf(k[i].task_id, sizeof k[i].task_id, "%s", ask[i][1]);
    }
    if (!(once_store_caps(f->s) & ONCE_STORE_GENERATIONS)) {
        assert_int_equal(once_store_generations(f->s, k, 6, g), ONCE_EUNSUPPORTED);
        return;
    }
    EXPECT_RC(f, once_store_generations(f->s, k, 6, g), ONCE_OK);
    assert_int_equal(g[0], 2);
    assert_int_equal(g[1], -1);
    assert_int_equal(g[2], -1);
    assert_int_equal(g[3], -1);
    assert_int_equal(g[4], 2);
    assert_int_equal(g[5], -1);

    once_record r;
    st_events e;
    get(f, "p", "live", &r);
    st_mkev(&e, 3, 3, "live");
    r.version++;
    r.generation = 5;
    EXPECT_RC(f, once_store_update(f->s, &r, r.version - 1, e.ev, 3), ONCE_OK);
    once_record_clear(&r);
    EXPECT_RC(f, once_store_generations(f->s, k, 1, g), ONCE_OK);
    assert_int_equal(g[0], 5);

    assert_int_equal(once_store_generations(f->s, k, 0, g), ONCE_EINVAL);
    once_key many[ONCE_STORE_GENERATIONS_MAX + 1];
    for (size_t i = 0; i <= ONCE_STORE_GENERATIONS_MAX; i++)
        many[i] = k[0];
    assert_int_equal(once_store_generations(f->s, many, ONCE_STORE_GENERATIONS_MAX + 1, g),
                     ONCE_EINVAL);
    EXPECT_RC(f, once_store_generations(f->s, many, ONCE_STORE_GENERATIONS_MAX, g), ONCE_OK);
    assert_int_equal(g[ONCE_STORE_GENERATIONS_MAX - 1], 5);
}

static void purge_forgets_tombstones(void **state)
{
    fx *f = *state;
    once_record r, got;
    size_t n;

    put_finished(f, "p", "old", ONCE_STATE_COMPLETED, T0 - 100);
    put_finished(f, "p", "young", ONCE_STATE_COMPLETED, T0 + 100);
    EXPECT_RC(f, once_store_sweep(f->s, T0, T0 + 1000, 10, &n), ONCE_OK);
    assert_int_equal(n, 1);
    EXPECT_RC(f, once_store_sweep(f->s, T0 + 200, T0 + 2000, 10, &n), ONCE_OK);
    assert_int_equal(n, 1);

    EXPECT_RC(f, once_store_purge(f->s, T0 + 1000, 10, &n), ONCE_OK);   /* strict < */
    assert_int_equal(n, 0);
    EXPECT_RC(f, once_store_purge(f->s, T0 + 1001, 10, &n), ONCE_OK);
    assert_int_equal(n, 1);
    EXPECT_RC(f, once_store_load(f->s, "p", "old", &got, NULL), ONCE_ENOTFOUND);
    assert_tomb(f, "p", "young", T0 + 100, T0 + 2000);

    /* The key is free again. */
    assert_int_equal(st_rec(&r, "p", "old", ONCE_STATE_SUBMITTED, T0 + 3000, "{\"again\":1}"), 0);
    r.generation = 1;
    {
        st_events e;
        st_mkev(&e, 1, 1, "again");
        EXPECT_RC(f, once_store_create(f->s, &r, e.ev, 1, NULL, NULL), ONCE_OK);
    }
    get(f, "p", "old", &got);
    assert_same_record(&r, &got);
    once_record_clear(&got);
    once_record_clear(&r);
    assert_int_equal(nevents(f, "p", "old"), 1);

    EXPECT_RC(f, once_store_purge(f->s, T0 + 5000, 1, &n), ONCE_OK);
    assert_int_equal(n, 1);
    EXPECT_RC(f, once_store_load(f->s, "p", "young", &got, NULL), ONCE_ENOTFOUND);
    EXPECT_RC(f, once_store_purge(f->s, T0 + 5000, 10, &n), ONCE_OK);
    assert_int_equal(n, 0);
    get(f, "p", "old", &got);      /* purge never touches live records */
    once_record_clear(&got);
}

/* ------------------------------------------------------------------------
 * renew (the lease-only write)
 */

/* A leased live record as the engine keeps one mid-turn: fence 3, owner
 * "replica-a", lease until T0 + 1000, two events, a checkpoint, a push
 * config when the backend keeps delivery rows, and a task text big enough
 * that a backend rewriting the record would have real work to do. */
static void put_leased(fx *f, const char *principal, const char *id, once_state st,
                       once_record *out)
{
    static char big[64 * 1024];
    st_events e;

    memset(big, 'x', sizeof big - 16);
    memcpy(big, "{\"pad\":\"", 8);
    memcpy(big + sizeof big - 16, "\"}", 3);
    assert_int_equal(st_rec(out, principal, id, st, T0 - 5000, big), 0);
    out->generation = 2;
    out->fence = 3;
    out->step = 4;
    snprintf(out->lease_owner, sizeof out->lease_owner, "replica-a");
    out->lease_until = T0 + 1000;
    out->checkpoint = once_strdup("ck");
    if (once_store_caps(f->s) & ONCE_STORE_PUSH)
        out->push_json = once_strdup("[{\"id\":\"c1\",\"since\":0}]");
    st_mkev(&e, 1, 2, id);
    EXPECT_RC(f, once_store_create(f->s, out, e.ev, 2, NULL, NULL), ONCE_OK);
}

/* The stored record equals want (want's lease_until included). */
static void assert_stored(fx *f, const once_record *want)
{
    once_record got;

    get(f, want->principal, want->task_id, &got);
    assert_same_record(want, &got);
    once_record_clear(&got);
}

/* renew moves lease_until and nothing else: version, generation, events,
 * task text, updated_at and delivery rows stay, and a CAS prepared before
 * the renewal (the turn's own write) still succeeds. */
static void renew_sets_lease_only(void **state)
{
    fx *f = *state;
    once_push_row_list before, after;
    once_record r;
    st_events e;

    put_leased(f, "p", "t-renew", ONCE_STATE_WORKING, &r);
    EXPECT_RC(f, once_store_push_rows(f->s, "p", "t-renew", &before),
              once_store_caps(f->s) & ONCE_STORE_PUSH ? ONCE_OK : ONCE_EUNSUPPORTED);

    EXPECT_RC(f, once_store_renew(f->s, "p", "t-renew", "replica-a", 3, T0 + 31000), ONCE_OK);
    r.lease_until = T0 + 31000;
    assert_stored(f, &r);
    assert_int_equal(nevents(f, "p", "t-renew"), 2);
    /* Set, not extended: an earlier lease is taken as given. */
    EXPECT_RC(f, once_store_renew(f->s, "p", "t-renew", "replica-a", 3, T0 + 2000), ONCE_OK);
    r.lease_until = T0 + 2000;
    assert_stored(f, &r);
    /* The same renewal twice (a retried heartbeat) is the same write. */
    EXPECT_RC(f, once_store_renew(f->s, "p", "t-renew", "replica-a", 3, T0 + 2000), ONCE_OK);
    assert_stored(f, &r);

    EXPECT_RC(f, once_store_push_rows(f->s, "p", "t-renew", &after),
              once_store_caps(f->s) & ONCE_STORE_PUSH ? ONCE_OK : ONCE_EUNSUPPORTED);
    assert_int_equal(after.n, before.n);
    for (size_t i = 0; i < before.n; i++) {
        assert_string_equal(after.v[i].config_id, before.v[i].config_id);
        assert_int_equal(after.v[i].delivered, before.v[i].delivered);
        assert_int_equal(after.v[i].target, before.v[i].target);
        assert_int_equal(after.v[i].lease_until, before.v[i].lease_until);
    }
    once_push_row_list_clear(&before);
    once_push_row_list_clear(&after);

    /* The turn's CAS was built on version 1 before the renewals. */
    r.version = 2;
    r.generation = 3;
    r.updated_at = T0 + 2500;
    r.lease_until = T0 + 5000;
    assert_int_equal(st_set_json(&r, "{\"v\":2}"), 0);
    st_mkev(&e, 3, 1, "turn");
    EXPECT_RC(f, once_store_update(f->s, &r, 1, e.ev, 1), ONCE_OK);
    assert_stored(f, &r);
    assert_int_equal(nevents(f, "p", "t-renew"), 3);
    /* And renew goes on working on the new version. */
    EXPECT_RC(f, once_store_renew(f->s, "p", "t-renew", "replica-a", 3, T0 + 9000), ONCE_OK);
    r.lease_until = T0 + 9000;
    assert_stored(f, &r);
    once_record_clear(&r);
}

/* Every refusal writes nothing: the stored record stays as it was. */
static void renew_refusals(void **state)
{
    static const once_state stopped[] = {ONCE_STATE_INPUT_REQUIRED, ONCE_STATE_AUTH_REQUIRED,
                                         ONCE_STATE_COMPLETED,      ONCE_STATE_FAILED,
                                         ONCE_STATE_CANCELED,       ONCE_STATE_REJECTED};
    fx *f = *state;
    once_record r, sub;
    size_t i, n;

    put_leased(f, "p", "t", ONCE_STATE_WORKING, &r);
    /* A fence from before a takeover, and one from the future. */
    EXPECT_RC(f, once_store_renew(f->s, "p", "t", "replica-a", 2, T0 + 9000), ONCE_EFENCED);
    EXPECT_RC(f, once_store_renew(f->s, "p", "t", "replica-a", 4, T0 + 9000), ONCE_EFENCED);
    /* Another replica, and a name that only shares a prefix. */
    EXPECT_RC(f, once_store_renew(f->s, "p", "t", "replica-b", 3, T0 + 9000), ONCE_EFENCED);
    EXPECT_RC(f, once_store_renew(f->s, "p", "t", "replica", 3, T0 + 9000), ONCE_EFENCED);
    assert_stored(f, &r);
    once_record_clear(&r);

    /* SUBMITTED is renewable like WORKING. */
    put_leased(f, "p", "t-sub", ONCE_STATE_SUBMITTED, &sub);
    EXPECT_RC(f, once_store_renew(f->s, "p", "t-sub", "replica-a", 3, T0 + 7000), ONCE_OK);
    sub.lease_until = T0 + 7000;
    assert_stored(f, &sub);
    once_record_clear(&sub);

    /* Interrupted and final states hold no turn to keep alive. */
    for (i = 0; i < sizeof stopped / sizeof stopped[0]; i++) {
        char id[16];
        snprintf(id, sizeof id, "t-stop-%zu", i);
        put_leased(f, "p", id, stopped[i], &r);
        EXPECT_RC(f, once_store_renew(f->s, "p", id, "replica-a", 3, T0 + 9000), ONCE_EFENCED);
        assert_stored(f, &r);
        once_record_clear(&r);
    }

    /* No record: never created, another principal's key, a tombstone. */
    EXPECT_RC(f, once_store_renew(f->s, "p", "t-none", "replica-a", 3, T0 + 9000),
              ONCE_ENOTFOUND);
    EXPECT_RC(f, once_store_renew(f->s, "q", "t", "replica-a", 3, T0 + 9000), ONCE_ENOTFOUND);
    put_finished(f, "p", "t-swept", ONCE_STATE_COMPLETED, T0 - 10000);   /* before t-stop-* */
    EXPECT_RC(f, once_store_sweep(f->s, T0 - 9000, T0, 10, &n), ONCE_OK);
    assert_int_equal(n, 1);
    EXPECT_RC(f, once_store_renew(f->s, "p", "t-swept", "", 0, T0 + 9000), ONCE_EINVAL);
    EXPECT_RC(f, once_store_renew(f->s, "p", "t-swept", "replica-a", 1, T0 + 9000),
              ONCE_ENOTFOUND);
    assert_tomb(f, "p", "t-swept", T0 - 10000, T0);
    EXPECT_RC(f, once_store_load(f->s, "p", "t-none", &r, NULL), ONCE_ENOTFOUND);
}

/* expired_leases answers from the renewed lease_until. */
static void renew_moves_expired_leases(void **state)
{
    fx *f = *state;
    once_key_list k;

    put_lease(f, "p", "a", ONCE_STATE_WORKING, T0 - 3000);
    put_lease(f, "p", "b", ONCE_STATE_WORKING, T0 - 2000);
    put_lease(f, "p", "c", ONCE_STATE_SUBMITTED, T0 - 1000);
    EXPECT_RC(f, once_store_expired_leases(f->s, T0, 10, &k), ONCE_OK);
    assert_int_equal(k.n, 3);
    once_key_list_clear(&k);

    /* a renewed into the future drops off the list. */
    EXPECT_RC(f, once_store_renew(f->s, "p", "a", "replica-a", 1, T0 + 60000), ONCE_OK);
    EXPECT_RC(f, once_store_expired_leases(f->s, T0, 10, &k), ONCE_OK);
    assert_int_equal(k.n, 2);
    assert_string_equal(k.v[0].task_id, "b");
    assert_string_equal(k.v[1].task_id, "c");
    once_key_list_clear(&k);

    /* Once that lease has run out, a is listed again, by its new expiry. */
    EXPECT_RC(f, once_store_expired_leases(f->s, T0 + 60001, 10, &k), ONCE_OK);
    assert_int_equal(k.n, 3);
    assert_string_equal(k.v[2].task_id, "a");
    once_key_list_clear(&k);

    /* A renewal into the past (the caller's choice) lists it at once, in
     * lease order among the others. */
    EXPECT_RC(f, once_store_renew(f->s, "p", "c", "replica-a", 1, T0 - 5000), ONCE_OK);
    EXPECT_RC(f, once_store_expired_leases(f->s, T0, 10, &k), ONCE_OK);
    assert_int_equal(k.n, 2);
    assert_string_equal(k.v[0].task_id, "c");
    assert_string_equal(k.v[1].task_id, "b");
    once_key_list_clear(&k);

    /* A refused renewal moves nothing. */
    EXPECT_RC(f, once_store_renew(f->s, "p", "b", "replica-b", 1, T0 + 60000), ONCE_EFENCED);
    EXPECT_RC(f, once_store_expired_leases(f->s, T0, 10, &k), ONCE_OK);
    assert_int_equal(k.n, 2);
    once_key_list_clear(&k);
}

static void renew_bad_arguments(void **state)
{
    fx *f = *state;
    char longer[ONCE_OWNER_MAX + 2], longid[ONCE_ID_MAX + 2];
    once_record r;

    put_leased(f, "p", "t", ONCE_STATE_WORKING, &r);
    memset(longer, 'o', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    memset(longid, 'i', sizeof longid - 1);
    longid[sizeof longid - 1] = '\0';

    assert_int_equal(once_store_renew(NULL, "p", "t", "replica-a", 3, T0), ONCE_EINVAL);
    EXPECT_RC(f, once_store_renew(f->s, NULL, "t", "replica-a", 3, T0), ONCE_EINVAL);
    EXPECT_RC(f, once_store_renew(f->s, "", "t", "replica-a", 3, T0), ONCE_EINVAL);
    EXPECT_RC(f, once_store_renew(f->s, "p", NULL, "replica-a", 3, T0), ONCE_EINVAL);
    EXPECT_RC(f, once_store_renew(f->s, "p", "", "replica-a", 3, T0), ONCE_EINVAL);
    EXPECT_RC(f, once_store_renew(f->s, "p", longid, "replica-a", 3, T0), ONCE_EINVAL);
    EXPECT_RC(f, once_store_renew(f->s, "p", "t", NULL, 3, T0), ONCE_EINVAL);
    EXPECT_RC(f, once_store_renew(f->s, "p", "t", "", 3, T0), ONCE_EINVAL);
    EXPECT_RC(f, once_store_renew(f->s, "p", "t", longer, 3, T0), ONCE_EINVAL);
    EXPECT_RC(f, once_store_renew(f->s, "p", "t", "replica-a", -1, T0), ONCE_EINVAL);
    EXPECT_RC(f, once_store_renew(f->s, "p", "t", "replica-a", 3, 0), ONCE_EINVAL);
    EXPECT_RC(f, once_store_renew(f->s, "p", "t", "replica-a", 3, -5), ONCE_EINVAL);
    assert_stored(f, &r);
    /* The longest owner a record can hold is accepted (and refused here
     * only because it is not this record's owner). */
    longer[ONCE_OWNER_MAX] = '\0';
    EXPECT_RC(f, once_store_renew(f->s, "p", "t", longer, 3, T0), ONCE_EFENCED);
    once_record_clear(&r);
}

/* ------------------------------------------------------------------------
 * list
 */

typedef struct lkey {
    int64_t created;
    char id[16];
    char ctx[8];
    once_state st;
} lkey;

static int lkey_cmp(const void *a, const void *b)
{
    const lkey *x = a, *y = b;
    if (x->created != y->created)
        return x->created < y->created ? -1 : 1;
    return strcmp(x->id, y->id);
}

#define NLIST 25

/* Page through (principal, filter) with page size `limit`; compare with
 * the expected keys in order. */
static void page_all(fx *f, const char *principal, const char *ctx, once_state st, size_t limit,
                     const lkey *want, size_t nwant)
{
    once_list_query q = {.principal = principal, .context_id = ctx, .state = st, .limit = limit};
    once_record_list l;
    char after[ONCE_ID_MAX + 1];
    size_t got = 0, i;
    int more = 1, resumed;

    while (more) {
        list_step(f, &q, &l, after, &more, &resumed);
        for (i = 0; i < l.n; i++, got++) {
            assert_true(got < nwant);
            assert_string_equal(l.v[i].task_id, want[got].id);
            assert_int_equal(l.v[i].created_at, want[got].created);
        }
        once_record_list_clear(&l);
    }
    assert_int_equal(got, nwant);
}

static void list_pages_filters_isolates(void **state)
{
    fx *f = *state;
    lkey all[NLIST], sel[NLIST];
    once_list_query q = {.principal = "p1", .limit = 0};
    once_record_list l;
    size_t i, n;

    for (i = 0; i < NLIST; i++) {
        once_record r;
        /* Ties in created_at (groups of 3); ids not in creation order. */
        all[i].created = T0 + (int64_t)(i / 3) * 10;
        snprintf(all[i].id, sizeof all[i].id, "t-%02zu", (i * 7) % NLIST);
        snprintf(all[i].ctx, sizeof all[i].ctx, "%s", i % 2 ? "ctx-b" : "ctx-a");
        all[i].st = i % 5 == 0 ? ONCE_STATE_COMPLETED : ONCE_STATE_WORKING;
        assert_int_equal(st_rec(&r, "p1", all[i].id, all[i].st, all[i].created, NULL), 0);
        snprintf(r.context_id, sizeof r.context_id, "%s", all[i].ctx);
        EXPECT_RC(f, once_store_create(f->s, &r, NULL, 0, NULL, NULL), ONCE_OK);
        once_record_clear(&r);
    }
    /* Another principal with overlapping ids and the same contexts. */
    for (i = 0; i < 5; i++) {
        once_record r;
        assert_int_equal(st_rec(&r, "p2", all[i].id, ONCE_STATE_WORKING, T0 + 1, NULL), 0);
        snprintf(r.context_id, sizeof r.context_id, "ctx-a");
        EXPECT_RC(f, once_store_create(f->s, &r, NULL, 0, NULL, NULL), ONCE_OK);
        once_record_clear(&r);
    }
    qsort(all, NLIST, sizeof all[0], lkey_cmp);

    page_all(f, "p1", NULL, ONCE_STATE_UNKNOWN, 10, all, NLIST);
    page_all(f, "p1", NULL, ONCE_STATE_UNKNOWN, 1, all, NLIST);
    page_all(f, "p1", NULL, ONCE_STATE_UNKNOWN, 1000, all, NLIST);

    for (n = 0, i = 0; i < NLIST; i++)
        if (strcmp(all[i].ctx, "ctx-a") == 0)
            sel[n++] = all[i];
    assert_int_equal(n, 13);
    page_all(f, "p1", "ctx-a", ONCE_STATE_UNKNOWN, 4, sel, n);

    for (n = 0, i = 0; i < NLIST; i++)
        if (all[i].st == ONCE_STATE_COMPLETED)
            sel[n++] = all[i];
    assert_int_equal(n, 5);
    page_all(f, "p1", NULL, ONCE_STATE_COMPLETED, 2, sel, n);

    for (n = 0, i = 0; i < NLIST; i++)
        if (all[i].st == ONCE_STATE_WORKING && strcmp(all[i].ctx, "ctx-b") == 0)
            sel[n++] = all[i];
    page_all(f, "p1", "ctx-b", ONCE_STATE_WORKING, 3, sel, n);
    page_all(f, "p1", "ctx-a", ONCE_STATE_CANCELED, 3, sel, 0);
    page_all(f, "p1", "nope", ONCE_STATE_UNKNOWN, 3, sel, 0);
    page_all(f, "p1", NULL, ONCE_STATE_INPUT_REQUIRED, 3, sel, 0);
    /* Each filter sees only the principal's own tasks: p2's are all in
     * ctx-a, WORKING. */
    assert_int_equal(nlisted(f, "p2", "ctx-a", ONCE_STATE_UNKNOWN), 5);
    assert_int_equal(nlisted(f, "p2", NULL, ONCE_STATE_WORKING), 5);
    assert_int_equal(nlisted(f, "p2", "ctx-a", ONCE_STATE_WORKING), 5);
    assert_int_equal(nlisted(f, "p2", "ctx-b", ONCE_STATE_UNKNOWN), 0);

    /* An update that changes the state moves the task between the state
     * filters (the indexes follow the row). */
    size_t working = nlisted(f, "p1", "ctx-b", ONCE_STATE_WORKING);
    size_t done = nlisted(f, "p1", NULL, ONCE_STATE_COMPLETED);
    size_t done_b = nlisted(f, "p1", "ctx-b", ONCE_STATE_COMPLETED);
    once_record r;
    get(f, "p1", sel[0].id, &r);
    r.state = ONCE_STATE_COMPLETED;
    r.finished_at = r.created_at + 1;
    r.version++;
    EXPECT_RC(f, once_store_update(f->s, &r, r.version - 1, NULL, 0), ONCE_OK);
    once_record_clear(&r);
    assert_int_equal(nlisted(f, "p1", "ctx-b", ONCE_STATE_WORKING), working - 1);
    assert_int_equal(nlisted(f, "p1", NULL, ONCE_STATE_COMPLETED), done + 1);
    assert_int_equal(nlisted(f, "p1", "ctx-b", ONCE_STATE_COMPLETED), done_b + 1);

    q.principal = "p2";
    q.limit = 100;
    EXPECT_RC(f, once_store_list(f->s, &q, &l), ONCE_OK);
    assert_int_equal(l.n, 5);
    for (i = 0; i < l.n; i++)
        assert_string_equal(l.v[i].principal, "p2");
    once_record_list_clear(&l);
    q.principal = "nobody";
    EXPECT_RC(f, once_store_list(f->s, &q, &l), ONCE_OK);
    assert_int_equal(l.n, 0);
    once_record_list_clear(&l);

    q.principal = "p1";
    q.limit = 0;
    EXPECT_RC(f, once_store_list(f->s, &q, &l), ONCE_EINVAL);
    q.limit = 1001;
    EXPECT_RC(f, once_store_list(f->s, &q, &l), ONCE_EINVAL);
}

/* A filter the store cannot seek costs a bounded scan per call: more than
 * ONCE_LIST_SCAN_MAX tasks the filter skips come before its matches, so a
 * store without ONCE_STORE_LIST_SEEK must stop and hand back a cursor
 * (ONCE_KIND_RESUME) before it reaches them, and following the cursors
 * still finds every match, in order. */
#define NSKIP (ONCE_LIST_SCAN_MAX + 20)

static void list_scan_bounded(void **state)
{
    fx *f = *state;
    lkey want[4];
    size_t i, nwant = 0;

    for (i = 0; i < NSKIP + 4; i++) {
        once_record r;
        int done = i >= NSKIP;
        char id[16];
        snprintf(id, sizeof id, "b-%05zu", i);
        assert_int_equal(st_rec(&r, "pb", id, done ? ONCE_STATE_COMPLETED : ONCE_STATE_WORKING,
                                T0 + (int64_t)i, NULL), 0);
        snprintf(r.context_id, sizeof r.context_id, "%s", i == NSKIP + 3 ? "ctx-o" : "ctx-big");
        EXPECT_RC(f, once_store_create(f->s, &r, NULL, 0, NULL, NULL), ONCE_OK);
        once_record_clear(&r);
        if (done && i != NSKIP + 3) {
            want[nwant].created = T0 + (int64_t)i;
            snprintf(want[nwant].id, sizeof want[nwant].id, "%s", id);
            nwant++;
        }
    }

    once_list_query q = {.principal = "pb", .context_id = "ctx-big",
                         .state = ONCE_STATE_COMPLETED, .limit = 10};
    once_record_list l;
    char after[ONCE_ID_MAX + 1];
    int more, resumed;
    list_step(f, &q, &l, after, &more, &resumed);
    if (!(once_store_caps(f->s) & ONCE_STORE_LIST_SEEK)) {
        /* Stopped within its budget: no match read, a cursor before them. */
        assert_true(resumed);
        assert_int_equal(l.n, 0);
        assert_true(q.after_created_at < T0 + ONCE_LIST_SCAN_MAX);
    }
    once_record_list_clear(&l);

    page_all(f, "pb", "ctx-big", ONCE_STATE_COMPLETED, 10, want, nwant);
    page_all(f, "pb", "ctx-big", ONCE_STATE_COMPLETED, 1, want, nwant);
    assert_int_equal(nlisted(f, "pb", NULL, ONCE_STATE_COMPLETED), 4);
    assert_int_equal(nlisted(f, "pb", "ctx-o", ONCE_STATE_UNKNOWN), 1);
    assert_int_equal(nlisted(f, "pb", NULL, ONCE_STATE_INPUT_REQUIRED), 0);
    assert_int_equal(nlisted(f, "pb", "ctx-big", ONCE_STATE_UNKNOWN), NSKIP + 3);
}

/* A page's cursor names a task retention may take before the next page is
 * asked for: the next page still starts after it, with nothing repeated
 * and nothing skipped. */
static void list_cursor_outlives_its_task(void **state)
{
    fx *f = *state;
    lkey rest[3];
    size_t i, n;

    put_finished(f, "pc", "c0", ONCE_STATE_COMPLETED, T0 - 100);   /* created T0 - 110 */
    put_finished(f, "pc", "c1", ONCE_STATE_COMPLETED, T0 - 90);
    put_finished(f, "pc", "c2", ONCE_STATE_COMPLETED, T0 - 80);
    for (i = 0; i < 3; i++) {
        once_record r;
        rest[i].created = T0 - 50 + (int64_t)i;
        snprintf(rest[i].id, sizeof rest[i].id, "c%zu", i + 3);
        assert_int_equal(st_rec(&r, "pc", rest[i].id, ONCE_STATE_WORKING, rest[i].created, NULL),
                         0);
        EXPECT_RC(f, once_store_create(f->s, &r, NULL, 0, NULL, NULL), ONCE_OK);
        once_record_clear(&r);
    }
    for (int filtered = 0; filtered < 2; filtered++) {
        once_list_query q = {.principal = "pc", .limit = 2};
        once_record_list l;
        char after[ONCE_ID_MAX + 1];
        EXPECT_RC(f, once_store_list(f->s, &q, &l), ONCE_OK);
        if (filtered == 0) {
            assert_int_equal(l.n, 2);
            assert_string_equal(l.v[1].task_id, "c1");
            EXPECT_RC(f, once_store_sweep(f->s, T0, T0 + 500, 100, &n), ONCE_OK);
            assert_int_equal(n, 3);
        }
        snprintf(after, sizeof after, "c1");
        q.after_created_at = T0 - 100;
        q.after_task_id = after;
        once_record_list_clear(&l);
        /* From the cursor of the swept c1: c3, c4, c5, with or without a
         * filter, following any cursor a bounded scan hands back. */
        q.state = filtered ? ONCE_STATE_WORKING : ONCE_STATE_UNKNOWN;
        int more = 1, resumed;
        size_t got = 0;
        while (more) {
            list_step(f, &q, &l, after, &more, &resumed);
            for (i = 0; i < l.n; i++, got++) {
                assert_true(got < 3);
                assert_string_equal(l.v[i].task_id, rest[got].id);
            }
            once_record_list_clear(&l);
        }
        assert_int_equal(got, 3);
    }
}

/* ------------------------------------------------------------------------
 * meta
 */

#define META_THREADS 16

typedef struct meta_arg {
    once_store *s;
    pthread_barrier_t *bar;
    int idx;
    int rc;
    char got[64];
} meta_arg;

static void *meta_worker(void *p)
{
    meta_arg *a = p;
    char init[32];
    char *out = NULL;

    snprintf(init, sizeof init, "value-%d", a->idx);
    pthread_barrier_wait(a->bar);
    a->rc = once_store_meta(a->s, "race-secret", init, &out);
    if (out)
        snprintf(a->got, sizeof a->got, "%s", out);
    once_free(out);
    return NULL;
}

static void meta_insert_if_absent(void **state)
{
    fx *f = *state;
    meta_arg args[META_THREADS];
    pthread_t th[META_THREADS];
    pthread_barrier_t bar;
    char *v = NULL;
    int i, found = 0;

    EXPECT_RC(f, once_store_meta(f->s, "secret", "first", &v), ONCE_OK);
    assert_string_equal(v, "first");
    once_free(v);
    EXPECT_RC(f, once_store_meta(f->s, "secret", "second", &v), ONCE_OK);
    assert_string_equal(v, "first");
    once_free(v);
    EXPECT_RC(f, once_store_meta(f->s, "other", "x", &v), ONCE_OK);
    assert_string_equal(v, "x");
    once_free(v);

    assert_int_equal(pthread_barrier_init(&bar, NULL, META_THREADS), 0);
    for (i = 0; i < META_THREADS; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].s = f->s;
        args[i].bar = &bar;
        args[i].idx = i;
        assert_int_equal(pthread_create(&th[i], NULL, meta_worker, &args[i]), 0);
    }
    for (i = 0; i < META_THREADS; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);
    for (i = 0; i < META_THREADS; i++) {
        char want[32];
        if (args[i].rc != ONCE_OK)
            fail_msg("meta thread %d: %s", i, once_errname(args[i].rc));
        assert_string_equal(args[i].got, args[0].got);
        snprintf(want, sizeof want, "value-%d", i);
        found += strcmp(args[0].got, want) == 0;
    }
    assert_int_equal(found, 1);   /* the value is one thread's init */
    EXPECT_RC(f, once_store_meta(f->s, "race-secret", "late", &v), ONCE_OK);
    assert_string_equal(v, args[0].got);
    once_free(v);
}

/* ------------------------------------------------------------------------
 * check, principals
 */

static void check_counts_clean_store(void **state)
{
    fx *f = *state;
    once_check_report rep;
    once_record r;
    st_events e;
    size_t n;

    EXPECT_RC(f, once_store_check(f->s, &rep), ONCE_OK);
    assert_true(st_clean(&rep));
    assert_int_equal(rep.records + rep.tombstones + rep.events, 0);

    put(f, "p", "a", ONCE_STATE_WORKING, T0, NULL, 2);
    put(f, "p", "b", ONCE_STATE_SUBMITTED, T0, NULL, 0);
    put(f, "q", "a", ONCE_STATE_WORKING, T0, NULL, 5);
    put_finished(f, "p", "c", ONCE_STATE_COMPLETED, T0 - 10);
    get(f, "p", "a", &r);
    r.version = 2;
    r.generation = 4;
    st_mkev(&e, 3, 2, "a");
    EXPECT_RC(f, once_store_update(f->s, &r, 1, e.ev, 2), ONCE_OK);
    once_record_clear(&r);
    EXPECT_RC(f, once_store_sweep(f->s, T0, T0, 10, &n), ONCE_OK);
    assert_int_equal(n, 1);

    EXPECT_RC(f, once_store_check(f->s, &rep), ONCE_OK);
    if (!st_clean(&rep))
        fail_msg("check found a problem: %s", rep.first_problem);
    assert_int_equal(rep.records, 3);
    assert_int_equal(rep.tombstones, 1);
    assert_int_equal(rep.events, 4 + 0 + 5);
}

/* Two principals, one task_id: no slot ever mixes them up. */
static void principals_are_independent(void **state)
{
    fx *f = *state;
    once_record r, got;
    once_key_list k;
    once_event_list l;
    st_events e;
    size_t n;

    put(f, "alice", "shared-id", ONCE_STATE_WORKING, T0, "{\"owner\":\"alice\"}", 1);
    put(f, "bob", "shared-id", ONCE_STATE_WORKING, T0, "{\"owner\":\"bob\"}", 2);

    get(f, "alice", "shared-id", &got);
    assert_string_equal(got.task_json, "{\"owner\":\"alice\"}");
    once_record_clear(&got);
    get(f, "bob", "shared-id", &got);
    assert_string_equal(got.task_json, "{\"owner\":\"bob\"}");
    assert_int_equal(got.generation, 2);
    once_record_clear(&got);

    /* Update alice's to a finished state with an expired lease; bob's stays. */
    get(f, "alice", "shared-id", &r);
    r.version = 2;
    r.generation = 2;
    r.state = ONCE_STATE_COMPLETED;
    r.finished_at = T0 + 5;
    assert_int_equal(st_set_json(&r, "{\"owner\":\"alice\",\"done\":true}"), 0);
    st_mkev(&e, 2, 1, "alice");
    EXPECT_RC(f, once_store_update(f->s, &r, 1, e.ev, 1), ONCE_OK);
    once_record_clear(&r);
    get(f, "bob", "shared-id", &got);
    assert_int_equal(got.version, 1);
    assert_int_equal(got.state, ONCE_STATE_WORKING);
    once_record_clear(&got);
    /* CAS is per key: bob's version (1) is stale for alice's record (2). */
    get(f, "bob", "shared-id", &r);
    snprintf(r.principal, sizeof r.principal, "alice");
    r.version = 2;
    EXPECT_RC(f, once_store_update(f->s, &r, 1, NULL, 0), ONCE_ECONFLICT);
    once_record_clear(&r);

    EXPECT_RC(f, once_store_events(f->s, "alice", "shared-id", 0, 0, &l), ONCE_OK);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.v[1].payload, "{\"g\":2,\"tag\":\"alice\"}");
    once_event_list_clear(&l);
    EXPECT_RC(f, once_store_events(f->s, "bob", "shared-id", 0, 0, &l), ONCE_OK);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.v[1].payload, "{\"g\":2,\"tag\":\"shared-id\"}");
    once_event_list_clear(&l);

    /* bob's lease expires: only bob's key is listed. */
    get(f, "bob", "shared-id", &r);
    r.version = 2;
    r.lease_until = T0 - 1;
    EXPECT_RC(f, once_store_update(f->s, &r, 1, NULL, 0), ONCE_OK);
    once_record_clear(&r);
    EXPECT_RC(f, once_store_expired_leases(f->s, T0, 10, &k), ONCE_OK);
    assert_int_equal(k.n, 1);
    assert_string_equal(k.v[0].principal, "bob");
    once_key_list_clear(&k);

    /* Sweep tombstones alice's only; purge frees alice's key only. */
    EXPECT_RC(f, once_store_sweep(f->s, T0 + 10, T0 + 20, 10, &n), ONCE_OK);
    assert_int_equal(n, 1);
    EXPECT_RC(f, once_store_load(f->s, "alice", "shared-id", &got, NULL), ONCE_ETOMBSTONE);
    get(f, "bob", "shared-id", &got);
    once_record_clear(&got);
    assert_int_equal(nevents(f, "bob", "shared-id"), 2);
    put(f, "carol", "shared-id", ONCE_STATE_SUBMITTED, T0, NULL, 0);   /* not blocked */
    EXPECT_RC(f, once_store_purge(f->s, T0 + 21, 10, &n), ONCE_OK);
    assert_int_equal(n, 1);
    EXPECT_RC(f, once_store_load(f->s, "alice", "shared-id", &got, NULL), ONCE_ENOTFOUND);
    get(f, "bob", "shared-id", &got);
    once_record_clear(&got);
    put(f, "alice", "shared-id", ONCE_STATE_SUBMITTED, T0 + 30, NULL, 0);
}

static void open_errors(void **state)
{
    fx *f = *state;
    once_store *s = (once_store *)1;
    char err[128];

    (void)f;
    assert_int_equal(once_store_open("nosuch:x", NULL, &s, err, sizeof err), ONCE_EINVAL);
    assert_null(s);
    assert_non_null(strstr(err, "nosuch"));
    assert_int_equal(once_store_open("no-scheme", NULL, &s, err, sizeof err), ONCE_EINVAL);
    assert_null(s);
    assert_true(err[0] != '\0');
    assert_int_equal(once_store_open(NULL, NULL, &s, NULL, 0), ONCE_EINVAL);
    once_store_close(NULL);
    assert_string_equal(once_store_errmsg(NULL), "no store handle");
    assert_int_equal(once_store_caps(NULL), 0u);
}

#include "store/optional_cases.h"
#include "store/push_cases.h"
#include "store/replica_cases.h"

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(create_load_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(load_not_found, setup, teardown),
        cmocka_unit_test_setup_teardown(create_exists_returns_winner, setup, teardown),
        cmocka_unit_test_setup_teardown(race_create_if_absent, setup, teardown),
        cmocka_unit_test_setup_teardown(cas_update_appends_events, setup, teardown),
        cmocka_unit_test_setup_teardown(stale_update_conflicts, setup, teardown),
        cmocka_unit_test_setup_teardown(update_missing_conflicts, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_event_numbering_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(race_cas_increments, setup, teardown),
        cmocka_unit_test_setup_teardown(events_paging, setup, teardown),
        cmocka_unit_test_setup_teardown(expired_leases_only_live_expired, setup, teardown),
        cmocka_unit_test_setup_teardown(sweep_makes_tombstones, setup, teardown),
        cmocka_unit_test_setup_teardown(purge_forgets_tombstones, setup, teardown),
        cmocka_unit_test_setup_teardown(generations_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(renew_sets_lease_only, setup, teardown),
        cmocka_unit_test_setup_teardown(renew_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(renew_moves_expired_leases, setup, teardown),
        cmocka_unit_test_setup_teardown(renew_bad_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(list_pages_filters_isolates, setup, teardown),
        cmocka_unit_test_setup_teardown(list_scan_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(list_cursor_outlives_its_task, setup, teardown),
        cmocka_unit_test_setup_teardown(meta_insert_if_absent, setup, teardown),
        cmocka_unit_test_setup_teardown(check_counts_clean_store, setup, teardown),
        cmocka_unit_test_setup_teardown(principals_are_independent, setup, teardown),
        cmocka_unit_test_setup_teardown(open_errors, setup, teardown),
        PUSH_CASES,
        REPLICA_CASES,
        OPTIONAL_CASES,
    };

    if (argc > 1)
        g_url = argv[1];
    return cmocka_run_group_tests_name(g_url, tests, NULL, NULL);
}
