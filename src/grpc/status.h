/*
 * status.h -- A2A errors as gRPC statuses and back (not API): spec 10.6 and
 * the mapping table of 5.4.
 *
 * onced's HTTP+JSON binding writes every error as an AIP-193 body,
 * {"error": {"code": <HTTP status>, "status": "NOT_FOUND", "message": ...,
 * "details": [{"@type": ".../google.rpc.ErrorInfo", "reason": ...}]}}
 * (src/a2a/errors.c). The gRPC binding carries the same error as a status
 * code, a grpc-message and a google.rpc.Status in the
 * grpc-status-details-bin trailer; these functions convert between the
 * two so that one error builder serves every binding. Pure functions.
 */
#ifndef ONCE_GRPC_STATUS_H
#define ONCE_GRPC_STATUS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* The google.rpc.Code number of a name ("NOT_FOUND" -> 5), -1 if unknown;
 * and the name of a number ("UNKNOWN" for one out of 0..16). */
int once__grpc_code(const char *name);
const char *once__grpc_code_name(int code);

/* The HTTP status of a gRPC code: spec 5.4's for an A2A error (reason, as
 * in ErrorInfo, may be NULL), else the google.rpc.Code mapping. */
int once__grpc_http_status(int grpc_code, const char *reason);

/* The JSON-RPC code of an A2A error reason (ErrorInfo.reason, spec 5.4:
 * "TASK_NOT_FOUND" -> -32001 ... "VERSION_NOT_SUPPORTED" -> -32009); 0 for
 * NULL or another reason. */
int once__grpc_a2a_rpc_code(const char *reason);

/* An AIP-193 body ({"error": {...}}, or the inner object) to a gRPC
 * status: *grpc_code from "status" (from the HTTP "code" when "status" is
 * missing or unknown), *message (once_strdup'd; "" when absent), and
 * *details and *details_len: a serialized google.rpc.Status {code, message,
 * details} for grpc-status-details-bin, once_malloc'd; its details are the
 * body's, in order, each as a google.protobuf.Any -- every ErrorInfo, and
 * any other type ProtoJSON can resolve (pbjson.h); the rest are dropped.
 * ONCE_OK, ONCE_EINVAL (not an object), ONCE_ENOMEM; on failure nothing is
 * left allocated. */
int once__grpc_status_from_aip193(const json_t *error_body, int *grpc_code, char **message,
                                  uint8_t **details, size_t *details_len);

/* The reverse, for a client: a gRPC status (code, grpc-message already
 * decoded, may be NULL; the grpc-status-details-bin bytes, may be NULL) to a
 * new AIP-193 body {"error": {"code", "status", "message", "details"}}.
 * The message is Status.message when message is NULL; details whose type
 * is unknown or that do not parse are dropped; details that are not a
 * google.rpc.Status at all are ignored. ONCE_OK or ONCE_ENOMEM. */
int once__grpc_status_to_aip193(int grpc_code, const char *message, const uint8_t *details,
                                size_t len, json_t **error_body);

/* grpc-message as gRPC's HTTP/2 protocol writes it: UTF-8 with every byte
 * outside printable ASCII, and '%', as %XX. A new once_malloc'd string, or
 * NULL when memory ran out. */
char *once__grpc_message_encode(const char *msg);

/* ...and read back from s[0..n): escapes that are cut short or not hex stay
 * as they are (a receiver must not fail on them), a decoded NUL becomes
 * '?'. A new once_malloc'd string, or NULL when memory ran out. */
char *once__grpc_message_decode(const char *s, size_t n);

#endif /* ONCE_GRPC_STATUS_H */
