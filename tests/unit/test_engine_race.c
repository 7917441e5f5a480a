/*
 * test_engine_race.c -- concurrency of once__engine_send: 64 identical first
 * sends make one task and one execution; derived IDs are the same on every
 * replica sharing a store; blocking vs returnImmediately; a blocking send
 * on one replica sees a task another replica runs.
 */
#include "core/generation.h"
#include "unit/engine_fixture.h"

#define NTHREADS 64

static const char *P = "alice";

typedef struct racer {
    once__engine *e;
    json_t *msg;    /* owned: each request its own JSON, as on the wire */
    int extension;
    pthread_barrier_t *start;
    int rc;
    once_send_res res;
} racer;

static void *race_main(void *arg)
{
    racer *r = arg;
    pthread_barrier_wait(r->start);
    r->rc = fx_send(r->e, P, r->msg, r->extension, 0, &r->res);
    return NULL;
}

/* All threads send the same message at once: exactly one REGISTER, one
 * executor run, every answer the same task, settled. */
static void race(json_t *msg, int extension)
{
    fx_env env;
    once__engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.workers = 4;
    fx_env_open(&env, &cfg, 0);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, NTHREADS);
    static racer r[NTHREADS];
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        memset(&r[i], 0, sizeof r[i]);
        r[i].e = env.e;
        r[i].msg = json_deep_copy(msg);
        r[i].extension = extension;
        r[i].start = &start;
        assert_int_equal(pthread_create(&th[i], NULL, race_main, &r[i]), 0);
    }
    int registered = 0, replayed = 0;
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(r[i].rc, ONCE_OK);
        registered += r[i].res.verdict == ONCE_V_REGISTER;
        replayed += r[i].res.verdict == ONCE_V_REPLAY;
        assert_string_equal(r[i].res.task_id, r[0].res.task_id);
        assert_string_equal(fx_state(&r[i].res), "TASK_STATE_COMPLETED");
    }
    assert_int_equal(registered, 1);
    assert_int_equal(replayed, NTHREADS - 1);
    assert_int_equal(fx_runs(&env.fx), 1);
    once_record rec;
    fx_load(env.store, P, r[0].res.task_id, &rec);
    assert_int_equal(rec.fence, 1);
    assert_int_equal(rec.state, ONCE_STATE_COMPLETED);
    once_record_clear(&rec);
    fx_check_events(env.store, P, r[0].res.task_id);
    once_check_report rep;
    assert_int_equal(once_store_check(env.store, &rep), ONCE_OK);
    assert_int_equal(rep.records, 1);
    for (int i = 0; i < NTHREADS; i++) {
        fx_res_clear(&r[i].res);
        json_decref(r[i].msg);
    }
    pthread_barrier_destroy(&start);
    fx_env_close(&env);
}

static void test_race_derived(void **state)
{
    (void)state;
    json_t *m = fx_msg("m-race", "sleep:50", NULL, NULL);
    race(m, 0);
    json_decref(m);
}

static void test_race_client_id(void **state)
{
    (void)state;
    json_t *m = fx_msg("m-race", "sleep:50", "t-01JCLIENTMINTED", NULL);
    race(m, 1);
    json_decref(m);
}

/* Two engines (replicas) on one store derive the same task ID for the same
 * (principal, messageId) and dedup across each other; another principal
 * gets another ID. */
static void test_derived_ids_shared(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    fx_exec fxb;
    fx_init(&fxb);
    once__engine_config c;
    memset(&c, 0, sizeof c);
    c.store = env.store;
    c.executor = &fxb.ex;
    c.replica_id = "replica-b";
    c.workers = 2;
    once__engine *b;
    assert_int_equal(once__engine_new(&c, &b, NULL, 0), ONCE_OK);
    assert_int_equal(once__engine_start(b), ONCE_OK);

    json_t *m = fx_msg("m-shared", "hello", NULL, NULL);
    once_send_res ra, rb, rc;
    assert_int_equal(fx_send(env.e, P, m, 0, 0, &ra), ONCE_OK);
    assert_int_equal(ra.verdict, ONCE_V_REGISTER);
    assert_int_equal(fx_send(b, P, m, 0, 0, &rb), ONCE_OK);
    assert_int_equal(rb.verdict, ONCE_V_REPLAY);
    assert_string_equal(ra.task_id, rb.task_id);
    assert_int_equal(strlen(ra.task_id), ONCE_UUID_LEN);
    assert_int_equal(fx_send(b, "bob", m, 0, 0, &rc), ONCE_OK);
    assert_int_equal(rc.verdict, ONCE_V_REGISTER);
    assert_string_not_equal(rc.task_id, ra.task_id);
    assert_int_equal(fx_runs(&env.fx) + fx_runs(&fxb), 2);

    /* A fresh engine on the same store (a restart) derives the same ID. */
    once__engine *c2;
    c.replica_id = "replica-c";
    assert_int_equal(once__engine_new(&c, &c2, NULL, 0), ONCE_OK);
    once_send_res rd;
    assert_int_equal(fx_send(c2, P, m, 0, 1, &rd), ONCE_OK);
    assert_int_equal(rd.verdict, ONCE_V_REPLAY);
    assert_string_equal(rd.task_id, ra.task_id);

    fx_res_clear(&ra);
    fx_res_clear(&rb);
    fx_res_clear(&rc);
    fx_res_clear(&rd);
    json_decref(m);
    once__engine_free(c2);
    once__engine_free(b);
    fx_destroy(&fxb);
    fx_env_close(&env);
}

/* returnImmediately answers right after the create; a blocking send waits
 * for the terminal state; wait_ms bounds the wait. */
static void test_blocking_vs_immediate(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    once_send_res res;

    /* The answer itself shows it did not wait: the task as created. */
    json_t *m1 = fx_msg("m-1", "sleep:300", NULL, NULL);
    assert_int_equal(fx_send(env.e, P, m1, 0, 1, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REGISTER);
    assert_string_equal(fx_state(&res), "TASK_STATE_SUBMITTED");
    assert_int_equal(once__generation_of(json_object_get(res.result, "task")),
                     1);
    char tid[ONCE_ID_MAX + 1];
    snprintf(tid, sizeof tid, "%s", res.task_id);
    fx_res_clear(&res);
    /* A blocking retry of the same message waits for the same run. */
    assert_int_equal(fx_send(env.e, P, m1, 0, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REPLAY);
    assert_string_equal(fx_state(&res), "TASK_STATE_COMPLETED");
    fx_res_clear(&res);

    json_t *m2 = fx_msg("m-2", "sleep:300", NULL, NULL);
    int64_t t0 = once_monotonic_ms();
    assert_int_equal(fx_send(env.e, P, m2, 0, 0, &res), ONCE_OK);
    int64_t took = once_monotonic_ms() - t0;
    assert_true(took >= 250);
    assert_string_equal(fx_state(&res), "TASK_STATE_COMPLETED");
    fx_res_clear(&res);

    json_t *m3 = fx_msg("m-3", "block", NULL, NULL);   /* works until the gate opens */
    once_send_req req;
    memset(&req, 0, sizeof req);
    req.principal = P;
    req.message = m3;
    req.wait_ms = 150;
    req.history_length = -1;
    t0 = once_monotonic_ms();
    assert_int_equal(once__engine_send(env.e, &req, &res), ONCE_OK);
    took = once_monotonic_ms() - t0;
    assert_true(took >= 140 && took < tt_ms(1500));
    /* Still in progress (its turn may not have started yet on a busy machine). */
    assert_true(strcmp(fx_state(&res), "TASK_STATE_WORKING") == 0 ||
                strcmp(fx_state(&res), "TASK_STATE_SUBMITTED") == 0);
    fx_wait_blocked(&env.fx, 1);
    assert_int_equal(once__engine_cancel(env.e, P, res.task_id, NULL, NULL, NULL), ONCE_OK);
    fx_open_gate(&env.fx);
    fx_res_clear(&res);
    assert_int_equal(fx_runs(&env.fx), 3);

    json_decref(m1);
    json_decref(m2);
    json_decref(m3);
    fx_env_close(&env);
}

/* A blocking replay on replica B waits for the task replica A runs: B
 * learns of A's writes by watching the store, not by in-process signals. */
static void test_wait_across_replicas(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    fx_exec fxb;
    fx_init(&fxb);
    once__engine_config c;
    memset(&c, 0, sizeof c);
    c.store = env.store;
    c.executor = &fxb.ex;
    c.replica_id = "replica-b";
    once__engine *b;
    assert_int_equal(once__engine_new(&c, &b, NULL, 0), ONCE_OK);
    assert_int_equal(once__engine_start(b), ONCE_OK);

    json_t *m = fx_msg("m-1", "sleep:300", NULL, NULL);
    once_send_res ra, rb;
    assert_int_equal(fx_send(env.e, P, m, 0, 1, &ra), ONCE_OK);
    int64_t t0 = once_monotonic_ms();
    assert_int_equal(fx_send(b, P, m, 0, 0, &rb), ONCE_OK);
    assert_int_equal(rb.verdict, ONCE_V_REPLAY);
    assert_string_equal(fx_state(&rb), "TASK_STATE_COMPLETED");
    assert_true(once_monotonic_ms() - t0 < tt_ms(2000));
    assert_int_equal(fx_runs(&env.fx), 1);
    assert_int_equal(fx_runs(&fxb), 0);
    fx_res_clear(&ra);
    fx_res_clear(&rb);
    json_decref(m);
    once__engine_free(b);
    fx_destroy(&fxb);
    fx_env_close(&env);
}

/* Two replicas, each with its own handle on one SQLite file (as two
 * processes would have), race the same first message: one task, one run,
 * and every blocked send sees the other replica's completion. */
static void test_race_sqlite_two_replicas(void **state)
{
    (void)state;
    char dir[] = "/tmp/once-engine-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char url[128];
    snprintf(url, sizeof url, "sqlite:%s/reg.db", dir);
    once_store *sa, *sb;
    assert_int_equal(once_store_open(url, NULL, &sa, NULL, 0), ONCE_OK);
    assert_int_equal(once_store_open(url, NULL, &sb, NULL, 0), ONCE_OK);
    fx_exec fa, fb;
    fx_init(&fa);
    fx_init(&fb);
    once__engine_config c;
    memset(&c, 0, sizeof c);
    c.workers = 2;
    c.store = sa;
    c.executor = &fa.ex;
    c.replica_id = "replica-a";
    once__engine *ea, *eb;
    assert_int_equal(once__engine_new(&c, &ea, NULL, 0), ONCE_OK);
    c.store = sb;
    c.executor = &fb.ex;
    c.replica_id = "replica-b";
    assert_int_equal(once__engine_new(&c, &eb, NULL, 0), ONCE_OK);
    assert_int_equal(once__engine_start(ea), ONCE_OK);
    assert_int_equal(once__engine_start(eb), ONCE_OK);

    enum { N = 16 };
    json_t *m = fx_msg("m-sqlite", "sleep:100", NULL, NULL);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, N);
    static racer r[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        memset(&r[i], 0, sizeof r[i]);
        r[i].e = i % 2 ? eb : ea;
        r[i].msg = json_deep_copy(m);
        r[i].start = &start;
        assert_int_equal(pthread_create(&th[i], NULL, race_main, &r[i]), 0);
    }
    int registered = 0, answered = 0;
    const char *first = NULL;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        /* SQLite may report EBUSY under contention: retryable, and then no
         * verdict was given. Everyone else must agree on one task. */
        if (r[i].rc == ONCE_EBUSY)
            continue;
        assert_int_equal(r[i].rc, ONCE_OK);
        answered++;
        registered += r[i].res.verdict == ONCE_V_REGISTER;
        assert_string_equal(fx_state(&r[i].res), "TASK_STATE_COMPLETED");
        if (first == NULL)
            first = r[i].res.task_id;
        assert_string_equal(r[i].res.task_id, first);
    }
    assert_true(answered > 0);
    assert_int_equal(registered, 1);
    assert_int_equal(fx_runs(&fa) + fx_runs(&fb), 1);
    for (int i = 0; i < N; i++) {
        fx_res_clear(&r[i].res);
        json_decref(r[i].msg);
    }
    pthread_barrier_destroy(&start);
    json_decref(m);
    once__engine_free(ea);
    once__engine_free(eb);
    once_check_report rep;
    assert_int_equal(once_store_check(sa, &rep), ONCE_OK);
    assert_int_equal(rep.records, 1);
    assert_int_equal(rep.bad_generation + rep.event_gaps + rep.orphan_events + rep.bad_state, 0);
    once_store_close(sa);
    once_store_close(sb);
    fx_destroy(&fa);
    fx_destroy(&fb);
    char path[160];
    const char *sfx[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/reg.db%s", dir, sfx[i]);
        unlink(path);
    }
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_race_derived),
        cmocka_unit_test(test_race_client_id),
        cmocka_unit_test(test_derived_ids_shared),
        cmocka_unit_test(test_blocking_vs_immediate),
        cmocka_unit_test(test_wait_across_replicas),
        cmocka_unit_test(test_race_sqlite_two_replicas),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
