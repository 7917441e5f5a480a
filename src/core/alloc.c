/*
 * alloc.c -- allocator hooks and fault injection.
 *
 * Every allocation in libonce passes through here so tests can fail the n-th
 * one (alloc_int.h). Invariants: a size of 0 is rounded up to 1 so NULL
 * always means "out of memory"; once_calloc checks nmemb * size for overflow
 * itself because a user hook might not.
 */
#include "core/alloc_int.h"
#include "once/once.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The active hooks. Written only by once_set_allocator(), which the header
 * documents as "set before starting threads"; read without locking. */
static once_allocator g_alloc = {malloc, calloc, realloc, free};

/* Fault injection state: g_count numbers allocation attempts since the last
 * once__alloc_fail_after(); the attempt whose number equals g_fail_at fails.
 * Both are atomics so concurrent tests may allocate while a sweep runs. */
static atomic_long g_count;
static atomic_long g_fail_at = -1;

void once__alloc_fail_after(long n)
{
    atomic_store(&g_fail_at, -1);
    atomic_store(&g_count, 0);
    atomic_store(&g_fail_at, n < 0 ? -1 : n);
}

long once__alloc_count(void)
{
    return atomic_load(&g_count);
}

/* 1 if this allocation attempt must fail. */
static int inject_fault(void)
{
    long idx = atomic_fetch_add(&g_count, 1);
    long at = atomic_load(&g_fail_at);
    return at >= 0 && idx == at;
}

void once_set_allocator(const once_allocator *a)
{
    if (a == NULL || a->malloc_fn == NULL || a->realloc_fn == NULL || a->free_fn == NULL) {
        once_allocator libc = {malloc, calloc, realloc, free};
        g_alloc = libc;
        return;
    }
    g_alloc = *a;
}

void *once_malloc(size_t n)
{
    if (inject_fault())
        return NULL;
    return g_alloc.malloc_fn(n ? n : 1);
}

void *once_calloc(size_t nmemb, size_t size)
{
    if (size != 0 && nmemb > SIZE_MAX / size)
        return NULL;
    if (inject_fault())
        return NULL;
    size_t total = nmemb * size;
    if (total == 0)
        nmemb = size = total = 1;
    if (g_alloc.calloc_fn)
        return g_alloc.calloc_fn(nmemb, size);
    void *p = g_alloc.malloc_fn(total);
    if (p)
        memset(p, 0, total);
    return p;
}

void *once_realloc(void *p, size_t n)
{
    if (inject_fault())
        return NULL;
    /* realloc(p, 0) may free p and return NULL; callers would read that as
     * failure and free p again, so never ask for 0 bytes. */
    return g_alloc.realloc_fn(p, n ? n : 1);
}

void once_free(void *p)
{
    if (p)
        g_alloc.free_fn(p);
}

char *once_strndup(const char *s, size_t n)
{
    if (s == NULL)
        return NULL;
    size_t len = strnlen(s, n);
    char *d = once_malloc(len + 1);
    if (d == NULL)
        return NULL;
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

char *once_strdup(const char *s)
{
    if (s == NULL)
        return NULL;
    return once_strndup(s, strlen(s));
}
