/*
 * upstream_call.c -- one call of the gateway to its upstream agent, on the
 * binding the upstream's card chose: JSON-RPC (POST the envelope to the
 * interface URL) or HTTP+JSON (the A2A 1.0 routes below it). Each request
 * goes through the client's HTTP code (src/client/http.c: one easy handle
 * per request, so a retry never rides on a connection that just failed).
 *
 * Retries follow the client's policy (once_retry_policy: attempts, attempt
 * timeout, deadline, full-jitter backoff from core/backoff.c, Retry-After)
 * and its retry budget, one token bucket per executor: a spent budget slows
 * the retries to the backoff's cap, and only the deadline ends them. Retried: no HTTP
 * answer (refused, reset, timeout), HTTP 429 and 5xx, and JSON-RPC errors
 * the upstream marks retryable. Anything else the upstream answered is its
 * verdict and is returned at once.
 *
 * A streamed call (SendStreamingMessage, SubscribeToTask: q->on_event set)
 * hands each event to the caller as it arrives (upstream_stream.c) and
 * returns once its stream ends, cut or not (r->streamed, r->cut): a stream
 * that opened is never re-tried here, since the caller knows what it got;
 * an answer that is not a stream is judged like any other.
 *
 * Invariants: every attempt of one call sends the same bytes (built once),
 * so an upstream that dedups messageId sees the same message; the waits
 * between attempts end early when the turn is canceled, unless the call is
 * the CancelTask that follows a cancel (despite_cancel).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/backoff.h"
#include "core/jcs.h"
#include "core/v03.h"
#include "core/metrics.h"
#include "core/str.h"
#include "exec/upstream.h"

void once__gw_res_clear(gw_res *r)
{
    json_decref(r->result);
    r->result = NULL;
}

static void say(gw_res *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(gw_res *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof r->error, fmt, ap);
    va_end(ap);
}

/* An ID as one path segment: anything but [A-Za-z0-9._~-] percent-escaped
 * (a ':' would read as a custom method). */
static void put_segment(once__text *t, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; s != NULL && *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '.' || c == '_' || c == '~' || c == '-') {
            once__text_put(t, s, 1);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            once__text_put(t, e, 3);
        }
    }
}

/* HTTP+JSON: the route of a method, its verb and its body. */
static int rest_request(const gw *g, const gw_req *q, char **url, char **body, const char **verb)
{
    const char *id = json_string_value(json_object_get(q->params, "id"));
    once__text t = ONCE__TEXT_INIT;
    once__text_str(&t, g->endpoint);
    *verb = "POST";
    *body = NULL;
    if (strcmp(q->method, "SendMessage") == 0 || strcmp(q->method, "SendStreamingMessage") == 0) {
        if (q->method[4] == 'S')
            ONCE__TEXT_LIT(&t, "/message:stream");
        else
            ONCE__TEXT_LIT(&t, "/message:send");
        *body = json_dumps(q->params, JSON_COMPACT);
    } else if (strcmp(q->method, "SubscribeToTask") == 0) {
        ONCE__TEXT_LIT(&t, "/tasks/");
        put_segment(&t, id);
        ONCE__TEXT_LIT(&t, ":subscribe");
        *body = json_dumps(q->params, JSON_COMPACT);
    } else if (strcmp(q->method, "GetTask") == 0) {
        ONCE__TEXT_LIT(&t, "/tasks/");
        put_segment(&t, id);
        *verb = "GET";
    } else if (strcmp(q->method, "CancelTask") == 0) {
        ONCE__TEXT_LIT(&t, "/tasks/");
        put_segment(&t, id);
        ONCE__TEXT_LIT(&t, ":cancel");
        *body = json_dumps(q->params, JSON_COMPACT);
    } else if (strcmp(q->method, "ListTasks") == 0) {
        const char *sep = "?", *key;
        json_t *v;
        ONCE__TEXT_LIT(&t, "/tasks");
        json_object_foreach((json_t *)q->params, key, v) {
            once__text_strs(&t, sep, key, "=", NULL);
            if (json_is_string(v))
                put_segment(&t, json_string_value(v));
            else
                once__text_int(&t, json_integer_value(v));
            sep = "&";
        }
        *verb = "GET";
    } else {
        once_free(once__text_done(&t, NULL));
        return ONCE_EINVAL;
    }
    *url = once__text_done(&t, NULL);
    if (*url == NULL || (strcmp(*verb, "POST") == 0 && *body == NULL)) {
        once_free(*url);
        once_free(*body);
        return ONCE_ENOMEM;
    }
    return ONCE_OK;
}

/* A 0.3 upstream's form of a call (core/v03.h), or NULL. ListTasks has
 * none: a 0.3 upstream is never listed (upstream.c). */
static const once__v03_call *call03(const gw *g, const char *name)
{
    return g->v03 ? once__v03_call_of(name) : NULL;
}

json_t *once__gw_v03_in(const gw *g, const char *method, const json_t *v)
{
    const once__v03_call *m = call03(g, method);
    return m == NULL ? json_incref((json_t *)v) : m->result_in(v);
}

static int rpc_request(const gw *g, const gw_req *q, char **url, char **body)
{
    const once__v03_call *m = call03(g, q->method);
    json_t *params = m != NULL && m->params_out ? m->params_out(q->params)
                                                : json_incref((json_t *)q->params);
    json_t *env = params == NULL ? NULL
                                 : json_pack("{s:s,s:i,s:s,s:o}", "jsonrpc", "2.0", "id", 1,
                                             "method", m != NULL ? m->v03 : q->method, "params",
                                             params);
    *body = env ? json_dumps(env, JSON_COMPACT) : NULL;
    json_decref(env);
    *url = once_strdup(g->endpoint);
    if (*body == NULL || *url == NULL) {
        once_free(*body);
        once_free(*url);
        return ONCE_ENOMEM;
    }
    return ONCE_OK;
}

int once__gw_headers(const gw *g, const char *principal, const char *extra, const char ***out,
                     size_t *n, char **line)
{
    *out = NULL;
    *n = 0;
    *line = NULL;
    const char **v = once_calloc(g->nheaders + 2, sizeof *v);
    if (v == NULL)
        return ONCE_ENOMEM;
    for (size_t i = 0; i < g->nheaders; i++)
        v[i] = g->headers[i];
    *n = g->nheaders;
    if (extra != NULL)
        v[(*n)++] = extra;
    if (g->principal_header != NULL && principal != NULL && strpbrk(principal, "\r\n") == NULL) {
        size_t len = strlen(g->principal_header) + strlen(principal) + 3;
        if ((*line = once_malloc(len)) == NULL) {
            once_free(v);
            return ONCE_ENOMEM;
        }
        snprintf(*line, len, "%s: %s", g->principal_header, principal);
        v[(*n)++] = *line;
    }
    *out = v;
    return ONCE_OK;
}

/* The error's text: JSON-RPC {code, message}; HTTP+JSON {error: {code,
 * status, message}} (AIP-193) or a bare {code, message}. */
static const char *error_text(const json_t *doc, int *code)
{
    const json_t *e = json_object_get(doc, "error");
    if (!json_is_object(e))
        e = doc;
    if (json_is_integer(json_object_get(e, "code")))
        *code = (int)json_integer_value(json_object_get(e, "code"));
    const char *m = json_string_value(json_object_get(e, "message"));
    return m ? m : "no message";
}

/* Classify one answer: ONCE__OK (r->result set), RETRY, or REFUSED (the
 * upstream's verdict, r->error set). */
static once__verdict judge(const gw *g, const gw_req *q, const once__http_resp *h, gw_res *r)
{
    json_t *doc = NULL;
    if (h->body != NULL && once__json_loadb(h->body, h->len, 0, &doc, NULL) == ONCE_ENOMEM)
        return ONCE__INTERRUPTED; /* read as "out of memory" by the caller */
    once__verdict v;
    if (h->status == 429 || h->status >= 500) {
        v = ONCE__RETRY;
        say(r, "HTTP %ld", h->status);
    } else if (g->binding == GW_JSONRPC) {
        v = once__classify(h->status, doc);
        if (v == ONCE__OK && !json_is_object(json_object_get(doc, "result")))
            v = ONCE__ERROR;
        if (v == ONCE__OK) {
            r->result = once__gw_v03_in(g, q->method, json_object_get(doc, "result"));
            if (r->result == NULL)
                v = ONCE__INTERRUPTED; /* read as "out of memory" by the caller */
        } else if (json_is_object(json_object_get(doc, "error"))) {
            const char *m = error_text(doc, &r->code);
            say(r, "%s (code %d)", m, r->code);
        } else {
            say(r, "HTTP %ld without a JSON-RPC answer", h->status);
        }
    } else if (h->status >= 200 && h->status < 300 && json_is_object(doc)) {
        v = ONCE__OK;
        r->result = json_incref(doc);
    } else {
        v = ONCE__REFUSED;
        r->code = h->status == 404 ? -32001 : (int)h->status;
        const char *m = doc ? error_text(doc, &r->code) : "no JSON body";
        if (h->status == 404)
            r->code = -32001;
        say(r, "HTTP %ld: %s", h->status, m);
    }
    if (v == ONCE__ERROR)
        v = ONCE__REFUSED;
    json_decref(doc);
    return v;
}

/* Sleep ms; 1 when the turn was canceled meanwhile (and the call stops). */
static int pause_ms(once_work *w, const gw_req *q, int64_t ms)
{
    if (!q->despite_cancel)
        return once_work_sleep(w, ms);
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    return 0;
}

/* May a retry start? Takes a token of the executor's budget. */
static int budget_take(gw *g)
{
    pthread_mutex_lock(&g->mu);
    int ok = once__bucket_take(&g->budget, &g->retry, once_monotonic_ms());
    pthread_mutex_unlock(&g->mu);
    return ok;
}

/* The retry loop over one prepared request. */
static int attempts(gw *g, once_work *w, const gw_req *q, once__http_req *hq, gw_res *r)
{
    const once_retry_policy *p = &g->retry;
    int64_t start = once_monotonic_ms(), deadline = start + p->deadline_ms;
    pthread_mutex_lock(&g->mu);
    once__bucket_deposit(&g->budget, p, start);
    pthread_mutex_unlock(&g->mu);
    for (unsigned n = 1;; n++) {
        if (!q->despite_cancel && once_work_canceled(w)) {
            say(r, "canceled");
            return ONCE_ECANCELED;
        }
        int64_t left = deadline - once_monotonic_ms();
        hq->timeout_ms = p->attempt_timeout_ms < left ? p->attempt_timeout_ms : left;
        gw_sink k;
        if (q->on_event != NULL)
            once__gw_sink_arm(&k, g, q, r, hq);
        once__http_resp h;
        int rc = once__http_do(hq, &h);
        int streamed = q->on_event != NULL ? once__gw_sink_done(&k, rc, &h) : 0;
        if (streamed != 0 || rc == ONCE_ENOMEM) {
            once__http_resp_clear(&h);
            return streamed < 0 ? streamed : streamed == 1 ? ONCE_OK : rc;
        }
        once__verdict v = ONCE__RETRY;
        if (rc != ONCE_OK && h.interrupted && !q->despite_cancel && once_work_canceled(w)) {
            once__http_resp_clear(&h);
            say(r, "canceled");
            return ONCE_ECANCELED;
        }
        if (rc != ONCE_OK)
            say(r, "%s%s", h.timed_out ? "timeout: " : "", h.error);
        else
            v = judge(g, q, &h, r);
        int64_t after = -1;
        if (h.retry_after[0] != '\0')
            once__retry_after_ms(h.retry_after, 0, p->backoff_cap_ms * 6, &after);
        int unsent = rc != ONCE_OK && h.unsent;
        once__http_resp_clear(&h);
        if (v == ONCE__RETRY && q->once_only && !unsent)
            return ONCE_EBUSY;
        if (v == ONCE__INTERRUPTED)
            return ONCE_ENOMEM;
        if (v == ONCE__OK)
            return ONCE_OK;
        if (v != ONCE__RETRY)
            return ONCE_EIO;
        int64_t delay = 0;
        once__backoff_jitter_ms(p->backoff_base_ms, n - 1, p->backoff_cap_ms, once_rng_system(),
                                &delay);
        if (after > delay)
            delay = after;
        /* A spent budget slows the retries to the slowest pace instead of
         * ending them: many calls failing at once (a lossy or overloaded
         * upstream) then retry at most once per cap each, and the deadline
         * still ends them. Giving up at once failed tasks the upstream was
         * finishing. */
        int spent = n < p->max_attempts && !budget_take(g);
        if (spent && delay < p->backoff_cap_ms)
            delay = p->backoff_cap_ms;
        const char *why = n >= p->max_attempts ? "every attempt failed"
                          : once_monotonic_ms() + delay < deadline ? NULL
                          : spent ? "the deadline passed (the retry budget was spent: retries "
                                    "at the slowest pace)"
                                  : "the deadline passed";
        if (why != NULL) {
            char last[sizeof r->error];
            once__strlcpy(last, r->error, sizeof last);
            say(r, "%s (%u attempt%s); last error: %s", why, n, n == 1 ? "" : "s", last);
            return ONCE_ETIMEDOUT;
        }
        once__metrics_gateway(ONCE__GW_RETRIES);
        if (pause_ms(w, q, delay)) {
            say(r, "canceled");
            return ONCE_ECANCELED;
        }
    }
}

int once__gw_call(gw *g, once_work *w, const gw_req *q, gw_res *r)
{
    memset(r, 0, sizeof *r);
    char *url = NULL, *body = NULL, *line = NULL;
    const char *verb = "POST";
    const char **hv = NULL;
    size_t nh = 0;
    int rc = g->binding == GW_REST ? rest_request(g, q, &url, &body, &verb)
                                   : rpc_request(g, q, &url, &body);
    if (rc == ONCE_OK)
        rc = once__gw_headers(g, q->principal, NULL, &hv, &nh, &line);
    if (rc == ONCE_OK) {
        once__http_req hq = {.method = verb,
                             .url = url,
                             .body = body,
                             .len = body ? strlen(body) : 0,
                             .extension = q->extension,
                             .v03 = g->v03,
                             .headers = hv,
                             .nheaders = nh,
                             .connect_timeout_ms = g->retry.connect_timeout_ms};
        rc = attempts(g, w, q, &hq, r);
    }
    if ((rc != ONCE_OK && rc != ONCE_ENOMEM) || (rc == ONCE_OK && r->cut)) {
        char what[sizeof r->error];
        once__strlcpy(what, r->error, sizeof what);
        say(r, "upstream %s: %s: %s", g->url, q->method, what);
    }
    once_free(url);
    once_free(body);
    once_free(line);
    once_free(hv);
    return rc;
}
