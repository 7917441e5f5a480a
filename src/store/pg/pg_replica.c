/*
 * pg_replica.c -- the PostgreSQL backend's replica heartbeat rows
 * (store.h, ONCE_STORE_REPLICAS; table once_replicas, migration 4): an
 * upsert per beat and one SELECT for the list.
 */
#include <string.h>

#include "store/pg/pg_int.h"
#include "store/replica.h"

static int beat_fn(pg_store *s, pg_conn *c, void *arg)
{
    return once__pg_exec_done(s, c, PG_REPLICA_PUT, arg);
}

int once__pg_replica_beat(once_store *s, const once_replica *r)
{
    pg_params p;

    once__pg_p_init(&p);
    once__pg_p_str(&p, r->id);
    once__pg_p_str(&p, r->version);
    once__pg_p_i64(&p, r->started_at);
    once__pg_p_i64(&p, r->beat_at);
    once__pg_p_i64(&p, r->leases);
    once__pg_p_i16(&p, r->stopped);
    return once__pg_run((pg_store *)s, beat_fn, &p);
}

static int replica_row(const PGresult *r, int row, void *elem, void *arg)
{
    once_replica *x = elem;
    int rc;

    (void)arg;
    rc = once__pg_fixed(r, row, 0, x->id, sizeof x->id);
    if (rc == ONCE_OK)
        rc = once__pg_fixed(r, row, 1, x->version, sizeof x->version);
    x->started_at = once__pg_i64(r, row, 2);
    x->beat_at = once__pg_i64(r, row, 3);
    x->leases = once__pg_i64(r, row, 4);
    x->stopped = once__pg_i64(r, row, 5) != 0;
    return rc;
}

static int replicas_fn(pg_store *s, pg_conn *c, void *arg)
{
    once_replica_list *out = arg;
    pg_params p;
    void *v;
    int rc;

    once_replica_list_clear(out);
    once__pg_p_init(&p);
    rc = once__pg_rows(s, c, PG_REPLICAS, &p, sizeof *out->v, replica_row, NULL, &v, &out->n);
    out->v = v;
    if (rc != ONCE_OK)
        once_replica_list_clear(out);
    return rc;
}

int once__pg_replicas(once_store *s, once_replica_list *out)
{
    memset(out, 0, sizeof *out);
    return once__pg_run((pg_store *)s, replicas_fn, out);
}
