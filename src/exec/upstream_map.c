/*
 * upstream_map.c -- the upstream's answer as fenced writes on the once task:
 * a Task snapshot (the answer to a send, a GetTask poll) becomes the
 * artifacts that changed, then the status: WORKING (once, and again for each
 * new progress message), INPUT_REQUIRED and AUTH_REQUIRED with the agent's
 * question, COMPLETED, FAILED and REJECTED with the upstream's own message;
 * an upstream task canceled by someone else fails the once task saying so.
 * A direct Message answer becomes the turn's reply. A stream's events map
 * the same way, one at a time: a status update as the Task's status, an
 * artifact update with append as a chunk appended to what the view holds
 * (the view then holds the artifact as the engine stored it: parts after
 * parts), lastChunk passed on.
 *
 * Invariants: the view starts from the once task as stored (a re-run turn
 * writes only what the task does not show yet), and an artifact from a
 * snapshot is written whole under the upstream's artifactId (a replace,
 * never a second copy), so following the same upstream task twice writes
 * nothing twice. A chunk is appended only to an artifact the view holds; a
 * stream cut after some chunks is re-attached from a snapshot (SubscribeToTask's
 * first event, GetTask), which replaces the artifact whole if it differs.
 * Messages lose the upstream's taskId and contextId, which name the
 * upstream's objects, not once's; once fills in its own.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/jcs.h"
#include "exec/upstream.h"

static char *dump(const json_t *v)
{
    return json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
}

int once__gw_view_init(gw_view *v, once_work *w, const char *url)
{
    memset(v, 0, sizeof *v);
    v->url = url;
    v->arts = json_object();
    if (v->arts == NULL)
        return ONCE_ENOMEM;
    json_t *task = NULL;
    const char *text = once_work_task(w);
    if (text == NULL || once__json_loads(text, 0, &task, NULL) != ONCE_OK)
        return ONCE_OK; /* a task we cannot read: write everything */
    const json_t *st = json_object_get(task, "status");
    v->state = once_state_parse(json_string_value(json_object_get(st, "state")));
    const char *mid =
        json_string_value(json_object_get(json_object_get(st, "message"), "messageId"));
    if (mid != NULL)
        v->status_mid = once_strdup(mid);
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(task, "artifacts"), i, a) {
        const char *id = json_string_value(json_object_get(a, "artifactId"));
        if (id != NULL)
            json_object_set(v->arts, id, a);
    }
    json_decref(task);
    return ONCE_OK;
}

void once__gw_view_clear(gw_view *v)
{
    json_decref(v->arts);
    once_free(v->status_mid);
    memset(v, 0, sizeof *v);
}

int once__gw_fail(once_work *w, const char *fmt, ...)
{
    char why[800];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    int rc = once_work_fail(w, why);
    return rc == ONCE_EILLEGAL ? ONCE_OK : rc; /* it ended meanwhile (a cancel) */
}

/* The upstream message as once writes it (once_free), or NULL in *out
 * when there is none. */
static int message_text(const json_t *m, char **out)
{
    *out = NULL;
    if (!json_is_object(m) || !json_is_array(json_object_get(m, "parts")))
        return ONCE_OK;
    json_t *c = json_copy((json_t *)m);
    if (c == NULL)
        return ONCE_ENOMEM;
    json_object_del(c, "taskId");
    json_object_del(c, "contextId");
    *out = json_dumps(c, JSON_COMPACT);
    json_decref(c);
    return *out ? ONCE_OK : ONCE_ENOMEM;
}

static int sync_artifacts(gw_view *v, once_work *w, const json_t *arts)
{
    size_t i;
    json_t *a;
    json_array_foreach(arts, i, a) {
        const char *id = json_string_value(json_object_get(a, "artifactId"));
        if (id == NULL)
            continue;
        const json_t *had = json_object_get(v->arts, id);
        if (had != NULL && json_equal((json_t *)had, a))
            continue;
        char *text = dump(a);
        if (text == NULL)
            return ONCE_ENOMEM;
        int rc = once_work_artifact(w, text, 0, 1);
        once_free(text);
        if (rc != ONCE_OK)
            return rc;
        v->writes++;
        json_object_set(v->arts, id, a);
    }
    return ONCE_OK;
}

/* A status write with the upstream's message, when it is news. */
static int put_status(gw_view *v, once_work *w, once_state s, const json_t *msg)
{
    const char *mid = json_string_value(json_object_get(msg, "messageId"));
    int fresh = mid != NULL && (v->status_mid == NULL || strcmp(mid, v->status_mid) != 0);
    if (s == v->state && !fresh)
        return ONCE_OK;
    char *text;
    int rc = message_text(msg, &text);
    if (rc == ONCE_OK)
        rc = once_work_status(w, s, text);
    once_free(text);
    if (rc == ONCE_OK) {
        v->state = s;
        v->writes++;
        if (fresh) {
            once_free(v->status_mid);
            v->status_mid = once_strdup(mid);
        }
    }
    return rc;
}

/* FAILED or REJECTED: the upstream's message, or a reason naming it. */
static int put_failure(gw_view *v, once_work *w, once_state s, const json_t *msg,
                       const char *up_id)
{
    if (json_is_array(json_object_get(msg, "parts")))
        return put_status(v, w, s, msg);
    if (s == ONCE_STATE_REJECTED) {
        json_t *m = json_pack("{s:s,s:[{s:s}]}", "role", "ROLE_AGENT", "parts", "text",
                              "the upstream agent rejected the task");
        int rc = m ? put_status(v, w, s, m) : ONCE_ENOMEM;
        json_decref(m);
        return rc;
    }
    return once__gw_fail(w, "upstream %s: task %s failed (no message)", v->url, up_id);
}

int once__gw_sync_task(gw_view *v, once_work *w, const json_t *task)
{
    int rc = sync_artifacts(v, w, json_object_get(task, "artifacts"));
    if (rc != ONCE_OK)
        return rc;
    return once__gw_sync_status(v, w, json_object_get(task, "status"),
                                json_string_value(json_object_get(task, "id")));
}

int once__gw_sync_status(gw_view *v, once_work *w, const json_t *st, const char *up_id)
{
    const json_t *msg = json_object_get(st, "message");
    once_state s = once_state_parse(json_string_value(json_object_get(st, "state")));
    int rc;
    switch (s) {
    case ONCE_STATE_INPUT_REQUIRED:
    case ONCE_STATE_AUTH_REQUIRED:
    case ONCE_STATE_COMPLETED:
        rc = put_status(v, w, s, msg);
        return rc == ONCE_OK ? 1 : rc;
    case ONCE_STATE_FAILED:
    case ONCE_STATE_REJECTED:
        rc = put_failure(v, w, s, msg, up_id ? up_id : "?");
        return rc == ONCE_OK ? 1 : rc;
    case ONCE_STATE_CANCELED:
        rc = once__gw_fail(w, "upstream %s: task %s was canceled there", v->url,
                           up_id ? up_id : "?");
        return rc == ONCE_OK ? 1 : rc;
    case ONCE_STATE_WORKING:
        return put_status(v, w, s, msg);
    default:
        return ONCE_OK; /* submitted, or a state we do not know: wait */
    }
}

/* The artifact the view holds for id with ev's parts after its own, the
 * engine's append (new reference). */
static json_t *extended(const json_t *had, const json_t *chunk)
{
    json_t *a = json_deep_copy(had);
    json_t *parts = json_object_get(a, "parts");
    if (a == NULL || !json_is_array(parts) ||
        json_array_extend(parts, json_object_get(chunk, "parts")) != 0) {
        json_decref(a);
        return NULL;
    }
    return a;
}

int once__gw_sync_chunk(gw_view *v, once_work *w, const json_t *ev)
{
    const json_t *a = json_object_get(ev, "artifact");
    const char *id = json_string_value(json_object_get(a, "artifactId"));
    if (id == NULL || !json_is_array(json_object_get(a, "parts")))
        return ONCE_OK;
    const json_t *had = json_object_get(v->arts, id);
    int append = json_is_true(json_object_get(ev, "append")) && had != NULL;
    if (!append && had != NULL && json_equal((json_t *)had, (json_t *)a))
        return ONCE_OK; /* a re-attached stream repeats what is written */
    json_t *now = append ? extended(had, a) : json_incref((json_t *)a);
    char *text = now ? dump(a) : NULL;
    int rc =
        text ? once_work_artifact(w, text, append, json_is_true(json_object_get(ev, "lastChunk")))
             : ONCE_ENOMEM;
    if (rc == ONCE_OK)
        v->writes++;
    if (rc == ONCE_OK && json_object_set(v->arts, id, now) != 0)
        rc = ONCE_ENOMEM;
    once_free(text);
    json_decref(now);
    return rc;
}

int once__gw_reply(gw_view *v, once_work *w, const json_t *msg)
{
    char *text;
    int rc = message_text(msg, &text);
    if (rc != ONCE_OK)
        return rc;
    if (text == NULL)
        return once__gw_fail(w, "upstream %s answered with a Message without parts", v->url);
    rc = once_work_reply(w, text);
    if (rc == ONCE_EILLEGAL) /* a continuation cannot become a Message: complete with it */
        rc = once_work_status(w, ONCE_STATE_COMPLETED, text);
    once_free(text);
    return rc;
}
