/*
 * test_a2a_stream.c -- SendStreamingMessage / SubscribeToTask in the codec
 * (src/a2a/h_stream.c) over a scripted backend: what opens a stream and what
 * is an ordinary JSON-RPC error, the exact SSE frames, where a stream starts
 * (snapshot, replay, Last-Event-ID) and where it ends (the first settled
 * event at or past the generation it opened at), the stream slots, and the
 * error frame.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "a2a_fake.h"

#define MAXEV 16

/* The fake engine: fake (send/get/...) plus a scripted event list and
 * task head. `f` must stay first: the codec hands the same ctx to both. */
typedef struct sfake {
    fake f;
    const char *ev[MAXEV + 1];   /* ev[g] = payload of generation g (1-based) */
    int64_t gen;                 /* the task's generation */
    once_state state;
    int head_rc, events_rc;
    int skip;                    /* the event list misses this generation */
    int waits;
} sfake;

static sfake S;
static once__a2a *A;
static once__a2a_stream_slots SLOTS;

static int s_events(void *ctx, const char *principal, const char *task_id, int64_t after,
                    size_t max, once_event_list *out)
{
    sfake *s = ctx;
    (void)principal;
    (void)task_id;
    memset(out, 0, sizeof *out);
    if (s->events_rc != ONCE_OK)
        return s->events_rc;
    out->v = once_calloc(MAXEV, sizeof *out->v);
    for (int64_t g = after + 1; g <= s->gen && (max == 0 || out->n < max); g++) {
        if (g == s->skip)
            continue;
        out->v[out->n].generation = g;
        out->v[out->n].payload = once_strdup(s->ev[g]);
        out->n++;
    }
    return ONCE_OK;
}

static int s_head(void *ctx, const char *principal, const char *task_id, int64_t *gen,
                  once_state *state)
{
    sfake *s = ctx;
    (void)principal;
    (void)task_id;
    *gen = s->gen;
    *state = s->state;
    return s->head_rc;
}

static int s_wait(void *ctx, const char *principal, const char *task_id, int64_t gen,
                  int64_t timeout_ms, const once__wait_stop *stop)
{
    (void)stop;
    sfake *s = ctx;
    (void)principal;
    (void)task_id;
    (void)timeout_ms;
    s->waits++;
    return s->gen > gen ? ONCE_OK : ONCE_ETIMEDOUT;
}

/* A served object's generation (core/generation.h). */
#define GEN(n) "\"metadata\":{\"urn:once:a2a:idempotency:v1\":{\"generation\":" #n "}}"

static const char *EV_TASK = "{\"task\":{\"id\":\"t-1\",\"contextId\":\"c-1\",\"status\":{"
                             "\"state\":\"TASK_STATE_SUBMITTED\"}," GEN(1) "}}";
static const char *EV_WORKING = "{\"statusUpdate\":{\"taskId\":\"t-1\",\"contextId\":\"c-1\","
                                "\"status\":{\"state\":\"TASK_STATE_WORKING\"}," GEN(2) "}}";
static const char *EV_ASK = "{\"statusUpdate\":{\"taskId\":\"t-1\",\"contextId\":\"c-1\","
                            "\"status\":{\"state\":\"TASK_STATE_INPUT_REQUIRED\"},"
                            GEN(3) "}}";
static const char *EV_WORKING2 = "{\"statusUpdate\":{\"taskId\":\"t-1\",\"contextId\":\"c-1\","
                                 "\"status\":{\"state\":\"TASK_STATE_WORKING\"},"
                                 GEN(4) "}}";
static const char *EV_ART = "{\"artifactUpdate\":{\"taskId\":\"t-1\",\"contextId\":\"c-1\","
                            "\"artifact\":{\"artifactId\":\"a\",\"parts\":[{\"text\":"
                            "\"TASK_STATE_COMPLETED\"}]},\"append\":false,\"lastChunk\":true,"
                            GEN(5) "}}";
static const char *EV_DONE = "{\"statusUpdate\":{\"taskId\":\"t-1\",\"contextId\":\"c-1\","
                             "\"status\":{\"state\":\"TASK_STATE_COMPLETED\"},"
                             GEN(6) "}}";

/* The task t-1 as GetTask returns it, at generation gen in state st. */
static json_t *task_at(int64_t gen, const char *st)
{
    return json_pack("{s:s, s:s, s:{s:s}, s:{s:{s:I}}}", "id", "t-1", "contextId", "c-1",
                     "status", "state", st, "metadata", ONCE_IDEMPOTENCY_EXTENSION, "generation",
                     (json_int_t)gen);
}

/* The script: a task that asked (3), was continued (4), and completed (6). */
static void script(int64_t gen, once_state state)
{
    S.ev[1] = EV_TASK;
    S.ev[2] = EV_WORKING;
    S.ev[3] = EV_ASK;
    S.ev[4] = EV_WORKING2;
    S.ev[5] = EV_ART;
    S.ev[6] = EV_DONE;
    S.gen = gen;
    S.state = state;
}

static int setup(void **state)
{
    (void)state;
    fake_reset(&S.f);
    memset(&S, 0, sizeof S);
    once__a2a_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.backend.ctx = &S;
    cfg.backend.send = fake_send;
    cfg.backend.get = fake_get;
    cfg.backend.cancel = fake_cancel;
    cfg.backend.list = fake_list;
    cfg.backend.events = s_events;
    cfg.backend.head = s_head;
    cfg.backend.wait = s_wait;
    cfg.url = "http://127.0.0.1:1/";
    SLOTS.used = 0;
    SLOTS.max = 2;
    return once__a2a_new(&cfg, &A) == ONCE_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    once__a2a_free(A);
    fake_reset(&S.f);
    return 0;
}

/* One call; *resp is the caller's. Returns the parsed JSON body (NULL for a
 * stream, which has none). */
static json_t *call(const char *body, const char *last_event_id, once__a2a_response *resp)
{
    once__a2a_request req = {.principal = "alice",
                            .version = "1.0",
                            .body = body,
                            .len = strlen(body),
                            .last_event_id = last_event_id,
                            .slots = &SLOTS};
    assert_int_equal(once__a2a_handle(A, &req, resp), ONCE_OK);
    if (resp->stream != NULL) {
        assert_null(resp->body);
        return NULL;
    }
    return json_loadb(resp->body, resp->len, 0, NULL);
}

/* Everything the stream produces, read to its end (bounded). */
static char *drain(once__a2a_stream *s, size_t max)
{
    size_t cap = 1, len = 0;
    char *all = calloc(1, 1);
    for (int i = 0; i < 64; i++) {
        char *t = NULL;
        size_t n = 0;
        int done = 0;
        assert_int_equal(once__a2a_stream_read(s, max, &t, &n, &done), ONCE_OK);
        if (n > 0) {
            all = realloc(all, cap + n);
            memcpy(all + len, t, n);
            len += n;
            cap += n;
            all[len] = '\0';
        }
        once_free(t);
        if (done)
            return all;
        if (n == 0)
            break;   /* caught up without an end: the caller checks that */
    }
    return all;
}

/* The ids of the frames in text, as "1,2,3". */
static void ids_of(const char *text, char *out, size_t outlen)
{
    out[0] = '\0';
    for (const char *p = text; (p = strstr(p, "id: ")) != NULL; p += 4) {
        if (p != text && p[-1] != '\n')
            continue;
        size_t n = strlen(out);
        snprintf(out + n, outlen - n, "%s%ld", n ? "," : "", strtol(p + 4, NULL, 10));
    }
}

static const char *SUB = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"SubscribeToTask\","
                         "\"params\":{\"id\":\"t-1\"}}";

static void test_subscribe_snapshot_then_events(void **state)
{
    (void)state;
    script(4, ONCE_STATE_WORKING);
    S.f.result = task_at(4, "TASK_STATE_WORKING");
    once__a2a_response r;
    assert_null(call(SUB, NULL, &r));
    assert_non_null(r.stream);
    assert_int_equal(SLOTS.used, 1);
    char *text = drain(r.stream, 8);
    /* The snapshot first, at the task's generation, then what comes after. */
    const char *want_first =
        "id: 4\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"task\":{\"id\":\"t-1\","
        "\"contextId\":\"c-1\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}," GEN(4) "}}}"
        "\n\n";
    assert_memory_equal(text, want_first, strlen(want_first));
    char ids[64];
    ids_of(text, ids, sizeof ids);
    assert_string_equal(ids, "4");   /* nothing after 4 yet */
    free(text);
    /* The task moves: the stream picks up 5 and 6 and ends at the terminal one
     * (an artifact naming a state does not end it). */
    S.gen = 6;
    assert_int_equal(once__a2a_stream_wait(r.stream, 10, NULL), ONCE_OK);
    text = drain(r.stream, 8);
    ids_of(text, ids, sizeof ids);
    assert_string_equal(ids, "5,6");
    const char *last = strstr(text, "id: 6\n");
    assert_non_null(last);
    assert_string_equal(last, "id: 6\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":"
                              "{\"statusUpdate\":{\"taskId\":\"t-1\",\"contextId\":\"c-1\","
                              "\"status\":{\"state\":\"TASK_STATE_COMPLETED\"},"
                              GEN(6) "}}}\n\n");
    free(text);
    assert_int_equal(once__a2a_stream_position(r.stream), 6);
    once__a2a_response_clear(&r);
    assert_int_equal(SLOTS.used, 0);   /* freeing the stream gave the slot back */
}

static void test_subscribe_resume_and_refusals(void **state)
{
    (void)state;
    script(6, ONCE_STATE_COMPLETED);
    S.f.result = task_at(6, "TASK_STATE_COMPLETED");
    once__a2a_response r;
    /* Terminal: A2A 1.0 says -32004, as a plain JSON-RPC answer. */
    json_t *doc = call(SUB, NULL, &r);
    assert_int_equal(err_code(doc), -32004);
    assert_string_equal(err_reason(doc), "TASK_TERMINAL");
    assert_string_equal(err_meta(doc, "state"), "TASK_STATE_COMPLETED");
    json_decref(doc);
    once__a2a_response_clear(&r);
    /* ... also when the client already has everything. */
    doc = call(SUB, "6", &r);
    assert_int_equal(err_code(doc), -32004);
    json_decref(doc);
    once__a2a_response_clear(&r);
    /* Resuming below the end streams what was missed, through the end; the
     * input-required of an earlier turn (3) does not end it. */
    assert_null(call(SUB, "2", &r));
    char *text = drain(r.stream, 2);
    char ids[64];
    ids_of(text, ids, sizeof ids);
    assert_string_equal(ids, "3,4,5,6");
    assert_null(strstr(text, "\"task\":"));   /* no snapshot on a resume */
    free(text);
    once__a2a_response_clear(&r);
    /* Last-Event-ID past the task, or not a generation: -32602 on the header. */
    const char *bad[] = {"7", "x", "-1", "1.5", "", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        doc = call(SUB, bad[i], &r);
        assert_int_equal(err_code(doc), -32602);
        assert_string_equal(err_meta(doc, "field"), "Last-Event-ID");
        json_decref(doc);
        once__a2a_response_clear(&r);
    }
    /* Unknown task. */
    S.f.rc = ONCE_ENOTFOUND;
    S.head_rc = ONCE_ENOTFOUND;
    doc = call(SUB, NULL, &r);
    assert_int_equal(err_code(doc), -32001);
    json_decref(doc);
    once__a2a_response_clear(&r);
    doc = call(SUB, "1", &r);
    assert_int_equal(err_code(doc), -32001);
    json_decref(doc);
    once__a2a_response_clear(&r);
    assert_int_equal(SLOTS.used, 0);   /* refusals hold no slot */
}

static void test_subscribe_interrupted(void **state)
{
    (void)state;
    script(3, ONCE_STATE_INPUT_REQUIRED);
    S.f.result = task_at(3, "TASK_STATE_INPUT_REQUIRED");
    once__a2a_response r;
    /* A2A 1.0 section 3.1.6: a subscription works on any non-terminal task
     * and ends at a terminal state, so the snapshot of an input-required
     * task does not end it: it stays open (the HTTP layer pings) for the
     * continuation someone sends, and ends with the task. */
    assert_null(call(SUB, NULL, &r));
    once__a2a_response rr;
    assert_null(call(SUB, "3", &rr));   /* a resume at its end: open too */
    char *text = drain(r.stream, 8);
    char ids[64];
    ids_of(text, ids, sizeof ids);
    assert_string_equal(ids, "3");
    free(text);
    char *t = NULL;
    size_t n = 0;
    int done = 1;
    assert_int_equal(once__a2a_stream_read(r.stream, 4, &t, &n, &done), ONCE_OK);
    assert_int_equal(n, 0);
    assert_false(done);
    assert_int_equal(once__a2a_stream_read(rr.stream, 4, &t, &n, &done), ONCE_OK);
    assert_int_equal(n, 0);
    assert_false(done);
    S.gen = 6;   /* continued: working (4), the artifact (5), completed (6) */
    for (int i = 0; i < 2; i++) {
        once__a2a_stream *st = i == 0 ? r.stream : rr.stream;
        assert_int_equal(once__a2a_stream_wait(st, 10, NULL), ONCE_OK);
        text = drain(st, 8);
        ids_of(text, ids, sizeof ids);
        assert_string_equal(ids, "4,5,6");
        free(text);
        assert_int_equal(once__a2a_stream_read(st, 4, &t, &n, &done), ONCE_OK);
        assert_true(done);
    }
    once__a2a_response_clear(&r);
    once__a2a_response_clear(&rr);
}

static void test_slots(void **state)
{
    (void)state;
    script(4, ONCE_STATE_WORKING);
    S.f.result = task_at(4, "TASK_STATE_WORKING");
    once__a2a_response r1, r2, r3;
    assert_null(call(SUB, NULL, &r1));
    assert_null(call(SUB, NULL, &r2));
    json_t *doc = call(SUB, NULL, &r3);
    assert_int_equal(err_code(doc), -32603);
    assert_string_equal(err_reason(doc), "TOO_MANY_STREAMS");
    assert_int_equal(r3.http_status, 503);
    assert_int_equal(r3.retry_after, 1);
    json_decref(doc);
    once__a2a_response_clear(&r3);
    assert_int_equal(SLOTS.used, 2);
    once__a2a_response_clear(&r1);
    assert_null(call(SUB, NULL, &r3));   /* the freed slot is usable again */
    once__a2a_response_clear(&r2);
    once__a2a_response_clear(&r3);
    assert_int_equal(SLOTS.used, 0);
}

static const char *SEND = "{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"SendStreamingMessage\","
                          "\"params\":{\"message\":{\"messageId\":\"m-1\",\"role\":\"ROLE_USER\","
                          "\"parts\":[{\"text\":\"hi\"}]},\"configuration\":{"
                          "\"historyLength\":0}}}";

static void test_send_streaming(void **state)
{
    (void)state;
    /* A fresh send: SendMessage's decision with returnImmediately forced,
     * then the Task it wrote (generation 1), then the events after it. */
    script(1, ONCE_STATE_SUBMITTED);
    S.f.verdict = ONCE_V_REGISTER;
    S.f.state = ONCE_STATE_SUBMITTED;
    S.f.result = json_pack("{s:o}", "task", task_at(1, "TASK_STATE_SUBMITTED"));
    once__a2a_response r;
    assert_null(call(SEND, NULL, &r));
    assert_int_equal(S.f.sent_immediately, 1);
    assert_false(r.replayed);
    S.gen = 6;
    char *text = drain(r.stream, 3);
    char ids[64];
    ids_of(text, ids, sizeof ids);
    /* The input-required at 3 ends the stream: it is past where it opened. */
    assert_string_equal(ids, "1,2,3");
    assert_non_null(strstr(text, "\"id\":\"s\",\"result\":{\"task\""));
    free(text);
    once__a2a_response_clear(&r);

    /* A replay streams the stored events from 1 and ends at the end of the
     * task as it is now (6), not at the earlier input-required. */
    S.f.verdict = ONCE_V_REPLAY;
    S.f.replayed = 1;
    S.f.state = ONCE_STATE_COMPLETED;
    json_decref(S.f.result);
    S.f.result = json_pack("{s:o}", "task", task_at(6, "TASK_STATE_COMPLETED"));
    assert_null(call(SEND, NULL, &r));
    assert_true(r.replayed);
    text = drain(r.stream, 2);
    ids_of(text, ids, sizeof ids);
    assert_string_equal(ids, "1,2,3,4,5,6");
    free(text);
    once__a2a_response_clear(&r);
    /* ... or after Last-Event-ID; at the end there is nothing left. */
    assert_null(call(SEND, "4", &r));
    text = drain(r.stream, 8);
    ids_of(text, ids, sizeof ids);
    assert_string_equal(ids, "5,6");
    free(text);
    once__a2a_response_clear(&r);
    assert_null(call(SEND, "6", &r));
    text = drain(r.stream, 8);
    assert_string_equal(text, "");
    free(text);
    once__a2a_response_clear(&r);
    json_t *doc = call(SEND, "7", &r);
    assert_int_equal(err_code(doc), -32602);
    json_decref(doc);
    once__a2a_response_clear(&r);

    /* Refusals are JSON-RPC errors, not streams, and hold no slot. */
    S.f.verdict = ONCE_V_REJECT_TERMINAL;
    json_decref(S.f.result);
    S.f.result = NULL;
    doc = call(SEND, NULL, &r);
    assert_int_equal(err_code(doc), -32004);
    assert_null(r.stream);
    json_decref(doc);
    once__a2a_response_clear(&r);
    assert_int_equal(SLOTS.used, 0);
}

static void test_direct_message(void **state)
{
    (void)state;
    S.f.verdict = ONCE_V_REPLAY;
    S.f.replayed = 1;
    S.f.result = json_pack("{s:{s:s, s:s, s:[{s:s}]}}", "message", "messageId", "a-1", "role",
                           "ROLE_AGENT", "parts", "text", "42");
    once__a2a_response r;
    assert_null(call(SEND, NULL, &r));
    char *text = drain(r.stream, 8);
    /* Exactly one Message, without an id, then the end. */
    assert_string_equal(text, "data: {\"jsonrpc\":\"2.0\",\"id\":\"s\",\"result\":{\"message\":"
                              "{\"messageId\":\"a-1\",\"role\":\"ROLE_AGENT\",\"parts\":"
                              "[{\"text\":\"42\"}]}}}\n\n");
    free(text);
    once__a2a_response_clear(&r);
}

static void test_gap_and_error_frame(void **state)
{
    (void)state;
    script(6, ONCE_STATE_COMPLETED);
    S.skip = 4;   /* a hole in the event list must not be papered over */
    once__a2a_response r;
    assert_null(call(SUB, "2", &r));
    char *t = NULL;
    size_t n = 0;
    int done = 0;
    assert_int_equal(once__a2a_stream_read(r.stream, 8, &t, &n, &done), ONCE_OK);
    once_free(t);   /* 3 came out */
    assert_int_equal(once__a2a_stream_read(r.stream, 8, &t, &n, &done), ONCE_ECORRUPT);
    assert_int_equal(n, 0);
    assert_int_equal(once__a2a_stream_error(r.stream, ONCE_ESTORE, &t, &n), ONCE_OK);
    const char *head = "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32603,";
    assert_memory_equal(t, head, strlen(head));
    assert_non_null(strstr(t, "\"reason\":\"STORE_UNAVAILABLE\""));
    assert_null(strstr(t, "id: "));
    assert_string_equal(t + n - 2, "\n\n");
    once_free(t);
    assert_int_equal(once__a2a_stream_read(r.stream, 8, &t, &n, &done), ONCE_OK);
    assert_true(done);   /* nothing follows the error frame */
    once__a2a_response_clear(&r);
    /* A store failure on the first read is reported, nothing is produced. */
    S.skip = 0;
    S.events_rc = ONCE_ESTORE;
    assert_null(call(SUB, "2", &r));
    assert_int_equal(once__a2a_stream_read(r.stream, 8, &t, &n, &done), ONCE_ESTORE);
    assert_null(t);
    once__a2a_response_clear(&r);
}

static void test_without_a_following_backend(void **state)
{
    (void)state;
    /* The codec over a backend that cannot follow events keeps refusing. */
    fake f;
    memset(&f, 0, sizeof f);
    once__a2a *a = fake_codec(&f, 0, NULL);
    assert_non_null(a);
    once__a2a_response r;
    json_t *doc = fake_call(a, "1.0", NULL, SUB, &r);
    assert_int_equal(err_code(doc), -32004);
    assert_string_equal(err_reason(doc), "UNSUPPORTED_OPERATION");
    json_decref(doc);
    once__a2a_response_clear(&r);
    size_t len;
    const char *text = once__a2a_card(a, &len);
    json_t *card = json_loadb(text, len, 0, NULL);
    assert_true(json_is_false(json_object_get(json_object_get(card, "capabilities"), "streaming")));
    json_decref(card);
    text = once__a2a_card(A, &len);
    card = json_loadb(text, len, 0, NULL);
    assert_true(json_is_true(json_object_get(json_object_get(card, "capabilities"), "streaming")));
    json_decref(card);
    once__a2a_free(a);
    fake_reset(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_subscribe_snapshot_then_events, setup, teardown),
        cmocka_unit_test_setup_teardown(test_subscribe_resume_and_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_subscribe_interrupted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slots, setup, teardown),
        cmocka_unit_test_setup_teardown(test_send_streaming, setup, teardown),
        cmocka_unit_test_setup_teardown(test_direct_message, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gap_and_error_frame, setup, teardown),
        cmocka_unit_test_setup_teardown(test_without_a_following_backend, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
