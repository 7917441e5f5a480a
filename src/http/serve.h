/*
 * serve.h -- the whole A2A server in one call, with every knob (internal API
 * for apps/onced.c): an engine over a store, the A2A codec over the engine,
 * HTTP over the codec; started in that order, stopped in the reverse one.
 *
 * The public face of the same server is include/once/server.h: its
 * once_server_start fills a once_serve_config from once_server_options and
 * calls once__serve_start, so onced and every embedder (examples/c_agent.c)
 * share one wiring, and a piece added to the server reaches all of them.
 */
#ifndef ONCE_HTTP_SERVE_H
#define ONCE_HTTP_SERVE_H

#include <stddef.h>

#include "a2a/a2a.h"
#include "core/log.h"
#include "engine/engine.h"
#include "engine/push.h"
#include "http/http.h"
#include "once/server.h"

/* Three configurations, each with the defaults of its own layer. Filled in
 * by once__serve_start, whatever the caller put there: a2a.backend (the
 * engine), a2a.retention_ms / a2a.tombstone_ms (what the engine uses),
 * a2a.auth (http.tokens != NULL) and http.codec. */
typedef struct once_serve_config {
    once__engine_config engine;  /* store required; executor NULL = echo */
    once__a2a_config a2a;        /* url NULL = "http(s)://HOST:PORT/" from http */
    once_http_config http;      /* host and port required (port 0 only with
                                   a2a.url); rpc_path NULL = the path of the
                                   card URL */
    once_push_options push;     /* push delivery; zeroed = the defaults */
} once_serve_config;

/* Start everything, or nothing: on failure what was started is stopped
 * again and err says which layer failed. The store, the executor and the
 * tokens stay the caller's; they must outlive the server. Stopped with
 * once_server_stop (server.h). */
int once__serve_start(const once_serve_config *cfg, once_server **out, char *err, size_t errlen);

/* The running engine (replica id, counters); valid until once_server_stop. */
once__engine *once__server_engine(const once_server *s);

/* Serve the card built from these descriptive members from now on (what
 * once__a2a_config.card holds; a gateway's refreshed upstream card), with a
 * new ETag: 1; 0 when that is the card served already; or ONCE_ENOMEM. Any
 * thread, until once_server_stop. */
int once__server_card_set(once_server *s, const json_t *members);

/* The HTTP configuration s serves with (once__http_cfg). */
const once_http_config *once__server_http_cfg(const once_server *s);

/* Serve the TLS pair read again from the files s was started with to new
 * connections (once__http_tls_reload). Any thread. */
int once__server_tls_reload(once_server *s, char sha256[2 * ONCE_SHA256_LEN + 1], char *err,
                            size_t errlen);

/* JSON-RPC calls accepted and not yet answered (once__http_calls). */
long once__server_calls(const once_server *s);

/* The limits s runs with, each layer's defaults filled in, as fields of l
 * (onced's start-up log line). */
void once__server_log_limits(const once_server *s, once__logline *l);

/* once_server_stop; with last != NULL, the engine's counters as they stood
 * once every call was answered and every turn stopped (onced's shutdown
 * summary). */
void once__server_stop(once_server *s, once__engine_stats *last);

#endif /* ONCE_HTTP_SERVE_H */
