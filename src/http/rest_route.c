/*
 * rest_route.c -- which requests belong to the HTTP+JSON binding, and the
 * copy of their method, path and query parameters (rest_route.h). The
 * routes themselves are the codec's (src/a2a/rest.c); this file only asks
 * it whether a path is one of them, so server.c keeps one routing hook.
 *
 * The binding is served below the interface URL's path, the same base the
 * JSON-RPC endpoint answers on (POST to the base itself is JSON-RPC; the
 * routes are longer paths), and below "/" like JSON-RPC.
 */
#include <string.h>

#include "core/pct.h"
#include "http/rest_route.h"

#define MAX_QUERY 64

const char *once__rest_path(const char *rpc_path, const char *url)
{
    if (rpc_path != NULL) {
        size_t n = strlen(rpc_path);
        while (n > 0 && rpc_path[n - 1] == '/')
            n--;
        if (n > 0 && strncmp(url, rpc_path, n) == 0 && url[n] == '/' &&
            once__a2a_rest_known(url + n))
            return url + n;
    }
    return once__a2a_rest_known(url) ? url : NULL;
}

typedef struct collect {
    once__rest *r;
    int rc;
} collect;

static enum MHD_Result add_query(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *value)
{
    (void)kind;
    collect *c = cls;
    once__rest *r = c->r;
    if (r->nquery + 2 > 2 * MAX_QUERY) {
        c->rc = ONCE_ERANGE;
        return MHD_NO;
    }
    char *k = once_strdup(key), *v = once_strdup(value ? value : "");
    if (k == NULL || v == NULL) {
        once_free(k);
        once_free(v);
        c->rc = ONCE_ENOMEM;
        return MHD_NO;
    }
    r->query[r->nquery++] = k;
    r->query[r->nquery++] = v;
    return MHD_YES;
}

int once__rest_capture(struct MHD_Connection *conn, const char *method, const char *path,
                       once__rest *out)
{
    memset(out, 0, sizeof *out);
    out->method = once_strdup(method);
    out->path = once_strdup(path);
    out->query = once_calloc(2 * MAX_QUERY + 1, sizeof *out->query);
    if (out->method == NULL || out->path == NULL || out->query == NULL) {
        once__rest_clear(out);
        return ONCE_ENOMEM;
    }
    collect c = {out, ONCE_OK};
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, add_query, &c);
    if (c.rc != ONCE_OK)
        once__rest_clear(out);
    return c.rc;
}

void once__rest_request(const once__rest *r, const once__a2a_request *base,
                        once__a2a_rest_request *out)
{
    memset(out, 0, sizeof *out);
    out->base = *base;
    out->method = r->method;
    out->path = r->path;
    out->query = (const char *const *)r->query;
}

void once__rest_clear(once__rest *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; r->query != NULL && i < r->nquery; i++)
        once_free(r->query[i]);
    once_free(r->query);
    once_free(r->method);
    once_free(r->path);
    memset(r, 0, sizeof *r);
}

size_t once__url_unescape(void *cls, struct MHD_Connection *conn, char *s)
{
    (void)cls;
    (void)conn;
    return once__pct_decode_inplace(s, 0x7F);
}
