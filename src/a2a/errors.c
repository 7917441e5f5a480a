/*
 * errors.c -- JSON-RPC error objects in the A2A 1.0 shape:
 *   {"code": C, "message": M, "data": [{"@type":
 *    "type.googleapis.com/google.rpc.ErrorInfo", "reason": R, "domain":
 *    "once", "metadata": {...}}]}
 *
 * Invariants: every error the server sends carries exactly one ErrorInfo;
 * metadata values are strings (google.rpc.ErrorInfo.metadata is
 * map<string, string>); a store failure is never reported as a verdict: it
 * is -32603 STORE_UNAVAILABLE with retryable "true", HTTP 503 and
 * Retry-After, so clients and proxies retry it.
 */
#include <stdio.h>
#include <string.h>

#include "a2a/a2a_int.h"

json_t *once__a2a_error_info(const char *reason, json_t *meta)
{
    json_t *info = json_object();
    json_t *arr = json_array();
    if (info == NULL || arr == NULL)
        goto fail;
    if (json_object_set_new(info, "@type",
                            json_string("type.googleapis.com/google.rpc.ErrorInfo")) != 0 ||
        json_object_set_new(info, "reason", json_string(reason ? reason : "UNKNOWN")) != 0 ||
        json_object_set_new(info, "domain", json_string("once")) != 0 ||
        json_object_set_new(info, "metadata", meta ? json_incref(meta) : json_object()) != 0 ||
        json_array_append(arr, info) != 0)
        goto fail;
    json_decref(info);
    return arr;
fail:
    json_decref(info);
    json_decref(arr);
    return NULL;
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
                            once__a2a_error_info(reason, NULL));
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
