/*
 * inspect.c -- the routes of the task inspector (inspect.h): who is
 * asking, which page, the answer's headers; the pages themselves are drawn
 * by inspect_html.c.
 *
 * Invariants: every answer carries CSP_HEADER and Cache-Control: no-store;
 * the principal comes from the Authorization header or the login cookie (a
 * session signed with the token's digest, never the token: auth.c),
 * checked against the same token table as JSON-RPC, never from the URL;
 * the list goes through the codec's ListTasks (the same validation, page
 * tokens and principal scoping as any client's), the timeline through the
 * backend's callback. The struct is immutable after once__inspect_new.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/base64.h"
#include "core/jcs.h"
#include "core/metrics.h"
#include "core/pct.h"
#include "core/quote.h"
#include "http/inspect.h"
#include "http/ops.h"

#define PREFIX "/inspect"
#define COOKIE "once_session"
/* A login lasts this long (seconds), or until its token leaves the file. */
#define SESSION_TTL_S (12 * 3600)
#define HTML "text/html; charset=utf-8"
#define JSON "application/json"
/* Nothing but this origin, no inline script or style, no framing. */
#define CSP_HEADER                                                                              \
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "               \
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
#define PAGE_SIZE 50
#define TOKEN_MAX 512

struct once__inspect {
    once_http_inspect cfg;
    const once_tokens *tokens;
    once__a2a *codec;
    int secure;                 /* served over TLS: the cookie says Secure */
};

int once__inspect_new(const once_http_inspect *cfg, const once_tokens *tokens, once__a2a *codec,
                      int secure, once__inspect **out)
{
    *out = NULL;
    if (cfg == NULL || !cfg->on)
        return ONCE_OK;
    once__inspect *in = once_calloc(1, sizeof *in);
    if (in == NULL)
        return ONCE_ENOMEM;
    in->cfg = *cfg;
    in->tokens = tokens;
    in->codec = codec;
    in->secure = secure;
    *out = in;
    return ONCE_OK;
}

void once__inspect_free(once__inspect *in)
{
    once_free(in);
}

/* Queue text (copied) with our headers and the policy csp, plus the
 * name/value pairs of extra (NULL-terminated, at most EXTRA_MAX of them;
 * NULL = none). */
#define EXTRA_MAX 4
static enum MHD_Result answer_csp(struct MHD_Connection *conn, const char *method, int status,
                                  const char *csp, const char *type, const char *text,
                                  size_t len, const char *const *extra)
{
    const char *h[2 * (EXTRA_MAX + 4) + 1] = {"Content-Security-Policy", csp,
                                              "X-Content-Type-Options", "nosniff",
                                              "Referrer-Policy", "same-origin"};
    size_t n = 6;
    if (status == MHD_HTTP_UNAUTHORIZED) {
        h[n++] = MHD_HTTP_HEADER_WWW_AUTHENTICATE;
        h[n++] = "Bearer realm=\"once\"";
    }
    for (size_t i = 0; extra != NULL && extra[i] != NULL && i < 2 * EXTRA_MAX; i++)
        h[n++] = extra[i];
    h[n] = NULL;
    return once__ops_answer(conn, method, status, type, text, len, h);
}

static enum MHD_Result answer(struct MHD_Connection *conn, const char *method, int status,
                              const char *type, const char *text, size_t len,
                              const char *const *extra)
{
    return answer_csp(conn, method, status, CSP_HEADER, type, text, len, extra);
}

static enum MHD_Result plain(struct MHD_Connection *conn, const char *method, int status,
                             const char *text, const char *const *extra)
{
    return answer(conn, method, status, "text/plain; charset=utf-8", text, strlen(text), extra);
}

/* Answer a built page (or 500 when building it ran out of memory). */
static enum MHD_Result answer_text(struct MHD_Connection *conn, const char *method, int status,
                                   const char *type, once__mtext *t)
{
    enum MHD_Result ret;
    if (t->oom)
        ret = plain(conn, method, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n", NULL);
    else
        ret = answer(conn, method, status, type, t->buf != NULL ? t->buf : "", t->len, NULL);
    once__mtext_free(t);
    return ret;
}

/* A note page; a 401, and the login page, carry the login form. */
static enum MHD_Result note(struct MHD_Connection *conn, const char *method, int status,
                            const char *title, const char *text)
{
    once__mtext t = {0};
    once__inspect_note_page(&t, title, text,
                            status == MHD_HTTP_UNAUTHORIZED || strcmp(title, "Sign in") == 0);
    return answer_text(conn, method, status, HTML, &t);
}

static enum MHD_Result json_error(struct MHD_Connection *conn, const char *method, int status,
                                  const char *reason)
{
    char body[160];
    int n = snprintf(body, sizeof body, "{\"error\":{\"code\":%d,\"status\":\"%s\"}}", status,
                     reason);
    return answer(conn, method, status, JSON, body, (size_t)n, NULL);
}

/* Who asks, copied into out: "anonymous" without --auth-tokens, else the
 * principal of the Authorization header or of the login cookie; NULL =
 * nobody known. */
static const char *principal_of(const once__inspect *in, struct MHD_Connection *conn,
                                char out[ONCE_PRINCIPAL_MAX + 1])
{
    if (in->tokens == NULL) {
        snprintf(out, ONCE_PRINCIPAL_MAX + 1, "anonymous");
        return out;
    }
    const char *p = once__tokens_principal(
        in->tokens, MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                MHD_HTTP_HEADER_AUTHORIZATION), out);
    const char *cookie = MHD_lookup_connection_value(conn, MHD_COOKIE_KIND, COOKIE);
    if (p == NULL && cookie != NULL)
        p = once__session_principal(in->tokens, cookie, (int64_t)time(NULL), out);
    return p;
}

/* GET /inspect/api/task/ID and /inspect/task/ID. */
static enum MHD_Result task(once__inspect *in, struct MHD_Connection *conn, const char *method,
                            const char *principal, const char *id, int as_json)
{
    json_t *tl = NULL;
    int rc = in->cfg.timeline != NULL ? in->cfg.timeline(in->cfg.ctx, principal, id, &tl)
                                      : ONCE_ENOTFOUND;
    if (rc != ONCE_OK) {
        int st = rc == ONCE_ENOTFOUND ? MHD_HTTP_NOT_FOUND
                 : rc == ONCE_ENOMEM  ? MHD_HTTP_INTERNAL_SERVER_ERROR
                                      : MHD_HTTP_SERVICE_UNAVAILABLE;
        const char *why = rc == ONCE_ENOTFOUND ? "TASK_NOT_FOUND"
                          : rc == ONCE_ENOMEM  ? "INTERNAL"
                                               : "STORE_UNAVAILABLE";
        if (as_json)
            return json_error(conn, method, st, why);
        return note(conn, method, st, rc == ONCE_ENOTFOUND ? "No such task" : "Not available",
                    rc == ONCE_ENOTFOUND ? "You have no task with this ID."
                                         : "The store did not answer; reload to try again.");
    }
    once__mtext t = {0};
    if (as_json) {
        char *text = NULL;
        size_t len = 0;
        if (once__json_write(tl, &text, &len) != ONCE_OK)
            t.oom = 1;
        else
            once__mtext_printf(&t, "%.*s", (int)len, text);
        once_free(text);
    } else {
        once__inspect_task_page(&t, tl);
    }
    json_decref(tl);
    return answer_text(conn, method, MHD_HTTP_OK, as_json ? JSON : HTML, &t);
}

/* ---- an artifact's part, downloaded ------------------------------------- */

/* The media types a file part keeps when served: none that a browser runs
 * or renders as a page of this origin (no HTML, SVG, XML or script). Any
 * other is served as application/octet-stream. */
static const char *const kept_types[] = {"text/plain", "text/csv", "application/json",
                                         "application/pdf", "application/zip", "image/png",
                                         "image/jpeg", "image/gif", "image/webp"};

static const char *part_type(const char *kind, const char *media)
{
    if (strcmp(kind, "text") == 0)
        return "text/plain; charset=utf-8";
    if (strcmp(kind, "data") == 0)
        return JSON;
    size_t n = media != NULL ? strcspn(media, "; \t") : 0;
    for (size_t i = 0; i < sizeof kept_types / sizeof kept_types[0]; i++)
        if (n > 0 && strlen(kept_types[i]) == n && strncasecmp(media, kept_types[i], n) == 0)
            return kept_types[i];
    return "application/octet-stream";
}

/* The file name of a download: the part's own (else the artifact's name,
 * else "part"), with every byte but A-Z a-z 0-9 . _ - as '_', no leading
 * dot, at most FILENAME_MAX_LEN bytes; "-N" and an extension for a text or
 * data part that had no file name. */
#define FILENAME_MAX_LEN 96
static void part_filename(const json_t *part, const char *kind, size_t index, char *out,
                          size_t cap)
{
    const char *own = json_string_value(json_object_get(part, "filename"));
    const char *base = own != NULL ? own : json_string_value(json_object_get(part, "artifact"));
    size_t n = 0;
    for (const char *c = base != NULL ? base : ""; *c != '\0' && n < FILENAME_MAX_LEN; c++) {
        unsigned char ch = (unsigned char)*c;
        int ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
                 (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
        if (n == 0 && ch == '.')
            continue;
        out[n++] = ok ? (char)ch : '_';
    }
    out[n] = '\0';
    if (own != NULL && n > 0)
        return;
    snprintf(out + n, cap - n, "%s%zu%s", n > 0 ? "-" : "part-", index,
             strcmp(kind, "text") == 0 ? ".txt" : strcmp(kind, "data") == 0 ? ".json" : "");
}

/* GET /inspect/file/ID?artifact=A&part=N: the part's bytes, as an
 * attachment the browser saves, never a page it renders: a type of
 * part_type, nosniff, and a policy that sandboxes it if opened anyway. */
static enum MHD_Result download(once__inspect *in, struct MHD_Connection *conn,
                                const char *method, const char *principal, const char *id)
{
    const char *artifact = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "artifact");
    const char *num = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "part");
    size_t index = 0, digits = num != NULL ? strspn(num, "0123456789") : 0;
    if (artifact == NULL || digits == 0 || digits > 4 || num[digits] != '\0')
        return note(conn, method, MHD_HTTP_BAD_REQUEST, "Not a part",
                    "Give the artifact (artifact=ID) and the part's number (part=N).");
    for (size_t i = 0; i < digits; i++)
        index = index * 10 + (size_t)(num[i] - '0');
    json_t *part = NULL;
    int rc = in->cfg.part != NULL ? in->cfg.part(in->cfg.ctx, principal, id, artifact, index, &part)
                                  : ONCE_ENOTFOUND;
    if (rc != ONCE_OK)
        return note(conn, method,
                    rc == ONCE_ENOTFOUND ? MHD_HTTP_NOT_FOUND : MHD_HTTP_SERVICE_UNAVAILABLE,
                    rc == ONCE_ENOTFOUND ? "No such part" : "Not available",
                    rc == ONCE_ENOTFOUND ? "You have no task with this ID, artifact and part."
                                         : "The store did not answer; reload to try again.");
    const char *kind = json_string_value(json_object_get(part, "kind"));
    const json_t *raw = json_object_get(part, "raw");
    char *bytes = NULL;
    size_t len = 0;
    long n = -1;
    if (strcmp(kind, "text") == 0) {
        rc = (bytes = once_strdup(json_string_value(json_object_get(part, "text")))) != NULL
                 ? ONCE_OK : ONCE_ENOMEM;
        len = bytes != NULL ? strlen(bytes) : 0;
    } else if (strcmp(kind, "data") == 0) {
        rc = once__json_write(json_object_get(part, "data"), &bytes, &len);
    } else if (json_is_string(raw) &&
               (n = once__base64_decode(json_string_value(raw), json_string_length(raw), NULL,
                                        0)) >= 0) {
        bytes = once_malloc((size_t)n + 1);
        rc = bytes != NULL ? ONCE_OK : ONCE_ENOMEM;
        if (bytes != NULL)
            len = (size_t)once__base64_decode(json_string_value(raw), json_string_length(raw),
                                              (uint8_t *)bytes, (size_t)n + 1);
    } else {
        json_decref(part);
        return note(conn, method, MHD_HTTP_NOT_FOUND, "Not stored here",
                    "The agent gave this file by reference (a URL), not its bytes.");
    }
    enum MHD_Result ret;
    if (rc != ONCE_OK) {
        ret = plain(conn, method, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n", NULL);
    } else {
        char name[FILENAME_MAX_LEN + 32], disposition[FILENAME_MAX_LEN + 64];
        part_filename(part, kind, index, name, sizeof name);
        snprintf(disposition, sizeof disposition, "attachment; filename=\"%s\"", name);
        const char *const extra[] = {"Content-Disposition", disposition, NULL};
        ret = answer_csp(conn, method, MHD_HTTP_OK, "default-src 'none'; sandbox",
                         part_type(kind, json_string_value(json_object_get(part, "mediaType"))),
                         bytes != NULL ? bytes : "", len, extra);
    }
    once_free(bytes);
    json_decref(part);
    return ret;
}

/* Set a member of the ListTasks params from a query argument. */
static int set_arg(json_t *params, const char *member, const char *value)
{
    if (value == NULL || value[0] == '\0')
        return 0;
    return json_object_set_new(params, member, json_string(value));
}

/* GET /inspect/: one page of ListTasks, through the codec. */
/* For an operator (--admin-principals), the once/admin/replicas answer
 * (audited as every such call is); NULL for everyone else, or when it
 * fails: the list page is the caller's tasks first. */
static json_t *cluster_of(once__inspect *in, const char *principal)
{
    if (!once__a2a_is_admin(in->codec, principal))
        return NULL;
    static const char body[] =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"once/admin/replicas\",\"params\":{}}";
    once__a2a_request q = {.principal = principal, .version = "1.0", .body = body,
                           .len = sizeof body - 1};
    once__a2a_response resp;
    memset(&resp, 0, sizeof resp);
    json_t *doc = NULL, *out = NULL;
    if (once__a2a_handle(in->codec, &q, &resp) == ONCE_OK && resp.body != NULL &&
        once__json_loads(resp.body, 0, &doc, NULL) == ONCE_OK)
        out = json_incref(json_object_get(doc, "result"));
    json_decref(doc);
    once__a2a_response_clear(&resp);
    return out;
}

static enum MHD_Result list(once__inspect *in, struct MHD_Connection *conn, const char *method,
                            const char *principal)
{
    once__inspect_filter f = {
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "state"),
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "context"),
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "after"),
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "page")};
    json_t *params = json_pack("{s:i, s:i}", "pageSize", PAGE_SIZE, "historyLength", 0);
    json_t *req = NULL;
    char *body = NULL;
    size_t len = 0;
    int rc = ONCE_ENOMEM;
    if (params != NULL && set_arg(params, "status", f.state) == 0 &&
        set_arg(params, "contextId", f.context) == 0 &&
        set_arg(params, "statusTimestampAfter", f.after) == 0 &&
        set_arg(params, "pageToken", f.page) == 0 &&
        (req = json_pack("{s:s, s:i, s:s, s:O}", "jsonrpc", "2.0", "id", 1, "method", "ListTasks",
                         "params", params)) != NULL)
        rc = once__json_write(req, &body, &len);
    json_decref(req);
    json_decref(params);
    once__a2a_response resp;
    memset(&resp, 0, sizeof resp);
    if (rc == ONCE_OK) {
        once__a2a_request q = {.principal = principal, .version = "1.0", .body = body, .len = len};
        rc = once__a2a_handle(in->codec, &q, &resp);
    }
    once_free(body);
    json_t *doc = NULL;
    if (rc == ONCE_OK)
        rc = once__json_loads(resp.body != NULL ? resp.body : "", 0, &doc, NULL);
    int status = resp.http_status != 0 ? resp.http_status : MHD_HTTP_INTERNAL_SERVER_ERROR;
    once__a2a_response_clear(&resp);
    if (rc != ONCE_OK) {
        json_decref(doc);
        return note(conn, method, MHD_HTTP_INTERNAL_SERVER_ERROR, "Tasks", "Out of memory.");
    }
    const json_t *result = json_object_get(doc, "result");
    const json_t *err = json_object_get(doc, "error");
    const char *error = json_string_value(json_object_get(err, "message"));
    /* A JSON-RPC error travels in a 200; the page says what it means. */
    if (result == NULL && json_integer_value(json_object_get(err, "code")) == ONCE_RPC_INVALID_PARAMS)
        status = MHD_HTTP_BAD_REQUEST;
    else if (result == NULL && status == MHD_HTTP_OK)
        status = MHD_HTTP_INTERNAL_SERVER_ERROR;
    json_t *cluster = cluster_of(in, principal);
    once__mtext t = {0};
    once__inspect_list_page(&t, &f, result,
                            result != NULL ? NULL : error != NULL ? error : "ListTasks failed",
                            principal, cluster);
    json_decref(cluster);
    json_decref(doc);
    return answer_text(conn, method, result != NULL ? MHD_HTTP_OK : status, HTML, &t);
}

static const char *const to_list[] = {MHD_HTTP_HEADER_LOCATION, PREFIX "/", NULL};

static int is_get(const char *method)
{
    return strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
}

/* The routes that need a principal. */
static enum MHD_Result authed(once__inspect *in, struct MHD_Connection *conn, const char *url,
                              const char *method)
{
    const char *path = url + strlen(PREFIX);
    int api = strncmp(path, "/api/", 5) == 0;
    char who[ONCE_PRINCIPAL_MAX + 1];
    const char *principal = principal_of(in, conn, who);
    if (principal == NULL) {
        if (api)
            return json_error(conn, method, MHD_HTTP_UNAUTHORIZED, "UNAUTHENTICATED");
        return note(conn, method, MHD_HTTP_UNAUTHORIZED, "Sign in",
                    "Send Authorization: Bearer TOKEN, or give your token here.");
    }
    if (strcmp(path, "/") == 0)
        return list(in, conn, method, principal);
    if (strncmp(path, "/task/", 6) == 0 && path[6] != '\0')
        return task(in, conn, method, principal, path + 6, 0);
    if (strncmp(path, "/api/task/", 10) == 0 && path[10] != '\0')
        return task(in, conn, method, principal, path + 10, 1);
    if (strncmp(path, "/file/", 6) == 0 && path[6] != '\0')
        return download(in, conn, method, principal, path + 6);
    if (api)
        return json_error(conn, method, MHD_HTTP_NOT_FOUND, "NOT_FOUND");
    return note(conn, method, MHD_HTTP_NOT_FOUND, "Not found", "No such page of the inspector.");
}

int once__inspect_route(once__inspect *in, struct MHD_Connection *conn, const char *url,
                        const char *method, enum MHD_Result *ret, once__inspect_stream *stream)
{
    if (in == NULL || strncmp(url, PREFIX, strlen(PREFIX)) != 0 ||
        (url[strlen(PREFIX)] != '\0' && url[strlen(PREFIX)] != '/'))
        return ONCE__INSPECT_NOT_MINE;
    const char *path = url + strlen(PREFIX);
    if (once__has_control(path)) {
        /* A NUL (%00, turned into DEL by once__url_unescape) or another
         * control character: what a proxy in front matched is not what a
         * C string here would read, so nothing is served for it. */
        *ret = strncmp(path, "/api/", 5) == 0
                   ? json_error(conn, method, MHD_HTTP_BAD_REQUEST, "BAD_PATH")
                   : plain(conn, method, MHD_HTTP_BAD_REQUEST,
                           "The path holds a control character.\n", NULL);
        return ONCE__INSPECT_ANSWERED;
    }
    if (strcmp(path, "/login") == 0 && strcmp(method, MHD_HTTP_METHOD_POST) == 0)
        return ONCE__INSPECT_LOGIN;
    if (strncmp(path, "/api/stream/", 12) == 0 && path[12] != '\0' &&
        strcmp(method, MHD_HTTP_METHOD_GET) == 0) {
        /* The task page's live stream: SubscribeToTask as the signed-in
         * principal (the script never holds a token). */
        if (principal_of(in, conn, stream->principal) == NULL) {
            *ret = json_error(conn, method, MHD_HTTP_UNAUTHORIZED, "UNAUTHENTICATED");
            return ONCE__INSPECT_ANSWERED;
        }
        stream->task_id = path + 12;
        return ONCE__INSPECT_STREAM;
    }
    static const char *const allow[] = {MHD_HTTP_HEADER_ALLOW, "GET, HEAD", NULL};
    if (!is_get(method))
        *ret = plain(conn, method, MHD_HTTP_METHOD_NOT_ALLOWED, "GET\n", allow);
    else if (path[0] == '\0')
        *ret = plain(conn, method, MHD_HTTP_PERMANENT_REDIRECT, PREFIX "/\n", to_list);
    else if (strcmp(path, "/inspect.js") == 0)
        *ret = answer(conn, method, MHD_HTTP_OK, "text/javascript; charset=utf-8",
                      once__inspect_js, strlen(once__inspect_js), NULL);
    else if (strcmp(path, "/inspect.css") == 0)
        *ret = answer(conn, method, MHD_HTTP_OK, "text/css; charset=utf-8", once__inspect_css,
                      strlen(once__inspect_css), NULL);
    else if (strcmp(path, "/login") == 0)
        *ret = note(conn, method, MHD_HTTP_OK, "Sign in",
                    in->tokens != NULL ? "Give your bearer token (the one your client sends)."
                                       : "This onced runs without --auth-tokens: no token "
                                         "is needed.");
    else
        *ret = authed(in, conn, url, method);
    return ONCE__INSPECT_ANSWERED;
}

/* The token of a form body "token=...&...", decoded into out. */
static int form_token(const char *body, size_t len, char *out, size_t outlen)
{
    const char *p = body, *end = body + len;
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *stop = amp != NULL ? amp : end;
        if ((size_t)(stop - p) > 6 && memcmp(p, "token=", 6) == 0)
            return once__pct_decode(p + 6, (size_t)(stop - p - 6), 1, out, outlen);
        p = stop + 1;
    }
    return 0;
}

/* A browser names the page a form was sent from (Origin); one of another
 * site may not sign anyone in (login CSRF). No Origin: not a browser's form,
 * or an old one; the token is checked all the same. */
static int same_origin(struct MHD_Connection *conn)
{
    const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
    const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    if (origin == NULL)
        return 1;
    const char *p = strstr(origin, "://");
    return p != NULL && host != NULL && strcasecmp(p + 3, host) == 0;
}

enum MHD_Result once__inspect_login(once__inspect *in, struct MHD_Connection *conn,
                                    const char *body, size_t len)
{
    const char *method = MHD_HTTP_METHOD_POST;
    char token[TOKEN_MAX];
    if (!same_origin(conn))
        return note(conn, method, MHD_HTTP_FORBIDDEN, "Not signed in",
                    "The form was sent from another site.");
    if (in->tokens == NULL)
        return plain(conn, method, MHD_HTTP_SEE_OTHER, PREFIX "/\n", to_list);
    char session[ONCE__SESSION_MAX];
    int ok = body != NULL && form_token(body, len, token, sizeof token) &&
             once__session_make(in->tokens, token, (int64_t)time(NULL), SESSION_TTL_S, session,
                                sizeof session) == ONCE_OK;
    memset(token, 0, sizeof token);
    if (!ok)
        return note(conn, method, MHD_HTTP_UNAUTHORIZED, "Sign in",
                    "That token is not known here. Give your bearer token.");
    /* The cookie holds a session, never the token (auth.c): it expires,
     * and a tokens file without the token revokes it. Path=/inspect keeps
     * it off the A2A endpoints, SameSite=Strict off other sites' requests,
     * HttpOnly out of every script (the task page's stream is served
     * under /inspect with it), Secure off plain HTTP when onced serves
     * TLS. */
    once__mtext c = {0};
    once__mtext_printf(&c, COOKIE "=%s; Path=" PREFIX "; Max-Age=%d; HttpOnly; SameSite=Strict%s",
                       session, SESSION_TTL_S, in->secure ? "; Secure" : "");
    enum MHD_Result ret;
    if (c.oom) {
        ret = note(conn, method, MHD_HTTP_INTERNAL_SERVER_ERROR, "Sign in", "Out of memory.");
    } else {
        const char *const extra[] = {MHD_HTTP_HEADER_LOCATION, PREFIX "/",
                                     MHD_HTTP_HEADER_SET_COOKIE, c.buf, NULL};
        ret = plain(conn, method, MHD_HTTP_SEE_OTHER, PREFIX "/\n", extra);
        memset(c.buf, 0, c.len);
    }
    once__mtext_free(&c);
    return ret;
}
