/*
 * pg_feed.c -- the PostgreSQL change feed (store/feed.h): one connection
 * of its own, outside the pool, LISTENs on "once.<schema>"; every update
 * with events NOTIFYs it at COMMIT with the key (PG_UPDATE, pg_schema.c),
 * so a replica hears of every other replica's writes without asking.
 * PostgreSQL delivers a notification to every session listening when the
 * writing transaction commits, and folds duplicates within one
 * transaction; what a session missed while not listening is gone (the
 * feed then says lost).
 */
#include <string.h>

#include "store/feed.h"
#include "store/pg/pg_int.h"

static int subscribe(void *owner, once__pool_item *c)
{
    pg_store *s = owner;
    char sql[PG_SCHEMA_MAX + 32];
    snprintf(sql, sizeof sql, "LISTEN \"once.%s\"", s->schema);
    return once__pg_simple_done(s, (pg_conn *)c, sql);
}

static int hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decode n hex digits at h into out (n / 2 bytes); 0, or -1 if not hex. */
static int unhex(const char *h, size_t n, char *out)
{
    if (n % 2 != 0)
        return -1;
    for (size_t i = 0; i < n; i += 2) {
        int a = hexval(h[i]), b = hexval(h[i + 1]);
        if (a < 0 || b < 0)
            return -1;
        out[i / 2] = (char)(a * 16 + b);
    }
    return 0;
}

/* The key in a payload "<hex principal>:<hex task_id>" onto l; anything
 * else (someone else NOTIFYing the channel) is skipped. */
static int take_one(once_key_list *l, size_t *cap, const char *payload)
{
    const char *colon = strchr(payload, ':');
    if (colon == NULL)
        return ONCE_OK;
    size_t hp = (size_t)(colon - payload), ht = strlen(colon + 1);
    char p[ONCE_PRINCIPAL_MAX], t[ONCE_ID_MAX];
    if (hp > 2 * sizeof p || ht > 2 * sizeof t || unhex(payload, hp, p) != 0 ||
        unhex(colon + 1, ht, t) != 0)
        return ONCE_OK;
    int rc = once__feed_key_add(l, cap, p, hp / 2, t, ht / 2);
    return rc == ONCE_ECORRUPT ? ONCE_OK : rc;
}

static int take(void *owner, once__pool_item *it, once_key_list *l, size_t *cap)
{
    (void)owner;
    pg_conn *c = (pg_conn *)it;
    PGnotify *nf;
    int rc = ONCE_OK;
    while ((nf = PQnotifies(c->pg)) != NULL) {
        if (rc == ONCE_OK)
            rc = take_one(l, cap, nf->extra);
        PQfreemem(nf);
    }
    if (rc == ONCE_OK && PQstatus(c->pg) != CONNECTION_OK)
        rc = ONCE_ESTORE;
    return rc;
}

static int fd(once__pool_item *it)
{
    return PQsocket(((pg_conn *)it)->pg);
}

static int read_more(once__pool_item *it)
{
    pg_conn *c = (pg_conn *)it;
    return PQconsumeInput(c->pg) && PQstatus(c->pg) == CONNECTION_OK ? ONCE_OK : ONCE_ESTORE;
}

static const once__conn_feed_ops pg_feed_ops = {&once__pg_pool_ops, subscribe, take, fd,
                                                read_more};

int once__pg_feed_open(once_store *s, once_store_feed **out)
{
    return once__conn_feed_open(&pg_feed_ops, s, out);
}
