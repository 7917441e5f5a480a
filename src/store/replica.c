/*
 * replica.c -- what the backends share about replica heartbeat rows
 * (store.h, ONCE_STORE_REPLICAS): the argument check once_store_replica_beat
 * runs before dispatch, the list helpers, and the one-string encoding the
 * key-value backends (Redis, DynamoDB) store a row's fields in.
 *
 * The encoding is "<started_at> <beat_at> <leases> <stopped> <version>":
 * the version goes last so that it may hold any byte but NUL, and the id
 * is the key the string is stored under, never inside it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/replica.h"
#include "store/store_int.h"

void once_replica_list_clear(once_replica_list *l)
{
    if (!l)
        return;
    once_free(l->v);
    l->v = NULL;
    l->n = 0;
}

int once__store_valid_replica(once_store *s, const once_replica *r)
{
    size_t idn = strnlen(r->id, sizeof r->id);
    if (idn == 0 || idn > ONCE_OWNER_MAX) {
        once__store_seterr(s, "replica beat: id must be 1..%d bytes", ONCE_OWNER_MAX);
        return ONCE_EINVAL;
    }
    if (strnlen(r->version, sizeof r->version) > ONCE_REPLICA_VERSION_MAX) {
        once__store_seterr(s, "replica beat of %s: version longer than %d bytes", r->id,
                           ONCE_REPLICA_VERSION_MAX);
        return ONCE_EINVAL;
    }
    if (r->started_at < 0 || r->beat_at < 0 || r->leases < 0 || (r->stopped & ~1)) {
        once__store_seterr(s, "replica beat of %s: negative time or leases, or stopped not 0/1",
                           r->id);
        return ONCE_EINVAL;
    }
    return ONCE_OK;
}

int once__replica_append(once_replica_list *l, const once_replica *r)
{
    /* One row per replica that ever ran: a few, so growing by one is fine. */
    once_replica *v = once_realloc(l->v, (l->n + 1) * sizeof *v);
    if (!v)
        return ONCE_ENOMEM;
    l->v = v;
    l->v[l->n++] = *r;
    return ONCE_OK;
}

int once__replica_upsert(once_replica_list *l, const once_replica *r)
{
    for (size_t i = 0; i < l->n; i++) {
        if (strcmp(l->v[i].id, r->id) == 0) {
            l->v[i] = *r;
            return ONCE_OK;
        }
    }
    return once__replica_append(l, r);
}

static int cmp_id(const void *a, const void *b)
{
    return strcmp(((const once_replica *)a)->id, ((const once_replica *)b)->id);
}

void once__replica_sort(once_replica_list *l)
{
    if (l->n > 1)
        qsort(l->v, l->n, sizeof *l->v, cmp_id);
}

int once__replica_copy(once_replica_list *dst, const once_replica_list *src)
{
    memset(dst, 0, sizeof *dst);
    for (size_t i = 0; i < src->n; i++) {
        if (once__replica_append(dst, &src->v[i]) != ONCE_OK) {
            once_replica_list_clear(dst);
            return ONCE_ENOMEM;
        }
    }
    once__replica_sort(dst);
    return ONCE_OK;
}

void once__replica_encode(const once_replica *r, char buf[ONCE__REPLICA_TEXT_MAX])
{
    snprintf(buf, ONCE__REPLICA_TEXT_MAX, "%" PRId64 " %" PRId64 " %" PRId64 " %d %s",
             r->started_at, r->beat_at, r->leases, r->stopped ? 1 : 0, r->version);
}

/* One decimal field ending at a space: its value, *p moved past the space. */
static int field(const char **p, const char *end, int64_t *v)
{
    const char *q = *p;
    int64_t x = 0;
    if (q == end || *q < '0' || *q > '9')
        return 0;
    for (; q < end && *q >= '0' && *q <= '9'; q++) {
        if (x > (INT64_MAX - 9) / 10)
            return 0;
        x = x * 10 + (*q - '0');
    }
    if (q == end || *q != ' ')
        return 0;
    *v = x;
    *p = q + 1;
    return 1;
}

int once__replica_decode(const char *id, size_t idlen, const char *text, size_t len,
                         once_replica *out)
{
    const char *p = text, *end = text + len;
    int64_t stopped = 0;
    memset(out, 0, sizeof *out);
    if (idlen == 0 || idlen > ONCE_OWNER_MAX || memchr(id, '\0', idlen))
        return ONCE_ECORRUPT;
    memcpy(out->id, id, idlen);
    if (!field(&p, end, &out->started_at) || !field(&p, end, &out->beat_at) ||
        !field(&p, end, &out->leases) || !field(&p, end, &stopped) || stopped > 1 ||
        (size_t)(end - p) > ONCE_REPLICA_VERSION_MAX || memchr(p, '\0', (size_t)(end - p)))
        return ONCE_ECORRUPT;
    memcpy(out->version, p, (size_t)(end - p));
    out->stopped = (int)stopped;
    return ONCE_OK;
}
