/*
 * grpc_echo.c -- a gRPC server for the transport's tests (build/tools/
 * grpc_echo): src/grpc/h2.c with a tiny handler whose work runs on a
 * worker pool, as the A2A codec's will.
 *
 *   grpc_echo [--port P] [--tls-cert F --tls-key F] [--threads N]
 *             [--max-message B] [--stream-buffer B] [--max-streams N]
 *             [--request-timeout-ms MS] [--idle-ms MS] [--write-stall-ms MS]
 *             [--max-resets N] [--max-control N] [--flood-window-ms MS]
 *             [--max-connections N] [--max-per-ip N]
 *
 * Methods (request and response messages are raw bytes):
 *   /test.Echo/Unary   the message back; metadata x-echo back as initial
 *                      metadata x-echo
 *   /test.Echo/Fail    status from metadata x-code, message "failed on
 *                      purpose", details "details:" + the request message
 *   /test.Echo/Stream  the request is "N" or "N:SIZE": N messages "i:" padded
 *                      to SIZE bytes, waiting for on_room when told to
 *   /test.Echo/Hold    never answers; the client going away is counted
 *   /test.Echo/Stats   "gone=G holding=H calls=C rooms=R"
 * Anything else: UNIMPLEMENTED. Prints the port on stdout when ready; exits
 * 0 on SIGTERM or SIGINT.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "grpc/h2.h"
#include "http/pool.h"
#include "http/tls.h"

/* A streaming call in progress: its producer runs as one pool job at a
 * time (`running`), resubmitted by on_room. Under g.mu. */
typedef struct job {
    once__h2_call *call;
    long i, n, size;
    int running, parked, dead;
    struct job *next;
} job;

static struct {
    once_pool *pool;
    pthread_mutex_t mu;
    job *jobs;                 /* streaming calls */
    once__h2_call *held[4096]; /* Hold calls */
    size_t nheld;
    atomic_long gone, calls, rooms;
    size_t stream_buffer;
} g = {.mu = PTHREAD_MUTEX_INITIALIZER};

static int is(const once__h2_call *c, const char *m)
{
    return strcmp(once__h2_call_path(c), m) == 0;
}

static void unary(once__h2_call *c)
{
    const char *echo = once__h2_call_metadata(c, "x-echo");
    if (echo != NULL) {
        const char *kv[] = {"x-echo", echo};
        once__h2_call_headers(c, kv, 1);
    }
    size_t len;
    const uint8_t *m = once__h2_call_message(c, &len);
    once__h2_call_send(c, m, len);
    once__h2_call_finish(c, 0, NULL, NULL, 0);
}

static void fail(once__h2_call *c)
{
    const char *code = once__h2_call_metadata(c, "x-code");
    size_t len;
    const uint8_t *m = once__h2_call_message(c, &len);
    uint8_t d[256] = "details:";
    size_t dl = 8 + (len < sizeof d - 8 ? len : sizeof d - 8);
    memcpy(d + 8, m, dl - 8);
    once__h2_call_finish(c, code ? (int)strtol(code, NULL, 10) : 2, "failed on purpose", d, dl);
}

static void stats(once__h2_call *c)
{
    char s[128];
    pthread_mutex_lock(&g.mu);
    size_t held = g.nheld;
    pthread_mutex_unlock(&g.mu);
    int n = snprintf(s, sizeof s, "gone=%ld holding=%zu calls=%ld rooms=%ld", atomic_load(&g.gone),
                     held, atomic_load(&g.calls), atomic_load(&g.rooms));
    once__h2_call_send(c, (const uint8_t *)s, (size_t)n);
    once__h2_call_finish(c, 0, NULL, NULL, 0);
}

static void job_drop(job *j)
{
    job **p = &g.jobs;
    while (*p != j)
        p = &(*p)->next;
    *p = j->next;
}

/* Produce until done, gone, or told to wait. */
static void produce(void *arg)
{
    job *j = arg;
    char *buf = malloc((size_t)j->size + 32);
    for (;;) {
        pthread_mutex_lock(&g.mu);
        if (j->dead || j->i >= j->n) {
            int done = !j->dead;
            job_drop(j);
            pthread_mutex_unlock(&g.mu);
            if (done)
                once__h2_call_finish(j->call, 0, NULL, NULL, 0);
            once__h2_call_unref(j->call);
            free(j);
            break;
        }
        pthread_mutex_unlock(&g.mu);
        int k = snprintf(buf, 32, "%ld:", j->i);
        size_t len = (size_t)j->size > (size_t)k ? (size_t)j->size : (size_t)k;
        memset(buf + k, 'x', len - (size_t)k);
        int64_t r = once__h2_call_send(j->call, (const uint8_t *)buf, len);
        pthread_mutex_lock(&g.mu);
        if (r < 0) {
            j->dead = 1;
        } else {
            j->i++;
            if ((size_t)r >= g.stream_buffer && j->i < j->n && !j->dead) {
                /* Park; on_room (or on_gone) resubmits. It may already
                 * have come: then go on at once. */
                if (j->parked) {
                    j->parked = 0;
                } else {
                    j->running = 0;
                    pthread_mutex_unlock(&g.mu);
                    break;
                }
            }
        }
        pthread_mutex_unlock(&g.mu);
    }
    free(buf);
}

static void run(void *arg)
{
    once__h2_call *c = arg;
    atomic_fetch_add(&g.calls, 1);
    if (is(c, "/test.Echo/Unary")) {
        unary(c);
    } else if (is(c, "/test.Echo/Fail")) {
        fail(c);
    } else if (is(c, "/test.Echo/Stats")) {
        stats(c);
    } else if (is(c, "/test.Echo/Hold")) {
        pthread_mutex_lock(&g.mu);
        int kept = g.nheld < sizeof g.held / sizeof g.held[0];
        if (kept)
            g.held[g.nheld++] = c;
        pthread_mutex_unlock(&g.mu);
        if (!kept)
            once__h2_call_finish(c, 8, "too many held calls", NULL, 0);
        else
            return;   /* the reference goes with the held call */
    } else if (is(c, "/test.Echo/Stream")) {
        size_t len;
        const uint8_t *m = once__h2_call_message(c, &len);
        char req[64] = "";
        memcpy(req, m, len < sizeof req - 1 ? len : sizeof req - 1);
        job *j = calloc(1, sizeof *j);
        char *colon = strchr(req, ':');
        j->call = c;
        j->n = strtol(req, NULL, 10);
        j->size = colon ? strtol(colon + 1, NULL, 10) : 0;
        j->running = 1;
        pthread_mutex_lock(&g.mu);
        j->next = g.jobs;
        g.jobs = j;
        pthread_mutex_unlock(&g.mu);
        produce(j);
        return;   /* the job holds the reference */
    } else {
        once__h2_call_finish(c, 12, "unknown method", NULL, 0);
    }
    once__h2_call_unref(c);
}

static void on_call(void *ctx, once__h2_call *c)
{
    once__h2_call_ref(c);
    if (once__http_pool_submit(g.pool, run, c) != 0) {
        once__h2_call_finish(c, 14, "busy", NULL, 0);
        once__h2_call_unref(c);
    }
}

/* Resume a parked job (g.mu held): 1 when the caller submits it. */
static int wake_locked(once__h2_call *c)
{
    for (job *j = g.jobs; j; j = j->next) {
        if (j->call != c)
            continue;
        if (j->running) {
            j->parked = 1;   /* a room signal before it parked */
            return 0;
        }
        j->running = 1;
        return 1;
    }
    return 0;
}

static void resubmit(once__h2_call *c)
{
    for (job *j = g.jobs; j; j = j->next)
        if (j->call == c)
            once__http_pool_submit(g.pool, produce, j);
}

static void on_gone(void *ctx, once__h2_call *c)
{
    atomic_fetch_add(&g.gone, 1);
    pthread_mutex_lock(&g.mu);
    for (size_t i = 0; i < g.nheld; i++)
        if (g.held[i] == c) {
            g.held[i] = g.held[--g.nheld];
            pthread_mutex_unlock(&g.mu);
            once__h2_call_unref(c);
            return;
        }
    for (job *j = g.jobs; j; j = j->next)
        if (j->call == c)
            j->dead = 1;
    int go = wake_locked(c);
    if (go)
        resubmit(c);
    pthread_mutex_unlock(&g.mu);
}

static void on_room(void *ctx, once__h2_call *c)
{
    atomic_fetch_add(&g.rooms, 1);
    pthread_mutex_lock(&g.mu);
    if (wake_locked(c))
        resubmit(c);
    pthread_mutex_unlock(&g.mu);
}

static void pick(void *arg, struct gnutls_pcert_st **pcert, unsigned *n,
                 struct gnutls_privkey_st **key)
{
    once__tls_live_pick(arg, pcert, n, key);
}

int main(int argc, char **argv)
{
    once__h2_config cfg = {0};
    const char *cert = NULL, *key = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *f = argv[i], *v = argv[i + 1];
        long n = strtol(v, NULL, 10);
        if (!strcmp(f, "--port")) cfg.port = (int)n;
        else if (!strcmp(f, "--tls-cert")) cert = v;
        else if (!strcmp(f, "--tls-key")) key = v;
        else if (!strcmp(f, "--threads")) cfg.threads = (unsigned)n;
        else if (!strcmp(f, "--max-message")) cfg.max_message = (size_t)n;
        else if (!strcmp(f, "--stream-buffer")) cfg.stream_buffer = (size_t)n;
        else if (!strcmp(f, "--max-streams")) cfg.max_streams = (unsigned)n;
        else if (!strcmp(f, "--request-timeout-ms")) cfg.request_timeout_ms = n;
        else if (!strcmp(f, "--idle-ms")) cfg.idle_timeout_ms = n;
        else if (!strcmp(f, "--write-stall-ms")) cfg.write_stall_ms = n;
        else if (!strcmp(f, "--max-resets")) cfg.max_resets = (unsigned)n;
        else if (!strcmp(f, "--max-control")) cfg.max_control = (unsigned)n;
        else if (!strcmp(f, "--flood-window-ms")) cfg.flood_window_ms = n;
        else if (!strcmp(f, "--max-connections")) cfg.max_connections = (unsigned)n;
        else if (!strcmp(f, "--max-per-ip")) cfg.max_per_ip = (unsigned)n;
        else {
            fprintf(stderr, "grpc_echo: unknown flag %s\n", f);
            return 2;
        }
    }
    char err[256] = "";
    once__tls_live *live = NULL;
    if (cert && key) {
        if (once__tls_live_new(cert, key, &live, err, sizeof err) != 0) {
            fprintf(stderr, "grpc_echo: %s\n", err);
            return 1;
        }
        cfg.pick = pick;
        cfg.pick_arg = live;
    }
    g.stream_buffer = cfg.stream_buffer ? cfg.stream_buffer : 64 * 1024;
    /* Before any thread starts: every thread inherits the mask, so only
     * sigwait below takes the signals. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    once__log_setup(ONCE_LOG_INFO, ONCE_LOG_TEXT, 2);
    if (once__http_pool_new(4, 4096, &g.pool) != 0)
        return 1;
    once__h2_handler h = {.on_call = on_call, .on_gone = on_gone, .on_room = on_room};
    once__h2 *srv;
    if (once__h2_start(&cfg, &h, &srv, err, sizeof err) != 0) {
        fprintf(stderr, "grpc_echo: %s\n", err);
        return 1;
    }
    printf("%d\n", once__h2_port(srv));
    fflush(stdout);
    int sig;
    sigwait(&set, &sig);
    once__h2_stop(srv);
    once__http_pool_free(g.pool);
    pthread_mutex_lock(&g.mu);
    while (g.nheld > 0)
        once__h2_call_unref(g.held[--g.nheld]);
    pthread_mutex_unlock(&g.mu);
    once__tls_live_free(live);
    return 0;
}
