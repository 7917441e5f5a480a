/*
 * test_store_mem_cold.c -- a memory-store task deflated by the sweep reads
 * back byte for byte.
 *
 * Through an engine whose sweeper runs on its own: tasks of several shapes
 * (echoed, failed, a direct reply, one waiting for input, long and
 * non-ASCII texts) are read every way a client reads them (load, events
 * from the start and from the middle, store list, GetTask, ListTasks, a
 * replay of the first send); the clock jumps past the cold age; once the
 * sweeper has deflated every finished task (its counter says so) the same
 * reads give the same bytes. In the store alone: an update of a cold task
 * (events appended), a task deflate cannot shrink (kept as it is), and an
 * allocation-fault sweep over deflating and every inflating reader, after
 * which the store answers as before and its check is clean. Writes that
 * finish tasks deflate older ones (every 16th, up to 32), also while a
 * sweep and readers run beside them.
 */
#include <stdarg.h>
#include <setjmp.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "engine_fixture.h"
#include "test_store_mem.h"

#define T0 1700000000000LL
#define P "alice"

static void put_str(FILE *f, const char *name, const char *v)
{
    if (v)
        fprintf(f, "%s=[%s]\n", name, v);
    else
        fprintf(f, "%s=NULL\n", name);
}

static void put_record(FILE *f, const once_record *r)
{
    put_str(f, "principal", r->principal);
    put_str(f, "task_id", r->task_id);
    put_str(f, "context_id", r->context_id);
    put_str(f, "lease_owner", r->lease_owner);
    fprintf(f, "state=%d kind=%d version=%lld generation=%lld fence=%lld step=%lld\n", r->state,
            r->kind, (long long)r->version, (long long)r->generation, (long long)r->fence,
            (long long)r->step);
    fprintf(f, "lease_until=%lld created_at=%lld updated_at=%lld finished_at=%lld\n",
            (long long)r->lease_until, (long long)r->created_at, (long long)r->updated_at,
            (long long)r->finished_at);
    put_str(f, "digests", r->digests);
    put_str(f, "task_json", r->task_json);
    put_str(f, "checkpoint", r->checkpoint);
    put_str(f, "push_json", r->push_json);
    put_str(f, "journal", r->journal);
}

static void put_json(FILE *f, const char *what, json_t *j)
{
    char *t = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    put_str(f, what, t);
    free(t);
}

/* Everything the store answers about the principal's keys, as text: load,
 * events (all, and after=2 max=1), and the store's list. Under fault
 * injection a reader may fail with ONCE_ENOMEM: it then writes "oom", and
 * *ooms counts it. */
static void put_store(FILE *f, once_store *s, const char *principal, char ids[][64], size_t n,
                      int *ooms)
{
    size_t i, j;

    for (i = 0; i < n; i++) {
        once_record r;
        once_tombstone tb;
        once_event_list l;
        int rc = once_store_load(s, principal, ids[i], &r, &tb);
        fprintf(f, "load %s: %s\n", ids[i], rc == ONCE_ENOMEM ? "oom" : once_errname(rc));
        if (rc == ONCE_OK)
            put_record(f, &r);
        *ooms += rc == ONCE_ENOMEM;
        once_record_clear(&r);
        rc = once_store_events(s, principal, ids[i], 0, 0, &l);
        fprintf(f, "events: %s\n", rc == ONCE_ENOMEM ? "oom" : once_errname(rc));
        for (j = 0; rc == ONCE_OK && j < l.n; j++)
            fprintf(f, "%lld [%s]\n", (long long)l.v[j].generation, l.v[j].payload);
        *ooms += rc == ONCE_ENOMEM;
        once_event_list_clear(&l);
        rc = once_store_events(s, principal, ids[i], 2, 1, &l);
        fprintf(f, "events after 2: %s\n", rc == ONCE_ENOMEM ? "oom" : once_errname(rc));
        for (j = 0; rc == ONCE_OK && j < l.n; j++)
            fprintf(f, "%lld [%s]\n", (long long)l.v[j].generation, l.v[j].payload);
        *ooms += rc == ONCE_ENOMEM;
        once_event_list_clear(&l);
    }
    once_list_query q;
    once_record_list rl;
    memset(&q, 0, sizeof q);
    q.principal = principal;
    q.limit = 100;
    int rc = once_store_list(s, &q, &rl);
    fprintf(f, "list: %s\n", rc == ONCE_ENOMEM ? "oom" : once_errname(rc));
    for (i = 0; rc == ONCE_OK && i < rl.n; i++)
        put_record(f, &rl.v[i]);
    *ooms += rc == ONCE_ENOMEM;
    once_record_list_clear(&rl);
}

/* put_store's text plus the engine's answers: GetTask of each key and
 * ListTasks. */
static char *engine_text(fx_env *env, char ids[][64], size_t n)
{
    char *buf = NULL;
    size_t len = 0, i;
    FILE *f = open_memstream(&buf, &len);
    int ooms = 0;

    assert_non_null(f);
    put_store(f, env->store, P, ids, n, &ooms);
    for (i = 0; i < n; i++) {
        json_t *task = NULL;
        int64_t exp = 0;
        int rc = once__engine_get(env->e, P, ids[i], -1, &task, &exp);
        fprintf(f, "GetTask %s: %s\n", ids[i], once_errname(rc));
        put_json(f, "task", task);
        json_decref(task);
    }
    once_list_req lr;
    json_t *tasks = NULL;
    char next[256];
    memset(&lr, 0, sizeof lr);
    lr.principal = P;
    lr.history_length = -1;
    fprintf(f, "ListTasks: %s\n", once_errname(once__engine_list(env->e, &lr, &tasks, next)));
    put_json(f, "tasks", tasks);
    put_str(f, "next", next);
    json_decref(tasks);
    fclose(f);
    assert_int_equal(ooms, 0);
    return buf;
}

/* The answer to a retry of msg's send, as text. A replay is journaled
 * (the record changes), so each comes after the reads it must not move. */
static char *replay_text(fx_env *env, json_t *msg)
{
    once_send_res res;
    int rc = fx_send(env->e, P, msg, 1, 0, &res);
    char *t = json_dumps(res.result, JSON_COMPACT | JSON_SORT_KEYS);

    assert_int_equal(rc, ONCE_OK);
    assert_true(res.replayed);
    assert_non_null(t);
    fx_res_clear(&res);
    return t;
}

static void wait_sweeps(once__engine *e, uint64_t more)
{
    once__engine_stats st;
    once__engine_get_stats(e, &st);
    uint64_t want = st.sweeps + more;
    int64_t until = once_monotonic_ms() + tt_ms(5000);
    do {
        usleep(1000);
        once__engine_get_stats(e, &st);
    } while (st.sweeps < want && once_monotonic_ms() < until);
    assert_true(st.sweeps >= want);
}

static void test_cold_tasks_read_back_the_same(void **state)
{
    (void)state;
    static const char *const texts[] = {"hello", "fail", "reply", "h\xc3\xa9llo \xe2\x9c\x93",
                                        NULL /* long */, "ask:which one?"};
    enum { NT = sizeof texts / sizeof texts[0] };
    char ids[NT][64], longtext[6000];
    json_t *msgs[NT];
    once__engine_config cfg;
    fx_env env;
    size_t i;
    uint64_t finished = 0;

    for (i = 0; i + 1 < sizeof longtext; i++)
        longtext[i] = "lorem ipsum dolor sit amet, "[i % 28] ^ (char)(i % 7 == 0 ? 32 : 0);
    longtext[sizeof longtext - 1] = '\0';
    memset(&cfg, 0, sizeof cfg);
    cfg.sweep_interval_ms = 5;
    fx_env_open(&env, &cfg, 1);
    for (i = 0; i < NT; i++) {
        once_send_res res;
        char mid[32];
        snprintf(mid, sizeof mid, "m-cold-%zu", i);
        snprintf(ids[i], sizeof ids[i], "t-cold-%zu", i);
        msgs[i] = fx_msg(mid, texts[i] ? texts[i] : longtext, ids[i], NULL);
        assert_int_equal(fx_send(env.e, P, msgs[i], 1, 0, &res), ONCE_OK);
        fx_res_clear(&res);
    }
    fx_wait_done(&env.fx, NT);
    for (i = 0; i < NT; i++) {
        once_record r;
        fx_load(env.store, P, ids[i], &r);
        finished += once_state_terminal(r.state);
        once_record_clear(&r);
    }
    assert_true(finished >= NT - 2);   /* the one waiting for input is not */
    char *replay_warm = replay_text(&env, msgs[0]);
    wait_sweeps(env.e, 2);   /* the journal flushed: nothing moves on its own now */
    assert_int_equal(once__mem_cools(env.store), 0);
    char *warm = engine_text(&env, ids, NT);

    once_manual_clock_advance(&env.clock, 60 * 1000);
    int64_t until = once_monotonic_ms() + tt_ms(5000);
    while (once__mem_cools(env.store) < finished && once_monotonic_ms() < until)
        usleep(1000);
    assert_int_equal(once__mem_cools(env.store), finished);
    once__engine_stats st;   /* what once/admin/stats and /metrics report */
    once__engine_get_stats(env.e, &st);
    assert_int_equal(st.mem_cold, finished);

    char *cold = engine_text(&env, ids, NT);
    assert_string_equal(cold, warm);
    char *replay_cold = replay_text(&env, msgs[0]);
    assert_string_equal(replay_cold, replay_warm);
    assert_clean(env.store);
    free(warm);
    free(cold);
    free(replay_warm);
    free(replay_cold);
    for (i = 0; i < NT; i++)
        json_decref(msgs[i]);
    fx_env_close(&env);
}

/* The tasks s holds deflated, by its budget slot (what once/admin/stats
 * and /metrics report as the memory store's cold tasks). */
static size_t cold_held(once_store *s)
{
    once_budget b;
    assert_int_equal(once_store_budget(s, &b, 0), ONCE_OK);
    return b.cold;
}

/* A finished task with a checkpoint, a journal and n events (payloads long
 * enough to be worth deflating), finished at T0 + at. */
static void put_done(once_store *s, const char *id, int64_t at, size_t nev)
{
    once_record r;
    st_events ev;
    assert_int_equal(st_rec(&r, P, id, ONCE_STATE_COMPLETED, T0,
                            "{\"id\":\"x\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\"},"
                            "\"artifacts\":[{\"artifactId\":\"a\",\"parts\":[{\"text\":\"hi\"}]}]}"),
                     0);
    r.finished_at = T0 + at;
    r.generation = (int64_t)nev;
    r.checkpoint = once_strdup("{\"cursor\":\"page-2\",\"step\":\"statusUpdate statusUpdate\"}");
    r.journal = once_strdup("{\"v\":1,\"entries\":[{\"kind\":\"turn\",\"result\":\"done\"}]}");
    assert_non_null(r.checkpoint);
    assert_non_null(r.journal);
    st_mkev(&ev, 1, nev, "statusUpdate-statusUpdate-statusUpdate-statusUpdate");
    assert_int_equal(once_store_create(s, &r, ev.ev, nev, NULL, NULL), ONCE_OK);
    once_record_clear(&r);
}

static char *store_text(once_store *s, char ids[][64], size_t n, int *ooms)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    put_store(f, s, P, ids, n, ooms);
    fclose(f);
    return buf;
}

/* An update of a cold task appends to events that were deflated. */
static void test_update_of_a_cold_task(void **state)
{
    (void)state;
    once_store *s = open_mem();
    once_event_list l;
    once_record r;
    st_events more;
    size_t n;

    put_done(s, "a", 10, 3);
    assert_int_equal(cold_held(s), 0);
    assert_int_equal(once_store_sweep(s, T0, T0 + 10 + 60000, 10, &n), ONCE_OK);
    assert_int_equal(once__mem_cools(s), 1);
    assert_int_equal(cold_held(s), 1);
    assert_int_equal(once_store_load(s, P, "a", &r, NULL), ONCE_OK);
    r.version++;
    r.generation += 2;
    st_mkev(&more, 4, 2, "late");
    assert_int_equal(once_store_update(s, &r, r.version - 1, more.ev, 2), ONCE_OK);
    assert_int_equal(cold_held(s), 0);   /* an update writes a warm record */
    once_record_clear(&r);
    assert_int_equal(once_store_events(s, P, "a", 0, 0, &l), ONCE_OK);
    assert_int_equal(l.n, 5);
    for (n = 0; n < l.n; n++)
        assert_int_equal(l.v[n].generation, (int64_t)n + 1);
    assert_string_equal(l.v[2].payload, "{\"g\":3,\"tag\":\"statusUpdate-statusUpdate-"
                                        "statusUpdate-statusUpdate\"}");
    assert_string_equal(l.v[4].payload, "{\"g\":5,\"tag\":\"late\"}");
    once_event_list_clear(&l);
    assert_clean(s);
    once_store_close(s);
}

/* Every 16th write that finishes a task deflates up to 32 of the tasks
 * that finished MEM_COLD_MS (2 s) or more before it, oldest first, with no
 * sweep; a write of a task still running neither deflates nor counts. */
static void test_finishing_writes_deflate(void **state)
{
    (void)state;
    once_store *s = open_mem();
    once_record r;
    char id[16];
    int i;

    for (i = 0; i < 31; i++) {   /* finishes 1-31; at the 16th none is due */
        snprintf(id, sizeof id, "a%d", i);
        put_done(s, id, i, 2);
    }
    assert_int_equal(once__mem_cools(s), 0);
    put_done(s, "b", 2020, 2);   /* the 32nd: a0-a19 are due */
    assert_int_equal(once__mem_cools(s), 20);
    assert_int_equal(cold_held(s), 20);
    for (i = 0; i < 15; i++) {   /* finishes 33-47: a20-a30 due, no step */
        snprintf(id, sizeof id, "c%d", i);
        put_done(s, id, 4000 + i, 2);
    }
    assert_int_equal(once__mem_cools(s), 20);

    assert_int_equal(st_rec(&r, P, "g", ONCE_STATE_WORKING, T0 + 9000, "{}"), 0);
    assert_int_equal(once_store_create(s, &r, NULL, 0, NULL, NULL), ONCE_OK);
    assert_int_equal(once__mem_cools(s), 20);   /* running: not a finish */
    r.state = ONCE_STATE_COMPLETED;
    r.finished_at = T0 + 9000;
    r.version++;
    /* The 48th, an update: a20-a30, b and c0-c14 are due, 27 of them. */
    assert_int_equal(once_store_update(s, &r, r.version - 1, NULL, 0), ONCE_OK);
    assert_int_equal(once__mem_cools(s), 47);
    once_record_clear(&r);
    assert_int_equal(cold_held(s), 47);
    assert_clean(s);
    once_store_close(s);
}

/* Writers that finish tasks (and so deflate older ones), a sweeper and a
 * reader at once, on tasks finished over 6 s of the store's clock: no task
 * is deflated twice, and every one reads back as written. */
enum { RACE_WRITERS = 4, RACE_TASKS = 300 };
#define RACE_JSON "{\"id\":\"x\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\"}," \
                  "\"artifacts\":[{\"artifactId\":\"a\",\"parts\":[{\"text\":\"hi\"}]}]}"

typedef struct {
    once_store *s;
    int writer;           /* -1: the sweeper; -2: the reader */
    int *seq;             /* tasks finished so far, all writers (atomic) */
    int *writers_left;    /* (atomic) */
    int bad;              /* calls that failed or read back wrong */
} race_arg;

static void *race_main(void *p)
{
    race_arg *a = p;
    char id[32];
    once_record r;

    if (a->writer >= 0) {
        for (int i = 0; i < RACE_TASKS; i++) {
            int n = __atomic_add_fetch(a->seq, 1, __ATOMIC_SEQ_CST);
            snprintf(id, sizeof id, "w%d-%d", a->writer, i);
            if (st_rec(&r, P, id, ONCE_STATE_COMPLETED, T0, RACE_JSON) != 0) {
                a->bad++;
                continue;
            }
            r.finished_at = T0 + (int64_t)n * 5;   /* 1,200 tasks over 6 s */
            a->bad += once_store_create(a->s, &r, NULL, 0, NULL, NULL) != ONCE_OK;
            once_record_clear(&r);
        }
        __atomic_sub_fetch(a->writers_left, 1, __ATOMIC_SEQ_CST);
        return NULL;
    }
    for (unsigned x = 1; __atomic_load_n(a->writers_left, __ATOMIC_SEQ_CST) > 0;) {
        int n = __atomic_load_n(a->seq, __ATOMIC_SEQ_CST);
        size_t swept;
        if (a->writer == -1) {   /* nothing due for retention; cold as of the last finish */
            a->bad += once_store_sweep(a->s, T0 - 1, T0 + (int64_t)n * 5, 64, &swept) != ONCE_OK;
            continue;
        }
        x = x * 1103515245u + 12345u;
        snprintf(id, sizeof id, "w%u-%u", (x >> 8) % RACE_WRITERS, (x >> 16) % RACE_TASKS);
        int rc = once_store_load(a->s, P, id, &r, NULL);
        if (rc == ONCE_OK) {
            a->bad += strcmp(r.task_json, RACE_JSON) != 0;
            once_record_clear(&r);
        } else {
            a->bad += rc != ONCE_ENOTFOUND;   /* not written yet */
        }
    }
    return NULL;
}

static void test_deflating_writers_race(void **state)
{
    (void)state;
    once_store *s = open_mem();
    race_arg args[RACE_WRITERS + 2];
    pthread_t th[RACE_WRITERS + 2];
    int seq = 0, left = RACE_WRITERS;
    size_t i, n;

    for (i = 0; i < RACE_WRITERS + 2; i++) {
        args[i] = (race_arg){.s = s, .writer = i < RACE_WRITERS ? (int)i : -(int)(i - RACE_WRITERS) - 1,
                             .seq = &seq, .writers_left = &left, .bad = 0};
        assert_int_equal(pthread_create(&th[i], NULL, race_main, &args[i]), 0);
    }
    for (i = 0; i < RACE_WRITERS + 2; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(args[i].bad, 0);
    }
    assert_true(once__mem_cools(s) > 0);   /* the writers and the sweeper deflated some */
    assert_int_equal(once_store_sweep(s, T0 - 1, T0 + 60000, 10000, &n), ONCE_OK);
    /* Each deflated once at most (a second deflate of one task would count
     * twice), and most of them: a task that took its finish time before a
     * later one the cooler has passed, but was written after it, lands
     * behind the cooler's place and stays warm until retention takes it,
     * as with the sweep alone. */
    assert_int_equal(once__mem_cools(s), cold_held(s));
    assert_true(cold_held(s) > RACE_WRITERS * RACE_TASKS / 2);
    assert_true(cold_held(s) <= RACE_WRITERS * RACE_TASKS);
    for (i = 0; i < RACE_WRITERS * RACE_TASKS; i++) {
        char id[32];
        once_record r;
        snprintf(id, sizeof id, "w%zu-%zu", i % RACE_WRITERS, i / RACE_WRITERS);
        assert_int_equal(once_store_load(s, P, id, &r, NULL), ONCE_OK);
        assert_string_equal(r.task_json, RACE_JSON);
        once_record_clear(&r);
    }
    assert_clean(s);
    once_store_close(s);
}

/* A task whose texts deflate to more than they are stays as it is (and
 * reads back the same); the one beside it goes cold. */
static void test_incompressible_task_stays_warm(void **state)
{
    (void)state;
    once_store *s = open_mem();
    char noise[6000], ids[2][64] = {"noise", "plain"};
    uint32_t x = 12345;
    once_record r;
    size_t i, n;
    int ooms = 0;

    for (i = 0; i + 1 < sizeof noise; i++) {   /* bytes 1..255, no pattern */
        x = x * 1103515245u + 12345u;
        noise[i] = (char)(1 + (x >> 16) % 255);
    }
    noise[sizeof noise - 1] = '\0';
    noise[3000] = '\0';   /* two texts that share nothing */
    assert_int_equal(st_rec(&r, P, "noise", ONCE_STATE_COMPLETED, T0, noise), 0);
    r.finished_at = T0 + 5;
    once_free(r.digests);   /* st_rec's digest line deflates well: noise too */
    r.digests = once_strdup(noise + 3001);
    assert_non_null(r.digests);
    assert_int_equal(once_store_create(s, &r, NULL, 0, NULL, NULL), ONCE_OK);
    once_record_clear(&r);
    put_done(s, "plain", 10, 2);
    char *before = store_text(s, ids, 2, &ooms);
    assert_int_equal(once_store_sweep(s, T0, T0 + 60000, 10, &n), ONCE_OK);
    assert_int_equal(once__mem_cools(s), 1);
    assert_int_equal(cold_held(s), 1);   /* "plain" alone */
    char *after = store_text(s, ids, 2, &ooms);
    assert_int_equal(ooms, 0);
    assert_string_equal(after, before);
    assert_clean(s);
    /* Retention entombs both: the cold one is no longer held. */
    assert_int_equal(once_store_sweep(s, T0 + 11, T0 + 60000, 10, &n), ONCE_OK);
    assert_int_equal(n, 2);
    assert_int_equal(cold_held(s), 0);
    assert_clean(s);
    free(before);
    free(after);
    once_store_close(s);
}

/* One run with allocation i failing: a sweep that deflates three finished
 * tasks, then every reader and an update of a cold one. Returns 1 when no
 * fault was hit. */
static int fault_run(long i)
{
    char ids[4][64] = {"d1", "d2", "d3", "running"};
    once_store *s = open_mem();
    once_record r, upd;
    size_t n;
    int ooms = 0;

    put_done(s, "d1", 10, 4);
    put_done(s, "d2", 20, 2);
    put_done(s, "d3", 30, 0);
    assert_int_equal(st_rec(&r, P, "running", ONCE_STATE_WORKING, T0, NULL), 0);
    assert_int_equal(once_store_create(s, &r, NULL, 0, NULL, NULL), ONCE_OK);
    once_record_clear(&r);
    char *before = store_text(s, ids, 4, &ooms);
    assert_int_equal(once_store_load(s, P, "d2", &upd, NULL), ONCE_OK);
    upd.version++;

    once__alloc_fail_after(i);
    ok_or_oom(once_store_sweep(s, T0, T0 + 60000, 10, &n), ONCE_OK);
    char *during = store_text(s, ids, 4, &ooms);
    once_check_report rep;
    ok_or_oom(once_store_check(s, &rep), ONCE_OK);
    int urc = once_store_update(s, &upd, upd.version - 1, NULL, 0);
    ok_or_oom(urc, ONCE_OK);
    long used = once__alloc_count();
    once__alloc_fail_after(-1);

    /* What did answer answered right; now everything does, and the update
     * is there or not, whole. */
    if (ooms == 0)
        assert_string_equal(during, before);
    assert_clean(s);
    if (urc == ONCE_OK) {
        once_record got;
        assert_int_equal(once_store_load(s, P, "d2", &got, NULL), ONCE_OK);
        assert_int_equal(got.version, upd.version);
        once_record_clear(&got);
    }
    int ooms_after = 0;
    char *after = store_text(s, ids, 4, &ooms_after);
    assert_int_equal(ooms_after, 0);
    if (urc != ONCE_OK)
        assert_string_equal(after, before);
    assert_int_equal(once_store_sweep(s, T0, T0 + 60000, 10, &n), ONCE_OK);
    assert_int_equal(once__mem_cools(s), 3);   /* the ones a fault stopped, now */
    assert_clean(s);
    free(before);
    free(during);
    free(after);
    once_record_clear(&upd);
    once_store_close(s);
    return used <= i;
}

static void test_allocation_faults(void **state)
{
    (void)state;
    fault_sweep(fault_run, 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cold_tasks_read_back_the_same),
        cmocka_unit_test(test_update_of_a_cold_task),
        cmocka_unit_test(test_finishing_writes_deflate),
        cmocka_unit_test(test_deflating_writers_race),
        cmocka_unit_test(test_incompressible_task_stays_warm),
        cmocka_unit_test(test_allocation_faults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
