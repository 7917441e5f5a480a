/*
 * test_engine_share.c -- a task tree shares the messages and artifacts put
 * into it instead of copying them (src/engine/taskjson.c):
 *   - a new task's history entry, a status message (in the status and the
 *     history) and an artifact are the very values handed in, and putting
 *     a 60-part artifact in costs no allocation per part;
 *   - appending to an artifact leaves the artifact it appends to as it
 *     was (an earlier write of a batch keeps it, to apply it again after a
 *     conflict), and the task reads as the parts of both;
 *   - the task is written with the same bytes either way.
 */
#include "engine/engine_int.h"
#include "unit/engine_fixture.h"
#include "unit/count_alloc.h"

#define NOW 1700000000000LL

static json_t *artifact(const char *id, int nparts, const char *word)
{
    json_t *parts = json_array();
    for (int i = 0; i < nparts; i++)
        assert_int_equal(json_array_append_new(parts, json_pack("{s:s}", "text", word)), 0);
    json_t *a = json_pack("{s:s, s:o}", "artifactId", id, "parts", parts);
    assert_non_null(a);
    return a;
}

static void task_holds_the_values_handed_in(void **state)
{
    (void)state;
    json_t *msg = fx_msg("m-1", "hello", "t-1", "c-1");
    json_t *task = once__task_new("t-1", "c-1", ONCE_STATE_SUBMITTED, NOW, msg);
    assert_non_null(task);
    json_t *hist = json_object_get(task, "history");
    assert_ptr_equal(json_array_get(hist, 0), msg);

    json_t *agent = once__agent_text("working on it", "t-1", "c-1", NULL);
    assert_int_equal(once__task_set_status(task, ONCE_STATE_WORKING, agent, NOW), ONCE_OK);
    assert_ptr_equal(json_object_get(json_object_get(task, "status"), "message"), agent);
    assert_ptr_equal(json_array_get(hist, 1), agent);

    json_t *big = artifact("a", 60, "part");
    once_set_allocator(&counting_allocator);
    counted = 0;
    counting = 1;
    int rc = once__task_artifact(task, big, 0);
    counting = 0;
    once_set_allocator(NULL);
    assert_int_equal(rc, ONCE_OK);
    assert_ptr_equal(json_array_get(json_object_get(task, "artifacts"), 0), big);
    assert_true(counted <= 4);   /* the artifacts array; a copy made 120 and more */

    /* Replaced, not appended: the new value takes the old one's place. */
    json_t *again = artifact("a", 1, "new");
    assert_int_equal(once__task_artifact(task, again, 0), ONCE_OK);
    assert_int_equal(json_array_size(json_object_get(task, "artifacts")), 1);
    assert_ptr_equal(json_array_get(json_object_get(task, "artifacts"), 0), again);
    assert_int_equal(json_array_size(json_object_get(big, "parts")), 60);

    json_decref(again);
    json_decref(big);
    json_decref(agent);
    json_decref(msg);
    json_decref(task);
}

static void append_leaves_the_earlier_artifact(void **state)
{
    (void)state;
    json_t *task = once__json_parse("{\"id\":\"t-2\",\"contextId\":\"c-2\",\"history\":[]}");
    json_t *first = artifact("a", 2, "one");
    json_t *more = artifact("a", 1, "two");
    char *before = once__json_text(first);
    assert_int_equal(once__task_artifact(task, first, 0), ONCE_OK);
    assert_int_equal(once__task_artifact(task, more, 1), ONCE_OK);

    /* The values handed in are as they were. */
    char *after = once__json_text(first);
    assert_string_equal(after, before);
    assert_int_equal(json_array_size(json_object_get(more, "parts")), 1);

    /* The task holds one artifact with the three parts, in order. */
    char *text = once__json_text(task);
    assert_string_equal(text, "{\"id\":\"t-2\",\"contextId\":\"c-2\",\"history\":[],\"artifacts\":"
                              "[{\"artifactId\":\"a\",\"parts\":[{\"text\":\"one\"},{\"text\":"
                              "\"one\"},{\"text\":\"two\"}]}]}");

    /* A second append (the next chunk) extends the task's artifact, again
     * leaving what the first append put there to the first append. */
    json_t *held = json_incref(json_array_get(json_object_get(task, "artifacts"), 0));
    assert_int_equal(once__task_artifact(task, more, 1), ONCE_OK);
    assert_int_equal(json_array_size(json_object_get(held, "parts")), 3);
    json_t *now = json_array_get(json_object_get(task, "artifacts"), 0);
    assert_int_equal(json_array_size(json_object_get(now, "parts")), 4);
    assert_string_equal(json_string_value(json_object_get(now, "artifactId")), "a");

    json_decref(held);
    once_free(text);
    once_free(after);
    once_free(before);
    json_decref(more);
    json_decref(first);
    json_decref(task);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(task_holds_the_values_handed_in),
        cmocka_unit_test(append_leaves_the_earlier_artifact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
