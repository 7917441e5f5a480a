/*
 * mhd_hello.c -- the HTTP ceiling for bench/run.sh: a libmicrohttpd server
 * that reads a POST body and answers a tiny JSON document, with onced's
 * thread model (src/http/server.c): MHD_USE_INTERNAL_POLLING_THREAD |
 * MHD_USE_EPOLL, a pool of THREADS epoll threads, keep-alive, the same
 * connection limit, memory limit and backlog.
 *
 *   mhd_hello PORT THREADS WORKERS
 *
 * WORKERS = 0: "inline" -- the MHD thread answers as soon as the body is in
 * (the plain libmicrohttpd hello-world, docs/design.md section 12's anchor).
 * WORKERS > 0: "handoff" -- like onced, the last body callback suspends the
 * connection and queues the request on a pool of WORKERS threads (one mutex +
 * condition variable ring); the worker marks it done and resumes the
 * connection; the MHD thread then queues the response. This costs what
 * onced's hand-over costs, without any JSON-RPC work.
 *
 * A bench tool built by run.sh with gcc alone (not part of libonce), so it
 * uses plain malloc/free. Runs until SIGTERM/SIGINT. Invariant: a req is
 * owned by the MHD thread except between suspend and resume, when the
 * worker owns it; `done` hands it back (as in server.c).
 */
#include <microhttpd.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char reply[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"hello\"}";

/* One POST. Body bytes are counted, not kept: the ceiling reads them as
 * onced does but has nothing to parse. */
typedef struct req {
    struct MHD_Connection *conn;
    size_t body_len;
    int dispatched;
    int done; /* atomic: the worker finished (hand-over) */
} req;

/* The worker queue. `mu` guards ring, head, count and closing; workers
 * sleep on `ready` while the ring is empty. */
typedef struct pool {
    pthread_mutex_t mu;
    pthread_cond_t ready;
    req **ring;
    size_t cap, head, count;
    int closing;
} pool;

static pool g_pool;
static int g_stop_pipe[2] = {-1, -1};

static void *worker(void *arg)
{
    pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (p->count == 0 && !p->closing)
            pthread_cond_wait(&p->ready, &p->mu);
        if (p->count == 0) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        req *r = p->ring[p->head];
        p->head = (p->head + 1) % p->cap;
        p->count--;
        pthread_mutex_unlock(&p->mu);
        struct MHD_Connection *conn = r->conn;
        __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
        MHD_resume_connection(conn);
    }
}

/* 0 on success, -1 when the queue is full (answered 503 by the caller). */
static int submit(pool *p, req *r)
{
    pthread_mutex_lock(&p->mu);
    if (p->count == p->cap) {
        pthread_mutex_unlock(&p->mu);
        return -1;
    }
    p->ring[(p->head + p->count) % p->cap] = r;
    p->count++;
    pthread_cond_signal(&p->ready);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status)
{
    struct MHD_Response *res =
        MHD_create_response_from_buffer(sizeof reply - 1, (void *)reply, MHD_RESPMEM_PERSISTENT);
    if (res == NULL)
        return MHD_NO;
    MHD_add_response_header(res, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    enum MHD_Result ret = MHD_queue_response(conn, status, res);
    MHD_destroy_response(res);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    int handoff = *(const int *)cls;
    (void)url;
    (void)version;
    (void)upload_data; /* counted, not kept: nothing to parse */
    req *r = *con_cls;
    if (r == NULL) {
        if (strcmp(method, MHD_HTTP_METHOD_POST) != 0)
            return answer(conn, MHD_HTTP_METHOD_NOT_ALLOWED);
        r = calloc(1, sizeof *r);
        if (r == NULL)
            return MHD_NO;
        r->conn = conn;
        *con_cls = r;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        r->body_len += *upload_data_size;
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (!handoff || __atomic_load_n(&r->done, __ATOMIC_ACQUIRE))
        return answer(conn, MHD_HTTP_OK);
    if (r->dispatched) /* spurious wake-up while the worker runs */
        return MHD_YES;
    r->dispatched = 1;
    MHD_suspend_connection(conn);
    if (submit(&g_pool, r) != 0) {
        MHD_resume_connection(conn);
        return answer(conn, MHD_HTTP_SERVICE_UNAVAILABLE);
    }
    return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    free(*con_cls);
    *con_cls = NULL;
}

static void on_signal(int sig)
{
    unsigned char b = (unsigned char)sig;
    int saved = errno;
    if (write(g_stop_pipe[1], &b, 1) < 0) {
        /* already stopping */
    }
    errno = saved;
}

static long parse_num(const char *s, long lo, long hi, const char *what)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "mhd_hello: %s must be %ld..%ld, got %s\n", what, lo, hi, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: mhd_hello PORT THREADS WORKERS (0 = answer inline)\n");
        return 2;
    }
    long port = parse_num(argv[1], 1, 65535, "PORT");
    long threads = parse_num(argv[2], 1, 256, "THREADS");
    long workers = parse_num(argv[3], 0, 4096, "WORKERS");
    static int handoff;
    handoff = workers > 0;

    if (pipe(g_stop_pipe) != 0)
        return 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    pthread_t *tids = NULL;
    if (handoff) {
        pthread_mutex_init(&g_pool.mu, NULL);
        pthread_cond_init(&g_pool.ready, NULL);
        g_pool.cap = 1024; /* onced: queue depth = max_connections */
        g_pool.ring = calloc(g_pool.cap, sizeof *g_pool.ring);
        tids = calloc((size_t)workers, sizeof *tids);
        if (g_pool.ring == NULL || tids == NULL)
            return 1;
        for (long i = 0; i < workers; i++)
            pthread_create(&tids[i], NULL, worker, &g_pool);
    }

    struct sockaddr_in sin; /* loopback only */
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, (uint16_t)port, NULL, NULL, on_request, &handoff, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&sin, MHD_OPTION_THREAD_POOL_SIZE,
        (unsigned)threads, MHD_OPTION_CONNECTION_LIMIT, (unsigned)1024,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)(16 * 1024), MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_END);
    if (d == NULL) {
        fprintf(stderr, "mhd_hello: cannot listen on 127.0.0.1:%ld\n", port);
        return 1;
    }
    printf("mhd_hello listening on %ld threads=%ld workers=%ld (%s)\n", port, threads, workers,
           handoff ? "handoff" : "inline");
    fflush(stdout);

    unsigned char b;
    while (read(g_stop_pipe[0], &b, 1) < 0 && errno == EINTR)
        ;
    MHD_quiesce_daemon(d);
    if (handoff) {
        pthread_mutex_lock(&g_pool.mu);
        g_pool.closing = 1;
        pthread_cond_broadcast(&g_pool.ready);
        pthread_mutex_unlock(&g_pool.mu);
        for (long i = 0; i < workers; i++)
            pthread_join(tids[i], NULL);
    }
    MHD_stop_daemon(d);
    free(tids);
    free(g_pool.ring);
    return 0;
}
