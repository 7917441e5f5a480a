/*
 * record.c -- ownership helpers for the store's value types: records own
 * their strings (record_strings), lists own their arrays and every
 * element's strings.
 * Every clear leaves the struct zeroed so a second clear is harmless.
 */
#include <stddef.h>
#include <string.h>

#include "once/store.h"

/* The strings a record owns, by offset: once_record_clear frees them and
 * once_record_copy duplicates them; a new one is added here only. */
static const size_t record_strings[] = {
    offsetof(once_record, digests),    offsetof(once_record, task_json),
    offsetof(once_record, checkpoint), offsetof(once_record, push_json),
    offsetof(once_record, journal),
};
#define NSTRINGS (sizeof record_strings / sizeof record_strings[0])

static char **string_at(once_record *r, size_t i)
{
    return (char **)((char *)r + record_strings[i]);
}

static const char *string_of(const once_record *r, size_t i)
{
    return *(char *const *)((const char *)r + record_strings[i]);
}

void once_record_clear(once_record *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < NSTRINGS; i++)
        once_free(*string_at(r, i));
    memset(r, 0, sizeof *r);
}

int once_record_copy(once_record *dst, const once_record *src)
{
    if (!dst || !src)
        return ONCE_EINVAL;
    if (dst == src)
        return ONCE_OK;
    memcpy(dst, src, sizeof *dst);
    for (size_t i = 0; i < NSTRINGS; i++)
        *string_at(dst, i) = NULL;
    for (size_t i = 0; i < NSTRINGS; i++) {
        const char *v = string_of(src, i);
        if (v && !(*string_at(dst, i) = once_strdup(v))) {
            once_record_clear(dst);
            return ONCE_ENOMEM;
        }
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
