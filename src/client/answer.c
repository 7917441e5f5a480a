/*
 * answer.c -- turning a JSON-RPC answer into a once_call_result: the task
 * (or Message) of a result, the code, ErrorInfo reason and named state of
 * an error. Owns the result's string fields; once_call_result_clear frees.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/str.h"
#include "client/client_int.h"

void once_call_result_clear(once_call_result *r)
{
    if (r == NULL)
        return;
    once_free(r->json);
    once_free(r->error);
    once_free(r->endpoint);
    memset(r, 0, sizeof *r);
}

void once__result_set_error(once_call_result *r, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char *d = once_strdup(buf);
    if (d == NULL)
        return;   /* the old text stays: better than none */
    once_free(r->error);
    r->error = d;
}

static void set_task_id(once_call_result *r, const char *id)
{
    if (id != NULL && strlen(id) <= ONCE_ID_MAX)
        once__strlcpy(r->task_id, id, sizeof r->task_id);
}

static int set_json(once_call_result *r, const json_t *v)
{
    /* json_dumps allocates through once_malloc: the text is r's as it is. */
    char *s = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (s == NULL)
        return ONCE_ENOMEM;
    once_free(r->json);
    r->json = s;
    return ONCE_OK;
}

int once__result_from_task(once_call_result *r, const json_t *task)
{
    if (!json_is_object(task))
        return ONCE_EPARSE;
    set_task_id(r, json_string_value(json_object_get(task, "id")));
    const char *st = json_string_value(json_object_get(json_object_get(task, "status"), "state"));
    r->state = st ? once_state_parse(st) : ONCE_STATE_UNKNOWN;
    r->is_message = 0;
    return set_json(r, task);
}

int once__result_from_send(once_call_result *r, const json_t *result)
{
    const json_t *task = json_object_get(result, "task");
    if (json_is_object(task))
        return once__result_from_task(r, task);
    const json_t *msg = json_object_get(result, "message");
    if (!json_is_object(msg))
        return ONCE_EPARSE;
    /* A direct Message: the task it answers may be named in it. */
    set_task_id(r, json_string_value(json_object_get(msg, "taskId")));
    r->state = ONCE_STATE_UNKNOWN;
    r->is_message = 1;
    return set_json(r, msg);
}

void once__result_from_error(once_call_result *r, const json_t *error)
{
    r->rpc_code = (int)json_integer_value(json_object_get(error, "code"));
    const char *msg = json_string_value(json_object_get(error, "message"));
    once__result_set_error(r, "%s", msg ? msg : "error without a message");
    r->reason[0] = '\0';
    const json_t *data = json_object_get(error, "data");
    const json_t *info = json_is_object(data) ? data : NULL;
    size_t i;
    const json_t *d;
    json_array_foreach(data, i, d)
    {
        const char *t = json_string_value(json_object_get(d, "@type"));
        /* The last one is the most precise: a server may send A2A's type
         * first and its own finer reason after it (onced does). */
        if (t != NULL && strstr(t, "google.rpc.ErrorInfo") != NULL)
            info = d;
    }
    const char *reason = json_string_value(json_object_get(info, "reason"));
    if (reason != NULL)
        once__strlcpy(r->reason, reason, sizeof r->reason);
    const json_t *meta = json_object_get(info, "metadata");
    const char *st = json_string_value(json_object_get(meta, "state"));
    if (st != NULL)
        r->state = once_state_parse(st);
    const char *tid = json_string_value(json_object_get(meta, "taskId"));
    if (tid != NULL && r->task_id[0] == '\0')
        set_task_id(r, tid);
}
