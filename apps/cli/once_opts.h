/*
 * once_opts.h -- the once client's command line: the struct its table
 * (once_opts.c) fills and its commands read, and the table itself.
 */
#ifndef ONCE_APPS_ONCE_OPTS_H
#define ONCE_APPS_ONCE_OPTS_H

#include <stdint.h>

#include <jansson.h>

#include "cli/opt.h"
#include "http/http.h"
#include "once/client.h"

#define MAX_SECRETS 8

/* The command line, parsed once in main's thread; c is the open client.
 * During a wait the client's callbacks (same thread) update shown, gens and
 * streamed; during listen the receiver's drain thread (one drain at a time)
 * only reads it. */
typedef struct cli {
    const char *cmd, *id, *arg, *agent, *text, *file, *outbox, *token, *state, *prune, *out;
    const char *push_url, *push_token;
    const char *principal, *context, *task;   /* admin's filters and target */
    int dry_run;
    char agent_buf[2048];   /* the outbox's agent URL for a task command */
    const char *exec, *host, *secrets[MAX_SECRETS];
    size_t nsecrets;
    int json, wait, uuid, poll, insecure;
    once_binding binding;
    const char *cacert, *tls_cert, *tls_key;
    long port;                   /* -1: not given */
    int64_t wait_timeout_ms, tolerance_ms;
    once_http_limits listen_limits; /* listen; 0 = the receiver's defaults */
    int64_t connect_timeout_ms;  /* -1: not given (the policy's default) */
    uint64_t body_memory;        /* --max-body-memory, into listen_limits */
    once_retry_policy retry;
    once_client *c;
    int tty;                     /* progress lines go to stderr */
    once_state shown;            /* the last state a progress line showed */
    json_t *gens;                /* generations a wait saw, for --json */
    int streamed;                /* a wait received stream events */
} cli;

/* Zero o, then the defaults the table's setters do not give. */
void once_opts_init(cli *o);

extern const opt_program once_options;

#endif /* ONCE_APPS_ONCE_OPTS_H */
