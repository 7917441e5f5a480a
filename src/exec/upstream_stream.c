/*
 * upstream_stream.c -- the receiving end of one streamed call of the gateway
 * (SendStreamingMessage, SubscribeToTask), on either binding: the bytes come
 * from src/client's HTTP code (once__http_req.on_data), events are cut out
 * of them by src/client's SSE parser (sse.c), and each event's
 * StreamResponse goes to the turn's callback as it arrives.
 *
 * The two bindings differ only in the event's data: JSON-RPC wraps the
 * StreamResponse in a response ({"result": ...}; an error event carries
 * {"error": ...}), HTTP+JSON sends it bare (an error event: {"error": ...}).
 * An answer that is not an event stream (the upstream refused before
 * streaming: a JSON-RPC error, an HTTP error status) is kept, up to
 * SINK_MAX_ANSWER bytes, and judged by upstream_call.c like any answer.
 *
 * Invariants: no event is held beyond the one being read (the parser's cap
 * is ONCE__HTTP_MAX_BODY); an event the turn could not take (a write that
 * failed) ends the stream with that error, never a silent skip; a stream
 * counts as cut unless the upstream closed it in good order or the turn
 * ended it itself.
 */
#include <stdio.h>
#include <string.h>

#include "core/grow.h"
#include "core/jcs.h"
#include "exec/upstream.h"

#define SINK_MAX_ANSWER (1u << 20)

static int on_event(void *ctx, int has_id, int64_t id, const char *data, size_t len)
{
    (void)has_id;
    (void)id;
    gw_sink *k = ctx;
    json_t *doc = NULL;
    if (once__json_loadb(data, len, 0, &doc, NULL) == ONCE_ENOMEM) {
        k->hard = ONCE_ENOMEM;
        return ONCE_ENOMEM;
    }
    const json_t *ev = k->g->binding == GW_JSONRPC ? json_object_get(doc, "result") : doc;
    json_t *ev10 = NULL; /* an A2A 0.3 event, as the 1.0 StreamResponse */
    if (k->g->v03 && ev != NULL && (ev = ev10 = once__gw_v03_in(k->g, k->q->method, ev)) == NULL) {
        json_decref(doc);
        k->hard = ONCE_ENOMEM;
        return ONCE_ENOMEM;
    }
    if (!json_is_object(ev) || once__stream_body(ev) == NULL) {
        const json_t *err = json_object_get(doc, "error");
        const char *msg = json_string_value(json_object_get(err, "message"));
        snprintf(k->r->error, sizeof k->r->error, "the stream ended with %s%s",
                 err ? "an error: " : "an event that is not a StreamResponse",
                 err ? (msg ? msg : "(no message)") : "");
        k->broken = 1;
        json_decref(ev10);
        json_decref(doc);
        return 1;
    }
    int rc = k->q->on_event(k->q->event_ctx, ev);
    json_decref(ev10);
    json_decref(doc);
    if (rc < 0)
        k->hard = rc;
    return rc;
}

static int on_data(void *ctx, const once__http_resp *r, const char *p, size_t len)
{
    gw_sink *k = ctx;
    if (!k->decided) {
        k->decided = 1;
        k->is_sse = once__http_is_event_stream(r);
    }
    if (!k->is_sse) {
        if (k->len + len > SINK_MAX_ANSWER)
            return 0; /* its start says enough */
        if (once__text_append(&k->body, &k->len, &k->cap, 4096, p, len) != ONCE_OK) {
            k->hard = ONCE_ENOMEM;
            return 1;
        }
        return 0;
    }
    int rc = once__sse_feed(&k->sse, p, len);
    if (rc == ONCE_ERANGE) {
        snprintf(k->r->error, sizeof k->r->error, "a stream event over %u bytes",
                 ONCE__HTTP_MAX_BODY);
        k->broken = 1;
    } else if (rc < 0 && k->hard == 0) {
        k->hard = rc;
    }
    return rc != ONCE_OK;
}

static int stop(void *ctx)
{
    const gw_sink *k = ctx;
    return k->q->stop != NULL && k->q->stop(k->q->event_ctx);
}

void once__gw_sink_arm(gw_sink *k, const gw *g, const gw_req *q, gw_res *r, once__http_req *hq)
{
    memset(k, 0, sizeof *k);
    k->g = g;
    k->q = q;
    k->r = r;
    once__sse_init(&k->sse, ONCE__HTTP_MAX_BODY, on_event, k);
    hq->accept = "text/event-stream";
    hq->on_data = on_data;
    hq->data_ctx = k;
    hq->stop = stop;
    hq->stop_ctx = k;
    hq->idle_ms = ONCE__STREAM_IDLE_MS;
    hq->timeout_ms = 0; /* a stream lasts as long as the upstream task */
}

int once__gw_sink_done(gw_sink *k, int rc, once__http_resp *h)
{
    int out = 0;
    once__sse_clear(&k->sse);
    if (k->hard != 0 || rc == ONCE_ENOMEM) {
        out = k->hard != 0 ? k->hard : ONCE_ENOMEM;
    } else if (once__http_is_event_stream(h)) {
        out = 1;
        k->r->streamed = 1;
        k->r->cut = rc != ONCE_OK || k->broken;
        if (rc != ONCE_OK && !k->broken)
            snprintf(k->r->error, sizeof k->r->error, "the stream was cut: %s", h->error);
    } else if (rc == ONCE_OK) {
        once_free(h->body);
        h->body = k->body; /* judged as the call's answer */
        h->len = k->len;
        k->body = NULL;
    }
    once_free(k->body);
    k->body = NULL;
    return out;
}
