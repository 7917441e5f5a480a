/*
 * redis_replica.c -- the Redis backend's replica heartbeat rows (store.h,
 * ONCE_STORE_REPLICAS): one hash "<prefix>:replicas", field = replica id,
 * value = the row's other fields as once__replica_encode writes them. A
 * beat is one HSET, the list one HGETALL (a hash of one field per replica
 * that ever ran is small). No schema change: a store without the key has
 * no rows yet.
 */
#include <string.h>

#include "store/redis/redis_int.h"
#include "store/replica.h"

static int beat_fn(rd_store *s, rd_conn *c, void *arg)
{
    const once_replica *r = arg;
    char text[ONCE__REPLICA_TEXT_MAX];
    char *key = once__rd_key_global(s, "replicas");
    rd_cmd cmd;

    if (!key)
        return ONCE_ENOMEM;
    once__replica_encode(r, text);
    once__rd_cmd_init(&cmd);
    once__rd_str(&cmd, "HSET");
    once__rd_str(&cmd, key);
    once__rd_str(&cmd, r->id);
    once__rd_str(&cmd, text);
    int rc = once__rd_call_done(s, c, &cmd, 1);
    once_free(key);
    return rc;
}

int once__rd_replica_beat(once_store *s, const once_replica *r)
{
    return once__rd_run((rd_store *)s, beat_fn, (void *)r);
}

static int replicas_fn(rd_store *s, rd_conn *c, void *arg)
{
    once_replica_list *out = arg;
    char *key = once__rd_key_global(s, "replicas");
    redisReply *r;

    once_replica_list_clear(out);
    int rc = once__rd_call_key(s, c, "HGETALL", key, &r);
    once_free(key);
    if (rc != ONCE_OK)
        return rc;
    if (r->type != REDIS_REPLY_ARRAY || r->elements % 2)
        rc = ONCE_ECORRUPT;
    for (size_t i = 0; rc == ONCE_OK && i + 1 < r->elements; i += 2) {
        const redisReply *f = r->element[i], *v = r->element[i + 1];
        once_replica x;
        if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
            rc = ONCE_ECORRUPT;
        else
            rc = once__replica_decode(f->str, f->len, v->str, v->len, &x);
        if (rc == ONCE_OK)
            rc = once__replica_append(out, &x);
    }
    freeReplyObject(r);
    if (rc == ONCE_ECORRUPT)
        once__store_seterr(&s->base, "redis: %s:replicas holds a field once did not write",
                           s->prefix);
    if (rc != ONCE_OK)
        once_replica_list_clear(out);
    else
        once__replica_sort(out);
    return rc;
}

int once__rd_replicas(once_store *s, once_replica_list *out)
{
    memset(out, 0, sizeof *out);
    return once__rd_run((rd_store *)s, replicas_fn, out);
}
