/*
 * admit.h -- whether onced takes a request at all, decided from its head
 * before any route answers it (internal to src/http; server.c asks once per
 * request): the Host it was sent to (DNS rebinding), the browser that sent
 * it (cross-site request forgery: Origin, Sec-Fetch-Site), the type of its
 * body, and the CORS answers for the origins an operator allows.
 */
#ifndef ONCE_HTTP_ADMIT_H
#define ONCE_HTTP_ADMIT_H

#include <microhttpd.h>
#include <sys/socket.h>

#include "http/http.h"

/* What a request's path is, for the rules that apply to it. */
typedef enum once__route_kind {
    ONCE__ROUTE_A2A,      /* JSON-RPC or an HTTP+JSON route: every rule */
    ONCE__ROUTE_CARD,     /* the agent card: the Host rule, CORS answers */
    ONCE__ROUTE_OPS,      /* /healthz, /readyz, /metrics: the Host rule,
                             where IP literals and localhost always pass */
    ONCE__ROUTE_OTHER     /* the inspector (its login checks Origin itself),
                             unknown paths: the Host rule */
} once__route_kind;

/* A refusal: what server.c answers, in the route's binding shape. */
typedef struct once__refusal {
    int status;            /* HTTP status */
    int code;              /* JSON-RPC error code */
    const char *reason;    /* once's reason */
    const char *message;
} once__refusal;

/* Built by once__admit_init, read-only afterwards (any thread). Strings
 * are once_malloc'd and lower-case. */
typedef struct once__admit {
    char **hosts;          /* host names and IP literals (v6 without
                              brackets) a request may name, any port */
    size_t nhosts;
    int any_host;          /* no Host rule: a public or wildcard bind without
                              --allowed-hosts, or "*" among them */
    char **origins;        /* --cors-origin: "scheme://host[:port]" */
    size_t norigins;
    char *own_origin;      /* the --public-url's origin, or NULL */
} once__admit;

/* From cfg (allowed_hosts, cors_origins, public_url, host) and the address
 * the server binds (bound). ONCE_OK; ONCE_EINVAL with err naming the flag
 * and the value; ONCE_ENOMEM. *a is zeroed first; cleared on failure. */
int once__admit_init(once__admit *a, const once_http_config *cfg, const struct sockaddr *bound,
                     char *err, size_t errlen);
void once__admit_clear(once__admit *a);

/* 1 when bound is a loopback address. */
int once__admit_loopback(const struct sockaddr *bound);

/* NULL when the request on conn may go on to its route; else the refusal
 * (static). */
const once__refusal *once__admit_check(const once__admit *a, struct MHD_Connection *conn,
                                       const char *method, once__route_kind kind);

/* 1 when the request's head declares a body (a Content-Length above 0, or
 * a Transfer-Encoding). */
int once__admit_has_body(struct MHD_Connection *conn);

/* The request's Origin when it is one of --cors-origin (the answer then
 * carries the CORS headers), else NULL. Points into a. */
const char *once__admit_cors(const once__admit *a, struct MHD_Connection *conn);

/* A CORS preflight (OPTIONS with Access-Control-Request-Method) from an
 * allowed origin: answer 204 with what it may send and return 1 with MHD's
 * answer in *ret; else 0 (route as usual). */
int once__admit_preflight(const once__admit *a, struct MHD_Connection *conn, const char *method,
                          enum MHD_Result *ret);

/* The headers of an answer to an allowed origin (origin from
 * once__admit_cors): Access-Control-Allow-Origin, -Expose-Headers. */
void once__admit_cors_headers(struct MHD_Response *res, const char *origin);

#endif /* ONCE_HTTP_ADMIT_H */
