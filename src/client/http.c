/*
 * http.c -- one HTTP request of the client through libcurl.
 *
 * Each request gets a fresh easy handle, hence a fresh connection: a retry
 * never rides on a connection that just failed, and a fault-injecting proxy
 * sees one connection per request. The response body is capped at
 * ONCE__HTTP_MAX_BODY; an interrupt flag (or the caller's stop callback) aborts a
 * transfer in progress.
 * Invariant: r->status is nonzero only when a complete HTTP answer arrived
 * (or a stream the caller stopped on purpose).
 *
 * HTTPS is verified as curl verifies it (the peer's chain against the
 * system's CAs or q->tls->cacert, and its name against the URL's host);
 * a certificate that fails is flagged `untrusted`, which no retry fixes.
 *
 * Streams (SSE) use the same path with an on_data callback: bytes are
 * handed over as they arrive, nothing is accumulated here, and an idle
 * timer (checked from the progress callback) replaces the overall timeout.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "core/decimal.h"
#include "core/grow.h"
#include "core/str.h"
#include "client/client_int.h"

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* What libcurl's callbacks write into during one transfer (one thread). */
typedef struct sink {
    once__http_resp *r;
    const once__http_req *q;
    size_t cap;
    int overflow;
    int nomem;
    volatile sig_atomic_t *interrupted;
    struct timespec last_byte;   /* streaming: when the last body byte came */
} sink;

static int64_t mono_ms(const struct timespec *ts)
{
    return (int64_t)ts->tv_sec * 1000 + ts->tv_nsec / 1000000;
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    sink *s = ud;
    size_t len = size * n;
    if (s->q->on_data != NULL) {
        clock_gettime(CLOCK_MONOTONIC, &s->last_byte);
        if (s->q->on_data(s->q->data_ctx, s->r, p, len) != 0) {
            s->r->stopped = 1;
            return 0;
        }
        return len;
    }
    if (s->r->len + len > ONCE__HTTP_MAX_BODY) {
        s->overflow = 1;
        return 0;
    }
    if (once__text_append(&s->r->body, &s->r->len, &s->cap, 4096, p, len) != ONCE_OK) {
        s->nomem = 1;
        return 0;
    }
    return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    sink *s = ud;
    size_t len = size * n;
    const char *colon = memchr(p, ':', len);
    if (colon == NULL || (len > 5 && strncmp(p, "HTTP/", 5) == 0)) {
        /* A status line: a new response starts (after a 1xx, a redirect). */
        const char *sp = memchr(p, ' ', len);
        if (sp != NULL && sp + 4 <= p + len) {
            s->r->seen_status = strtol(sp + 1, NULL, 10);
            s->r->content_type[0] = '\0';
            s->r->etag[0] = '\0';
        }
        return len;
    }
    size_t nlen = (size_t)(colon - p);
    const char *v = colon + 1;
    size_t vlen = len - nlen - 1;
    while (vlen > 0 && (*v == ' ' || *v == '\t')) {
        v++;
        vlen--;
    }
    while (vlen > 0 && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
        vlen--;
    if (nlen == 11 && strncasecmp(p, "Retry-After", 11) == 0) {
        if (vlen >= sizeof s->r->retry_after)
            vlen = sizeof s->r->retry_after - 1;
        memcpy(s->r->retry_after, v, vlen);
        s->r->retry_after[vlen] = '\0';
    } else if (nlen == 19 && strncasecmp(p, "Idempotent-Replayed", 19) == 0) {
        s->r->replayed = vlen == 4 && strncasecmp(v, "true", 4) == 0;
    } else if (nlen == 4 && strncasecmp(p, "ETag", 4) == 0) {
        /* A validator cut short would never match: keep none. */
        if (vlen < sizeof s->r->etag) {
            memcpy(s->r->etag, v, vlen);
            s->r->etag[vlen] = '\0';
        }
    } else if (nlen == 12 && strncasecmp(p, "Content-Type", 12) == 0) {
        if (vlen >= sizeof s->r->content_type)
            vlen = sizeof s->r->content_type - 1;
        memcpy(s->r->content_type, v, vlen);
        s->r->content_type[vlen] = '\0';
    }
    return len;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    sink *s = ud;
    if (s->interrupted != NULL && *s->interrupted)
        return 1;
    if (s->q->stop != NULL && s->q->stop(s->q->stop_ctx))
        return 1;
    if (s->q->idle_ms > 0) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (mono_ms(&now) - mono_ms(&s->last_byte) > s->q->idle_ms) {
            s->r->idle = 1;
            return 1;
        }
    }
    return 0;
}

/* 1 to 5 digits, 1..65535. */
static int port_ok(const char *p, size_t n)
{
    int64_t v;
    return n <= 5 && once__decimal(p, n, &v) && v >= 1 && v <= 65535;
}

int once__agent_url_check(const char *url, char *why, size_t whylen)
{
    const char *p = url ? strstr(url, "://") : NULL;
    if (url == NULL || url[0] == '\0') {
        snprintf(why, whylen, "the agent URL is empty; it looks like http://127.0.0.1:8080/");
        return ONCE_EINVAL;
    }
    for (const char *q = url; *q; q++) {
        if ((unsigned char)*q <= ' ' || *q == 0x7f) {
            snprintf(why, whylen, "%.200s: a URL has no spaces or control characters", url);
            return ONCE_EINVAL;
        }
    }
    if (p == NULL) {
        snprintf(why, whylen, "%.200s is not a URL: it needs http:// or https:// in front "
                              "(e.g. http://%.200s%s)", url, url, strchr(url, '/') ? "" : "/");
        return ONCE_EINVAL;
    }
    size_t slen = (size_t)(p - url);
    if (!(slen == 4 && strncasecmp(url, "http", 4) == 0) &&
        !(slen == 5 && strncasecmp(url, "https", 5) == 0)) {
        snprintf(why, whylen, "%.200s: a URL here is http:// or https://, not %.*s://", url,
                 (int)(slen < 20 ? slen : 20), url);
        return ONCE_EINVAL;
    }
    const char *host = p + 3;
    size_t alen = strcspn(host, "/?#");
    const char *at = memchr(host, '@', alen);
    if (at != NULL) {
        alen -= (size_t)(at + 1 - host);
        host = at + 1;
    }
    const char *end = host + alen, *colon = NULL;
    if (alen > 0 && host[0] == '[') {
        const char *rb = memchr(host, ']', alen);
        if (rb == NULL || rb == host + 1 || (rb + 1 != end && rb[1] != ':')) {
            snprintf(why, whylen, "%.200s: a bracketed IPv6 host looks like http://[::1]:8080/", url);
            return ONCE_EINVAL;
        }
        colon = rb + 1 != end ? rb + 1 : NULL;
    } else {
        colon = memchr(host, ':', alen);
        if (colon == host || alen == 0) {
            snprintf(why, whylen, "%.200s has no host; it looks like %.*s127.0.0.1:8080/", url,
                     (int)(slen + 3), url);
            return ONCE_EINVAL;
        }
    }
    if (colon != NULL && !port_ok(colon + 1, (size_t)(end - colon - 1))) {
        snprintf(why, whylen, "%.200s: the port must be a number from 1 to 65535", url);
        return ONCE_EINVAL;
    }
    return ONCE_OK;
}

once__verdict once__http_failure_verdict(const once__http_resp *r)
{
    return r->interrupted                  ? ONCE__INTERRUPTED
           : r->untrusted || r->unusable ? ONCE__ERROR
                                         : ONCE__RETRY;
}

/* The certificate settings of one transfer. */
static void set_tls(CURL *h, const once__tls_client *tls)
{
    if (tls == NULL)
        return;
    if (tls->cacert != NULL)
        curl_easy_setopt(h, CURLOPT_CAINFO, tls->cacert);
    if (tls->insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
}

/* The error text of a failed transfer; a certificate failure says what to
 * do about it, in the CLI's flags (the library's fields carry their names). */
static void failure_text(once__http_resp *r, CURLcode cc, const char *errbuf)
{
    const char *what = errbuf[0] ? errbuf : curl_easy_strerror(cc);
    r->untrusted = cc == CURLE_PEER_FAILED_VERIFICATION || cc == CURLE_SSL_CACERT_BADFILE;
    if (cc == CURLE_PEER_FAILED_VERIFICATION)
        snprintf(r->error, sizeof r->error,
                 "the agent's TLS certificate is not trusted: %s (pass --cacert FILE with the "
                 "CA that signed it, or --insecure to skip the check)",
                 what);
    else if (cc == CURLE_SSL_CACERT_BADFILE)
        snprintf(r->error, sizeof r->error, "cannot use the --cacert file: %s", what);
    else
        once__strlcpy(r->error, what, sizeof r->error);
}

int once__card_url(const char *agent, char *out, size_t outlen)
{
    const char *p = strstr(agent, "://");
    if (p == NULL)
        return ONCE_EINVAL;
    const char *slash = strchr(p + 3, '/');
    size_t olen = slash ? (size_t)(slash - agent) : strlen(agent);
    if ((size_t)snprintf(out, outlen, "%.*s/.well-known/agent-card.json", (int)olen, agent) >= outlen)
        return ONCE_ERANGE;
    return ONCE_OK;
}

void once__http_resp_clear(once__http_resp *r)
{
    if (r == NULL)
        return;
    once_free(r->body);
    memset(r, 0, sizeof *r);
}

int once__http_do(const once__http_req *q, once__http_resp *r)
{
    memset(r, 0, sizeof *r);
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK) {
        snprintf(r->error, sizeof r->error, "libcurl: %s", curl_easy_strerror(curl_init_rc));
        return ONCE_EIO;
    }
    CURL *h = curl_easy_init();
    if (h == NULL)
        return ONCE_ENOMEM;
    sink s = {.r = r, .q = q, .interrupted = q->interrupted};
    clock_gettime(CLOCK_MONOTONIC, &s.last_byte);
    struct curl_slist *hd = NULL, *t;
    char auth[1024], accept[128], lei[64];
    int rc = ONCE_OK;
    snprintf(accept, sizeof accept, "Accept: %s", q->accept ? q->accept : "application/json");
    if (q->last_event_id != NULL)
        snprintf(lei, sizeof lei, "Last-Event-ID: %s", q->last_event_id);
    /* An A2A 0.3 agent reads the extension under 0.3's name; both go. */
    const char *lines[] = {"Content-Type: application/json", accept,
                           q->v03 ? "A2A-Version: 0.3" : "A2A-Version: 1.0", "Expect:",
                           q->extension ? "A2A-Extensions: " ONCE_IDEMPOTENCY_EXTENSION : NULL,
                           q->extension && q->v03 ? "X-A2A-Extensions: " ONCE_IDEMPOTENCY_EXTENSION
                                                  : NULL,
                           q->last_event_id ? lei : NULL};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0] && rc == ONCE_OK; i++) {
        if (lines[i] == NULL)
            continue;
        if ((t = curl_slist_append(hd, lines[i])) == NULL)
            rc = ONCE_ENOMEM;
        else
            hd = t;
    }
    for (size_t i = 0; i < q->nheaders && rc == ONCE_OK; i++) {
        if ((t = curl_slist_append(hd, q->headers[i])) == NULL)
            rc = ONCE_ENOMEM;
        else
            hd = t;
    }
    if (rc == ONCE_OK && q->token != NULL) {
        if ((size_t)snprintf(auth, sizeof auth, "Authorization: Bearer %s", q->token) >= sizeof auth)
            rc = ONCE_EINVAL;
        else if ((t = curl_slist_append(hd, auth)) == NULL)
            rc = ONCE_ENOMEM;
        else
            hd = t;
    }
    if (rc != ONCE_OK) {
        curl_slist_free_all(hd);
        curl_easy_cleanup(h);
        return rc;
    }
    /* A stream may have no overall limit (0); a call always has one. */
    int64_t timeout = q->timeout_ms > 0 ? q->timeout_ms : q->on_data != NULL ? 0 : 1;
    int64_t ctimeout = q->connect_timeout_ms > 0 && (timeout == 0 || q->connect_timeout_ms < timeout)
                           ? q->connect_timeout_ms
                           : timeout;
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(h, CURLOPT_URL, q->url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)ctimeout);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &s);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &s);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    set_tls(h, q->tls);
    if (strcmp(q->method, "POST") == 0) {
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, q->body ? q->body : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(q->body ? q->len : 0));
    } else if (strcmp(q->method, "GET") != 0) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, q->method);
    }
    CURLcode cc = curl_easy_perform(h);
    if (cc == CURLE_OK || (r->stopped && cc == CURLE_WRITE_ERROR)) {
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
        cc = CURLE_OK;
    } else {
        r->status = 0;
        r->timed_out = cc == CURLE_OPERATION_TIMEDOUT || r->idle;
        r->interrupted = cc == CURLE_ABORTED_BY_CALLBACK && !r->idle;
        r->unsent = cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
                    cc == CURLE_COULDNT_RESOLVE_PROXY;
        if (s.nomem)
            rc = ONCE_ENOMEM;
        else
            rc = ONCE_EIO;
        if (s.overflow)
            snprintf(r->error, sizeof r->error, "response larger than %u bytes", ONCE__HTTP_MAX_BODY);
        else if (r->idle)
            snprintf(r->error, sizeof r->error, "stream idle: no byte for %lld ms",
                     (long long)q->idle_ms);
        else
            failure_text(r, cc, errbuf);
        /* A body cut short is no answer: keep nothing of it. */
        once_free(r->body);
        r->body = NULL;
        r->len = 0;
        r->retry_after[0] = '\0';
        r->replayed = 0;
    }
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
    return rc;
}
