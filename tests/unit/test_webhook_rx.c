/*
 * test_webhook_rx.c -- the webhook receiver library (src/client/webhook*.c):
 * what an application relies on when it answers deliveries with it.
 *   - a verified delivery is recorded before 2xx and handed over once;
 *   - duplicates (same webhook-id) answer 2xx and are not handed over again,
 *     also after a restart (the processed-set is on disk);
 *   - per subscription and task, events reach the handler in generation
 *     order: a gap is held until it fills, or until the application skips
 *     it; the since in the signed webhook-id tells where a subscription
 *     starts, and an unsigned once-push-since that disagrees is refused;
 *   - the processed-set is keyed by subscription: another principal's (or
 *     another config's) task of the same ID neither suppresses nor mixes
 *     with this one's events; a receiver without a token cannot be opened;
 *   - a failing handler gets the same event again, still first;
 *   - tampered body / signature, a stale timestamp, a wrong token: refused,
 *     nothing recorded;
 *   - the HTTP listener answers only after recording, runs the gate, and its
 *     drain thread calls the handler; the exec handler runs a command.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "once/webhook.h"
#include "timeout.h"

#define SECRET "whsec_dGVzdC1zZWNyZXQtZm9yLXRoZS1yZWNlaXZlcg=="
#define NOW_MS INT64_C(1700000000000)
#define SUB_A "0123456789abcdef/cfg-a"
#define SUB_B "fedcba9876543210/cfg-a" /* another principal, the same config id */

/* What the handler saw, in order. */
typedef struct seen {
    char log[64][80];
    int n;
    int fail_left; /* fail this many calls first */
} seen;

static int record_handler(void *arg, const once_webhook_event *ev)
{
    seen *s = arg;
    if (s->fail_left > 0) {
        s->fail_left--;
        return ONCE_EIO;
    }
    /* n is read by a polling test thread while the drain thread calls us */
    int n = __atomic_load_n(&s->n, __ATOMIC_ACQUIRE);
    if (n < 64) {
        snprintf(s->log[n], sizeof s->log[0], "%s.%lld", ev->task_id, (long long)ev->generation);
        __atomic_store_n(&s->n, n + 1, __ATOMIC_RELEASE);
    }
    return ONCE_OK;
}

typedef struct fx {
    char path[256];
    once_manual_clock clock;
    seen s;
    once_webhook *w;
} fx;

static void open_rx(fx *f)
{
    const char *secrets[] = {SECRET};
    once_webhook_options o = {.state_path = f->path,
                              .secrets = secrets,
                              .nsecrets = 1,
                              .handler = record_handler,
                              .arg = &f->s,
                              .clock = &f->clock.base,
                              .token = "tok-1"};
    char err[256];
    if (once_webhook_open(&o, &f->w, err, sizeof err) != ONCE_OK)
        fail_msg("open: %s", err);
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    snprintf(f->path, sizeof f->path, "/tmp/once-rx-%d-XXXXXX", (int)getpid());
    int fd = mkstemp(f->path);
    if (fd < 0)
        return -1;
    close(fd);
    once_manual_clock_init(&f->clock, NOW_MS);
    open_rx(f);
    *state = f;
    return 0;
}

static void rm_db(const char *path)
{
    char p[300];
    unlink(path);
    snprintf(p, sizeof p, "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", path);
    unlink(p);
}

static int teardown(void **state)
{
    fx *f = *state;
    once_webhook_close(f->w);
    rm_db(f->path);
    free(f);
    return 0;
}

/* Deliver (task, gen) of subscription sub with a correct signature unless
 * tamper says otherwise: 1 tampered body, 2 tampered signature, 3 stale
 * timestamp, 4 wrong token, 5 no token. since goes into the signed id
 * (NULL: 0); the once-push-since header is header_since. */
static int deliver_as(fx *f, const char *sub, const char *task, int gen, const char *since,
                      const char *header_since, int tamper)
{
    char id[ONCE_WEBHOOK_ID_MAX + 1], body[200], ts[24], sig[ONCE_WEBHOOK_SIG_LEN + 1];
    snprintf(id, sizeof id, "%s/%s/%s.%d", sub, since ? since : "0", task, gen);
    snprintf(body, sizeof body, "{\"statusUpdate\":{\"taskId\":\"%s\",\"generation\":%d}}", task,
             gen);
    snprintf(ts, sizeof ts, "%lld", (long long)(NOW_MS / 1000 - (tamper == 3 ? 600 : 0)));
    assert_int_equal(once_webhook_sign(SECRET, id, ts, body, strlen(body), sig), ONCE_OK);
    if (tamper == 1)
        body[strlen(body) - 3] = '9';
    if (tamper == 2)
        sig[10] = sig[10] == 'A' ? 'B' : 'A';
    once_webhook_request r = {.id = id,
                              .timestamp = ts,
                              .signature = sig,
                              .since = header_since,
                              .token = tamper == 4   ? "tok-2"
                                       : tamper == 5 ? NULL
                                                     : "tok-1",
                              .body = body,
                              .len = strlen(body)};
    int status = 0, rc = once_webhook_receive(f->w, &r, &status, NULL, NULL, 0);
    /* the status follows the result */
    int want = rc == ONCE_OK ? 204 : rc == ONCE_EPARSE ? 400 : rc == ONCE_EIO ? 503 : 401;
    assert_int_equal(status, want);
    return status;
}

static int deliver(fx *f, const char *task, int gen, const char *since, int tamper)
{
    return deliver_as(f, SUB_A, task, gen, since, since, tamper);
}

static size_t drain(fx *f)
{
    size_t n = 99;
    assert_int_equal(once_webhook_drain(f->w, &n), ONCE_OK);
    return n;
}

static void once_and_in_order(void **state)
{
    fx *f = *state;
    assert_int_equal(deliver(f, "t-1", 1, NULL, 0), 204);
    assert_int_equal(deliver(f, "t-1", 1, NULL, 0), 204); /* duplicate before handling */
    assert_int_equal(drain(f), 1);
    assert_int_equal(deliver(f, "t-1", 1, NULL, 0), 204); /* duplicate after handling */
    assert_int_equal(drain(f), 0);
    /* 3 arrives before 2: held */
    assert_int_equal(deliver(f, "t-1", 3, NULL, 0), 204);
    assert_int_equal(deliver(f, "t-2", 1, NULL, 0), 204); /* another task is not held */
    assert_int_equal(drain(f), 1);
    assert_int_equal(deliver(f, "t-1", 2, NULL, 0), 204);
    assert_int_equal(drain(f), 2);
    assert_int_equal(f->s.n, 4);
    assert_string_equal(f->s.log[0], "t-1.1");
    assert_string_equal(f->s.log[1], "t-2.1");
    assert_string_equal(f->s.log[2], "t-1.2");
    assert_string_equal(f->s.log[3], "t-1.3");
    once_webhook_stats st;
    assert_int_equal(once_webhook_get_stats(f->w, &st), ONCE_OK);
    assert_int_equal(st.received, 4);
    assert_int_equal(st.duplicates, 2);
    assert_int_equal(st.handled, 4);
    assert_int_equal(st.pending, 0);
}

/* The processed-set and held events survive a restart. */
static void durable_across_restart(void **state)
{
    fx *f = *state;
    assert_int_equal(deliver(f, "t-1", 1, NULL, 0), 204);
    assert_int_equal(drain(f), 1);
    assert_int_equal(deliver(f, "t-1", 3, NULL, 0), 204); /* held */
    assert_int_equal(deliver(f, "t-1", 4, NULL, 0), 204); /* held */
    once_webhook_close(f->w);
    open_rx(f);
    assert_int_equal(deliver(f, "t-1", 1, NULL, 0), 204); /* known: not handed again */
    assert_int_equal(deliver(f, "t-1", 3, NULL, 0), 204); /* known */
    assert_int_equal(drain(f), 0);
    assert_int_equal(deliver(f, "t-1", 2, NULL, 0), 204);
    assert_int_equal(drain(f), 3);
    assert_int_equal(f->s.n, 4);
    assert_string_equal(f->s.log[1], "t-1.2");
    assert_string_equal(f->s.log[3], "t-1.4");
    once_webhook_stats st;
    assert_int_equal(once_webhook_get_stats(f->w, &st), ONCE_OK);
    assert_int_equal(st.duplicates, 2);
}

/* A failing handler sees the same event again; nothing overtakes it. */
static void handler_failure_retried(void **state)
{
    fx *f = *state;
    f->s.fail_left = 2;
    assert_int_equal(deliver(f, "t-1", 1, NULL, 0), 204);
    assert_int_equal(deliver(f, "t-1", 2, NULL, 0), 204);
    assert_int_equal(drain(f), 0);
    assert_int_equal(drain(f), 0);
    assert_int_equal(drain(f), 2);
    assert_int_equal(f->s.n, 2);
    assert_string_equal(f->s.log[0], "t-1.1");
    assert_string_equal(f->s.log[1], "t-1.2");
}

/* once-push-since: a subscription that starts later, or restarts. */
static void since_and_skip(void **state)
{
    fx *f = *state;
    assert_int_equal(deliver(f, "t-1", 6, "5", 0), 204); /* starts after 5 */
    assert_int_equal(drain(f), 1);
    assert_int_equal(deliver(f, "t-1", 9, "5", 0), 204); /* 7, 8 missing: held */
    assert_int_equal(drain(f), 0);
    assert_int_equal(deliver(f, "t-1", 11, "10", 0), 204); /* restarted after 10 */
    assert_int_equal(drain(f), 1);                         /* 9 dropped: before the restart */
    assert_int_equal(deliver(f, "t-1", 9, "5", 0), 204);   /* late copy: duplicate */
    assert_int_equal(deliver(f, "t-2", 3, NULL, 0), 204);  /* waits for 1, 2 */
    assert_int_equal(drain(f), 0);
    assert_int_equal(once_webhook_skip(f->w, "t-2", 2), ONCE_OK); /* fetched via GetTask */
    assert_int_equal(drain(f), 1);
    assert_int_equal(f->s.n, 3);
    assert_string_equal(f->s.log[0], "t-1.6");
    assert_string_equal(f->s.log[1], "t-1.11");
    assert_string_equal(f->s.log[2], "t-2.3");
    assert_int_equal(deliver(f, "t-1", 12, "12", 0), 400); /* since must be below */
    assert_int_equal(deliver(f, "t-1", 12, "x", 0), 400);
}

/* A captured delivery replayed with a forged once-push-since must not move
 * the receiver past a generation it never handled: the since that counts
 * is the signed one, and a header that disagrees is refused. */
static void forged_since_refused(void **state)
{
    fx *f = *state;
    assert_int_equal(deliver(f, "t-1", 1, NULL, 0), 204);
    assert_int_equal(drain(f), 1);
    /* generation 3, genuine but for the header: "skip 1 and 2" */
    assert_int_equal(deliver_as(f, SUB_A, "t-1", 3, "0", "2", 0), 400);
    assert_int_equal(deliver_as(f, SUB_A, "t-1", 3, "0", "0", 0), 204); /* held for 2 */
    assert_int_equal(drain(f), 0);
    assert_int_equal(deliver(f, "t-1", 2, NULL, 0), 204); /* not a dropped duplicate */
    assert_int_equal(drain(f), 2);
    assert_int_equal(f->s.n, 3);
    assert_string_equal(f->s.log[1], "t-1.2");
    assert_string_equal(f->s.log[2], "t-1.3");
}

/* Two subscriptions deliver a task "job-1" each (two principals: task IDs
 * are per principal). Neither suppresses the other: each generation of
 * each is handed over, and duplicates are recognised per subscription. */
static void subscriptions_apart(void **state)
{
    fx *f = *state;
    for (int g = 1; g <= 3; g++)
        assert_int_equal(deliver_as(f, SUB_B, "job-1", g, NULL, NULL, 0), 204);
    assert_int_equal(drain(f), 3);
    for (int g = 1; g <= 3; g++)
        assert_int_equal(deliver_as(f, SUB_A, "job-1", g, NULL, NULL, 0), 204);
    assert_int_equal(drain(f), 3); /* none was taken for a duplicate */
    assert_int_equal(deliver_as(f, SUB_A, "job-1", 2, NULL, NULL, 0), 204);
    assert_int_equal(drain(f), 0);
    once_webhook_stats st;
    assert_int_equal(once_webhook_get_stats(f->w, &st), ONCE_OK);
    assert_int_equal(st.received, 6);
    assert_int_equal(st.duplicates, 1);
    assert_int_equal(f->s.n, 6);
}

/* The token is what tells this receiver's subscriptions from anyone
 * else's: without one configured the receiver does not open, and a
 * delivery without it is refused and not recorded. */
static void token_required(void **state)
{
    fx *f = *state;
    const char *secrets[] = {SECRET};
    once_webhook_options o = {.state_path = f->path, .secrets = secrets, .nsecrets = 1};
    once_webhook *w = NULL;
    char err[200] = "";
    assert_int_equal(once_webhook_open(&o, &w, err, sizeof err), ONCE_EINVAL);
    assert_null(w);
    assert_non_null(strstr(err, "token"));
    o.token = "";
    assert_int_equal(once_webhook_open(&o, &w, err, sizeof err), ONCE_EINVAL);
    assert_int_equal(deliver(f, "t-1", 1, NULL, 5), 401);
    once_webhook_stats st;
    assert_int_equal(once_webhook_get_stats(f->w, &st), ONCE_OK);
    assert_int_equal(st.pending, 0);
}

static void refused_not_recorded(void **state)
{
    fx *f = *state;
    for (int tamper = 1; tamper <= 4; tamper++)
        assert_int_equal(deliver(f, "t-1", 1, NULL, tamper), 401);
    once_webhook_stats st;
    assert_int_equal(once_webhook_get_stats(f->w, &st), ONCE_OK);
    assert_int_equal(st.pending, 0);
    assert_int_equal(st.received, 0);
    assert_int_equal(st.rejected, 4);
    assert_int_equal(drain(f), 0);

    /* malformed: id shape, body not an object, missing headers */
    char sig[ONCE_WEBHOOK_SIG_LEN + 1], ts[24];
    snprintf(ts, sizeof ts, "%lld", (long long)(NOW_MS / 1000));
    const char *cases[][2] = {{"no-generation", "{}"},   {"t-1.1", "{}"}, /* no subscription */
                              {SUB_A "/0/t-1.0", "{}"},  {SUB_A "/0/bad id.1", "{}"},
                              {SUB_A "/0/t-1.1", "[1]"}, {SUB_A "/0/t-1.1", "nope"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(
            once_webhook_sign(SECRET, cases[i][0], ts, cases[i][1], strlen(cases[i][1]), sig),
            ONCE_OK);
        once_webhook_request r = {.id = cases[i][0],
                                  .timestamp = ts,
                                  .signature = sig,
                                  .token = "tok-1",
                                  .body = cases[i][1],
                                  .len = strlen(cases[i][1])};
        int status = 0;
        if (once_webhook_receive(f->w, &r, &status, NULL, NULL, 0) != ONCE_EPARSE || status != 400)
            fail_msg("case %zu (%s) not refused with 400", i, cases[i][0]);
    }
    once_webhook_request none = {.token = "tok-1", .body = "{}", .len = 2};
    char why[160];
    int status = 0;
    assert_int_equal(once_webhook_receive(f->w, &none, &status, NULL, why, sizeof why),
                     ONCE_EPARSE);
    assert_int_equal(status, 400);
    assert_non_null(strstr(why, "webhook-"));
    assert_int_equal(drain(f), 0);
}

/* ------------------------------------------------------------------------
 * The HTTP listener and the exec handler.
 */

static int gate_calls;
static int gate(void *arg, const once_webhook_request *req)
{
    (void)arg;
    (void)req;
    int k = __atomic_fetch_add(&gate_calls, 1, __ATOMIC_SEQ_CST);
    return k == 0 ? 500 : k == 1 ? -1 : 0;
}

static size_t discard(char *b, size_t size, size_t n, void *arg)
{
    (void)b;
    (void)arg;
    return size * n;
}

static long post(int port, const char *task, int gen, int now_s)
{
    char id[160], body[160], ts[24], sig[ONCE_WEBHOOK_SIG_LEN + 1], url[64], h[4][200];
    snprintf(id, sizeof id, "%s/0/%s.%d", SUB_A, task, gen);
    snprintf(body, sizeof body, "{\"task\":{\"id\":\"%s\"}}", task);
    snprintf(ts, sizeof ts, "%d", now_s);
    assert_int_equal(once_webhook_sign(SECRET, id, ts, body, strlen(body), sig), ONCE_OK);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/hook", port);
    snprintf(h[0], sizeof h[0], "webhook-id: %s", id);
    snprintf(h[1], sizeof h[1], "webhook-timestamp: %s", ts);
    snprintf(h[2], sizeof h[2], "webhook-signature: %s", sig);
    snprintf(h[3], sizeof h[3], "X-A2A-Notification-Token: tok-1");
    struct curl_slist *hl = NULL;
    for (int i = 0; i < 4; i++)
        hl = curl_slist_append(hl, h[i]);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    long status = -1;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    curl_slist_free_all(hl);
    return status;
}

static void http_listener(void **state)
{
    fx *f = *state;
    /* The listener checks timestamps against the real clock. */
    once_webhook_close(f->w);
    const char *secrets[] = {SECRET};
    once_webhook_options o = {.state_path = f->path,
                              .secrets = secrets,
                              .nsecrets = 1,
                              .handler = record_handler,
                              .arg = &f->s,
                              .token = "tok-1"};
    assert_int_equal(once_webhook_open(&o, &f->w, NULL, 0), ONCE_OK);
    once_webhook_listen_options lo = {.gate = gate};
    once_webhook_server *srv;
    char err[200];
    if (once_webhook_listen(f->w, &lo, &srv, err, sizeof err) != ONCE_OK)
        fail_msg("listen: %s", err);
    int port = once_webhook_server_port(srv);
    assert_true(port > 0);
    int now = (int)(once_now(once_clock_system()) / 1000);
    assert_int_equal(post(port, "h-1", 1, now), 500); /* the gate said 500 */
    assert_int_equal(post(port, "h-1", 1, now), -1);  /* the gate dropped the connection */
    assert_int_equal(post(port, "h-1", 1, now), 204);
    assert_int_equal(post(port, "h-1", 1, now), 204);        /* duplicate */
    assert_int_equal(post(port, "h-1", 2, now - 3600), 401); /* stale */
    assert_int_equal(post(port, "h-1", 2, now), 204);
    int64_t until = once_monotonic_ms() + tt_ms(2000);
    while (__atomic_load_n(&f->s.n, __ATOMIC_ACQUIRE) < 2 && once_monotonic_ms() < until)
        usleep(10000); /* the drain thread hands them over */
    once_webhook_server_stop(srv);
    assert_int_equal(f->s.n, 2);
    assert_string_equal(f->s.log[0], "h-1.1");
    assert_string_equal(f->s.log[1], "h-1.2");
}

static void exec_handler(void **state)
{
    (void)state;
    char out[64], cmd[256];
    snprintf(out, sizeof out, "/tmp/once-rx-exec-%d", (int)getpid());
    snprintf(cmd, sizeof cmd,
             "cat > %s; echo \" $ONCE_TASK_ID $ONCE_GENERATION $ONCE_WEBHOOK_ID"
             " $ONCE_SUBSCRIPTION\" >> %s",
             out, out);
    once_webhook_event ev = {"t-9", 7, SUB_A "/0/t-9.7", "{\"x\":1}", 7, SUB_A};
    assert_int_equal(once_webhook_exec_handler(cmd, &ev), ONCE_OK);
    FILE *fp = fopen(out, "r");
    assert_non_null(fp);
    char line[256] = "";
    assert_non_null(fgets(line, sizeof line, fp));
    fclose(fp);
    unlink(out);
    assert_string_equal(line, "{\"x\":1} t-9 7 " SUB_A "/0/t-9.7 " SUB_A "\n");
    assert_int_not_equal(once_webhook_exec_handler("exit 3", &ev), ONCE_OK);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(once_and_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(durable_across_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(handler_failure_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(since_and_skip, setup, teardown),
        cmocka_unit_test_setup_teardown(refused_not_recorded, setup, teardown),
        cmocka_unit_test_setup_teardown(forged_since_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(subscriptions_apart, setup, teardown),
        cmocka_unit_test_setup_teardown(token_required, setup, teardown),
        cmocka_unit_test_setup_teardown(http_listener, setup, teardown),
        cmocka_unit_test(exec_handler),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
