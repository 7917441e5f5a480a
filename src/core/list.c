/*
 * list.c -- the age list (list.h).
 */
#include <stddef.h>

#include "core/list.h"

void once__list_append(once__list *q, once__link *l)
{
    once__list_insert_after(q, q->tail, l);
}

void once__list_insert_after(once__list *q, once__link *at, once__link *l)
{
    l->prev = at;
    l->next = at ? at->next : q->head;
    if (l->next)
        l->next->prev = l;
    else
        q->tail = l;
    if (at)
        at->next = l;
    else
        q->head = l;
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
