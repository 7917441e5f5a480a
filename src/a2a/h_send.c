/*
 * h_send.c -- SendMessage (A2A 1.0) and tasks/send (A2A 0.1): validate the
 * params, hand one once_send_req to the engine, map its verdict to the wire
 * (docs/design.md section 10):
 *
 *   REGISTER / CONTINUE / REPLAY  result {"task":..} or {"message":..};
 *                                 REPLAY sets Idempotent-Replayed: true
 *   TASK_NOT_FOUND                -32001 TASK_NOT_FOUND       {taskId}
 *   TASK_EXPIRED                  -32001 TASK_EXPIRED         {taskId, expiredAt}
 *   REJECT_BUSY                   -32004 TASK_NOT_ACCEPTING_INPUT {taskId, state}
 *   REJECT_TERMINAL               -32004 TASK_TERMINAL        {taskId, state}
 *   IDEMPOTENCY_CONFLICT          -32602 MESSAGE_ID_REUSED    {taskId, messageId}
 *   engine EINVAL                 -32602 INVALID_PARAMS       {field}
 *   store failure                 -32603 STORE_UNAVAILABLE    {retryable}, HTTP 503
 *
 * Nothing here decides anything: the verdict is the engine's.
 */
#include <string.h>

#include "core/str.h"
#include "a2a/a2a_int.h"

static int push_not_supported(a2a_call *c, const char *field, const char *why)
{
    once__a2a_fail(c, ONCE_RPC_PUSH_NOT_SUPPORTED, "PUSH_NOTIFICATION_NOT_SUPPORTED",
                   "Push notifications are not supported %s", why);
    once__a2a_meta(c, "field", field);
    return ONCE_EINVAL;
}

/* configuration.acceptedOutputModes: absent, or an array of strings (a
 * non-array and a non-string element get the same refusal). */
static int check_output_modes(const json_t *modes, a2a_verr *e)
{
    size_t i;
    json_t *m;

    if (modes == NULL)
        return ONCE_OK;
    int ok = json_is_array(modes);
    json_array_foreach(modes, i, m)
        ok = ok && json_is_string(m);
    if (ok)
        return ONCE_OK;
    return once__a2a_verr(e, "configuration.acceptedOutputModes", "must be an array of strings");
}

/* SendMessageRequest.configuration. *push: its taskPushNotificationConfig
 * (shape-checked) or NULL. */
static int check_configuration(a2a_call *c, const json_t *cfg, int *history, int *immediately,
                               const json_t **push_out)
{
    a2a_verr e;
    *history = -1;
    *immediately = 0;
    *push_out = NULL;
    if (cfg == NULL || json_is_null(cfg))
        return ONCE_OK;
    if (!json_is_object(cfg)) {
        once__a2a_verr(&e, "configuration", "configuration must be an object");
        return once__a2a_fail_params(c, &e);
    }
    if (check_output_modes(json_object_get(cfg, "acceptedOutputModes"), &e) != ONCE_OK)
        return once__a2a_fail_params(c, &e);
    if (once__a2a_check_history(json_object_get(cfg, "historyLength"), "configuration.historyLength",
                            history, &e) != ONCE_OK)
        return once__a2a_fail_params(c, &e);
    const json_t *ri = json_object_get(cfg, "returnImmediately");
    if (ri != NULL) {
        if (!json_is_boolean(ri)) {
            once__a2a_verr(&e, "configuration.returnImmediately", "must be a boolean");
            return once__a2a_fail_params(c, &e);
        }
        *immediately = json_is_true(ri);
    }
    const json_t *push = json_object_get(cfg, "taskPushNotificationConfig");
    if (push == NULL || json_is_null(push))
        return ONCE_OK;
    if (once__a2a_backend_of(c->a)->push_create == NULL)
        return push_not_supported(c, "configuration.taskPushNotificationConfig",
                                  "by this agent (capabilities.pushNotifications is false)");
    if (once__a2a_check_push_config(push, "configuration.taskPushNotificationConfig", 0, &e) !=
        ONCE_OK)
        return once__a2a_fail_params(c, &e);
    *push_out = push;
    return ONCE_OK;
}

static int check_metadata(a2a_call *c, const json_t *md, const char *field)
{
    a2a_verr e;
    if (md == NULL || json_is_null(md))
        return ONCE_OK;
    if (!json_is_object(md))
        once__a2a_verr(&e, field, "%s must be an object", field);
    else if (once__a2a_check_depth(md, field, &e) == ONCE_OK)
        return ONCE_OK;
    return once__a2a_fail_params(c, &e);
}

static const char *str_or(const json_t *v, const char *dflt)
{
    return json_is_string(v) ? json_string_value(v) : dflt;
}

/* A blocking send the engine left pending: the call answers later, from
 * the task as it stands when it settled (a2a.h, "Deferred answers"). */
static int defer(a2a_call *c, const once_send_res *res, int history, int legacy)
{
    once__a2a_deferred *d = once_calloc(1, sizeof *d);
    if (d == NULL)
        return ONCE_ENOMEM;
    d->a = c->a;
    d->idx = (size_t)(c->m - once__a2a_methods);
    d->id = json_incref(c->id);
    d->binding = c->binding;
    d->extension = c->extension;
    d->legacy = legacy;
    d->v03 = c->v03;
    d->history = history;
    d->verdict = res->verdict;
    d->replayed = res->replayed || res->verdict == ONCE_V_REPLAY;
    once__strlcpy(d->principal, c->req->principal, sizeof d->principal);
    once__strlcpy(d->task_id, res->task_id, sizeof d->task_id);
    d->gen = res->generation;
    d->seq = res->wait_seq;
    d->until = res->wait_until;
    c->deferred = d;
    return ONCE_OK;
}

static void drop_result(once_send_res *res)
{
    json_decref(res->result);
    res->result = NULL;
    once_free(res->result_text);
    res->result_text = NULL;
}

/* Map the engine's answer onto the call. Consumes res->result and
 * res->result_text. */
static int map_send(a2a_call *c, int rc, once_send_res *res, const once_send_req *req,
                    int history, int legacy)
{
    const char *task_id = res->task_id[0] ? res->task_id : (req->task_id ? req->task_id : "");
    if (rc == ONCE_EINVAL) {
        a2a_verr e;
        once__a2a_verr(&e, res->field ? res->field : "message", "%s",
                   res->detail[0] ? res->detail : "rejected by the engine");
        drop_result(res);
        return once__a2a_fail_params(c, &e);
    }
    if (rc != ONCE_OK) {
        drop_result(res);
        return once__a2a_fail_engine(c, rc);
    }
    const char *state = once_state_name(res->state);
    switch (res->verdict) {
    case ONCE_V_REGISTER:
    case ONCE_V_CONTINUE:
    case ONCE_V_REPLAY:
        if (res->pending) {
            drop_result(res);
            return defer(c, res, history, legacy);
        }
        c->held = res->held;   /* the answer waits for its write (a2a.h) */
        res->held = NULL;
        c->replayed = res->replayed || res->verdict == ONCE_V_REPLAY;
        if (res->result_text != NULL && !legacy) {
            /* Spliced from the stored task with the whole history: as is. */
            c->result_text = res->result_text;
            res->result_text = NULL;
            drop_result(res);
            return ONCE_OK;
        }
        once_free(res->result_text);
        res->result_text = NULL;
        if (res->result == NULL)
            return once__a2a_fail(c, ONCE_RPC_INTERNAL, "INTERNAL",
                              "Internal error (the engine returned no result)");
        if (legacy) {
            c->result = once__a2a_legacy_task_out(res->result, task_id);
            json_decref(res->result);
            res->result = NULL;
            if (c->result == NULL)
                return ONCE_ENOMEM;
            once__a2a_trim_history(c->result, history);
        } else {
            c->result = res->result;
            res->result = NULL;
            once__a2a_trim_history(json_object_get(c->result, "task"), history);
        }
        return ONCE_OK;
    case ONCE_V_TASK_NOT_FOUND:
        return once__a2a_fail_not_found(c, task_id);
    case ONCE_V_TASK_EXPIRED:
        return once__a2a_fail_expired(c, task_id, res->expired_at);
    case ONCE_V_IDEMPOTENCY_CONFLICT: {
        const char *mid = res->message_id[0]
                              ? res->message_id
                              : str_or(json_object_get(req->message, "messageId"), "");
        once__a2a_fail(c, ONCE_RPC_INVALID_PARAMS, "MESSAGE_ID_REUSED",
                   "messageId %s was already accepted for task %s with different content; "
                   "a new message needs a new messageId",
                   mid, task_id);
        once__a2a_meta(c, "taskId", task_id);
        once__a2a_meta(c, "messageId", mid);
        break;
    }
    case ONCE_V_REJECT_BUSY:
        once__a2a_fail_state(c, ONCE_RPC_UNSUPPORTED_OPERATION, "TASK_NOT_ACCEPTING_INPUT",
                             task_id, state,
                             " and accepts no new message until it asks for input");
        break;
    case ONCE_V_REJECT_TERMINAL:
        once__a2a_fail_state(c, ONCE_RPC_UNSUPPORTED_OPERATION, "TASK_TERMINAL", task_id, state,
                             " (terminal) and accepts no further messages");
        break;
    default:
        once__a2a_fail(c, ONCE_RPC_INTERNAL, "INTERNAL", "Internal error (verdict %d)",
                   (int)res->verdict);
        break;
    }
    drop_result(res);
    return ONCE_EINVAL;
}

/* Hand the send to the engine; a blocking one is deferred when the caller
 * can wait without a thread and the backend can. */
static int send_to_engine(a2a_call *c, once_send_req *req, once_send_res *res)
{
    const once__a2a_backend *b = once__a2a_backend_of(c->a);
    req->defer = c->req->defer && b->await != NULL && b->await_release != NULL &&
                 b->send_answer != NULL;
    req->hold = c->req->hold;
    req->inline_only = c->req->inline_only;
    return b->send(b->ctx, req, res);
}

int once__a2a_h_send_answer(a2a_call *c, const once__a2a_deferred *d)
{
    once_send_res res;
    memset(&res, 0, sizeof res);
    res.verdict = d->verdict;
    res.replayed = d->replayed;
    res.text_result = !d->legacy && !d->v03;
    once__strlcpy(res.task_id, d->task_id, sizeof res.task_id);
    once_send_req req;   /* only map_send's refusals read it: none here */
    memset(&req, 0, sizeof req);
    req.task_id = d->task_id;
    const once__a2a_backend *b = once__a2a_backend_of(c->a);
    int rc = b->send_answer(b->ctx, d->principal, d->task_id, d->rec, d->history, &res);
    return map_send(c, rc, &res, &req, d->history, d->legacy);
}

int once__a2a_h_send(a2a_call *c)
{
    a2a_verr e;
    json_t *msg = json_object_get(c->params, "message");
    if (once__a2a_check_message(msg, "message", 0, once__a2a_max_parts(c->a), &e) != ONCE_OK)
        return once__a2a_fail_params(c, &e);
    int history, immediately;
    const json_t *push;
    if (check_configuration(c, json_object_get(c->params, "configuration"), &history,
                            &immediately, &push) != ONCE_OK)
        return ONCE_EINVAL;
    /* The config belongs to this message's task; any other taskId is a
     * mistake worth hearing about (1.0: leave it empty here). */
    const char *ptask = json_string_value(json_object_get(push, "taskId"));
    const char *mtask = str_or(json_object_get(msg, "taskId"), NULL);
    if (ptask != NULL && ptask[0] != '\0' && (mtask == NULL || strcmp(ptask, mtask) != 0)) {
        once__a2a_verr(&e, "configuration.taskPushNotificationConfig.taskId",
                       "leave taskId empty: the config belongs to this message's task");
        return once__a2a_fail_params(c, &e);
    }
    json_t *md = json_object_get(c->params, "metadata");
    if (check_metadata(c, md, "metadata") != ONCE_OK)
        return ONCE_EINVAL;
    if (once__a2a_tenant_param(c) != ONCE_OK)
        return ONCE_EINVAL;

    once_send_req req;
    memset(&req, 0, sizeof req);
    req.principal = c->req->principal;
    req.message = msg;
    req.task_id = str_or(json_object_get(msg, "taskId"), NULL);
    req.extension = c->extension;
    req.return_immediately = immediately;
    req.wait_ms = once__a2a_wait_ms(c->a);
    req.history_length = history;
    req.text_result = !c->tree_result;
    req.metadata = json_is_object(md) ? md : NULL;
    req.push_config = push;
    req.push_v03 = c->v03;

    once_send_res res;
    memset(&res, 0, sizeof res);
    int rc = send_to_engine(c, &req, &res);
    if (rc == ONCE__EAGAIN && c->req->inline_only)
        return ONCE__EAGAIN;   /* nothing done (a2a.h) */
    if (rc == ONCE_EUNSUPPORTED && push != NULL)
        return push_not_supported(c, "configuration.taskPushNotificationConfig",
                                  "by this agent's task store");
    return map_send(c, rc, &res, &req, history, 0);
}

int once__a2a_h_legacy_send(a2a_call *c)
{
    a2a_verr e;
    const json_t *id = json_object_get(c->params, "id");
    if (id == NULL) {
        once__a2a_verr(&e, "id", "id is required (the client chooses the task id in A2A 0.1)");
        return once__a2a_fail_params(c, &e);
    }
    if (once__a2a_check_id(id, "id", &e) != ONCE_OK)
        return once__a2a_fail_params(c, &e);
    const json_t *session = json_object_get(c->params, "sessionId");
    if (session != NULL && !json_is_null(session) &&
        once__a2a_check_id(session, "sessionId", &e) != ONCE_OK)
        return once__a2a_fail_params(c, &e);
    const json_t *push = json_object_get(c->params, "pushNotification");
    if (push != NULL && !json_is_null(push))
        return push_not_supported(c, "pushNotification",
                                  "with A2A 0.1 tasks/send; use SendMessage with "
                                  "configuration.taskPushNotificationConfig");
    int history;
    if (once__a2a_check_history(json_object_get(c->params, "historyLength"), "historyLength",
                            &history, &e) != ONCE_OK)
        return once__a2a_fail_params(c, &e);
    json_t *md = json_object_get(c->params, "metadata");
    if (check_metadata(c, md, "metadata") != ONCE_OK)
        return ONCE_EINVAL;

    const json_t *msg01 = json_object_get(c->params, "message");
    json_t *msg = NULL;
    if (msg01 == NULL) {
        once__a2a_verr(&e, "message", "message is required");
        return once__a2a_fail_params(c, &e);
    }
    int lrc = once__a2a_legacy_message_in(msg01, &msg, &e);
    if (lrc == ONCE_ENOMEM)
        return lrc;
    if (lrc != ONCE_OK)
        return once__a2a_fail_params(c, &e);
    const char *task_id = json_string_value(id);
    /* The 1.0 message carries the ids the 0.1 envelope had beside it; the
     * digest covers neither, so a retry hashes the same. */
    const json_t *mt = json_object_get(msg, "taskId");
    if (mt != NULL && !(json_is_string(mt) && strcmp(json_string_value(mt), task_id) == 0)) {
        json_decref(msg);
        once__a2a_verr(&e, "message.taskId", "message.taskId must equal id");
        return once__a2a_fail_params(c, &e);
    }
    int ok = json_object_set_new(msg, "taskId", json_string(task_id)) == 0;
    if (ok && json_is_string(session) && json_object_get(msg, "contextId") == NULL)
        ok = json_object_set(msg, "contextId", (json_t *)session) == 0;
    if (!ok) {
        json_decref(msg);
        return ONCE_ENOMEM;
    }
    if (once__a2a_check_message(msg, "message", 1, once__a2a_max_parts(c->a), &e) != ONCE_OK) {
        json_decref(msg);
        return once__a2a_fail_params(c, &e);
    }

    once_send_req req;
    memset(&req, 0, sizeof req);
    req.principal = c->req->principal;
    req.message = msg;
    req.task_id = task_id;
    req.extension = c->extension;
    req.legacy = 1;
    req.return_immediately = 0;
    req.wait_ms = once__a2a_wait_ms(c->a);
    req.history_length = history;
    req.metadata = json_is_object(md) ? md : NULL;

    once_send_res res;
    memset(&res, 0, sizeof res);
    int rc = send_to_engine(c, &req, &res);
    rc = map_send(c, rc, &res, &req, history, 1);
    json_decref(msg);
    return rc;
}
