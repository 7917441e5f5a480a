/*
 * grpc.c -- the gRPC binding's side of the codec (A2A 1.0 section 10).
 *
 * The service lf.a2a.v1.A2AService has the JSON-RPC method table's names
 * (SendMessage, GetTask, ...), and each request message, in its ProtoJSON
 * form (src/grpc/pbjson.c turns the protobuf bytes into it), is exactly the
 * params object JSON-RPC carries. So a gRPC call runs the same row through
 * once__a2a_run, and its answer is the one HTTP+JSON gives: the result's
 * ProtoJSON as the body, an error as the AIP-193 object (whose `status` is
 * the google.rpc.Code name gRPC sends and whose ErrorInfo details go into
 * grpc-status-details-bin), a stream's events as HTTP+JSON's SSE frames. The
 * idempotency digest is computed on that same params object, so a retry
 * sent over another binding is the same request.
 */
#include <string.h>

#include "a2a/a2a_int.h"

int once__a2a_grpc_handle(once__a2a *a, const once__a2a_request *req, const char *method,
                          json_t *params, once__a2a_response *resp)
{
    memset(resp, 0, sizeof *resp);
    size_t idx = 0;
    const a2a_method *m = method != NULL ? once__a2a_lookup(a, method, &idx) : NULL;
    /* Only A2A 1.0's own methods are in the service: not 0.3's or 0.1's
     * names, nor once's operator namespace. */
    if (m == NULL || (m->flags & (A2A_M_LEGACY | A2A_M_V03 | A2A_M_NOVERSION | A2A_M_OPS))) {
        char msg[160];
        snprintf(msg, sizeof msg, "No such method in lf.a2a.v1.A2AService: %.100s",
                 method != NULL ? method : "");
        return once__a2a_error_answer(ONCE_A2A_HTTP_JSON, 501, ONCE_RPC_METHOD_NOT_FOUND,
                                      "METHOD_NOT_FOUND", msg, NULL, resp);
    }
    if (!json_is_object(params))
        return once__a2a_error_answer(ONCE_A2A_HTTP_JSON, 400, ONCE_RPC_INVALID_PARAMS,
                                      "INVALID_PARAMS", "The request message is missing", NULL,
                                      resp);
    return once__a2a_run(a, req, resp, m, idx, NULL, params, ONCE_A2A_HTTP_JSON);
}
