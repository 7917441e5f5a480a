/*
 * webhook_sink.c -- a webhook receiver for tests (build/tools/webhook_sink),
 * built on the receiver library (include/once/webhook.h): it verifies,
 * records in a SQLite processed-set, and "handles" each event by appending
 * one line to a log, once and in order per task. It can misbehave on
 * purpose for the first deliveries, to exercise the sender's retries.
 *
 *   webhook_sink --secret S [--secret S2] --state PATH --log FILE
 *                [--port P] [--host ADDR] [--token T] [--tolerance SECS]
 *                [--fail SPEC] [--slow-ms MS] [--mark FILE] [--stats FILE]
 *
 * --fail SPEC   comma-separated actions for the first deliveries in arrival
 *               order: a status 100..599 (answer it, record nothing), reset
 *               (drop the connection unanswered), slow (sleep --slow-ms,
 *               default 3000, then receive normally: a sender with a
 *               shorter timeout retries an event that was recorded), ok.
 * --mark FILE   touch FILE when a slow delivery starts sleeping.
 * Log line per handled event: "<task_id> <generation> <body>".
 * Prints "listening <port>" on stdout once ready; on SIGTERM/SIGINT writes
 * the receiver's counters and the number of requests that reached it as
 * JSON to --stats (if given) and exits 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "once/webhook.h"

#define MAX_SECRETS 8
#define MAX_FAIL 64

/* Set by main before the server starts; `seen` is atomic. */
typedef struct sink {
    char actions[MAX_FAIL][16];
    int nactions;
    int slow_ms;
    const char *mark;
    FILE *log;
    pthread_mutex_t logmu;
    int seen;
} sink;

static int gate(void *arg, const once_webhook_request *req)
{
    sink *s = arg;
    (void)req;
    int k = __atomic_fetch_add(&s->seen, 1, __ATOMIC_SEQ_CST);
    if (k >= s->nactions)
        return 0;
    const char *a = s->actions[k];
    if (strcmp(a, "ok") == 0)
        return 0;
    if (strcmp(a, "reset") == 0)
        return -1;
    if (strcmp(a, "slow") == 0) {
        if (s->mark != NULL) {
            int fd = open(s->mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
            if (fd >= 0)
                close(fd);
        }
        struct timespec ts = {s->slow_ms / 1000, (long)(s->slow_ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
        return 0;
    }
    return (int)strtol(a, NULL, 10);
}

static int handle(void *arg, const once_webhook_event *ev)
{
    sink *s = arg;
    pthread_mutex_lock(&s->logmu);
    int ok = fprintf(s->log, "%s %lld %.*s\n", ev->task_id, (long long)ev->generation, (int)ev->len,
                     ev->body) > 0 &&
             fflush(s->log) == 0;
    pthread_mutex_unlock(&s->logmu);
    return ok ? ONCE_OK : ONCE_EIO;
}

static int usage(const char *why)
{
    fprintf(stderr, "webhook_sink: %s\n", why);
    return 2;
}

static int parse_fail(sink *s, const char *spec)
{
    const char *p = spec;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (s->nactions == MAX_FAIL || n == 0 || n >= sizeof s->actions[0])
            return -1;
        char *t = s->actions[s->nactions];
        memcpy(t, p, n);
        t[n] = '\0';
        long code = strtol(t, NULL, 10);
        if (strcmp(t, "ok") != 0 && strcmp(t, "reset") != 0 && strcmp(t, "slow") != 0 &&
            (code < 100 || code > 599))
            return -1;
        s->nactions++;
        p += n + (end != NULL);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *secrets[MAX_SECRETS];
    size_t nsecrets = 0;
    const char *state = NULL, *logpath = NULL, *host = "127.0.0.1", *token = NULL;
    const char *stats = NULL;
    long port = 0, tolerance = 0;
    static sink s;
    s.slow_ms = 3000;
    pthread_mutex_init(&s.logmu, NULL);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL)
            return usage("every option takes a value");
        i++;
        if (strcmp(a, "--secret") == 0 && nsecrets < MAX_SECRETS)
            secrets[nsecrets++] = v;
        else if (strcmp(a, "--state") == 0)
            state = v;
        else if (strcmp(a, "--log") == 0)
            logpath = v;
        else if (strcmp(a, "--host") == 0)
            host = v;
        else if (strcmp(a, "--port") == 0)
            port = strtol(v, NULL, 10);
        else if (strcmp(a, "--token") == 0)
            token = v;
        else if (strcmp(a, "--tolerance") == 0)
            tolerance = strtol(v, NULL, 10);
        else if (strcmp(a, "--slow-ms") == 0)
            s.slow_ms = (int)strtol(v, NULL, 10);
        else if (strcmp(a, "--mark") == 0)
            s.mark = v;
        else if (strcmp(a, "--stats") == 0)
            stats = v;
        else if (strcmp(a, "--fail") == 0) {
            if (parse_fail(&s, v) != 0)
                return usage("--fail: a comma list of ok, reset, slow, or a status 100..599");
        } else
            return usage("unknown option");
    }
    if (nsecrets == 0 || state == NULL || logpath == NULL)
        return usage("--secret, --state and --log are required");
    s.log = fopen(logpath, "a");
    if (s.log == NULL)
        return usage("cannot open the log");

    /* Signals are taken by sigwait below, never by the server's threads. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    once_webhook_options o = {.state_path = state,
                              .secrets = secrets,
                              .nsecrets = nsecrets,
                              .tolerance_s = tolerance,
                              .token = token,
                              .handler = handle,
                              .arg = &s};
    once_webhook *w;
    char err[256];
    if (once_webhook_open(&o, &w, err, sizeof err) != ONCE_OK)
        return usage(err);
    once_webhook_listen_options lo = {
        .host = host, .port = (int)port, .gate = gate, .gate_arg = &s};
    once_webhook_server *srv;
    if (once_webhook_listen(w, &lo, &srv, err, sizeof err) != ONCE_OK) {
        once_webhook_close(w);
        return usage(err);
    }
    printf("listening %d\n", once_webhook_server_port(srv));
    fflush(stdout);

    int sig = 0;
    sigwait(&set, &sig);
    once_webhook_server_stop(srv);
    once_webhook_stats st;
    if (stats != NULL && once_webhook_get_stats(w, &st) == ONCE_OK) {
        FILE *f = fopen(stats, "w");
        if (f != NULL) {
            fprintf(f,
                    "{\"received\":%llu,\"duplicates\":%llu,\"rejected\":%llu,"
                    "\"handled\":%llu,\"pending\":%llu,\"requests\":%d}\n",
                    (unsigned long long)st.received, (unsigned long long)st.duplicates,
                    (unsigned long long)st.rejected, (unsigned long long)st.handled,
                    (unsigned long long)st.pending, __atomic_load_n(&s.seen, __ATOMIC_SEQ_CST));
            fclose(f);
        }
    }
    once_webhook_close(w);
    fclose(s.log);
    return 0;
}
