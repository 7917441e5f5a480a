/*
 * onced_opts.c -- onced's options as one table: what each flag is called,
 * takes, defaults to and means (--help, onced(8), the README's table), and
 * where its value goes. A flag is added here and nowhere else; then
 * `make docs` writes it into man/onced.8 and README.md.
 */
#include "cli/onced_opts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "once/once.h"
#include "store/store_info.h"

/* The bound of the counts of things held without a thread each (streams,
 * waits, connections: bench/README.md). */
#define MANY_MAX 1000000

static int set_dur(const opt *o, const char *v, void *dst, char *err, size_t n)
{
    int rc = once__parse_duration(v, o->max < 0, dst);
    if (rc == ONCE_ERANGE)
        snprintf(err, n, "%s: duration too large: %s", o->name, v);
    else if (rc != ONCE_OK)
        snprintf(err, n, "%s: not a duration: %s (use e.g. 500ms, 30s, 5m, 72h, 30d)", o->name, v);
    return rc == ONCE_OK ? 0 : -1;
}

/* A count from 1 to the row's max. */
static int set_count(const opt *o, const char *v, void *dst, char *err, size_t n)
{
    char *end;
    errno = 0;
    long k = strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || k < 1 || k > o->max) {
        snprintf(err, n, "%s: expected a number from 1 to %ld, got %s", o->name, o->max, v);
        return -1;
    }
    *(unsigned *)dst = (unsigned)k;
    return 0;
}

/* One more value of a repeatable flag, at most the row's max. */
static int set_list(const opt *o, const char *v, void *dst, char *err, size_t n)
{
    opt_list *l = dst;
    if (l->n == (size_t)o->max) {
        snprintf(err, n, "%s: at most %ld", o->name, o->max);
        return -1;
    }
    l->v[l->n++] = v;
    return 0;
}

static void store_urls(int all, char *out, size_t n)
{
    once__store_url_forms(all, out, n);
}

void onced_opts_init(onced_opts *o)
{
    memset(o, 0, sizeof *o);
    o->grace_ms = 5000;
    o->retention_ms = -1;
    o->tombstone_ms = -1;
    o->drain_ms = 10000;
    o->drain_delay_ms = DRAIN_DELAY_MS;
    o->upstream_card_refresh_ms = -1;
}

enum { S_REQUIRED, S_SCHEMA, S_AGENT, S_IDENTITY, S_HTTP, S_PUSH, S_OPS, S_RELOAD, S_TESTING };

static const opt_section sections[] = {
    [S_REQUIRED] = {"required", "Required", NULL, NULL, NULL},
    [S_SCHEMA] = {"store schema", "Store schema", NULL, NULL, NULL},
    [S_AGENT] = {"agent", "Agent", NULL, NULL, NULL},
    [S_IDENTITY] = {"identity and time", "Identity and time", NULL, NULL, NULL},
    [S_HTTP] = {"HTTP", "HTTP", NULL, NULL, NULL},
    [S_PUSH] = {"push notifications (docs/protocol.md, \"Push notifications\")",
                "Push notifications (docs/protocol.md, \"Push notifications\")", NULL, NULL, NULL},
    [S_OPS] = {"operations (docs/architecture.md, \"Observability\"; never behind --auth-tokens)",
               "Operations (never behind --auth-tokens)", NULL, NULL, NULL},
    [S_RELOAD] = {"reload (SIGHUP; docs/production.md, \"Reload\")",
                  "Reload and the command line", NULL,
                  "SIGHUP reads --auth-tokens, --tls-cert/--tls-key, --card and --log-level-file "
                  "again. Each is checked whole before it replaces the one served; a bad file "
                  "keeps the old and logs why (event reload). New TLS connections get the new "
                  "certificate, open ones keep theirs. Other flags need a restart",
                  NULL},
    [S_TESTING] = {"testing only (never in production)", "Testing only (never in production)",
                   NULL, NULL, NULL},
};

#define F(field) offsetof(onced_opts, field)

/* Columns: name, short, argument, default, help, README meaning, section,
 * setter, field, bound, action, flags. */
static const opt rows[] = {
    {"--listen", 0, "HOST:PORT", NULL, "address to serve on ([v6addr]:PORT for IPv6)",
     "where to serve A2A (JSON-RPC and HTTP+JSON), SSE and the agent card",
     S_REQUIRED, opt_set_str, F(listen), 0, 0, OPT_REQUIRED},
    {"--store", 0, "URL", NULL,
     "task registry: @STORE_URLS@ (replicas sharing one store cooperate). Its schema is "
     "created or migrated at start (the start-up line names its schema_version)",
     "`sqlite:PATH`, `memory:`, `postgres://…`, `redis://…`, `dynamodb://…` (below); its schema "
     "is created or migrated at start, and the start-up line names its `schema_version`",
     S_REQUIRED, opt_set_str, F(store), 0, 0, OPT_REQUIRED},
    {"--no-migrate", 0, NULL, "off",
     "change no schema: refuse to start (exit 1) on a store whose schema is older than this "
     "once's, or absent, naming both versions; run onced migrate first (docs/production.md, "
     "\"Upgrade\")",
     "change no schema: refuse to start (exit 1) on a store whose schema is older than this "
     "once's, or absent (\"store schema is at version N, this once needs M: run onced "
     "migrate\"); `onced migrate --store URL [--dry-run]` applies (or only lists) the pending "
     "migrations and exits, so a rollout migrates once before its replicas start "
     "([docs/production.md](docs/production.md#upgrades-and-schema-changes))",
     S_SCHEMA, opt_set_flag, F(no_migrate), 0, 0, 0},
    {"--executor", 0, "echo", NULL,
     "the built-in test agent, the default: \"ask:Q\" asks Q, \"sleep:N\" works N s, "
     "\"fail\" fails, else echoes",
     "the built-in agent, the default (one of `--executor`, `--exec` and `--upstream` runs "
     "each turn)",
     S_AGENT, opt_set_str, F(executor), 0, 0, 0},
    {"--exec", 0, "CMD", NULL,
     "run CMD (/bin/sh -c) for each turn of a task (JSON-lines protocol: docs/protocol.md)",
     "run CMD for each turn of a task ([docs/protocol.md](docs/protocol.md))",
     S_AGENT, opt_set_str, F(exec_cmd), 0, 0, 0},
    {"--upstream", 0, "URL", NULL,
     "gateway: run every turn as an ordinary A2A 1.0 client of the existing agent at URL (its "
     "card is read at start; onced does not start when it cannot be read). One upstream task "
     "per once task: a turn that runs again (takeover, lost answer) re-attaches to it. The "
     "card served is the upstream's name, description, skills, modes and security schemes "
     "with onced's interfaces and the once extension. Exclusive with --executor and --exec",
     "run each turn on an existing A2A agent at URL (the gateway, "
     "[docs/gateway.md](docs/gateway.md))",
     S_AGENT, opt_set_str, F(upstream), 0, 0, 0},
    {"--upstream-header", 0, "'N: V'", NULL,
     "a header sent on every upstream request (e.g. 'Authorization: Bearer ...'); repeatable",
     "a header sent on every upstream request (credentials); repeatable",
     S_AGENT, set_list, F(upstream_headers), 32, 0, 0},
    {"--upstream-header-file", 0, "FILE", NULL,
     "more such headers, one 'Name: value' a line ('#' comments): secrets stay off the command "
     "line",
     "more such headers, one `Name: value` a line: the file keeps them off the command line",
     S_AGENT, opt_set_str, F(upstream_header_file), 0, 0, 0},
    {"--upstream-deadline", 0, "DUR", "60s",
     "how long one upstream call is retried (connection refused, 5xx, timeouts; full-jitter "
     "backoff up to 5s, the client's retry budget) before the task fails naming the upstream",
     "how long one upstream call is retried (refused, 5xx, timeouts) before the task fails "
     "naming the upstream",
     S_AGENT, set_dur, F(upstream_deadline_ms), 0, 0, 0},
    {"--upstream-principal-header", 0, "NAME", NULL,
     "send the caller's principal upstream in header NAME (off: the upstream sees only onced's "
     "headers)",
     "send the caller's principal upstream in header NAME",
     S_AGENT, opt_set_str, F(upstream_principal_header), 0, 0, 0},
    {"--upstream-card-refresh", 0, "DUR", "5m",
     "read the upstream's card again this often, 0 = never (If-None-Match, a 304 changes "
     "nothing): a changed card changes the card served and its ETag, never the binding or "
     "rung chosen at start (a card whose interfaces changed is logged as a warning); a "
     "refresh that gets no answer or a 5xx turns /readyz 503 naming the upstream until one "
     "gets an answer again. Counted in once_gateway_card_refreshes_total{result}",
     "how often the upstream's card is read again (`If-None-Match`; `0` = never): a changed "
     "card changes the card served and its ETag without a restart (never the binding or rung "
     "chosen at start), and a refresh that gets no answer or a 5xx turns `/readyz` 503 naming "
     "the upstream until one gets an answer",
     S_AGENT, set_dur, F(upstream_card_refresh_ms), 0, 0, 0},
    {"--exec-grace", 0, "DUR", "5s", "SIGTERM -> SIGKILL delay when a turn is canceled", NULL,
     S_AGENT, set_dur, F(grace_ms), 0, 0, 0},
    {"--exec-deadline", 0, "DUR", "0", "per-turn time limit, 0 = none", NULL,
     S_AGENT, set_dur, F(deadline_ms), 0, 0, 0},
    {"--turn-workers", 0, "N",
     "16; 64 for the built-in executor and --upstream on a store other than memory:",
     "turns that run at once, one thread each (a gateway's turn parks, holding no worker, "
     "while its upstream task is quiet); more wait in a queue; a turn takes its lease when it "
     "starts",
     "turns that run at once; more wait in a queue (a gateway's turn parks, holding no worker, "
     "while its upstream task is quiet)",
     S_AGENT, set_count, F(turn_workers), 4096, 0, 0},
    {"--max-queue", 0, "N", "16 per turn worker",
     "turns that may wait for a worker; past it a send that would start one waits up to 100 ms "
     "for room, then gets HTTP 503 + Retry-After, -32603 OVERLOADED, and nothing is stored",
     "turns that may wait; past it a send that would start one waits up to 100 ms for room, "
     "then gets HTTP 503 + `Retry-After`, `OVERLOADED`, and nothing is stored",
     S_AGENT, set_count, F(max_queue), MANY_MAX, 0, 0},
    {"--max-queue-per-principal", 0, "N",
     "a quarter of --max-queue with --auth-tokens, else all of it",
     "of those, per principal; past it that principal's sends get OVERLOADED while others "
     "still get in. Workers take the oldest turn of the principal with the fewest turns "
     "running",
     "turns one principal may have waiting; past it that principal's sends get 503 "
     "`OVERLOADED` while others are admitted; a free worker takes the principal with the "
     "fewest turns running",
     S_AGENT, set_count, F(max_queue_pp), MANY_MAX, 0, 0},
    {"--max-task-size", 0, "BYTES", "4MiB",
     "largest stored task; a send that would grow it past that gets -32602, an agent's output "
     "fails the task",
     "largest stored task; a send that would grow it past that gets -32602 naming the limit, "
     "an agent's output that would fails the task with that reason; progress messages replace "
     "each other in the history (each is still an event)",
     S_AGENT, opt_set_size, F(max_task_size), 0, 0, 0},

    {"--auth-tokens", 0, "FILE", NULL,
     "bearer tokens, one \"TOKEN PRINCIPAL\" per line ('#' comments); without it every caller "
     "is \"anonymous\"",
     "lines `TOKEN PRINCIPAL`; tasks are keyed by (principal, task ID)",
     S_IDENTITY, opt_set_str, F(auth_tokens), 0, 0, 0},
    {"--admin-principals", 0, "P1,P2", "nobody: 403",
     "principals allowed the operator methods (once/admin/replicas, leases, release, cancel), "
     "each call logged as an \"admin\" line. Without --auth-tokens only \"anonymous\" opens "
     "them, to all",
     "principals allowed the operator methods (`once admin replicas`, `leases`, `release`, "
     "`cancel`; the cluster on `/inspect/`); every call is logged as an `admin` line; without "
     "`--auth-tokens` only `anonymous` opens them, to everyone",
     S_IDENTITY, opt_set_str, F(admin_principals), 0, 0, 0},
    {"--plain-ids", 0, "derived|server", "derived",
     "the task ID of a plain first message (no extension, no taskId): derived from "
     "(principal, messageId), so that its retry replays; or server: a fresh server-minted one "
     "per message, as other A2A servers do. With the extension sends dedup in both modes",
     "the task ID of a plain first message (no extension, no `taskId`): derived from "
     "(principal, messageId), so its retry replays; or `server`: a fresh one per message, as "
     "other A2A servers do. Sends with the extension dedup in both modes "
     "([docs/wire.md](docs/wire.md#identity-designmd-section-3))",
     S_IDENTITY, opt_set_str, F(plain_ids), 0, 0, 0},
    {"--retention", 0, "DUR", "72h", "keep finished tasks in full this long, then tombstone them",
     "finished tasks are kept in full this long, then tombstoned",
     S_IDENTITY, set_dur, F(retention_ms), 0, 0, 0},
    {"--tombstone-retention", 0, "DUR", "30d",
     "then remember their IDs as TASK_EXPIRED this long",
     "tombstones answer `TASK_EXPIRED` this long, then are purged",
     S_IDENTITY, set_dur, F(tombstone_ms), 0, 0, 0},
    {"--lease", 0, "DUR", "15s",
     "execution lease; a replica that stops heartbeating loses its tasks to another after this "
     "long",
     "execution lease, taken when a turn starts and renewed while it runs; an expired lease is "
     "taken over by any replica (not within one lease of that replica's start or of a store "
     "failure it saw)",
     S_IDENTITY, set_dur, F(lease_ms), 0, 0, 0},
    {"--replica-id", 0, "NAME", "hostname-pid", "this replica's name in leases",
     "this replica's name in leases", S_IDENTITY, opt_set_str, F(replica_id), 0, 0, 0},

    {"--grpc-listen", 0, "HOST:PORT", "off",
     "also serve A2A's gRPC binding (lf.a2a.v1.A2AService) there: HTTP/2 over TLS with "
     "--tls-cert, else h2c (plaintext, for loopback and tests); the same tokens, workers, "
     "streams and limits as HTTP, and the card lists it as protocolBinding GRPC",
     "also serve A2A's gRPC binding (`lf.a2a.v1.A2AService`) there: TLS with `--tls-cert`, "
     "else h2c; the same tokens, workers, stream slots and limits; the card lists it as `GRPC` "
     "([docs/wire.md](docs/wire.md#the-grpc-binding))",
     S_HTTP, opt_set_str, F(grpc_listen), 0, 0, 0},
    {"--grpc-streams-per-connection", 0, "N", "100",
     "gRPC calls one HTTP/2 connection may have open at once "
     "(SETTINGS_MAX_CONCURRENT_STREAMS); past it a new one is refused (REFUSED_STREAM)",
     "gRPC calls one HTTP/2 connection may have open at once; past it a new one gets "
     "REFUSED_STREAM",
     S_HTTP, set_count, F(grpc_streams), 4096, 0, 0},
    {"--threads", 0, "N", "2", "HTTP (epoll) threads, and as many for --grpc-listen", NULL,
     S_HTTP, set_count, F(threads), 4096, 0, 0},
    {"--workers", 0, "N", "64; with memory:, two per CPU",
     "threads running A2A calls (every binding); a blocking SendMessage waits without one",
     NULL, S_HTTP, set_count, F(workers), 4096, 0, 0},
    {"--max-body", 0, "BYTES", "1MiB",
     "largest request body, e.g. 1MiB, 512k; larger bodies get HTTP 413", NULL,
     S_HTTP, opt_set_size, F(max_body), 0, 0, 0},
    {"--conn-memory", 0, "BYTES", "12KiB",
     "each connection's memory for the request's head and the reply's (4KiB-1MiB): about 1KiB "
     "less of request headers is served, larger heads get HTTP 431; most of what an idle SSE "
     "stream costs",
     "each connection's memory for the request's head and the reply's: about 11 KiB of "
     "request headers are served, larger heads get HTTP 431; most of what an idle SSE stream "
     "costs",
     S_HTTP, opt_set_size, F(conn_memory), 0, 0, 0},
    {"--max-wait", 0, "DUR", "60s",
     "longest a blocking SendMessage waits; a waiting send holds its connection but no thread",
     "longest a blocking `SendMessage` waits for its task to settle; waiting holds the "
     "connection but no thread",
     S_HTTP, set_dur, F(max_wait_ms), 0, 0, 0},
    {"--max-waits", 0, "N", "10000", "blocking sends waiting at once",
     "blocking sends waiting at once; past it a blocking send is answered at once with the "
     "task as it stands",
     S_HTTP, set_count, F(max_waits), MANY_MAX, 0, 0},
    {"--max-waits-per-principal", 0, "N",
     "a quarter of --max-waits with --auth-tokens, else all of them",
     "of those, per principal; past either a blocking send answers at once with the task as "
     "it stands (the client polls or subscribes)",
     "blocking sends one principal may have waiting; past it that principal's are answered at "
     "once",
     S_HTTP, set_count, F(max_waits_pp), MANY_MAX, 0, 0},
    {"--max-streams", 0, "N", "10000", "SSE streams served at once; past it HTTP 503",
     "SSE streams at once; past it HTTP 503 `TOO_MANY_STREAMS`",
     S_HTTP, set_count, F(max_streams), MANY_MAX, 0, 0},
    {"--max-streams-per-principal", 0, "N",
     "a quarter of --max-streams with --auth-tokens, else all of them",
     "of those, per principal; past it that principal's streams get HTTP 503 while others "
     "still get slots",
     "SSE streams one principal may hold; past it 503 for that principal only (a stream whose "
     "client hung up frees its slot at once)",
     S_HTTP, set_count, F(max_streams_pp), MANY_MAX, 0, 0},
    {"--request-timeout", 0, "DUR", "30s",
     "a request's head and body must be in within DUR of the connection's accept or its "
     "previous response, else it is closed; SSE streams are not cut",
     "a request's head and body must arrive within it (from accept or the previous response), "
     "or the connection is closed",
     S_HTTP, set_dur, F(request_timeout_ms), 0, 0, 0},
    {"--max-connections", 0, "N", "16384",
     "connections at once; past it the oldest one still waiting for its request is closed to "
     "make room (onced raises its open-file limit to the hard limit, which should leave room "
     "for them)",
     "connections at once; past it the oldest one still waiting for its request makes room",
     S_HTTP, set_count, F(max_connections), MANY_MAX, 0, 0},
    {"--max-connections-per-ip", 0, "N", "128",
     "connections at once from one client address; behind a load balancer raise it to "
     "--max-connections",
     "connections at once from one address (raise it behind a load balancer)",
     S_HTTP, set_count, F(max_per_ip), MANY_MAX, 0, 0},
    {"--max-body-memory", 0, "BYTES", "64MiB",
     "request bodies held at once; past it the oldest incomplete upload is closed, or the "
     "request gets HTTP 503 + Retry-After",
     "request bodies held at once; past it the oldest upload is closed, or HTTP 503 "
     "`OVERLOADED`",
     S_HTTP, opt_set_size, F(max_body_memory), 0, 0, 0},
    {"--sse-ping", 0, "DUR", "15s", "keep-alive comment on an idle stream", NULL,
     S_HTTP, set_dur, F(sse_ping_ms), 0, 0, 0},
    {"--inspect", 0, NULL, "off",
     "serve the task inspector at /inspect/: the caller's tasks and each one's timeline (HTML; "
     "JSON at /inspect/api/task/ID), behind --auth-tokens like every call (a bearer header, or "
     "the session cookie the form at /inspect/login sets: signed, 12 hours, revoked with its "
     "token)",
     "serve the task inspector at `/inspect/` (HTML, and a task's timeline as JSON at "
     "`/inspect/api/task/ID`), behind `--auth-tokens` like every call "
     "([docs/wire.md](docs/wire.md#the-task-inspector))",
     S_HTTP, opt_set_flag, F(inspect), 0, 0, 0},
    {"--tls-cert", 0, "FILE", NULL,
     "serve HTTPS with this PEM certificate (then any intermediates); needs --tls-key. The "
     "card's URLs say https. A missing or unreadable file, one that is not PEM, or a key of "
     "another certificate stops onced naming it. --metrics ADDR:PORT stays HTTP",
     "serve HTTPS with this PEM certificate chain (and `--tls-key`); the card's URLs say "
     "https; a missing, unreadable, non-PEM or encrypted file, or a key of another "
     "certificate, stops onced naming the file",
     S_HTTP, opt_set_str, F(tls_cert), 0, 0, 0},
    {"--tls-key", 0, "FILE", NULL, "the certificate's PEM private key (unencrypted)",
     "the certificate's unencrypted PEM key", S_HTTP, opt_set_str, F(tls_key), 0, 0, 0},
    {"--tls-priority", 0, "STRING", "TLS 1.2 and 1.3, forward secrecy only",
     "the GnuTLS priority string served",
     "the GnuTLS priority string served; by default TLS 1.0 and 1.1 and the static RSA key "
     "exchange are refused (`once listen` serves the same)",
     S_HTTP, opt_set_str, F(tls_priority), 0, 0, 0},
    {"--allowed-hosts", 0, "H1,H2",
     "the --listen address, localhost, 127.0.0.1 and [::1] when it is loopback, any name "
     "otherwise",
     "the names a request's Host may carry (any port; repeatable; * = any); others get HTTP "
     "421 HOST_NOT_ALLOWED (DNS rebinding). --public-url's host always passes; /healthz, "
     "/readyz, /metrics also take IP addresses and localhost. A bind that is not loopback "
     "without --auth-tokens logs a warning",
     "the names a request's `Host` may carry (any port; `*` = any); others get HTTP 421 "
     "`HOST_NOT_ALLOWED` (DNS rebinding); `--public-url`'s host always passes; `/healthz`, "
     "`/readyz`, `/metrics` also take IP addresses and `localhost`; a non-loopback bind "
     "without `--auth-tokens` logs a warning "
     "([docs/wire.md](docs/wire.md#who-may-call-hosts-origins-cors))",
     S_HTTP, set_list, F(allowed_hosts), 32, 0, 0},
    {"--cors-origin", 0, "ORIGIN", NULL,
     "let web pages of ORIGIN (scheme://host[:port]) call the A2A endpoints, with CORS "
     "answers; repeatable. A call that changes state from a page of any other origin (its "
     "Origin header, or Sec-Fetch-Site cross-site or same-site) gets HTTP 403 "
     "ORIGIN_NOT_ALLOWED, and a body must be sent as application/json (else HTTP 415); "
     "clients that are not browsers send neither header",
     "web pages of `ORIGIN` (`scheme://host[:port]`, repeatable) may call the A2A endpoints, "
     "with CORS answers; a state-changing call from any other page's origin gets HTTP 403 "
     "`ORIGIN_NOT_ALLOWED`, and a body must be `application/json` (else 415)",
     S_HTTP, set_list, F(cors_origins), 32, 0, 0},
    {"--public-url", 0, "URL", "http://HOST:PORT/",
     "the URL the agent card advertises for both bindings; its path also serves JSON-RPC "
     "(POST to it) and the HTTP+JSON routes below it (/message:send, /tasks/ID, ...: "
     "docs/wire.md)",
     NULL, S_HTTP, opt_set_str, F(public_url), 0, 0, 0},
    {"--card", 0, "FILE", "the echo / --exec card",
     "a JSON object describing the agent in the card: name, description, provider "
     "{organization, url}, version, documentationUrl, iconUrl, skills [{id, name, description, "
     "tags, examples?, inputModes?, outputModes?}], defaultInputModes, defaultOutputModes. "
     "Interfaces, capabilities, extensions and security are onced's: a file that sets them, "
     "or any bad member, stops onced with a message naming it",
     "a JSON object describing the agent (name, description, provider, version, "
     "documentationUrl, iconUrl, skills, default modes); interfaces, capabilities, extensions "
     "and security stay onced's, and a bad file stops onced naming the field "
     "([docs/wire.md](docs/wire.md#the-agent-card))",
     S_HTTP, opt_set_str, F(card), 0, 0, 0},

    {"--push-secret", 0, "S", NULL,
     "sign webhooks with S (Standard Webhooks; whsec_<base64> or 16+ bytes); repeat to "
     "rotate, newest first: every delivery carries one signature per secret",
     "webhook signing secret (repeat to rotate, newest first)",
     S_PUSH, set_list, F(push_secrets), 8, 0, 0},
    {"--push-allow", 0, "CIDR", NULL,
     "let webhooks reach this loopback/private range (refused by default: SSRF guard); "
     "repeatable",
     "let webhooks reach a loopback/private range (SSRF guard)",
     S_PUSH, set_list, F(push_allow), 32, 0, 0},
    {"--push-attempts", 0, "N", "10",
     "failed attempts on one event after which the config's lastError reports them; retries "
     "go on (only a 410 disables a config)",
     NULL, S_PUSH, set_count, F(push_attempts), 4096, 0, 0},
    {"--push-timeout", 0, "DUR", "10s", "one webhook POST", NULL,
     S_PUSH, set_dur, F(push_timeout_ms), 0, 0, 0},
    {"--push-backoff", 0, "DUR", "1s",
     "first retry delay bound; doubles per attempt up to 5m, full jitter; Retry-After wins "
     "when longer",
     NULL, S_PUSH, set_dur, F(push_backoff_ms), 0, 0, 0},

    {"GET /healthz", 0, NULL, NULL, "200 while the process serves", NULL, S_OPS, NULL, 0, 0, 0, 0},
    {"GET /readyz", 0, NULL, NULL,
     "200 when the store answers, onced is not draining and (--upstream) the last card refresh "
     "reached the upstream; else 503 with the reason",
     NULL, S_OPS, NULL, 0, 0, 0, 0},
    {"--metrics", 0, "off|ADDR:PORT", "on --listen",
     "where GET /metrics (Prometheus text format) is served: off, or on this numeric address "
     "alone (plain HTTP)",
     "where `GET /metrics` is served: off, or a numeric address of its own (plain HTTP)",
     S_OPS, opt_set_str, F(metrics), 0, 0, 0},
    {"--drain-delay", 0, "DUR", "3s",
     "on SIGTERM/SIGINT, first: /readyz turns 503 while calls are still served, this long, so "
     "that a load balancer stops sending here; 0 = none",
     "after SIGTERM/SIGINT, first: `/readyz` answers 503 while calls are still served, so a "
     "load balancer stops sending here before anything is refused; 0 = none",
     S_OPS, set_dur, F(drain_delay_ms), 0, 0, 0},
    {"--drain", 0, "DUR", "10s",
     "then: /readyz stays 503 and new calls get 503 at once; calls in progress get up to DUR "
     "to finish; then running turns stop and their leases are released for another replica, "
     "blocked sends answer with the task as it stands, streams end; exit 0. A second signal "
     "exits at once (status 128 + signal)",
     "then: new calls get 503, and calls in progress may take this long before turns are "
     "stopped and onced exits; a second signal exits at once",
     S_OPS, set_dur, F(drain_ms), 0, 0, 0},
    {"--log-format", 0, "text|json", "text on a terminal, else json",
     "structured log lines on stderr: start-up (version, addresses, store, limits), one per "
     "JSON-RPC call (method, principal, task, outcome, status, duration_ms, path, client, "
     "request_id: the X-Request-Id given, else a new one, sent back), takeover, fence "
     "rejection, store error, webhook failure and the shutdown summary, each naming its task "
     "and the request's W3C traceparent. In json every line is JSON, a refused command line "
     "too, and stdout stays empty",
     "start-up line, one line per call (with its `X-Request-Id`), takeover, fence rejection, "
     "store error, failed webhook, shutdown summary; in json every line is JSON",
     S_OPS, opt_set_str, F(log_format), 0, 0, 0},
    {"--log-level", 0, "LEVEL", "info", "error, warn, info (every request) or debug",
     "`error`, `warn`, `info` (request lines) or `debug`",
     S_OPS, opt_set_str, F(log_level), 0, 0, 0},
    {"--log-level-file", 0, "FILE", NULL,
     "the level, one word in FILE ('#' comments allowed), read at start and at every SIGHUP "
     "(instead of --log-level)",
     "the level as one word in FILE, read at start and at every SIGHUP (instead of "
     "`--log-level`)",
     S_OPS, opt_set_str, F(log_level_file), 0, 0, 0},

    {"--check-config", 0, NULL, NULL,
     "check the flags and read every file they name as start-up would (--auth-tokens, the "
     "--tls-cert and --tls-key pair, --card, --log-level-file, --upstream-header-file; the "
     "store URL by its scheme only: nothing is opened or connected to, so no SQLite file is "
     "created); print each problem, or \"configuration OK\", and exit 0 or 2",
     "check the flags and every file they name as start-up would (the store URL by its scheme "
     "only: nothing is opened), print each problem or `configuration OK`, exit 0 or 2",
     S_RELOAD, opt_set_flag, F(check_config), 0, 0, 0},
    {"--version", 0, NULL, NULL, "print the version and exit",
     "prints `onced 0.1.0` (`once --version` too; `once_version()` in the library)",
     S_RELOAD, NULL, 0, 0, OPT_ACT_VERSION, 0},
    {"--help", 'h', NULL, NULL, "this text", NULL, S_RELOAD, NULL, 0, 0, OPT_ACT_HELP, 0},
    {"--help-man", 0, NULL, NULL, "", NULL, S_RELOAD, NULL, 0, 0, OPT_ACT_MAN, OPT_HIDDEN},
    {"--help-markdown", 0, NULL, NULL, "", NULL, S_RELOAD, NULL, 0, 0, OPT_ACT_MARKDOWN,
     OPT_HIDDEN},

    {"--clock-offset", 0, "DUR", "0",
     "run the clock this far ahead (or behind: -DUR) of real time; for tests and demos", NULL,
     S_TESTING, set_dur, F(clock_offset_ms), -1, 0, 0},
    {"--test-admin", 0, NULL, NULL,
     "enable once/admin/setClockOffset and once/admin/stats (test configurations only)", NULL,
     S_TESTING, opt_set_flag, F(test_admin), 0, 0, 0},
    {"--experiment-naive", 0, NULL, NULL,
     "EXPERIMENT ONLY (make amplify): idempotency off. Every first message registers a new "
     "task under a random server-minted ID, whatever its messageId; client task IDs are "
     "refused (TASK_NOT_FOUND). The baseline the amplification experiment measures once "
     "against",
     NULL, S_TESTING, opt_set_flag, F(experiment_naive), 0, 0, 0},
};

static const char head[] =
    "usage: onced --listen HOST:PORT --store URL [options]\n"
    "       onced migrate --store URL [--dry-run]\n"
    "\n"
    "The once A2A 1.0 server: idempotent task sends over JSON-RPC and HTTP+JSON.\n"
    "\n";

static const char tail[] =
    "\n"
    "DUR is a number with a unit: 500ms, 30s, 5m, 72h, 30d (or combined: 1h30m).\n"
    "\n"
    "onced migrate --store URL [--dry-run]\n"
    "  apply the store's pending schema migrations and exit: prints \"store at version\n"
    "  N; applied N+1..M\" or \"up to date (version M)\"; --dry-run only says which\n"
    "  are pending and writes nothing. Exit status 0 when the store is (or, dry, could\n"
    "  be) at this once's version; 1 when it cannot be opened or a newer once migrated\n"
    "  it; 2 for a bad command line\n";

const opt_program onced_options = {
    .name = "onced",
    .rows = rows,
    .nrows = sizeof rows / sizeof rows[0],
    .sections = sections,
    .nsections = sizeof sections / sizeof sections[0],
    .help_col = 30,
    .head = head,
    .tail = tail,
    .unknown_whole = 1,
    .store_urls = store_urls,
};

/* `onced migrate`: its own table, its --help, and its options in onced(8)'s
 * MIGRATE section. */
static const opt_section migrate_sections[] = {{NULL, NULL, NULL, NULL, NULL}};

#define M(field) offsetof(onced_migrate_opts, field)

static const opt migrate_rows[] = {
    {"--store", 0, "URL", NULL, "the store, as onced --store takes it", NULL, 0, opt_set_str,
     M(store), 0, 0, OPT_REQUIRED},
    {"--dry-run", 0, NULL, NULL,
     "only say which migrations are pending (\"store at version N; would apply N+1..M\"); "
     "write nothing, not even a file, schema or table",
     NULL, 0, opt_set_flag, M(dry_run), 0, 0, 0},
    {"--log-format", 0, "text|json", NULL, "as onced's", NULL, 0, opt_set_str, M(log_format), 0,
     0, OPT_HIDDEN},
    {"--help", 'h', NULL, NULL, "this text", NULL, 0, NULL, 0, 0, OPT_ACT_HELP, OPT_HIDDEN},
    {"--help-man", 0, NULL, NULL, "", NULL, 0, NULL, 0, 0, OPT_ACT_MAN, OPT_HIDDEN},
};

static const char migrate_head[] =
    "usage: onced migrate --store URL [--dry-run]\n"
    "\n"
    "Apply the store's pending schema migrations, then exit, so that a rollout\n"
    "migrates once before replicas started with --no-migrate come up\n"
    "(docs/production.md, \"Upgrade\").\n"
    "\n";

static const char migrate_tail[] =
    "\n"
    "Prints \"store at version N; applied N+1..M (now at version M)\", or with\n"
    "--dry-run \"store at version N; would apply N+1..M\", or \"up to date (version\n"
    "M)\". Version 0 is a store with no schema yet. Exit status: 0 done (or up to\n"
    "date); 1 the store cannot be opened, or a newer once migrated it; 2 a bad\n"
    "command line.\n";

const opt_program onced_migrate_options = {
    .name = "onced migrate",
    .rows = migrate_rows,
    .nrows = sizeof migrate_rows / sizeof migrate_rows[0],
    .sections = migrate_sections,
    .nsections = 1,
    .help_col = 17,
    .head = migrate_head,
    .tail = migrate_tail,
    .unknown_whole = 1,
};
