/*
 * heap.h -- an intrusive binary min-heap on an int64 key (not API): the
 * engine's parked turns by when they are due (src/engine/dispatch.c), the
 * SSE hub's timed streams by their next poll or ping (src/http/sse.c).
 *
 * An element embeds a once__heap_node; the heap holds pointers to nodes
 * and keeps each node's index in `at`, so an element is removed or moved
 * (after its key changed) in O(log n) without a search. The caller owns
 * the locking and the elements; the heap owns only its array.
 */
#ifndef ONCE_CORE_HEAP_H
#define ONCE_CORE_HEAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct once__heap_node {
    int64_t key;            /* the order: smallest first; set before add, fix after a change */
    size_t at;              /* the node's index while it is in a heap */
} once__heap_node;

typedef struct once__heap {
    once__heap_node **v;
    size_t n, cap;
} once__heap;

/* Add x (its key set). ONCE_OK, or ONCE_ENOMEM with the heap unchanged. */
int once__heap_add(once__heap *h, once__heap_node *x);
/* Remove x, which is in h. */
void once__heap_remove(once__heap *h, once__heap_node *x);
/* x's key changed: move it to where it belongs. */
void once__heap_fix(once__heap *h, once__heap_node *x);
/* The node with the smallest key, or NULL when h is empty. */
once__heap_node *once__heap_top(const once__heap *h);
/* Free the array (the nodes are the caller's); h is empty and usable. */
void once__heap_clear(once__heap *h);

#endif /* ONCE_CORE_HEAP_H */
