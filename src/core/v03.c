/*
 * v03.c -- A2A 0.3 objects to and from their A2A 1.0 form (v03.h).
 *
 * Every conversion is a shallow copy of the object with the members the
 * two forms spell differently rewritten: the rest (ids, metadata,
 * extensions, members neither version names) is shared by reference, never
 * deep-copied. A failed allocation anywhere returns NULL, never a value
 * with a member silently missing.
 */
#include <string.h>

#include "core/v03.h"

static const char *const states[][2] = {
    {"TASK_STATE_SUBMITTED", "submitted"},
    {"TASK_STATE_WORKING", "working"},
    {"TASK_STATE_COMPLETED", "completed"},
    {"TASK_STATE_FAILED", "failed"},
    {"TASK_STATE_CANCELED", "canceled"},
    {"TASK_STATE_INPUT_REQUIRED", "input-required"},
    {"TASK_STATE_REJECTED", "rejected"},
    {"TASK_STATE_AUTH_REQUIRED", "auth-required"},
    {"TASK_STATE_UNSPECIFIED", "unknown"},
};
#define NSTATES (sizeof states / sizeof states[0])

const char *once__v03_state(const char *state10)
{
    for (size_t i = 0; state10 != NULL && i < NSTATES; i++)
        if (strcmp(state10, states[i][0]) == 0)
            return states[i][1];
    return "unknown";
}

const char *once__v03_state_in(const char *state03)
{
    for (size_t i = 0; state03 != NULL && i < NSTATES; i++)
        if (strcmp(state03, states[i][1]) == 0)
            return states[i][0];
    return NULL;
}

/* The members of a 0.3 FilePart's file and of a 1.0 file Part. */
static const char *const file_members[][2] = {
    {"bytes", "raw"}, {"uri", "url"}, {"name", "filename"}, {"mimeType", "mediaType"}};
#define NFILE (sizeof file_members / sizeof file_members[0])
#define DATA_COMPAT "data_part_compat"

/* A shallow copy of o without the members in skip (NULL-terminated). */
static json_t *copy_except(const json_t *o, const char *const *skip)
{
    json_t *out = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v) {
        int skipped = 0;
        for (size_t i = 0; skip[i] != NULL && !skipped; i++)
            skipped = strcmp(k, skip[i]) == 0;
        if (!skipped && out != NULL && json_object_set(out, k, v) != 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* Set o[k] = v (a new reference taken, NULL = failed); 0, or -1. */
static int put(json_t *o, const char *k, json_t *v)
{
    return v == NULL || json_object_set_new(o, k, v) != 0 ? -1 : 0;
}

/* o when every step of building it worked (bad == 0), else NULL. */
static json_t *built(json_t *o, int bad)
{
    if (o != NULL && bad == 0)
        return o;
    json_decref(o);
    return NULL;
}

/* Replace o[k] (when present) with fn(o[k]). */
static int map_member(json_t *o, const char *k, json_t *(*fn)(const json_t *))
{
    const json_t *v = json_object_get(o, k);
    return v == NULL ? 0 : put(o, k, fn(v));
}

/* Replace the array o[k] (when it is one) with fn of each element. */
static int map_array(json_t *o, const char *k, json_t *(*fn)(const json_t *))
{
    const json_t *a = json_object_get(o, k);
    if (!json_is_array(a))
        return 0;
    json_t *out = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) {
        if (out != NULL && json_array_append_new(out, fn(v)) != 0) {
            json_decref(out);
            out = NULL;
        }
    }
    return put(o, k, out);
}

/* Replace the string o[k] with its name in the other version (column to:
 * 1 = 0.3, 0 = 1.0) of the table pairs (n rows); other values stay. */
static int rename_value(json_t *o, const char *k, const char *const (*pairs)[2], size_t n,
                        int to)
{
    const char *s = json_string_value(json_object_get(o, k));
    for (size_t i = 0; s != NULL && i < n; i++)
        if (strcmp(s, pairs[i][!to]) == 0)
            return put(o, k, json_string(pairs[i][to]));
    return 0;
}

static const char *const roles[][2] = {{"ROLE_USER", "user"}, {"ROLE_AGENT", "agent"}};

/* --- parts ----------------------------------------------------------------- */

static json_t *part_in(const json_t *p)
{
    const char *kind = json_string_value(json_object_get(p, "kind"));
    if (!json_is_object(p) || kind == NULL)
        return json_incref((json_t *)p);
    static const char *const skip[] = {"kind", "file", NULL};
    json_t *out = copy_except(p, skip);
    int bad = out == NULL;
    const json_t *file = json_object_get(p, "file");
    if (!bad && strcmp(kind, "file") == 0 && json_is_object(file)) {
        for (size_t i = 0; i < NFILE && !bad; i++) {
            json_t *v = json_object_get(file, file_members[i][0]);
            bad = v != NULL && json_object_set(out, file_members[i][1], v) != 0;
        }
    } else if (!bad && strcmp(kind, "file") == 0) {
        bad = json_object_set(out, "kind", json_object_get(p, "kind")) != 0; /* refused later */
    } else if (!bad && strcmp(kind, "data") == 0) {
        /* A value 0.3 could not carry as an object comes back unwrapped. */
        json_t *md = json_object_get(out, "metadata");
        const json_t *d = json_object_get(p, "data");
        if (json_is_true(json_object_get(md, DATA_COMPAT)) && json_is_object(d) &&
            json_object_get(d, "value") != NULL) {
            bad = json_object_set(out, "data", json_object_get(d, "value")) != 0;
            json_t *rest = bad ? NULL : json_deep_copy(md);
            bad = bad || rest == NULL || json_object_del(rest, DATA_COMPAT) != 0;
            if (!bad && json_object_size(rest) == 0)
                bad = json_object_del(out, "metadata") != 0;
            else if (!bad)
                bad = json_object_set(out, "metadata", rest) != 0;
            json_decref(rest);
        }
    } else if (!bad && strcmp(kind, "text") != 0) {
        bad = json_object_set(out, "kind", json_object_get(p, "kind")) != 0; /* refused later */
    }
    return built(out, bad);
}

static json_t *part_out(const json_t *p)
{
    if (!json_is_object(p))
        return json_incref((json_t *)p);
    int is_file = json_object_get(p, "raw") != NULL || json_object_get(p, "url") != NULL;
    static const char *const skip[] = {"raw", "url", "filename", "mediaType", NULL};
    json_t *out = copy_except(p, is_file ? skip : skip + 4);
    int bad = out == NULL;
    const json_t *data = json_object_get(p, "data");
    if (!bad && is_file) {
        json_t *file = json_object();
        for (size_t i = 0; i < NFILE && file != NULL && !bad; i++) {
            json_t *v = json_object_get(p, file_members[i][1]);
            bad = v != NULL && json_object_set(file, file_members[i][0], v) != 0;
        }
        bad |= put(out, "file", file);
        bad |= put(out, "kind", json_string("file"));
    } else if (!bad && data != NULL) {
        if (!json_is_object(data)) {
            json_t *md = json_object_get(p, "metadata");
            json_t *m = json_is_object(md) ? json_copy(md) : json_object();
            bad = m == NULL || json_object_set_new(m, DATA_COMPAT, json_true()) != 0;
            if (bad)
                json_decref(m);
            else
                bad = put(out, "metadata", m);
            bad |= put(out, "data", json_pack("{s:O}", "value", data));
        }
        bad |= put(out, "kind", json_string("data"));
    } else if (!bad) {
        bad |= put(out, "kind", json_string("text"));
    }
    return built(out, bad);
}

/* --- messages, artifacts, status, task, events ---------------------------- */

/* How one object converts: the members dropped, the members converted
 * (each by fn; an array member element by element), the role and state
 * values renamed toward the version `to` names (1 = 0.3, 0 = 1.0; -1 =
 * none), and the kind it is tagged with (NULL: none). */
typedef struct rule {
    const char *drop[3];
    struct {
        const char *key;
        json_t *(*fn)(const json_t *);
        int array;
    } map[3];
    int to;
    const char *kind;
} rule;

static json_t *apply(const json_t *o, const rule *r)
{
    if (!json_is_object(o))
        return json_incref((json_t *)o);
    json_t *out = copy_except(o, r->drop);
    int bad = out == NULL;
    for (size_t i = 0; !bad && i < 3 && r->map[i].key != NULL; i++)
        bad = r->map[i].array ? map_array(out, r->map[i].key, r->map[i].fn)
                              : map_member(out, r->map[i].key, r->map[i].fn);
    if (!bad && r->to >= 0)
        bad = rename_value(out, "role", roles, 2, r->to) |
              rename_value(out, "state", states, NSTATES, r->to);
    if (!bad && r->kind != NULL)
        bad = put(out, "kind", json_string(r->kind));
    return built(out, bad);
}

static json_t *artifact_in(const json_t *a);
static json_t *artifact_out(const json_t *a);
static json_t *status_in(const json_t *s);
static json_t *status_out(const json_t *s);

static const rule message_in = {{"kind"}, {{"parts", part_in, 1}}, 0, NULL};
static const rule message_out = {{NULL}, {{"parts", part_out, 1}}, 1, "message"};
static const rule art_in = {{NULL}, {{"parts", part_in, 1}}, -1, NULL};
static const rule art_out = {{NULL}, {{"parts", part_out, 1}}, -1, NULL};
static const rule stat_in = {{NULL}, {{"message", once__v03_message_in, 0}}, 0, NULL};
static const rule stat_out = {{NULL}, {{"message", once__v03_message_out, 0}}, 1, NULL};
static const rule task_in = {{"kind"},
                             {{"status", status_in, 0},
                              {"history", once__v03_message_in, 1},
                              {"artifacts", artifact_in, 1}},
                             -1,
                             NULL};
static const rule task_out = {{NULL},
                              {{"status", status_out, 0},
                               {"history", once__v03_message_out, 1},
                               {"artifacts", artifact_out, 1}},
                              -1,
                              "task"};
static const rule su_in = {{"kind", "final"}, {{"status", status_in, 0}}, -1, NULL};
static const rule su_out = {{NULL}, {{"status", status_out, 0}}, -1, "status-update"};
static const rule au_in = {{"kind"}, {{"artifact", artifact_in, 0}}, -1, NULL};
static const rule au_out = {{NULL}, {{"artifact", artifact_out, 0}}, -1, "artifact-update"};

json_t *once__v03_message_in(const json_t *m)
{
    return apply(m, &message_in);
}

json_t *once__v03_message_out(const json_t *m)
{
    return apply(m, &message_out);
}

static json_t *artifact_in(const json_t *a)
{
    return apply(a, &art_in);
}

static json_t *artifact_out(const json_t *a)
{
    return apply(a, &art_out);
}

static json_t *status_in(const json_t *s)
{
    return apply(s, &stat_in);
}

static json_t *status_out(const json_t *s)
{
    return apply(s, &stat_out);
}

json_t *once__v03_task_in(const json_t *t)
{
    return apply(t, &task_in);
}

json_t *once__v03_task_out(const json_t *t)
{
    return apply(t, &task_out);
}

static json_t *status_update_in(const json_t *u)
{
    return apply(u, &su_in);
}

static json_t *artifact_update_in(const json_t *u)
{
    return apply(u, &au_in);
}

static json_t *artifact_update_out(const json_t *u)
{
    return apply(u, &au_out);
}

/* The 0.3 "final": the status ends what the stream follows. */
static int final_state(const char *state10)
{
    static const char *const ends[] = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED",
                                       "TASK_STATE_CANCELED", "TASK_STATE_REJECTED",
                                       "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"};
    for (size_t i = 0; state10 != NULL && i < sizeof ends / sizeof ends[0]; i++)
        if (strcmp(state10, ends[i]) == 0)
            return 1;
    return 0;
}

static json_t *status_update_out(const json_t *u)
{
    json_t *out = apply(u, &su_out);
    const char *st = json_string_value(json_object_get(json_object_get(u, "status"), "state"));
    if (out != NULL && json_is_object(u) && put(out, "final", json_boolean(final_state(st)))) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* The four kinds: the 0.3 tag, the 1.0 member, the conversions. */
static const struct {
    const char *kind, *member;
    json_t *(*in)(const json_t *);
    json_t *(*out)(const json_t *);
} kinds[] = {
    {"task", "task", once__v03_task_in, once__v03_task_out},
    {"message", "message", once__v03_message_in, once__v03_message_out},
    {"status-update", "statusUpdate", status_update_in, status_update_out},
    {"artifact-update", "artifactUpdate", artifact_update_in, artifact_update_out},
};
#define NKINDS (sizeof kinds / sizeof kinds[0])

json_t *once__v03_event_in(const json_t *ev)
{
    const char *kind = json_string_value(json_object_get(ev, "kind"));
    for (size_t i = 0; kind != NULL && i < NKINDS; i++) {
        if (strcmp(kind, kinds[i].kind) == 0) {
            json_t *out = json_object();
            return built(out, out == NULL || put(out, kinds[i].member, kinds[i].in(ev)));
        }
    }
    return json_incref((json_t *)ev);
}

json_t *once__v03_event_out(const json_t *ev)
{
    for (size_t i = 0; json_is_object(ev) && i < NKINDS; i++) {
        const json_t *v = json_object_get(ev, kinds[i].member);
        if (v != NULL)
            return kinds[i].out(v);
    }
    return json_incref((json_t *)ev);
}

/* --- push configs ---------------------------------------------------------- */

/* authentication {schemes[], credentials} -> {scheme, credentials} (in),
 * and back (out). */
static json_t *auth_in(const json_t *a)
{
    if (!json_is_object(a))
        return json_incref((json_t *)a);
    static const char *const skip[] = {"schemes", NULL};
    json_t *out = copy_except(a, skip);
    const json_t *schemes = json_object_get(a, "schemes");
    int bad = out == NULL;
    if (!bad && json_is_array(schemes) && json_array_size(schemes) > 0)
        bad = json_object_set(out, "scheme", json_array_get(schemes, 0)) != 0;
    else if (!bad && schemes != NULL)
        bad = json_object_set(out, "schemes", (json_t *)schemes) != 0; /* refused later */
    return built(out, bad);
}

static json_t *auth_out(const json_t *a)
{
    if (!json_is_object(a))
        return json_incref((json_t *)a);
    static const char *const skip[] = {"scheme", NULL};
    json_t *out = copy_except(a, skip);
    const json_t *scheme = json_object_get(a, "scheme");
    int bad = out == NULL;
    if (!bad && scheme != NULL)
        bad = put(out, "schemes", json_pack("[O]", scheme));
    return built(out, bad);
}

json_t *once__v03_push_config_in(const json_t *cfg)
{
    if (!json_is_object(cfg))
        return json_incref((json_t *)cfg);
    static const char *const skip[] = {NULL};
    json_t *out = copy_except(cfg, skip);
    return built(out, out == NULL || map_member(out, "authentication", auth_in));
}

json_t *once__v03_push_in(const json_t *cfg)
{
    const json_t *inner = json_object_get(cfg, "pushNotificationConfig");
    if (!json_is_object(inner))
        return json_incref((json_t *)cfg);
    json_t *out = once__v03_push_config_in(inner);
    const json_t *task = json_object_get(cfg, "taskId");
    if (out != NULL && task != NULL && json_object_set(out, "taskId", (json_t *)task) != 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

json_t *once__v03_push_out(const json_t *cfg)
{
    if (!json_is_object(cfg))
        return json_incref((json_t *)cfg);
    static const char *const skip[] = {"taskId", "tenant", NULL};
    json_t *inner = copy_except(cfg, skip);
    int bad = inner == NULL || map_member(inner, "authentication", auth_out);
    json_t *out = bad ? NULL : json_object();
    const json_t *task = json_object_get(cfg, "taskId");
    bad |= out == NULL || (task != NULL && json_object_set(out, "taskId", (json_t *)task) != 0);
    if (!bad) {
        bad = json_object_set_new(out, "pushNotificationConfig", inner) != 0;
        inner = NULL;
    }
    json_decref(inner);
    return built(out, bad);
}

/* --- send parameters --------------------------------------------------------- */

json_t *once__v03_send_params_in(const json_t *params)
{
    if (!json_is_object(params))
        return json_incref((json_t *)params);
    static const char *const skip[] = {NULL};
    json_t *out = copy_except(params, skip);
    int bad = out == NULL || map_member(out, "message", once__v03_message_in);
    const json_t *conf = json_object_get(params, "configuration");
    if (!bad && json_is_object(conf)) {
        static const char *const cskip[] = {"blocking", "pushNotificationConfig", NULL};
        json_t *c = copy_except(conf, cskip);
        const json_t *blocking = json_object_get(conf, "blocking");
        const json_t *push = json_object_get(conf, "pushNotificationConfig");
        bad = c == NULL;
        if (!bad && json_is_boolean(blocking))
            bad = put(c, "returnImmediately", json_boolean(!json_is_true(blocking)));
        else if (!bad && blocking != NULL)
            bad = json_object_set(c, "blocking", (json_t *)blocking) != 0; /* refused later */
        if (!bad && push != NULL)
            bad = put(c, "taskPushNotificationConfig", once__v03_push_config_in(push));
        if (!bad)
            bad = json_object_set_new(out, "configuration", c) != 0;
        else
            json_decref(c);
    }
    return built(out, bad);
}

json_t *once__v03_send_params_out(const json_t *params)
{
    if (!json_is_object(params))
        return json_incref((json_t *)params);
    static const char *const skip[] = {NULL};
    json_t *out = copy_except(params, skip);
    int bad = out == NULL || map_member(out, "message", once__v03_message_out);
    const json_t *conf = json_object_get(params, "configuration");
    if (!bad && json_is_object(conf)) {
        static const char *const cskip[] = {"returnImmediately", "taskPushNotificationConfig",
                                            NULL};
        json_t *c = copy_except(conf, cskip);
        const json_t *push = json_object_get(conf, "taskPushNotificationConfig");
        bad = c == NULL ||
              put(c, "blocking",
                  json_boolean(!json_is_true(json_object_get(conf, "returnImmediately"))));
        if (!bad && push != NULL) {
            json_t *p = once__v03_push_out(push);
            bad = p == NULL || json_object_set(c, "pushNotificationConfig",
                                               json_object_get(p, "pushNotificationConfig")) != 0;
            json_decref(p);
        }
        if (!bad)
            bad = json_object_set_new(out, "configuration", c) != 0;
        else
            json_decref(c);
    }
    return built(out, bad);
}

/* --- the agent card ------------------------------------------------------ */

/* A 1.0 SecurityScheme ({httpAuthSecurityScheme: {...}} and the like) as
 * 0.3's flat one ({type: "http", ...}). */
static json_t *scheme_out(const json_t *s)
{
    static const char *const types[][2] = {
        {"httpAuthSecurityScheme", "http"},       {"apiKeySecurityScheme", "apiKey"},
        {"oauth2SecurityScheme", "oauth2"},       {"openIdConnectSecurityScheme", "openIdConnect"},
        {"mtlsSecurityScheme", "mutualTLS"},
    };
    for (size_t i = 0; json_is_object(s) && i < sizeof types / sizeof types[0]; i++) {
        const json_t *v = json_object_get(s, types[i][0]);
        if (!json_is_object(v))
            continue;
        static const char *const skip[] = {"location", NULL};
        json_t *out = copy_except(v, skip);
        int bad = out == NULL || put(out, "type", json_string(types[i][1]));
        const json_t *loc = json_object_get(v, "location");
        if (!bad && loc != NULL) /* apiKey: 1.0 "location", 0.3 "in" */
            bad = json_object_set(out, "in", (json_t *)loc) != 0;
        return built(out, bad);
    }
    return json_incref((json_t *)s);
}

json_t *once__v03_card_out(const json_t *card)
{
    const json_t *itfs = json_object_get(card, "supportedInterfaces");
    const json_t *primary = NULL;
    json_t *more = json_array();
    size_t i;
    json_t *itf;
    int bad = more == NULL;
    json_array_foreach(itfs, i, itf) {
        const char *v = json_string_value(json_object_get(itf, "protocolVersion"));
        if (bad || v == NULL || strncmp(v, "0.", 2) != 0)
            continue;
        if (primary == NULL)
            primary = itf;
        else
            bad = json_array_append_new(more, json_pack("{s:O, s:O}", "url",
                                                         json_object_get(itf, "url"), "transport",
                                                         json_object_get(itf, "protocolBinding"))) != 0;
    }
    if (bad || primary == NULL) {
        json_decref(more);
        return NULL;
    }
    static const char *const keep[] = {"name", "description", "version", "provider",
                                       "documentationUrl", "iconUrl", "defaultInputModes",
                                       "defaultOutputModes", "skills", "signatures",
                                       "supportedInterfaces"};
    json_t *out = json_object();
    bad = out == NULL;
    for (size_t k = 0; !bad && k < sizeof keep / sizeof keep[0]; k++) {
        json_t *v = json_object_get(card, keep[k]);
        bad = v != NULL && json_object_set(out, keep[k], v) != 0;
    }
    const json_t *caps = json_object_get(card, "capabilities");
    static const char *const cskip[] = {"extendedAgentCard", NULL};
    if (!bad)
        bad = put(out, "url", json_incref(json_object_get(primary, "url"))) |
              put(out, "preferredTransport", json_incref(json_object_get(primary, "protocolBinding"))) |
              put(out, "protocolVersion", json_string("0.3.0")) |
              put(out, "capabilities", json_is_object(caps) ? copy_except(caps, cskip) : json_object()) |
              put(out, "supportsAuthenticatedExtendedCard",
                  json_boolean(json_is_true(json_object_get(caps, "extendedAgentCard"))));
    if (!bad && json_array_size(more) > 0)
        bad = json_object_set(out, "additionalInterfaces", more) != 0;
    const json_t *schemes = json_object_get(card, "securitySchemes");
    if (!bad && json_is_object(schemes)) {
        json_t *s = json_object();
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)schemes, k, v) {
            if (s != NULL && json_object_set_new(s, k, scheme_out(v)) != 0) {
                json_decref(s);
                s = NULL;
            }
        }
        bad = put(out, "securitySchemes", s);
    }
    /* securityRequirements [{schemes: {name: {list: [...]}}}] -> security [{name: [...]}] */
    const json_t *reqs = json_object_get(card, "securityRequirements");
    if (!bad && json_is_array(reqs)) {
        json_t *sec = json_array();
        json_t *r;
        json_array_foreach(reqs, i, r) {
            json_t *one = json_object();
            const char *k;
            json_t *v;
            json_object_foreach(json_object_get(r, "schemes"), k, v) {
                json_t *list = json_object_get(v, "list");
                if (one != NULL &&
                    json_object_set_new(one, k, list ? json_incref(list) : json_array()) != 0) {
                    json_decref(one);
                    one = NULL;
                }
            }
            if (sec != NULL && json_array_append_new(sec, one) != 0) {
                json_decref(sec);
                sec = NULL;
            }
        }
        bad = put(out, "security", sec);
    }
    json_decref(more);
    return built(out, bad);
}

/* --- calls ------------------------------------------------------------------ */

static const once__v03_call calls[] = {
    {"SendMessage", "message/send", once__v03_send_params_out, once__v03_event_in},
    {"SendStreamingMessage", "message/stream", once__v03_send_params_out, once__v03_event_in},
    {"GetTask", "tasks/get", NULL, once__v03_task_in},
    {"CancelTask", "tasks/cancel", NULL, once__v03_task_in},
    {"SubscribeToTask", "tasks/resubscribe", NULL, once__v03_event_in},
};

const once__v03_call *once__v03_call_of(const char *name)
{
    for (size_t i = 0; name != NULL && i < sizeof calls / sizeof calls[0]; i++)
        if (strcmp(name, calls[i].v10) == 0)
            return &calls[i];
    return NULL;
}
