/*
 * record.c -- ownership helpers for the store's value types: records own
 * their five strings, lists own their arrays and every element's strings.
 * Every clear leaves the struct zeroed so a second clear is harmless.
 */
#include <string.h>

#include "once/store.h"

void once_record_clear(once_record *r)
{
    if (!r)
        return;
    once_free(r->digests);
    once_free(r->task_json);
    once_free(r->checkpoint);
    once_free(r->push_json);
    once_free(r->journal);
    memset(r, 0, sizeof *r);
}

int once_record_copy(once_record *dst, const once_record *src)
{
    if (!dst || !src)
        return ONCE_EINVAL;
    if (dst == src)
        return ONCE_OK;
    memcpy(dst, src, sizeof *dst);
    dst->digests = NULL;
    dst->task_json = NULL;
    dst->checkpoint = NULL;
    dst->push_json = NULL;
    dst->journal = NULL;
    if ((src->digests && !(dst->digests = once_strdup(src->digests))) ||
        (src->task_json && !(dst->task_json = once_strdup(src->task_json))) ||
        (src->checkpoint && !(dst->checkpoint = once_strdup(src->checkpoint))) ||
        (src->push_json && !(dst->push_json = once_strdup(src->push_json))) ||
        (src->journal && !(dst->journal = once_strdup(src->journal)))) {
        once_record_clear(dst);
        return ONCE_ENOMEM;
    }
    return ONCE_OK;
}

void once_event_list_clear(once_event_list *l)
{
    size_t i;

    if (!l)
        return;
    for (i = 0; i < l->n; i++)
        once_free(l->v[i].payload);
    once_free(l->v);
    l->v = NULL;
    l->n = 0;
}

void once_key_list_clear(once_key_list *l)
{
    if (!l)
        return;
    once_free(l->v);
    l->v = NULL;
    l->n = 0;
}

void once_record_list_clear(once_record_list *l)
{
    size_t i;

    if (!l)
        return;
    for (i = 0; i < l->n; i++)
        once_record_clear(&l->v[i]);
    once_free(l->v);
    l->v = NULL;
    l->n = 0;
}

void once_push_claim_list_clear(once_push_claim_list *l)
{
    if (!l)
        return;
    once_free(l->v);
    l->v = NULL;
    l->n = 0;
}

void once_push_row_list_clear(once_push_row_list *l)
{
    if (!l)
        return;
    once_free(l->v);
    l->v = NULL;
    l->n = 0;
}
