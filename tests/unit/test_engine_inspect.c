/*
 * test_engine_inspect.c -- the inspector's timeline (engine/inspect.c) over
 * records written straight into a memory store: the bounds (the newest
 * ONCE_INSPECT_MAX_EVENTS events, the newest ONCE_INSPECT_MAX_KEYS keys,
 * texts cut on a UTF-8 boundary), times taken from the event before when an
 * event has none, entries sorted by time, another principal's task and a
 * tombstone; the user's message of a continuation, the artifacts and
 * one part for a download.
 */
#include "engine_fixture.h"
#include "engine/inspect.h"

#define T0 1700000000000LL
#define NEV 600

/* "é" (two bytes) n times, as JSON text. */
static char *accents(size_t n)
{
    char *s = malloc(2 * n + 1);
    for (size_t i = 0; i < n; i++)
        memcpy(s + 2 * i, "\xc3\xa9", 2);
    s[2 * n] = '\0';
    return s;
}

/* A task record of NEV events: a Task at T0, artifact updates (no
 * timestamp) with a long text, every tenth a working status 1 s later. */
static void put_task(once_store *s, const char *principal, const char *id)
{
    once_record r;
    memset(&r, 0, sizeof r);
    snprintf(r.principal, sizeof r.principal, "%s", principal);
    snprintf(r.task_id, sizeof r.task_id, "%s", id);
    snprintf(r.context_id, sizeof r.context_id, "ctx-1");
    r.state = ONCE_STATE_WORKING;
    r.version = 1;
    r.generation = NEV;
    r.fence = 3;
    r.step = 150;
    snprintf(r.lease_owner, sizeof r.lease_owner, "replica-z");
    r.lease_until = T0 + 5000;
    r.created_at = T0;
    r.updated_at = T0 + 60000;
    r.digests = "";
    r.task_json = "{\"id\":\"x\",\"contextId\":\"ctx-1\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}";
    char *long_text = accents(300);
    once_event *ev = calloc(NEV, sizeof *ev);
    for (int g = 1; g <= NEV; g++) {
        char ts[25];
        once_format_time(T0 + (g / 10) * 1000, ts);
        json_t *body =
            g == 1 ? json_pack("{s:{s:s, s:{s:s, s:s}}}", "task", "id", id, "status", "state",
                               "TASK_STATE_SUBMITTED", "timestamp", ts)
            : g % 10 == 0
                ? json_pack("{s:{s:s, s:{s:s, s:s}}}", "statusUpdate", "taskId", id, "status",
                            "state", "TASK_STATE_WORKING", "timestamp", ts)
                : json_pack("{s:{s:s, s:{s:s, s:[{s:s}]}}}", "artifactUpdate", "taskId", id,
                            "artifact", "name", "a<b>", "parts", "text", long_text);
        ev[g - 1].generation = g;
        ev[g - 1].payload = json_dumps(body, JSON_COMPACT);
        json_decref(body);
    }
    assert_int_equal(once_store_create(s, &r, ev, NEV, NULL, NULL), ONCE_OK);
    for (int g = 0; g < NEV; g++)
        free(ev[g].payload);
    free(ev);
    free(long_text);
}

static void test_bounds_and_order(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 1);
    put_task(env.store, "alice", "t-big");
    json_t *tl = NULL;
    assert_int_equal(once__engine_inspect(env.e, "alice", "t-big", &tl), ONCE_OK);
    assert_int_equal(json_integer_value(json_object_get(tl, "inspect")), 1);
    const json_t *task = json_object_get(tl, "task");
    assert_int_equal(json_integer_value(json_object_get(task, "fence")), 3);
    assert_string_equal(json_string_value(json_object_get(json_object_get(task, "lease"), "owner")),
                        "replica-z");
    /* the newest 500 events: generations 101..600, in order */
    assert_int_equal(json_integer_value(json_object_get(tl, "eventsOmitted")), NEV - 500);
    const json_t *entries = json_object_get(tl, "entries");
    int64_t want = NEV - 500 + 1, last_at = 0;
    size_t i;
    const json_t *e;
    json_array_foreach (entries, i, e) {
        int64_t at = json_integer_value(json_object_get(e, "at"));
        assert_true(at >= last_at);
        last_at = at;
        assert_string_equal(json_string_value(json_object_get(e, "kind")), "event");
        int64_t g = json_integer_value(json_object_get(e, "generation"));
        assert_int_equal(g, want++);
        /* an event without a timestamp has the time of the status before it */
        assert_int_equal(at, T0 + (g / 10) * 1000);
        assert_int_equal(json_is_true(json_object_get(e, "timed")), g % 10 == 0);
        const char *text = json_string_value(json_object_get(e, "text"));
        if (g % 10 != 0) {
            size_t n = strlen(text);
            assert_true(n <= ONCE_INSPECT_TEXT_MAX);
            assert_string_equal(text + n - 3, "...");
            assert_int_equal((unsigned char)text[n - 4], 0xa9); /* ends after a whole "é" */
            assert_string_equal(json_string_value(json_object_get(e, "artifact")), "a<b>");
        }
    }
    assert_int_equal(want, NEV + 1);
    /* the newest 100 keys of steps 0..150: 51..150, 150 current */
    const json_t *keys = json_object_get(tl, "effectKeys");
    assert_int_equal(json_array_size(keys), ONCE_INSPECT_MAX_KEYS);
    assert_int_equal(json_integer_value(json_object_get(tl, "keysOmitted")), 51);
    assert_string_equal(json_string_value(json_object_get(json_array_get(keys, 0), "key")),
                        "t-big:step-51");
    assert_true(json_is_true(json_object_get(json_array_get(keys, 99), "current")));
    assert_string_equal(json_string_value(json_object_get(json_array_get(keys, 99), "key")),
                        "t-big:step-150");
    /* not finished: no deadlines yet */
    assert_true(json_is_null(json_object_get(json_object_get(tl, "retention"), "tombstoneAt")));
    json_decref(tl);

    /* another principal's task, and an ID no task can have: not found */
    assert_int_equal(once__engine_inspect(env.e, "bob", "t-big", &tl), ONCE_ENOTFOUND);
    assert_null(tl);
    assert_int_equal(once__engine_inspect(env.e, "alice", "bad id", &tl), ONCE_ENOTFOUND);
    fx_env_close(&env);
}

static void test_finished_then_tombstone(void **state)
{
    (void)state;
    once__engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.retention_ms = 3600 * 1000;
    cfg.tombstone_ms = 2 * 3600 * 1000;
    fx_env env;
    fx_env_open(&env, &cfg, 1);
    once_send_res res;
    json_t *msg = fx_msg("m-1", "hello <b>", "t-done", NULL);
    assert_int_equal(fx_send(env.e, "alice", msg, 1, 0, &res), ONCE_OK);
    json_decref(msg);
    fx_res_clear(&res);
    fx_wait_state(env.store, "alice", "t-done", ONCE_STATE_COMPLETED);
    json_t *tl = NULL;
    assert_int_equal(once__engine_inspect(env.e, "alice", "t-done", &tl), ONCE_OK);
    int64_t fin = json_integer_value(json_object_get(json_object_get(tl, "task"), "finishedAt"));
    const json_t *ret = json_object_get(tl, "retention");
    assert_int_equal(json_integer_value(json_object_get(ret, "tombstoneAt")), fin + 3600 * 1000);
    assert_int_equal(json_integer_value(json_object_get(ret, "forgetAt")), fin + 3 * 3600 * 1000);
    const json_t *entries = json_object_get(tl, "entries");
    size_t n = json_array_size(entries);
    assert_string_equal(json_string_value(json_object_get(json_array_get(entries, n - 2), "what")),
                        "tombstone");
    assert_string_equal(json_string_value(json_object_get(json_array_get(entries, n - 1), "what")),
                        "forget");
    assert_string_equal(json_string_value(json_object_get(json_array_get(entries, 0), "text")),
                        "hello <b>");
    json_decref(tl);

    once_manual_clock_advance(&env.clock, 3600 * 1000 + 1000);
    assert_int_equal(once__engine_sweep_once(env.e), ONCE_OK);
    assert_int_equal(once__engine_inspect(env.e, "alice", "t-done", &tl), ONCE_OK);
    assert_true(json_is_null(json_object_get(tl, "task")));
    const json_t *x = json_object_get(tl, "expired");
    assert_int_equal(json_integer_value(json_object_get(x, "finishedAt")), fin);
    int64_t exp = json_integer_value(json_object_get(x, "expiredAt"));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(tl, "retention"), "forgetAt")),
                     exp + 2 * 3600 * 1000);
    entries = json_object_get(tl, "entries");
    assert_int_equal(json_array_size(entries), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(entries, 0), "kind")),
                        "finished");
    assert_string_equal(json_string_value(json_object_get(json_array_get(entries, 1), "kind")),
                        "expired");
    json_decref(tl);
    fx_env_close(&env);
}

/* The story of a task that asked and was answered: the continuation's
 * event (a working status with no message) names the user's answer, found
 * in the history after the agent's question, even though a progress message
 * before it was replaced in the history; the artifacts are listed and one
 * part is given for its download, to its principal only. */
static void test_story_and_parts(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 1);
    static const char *const payloads[] = {
        "{\"task\":{\"id\":\"t-s\",\"status\":{\"state\":\"TASK_STATE_SUBMITTED\"},"
        "\"history\":[{\"messageId\":\"u1\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":"
        "\"first\"}]}]}}",
        "{\"statusUpdate\":{\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}",
        "{\"statusUpdate\":{\"status\":{\"state\":\"TASK_STATE_WORKING\",\"message\":"
        "{\"messageId\":\"p1\",\"role\":\"ROLE_AGENT\",\"parts\":[{\"text\":\"busy\"}]}}}}",
        "{\"statusUpdate\":{\"status\":{\"state\":\"TASK_STATE_INPUT_REQUIRED\",\"message\":"
        "{\"messageId\":\"q1\",\"role\":\"ROLE_AGENT\",\"parts\":[{\"text\":\"which?\"}]}}}}",
        "{\"statusUpdate\":{\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}",
        "{\"statusUpdate\":{\"status\":{\"state\":\"TASK_STATE_COMPLETED\"}}}"};
    once_event ev[6];
    for (int g = 0; g < 6; g++)
        ev[g] = (once_event){.generation = g + 1, .payload = (char *)payloads[g]};
    once_record r;
    memset(&r, 0, sizeof r);
    snprintf(r.principal, sizeof r.principal, "alice");
    snprintf(r.task_id, sizeof r.task_id, "t-s");
    snprintf(r.context_id, sizeof r.context_id, "ctx-1");
    r.state = ONCE_STATE_COMPLETED;
    r.version = 1;
    r.generation = 6;
    r.created_at = T0;
    r.updated_at = T0;
    r.finished_at = T0;
    r.digests = "";
    r.task_json =
        "{\"id\":\"t-s\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\"},\"history\":["
        "{\"messageId\":\"u1\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"first\"}]},"
        "{\"messageId\":\"q1\",\"role\":\"ROLE_AGENT\",\"parts\":[{\"text\":\"which?\"}]},"
        "{\"messageId\":\"u2\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"this one\"}]}],"
        "\"artifacts\":[{\"artifactId\":\"a1\",\"name\":\"report\",\"parts\":[{\"text\":\"ok\"},"
        "{\"raw\":\"aGk=\",\"filename\":\"r.txt\",\"mediaType\":\"text/plain\"}]}]}";
    assert_int_equal(once_store_create(env.store, &r, ev, 6, NULL, NULL), ONCE_OK);

    json_t *tl = NULL;
    assert_int_equal(once__engine_inspect(env.e, "alice", "t-s", &tl), ONCE_OK);
    const char *users[7] = {0};
    size_t i;
    const json_t *e;
    json_array_foreach (json_object_get(tl, "entries"), i, e) {
        int64_t g = json_integer_value(json_object_get(e, "generation"));
        if (g >= 1 && g <= 6)
            users[g] = json_string_value(json_object_get(e, "user"));
    }
    assert_string_equal(users[1], "first");
    assert_null(users[2]);
    assert_null(users[3]);
    assert_string_equal(users[5], "this one");
    assert_null(users[6]);
    const json_t *parts =
        json_object_get(json_array_get(json_object_get(tl, "artifacts"), 0), "parts");
    assert_int_equal(json_array_size(parts), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(parts, 1), "size")), 2);
    json_decref(tl);

    json_t *part = NULL;
    assert_int_equal(once__engine_inspect_part(env.e, "alice", "t-s", "a1", 1, &part), ONCE_OK);
    assert_string_equal(json_string_value(json_object_get(part, "kind")), "file");
    assert_string_equal(json_string_value(json_object_get(part, "raw")), "aGk=");
    assert_string_equal(json_string_value(json_object_get(part, "filename")), "r.txt");
    json_decref(part);
    assert_int_equal(once__engine_inspect_part(env.e, "alice", "t-s", "a1", 2, &part),
                     ONCE_ENOTFOUND);
    assert_int_equal(once__engine_inspect_part(env.e, "alice", "t-s", "zz", 0, &part),
                     ONCE_ENOTFOUND);
    assert_int_equal(once__engine_inspect_part(env.e, "bob", "t-s", "a1", 1, &part),
                     ONCE_ENOTFOUND);
    assert_null(part);
    fx_env_close(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bounds_and_order),
        cmocka_unit_test(test_finished_then_tombstone),
        cmocka_unit_test(test_story_and_parts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
