/*
 * bind_rest.c -- the HTTP+JSON binding of the client (A2A 1.0 section 11):
 * one JSON-RPC call as its REST route (bind_map.c) through once__http_do,
 * and the answer back in JSON-RPC's shape: a 2xx body is the result, an
 * AIP-193 body the error (bind_map.c), a stream's bare StreamResponse (or
 * AIP-193 error) data lines re-framed as JSON-RPC envelopes under the same
 * event ids. Another body (a proxy's HTML page) is left as it came, for
 * the caller to classify by its status.
 */
#include <stdio.h>
#include <string.h>

#include "client/client_int.h"
#include "core/grow.h"
#include "core/jcs.h"

#define REST_MAX_ERROR (1u << 20)

/* A stream's state between once__http_do's chunks. */
typedef struct rstream {
    const once__http_req *q;     /* the caller's request (on_data, data_ctx) */
    const json_t *id;
    const once__http_resp *r;    /* the response in progress */
    once__sse sse;
    int decided, is_sse;
    int stopped;                 /* the caller's on_data said stop */
    int hard;
    char *body;                  /* a non-stream answer, kept to convert */
    size_t len, cap;
} rstream;

/* A body in HTTP+JSON's shape as JSON-RPC's envelope: a 2xx one is the
 * result, an AIP-193 one the error. NULL with *hard = 0 when it is neither
 * (kept as it came), or ONCE_ENOMEM in *hard. */
static char *envelope(const json_t *id, long status, const char *body, size_t len, int *hard)
{
    json_t *doc = NULL;
    *hard = 0;
    if (body == NULL || once__json_loadb(body, len, 0, &doc, NULL) != ONCE_OK) {
        json_decref(doc);
        return NULL;
    }
    json_t *err = status / 100 != 2 || json_is_object(json_object_get(doc, "error"))
                      ? once__rpc_error_of_aip193(doc)
                      : NULL;
    char *env = err != NULL                ? once__rpc_envelope(id, "error", err)
                : status / 100 == 2        ? once__rpc_envelope(id, "result", json_incref(doc))
                                           : NULL;
    if (env == NULL && (err != NULL || status / 100 == 2))
        *hard = ONCE_ENOMEM;
    json_decref(doc);
    return env;
}

static int on_event(void *ctx, int has_id, int64_t id, const char *data, size_t len)
{
    rstream *s = ctx;
    /* Not JSON: passed on as it came, for the caller to judge. */
    char *env = envelope(s->id, 200, data, len, &s->hard);
    if (s->hard)
        return ONCE_ENOMEM;
    char head[48] = "";
    if (has_id)
        snprintf(head, sizeof head, "id: %lld\n", (long long)id);
    char *frame = NULL;
    size_t flen = 0, fcap = 0;
    int rc = once__text_append(&frame, &flen, &fcap, 256, head, strlen(head));
    if (rc == ONCE_OK)
        rc = once__text_append(&frame, &flen, &fcap, 256, "data: ", 6);
    if (rc == ONCE_OK)
        rc = env != NULL ? once__text_append(&frame, &flen, &fcap, 256, env, strlen(env))
                         : once__text_append(&frame, &flen, &fcap, 256, data, len);
    if (rc == ONCE_OK)
        rc = once__text_append(&frame, &flen, &fcap, 256, "\n\n", 2);
    once_free(env);
    if (rc != ONCE_OK) {
        once_free(frame);
        s->hard = ONCE_ENOMEM;
        return ONCE_ENOMEM;
    }
    int stop = s->q->on_data(s->q->data_ctx, s->r, frame, flen);
    once_free(frame);
    if (stop) {
        s->stopped = 1;
        return 1;
    }
    return ONCE_OK;
}

static int on_data(void *ctx, const once__http_resp *r, const char *p, size_t len)
{
    rstream *s = ctx;
    s->r = r;
    if (!s->decided) {
        s->decided = 1;
        s->is_sse = once__http_is_event_stream(r);
    }
    if (s->is_sse)
        return once__sse_feed(&s->sse, p, len) != ONCE_OK;
    if (s->len + len > REST_MAX_ERROR)
        return 1;
    if (once__text_append(&s->body, &s->len, &s->cap, 4096, p, len) != ONCE_OK) {
        s->hard = ONCE_ENOMEM;
        return 1;
    }
    return 0;
}

int once__rest_do(once_client *c, const once__iface *f, const char *method,
                  const json_t *params, const json_t *id, const once__http_req *q,
                  once__http_resp *r)
{
    (void)c;
    memset(r, 0, sizeof *r);
    once__rest_call route;
    char why[200];
    int rc = once__rest_route(f->url, method, params, &route, why, sizeof why);
    if (rc == ONCE_ENOMEM)
        return rc;
    if (rc != ONCE_OK) {
        r->unusable = 1;
        snprintf(r->error, sizeof r->error, "HTTP+JSON: %s", why);
        return ONCE_EIO;
    }
    char *body =
        route.body != NULL ? json_dumps(route.body, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    if (route.body != NULL && body == NULL) {
        once__rest_call_clear(&route);
        return ONCE_ENOMEM;
    }
    once__http_req hq = *q;
    hq.method = route.verb;
    hq.url = route.url;
    hq.body = body;
    hq.len = body ? strlen(body) : 0;
    rstream s = {.q = q, .id = id};
    if (q->on_data != NULL) {
        once__sse_init(&s.sse, ONCE__HTTP_MAX_BODY, on_event, &s);
        hq.on_data = on_data;
        hq.data_ctx = &s;
    }
    rc = once__http_do(&hq, r);
    once_free(body);
    once__rest_call_clear(&route);
    if (q->on_data != NULL)
        once__sse_clear(&s.sse);
    if (s.hard)
        rc = s.hard;
    if (rc == ONCE_OK && q->on_data != NULL && !s.is_sse) {
        /* The stream did not open: its answer, converted, as one chunk. */
        char *env = envelope(id, r->status, s.body, s.len, &s.hard);
        if (s.hard)
            rc = s.hard;
        else if (env != NULL || s.body != NULL)
            (void)q->on_data(q->data_ctx, r, env ? env : s.body, env ? strlen(env) : s.len);
        once_free(env);
    } else if (rc == ONCE_OK && q->on_data == NULL) {
        int hard = 0;
        char *env = envelope(id, r->status, r->body, r->len, &hard);
        if (hard) {
            rc = hard;
        } else if (env != NULL) {
            once_free(r->body);
            r->body = env;
            r->len = strlen(env);
            if (r->status / 100 == 2)
                r->status = 200;
        }
    }
    if (s.stopped)
        r->stopped = 1;
    once_free(s.body);
    return rc;
}
