/*
 * server.h -- serve an agent in process: everything onced does (A2A 1.0 over
 * JSON-RPC and HTTP+JSON, the agent card, dedup, leases, fencing, takeover,
 * retention, SSE, /healthz, /readyz, /metrics) around an executor written in
 * C (executor.h), over a store the caller opened (store.h).
 *
 *   once_store *st;  once_server *srv;  char err[512];
 *   once_store_open("sqlite:agent.db", NULL, &st, err, sizeof err);
 *   once_server_options o = {.store = st, .executor = &my_agent,
 *                            .listen = "127.0.0.1:8080"};
 *   once_server_start(&o, &srv, err, sizeof err);
 *   ... until it is time to stop ...
 *   once_server_stop(srv);  once_store_close(st);
 *
 * examples/c_agent.c is a whole agent built this way. onced adds only its
 * command line (and a few knobs this header leaves at their defaults).
 */
#ifndef ONCE_SERVER_H
#define ONCE_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "once/executor.h"
#include "once/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What an embedder chooses; zero or NULL fields take onced's defaults.
 * Strings are copied or read during once_server_start; the store and the
 * executor are borrowed and must outlive the server. */
typedef struct once_server_options {
    once_store *store;                /* required */
    const once_executor *executor;    /* required: the agent; once_executor_echo()
                                         is the built-in one */
    const char *listen;               /* required: "HOST:PORT" or "[v6]:PORT",
                                         port 1..65535 */
    const char *public_url;           /* the card's URL; NULL = http(s)://HOST:PORT/ */
    /* The agent card: its name and description, and its one skill. */
    const char *name;                 /* NULL = "once" */
    const char *description;
    const char *skill_id;             /* NULL = "agent" */
    const char *skill_description;
    /* HTTPS: both PEM files or neither. A missing, unreadable or mismatched
     * file makes once_server_start fail with err naming it. */
    const char *tls_cert_file;
    const char *tls_key_file;
    /* The GnuTLS priority string served; NULL = TLS 1.2 and 1.3 with
     * forward secrecy only. Must outlive the server. */
    const char *tls_priority;
    int64_t lease_ms;                 /* execution lease (15 s) */
    int64_t retention_ms;             /* finished tasks kept in full (72 h) */
    int64_t tombstone_ms;             /* then answered TASK_EXPIRED (30 d) */
    unsigned turn_workers;            /* turns that run at once (16) */
} once_server_options;

typedef struct once_server once_server;

/* Start everything, or nothing: ONCE_OK and *out, or a negative once_err
 * with err saying what failed (the listen address, a TLS file, the store).
 * The address is bound when this returns. */
ONCE_API int once_server_start(const once_server_options *o, once_server **out, char *err,
                      size_t errlen);

/* The URL the agent card advertises; valid until once_server_stop. */
ONCE_API const char *once_server_url(const once_server *s);

/* The bound port. */
ONCE_API int once_server_port(const once_server *s);

/* Say the server is going away before refusing anything: /readyz answers
 * 503 from now on while calls are still served, so that a load balancer
 * stops sending here before once_server_drain refuses what still comes. */
ONCE_API void once_server_unready(once_server *s);

/* Begin a graceful stop: /readyz answers 503, new calls are refused with
 * 503 SHUTTING_DOWN (clients retry elsewhere), calls in progress and
 * running turns go on. Optional before once_server_stop. */
ONCE_API void once_server_drain(once_server *s);

/* Stop accepting, stop the running turns (their leases are released, so
 * another replica takes them over at once), finish the calls in progress,
 * end the streams, free. NULL ok. */
ONCE_API void once_server_stop(once_server *s);

#ifdef __cplusplus
}
#endif

#endif /* ONCE_SERVER_H */
