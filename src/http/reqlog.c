/*
 * reqlog.c -- request ids, paths and client addresses for answers and
 * request lines; the exit every answer takes; libmicrohttpd's messages as
 * log lines (reqlog.h).
 */
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "core/log.h"
#include "core/str.h"
#include "http/reqlog.h"
#include "once/once.h"

static __thread once__reqinfo tl_slot;
static __thread const once__reqinfo *tl_current;

/* An id a caller may choose: it reaches our log and our answer's header
 * as it came, so only printable ASCII without spaces, and not too long. */
static int sane_id(const char *v)
{
    size_t n = 0;
    for (; v != NULL && v[n] != '\0'; n++)
        if (n == ONCE__REQID_MAX || v[n] <= ' ' || v[n] > '~')
            return 0;
    return n > 0;
}

static void client_address(struct MHD_Connection *conn, char *out, size_t n)
{
    out[0] = '\0';
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci == NULL || ci->client_addr == NULL)
        return;
    socklen_t len = ci->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                           : sizeof(struct sockaddr_in);
    if (getnameinfo(ci->client_addr, len, out, (socklen_t)n, NULL, 0, NI_NUMERICHOST) != 0)
        out[0] = '\0';
}

void once__reqinfo_take(once__reqinfo *ri, struct MHD_Connection *conn, const char *url)
{
    const char *given = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-Id");
    if (sane_id(given))
        once__strlcpy(ri->id, given, sizeof ri->id);
    else if (once_uuid4(once_rng_system(), ri->id) != ONCE_OK)
        ri->id[0] = '\0';   /* no randomness: the answer carries no id */
    once__strlcpy(ri->path, url != NULL ? url : "", sizeof ri->path);
    client_address(conn, ri->client, sizeof ri->client);
    ri->auth = NULL;
}

once__reqinfo *once__reqinfo_slot(void)
{
    return &tl_slot;
}

void once__reqinfo_use(const once__reqinfo *ri)
{
    tl_current = ri;
}

const once__reqinfo *once__reqinfo_current(void)
{
    return tl_current;
}

enum MHD_Result once__http_queue(struct MHD_Connection *conn, unsigned status,
                                 struct MHD_Response *res)
{
    if (tl_current != NULL && tl_current->id[0] != '\0')
        MHD_add_response_header(res, "X-Request-Id", tl_current->id);
    return MHD_queue_response(conn, status, res);
}

void once__http_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n > 0 && line[n - 1] == '\n')
        line[--n] = '\0';
    if (once__log_enabled(ONCE_LOG_ERROR))   /* a log is kept: one of its records */
        once__log_note(ONCE_LOG_WARN, "http", line);
    else
        fprintf(stderr, "onced: http: %s\n", line);
}
