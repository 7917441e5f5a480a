/*
 * follow.c -- following a task's events (SendStreamingMessage and
 * SubscribeToTask over SSE): read the events after a generation, and wait
 * until the task's generation moves past one.
 *
 * The wait is woken at once by writes of this process (the waiter list that
 * blocking sends use, signalled by once__notify) and by other replicas'
 * writes the store's change feed tells of (feed.c); without a feed up, it
 * sees those by polling the store every ONCE__POLL_MS (once__engine_follow_poll_ms,
 * docs/design.md section 13). A look asks for at most one event after the
 * generation: an index probe when nothing moved, never a load of the
 * record, whose task JSON may be large and which a stream does not need
 * (its reads are event reads). The caller's stop hook, if any, is asked
 * at every poll, or every STOP_CHECK_MS when not polling.
 *
 * A watch (once__engine_watch_add) is the same wake-up without a waiting
 * thread: a callback per followed key, found by hash of the key
 * (e->watches) and called under e->mu by once__notify and by the feed;
 * whoever holds the watch polls for other replicas' writes itself while
 * once__engine_follow_poll_ms says so (the SSE hub's timers).
 *
 * Invariants: every call is read-only and scoped by the key (principal,
 * task_id), so another principal's task looks like a missing one; reads
 * and waits count in e->inflight, so once__engine_free waits for a blocked
 * follower to leave before it tears the engine down; a watch holds no
 * thread and is removed by its owner before once__engine_free.
 */
#include <string.h>

#include "engine/engine_int.h"

#define STOP_CHECK_MS 250   /* how often a wait that is not polling asks its stop hook */

static int key_ok(const char *principal, const char *task_id)
{
    return principal != NULL && principal[0] != '\0' &&
           strlen(principal) <= ONCE_PRINCIPAL_MAX && task_id != NULL;
}

/* How a call that takes only a key starts: ONCE_EINVAL for a missing engine
 * or a bad key, `no_task` (the call's answer when no stored task can carry
 * task_id: the store is not asked), else once__engine_enter. Returns 1 when the caller
 * goes on, counted in e->inflight (it calls once__engine_leave), or 0 with *rc the
 * call's answer. */
static int enter_key(once__engine *e, const char *principal, const char *task_id, int no_task,
                     int *rc)
{
    if (e == NULL || !key_ok(principal, task_id)) {
        *rc = ONCE_EINVAL;
        return 0;
    }
    if (!once_id_valid(task_id)) {
        *rc = no_task;
        return 0;
    }
    *rc = once__engine_enter(e);
    return *rc == ONCE_OK;
}

/* A store that compacted a finished task kept its last event alone, its
 * payload empty (store.h, events): a reader behind it is given the task
 * as it ended, as one "task" event at that generation, in place of the
 * events it missed. Costs nothing while the first event is the next one
 * and has its payload. */
static int uncompact(once__engine *e, const char *principal, const char *task_id, int64_t after,
                     once_event_list *out)
{
    if (out->n == 0 || (out->v[0].generation == after + 1 && out->v[0].payload[0] != '\0'))
        return ONCE_OK;
    once_record rec;
    int rc = once__load_found(e, principal, task_id, &rec);
    if (rc == ONCE_ENOTFOUND) {
        once_event_list_clear(out);   /* gone since: retention took it */
        return ONCE_OK;
    }
    if (rc != ONCE_OK)
        return rc;
    json_t *j = once__send_result(&rec, -1);
    char *text = j != NULL ? once__json_text(j) : NULL;
    int64_t generation = rec.generation;
    json_decref(j);
    once_record_clear(&rec);
    once_event_list_clear(out);
    if (text == NULL || (out->v = once_calloc(1, sizeof *out->v)) == NULL) {
        once_free(text);
        return ONCE_ENOMEM;
    }
    out->v[0].generation = generation;
    out->v[0].payload = text;
    out->n = 1;
    return ONCE_OK;
}

int once__engine_events_after(once__engine *e, const char *principal, const char *task_id,
                             int64_t after, size_t max, once_event_list *out)
{
    if (out == NULL)
        return ONCE_EINVAL;
    memset(out, 0, sizeof *out);
    int rc;
    if (!enter_key(e, principal, task_id, ONCE_OK /* no task: no events */, &rc))
        return rc;
    rc = once__store_rc(e, once_store_events(e->store, principal, task_id, after, max, out));
    if (rc == ONCE_OK)
        rc = uncompact(e, principal, task_id, after, out);
    if (rc != ONCE_OK)
        once_event_list_clear(out);
    once__engine_leave(e);
    return rc;
}

int once__engine_task_head(once__engine *e, const char *principal, const char *task_id,
                          int64_t *generation, once_state *state)
{
    if (generation == NULL || state == NULL)
        return ONCE_EINVAL;
    *generation = 0;
    *state = ONCE_STATE_UNKNOWN;
    if (e == NULL || !key_ok(principal, task_id))
        return ONCE_EINVAL;
    if (!once_id_valid(task_id))
        return ONCE_ENOTFOUND;
    once__log_ctx_task(task_id);   /* SubscribeToTask's log line */
    int rc = once__engine_enter(e);
    if (rc != ONCE_OK)
        return rc;
    once_record rec;
    rc = once__store_rc(e, once_store_load(e->store, principal, task_id, &rec, NULL));
    if (rc == ONCE_OK) {
        if (rec.kind != ONCE_KIND_TASK) {
            rc = ONCE_ENOTFOUND;   /* a direct Message is not a task (as GetTask) */
        } else {
            *generation = rec.generation;
            *state = rec.state;
        }
        once_record_clear(&rec);
    }
    once__engine_leave(e);
    return rc;
}

/* 1 if an event after gen exists (one index probe), 0 if not, or an error. */
static int moved(once__engine *e, const char *principal, const char *task_id, int64_t gen)
{
    once_event_list l;
    int rc = once__store_rc(e, once_store_events(e->store, principal, task_id, gen, 1, &l));
    int n = l.n > 0;
    once_event_list_clear(&l);
    return rc == ONCE_OK ? n : rc;
}

/* The wait proper, with w registered: a local write from here on sets
 * w->fired, so the first probe below cannot miss one. */
static int wait_registered(once__engine *e, once__waiter *w, int64_t gen, int64_t timeout_ms,
                           const once__wait_stop *stop)
{
    const char *principal = w->principal, *task_id = w->task_id;
    int m = moved(e, principal, task_id, gen);
    if (m != 0)
        return m > 0 ? ONCE_OK : m;
    if (timeout_ms <= 0)
        return ONCE_ETIMEDOUT;

    int64_t deadline = once_monotonic_ms() + timeout_ms;
    int rc = ONCE_ETIMEDOUT;
    for (;;) {
        int64_t left = deadline - once_monotonic_ms();
        if (left <= 0)
            break;
        /* Polling, or waiting to be told (the change feed, or a store of
         * this process's own): then only the stop hook is asked between. */
        int64_t poll = once__engine_follow_poll_ms(e);
        int64_t step = poll > 0 ? poll : STOP_CHECK_MS;
        pthread_mutex_lock(&e->mu);
        if (!w->fired && !e->stopping)
            once__cond_wait_ms(&w->cv, &e->mu, left < step ? left : step);
        int fired = w->fired;
        w->fired = 0;
        int stopping = e->stopping;
        pthread_mutex_unlock(&e->mu);
        if (stopping) {
            rc = ONCE_ECLOSED;
            break;
        }
        if (stop != NULL && stop->fn(stop->arg)) {
            rc = ONCE_ECANCELED;
            break;
        }
        if (!fired && poll == 0)
            continue;
        /* Woken by a write or a poll, the store says whether it moved: a
         * notification names the key, not the generation. */
        m = moved(e, principal, task_id, gen);
        if (m > 0) {
            rc = ONCE_OK;
            break;
        }
        /* A store that failed on the last poll before the deadline is
         * reported as such (retryable), not as a timeout. */
        rc = m < 0 ? m : ONCE_ETIMEDOUT;
    }
    return rc;
}

/* Register the waiter first, then look: checking first would leave a gap in
 * which a local write's notification finds no waiter, and the wait would
 * only see that write at the next poll. */
static int wait_counted(once__engine *e, const char *principal, const char *task_id, int64_t gen,
                        int64_t timeout_ms, const once__wait_stop *stop)
{
    once__waiter w;
    int rc = once__waiter_add(e, &w, principal, task_id);
    if (rc != ONCE_OK)
        return rc;

    rc = wait_registered(e, &w, gen, timeout_ms, stop);

    once__waiter_remove(e, &w);
    return rc;
}

int once__engine_wait_generation_or(once__engine *e, const char *principal, const char *task_id,
                                    int64_t gen, int64_t timeout_ms, const once__wait_stop *stop)
{
    int rc;
    if (!enter_key(e, principal, task_id, ONCE_ETIMEDOUT /* no task: never moves */, &rc))
        return rc;
    rc = wait_counted(e, principal, task_id, gen, timeout_ms, stop);
    once__engine_leave(e);
    return rc;
}

int once__engine_wait_generation(once__engine *e, const char *principal, const char *task_id,
                                int64_t gen, int64_t timeout_ms)
{
    return once__engine_wait_generation_or(e, principal, task_id, gen, timeout_ms, NULL);
}

/* --- watches ------------------------------------------------------------------ */

/* Linked in e->watches[hash of key] under e->mu; the key and callback
 * never change. */
struct once__engine_watch {
    char principal[ONCE_PRINCIPAL_MAX + 1];
    char task_id[ONCE_ID_MAX + 1];
    void (*fn)(void *arg);
    void *arg;
    struct once__engine_watch *next;
};

static once__engine_watch **bucket(once__engine *e, const char *principal, const char *task_id)
{
    return &e->watches[once__key_hash(principal, task_id) % ONCE__WATCH_BUCKETS];
}

int once__engine_watch_add(once__engine *e, const char *principal, const char *task_id,
                           void (*fn)(void *arg), void *arg, once__engine_watch **out)
{
    *out = NULL;
    if (e == NULL || fn == NULL || !key_ok(principal, task_id) ||
        strlen(task_id) > ONCE_ID_MAX)
        return ONCE_EINVAL;
    once__engine_watch *w = once_calloc(1, sizeof *w);
    if (w == NULL)
        return ONCE_ENOMEM;
    memcpy(w->principal, principal, strlen(principal) + 1);
    memcpy(w->task_id, task_id, strlen(task_id) + 1);
    w->fn = fn;
    w->arg = arg;
    pthread_mutex_lock(&e->mu);
    int stopping = e->stopping;
    if (!stopping) {
        once__engine_watch **b = bucket(e, principal, task_id);
        w->next = *b;
        *b = w;
    }
    pthread_mutex_unlock(&e->mu);
    if (stopping) {
        once_free(w);
        return ONCE_ECLOSED;
    }
    *out = w;
    return ONCE_OK;
}

void once__engine_watch_remove(once__engine *e, once__engine_watch *w)
{
    if (e == NULL || w == NULL)
        return;
    pthread_mutex_lock(&e->mu);
    for (once__engine_watch **pp = bucket(e, w->principal, w->task_id); *pp != NULL;
         pp = &(*pp)->next) {
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    }
    pthread_mutex_unlock(&e->mu);
    once_free(w);
}

void once__follow_notify(once__engine *e, const char *principal, const char *task_id)
{
    if (principal == NULL) {
        for (size_t i = 0; i < ONCE__WATCH_BUCKETS; i++) {
            for (once__engine_watch *w = e->watches[i]; w != NULL; w = w->next)
                w->fn(w->arg);
        }
        return;
    }
    for (once__engine_watch *w = *bucket(e, principal, task_id); w != NULL; w = w->next) {
        if (strcmp(w->task_id, task_id) == 0 && strcmp(w->principal, principal) == 0)
            w->fn(w->arg);
    }
}

void once__follow_each_key(once__engine *e, once__key_fn fn, void *arg)
{
    for (size_t i = 0; i < ONCE__WATCH_BUCKETS; i++)
        for (once__engine_watch *w = e->watches[i]; w != NULL; w = w->next)
            fn(arg, w->principal, w->task_id);
}
