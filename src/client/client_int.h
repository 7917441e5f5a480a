/*
 * client_int.h -- internals of the once client (src/client). Not API.
 *
 * Layers, each in its own file:
 *   policy.c    pure: full-jitter backoff, the retry-budget token bucket,
 *               Retry-After parsing, answer classification
 *   outbox.c    the durable SQLite outbox: schema, intents, transitions
 *   outbox_aux.c  listing, pruning, the agent-mode cache, the budget rows
 *   http.c      one HTTP request through libcurl (a fresh handle each time)
 *   answer.c    JSON-RPC answers: result/error parsing into once_call_result
 *   retry.c     the retry loop over one call (attempts, deadline, budget)
 *   client.c    handle, configuration, get/cancel
 *   send.c      send and continue through the outbox
 *   sse.c       an incremental text/event-stream parser
 *   stream.c    one SubscribeToTask connection over SSE
 *   wait.c      following a task: the stream, resumed by Last-Event-ID, or
 *               GetTask polled with backoff
 *   recover.c   recovery of the outbox after a crash
 *   endpoints.c the URLs one agent answers at: naming, storing, failover
 *   parts.c     the parts of an answer: listing, and saving files safely
 *   binding.c   the binding seam: an A2A call in JSON-RPC's shape, carried
 *               over the binding the client chose (JSON-RPC, HTTP+JSON, gRPC)
 *   bind_map.c  pure: picking an interface, REST routes, errors into JSON-RPC's
 *   bind_rest.c the HTTP+JSON binding; bind_grpc.c the gRPC binding
 */
#ifndef ONCE_CLIENT_CLIENT_INT_H
#define ONCE_CLIENT_CLIENT_INT_H

#include <jansson.h>
#include <sqlite3.h>

#include "once/client.h"

/* ---------------------------------------------------------------------------
 * policy.c (pure; unit-tested with a seeded rng)
 */

/* min(cap, base * 2^retry), saturating; retry 0 is the first retry. */
int64_t once__backoff_ceiling(const once_retry_policy *p, unsigned retry);
/* A full-jitter delay, uniform in [0, ceiling(retry)]. */
int once__backoff_delay(const once_retry_policy *p, unsigned retry, const once_rng *rng,
                        int64_t *out_ms);

/* The retry budget. Whoever holds the outbox write transaction owns it. */
typedef struct once__bucket {
    double tokens;
    int64_t updated_ms;
} once__bucket;

void once__bucket_init(once__bucket *b, const once_retry_policy *p, int64_t now_ms);
/* Add the tokens time earned since updated_ms (capped at burst). */
void once__bucket_refill(once__bucket *b, const once_retry_policy *p, int64_t now_ms);
/* A call starts: earn budget_ratio tokens. */
void once__bucket_deposit(once__bucket *b, const once_retry_policy *p, int64_t now_ms);
/* A retry wants to start: 1 (and one token taken) or 0 (denied). */
int once__bucket_take(once__bucket *b, const once_retry_policy *p, int64_t now_ms);

/* A Retry-After value: delta-seconds or an IMF-fixdate ("Sun, 06 Nov 1994
 * 08:49:37 GMT"), into milliseconds from now_ms (a past date gives 0).
 * ONCE_EINVAL for anything else. */
int once__retry_after_parse(const char *v, int64_t now_ms, int64_t *out_ms);

/* How an attempt ended. */
typedef enum once__verdict {
    ONCE__OK = 0,
    ONCE__RETRY,
    ONCE__REFUSED,
    ONCE__ERROR,
    ONCE__INTERRUPTED
} once__verdict;

/* Classify an HTTP answer to a JSON-RPC call: status, the parsed body (NULL
 * if none or unparseable). Pure. */
once__verdict once__classify(long http_status, const json_t *body);
/* 1 for codes/reasons that are A2A refusals about the task. */
int once__is_refusal(int code, const char *reason);

/* 1 if the intent state machine allows from -> to (same state allowed for
 * pending and acknowledged: attempts and observed states update them). */
int once__intent_transition_ok(once_intent_state from, once_intent_state to);
once_intent_state once__intent_state_parse(const char *s);

/* ---------------------------------------------------------------------------
 * outbox.c / outbox_aux.c. All calls are transactions of their own; SQLite
 * WAL with synchronous=FULL, so a returned ONCE_OK is on disk.
 */
typedef struct once__outbox once__outbox;

/* path NULL = in memory. */
int once__outbox_open(const char *path, once__outbox **out, char *err, size_t errlen);
void once__outbox_close(once__outbox *o);
const char *once__outbox_errmsg(const once__outbox *o);

/* A new pending intent. message is the A2A Message JSON as it will be sent
 * (taskId absent for first messages: the mode decides); push, if not NULL,
 * the TaskPushNotificationConfig JSON sent with it in every attempt. */
int once__outbox_add(once__outbox *o, const char *kind, const char *agent, const char *task_id,
                     const char *message_id, const char *message, const char *push, int64_t now,
                     int64_t *seq);

/* One intent with copies of its strings (once__intent_row_clear frees);
 * a snapshot, owned by whoever loaded it and never updated in place. */
typedef struct once__intent_row {
    once_intent it;   /* pointers into the owned copies below */
    char *kind, *agent, *task_id, *message_id, *mode, *last_error, *refusal, *message, *push,
        *endpoint;
} once__intent_row;
void once__intent_row_clear(once__intent_row *r);
int once__outbox_load(once__outbox *o, int64_t seq, once__intent_row *row);

int once__outbox_attempt(once__outbox *o, int64_t seq, int64_t now);
int once__outbox_error(once__outbox *o, int64_t seq, const char *err, int64_t now);
/* Set the mode if still unknown; *mode_out gets the stored one (ext=1). */
int once__outbox_set_mode(once__outbox *o, int64_t seq, int ext, int64_t now, int *ext_out);
/* The agent answered: pending|acknowledged -> acknowledged, or final when
 * st is terminal or the answer was a Message (final != 0). task_id fills a
 * still-unknown ID. ONCE_EILLEGAL if the intent is already finished.
 * endpoint (NULL: unchanged), here and below: the URL that answered. */
int once__outbox_ack(once__outbox *o, int64_t seq, const char *task_id, once_state st, int final,
                     const char *endpoint, int64_t now);
/* pending|acknowledged -> refused. */
int once__outbox_refuse(once__outbox *o, int64_t seq, const char *reason, once_state st,
                        const char *endpoint, int64_t now);
/* A task's state was observed (GetTask, CancelTask): every acknowledged
 * intent of (agent, task_id) records it and becomes final if terminal.
 * agent is the agent's name (once__agent.name), whatever URL answered. */
int once__outbox_observe(once__outbox *o, const char *agent, const char *task_id, once_state st,
                         const char *endpoint, int64_t now);
/* once_client_abandon, in one IMMEDIATE transaction. */
int once__outbox_abandon(once__outbox *o, const char *id, int64_t now, once_intent_fn fn,
                         void *ctx, unsigned *abandoned);
/* seqs of intents in a state, oldest first. *seqs once_malloc'd. */
int once__outbox_seqs(once__outbox *o, once_intent_state st, int64_t **seqs, size_t *n);

int once__outbox_list(once__outbox *o, once_intent_state st, once_intent_fn fn, void *ctx);
int once__outbox_prune(once__outbox *o, int64_t cutoff_ms, unsigned *removed);
int once__outbox_agent_of(once__outbox *o, const char *task_id, char *out, size_t outlen);

/* Agent-mode cache: ext = the card declares the extension, v03 = the agent
 * speaks A2A 0.3 only. ONCE_ENOTFOUND when absent or checked before
 * min_checked_ms. */
int once__outbox_mode_get(once__outbox *o, const char *agent, int64_t min_checked_ms, int *ext,
                          int *v03);
int once__outbox_mode_put(once__outbox *o, const char *agent, int ext, int v03,
                          const char *interfaces, int64_t now);
/* The card's A2A 1.0 interfaces as once__card_remember wrote them
 * (*interfaces once_malloc'd; NULL when a once before them read the card).
 * ONCE_ENOTFOUND as mode_get. */
int once__outbox_interfaces_get(once__outbox *o, const char *agent, int64_t min_checked_ms,
                                char **interfaces);

/* The retry budget of agent, read-modify-written in one IMMEDIATE
 * transaction: op 0 deposits (a call starts), op 1 takes (a retry wants
 * to start; *allowed says if it may). */
int once__outbox_budget(once__outbox *o, const char *agent, int op, const once_retry_policy *p,
                        int64_t now, int *allowed, double *tokens_after);

/* ---------------------------------------------------------------------------
 * http.c
 */
#define ONCE__HTTP_MAX_BODY (32u << 20)

struct once__http_resp;

/* How HTTPS peers are verified (once_client_config.cacert, .insecure). */
typedef struct once__tls_client {
    char *cacert;                /* NULL = the system's CAs */
    int insecure;
} once__tls_client;

/* One request, built on the caller's stack; strings are borrowed. */
typedef struct once__http_req {
    const char *method;          /* "GET", "POST" (body sent), or another verb */
    const char *url;
    const char *body;            /* POST body, or NULL */
    size_t len;
    const char *token;           /* bearer, or NULL */
    const once__tls_client *tls; /* NULL = verify against the system's CAs */
    int extension;               /* send A2A-Extensions: our URI */
    int v03;                     /* an A2A 0.3 agent: A2A-Version 0.3, and the
                                    extension under 0.3's name too */
    /* More request header lines, "Name: value" each (the gateway's
     * --upstream-header); borrowed, NULL when nheaders is 0. */
    const char *const *headers;
    size_t nheaders;
    int64_t timeout_ms, connect_timeout_ms;
    volatile sig_atomic_t *interrupted;
    /* Streaming (SSE). With on_data set, body bytes go to on_data as they
     * arrive instead of into r->body (return nonzero to stop the transfer:
     * r->stopped, and the call returns ONCE_OK); timeout_ms 0 then means no
     * overall limit, and idle_ms > 0 aborts a transfer that received no byte
     * for that long (r->timed_out, r->idle). */
    const char *accept;          /* NULL = application/json */
    const char *last_event_id;   /* Last-Event-ID header, or NULL */
    int (*on_data)(void *ctx, const struct once__http_resp *r, const char *p, size_t len);
    void *data_ctx;
    int64_t idle_ms;
    /* Polled while the transfer runs (about once a second, and as bytes
     * arrive): nonzero aborts it as interrupted (r->interrupted). NULL =
     * never; for a caller whose stop is not a signal flag (a canceled turn). */
    int (*stop)(void *ctx);
    void *stop_ctx;
} once__http_req;

/* Its answer, filled by once__http_do alone; the caller owns body. */
typedef struct once__http_resp {
    long status;                 /* 0 = no HTTP answer (transport failure) */
    long seen_status;            /* the status line received, even if the
                                    transfer failed later (streams) */
    char content_type[128];      /* "" if absent */
    int stopped;                 /* on_data stopped the transfer */
    int idle;                    /* idle_ms passed without a byte */
    char *body;                  /* NUL-terminated, once_malloc'd */
    size_t len;
    char retry_after[64];        /* raw header value, "" if absent */
    char etag[128];              /* raw ETag header value, "" if absent or longer */
    int replayed;                /* Idempotent-Replayed: true */
    int timed_out;
    int interrupted;
    int unsent;                  /* no connection was made (refused, no such
                                    host): the request never left */
    int untrusted;               /* the peer's certificate failed verification:
                                    a retry cannot fix it (not retried) */
    int unusable;                /* the agent offers nothing this call can use
                                    (no interface of the chosen binding): not
                                    retried either */
    char error[256];             /* transport failure text */
} once__http_resp;

/* ONCE_OK when an HTTP answer (any status) arrived, ONCE_EIO (transport,
 * timeout, interrupt: see the flags), ONCE_ENOMEM. */
int once__http_do(const once__http_req *q, once__http_resp *r);
/* The verdict on a request that got no HTTP answer: interrupted, a final
 * error for an untrusted certificate, else a retry. */
once__verdict once__http_failure_verdict(const once__http_resp *r);
void once__http_resp_clear(once__http_resp *r);
/* ONCE_OK when url is an http(s) URL with a host and, if any, a port in
 * 1..65535; else ONCE_EINVAL and why says what is wrong and what a valid
 * one looks like. Checked before anything is written to the outbox. */
int once__agent_url_check(const char *url, char *why, size_t whylen);
/* "http://h:p/path" -> "http://h:p/.well-known/agent-card.json". */
int once__card_url(const char *agent, char *out, size_t outlen);

/* ---------------------------------------------------------------------------
 * sse.c: an incremental text/event-stream parser (pure).
 */
/* One dispatched event: its id when it was a decimal number (has_id), its
 * data lines joined by LF (NUL-terminated, valid during the call). Return
 * ONCE_OK to go on; anything else stops once__sse_feed, which returns it. */
typedef int (*once__sse_event_fn)(void *ctx, int has_id, int64_t id, const char *data,
                                  size_t len);

/* The parser's state between chunks; owned by one stream. */
typedef struct once__sse {
    char *line;                  /* a line split across chunks */
    size_t len, cap;
    char *data;                  /* the event's data so far */
    size_t dlen, dcap;
    int have_data;               /* a data field was seen (it may be empty) */
    int has_id;
    int64_t id;
    int cr;                      /* the last chunk ended in CR (a CRLF may be split) */
    size_t max;                  /* cap on a line and on one event's data */
    once__sse_event_fn fn;
    void *ctx;
} once__sse;

void once__sse_init(once__sse *p, size_t max, once__sse_event_fn fn, void *ctx);
void once__sse_clear(once__sse *p);   /* frees buffers; NULL ok */
/* ONCE_OK, ONCE_ERANGE (a line or an event over max), ONCE_ENOMEM, or what
 * the callback returned. */
int once__sse_feed(once__sse *p, const char *buf, size_t len);

/* ---------------------------------------------------------------------------
 * stream.c: one SubscribeToTask connection over SSE.
 */
/* A stream that delivers no byte (not even a `: ping`, every 15 s from
 * onced) for this long is taken for dead and reconnected. */
#define ONCE__STREAM_IDLE_MS 45000

typedef enum once__conn {
    ONCE__CONN_STREAM = 1,       /* the stream opened */
    ONCE__CONN_RETRY,            /* no stream, for a reason worth a retry */
    ONCE__CONN_UNSUPPORTED,      /* the agent answered without a stream: poll */
    ONCE__CONN_INTERRUPTED
} once__conn;

/* Why an open stream stopped. */
typedef enum once__end {
    ONCE__END_OPEN = 0,          /* closed or cut while the task went on */
    ONCE__END_TERMINAL,          /* the caller saw a terminal state */
    ONCE__END_INTERRUPTED,       /* the caller saw input-required / auth-required */
    ONCE__END_MESSAGE,           /* the caller saw a direct Message */
    ONCE__END_BROKEN             /* an error line or an unreadable event */
} once__end;

/* What one connection did; filled by once__stream_subscribe. */
typedef struct once__stream_out {
    once__conn conn;
    once__end end;
    int clean;                   /* the agent closed the stream in good order */
    int idle;                    /* cut by the idle timer */
    int timed_out;               /* the caller's timeout_ms passed */
    int64_t retry_after_ms;      /* -1 = none */
    long http_status;            /* of a non-stream answer; 0 = none */
    char error[512];
} once__stream_out;

/* Every event of the stream: its generation (0 if the agent does not
 * number them) and the JSON-RPC result (a StreamResponse). Set *end to stop
 * the stream. A negative return is a hard failure that ends the call. */
typedef int (*once__stream_event_fn)(void *ctx, int64_t generation, const json_t *result,
                                     once__end *end);

/* The payload of a StreamResponse (task, statusUpdate, artifactUpdate or
 * message; borrowed from result), or NULL when it has none. */
const json_t *once__stream_body(const json_t *result);
/* The answer is an event stream (HTTP 200, text/event-stream). */
int once__http_is_event_stream(const once__http_resp *r);

/* Open SubscribeToTask(task_id) at url, an endpoint of agent (its name),
 * resuming after generation `after` (> 0: Last-Event-ID), and feed fn
 * until the stream stops or timeout_ms (0 = none) passes. ONCE_OK with
 * *out filled, or ONCE_ENOMEM. */
int once__stream_subscribe(once_client *c, const char *agent, const char *url,
                           const char *task_id, int64_t after, int64_t timeout_ms,
                           once__stream_event_fn fn, void *ctx, once__stream_out *out);

/* ---------------------------------------------------------------------------
 * endpoints.c: an agent is one name in the outbox and the URLs it answers
 * at (replicas addressed directly), stored in order in the endpoints table.
 */
#define ONCE__MAX_ENDPOINTS 16

/* One call's view of an agent, on the call's stack (once__agent_close
 * frees): name keys its intents, mode cache and budget; urls are tried
 * from cur on, wrapping around. */
typedef struct once__agent {
    char *name;
    char *urls[ONCE__MAX_ENDPOINTS];
    size_t n, cur;
} once__agent;

/* spec: an agent's name, or URLs separated by commas. The name is the
 * agent the outbox knows the first of them as (by name or as an
 * endpoint), else the first URL. The URLs: the handle's preferred ones for
 * that agent (once_client_prefer) first, then spec's, then the stored
 * ones, none twice; the call starts at the first preferred one, else at
 * the one that answered last. store != 0 (a send): spec's URLs are stored
 * as the agent's first endpoints, the others kept after them. ONCE_EINVAL
 * (why in c's errmsg) for a spec with a URL the client cannot use. */
int once__agent_open(once_client *c, const char *spec, int store, once__agent *a);
void once__agent_close(once__agent *a);   /* NULL ok; zeroes */
const char *once__agent_url(const once__agent *a);
/* The URL in use failed over: the next one is in use (the same when n = 1). */
void once__agent_next(once__agent *a);
/* The URL in use answered: remembered, so the next call starts there. */
void once__agent_answered(once_client *c, const once__agent *a);
/* ONCE_OK when every URL of spec (comma-separated, at most
 * ONCE__MAX_ENDPOINTS) is one the client can use; else ONCE_EINVAL and why. */
int once__agent_spec_check(const char *spec, char *why, size_t whylen);

/* ---------------------------------------------------------------------------
 * binding.c, bind_*.c: the binding seam. Everything above speaks JSON-RPC;
 * once__a2a_do carries one A2A call over the binding the client chose.
 */

/* The interface a call goes to. */
typedef struct once__iface {
    once_binding binding;        /* JSONRPC, HTTP_JSON or GRPC (never AUTO) */
    char url[2048];              /* JSON-RPC: the endpoint; HTTP+JSON: the routes'
                                    base URL; gRPC: host:port */
    int tls;                     /* gRPC: TLS (an https:// agent, or a grpcs:// /
                                    https:// interface URL) */
} once__iface;

/* once__http_do's contract for an A2A call: q is a JSON-RPC POST (its body
 * {"jsonrpc","id","method","params"}) to the agent's endpoint q->url; r
 * gets a JSON-RPC answer as onced's JSON-RPC binding would have sent it
 * (body {"jsonrpc","id","result"|"error"}, or for a stream, on_data fed
 * SSE frames "id: <generation>\ndata: <JSON-RPC envelope>\n\n"), whatever
 * binding carried it, with status, replayed and the failure flags. agent
 * (its name) keys the card cache the binding is chosen from. */
int once__a2a_do(once_client *c, const char *agent, const once__http_req *q,
                 once__http_resp *r);

/* bind_map.c (pure). The interface for binding want (AUTO: the first the
 * client speaks) among ifaces ([[binding, url], ...], the card's order),
 * for the agent reached at endpoint: JSON-RPC is always spoken at endpoint
 * itself; an HTTP+JSON interface at the card's JSON-RPC URL is taken at
 * endpoint too (a proxy or a replica in between stays in between). AUTO
 * with none: JSON-RPC at endpoint. ONCE_ENOTFOUND when a forced binding
 * has none. */
int once__iface_pick(const json_t *ifaces, once_binding want, const char *endpoint,
                     once__iface *out);

/* An HTTP+JSON route of a JSON-RPC call (A2A 1.0 section 11): the verb,
 * the path with its query (path members and, for GET and DELETE, the
 * other scalar params as the query; a "tenant" member as the leading
 * segment), percent-encoded, appended to base; body: the params (POST),
 * else NULL. */
typedef struct once__rest_call {
    const char *verb;
    char *url;                   /* once_malloc'd */
    json_t *body;                /* new reference, or NULL */
} once__rest_call;
/* ONCE_OK; ONCE_EINVAL (method has no route, a path member missing or not
 * a string; why says which); ONCE_ENOMEM. */
int once__rest_route(const char *base, const char *method, const json_t *params,
                     once__rest_call *out, char *why, size_t whylen);
void once__rest_call_clear(once__rest_call *rc);

/* An AIP-193 error body ({"error": {code, status, message, details}}) as
 * the JSON-RPC error object onced sends for it on JSON-RPC: the code from
 * the first A2A ErrorInfo reason (spec 5.4), else once's reason for a
 * JSON-RPC code, else the status (INVALID_ARGUMENT -32602, NOT_FOUND
 * -32001, UNIMPLEMENTED -32601, other -32603); message; data the details
 * list. A new object, or NULL (not an AIP-193 body, or no memory). */
json_t *once__rpc_error_of_aip193(const json_t *body);
/* The retry delay an AIP-193 body's google.rpc.RetryInfo detail asks for
 * (gRPC's Retry-After), as Retry-After's delta-seconds (rounded up) into
 * out[0..cap); "" when there is none. */
void once__retry_after_of_aip193(const json_t *body, char *out, size_t cap);
/* {"jsonrpc":"2.0","id":id,key:value} as compact JSON text (once_malloc'd)
 * or NULL; id may be NULL (null). Steals value. */
char *once__rpc_envelope(const json_t *id, const char *key, json_t *value);

/* bind_rest.c, bind_grpc.c: the call (method, params and id taken from
 * q's body) over that binding; once__a2a_do's contract. */
int once__rest_do(once_client *c, const once__iface *f, const char *method,
                  const json_t *params, const json_t *id, const once__http_req *q,
                  once__http_resp *r);
int once__grpc_do(once_client *c, const once__iface *f, const char *method,
                  const json_t *params, const json_t *id, const once__http_req *q,
                  once__http_resp *r);
/* The handle's gRPC connections, closed. */
struct once__grpc_pool;
void once__grpc_pool_free(struct once__grpc_pool *p);

/* ---------------------------------------------------------------------------
 * The handle. Owned by one thread at a time; nothing here is shared.
 */
struct once_client {
    once__outbox *outbox;
    char *token;
    once__tls_client tls;
    once_retry_policy retry;
    once_id_kind id_kind;
    const once_clock *clock;
    const once_rng *rng;
    volatile sig_atomic_t *interrupted;
    void (*sleep_ms)(void *ctx, int64_t ms);
    void *sleep_ctx;
    void (*hook)(void *ctx, once_client_point p);
    void *hook_ctx;
    once__agent prefer;          /* once_client_prefer's; name NULL = none */
    once_binding binding;        /* once_client_config.binding */
    json_t *endpoint_cards;      /* binding.c: {endpoint URL: its interfaces}, read
                                    for endpoints other than the one the agent
                                    cache's card came from; NULL = none yet */
    struct once__grpc_pool *grpc; /* open gRPC connections, one per target
                                     (bind_grpc.c); NULL = none yet */
    char errmsg[512];
};

void once__client_seterr(once_client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int64_t once__client_now(const once_client *c);
int once__client_stopped(const once_client *c);
/* Sleep ms, returning early (ONCE_ECANCELED) when interrupted. */
int once__client_sleep(once_client *c, int64_t ms);
/* A GET of url with c's token, TLS, connect timeout and interrupt flag,
 * limited to timeout_ms. url must outlive the request. */
once__http_req once__client_get(const once_client *c, const char *url, int64_t timeout_ms);

/* ---------------------------------------------------------------------------
 * card.c: what the client takes from an agent's card.
 */
/* The card says: the idempotency extension (ext); A2A 0.3 only (v03: no
 * 1.0 interface, a 0.x one or a 0.3 card). */
void once__card_info(const json_t *card, int *ext, int *v03);
/* The card's A2A 1.0 interfaces (protocolVersion "1.0"), in its order, as
 * [[binding, url], ...] ([]: none); a new array, NULL when memory ran out. */
json_t *once__card_interfaces(const json_t *card);
/* once__card_info, and what it says stored in the agent cache, with the
 * interfaces as {"url": the endpoint whose card it is, "list": [...]}.
 * card may be NULL (none: plain 1.0, no interfaces). */
int once__card_remember(once_client *c, const char *agent, const char *url, const json_t *card,
                        int *ext, int *v03);
/* The card of the agent at url (an endpoint), read within timeout_ms and
 * parsed into *card (NULL on failure). ONCE_OK; ONCE_EIO (h says why: a
 * transport failure), ONCE_ENOTFOUND (no card there: h->status),
 * ONCE_EPARSE, ONCE_EINVAL (not an http(s) URL), ONCE_ENOMEM. h is the
 * caller's to clear. */
int once__card_fetch(once_client *c, const char *url, int64_t timeout_ms, json_t **card,
                     once__http_resp *h);
/* once__card_fetch, then once__card_remember for agent. */
int once__card_read(once_client *c, const char *agent, const char *url, once__http_resp *h);
/* Does the agent (its name: the cache's key) speak A2A 0.3 only? From the
 * outbox's fresh entry, else from its card at url, read once now (and
 * remembered); a card that cannot be read says 1.0. */
int once__agent_v03(once_client *c, const char *agent, const char *url);
/* How long a card read is trusted. */
#define ONCE__CARD_TTL_MS (10 * 60 * 1000)

/* ---------------------------------------------------------------------------
 * answer.c: filling a once_call_result from an attempt.
 */
void once__result_set_error(once_call_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* From a Task object (GetTask / CancelTask result). */
int once__result_from_task(once_call_result *r, const json_t *task);
/* From a SendMessage result {"task":…} | {"message":…}. */
int once__result_from_send(once_call_result *r, const json_t *result);
/* From a JSON-RPC error object: code, reason, state (metadata.state). */
void once__result_from_error(once_call_result *r, const json_t *error);

/* ---------------------------------------------------------------------------
 * retry.c: one call, retried by the policy.
 */
/* Between the retry loop and one attempt: the loop sets timeout_ms, the
 * attempt sets the rest. */
typedef struct once__attempt {
    int64_t timeout_ms;          /* in: this attempt's budget of time */
    const char *url;             /* in: the agent's endpoint to use */
    once__verdict verdict;       /* out */
    int64_t retry_after_ms;      /* out: -1 = none */
    int answered;                /* out: the endpoint answered (not 502/503/504) */
    int failover;                /* out: the endpoint is unreachable or unavailable
                                    (transport failure, timeout, 502/503/504): the
                                    next attempt goes to the agent's next one */
} once__attempt;

/* An attempt fills r (result or error) and a->verdict. Returns ONCE_OK or
 * a hard error (ENOMEM, ESTORE) that ends the call. */
typedef int (*once__attempt_fn)(once_client *c, void *ctx, once__attempt *a, once_call_result *r);

/* Run fn until it succeeds, is refused, fails for good, or the policy
 * (attempts, deadline, budget) says stop; each attempt goes to ag's
 * endpoint in use, and one that fails over moves it to the next.
 * r->endpoint names the URL that answered. intent > 0: attempts and errors
 * are recorded on that outbox row. */
struct once__agent;
int once__retry_run(once_client *c, struct once__agent *ag, int64_t intent, once__attempt_fn fn,
                    void *ctx, once_call_result *r);

/* One JSON-RPC call as an attempt: POST {jsonrpc,id,method,params}; on
 * success *result holds the "result" member (new reference). */
typedef struct once__rpc {   /* the caller's; inputs borrowed, result owned */
    const char *agent;           /* the agent's name (the A2A version cache's key) */
    const char *method;
    const char *params;          /* JSON text */
    int extension;
    json_t *result;              /* out */
    int answered;                /* out: an HTTP answer arrived (AFTER_SEND point) */
} once__rpc;
int once__rpc_attempt(once_client *c, once__rpc *q, once__attempt *a, once_call_result *r);

/* ---------------------------------------------------------------------------
 * send.c: deliver a pending intent (recovery), recording the answer.
 */
int once__client_deliver(once_client *c, const once__intent_row *row, once_call_result *r);

#endif /* ONCE_CLIENT_CLIENT_INT_H */
