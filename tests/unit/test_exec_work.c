/*
 * test_exec_work.c -- an executor written in C gets the same A2A 1.0 shape
 * rules as an --exec command (docs/protocol.md section 4): a malformed
 * message or artifact passed to once_work_status / once_work_reply /
 * once_work_artifact is refused with ONCE_EINVAL and leaves no trace (no
 * history entry, no artifact, no event), while every well-formed kind of
 * part goes through. Before this, the work context only checked for a
 * "parts" array, so an A2A 0.3 part ({"kind":"text",...}), a part with two
 * contents or none, or a user-role message reached every client.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/generation.h"
#include "engine/engine.h"
#include "once/executor.h"
#include "once/store.h"

enum { W_STATUS, W_REPLY, W_ARTIFACT, W_APPEND };

static const struct {
    int kind;
    const char *json;
} bad_writes[] = {
    {W_STATUS, "{\"parts\":[{\"kind\":\"text\",\"text\":\"A2A 0.3\"}]}"},
    {W_STATUS, "{\"parts\":[{\"text\":\"two\",\"url\":\"https://x\"}]}"},
    {W_STATUS, "{\"parts\":[{\"metadata\":{}}]}"},
    {W_STATUS, "{\"parts\":[{\"text\":5}]}"},
    {W_STATUS, "{\"parts\":[]}"},
    {W_STATUS, "{\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"not mine\"}]}"},
    {W_STATUS, "{\"parts\":[{\"raw\":\"not base64!\"}]}"},
    {W_STATUS, "{\"parts\":[{\"text\":\"x\"}],\"final\":true}"},
    {W_REPLY, "{\"parts\":[{\"text\":\"x\",\"kind\":\"text\"}]}"},
    {W_ARTIFACT, "{\"parts\":[{\"file\":{\"uri\":\"https://x\"}}]}"},
    {W_ARTIFACT, "{\"artifactId\":\"\",\"parts\":[{\"text\":\"x\"}]}"},
    {W_ARTIFACT, "{\"artifactId\":\"a\",\"index\":0,\"parts\":[{\"text\":\"x\"}]}"},
    {W_ARTIFACT, "{\"artifactId\":\"a\",\"parts\":[{\"data\":1,\"filename\":7}]}"},
    {W_APPEND, "{\"parts\":[{\"text\":\"append to what?\"}]}"},
};
#define NBAD (sizeof bad_writes / sizeof bad_writes[0])

static const char good_status[] =
    "{\"parts\":[{\"text\":\"ok\"},{\"data\":{\"a\":[1,2]},\"mediaType\":\"application/json\"}],"
    "\"metadata\":{\"m\":1}}";
static const char good_artifact[] =
    "{\"artifactId\":\"a\",\"name\":\"n\",\"description\":\"d\",\"metadata\":{\"k\":\"v\"},"
    "\"parts\":[{\"raw\":\"AAE=\",\"filename\":\"f.bin\",\"mediaType\":\"application/octet-stream\"},"
    "{\"url\":\"https://example.com/f\"},{\"text\":\"t\",\"metadata\":{}}]}";

/* Written by the worker before it completes the task; read by the test
 * after the blocking send saw the completion. */
static int bad_rc[NBAD];
static int good_rc[2];

static int shapes_run(const once_executor *ex, once_work *w)
{
    (void)ex;
    for (size_t i = 0; i < NBAD; i++) {
        const char *j = bad_writes[i].json;
        switch (bad_writes[i].kind) {
        case W_STATUS:
            bad_rc[i] = once_work_status(w, ONCE_STATE_WORKING, j);
            break;
        case W_REPLY:
            bad_rc[i] = once_work_reply(w, j);
            break;
        case W_ARTIFACT:
            bad_rc[i] = once_work_artifact(w, j, 0, 1);
            break;
        default:
            bad_rc[i] = once_work_artifact(w, j, 1, 1);
            break;
        }
    }
    good_rc[0] = once_work_status(w, ONCE_STATE_WORKING, good_status);
    good_rc[1] = once_work_artifact(w, good_artifact, 0, 1);
    return once_work_complete(w);
}

static void refused_writes_leave_no_trace(void **state)
{
    (void)state;
    static const once_executor ex = {.name = "shapes", .run = shapes_run};
    once_store *store;
    once__engine *e;
    once__engine_config cfg;
    char err[256];

    assert_int_equal(once_store_open("memory:", NULL, &store, err, sizeof err), ONCE_OK);
    memset(&cfg, 0, sizeof cfg);
    cfg.store = store;
    cfg.executor = &ex;
    cfg.replica_id = "test";
    cfg.workers = 1;
    cfg.max_wait_ms = 10000;
    assert_int_equal(once__engine_new(&cfg, &e, err, sizeof err), ONCE_OK);
    assert_int_equal(once__engine_start(e), ONCE_OK);

    json_t *m = json_pack("{s:s, s:s, s:[{s:s}]}", "messageId", "m-1", "role", "ROLE_USER",
                          "parts", "text", "go");
    once_send_req req;
    once_send_res res;
    memset(&req, 0, sizeof req);
    memset(&res, 0, sizeof res);
    req.principal = "bob";
    req.message = m;
    req.history_length = -1;
    assert_int_equal(once__engine_send(e, &req, &res), ONCE_OK);

    for (size_t i = 0; i < NBAD; i++) {
        if (bad_rc[i] != ONCE_EINVAL)
            fail_msg("write %zu (%s) returned %d, want ONCE_EINVAL", i, bad_writes[i].json,
                     bad_rc[i]);
    }
    assert_int_equal(good_rc[0], ONCE_OK);
    assert_int_equal(good_rc[1], ONCE_OK);

    /* The task holds the user message, the one good status message, the one
     * good artifact: register, working, status, artifact, completed. */
    json_t *task = json_object_get(res.result, "task");
    assert_non_null(task);
    assert_string_equal(json_string_value(json_object_get(json_object_get(task, "status"),
                                                          "state")),
                        "TASK_STATE_COMPLETED");
    assert_int_equal(once__generation_of(task), 5);
    json_t *hist = json_object_get(task, "history");
    assert_int_equal(json_array_size(hist), 2);
    json_t *parts = json_object_get(json_array_get(hist, 1), "parts");
    json_t *want_parts = json_loads("[{\"text\":\"ok\"},{\"data\":{\"a\":[1,2]},"
                                    "\"mediaType\":\"application/json\"}]",
                                    0, NULL);
    assert_true(json_equal(parts, want_parts));
    json_t *arts = json_object_get(task, "artifacts");
    json_t *want_art = json_loads(good_artifact, 0, NULL);
    assert_int_equal(json_array_size(arts), 1);
    assert_true(json_equal(json_array_get(arts, 0), want_art));

    json_decref(want_parts);
    json_decref(want_art);
    json_decref(res.result);
    json_decref(m);
    once__engine_free(e);
    once_store_close(store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(refused_writes_leave_no_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
