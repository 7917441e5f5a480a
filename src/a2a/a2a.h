/*
 * a2a.h -- the A2A 1.0 codec (internal API used by src/http and apps/onced)
 * for both bindings onced serves: JSON-RPC (POST of one request object) and
 * HTTP+JSON (a route per method, rest.c). One HTTP request in, one HTTP
 * response out; the codec never touches the network or the store. Both
 * bindings run the same method table and handlers; only the envelope
 * differs.
 *
 * Data flows http -> a2a -> backend (the engine). The backend is a small
 * table of function pointers so the codec can be unit-tested with a fake
 * engine; a2a_engine.c binds it to a real once__engine.
 *
 * Wire decisions (documented in docs/protocol.md):
 *   - batch requests (a JSON array) are refused with -32600;
 *   - notifications (no "id") are refused with -32600: every A2A method has
 *     a result the client needs;
 *   - JSON nested deeper than ONCE_JSON_MAX_DEPTH (64), invalid UTF-8 and
 *     duplicate object keys are -32700: the parser refuses the document;
 *   - by-position params (an array) are -32602.
 * Thread-safe: once__a2a_handle may run on many threads at once.
 */
#ifndef ONCE_A2A_A2A_H
#define ONCE_A2A_A2A_H

#include <jansson.h>

#include "engine/engine.h"
#include "engine/push.h"
#include "once/once.h"

#define ONCE_A2A_EXTENSION_URI ONCE_IDEMPOTENCY_EXTENSION
#define ONCE_A2A_MAX_PARTS 64
/* ErrorInfo domains: A2A's own error types (A2A 1.0 section 9.5), and once's
 * reasons (docs/wire.md, "Errors"). */
#define ONCE_A2A_ERROR_DOMAIN "a2a-protocol.org"
#define ONCE_ERROR_DOMAIN "once"
#define ONCE_A2A_PROTOCOL_VERSION "1.0"
/* The A2A 0.3 interface (h_v03.c), as the card names its version. */
#define ONCE_A2A_V03_VERSION "0.3"

/* JSON-RPC and A2A 1.0 error codes. */
enum {
    ONCE_RPC_PARSE_ERROR = -32700,
    ONCE_RPC_INVALID_REQUEST = -32600,
    ONCE_RPC_METHOD_NOT_FOUND = -32601,
    ONCE_RPC_INVALID_PARAMS = -32602,
    ONCE_RPC_INTERNAL = -32603,
    ONCE_RPC_TASK_NOT_FOUND = -32001,
    ONCE_RPC_TASK_NOT_CANCELABLE = -32002,
    ONCE_RPC_PUSH_NOT_SUPPORTED = -32003,
    ONCE_RPC_UNSUPPORTED_OPERATION = -32004,
    ONCE_RPC_CONTENT_TYPE_NOT_SUPPORTED = -32005,
    ONCE_RPC_EXTENDED_CARD_NOT_CONFIGURED = -32007,
    ONCE_RPC_VERSION_NOT_SUPPORTED = -32009
};

/* What the codec needs from the engine. Same contracts as the once__engine_*
 * functions in engine/engine.h (ctx is the first argument). stats and
 * set_clock_offset are optional (NULL). */
typedef struct once__a2a_backend {
    void *ctx;
    int (*send)(void *ctx, const once_send_req *req, once_send_res *res);
    int (*get)(void *ctx, const char *principal, const char *task_id, int history_length,
               json_t **task, int64_t *expired_at);
    int (*cancel)(void *ctx, const char *principal, const char *task_id, json_t **task,
                  once_state *state, int64_t *expired_at);
    int (*list)(void *ctx, const once_list_req *req, json_t **tasks, char next_token[256]);
    /* Add engine counters to obj (admin stats). */
    void (*stats)(void *ctx, json_t *obj);
    /* The cluster view (once__engine_replicas_json). Optional: without it
     * once/admin/replicas answers an empty list. */
    int (*replicas)(void *ctx, json_t **out);
    /* Expired leases, and an operator's release of one
     * (once__engine_leases_json, once__engine_take_over_now). Optional:
     * without them those methods answer -32004. */
    int (*leases)(void *ctx, json_t **out);
    int (*release)(void *ctx, const char *principal, const char *task_id, int64_t *fence);
    /* Following a task's events (once__engine_events_after,
     * once__engine_task_head, once__engine_wait_generation). Optional:
     * without all three, streaming methods answer -32004 and the card says
     * streaming: false. */
    int (*events)(void *ctx, const char *principal, const char *task_id, int64_t after,
                  size_t max, once_event_list *out);
    int (*head)(void *ctx, const char *principal, const char *task_id, int64_t *generation,
                once_state *state);
    int (*wait)(void *ctx, const char *principal, const char *task_id, int64_t gen,
                int64_t timeout_ms, const once__wait_stop *stop);
    /* Deferred blocking sends (once__engine_await, once__engine_await_release,
     * once__engine_send_answer). Optional: without all three a blocking
     * SendMessage waits in `send` on the calling thread. */
    int (*await)(void *ctx, const char *principal, const char *task_id, int64_t gen,
                 uint64_t seq, int64_t until, void (*ready)(void *arg, once_record *rec),
                 void *arg);
    void (*await_release)(void *ctx);
    int (*send_answer)(void *ctx, const char *principal, const char *task_id,
                       const once_record *rec, int history_length, once_send_res *res);
    /* Push notification configs (engine/push.h, same contracts). Optional:
     * without all four the config methods answer -32003 and the card says
     * pushNotifications: false. `status` asks for the "delivery" member. */
    int (*push_create)(void *ctx, const char *principal, const json_t *config, int status,
                       json_t **out, once_push_res *res);
    int (*push_get)(void *ctx, const char *principal, const char *task_id, const char *id,
                    int status, json_t **out, once_push_res *res);
    int (*push_list)(void *ctx, const char *principal, const char *task_id, int status,
                     json_t **out, once_push_res *res);
    int (*push_delete)(void *ctx, const char *principal, const char *task_id, const char *id,
                       once_push_res *res);
    /* Watching a task without a thread (once__engine_watch_add and _remove,
     * same contracts; *handle is the watch). Optional: without both, a
     * stream learns of local writes only by polling. */
    int (*watch)(void *ctx, const char *principal, const char *task_id, void (*fn)(void *arg),
                 void *arg, void **handle);
    void (*unwatch)(void *ctx, void *handle);
    /* once__engine_follow_poll_ms: 0 while a watch is also told of other
     * replicas' writes. Optional with watch: without it, a watcher polls. */
    int64_t (*follow_poll_ms)(void *ctx);
} once__a2a_backend;

/* Bind a backend to a running engine (a2a_engine.c). */
void once__a2a_backend_engine(once__engine *e, once__a2a_backend *out);

typedef struct once__a2a_config {
    once__a2a_backend backend;
    const char *url;             /* the card's interface URL, "http://host:port/" */
    const char *grpc_url;        /* the gRPC interface's, "host:port"; NULL = none */
    const char *name;            /* card name; NULL = "once" */
    const char *description;     /* NULL = a default */
    const char *skill_id;        /* NULL = "agent" */
    const char *skill_description;
    int64_t retention_ms;        /* advertised in the extension params */
    int64_t tombstone_ms;
    int auth;                    /* bearer auth configured: card says so */
    int test_admin;              /* the test-only once/admin/ methods exist */
    /* Who may call the operator methods (once/admin/replicas ...): a comma
     * separated list of principals (--admin-principals); NULL or "" =
     * nobody, so they answer 403 until an operator names someone. Without
     * --auth-tokens every caller is "anonymous", which must be named
     * explicitly to open them to anyone who reaches the port. */
    const char *admin_principals;
    once_offset_clock *clock;    /* what once/admin/setClockOffset moves; may be NULL */
    size_t max_parts;            /* 0 = ONCE_A2A_MAX_PARTS */
    int64_t wait_ms;             /* blocking SendMessage bound; 0 = engine default */
    /* What --card describes (once__a2a_card_parse), laid over the defaults
     * above; borrowed until once__a2a_new returns. NULL = the defaults. */
    const json_t *card;
} once__a2a_config;

typedef struct once__a2a once__a2a;

/* cfg strings are copied. */
int once__a2a_new(const once__a2a_config *cfg, once__a2a **out);
void once__a2a_free(once__a2a *a);   /* NULL ok */

/* One HTTP request as the HTTP layer saw it. Strings are borrowed for the
 * duration of once__a2a_handle. */
typedef struct once__a2a_request {
    const char *principal;       /* authenticated principal, never NULL */
    const char *version;         /* A2A-Version header or query parameter; NULL = absent */
    const char *extensions;      /* A2A-Extensions header; NULL = absent */
    const char *body;
    size_t len;
    const char *last_event_id;   /* Last-Event-ID header (SSE resume); NULL = absent */
    struct once__a2a_stream_slots *slots; /* the server's stream budget; NULL = no limit */
    int defer;                   /* the caller can take a deferred answer (below) */
    int hold;                    /* the caller can take a held answer (below) */
    /* The caller's thread must not wait for a store write (a libmicrohttpd
     * thread): a call that would write synchronously, or wait for room in
     * the turn queue, returns ONCE__EAGAIN with nothing written and resp
     * untouched, and the caller runs it again on a thread that may wait.
     * SendMessage (a replay, a refusal, a new task that finishes at once,
     * with `hold`) and GetTask run; every other method is ONCE__EAGAIN. */
    int inline_only;
} once__a2a_request;

/* The answer. body is once_malloc'd JSON (free with once__a2a_response_clear). */
typedef struct once__a2a_response {
    int http_status;             /* 200, or 503 for retryable store errors, ... */
    char *body;
    size_t len;
    int replayed;                /* send "Idempotent-Replayed: true" */
    int retry_after;             /* seconds; 0 = no Retry-After header */
    int extension;               /* echo "A2A-Extensions: <our URI>" */
    const char *allow;           /* 405: the Allow header (static); NULL = "POST" */
    /* Non-NULL: answer with an SSE stream (text/event-stream); body is then
     * NULL. The HTTP layer takes it (sets it NULL) and drives it. */
    struct once__a2a_stream *stream;
    /* Non-NULL (only when the request set `defer`): a blocking send waits
     * for its task; body is NULL. The HTTP layer takes it (sets it NULL),
     * arms it and finishes it (below). */
    struct once__a2a_deferred *deferred;
    /* Non-NULL (only when the request set `hold`): body is the answer of a
     * new task that is not stored yet. The HTTP layer takes it (sets it
     * NULL) and starts its write (once__engine_held_start); it sends body
     * only if the write landed, else runs the request again without
     * `hold`. Cleared (dropped, nothing written) with the response. */
    struct once__held *held;
} once__a2a_response;

void once__a2a_response_clear(once__a2a_response *r);   /* NULL ok */

/* Handle one request body. Always produces a response (ONCE_OK), except
 * ONCE_ENOMEM when not even an error body could be built. */
int once__a2a_handle(once__a2a *a, const once__a2a_request *req, once__a2a_response *resp);
/* 1 if principal may call the operator methods (--admin-principals). */
int once__a2a_is_admin(const once__a2a *a, const char *principal);

/* The two bindings (A2A 1.0 sections 9 and 11). */
typedef enum once__a2a_binding {
    ONCE_A2A_JSONRPC = 0,
    ONCE_A2A_HTTP_JSON = 1
} once__a2a_binding;

/* An error response the HTTP layer raises itself (body too large,
 * unauthenticated, bad content type): {"jsonrpc":"2.0","id":null,"error":...}
 * with an ErrorInfo carrying reason. */
int once__a2a_error_response(int http_status, int code, const char *reason, const char *message,
                            once__a2a_response *resp);
/* The same in the shape of binding b: for HTTP+JSON the AIP-193 body
 * {"error": {"code": http_status, "status", "message", "details": [ErrorInfo]}}
 * (code is then unused). */
int once__a2a_error_response_as(once__a2a_binding b, int http_status, int code, const char *reason,
                               const char *message, once__a2a_response *resp);

/* ---------------------------------------------------------------------------
 * HTTP+JSON (rest.c): a route table maps (HTTP method, path) onto the rows
 * of the JSON-RPC method table; path parameters, query parameters and the
 * body become the same params object a JSON-RPC call carries, and the
 * result (or error) is written without the JSON-RPC envelope.
 */
typedef struct once__a2a_rest_request {
    once__a2a_request base;       /* body: empty for GET and DELETE */
    const char *method;          /* "GET", "POST", "DELETE", ... */
    const char *path;            /* below the interface's base path: "/tasks/t-1" */
    const char *const *query;    /* decoded name, value, name, value, ..., NULL; NULL = none */
} once__a2a_rest_request;

/* ---------------------------------------------------------------------------
 * gRPC (grpc.c): the service's method name (the last element of the call's
 * path) and the request message as ProtoJSON (params, borrowed) run the
 * JSON-RPC table's row of that name; the answer is in HTTP+JSON's shape
 * (see grpc.c). req->version is the a2a-version metadata entry (the gRPC
 * layer passes "1.0" when it is absent: the service's package is 1.0's). A
 * name that is not one of A2A 1.0's methods is an AIP-193 error with
 * status UNIMPLEMENTED. Same contract as once__a2a_handle. */
int once__a2a_grpc_handle(once__a2a *a, const once__a2a_request *req, const char *method,
                          json_t *params, once__a2a_response *resp);

/* 1 if some route has this path (whatever the method): the HTTP layer
 * sends such requests to once__a2a_rest_handle. */
int once__a2a_rest_known(const char *path);

/* Handle one HTTP+JSON request. Same contract as once__a2a_handle; an
 * unknown path is a 404, a known path with another method a 405 (with
 * resp->allow), both in the AIP-193 shape. */
int once__a2a_rest_handle(once__a2a *a, const once__a2a_rest_request *req, once__a2a_response *resp);

/* Check the text of a --card file: a JSON object with only the members an
 * operator describes (name, description, provider, version,
 * documentationUrl, iconUrl, skills, defaultInputModes,
 * defaultOutputModes), each of the AgentCard's type. The members onced
 * owns (supportedInterfaces, capabilities, securitySchemes, ...) and
 * unknown ones are refused. *out: a new reference for
 * once__a2a_config.card. ONCE_EINVAL (or ONCE_EPARSE) with err naming the
 * field ("skills[1].id"), ONCE_ENOMEM. */
int once__a2a_card_parse(const char *text, size_t len, json_t **out, char *err, size_t errlen);
/* The gateway's card members from the upstream card's text (onced
 * --upstream): its descriptive members as --card would give them (a member
 * a card file could not hold is dropped), plus its securitySchemes and
 * securityRequirements. */
int once__a2a_card_from_upstream(const char *text, json_t **out, char *err, size_t errlen);

/* ---------------------------------------------------------------------------
 * Deferred answers: a blocking SendMessage whose task has not settled waits
 * without holding a thread. The codec applies the send and returns a
 * once__a2a_deferred; the caller arms it and, once ready, finishes it on a
 * thread that may block (one store read), which fills the response the
 * call would have had.
 */
typedef struct once__a2a_deferred once__a2a_deferred;

/* ready(arg) is called once, from the engine's thread (it must not block),
 * when the task settled, the wait's bound passed, or waits are released.
 * ONCE_OK; otherwise ready is never called and the caller finishes at once
 * (the answer is then the task as it stands: the task already settled,
 * wait limits reached, or the server stops). */
int once__a2a_deferred_arm(once__a2a_deferred *d, void (*ready)(void *arg), void *arg);
/* Build the answer into resp (as once__a2a_handle would) and free d. Same
 * return as once__a2a_handle. */
int once__a2a_deferred_finish(once__a2a_deferred *d, once__a2a_response *resp);
/* Free without answering. NULL ok. */
void once__a2a_deferred_free(once__a2a_deferred *d);
/* Fire every armed wait now and refuse new ones (a server that stops):
 * on return every ready callback has returned. */
void once__a2a_release_waits(once__a2a *a);

/* The agent card JSON as built at once__a2a_new (valid for a's lifetime;
 * what is served may have changed since: once__a2a_card_with). */
const char *once__a2a_card(const once__a2a *a, size_t *len);
/* The card a would build with other descriptive members (once__a2a_config
 * .card: a gateway's refreshed upstream card); everything else as at
 * once__a2a_new. *out is the caller's (once_free). */
int once__a2a_card_with(const once__a2a *a, const json_t *members, char **out, size_t *len);

/* Per-method counters: the i-th table row's name, calls and error answers.
 * ONCE_ERANGE past the end. */
int once__a2a_method_stats(const once__a2a *a, size_t i, const char **name, uint64_t *calls,
                          uint64_t *errors);

/* 1 if the A2A-Extensions header value (comma-separated URIs) names
 * ONCE_A2A_EXTENSION_URI. NULL -> 0. */
int once__a2a_extension_active(const char *header);

/* ---------------------------------------------------------------------------
 * Streaming (h_stream.c): SendStreamingMessage and SubscribeToTask.
 *
 * The codec validates the call, applies the send (or checks the task) and
 * hands the HTTP layer a once__a2a_stream: a cursor over the task's stored
 * events that formats whole SSE frames,
 *     id: <generation>\ndata: {"jsonrpc":"2.0","id":<rpc id>,"result":<StreamResponse>}\n\n
 * (HTTP+JSON: "data: <StreamResponse>").
 * The cursor holds no events in memory: every read goes to the store after
 * the last generation it produced, so the HTTP layer decides how much it
 * buffers. It ends after the first terminal or interrupted status (or a
 * direct Message) at or past the task's generation when the stream opened.
 * A cursor is used by one thread at a time.
 */
typedef struct once__a2a_stream once__a2a_stream;

/* How many streams one server runs at once, in all and per principal.
 * `used` is changed only with __atomic builtins (a stream holds one unit
 * from the call that opens it until once__a2a_stream_free); the rest is
 * fixed. The per-principal counts are the owner's (the HTTP layer's hub):
 * share_take counts one more stream of principal and returns 1 while it
 * held fewer than `share`, else returns 0 counting nothing; share_give
 * counts one less. NULL hooks: no shares. */
typedef struct once__a2a_stream_slots {
    long used;
    long max;                    /* <= 0: no limit */
    long share;                  /* one principal's share (the refusal names it) */
    int (*share_take)(struct once__a2a_stream_slots *s, const char *principal);
    void (*share_give)(struct once__a2a_stream_slots *s, const char *principal);
} once__a2a_stream_slots;

/* Append the frames of at most max events (max >= 1) to a fresh
 * once_malloc'd text (*out; NULL and *len 0 when there is nothing new).
 * *done = 1 once the frame that ends the stream has been produced; nothing
 * follows it. ONCE_OK, ONCE_ENOMEM, or a store error (retryable: end the
 * stream with once__a2a_stream_error; the client resumes by Last-Event-ID). */
int once__a2a_stream_read(once__a2a_stream *s, size_t max, char **out, size_t *len, int *done);

/* Block up to timeout_ms until a read may find something new. ONCE_OK,
 * ONCE_ETIMEDOUT, ONCE_ECLOSED (the engine stops), ONCE_ECANCELED (stop,
 * NULL ok, said so), or a store error. */
int once__a2a_stream_wait(once__a2a_stream *s, int64_t timeout_ms, const once__wait_stop *stop);

/* A last frame for a stream that must end early: a JSON-RPC error response
 * (no "id:" line, so Last-Event-ID still names the last event sent).
 * *out is once_malloc'd; NULL on ENOMEM. */
int once__a2a_stream_error(once__a2a_stream *s, int rc, char **out, size_t *len);

/* The cursor's last generation produced (tests, logs). */
int64_t once__a2a_stream_position(const once__a2a_stream *s);

/* Free the cursor and give its slot back. NULL ok. */
void once__a2a_stream_free(once__a2a_stream *s);

/* Call fn(arg) after every write this process makes to the cursor's task,
 * from the writing thread under the engine's lock (fn must not block nor
 * call the codec or the engine): a read may then find something new.
 * Other replicas' writes call it too while once__a2a_stream_poll_ms is 0;
 * else they are the caller's to poll for (a read finds them).
 * ONCE_OK with *handle (NULL: the backend cannot watch, or the stream has
 * no task: poll), or ONCE_ENOMEM / ONCE_ECLOSED. Remove the watch with
 * once__a2a_stream_unwatch before freeing the cursor. */
int once__a2a_stream_watch(once__a2a_stream *s, void (*fn)(void *arg), void *arg, void **handle);
/* Remove a watch; after this fn is never called again. NULL handle ok. */
void once__a2a_stream_unwatch(once__a2a_stream *s, void *handle);
/* How often the holder of watch (NULL: none) must read the stream to see
 * other replicas' writes: 0 while the watch is told of them, else
 * `polling` (the holder's own interval). Asked after every read: when it
 * changes, the watch is called. */
int64_t once__a2a_stream_poll_ms(const once__a2a_stream *s, const void *watch, int64_t polling);

/* 1 if the A2A-Version value asks for 1.0 ("1.0", or "1.0.x": patch
 * numbers do not count). NULL or empty -> 0 (means 0.3). */
int once__a2a_version_ok(const char *v);

#endif /* ONCE_A2A_A2A_H */
