/*
 * grow.h -- the heap blocks that grow as bytes arrive (not API): response
 * bodies, SSE frames, metric and stream text. One rule for all of them:
 * a block grows by doubling from a first size, so n appends cost O(log n)
 * allocations, and a failed allocation leaves the block and its contents
 * as they were (the caller decides whether that ends the request).
 *
 * A block is (char *buf, size_t cap), cap its allocated size; a text adds
 * len, the bytes in use, and keeps buf[len] == '\0' so that it can be
 * handed on as a C string. (Arrays of elements grow through once__grow,
 * core/alloc_int.h, by the same doubling rule.)
 */
#ifndef ONCE_CORE_GROW_H
#define ONCE_CORE_GROW_H

#include <stddef.h>

/* The size a block of cap bytes grows to so that it holds need: cap itself
 * when it already does, else (cap ? cap : first) doubled until it holds
 * need, at most max (a caller whose need passes max gets need). */
size_t once__grow_size(size_t cap, size_t need, size_t first, size_t max);

/* Reallocate *buf to size bytes if *cap is smaller (then *cap = size).
 * ONCE_OK, or ONCE_ENOMEM with *buf and *cap untouched. */
int once__grow_to(char **buf, size_t *cap, size_t size);

/* Append s[0..n) to the text (*buf, *len, *cap), growing it by doubling
 * from first bytes. ONCE_OK, or ONCE_ENOMEM with the text untouched. */
int once__text_append(char **buf, size_t *len, size_t *cap, size_t first, const char *s, size_t n);

#endif
