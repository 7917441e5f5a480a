/*
 * grpc_serve.c -- the gRPC binding's server side (A2A 1.0 section 10): a
 * call from the HTTP/2 transport, run as the other two bindings run theirs.
 *
 * A call's life, on the HTTP server's workers:
 *   - on_call (a transport loop thread) hands it to a worker;
 *   - the worker checks the path (/lf.a2a.v1.A2AService/<Method>; another
 *     service or method: UNIMPLEMENTED), the bearer token of the
 *     `authorization` metadata (UNAUTHENTICATED without a known one),
 *     turns the request message into its ProtoJSON form (a malformed one:
 *     INVALID_ARGUMENT) and runs it through once__a2a_grpc_handle with the
 *     service parameters of the metadata (`a2a-version`, "1.0" when absent:
 *     the package is 1.0's; `a2a-extensions`; `last-event-id`, a stream's
 *     resume point, as the SSE header is);
 *   - the answer is HTTP+JSON's: a body (the result's ProtoJSON, turned
 *     into the method's output message; or an AIP-193 error, turned into
 *     grpc-status, grpc-message and grpc-status-details-bin), a deferred
 *     wait (a blocking SendMessage whose task has not settled: armed, and
 *     finished on a worker when ready, holding no thread meanwhile), a
 *     held answer (a new task finished in its first turn whose one write
 *     is not made yet: the thread that commits the write sends it, so a
 *     blocking send costs no second wake-up; a write that failed runs the
 *     call again without holding, as server.c does), or a
 *     stream (fed by the SSE hub through a sink: each data frame a
 *     StreamResponse message, an error frame the call's status, the hub's
 *     shutdown event UNAVAILABLE);
 *   - the initial metadata carries what the HTTP headers carry:
 *     `idempotent-replayed: true` and the activated extension's URI.
 *
 * Lifetime: a gcall is the transport call's data, freed with the call. It
 * holds a reference to the call until it is done with it: after the
 * status was sent (a body), or after the hub's last put (a stream). The
 * transport's callbacks (on_gone, on_room) find it through the call and
 * reach the stream only while `feed` is set, under `mu`.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "a2a.pb-c.h"
#include "core/alloc_int.h"
#include "core/condwait.h"
#include "core/log.h"
#include "core/str.h"
#include "grpc/h2.h"
#include "grpc/pbjson.h"
#include "grpc/status.h"
#include "http/grpc_serve.h"
#include "once/once.h"

#define SERVICE_PREFIX "/lf.a2a.v1.A2AService/"

struct once__grpc_serve {
    once__grpc_serve_config cfg;
    once__h2 *h2;
    once__h2_handler handler;
    pthread_mutex_t mu;
    pthread_cond_t idle;
    long running;               /* calls a gcall still holds */
    int closing;                /* no new call goes to the pool (it is going away) */
};

typedef struct gcall {
    once__grpc_serve *srv;
    once__h2_call *call;        /* our reference, until done() */
    const ProtobufCMethodDescriptor *m;
    pthread_mutex_t mu;
    once__sse_feed *feed;       /* while the hub feeds the call (under mu) */
    once__a2a_deferred *deferred; /* a blocking send's wait, while armed */
    once__a2a_response held;    /* a new task's answer, while its write is out */
    once__logctx logctx;        /* the call's log context, meanwhile */
    int no_hold;                /* run again after its held write failed: hold none */
    int inline_only;            /* on a loop thread: come back rather than wait */
    int finished;               /* a stream's status is out (the pump's) */
} gcall;

/* --- a call's end ------------------------------------------------------------ */

static void gcall_free(void *arg)
{
    gcall *g = arg;
    pthread_mutex_destroy(&g->mu);
    once_free(g);
}

/* The gcall is done with the call: drop its reference (the transport frees
 * the gcall with the call). */
static void done(gcall *g)
{
    once__grpc_serve *s = g->srv;
    once__h2_call_unref(g->call);
    pthread_mutex_lock(&s->mu);
    if (--s->running == 0)
        pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->mu);
}

/* The initial metadata of an answer. */
static void head(gcall *g, const once__a2a_response *r)
{
    const char *kv[4];
    size_t n = 0;
    if (r->replayed) {
        kv[2 * n] = "idempotent-replayed";
        kv[2 * n + 1] = "true";
        n++;
    }
    if (r->extension) {
        kv[2 * n] = "a2a-extensions";
        kv[2 * n + 1] = ONCE_A2A_EXTENSION_URI;
        n++;
    }
    (void)once__h2_call_headers(g->call, kv, n);
}

/* HTTP's Retry-After in gRPC's terms: a google.rpc.RetryInfo detail
 * (retryDelay) beside the ErrorInfo, where gRPC clients' retry helpers look
 * for it. Best effort: without memory the error goes out without it. */
static void add_retry_info(json_t *doc, int seconds)
{
    json_t *err = json_object_get(doc, "error");
    json_t *details = json_object_get(err, "details");
    if (seconds <= 0 || !json_is_object(err))
        return;
    if (details == NULL && json_object_set_new(err, "details", details = json_array()) != 0)
        return;
    char delay[24];
    snprintf(delay, sizeof delay, "%ds", seconds);
    json_t *ri = json_object();
    if (ri != NULL &&
        (json_object_set_new(ri, "@type",
                             json_string("type.googleapis.com/google.rpc.RetryInfo")) != 0 ||
         json_object_set_new(ri, "retryDelay", json_string(delay)) != 0)) {
        json_decref(ri);
        return;
    }
    (void)json_array_append_new(details, ri);
}

/* The status of an AIP-193 error document (NULL: one that could not be
 * read: INTERNAL). */
static void finish_error(gcall *g, const json_t *doc)
{
    int code = ONCE_GRPC_INTERNAL;
    char *msg = NULL;
    uint8_t *det = NULL;
    size_t dn = 0;
    if (doc == NULL || once__grpc_status_from_aip193(doc, &code, &msg, &det, &dn) != ONCE_OK) {
        code = ONCE_GRPC_INTERNAL;
        once_free(msg);
        msg = NULL;
    }
    (void)once__h2_call_finish(g->call, code, msg != NULL ? msg : "internal error", det, dn);
    once_free(msg);
    once_free(det);
}

/* A refusal made here (before the codec): in the codec's shape, so its
 * status and ErrorInfo are what the other bindings give. */
static void refuse(gcall *g, int http_status, int code, const char *reason, const char *message)
{
    once__a2a_response r;
    json_t *doc = NULL;
    if (once__a2a_error_response_as(ONCE_A2A_HTTP_JSON, http_status, code, reason, message,
                                    &r) == ONCE_OK)
        doc = json_loadb(r.body, r.len, 0, NULL);
    finish_error(g, doc);
    json_decref(doc);
    once__a2a_response_clear(&r);
}

/* The output message's bytes sent, and the call finished OK. Takes pb. */
static void finish_pb(gcall *g, const once__a2a_response *r, uint8_t *pb, size_t n)
{
    head(g, r);
    if (once__h2_call_send(g->call, pb, n) >= 0)
        (void)once__h2_call_finish(g->call, ONCE_GRPC_OK, NULL, NULL, 0);
    once_free(pb);
}

/* An answer with a body: the method's output message, or the error's
 * status. The answer's text goes straight to protobuf when it can
 * (once__pbjson_text_to_pb); anything that fast path leaves alone (an
 * error, a member the proto has no field for) goes through a tree. */
static void finish_body(gcall *g, const once__a2a_response *r)
{
    int ok = r->http_status == 0 || (r->http_status >= 200 && r->http_status < 300);
    uint8_t *pb = NULL;
    size_t n = 0;
    if (ok && r->body != NULL && r->len > 0 &&
        once__pbjson_text_to_pb(g->m->output, r->body, r->len, &pb, &n) == ONCE_OK) {
        finish_pb(g, r, pb, n);
        return;
    }
    json_t *doc = r->body != NULL && r->len > 0 ? json_loadb(r->body, r->len, 0, NULL)
                                                : json_object();
    if (!ok || doc == NULL) {
        add_retry_info(doc, r->retry_after);
        finish_error(g, doc);
        json_decref(doc);
        return;
    }
    if (json_is_null(doc)) {   /* a result without content: an empty message */
        json_decref(doc);
        doc = json_object();
    }
    char err[200];
    int rc = once__pbjson_answer_to_pb(g->m->output, doc, &pb, &n, err, sizeof err);
    json_decref(doc);
    if (rc != ONCE_OK) {
        /* A result the proto cannot carry is ours to fix, not the client's. */
        char line[400];
        snprintf(line, sizeof line, "%s: the answer does not fit %s: %s", g->m->name,
                 g->m->output->name, err);
        once__log_note(ONCE_LOG_ERROR, "grpc_answer", line);
        (void)once__h2_call_finish(g->call, ONCE_GRPC_INTERNAL,
                                   "the answer could not be encoded", NULL, 0);
        return;
    }
    finish_pb(g, r, pb, n);
}

/* --- streams: the hub's sink -------------------------------------------------- */

/* One stream event's bytes sent (takes pb); 0 while the call goes on. */
static int send_event(gcall *g, uint8_t *pb, size_t pn)
{
    int64_t q = once__h2_call_send(g->call, pb, pn);
    once_free(pb);
    return q < 0;   /* gone: the hub hears it from on_gone */
}

/* One SSE frame's data line (HTTP+JSON's: a StreamResponse or an AIP-193
 * error object) or its shutdown event, sent on. 0 while the call goes on. */
static int frame(gcall *g, const char *p, size_t n)
{
    const char *data = NULL;
    size_t dlen = 0;
    int shutdown = 0;
    for (const char *end = p + n; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
        if (len >= 6 && memcmp(p, "data: ", 6) == 0) {
            data = p + 6;
            dlen = len - 6;
        } else if (len == 15 && memcmp(p, "event: shutdown", 15) == 0) {
            shutdown = 1;
        }
        p += len + 1;
    }
    if (shutdown) {
        (void)once__h2_call_finish(g->call, ONCE_GRPC_UNAVAILABLE,
                                   "onced is shutting down; subscribe again (SubscribeToTask) "
                                   "with last-event-id",
                                   NULL, 0);
        return 1;
    }
    if (data == NULL)
        return 0;   /* a comment */
    uint8_t *pb = NULL;
    size_t pn = 0;
    if (once__pbjson_text_to_pb(&lf__a2a__v1__stream_response__descriptor, data, dlen, &pb, &pn) ==
        ONCE_OK)
        return send_event(g, pb, pn);
    /* An error object (no StreamResponse has an "error" member), or an
     * event the fast path leaves to the tree. */
    json_t *doc = json_loadb(data, dlen, 0, NULL);
    if (doc == NULL || json_object_get(doc, "error") != NULL) {
        finish_error(g, doc);
        json_decref(doc);
        return 1;
    }
    char err[200];
    int rc = once__pbjson_answer_to_pb(&lf__a2a__v1__stream_response__descriptor, doc, &pb, &pn,
                                       err, sizeof err);
    json_decref(doc);
    if (rc != ONCE_OK) {
        char line[300];
        snprintf(line, sizeof line, "a stream event does not fit StreamResponse: %s", err);
        once__log_note(ONCE_LOG_ERROR, "grpc_answer", line);
        (void)once__h2_call_finish(g->call, ONCE_GRPC_INTERNAL,
                                   "a stream event could not be encoded", NULL, 0);
        return 1;
    }
    return send_event(g, pb, pn);
}

static void sink_put(void *arg, const char *t, size_t n, int last)
{
    gcall *g = arg;
    const char *end = t + n;
    while (t != NULL && t < end && !g->finished) {
        const char *sep = NULL;
        for (const char *p = t; p + 1 < end; p++) {
            if (p[0] == '\n' && p[1] == '\n') {
                sep = p;
                break;
            }
        }
        size_t len = sep != NULL ? (size_t)(sep - t) : (size_t)(end - t);
        g->finished = frame(g, t, len);
        t += len + 2;
    }
    if (!last)
        return;
    if (!g->finished)
        (void)once__h2_call_finish(g->call, ONCE_GRPC_OK, NULL, NULL, 0);
    g->finished = 1;
    pthread_mutex_lock(&g->mu);
    once__sse_feed *f = g->feed;
    g->feed = NULL;
    pthread_mutex_unlock(&g->mu);
    once__sse_feed_release(f);
    done(g);
}

static size_t sink_fill(void *arg)
{
    gcall *g = arg;
    return once__h2_call_pending(g->call);
}

static const once__sse_sink SINK = {sink_put, sink_fill};

/* --- answers ------------------------------------------------------------------- */

/* Submit fn(g) to the worker pool, unless the server is going away.
 * ONCE_OK, or why not (the caller answers instead). */
static int submit(gcall *g, void (*fn)(void *))
{
    once__grpc_serve *s = g->srv;
    pthread_mutex_lock(&s->mu);
    int rc = s->closing ? ONCE_ECLOSED : once__http_pool_submit(s->cfg.pool, fn, g);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static void finish_deferred(void *arg);

/* The engine says the deferred answer can be built: on a worker (this
 * thread must not block); with the queue full or closing, here. */
static void on_ready(void *arg)
{
    gcall *g = arg;
    if (submit(g, finish_deferred) != ONCE_OK)
        finish_deferred(g);
}

static void run_call(void *arg);

/* A held answer's write landed (once__engine_held_start), on whichever
 * thread committed it: send the answer; or, when nothing was stored, run
 * the call again without holding, on a worker, which decides from what is
 * stored (a replay of another registration that won, the outage's
 * answer, ...). */
static void on_landed(void *arg, int rc)
{
    gcall *g = arg;
    once__a2a_response r = g->held;
    memset(&g->held, 0, sizeof g->held);
    *once__log_ctx() = g->logctx;
    if (rc == ONCE_OK) {
        finish_body(g, &r);
        once__a2a_response_clear(&r);
        once__log_ctx_clear();
        done(g);
        return;
    }
    once__a2a_response_clear(&r);
    once__log_ctx_clear();
    g->no_hold = 1;
    if ((rc = submit(g, run_call)) != ONCE_OK) {
        (void)once__h2_call_finish(g->call, ONCE_GRPC_UNAVAILABLE,
                                   rc == ONCE_ECLOSED ? "onced is shutting down; retry elsewhere"
                                                      : "the server is busy; retry",
                                   NULL, 0);
        done(g);
    }
}

/* Send r (taking what it holds: a deferred wait, a held write, a stream)
 * and, unless the call goes on (waiting, streaming), be done with the
 * call. */
static void answer(gcall *g, once__a2a_response *r)
{
    if (r->held != NULL) {
        once__held *held = r->held;
        r->held = NULL;
        g->held = *r;   /* the answer is sent from on_landed */
        memset(r, 0, sizeof *r);
        g->logctx = *once__log_ctx();
        once__log_ctx_clear();
        once__engine_held_start(held, on_landed, g);   /* g may be done already */
        return;
    }
    if (r->deferred != NULL) {
        g->deferred = r->deferred;
        r->deferred = NULL;
        if (once__a2a_deferred_arm(g->deferred, on_ready, g) == ONCE_OK)
            return;   /* on_ready finishes it */
        finish_deferred(g);   /* settled already, or past the wait limits */
        return;
    }
    if (r->stream != NULL) {
        head(g, r);
        g->finished = 0;
        pthread_mutex_lock(&g->mu);
        int rc = once__sse_attach(g->srv->cfg.hub, r, &SINK, g, &g->feed);
        pthread_mutex_unlock(&g->mu);
        if (rc == ONCE_OK)
            return;   /* the hub's last put is done() */
        (void)once__h2_call_finish(g->call, ONCE_GRPC_UNAVAILABLE,
                                   rc == ONCE_ECLOSED ? "onced is shutting down; retry elsewhere"
                                                      : "cannot open a stream now; retry",
                                   NULL, 0);
        done(g);
        return;
    }
    finish_body(g, r);
    done(g);
}

static void finish_deferred(void *arg)
{
    gcall *g = arg;
    once__a2a_deferred *d = g->deferred;
    g->deferred = NULL;
    once__a2a_response r;
    if (once__a2a_deferred_finish(d, &r) != ONCE_OK) {
        (void)once__h2_call_finish(g->call, ONCE_GRPC_INTERNAL, "out of memory", NULL, 0);
        done(g);
        return;
    }
    answer(g, &r);
    once__a2a_response_clear(&r);
}

/* The call. ONCE__EAGAIN (only with g->inline_only) when it would wait
 * for a store write: nothing was done, run it again on a worker; else
 * ONCE_OK, the call answered or on its way (waiting, held, streaming). */
static int call_run(gcall *g)
{
    once__grpc_serve *s = g->srv;
    once__log_ctx_clear();
    const char *path = once__h2_call_path(g->call);
    const char *name = strncmp(path, SERVICE_PREFIX, sizeof SERVICE_PREFIX - 1) == 0
                           ? path + sizeof SERVICE_PREFIX - 1
                           : NULL;
    g->m = name != NULL ? protobuf_c_service_descriptor_get_method_by_name(
                              &lf__a2a__v1__a2_aservice__descriptor, name)
                        : NULL;
    if (g->m == NULL) {
        char msg[200];
        snprintf(msg, sizeof msg, "No such method: %.120s (the service is lf.a2a.v1.A2AService)",
                 path);
        refuse(g, 501, ONCE_RPC_METHOD_NOT_FOUND, "METHOD_NOT_FOUND", msg);
        done(g);
        return ONCE_OK;
    }
    char principal[ONCE_PRINCIPAL_MAX + 1];
    if (s->cfg.tokens != NULL) {
        const char *authz = once__h2_call_metadata(g->call, "authorization");
        if (once__tokens_principal(s->cfg.tokens, authz, principal) == NULL) {
            refuse(g, 401, ONCE_RPC_INVALID_REQUEST, "UNAUTHENTICATED",
                   "Unauthenticated: send the metadata authorization: Bearer <token>");
            done(g);
            return ONCE_OK;
        }
    } else {
        snprintf(principal, sizeof principal, "anonymous");
    }
    size_t len = 0;
    const uint8_t *msg = once__h2_call_message(g->call, &len);
    json_t *params = NULL;
    char err[200];
    int rc = once__pbjson_from_pb(g->m->input, msg, len, &params, err, sizeof err);
    if (rc != ONCE_OK) {
        char why[260];
        snprintf(why, sizeof why, "Invalid parameters: the request is not a %s: %s",
                 g->m->input->name, err);
        refuse(g, 400, ONCE_RPC_INVALID_PARAMS, "INVALID_PARAMS", why);
        done(g);
        return ONCE_OK;
    }
    const char *version = once__h2_call_metadata(g->call, "a2a-version");
    once__a2a_request q = {.principal = principal,
                           .version = version != NULL ? version : ONCE_A2A_PROTOCOL_VERSION,
                           .extensions = once__h2_call_metadata(g->call, "a2a-extensions"),
                           .last_event_id = once__h2_call_metadata(g->call, "last-event-id"),
                           .slots = once__sse_slots(s->cfg.hub),
                           .defer = 1,
                           .hold = !g->no_hold && !s->cfg.inline_calls,
                           .inline_only = g->inline_only};
    once__a2a_response r;
    rc = once__a2a_grpc_handle(s->cfg.codec, &q, g->m->name, params, &r);
    json_decref(params);
    if (rc == ONCE__EAGAIN)
        return rc;
    if (rc != ONCE_OK) {
        (void)once__h2_call_finish(g->call, ONCE_GRPC_INTERNAL, "out of memory", NULL, 0);
        done(g);
        return ONCE_OK;
    }
    answer(g, &r);
    once__a2a_response_clear(&r);
    return ONCE_OK;
}

static void run_call(void *arg)
{
    (void)call_run(arg);
}

/* --- the transport's callbacks (a loop thread; never block) -------------------- */

static void on_call(void *ctx, once__h2_call *call)
{
    once__grpc_serve *s = ctx;
    gcall *g = once_calloc(1, sizeof *g);
    if (g == NULL || pthread_mutex_init(&g->mu, NULL) != 0) {
        once_free(g);
        (void)once__h2_call_finish(call, ONCE_GRPC_RESOURCE_EXHAUSTED, "out of memory", NULL, 0);
        return;
    }
    g->srv = s;
    g->call = call;
    once__h2_call_ref(call);
    once__h2_call_set_data(call, g, gcall_free);
    pthread_mutex_lock(&s->mu);
    s->running++;
    int closing = s->closing;
    pthread_mutex_unlock(&s->mu);
    /* As on libmicrohttpd's threads (server.c), on a store whose writes
     * commit in groups (SQLite): a call that need not wait for a store
     * write (a new task held for its group's commit, a replay, a read)
     * runs here, without the hand-over to a worker and back; one that
     * would wait comes back ONCE__EAGAIN with nothing done, and goes to a
     * worker. On the memory store every call goes to a worker: there the
     * hand-over costs less than a loop thread that runs calls while its
     * other connections wait (bench/README.md, "The gRPC binding"). */
    if (!closing && s->cfg.inline_first) {
        g->inline_only = 1;
        if (call_run(g) != ONCE__EAGAIN)
            return;
        g->inline_only = 0;
    }
    int rc = submit(g, run_call);   /* the pool outlives every running call */
    if (rc != ONCE_OK) {
        (void)once__h2_call_finish(call, ONCE_GRPC_UNAVAILABLE,
                                   rc == ONCE_EBUSY ? "the server is busy; retry"
                                                    : "onced is shutting down; retry elsewhere",
                                   NULL, 0);
        done(g);
    }
}

/* Tell the call's stream, if the hub feeds one: fn(feed) under g->mu. */
static void tell_feed(once__h2_call *call, void (*fn)(once__sse_feed *f))
{
    gcall *g = once__h2_call_data(call);
    if (g == NULL)
        return;
    pthread_mutex_lock(&g->mu);
    if (g->feed != NULL)
        fn(g->feed);
    pthread_mutex_unlock(&g->mu);
}

static void on_gone(void *ctx, once__h2_call *call)
{
    (void)ctx;
    tell_feed(call, once__sse_feed_gone);
}

static void on_room(void *ctx, once__h2_call *call)
{
    (void)ctx;
    tell_feed(call, once__sse_feed_room);
}

/* --- the listener ---------------------------------------------------------------- */

static void pick(void *arg, struct gnutls_pcert_st **pcert, unsigned *n,
                 struct gnutls_privkey_st **key)
{
    once__tls_live_pick(arg, pcert, n, key);
}

int once__grpc_serve_start(const once__grpc_serve_config *cfg, once__grpc_serve **out, char *err,
                           size_t errlen)
{
    *out = NULL;
    once__grpc_serve *s = once_calloc(1, sizeof *s);
    if (s == NULL)
        return ONCE_ENOMEM;
    s->cfg = *cfg;
    if (once__lock_init(&s->mu, &s->idle) != ONCE_OK) {
        once_free(s);
        return ONCE_ENOMEM;
    }
    s->handler = (once__h2_handler){s, on_call, on_gone, on_room};
    once__h2_config h = {.host = cfg->host,
                         .port = cfg->port,
                         .pick = cfg->tls != NULL ? pick : NULL,
                         .pick_arg = cfg->tls,
                         .tls_priority = cfg->tls_priority,
                         .max_connections = cfg->limits.max_connections,
                         .max_per_ip = cfg->limits.max_per_ip,
                         .request_timeout_ms = cfg->limits.request_timeout_ms,
                         .idle_timeout_ms = (int64_t)cfg->idle_timeout_s * 1000,
                         .max_message = cfg->max_message,
                         .max_streams = cfg->streams_per_conn,
                         .threads = cfg->threads,
                         /* the hub waits past half its cap: "wait" from there */
                         .stream_buffer = cfg->stream_buffer / 2};
    int rc = once__h2_start(&h, &s->handler, &s->h2, err, errlen);
    if (rc != ONCE_OK) {
        pthread_cond_destroy(&s->idle);
        pthread_mutex_destroy(&s->mu);
        once_free(s);
        return rc;
    }
    *out = s;
    return ONCE_OK;
}

int once__grpc_serve_port(const once__grpc_serve *s)
{
    return once__h2_port(s->h2);
}

void once__grpc_serve_quiesce(once__grpc_serve *s)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&s->mu);
    s->closing = 1;
    pthread_mutex_unlock(&s->mu);
}

void once__grpc_serve_stop(once__grpc_serve *s)
{
    if (s == NULL)
        return;
    /* Calls still running answer (the hub ended the streams already; a
     * deferred wait is released by the codec's release of waits), then
     * the connections close. */
    pthread_mutex_lock(&s->mu);
    while (s->running > 0)
        pthread_cond_wait(&s->idle, &s->mu);
    pthread_mutex_unlock(&s->mu);
    once__h2_stop(s->h2);
    pthread_cond_destroy(&s->idle);
    pthread_mutex_destroy(&s->mu);
    once_free(s);
}
