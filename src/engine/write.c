/*
 * write.c -- the one way the engine changes a stored record: a CAS against
 * the version it read, carrying its events (the transactional outbox,
 * docs/design.md section 6), followed by a wake-up of local waiters. A turn
 * that commits several of its changes together (work.c) carries their
 * events, one generation each, in the one write.
 *
 * Invariants: version goes up by exactly one per write; generation goes up
 * by one for each event appended; finished_at is set exactly while
 * the state is terminal; interrupted and terminal records hold no lease.
 */
#include <string.h>

#include "engine/engine_int.h"

void once__set_state(once_record *next, once_state state, int64_t now)
{
    next->state = state;
    if (once_state_terminal(state)) {
        if (next->finished_at == 0)
            next->finished_at = now > 0 ? now : 1;
    } else {
        next->finished_at = 0;
    }
    if (once_state_terminal(state) || once_state_interrupted(state)) {
        next->lease_owner[0] = '\0';
        next->lease_until = 0;
    }
}

int once__record_advance(once_record *next, const once_record *cur, once_state state,
                         int64_t now)
{
    int rc = once_record_copy(next, cur);
    if (rc != ONCE_OK)
        return rc;
    once__set_state(next, state, now);
    next->fence = cur->fence + 1;
    return ONCE_OK;
}

/* What a final write may add past max_task_bytes: room for the status
 * that ends the task (a failure reason, say), so a full task can always end. */
#define FINAL_RESERVE_BYTES ((int64_t)64 << 10)

static int64_t slen(const char *s)
{
    return s != NULL ? (int64_t)strlen(s) : 0;
}

int64_t once__record_bytes(const once_record *r)
{
    return slen(r->task_json) + slen(r->checkpoint) + slen(r->digests) + slen(r->push_json);
}

int once__size_check(const once__engine *e, const once_record *cur, const once_record *next)
{
    int64_t n = once__record_bytes(next), max = e->cfg.max_task_bytes;
    if (n <= max || (cur != NULL && n <= once__record_bytes(cur)))
        return ONCE_OK;   /* within the bound, or not growing */
    if (once_state_terminal(next->state) && n <= max + FINAL_RESERVE_BYTES)
        return ONCE_OK;
    return ONCE_ERANGE;
}

int once__write_events(once__engine *e, const once_record *cur, once_record *next,
                       const once_event *ev, size_t nev)
{
    int rc = once__size_check(e, cur, next);
    if (rc != ONCE_OK)
        return rc;
    next->version = cur->version + 1;
    next->generation = cur->generation + (int64_t)nev;
    next->updated_at = once__now(e);
    rc = once_store_update(e->store, next, cur->version, nev > 0 ? ev : NULL, nev);
    if (rc == ONCE_OK)
        once__notify(e, next);
    return once__store_rc(e, rc);
}

int once__write(once__engine *e, const once_record *cur, once_record *next, const char *payload)
{
    once_event ev = {cur->generation + 1, (char *)payload};
    return once__write_events(e, cur, next, &ev, payload != NULL ? 1 : 0);
}

void once__notify(once__engine *e, const once_record *r)
{
    pthread_mutex_lock(&e->mu);
    once__await_notify(e, r);
    for (once__waiter *w = e->waiters; w != NULL; w = w->next) {
        if (strcmp(w->task_id, r->task_id) == 0 && strcmp(w->principal, r->principal) == 0) {
            w->fired = 1;
            pthread_cond_signal(&w->cv);
        }
    }
    pthread_mutex_unlock(&e->mu);
    once__journal_touch(e, r->principal, r->task_id);
    /* Only a record with push configs has deliveries a write can make due;
     * waking the delivery threads for any other (most tasks: no webhooks)
     * costs each of them a store scan that finds nothing. */
    if (r->push_json != NULL)
        once__push_kick(e);
}

int once__waiter_add(once__engine *e, once__waiter *w, const char *principal, const char *task_id)
{
    memset(w, 0, sizeof *w);
    w->principal = principal;
    w->task_id = task_id;
    int rc = once__cond_init(&w->cv);
    if (rc != ONCE_OK)
        return rc;
    pthread_mutex_lock(&e->mu);
    w->next = e->waiters;
    e->waiters = w;
    pthread_mutex_unlock(&e->mu);
    return ONCE_OK;
}

void once__waiter_remove(once__engine *e, once__waiter *w)
{
    pthread_mutex_lock(&e->mu);
    for (once__waiter **pp = &e->waiters; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    }
    pthread_mutex_unlock(&e->mu);
    pthread_cond_destroy(&w->cv);
}
