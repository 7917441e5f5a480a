/*
 * ops.h -- the operations endpoints of onced's HTTP front (internal to
 * src/http): GET /healthz, GET /readyz and GET /metrics, answered before
 * routing to JSON-RPC and never behind authentication, plus the optional
 * listener that serves /metrics on an address of its own.
 *
 * /healthz  200 while the process serves HTTP at all (liveness).
 * /readyz   200 when the backend's probe answers, the optional also_ready
 *           hook agrees (a gateway's upstream) and the server is not
 *           draining; 503 with the reason otherwise (readiness: a load
 *           balancer stops sending new calls).
 * /metrics  the Prometheus text format (core/metrics.h): the process-wide
 *           families, the HTTP server's own, then the backend's.
 */
#ifndef ONCE_HTTP_OPS_H
#define ONCE_HTTP_OPS_H

#include <microhttpd.h>

#include "http/http.h"
#include "http/reqlog.h"
#include "http/sse.h"

typedef struct once__ops once__ops;

/* cfg is copied; sse may be NULL (no streams gauge). */
int once__ops_new(const once_http_ops *cfg, once__sse *sse, once__ops **out);
/* Start the separate /metrics listener when cfg->metrics asks for one;
 * hc gives the names it may be reached by (allowed_hosts, public_url). */
int once__ops_start(once__ops *o, const once_http_config *hc, char *err, size_t errlen);
/* Stop that listener and free. NULL ok. */
void once__ops_free(once__ops *o);

/* Readiness goes to 503 for good (the server is draining). */
void once__ops_drain(once__ops *o);
/* Readiness goes to 503 for good while calls are still served (the delay
 * before a drain, for load balancers to notice). */
void once__ops_unready(once__ops *o);
int once__ops_draining(const once__ops *o);

/* One "request" log line (core/log.h) for an answered call. NULL method or
 * outcome: what the codec and the engine noted in this thread's log
 * context (outcome: else "ok" for 200, "error" otherwise); principal NULL:
 * not known (a refusal before authentication: logged as "-"); t0 < 0: no
 * duration; ri: the request's path, client, id and a 401's why (NULL:
 * none). */
void once__ops_log_request(const once__reqinfo *ri, const char *method, const char *principal,
                           const char *outcome, int status, int64_t t0);

/* Queue text (copied) with a status, a content type, Cache-Control:
 * no-store and the name/value pairs of extra (NULL-terminated; NULL =
 * none); counted in the HTTP request metrics. MHD's result. */
enum MHD_Result once__ops_answer(struct MHD_Connection *conn, const char *method, int status,
                                 const char *type, const char *text, size_t len,
                                 const char *const *extra);

/* If url is an operations endpoint on the main listener, answer it and
 * return 1 with MHD's answer in *ret; else 0 (route elsewhere). */
int once__ops_route(once__ops *o, struct MHD_Connection *conn, const char *url,
                    const char *method, enum MHD_Result *ret);

#endif /* ONCE_HTTP_OPS_H */
