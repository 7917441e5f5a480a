/*
 * grpc_load.c -- a closed-loop load generator for bench/grpc.sh: new
 * blocking SendMessage calls over gRPC (h2c) or over JSON-RPC (HTTP/1.1
 * keep-alive), with the same threads, IDs, checks and clock for both, so
 * that the two rows' ratio compares the bindings and not two clients
 * (build/tools/grpc_load).
 *
 *   grpc_load -p PORT [-H HOST] [-m grpc|jsonrpc] [-k new|fresh] [-c CONNS]
 *             [-d SECONDS] [-w WARMUP_S] [-x PREFIX] [-T TIMEOUT_MS] [-n CALLS]
 *
 * Each of the CONNS connections (64) has its own thread, because the gRPC
 * client (src/grpc/h2_client.h) blocks: the thread makes one call, waits
 * for the answer, checks it, makes the next (closed loop, one call in
 * flight per connection). Request n of connection i:
 *   -k new    client-minted task: taskId = messageId = "<PREFIX>-<i>-<n>"
 *             (never repeated), with the idempotency extension (onced)
 *   -k fresh  messageId "<PREFIX>-<i>-<n>", no taskId: the server mints
 *             the task (the @a2a-js/sdk peer, which has no client-minted IDs)
 * and a ROLE_USER message with one text part "hello", no configuration
 * (blocking). gRPC: /lf.a2a.v1.A2AService/SendMessage, the request packed
 * from protobuf-c's generated structs per call, metadata a2a-version: 1.0
 * and (new) a2a-extensions: urn:once:a2a:idempotency:v1. JSON-RPC: POST /
 * with bench/send.lua's body and headers.
 *
 * An answer counts as correct only when it is a Task in
 * TASK_STATE_COMPLETED carrying the sent taskId (new; fresh: any non-empty
 * id), not marked idempotent-replayed (a new task, not a retry's answer).
 * gRPC answers are unpacked with protobuf-c; JSON-RPC answers must be
 * HTTP 200 with a Content-Length body holding no "error", the completed
 * state and "id":"<taskId>". Everything else is an error, by kind:
 *   status     gRPC status not OK / HTTP status not 200 / JSON-RPC error
 *   answer     OK, but not a completed Task with the sent id
 *   transport  the connection failed, or no answer within TIMEOUT_MS
 *              (5000); the connection is then made again
 * Calls started in the first WARMUP_S seconds (2) are made and checked but
 * not counted; then SECONDS (10) are measured: a call counts when it
 * started and ended inside the window. Prints one RESULT line (key=value,
 * times in ms; rps = correct answers / SECONDS) and, after any error, one
 * SAMPLE line describing the first. -n CALLS: instead of a time, each
 * connection makes CALLS calls, all counted, and seconds is how long they
 * took (bench/grpc.sh's callgrind windows). Exit 0 when every counted call was
 * correct, 1 otherwise, 2 on bad usage.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "a2a.pb-c.h"
#include "grpc/h2_client.h"

#define PATH_SEND "/lf.a2a.v1.A2AService/SendMessage"
#define EXT_IDEM "urn:once:a2a:idempotency:v1"

static const char *host = "127.0.0.1";
static int port, use_grpc = 1, fresh, conns = 64;
static double dur_s = 10, warm_s = 2;
static const char *prefix = "g";
static long timeout_ms = 5000, ncalls;
static int64_t t_warm_end, t_end;   /* ns, CLOCK_MONOTONIC */
static pthread_mutex_t sample_mu = PTHREAD_MUTEX_INITIALIZER;
static char sample[512];

typedef struct worker {
    pthread_t th;
    int idx;
    uint32_t *lat;                 /* µs of each counted correct call */
    size_t nlat, caplat;
    long ok, warm_ok, e_status, e_answer, e_transport, e_warm;
} worker;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The first error of the run, for the SAMPLE line. */
__attribute__((format(printf, 1, 2))) static void note(const char *fmt, ...)
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

enum { CALL_OK, CALL_STATUS, CALL_ANSWER, CALL_TRANSPORT };

/* ------------------------------------------------------------------- gRPC */

typedef struct gcheck {
    const char *want_id;
    int seen, ok;
    char why[160];
} gcheck;

static int on_grpc_message(void *arg, const uint8_t *msg, size_t len)
{
    gcheck *g = arg;
    g->seen++;
    Lf__A2a__V1__SendMessageResponse *r = lf__a2a__v1__send_message_response__unpack(NULL, len, msg);
    if (r == NULL) {
        snprintf(g->why, sizeof g->why, "response does not unpack (%zu bytes)", len);
        return 0;
    }
    if (r->payload_case != LF__A2A__V1__SEND_MESSAGE_RESPONSE__PAYLOAD_TASK)
        snprintf(g->why, sizeof g->why, "payload case %d, not a task", (int)r->payload_case);
    else if (r->task->status == NULL ||
             r->task->status->state != LF__A2A__V1__TASK_STATE__TASK_STATE_COMPLETED)
        snprintf(g->why, sizeof g->why, "task %s in state %d", r->task->id,
                 r->task->status ? (int)r->task->status->state : -1);
    else if (g->want_id ? strcmp(r->task->id, g->want_id) != 0 : r->task->id[0] == '\0')
        snprintf(g->why, sizeof g->why, "task id %s, sent %s", r->task->id,
                 g->want_id ? g->want_id : "none");
    else
        g->ok = 1;
    lf__a2a__v1__send_message_response__free_unpacked(r, NULL);
    return 0;
}

typedef struct gconn {
    once__h2_client *c;
} gconn;

static int grpc_one(gconn *gc, const char *id)
{
    char err[256];
    if (gc->c == NULL) {
        once__h2c_config cfg = {.host = host, .port = port, .connect_timeout_ms = timeout_ms};
        if (once__h2c_connect(&cfg, &gc->c, err, sizeof err) != 0) {
            note("transport: %s", err);
            return CALL_TRANSPORT;
        }
    }
    Lf__A2a__V1__Part part = LF__A2A__V1__PART__INIT;
    part.content_case = LF__A2A__V1__PART__CONTENT_TEXT;
    part.text = (char *)"hello";
    Lf__A2a__V1__Part *parts[1] = {&part};
    Lf__A2a__V1__Message m = LF__A2A__V1__MESSAGE__INIT;
    m.message_id = (char *)id;
    if (!fresh)
        m.task_id = (char *)id;
    m.role = LF__A2A__V1__ROLE__ROLE_USER;
    m.n_parts = 1;
    m.parts = parts;
    Lf__A2a__V1__SendMessageRequest req = LF__A2A__V1__SEND_MESSAGE_REQUEST__INIT;
    req.message = &m;
    uint8_t buf[256];
    size_t len = lf__a2a__v1__send_message_request__get_packed_size(&req);
    if (len > sizeof buf) {
        note("request too large (%zu bytes)", len);
        return CALL_TRANSPORT;
    }
    lf__a2a__v1__send_message_request__pack(&req, buf);
    const char *md[4] = {"a2a-version", "1.0", "a2a-extensions", EXT_IDEM};
    gcheck g = {.want_id = fresh ? NULL : id};
    once__h2c_result res;
    int e = once__h2c_call(gc->c, PATH_SEND, md, fresh ? 1 : 2, buf, len, timeout_ms,
                           on_grpc_message, &g, NULL, &res);
    int out = CALL_OK;
    if (e != 0 || res.status == 4 /* DEADLINE_EXCEEDED: ours */) {
        note("transport: %s (status %d)", res.message ? res.message : "call failed", res.status);
        out = CALL_TRANSPORT;
    } else if (res.status != 0) {
        note("grpc-status %d: %s", res.status, res.message ? res.message : "");
        out = CALL_STATUS;
    } else if (!g.ok || g.seen != 1) {
        note("answer: %s", g.seen != 1 ? "not exactly one message" : g.why);
        out = CALL_ANSWER;
    } else if (res.headers && strcasestr(res.headers, "idempotent-replayed: true")) {
        note("answer: %s was a replay, not a new task", id);
        out = CALL_ANSWER;
    }
    once__h2c_result_clear(&res);
    if (out == CALL_TRANSPORT) {
        once__h2c_close(gc->c);
        gc->c = NULL;
    }
    return out;
}

/* --------------------------------------------------------------- JSON-RPC */

typedef struct jconn {
    int fd;
    char *buf;
    size_t cap, have;   /* bytes read and not consumed */
} jconn;

static int j_connect(jconn *jc)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    if (getaddrinfo(host, ps, &hints, &ai) != 0)
        return -1;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    jc->fd = fd;
    jc->have = 0;
    return 0;
}

static int j_read_more(jconn *jc)
{
    if (jc->have + 4096 > jc->cap) {
        size_t nc = jc->cap ? jc->cap * 2 : 16384;
        char *nb = realloc(jc->buf, nc + 1);
        if (nb == NULL)
            return -1;
        jc->buf = nb;
        jc->cap = nc;
    }
    ssize_t r = recv(jc->fd, jc->buf + jc->have, jc->cap - jc->have, 0);
    if (r <= 0)
        return -1;
    jc->have += (size_t)r;
    jc->buf[jc->have] = '\0';
    return 0;
}

static int jsonrpc_one(jconn *jc, const char *id, long n)
{
    if (jc->fd < 0 && j_connect(jc) != 0) {
        note("transport: cannot connect to %s:%d", host, port);
        return CALL_TRANSPORT;
    }
    char body[512], req[1024];
    int bl = snprintf(body, sizeof body,
                      "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"SendMessage\",\"params\":"
                      "{\"message\":{\"messageId\":\"%s\",%s%s%s\"role\":\"ROLE_USER\","
                      "\"parts\":[{\"text\":\"hello\"}]}}}",
                      n, id, fresh ? "" : "\"taskId\":\"", fresh ? "" : id, fresh ? "" : "\",");
    int rl = snprintf(req, sizeof req,
                      "POST / HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                      "A2A-Version: 1.0\r\n%sContent-Length: %d\r\n\r\n%s",
                      host, port, fresh ? "" : "A2A-Extensions: " EXT_IDEM "\r\n", bl, body);
    for (int off = 0; off < rl;) {
        ssize_t w = send(jc->fd, req + off, (size_t)(rl - off), MSG_NOSIGNAL);
        if (w <= 0)
            goto broken;
        off += (int)w;
    }
    char *eoh;
    while (jc->buf == NULL || (eoh = strstr(jc->buf, "\r\n\r\n")) == NULL)
        if (j_read_more(jc) != 0)
            goto broken;
    *eoh = '\0';
    int status = 0;
    if (sscanf(jc->buf, "HTTP/1.%*d %d", &status) != 1)
        goto broken;
    char *cl = strcasestr(jc->buf, "\r\ncontent-length:");
    if (cl == NULL) {
        note("transport: answer without Content-Length");
        goto broken;
    }
    size_t blen = strtoul(cl + 17, NULL, 10);
    int closing = strcasestr(jc->buf, "\r\nconnection: close") != NULL;
    size_t hlen = (size_t)(eoh - jc->buf) + 4;
    while (jc->have < hlen + blen)
        if (j_read_more(jc) != 0)
            goto broken;
    char *b = jc->buf + hlen;
    char save = b[blen];
    b[blen] = '\0';
    char want[200];
    snprintf(want, sizeof want, "\"id\":\"%s\"", id);
    int out = CALL_OK;
    if (status != 200 || strstr(b, "\"error\"")) {
        note("HTTP %d: %.300s", status, b);
        out = CALL_STATUS;
    } else if (!strstr(b, "TASK_STATE_COMPLETED") || (!fresh && !strstr(b, want)) ||
               (fresh && !strstr(b, "\"task\""))) {
        note("answer: %.300s", b);
        out = CALL_ANSWER;
    } else if (strcasestr(jc->buf, "\r\nidempotent-replayed: true")) {
        note("answer: %s was a replay, not a new task", id);
        out = CALL_ANSWER;
    }
    b[blen] = save;
    memmove(jc->buf, jc->buf + hlen + blen, jc->have - hlen - blen);
    jc->have -= hlen + blen;
    jc->buf[jc->have] = '\0';
    if (closing) {
        close(jc->fd);
        jc->fd = -1;
    }
    return out;
broken:
    note("transport: connection failed or timed out (%s)", strerror(errno));
    close(jc->fd);
    jc->fd = -1;
    return CALL_TRANSPORT;
}

/* ----------------------------------------------------------------- driver */

static void *run(void *arg)
{
    worker *w = arg;
    gconn gc = {0};
    jconn jc = {.fd = -1};
    char id[128];
    for (long n = 1;; n++) {
        int64_t t0 = now_ns();
        if (ncalls ? n > ncalls : t0 >= t_end)
            break;
        snprintf(id, sizeof id, "%s-%d-%ld", prefix, w->idx, n);
        int r = use_grpc ? grpc_one(&gc, id) : jsonrpc_one(&jc, id, n);
        int64_t t1 = now_ns();
        if (r == CALL_TRANSPORT)
            usleep(10000);   /* no busy loop against a server that is gone */
        if (t0 < t_warm_end || t1 > t_end) {
            if (r == CALL_OK)
                w->warm_ok++;
            else
                w->e_warm++;
            continue;
        }
        if (r == CALL_OK) {
            if (w->nlat == w->caplat) {
                size_t nc = w->caplat ? w->caplat * 2 : 4096;
                uint32_t *nl = realloc(w->lat, nc * sizeof *nl);
                if (nl == NULL)
                    abort();
                w->lat = nl;
                w->caplat = nc;
            }
            w->lat[w->nlat++] = (uint32_t)((t1 - t0) / 1000);
            w->ok++;
        } else if (r == CALL_STATUS) {
            w->e_status++;
        } else if (r == CALL_ANSWER) {
            w->e_answer++;
        } else {
            w->e_transport++;
        }
    }
    once__h2c_close(gc.c);
    if (jc.fd >= 0)
        close(jc.fd);
    free(jc.buf);
    return NULL;
}

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
                    "[-c CONNS] [-d SECONDS] [-w WARMUP_S] [-x PREFIX] [-T TIMEOUT_MS] [-n CALLS]\n");
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

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL || f[0] != '-' || f[1] == '\0' || f[2] != '\0')
            usage();
        i++;
        switch (f[1]) {
        case 'p': port = (int)int_arg(v, 1, 65535); break;
        case 'H': host = v; break;
        case 'm':
            if (strcmp(v, "grpc") && strcmp(v, "jsonrpc"))
                usage();
            use_grpc = !strcmp(v, "grpc");
            break;
        case 'k':
            if (strcmp(v, "new") && strcmp(v, "fresh"))
                usage();
            fresh = !strcmp(v, "fresh");
            break;
        case 'c': conns = (int)int_arg(v, 1, 4096); break;
        case 'd': dur_s = sec_arg(v); break;
        case 'w': warm_s = sec_arg(v); break;
        case 'x': prefix = v; break;
        case 'T': timeout_ms = int_arg(v, 1, 3600000); break;
        case 'n': ncalls = int_arg(v, 1, 100000000); break;
        default: usage();
        }
    }
    if (port == 0 || dur_s <= 0 || strlen(prefix) > 64)
        usage();
    if (ncalls)   /* a count, not a time: every call counts */
        warm_s = 0, dur_s = 1e9;
    worker *ws = calloc((size_t)conns, sizeof *ws);
    if (ws == NULL)
        return 1;
    int64_t t0 = now_ns();
    t_warm_end = t0 + (int64_t)(warm_s * 1e9);
    t_end = t_warm_end + (int64_t)(dur_s * 1e9);
    for (int i = 0; i < conns; i++) {
        ws[i].idx = i;
        if (pthread_create(&ws[i].th, NULL, run, &ws[i]) != 0) {
            fprintf(stderr, "grpc_load: cannot start thread %d\n", i);
            return 1;
        }
    }
    long ok = 0, warm_ok = 0, es = 0, ea = 0, et = 0, ew = 0;
    size_t n = 0;
    for (int i = 0; i < conns; i++) {
        pthread_join(ws[i].th, NULL);
        ok += ws[i].ok, warm_ok += ws[i].warm_ok, es += ws[i].e_status;
        ea += ws[i].e_answer, et += ws[i].e_transport, ew += ws[i].e_warm;
        n += ws[i].nlat;
    }
    uint32_t *all = malloc((n ? n : 1) * sizeof *all);
    if (all == NULL)
        return 1;
    size_t k = 0;
    for (int i = 0; i < conns; i++) {
        if (ws[i].nlat)
            memcpy(all + k, ws[i].lat, ws[i].nlat * sizeof *all);
        k += ws[i].nlat;
        free(ws[i].lat);
    }
    qsort(all, n, sizeof *all, cmp_u32);
    if (ncalls)
        dur_s = (double)(now_ns() - t0) / 1e9;
    long errors = es + ea + et;
    printf("RESULT mode=%s kind=%s conns=%d seconds=%.3f ok=%ld rps=%.0f errors=%ld "
           "e_status=%ld e_answer=%ld e_transport=%ld warm_ok=%ld warm_errors=%ld "
           "p50_ms=%.3f p99_ms=%.3f max_ms=%.3f\n",
           use_grpc ? "grpc" : "jsonrpc", fresh ? "fresh" : "new", conns, dur_s, ok,
           (double)ok / dur_s, errors, es, ea, et, warm_ok, ew, pct_ms(all, n, 50),
           pct_ms(all, n, 99), n ? all[n - 1] / 1000.0 : 0.0);
    if (sample[0])
        printf("SAMPLE %s\n", sample);
    free(all);
    free(ws);
    return errors ? 1 : 0;
}
