/*
 * once_opts.c -- the once client's commands and options as tables: what
 * each is called, takes, defaults to and means (--help, once(1), the
 * README's table), and where an option's value goes. Every command takes
 * every option; the sections only say which ones it uses.
 */
#include "cli/once_opts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "once/once.h"

static int set_dur(const opt *o, const char *v, void *dst, char *err, size_t n)
{
    if (once__parse_duration(v, 0, dst) == ONCE_OK)
        return 0;
    snprintf(err, n, "%s: not a duration: %s (use e.g. 500ms, 30s, 5m)", o->name, v);
    return -1;
}

/* A whole number in [lo, hi], or -1. */
static int whole(const char *v, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long k = strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || k < lo || k > hi)
        return -1;
    *out = k;
    return 0;
}

static int set_count(const opt *o, const char *v, void *dst, char *err, size_t n)
{
    long k;
    if (whole(v, 1, 1000, &k) != 0) {
        snprintf(err, n, "%s: expected 1..1000, got %s", o->name, v);
        return -1;
    }
    *(unsigned *)dst = (unsigned)k;
    return 0;
}

static int set_port(const opt *o, const char *v, void *dst, char *err, size_t n)
{
    if (whole(v, 0, 65535, dst) == 0)
        return 0;
    snprintf(err, n, "%s: expected 0..65535, got %s", o->name, v);
    return -1;
}

/* Seconds, as a bare number (--tolerance 300) or a duration. */
static int set_secs(const opt *o, const char *v, void *dst, char *err, size_t n)
{
    long k;
    if (whole(v, 1, 86400L * 365, &k) == 0) {
        *(int64_t *)dst = (int64_t)k * 1000;
        return 0;
    }
    if (once__parse_duration(v, 0, dst) == ONCE_OK && *(int64_t *)dst >= 1000)
        return 0;
    snprintf(err, n, "%s: expected seconds (1 or more), got %s", o->name, v);
    return -1;
}

static int set_number(const opt *o, const char *v, void *dst, char *err, size_t n)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0' || d < 0 || d > 1e9) {
        snprintf(err, n, "%s: expected a non-negative number, got %s", o->name, v);
        return -1;
    }
    *(double *)dst = d;
    return 0;
}

static int set_binding(const opt *o, const char *v, void *dst, char *err, size_t n)
{
    if (once_binding_parse(v, dst) == ONCE_OK)
        return 0;
    snprintf(err, n, "%s: expected auto, jsonrpc, http_json or grpc, got %s", o->name, v);
    return -1;
}

/* --secret: one more, at most MAX_SECRETS, none empty. dst is the cli. */
static int set_secret(const opt *o, const char *v, void *dst, char *err, size_t n)
{
    cli *c = dst;
    if (c->nsecrets == MAX_SECRETS) {
        snprintf(err, n, "%s: at most %d", o->name, MAX_SECRETS);
        return -1;
    }
    if (v[0] == '\0') {
        snprintf(err, n, "%s: empty", o->name);
        return -1;
    }
    c->secrets[c->nsecrets++] = v;
    return 0;
}

/* The command, then its argument (a task ID, admin's subcommand). */
static int positional(void *base, const char *arg, char *err, size_t n)
{
    cli *c = base;
    if (c->cmd == NULL) {
        c->cmd = arg;
    } else if (c->arg == NULL) {
        c->arg = arg;
    } else {
        snprintf(err, n, "unexpected argument %s", arg);
        return -1;
    }
    return 0;
}

void once_opts_init(cli *o)
{
    memset(o, 0, sizeof *o);
    o->port = -1;
    o->connect_timeout_ms = -1;
    once_retry_policy_default(&o->retry);
}

enum { S_COMMANDS, S_GENERAL, S_SEND, S_OUTBOX, S_LISTEN, S_RETRY };

static const opt_section sections[] = {
    [S_COMMANDS] = {"commands", "COMMANDS", NULL, NULL, NULL},
    [S_GENERAL] = {"options", "General",
                   ".SH OPTIONS\n"
                   "DUR is a number with a unit: 500ms, 30s, 5m, 72h, 30d.\n"
                   "An option's value may also be joined to it by =, as in\n"
                   ".BR \\-\\-agent=URL .\n",
                   NULL, NULL},
    [S_SEND] = {"send and continue", "Send and continue", NULL, NULL, NULL},
    [S_OUTBOX] = {"outbox and admin", "Outbox and admin", NULL, NULL, NULL},
    [S_LISTEN] = {"listen (against hostile senders too)", "Listen", NULL, NULL, NULL},
    [S_RETRY] = {"retry policy (per call)", "Retry policy (per call)", NULL, NULL,
                 "Retried: connection and transport errors, timeouts, HTTP 429/502/503/504, "
                 "JSON-RPC errors the agent marks retryable; Retry-After is honoured. A refusal "
                 "(terminal task, busy, conflict, expired, not found) never is. With several "
                 "endpoints, the attempts after a connection error, timeout or 502/503/504 go "
                 "to the next one (a stream resumes there by Last-Event-ID); the attempts, "
                 "backoff and budget are shared by all of them. A wait's stream reconnects "
                 "under the same backoff, attempts and budget; a stream that delivered events "
                 "starts the count afresh."},
};

#define F(field) offsetof(cli, field)
/* A command: its synopsis ('\n' breaks it in --help) and what it does. */
#define COMMAND(synopsis, help) {synopsis, 0, NULL, NULL, help, NULL, S_COMMANDS, NULL, 0, 0, 0, 0}

/* Columns: name, short, argument, default, help, README meaning, section,
 * setter, field, bound, action, flags. */
static const opt rows[] = {
    COMMAND("send --agent URL (--text T | --file F) [--id ID] [--uuid] [--wait]\n"
            "[--push-url URL [--push-token T]]",
            "start a task; prints its ID and state. The ID is minted (ULID; --uuid: UUIDv4) "
            "before anything is sent; --id picks it (agents with the idempotency extension); "
            "--push-url subscribes URL to the task's webhooks in the same send (every event "
            "from the first, carrying token T: `once listen --token T` receives them)"),
    COMMAND("get ID", "the task's current state"),
    COMMAND("cancel ID", "cancel the task"),
    COMMAND("continue ID (--text T | --file F) [--wait]",
            "answer a task in input-required / auth-required"),
    COMMAND("wait ID [--poll]",
            "follow the task until it is finished or asks for input: over SSE when the "
            "agent's card says it streams (a dropped stream resumes where it broke, by "
            "Last-Event-ID), else by polling (--poll: always poll)"),
    COMMAND("inspect ID",
            "the task's timeline from the agent's inspector (onced --inspect): state, fence, "
            "step, lease, every event by generation, side-effect keys, push deliveries and "
            "the retention deadlines; --json prints the JSON as served. Exit 3 when the agent "
            "has no such task, 1 when it serves no inspector"),
    COMMAND("admin replicas",
            "the cluster view: every replica that beats into the agent's store (id, version, "
            "started, last beat, alive, leases held); --agent URL names the onced, whose "
            "--admin-principals must list the token's principal (else exit 3)"),
    COMMAND("admin leases", "leases that ran out and were not taken over yet (principal, task, "
            "state, owner, fence, how long ago)"),
    COMMAND("admin release --principal P --task ID",
            "the agent takes the task over now, live lease or not (fence + 1: its holder's "
            "next write is refused) and runs its turn"),
    COMMAND("admin cancel --principal P [--context C] [--state TASK_STATE_*] [--dry-run]",
            "cancel every task of P that the filter selects (the first 10000), as CancelTask "
            "does; --dry-run lists them only"),
    COMMAND("recover",
            "re-send every pending intent (same ID, same body) and poll every acknowledged "
            "one (abandoned ones: never), each through its agent's stored endpoints; --agent "
            "URLs are tried first, for this run (say, a live replica when the stored one "
            "died); with none it says so"),
    COMMAND("abandon ID",
            "give up on the pending or acknowledged intents of ID (a task ID, or the message "
            "ID `once outbox` shows): they become abandoned, stay listed, and are never sent, "
            "polled or recovered again. The agent is not told (`once cancel ID` does that)"),
    COMMAND("outbox [--state S] [--prune AGE]",
            "list intents (S: pending, acknowledged, final, refused, abandoned); --prune "
            "removes finished ones (final, refused, abandoned) older than AGE"),
    COMMAND("listen --port P --secret S [--secret S2 ...] --token T [--exec CMD]\n"
            "[--state PATH] [--host H] [--tolerance SECS] [--request-timeout DUR]\n"
            "[--max-connections N] [--max-connections-per-ip N]\n"
            "[--max-body-memory BYTES] [--tls-cert FILE --tls-key FILE]",
            "receive push notifications (onced --push-secret S): verify each webhook's "
            "signature and timestamp, record it in a durable processed-set (--state) before "
            "answering 2xx, and hand each event exactly once, in generation order per "
            "subscription and task, to CMD (--exec), or print it. Duplicates are answered 2xx "
            "and dropped. Runs until SIGINT/SIGTERM, then exits 0"),

    {"--agent", 0, "URL[,URL...]", NULL,
     "the agent's JSON-RPC URL, or the URLs of its replicas (one agent, several endpoints). A "
     "send stores them as the agent's endpoints; every call tries the next one when one "
     "cannot be reached, times out or answers 502/503/504 (the same task ID and message: "
     "replicas sharing a store dedup), and starts where the agent last answered. "
     "get/cancel/continue/wait/inspect: default: the agent the outbox sent ID to, at its "
     "stored endpoints; URLs given are tried first, for this run only (a note says so when "
     "they are new)",
     NULL, S_GENERAL, opt_set_str, F(agent), 0, 0, 0},
    {"--outbox", 0, "PATH", "$XDG_STATE_HOME/once/outbox.db, else ~/.local/state/once/outbox.db",
     "the outbox", NULL, S_GENERAL, opt_set_str, F(outbox), 0, 0, 0},
    {"--token", 0, "TOKEN", "$ONCE_TOKEN",
     "bearer token; listen: the token your push configs carry (their \"token\"): deliveries "
     "without it are refused, so another tenant of the same onced cannot reach your handler",
     NULL, S_GENERAL, opt_set_str, F(token), 0, 0, 0},
    {"--cacert", 0, "FILE", "the system's",
     "trust the CAs in this PEM file for https agents; a certificate that fails verification "
     "stops the call at once, nothing sent",
     NULL, S_GENERAL, opt_set_str, F(cacert), 0, 0, 0},
    {"--insecure", 0, NULL, NULL,
     "do not verify the agent's TLS certificate (tests; HTTPS and gRPC over TLS alike)",
     NULL, S_GENERAL, opt_set_flag, F(insecure), 0, 0, 0},
    {"--binding", 0, "B", "auto",
     "the A2A binding calls go over: auto (the first interface of the agent's card, at A2A "
     "1.0, that once speaks; JSON-RPC at --agent when the card lists none), jsonrpc, "
     "http_json or grpc (the card's interface of that binding; none listed: exit 1, nothing "
     "sent). Every binding reaches the same tasks: a task sent over one can be followed, "
     "continued and recovered over another",
     "`auto`: the first interface of the agent's card, at protocol version 1.0, that once "
     "speaks (onced lists JSON-RPC first), else JSON-RPC at `--agent`; `jsonrpc`, "
     "`http_json`, `grpc`: that binding, at the card's interface for it (gRPC: the card's "
     "`host:port`, TLS for an https agent, `--cacert` applies); a card that lists none is "
     "exit 1, nothing sent. The outbox, retries, stream resume (`last-event-id` on gRPC) and "
     "recovery are the same on each, and every binding carries the same request: a task sent "
     "over gRPC is read, continued and recovered over JSON-RPC "
     "([docs/wire.md](docs/wire.md#the-clients-bindings))",
     S_GENERAL, set_binding, F(binding), 0, 0, 0},
    {"--json", 0, NULL, NULL,
     "machine-readable output only (one JSON document; after a wait, \"generations\" lists "
     "the task generations seen; listen: one JSON object per event); the agent's text exact. "
     "Without it, text an agent chose is shown with control characters as \\u001b (JSON's "
     "spelling), bytes that are not UTF-8 as \\xNN, on a terminal and a pipe alike",
     NULL, S_GENERAL, opt_set_flag, F(json), 0, 0, 0},
    {"--wait-timeout", 0, "DUR", "never", "give up waiting after DUR", NULL,
     S_GENERAL, set_dur, F(wait_timeout_ms), 0, 0, 0},
    {"--poll", 0, NULL, NULL, "wait by polling GetTask even if the agent streams", NULL,
     S_GENERAL, opt_set_flag, F(poll), 0, 0, 0},
    {"--out", 0, "DIR", NULL,
     "save every part of the answer in DIR (created if missing): text parts as NAME.txt, raw "
     "file parts decoded, url parts as the URL itself (NAME.url, nothing is fetched), data "
     "parts as NAME.json. NAME is the part's filename, else the artifact's name, made safe "
     "(only [A-Za-z0-9._-], no leading dot: never a path from the agent). Nothing is "
     "overwritten: a file that holds the part already is left as it is (\"already saved\": "
     "saving again is a no-op), a name taken by another file gets -2, -3, ... Every part is "
     "listed by name, kind (text, file, data) and size, with the file it is in",
     NULL, S_GENERAL, opt_set_str, F(out), 0, 0, 0},
    {"--version", 0, NULL, NULL, "print the version and exit", NULL,
     S_GENERAL, NULL, 0, 0, OPT_ACT_VERSION, 0},
    {"--help", 'h', NULL, NULL, "this text", NULL, S_GENERAL, NULL, 0, 0, OPT_ACT_HELP, 0},
    {"--help-man", 0, NULL, NULL, "", NULL, S_GENERAL, NULL, 0, 0, OPT_ACT_MAN, OPT_HIDDEN},
    {"--help-markdown", 0, NULL, NULL, "", NULL, S_GENERAL, NULL, 0, 0, OPT_ACT_MARKDOWN,
     OPT_HIDDEN},

    {"--text", 0, "T", NULL, "the message's text", NULL, S_SEND, opt_set_str, F(text), 0, 0, 0},
    {"--file", 0, "F", NULL, "the message from a file", NULL,
     S_SEND, opt_set_str, F(file), 0, 0, 0},
    {"--id", 0, "ID", NULL, "send: the task ID (agents with the idempotency extension)", NULL,
     S_SEND, opt_set_str, F(id), 0, 0, 0},
    {"--uuid", 0, NULL, NULL, "send: mint a UUIDv4 rather than a ULID", NULL,
     S_SEND, opt_set_flag, F(uuid), 0, 0, 0},
    {"--wait", 0, NULL, NULL, "then follow the task, as `once wait` does", NULL,
     S_SEND, opt_set_flag, F(wait), 0, 0, 0},
    {"--push-url", 0, "URL", NULL, "send: subscribe URL to the task's webhooks", NULL,
     S_SEND, opt_set_str, F(push_url), 0, 0, 0},
    {"--push-token", 0, "T", NULL, "send: the token the webhooks carry (needs --push-url)",
     NULL, S_SEND, opt_set_str, F(push_token), 0, 0, 0},

    {"--state", 0, "S", NULL,
     "outbox: only intents in state S; admin cancel: only tasks in TASK_STATE_*; listen: the "
     "processed-set's path (default $XDG_STATE_HOME/once/webhooks.db)",
     NULL, S_OUTBOX, opt_set_str, F(state), 0, 0, 0},
    {"--prune", 0, "AGE", NULL, "outbox: remove finished intents older than AGE", NULL,
     S_OUTBOX, opt_set_str, F(prune), 0, 0, 0},
    {"--principal", 0, "P", NULL, "admin release/cancel: the tasks' principal", NULL,
     S_OUTBOX, opt_set_str, F(principal), 0, 0, 0},
    {"--context", 0, "C", NULL, "admin cancel: only tasks of context C", NULL,
     S_OUTBOX, opt_set_str, F(context), 0, 0, 0},
    {"--task", 0, "ID", NULL, "admin release: the task", NULL,
     S_OUTBOX, opt_set_str, F(task), 0, 0, 0},
    {"--dry-run", 0, NULL, NULL, "admin cancel: list the tasks only", NULL,
     S_OUTBOX, opt_set_flag, F(dry_run), 0, 0, 0},

    {"--port", 0, "P", NULL, "the port; 0 picks a free one (the URL is printed on stderr)",
     NULL, S_LISTEN, set_port, F(port), 0, 0, 0},
    {"--secret", 0, "S", NULL,
     "the signing secret (onced --push-secret); repeat for each one a rotation accepts", NULL,
     S_LISTEN, set_secret, 0, 0, 0, 0},
    {"--exec", 0, "CMD", NULL,
     "hand each event to CMD (sh -c; the event on stdin; ONCE_TASK_ID, ONCE_GENERATION, "
     "ONCE_WEBHOOK_ID, ONCE_SUBSCRIPTION set; exit 0 = handled, else it is offered again); "
     "without it each event is printed on stdout, one line",
     NULL, S_LISTEN, opt_set_str, F(exec), 0, 0, 0},
    {"--host", 0, "H", "127.0.0.1", "the address to listen on", NULL,
     S_LISTEN, opt_set_str, F(host), 0, 0, 0},
    {"--tolerance", 0, "SECS", "300s", "accepted clock skew", NULL,
     S_LISTEN, set_secs, F(tolerance_ms), 0, 0, 0},
    {"--request-timeout", 0, "DUR", "30s",
     "a request's head and body must be in within DUR of the connection's accept or previous "
     "answer",
     NULL, S_LISTEN, set_dur, F(listen_limits.request_timeout_ms), 0, 0, 0},
    {"--max-connections", 0, "N", "256, at most 1000",
     "open at once; past it the oldest one still waiting for its request is closed", NULL,
     S_LISTEN, set_count, F(listen_limits.max_connections), 0, 0, 0},
    {"--max-connections-per-ip", 0, "N", "64", "open at once from one address", NULL,
     S_LISTEN, set_count, F(listen_limits.max_per_ip), 0, 0, 0},
    {"--max-body-memory", 0, "BYTES", "32MiB",
     "bodies held at once; past it 503 + Retry-After", NULL,
     S_LISTEN, opt_set_size, F(body_memory), 0, 0, 0},
    {"--tls-cert", 0, "FILE", NULL, "serve HTTPS with this PEM certificate chain", NULL,
     S_LISTEN, opt_set_str, F(tls_cert), 0, 0, 0},
    {"--tls-key", 0, "FILE", NULL, "and its unencrypted key", NULL,
     S_LISTEN, opt_set_str, F(tls_key), 0, 0, 0},

    {"--attempts", 0, "N", "5", "attempts, the first included", NULL,
     S_RETRY, set_count, F(retry.max_attempts), 0, 0, 0},
    {"--timeout", 0, "DUR", "10s", "one attempt", NULL,
     S_RETRY, set_dur, F(retry.attempt_timeout_ms), 0, 0, 0},
    {"--connect-timeout", 0, "DUR", "2s", "TCP connect within an attempt", NULL,
     S_RETRY, set_dur, F(connect_timeout_ms), 0, 0, 0},
    {"--deadline", 0, "DUR", "60s", "all attempts together", NULL,
     S_RETRY, set_dur, F(retry.deadline_ms), 0, 0, 0},
    {"--backoff-base", 0, "DUR", "200ms",
     "full-jitter backoff: sleep ~ U[0, min(cap, base*2^k)]", NULL,
     S_RETRY, set_dur, F(retry.backoff_base_ms), 0, 0, 0},
    {"--backoff-cap", 0, "DUR", "10s", "the backoff's cap", NULL,
     S_RETRY, set_dur, F(retry.backoff_cap_ms), 0, 0, 0},
    {"--budget-ratio", 0, "R", "0.1", "retry budget: tokens each call earns", NULL,
     S_RETRY, set_number, F(retry.budget_ratio), 0, 0, 0},
    {"--budget-burst", 0, "N", "10", "retry budget: bucket size", NULL,
     S_RETRY, set_number, F(retry.budget_burst), 0, 0, 0},
    {"--budget-refill", 0, "R", "0.1", "retry budget: tokens earned per second", NULL,
     S_RETRY, set_number, F(retry.budget_refill_per_s), 0, 0, 0},
};

static const char head[] =
    "usage: once [options] COMMAND [arguments]\n"
    "\n"
    "The once A2A client: every send is written to a durable outbox before it\n"
    "leaves, and retried with the same task ID until the agent answers, so a\n"
    "send makes exactly one task however often the network fails.\n"
    "\n";

static const char tail[] =
    "\n"
    "DUR is a number with a unit: 500ms, 30s, 5m, 72h, 30d.\n"
    "\n"
    "exit status:\n"
    "  0    success (with --wait / wait: the task completed or asks for input;\n"
    "       listen: stopped by SIGINT/SIGTERM)\n"
    "  1    any other failure (bad answer, authentication, outbox; abandon: the\n"
    "       outbox has no intent for ID; listen: the processed-set or the port\n"
    "       cannot be opened)\n"
    "  2    usage error (also an agent or push URL the client cannot use: it is\n"
    "       refused before anything is written to the outbox)\n"
    "  3    the agent refused (the error's reason and the task's state are printed)\n"
    "  4    retries exhausted: attempts, deadline or retry budget (a send stays\n"
    "       pending in the outbox: `once recover` finishes it, `once abandon ID`\n"
    "       gives up on it); or --wait-timeout passed, or a wait lost the\n"
    "       agent (it has the task and the intent is acknowledged: `once wait\n"
    "       ID` waits again). The message names the intent's state as `once\n"
    "       outbox` shows it\n"
    "  5    with --wait / wait: the task ended failed, canceled or rejected\n"
    "  6    abandon: every intent of ID is already final, refused or abandoned\n"
    "       (nothing changed; the message names its state)\n"
    "  130  interrupted (SIGINT/SIGTERM)\n";

const opt_program once_options = {
    .name = "once",
    .rows = rows,
    .nrows = sizeof rows / sizeof rows[0],
    .sections = sections,
    .nsections = sizeof sections / sizeof sections[0],
    .help_col = 25,
    .head = head,
    .tail = tail,
    .unknown_whole = 0,
    .positional = positional,
};
