/*
 * grow.c -- see grow.h. Sizes are computed so that no doubling overflows:
 * a block that cannot double any more is sized to exactly what it needs.
 */
#include "core/grow.h"

#include <string.h>

#include "once/once.h"

size_t once__grow_size(size_t cap, size_t need, size_t first, size_t max)
{
    if (cap >= need)
        return cap;
    size_t size = cap ? cap : first;
    if (size == 0)
        size = 1;
    while (size < need)
        size = size > (size_t)-1 / 2 ? need : size * 2;
    if (size > max)
        size = max > need ? max : need;
    return size;
}

int once__grow_to(char **buf, size_t *cap, size_t size)
{
    if (size <= *cap)
        return ONCE_OK;
    char *p = once_realloc(*buf, size);
    if (p == NULL)
        return ONCE_ENOMEM;
    *buf = p;
    *cap = size;
    return ONCE_OK;
}

int once__text_append(char **buf, size_t *len, size_t *cap, size_t first, const char *s, size_t n)
{
    size_t need = *len + n + 1;
    if (need < n)
        return ONCE_ENOMEM; /* no block that large exists */
    if (once__grow_to(buf, cap, once__grow_size(*cap, need, first, (size_t)-1)) != ONCE_OK)
        return ONCE_ENOMEM;
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = '\0';
    return ONCE_OK;
}
