/*
 * admit.c -- the one admission check every request of onced's listener
 * passes before a route answers it (admit.h).
 *
 * Two attacks come through a visitor's browser, and each rule names which:
 *
 *  - DNS rebinding: a page of evil.example re-resolves its own name to
 *    onced's address; the browser then treats onced as the page's own
 *    origin, and every request carries Host: evil.example. So a request
 *    whose Host is not a name onced is reachable as is refused (421). No
 *    rebinding can present an IP literal or localhost (the page's origin
 *    would be onced's own address), which is why the operations endpoints
 *    take those whatever --allowed-hosts says: probes and scrapers name
 *    the address they dial.
 *  - Cross-site request forgery: a page of another origin makes the
 *    browser POST to onced. What a browser sends cross-site without asking
 *    first (a preflight) is a "simple" request: no header of its own, and
 *    a body of no type, text/plain, a form or multipart. So an A2A request
 *    with a body must say application/json (or application/a2a+json,
 *    which no simple request can carry either), and a request that
 *    changes state (anything but GET, HEAD and OPTIONS) from a browser on
 *    another origin (an Origin that is neither the request's Host nor the
 *    public URL's, or without Origin a Sec-Fetch-Site of cross-site or
 *    same-site) is refused (403) unless --cors-origin allows that origin.
 *    Clients that are not browsers send neither header and pass.
 *
 * Invariant: a request is answered by its route only after this check; the
 * Host rule comes first, so the Origin rule compares against a Host that
 * is onced's.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/metrics.h"
#include "core/str.h"
#include "core/strv.h"
#include "http/admit.h"
#include "http/reqlog.h"

#define HOST_MAX 256

static const once__refusal host_refused = {
    421, ONCE_RPC_INVALID_REQUEST, "HOST_NOT_ALLOWED",
    "Misdirected request: this server does not answer for that Host name (DNS rebinding "
    "guard; the names it answers for are set with --allowed-hosts)"};
static const once__refusal origin_refused = {
    403, ONCE_RPC_INVALID_REQUEST, "ORIGIN_NOT_ALLOWED",
    "Forbidden: a cross-origin request from a web page (its Origin is not this server's and "
    "not one of --cors-origin)"};
static const once__refusal site_refused = {
    403, ONCE_RPC_INVALID_REQUEST, "ORIGIN_NOT_ALLOWED",
    "Forbidden: a cross-site request from a web page (Sec-Fetch-Site) without an Origin "
    "allowed by --cors-origin"};
static const once__refusal type_refused = {
    415, ONCE_RPC_CONTENT_TYPE_NOT_SUPPORTED, "CONTENT_TYPE_NOT_SUPPORTED",
    "Content type not supported: send the body as application/json (UTF-8)"};

static const char *header(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

static char *lower_dup(const char *s, size_t n)
{
    char *d = once_malloc(n + 1);
    if (d == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++)
        d[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
    d[n] = '\0';
    return d;
}

static int push(char ***v, size_t *n, const char *s, size_t len)
{
    char **nv = once_realloc(*v, (*n + 1) * sizeof **v);
    if (nv == NULL)
        return ONCE_ENOMEM;
    *v = nv;
    if ((nv[*n] = lower_dup(s, len)) == NULL)
        return ONCE_ENOMEM;
    (*n)++;
    return ONCE_OK;
}

static int ip_literal(const char *s)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

/* The host of a Host header value ("name", "name:port", "[v6]:port"),
 * without brackets and port, into out: 1; 0 when it is malformed. */
static int host_part(const char *v, char *out, size_t outlen)
{
    size_t n;
    if (v[0] == '[') {
        const char *end = strchr(v, ']');
        if (end == NULL || (end[1] != '\0' && end[1] != ':'))
            return 0;
        v++;
        n = (size_t)(end - v);
    } else {
        n = strcspn(v, ":");
    }
    if (n == 0 || n >= outlen)
        return 0;
    memcpy(out, v, n);
    out[n] = '\0';
    return 1;
}

static int listed(char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(v[i], s) == 0)
            return 1;
    return 0;
}

int once__admit_loopback(const struct sockaddr *bound)
{
    if (bound->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)bound)->sin_addr.s_addr) >> 24) == 127;
    if (bound->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)bound)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(a) ||
               (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    return 0;
}

/* "http(s)://authority" of url (no path), or 0 when url has no such
 * prefix; *n its length. */
static int origin_of(const char *url, size_t *n)
{
    size_t s = strncasecmp(url, "http://", 7) == 0 ? 7 : strncasecmp(url, "https://", 8) == 0 ? 8 : 0;
    if (s == 0)
        return 0;
    size_t a = strcspn(url + s, "/?#");
    if (a == 0)
        return 0;
    *n = s + a;
    return 1;
}

static int add_host(once__admit *a, const char *h, char *err, size_t errlen)
{
    size_t n = strlen(h);
    if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
        h++;
        n -= 2;
    }
    char tmp[HOST_MAX];
    if (n == 0 || n >= sizeof tmp) {
        snprintf(err, errlen, "--allowed-hosts: not a host name: '%s'", h);
        return ONCE_EINVAL;
    }
    memcpy(tmp, h, n);
    tmp[n] = '\0';
    if (strcmp(tmp, "*") == 0) {
        a->any_host = 1;
        return ONCE_OK;
    }
    if (strcspn(tmp, "/@ \t") != n || (strchr(tmp, ':') != NULL && !ip_literal(tmp))) {
        snprintf(err, errlen,
                 "--allowed-hosts: '%s' is not a host name or IP address (give names "
                 "without scheme or port: any port passes)",
                 tmp);
        return ONCE_EINVAL;
    }
    return push(&a->hosts, &a->nhosts, tmp, n);
}

int once__admit_init(once__admit *a, const once_http_config *cfg, const struct sockaddr *bound,
                     char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    int rc = ONCE_OK;
    for (size_t i = 0; rc == ONCE_OK && i < cfg->nallowed_hosts; i++) {
        /* each value a comma-separated list */
        const char *p = cfg->allowed_hosts[i];
        while (rc == ONCE_OK && *p != '\0') {
            size_t n = strcspn(p, ",");
            char one[HOST_MAX];
            snprintf(one, sizeof one, "%.*s", (int)(n < sizeof one ? n : sizeof one - 1), p);
            rc = add_host(a, one, err, errlen);
            p += n + (p[n] == ',');
        }
    }
    if (rc == ONCE_OK && cfg->nallowed_hosts == 0) {
        if (once__admit_loopback(bound)) {
            static const char *const names[] = {"localhost", "127.0.0.1", "::1"};
            for (size_t i = 0; rc == ONCE_OK && i < sizeof names / sizeof names[0]; i++)
                rc = add_host(a, names[i], err, errlen);
            if (rc == ONCE_OK)
                rc = add_host(a, cfg->host, err, errlen);
        } else {
            a->any_host = 1;
        }
    }
    size_t n;
    if (rc == ONCE_OK && cfg->public_url != NULL && origin_of(cfg->public_url, &n)) {
        char host[HOST_MAX];
        const char *auth = strstr(cfg->public_url, "://") + 3;
        size_t an = n - (size_t)(auth - cfg->public_url);
        snprintf(host, sizeof host, "%.*s", (int)(an < sizeof host ? an : sizeof host - 1), auth);
        const char *at = strrchr(host, '@');
        char name[HOST_MAX];
        if (host_part(at != NULL ? at + 1 : host, name, sizeof name))
            rc = push(&a->hosts, &a->nhosts, name, strlen(name));
        if (rc == ONCE_OK && (a->own_origin = lower_dup(cfg->public_url, n)) == NULL)
            rc = ONCE_ENOMEM;
    }
    for (size_t i = 0; rc == ONCE_OK && i < cfg->ncors_origins; i++) {
        const char *o = cfg->cors_origins[i];
        size_t len = strlen(o);
        if (len > 0 && o[len - 1] == '/')
            len--;
        if (!origin_of(o, &n) || n != len) {
            snprintf(err, errlen,
                     "--cors-origin: '%s' is not an origin (scheme://host[:port], e.g. "
                     "https://app.example.com)",
                     o);
            rc = ONCE_EINVAL;
        } else {
            rc = push(&a->origins, &a->norigins, o, len);
        }
    }
    if (rc != ONCE_OK)
        once__admit_clear(a);
    return rc;
}

void once__admit_clear(once__admit *a)
{
    once__strv_free(a->hosts, a->nhosts);
    once__strv_free(a->origins, a->norigins);
    once_free(a->own_origin);
    memset(a, 0, sizeof *a);
}

static int host_ok(const once__admit *a, struct MHD_Connection *c, once__route_kind kind)
{
    const char *v = header(c, MHD_HTTP_HEADER_HOST);
    if (a->any_host || v == NULL) /* no Host: HTTP/1.0, never a browser */
        return 1;
    char host[HOST_MAX];
    if (!host_part(v, host, sizeof host))
        return 0;
    if (listed(a->hosts, a->nhosts, host))
        return 1;
    return kind == ONCE__ROUTE_OPS && (ip_literal(host) || strcasecmp(host, "localhost") == 0);
}

/* application/json or application/a2a+json, charset (if any) UTF-8. */
static int type_ok(const char *ct)
{
    while (*ct == ' ' || *ct == '\t')
        ct++;
    size_t n = strcspn(ct, ";");
    while (n > 0 && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
        n--;
    if (!((n == 16 && strncasecmp(ct, "application/json", 16) == 0) ||
          (n == 20 && strncasecmp(ct, "application/a2a+json", 20) == 0)))
        return 0;
    const char *cs = strcasestr(ct, "charset=");
    if (cs == NULL)
        return 1;
    cs += 8;
    if (*cs == '"')
        cs++;
    return strncasecmp(cs, "utf-8", 5) == 0 || strncasecmp(cs, "utf8", 4) == 0;
}

int once__admit_has_body(struct MHD_Connection *conn)
{
    if (header(conn, MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL)
        return 1;
    const char *cl = header(conn, MHD_HTTP_HEADER_CONTENT_LENGTH);
    uint64_t n = 0;
    return cl != NULL && (once__parse_size(cl, &n) != ONCE_OK || n > 0);
}

/* The Origin is this server's: the scheme's authority is the request's
 * Host (checked above), or the Origin is the public URL's. The scheme is
 * not compared: no other server answers on the same host and port. */
static int own_origin(const once__admit *a, struct MHD_Connection *c, const char *origin)
{
    const char *host = header(c, MHD_HTTP_HEADER_HOST);
    const char *p = strstr(origin, "://");
    return (p != NULL && host != NULL && strcasecmp(p + 3, host) == 0) ||
           (a->own_origin != NULL && strcasecmp(origin, a->own_origin) == 0);
}

const once__refusal *once__admit_check(const once__admit *a, struct MHD_Connection *conn,
                                       const char *method, once__route_kind kind)
{
    if (!host_ok(a, conn, kind))
        return &host_refused;
    if (kind != ONCE__ROUTE_A2A)
        return NULL;
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0 &&
        strcmp(method, MHD_HTTP_METHOD_OPTIONS) != 0) {
        const char *origin = header(conn, "Origin");
        if (origin != NULL) {
            if (!own_origin(a, conn, origin) && !listed(a->origins, a->norigins, origin))
                return &origin_refused;
        } else {
            const char *site = header(conn, "Sec-Fetch-Site");
            if (site != NULL && (strcasecmp(site, "cross-site") == 0 ||
                                 strcasecmp(site, "same-site") == 0))
                return &site_refused;
        }
    }
    const char *ct = header(conn, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (ct != NULL ? !type_ok(ct) : once__admit_has_body(conn))
        return &type_refused;
    return NULL;
}

const char *once__admit_cors(const once__admit *a, struct MHD_Connection *conn)
{
    if (a->norigins == 0)
        return NULL;
    const char *origin = header(conn, "Origin");
    for (size_t i = 0; origin != NULL && i < a->norigins; i++)
        if (strcasecmp(a->origins[i], origin) == 0)
            return a->origins[i];
    return NULL;
}

void once__admit_cors_headers(struct MHD_Response *res, const char *origin)
{
    MHD_add_response_header(res, "Access-Control-Allow-Origin", origin);
    MHD_add_response_header(res, "Access-Control-Expose-Headers",
                            "Idempotent-Replayed, A2A-Extensions, Retry-After, "
                            "WWW-Authenticate, ETag, Last-Modified");
}

int once__admit_preflight(const once__admit *a, struct MHD_Connection *conn, const char *method,
                          enum MHD_Result *ret)
{
    if (strcmp(method, MHD_HTTP_METHOD_OPTIONS) != 0 ||
        header(conn, "Access-Control-Request-Method") == NULL)
        return 0;
    const char *origin = once__admit_cors(a, conn);
    if (origin == NULL)
        return 0;
    struct MHD_Response *res =
        MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (res == NULL) {
        *ret = MHD_NO;
        return 1;
    }
    MHD_add_response_header(res, "Access-Control-Allow-Origin", origin);
    MHD_add_response_header(res, "Access-Control-Allow-Methods", "GET, POST, DELETE");
    MHD_add_response_header(res, "Access-Control-Allow-Headers",
                            "A2A-Version, A2A-Extensions, Authorization, Content-Type, "
                            "Last-Event-ID, traceparent");
    MHD_add_response_header(res, "Access-Control-Max-Age", "600");
    MHD_add_response_header(res, "Vary",
                            "Origin, Access-Control-Request-Method, Access-Control-Request-Headers");
    once__metrics_http(method, MHD_HTTP_NO_CONTENT);
    *ret = once__http_queue(conn, MHD_HTTP_NO_CONTENT, res);
    MHD_destroy_response(res);
    return 1;
}
