/*
 * onced.c -- the once A2A server: parse flags (their table is
 * cli/onced_opts.c), wire store -> engine -> codec -> HTTP, run until
 * SIGTERM/SIGINT (SIGHUP reads the files again: http/reload.h), shut down
 * in reverse order.
 *
 * Thin on purpose: every behaviour lives in libonce (src/http, src/a2a,
 * src/engine, src/store, src/exec). Exit status: 0 after a clean shutdown,
 * 1 when startup fails, 2 for a bad command line (and for a --check-config
 * that found a problem). `onced migrate` runs the store's schema step alone
 * and exits (0 done, 1 failed, 2 bad command line).
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#ifdef ONCE_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#else
/* Built with -DONCE_SYSTEMD=OFF: there is no one to tell. */
#define sd_notify(unset, state) ((void)0)
#define sd_notifyf(unset, ...) ((void)0)
#endif
#ifdef ONCE_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>

/* jemalloc reads this when it starts (MALLOC_CONF in the environment
 * overrides it): pages freed go back to the kernel within about a second
 * instead of its default ten, so the memory store's RSS stays as flat as on
 * the C library's malloc (docs/design.md, "The allocator"). */
const char *malloc_conf = "dirty_decay_ms:1000,muzzy_decay_ms:0";
#endif

#include "cli/onced_opts.h"
#include "core/log.h"
#include "core/metrics.h"
#include "http/http.h"
#include "http/reload.h"
#include "http/serve.h"
#include "http/tls.h"
#include "once/executor.h"
#include "once/store.h"
#include "store/store_info.h"

/* The log format (core/log.h). Every line onced writes to stderr is in it,
 * the refusal of a bad command line included: main takes it from a first
 * look for --log-format, before any flag is checked. */
static int log_format;

/* What stops onced, on stderr; returns status (the exit status): in json
 * one log line (event "refused", level error); in text "onced: MESSAGE",
 * as a person at a terminal reads it. */
static int refuse(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int refuse(int status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    once__logline l;
    if (log_format != ONCE_LOG_JSON) {
        fprintf(stderr, "onced: %s\n%s", msg, status == 2 ? "Try 'onced --help'.\n" : "");
    } else if (once__log_begin(&l, ONCE_LOG_ERROR, "refused")) {
        once__log_text(&l, "message", msg, strlen(msg));
        once__log_int(&l, "exit", status);
        once__log_end(&l);
    }
    return status;
}

/* A bad command line (exit status 2); start-up failed: a file, the store,
 * the port (exit status 1). */
#define bad(...) refuse(2, __VA_ARGS__)
#define fail(...) (void)refuse(1, __VA_ARGS__)

/* The checks that need more than one flag, or a flag's value in words
 * opt_parse does not know (onced_opts.c checks each value alone). */
static int check_flags(const onced_opts *o)
{
    if (o->listen == NULL)
        return bad("--listen HOST:PORT is required");
    if (o->store == NULL)
        return bad("--store URL is required");
    if (o->conn_memory != 0 && (o->conn_memory < 4096 || o->conn_memory > 1024 * 1024))
        return bad("--conn-memory: expected a size from 4KiB to 1MiB");
    if ((o->executor != NULL) + (o->exec_cmd != NULL) + (o->upstream != NULL) > 1)
        return bad("--executor, --exec and --upstream are exclusive: one agent per onced");
    if (o->upstream == NULL && (o->upstream_headers.n > 0 || o->upstream_header_file != NULL ||
                                o->upstream_principal_header != NULL || o->upstream_deadline_ms ||
                                o->upstream_card_refresh_ms >= 0))
        return bad("--upstream-header, --upstream-header-file, --upstream-principal-header, "
                   "--upstream-deadline and --upstream-card-refresh need --upstream URL");
    if (o->plain_ids != NULL && strcmp(o->plain_ids, "derived") != 0 &&
        strcmp(o->plain_ids, "server") != 0)
        return bad("--plain-ids: expected derived or server, got %s", o->plain_ids);
    if (o->executor != NULL && strcmp(o->executor, "echo") != 0)
        return bad("--executor: unknown executor %s (built in: echo)", o->executor);
    if (o->exec_cmd != NULL && o->exec_cmd[0] == '\0')
        return bad("--exec: empty command");
    if ((o->tls_cert == NULL) != (o->tls_key == NULL))
        return bad("--tls-cert and --tls-key go together: give both or neither");
    if (o->tls_priority != NULL && o->tls_cert == NULL)
        return bad("--tls-priority needs --tls-cert and --tls-key");
    if (o->log_level != NULL && o->log_level_file != NULL)
        return bad("--log-level and --log-level-file are exclusive: the file's level is the "
                   "one SIGHUP reads again");
    return 0;
}

/* The command line into o (onced_opts.c's table), or the exit status: 2
 * for a bad one; --help, --version and the hidden --help-man and
 * --help-markdown print and exit 0. */
static int parse_args(int argc, char **argv, onced_opts *o)
{
    char err[512];
    int rc = opt_parse(&onced_options, argc, argv, o, err, sizeof err);
    if (rc < 0)
        return bad("%s", err);
    if (rc > 0) {
        opt_print(&onced_options, rc, stdout);
        exit(0);
    }
    return check_flags(o);
}

/* The versions a migration went through, as the command prints them:
 * "3" or "2..3". */
static void version_range(int from, int to, char *out, size_t n)
{
    if (to == from + 1)
        snprintf(out, n, "%d", to);
    else
        snprintf(out, n, "%d..%d", from + 1, to);
}

/* `onced migrate`: the store's schema step alone (store_info.h), its
 * outcome on stdout. */
static int migrate_main(int argc, char **argv)
{
    onced_migrate_opts m;
    char msg[512];
    memset(&m, 0, sizeof m);
    int rc = opt_parse(&onced_migrate_options, argc, argv, &m, msg, sizeof msg);
    if (rc < 0 && strncmp(msg, "unknown option", 14) == 0)
        return bad("migrate: %s (migrate takes --store URL and --dry-run)", msg);
    if (rc < 0)
        return bad("migrate: %s", msg);
    if (rc > 0) {
        opt_print(&onced_migrate_options, rc, stdout);
        return 0;
    }
    if (m.store == NULL)
        return bad("migrate: --store URL is required");
    const char *store = m.store;
    int dry_run = m.dry_run;
    char err[512] = "", range[32];
    int from = 0, to = 0;
    rc = once__store_migrate(store, dry_run, &from, &to, err, sizeof err);
    if (rc != ONCE_OK)
        return refuse(1, "migrate: %s (%s)", err[0] ? err : "cannot open", once_strerror(rc));
    version_range(from, to, range, sizeof range);
    if (from == to)
        printf("up to date (version %d)\n", to);
    else if (dry_run)
        printf("store at version %d; would apply %s (dry run: nothing written)\n", from, range);
    else
        printf("store at version %d; applied %s (now at version %d)\n", from, range, to);
    return 0;
}

/* The --card file, checked (once__card_file_load): a message naming the
 * file and the field when it is refused. */
static int load_card(const char *path, json_t **out)
{
    char err[512] = "";
    int rc = once__card_file_load(path, out, err, sizeof err);
    if (rc != ONCE_OK)
        fail("--card %s", err[0] ? err : once_strerror(rc));
    return rc;
}

/* --check-config: one problem, on stderr (a person or a deploy script reads
 * it: plain text whatever --log-format says). */
static void problem(int *n, const char *flag, const char *err, int rc)
{
    fprintf(stderr, "onced: %s%s%s\n", flag != NULL ? flag : "", flag != NULL ? " " : "",
            err[0] ? err : once_strerror(rc));
    ++*n;
}

/* --check-config: every file a flag names is read and checked as start-up
 * and SIGHUP would, each problem reported (not only the first); the store
 * URL by its scheme only, since opening it would create a SQLite file or
 * wait for the network, and --upstream is not asked for its card. 0 with
 * "configuration OK" on stdout, else 2. */
static int check_config(const onced_opts *o)
{
    char err[512];
    int n = 0, rc;
    err[0] = '\0';
    if ((rc = once__store_url_check(o->store, err, sizeof err)) != ONCE_OK)
        problem(&n, "--store:", err, rc);
    once_tokens *tokens = NULL;
    err[0] = '\0';
    if (o->auth_tokens != NULL &&
        (rc = once__tokens_load(o->auth_tokens, &tokens, err, sizeof err)) != ONCE_OK)
        problem(&n, "--auth-tokens", err, rc);
    once__tokens_free(tokens);
    once__tls_live *tls = NULL;
    err[0] = '\0';
    if (o->tls_cert != NULL &&
        (rc = once__tls_live_new(o->tls_cert, o->tls_key, &tls, err, sizeof err)) != ONCE_OK)
        problem(&n, NULL, err, rc);   /* it names the flag */
    once__tls_live_free(tls);
    json_t *card = NULL;
    err[0] = '\0';
    if (o->card != NULL && (rc = once__card_file_load(o->card, &card, err, sizeof err)) != ONCE_OK)
        problem(&n, "--card", err, rc);
    json_decref(card);
    int level;
    err[0] = '\0';
    if (o->log_level_file != NULL &&
        (rc = once__log_level_file_load(o->log_level_file, &level, err, sizeof err)) != ONCE_OK)
        problem(&n, "--log-level-file", err, rc);
    char *text = NULL;
    size_t len;
    err[0] = '\0';
    if (o->upstream_header_file != NULL &&
        (rc = once__read_file(o->upstream_header_file, (size_t)1 << 16, &text, &len, err,
                              sizeof err)) != ONCE_OK)
        problem(&n, "--upstream-header-file", err, rc);
    once_free(text);
    if (n > 0) {
        fprintf(stderr, "onced: configuration has %d problem%s\n", n, n == 1 ? "" : "s");
        return 2;
    }
    printf("configuration OK\n");
    return 0;
}

/* The gateway (--upstream): its headers, from the flags and the file
 * (lines "Name: value", '#' comments), then the executor, which reads the
 * upstream's card; then the card members onced serves from it (unless
 * --card describes the agent itself). */
static int make_upstream(const onced_opts *o, once_executor **ex, json_t **card)
{
    char err[512] = "", *text = NULL;
    size_t len = 0, n = 0;
    const char *hv[96];
    for (; n < o->upstream_headers.n; n++)
        hv[n] = o->upstream_headers.v[n];
    if (o->upstream_header_file != NULL &&
        once__read_file(o->upstream_header_file, (size_t)1 << 16, &text, &len, err, sizeof err) !=
            ONCE_OK) {
        fail("--upstream-header-file %s", err);
        return ONCE_EINVAL;
    }
    if (text != NULL) {   /* read as bytes: the lines below need its end marked */
        char *z = once_realloc(text, len + 1);
        if (z == NULL) {
            once_free(text);
            return ONCE_ENOMEM;
        }
        text = z;
        text[len] = '\0';
    }
    for (char *line = text, *next; line != NULL && *line != '\0'; line = next) {
        next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        size_t l = strlen(line);
        while (l > 0 && (line[l - 1] == '\r' || line[l - 1] == ' '))
            line[--l] = '\0';
        if (l == 0 || line[0] == '#')
            continue;
        if (n == sizeof hv / sizeof hv[0]) {
            fail("--upstream-header-file: at most 64 headers");
            once_free(text);
            return ONCE_EINVAL;
        }
        hv[n++] = line;
    }
    once_upstream_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.url = o->upstream;
    cfg.headers = hv;
    cfg.nheaders = n;
    cfg.principal_header = o->upstream_principal_header;
    cfg.deadline_ms = o->upstream_deadline_ms;
    int rc = once_executor_upstream(&cfg, ex, err, sizeof err);
    once_free(text);
    if (rc != ONCE_OK) {
        fail("--upstream: %s", err[0] ? err : once_strerror(rc));
        return rc;
    }
    if (*card != NULL)
        return ONCE_OK;
    rc = once__a2a_card_from_upstream(once_executor_upstream_card(*ex), card, err, sizeof err);
    if (rc != ONCE_OK)
        fail("--upstream %s: its card: %s", o->upstream,
                err[0] ? err : once_strerror(rc));
    return rc;
}

/* The gateway's card refresh found another upstream card (on its thread):
 * serve the members make_upstream would have taken from it at start. */
static int upstream_card_changed(void *server, const char *text, char *err, size_t errlen)
{
    json_t *members = NULL;
    int rc = once__a2a_card_from_upstream(text, &members, err, errlen);
    if (rc == ONCE_OK)
        rc = once__server_card_set(server, members);
    json_decref(members);
    return rc < 0 ? rc : ONCE_OK;
}

/* /readyz asks the gateway whether its upstream still answers. */
static int upstream_ready(void *ex, char *why, size_t n)
{
    return once_executor_upstream_ready(ex, why, n);
}

/* Signals: the handler only writes to a pipe the main thread reads, so any
 * thread may take the signal, and the main thread does the work (a reload,
 * a shutdown) as ordinary code. Handlers (unlike SIG_IGN or a blocked mask)
 * are reset in exec'd children, so executor subprocesses start clean. */
static int sig_pipe[2] = {-1, -1};
static volatile sig_atomic_t signals_seen;

/* The second SIGTERM/SIGINT ends the process where it stands, whatever the
 * shutdown is waiting for (_exit is async-signal-safe). */
static void on_signal(int sig)
{
    if (++signals_seen >= 2)
        _exit(128 + sig);
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    if (write(sig_pipe[1], &b, 1) < 0) {
        /* the pipe is full: a shutdown is already pending */
    }
    errno = saved;
}

/* SIGHUP: a reload, as many as are asked for (not counted as a stop). */
static void on_sighup(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    if (write(sig_pipe[1], &b, 1) < 0) {
        /* the pipe is full: reloads are pending already */
    }
    errno = saved;
}

static void on_sigpipe(int sig)
{
    (void)sig; /* a peer closed a pipe or socket: the write reports EPIPE */
}

static int install_signals(void)
{
    if (pipe(sig_pipe) != 0)
        return -1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_signal;
    if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0)
        return -1;
    sa.sa_handler = on_sighup;
    if (sigaction(SIGHUP, &sa, NULL) != 0)
        return -1;
    sa.sa_handler = on_sigpipe;
    return sigaction(SIGPIPE, &sa, NULL);
}

static int wait_for_signal(void)
{
    unsigned char b = 0;
    for (;;) {
        ssize_t n = read(sig_pipe[0], &b, 1);
        if (n == 1)
            return b;
        if (n < 0 && errno == EINTR)
            continue;
        return 0;
    }
}

/* --log-format's value, looked for before the flags are checked (the last
 * one given wins, as in parse_args), else the default: text on a terminal,
 * json otherwise. A value that is neither leaves the default, in which its
 * refusal is written. */
static int early_log_format(int argc, char **argv)
{
    int format = isatty(2) ? ONCE_LOG_TEXT : ONCE_LOG_JSON;
    const char *v = NULL;
    static const char flag[] = "--log-format";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], flag) == 0 && i + 1 < argc)
            v = argv[++i];
        else if (strncmp(argv[i], flag, sizeof flag - 1) == 0 && argv[i][sizeof flag - 1] == '=')
            v = argv[i] + sizeof flag;
    }
    int given = once__log_format_parse(v);
    return given >= 0 ? given : format;
}

/* A shutdown step as a log line (a second signal exits at once). */
static void log_shutdown(const char *event, const char *signal_name, int64_t drain_ms)
{
    once__logline l;
    if (!once__log_begin(&l, ONCE_LOG_INFO, event))
        return;
    once__log_str(&l, "signal", signal_name);
    if (drain_ms >= 0)
        once__log_int(&l, "drain_ms", drain_ms);
    once__log_end(&l);
}

/* The allocator that serves malloc(3) in this process, as the start line
 * names it: "jemalloc VERSION" when this thread's jemalloc count moves by
 * a malloc (linked and in front of the C library's), else "libc". */
static const char *allocator_name(char *buf, size_t n)
{
#ifdef ONCE_HAVE_JEMALLOC
    const char *version;
    uint64_t before, after;
    size_t vlen = sizeof version, len = sizeof before;
    if (mallctl("version", &version, &vlen, NULL, 0) == 0 &&
        mallctl("thread.allocated", &before, &len, NULL, 0) == 0) {
        void *volatile probe = malloc(4096);
        int moved = probe != NULL && mallctl("thread.allocated", &after, &len, NULL, 0) == 0 &&
                    after > before;
        free(probe);
        if (moved) {
            snprintf(buf, n, "jemalloc %s", version);
            return buf;
        }
    }
#endif
    (void)buf;
    (void)n;
    return "libc";
}

/* The start-up line: what this replica is, where it serves, what it keeps
 * its tasks in and the limits it runs with (each default filled in). */
static void log_start(const onced_opts *o, const once_server *server, const once_store *store,
                      const char *shown_store)
{
    once__logline l;
    if (!once__log_begin(&l, ONCE_LOG_INFO, "start"))
        return;
    once__log_str(&l, "version", once_version());
    once__log_str(&l, "listen", o->listen);
    once__log_str(&l, "url", once_server_url(server));
    once__log_str(&l, "metrics", o->metrics != NULL ? o->metrics : o->listen);
    once__log_str(&l, "store", shown_store);
    int schema = once__store_schema_version(store);
    if (schema > 0)
        once__log_int(&l, "schema_version", schema);
    once__log_str(&l, "replica", once__engine_replica_id(once__server_engine(server)));
    once__log_str(&l, "agent", o->exec_cmd != NULL ? "exec" : o->upstream != NULL ? "upstream"
                                                                                : "echo");
    once__log_str(&l, "auth", o->auth_tokens != NULL ? "tokens" : "none");
    once__log_int(&l, "pid", (int64_t)getpid());
    char alloc[80];
    once__log_str(&l, "allocator", allocator_name(alloc, sizeof alloc));
    once__server_log_limits(server, &l);
    once__log_end(&l);
}

/* The shutdown summary, the last line of a replica that served: how long it
 * ran and what it did (the engine's counters once it had stopped). A second
 * signal ends the process before it. */
static void log_stopped(int64_t started_ms, const once__engine_stats *st, int status)
{
    once__logline l;
    if (!once__log_begin(&l, ONCE_LOG_INFO, "stopped"))
        return;
    const struct {
        const char *key;
        int64_t value;
    } f[] = {
        {"uptime_ms", once_monotonic_ms() - started_ms},
        {"http_responses", (int64_t)once__metrics_http_total()},
        {"tasks_registered", (int64_t)st->registered},
        {"messages_continued", (int64_t)st->continued},
        {"sends_replayed", (int64_t)st->replayed},
        {"sends_refused", (int64_t)st->refused},
        {"turns", (int64_t)st->executed_turns},
        {"takeovers", (int64_t)st->takeovers},
        {"leases_released", (int64_t)st->leases_released},
        {"store_errors", (int64_t)st->store_errors},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        once__log_int(&l, f[i].key, f[i].value);
    once__log_int(&l, "exit", status);
    once__log_end(&l);
}

/* Sleep ms (a second signal ends the process meanwhile: on_signal). */
static void pause_ms(int64_t ms)
{
    int64_t until = once_monotonic_ms() + ms;
    for (int64_t left = ms; left > 0; left = until - once_monotonic_ms()) {
        struct timespec ts = {(time_t)(left / 1000), (long)(left % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* The first signal's grace period: refuse new calls (readyz 503) and wait
 * until the calls in progress are answered or grace_ms passed, whichever
 * comes first; once_server_stop does the rest. (A second signal ends the
 * process in on_signal.) */
static void drain(once_server *server, int64_t grace_ms)
{
    once_server_drain(server);
    int64_t until = once_monotonic_ms() + grace_ms;
    for (;;) {
        int64_t left = until - once_monotonic_ms();
        if (once__server_calls(server) == 0 || left <= 0)
            return;
        /* The calls counter has no wake-up of its own: look again every
         * 20 ms. */
        struct timespec ts = {0, (left < 20 ? left : 20) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* The connection limits (--max-connections and the store, stream, push and
 * agent descriptors on top) need more descriptors than the usual soft limit
 * of 1024: raise it to the hard limit. Failing to is not fatal; the limits
 * then bite at the old number, and accept() errors are logged. */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max)
        return;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
        char msg[128];
        snprintf(msg, sizeof msg, "could not raise the open-file limit: %s", strerror(errno));
        once__log_note(ONCE_LOG_WARN, "config", msg);
    }
}

/* Turn workers of the built-in executor and the gateway on a store that
 * waits for I/O. */
#define TURN_WORKERS_IO 64
/* --upstream-card-refresh's default. */
#define UPSTREAM_CARD_REFRESH_MS (5 * 60 * 1000)

/* --workers' default with memory:: two per CPU, at least two. */
static unsigned memory_workers(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 1 ? (unsigned)(2 * n) : 2;
}

/* One onced: the flags, what they resolved to, and the pieces started from
 * them, in the order they start (teardown stops them in reverse). Only
 * main's thread touches it; the clock, engine and server keep pointers into
 * it, so it lives as long as main (static in main). */
typedef struct onced_run {
    onced_opts o;
    char host[256], ghost[256], mhost[256];   /* --listen, --grpc-listen, --metrics */
    int port, gport, mport, mmode;
    int log_level;
    once_offset_clock clock;
    once_tokens *tokens;
    json_t *card;
    once_store *store;
    once_executor *sub;          /* --exec or --upstream; NULL: echo */
    const once_executor *ex;     /* the one turns run on */
    once_server *server;
    int serving;                 /* the start-up line was written */
} onced_run;

/* The addresses and log settings the flags name, checked before anything
 * starts: 0, or the exit status (2 bad, 1 an unreadable --log-level-file). */
static int resolve_flags(onced_run *d)
{
    const onced_opts *o = &d->o;
    if (once__parse_listen(o->listen, d->host, sizeof d->host, &d->port) != ONCE_OK ||
        d->port == 0)
        return bad("--listen: expected HOST:PORT with a port from 1 to 65535, got %s", o->listen);
    if (o->grpc_listen != NULL &&
        (once__parse_listen(o->grpc_listen, d->ghost, sizeof d->ghost, &d->gport) != ONCE_OK ||
         d->gport == 0))
        return bad("--grpc-listen: expected HOST:PORT with a port from 1 to 65535, got %s",
                   o->grpc_listen);
    d->log_level = ONCE_LOG_INFO;
    if (o->log_format != NULL && once__log_format_parse(o->log_format) < 0)
        return bad("--log-format: expected text or json, got %s", o->log_format);
    if (o->log_level != NULL && (d->log_level = once__log_level_parse(o->log_level)) < 0)
        return bad("--log-level: expected error, warn, info or debug, got %s", o->log_level);
    char err[512] = "";
    if (o->log_level_file != NULL &&
        once__log_level_file_load(o->log_level_file, &d->log_level, err, sizeof err) != ONCE_OK) {
        if (!o->check_config)
            return refuse(1, "--log-level-file %s", err);
        d->log_level = ONCE_LOG_INFO;   /* check_config reports it with the rest */
    }
    once__log_setup(d->log_level, log_format, 2);
    d->mmode = ONCE_HTTP_METRICS_HERE;
    if (o->metrics != NULL && strcmp(o->metrics, "off") == 0) {
        d->mmode = ONCE_HTTP_METRICS_OFF;
    } else if (o->metrics != NULL) {
        if (once__parse_listen(o->metrics, d->mhost, sizeof d->mhost, &d->mport) != ONCE_OK ||
            d->mport == 0)
            return bad("--metrics: expected off or ADDR:PORT, got %s", o->metrics);
        d->mmode = ONCE_HTTP_METRICS_APART;
    }
    return 0;
}

/* The files, the store and the agent: 0, or -1 with the failure logged. */
static int open_pieces(onced_run *d)
{
    const onced_opts *o = &d->o;
    char err[512] = "";
    int rc;
    once_offset_clock_init(&d->clock, o->clock_offset_ms);
    if (o->auth_tokens != NULL &&
        once__tokens_load(o->auth_tokens, &d->tokens, err, sizeof err) != ONCE_OK) {
        fail("--auth-tokens %s", err);
        return -1;
    }
    if (o->card != NULL && load_card(o->card, &d->card) != ONCE_OK)
        return -1;
    /* Durability and lock waits come from the store URL (defaults: FULL,
     * 5 s); only the clock and whether to migrate are onced's to give. */
    once_store_options so;
    memset(&so, 0, sizeof so);
    so.clock = &d->clock.base;
    so.flags = o->no_migrate ? ONCE_STORE_OPEN_NO_MIGRATE : 0u;
    if ((rc = once_store_open(o->store, &so, &d->store, err, sizeof err)) != ONCE_OK) {
        fail("--store: %s (%s)", err[0] ? err : "cannot open", once_strerror(rc));
        return -1;
    }
    d->ex = once_executor_echo();
    if (o->exec_cmd != NULL) {
        if ((rc = once_executor_subprocess(o->exec_cmd, o->grace_ms, o->deadline_ms, &d->sub)) !=
            ONCE_OK) {
            fail("--exec: %s", once_strerror(rc));
            return -1;
        }
        d->ex = d->sub;
    } else if (o->upstream != NULL) {
        if (make_upstream(o, &d->sub, &d->card) != ONCE_OK)
            return -1;
        d->ex = d->sub;
    }
    return 0;
}

/* A per-principal share of a limit: the flag's value, else a quarter with
 * --auth-tokens, else none (without tokens every caller is one principal:
 * a share would only shrink the limit). */
static int share(unsigned given, const once_tokens *tokens, int none)
{
    return given != 0 ? (int)given : tokens != NULL ? ONCE__SHARE_QUARTER : none;
}

static void engine_config(const onced_run *d, once_serve_config *sc)
{
    const onced_opts *o = &d->o;
    sc->engine.store = d->store;
    sc->engine.clock = &d->clock.base;
    sc->engine.executor = d->ex;
    sc->engine.replica_id = o->replica_id;
    sc->engine.lease_ms = o->lease_ms;
    sc->engine.retention_ms = o->retention_ms >= 0 ? o->retention_ms : 0;
    sc->engine.tombstone_ms = o->tombstone_ms >= 0 ? o->tombstone_ms : 0;
    sc->engine.max_wait_ms = o->max_wait_ms;
    sc->engine.experiment_naive = o->experiment_naive;
    sc->engine.plain_ids = o->plain_ids != NULL && strcmp(o->plain_ids, "server") == 0
                               ? ONCE_PLAIN_IDS_SERVER
                               : ONCE_PLAIN_IDS_DERIVED;
    /* A turn of the built-in executor waits for nothing but the store, and
     * on a store that waits for disk or network each of its writes waits
     * for a commit: turns then run at most --turn-workers per commit time.
     * 16 capped returnImmediately sends on PostgreSQL and Redis below what
     * the requests admitted, the turn queue filled, and the refusals took
     * the CPU the turns needed (bench/backends.md, "Group commit on by
     * default"); 64 threads that mostly sleep cost little. A gateway's
     * turn holds its worker while its upstream task changes (it parks
     * while the task is quiet), so 64 bound those too. An --exec turn's
     * time is its command's: those stay at the engine's 16. */
    int in_memory = strncmp(o->store, "memory:", 7) == 0;
    sc->engine.workers = o->turn_workers != 0 || in_memory || o->exec_cmd != NULL
                             ? (int)o->turn_workers /* 0 = the engine's default */
                             : TURN_WORKERS_IO;
    sc->engine.max_queue = (int)o->max_queue;  /* 0 = the engine's default */
    sc->engine.max_waits = (int)o->max_waits;
    sc->engine.max_waits_per_principal = share(o->max_waits_pp, d->tokens, INT_MAX);
    sc->engine.max_queue_per_principal = share(o->max_queue_pp, d->tokens, 0);
    sc->engine.max_task_bytes = (int64_t)o->max_task_size;
}

static void a2a_config(onced_run *d, once_serve_config *sc)
{
    const onced_opts *o = &d->o;
    sc->a2a.url = o->public_url; /* NULL: http://HOST:PORT/ */
    sc->a2a.skill_id = o->exec_cmd ? "exec" : o->upstream ? "upstream" : "echo";
    sc->a2a.skill_description =
        o->exec_cmd   ? "Runs the configured command for each turn of a task."
        : o->upstream ? "Runs each turn on the upstream agent."
                      : "Echoes text; ask:Q asks Q, sleep:N works N seconds, fail fails.";
    sc->a2a.card = d->card;
    sc->a2a.test_admin = o->test_admin;
    sc->a2a.admin_principals = o->admin_principals;
    sc->a2a.clock = &d->clock;
    sc->push.secrets = o->push_secrets.v;
    sc->push.nsecrets = o->push_secrets.n;
    sc->push.allow = o->push_allow.v;
    sc->push.nallow = o->push_allow.n;
    sc->push.max_attempts = (int)o->push_attempts;
    sc->push.timeout_ms = o->push_timeout_ms;
    sc->push.backoff_ms = o->push_backoff_ms;
}

static void http_config(onced_run *d, once_serve_config *sc)
{
    const onced_opts *o = &d->o;
    sc->http.host = d->host;
    sc->http.port = d->port;
    sc->http.grpc_host = o->grpc_listen != NULL ? d->ghost : NULL;
    sc->http.grpc_port = d->gport;
    sc->http.grpc_streams = o->grpc_streams;
    sc->http.tokens = d->tokens;
    sc->http.max_streams_per_principal = share(o->max_streams_pp, d->tokens, 0);
    sc->http.inspect.on = o->inspect;
    sc->http.threads = o->threads;
    /* A call on memory: never waits for I/O, so threads past the CPUs
     * only contend for its locks (bench/README.md: about a third less CPU
     * per new task at 4 than at 64 on two CPUs); the other stores wait on
     * disk or network, and their concurrent writes share commits. */
    int in_memory = strncmp(o->store, "memory:", 7) == 0;
    sc->http.workers = o->workers != 0 || !in_memory ? o->workers : memory_workers();
    /* The same reason runs its calls on the HTTP threads themselves. */
    sc->http.inline_calls = in_memory;
    sc->http.max_body = (size_t)o->max_body;
    sc->http.conn_memory = (size_t)o->conn_memory;
    sc->http.max_streams = o->max_streams;
    sc->http.sse_ping_ms = o->sse_ping_ms;
    sc->http.limits.request_timeout_ms = o->request_timeout_ms; /* 0 = the defaults */
    sc->http.limits.max_connections = o->max_connections;
    sc->http.limits.max_per_ip = o->max_per_ip;
    sc->http.limits.max_body_memory = (size_t)o->max_body_memory;
    sc->http.ops.metrics_mode = d->mmode;
    sc->http.ops.metrics_host = d->mhost;
    sc->http.ops.metrics_port = d->mport;
    if (o->upstream != NULL) {
        sc->http.ops.also_ready = upstream_ready;
        sc->http.ops.also_ctx = d->sub;
    }
    sc->http.tls_cert_file = o->tls_cert;
    sc->http.tls_key_file = o->tls_key;
    sc->http.tls_priority = o->tls_priority;
    sc->http.allowed_hosts = o->allowed_hosts.v;
    sc->http.nallowed_hosts = o->allowed_hosts.n;
    sc->http.cors_origins = o->cors_origins.v;
    sc->http.ncors_origins = o->cors_origins.n;
}

/* What a person starting onced should know: the start-up line, and the
 * warnings of a configuration that runs but lacks something. */
static void announce(onced_run *d)
{
    const onced_opts *o = &d->o;
    char shown[512];
    once__store_url_redact(o->store, shown, sizeof shown);
    /* In text, the line a person at a terminal starts onced to see, on
     * stdout; in json stdout stays empty, and the start line says it all. */
    if (log_format == ONCE_LOG_TEXT) {
        printf("onced listening on %s replica=%s store=%s\n", once_server_url(d->server),
               once__engine_replica_id(once__server_engine(d->server)), shown);
        fflush(stdout);
    }
    log_start(o, d->server, d->store, shown);
    d->serving = 1;
    if (o->experiment_naive)
        once__log_note(ONCE_LOG_WARN, "config", "--experiment-naive: the idempotency layer is "
                       "OFF (every send makes a new task); for the amplification experiment only");
    if (!once__engine_push_supported(once__server_engine(d->server)))
        once__log_note(ONCE_LOG_WARN, "config", "this store keeps no push delivery state: push "
                                                "notifications are off");
    else if (o->push_secrets.n == 0)
        once__log_note(ONCE_LOG_WARN, "config", "no --push-secret: webhooks are sent without "
                                                "webhook-signature");
}

/* The server up and announced: 0, or -1 with the failure logged. */
static int start_serving(onced_run *d)
{
    const onced_opts *o = &d->o;
    once_serve_config sc;
    char err[512] = "";
    int rc;
    memset(&sc, 0, sizeof sc);
    engine_config(d, &sc);
    a2a_config(d, &sc);
    http_config(d, &sc);
    if ((rc = once__serve_start(&sc, &d->server, err, sizeof err)) != ONCE_OK) {
        fail("%s", err[0] ? err : once_strerror(rc));
        return -1;
    }
    /* The refresh starts once the server it updates is up; it is stopped
     * before the server goes (teardown). --card describes the agent itself:
     * then a refresh only keeps /readyz honest. */
    int64_t refresh_ms =
        o->upstream_card_refresh_ms >= 0 ? o->upstream_card_refresh_ms : UPSTREAM_CARD_REFRESH_MS;
    if (o->upstream != NULL && refresh_ms > 0 &&
        (rc = once_executor_upstream_refresh(d->sub, refresh_ms,
                                             o->card != NULL ? NULL : upstream_card_changed,
                                             d->server)) != ONCE_OK) {
        fail("--upstream-card-refresh: %s", once_strerror(rc));
        return -1;
    }
    announce(d);
    /* Under systemd (Type=notify) the unit is started only now, when the
     * port serves; elsewhere NOTIFY_SOCKET is unset and this does nothing. */
    sd_notifyf(0, "READY=1\nSTATUS=serving on %s", once_server_url(d->server));
    return 0;
}

/* Serve, reloading at each SIGHUP, until SIGTERM/SIGINT; then leave the
 * load balancer's rotation and drain. Returns the exit status, 0. */
static int serve_until_signal(onced_run *d)
{
    const onced_opts *o = &d->o;
    once__reload_files reload = {d->tokens, o->auth_tokens, o->tls_cert != NULL, o->card,
                                 o->log_level_file};
    int sig;
    while ((sig = wait_for_signal()) == SIGHUP) {
        sd_notify(0, "RELOADING=1\nSTATUS=reloading");
        once__server_reload(d->server, &reload);
        sd_notifyf(0, "READY=1\nSTATUS=serving on %s", once_server_url(d->server));
    }
    const char *signal_name = sig == SIGINT ? "SIGINT" : "SIGTERM";
    sd_notify(0, "STOPPING=1\nSTATUS=draining");
    if (o->drain_delay_ms > 0) {
        /* Not ready while still serving: a load balancer polling /readyz
         * stops sending here before the drain refuses what still comes. */
        once_server_unready(d->server);
        log_shutdown("not_ready", signal_name, o->drain_delay_ms);
        pause_ms(o->drain_delay_ms);
    }
    log_shutdown("draining", signal_name, o->drain_ms);
    drain(d->server, o->drain_ms);
    log_shutdown("stopping", NULL, -1);
    return 0;
}

/* Stop what started, in reverse (every piece may be NULL: a start-up that
 * failed half-way); the exit status, 1 when the store failed to close. */
static int teardown(onced_run *d, int status, int64_t started_ms)
{
    once__engine_stats last;
    memset(&last, 0, sizeof last);
    once_executor_upstream_refresh_stop(d->sub); /* it calls into the server */
    once__server_stop(d->server, &last); /* HTTP first, then the engine's workers */
    once_executor_free(d->sub);
    if (once_store_close(d->store) != ONCE_OK) {
        once__log_note(ONCE_LOG_ERROR, "store_error", "closing the store failed");
        status = 1;
    }
    once__tokens_free(d->tokens);
    json_decref(d->card);
    if (d->serving)
        log_stopped(started_ms, &last, status);
    return status;
}

int main(int argc, char **argv)
{
    static onced_run d;
    int64_t started_ms = once_monotonic_ms();
    log_format = early_log_format(argc, argv);
    once__log_setup(ONCE_LOG_INFO, log_format, 2);
    if (argc > 1 && strcmp(argv[1], "migrate") == 0)
        return migrate_main(argc - 1, argv + 1);
    onced_opts_init(&d.o);
    int rc = parse_args(argc, argv, &d.o);
    if (rc == 0)
        rc = resolve_flags(&d);
    if (rc != 0)
        return rc;
    if (d.o.check_config)
        return check_config(&d.o);
    if (install_signals() != 0) {
        fail("signals: %s", strerror(errno));
        return 1;
    }
    raise_fd_limit();
    int status = 1;
    if (open_pieces(&d) == 0 && start_serving(&d) == 0)
        status = serve_until_signal(&d);
    return teardown(&d, status, started_ms);
}
