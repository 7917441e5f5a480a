/*
 * test_core_v03.c -- A2A 0.3 <-> 1.0 conversions (src/core/v03.c): each
 * kind of object both ways against its expected form, round trips that
 * give back what went in, what 0.3 cannot carry (a non-object data value)
 * wrapped and unwrapped, the "final" flag of status updates, push configs
 * and send parameters (blocking absent = blocking), and input that is not
 * what it claims passed through for the 1.0 checks to refuse.
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
#include "core/v03.h"

#define MSG03                                                                                  \
    "{\"kind\":\"message\",\"messageId\":\"m1\",\"role\":\"user\",\"contextId\":\"c1\","       \
    "\"parts\":[{\"kind\":\"text\",\"text\":\"hi\"},"                                          \
    "{\"kind\":\"file\",\"file\":{\"bytes\":\"aGk=\",\"name\":\"a.txt\",\"mimeType\":\"text/plain\"}}," \
    "{\"kind\":\"file\",\"file\":{\"uri\":\"https://x/y\"}},"                                   \
    "{\"kind\":\"data\",\"data\":{\"k\":1},\"metadata\":{\"m\":2}}],\"metadata\":{\"x\":1}}"
#define MSG10                                                                                  \
    "{\"messageId\":\"m1\",\"role\":\"ROLE_USER\",\"contextId\":\"c1\","                       \
    "\"parts\":[{\"text\":\"hi\"},"                                                            \
    "{\"raw\":\"aGk=\",\"filename\":\"a.txt\",\"mediaType\":\"text/plain\"},"                  \
    "{\"url\":\"https://x/y\"},"                                                                \
    "{\"data\":{\"k\":1},\"metadata\":{\"m\":2}}],\"metadata\":{\"x\":1}}"

static void test_message(void **state)
{
    (void)state;
    expect(once__v03_message_in, MSG03, MSG10);
    expect(once__v03_message_out, MSG10, MSG03);
    round_trip(once__v03_message_in, once__v03_message_out, MSG03);
    /* A 1.0 message passes through the inbound conversion unchanged. */
    expect(once__v03_message_in, MSG10, MSG10);
    /* Not an object, a part of an unknown kind: left for the 1.0 checks. */
    expect(once__v03_message_in, "\"junk\"", "\"junk\"");
    expect(once__v03_message_in, "{\"role\":\"user\",\"parts\":[{\"kind\":\"video\",\"v\":1}]}",
           "{\"role\":\"ROLE_USER\",\"parts\":[{\"kind\":\"video\",\"v\":1}]}");
    expect(once__v03_message_in, "{\"role\":\"robot\",\"parts\":[]}",
           "{\"role\":\"robot\",\"parts\":[]}");
}

static void test_data_not_an_object(void **state)
{
    (void)state;
    /* 0.3 data is an object: a list goes out wrapped, flagged, and comes
     * back as it was (the flag gone, other metadata kept). */
    expect(once__v03_message_out, "{\"role\":\"ROLE_AGENT\",\"parts\":[{\"data\":[1,2]}]}",
           "{\"kind\":\"message\",\"role\":\"agent\",\"parts\":[{\"kind\":\"data\","
           "\"data\":{\"value\":[1,2]},\"metadata\":{\"data_part_compat\":true}}]}");
    round_trip(once__v03_message_out, once__v03_message_in,
               "{\"role\":\"ROLE_AGENT\",\"parts\":[{\"data\":\"s\",\"metadata\":{\"a\":1}}]}");
    round_trip(once__v03_message_out, once__v03_message_in,
               "{\"role\":\"ROLE_AGENT\",\"parts\":[{\"data\":null}]}");
}

#define TASK10                                                                                 \
    "{\"id\":\"t1\",\"contextId\":\"c1\",\"status\":{\"state\":\"TASK_STATE_INPUT_REQUIRED\","  \
    "\"timestamp\":\"2026-12-05T00:00:00Z\",\"message\":{\"messageId\":\"a1\","                 \
    "\"role\":\"ROLE_AGENT\",\"parts\":[{\"text\":\"which?\"}]}},"                               \
    "\"history\":[{\"messageId\":\"m1\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"q\"}]}]," \
    "\"artifacts\":[{\"artifactId\":\"r\",\"parts\":[{\"text\":\"x\"}]}],\"metadata\":{}}"
#define TASK03                                                                                 \
    "{\"kind\":\"task\",\"id\":\"t1\",\"contextId\":\"c1\",\"status\":{\"state\":\"input-required\"," \
    "\"timestamp\":\"2026-12-05T00:00:00Z\",\"message\":{\"kind\":\"message\",\"messageId\":\"a1\"," \
    "\"role\":\"agent\",\"parts\":[{\"kind\":\"text\",\"text\":\"which?\"}]}},"                 \
    "\"history\":[{\"kind\":\"message\",\"messageId\":\"m1\",\"role\":\"user\","               \
    "\"parts\":[{\"kind\":\"text\",\"text\":\"q\"}]}],"                                          \
    "\"artifacts\":[{\"artifactId\":\"r\",\"parts\":[{\"kind\":\"text\",\"text\":\"x\"}]}],\"metadata\":{}}"

static void test_task_and_states(void **state)
{
    (void)state;
    expect(once__v03_task_out, TASK10, TASK03);
    expect(once__v03_task_in, TASK03, TASK10);
    static const char *const pairs[][2] = {
        {"TASK_STATE_SUBMITTED", "submitted"}, {"TASK_STATE_WORKING", "working"},
        {"TASK_STATE_COMPLETED", "completed"}, {"TASK_STATE_FAILED", "failed"},
        {"TASK_STATE_CANCELED", "canceled"}, {"TASK_STATE_INPUT_REQUIRED", "input-required"},
        {"TASK_STATE_REJECTED", "rejected"}, {"TASK_STATE_AUTH_REQUIRED", "auth-required"}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        assert_string_equal(once__v03_state(pairs[i][0]), pairs[i][1]);
        assert_string_equal(once__v03_state_in(pairs[i][1]), pairs[i][0]);
    }
    assert_string_equal(once__v03_state("NOPE"), "unknown");
    assert_null(once__v03_state_in("NOPE"));
}

static void test_events(void **state)
{
    (void)state;
    expect(once__v03_event_out,
           "{\"statusUpdate\":{\"taskId\":\"t\",\"contextId\":\"c\","
           "\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}",
           "{\"kind\":\"status-update\",\"taskId\":\"t\",\"contextId\":\"c\","
           "\"status\":{\"state\":\"working\"},\"final\":false}");
    expect(once__v03_event_out,
           "{\"statusUpdate\":{\"taskId\":\"t\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\"}}}",
           "{\"kind\":\"status-update\",\"taskId\":\"t\",\"status\":{\"state\":\"completed\"},"
           "\"final\":true}");
    expect(once__v03_event_out,
           "{\"statusUpdate\":{\"taskId\":\"t\",\"status\":{\"state\":\"TASK_STATE_AUTH_REQUIRED\"}}}",
           "{\"kind\":\"status-update\",\"taskId\":\"t\",\"status\":{\"state\":\"auth-required\"},"
           "\"final\":true}");
    expect(once__v03_event_out,
           "{\"artifactUpdate\":{\"taskId\":\"t\",\"append\":true,\"lastChunk\":false,"
           "\"artifact\":{\"artifactId\":\"a\",\"parts\":[{\"text\":\"c2\"}]}}}",
           "{\"kind\":\"artifact-update\",\"taskId\":\"t\",\"append\":true,\"lastChunk\":false,"
           "\"artifact\":{\"artifactId\":\"a\",\"parts\":[{\"kind\":\"text\",\"text\":\"c2\"}]}}");
    expect(once__v03_event_out, "{\"task\":" TASK10 "}", TASK03);
    expect(once__v03_event_out, "{\"message\":" MSG10 "}", MSG03);
    /* in: the kind names the member; "final" is 0.3's alone */
    expect(once__v03_event_in,
           "{\"kind\":\"status-update\",\"taskId\":\"t\",\"status\":{\"state\":\"completed\"},"
           "\"final\":true}",
           "{\"statusUpdate\":{\"taskId\":\"t\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\"}}}");
    expect(once__v03_event_in, TASK03, "{\"task\":" TASK10 "}");
    expect(once__v03_event_in, MSG03, "{\"message\":" MSG10 "}");
    round_trip(once__v03_event_in, once__v03_event_out,
               "{\"kind\":\"artifact-update\",\"taskId\":\"t\",\"contextId\":\"c\","
               "\"artifact\":{\"artifactId\":\"a\",\"parts\":[{\"kind\":\"data\",\"data\":{}}]}}");
    expect(once__v03_event_in, "{\"kind\":\"other\"}", "{\"kind\":\"other\"}");
}

static void test_push(void **state)
{
    (void)state;
    const char *p03 = "{\"taskId\":\"t\",\"pushNotificationConfig\":{\"id\":\"p\","
                      "\"url\":\"https://h/x\",\"token\":\"k\",\"authentication\":"
                      "{\"schemes\":[\"Bearer\"],\"credentials\":\"s\"}}}";
    const char *p10 = "{\"taskId\":\"t\",\"id\":\"p\",\"url\":\"https://h/x\",\"token\":\"k\","
                      "\"authentication\":{\"scheme\":\"Bearer\",\"credentials\":\"s\"}}";
    expect(once__v03_push_in, p03, p10);
    expect(once__v03_push_out, p10, p03);
    /* tenant is 1.0's alone */
    expect(once__v03_push_out, "{\"taskId\":\"t\",\"id\":\"p\",\"url\":\"u\",\"tenant\":\"x\"}",
           "{\"taskId\":\"t\",\"pushNotificationConfig\":{\"id\":\"p\",\"url\":\"u\"}}");
    expect(once__v03_push_in, "{\"taskId\":\"t\"}", "{\"taskId\":\"t\"}");
}

static void test_send_params(void **state)
{
    (void)state;
    expect(once__v03_send_params_in,
           "{\"message\":{\"kind\":\"message\",\"messageId\":\"m\",\"role\":\"user\","
           "\"parts\":[{\"kind\":\"text\",\"text\":\"x\"}]},\"configuration\":{\"blocking\":false,"
           "\"historyLength\":2,\"acceptedOutputModes\":[\"text/plain\"],"
           "\"pushNotificationConfig\":{\"url\":\"https://h/x\",\"token\":\"k\"}},\"metadata\":{\"a\":1}}",
           "{\"message\":{\"messageId\":\"m\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"x\"}]},"
           "\"configuration\":{\"returnImmediately\":true,\"historyLength\":2,"
           "\"acceptedOutputModes\":[\"text/plain\"],"
           "\"taskPushNotificationConfig\":{\"url\":\"https://h/x\",\"token\":\"k\"}},"
           "\"metadata\":{\"a\":1}}");
    /* blocking absent: blocking (nothing to say in 1.0) */
    expect(once__v03_send_params_in, "{\"configuration\":{\"historyLength\":1}}",
           "{\"configuration\":{\"historyLength\":1}}");
    expect(once__v03_send_params_in, "{\"configuration\":{\"blocking\":true}}",
           "{\"configuration\":{\"returnImmediately\":false}}");
    expect(once__v03_send_params_out,
           "{\"message\":{\"messageId\":\"m\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"x\"}]},"
           "\"configuration\":{\"returnImmediately\":true,"
           "\"taskPushNotificationConfig\":{\"url\":\"https://h/x\"}}}",
           "{\"message\":{\"kind\":\"message\",\"messageId\":\"m\",\"role\":\"user\","
           "\"parts\":[{\"kind\":\"text\",\"text\":\"x\"}]},"
           "\"configuration\":{\"blocking\":false,\"pushNotificationConfig\":{\"url\":\"https://h/x\"}}}");
    expect(once__v03_send_params_out, "{\"configuration\":{}}",
           "{\"configuration\":{\"blocking\":true}}");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_message),
        cmocka_unit_test(test_data_not_an_object),
        cmocka_unit_test(test_task_and_states),
        cmocka_unit_test(test_events),
        cmocka_unit_test(test_push),
        cmocka_unit_test(test_send_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
