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
 * Invariants: a path parameter and a body member of the same name must
 * agree (else -32602 naming it); a query parameter the route does not take
 * is refused, not ignored; every route is also served below a leading
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

#define NROUTES (sizeof routes / sizeof routes[0])
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

/* The route for (verb, path), or NULL. *known: some route has the path. */
static const rest_route *route_find(const char *verb, const char *path, capture *cap, int *known)
{
    segs ps;
    *known = 0;
    if (!split(path, &ps))
        return NULL;
    /* Without a tenant first: "/tasks/x" is GetTask, not tenant "tasks". */
    for (size_t from = 0; from < 2 && from < ps.count; from++) {
        for (size_t i = 0; i < NROUTES; i++) {
            if (!match_pattern(routes[i].pattern, &ps, from, cap))
                continue;
            *known = 1;
            if (verb != NULL && strcmp(verb, routes[i].verb) == 0) {
                cap->tenant = from ? ps.s[0] : NULL;
                cap->tenant_len = from ? ps.n[0] : 0;
                return &routes[i];
            }
        }
        if (*known)
            return NULL;
    }
    return NULL;
}

int once__a2a_rest_known(const char *path)
{
    capture cap;
    int known;
    route_find(NULL, path, &cap, &known);
    return known;
}

/* The methods a known path takes, for the Allow header of a 405. */
static const char *allowed(const char *path)
{
    static const char *const sets[] = {"GET", "POST", "GET, POST", "GET, DELETE"};
    capture cap;
    int known, get, post, del;
    get = route_find("GET", path, &cap, &known) != NULL;
    post = route_find("POST", path, &cap, &known) != NULL;
    del = route_find("DELETE", path, &cap, &known) != NULL;
    if (del)
        return sets[3];
    return get && post ? sets[2] : post ? sets[1] : sets[0];
}

/* --- params ------------------------------------------------------------------ */

/* A failed request before any handler ran: the same answer shape. */
static int refuse(once__a2a_response *resp, int http, int code, const char *reason,
                  const char *message, json_t *meta)
{
    return once__a2a_error_answer(ONCE_A2A_HTTP_JSON, http, code, reason, message, meta, resp);
}

static int refuse_param(once__a2a_response *resp, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* -32602 INVALID_PARAMS (HTTP 400) naming field. */
static int refuse_param(once__a2a_response *resp, const char *field, const char *fmt, ...)
{
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *meta = json_pack("{s:s}", "field", field);
    if (meta == NULL)
        return ONCE_ENOMEM;
    int rc = refuse(resp, 400, ONCE_RPC_INVALID_PARAMS, "INVALID_PARAMS", msg, meta);
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
 * ONCE_EINVAL with the answer written to resp. */
static int put_param(json_t *params, const char *name, const char *text, size_t n, int type,
                     once__a2a_response *resp)
{
    char field[64];
    once__a2a_utf8_clean(name, field, sizeof field);
    if (!once__a2a_utf8_valid(text, n)) {
        int rc = refuse_param(resp, field, "Invalid parameters: %s is not valid UTF-8", field);
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
    int rc = refuse_param(resp, field,
                          "Invalid parameters: %s is given twice (path, query or body) with "
                          "different values",
                          field);
    return rc == ONCE_OK ? ONCE_EINVAL : rc;
}

/* The request's params: body (POST), path parameters, tenant, query. */
static int build_params(const rest_route *r, const capture *cap, const once__a2a_rest_request *req,
                        once__a2a_response *resp, json_t **out)
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
            rc = refuse(resp, 400, ONCE_RPC_PARSE_ERROR, "PARSE_ERROR", msg, NULL);
            return rc == ONCE_OK ? ONCE_EINVAL : rc;
        }
        if (!json_is_object(params)) {
            json_decref(params);
            rc = refuse(resp, 400, ONCE_RPC_INVALID_REQUEST, "INVALID_REQUEST",
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
        rc = put_param(params, name, cap->val[i], cap->val_len[i], Q_STR, resp);
    }
    if (rc == ONCE_OK && cap->tenant != NULL)
        rc = put_param(params, "tenant", cap->tenant, cap->tenant_len, Q_STR, resp);
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
            rc = refuse_param(resp, field,
                              "Invalid parameters: this method takes no query parameter %s", field);
            rc = rc == ONCE_OK ? ONCE_EINVAL : rc;
        } else {
            rc = put_param(params, qn, qv, strlen(qv), p->type, resp);
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
    /* A NUL (%00, which the HTTP layer's unescaping turns into DEL, see
     * once__url_unescape) or another control character in the path: the
     * path a proxy in front checked is not the one a C string would read. */
    if (once__has_control(req->path))
        return refuse(resp, 400, ONCE_RPC_INVALID_REQUEST, "BAD_PATH",
                      "The path holds a control character (a NUL, %00..%1F or %7F)", NULL);
    capture cap;
    int known;
    const rest_route *r = route_find(req->method, req->path, &cap, &known);
    if (r == NULL && !known)
        return refuse(resp, 404, 0, "NOT_FOUND",
                      "No such path: see docs/wire.md for the HTTP+JSON routes", NULL);
    if (r == NULL) {
        char msg[120];
        snprintf(msg, sizeof msg, "Method not allowed on this path; use %s", allowed(req->path));
        int rc = refuse(resp, 405, 0, "METHOD_NOT_ALLOWED", msg, NULL);
        resp->allow = allowed(req->path);
        return rc;
    }
    json_t *params = NULL;
    int rc = build_params(r, &cap, req, resp, &params);
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
