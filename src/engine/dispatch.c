/*
 * dispatch.c -- the worker pool and the lease heartbeat.
 *
 * A turn is queued by whoever won the write that gave this replica the
 * lease (register, continuation, takeover). Workers pop turns FIFO and run
 * them (work.c). The heartbeat thread extends the lease of every turn this
 * engine holds, queued or running, with a CAS that checks the fence; when it
 * finds the fence moved (cancel, takeover elsewhere) it flags the turn
 * canceled so the executor stops.
 *
 * Invariants: a turn is on e->active from dispatch until its worker is done
 * with it (or shutdown frees it); it is on the queue at most once; once
 * `stopping` is set no new turn is accepted and queued turns never run
 * (their leases expire and any replica takes them over).
 */
#include <stdio.h>
#include <string.h>

#include "engine/engine_int.h"

#define HEARTBEAT_CAS_TRIES 4

static int same_key(const once__turn *t, const char *principal, const char *task_id)
{
    return strcmp(t->task_id, task_id) == 0 && strcmp(t->principal, principal) == 0;
}

/* Caller holds e->mu. */
static void cancel_locked(once_engine *e, const char *principal, const char *task_id,
                          uint64_t except_id)
{
    int any = 0;
    for (once__turn *t = e->active; t != NULL; t = t->anext) {
        if (t->id != except_id && same_key(t, principal, task_id)) {
            __atomic_store_n(&t->canceled, 1, __ATOMIC_RELEASE);
            any = 1;
        }
    }
    if (any)
        pthread_cond_broadcast(&e->cancel_cv);
}

void once__cancel_local(once_engine *e, const char *principal, const char *task_id)
{
    pthread_mutex_lock(&e->mu);
    cancel_locked(e, principal, task_id, 0);
    pthread_mutex_unlock(&e->mu);
}

int once__dispatch(once_engine *e, const char *principal, const char *task_id, int64_t fence,
                   int resumed)
{
    once__turn *t = once_calloc(1, sizeof *t);
    if (t == NULL)
        return ONCE_ENOMEM;
    snprintf(t->principal, sizeof t->principal, "%s", principal);
    snprintf(t->task_id, sizeof t->task_id, "%s", task_id);
    t->fence = fence;
    t->resumed = resumed;

    pthread_mutex_lock(&e->mu);
    if (e->stopping) {
        pthread_mutex_unlock(&e->mu);
        once_free(t);
        return ONCE_ECLOSED;
    }
    t->id = ++e->next_turn_id;
    cancel_locked(e, principal, task_id, t->id);
    t->anext = e->active;
    e->active = t;
    if (e->qtail != NULL)
        e->qtail->qnext = t;
    else
        e->qhead = t;
    e->qtail = t;
    pthread_cond_signal(&e->work_cv);
    pthread_mutex_unlock(&e->mu);
    return ONCE_OK;
}

/* Caller holds e->mu. */
static void unlink_active(once_engine *e, once__turn *t)
{
    for (once__turn **pp = &e->active; *pp != NULL; pp = &(*pp)->anext) {
        if (*pp == t) {
            *pp = t->anext;
            return;
        }
    }
}

static void *worker_main(void *arg)
{
    once_engine *e = arg;
    pthread_mutex_lock(&e->mu);
    for (;;) {
        while (!e->stopping && e->qhead == NULL)
            pthread_cond_wait(&e->work_cv, &e->mu);
        if (e->stopping)
            break;
        once__turn *t = e->qhead;
        e->qhead = t->qnext;
        if (e->qhead == NULL)
            e->qtail = NULL;
        t->qnext = NULL;
        t->running = 1;
        pthread_mutex_unlock(&e->mu);

        once__run_turn(e, t);

        pthread_mutex_lock(&e->mu);
        unlink_active(e, t);
        once_free(t);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

/* Extend the lease of one turn. 1 if the turn should stop (fence moved or
 * the task is gone / no longer runnable), 0 otherwise. */
static int extend_lease(once_engine *e, const char *principal, const char *task_id,
                        int64_t fence)
{
    for (int i = 0; i < HEARTBEAT_CAS_TRIES; i++) {
        once_record cur, next;
        int rc = once_store_load(e->store, principal, task_id, &cur, NULL);
        if (rc == ONCE_ENOTFOUND || rc == ONCE_ETOMBSTONE)
            return 1;
        if (rc != ONCE_OK) {
            once__store_rc(e, rc);
            return 0;   /* try again next beat; the lease may still hold */
        }
        int stop = cur.fence != fence;
        int idle = once_state_terminal(cur.state) || once_state_interrupted(cur.state) ||
                   strcmp(cur.lease_owner, e->replica_id) != 0;
        if (stop || idle) {
            once_record_clear(&cur);
            return stop;
        }
        rc = once_record_copy(&next, &cur);
        if (rc == ONCE_OK) {
            next.lease_until = once__now(e) + e->cfg.lease_ms;
            rc = once__write(e, &cur, &next, NULL);
            once_record_clear(&next);
        }
        once_record_clear(&cur);
        if (rc != ONCE_ECONFLICT)
            return 0;
    }
    return 0;
}

/* A copy of one active turn's identity, taken under e->mu so the store
 * round trips of a heartbeat pass run without holding the lock. */
typedef struct beat_item {
    uint64_t id;
    char principal[ONCE_PRINCIPAL_MAX + 1];
    char task_id[ONCE_ID_MAX + 1];
    int64_t fence;
} beat_item;

static void heartbeat_pass(once_engine *e)
{
    pthread_mutex_lock(&e->mu);
    size_t n = 0;
    for (once__turn *t = e->active; t != NULL; t = t->anext)
        n++;
    beat_item *items = n > 0 ? once_calloc(n, sizeof *items) : NULL;
    size_t k = 0;
    if (items != NULL) {
        for (once__turn *t = e->active; t != NULL; t = t->anext, k++) {
            items[k].id = t->id;
            memcpy(items[k].principal, t->principal, sizeof t->principal);
            memcpy(items[k].task_id, t->task_id, sizeof t->task_id);
            items[k].fence = t->fence;
        }
    }
    pthread_mutex_unlock(&e->mu);

    for (size_t i = 0; i < k && !once__stopping(e); i++) {
        if (!extend_lease(e, items[i].principal, items[i].task_id, items[i].fence))
            continue;
        pthread_mutex_lock(&e->mu);
        for (once__turn *t = e->active; t != NULL; t = t->anext) {
            if (t->id == items[i].id) {
                __atomic_store_n(&t->canceled, 1, __ATOMIC_RELEASE);
                pthread_cond_broadcast(&e->cancel_cv);
            }
        }
        pthread_mutex_unlock(&e->mu);
    }
    once_free(items);
}

static void *heartbeat_main(void *arg)
{
    once_engine *e = arg;
    while (!once__engine_pause(e, e->cfg.heartbeat_ms))
        heartbeat_pass(e);
    return NULL;
}

int once__dispatch_start(once_engine *e)
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

void once__dispatch_stop(once_engine *e)
{
    /* The caller set `stopping` and woke everyone; executors see
     * once_work_canceled() turn true and return. */
    for (int i = 0; i < e->nworkers; i++)
        pthread_join(e->workers[i], NULL);
    once_free(e->workers);
    e->workers = NULL;
    e->nworkers = 0;
    if (e->heartbeat_started)
        pthread_join(e->heartbeat, NULL);
    e->heartbeat_started = 0;
    /* Turns that never ran: drop them; their leases expire. */
    pthread_mutex_lock(&e->mu);
    once__turn *t = e->active;
    e->active = NULL;
    e->qhead = e->qtail = NULL;
    pthread_mutex_unlock(&e->mu);
    while (t != NULL) {
        once__turn *next = t->anext;
        once_free(t);
        t = next;
    }
}
