/*
 * test_push_engine.c -- push delivery through the engine (src/engine/push*.c)
 * against real HTTP receivers on loopback: the receiver library (which
 * verifies signatures, so every delivery here is also a signature check) and
 * a raw canned-response server (to see the exact request and to answer 410
 * or Retry-After). What users rely on:
 *   - a config given with SendMessage gets every event, in order, once;
 *   - failures (500, reset, timeout) are retried with backoff until 2xx, and
 *     the receiver still hands each event over once;
 *   - 410 disables the config, and nothing else does: a receiver failing
 *     (500, timeout, reset, refused address) past max_attempts keeps its
 *     events, retried at the max backoff, the failure recorded and visible
 *     in GetTaskPushNotificationConfig's "delivery";
 *   - Retry-After is honoured, up to the max backoff (a receiver cannot
 *     park deliveries for hours); the backoff never wraps at int64's edge;
 *   - the request carries the A2A and Standard Webhooks headers; its signed
 *     webhook-id names the subscription (the principal's tag under the
 *     store's secret, the config id, since);
 *   - a name that resolves to a blocked address is refused at connect time;
 *   - the config methods: create (SSRF-checked), get, list, replace,
 *     delete (idempotent), limits, unknown tasks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/push_int.h"
#include "once/webhook.h"
#include "timeout.h"

#define SECRET "whsec_cHVzaC1lbmdpbmUtdGVzdC1zZWNyZXQtMDEyMzQ1"
#define SECRET_OLD "an-older-secret-still-accepted"

/* ------------------------------------------------------------------------
 * A raw HTTP server answering every request with one canned response and
 * keeping the last request's text.
 */
typedef struct raw_srv {
    int fd, port;
    pthread_t th;
    pthread_mutex_t mu;
    const char *response; /* the whole HTTP response */
    char last[8192];
    int requests;
    int stop;
} raw_srv;

static void *raw_main(void *arg)
{
    raw_srv *r = arg;
    for (;;) {
        int c = accept(r->fd, NULL, NULL);
        if (c < 0)
            return NULL;
        pthread_mutex_lock(&r->mu);
        int stop = r->stop;
        pthread_mutex_unlock(&r->mu);
        if (stop) {
            close(c);
            return NULL;
        }
        char buf[8192];
        size_t n = 0;
        long want = -1;
        while (n < sizeof buf - 1) {
            ssize_t k = read(c, buf + n, sizeof buf - 1 - n);
            if (k <= 0)
                break;
            n += (size_t)k;
            buf[n] = '\0';
            char *end = strstr(buf, "\r\n\r\n");
            if (end != NULL && want < 0) {
                char *cl = strcasestr(buf, "content-length:");
                want = (long)(end + 4 - buf) + (cl != NULL ? strtol(cl + 15, NULL, 10) : 0);
            }
            if (want >= 0 && (long)n >= want)
                break;
        }
        buf[n] = '\0';
        pthread_mutex_lock(&r->mu);
        memcpy(r->last, buf, n + 1);
        r->requests++;
        const char *resp = r->response;
        pthread_mutex_unlock(&r->mu);
        if (write(c, resp, strlen(resp)) < 0) {
            /* the client went away */
        }
        close(c);
    }
}

static void raw_start(raw_srv *r, const char *response)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    r->response = response;
    r->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(r->fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(r->fd, 16), 0);
    socklen_t len = sizeof a;
    getsockname(r->fd, (struct sockaddr *)&a, &len);
    r->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&r->th, NULL, raw_main, r), 0);
}

static int raw_requests(raw_srv *r)
{
    pthread_mutex_lock(&r->mu);
    int n = r->requests;
    pthread_mutex_unlock(&r->mu);
    return n;
}

static void raw_stop(raw_srv *r)
{
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_mutex_unlock(&r->mu);
    shutdown(r->fd, SHUT_RDWR);
    close(r->fd);
    pthread_join(r->th, NULL);
    pthread_mutex_destroy(&r->mu);
}

/* ------------------------------------------------------------------------
 * A verifying receiver (the library) with a scripted gate.
 */
typedef struct rx {
    char path[128];
    once_webhook *w;
    once_webhook_server *srv;
    pthread_mutex_t mu;
    char log[128][48];
    int n;
    int script[16]; /* gate actions: 0 ok, >= 100 status, -1 reset, -2 slow */
    int nscript;
    int seen;
    int slow_ms;
} rx;

static int rx_gate(void *arg, const once_webhook_request *req)
{
    rx *r = arg;
    (void)req;
    int k = __atomic_fetch_add(&r->seen, 1, __ATOMIC_SEQ_CST);
    int a = k < r->nscript ? r->script[k] : 0;
    if (a == -2) {
        usleep((useconds_t)r->slow_ms * 1000);
        return 0;
    }
    return a;
}

static int rx_handle(void *arg, const once_webhook_event *ev)
{
    rx *r = arg;
    pthread_mutex_lock(&r->mu);
    if (r->n < 128)
        snprintf(r->log[r->n++], sizeof r->log[0], "%s.%lld", ev->task_id,
                 (long long)ev->generation);
    pthread_mutex_unlock(&r->mu);
    return ONCE_OK;
}

static void rx_start(rx *r, const int *script, int n)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    for (int i = 0; i < n; i++)
        r->script[i] = script[i];
    r->nscript = n;
    r->slow_ms = (int)tt_ms(1500); /* well past the sender's timeout (fast_opts) */
    snprintf(r->path, sizeof r->path, "/tmp/once-pushrx-%d-XXXXXX", (int)getpid());
    int fd = mkstemp(r->path);
    close(fd);
    const char *secrets[] = {SECRET};
    once_webhook_options o = {.state_path = r->path,
                              .secrets = secrets,
                              .nsecrets = 1,
                              .handler = rx_handle,
                              .arg = r,
                              .token = "tok"};
    assert_int_equal(once_webhook_open(&o, &r->w, NULL, 0), ONCE_OK);
    once_webhook_listen_options lo = {.gate = rx_gate, .gate_arg = r};
    assert_int_equal(once_webhook_listen(r->w, &lo, &r->srv, NULL, 0), ONCE_OK);
}

static int rx_count(rx *r)
{
    pthread_mutex_lock(&r->mu);
    int n = r->n;
    pthread_mutex_unlock(&r->mu);
    return n;
}

static void rx_stop(rx *r)
{
    once_webhook_server_stop(r->srv);
    once_webhook_close(r->w);
    char p[160];
    unlink(r->path);
    snprintf(p, sizeof p, "%s-wal", r->path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", r->path);
    unlink(p);
    pthread_mutex_destroy(&r->mu);
}

/* ------------------------------------------------------------------------
 * The engine under test.
 */
typedef struct fx {
    once_store *store;
    once__engine *e;
} fx;

/* clock and rng: NULL for the system's. */
static void fx_start_on(fx *f, const once_push_options *po, const once_clock *clock,
                        const once_rng *rng)
{
    assert_int_equal(once_store_open("memory:", NULL, &f->store, NULL, 0), ONCE_OK);
    once__engine_config ec = {.store = f->store,
                             .clock = clock,
                             .rng = rng,
                             .executor = once_executor_echo(),
                             .replica_id = "r-test",
                             .workers = 2};
    char err[256];
    assert_int_equal(once__engine_new(&ec, &f->e, err, sizeof err), ONCE_OK);
    if (once__engine_push_setup(f->e, po, err, sizeof err) != ONCE_OK)
        fail_msg("push setup: %s", err);
    assert_int_equal(once__engine_start(f->e), ONCE_OK);
}

static void fx_start(fx *f, const once_push_options *po)
{
    fx_start_on(f, po, NULL, NULL);
}

static void fx_stop(fx *f)
{
    once__engine_free(f->e);
    once_store_close(f->store);
}

static const char *const allow_lo[] = {"127.0.0.1/32"};
static const char *const secrets1[] = {SECRET};

static once_push_options fast_opts(void)
{
    once_push_options o = {.secrets = secrets1,
                           .nsecrets = 1,
                           .allow = allow_lo,
                           .nallow = 1,
                           .max_attempts = 6,
                           .timeout_ms = tt_ms(400),
                           .backoff_ms = 10,
                           .backoff_cap_ms = 40,
                           .poll_ms = 20,
                           .threads = 2};
    return o;
}

/* SendMessage "text" to a new task id with a push config to url. */
static int send_with_push(fx *f, const char *task_id, const char *text, const char *url,
                          const char *extra_json, once_send_res *res)
{
    char msg[512], cfg[512];
    snprintf(msg, sizeof msg,
             "{\"messageId\":\"m-%s-%s\",\"role\":\"ROLE_USER\",\"taskId\":\"%s\","
             "\"parts\":[{\"text\":\"%s\"}]}",
             task_id, text, task_id, text);
    /* The receivers here take the token "tok" (a receiver requires one). */
    snprintf(cfg, sizeof cfg, "{\"url\":\"%s\"%s}", url,
             extra_json ? extra_json : ",\"token\":\"tok\"");
    json_t *m = json_loads(msg, 0, NULL), *c = json_loads(cfg, 0, NULL);
    once_send_req req = {.principal = "alice",
                         .message = m,
                         .task_id = task_id,
                         .extension = 1,
                         .return_immediately = 0,
                         .history_length = -1,
                         .push_config = url ? c : NULL};
    memset(res, 0, sizeof *res);
    int rc = once__engine_send(f->e, &req, res);
    json_decref(res->result);
    res->result = NULL;
    json_decref(m);
    json_decref(c);
    return rc;
}

static int64_t generation_of(fx *f, const char *task_id)
{
    once_record r;
    assert_int_equal(once_store_load(f->store, "alice", task_id, &r, NULL), ONCE_OK);
    int64_t g = r.generation;
    once_record_clear(&r);
    return g;
}

static once_push_row row_of(fx *f, const char *task_id)
{
    once_push_row_list l;
    assert_int_equal(once_store_push_rows(f->store, "alice", task_id, &l), ONCE_OK);
    assert_int_equal(l.n, 1);
    once_push_row r = l.v[0];
    once_push_row_list_clear(&l);
    return r;
}

static void wait_for(int (*done)(void *), void *arg, int ms, const char *what)
{
    if (!tt_wait_until(done, arg, ms))
        fail_msg("timed out waiting for %s", what);
}

typedef struct rx_want {
    rx *r;
    int n;
} rx_want;
static int rx_reached(void *p)
{
    rx_want *w = p;
    return rx_count(w->r) >= w->n;
}

typedef struct row_want {
    fx *f;
    const char *task;
} row_want;
static int row_disabled(void *p)
{
    row_want *w = p;
    return row_of(w->f, w->task).disabled;
}

typedef struct retries_want {
    fx *f;
    const char *task;
    int64_t n;
} retries_want;
static int row_retried(void *p)
{
    retries_want *w = p;
    return row_of(w->f, w->task).retries >= w->n;
}

typedef struct delivered_want {
    fx *f;
    const char *task;
    int64_t gen;
} delivered_want;
static int row_delivered(void *p)
{
    delivered_want *w = p;
    return row_of(w->f, w->task).delivered >= w->gen;
}

/* The positive signal before counting what the receiver handed over: the
 * sender has delivered the task's row to gen (it sends nothing more for
 * it), and a drain of our own returned (drains run one at a time, so every
 * event recorded by then has been handed over). */
static void settle(fx *f, const char *task, int64_t gen, rx *r)
{
    delivered_want w = {f, task, gen};
    size_t n;
    wait_for(row_delivered, &w, 5000, "the sender to deliver the row to its end");
    assert_int_equal(once_webhook_drain(r->w, &n), ONCE_OK);
}

static int rx_has_duplicate(void *p)
{
    once_webhook_stats ws;
    return once_webhook_get_stats(((rx *)p)->w, &ws) == ONCE_OK && ws.duplicates >= 1;
}

static int raw_got_one(void *p)
{
    return raw_requests(p) > 0;
}

static void url_of(char *buf, size_t n, int port)
{
    snprintf(buf, n, "http://127.0.0.1:%d/hook", port);
}

/* ------------------------------------------------------------------------ */

static void delivers_every_event_once_in_order(void **state)
{
    (void)state;
    rx r;
    rx_start(&r, NULL, 0);
    fx f;
    once_push_options o = fast_opts();
    fx_start(&f, &o);
    char url[64];
    url_of(url, sizeof url, once_webhook_server_port(r.srv));
    once_send_res res;
    assert_int_equal(send_with_push(&f, "t-all", "hello", url, ",\"token\":\"tok\"", &res),
                     ONCE_OK);
    assert_int_equal(res.state, ONCE_STATE_COMPLETED);
    int64_t g = generation_of(&f, "t-all");
    assert_true(g >= 3);
    rx_want w = {&r, (int)g};
    wait_for(rx_reached, &w, 5000, "every event");
    settle(&f, "t-all", g, &r); /* then nothing more arrives */
    assert_int_equal(rx_count(&r), g);
    for (int64_t i = 0; i < g; i++) {
        char want[48];
        snprintf(want, sizeof want, "t-all.%lld", (long long)(i + 1));
        assert_string_equal(r.log[i], want);
    }
    once_push_row row = row_of(&f, "t-all");
    assert_int_equal(row.delivered, g);
    assert_int_equal(row.deliveries, g);
    assert_int_equal(row.failures, 0);
    once_push_stats st;
    once__engine_push_stats(f.e, &st);
    assert_int_equal(st.delivered, (uint64_t)g);
    fx_stop(&f);
    rx_stop(&r);
}

static void retries_until_the_receiver_recovers(void **state)
{
    (void)state;
    const int script[] = {500, -1, -2}; /* 500, connection reset, slower than timeout */
    rx r;
    rx_start(&r, script, 3);
    fx f;
    once_push_options o = fast_opts();
    fx_start(&f, &o);
    char url[64];
    url_of(url, sizeof url, once_webhook_server_port(r.srv));
    once_send_res res;
    assert_int_equal(send_with_push(&f, "t-retry", "hello", url, NULL, &res), ONCE_OK);
    int64_t g = generation_of(&f, "t-retry");
    rx_want w = {&r, (int)g};
    wait_for(rx_reached, &w, 8000, "every event after the failures");
    /* the slow one's late duplicate comes (recorded as such) and goes */
    settle(&f, "t-retry", g, &r);
    wait_for(rx_has_duplicate, &r, 8000, "the timed-out delivery to land late");
    settle(&f, "t-retry", g, &r);
    assert_int_equal(rx_count(&r), g);
    for (int64_t i = 0; i < g; i++) {
        char want[48];
        snprintf(want, sizeof want, "t-retry.%lld", (long long)(i + 1));
        assert_string_equal(r.log[i], want);
    }
    once_push_row row = row_of(&f, "t-retry");
    assert_int_equal(row.delivered, g);
    /* Three scripted failures reached the receiver. The sender counts each
     * failed attempt, except that libcurl itself resends once, unseen, a
     * request whose reused keep-alive connection was reset before any
     * answer: so the reset may or may not count. */
    assert_true(__atomic_load_n(&r.seen, __ATOMIC_SEQ_CST) >= 4);
    assert_true(row.retries >= 2 && row.retries <= 3);
    assert_int_equal(row.failures, row.retries);
    assert_int_equal(row.disabled, 0);
    once_push_stats st;
    once__engine_push_stats(f.e, &st);
    assert_int_equal(st.retried, (uint64_t)row.retries);
    once_webhook_stats ws;
    assert_int_equal(once_webhook_get_stats(r.w, &ws), ONCE_OK);
    assert_true(ws.duplicates >= 1); /* the timed-out one was recorded, then resent */
    fx_stop(&f);
    rx_stop(&r);
}

static void gone_disables_and_is_visible(void **state)
{
    (void)state;
    raw_srv s;
    raw_start(&s, "HTTP/1.1 410 Gone\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    fx f;
    once_push_options o = fast_opts();
    fx_start(&f, &o);
    char url[64];
    url_of(url, sizeof url, s.port);
    once_send_res res;
    assert_int_equal(send_with_push(&f, "t-gone", "hello", url, NULL, &res), ONCE_OK);
    row_want w = {&f, "t-gone"};
    wait_for(row_disabled, &w, 5000, "the config to be disabled");
    assert_int_equal(raw_requests(&s), 1); /* nothing after the 410 (also below) */
    once_push_row row = row_of(&f, "t-gone");
    assert_int_equal(row.delivered, 0);
    assert_non_null(strstr(row.last_error, "410"));

    json_t *list = NULL;
    once_push_res pr;
    assert_int_equal(once__engine_push_list(f.e, "alice", "t-gone", 1, &list, &pr), ONCE_OK);
    json_t *d = json_object_get(json_array_get(list, 0), "delivery");
    assert_true(json_is_true(json_object_get(d, "disabled")));
    assert_non_null(strstr(json_string_value(json_object_get(d, "lastError")), "410"));
    assert_int_equal(json_integer_value(json_object_get(d, "failures")), 1);
    json_decref(list);
    /* Without status the standard shape only. */
    assert_int_equal(once__engine_push_list(f.e, "alice", "t-gone", 0, &list, &pr), ONCE_OK);
    assert_null(json_object_get(json_array_get(list, 0), "delivery"));
    assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "url")), url);
    json_decref(list);

    /* Re-creating the config re-enables it from the task's current point. */
    const char *id = NULL;
    assert_int_equal(once__engine_push_list(f.e, "alice", "t-gone", 0, &list, &pr), ONCE_OK);
    id = json_string_value(json_object_get(json_array_get(list, 0), "id"));
    json_t *cfg = json_pack("{s:s, s:s, s:s}", "taskId", "t-gone", "id", id, "url", url);
    json_t *out = NULL;
    assert_int_equal(once__engine_push_create(f.e, "alice", cfg, 1, &out, &pr), ONCE_OK);
    json_decref(cfg);
    json_decref(list);
    once_push_row again = row_of(&f, "t-gone");
    assert_int_equal(again.disabled, 0);
    assert_int_equal(again.delivered, generation_of(&f, "t-gone"));
    assert_int_equal(again.failures, 1); /* history kept */
    json_decref(out);
    fx_stop(&f);
    /* the engine is gone: whatever it sent is in; still the one request */
    assert_int_equal(raw_requests(&s), 1);
    raw_stop(&s);
}

static int raw_reached(void *p)
{
    raw_srv *s = p;
    return raw_requests(s) >= 5;
}

static int row_caught_up(void *p)
{
    row_want *w = p;
    return row_of(w->f, w->task).delivered == generation_of(w->f, w->task);
}

/* A receiver failing far past max_attempts (overloaded, or under attack)
 * does not lose its events: the config stays enabled, the failure is
 * visible, and once the receiver answers again every event arrives. */
static void attempts_cap_keeps_events(void **state)
{
    (void)state;
    raw_srv s;
    raw_start(&s, "HTTP/1.1 500 Oops\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    fx f;
    once_push_options o = fast_opts();
    o.max_attempts = 2;
    fx_start(&f, &o);
    char url[64];
    url_of(url, sizeof url, s.port);
    once_send_res res;
    assert_int_equal(send_with_push(&f, "t-cap", "hello", url, NULL, &res), ONCE_OK);
    wait_for(raw_reached, &s, 5000, "attempts past the cap");
    once_push_row row = row_of(&f, "t-cap");
    assert_false(row.disabled);
    assert_int_equal(row.delivered, 0);
    assert_true(row.failures >= 2);
    assert_non_null(strstr(row.last_error, "still retrying"));
    assert_non_null(strstr(row.last_error, "HTTP 500"));
    pthread_mutex_lock(&s.mu);
    s.response = "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n";
    pthread_mutex_unlock(&s.mu);
    row_want w = {&f, "t-cap"};
    wait_for(row_caught_up, &w, 5000, "every event after the receiver recovered");
    row = row_of(&f, "t-cap");
    assert_false(row.disabled);
    assert_string_equal(row.last_error, "");
    fx_stop(&f);
    raw_stop(&s);
}

static void retry_after_honoured(void **state)
{
    (void)state;
    raw_srv s;
    raw_start(&s, "HTTP/1.1 503 Busy\r\nRetry-After: 30\r\nContent-Length: 0\r\n"
                  "Connection: close\r\n\r\n");
    fx f;
    once_push_options o = fast_opts();
    o.backoff_cap_ms = 60000; /* Retry-After is honoured up to the max backoff */
    fx_start(&f, &o);
    char url[64];
    url_of(url, sizeof url, s.port);
    once_send_res res;
    int64_t before = once_now(once_clock_system());
    assert_int_equal(send_with_push(&f, "t-ra", "hello", url, NULL, &res), ONCE_OK);
    wait_for(raw_got_one, &s, 3000, "the first attempt");
    /* The failure is recorded with its next attempt 30 s away, where the
     * backoff alone (<= 40 ms) would have put it. */
    retries_want rw = {&f, "t-ra", 1};
    wait_for(row_retried, &rw, 5000, "the retry to be scheduled");
    assert_int_equal(raw_requests(&s), 1);
    once_push_row row = row_of(&f, "t-ra");
    assert_int_equal(row.retries, 1);
    assert_true(row.next_attempt_at >= before + 30000);
    assert_true(row.next_attempt_at <= once_now(once_clock_system()) + 31000);
    fx_stop(&f);
    raw_stop(&s);
}

/* A receiver cannot park a delivery longer than its max backoff: a
 * Retry-After of 9999 s (2.7 h) or a date in 2100 waits backoff_cap_ms. The
 * floor of the header and the ceiling of the backoff meet there, so the
 * next attempt is exactly cap after the failure, whenever that was. */
static void retry_after_capped_for(const char *value, const char *task)
{
    char resp[256];
    snprintf(resp, sizeof resp,
             "HTTP/1.1 503 Busy\r\nRetry-After: %s\r\nContent-Length: 0\r\n"
             "Connection: close\r\n\r\n",
             value);
    raw_srv s;
    raw_start(&s, resp);
    fx f;
    once_push_options o = fast_opts();
    o.backoff_cap_ms = 2000;
    fx_start(&f, &o);
    char url[64];
    url_of(url, sizeof url, s.port);
    once_send_res res;
    int64_t before = once_now(once_clock_system());
    assert_int_equal(send_with_push(&f, task, "hello", url, NULL, &res), ONCE_OK);
    retries_want w = {&f, task, 1};
    wait_for(row_retried, &w, 5000, "the first retry to be scheduled");
    once_push_row row = row_of(&f, task);
    int64_t after = once_now(once_clock_system());
    if (row.next_attempt_at > after + o.backoff_cap_ms)
        fail_msg("Retry-After: %s parked the delivery %lld ms, past the %lld ms cap", value,
                 (long long)(row.next_attempt_at - after), (long long)o.backoff_cap_ms);
    assert_true(row.next_attempt_at >= before + o.backoff_cap_ms);
    assert_int_equal(row.disabled, 0);
    fx_stop(&f);
    raw_stop(&s);
}

static void retry_after_capped(void **state)
{
    (void)state;
    retry_after_capped_for("9999", "t-ra-secs");
    retry_after_capped_for("Fri, 01 Jan 2100 00:00:00 GMT", "t-ra-date");
}

/* An rng whose every byte is 0xff: each backoff draw is then the same
 * large value near the top of its range, so the test below is exact. */
static int ones_fill(const once_rng *r, void *buf, size_t n)
{
    (void)r;
    memset(buf, 0xff, n);
    return ONCE_OK;
}

/* Backoff settings at the edge of int64: base * 2 is past INT64_MAX. The
 * doubling saturates at the cap; a wrapped bound or sum would schedule the
 * retry in the past (due at once: a retry storm instead of a backoff). The
 * clock is manual so that the first retry, 2^62 ms away, can come. */
static void backoff_doubling_saturates(void **state)
{
    (void)state;
    raw_srv s;
    raw_start(&s, "HTTP/1.1 500 Oops\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    once_manual_clock clk;
    once_manual_clock_init(&clk, once_now(once_clock_system()));
    const once_rng ones = {ones_fill};
    fx f;
    once_push_options o = fast_opts();
    o.backoff_ms = INT64_C(1) << 62;
    o.backoff_cap_ms = INT64_MAX;
    fx_start_on(&f, &o, &clk.base, &ones);
    char url[64];
    url_of(url, sizeof url, s.port);
    once_send_res res;
    /* input-required: nothing sweeps or takes over the task meanwhile */
    assert_int_equal(send_with_push(&f, "t-edge", "ask:when", url, NULL, &res), ONCE_OK);
    retries_want w = {&f, "t-edge", 1};
    wait_for(row_retried, &w, 5000, "the first retry to be scheduled");
    once_push_row row = row_of(&f, "t-edge");
    int64_t now = once_now(&clk.base);
    assert_true(row.next_attempt_at > now);
    once_manual_clock_advance(&clk, row.next_attempt_at - now);
    w.n = 2;
    wait_for(row_retried, &w, 5000, "the second retry to be scheduled");
    row = row_of(&f, "t-edge");
    now = once_now(&clk.base);
    if (row.next_attempt_at < now || row.disabled)
        fail_msg("the second retry was scheduled at %lld, %s the clock (%lld)%s",
                 (long long)row.next_attempt_at, row.next_attempt_at < now ? "before" : "at",
                 (long long)now, row.disabled ? " and the config gave up" : "");
    assert_int_equal(raw_requests(&s), 2);
    fx_stop(&f);
    raw_stop(&s);
}

/* Until s got n requests (one per event), then exactly n. */
static void wait_requests(raw_srv *s, int64_t n)
{
    int64_t until = once_monotonic_ms() + tt_ms(3000);
    while (raw_requests(s) < n && once_monotonic_ms() < until)
        usleep(10000);
    assert_int_equal(raw_requests(s), n);
}

/* The wake-ups of the delivery threads so far. */
static uint64_t kicks_of(fx *f)
{
    struct once__push *p = f->e->push;
    pthread_mutex_lock(&p->mu);
    uint64_t k = p->kicks;
    pthread_mutex_unlock(&p->mu);
    return k;
}

/* A write wakes the delivery threads only when its task has push configs:
 * a task without webhooks (most of them) costs the threads no store scan
 * per write. The first task's send returns once it completed, so each of
 * its writes was made (and the registering one kicked, before the send
 * returned, in the code that kicked on every write); the second task's
 * send shows the count moves, and its events still all arrive. */
static void kicks_only_for_tasks_with_configs(void **state)
{
    (void)state;
    raw_srv s;
    raw_start(&s, "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
    fx f;
    once_push_options o = fast_opts();
    fx_start(&f, &o);
    once_send_res res;
    assert_int_equal(send_with_push(&f, "t-plain", "hello", NULL, NULL, &res), ONCE_OK);
    assert_int_equal(res.state, ONCE_STATE_COMPLETED);
    assert_true(generation_of(&f, "t-plain") >= 3);
    assert_int_equal(kicks_of(&f), 0);

    char url[64];
    url_of(url, sizeof url, s.port);
    assert_int_equal(send_with_push(&f, "t-hook", "hello", url, NULL, &res), ONCE_OK);
    assert_true(kicks_of(&f) > 0);
    wait_requests(&s, generation_of(&f, "t-hook"));
    fx_stop(&f);
    raw_stop(&s);
}

/* The request as sent: A2A 1.0 (content type, token, Authorization) and
 * Standard Webhooks (id, timestamp, one signature per secret). */
static void request_headers(void **state)
{
    (void)state;
    raw_srv s;
    raw_start(&s, "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
    fx f;
    const char *two[] = {SECRET, SECRET_OLD};
    once_push_options o = fast_opts();
    o.secrets = two;
    o.nsecrets = 2;
    fx_start(&f, &o);
    char url[64];
    url_of(url, sizeof url, s.port);
    once_send_res res;
    assert_int_equal(send_with_push(&f, "t-hdr", "ask:why", url,
                                    ",\"token\":\"tok-9\",\"authentication\":"
                                    "{\"scheme\":\"Bearer\",\"credentials\":\"cred-9\"}",
                                    &res),
                     ONCE_OK);
    int64_t g = generation_of(&f, "t-hdr");
    wait_requests(&s, g);
    pthread_mutex_lock(&s.mu);
    char req[8192];
    memcpy(req, s.last, sizeof req);
    pthread_mutex_unlock(&s.mu);
    assert_true(strncmp(req, "POST /hook HTTP/1.1\r\n", 21) == 0);
    assert_non_null(strcasestr(req, "\r\nContent-Type: application/a2a+json\r\n"));
    assert_non_null(strstr(req, "\r\nAuthorization: Bearer cred-9\r\n"));
    assert_non_null(strstr(req, "\r\nX-A2A-Notification-Token: tok-9\r\n"));
    assert_non_null(strstr(req, "\r\nonce-push-since: 0\r\n"));
    /* The signed id: the principal's tag (keyed by the store's secret), the
     * config, since, task and generation. */
    char wid[ONCE_WEBHOOK_ID_MAX + 1] = "";
    const char *wp = strstr(req, "\r\nwebhook-id: ");
    assert_non_null(wp);
    sscanf(wp + 14, "%320[^\r]", wid);
    once_webhook_id id;
    assert_int_equal(once_webhook_id_parse(wid, &id), ONCE_OK);
    assert_string_equal(id.task_id, "t-hdr");
    assert_int_equal(id.generation, g);
    assert_int_equal(id.since, 0);
    assert_true(id.config_id[0] != '\0');
    char *key = NULL, tag[ONCE_WEBHOOK_TAG_LEN + 1], other[ONCE_WEBHOOK_TAG_LEN + 1];
    assert_int_equal(once_store_meta(f.store, "derived_id_secret", "unused", &key), ONCE_OK);
    once_webhook_principal_tag(key, strlen(key), "alice", tag);
    once_webhook_principal_tag(key, strlen(key), "bob", other);
    once_free(key);
    assert_string_equal(id.tag, tag);
    assert_string_not_equal(id.tag, other);
    /* Verify the signatures over the body as received. */
    char ts[32] = "", sig[256] = "";
    const char *p = strstr(req, "\r\nwebhook-timestamp: ");
    assert_non_null(p);
    sscanf(p + 21, "%31[0-9]", ts);
    p = strstr(req, "\r\nwebhook-signature: ");
    assert_non_null(p);
    sscanf(p + 21, "%255[^\r]", sig);
    assert_int_equal(strncmp(sig, "v1,", 3), 0);
    assert_non_null(strstr(sig, " v1,")); /* two entries: rotation */
    const char *body = strstr(req, "\r\n\r\n") + 4;
    int64_t now = once_now(once_clock_system()) / 1000;
    const char *only_old[] = {SECRET_OLD}, *only_new[] = {SECRET};
    assert_int_equal(once_webhook_verify(only_new, 1, wid, ts, sig, body, strlen(body), now, 60),
                     ONCE_OK);
    assert_int_equal(once_webhook_verify(only_old, 1, wid, ts, sig, body, strlen(body), now, 60),
                     ONCE_OK);
    json_t *ev = json_loads(body, 0, NULL);
    assert_non_null(json_object_get(ev, "statusUpdate")); /* a StreamResponse */
    json_decref(ev);
    fx_stop(&f);
    raw_stop(&s);
}

/* A name resolving to a blocked address is refused when connecting, even
 * though the URL passed the config-time check. */
static void ssrf_refused_at_connect(void **state)
{
    (void)state;
    raw_srv s;
    raw_start(&s, "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
    char resolve[64], url[80];
    snprintf(resolve, sizeof resolve, "hooks.example:%d:127.0.0.1", s.port);
    snprintf(url, sizeof url, "http://hooks.example:%d/hook", s.port);
    const char *res_list[] = {resolve};
    fx f;
    once_push_options o = fast_opts();
    o.allow = NULL;
    o.nallow = 0;
    o.max_attempts = 2;
    o.resolve = res_list;
    o.nresolve = 1;
    fx_start(&f, &o);
    once_send_res res;
    assert_int_equal(send_with_push(&f, "t-ssrf", "hello", url, NULL, &res), ONCE_OK);
    retries_want w = {&f, "t-ssrf", 3};
    wait_for(row_retried, &w, 5000, "the refused config to be retried past the cap");
    assert_int_equal(raw_requests(&s), 0); /* no byte reached the loopback server */
    once_push_row row = row_of(&f, "t-ssrf");
    assert_false(row.disabled); /* refused addresses are retried, not given up */
    assert_non_null(strstr(row.last_error, "127.0.0.1"));
    assert_non_null(strstr(row.last_error, "SSRF"));
    once_push_stats st;
    once__engine_push_stats(f.e, &st);
    assert_true(st.refused >= 3);
    fx_stop(&f);
    raw_stop(&s);
}

static void config_methods(void **state)
{
    (void)state;
    fx f;
    once_push_options o = fast_opts();
    o.allow = NULL;
    o.nallow = 0;
    fx_start(&f, &o);
    once_send_res res;
    /* A refused url refuses the whole send: no task is created. */
    assert_int_equal(send_with_push(&f, "t-no", "hello", "http://127.0.0.1:9/x", NULL, &res),
                     ONCE_EINVAL);
    assert_string_equal(res.field, "configuration.taskPushNotificationConfig.url");
    assert_non_null(strstr(res.detail, "loopback"));
    once_record rec;
    assert_int_equal(once_store_load(f.store, "alice", "t-no", &rec, NULL), ONCE_ENOTFOUND);

    assert_int_equal(send_with_push(&f, "t-cfg", "ask:q", NULL, NULL, &res), ONCE_OK);
    int64_t g = generation_of(&f, "t-cfg");
    once_push_res pr;
    json_t *out = NULL, *cfg;
    /* loopback and private literals, a bad scheme: refused with the field */
    const char *bad[] = {"http://10.1.2.3/x", "http://[::1]/x", "ftp://example.com/",
                         "http://localhost:1/"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cfg = json_pack("{s:s, s:s}", "taskId", "t-cfg", "url", bad[i]);
        assert_int_equal(once__engine_push_create(f.e, "alice", cfg, 0, &out, &pr), ONCE_EINVAL);
        assert_string_equal(pr.field, "url");
        json_decref(cfg);
    }
    cfg = json_pack("{s:s, s:s, s:{s:s}}", "taskId", "t-cfg", "url", "https://example.com/x",
                    "authentication", "scheme", "Bad Scheme");
    assert_int_equal(once__engine_push_create(f.e, "alice", cfg, 0, &out, &pr), ONCE_EINVAL);
    assert_string_equal(pr.field, "authentication.scheme");
    json_decref(cfg);
    cfg = json_pack("{s:s, s:s, s:s}", "taskId", "t-cfg", "url", "https://example.com/x", "token",
                    "line\r\nInjected: yes");
    assert_int_equal(once__engine_push_create(f.e, "alice", cfg, 0, &out, &pr), ONCE_EINVAL);
    assert_string_equal(pr.field, "token");
    json_decref(cfg);

    /* create with a minted id; it starts at the current generation */
    cfg = json_pack("{s:s, s:s, s:s}", "taskId", "t-cfg", "url", "https://example.com/a", "token",
                    "t1");
    assert_int_equal(once__engine_push_create(f.e, "alice", cfg, 0, &out, &pr), ONCE_OK);
    json_decref(cfg);
    const char *id = json_string_value(json_object_get(out, "id"));
    assert_non_null(id);
    assert_string_equal(json_string_value(json_object_get(out, "taskId")), "t-cfg");
    assert_string_equal(json_string_value(json_object_get(out, "token")), "t1");
    char idcopy[64];
    snprintf(idcopy, sizeof idcopy, "%s", id);
    json_decref(out);
    once_push_row row = row_of(&f, "t-cfg");
    assert_int_equal(row.since, g);
    assert_int_equal(generation_of(&f, "t-cfg"), g); /* a config write emits no event */

    /* replace: same id, new url; get, list */
    cfg = json_pack("{s:s, s:s, s:s}", "taskId", "t-cfg", "id", idcopy, "url",
                    "https://example.com/b");
    assert_int_equal(once__engine_push_create(f.e, "alice", cfg, 0, &out, &pr), ONCE_OK);
    json_decref(cfg);
    json_decref(out);
    assert_int_equal(once__engine_push_get(f.e, "alice", "t-cfg", idcopy, 0, &out, &pr), ONCE_OK);
    assert_string_equal(json_string_value(json_object_get(out, "url")), "https://example.com/b");
    assert_null(json_object_get(out, "token"));
    json_decref(out);
    cfg = json_pack("{s:s, s:s, s:s}", "taskId", "t-cfg", "id", "second", "url",
                    "https://example.com/c");
    assert_int_equal(once__engine_push_create(f.e, "alice", cfg, 0, &out, &pr), ONCE_OK);
    json_decref(cfg);
    json_decref(out);
    assert_int_equal(once__engine_push_list(f.e, "alice", "t-cfg", 0, &out, &pr), ONCE_OK);
    assert_int_equal(json_array_size(out), 2);
    json_decref(out);

    /* unknown task, unknown config, another principal */
    assert_int_equal(once__engine_push_get(f.e, "alice", "t-cfg", "nope", 0, &out, &pr),
                     ONCE_ENOTFOUND);
    assert_string_equal(pr.field, "id");
    assert_int_equal(once__engine_push_get(f.e, "alice", "t-none", idcopy, 0, &out, &pr),
                     ONCE_ENOTFOUND);
    assert_string_equal(pr.field, "taskId");
    assert_int_equal(once__engine_push_list(f.e, "bob", "t-cfg", 0, &out, &pr), ONCE_ENOTFOUND);

    /* delete is idempotent; the row goes with the config */
    assert_int_equal(once__engine_push_delete(f.e, "alice", "t-cfg", idcopy, &pr), ONCE_OK);
    assert_int_equal(once__engine_push_delete(f.e, "alice", "t-cfg", idcopy, &pr), ONCE_OK);
    assert_int_equal(once__engine_push_delete(f.e, "alice", "t-none", idcopy, &pr), ONCE_ENOTFOUND);
    assert_int_equal(once__engine_push_list(f.e, "alice", "t-cfg", 0, &out, &pr), ONCE_OK);
    assert_int_equal(json_array_size(out), 1);
    json_decref(out);

    /* at most ONCE_PUSH_CONFIGS_MAX */
    int refused = 0;
    for (int i = 0; i < ONCE_PUSH_CONFIGS_MAX + 1; i++) {
        char cid[16];
        snprintf(cid, sizeof cid, "c%d", i);
        cfg = json_pack("{s:s, s:s, s:s}", "taskId", "t-cfg", "id", cid, "url",
                        "https://example.com/m");
        int rc = once__engine_push_create(f.e, "alice", cfg, 0, &out, &pr);
        json_decref(cfg);
        if (rc == ONCE_OK)
            json_decref(out);
        else
            refused += rc == ONCE_EINVAL;
    }
    assert_int_equal(refused, 2); /* "second" + 14 fit, then two are refused */
    fx_stop(&f);
}

/* A continuation may bring a config: it sees the events from there on. */
static void continuation_adds_config(void **state)
{
    (void)state;
    rx r;
    rx_start(&r, NULL, 0);
    fx f;
    once_push_options o = fast_opts();
    fx_start(&f, &o);
    once_send_res res;
    assert_int_equal(send_with_push(&f, "t-cont", "ask:who", NULL, NULL, &res), ONCE_OK);
    assert_int_equal(res.state, ONCE_STATE_INPUT_REQUIRED);
    int64_t g = generation_of(&f, "t-cont");
    char url[64];
    url_of(url, sizeof url, once_webhook_server_port(r.srv));
    assert_int_equal(send_with_push(&f, "t-cont", "me", url, NULL, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_CONTINUE);
    int64_t g2 = generation_of(&f, "t-cont");
    rx_want w = {&r, (int)(g2 - g)};
    wait_for(rx_reached, &w, 5000, "the continuation's events");
    settle(&f, "t-cont", g2, &r);
    assert_int_equal(rx_count(&r), g2 - g);
    char want[48];
    snprintf(want, sizeof want, "t-cont.%lld", (long long)(g + 1));
    assert_string_equal(r.log[0], want);
    fx_stop(&f);
    rx_stop(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(delivers_every_event_once_in_order),
        cmocka_unit_test(retries_until_the_receiver_recovers),
        cmocka_unit_test(gone_disables_and_is_visible),
        cmocka_unit_test(attempts_cap_keeps_events),
        cmocka_unit_test(retry_after_honoured),
        cmocka_unit_test(retry_after_capped),
        cmocka_unit_test(backoff_doubling_saturates),
        cmocka_unit_test(request_headers),
        cmocka_unit_test(kicks_only_for_tasks_with_configs),
        cmocka_unit_test(ssrf_refused_at_connect),
        cmocka_unit_test(config_methods),
        cmocka_unit_test(continuation_adds_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
