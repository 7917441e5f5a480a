/*
 * mem.h -- what the memory store shows beyond its method table: counters
 * for the tests (tests/unit/test_store_mem*.c), so that "a retention pass
 * costs what it removes" is checked by counting, not by timing, and a test
 * of cold tasks waits for them to be cold. What the engine reads of it
 * (the budget) goes through the budget slot (once/store.h).
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

#endif /* ONCE_STORE_MEM_H */
