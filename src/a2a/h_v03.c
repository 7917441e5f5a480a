/*
 * h_v03.c -- the A2A 0.3 JSON-RPC methods, answered by the 1.0 handlers:
 * each 0.3 call's params are converted to its 1.0 method's (core/v03.c),
 * that method's handler runs as it does for a 1.0 client (the same
 * validation, engine, idempotency and errors), and its result is converted
 * back (once__a2a_v03_result, from conclude() in a2a.c, so that a deferred
 * blocking send's answer is converted the same way). Streams convert each
 * frame (h_stream.c).
 *
 *   message/send                          SendMessage
 *   message/stream                        SendStreamingMessage
 *   tasks/get                             GetTask
 *   tasks/cancel                          CancelTask
 *   tasks/resubscribe                     SubscribeToTask
 *   tasks/pushNotificationConfig/set      CreateTaskPushNotificationConfig
 *   tasks/pushNotificationConfig/get      GetTaskPushNotificationConfig
 *   tasks/pushNotificationConfig/list     ListTaskPushNotificationConfigs
 *   tasks/pushNotificationConfig/delete   DeleteTaskPushNotificationConfig
 *   agent/getAuthenticatedExtendedCard    GetExtendedAgentCard
 *
 * What 0.3 says differently: the task queries name the task "id" and the
 * config "pushNotificationConfigId" (1.0: taskId and id); a get without a
 * config id answers the task's first config; list answers a bare array,
 * delete null; "metadata" on the task queries has no 1.0 place and is
 * dropped.
 *
 * The same rows answer 0.3's HTTP+JSON routes (rest.c), whose path
 * members carry the JSON-RPC params' names: there the bodies and answers
 * are the JSON mapping of 0.3's proto (core/v03_proto.c; the call's v03
 * is A2A_V03_PROTO), list answers {configs, nextPageToken}, delete {}
 * (google.protobuf.Empty), and errors are the JSON-RPC error object with
 * the HTTP status its code maps to, as @a2a-js/sdk's 0.3 REST server
 * answers them.
 */
#include <string.h>

#include "a2a/a2a_int.h"
#include "core/jcs.h"
#include "core/v03.h"
#include "core/v03_proto.h"

enum { P_SEND, P_TASK, P_PUSH_SET, P_PUSH_ONE, P_PUSH_LIST, P_CARD };
enum { R_EVENT, R_TASK, R_PUSH, R_PUSH_LIST, R_NULL, R_AS_IS };

static const struct {
    const char *name, *name10;
    int params, result;
} rows[] = {
    {"message/send", "SendMessage", P_SEND, R_EVENT},
    {"message/stream", "SendStreamingMessage", P_SEND, R_AS_IS},
    {"tasks/get", "GetTask", P_TASK, R_TASK},
    {"tasks/cancel", "CancelTask", P_TASK, R_TASK},
    {"tasks/resubscribe", "SubscribeToTask", P_TASK, R_AS_IS},
    {"tasks/pushNotificationConfig/set", "CreateTaskPushNotificationConfig", P_PUSH_SET, R_PUSH},
    {"tasks/pushNotificationConfig/get", "GetTaskPushNotificationConfig", P_PUSH_ONE, R_PUSH},
    {"tasks/pushNotificationConfig/list", "ListTaskPushNotificationConfigs", P_PUSH_LIST,
     R_PUSH_LIST},
    {"tasks/pushNotificationConfig/delete", "DeleteTaskPushNotificationConfig", P_PUSH_ONE,
     R_NULL},
    {"agent/getAuthenticatedExtendedCard", "GetExtendedAgentCard", P_CARD, R_AS_IS},
};
#define NROWS (sizeof rows / sizeof rows[0])

static int row_of(const char *name)
{
    for (size_t i = 0; i < NROWS; i++)
        if (strcmp(rows[i].name, name) == 0)
            return (int)i;
    return -1;
}

const char *once__a2a_v03_successor(const char *name)
{
    int r = row_of(name);
    return r < 0 ? NULL : rows[r].name10;
}

/* {id, historyLength?, metadata?} (and the config's id) as the 1.0
 * method's {id|taskId, ...}. */
static json_t *task_params(const json_t *p, int kind)
{
    json_t *out = json_object(); /* not json_copy: it may leave members out */
    if (out == NULL || json_object_update(out, (json_t *)p) != 0) {
        json_decref(out);
        return NULL;
    }
    (void)json_object_del(out, "metadata");
    int bad = 0;
    if (kind == P_PUSH_ONE || kind == P_PUSH_LIST) {
        json_t *task = json_object_get(p, "id");
        json_t *cfg = json_object_get(p, "pushNotificationConfigId");
        (void)json_object_del(out, "id");
        (void)json_object_del(out, "pushNotificationConfigId");
        if (task != NULL)
            bad |= json_object_set(out, "taskId", task) != 0;
        if (cfg != NULL)
            bad |= json_object_set(out, "id", cfg) != 0;
    }
    if (bad) {
        json_decref(out);
        return NULL;
    }
    return out;
}

static json_t *params_in(int kind, const json_t *p, a2a_v03 v03)
{
    switch (kind) {
    case P_SEND:
        return v03 == A2A_V03_PROTO ? once__v03_proto_send_params_in(p)
                                    : once__v03_send_params_in(p);
    case P_PUSH_SET:
        return v03 == A2A_V03_PROTO ? once__v03_proto_push_in(p) : once__v03_push_in(p);
    case P_TASK:
    case P_PUSH_ONE:
    case P_PUSH_LIST:
        return task_params(p, kind);
    default:
        return json_incref((json_t *)p);
    }
}

/* The 1.0 row named name. */
static const a2a_method *method10(const once__a2a *a, const char *name)
{
    size_t idx;
    return once__a2a_lookup(a, name, &idx);
}

/* tasks/pushNotificationConfig/get without a config id: the task's first
 * config, as 0.3 servers answered it. */
static int first_config(a2a_call *c)
{
    json_t *saved = c->params, *p = json_object();
    json_t *task = json_object_get(saved, "taskId");
    if (p == NULL || (task != NULL && json_object_set(p, "taskId", task) != 0)) {
        json_decref(p);
        return ONCE_ENOMEM;
    }
    c->params = p;
    int rc = method10(c->a, "ListTaskPushNotificationConfigs")->handler(c);
    c->params = saved;
    json_decref(p);
    if (rc != ONCE_OK)
        return rc;
    json_t *first = json_array_get(json_object_get(c->result, "configs"), 0);
    if (first == NULL) {
        json_decref(c->result);
        c->result = NULL;
        once__a2a_fail(c, ONCE_RPC_TASK_NOT_FOUND, "PUSH_NOTIFICATION_CONFIG_NOT_FOUND",
                       "Task %s has no push notification config",
                       json_string_value(task) ? json_string_value(task) : "");
        once__a2a_meta(c, "taskId", json_string_value(task) ? json_string_value(task) : "");
        return ONCE_EINVAL;
    }
    json_incref(first);
    json_decref(c->result);
    c->result = first;
    return ONCE_OK;
}

int once__a2a_h_v03(a2a_call *c)
{
    int r = row_of(c->m->name);
    const a2a_method *m = r < 0 ? NULL : method10(c->a, rows[r].name10);
    if (m == NULL)
        return once__a2a_fail(c, ONCE_RPC_INTERNAL, "INTERNAL", "Internal error (no 1.0 method)");
    json_t *p = params_in(rows[r].params, c->params, c->v03);
    if (p == NULL)
        return ONCE_ENOMEM;
    json_t *saved = c->params;
    c->params = p;
    c->tree_result = 1;   /* converted in conclude(): a tree, not text */
    int rc;
    if (rows[r].params == P_PUSH_ONE && rows[r].result == R_PUSH &&
        json_object_get(p, "id") == NULL)
        rc = first_config(c);
    else
        rc = m->handler(c);
    c->params = saved;
    json_decref(p);
    return rc;
}

a2a_v03 once__a2a_v03_form(once__a2a_binding b)
{
    return b == ONCE_A2A_HTTP_JSON ? A2A_V03_PROTO : A2A_V03_RPC;
}

/* A 1.0 ListTaskPushNotificationConfigs result as 0.3 JSON-RPC's array. */
static json_t *push_list_out(const json_t *res)
{
    json_t *out = json_array();
    size_t i;
    json_t *cfg;
    json_array_foreach(json_object_get(res, "configs"), i, cfg) {
        if (out != NULL && json_array_append_new(out, once__v03_push_out(cfg)) != 0) {
            json_decref(out);
            out = NULL;
        }
    }
    return out;
}

static json_t *null_out(const json_t *res)
{
    (void)res;
    return json_null();
}

static json_t *empty_out(const json_t *res)
{
    (void)res;
    return json_object();
}

/* Each result kind's conversion, per 0.3 form: [R_*][0] JSON-RPC, [1] proto
 * JSON (R_AS_IS: none). */
static json_t *(*const results_out[][2])(const json_t *) = {
    [R_EVENT] = {once__v03_event_out, once__v03_proto_event_out},
    [R_TASK] = {once__v03_task_out, once__v03_proto_task_out},
    [R_PUSH] = {once__v03_push_out, once__v03_proto_push_out},
    [R_PUSH_LIST] = {push_list_out, once__v03_proto_push_list_out},
    [R_NULL] = {null_out, empty_out},
};

int once__a2a_v03_result(const char *name, a2a_v03 v03, json_t **result)
{
    int r = row_of(name);
    if (r < 0 || *result == NULL || rows[r].result == R_AS_IS)
        return ONCE_OK;
    json_t *out = results_out[rows[r].result][v03 == A2A_V03_PROTO](*result);
    if (out == NULL)
        return ONCE_ENOMEM;
    json_decref(*result);
    *result = out;
    return ONCE_OK;
}

char *once__a2a_v03_frame(const char *payload, int last, a2a_v03 v03)
{
    json_t *ev = NULL, *out = NULL;
    char *text = NULL;
    size_t len;
    if (once__json_loads(payload, 0, &ev, NULL) != ONCE_OK ||
        (out = results_out[R_EVENT][v03 == A2A_V03_PROTO](ev)) == NULL) {
        json_decref(ev);
        return NULL;
    }
    /* The status update proto JSON wraps; JSON-RPC's is the event itself. */
    json_t *su = v03 == A2A_V03_PROTO ? json_object_get(out, "statusUpdate") : out;
    if (json_object_get(su, "final") == NULL ||
        json_object_set_new(su, "final", json_boolean(last)) == 0)
        (void)once__a2a_json_dump(out, &text, &len);
    json_decref(ev);
    json_decref(out);
    return text;
}

/* --- 0.3 HTTP+JSON errors ------------------------------------------------ */

int once__a2a_v03_rest_status(int code, int http_status)
{
    if (http_status != 0 && http_status != 200)
        return http_status;
    switch (code) {
    case ONCE_RPC_TASK_NOT_FOUND:
        return 404;
    case ONCE_RPC_METHOD_NOT_FOUND:
        return 501;
    case ONCE_RPC_INTERNAL:
    case -32006: /* InvalidAgentResponse */
        return 500;
    default:
        return code <= -32000 && code >= -32768 ? 400 : 500;
    }
}

int once__a2a_v03_rest_answer(int http_status, int code, const char *reason, const char *message,
                              json_t *meta, once__a2a_response *resp)
{
    memset(resp, 0, sizeof *resp);
    json_t *err = once__a2a_rpc_error(code, reason, message, meta);
    int rc = err != NULL ? once__a2a_json_dump(err, &resp->body, &resp->len) : ONCE_ENOMEM;
    json_decref(err);
    if (rc == ONCE_OK)
        resp->http_status = once__a2a_v03_rest_status(code, http_status);
    return rc;
}
