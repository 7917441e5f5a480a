/*
 * h2_client.h -- a blocking gRPC client over one HTTP/2 connection
 * (internal to libonce): h2c with prior knowledge, or TLS with ALPN "h2"
 * and the server's certificate verified. One call at a time per client, on
 * the caller's thread; unary and server-streaming calls, a deadline sent as
 * grpc-timeout and kept locally, and cancellation (RST_STREAM CANCEL) from
 * the message callback or a flag another thread sets.
 */
#ifndef ONCE_GRPC_H2_CLIENT_H
#define ONCE_GRPC_H2_CLIENT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct once__h2c_config {
    const char *host;          /* name or address to connect to */
    int port;
    int tls;                   /* 1: TLS, ALPN h2 required, certificate verified */
    int insecure;              /* 1: TLS without verifying anything (tests only) */
    const char *ca_file;       /* PEM trust anchors; NULL = the system's */
    const char *server_name;   /* checked against the certificate and sent
                                  as SNI and :authority; NULL = host */
    const char *tls_priority;  /* NULL = ONCE_TLS_PRIORITY_DEFAULT */
    int64_t connect_timeout_ms; /* 0 = 10000 */
} once__h2c_config;

typedef struct once__h2_client once__h2_client;

/* Connect (and handshake). ONCE_OK with *out; ONCE_EIO, ONCE_ETIMEDOUT, or
 * ONCE_EINVAL (no host or port; the server's certificate failed
 * verification or ca_file could not be loaded; cfg.tls in a build without
 * TLS, -DONCE_TLS=OFF: what no retry fixes), with err saying why. */
int once__h2c_connect(const once__h2c_config *cfg, once__h2_client **out, char *err,
                      size_t errlen);
void once__h2c_close(once__h2_client *c);   /* NULL ok */

/* A response message, unframed; valid during the call. Nonzero: cancel. */
typedef int (*once__h2c_on_message)(void *arg, const uint8_t *msg, size_t len);

/* How a call ended. Strings and details are once_malloc'd; clear with
 * once__h2c_result_clear. status is a gRPC code: the server's grpc-status,
 * or the client's own (DEADLINE_EXCEEDED, CANCELLED, UNAVAILABLE when the
 * connection failed, INTERNAL for a malformed response, or the code gRPC
 * maps an HTTP status to when the answer was not gRPC). */
typedef struct once__h2c_result {
    int status;
    char *message;             /* grpc-message, decoded; NULL = none */
    uint8_t *details;          /* grpc-status-details-bin, decoded */
    size_t details_len;
    char *headers;             /* initial metadata as "name: value\n" lines */
} once__h2c_result;
void once__h2c_result_clear(once__h2c_result *r);

/* One call: path "/<service>/<method>", metadata md[0..2n) as name, value
 * pairs, one request message; every response message to on_message. Blocks
 * until the call ends, timeout_ms passes (0 = none) or *cancel becomes
 * nonzero (cancel may be NULL). ONCE_OK with *res filled (whatever the
 * gRPC status); ONCE_ECLOSED when the connection is unusable (res says
 * UNAVAILABLE); ONCE_ERANGE for a message over 4 GiB; ONCE_ENOMEM. */
int once__h2c_call(once__h2_client *c, const char *path, const char *const *md, size_t n,
                   const uint8_t *req, size_t len, int64_t timeout_ms,
                   once__h2c_on_message on_message, void *arg, atomic_int *cancel,
                   once__h2c_result *res);

/* A check the calls of c make as often as they check cancel (every 50 ms
 * at least): nonzero cancels the call in progress as *cancel does. For a
 * caller whose stop is not an atomic_int (a signal flag, an idle timer).
 * NULL: none. */
void once__h2c_set_stop(once__h2_client *c, int (*stop)(void *ctx), void *ctx);

/* Keepalive: a call that receives nothing for every_ms sends an HTTP/2
 * PING (at most one per every_ms), whose ACK is traffic; 0 = never. With
 * once__h2c_last_rx_ms (monotonic, once_monotonic_ms's clock: when bytes
 * last arrived) a caller tells a quiet stream from a dead connection. */
void once__h2c_set_keepalive(once__h2_client *c, int64_t every_ms);
int64_t once__h2c_last_rx_ms(const once__h2_client *c);

#endif /* ONCE_GRPC_H2_CLIENT_H */
