/*
 * await.c -- deferred waits: a blocking SendMessage that waits for its task
 * to settle without holding a thread.
 *
 * A blocking send used to park its HTTP worker in once__wait until the
 * task settled (up to max_wait_ms): seventy slow tasks held every worker,
 * and a GetTask queued behind them for as long. Now the send answers the
 * engine at once with `pending`, the caller registers a wait here, and one
 * thread of the engine watches every registered wait:
 *
 *   - a write by this process (once__notify) hands the written record to
 *     the waits on its key: a settled record marks them ready at once and
 *     is handed to the callback, so the answer needs no store read; any
 *     other record moves their generation on;
 *   - writes by other replicas are told by the store's change feed
 *     (feed.c -> once__await_told): the waits on the key probe the store
 *     at once (a one-event probe after the wait's generation, an index
 *     lookup, and only when it finds one, a load of the record to see its
 *     state); where the engine has no feed up (once__engine_follow_poll_ms), each
 *     wait probes so every ONCE__POLL_MS instead;
 *   - the deadline, a poll the store cannot answer, and release (the
 *     server stops) make a wait ready too.
 *
 * Registering a wait does not wake the thread unless the wait is due
 * before the thread's next wake-up: a blocking send costs the thread
 * nothing until its task settles. The gap between the send's look at the
 * task and the registration is closed without a probe: a local write
 * that settles a task notes its key in e->settled, so a registration
 * finds its task settled there (ONCE_EEXISTS: the caller answers at
 * once), or sees the slot untouched since the send (nothing to catch up
 * on: the first probe waits a poll interval), or, rarely, overwritten by
 * another key since the send, and then probes at once as it always did.
 *
 * A ready wait is unlinked and its callback runs on the await thread, once;
 * the callback only hands the work on (it queues a job that builds the
 * answer), so one slow answer never delays another wait.
 *
 * Fairness: a principal holds at most cfg.max_waits_per_principal waits
 * and the engine at most cfg.max_waits; past either, once__engine_await
 * answers ONCE_EBUSY and the caller answers with the task as it stands
 * (a true answer: the client polls or subscribes from there).
 *
 * Cost with many waits: a write (or a key the feed tells of) finds its
 * key's waits by hash (e->await_keys), and a registration its principal's
 * count by hash (e->await_owners), so neither walks every wait; only the
 * await thread does, once per wake-up (ready waits, deadlines, polls).
 *
 * Ownership: nodes are allocated by once__engine_await and freed only by
 * the await thread, after their callback; every field that another thread
 * changes (gen, ready) is read and written under e->mu. The thread reads
 * a node's key without the lock while polling: the key never changes and
 * only this thread frees the node.
 */
#include <string.h>

#include "core/str.h"
#include "engine/engine_int.h"

#define POLL_BATCH 64          /* probes between two looks at ready waits */
#define NEVER INT64_MAX        /* next_poll of a wait that waits to be told */

struct once__await {
    char principal[ONCE_PRINCIPAL_MAX + 1];
    char task_id[ONCE_ID_MAX + 1];
    int64_t gen;               /* the last generation seen (under e->mu) */
    int64_t until;             /* monotonic ms */
    int64_t next_poll;         /* under e->mu: monotonic ms; NEVER: wait to be told */
    int told;                  /* under e->mu: the change feed named the key since
                                * the last probe began */
    int ready;                 /* under e->mu: settled, deadline, or release */
    once_record *rec;          /* under e->mu: the settled record handed over, or NULL */
    once__engine_ready_fn fn;
    void *arg;
    struct once__await *next;  /* e->awaits, under e->mu */
    struct once__await *knext, **kprev;  /* its key's bucket, e->await_keys */
};

/* How many waits one principal holds, while it holds any: e->await_owners
 * by hash of the principal, so a registration counts its principal's waits
 * without walking every wait. */
struct once__await_owner {
    char principal[ONCE_PRINCIPAL_MAX + 1];
    int n;
    struct once__await_owner *next;
};

static once__await **key_bucket(once__engine *e, const char *principal, const char *task_id)
{
    return &e->await_keys[once__key_hash(principal, task_id) % ONCE__WATCH_BUCKETS];
}

static once__await_owner **owner_at(once__engine *e, const char *principal)
{
    once__await_owner **pp = &e->await_owners[once__key_hash(principal, "") % ONCE__WATCH_BUCKETS];
    while (*pp != NULL && strcmp((*pp)->principal, principal) != 0)
        pp = &(*pp)->next;
    return pp;
}

/* Under e->mu: a's links into its key's bucket and its principal's count.
 * ONCE_ENOMEM (nothing linked) when the principal's count cannot be kept. */
static int link_wait(once__engine *e, once__await *a)
{
    once__await_owner **op = owner_at(e, a->principal);
    if (*op == NULL) {
        once__await_owner *o = once_calloc(1, sizeof *o);
        if (o == NULL)
            return ONCE_ENOMEM;
        memcpy(o->principal, a->principal, strlen(a->principal) + 1);
        *op = o;
    }
    (*op)->n++;
    once__await **b = key_bucket(e, a->principal, a->task_id);
    a->knext = *b;
    a->kprev = b;
    if (*b != NULL)
        (*b)->kprev = &a->knext;
    *b = a;
    return ONCE_OK;
}

static void unlink_wait(once__engine *e, once__await *a)
{
    *a->kprev = a->knext;
    if (a->knext != NULL)
        a->knext->kprev = a->kprev;
    once__await_owner **op = owner_at(e, a->principal);
    if (*op != NULL && --(*op)->n == 0) {
        once__await_owner *o = *op;
        *op = o->next;
        once_free(o);
    }
}

static int same_key(const once__await *a, const char *principal, const char *task_id)
{
    return strcmp(a->task_id, task_id) == 0 && strcmp(a->principal, principal) == 0;
}

int once__record_settled(const once_record *r)
{
    return r->kind == ONCE_KIND_MESSAGE || once_state_terminal(r->state) ||
           once_state_interrupted(r->state);
}

uint32_t once__key_hash(const char *principal, const char *task_id)
{
    uint32_t h = 2166136261u;
    for (const char *p = principal; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    h *= 16777619u;
    for (const char *p = task_id; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    return h;
}

static once__settled *settled_slot(once__engine *e, const char *principal, const char *task_id)
{
    return &e->settled[once__key_hash(principal, task_id) % ONCE__SETTLED_SLOTS];
}

/* Under e->mu: a wait is ready or due now. A thread that is not asleep
 * (it is polling, or answering) looks again before it sleeps; one asleep
 * is woken. */
static void wake_thread(once__engine *e)
{
    if (e->await_asleep)
        pthread_cond_signal(&e->await_cv);
    else
        e->await_kick = 1;
}

/* Under e->mu: a local write of r reached the waits on its key. */
void once__await_notify(once__engine *e, const once_record *r)
{
    int settled = once__record_settled(r);
    if (settled) {
        once__settled *s = settled_slot(e, r->principal, r->task_id);
        s->seq = e->settle_seq + 1;
        s->told = 0;
        memcpy(s->principal, r->principal, sizeof s->principal);
        memcpy(s->task_id, r->task_id, sizeof s->task_id);
        __atomic_store_n(&e->settle_seq, s->seq, __ATOMIC_RELEASE);
    }
    int wake = 0;
    for (once__await *a = *key_bucket(e, r->principal, r->task_id); a != NULL; a = a->knext) {
        if (!same_key(a, r->principal, r->task_id))
            continue;
        if (settled) {
            if (!a->ready && a->rec == NULL) {
                /* Without memory for the copy the answer reads the store. */
                a->rec = once_malloc(sizeof *a->rec);
                if (a->rec != NULL && once_record_copy(a->rec, r) != ONCE_OK) {
                    once_free(a->rec);
                    a->rec = NULL;
                }
            }
            a->ready = 1;
            wake = 1;
        } else if (r->generation > a->gen) {
            a->gen = r->generation;
        }
    }
    if (wake)
        wake_thread(e);
    once__follow_notify(e, r->principal, r->task_id);   /* streams following the key */
}

/* When a wait probes next after a probe now: an interval on, or NEVER
 * while the change feed tells of every update. */
static int64_t next_poll(once__engine *e)
{
    int64_t poll = once__engine_follow_poll_ms(e);
    return poll > 0 ? once_monotonic_ms() + poll : NEVER;
}

void once__await_told(once__engine *e, const char *principal, const char *task_id)
{
    /* A registration racing this tell, by a send that looked at the task
     * before, probes at once (settled_since says it cannot tell). */
    uint64_t seq = e->settle_seq + 1;
    if (principal == NULL) {
        e->told_all_seq = seq;
    } else {
        once__settled *s = settled_slot(e, principal, task_id);
        s->seq = seq;
        s->told = 1;
        memcpy(s->principal, principal, strlen(principal) + 1);
        memcpy(s->task_id, task_id, strlen(task_id) + 1);
    }
    __atomic_store_n(&e->settle_seq, seq, __ATOMIC_RELEASE);
    int wake = 0;
    once__await *a = principal != NULL ? *key_bucket(e, principal, task_id) : e->awaits;
    for (; a != NULL; a = principal != NULL ? a->knext : a->next) {
        if (principal != NULL && !same_key(a, principal, task_id))
            continue;
        a->told = 1;
        a->next_poll = 0;
        wake = 1;
    }
    if (wake)
        wake_thread(e);
}

uint64_t once__await_seq(once__engine *e)
{
    return __atomic_load_n(&e->settle_seq, __ATOMIC_ACQUIRE);
}

/* Outside e->mu: has a's task settled in the store? 1 yes, 0 no (a->gen
 * moved on if it moved), negative: the store failed. */
static int poll_one(once__engine *e, once__await *a)
{
    pthread_mutex_lock(&e->mu);
    int64_t gen = a->gen;
    pthread_mutex_unlock(&e->mu);

    once_event_list l;
    int rc = once__store_rc(e, once_store_events(e->store, a->principal, a->task_id, gen, 1, &l));
    int moved = rc == ONCE_OK && l.n > 0;
    once_event_list_clear(&l);
    if (!moved)
        return rc == ONCE_OK ? 0 : rc;

    once_record rec;
    rc = once__load_found(e, a->principal, a->task_id, &rec);
    if (rc != ONCE_OK)
        return rc == ONCE_ENOTFOUND ? 1 : rc;   /* gone: the answer says so */
    int settled = once__record_settled(&rec);
    pthread_mutex_lock(&e->mu);
    if (rec.generation > a->gen)
        a->gen = rec.generation;
    pthread_mutex_unlock(&e->mu);
    once_record_clear(&rec);
    return settled;
}

/* Under e->mu: unlink every ready wait (and every one past its deadline,
 * or all of them once released) onto *fire. Returns the earliest moment
 * something is due among those left (deadline or poll). */
static int64_t take_ready(once__engine *e, int64_t now, once__await **fire)
{
    /* With the change feed up nothing polls: the thread wakes to be told,
     * or for a deadline, or once a second. */
    int64_t due = now + (once__engine_follow_poll_ms(e) > 0 ? ONCE__POLL_MS : 1000);
    for (once__await **pp = &e->awaits; *pp != NULL;) {
        once__await *a = *pp;
        if (a->ready || a->until <= now || e->awaits_closed) {
            *pp = a->next;
            unlink_wait(e, a);
            a->next = *fire;
            *fire = a;
            e->nawaits--;
            __atomic_store_n(&e->stats.waiting, (uint64_t)e->nawaits, __ATOMIC_RELAXED);
            continue;
        }
        if (a->until < due)
            due = a->until;
        if (a->next_poll < due)
            due = a->next_poll;
        pp = &a->next;
    }
    return due;
}

static void run_ready(once__await *fire)
{
    while (fire != NULL) {
        once__await *a = fire;
        fire = a->next;
        a->fn(a->arg, a->rec);  /* the record is fn's now */
        once_free(a);
    }
}

/* Poll the waits whose turn has come, at most POLL_BATCH of them. Returns
 * 1 if it stopped early (more are due). */
static int poll_due(once__engine *e, int64_t now)
{
    once__await *due[POLL_BATCH];
    size_t n = 0;
    int more = 0;
    pthread_mutex_lock(&e->mu);
    for (once__await *a = e->awaits; a != NULL; a = a->next) {
        if (a->ready || a->next_poll > now)
            continue;
        if (n == POLL_BATCH) {
            more = 1;
            break;
        }
        a->told = 0;   /* a tell from here on probes again */
        due[n++] = a;
    }
    pthread_mutex_unlock(&e->mu);

    for (size_t i = 0; i < n; i++) {
        int settled = poll_one(e, due[i]);
        /* Poll again a whole interval after this one ended: a slow store
         * stretches the rounds instead of stacking them up. Told while
         * probing: probe again. */
        int64_t next = next_poll(e);
        pthread_mutex_lock(&e->mu);
        due[i]->next_poll = due[i]->told ? 0 : next;
        /* A store that cannot be read ends the wait too: the answer then
         * says so (retryable), as a blocking wait always has, rather than
         * hold the client through an outage until the deadline. */
        if (settled != 0)
            due[i]->ready = 1;
        pthread_mutex_unlock(&e->mu);
    }
    return more;
}

static void *await_main(void *arg)
{
    once__engine *e = arg;
    pthread_mutex_lock(&e->mu);
    for (;;) {
        once__await *fire = NULL;
        int64_t now = once_monotonic_ms();
        int64_t due = take_ready(e, now, &fire);
        int quit = e->await_quit && e->awaits == NULL;
        pthread_mutex_unlock(&e->mu);

        if (fire != NULL)
            run_ready(fire);
        if (quit)
            return NULL;
        int more = fire == NULL && poll_due(e, now);

        pthread_mutex_lock(&e->mu);
        /* A wait added since take_ready is not in `due`: look again. */
        if (fire == NULL && !more && !e->await_kick) {
            int64_t left = due - once_monotonic_ms();
            if (left > 0 && !e->awaits_closed && !e->await_quit) {
                e->await_asleep = 1;
                e->await_wake = due;
                once__cond_wait_ms(&e->await_cv, &e->mu, left);
                e->await_asleep = 0;
            }
        }
        e->await_kick = 0;
    }
}

/* Under e->mu: did a local write settle the task since the send that saw
 * settle_seq == seq? 1 yes, 0 no, -1 cannot tell (its slot went to another
 * key since, or the change feed told of the key, or of every key). */
static int settled_since(once__engine *e, const char *principal, const char *task_id,
                         uint64_t seq)
{
    const once__settled *s = settled_slot(e, principal, task_id);
    if (s->seq > seq && !s->told && strcmp(s->principal, principal) == 0 &&
        strcmp(s->task_id, task_id) == 0)
        return 1;   /* settled here since: whatever else was told */
    if (e->told_all_seq > seq)
        return -1;
    return s->seq <= seq ? 0 : -1;
}

int once__engine_await(once__engine *e, const char *principal, const char *task_id, int64_t gen,
                      uint64_t seq, int64_t until, once__engine_ready_fn fn, void *arg)
{
    if (e == NULL || principal == NULL || task_id == NULL || fn == NULL ||
        strlen(principal) > ONCE_PRINCIPAL_MAX || strlen(task_id) > ONCE_ID_MAX)
        return ONCE_EINVAL;
    once__await *a = once_calloc(1, sizeof *a);
    if (a == NULL)
        return ONCE_ENOMEM;
    once__strlcpy(a->principal, principal, sizeof a->principal);
    once__strlcpy(a->task_id, task_id, sizeof a->task_id);
    a->gen = gen;
    a->until = until;
    a->fn = fn;
    a->arg = arg;

    int rc = ONCE_OK;
    pthread_mutex_lock(&e->mu);
    int since = settled_since(e, principal, task_id, seq);
    /* Unsure, probe at once; else the first probe waits its interval (or
     * waits to be told). */
    a->next_poll = since < 0 ? 0 : next_poll(e);
    if (e->awaits_closed || e->stopping) {
        rc = ONCE_ECLOSED;
    } else if (since > 0) {
        rc = ONCE_EEXISTS;     /* no wait: the caller answers now */
    } else if (e->nawaits >= e->cfg.max_waits) {
        rc = ONCE_EBUSY;
    } else {
        const once__await_owner *o = *owner_at(e, principal);
        if (o != NULL && o->n >= e->cfg.max_waits_per_principal)
            rc = ONCE_EBUSY;
    }
    if (rc == ONCE_OK && !e->await_started) {
        if (pthread_create(&e->await_thread, NULL, await_main, e) != 0)
            rc = ONCE_ENOMEM;
        else
            e->await_started = 1;
    }
    if (rc == ONCE_OK)
        rc = link_wait(e, a);
    if (rc == ONCE_OK) {
        a->next = e->awaits;
        e->awaits = a;
        e->nawaits++;
        __atomic_store_n(&e->stats.waiting, (uint64_t)e->nawaits, __ATOMIC_RELAXED);
        /* Wake the thread only if this wait is due before it would wake
         * anyway; a thread not asleep looks again before it sleeps. */
        int64_t due = a->next_poll < until ? a->next_poll : until;
        if (!e->await_asleep)
            e->await_kick = 1;
        else if (due < e->await_wake)
            pthread_cond_signal(&e->await_cv);
    }
    pthread_mutex_unlock(&e->mu);
    if (rc != ONCE_OK) {
        once_free(a);
        if (rc == ONCE_EBUSY)
            ONCE__STAT(e, waits_shed);
    }
    return rc;
}

void once__engine_await_release(once__engine *e)
{
    if (e == NULL)
        return;
    /* The thread fires every wait left (closed makes them all ready), then
     * sees quit with an empty list and ends: once joined, every callback
     * has returned, so the caller may free what they use. */
    pthread_mutex_lock(&e->mu);
    e->awaits_closed = 1;
    e->await_quit = 1;
    pthread_cond_broadcast(&e->await_cv);
    int started = e->await_started;
    e->await_started = 0;
    pthread_mutex_unlock(&e->mu);
    if (started)
        pthread_join(e->await_thread, NULL);
}

void once__await_each_key(once__engine *e, once__key_fn fn, void *arg)
{
    for (once__await *a = e->awaits; a != NULL; a = a->next)
        fn(arg, a->principal, a->task_id);
}
