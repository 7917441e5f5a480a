/*
 * list.h -- an age list: an intrusive doubly linked list in arrival order,
 * the oldest at the head. The HTTP guard keeps its waiting connections in
 * one (the head is the first to reach its deadline), the engine's
 * journal its pending tasks (the head is the first dropped at the bound),
 * the memory store each principal's tasks by creation (store/mem.c).
 *
 * A struct joins a list through a once__link member; the list hands back
 * links, and a struct whose link is its first member is its link's address
 * cast back. The list takes no lock and allocates nothing: its owner's
 * lock guards it, and the owner frees what it unlinks.
 */
#ifndef ONCE_CORE_LIST_H
#define ONCE_CORE_LIST_H

typedef struct once__link {
    struct once__link *prev, *next;
} once__link;

/* Zeroed is empty. */
typedef struct once__list {
    once__link *head, *tail;
} once__list;

/* Add l, in no list, at the tail: it is the newest. */
void once__list_append(once__list *q, once__link *l);

/* Add l, in no list, right after at, which is in q (NULL: at the head):
 * for a list kept in an order of its owner's, whose place for l the
 * owner finds (walking from the tail when most arrive in order). */
void once__list_insert_after(once__list *q, once__link *at, once__link *l);

/* Take l out of q, which it is in; its links are left NULL. */
void once__list_unlink(once__list *q, once__link *l);

#endif
