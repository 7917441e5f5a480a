/*
 * grpc_call.c -- one gRPC call from the command line through the client
 * half (src/grpc/h2_client.h), for tests/grpc (build/tools/grpc_call).
 *
 *   grpc_call --port P [--host H] [--tls-ca F] [--server-name N]
 *             --path /svc/Method [--data TEXT] [--md NAME=VALUE]...
 *             [--timeout-ms MS] [--cancel-after N] [--repeat N]
 *
 * Prints each response message as "msg <bytes>", the initial metadata as
 * "header <name>: <value>", then "status <code> <message>" and, with
 * details, "details <bytes>". --cancel-after N cancels after N messages.
 * --repeat N makes the call N times on one connection. Exit 0 when every
 * call ended (whatever its status), 1 when the connection failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc/h2_client.h"

typedef struct ctx {
    long seen, cancel_after;
} ctx;

static int on_message(void *arg, const uint8_t *m, size_t len)
{
    ctx *c = arg;
    printf("msg %.*s\n", (int)len, (const char *)m);
    c->seen++;
    return c->cancel_after > 0 && c->seen >= c->cancel_after;
}

int main(int argc, char **argv)
{
    once__h2c_config cfg = {.host = "127.0.0.1"};
    const char *path = NULL, *data = "";
    const char *md[32];
    size_t nmd = 0;
    long timeout = 0, repeat = 1;
    ctx cx = {0};
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *f = argv[i], *v = argv[i + 1];
        if (!strcmp(f, "--port")) cfg.port = (int)strtol(v, NULL, 10);
        else if (!strcmp(f, "--host")) cfg.host = v;
        else if (!strcmp(f, "--tls-ca")) cfg.tls = 1, cfg.ca_file = v;
        else if (!strcmp(f, "--server-name")) cfg.server_name = v;
        else if (!strcmp(f, "--path")) path = v;
        else if (!strcmp(f, "--data")) data = v;
        else if (!strcmp(f, "--timeout-ms")) timeout = strtol(v, NULL, 10);
        else if (!strcmp(f, "--cancel-after")) cx.cancel_after = strtol(v, NULL, 10);
        else if (!strcmp(f, "--repeat")) repeat = strtol(v, NULL, 10);
        else if (!strcmp(f, "--md") && nmd < 30 && strchr(v, '=')) {
            char *eqs = strchr(v, '=');
            *eqs = '\0';
            md[nmd++] = v;
            md[nmd++] = eqs + 1;
        } else {
            fprintf(stderr, "grpc_call: bad flag %s\n", f);
            return 2;
        }
    }
    char err[256];
    once__h2_client *c;
    if (path == NULL || once__h2c_connect(&cfg, &c, err, sizeof err) != 0) {
        fprintf(stderr, "grpc_call: %s\n", path ? err : "--path is required");
        return 1;
    }
    int rc = 0;
    for (long r = 0; r < repeat && rc == 0; r++) {
        once__h2c_result res;
        cx.seen = 0;
        int e = once__h2c_call(c, path, md, nmd / 2, (const uint8_t *)data, strlen(data), timeout,
                               on_message, &cx, NULL, &res);
        if (res.headers) {
            fputs("header ", stdout);
            for (const char *p = res.headers; *p; p++) {
                putchar(*p);
                if (*p == '\n' && p[1])
                    fputs("header ", stdout);
            }
        }
        printf("status %d %s\n", res.status, res.message ? res.message : "");
        if (res.details_len)
            printf("details %.*s\n", (int)res.details_len, (const char *)res.details);
        once__h2c_result_clear(&res);
        rc = e == 0 ? 0 : 1;
    }
    fflush(stdout);
    once__h2c_close(c);
    return rc;
}
