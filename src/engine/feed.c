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
 * A store without a feed (SQLite and DynamoDB, which other processes
 * share, and memory:, which other engines of this process may share) has
 * the shared poller instead (below): one round per tick asks for the
 * generations of every followed task at once and tells the keys that
 * moved.
 *
 * Polling on one's own is the fallback, never gone: once__engine_follow_poll_ms
 * says whether a follower must still read the store itself every
 * ONCE__POLL_MS. It must while the feed (or the poller) is down (not yet
 * connected, its connection failed, a round failed), and where neither
 * runs (ONCE_TEST_FEED=off). The feed going up or down
 * tells every follower at once (told(NULL)), after the switch: going
 * down, each reads the store and then polls; coming up (the subscription
 * already in place), each reads the store once, which catches what was
 * written while the feed was down, and then waits to be told. So no
 * update is missed in either direction, and none is reported twice (a
 * follower reports what it reads, by generation).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc_int.h"
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

/* Tell the followers of each key in l (counted), and let the journal's
 * counts waiting on those tasks go at the next pass. */
static void tell_keys(once__engine *e, const once_key_list *l)
{
    if (l->n == 0)
        return;
    __atomic_fetch_add(&e->stats.feed_keys, (uint64_t)l->n, __ATOMIC_RELAXED);
    pthread_mutex_lock(&e->mu);
    for (size_t i = 0; i < l->n; i++)
        told(e, l->v[i].principal, l->v[i].task_id);
    pthread_mutex_unlock(&e->mu);
    for (size_t i = 0; i < l->n; i++)
        once__journal_touch(e, l->v[i].principal, l->v[i].task_id);
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
        tell_keys(e, &keys);
        once_key_list_clear(&keys);
    }
    if (live)
        __atomic_store_n(&e->feed_live, 0, __ATOMIC_RELEASE);
    once_store_feed_close(f);
    return NULL;
}

/* --- the shared poller: stores without a feed ----------------------------------
 *
 * SQLite, DynamoDB and memory: (which other engines of this process may
 * share) tell nobody of their writes, so one thread per engine asks for
 * the generations of every followed task, ONCE_STORE_GENERATIONS_MAX per
 * call (one statement's read, one BatchGetItem), every POLL tick, and
 * tells the followers of each key whose generation moved, or that it sees
 * for the first time (a follower registered before it looked, so a write
 * between its look and this round is told). While its rounds succeed
 * followers do not poll on their own (the same `feed_live`); a failed
 * round makes them poll until one succeeds, as a lost feed does. Rounds
 * are paced so a replica makes at most ROUND_CALLS_PER_S calls a second:
 * a tick of n keys is at least n / 100 / ROUND_CALLS_PER_S seconds. */

#define ROUND_CALLS_PER_S 100

/* What a round follows: every key once, packed ("principal\0task_id\0" in
 * one text), with the generation the store answered, found by an
 * open-addressed table of key indices. A round is rebuilt from the keys
 * followed at its start and kept until the next one compares with it, so
 * each followed task costs two rounds of this: about 60 bytes plus its IDs
 * each, not two fixed-size once_keys (ten thousand streams are ten thousand
 * keys). */
typedef struct round {
    char *text;          /* the keys' strings */
    size_t len, size;
    uint32_t *at;        /* key i's principal at text + at[i], its task ID after it */
    int64_t *gen;        /* key i's generation; -2 = not asked yet */
    size_t n, cap;
    uint32_t *slot;      /* key index + 1, 0 = empty; a power of two, >= 2 n */
    size_t slots;
    int oom;
} round;

static const char *key_task(const round *r, size_t i)
{
    const char *p = r->text + r->at[i];
    return p + strlen(p) + 1;
}

/* The slot of (principal, task_id): holding its index + 1, or empty. */
static uint32_t *round_slot(const round *r, const char *principal, const char *task_id)
{
    size_t i = once__key_hash(principal, task_id) & (r->slots - 1);
    for (; r->slot[i] != 0; i = (i + 1) & (r->slots - 1)) {
        size_t k = r->slot[i] - 1;
        if (strcmp(r->text + r->at[k], principal) == 0 && strcmp(key_task(r, k), task_id) == 0)
            break;
    }
    return &r->slot[i];
}

/* Key index of (principal, task_id) in r, or -1. */
static long round_find(const round *r, const char *principal, const char *task_id)
{
    if (r->slots == 0)
        return -1;
    uint32_t v = *round_slot(r, principal, task_id);
    return v != 0 ? (long)v - 1 : -1;
}

static int round_grow(round *r, size_t more)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 64;
        uint32_t *at = once_realloc(r->at, cap * sizeof *at);
        if (at == NULL)
            return ONCE_ENOMEM;
        r->at = at;
        int64_t *gen = once_realloc(r->gen, cap * sizeof *gen);
        if (gen == NULL)
            return ONCE_ENOMEM;
        r->gen = gen;
        r->cap = cap;
    }
    if (r->len + more > r->size) {
        size_t size = r->size ? 2 * r->size : 4096;
        while (size < r->len + more)
            size *= 2;
        char *t = once_realloc(r->text, size);
        if (t == NULL)
            return ONCE_ENOMEM;
        r->text = t;
        r->size = size;
    }
    if (2 * (r->n + 1) > r->slots) {   /* rehash what is held */
        size_t slots = r->slots ? 2 * r->slots : 128;
        uint32_t *v = once_calloc(slots, sizeof *v);
        if (v == NULL)
            return ONCE_ENOMEM;
        once_free(r->slot);
        r->slot = v;
        r->slots = slots;
        for (size_t k = 0; k < r->n; k++)
            *round_slot(r, r->text + r->at[k], key_task(r, k)) = (uint32_t)(k + 1);
    }
    return ONCE_OK;
}

static void round_add(void *arg, const char *principal, const char *task_id)
{
    round *r = arg;
    if (r->oom || round_find(r, principal, task_id) >= 0)
        return;
    size_t lp = strlen(principal) + 1, lt = strlen(task_id) + 1;
    if (r->len + lp + lt > UINT32_MAX || round_grow(r, lp + lt) != ONCE_OK) {
        r->oom = 1;
        return;
    }
    r->at[r->n] = (uint32_t)r->len;
    memcpy(r->text + r->len, principal, lp);
    memcpy(r->text + r->len + lp, task_id, lt);
    r->len += lp + lt;
    r->gen[r->n] = -2;
    *round_slot(r, principal, task_id) = (uint32_t)(r->n + 1);
    r->n++;
}

static void round_free(round *r)
{
    once_free(r->text);
    once_free(r->at);
    once_free(r->gen);
    once_free(r->slot);
    memset(r, 0, sizeof *r);
}

static void key_of(const round *r, size_t i, once_key *k)
{
    snprintf(k->principal, sizeof k->principal, "%s", r->text + r->at[i]);
    snprintf(k->task_id, sizeof k->task_id, "%s", key_task(r, i));
}

/* One round: ask, compare with what the last round saw, tell. ONCE_OK
 * with *cur the new picture, or the store's error (nothing told). ask is
 * room for ONCE_STORE_GENERATIONS_MAX keys. */
static int poll_round(once__engine *e, const round *last, round *cur, once_key *ask)
{
    pthread_mutex_lock(&e->mu);
    once__follow_each_key(e, round_add, cur);
    once__await_each_key(e, round_add, cur);
    for (once__waiter *w = e->waiters; w != NULL; w = w->next)
        round_add(cur, w->principal, w->task_id);
    pthread_mutex_unlock(&e->mu);
    if (cur->oom)
        return ONCE_ENOMEM;
    once_key_list moved = {NULL, 0};
    size_t cap = 0;
    int rc = ONCE_OK;
    for (size_t i = 0; rc == ONCE_OK && i < cur->n; i += ONCE_STORE_GENERATIONS_MAX) {
        size_t n = cur->n - i < ONCE_STORE_GENERATIONS_MAX ? cur->n - i
                                                           : ONCE_STORE_GENERATIONS_MAX;
        for (size_t j = 0; j < n; j++)
            key_of(cur, i + j, &ask[j]);
        rc = once__store_rc(e, once_store_generations(e->store, ask, n, cur->gen + i));
        for (size_t j = 0; rc == ONCE_OK && j < n; j++) {
            long was = round_find(last, ask[j].principal, ask[j].task_id);
            if (was >= 0 && last->gen[was] == cur->gen[i + j])
                continue;
            if (moved.n == cap && once__grow(&moved.v, &cap, sizeof *moved.v, 16) != ONCE_OK)
                rc = ONCE_ENOMEM;
            else
                moved.v[moved.n++] = ask[j];
        }
    }
    if (rc == ONCE_OK)
        tell_keys(e, &moved);
    once_key_list_clear(&moved);
    return rc;
}

static void *poller_main(void *arg)
{
    once__engine *e = arg;
    round last;
    memset(&last, 0, sizeof last);
    once_key *ask = once_calloc(ONCE_STORE_GENERATIONS_MAX, sizeof *ask);
    int live = 0;
    int64_t backoff = FEED_BACKOFF_MIN_MS;
    for (;;) {
        round cur;
        memset(&cur, 0, sizeof cur);
        int rc = ask != NULL ? poll_round(e, &last, &cur, ask) : ONCE_ENOMEM;
        int64_t pause = ONCE__POLL_MS;
        if (rc != ONCE_OK) {
            round_free(&cur);
            if (live)
                set_live(e, 0);
            live = 0;
            pause = backoff;
            backoff = backoff * 2 > FEED_BACKOFF_MAX_MS ? FEED_BACKOFF_MAX_MS : backoff * 2;
        } else {
            backoff = FEED_BACKOFF_MIN_MS;
            if (!live)
                set_live(e, 1);   /* every follower reads once, then waits to be told */
            live = 1;
            round_free(&last);
            last = cur;
            int64_t calls = (int64_t)(last.n + ONCE_STORE_GENERATIONS_MAX - 1) /
                            ONCE_STORE_GENERATIONS_MAX;
            if (calls * 1000 / ROUND_CALLS_PER_S > pause)
                pause = calls * 1000 / ROUND_CALLS_PER_S;
        }
        if (once__engine_pause(e, pause))
            break;
    }
    round_free(&last);
    once_free(ask);
    __atomic_store_n(&e->feed_live, 0, __ATOMIC_RELEASE);
    return NULL;
}

int once__feed_start(once__engine *e)
{
    if (!(once_store_caps(e->store) & (ONCE_STORE_FEED | ONCE_STORE_GENERATIONS)))
        return ONCE_OK;
    /* A test and benchmark hook: with ONCE_TEST_FEED=off neither the feed
     * nor the shared poller runs, so a run can show what followers cost
     * without them (each polls on its own). */
    const char *hook = getenv("ONCE_TEST_FEED");
    if (hook != NULL && strcmp(hook, "off") == 0)
        return ONCE_OK;
    void *(*main_fn)(void *) = (once_store_caps(e->store) & ONCE_STORE_FEED) ? feeder_main
                                                                            : poller_main;
    if (pthread_create(&e->feeder, NULL, main_fn, e) != 0)
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