/*
 * sweep.c -- the background pass every replica runs: takeover of expired
 * leases (docs/design.md section 5) and retention (section 7).
 *
 * Takeover: for each non-terminal record whose lease expired, CAS it with
 * fence + 1 and this replica as lease owner, then run a turn with resumed=1
 * (the executor continues from the stored checkpoint and step). Exactly one
 * replica wins each CAS; the others see ECONFLICT and move on. The old
 * worker, if it still lives, is refused from then on (EFENCED). A replica
 * whose turn queue is full takes nothing over (another replica will), and
 * a key whose turn waits on this replica's own queue is left alone: taking
 * it over would only bump the fence of work already lined up here. For one
 * lease period after this replica started, and after it last saw the store
 * fail, it takes nothing over (once__takeovers_held): leases could not be
 * renewed while the store was away, and the owners' heartbeats need that
 * long to renew them once it is back.
 *
 * Retention: finished records older than retention_ms become tombstones;
 * tombstones older than tombstone_ms are purged. Both are bounded batches
 * so one pass never holds the store for long. A memory: store with a
 * budget (memory:?max) keeps it on its own, in the writes (store/mem.c);
 * the tasks it expired early are counted apart (early_expired) and logged
 * here with the window the store then keeps, and its sweeps, run at least
 * every BUDGET_SWEEP_MS, deflate the finished tasks it keeps.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "core/log.h"
#include "core/str.h"
#include "engine/engine_int.h"

#define TAKEOVER_BATCH 64
/* One pass sweeps (and purges) at most RETENTION_BATCH * RETENTION_ROUNDS
 * keys: with the default 1 s interval that must stay above the rate tasks
 * finish at, or the store holds more than the retention window (16 rounds
 * were below what one memory: replica serves: bench/README.md, "Memory over
 * 1M tasks on memory:"). */
#define RETENTION_BATCH 256
#define RETENTION_ROUNDS 64
/* Once retention has freed at least this many records or tombstones, and
 * at most once per TRIM_EVERY_MS, the free pages go back to the system
 * (glibc keeps them otherwise: freed chunks inside its heaps stay resident
 * until reused, so a store that shrank after a burst would keep its peak).
 * A trim walks the heap (milliseconds), hence the time bound for stores
 * swept many times a second. */
#define TRIM_AFTER 1024
#define TRIM_EVERY_MS 1000
/* A memory: store with a budget is swept at least this often: under
 * pressure its sweeps deflate what it keeps, so fewer tasks expire early. */
#define BUDGET_SWEEP_MS 100

/* Take one key over: an expired lease (the sweep), or with force a live
 * one (an operator's release: the holder's next write meets the new fence
 * and its turn stops). ONCE_OK also when someone else was faster, or,
 * without force, the key was re-leased since the scan; with force,
 * ONCE_ENOTFOUND for no live task and ONCE_ECONFLICT for one that holds no
 * lease (finished, or waiting for input). *fence (NULL ok): the new one. */
static int take_over(once__engine *e, const once_key *k, int64_t now, int force, int64_t *fence)
{
    once_record cur, next;
    int rc = once__load_found(e, k->principal, k->task_id, &cur);
    if (rc != ONCE_OK)
        return rc == ONCE_ENOTFOUND && !force ? ONCE_OK : rc;   /* gone: nothing to take over */
    if (once_state_terminal(cur.state) || cur.lease_until == 0 ||
        (!force && cur.lease_until >= now)) {
        once_record_clear(&cur);
        return force ? ONCE_ECONFLICT : ONCE_OK;   /* finished or re-leased since the scan */
    }
    rc = once_record_copy(&next, &cur);
    if (rc != ONCE_OK) {
        once_record_clear(&cur);
        return rc;
    }
    int run = cur.kind == ONCE_KIND_TASK && !once_state_interrupted(cur.state);
    next.fence = cur.fence + 1;
    if (run) {
        once__strlcpy(next.lease_owner, e->replica_id, sizeof next.lease_owner);
        next.lease_until = now + e->cfg.lease_ms;
    } else {
        /* Waiting for input: nobody runs it, so nobody holds a lease. */
        next.lease_owner[0] = '\0';
        next.lease_until = 0;
    }
    rc = once__journal_takeover(e, &cur, &next);
    if (rc == ONCE_OK)
        rc = once__write(e, &cur, &next, NULL);
    if (rc == ONCE_OK)
        once__log_takeover(e, &cur, &next, now, run);
    if (rc == ONCE_OK && run) {
        ONCE__STAT(e, takeovers);
        (void)once__dispatch(e, next.principal, next.task_id, next.fence, 1);
    }
    if (rc == ONCE_OK && fence != NULL)
        *fence = next.fence;
    once_record_clear(&cur);
    once_record_clear(&next);
    return rc == ONCE_ECONFLICT && !force ? ONCE_OK : rc;
}

int once__engine_take_over_now(once__engine *e, const char *principal, const char *task_id,
                               int64_t *fence)
{
    once_key k;
    if (strlen(principal) >= sizeof k.principal || strlen(task_id) >= sizeof k.task_id)
        return ONCE_ENOTFOUND;
    memcpy(k.principal, principal, strlen(principal) + 1);
    memcpy(k.task_id, task_id, strlen(task_id) + 1);
    return take_over(e, &k, once__now(e), 1, fence);
}

static int takeover_pass(once__engine *e)
{
    if (once__takeovers_held(e))
        return ONCE_OK;
    int64_t now = once__now(e);
    once_key_list keys;
    int rc = once_store_expired_leases(e->store, now, TAKEOVER_BATCH, &keys);
    if (rc != ONCE_OK) {
        once_key_list_clear(&keys);
        return once__store_rc(e, rc);
    }
    int first_err = ONCE_OK;
    for (size_t i = 0; i < keys.n && !once__stopping(e) && !once__queue_full(e); i++) {
        if (once__queue_holds(e, keys.v[i].principal, keys.v[i].task_id))
            continue;
        rc = take_over(e, &keys.v[i], now, 0, NULL);
        if (rc != ONCE_OK && first_err == ONCE_OK)
            first_err = rc;
    }
    once_key_list_clear(&keys);
    return first_err;
}

/* Give freed memory back once passes have freed much of it. The counts
 * are the process's, as the heap is: any engine's pass may trim. */
static void trim(size_t removed)
{
#ifdef __GLIBC__
    static uint64_t freed;
    static int64_t trimmed_at;
    int64_t now = once_monotonic_ms(), last = __atomic_load_n(&trimmed_at, __ATOMIC_RELAXED);
    if (__atomic_add_fetch(&freed, removed, __ATOMIC_RELAXED) < TRIM_AFTER ||
        now - last < TRIM_EVERY_MS ||
        !__atomic_compare_exchange_n(&trimmed_at, &last, now, 0, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED))
        return;
    __atomic_store_n(&freed, 0, __ATOMIC_RELAXED);
    (void)malloc_trim(0);
#else
    (void)removed;
#endif
}

/* One retention kind, in batches until one comes back short (or after
 * RETENTION_ROUNDS): finished tasks past --retention turned into tombstones,
 * or (tombstones) tombstones past theirs deleted. Each is counted in its
 * stats field and added to *removed. */
static int retention_rounds(once__engine *e, int tombstones, int64_t now, size_t *removed)
{
    uint64_t *counter = tombstones ? &e->stats.purged : &e->stats.swept;
    for (int i = 0; i < RETENTION_ROUNDS; i++) {
        size_t n = 0;
        int rc = tombstones
                     ? once_store_purge(e->store, now - e->cfg.tombstone_ms, RETENTION_BATCH, &n)
                     : once_store_sweep(e->store, now - e->cfg.retention_ms, now,
                                        RETENTION_BATCH, &n);
        if (rc != ONCE_OK)
            return once__store_rc(e, rc);
        __atomic_fetch_add(counter, (uint64_t)n, __ATOMIC_RELAXED);
        *removed += n;
        if (n < RETENTION_BATCH)
            break;
    }
    return ONCE_OK;
}

/* Log an over-budget memory: store at most this often (it may be over at
 * every pass for as long as the load lasts). */
#define BUDGET_LOG_MS 60000

/* Tasks expired early but not yet logged, over every engine of the
 * process (one log for the process). */
static uint64_t unlogged;

int once__budget_count(once__engine *e, once_budget *b)
{
    if (once_store_budget(e->store, b, 1) != ONCE_OK)
        return 0;
    if (b->early_new) {
        __atomic_fetch_add(&e->stats.early_expired, b->early_new, __ATOMIC_RELAXED);
        __atomic_fetch_add(&unlogged, b->early_new, __ATOMIC_RELAXED);
    }
    return 1;
}

/* After the sweep rounds: the tasks a memory: store over its budget
 * expired early (by the writes that needed room, or by the sweep),
 * counted, and now and then a line with the window it keeps (how long ago
 * the newest of them finished). Returns how many the store expired early
 * since the last call (memory freed, as trim counts it). */
static size_t budget_note(once__engine *e, int64_t now)
{
    static int64_t logged_at;   /* any engine's last line */
    static uint64_t early_seen; /* b.early at the last call: what trim was told */
    once_budget b;

    if (!once__budget_count(e, &b))
        return 0;
    size_t freed = (size_t)(b.early - __atomic_exchange_n(&early_seen, b.early, __ATOMIC_RELAXED));
    if (__atomic_load_n(&unlogged, __ATOMIC_RELAXED) == 0)
        return freed;
    int64_t last = __atomic_load_n(&logged_at, __ATOMIC_RELAXED);
    if (last && now - last < BUDGET_LOG_MS)
        return freed;
    if (!__atomic_compare_exchange_n(&logged_at, &last, now, 0, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED))
        return freed;   /* another engine's sweep is logging */
    uint64_t n = __atomic_exchange_n(&unlogged, 0, __ATOMIC_RELAXED);
    once__logline l;
    if (!once__log_begin(&l, ONCE_LOG_WARN, "store_over_budget"))
        return freed;
    once__log_int(&l, "expired_early", (int64_t)n);
    once__log_int(&l, "window_ms", now - b.early_last);
    once__log_int(&l, "held_bytes", (int64_t)b.bytes);
    once__log_int(&l, "tombstone_bytes", (int64_t)b.tomb_bytes);
    once__log_int(&l, "max_bytes", (int64_t)b.max_bytes);
    once__log_end(&l);
    return freed;
}

static int retention_pass(once__engine *e)
{
    int64_t now = once__now(e);
    size_t removed = 0;
    int rc = retention_rounds(e, 0, now, &removed);
    removed += budget_note(e, now);   /* the writes' expiries free memory too */
    if (rc == ONCE_OK)
        rc = retention_rounds(e, 1, now, &removed);
    if (rc == ONCE_OK)
        trim(removed);
    return rc;
}

int once__engine_sweep_once(once__engine *e)
{
    if (e == NULL)
        return ONCE_EINVAL;
    int rc = takeover_pass(e);
    int rc2 = retention_pass(e);
    int rc3 = once__journal_flush(e);
    ONCE__STAT(e, sweeps);
    return rc != ONCE_OK ? rc : rc2 != ONCE_OK ? rc2 : rc3;
}

static void *sweeper_main(void *arg)
{
    once__engine *e = arg;
    int64_t pause = e->cfg.sweep_interval_ms;
    once_budget b;
    if (once_store_budget(e->store, &b, 0) == ONCE_OK && b.max_bytes && pause > BUDGET_SWEEP_MS)
        pause = BUDGET_SWEEP_MS;
    while (!once__engine_pause(e, pause))
        (void)once__engine_sweep_once(e);
    return NULL;
}

int once__sweeper_start(once__engine *e)
{
    /* A test hook: with ONCE_TEST_SWEEPER=off no sweeper runs, so a test
     * can show what holds without one (the memory budget) and what does
     * not (takeovers, retention). */
    const char *hook = getenv("ONCE_TEST_SWEEPER");
    if (hook != NULL && strcmp(hook, "off") == 0)
        return ONCE_OK;
    if (pthread_create(&e->sweeper, NULL, sweeper_main, e) != 0)
        return ONCE_ENOMEM;
    e->sweeper_started = 1;
    return ONCE_OK;
}
