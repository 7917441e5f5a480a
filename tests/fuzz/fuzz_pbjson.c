/*
 * fuzz_pbjson.c -- libFuzzer target for the gRPC message codec
 * (src/grpc/pbjson*.c): protobuf bytes from a peer to ProtoJSON.
 *
 * The first byte picks the message type (the A2A requests and responses
 * onced reads and writes, and google.rpc.Status); the rest is the message.
 * For any input, once__pbjson_from_pb succeeds or answers ONCE_EPARSE or
 * ONCE_ENOMEM; what it prints must convert back to bytes
 * (once__pbjson_to_pb) that print the same JSON again. The input is copied
 * to a block of its exact size, so a read past its end is caught. Seeds:
 * tests/fuzz/corpus/pbjson/ (the corpus of tests/grpc/pbjson_cases.json).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc/pbjson.h"

#include "a2a.pb-c.h"
#include "google/rpc/status.pb-c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "fuzz_pbjson: %s\n", what);
        abort();
    }
}

static const ProtobufCMessageDescriptor *const types[] = {
    &lf__a2a__v1__send_message_request__descriptor,
    &lf__a2a__v1__send_message_response__descriptor,
    &lf__a2a__v1__stream_response__descriptor,
    &lf__a2a__v1__task__descriptor,
    &lf__a2a__v1__list_tasks_request__descriptor,
    &lf__a2a__v1__list_tasks_response__descriptor,
    &lf__a2a__v1__task_push_notification_config__descriptor,
    &lf__a2a__v1__agent_card__descriptor,
    &google__rpc__status__descriptor,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const ProtobufCMessageDescriptor *d = types[data[0] % (sizeof types / sizeof types[0])];
    size_t n = size - 1;
    uint8_t *in = malloc(n ? n : 1);
    check(in != NULL, "no memory for the input");
    memcpy(in, data + 1, n);

    json_t *j = NULL, *again = NULL;
    char err[256];
    int rc = once__pbjson_from_pb(d, in, n, &j, err, sizeof err);
    check(rc == ONCE_OK || rc == ONCE_EPARSE || rc == ONCE_ENOMEM, "undocumented result");
    check((rc == ONCE_OK) == (j != NULL), "a result and a failure disagree");
    if (rc == ONCE_OK) {
        uint8_t *b = NULL;
        size_t bn = 0;
        rc = once__pbjson_to_pb(d, j, &b, &bn, err, sizeof err);
        if (rc != ONCE_OK)
            fprintf(stderr, "fuzz_pbjson: to_pb: %s\n", err);
        check(rc == ONCE_OK, "what from_pb printed does not read back");
        rc = once__pbjson_from_pb(d, b, bn, &again, err, sizeof err);
        check(rc == ONCE_OK, "the bytes to_pb wrote do not read");
        check(json_equal(j, again), "a second round trip prints other JSON");
        once_free(b);
    }
    json_decref(j);
    json_decref(again);
    free(in);
    return 0;
}
