/*
 * proxy.c -- a fault-injecting TCP proxy for tests and the demo.
 *
 *   proxy --listen PORT --to HOST:PORT [--to HOST:PORT ...]
 *         [--drop-response N[,M...]] [--drop-response-prob P --seed S]
 *         [--reset N[,M...]] [--delay MS [--delay-only N[,M...]]]
 *         [--drop-hold MS] [--log-header NAME] [--cut N[,M...] --cut-after BYTES]
 *
 * It carries real bytes and never forges an answer. Connections are
 * numbered from 1 in accept order (the once client opens one connection per
 * request, so connection N is its Nth request). Per connection:
 *   forward  both directions copied as they are;
 *   drop     the request is forwarded, the server's response is read and
 *            swallowed, and the client's connection closed: the server did
 *            the work, the client never hears of it;
 *   reset    the request is read, never forwarded, and the client's
 *            connection reset (RST): the server never sees it;
 *   cut      (--cut) the request is forwarded and the first BYTES bytes of
 *            the response (--cut-after) reach the client, whose connection
 *            then closes; the rest is read from the server and dropped: a
 *            stream cut mid-way, the server went on.
 * --delay holds each connection's first response bytes back for MS (only
 * those of the listed connections with --delay-only).
 * --drop-hold MS: a dropped connection stays open and silent for MS (or
 * until the client closes it) instead of closing at once, so the client
 * sees a lost answer as its own timeout, not as a closed connection.
 * Several --to: round robin by connection number, connection N going to
 * target (N - 1) mod count, like a load balancer in front of replicas.
 * Listens on 127.0.0.1 only; --listen 0 picks a free port. The port is
 * printed on stdout (one line) once listening; one line per connection
 * ("conn N forward|drop|reset", plus " to HOST:PORT" with several --to)
 * goes to stderr.
 * --log-header NAME taps the client's bytes as HTTP/1.x requests (framed by
 * Content-Length; keep-alive connections carry several) and logs one line
 * per request head: "conn N request METHOD TARGET[ NAME: VALUE]". It only
 * reads: the bytes are forwarded as they are. A head it cannot frame
 * (chunked body, over 16 KiB) ends the tap for that connection, logged.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "once/once.h"

#define MAX_LIST 256
#define MAX_TARGETS 16
#define TAP_HEAD_MAX 16384

enum { FORWARD, DROP, RESET, CUT };

/* Set once by main before the accept loop; read-only afterwards. */
static struct {
    struct {
        char host[256], port[16];
    } to[MAX_TARGETS];
    unsigned nto;
    const char *log_header;      /* --log-header NAME, or NULL: no tap */
    unsigned drop[MAX_LIST], ndrop, reset[MAX_LIST], nreset, delay_only[MAX_LIST], ndelay_only;
    unsigned cut[MAX_LIST], ncut;
    long long cut_after; /* --cut-after BYTES; -1 = not given */
    double drop_prob;
    once_seeded_rng rng;   /* used under rng_lock */
    int64_t delay_ms;
    int64_t drop_hold_ms;
} cfg;

static pthread_mutex_t rng_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

/* The request framer of --log-header: part of its connection, touched only
 * by the thread serving it. */
typedef struct tap {
    char head[TAP_HEAD_MAX];
    size_t len;                   /* bytes of the current request head so far */
    unsigned long long body_left; /* body bytes of the current request to skip */
    int off;                      /* gave up on this connection */
} tap;

/* One accepted connection; owned by the thread serving it. */
typedef struct conn {
    int fd;
    unsigned n;
    unsigned target;             /* index into cfg.to */
    int mode;
    int delay;                   /* hold the first response bytes back */
    tap *tap;                    /* NULL without --log-header */
} conn;

static int usage(const char *why)
{
    fprintf(stderr,
            "proxy: %s\nusage: proxy --listen PORT --to HOST:PORT [--to HOST:PORT ...]\n"
            "             [--drop-response N[,M...]] [--drop-response-prob P --seed S]\n"
            "             [--reset N[,M...]] [--delay MS [--delay-only N[,M...]]]\n"
            "             [--drop-hold MS] [--log-header NAME]\n"
            "             [--cut N[,M...] --cut-after BYTES]\n",
            why);
    return 2;
}

static int parse_list(const char *v, unsigned *out, unsigned *n)
{
    const char *p = v;
    while (*p) {
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (errno || end == p || x < 1 || *n == MAX_LIST)
            return -1;
        out[(*n)++] = (unsigned)x;
        if (*end == ',')
            end++;
        else if (*end != '\0')
            return -1;
        p = end;
    }
    return *n > 0 ? 0 : -1;
}

static int in_list(const unsigned *l, unsigned n, unsigned x)
{
    for (unsigned i = 0; i < n; i++)
        if (l[i] == x)
            return 1;
    return 0;
}

static void logf_conn(unsigned n, const char *what)
{
    pthread_mutex_lock(&log_lock);
    fprintf(stderr, "conn %u %s\n", n, what);
    fflush(stderr);
    pthread_mutex_unlock(&log_lock);
}

/* The value of header `name` in a request head (NUL-terminated), trimmed,
 * into out; 0 if absent. */
static int head_value(const char *head, const char *name, char *out, size_t outlen)
{
    size_t nlen = strlen(name);
    for (const char *p = strstr(head, "\r\n"); p != NULL; p = strstr(p + 2, "\r\n")) {
        const char *h = p + 2;
        if (strncasecmp(h, name, nlen) != 0 || h[nlen] != ':')
            continue;
        const char *v = h + nlen + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        const char *e = strstr(v, "\r\n");
        size_t vlen = e != NULL ? (size_t)(e - v) : strlen(v);
        while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
            vlen--;
        snprintf(out, outlen, "%.*s", (int)vlen, v);
        return 1;
    }
    return 0;
}

/* One complete request head (ending in CRLFCRLF): log it, learn its body
 * length. Returns -1 when the request cannot be framed. */
static int tap_head(conn *c, tap *t)
{
    t->head[t->len] = '\0';
    const char *eol = strstr(t->head, "\r\n");
    const char *sp1 = memchr(t->head, ' ', (size_t)(eol - t->head));
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
    if (sp1 == NULL || sp2 == NULL)
        return -1;
    char value[512], cl[32], te[64], line[1024];
    int n = snprintf(line, sizeof line, "request %.*s %.*s", (int)(sp1 - t->head), t->head,
                     (int)(sp2 - sp1 - 1), sp1 + 1);
    if (n > 0 && (size_t)n < sizeof line &&
        head_value(t->head, cfg.log_header, value, sizeof value))
        snprintf(line + n, sizeof line - (size_t)n, " %s: %s", cfg.log_header, value);
    logf_conn(c->n, line);
    if (head_value(t->head, "transfer-encoding", te, sizeof te))
        return -1;
    t->body_left = 0;
    if (head_value(t->head, "content-length", cl, sizeof cl)) {
        char *end;
        errno = 0;
        t->body_left = strtoull(cl, &end, 10);
        if (errno != 0 || end == cl || *end != '\0')
            return -1;
    }
    return 0;
}

/* Feed the client's bytes to the framer. */
static void tap_feed(conn *c, const char *buf, size_t n)
{
    tap *t = c->tap;
    while (t != NULL && !t->off && n > 0) {
        if (t->body_left > 0) {
            size_t k = n < t->body_left ? n : (size_t)t->body_left;
            t->body_left -= k;
            buf += k;
            n -= k;
            continue;
        }
        size_t room = sizeof t->head - 1 - t->len;
        size_t k = n < room ? n : room;
        size_t from = t->len > 3 ? t->len - 3 : 0;
        memcpy(t->head + t->len, buf, k);
        t->len += k;
        char *end = memmem(t->head + from, t->len - from, "\r\n\r\n", 4);
        if (end == NULL) {
            if (t->len == sizeof t->head - 1) {
                logf_conn(c->n, "request head too large: tap off");
                t->off = 1;
            }
            buf += k;
            n -= k;
            continue;
        }
        size_t head_len = (size_t)(end - t->head) + 4;
        size_t used = head_len - (t->len - k);   /* bytes of buf in this head */
        t->len = head_len;
        if (tap_head(c, t) != 0) {
            logf_conn(c->n, "request not framed by Content-Length: tap off");
            t->off = 1;
        }
        t->len = 0;
        buf += used;
        n -= used;
    }
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Keep a dropped connection open and silent for ms, or until the client
 * closes it; what the client sends meanwhile is read and discarded. */
static void hold_silent(int fd, int64_t ms)
{
    char buf[4096];
    int64_t until = mono_ms() + ms;
    for (;;) {
        int64_t left = until - mono_ms();
        if (left <= 0)
            return;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, left > 60000 ? 60000 : (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return;
        if (r > 0 && read(fd, buf, sizeof buf) <= 0)
            return;
    }
}

static int dial(unsigned target)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai, *a;
    if (getaddrinfo(cfg.to[target].host, cfg.to[target].port, &hints, &ai) != 0)
        return -1;
    int fd = -1;
    for (a = ai; a != NULL && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    return fd;
}

static void rst_close(int fd)
{
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    close(fd);
}

/* Copy both ways until both sides are done (or, dropping, until the first
 * response bytes arrive). */
static void pump(conn *c, int up)
{
    char buf[65536];
    int c_open = 1, u_open = 1, first = 1;
    long long passed = 0; /* response bytes forwarded (CUT) */
    int cut = 0;          /* the client's connection was cut */
    while (c_open || u_open) {
        struct pollfd p[2] = {{.fd = c_open ? c->fd : -1, .events = POLLIN},
                              {.fd = u_open ? up : -1, .events = POLLIN}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        if (p[0].revents) {
            ssize_t got = read(c->fd, buf, sizeof buf);
            if (got <= 0) {
                c_open = 0;
                shutdown(up, SHUT_WR);
            } else {
                tap_feed(c, buf, (size_t)got);
                for (ssize_t off = 0; off < got;) {
                    ssize_t w = write(up, buf + off, (size_t)(got - off));
                    if (w <= 0)
                        return;
                    off += w;
                }
            }
        }
        if (p[1].revents) {
            ssize_t got = read(up, buf, sizeof buf);
            if (got <= 0) {
                u_open = 0;
                shutdown(c->fd, SHUT_WR);
                continue;
            }
            if (c->mode == DROP) {
                /* the server answered; the client will not know */
                if (cfg.drop_hold_ms > 0)
                    hold_silent(c->fd, cfg.drop_hold_ms);
                return;
            }
            if (cut)
                continue; /* the rest of the answer is read and dropped */
            if (first && c->delay)
                sleep_ms(cfg.delay_ms);
            first = 0;
            int cut_now = c->mode == CUT && passed + got >= cfg.cut_after;
            if (cut_now)
                got = (ssize_t)(cfg.cut_after - passed);
            passed += got;
            for (ssize_t off = 0; off < got;) {
                ssize_t w = write(c->fd, buf + off, (size_t)(got - off));
                if (w <= 0)
                    return;
                off += w;
            }
            if (cut_now) {
                /* The client's connection ends here; the server's answer is
                 * still read to its end, so the server sees no reset. */
                shutdown(c->fd, SHUT_RDWR);
                c_open = 0;
                cut = 1;
            }
        }
    }
}

static void *serve(void *arg)
{
    conn *c = arg;
    static const char *const names[] = {"forward", "drop", "reset", "cut"};
    if (cfg.nto > 1) {
        char what[300];
        snprintf(what, sizeof what, "%s to %s:%s", names[c->mode], cfg.to[c->target].host,
                 cfg.to[c->target].port);
        logf_conn(c->n, what);
    } else {
        logf_conn(c->n, names[c->mode]);
    }
    if (c->mode == RESET) {
        char buf[4096];
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (poll(&p, 1, 5000) > 0) {
            ssize_t got = read(c->fd, buf, sizeof buf);
            (void)got;
        }
        rst_close(c->fd);
        once_free(c->tap);
        once_free(c);
        return NULL;
    }
    int up = dial(c->target);
    if (up < 0) {
        logf_conn(c->n, "upstream unreachable");
        rst_close(c->fd);
        once_free(c->tap);
        once_free(c);
        return NULL;
    }
    pump(c, up);
    close(up);
    close(c->fd);
    once_free(c->tap);
    once_free(c);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *listen_s = NULL;
    int have_seed = 0;
    cfg.cut_after = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0) {
            usage("a fault-injecting TCP proxy");
            return 0;
        }
        if (v == NULL)
            return usage("every option takes a value");
        i++;
        char *end;
        if (strcmp(a, "--listen") == 0) {
            listen_s = v;
        } else if (strcmp(a, "--to") == 0) {
            if (cfg.nto == MAX_TARGETS)
                return usage("--to: at most 16 targets");
            const char *colon = strrchr(v, ':');
            if (colon == NULL || colon == v || (size_t)(colon - v) >= sizeof cfg.to[0].host ||
                strlen(colon + 1) >= sizeof cfg.to[0].port)
                return usage("--to HOST:PORT");
            memcpy(cfg.to[cfg.nto].host, v, (size_t)(colon - v));
            cfg.to[cfg.nto].host[colon - v] = '\0';
            memcpy(cfg.to[cfg.nto].port, colon + 1, strlen(colon + 1) + 1);
            cfg.nto++;
        } else if (strcmp(a, "--drop-hold") == 0) {
            errno = 0;
            cfg.drop_hold_ms = strtoll(v, &end, 10);
            if (errno || *end != '\0' || cfg.drop_hold_ms < 0)
                return usage("--drop-hold: milliseconds");
        } else if (strcmp(a, "--log-header") == 0) {
            if (v[0] == '\0' || strpbrk(v, ": \t\r\n") != NULL)
                return usage("--log-header: a header name");
            cfg.log_header = v;
        } else if (strcmp(a, "--drop-response") == 0) {
            if (parse_list(v, cfg.drop, &cfg.ndrop) != 0)
                return usage("--drop-response: a list of connection numbers (1,3,...)");
        } else if (strcmp(a, "--cut") == 0) {
            if (parse_list(v, cfg.cut, &cfg.ncut) != 0)
                return usage("--cut: a list of connection numbers (1,3,...)");
        } else if (strcmp(a, "--cut-after") == 0) {
            errno = 0;
            cfg.cut_after = strtoll(v, &end, 10);
            if (errno || *end != '\0' || cfg.cut_after < 0)
                return usage("--cut-after: a number of bytes");
        } else if (strcmp(a, "--reset") == 0) {
            if (parse_list(v, cfg.reset, &cfg.nreset) != 0)
                return usage("--reset: a list of connection numbers (1,3,...)");
        } else if (strcmp(a, "--delay-only") == 0) {
            if (parse_list(v, cfg.delay_only, &cfg.ndelay_only) != 0)
                return usage("--delay-only: a list of connection numbers (1,3,...)");
        } else if (strcmp(a, "--drop-response-prob") == 0) {
            cfg.drop_prob = strtod(v, &end);
            if (*end != '\0' || cfg.drop_prob < 0 || cfg.drop_prob > 1)
                return usage("--drop-response-prob: a probability in [0, 1]");
        } else if (strcmp(a, "--seed") == 0) {
            errno = 0;
            unsigned long long s = strtoull(v, &end, 10);
            if (errno || *end != '\0')
                return usage("--seed: a number");
            once_seeded_rng_init(&cfg.rng, s);
            have_seed = 1;
        } else if (strcmp(a, "--delay") == 0) {
            errno = 0;
            cfg.delay_ms = strtoll(v, &end, 10);
            if (errno || *end != '\0' || cfg.delay_ms < 0)
                return usage("--delay: milliseconds");
        } else {
            return usage("unknown option");
        }
    }
    if (listen_s == NULL || cfg.nto == 0)
        return usage("--listen and --to are required");
    if ((cfg.ncut > 0) != (cfg.cut_after >= 0))
        return usage("--cut and --cut-after go together");
    if (cfg.drop_prob > 0 && !have_seed)
        return usage("--drop-response-prob needs --seed (runs must be reproducible)");
    char *end;
    long lport = strtol(listen_s, &end, 10);
    if (*end != '\0' || lport < 0 || lport > 65535)
        return usage("--listen PORT (0 = any free port)");

    signal(SIGPIPE, SIG_IGN);
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)lport),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t slen = sizeof sa;
    if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(ls, 128) != 0 ||
        getsockname(ls, (struct sockaddr *)&sa, &slen) != 0) {
        fprintf(stderr, "proxy: cannot listen on port %ld: %s\n", lport, strerror(errno));
        return 1;
    }
    printf("%u\n", (unsigned)ntohs(sa.sin_port));
    fflush(stdout);

    for (unsigned n = 1;; n++) {
        int fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE) {
                n--;
                continue;
            }
            return 1;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        conn *c = once_calloc(1, sizeof *c);
        if (c == NULL) {
            close(fd);
            continue;
        }
        c->fd = fd;
        c->n = n;
        c->target = (n - 1) % cfg.nto;
        c->mode = FORWARD;
        if (cfg.log_header != NULL && (c->tap = once_calloc(1, sizeof *c->tap)) == NULL) {
            close(fd);
            once_free(c);
            continue;
        }
        c->delay = cfg.delay_ms > 0 && (cfg.ndelay_only == 0 || in_list(cfg.delay_only, cfg.ndelay_only, n));
        if (in_list(cfg.reset, cfg.nreset, n)) {
            c->mode = RESET;
        } else if (in_list(cfg.drop, cfg.ndrop, n)) {
            c->mode = DROP;
        } else if (in_list(cfg.cut, cfg.ncut, n)) {
            c->mode = CUT;
        } else if (cfg.drop_prob > 0) {
            uint64_t u = 0;
            pthread_mutex_lock(&rng_lock);
            once_rng_uniform(&cfg.rng.base, 1000000, &u);
            pthread_mutex_unlock(&rng_lock);
            if ((double)u < cfg.drop_prob * 1000000.0)
                c->mode = DROP;
        }
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &at, serve, c) != 0) {
            close(fd);
            once_free(c->tap);
            once_free(c);
        }
        pthread_attr_destroy(&at);
    }
}
