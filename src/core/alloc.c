/*
 * alloc.c -- allocator hooks, fault injection, and jansson on both.
 *
 * Every allocation in libonce passes through here so tests can fail the n-th
 * one (alloc_int.h). Invariants: a size of 0 is rounded up to 1 so NULL
 * always means "out of memory"; once_calloc checks nmemb * size for overflow
 * itself because a user hook might not.
 *
 * jansson allocates through here too (core/jcs.h, "Reading JSON"), and its
 * hooks are process-global, so:
 *   - they are installed once, before main (a constructor in this file,
 *     which every program that allocates through libonce links), and never
 *     swapped afterwards: a block must be freed by the family that made it,
 *     and from the start every jansson block is a once_malloc block;
 *   - they point at fixed trampolines that read the current allocator at
 *     each call, so once_set_allocator() needs no re-install (which would
 *     race with JSON work on other threads) and fault injection applies;
 *   - the host program's own jansson use goes through once's allocator too:
 *     with the default (libc) allocator nothing changes for it. A program
 *     that installs its own jansson hooks afterwards takes jansson out of
 *     once's allocator, and out of its fault sweeps.
 * As for any once_malloc block, replacing the allocator while JSON values
 * made by the previous one are alive would free them with the wrong
 * function: once_set_allocator() belongs before the first allocation.
 *
 * Invariant: `parse_state` is per thread and is not IDLE only between
 * once__json_guard_begin and _end on that thread (once__json_loadb, jcs.c),
 * so the sticky failure of a parse never outlives the parse it protects and
 * never touches another thread's work.
 */
#include "core/alloc_int.h"
#include "once/once.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The active hooks. Written only by once_set_allocator(), which the header
 * documents as "set before starting threads"; read without locking. */
static once_allocator g_alloc = {malloc, calloc, realloc, free};

/* Fault injection state: g_count numbers allocation attempts since the last
 * once__alloc_fail_after(); the attempt whose number equals g_fail_at fails.
 * Both are atomics so concurrent tests may allocate while a sweep runs.
 * g_armed is set by the first once__alloc_fail_after() and never cleared:
 * until then nothing is counted, so a program that never sweeps (onced)
 * does not make every allocation of every thread increment one shared
 * counter. */
static atomic_long g_count;
static atomic_long g_fail_at = -1;
static atomic_int g_armed;

void once__alloc_fail_after(long n)
{
    atomic_store(&g_armed, 1);
    atomic_store(&g_fail_at, -1);
    atomic_store(&g_count, 0);
    atomic_store(&g_fail_at, n < 0 ? -1 : n);
}

long once__alloc_count(void)
{
    return atomic_load(&g_count);
}

/* 1 if this allocation attempt must fail. inline: every allocation asks,
 * and the answer is nearly always a relaxed load of g_armed. */
static inline int inject_fault(void)
{
    if (!atomic_load_explicit(&g_armed, memory_order_relaxed))
        return 0;
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

int once__grow(void *pv, size_t *cap, size_t size, size_t first)
{
    size_t nc = *cap ? *cap * 2 : first;
    if (nc < *cap || nc > SIZE_MAX / size)
        return ONCE_ENOMEM;
    void *old;
    memcpy(&old, pv, sizeof old);
    void *v = once_realloc(old, nc * size);
    if (v == NULL)
        return ONCE_ENOMEM;
    memcpy(pv, &v, sizeof v);
    *cap = nc;
    return ONCE_OK;
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

/* ---------------------------------------------------------------------------
 * jansson on these hooks.
 */

enum { IDLE = 0, PARSING, PARSE_FAILED };

static _Thread_local int parse_state;

static void *json_alloc(size_t n)
{
    if (parse_state == PARSE_FAILED)
        return NULL; /* the lexer's text may be damaged: stop it here */
    void *p = once_malloc(n);
    if (p == NULL && parse_state == PARSING)
        parse_state = PARSE_FAILED;
    return p;
}

static void json_release(void *p)
{
    once_free(p);
}

/* Weak: a program that links libonce only for parts that never touch JSON
 * (IDs, hashes) still links without jansson, and then has no JSON to route. */
#pragma weak json_set_alloc_funcs

/* Installed before main, and from this file: it is linked into every
 * program that allocates through libonce. */
__attribute__((constructor)) static void install_json_hooks(void)
{
    if (json_set_alloc_funcs != NULL)
        json_set_alloc_funcs(json_alloc, json_release);
}

void once__json_guard_begin(void)
{
    parse_state = PARSING;
}

int once__json_guard_end(void)
{
    int failed = parse_state == PARSE_FAILED;
    parse_state = IDLE;
    return failed;
}
