/*
 * a2a.c -- the codec handle and the JSON-RPC 2.0 envelope: parse the body,
 * check the envelope, find the method in the table, check A2A-Version, run
 * the handler, write exactly one response.
 *
 * Order of checks (each answers with the first failure):
 *   -32700 the body is not JSON we accept (json.c)
 *   -32600 batch, not an object, notification, bad id, jsonrpc != "2.0",
 *          method missing or not a string, params not structured
 *   -32601 unknown method (also admin methods without --test-admin)
 *   -32009 A2A-Version missing/empty (= 0.3) or not 1.0, except 0.1 and
 *          0.3 names (h_v03.c)
 *   -32602 params given by position
 *   then the handler's own validation and verdicts.
 *
 * The handle is immutable after once__a2a_new apart from the per-method
 * counters, which are only touched with __atomic builtins: any number of
 * HTTP threads share one handle.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/str.h"
#include "a2a/a2a_int.h"
#include "core/log.h"

/* The config's strings, by offset: the handle keeps copies of its own, as
 * the caller's may be gone after once__a2a_new. */
static const size_t config_strings[] = {
    offsetof(once__a2a_config, url),
    offsetof(once__a2a_config, name),
    offsetof(once__a2a_config, description),
    offsetof(once__a2a_config, skill_id),
    offsetof(once__a2a_config, skill_description),
    offsetof(once__a2a_config, admin_principals),
    offsetof(once__a2a_config, grpc_url),
};
#define NSTRINGS (sizeof config_strings / sizeof config_strings[0])

/* Written once by once__a2a_new and read-only afterwards, except the counter
 * arrays: any thread bumps calls[i]/errors[i] with __atomic adds (no lock). */
struct once__a2a {
    once__a2a_config cfg;    /* its strings point into owned[] */
    char *owned[NSTRINGS];   /* config_strings' copies, NULL where unset */
    char *card;
    size_t card_len;
    uint64_t *calls;         /* [once__a2a_nmethods], atomic */
    uint64_t *errors;        /* [once__a2a_nmethods], atomic */
};

/* Point a->cfg's strings at copies a owns. */
static int own_strings(once__a2a *a)
{
    for (size_t i = 0; i < NSTRINGS; i++) {
        const char **s = (const char **)((char *)&a->cfg + config_strings[i]);
        if (*s != NULL && (a->owned[i] = once_strdup(*s)) == NULL)
            return ONCE_ENOMEM;
        *s = a->owned[i];
    }
    return ONCE_OK;
}

int once__a2a_new(const once__a2a_config *cfg, once__a2a **out)
{
    *out = NULL;
    if (cfg == NULL || cfg->backend.send == NULL || cfg->backend.get == NULL ||
        cfg->backend.cancel == NULL || cfg->backend.list == NULL || cfg->url == NULL)
        return ONCE_EINVAL;
    once__a2a *a = once_calloc(1, sizeof *a);
    if (a == NULL)
        return ONCE_ENOMEM;
    a->cfg = *cfg;
    if (a->cfg.max_parts == 0)
        a->cfg.max_parts = ONCE_A2A_MAX_PARTS;
    int rc = own_strings(a);
    if (rc == ONCE_OK) {
        a->calls = once_calloc(once__a2a_nmethods, sizeof *a->calls);
        a->errors = once_calloc(once__a2a_nmethods, sizeof *a->errors);
        if (a->calls == NULL || a->errors == NULL)
            rc = ONCE_ENOMEM;
    }
    if (rc == ONCE_OK)
        rc = once__a2a_card_build(&a->cfg, &a->card, &a->card_len);
    a->cfg.card = NULL; /* borrowed only until here */
    if (rc != ONCE_OK) {
        once__a2a_free(a);
        return rc;
    }
    *out = a;
    return ONCE_OK;
}

void once__a2a_free(once__a2a *a)
{
    if (a == NULL)
        return;
    for (size_t i = 0; i < NSTRINGS; i++)
        once_free(a->owned[i]);
    once_free(a->card);
    once_free(a->calls);
    once_free(a->errors);
    once_free(a);
}

const char *once__a2a_card(const once__a2a *a, size_t *len)
{
    if (len)
        *len = a->card_len;
    return a->card;
}

int once__a2a_card_with(const once__a2a *a, const json_t *members, char **out, size_t *len)
{
    once__a2a_config c = a->cfg;
    c.card = members;
    return once__a2a_card_build(&c, out, len);
}

const once__a2a_backend *once__a2a_backend_of(const once__a2a *a)
{
    return &a->cfg.backend;
}

const once__a2a_config *once__a2a_cfg(const once__a2a *a)
{
    return &a->cfg;
}

size_t once__a2a_max_parts(const once__a2a *a)
{
    return a->cfg.max_parts;
}

int64_t once__a2a_wait_ms(const once__a2a *a)
{
    return a->cfg.wait_ms;
}

once_offset_clock *once__a2a_clock(const once__a2a *a)
{
    return a->cfg.clock;
}

int once__a2a_method_stats(const once__a2a *a, size_t i, const char **name, uint64_t *calls,
                          uint64_t *errors)
{
    if (i >= once__a2a_nmethods)
        return ONCE_ERANGE;
    if (name)
        *name = once__a2a_methods[i].name;
    if (calls)
        *calls = __atomic_load_n(&a->calls[i], __ATOMIC_RELAXED);
    if (errors)
        *errors = __atomic_load_n(&a->errors[i], __ATOMIC_RELAXED);
    return ONCE_OK;
}

void once__a2a_add_stats(const once__a2a *a, json_t *obj)
{
    json_t *m = json_object();
    if (m == NULL)
        return;
    for (size_t i = 0; i < once__a2a_nmethods; i++) {
        const char *name;
        uint64_t calls, errors;
        once__a2a_method_stats(a, i, &name, &calls, &errors);
        json_object_set_new(m, name, json_pack("{s:I, s:I}", "calls", (json_int_t)calls,
                                               "errors", (json_int_t)errors));
    }
    json_object_set_new(obj, "methods", m);
}

/* --- headers -------------------------------------------------------------- */

static int is_space(char c)
{
    return c == ' ' || c == '\t';
}

int once__a2a_extension_active(const char *h)
{
    static const char uri[] = ONCE_A2A_EXTENSION_URI;
    const size_t ulen = sizeof uri - 1;
    if (h == NULL)
        return 0;
    const char *p = h;
    while (*p != '\0') {
        while (is_space(*p) || *p == ',')
            p++;
        const char *start = p;
        while (*p != '\0' && *p != ',')
            p++;
        const char *end = p;
        while (end > start && is_space(end[-1]))
            end--;
        if ((size_t)(end - start) == ulen && memcmp(start, uri, ulen) == 0)
            return 1;
    }
    return 0;
}

int once__a2a_version_ok(const char *v)
{
    if (v == NULL)
        return 0;
    while (is_space(*v))
        v++;
    if (strncmp(v, "1.0", 3) != 0)
        return 0;
    v += 3;
    if (*v == '.') { /* a patch number does not take part in negotiation */
        v++;
        if (*v < '0' || *v > '9')
            return 0;
        while (*v >= '0' && *v <= '9')
            v++;
    }
    while (is_space(*v))
        v++;
    return *v == '\0';
}

/* --- envelope ------------------------------------------------------------- */

/* Write {"jsonrpc":"2.0","id":id,<member>:value} into resp (steals value);
 * HTTP+JSON has no envelope: the value is the body. */
static int respond(once__a2a_response *resp, once__a2a_binding b, json_t *id, const char *member,
                   json_t *value)
{
    if (b == ONCE_A2A_HTTP_JSON) {
        int rc = value != NULL ? once__a2a_json_dump(value, &resp->body, &resp->len)
                               : ONCE_ENOMEM;
        json_decref(value);
        return rc;
    }
    json_t *doc = json_object();
    if (doc == NULL || value == NULL) {
        json_decref(doc);
        json_decref(value);
        return ONCE_ENOMEM;
    }
    /* A member that could not be added would go out missing: all or none.
     * Every set runs (each takes its value, also on failure). */
    int bad = json_object_set_new(doc, "jsonrpc", json_string("2.0"));
    bad |= json_object_set(doc, "id", id ? id : json_null());
    bad |= json_object_set_new(doc, member, value);
    int rc = bad != 0 ? ONCE_ENOMEM : once__a2a_json_dump(doc, &resp->body, &resp->len);
    json_decref(doc);
    return rc;
}

/* respond() for a result that is JSON text already (the engine spliced it
 * from the stored task): the same bytes, without a tree. Takes text. */
static int respond_text(once__a2a_response *resp, once__a2a_binding b, json_t *id, char *text)
{
    if (b == ONCE_A2A_HTTP_JSON) {
        resp->body = text;
        resp->len = strlen(text);
        return ONCE_OK;
    }
    char *idtext = NULL;
    size_t idlen = 0, tlen = strlen(text);
    int rc = once__a2a_json_dump(id != NULL ? id : json_null(), &idtext, &idlen);
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":", mid[] = ",\"result\":";
    size_t len = sizeof head - 1 + idlen + sizeof mid - 1 + tlen + 1;
    char *body = rc == ONCE_OK ? once_malloc(len + 1) : NULL;
    if (body != NULL) {
        char *p = body;
        memcpy(p, head, sizeof head - 1);
        p += sizeof head - 1;
        memcpy(p, idtext, idlen);
        p += idlen;
        memcpy(p, mid, sizeof mid - 1);
        p += sizeof mid - 1;
        memcpy(p, text, tlen);
        p += tlen;
        memcpy(p, "}", 2);
        resp->body = body;
        resp->len = len;
    } else if (rc == ONCE_OK) {
        rc = ONCE_ENOMEM;
    }
    once_free(idtext);
    once_free(text);
    return rc;
}

json_t *once__a2a_rpc_error(int code, const char *reason, const char *message, json_t *meta)
{
    /* Text JSON cannot carry (a cut multi-byte sequence) is cleaned first. */
    char clean[sizeof((a2a_call *)0)->message];
    once__a2a_utf8_clean(message, clean, sizeof clean);
    json_t *err = json_object();
    json_t *data = once__a2a_error_info(code, reason, meta);
    if (err == NULL || data == NULL) {
        json_decref(err);
        json_decref(data);
        return NULL;
    }
    json_t *ms = json_string(clean);
    int bad = json_object_set_new(err, "code", json_integer(code));
    bad |= json_object_set_new(err, "message", ms);
    bad |= json_object_set_new(err, "data", data);
    if (bad != 0) {
        json_decref(err);
        return NULL;
    }
    return err;
}

static int respond_error(once__a2a_response *resp, once__a2a_binding b, json_t *id, int code,
                         const char *reason, const char *message, json_t *meta)
{
    if (b == ONCE_A2A_HTTP_JSON) {
        char clean[sizeof((a2a_call *)0)->message];
        once__a2a_utf8_clean(message, clean, sizeof clean);
        resp->http_status = once__a2a_rest_status(code, resp->http_status);
        return respond(resp, b, NULL, NULL,
                       once__a2a_rest_error(resp->http_status, code, reason, clean, meta));
    }
    json_t *err = once__a2a_rpc_error(code, reason, message, meta);
    if (err == NULL)
        return ONCE_ENOMEM;
    if (resp->http_status == 0)
        resp->http_status = 200;
    return respond(resp, b, id, "error", err);
}

/* The error answer of call c: in its binding's shape, or, for a call on
 * 0.3's HTTP+JSON routes, the JSON-RPC error object with 0.3's statuses. */
static int respond_call_error(once__a2a_response *resp, const a2a_call *c, int code,
                              const char *reason, const char *message, json_t *meta)
{
    if (c->binding != ONCE_A2A_HTTP_JSON || c->v03 != A2A_V03_PROTO)
        return respond_error(resp, c->binding, c->id, code, reason, message, meta);
    resp->http_status = once__a2a_v03_rest_status(code, resp->http_status);
    return respond(resp, c->binding, NULL, NULL, once__a2a_rpc_error(code, reason, message, meta));
}

/* Cut a possibly truncated multi-byte sequence off the end of s (snprintf
 * truncates by bytes; jansson refuses invalid UTF-8). */
static void utf8_trim(char *s)
{
    size_t n = strlen(s), i = n;
    while (i > 0 && ((unsigned char)s[i - 1] & 0xC0) == 0x80)
        i--;
    if (i == 0 || (unsigned char)s[i - 1] < 0xC0)
        return;
    unsigned char lead = (unsigned char)s[i - 1];
    size_t want = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    if (n - (i - 1) < want)
        s[i - 1] = '\0';
}

/* A valid JSON-RPC id: string, number or null. */
static int id_ok(const json_t *id)
{
    return json_is_string(id) || json_is_number(id) || json_is_null(id);
}

const a2a_method *once__a2a_lookup(const once__a2a *a, const char *name, size_t *idx)
{
    for (size_t i = 0; i < once__a2a_nmethods; i++) {
        const a2a_method *m = &once__a2a_methods[i];
        if (strcmp(m->name, name) != 0)
            continue;
        if ((m->flags & A2A_M_ADMIN) && !a->cfg.test_admin)
            return NULL;
        *idx = i;
        return m;
    }
    return NULL;
}

static int conclude(once__a2a *a, once__a2a_response *resp, a2a_call *c, size_t idx, int rc);

int once__a2a_run(once__a2a *a, const once__a2a_request *req, once__a2a_response *resp,
                  const a2a_method *m, size_t idx, json_t *id, json_t *params,
                  once__a2a_binding b)
{
    if (req->inline_only && !(m->flags & A2A_M_INLINE))
        return ONCE__EAGAIN;
    a2a_call c;
    memset(&c, 0, sizeof c);
    c.binding = b;
    c.a = a;
    c.req = req;
    c.m = m;
    c.id = id;
    c.extension = once__a2a_extension_active(req->extensions);
    c.v03 = (m->flags & A2A_M_V03) ? once__a2a_v03_form(b) : A2A_V03_NO;
    __atomic_add_fetch(&a->calls[idx], 1, __ATOMIC_RELAXED);

    json_t *empty = NULL;
    int rc;
    if (!(m->flags & (A2A_M_LEGACY | A2A_M_V03 | A2A_M_NOVERSION)) &&
        !once__a2a_version_ok(req->version)) {
        /* Echo what the client sent, as printable ASCII (it is a header). */
        char v[33] = "0.3";
        if (req->version != NULL && req->version[0] != '\0') {
            size_t n = 0;
            for (const char *p = req->version; *p && n < sizeof v - 1; p++)
                v[n++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
            v[n] = '\0';
        }
        once__a2a_fail(&c, ONCE_RPC_VERSION_NOT_SUPPORTED, "VERSION_NOT_SUPPORTED",
                   "A2A protocol version %s is not supported; send the header A2A-Version: 1.0",
                   v);
        once__a2a_meta(&c, "version", v);
        once__a2a_meta(&c, "supportedVersions", ONCE_A2A_PROTOCOL_VERSION);
        rc = ONCE_EINVAL;
    } else if (json_is_array(params)) {
        once__a2a_fail(&c, ONCE_RPC_INVALID_PARAMS, "INVALID_PARAMS",
                   "Invalid parameters: params must be an object (named parameters)");
        once__a2a_meta(&c, "field", "params");
        rc = ONCE_EINVAL;
    } else {
        if (params == NULL)
            params = empty = json_object();
        c.params = params;
        a2a_verr e;
        rc = params ? once__a2a_json_names(params, &e) : ONCE_ENOMEM;
        if (rc == ONCE_EINVAL)
            once__a2a_fail_params(&c, &e);
        else if (rc == ONCE_OK && (m->flags & A2A_M_OPS) &&
                 !once__a2a_admin_allowed(a, req->principal))
            rc = once__a2a_admin_refuse(&c);
        else if (rc == ONCE_OK && (m->flags & A2A_M_STREAM) &&
                 !once__a2a_backend_streams(once__a2a_backend_of(a)))
            rc = once__a2a_h_streaming(&c);
        else if (rc == ONCE_OK)
            rc = m->handler(&c);
        if (rc == ONCE_ENOMEM && c.code == 0)
            once__a2a_fail(&c, ONCE_RPC_INTERNAL, "INTERNAL", "Internal error (out of memory)");
    }
    if (rc == ONCE__EAGAIN && req->inline_only) {
        /* Nothing done: the caller runs the call again where it may wait. */
        __atomic_sub_fetch(&a->calls[idx], 1, __ATOMIC_RELAXED);
        once__engine_held_drop(c.held);
        json_decref(c.result);
        once_free(c.result_text);
        json_decref(c.meta);
        json_decref(empty);
        once__log_ctx_clear();
        return ONCE__EAGAIN;
    }
    resp->extension = c.extension;
    /* For the request's log line (core/log.h); the engine may have set a
     * more precise outcome already, which is kept. */
    once__log_ctx_method(m->name);
    if (c.reason != NULL)
        once__log_ctx_outcome(c.reason);
    if (m->flags & A2A_M_OPS)
        once__a2a_admin_audit(&c, rc);

    rc = conclude(a, resp, &c, idx, rc);
    json_decref(empty);
    return rc;
}

/* Turn a finished call into the response: the result, a stream, a
 * deferred answer, or the error the handler recorded. */
static int conclude(once__a2a *a, once__a2a_response *resp, a2a_call *cp, size_t idx, int rc)
{
    a2a_call c = *cp;
    json_t *id = c.id;
    once__a2a_binding b = c.binding;
    int out;
    /* A 0.3 call's answer in 0.3 shape (a stream converts its frames). */
    if (rc == ONCE_OK && c.v03 && c.result != NULL && c.deferred == NULL && c.stream == NULL)
        rc = once__a2a_v03_result(c.m->name, c.v03, &c.result);
    if (c.result_text != NULL && (rc != ONCE_OK || c.deferred != NULL || c.stream != NULL)) {
        /* Only a plain answer goes out as text. */
        once_free(c.result_text);
        c.result_text = NULL;
    }
    if (rc == ONCE_OK && c.deferred != NULL) {
        resp->http_status = 200;
        resp->deferred = c.deferred;
        c.deferred = NULL;
        json_decref(c.result);
        c.result = NULL;
        out = ONCE_OK;
    } else if (rc == ONCE_OK && c.stream != NULL) {
        /* A stream: the HTTP layer sends events, not a body. */
        resp->http_status = 200;
        resp->replayed = c.replayed;
        resp->stream = c.stream;
        c.stream = NULL;
        json_decref(c.result);
        c.result = NULL;
        out = ONCE_OK;
    } else if (rc == ONCE_OK && (c.result != NULL || c.result_text != NULL)) {
        resp->http_status = 200;
        resp->replayed = c.replayed;
        if (c.result_text != NULL)
            out = respond_text(resp, b, id, c.result_text);
        else
            out = respond(resp, b, id, "result", c.result);
        c.result = NULL;
        c.result_text = NULL;
        if (out == ONCE_OK) {
            resp->held = c.held;
            c.held = NULL;
        }
        if (out != ONCE_OK && out != ONCE_ENOMEM) {
            /* The writer refused the answer (nested past ONCE_JSON_MAX_DEPTH;
             * the value limit keeps stored values short of it): say so, with
             * the request's id, rather than fail as if memory ran out. */
            once_free(resp->body);
            resp->body = NULL;
            resp->len = 0;
            resp->http_status = 500;
            resp->replayed = 0;
            __atomic_add_fetch(&a->errors[idx], 1, __ATOMIC_RELAXED);
            char why[160];
            snprintf(why, sizeof why,
                     "Internal error: the answer could not be written as JSON (%s%s)",
                     once_errname(out),
                     out == ONCE_ERANGE ? ": nested too deep" : "");
            out = respond_call_error(resp, &c, ONCE_RPC_INTERNAL, "RESPONSE_NOT_WRITABLE", why,
                                     NULL);
        }
    } else {
        if (c.code == 0) /* a handler bug: failed without saying why */
            once__a2a_fail(&c, ONCE_RPC_INTERNAL, "INTERNAL", "Internal error (%s)", once_errname(rc));
        if (c.oom) {
            /* The error lost metadata on the way: not that answer, then. */
            json_decref(c.meta);
            c.meta = NULL;
            c.oom = 0;
            c.http_status = c.retry_after = 0;
            once__a2a_fail(&c, ONCE_RPC_INTERNAL, "INTERNAL", "Internal error (out of memory)");
        }
        __atomic_add_fetch(&a->errors[idx], 1, __ATOMIC_RELAXED);
        resp->http_status = c.http_status ? c.http_status : 200;
        resp->retry_after = c.retry_after;
        json_decref(c.result);
        once__a2a_stream_free(c.stream);
        once__a2a_deferred_free(c.deferred);
        out = respond_call_error(resp, &c, c.code, c.reason, c.message, c.meta);
    }
    once__engine_held_drop(c.held);   /* not answered as written: not stored */
    json_decref(c.meta);
    return out;
}

/* On the await thread: keep the record it handed over for the answer. */
static void deferred_ready(void *arg, once_record *rec)
{
    once__a2a_deferred *d = arg;
    d->rec = rec;
    d->ready(d->ready_arg);
}

int once__a2a_deferred_arm(once__a2a_deferred *d, void (*ready)(void *arg), void *arg)
{
    const once__a2a_backend *b = &d->a->cfg.backend;
    d->ready = ready;
    d->ready_arg = arg;
    return b->await(b->ctx, d->principal, d->task_id, d->gen, d->seq, d->until, deferred_ready,
                    d);
}

int once__a2a_deferred_finish(once__a2a_deferred *d, once__a2a_response *resp)
{
    memset(resp, 0, sizeof *resp);
    a2a_call c;
    memset(&c, 0, sizeof c);
    c.a = d->a;
    c.m = &once__a2a_methods[d->idx];
    c.id = d->id;
    c.binding = d->binding;
    c.extension = d->extension;
    c.v03 = d->v03;
    resp->extension = c.extension;
    once__log_ctx_method(c.m->name);
    int rc = once__a2a_h_send_answer(&c, d);
    if (rc == ONCE_ENOMEM && c.code == 0)
        once__a2a_fail(&c, ONCE_RPC_INTERNAL, "INTERNAL", "Internal error (out of memory)");
    rc = conclude(d->a, resp, &c, d->idx, rc);
    once__a2a_deferred_free(d);
    return rc;
}

void once__a2a_deferred_free(once__a2a_deferred *d)
{
    if (d == NULL)
        return;
    json_decref(d->id);
    once_record_clear(d->rec);
    once_free(d->rec);
    once_free(d);
}

void once__a2a_release_waits(once__a2a *a)
{
    const once__a2a_backend *b = &a->cfg.backend;
    if (b->await_release != NULL)
        b->await_release(b->ctx);
}

int once__a2a_handle(once__a2a *a, const once__a2a_request *req, once__a2a_response *resp)
{
    memset(resp, 0, sizeof *resp);
    char why[200], msg[300];
    json_t *doc = NULL;
    int rc = once__a2a_json_parse(req->body, req->len, &doc, why, sizeof why);
    if (rc == ONCE_ENOMEM)
        return rc;
    if (rc != ONCE_OK) {
        snprintf(msg, sizeof msg, "Parse error: %s", why);
        return respond_error(resp, ONCE_A2A_JSONRPC, NULL, ONCE_RPC_PARSE_ERROR, "PARSE_ERROR",
                             msg, NULL);
    }
    if (json_is_array(doc)) {
        json_decref(doc);
        return respond_error(resp, ONCE_A2A_JSONRPC, NULL, ONCE_RPC_INVALID_REQUEST,
                             "BATCH_NOT_SUPPORTED",
                             "Invalid request: batch requests are not supported; send one "
                             "JSON-RPC request per HTTP request",
                             NULL);
    }
    if (!json_is_object(doc)) {
        json_decref(doc);
        return respond_error(resp, ONCE_A2A_JSONRPC, NULL, ONCE_RPC_INVALID_REQUEST,
                             "INVALID_REQUEST", "Invalid request: the request must be a JSON object",
                             NULL);
    }
    json_t *id = json_object_get(doc, "id");
    const char *bad = NULL;
    if (id == NULL)
        bad = "Invalid request: notifications (requests without an id) are not supported";
    else if (!id_ok(id))
        bad = "Invalid request: id must be a string, a number or null";
    if (bad != NULL)
        id = NULL;
    json_t *jv = json_object_get(doc, "jsonrpc");
    json_t *method = json_object_get(doc, "method");
    json_t *params = json_object_get(doc, "params");
    if (bad == NULL && (!json_is_string(jv) || strcmp(json_string_value(jv), "2.0") != 0))
        bad = "Invalid request: jsonrpc must be \"2.0\"";
    if (bad == NULL && !json_is_string(method))
        bad = "Invalid request: method must be a string";
    if (bad == NULL && params != NULL && !json_is_object(params) && !json_is_array(params))
        bad = "Invalid request: params must be an object";
    if (bad != NULL) {
        rc = respond_error(resp, ONCE_A2A_JSONRPC, id, ONCE_RPC_INVALID_REQUEST,
                           "INVALID_REQUEST", bad, NULL);
        json_decref(doc);
        return rc;
    }
    size_t idx = 0;
    const a2a_method *m = once__a2a_lookup(a, json_string_value(method), &idx);
    if (m == NULL) {
        char name[201];
        once__strlcpy(name, json_string_value(method), sizeof name);
        utf8_trim(name);
        json_t *meta = json_pack("{s:s}", "method", name);
        snprintf(msg, sizeof msg, "Method not found: %s", name);
        rc = respond_error(resp, ONCE_A2A_JSONRPC, id, ONCE_RPC_METHOD_NOT_FOUND,
                           "METHOD_NOT_FOUND", msg, meta);
        json_decref(meta);
        json_decref(doc);
        return rc;
    }
    rc = once__a2a_run(a, req, resp, m, idx, id, params, ONCE_A2A_JSONRPC);
    json_decref(doc);
    return rc;
}
