/*
 * a2a_int.h -- what the files of src/a2a share and nothing else sees: the
 * bounded JSON reader/writer, parameter validators, the per-call state the
 * method handlers fill, the method table and the 0.1 conversions.
 *
 * Validators are pure (no engine, no I/O) so the unit tests drive them
 * directly. A validator returns ONCE_OK, or ONCE_EINVAL with an a2a_verr
 * naming the offending field ("message.parts[2].raw") and saying why.
 */
#ifndef ONCE_A2A_A2A_INT_H
#define ONCE_A2A_A2A_INT_H

#include <stdarg.h>

#include "a2a/a2a.h"
#include "core/shape.h"

/* ---------------------------------------------------------------------------
 * Bounded JSON text I/O.
 */

/* Parse buf[0..n) as one JSON value. Refuses nesting deeper than
 * ONCE_JSON_MAX_DEPTH (ONCE_ERANGE, checked before jansson sees the text),
 * malformed JSON, invalid UTF-8, NUL bytes and duplicate keys (ONCE_EPARSE);
 * ONCE_ENOMEM when memory ran out (never a parse error: the request may
 * well be fine). why (may be NULL) receives a human description. */
int once__a2a_json_parse(const char *buf, size_t n, json_t **out, char *why, size_t whylen);

/* in as valid UTF-8 into out (cap bytes, NUL included): each byte that
 * starts no valid sequence becomes '?'; cut at a whole sequence. */
void once__a2a_utf8_clean(const char *in, char *out, size_t cap);
/* 1 if s[0..n) is valid UTF-8 without NUL bytes (text a JSON string may hold). */
int once__a2a_utf8_valid(const char *s, size_t n);

/* Serialise v compactly into a fresh once_malloc'd NUL-terminated buffer. */
int once__a2a_json_dump(const json_t *v, char **out, size_t *len);

/* ---------------------------------------------------------------------------
 * Validation.
 */
/* The first refusal a validator found: the field path and why (the shape
 * core/shape.c reports in, so its refusals pass through unchanged). */
typedef once__shape_err a2a_verr;

#define once__a2a_verr once__shape_fail

/* Rename every member of params (in place, nested objects too, free-form
 * metadata and data excepted) from its proto name (task_id) to its ProtoJSON
 * name (taskId), as ProtoJSON readers accept both (names.c). ONCE_EINVAL
 * with e naming the field when an object holds both spellings of one field;
 * ONCE_ENOMEM. */
int once__a2a_json_names(json_t *params, a2a_verr *e);

/* A client-supplied value (data, metadata) nests at most ONCE_VALUE_MAX_DEPTH
 * deep (core/json_depth.h says why). */
int once__a2a_check_depth(const json_t *v, const char *field, a2a_verr *e);

/* ID fields (taskId, contextId, messageId, referenceTaskIds[i]): a string
 * that passes once_id_valid(). */
int once__a2a_check_id(const json_t *v, const char *field, a2a_verr *e);

/* A client Message: object; messageId (required unless legacy), role
 * ROLE_USER ("user" too when legacy), parts non-empty array of at most
 * max_parts valid parts; optional taskId, contextId (IDs), metadata
 * (object), extensions (array of strings), referenceTaskIds (array of IDs).
 * field is the path prefix used in errors ("message"). */
int once__a2a_check_message(const json_t *msg, const char *field, int legacy, size_t max_parts,
                        a2a_verr *e);

/* historyLength: absent -> *out = -1; else an integer 0..INT32_MAX. */
int once__a2a_check_history(const json_t *v, const char *field, int *out, a2a_verr *e);

/* Parse RFC 3339 ("2026-12-02T12:00:00Z", fractional seconds and numeric
 * offsets allowed) to ms since the epoch. ONCE_OK or ONCE_EINVAL. */
int once__a2a_parse_time(const char *s, int64_t *ms);

/* ---------------------------------------------------------------------------
 * The A2A 0.3 form a call is answered in (h_v03.c): none (a 1.0 call), the
 * 0.3 JSON-RPC objects (core/v03.h), or, on 0.3's HTTP+JSON routes, the
 * JSON mapping of 0.3's proto (core/v03_proto.h). True exactly when the
 * call is a 0.3 one, whichever form.
 */
typedef enum a2a_v03 {
    A2A_V03_NO = 0,
    A2A_V03_RPC = 1,
    A2A_V03_PROTO = 2
} a2a_v03;

/* ---------------------------------------------------------------------------
 * One JSON-RPC call in progress. The dispatcher owns it; a handler reads
 * params and either sets result (ONCE_OK) or fails with once__a2a_fail().
 */
struct a2a_method;

typedef struct a2a_call {
    once__a2a *a;
    const once__a2a_request *req;
    const struct a2a_method *m;
    json_t *params;          /* borrowed; an object (empty when absent) */
    once__a2a_binding binding; /* the envelope of the answer (and of stream frames) */
    int extension;           /* idempotency extension active */
    a2a_v03 v03;             /* an A2A 0.3 call: set by once__a2a_run for the 0.3 rows */
    /* success */
    json_t *result;          /* new reference */
    char *result_text;       /* or the result as JSON text, once_malloc'd (SendMessage) */
    int tree_result;         /* set by a caller of a handler that reads result after it */
    int replayed;
    /* failure (set by once__a2a_fail) */
    int code;
    const char *reason;      /* static string */
    char message[320];
    json_t *meta;            /* ErrorInfo metadata (string values) */
    int oom;                 /* building the error ran out of memory */
    int http_status;
    int retry_after;
    /* streaming (h_stream.c) */
    json_t *id;              /* borrowed: the request's JSON-RPC id */
    once__a2a_stream *stream; /* set by a streaming handler on success */
    once__a2a_deferred *deferred; /* set by a blocking send left to wait */
    once__held *held;        /* set by a send whose task is not stored yet (a2a.h) */
} a2a_call;

/* A blocking send waiting for its task (a2a.h, "Deferred answers"): what
 * the answer needs once the task settled. */
struct once__a2a_deferred {
    once__a2a *a;
    size_t idx;              /* the method's table row (counters) */
    json_t *id;              /* own reference to the request's JSON-RPC id */
    once__a2a_binding binding;
    int extension;
    int legacy;              /* 0.1 tasks/send: answered in 0.1 shape */
    a2a_v03 v03;             /* 0.3 message/send: answered in that 0.3 form */
    int history;
    once_verdict verdict;
    int replayed;
    char principal[ONCE_PRINCIPAL_MAX + 1];
    char task_id[ONCE_ID_MAX + 1];
    int64_t gen;             /* wait for the task past this generation */
    uint64_t seq;            /* the send's res->wait_seq */
    int64_t until;           /* monotonic ms */
    /* Set by the await thread before it calls ready: the settled record
     * it handed over (owned), answered from without a store read. */
    once_record *rec;
    void (*ready)(void *arg);
    void *ready_arg;
};

/* Map the stored task onto d's call once it settled (h_send.c). */
int once__a2a_h_send_answer(a2a_call *c, const once__a2a_deferred *d);

/* Record an error on c and return ONCE_EINVAL (for `return once__a2a_fail(...)`).
 * reason is a static string; metadata is added with once__a2a_meta. */
int once__a2a_fail(a2a_call *c, int code, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Add metadata[key] = value (a string) to the pending error. */
void once__a2a_meta(a2a_call *c, const char *key, const char *value);
/* -32602 INVALID_PARAMS with metadata {"field": e->field}. */
int once__a2a_fail_params(a2a_call *c, const a2a_verr *e);
/* Map an engine/store failure rc: ESTORE/EBUSY -> -32603 STORE_UNAVAILABLE,
 * retryable, HTTP 503 + Retry-After: 1; anything else -> -32603 INTERNAL. */
int once__a2a_fail_engine(a2a_call *c, int rc);
/* params[field], a required task or config id: ONCE_OK with *out, or
 * -32602 INVALID_PARAMS naming field ("<what> is required" when it is
 * missing; what NULL = field). */
int once__a2a_id_param(a2a_call *c, const char *field, const char *what, const char **out);
/* params.tenant, optional: ONCE_OK when absent or a string, else -32602
 * INVALID_PARAMS naming "tenant" (only its type is checked). */
int once__a2a_tenant_param(a2a_call *c);
/* -32001 TASK_NOT_FOUND / TASK_EXPIRED for task_id. */
int once__a2a_fail_not_found(a2a_call *c, const char *task_id);
int once__a2a_fail_expired(a2a_call *c, const char *task_id, int64_t expired_at);
/* A task whose state refuses the call: "Task <task_id> is <state><why>"
 * with metadata {"taskId", "state"}; why goes on from the state (" and
 * cannot be canceled"). */
int once__a2a_fail_state(a2a_call *c, int code, const char *reason, const char *task_id,
                         const char *state, const char *why);
/* A method this server cannot serve as configured: "<method> is not
 * supported: <why>" with metadata {"method": name}. */
int once__a2a_fail_unsupported(a2a_call *c, int code, const char *reason, const char *why);

/* The ErrorInfo array for error.data of an error with this code and once's
 * reason (errors.c says which entries, in which domains). meta is borrowed
 * (NULL = {}); reason NULL = the A2A type. New reference. */
json_t *once__a2a_error_info(int code, const char *reason, json_t *meta);

/* The JSON-RPC error object {"code", "message", "data": [ErrorInfo]} (a2a.c);
 * message is cleaned to valid UTF-8 first. meta borrowed. New reference;
 * NULL on ENOMEM. */
json_t *once__a2a_rpc_error(int code, const char *reason, const char *message, json_t *meta);

/* HTTP+JSON errors (A2A 1.0 sections 5.4 and 11.6). The HTTP status of a
 * JSON-RPC / A2A error code; http_status, when not 0 or 200, is one a
 * handler or the HTTP layer chose itself (503, 413, ...) and wins. */
int once__a2a_rest_status(int code, int http_status);
/* The AIP-193 body {"error": {"code": http_status, "status": <google.rpc.Code
 * name>, "message", "details": [ErrorInfo]}} for an error with JSON-RPC code
 * `code` (0 = none: the status name follows http_status alone). meta is
 * borrowed. New reference; NULL on ENOMEM. */
json_t *once__a2a_rest_error(int http_status, int code, const char *reason, const char *message,
                             json_t *meta);
/* A whole error answer with no call behind it (once__a2a_error_response_as
 * with ErrorInfo metadata; meta borrowed, NULL = {}). */
int once__a2a_error_answer(once__a2a_binding b, int http_status, int code, const char *reason,
                           const char *message, json_t *meta, once__a2a_response *resp);

/* ---------------------------------------------------------------------------
 * The method table (Redis' command table, as data).
 */
typedef int (*a2a_handler)(a2a_call *c);

enum {
    A2A_M_LEGACY = 1u << 0,    /* 0.1 name: accepted without A2A-Version */
    A2A_M_ADMIN = 1u << 1,     /* exists only with --test-admin */
    A2A_M_NOVERSION = 1u << 2, /* no A2A-Version check (our own namespace) */
    A2A_M_STREAM = 1u << 3,    /* answers with a stream: once__a2a_run refuses it
                                  (once__a2a_h_streaming) when the backend cannot stream */
    A2A_M_INLINE = 1u << 4,    /* may run with req->inline_only (a2a.h) */
    A2A_M_V03 = 1u << 5,       /* A2A 0.3 name (h_v03.c): no A2A-Version needed */
    A2A_M_OPS = 1u << 6        /* operator method (h_admin.c): answers only the
                                  --admin-principals (403 otherwise), and every
                                  call writes an "admin" audit line */
};

/* One row of the method table; rows are const. */
typedef struct a2a_method {
    const char *name;
    a2a_handler handler;
    unsigned flags;
} a2a_method;

extern const a2a_method once__a2a_methods[];
extern const size_t once__a2a_nmethods;

/* The row named name (admin rows only with --test-admin); NULL = none. */
const a2a_method *once__a2a_lookup(const once__a2a *a, const char *name, size_t *idx);
/* Run row m (index idx) with params (borrowed; NULL = {}) and write the
 * answer in the envelope of binding b; id is the JSON-RPC id (NULL for
 * HTTP+JSON). The version check, counters and error mapping are the
 * same for both bindings. */
int once__a2a_run(once__a2a *a, const once__a2a_request *req, once__a2a_response *resp,
                  const a2a_method *m, size_t idx, json_t *id, json_t *params,
                  once__a2a_binding b);

/* Handlers (h_*.c). */
int once__a2a_h_send(a2a_call *c);
int once__a2a_h_legacy_send(a2a_call *c);
int once__a2a_h_get(a2a_call *c);
int once__a2a_h_cancel(a2a_call *c);
int once__a2a_h_list(a2a_call *c);
int once__a2a_h_streaming(a2a_call *c);
int once__a2a_h_send_streaming(a2a_call *c);
int once__a2a_h_subscribe(a2a_call *c);
int once__a2a_h_push_create(a2a_call *c);
int once__a2a_h_push_get(a2a_call *c);
int once__a2a_h_push_list(a2a_call *c);
int once__a2a_h_push_delete(a2a_call *c);
/* A TaskPushNotificationConfig's shape (h_push.c): object; url string;
 * taskId (required when need_task) and id valid IDs (id may be "");
 * token, tenant strings; authentication {scheme string, credentials?};
 * nothing else. field prefixes error paths ("" for params). */
int once__a2a_check_push_config(const json_t *cfg, const char *field, int need_task,
                                a2a_verr *e);
int once__a2a_h_extended_card(a2a_call *c);
int once__a2a_h_admin_clock(a2a_call *c);
int once__a2a_h_admin_stats(a2a_call *c);
/* Operator methods (h_admin.c). */
int once__a2a_h_admin_replicas(a2a_call *c);
int once__a2a_h_admin_leases(a2a_call *c);
int once__a2a_h_admin_release(a2a_call *c);
int once__a2a_h_admin_cancel(a2a_call *c);
/* A ListTasks "status" (a TASK_STATE_* name or its proto number; null or
 * absent: ONCE_STATE_UNKNOWN, any) into *out; ONCE_EINVAL otherwise. */
int once__a2a_parse_status(const json_t *v, once_state *out);
/* Whether principal is one of cfg.admin_principals. */
int once__a2a_admin_allowed(const once__a2a *a, const char *principal);
/* Refuse the call: 403 PERMISSION_DENIED naming the rule. */
int once__a2a_admin_refuse(a2a_call *c);
/* The call's audit line (event "admin"): principal, method, params, outcome. */
void once__a2a_admin_audit(const a2a_call *c, int rc);
/* Any A2A 0.3 method, by the 1.0 handler of its successor (h_v03.c). */
int once__a2a_h_v03(a2a_call *c);
/* The 1.0 method a 0.3 name is served by, or NULL. */
const char *once__a2a_v03_successor(const char *name);
/* The 0.3 form of a call of a 0.3 row on binding b: 0.3's HTTP+JSON
 * routes (rest.c) carry proto JSON, its JSON-RPC methods their own. */
a2a_v03 once__a2a_v03_form(once__a2a_binding b);
/* Convert a 1.0 result (*result, replaced) to what the 0.3 method name
 * answers in form v03; ONCE_OK (nothing to do for other names), ONCE_ENOMEM. */
int once__a2a_v03_result(const char *name, a2a_v03 v03, json_t **result);
/* A stored 1.0 StreamResponse payload as the 0.3 event it carries in form
 * v03 (once_malloc'd text), a status update "final" when last (the stream
 * ends with it), or NULL (no memory, or not JSON). */
char *once__a2a_v03_frame(const char *payload, int last, a2a_v03 v03);
/* 0.3's HTTP+JSON errors (@a2a-js/sdk's toLegacyHTTPError): the body is the
 * JSON-RPC error object (once__a2a_rpc_error), the HTTP status the one its
 * code maps to (404 TaskNotFound, 501 MethodNotFound, 500 internal, 400 the
 * rest); http_status, when not 0 or 200, is one chosen on purpose (503,
 * 413, 405, ...) and wins. */
int once__a2a_v03_rest_status(int code, int http_status);
/* The whole answer, as once__a2a_error_answer for the other bindings. */
int once__a2a_v03_rest_answer(int http_status, int code, const char *reason, const char *message,
                              json_t *meta, once__a2a_response *resp);

/* Accessors the handlers need from the handle (a2a.c). */
const once__a2a_backend *once__a2a_backend_of(const once__a2a *a);
/* The configuration a runs with (strings a's own copies). */
const once__a2a_config *once__a2a_cfg(const once__a2a *a);
/* b serves events, head and wait: what every A2A_M_STREAM method needs and
 * what the card's capabilities.streaming announces (h_stream.c). */
int once__a2a_backend_streams(const once__a2a_backend *b);
size_t once__a2a_max_parts(const once__a2a *a);
int64_t once__a2a_wait_ms(const once__a2a *a);
once_offset_clock *once__a2a_clock(const once__a2a *a);
/* Adds {"methods": {name: {"calls", "errors"}}} to obj. */
void once__a2a_add_stats(const once__a2a *a, json_t *obj);

/* The agent card JSON for cfg (card.c). */
int once__a2a_card_build(const once__a2a_config *cfg, char **out, size_t *len);

/* Trim history to the last n messages (n == 0: remove the member; n < 0:
 * leave it). task is a Task object; anything else is left alone. */
void once__a2a_trim_history(json_t *task, int n);

/* ---------------------------------------------------------------------------
 * A2A 0.1 compatibility (legacy.c).
 */

/* A 0.1 Message ({role:"user", parts:[{type:"text", text}...], metadata})
 * as a fresh 1.0 Message (ROLE_USER, parts as text|raw|url|data). 1.0-shaped
 * parts pass through. Unconvertible input: ONCE_EINVAL with e set. */
int once__a2a_legacy_message_in(const json_t *msg, json_t **out, a2a_verr *e);

/* A 1.0 Task (or {"task":..} / {"message":..} send result) as a fresh 0.1
 * Task: sessionId, lowercase states, "user"/"agent" roles, typed parts.
 * task_id names the task when the result is a direct Message. */
json_t *once__a2a_legacy_task_out(const json_t *v, const char *task_id);

#endif /* ONCE_A2A_A2A_INT_H */
