/*
 * reqlog.h -- what onced's HTTP front says about each request, in its
 * answer and in its log line (internal to src/http): the request id, the
 * path and the client's address; and the one way an answer leaves, which
 * stamps the id on it. Also libmicrohttpd's own error messages, as log
 * lines.
 *
 * The request id is the caller's X-Request-Id when it is sane (1 to
 * ONCE__REQID_MAX printable ASCII characters, no space), so a proxy's or a
 * client's id ties its logs to ours; else a fresh UUIDv4. Every answer of
 * the request carries it back in X-Request-Id (errors, streams, the card,
 * the probes alike) and its request line has it as request_id.
 *
 * Threads: a request's info is taken by the libmicrohttpd thread in its
 * first callback and lives in the request's context (server.c) or, for a
 * request answered at once, in that thread's slot. Each callback names the
 * info of the request it serves (once__reqinfo_use) before it may answer:
 * the answer's header is read from that thread-local pointer. A worker
 * never answers; it hands the info to the request line explicitly.
 */
#ifndef ONCE_HTTP_REQLOG_H
#define ONCE_HTTP_REQLOG_H

#include <stdarg.h>

#include <microhttpd.h>

#define ONCE__REQID_MAX 64
/* Longer paths are logged cut to this many bytes. */
#define ONCE__REQPATH_MAX 256
/* A numeric IPv6 address (INET6_ADDRSTRLEN). */
#define ONCE__CLIENT_MAX 46

typedef struct once__reqinfo {
    char id[ONCE__REQID_MAX + 1];
    char path[ONCE__REQPATH_MAX + 1];
    char client[ONCE__CLIENT_MAX];  /* numeric, no port; "" when unknown */
    const char *auth;               /* a 401's why (static text), else NULL */
} once__reqinfo;

/* Fill ri for the request conn is reading now, at url (its path). */
void once__reqinfo_take(once__reqinfo *ri, struct MHD_Connection *conn, const char *url);
/* This thread's slot: where a request answered in its first callback
 * keeps its info. */
once__reqinfo *once__reqinfo_slot(void);
/* The request this thread answers from now on (NULL: none; answers then
 * carry no id). ri must live until the callback returns. */
void once__reqinfo_use(const once__reqinfo *ri);
const once__reqinfo *once__reqinfo_current(void);

/* MHD_queue_response, with the current request's X-Request-Id added: every
 * answer of onced's listeners leaves through here. */
enum MHD_Result once__http_queue(struct MHD_Connection *conn, unsigned status,
                                 struct MHD_Response *res);

/* libmicrohttpd's MHD_OPTION_EXTERNAL_LOGGER: each message one log line
 * (event "http"), or "onced: http: ..." on stderr when no log is kept. */
void once__http_mhd_log(void *cls, const char *fmt, va_list ap);

#endif /* ONCE_HTTP_REQLOG_H */
