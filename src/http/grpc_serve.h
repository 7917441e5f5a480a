/*
 * grpc_serve.h -- onced's gRPC listener (--grpc-listen; internal to
 * src/http): calls of lf.a2a.v1.A2AService arrive through the HTTP/2
 * transport (src/grpc/h2.c) and run on the HTTP server's workers, behind
 * its bearer tokens, through the same codec (once__a2a_grpc_handle), the
 * same deferred waits and the same SSE hub and stream slots. The HTTP
 * server owns it (once__http_start starts it when once_http_config names a
 * gRPC address); nothing else calls this.
 */
#ifndef ONCE_HTTP_GRPC_SERVE_H
#define ONCE_HTTP_GRPC_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "a2a/a2a.h"
#include "http/http.h"
#include "http/pool.h"
#include "http/sse.h"
#include "http/tls.h"

typedef struct once__grpc_serve_config {
    const char *host;
    int port;                    /* 0 = any free port */
    once__a2a *codec;            /* borrowed, as the rest */
    const once_tokens *tokens;   /* NULL = no auth ("anonymous") */
    once__sse *hub;              /* streams: the HTTP side's hub and slots */
    once_pool *pool;             /* the HTTP side's workers */
    once__tls_live *tls;         /* NULL = h2c (plaintext, prior knowledge) */
    const char *tls_priority;
    size_t max_message;          /* --max-body */
    size_t stream_buffer;        /* the hub's per-stream cap */
    once_http_limits limits;     /* connections, per address, request timeout */
    unsigned idle_timeout_s;
    unsigned streams_per_conn;   /* SETTINGS_MAX_CONCURRENT_STREAMS; 0 = 100 */
    unsigned threads;            /* loop threads (HTTP's --threads); 0 = 1 */
    int inline_calls;            /* no call waits for I/O (HTTP's): hold nothing */
    int inline_first;            /* run a call on its loop thread unless it
                                    would wait (HTTP's) */
} once__grpc_serve_config;

typedef struct once__grpc_serve once__grpc_serve;

int once__grpc_serve_start(const once__grpc_serve_config *cfg, once__grpc_serve **out, char *err,
                           size_t errlen);
int once__grpc_serve_port(const once__grpc_serve *g);
/* From now on a new call is refused (UNAVAILABLE) and nothing more goes
 * to the pool: call it before the pool is freed. NULL ok. */
void once__grpc_serve_quiesce(once__grpc_serve *g);
/* Wait for the calls still held to answer (streams end through the hub's
 * stop first, waits through the codec's release), then close every
 * connection and free. NULL ok. */
void once__grpc_serve_stop(once__grpc_serve *g);

#endif /* ONCE_HTTP_GRPC_SERVE_H */
