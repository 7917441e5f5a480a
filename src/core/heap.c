/*
 * heap.c -- the intrusive binary min-heap of heap.h.
 */
#include "core/heap.h"
#include "core/alloc_int.h"
#include "once/once.h"

static void put(once__heap *h, size_t i, once__heap_node *x)
{
    h->v[i] = x;
    x->at = i;
}

void once__heap_fix(once__heap *h, once__heap_node *x)
{
    size_t i = x->at;
    while (i > 0 && h->v[(i - 1) / 2]->key > x->key) {
        put(h, i, h->v[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h->v[c + 1]->key < h->v[c]->key)
            c++;
        if (h->v[c]->key >= x->key)
            break;
        put(h, i, h->v[c]);
        i = c;
    }
    put(h, i, x);
}

int once__heap_add(once__heap *h, once__heap_node *x)
{
    if (h->n == h->cap && once__grow(&h->v, &h->cap, sizeof *h->v, 16) != ONCE_OK)
        return ONCE_ENOMEM;
    put(h, h->n++, x);
    once__heap_fix(h, x);
    return ONCE_OK;
}

void once__heap_remove(once__heap *h, once__heap_node *x)
{
    once__heap_node *last = h->v[--h->n];
    if (last == x)
        return;
    put(h, x->at, last);
    once__heap_fix(h, last);
}

once__heap_node *once__heap_top(const once__heap *h)
{
    return h->n > 0 ? h->v[0] : NULL;
}

void once__heap_clear(once__heap *h)
{
    once_free(h->v);
    h->v = NULL;
    h->n = h->cap = 0;
}
