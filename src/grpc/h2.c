/*
 * h2.c -- the gRPC transport's listener and loop threads: sockets,
 * connection limits and timers. The HTTP/2 inside a connection is
 * h2_session.c's; the calls are h2_call.c's; TLS is h2_tls.c's.
 *
 * Each loop thread runs one epoll set: the listening socket (shared by all
 * loops, EPOLLEXCLUSIVE, so one loop wakes per new connection), its eventfd
 * (workers' answers: the kick list) and its connections, level-triggered.
 * A connection is read at most READS_PER_EVENT times per wake-up, so one
 * busy peer cannot hold its loop; TLS records already decrypted are
 * remembered (`again`) and read on the next round.
 *
 * Output: nghttp2's frames go through one buffer per connection, refilled
 * only when empty (GnuTLS wants a blocked record sent again with the same
 * bytes), so a connection holds at most OUT_HIGH bytes of frames plus what
 * nghttp2 itself queues (bounded by max_outbound_ack and the calls'
 * stream_buffer).
 *
 * Timers run on a tick of TICK_MS per loop, over its connections: the
 * handshake and preface within request_timeout_ms, the idle timeout, the
 * write stall (data_mark: last byte a call's output gave nghttp2 while any
 * was queued; sock_mark: last byte the socket took while any was
 * buffered), and each call's request timeout and deadline.
 *
 * Connection limits mirror src/http/guard.c: the registry (all loops,
 * under srv->mu) counts connections per address by a walk (bounded by
 * max_connections, and only on accept) and evicts the one idle longest by
 * shutdown(2), which its own loop sees as the peer's close.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/alloc_int.h"
#include "core/log.h"
#include "core/tls_priority.h"
#include "grpc/h2_int.h"

#define TICK_MS 100
#define READS_PER_EVENT 16
#define OUT_HIGH (64 * 1024)

static const char PREFACE[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/* ---------------------------------------------------------------- config */

static int resolve(once__h2_config *c, char *err, size_t errlen)
{
    if (c->threads == 0)
        c->threads = 1;
    if (c->max_connections == 0)
        c->max_connections = 16384;
    if (c->max_per_ip == 0)
        c->max_per_ip = 128;
    if (c->request_timeout_ms == 0)
        c->request_timeout_ms = 30000;
    if (c->idle_timeout_ms == 0)
        c->idle_timeout_ms = 30000;
    if (c->write_stall_ms == 0)
        c->write_stall_ms = 30000;
    if (c->max_streams == 0)
        c->max_streams = 100;
    if (c->max_message == 0)
        c->max_message = (size_t)1 << 20;
    if (c->max_header_list == 0)
        c->max_header_list = 16 * 1024;
    if (c->stream_buffer == 0)
        c->stream_buffer = 64 * 1024;
    if (c->flood_window_ms == 0)
        c->flood_window_ms = 10000;
    if (c->max_resets == 0)
        c->max_resets = 1000;
    if (c->max_control == 0)
        c->max_control = 1000;
    if (c->threads > 64 || c->port < 0 || c->port > 65535 || c->request_timeout_ms < 0 ||
        c->idle_timeout_ms < 0 || c->write_stall_ms < 0 || c->flood_window_ms < 0 ||
        c->max_message > 0x7fffffff || c->max_header_list > 0x7fffffff) {
        snprintf(err, errlen, "grpc: a limit is out of range");
        return ONCE_EINVAL;
    }
    return ONCE_OK;
}

/* ------------------------------------------------------------ registry */

void once__h2_conn_busy(once__h2_conn *c, int busy)
{
    once__h2 *s = c->loop->srv;
    int64_t now = once_monotonic_ms();
    if (!busy)
        c->idle_since = now;
    pthread_mutex_lock(&s->mu);
    c->busy = busy;
    c->ridle_since = now;
    pthread_mutex_unlock(&s->mu);
}

/* Admit c or say no (the registry's lock taken here). */
static int admit(once__h2 *s, once__h2_conn *c)
{
    pthread_mutex_lock(&s->mu);
    unsigned same = 0;
    once__h2_conn *idle = NULL;
    for (once__link *l = s->reg.head; l; l = l->next) {
        once__h2_conn *o = ONCE__H2_CONN_OF_RLINK(l);
        if (o->shut)
            continue;
        if (strcmp(o->ip, c->ip) == 0)
            same++;
        if (!o->busy && (idle == NULL || o->ridle_since < idle->ridle_since))
            idle = o;
    }
    int ok = same < s->cfg.max_per_ip;
    if (ok && s->nlive >= s->cfg.max_connections) {
        if (idle == NULL) {
            ok = 0;
        } else {
            shutdown(idle->fd, SHUT_RDWR);   /* its loop sees the close */
            idle->shut = 1;
            s->nlive--;
        }
    }
    if (ok) {
        once__list_append(&s->reg, &c->rlink);
        c->ridle_since = once_monotonic_ms();
        s->nlive++;
    }
    pthread_mutex_unlock(&s->mu);
    return ok;
}

static void unregister(once__h2 *s, once__h2_conn *c)
{
    pthread_mutex_lock(&s->mu);
    once__list_unlink(&s->reg, &c->rlink);
    if (!c->shut)
        s->nlive--;
    pthread_mutex_unlock(&s->mu);
}

/* --------------------------------------------------------- connection I/O */

void once__h2_conn_log(once__h2_conn *c, const char *why)
{
    once__logline l;
    if (!once__log_begin(&l, ONCE_LOG_WARN, "grpc_close"))
        return;
    once__log_str(&l, "peer", c->peer);
    once__log_str(&l, "reason", why);
    once__log_end(&l);
}

static void conn_close(once__h2_conn *c)
{
    once__h2_loop *l = c->loop;
    if (c->abuse)
        once__h2_conn_log(c, c->abuse);
    unregister(l->srv, c);
    once__h2s_detach_all(c);
    nghttp2_session_del(c->ng);
    once__h2_tls_end(c);
    epoll_ctl(l->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    once__list_unlink(&l->conns, &c->link);
    once_free(c->out);
    c->out = NULL;
    c->dead = 1;
    once__list_append(&l->dead, &c->link);
}

static void bury(once__h2_loop *l)
{
    while (l->dead.head) {
        once__link *k = l->dead.head;
        once__list_unlink(&l->dead, k);
        once_free(k);
    }
}

/* >0 bytes, 0 would block, -1 closed or failed. */
static ssize_t raw_recv(once__h2_conn *c, uint8_t *buf, size_t n)
{
    if (c->tls)
        return once__h2_tls_recv(c, buf, n);
    ssize_t r = recv(c->fd, buf, n, 0);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return 0;
    return r > 0 ? r : -1;
}

static ssize_t raw_send(once__h2_conn *c, const uint8_t *buf, size_t n)
{
    if (c->tls)
        return once__h2_tls_send(c, buf, n);
    ssize_t r = send(c->fd, buf, n, MSG_NOSIGNAL);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return 0;
    return r >= 0 ? r : -1;
}

static void want_out(once__h2_conn *c, int on)
{
    if (c->ev_out == on)
        return;
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(c->loop->epfd, EPOLL_CTL_MOD, c->fd, &ev);
    c->ev_out = on;
}

static int out_append(once__h2_conn *c, const uint8_t *d, size_t n)
{
    if (once__h2_reserve(&c->out, &c->out_cap, c->out_len + n) != ONCE_OK)
        return -1;
    memcpy(c->out + c->out_len, d, n);
    c->out_len += n;
    return 0;
}

int once__h2_conn_flush(once__h2_conn *c)
{
    for (;;) {
        if (c->out_off == c->out_len) {
            c->out_off = c->out_len = 0;
            /* Nothing of HTTP/2 before the client's preface: an HTTP/1.1
             * client gets a plain answer, not our SETTINGS first. */
            while (c->ng && c->ready && c->preface_seen == sizeof PREFACE - 1 &&
                   !c->close_after_flush && c->out_len < OUT_HIGH) {
                const uint8_t *d;
                ssize_t n = nghttp2_session_mem_send(c->ng, &d);
                if (n < 0)
                    return -1;
                if (n == 0)
                    break;
                if (out_append(c, d, (size_t)n) != 0)
                    return -1;
            }
            if (c->out_len == 0)
                break;
        }
        ssize_t w = raw_send(c, c->out + c->out_off, c->out_len - c->out_off);
        if (w < 0)
            return -1;
        if (w == 0)
            break;
        c->out_off += (size_t)w;
        c->sock_mark = once_monotonic_ms();
    }
    want_out(c, c->out_off < c->out_len);
    return 0;
}

/* 1 when c has nothing more to do and is to be closed. */
static int conn_done(once__h2_conn *c)
{
    if (c->out_off < c->out_len)
        return 0;
    if (c->close_after_flush)
        return 1;
    return c->ng && c->ready && !nghttp2_session_want_read(c->ng) &&
           !nghttp2_session_want_write(c->ng);
}

/* An HTTP/1.x request on the HTTP/2 port: say so, then close. */
static void refuse_http1(once__h2_conn *c)
{
    static const char body[] = "this port serves gRPC over HTTP/2 only (h2c with prior "
                               "knowledge, or TLS with ALPN h2)\n";
    char head[256];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 505 HTTP Version Not Supported\r\nContent-Type: text/plain\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                     sizeof body - 1);
    c->out_off = c->out_len = 0;
    if (out_append(c, (const uint8_t *)head, (size_t)n) == 0)
        out_append(c, (const uint8_t *)body, sizeof body - 1);
    c->close_after_flush = 1;
}

/* Check the client preface's bytes as they come; 0 ok, -1 not HTTP/2. */
static int sniff(once__h2_conn *c, const uint8_t *d, size_t n)
{
    size_t want = sizeof PREFACE - 1;
    for (size_t i = 0; i < n && c->preface_seen < want; i++, c->preface_seen++)
        if (d[i] != (uint8_t)PREFACE[c->preface_seen])
            return -1;
    return 0;
}

/* 1 done (h2 negotiated), 0 not yet, -1 failed or refused. */
static int handshake(once__h2_conn *c)
{
    int write = 0, r = once__h2_tls_handshake(c, &write);
    if (r > 0)
        c->ready = 1;
    if (r >= 0)
        want_out(c, r == 0 && write);
    return r;
}

/* Read what the peer sent; -1 to close. */
static int conn_read(once__h2_conn *c)
{
    uint8_t buf[16384];
    for (int i = 0; i < READS_PER_EVENT && !c->close_after_flush; i++) {
        ssize_t n = raw_recv(c, buf, sizeof buf);
        if (n == 0)
            break;
        if (n < 0)
            return -1;
        if (c->preface_seen < sizeof PREFACE - 1 && sniff(c, buf, (size_t)n) != 0) {
            refuse_http1(c);
            break;
        }
        ssize_t r = nghttp2_session_mem_recv(c->ng, buf, (size_t)n);
        if (r < 0) {
            if (r == NGHTTP2_ERR_FLOODED)
                c->abuse = "control frame acknowledgements not read (flood)";
            else if (c->abuse == NULL)
                c->abuse = nghttp2_strerror((int)r);   /* static text */
            return -1;
        }
        /* A short plaintext read drained the socket: the next recv would
         * only say EAGAIN (a system call per event for nothing), and what
         * arrives later makes the level-triggered epoll call again. TLS
         * reads records and keeps their rest itself (`again`). */
        if (!c->tls && (size_t)n < sizeof buf)
            break;
    }
    return 0;
}

static void conn_event(once__h2_conn *c, uint32_t events)
{
    int bad = 0;
    if (c->dead)
        return;
    if (c->tls && !c->ready) {
        int r = handshake(c);
        if (r < 0) {
            conn_close(c);
            return;
        }
        if (r == 0)
            return;
        events |= EPOLLIN;
    }
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
        bad = conn_read(c) != 0;
    if (!bad)
        bad = once__h2_conn_flush(c) != 0;
    if (bad || conn_done(c))
        conn_close(c);
}

/* ------------------------------------------------------------ accepting */

static void peer_name(const struct sockaddr_storage *ss, char *ip, size_t iplen, char *peer,
                      size_t peerlen)
{
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
        port = ntohs(a->sin_port);
        snprintf(peer, peerlen, "%s:%d", host, port);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
        port = ntohs(a->sin6_port);
        snprintf(peer, peerlen, "[%s]:%d", host, port);
    } else {
        snprintf(peer, peerlen, "?");
    }
    snprintf(ip, iplen, "%s", host);
}

static void accept_one(once__h2_loop *l, int fd, const struct sockaddr_storage *ss)
{
    once__h2 *s = l->srv;
    once__h2_conn *c = once_calloc(1, sizeof *c);
    if (c == NULL) {
        close(fd);
        return;
    }
    c->loop = l;
    c->fd = fd;
    peer_name(ss, c->ip, sizeof c->ip, c->peer, sizeof c->peer);
    if (!admit(s, c)) {
        close(fd);
        once_free(c);
        return;
    }
    int64_t now = once_monotonic_ms();
    c->accepted_ms = c->idle_since = c->data_mark = c->sock_mark = c->win_start = now;
    c->ready = s->cfg.pick == NULL;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    once__list_append(&l->conns, &c->link);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    if ((s->cfg.pick && once__h2_tls_setup(s, c) != 0) || once__h2s_open(c) != ONCE_OK ||
        epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev);   /* so the close's DEL is harmless */
        conn_close(c);
        return;
    }
    if (c->ready && once__h2_conn_flush(c) != 0)
        conn_close(c);
}

static void accept_all(once__h2_loop *l)
{
    for (int i = 0; i < 64; i++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int fd = accept4(l->srv->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        accept_one(l, fd, &ss);
    }
}

/* ------------------------------------------------------------ the loop */

static void drain_kicks(once__h2_loop *l)
{
    uint64_t v;
    ssize_t r = read(l->evfd, &v, sizeof v);
    (void)r;
    pthread_mutex_lock(&l->kick_mu);
    once__h2_call **k = l->kicks;
    size_t n = l->nkicks;
    l->kicks = NULL;
    l->nkicks = l->kcap = 0;
    pthread_mutex_unlock(&l->kick_mu);
    for (size_t i = 0; i < n; i++) {
        once__h2_call *c = k[i];
        pthread_mutex_lock(&c->mu);
        c->kicked = 0;
        pthread_mutex_unlock(&c->mu);
        once__h2_conn *conn = c->conn;
        if (conn != NULL) {
            once__h2s_service(c);
            if (once__h2_conn_flush(conn) != 0 || conn_done(conn))
                conn_close(conn);
        }
        once__h2_call_unref(c);
    }
    once_free(k);
}

static void tick(once__h2_loop *l, int64_t now)
{
    const once__h2_config *cfg = &l->srv->cfg;
    for (once__link *k = l->conns.head, *next; k; k = next) {
        once__h2_conn *c = (once__h2_conn *)k;
        next = k->next;
        const char *why = NULL;
        if ((!c->ready || c->preface_seen < sizeof PREFACE - 1) &&
            now - c->accepted_ms >= cfg->request_timeout_ms)
            why = "no TLS handshake or HTTP/2 preface in time";
        if (why == NULL && c->ready && c->ng) {
            once__h2s_sweep(c, now);
            if (!once__h2s_pending(c))
                c->data_mark = now;
            if (c->out_off == c->out_len)
                c->sock_mark = now;
            if (now - c->data_mark >= cfg->write_stall_ms || now - c->sock_mark >= cfg->write_stall_ms)
                why = "output without progress (write stall)";
            else if (c->nstreams == 0 && now - c->idle_since >= cfg->idle_timeout_ms &&
                     nghttp2_session_want_read(c->ng))
                nghttp2_session_terminate_session(c->ng, NGHTTP2_NO_ERROR);
        }
        if (why != NULL) {
            c->abuse = why;
            conn_close(c);
            continue;
        }
        if (c->ready && (once__h2_conn_flush(c) != 0 || conn_done(c)))
            conn_close(c);
    }
}

static void *loop_main(void *arg)
{
    once__h2_loop *l = arg;
    int64_t last = once_monotonic_ms();
    struct epoll_event ev[64];
    while (!atomic_load(&l->srv->stopping)) {
        int again = 0;
        for (once__link *k = l->conns.head; k; k = k->next)
            again |= ((once__h2_conn *)k)->again;
        int n = epoll_wait(l->epfd, ev, 64, again ? 0 : TICK_MS);
        for (int i = 0; i < n; i++) {
            void *p = ev[i].data.ptr;
            if (p == &l->tag_listen)
                accept_all(l);
            else if (p == &l->tag_event)
                drain_kicks(l);
            else
                conn_event(p, ev[i].events);
        }
        if (again)
            for (once__link *k = l->conns.head, *next; k; k = next) {
                next = k->next;
                if (((once__h2_conn *)k)->again)
                    conn_event((once__h2_conn *)k, EPOLLIN);
            }
        int64_t now = once_monotonic_ms();
        if (now - last >= TICK_MS) {
            last = now;
            tick(l, now);
        }
        bury(l);
    }
    while (l->conns.head)
        conn_close((once__h2_conn *)l->conns.head);
    drain_kicks(l);
    bury(l);
    return NULL;
}

/* ----------------------------------------------------------- start, stop */

static int listen_on(once__h2 *s, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    char port[16];
    snprintf(port, sizeof port, "%d", s->cfg.port);
    int r = getaddrinfo(s->host, port, &hints, &ai);
    if (r != 0) {
        snprintf(err, errlen, "grpc: cannot resolve %s: %s", s->host, gai_strerror(r));
        return ONCE_EINVAL;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
        snprintf(err, errlen, "grpc: cannot listen on %s:%d: %s", s->host, s->cfg.port,
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return ONCE_EIO;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    s->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                             : ((struct sockaddr_in *)&ss)->sin_port);
    s->lfd = fd;
    return ONCE_OK;
}

static int loops_start(once__h2 *s)
{
    s->loops = once_calloc(s->cfg.threads, sizeof *s->loops);
    if (s->loops == NULL)
        return ONCE_ENOMEM;
    for (unsigned i = 0; i < s->cfg.threads; i++) {
        once__h2_loop *l = &s->loops[i];
        l->srv = s;
        pthread_mutex_init(&l->kick_mu, NULL);
        l->epfd = epoll_create1(EPOLL_CLOEXEC);
        l->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        struct epoll_event e1 = {.events = EPOLLIN | EPOLLEXCLUSIVE, .data.ptr = &l->tag_listen};
        struct epoll_event e2 = {.events = EPOLLIN, .data.ptr = &l->tag_event};
        if (l->epfd < 0 || l->evfd < 0 || epoll_ctl(l->epfd, EPOLL_CTL_ADD, s->lfd, &e1) != 0 ||
            epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->evfd, &e2) != 0 ||
            pthread_create(&l->thread, NULL, loop_main, l) != 0) {
            if (l->epfd >= 0)
                close(l->epfd);
            if (l->evfd >= 0)
                close(l->evfd);
            pthread_mutex_destroy(&l->kick_mu);
            return ONCE_EIO;
        }
        s->nloops++;
    }
    return ONCE_OK;
}

int once__h2_start(const once__h2_config *cfg, const once__h2_handler *handler, once__h2 **out,
                   char *err, size_t errlen)
{
    *out = NULL;
    if (handler == NULL || handler->on_call == NULL) {
        snprintf(err, errlen, "grpc: no handler");
        return ONCE_EINVAL;
    }
    once__h2 *s = once_calloc(1, sizeof *s);
    if (s == NULL)
        return ONCE_ENOMEM;
    s->cfg = *cfg;
    s->h = *handler;
    s->lfd = -1;
    pthread_mutex_init(&s->mu, NULL);
    int rc = resolve(&s->cfg, err, errlen);
    if (rc == ONCE_OK) {
        s->host = once_strdup(cfg->host ? cfg->host : "127.0.0.1");
        s->priority = once_strdup(cfg->tls_priority ? cfg->tls_priority
                                                    : ONCE_TLS_PRIORITY_DEFAULT);
        rc = s->host && s->priority ? ONCE_OK : ONCE_ENOMEM;
        s->cfg.host = s->host;
        s->cfg.tls_priority = s->priority;
    }
    if (rc == ONCE_OK && cfg->pick)
        rc = once__h2_tls_init(s, err, errlen);
    if (rc == ONCE_OK)
        rc = once__h2s_callbacks(&s->cbs);
    if (rc == ONCE_OK) {
        rc = nghttp2_option_new(&s->opt) == 0 ? ONCE_OK : ONCE_ENOMEM;
        if (rc == ONCE_OK) {
            nghttp2_option_set_max_settings(s->opt, 32);
            nghttp2_option_set_max_outbound_ack(s->opt, 1000);
        }
    }
    if (rc == ONCE_OK)
        rc = listen_on(s, err, errlen);
    if (rc == ONCE_OK) {
        rc = loops_start(s);
        if (rc != ONCE_OK)
            snprintf(err, errlen, "grpc: cannot start the loop threads");
    }
    if (rc != ONCE_OK) {
        once__h2_stop(s);
        return rc;
    }
    *out = s;
    return ONCE_OK;
}

int once__h2_port(const once__h2 *s)
{
    return s->port;
}

void once__h2_stop(once__h2 *s)
{
    if (s == NULL)
        return;
    atomic_store(&s->stopping, 1);
    for (unsigned i = 0; i < s->nloops; i++) {
        uint64_t one = 1;
        ssize_t w = write(s->loops[i].evfd, &one, sizeof one);
        (void)w;
    }
    for (unsigned i = 0; i < s->nloops; i++) {
        once__h2_loop *l = &s->loops[i];
        pthread_join(l->thread, NULL);
        close(l->epfd);
        close(l->evfd);
        pthread_mutex_destroy(&l->kick_mu);
    }
    once_free(s->loops);
    if (s->lfd >= 0)
        close(s->lfd);
    if (s->cbs)
        nghttp2_session_callbacks_del(s->cbs);
    if (s->opt)
        nghttp2_option_del(s->opt);
    once__h2_tls_free(s);
    once_free(s->host);
    once_free(s->priority);
    pthread_mutex_destroy(&s->mu);
    once_free(s);
}
