/*
 * guard.h -- what keeps hostile clients from holding a libmicrohttpd server
 * (internal to src/http and src/client): onced's server (server.c) and the
 * webhook receiver of `once listen` (src/client/webhook_http.c) each run one
 * guard beside their MHD daemon.
 *
 * A connection is either waiting for a request (from its accept, or from the
 * end of its previous response, until the request's head and body are all
 * in) or busy (the request is being run, answered, or streamed: SSE). The
 * guard keeps the waiting ones in one list, oldest first, and
 *   - closes a connection that waited longer than the request timeout, even
 *     if it keeps trickling bytes (MHD's own timeout only measures silence);
 *   - closes the oldest waiting connection when a new one would pass the
 *     connection limit, so a new client always finds room (MHD's own limit
 *     is set higher, for the connections still closing);
 *   - bounds the request bodies held at once: a body that would pass the
 *     budget first closes the oldest waiting connections that hold body
 *     bytes; when none is left, the request is refused (503).
 * "Close" is shutdown(2) of the socket: MHD sees the end of the stream and
 * closes the connection in its own thread, as for a client that went away.
 * The per-address limit is MHD's (MHD_OPTION_PER_IP_CONNECTION_LIMIT).
 *
 * once__guard_framing checks what MHD 0.9.75 lets through in a request head
 * and a proxy in front may read differently (request smuggling).
 */
#ifndef ONCE_HTTP_GUARD_H
#define ONCE_HTTP_GUARD_H

#include <microhttpd.h>

#include "http/http.h"

typedef struct once__guard once__guard;

/* Every limit set (no zero: callers fill in their defaults). who prefixes
 * the guard's log lines on stderr ("onced: http"). */
int once__guard_new(const once_http_limits *lim, const char *who, once__guard **out);

/* Stop the sweeper and free; after MHD_stop_daemon. NULL ok. */
void once__guard_free(once__guard *g);

/* Whom the guard serves (onced's server: its once_http), for the callbacks
 * MHD gives nothing but the connection (GnuTLS's certificate callback). Set
 * before the daemon starts; read from any thread afterwards. */
void once__guard_set_owner(once__guard *g, void *owner);
/* The owner of the guard of connection c; NULL when c is not guarded. */
void *once__guard_owner(struct MHD_Connection *c);

/* The MHD_OPTION_NOTIFY_CONNECTION callback; cls is the guard. */
void once__guard_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                               enum MHD_ConnectionNotificationCode toe);

/* The MHD options a guarded daemon takes (connection limit, per-address
 * limit, the notify callback above), written into opts[0..n) followed by
 * MHD_OPTION_END; n >= 4. Pass them with MHD_OPTION_ARRAY. */
void once__guard_mhd_options(once__guard *g, struct MHD_OptionItem *opts);

/* From the access handler, on the connection's own thread: */

/* The request is all in (head and body): its deadline stops. */
void once__guard_busy(struct MHD_Connection *c);

/* The request is over (MHD_OPTION_NOTIFY_COMPLETED): the connection waits
 * for its next request, with a fresh deadline. */
void once__guard_idle(struct MHD_Connection *c);

/* A request body: it grows with the bytes that arrived (never from a
 * declared Content-Length), up to a maximum, and every byte it holds counts
 * against the guard's budget. Owned by the connection's thread; zeroed =
 * empty. */
typedef struct once__body {
    char *data;      /* [0..len), NUL-terminated; NULL while empty */
    size_t len, cap;
    int too_large;   /* passed the maximum: nothing more is kept (413) */
    int no_memory;   /* the budget is spent and no older upload could be
                        closed: nothing more is kept (503) */
} once__body;

/* Append n bytes to b (of connection c), keeping at most max. Past max or
 * the budget the bytes are dropped and a flag set; ONCE_ENOMEM only when
 * malloc fails. */
int once__body_append(struct MHD_Connection *c, once__body *b, size_t max, const char *data,
                      size_t n);

/* Free b's bytes and give them back to the budget; b stays usable. */
void once__body_free(struct MHD_Connection *c, once__body *b);

/* Before the body is read (the access handler's first call): NULL when the
 * head is well framed, else why not, for a 400 that closes the connection.
 * Refused: a header name that is not an RFC 9110 token (a space before the
 * colon), a control character or NUL in a value, a folded header line, more
 * than one Content-Length, Transfer-Encoding beside Content-Length, and a
 * Transfer-Encoding other than one "chunked". */
const char *once__guard_framing(struct MHD_Connection *c, const char *method);

#endif /* ONCE_HTTP_GUARD_H */
