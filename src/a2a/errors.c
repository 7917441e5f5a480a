/*
 * errors.c -- JSON-RPC error objects in the A2A 1.0 shape:
 *   {"code": C, "message": M, "data": [{"@type":
 *    "type.googleapis.com/google.rpc.ErrorInfo", "reason": R, "domain": D,
 *    "metadata": {...}}, ...]}
 *
 * Invariants: an A2A error (codes -32001..-32009) carries first the
 * ErrorInfo A2A 1.0 section 9.5 requires (reason: the A2A error type,
 * domain "a2a-protocol.org"); once's own reason, where it says more than
 * the A2A type (TASK_EXPIRED is a TASK_NOT_FOUND), follows in a second
 * ErrorInfo of domain "once", so the last ErrorInfo is always the most
 * precise one. Errors outside A2A's list (JSON-RPC codes) carry one ErrorInfo
 * of domain "once". Metadata values are strings (google.rpc.ErrorInfo.metadata
 * is map<string, string>); a store failure is never reported as a verdict: it
 * is -32603 STORE_UNAVAILABLE with retryable "true", HTTP 503 and
 * Retry-After, so clients and proxies retry it.
 */
#include <stdio.h>
#include <string.h>

#include "a2a/a2a_int.h"

/* The A2A 1.0 error type of an A2A error code (section 5.4), in the
 * UPPER_SNAKE_CASE of its ErrorInfo reason; NULL for a JSON-RPC code. */
static const char *a2a_type(int code)
{
    static const char *const types[] = {
        NULL,
        "TASK_NOT_FOUND",                     /* -32001 */
        "TASK_NOT_CANCELABLE",                /* -32002 */
        "PUSH_NOTIFICATION_NOT_SUPPORTED",    /* -32003 */
        "UNSUPPORTED_OPERATION",              /* -32004 */
        "CONTENT_TYPE_NOT_SUPPORTED",         /* -32005 */
        "INVALID_AGENT_RESPONSE",             /* -32006 */
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED", /* -32007 */
        "EXTENSION_SUPPORT_REQUIRED",         /* -32008 */
        "VERSION_NOT_SUPPORTED",              /* -32009 */
    };
    int i = -32000 - code;
    return i >= 1 && i < (int)(sizeof types / sizeof types[0]) ? types[i] : NULL;
}

/* Append one ErrorInfo {reason, domain, metadata} to arr. */
static int add_info(json_t *arr, const char *reason, const char *domain, json_t *meta)
{
    json_t *info = json_pack("{s:s, s:s, s:s, s:o}", "@type",
                             "type.googleapis.com/google.rpc.ErrorInfo", "reason", reason,
                             "domain", domain, "metadata",
                             meta ? json_incref(meta) : json_object());
    return info != NULL && json_array_append_new(arr, info) == 0 ? ONCE_OK : ONCE_ENOMEM;
}

json_t *once__a2a_error_info(int code, const char *reason, json_t *meta)
{
    json_t *arr = json_array();
    if (arr == NULL)
        return NULL;
    const char *type = a2a_type(code);
    if (reason == NULL)
        reason = type != NULL ? type : "UNKNOWN";
    int rc = ONCE_OK;
    if (type != NULL)
        rc = add_info(arr, type, ONCE_A2A_ERROR_DOMAIN, meta);
    if (rc == ONCE_OK && (type == NULL || strcmp(type, reason) != 0))
        rc = add_info(arr, reason, ONCE_ERROR_DOMAIN, meta);
    if (rc != ONCE_OK) {
        json_decref(arr);
        return NULL;
    }
    return arr;
}

int once__a2a_fail(a2a_call *c, int code, const char *reason, const char *fmt, ...)
{
    c->code = code;
    c->reason = reason;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->message, sizeof c->message, fmt, ap);
    va_end(ap);
    if (c->meta == NULL && (c->meta = json_object()) == NULL)
        c->oom = 1;
    if (c->http_status == 0)
        c->http_status = 200;
    return ONCE_EINVAL;
}

void once__a2a_meta(a2a_call *c, const char *key, const char *value)
{
    if (c->meta == NULL && (c->meta = json_object()) == NULL)
        c->oom = 1;
    /* A member lost here would leave an error that looks complete. */
    if (c->meta != NULL && value != NULL &&
        json_object_set_new(c->meta, key, json_string(value)) != 0)
        c->oom = 1;
}

int once__a2a_fail_params(a2a_call *c, const a2a_verr *e)
{
    once__a2a_fail(c, ONCE_RPC_INVALID_PARAMS, "INVALID_PARAMS", "Invalid parameters: %s", e->why);
    once__a2a_meta(c, "field", e->field);
    return ONCE_EINVAL;
}

/* The failure just set may be retried as it is: 503 + Retry-After: 1. */
static int retry_later(a2a_call *c)
{
    once__a2a_meta(c, "retryable", "true");
    c->http_status = 503;
    c->retry_after = 1;
    return ONCE_EINVAL;
}

int once__a2a_fail_engine(a2a_call *c, int rc)
{
    if (rc == ONCE_ESTORE || rc == ONCE_EBUSY) {
        once__a2a_fail(c, ONCE_RPC_INTERNAL, "STORE_UNAVAILABLE",
                   "The task store is unavailable (%s); retry the same request", once_errname(rc));
        return retry_later(c);
    }
    if (rc == ONCE_EOVERLOAD) {
        /* Nothing was registered: the same request may go to any replica,
         * now or after Retry-After, and land on the same task. */
        once__a2a_fail(c, ONCE_RPC_INTERNAL, "OVERLOADED",
                       "Too many tasks are waiting for a worker on this replica; retry the same "
                       "request");
        return retry_later(c);
    }
    if (rc == ONCE_ECLOSED) {
        /* The engine stopped (onced is shutting down) before the call
         * reached it: nothing was applied; another replica can take it. */
        once__a2a_fail(c, ONCE_RPC_INTERNAL, "SHUTTING_DOWN",
                       "The server is shutting down; retry the same request elsewhere");
        return retry_later(c);
    }
    once__a2a_fail(c, ONCE_RPC_INTERNAL, "INTERNAL", "Internal error (%s)", once_errname(rc));
    return ONCE_EINVAL;
}

int once__a2a_id_param(a2a_call *c, const char *field, const char *what, const char **out)
{
    a2a_verr e;
    const json_t *v = json_object_get(c->params, field);
    if (v == NULL) {
        once__a2a_verr(&e, field, "%s is required", what ? what : field);
        return once__a2a_fail_params(c, &e);
    }
    if (once__a2a_check_id(v, field, &e) != ONCE_OK)
        return once__a2a_fail_params(c, &e);
    *out = json_string_value(v);
    return ONCE_OK;
}

int once__a2a_tenant_param(a2a_call *c)
{
    a2a_verr e;
    const json_t *tenant = json_object_get(c->params, "tenant");
    if (tenant != NULL && !json_is_string(tenant)) {
        once__a2a_verr(&e, "tenant", "tenant must be a string");
        return once__a2a_fail_params(c, &e);
    }
    return ONCE_OK;
}

int once__a2a_fail_not_found(a2a_call *c, const char *task_id)
{
    once__a2a_fail(c, ONCE_RPC_TASK_NOT_FOUND, "TASK_NOT_FOUND", "Task not found: %s", task_id);
    once__a2a_meta(c, "taskId", task_id);
    return ONCE_EINVAL;
}

int once__a2a_fail_expired(a2a_call *c, const char *task_id, int64_t expired_at)
{
    char ts[25];
    once_format_time(expired_at, ts);
    once__a2a_fail(c, ONCE_RPC_TASK_NOT_FOUND, "TASK_EXPIRED",
               "Task %s expired at %s: its record is past retention (it is not re-executed)",
               task_id, ts);
    once__a2a_meta(c, "taskId", task_id);
    once__a2a_meta(c, "expiredAt", ts);
    return ONCE_EINVAL;
}

int once__a2a_fail_state(a2a_call *c, int code, const char *reason, const char *task_id,
                         const char *state, const char *why)
{
    once__a2a_fail(c, code, reason, "Task %s is %s%s", task_id, state, why);
    once__a2a_meta(c, "taskId", task_id);
    once__a2a_meta(c, "state", state);
    return ONCE_EINVAL;
}

int once__a2a_fail_unsupported(a2a_call *c, int code, const char *reason, const char *why)
{
    once__a2a_fail(c, code, reason, "%s is not supported: %s", c->m->name, why);
    once__a2a_meta(c, "method", c->m->name);
    return ONCE_EINVAL;
}

/* The HTTP status and google.rpc.Code name of each error code: A2A 1.0
 * section 5.4 for the A2A errors (the gRPC column gives the name), the
 * JSON-RPC ones as the A2A TCK maps them. */
static const struct rest_map {
    int code;
    int http;
    const char *status;
} rest_map[] = {
    {ONCE_RPC_PARSE_ERROR, 400, "INVALID_ARGUMENT"},
    {ONCE_RPC_INVALID_REQUEST, 400, "INVALID_ARGUMENT"},
    {ONCE_RPC_METHOD_NOT_FOUND, 404, "NOT_FOUND"},
    {ONCE_RPC_INVALID_PARAMS, 400, "INVALID_ARGUMENT"},
    {ONCE_RPC_INTERNAL, 500, "INTERNAL"},
    {ONCE_RPC_TASK_NOT_FOUND, 404, "NOT_FOUND"},
    {ONCE_RPC_TASK_NOT_CANCELABLE, 409, "FAILED_PRECONDITION"},
    {ONCE_RPC_PUSH_NOT_SUPPORTED, 400, "UNIMPLEMENTED"},
    {ONCE_RPC_UNSUPPORTED_OPERATION, 400, "UNIMPLEMENTED"},
    {ONCE_RPC_CONTENT_TYPE_NOT_SUPPORTED, 415, "INVALID_ARGUMENT"},
    {-32006, 502, "INTERNAL"}, /* InvalidAgentResponseError */
    {ONCE_RPC_EXTENDED_CARD_NOT_CONFIGURED, 400, "FAILED_PRECONDITION"},
    {-32008, 400, "FAILED_PRECONDITION"}, /* ExtensionSupportRequiredError */
    {ONCE_RPC_VERSION_NOT_SUPPORTED, 400, "UNIMPLEMENTED"},
};

/* The google.rpc.Code name AIP-193 pairs with an HTTP status the server
 * chose itself. */
static const char *status_name(int http)
{
    switch (http) {
    case 400:
    case 413:
    case 415:
        return "INVALID_ARGUMENT";
    case 401:
        return "UNAUTHENTICATED";
    case 403:
        return "PERMISSION_DENIED";
    case 404:
        return "NOT_FOUND";
    case 405:
        return "UNIMPLEMENTED";
    case 409:
        return "ABORTED";
    case 429:
        return "RESOURCE_EXHAUSTED";
    case 501:
        return "UNIMPLEMENTED";
    case 503:
        return "UNAVAILABLE";
    case 504:
        return "DEADLINE_EXCEEDED";
    default:
        return http < 500 ? "FAILED_PRECONDITION" : "INTERNAL";
    }
}

static const struct rest_map *rest_row(int code)
{
    for (size_t i = 0; i < sizeof rest_map / sizeof rest_map[0]; i++) {
        if (rest_map[i].code == code)
            return &rest_map[i];
    }
    return NULL;
}

int once__a2a_rest_status(int code, int http_status)
{
    if (http_status != 0 && http_status != 200)
        return http_status;
    const struct rest_map *r = rest_row(code);
    return r != NULL ? r->http : 500;
}

json_t *once__a2a_rest_error(int http_status, int code, const char *reason, const char *message,
                             json_t *meta)
{
    const struct rest_map *r = rest_row(code);
    const char *status = r != NULL && r->http == http_status ? r->status : status_name(http_status);
    return json_pack("{s:{s:i, s:s, s:s, s:o}}", "error", "code", http_status, "status", status,
                     "message", message, "details", once__a2a_error_info(code, reason, meta));
}

int once__a2a_error_response(int http_status, int code, const char *reason, const char *message,
                            once__a2a_response *resp)
{
    return once__a2a_error_response_as(ONCE_A2A_JSONRPC, http_status, code, reason, message, resp);
}

int once__a2a_error_response_as(once__a2a_binding b, int http_status, int code, const char *reason,
                               const char *message, once__a2a_response *resp)
{
    return once__a2a_error_answer(b, http_status, code, reason, message, NULL, resp);
}

int once__a2a_error_answer(once__a2a_binding b, int http_status, int code, const char *reason,
                           const char *message, json_t *meta, once__a2a_response *resp)
{
    memset(resp, 0, sizeof *resp);
    json_t *doc = b == ONCE_A2A_HTTP_JSON
                      ? once__a2a_rest_error(http_status, code, reason, message, meta)
                      : json_pack("{s:s, s:n, s:{s:i, s:s, s:o}}", "jsonrpc", "2.0", "id",
                                  "error", "code", code, "message", message, "data",
                                  once__a2a_error_info(code, reason, meta));
    if (doc == NULL)
        return ONCE_ENOMEM;
    int rc = once__a2a_json_dump(doc, &resp->body, &resp->len);
    json_decref(doc);
    if (rc != ONCE_OK)
        return rc;
    resp->http_status = http_status;
    return ONCE_OK;
}

void once__a2a_response_clear(once__a2a_response *r)
{
    if (r == NULL)
        return;
    once_free(r->body);
    once__a2a_stream_free(r->stream);
    once__a2a_deferred_free(r->deferred);
    once__engine_held_drop(r->held);
    memset(r, 0, sizeof *r);
}
