/*
 * held.c -- a new task's held write on the SQLite store (engine/held.c):
 * the engine with the echo executor, a blocking send with req.hold, and the
 * shim's sync gate (vfs_shim.h) holding the commit's fsync.
 *   - answer_waits_for_its_commit: the send returns the answer and a held
 *     write, having stored nothing; once started, the write lands only
 *     after its fsync returned, on another thread, and only then is the
 *     task stored (four events) and counted;
 *   - failed_write_stores_nothing: the fsync fails: the write lands with
 *     ONCE_ESTORE, nothing is stored or counted, and the send made again
 *     without holding registers the task;
 *   - the_second_registration_replays: two held writes of one message; the
 *     first lands, the second lands with ONCE_EEXISTS, and its send made
 *     again replays the first's task: one task, four events;
 *   - inline_only_never_waits: while a commit is held in its fsync, a send
 *     with inline_only returns at once with a held write for a new task, a
 *     replay's answer, and ONCE__EAGAIN (nothing written) for what would
 *     wait: a continuation, a returnImmediately registration.
 * Every wait is for a condition, bounded by tt_ms().
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sqlite/vfs_shim.h"
#include "store/util.h"
#include "timeout.h"
#include "unit/engine_fixture.h"

#define WAIT_MS 10000
static const char *P = "alice";

typedef struct fx {
    char path[4096];
    once_store *s;
    once__engine *e;
} fx;

typedef struct landing {
    atomic_int n;
    int rc;
    pthread_t on;
} landing;

static void landed(void *arg, int rc)
{
    landing *l = arg;
    l->rc = rc;
    l->on = pthread_self();
    atomic_fetch_add(&l->n, 1);
}

static int has_landed(void *arg)
{
    return atomic_load(&((landing *)arg)->n) > 0;
}

/* 1 once the engine's start-up heartbeat row is stored. */
static int beat_stored(void *arg)
{
    once_replica_list l;
    if (once__engine_replicas(arg, &l) != ONCE_OK)
        return 0;
    int stored = l.n > 0;
    once_replica_list_clear(&l);
    return stored;
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    char url[4200], err[256];
    shim_register();
    shim_arm(0);
    if (!f || st_tmp_path(f->path, sizeof f->path, "held") != 0)
        return -1;
    snprintf(url, sizeof url, "sqlite:%s?vfs=" SHIM_VFS "&synchronous=full", f->path);
    if (once_store_open(url, NULL, &f->s, err, sizeof err) != ONCE_OK) {
        fprintf(stderr, "open: %s\n", err);
        return -1;
    }
    once__engine_config c;
    memset(&c, 0, sizeof c);
    c.store = f->s;
    c.executor = once_executor_echo();
    c.replica_id = "replica-a";
    c.workers = 2;
    /* The sync gate holds the first WAL sync it meets, so the tests' own
     * writes must be the only ones: the heartbeat thread writes this
     * replica's row at start, and a test that armed the gate before that
     * row committed would fail the heartbeat's fsync instead of its own
     * write's. Wait for the row; a lease of an hour puts the next beat
     * (a third of it) past any run. */
    c.lease_ms = 3600 * 1000;
    if (once__engine_new(&c, &f->e, err, sizeof err) != ONCE_OK ||
        once__engine_start(f->e) != ONCE_OK || !tt_wait_until(beat_stored, f->e, WAIT_MS))
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    shim_hold_syncs(0);
    once__engine_free(f->e);
    once_store_close(f->s);
    st_remove_db(f->path);
    free(f);
    return 0;
}

/* A blocking SendMessage of text as message mid of task id. */
static int send(fx *f, const char *id, const char *mid, const char *text, int hold,
                int inline_only, int immediately, once_send_res *res)
{
    json_t *m = fx_msg(mid, text, id, NULL);
    once_send_req req;
    memset(&req, 0, sizeof req);
    req.principal = P;
    req.message = m;
    req.task_id = id;
    req.extension = 1;
    req.history_length = -1;
    req.hold = hold;
    req.inline_only = inline_only;
    req.return_immediately = immediately;
    int rc = once__engine_send(f->e, &req, res);
    json_decref(m);
    return rc;
}

static uint64_t registered(fx *f)
{
    once__engine_stats s;
    once__engine_get_stats(f->e, &s);
    return s.registered;
}

static int stored(fx *f, const char *id)
{
    once_record r;
    int rc = once_store_load(f->s, P, id, &r, NULL);
    once_record_clear(&r);
    return rc == ONCE_OK;
}

static void assert_events(fx *f, const char *id, size_t n)
{
    once_event_list l;
    assert_int_equal(once_store_events(f->s, P, id, 0, 0, &l), ONCE_OK);
    assert_int_equal(l.n, n);
    once_event_list_clear(&l);
}

/* A held new task: the answer says COMPLETED, nothing is stored. */
static once__held *hold_new(fx *f, const char *id, const char *mid)
{
    once_send_res res;
    assert_int_equal(send(f, id, mid, "hello", 1, 0, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REGISTER);
    assert_int_equal(res.state, ONCE_STATE_COMPLETED);
    assert_non_null(res.held);
    once__held *h = res.held;
    res.held = NULL;
    fx_res_clear(&res);
    once_free(res.result_text);
    assert_false(stored(f, id));
    return h;
}

static void answer_waits_for_its_commit(void **state)
{
    fx *f = *state;
    uint64_t r0 = registered(f);
    once__held *h = hold_new(f, "t-1", "m-1");
    assert_int_equal(registered(f), r0);
    landing l = {0};
    shim_hold_syncs(1);
    once__engine_held_start(h, landed, &l);
    assert_true(shim_wait_held(WAIT_MS));      /* its commit is in its fsync ... */
    assert_int_equal(atomic_load(&l.n), 0);   /* ... and it has not landed */
    assert_int_equal(registered(f), r0);
    shim_hold_syncs(0);
    shim_release(0);
    assert_true(tt_wait_until(has_landed, &l, WAIT_MS));
    assert_int_equal(l.rc, ONCE_OK);
    assert_false(pthread_equal(l.on, pthread_self()));
    assert_true(stored(f, "t-1"));
    assert_events(f, "t-1", 4);
    assert_int_equal(registered(f), r0 + 1);
    assert_int_equal(atomic_load(&l.n), 1);
}

static void failed_write_stores_nothing(void **state)
{
    fx *f = *state;
    uint64_t r0 = registered(f);
    once__held *h = hold_new(f, "t-2", "m-2");
    landing l = {0};
    shim_hold_syncs(1);
    once__engine_held_start(h, landed, &l);
    assert_true(shim_wait_held(WAIT_MS));
    shim_hold_syncs(0);
    shim_release(1);   /* the fsync fails */
    assert_true(tt_wait_until(has_landed, &l, WAIT_MS));
    assert_int_equal(l.rc, ONCE_ESTORE);
    assert_false(stored(f, "t-2"));
    assert_int_equal(registered(f), r0);

    /* What the HTTP layer does next: the send again, holding nothing. */
    once_send_res res;
    assert_int_equal(send(f, "t-2", "m-2", "hello", 0, 0, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REGISTER);
    assert_null(res.held);
    assert_int_equal(res.state, ONCE_STATE_COMPLETED);
    fx_res_clear(&res);
    assert_true(stored(f, "t-2"));
    assert_events(f, "t-2", 4);
    assert_int_equal(registered(f), r0 + 1);
}

static void the_second_registration_replays(void **state)
{
    fx *f = *state;
    uint64_t r0 = registered(f);
    once__held *a = hold_new(f, "t-3", "m-3");
    once__held *b = hold_new(f, "t-3", "m-3");   /* the same message, not stored yet */
    landing la = {0}, lb = {0};
    once__engine_held_start(a, landed, &la);
    assert_true(tt_wait_until(has_landed, &la, WAIT_MS));
    assert_int_equal(la.rc, ONCE_OK);
    once__engine_held_start(b, landed, &lb);
    assert_true(tt_wait_until(has_landed, &lb, WAIT_MS));
    assert_int_equal(lb.rc, ONCE_EEXISTS);

    once_send_res res;
    assert_int_equal(send(f, "t-3", "m-3", "hello", 0, 0, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REPLAY);
    assert_int_equal(res.state, ONCE_STATE_COMPLETED);
    fx_res_clear(&res);
    assert_events(f, "t-3", 4);
    assert_int_equal(registered(f), r0 + 1);
}

static void inline_only_never_waits(void **state)
{
    fx *f = *state;
    /* A task asking for input (to continue), and one completed (to replay). */
    once_send_res res;
    assert_int_equal(send(f, "t-ask", "m-a1", "ask:more?", 0, 0, 0, &res), ONCE_OK);
    assert_int_equal(res.state, ONCE_STATE_INPUT_REQUIRED);
    fx_res_clear(&res);
    assert_int_equal(send(f, "t-done", "m-d1", "hello", 0, 0, 0, &res), ONCE_OK);
    fx_res_clear(&res);

    /* A commit held in its fsync: whatever waits for the writer waits now. */
    once__held *h = hold_new(f, "t-4", "m-4");
    landing l = {0};
    shim_hold_syncs(1);
    once__engine_held_start(h, landed, &l);
    assert_true(shim_wait_held(WAIT_MS));

    assert_int_equal(send(f, "t-5", "m-5", "hello", 1, 1, 0, &res), ONCE_OK);
    assert_non_null(res.held);   /* a new task: returned without waiting */
    once__engine_held_drop(res.held);
    res.held = NULL;
    fx_res_clear(&res);
    assert_int_equal(send(f, "t-done", "m-d1", "hello", 1, 1, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REPLAY);
    fx_res_clear(&res);
    assert_int_equal(send(f, "t-ask", "m-a2", "yes", 1, 1, 0, &res), ONCE__EAGAIN);
    fx_res_clear(&res);
    assert_int_equal(send(f, "t-6", "m-6", "hello", 1, 1, 1, &res), ONCE__EAGAIN);
    fx_res_clear(&res);
    assert_int_equal(atomic_load(&l.n), 0);   /* all that while, the commit was held */

    shim_hold_syncs(0);
    shim_release(0);
    assert_true(tt_wait_until(has_landed, &l, WAIT_MS));
    assert_int_equal(l.rc, ONCE_OK);
    assert_false(stored(f, "t-5"));   /* dropped: nothing written */
    assert_false(stored(f, "t-6"));
    once_record r;
    assert_int_equal(once_store_load(f->s, P, "t-ask", &r, NULL), ONCE_OK);
    assert_int_equal(r.state, ONCE_STATE_INPUT_REQUIRED);   /* the continuation wrote nothing */
    once_record_clear(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(answer_waits_for_its_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(failed_write_stores_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(the_second_registration_replays, setup, teardown),
        cmocka_unit_test_setup_teardown(inline_only_never_waits, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
