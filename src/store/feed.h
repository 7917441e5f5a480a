/*
 * feed.h -- a change feed over one connection of a networked backend's own
 * (not API): PostgreSQL LISTEN/NOTIFY and Redis pub/sub differ only in how
 * they subscribe and how a notification names a key; the rest -- connect
 * on the first call and after a failure (then *lost = 1), take what the
 * connection holds, wait on its socket, read, hang up on failure -- is
 * here, once.
 *
 * What a subscriber misses while it is not subscribed is gone on both
 * stores, so a failed connection is closed at once and its failure is
 * ONCE_ESTORE; the next call connects, subscribes again, and answers
 * ONCE_OK with *lost = 1 and no keys (the caller looks at everything it
 * follows once, after the subscription is in place).
 */
#ifndef ONCE_STORE_FEED_H
#define ONCE_STORE_FEED_H

#include "store/pool.h"

typedef struct once__conn_feed_ops {
    const once__pool_ops *pool;   /* connect and close (the pool's own) */
    /* Subscribe on a fresh connection: ONCE_OK, or an error (the
     * connection is then closed). */
    int (*subscribe)(void *owner, once__pool_item *c);
    /* Append the keys of every notification the connection has already
     * read (none waits on the socket for this) to l, whose array holds
     * *cap; skip what is not a key of ours (ONCE_ECORRUPT from
     * once__feed_key_add). ONCE_OK, ONCE_ENOMEM, or ONCE_ESTORE when the
     * connection is broken. */
    int (*take)(void *owner, once__pool_item *c, once_key_list *l, size_t *cap);
    int (*fd)(once__pool_item *c);
    /* Read what the socket has (it is readable): ONCE_OK, or ONCE_ESTORE
     * when the connection failed or the server closed it. */
    int (*read)(once__pool_item *c);
} once__conn_feed_ops;

/* The feed_* slots of a backend whose feed is ops over owner's store. */
int once__conn_feed_open(const once__conn_feed_ops *ops, void *owner, once_store_feed **out);
int once__conn_feed_next(once_store_feed *f, int64_t wait_ms, once_key_list *out, int *lost);
void once__conn_feed_close(once_store_feed *f);

/* Append the key (p[0..plen), t[0..tlen)) to l, whose array holds *cap
 * keys: ONCE_OK, ONCE_ENOMEM, or ONCE_ECORRUPT for a key that cannot be
 * one (too long, empty, a NUL inside), which a feed skips. */
int once__feed_key_add(once_key_list *l, size_t *cap, const char *p, size_t plen, const char *t,
                       size_t tlen);

#endif
