/*
 * test_client_retry.c -- the client's retry loop end to end over loopback
 * HTTP, against a scripted fake agent, with a manual clock that only the
 * client's sleeps move (so the time a policy spends is exact):
 *   - a dead port: exactly max_attempts attempts, sleeps within the
 *     full-jitter bounds, the intent left pending with its attempts;
 *   - the deadline bounds the whole call;
 *   - Retry-After is honoured, and one beyond the deadline stops at once;
 *   - the retry budget denies retries once drained;
 *   - a refusal is never retried and is recorded with its reason and state;
 *   - a JSON-RPC error marked retryable is retried;
 *   - every attempt's body is byte-identical; the ID is minted and the
 *     intent written before any request; the extension decides taskId.
 */
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "client/client_int.h"
#include "timeout.h"

/* ---------------------------------------------------------------------------
 * A scripted fake agent: the i-th POST gets script[i] (the last one
 * repeats); the card is served apart and not counted.
 */
#define MAXREQ 64

/* A response: its status line and headers (no Content-Length, no blank
 * line) and its body. */
typedef struct canned {
    const char *head, *body;
} canned;


typedef struct fake {
    int fd, port, stop;
    pthread_t th;
    const char *card;            /* JSON body of the agent card, or NULL: 404 */
    const canned *script[8];
    int nscript;
    pthread_mutex_t mu;          /* guards the fields below */
    int posts, cards;
    char *bodies[MAXREQ];
    int ext_header[MAXREQ];
} fake;

static const char CARD_EXT[] =
    "{\"name\":\"f\",\"capabilities\":{\"extensions\":[{\"uri\":\"urn:once:a2a:idempotency:v1\"}]}}";
static const char CARD_PLAIN[] = "{\"name\":\"f\",\"capabilities\":{\"extensions\":[]}}";

#define JSON_200 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
static const canned OK_WORKING = {
    JSON_200, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"task\":{\"id\":\"srv-1\",\"contextId\":\"c\","
              "\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}}"};
static const canned UNAVAILABLE_3S = {"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 3\r\n", ""};
static const canned UNAVAILABLE_99S = {"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 99\r\n", ""};
static const canned TERMINAL = {
    JSON_200, "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32004,\"message\":\"terminal\",\"data\":[{\"@type\":"
              "\"type.googleapis.com/google.rpc.ErrorInfo\",\"reason\":\"TASK_TERMINAL\",\"domain\":\"once\","
              "\"metadata\":{\"taskId\":\"x\",\"state\":\"TASK_STATE_COMPLETED\"}}]}}"};
static const canned STORE_DOWN = {
    JSON_200, "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32603,\"message\":\"store\",\"data\":[{\"@type\":"
              "\"type.googleapis.com/google.rpc.ErrorInfo\",\"reason\":\"STORE_UNAVAILABLE\",\"domain\":\"once\","
              "\"metadata\":{\"retryable\":\"true\"}}]}}"};
static const canned NOT_FOUND = {"HTTP/1.1 404 Not Found\r\n", ""};

static void send_response(int fd, const canned *r)
{
    char buf[4096];
    int n = snprintf(buf, sizeof buf, "%sConnection: close\r\nContent-Length: %d\r\n\r\n%s", r->head,
                     (int)strlen(r->body), r->body);
    ssize_t w = write(fd, buf, (size_t)n);
    (void)w;
}

static void serve_one(fake *f, int c)
{
    char req[16384];
    size_t len = 0;
    char *end = NULL;
    while (len < sizeof req - 1 && end == NULL) {
        ssize_t got = read(c, req + len, sizeof req - 1 - len);
        if (got <= 0)
            return;
        len += (size_t)got;
        req[len] = '\0';
        end = strstr(req, "\r\n\r\n");
    }
    if (end == NULL)
        return;
    const char *cl = strcasestr(req, "Content-Length:");
    size_t want = cl ? (size_t)strtoul(cl + 15, NULL, 10) : 0;
    size_t have = len - (size_t)(end + 4 - req);
    while (have < want && len < sizeof req - 1) {
        ssize_t got = read(c, req + len, sizeof req - 1 - len);
        if (got <= 0)
            return;
        len += (size_t)got;
        have += (size_t)got;
        req[len] = '\0';
    }
    if (strncmp(req, "GET /.well-known/agent-card.json", 32) == 0) {
        pthread_mutex_lock(&f->mu);
        f->cards++;
        pthread_mutex_unlock(&f->mu);
        canned card = {JSON_200, f->card};
        send_response(c, f->card ? &card : &NOT_FOUND);
        return;
    }
    pthread_mutex_lock(&f->mu);
    int i = f->posts++;
    if (i < MAXREQ) {
        f->bodies[i] = strdup(end + 4);
        f->ext_header[i] = strcasestr(req, "A2A-Extensions: urn:once:a2a:idempotency:v1") != NULL;
    }
    pthread_mutex_unlock(&f->mu);
    send_response(c, f->script[i < f->nscript ? i : f->nscript - 1]);
}

static void *fake_main(void *arg)
{
    fake *f = arg;
    while (!__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE)) {
        struct pollfd p = {.fd = f->fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0)
            continue;
        int c = accept(f->fd, NULL, NULL);
        if (c < 0)
            continue;
        serve_one(f, c);
        close(c);
    }
    return NULL;
}

static int listen_any(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(fd, 16), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
    *port = ntohs(sa.sin_port);
    return fd;
}

static void fake_start(fake *f, const char *card, int n, ...)
{
    memset(f, 0, sizeof *f);
    pthread_mutex_init(&f->mu, NULL);
    f->card = card;
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        f->script[i] = va_arg(ap, const canned *);
    va_end(ap);
    f->nscript = n;
    f->fd = listen_any(&f->port);
    assert_int_equal(pthread_create(&f->th, NULL, fake_main, f), 0);
}

static void fake_stop(fake *f)
{
    __atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
    pthread_join(f->th, NULL);
    close(f->fd);
    for (int i = 0; i < MAXREQ; i++)
        free(f->bodies[i]);
    pthread_mutex_destroy(&f->mu);
}

static int dead_port(void)
{
    int port;
    int fd = listen_any(&port);
    close(fd);   /* nothing listens there now: connection refused */
    return port;
}

/* ---------------------------------------------------------------------------
 * A client on a manual clock; its sleeps advance the clock and are logged.
 */
typedef struct fx {
    once_manual_clock clock;
    once_seeded_rng rng;
    int64_t slept[64];
    int nslept;
    once_client *c;
    int hook_posts;              /* fake's posts when AFTER_OUTBOX ran; -1 = never */
    fake *f;
} fx;

static void fake_sleep(void *ctx, int64_t ms)
{
    fx *x = ctx;
    once_manual_clock_advance(&x->clock, ms);
    if (x->nslept < 64)
        x->slept[x->nslept++] = ms;
}

static void hook(void *ctx, once_client_point p)
{
    fx *x = ctx;
    if (p == ONCE_POINT_AFTER_OUTBOX && x->f != NULL) {
        pthread_mutex_lock(&x->f->mu);
        x->hook_posts = x->f->posts + x->f->cards;
        pthread_mutex_unlock(&x->f->mu);
    }
}

static int64_t total_slept(const fx *x)
{
    int64_t t = 0;
    for (int i = 0; i < x->nslept; i++)
        t += x->slept[i];
    return t;
}

static void open_client(fx *x, unsigned attempts, int64_t base, int64_t cap, int64_t deadline,
                        double burst)
{
    once_manual_clock_init(&x->clock, 1764676800000LL);
    once_seeded_rng_init(&x->rng, 1234);
    x->hook_posts = -1;
    once_client_config cfg;
    memset(&cfg, 0, sizeof cfg);
    once_retry_policy_default(&cfg.retry);
    cfg.retry.max_attempts = attempts;
    cfg.retry.backoff_base_ms = base;
    cfg.retry.backoff_cap_ms = cap;
    cfg.retry.deadline_ms = deadline;
    cfg.retry.attempt_timeout_ms = tt_ms(5000);   /* real time, unlike the clock */
    cfg.retry.budget_burst = burst;
    cfg.retry.budget_refill_per_s = 0;
    cfg.clock = &x->clock.base;
    cfg.rng = &x->rng.base;
    cfg.sleep_ms = fake_sleep;
    cfg.sleep_ctx = x;
    cfg.hook = hook;
    cfg.hook_ctx = x;
    char err[256];
    assert_int_equal(once_client_new(&cfg, &x->c, err, sizeof err), ONCE_OK);
}

static int send_text(fx *x, int port, const char *id, once_call_result *r)
{
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", port);
    once_send_spec s = {.agent = url, .parts_json = "[{\"text\":\"hi\"}]", .task_id = id};
    return once_client_send(x->c, &s, r);
}

static once__intent_row load(fx *x, int64_t seq)
{
    once__intent_row row;
    assert_int_equal(once__outbox_load(x->c->outbox, seq, &row), ONCE_OK);
    return row;
}

static void test_dead_port_attempts_and_backoff(void **state)
{
    fx x = {0};
    open_client(&x, 4, 100, 400, 60000, 10);
    once_call_result r;
    int rc = send_text(&x, dead_port(), NULL, &r);
    assert_int_equal(rc, ONCE_ETIMEDOUT);
    assert_int_equal(r.outcome, ONCE_OUTCOME_EXHAUSTED);
    assert_string_equal(r.reason, "ATTEMPTS_EXHAUSTED");
    assert_int_equal(r.attempts, 4);
    assert_int_equal(strlen(r.task_id), ONCE_ULID_LEN);   /* minted anyway */
    /* Three sleeps, each within its full-jitter ceiling: 100, 200, 400. */
    assert_int_equal(x.nslept, 3);
    const int64_t ceil[] = {100, 200, 400};
    for (int i = 0; i < 3; i++)
        assert_true(x.slept[i] >= 0 && x.slept[i] <= ceil[i]);
    assert_int_equal(r.elapsed_ms, total_slept(&x));
    once__intent_row row = load(&x, r.intent);
    assert_int_equal(row.it.state, ONCE_INTENT_PENDING);
    assert_int_equal(row.it.attempts, 4);
    assert_non_null(row.it.last_error);
    assert_string_equal(row.task_id, r.task_id);
    once__intent_row_clear(&row);
    once_call_result_clear(&r);
    once_client_free(x.c);
}

static void test_deadline_bounds_the_call(void **state)
{
    fx x = {0};
    open_client(&x, 1000, 1000, 1000, 5000, 1000);
    once_call_result r;
    assert_int_equal(send_text(&x, dead_port(), NULL, &r), ONCE_ETIMEDOUT);
    assert_string_equal(r.reason, "DEADLINE_EXCEEDED");
    assert_true(r.elapsed_ms < 5000);
    /* Sleeps average 500 ms: about ten attempts fit, never hundreds. */
    assert_true(r.attempts >= 3 && r.attempts <= 60);
    once_call_result_clear(&r);
    once_client_free(x.c);
}

static void test_retry_after_honoured(void **state)
{
    fake f;
    fake_start(&f, CARD_EXT, 2, &UNAVAILABLE_3S, &OK_WORKING);
    fx x = {0};
    x.f = &f;
    open_client(&x, 5, 10, 20, 60000, 10);
    once_call_result r;
    assert_int_equal(send_text(&x, f.port, NULL, &r), ONCE_OK);
    assert_int_equal(r.outcome, ONCE_OUTCOME_OK);
    assert_int_equal(r.attempts, 2);
    assert_int_equal(x.nslept, 1);
    assert_int_equal(x.slept[0], 3000);   /* the server's 3 s, not the 20 ms cap */
    assert_int_equal(r.state, ONCE_STATE_WORKING);
    once_call_result_clear(&r);
    once_client_free(x.c);
    fake_stop(&f);
}

static void test_retry_after_past_deadline_stops(void **state)
{
    fake f;
    fake_start(&f, CARD_EXT, 1, &UNAVAILABLE_99S);
    fx x = {0};
    open_client(&x, 5, 10, 20, 10000, 10);
    once_call_result r;
    assert_int_equal(send_text(&x, f.port, NULL, &r), ONCE_ETIMEDOUT);
    assert_string_equal(r.reason, "DEADLINE_EXCEEDED");
    assert_int_equal(r.attempts, 1);
    assert_int_equal(x.nslept, 0);   /* no sleep it knows to be useless */
    assert_int_equal(r.http_status, 503);
    once_call_result_clear(&r);
    once_client_free(x.c);
    fake_stop(&f);
}

static void test_budget_denies_retries(void **state)
{
    fx x = {0};
    open_client(&x, 10, 1, 1, 60000, 2);   /* two retries in the bucket */
    once_call_result r;
    int port = dead_port();
    assert_int_equal(send_text(&x, port, NULL, &r), ONCE_ETIMEDOUT);
    assert_string_equal(r.reason, "RETRY_BUDGET_EXHAUSTED");
    assert_int_equal(r.attempts, 3);
    assert_int_equal(r.retries_denied, 1);
    once_call_result_clear(&r);
    /* The next call earns 0.1 token: no retry at all. */
    assert_int_equal(send_text(&x, port, NULL, &r), ONCE_ETIMEDOUT);
    assert_int_equal(r.attempts, 1);
    once_call_result_clear(&r);
    once_client_free(x.c);
}

static void test_refusal_not_retried(void **state)
{
    fake f;
    fake_start(&f, CARD_EXT, 1, &TERMINAL);
    fx x = {0};
    open_client(&x, 5, 10, 20, 60000, 10);
    once_call_result r;
    assert_int_equal(send_text(&x, f.port, "t-done", &r), ONCE_OK);
    assert_int_equal(r.outcome, ONCE_OUTCOME_REFUSED);
    assert_int_equal(r.attempts, 1);
    assert_int_equal(r.rpc_code, -32004);
    assert_string_equal(r.reason, "TASK_TERMINAL");
    assert_int_equal(r.state, ONCE_STATE_COMPLETED);
    assert_int_equal(f.posts, 1);
    once__intent_row row = load(&x, r.intent);
    assert_int_equal(row.it.state, ONCE_INTENT_REFUSED);
    assert_string_equal(row.it.refusal, "TASK_TERMINAL");
    once__intent_row_clear(&row);
    once_call_result_clear(&r);
    once_client_free(x.c);
    fake_stop(&f);
}

static void test_retryable_rpc_error_and_identical_bodies(void **state)
{
    fake f;
    fake_start(&f, CARD_EXT, 3, &STORE_DOWN, &STORE_DOWN, &OK_WORKING);
    fx x = {0};
    x.f = &f;
    open_client(&x, 5, 10, 20, 60000, 10);
    once_call_result r;
    assert_int_equal(send_text(&x, f.port, NULL, &r), ONCE_OK);
    assert_int_equal(r.attempts, 3);
    assert_int_equal(f.posts, 3);
    assert_int_equal(f.cards, 1);
    /* Minted and written before the first byte went out. */
    assert_int_equal(x.hook_posts, 0);
    /* Same bytes every time; with the extension, taskId = messageId = the ID. */
    assert_string_equal(f.bodies[0], f.bodies[1]);
    assert_string_equal(f.bodies[0], f.bodies[2]);
    json_error_t je;
    json_t *b = json_loads(f.bodies[0], 0, &je);
    json_t *m = json_object_get(json_object_get(b, "params"), "message");
    char minted[ONCE_ID_MAX + 1];
    once__intent_row row = load(&x, r.intent);
    snprintf(minted, sizeof minted, "%s", row.message_id);
    assert_string_equal(json_string_value(json_object_get(m, "taskId")), minted);
    assert_string_equal(json_string_value(json_object_get(m, "messageId")), minted);
    assert_true(f.ext_header[0] && f.ext_header[2]);
    assert_int_equal(row.it.state, ONCE_INTENT_ACKNOWLEDGED);
    assert_int_equal(row.it.attempts, 3);
    once__intent_row_clear(&row);
    json_decref(b);
    once_call_result_clear(&r);
    once_client_free(x.c);
    fake_stop(&f);
}

static void test_plain_agent_gets_no_task_id(void **state)
{
    fake f;
    fake_start(&f, CARD_PLAIN, 2, &UNAVAILABLE_3S, &OK_WORKING);
    fx x = {0};
    open_client(&x, 5, 10, 20, 60000, 10);
    once_call_result r;
    assert_int_equal(send_text(&x, f.port, NULL, &r), ONCE_OK);
    assert_string_equal(r.task_id, "srv-1");   /* the agent named it */
    json_error_t je;
    json_t *b = json_loads(f.bodies[0], 0, &je);
    json_t *m = json_object_get(json_object_get(b, "params"), "message");
    assert_null(json_object_get(m, "taskId"));
    assert_false(f.ext_header[0]);
    once__intent_row row = load(&x, r.intent);
    /* The retry reused the messageId: a deduping server converges. */
    assert_string_equal(f.bodies[0], f.bodies[1]);
    assert_string_equal(json_string_value(json_object_get(m, "messageId")), row.message_id);
    assert_string_equal(row.task_id, "srv-1");
    assert_string_equal(row.mode, "plain");
    once__intent_row_clear(&row);
    json_decref(b);
    once_call_result_clear(&r);
    /* A client-chosen ID cannot be honoured by a plain agent: refused, not sent. */
    int before = f.posts;
    assert_int_equal(send_text(&x, f.port, "my-id", &r), ONCE_EIO);
    assert_string_equal(r.reason, "EXTENSION_UNSUPPORTED");
    assert_int_equal(f.posts, before);
    row = load(&x, r.intent);
    assert_int_equal(row.it.state, ONCE_INTENT_REFUSED);
    once__intent_row_clear(&row);
    once_call_result_clear(&r);
    once_client_free(x.c);
    fake_stop(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dead_port_attempts_and_backoff),
        cmocka_unit_test(test_deadline_bounds_the_call),
        cmocka_unit_test(test_retry_after_honoured),
        cmocka_unit_test(test_retry_after_past_deadline_stops),
        cmocka_unit_test(test_budget_denies_retries),
        cmocka_unit_test(test_refusal_not_retried),
        cmocka_unit_test(test_retryable_rpc_error_and_identical_bodies),
        cmocka_unit_test(test_plain_agent_gets_no_task_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
