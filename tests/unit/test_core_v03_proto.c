/*
 * test_core_v03_proto.c -- A2A 0.3 HTTP+JSON (proto JSON) <-> 1.0
 * conversions (src/core/v03_proto.c): each kind of object both ways against
 * its expected form (the shapes @a2a-js/sdk's LegacyRestTransport writes
 * and reads), round trips that give back what went in, the one state
 * spelled differently (TASK_STATE_CANCELLED), push configs named by
 * resource name, send parameters (a configuration without blocking is
 * non-blocking, none at all blocking), members the proto lacks dropped on
 * the way out, input that is not what it claims passed through for the
 * 1.0 checks to refuse, and every failed allocation answered with NULL.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit/json_fixture.h"
#include "core/v03_proto.h"

/* A message as the SDK's Message.toJSON writes it, and its 1.0 form. */
#define MSGP                                                                                   \
    "{\"messageId\":\"m1\",\"role\":\"ROLE_USER\",\"contextId\":\"c1\",\"taskId\":\"t1\","      \
    "\"content\":[{\"text\":\"hi\"},"                                                          \
    "{\"file\":{\"fileWithBytes\":\"aGk=\",\"mimeType\":\"text/plain\"}},"                      \
    "{\"file\":{\"fileWithUri\":\"https://x/y\"}},"                                             \
    "{\"data\":{\"data\":{\"k\":1}}}],\"metadata\":{\"x\":1},\"extensions\":[\"urn:e\"]}"
#define MSG10                                                                                  \
    "{\"messageId\":\"m1\",\"role\":\"ROLE_USER\",\"contextId\":\"c1\",\"taskId\":\"t1\","      \
    "\"parts\":[{\"text\":\"hi\"},"                                                            \
    "{\"raw\":\"aGk=\",\"mediaType\":\"text/plain\"},"                                          \
    "{\"url\":\"https://x/y\"},"                                                                \
    "{\"data\":{\"k\":1}}],\"metadata\":{\"x\":1},\"extensions\":[\"urn:e\"]}"

static void test_message(void **state)
{
    (void)state;
    expect(once__v03_proto_message_in, MSGP, MSG10);
    expect(once__v03_proto_message_out, MSG10, MSGP);
    round_trip(once__v03_proto_message_in, once__v03_proto_message_out, MSGP);
    round_trip(once__v03_proto_message_out, once__v03_proto_message_in, MSG10);
    /* The agent's role; members 0.3's proto does not have are not sent
     * (a file's name, a part's metadata, referenceTaskIds). */
    expect(once__v03_proto_message_out,
           "{\"messageId\":\"a\",\"role\":\"ROLE_AGENT\",\"referenceTaskIds\":[\"t0\"],"
           "\"parts\":[{\"text\":\"x\",\"metadata\":{\"m\":1}},"
           "{\"url\":\"u\",\"filename\":\"f.txt\",\"mediaType\":\"text/plain\"}]}",
           "{\"messageId\":\"a\",\"role\":\"ROLE_AGENT\",\"content\":[{\"text\":\"x\"},"
           "{\"file\":{\"fileWithUri\":\"u\",\"mimeType\":\"text/plain\"}}]}");
}

static void test_message_passes_what_it_does_not_know(void **state)
{
    (void)state;
    /* Not an object; an unknown role; a part of no known kind; members the
     * proto does not name: all left for the 1.0 checks. */
    expect(once__v03_proto_message_in, "\"junk\"", "\"junk\"");
    expect(once__v03_proto_message_in, "{\"role\":\"ROLE_ROBOT\",\"content\":[{\"video\":1}]}",
           "{\"role\":\"ROLE_ROBOT\",\"parts\":[{\"video\":1}]}");
    expect(once__v03_proto_message_in, "{\"role\":\"ROLE_USER\",\"content\":[],\"extra\":true}",
           "{\"role\":\"ROLE_USER\",\"parts\":[],\"extra\":true}");
    /* A 1.0 message (parts) passes unchanged; both spellings: content stays. */
    expect(once__v03_proto_message_in, MSG10, MSG10);
    expect(once__v03_proto_message_in, "{\"parts\":[],\"content\":[{\"text\":\"a\"}]}",
           "{\"parts\":[],\"content\":[{\"kind\":\"text\",\"text\":\"a\"}]}");
    /* A data part without the inner data object is read as 1.0's. */
    expect(once__v03_proto_message_in, "{\"content\":[{\"data\":{\"k\":2}}]}",
           "{\"parts\":[{\"data\":{\"k\":2}}]}");
}

#define TASKP                                                                                  \
    "{\"id\":\"t1\",\"contextId\":\"c1\",\"status\":{\"state\":\"TASK_STATE_INPUT_REQUIRED\","  \
    "\"timestamp\":\"2026-12-05T00:00:00Z\",\"message\":{\"messageId\":\"a1\","                 \
    "\"role\":\"ROLE_AGENT\",\"content\":[{\"text\":\"which?\"}]}},"                             \
    "\"history\":[{\"messageId\":\"m1\",\"role\":\"ROLE_USER\",\"content\":[{\"text\":\"q\"}]}]," \
    "\"artifacts\":[{\"artifactId\":\"r\",\"name\":\"n\",\"parts\":[{\"text\":\"x\"}]}],"        \
    "\"metadata\":{\"urn:once:a2a:idempotency:v1\":{\"generation\":3}}}"
#define TASK10                                                                                 \
    "{\"id\":\"t1\",\"contextId\":\"c1\",\"status\":{\"state\":\"TASK_STATE_INPUT_REQUIRED\","  \
    "\"timestamp\":\"2026-12-05T00:00:00Z\",\"message\":{\"messageId\":\"a1\","                 \
    "\"role\":\"ROLE_AGENT\",\"parts\":[{\"text\":\"which?\"}]}},"                               \
    "\"history\":[{\"messageId\":\"m1\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"q\"}]}]," \
    "\"artifacts\":[{\"artifactId\":\"r\",\"name\":\"n\",\"parts\":[{\"text\":\"x\"}]}],"        \
    "\"metadata\":{\"urn:once:a2a:idempotency:v1\":{\"generation\":3}}}"

static void test_task_and_states(void **state)
{
    (void)state;
    expect(once__v03_proto_task_out, TASK10, TASKP);
    expect(once__v03_proto_task_in, TASKP, TASK10);
    round_trip(once__v03_proto_task_in, once__v03_proto_task_out, TASKP);
    /* Every state; canceled is spelled CANCELLED by 0.3's proto alone. */
    static const char *const pairs[][2] = {
        {"TASK_STATE_SUBMITTED", "TASK_STATE_SUBMITTED"},
        {"TASK_STATE_WORKING", "TASK_STATE_WORKING"},
        {"TASK_STATE_COMPLETED", "TASK_STATE_COMPLETED"},
        {"TASK_STATE_FAILED", "TASK_STATE_FAILED"},
        {"TASK_STATE_CANCELED", "TASK_STATE_CANCELLED"},
        {"TASK_STATE_INPUT_REQUIRED", "TASK_STATE_INPUT_REQUIRED"},
        {"TASK_STATE_REJECTED", "TASK_STATE_REJECTED"},
        {"TASK_STATE_AUTH_REQUIRED", "TASK_STATE_AUTH_REQUIRED"},
        {"TASK_STATE_UNSPECIFIED", "TASK_STATE_UNSPECIFIED"}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        char t10[160], tp[160];
        snprintf(t10, sizeof t10, "{\"id\":\"t\",\"status\":{\"state\":\"%s\"}}", pairs[i][0]);
        snprintf(tp, sizeof tp, "{\"id\":\"t\",\"status\":{\"state\":\"%s\"}}", pairs[i][1]);
        expect(once__v03_proto_task_out, t10, tp);
        expect(once__v03_proto_task_in, tp, t10);
    }
    /* 1.0's spelling is read too; an unknown state passes. */
    expect(once__v03_proto_task_in, "{\"status\":{\"state\":\"TASK_STATE_CANCELED\"}}",
           "{\"status\":{\"state\":\"TASK_STATE_CANCELED\"}}");
    expect(once__v03_proto_task_in, "{\"status\":{\"state\":\"TASK_STATE_NAPPING\"}}",
           "{\"status\":{\"state\":\"TASK_STATE_NAPPING\"}}");
}

static void test_data_not_an_object(void **state)
{
    (void)state;
    /* 0.3's DataPart holds an object: another value goes out wrapped as the
     * JSON-RPC form does; the proto's Part has no metadata for the marker,
     * so it comes back as the object it went out as. */
    expect(once__v03_proto_message_out, "{\"role\":\"ROLE_AGENT\",\"parts\":[{\"data\":[1,2]}]}",
           "{\"role\":\"ROLE_AGENT\",\"content\":[{\"data\":{\"data\":{\"value\":[1,2]}}}]}");
    expect(once__v03_proto_message_in,
           "{\"role\":\"ROLE_AGENT\",\"content\":[{\"data\":{\"data\":{\"value\":[1,2]}}}]}",
           "{\"role\":\"ROLE_AGENT\",\"parts\":[{\"data\":{\"value\":[1,2]}}]}");
}

static void test_events(void **state)
{
    (void)state;
    expect(once__v03_proto_event_out,
           "{\"statusUpdate\":{\"taskId\":\"t\",\"contextId\":\"c\","
           "\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}",
           "{\"statusUpdate\":{\"taskId\":\"t\",\"contextId\":\"c\","
           "\"status\":{\"state\":\"TASK_STATE_WORKING\"},\"final\":false}}");
    expect(once__v03_proto_event_out,
           "{\"statusUpdate\":{\"taskId\":\"t\",\"status\":{\"state\":\"TASK_STATE_CANCELED\"}}}",
           "{\"statusUpdate\":{\"taskId\":\"t\",\"status\":{\"state\":\"TASK_STATE_CANCELLED\"},"
           "\"final\":true}}");
    expect(once__v03_proto_event_out,
           "{\"artifactUpdate\":{\"taskId\":\"t\",\"append\":true,\"lastChunk\":false,"
           "\"artifact\":{\"artifactId\":\"a\",\"parts\":[{\"text\":\"c2\"}]}}}",
           "{\"artifactUpdate\":{\"taskId\":\"t\",\"append\":true,\"lastChunk\":false,"
           "\"artifact\":{\"artifactId\":\"a\",\"parts\":[{\"text\":\"c2\"}]}}}");
    expect(once__v03_proto_event_out, "{\"task\":" TASK10 "}", "{\"task\":" TASKP "}");
    expect(once__v03_proto_event_out, "{\"message\":" MSG10 "}", "{\"message\":" MSGP "}");
    /* in: the member names the kind; msg is the proto field's own name;
     * "final" is 0.3's alone */
    expect(once__v03_proto_event_in,
           "{\"statusUpdate\":{\"taskId\":\"t\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\"},"
           "\"final\":true}}",
           "{\"statusUpdate\":{\"taskId\":\"t\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\"}}}");
    expect(once__v03_proto_event_in, "{\"task\":" TASKP "}", "{\"task\":" TASK10 "}");
    expect(once__v03_proto_event_in, "{\"msg\":" MSGP "}", "{\"message\":" MSG10 "}");
    round_trip(once__v03_proto_event_in, once__v03_proto_event_out,
               "{\"artifactUpdate\":{\"taskId\":\"t\",\"contextId\":\"c\","
               "\"artifact\":{\"artifactId\":\"a\",\"parts\":[{\"data\":{\"data\":{}}}]}}}");
    round_trip(once__v03_proto_event_in, once__v03_proto_event_out, "{\"message\":" MSGP "}");
    expect(once__v03_proto_event_in, "{\"other\":{}}", "{\"other\":{}}");
}

static void test_push(void **state)
{
    (void)state;
    const char *pp = "{\"name\":\"tasks/t/pushNotificationConfigs/p\",\"pushNotificationConfig\":"
                     "{\"id\":\"p\",\"url\":\"https://h/x\",\"token\":\"k\",\"authentication\":"
                     "{\"schemes\":[\"Bearer\"],\"credentials\":\"s\"}}}";
    const char *p10 = "{\"taskId\":\"t\",\"id\":\"p\",\"url\":\"https://h/x\",\"token\":\"k\","
                      "\"authentication\":{\"scheme\":\"Bearer\",\"credentials\":\"s\"}}";
    expect(once__v03_proto_push_in, pp, p10);
    expect(once__v03_proto_push_out, p10, pp);
    round_trip(once__v03_proto_push_in, once__v03_proto_push_out, pp);
    /* The route's taskId beside a name that agrees; a config without an id
     * (the server mints one) named as the SDK names it. */
    expect(once__v03_proto_push_in,
           "{\"taskId\":\"t\",\"name\":\"tasks/t/pushNotificationConfigs/\","
           "\"pushNotificationConfig\":{\"url\":\"u\"}}",
           "{\"taskId\":\"t\",\"url\":\"u\"}");
    expect(once__v03_proto_push_in,
           "{\"taskId\":\"t\",\"pushNotificationConfig\":{\"url\":\"u\"}}",
           "{\"taskId\":\"t\",\"url\":\"u\"}");
    /* A name of another task, or of no task: kept for the 1.0 check. */
    expect(once__v03_proto_push_in,
           "{\"taskId\":\"t\",\"name\":\"tasks/u/pushNotificationConfigs/p\","
           "\"pushNotificationConfig\":{\"url\":\"u\"}}",
           "{\"taskId\":\"t\",\"name\":\"tasks/u/pushNotificationConfigs/p\",\"url\":\"u\"}");
    expect(once__v03_proto_push_in,
           "{\"name\":\"jobs/t\",\"pushNotificationConfig\":{\"url\":\"u\"}}",
           "{\"name\":\"jobs/t\",\"url\":\"u\"}");
    /* tenant is 1.0's alone */
    expect(once__v03_proto_push_out,
           "{\"taskId\":\"t\",\"id\":\"p\",\"url\":\"u\",\"tenant\":\"x\"}",
           "{\"name\":\"tasks/t/pushNotificationConfigs/p\","
           "\"pushNotificationConfig\":{\"id\":\"p\",\"url\":\"u\"}}");
}

static void test_push_list(void **state)
{
    (void)state;
    const char *l10 = "{\"configs\":[{\"taskId\":\"t\",\"id\":\"a\",\"url\":\"u\"},"
                      "{\"taskId\":\"t\",\"id\":\"b\",\"url\":\"v\",\"token\":\"k\"}],"
                      "\"nextPageToken\":\"\"}";
    const char *lp = "{\"configs\":[{\"name\":\"tasks/t/pushNotificationConfigs/a\","
                     "\"pushNotificationConfig\":{\"id\":\"a\",\"url\":\"u\"}},"
                     "{\"name\":\"tasks/t/pushNotificationConfigs/b\","
                     "\"pushNotificationConfig\":{\"id\":\"b\",\"url\":\"v\",\"token\":\"k\"}}],"
                     "\"nextPageToken\":\"\"}";
    expect(once__v03_proto_push_list_out, l10, lp);
    expect(once__v03_proto_push_list_in, lp, l10);
    round_trip(once__v03_proto_push_list_out, once__v03_proto_push_list_in, l10);
    expect(once__v03_proto_push_list_out, "{\"configs\":[]}", "{\"configs\":[]}");
}

static void test_send_params(void **state)
{
    (void)state;
    /* What LegacyRestTransport sends for a 1.0 request with
     * returnImmediately: true: a configuration without blocking. */
    expect(once__v03_proto_send_params_in,
           "{\"message\":{\"messageId\":\"m\",\"role\":\"ROLE_USER\","
           "\"content\":[{\"text\":\"x\"}]},"
           "\"configuration\":{\"historyLength\":2,\"acceptedOutputModes\":[\"text/plain\"],"
           "\"pushNotification\":{\"url\":\"https://h/x\","
           "\"token\":\"k\"}},\"metadata\":{\"a\":1}}",
           "{\"message\":{\"messageId\":\"m\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"x\"}]},"
           "\"configuration\":{\"returnImmediately\":true,\"historyLength\":2,"
           "\"acceptedOutputModes\":[\"text/plain\"],"
           "\"taskPushNotificationConfig\":{\"url\":\"https://h/x\",\"token\":\"k\"}},"
           "\"metadata\":{\"a\":1}}");
    expect(once__v03_proto_send_params_in, "{\"configuration\":{\"blocking\":true}}",
           "{\"configuration\":{\"returnImmediately\":false}}");
    /* No configuration: blocking, 1.0's default (nothing to say). */
    expect(once__v03_proto_send_params_in,
           "{\"request\":{\"messageId\":\"m\",\"role\":\"ROLE_USER\","
           "\"content\":[{\"text\":\"x\"}]}}",
           "{\"message\":{\"messageId\":\"m\",\"role\":\"ROLE_USER\","
           "\"parts\":[{\"text\":\"x\"}]}}");
    /* A blocking that is not a boolean is left for the 1.0 check. */
    expect(once__v03_proto_send_params_in, "{\"configuration\":{\"blocking\":\"yes\"}}",
           "{\"configuration\":{\"blocking\":\"yes\"}}");
    expect(once__v03_proto_send_params_in, "[1]", "[1]");
    expect(once__v03_proto_send_params_out,
           "{\"message\":{\"messageId\":\"m\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"x\"}]},"
           "\"configuration\":{\"returnImmediately\":true,"
           "\"taskPushNotificationConfig\":{\"url\":\"https://h/x\"}}}",
           "{\"message\":{\"messageId\":\"m\",\"role\":\"ROLE_USER\","
           "\"content\":[{\"text\":\"x\"}]},"
           "\"configuration\":{\"blocking\":false,\"pushNotification\":{\"url\":\"https://h/x\"}}}");
    round_trip(once__v03_proto_send_params_out, once__v03_proto_send_params_in,
               "{\"message\":{\"messageId\":\"m\",\"role\":\"ROLE_USER\","
               "\"parts\":[{\"text\":\"x\"}]},"
               "\"configuration\":{\"returnImmediately\":false,\"historyLength\":1}}");
}

/* Every allocation jansson makes fails in turn (the i-th, i = 1, 2, ...
 * until a run hits none): each run answers the whole result or NULL, never
 * a value with a member missing (valgrind: and leaks nothing). */
static long fail_at, allocs;

static void *failing_malloc(size_t n)
{
    return ++allocs == fail_at ? NULL : malloc(n);
}

static void sweep(json_t *(*fn)(const json_t *), const char *in, const char *want)
{
    json_t *i = j(in), *w = j(want);
    for (fail_at = 1;; fail_at++) {
        allocs = 0;
        json_set_alloc_funcs(failing_malloc, free);
        json_t *got = fn(i);
        json_set_alloc_funcs(malloc, free);
        if (got != NULL && !json_equal(got, w))
            fail_msg("failing allocation %ld of %s gave a partial result", fail_at, in);
        json_decref(got);
        if (allocs < fail_at)
            break;
    }
    assert_true(fail_at > 1);
    json_decref(i);
    json_decref(w);
}

static void test_out_of_memory(void **state)
{
    (void)state;
    sweep(once__v03_proto_message_in, MSGP, MSG10);
    sweep(once__v03_proto_message_out, MSG10, MSGP);
    sweep(once__v03_proto_task_out, TASK10, TASKP);
    sweep(once__v03_proto_task_in, TASKP, TASK10);
    sweep(once__v03_proto_event_out, "{\"task\":" TASK10 "}", "{\"task\":" TASKP "}");
    sweep(once__v03_proto_event_out,
          "{\"statusUpdate\":{\"taskId\":\"t\",\"status\":{\"state\":\"TASK_STATE_CANCELED\"}}}",
          "{\"statusUpdate\":{\"taskId\":\"t\",\"status\":{\"state\":\"TASK_STATE_CANCELLED\"},"
          "\"final\":true}}");
    sweep(once__v03_proto_push_in,
          "{\"name\":\"tasks/t/pushNotificationConfigs/p\",\"pushNotificationConfig\":"
          "{\"id\":\"p\",\"url\":\"u\",\"authentication\":{\"schemes\":[\"Bearer\"]}}}",
          "{\"taskId\":\"t\",\"id\":\"p\",\"url\":\"u\","
          "\"authentication\":{\"scheme\":\"Bearer\"}}");
    sweep(once__v03_proto_push_list_out,
          "{\"configs\":[{\"taskId\":\"t\",\"id\":\"a\",\"url\":\"u\"}]}",
          "{\"configs\":[{\"name\":\"tasks/t/pushNotificationConfigs/a\","
          "\"pushNotificationConfig\":{\"id\":\"a\",\"url\":\"u\"}}]}");
    sweep(once__v03_proto_send_params_in,
          "{\"message\":{\"messageId\":\"m\",\"role\":\"ROLE_USER\","
          "\"content\":[{\"text\":\"x\"}]},"
          "\"configuration\":{\"pushNotification\":{\"url\":\"u\"}}}",
          "{\"message\":{\"messageId\":\"m\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"x\"}]},"
          "\"configuration\":{\"returnImmediately\":true,\"taskPushNotificationConfig\":{\"url\":\"u\"}}}");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_message),
        cmocka_unit_test(test_message_passes_what_it_does_not_know),
        cmocka_unit_test(test_task_and_states),
        cmocka_unit_test(test_data_not_an_object),
        cmocka_unit_test(test_events),
        cmocka_unit_test(test_push),
        cmocka_unit_test(test_push_list),
        cmocka_unit_test(test_send_params),
        cmocka_unit_test(test_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
