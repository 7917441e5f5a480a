/*
 * server.c -- onced's HTTP front: libmicrohttpd with a pool of epoll
 * threads and keep-alive, the agent card, the JSON-RPC endpoint, the
 * HTTP+JSON routes (rest_route.c says which paths; they take the same way
 * through this file, answered in their binding's shape), limits and bearer
 * authentication. The codec (src/a2a) produces every JSON body.
 *
 * Life of a JSON-RPC request (one req_ctx per request):
 *   1. first callback: route; unknown paths and the card are answered at
 *      once; a POST to the endpoint gets a req_ctx;
 *      a head that a proxy could frame differently is refused (400, close);
 *   2. body callbacks: append up to max_body bytes, within the body budget
 *      (guard.c); past either, keep draining (so the client can read our
 *      413 / 503) but store nothing more;
 *   3. last callback: refuse (413 / 503 / 415 / 401), or run the call here
 *      (inline_calls: no call waits for I/O; inline_first: a call that
 *      need not wait for a store write runs here, any other comes back
 *      ONCE__EAGAIN with nothing done), or suspend the connection and queue
 *      the call on the worker pool;
 *   4. the worker runs once__a2a_handle, marks the ctx done and resumes the
 *      connection; it never touches the ctx after resuming it. A held
 *      answer (a new task whose one write is not made yet, engine/held.c)
 *      is resumed by the thread that commits the write, or run again on a
 *      worker, holding nothing, when the write failed;
 *   5. libmicrohttpd calls back again: queue the response (an SSE stream
 *      for a streaming call: sse.c takes over); the completion callback
 *      frees the ctx.
 * Ownership: the ctx belongs to the MHD thread except between suspend and
 * resume, when it belongs to the worker; `done` is the hand-over flag.
 * The guard (guard.c) sees a connection as waiting for its request until
 * the last callback (or an answer from the first), busy until the request
 * completes: only the receiving of a request has a deadline.
 */
#include <microhttpd.h>

#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/jcs.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/str.h"
#include "core/v03.h"
#include "http/admit.h"
#include "http/card_cache.h"
#include "http/grpc_serve.h"
#include "http/guard.h"
#include "http/http.h"
#include "http/inspect.h"
#include "http/ops.h"
#include "http/pool.h"
#include "http/reqlog.h"
#include "http/rest_route.h"
#include "http/sse.h"
#include "http/tls.h"

#define CARD_PATH "/.well-known/agent-card.json"
/* Where clients before A2A 1.0 also read the card: its 0.3 form. */
#define CARD03_PATH "/.well-known/agent.json"
#define DEFAULT_MAX_BODY ((size_t)1 << 20)
/* A declared body larger than this many times max_body is not drained:
 * answer 413 at once and let the connection close. */
#define DRAIN_FACTOR 8
#define DEFAULT_MAX_STREAMS 10000
#define DEFAULT_SSE_PING_MS 15000
#define DEFAULT_SSE_BUFFER ((size_t)64 * 1024)
/* Each connection's libmicrohttpd memory pool (--conn-memory): the request
 * line, headers and the reply's headers (bodies are kept outside it, in our
 * own buffers). libmicrohttpd clears the whole pool after every request, so
 * its size is a cost per request, and it is kept for as long as the
 * connection lives, so it is most of what an idle SSE stream costs. 12 KiB
 * holds about 11 KiB of request headers (nginx's and Apache's limit is 8 KiB
 * a line; Node's 16 KiB in all); larger heads get 431. */
#define CONN_MEMORY ((size_t)12 * 1024)
#define CONN_MEMORY_MIN ((size_t)4 * 1024)
#define CONN_MEMORY_MAX ((size_t)1024 * 1024)

/* Set up by once__http_start; afterwards only `stopping` (set once by
 * once__http_stop), `inflight` (every request's ctx) and `calls` (JSON-RPC
 * calls not yet answered) change, all atomic, and the card served:
 * card_text, card_len and card change together under card_mu
 * (once__http_card_set: a gateway's refreshed upstream card, or --card read
 * again at SIGHUP); the TLS pair changes inside tls (tls.h). */
struct once_http {
    once_http_config cfg;
    char *rpc_path;
    struct MHD_Daemon *d;
    once_pool *pool;
    once__sse *sse;
    once__guard *guard;
    once__ops *ops;            /* /healthz, /readyz, /metrics; draining */
    once__inspect *inspect;    /* /inspect/ (--inspect), or NULL */
    pthread_mutex_t card_mu;
    char *card_text;           /* the card's bytes, owned */
    size_t card_len;
    once__card_cache card;     /* its validators */
    once__tls_live *tls;       /* HTTPS: the pair served (SIGHUP replaces it) */
    once__grpc_serve *grpc;    /* --grpc-listen, or NULL */
    once__admit admit;         /* which requests are taken at all */
    int port;
    int stopping;              /* atomic: set by once__http_stop */
    long inflight;             /* atomic: live req_ctx count */
    long calls;                /* atomic: dispatched calls not yet answered */
};

/* The method of the request the MHD thread is answering, for the HTTP
 * request counter (queue_json and queue_card run only inside the access
 * handler, on that thread). */
static __thread const char *tl_method;
/* The same request's Origin when --cors-origin allows it (its answers carry
 * the CORS headers), and whether any origin is allowed (then every answer
 * varies by Origin). */
static __thread const char *tl_cors;
static __thread int tl_vary;

static void cors_headers(struct MHD_Response *res)
{
    if (tl_cors != NULL)
        once__admit_cors_headers(res, tl_cors);
    if (tl_vary)
        MHD_add_response_header(res, "Vary", "Origin");
}

/* One JSON-RPC request. The MHD thread serving the connection owns it,
 * except between suspend and resume when the worker owns it (see the file
 * header); `done` hands it back. */
typedef struct req_ctx {
    once_http *h;
    struct MHD_Connection *conn;
    once__body body;
    int dispatched;
    int inspect_login;         /* POST /inspect/login: the body is a form */
    int inspect_stream;        /* GET /inspect/api/stream/ID: principal set, the
                                  body a SubscribeToTask made here */
    const once__refusal *refusal; /* refused by its head (admit.h): the body
                                     is drained, not kept, then refused */
    int counted;               /* in h->calls until answered or freed */
    int done;                  /* atomic: the worker finished (hand-over) */
    char principal[ONCE_PRINCIPAL_MAX + 1];
    char *version;             /* A2A-Version (header or query), NULL = absent */
    char *extensions;          /* A2A-Extensions, NULL = absent */
    char *last_event_id;       /* Last-Event-ID (SSE resume), NULL = absent */
    once__a2a_binding binding;  /* JSON-RPC, or HTTP+JSON with `rest` filled */
    once__rest rest;
    char traceparent[ONCE_TRACEPARENT_LEN + 1]; /* a valid W3C traceparent, or "" */
    int64_t t0;                /* monotonic ms when the request was complete */
    int no_hold;               /* run again after its held write failed: hold none */
    once__logctx logctx;       /* the call's log context, while its held write is out */
    once__reqinfo info;        /* its id, path and client (reqlog.h) */
    once__a2a_response resp;    /* written by the worker */
} req_ctx;

static void ctx_free(req_ctx *r)
{
    if (r == NULL)
        return;
    __atomic_sub_fetch(&r->h->inflight, 1, __ATOMIC_ACQ_REL);
    if (r->counted)
        __atomic_sub_fetch(&r->h->calls, 1, __ATOMIC_ACQ_REL);
    once__body_free(r->conn, &r->body);
    once_free(r->version);
    once_free(r->extensions);
    once_free(r->last_event_id);
    once__rest_clear(&r->rest);
    once__a2a_response_clear(&r->resp);
    once_free(r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)toe;
    ctx_free(*con_cls);
    *con_cls = NULL;
    once__guard_idle(conn);
}

/* Queue body (ownership taken; once_malloc'd) with our standard headers. */
static enum MHD_Result queue_json(struct MHD_Connection *conn, int status, char *body,
                                  size_t len, const once__a2a_response *meta, int closing)
{
    struct MHD_Response *res;
    if (body != NULL)
        res = MHD_create_response_from_buffer_with_free_callback(len, body, once_free);
    else
        res = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (res == NULL) {
        once_free(body);
        return MHD_NO;
    }
    MHD_add_response_header(res, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    if (meta != NULL) {
        if (meta->replayed)
            MHD_add_response_header(res, "Idempotent-Replayed", "true");
        if (meta->retry_after > 0) {
            char ra[16];
            snprintf(ra, sizeof ra, "%d", meta->retry_after);
            MHD_add_response_header(res, MHD_HTTP_HEADER_RETRY_AFTER, ra);
        }
        if (meta->extension)
            MHD_add_response_header(res, "A2A-Extensions", ONCE_A2A_EXTENSION_URI);
    }
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(res, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"once\"");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(res, MHD_HTTP_HEADER_ALLOW,
                                meta != NULL && meta->allow != NULL ? meta->allow : "POST");
    if (closing)
        MHD_add_response_header(res, MHD_HTTP_HEADER_CONNECTION, "close");
    cors_headers(res);
    once__metrics_http(tl_method, status);
    enum MHD_Result ret = once__http_queue(conn, (unsigned)status, res);
    MHD_destroy_response(res);
    return ret;
}

/* An error the HTTP layer raises itself, in binding b's shape; retry_after
 * > 0 adds a Retry-After header. */
static enum MHD_Result queue_refusal(struct MHD_Connection *conn, once__a2a_binding b, int status,
                                     int code, const char *reason, const char *message,
                                     int retry_after, int closing)
{
    once__ops_log_request(once__reqinfo_current(), tl_method, NULL, reason, status, -1);
    once__a2a_response r;
    if (once__a2a_error_response_as(b, status, code, reason, message, &r) != ONCE_OK)
        return queue_json(conn, 500, NULL, 0, NULL, 1);
    char *body = r.body;
    r.body = NULL;
    r.retry_after = retry_after;
    return queue_json(conn, status, body, r.len, &r, closing);
}

static enum MHD_Result queue_error(struct MHD_Connection *conn, once__a2a_binding b, int status,
                                   int code, const char *reason, const char *message, int closing)
{
    return queue_refusal(conn, b, status, code, reason, message, 0, closing);
}

/* The card, or 304 when the client's copy is current (card_cache.h). The
 * response takes a copy of the bytes and headers: the card may be replaced
 * while it is sent. */
/* The A2A 0.3 form of the card text (core/v03.h), once_malloc'd, or NULL. */
static char *card03(const char *card, size_t len)
{
    json_t *c = NULL, *out = NULL;
    char *text = NULL;
    size_t n;
    if (once__json_loadb(card, len, 0, &c, NULL) == ONCE_OK && (out = once__v03_card_out(c)))
        (void)once__json_write(out, &text, &n);
    json_decref(c);
    json_decref(out);
    return text;
}

/* 1 when a card request asks for A2A 0.3's card: at the path earlier
 * clients read (/.well-known/agent.json), or with an A2A-Version 0.x. */
static int wants_card03(struct MHD_Connection *conn, const char *url)
{
    const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "A2A-Version");
    return strcmp(url, CARD03_PATH) == 0 || (v != NULL && strncmp(v, "0.", 2) == 0);
}

static enum MHD_Result queue_card(once_http *h, struct MHD_Connection *conn, int v03)
{
    const char *inm =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
    const char *ims =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_MODIFIED_SINCE);
    pthread_mutex_lock(&h->card_mu);
    /* The 0.3 card follows the 1.0 one: converted per request (rare),
     * validated by its own bytes, dated as the card it comes from. */
    once__card_cache cc = h->card;
    char *text = v03 ? card03(h->card_text, h->card_len) : NULL;
    if (text != NULL)
        once__card_cache_init(&cc, text, strlen(text), h->card.built);
    int fresh = (!v03 || text != NULL) && once__card_not_modified(&cc, inm, ims);
    struct MHD_Response *res = NULL;
    if (!v03 || text != NULL)
        res = MHD_create_response_from_buffer(fresh ? 0 : text ? strlen(text) : h->card_len,
                                              text ? text : h->card_text, MHD_RESPMEM_MUST_COPY);
    if (res != NULL) {
        MHD_add_response_header(res, MHD_HTTP_HEADER_ETAG, cc.etag);
        MHD_add_response_header(res, MHD_HTTP_HEADER_LAST_MODIFIED, cc.last_modified);
        MHD_add_response_header(res, "Vary", "A2A-Version");
    }
    pthread_mutex_unlock(&h->card_mu);
    once_free(text);
    if (res == NULL)
        return MHD_NO;
    if (!fresh)
        MHD_add_response_header(res, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    MHD_add_response_header(res, MHD_HTTP_HEADER_CACHE_CONTROL, "max-age=60");
    cors_headers(res);
    once__metrics_http(tl_method, fresh ? MHD_HTTP_NOT_MODIFIED : MHD_HTTP_OK);
    enum MHD_Result ret =
        once__http_queue(conn, fresh ? MHD_HTTP_NOT_MODIFIED : MHD_HTTP_OK, res);
    MHD_destroy_response(res);
    return ret;
}

int once__http_card_set(once_http *h, char *card, size_t len)
{
    pthread_mutex_lock(&h->card_mu);
    int same = len == h->card_len && memcmp(card, h->card_text, len) == 0;
    if (!same) {
        once_free(h->card_text);
        h->card_text = card;
        h->card_len = len;
        once__card_cache_init(&h->card, card, len, time(NULL));
    }
    pthread_mutex_unlock(&h->card_mu);
    if (same)
        once_free(card);
    return !same;
}

static char *dup_value(struct MHD_Connection *conn, enum MHD_ValueKind kind, const char *key)
{
    const char *v = MHD_lookup_connection_value(conn, kind, key);
    return v ? once_strdup(v) : NULL;
}

/* The call's end: an answer for a failure, and the request's log line. */
static void conclude(req_ctx *r, int rc)
{
    if (rc != ONCE_OK) {
        once__a2a_response_clear(&r->resp);
        once__a2a_error_response_as(r->binding, 500, ONCE_RPC_INTERNAL, "INTERNAL",
                                   "Internal error (out of memory)", &r->resp);
    }
    once__ops_log_request(&r->info, NULL, r->principal, r->resp.stream != NULL ? "stream" : NULL,
                          r->resp.http_status ? r->resp.http_status : 500, r->t0);
    once__log_ctx_clear();
}

/* The worker's last step: conclude and hand r back to the MHD thread. */
static void hand_back(req_ctx *r, int rc)
{
    conclude(r, rc);
    struct MHD_Connection *conn = r->conn;
    __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
    MHD_resume_connection(conn); /* r belongs to the MHD thread from here */
}

/* A deferred answer's second half, on a worker: from the record the
 * settling write handed over, else one store read. */
static void finish_job(void *arg)
{
    req_ctx *r = arg;
    once__a2a_deferred *d = r->resp.deferred;
    r->resp.deferred = NULL;
    once__log_ctx_clear();
    once__log_ctx_traceparent(r->traceparent);
    hand_back(r, once__a2a_deferred_finish(d, &r->resp));
}

/* The engine's await thread says a deferred answer can be built: queue it
 * (the thread must not block). With the queue full or closing, build it
 * here: rare, and the answer must not be lost. */
static void on_ready(void *arg)
{
    req_ctx *r = arg;
    if (once__http_pool_submit(r->h->pool, finish_job, r) != ONCE_OK)
        finish_job(r);
}

/* The call itself: the request handed to the codec, its answer (or a
 * deferred one, or a stream) in r->resp. */
static int call(req_ctx *r, int inline_only)
{
    once__log_ctx_clear();
    once__log_ctx_traceparent(r->traceparent);
    once__a2a_request q = {.principal = r->principal,
                          .version = r->version,
                          .extensions = r->extensions,
                          .body = r->body.data,
                          .len = r->body.len,
                          .last_event_id = r->last_event_id,
                          .slots = once__sse_slots(r->h->sse),
                          .defer = 1,
                          .hold = !r->no_hold && !r->h->cfg.inline_calls,
                          .inline_only = inline_only};
    if (r->binding == ONCE_A2A_HTTP_JSON) {
        once__a2a_rest_request rq;
        once__rest_request(&r->rest, &q, &rq);
        return once__a2a_rest_handle(r->h->cfg.codec, &rq, &r->resp);
    }
    return once__a2a_handle(r->h->cfg.codec, &q, &r->resp);
}

/* A blocking send waits for its task without this thread; the body is
 * done with. 1 if r went to the await thread (then to finish_job); 0 when
 * the task already settled, past the wait limits or while stopping: the
 * answer was built now (finish_job, which hands r back). */
static int await_answer(req_ctx *r)
{
    once__body_free(r->conn, &r->body);
    if (once__a2a_deferred_arm(r->resp.deferred, on_ready, r) == ONCE_OK)
        return 1;
    finish_job(r);
    return 0;
}

static void run_job(void *arg);

/* A held answer's write landed (engine.h, once__engine_held_start), on
 * whichever thread committed it: send the answer; or, when nothing was
 * stored, run the call again without holding, on a worker (this thread
 * may be the one every write of the store waits for), which decides from
 * what is stored: a replay of another registration that won, the outage's
 * answer, ... */
static void on_landed(void *arg, int rc)
{
    req_ctx *r = arg;
    *once__log_ctx() = r->logctx;
    if (rc == ONCE_OK) {
        hand_back(r, ONCE_OK);
        return;
    }
    once__log_ctx_clear();
    once__a2a_response_clear(&r->resp);
    r->no_hold = 1;
    rc = once__http_pool_submit(r->h->pool, run_job, r);
    if (rc != ONCE_OK) {
        once__a2a_error_response_as(r->binding, MHD_HTTP_SERVICE_UNAVAILABLE, ONCE_RPC_INTERNAL,
                                   rc == ONCE_EBUSY ? "OVERLOADED" : "SHUTTING_DOWN",
                                   "The server is busy; retry the same request", &r->resp);
        r->resp.retry_after = 1;
        hand_back(r, ONCE_OK);
    }
}

/* The answer of a new task not stored yet: start its write; the thread
 * that commits it answers (on_landed). */
static void start_held(req_ctx *r)
{
    once__held *held = r->resp.held;
    r->resp.held = NULL;
    r->logctx = *once__log_ctx();
    once__log_ctx_clear();
    once__engine_held_start(held, on_landed, r);   /* r may be answered already */
}

static void run_job(void *arg)
{
    req_ctx *r = arg;
    int rc = call(r, 0);
    if (rc == ONCE_OK && r->resp.deferred != NULL) {
        (void)await_answer(r);
        return;
    }
    if (rc == ONCE_OK && r->resp.held != NULL) {
        start_held(r);
        return;
    }
    hand_back(r, rc);
}

static int is_rpc_path(const once_http *h, const char *url)
{
    return strcmp(url, "/") == 0 || (h->rpc_path != NULL && strcmp(url, h->rpc_path) == 0);
}

/* Which of the admission rules (admit.h) apply to url. */
static once__route_kind route_kind(const once_http *h, const char *url, const char *rest)
{
    if (rest != NULL || is_rpc_path(h, url))
        return ONCE__ROUTE_A2A;
    if (strcmp(url, CARD_PATH) == 0 || strcmp(url, CARD03_PATH) == 0)
        return ONCE__ROUTE_CARD;
    if (strcmp(url, "/healthz") == 0 || strcmp(url, "/readyz") == 0 ||
        strcmp(url, "/metrics") == 0)
        return ONCE__ROUTE_OPS;
    return ONCE__ROUTE_OTHER;
}

/* The declared body is too large to drain before an answer: answer at
 * once and close. */
static int too_large_to_drain(const once_http *h, struct MHD_Connection *conn)
{
    const char *cl =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    uint64_t n;
    return cl != NULL && once__parse_size(cl, &n) == ONCE_OK &&
           n > (uint64_t)h->cfg.max_body * DRAIN_FACTOR;
}

/* r becomes the request's context on conn. */
static enum MHD_Result ctx_attach(once_http *h, struct MHD_Connection *conn, req_ctx *r,
                                  void **con_cls)
{
    r->h = h;
    r->conn = conn;
    r->info = *once__reqinfo_slot();
    once__reqinfo_use(&r->info);
    __atomic_add_fetch(&h->inflight, 1, __ATOMIC_ACQ_REL);
    *con_cls = r;
    return MHD_YES;
}

/* GET /inspect/api/stream/ID: the JSON-RPC SubscribeToTask of the task,
 * as the principal the inspector signed in (resumed by Last-Event-ID as
 * any stream), so the task page's script needs no token. */
static enum MHD_Result inspect_stream(once_http *h, struct MHD_Connection *conn,
                                      const once__inspect_stream *st, void **con_cls)
{
    json_t *call = json_pack("{s:s, s:i, s:s, s:{s:s}}", "jsonrpc", "2.0", "id", 1, "method",
                             "SubscribeToTask", "params", "id", st->task_id);
    char *text = NULL;
    size_t len = 0;
    int rc = call != NULL ? once__json_write(call, &text, &len) : ONCE_ENOMEM;
    json_decref(call);
    req_ctx *r = rc == ONCE_OK ? once_calloc(1, sizeof *r) : NULL;
    if (r == NULL || once__body_append(conn, &r->body, h->cfg.max_body, text, len) != ONCE_OK) {
        if (r != NULL)
            once__body_free(conn, &r->body);
        once_free(r);
        once_free(text);
        return MHD_NO;
    }
    once_free(text);
    r->binding = ONCE_A2A_JSONRPC;
    r->inspect_stream = 1;
    once__strlcpy(r->principal, st->principal, sizeof r->principal);
    return ctx_attach(h, conn, r, con_cls);
}

static enum MHD_Result first_call(once_http *h, struct MHD_Connection *conn, const char *url,
                                  const char *method, void **con_cls)
{
    /* The one routing hook: the JSON-RPC endpoint, else an HTTP+JSON route. */
    const char *rest = is_rpc_path(h, url) ? NULL : once__rest_path(h->rpc_path, url);
    once__a2a_binding b = rest != NULL ? ONCE_A2A_HTTP_JSON : ONCE_A2A_JSONRPC;
    const char *bad = once__guard_framing(conn, method);
    if (bad != NULL) {
        char msg[128];
        snprintf(msg, sizeof msg, "Bad request framing: %s", bad);
        return queue_error(conn, b, MHD_HTTP_BAD_REQUEST, ONCE_RPC_INVALID_REQUEST,
                           "BAD_FRAMING", msg, 1);
    }
    /* Admission, before any route: a refused request with a body is
     * answered once its body is drained (answering before it would close a
     * connection with unread bytes, which can lose the answer). */
    once__route_kind kind = route_kind(h, url, rest);
    const once__refusal *no = once__admit_check(&h->admit, conn, method, kind);
    if (no != NULL && (!once__admit_has_body(conn) || too_large_to_drain(h, conn)))
        return queue_error(conn, b, no->status, no->code, no->reason, no->message,
                           once__admit_has_body(conn));
    if (no != NULL) {
        req_ctx *r = once_calloc(1, sizeof *r);
        if (r == NULL)
            return MHD_NO;
        r->binding = b;
        r->refusal = no;
        return ctx_attach(h, conn, r, con_cls);
    }
    enum MHD_Result ops_ret;
    if ((kind == ONCE__ROUTE_A2A || kind == ONCE__ROUTE_CARD) &&
        once__admit_preflight(&h->admit, conn, method, &ops_ret))
        return ops_ret;
    if (once__ops_route(h->ops, conn, url, method, &ops_ret))
        return ops_ret;
    once__inspect_stream istream = {"", NULL};
    int login = once__inspect_route(h->inspect, conn, url, method, &ops_ret, &istream);
    if (login == ONCE__INSPECT_ANSWERED)
        return ops_ret;
    if (login == ONCE__INSPECT_STREAM)
        return inspect_stream(h, conn, &istream, con_cls);
    int get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 ||
              strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    if ((strcmp(url, CARD_PATH) == 0 || strcmp(url, CARD03_PATH) == 0) && get)
        return queue_card(h, conn, wants_card03(conn, url));
    if (rest == NULL && !is_rpc_path(h, url) && !login)
        return queue_error(conn, b, MHD_HTTP_NOT_FOUND, ONCE_RPC_INVALID_REQUEST, "NOT_FOUND",
                           "No such path: JSON-RPC is served by POST /, the HTTP+JSON binding "
                           "by its routes (/message:send, /tasks, ...) and the agent card at "
                           CARD_PATH,
                           0);
    if (rest == NULL && strcmp(method, MHD_HTTP_METHOD_POST) != 0)
        return queue_error(conn, b, MHD_HTTP_METHOD_NOT_ALLOWED, ONCE_RPC_INVALID_REQUEST,
                           "METHOD_NOT_ALLOWED", "JSON-RPC requests are sent with POST", 0);
    if (__atomic_load_n(&h->stopping, __ATOMIC_ACQUIRE) || once__ops_draining(h->ops))
        return queue_error(conn, b, MHD_HTTP_SERVICE_UNAVAILABLE, ONCE_RPC_INTERNAL,
                           "SHUTTING_DOWN", "The server is shutting down; retry elsewhere", 1);
    if (too_large_to_drain(h, conn))
        return queue_error(conn, b, MHD_HTTP_CONTENT_TOO_LARGE, ONCE_RPC_INVALID_REQUEST,
                           "PAYLOAD_TOO_LARGE", "Request body too large", 1);
    req_ctx *r = once_calloc(1, sizeof *r);
    if (r == NULL)
        return MHD_NO;
    r->binding = b;
    r->inspect_login = login;
    int rc = rest != NULL ? once__rest_capture(conn, method, rest, &r->rest) : ONCE_OK;
    if (rc != ONCE_OK) {
        once_free(r);
        if (rc == ONCE_ENOMEM)
            return MHD_NO;
        return queue_error(conn, b, MHD_HTTP_BAD_REQUEST, ONCE_RPC_INVALID_PARAMS,
                           "INVALID_PARAMS", "Invalid parameters: too many query parameters", 1);
    }
    return ctx_attach(h, conn, r, con_cls);
}

/* Queue the answer of a call that is done (r->done): its stream, or its
 * JSON body. On the MHD thread, inside the access handler. */
static enum MHD_Result answer(once_http *h, req_ctx *r)
{
    struct MHD_Connection *conn = r->conn;
    const char *method = tl_method;
    if (r->counted) {
        r->counted = 0;
        __atomic_sub_fetch(&h->calls, 1, __ATOMIC_ACQ_REL);
    }
    if (r->resp.stream != NULL) {
        enum MHD_Result ret;
        int rc = once__sse_start(h->sse, conn, &r->resp, cors_headers, &ret);
        if (rc == ONCE_OK) {
            /* The call is done with its request; a stream may stay open
             * for hours, so it keeps only what its log line needs. */
            once__body_free(conn, &r->body);
            once__rest_clear(&r->rest);
            once__metrics_http(method, MHD_HTTP_OK);
            return ret;
        }
        /* The call behind the stream is applied; a retry replays it. */
        once__a2a_response_clear(&r->resp);
        once__a2a_error_response_as(r->binding, MHD_HTTP_SERVICE_UNAVAILABLE,
                                   ONCE_RPC_INTERNAL,
                                   rc == ONCE_ECLOSED ? "SHUTTING_DOWN" : "OVERLOADED",
                                "The server cannot open a stream now; retry the same "
                                "request",
                                &r->resp);
        r->resp.retry_after = 1;
    }
    char *body = r->resp.body;
    r->resp.body = NULL;
    int closing = __atomic_load_n(&h->stopping, __ATOMIC_ACQUIRE) || once__ops_draining(h->ops);
    return queue_json(conn, r->resp.http_status ? r->resp.http_status : 500, body,
                      r->resp.len, &r->resp, closing);
}

/* Why a request got 401, for its line in the log: which part of the
 * credentials failed, never the token itself. */
static const char *auth_failure(const char *authorization)
{
    if (authorization == NULL)
        return "no_credentials";
    if (strncasecmp(authorization, "Bearer ", 7) != 0)
        return "not_bearer";
    return "unknown_token";
}

static enum MHD_Result dispatch(once_http *h, req_ctx *r)
{
    struct MHD_Connection *conn = r->conn;
    once__guard_busy(conn);
    once__a2a_binding b = r->binding;
    if (r->refusal != NULL)
        return queue_error(conn, b, r->refusal->status, r->refusal->code, r->refusal->reason,
                           r->refusal->message, 0);
    if (r->body.no_memory)
        return queue_refusal(conn, b, MHD_HTTP_SERVICE_UNAVAILABLE, ONCE_RPC_INTERNAL,
                             "OVERLOADED",
                             "The server holds too many request bodies; retry the same request",
                             1, 0);
    if (r->body.too_large) {
        char msg[128];
        snprintf(msg, sizeof msg, "Invalid request: body larger than %zu bytes",
                 h->cfg.max_body);
        return queue_error(conn, b, MHD_HTTP_CONTENT_TOO_LARGE, ONCE_RPC_INVALID_REQUEST,
                           "PAYLOAD_TOO_LARGE", msg, 0);
    }
    if (r->inspect_login)
        return once__inspect_login(h->inspect, conn, r->body.data, r->body.len);
    if (r->inspect_stream) {
        /* signed in through the inspector: principal and body are set */
    } else if (h->cfg.tokens != NULL) {
        const char *authz =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
        if (once__tokens_principal(h->cfg.tokens, authz, r->principal) == NULL) {
            r->info.auth = auth_failure(authz);
            return queue_error(conn, b, MHD_HTTP_UNAUTHORIZED, ONCE_RPC_INVALID_REQUEST,
                               "UNAUTHENTICATED",
                               "Unauthenticated: send Authorization: Bearer <token>", 0);
        }
    } else {
        snprintf(r->principal, sizeof r->principal, "anonymous");
    }
    r->version = dup_value(conn, MHD_HEADER_KIND, "A2A-Version");
    if (r->version == NULL)
        r->version = dup_value(conn, MHD_GET_ARGUMENT_KIND, "A2A-Version");
    if (r->version == NULL && r->inspect_stream)
        r->version = once_strdup("1.0");
    r->extensions = dup_value(conn, MHD_HEADER_KIND, "A2A-Extensions");
    if (r->extensions == NULL) /* A2A 0.3's name */
        r->extensions = dup_value(conn, MHD_HEADER_KIND, "X-A2A-Extensions");
    r->last_event_id = dup_value(conn, MHD_HEADER_KIND, "Last-Event-ID");
    const char *tp = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "traceparent");
    if (once__traceparent_valid(tp))
        snprintf(r->traceparent, sizeof r->traceparent, "%.*s", ONCE_TRACEPARENT_LEN, tp);
    r->t0 = once_monotonic_ms();
    r->dispatched = 1;
    r->counted = 1;
    __atomic_add_fetch(&h->calls, 1, __ATOMIC_ACQ_REL);
    if (h->cfg.inline_calls || h->cfg.inline_first) {
        /* No call waits for I/O (inline_calls), or this one need not
         * (inline_first: else ONCE__EAGAIN, nothing done): run it here. A
         * blocking send's wait still leaves this thread (suspended until
         * the await thread's worker answers), and so does a held answer
         * (until the thread that commits its write answers). */
        int rc = call(r, !h->cfg.inline_calls);
        if (rc == ONCE_OK && r->resp.deferred != NULL) {
            MHD_suspend_connection(conn);
            (void)await_answer(r);
            return MHD_YES;
        }
        if (rc == ONCE_OK && r->resp.held != NULL) {
            MHD_suspend_connection(conn);
            start_held(r);
            return MHD_YES;
        }
        if (rc != ONCE__EAGAIN) {
            conclude(r, rc);
            __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
            return answer(h, r);
        }
    }
    MHD_suspend_connection(conn);
    int rc = once__http_pool_submit(h->pool, run_job, r);
    if (rc != ONCE_OK) {
        once__a2a_error_response_as(b, MHD_HTTP_SERVICE_UNAVAILABLE, ONCE_RPC_INTERNAL,
                                   rc == ONCE_EBUSY ? "OVERLOADED" : "SHUTTING_DOWN",
                                   "The server is busy; retry the same request", &r->resp);
        r->resp.retry_after = 1;
        __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
        MHD_resume_connection(conn);
    }
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    (void)version;
    once_http *h = cls;
    req_ctx *r = *con_cls;
    tl_method = method;
    tl_cors = once__admit_cors(&h->admit, conn);
    tl_vary = h->admit.norigins > 0;
    if (r == NULL) {
        once__reqinfo_take(once__reqinfo_slot(), conn, url);
        once__reqinfo_use(once__reqinfo_slot());
        enum MHD_Result ret = first_call(h, conn, url, method, con_cls);
        if (*con_cls == NULL) /* answered at once: the request is in */
            once__guard_busy(conn);
        return ret;
    }
    if (*upload_data_size > 0) {
        if (r->refusal == NULL && once__body_append(conn, &r->body, h->cfg.max_body, upload_data,
                                                    *upload_data_size) != ONCE_OK)
            return MHD_NO;
        *upload_data_size = 0;
        return MHD_YES;
    }
    once__reqinfo_use(&r->info);
    if (__atomic_load_n(&r->done, __ATOMIC_ACQUIRE))
        return answer(h, r);
    if (r->dispatched) /* spurious wake-up while the worker runs */
        return MHD_YES;
    return dispatch(h, r);
}

static int resolve(const char *host, int port, struct sockaddr_storage *ss, int *v6, char *err,
                   size_t errlen)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    char ps[8];
    snprintf(ps, sizeof ps, "%d", port);
    int gai = getaddrinfo(host, ps, &hints, &res);
    if (gai != 0 || res == NULL) {
        snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(gai));
        return ONCE_EINVAL;
    }
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *v6 = res->ai_family == AF_INET6;
    freeaddrinfo(res);
    return ONCE_OK;
}

#ifdef ONCE_HAVE_TLS
/* GnuTLS asks for the certificate of each handshake (tls.h): the pair
 * served now. MHD made the connection the session's pointer. */
static int pick_cert(gnutls_session_t s, const gnutls_datum_t *req_ca, int nreq,
                     const gnutls_pk_algorithm_t *algos, int nalgos, gnutls_pcert_st **pcert,
                     unsigned *n, gnutls_privkey_t *key)
{
    (void)req_ca;
    (void)nreq;
    (void)algos;
    (void)nalgos;
    once_http *h = once__guard_owner(gnutls_session_get_ptr(s));
    if (h == NULL || h->tls == NULL)
        return -1;   /* an unguarded connection is being closed anyway */
    once__tls_live_pick(h->tls, pcert, n, key);
    return 0;
}
#endif

int once__http_tls_reload(once_http *h, char sha256[2 * ONCE_SHA256_LEN + 1], char *err,
                          size_t errlen)
{
    if (h->tls == NULL) {
        snprintf(err, errlen, "onced serves plain HTTP (no --tls-cert)");
        return ONCE_EINVAL;
    }
    return once__tls_live_reload(h->tls, h->cfg.tls_cert_file, h->cfg.tls_key_file, sha256, err,
                                 errlen);
}

int once__http_start(const once_http_config *cfg, once_http **out, char *err, size_t errlen)
{
    *out = NULL;
    if (cfg == NULL || cfg->codec == NULL || cfg->host == NULL) {
        snprintf(err, errlen, "missing configuration");
        return ONCE_EINVAL;
    }
    once_http *h = once_calloc(1, sizeof *h);
    if (h == NULL)
        return ONCE_ENOMEM;
    h->cfg = *cfg;
    if (h->cfg.threads == 0)
        h->cfg.threads = 2;
    if (h->cfg.workers == 0)
        h->cfg.workers = 64;
    if (h->cfg.max_body == 0)
        h->cfg.max_body = DEFAULT_MAX_BODY;
    if (h->cfg.conn_memory == 0)
        h->cfg.conn_memory = CONN_MEMORY;
    if (h->cfg.conn_memory < CONN_MEMORY_MIN || h->cfg.conn_memory > CONN_MEMORY_MAX) {
        snprintf(err, errlen, "--conn-memory must be 4KiB to 1MiB");
        once_free(h);
        return ONCE_EINVAL;
    }
    if (h->cfg.idle_timeout_s == 0)
        h->cfg.idle_timeout_s = 30;
    if (h->cfg.max_streams == 0)
        h->cfg.max_streams = DEFAULT_MAX_STREAMS;
    if (h->cfg.sse_ping_ms <= 0)
        h->cfg.sse_ping_ms = DEFAULT_SSE_PING_MS;
    if (h->cfg.sse_buffer == 0)
        h->cfg.sse_buffer = DEFAULT_SSE_BUFFER;
    static const once_http_limits defaults = {ONCE_HTTP_REQUEST_TIMEOUT_MS,
                                              ONCE_HTTP_MAX_CONNECTIONS, ONCE_HTTP_MAX_PER_IP,
                                              ONCE_HTTP_MAX_BODY_MEMORY};
    int rc = once__http_limits_resolve(&h->cfg.limits, &defaults, h->cfg.max_body, err, errlen);
    if (rc != ONCE_OK) {
        once_free(h);
        return rc;
    }
    if (cfg->rpc_path != NULL && strcmp(cfg->rpc_path, "/") != 0) {
        h->rpc_path = once_strdup(cfg->rpc_path);
        if (h->rpc_path == NULL) {
            once_free(h);
            return ONCE_ENOMEM;
        }
    }
    h->cfg.rpc_path = h->rpc_path;
    const char *card = once__a2a_card(h->cfg.codec, &h->card_len);
    if ((h->card_text = once_malloc(h->card_len + 1)) == NULL) {
        once_free(h->rpc_path);
        once_free(h);
        return ONCE_ENOMEM;
    }
    memcpy(h->card_text, card, h->card_len + 1);
    once__card_cache_init(&h->card, card, h->card_len, time(NULL));
    pthread_mutex_init(&h->card_mu, NULL);
    struct sockaddr_storage ss;
    int v6 = 0, tls = cfg->tls_cert_file != NULL || cfg->tls_key_file != NULL;
    rc = tls ? once__tls_live_new(cfg->tls_cert_file, cfg->tls_key_file, &h->tls, err, errlen)
             : ONCE_OK;
    if (rc == ONCE_OK)
        rc = resolve(cfg->host, cfg->port, &ss, &v6, err, errlen);
    if (rc == ONCE_OK)
        rc = once__admit_init(&h->admit, &h->cfg, (struct sockaddr *)&ss, err, errlen);
    if (rc == ONCE_OK && cfg->tokens == NULL && !once__admit_loopback((struct sockaddr *)&ss))
        once__log_note(ONCE_LOG_WARN, "unauthenticated",
                       h->admit.any_host
                           ? "no --auth-tokens on a non-loopback address: anyone who reaches "
                             "it may send tasks, and any Host name is taken, so a web page "
                             "can reach it by DNS rebinding; set --auth-tokens, or "
                             "--allowed-hosts with the names it is reached by"
                           : "no --auth-tokens on a non-loopback address: anyone who reaches "
                             "it may send tasks; set --auth-tokens");
    if (rc == ONCE_OK) {
        /* Calls queue behind busy workers up to this depth, then get 503. */
        rc = once__http_pool_new(h->cfg.workers, (size_t)h->cfg.limits.max_connections,
                                 &h->pool);
        if (rc != ONCE_OK)
            snprintf(err, errlen, "cannot start the worker pool: %s", once_strerror(rc));
    }
    if (rc == ONCE_OK) {
        rc = once__sse_new(h->cfg.max_streams, h->cfg.max_streams_per_principal,
                           h->cfg.sse_buffer, h->cfg.sse_ping_ms, &h->sse);
        if (rc != ONCE_OK)
            snprintf(err, errlen, "bad streaming settings: %s", once_strerror(rc));
    }
    if (rc == ONCE_OK) {
        rc = once__guard_new(&h->cfg.limits, "onced: http", &h->guard);
        if (rc != ONCE_OK)
            snprintf(err, errlen, "cannot start the connection guard: %s", once_strerror(rc));
    }
    if (rc == ONCE_OK)
        rc = once__inspect_new(&cfg->inspect, cfg->tokens, cfg->codec, tls, &h->inspect);
    if (rc == ONCE_OK && (rc = once__ops_new(&cfg->ops, h->sse, &h->ops)) == ONCE_OK)
        rc = once__ops_start(h->ops, &h->cfg, err, errlen);
    if (rc != ONCE_OK) {
        once__http_stop(h);
        return rc;
    }
    /* The gRPC listener first: once the HTTP side answers (a readiness
     * probe, a load balancer's health check) every listener accepts. */
    if (cfg->grpc_host != NULL) {
        once__grpc_serve_config g = {.host = cfg->grpc_host,
                                     .port = cfg->grpc_port,
                                     .codec = cfg->codec,
                                     .tokens = cfg->tokens,
                                     .hub = h->sse,
                                     .pool = h->pool,
                                     .tls = h->tls,
                                     .tls_priority = h->cfg.tls_priority,
                                     .max_message = h->cfg.max_body,
                                     .stream_buffer = h->cfg.sse_buffer,
                                     .limits = h->cfg.limits,
                                     .idle_timeout_s = h->cfg.idle_timeout_s,
                                     .streams_per_conn = h->cfg.grpc_streams,
                                     /* as many loops as libmicrohttpd's */
                                     .threads = h->cfg.threads,
                                     .inline_calls = h->cfg.inline_calls,
                                     .inline_first = h->cfg.inline_first};
        char why[200] = "";
        rc = once__grpc_serve_start(&g, &h->grpc, why, sizeof why);
        if (rc != ONCE_OK) {
            snprintf(err, errlen, "--grpc-listen %s:%d: %s", cfg->grpc_host, cfg->grpc_port,
                     why[0] ? why : once_strerror(rc));
            once__http_stop(h);
            return rc;
        }
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG | (v6 ? MHD_USE_IPv6 : 0);
    struct MHD_OptionItem guarded[4], https[3] = {{MHD_OPTION_END, 0, NULL}};
    once__guard_mhd_options(h->guard, guarded);
    once__guard_set_owner(h->guard, h);   /* pick_cert finds h through it */
#ifdef ONCE_HAVE_TLS
    if (tls)
        flags |= once__tls_live_mhd(pick_cert, h->cfg.tls_priority, https);
#endif
    h->d = MHD_start_daemon(
        flags, (uint16_t)cfg->port, NULL, NULL, on_request, h, MHD_OPTION_EXTERNAL_LOGGER,
        once__http_mhd_log, h, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&ss, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)h->cfg.threads,
        MHD_OPTION_ARRAY, guarded, MHD_OPTION_ARRAY, https, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)h->cfg.idle_timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, h->cfg.conn_memory, MHD_OPTION_LISTEN_BACKLOG_SIZE,
        (unsigned)1024, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
        /* Our unescaping: a %00 becomes DEL, so the routes refuse the path
         * instead of reading it cut short at the NUL (rest_route.h). */
        MHD_OPTION_UNESCAPE_CALLBACK, once__url_unescape, NULL, MHD_OPTION_END);
    if (h->d == NULL) {
        if (tls && cfg->tls_priority != NULL)
            snprintf(err, errlen,
                     "cannot listen on %s:%d (address in use or not available), or GnuTLS "
                     "refused the priority string --tls-priority %s",
                     cfg->host, cfg->port, cfg->tls_priority);
        else
            snprintf(err, errlen, "cannot listen on %s:%d (address in use or not available)",
                     cfg->host, cfg->port);
        once__http_stop(h);
        return ONCE_EIO;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : cfg->port;
    *out = h;
    return ONCE_OK;
}

int once__http_grpc_port(const once_http *h)
{
    return h->grpc != NULL ? once__grpc_serve_port(h->grpc) : 0;
}

int once__http_port(const once_http *h)
{
    return h->port;
}

const once_http_config *once__http_cfg(const once_http *h)
{
    return &h->cfg;
}

void once__http_drain(once_http *h)
{
    if (h != NULL)
        once__ops_drain(h->ops);
}

void once__http_unready(once_http *h)
{
    if (h != NULL)
        once__ops_unready(h->ops);
}

long once__http_calls(const once_http *h)
{
    return h != NULL ? __atomic_load_n(&h->calls, __ATOMIC_ACQUIRE) : 0;
}

void once__http_stop(once_http *h)
{
    if (h == NULL)
        return;
    __atomic_store_n(&h->stopping, 1, __ATOMIC_RELEASE);
    /* New clients are refused at once (shutdown of a listening socket),
     * but the descriptor is closed only after MHD_stop_daemon: MHD's
     * threads may still use it until then (microhttpd.h, quiesce). */
    MHD_socket lfd = MHD_INVALID_SOCKET;
    if (h->d != NULL) {
        lfd = MHD_quiesce_daemon(h->d);
        if (lfd != MHD_INVALID_SOCKET)
            shutdown(lfd, SHUT_RDWR);
    }
    /* gRPC calls arriving from now on are refused: the pool goes away. */
    once__grpc_serve_quiesce(h->grpc);
    /* Blocking sends that wait for their tasks answer now, with the task
     * as it stands (their jobs go on the pool), and no new one waits. */
    once__a2a_release_waits(h->cfg.codec);
    /* Every accepted call runs to its end and resumes its connection. */
    once__http_pool_free(h->pool);
    h->pool = NULL;
    /* Streams end (EOF after what they queued) and their connections are
     * resumed: none may stay suspended when the daemon stops. */
    once__sse_stop(h->sse);
    /* gRPC calls end as HTTP ones do (their streams just did), then its
     * connections close. */
    once__grpc_serve_stop(h->grpc);
    h->grpc = NULL;
    if (h->d != NULL) {
        /* Give resumed connections a moment to send their responses. */
        int64_t until = once_monotonic_ms() + 2000;
        while (__atomic_load_n(&h->inflight, __ATOMIC_ACQUIRE) > 0 &&
               once_monotonic_ms() < until) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        MHD_stop_daemon(h->d);
    }
    if (lfd != MHD_INVALID_SOCKET)
        close(lfd);
    once__ops_free(h->ops);
    once__inspect_free(h->inspect);
    once__guard_free(h->guard);
    once__sse_free(h->sse);
    once__tls_live_free(h->tls);
    once__admit_clear(&h->admit);
    once_free(h->rpc_path);
    once_free(h->card_text);
    pthread_mutex_destroy(&h->card_mu);
    once_free(h);
}
