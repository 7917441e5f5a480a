/*
 * rest.c -- the HTTP+JSON binding (A2A 1.0 section 11, a2a.proto's
 * google.api.http annotations): a route table, as data, from (HTTP method,
 * path pattern) to a row of the JSON-RPC method table.
 *
 * A request becomes the params object a JSON-RPC call of that method
 * carries: the body (POST routes; the whole request message, body "*"),
 * then the path parameters, then the query parameters (camelCase, typed
 * per route, section 11.5). The same handler runs (once__a2a_run) and
 * only the envelope differs: a result is the body itself, an error is the
 * AIP-193 object with the section 5.4 HTTP status, a stream's data lines
 * are bare StreamResponses.
 *
 * A2A 0.3's routes (its a2a.proto at v0.3.0: everything below /v1, no
 * tenant) sit in a table of their own, onto the 0.3 JSON-RPC rows
 * (h_v03.c), whose params their path members are named after; those rows
 * convert the proto JSON bodies and answers and write 0.3's errors. A
 * request takes them when it says no A2A-Version or a 0.x one (0.3
 * clients send none); with A2A-Version 1.0, "/v1/..." stays what it was,
 * the 1.0 routes below the tenant "v1".
 *
 * Invariants: a path parameter and a body member of the same name must
 * agree (else -32602 naming it); a query parameter the route does not take
 * is refused, not ignored; every 1.0 route is also served below a leading
 * /{tenant} segment (the proto's additional_bindings), which becomes
 * params.tenant. Immutable; any thread.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2a/a2a_int.h"
#include "core/quote.h"

/* How a query parameter's text becomes its JSON value. */
enum { Q_STR, Q_INT, Q_BOOL };

typedef struct rest_param {
    const char *name;
    int type;
} rest_param;

/* One route. A pattern segment is a literal, "{member}" (the whole segment
 * is params.member) or "{member}:verb" (a custom method: the segment ends
 * with ":verb"). Rows are tried in order: the custom methods come before
 * the plain "{id}" they would also match. */
typedef struct rest_route {
    const char *verb;
    const char *pattern;
    const char *method;      /* a row of once__a2a_methods */
    const rest_param *query; /* NULL-terminated; NULL = none */
} rest_route;

static const rest_param q_get_task[] = {{"historyLength", Q_INT}, {NULL, 0}};
static const rest_param q_list_tasks[] = {
    {"contextId", Q_STR},         {"status", Q_STR},
    {"pageSize", Q_INT},          {"pageToken", Q_STR},
    {"historyLength", Q_INT},     {"statusTimestampAfter", Q_STR},
    {"includeArtifacts", Q_BOOL}, {NULL, 0}};
static const rest_param q_list_push[] = {{"pageSize", Q_INT}, {"pageToken", Q_STR}, {NULL, 0}};

static const rest_route routes[] = {
    {"POST", "/message:send", "SendMessage", NULL},
    {"POST", "/message:stream", "SendStreamingMessage", NULL},
    {"POST", "/tasks/{id}:cancel", "CancelTask", NULL},
    /* section 11.3 says POST, the proto's annotation GET: both */
    {"POST", "/tasks/{id}:subscribe", "SubscribeToTask", NULL},
    {"GET", "/tasks/{id}:subscribe", "SubscribeToTask", NULL},
    {"GET", "/tasks/{id}", "GetTask", q_get_task},
    {"GET", "/tasks", "ListTasks", q_list_tasks},
    {"POST", "/tasks/{taskId}/pushNotificationConfigs", "CreateTaskPushNotificationConfig", NULL},
    {"GET", "/tasks/{taskId}/pushNotificationConfigs", "ListTaskPushNotificationConfigs",
     q_list_push},
    {"GET", "/tasks/{taskId}/pushNotificationConfigs/{id}", "GetTaskPushNotificationConfig", NULL},
    {"DELETE", "/tasks/{taskId}/pushNotificationConfigs/{id}", "DeleteTaskPushNotificationConfig",
     NULL},
    {"GET", "/extendedAgentCard", "GetExtendedAgentCard", NULL},
};

static const rest_param q03_get_task[] = {
    {"historyLength", Q_INT}, {"history_length", Q_INT}, {NULL, 0}};

/* As @a2a-js/sdk's LegacyRestTransport calls them; its server (and 0.3's
 * specification) also takes :subscribe by POST. */
static const rest_route routes03[] = {
    {"POST", "/v1/message:send", "message/send", NULL},
    {"POST", "/v1/message:stream", "message/stream", NULL},
    {"POST", "/v1/tasks/{id}:cancel", "tasks/cancel", NULL},
    {"GET", "/v1/tasks/{id}:subscribe", "tasks/resubscribe", NULL},
    {"POST", "/v1/tasks/{id}:subscribe", "tasks/resubscribe", NULL},
    {"GET", "/v1/tasks/{id}", "tasks/get", q03_get_task},
    {"POST", "/v1/tasks/{taskId}/pushNotificationConfigs", "tasks/pushNotificationConfig/set",
     NULL},
    {"GET", "/v1/tasks/{id}/pushNotificationConfigs", "tasks/pushNotificationConfig/list", NULL},
    {"GET", "/v1/tasks/{id}/pushNotificationConfigs/{pushNotificationConfigId}",
     "tasks/pushNotificationConfig/get", NULL},
    {"DELETE", "/v1/tasks/{id}/pushNotificationConfigs/{pushNotificationConfigId}",
     "tasks/pushNotificationConfig/delete", NULL},
    {"GET", "/v1/card", "agent/getAuthenticatedExtendedCard", NULL},
};

#define NROUTES (sizeof routes / sizeof routes[0])
#define NROUTES03 (sizeof routes03 / sizeof routes03[0])
#define MAX_SEGS 8
#define MAX_CAPS 3

/* A path split at '/': segments point into the caller's text. */
typedef struct segs {
    const char *s[MAX_SEGS];
    size_t n[MAX_SEGS];
    size_t count;
} segs;

/* 0 when the path has too many segments. Empty segments ("//", a trailing
 * "/") are skipped: a client joining a base URL that ends in "/" with a
 * route that starts with one must still land on the route. */
static int split(const char *path, segs *out)
{
    out->count = 0;
    if (path == NULL || *path != '/')
        return 0;
    for (const char *p = path; *p != '\0';) {
        p += strspn(p, "/");
        size_t n = strcspn(p, "/");
        if (n == 0)
            break;
        if (out->count == MAX_SEGS)
            return 0;
        out->s[out->count] = p;
        out->n[out->count++] = n;
        p += n;
    }
    return 1;
}

/* What a match found: the route's path parameters and the tenant. */
typedef struct capture {
    const char *name[MAX_CAPS]; /* member name, a pointer into the pattern */
    size_t name_len[MAX_CAPS];
    const char *val[MAX_CAPS]; /* value, a pointer into the path */
    size_t val_len[MAX_CAPS];
    size_t n;
    const char *tenant; /* NULL = none */
    size_t tenant_len;
} capture;

/* Match path segments [from, count) against one pattern. */
static int match_pattern(const char *pattern, const segs *ps, size_t from, capture *cap)
{
    segs pat;
    if (!split(pattern, &pat) || pat.count != ps->count - from)
        return 0;
    cap->n = 0;
    for (size_t i = 0; i < pat.count; i++) {
        const char *q = pat.s[i], *v = ps->s[from + i];
        size_t qn = pat.n[i], vn = ps->n[from + i];
        if (q[0] != '{') {
            if (qn != vn || memcmp(q, v, qn) != 0)
                return 0;
            continue;
        }
        const char *close = memchr(q, '}', qn);
        size_t verb = (size_t)(q + qn - (close + 1)); /* ":cancel", or 0 */
        if (vn <= verb || memcmp(v + vn - verb, close + 1, verb) != 0)
            return 0;
        cap->name[cap->n] = q + 1;
        cap->name_len[cap->n] = (size_t)(close - q - 1);
        cap->val[cap->n] = v;
        cap->val_len[cap->n++] = vn - verb;
    }
    return 1;
}

/* Whose route has a path: none, 1.0's, 0.3's. */
enum { UNKNOWN, KNOWN10, KNOWN03 };

/* The route of table rt (n rows) for (verb, path segments ps), tried
 * below at most `tenants` leading segments, or NULL. *known: some route of
 * the table has the path. */
static const rest_route *find_in(const rest_route *rt, size_t n, size_t tenants, const char *verb,
                                 const segs *ps, capture *cap, int *known)
{
    /* Without a tenant first: "/tasks/x" is GetTask, not tenant "tasks". */
    for (size_t from = 0; from <= tenants && from < ps->count; from++) {
        for (size_t i = 0; i < n; i++) {
            if (!match_pattern(rt[i].pattern, ps, from, cap))
                continue;
            *known = KNOWN10;
            if (verb != NULL && strcmp(verb, rt[i].verb) == 0) {
                cap->tenant = from ? ps->s[0] : NULL;
                cap->tenant_len = from ? ps->n[0] : 0;
                return &rt[i];
            }
        }
        if (*known)
            return NULL;
    }
    return NULL;
}

/* The route for (verb, path), or NULL: 0.3's first when v03 (and the path
 * is one of its), then 1.0's. *known: whose route has the path. */
static const rest_route *route_find(const char *verb, const char *path, int v03, capture *cap,
                                    int *known)
{
    segs ps;
    *known = UNKNOWN;
    if (!split(path, &ps))
        return NULL;
    const rest_route *r = v03 ? find_in(routes03, NROUTES03, 0, verb, &ps, cap, known) : NULL;
    if (*known != UNKNOWN) {
        *known = KNOWN03;
        return r;
    }
    return find_in(routes, NROUTES, 1, verb, &ps, cap, known);
}

/* A request that takes 0.3's routes: no A2A-Version, or a 0.x one. */
static int wants_v03(const char *version)
{
    while (version != NULL && (*version == ' ' || *version == '\t'))
        version++;
    return version == NULL || *version == '\0' || strncmp(version, "0.", 2) == 0;
}

int once__a2a_rest_known(const char *path)
{
    capture cap;
    int known;
    route_find(NULL, path, 1, &cap, &known);
    return known;
}

/* The methods a known path takes, for the Allow header of a 405. */
static const char *allowed(const char *path, int v03)
{
    static const char *const sets[] = {"GET", "POST", "GET, POST", "GET, DELETE"};
    capture cap;
    int known, get, post, del;
    get = route_find("GET", path, v03, &cap, &known) != NULL;
    post = route_find("POST", path, v03, &cap, &known) != NULL;
    del = route_find("DELETE", path, v03, &cap, &known) != NULL;
    if (del)
        return sets[3];
    return get && post ? sets[2] : post ? sets[1] : sets[0];
}

/* --- params ------------------------------------------------------------------ */

/* A failed request before any handler ran: the same answer shape as the
 * route's handler would give (v03: 0.3's; code 0 there: no method). */
static int refuse(once__a2a_response *resp, int v03, int http, int code, const char *reason,
                  const char *message, json_t *meta)
{
    if (v03)
        return once__a2a_v03_rest_answer(http, code ? code : ONCE_RPC_METHOD_NOT_FOUND, reason,
                                         message, meta, resp);
    return once__a2a_error_answer(ONCE_A2A_HTTP_JSON, http, code, reason, message, meta, resp);
}

static int refuse_param(once__a2a_response *resp, int v03, const char *field, const char *fmt,
                        ...) __attribute__((format(printf, 4, 5)));

/* -32602 INVALID_PARAMS (HTTP 400) naming field. */
static int refuse_param(once__a2a_response *resp, int v03, const char *field, const char *fmt,
                        ...)
{
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *meta = json_pack("{s:s}", "field", field);
    if (meta == NULL)
        return ONCE_ENOMEM;
    int rc = refuse(resp, v03, 400, ONCE_RPC_INVALID_PARAMS, "INVALID_PARAMS", msg, meta);
    json_decref(meta);
    return rc;
}

/* The JSON value of a path or query parameter. Text that is not of the
 * type stays a string, so the handler's own check names the field and says
 * why. */
static json_t *query_value(const char *text, size_t n, int type)
{
    char num[24];
    if (type == Q_BOOL &&
        ((n == 4 && memcmp(text, "true", 4) == 0) || (n == 5 && memcmp(text, "false", 5) == 0)))
        return json_boolean(text[0] == 't');
    if (type == Q_INT && n > 0 && n < sizeof num) {
        memcpy(num, text, n);
        num[n] = '\0';
        char *end;
        errno = 0;
        long long v = strtoll(num, &end, 10);
        if (errno == 0 && *end == '\0')
            return json_integer((json_int_t)v);
    }
    return json_stringn(text, n);
}

/* Set params[name] from text (a path or query parameter). A body member
 * of that name must hold the same value. ONCE_OK, ONCE_ENOMEM, or
 * ONCE_EINVAL with the answer (in 0.3's shape when v03) written to resp. */
static int put_param(json_t *params, const char *name, const char *text, size_t n, int type,
                     int v03, once__a2a_response *resp)
{
    char field[64];
    once__a2a_utf8_clean(name, field, sizeof field);
    if (!once__a2a_utf8_valid(text, n)) {
        int rc = refuse_param(resp, v03, field, "Invalid parameters: %s is not valid UTF-8", field);
        return rc == ONCE_OK ? ONCE_EINVAL : rc;
    }
    json_t *value = query_value(text, n, type);
    if (value == NULL)
        return ONCE_ENOMEM;
    json_t *had = json_object_get(params, name);
    if (had == NULL)
        return json_object_set_new(params, name, value) == 0 ? ONCE_OK : ONCE_ENOMEM;
    int same = json_equal(had, value);
    json_decref(value);
    if (same)
        return ONCE_OK;
    int rc = refuse_param(resp, v03, field,
                          "Invalid parameters: %s is given twice (path, query or body) with "
                          "different values",
                          field);
    return rc == ONCE_OK ? ONCE_EINVAL : rc;
}

/* The request's params: body (POST), path parameters, tenant, query. A
 * 0.3 route (v03) also takes the body "null" for none, as the 0.3 Go and
 * Python clients send it on an empty POST. */
static int build_params(const rest_route *r, int v03, const capture *cap,
                        const once__a2a_rest_request *req, once__a2a_response *resp, json_t **out)
{
    *out = NULL;
    json_t *params = NULL;
    char why[200], msg[300];
    if (strcmp(r->verb, "POST") == 0 && req->base.len > 0) {
        int rc = once__a2a_json_parse(req->base.body, req->base.len, &params, why, sizeof why);
        if (rc == ONCE_ENOMEM)
            return rc;
        if (rc != ONCE_OK) {
            snprintf(msg, sizeof msg, "Parse error: %s", why);
            rc = refuse(resp, v03, 400, ONCE_RPC_PARSE_ERROR, "PARSE_ERROR", msg, NULL);
            return rc == ONCE_OK ? ONCE_EINVAL : rc;
        }
        if (v03 && json_is_null(params)) {
            params = json_object();
            if (params == NULL)
                return ONCE_ENOMEM;
        } else if (!json_is_object(params)) {
            json_decref(params);
            rc = refuse(resp, v03, 400, ONCE_RPC_INVALID_REQUEST, "INVALID_REQUEST",
                        "Invalid request: the body must be a JSON object", NULL);
            return rc == ONCE_OK ? ONCE_EINVAL : rc;
        }
    } else if ((params = json_object()) == NULL) {
        return ONCE_ENOMEM;
    }
    int rc = ONCE_OK;
    char name[40];
    for (size_t i = 0; rc == ONCE_OK && i < cap->n; i++) {
        snprintf(name, sizeof name, "%.*s", (int)cap->name_len[i], cap->name[i]);
        rc = put_param(params, name, cap->val[i], cap->val_len[i], Q_STR, v03, resp);
    }
    if (rc == ONCE_OK && cap->tenant != NULL)
        rc = put_param(params, "tenant", cap->tenant, cap->tenant_len, Q_STR, v03, resp);
    for (const char *const *q = req->query; rc == ONCE_OK && q != NULL && q[0] != NULL; q += 2) {
        const char *qn = q[0], *qv = q[1] ? q[1] : "";
        if (strcmp(qn, "A2A-Version") == 0)
            continue; /* a service parameter: the HTTP layer read it */
        const rest_param *p = r->query;
        while (p != NULL && p->name != NULL && strcmp(p->name, qn) != 0)
            p++;
        if (p == NULL || p->name == NULL) {
            char field[64];
            once__a2a_utf8_clean(qn, field, sizeof field);
            rc = refuse_param(resp, v03, field,
                              "Invalid parameters: this method takes no query parameter %s", field);
            rc = rc == ONCE_OK ? ONCE_EINVAL : rc;
        } else {
            rc = put_param(params, qn, qv, strlen(qv), p->type, v03, resp);
        }
    }
    if (rc != ONCE_OK) {
        json_decref(params);
        return rc;
    }
    *out = params;
    return ONCE_OK;
}

int once__a2a_rest_handle(once__a2a *a, const once__a2a_rest_request *req, once__a2a_response *resp)
{
    memset(resp, 0, sizeof *resp);
    int v03 = wants_v03(req->base.version);
    /* A NUL (%00, which the HTTP layer's unescaping turns into DEL, see
     * once__url_unescape) or another control character in the path: the
     * path a proxy in front checked is not the one a C string would read. */
    if (once__has_control(req->path))
        return refuse(resp, 0, 400, ONCE_RPC_INVALID_REQUEST, "BAD_PATH",
                      "The path holds a control character (a NUL, %00..%1F or %7F)", NULL);
    capture cap;
    int known;
    const rest_route *r = route_find(req->method, req->path, v03, &cap, &known);
    int shape03 = known == KNOWN03;
    if (r == NULL && known == UNKNOWN)
        return refuse(resp, 0, 404, 0, "NOT_FOUND",
                      "No such path: see docs/wire.md for the HTTP+JSON routes", NULL);
    if (r == NULL) {
        char msg[120];
        snprintf(msg, sizeof msg, "Method not allowed on this path; use %s",
                 allowed(req->path, v03));
        int rc = refuse(resp, shape03, 405, 0, "METHOD_NOT_ALLOWED", msg, NULL);
        resp->allow = allowed(req->path, v03);
        return rc;
    }
    json_t *params = NULL;
    int rc = build_params(r, shape03, &cap, req, resp, &params);
    if (rc == ONCE_EINVAL)
        return ONCE_OK; /* refused: resp holds the answer */
    if (rc != ONCE_OK)
        return rc;
    size_t idx = 0;
    const a2a_method *m = once__a2a_lookup(a, r->method, &idx);
    rc = m != NULL ? once__a2a_run(a, &req->base, resp, m, idx, NULL, params, ONCE_A2A_HTTP_JSON)
                   : ONCE_ERROR;
    json_decref(params);
    return rc;
}
