/*
 * alloc_int.h -- test hooks for the allocator, and the JSON parse guard
 * (not API).
 *
 * Fault sweeps (DESIGN/STYLE "fail the i-th allocation"): call
 * once__alloc_fail_after(-1), run the operation once and read
 * once__alloc_count() to learn how many allocations it makes; then for each
 * i in 0..count-1 call once__alloc_fail_after(i) and rerun: allocation number
 * i (0-based, counted from that call) returns NULL, every other succeeds.
 *
 * Counting covers once_malloc, once_calloc, once_realloc and everything built
 * on them (once_strdup, once_strndup, and every jansson allocation: JSON
 * values, parses, dumps). Both functions are thread-safe.
 */
#ifndef ONCE_CORE_ALLOC_INT_H
#define ONCE_CORE_ALLOC_INT_H

#include <stddef.h>

/* n >= 0: after n more successful allocations, the next one fails (once);
 * n == -1: disable injection. Either way the counter restarts at zero. */
void once__alloc_fail_after(long n);

/* Allocations attempted since the last once__alloc_fail_after() call,
 * including the failed one. Counting starts with the first such call: a
 * program that never makes one pays nothing for it. */
long once__alloc_count(void);

/* Make room in a growing array: pv points at the array pointer (T **),
 * which holds *cap elements of size bytes, all in use. Doubles *cap (to
 * first from 0) through once_realloc. ONCE_ENOMEM, array and *cap as they
 * were, when the allocation fails or the size would overflow. */
int once__grow(void *pv, size_t *cap, size_t size, size_t first);

/* The guard once__json_loadb (jcs.c) puts around a jansson parse: from
 * begin, the first jansson allocation that fails on this thread makes every
 * later one on this thread fail too, until end, which says (1) whether one
 * failed. */
void once__json_guard_begin(void);
int once__json_guard_end(void);

#endif /* ONCE_CORE_ALLOC_INT_H */
