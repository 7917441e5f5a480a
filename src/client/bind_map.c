/*
 * bind_map.c -- the pure half of the binding seam (client_int.h, "binding"):
 * which of a card's interfaces a call goes to, the HTTP+JSON route of a
 * JSON-RPC call, and the errors of the other two bindings (AIP-193 bodies;
 * gRPC statuses become those first, grpc/status.h) back in the JSON-RPC
 * shape, so that answer.c and policy.c classify every binding's answers as
 * they classify JSON-RPC's. No I/O; unit-tested (tests/unit/test_client_bind.c).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "client/client_int.h"
#include "core/grow.h"
#include "core/str.h"
#include "grpc/status.h"

/* The card's name of each binding the client speaks. */
static const struct {
    const char *name;
    once_binding b;
} card_names[] = {
    {"JSONRPC", ONCE_BINDING_JSONRPC},
    {"HTTP+JSON", ONCE_BINDING_HTTP_JSON},
    {"GRPC", ONCE_BINDING_GRPC},
};

static once_binding binding_of(const char *name)
{
    for (size_t i = 0; name != NULL && i < sizeof card_names / sizeof card_names[0]; i++)
        if (strcmp(card_names[i].name, name) == 0)
            return card_names[i].b;
    return ONCE_BINDING_AUTO;   /* not one the client speaks */
}

/* A gRPC interface URL ("host:port", or with a scheme) as host:port and
 * whether it wants TLS; without a scheme, as the agent's own URL does. */
static int grpc_target(const char *url, const char *endpoint, once__iface *out)
{
    static const struct {
        const char *scheme;
        int tls;
    } schemes[] = {{"grpcs://", 1}, {"https://", 1}, {"grpc://", 0}, {"http://", 0}};
    out->tls = strncasecmp(endpoint, "https://", 8) == 0;
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
        size_t n = strlen(schemes[i].scheme);
        if (strncasecmp(url, schemes[i].scheme, n) == 0) {
            url += n;
            out->tls = schemes[i].tls;
            break;
        }
    }
    size_t len = strcspn(url, "/?#");
    if (len == 0 || len >= sizeof out->url || memchr(url, ':', len) == NULL)
        return ONCE_EINVAL;
    memcpy(out->url, url, len);
    out->url[len] = '\0';
    return ONCE_OK;
}

int once__iface_pick(const json_t *ifaces, once_binding want, const char *endpoint,
                     once__iface *out)
{
    memset(out, 0, sizeof *out);
    out->binding = ONCE_BINDING_JSONRPC;
    once__strlcpy(out->url, endpoint, sizeof out->url);
    if (want == ONCE_BINDING_JSONRPC)
        return ONCE_OK;
    const char *rpc_url = NULL;
    size_t i;
    const json_t *e;
    json_array_foreach(ifaces, i, e) {
        if (binding_of(json_string_value(json_array_get(e, 0))) == ONCE_BINDING_JSONRPC) {
            rpc_url = json_string_value(json_array_get(e, 1));
            break;
        }
    }
    json_array_foreach(ifaces, i, e) {
        once_binding b = binding_of(json_string_value(json_array_get(e, 0)));
        const char *url = json_string_value(json_array_get(e, 1));
        if (b == ONCE_BINDING_AUTO || url == NULL || (want != ONCE_BINDING_AUTO && b != want))
            continue;
        if (b == ONCE_BINDING_JSONRPC)
            return ONCE_OK;
        if (b == ONCE_BINDING_GRPC) {
            if (grpc_target(url, endpoint, out) != ONCE_OK)
                continue;
        } else if (rpc_url == NULL || strcmp(rpc_url, url) != 0) {
            once__strlcpy(out->url, url, sizeof out->url);
        }
        out->binding = b;
        return ONCE_OK;
    }
    return want == ONCE_BINDING_AUTO ? ONCE_OK : ONCE_ENOTFOUND;
}

/* ---------------------------------------------------------------------------
 * HTTP+JSON routes: onced's table (src/a2a/rest.c), from the client's side.
 */
static const struct {
    const char *method, *verb, *pattern;
} routes[] = {
    {"SendMessage", "POST", "/message:send"},
    {"SendStreamingMessage", "POST", "/message:stream"},
    {"GetTask", "GET", "/tasks/{id}"},
    {"ListTasks", "GET", "/tasks"},
    {"CancelTask", "POST", "/tasks/{id}:cancel"},
    {"SubscribeToTask", "POST", "/tasks/{id}:subscribe"},
    {"CreateTaskPushNotificationConfig", "POST", "/tasks/{taskId}/pushNotificationConfigs"},
    {"GetTaskPushNotificationConfig", "GET", "/tasks/{taskId}/pushNotificationConfigs/{id}"},
    {"ListTaskPushNotificationConfigs", "GET", "/tasks/{taskId}/pushNotificationConfigs"},
    {"DeleteTaskPushNotificationConfig", "DELETE",
     "/tasks/{taskId}/pushNotificationConfigs/{id}"},
    {"GetExtendedAgentCard", "GET", "/extendedAgentCard"},
};

/* s[0..n) percent-encoded (all but RFC 3986's unreserved) onto *buf. */
static int put_enc(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        char e[3] = {(char)ch, 0, 0};
        size_t el = 1;
        if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
              ch == '-' || ch == '.' || ch == '_' || ch == '~')) {
            e[0] = '%';
            e[1] = hex[ch >> 4];
            e[2] = hex[ch & 15];
            el = 3;
        }
        if (once__text_append(buf, len, cap, 256, e, el) != ONCE_OK)
            return ONCE_ENOMEM;
    }
    return ONCE_OK;
}

static int put(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
    return once__text_append(buf, len, cap, 256, s, n);
}

/* 1 if name is one of pattern's {members} (or "tenant"). */
static int in_path(const char *pattern, const char *name)
{
    if (strcmp(name, "tenant") == 0)
        return 1;
    size_t n = strlen(name);
    for (const char *p = strchr(pattern, '{'); p != NULL; p = strchr(p + 1, '{'))
        if (strncmp(p + 1, name, n) == 0 && p[1 + n] == '}')
            return 1;
    return 0;
}

/* The query of a GET or DELETE: params' scalar members not in the path. */
static int put_query(char **buf, size_t *len, size_t *cap, const char *pattern,
                     const json_t *params)
{
    const char *k;
    const json_t *v;
    char sep = '?', num[32];
    json_object_foreach((json_t *)params, k, v) {
        const char *text = NULL;
        if (in_path(pattern, k))
            continue;
        if (json_is_string(v))
            text = json_string_value(v);
        else if (json_is_integer(v) &&
                 snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v)) > 0)
            text = num;
        else if (json_is_boolean(v))
            text = json_is_true(v) ? "true" : "false";
        if (text == NULL)
            continue;
        if (put(buf, len, cap, &sep, 1) != ONCE_OK || put_enc(buf, len, cap, k, strlen(k)) ||
            put(buf, len, cap, "=", 1) != ONCE_OK || put_enc(buf, len, cap, text, strlen(text)))
            return ONCE_ENOMEM;
        sep = '&';
    }
    return ONCE_OK;
}

int once__rest_route(const char *base, const char *method, const json_t *params,
                     once__rest_call *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    const char *pattern = NULL;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        if (strcmp(routes[i].method, method) == 0) {
            pattern = routes[i].pattern;
            out->verb = routes[i].verb;
        }
    }
    if (pattern == NULL) {
        snprintf(why, whylen, "%.100s has no HTTP+JSON route", method);
        return ONCE_EINVAL;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0, blen = strlen(base);
    while (blen > 0 && base[blen - 1] == '/')
        blen--;
    int rc = put(&buf, &len, &cap, base, blen);
    const char *tenant = json_string_value(json_object_get(params, "tenant"));
    if (rc == ONCE_OK && tenant != NULL && tenant[0] != '\0' &&
        ((rc = put(&buf, &len, &cap, "/", 1)) == ONCE_OK))
        rc = put_enc(&buf, &len, &cap, tenant, strlen(tenant));
    for (const char *p = pattern; rc == ONCE_OK && *p;) {
        const char *open = strchr(p, '{');
        if (open == NULL) {
            rc = put(&buf, &len, &cap, p, strlen(p));
            break;
        }
        const char *close = strchr(open, '}');
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)(close - open - 1), open + 1);
        const char *v = json_string_value(json_object_get(params, name));
        if (v == NULL || v[0] == '\0') {
            snprintf(why, whylen, "%s needs params.%s (a string)", method, name);
            rc = ONCE_EINVAL;
            break;
        }
        if ((rc = put(&buf, &len, &cap, p, (size_t)(open - p))) == ONCE_OK)
            rc = put_enc(&buf, &len, &cap, v, strlen(v));
        p = close + 1;
    }
    if (rc == ONCE_OK && strcmp(out->verb, "POST") != 0)
        rc = put_query(&buf, &len, &cap, pattern, params);
    if (rc == ONCE_OK && strcmp(out->verb, "POST") == 0) {
        out->body = json_is_object(params) ? json_incref((json_t *)params) : json_object();
        if (out->body == NULL)
            rc = ONCE_ENOMEM;
    }
    if (rc != ONCE_OK) {
        once_free(buf);
        json_decref(out->body);
        out->body = NULL;
        return rc == ONCE_EINVAL ? rc : ONCE_ENOMEM;
    }
    out->url = buf;
    return ONCE_OK;
}

void once__rest_call_clear(once__rest_call *rc)
{
    if (rc == NULL)
        return;
    once_free(rc->url);
    json_decref(rc->body);
    memset(rc, 0, sizeof *rc);
}

/* ---------------------------------------------------------------------------
 * Errors.
 */

/* once's reasons for the JSON-RPC codes (src/a2a's errors carry them). */
static const struct {
    const char *reason;
    int code;
} rpc_reasons[] = {
    {"PARSE_ERROR", -32700},     {"INVALID_REQUEST", -32600}, {"METHOD_NOT_FOUND", -32601},
    {"INVALID_PARAMS", -32602},  {"INTERNAL", -32603},        {"STORE_UNAVAILABLE", -32603},
    {"OVERLOADED", -32603},      {"SHUTTING_DOWN", -32603},
};

static int code_of(const json_t *details, const char *status)
{
    size_t i;
    const json_t *d;
    json_array_foreach(details, i, d) {
        const char *reason = json_string_value(json_object_get(d, "reason"));
        int code = once__grpc_a2a_rpc_code(reason);
        if (code != 0)
            return code;
        for (size_t k = 0; reason != NULL && k < sizeof rpc_reasons / sizeof rpc_reasons[0]; k++)
            if (strcmp(rpc_reasons[k].reason, reason) == 0)
                return rpc_reasons[k].code;
    }
    static const struct {
        const char *status;
        int code;
    } by_status[] = {
        {"INVALID_ARGUMENT", -32602}, {"NOT_FOUND", -32001}, {"UNIMPLEMENTED", -32601}};
    for (size_t k = 0; status != NULL && k < sizeof by_status / sizeof by_status[0]; k++)
        if (strcmp(by_status[k].status, status) == 0)
            return by_status[k].code;
    return -32603;
}

void once__retry_after_of_aip193(const json_t *body, char *out, size_t cap)
{
    size_t i;
    json_t *d;
    out[0] = '\0';
    json_array_foreach(json_object_get(json_object_get(body, "error"), "details"), i, d) {
        const char *type = json_string_value(json_object_get(d, "@type"));
        const char *delay = json_string_value(json_object_get(d, "retryDelay"));
        size_t n = type != NULL ? strlen(type) : 0;
        static const char want[] = "/google.rpc.RetryInfo";
        if (delay == NULL || n < sizeof want - 1 || strcmp(type + n - (sizeof want - 1), want) != 0)
            continue;
        char *end;
        double secs = strtod(delay, &end);
        if (end == delay || strcmp(end, "s") != 0 || !(secs >= 0) || secs > 86400.0 * 365)
            continue;   /* not ProtoJSON's Duration, or absurd */
        snprintf(out, cap, "%.0f", ceil(secs));
        return;
    }
}

json_t *once__rpc_error_of_aip193(const json_t *body)
{
    const json_t *e = json_object_get(body, "error");
    if (!json_is_object(e))
        return NULL;
    const json_t *details = json_object_get(e, "details");
    const char *msg = json_string_value(json_object_get(e, "message"));
    int code = code_of(details, json_string_value(json_object_get(e, "status")));
    json_t *data = json_is_array(details) ? json_incref((json_t *)details) : json_array();
    return json_pack("{s:i, s:s, s:o}", "code", code, "message", msg ? msg : "", "data", data);
}

char *once__rpc_envelope(const json_t *id, const char *key, json_t *value)
{
    json_t *doc = value != NULL ? json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id",
                                            id != NULL ? id : json_null(), key, value)
                                : NULL;
    char *text = doc != NULL ? json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(doc);
    return text;
}
