/*
 * engine.c -- engine lifecycle: configuration defaults, the derived-ID
 * secret, start / stop of the background threads, accessors and stats.
 *
 * Invariants: once__engine_new leaves an engine that can serve send / get /
 * cancel / list synchronously (turns queue until once__engine_start); the
 * secret is read from the store itself (insert-if-absent), so every replica
 * sharing a store derives the same task ID for the same first message.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/str.h"
#include "core/errbuf.h"
#include "engine/engine_int.h"

#define DEFAULT_LEASE_MS 15000
#define DEFAULT_RETENTION_MS (72LL * 3600 * 1000)
#define DEFAULT_TOMBSTONE_MS (30LL * 24 * 3600 * 1000)
#define DEFAULT_SWEEP_MS 1000
#define DEFAULT_MAX_WAIT_MS 60000
#define DEFAULT_WORKERS 16
#define DEFAULT_MAX_WAITS 10000
#define MAX_WORKERS 1024
#define DEFAULT_QUEUE_PER_WORKER 16
#define DEFAULT_ADMIT_WAIT_MS 100
#define MAX_QUEUE (1 << 20)
#define DEFAULT_MAX_TASK_BYTES ((int64_t)4 << 20)
#define SECRET_BYTES 32

int64_t once__now(const once__engine *e)
{
    return once_now(e->clock);
}

int once__stopping(const once__engine *e)
{
    return __atomic_load_n(&e->stopping, __ATOMIC_ACQUIRE);
}

int once__engine_pause(once__engine *e, int64_t ms)
{
    int64_t until = once_monotonic_ms() + ms;
    pthread_mutex_lock(&e->mu);
    while (!e->stopping) {
        int64_t left = until - once_monotonic_ms();
        if (left <= 0)
            break;
        once__cond_wait_ms(&e->cancel_cv, &e->mu, left);
    }
    int stop = e->stopping;
    pthread_mutex_unlock(&e->mu);
    return stop;
}

/* Without a lock, as Dekker's pair: a call counts itself, then looks at
 * `stopping`; stop sets `stopping`, then looks at the count (both
 * sequentially consistent). Either the call sees it stopping and leaves, or
 * stop sees it counted and waits for it. */
int once__engine_enter(once__engine *e)
{
    __atomic_add_fetch(&e->inflight, 1, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&e->stopping, __ATOMIC_SEQ_CST))
        return ONCE_OK;
    once__engine_leave(e);
    return ONCE_ECLOSED;
}

/* The last call out wakes a stop that waits for it (stop also looks every
 * few ms, so a wake-up that races its wait costs at most that). */
void once__engine_leave(once__engine *e)
{
    if (__atomic_sub_fetch(&e->inflight, 1, __ATOMIC_SEQ_CST) == 0 &&
        __atomic_load_n(&e->stopping, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&e->mu);
        pthread_cond_broadcast(&e->cancel_cv);
        pthread_mutex_unlock(&e->mu);
    }
}

int once__store_rc(once__engine *e, int rc)
{
    if (rc == ONCE_ESTORE || rc == ONCE_EBUSY) {
        ONCE__STAT(e, store_errors);
        once__log_store_error(rc);
        once__hold_takeovers(e);
    }
    return rc;
}

int once__load_found(once__engine *e, const char *principal, const char *task_id,
                     once_record *rec)
{
    int rc = once__store_rc(e, once_store_load(e->store, principal, task_id, rec, NULL));
    return rc == ONCE_ETOMBSTONE ? ONCE_ENOTFOUND : rc;
}

void once__hold_takeovers(once__engine *e)
{
    __atomic_store_n(&e->takeover_after, once__now(e) + e->cfg.lease_ms, __ATOMIC_RELEASE);
}

int once__takeovers_held(const once__engine *e)
{
    return once__now(e) < __atomic_load_n(&e->takeover_after, __ATOMIC_ACQUIRE);
}

static void default_replica_id(char out[ONCE_OWNER_MAX + 1])
{
    char host[256];
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "host");
    host[sizeof host - 1] = '\0';
    /* Keep the pid whole: it is what tells two replicas on one host apart. */
    char pid[24];
    int plen = snprintf(pid, sizeof pid, "-%ld", (long)getpid());
    size_t hmax = ONCE_OWNER_MAX - (size_t)plen;
    snprintf(out, ONCE_OWNER_MAX + 1, "%.*s%s", (int)hmax, host, pid);
}

/* Read (or create, on the first replica) the secret behind derived IDs. */
static int load_secret(once__engine *e, char *err, size_t errlen)
{
    uint8_t raw[SECRET_BYTES];
    int rc = e->rng->fill(e->rng, raw, sizeof raw);
    if (rc != ONCE_OK) {
        snprintf(err, errlen, "rng failed: %s", once_strerror(rc));
        return rc;
    }
    char hex[2 * SECRET_BYTES + 1];
    once_hex(raw, sizeof raw, hex);
    rc = once_store_meta(e->store, "derived_id_secret", hex, &e->secret);
    if (rc != ONCE_OK) {
        snprintf(err, errlen, "reading derived_id_secret: %s (%s)", once_strerror(rc),
                 once_store_errmsg(e->store));
        return rc;
    }
    if (e->secret == NULL || e->secret[0] == '\0') {
        snprintf(err, errlen, "derived_id_secret is empty");
        return ONCE_ECORRUPT;
    }
    return ONCE_OK;
}

/* The engine's lock and its condition variables (CLOCK_MONOTONIC). On
 * failure none is left initialised and err says which kind failed. */
static int init_sync(once__engine *e, char *err, size_t errlen)
{
    pthread_cond_t *const cvs[] = {&e->work_cv, &e->cancel_cv, &e->await_cv, &e->room_cv};
    if (pthread_mutex_init(&e->mu, NULL) != 0) {
        snprintf(err, errlen, "mutex init failed");
        return ONCE_ENOMEM;
    }
    for (size_t i = 0; i < sizeof cvs / sizeof cvs[0]; i++) {
        if (once__cond_init(cvs[i]) != ONCE_OK) {
            while (i > 0)
                pthread_cond_destroy(cvs[--i]);
            pthread_mutex_destroy(&e->mu);
            snprintf(err, errlen, "condvar init failed");
            return ONCE_ENOMEM;
        }
    }
    return ONCE_OK;
}

int once__engine_new(const once__engine_config *cfg, once__engine **out, char *err, size_t errlen)
{
    err = once__errbuf(err, &errlen);
    if (out == NULL || cfg == NULL || cfg->store == NULL) {
        snprintf(err, errlen, "a store is required");
        return ONCE_EINVAL;
    }
    *out = NULL;
    if (cfg->lease_ms < 0 || cfg->heartbeat_ms < 0 || cfg->retention_ms < 0 ||
        cfg->tombstone_ms < 0 || cfg->sweep_interval_ms < 0 || cfg->max_wait_ms < 0 ||
        cfg->workers < 0 || cfg->workers > MAX_WORKERS || cfg->max_queue < 0 ||
        cfg->max_queue > MAX_QUEUE || cfg->max_queue_per_principal < ONCE__SHARE_QUARTER ||
        cfg->max_task_bytes < 0 || cfg->admit_wait_ms < -1) {
        snprintf(err, errlen, "negative or out-of-range engine setting");
        return ONCE_EINVAL;
    }
    /* No default agent: an engine that silently ran echo for a caller who
     * forgot to wire theirs would complete every task with a wrong answer. */
    if (cfg->executor == NULL || cfg->executor->run == NULL) {
        snprintf(err, errlen, "an executor is required (once_executor_echo() is the built-in)");
        return ONCE_EINVAL;
    }
    if (cfg->replica_id != NULL &&
        (cfg->replica_id[0] == '\0' || strlen(cfg->replica_id) > ONCE_OWNER_MAX)) {
        snprintf(err, errlen, "replica id must be 1..%d characters", ONCE_OWNER_MAX);
        return ONCE_EINVAL;
    }

    once__engine *e = once_calloc(1, sizeof *e);
    if (e == NULL) {
        snprintf(err, errlen, "out of memory");
        return ONCE_ENOMEM;
    }
    e->cfg = *cfg;
    e->store = cfg->store;
    e->clock = cfg->clock != NULL ? cfg->clock : once_clock_system();
    e->rng = cfg->rng != NULL ? cfg->rng : once_rng_system();
    e->ex = cfg->executor;
    if (cfg->replica_id != NULL)
        once__strlcpy(e->replica_id, cfg->replica_id, sizeof e->replica_id);
    else
        default_replica_id(e->replica_id);

    once__engine_config *c = &e->cfg;
    if (c->lease_ms == 0)
        c->lease_ms = DEFAULT_LEASE_MS;
    if (c->heartbeat_ms == 0)
        c->heartbeat_ms = c->lease_ms / 3 > 0 ? c->lease_ms / 3 : 1;
    if (c->retention_ms == 0)
        c->retention_ms = DEFAULT_RETENTION_MS;
    if (c->tombstone_ms == 0)
        c->tombstone_ms = DEFAULT_TOMBSTONE_MS;
    if (c->sweep_interval_ms == 0)
        c->sweep_interval_ms = DEFAULT_SWEEP_MS;
    if (c->max_wait_ms == 0)
        c->max_wait_ms = DEFAULT_MAX_WAIT_MS;
    if (c->workers == 0)
        c->workers = DEFAULT_WORKERS;
    if (c->max_waits <= 0)
        c->max_waits = DEFAULT_MAX_WAITS;
    c->max_waits_per_principal =
        (int)once__share_of(c->max_waits_per_principal == 0 ? ONCE__SHARE_QUARTER
                                                            : c->max_waits_per_principal,
                            c->max_waits);
    if (c->max_queue == 0)
        c->max_queue = DEFAULT_QUEUE_PER_WORKER * c->workers;
    c->max_queue_per_principal = (int)once__share_of(c->max_queue_per_principal, c->max_queue);
    if (c->max_task_bytes == 0)
        c->max_task_bytes = DEFAULT_MAX_TASK_BYTES;
    if (c->admit_wait_ms == 0)
        c->admit_wait_ms = DEFAULT_ADMIT_WAIT_MS;
    e->stats.workers = (uint64_t)c->workers;
    e->stats.queue_max = (uint64_t)c->max_queue;

    if (init_sync(e, err, errlen) != ONCE_OK) {
        once_free(e);
        return ONCE_ENOMEM;
    }
    int rc = load_secret(e, err, errlen);
    if (rc != ONCE_OK) {
        once__engine_free(e);
        return rc;
    }
    *out = e;
    return ONCE_OK;
}

int once__engine_start(once__engine *e)
{
    if (e == NULL)
        return ONCE_EINVAL;
    pthread_mutex_lock(&e->mu);
    int already = e->started;
    e->started = 1;
    pthread_mutex_unlock(&e->mu);
    if (already)
        return ONCE_OK;
    e->started_at = once__now(e);
    once__hold_takeovers(e);
    int rc = once__dispatch_start(e);
    if (rc == ONCE_OK)
        rc = once__sweeper_start(e);
    if (rc == ONCE_OK)
        rc = once__feed_start(e);
    if (rc == ONCE_OK)
        rc = once__push_start(e);
    return rc;
}

void once__engine_stop(once__engine *e)
{
    if (e == NULL)
        return;
    once__engine_await_release(e);   /* deferred sends answer now, as they stand */
    pthread_mutex_lock(&e->mu);
    int already = e->stopped, started = e->started;
    e->stopped = 1;
    __atomic_store_n(&e->stopping, 1, __ATOMIC_SEQ_CST);
    pthread_cond_broadcast(&e->work_cv);
    pthread_cond_broadcast(&e->cancel_cv);
    pthread_cond_broadcast(&e->room_cv);
    for (once__waiter *w = e->waiters; w != NULL; w = w->next)
        pthread_cond_signal(&w->cv);
    /* Blocked sends saw `stopping` and are on their way out. */
    while (__atomic_load_n(&e->inflight, __ATOMIC_SEQ_CST) > 0)
        once__cond_wait_ms(&e->cancel_cv, &e->mu, 5);
    pthread_mutex_unlock(&e->mu);

    if (already)
        return;
    if (e->sweeper_started)
        pthread_join(e->sweeper, NULL);
    once__feed_stop(e);
    once__dispatch_stop(e);
    once__push_stop(e);   /* after the workers: their writes still kick it */
    if (started)
        once__replica_beat(e, 1);   /* leases released: say so before leaving */
}

void once__engine_free(once__engine *e)
{
    if (e == NULL)
        return;
    once__engine_stop(e);
    once__push_free_state(e);
    once__journal_free(e);
    pthread_cond_destroy(&e->room_cv);
    pthread_cond_destroy(&e->await_cv);
    pthread_cond_destroy(&e->cancel_cv);
    pthread_cond_destroy(&e->work_cv);
    pthread_mutex_destroy(&e->mu);
    once_free(e->secret);
    once_free(e);
}

const char *once__engine_replica_id(const once__engine *e)
{
    return e->replica_id;
}

const once__engine_config *once__engine_cfg(const once__engine *e)
{
    return &e->cfg;
}

int once__engine_store_synchronous(once__engine *e, int *level)
{
    return once_store_synchronous(e->store, level);
}

int64_t once__engine_retention_ms(const once__engine *e)
{
    return e->cfg.retention_ms;
}

int64_t once__engine_tombstone_ms(const once__engine *e)
{
    return e->cfg.tombstone_ms;
}

void once__engine_get_stats(once__engine *e, once__engine_stats *out)
{
    once_budget b;
    int mem = once__budget_count(e, &b);   /* early_expired up to date first */
    const uint64_t *src = (const uint64_t *)&e->stats;
    uint64_t *dst = (uint64_t *)out;
    for (size_t i = 0; i < sizeof *out / sizeof(uint64_t); i++)
        dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
    if (mem) {
        out->mem_bytes = b.bytes;
        out->mem_max_bytes = b.max_bytes;
        out->mem_tasks = b.live;
        out->mem_tombstones = b.tombs;
        out->mem_cold = b.cold;
    }
}
