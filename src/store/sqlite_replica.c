/*
 * sqlite_replica.c -- the sqlite backend's replica heartbeat rows (store.h,
 * ONCE_STORE_REPLICAS; table replicas, schema version 4).
 *
 * A beat is queued like every write, so it shares the group commit with
 * the turns' writes (one beat per replica per heartbeat interval); the
 * list is a plain read on a reader connection.
 */
#include <string.h>

#include "store/replica.h"
#include "store/sqlite_int.h"

int once__sq_op_replica(sq_store *s, sq_conn *w, sq_op *op)
{
    const once_replica *r = op->replica;
    (void)s;
    return once__sq_run_bound(w, SQ_REPLICA_PUT, "ssiiii", r->id, r->version, r->started_at,
                              r->beat_at, r->leases, (int64_t)r->stopped);
}

int once__sq_replica_beat(once_store *s, const once_replica *r)
{
    sq_op op = {.kind = SQ_OP_REPLICA, .replica = r};
    return once__sq_submit((sq_store *)s, &op);
}

static int replicas_fn(sq_conn *c, void *arg)
{
    once_replica_list *out = arg;
    sqlite3_stmt *st;
    int rc = once__sq_stmt_bind(c, SQ_REPLICAS, &st, "");
    if (rc != ONCE_OK)
        return rc;
    int src = SQLITE_DONE;
    while (rc == ONCE_OK && (src = once__sq_step(st)) == SQLITE_ROW) {
        once_replica r;
        memset(&r, 0, sizeof r);
        rc = once__sq_text(r.id, sizeof r.id, st, 0);
        if (rc == ONCE_OK)
            rc = once__sq_text(r.version, sizeof r.version, st, 1);
        r.started_at = sqlite3_column_int64(st, 2);
        r.beat_at = sqlite3_column_int64(st, 3);
        r.leases = sqlite3_column_int64(st, 4);
        r.stopped = sqlite3_column_int64(st, 5) != 0;
        if (rc == ONCE_OK)
            rc = once__replica_append(out, &r);
    }
    if (rc == ONCE_OK && src != SQLITE_DONE)
        rc = once__db_err(src);
    int rrc = once__sq_reset(st);
    if (rc == ONCE_OK && rrc != SQLITE_OK)
        rc = once__db_err(rrc);
    if (rc != ONCE_OK)
        once_replica_list_clear(out);
    return rc;
}

int once__sq_replicas(once_store *s, once_replica_list *out)
{
    memset(out, 0, sizeof *out);
    return once__sq_with_reader((sq_store *)s, "replicas", replicas_fn, out);
}
