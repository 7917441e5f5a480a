/*
 * test_engine_batch.c -- a turn of the built-in echo executor commits its
 * writes together (src/engine/work.c). A blocking send of a new task that
 * finishes at once costs the store one write: the create of the record
 * with the registration's event and the turn's three (WORKING, the
 * artifact, COMPLETED), one generation each. A returnImmediately send
 * costs two, its registration and one update with the three events, and no
 * lease renewal, since the registration gave the turn a fresh lease. A
 * create that loses to another registration of the task, or whose answer
 * is lost in an outage, leaves one task with its events once: the send (or
 * its retry) replays what is stored. The batch keeps what single writes
 * guarantee:
 *   - a CAS that loses to another write (same fence) re-applies the whole
 *     batch to the record it re-loads: every event once, in order;
 *   - a CAS whose answer was lost in an outage (it landed) is found in the
 *     store and not written again: no event twice;
 *   - a turn whose fence moved before its batch was committed writes
 *     nothing: none of its events becomes visible.
 * A blocking send whose turn the executor calls quick (echo: anything but
 * "sleep:N") runs that turn on the sending thread and answers from its last
 * write; a sleeping turn, and any turn of a returnImmediately send, goes to
 * a turn worker: which thread wrote the update tells them apart.
 * The engine runs on a memory store behind a forwarding table that counts
 * calls and can act once, before the first update reaches the store.
 */
#include "unit/engine_fixture.h"

static const char *P = "alice";

enum { ACT_NONE, ACT_CONFLICT, ACT_LOST_REPLY, ACT_FENCE, ACT_CREATE_RACE, ACT_CREATE_LOST };

typedef struct counting_store {
    once_store base;
    once_store *inner;
    int creates, updates, renews;   /* __atomic: calls that reached the inner store */
    int act;                        /* __atomic: what the next update (or, for
                                     * ACT_CREATE_*, create) does first */
    pthread_t creator;              /* the thread of the last create, set before it
                                     * reaches the store */
    pthread_t updater;              /* the thread of the last update, set before
                                     * it reaches the store (read after it did) */
    int updated;                    /* __atomic: updates seen */
} counting_store;

#define CS(s) ((counting_store *)(s))
#define INNER(s) (CS(s)->inner)

static int cs_create(once_store *s, const once_record *rec, const once_event *ev, size_t nev,
                     once_record *winner, once_tombstone *tomb)
{
    __atomic_fetch_add(&CS(s)->creates, 1, __ATOMIC_SEQ_CST);
    CS(s)->creator = pthread_self();
    int act = __atomic_load_n(&CS(s)->act, __ATOMIC_SEQ_CST);
    if (act == ACT_CREATE_RACE || act == ACT_CREATE_LOST)
        __atomic_store_n(&CS(s)->act, ACT_NONE, __ATOMIC_SEQ_CST);
    if (act == ACT_CREATE_RACE) /* the same registration, from elsewhere, first */
        assert_int_equal(once_store_create(INNER(s), rec, ev, nev, NULL, NULL), ONCE_OK);
    int rc = once_store_create(INNER(s), rec, ev, nev, winner, tomb);
    if (act == ACT_CREATE_LOST && rc == ONCE_OK)
        return ONCE_ESTORE;   /* it landed; the answer did not come back */
    return rc;
}

/* Another writer gets in before this update: the stored record moves on
 * one version with the same content (ACT_CONFLICT) or with the fence
 * bumped, as a takeover or cancel elsewhere would (ACT_FENCE). */
static void write_between(once_store *s, const once_record *rec, int bump_fence)
{
    once_record cur;
    assert_int_equal(once_store_load(INNER(s), rec->principal, rec->task_id, &cur, NULL),
                     ONCE_OK);
    cur.version++;
    cur.fence += bump_fence;
    assert_int_equal(once_store_update(INNER(s), &cur, cur.version - 1, NULL, 0), ONCE_OK);
    once_record_clear(&cur);
}

static int cs_update(once_store *s, const once_record *rec, int64_t expect,
                     const once_event *ev, size_t nev)
{
    __atomic_fetch_add(&CS(s)->updates, 1, __ATOMIC_SEQ_CST);
    int act = __atomic_load_n(&CS(s)->act, __ATOMIC_SEQ_CST);
    if (act == ACT_CREATE_RACE || act == ACT_CREATE_LOST)
        act = ACT_NONE;
    else
        __atomic_store_n(&CS(s)->act, ACT_NONE, __ATOMIC_SEQ_CST);
    if (act == ACT_CONFLICT || act == ACT_FENCE)
        write_between(s, rec, act == ACT_FENCE);
    /* Before the write: whoever sees the write sees this too. */
    CS(s)->updater = pthread_self();
    __atomic_fetch_add(&CS(s)->updated, 1, __ATOMIC_SEQ_CST);
    int rc = once_store_update(INNER(s), rec, expect, ev, nev);
    if (act == ACT_LOST_REPLY && rc == ONCE_OK)
        return ONCE_ESTORE;   /* it landed; the answer did not come back */
    return rc;
}

static int cs_load(once_store *s, const char *p, const char *t, once_record *out,
                   once_tombstone *tomb)
{
    return once_store_load(INNER(s), p, t, out, tomb);
}
static int cs_events(once_store *s, const char *p, const char *t, int64_t after, size_t max,
                     once_event_list *out)
{
    return once_store_events(INNER(s), p, t, after, max, out);
}
static int cs_expired(once_store *s, int64_t now, size_t max, once_key_list *out)
{
    return once_store_expired_leases(INNER(s), now, max, out);
}
static int cs_sweep(once_store *s, int64_t fb, int64_t now, size_t max, size_t *n)
{
    return once_store_sweep(INNER(s), fb, now, max, n);
}
static int cs_purge(once_store *s, int64_t eb, size_t max, size_t *n)
{
    return once_store_purge(INNER(s), eb, max, n);
}
static int cs_list(once_store *s, const once_list_query *q, once_record_list *out)
{
    return once_store_list(INNER(s), q, out);
}
static int cs_meta(once_store *s, const char *name, const char *init, char **out)
{
    return once_store_meta(INNER(s), name, init, out);
}
static int cs_check(once_store *s, once_check_report *rep)
{
    return once_store_check(INNER(s), rep);
}
static int cs_renew(once_store *s, const char *p, const char *t, const char *owner,
                    int64_t fence, int64_t until)
{
    __atomic_fetch_add(&CS(s)->renews, 1, __ATOMIC_SEQ_CST);
    return once_store_renew(INNER(s), p, t, owner, fence, until);
}

static const once_store_methods counting_methods = {
    .version = ONCE_STORE_METHODS_VERSION,
    .scheme = "counting",
    .create = cs_create,
    .load = cs_load,
    .update = cs_update,
    .events = cs_events,
    .expired_leases = cs_expired,
    .sweep = cs_sweep,
    .purge = cs_purge,
    .list = cs_list,
    .meta = cs_meta,
    .check = cs_check,
    .renew = cs_renew,
};

typedef struct env {
    counting_store cs;
    once__engine *e;
} env;

static void env_open(env *v, int act)
{
    memset(v, 0, sizeof *v);
    assert_int_equal(once_store_open("memory:", NULL, &v->cs.inner, NULL, 0), ONCE_OK);
    v->cs.base.m = &counting_methods;
    v->cs.act = act;
    once__engine_config c;
    memset(&c, 0, sizeof c);
    c.store = &v->cs.base;
    c.executor = once_executor_echo();
    c.replica_id = "replica-a";
    c.workers = 2;
    assert_int_equal(once__engine_new(&c, &v->e, NULL, 0), ONCE_OK);
    assert_int_equal(once__engine_start(v->e), ONCE_OK);
}

static void env_close(env *v)
{
    once__engine_free(v->e);
    once_store_close(v->cs.inner);
}

/* A blocking send of `text` as a new task; its answer's state. */
static once_state send_new(env *v, const char *id, const char *text)
{
    json_t *m = fx_msg(id, text, id, NULL);
    once_send_res res;
    assert_int_equal(fx_send(v->e, P, m, 1, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REGISTER);
    once_state st = res.state;
    json_decref(res.result);
    json_decref(m);
    return st;
}

/* The task's events are exactly: the task, WORKING, the echo artifact,
 * COMPLETED, numbered 1..4. */
static void assert_echo_events(env *v, const char *id)
{
    once_event_list l;
    assert_int_equal(once_store_events(v->cs.inner, P, id, 0, 0, &l), ONCE_OK);
    assert_int_equal(l.n, 4);
    static const char *const has[] = {"\"task\"", "TASK_STATE_WORKING", "\"artifactUpdate\"",
                                      "TASK_STATE_COMPLETED"};
    for (size_t i = 0; i < l.n; i++) {
        assert_int_equal(l.v[i].generation, (int64_t)i + 1);
        assert_non_null(strstr(l.v[i].payload, has[i]));
    }
    once_event_list_clear(&l);
}

/* A new echo task sent with returnImmediately (its turn queued), the store
 * acting as `act` on the first update: it completes with its four events,
 * after `updates` update calls. */
static void check_echo_task(int act, const char *id, int updates)
{
    env v;
    env_open(&v, act);
    json_t *m = fx_msg(id, "hello", id, NULL);
    once_send_res res;
    assert_int_equal(fx_send(v.e, P, m, 1, 1, &res), ONCE_OK);
    fx_wait_state(v.cs.inner, P, id, ONCE_STATE_COMPLETED);
    assert_int_equal(__atomic_load_n(&v.cs.creates, __ATOMIC_SEQ_CST), 1);
    assert_int_equal(__atomic_load_n(&v.cs.updates, __ATOMIC_SEQ_CST), updates);
    assert_int_equal(__atomic_load_n(&v.cs.renews, __ATOMIC_SEQ_CST), 0);
    assert_echo_events(&v, id);
    fx_res_clear(&res);
    json_decref(m);
    env_close(&v);
}

static void echo_task_is_two_writes(void **state)
{
    (void)state;
    check_echo_task(ACT_NONE, "t-1", 1);
}

static void lost_race_applies_the_batch_again(void **state)
{
    (void)state;
    /* The CAS that lost, and the one that applied the batch again. */
    check_echo_task(ACT_CONFLICT, "t-2", 2);
}

static void landed_batch_is_not_written_twice(void **state)
{
    (void)state;
    check_echo_task(ACT_LOST_REPLY, "t-3", 1);
}

static void fenced_batch_writes_nothing(void **state)
{
    (void)state;
    env v;
    env_open(&v, ACT_FENCE);
    /* Queued, so the turn's batch is an update that meets the fence. */
    json_t *m = fx_msg("t-4", "hello", "t-4", NULL);
    once_send_req req;
    memset(&req, 0, sizeof req);
    req.principal = P;
    req.message = m;
    req.task_id = "t-4";
    req.extension = 1;
    req.history_length = -1;
    req.return_immediately = 1;
    once_send_res res;
    assert_int_equal(once__engine_send(v.e, &req, &res), ONCE_OK);
    json_decref(res.result);
    json_decref(m);
    /* The positive signal that the turn got past its commit: the fenced
     * write is counted. */
    once__engine_stats st;
    int64_t until = once_monotonic_ms() + tt_ms(10000);
    for (;;) {
        once__engine_get_stats(v.e, &st);
        if (st.fenced_writes != 0 || once_monotonic_ms() >= until)
            break;
        usleep(1000);
    }
    assert_int_equal(st.fenced_writes, 1);
    once_record rec;
    assert_int_equal(once_store_load(v.cs.inner, P, "t-4", &rec, NULL), ONCE_OK);
    assert_int_equal(rec.state, ONCE_STATE_SUBMITTED);
    assert_int_equal(rec.generation, 1);
    once_record_clear(&rec);
    once_event_list l;
    assert_int_equal(once_store_events(v.cs.inner, P, "t-4", 0, 0, &l), ONCE_OK);
    assert_int_equal(l.n, 1);
    once_event_list_clear(&l);
    env_close(&v);
}

static uint64_t inline_turns(env *v)
{
    once__engine_stats st;
    once__engine_get_stats(v->e, &st);
    return st.inline_turns;
}

static void blocking_echo_task_is_one_write(void **state)
{
    (void)state;
    env v;
    env_open(&v, ACT_NONE);
    assert_int_equal(send_new(&v, "t-5", "hello"), ONCE_STATE_COMPLETED);
    assert_int_equal(__atomic_load_n(&v.cs.creates, __ATOMIC_SEQ_CST), 1);
    assert_int_equal(__atomic_load_n(&v.cs.updates, __ATOMIC_SEQ_CST), 0);
    assert_int_equal(__atomic_load_n(&v.cs.renews, __ATOMIC_SEQ_CST), 0);
    assert_true(pthread_equal(v.cs.creator, pthread_self()));
    assert_int_equal(inline_turns(&v), 1);
    assert_echo_events(&v, "t-5");
    env_close(&v);
}

static void sleeping_turn_goes_to_a_worker(void **state)
{
    (void)state;
    env v;
    env_open(&v, ACT_NONE);
    /* Registered here, then the turn's one update on a worker. */
    assert_int_equal(send_new(&v, "t-6", "sleep:0"), ONCE_STATE_COMPLETED);
    assert_int_equal(__atomic_load_n(&v.cs.creates, __ATOMIC_SEQ_CST), 1);
    assert_int_equal(__atomic_load_n(&v.cs.updated, __ATOMIC_SEQ_CST), 1);
    assert_false(pthread_equal(v.cs.updater, pthread_self()));
    assert_int_equal(inline_turns(&v), 0);
    env_close(&v);
}

/* A blocking send whose create meets the same registration stored first
 * (another replica's, racing): the send replays it. One task, its four
 * events once. */
static void lost_create_race_replays(void **state)
{
    (void)state;
    env v;
    env_open(&v, ACT_CREATE_RACE);
    json_t *m = fx_msg("t-8", "hello", "t-8", NULL);
    once_send_res res;
    assert_int_equal(fx_send(v.e, P, m, 1, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REPLAY);
    assert_int_equal(res.replayed, 1);
    assert_int_equal(res.state, ONCE_STATE_COMPLETED);
    assert_int_equal(__atomic_load_n(&v.cs.creates, __ATOMIC_SEQ_CST), 1);
    assert_int_equal(__atomic_load_n(&v.cs.updates, __ATOMIC_SEQ_CST), 0);
    assert_echo_events(&v, "t-8");
    fx_res_clear(&res);
    json_decref(m);
    env_close(&v);
}

/* A create that landed but whose answer was lost: the send fails with the
 * store's error, and its retry replays the task. */
static void lost_create_answer_is_replayed(void **state)
{
    (void)state;
    env v;
    env_open(&v, ACT_CREATE_LOST);
    json_t *m = fx_msg("t-9", "hello", "t-9", NULL);
    once_send_res res;
    assert_int_equal(fx_send(v.e, P, m, 1, 0, &res), ONCE_ESTORE);
    fx_res_clear(&res);
    assert_int_equal(fx_send(v.e, P, m, 1, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REPLAY);
    assert_int_equal(res.state, ONCE_STATE_COMPLETED);
    assert_int_equal(__atomic_load_n(&v.cs.creates, __ATOMIC_SEQ_CST), 1);
    assert_echo_events(&v, "t-9");
    fx_res_clear(&res);
    json_decref(m);
    env_close(&v);
}

static void immediate_send_queues_its_turn(void **state)
{
    (void)state;
    env v;
    env_open(&v, ACT_NONE);
    json_t *m = fx_msg("t-7", "hello", "t-7", NULL);
    once_send_res res;
    assert_int_equal(fx_send(v.e, P, m, 1, 1, &res), ONCE_OK);
    fx_wait_state(v.cs.inner, P, "t-7", ONCE_STATE_COMPLETED);
    assert_false(pthread_equal(v.cs.updater, pthread_self()));
    assert_int_equal(inline_turns(&v), 0);
    fx_res_clear(&res);
    json_decref(m);
    env_close(&v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(echo_task_is_two_writes),
        cmocka_unit_test(lost_race_applies_the_batch_again),
        cmocka_unit_test(landed_batch_is_not_written_twice),
        cmocka_unit_test(fenced_batch_writes_nothing),
        cmocka_unit_test(blocking_echo_task_is_one_write),
        cmocka_unit_test(sleeping_turn_goes_to_a_worker),
        cmocka_unit_test(immediate_send_queues_its_turn),
        cmocka_unit_test(lost_create_race_replays),
        cmocka_unit_test(lost_create_answer_is_replayed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
