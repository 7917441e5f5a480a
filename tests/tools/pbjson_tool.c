/*
 * pbjson_tool.c -- the gRPC message codec on stdin/stdout, for the tests
 * that hold it against protobuf's own Python runtime
 * (tests/grpc/pbjson_vs_python.py):
 *
 *   pbjson_tool to-pb TYPE            ProtoJSON in, protobuf bytes out
 *   pbjson_tool from-pb TYPE          protobuf bytes in, ProtoJSON out
 *   pbjson_tool status-from-aip193    AIP-193 body in,
 *                                     {"code", "message", "details": base64} out
 *   pbjson_tool status-to-aip193 CODE [MESSAGE]
 *                                     grpc-status-details-bin bytes in,
 *                                     AIP-193 body out
 *
 * TYPE is a full message name (lf.a2a.v1.Task). Exit 0, or 1 with
 * "rc=<once error> <message>" on stderr.
 */
#include "core/base64.h"
#include "grpc/pbjson.h"
#include "grpc/status.h"
#include "once/once.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t *slurp(size_t *n)
{
    size_t cap = 4096;
    uint8_t *b = malloc(cap);
    *n = 0;
    size_t got;
    while (b != NULL && (got = fread(b + *n, 1, cap - *n, stdin)) > 0) {
        *n += got;
        if (*n == cap) {
            uint8_t *nb = realloc(b, cap *= 2);
            if (nb == NULL)
                free(b);
            b = nb;
        }
    }
    return b;
}

static int fail(int rc, const char *err)
{
    fprintf(stderr, "rc=%d %s\n", rc, err);
    return 1;
}

static int print(json_t *j)
{
    int rc = json_dumpf(j, stdout, JSON_COMPACT | JSON_ENCODE_ANY) == 0 ? 0 : 1;
    json_decref(j);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: pbjson_tool to-pb|from-pb TYPE | status-from-aip193 | "
                        "status-to-aip193 CODE [MESSAGE]\n");
        return 2;
    }
    size_t n;
    uint8_t *in = slurp(&n);
    if (in == NULL)
        return fail(ONCE_ENOMEM, "reading stdin");
    char err[512] = "";
    int rc = 0;
    const char *cmd = argv[1];
    if ((strcmp(cmd, "to-pb") == 0 || strcmp(cmd, "from-pb") == 0) && argc == 3) {
        const ProtobufCMessageDescriptor *d = once__pbjson_type(argv[2]);
        if (d == NULL) {
            free(in);
            return fail(ONCE_EINVAL, "unknown type");
        }
        if (cmd[0] == 't') {
            json_error_t je;
            json_t *j = json_loadb((const char *)in, n, JSON_DECODE_ANY, &je);
            uint8_t *out = NULL;
            size_t len = 0;
            int r = j == NULL ? ONCE_EPARSE : once__pbjson_to_pb(d, j, &out, &len, err, sizeof err);
            json_decref(j);
            if (r != ONCE_OK)
                rc = fail(r, j == NULL ? je.text : err);
            else
                fwrite(out, 1, len, stdout);
            once_free(out);
        } else {
            json_t *j;
            int r = once__pbjson_from_pb(d, in, n, &j, err, sizeof err);
            rc = r != ONCE_OK ? fail(r, err) : print(j);
        }
    } else if (strcmp(cmd, "status-from-aip193") == 0) {
        json_error_t je;
        json_t *j = json_loadb((const char *)in, n, 0, &je);
        int code;
        char *msg;
        uint8_t *det;
        size_t dn;
        int r = j == NULL ? ONCE_EPARSE : once__grpc_status_from_aip193(j, &code, &msg, &det, &dn);
        json_decref(j);
        if (r != ONCE_OK) {
            rc = fail(r, "status-from-aip193");
        } else {
            char *b64 = malloc(once__base64_len(dn, 0) + 1);
            once__base64_encode(det, dn, b64, 0);
            rc = print(json_pack("{s:i, s:s, s:s}", "code", code, "message", msg, "details", b64));
            free(b64);
            once_free(msg);
            once_free(det);
        }
    } else if (strcmp(cmd, "status-to-aip193") == 0 && argc >= 3) {
        json_t *j;
        int r = once__grpc_status_to_aip193((int)strtol(argv[2], NULL, 10), argc > 3 ? argv[3] : NULL, in, n, &j);
        rc = r != ONCE_OK ? fail(r, "status-to-aip193") : print(j);
    } else {
        rc = fail(ONCE_EINVAL, "unknown command");
    }
    free(in);
    return rc;
}
