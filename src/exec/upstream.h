/*
 * upstream.h -- internals of the gateway executor (onced --upstream URL):
 * each turn of a once task talks A2A 1.0, as an ordinary client, to an
 * existing agent. Not API; the constructor is in include/once/executor.h.
 *
 *   upstream.c       the executor: the upstream card, the binding, what the
 *                    upstream offers for re-attaching (the rung), the ids
 *   upstream_card.c  the card read over HTTP (at start and by the refresh
 *                    thread, If-None-Match), and the gateway's readiness
 *   upstream_call.c  one upstream call on either binding (JSON-RPC, HTTP+JSON),
 *                    retried with the client's backoff, policy and budget
 *   upstream_stream.c the receiving end of a streamed call (SSE through
 *                    src/client's parser), one event at a time
 *   upstream_turn.c  one turn: the recovery ladder, the send, following the
 *                    upstream task (stream or poll), cancel
 *   upstream_map.c   an upstream Task or Message mapped to fenced writes
 *
 * The recovery ladder (what makes a re-run turn find its upstream task):
 *   rung 1  the upstream declares urn:once:a2a:idempotency:v1: the gateway
 *           mints the upstream task ID (once_child_id) and a re-send replays;
 *   rung 2  the upstream keeps our contextId and serves ListTasks: a re-run
 *           looks its task up by (derived contextId, derived messageId);
 *   rung 3/4 anything else (no extension, ListTasks refused by the probe at
 *           start or our contextId not kept): the message is re-sent with the
 *           same derived messageId. An upstream that dedups messageId replays
 *           it (rung 3: still one upstream task); any other makes a second
 *           task (rung 4). The gateway cannot tell the two apart (nothing in
 *           a card says "dedups messageId", and a replayed answer looks like
 *           a new one), so every such re-send is counted alike
 *           (once_gateway_unverified_resends_total): at rung 4 it is the
 *           number of duplicated upstream tasks, at rung 3 it counts re-sends
 *           that duplicated nothing.
 *
 * Streams: when the card says capabilities.streaming, sends are
 * SendStreamingMessage and a known task is followed by SubscribeToTask
 * (upstream_stream.c receives, upstream_turn.c maps); a stream that breaks
 * before its first event named the task is a lost answer like any other
 * (the rung's look-up before a re-send), one cut later is re-attached.
 *
 * The checkpoint (JSON, fenced like every write): {"upstream": {"rung": R,
 * "taskId": ID or absent, "contextId": C, "sent": [messageId...], "pending":
 * messageId or absent}}. "pending" is written before a send whose answer is
 * not stored yet, so a re-run knows whether that send may have happened;
 * taskId is written as soon as an answer names it, before any other write.
 */
#ifndef ONCE_EXEC_UPSTREAM_H
#define ONCE_EXEC_UPSTREAM_H

#include <pthread.h>

#include <jansson.h>

#include "client/client_int.h"
#include "once/executor.h"

/* The longest ETag kept (the client's once__http_resp.etag). */
#define GW_ETAG_MAX 128

typedef enum gw_binding {
    GW_JSONRPC = 1,
    GW_REST
} gw_binding;

/* The executor's context. Everything is set by once_executor_upstream and
 * read-only afterwards, except the retry budget, which turns share under
 * mu, and the card refresh's state (upstream_card.c): `why` and `stopping`
 * under cmu (readiness is asked from HTTP threads); etag and seen belong to
 * the thread that reads the card (the constructor, then the refresh
 * thread); refresh_ms, on_card, refresher and refreshing to the caller of
 * the refresh's start and stop (one thread: onced's main). */
typedef struct gw {
    char *url;                   /* as configured (named in every error) */
    char *endpoint;              /* the chosen interface: its path under url's origin */
    gw_binding binding;
    int streaming;               /* card: capabilities.streaming */
    int v03;                     /* card: A2A 0.3 only (JSON-RPC): every call under
                                    0.3's names and shapes (upstream_call.c) */
    int ext;                     /* card: the idempotency extension (rung 1) */
    int lists;                   /* ListTasks answered at start (rung 2 possible) */
    char **headers;              /* "Name: value" lines for every request */
    size_t nheaders;
    char *principal_header;      /* NULL = the principal is not sent */
    once_retry_policy retry;
    int64_t poll_max_ms;
    char *card;                  /* the upstream card's text as read at start */
    pthread_mutex_t mu;
    once__bucket budget;
    /* The card refresh. */
    pthread_mutex_t cmu;
    pthread_cond_t ccv;          /* wakes the refresh thread's naps on stop */
    int stopping;                /* the refresh thread must end */
    char why[600];               /* "" = ready; else why the upstream is not */
    char *etag;                  /* the card's last ETag, NULL = none given */
    char *seen;                  /* the card text last taken; NULL = card */
    int64_t refresh_ms;
    once_upstream_card_fn on_card;
    void *on_card_arg;
    pthread_t refresher;
    int refreshing;              /* refresher runs (join it) */
} gw;

/* ---------------------------------------------------------------------------
 * upstream_call.c
 */

/* One event of a streamed call: the StreamResponse (its "task",
 * "statusUpdate", "artifactUpdate" or "message" member), as it arrives.
 * Return 0 to read on, 1 to end the stream (the turn is over), or a
 * negative error, which also ends it (kept by the callback's context). */
typedef int (*gw_event_fn)(void *ctx, const json_t *ev);

/* One call's request: the A2A method (its JSON-RPC name) and params. */
typedef struct gw_req {
    const char *method;          /* SendMessage, SendStreamingMessage, GetTask,
                                    SubscribeToTask, ListTasks, CancelTask */
    const json_t *params;
    gw_event_fn on_event;        /* set for the two streamed methods */
    void *event_ctx;
    int (*stop)(void *ctx);      /* polled while a stream is open: nonzero aborts
                                    it (a canceled turn); ctx is event_ctx */
    const char *principal;       /* sent in g->principal_header, or NULL */
    int extension;               /* send A2A-Extensions (rung 1) */
    int despite_cancel;          /* retry on after the turn was canceled */
    int once_only;               /* a send: a failure after which the upstream may
                                    have acted is returned (ONCE_EBUSY), not retried */
} gw_req;

/* Its outcome. ONCE_OK: result holds the answer (a new reference). Else
 * error says what happened, naming the upstream URL: ONCE_EIO the upstream
 * refused (code: its JSON-RPC code, or the HTTP status of HTTP+JSON),
 * ONCE_ETIMEDOUT the retries ran out, ONCE_ECANCELED the turn was canceled
 * while waiting, ONCE_EBUSY (once_only) the request may have reached the
 * upstream and its answer was lost, ONCE_ENOMEM. */
typedef struct gw_res {
    json_t *result;
    int code;
    int streamed;                /* ONCE_OK of a streamed call: the event stream
                                    opened (result is NULL; the events went to
                                    on_event), and ended as `cut` says */
    int cut;                     /* it ended without a close in good order: cut,
                                    idle, an error event, or stopped by `stop` */
    char error[600];
} gw_res;

int once__gw_call(gw *g, once_work *w, const gw_req *q, gw_res *r);
/* A result (or a streamed event) of method from a 0.3 upstream, in its 1.0
 * form; from any other upstream, the value itself. A new reference, or
 * NULL (no memory). */
json_t *once__gw_v03_in(const gw *g, const char *method, const json_t *v);
void once__gw_res_clear(gw_res *r);
/* The headers of one request: g's, extra (one "Name: value" line, or NULL)
 * and the principal's line (once_free the array and line). */
int once__gw_headers(const gw *g, const char *principal, const char *extra, const char ***out,
                     size_t *n, char **line);

/* ---------------------------------------------------------------------------
 * upstream_card.c: the upstream's card over HTTP, and its refresh.
 */

/* One read of the card (GET <origin>/.well-known/agent-card.json with g's
 * headers, and If-None-Match: etag unless NULL), asked again with backoff
 * while nothing answers or the answer is a 5xx, up to a few attempts.
 * ONCE_OK: *status is the HTTP status, *card the parsed object of a 200
 * (a new reference; NULL for any other answer, with err saying what came),
 * etag_out the ETag it carried ("" = none; GW_ETAG_MAX bytes).
 * ONCE_EIO: no answer or
 * a 5xx after the attempts, err says which, naming the upstream and the
 * card's URL. ONCE_ECANCELED: the refresh was stopped meanwhile.
 * ONCE_ENOMEM. */
int once__gw_card_get(gw *g, const char *etag, long *status, json_t **card, char *etag_out,
                      char *err, size_t errlen);
/* The refresh's lock and condition variable, ready before any read. */
int once__gw_card_init(gw *g);
/* Stop the refresh thread (if it runs) and free what the refresh holds;
 * then the lock. */
void once__gw_card_clear(gw *g);

/* ---------------------------------------------------------------------------
 * upstream_stream.c: the receiving end of one streamed attempt, between
 * src/client's HTTP code (on_data) and its SSE parser. Lives on the
 * attempt's stack.
 */
typedef struct gw_sink {
    const gw *g;
    const gw_req *q;
    gw_res *r;
    once__sse sse;
    int decided, is_sse;         /* the answer's kind is known; an event stream */
    char *body;                  /* a non-stream answer (an error), capped */
    size_t len, cap;
    int hard;                    /* the callback's error, or ONCE_ENOMEM */
    int broken;                  /* an error event or one that was not a StreamResponse */
} gw_sink;

/* Point hq's streaming fields at k. */
void once__gw_sink_arm(gw_sink *k, const gw *g, const gw_req *q, gw_res *r, once__http_req *hq);
/* After once__http_do returned rc into h: 1 when an event stream opened
 * (r->streamed and r->cut set), 0 for an ordinary answer (its body moved
 * into h->body, to be judged like any call's), or a negative error (the
 * callback's, ONCE_ENOMEM). Frees what k holds. */
int once__gw_sink_done(gw_sink *k, int rc, once__http_resp *h);

/* ---------------------------------------------------------------------------
 * upstream_map.c: what the once task shows, and the writes that bring it to
 * the upstream task's state. Only the turn's thread touches it.
 */
typedef struct gw_view {
    once_state state;            /* the once task's state as last written or read */
    json_t *arts;                /* artifactId -> the artifact as last written */
    char *status_mid;            /* messageId of the last status message written */
    int writes;                  /* writes made so far (a look that changed something) */
    const char *url;             /* named in the reasons it writes */
} gw_view;

int once__gw_view_init(gw_view *v, once_work *w, const char *url);
void once__gw_view_clear(gw_view *v);
/* Bring the once task to the upstream Task's state. 1 when the turn ends
 * (an interrupted or terminal state was written), 0 to keep following, or
 * a write's error (ONCE_EFENCED: stop). */
int once__gw_sync_task(gw_view *v, once_work *w, const json_t *task);
/* A streamed TaskStatusUpdateEvent (its status), as once__gw_sync_task. */
int once__gw_sync_status(gw_view *v, once_work *w, const json_t *status, const char *up_id);
/* A streamed TaskArtifactUpdateEvent: a chunk appended (append, lastChunk)
 * to the artifact the view holds, else the artifact written whole. */
int once__gw_sync_chunk(gw_view *v, once_work *w, const json_t *ev);
/* A direct Message answer: the turn's reply. */
int once__gw_reply(gw_view *v, once_work *w, const json_t *msg);
/* Fail the once task with the upstream's error. */
int once__gw_fail(once_work *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---------------------------------------------------------------------------
 * upstream_turn.c
 */
int once__gw_run(const once_executor *ex, once_work *w);
/* 1 when ex was made by once_executor_upstream (once_executor_free). */
int once__exec_is_upstream(const once_executor *ex);

#endif /* ONCE_EXEC_UPSTREAM_H */
