/*
 * test_engine_answer.c -- a SendMessage answer asked for as text is spliced
 * from the stored task text (src/engine/taskjson.c, once__send_answer_of):
 *   - the bytes are those the tree answer is written as, for a task, a
 *     direct Message and an empty task object;
 *   - a task with metadata of its own, or a trimmed history, is answered
 *     from the tree;
 *   - splicing does not parse: the answer for a task with a 60-part
 *     artifact costs one allocation, where parsing costs hundreds;
 *   - the registration's task event is spliced the same way, and status
 *     and artifact update events are written without building their
 *     objects, all with the bytes the objects are written as, in one
 *     allocation;
 *   - the engine answers a blocking send and a replay with text when asked.
 */
#include "engine/engine_int.h"
#include "unit/engine_fixture.h"
#include "unit/count_alloc.h"

/* A record holding `json` as `kind`, at generation 7, in the form the
 * engine stores it: as the JSON writer writes it. */
static void record_of(once_record *r, const char *json, once_record_kind kind)
{
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->generation = 7;
    json_t *tree = once__json_parse(json);
    assert_non_null(tree);
    r->task_json = once__json_text(tree);
    json_decref(tree);
    assert_non_null(r->task_json);
}

/* The text answer for r equals the written tree answer. */
static void assert_same_bytes(const once_record *r)
{
    once_send_res res;
    memset(&res, 0, sizeof res);
    res.text_result = 1;
    assert_int_equal(once__send_answer_of(r, -1, &res), ONCE_OK);
    assert_non_null(res.result_text);
    assert_null(res.result);
    json_t *tree = once__send_result(r, -1);
    assert_non_null(tree);
    char *want = once__json_text(tree);
    assert_string_equal(res.result_text, want);
    once_free(want);
    json_decref(tree);
    once_free(res.result_text);
}

static void text_is_the_tree_written(void **state)
{
    (void)state;
    once_record r;
    record_of(&r,
              "{\"id\":\"t-1\",\"contextId\":\"c\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\","
              "\"timestamp\":\"2026-12-03T12:00:00.000Z\"},\"history\":[{\"messageId\":\"m\","
              "\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"h\\u00e9 \\\"q\\\" \\\\ /\"}]}],"
              "\"artifacts\":[{\"artifactId\":\"a\",\"parts\":[{\"data\":{\"n\":1.5,\"k\":[true,"
              "null,-3]}}]}]}",
              ONCE_KIND_TASK);
    assert_same_bytes(&r);
    once_record_clear(&r);
    record_of(&r, "{\"messageId\":\"m\",\"role\":\"ROLE_AGENT\",\"parts\":[{\"text\":\"hi\"}]}",
              ONCE_KIND_MESSAGE);
    assert_same_bytes(&r);
    once_record_clear(&r);
    record_of(&r, "{}", ONCE_KIND_TASK);
    assert_same_bytes(&r);
    once_record_clear(&r);
}

static void tree_where_text_cannot_serve(void **state)
{
    (void)state;
    once_record r;
    record_of(&r, "{\"id\":\"t-2\",\"metadata\":{\"k\":\"v\"},\"history\":[]}", ONCE_KIND_TASK);
    once_send_res res;
    memset(&res, 0, sizeof res);
    res.text_result = 1;
    assert_int_equal(once__send_answer_of(&r, -1, &res), ONCE_OK);
    assert_null(res.result_text);
    json_t *meta = json_object_get(json_object_get(res.result, "task"), "metadata");
    assert_string_equal(json_string_value(json_object_get(meta, "k")), "v");
    assert_int_equal(once__generation_of(json_object_get(res.result, "task")), 7);
    json_decref(res.result);
    res.result = NULL;
    /* A trimmed history is trimmed in the tree. */
    assert_int_equal(once__send_answer_of(&r, 0, &res), ONCE_OK);
    assert_null(res.result_text);
    assert_null(json_object_get(json_object_get(res.result, "task"), "history"));
    json_decref(res.result);
    once_record_clear(&r);
}

static void text_does_not_parse(void **state)
{
    (void)state;
    char task[8192];
    size_t len = (size_t)snprintf(task, sizeof task,
                                  "{\"id\":\"t-3\",\"artifacts\":[{\"artifactId\":\"big\",\"parts\":[");
    for (int i = 0; i < 60; i++)
        len += (size_t)snprintf(task + len, sizeof task - len, "%s{\"text\":\"part %d\"}",
                                i ? "," : "", i);
    snprintf(task + len, sizeof task - len, "]}]}");
    once_record r;
    record_of(&r, task, ONCE_KIND_TASK);
    once_set_allocator(&counting_allocator);
    once_send_res res;
    memset(&res, 0, sizeof res);
    res.text_result = 1;
    counted = 0;
    counting = 1;
    assert_int_equal(once__send_answer_of(&r, -1, &res), ONCE_OK);
    counting = 0;
    once_set_allocator(NULL);
    assert_non_null(res.result_text);
    assert_int_equal(counted, 1);
    once_free(res.result_text);
    once_record_clear(&r);
}

static void task_event_is_the_tree_event(void **state)
{
    (void)state;
    json_t *msg = fx_msg("m-5", "hello", "t-5", "c-5");
    json_t *task = once__task_new("t-5", "c-5", ONCE_STATE_SUBMITTED, 1700000000000LL, msg);
    assert_non_null(task);
    char *text = once__json_text(task);
    char *spliced = once__ev_task_text(text, 1);
    char *want = once__ev_task(task, 1);
    assert_non_null(spliced);
    assert_string_equal(spliced, want);
    once_free(spliced);
    once_free(want);
    once_free(text);
    /* Metadata of its own: the event is built from the tree. */
    assert_int_equal(json_object_set_new(task, "metadata", json_pack("{s:s}", "k", "v")), 0);
    text = once__json_text(task);
    assert_null(once__ev_task_text(text, 1));
    once_free(text);
    json_decref(task);
    json_decref(msg);
}

/* The event as the object was built before: packed, stamped, written. */
static char *event_oracle(const char *kind, json_t *body)
{
    assert_int_equal(once__generation_stamp(body, 9), ONCE_OK);
    json_t *ev = json_pack("{s:o}", kind, body);
    char *text = once__json_text(ev);
    json_decref(ev);
    return text;
}

static void update_events_are_the_tree_events(void **state)
{
    (void)state;
    static const char *const ids[] = {"t-6", "t 6/\u00e9"};   /* plain, and not */
    for (size_t i = 0; i < 2; i++) {
        json_t *task = once__json_parse("{\"id\":\"x\",\"contextId\":\"c-6\"}");
        json_t *id = json_string(ids[i]);
        assert_int_equal(json_object_set_new(task, "id", id), 0);
        json_t *agent = once__agent_text("h\u00e9 \"q\" \\ /", ids[i], "c-6", NULL);
        assert_int_equal(once__task_set_status(task, ONCE_STATE_WORKING, agent, 1700000000000LL),
                         ONCE_OK);
        char *got = once__ev_status(task, 9);
        char *want = event_oracle("statusUpdate",
                                  json_pack("{s:O, s:O, s:O}", "taskId", id, "contextId",
                                            json_object_get(task, "contextId"), "status",
                                            json_object_get(task, "status")));
        assert_string_equal(got, want);
        once_free(got);
        once_free(want);
        json_t *art = once__json_parse("{\"artifactId\":\"a\",\"parts\":[{\"data\":{\"n\":1.5}}]}");
        for (int flags = 0; flags < 4; flags++) {
            int append = flags & 1, last = flags >> 1;
            got = once__ev_artifact(task, art, append, last, 9);
            want = event_oracle("artifactUpdate",
                                json_pack("{s:O, s:O, s:O, s:b, s:b}", "taskId", id, "contextId",
                                          json_object_get(task, "contextId"), "artifact", art,
                                          "append", append, "lastChunk", last));
            assert_string_equal(got, want);
            once_free(got);
            once_free(want);
        }
        json_decref(art);
        json_decref(agent);
        json_decref(task);
    }
}

/* An update event is one allocation: the value is written straight into
 * the event's text, not into a text of its own that is then copied. */
static void update_event_allocates_once(void **state)
{
    (void)state;
    json_t *task = once__json_parse("{\"id\":\"t-7\",\"contextId\":\"c-7\"}");
    json_t *agent = once__agent_text("done", "t-7", "c-7", NULL);
    assert_int_equal(once__task_set_status(task, ONCE_STATE_COMPLETED, agent, 1700000000000LL),
                     ONCE_OK);
    once_set_allocator(&counting_allocator);
    counted = 0;
    counting = 1;
    char *text = once__ev_status(task, 3);
    counting = 0;
    once_set_allocator(NULL);
    assert_non_null(text);
    assert_non_null(strstr(text, "\"generation\":3}}}}"));
    assert_int_equal(counted, 1);
    once_free(text);
    json_decref(agent);
    json_decref(task);
}

/* once__plain_id holds for exactly the ID characters, byte by byte. */
static void plain_id_characters(void **state)
{
    (void)state;
    assert_false(once__plain_id(NULL));
    assert_false(once__plain_id(""));
    for (int c = 1; c < 256; c++) {
        char s[4] = {'a', (char)c, 'b', '\0'};
        int want = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '.' || c == '_' || c == ':' || c == '-';
        assert_int_equal(once__plain_id(s), want);
    }
}

static void engine_answers_with_text(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    json_t *m = fx_msg("m-4", "hello", "t-4", NULL);
    once_send_req req;
    memset(&req, 0, sizeof req);
    req.principal = "alice";
    req.message = m;
    req.task_id = "t-4";
    req.extension = 1;
    req.history_length = -1;
    req.text_result = 1;
    for (int round = 0; round < 2; round++) {   /* the new task, then its replay */
        once_send_res res;
        assert_int_equal(once__engine_send(env.e, &req, &res), ONCE_OK);
        assert_int_equal(res.verdict, round == 0 ? ONCE_V_REGISTER : ONCE_V_REPLAY);
        assert_int_equal(res.state, ONCE_STATE_COMPLETED);
        assert_null(res.result);
        assert_non_null(res.result_text);
        json_t *doc = NULL;
        assert_int_equal(once__json_object(res.result_text, &doc), ONCE_OK);
        json_t *task = json_object_get(doc, "task");
        assert_string_equal(json_string_value(json_object_get(task, "id")), "t-4");
        assert_true(once__generation_of(task) >= 3);
        json_decref(doc);
        once_free(res.result_text);
    }
    json_decref(m);
    fx_env_close(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(text_is_the_tree_written),
        cmocka_unit_test(tree_where_text_cannot_serve),
        cmocka_unit_test(text_does_not_parse),
        cmocka_unit_test(task_event_is_the_tree_event),
        cmocka_unit_test(update_events_are_the_tree_events),
        cmocka_unit_test(update_event_allocates_once),
        cmocka_unit_test(plain_id_characters),
        cmocka_unit_test(engine_answers_with_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
