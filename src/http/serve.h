/*
 * serve.h -- the whole A2A server in one call (internal API for apps/ and
 * examples/): an engine over a store, the A2A codec over the engine, HTTP
 * over the codec; started in that order, stopped in the reverse one.
 *
 * apps/onced.c serves the built-in or the `--exec` executor with it;
 * examples/c_agent.c serves an executor written in C. One wiring for every
 * program that serves, so a piece added to the server reaches all of them.
 */
#ifndef ONCE_HTTP_SERVE_H
#define ONCE_HTTP_SERVE_H

#include <stddef.h>

#include "a2a/a2a.h"
#include "engine/engine.h"
#include "engine/push.h"
#include "http/http.h"

/* Three configurations, each with the defaults of its own layer. Filled in
 * by once_serve_start, whatever the caller put there: a2a.backend (the
 * engine), a2a.retention_ms / a2a.tombstone_ms (what the engine uses),
 * a2a.auth (http.tokens != NULL) and http.codec. */
typedef struct once_serve_config {
    once_engine_config engine;  /* store required; executor NULL = echo */
    once_a2a_config a2a;        /* url NULL = "http://HOST:PORT/" from http */
    once_http_config http;      /* host and port required (port 0 only with
                                   a2a.url); rpc_path NULL = the path of the
                                   card URL */
    once_push_options push;     /* push delivery; zeroed = the defaults */
} once_serve_config;

typedef struct once_server once_server;

/* Start everything, or nothing: on failure what was started is stopped
 * again and err says which layer failed. The store, the executor and the
 * tokens stay the caller's; they must outlive the server. */
int once_serve_start(const once_serve_config *cfg, once_server **out, char *err, size_t errlen);

/* The running engine (replica id, counters); valid until once_server_stop. */
once_engine *once_server_engine(const once_server *s);

/* Begin a graceful stop (once_http_drain): /readyz says 503, new calls are
 * refused with 503 SHUTTING_DOWN, calls in progress and turns go on. */
void once_server_drain(once_server *s);
/* JSON-RPC calls accepted and not yet answered (once_http_calls). */
long once_server_calls(const once_server *s);

/* The URL the agent card advertises; valid until once_server_stop. */
const char *once_server_url(const once_server *s);

/* The bound port. */
int once_server_port(const once_server *s);

/* Stop accepting, stop the engine (running turns are asked to stop and
 * their leases released, so another replica takes them over at once;
 * blocked sends answer with the task as it stands), finish the calls in
 * progress, end the streams, free. NULL ok. */
void once_server_stop(once_server *s);

#endif /* ONCE_HTTP_SERVE_H */
