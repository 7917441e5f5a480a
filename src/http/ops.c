/*
 * ops.c -- GET /healthz, /readyz and /metrics (ops.h), on the main listener
 * and, with --metrics ADDR:PORT, /metrics on a listener of its own.
 *
 * Invariants: these endpoints never read a request body, never check a
 * token and never go through the JSON-RPC worker pool, so a probe is
 * answered even when every worker is busy with blocked calls. `draining`
 * only ever goes from 0 to 1.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "core/log.h"
#include "core/metrics.h"
#include "http/admit.h"
#include "http/ops.h"

#define TEXT_PLAIN "text/plain; charset=utf-8"
/* The content type Prometheus scrapers ask for (text format 0.0.4). */
#define PROM_TEXT "text/plain; version=0.0.4; charset=utf-8"

/* cfg and sse are set by once__ops_new and read-only after; `draining` is
 * atomic; `d` and `admit` belong to start/free. */
struct once__ops {
    once_http_ops cfg;
    once__sse *sse;
    struct MHD_Daemon *d;   /* the separate /metrics listener, or NULL */
    int unready;            /* /readyz answers 503 while calls are still served */
    once__admit admit;      /* its Host rule (DNS rebinding), from its own bind */
    int draining;
};

int once__ops_new(const once_http_ops *cfg, once__sse *sse, once__ops **out)
{
    *out = NULL;
    once__ops *o = once_calloc(1, sizeof *o);
    if (o == NULL)
        return ONCE_ENOMEM;
    if (cfg != NULL)
        o->cfg = *cfg;
    o->sse = sse;
    *out = o;
    return ONCE_OK;
}

void once__ops_drain(once__ops *o)
{
    __atomic_store_n(&o->draining, 1, __ATOMIC_RELEASE);
}

void once__ops_unready(once__ops *o)
{
    __atomic_store_n(&o->unready, 1, __ATOMIC_RELEASE);
}

int once__ops_draining(const once__ops *o)
{
    return __atomic_load_n(&o->draining, __ATOMIC_ACQUIRE);
}

enum MHD_Result once__ops_answer(struct MHD_Connection *conn, const char *method, int status,
                                 const char *type, const char *text, size_t len,
                                 const char *const *extra)
{
    struct MHD_Response *res =
        MHD_create_response_from_buffer(len, (void *)text, MHD_RESPMEM_MUST_COPY);
    if (res == NULL)
        return MHD_NO;
    MHD_add_response_header(res, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(res, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    for (size_t i = 0; extra != NULL && extra[i] != NULL; i += 2)
        MHD_add_response_header(res, extra[i], extra[i + 1]);
    once__metrics_http(method, status);
    enum MHD_Result ret = once__http_queue(conn, (unsigned)status, res);
    MHD_destroy_response(res);
    return ret;
}

static enum MHD_Result answer(struct MHD_Connection *conn, const char *method, int status,
                              const char *type, const char *text, size_t len)
{
    return once__ops_answer(conn, method, status, type, text, len, NULL);
}

static enum MHD_Result answer_str(struct MHD_Connection *conn, const char *method, int status,
                                  const char *text)
{
    return answer(conn, method, status, TEXT_PLAIN, text, strlen(text));
}

static enum MHD_Result readyz(once__ops *o, struct MHD_Connection *conn, const char *method)
{
    if (once__ops_draining(o))
        return answer_str(conn, method, MHD_HTTP_SERVICE_UNAVAILABLE, "draining\n");
    if (__atomic_load_n(&o->unready, __ATOMIC_ACQUIRE))
        return answer_str(conn, method, MHD_HTTP_SERVICE_UNAVAILABLE,
                          "stopping: not ready, still serving until the drain begins\n");
    int rc = o->cfg.ready != NULL ? o->cfg.ready(o->cfg.ctx) : ONCE_OK;
    if (rc != ONCE_OK) {
        char why[128];
        snprintf(why, sizeof why, "store unavailable: %s\n", once_strerror(rc));
        return answer_str(conn, method, MHD_HTTP_SERVICE_UNAVAILABLE, why);
    }
    char also[600] = "", body[sizeof also + 1];
    if (o->cfg.also_ready != NULL &&
        o->cfg.also_ready(o->cfg.also_ctx, also, sizeof also) != ONCE_OK) {
        snprintf(body, sizeof body, "%s\n", also[0] != '\0' ? also : "not ready");
        return answer_str(conn, method, MHD_HTTP_SERVICE_UNAVAILABLE, body);
    }
    return answer_str(conn, method, MHD_HTTP_OK, "ready\n");
}

static enum MHD_Result metrics(once__ops *o, struct MHD_Connection *conn, const char *method)
{
    once__mtext t;
    memset(&t, 0, sizeof t);
    once__metrics_write_process(&t, o->cfg.replica);
    if (o->sse != NULL) {
        once__mtext_family(&t, "once_sse_streams_open", "gauge",
                           "SSE streams (SendStreamingMessage, SubscribeToTask) open now.");
        once__mtext_sample(&t, "once_sse_streams_open", NULL, (uint64_t)once__sse_open(o->sse));
    }
    once__mtext_family(&t, "once_draining", "gauge",
                       "1 while onced drains before it stops (/readyz answers 503).");
    once__mtext_sample(&t, "once_draining", NULL, (uint64_t)once__ops_draining(o));
    if (o->cfg.metrics != NULL)
        o->cfg.metrics(o->cfg.ctx, &t);
    enum MHD_Result ret;
    if (t.oom)
        ret = answer_str(conn, method, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
    else
        ret = answer(conn, method, MHD_HTTP_OK, PROM_TEXT, t.buf != NULL ? t.buf : "", t.len);
    once__mtext_free(&t);
    return ret;
}

int once__ops_route(once__ops *o, struct MHD_Connection *conn, const char *url,
                    const char *method, enum MHD_Result *ret)
{
    int get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    if (!get)
        return 0;
    if (strcmp(url, "/healthz") == 0)
        *ret = answer_str(conn, method, MHD_HTTP_OK, "ok\n");
    else if (strcmp(url, "/readyz") == 0)
        *ret = readyz(o, conn, method);
    else if (strcmp(url, "/metrics") == 0 && o->cfg.metrics_mode == ONCE_HTTP_METRICS_HERE)
        *ret = metrics(o, conn, method);
    else
        return 0;
    return 1;
}

void once__ops_log_request(const once__reqinfo *ri, const char *method, const char *principal,
                           const char *outcome, int status, int64_t t0)
{
    once__logline l;
    if (!once__log_begin(&l, ONCE_LOG_INFO, "request"))
        return;
    const once__logctx *c = once__log_ctx();
    if (method == NULL)
        method = c->method[0] ? c->method : "-";
    if (c->outcome[0] != '\0')
        outcome = c->outcome;
    else if (outcome == NULL)
        outcome = status == 200 ? "ok" : "error";
    once__log_str(&l, "method", method);
    once__log_str(&l, "principal", principal != NULL ? principal : "-");
    if (c->task_id[0] != '\0')
        once__log_str(&l, "task", c->task_id);
    once__log_str(&l, "outcome", outcome);
    once__log_int(&l, "status", status);
    if (t0 >= 0)
        once__log_int(&l, "duration_ms", once_monotonic_ms() - t0);
    if (ri != NULL) {
        once__log_str(&l, "auth", ri->auth);
        once__log_str(&l, "path", ri->path);
        if (ri->client[0] != '\0')
            once__log_str(&l, "client", ri->client);
        if (ri->id[0] != '\0')
            once__log_str(&l, "request_id", ri->id);
    }
    once__log_end(&l);
}

/* --- the separate /metrics listener ---------------------------------------- */

static enum MHD_Result on_metrics_request(void *cls, struct MHD_Connection *conn,
                                          const char *url, const char *method,
                                          const char *version, const char *upload_data,
                                          size_t *upload_data_size, void **con_cls)
{
    (void)version;
    (void)upload_data;
    (void)con_cls;
    if (*upload_data_size > 0) {
        *upload_data_size = 0;   /* a body is read and ignored */
        return MHD_YES;
    }
    once__reqinfo_take(once__reqinfo_slot(), conn, url);
    once__reqinfo_use(once__reqinfo_slot());
    /* The Host rule of the main listener's probes: IP literals and
     * localhost pass, a name only when onced is reached by it. */
    const once__refusal *no = once__admit_check(&((once__ops *)cls)->admit, conn, method,
                                                ONCE__ROUTE_OPS);
    if (no != NULL)
        return answer_str(conn, method, no->status, no->message);
    if (strcmp(url, "/metrics") != 0)
        return answer_str(conn, method, MHD_HTTP_NOT_FOUND, "only GET /metrics is served here\n");
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return answer_str(conn, method, MHD_HTTP_METHOD_NOT_ALLOWED, "GET /metrics\n");
    return metrics(cls, conn, method);
}

/* A numeric IPv4 or IPv6 address (a metrics endpoint is not looked up by
 * name: it should not move when DNS does). */
static int numeric_addr(const char *host, int port, struct sockaddr_storage *ss, int *v6)
{
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        *v6 = 0;
        return ONCE_OK;
    }
    if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        *v6 = 1;
        return ONCE_OK;
    }
    return ONCE_EINVAL;
}

int once__ops_start(once__ops *o, const once_http_config *hc, char *err, size_t errlen)
{
    if (o->cfg.metrics_mode != ONCE_HTTP_METRICS_APART)
        return ONCE_OK;
    struct sockaddr_storage ss;
    int v6 = 0;
    const char *host = o->cfg.metrics_host != NULL ? o->cfg.metrics_host : "";
    if (numeric_addr(host, o->cfg.metrics_port, &ss, &v6) != ONCE_OK) {
        snprintf(err, errlen, "metrics: %s is not a numeric IP address", host);
        return ONCE_EINVAL;
    }
    /* The names it may be reached by: as for the main listener
     * (--allowed-hosts, --public-url), with its own address. */
    once_http_config mc = *hc;
    mc.host = host;
    int rc = once__admit_init(&o->admit, &mc, (struct sockaddr *)&ss, err, errlen);
    if (rc != ONCE_OK)
        return rc;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG |
                     (v6 ? MHD_USE_IPv6 : 0);
    o->d = MHD_start_daemon(flags, (uint16_t)o->cfg.metrics_port, NULL, NULL, on_metrics_request,
                            o, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
                            MHD_OPTION_EXTERNAL_LOGGER, once__http_mhd_log, o, MHD_OPTION_END);
    if (o->d == NULL) {
        snprintf(err, errlen, "metrics: cannot listen on %s:%d (address in use or not available)",
                 host, o->cfg.metrics_port);
        return ONCE_EIO;
    }
    return ONCE_OK;
}

void once__ops_free(once__ops *o)
{
    if (o == NULL)
        return;
    if (o->d != NULL)
        MHD_stop_daemon(o->d);
    once__admit_clear(&o->admit);
    once_free(o);
}
