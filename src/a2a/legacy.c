/*
 * legacy.c -- A2A 0.1 shapes in and out, for tasks/send, tasks/get and
 * tasks/cancel (a2aproject/A2A v0.1.0 specification/json/a2a.json).
 *
 * In: a 0.1 Message ({role:"user", parts:[{type:"text", text}, {type:"file",
 * file:{name, mimeType, bytes|uri}}, {type:"data", data}], metadata}) becomes
 * the 1.0 Message the engine stores. The conversion is a pure function of the
 * input, so a retried 0.1 send produces the same 1.0 message and the same
 * digest (0.1 identity is the digest: docs/design.md section 4).
 *
 * Out: a 1.0 Task becomes a 0.1 Task: contextId -> sessionId, TASK_STATE_X ->
 * lowercase "x" with dashes, ROLE_* -> "user"/"agent", parts typed again.
 */
#include <stdio.h>
#include <string.h>

#include "a2a/a2a_int.h"

/* Copy src[key] into dst[key] when present. */
static int copy_member(json_t *dst, const json_t *src, const char *key)
{
    json_t *v = json_object_get(src, key);
    if (v == NULL)
        return 0;
    return json_object_set(dst, key, v);
}

/* A file part's members, in A2A 0.1 (file: {bytes, uri, name, mimeType})
 * and in 1.0 (the part itself: raw, url, filename, mediaType). */
static const char *const file_members[][2] = {
    {"bytes", "raw"}, {"uri", "url"}, {"name", "filename"}, {"mimeType", "mediaType"}};

/* Copy the file members src has into dst, renamed from the version at
 * column from (0: 0.1, 1: 1.0) to the other; 0, or -1 when one failed. */
static int copy_file_members(json_t *dst, const json_t *src, int from)
{
    int rc = 0;
    for (size_t i = 0; i < sizeof file_members / sizeof file_members[0]; i++) {
        json_t *v = json_object_get(src, file_members[i][from]);
        if (v != NULL)
            rc |= json_object_set(dst, file_members[i][!from], v);
    }
    return rc;
}

/* o when every step building it worked (rc == 0), else NULL (o released):
 * a value with a member silently missing would look complete. */
static json_t *built(json_t *o, int rc)
{
    if (rc != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *part_in(const json_t *p, size_t i, a2a_verr *e)
{
    const json_t *type = json_object_get(p, "type");
    if (!json_is_object(p) || type == NULL)
        return json_incref((json_t *)p); /* 1.0-shaped (or invalid: checked later) */
    char f[64];
    snprintf(f, sizeof f, "message.parts[%zu]", i);
    const char *t = json_is_string(type) ? json_string_value(type) : "";
    json_t *out = json_object();
    if (out == NULL)
        return NULL;
    int rc = 0;
    if (strcmp(t, "text") == 0) {
        rc |= copy_member(out, p, "text");
    } else if (strcmp(t, "data") == 0) {
        rc |= copy_member(out, p, "data");
    } else if (strcmp(t, "file") == 0) {
        const json_t *file = json_object_get(p, "file");
        if (!json_is_object(file)) {
            json_decref(out);
            once__a2a_verr(e, f, "%s.file must be an object", f);
            return NULL;
        }
        rc |= copy_file_members(out, file, 0);
    } else {
        json_decref(out);
        once__a2a_verr(e, f, "%s.type must be text, file or data", f);
        return NULL;
    }
    rc |= copy_member(out, p, "metadata");
    return built(out, rc);
}

int once__a2a_legacy_message_in(const json_t *msg, json_t **out, a2a_verr *e)
{
    *out = NULL;
    e->field[0] = '\0';
    if (!json_is_object(msg))
        return once__a2a_verr(e, "message", "message must be an object");
    json_t *m = json_object();
    if (m == NULL)
        return ONCE_ENOMEM;
    int rc = 0;
    const json_t *role = json_object_get(msg, "role");
    if (json_is_string(role) && strcmp(json_string_value(role), "user") == 0)
        rc |= json_object_set_new(m, "role", json_string("ROLE_USER"));
    else
        rc |= copy_member(m, msg, "role");
    const json_t *parts = json_object_get(msg, "parts");
    if (json_is_array(parts)) {
        json_t *np = json_array();
        size_t i;
        json_t *p;
        rc |= np == NULL;
        json_array_foreach(parts, i, p) {
            if (np == NULL)
                break;
            json_t *q = part_in(p, i, e);
            if (q == NULL) {
                json_decref(np);
                json_decref(m);
                return e->field[0] ? ONCE_EINVAL : ONCE_ENOMEM;
            }
            rc |= json_array_append_new(np, q);
        }
        if (np != NULL)
            rc |= json_object_set_new(m, "parts", np);
    } else {
        rc |= copy_member(m, msg, "parts");
    }
    static const char *const keep[] = {"messageId",  "metadata",        "contextId",
                                       "taskId",     "extensions",      "referenceTaskIds"};
    for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++)
        rc |= copy_member(m, msg, keep[k]);
    if (rc != 0) {
        json_decref(m);
        return ONCE_ENOMEM;
    }
    *out = m;
    return ONCE_OK;
}

/* --- out ------------------------------------------------------------------- */

static const char *legacy_state(const json_t *state)
{
    static const char *const names[] = {
        "unknown",   "submitted", "working",  "input-required", "auth-required",
        "completed", "failed",    "canceled", "rejected",
    };
    once_state s = once_state_parse(json_is_string(state) ? json_string_value(state) : "");
    if ((int)s < 0 || (size_t)s >= sizeof names / sizeof names[0])
        return "unknown";
    return names[s];
}

/* The builders below return NULL when any member could not be added. */

static json_t *part_out(const json_t *p)
{
    json_t *o = json_object();
    if (o == NULL || !json_is_object(p))
        return o;
    const json_t *raw = json_object_get(p, "raw");
    const json_t *url = json_object_get(p, "url");
    int rc = 0;
    if (json_object_get(p, "text") != NULL) {
        rc |= json_object_set_new(o, "type", json_string("text"));
        rc |= copy_member(o, p, "text");
    } else if (raw != NULL || url != NULL) {
        json_t *file = json_object();
        rc |= json_object_set_new(o, "type", json_string("file"));
        rc |= file == NULL ? -1 : copy_file_members(file, p, 1);
        rc |= json_object_set_new(o, "file", file);
    } else {
        rc |= json_object_set_new(o, "type", json_string("data"));
        rc |= copy_member(o, p, "data");
    }
    rc |= copy_member(o, p, "metadata");
    return built(o, rc);
}

/* f applied to each element of the array a, as a new array. */
static json_t *map_out(const json_t *a, json_t *(*f)(const json_t *))
{
    json_t *out = json_array();
    size_t i;
    json_t *x;
    if (out == NULL)
        return NULL;
    json_array_foreach(a, i, x) {
        if (json_array_append_new(out, f(x)) != 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

static json_t *message_out(const json_t *m)
{
    json_t *o = json_object();
    if (o == NULL || !json_is_object(m))
        return o;
    const json_t *role = json_object_get(m, "role");
    const char *r = json_is_string(role) ? json_string_value(role) : "";
    int rc = json_object_set_new(o, "role",
                                 json_string(strcmp(r, "ROLE_AGENT") == 0 ? "agent" : "user"));
    rc |= json_object_set_new(o, "parts", map_out(json_object_get(m, "parts"), part_out));
    rc |= copy_member(o, m, "metadata");
    rc |= copy_member(o, m, "messageId");
    return built(o, rc);
}

static json_t *artifact_out(const json_t *x, size_t i)
{
    json_t *ao = json_object();
    if (ao == NULL)
        return NULL;
    int rc = copy_member(ao, x, "name");
    rc |= copy_member(ao, x, "description");
    rc |= json_object_set_new(ao, "parts", map_out(json_object_get(x, "parts"), part_out));
    rc |= json_object_set_new(ao, "index", json_integer((json_int_t)i));
    rc |= copy_member(ao, x, "metadata");
    return built(ao, rc);
}

static json_t *status_out(const json_t *st)
{
    json_t *status = json_object();
    if (status == NULL)
        return NULL;
    int rc = json_object_set_new(status, "state",
                                 json_string(legacy_state(json_object_get(st, "state"))));
    const json_t *sm = json_object_get(st, "message");
    if (sm != NULL)
        rc |= json_object_set_new(status, "message", message_out(sm));
    rc |= copy_member(status, st, "timestamp");
    return built(status, rc);
}

static json_t *task_out(const json_t *t)
{
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    int rc = copy_member(o, t, "id");
    const json_t *ctx = json_object_get(t, "contextId");
    if (ctx != NULL)
        rc |= json_object_set(o, "sessionId", (json_t *)ctx);
    rc |= json_object_set_new(o, "status", status_out(json_object_get(t, "status")));
    const json_t *arts = json_object_get(t, "artifacts");
    if (json_is_array(arts)) {
        json_t *a = json_array();
        size_t i;
        json_t *x;
        rc |= a == NULL;
        json_array_foreach(arts, i, x) {
            if (a != NULL && json_array_append_new(a, artifact_out(x, i)) != 0)
                rc = 1;
        }
        rc |= json_object_set_new(o, "artifacts", a);
    }
    const json_t *hist = json_object_get(t, "history");
    if (json_is_array(hist))
        rc |= json_object_set_new(o, "history", map_out(hist, message_out));
    rc |= copy_member(o, t, "metadata");
    return built(o, rc);
}

json_t *once__a2a_legacy_task_out(const json_t *v, const char *task_id)
{
    const json_t *task = json_object_get(v, "task");
    if (task != NULL)
        return task_out(task);
    const json_t *msg = json_object_get(v, "message");
    if (msg != NULL && json_object_get(v, "id") == NULL) {
        /* The agent answered with a direct Message: 0.1 has no such result,
         * so it is a completed task whose status carries the message. */
        json_t *o = json_pack("{s:s, s:{s:s, s:o}}", "id", task_id, "status", "state",
                              "completed", "message", message_out(msg));
        const json_t *ctx = json_object_get(msg, "contextId");
        if (o != NULL && ctx != NULL && json_object_set(o, "sessionId", (json_t *)ctx) != 0) {
            json_decref(o);
            return NULL;
        }
        return o;
    }
    return task_out(v);
}
