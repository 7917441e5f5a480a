/*
 * onced_opts.h -- onced's command line: the options struct its table
 * (onced_opts.c) fills. onced.c checks what needs more than one flag
 * (--tls-cert with --tls-key) and wires the pieces from it.
 */
#ifndef ONCE_APPS_ONCED_OPTS_H
#define ONCE_APPS_ONCED_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include "cli/opt.h"

/* A repeatable flag's values, in the order given (at most the row's max). */
typedef struct opt_list {
    const char *v[32];
    size_t n;
} opt_list;

/* Filled by opt_parse in main's thread before anything starts; read-only
 * afterwards. 0 / NULL: not given (the defaults are onced_opts_init's or the
 * library's). */
typedef struct onced_opts {
    const char *listen, *grpc_listen, *store, *executor, *exec_cmd, *auth_tokens, *replica_id,
        *public_url, *card, *admin_principals, *plain_ids;
    const char *upstream, *upstream_header_file, *upstream_principal_header;
    opt_list upstream_headers;
    int64_t upstream_deadline_ms;
    int64_t upstream_card_refresh_ms;   /* -1 = not given */
    int64_t retention_ms, tombstone_ms, lease_ms, clock_offset_ms, grace_ms, deadline_ms,
        max_wait_ms;
    uint64_t max_body, max_task_size, conn_memory;
    unsigned threads, workers, grpc_streams, max_streams, turn_workers, max_queue, max_waits,
        max_waits_pp;
    unsigned max_queue_pp, max_streams_pp;
    int64_t sse_ping_ms;
    int64_t request_timeout_ms;
    unsigned max_connections, max_per_ip;
    uint64_t max_body_memory;
    int test_admin, experiment_naive, inspect, no_migrate;
    opt_list push_secrets, push_allow, allowed_hosts, cors_origins;
    unsigned push_attempts;
    int64_t push_timeout_ms, push_backoff_ms;
    const char *metrics;
    int64_t drain_ms;
    int64_t drain_delay_ms;
    const char *log_format, *log_level, *log_level_file;
    const char *tls_cert, *tls_key, *tls_priority;
    int check_config;
} onced_opts;

/* The default --drain-delay: a few of a load balancer's readiness probes. */
#define DRAIN_DELAY_MS 3000

/* Zero o, then the defaults onced itself gives (the rest are the
 * library's). */
void onced_opts_init(onced_opts *o);

extern const opt_program onced_options;

/* `onced migrate`'s command line (--log-format is read before, as for
 * onced itself). */
typedef struct onced_migrate_opts {
    const char *store, *log_format;
    int dry_run;
} onced_migrate_opts;

extern const opt_program onced_migrate_options;

#endif /* ONCE_APPS_ONCED_OPTS_H */
