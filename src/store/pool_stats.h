/*
 * pool_stats.h -- what the connection pools of a networked store
 * (PostgreSQL, Redis: store/pool.h) show the engine's /metrics (not API).
 *
 * A store with pools has two: `calls` runs the slots one call at a time,
 * `batch` the group commits (store/batch.h), one connection per batch in
 * flight. Every number is read under the pool's lock, each pool on its
 * own, so the two may be a moment apart.
 */
#ifndef ONCE_STORE_POOL_STATS_H
#define ONCE_STORE_POOL_STATS_H

#include <stdint.h>

#include "once/store.h"

typedef struct once__pool_stats {
    uint64_t max;     /* connections it may open (the URL's pool=, or batch=) */
    uint64_t open;    /* open now, or being opened */
    uint64_t in_use;  /* of them, held by a caller now (being opened counts) */
    uint64_t waiting; /* callers in line for a connection now */
    uint64_t waits;   /* callers that had to wait in line, in all */
    uint64_t wait_ns; /* the time they waited, in all (timed out ones too) */
} once__pool_stats;

/* 1 with calls and batch filled if s is a store with pools, else 0.
 * batch->max is 0 when the store runs every write alone (batch=0). */
int once__store_pool_stats(once_store *s, once__pool_stats *calls, once__pool_stats *batch);

/* The backends' (pg/pg.c, redis/redis.c): s is theirs. */
void once__pg_pool_stats(once_store *s, once__pool_stats *calls, once__pool_stats *batch);
void once__rd_pool_stats(once_store *s, once__pool_stats *calls, once__pool_stats *batch);

#endif
