/*
 * dispatch.c -- the worker pool, the bounded turn queue and the lease
 * heartbeat.
 *
 * A turn is queued by whoever won the write that gave this replica the
 * lease (register, continuation, takeover). A worker takes the oldest
 * queued turn of the principal with the fewest turns on workers now (one
 * principal alone: FIFO), so a principal's backlog waits behind the other
 * principals' turns, not in front of them; admission gives each principal
 * at most its share of the queue (once__queue_room). The worker runs the
 * turn (work.c), which first renews the lease under the turn's fence: the
 * lease is taken when a turn starts, not while it waits. The heartbeat
 * renews the leases of running turns only, with the store's lease-only
 * write (renew), whose cost does not depend on the task's size; when the
 * store says the fence or owner moved (cancel, takeover elsewhere) it flags
 * the turn canceled so the executor stops.
 *
 * A queued turn holds nothing but the lease its registering write set.
 * If it waits longer than that lease, any replica may take the task over
 * (this one's sweeper leaves keys it already holds queued alone); when the
 * turn finally starts, its renewal meets the new fence and it is dropped.
 *
 * Parked turns (once_work_park): a turn whose run() asked to be parked
 * leaves its worker with the task still WORKING and its lease kept: it
 * stays on e->active as running (the heartbeat renews it and a cancel or a
 * lost lease flags it) and waits on e->parked, a min-heap (core/heap.h) on the time it is
 * due, holding no thread. Workers wait for the queue or the earliest due
 * time; a due turn goes to the queue's tail like any other (so a parked
 * principal's re-runs take their turn behind the others'), and runs again
 * with once_work_parks() one higher. A parked turn that is canceled or
 * loses its lease is due at once and runs once more with once_work_canceled()
 * already true (work.c), so its executor can undo what it started outside;
 * a newer dispatch of its key takes its place instead, as for a queued turn.
 *
 * Invariants: a turn is on e->active from dispatch until its worker is done
 * with it (or shutdown frees it); a key has at most one turn on the queue
 * or parked
 * (a newer dispatch of the key replaces the queued one in place); e->queued
 * counts the queue, and each tenant its principal's turns on the queue and
 * on workers; once `stopping` is set no new turn is accepted and
 * queued turns never run (their leases expire and any replica takes them
 * over).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/str.h"
#include "engine/engine_int.h"

#define BEAT_BATCH 32
#define RETRY_BEAT_MS 100

static int same_key(const once__turn *t, const char *principal, const char *task_id)
{
    return strcmp(t->task_id, task_id) == 0 && strcmp(t->principal, principal) == 0;
}

/* --- parked turns: e->parked, by when they are due (caller holds e->mu) --- */

#define TURN_OF(node) ((once__turn *)(void *)((char *)(node) - offsetof(once__turn, park)))

/* Park t until `until`; ONCE_ENOMEM: no room in the heap. */
static int park_locked(once__engine *e, once__turn *t, int64_t until)
{
    t->park.key = until;
    if (once__heap_add(&e->parked, &t->park) != ONCE_OK)
        return ONCE_ENOMEM;
    t->parked = 1;
    __atomic_store_n(&e->stats.parked, (uint64_t)e->parked.n, __ATOMIC_RELAXED);
    return ONCE_OK;
}

/* Take t (parked) off the heap. */
static void unpark_locked(once__engine *e, once__turn *t)
{
    once__heap_remove(&e->parked, &t->park);
    t->parked = 0;
    __atomic_store_n(&e->stats.parked, (uint64_t)e->parked.n, __ATOMIC_RELAXED);
}

/* Flag t canceled; a parked t falls due at once (its executor hears of it). */
static void flag_locked(once__engine *e, once__turn *t)
{
    __atomic_store_n(&t->canceled, 1, __ATOMIC_RELEASE);
    if (t->parked) {
        t->park.key = 1;
        once__heap_fix(&e->parked, &t->park);
        pthread_cond_signal(&e->work_cv);
    }
}

/* Caller holds e->mu. */
static void cancel_locked(once__engine *e, const char *principal, const char *task_id,
                          uint64_t except_id)
{
    int any = 0;
    for (once__turn *t = e->active; t != NULL; t = t->anext) {
        if (t->id != except_id && same_key(t, principal, task_id)) {
            flag_locked(e, t);
            any = 1;
        }
    }
    if (any)
        pthread_cond_broadcast(&e->cancel_cv);
}

void once__cancel_local(once__engine *e, const char *principal, const char *task_id)
{
    pthread_mutex_lock(&e->mu);
    cancel_locked(e, principal, task_id, 0);
    pthread_mutex_unlock(&e->mu);
}

/* Caller holds e->mu. The queued turn of the key, or NULL. */
static once__turn *queued_locked(once__engine *e, const char *principal, const char *task_id)
{
    for (once__turn *t = e->qhead; t != NULL; t = t->qnext)
        if (same_key(t, principal, task_id))
            return t;
    return NULL;
}

/* Caller holds e->mu. The parked turn of the key, or NULL. */
static once__turn *parked_of_locked(once__engine *e, const char *principal, const char *task_id)
{
    for (size_t i = 0; i < e->parked.n; i++)
        if (same_key(TURN_OF(e->parked.v[i]), principal, task_id))
            return TURN_OF(e->parked.v[i]);
    return NULL;
}

static int dispatch_turn(once__engine *e, const char *principal, const char *task_id,
                         int64_t fence, int resumed, json_t *task, once_record *rec);

/* --- tenants (caller holds e->mu) ------------------------------------------- */

static once__tenant *tenant_find(once__engine *e, const char *principal)
{
    for (once__tenant *n = e->tenants; n != NULL; n = n->next)
        if (strcmp(n->principal, principal) == 0)
            return n;
    return NULL;
}

/* principal's tenant, made if it has none; NULL: no memory (the turn goes
 * uncounted, which only loosens its principal's share). */
static once__tenant *tenant_get(once__engine *e, const char *principal)
{
    once__tenant *n = tenant_find(e, principal);
    if (n == NULL && (n = once_calloc(1, sizeof *n)) != NULL) {
        once__strlcpy(n->principal, principal, sizeof n->principal);
        n->next = e->tenants;
        e->tenants = n;
    }
    return n;
}

/* t's turn left the worker: forget its tenant once it holds nothing. */
static void tenant_leave(once__engine *e, once__turn *t)
{
    once__tenant *n = t->tenant;
    t->tenant = NULL;
    if (n == NULL || --n->running > 0 || n->queued > 0)
        return;
    for (once__tenant **pp = &e->tenants; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == n) {
            *pp = n->next;
            break;
        }
    }
    once_free(n);
}

static int running_of(const once__turn *t)
{
    return t->tenant != NULL ? t->tenant->running : 0;
}

/* Unlink and return the turn a worker runs next (the queue is not empty):
 * the oldest queued turn of the principal with the fewest turns on
 * workers. Its tenant counts it as running from here. */
static once__turn *pick_locked(once__engine *e)
{
    once__turn **best = &e->qhead, *before_best = NULL, *before = NULL;
    int least = running_of(e->qhead);
    for (once__turn **pp = &e->qhead; *pp != NULL && least > 0; pp = &(*pp)->qnext) {
        if (running_of(*pp) < least) {
            least = running_of(*pp);
            best = pp;
            before_best = before;
        }
        before = *pp;
    }
    once__turn *t = *best;
    *best = t->qnext;
    if (e->qtail == t)
        e->qtail = before_best;
    t->qnext = NULL;
    if (t->tenant != NULL) {
        t->tenant->queued--;
        t->tenant->running++;
    }
    return t;
}

/* Room for one more queued turn of principal. */
static int room_locked(once__engine *e, const char *principal)
{
    if (e->nqueued >= e->cfg.max_queue)
        return 0;
    const once__tenant *n = tenant_find(e, principal);
    return n == NULL || n->queued < e->cfg.max_queue_per_principal;
}

/* What the dispatching write left the turn and the turn did not take. */
static void turn_drop_start(once__turn *t)
{
    json_decref(t->task);
    t->task = NULL;
    if (t->rec != NULL)
        once_record_clear(t->rec);
    once_free(t->rec);
    t->rec = NULL;
}

static void turn_free(once__turn *t)
{
    turn_drop_start(t);
    once_free(t);
}

int once__dispatch(once__engine *e, const char *principal, const char *task_id, int64_t fence,
                   int resumed)
{
    return dispatch_turn(e, principal, task_id, fence, resumed, NULL, NULL);
}

/* A copy of rec for the turn to start from, or NULL (no memory: the turn
 * loads the record as any other turn does). */
static once_record *record_for_turn(const once_record *rec)
{
    once_record *copy = once_malloc(sizeof *copy);
    if (copy != NULL && once_record_copy(copy, rec) != ONCE_OK) {
        once_free(copy);
        copy = NULL;
    }
    return copy;
}

int once__dispatch_task(once__engine *e, const once_record *rec, json_t *task)
{
    /* The tree goes to a worker thread, and it shares values with what
     * this thread still holds (the request's message parts). jansson counts
     * references atomically, but its last release has no acquire, so a
     * value must not be released on two threads: the worker gets a copy
     * that shares nothing. No memory for it: the turn reads the record, as
     * any other turn does. A copy of the record goes with the tree. */
    json_t *own = task != NULL ? json_deep_copy(task) : NULL;
    json_decref(task);
    return dispatch_turn(e, rec->principal, rec->task_id, rec->fence, 0, own,
                         record_for_turn(rec));
}

/* A turn for the key (NULL: no memory; task and rec released), taking
 * task and rec over. */
static once__turn *turn_new(const char *principal, const char *task_id, int64_t fence,
                            int resumed, json_t *task, once_record *rec)
{
    once__turn *t = once_calloc(1, sizeof *t);
    if (t == NULL) {
        json_decref(task);
        if (rec != NULL)
            once_record_clear(rec);
        once_free(rec);
        return NULL;
    }
    t->task = task;
    t->rec = rec;
    once__strlcpy(t->principal, principal, sizeof t->principal);
    once__strlcpy(t->task_id, task_id, sizeof t->task_id);
    t->fence = fence;
    t->resumed = resumed;
    /* The request being served on this thread started the turn (a
     * takeover's sweeper thread has no trace context: ""). */
    memcpy(t->traceparent, once__log_ctx()->traceparent, sizeof t->traceparent);
    return t;
}

/* Append t (on e->active already) to the queue. Caller holds e->mu. */
static void queue_locked(once__engine *e, once__turn *t)
{
    if ((t->tenant = tenant_get(e, t->principal)) != NULL)
        t->tenant->queued++;
    if (e->qtail != NULL)
        e->qtail->qnext = t;
    else
        e->qhead = t;
    e->qtail = t;
    e->nqueued++;
    __atomic_store_n(&e->stats.queued, (uint64_t)e->nqueued, __ATOMIC_RELAXED);
    pthread_cond_signal(&e->work_cv);
}

/* Move the parked turns that are due to the queue. The monotonic time the
 * next one falls due, or 0 when none is parked. Caller holds e->mu. */
static int64_t unpark_due_locked(once__engine *e)
{
    if (e->parked.n == 0)
        return 0;
    int64_t now = once_monotonic_ms();
    once__heap_node *top;
    while ((top = once__heap_top(&e->parked)) != NULL && top->key <= now) {
        once__turn *t = TURN_OF(top);
        unpark_locked(e, t);
        queue_locked(e, t);
    }
    top = once__heap_top(&e->parked);
    return top != NULL ? top->key : 0;
}

/* Queue t (taken over), or let it replace the queued (or parked) turn of
 * its key. */
static int enqueue(once__engine *e, once__turn *t)
{
    pthread_mutex_lock(&e->mu);
    if (e->stopping) {
        pthread_mutex_unlock(&e->mu);
        turn_free(t);
        return ONCE_ECLOSED;
    }
    t->id = ++e->next_turn_id;
    cancel_locked(e, t->principal, t->task_id, t->id);
    once__turn *old = queued_locked(e, t->principal, t->task_id);
    if (old == NULL && e->parked.n > 0 && (old = parked_of_locked(e, t->principal, t->task_id))) {
        /* A parked turn of the key: it leaves the heap for the queue and is
         * replaced there, so the key is never queued and parked at once. */
        unpark_locked(e, old);
        queue_locked(e, old);
    }
    if (old != NULL) {
        /* Its fence is stale: the new turn takes its place in the queue and
         * its entry on the active list, so the queue never holds a key twice.
         * The entry keeps its id: e->active stays ordered by id. */
        old->fence = t->fence;
        old->resumed = t->resumed;
        old->parks = 0;
        memcpy(old->traceparent, t->traceparent, sizeof old->traceparent);
        json_t *stale = old->task;
        old->task = t->task;
        t->task = stale;
        once_record *stale_rec = old->rec;
        old->rec = t->rec;
        t->rec = stale_rec;
        __atomic_store_n(&old->canceled, 0, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&e->mu);
        turn_free(t);
        return ONCE_OK;
    }
    t->anext = e->active;
    e->active = t;
    queue_locked(e, t);
    pthread_mutex_unlock(&e->mu);
    return ONCE_OK;
}

static int dispatch_turn(once__engine *e, const char *principal, const char *task_id,
                         int64_t fence, int resumed, json_t *task, once_record *rec)
{
    once__turn *t = turn_new(principal, task_id, fence, resumed, task, rec);
    return t != NULL ? enqueue(e, t) : ONCE_ENOMEM;
}

static void turn_done(once__engine *e, once__turn *t);

/* Run t's executor, counted in the running gauge meanwhile. */
static void run_counted(once__engine *e, once__turn *t)
{
    __atomic_fetch_add(&e->stats.running, 1, __ATOMIC_RELAXED);
    once__run_turn(e, t);
    __atomic_fetch_sub(&e->stats.running, 1, __ATOMIC_RELAXED);
}

/* Run t (taken over) here, on this thread, as a running turn from the
 * start: on the active list (a cancel or a newer dispatch of the key flags
 * it; the heartbeat renews it), never queued. The record it left goes to
 * *out (empty if it read none). 0 if the engine is stopping (t freed,
 * nothing run). */
static int run_here(once__engine *e, once__turn *t, once_record *out)
{
    pthread_mutex_lock(&e->mu);
    if (e->stopping) {
        pthread_mutex_unlock(&e->mu);
        turn_free(t);
        return 0;
    }
    t->id = ++e->next_turn_id;
    cancel_locked(e, t->principal, t->task_id, t->id);
    t->running = 1;
    t->anext = e->active;
    e->active = t;
    pthread_mutex_unlock(&e->mu);

    memset(out, 0, sizeof *out);
    t->settled = out;
    ONCE__STAT(e, inline_turns);
    run_counted(e, t);
    t->settled = NULL;
    return 1;
}

int once__dispatch_here(once__engine *e, const once_record *rec, json_t *task, once_record *out)
{
    once__turn *t = turn_new(rec->principal, rec->task_id, rec->fence, 0, task,
                             record_for_turn(rec));
    if (t == NULL) {
        (void)once__dispatch(e, rec->principal, rec->task_id, rec->fence, 0);
        return 0;
    }
    if (!run_here(e, t, out))
        return 0;   /* stopping: its lease runs out; a takeover runs it */
    turn_done(e, t);
    return out->task_id[0] != '\0';
}

int once__dispatch_born(once__engine *e, const once_record *rec, json_t *task,
                        const once_event *ev, const json_t *msg, once_record *out, int *rc,
                        once__held **held, int held_only)
{
    *rc = ONCE_OK;
    if (held != NULL)
        *held = NULL;
    if ((e->ex->flags & ONCE_EXECUTOR_BATCH) == 0 || !once__turn_quick(e, rec, msg))
        return 0;
    once_record *copy = record_for_turn(rec);
    if (copy == NULL)
        return 0;
    once__turn *t = turn_new(rec->principal, rec->task_id, rec->fence, 0, task, copy);
    if (t == NULL)
        return 2;
    t->born = ev;
    t->hold = held != NULL && once__held_can(e);
    t->held_only = t->hold && held_only;
    if (!run_here(e, t, out))
        return 2;
    int stored = t->born_stored;
    *rc = t->born_rc;
    if (held != NULL) {
        *held = t->held;
        t->held = NULL;
    }
    /* Not stored: no lease to give back, nothing on the store to leave. */
    if (!stored)
        __atomic_store_n(&t->canceled, 1, __ATOMIC_RELEASE);
    turn_done(e, t);
    if (stored && out->task_id[0] != '\0')
        return 1;
    once_record_clear(out);
    return *rc != ONCE_OK ? 1 : 2;
}

int once__queue_full(once__engine *e)
{
    pthread_mutex_lock(&e->mu);
    int full = e->nqueued >= e->cfg.max_queue;
    pthread_mutex_unlock(&e->mu);
    return full;
}

int once__queue_room(once__engine *e, const char *principal)
{
    pthread_mutex_lock(&e->mu);
    int room = room_locked(e, principal);
    pthread_mutex_unlock(&e->mu);
    return room;
}

int once__queue_admit(once__engine *e, const char *principal)
{
    pthread_mutex_lock(&e->mu);
    int room = room_locked(e, principal);
    if (!room && e->cfg.admit_wait_ms > 0 && !e->stopping) {
        ONCE__STAT(e, admit_waits);
        int64_t until = once_monotonic_ms() + e->cfg.admit_wait_ms;
        for (;;) {
            int64_t left = until - once_monotonic_ms();
            if (left <= 0 || e->stopping)
                break;
            once__cond_wait_ms(&e->room_cv, &e->mu, left);
            if ((room = room_locked(e, principal)) != 0)
                break;
        }
    }
    pthread_mutex_unlock(&e->mu);
    return room;
}

int once__queue_holds(once__engine *e, const char *principal, const char *task_id)
{
    pthread_mutex_lock(&e->mu);
    int held = queued_locked(e, principal, task_id) != NULL;
    pthread_mutex_unlock(&e->mu);
    return held;
}

/* Caller holds e->mu. */
static void unlink_active(once__engine *e, once__turn *t)
{
    for (once__turn **pp = &e->active; *pp != NULL; pp = &(*pp)->anext) {
        if (*pp == t) {
            *pp = t->anext;
            return;
        }
    }
}

/* The engine is stopping and t's task is left as it stands: set its lease
 * to have run out (the store's renew slot sets, it does not extend), so
 * the first sweep of any replica takes the task over instead of waiting
 * out the lease. The store checks fence and owner: if the task moved on
 * meanwhile (finished, taken over) nothing is written. */
static void release_lease(once__engine *e, const once__turn *t)
{
    int rc = once_store_renew(e->store, t->principal, t->task_id, e->replica_id, t->fence, 1);
    if (rc == ONCE_OK)
        ONCE__STAT(e, leases_released);
}

/* After t ran (on a worker or on the thread that dispatched it): leave
 * the lease to a takeover if the engine is stopping, and forget t. */
static void turn_done(once__engine *e, once__turn *t)
{
    if (once__stopping(e) && !__atomic_load_n(&t->canceled, __ATOMIC_ACQUIRE))
        release_lease(e, t);
    turn_drop_start(t);
    pthread_mutex_lock(&e->mu);
    unlink_active(e, t);
    tenant_leave(e, t);
    pthread_mutex_unlock(&e->mu);
    once_free(t);
}

/* After t ran on a worker: park it if its run() asked to be and it may
 * be (not canceled, the engine not stopping), else forget it as
 * turn_done does. */
static void turn_after(once__engine *e, once__turn *t)
{
    if (t->park_ms > 0 && !__atomic_load_n(&t->canceled, __ATOMIC_ACQUIRE)) {
        turn_drop_start(t);   /* a re-run reads the record afresh */
        pthread_mutex_lock(&e->mu);
        int rc = e->stopping ? ONCE_ECLOSED
                             : park_locked(e, t, once_monotonic_ms() + t->park_ms);
        if (rc == ONCE_OK) {
            /* Off its worker: its principal's running count drops. */
            tenant_leave(e, t);
            t->park_ms = 0;
            t->parks++;
            ONCE__STAT(e, parks);
            pthread_cond_signal(&e->work_cv);   /* a sleeper may wake sooner now */
            pthread_mutex_unlock(&e->mu);
            return;
        }
        pthread_mutex_unlock(&e->mu);
        /* Stopping (its lease is released) or no memory (its lease runs
         * out and a takeover resumes it). */
    }
    turn_done(e, t);
}

static void *worker_main(void *arg)
{
    once__engine *e = arg;
    pthread_mutex_lock(&e->mu);
    for (;;) {
        for (;;) {
            int64_t due = e->stopping ? 0 : unpark_due_locked(e);
            if (e->stopping || e->qhead != NULL)
                break;
            if (due == 0)
                pthread_cond_wait(&e->work_cv, &e->mu);
            else
                once__cond_wait_ms(&e->work_cv, &e->mu, due - once_monotonic_ms());
        }
        if (e->stopping)
            break;
        once__turn *t = pick_locked(e);
        t->running = 1;
        e->nqueued--;
        __atomic_store_n(&e->stats.queued, (uint64_t)e->nqueued, __ATOMIC_RELAXED);
        pthread_cond_signal(&e->room_cv);
        pthread_mutex_unlock(&e->mu);

        /* Log lines of the turn name its task and carry its trace. */
        once__log_ctx_clear();
        once__log_ctx_task(t->task_id);
        once__log_ctx_traceparent(t->traceparent);
        run_counted(e, t);
        turn_after(e, t);
        once__log_ctx_clear();
        pthread_mutex_lock(&e->mu);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

/* A copy of one running turn's identity, taken under e->mu so the store
 * round trips of a heartbeat pass run without holding the lock. */
typedef struct beat_item {
    uint64_t id;
    char principal[ONCE_PRINCIPAL_MAX + 1];
    char task_id[ONCE_ID_MAX + 1];
    int64_t fence;
} beat_item;

/* Flag the turn with this id canceled (it lost its lease). */
static void lose_turn(once__engine *e, uint64_t id)
{
    pthread_mutex_lock(&e->mu);
    for (once__turn *t = e->active; t != NULL; t = t->anext) {
        if (t->id == id && !__atomic_load_n(&t->canceled, __ATOMIC_ACQUIRE)) {
            flag_locked(e, t);
            ONCE__STAT(e, lease_lost);
            pthread_cond_broadcast(&e->cancel_cv);
        }
    }
    pthread_mutex_unlock(&e->mu);
}

int once__renew_lease(once__engine *e, const char *principal, const char *task_id,
                      int64_t fence)
{
    int rc = once_store_renew(e->store, principal, task_id, e->replica_id, fence,
                              once__now(e) + e->cfg.lease_ms);
    if (rc == ONCE_EFENCED)
        once__journal_lease_refused(e, principal, task_id, fence);
    return once__store_rc(e, rc);
}

/* Renew the lease of every running turn, a bounded batch at a time so a
 * pass needs no allocation (an out-of-memory moment never skips a beat).
 * e->active is newest first (ids descend), so `below` walks it in order
 * even when turns come and go between batches. A store that cannot answer
 * leaves the lease as it is: the next beat tries again, and a turn whose
 * lease lapsed meanwhile learns it from the fence on its next write. */
static int heartbeat_pass(once__engine *e)
{
    int failed = 0;
    beat_item items[BEAT_BATCH];
    uint64_t below = UINT64_MAX;
    for (;;) {
        size_t k = 0;
        pthread_mutex_lock(&e->mu);
        for (once__turn *t = e->active; t != NULL && k < BEAT_BATCH; t = t->anext) {
            if (t->id >= below || !t->running)
                continue;
            items[k].id = t->id;
            memcpy(items[k].principal, t->principal, sizeof t->principal);
            memcpy(items[k].task_id, t->task_id, sizeof t->task_id);
            items[k].fence = t->fence;
            k++;
        }
        pthread_mutex_unlock(&e->mu);
        for (size_t i = 0; i < k && !once__stopping(e); i++) {
            int rc = once__renew_lease(e, items[i].principal, items[i].task_id, items[i].fence);
            if (rc == ONCE_EFENCED || rc == ONCE_ENOTFOUND)
                lose_turn(e, items[i].id);
            failed |= rc == ONCE_ESTORE || rc == ONCE_EBUSY;
            below = items[i].id;
        }
        if (k < BEAT_BATCH || once__stopping(e))
            return failed;
    }
}

static void *heartbeat_main(void *arg)
{
    once__engine *e = arg;
    int64_t pause = e->cfg.heartbeat_ms;
    once__replica_beat(e, 0);   /* the cluster view shows a replica from its start */
    while (!once__engine_pause(e, pause)) {
        /* After a beat the store could not answer, beat again soon: the
         * leases must be renewed as soon as it is back, before they run
         * out. */
        int failed = heartbeat_pass(e);
        once__replica_beat(e, 0);
        pause = failed && RETRY_BEAT_MS < e->cfg.heartbeat_ms ? RETRY_BEAT_MS : e->cfg.heartbeat_ms;
    }
    return NULL;
}

int once__dispatch_start(once__engine *e)
{
    e->workers = once_calloc((size_t)e->cfg.workers, sizeof *e->workers);
    if (e->workers == NULL)
        return ONCE_ENOMEM;
    for (int i = 0; i < e->cfg.workers; i++) {
        if (pthread_create(&e->workers[i], NULL, worker_main, e) != 0)
            return ONCE_ENOMEM;
        e->nworkers++;
    }
    if (pthread_create(&e->heartbeat, NULL, heartbeat_main, e) != 0)
        return ONCE_ENOMEM;
    e->heartbeat_started = 1;
    return ONCE_OK;
}

void once__dispatch_stop(once__engine *e)
{
    /* The caller set `stopping` and woke everyone. The heartbeat goes
     * first: a renewal still in flight after a release would extend the
     * lease again. Executors see once_work_canceled() turn true and
     * return; each worker then releases its turn's lease. */
    if (e->heartbeat_started)
        pthread_join(e->heartbeat, NULL);
    e->heartbeat_started = 0;
    for (int i = 0; i < e->nworkers; i++)
        pthread_join(e->workers[i], NULL);
    once_free(e->workers);
    e->workers = NULL;
    e->nworkers = 0;
    /* Turns that never ran: their registering write gave this replica the
     * lease; give it back. */
    pthread_mutex_lock(&e->mu);
    once__turn *t = e->active;
    e->active = NULL;
    e->qhead = e->qtail = NULL;
    e->nqueued = 0;
    once__heap_clear(&e->parked);   /* its turns are on the active list */
    __atomic_store_n(&e->stats.parked, 0, __ATOMIC_RELAXED);
    once__tenant *n = e->tenants;
    e->tenants = NULL;
    pthread_mutex_unlock(&e->mu);
    while (n != NULL) {
        once__tenant *next = n->next;
        once_free(n);
        n = next;
    }
    while (t != NULL) {
        once__turn *next = t->anext;
        if (!__atomic_load_n(&t->canceled, __ATOMIC_ACQUIRE))
            release_lease(e, t);
        turn_free(t);
        t = next;
    }
}
