/*
 * v03_proto.c -- A2A 0.3's HTTP+JSON objects (the JSON mapping of its
 * a2a.proto) to and from their A2A 1.0 form (v03_proto.h), by way of the
 * 0.3 JSON-RPC form that v03.c converts.
 *
 * The proto <-> JSON-RPC step is a walk over a table of shapes, one per
 * proto message: the members the proto names, the one or two it names
 * differently (Message.content is JSON-RPC's parts), the members that hold
 * another shape (arrays element by element), the member whose enum value
 * is spelled differently, and the JSON-RPC "kind" tag. A Part (a oneof
 * where JSON-RPC has a tag) and a push config (a resource name where
 * JSON-RPC has a taskId) have their own functions.
 *
 * Invariants: each step is a shallow copy with members rewritten, the rest
 * shared by reference (never json_copy, which may leave members out);
 * toward JSON-RPC every member is kept, toward the proto only those its
 * shape names; a failed allocation anywhere returns NULL, never a value
 * with a member silently missing.
 */
#include <string.h>

#include "core/v03.h"
#include "core/v03_proto.h"

enum { TO_RPC, TO_PROTO };

typedef struct shape shape;

/* How one proto message differs from its JSON-RPC form. The shapes are
 * const tables below, read by any thread; members are named as the proto's
 * JSON mapping names them (lowerCamelCase: names.c has renamed a client's
 * snake_case before a handler runs). */
struct shape {
    json_t *(*custom)(const json_t *v, int to); /* converts on its own; the rest unused */
    const char *kind;                          /* the JSON-RPC tag; NULL = none */
    const char *keep[8];                       /* the proto's members */
    const char *renamed[2][2];                 /* {proto name, JSON-RPC name} */
    struct {
        const char *key;                       /* its proto name */
        const shape *of;
    } kids[3];
    const char *vkey;                          /* the member value() renames */
    const char *(*value)(const char *v, int to); /* NULL = leave v as it is */
};

static json_t *walk(const json_t *o, const shape *s, int to);

/* o, unless a step of building it failed (then NULL, o released). */
static json_t *unless(int bad, json_t *o)
{
    if (bad) {
        json_decref(o);
        o = NULL;
    }
    return o;
}

/* A shallow copy of the object o, whole or NULL (json_copy goes on past a
 * member it failed to copy). */
static json_t *copy(const json_t *o)
{
    json_t *out = json_object();
    return unless(out == NULL || json_object_update(out, (json_t *)o) != 0, out);
}

/* o[k] = v, v a new reference or NULL (failed): 0, or 1. */
static int set_new(json_t *o, const char *k, json_t *v)
{
    return v == NULL || json_object_set_new(o, k, v) != 0;
}

/* One value, by g when given, else by walking shape s toward `to`. */
static json_t *one(const json_t *v, json_t *(*g)(const json_t *), const shape *s, int to)
{
    return g != NULL ? g(v) : walk(v, s, to);
}

/* one() of each element of an array; of v itself when it is none. */
static json_t *each(const json_t *v, json_t *(*g)(const json_t *), const shape *s, int to)
{
    if (!json_is_array(v))
        return one(v, g, s, to);
    json_t *out = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
        if (out != NULL && json_array_append_new(out, one(e, g, s, to)) != 0) {
            json_decref(out);
            out = NULL;
        }
    }
    return out;
}

/* The second step of a conversion: the 0.3 JSON-RPC form mid (released)
 * by g (into 1.0), or toward the proto by shape s (out of 1.0). */
static json_t *then(json_t *mid, json_t *(*g)(const json_t *), const shape *s)
{
    json_t *out = mid != NULL ? one(mid, g, s, TO_PROTO) : NULL;
    json_decref(mid);
    return out;
}

/* Drop every member of o that keep (NULL-terminated) does not name. */
static int keep_only(json_t *o, const char *const *keep)
{
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(o, tmp, k, v) {
        size_t i = 0;
        while (keep[i] != NULL && strcmp(keep[i], k) != 0)
            i++;
        if (keep[i] == NULL && json_object_del(o, k) != 0)
            return 1;
    }
    return 0;
}

/* The members s names differently, renamed toward `to`; a member whose new
 * name is taken already stays where it is (the 1.0 checks refuse it). */
static int rename_members(json_t *o, const shape *s, int to)
{
    for (size_t i = 0; i < 2 && s->renamed[i][0] != NULL; i++) {
        const char *from = s->renamed[i][to == TO_RPC ? 0 : 1];
        const char *dest = s->renamed[i][to == TO_RPC ? 1 : 0];
        json_t *v = json_object_get(o, from);
        if (v == NULL || json_object_get(o, dest) != NULL)
            continue;
        if (json_object_set(o, dest, v) != 0 || json_object_del(o, from) != 0)
            return 1;
    }
    return 0;
}

static json_t *walk(const json_t *o, const shape *s, int to)
{
    if (s->custom != NULL)
        return s->custom(o, to);
    if (!json_is_object(o))
        return json_incref((json_t *)o);
    json_t *out = copy(o);
    int bad = out == NULL || (to == TO_PROTO && rename_members(out, s, to));
    for (size_t i = 0; !bad && i < 3 && s->kids[i].key != NULL; i++) {
        const json_t *kid = json_object_get(out, s->kids[i].key);
        bad = kid != NULL && set_new(out, s->kids[i].key, each(kid, NULL, s->kids[i].of, to));
    }
    if (!bad && to == TO_RPC)
        bad = rename_members(out, s, to);
    const char *old = s->vkey ? json_string_value(json_object_get(out, s->vkey)) : NULL;
    const char *nv = old != NULL ? s->value(old, to) : NULL;
    if (!bad && nv != NULL)
        bad = set_new(out, s->vkey, json_string(nv));
    if (!bad && to == TO_PROTO)
        bad = keep_only(out, s->keep);
    else if (!bad && s->kind != NULL)
        bad = set_new(out, "kind", json_string(s->kind));
    return unless(bad, out);
}

/* --- values ---------------------------------------------------------------- */

static const char *role_value(const char *v, int to)
{
    static const char *const roles[][2] = {{"ROLE_USER", "user"}, {"ROLE_AGENT", "agent"}};
    for (size_t i = 0; i < 2; i++)
        if (strcmp(v, roles[i][to == TO_RPC ? 0 : 1]) == 0)
            return roles[i][to == TO_RPC ? 1 : 0];
    return NULL;
}

/* The proto's states are 1.0's names (v03.c knows them) but one. */
#define CANCELLED "TASK_STATE_CANCELLED"
#define CANCELED "TASK_STATE_CANCELED"

static const char *state_value(const char *v, int to)
{
    if (to == TO_PROTO) {
        const char *s10 = once__v03_state_in(v);
        return s10 != NULL && strcmp(s10, CANCELED) == 0 ? CANCELLED : s10;
    }
    /* Known when it maps and maps back: "unknown" is TASK_STATE_UNSPECIFIED's alone. */
    const char *s10 = strcmp(v, CANCELLED) == 0 ? CANCELED : v;
    const char *s03 = once__v03_state(s10), *back = once__v03_state_in(s03);
    return back != NULL && strcmp(back, s10) == 0 ? s03 : NULL;
}

/* --- shapes ------------------------------------------------------------------ */

static json_t *part(const json_t *p, int to);

static const shape PART = {.custom = part};
static const shape FILE_PART = {.keep = {"fileWithUri", "fileWithBytes", "mimeType"},
                                .renamed = {{"fileWithUri", "uri"}, {"fileWithBytes", "bytes"}}};
static const shape MESSAGE = {.kind = "message",
                              .keep = {"messageId", "contextId", "taskId", "role", "content",
                                       "metadata", "extensions"},
                              .renamed = {{"content", "parts"}},
                              .kids = {{"content", &PART}},
                              .vkey = "role",
                              .value = role_value};
static const shape STATUS = {.keep = {"state", "message", "timestamp"},
                             .kids = {{"message", &MESSAGE}},
                             .vkey = "state",
                             .value = state_value};
static const shape ARTIFACT = {
    .keep = {"artifactId", "name", "description", "parts", "metadata", "extensions"},
    .kids = {{"parts", &PART}}};
static const shape TASK = {
    .kind = "task",
    .keep = {"id", "contextId", "status", "artifacts", "history", "metadata"},
    .kids = {{"status", &STATUS}, {"artifacts", &ARTIFACT}, {"history", &MESSAGE}}};
static const shape STATUS_UPDATE = {.kind = "status-update",
                                    .keep = {"taskId", "contextId", "status", "final", "metadata"},
                                    .kids = {{"status", &STATUS}}};
static const shape ARTIFACT_UPDATE = {
    .kind = "artifact-update",
    .keep = {"taskId", "contextId", "artifact", "append", "lastChunk", "metadata"},
    .kids = {{"artifact", &ARTIFACT}}};
static const shape AUTH = {.keep = {"schemes", "credentials"}};
static const shape PUSH_CONFIG = {.keep = {"id", "url", "token", "authentication"},
                                  .kids = {{"authentication", &AUTH}}};
static const shape SEND_CONFIG = {
    .keep = {"acceptedOutputModes", "pushNotification", "historyLength", "blocking"},
    .renamed = {{"pushNotification", "pushNotificationConfig"}},
    .kids = {{"pushNotification", &PUSH_CONFIG}}};
static const shape SEND_PARAMS = {.keep = {"message", "configuration", "metadata"},
                                  .kids = {{"message", &MESSAGE}, {"configuration", &SEND_CONFIG}}};

/* A Part: the proto's oneof (text, file, data; a data part's object under
 * data.data) <-> JSON-RPC's kind. A part of no known kind passes. */
static json_t *part(const json_t *p, int to)
{
    static const char *const kinds[] = {"text", "file", "data"};
    const char *kind = json_string_value(json_object_get(p, "kind"));
    for (size_t i = 0; json_is_object(p) && i < 3; i++) {
        const json_t *v = json_object_get(p, kinds[i]);
        if (v == NULL || (to == TO_PROTO && (kind == NULL || strcmp(kind, kinds[i]) != 0)))
            continue;
        if (to == TO_PROTO) {
            json_t *pv = i == 1 ? walk(v, &FILE_PART, to)
                         : i == 2 ? json_pack("{s:O}", "data", v)
                                  : json_incref((json_t *)v);
            return pv != NULL ? json_pack("{s:o}", kinds[i], pv) : NULL;
        }
        json_t *out = copy(p);
        int bad = out == NULL || set_new(out, "kind", json_string(kinds[i]));
        if (!bad && i == 1)
            bad = set_new(out, "file", walk(v, &FILE_PART, to));
        else if (!bad && i == 2 && json_is_object(v) && json_object_get(v, "data") != NULL)
            bad = json_object_set(out, "data", json_object_get(v, "data")) != 0;
        return unless(bad, out);
    }
    return json_incref((json_t *)p);
}

/* --- wrapped events ------------------------------------------------------ */

/* The members of a StreamResponse, each its shape (with its kind). */
static const struct {
    const char *member;
    const shape *s;
} wrapped[] = {{"task", &TASK},
               {"message", &MESSAGE},
               {"msg", &MESSAGE},
               {"statusUpdate", &STATUS_UPDATE},
               {"artifactUpdate", &ARTIFACT_UPDATE}};
#define NWRAPPED (sizeof wrapped / sizeof wrapped[0])

static json_t *event_rpc(const json_t *ev)
{
    for (size_t i = 0; json_is_object(ev) && i < NWRAPPED; i++) {
        const json_t *v = json_object_get(ev, wrapped[i].member);
        if (v != NULL)
            return walk(v, wrapped[i].s, TO_RPC);
    }
    return json_incref((json_t *)ev);
}

static json_t *event_proto(const json_t *ev)
{
    const char *kind = json_string_value(json_object_get(ev, "kind"));
    for (size_t i = 0; kind != NULL && i < NWRAPPED; i++) {
        if (strcmp(kind, wrapped[i].s->kind) != 0)
            continue;
        json_t *out = json_object();
        int bad = out == NULL ||
                  set_new(out, wrapped[i].member, walk(ev, wrapped[i].s, TO_PROTO));
        return unless(bad, out);
    }
    return json_incref((json_t *)ev);
}

/* --- push configs -------------------------------------------------------- */

/* The task a resource name ("tasks/T", "tasks/T/pushNotificationConfigs/C")
 * names: its first byte and length (*n), or NULL. */
static const char *name_task(const char *name, size_t *n)
{
    static const char pre[] = "tasks/";
    if (name == NULL || strncmp(name, pre, sizeof pre - 1) != 0)
        return NULL;
    const char *t = name + sizeof pre - 1;
    *n = strcspn(t, "/");
    return *n > 0 ? t : NULL;
}

static json_t *push_rpc(const json_t *cfg)
{
    if (!json_is_object(cfg))
        return json_incref((json_t *)cfg);
    size_t n = 0;
    const char *task = name_task(json_string_value(json_object_get(cfg, "name")), &n);
    const json_t *had = json_object_get(cfg, "taskId");
    const char *h = json_string_value(had);
    json_t *out = copy(cfg);
    int bad = out == NULL;
    if (!bad && task != NULL &&
        (had == NULL || (h != NULL && strlen(h) == n && memcmp(h, task, n) == 0)))
        bad = set_new(out, "taskId", json_stringn(task, n)) || json_object_del(out, "name") != 0;
    return unless(bad, out);
}

static json_t *push_proto(const json_t *cfg)
{
    const json_t *inner = json_object_get(cfg, "pushNotificationConfig");
    const char *task = json_string_value(json_object_get(cfg, "taskId"));
    if (!json_is_object(inner))
        return json_incref((json_t *)cfg);
    const char *id = json_string_value(json_object_get(inner, "id"));
    json_t *out = json_object();
    int bad = out == NULL;
    if (!bad && task != NULL)
        bad = set_new(out, "name", json_sprintf("tasks/%s/pushNotificationConfigs/%s", task,
                                                id != NULL ? id : ""));
    if (!bad)
        bad = set_new(out, "pushNotificationConfig", walk(inner, &PUSH_CONFIG, TO_PROTO));
    return unless(bad, out);
}

/* A list result: its configs converted by g, toward `to`. */
static json_t *push_list(const json_t *l, json_t *(*g)(const json_t *), int to)
{
    static const char *const keep[] = {"configs", "nextPageToken", NULL};
    if (!json_is_object(l))
        return json_incref((json_t *)l);
    const json_t *configs = json_object_get(l, "configs");
    json_t *out = copy(l);
    int bad = out == NULL ||
              (configs != NULL && set_new(out, "configs", each(configs, g, NULL, to)));
    if (!bad && to == TO_PROTO)
        bad = keep_only(out, keep);
    return unless(bad, out);
}

/* --- send parameters ------------------------------------------------------ */

/* The message also under its proto field name, "request"; a configuration
 * without blocking is proto3's false. */
static json_t *send_rpc(const json_t *params)
{
    if (!json_is_object(params))
        return json_incref((json_t *)params);
    json_t *p = copy(params);
    const json_t *req = json_object_get(params, "request");
    if (p != NULL && req != NULL && json_object_get(params, "message") == NULL &&
        (json_object_set(p, "message", (json_t *)req) != 0 || json_object_del(p, "request") != 0)) {
        json_decref(p);
        return NULL;
    }
    json_t *out = p != NULL ? walk(p, &SEND_PARAMS, TO_RPC) : NULL;
    json_decref(p);
    json_t *conf = json_object_get(out, "configuration");
    if (json_is_object(conf) && json_object_get(conf, "blocking") == NULL)
        return unless(set_new(conf, "blocking", json_false()), out);
    return out;
}

/* --- 0.3 proto JSON -> 1.0 ------------------------------------------------ */

json_t *once__v03_proto_message_in(const json_t *m)
{
    return then(walk(m, &MESSAGE, TO_RPC), once__v03_message_in, NULL);
}

json_t *once__v03_proto_task_in(const json_t *t)
{
    return then(walk(t, &TASK, TO_RPC), once__v03_task_in, NULL);
}

json_t *once__v03_proto_event_in(const json_t *ev)
{
    return then(event_rpc(ev), once__v03_event_in, NULL);
}

json_t *once__v03_proto_push_in(const json_t *cfg)
{
    json_t *rpc = push_rpc(cfg), *out = rpc != NULL ? once__v03_push_in(rpc) : NULL;
    /* A name push_rpc could not take as the task's goes on, for the 1.0
     * check to name (the JSON-RPC form has no room for it). */
    json_t *name = json_object_get(rpc, "name");
    if (out != NULL && name != NULL && json_is_object(out))
        out = unless(json_object_set(out, "name", name) != 0, out);
    json_decref(rpc);
    return out;
}

json_t *once__v03_proto_push_list_in(const json_t *list)
{
    return push_list(list, once__v03_proto_push_in, TO_RPC);
}

json_t *once__v03_proto_send_params_in(const json_t *params)
{
    return then(send_rpc(params), once__v03_send_params_in, NULL);
}

/* --- 1.0 -> 0.3 proto JSON ------------------------------------------------ */

json_t *once__v03_proto_message_out(const json_t *m)
{
    return then(once__v03_message_out(m), NULL, &MESSAGE);
}

json_t *once__v03_proto_task_out(const json_t *t)
{
    return then(once__v03_task_out(t), NULL, &TASK);
}

json_t *once__v03_proto_event_out(const json_t *ev)
{
    return then(once__v03_event_out(ev), event_proto, NULL);
}

json_t *once__v03_proto_push_out(const json_t *cfg)
{
    return then(once__v03_push_out(cfg), push_proto, NULL);
}

json_t *once__v03_proto_push_list_out(const json_t *res)
{
    return push_list(res, once__v03_proto_push_out, TO_PROTO);
}

json_t *once__v03_proto_send_params_out(const json_t *params)
{
    return then(once__v03_send_params_out(params), NULL, &SEND_PARAMS);
}
