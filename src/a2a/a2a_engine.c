/*
 * a2a_engine.c -- binds the codec's backend table to a running once__engine.
 *
 * Kept apart from the codec so that the codec (and its unit tests, which
 * use a fake backend) links without the engine.
 */
#include "a2a/a2a.h"

static int b_send(void *ctx, const once_send_req *req, once_send_res *res)
{
    return once__engine_send(ctx, req, res);
}

static int b_get(void *ctx, const char *principal, const char *task_id, int history_length,
                 json_t **task, int64_t *expired_at)
{
    return once__engine_get(ctx, principal, task_id, history_length, task, expired_at);
}

static int b_cancel(void *ctx, const char *principal, const char *task_id, json_t **task,
                    once_state *state, int64_t *expired_at)
{
    return once__engine_cancel(ctx, principal, task_id, task, state, expired_at);
}

static int b_list(void *ctx, const once_list_req *req, json_t **tasks, char next_token[256])
{
    return once__engine_list(ctx, req, tasks, next_token);
}

static int b_leases(void *ctx, json_t **out)
{
    return once__engine_leases_json(ctx, out);
}

static int b_release(void *ctx, const char *principal, const char *task_id, int64_t *fence)
{
    return once__engine_take_over_now(ctx, principal, task_id, fence);
}

static int b_replicas(void *ctx, json_t **out)
{
    return once__engine_replicas_json(ctx, out);
}

static void b_stats(void *ctx, json_t *obj)
{
    once__engine_stats s;
    once_push_stats p;
    once__engine_get_stats(ctx, &s);
    once__engine_push_stats(ctx, &p);
    const struct {
        const char *name;
        uint64_t v;
    } rows[] = {
        {"registered", s.registered},
        {"continued", s.continued},
        {"replayed", s.replayed},
        {"refused", s.refused},
        {"executedTurns", s.executed_turns},
        {"inlineTurns", s.inline_turns},
        {"takeovers", s.takeovers},
        {"fencedWrites", s.fenced_writes},
        {"swept", s.swept},
        {"earlyExpired", s.early_expired},
        {"purged", s.purged},
        {"storeErrors", s.store_errors},
        {"overloaded", s.overloaded},
        {"leaseLost", s.lease_lost},
        {"queued", s.queued},
        {"parked", s.parked},
        {"parks", s.parks},
        {"sweeps", s.sweeps},
        {"waiting", s.waiting},
        {"waitsShed", s.waits_shed},
        {"pushAttempts", p.attempts},
        {"pushDelivered", p.delivered},
        {"pushRetried", p.retried},
        {"pushDisabled", p.disabled},
        {"pushRefused", p.refused},
        {"pushFenced", p.fenced},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        json_object_set_new(obj, rows[i].name, json_integer((json_int_t)rows[i].v));
    json_object_set_new(obj, "replicaId", json_string(once__engine_replica_id(ctx)));
    if (s.mem_bytes > 0) {   /* a memory: store (its table alone is bytes) */
        json_t *m = json_pack("{sI sI sI sI sI}", "bytes", (json_int_t)s.mem_bytes, "maxBytes",
                              (json_int_t)s.mem_max_bytes, "tasks", (json_int_t)s.mem_tasks,
                              "tombstones", (json_int_t)s.mem_tombstones, "cold",
                              (json_int_t)s.mem_cold);
        if (m != NULL)
            json_object_set_new(obj, "memoryStore", m);
    }
    /* What the store really commits at (absent for stores without the
     * choice), so a test can hold onced to its documented default. */
    int level;
    if (once__engine_store_synchronous(ctx, &level) == ONCE_OK)
        json_object_set_new(obj, "storeSynchronous", json_string(once_sync_name(level)));
}

static int b_push_create(void *ctx, const char *principal, const json_t *config, int status,
                         json_t **out, once_push_res *res)
{
    return once__engine_push_create(ctx, principal, config, status, out, res);
}

static int b_push_get(void *ctx, const char *principal, const char *task_id, const char *id,
                      int status, json_t **out, once_push_res *res)
{
    return once__engine_push_get(ctx, principal, task_id, id, status, out, res);
}

static int b_push_list(void *ctx, const char *principal, const char *task_id, int status,
                       json_t **out, once_push_res *res)
{
    return once__engine_push_list(ctx, principal, task_id, status, out, res);
}

static int b_push_delete(void *ctx, const char *principal, const char *task_id, const char *id,
                         once_push_res *res)
{
    return once__engine_push_delete(ctx, principal, task_id, id, res);
}

static int b_events(void *ctx, const char *principal, const char *task_id, int64_t after,
                    size_t max, once_event_list *out)
{
    return once__engine_events_after(ctx, principal, task_id, after, max, out);
}

static int b_head(void *ctx, const char *principal, const char *task_id, int64_t *generation,
                  once_state *state)
{
    return once__engine_task_head(ctx, principal, task_id, generation, state);
}

static int b_wait(void *ctx, const char *principal, const char *task_id, int64_t gen,
                  int64_t timeout_ms, const once__wait_stop *stop)
{
    return once__engine_wait_generation_or(ctx, principal, task_id, gen, timeout_ms, stop);
}

static int b_await(void *ctx, const char *principal, const char *task_id, int64_t gen,
                   uint64_t seq, int64_t until, void (*ready)(void *arg, once_record *rec),
                   void *arg)
{
    return once__engine_await(ctx, principal, task_id, gen, seq, until, ready, arg);
}

static int b_watch(void *ctx, const char *principal, const char *task_id, void (*fn)(void *arg),
                   void *arg, void **handle)
{
    once__engine_watch *w = NULL;
    int rc = once__engine_watch_add(ctx, principal, task_id, fn, arg, &w);
    *handle = w;
    return rc;
}

static void b_unwatch(void *ctx, void *handle)
{
    once__engine_watch_remove(ctx, handle);
}

static int64_t b_follow_poll_ms(void *ctx)
{
    return once__engine_follow_poll_ms(ctx);
}

static void b_await_release(void *ctx)
{
    once__engine_await_release(ctx);
}

static int b_send_answer(void *ctx, const char *principal, const char *task_id,
                         const once_record *rec, int history_length, once_send_res *res)
{
    return once__engine_send_answer(ctx, principal, task_id, rec, history_length, res);
}

void once__a2a_backend_engine(once__engine *e, once__a2a_backend *out)
{
    out->ctx = e;
    out->send = b_send;
    out->get = b_get;
    out->cancel = b_cancel;
    out->list = b_list;
    out->stats = b_stats;
    out->replicas = b_replicas;
    out->leases = b_leases;
    out->release = b_release;
    out->events = b_events;
    out->head = b_head;
    out->wait = b_wait;
    out->watch = b_watch;
    out->unwatch = b_unwatch;
    out->follow_poll_ms = b_follow_poll_ms;
    out->await = b_await;
    out->await_release = b_await_release;
    out->send_answer = b_send_answer;
    /* Push only where the store keeps delivery rows; the card follows. */
    if (once__engine_push_supported(e)) {
        out->push_create = b_push_create;
        out->push_get = b_push_get;
        out->push_list = b_push_list;
        out->push_delete = b_push_delete;
    }
}
