/*
 * test_engine_writes.c -- a turn's write costs what the write changes, not
 * what the task holds: the work context edits the task it already parsed
 * instead of parsing the stored JSON again on every write (src/engine/work.c).
 *
 * Measured in allocations made by the turn's own thread (a counting
 * allocator through once_set_allocator), which do not depend on the
 * machine's speed: one progress status on a fresh task, then the same
 * progress status after a 60-part artifact made the task several times
 * larger. Parsing the stored task allocates per JSON value (hundreds here);
 * editing the parsed one allocates the same small set both times, give or
 * take the output buffer growing to the larger text.
 */
#include "unit/engine_fixture.h"
#include "unit/count_alloc.h"

#define PARTS 60
/* Output-buffer doublings and the like; a re-parse of the task costs
 * several allocations for each of its PARTS parts. */
#define SLACK 16

/* Written by the turn's thread before it completes the task; read by the
 * test after the blocking send saw the completion. */
static long small_allocs, big_allocs;
static int write_rc[3];

static long progress(once_work *w, int *rc)
{
    counted = 0;
    counting = 1;
    *rc = once_work_status(w, ONCE_STATE_WORKING, "{\"parts\":[{\"text\":\"progress\"}]}");
    counting = 0;
    return counted;
}

static int grow_run(const once_executor *ex, once_work *w)
{
    (void)ex;
    small_allocs = progress(w, &write_rc[0]);
    char art[64 + PARTS * 48];
    size_t len = (size_t)snprintf(art, sizeof art, "{\"artifactId\":\"big\",\"parts\":[");
    for (int i = 0; i < PARTS; i++)
        len += (size_t)snprintf(art + len, sizeof art - len,
                                "%s{\"text\":\"part %d\",\"metadata\":{}}", i ? "," : "", i);
    snprintf(art + len, sizeof art - len, "]}");
    write_rc[1] = once_work_artifact(w, art, 0, 1);
    big_allocs = progress(w, &write_rc[2]);
    return once_work_complete(w);
}

static void write_cost_does_not_grow_with_the_task(void **state)
{
    (void)state;
    once_set_allocator(&counting_allocator);
    fx_env env;
    once__engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.workers = 1;
    fx_env_open(&env, &cfg, 0);
    env.fx.ex.run = grow_run;   /* before the send: no turn has read it yet */

    json_t *m = fx_msg("m-1", "go", NULL, NULL);
    once_send_res res;
    assert_int_equal(fx_send(env.e, "bob", m, 0, 0, &res), ONCE_OK);

    /* The turn ran to the end, every write landed, and the big artifact is
     * in the task the send answers with. */
    json_t *task = json_object_get(res.result, "task");
    assert_non_null(task);
    assert_string_equal(json_string_value(json_object_get(json_object_get(task, "status"),
                                                          "state")),
                        "TASK_STATE_COMPLETED");
    for (int i = 0; i < 3; i++)
        assert_int_equal(write_rc[i], ONCE_OK);
    json_t *art = json_array_get(json_object_get(task, "artifacts"), 0);
    assert_int_equal(json_array_size(json_object_get(art, "parts")), PARTS);

    print_message("progress write: %ld allocations on the fresh task, %ld on the grown one\n",
                  small_allocs, big_allocs);
    assert_true(small_allocs > 0);   /* the counter saw the turn's thread */
    if (big_allocs > small_allocs + SLACK)
        fail_msg("a progress write on a task with a %d-part artifact made %ld allocations, "
                 "%ld on the fresh task: the write parsed the whole task again",
                 PARTS, big_allocs, small_allocs);

    fx_res_clear(&res);
    json_decref(m);
    fx_env_close(&env);
    once_set_allocator(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(write_cost_does_not_grow_with_the_task),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
