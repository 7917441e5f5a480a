/*
 * bind_grpc.c -- the gRPC binding of the client (A2A 1.0 section 10): one
 * JSON-RPC call as a call of lf.a2a.v1.A2AService over grpc/h2_client.h.
 *
 * The params object is the request message's ProtoJSON form and the
 * result the response's (src/grpc/pbjson.h), so the mapping is generic:
 * the method's input and output types come from the service descriptor.
 * Service parameters travel as metadata (a2a-version, a2a-extensions,
 * authorization, last-event-id); idempotent-replayed comes back in the
 * initial metadata. A status other than OK becomes the AIP-193 body it
 * stands for (grpc/status.h), then the JSON-RPC error onced would have
 * sent (bind_map.c), with the HTTP status HTTP+JSON would have had, so
 * UNAVAILABLE is a 503 (retried, failed over) like a gateway's. A stream's
 * messages become SSE frames "id: <generation>\ndata: <envelope>\n\n", the
 * generation read from the payload's metadata (docs/extension.md,
 * IDEM-GEN-2) since gRPC has no event id.
 *
 * Connections: one per target (host:port, TLS or not) kept open in the
 * handle across its calls, at most POOL_MAX; the h2 client runs one call
 * at a time, so a connection busy with a call (a caller making a call from
 * inside a stream's callback) is not shared: that call gets one of its own.
 * A kept connection the server closed meanwhile is seen by the next call,
 * which then reconnects once before it counts as a failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "a2a.pb-c.h"
#include "client/client_int.h"
#include "core/generation.h"
#include "core/str.h"
#include "grpc/h2.h"
#include "grpc/h2_client.h"
#include "grpc/pbjson.h"
#include "grpc/status.h"

#define POOL_MAX 4
#define SERVICE "lf.a2a.v1.A2AService"

/* The handle's connections; the handle's thread alone touches them. */
struct once__grpc_pool {
    struct {
        char target[sizeof ((once__iface *)0)->url];
        int tls;
        int busy;                /* a call runs on it */
        once__h2_client *h;
    } e[POOL_MAX];
    size_t n;
};

void once__grpc_pool_free(struct once__grpc_pool *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->n; i++)
        once__h2c_close(p->e[i].h);
    once_free(p);
}

/* One call's state, on once__grpc_do's stack. */
typedef struct gcall {
    const once__http_req *q;
    once__http_resp *r;
    const ProtobufCMessageDescriptor *out;
    const json_t *id;
    int streaming;
    int opened;                  /* a stream message arrived */
    int stopped;                 /* q->on_data said stop */
    int hard;                    /* ENOMEM inside a callback */
    uint8_t *msg;                /* unary: the answer's bytes */
    size_t len;
    once__h2_client *h;          /* the connection the call runs on */
    char why[200];               /* a message that could not be decoded */
} gcall;

/* The h2 client's stop check: the caller's interrupt and stop, the idle
 * timer. onced's gRPC streams carry no keepalive messages (SSE's pings are
 * comments), so idle is measured on the connection, whose keepalive PINGs
 * (every third of idle_ms) are answered while the peer lives. */
static int should_stop(void *ctx)
{
    gcall *g = ctx;
    const once__http_req *q = g->q;
    if ((q->interrupted != NULL && *q->interrupted) || (q->stop != NULL && q->stop(q->stop_ctx))) {
        g->r->interrupted = 1;
        return 1;
    }
    if (q->idle_ms > 0 && once_monotonic_ms() - once__h2c_last_rx_ms(g->h) > q->idle_ms) {
        g->r->idle = 1;
        return 1;
    }
    return 0;
}

/* A frame's text to on_data as one chunk. Nonzero: stop. */
static int feed(gcall *g, int64_t gen, const char *envelope)
{
    char head[48] = "";
    if (gen > 0)
        snprintf(head, sizeof head, "id: %lld\n", (long long)gen);
    size_t hl = strlen(head), el = strlen(envelope);
    char *frame = once_malloc(hl + 6 + el + 3);
    if (frame == NULL) {
        g->hard = ONCE_ENOMEM;
        return 1;
    }
    memcpy(frame, head, hl);
    memcpy(frame + hl, "data: ", 6);
    memcpy(frame + hl + 6, envelope, el);
    memcpy(frame + hl + 6 + el, "\n\n", 3);
    int stop = g->q->on_data(g->q->data_ctx, g->r, frame, hl + 6 + el + 2);
    once_free(frame);
    if (stop)
        g->stopped = g->r->stopped = 1;
    return stop;
}

static int on_message(void *arg, const uint8_t *msg, size_t len)
{
    gcall *g = arg;
    if (!g->streaming) {
        once_free(g->msg);
        g->len = 0;
        if ((g->msg = once_malloc(len ? len : 1)) == NULL) {
            g->hard = ONCE_ENOMEM;
            return 1;
        }
        memcpy(g->msg, msg, len);
        g->len = len;
        return 0;
    }
    json_t *res = NULL;
    int rc = once__pbjson_from_pb(g->out, msg, len, &res, g->why, sizeof g->why);
    if (rc != ONCE_OK) {
        if (rc == ONCE_ENOMEM)
            g->hard = rc;
        return 1;
    }
    if (!g->opened) {
        g->opened = 1;
        g->r->seen_status = 200;
        once__strlcpy(g->r->content_type, "text/event-stream", sizeof g->r->content_type);
    }
    int64_t gen = once__generation_of(once__stream_body(res));
    char *env = once__rpc_envelope(g->id, "result", res);
    if (env == NULL) {
        g->hard = ONCE_ENOMEM;
        return 1;
    }
    int stop = feed(g, gen, env);
    once_free(env);
    return stop;
}

/* A connection to f's target: a kept one (*kept = 1) or a new one, kept
 * when there is room. ONCE_OK; else r says why (a transport failure). */
static int conn_get(once_client *c, const once__iface *f, const once__http_req *q,
                    once__h2_client **h, int *slot, int *kept, once__http_resp *r)
{
    struct once__grpc_pool *p = c->grpc;
    *slot = -1;
    *kept = 0;
    for (size_t i = 0; p != NULL && i < p->n; i++) {
        if (!p->e[i].busy && p->e[i].tls == f->tls && strcmp(p->e[i].target, f->url) == 0) {
            *h = p->e[i].h;
            *slot = (int)i;
            p->e[i].busy = 1;
            *kept = 1;
            return ONCE_OK;
        }
    }
    char host[sizeof f->url];
    once__strlcpy(host, f->url[0] == '[' ? f->url + 1 : f->url, sizeof host);
    char *colon = strrchr(host, ':');
    if (colon == NULL) {   /* once__iface_pick let none through */
        r->unusable = 1;
        snprintf(r->error, sizeof r->error, "gRPC %.100s: not host:port", f->url);
        return ONCE_EIO;
    }
    *colon = '\0';
    if (colon > host && colon[-1] == ']')
        colon[-1] = '\0';
    once__h2c_config cfg = {.host = host,
                            .port = (int)strtol(colon + 1, NULL, 10),
                            .tls = f->tls,
                            .insecure = q->tls != NULL && q->tls->insecure,
                            .ca_file = q->tls != NULL ? q->tls->cacert : NULL,
                            .connect_timeout_ms = q->connect_timeout_ms};
    char err[200] = "";
    int rc = once__h2c_connect(&cfg, h, err, sizeof err);
    if (rc == ONCE_ENOMEM)
        return rc;
    if (rc != ONCE_OK) {
        r->unsent = 1;
        r->timed_out = rc == ONCE_ETIMEDOUT;
        r->untrusted = rc == ONCE_EINVAL;
        snprintf(r->error, sizeof r->error, "gRPC %.80s: %.120s%s", f->url,
                 err[0] ? err : once_strerror(rc),
                 r->untrusted ? " (pass --cacert FILE with the CA that signed it)" : "");
        return ONCE_EIO;
    }
    if (c->grpc == NULL && (c->grpc = once_calloc(1, sizeof *c->grpc)) == NULL) {
        once__h2c_close(*h);
        return ONCE_ENOMEM;
    }
    p = c->grpc;
    if (p->n < POOL_MAX) {
        *slot = (int)p->n++;
        once__strlcpy(p->e[*slot].target, f->url, sizeof p->e[*slot].target);
        p->e[*slot].tls = f->tls;
        p->e[*slot].busy = 1;
        p->e[*slot].h = *h;
    }
    return ONCE_OK;
}

/* The call is over with h: kept for the next (dead = 0) or closed. */
static void conn_put(once_client *c, once__h2_client *h, int slot, int dead)
{
    struct once__grpc_pool *p = c->grpc;
    if (slot < 0) {
        once__h2c_close(h);
        return;
    }
    p->e[slot].busy = 0;
    if (dead) {
        once__h2c_close(h);
        p->e[slot] = p->e[--p->n];
    }
}

/* The first ErrorInfo reason of an AIP-193 body, or NULL. */
static const char *first_reason(const json_t *aip)
{
    size_t i;
    const json_t *d;
    json_array_foreach(json_object_get(json_object_get(aip, "error"), "details"), i, d) {
        const char *reason = json_string_value(json_object_get(d, "reason"));
        if (reason != NULL)
            return reason;
    }
    return NULL;
}

/* A status other than OK as JSON-RPC's error envelope; *http the status
 * HTTP+JSON would have answered with. NULL when memory ran out. */
static char *error_envelope(const gcall *g, const once__h2c_result *res, int *http)
{
    json_t *aip = NULL;
    if (once__grpc_status_to_aip193(res->status, res->message, res->details, res->details_len,
                                    &aip) != ONCE_OK)
        return NULL;
    *http = once__grpc_http_status(res->status, first_reason(aip));
    once__retry_after_of_aip193(aip, g->r->retry_after, sizeof g->r->retry_after);
    json_t *err = once__rpc_error_of_aip193(aip);
    json_decref(aip);
    return err != NULL ? once__rpc_envelope(g->id, "error", err) : NULL;
}

/* An answer this client cannot read: a gateway's 502 (retried elsewhere). */
static int unreadable(const once__iface *f, gcall *g)
{
    g->r->status = g->r->seen_status = 502;
    snprintf(g->r->error, sizeof g->r->error, "gRPC %.80s: the answer is not a %.40s: %.100s",
             f->url, g->out->name, g->why[0] ? g->why : "no message");
    return ONCE_OK;
}

/* The answer is in res: r filled as once__http_do fills it. */
static int answer(const once__iface *f, gcall *g, const once__h2c_result *res)
{
    once__http_resp *r = g->r;
    const once__http_req *q = g->q;
    r->replayed =
        res->headers != NULL && strstr(res->headers, "idempotent-replayed: true\n") != NULL;
    if (g->stopped) {
        r->status = 200;
        return ONCE_OK;
    }
    int deadline = res->status == ONCE_GRPC_DEADLINE_EXCEEDED && res->details == NULL;
    if (r->interrupted || r->idle || deadline) {
        r->timed_out = !r->interrupted;
        snprintf(r->error, sizeof r->error, "%s",
                 r->interrupted ? "interrupted"
                 : r->idle      ? "stream idle: the connection went silent"
                                : "gRPC deadline exceeded");
        return ONCE_EIO;
    }
    if (res->status == ONCE_GRPC_OK && g->streaming) {
        r->status = 200;
        return ONCE_OK;
    }
    if (g->why[0] != '\0' || (res->status == ONCE_GRPC_OK && g->msg == NULL))
        return unreadable(f, g);
    char *env = NULL;
    int http = 200;
    if (res->status == ONCE_GRPC_OK) {
        json_t *result = NULL;
        int rc = once__pbjson_from_pb(g->out, g->msg, g->len, &result, g->why, sizeof g->why);
        if (rc == ONCE_ENOMEM)
            return rc;
        if (rc != ONCE_OK)
            return unreadable(f, g);
        env = once__rpc_envelope(g->id, "result", result);
    } else if (g->opened && res->status != ONCE_GRPC_UNAVAILABLE) {
        /* An error that ends an open stream: JSON-RPC's last data line. */
        if ((env = error_envelope(g, res, &http)) == NULL)
            return ONCE_ENOMEM;
        int stop = feed(g, 0, env);
        once_free(env);
        if (g->hard)
            return g->hard;
        r->status = 200;
        r->stopped = stop;
        return ONCE_OK;
    } else if (g->opened) {
        snprintf(r->error, sizeof r->error, "gRPC %.100s: %.140s", f->url,
                 res->message ? res->message : "unavailable");
        return ONCE_EIO;   /* cut (onced shutting down, the link lost): resume */
    } else {
        env = error_envelope(g, res, &http);
    }
    if (env == NULL)
        return ONCE_ENOMEM;
    r->status = r->seen_status = http;
    once__strlcpy(r->content_type, "application/json", sizeof r->content_type);
    if (q->on_data != NULL) {
        /* A stream that did not open: its answer, as JSON-RPC's would come. */
        (void)q->on_data(q->data_ctx, r, env, strlen(env));
        once_free(env);
        return g->hard ? g->hard : ONCE_OK;
    }
    r->body = env;
    r->len = strlen(env);
    return ONCE_OK;
}

/* The call's metadata into md (name, value pairs); auth is its buffer. */
static size_t metadata(const once_client *c, const once__http_req *q, const char **md,
                       char *auth, size_t authlen)
{
    size_t n = 0;
    md[2 * n] = "a2a-version";
    md[2 * n++ + 1] = "1.0";
    if (q->extension) {
        md[2 * n] = "a2a-extensions";
        md[2 * n++ + 1] = ONCE_IDEMPOTENCY_EXTENSION;
    }
    if (c->token != NULL && (size_t)snprintf(auth, authlen, "Bearer %s", c->token) < authlen) {
        md[2 * n] = "authorization";
        md[2 * n++ + 1] = auth;
    }
    if (q->last_event_id != NULL) {
        md[2 * n] = "last-event-id";
        md[2 * n++ + 1] = q->last_event_id;
    }
    return n;
}

int once__grpc_do(once_client *c, const once__iface *f, const char *method,
                  const json_t *params, const json_t *id, const once__http_req *q,
                  once__http_resp *r)
{
    memset(r, 0, sizeof *r);
    const ProtobufCMethodDescriptor *m =
        protobuf_c_service_descriptor_get_method_by_name(&lf__a2a__v1__a2_aservice__descriptor,
                                                         method);
    uint8_t *pb = NULL;
    size_t pblen = 0;
    char why[200] = "";
    int rc = m != NULL ? once__pbjson_to_pb(m->input, params, &pb, &pblen, why, sizeof why)
                       : ONCE_EINVAL;
    if (rc == ONCE_ENOMEM)
        return rc;
    if (rc != ONCE_OK) {
        r->unusable = 1;
        snprintf(r->error, sizeof r->error, "gRPC: %s %s", method,
                 m == NULL ? "is not a method of " SERVICE : why);
        return ONCE_EIO;
    }
    char path[160], auth[1024];
    snprintf(path, sizeof path, "/" SERVICE "/%s", m->name);
    const char *md[8];
    size_t n = metadata(c, q, md, auth, sizeof auth);
    gcall g = {.q = q, .r = r, .out = m->output, .id = id, .streaming = q->on_data != NULL};
    once__h2c_result res;
    memset(&res, 0, sizeof res);
    for (int tries = 0;; tries++) {
        once__h2_client *h = NULL;
        int slot = -1;
        int reused = 0;
        if ((rc = conn_get(c, f, q, &h, &slot, &reused, r)) != ONCE_OK)
            break;
        g.h = h;
        once__h2c_set_stop(h, should_stop, &g);
        once__h2c_set_keepalive(h, q->idle_ms / 3);
        rc = once__h2c_call(h, path, md, n, pb, pblen, q->timeout_ms, on_message, &g, NULL, &res);
        once__h2c_set_stop(h, NULL, NULL);
        once__h2c_set_keepalive(h, 0);
        conn_put(c, h, slot, rc != ONCE_OK);
        if (rc == ONCE_ECLOSED && reused && tries == 0 && !g.opened && g.msg == NULL) {
            once__h2c_result_clear(&res);
            continue;   /* a kept connection the server closed meanwhile */
        }
        break;
    }
    once_free(pb);
    if (rc == ONCE_OK || rc == ONCE_ECLOSED) {
        if (g.hard)
            rc = g.hard;
        else if (rc == ONCE_ECLOSED && !g.stopped && !r->interrupted && !r->idle) {
            snprintf(r->error, sizeof r->error, "gRPC %.100s: %.140s", f->url,
                     res.message ? res.message : "connection lost");
            rc = ONCE_EIO;
        } else {
            rc = answer(f, &g, &res);
        }
    } else if (rc == ONCE_ERANGE) {
        r->unusable = 1;
        snprintf(r->error, sizeof r->error, "gRPC: the %s request is too large", method);
        rc = ONCE_EIO;
    }
    once__h2c_result_clear(&res);
    once_free(g.msg);
    if (rc != ONCE_OK && rc != ONCE_ENOMEM)
        r->status = 0;
    return rc;
}
