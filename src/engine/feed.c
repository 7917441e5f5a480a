/*
 * feed.c -- other replicas' writes, told by the store: one thread per
 * engine reads the store's change feed (PostgreSQL LISTEN/NOTIFY, Redis
 * pub/sub: the feed_* slots) and tells every follower of the keys it
 * names, so following a task costs the store nothing while it does not
 * move, however many follow it (docs/design.md section 13).
 *
 * Followers are the engine's own: deferred waits (await.c), blocking
 * follow waits (follow.c's waiters) and watches (follow.c, the SSE hub's
 * streams). A key the feed names reaches them exactly as a local write of
 * it does; each then reads the store to see what moved (the feed names a
 * key, not a generation), so a key told twice or told for nothing costs a
 * read and nothing else.
 *
 * Polling is the fallback, never gone: once__engine_follow_poll_ms says
 * whether a follower must still read the store on its own every
 * ONCE__POLL_MS. It must while the feed is down (not yet connected, or its
 * connection failed), and on a store without a feed (SQLite and DynamoDB,
 * which other processes share, and memory:, which other engines of this
 * process may share). The feed going up or down
 * tells every follower at once (told(NULL)), after the switch: going
 * down, each reads the store and then polls; coming up (the subscription
 * already in place), each reads the store once, which catches what was
 * written while the feed was down, and then waits to be told. So no
 * update is missed in either direction, and none is reported twice (a
 * follower reports what it reads, by generation).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_int.h"

#define FEED_WAIT_MS 100          /* a feed read's longest wait: how soon stop is seen */
#define FEED_BACKOFF_MIN_MS 100   /* after a failure, before connecting again */
#define FEED_BACKOFF_MAX_MS 2000

int64_t once__engine_follow_poll_ms(once__engine *e)
{
    return __atomic_load_n(&e->feed_live, __ATOMIC_ACQUIRE) ? 0 : ONCE__POLL_MS;
}

/* Under e->mu: the key's task may have moved elsewhere (NULL: any task). */
static void told(once__engine *e, const char *principal, const char *task_id)
{
    once__await_told(e, principal, task_id);
    for (once__waiter *w = e->waiters; w != NULL; w = w->next) {
        if (principal == NULL ||
            (strcmp(w->task_id, task_id) == 0 && strcmp(w->principal, principal) == 0)) {
            w->fired = 1;
            pthread_cond_signal(&w->cv);
        }
    }
    once__follow_notify(e, principal, task_id);
}

/* The feed went up (1) or down (0): switch, then tell everyone. */
static void set_live(once__engine *e, int live)
{
    __atomic_store_n(&e->feed_live, live, __ATOMIC_RELEASE);
    __atomic_store_n(&e->stats.feed_up, (uint64_t)live, __ATOMIC_RELAXED);
    if (!live)
        ONCE__STAT(e, feed_lost);
    pthread_mutex_lock(&e->mu);
    told(e, NULL, NULL);
    pthread_mutex_unlock(&e->mu);
}

static void *feeder_main(void *arg)
{
    once__engine *e = arg;
    once_store_feed *f = NULL;
    int live = 0;
    int64_t backoff = FEED_BACKOFF_MIN_MS;
    int rc = once_store_feed_open(e->store, &f);
    while (rc == ONCE_OK && !once__stopping(e)) {
        once_key_list keys;
        int lost = 0;
        rc = once_store_feed_next(f, FEED_WAIT_MS, &keys, &lost);
        if (rc != ONCE_OK) {
            once_key_list_clear(&keys);
            if (live)
                set_live(e, 0);
            live = 0;
            if (once__engine_pause(e, backoff))
                break;
            backoff = backoff * 2 > FEED_BACKOFF_MAX_MS ? FEED_BACKOFF_MAX_MS : backoff * 2;
            rc = ONCE_OK;   /* the feed connects again at its next call */
            continue;
        }
        backoff = FEED_BACKOFF_MIN_MS;
        if (lost || !live) {
            live = 1;
            set_live(e, 1);
        }
        if (keys.n > 0) {
            __atomic_fetch_add(&e->stats.feed_keys, (uint64_t)keys.n, __ATOMIC_RELAXED);
            pthread_mutex_lock(&e->mu);
            for (size_t i = 0; i < keys.n; i++)
                told(e, keys.v[i].principal, keys.v[i].task_id);
            pthread_mutex_unlock(&e->mu);
            for (size_t i = 0; i < keys.n; i++)
                once__journal_touch(e, keys.v[i].principal, keys.v[i].task_id);
        }
        once_key_list_clear(&keys);
    }
    if (live)
        __atomic_store_n(&e->feed_live, 0, __ATOMIC_RELEASE);
    once_store_feed_close(f);
    return NULL;
}

int once__feed_start(once__engine *e)
{
    if (!(once_store_caps(e->store) & ONCE_STORE_FEED))
        return ONCE_OK;
    /* A test and benchmark hook: with ONCE_TEST_FEED=off no feed runs, so
     * a run can show what followers cost without one (they poll). */
    const char *hook = getenv("ONCE_TEST_FEED");
    if (hook != NULL && strcmp(hook, "off") == 0)
        return ONCE_OK;
    if (pthread_create(&e->feeder, NULL, feeder_main, e) != 0)
        return ONCE_ENOMEM;
    e->feeder_started = 1;
    return ONCE_OK;
}

void once__feed_stop(once__engine *e)
{
    if (e->feeder_started)
        pthread_join(e->feeder, NULL);
    e->feeder_started = 0;
}