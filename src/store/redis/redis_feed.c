/*
 * redis_feed.c -- the Redis change feed (store/feed.h): one connection of
 * its own, outside the pool, SUBSCRIBEd to "<prefix>:changes"; the update
 * script PUBLISHes the member ("<principal>\0<task_id>") of every update
 * with events, in the script itself, so no write lands untold. Pub/sub
 * delivers only to connections subscribed at the time (the feed then says
 * lost). Channels are shared by every database of a server: two stores
 * with one prefix on two databases hear each other's keys, which costs
 * their followers a read that finds nothing new, never a missed update.
 */
#include <string.h>

#include "store/feed.h"
#include "store/redis/redis_int.h"

static int subscribe(void *owner, once__pool_item *it)
{
    rd_store *s = owner;
    char *chan = once__rd_key_global(s, "changes");
    if (chan == NULL)
        return ONCE_ENOMEM;
    rd_cmd cmd;
    once__rd_cmd_init(&cmd);
    once__rd_str(&cmd, "SUBSCRIBE");
    once__rd_str(&cmd, chan);
    redisReply *r = NULL;
    int rc = once__rd_call_array(s, (rd_conn *)it, &cmd, &r);
    once__rd_cmd_free(&cmd);
    once_free(chan);
    if (rc == ONCE_OK && (r->elements != 3 || r->element[0]->type != REDIS_REPLY_STRING ||
                          strcmp(r->element[0]->str, "subscribe") != 0))
        rc = ONCE_ESTORE;
    if (r != NULL)
        freeReplyObject(r);
    return rc;
}

/* A pushed ["message", channel, member] onto l; anything else is skipped. */
static int take_one(once_key_list *l, size_t *cap, const redisReply *r)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[0]->type != REDIS_REPLY_STRING || strcmp(r->element[0]->str, "message") != 0 ||
        r->element[2]->type != REDIS_REPLY_STRING)
        return ONCE_OK;
    const char *m = r->element[2]->str;
    size_t n = r->element[2]->len;
    const char *nul = memchr(m, '\0', n);
    if (nul == NULL)
        return ONCE_OK;
    size_t a = (size_t)(nul - m);
    int rc = once__feed_key_add(l, cap, m, a, nul + 1, n - a - 1);
    return rc == ONCE_ECORRUPT ? ONCE_OK : rc;
}

static int take(void *owner, once__pool_item *it, once_key_list *l, size_t *cap)
{
    (void)owner;
    redisContext *c = ((rd_conn *)it)->rc;
    void *reply = NULL;
    int rc = ONCE_OK;
    while (redisGetReplyFromReader(c, &reply) == REDIS_OK && reply != NULL) {
        if (rc == ONCE_OK)
            rc = take_one(l, cap, reply);
        freeReplyObject(reply);
        reply = NULL;
    }
    if (rc == ONCE_OK && c->err)
        rc = ONCE_ESTORE;
    return rc;
}

static int fd(once__pool_item *it)
{
    return ((rd_conn *)it)->rc->fd;
}

static int read_more(once__pool_item *it)
{
    return redisBufferRead(((rd_conn *)it)->rc) == REDIS_OK ? ONCE_OK : ONCE_ESTORE;
}

static const once__conn_feed_ops rd_feed_ops = {&once__rd_pool_ops, subscribe, take, fd,
                                                read_more};

int once__rd_feed_open(once_store *s, once_store_feed **out)
{
    return once__conn_feed_open(&rd_feed_ops, s, out);
}
