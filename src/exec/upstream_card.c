/*
 * upstream_card.c -- the upstream agent's card, read over HTTP: once at
 * start (upstream.c takes the binding and the rung from it), then, once
 * once_executor_upstream_refresh starts it (onced --upstream-card-refresh),
 * again on an interval by a thread the gateway owns, with If-None-Match:
 * the ETag it last got.
 *
 * A refresh ends one of three ways, each counted in
 * once_gateway_card_refreshes_total{result}:
 *   unchanged  304, or a 200 whose card is the one last taken;
 *   changed    a 200 with another card, which on_card took (onced rebuilds
 *              the card it serves from it);
 *   failed     no answer after a few attempts, or a 5xx: the gateway is then
 *              not ready (once_executor_upstream_ready says why) until a
 *              refresh gets an answer again; or an answer that is no card
 *              (another status, not a JSON object) or a card on_card refused:
 *              logged, the last card stays, and the upstream that answered
 *              counts as there.
 * What upstream.c chose from the card at start (binding, endpoint,
 * streaming, rung) never changes: turns read it without a lock, and a rung
 * that moved under a task's checkpoint would break the recovery ladder. A
 * card whose supportedInterfaces differ from the start's is logged as a
 * warning instead (restart onced to choose again).
 *
 * Invariants: etag and seen are touched only by the thread that reads the
 * card (the constructor, then the refresh thread); `why` and `stopping`
 * only under cmu. Every wait of the refresh thread (its interval, the
 * backoff between attempts) is on ccv, so a stop wakes it at once, and an
 * HTTP read in progress is cut by its stop hook (polled about once a
 * second).
 */
#include <stdio.h>
#include <string.h>

#include "core/backoff.h"
#include "core/condwait.h"
#include "core/jcs.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/str.h"
#include "exec/upstream.h"

#define CARD_MAX_ATTEMPT_MS 10000
/* Attempts of one read: a lost answer must neither stop onced at start nor
 * make a running gateway not ready, yet an upstream that is not there is
 * known within seconds (the jittered backoff sums to 3.1 s at most). */
#define CARD_ATTEMPTS 6
#define CARD_BACKOFF_MS 100
#define CARD_BACKOFF_CAP_MS 5000

int once__gw_card_init(gw *g)
{
    return once__lock_init(&g->cmu, &g->ccv);
}

static int is_stopping(gw *g)
{
    pthread_mutex_lock(&g->cmu);
    int s = g->stopping;
    pthread_mutex_unlock(&g->cmu);
    return s;
}

static int stop_hook(void *ctx)
{
    return is_stopping(ctx);
}

/* Wait ms, or less when the refresh is stopped meanwhile: 1 when it is. */
static int nap(gw *g, int64_t ms)
{
    int64_t until = once_monotonic_ms() + ms;
    pthread_mutex_lock(&g->cmu);
    int64_t left;
    while (!g->stopping && (left = until - once_monotonic_ms()) > 0)
        once__cond_wait_ms(&g->ccv, &g->cmu, left);
    int s = g->stopping;
    pthread_mutex_unlock(&g->cmu);
    return s;
}

int once__gw_card_get(gw *g, const char *etag, long *status, json_t **card, char *etag_out,
                      char *err, size_t errlen)
{
    *status = 0;
    *card = NULL;
    etag_out[0] = '\0';
    char url[2048], inm[160];
    if (once__card_url(g->url, url, sizeof url) != ONCE_OK) {
        snprintf(err, errlen, "upstream %s: not an http(s) URL", g->url);
        return ONCE_EIO;
    }
    if (etag != NULL)
        snprintf(inm, sizeof inm, "If-None-Match: %s", etag);
    const char **hv;
    size_t nh;
    char *line;
    int rc = once__gw_headers(g, NULL, etag != NULL ? inm : NULL, &hv, &nh, &line);
    if (rc != ONCE_OK)
        return rc;
    once__http_req q = {.method = "GET",
                        .url = url,
                        .headers = hv,
                        .nheaders = nh,
                        .timeout_ms = g->retry.attempt_timeout_ms < CARD_MAX_ATTEMPT_MS
                                          ? g->retry.attempt_timeout_ms
                                          : CARD_MAX_ATTEMPT_MS,
                        .connect_timeout_ms = g->retry.connect_timeout_ms,
                        .stop = stop_hook,
                        .stop_ctx = g};
    once__http_resp h;
    for (unsigned n = 1;; n++) {
        rc = once__http_do(&q, &h);
        /* An HTTP answer (even an error) is the upstream's; no answer, or a
         * 5xx, may be the network's or a restart's: try again. */
        if (rc == ONCE_ENOMEM || h.interrupted || n >= CARD_ATTEMPTS ||
            (h.status != 0 && h.status < 500))
            break;
        once__http_resp_clear(&h);
        int64_t delay = 0;
        once__backoff_jitter_ms(CARD_BACKOFF_MS, n - 1, CARD_BACKOFF_CAP_MS, once_rng_system(),
                                &delay);
        if (nap(g, delay)) {
            rc = ONCE_ECANCELED;
            break;
        }
    }
    once_free(hv);
    once_free(line);
    if (rc == ONCE_ENOMEM || rc == ONCE_ECANCELED || h.interrupted) {
        once__http_resp_clear(&h);
        return rc == ONCE_ENOMEM ? rc : ONCE_ECANCELED;
    }
    json_t *doc = NULL;
    if (h.status == 0) {
        snprintf(err, errlen, "upstream %s: cannot read its agent card %s: %s", g->url, url,
                 h.error);
        rc = ONCE_EIO;
    } else if (h.status >= 500) {
        snprintf(err, errlen, "upstream %s: its agent card %s: HTTP %ld", g->url, url, h.status);
        rc = ONCE_EIO;
    } else if (h.status == 200 && h.body != NULL &&
               once__json_loadb(h.body, h.len, 0, &doc, NULL) == ONCE_ENOMEM) {
        rc = ONCE_ENOMEM;
    } else {
        *status = h.status;
        once__strlcpy(etag_out, h.etag, sizeof h.etag);
        if (json_is_object(doc)) {
            *card = doc;
            doc = NULL;
        } else {
            snprintf(err, errlen, "upstream %s: its agent card %s: HTTP %ld%s", g->url, url,
                     h.status, h.status == 200 ? ", not a JSON object" : "");
        }
        rc = ONCE_OK;
    }
    json_decref(doc);
    once__http_resp_clear(&h);
    return rc;
}

/* ---------------------------------------------------------------------------
 * The refresh.
 */

static void log_card(const gw *g, int level, const char *event, const char *detail)
{
    once__logline l;
    if (!once__log_begin(&l, level, event))
        return;
    once__log_str(&l, "upstream", g->url);
    once__log_str(&l, "detail", detail);
    once__log_end(&l);
}

/* Not ready for why, or ready again (why NULL); the change is logged. */
static void set_ready(gw *g, const char *why)
{
    pthread_mutex_lock(&g->cmu);
    int was_ready = g->why[0] == '\0';
    if (why != NULL)
        once__strlcpy(g->why, why, sizeof g->why);
    else
        g->why[0] = '\0';
    pthread_mutex_unlock(&g->cmu);
    if (why != NULL && was_ready)
        log_card(g, ONCE_LOG_WARN, "gateway_upstream_unready", why);
    else if (why == NULL && !was_ready)
        log_card(g, ONCE_LOG_INFO, "gateway_upstream_ready", "its card answers again");
}

/* Did the card's interfaces change since start? (Both absent: no.) */
static int interfaces_moved(const gw *g, const json_t *card)
{
    json_t *start = json_loads(g->card, 0, NULL);
    const json_t *a = json_object_get(start, "supportedInterfaces");
    const json_t *b = json_object_get(card, "supportedInterfaces");
    int moved = (a != NULL || b != NULL) && !json_equal(a, b);
    json_decref(start);
    return moved;
}

/* A 200's card: taken (on_card) when it differs from the last one taken. */
static once__gw_stat take(gw *g, const json_t *card, const char *etag)
{
    char *text = json_dumps(card, JSON_COMPACT), err[600] = "";
    if (text == NULL) {
        log_card(g, ONCE_LOG_WARN, "gateway_card_refresh", "out of memory");
        return ONCE__GW_CARD_FAILED;
    }
    once__gw_stat res = ONCE__GW_CARD_UNCHANGED;
    if (strcmp(text, g->seen != NULL ? g->seen : g->card) != 0) {
        if (interfaces_moved(g, card))
            log_card(g, ONCE_LOG_WARN, "gateway_card_interfaces",
                     "the upstream's card lists other interfaces than at start; the gateway "
                     "keeps the binding and endpoint it chose then (restart onced to choose "
                     "again)");
        int rc = g->on_card != NULL ? g->on_card(g->on_card_arg, text, err, sizeof err) : ONCE_OK;
        if (rc != ONCE_OK) {
            log_card(g, ONCE_LOG_WARN, "gateway_card_refused", err[0] ? err : once_strerror(rc));
            once_free(text);
            /* The old validator stays: the next refresh reads it whole. */
            return ONCE__GW_CARD_FAILED;
        }
        log_card(g, ONCE_LOG_INFO, "gateway_card_changed", "the card served follows it");
        once_free(g->seen);
        g->seen = text;
        text = NULL;
        res = ONCE__GW_CARD_CHANGED;
    }
    once_free(text);
    char *e = etag[0] != '\0' ? once_strdup(etag) : NULL;
    if (etag[0] == '\0' || e != NULL) {
        once_free(g->etag);
        g->etag = e;
    }
    return res;
}

static void refresh(gw *g)
{
    long status = 0;
    json_t *card = NULL;
    char etag[GW_ETAG_MAX], err[600] = "";
    int rc = once__gw_card_get(g, g->etag, &status, &card, etag, err, sizeof err);
    if (rc == ONCE_ECANCELED)
        return;
    once__gw_stat res = ONCE__GW_CARD_FAILED;
    if (rc == ONCE_EIO) {
        set_ready(g, err);
    } else if (rc != ONCE_OK) {
        log_card(g, ONCE_LOG_WARN, "gateway_card_refresh", once_strerror(rc));
    } else {
        set_ready(g, NULL);
        if (status == 304)
            res = ONCE__GW_CARD_UNCHANGED;
        else if (card == NULL)
            log_card(g, ONCE_LOG_WARN, "gateway_card_refresh", err);
        else
            res = take(g, card, etag);
    }
    json_decref(card);
    once__metrics_gateway(res);
}

static void *refresher(void *arg)
{
    gw *g = arg;
    while (!nap(g, g->refresh_ms))
        refresh(g);
    return NULL;
}

static void refresh_stop(gw *g)
{
    if (!g->refreshing)
        return;
    once__cond_raise(&g->cmu, &g->ccv, &g->stopping);
    pthread_join(g->refresher, NULL);
    g->refreshing = 0;
}

void once__gw_card_clear(gw *g)
{
    refresh_stop(g);
    once_free(g->etag);
    once_free(g->seen);
    g->etag = g->seen = NULL;
    pthread_cond_destroy(&g->ccv);
    pthread_mutex_destroy(&g->cmu);
}

int once_executor_upstream_refresh(once_executor *ex, int64_t every_ms,
                                   once_upstream_card_fn on_card, void *arg)
{
    if (!once__exec_is_upstream(ex) || ex->ctx == NULL || every_ms <= 0)
        return ONCE_EINVAL;
    gw *g = ex->ctx;
    if (g->refreshing)
        return ONCE_EINVAL;
    g->refresh_ms = every_ms;
    g->on_card = on_card;
    g->on_card_arg = arg;
    pthread_mutex_lock(&g->cmu);
    g->stopping = 0;
    pthread_mutex_unlock(&g->cmu);
    if (pthread_create(&g->refresher, NULL, refresher, g) != 0)
        return ONCE_ENOMEM;
    g->refreshing = 1;
    return ONCE_OK;
}

void once_executor_upstream_refresh_stop(once_executor *ex)
{
    if (once__exec_is_upstream(ex) && ex->ctx != NULL)
        refresh_stop(ex->ctx);
}

int once_executor_upstream_ready(const once_executor *ex, char *why, size_t n)
{
    if (!once__exec_is_upstream(ex) || ex->ctx == NULL)
        return ONCE_OK;
    gw *g = ex->ctx;
    pthread_mutex_lock(&g->cmu);
    int ready = g->why[0] == '\0';
    if (!ready && why != NULL && n > 0)
        once__strlcpy(why, g->why, n);
    pthread_mutex_unlock(&g->cmu);
    return ready ? ONCE_OK : ONCE_EIO;
}
