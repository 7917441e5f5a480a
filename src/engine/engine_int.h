/*
 * engine_int.h -- what the engine's files share and nothing else sees: the
 * engine struct, the turn (one executor run of one task on this replica), the
 * one-write helper every mutation goes through, the Task JSON builders and
 * the internal dispatch / notify / wait entry points.
 *
 * Invariants kept across the engine:
 *   - every change of a stored record is one CAS (once__write) carrying its
 *     events, numbered generation + 1, + 2, ..., in the same atomic write;
 *   - a write made on behalf of a turn first checks that the stored fence is
 *     the turn's fence (the CAS on version then guarantees it did not move);
 *   - a record whose state is interrupted or terminal holds no lease;
 *   - all times come from e->clock; waits use the monotonic clock.
 */
#ifndef ONCE_ENGINE_INT_H
#define ONCE_ENGINE_INT_H

#include <pthread.h>
#include <stddef.h>

#include "core/condwait.h"
#include "core/heap.h"
#include "core/log.h"
#include "engine/engine.h"

/*
 * A principal with turns on this replica's queue or on its workers: what
 * admission (its share of the queue) and a worker's pick (the fewest turns
 * on workers first) are fair by (dispatch.c). On e->tenants; every field
 * under e->mu; freed when both counts are back to 0. Turns run on the
 * thread that dispatched them (once__dispatch_here, _born) are not
 * counted: they hold no worker and no queue slot.
 */
typedef struct once__tenant {
    char principal[ONCE_PRINCIPAL_MAX + 1];
    int queued;                 /* its turns on the queue */
    int running;                /* its turns on a worker */
    struct once__tenant *next;
} once__tenant;

/*
 * One turn: this replica runs the executor once for (principal, task_id)
 * under fence `fence`. Allocated by once__dispatch, freed by the worker that
 * ran it (or by engine shutdown when it never ran).
 *
 * Locking: the key, fence, resumed and id never change after dispatch.
 * `canceled` is an atomic flag (set by cancel, by the heartbeat when it sees
 * the fence moved, by a takeover of the same key); read without the lock.
 * `qnext` and `anext` (queue and active-list links) and `running` are
 * changed only under e->mu.
 */
typedef struct once__turn {
    uint64_t id;
    char principal[ONCE_PRINCIPAL_MAX + 1];
    char task_id[ONCE_ID_MAX + 1];
    int64_t fence;
    int resumed;
    char traceparent[ONCE_TRACEPARENT_LEN + 1]; /* the W3C trace context of the request that
                                 * started the turn ("" for a takeover) */
    int canceled;               /* __atomic */
    int running;                /* popped by a worker, or parked (the heartbeat renews
                                 * only these) */
    int64_t park_ms;            /* the turn's run() asked to be parked this long
                                 * (once_work_park); 0: it ended */
    int parked;                 /* on e->parked, until park.key (monotonic ms) */
    once__heap_node park;
    int parks;                  /* times in a row this turn was parked and ran again */
    json_t *task;               /* the task tree of rec (NULL: none), so the turn need
                                 * not parse it again */
    once_record *rec;           /* the record the dispatching write stored (NULL: none),
                                 * so the turn need not load it again; both owned by the
                                 * turn, changed under e->mu while queued, the worker's
                                 * alone once popped */
    const once_event *born;     /* rec is a registration not stored yet: its event
                                 * (once__dispatch_born) */
    int born_stored;            /* the turn's first commit stored it (or held it) */
    int born_rc;                /* or the error that commit met */
    int hold;                   /* born: hold the first commit's write (held.c) */
    int held_only;              /* ... and write nothing that cannot be held */
    once__held *held;           /* ... here, for the dispatching thread to take */
    once_record *settled;       /* a turn run on the registering thread: where it leaves
                                 * the record as it last wrote or read it (untouched when
                                 * it stopped before reading one) */
    once__tenant *tenant;       /* counted there while queued or on a worker (NULL: not
                                 * counted: run in place, or no memory for the tenant) */
    struct once__turn *qnext;   /* queue of turns waiting for a worker, oldest first */
    struct once__turn *anext;   /* every turn this engine holds (queued or running) */
} once__turn;

/*
 * A blocked SendMessage waiting for its task to change. Lives on the waiting
 * thread's stack, linked into e->waiters under e->mu; notify sets `fired`
 * and signals `cv` under e->mu.
 */
typedef struct once__waiter {
    const char *principal;
    const char *task_id;
    int fired;
    pthread_cond_t cv;
    struct once__waiter *next;
} once__waiter;

/* A deferred wait, and a principal's count of them (await.c). */
typedef struct once__await once__await;
typedef struct once__await_owner once__await_owner;

/* Watches on tasks (follow.c, once__engine_watch_add): a hash table of
 * lists by key, so a local write finds its key's watches without walking
 * every stream's. Under e->mu. */
#define ONCE__WATCH_BUCKETS 1024

/* Which task a local write settled last, per hash of its key (await.c),
 * under e->mu: a wait registered after its task settled here finds it,
 * and a slot written by another key since the send (seq past the send's)
 * says the registration cannot tell, so it probes the store at once. */
#define ONCE__SETTLED_SLOTS 64
typedef struct once__settled {
    uint64_t seq;               /* e->settle_seq when written; 0: never */
    int told;                   /* written by a tell of the change feed, not a settle */
    char principal[ONCE_PRINCIPAL_MAX + 1];
    char task_id[ONCE_ID_MAX + 1];
} once__settled;

/*
 * The engine. Everything in `cfg` (defaults filled in), clock, rng, ex,
 * replica_id and secret is set by once__engine_new and read-only afterwards.
 * e->mu guards the queue, the parked turns, the active list, the waiter list, `stopping`,
 * `started` and `next_turn_id`. `inflight` counts the calls in progress (sends,
 * follow calls, held writes not landed), so stop can wait for blocked ones
 * to leave; it is only touched with __atomic builtins (once__engine_enter),
 * so a call takes no engine lock to be counted. Condition variables
 * (CLOCK_MONOTONIC):
 *   work_cv    a turn was queued or parked, a parked turn was canceled, or
 *              stopping;
 *   cancel_cv  a turn was canceled, or stopping (sleeping executors and
 *              background threads wait on it).
 * `stats` fields are only touched with __atomic builtins.
 */
struct once__engine {
    once__engine_config cfg;
    once_store *store;
    const once_clock *clock;
    const once_rng *rng;
    const once_executor *ex;
    char replica_id[ONCE_OWNER_MAX + 1];
    char *secret;               /* hex text from store meta; the HMAC key */

    pthread_mutex_t mu;
    pthread_cond_t work_cv;
    pthread_cond_t cancel_cv;
    pthread_cond_t room_cv;     /* a worker took a queued turn (admission waits) */
    once__turn *qhead, *qtail;
    int nqueued;                /* turns on the queue (cfg.max_queue bounds new ones) */
    once__tenant *tenants;      /* principals with turns queued or on workers */
    once__turn *active;         /* newest first: ids descend along anext */
    once__heap parked;          /* parked turns, by when they are due */
    once__waiter *waiters;
    struct once__engine_watch *watches[ONCE__WATCH_BUCKETS]; /* follow.c */
    once__await *awaits;        /* deferred waits (await.c) */
    once__await *await_keys[ONCE__WATCH_BUCKETS];      /* the same, by hash of key */
    once__await_owner *await_owners[ONCE__WATCH_BUCKETS]; /* their count, by principal */
    int nawaits;
    int awaits_closed;          /* once__engine_await_release ran: refuse new ones */
    int await_quit;
    int await_started;
    pthread_t await_thread;
    pthread_cond_t await_cv;    /* a deferred wait became ready, or was added */
    int await_asleep;           /* the await thread waits on await_cv until await_wake */
    int await_kick;             /* a wait was added: look again before sleeping */
    int64_t await_wake;         /* monotonic ms; meaningful while await_asleep */
    uint64_t settle_seq;        /* local writes of settled records so far (__atomic reads) */
    once__settled settled[ONCE__SETTLED_SLOTS]; /* the last settle per hash of key */
    uint64_t next_turn_id;
    int stopping;               /* also read with __atomic outside the lock */
    int stopped;                /* once__engine_stop ran (it runs once) */
    int started;
    int64_t started_at;         /* once__now at start (the replica row's); set before
                                 * the heartbeat thread exists */
    int inflight;               /* __atomic only: once__engine_enter / _leave */

    pthread_t *workers;
    int nworkers;
    pthread_t heartbeat;
    int heartbeat_started;
    pthread_t sweeper;
    int sweeper_started;
    pthread_t feeder;           /* feed.c: the store's change feed */
    int feeder_started;
    int feed_live;              /* __atomic: the feed tells of every update now */
    uint64_t told_all_seq;      /* under e->mu: settle_seq when every key was told */

    once__engine_stats stats;
    int64_t takeover_after;     /* __atomic: engine-clock ms before which the sweeper takes nothing over */
    struct once__push *push;    /* push delivery (push_int.h); NULL until setup/start */
    struct once__journal *journal; /* __atomic: replay/refusal counts (journal.c); NULL
                                    * until the first */
};

#define ONCE__STAT(e, field) once__stat_add((e), offsetof(once__engine_stats, field))
#define ONCE__STAT_AT(field) offsetof(once__engine_stats, field)

/* Count one in the stats field at byte offset `at` (ONCE__STAT_AT); atomic,
 * like every stats write. */
static inline void once__stat_add(once__engine *e, size_t at)
{
    __atomic_fetch_add((uint64_t *)(void *)((char *)&e->stats + at), 1, __ATOMIC_RELAXED);
}

/* Count one in the field that table `at` (n slots of ONCE__STAT_AT offsets)
 * names for value i, or in `other` where it names none. A slot left 0 names
 * none: offset 0 is `registered`, which no such table counts. */
static inline void once__stat_pick(once__engine *e, const size_t *at, size_t n, size_t i,
                                   size_t other)
{
    once__stat_add(e, i < n && at[i] != 0 ? at[i] : other);
}

/* --- engine.c -------------------------------------------------------------- */

int64_t once__now(const once__engine *e);
int once__stopping(const once__engine *e);
/* For the engine's periodic threads (heartbeat, sweeper): sleep ms, waking
 * early when the engine stops. Returns 1 if the engine is stopping. */
int once__engine_pause(once__engine *e, int64_t ms);
/* Count a call in e->inflight: ONCE_OK, or ONCE_ECLOSED (counted in nothing)
 * once the engine stops. once__engine_leave ends what enter counted. */
int once__engine_enter(once__engine *e);
void once__engine_leave(once__engine *e);
/* Count store failures in the stats (and note when the last one was seen);
 * returns rc. */
int once__store_rc(once__engine *e, int rc);
/* Write this replica's heartbeat row (replicas.c): leases = turns running
 * now, or 0 and stopped with stopped = 1. A store without
 * ONCE_STORE_REPLICAS is skipped; a failed write waits for the next beat. */
void once__replica_beat(once__engine *e, int stopped);
/* Load a key's record for a pass of the engine's own (takeover, journal
 * flush, deferred wait): ONCE_OK with *rec, ONCE_ENOTFOUND when there is
 * none to act on (missing or a tombstone), or the store's error, counted as
 * once__store_rc counts it. */
int once__load_found(once__engine *e, const char *principal, const char *task_id,
                     once_record *rec);
/* Takeovers wait one lease period after this replica started and after it
 * last saw the store fail. No lease can be renewed while the store is away
 * (and a replica that just started cannot know whether it was), so a lease
 * that ran out then says nothing about its owner: a whole lease period
 * gives every live owner's heartbeat time to renew. hold starts the
 * period (engine clock); held says whether it still runs. */
void once__hold_takeovers(once__engine *e);
int once__takeovers_held(const once__engine *e);

/* --- feed.c ---------------------------------------------------------------- */

/* Followers poll the store this often for other replicas' writes while the
 * engine has no change feed that tells of them. */
#define ONCE__POLL_MS 50
/* once__engine_follow_poll_ms (engine.h) is 0 when a follower need not
 * read the store on its own (its change feed is up), else ONCE__POLL_MS;
 * every follower is told when the feed goes up or down, and asks again. */
/* Start the feed thread if the store has a change feed. */
int once__feed_start(once__engine *e);
/* Join it (after `stopping` is set). */
void once__feed_stop(once__engine *e);

/* --- await.c -------------------------------------------------------------- */

/* A key of a followed task, visited under e->mu (the shared poller's
 * round: feed.c). */
typedef void (*once__key_fn)(void *arg, const char *principal, const char *task_id);

/* 1 if a blocking send stops waiting at r: terminal, interrupted, or a
 * direct Message. */
int once__record_settled(const once_record *r);
/* Under e->mu: r was just written by this process. */
void once__await_notify(once__engine *e, const once_record *r);
/* Under e->mu: another writer may have moved the key's task (the change
 * feed said so), or any task (principal NULL: the feed came up or went
 * down): its waits probe the store at once, and a wait registered after
 * this by a send that looked before it probes at once too. */
void once__await_told(once__engine *e, const char *principal, const char *task_id);
/* Under e->mu: fn on every deferred wait's key. */
void once__await_each_key(once__engine *e, once__key_fn fn, void *arg);
/* How many settled records this process has written so far: a send takes
 * it before its first look at the task (res->wait_seq), so its wait can
 * tell whether the task settled here since. */
uint64_t once__await_seq(once__engine *e);
/* FNV-1a over principal, NUL, task_id: the hash that places a key in the
 * settled slots and the watch buckets. */
uint32_t once__key_hash(const char *principal, const char *task_id);

/* --- follow.c -------------------------------------------------------------- */

/* Under e->mu: fn on every watch's key (duplicates included). */
void once__follow_each_key(once__engine *e, once__key_fn fn, void *arg);

/* Under e->mu: the key's task may have moved (a write by this process, or
 * one the change feed told of); call its watches. principal NULL: every
 * watch (the feed came up or went down). */
void once__follow_notify(once__engine *e, const char *principal, const char *task_id);

/* --- journal.c ------------------------------------------------------------- */

/* Add to next (the takeover's write over cur) the takeover entry. */
int once__journal_takeover(once__engine *e, const once_record *cur, once_record *next);
/* The turn (this replica, fence, resumed, began at) writes next over cur:
 * add its start entry unless started, and its end when next ends it. */
int once__journal_turn(once__engine *e, int64_t fence, int resumed, int64_t began,
                       int started, const once_record *cur, once_record *next);
/* A send answered from rec with verdict v: count a replay or a refusal for
 * the next flush (nothing is written now). */
void once__journal_send(once__engine *e, const once_record *rec, once_verdict v, int replayed);
/* A turn under fence found stored (a newer fence) and wrote nothing (lease:
 * its lease renewal was refused, else a write of its output): note it for
 * the next flush. */
void once__journal_fenced(once__engine *e, const once_record *stored, int64_t fence, int lease);
/* A lease renewal under fence was refused: note it when the stored fence
 * moved (one read; a turn that just ended its task is not noted). */
/* A webhook attempt for the task's journal (push_deliver.c): no write. */
void once__journal_delivery(once__engine *e, const char *principal, const char *task_id,
                            const char *config_id, int64_t generation, int status,
                            const char *result);
void once__journal_lease_refused(once__engine *e, const char *principal, const char *task_id,
                                 int64_t fence);
/* Write the counts and notes held so far, one journal-only CAS per task. */
int once__journal_flush(once__engine *e);
/* The task was written (here, or elsewhere as the change feed tells): the
 * counts waiting on its lease may be flushed at the next pass. Not under
 * e->mu. */
void once__journal_touch(once__engine *e, const char *principal, const char *task_id);
void once__journal_free(once__engine *e);

/* --- write.c --------------------------------------------------------------- */

/* Set next->state and what follows from it: finished_at (set when it
 * becomes terminal), the lease (cleared when interrupted or terminal). */
void once__set_state(once_record *next, once_state state, int64_t now);
/* Start the record of a write that moves the task to `state` as a new
 * holder (a cancel, a continuation): a deep copy of cur with that state
 * set and the fence one past cur's, so a turn still holding the old fence
 * can no longer write. next is the caller's to clear once this succeeded. */
int once__record_advance(once_record *next, const once_record *cur, once_state state,
                         int64_t now);

/* Bytes of a record's variable parts (what max_task_bytes bounds). */
int64_t once__record_bytes(const once_record *r);
/* ONCE_ERANGE if writing next (over cur; NULL for a create) would grow the
 * record past cfg.max_task_bytes (a final write has a small reserve). */
int once__size_check(const once__engine *e, const once_record *cur, const once_record *next);

/* Commit next (a modified copy of cur) as a CAS against cur->version, with
 * one event `payload` (may be NULL: no event, generation unchanged). Sets
 * next->version, updated_at and generation. payload must already carry
 * generation cur->generation + 1. Wakes local waiters on success. Returns
 * ONCE_ERANGE (nothing written) past max_task_bytes, else the store's
 * answer (ONCE_ECONFLICT: re-load and retry). */
int once__write(once__engine *e, const once_record *cur, once_record *next, const char *payload);
/* once__write with the events ev[0..nev) (numbered cur->generation + 1 ..
 * + nev, none NULL): several changes of one turn committed as one. */
int once__write_events(once__engine *e, const once_record *cur, once_record *next,
                       const once_event *ev, size_t nev);

/* Wake this process's waiters on r's key (r as just written). */
void once__notify(once__engine *e, const once_record *r);
/* Link w (the caller's, on its stack) into e->waiters for the key, so that
 * a local write to it signals w->cv; register before looking at the store,
 * or a write in between is only seen at the next poll. Unlink with
 * once__waiter_remove. */
int once__waiter_add(once__engine *e, once__waiter *w, const char *principal, const char *task_id);
void once__waiter_remove(once__engine *e, once__waiter *w);

/* --- taskjson.c ------------------------------------------------------------ */

/* Compact JSON text in a once_malloc'd buffer, or NULL (no memory). */
char *once__json_text(const json_t *j);
/* Parse stored JSON text (an object); NULL if it is not one. */
json_t *once__json_parse(const char *text);

/* A fresh Task: {id, contextId, status{state,timestamp}, history:[msg]}.
 * msg is shared (a reference taken; see taskjson.c): no one may change it
 * after, nor the messages and artifacts handed to the functions below. */
json_t *once__task_new(const char *task_id, const char *context_id, once_state state,
                       int64_t now, const json_t *msg);
/* status = {state, timestamp[, message]}; the message (if any) is also
 * appended to history. msg is shared. */
int once__task_set_status(json_t *task, once_state state, const json_t *msg, int64_t now);
int once__task_append_history(json_t *task, const json_t *msg);
/* Add or extend an artifact; art (or, appending, its parts) is shared. */
int once__task_artifact(json_t *task, const json_t *art, int append);

/* A copy of msg (an object) with taskId / contextId set (NULL: unchanged);
 * messageId minted and role set to `role` when absent. NULL on ENOMEM. */
json_t *once__message_fill(const json_t *msg, const char *task_id, const char *context_id,
                           const char *role, const once_rng *rng);
/* An agent Message holding one text part. */
json_t *once__agent_text(const char *text, const char *task_id, const char *context_id,
                         const once_rng *rng);

/* The stored outcome as the client sees it: a Task with its generation and
 * history trimmed to history_length (-1 = all, 0 = none); for a Message
 * record the Message. NULL if the stored text is not an object. */
json_t *once__task_out(const once_record *rec, int history_length);
/* {"task": ...} or {"message": ...} for the record (new reference). */
json_t *once__send_result(const once_record *rec, int history_length);
/* The answer for rec into res: res->result_text when res->text_result asks
 * for text and the whole history is asked for (built from the stored text,
 * no parse), else res->result. ONCE_OK or ONCE_ENOMEM. */
int once__send_answer_of(const once_record *rec, int history_length, once_send_res *res);

/* StreamResponse payloads (compact text, once_malloc'd, NULL on ENOMEM). */
char *once__ev_task(const json_t *task, int64_t generation);
/* once__ev_task of the task whose text is task_json, spliced from that
 * text (no tree); NULL when the task has metadata of its own (build it
 * with once__ev_task) or memory ran out. */
char *once__ev_task_text(const char *task_json, int64_t generation);
char *once__ev_message(const json_t *msg, int64_t generation);
/* 1 if s goes between JSON quotes as it is (the characters of an ID). */
int once__plain_id(const char *s);
char *once__ev_status(const json_t *task, int64_t generation);
char *once__ev_artifact(const json_t *task, const json_t *artifact, int append, int last_chunk,
                        int64_t generation);

/* --- dispatch.c ------------------------------------------------------------ */

/* Queue a turn for (principal, task_id) under fence. Any older turn this
 * engine holds for the same key is canceled (its fence is stale now). */
int once__dispatch(once__engine *e, const char *principal, const char *task_id, int64_t fence,
                   int resumed);
/* once__dispatch of a turn that starts from the record `rec` the
 * dispatching write just stored (copied) and its task tree `task` (stolen,
 * whatever the outcome). */
int once__dispatch_task(once__engine *e, const once_record *rec, json_t *task);
/* As once__dispatch_task, but for a turn the executor said finishes at
 * once (once__turn_quick, ONCE_EXECUTOR_INLINE): run it here, on this
 * thread, and leave its last record in *out: 1 (the caller clears *out), or
 * 0 when the turn was queued or ended before it read a record (*out empty).
 * Takes task over. */
int once__dispatch_here(once__engine *e, const once_record *rec, json_t *task, once_record *out);
/* The registration rec (not stored; its event ev) of a blocking send: when
 * the executor batches its writes and says the turn of msg finishes at once,
 * run the turn here before anything is stored, so that the turn's first
 * commit creates the record with the registration and the turn's writes in
 * one store write. A batching executor touches nothing outside the process
 * between commits (ONCE_EXECUTOR_BATCH), so a turn whose create loses to
 * another registration of the task leaves no trace. Returns 0 when it did
 * not run (task and *out untouched); 1 when it ran and its create was
 * answered: *rc ONCE_OK and *out the record as the turn left it (the caller
 * clears it), or *rc the create's error (ONCE_EEXISTS, ONCE_ETOMBSTONE:
 * another registration won, the send loads the task again; a store error);
 * 2 when it ran and stored nothing (stopping, no memory): the caller
 * registers as without it. Takes task over unless it returns 0.
 * held non-NULL (and once__held_can): the create is not made but left in
 * *held (held.c) when the turn gets that far; 1 with *rc ONCE_OK then
 * means "ready to be written", and *out is the record the write holds.
 * held_only: a create that cannot be held is not written either: *rc is
 * ONCE__EAGAIN (the caller may not wait for a write; nothing is left). */
int once__dispatch_born(once__engine *e, const once_record *rec, json_t *task,
                        const once_event *ev, const json_t *msg, once_record *out, int *rc,
                        once__held **held, int held_only);
/* held.c: 1 if the store can start a held write (once_store_can_start);
 * _rec: a held write of rec. */
int once__held_can(const once__engine *e);
int once__held_can_rec(const once__engine *e, const once_record *rec);
/* A held write of rec (copied) and ev[0..nev) (payloads copied), counted in
 * e->inflight until started and landed, or dropped. ONCE_ERANGE past
 * ONCE__HELD_EVENTS events. */
#define ONCE__HELD_EVENTS 9
/* work.c: count a turn that ended with rec in turns_completed, ... */
void once__count_turn_end(once__engine *e, const once_record *rec);
int once__held_new(once__engine *e, once_record *rec, const once_event *ev, size_t nev,
                   once__held **out);
/* 1 if the executor says the turn of the user message msg on the task of
 * rec finishes at once (see ONCE_EXECUTOR_INLINE). */
int once__turn_quick(once__engine *e, const once_record *rec, const json_t *msg);
/* Flag every local turn of the key as canceled and wake its sleeps. */
void once__cancel_local(once__engine *e, const char *principal, const char *task_id);
/* 1 if the queue holds cfg.max_queue turns or more: sends that would start
 * a turn answer ONCE_EOVERLOAD, the sweeper takes nothing over. */
int once__queue_full(once__engine *e);
/* 1 if the queue has room for one more turn of principal now: fewer than
 * cfg.max_queue turns queued, and fewer than cfg.max_queue_per_principal
 * of them principal's. */
int once__queue_room(once__engine *e, const char *principal);
/* 1 if there is room for one more turn of principal now, or within
 * cfg.admit_wait_ms (a worker takes a queued turn); 0 when there stays
 * none (or the engine stops). Counts admit_waits when it had to wait. */
int once__queue_admit(once__engine *e, const char *principal);
/* 1 if a turn of the key waits on this replica's queue. */
int once__queue_holds(once__engine *e, const char *principal, const char *task_id);
/* Renew this replica's lease on the key under fence (the store's renew
 * slot): ONCE_OK, ONCE_EFENCED / ONCE_ENOTFOUND (the lease went elsewhere
 * or the task ended), or a store error. */
int once__renew_lease(once__engine *e, const char *principal, const char *task_id,
                      int64_t fence);
int once__dispatch_start(once__engine *e);
void once__dispatch_stop(once__engine *e);

/* --- work.c ---------------------------------------------------------------- */

/* Run one turn: start it (SUBMITTED -> WORKING), call the executor, then
 * finish it (complete / fail) if run() left it running. */
void once__run_turn(once__engine *e, once__turn *t);

/* --- push_deliver.c -------------------------------------------------------- */

/* Start / stop the delivery threads (no-op without ONCE_STORE_PUSH). */
int once__push_start(once__engine *e);
void once__push_stop(once__engine *e);
/* Free the push state (push.c; once__engine_free: after once__push_stop
 * joined the threads and nothing can read the counters any more). */
void once__push_free_state(once__engine *e);
/* A task of this replica changed: wake idle delivery threads. */
void once__push_kick(once__engine *e);

/* --- logs.c ---------------------------------------------------------------- */

/* One log line each (core/log.h), naming the task. A takeover names the
 * replica whose lease expired (lost, the record as found) and the new
 * fence (taken, as written); resumed_here: the takeover dispatched a turn
 * here (else the task waits for input). */
void once__log_takeover(const once__engine *e, const once_record *lost, const once_record *taken,
                        int64_t now, int resumed_here);
/* A write under fence `held` refused; stored: the fence found (0: unknown). */
void once__log_fenced(const char *task_id, int64_t held, int64_t stored);
void once__log_store_error(int rc);
void once__log_push_failure(const char *task_id, const char *config_id, int64_t generation,
                            long status, int64_t attempt, const char *error);

/* --- sweep.c --------------------------------------------------------------- */

int once__sweeper_start(once__engine *e);
/* The tasks a store with a memory budget expired early since the last
 * call, added to e's early_expired; 1 with *b filled if e's store has
 * ONCE_STORE_BUDGET, else 0 (sweep.c). */
int once__budget_count(once__engine *e, once_budget *b);

/* --- send.c ---------------------------------------------------------------- */

/* Block until the task is terminal or interrupted (or a Message), the
 * deadline (monotonic ms) passes, or the engine stops. *rec receives the
 * last record read (caller clears it). Returns ONCE_OK or the load error. */
int once__wait(once__engine *e, const char *principal, const char *task_id, int64_t deadline,
               once_record *rec, once_tombstone *tomb);

#endif /* ONCE_ENGINE_INT_H */
