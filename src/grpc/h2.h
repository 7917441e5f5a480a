/*
 * h2.h -- the gRPC server transport (internal to libonce): an HTTP/2 server
 * (nghttp2) that carries gRPC calls, unary and server-streaming, and knows
 * nothing of what they mean. The codec above it reads a call's path,
 * metadata and one request message, and answers with initial metadata,
 * messages and a status.
 *
 * Threads. cfg.threads loop threads own every socket and nghttp2 session;
 * nothing else touches them. The handler's on_call runs on a loop thread
 * and must not block: it takes a reference and hands the call to a worker.
 * A worker answers from any thread; each answer is queued in the call and
 * the call's loop is woken (an eventfd). Output is pulled, as libmicrohttpd
 * pulls an SSE stream (src/http/sse.c): nghttp2's data provider takes the
 * queued bytes as the peer's flow-control window allows, and a streaming
 * producer is told to wait by once__h2_call_send's answer and resumed by
 * on_room, so a slow reader costs about cfg.stream_buffer per stream, never
 * a thread.
 *
 * Hostile peers (each limit below names what it stops): a connection is
 * closed, and every call on it told on_gone, when it breaks HTTP/2, floods
 * control frames or resets, sends headers without end, or leaves its output
 * without progress; a stream is refused when it alone is too large. One
 * connection's abuse never holds a loop thread: every socket is
 * non-blocking and every per-connection structure is bounded.
 */
#ifndef ONCE_GRPC_H2_H
#define ONCE_GRPC_H2_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* GnuTLS's types by their struct tags (gnutls_pcert_st, gnutls_privkey_t):
 * no GnuTLS header needed, so a build without TLS has none. */
struct gnutls_pcert_st;
struct gnutls_privkey_st;

/* gRPC status codes (google.rpc.Code) the transport itself answers with. */
enum {
    ONCE_GRPC_OK = 0,
    ONCE_GRPC_CANCELLED = 1,
    ONCE_GRPC_UNKNOWN = 2,
    ONCE_GRPC_INVALID_ARGUMENT = 3,
    ONCE_GRPC_DEADLINE_EXCEEDED = 4,
    ONCE_GRPC_RESOURCE_EXHAUSTED = 8,
    ONCE_GRPC_UNIMPLEMENTED = 12,
    ONCE_GRPC_INTERNAL = 13,
    ONCE_GRPC_UNAVAILABLE = 14
};

/* The limits (zero fields: the defaults named, which mirror onced's HTTP
 * listener: src/http/http.h's ONCE_HTTP_*, --max-body, the SSE buffer). */
typedef struct once__h2_config {
    const char *host;            /* address to bind; NULL = "127.0.0.1" */
    int port;                    /* 0 = any free port (once__h2_port) */
    unsigned threads;            /* loop threads; 0 = 1 */
    /* TLS: pick set = TLS only, ALPN "h2" required (a client that does not
     * negotiate it is refused); NULL = h2c with prior knowledge (an
     * HTTP/1.1 request gets a 505 and is closed). pick answers the pair to
     * serve, as once__tls_live_pick does (src/http/tls.h), from any loop
     * thread, at each handshake: a reloaded pair serves from the next one. */
    void (*pick)(void *arg, struct gnutls_pcert_st **pcert, unsigned *n,
                 struct gnutls_privkey_st **key);
    void *pick_arg;
    const char *tls_priority;    /* NULL = ONCE_TLS_PRIORITY_DEFAULT */
    /* Connections. Past max_connections the connection idle longest (no
     * open stream) is closed for the new one; with none idle the new one is
     * refused. Past max_per_ip from one address the new one is refused. */
    unsigned max_connections;    /* 0 = 16384 (ONCE_HTTP_MAX_CONNECTIONS) */
    unsigned max_per_ip;         /* 0 = 128 (ONCE_HTTP_MAX_PER_IP) */
    /* A call's headers and message must be in within this of its stream's
     * first frame (else the stream is reset, or the connection closed when
     * it is in the middle of a header block); a connection's TLS handshake
     * and preface too, from its accept. */
    int64_t request_timeout_ms;  /* 0 = 30000 (ONCE_HTTP_REQUEST_TIMEOUT_MS) */
    /* A connection without a stream for this long gets GOAWAY and is closed. */
    int64_t idle_timeout_ms;     /* 0 = 30000 (onced's keep-alive idle timeout) */
    /* A connection with output pending (queued response bytes it does not
     * take: a flow-control window that never opens; or bytes the socket
     * does not take) and no progress for this long is closed. */
    int64_t write_stall_ms;      /* 0 = 30000 */
    unsigned max_streams;        /* SETTINGS_MAX_CONCURRENT_STREAMS; beyond
                                    it streams are refused; 0 = 100 */
    size_t max_message;          /* a request message's bytes; larger:
                                    RESOURCE_EXHAUSTED; 0 = 1 MiB (--max-body) */
    size_t max_header_list;      /* SETTINGS_MAX_HEADER_LIST_SIZE: a stream
                                    whose header list passes it is answered
                                    431 at the block's end; a block passing
                                    twice it gets GOAWAY ENHANCE_YOUR_CALM
                                    (a block with too many CONTINUATION
                                    frames is refused by nghttp2 itself, and
                                    one left open by the request timeout);
                                    0 = 16 KiB */
    size_t stream_buffer;        /* a call's queued output at which
                                    once__h2_call_send says "wait"; on_room
                                    when it falls below half; 0 = 64 KiB */
    /* Floods, counted per connection per flood_window_ms: RST_STREAM frames
     * from the client (rapid reset) past max_resets, and SETTINGS, PING,
     * PRIORITY and empty DATA frames past max_control, get GOAWAY
     * ENHANCE_YOUR_CALM and a close. Acks the client does not read are bounded by nghttp2
     * (max_outbound_ack) and close the connection too. */
    int64_t flood_window_ms;     /* 0 = 10000 */
    unsigned max_resets;         /* 0 = 1000 */
    unsigned max_control;        /* 0 = 1000 */
} once__h2_config;

/* A call: one gRPC request stream. Refcounted: the transport holds one
 * reference until the stream closes; a handler that keeps the call past
 * on_call takes its own. Its path, metadata, message, peer and deadline are
 * fixed before on_call and readable from any thread while referenced. */
typedef struct once__h2_call once__h2_call;

/* Callbacks run on a loop thread and must not block or call back into
 * anything that waits for the loop. The call is valid during the callback. */
typedef struct once__h2_handler {
    void *ctx;
    /* The request is all in: headers and exactly one message. */
    void (*on_call)(void *ctx, once__h2_call *call);
    /* The client reset or closed the stream, its connection closed, or the
     * deadline passed (the transport answered DEADLINE_EXCEEDED): stop
     * producing; every later answer returns ONCE_ECLOSED. At most once per
     * call, only after on_call and only before the call finished. */
    void (*on_gone)(void *ctx, once__h2_call *call);
    /* A call whose once__h2_call_send said "wait" has its queued output
     * below half of cfg.stream_buffer now. NULL: never told. */
    void (*on_room)(void *ctx, once__h2_call *call);
} once__h2_handler;

typedef struct once__h2 once__h2;

/* Bind, listen and start the loop threads. ONCE_OK with *out, or an error
 * (ONCE_EINVAL: a bad config; ONCE_EIO: cannot bind or listen) with err
 * saying why. cfg's strings are copied; handler must outlive the server. */
int once__h2_start(const once__h2_config *cfg, const once__h2_handler *handler, once__h2 **out,
                   char *err, size_t errlen);
/* The bound port. */
int once__h2_port(const once__h2 *s);
/* Close every connection (each open call told on_gone), join the threads,
 * free. Calls the handler still holds stay valid, answering ONCE_ECLOSED.
 * NULL ok. */
void once__h2_stop(once__h2 *s);

/* The request, fixed for the call's life. Strings are NUL-terminated. */
const char *once__h2_call_path(const once__h2_call *c);   /* "/<service>/<method>" */
/* The value of metadata key (lowercase), repeated keys joined with ",";
 * NULL when absent. Every non-pseudo request header is metadata (te,
 * content-type, grpc-timeout among them); -bin values stay base64. */
const char *once__h2_call_metadata(const once__h2_call *c, const char *key);
const uint8_t *once__h2_call_message(const once__h2_call *c, size_t *len); /* unframed */
const char *once__h2_call_peer(const once__h2_call *c);   /* "ip:port" ("[v6]:port") */
int64_t once__h2_call_deadline_ms(const once__h2_call *c); /* once_monotonic_ms; 0 = none */

/* The answer, from any thread, in this order: headers (optional), messages,
 * finish; each returns ONCE_ECLOSED once the call is gone (the stream
 * closed, the deadline passed) or finished, ONCE_EINVAL out of order or
 * malformed, ONCE_ENOMEM. */

/* Initial metadata: n pairs kv[2i] name (lowercase, no pseudo-header, not
 * content-type), kv[2i+1] value. ONCE_OK. */
int once__h2_call_headers(once__h2_call *c, const char *const *kv, size_t n);
/* Queue one message (the transport adds the 5-byte prefix). Returns the
 * call's queued output bytes after it (>= 0): at cfg.stream_buffer or more
 * the producer should wait for on_room before the next one (the message is
 * queued either way). */
int64_t once__h2_call_send(once__h2_call *c, const uint8_t *msg, size_t len);
/* The trailers: grpc-status, grpc-message when message is non-empty
 * (percent-encoded here), grpc-status-details-bin when details_len > 0
 * (base64 here). With nothing sent before: one HEADERS frame that ends the
 * stream (Trailers-Only). ONCE_OK. */
int once__h2_call_finish(once__h2_call *c, int grpc_status, const char *message,
                         const uint8_t *details_bin, size_t details_len);

/* The handler's data: set it in on_call, before anything else can see the
 * call (the callbacks run on its loop thread); free_data (NULL ok) runs when
 * the last reference goes. once__h2_call_data: NULL until set. */
void once__h2_call_set_data(once__h2_call *c, void *data, void (*free_data)(void *data));
void *once__h2_call_data(const once__h2_call *c);
/* The answer bytes queued and not yet taken by the connection (0 once the
 * call is gone or its stream closed). Any thread. */
size_t once__h2_call_pending(once__h2_call *c);

void once__h2_call_ref(once__h2_call *c);
void once__h2_call_unref(once__h2_call *c);   /* NULL ok */

/* Pieces of the gRPC wire the client half shares (h2_wire.c). */

/* grpc-timeout ("1-8 digits" then H M S m u n) in milliseconds, rounded up,
 * at least 1; -1 when malformed. */
int64_t once__grpc_timeout_parse(const char *s);
/* The grpc-timeout value for ms (> 0) into out (at least 12 bytes). */
void once__grpc_timeout_format(int64_t ms, char *out, size_t outlen);
/* A message's 5-byte prefix: the compressed flag, then the length, big-endian. */
void once__grpc_prefix_put(uint8_t p[5], uint32_t len);   /* uncompressed */
uint32_t once__grpc_prefix_len(const uint8_t p[5]);
/* grpc-message's percent-encoding: once__grpc_message_encode (status.h). */

#endif /* ONCE_GRPC_H2_H */
