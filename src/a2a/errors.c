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

int once__a2a_fail_engine(a2a_call *c, int rc)
{
    if (rc == ONCE_ESTORE || rc == ONCE_EBUSY) {
        once__a2a_fail(c, ONCE_RPC_INTERNAL, "STORE_UNAVAILABLE",
                   "The task store is unavailable (%s); retry the same request", once_errname(rc));
        once__a2a_meta(c, "retryable", "true");
        c->http_status = 503;
        c->retry_after = 1;
        return ONCE_EINVAL;
    }
    if (rc == ONCE_EOVERLOAD) {
        /* Nothing was registered: the same request may go to any replica,
         * now or after Retry-After, and land on the same task. */
        once__a2a_fail(c, ONCE_RPC_INTERNAL, "OVERLOADED",
                       "Too many tasks are waiting for a worker on this replica; retry the same "
                       "request");
        once__a2a_meta(c, "retryable", "true");
        c->http_status = 503;
        c->retry_after = 1;
        return ONCE_EINVAL;
    }
    once__a2a_fail(c, ONCE_RPC_INTERNAL, "INTERNAL", "Internal error (%s)", once_errname(rc));
    return ONCE_EINVAL;
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

int once_a2a_error_response(int http_status, int code, const char *reason, const char *message,
                            once_a2a_response *resp)
{
    memset(resp, 0, sizeof *resp);
    json_t *doc = json_pack("{s:s, s:n, s:{s:i, s:s, s:o}}", "jsonrpc", "2.0", "id", "error",
                            "code", code, "message", message, "data",
                            once__a2a_error_info(code, reason, NULL));
    if (doc == NULL)
        return ONCE_ENOMEM;
    int rc = once__a2a_json_dump(doc, &resp->body, &resp->len);
    json_decref(doc);
    if (rc != ONCE_OK)
        return rc;
    resp->http_status = http_status;
    return ONCE_OK;
}

void once_a2a_response_clear(once_a2a_response *r)
{
    if (r == NULL)
        return;
    once_free(r->body);
    once_a2a_stream_free(r->stream);
    memset(r, 0, sizeof *r);
}
