/*
 * h_task.c -- GetTask, CancelTask, ListTasks (A2A 1.0; 0.3's tasks/get and
 * tasks/cancel run these through h_v03.c).
 *
 * Invariant: the engine keys every task by (principal, task_id), so another
 * principal's task comes back ONCE_ENOTFOUND and is answered exactly like a
 * missing one: the same code, reason, message and metadata.
 */
#include <string.h>

#include "a2a/a2a_int.h"

void once__a2a_trim_history(json_t *task, int n)
{
    if (!json_is_object(task) || n < 0)
        return;
    json_t *h = json_object_get(task, "history");
    if (h == NULL)
        return;
    if (n == 0 || !json_is_array(h)) {
        if (n == 0)
            json_object_del(task, "history");
        return;
    }
    while (json_array_size(h) > (size_t)n)
        json_array_remove(h, 0);
}

/* What GetTask and CancelTask answer once the backend returned rc and task
 * (owned here): the task; a missing or expired task's error; or the
 * engine's failure. */
static int task_answer(a2a_call *c, const char *id, int rc, json_t *task, int64_t expired_at)
{
    if (rc != ONCE_OK || task == NULL) {
        json_decref(task);
        if (rc == ONCE_ENOTFOUND)
            return once__a2a_fail_not_found(c, id);
        if (rc == ONCE_ETOMBSTONE)
            return once__a2a_fail_expired(c, id, expired_at);
        return once__a2a_fail_engine(c, rc == ONCE_OK ? ONCE_ERROR : rc);
    }
    c->result = task;
    return ONCE_OK;
}

int once__a2a_h_get(a2a_call *c)
{
    const char *id = NULL;
    a2a_verr e;
    int history;
    if (once__a2a_id_param(c, "id", NULL, &id) != ONCE_OK)
        return ONCE_EINVAL;
    if (once__a2a_check_history(json_object_get(c->params, "historyLength"), "historyLength",
                            &history, &e) != ONCE_OK)
        return once__a2a_fail_params(c, &e);
    const once__a2a_backend *b = once__a2a_backend_of(c->a);
    json_t *task = NULL;
    int64_t expired_at = 0;
    int rc = b->get(b->ctx, c->req->principal, id, history, &task, &expired_at);
    if (rc == ONCE_OK)
        once__a2a_trim_history(task, history);
    return task_answer(c, id, rc, task, expired_at);
}

int once__a2a_h_cancel(a2a_call *c)
{
    const char *id = NULL;
    if (once__a2a_id_param(c, "id", NULL, &id) != ONCE_OK)
        return ONCE_EINVAL;
    const json_t *md = json_object_get(c->params, "metadata");
    if (md != NULL && !json_is_null(md) && !json_is_object(md)) {
        a2a_verr e;
        once__a2a_verr(&e, "metadata", "metadata must be an object");
        return once__a2a_fail_params(c, &e);
    }
    const once__a2a_backend *b = once__a2a_backend_of(c->a);
    json_t *task = NULL;
    once_state state = ONCE_STATE_UNKNOWN;
    int64_t expired_at = 0;
    int rc = b->cancel(b->ctx, c->req->principal, id, &task, &state, &expired_at);
    if (rc == ONCE_EILLEGAL) {
        json_decref(task);
        return once__a2a_fail_state(c, ONCE_RPC_TASK_NOT_CANCELABLE, "TASK_NOT_CANCELABLE", id,
                                    once_state_name(state), " and cannot be canceled");
    }
    return task_answer(c, id, rc, task, expired_at);
}

/* ListTasksRequest.status: a TASK_STATE_* name or its proto enum number
 * (ProtoJSON accepts both). UNSPECIFIED means any. */
int once__a2a_parse_status(const json_t *v, once_state *out)
{
    /* a2a.proto TaskState numbers -> once_state */
    static const once_state by_proto[] = {
        ONCE_STATE_UNKNOWN,        ONCE_STATE_SUBMITTED, ONCE_STATE_WORKING,
        ONCE_STATE_COMPLETED,      ONCE_STATE_FAILED,    ONCE_STATE_CANCELED,
        ONCE_STATE_INPUT_REQUIRED, ONCE_STATE_REJECTED,  ONCE_STATE_AUTH_REQUIRED,
    };
    *out = ONCE_STATE_UNKNOWN;
    if (v == NULL || json_is_null(v))
        return ONCE_OK;
    if (json_is_integer(v)) {
        json_int_t n = json_integer_value(v);
        if (n < 0 || n >= (json_int_t)(sizeof by_proto / sizeof by_proto[0]))
            return ONCE_EINVAL;
        *out = by_proto[n];
        return ONCE_OK;
    }
    if (!json_is_string(v))
        return ONCE_EINVAL;
    const char *s = json_string_value(v);
    if (strcmp(s, "TASK_STATE_UNSPECIFIED") == 0)
        return ONCE_OK;
    *out = once_state_parse(s);
    return *out == ONCE_STATE_UNKNOWN ? ONCE_EINVAL : ONCE_OK;
}

/* status.timestamp of a task in ms, or -1 if absent/unparseable. */
static int64_t status_time(const json_t *task)
{
    const json_t *ts = json_object_get(json_object_get(task, "status"), "timestamp");
    int64_t ms;
    if (!json_is_string(ts) || once__a2a_parse_time(json_string_value(ts), &ms) != ONCE_OK)
        return -1;
    return ms;
}

int once__a2a_h_list(a2a_call *c)
{
    a2a_verr e;
    const json_t *p = c->params;
    once_list_req lr;
    memset(&lr, 0, sizeof lr);
    lr.principal = c->req->principal;

    const json_t *ctx = json_object_get(p, "contextId");
    if (ctx != NULL && !json_is_null(ctx)) {
        if (once__a2a_check_id(ctx, "contextId", &e) != ONCE_OK)
            return once__a2a_fail_params(c, &e);
        lr.context_id = json_string_value(ctx);
    }
    if (once__a2a_parse_status(json_object_get(p, "status"), &lr.state) != ONCE_OK) {
        once__a2a_verr(&e, "status", "status must be a TASK_STATE_* name");
        return once__a2a_fail_params(c, &e);
    }
    const json_t *ps = json_object_get(p, "pageSize");
    lr.page_size = 50;
    if (ps != NULL && !json_is_null(ps)) {
        if (!json_is_integer(ps) || json_integer_value(ps) < 1 || json_integer_value(ps) > 100) {
            once__a2a_verr(&e, "pageSize", "pageSize must be an integer between 1 and 100");
            return once__a2a_fail_params(c, &e);
        }
        lr.page_size = (size_t)json_integer_value(ps);
    }
    const json_t *tok = json_object_get(p, "pageToken");
    if (tok != NULL && !json_is_null(tok)) {
        if (!json_is_string(tok) || json_string_length(tok) > 255) {
            once__a2a_verr(&e, "pageToken", "pageToken must be a token from nextPageToken");
            return once__a2a_fail_params(c, &e);
        }
        if (json_string_length(tok) > 0)
            lr.page_token = json_string_value(tok);
    }
    if (once__a2a_check_history(json_object_get(p, "historyLength"), "historyLength",
                            &lr.history_length, &e) != ONCE_OK)
        return once__a2a_fail_params(c, &e);
    int64_t after = -1;
    const json_t *sta = json_object_get(p, "statusTimestampAfter");
    if (sta != NULL && !json_is_null(sta)) {
        if (!json_is_string(sta) || once__a2a_parse_time(json_string_value(sta), &after) != ONCE_OK) {
            once__a2a_verr(&e, "statusTimestampAfter",
                       "statusTimestampAfter must be an RFC 3339 timestamp");
            return once__a2a_fail_params(c, &e);
        }
    }
    const json_t *ia = json_object_get(p, "includeArtifacts");
    if (ia != NULL && !json_is_null(ia) && !json_is_boolean(ia)) {
        once__a2a_verr(&e, "includeArtifacts", "includeArtifacts must be a boolean");
        return once__a2a_fail_params(c, &e);
    }
    int artifacts = json_is_true(ia);

    const once__a2a_backend *b = once__a2a_backend_of(c->a);
    json_t *tasks = NULL;
    char next[256] = "";
    int rc = b->list(b->ctx, &lr, &tasks, next);
    if (rc == ONCE_EINVAL) {
        json_decref(tasks);
        once__a2a_verr(&e, "pageToken", "pageToken is not a token this server issued");
        return once__a2a_fail_params(c, &e);
    }
    if (rc != ONCE_OK || !json_is_array(tasks)) {
        json_decref(tasks);
        return once__a2a_fail_engine(c, rc == ONCE_OK ? ONCE_ERROR : rc);
    }
    /* The spec's per-task shaping: artifacts omitted unless asked for,
     * history bounded, and the timestamp filter (a page may come back
     * shorter than pageSize; the token still continues after it). */
    for (size_t i = 0; i < json_array_size(tasks);) {
        json_t *t = json_array_get(tasks, i);
        if (after >= 0 && status_time(t) < after) {
            json_array_remove(tasks, i);
            continue;
        }
        if (!artifacts)
            json_object_del(t, "artifacts");
        once__a2a_trim_history(t, lr.history_length);
        i++;
    }
    c->result = json_pack("{s:o, s:s, s:i}", "tasks", tasks, "nextPageToken", next, "pageSize",
                          (int)lr.page_size);
    return c->result ? ONCE_OK : ONCE_ENOMEM;
}
