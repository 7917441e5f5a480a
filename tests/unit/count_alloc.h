/*
 * count_alloc.h -- an allocator (once_set_allocator) that counts the
 * allocations made by the calling thread while `counting` is set, for
 * tests that hold a piece of work to what it allocates (a count, unlike a
 * duration, does not depend on the machine's speed).
 */
#ifndef ONCE_TESTS_COUNT_ALLOC_H
#define ONCE_TESTS_COUNT_ALLOC_H

#include <stdlib.h>

#include "once/once.h"

static _Thread_local int counting;
static _Thread_local long counted;

static void *count_malloc(size_t n)
{
    counted += counting;
    return malloc(n);
}

static void *count_calloc(size_t m, size_t n)
{
    counted += counting;
    return calloc(m, n);
}

static void *count_realloc(void *p, size_t n)
{
    counted += counting;
    return realloc(p, n);
}

static const once_allocator counting_allocator = {count_malloc, count_calloc, count_realloc,
                                                  free};

#endif /* ONCE_TESTS_COUNT_ALLOC_H */
