/*
 * onced.c -- the once A2A server: parse flags, wire store -> engine ->
 * codec -> HTTP, run until SIGTERM/SIGINT (SIGHUP reads the files again:
 * http/reload.h), shut down in reverse order.
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

#include "core/log.h"
#include "core/metrics.h"
#include "http/http.h"
#include "http/reload.h"
#include "http/serve.h"
#include "http/tls.h"
#include "once/executor.h"
#include "once/store.h"
#include "store/store_info.h"

static const char usage[] =
    "usage: onced --listen HOST:PORT --store URL [options]\n"
    "       onced migrate --store URL [--dry-run]\n"
    "\n"
    "The once A2A 1.0 server: idempotent task sends over JSON-RPC and HTTP+JSON.\n"
    "\n"
    "required:\n"
    "  --listen HOST:PORT          address to serve on ([v6addr]:PORT for IPv6)\n"
    "  --store URL                 task registry: @SCHEMES@\n"
    "                              (replicas sharing one store cooperate). Its schema\n"
    "                              is created or migrated at start (the start-up line\n"
    "                              names its schema_version)\n"
    "store schema:\n"
    "  --no-migrate                change no schema: refuse to start (exit 1) on a store\n"
    "                              whose schema is older than this once's, or absent,\n"
    "                              naming both versions; run onced migrate first\n"
    "                              (docs/production.md, \"Upgrade\")\n"
    "agent:\n"
    "  --executor echo             built-in test agent (default): \"ask:Q\" asks Q,\n"
    "                              \"sleep:N\" works N s, \"fail\" fails, else echoes\n"
    "  --exec CMD                  run CMD (/bin/sh -c) for each turn of a task\n"
    "                              (JSON-lines protocol: docs/protocol.md)\n"
    "  --upstream URL              gateway: run every turn as an ordinary A2A 1.0\n"
    "                              client of the existing agent at URL (its card is\n"
    "                              read at start; onced does not start when it cannot\n"
    "                              be read). One upstream task per once task: a turn\n"
    "                              that runs again (takeover, lost answer) re-attaches\n"
    "                              to it. The card served is the upstream's name,\n"
    "                              description, skills, modes and security schemes\n"
    "                              with onced's interfaces and the once extension\n"
    "  --upstream-header 'N: V'    a header sent on every upstream request (e.g.\n"
    "                              'Authorization: Bearer ...'); repeatable\n"
    "  --upstream-header-file FILE more such headers, one 'Name: value' a line ('#'\n"
    "                              comments): secrets stay off the command line\n"
    "  --upstream-deadline DUR     how long one upstream call is retried (connection\n"
    "                              refused, 5xx, timeouts; full-jitter backoff up to\n"
    "                              5s, the client's retry budget) before the task\n"
    "                              fails naming the upstream (60s)\n"
    "  --upstream-principal-header NAME\n"
    "                              send the caller's principal upstream in header NAME\n"
    "                              (off: the upstream sees only onced's headers)\n"
    "  --upstream-card-refresh DUR read the upstream's card again this often, 0 = never\n"
    "                              (5m; If-None-Match, a 304 changes nothing): a changed\n"
    "                              card changes the card served and its ETag, never the\n"
    "                              binding or rung chosen at start; a refresh that gets\n"
    "                              no answer or a 5xx turns /readyz 503 naming the\n"
    "                              upstream until one gets an answer again\n"
    "  --exec-grace DUR            SIGTERM -> SIGKILL delay when a turn is canceled (5s)\n"
    "  --exec-deadline DUR         per-turn time limit, 0 = none (0)\n"
    "  --turn-workers N            turns that run at once, one thread each (16; 64 for\n"
    "                              the built-in executor and --upstream on a store\n"
    "                              other than memory:; a gateway's turn parks, holding no\n"
    "                              worker, while its upstream task is quiet); more wait in a\n"
    "                              queue; a turn takes its lease when it starts\n"
    "  --max-queue N               turns that may wait for a worker (16 per turn worker);\n"
    "                              past it a send that would start one waits up to 100 ms\n"
    "                              for room, then gets HTTP 503 + Retry-After, -32603\n"
    "                              OVERLOADED, and nothing is stored\n"
    "  --max-queue-per-principal N of those, per principal; past it that principal's\n"
    "                              sends get OVERLOADED while others still get in\n"
    "                              (with --auth-tokens a quarter of --max-queue, else\n"
    "                              all of it). Workers take the oldest turn of the\n"
    "                              principal with the fewest turns running\n"
    "  --max-task-size BYTES       largest stored task (4MiB); a send that would grow it\n"
    "                              past that gets -32602, an agent's output fails the task\n"
    "identity and time:\n"
    "  --auth-tokens FILE          bearer tokens, one \"TOKEN PRINCIPAL\" per line ('#'\n"
    "                              comments); without it every caller is \"anonymous\"\n"
    "  --admin-principals P1,P2    principals allowed the operator methods\n"
    "                              (once/admin/replicas), each call logged as an\n"
    "                              \"admin\" line; nobody by default (403). Without\n"
    "                              --auth-tokens only \"anonymous\" opens them, to all\n"
    "  --plain-ids derived|server  the task ID of a plain first message (no extension,\n"
    "                              no taskId): derived from (principal, messageId), so\n"
    "                              its retry replays (derived, the default); or a fresh\n"
    "                              server-minted one per message, as other A2A servers\n"
    "                              do (server). With the extension sends dedup in both\n"
    "                              modes\n"
    "  --retention DUR             keep finished tasks in full this long (72h)\n"
    "  --tombstone-retention DUR   then remember their IDs as TASK_EXPIRED this long (30d)\n"
    "  --lease DUR                 execution lease; a replica that stops heartbeating\n"
    "                              loses its tasks to another after this long (15s)\n"
    "  --replica-id NAME           this replica's name in leases (hostname-pid)\n"
    "HTTP:\n"
    "  --grpc-listen HOST:PORT     also serve A2A's gRPC binding (lf.a2a.v1.A2AService)\n"
    "                              there: HTTP/2 over TLS with --tls-cert, else h2c\n"
    "                              (plaintext, for loopback and tests); the same\n"
    "                              tokens, workers, streams and limits as HTTP, and\n"
    "                              the card lists it as protocolBinding GRPC (off)\n"
    "  --grpc-streams-per-connection N\n"
    "                              gRPC calls one HTTP/2 connection may have open at\n"
    "                              once (SETTINGS_MAX_CONCURRENT_STREAMS); past it a\n"
    "                              new one is refused (REFUSED_STREAM) (100)\n"
    "  --threads N                 HTTP (epoll) threads (2)\n"
    "  --workers N                 threads running A2A calls (both bindings); a blocking\n"
    "                              SendMessage waits without one (64; with memory:,\n"
    "                              two per CPU)\n"
    "  --max-body BYTES            largest request body, e.g. 1MiB, 512k (1MiB);\n"
    "                              larger bodies get HTTP 413\n"
    "  --conn-memory BYTES         each connection's memory for the request's head and\n"
    "                              the reply's (4KiB-1MiB): about 1KiB less of request\n"
    "                              headers is served, larger heads get HTTP 431; most\n"
    "                              of what an idle SSE stream costs (12KiB)\n"
    "  --max-wait DUR              longest a blocking SendMessage waits (60s); a waiting\n"
    "                              send holds its connection but no thread\n"
    "  --max-waits N               blocking sends waiting at once (10000)\n"
    "  --max-waits-per-principal N of those, per principal (with --auth-tokens a\n"
    "                              quarter of --max-waits, else all of them); past\n"
    "                              either a blocking send answers at once with the\n"
    "                              task as it stands (the client polls or subscribes)\n"
    "  --max-streams N             SSE streams served at once; past it HTTP 503 (10000)\n"
    "  --max-streams-per-principal N\n"
    "                              of those, per principal; past it that principal's\n"
    "                              streams get HTTP 503 while others still get slots\n"
    "                              (with --auth-tokens a quarter of --max-streams,\n"
    "                              else all of them)\n"
    "  --request-timeout DUR       a request's head and body must be in within DUR of\n"
    "                              the connection's accept or its previous response,\n"
    "                              else it is closed; SSE streams are not cut (30s)\n"
    "  --max-connections N         connections at once; past it the oldest one still\n"
    "                              waiting for its request is closed to make room\n"
    "                              (16384; onced raises its open-file limit to the\n"
    "                              hard limit, which should leave room for them)\n"
    "  --max-connections-per-ip N  connections at once from one client address; behind\n"
    "                              a load balancer raise it to --max-connections (128)\n"
    "  --max-body-memory BYTES     request bodies held at once; past it the oldest\n"
    "                              incomplete upload is closed, or the request gets\n"
    "                              HTTP 503 + Retry-After (64MiB)\n"
    "  --sse-ping DUR              keep-alive comment on an idle stream (15s)\n"
    "  --inspect                   serve the task inspector at /inspect/: the caller's\n"
    "                              tasks and each one's timeline (HTML; JSON at\n"
    "                              /inspect/api/task/ID), behind --auth-tokens like\n"
    "                              every call (off)\n"
    "  --tls-cert FILE             serve HTTPS with this PEM certificate (then any\n"
    "                              intermediates); needs --tls-key. The card's URLs\n"
    "                              say https. A missing or unreadable file, one that\n"
    "                              is not PEM, or a key of another certificate stops\n"
    "                              onced naming it. --metrics ADDR:PORT stays HTTP\n"
    "  --tls-key FILE              the certificate's PEM private key (unencrypted)\n"
    "  --tls-priority STRING       the GnuTLS priority string served (default: TLS 1.2\n"
    "                              and 1.3, key exchanges with forward secrecy only)\n"
    "  --allowed-hosts H1,H2       the names a request's Host may carry (any port;\n"
    "                              repeatable; * = any); others get HTTP 421 (DNS\n"
    "                              rebinding). Default: the --listen address,\n"
    "                              localhost, 127.0.0.1 and [::1] when it is loopback,\n"
    "                              any name otherwise; --public-url's host always.\n"
    "                              /healthz, /readyz, /metrics also take IP addresses\n"
    "                              and localhost\n"
    "  --cors-origin ORIGIN        let web pages of ORIGIN (scheme://host[:port]) call\n"
    "                              the A2A endpoints, with CORS answers; repeatable.\n"
    "                              A call that changes state from a page of any other\n"
    "                              origin gets HTTP 403, and a body must be sent as\n"
    "                              application/json (else HTTP 415)\n"
    "  --public-url URL            the URL the agent card advertises for both bindings\n"
    "                              (http://HOST:PORT/); its path also serves JSON-RPC\n"
    "                              (POST to it) and the HTTP+JSON routes below it\n"
    "                              (/message:send, /tasks/ID, ...: docs/wire.md)\n"
    "  --card FILE                 a JSON object describing the agent in the card:\n"
    "                              name, description, provider {organization, url},\n"
    "                              version, documentationUrl, iconUrl, skills [{id,\n"
    "                              name, description, tags, examples?, inputModes?,\n"
    "                              outputModes?}], defaultInputModes,\n"
    "                              defaultOutputModes. Interfaces, capabilities,\n"
    "                              extensions and security are onced's: a file that\n"
    "                              sets them, or any bad member, stops onced with a\n"
    "                              message naming it. Default: the echo / --exec card\n"
    "push notifications (docs/protocol.md, \"Push notifications\"):\n"
    "  --push-secret S             sign webhooks with S (Standard Webhooks; whsec_<base64>\n"
    "                              or 16+ bytes); repeat to rotate, newest first: every\n"
    "                              delivery carries one signature per secret\n"
    "  --push-allow CIDR           let webhooks reach this loopback/private range\n"
    "                              (refused by default: SSRF guard); repeatable\n"
    "  --push-attempts N           failed attempts on one event after which the config's\n"
    "                              lastError reports them; retries go on (only a 410\n"
    "                              disables a config) (10)\n"
    "  --push-timeout DUR          one webhook POST (10s)\n"
    "  --push-backoff DUR          first retry delay bound; doubles per attempt up to\n"
    "                              5m, full jitter; Retry-After wins when longer (1s)\n"
    "operations (docs/architecture.md, \"Observability\"; never behind --auth-tokens):\n"
    "  GET /healthz                200 while the process serves\n"
    "  GET /readyz                 200 when the store answers, onced is not draining\n"
    "                              and (--upstream) the last card refresh reached the\n"
    "                              upstream; else 503 with the reason\n"
    "  --metrics off|ADDR:PORT     GET /metrics (Prometheus text format) is served on\n"
    "                              --listen by default; off, or on this numeric address\n"
    "                              alone\n"
    "  --drain-delay DUR           on SIGTERM/SIGINT, first: /readyz turns 503 while calls\n"
    "                              are still served, this long (3s), so that a load\n"
    "                              balancer stops sending here; 0 = none\n"
    "  --drain DUR                 then: /readyz stays 503 and new calls get\n"
    "                              503 at once; calls in progress get up to DUR to finish\n"
    "                              (10s); then running turns stop and their leases are\n"
    "                              released for another replica, blocked sends answer\n"
    "                              with the task as it stands, streams end; exit 0. A\n"
    "                              second signal exits at once (status 128 + signal)\n"
    "  --log-format text|json      structured log lines on stderr: start-up (version,\n"
    "                              addresses, store, limits), one per JSON-RPC call\n"
    "                              (method, principal, task, outcome, status,\n"
    "                              duration_ms, path, client, request_id: the\n"
    "                              X-Request-Id given, else a new one, sent back),\n"
    "                              takeover, fence rejection, store error, webhook\n"
    "                              failure and the shutdown summary, each naming its\n"
    "                              task and the request's W3C traceparent; text on a\n"
    "                              terminal, json otherwise (journald, files,\n"
    "                              collectors). In json every line is JSON, a refused\n"
    "                              command line too, and stdout stays empty\n"
    "  --log-level LEVEL           error, warn, info (default; every request) or debug\n"
    "  --log-level-file FILE       the level, one word in FILE, read at start and at\n"
    "                              every SIGHUP (instead of --log-level)\n"
    "reload (SIGHUP; docs/production.md, \"Reload\"):\n"
    "                              SIGHUP reads --auth-tokens, --tls-cert/--tls-key,\n"
    "                              --card and --log-level-file again. Each is checked\n"
    "                              whole before it replaces the one served; a bad file\n"
    "                              keeps the old and logs why (event reload). New TLS\n"
    "                              connections get the new certificate, open ones keep\n"
    "                              theirs. Other flags need a restart\n"
    "  --check-config              check the flags and read every file they name as\n"
    "                              start-up would (the store URL by its scheme only:\n"
    "                              nothing is opened or connected to); print each\n"
    "                              problem, or \"configuration OK\", and exit 0 or 2\n"
    "  --version                   print the version and exit\n"
    "  --help                      this text\n"
    "testing only (never in production):\n"
    "  --clock-offset DUR          run the clock this far ahead (or behind: -DUR) of\n"
    "                              real time; for tests and demos (0)\n"
    "  --test-admin                enable once/admin/setClockOffset and once/admin/stats\n"
    "                              (test configurations only)\n"
    "  --experiment-naive          EXPERIMENT ONLY (make amplify): idempotency off. Every\n"
    "                              first message registers a new task under a random\n"
    "                              server-minted ID, whatever its messageId; client task\n"
    "                              IDs are refused (TASK_NOT_FOUND). The baseline the\n"
    "                              amplification experiment measures once against\n"
    "\n"
    "DUR is a number with a unit: 500ms, 30s, 5m, 72h, 30d (or combined: 1h30m).\n"
    "\n"
    "onced migrate --store URL [--dry-run]\n"
    "  apply the store's pending schema migrations and exit: prints \"store at version\n"
    "  N; applied N+1..M\" or \"up to date (version M)\"; --dry-run only says which\n"
    "  are pending and writes nothing. Exit status 0 when the store is (or, dry, could\n"
    "  be) at this once's version; 1 when it cannot be opened or a newer once migrated\n"
    "  it; 2 for a bad command line\n";

/* usage, its @SCHEMES@ replaced by the store URLs this build takes
 * (once__store_schemes: a backend left out is not named), wrapped under
 * the option texts (column 30) within 78 columns. */
static void print_usage(void)
{
    const char *mark = strstr(usage, "@SCHEMES@"), *line = mark;
    while (line > usage && line[-1] != '\n')
        line--;
    size_t col = (size_t)(mark - line);
    int bare = 1;   /* nothing printed on this line yet */
    fwrite(usage, 1, (size_t)(mark - usage), stdout);
    for (const char *p = once__store_schemes(); *p != '\0';) {
        size_t n = strcspn(p, " ");   /* a URL and its comma */
        if (!bare && col + 1 + n > 78) {
            printf("\n%30s", "");
            col = 30;
            bare = 1;
        }
        if (!bare)
            col += (size_t)printf(" ");
        col += fwrite(p, 1, n, stdout);
        bare = 0;
        p += n + (p[n] == ' ');
    }
    fputs(mark + strlen("@SCHEMES@"), stdout);
}

static const char migrate_usage[] =
    "usage: onced migrate --store URL [--dry-run]\n"
    "\n"
    "Apply the store's pending schema migrations, then exit, so that a rollout\n"
    "migrates once before replicas started with --no-migrate come up\n"
    "(docs/production.md, \"Upgrade\").\n"
    "\n"
    "  --store URL    the store, as onced --store takes it\n"
    "  --dry-run      only say which migrations are pending; write nothing\n"
    "\n"
    "Prints \"store at version N; applied N+1..M (now at version M)\", or with\n"
    "--dry-run \"store at version N; would apply N+1..M\", or \"up to date (version\n"
    "M)\". Version 0 is a store with no schema yet. Exit status: 0 done (or up to\n"
    "date); 1 the store cannot be opened, or a newer once migrated it; 2 a bad\n"
    "command line.\n";

typedef struct opts {
    const char *listen, *grpc_listen, *store, *executor, *exec_cmd, *auth_tokens, *replica_id, *public_url,
        *card, *admin_principals,
        *plain_ids;
    const char *upstream, *upstream_header_file, *upstream_principal_header;
    const char *upstream_headers[32];
    size_t nupstream_headers;
    int64_t upstream_deadline_ms;
    int64_t upstream_card_refresh_ms;   /* -1 = not given */
    int64_t retention_ms, tombstone_ms, lease_ms, clock_offset_ms, grace_ms, deadline_ms,
        max_wait_ms;
    uint64_t max_body, max_task_size, conn_memory;
    unsigned threads, workers, grpc_streams, max_streams, turn_workers, max_queue, max_waits, max_waits_pp;
    unsigned max_queue_pp, max_streams_pp;
    int64_t sse_ping_ms;
    int64_t request_timeout_ms;
    unsigned max_connections, max_per_ip;
    uint64_t max_body_memory;
    int test_admin, experiment_naive, inspect, no_migrate;
    const char *push_secrets[8], *push_allow[32];
    size_t npush_secrets, npush_allow;
    const char *allowed_hosts[32], *cors_origins[32];
    size_t nallowed_hosts, ncors_origins;
    unsigned push_attempts;
    int64_t push_timeout_ms, push_backoff_ms;
    const char *metrics;
    int64_t drain_ms;
    int64_t drain_delay_ms;
    const char *log_format, *log_level, *log_level_file;
    const char *tls_cert, *tls_key, *tls_priority;
    int check_config;
} opts;

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

static int parse_dur(const char *flag, const char *v, int neg, int64_t *out)
{
    int rc = once__parse_duration(v, neg, out);
    if (rc == ONCE_ERANGE)
        return bad("%s: duration too large: %s", flag, v);
    if (rc != ONCE_OK)
        return bad("%s: not a duration: %s (use e.g. 500ms, 30s, 5m, 72h, 30d)", flag, v);
    return 0;
}

/* The default --drain-delay: a few of a load balancer's readiness probes. */
#define DRAIN_DELAY_MS 3000

/* The bound of the counts of things held without a thread each. */
#define MANY_MAX 1000000

static int parse_count(const char *flag, const char *v, unsigned max, unsigned *out)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || n < 1 || n > (long)max)
        return bad("%s: expected a number from 1 to %u, got %s", flag, max, v);
    *out = (unsigned)n;
    return 0;
}

/* One more value of a repeatable flag whose values are kept in v[32]. */
static int add_value(const char *flag, const char *value, const char **v, size_t *n)
{
    if (*n == 32)
        return bad("%s: at most 32", flag);
    v[(*n)++] = value;
    return 0;
}

enum { F_NONE, F_STR, F_DUR, F_SDUR, F_COUNT, F_MANY, F_SIZE, F_SECRET, F_ALLOW, F_HEADER,
       F_HOSTS, F_ORIGIN };

static int parse_args(int argc, char **argv, opts *o)
{
    struct flag {
        const char *name;
        int kind;
        void *dst;
    } flags[] = {
        {"--listen", F_STR, &o->listen},
        {"--grpc-listen", F_STR, &o->grpc_listen},
        {"--grpc-streams-per-connection", F_COUNT, &o->grpc_streams},
        {"--store", F_STR, &o->store},
        {"--no-migrate", F_NONE, &o->no_migrate},
        {"--executor", F_STR, &o->executor},
        {"--exec", F_STR, &o->exec_cmd},
        {"--upstream", F_STR, &o->upstream},
        {"--upstream-header", F_HEADER, o->upstream_headers},
        {"--upstream-header-file", F_STR, &o->upstream_header_file},
        {"--upstream-principal-header", F_STR, &o->upstream_principal_header},
        {"--upstream-deadline", F_DUR, &o->upstream_deadline_ms},
        {"--upstream-card-refresh", F_DUR, &o->upstream_card_refresh_ms},
        {"--auth-tokens", F_STR, &o->auth_tokens},
        {"--admin-principals", F_STR, &o->admin_principals},
        {"--replica-id", F_STR, &o->replica_id},
        {"--public-url", F_STR, &o->public_url},
        {"--allowed-hosts", F_HOSTS, o->allowed_hosts},
        {"--cors-origin", F_ORIGIN, o->cors_origins},
        {"--card", F_STR, &o->card},
        {"--plain-ids", F_STR, &o->plain_ids},
        {"--retention", F_DUR, &o->retention_ms},
        {"--tombstone-retention", F_DUR, &o->tombstone_ms},
        {"--lease", F_DUR, &o->lease_ms},
        {"--clock-offset", F_SDUR, &o->clock_offset_ms},
        {"--exec-grace", F_DUR, &o->grace_ms},
        {"--exec-deadline", F_DUR, &o->deadline_ms},
        {"--turn-workers", F_COUNT, &o->turn_workers},
        {"--max-queue", F_MANY, &o->max_queue},
        {"--max-queue-per-principal", F_MANY, &o->max_queue_pp},
        {"--max-waits", F_MANY, &o->max_waits},
        {"--max-waits-per-principal", F_MANY, &o->max_waits_pp},
        {"--max-task-size", F_SIZE, &o->max_task_size},
        {"--max-wait", F_DUR, &o->max_wait_ms},
        {"--threads", F_COUNT, &o->threads},
        {"--workers", F_COUNT, &o->workers},
        {"--max-body", F_SIZE, &o->max_body},
        {"--conn-memory", F_SIZE, &o->conn_memory},
        {"--max-streams", F_MANY, &o->max_streams},
        {"--max-streams-per-principal", F_MANY, &o->max_streams_pp},
        {"--sse-ping", F_DUR, &o->sse_ping_ms},
        {"--request-timeout", F_DUR, &o->request_timeout_ms},
        {"--max-connections", F_MANY, &o->max_connections},
        {"--max-connections-per-ip", F_MANY, &o->max_per_ip},
        {"--max-body-memory", F_SIZE, &o->max_body_memory},
        {"--test-admin", F_NONE, &o->test_admin},
        {"--inspect", F_NONE, &o->inspect},
        {"--experiment-naive", F_NONE, &o->experiment_naive},
        {"--push-secret", F_SECRET, o->push_secrets},
        {"--push-allow", F_ALLOW, o->push_allow},
        {"--push-attempts", F_COUNT, &o->push_attempts},
        {"--push-timeout", F_DUR, &o->push_timeout_ms},
        {"--push-backoff", F_DUR, &o->push_backoff_ms},
        {"--metrics", F_STR, &o->metrics},
        {"--drain", F_DUR, &o->drain_ms},
        {"--drain-delay", F_DUR, &o->drain_delay_ms},
        {"--log-format", F_STR, &o->log_format},
        {"--log-level", F_STR, &o->log_level},
        {"--log-level-file", F_STR, &o->log_level_file},
        {"--check-config", F_NONE, &o->check_config},
        {"--tls-cert", F_STR, &o->tls_cert},
        {"--tls-key", F_STR, &o->tls_key},
        {"--tls-priority", F_STR, &o->tls_priority},
    };
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            print_usage();
            exit(0);
        }
        if (strcmp(arg, "--version") == 0) {
            printf("onced %s\n", once_version());
            exit(0);
        }
        const char *eq = strchr(arg, '=');
        size_t nlen = eq ? (size_t)(eq - arg) : strlen(arg);
        struct flag *f = NULL;
        for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++) {
            if (strlen(flags[k].name) == nlen && strncmp(arg, flags[k].name, nlen) == 0)
                f = &flags[k];
        }
        if (f == NULL)
            return bad("unknown option %s", arg);
        if (f->kind == F_NONE) {
            if (eq != NULL)
                return bad("%s takes no value", f->name);
            *(int *)f->dst = 1;
            continue;
        }
        const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (v == NULL)
            return bad("%s needs a value", f->name);
        int rc = 0;
        uint64_t sz;
        switch (f->kind) {
        case F_STR:
            *(const char **)f->dst = v;
            break;
        case F_DUR:
            rc = parse_dur(f->name, v, 0, f->dst);
            break;
        case F_SDUR:
            rc = parse_dur(f->name, v, 1, f->dst);
            break;
        case F_COUNT:
            rc = parse_count(f->name, v, 4096, f->dst);
            break;
        case F_MANY: /* streams, waits, connections: what one replica holds
                      * without a thread each (bench/README.md) */
            rc = parse_count(f->name, v, MANY_MAX, f->dst);
            break;
        case F_SIZE:
            if (once__parse_size(v, &sz) != ONCE_OK || sz < 1024 || sz > ((uint64_t)1 << 30))
                return bad("%s: expected a size from 1KiB to 1GiB, got %s", f->name, v);
            *(uint64_t *)f->dst = sz;
            break;
        case F_SECRET:
            if (o->npush_secrets == sizeof o->push_secrets / sizeof o->push_secrets[0])
                return bad("%s: at most 8", f->name);
            o->push_secrets[o->npush_secrets++] = v;
            break;
        case F_HEADER:
            if (o->nupstream_headers == sizeof o->upstream_headers / sizeof o->upstream_headers[0])
                return bad("%s: at most 32", f->name);
            o->upstream_headers[o->nupstream_headers++] = v;
            break;
        case F_ALLOW:
            if (o->npush_allow == sizeof o->push_allow / sizeof o->push_allow[0])
                return bad("%s: at most 32", f->name);
            o->push_allow[o->npush_allow++] = v;
            break;
        case F_HOSTS:
            rc = add_value(f->name, v, o->allowed_hosts, &o->nallowed_hosts);
            break;
        case F_ORIGIN:
            rc = add_value(f->name, v, o->cors_origins, &o->ncors_origins);
            break;
        default:
            break;
        }
        if (rc != 0)
            return rc;
    }
    if (o->listen == NULL)
        return bad("--listen HOST:PORT is required");
    if (o->store == NULL)
        return bad("--store URL is required");
    if (o->conn_memory != 0 && (o->conn_memory < 4096 || o->conn_memory > 1024 * 1024))
        return bad("--conn-memory: expected a size from 4KiB to 1MiB");
    if ((o->executor != NULL) + (o->exec_cmd != NULL) + (o->upstream != NULL) > 1)
        return bad("--executor, --exec and --upstream are exclusive: one agent per onced");
    if (o->upstream == NULL && (o->nupstream_headers > 0 || o->upstream_header_file != NULL ||
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
    const char *store = NULL;
    int dry_run = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(migrate_usage, stdout);
            return 0;
        }
        if (strcmp(arg, "--dry-run") == 0) {
            dry_run = 1;
        } else if (strncmp(arg, "--store=", 8) == 0) {
            store = arg + 8;
        } else if (strcmp(arg, "--store") == 0 || strcmp(arg, "--log-format") == 0) {
            if (i + 1 == argc)
                return bad("migrate: %s needs a value", arg);
            if (arg[2] == 's')
                store = argv[i + 1];
            i++;   /* --log-format was read before (early_log_format) */
        } else if (strncmp(arg, "--log-format=", 13) != 0) {
            return bad("migrate: unknown option %s (migrate takes --store URL and --dry-run)",
                       arg);
        }
    }
    if (store == NULL)
        return bad("migrate: --store URL is required");
    char err[512] = "", range[32];
    int from = 0, to = 0;
    int rc = once__store_migrate(store, dry_run, &from, &to, err, sizeof err);
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
static int check_config(const opts *o)
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
static int make_upstream(const opts *o, once_executor **ex, json_t **card)
{
    char err[512] = "", *text = NULL;
    size_t len = 0, n = 0;
    const char *hv[96];
    for (; n < o->nupstream_headers; n++)
        hv[n] = o->upstream_headers[n];
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

/* The start-up line: what this replica is, where it serves, what it keeps
 * its tasks in and the limits it runs with (each default filled in). */
static void log_start(const opts *o, const once_server *server, const once_store *store,
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

/* --workers' default with memory:: two per CPU, at least two. */
/* Turn workers of the built-in executor and the gateway on a store that
 * waits for I/O. */
#define TURN_WORKERS_IO 64
/* --upstream-card-refresh's default. */
#define UPSTREAM_CARD_REFRESH_MS (5 * 60 * 1000)

static unsigned memory_workers(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 1 ? (unsigned)(2 * n) : 2;
}

int main(int argc, char **argv)
{
    opts o;
    memset(&o, 0, sizeof o);
    o.grace_ms = 5000;
    o.retention_ms = -1;
    o.tombstone_ms = -1;
    o.drain_ms = 10000;
    o.drain_delay_ms = DRAIN_DELAY_MS;
    o.upstream_card_refresh_ms = -1;
    int64_t started_ms = once_monotonic_ms();
    log_format = early_log_format(argc, argv);
    once__log_setup(ONCE_LOG_INFO, log_format, 2);
    if (argc > 1 && strcmp(argv[1], "migrate") == 0)
        return migrate_main(argc - 1, argv + 1);
    int rc = parse_args(argc, argv, &o);
    if (rc != 0)
        return rc;
    char host[256];
    int port = 0;
    if (once__parse_listen(o.listen, host, sizeof host, &port) != ONCE_OK || port == 0)
        return bad("--listen: expected HOST:PORT with a port from 1 to 65535, got %s", o.listen);
    char ghost[256];
    int gport = 0;
    if (o.grpc_listen != NULL &&
        (once__parse_listen(o.grpc_listen, ghost, sizeof ghost, &gport) != ONCE_OK || gport == 0))
        return bad("--grpc-listen: expected HOST:PORT with a port from 1 to 65535, got %s",
                   o.grpc_listen);
    int log_level = ONCE_LOG_INFO;
    if (o.log_format != NULL && once__log_format_parse(o.log_format) < 0)
        return bad("--log-format: expected text or json, got %s", o.log_format);
    if (o.log_level != NULL && (log_level = once__log_level_parse(o.log_level)) < 0)
        return bad("--log-level: expected error, warn, info or debug, got %s", o.log_level);
    char err[512] = "";
    if (o.log_level_file != NULL &&
        once__log_level_file_load(o.log_level_file, &log_level, err, sizeof err) != ONCE_OK) {
        if (o.check_config)
            log_level = ONCE_LOG_INFO;   /* check_config reports it with the rest */
        else
            return refuse(1, "--log-level-file %s", err);
    }
    once__log_setup(log_level, log_format, 2);
    char mhost[256];
    int mport = 0, mmode = ONCE_HTTP_METRICS_HERE;
    if (o.metrics != NULL && strcmp(o.metrics, "off") == 0) {
        mmode = ONCE_HTTP_METRICS_OFF;
    } else if (o.metrics != NULL) {
        if (once__parse_listen(o.metrics, mhost, sizeof mhost, &mport) != ONCE_OK || mport == 0)
            return bad("--metrics: expected off or ADDR:PORT, got %s", o.metrics);
        mmode = ONCE_HTTP_METRICS_APART;
    }
    if (o.check_config)
        return check_config(&o);
    if (install_signals() != 0) {
        fail("signals: %s", strerror(errno));
        return 1;
    }
    raise_fd_limit();

    int status = 1, serving = 0;
    once__engine_stats last;
    memset(&last, 0, sizeof last);
    once_tokens *tokens = NULL;
    once_store *store = NULL;
    once_executor *sub = NULL;
    once_server *server = NULL;
    json_t *card = NULL;
    static once_offset_clock clock;
    once_offset_clock_init(&clock, o.clock_offset_ms);

    if (o.auth_tokens != NULL &&
        once__tokens_load(o.auth_tokens, &tokens, err, sizeof err) != ONCE_OK) {
        fail("--auth-tokens %s", err);
        goto out;
    }
    if (o.card != NULL && load_card(o.card, &card) != ONCE_OK)
        goto out;
    /* Durability and lock waits come from the store URL (defaults: FULL,
     * 5 s); only the clock and whether to migrate are onced's to give. */
    once_store_options so;
    memset(&so, 0, sizeof so);
    so.clock = &clock.base;
    so.flags = o.no_migrate ? ONCE_STORE_OPEN_NO_MIGRATE : 0u;
    if ((rc = once_store_open(o.store, &so, &store, err, sizeof err)) != ONCE_OK) {
        fail("--store: %s (%s)", err[0] ? err : "cannot open",
                once_strerror(rc));
        goto out;
    }
    const once_executor *ex = once_executor_echo();
    if (o.exec_cmd != NULL) {
        if ((rc = once_executor_subprocess(o.exec_cmd, o.grace_ms, o.deadline_ms, &sub)) !=
            ONCE_OK) {
            fail("--exec: %s", once_strerror(rc));
            goto out;
        }
        ex = sub;
    } else if (o.upstream != NULL) {
        if (make_upstream(&o, &sub, &card) != ONCE_OK)
            goto out;
        ex = sub;
    }
    once_serve_config sc;
    memset(&sc, 0, sizeof sc);
    sc.engine.store = store;
    sc.engine.clock = &clock.base;
    sc.engine.executor = ex;
    sc.engine.replica_id = o.replica_id;
    sc.engine.lease_ms = o.lease_ms;
    sc.engine.retention_ms = o.retention_ms >= 0 ? o.retention_ms : 0;
    sc.engine.tombstone_ms = o.tombstone_ms >= 0 ? o.tombstone_ms : 0;
    sc.engine.max_wait_ms = o.max_wait_ms;
    sc.engine.experiment_naive = o.experiment_naive;
    sc.engine.plain_ids = o.plain_ids != NULL && strcmp(o.plain_ids, "server") == 0
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
    int in_memory = strncmp(o.store, "memory:", 7) == 0;
    sc.engine.workers = o.turn_workers != 0 || in_memory || o.exec_cmd != NULL
                            ? (int)o.turn_workers /* 0 = the engine's default */
                            : TURN_WORKERS_IO;
    sc.engine.max_queue = (int)o.max_queue;  /* 0 = the engine's default */
    sc.engine.max_waits = (int)o.max_waits;
    /* Without --auth-tokens every caller is one principal: a share would
     * only shrink the limit. */
    sc.engine.max_waits_per_principal = o.max_waits_pp != 0 ? (int)o.max_waits_pp
                                        : tokens != NULL   ? ONCE__SHARE_QUARTER
                                                           : (int)INT_MAX;
    sc.engine.max_queue_per_principal = o.max_queue_pp != 0 ? (int)o.max_queue_pp
                                        : tokens != NULL   ? ONCE__SHARE_QUARTER
                                                           : 0;
    sc.engine.max_task_bytes = (int64_t)o.max_task_size;
    sc.a2a.url = o.public_url; /* NULL: http://HOST:PORT/ */
    sc.a2a.skill_id = o.exec_cmd ? "exec" : o.upstream ? "upstream" : "echo";
    sc.a2a.skill_description = o.exec_cmd ? "Runs the configured command for each turn of a task."
                               : o.upstream ? "Runs each turn on the upstream agent."
                                            : "Echoes text; ask:Q asks Q, sleep:N works N seconds, "
                                              "fail fails.";
    sc.a2a.card = card;
    sc.a2a.test_admin = o.test_admin;
    sc.a2a.admin_principals = o.admin_principals;
    sc.a2a.clock = &clock;
    sc.http.host = host;
    sc.http.port = port;
    sc.http.grpc_host = o.grpc_listen != NULL ? ghost : NULL;
    sc.http.grpc_port = gport;
    sc.http.grpc_streams = o.grpc_streams;
    sc.http.tokens = tokens;
    sc.http.max_streams_per_principal = o.max_streams_pp != 0 ? (int)o.max_streams_pp
                                        : tokens != NULL    ? ONCE__SHARE_QUARTER
                                                            : 0;
    sc.http.inspect.on = o.inspect;
    sc.http.threads = o.threads;
    /* A call on memory: never waits for I/O, so threads past the CPUs
     * only contend for its locks (bench/README.md: about a third less CPU
     * per new task at 4 than at 64 on two CPUs); the other stores wait on
     * disk or network, and their concurrent writes share commits. */
    sc.http.workers = o.workers != 0 || !in_memory ? o.workers : memory_workers();
    /* The same reason runs its calls on the HTTP threads themselves. */
    sc.http.inline_calls = in_memory;
    sc.http.max_body = (size_t)o.max_body;
    sc.http.conn_memory = (size_t)o.conn_memory;
    sc.http.max_streams = o.max_streams;
    sc.http.sse_ping_ms = o.sse_ping_ms;
    sc.http.limits.request_timeout_ms = o.request_timeout_ms; /* 0 = the defaults */
    sc.http.limits.max_connections = o.max_connections;
    sc.http.limits.max_per_ip = o.max_per_ip;
    sc.http.limits.max_body_memory = (size_t)o.max_body_memory;
    sc.http.ops.metrics_mode = mmode;
    sc.http.ops.metrics_host = mhost;
    sc.http.ops.metrics_port = mport;
    if (o.upstream != NULL) {
        sc.http.ops.also_ready = upstream_ready;
        sc.http.ops.also_ctx = sub;
    }
    sc.http.tls_cert_file = o.tls_cert;
    sc.http.tls_key_file = o.tls_key;
    sc.http.allowed_hosts = o.allowed_hosts;
    sc.http.nallowed_hosts = o.nallowed_hosts;
    sc.http.cors_origins = o.cors_origins;
    sc.http.ncors_origins = o.ncors_origins;
    sc.http.tls_priority = o.tls_priority;
    sc.push.secrets = o.push_secrets;
    sc.push.nsecrets = o.npush_secrets;
    sc.push.allow = o.push_allow;
    sc.push.nallow = o.npush_allow;
    sc.push.max_attempts = (int)o.push_attempts;
    sc.push.timeout_ms = o.push_timeout_ms;
    sc.push.backoff_ms = o.push_backoff_ms;
    if ((rc = once__serve_start(&sc, &server, err, sizeof err)) != ONCE_OK) {
        fail("%s", err[0] ? err : once_strerror(rc));
        goto out;
    }
    /* The refresh starts once the server it updates is up; it is stopped
     * before the server goes (below). --card describes the agent itself:
     * then a refresh only keeps /readyz honest. */
    int64_t refresh_ms =
        o.upstream_card_refresh_ms >= 0 ? o.upstream_card_refresh_ms : UPSTREAM_CARD_REFRESH_MS;
    if (o.upstream != NULL && refresh_ms > 0 &&
        (rc = once_executor_upstream_refresh(sub, refresh_ms,
                                             o.card != NULL ? NULL : upstream_card_changed,
                                             server)) != ONCE_OK) {
        fail("--upstream-card-refresh: %s", once_strerror(rc));
        goto out;
    }
    char shown[512];
    once__store_url_redact(o.store, shown, sizeof shown);
    /* In text, the line a person at a terminal starts onced to see, on
     * stdout; in json stdout stays empty, and the start line says it all. */
    if (log_format == ONCE_LOG_TEXT) {
        printf("onced listening on %s replica=%s store=%s\n", once_server_url(server),
               once__engine_replica_id(once__server_engine(server)), shown);
        fflush(stdout);
    }
    log_start(&o, server, store, shown);
    serving = 1;
    if (o.experiment_naive)
        once__log_note(ONCE_LOG_WARN, "config", "--experiment-naive: the idempotency layer is "
                       "OFF (every send makes a new task); for the amplification experiment only");
    if (!once__engine_push_supported(once__server_engine(server)))
        once__log_note(ONCE_LOG_WARN, "config", "this store keeps no push delivery state: push "
                                                "notifications are off");
    else if (o.npush_secrets == 0)
        once__log_note(ONCE_LOG_WARN, "config", "no --push-secret: webhooks are sent without "
                                                "webhook-signature");

    /* Under systemd (Type=notify) the unit is started only now, when the
     * port serves; elsewhere NOTIFY_SOCKET is unset and this does nothing. */
    sd_notifyf(0, "READY=1\nSTATUS=serving on %s", once_server_url(server));

    once__reload_files reload = {tokens, o.auth_tokens, o.tls_cert != NULL, o.card,
                                 o.log_level_file};
    int sig;
    while ((sig = wait_for_signal()) == SIGHUP) {
        sd_notify(0, "RELOADING=1\nSTATUS=reloading");
        once__server_reload(server, &reload);
        sd_notifyf(0, "READY=1\nSTATUS=serving on %s", once_server_url(server));
    }
    const char *signal_name = sig == SIGINT ? "SIGINT" : "SIGTERM";
    sd_notify(0, "STOPPING=1\nSTATUS=draining");
    if (o.drain_delay_ms > 0) {
        /* Not ready while still serving: a load balancer polling /readyz
         * stops sending here before the drain refuses what still comes. */
        once_server_unready(server);
        log_shutdown("not_ready", signal_name, o.drain_delay_ms);
        pause_ms(o.drain_delay_ms);
    }
    log_shutdown("draining", signal_name, o.drain_ms);
    drain(server, o.drain_ms);
    log_shutdown("stopping", NULL, -1);
    status = 0;
out:
    once_executor_upstream_refresh_stop(sub); /* it calls into the server */
    once__server_stop(server, &last); /* HTTP first, then the engine's workers */
    once_executor_free(sub);
    int crc = once_store_close(store);
    if (crc != ONCE_OK) {
        once__log_note(ONCE_LOG_ERROR, "store_error", "closing the store failed");
        status = 1;
    }
    once__tokens_free(tokens);
    json_decref(card);
    if (serving)
        log_stopped(started_ms, &last, status);
    return status;
}
