/*
 * fuzz_pbjson.c -- libFuzzer target for the gRPC message codec
 * (src/grpc/pbjson*.c): protobuf bytes from a peer to ProtoJSON.
 *
 * The first byte picks the message type (the A2A requests and responses
 * onced reads and writes, and google.rpc.Status); the rest is the message.
 * For any input, once__pbjson_from_pb succeeds or answers ONCE_EPARSE or
 * ONCE_ENOMEM; what it prints must convert back to bytes
 * (once__pbjson_to_pb) that print the same JSON again, and its text, read
 * by the answer path without a tree (once__pbjson_text_to_pb), must give
 * the same message when that path takes it. The same input read as JSON
 * text: whatever the text path takes, the tree path
 * (once__pbjson_answer_to_pb) takes too, and the two messages agree. The input is copied
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

/* If the text path takes text[0..n), the tree path takes want (the same
 * JSON, NULL if jansson does not read it) and both decode alike. */
static void same_message(const ProtobufCMessageDescriptor *d, const char *text, size_t n,
                         const json_t *want)
{
    uint8_t *fast = NULL, *b = NULL;
    size_t fn = 0, bn = 0;
    int rc = once__pbjson_text_to_pb(d, text, n, &fast, &fn);
    check(rc == ONCE_OK || rc == ONCE_EUNSUPPORTED || rc == ONCE_ENOMEM,
          "the text path: undocumented result");
    if (rc != ONCE_OK)
        return;
    check(want != NULL, "the text path took text jansson does not read");
    char err[256];
    rc = once__pbjson_answer_to_pb(d, want, &b, &bn, err, sizeof err);
    if (rc != ONCE_OK)
        fprintf(stderr, "fuzz_pbjson: answer_to_pb: %s\n", err);
    check(rc == ONCE_OK, "the text path took JSON the tree path refuses");
    json_t *x = NULL, *y = NULL;
    check(once__pbjson_from_pb(d, fast, fn, &x, err, sizeof err) == ONCE_OK,
          "the text path's bytes do not read");
    check(once__pbjson_from_pb(d, b, bn, &y, err, sizeof err) == ONCE_OK,
          "the tree path's bytes do not read");
    check(json_equal(x, y), "the text path and the tree path wrote other messages");
    json_decref(x);
    json_decref(y);
    once_free(fast);
    once_free(b);
}

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
        char *text = json_dumps(j, JSON_COMPACT);
        check(text != NULL, "no memory for the text");
        same_message(d, text, strlen(text), j);
        free(text);
    }
    json_t *tree = json_loadb((const char *)in, n, 0, NULL);
    same_message(d, (const char *)in, n, tree);
    json_decref(tree);
    json_decref(j);
    json_decref(again);
    free(in);
    return 0;
}
