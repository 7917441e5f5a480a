/*
 * test_engine_metrics.c -- the engine's /metrics text (src/engine/metrics.c):
 * every sample reads the once__engine_stats field it names. Each field is
 * given its own value, so a sample that read another field shows another
 * number. (Family names, types and help: tests/e2e/test_ops.py.)
 */
#include "unit/engine_fixture.h"
#include "engine/engine_int.h"
#include "core/metrics.h"

/* Give field i of the stats the value 1000 + i. */
static void stats_numbered(once__engine *e)
{
    uint64_t *v = (uint64_t *)(void *)&e->stats;
    for (size_t i = 0; i < sizeof e->stats / sizeof(uint64_t); i++)
        __atomic_store_n(&v[i], 1000 + i, __ATOMIC_RELAXED);
}

static uint64_t numbered(size_t at)
{
    return 1000 + at / sizeof(uint64_t);
}

static const struct {
    const char *sample; /* name and labels, as the line starts */
    size_t at;          /* the field it must read */
} want[] = {
    {"once_sends_total{outcome=\"registered\"}", ONCE__STAT_AT(registered)},
    {"once_sends_total{outcome=\"replayed\"}", ONCE__STAT_AT(replayed)},
    {"once_sends_total{outcome=\"continued\"}", ONCE__STAT_AT(continued)},
    {"once_sends_total{outcome=\"refused\",reason=\"task_not_found\"}",
     ONCE__STAT_AT(refused_not_found)},
    {"once_sends_total{outcome=\"refused\",reason=\"task_expired\"}",
     ONCE__STAT_AT(refused_expired)},
    {"once_sends_total{outcome=\"refused\",reason=\"idempotency_conflict\"}",
     ONCE__STAT_AT(refused_conflict)},
    {"once_sends_total{outcome=\"refused\",reason=\"task_busy\"}", ONCE__STAT_AT(refused_busy)},
    {"once_sends_total{outcome=\"refused\",reason=\"task_terminal\"}",
     ONCE__STAT_AT(refused_terminal)},
    {"once_sends_total{outcome=\"refused\",reason=\"overloaded\"}", ONCE__STAT_AT(overloaded)},
    {"once_turns_started_total", ONCE__STAT_AT(executed_turns)},
    {"once_turns_inline_total", ONCE__STAT_AT(inline_turns)},
    {"once_turns_finished_total{result=\"completed\"}", ONCE__STAT_AT(turns_completed)},
    {"once_turns_finished_total{result=\"failed\"}", ONCE__STAT_AT(turns_failed)},
    {"once_turns_finished_total{result=\"canceled\"}", ONCE__STAT_AT(turns_canceled)},
    {"once_turns_finished_total{result=\"rejected\"}", ONCE__STAT_AT(turns_rejected)},
    {"once_turns_finished_total{result=\"input_required\"}",
     ONCE__STAT_AT(turns_input_required)},
    {"once_turns_finished_total{result=\"auth_required\"}", ONCE__STAT_AT(turns_auth_required)},
    {"once_turns_finished_total{result=\"stopped\"}", ONCE__STAT_AT(turns_stopped)},
    {"once_turns_finished_total{result=\"lost\"}", ONCE__STAT_AT(turns_lost)},
    {"once_turns_queued", ONCE__STAT_AT(queued)},
    {"once_turns_queue_capacity", ONCE__STAT_AT(queue_max)},
    {"once_turns_running", ONCE__STAT_AT(running)},
    {"once_turn_workers", ONCE__STAT_AT(workers)},
    {"once_turns_parked", ONCE__STAT_AT(parked)},
    {"once_turns_parks_total", ONCE__STAT_AT(parks)},
    {"once_sends_waiting", ONCE__STAT_AT(waiting)},
    {"once_sends_wait_shed_total", ONCE__STAT_AT(waits_shed)},
    {"once_sends_admission_waits_total", ONCE__STAT_AT(admit_waits)},
    {"once_takeovers_total", ONCE__STAT_AT(takeovers)},
    {"once_fence_rejections_total", ONCE__STAT_AT(fenced_writes)},
    {"once_leases_lost_total", ONCE__STAT_AT(lease_lost)},
    {"once_leases_released_total", ONCE__STAT_AT(leases_released)},
    {"once_retention_expiries_total", ONCE__STAT_AT(swept)},
    {"once_store_early_expired_total", ONCE__STAT_AT(early_expired)},
    {"once_tombstones_purged_total", ONCE__STAT_AT(purged)},
    {"once_store_errors_total", ONCE__STAT_AT(store_errors)},
};

static void test_samples_read_their_fields(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);   /* no task: no engine thread counts anything */
    stats_numbered(env.e);
    once__mtext t = {0};
    once__engine_metrics(env.e, &t);
    assert_false(t.oom);
    assert_non_null(t.buf);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char line[256];
        int n = snprintf(line, sizeof line, "\n%s %llu\n", want[i].sample,
                         (unsigned long long)numbered(want[i].at));
        assert_true(n > 0 && (size_t)n < sizeof line);
        if (strstr(t.buf, line) == NULL)
            fail_msg("no line \"%s %llu\" in:\n%s", want[i].sample,
                     (unsigned long long)numbered(want[i].at), t.buf);
    }
    once__mtext_free(&t);
    fx_env_close(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_samples_read_their_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
