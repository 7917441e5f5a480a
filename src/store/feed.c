/*
 * feed.c -- a change feed over one connection of a networked backend's own
 * (feed.h): the part PostgreSQL's and Redis' feeds share.
 */
#include <poll.h>
#include <string.h>

#include "core/alloc_int.h"
#include "store/feed.h"
#include "store/store_int.h"

typedef struct conn_feed {
    once_store_feed base;     /* first */
    const once__conn_feed_ops *ops;
    void *owner;
    once__pool_item *c;       /* NULL: not subscribed (first call, or after a failure) */
} conn_feed;

int once__conn_feed_open(const once__conn_feed_ops *ops, void *owner, once_store_feed **out)
{
    conn_feed *f = once_calloc(1, sizeof *f);
    if (f == NULL)
        return ONCE_ENOMEM;
    f->ops = ops;
    f->owner = owner;
    *out = &f->base;
    return ONCE_OK;
}

static void hang_up(conn_feed *f)
{
    if (f->c != NULL)
        f->ops->pool->close(f->c);
    f->c = NULL;
}

static int subscribe(conn_feed *f)
{
    int rc = f->ops->pool->connect(f->owner, &f->c, NULL, 0);
    if (rc == ONCE_OK)
        rc = f->ops->subscribe(f->owner, f->c);
    if (rc != ONCE_OK) {
        hang_up(f);
        return rc == ONCE_ENOMEM ? rc : ONCE_ESTORE;
    }
    return ONCE_OK;
}

/* Wait up to wait_ms for fd: 1 readable, 0 not yet, -1 hung up or failed. */
static int wait_fd(int fd, int64_t wait_ms)
{
    if (fd < 0)
        return -1;
    struct pollfd pf = {.fd = fd, .events = POLLIN | POLLRDHUP};
    int n = poll(&pf, 1, wait_ms > 60000 ? 60000 : (int)wait_ms);
    if (n <= 0)
        return 0;   /* nothing yet, or EINTR: the caller looks again */
    /* Data may come before a hang-up: the read takes it and sees the end. */
    return pf.revents & POLLIN ? 1 : -1;
}

int once__conn_feed_next(once_store_feed *base, int64_t wait_ms, once_key_list *out, int *lost)
{
    conn_feed *f = (conn_feed *)base;
    if (f->c == NULL) {
        int rc = subscribe(f);
        if (rc == ONCE_OK)
            *lost = 1;
        return rc;
    }
    size_t cap = 0;
    int64_t deadline = once_monotonic_ms() + wait_ms;
    for (;;) {
        int rc = f->ops->take(f->owner, f->c, out, &cap);
        if (rc == ONCE_ESTORE)
            break;
        if (rc != ONCE_OK || out->n > 0)
            return rc;
        int64_t left = deadline - once_monotonic_ms();
        if (left <= 0)
            return ONCE_OK;
        int ready = wait_fd(f->ops->fd(f->c), left);
        if (ready < 0 || (ready > 0 && f->ops->read(f->c) != ONCE_OK))
            break;
    }
    once__store_seterr(f->base.store, "%s change feed: connection lost", f->ops->pool->name);
    hang_up(f);
    return ONCE_ESTORE;
}

void once__conn_feed_close(once_store_feed *base)
{
    conn_feed *f = (conn_feed *)base;
    hang_up(f);
    once_free(f);
}

int once__feed_key_add(once_key_list *l, size_t *cap, const char *p, size_t plen, const char *t,
                       size_t tlen)
{
    if (plen == 0 || plen > ONCE_PRINCIPAL_MAX || tlen == 0 || tlen > ONCE_ID_MAX ||
        memchr(p, '\0', plen) != NULL || memchr(t, '\0', tlen) != NULL)
        return ONCE_ECORRUPT;
    if (l->n == *cap && once__grow(&l->v, cap, sizeof *l->v, 16) != ONCE_OK)
        return ONCE_ENOMEM;
    once_key *k = &l->v[l->n++];
    memcpy(k->principal, p, plen);
    k->principal[plen] = '\0';
    memcpy(k->task_id, t, tlen);
    k->task_id[tlen] = '\0';
    return ONCE_OK;
}
