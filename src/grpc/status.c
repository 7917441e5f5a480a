/*
 * status.c -- A2A errors between the AIP-193 JSON body and a gRPC status
 * (status.h). The details travel through the ProtoJSON codec: the body's
 * "details" are ProtoJSON google.protobuf.Any objects already, so the
 * google.rpc.Status is built and read as ProtoJSON and packed or unpacked
 * by pbjson, with no code per detail type.
 */
#include "grpc/status.h"

#include "core/pct.h"
#include "core/quote.h"
#include "grpc/pbjson_int.h"
#include "once/once.h"

#include <stdio.h>
#include <string.h>

#include "google/protobuf/any.pb-c.h"
#include "google/rpc/status.pb-c.h"

static const char *const code_names[] = {
    "OK",        "CANCELLED",         "UNKNOWN",       "INVALID_ARGUMENT",    "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS",    "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",  "UNIMPLEMENTED",       "INTERNAL",
    "UNAVAILABLE", "DATA_LOSS",       "UNAUTHENTICATED",
};
#define N_CODES ((int)(sizeof code_names / sizeof code_names[0]))

/* google.rpc.Code's documented HTTP equivalents, by code. */
static const int code_http[] = {200, 499, 500, 400, 504, 404, 409, 403, 429,
                                400, 409, 400, 501, 500, 503, 500, 401};

/* A2A 1.0 section 5.4: the HTTP status of each A2A error, by reason, in
 * the order of their JSON-RPC codes (-32001, -32002, ...). */
static const struct {
    const char *reason;
    int http;
} a2a_http[] = {
    {"TASK_NOT_FOUND", 404},
    {"TASK_NOT_CANCELABLE", 409},
    {"PUSH_NOTIFICATION_NOT_SUPPORTED", 400},
    {"UNSUPPORTED_OPERATION", 400},
    {"CONTENT_TYPE_NOT_SUPPORTED", 415},
    {"INVALID_AGENT_RESPONSE", 502},
    {"EXTENDED_AGENT_CARD_NOT_CONFIGURED", 400},
    {"EXTENSION_SUPPORT_REQUIRED", 400},
    {"VERSION_NOT_SUPPORTED", 400},
};

#define A2A_DOMAIN "a2a-protocol.org"
#define ERROR_INFO "google.rpc.ErrorInfo"

int once__grpc_code(const char *name)
{
    for (int i = 0; name != NULL && i < N_CODES; i++) {
        if (strcmp(code_names[i], name) == 0)
            return i;
    }
    return -1;
}

const char *once__grpc_code_name(int code)
{
    return code >= 0 && code < N_CODES ? code_names[code] : "UNKNOWN";
}

int once__grpc_http_status(int grpc_code, const char *reason)
{
    for (size_t i = 0; reason != NULL && i < sizeof a2a_http / sizeof a2a_http[0]; i++) {
        if (strcmp(a2a_http[i].reason, reason) == 0)
            return a2a_http[i].http;
    }
    return grpc_code >= 0 && grpc_code < N_CODES ? code_http[grpc_code] : 500;
}

int once__grpc_a2a_rpc_code(const char *reason)
{
    for (size_t i = 0; reason != NULL && i < sizeof a2a_http / sizeof a2a_http[0]; i++) {
        if (strcmp(a2a_http[i].reason, reason) == 0)
            return -32001 - (int)i;
    }
    return 0;
}

/* The gRPC code of an HTTP status, for a body without a known "status". */
static int code_of_http(json_int_t http)
{
    switch (http) {
    case 400:
        return 3;
    case 401:
        return 16;
    case 403:
        return 7;
    case 404:
        return 5;
    case 409:
        return 10;
    case 429:
        return 8;
    case 499:
        return 1;
    case 501:
        return 12;
    case 503:
        return 14;
    case 504:
        return 4;
    default:
        return http >= 500 ? 13 : 2;
    }
}

/* --- AIP-193 to gRPC ----------------------------------------------------------- */

int once__grpc_status_from_aip193(const json_t *error_body, int *grpc_code, char **message,
                                  uint8_t **details, size_t *details_len)
{
    *message = NULL;
    *details = NULL;
    *details_len = 0;
    const json_t *e = json_object_get(error_body, "error");
    if (!json_is_object(e))
        e = error_body;
    if (!json_is_object(e))
        return ONCE_EINVAL;
    int code = once__grpc_code(json_string_value(json_object_get(e, "status")));
    if (code < 0)
        code = code_of_http(json_integer_value(json_object_get(e, "code")));
    const char *msg = json_string_value(json_object_get(e, "message"));
    if (msg == NULL)
        msg = "";
    json_t *kept = json_array(), *st = NULL;
    int rc = kept != NULL ? ONCE_OK : ONCE_ENOMEM;
    size_t i;
    const json_t *d;
    json_array_foreach(json_object_get(e, "details"), i, d) {
        if (rc != ONCE_OK)
            break;
        if (once__pbjson_type(json_string_value(json_object_get(d, "@type"))) == NULL)
            continue;
        uint8_t *b;
        size_t n;
        rc = once__pbjson_to_pb(&google__protobuf__any__descriptor, d, &b, &n, NULL, 0);
        once_free(b);
        if (rc == ONCE_OK)
            rc = json_array_append((json_t *)kept, (json_t *)d) == 0 ? ONCE_OK : ONCE_ENOMEM;
        else if (rc == ONCE_EINVAL) /* a detail that is not what its @type says */
            rc = ONCE_OK;
    }
    if (rc == ONCE_OK) {
        st = json_pack("{s:i, s:s, s:O}", "code", code, "message", msg, "details", kept);
        rc = st != NULL ? ONCE_OK : ONCE_ENOMEM;
    }
    if (rc == ONCE_OK) {
        rc = once__pbjson_to_pb(&google__rpc__status__descriptor, st, details, details_len, NULL,
                                0);
        if (rc == ONCE_EINVAL) /* cannot happen: every part was checked */
            rc = ONCE_ENOMEM;
    }
    if (rc == ONCE_OK && (*message = once_strdup(msg)) == NULL)
        rc = ONCE_ENOMEM;
    json_decref(kept);
    json_decref(st);
    if (rc != ONCE_OK) {
        once_free(*details);
        *details = NULL;
        *details_len = 0;
        return rc;
    }
    *grpc_code = code;
    return ONCE_OK;
}

/* --- gRPC to AIP-193 ----------------------------------------------------------- */

/* The details of a google.rpc.Status as ProtoJSON Any objects appended to
 * out; *reason: the first A2A ErrorInfo's reason (in out, or NULL). */
static int read_details(const uint8_t *b, size_t n, json_t *out, const char **reason,
                        const char **smsg, json_t **smsg_holder)
{
    once__pbj_ctx c = {0};
    char err[8];
    c.err = err;
    c.errlen = sizeof err;
    ProtobufCMessage *m;
    int rc = once__pbj_decode(&c, &google__rpc__status__descriptor, b, n, &m);
    if (rc != ONCE_OK)
        return rc == ONCE_ENOMEM ? rc : ONCE_OK;
    const Google__Rpc__Status *s = (const Google__Rpc__Status *)m;
    if (s->message != NULL && s->message[0] != '\0') {
        *smsg_holder = json_string(s->message);
        *smsg = json_string_value(*smsg_holder);
    }
    for (size_t i = 0; rc == ONCE_OK && i < s->n_details; i++) {
        const Google__Protobuf__Any *a = s->details[i];
        if (once__pbjson_type(a->type_url) == NULL)
            continue;
        uint8_t *ab;
        size_t an;
        if ((rc = once__pbj_pack(&c, &a->base, &ab, &an)) != ONCE_OK)
            break;
        json_t *j;
        rc = once__pbjson_from_pb(&google__protobuf__any__descriptor, ab, an, &j, NULL, 0);
        once_free(ab);
        if (rc == ONCE_EPARSE) {
            rc = ONCE_OK;
            continue;
        }
        if (rc != ONCE_OK)
            break;
        if (json_array_append_new(out, j) != 0) {
            rc = ONCE_ENOMEM;
            break;
        }
        const char *type = json_string_value(json_object_get(j, "@type"));
        const char *slash = type != NULL ? strrchr(type, '/') : NULL;
        const char *domain = json_string_value(json_object_get(j, "domain"));
        if (*reason == NULL && slash != NULL && strcmp(slash + 1, ERROR_INFO) == 0 &&
            domain != NULL && strcmp(domain, A2A_DOMAIN) == 0)
            *reason = json_string_value(json_object_get(j, "reason"));
    }
    protobuf_c_message_free_unpacked(m, once__pbjson_allocator());
    return rc;
}

int once__grpc_status_to_aip193(int grpc_code, const char *message, const uint8_t *details,
                                size_t len, json_t **error_body)
{
    *error_body = NULL;
    json_t *list = json_array(), *holder = NULL;
    if (list == NULL)
        return ONCE_ENOMEM;
    const char *reason = NULL, *smsg = NULL;
    int rc = details != NULL ? read_details(details, len, list, &reason, &smsg, &holder) : ONCE_OK;
    if (message == NULL)
        message = smsg != NULL ? smsg : "";
    json_t *msg = json_string(message);
    if (msg == NULL && rc == ONCE_OK) { /* not UTF-8: shown as well as it can be */
        char shown[512];
        once__quote(message, strlen(message), sizeof shown - 4, shown, sizeof shown);
        msg = json_string(shown);
    }
    json_t *body = NULL;
    if (rc == ONCE_OK && msg != NULL)
        body = json_pack("{s:{s:i, s:s, s:O, s:O}}", "error", "code",
                         once__grpc_http_status(grpc_code, reason), "status",
                         once__grpc_code_name(grpc_code), "message", msg, "details", list);
    json_decref(msg);
    json_decref(list);
    json_decref(holder);
    if (rc != ONCE_OK)
        return rc;
    if (body == NULL)
        return ONCE_ENOMEM;
    *error_body = body;
    return ONCE_OK;
}

/* --- grpc-message ------------------------------------------------------------- */

char *once__grpc_message_encode(const char *msg)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)msg; *p != '\0'; p++)
        n += *p < 0x20 || *p > 0x7e || *p == '%' ? 3 : 1;
    char *out = once_malloc(n + 1), *o = out;
    if (out == NULL)
        return NULL;
    for (const unsigned char *p = (const unsigned char *)msg; *p != '\0'; p++) {
        if (*p < 0x20 || *p > 0x7e || *p == '%') {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        } else {
            *o++ = (char)*p;
        }
    }
    *o = '\0';
    return out;
}

char *once__grpc_message_decode(const char *s, size_t n)
{
    char *out = once_strndup(s, n);
    if (out != NULL)
        once__pct_decode_inplace(out, '?');
    return out;
}
