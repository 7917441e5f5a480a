/*
 * mem.h -- what the memory store shows beyond its method table: counters
 * for the tests (tests/unit/test_store_mem*.c), so that "a retention pass
 * costs what it removes" is checked by counting, not by timing, and a test
 * of cold tasks waits for them to be cold.
 */
#ifndef ONCE_STORE_MEM_H
#define ONCE_STORE_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "once/store.h"

/* Entries looked at so far by expired_leases, sweep and purge on s, which
 * must be a memory: store. */
uint64_t once__mem_visits(once_store *s);

/* Finished tasks the sweeps of s (a memory: store) have deflated so far:
 * what a test waits for before it reads them back. */
uint64_t once__mem_cools(once_store *s);

/* What a memory: store's budget (memory:?max=SIZE) sees, for the engine's
 * sweep to count and log and for its stats. */
typedef struct once__mem_budget {
    size_t max_bytes;         /* the budget; 0: none */
    size_t bytes, tomb_bytes; /* held now: in all, by tombstones */
    uint64_t early;           /* finished tasks expired early, in all */
    uint64_t early_new;       /* of them, since the last call */
    int64_t early_last;       /* finished_at of the newest one expired early */
    size_t live, tombs;       /* tasks held (running or finished), tombstones held */
} once__mem_budget;

/* 1 if s is a memory: store. */
int once__mem_store(const once_store *s);

/* The budget of s (memory:?max, fixed at open), or 0: none, or s is not a
 * memory: store. */
size_t once__mem_max_bytes(once_store *s);

/* 1 with *out filled if s is a memory: store (its early_new is then
 * counted as told: the next call reports what came after), else 0. */
int once__mem_budget_take(once_store *s, once__mem_budget *out);
/* The same, with early_new left to be told (stats, tests). */
int once__mem_budget_peek(once_store *s, once__mem_budget *out);

#endif /* ONCE_STORE_MEM_H */
