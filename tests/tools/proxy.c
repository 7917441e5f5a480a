/*
 * proxy.c -- a fault-injecting TCP proxy for tests and the demo.
 *
 *   proxy --listen PORT --to HOST:PORT [--drop-response N[,M...]]
 *         [--drop-response-prob P --seed S] [--reset N[,M...]]
 *         [--delay MS [--delay-only N[,M...]]]
 *
 * It carries real bytes and never forges an answer. Connections are
 * numbered from 1 in accept order (the once client opens one connection per
 * request, so connection N is its Nth request). Per connection:
 *   forward  both directions copied as they are;
 *   drop     the request is forwarded, the server's response is read and
 *            swallowed, and the client's connection closed: the server did
 *            the work, the client never hears of it;
 *   reset    the request is read, never forwarded, and the client's
 *            connection reset (RST): the server never sees it.
 * --delay holds each connection's first response bytes back for MS (only
 * those of the listed connections with --delay-only).
 * Listens on 127.0.0.1 only; --listen 0 picks a free port. The port is
 * printed on stdout (one line) once listening; one line per connection
 * ("conn N forward|drop|reset") goes to stderr.
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
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "once/once.h"

#define MAX_LIST 256

enum { FORWARD, DROP, RESET };

/* Set once by main before the accept loop; read-only afterwards. */
static struct {
    char host[256], port[16];
    unsigned drop[MAX_LIST], ndrop, reset[MAX_LIST], nreset, delay_only[MAX_LIST], ndelay_only;
    double drop_prob;
    once_seeded_rng rng;   /* used under rng_lock */
    int64_t delay_ms;
} cfg;

static pthread_mutex_t rng_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

/* One accepted connection; owned by the thread serving it. */
typedef struct conn {
    int fd;
    unsigned n;
    int mode;
    int delay;                   /* hold the first response bytes back */
} conn;

static int usage(const char *why)
{
    fprintf(stderr, "proxy: %s\nusage: proxy --listen PORT --to HOST:PORT [--drop-response N[,M...]]\n"
                    "             [--drop-response-prob P --seed S] [--reset N[,M...]]\n"
                    "             [--delay MS [--delay-only N[,M...]]]\n",
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

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int dial(void)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai, *a;
    if (getaddrinfo(cfg.host, cfg.port, &hints, &ai) != 0)
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
            if (c->mode == DROP)
                return;   /* the server answered; the client will not know */
            if (first && c->delay)
                sleep_ms(cfg.delay_ms);
            first = 0;
            for (ssize_t off = 0; off < got;) {
                ssize_t w = write(c->fd, buf + off, (size_t)(got - off));
                if (w <= 0)
                    return;
                off += w;
            }
        }
    }
}

static void *serve(void *arg)
{
    conn *c = arg;
    static const char *const names[] = {"forward", "drop", "reset"};
    logf_conn(c->n, names[c->mode]);
    if (c->mode == RESET) {
        char buf[4096];
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (poll(&p, 1, 5000) > 0) {
            ssize_t got = read(c->fd, buf, sizeof buf);
            (void)got;
        }
        rst_close(c->fd);
        once_free(c);
        return NULL;
    }
    int up = dial();
    if (up < 0) {
        logf_conn(c->n, "upstream unreachable");
        rst_close(c->fd);
        once_free(c);
        return NULL;
    }
    pump(c, up);
    close(up);
    close(c->fd);
    once_free(c);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *listen_s = NULL, *to = NULL;
    int have_seed = 0;
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
            to = v;
        } else if (strcmp(a, "--drop-response") == 0) {
            if (parse_list(v, cfg.drop, &cfg.ndrop) != 0)
                return usage("--drop-response: a list of connection numbers (1,3,...)");
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
    if (listen_s == NULL || to == NULL)
        return usage("--listen and --to are required");
    if (cfg.drop_prob > 0 && !have_seed)
        return usage("--drop-response-prob needs --seed (runs must be reproducible)");
    const char *colon = strrchr(to, ':');
    if (colon == NULL || colon == to || (size_t)(colon - to) >= sizeof cfg.host ||
        strlen(colon + 1) >= sizeof cfg.port)
        return usage("--to HOST:PORT");
    memcpy(cfg.host, to, (size_t)(colon - to));
    cfg.host[colon - to] = '\0';
    memcpy(cfg.port, colon + 1, strlen(colon + 1) + 1);
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
        c->mode = FORWARD;
        c->delay = cfg.delay_ms > 0 && (cfg.ndelay_only == 0 || in_list(cfg.delay_only, cfg.ndelay_only, n));
        if (in_list(cfg.reset, cfg.nreset, n)) {
            c->mode = RESET;
        } else if (in_list(cfg.drop, cfg.ndrop, n)) {
            c->mode = DROP;
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
            once_free(c);
        }
        pthread_attr_destroy(&at);
    }
}
