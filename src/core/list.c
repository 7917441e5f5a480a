/*
 * list.c -- the age list (list.h).
 */
#include <stddef.h>

#include "core/list.h"

void once__list_append(once__list *q, once__link *l)
{
    l->prev = q->tail;
    l->next = NULL;
    if (q->tail)
        q->tail->next = l;
    else
        q->head = l;
    q->tail = l;
}

void once__list_unlink(once__list *q, once__link *l)
{
    if (l->prev)
        l->prev->next = l->next;
    else
        q->head = l->next;
    if (l->next)
        l->next->prev = l->prev;
    else
        q->tail = l->prev;
    l->prev = l->next = NULL;
}
