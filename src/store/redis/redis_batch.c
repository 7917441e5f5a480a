/*
 * redis_batch.c -- pipelining for the Redis backend: concurrent create and
 * update scripts (store/batch.h) go out on one connection in one write, and
 * their replies are read back in order. Loads (HGETALL) ride along: a read
 * in a pipeline reads what the scripts before it wrote, as it would alone,
 * and a load whose pipeline failed is sent again alone (redis_read.c).
 *
 * Each script is atomic on its own and answers for itself, so one call's
 * verdict (the key taken, the version moved) is its own reply and never
 * another's. Redis acknowledges a pipelined script exactly as it would a
 * lone one: with appendfsync always the replies of an event-loop turn are
 * written after its AOF fsync, with everysec after the AOF write; the
 * batch changes what is sent, not what a reply means.
 *
 * Failures: a NOSCRIPT reply means that script did not run (RD_ALONE: its
 * caller runs it alone, which loads the script again). When the connection
 * fails while replies are outstanding, every script whose reply was not
 * read may have run: those callers get ONCE_ESTORE, never a resend.
 */
#include <string.h>

#include "store/redis/redis_int.h"
#include "store/store_int.h"

int once__rd_batch_run(void *owner, once__pool_item *it, void *arg)
{
    once__batch_slice *a = arg;
    rd_store *s = owner;
    rd_conn *c = (rd_conn *)it;
    size_t i;

    for (i = 0; i < a->n; i++)
        if (once__rd_append(s, c, ((rd_bop *)a->ops[i]->arg)->cmd) != ONCE_OK)
            break;
    if (i < a->n) {
        /* hiredis writes at the first read: nothing went out. The
         * connection's buffer holds a partial pipeline, so it is dropped. */
        c->item.broken = 1;
        once__batch_set_all(a->ops, a->n, RD_ALONE);
        return ONCE_OK;
    }
    for (i = 0; i < a->n; i++) {
        rd_bop *b = a->ops[i]->arg;
        a->ops[i]->rc =
            c->item.broken ? ONCE_ESTORE : once__rd_script_reply(s, c, b->cmd, &b->reply);
    }
    return ONCE_OK;
}

int once__rd_batch_write(rd_store *s, rd_bop *b)
{
    once__batch_op op;

    b->reply = NULL;
    if (s->batch_leaders == 0)
        return RD_ALONE;
    memset(&op, 0, sizeof op);
    op.arg = b;
    return once__batch_submit(&s->batch, &op);
}
