/*
 * paced.c -- an open-loop (paced) load generator for bench/p99.sh: what
 * wrk2 does, for the one request the bench needs.
 *
 *   paced -p PORT -r RATE -d SECONDS [-w WARMUP_S] [-c CONNS] [-m block|ri|replay]
 *         [-x PREFIX] [-t DRAIN_S] [-o CDF_FILE]
 *
 * Request i is due at start + i / RATE whatever happened to the ones before
 * it (open loop). It goes out on an idle keep-alive connection to
 * 127.0.0.1:PORT as soon as it is due and one is free; when none is free it
 * waits, and that wait counts: latency is measured from the request's
 * *scheduled* time to the end of its answer, so a stall of the server shows
 * in every request that should have gone out during it (no coordinated
 * omission). Requests due in the first WARMUP_S seconds are sent but not
 * recorded.
 *
 * Each request is the JSON-RPC SendMessage of bench/send.lua's "new" mode:
 * a fresh client-minted task (taskId = messageId = "<PREFIX>-<i>", with
 * A2A-Extensions: urn:once:a2a:idempotency:v1), blocking (-m block, the
 * default) or with returnImmediately (-m ri); or, with -m replay, the same
 * request every time (taskId = messageId = "<PREFIX>", blocking), which the
 * caller has sent once before, so that each one is a replay. Every answer is
 * checked: HTTP 200 with a Content-Length body, no JSON-RPC "error", in
 * block and replay modes a completed task, and in replay mode the header
 * Idempotent-Replayed: true. Anything else is counted as an error, by kind.
 *
 * Latencies go into a log-linear histogram (HdrHistogram's layout: 64
 * linear sub-buckets per power of two, so a percentile is within 1/64 of
 * the true value). Prints one RESULT line (key=value; times in ms) that
 * p99.sh parses. With -o, it also writes the recorded latencies' CDF to
 * CDF_FILE for bench/plot.sh: the RESULT line as a "#" comment, then one
 * line "latency_ms fraction" per non-empty histogram slot (the slot's top,
 * as percentiles are reported, and the fraction of requests at or below it). A bench tool built by p99.sh with gcc alone, like
 * mhd_hello.c: single-threaded, epoll, plain malloc.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ histogram */

#define H_SUB_BITS 6                      /* 64 sub-buckets per power of two */
#define H_SUB (1u << H_SUB_BITS)
#define H_SLOTS ((64 - H_SUB_BITS + 1) * H_SUB)

/* Counts of latencies in µs. Values below 2*H_SUB are exact; above, slot
 * (shift + 1) * H_SUB + (v >> shift) - H_SUB holds [m << shift, (m+1) << shift). */
typedef struct hist {
    uint64_t n[H_SLOTS];
    uint64_t total, max;
} hist;

static size_t h_slot(uint64_t v)
{
    if (v < 2 * H_SUB)
        return (size_t)v;
    unsigned shift = (unsigned)(63 - __builtin_clzll(v)) - H_SUB_BITS;
    return (size_t)(shift + 1) * H_SUB + (size_t)(v >> shift) - H_SUB;
}

/* The highest value slot s can hold (what a percentile reports: never low). */
static uint64_t h_top(size_t s)
{
    if (s < 2 * H_SUB)
        return s;
    unsigned shift = (unsigned)(s / H_SUB) - 1;
    uint64_t m = s % H_SUB + H_SUB;
    return ((m + 1) << shift) - 1;
}

static void h_add(hist *h, uint64_t v)
{
    h->n[h_slot(v)]++;
    h->total++;
    if (v > h->max)
        h->max = v;
}

/* The value at or below which q (0..1) of the recorded values lie, in µs. */
static uint64_t h_quantile(const hist *h, double q)
{
    if (h->total == 0)
        return 0;
    uint64_t want = (uint64_t)(q * (double)h->total + 0.999999), seen = 0;
    if (want == 0)
        want = 1;
    for (size_t s = 0; s < H_SLOTS; s++) {
        seen += h->n[s];
        if (seen >= want)
            return h_top(s) < h->max ? h_top(s) : h->max;
    }
    return h->max;
}

/* Write h's CDF to path after the comment line `head`; 0 or -1 (errno set). */
static int h_write_cdf(const hist *h, const char *path, const char *head)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "# %s# latency_ms fraction_at_or_below\n", head);
    uint64_t seen = 0;
    for (size_t s = 0; s < H_SLOTS && seen < h->total; s++) {
        if (!h->n[s])
            continue;
        seen += h->n[s];
        uint64_t top = h_top(s) < h->max ? h_top(s) : h->max;
        fprintf(f, "%.3f %.6f\n", (double)top / 1e3, (double)seen / (double)h->total);
    }
    return fclose(f) == 0 ? 0 : -1;
}

/* ------------------------------------------------------------------ connections */

#define BUF_CAP 65536

typedef struct conn {
    int fd;
    int up;                   /* connected: the first EPOLLOUT came */
    int busy;                 /* a request is out and its answer not yet in */
    uint64_t sched_ns;        /* the scheduled time of that request */
    int recorded;             /* counts in the histogram (after warm-up) */
    char out[2048];
    size_t out_len, out_off;
    char in[BUF_CAP];
    size_t in_len;
} conn;

typedef struct stats {
    uint64_t sent, ok, http, rpc_err, not_done, not_replayed, closed, bad_reply, connect, timeout;
} stats;

static struct {
    int port, conns, block, replay;
    double rate, seconds, warmup, drain;
    const char *prefix, *cdf_file;
} opt = {0, 64, 1, 0, 0, 0, 0, 10, "paced", NULL};

static int g_ep = -1;
static hist g_hist;
static stats g_st;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int conn_open(conn *c)
{
    struct sockaddr_in a;
    int one = 1;

    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        return -1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)opt.port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(c->fd, (struct sockaddr *)&a, sizeof a) != 0 && errno != EINPROGRESS) {
        close(c->fd);
        c->fd = -1;
        return -1;
    }
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLET, .data.ptr = c};
    if (epoll_ctl(g_ep, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
        close(c->fd);
        c->fd = -1;
        return -1;
    }
    c->busy = c->up = 0;
    c->in_len = c->out_len = c->out_off = 0;
    return 0;
}

/* Drop the connection (its request, if any, was counted by the caller) and
 * open a fresh one in its place. */
static void conn_reset(conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->busy = 0;
    if (conn_open(c) != 0)
        g_st.connect++;
}

static void finish(conn *c, int ok)
{
    uint64_t lat_us = (now_ns() - c->sched_ns) / 1000;
    if (ok)
        g_st.ok++;
    if (c->recorded)
        h_add(&g_hist, lat_us);
    c->busy = 0;
}

static int conn_flush(conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (w < 0 && errno == EAGAIN)
            return 0;
        if (w <= 0)
            return -1;
        c->out_off += (size_t)w;
    }
    return 0;
}

static int start(conn *c, uint64_t i, uint64_t sched_ns, int recorded)
{
    char body[512], id[96];
    int bl;

    if (opt.replay)
        snprintf(id, sizeof id, "%s", opt.prefix);
    else
        snprintf(id, sizeof id, "%s-%" PRIu64, opt.prefix, i);
    bl = snprintf(body, sizeof body,
                  "{\"jsonrpc\":\"2.0\",\"id\":%" PRIu64 ",\"method\":\"SendMessage\","
                  "\"params\":{\"message\":{\"messageId\":\"%s\",\"taskId\":\"%s\","
                  "\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"hello\"}]}%s}}",
                  i, id, id, opt.block ? "" : ",\"configuration\":{\"returnImmediately\":true}");
    int n = snprintf(c->out, sizeof c->out,
                     "POST / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                     "A2A-Version: 1.0\r\nA2A-Extensions: urn:once:a2a:idempotency:v1\r\n"
                     "Content-Length: %d\r\n\r\n%s",
                     opt.port, bl, body);
    c->out_len = (size_t)n;
    c->out_off = 0;
    c->in_len = 0;
    c->busy = 1;
    c->sched_ns = sched_ns;
    c->recorded = recorded;
    g_st.sent++;
    return conn_flush(c);
}

/* Case-insensitive header value after "\r\n<name>:" within head[0..len). */
static const char *header(const char *head, size_t len, const char *name)
{
    size_t nl = strlen(name);
    for (size_t i = 0; i + 2 + nl < len; i++) {
        if (head[i] == '\r' && head[i + 1] == '\n' && strncasecmp(head + i + 2, name, nl) == 0 &&
            head[i + 2 + nl] == ':') {
            const char *v = head + i + 3 + nl;
            while (*v == ' ')
                v++;
            return v;
        }
    }
    return NULL;
}

/* 1 if the head carries Idempotent-Replayed: true. */
static int replayed(const char *head, size_t len)
{
    const char *v = header(head, len, "Idempotent-Replayed");
    return v != NULL && strncasecmp(v, "true", 4) == 0;
}

/* Has c->in a whole answer? 1 = judged and finished, 0 = not yet, -1 = the
 * connection must go (malformed, or the server closes it). */
static int try_reply(conn *c)
{
    char *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
    if (!end)
        return c->in_len == BUF_CAP ? -1 : 0;
    size_t head = (size_t)(end - c->in) + 4;
    const char *cl = header(c->in, head, "Content-Length");
    if (!cl || strncmp(c->in, "HTTP/1.1 ", 9) != 0) {
        g_st.bad_reply++;
        finish(c, 0);
        return -1;
    }
    size_t blen = (size_t)strtoul(cl, NULL, 10);
    if (head + blen > BUF_CAP) {
        g_st.bad_reply++;
        finish(c, 0);
        return -1;
    }
    if (c->in_len < head + blen)
        return 0;
    long status = strtol(c->in + 9, NULL, 10);
    const char *body = c->in + head;
    int ok = 0;
    if (status != 200)
        g_st.http++;
    else if (memmem(body, blen, "\"error\"", 7))
        g_st.rpc_err++;
    else if (opt.block && !memmem(body, blen, "TASK_STATE_COMPLETED", 20))
        g_st.not_done++;
    else if (opt.replay && !replayed(c->in, head))
        g_st.not_replayed++;
    else
        ok = 1;
    finish(c, ok);
    const char *close_hdr = header(c->in, head, "Connection");
    int closing = close_hdr && strncasecmp(close_hdr, "close", 5) == 0;
    if (c->in_len > head + blen) {   /* the server never sends unasked */
        g_st.bad_reply++;
        return -1;
    }
    c->in_len = 0;
    return closing ? -1 : 1;
}

static void on_event(conn *c, uint32_t events)
{
    if (events & EPOLLOUT) {
        c->up = 1;
        if (c->busy && conn_flush(c) != 0) {
            g_st.closed++;
            finish(c, 0);
            conn_reset(c);
            return;
        }
    }
    if (!(events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
        return;
    for (;;) {
        ssize_t r = recv(c->fd, c->in + c->in_len, BUF_CAP - c->in_len, 0);
        if (r < 0 && errno == EAGAIN)
            return;
        if (r <= 0 || !c->busy) {   /* closed, failed, or bytes nobody asked for */
            if (c->busy) {
                g_st.closed++;
                finish(c, 0);
            }
            conn_reset(c);
            return;
        }
        c->in_len += (size_t)r;
        int v = try_reply(c);
        if (v < 0) {
            conn_reset(c);
            return;
        }
    }
}

static void usage(void)
{
    fprintf(stderr, "usage: paced -p PORT -r RATE -d SECONDS [-w WARMUP_S] [-c CONNS] "
                    "[-m block|ri|replay] [-x PREFIX] [-t DRAIN_S] [-o CDF_FILE]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    int o;
    while ((o = getopt(argc, argv, "p:r:d:w:c:m:x:t:o:")) != -1) {
        switch (o) {
        case 'p': opt.port = (int)strtol(optarg, NULL, 10); break;
        case 'r': opt.rate = strtod(optarg, NULL); break;
        case 'd': opt.seconds = strtod(optarg, NULL); break;
        case 'w': opt.warmup = strtod(optarg, NULL); break;
        case 'c': opt.conns = (int)strtol(optarg, NULL, 10); break;
        case 'm':
            if (strcmp(optarg, "block") != 0 && strcmp(optarg, "ri") != 0 &&
                strcmp(optarg, "replay") != 0) {
                fprintf(stderr, "paced: -m is block, ri or replay, not \"%s\"\n", optarg);
                return 2;
            }
            opt.block = strcmp(optarg, "ri") != 0;
            opt.replay = strcmp(optarg, "replay") == 0;
            break;
        case 'x': opt.prefix = optarg; break;
        case 't': opt.drain = strtod(optarg, NULL); break;
        case 'o': opt.cdf_file = optarg; break;
        default: usage();
        }
    }
    if (opt.port <= 0 || opt.rate <= 0 || opt.seconds <= 0 || opt.conns <= 0 || opt.warmup < 0)
        usage();
    signal(SIGPIPE, SIG_IGN);
    g_ep = epoll_create1(EPOLL_CLOEXEC);
    conn *cs = calloc((size_t)opt.conns, sizeof *cs);
    if (g_ep < 0 || !cs) {
        perror("paced");
        return 1;
    }
    for (int i = 0; i < opt.conns; i++)
        if (conn_open(&cs[i]) != 0) {
            perror("paced: connect");
            return 1;
        }

    const double interval_ns = 1e9 / opt.rate;
    const uint64_t total = (uint64_t)((opt.warmup + opt.seconds) * opt.rate);
    const uint64_t first_rec = (uint64_t)(opt.warmup * opt.rate);
    uint64_t next = 0;            /* index of the next request to send */
    uint64_t t0 = now_ns() + 10000000ull, deadline = 0;
    uint64_t max_lag_ns = 0;      /* how late a request left, at worst */
    int rr = 0;                   /* round-robin start for the idle search */
    struct epoll_event evs[256];

    for (;;) {
        uint64_t now = now_ns();
        /* Send everything due, as long as a connection is free. */
        while (next < total) {
            uint64_t due = t0 + (uint64_t)((double)next * interval_ns);
            if (due > now)
                break;
            conn *c = NULL;
            for (int k = 0; k < opt.conns && !c; k++) {
                conn *x = &cs[(rr + k) % opt.conns];
                if (!x->busy && x->up)
                    c = x;
            }
            if (!c)
                break;
            rr = (int)((c - cs) + 1) % opt.conns;
            if (now - due > max_lag_ns)
                max_lag_ns = now - due;
            if (start(c, next, due, next >= first_rec) != 0) {
                g_st.closed++;
                finish(c, 0);
                conn_reset(c);
            }
            next++;
        }
        int busy = 0;
        for (int k = 0; k < opt.conns; k++)
            busy += cs[k].busy;
        if (next >= total && !deadline)
            deadline = now + (uint64_t)(opt.drain * 1e9);
        if (next >= total && (busy == 0 || now >= deadline))
            break;

        /* Sleep until the next request is due or an answer comes. */
        struct timespec ts = {0, 0}, *tp = NULL;
        if (next < total) {
            uint64_t due = t0 + (uint64_t)((double)next * interval_ns), wait = 0;
            int idle = 0;
            for (int k = 0; k < opt.conns && !idle; k++)
                idle = !cs[k].busy && cs[k].up;
            if (idle) {
                wait = due > now ? due - now : 0;
                ts.tv_sec = (time_t)(wait / 1000000000ull);
                ts.tv_nsec = (long)(wait % 1000000000ull);
                tp = &ts;
            }
        } else {
            uint64_t wait = deadline - now;
            ts.tv_sec = (time_t)(wait / 1000000000ull);
            ts.tv_nsec = (long)(wait % 1000000000ull);
            tp = &ts;
        }
        int n = epoll_pwait2(g_ep, evs, 256, tp, NULL);
        if (n < 0 && errno != EINTR) {
            perror("paced: epoll_pwait2");
            return 1;
        }
        for (int k = 0; k < n; k++)
            on_event(evs[k].data.ptr, evs[k].events);
    }
    for (int k = 0; k < opt.conns; k++)
        if (cs[k].busy) {
            g_st.timeout++;
            if (cs[k].recorded)   /* it took at least this long: never hide it */
                h_add(&g_hist, (now_ns() - cs[k].sched_ns) / 1000);
        }

    double secs = (double)(now_ns() - t0) / 1e9;
    uint64_t errs = g_st.http + g_st.rpc_err + g_st.not_done + g_st.not_replayed + g_st.closed +
                    g_st.bad_reply +
                    g_st.connect + g_st.timeout;
    char result[1024];
    snprintf(result, sizeof result,
             "RESULT rate=%.0f seconds=%.1f warmup=%.1f conns=%d sent=%" PRIu64 " ok=%" PRIu64
             " recorded=%" PRIu64 " achieved_rps=%.0f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f"
             " p999_ms=%.3f max_ms=%.3f max_send_lag_ms=%.3f errors=%" PRIu64 " http=%" PRIu64
             " rpc_err=%" PRIu64 " not_done=%" PRIu64 " not_replayed=%" PRIu64 " closed=%" PRIu64
             " bad_reply=%" PRIu64
             " connect=%" PRIu64 " timeout=%" PRIu64 "\n",
             opt.rate, opt.seconds, opt.warmup, opt.conns, g_st.sent, g_st.ok, g_hist.total,
             (double)g_st.sent / secs, h_quantile(&g_hist, 0.50) / 1e3,
             h_quantile(&g_hist, 0.90) / 1e3, h_quantile(&g_hist, 0.99) / 1e3,
             h_quantile(&g_hist, 0.999) / 1e3, g_hist.max / 1e3, max_lag_ns / 1e6, errs,
             g_st.http, g_st.rpc_err, g_st.not_done, g_st.not_replayed, g_st.closed, g_st.bad_reply,
             g_st.connect,
             g_st.timeout);
    fputs(result, stdout);
    if (opt.cdf_file && h_write_cdf(&g_hist, opt.cdf_file, result) != 0) {
        perror(opt.cdf_file);
        return 1;
    }
    return errs ? 3 : 0;
}
