/*
 * test_engine_park.c -- parked turns (once_work_park, src/engine/dispatch.c):
 *   - a turn that parks lets go of its worker: one worker holds many tasks
 *     WORKING at once, each run again after its park with once_work_parks()
 *     one higher, and they complete when what they wait for comes;
 *   - a re-run is not a new turn: started and ended turns count each task
 *     once;
 *   - the lease of a parked turn is kept: the heartbeat renews it;
 *   - a cancel of a parked task runs its turn once more, canceled from the
 *     start, with its writes refused;
 *   - an engine that stops with turns parked gives their leases back;
 *   - a park that cannot be is refused (ms <= 0; a canceled turn).
 * Every wait is for a condition (bounded, scaled), never for time to pass.
 */
#include "core/condwait.h"
#include "unit/engine_fixture.h"

#define TASKS 8

/* "wait": park for park_ms until `open`, then complete. Under mu. */
typedef struct parker {
    once_executor ex;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int open;
    int64_t park_ms;
    int runs;
    int max_parks;          /* the highest once_work_parks() seen */
    int bad_park_rc;        /* once_work_park(w, 0) */
    int notices;            /* runs canceled from the start */
    int notice_write_rc;    /* a write tried in a notice */
    char notice_state[40];  /* the task's state as the notice saw it */
} parker;

static int parker_run(const once_executor *ex, once_work *w)
{
    parker *p = ex->ctx;
    pthread_mutex_lock(&p->mu);
    p->runs++;
    if (once_work_parks(w) > p->max_parks)
        p->max_parks = once_work_parks(w);
    int open = p->open;
    int64_t ms = p->park_ms;
    pthread_mutex_unlock(&p->mu);
    if (once_work_canceled(w)) {
        json_t *task = json_loads(once_work_task(w), 0, NULL);
        const char *st = json_string_value(
            json_object_get(json_object_get(task, "status"), "state"));
        int wrc = once_work_artifact(w, "{\"parts\":[{\"text\":\"late\"}]}", 0, 1);
        pthread_mutex_lock(&p->mu);
        p->notices++;
        p->notice_write_rc = wrc;
        snprintf(p->notice_state, sizeof p->notice_state, "%s", st ? st : "");
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        json_decref(task);
        return ONCE_ECANCELED;
    }
    if (open)
        return once_work_complete(w);
    int bad = once_work_park(w, 0);
    pthread_mutex_lock(&p->mu);
    p->bad_park_rc = bad;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return once_work_park(w, ms);
}

typedef struct park_env {
    parker p;
    once_store *st;
    once__engine *e;
} park_env;

static void park_open(park_env *f, int workers, int64_t park_ms, int64_t lease_ms)
{
    memset(f, 0, sizeof *f);
    assert_int_equal(once__lock_init(&f->p.mu, &f->p.cv), ONCE_OK);
    f->p.ex.name = "parker";
    f->p.ex.run = parker_run;
    f->p.ex.ctx = &f->p;
    f->p.park_ms = park_ms;
    assert_int_equal(once_store_open("memory:", NULL, &f->st, NULL, 0), ONCE_OK);
    once__engine_config c;
    memset(&c, 0, sizeof c);
    c.store = f->st;
    c.executor = &f->p.ex;
    c.replica_id = "replica-a";
    c.workers = workers;
    c.lease_ms = lease_ms;
    assert_int_equal(once__engine_new(&c, &f->e, NULL, 0), ONCE_OK);
    assert_int_equal(once__engine_start(f->e), ONCE_OK);
}

static void park_close(park_env *f)
{
    if (f->e != NULL)
        once__engine_free(f->e);
    once_store_close(f->st);
    pthread_cond_destroy(&f->p.cv);
    pthread_mutex_destroy(&f->p.mu);
}

static void send_wait(park_env *f, int i, char task_id[ONCE_ID_MAX + 1])
{
    char mid[32];
    snprintf(mid, sizeof mid, "m-%d", i);
    json_t *m = fx_msg(mid, "wait", NULL, NULL);
    once_send_res res;
    assert_int_equal(fx_send(f->e, "alice", m, 0, 1, &res), ONCE_OK);
    snprintf(task_id, ONCE_ID_MAX + 1, "%s", res.task_id);
    fx_res_clear(&res);
    json_decref(m);
}

/* Wait (bounded, scaled) until the engine's parked gauge reads n. */
static void wait_parked(once__engine *e, uint64_t n)
{
    int64_t until = once_monotonic_ms() + tt_ms(5000);
    once__engine_stats s;
    for (;;) {
        once__engine_get_stats(e, &s);
        if (s.parked == n || once_monotonic_ms() > until)
            break;
        usleep(2000);
    }
    if (s.parked != n)
        fail_msg("%llu turns parked, wanted %llu", (unsigned long long)s.parked,
                 (unsigned long long)n);
}

/* Wait (bounded, scaled) until the executor saw n notices. */
static void wait_notices(parker *p, int n)
{
    int64_t until = once_monotonic_ms() + tt_ms(5000);
    pthread_mutex_lock(&p->mu);
    while (p->notices < n && once_monotonic_ms() < until)
        once__cond_wait_ms(&p->cv, &p->mu, 50);
    int got = p->notices;
    pthread_mutex_unlock(&p->mu);
    if (got < n)
        fail_msg("%d notices, wanted %d", got, n);
}

static void test_parked_turns_hold_no_worker(void **state)
{
    (void)state;
    park_env f;
    park_open(&f, 1, 20, 0);
    char ids[TASKS][ONCE_ID_MAX + 1];
    for (int i = 0; i < TASKS; i++)
        send_wait(&f, i, ids[i]);
    /* One worker, every task WORKING at once: none holds it. */
    wait_parked(f.e, TASKS);
    for (int i = 0; i < TASKS; i++) {
        once_record rec;
        fx_load(f.st, "alice", ids[i], &rec);
        assert_int_equal(rec.state, ONCE_STATE_WORKING);
        once_record_clear(&rec);
    }
    /* They run again after each park (a positive signal: a second run). */
    int64_t until = once_monotonic_ms() + tt_ms(5000);
    pthread_mutex_lock(&f.p.mu);
    while (f.p.max_parks < 2 && once_monotonic_ms() < until)
        once__cond_wait_ms(&f.p.cv, &f.p.mu, 50);
    assert_true(f.p.max_parks >= 2);
    assert_int_equal(f.p.bad_park_rc, ONCE_EINVAL);
    f.p.open = 1;
    pthread_mutex_unlock(&f.p.mu);
    for (int i = 0; i < TASKS; i++)
        fx_wait_state(f.st, "alice", ids[i], ONCE_STATE_COMPLETED);
    wait_parked(f.e, 0);
    once__engine_stats s;
    once__engine_get_stats(f.e, &s);
    assert_int_equal(s.executed_turns, TASKS);    /* a re-run is no new turn */
    assert_int_equal(s.turns_completed, TASKS);
    assert_true(s.parks >= 2 * TASKS);
    park_close(&f);
}

static void test_parked_lease_renewed_and_cancel_heard(void **state)
{
    (void)state;
    park_env f;
    /* Parked far longer than the lease: only the heartbeat keeps it. */
    park_open(&f, 1, 600000, 300);
    char id[ONCE_ID_MAX + 1];
    send_wait(&f, 0, id);
    wait_parked(f.e, 1);
    once_record rec;
    fx_load(f.st, "alice", id, &rec);
    int64_t first = rec.lease_until;
    once_record_clear(&rec);
    int64_t until = once_monotonic_ms() + tt_ms(5000);
    int64_t now_lease = first;
    while (now_lease <= first && once_monotonic_ms() < until) {
        usleep(5000);
        fx_load(f.st, "alice", id, &rec);
        now_lease = rec.lease_until;
        once_record_clear(&rec);
    }
    assert_true(now_lease > first);

    /* A cancel: the parked turn runs once more, canceled, writes refused. */
    json_t *task = NULL;
    once_state st;
    assert_int_equal(once__engine_cancel(f.e, "alice", id, &task, &st, NULL), ONCE_OK);
    json_decref(task);
    wait_notices(&f.p, 1);
    pthread_mutex_lock(&f.p.mu);
    assert_string_equal(f.p.notice_state, "TASK_STATE_CANCELED");
    assert_int_not_equal(f.p.notice_write_rc, ONCE_OK);
    pthread_mutex_unlock(&f.p.mu);
    wait_parked(f.e, 0);
    fx_load(f.st, "alice", id, &rec);
    assert_int_equal(rec.state, ONCE_STATE_CANCELED);
    assert_null(strstr(rec.task_json, "late"));
    once_record_clear(&rec);
    park_close(&f);
}

static void test_stop_releases_parked_leases(void **state)
{
    (void)state;
    park_env f;
    park_open(&f, 1, 600000, 0);
    char id[ONCE_ID_MAX + 1];
    send_wait(&f, 0, id);
    wait_parked(f.e, 1);
    once__engine_free(f.e);
    f.e = NULL;
    once_record rec;
    fx_load(f.st, "alice", id, &rec);
    assert_int_equal(rec.state, ONCE_STATE_WORKING);
    assert_true(rec.lease_until <= 1);    /* given back: any sweep takes it over */
    once_record_clear(&rec);
    assert_int_equal(f.p.notices, 0);     /* a stop is no cancel */
    park_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parked_turns_hold_no_worker),
        cmocka_unit_test(test_parked_lease_renewed_and_cancel_heard),
        cmocka_unit_test(test_stop_releases_parked_leases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
