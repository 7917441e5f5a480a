/*
 * http.h -- the HTTP side of onced (internal API for apps/onced): the
 * libmicrohttpd server, bearer-token authentication, and the parsers for
 * the daemon's command-line values (durations, byte sizes).
 *
 * Serving model: a pool of libmicrohttpd threads (epoll, keep-alive) reads
 * requests; every JSON-RPC call runs on a separate worker pool while its
 * connection is suspended, because a blocking SendMessage may wait for a
 * task for up to a minute and must not stall the other connections an
 * epoll thread serves. SSE streams are fed by a small fixed hub (sse.c: a
 * few pump workers and one watcher thread), not a thread each; a stream
 * waiting for its task holds no thread.
 */
#ifndef ONCE_HTTP_HTTP_H
#define ONCE_HTTP_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "a2a/a2a.h"

/* ---------------------------------------------------------------------------
 * Values on the command line (flags.c).
 */

/* A duration: one or more <number><unit> groups, units ms, s, m, h, d
 * ("500ms", "30s", "5m", "72h", "30d", "1h30m"), or "0". allow_negative
 * accepts a leading '-' (clock offsets). ONCE_OK, ONCE_EINVAL (malformed:
 * no unit, unknown unit, empty) or ONCE_ERANGE (overflows int64 ms). */
int once__parse_duration(const char *s, int allow_negative, int64_t *ms);

/* A byte count: digits with an optional suffix k/K/KiB (x1024), m/M/MiB
 * (x1024^2), g/G/GiB (x1024^3). ONCE_OK, ONCE_EINVAL or ONCE_ERANGE. */
int once__parse_size(const char *s, uint64_t *bytes);

/* "HOST:PORT", "[v6]:PORT" -> host (without brackets) and port 0..65535. */
int once__parse_listen(const char *s, char *host, size_t hostlen, int *port);

/* The whole file at path (a flag's file: --auth-tokens, --card), at most
 * about max bytes, into a fresh once_malloc'd *out of *len bytes (not
 * NUL-terminated). ONCE_OK; ONCE_EIO or ONCE_ERANGE with err naming the
 * path and the problem; ONCE_ENOMEM. */
int once__read_file(const char *path, size_t max, char **out, size_t *len, char *err,
                   size_t errlen);

/* ---------------------------------------------------------------------------
 * Bearer tokens (auth.c). File format: one "TOKEN PRINCIPAL" per line,
 * separated by spaces or tabs; blank lines and lines starting with '#'
 * (after leading whitespace) are ignored. Tokens are unique; a principal
 * may hold several tokens. Principals are 1..ONCE_PRINCIPAL_MAX printable
 * non-space ASCII characters.
 */
typedef struct once_tokens once_tokens;

/* Parse text[0..n). On ONCE_EINVAL, err names the line and the problem. */
int once__tokens_parse(const char *text, size_t n, once_tokens **out, char *err, size_t errlen);
int once__tokens_load(const char *path, once_tokens **out, char *err, size_t errlen);
void once__tokens_free(once_tokens *t);   /* NULL ok */
size_t once__tokens_count(const once_tokens *t);
/* Serve fresh's tokens in t from now on (SIGHUP re-read the file) and free
 * fresh. Any thread: a lookup already running finishes on the old tokens,
 * which are freed when the last such lookup ends. */
void once__tokens_swap(once_tokens *t, once_tokens *fresh);

/* The principal for an Authorization header value ("Bearer TOKEN", scheme
 * case-insensitive), copied into out; NULL when the header is absent,
 * malformed or the token unknown. Compares in constant time per entry. */
const char *once__tokens_principal(const once_tokens *t, const char *authorization,
                                   char out[ONCE_PRINCIPAL_MAX + 1]);

/* Sessions (the inspector's login cookie; auth.c): a value that names a
 * principal without carrying its token, signed with the token's digest,
 * good until now_s + ttl_s. The longest value, NUL included: */
#define ONCE__SESSION_MAX (3 + 20 + 1 + 2 * ONCE_PRINCIPAL_MAX + 1 + 64 + 1)
/* ONCE_OK with the value in out; ONCE_ENOTFOUND: token is not in t;
 * ONCE_EINVAL; ONCE_ERANGE: out too small. */
int once__session_make(const once_tokens *t, const char *token, int64_t now_s, int64_t ttl_s,
                       char *out, size_t n);
/* The principal a session value names, copied into out; or NULL:
 * malformed, expired at now_s, or signed by no token t holds now. */
const char *once__session_principal(const once_tokens *t, const char *value, int64_t now_s,
                                    char out[ONCE_PRINCIPAL_MAX + 1]);

/* ---------------------------------------------------------------------------
 * Limits against hostile clients (guard.c), shared by onced's server and
 * the webhook receiver of `once listen`; 0 = that server's default.
 */
typedef struct once_http_limits {
    int64_t request_timeout_ms;  /* a request's head and body must be in
                                    within this of the connection's accept
                                    or its previous response; >= 1 s */
    unsigned max_connections;    /* open at once; past it the oldest one
                                    waiting for its request is closed */
    unsigned max_per_ip;         /* open at once from one client address */
    size_t max_body_memory;      /* request bodies held at once; >= max_body */
} once_http_limits;

/* onced's defaults (`once listen` has smaller ones: webhook_listen.h). */
#define ONCE_HTTP_REQUEST_TIMEOUT_MS 30000
#define ONCE_HTTP_MAX_CONNECTIONS 16384
#define ONCE_HTTP_MAX_PER_IP 128
#define ONCE_HTTP_MAX_BODY_MEMORY ((size_t)64 << 20)

/* Fill the zero fields of l with the given defaults and check the result
 * (max_body: the largest body one request may hold). ONCE_OK, or
 * ONCE_EINVAL with err saying which limit is wrong. */
int once__http_limits_resolve(once_http_limits *l, const once_http_limits *defaults,
                             size_t max_body, char *err, size_t errlen);

/* ---------------------------------------------------------------------------
 * The operations endpoints (ops.c): /healthz, /readyz, /metrics. The HTTP
 * layer knows nothing of what is behind them: the backend answers through
 * these callbacks (serve.c wires the engine in).
 */
struct once__mtext;

enum {
    ONCE_HTTP_METRICS_HERE = 0,  /* GET /metrics on the main listener */
    ONCE_HTTP_METRICS_OFF = 1,   /* no /metrics anywhere */
    ONCE_HTTP_METRICS_APART = 2  /* GET /metrics on metrics_host:metrics_port only */
};

typedef struct once_http_ops {
    void *ctx;
    /* ONCE_OK when the backend can serve (its store answers); NULL = always */
    int (*ready)(void *ctx);
    /* Optional: what else must answer for /readyz to say ready, besides the
     * backend (onced's gateway: its upstream). ONCE_OK when it does; else
     * an error, with why (one line) naming it and what failed. */
    int (*also_ready)(void *also_ctx, char *why, size_t n);
    void *also_ctx;
    /* Append the backend's metric families; NULL = none */
    void (*metrics)(void *ctx, struct once__mtext *t);
    const char *replica;         /* once_build_info's replica label; NULL = none.
                                    Borrowed: outlives the server */
    int metrics_mode;            /* ONCE_HTTP_METRICS_* */
    const char *metrics_host;    /* ONCE_HTTP_METRICS_APART: where */
    int metrics_port;
} once_http_ops;

/* ---------------------------------------------------------------------------
 * The task inspector (inspect.h), off unless `on` (--inspect). The backend
 * answers a task's timeline through `timeline` and an artifact's part through
 * `part` (serve.c wires the engine's in): ONCE_OK with *out a new
 * reference, ONCE_ENOTFOUND, or a store error.
 */
typedef struct once_http_inspect {
    int on;
    void *ctx;
    int (*timeline)(void *ctx, const char *principal, const char *task_id, json_t **out);
    /* One part of an artifact, for its download link: the same answers,
     * *out as engine/inspect.h's once__engine_inspect_part gives it. */
    int (*part)(void *ctx, const char *principal, const char *task_id, const char *artifact_id,
                size_t index, json_t **out);
} once_http_inspect;

/* ---------------------------------------------------------------------------
 * The server (server.c).
 */
typedef struct once_http_config {
    const char *host;            /* listen address (numeric or name) */
    int port;                    /* 0 = any free port (see once__http_port) */
    once__a2a *codec;             /* borrowed; outlives the server */
    const once_tokens *tokens;   /* borrowed; NULL = no auth ("anonymous") */
    const char *rpc_path;        /* JSON-RPC endpoint besides "/"; NULL = "/" only */
    unsigned threads;            /* libmicrohttpd threads; 0 = 2 */
    unsigned workers;            /* request workers; 0 = 64 */
    int inline_calls;            /* no call waits for I/O (the memory store): run
                                    them on the libmicrohttpd threads, without the
                                    hand-over to a worker */
    int inline_first;            /* run each call on the libmicrohttpd thread
                                    unless it would wait for a store write
                                    (once__a2a_request.inline_only): a new task
                                    held for a store that commits without its
                                    caller (the SQLite store), a replay, a
                                    read; the others go to a worker */
    size_t max_body;             /* 0 = 1 MiB */
    /* The gRPC binding's listener (grpc_serve.c): host NULL = none; port 0
     * = any free (once__http_grpc_port). Same workers, tokens, stream hub,
     * TLS pair and limits as HTTP. */
    const char *grpc_host;
    int grpc_port;
    unsigned grpc_streams;       /* concurrent calls per HTTP/2 connection; 0 = 100 */
    size_t conn_memory;          /* each connection's head memory (request line,
                                    headers, the reply's headers): 4 KiB to
                                    1 MiB; 0 = 12 KiB */
    once_http_limits limits;     /* zero fields: the ONCE_HTTP_* defaults */
    unsigned idle_timeout_s;     /* keep-alive idle timeout; 0 = 30 */
    /* SSE (sse.c): streams served at once (past it: 503 TOO_MANY_STREAMS),
     * the keep-alive comment interval, the per-stream buffer cap. */
    unsigned max_streams;        /* 0 = 256 */
    int max_streams_per_principal; /* one principal's share of them (past it 503
                                    * TOO_MANY_STREAMS for it alone): 0 = none;
                                    * ONCE__SHARE_QUARTER = a quarter */
    int64_t sse_ping_ms;         /* 0 = 15000 */
    size_t sse_buffer;           /* 0 = 64 KiB */
    once_http_ops ops;           /* zeroed: always ready, /metrics with the
                                    process-wide families only */
    /* HTTPS (tls.c): both PEM files, or neither for plain HTTP. A missing,
     * unreadable or mismatched file fails once__http_start naming it. The
     * operations listener of ONCE_HTTP_METRICS_APART stays plain HTTP. */
    const char *tls_cert_file;   /* certificate, then intermediates */
    const char *tls_key_file;    /* its private key, unencrypted */
    const char *tls_priority;    /* GnuTLS priority string; NULL = TLS 1.2+ with
                                    forward secrecy (ONCE_TLS_PRIORITY_DEFAULT) */
    once_http_inspect inspect;   /* zeroed: no /inspect/ */
    /* Request admission (admit.c). The names a request's Host may carry
     * (--allowed-hosts: host names or IP literals, any port; "*" = any);
     * NULL = the listen address, localhost, 127.0.0.1 and ::1 when bound to
     * loopback, any name otherwise. The public URL's host always passes. */
    const char *const *allowed_hosts;
    size_t nallowed_hosts;
    /* Origins ("scheme://host[:port]") whose browser pages may call the A2A
     * endpoints, with CORS answers (--cors-origin); others are refused. */
    const char *const *cors_origins;
    size_t ncors_origins;
    const char *public_url;      /* the card's URL when set (--public-url);
                                    its origin is onced's own */
} once_http_config;

typedef struct once_http once_http;

int once__http_start(const once_http_config *cfg, once_http **out, char *err, size_t errlen);
/* The bound port (useful with port 0). */
int once__http_port(const once_http *h);
/* The gRPC listener's bound port; 0 without one. */
int once__http_grpc_port(const once_http *h);
/* The configuration h serves with, every default filled in; valid until
 * once__http_stop. */
const once_http_config *once__http_cfg(const once_http *h);
/* Begin a graceful stop: /readyz answers 503 from now on and new JSON-RPC
 * calls get 503 SHUTTING_DOWN (Connection: close); calls in progress, open
 * streams and the operations endpoints go on. */
void once__http_drain(once_http *h);
/* /readyz answers 503 from now on; calls are still served (ops.h). */
void once__http_unready(once_http *h);
/* JSON-RPC calls accepted and not yet answered (streams once open are not
 * counted). */
long once__http_calls(const once_http *h);
/* Serve card (len bytes, once_malloc'd; h takes it) as the agent card from
 * now on, with validators of its own (a new ETag and Last-Modified): 1; or
 * 0 when it is the card served already (freed, nothing changes). Any
 * thread. */
int once__http_card_set(once_http *h, char *card, size_t len);
/* Read the TLS certificate and key files again (SIGHUP) and serve the new
 * pair to the connections that handshake from now on; a connection keeps
 * the pair it has. ONCE_OK with the new certificate's SHA-256 (of its DER,
 * hex) in sha256; else the old pair stays and err says why (naming the
 * file). Any thread. */
int once__http_tls_reload(once_http *h, char sha256[2 * ONCE_SHA256_LEN + 1], char *err,
                          size_t errlen);
/* Stop accepting, finish the calls in progress, close. NULL ok. */
void once__http_stop(once_http *h);

#endif /* ONCE_HTTP_HTTP_H */
