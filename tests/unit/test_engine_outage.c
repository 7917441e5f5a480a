/*
 * test_engine_outage.c -- what a turn does when the store goes away, and
 * how leases and the turn queue behave under load:
 *   - a write that meets an outage is kept and applied when the store
 *     returns, however long the outage lasted, while the fence holds: the
 *     task completes once, is never failed, and the agent ran once;
 *   - when another replica took the lease over meanwhile (a partition: this
 *     replica could not reach the store, the other could), the late write
 *     is fenced off, and the agent ran again only there, with fence + 1 and
 *     resumed set;
 *   - the lease is taken when a turn starts: the heartbeat renews running
 *     turns only, with the store's lease-only write (no version bump);
 *   - the queue is bounded: past it a send is refused with ONCE_EOVERLOAD
 *     and nothing is written; a replay is still answered, and a send whose
 *     task ID the server mints is refused without a store read; a replica does not take over a task whose
 *     turn waits on its own queue, and a queued turn whose lease went
 *     elsewhere never runs here;
 *   - onced's /readyz answers 503 while the store cannot answer, 200 when
 *     it is back (/healthz stays 200).
 * The store behind the engine is a memory store behind a forwarding vtable
 * that fails every call while `down` is set.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "http/serve.h"
#include "unit/engine_fixture.h"

static const char *P = "alice";

#define LEASE_MS 1000

/* --plain-ids for the next replica_open (0: the default). */
static int plain_ids;
static int admit_wait_ms; /* replica_open's, 0: the engine's default */

typedef struct gated_store {
    once_store base;
    once_store *inner;
    int down;          /* __atomic: every call answers ONCE_ESTORE */
    int failed;        /* __atomic: calls answered ONCE_ESTORE so far */
    int renews;        /* __atomic: renew calls that reached the inner store */
    int loads;         /* __atomic: load calls */
} gated_store;

static int gs_down(once_store *s)
{
    gated_store *g = (gated_store *)s;
    if (!__atomic_load_n(&g->down, __ATOMIC_SEQ_CST))
        return 0;
    __atomic_fetch_add(&g->failed, 1, __ATOMIC_SEQ_CST);
    return 1;
}

#define INNER(s) (((gated_store *)(s))->inner)

static int gs_create(once_store *s, const once_record *rec, const once_event *ev, size_t nev,
                     once_record *winner, once_tombstone *tomb)
{
    return gs_down(s) ? ONCE_ESTORE : once_store_create(INNER(s), rec, ev, nev, winner, tomb);
}
static int gs_load(once_store *s, const char *p, const char *t, once_record *out,
                   once_tombstone *tomb)
{
    __atomic_fetch_add(&((gated_store *)s)->loads, 1, __ATOMIC_SEQ_CST);
    return gs_down(s) ? ONCE_ESTORE : once_store_load(INNER(s), p, t, out, tomb);
}
static int gs_update(once_store *s, const once_record *rec, int64_t v, const once_event *ev,
                     size_t nev)
{
    return gs_down(s) ? ONCE_ESTORE : once_store_update(INNER(s), rec, v, ev, nev);
}
static int gs_events(once_store *s, const char *p, const char *t, int64_t after, size_t max,
                     once_event_list *out)
{
    return gs_down(s) ? ONCE_ESTORE : once_store_events(INNER(s), p, t, after, max, out);
}
static int gs_expired(once_store *s, int64_t now, size_t max, once_key_list *out)
{
    return gs_down(s) ? ONCE_ESTORE : once_store_expired_leases(INNER(s), now, max, out);
}
static int gs_sweep(once_store *s, int64_t fb, int64_t now, size_t max, size_t *n)
{
    return gs_down(s) ? ONCE_ESTORE : once_store_sweep(INNER(s), fb, now, max, n);
}
static int gs_purge(once_store *s, int64_t eb, size_t max, size_t *n)
{
    return gs_down(s) ? ONCE_ESTORE : once_store_purge(INNER(s), eb, max, n);
}
static int gs_list(once_store *s, const once_list_query *q, once_record_list *out)
{
    return gs_down(s) ? ONCE_ESTORE : once_store_list(INNER(s), q, out);
}
static int gs_meta(once_store *s, const char *name, const char *init, char **out)
{
    return gs_down(s) ? ONCE_ESTORE : once_store_meta(INNER(s), name, init, out);
}
static int gs_check(once_store *s, once_check_report *rep)
{
    return once_store_check(INNER(s), rep);
}
static int gs_renew(once_store *s, const char *p, const char *t, const char *owner,
                    int64_t fence, int64_t until)
{
    if (gs_down(s))
        return ONCE_ESTORE;
    __atomic_fetch_add(&((gated_store *)s)->renews, 1, __ATOMIC_SEQ_CST);
    return once_store_renew(INNER(s), p, t, owner, fence, until);
}

static const once_store_methods gated_methods = {
    .version = ONCE_STORE_METHODS_VERSION,
    .scheme = "gated",
    .create = gs_create,
    .load = gs_load,
    .update = gs_update,
    .events = gs_events,
    .expired_leases = gs_expired,
    .sweep = gs_sweep,
    .purge = gs_purge,
    .list = gs_list,
    .meta = gs_meta,
    .check = gs_check,
    .renew = gs_renew,
};

/* One replica: an engine on its own gate in front of the shared store. */
typedef struct replica {
    gated_store gate;
    once__engine *e;
    fx_exec fx;
} replica;

static void replica_open(replica *r, once_store *shared, once_manual_clock *clock,
                         const char *name, int workers, int max_queue, int64_t heartbeat_ms)
{
    memset(r, 0, sizeof *r);
    fx_init(&r->fx);
    r->gate.base.m = &gated_methods;
    r->gate.inner = shared;
    once__engine_config c;
    memset(&c, 0, sizeof c);
    c.store = &r->gate.base;
    c.executor = &r->fx.ex;
    c.clock = &clock->base;
    c.replica_id = name;
    c.workers = workers;
    c.max_queue = max_queue;
    c.plain_ids = plain_ids;
    c.admit_wait_ms = admit_wait_ms;
    c.lease_ms = LEASE_MS;
    c.heartbeat_ms = heartbeat_ms;
    /* Sweeps run only when a test asks for one (once__engine_sweep_once). */
    c.sweep_interval_ms = 3600 * 1000;
    char err[256];
    assert_int_equal(once__engine_new(&c, &r->e, err, sizeof err), ONCE_OK);
    assert_int_equal(once__engine_start(r->e), ONCE_OK);
}

static void replica_close(replica *r)
{
    fx_open_gate(&r->fx);   /* let blocked executors leave */
    __atomic_store_n(&r->gate.down, 0, __ATOMIC_SEQ_CST);
    once__engine_free(r->e);
    fx_destroy(&r->fx);
}

static once_store *shared_open(once_manual_clock *clock)
{
    once_manual_clock_init(clock, 1700000000000LL);
    once_store_options opt;
    memset(&opt, 0, sizeof opt);
    opt.clock = &clock->base;
    once_store *s = NULL;
    assert_int_equal(once_store_open("memory:", &opt, &s, NULL, 0), ONCE_OK);
    return s;
}

/* Poll until *p (an int read atomically) reaches at least want. */
static void wait_atomic_ge(int *p, int want, const char *what)
{
    int64_t until = once_monotonic_ms() + tt_ms(10000);
    while (__atomic_load_n(p, __ATOMIC_SEQ_CST) < want && once_monotonic_ms() < until)
        usleep(1000);
    if (__atomic_load_n(p, __ATOMIC_SEQ_CST) < want)
        fail_msg("timed out waiting for %s (%d < %d)", what, __atomic_load_n(p, __ATOMIC_SEQ_CST),
                 want);
}

static void send_immediate(replica *r, const char *tid, const char *text)
{
    once_send_res res;
    json_t *m = fx_msg(tid, text, tid, NULL);
    assert_int_equal(fx_send(r->e, P, m, 1, 1, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REGISTER);
    fx_res_clear(&res);
    json_decref(m);
}

static int count_in(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* The agent's output meets an outage that outlasts the lease many times
 * over; nobody else can reach the store either. When it returns, the
 * output is applied under the original fence and the task completes: the
 * agent ran once, nothing failed. */
static void test_write_waits_out_outage(void **state)
{
    (void)state;
    once_manual_clock clock;
    once_store *shared = shared_open(&clock);
    replica a;
    replica_open(&a, shared, &clock, "replica-a", 2, 0, 3600 * 1000);

    send_immediate(&a, "t-out-1", "block");
    fx_wait_blocked(&a.fx, 1);
    __atomic_store_n(&a.gate.down, 1, __ATOMIC_SEQ_CST);
    int failed_before = __atomic_load_n(&a.gate.failed, __ATOMIC_SEQ_CST);
    fx_open_gate(&a.fx);
    /* The artifact write met the outage and the worker went on asking. */
    wait_atomic_ge(&a.gate.failed, failed_before + 3, "writes failing against the outage");
    /* Ten leases pass while the store is away. */
    once_manual_clock_advance(&clock, 10 * LEASE_MS);
    int failed_mid = __atomic_load_n(&a.gate.failed, __ATOMIC_SEQ_CST);
    wait_atomic_ge(&a.gate.failed, failed_mid + 2, "the worker still riding the outage out");
    assert_int_equal(__atomic_load_n(&a.fx.done, __ATOMIC_SEQ_CST), 0);
    __atomic_store_n(&a.gate.down, 0, __ATOMIC_SEQ_CST);

    fx_wait_state(shared, P, "t-out-1", ONCE_STATE_COMPLETED);
    fx_wait_done(&a.fx, 1);
    assert_int_equal(__atomic_load_n(&a.fx.last_write_rc, __ATOMIC_SEQ_CST), ONCE_OK);
    assert_int_equal(fx_runs(&a.fx), 1);
    once_record r;
    fx_load(shared, P, "t-out-1", &r);
    assert_int_equal(r.fence, 1);
    assert_int_equal(count_in(r.task_json, "\"artifactId\":\"stale\""), 1);   /* the artifact, once */
    once_record_clear(&r);
    fx_check_events(shared, P, "t-out-1");
    replica_close(&a);
    once_store_close(shared);
}

/* Replica A cannot reach the store while B can. A's lease lapses, B takes
 * the task over (fence 2) and resumes it; when A reaches the store again
 * its held-back output is fenced off. One completed result; the second run
 * had fence + 1 and resumed set. */
static void test_partition_takeover(void **state)
{
    (void)state;
    once_manual_clock clock;
    once_store *shared = shared_open(&clock);
    replica a, b;
    replica_open(&a, shared, &clock, "replica-a", 2, 0, 3600 * 1000);
    replica_open(&b, shared, &clock, "replica-b", 2, 0, 3600 * 1000);
    b.fx.no_block = 1;

    send_immediate(&a, "t-part-1", "block");
    fx_wait_blocked(&a.fx, 1);
    __atomic_store_n(&a.gate.down, 1, __ATOMIC_SEQ_CST);
    int failed_before = __atomic_load_n(&a.gate.failed, __ATOMIC_SEQ_CST);
    fx_open_gate(&a.fx);
    wait_atomic_ge(&a.gate.failed, failed_before + 1, "A's write meeting the outage");

    once_manual_clock_advance(&clock, 2 * LEASE_MS);
    assert_int_equal(once__engine_sweep_once(b.e), ONCE_OK);
    fx_wait_state(shared, P, "t-part-1", ONCE_STATE_COMPLETED);
    fx_wait_done(&b.fx, 1);
    assert_int_equal(fx_runs(&b.fx), 1);
    assert_int_equal(b.fx.resumed_seen, 1);
    assert_int_equal(b.fx.step_seen, 3);   /* A's checkpoint */

    __atomic_store_n(&a.gate.down, 0, __ATOMIC_SEQ_CST);
    fx_wait_done(&a.fx, 1);
    assert_int_equal(__atomic_load_n(&a.fx.last_write_rc, __ATOMIC_SEQ_CST), ONCE_EFENCED);
    once_record r;
    fx_load(shared, P, "t-part-1", &r);
    assert_int_equal(r.fence, 2);
    assert_int_equal(r.state, ONCE_STATE_COMPLETED);
    assert_int_equal(count_in(r.task_json, "\"artifactId\":\"stale\""), 0);   /* A's output: fenced off */
    once_record_clear(&r);
    once__engine_stats st;
    once__engine_get_stats(b.e, &st);
    assert_int_equal(st.takeovers, 1);
    fx_check_events(shared, P, "t-part-1");
    replica_close(&a);
    replica_close(&b);
    once_store_close(shared);
}

/* A send that finds the queue full waits for room instead of being refused
 * at once: one worker, a queue of two, an admission wait far longer than
 * the test needs. The fourth send is seen waiting (the admit_waits count),
 * the blocked turn is let go, the worker takes a queued turn, and the
 * waiting send is admitted: registered, its turn queued, the queue never
 * past its bound. */
typedef struct admit_arg {
    replica *r;
    int rc;
    once_verdict verdict;
} admit_arg;

static void *admit_send(void *arg)
{
    admit_arg *a = arg;
    once_send_res res;
    json_t *m = fx_msg("t-adm-4", "hello", "t-adm-4", NULL);
    a->rc = fx_send(a->r->e, P, m, 1, 1, &res);
    a->verdict = res.verdict;
    if (a->rc == ONCE_OK)
        fx_res_clear(&res);
    json_decref(m);
    return NULL;
}

static void test_full_queue_admits_after_a_wait(void **state)
{
    (void)state;
    once_manual_clock clock;
    once_store *shared = shared_open(&clock);
    replica a;
    admit_wait_ms = (int)tt_ms(60000);
    replica_open(&a, shared, &clock, "replica-a", 1, 2, 5);
    admit_wait_ms = 0;

    send_immediate(&a, "t-adm-1", "block");
    fx_wait_blocked(&a.fx, 1);
    send_immediate(&a, "t-adm-2", "hello");
    send_immediate(&a, "t-adm-3", "hello");

    admit_arg arg = {&a, -1, ONCE_V_REGISTER};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, admit_send, &arg), 0);
    once__engine_stats st;
    int64_t until = once_monotonic_ms() + tt_ms(10000);
    for (;;) {   /* the send reached the full queue and waits */
        once__engine_get_stats(a.e, &st);
        if (st.admit_waits == 1 || once_monotonic_ms() > until)
            break;
        usleep(2000);
    }
    assert_int_equal(st.admit_waits, 1);
    assert_int_equal(st.overloaded, 0);
    assert_int_equal(st.queued, 2);

    fx_open_gate(&a.fx);   /* the worker finishes t-adm-1 and takes t-adm-2 */
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(arg.rc, ONCE_OK);
    assert_int_equal(arg.verdict, ONCE_V_REGISTER);
    once__engine_get_stats(a.e, &st);
    assert_int_equal(st.overloaded, 0);
    assert_true(st.queued <= 2);
    fx_settle(a.e, shared, P);
    once_record r;
    fx_load(shared, P, "t-adm-4", &r);
    assert_int_equal(r.state, ONCE_STATE_COMPLETED);
    once_record_clear(&r);
    replica_close(&a);
    once_store_close(shared);
}

/* One worker, a queue of two. The running turn's lease is renewed by the
 * heartbeat without a version bump; the queued turns' leases are not
 * touched; a fourth send is refused with nothing written. */
static void test_queue_bound_and_renewal(void **state)
{
    (void)state;
    once_manual_clock clock;
    once_store *shared = shared_open(&clock);
    replica a;
    plain_ids = ONCE_PLAIN_IDS_SERVER;
    replica_open(&a, shared, &clock, "replica-a", 1, 2, 5);
    plain_ids = 0;

    send_immediate(&a, "t-q-1", "block");
    fx_wait_blocked(&a.fx, 1);
    send_immediate(&a, "t-q-2", "hello");
    send_immediate(&a, "t-q-3", "hello");

    once_send_res res;
    json_t *m = fx_msg("t-q-4", "hello", "t-q-4", NULL);
    assert_int_equal(fx_send(a.e, P, m, 1, 1, &res), ONCE_EOVERLOAD);
    assert_null(res.result);
    once_record r;
    assert_int_equal(once_store_load(shared, P, "t-q-4", &r, NULL), ONCE_ENOTFOUND);
    /* A replay is answered with the queue full. */
    json_t *other = fx_msg("t-q-2", "hello", "t-q-2", NULL);
    assert_int_equal(fx_send(a.e, P, other, 1, 1, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REPLAY);
    fx_res_clear(&res);
    json_decref(other);
    /* A plain message whose task ID the server mints names no stored task:
     * refused before any store read. */
    int loads = __atomic_load_n(&a.gate.loads, __ATOMIC_SEQ_CST);
    other = fx_msg("m-q-5", "hello", NULL, NULL);
    assert_int_equal(fx_send(a.e, P, other, 0, 1, &res), ONCE_EOVERLOAD);
    assert_int_equal(__atomic_load_n(&a.gate.loads, __ATOMIC_SEQ_CST), loads);
    json_decref(other);
    once__engine_stats st;
    once__engine_get_stats(a.e, &st);
    assert_int_equal(st.overloaded, 2);
    assert_int_equal(st.queued, 2);

    /* Heartbeats renew the running turn's lease, not its record. */
    once_record run0, q0;
    fx_load(shared, P, "t-q-1", &run0);
    fx_load(shared, P, "t-q-2", &q0);
    once_manual_clock_advance(&clock, LEASE_MS / 2);
    int64_t want = once_now(&clock.base) + LEASE_MS;
    int64_t until = once_monotonic_ms() + tt_ms(10000);
    for (;;) {
        fx_load(shared, P, "t-q-1", &r);
        int64_t got = r.lease_until;
        assert_int_equal(r.version, run0.version);
        once_record_clear(&r);
        if (got == want)
            break;
        if (once_monotonic_ms() > until)
            fail_msg("the running turn's lease was not renewed");
        usleep(1000);
    }
    fx_load(shared, P, "t-q-2", &r);
    assert_int_equal(r.lease_until, q0.lease_until);   /* waiting: not renewed */
    assert_int_equal(r.version, q0.version);
    once_record_clear(&r);
    once_record_clear(&run0);
    once_record_clear(&q0);

    fx_open_gate(&a.fx);
    fx_wait_state(shared, P, "t-q-3", ONCE_STATE_COMPLETED);
    assert_int_equal(fx_send(a.e, P, m, 1, 1, &res), ONCE_OK);   /* the retry lands */
    assert_int_equal(res.verdict, ONCE_V_REGISTER);
    fx_res_clear(&res);
    fx_wait_state(shared, P, "t-q-4", ONCE_STATE_COMPLETED);
    json_decref(m);
    replica_close(&a);
    once_store_close(shared);
}

/* A turn waits on A's queue past its lease. A's own sweep leaves it alone
 * (no takeover of its own work); B's sweep takes it over and runs it. When
 * A's worker reaches the queued turn, its lease renewal meets fence 2 and
 * the turn is dropped: the agent ran once, on B. */
static void test_queued_lease_goes_elsewhere(void **state)
{
    (void)state;
    once_manual_clock clock;
    once_store *shared = shared_open(&clock);
    replica a, b;
    replica_open(&a, shared, &clock, "replica-a", 1, 0, 3600 * 1000);
    replica_open(&b, shared, &clock, "replica-b", 1, 0, 3600 * 1000);

    send_immediate(&a, "t-w-1", "block");
    fx_wait_blocked(&a.fx, 1);
    send_immediate(&a, "t-w-2", "hello");
    once_manual_clock_advance(&clock, 2 * LEASE_MS);

    assert_int_equal(once__engine_sweep_once(a.e), ONCE_OK);
    once__engine_stats st;
    once__engine_get_stats(a.e, &st);
    assert_int_equal(st.takeovers, 1);   /* t-w-1 (running, no heartbeat), not t-w-2 */
    once_record r;
    fx_load(shared, P, "t-w-2", &r);
    assert_int_equal(r.fence, 1);
    once_record_clear(&r);

    assert_int_equal(once__engine_sweep_once(b.e), ONCE_OK);
    fx_wait_state(shared, P, "t-w-2", ONCE_STATE_COMPLETED);
    fx_load(shared, P, "t-w-2", &r);
    assert_int_equal(r.fence, 2);
    assert_string_equal(r.lease_owner, "");
    once_record_clear(&r);

    int renews_before = __atomic_load_n(&a.gate.renews, __ATOMIC_SEQ_CST);
    fx_open_gate(&a.fx);
    /* A's worker finishes t-w-1's turns (the stale one is fenced, the
     * takeover's resumed turn completes) and then reaches t-w-2: a renewal
     * that meets fence 2 is the positive sign it decided about it. */
    fx_wait_state(shared, P, "t-w-1", ONCE_STATE_COMPLETED);
    wait_atomic_ge(&a.gate.renews, renews_before + 2, "A's worker starting its queued turns");
    once__engine_get_stats(a.e, &st);
    int64_t until = once_monotonic_ms() + tt_ms(10000);
    while (st.queued != 0 && once_monotonic_ms() < until) {
        usleep(1000);
        once__engine_get_stats(a.e, &st);
    }
    assert_int_equal(st.queued, 0);
    fx_wait_done(&b.fx, 1);
    assert_int_equal(fx_runs(&b.fx), 1);
    /* t-w-1 twice on A (the first turn, then its own takeover's), t-w-2
     * never on A. */
    fx_wait_done(&a.fx, 2);
    assert_int_equal(fx_runs(&a.fx), 2);
    replica_close(&a);
    replica_close(&b);
    once_store_close(shared);
}

/* GET path from the server on 127.0.0.1:port; the HTTP status code. */
static int http_status(int port, const char *path)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct timeval tv = {tt_ms(10000) / 1000, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    char req[256];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                     path);
    assert_int_equal(write(fd, req, (size_t)n), n);
    char resp[64] = "";
    ssize_t got = read(fd, resp, sizeof resp - 1);
    close(fd);
    assert_true(got > 12);
    resp[got] = '\0';
    int status = 0;
    assert_int_equal(sscanf(resp, "HTTP/1.1 %d", &status), 1);
    return status;
}

/* /readyz asks the store each time: 503 while it cannot answer, 200 again
 * when it is back; /healthz stays 200 throughout (the process is alive). */
static void test_readyz_follows_the_store(void **state)
{
    (void)state;
    once_manual_clock clock;
    once_store *shared = shared_open(&clock);
    gated_store gate;
    memset(&gate, 0, sizeof gate);
    gate.base.m = &gated_methods;
    gate.inner = shared;
    once_serve_config sc;
    memset(&sc, 0, sizeof sc);
    sc.engine.store = &gate.base;
    sc.engine.executor = once_executor_echo();
    sc.engine.clock = &clock.base;
    sc.a2a.url = "http://127.0.0.1/";
    sc.http.host = "127.0.0.1";
    once_server *srv = NULL;
    char err[256];
    assert_int_equal(once__serve_start(&sc, &srv, err, sizeof err), ONCE_OK);
    int port = once_server_port(srv);
    assert_int_equal(http_status(port, "/readyz"), 200);
    __atomic_store_n(&gate.down, 1, __ATOMIC_SEQ_CST);
    assert_int_equal(http_status(port, "/readyz"), 503);
    assert_int_equal(http_status(port, "/healthz"), 200);
    __atomic_store_n(&gate.down, 0, __ATOMIC_SEQ_CST);
    assert_int_equal(http_status(port, "/readyz"), 200);
    once_server_stop(srv);
    once_store_close(shared);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_waits_out_outage),
        cmocka_unit_test(test_partition_takeover),
        cmocka_unit_test(test_queue_bound_and_renewal),
        cmocka_unit_test(test_full_queue_admits_after_a_wait),
        cmocka_unit_test(test_queued_lease_goes_elsewhere),
        cmocka_unit_test(test_readyz_follows_the_store),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
