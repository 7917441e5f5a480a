/*
 * h_push.c -- the A2A 1.0 push notification config methods:
 *
 *   CreateTaskPushNotificationConfig   params: TaskPushNotificationConfig
 *       {taskId, url, id?, token?, authentication?: {scheme, credentials?},
 *        tenant?}                      result: the stored config
 *   GetTaskPushNotificationConfig      {taskId, id}      -> the config
 *   ListTaskPushNotificationConfigs    {taskId, pageSize?, pageToken?}
 *                                      -> {configs, nextPageToken: ""}
 *   DeleteTaskPushNotificationConfig   {taskId, id}      -> {} (idempotent)
 *
 * With the idempotency extension active, each config also carries our
 * "delivery" member (progress, counters, disabled and the last error).
 * Errors: bad shape or a refused url -32602 INVALID_PARAMS {field}; unknown
 * task -32001 TASK_NOT_FOUND; unknown config -32001
 * PUSH_NOTIFICATION_CONFIG_NOT_FOUND {taskId, id}; expired task -32001
 * TASK_EXPIRED; a backend without push -32003.
 *
 * The shape check (once__a2a_check_push_config) is shared with SendMessage's
 * configuration.taskPushNotificationConfig.
 */
#include <string.h>

#include "a2a/a2a_int.h"

static int str_member(const json_t *o, const char *key, const char *prefix, int required,
                      a2a_verr *e)
{
    /* Room for any prefix the callers pass plus the longest key. */
    char f[sizeof e->field + 32];
    snprintf(f, sizeof f, "%s%s", prefix, key);
    const json_t *v = json_object_get(o, key);
    if (v == NULL || json_is_null(v))
        return required ? once__a2a_verr(e, f, "%s is required", f) : ONCE_OK;
    if (!json_is_string(v))
        return once__a2a_verr(e, f, "%s must be a string", f);
    return ONCE_OK;
}

int once__a2a_check_push_config(const json_t *cfg, const char *field, int need_task, a2a_verr *e)
{
    static const char *const members[] = {"tenant", "id",    "taskId",
                                          "url",    "token", "authentication"};
    char prefix[64];   /* field is a short fixed path */
    snprintf(prefix, sizeof prefix, "%s%s", field, field[0] ? "." : "");
    if (!json_is_object(cfg))
        return once__a2a_verr(e, field[0] ? field : "params", "%s must be an object",
                              field[0] ? field : "params");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)cfg, key, v)
    {
        size_t i = 0;
        while (i < sizeof members / sizeof members[0] && strcmp(key, members[i]) != 0)
            i++;
        if (i == sizeof members / sizeof members[0]) {
            char f[sizeof e->field];
            snprintf(f, sizeof f, "%s%s", prefix, key);
            if (strcmp(key, "pushNotificationConfig") == 0)
                return once__a2a_verr(e, f,
                                      "%s is the A2A 0.3 shape; in 1.0 url, token and "
                                      "authentication sit in the config itself",
                                      f);
            return once__a2a_verr(e, f, "unknown member %s in a TaskPushNotificationConfig", f);
        }
    }
    if (str_member(cfg, "url", prefix, 1, e) != ONCE_OK ||
        str_member(cfg, "token", prefix, 0, e) != ONCE_OK ||
        str_member(cfg, "tenant", prefix, 0, e) != ONCE_OK)
        return ONCE_EINVAL;
    char f[sizeof e->field];
    static const char *const ids[] = {"taskId", "id"};
    for (size_t k = 0; k < 2; k++) {
        const json_t *idv = json_object_get(cfg, ids[k]);
        snprintf(f, sizeof f, "%s%s", prefix, ids[k]);
        if (k == 0 && need_task && idv == NULL)
            return once__a2a_verr(e, f, "%s is required", f);
        /* An empty id asks the server to mint one (proto3 default). */
        if (idv != NULL && !json_is_null(idv) &&
            !(k == 1 && json_is_string(idv) && json_string_length(idv) == 0) &&
            once__a2a_check_id(idv, f, e) != ONCE_OK)
            return ONCE_EINVAL;
    }
    const json_t *auth = json_object_get(cfg, "authentication");
    if (auth != NULL && !json_is_null(auth)) {
        snprintf(f, sizeof f, "%sauthentication", prefix);
        if (!json_is_object(auth))
            return once__a2a_verr(e, f, "%s must be an object", f);
        json_object_foreach((json_t *)auth, key, v)
        {
            if (strcmp(key, "scheme") != 0 && strcmp(key, "credentials") != 0) {
                char g[2 * sizeof e->field];
                snprintf(g, sizeof g, "%s.%s", f, key);
                return once__a2a_verr(e, g,
                                      "unknown member %s (AuthenticationInfo has scheme and "
                                      "credentials)",
                                      g);
            }
        }
        snprintf(f, sizeof f, "%sauthentication.", prefix);
        if (str_member(auth, "scheme", f, 1, e) != ONCE_OK ||
            str_member(auth, "credentials", f, 0, e) != ONCE_OK)
            return ONCE_EINVAL;
    }
    return ONCE_OK;
}

/* Map an engine answer; res->field is relative to params. */
static int fail_push(a2a_call *c, int rc, const once_push_res *res, const char *task_id,
                     const char *id)
{
    a2a_verr e;
    switch (rc) {
    case ONCE_EINVAL:
        once__a2a_verr(&e, res->field && res->field[0] ? res->field : "params", "%s",
                       res->detail[0] ? res->detail : "rejected by the engine");
        return once__a2a_fail_params(c, &e);
    case ONCE_ENOTFOUND:
        if (res->field != NULL && strcmp(res->field, "id") == 0) {
            once__a2a_fail(c, ONCE_RPC_TASK_NOT_FOUND, "PUSH_NOTIFICATION_CONFIG_NOT_FOUND",
                           "Task %s has no push notification config %s", task_id, id ? id : "");
            once__a2a_meta(c, "taskId", task_id);
            once__a2a_meta(c, "id", id);
            return ONCE_EINVAL;
        }
        return once__a2a_fail_not_found(c, task_id);
    case ONCE_ETOMBSTONE:
        return once__a2a_fail_expired(c, task_id, res->expired_at);
    case ONCE_EUNSUPPORTED:
        return once__a2a_fail_unsupported(c, ONCE_RPC_PUSH_NOT_SUPPORTED,
                                          "PUSH_NOTIFICATION_NOT_SUPPORTED",
                                          "this server's task store keeps no push delivery state "
                                          "(capabilities.pushNotifications is false)");
    default:
        return once__a2a_fail_engine(c, rc);
    }
}

/* The backend's push slots, or a -32003 answer. */
static const once__a2a_backend *push_backend(a2a_call *c)
{
    const once__a2a_backend *b = once__a2a_backend_of(c->a);
    if (b->push_create != NULL && b->push_get != NULL && b->push_list != NULL &&
        b->push_delete != NULL)
        return b;
    once_push_res res;
    memset(&res, 0, sizeof res);
    fail_push(c, ONCE_EUNSUPPORTED, &res, "", NULL);
    return NULL;
}

/* A push method's answer: the backend's out as the result, or its error
 * (out, if any, dropped). */
static int push_answer(a2a_call *c, int rc, json_t *out, const once_push_res *res,
                       const char *task_id, const char *id)
{
    if (rc != ONCE_OK) {
        json_decref(out);
        return fail_push(c, rc, res, task_id, id);
    }
    c->result = out;
    return ONCE_OK;
}

/* The start of every method that names its configs by key: the backend,
 * taskId (required) and, when want_id, id (required). NULL once the call
 * has failed (no push configs here, or a key missing). */
static const once__a2a_backend *keyed_backend(a2a_call *c, int want_id, const char **task_id,
                                              const char **id)
{
    const once__a2a_backend *b = push_backend(c);
    if (b == NULL || once__a2a_id_param(c, "taskId", NULL, task_id) != ONCE_OK)
        return NULL;
    if (want_id && once__a2a_id_param(c, "id", "id (the push notification config id)", id) !=
                       ONCE_OK)
        return NULL;
    return b;
}

int once__a2a_h_push_create(a2a_call *c)
{
    const once__a2a_backend *b = push_backend(c);
    if (b == NULL)
        return ONCE_EINVAL;
    a2a_verr e;
    if (once__a2a_check_push_config(c->params, "", 1, &e) != ONCE_OK)
        return once__a2a_fail_params(c, &e);
    const char *task_id = json_string_value(json_object_get(c->params, "taskId"));
    once_push_res res;
    json_t *out = NULL;
    /* Set over A2A 0.3: its deliveries carry 0.3 bodies (engine/push.h). */
    json_t *cfg = c->v03 ? json_copy(c->params) : json_incref(c->params);
    if (cfg == NULL || (c->v03 && json_object_set_new(cfg, ONCE__PUSH_V03, json_true()) != 0)) {
        json_decref(cfg);
        return ONCE_ENOMEM;
    }
    int rc = b->push_create(b->ctx, c->req->principal, cfg, c->extension, &out, &res);
    json_decref(cfg);
    return push_answer(c, rc, out, &res, task_id, NULL);
}

/* Get and Delete name one config by taskId and id; Delete answers with
 * google.protobuf.Empty. */
static int by_key(a2a_call *c, int del)
{
    const char *task_id, *id;
    const once__a2a_backend *b = keyed_backend(c, 1, &task_id, &id);
    if (b == NULL)
        return ONCE_EINVAL;
    once_push_res res;
    json_t *out = NULL;
    int rc = del ? b->push_delete(b->ctx, c->req->principal, task_id, id, &res)
                 : b->push_get(b->ctx, c->req->principal, task_id, id, c->extension, &out, &res);
    if (rc == ONCE_OK && del && (out = json_object()) == NULL)
        return ONCE_ENOMEM;
    return push_answer(c, rc, out, &res, task_id, id);
}

int once__a2a_h_push_get(a2a_call *c)
{
    return by_key(c, 0);
}

int once__a2a_h_push_list(a2a_call *c)
{
    const char *task_id = NULL;
    const once__a2a_backend *b = keyed_backend(c, 0, &task_id, NULL);
    if (b == NULL)
        return ONCE_EINVAL;
    a2a_verr e;
    const json_t *ps = json_object_get(c->params, "pageSize");
    if (ps != NULL && !json_is_null(ps) &&
        (!json_is_integer(ps) || json_integer_value(ps) < 0 || json_integer_value(ps) > 1000)) {
        once__a2a_verr(&e, "pageSize", "pageSize must be an integer from 0 to 1000");
        return once__a2a_fail_params(c, &e);
    }
    /* Every config fits one page (at most ONCE_PUSH_CONFIGS_MAX), so the
     * only valid page token is the empty one. */
    const json_t *pt = json_object_get(c->params, "pageToken");
    if (pt != NULL && !json_is_null(pt) && !(json_is_string(pt) && json_string_length(pt) == 0)) {
        once__a2a_verr(&e, "pageToken", "pageToken is not one this server issued");
        return once__a2a_fail_params(c, &e);
    }
    once_push_res res;
    json_t *out = NULL;
    int rc = b->push_list(b->ctx, c->req->principal, task_id, c->extension, &out, &res);
    if (rc == ONCE_OK &&
        (out = json_pack("{s:o, s:s}", "configs", out, "nextPageToken", "")) == NULL)
        return ONCE_ENOMEM;
    return push_answer(c, rc, out, &res, task_id, NULL);
}

int once__a2a_h_push_delete(a2a_call *c)
{
    return by_key(c, 1);
}
