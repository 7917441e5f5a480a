/*
 * rest_route.h -- the HTTP side of the HTTP+JSON binding (internal to
 * src/http): which requests server.c hands to once__a2a_rest_handle, and the
 * parts of them the codec reads, copied while the connection's thread owns
 * them (a worker runs the call after the connection is suspended).
 */
#ifndef ONCE_HTTP_REST_ROUTE_H
#define ONCE_HTTP_REST_ROUTE_H

#include <microhttpd.h>

#include "a2a/a2a.h"

/* Everything is once_malloc'd and owned by the request's context. */
typedef struct once__rest {
    char *method;
    char *path;    /* below the interface's base path */
    char **query;  /* name, value, ..., NULL (values "" when absent) */
    size_t nquery; /* strings in query, the NULL excluded */
} once__rest;

/* The route path of url when it is one of the binding's: below rpc_path
 * (the JSON-RPC endpoint's path besides "/"; NULL = "/") or below "/".
 * NULL when no route has the path. Points into url. */
const char *once__rest_path(const char *rpc_path, const char *url);

/* Copy method, path and the query parameters of conn into out (zeroed
 * first). ONCE_OK, ONCE_ENOMEM, or ONCE_ERANGE past 64 query parameters. */
int once__rest_capture(struct MHD_Connection *conn, const char *method, const char *path,
                       once__rest *out);

/* The request for the codec; borrows r's strings. */
void once__rest_request(const once__rest *r, const once__a2a_request *base,
                        once__a2a_rest_request *out);

void once__rest_clear(once__rest *r); /* NULL ok */

/* libmicrohttpd's unescape callback (MHD_OPTION_UNESCAPE_CALLBACK, with
 * a NULL cls) for the request path: percent-escapes decoded in place, as
 * libmicrohttpd's own does, except that a NUL (%00) is written as DEL
 * (0x7F). A C string would end at the NUL, so "/tasks/x-1%00junk" would
 * read as task x-1; as DEL, the routes see a control character and answer
 * 400 (once__has_control), whatever a proxy in front made of the path.
 * Returns the decoded length. */
size_t once__url_unescape(void *cls, struct MHD_Connection *conn, char *s);

#endif /* ONCE_HTTP_REST_ROUTE_H */
