/*
 * push_http.c -- one webhook POST with libcurl (docs/design.md section 6): the
 * Standard Webhooks headers and signatures, the A2A token and
 * Authorization, the timeout, Retry-After, and the SSRF guard on the
 * address actually connected to.
 *
 * The guard sits in CURLOPT_OPENSOCKETFUNCTION: libcurl calls it with each
 * resolved address just before it creates the socket, so a name that
 * resolves to a private address (or is re-pointed there after the config
 * was checked: DNS rebinding) is refused at the only moment that counts.
 * Redirects are not followed and proxies from the environment are not
 * used, so nothing else decides where the bytes go.
 *
 * A handle is used by one delivery thread at a time and keeps its
 * connections alive between POSTs (a kept connection passed the guard when
 * it was opened).
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/str.h"
#include "core/backoff.h"
#include "engine/push_int.h"
#include "once/webhook_sig.h"

#define USER_AGENT "once/" ONCE_VERSION_STRING " (push)"

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

void *once__push_http_new(void)
{
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK)
        return NULL;
    return curl_easy_init();
}

void once__push_http_free(void *h)
{
    if (h != NULL)
        curl_easy_cleanup(h);
}

/* Per-attempt context the callbacks write into. */
typedef struct attempt {
    struct once__push *p;
    once__push_result *r;
    int opened;  /* sockets the guard allowed */
    int refused; /* addresses it refused */
} attempt;

static curl_socket_t open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
    attempt *at = arg;
    char why[sizeof at->r->error];
    (void)purpose;
    if (once__push_sockaddr_check(at->p->allow, at->p->nallow, &a->addr, why, sizeof why) !=
        ONCE_OK) {
        at->refused++;
        once__strlcpy(at->r->error, why, sizeof at->r->error);
        return CURL_SOCKET_BAD;
    }
    at->opened++;
    return socket(a->family, a->socktype, a->protocol);
}

static int64_t wall_s(void)
{
    return once_now(once_clock_system()) / 1000;
}

static size_t on_header(char *buf, size_t size, size_t n, void *arg)
{
    attempt *at = arg;
    size_t len = size * n;
    static const char name[] = "retry-after:";
    if (len > sizeof name - 1 && len < 200 && strncasecmp(buf, name, sizeof name - 1) == 0) {
        char v[200];
        memcpy(v, buf + sizeof name - 1, len - (sizeof name - 1));
        v[len - (sizeof name - 1)] = '\0';
        int64_t ms;
        /* The cap is the delivery's max backoff (push_deliver.c). */
        if (once__retry_after_ms(v, once_now(once_clock_system()), at->p->opt.backoff_cap_ms,
                                 &ms) == ONCE_OK)
            at->r->retry_after_ms = ms;
    }
    return len;
}

static size_t on_body(char *buf, size_t size, size_t n, void *arg)
{
    (void)buf;
    (void)arg;
    return size * n; /* the receiver's answer body is not used */
}

/* Append "name: value" to the list; NULL on ENOMEM (the list is freed). */
static struct curl_slist *add_header(struct curl_slist *l, const char *name, const char *value)
{
    char line[1200];
    int n = snprintf(line, sizeof line, "%s: %s", name, value);
    if (n < 0 || (size_t)n >= sizeof line) {
        curl_slist_free_all(l);
        return NULL;
    }
    struct curl_slist *nl = curl_slist_append(l, line);
    if (nl == NULL)
        curl_slist_free_all(l);
    return nl;
}

static struct curl_slist *build_headers(struct once__push *p, const once__push_post *q,
                                        const char *ts)
{
    char since[24];
    snprintf(since, sizeof since, "%lld", (long long)q->since);
    struct curl_slist *h = add_header(NULL, "Content-Type", "application/a2a+json");
    if (h != NULL)
        h = add_header(h, "webhook-id", q->webhook_id);
    if (h != NULL)
        h = add_header(h, "webhook-timestamp", ts);
    if (h != NULL)
        h = add_header(h, "once-push-since", since);
    if (h != NULL && p->nsecrets > 0) {
        /* Newest secret first; receivers accept any that matches. */
        char sigs[ONCE__PUSH_SECRETS_MAX * (ONCE_WEBHOOK_SIG_LEN + 1) + 1];
        size_t off = 0;
        for (size_t i = 0; i < p->nsecrets; i++) {
            char one[ONCE_WEBHOOK_SIG_LEN + 1];
            if (once_webhook_sign(p->secrets[i], q->webhook_id, ts, q->body, q->len, one) !=
                ONCE_OK) {
                curl_slist_free_all(h);
                return NULL;
            }
            off += (size_t)snprintf(sigs + off, sizeof sigs - off, "%s%s", i ? " " : "", one);
        }
        h = add_header(h, "webhook-signature", sigs);
    }
    if (h != NULL && q->auth_scheme != NULL) {
        char v[1100];
        if (q->auth_credentials != NULL && q->auth_credentials[0] != '\0')
            snprintf(v, sizeof v, "%s %s", q->auth_scheme, q->auth_credentials);
        else
            once__strlcpy(v, q->auth_scheme, sizeof v);
        h = add_header(h, "Authorization", v);
    }
    if (h != NULL && q->token != NULL)
        h = add_header(h, "X-A2A-Notification-Token", q->token);
    if (h != NULL && q->traceparent != NULL && once__traceparent_valid(q->traceparent))
        h = add_header(h, "traceparent", q->traceparent);
    if (h != NULL)
        h = add_header(h, "Expect", ""); /* no 100-continue round trip */
    return h;
}

int once__push_http_post(struct once__push *p, void *handle, const once__push_post *q,
                         once__push_result *r)
{
    CURL *c = handle;
    memset(r, 0, sizeof *r);
    r->retry_after_ms = -1;
    if (c == NULL)
        return ONCE_ENOMEM;
    /* Wall-clock seconds: receivers compare with their own clocks, whatever
     * clock offset the engine runs with (tests, demos). */
    char ts[24];
    snprintf(ts, sizeof ts, "%lld", (long long)wall_s());
    struct curl_slist *hdr = build_headers(p, q, ts);
    struct curl_slist *resolve = NULL;
    for (size_t i = 0; i < p->nresolve; i++) {
        struct curl_slist *n = curl_slist_append(resolve, p->resolve[i]);
        if (n == NULL)
            break;
        resolve = n;
    }
    if (hdr == NULL) {
        curl_slist_free_all(resolve);
        return ONCE_ENOMEM;
    }
    attempt at = {.p = p, .r = r};
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, q->url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_PROXY, "");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)p->opt.timeout_ms);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, q->body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->len);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_USERAGENT, USER_AGENT);
    curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_socket);
    curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, &at);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &at);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    if (resolve != NULL)
        curl_easy_setopt(c, CURLOPT_RESOLVE, resolve);

    CURLcode cc = curl_easy_perform(c);
    if (cc == CURLE_OK) {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
        if (r->status < 200 || r->status > 299)
            snprintf(r->error, sizeof r->error, "HTTP %ld from the webhook", r->status);
    } else if (at.refused > 0 && at.opened == 0) {
        r->refused = 1; /* r->error already says which address and why */
    } else {
        snprintf(r->error, sizeof r->error, "%s%s%s", curl_easy_strerror(cc), errbuf[0] ? ": " : "",
                 errbuf);
    }
    /* Drop the pointers into this call's buffers before the handle idles. */
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(c, CURLOPT_RESOLVE, NULL);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
    curl_slist_free_all(hdr);
    curl_slist_free_all(resolve);
    return ONCE_OK;
}
