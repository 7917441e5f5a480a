/*
 * metrics.c -- the engine's counters in the Prometheus text format, and the
 * store probe behind onced's readiness check.
 *
 * One source of truth: every value here is read from once__engine_stats and
 * once_push_stats, the counters once/admin/stats reports; this file only
 * names them. Reading them takes no lock (once__engine_get_stats loads each
 * with an atomic load). The store's connection pools are the exception:
 * the store counts those itself (store/pool_stats.h), and each pool's
 * numbers are read under its own lock, briefly.
 */
#include <stdio.h>
#include <string.h>

#include "core/metrics.h"
#include "engine/engine_int.h"
#include "engine/push.h"
#include "store/pool_stats.h"

#define PROCESS_LOCAL " Process-local: starts at 0 when the process starts."

/* Every table below names each value by its byte offset `at` in the
 * stats struct it is read against (once__engine_stats or once_push_stats),
 * so the tables are static and a scrape builds none. */
#define ENGINE_AT(field) offsetof(once__engine_stats, field)
#define PUSH_AT(field) offsetof(once_push_stats, field)
#define POOL_AT(field) offsetof(once__pool_stats, field)

static uint64_t stat_at(const void *stats, size_t at)
{
    uint64_t v;
    memcpy(&v, (const char *)stats + at, sizeof v);
    return v;
}

/* A family with one sample and no labels. */
typedef struct single {
    const char *name, *type, *help;
    size_t at;
} single;

static void singles(once__mtext *t, const single *rows, size_t n, const void *stats)
{
    for (size_t i = 0; i < n; i++) {
        once__mtext_family(t, rows[i].name, rows[i].type, rows[i].help);
        once__mtext_sample(t, rows[i].name, NULL, stat_at(stats, rows[i].at));
    }
}

/* One sample of a counter family with labels. */
typedef struct labelled {
    const char *labels;
    size_t at;
} labelled;

static void family(once__mtext *t, const char *name, const char *help, const labelled *rows,
                   size_t n, const void *stats)
{
    once__mtext_family(t, name, "counter", help);
    for (size_t i = 0; i < n; i++)
        once__mtext_sample(t, name, rows[i].labels, stat_at(stats, rows[i].at));
}

#define NROWS(a) (sizeof(a) / sizeof((a)[0]))

/* The labelled families' samples. */
static const labelled sends[] = {
    {"outcome=\"registered\"", ENGINE_AT(registered)},
    {"outcome=\"replayed\"", ENGINE_AT(replayed)},
    {"outcome=\"continued\"", ENGINE_AT(continued)},
    {"outcome=\"refused\",reason=\"task_not_found\"", ENGINE_AT(refused_not_found)},
    {"outcome=\"refused\",reason=\"task_expired\"", ENGINE_AT(refused_expired)},
    {"outcome=\"refused\",reason=\"idempotency_conflict\"", ENGINE_AT(refused_conflict)},
    {"outcome=\"refused\",reason=\"task_busy\"", ENGINE_AT(refused_busy)},
    {"outcome=\"refused\",reason=\"task_terminal\"", ENGINE_AT(refused_terminal)},
    {"outcome=\"refused\",reason=\"overloaded\"", ENGINE_AT(overloaded)},
};

static const labelled turns_finished[] = {
    {"result=\"completed\"", ENGINE_AT(turns_completed)},
    {"result=\"failed\"", ENGINE_AT(turns_failed)},
    {"result=\"canceled\"", ENGINE_AT(turns_canceled)},
    {"result=\"rejected\"", ENGINE_AT(turns_rejected)},
    {"result=\"input_required\"", ENGINE_AT(turns_input_required)},
    {"result=\"auth_required\"", ENGINE_AT(turns_auth_required)},
    {"result=\"stopped\"", ENGINE_AT(turns_stopped)},
    {"result=\"lost\"", ENGINE_AT(turns_lost)},
};

static const labelled push_results[] = {
    {"result=\"delivered\"", PUSH_AT(delivered)},
    {"result=\"failed\"", PUSH_AT(retried)},
    {"result=\"gone\"", PUSH_AT(disabled)},
};

/* The single-sample families, in the order /metrics shows them between
 * the labelled ones: the turns started, and of them those run inline... */
static const single turns_started[] = {
    {"once_turns_started_total", "counter",
     "Agent turns started on this replica (takeovers included)." PROCESS_LOCAL,
     ENGINE_AT(executed_turns)},
    {"once_turns_inline_total", "counter",
     "Of the turns started, those run on the thread that accepted the request (the "
     "executor said they finish at once), without a hand-off to a turn worker."
     PROCESS_LOCAL,
     ENGINE_AT(inline_turns)},
};

/* ...the queue and the waits now, then leases, fences, retention and the
 * store... */
static const single engine_rest[] = {
    {"once_turns_queued", "gauge", "Turns waiting for a turn worker now.",
     ENGINE_AT(queued)},
    {"once_turns_queue_capacity", "gauge",
     "Turns that may wait for a turn worker (--max-queue); a send that finds the queue full "
     "waits briefly for room, then is refused OVERLOADED.",
     ENGINE_AT(queue_max)},
    {"once_turns_running", "gauge",
     "Turns whose agent runs now, on a turn worker or on the thread that accepted the "
     "request (parked turns are not running).",
     ENGINE_AT(running)},
    {"once_turn_workers", "gauge", "Turn workers (--turn-workers): the turns that run at once "
     "on workers.",
     ENGINE_AT(workers)},
    {"once_turns_parked", "gauge",
     "Turns parked now: their task is working and their lease kept, and they hold no "
     "turn worker until they are due again (the gateway following a slow upstream task).",
     ENGINE_AT(parked)},
    {"once_turns_parks_total", "counter",
     "Times a turn was parked (let go of its turn worker to run again later)."
     PROCESS_LOCAL,
     ENGINE_AT(parks)},
    {"once_sends_waiting", "gauge",
     "Blocking sends waiting for their task to settle now (they hold no thread).",
     ENGINE_AT(waiting)},
    {"once_sends_wait_shed_total", "counter",
     "Blocking sends answered at once with the task as it stands because --max-waits "
     "or --max-waits-per-principal was reached." PROCESS_LOCAL,
     ENGINE_AT(waits_shed)},
    {"once_sends_admission_waits_total", "counter",
     "Sends that found the turn queue full and waited for room (up to 100 ms) before they "
     "were admitted or refused OVERLOADED." PROCESS_LOCAL,
     ENGINE_AT(admit_waits)},
    {"once_takeovers_total", "counter",
     "Expired leases this replica took over (the task resumes here with fence + 1)."
     PROCESS_LOCAL,
     ENGINE_AT(takeovers)},
    {"once_fence_rejections_total", "counter",
     "Writes refused because the writer's fence was stale (a turn that lost its task)."
     PROCESS_LOCAL,
     ENGINE_AT(fenced_writes)},
    {"once_leases_lost_total", "counter",
     "Running turns stopped because their lease went to another replica." PROCESS_LOCAL,
     ENGINE_AT(lease_lost)},
    {"once_leases_released_total", "counter",
     "Leases given back when onced stopped, so another replica took the task over at "
     "once." PROCESS_LOCAL,
     ENGINE_AT(leases_released)},
    {"once_retention_expiries_total", "counter",
     "Finished tasks past --retention turned into tombstones by this replica."
     PROCESS_LOCAL,
     ENGINE_AT(swept)},
    {"once_store_early_expired_total", "counter",
     "Finished tasks expired before --retention to keep the memory: store within its "
     "budget (memory:?max), by the write that needed the room or by a sweep (those also "
     "count in once_retention_expiries_total)." PROCESS_LOCAL,
     ENGINE_AT(early_expired)},
    {"once_tombstones_purged_total", "counter",
     "Tombstones past --tombstone-retention deleted by this replica." PROCESS_LOCAL,
     ENGINE_AT(purged)},
    {"once_store_errors_total", "counter",
     "Store calls of the engine that failed because the store could not answer."
     PROCESS_LOCAL,
     ENGINE_AT(store_errors)},
    {"once_store_feed_up", "gauge",
     "1 while the store's change feed (PostgreSQL LISTEN, Redis SUBSCRIBE) tells this "
     "replica of other replicas' writes; 0 while followers poll the store instead (no "
     "feed on this store, or its connection is down).",
     ENGINE_AT(feed_up)},
    {"once_store_feed_lost_total", "counter",
     "Times the store's change feed went down (followers polled until it was back)."
     PROCESS_LOCAL,
     ENGINE_AT(feed_lost)},
    {"once_store_feed_keys_total", "counter",
     "Task keys the store's change feed told this replica of (updates by any replica)."
     PROCESS_LOCAL,
     ENGINE_AT(feed_keys)},
};

/* ...and push delivery's, after its family (read from once_push_stats). */
static const single push_more[] = {
    {"once_push_retries_total", "counter",
     "Webhook deliveries scheduled again after a failed POST." PROCESS_LOCAL,
     PUSH_AT(retried)},
    {"once_push_refused_total", "counter",
     "Webhook connections refused by the SSRF guard (--push-allow)." PROCESS_LOCAL,
     PUSH_AT(refused)},
};

/* ...and a PostgreSQL or Redis store's connection pools, only there, one
 * sample per pool (pool_stats.h; "batch" only with group commit on). */
static const single pool_rows[] = {
    {"once_store_pool_connections_max", "gauge",
     "Connections the store's pool may open (the store URL's pool=; the batch pool: batch=).",
     POOL_AT(max)},
    {"once_store_pool_connections_open", "gauge",
     "Connections of the store's pool open now (or being opened).", POOL_AT(open)},
    {"once_store_pool_connections_in_use", "gauge",
     "Of them, connections a store call holds now; the rest are idle.", POOL_AT(in_use)},
    {"once_store_pool_waiting", "gauge",
     "Store calls waiting in line for a connection now (every one was in use).",
     POOL_AT(waiting)},
    {"once_store_pool_waits_total", "counter",
     "Store calls that had to wait in line for a connection." PROCESS_LOCAL, POOL_AT(waits)},
};

static const char *const pool_labels[] = {"pool=\"calls\"", "pool=\"batch\""};

static void pools(once__engine *e, once__mtext *t)
{
    once__pool_stats p[2];
    if (!once__store_pool_stats(e->store, &p[0], &p[1]))
        return;
    size_t n = p[1].max > 0 ? 2 : 1;
    for (size_t r = 0; r < NROWS(pool_rows); r++) {
        once__mtext_family(t, pool_rows[r].name, pool_rows[r].type, pool_rows[r].help);
        for (size_t i = 0; i < n; i++)
            once__mtext_sample(t, pool_rows[r].name, pool_labels[i],
                               stat_at(&p[i], pool_rows[r].at));
    }
    once__mtext_family(t, "once_store_pool_wait_seconds_total", "counter",
                       "Time store calls spent waiting in line for a connection, in all (those "
                       "that gave up after the pool's wait included)." PROCESS_LOCAL);
    for (size_t i = 0; i < n; i++)
        once__mtext_sample_f(t, "once_store_pool_wait_seconds_total", pool_labels[i],
                             (double)p[i].wait_ns / 1e9);
}

/* ...and a memory: store's, only there. */
static const single memory_store[] = {
    {"once_memory_store_bytes", "gauge",
     "Bytes the memory: store holds, as its budget counts them (records, events, push "
     "rows, tombstones, its table).",
     ENGINE_AT(mem_bytes)},
    {"once_memory_store_budget_bytes", "gauge",
     "The memory: store's budget (memory:?max); 0: none.", ENGINE_AT(mem_max_bytes)},
    {"once_memory_store_tasks", "gauge", "Tasks the memory: store holds (not expired).",
     ENGINE_AT(mem_tasks)},
    {"once_memory_store_tombstones", "gauge", "Tombstones the memory: store holds.",
     ENGINE_AT(mem_tombstones)},
    {"once_memory_store_cold_tasks", "gauge",
     "Of the tasks the memory: store holds, the finished ones its sweep has deflated.",
     ENGINE_AT(mem_cold)},
};

void once__engine_metrics(once__engine *e, once__mtext *t)
{
    once__engine_stats s;
    once__engine_get_stats(e, &s);

    family(t, "once_sends_total",
           "SendMessage calls by outcome; a refusal names its reason (overloaded: the turn "
           "queue was full, nothing stored)." PROCESS_LOCAL,
           sends, NROWS(sends), &s);
    singles(t, turns_started, NROWS(turns_started), &s);
    family(t, "once_turns_finished_total",
           "Agent turns that ended, by the state they left the task in; stopped: onced was "
           "shutting down (the lease is released for a takeover); lost: canceled or the lease "
           "went to another replica." PROCESS_LOCAL,
           turns_finished, NROWS(turns_finished), &s);
    singles(t, engine_rest, NROWS(engine_rest), &s);
    if (once_store_caps(e->store) & ONCE_STORE_BUDGET)
        singles(t, memory_store, NROWS(memory_store), &s);
    pools(e, t);

    once_push_stats p;
    once__engine_push_stats(e, &p);
    family(t, "once_push_deliveries_total",
           "Webhook POSTs by result: delivered (2xx), failed (retried later), gone (410: the "
           "config is disabled)." PROCESS_LOCAL,
           push_results, NROWS(push_results), &p);
    singles(t, push_more, NROWS(push_more), &p);
}

int once__engine_ping(once__engine *e)
{
    once_record rec;
    /* A principal with a space: no bearer token maps to one (auth.c), so
     * no tenant's task can be this key. */
    int rc = once_store_load(e->store, "once probe", "readyz", &rec, NULL);
    if (rc == ONCE_OK)
        once_record_clear(&rec);
    return rc == ONCE_OK || rc == ONCE_ENOTFOUND || rc == ONCE_ETOMBSTONE ? ONCE_OK : rc;
}
