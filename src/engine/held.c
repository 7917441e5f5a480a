/*
 * held.c -- a new task's one write, held for the caller to start.
 *
 * A blocking SendMessage whose task finishes in its first turn is stored
 * with one create (once__dispatch_born). On a store that commits in groups
 * (SQLite), the thread that waits for its group's commit sleeps and is
 * woken again for every task: on two CPUs that wake-up, not the work, is
 * what a task costs most. When the caller asked for it (req->hold) and the
 * store can start a create without waiting (ONCE_STORE_CREATE_START), the turn
 * does not write: it leaves the record and its events here, the answer is
 * built from them, and the caller starts the write with a callback that
 * sends the answer. Whoever commits the write's group runs the callback.
 *
 * Nothing of the task is seen before it is stored: the answer goes out
 * from the callback, after the commit; the write's notification (waits,
 * push) and the counters (`registered`, `executed_turns`, the turn's end) come with it.
 * A write that fails (another registration of the same ID won, a tombstone,
 * an outage) leaves nothing, and the caller is told so: it runs the call
 * again without holding, which decides again from what is stored (a
 * replay of the winner, TASK_EXPIRED, or the outage's answer). A held write
 * counts in e->inflight until its callback ran, so the engine does not stop
 * under it.
 */
#include <string.h>

#include "core/metrics.h"
#include "engine/engine_int.h"

struct once__held {
    once__engine *e;
    once_record rec;
    once_event ev[ONCE__HELD_EVENTS];
    size_t nev;
    int64_t t0;                         /* metrics: when the write started */
    void (*landed)(void *arg, int rc);
    void *arg;
};

static void held_free(once__held *h)
{
    once__engine *e = h->e;
    once_record_clear(&h->rec);
    for (size_t i = 0; i < h->nev; i++)
        once_free(h->ev[i].payload);
    once_free(h);
    once__engine_leave(e);
}

int once__held_can(const once__engine *e)
{
    return once_store_can_start(e->store, NULL);
}

int once__held_can_rec(const once__engine *e, const once_record *rec)
{
    return once_store_can_start(e->store, rec);
}

int once__engine_holds(const once__engine *e)
{
    /* Only a turn run before its task is stored (once__dispatch_born), on
     * a store read without a round trip: the send's dedup read is made on
     * the caller's thread too. */
    const unsigned born = ONCE_EXECUTOR_BATCH | ONCE_EXECUTOR_INLINE;
    return once__held_can(e) && (once_store_caps(e->store) & ONCE_STORE_LOCAL) && (e->ex->flags & born) == born &&
           e->ex->quick != NULL;
}

int once__held_new(once__engine *e, once_record *rec, const once_event *ev, size_t nev,
                   once__held **out)
{
    *out = NULL;
    if (nev > ONCE__HELD_EVENTS)
        return ONCE_ERANGE;
    once__held *h = once_calloc(1, sizeof *h);
    if (h == NULL)
        return ONCE_ENOMEM;
    h->e = e;
    for (size_t i = 0; i < nev; i++) {
        h->ev[i].generation = ev[i].generation;
        h->ev[i].payload = once_strdup(ev[i].payload);
        if (h->ev[i].payload == NULL) {
            for (size_t j = 0; j < i; j++)
                once_free(h->ev[j].payload);
            once_free(h);
            return ONCE_ENOMEM;
        }
    }
    h->nev = nev;
    int rc = once_record_copy(&h->rec, rec);
    if (rc != ONCE_OK) {
        for (size_t i = 0; i < nev; i++)
            once_free(h->ev[i].payload);
        once_record_clear(&h->rec);
        once_free(h);
        return rc;
    }
    __atomic_add_fetch(&e->inflight, 1, __ATOMIC_SEQ_CST);   /* inside a counted send */
    *out = h;
    return ONCE_OK;
}

/* The write's outcome, on the thread that committed it. */
static void held_done(void *arg, int rc)
{
    once__held *h = arg;
    once__engine *e = h->e;
    once__metrics_store(e->store->m->scheme, ONCE__SOP_CREATE, h->t0);
    if (rc == ONCE_OK) {
        ONCE__STAT(e, registered);
        ONCE__STAT(e, executed_turns);
        once__notify(e, &h->rec);
        once__count_turn_end(e, &h->rec);   /* counted once followers were told */
    }
    rc = once__store_rc(e, rc);
    void (*landed)(void *, int) = h->landed;
    void *larg = h->arg;
    held_free(h);
    landed(larg, rc);
}

void once__engine_held_start(once__held *h, void (*landed)(void *arg, int rc), void *arg)
{
    h->landed = landed;
    h->arg = arg;
    h->t0 = once__metrics_start();
    int rc = once_store_create_start(h->e->store, &h->rec, h->ev, h->nev, held_done, h);
    if (rc != ONCE_OK)
        held_done(h, rc);   /* not queued (no memory): nothing stored, say so */
}

void once__engine_held_drop(once__held *h)
{
    if (h != NULL)
        held_free(h);
}
