/*
 * logs.c -- the engine's log lines (core/log.h): a takeover, a write refused
 * for a stale fence, a store failure, a failed webhook POST. Each names its
 * task; the thread's trace context (the request's or the turn's) is added
 * by once__log_end.
 *
 * Callers are on the engine's hot paths only when something went wrong,
 * except takeovers, which are rare by design.
 */
#include "core/log.h"
#include "engine/engine_int.h"

void once__log_takeover(const once__engine *e, const once_record *lost, const once_record *taken,
                        int64_t now, int resumed_here)
{
    once__logline l;
    if (!once__log_begin(&l, ONCE_LOG_INFO, "takeover"))
        return;
    once__log_str(&l, "task", taken->task_id);
    once__log_str(&l, "principal", taken->principal);
    once__log_int(&l, "fence", taken->fence);
    once__log_str(&l, "replica", e->replica_id);
    /* Whose lease ran out, and how long ago: the replica to look at. */
    once__log_str(&l, "lost_owner", lost->lease_owner[0] ? lost->lease_owner : "-");
    once__log_int(&l, "lease_expired_ms", now - lost->lease_until);
    once__log_str(&l, "runs", resumed_here ? "here" : "nowhere (waits for input)");
    once__log_end(&l);
}

void once__log_fenced(const char *task_id, int64_t held, int64_t stored)
{
    once__logline l;
    if (!once__log_begin(&l, ONCE_LOG_WARN, "fence_rejected"))
        return;
    once__log_str(&l, "task", task_id);
    once__log_int(&l, "fence", held);
    if (stored > 0)
        once__log_int(&l, "stored_fence", stored);
    once__log_end(&l);
}

void once__log_store_error(int rc)
{
    once__logline l;
    if (!once__log_begin(&l, ONCE_LOG_WARN, "store_error"))
        return;
    once__log_str(&l, "error", once_errname(rc));
    once__log_end(&l);
}

void once__log_push_failure(const char *task_id, const char *config_id, int64_t generation,
                            long status, int64_t attempt, const char *error)
{
    once__logline l;
    if (!once__log_begin(&l, ONCE_LOG_WARN, "push_failed"))
        return;
    once__log_str(&l, "task", task_id);
    once__log_str(&l, "config", config_id);
    once__log_int(&l, "generation", generation);
    once__log_int(&l, "status", status);
    once__log_int(&l, "attempt", attempt);
    once__log_str(&l, "error", error);
    once__log_end(&l);
}
