/*
 * upstream.c -- the gateway executor (onced --upstream URL): built once at
 * start from the upstream agent's card, then shared by every turn.
 *
 * At start: the card is read from <origin of URL>/.well-known/agent-card.json
 * (upstream_card.c, which also re-reads it later; an upstream that does not
 * answer is an error naming it: onced does not start in front of nothing);
 * the binding is the card's JSONRPC interface, else its HTTP+JSON one (of
 * A2A 1.x; an agent that speaks only A2A 0.3 is called over its 0.3
 * JSONRPC interface, in 0.3's names and shapes, and cannot be listed); the
 * interface URL keeps its path but takes the configured URL's scheme, host
 * and port, so that whatever sits between (a proxy, another name for the
 * host) stays in the path of every call; and what the upstream offers for
 * re-attaching a re-run turn is found out: the idempotency extension in its
 * card (rung 1), else a ListTasks that answers (rung 2 once a task shows it
 * kept our contextId), else none.
 *
 * Invariants: the gw context is read-only after once_executor_upstream
 * returns, except its retry budget (under its mutex) and the card
 * refresh's state (upstream_card.c, under its own), so any number of turn
 * workers share it. A refresh never changes what was chosen here.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/jcs.h"
#include "core/metrics.h"
#include "core/str.h"
#include "core/strv.h"
#include "exec/upstream.h"

/* Attempts of the ListTasks probe at start (the card's: upstream_card.c):
 * a lost answer must not decide what the upstream offers (an answer the
 * network lost is not the upstream's "no"). */
#define START_ATTEMPTS 6
#define START_BACKOFF_MS 100
#define POLL_MAX_DEFAULT_MS 2000
#define GW_ATTEMPTS_MAX 1000
#define GW_BACKOFF_CAP_MS 5000

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err != NULL && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return ONCE_EIO;
}

static void gw_free(gw *g)
{
    if (g == NULL)
        return;
    once__gw_card_clear(g);   /* first: the refresh thread reads the rest */
    once__strv_free(g->headers, g->nheaders);
    once_free(g->url);
    once_free(g->endpoint);
    once_free(g->principal_header);
    once_free(g->card);
    pthread_mutex_destroy(&g->mu);
    once_free(g);
}

static void gw_destroy(once_executor *ex)
{
    gw_free(ex->ctx);
    ex->ctx = NULL;
}

/* Where the path of a URL starts ("" when it has none). */
static const char *path_of(const char *url)
{
    const char *p = strstr(url, "://");
    p = p ? strchr(p + 3, '/') : NULL;
    return p ? p : "";
}

/* The interface URL's path under the configured URL's origin; trailing
 * slashes dropped for HTTP+JSON, whose routes start with one. */
static int set_endpoint(gw *g, const char *iface)
{
    size_t olen = strlen(g->url) - strlen(path_of(g->url));
    const char *path = path_of(iface);
    size_t plen = strlen(path);
    if (g->binding == GW_REST)
        while (plen > 0 && path[plen - 1] == '/')
            plen--;
    size_t n = olen + plen + 2;
    if ((g->endpoint = once_malloc(n)) == NULL)
        return ONCE_ENOMEM;
    snprintf(g->endpoint, n, "%.*s%.*s%s", (int)olen, g->url, (int)plen, path,
             g->binding == GW_JSONRPC && plen == 0 ? "/" : "");
    return ONCE_OK;
}

/* The JSON-RPC URL of an agent that speaks A2A 0.3: its 0.x JSONRPC
 * interface, or a 0.3 card's url (preferredTransport JSONRPC, the
 * default); NULL: none. */
static const char *v03_endpoint(const json_t *card)
{
    size_t i;
    json_t *itf;
    json_array_foreach(json_object_get(card, "supportedInterfaces"), i, itf) {
        const char *b = json_string_value(json_object_get(itf, "protocolBinding"));
        const char *v = json_string_value(json_object_get(itf, "protocolVersion"));
        if (b != NULL && strcmp(b, "JSONRPC") == 0 && v != NULL && strncmp(v, "0.", 2) == 0)
            return json_string_value(json_object_get(itf, "url"));
    }
    const char *v = json_string_value(json_object_get(card, "protocolVersion"));
    const char *t = json_string_value(json_object_get(card, "preferredTransport"));
    if (v != NULL && strncmp(v, "0.", 2) == 0 && (t == NULL || strcmp(t, "JSONRPC") == 0))
        return json_string_value(json_object_get(card, "url"));
    return NULL;
}

/* The binding and the offers, from the card. */
static int read_card(gw *g, const json_t *card, char *err, size_t errlen)
{
    const char *rpc = NULL, *rest = NULL;
    size_t i;
    json_t *itf;
    json_array_foreach(json_object_get(card, "supportedInterfaces"), i, itf) {
        const char *b = json_string_value(json_object_get(itf, "protocolBinding"));
        const char *u = json_string_value(json_object_get(itf, "url"));
        const char *v = json_string_value(json_object_get(itf, "protocolVersion"));
        if (b == NULL || u == NULL || (v != NULL && strncmp(v, "1.", 2) != 0))
            continue;
        if (strcmp(b, "JSONRPC") == 0 && rpc == NULL)
            rpc = u;
        else if (strcmp(b, "HTTP+JSON") == 0 && rest == NULL)
            rest = u;
    }
    if (rpc == NULL && rest == NULL && (rpc = v03_endpoint(card)) != NULL)
        g->v03 = 1;
    if (rpc == NULL && rest == NULL)
        return fail(err, errlen,
                    "upstream %s: its card lists no JSONRPC or HTTP+JSON interface of "
                    "protocol version 1.x in supportedInterfaces (nor a JSONRPC one of 0.3)",
                    g->url);
    g->binding = rpc != NULL ? GW_JSONRPC : GW_REST;
    const json_t *caps = json_object_get(card, "capabilities");
    g->streaming = json_is_true(json_object_get(caps, "streaming"));
    json_t *e;
    json_array_foreach(json_object_get(caps, "extensions"), i, e) {
        const char *uri = json_string_value(json_object_get(e, "uri"));
        if (uri != NULL && strcmp(uri, ONCE_IDEMPOTENCY_EXTENSION) == 0)
            g->ext = 1;
    }
    return set_endpoint(g, rpc != NULL ? rpc : rest);
}

static int fetch_card(gw *g, char *err, size_t errlen)
{
    long status = 0;
    json_t *card = NULL;
    char etag[GW_ETAG_MAX];
    int rc = once__gw_card_get(g, NULL, &status, &card, etag, err, errlen);
    if (rc == ONCE_OK && card == NULL)
        rc = ONCE_EIO;   /* err says what came instead */
    if (rc == ONCE_OK)
        rc = read_card(g, card, err, errlen);
    if (rc == ONCE_OK) {
        g->card = json_dumps(card, JSON_COMPACT);
        if (g->card == NULL || (etag[0] != '\0' && (g->etag = once_strdup(etag)) == NULL))
            rc = ONCE_ENOMEM;
    }
    json_decref(card);
    return rc;
}

/* Does the upstream serve ListTasks? Asked START_ATTEMPTS times at most:
 * one lost answer must not put every task of this replica on rung 4. */
static void probe_list(gw *g)
{
    if (g->v03)
        return; /* A2A 0.3 has no ListTasks */
    once_retry_policy keep = g->retry;
    g->retry.max_attempts = START_ATTEMPTS;
    g->retry.backoff_base_ms = START_BACKOFF_MS;
    json_t *params = json_pack("{s:i}", "pageSize", 1);
    gw_req q = {.method = "ListTasks", .params = params, .despite_cancel = 1};
    gw_res r;
    g->lists = params != NULL && once__gw_call(g, NULL, &q, &r) == ONCE_OK &&
               json_is_array(json_object_get(r.result, "tasks"));
    once__gw_res_clear(&r);
    json_decref(params);
    g->retry = keep;
}

/* "Name: value", a token name and no line breaks. */
static int header_ok(const char *h)
{
    const char *colon = strchr(h, ':');
    if (colon == NULL || colon == h || strpbrk(h, "\r\n") != NULL)
        return 0;
    for (const char *p = h; p < colon; p++)
        if (*p <= ' ' || *p >= 0x7f)
            return 0;
    return 1;
}

static int copy_cfg(gw *g, const once_upstream_cfg *cfg, char *err, size_t errlen)
{
    char why[600];
    if (once__agent_url_check(cfg->url, why, sizeof why) != ONCE_OK) {
        fail(err, errlen, "%s", why);
        return ONCE_EINVAL;
    }
    if ((g->url = once_strdup(cfg->url)) == NULL)
        return ONCE_ENOMEM;
    if (cfg->principal_header != NULL) {
        const char *n = cfg->principal_header;
        for (const char *p = n; *p != '\0'; p++) {
            if (*p <= ' ' || *p >= 0x7f || *p == ':') {
                fail(err, errlen, "the principal header must be a header name: %s", n);
                return ONCE_EINVAL;
            }
        }
        if (n[0] == '\0' || (g->principal_header = once_strdup(n)) == NULL)
            return n[0] == '\0' ? ONCE_EINVAL : ONCE_ENOMEM;
    }
    if (cfg->nheaders > 0 && (g->headers = once_calloc(cfg->nheaders, sizeof *g->headers)) == NULL)
        return ONCE_ENOMEM;
    for (size_t i = 0; i < cfg->nheaders; i++) {
        if (!header_ok(cfg->headers[i])) {
            fail(err, errlen, "upstream header %zu is not \"Name: value\" on one line", i + 1);
            return ONCE_EINVAL;
        }
        if ((g->headers[i] = once_strdup(cfg->headers[i])) == NULL)
            return ONCE_ENOMEM;
        g->nheaders++;
    }
    g->retry = cfg->retry;
    if (g->retry.max_attempts == 0) {
        /* A gateway rides out an upstream restart: the deadline bounds the
         * attempts, not their count. */
        once_retry_policy_default(&g->retry);
        g->retry.max_attempts = GW_ATTEMPTS_MAX;
        g->retry.backoff_cap_ms = GW_BACKOFF_CAP_MS;
    }
    if (cfg->deadline_ms > 0)
        g->retry.deadline_ms = cfg->deadline_ms;
    g->poll_max_ms = cfg->poll_max_ms > 0 ? cfg->poll_max_ms : POLL_MAX_DEFAULT_MS;
    once__bucket_init(&g->budget, &g->retry, once_monotonic_ms());
    return ONCE_OK;
}

int once_executor_upstream(const once_upstream_cfg *cfg, once_executor **out, char *err,
                           size_t errlen)
{
    if (out == NULL || cfg == NULL)
        return ONCE_EINVAL;
    *out = NULL;
    gw *g = once_calloc(1, sizeof *g);
    once_executor *ex = once_calloc(1, sizeof *ex);
    if (g == NULL || ex == NULL) {
        once_free(g);
        once_free(ex);
        return ONCE_ENOMEM;
    }
    pthread_mutex_init(&g->mu, NULL);
    int rc = once__gw_card_init(g);
    if (rc != ONCE_OK) {
        pthread_mutex_destroy(&g->mu);
        once_free(g);
        once_free(ex);
        return rc;
    }
    rc = copy_cfg(g, cfg, err, errlen);
    if (rc == ONCE_OK)
        rc = fetch_card(g, err, errlen);
    if (rc != ONCE_OK) {
        gw_free(g);
        once_free(ex);
        return rc;
    }
    probe_list(g);
    once__metrics_gateway_on();
    ex->name = "upstream";
    ex->run = once__gw_run;
    ex->destroy = gw_destroy;
    ex->ctx = g;
    *out = ex;
    return ONCE_OK;
}

const char *once_executor_upstream_card(const once_executor *ex)
{
    if (ex == NULL || ex->run != once__gw_run || ex->ctx == NULL)
        return NULL;
    return ((const gw *)ex->ctx)->card;
}

int once__exec_is_upstream(const once_executor *ex)
{
    return ex != NULL && ex->run == once__gw_run;
}
