/*
 * engine.h -- the agent runtime over a store (internal API used by src/a2a
 * and apps/onced). The engine owns lifecycle: it loads, runs decide(),
 * applies the verdict with an atomic create or CAS, dispatches executors
 * under leases with fencing, takes over expired leases, sweeps retention.
 *
 * It never parses JSON-RPC: the codec (src/a2a) hands it already-validated
 * A2A objects (jansson values) and maps its results to wire responses.
 * Thread-safe: every once__engine_* call may run on any HTTP thread.
 */
#ifndef ONCE_ENGINE_ENGINE_H
#define ONCE_ENGINE_ENGINE_H

#include <jansson.h>

#include "core/decide.h"
#include "once/executor.h"
#include "once/store.h"

typedef struct once__engine once__engine;
typedef struct once__held once__held;   /* engine/held.c */

/* Not an error: "not done here, nothing was done; run it again on a thread
 * that may wait" (once_send_req.inline_only). Never leaves the process. */
#define ONCE__EAGAIN (-100)

typedef struct once__engine_config {
    once_store *store;              /* borrowed; outlives the engine */
    const once_clock *clock;        /* NULL = system */
    const once_rng *rng;            /* NULL = system */
    const once_executor *executor;  /* borrowed; required (ONCE_EINVAL if NULL):
                                     * once_executor_echo() for the built-in */
    const char *replica_id;         /* NULL = "<hostname>-<pid>" */
    int64_t lease_ms;               /* default 15000 */
    int64_t heartbeat_ms;           /* default lease_ms / 3 */
    int64_t retention_ms;           /* default 72h */
    int64_t tombstone_ms;           /* default 30d */
    int64_t sweep_interval_ms;      /* takeover + retention sweep period; default 1000 */
    int64_t max_wait_ms;            /* cap on a blocking SendMessage; default 60000 */
    /* Deferred waits (once__engine_await) at once, in all and per principal;
     * defaults 10000 and a quarter of max_waits (0 and ONCE__SHARE_QUARTER:
     * a quarter). Past either a blocking send is answered with the task as
     * it stands instead of waiting (counted in waits_shed). */
    int max_waits;
    int max_waits_per_principal;
    int workers;                    /* executor threads; default 16 */
    /* Turns waiting for a worker on this replica; default 16 per worker.
     * Past it a send that would start a turn (register, continue) is
     * answered ONCE_EOVERLOAD with nothing written, and this replica's
     * sweeper takes over no expired lease, so the client's retry and the
     * other replicas take the load instead of a queue that grows without
     * bound. */
    int max_queue;
    /* The queue's share of one principal: past it that principal's sends
     * that would start a turn are answered ONCE_EOVERLOAD (nothing written)
     * while other principals still get in. 0: no share (one principal may
     * fill the queue: right when every caller is one principal);
     * ONCE__SHARE_QUARTER: a quarter of max_queue, at least 1. Takeovers
     * are bounded by max_queue alone. Whatever the shares, a worker takes
     * the oldest queued turn of the principal with the fewest turns on
     * workers (dispatch.c), so a busy principal's backlog waits behind the
     * others' turns instead of in front of them. */
    int max_queue_per_principal;
    /* How long a send that would start a turn waits for room when the
     * queue is full before it is refused, in ms; default 100, -1: refuse at
     * once. A client that retries without pause (ignoring Retry-After)
     * otherwise turns a full queue into a stream of refusals, each with its
     * store read, that takes the CPU the queued turns need to drain it
     * (bench/backends.md, "Group commit on by default"). The wait holds
     * the send's thread; the store read before it was made once. */
    int admit_wait_ms;
    /* Largest stored record (task JSON, checkpoint, accepted-message digests
     * and push configs together); default 4 MiB. A write that would grow a
     * record past it is refused with ONCE_ERANGE (a send: -32602 naming the
     * limit; an agent's output: the task fails with that reason), except
     * the write that ends the task, which may use 64 KiB more so a task can
     * always end. Bounds the memory and time of every read of the task. */
    int64_t max_task_bytes;
    /* Who names the task of a plain first message (no idempotency extension
     * active, no taskId). ONCE_PLAIN_IDS_DERIVED (0, the default): derived
     * from (principal, messageId), so a plain client's retry lands on the
     * same task, and a messageId reused with other content is refused.
     * ONCE_PLAIN_IDS_SERVER: a fresh server-minted ID for every such
     * message, as other A2A 1.0 servers do (a plain retry makes a second
     * task). Messages sent with the extension active dedup in both modes. */
    int plain_ids;
    /* EXPERIMENT ONLY (demo/amplify.sh, onced --experiment-naive): switch
     * the idempotency layer off to measure what it prevents. A first
     * message without a taskId registers a fresh task under a random
     * server-minted ID (as a plain A2A 1.0 server does), so a retried
     * messageId makes a second task; the idempotency extension is
     * ignored, so a client-minted taskId is TASK_NOT_FOUND. Never set it
     * in production. */
    int experiment_naive;
} once__engine_config;

enum { ONCE_PLAIN_IDS_DERIVED = 0, ONCE_PLAIN_IDS_SERVER = 1 };

/* A per-principal share of a quarter of its limit (max_queue_per_principal,
 * and the HTTP layer's max_streams_per_principal). */
#define ONCE__SHARE_QUARTER (-1)
/* The share a setting names: ONCE__SHARE_QUARTER resolved against limit,
 * 0 (no share) as limit, else itself. */
static inline long once__share_of(long setting, long limit)
{
    if (setting == ONCE__SHARE_QUARTER)
        return limit / 4 > 0 ? limit / 4 : 1;
    return setting > 0 && setting < limit ? setting : limit;
}

int once__engine_new(const once__engine_config *cfg, once__engine **out, char *err, size_t errlen);
/* Start the worker pool and the sweeper thread. */
int once__engine_start(once__engine *e);
/* Stop: blocked sends and follows return at once (a send answers with the
 * task as it stands), background threads end, running turns are asked to
 * stop, and the lease of every turn this replica held, running or queued,
 * is released (set to have run out) so that another replica takes the task
 * over at its next sweep instead of a lease later. Later calls get
 * ONCE_ECLOSED where they would start work. Idempotent; NULL ok. */
void once__engine_stop(once__engine *e);
/* Stop (if not yet), then free. NULL ok. */
void once__engine_free(once__engine *e);

const char *once__engine_replica_id(const once__engine *e);

/* The cluster view (replicas.c). Every replica's heartbeat row in *out
 * (once_replica_list_clear it), by id; ONCE_OK with none on a store
 * without ONCE_STORE_REPLICAS; the store's errors otherwise. */
int once__engine_replicas(once__engine *e, once_replica_list *out);
/* A replica is alive while it has not stopped and its last beat is at most
 * ONCE__ALIVE_BEATS of e's heartbeat intervals older than now. */
#define ONCE__ALIVE_BEATS 3
int once__engine_replica_alive(const once__engine *e, const once_replica *r, int64_t now);
/* The cluster view as JSON (*out, new reference): {"replicas": [{"id",
 * "version", "startedAt", "lastBeat" (RFC 3339), "alive", "stopped",
 * "leases"}], "aliveWithinMs": ONCE__ALIVE_BEATS heartbeats, "now"}.
 * Errors as once__engine_replicas. */
int once__engine_replicas_json(once__engine *e, json_t **out);
/* Leases that ran out and were not taken over yet (at most 100, oldest
 * first): {"expired": [{principal, taskId, state, leaseOwner, fence,
 * leaseUntil, expiredForMs}], "now"}. */
int once__engine_leases_json(once__engine *e, json_t **out);
/* An operator's release of the key's lease: this replica takes the task
 * over now, live lease or not (fence + 1: the holder's next write is
 * refused and its turn stops), and runs its turn. ONCE_OK with *fence;
 * ONCE_ENOTFOUND (no live task), ONCE_ECONFLICT (no lease held: finished
 * or waiting for input), or the store's error. */
int once__engine_take_over_now(once__engine *e, const char *principal, const char *task_id,
                               int64_t *fence);
/* The configuration e runs with, every default filled in; valid until
 * once__engine_free. */
const once__engine_config *once__engine_cfg(const once__engine *e);
/* The commit durability the engine's store reports, read back from it
 * (once_store_synchronous): ONCE_SYNC_* in *level, or ONCE_EUNSUPPORTED
 * for a store without the choice. */
int once__engine_store_synchronous(once__engine *e, int *level);
int64_t once__engine_retention_ms(const once__engine *e);
int64_t once__engine_tombstone_ms(const once__engine *e);

/* A SendMessage (or 0.1 tasks/send) as the codec validated it. */
typedef struct once_send_req {
    const char *principal;
    json_t *message;        /* borrowed A2A Message object (validated shape) */
    const char *task_id;    /* message.taskId, or 0.1 params.id; NULL = none */
    int extension;          /* urn:once:a2a:idempotency:v1 active for this request */
    int legacy;             /* 0.1 tasks/send: identity by digest, client id */
    int return_immediately; /* else block until terminal/interrupted (bounded) */
    /* The caller waits itself (once__engine_await) instead of blocking in
     * once__engine_send: where a blocking send would wait, the send returns
     * at once with pending = 1, generation and wait_until set, and no
     * result; the caller builds the answer with once__engine_send_answer. */
    int defer;
    /* The caller can send the answer after a write it starts itself: a new
     * task that finishes in its first turn is not stored by the send but
     * handed over in res->held (see once__engine_held_start). */
    int hold;
    /* The calling thread must not wait for the store's writes nor for
     * room in the turn queue: where the send would (a continuation, a
     * registration that is not a held write, a full queue), it returns
     * ONCE__EAGAIN before anything is written, and the caller sends again
     * from a thread that may wait. Reads still run. */
    int inline_only;
    int64_t wait_ms;        /* blocking bound; 0 = engine default */
    int history_length;     /* -1 = all */
    /* The caller can take the answer as text (res->result_text), which the
     * engine then builds from the stored task text without parsing it
     * where it can (the whole history asked for). */
    int text_result;
    json_t *metadata;       /* borrowed request metadata or NULL */
    /* configuration.taskPushNotificationConfig (shape-checked; push.h) or
     * NULL: stored in the same create / CAS as a REGISTER or CONTINUE. It is
     * part of the request's digest, so a REPLAY carries the same config
     * (and stays read-only) and another config, or none, under the same
     * messageId is IDEMPOTENCY_CONFLICT like other content.
     * ONCE_EUNSUPPORTED without a push-capable store; a bad url is
     * ONCE_EINVAL with field
     * "configuration.taskPushNotificationConfig.url". */
    const json_t *push_config;
    int push_v03;           /* push_config came over A2A 0.3: its deliveries
                             * carry 0.3 bodies (push.h, ONCE__PUSH_V03) */
} once_send_req;

/* The outcome. On ONCE_OK, verdict says what happened:
 *   REGISTER / CONTINUE / REPLAY: result = {"task":{...}} or {"message":{...}}
 *     (new reference; caller json_decref's it); replayed = 1 for REPLAY.
 *   TASK_NOT_FOUND, TASK_EXPIRED (expired_at), IDEMPOTENCY_CONFLICT,
 *   REJECT_BUSY / REJECT_TERMINAL (state): refusals; result NULL.
 * On ONCE_EINVAL, field names the offending parameter (e.g.
 * "message.contextId") and detail says why. On ONCE_ESTORE / ONCE_EBUSY the
 * store could not answer: the client must retry (never a verdict). On
 * ONCE_EOVERLOAD this replica's turn queue is full and nothing was written:
 * the client retries later or elsewhere (see max_queue). */
typedef struct once_send_res {
    once_verdict verdict;
    int replayed;
    json_t *result;
    /* Instead of result, when the caller asked for text (req->text_result;
     * for once__engine_send_answer: text_result set here before the call):
     * the same answer as compact JSON text, once_malloc'd, the caller's to
     * once_free. At most one of result and result_text is set. */
    char *result_text;
    int text_result;
    once_state state;
    char task_id[ONCE_ID_MAX + 1];
    char message_id[ONCE_ID_MAX + 1];
    int64_t expired_at;
    const char *field;
    char detail[256];
    /* req->defer only: the task has not settled; wait for it past
     * `generation` until `wait_until` (monotonic ms), then answer. */
    int pending;
    int64_t generation;
    int64_t wait_until;
    uint64_t wait_seq;      /* hand to once__engine_await with generation */
    /* req->hold only: the task is not stored yet; the answer above is what
     * it says once it is. The caller starts the write, and sends the answer
     * only when told it landed (or drops it). */
    once__held *held;
} once_send_res;

/* Start a held write: landed(arg, rc) is called exactly once, on this
 * thread before the return or on the thread that commits the write (it must
 * not block on the store), after the write's notifications. ONCE_OK: the
 * task is stored, send the answer. Otherwise nothing was stored and the
 * answer must not be sent: run the send again without req->hold (it decides
 * again from what is stored). h is freed. */
void once__engine_held_start(once__held *h, void (*landed)(void *arg, int rc), void *arg);
/* 1 if a send may run on a thread that must not wait for I/O
 * (req->inline_only): the store starts writes without waiting
 * (ONCE_STORE_CREATE_START) and is read without a round trip (LOCAL). Sends with
 * req->hold get held writes on any store that starts writes. */
int once__engine_holds(const once__engine *e);
/* Free a held write without writing it (its answer is not sent). NULL ok. */
void once__engine_held_drop(once__held *h);

int once__engine_send(once__engine *e, const once_send_req *req, once_send_res *res);

/* The answer to a deferred blocking send (res->pending): the task as it
 * stands now, rec when the wait handed one (the record that settled it,
 * written by this process: no store read), else read from the store:
 * res->result ({"task":..} or
 * {"message":..}, history trimmed to history_length; or res->result_text)
 * and res->state; the
 * verdict and other fields are left as they are. ONCE_ENOTFOUND,
 * ONCE_ETOMBSTONE, or a store error. */
int once__engine_send_answer(once__engine *e, const char *principal, const char *task_id,
                            const once_record *rec, int history_length, once_send_res *res);

/* --- deferred waits (await.c) ----------------------------------------------
 *
 * Call fn(arg, rec) once, from the engine's await thread, when the task
 * (principal, task_id) settles (terminal, interrupted, or a direct
 * Message), when `until` (monotonic ms) passes, or at release. Writes by
 * this process are seen at once, other replicas' by polling the store
 * every ~50 ms (a one-event probe after gen, then one load when it moved).
 * fn must not block: it hands the answer's work on and returns. rec is
 * the settled record a local write handed over (fn's to clear and free
 * with once_free), or NULL (found by polling, deadline, release).
 * gen and seq are the send's res->generation and res->wait_seq.
 * ONCE_OK; otherwise fn is never called: ONCE_EEXISTS (the task settled
 * here after the send: answer now), ONCE_EBUSY (max_waits, or
 * max_waits_per_principal for this principal, reached), ONCE_ECLOSED
 * (released or stopping), ONCE_ENOMEM, ONCE_EINVAL. */
typedef void (*once__engine_ready_fn)(void *arg, once_record *rec);
int once__engine_await(once__engine *e, const char *principal, const char *task_id, int64_t gen,
                      uint64_t seq, int64_t until, once__engine_ready_fn fn, void *arg);
/* Fire every registered wait now and refuse new ones (ONCE_ECLOSED); on
 * return every callback has returned. For a server that stops: call it
 * before freeing what the callbacks use. once__engine_free calls it. */
void once__engine_await_release(once__engine *e);

/* GetTask: *task = Task JSON (new reference), history trimmed to
 * history_length (-1 = all). ONCE_ENOTFOUND (also for another principal's
 * task and for direct-Message records), ONCE_ETOMBSTONE (*expired_at set),
 * or a store error. */
int once__engine_get(once__engine *e, const char *principal, const char *task_id,
                    int history_length, json_t **task, int64_t *expired_at);

/* CancelTask: moves the task to CANCELED with fence + 1 and stops its
 * worker. Idempotent on a canceled task. ONCE_EILLEGAL with *state for
 * other terminal states (-32002), ONCE_ENOTFOUND, ONCE_ETOMBSTONE. */
int once__engine_cancel(once__engine *e, const char *principal, const char *task_id,
                       json_t **task, once_state *state, int64_t *expired_at);

/* ListTasks over the caller's own tasks. page_token: NULL or a token from a
 * previous page (ONCE_EINVAL if malformed). *tasks = JSON array (new ref),
 * next_token = "" at the end. */
typedef struct once_list_req {
    const char *principal;
    const char *context_id;  /* NULL = any */
    once_state state;        /* ONCE_STATE_UNKNOWN = any */
    size_t page_size;        /* 1..100, 0 = 50 */
    const char *page_token;
    int history_length;
} once_list_req;
int once__engine_list(once__engine *e, const once_list_req *req, json_t **tasks,
                     char next_token[256]);

/* Counters for /metrics-style introspection and tests. */
typedef struct once__engine_stats {
    uint64_t registered, continued, replayed, refused, executed_turns, takeovers,
        fenced_writes, swept, purged, store_errors,
        overloaded,     /* sends answered ONCE_EOVERLOAD (queue full) */
        lease_lost,     /* turns stopped because their lease went elsewhere */
        sweeps,         /* takeover + retention passes finished */
        waits_shed,     /* blocking sends answered at once: wait limits reached */
        admit_waits;    /* sends that found the queue full and waited for room */
    uint64_t early_expired; /* expired before --retention because a memory: store
                             * passed its budget (memory:?max): by a sweep (then
                             * also in swept) or by the write that needed room */
    uint64_t queued;    /* turns waiting for a worker now (a gauge) */
    uint64_t parked;    /* turns parked now, holding no worker (a gauge) */
    uint64_t parks;     /* turns parked so far (once_work_park) */
    uint64_t waiting;   /* deferred blocking sends waiting now (a gauge) */
    uint64_t running;   /* turns whose executor runs now, on a worker or inline
                         * (a gauge; parked turns are not running) */
    /* --turn-workers and --max-queue (gauges that never move: set by
     * once__engine_new, so a dashboard can show the queue's fill) */
    uint64_t workers, queue_max;
    /* `refused` by reason; they sum to it (overloaded is apart) */
    uint64_t refused_not_found, refused_expired, refused_conflict, refused_busy,
        refused_terminal;
    /* Turns that ended, by the state they left the task in; `stopped`: the
     * engine was stopping, `lost`: the lease went elsewhere or the turn
     * ended with the task still running. Of executed_turns (started). */
    uint64_t turns_completed, turns_failed, turns_canceled, turns_rejected,
        turns_input_required, turns_auth_required, turns_stopped, turns_lost;
    uint64_t leases_released; /* given back when the engine stopped */
    uint64_t inline_turns;    /* of executed_turns: run on the thread that
                               * registered or continued the task
                               * (ONCE_EXECUTOR_INLINE) */
    /* journal.c: tasks whose replay and refusal counts were written by a
     * journal-only update; tasks whose counts were dropped unwritten (more
     * tasks than the table holds) */
    uint64_t journal_flushes, journal_dropped;
    /* A memory: store's own count of what it holds (gauges; 0 on other
     * stores): bytes as its budget counts them, the budget (0: none),
     * tasks, tombstones, and of the tasks the finished ones held deflated
     * (cold). Read from the store by once__engine_get_stats. */
    uint64_t mem_bytes, mem_max_bytes, mem_tasks, mem_tombstones, mem_cold;
    /* feed.c: the store's change feed is up now (a gauge: 1 or 0), times
     * it went down, and keys it told of */
    uint64_t feed_up, feed_lost, feed_keys;
} once__engine_stats;
void once__engine_get_stats(once__engine *e, once__engine_stats *out);

/* The engine's counters (the same ones once__engine_get_stats and
 * once/admin/stats read) and push delivery counters as Prometheus text
 * (core/metrics.h), appended to t. */
struct once__mtext;
void once__engine_metrics(once__engine *e, struct once__mtext *t);

/* Whether the store answers now: one read of a key no task can have.
 * ONCE_OK, or the store's error (ONCE_ESTORE, ONCE_EBUSY, ...). For
 * readiness probes; not counted as a store failure of the engine's. */
int once__engine_ping(once__engine *e);

/* Run one takeover + retention pass now (tests; the sweeper calls it). */
int once__engine_sweep_once(once__engine *e);

/* --- following a task's events (follow.c; SSE streaming) ------------------
 *
 * Events of (principal, task_id) with generation > after, ascending, at most
 * max (0 = all): the A2A StreamResponse payloads each mutation appended in
 * the same atomic write as its state change. A missing key (or another
 * principal's task) yields an empty list. *out is the caller's
 * (once_event_list_clear). ONCE_ECLOSED once the engine stops. */
int once__engine_events_after(once__engine *e, const char *principal, const char *task_id,
                             int64_t after, size_t max, once_event_list *out);

/* The task's current generation and state: one record read (what GetTask
 * costs). ONCE_ENOTFOUND (also for another principal's task and for a
 * direct-Message record, as GetTask), ONCE_ETOMBSTONE, or a store error. */
int once__engine_task_head(once__engine *e, const char *principal, const char *task_id,
                          int64_t *generation, once_state *state);

/* Block until the task has an event after generation gen, timeout_ms
 * passes, or the engine stops. Woken at once by this process's writes;
 * other replicas' writes are seen by polling the store every ~50 ms with a
 * one-event probe (an index lookup: the record is never loaded). A task
 * that does not exist simply never moves. Returns ONCE_OK, ONCE_ETIMEDOUT,
 * ONCE_ECLOSED (engine stopping) or a store error (retryable). */
int once__engine_wait_generation(once__engine *e, const char *principal, const char *task_id,
                                int64_t gen, int64_t timeout_ms);
/* A waiter's own reason to stop early (a stream's client went away):
 * fn(arg) is asked at every poll of the wait, about every 50 ms, and 1
 * ends it with ONCE_ECANCELED. */
typedef struct once__wait_stop {
    int (*fn)(void *arg);
    void *arg;
} once__wait_stop;
/* once__engine_wait_generation that also ends when stop says so (NULL:
 * never). */
int once__engine_wait_generation_or(once__engine *e, const char *principal, const char *task_id,
                                    int64_t gen, int64_t timeout_ms, const once__wait_stop *stop);
/* Watch a task without a thread (the SSE hub's streams): fn(arg) is
 * called after every write this process makes to (principal, task_id),
 * for every update of it the store's change feed tells of, and for every
 * task when the feed goes up or down, under the engine's lock, so it must
 * not block nor call the engine: it only marks its follower due. While
 * once__engine_follow_poll_ms says so, other replicas' writes are not told
 * and the watcher polls for them (once__engine_events_after). Register
 * before the first read, or a write in between is seen only at the next
 * poll.
 * *out is removed with once__engine_watch_remove (after which fn is never
 * called again), before once__engine_free. ONCE_OK, ONCE_EINVAL (a key too
 * long), ONCE_ENOMEM, ONCE_ECLOSED (the engine stops). */
typedef struct once__engine_watch once__engine_watch;
int once__engine_watch_add(once__engine *e, const char *principal, const char *task_id,
                           void (*fn)(void *arg), void *arg, once__engine_watch **out);
/* Remove and free w; NULL ok. */
void once__engine_watch_remove(once__engine *e, once__engine_watch *w);
/* How often a follower of a task must read the store to see other
 * replicas' writes: 0 when it is told of them (a watch, a wait), else
 * the interval (while the store's change feed is down, or for a store
 * that others share and that has none). When the feed goes up or down,
 * every watch and wait is told, and asks again. */
int64_t once__engine_follow_poll_ms(once__engine *e);

/* --- writes by a worker outside this engine's turns (external.c) ---------
 *
 * A worker that holds a task's fence without being one of this engine's
 * turns (a helper process a turn started and handed ONCE_TASK_ID and
 * ONCE_FENCE, writing to the shared store from elsewhere) writes by the
 * turn's rule: a CAS on the stored record that first checks the stored
 * fence is the writer's. A stale fence changes nothing anywhere (record,
 * events). The lease is left to the replica running the turn.
 *
 * Both structs belong to the caller: filled before the call (write) or by
 * it (result), never kept by the engine.
 */
typedef struct once_external_write {
    const char *principal;     /* NULL = "anonymous" */
    const char *task_id;
    int64_t fence;             /* the fence the writer holds (>= 1) */
    const char *artifact_json; /* an Artifact (docs/protocol.md section 4) */
    int append, last_chunk;    /* as once_work_artifact */
} once_external_write;

typedef struct once_external_result {
    int64_t generation;        /* ONCE_OK: the generation of the write's event */
    int64_t stored_fence;      /* the fence found in the store (0 if none read) */
    once_state state;          /* the task's state when it was read */
} once_external_result;

/* Publish one artifact while the task is submitted or working. ONCE_OK,
 * ONCE_EFENCED (the stored fence is not w->fence), ONCE_EILLEGAL (the task
 * is not working, or is a direct Message), ONCE_EINVAL (bad arguments or a
 * malformed artifact), ONCE_ENOTFOUND / ONCE_ETOMBSTONE, or a store error.
 * res may be NULL. */
int once__engine_external_artifact(once__engine *e, const once_external_write *w,
                                  once_external_result *res);

#endif
