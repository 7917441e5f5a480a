/*
 * test_engine_fair.c -- the turn queue is shared fairly between principals
 * (src/engine/dispatch.c):
 *   - a principal gets at most its share of the queue: past it its sends
 *     are refused ONCE_EOVERLOAD with nothing stored, while another
 *     principal's send is still admitted;
 *   - a worker takes the oldest queued turn of the principal with the
 *     fewest turns on workers, so a busy principal's backlog runs after
 *     another principal's later turn, not before it.
 * Order is asserted by the executor's record of which turn started when,
 * and every step waits for a positive signal (a turn started), never for
 * time to pass.
 */
#include "core/condwait.h"
#include "unit/engine_fixture.h"

#define WORKERS 2
#define QUEUE 4
#define SHARE 2

/* An executor that notes the text of each turn as it starts, then holds
 * the turn until the test hands it a permit. Under mu. */
typedef struct gate {
    once_executor ex;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char started[16][32];
    int nstarted;
    int permits;        /* turns that may finish; < 0: all */
} gate;

static int gate_run(const once_executor *ex, once_work *w)
{
    gate *g = ex->ctx;
    char *text = fx_text_of(once_work_message(w));
    pthread_mutex_lock(&g->mu);
    if (g->nstarted < 16)
        snprintf(g->started[g->nstarted++], sizeof g->started[0], "%s", text);
    pthread_cond_broadcast(&g->cv);
    while (g->permits == 0)
        pthread_cond_wait(&g->cv, &g->mu);
    if (g->permits > 0)
        g->permits--;
    pthread_mutex_unlock(&g->mu);
    free(text);
    return once_work_complete(w);
}

static void gate_permit(gate *g, int n)
{
    pthread_mutex_lock(&g->mu);
    g->permits = n;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* Wait (bounded, scaled) until n turns started; their texts in order. */
static void gate_wait_started(gate *g, int n)
{
    int64_t until = once_monotonic_ms() + tt_ms(5000);
    pthread_mutex_lock(&g->mu);
    while (g->nstarted < n && once_monotonic_ms() < until)
        once__cond_wait_ms(&g->cv, &g->mu, 50);
    int got = g->nstarted;
    pthread_mutex_unlock(&g->mu);
    if (got < n)
        fail_msg("%d turns started, wanted %d", got, n);
}

static const char *gate_started(gate *g, int i)
{
    pthread_mutex_lock(&g->mu);
    const char *s = g->started[i];
    pthread_mutex_unlock(&g->mu);
    return s;
}

static int send_text(once__engine *e, const char *principal, const char *text)
{
    char mid[64];
    snprintf(mid, sizeof mid, "m-%s-%s", principal, text);
    json_t *m = fx_msg(mid, text, NULL, NULL);
    once_send_res res;
    int rc = fx_send(e, principal, m, 0, 1, &res);
    fx_res_clear(&res);
    json_decref(m);
    return rc;
}

/* A memory store and a started engine running g's turns; admission never
 * waits for room (nothing here depends on time). */
typedef struct fair_env {
    gate g;
    once_store *st;
    once__engine *e;
} fair_env;

static void fair_open(fair_env *f, int workers, int max_queue, int share)
{
    memset(f, 0, sizeof *f);
    assert_int_equal(once__lock_init(&f->g.mu, &f->g.cv), ONCE_OK);
    f->g.ex.name = "gate";
    f->g.ex.run = gate_run;
    f->g.ex.ctx = &f->g;
    assert_int_equal(once_store_open("memory:", NULL, &f->st, NULL, 0), ONCE_OK);
    once__engine_config c;
    memset(&c, 0, sizeof c);
    c.store = f->st;
    c.executor = &f->g.ex;
    c.replica_id = "replica-a";
    c.workers = workers;
    c.max_queue = max_queue;
    c.max_queue_per_principal = share;
    c.admit_wait_ms = -1;
    assert_int_equal(once__engine_new(&c, &f->e, NULL, 0), ONCE_OK);
    assert_int_equal(once__engine_start(f->e), ONCE_OK);
}

static void fair_close(fair_env *f)
{
    gate_permit(&f->g, -1);
    once__engine_free(f->e);
    once_store_close(f->st);
    pthread_cond_destroy(&f->g.cv);
    pthread_mutex_destroy(&f->g.mu);
}

static void test_share_and_fewest_running_first(void **state)
{
    (void)state;
    fair_env f;
    fair_open(&f, WORKERS, QUEUE, SHARE);
    once__engine *e = f.e;
    gate *g = &f.g;

    /* A fills both workers ... */
    assert_int_equal(send_text(e, "alice", "a-run-1"), ONCE_OK);
    assert_int_equal(send_text(e, "alice", "a-run-2"), ONCE_OK);
    gate_wait_started(g, 2);
    /* ... and its share of the queue; past it A is refused, nothing stored. */
    assert_int_equal(send_text(e, "alice", "a-q-1"), ONCE_OK);
    assert_int_equal(send_text(e, "alice", "a-q-2"), ONCE_OK);
    assert_int_equal(send_text(e, "alice", "a-q-3"), ONCE_EOVERLOAD);
    assert_int_equal(send_text(e, "alice", "a-q-4"), ONCE_EOVERLOAD);
    once__engine_stats stats;
    once__engine_get_stats(e, &stats);
    assert_int_equal(stats.queued, SHARE);
    assert_int_equal(stats.overloaded, 2);

    /* B still gets in. */
    assert_int_equal(send_text(e, "bob", "b-1"), ONCE_OK);
    once__engine_get_stats(e, &stats);
    assert_int_equal(stats.queued, SHARE + 1);

    /* One of A's running turns ends: the freed worker takes B's turn,
     * queued after both of A's (A still has a turn on a worker, B none). */
    gate_permit(g, 1);
    gate_wait_started(g, 3);
    assert_string_equal(gate_started(g, 2), "b-1");

    /* Then A's backlog, oldest first: one worker freed at a time, so the
     * order the turns start in is the order they were picked in (two
     * workers freed together may note their starts either way). */
    gate_permit(g, 1);
    gate_wait_started(g, 4);
    assert_string_equal(gate_started(g, 3), "a-q-1");
    gate_permit(g, 1);
    gate_wait_started(g, 5);
    assert_string_equal(gate_started(g, 4), "a-q-2");
    fair_close(&f);
}

/* One principal alone keeps the whole queue when no share is set (every
 * caller is one principal without --auth-tokens), and its turns run in
 * the order they were queued. */
static void test_no_share_one_principal_fifo(void **state)
{
    (void)state;
    fair_env f;
    fair_open(&f, 1, 3, 0);
    assert_int_equal(send_text(f.e, "anonymous", "r"), ONCE_OK);
    gate_wait_started(&f.g, 1);
    assert_int_equal(send_text(f.e, "anonymous", "q1"), ONCE_OK);
    assert_int_equal(send_text(f.e, "anonymous", "q2"), ONCE_OK);
    assert_int_equal(send_text(f.e, "anonymous", "q3"), ONCE_OK);
    assert_int_equal(send_text(f.e, "anonymous", "q4"), ONCE_EOVERLOAD);
    gate_permit(&f.g, -1);
    gate_wait_started(&f.g, 4);
    assert_string_equal(gate_started(&f.g, 1), "q1");
    assert_string_equal(gate_started(&f.g, 2), "q2");
    assert_string_equal(gate_started(&f.g, 3), "q3");
    fair_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_share_and_fewest_running_first),
        cmocka_unit_test(test_no_share_one_principal_fifo),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
