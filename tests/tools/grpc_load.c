/*
 * grpc_load.c -- a closed-loop load generator for bench/grpc.sh: new
 * blocking SendMessage calls over gRPC (h2c) or over JSON-RPC (HTTP/1.1
 * keep-alive), with the same loop, IDs, checks and clock for both, so that
 * the two rows' ratio compares the bindings and not two clients
 * (build/tools/grpc_load).
 *
 *   grpc_load -p PORT [-H HOST] [-m grpc|jsonrpc] [-k new|fresh] [-c CONNS]
 *             [-t THREADS] [-d SECONDS] [-w WARMUP_S] [-x PREFIX]
 *             [-T TIMEOUT_MS] [-n CALLS]
 *
 * Event-driven, so that the client's own CPU per call is small and the same
 * for both bindings: THREADS threads (2), each owning CONNS/THREADS of the
 * CONNS connections (64), each running one epoll loop over non-blocking
 * sockets. Per connection one call is in flight (closed loop): the answer
 * is checked, then the next call goes out. Only the framing differs per
 * binding (grpc_load/grpc.c with libnghttp2, grpc_load/jsonrpc.c; the
 * table in grpc_load/load.h). Request n of connection i:
 *   -k new    client-minted task: taskId = messageId = "<PREFIX>-<i>-<n>"
 *             (never repeated), with the idempotency extension (onced)
 *   -k fresh  messageId "<PREFIX>-<i>-<n>", no taskId: the server mints
 *             the task (the @a2a-js/sdk peer, which has no client-minted IDs)
 * and a ROLE_USER message with one text part "hello", no configuration
 * (blocking). gRPC: /lf.a2a.v1.A2AService/SendMessage, one stream per call
 * on a persistent connection, the request packed with protobuf-c, metadata
 * a2a-version: 1.0, (new) a2a-extensions: urn:once:a2a:idempotency:v1 and
 * grpc-timeout. JSON-RPC: POST / with bench/send.lua's body and headers.
 *
 * An answer counts as correct only when it is a Task in
 * TASK_STATE_COMPLETED carrying the sent taskId (new; fresh: any non-empty
 * id), not marked idempotent-replayed (a new task, not a retry's answer).
 * gRPC answers must be :status 200 with grpc-status 0 and exactly one
 * message, unpacked with protobuf-c; JSON-RPC answers must be HTTP 200 with
 * a Content-Length body holding no "error", the completed state and
 * "id":"<taskId>". Everything else is an error, by kind:
 *   status     gRPC status not OK / HTTP status not 200 / JSON-RPC error
 *   answer     OK, but not a completed Task with the sent id
 *   transport  the connection failed, or no answer within TIMEOUT_MS
 *              (5000); the connection is closed and, 10 ms later, made
 *              again for the next call
 * Calls started in the first WARMUP_S seconds (2) are made and checked but
 * not counted; then SECONDS (10) are measured: a call counts when it
 * started and ended inside the window; calls in flight at the end are
 * finished and checked, not counted. Prints one RESULT line (key=value,
 * times in ms; rps = correct answers / SECONDS) and, after any error, one
 * SAMPLE line describing the first. -n CALLS: instead of a time, each
 * connection makes CALLS calls, all counted, and seconds is how long they
 * took (bench/grpc.sh's callgrind windows). Exit 0 when every counted call
 * was correct, 1 otherwise, 2 on bad usage.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "grpc_load/load.h"

/* After a transport error: no busy loop against a server that is gone. */
#define RETRY_NS 10000000
#define RBUF 65536

const char *load_host = "127.0.0.1";
int load_port, load_fresh;
long load_timeout_ms = 5000;

static const load_binding *binding = &load_grpc;
static int conns = 64, nthreads = 2;
static double dur_s = 10, warm_s = 2;
static const char *prefix = "g";
static long ncalls;
static int64_t t_warm_end, t_end;   /* ns, CLOCK_MONOTONIC */
static struct sockaddr_storage addr;
static socklen_t addrlen;
static pthread_mutex_t sample_mu = PTHREAD_MUTEX_INITIALIZER;
static char sample[512];

enum { C_WAIT, C_CONNECTING, C_CALL, C_DONE };

/* One thread's loop: its connections and its counters. Only that thread
 * touches it until main joins the thread. */
typedef struct loop {
    pthread_t th;
    int ep;                        /* its epoll */
    lconn *c;                      /* its connections, nc of them */
    int nc, active;                /* active: not C_DONE */
    int64_t next_timer;            /* no timer fires before this; INT64_MAX: none */
    uint32_t *lat;                 /* µs of each counted correct call */
    size_t nlat, caplat;
    long ok, warm_ok, e_status, e_answer, e_transport, e_warm;
    uint8_t rbuf[RBUF];
} loop;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void load_note(const char *fmt, ...)
{
    pthread_mutex_lock(&sample_mu);
    if (sample[0] == '\0') {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(sample, sizeof sample, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&sample_mu);
}

int load_out(lconn *c, const void *p, size_t n)
{
    if (c->out_len + n > c->out_cap) {
        size_t nc = c->out_cap ? c->out_cap : 4096;
        while (nc < c->out_len + n)
            nc *= 2;
        uint8_t *nb = realloc(c->out, nc);
        if (nb == NULL)
            return -1;
        c->out = nb;
        c->out_cap = nc;
    }
    memcpy(c->out + c->out_len, p, n);
    c->out_len += n;
    return 0;
}

/* ------------------------------------------------------------ counting */

static void count(loop *lp, int64_t t0, int64_t t1, int r)
{
    if (t0 < t_warm_end || t1 > t_end) {
        if (r == CALL_OK)
            lp->warm_ok++;
        else
            lp->e_warm++;
        return;
    }
    if (r == CALL_OK) {
        if (lp->nlat == lp->caplat) {
            size_t nc = lp->caplat ? lp->caplat * 2 : 4096;
            uint32_t *nl = realloc(lp->lat, nc * sizeof *nl);
            if (nl == NULL)
                abort();
            lp->lat = nl;
            lp->caplat = nc;
        }
        lp->lat[lp->nlat++] = (uint32_t)((t1 - t0) / 1000);
        lp->ok++;
    } else if (r == CALL_STATUS) {
        lp->e_status++;
    } else if (r == CALL_ANSWER) {
        lp->e_answer++;
    } else {
        lp->e_transport++;
    }
}

/* -------------------------------------------------------- connections */

static void set_timer(lconn *c, int64_t at)
{
    c->timer = at;
    if (at < c->lp->next_timer)
        c->lp->next_timer = at;
}

static void watch(lconn *c, int op, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = c};
    if (epoll_ctl(c->lp->ep, op, c->fd, &ev) != 0) {
        perror("grpc_load: epoll_ctl");
        exit(1);
    }
}

static void conn_close(lconn *c)
{
    binding->close(c);
    if (c->fd >= 0)
        close(c->fd);   /* leaves the epoll set with it */
    c->fd = -1;
    c->out_len = c->out_off = 0;
    c->pollout = c->closing = 0;
}

/* Send what is queued; what the socket does not take waits for EPOLLOUT.
 * 0, or -1: the connection failed. */
static int flush(lconn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN) {
            if (!c->pollout)
                watch(c, EPOLL_CTL_MOD, EPOLLIN | EPOLLOUT);
            c->pollout = 1;
            return 0;
        }
        if (w <= 0) {
            load_note("transport: send: %s", strerror(errno));
            return -1;
        }
        c->out_off += (size_t)w;
    }
    c->out_len = c->out_off = 0;
    if (c->pollout)
        watch(c, EPOLL_CTL_MOD, EPOLLIN);
    c->pollout = 0;
    return 0;
}

static void call_begin(lconn *c);

/* The call in flight ended with verdict r: count it, then the next. */
static void call_end(lconn *c, int r)
{
    int64_t t1 = now_ns();
    count(c->lp, c->t0, t1, r);
    c->timer = 0;
    if (r == CALL_TRANSPORT) {
        conn_close(c);
        c->state = C_WAIT;
        set_timer(c, t1 + RETRY_NS);
        return;
    }
    if (c->closing)
        conn_close(c);
    call_begin(c);
}

/* The connection is up: the binding's session, then the call. */
static void call_send(lconn *c)
{
    c->state = C_CALL;
    if ((c->bs == NULL && binding->open(c) != 0) || binding->start(c) != 0 || flush(c) != 0)
        call_end(c, CALL_TRANSPORT);
}

static void dial(lconn *c)
{
    c->fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        load_note("transport: socket: %s", strerror(errno));
        call_end(c, CALL_TRANSPORT);
        return;
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(c->fd, (struct sockaddr *)&addr, addrlen) == 0) {
        watch(c, EPOLL_CTL_ADD, EPOLLIN);
        call_send(c);
    } else if (errno == EINPROGRESS) {
        watch(c, EPOLL_CTL_ADD, EPOLLOUT);
        c->state = C_CONNECTING;
    } else {
        load_note("transport: cannot connect to %s:%d (%s)", load_host, load_port, strerror(errno));
        call_end(c, CALL_TRANSPORT);
    }
}

static void connected(lconn *c)
{
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    if (err != 0) {
        load_note("transport: cannot connect to %s:%d (%s)", load_host, load_port, strerror(err));
        call_end(c, CALL_TRANSPORT);
        return;
    }
    watch(c, EPOLL_CTL_MOD, EPOLLIN);
    call_send(c);
}

/* The next call on c, or none when the run is over for it. */
static void call_begin(lconn *c)
{
    int64_t now = now_ns();
    if (ncalls ? c->n >= ncalls : now >= t_end) {
        conn_close(c);
        c->state = C_DONE;
        c->timer = 0;
        c->lp->active--;
        return;
    }
    c->n++;
    c->t0 = now;
    c->idlen = (size_t)snprintf(c->id, sizeof c->id, "%s-%d-%ld", prefix, c->idx, c->n);
    set_timer(c, now + load_timeout_ms * 1000000);
    if (c->fd < 0)
        dial(c);
    else
        call_send(c);
}

/* Bytes from the server, as many reads as the socket has ready. */
static void readable(lconn *c)
{
    uint8_t *buf = c->lp->rbuf;
    for (;;) {
        ssize_t r = recv(c->fd, buf, RBUF, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EAGAIN)
            return;
        if (r <= 0) {
            load_note("transport: %s",
                      r == 0 ? "the server closed the connection" : strerror(errno));
            call_end(c, CALL_TRANSPORT);
            return;
        }
        int v = binding->input(c, buf, (size_t)r);
        if (v != CALL_PENDING) {
            call_end(c, v);   /* what the binding queued goes with the next call */
            return;
        }
        if (flush(c) != 0) {
            call_end(c, CALL_TRANSPORT);
            return;
        }
        if (r < RBUF)
            return;
    }
}

static void event(lconn *c, uint32_t ev)
{
    if (c->state == C_CONNECTING) {
        connected(c);
        return;
    }
    if (c->state != C_CALL)
        return;
    if ((ev & EPOLLOUT) && flush(c) != 0) {
        call_end(c, CALL_TRANSPORT);
        return;
    }
    if (ev & (EPOLLIN | EPOLLERR | EPOLLHUP))
        readable(c);
}

/* Deadlines and retries that are due; next_timer becomes the earliest
 * left. The scan runs only when next_timer has passed. */
static void timers(loop *lp, int64_t now)
{
    if (now < lp->next_timer)
        return;
    lp->next_timer = INT64_MAX;
    for (int i = 0; i < lp->nc; i++) {
        lconn *c = &lp->c[i];
        if (c->timer != 0 && c->timer <= now) {
            if (c->state == C_WAIT) {
                c->timer = 0;
                call_begin(c);
            } else {
                load_note("transport: no answer within %ld ms", load_timeout_ms);
                call_end(c, CALL_TRANSPORT);
            }
        }
        if (c->timer != 0 && c->timer < lp->next_timer)
            lp->next_timer = c->timer;
    }
}

static void *run(void *arg)
{
    loop *lp = arg;
    struct epoll_event evs[64];
    for (int i = 0; i < lp->nc; i++)
        call_begin(&lp->c[i]);
    while (lp->active > 0) {
        int64_t now = now_ns();
        timers(lp, now);
        if (lp->active == 0)
            break;
        int ms = -1;
        if (lp->next_timer != INT64_MAX)
            ms = lp->next_timer <= now ? 0 : (int)((lp->next_timer - now + 999999) / 1000000);
        int n = epoll_wait(lp->ep, evs, 64, ms);
        if (n < 0 && errno != EINTR) {
            perror("grpc_load: epoll_wait");
            exit(1);
        }
        for (int i = 0; i < n; i++)
            event(evs[i].data.ptr, evs[i].events);
    }
    return NULL;
}

/* ---------------------------------------------------------------- main */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static double pct_ms(const uint32_t *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    size_t i = (size_t)(p / 100.0 * (double)n);
    if (i >= n)
        i = n - 1;
    return v[i] / 1000.0;
}

static _Noreturn void usage(void)
{
    fprintf(stderr, "usage: grpc_load -p PORT [-H HOST] [-m grpc|jsonrpc] [-k new|fresh] "
                    "[-c CONNS] [-t THREADS] [-d SECONDS] [-w WARMUP_S] [-x PREFIX] "
                    "[-T TIMEOUT_MS] [-n CALLS]\n");
    exit(2);
}

/* A whole decimal integer in [lo, hi], else usage(). */
static long int_arg(const char *v, long lo, long hi)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || end == v || *end || n < lo || n > hi)
        usage();
    return n;
}

static double sec_arg(const char *v)
{
    char *end;
    double d = strtod(v, &end);
    if (end == v || *end || !(d >= 0 && d < 86400))
        usage();
    return d;
}

static void options(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL || f[0] != '-' || f[1] == '\0' || f[2] != '\0')
            usage();
        i++;
        switch (f[1]) {
        case 'p': load_port = (int)int_arg(v, 1, 65535); break;
        case 'H': load_host = v; break;
        case 'm':
            if (strcmp(v, "grpc") && strcmp(v, "jsonrpc"))
                usage();
            binding = !strcmp(v, "grpc") ? &load_grpc : &load_jsonrpc;
            break;
        case 'k':
            if (strcmp(v, "new") && strcmp(v, "fresh"))
                usage();
            load_fresh = !strcmp(v, "fresh");
            break;
        case 'c': conns = (int)int_arg(v, 1, 4096); break;
        case 't': nthreads = (int)int_arg(v, 1, 256); break;
        case 'd': dur_s = sec_arg(v); break;
        case 'w': warm_s = sec_arg(v); break;
        case 'x': prefix = v; break;
        case 'T': load_timeout_ms = int_arg(v, 1, 3600000); break;
        case 'n': ncalls = int_arg(v, 1, 100000000); break;
        default: usage();
        }
    }
    if (load_port == 0 || dur_s <= 0 || strlen(prefix) > 64)
        usage();
    if (nthreads > conns)
        nthreads = conns;
    if (ncalls)   /* a count, not a time: every call counts */
        warm_s = 0, dur_s = 1e9;
}

/* The server's address, once for the run (every connection uses it). */
static int resolve(void)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", load_port);
    int r = getaddrinfo(load_host, ps, &hints, &ai);
    if (r != 0) {
        fprintf(stderr, "grpc_load: cannot resolve %s: %s\n", load_host, gai_strerror(r));
        return -1;
    }
    memcpy(&addr, ai->ai_addr, ai->ai_addrlen);
    addrlen = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

int main(int argc, char **argv)
{
    options(argc, argv);
    if (resolve() != 0 || binding->init() != 0)
        return 1;
    loop *lps = calloc((size_t)nthreads, sizeof *lps);
    lconn *cs = calloc((size_t)conns, sizeof *cs);
    if (lps == NULL || cs == NULL)
        return 1;
    int64_t t0 = now_ns();
    t_warm_end = t0 + (int64_t)(warm_s * 1e9);
    t_end = t_warm_end + (int64_t)(dur_s * 1e9);
    for (int t = 0, first = 0; t < nthreads; t++) {
        loop *lp = &lps[t];
        lp->nc = lp->active = conns / nthreads + (t < conns % nthreads);
        lp->c = cs + first;
        lp->next_timer = INT64_MAX;
        lp->ep = epoll_create1(EPOLL_CLOEXEC);
        if (lp->ep < 0) {
            perror("grpc_load: epoll_create1");
            return 1;
        }
        for (int k = 0; k < lp->nc; k++)
            cs[first + k] = (lconn){.lp = lp, .fd = -1, .idx = first + k};
        first += lp->nc;
    }
    for (int t = 0; t < nthreads; t++)
        if (pthread_create(&lps[t].th, NULL, run, &lps[t]) != 0) {
            fprintf(stderr, "grpc_load: cannot start thread %d\n", t);
            return 1;
        }
    long ok = 0, warm_ok = 0, es = 0, ea = 0, et = 0, ew = 0;
    size_t n = 0;
    for (int t = 0; t < nthreads; t++) {
        loop *lp = &lps[t];
        pthread_join(lp->th, NULL);
        ok += lp->ok, warm_ok += lp->warm_ok, es += lp->e_status;
        ea += lp->e_answer, et += lp->e_transport, ew += lp->e_warm;
        n += lp->nlat;
    }
    uint32_t *all = malloc((n ? n : 1) * sizeof *all);
    if (all == NULL)
        return 1;
    size_t k = 0;
    for (int t = 0; t < nthreads; t++) {
        if (lps[t].nlat)
            memcpy(all + k, lps[t].lat, lps[t].nlat * sizeof *all);
        k += lps[t].nlat;
        free(lps[t].lat);
        close(lps[t].ep);
    }
    qsort(all, n, sizeof *all, cmp_u32);
    if (ncalls)
        dur_s = (double)(now_ns() - t0) / 1e9;
    long errors = es + ea + et;
    printf("RESULT mode=%s kind=%s conns=%d seconds=%.3f ok=%ld rps=%.0f errors=%ld "
           "e_status=%ld e_answer=%ld e_transport=%ld warm_ok=%ld warm_errors=%ld "
           "p50_ms=%.3f p99_ms=%.3f max_ms=%.3f\n",
           binding->name, load_fresh ? "fresh" : "new", conns, dur_s, ok, (double)ok / dur_s,
           errors, es, ea, et, warm_ok, ew, pct_ms(all, n, 50), pct_ms(all, n, 99),
           n ? all[n - 1] / 1000.0 : 0.0);
    if (sample[0])
        printf("SAMPLE %s\n", sample);
    for (int i = 0; i < conns; i++)
        free(cs[i].out);
    free(all);
    free(cs);
    free(lps);
    return errors ? 1 : 0;
}
