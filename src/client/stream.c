/*
 * stream.c -- one SubscribeToTask connection (A2A 1.0 over SSE; docs/wire.md
 * "Streaming"): a POST with Accept: text/event-stream and, when resuming,
 * Last-Event-ID: <generation>. Each data line is a JSON-RPC response whose
 * result is a StreamResponse; it goes to the caller with its generation
 * (the event's id, else the payload's `generation`, else 0).
 *
 * How the connection went is classified for the follow loop (wait.c):
 *   STREAM       the stream opened; `end` says why it stopped (the caller
 *                ended it, an error line, or it was closed or cut: `clean`
 *                tells a close in good order from a cut);
 *   RETRY        no stream: a transport failure, HTTP 429/502/503/504, a
 *                JSON-RPC error the agent marks retryable;
 *   UNSUPPORTED  the agent answered without a stream (method unknown,
 *                refused, not found...): the caller polls GetTask, which
 *                reports the task's truth;
 *   INTERRUPTED  *interrupted was set.
 * A non-stream answer is kept (at most STREAM_MAX_ERROR bytes) only to read
 * its error; stream events are never accumulated beyond one (ONCE__HTTP_MAX_BODY).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/grow.h"
#include "client/client_int.h"
#include "core/generation.h"
#include "core/jcs.h"
#include "core/v03.h"

#define STREAM_MAX_ERROR (1u << 20)

/* One connection's callbacks' shared state; on subscribe()'s stack. */
typedef struct conn {
    once__stream_out *out;
    once__stream_event_fn fn;
    void *ctx;
    once__sse sse;
    int decided;                 /* the answer's kind is known */
    int is_sse;
    char *body;                  /* a non-stream answer */
    size_t len, cap;
    int hard;                    /* a hard failure inside a callback (ENOMEM) */
    int v03;                     /* an A2A 0.3 agent: events converted to 1.0 */
} conn;

int once__http_is_event_stream(const once__http_resp *r)
{
    return r->seen_status == 200 && strncasecmp(r->content_type, "text/event-stream", 17) == 0;
}

const json_t *once__stream_body(const json_t *result)
{
    static const char *const kinds[] = {"task", "statusUpdate", "artifactUpdate", "message"};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        const json_t *b = json_object_get(result, kinds[i]);
        if (json_is_object(b))
            return b;
    }
    return NULL;
}

static int on_event(void *ctx, int has_id, int64_t id, const char *data, size_t len)
{
    conn *k = ctx;
    json_t *doc = NULL;
    if (once__json_loadb(data, len, 0, &doc, NULL) == ONCE_ENOMEM) {
        k->hard = ONCE_ENOMEM; /* an event this client could not read is no verdict */
        return ONCE_ENOMEM;
    }
    const json_t *res = json_object_get(doc, "result");
    json_t *res10 = NULL; /* an A2A 0.3 event, as the 1.0 StreamResponse */
    if (k->v03 && res != NULL && (res = res10 = once__v03_event_in(res)) == NULL) {
        json_decref(doc);
        k->hard = ONCE_ENOMEM;
        return ONCE_ENOMEM;
    }
    if (!json_is_object(res) || once__stream_body(res) == NULL) {
        const json_t *err = json_object_get(doc, "error");
        const char *msg = json_string_value(json_object_get(err, "message"));
        snprintf(k->out->error, sizeof k->out->error, "the stream ended with %s%s",
                 err ? "an error: " : "an event that is not a StreamResponse",
                 err ? (msg ? msg : "(no message)") : "");
        k->out->end = ONCE__END_BROKEN;
        json_decref(res10);
        json_decref(doc);
        return 1;
    }
    int64_t gen = has_id ? id : once__generation_of(once__stream_body(res));
    once__end end = ONCE__END_OPEN;
    int rc = k->fn(k->ctx, gen, res, &end);
    json_decref(res10);
    json_decref(doc);
    if (rc != ONCE_OK) {
        k->hard = rc;
        return rc;
    }
    if (end != ONCE__END_OPEN) {
        k->out->end = end;
        return 1;
    }
    return ONCE_OK;
}

static int on_data(void *ctx, const once__http_resp *r, const char *p, size_t len)
{
    conn *k = ctx;
    if (!k->decided) {
        k->decided = 1;
        k->is_sse = once__http_is_event_stream(r);
    }
    if (k->is_sse) {
        int rc = once__sse_feed(&k->sse, p, len);
        if (rc == ONCE_OK)
            return 0;
        if (rc == ONCE_ERANGE) {
            snprintf(k->out->error, sizeof k->out->error, "a stream event over %u bytes",
                     ONCE__HTTP_MAX_BODY);
            k->out->end = ONCE__END_BROKEN;
        } else if (rc < 0) {
            k->hard = rc;
        }
        return 1;
    }
    if (k->len + len > STREAM_MAX_ERROR)
        return 1;   /* not an answer we need in full: its start says enough */
    if (once__text_append(&k->body, &k->len, &k->cap, 4096, p, len) != ONCE_OK) {
        k->hard = ONCE_ENOMEM;
        return 1;
    }
    return 0;
}

/* A non-stream answer: retry it, or leave the task to polling. */
static void classify_answer(once_client *c, conn *k, const once__http_resp *h)
{
    once__stream_out *out = k->out;
    json_t *doc = NULL;
    if (k->body != NULL && once__json_loadb(k->body, k->len, 0, &doc, NULL) == ONCE_ENOMEM)
        k->hard = ONCE_ENOMEM;
    long status = h->status ? h->status : h->seen_status;
    once__verdict v = once__classify(status, doc);
    const json_t *err = json_object_get(doc, "error");
    if (json_is_object(err)) {
        const char *msg = json_string_value(json_object_get(err, "message"));
        snprintf(out->error, sizeof out->error, "SubscribeToTask: %s (code %d)",
                 msg ? msg : "error", (int)json_integer_value(json_object_get(err, "code")));
    } else {
        snprintf(out->error, sizeof out->error, "SubscribeToTask: HTTP %ld, %s", status,
                 h->content_type[0] ? h->content_type : "no content type");
    }
    out->conn = v == ONCE__RETRY ? ONCE__CONN_RETRY : ONCE__CONN_UNSUPPORTED;
    out->http_status = status;
    if (h->retry_after[0] != '\0') {
        int64_t ms;
        if (once__retry_after_parse(h->retry_after, once__client_now(c), &ms) == ONCE_OK)
            out->retry_after_ms = ms;
    }
    json_decref(doc);
}

int once__stream_subscribe(once_client *c, const char *agent, const char *url,
                           const char *task_id, int64_t after, int64_t timeout_ms,
                           once__stream_event_fn fn, void *ctx, once__stream_out *out)
{
    memset(out, 0, sizeof *out);
    out->retry_after_ms = -1;
    /* An A2A 0.3 agent: its name for it, its events converted (on_event). */
    int v03 = once__agent_v03(c, agent, url);
    json_t *req = json_pack("{s:s,s:i,s:s,s:{s:s}}", "jsonrpc", "2.0", "id", 1, "method",
                            v03 ? "tasks/resubscribe" : "SubscribeToTask", "params", "id", task_id);
    char *body = req ? json_dumps(req, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(req);
    if (body == NULL)
        return ONCE_ENOMEM;
    char lei[32];
    snprintf(lei, sizeof lei, "%lld", (long long)after);
    conn k = {.out = out, .fn = fn, .ctx = ctx, .v03 = v03};
    once__sse_init(&k.sse, ONCE__HTTP_MAX_BODY, on_event, &k);
    once__http_req q = {.method = "POST",
                        .url = url,
                        .body = body,
                        .len = strlen(body),
                        .token = c->token,
                        .tls = &c->tls,
                        .timeout_ms = timeout_ms,
                        .connect_timeout_ms = c->retry.connect_timeout_ms,
                        .interrupted = c->interrupted,
                        .v03 = v03,
                        .accept = "text/event-stream",
                        .last_event_id = after > 0 ? lei : NULL,
                        .on_data = on_data,
                        .data_ctx = &k,
                        .idle_ms = ONCE__STREAM_IDLE_MS};
    once__http_resp h;
    int rc = once__a2a_do(c, agent, &q, &h);
    once_free(body); /* json_dumps allocates through once_malloc */
    once__sse_clear(&k.sse);
    if (k.hard != 0 || rc == ONCE_ENOMEM) {
        rc = k.hard < 0 ? k.hard : rc == ONCE_ENOMEM ? rc : ONCE_ERROR;
    } else if (h.interrupted) {
        out->conn = ONCE__CONN_INTERRUPTED;
        rc = ONCE_OK;
    } else if (once__http_is_event_stream(&h)) {
        out->conn = ONCE__CONN_STREAM;
        out->clean = rc == ONCE_OK && !h.stopped;
        out->idle = h.idle;
        out->timed_out = h.timed_out && !h.idle;
        if (rc != ONCE_OK && out->end == ONCE__END_OPEN)
            snprintf(out->error, sizeof out->error, "the stream was cut: %s", h.error);
        rc = ONCE_OK;
    } else if (rc != ONCE_OK) {
        out->conn = ONCE__CONN_RETRY;
        out->timed_out = h.timed_out;
        snprintf(out->error, sizeof out->error, "SubscribeToTask at %.200s: %s%.250s", url,
                 h.timed_out ? "timeout: " : "", h.error);
        rc = ONCE_OK;
    } else {
        classify_answer(c, &k, &h);
        if (k.hard < 0)
            rc = k.hard; /* the answer could not be read: no verdict from it */
    }
    once_free(k.body);
    once__http_resp_clear(&h);
    return rc;
}
