/*
 * h2_client.c -- the blocking gRPC client (h2_client.h): one socket, one
 * nghttp2 client session, driven by poll(2) on the caller's thread while a
 * call runs. Between calls nothing reads the socket; a server's GOAWAY or
 * close is seen by the next call, which then answers UNAVAILABLE.
 *
 * A call is one stream: the request (headers, the one framed message,
 * END_STREAM) goes out through a data provider; response DATA is
 * reassembled into whole messages (a length-prefix at a time, bounded by
 * MAX_MESSAGE) and handed to the callback as they complete.
 *
 * TLS (GnuTLS) is one section below, behind ONCE_HAVE_TLS; without it the
 * section's functions refuse, and no client ever has a session.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifdef ONCE_HAVE_TLS
#include <gnutls/gnutls.h>
#endif
#include <nghttp2/nghttp2.h>

#include "core/alloc_int.h"
#include "core/base64.h"
#include "core/grow.h"
#include "core/pct.h"
#include "core/tls_priority.h"
#include "grpc/h2.h"
#include "grpc/h2_client.h"
#include "once/once.h"

#define MAX_MESSAGE ((size_t)64 << 20)
#define POLL_MS 50

/* The call in progress; owned by the calling thread. */
typedef struct cstate {
    int32_t id;
    const uint8_t *req;
    size_t req_len, req_off;
    int done, http_status, rst, failed;
    once__h2c_on_message on_message;
    void *arg;
    int cancel;                /* the callback asked to cancel */
    uint8_t *rx;
    size_t rx_len, rx_cap;
    once__h2c_result *res;
    int has_status;
    size_t hlen, hcap;
} cstate;

struct once__h2_client {
    int fd;
    struct gnutls_session_int *tls;                   /* NULL: h2c */
    struct gnutls_certificate_credentials_st *cred;
    nghttp2_session *ng;
    int broken;
    char *authority;
    cstate *cur;
    int (*stop)(void *ctx);      /* once__h2c_set_stop's; NULL = none */
    void *stop_ctx;
    int64_t last_rx_ms;          /* when bytes last came from the server */
    int64_t ping_every_ms;       /* once__h2c_set_keepalive's; 0 = never */
    int64_t last_ping_ms;
};

void once__h2c_set_keepalive(once__h2_client *c, int64_t every_ms)
{
    c->ping_every_ms = every_ms;
}

int64_t once__h2c_last_rx_ms(const once__h2_client *c)
{
    return c->last_rx_ms;
}

/* A call that hears nothing for ping_every_ms asks the server for a PING
 * ACK (every peer must send one), so a quiet stream still shows the
 * connection alive and a dead one shows as silence. */
static void keepalive(once__h2_client *c)
{
    int64_t now = once_monotonic_ms();
    if (c->ping_every_ms > 0 && now - c->last_rx_ms >= c->ping_every_ms &&
        now - c->last_ping_ms >= c->ping_every_ms) {
        c->last_ping_ms = now;
        (void)nghttp2_submit_ping(c->ng, NGHTTP2_FLAG_NONE, NULL);
    }
}

void once__h2c_set_stop(once__h2_client *c, int (*stop)(void *ctx), void *ctx)
{
    c->stop = stop;
    c->stop_ctx = ctx;
}

void once__h2c_result_clear(once__h2c_result *r)
{
    once_free(r->message);
    once_free(r->details);
    once_free(r->headers);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------- transport */

#ifdef ONCE_HAVE_TLS
static ssize_t tls_send(once__h2_client *c, const uint8_t *d, size_t n)
{
    ssize_t r = gnutls_record_send(c->tls, d, n);
    return r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED ? 0 : (r < 0 ? -1 : r);
}

static ssize_t tls_recv(once__h2_client *c, uint8_t *d, size_t n)
{
    ssize_t r = gnutls_record_recv(c->tls, d, n);
    return r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED ? 0 : (r <= 0 ? -1 : r);
}

static int tls_pending(once__h2_client *c)
{
    return c->tls && gnutls_record_check_pending(c->tls) > 0;
}

static void tls_end(once__h2_client *c)
{
    if (c->tls)
        gnutls_deinit(c->tls);
    if (c->cred)
        gnutls_certificate_free_credentials(c->cred);
}

/* 0; 1 when the server cannot be trusted (its certificate failed, or the
 * trust anchors could not be loaded: no retry fixes that); -1 otherwise. */
static int tls_start(once__h2_client *c, const once__h2c_config *cfg, const char *name,
                     int64_t timeout_ms, char *err, size_t errlen)
{
    gnutls_datum_t h2 = {(unsigned char *)"h2", 2};
    int r = gnutls_certificate_allocate_credentials(&c->cred);
    if (r == 0 && !cfg->insecure)
        r = cfg->ca_file ? (gnutls_certificate_set_x509_trust_file(c->cred, cfg->ca_file,
                                                                   GNUTLS_X509_FMT_PEM) > 0
                                ? 0
                                : -1)
                         : (gnutls_certificate_set_x509_system_trust(c->cred) >= 0 ? 0 : -1);
    if (r != 0) {
        snprintf(err, errlen, "grpc: cannot load trust anchors%s%s", cfg->ca_file ? " from " : "",
                 cfg->ca_file ? cfg->ca_file : "");
        return 1;
    }
    /* NO_SIGNAL: a write to a server that went away is an error, not a
     * SIGPIPE that kills the caller (a CLI does not ignore it). */
    if (gnutls_init(&c->tls, GNUTLS_CLIENT | GNUTLS_NONBLOCK | GNUTLS_NO_SIGNAL) != 0 ||
        gnutls_priority_set_direct(c->tls,
                                   cfg->tls_priority ? cfg->tls_priority : ONCE_TLS_PRIORITY_DEFAULT,
                                   NULL) != 0 ||
        gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, c->cred) != 0 ||
        gnutls_server_name_set(c->tls, GNUTLS_NAME_DNS, name, strlen(name)) != 0 ||
        gnutls_alpn_set_protocols(c->tls, &h2, 1, 0) != 0) {
        snprintf(err, errlen, "grpc: cannot set up TLS");
        return -1;
    }
    if (!cfg->insecure)
        gnutls_session_set_verify_cert(c->tls, name, 0);
    gnutls_transport_set_int(c->tls, c->fd);
    int64_t end = once_monotonic_ms() + timeout_ms;
    while ((r = gnutls_handshake(c->tls)) == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) {
        int64_t left = end - once_monotonic_ms();
        struct pollfd p = {c->fd, gnutls_record_get_direction(c->tls) ? POLLOUT : POLLIN, 0};
        if (left <= 0 || poll(&p, 1, (int)left) <= 0) {
            snprintf(err, errlen, "grpc: TLS handshake timed out");
            return -1;
        }
    }
    if (r < 0) {
        snprintf(err, errlen, "grpc: TLS handshake with %s failed: %s", name, gnutls_strerror(r));
        return r == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR ? 1 : -1;
    }
    gnutls_datum_t p;
    if (gnutls_alpn_get_selected_protocol(c->tls, &p) != 0 || p.size != 2 ||
        memcmp(p.data, "h2", 2) != 0) {
        snprintf(err, errlen, "grpc: %s did not negotiate h2 (ALPN)", name);
        return -1;
    }
    return 0;
}
#else /* !ONCE_HAVE_TLS: tls_start refuses, so c->tls stays NULL */
static ssize_t tls_send(once__h2_client *c, const uint8_t *d, size_t n)
{
    return -1;
}

static ssize_t tls_recv(once__h2_client *c, uint8_t *d, size_t n)
{
    return -1;
}

static int tls_pending(once__h2_client *c)
{
    return 0;
}

static void tls_end(once__h2_client *c)
{
}

/* No retry fixes a build without TLS: refused as untrusted is. */
static int tls_start(once__h2_client *c, const once__h2c_config *cfg, const char *name,
                     int64_t timeout_ms, char *err, size_t errlen)
{
    snprintf(err, errlen, "grpc: %s", ONCE_TLS_OFF_MSG);
    return 1;
}
#endif /* ONCE_HAVE_TLS */

static ssize_t io_send(once__h2_client *c, const uint8_t *d, size_t n)
{
    if (c->tls)
        return tls_send(c, d, n);
    ssize_t r = send(c->fd, d, n, MSG_NOSIGNAL);
    return r < 0 && (errno == EAGAIN || errno == EINTR) ? 0 : r;
}

static ssize_t io_recv(once__h2_client *c, uint8_t *d, size_t n)
{
    if (c->tls)
        return tls_recv(c, d, n);
    ssize_t r = recv(c->fd, d, n, 0);
    return r < 0 && (errno == EAGAIN || errno == EINTR) ? 0 : (r <= 0 ? -1 : r);
}

/* Everything nghttp2 wants to send, written (blocking on poll). */
static int pump_out(once__h2_client *c)
{
    for (;;) {
        const uint8_t *d;
        ssize_t n = nghttp2_session_mem_send(c->ng, &d);
        if (n < 0)
            return -1;
        if (n == 0)
            return 0;
        for (size_t off = 0; off < (size_t)n;) {
            ssize_t w = io_send(c, d + off, (size_t)n - off);
            if (w < 0)
                return -1;
            if (w == 0) {
                struct pollfd p = {c->fd, POLLOUT, 0};
                if (poll(&p, 1, POLL_MS) < 0 && errno != EINTR)
                    return -1;
                continue;
            }
            off += (size_t)w;
        }
    }
}

/* Read what is there (waiting up to wait_ms for the first bytes). */
static int pump_in(once__h2_client *c, int wait_ms)
{
    int pending = tls_pending(c);
    if (!pending) {
        struct pollfd p = {c->fd, POLLIN, 0};
        int r = poll(&p, 1, wait_ms);
        if (r < 0)
            return errno == EINTR ? 0 : -1;
        if (r == 0)
            return 0;
    }
    uint8_t buf[16384];
    for (int i = 0; i < 16; i++) {
        ssize_t n = io_recv(c, buf, sizeof buf);
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        c->last_rx_ms = once_monotonic_ms();
        if (nghttp2_session_mem_recv(c->ng, buf, (size_t)n) < 0)
            return -1;
    }
    return 0;
}

/* -------------------------------------------------------------- callbacks */

static int add_header(cstate *s, const uint8_t *name, size_t nlen, const uint8_t *v, size_t vlen)
{
    once__h2c_result *r = s->res;
    size_t need = s->hlen + nlen + vlen + 4;
    if (once__grow_to(&r->headers, &s->hcap, once__grow_size(s->hcap, need, 128, (size_t)-1)) !=
        ONCE_OK)
        return -1;
    memcpy(r->headers + s->hlen, name, nlen);
    s->hlen += nlen;
    memcpy(r->headers + s->hlen, ": ", 2);
    s->hlen += 2;
    memcpy(r->headers + s->hlen, v, vlen);
    s->hlen += vlen;
    r->headers[s->hlen++] = '\n';
    r->headers[s->hlen] = '\0';
    return 0;
}

static int eq(const uint8_t *a, size_t n, const char *b)
{
    return n == strlen(b) && memcmp(a, b, n) == 0;
}

static int on_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name,
                     size_t nlen, const uint8_t *v, size_t vlen, uint8_t flags, void *user)
{
    once__h2_client *c = user;
    cstate *s = c->cur;
    if (s == NULL || f->hd.stream_id != s->id)
        return 0;
    once__h2c_result *r = s->res;
    if (eq(name, nlen, ":status")) {
        s->http_status = 0;
        for (size_t i = 0; i < vlen && v[i] >= '0' && v[i] <= '9'; i++)
            s->http_status = s->http_status * 10 + (v[i] - '0');
    } else if (eq(name, nlen, "grpc-status")) {
        r->status = 0;
        for (size_t i = 0; i < vlen && v[i] >= '0' && v[i] <= '9'; i++)
            r->status = r->status * 10 + (v[i] - '0');
        s->has_status = 1;
    } else if (eq(name, nlen, "grpc-message")) {
        once_free(r->message);
        r->message = once_malloc(vlen + 1);
        if (r->message && !once__pct_decode((const char *)v, vlen, 0, r->message, vlen + 1))
            memcpy(r->message, v, vlen), r->message[vlen] = '\0';   /* kept as sent */
    } else if (eq(name, nlen, "grpc-status-details-bin")) {
        once_free(r->details);
        r->details = once_malloc(vlen + 1);
        long n = r->details ? once__base64_decode((const char *)v, vlen, r->details, vlen + 1) : -1;
        r->details_len = n > 0 ? (size_t)n : 0;
    } else if (f->headers.cat == NGHTTP2_HCAT_RESPONSE && name[0] != ':') {
        if (add_header(s, name, nlen, v, vlen) != 0)
            return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    return 0;
}

static int on_data(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *d, size_t len,
                   void *user)
{
    once__h2_client *c = user;
    cstate *s = c->cur;
    if (s == NULL || id != s->id || s->failed || s->cancel)
        return 0;
    if (once__grow_to((char **)&s->rx, &s->rx_cap,
                      once__grow_size(s->rx_cap, s->rx_len + len, 1024, (size_t)-1)) != ONCE_OK)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    memcpy(s->rx + s->rx_len, d, len);
    s->rx_len += len;
    size_t off = 0;
    while (s->rx_len - off >= 5 && !s->cancel) {
        const uint8_t *p = s->rx + off;
        size_t ml = once__grpc_prefix_len(p);
        if ((p[0] & 1) || ml > MAX_MESSAGE) {
            s->failed = 1;   /* compressed (we asked for none) or too large */
            nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
            return 0;
        }
        if (s->rx_len - off - 5 < ml)
            break;
        if (s->on_message && s->on_message(s->arg, p + 5, ml) != 0) {
            s->cancel = 1;
            nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
        }
        off += 5 + ml;
    }
    memmove(s->rx, s->rx + off, s->rx_len - off);
    s->rx_len -= off;
    return 0;
}

static int on_close(nghttp2_session *ng, int32_t id, uint32_t code, void *user)
{
    once__h2_client *c = user;
    if (c->cur && id == c->cur->id) {
        c->cur->done = 1;
        c->cur->rst = (int)code;
    }
    return 0;
}

static ssize_t provide(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                       nghttp2_data_source *src, void *user)
{
    cstate *s = src->ptr;
    size_t n = s->req_len - s->req_off < len ? s->req_len - s->req_off : len;
    memcpy(buf, s->req + s->req_off, n);
    s->req_off += n;
    if (s->req_off == s->req_len)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

/* ----------------------------------------------------------------- connect */

static int dial(const once__h2c_config *cfg, int64_t timeout_ms, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    char port[16];
    snprintf(port, sizeof port, "%d", cfg->port);
    int r = getaddrinfo(cfg->host, port, &hints, &ai);
    if (r != 0) {
        snprintf(err, errlen, "grpc: cannot resolve %s: %s", cfg->host, gai_strerror(r));
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
            close(fd);
            fd = -1;
            continue;
        }
        struct pollfd p = {fd, POLLOUT, 0};
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (poll(&p, 1, (int)timeout_ms) != 1 ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 || soerr != 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    if (fd < 0)
        snprintf(err, errlen, "grpc: cannot connect to %s:%d", cfg->host, cfg->port);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

int once__h2c_connect(const once__h2c_config *cfg, once__h2_client **out, char *err,
                      size_t errlen)
{
    *out = NULL;
    if (cfg->host == NULL || cfg->port <= 0 || cfg->port > 65535) {
        snprintf(err, errlen, "grpc: no host or port");
        return ONCE_EINVAL;
    }
    once__h2_client *c = once_calloc(1, sizeof *c);
    if (c == NULL)
        return ONCE_ENOMEM;
    int64_t t = cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : 10000;
    const char *name = cfg->server_name ? cfg->server_name : cfg->host;
    c->fd = dial(cfg, t, err, errlen);
    int rc = c->fd < 0 ? ONCE_EIO : ONCE_OK;
    int tls = rc == ONCE_OK && cfg->tls ? tls_start(c, cfg, name, t, err, errlen) : 0;
    if (tls != 0)
        rc = tls > 0 ? ONCE_EINVAL : ONCE_EIO;
    char auth[300];
    snprintf(auth, sizeof auth, "%s:%d", name, cfg->port);
    c->authority = once_strdup(auth);
    nghttp2_session_callbacks *cb = NULL;
    if (rc == ONCE_OK && (c->authority == NULL || nghttp2_session_callbacks_new(&cb) != 0))
        rc = ONCE_ENOMEM;
    if (rc == ONCE_OK) {
        nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
        nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
        if (nghttp2_session_client_new(&c->ng, cb, c) != 0 ||
            nghttp2_submit_settings(c->ng, NGHTTP2_FLAG_NONE, NULL, 0) != 0)
            rc = ONCE_ENOMEM;
    }
    if (cb)
        nghttp2_session_callbacks_del(cb);
    if (rc == ONCE_OK && pump_out(c) != 0) {
        snprintf(err, errlen, "grpc: the connection to %s:%d failed", cfg->host, cfg->port);
        rc = ONCE_EIO;
    }
    if (rc != ONCE_OK) {
        once__h2c_close(c);
        return rc;
    }
    *out = c;
    return ONCE_OK;
}

void once__h2c_close(once__h2_client *c)
{
    if (c == NULL)
        return;
    if (c->ng)
        nghttp2_session_del(c->ng);
    tls_end(c);
    if (c->fd >= 0)
        close(c->fd);
    once_free(c->authority);
    once_free(c);
}

/* ------------------------------------------------------------------- calls */

/* gRPC's mapping of an HTTP status to a code, for an answer without one. */
static int http_to_grpc(int http)
{
    switch (http) {
    case 400: return ONCE_GRPC_INTERNAL;
    case 401: return 16;   /* UNAUTHENTICATED */
    case 403: return 7;    /* PERMISSION_DENIED */
    case 404: return ONCE_GRPC_UNIMPLEMENTED;
    case 429: case 502: case 503: case 504: return ONCE_GRPC_UNAVAILABLE;
    default: return ONCE_GRPC_UNKNOWN;
    }
}

static void set_message(once__h2c_result *r, const char *m)
{
    once_free(r->message);
    r->message = once_strdup(m);
}

int once__h2c_call(once__h2_client *c, const char *path, const char *const *md, size_t n,
                   const uint8_t *req, size_t len, int64_t timeout_ms,
                   once__h2c_on_message on_message, void *arg, atomic_int *cancel,
                   once__h2c_result *res)
{
    memset(res, 0, sizeof *res);
    if (c->broken || !nghttp2_session_want_read(c->ng)) {
        res->status = ONCE_GRPC_UNAVAILABLE;
        set_message(res, "connection closed");
        return ONCE_ECLOSED;
    }
    if (len > 0xffffffffu)
        return ONCE_ERANGE;
    uint8_t *framed = once_malloc(len + 5);
    nghttp2_nv *nv = once_calloc(n + 8, sizeof *nv);
    if (framed == NULL || nv == NULL) {
        once_free(framed);
        once_free(nv);
        return ONCE_ENOMEM;
    }
    once__grpc_prefix_put(framed, (uint32_t)len);
    if (len)
        memcpy(framed + 5, req, len);
    char tmo[16];
    size_t k = 0;
#define NV(a, b) (nghttp2_nv){(uint8_t *)(a), (uint8_t *)(b), strlen(a), strlen(b), 0}
    nv[k++] = NV(":method", "POST");
    nv[k++] = NV(":scheme", c->tls ? "https" : "http");
    nv[k++] = NV(":path", path);
    nv[k++] = NV(":authority", c->authority);
    nv[k++] = NV("content-type", "application/grpc");
    nv[k++] = NV("te", "trailers");
    if (timeout_ms > 0) {
        once__grpc_timeout_format(timeout_ms, tmo, sizeof tmo);
        nv[k++] = NV("grpc-timeout", tmo);
    }
    for (size_t i = 0; i < n; i++)
        nv[k++] = NV(md[2 * i], md[2 * i + 1]);
#undef NV
    cstate s = {.req = framed, .req_len = len + 5, .on_message = on_message, .arg = arg, .res = res};
    nghttp2_data_provider dp = {.source.ptr = &s, .read_callback = provide};
    c->cur = &s;
    s.id = nghttp2_submit_request(c->ng, NULL, nv, k, &dp, NULL);
    once_free(nv);
    int64_t end = timeout_ms > 0 ? once_monotonic_ms() + timeout_ms : 0;
    int local = -1;   /* a status the client decided itself */
    if (s.id < 0)
        c->broken = 1;
    c->last_rx_ms = once_monotonic_ms();   /* silence counts from the call's start */
    while (s.id >= 0 && !s.done && !c->broken) {
        keepalive(c);
        if (pump_out(c) != 0 || pump_in(c, POLL_MS) != 0 ||
            (!nghttp2_session_want_read(c->ng) && !s.done)) {
            c->broken = 1;
            break;
        }
        int stop = local < 0 && (s.cancel || (cancel && atomic_load(cancel)) ||
                                 (c->stop != NULL && c->stop(c->stop_ctx)));
        if (local < 0 && end && once_monotonic_ms() >= end) {
            local = ONCE_GRPC_DEADLINE_EXCEEDED;
            nghttp2_submit_rst_stream(c->ng, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_CANCEL);
        } else if (stop) {
            local = ONCE_GRPC_CANCELLED;
            if (!s.cancel)
                nghttp2_submit_rst_stream(c->ng, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_CANCEL);
        }
    }
    if (local < 0 && s.cancel)
        local = ONCE_GRPC_CANCELLED;   /* the callback's, its stream reset */
    if (!c->broken && pump_out(c) != 0)
        c->broken = 1;
    c->cur = NULL;
    once_free(framed);
    once_free(s.rx);
    if (local >= 0) {
        res->status = local;
        set_message(res, local == ONCE_GRPC_CANCELLED ? "cancelled" : "deadline exceeded");
    } else if (c->broken && !s.done) {
        res->status = ONCE_GRPC_UNAVAILABLE;
        set_message(res, "connection lost");
        return ONCE_ECLOSED;
    } else if (s.failed || (s.has_status == 0 && s.http_status == 200)) {
        res->status = ONCE_GRPC_INTERNAL;
        set_message(res, s.failed ? "malformed response message" : "response without grpc-status");
    } else if (!s.has_status) {
        res->status = s.rst == NGHTTP2_REFUSED_STREAM ? ONCE_GRPC_UNAVAILABLE
                      : s.http_status ? http_to_grpc(s.http_status)
                                      : ONCE_GRPC_INTERNAL;
        if (res->message == NULL)
            set_message(res, s.rst == NGHTTP2_REFUSED_STREAM ? "stream refused"
                                                            : "no gRPC status in the answer");
    } else if (s.rx_len != 0) {
        res->status = ONCE_GRPC_INTERNAL;
        set_message(res, "truncated response message");
    }
    return ONCE_OK;
}
