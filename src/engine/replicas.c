/*
 * replicas.c -- this replica's heartbeat row in the store and the cluster
 * view read from everyone's (store.h, ONCE_STORE_REPLICAS).
 *
 * The heartbeat thread (dispatch.c) writes the row at start and every beat:
 * id, version, when the engine started, the beat's time and the leases held
 * then (the turns running here, each of which the same beat renews). A
 * clean stop writes it once more with stopped = 1, after the workers
 * released their leases. A replica is alive while its last beat is at most
 * ONCE__ALIVE_BEATS heartbeat intervals old on the reader's clock: a beat
 * that fails (the store away) is retried at the next one, so one or two
 * missed beats are a slow store rather than a dead replica. The interval is
 * the reader's own; replicas of one cluster run with the same --lease.
 * Stores without the capability have no rows: the view is empty.
 */
#include <string.h>

#include "core/str.h"
#include "engine/engine_int.h"

void once__replica_beat(once__engine *e, int stopped)
{
    if (!(once_store_caps(e->store) & ONCE_STORE_REPLICAS))
        return;
    once_replica r;
    memset(&r, 0, sizeof r);
    memcpy(r.id, e->replica_id, sizeof r.id);
    once__strlcpy(r.version, once_version(), sizeof r.version);
    r.started_at = e->started_at;
    r.beat_at = once__now(e);
    r.stopped = stopped;
    pthread_mutex_lock(&e->mu);
    for (once__turn *t = e->active; t != NULL && !stopped; t = t->anext)
        r.leases += t->running != 0;
    pthread_mutex_unlock(&e->mu);
    /* A failed beat leaves the last one in place; the next tries again. */
    (void)once_store_replica_beat(e->store, &r);
}

int once__engine_replicas(once__engine *e, once_replica_list *out)
{
    int rc = once_store_replicas(e->store, out);
    return rc == ONCE_EUNSUPPORTED ? ONCE_OK : once__store_rc(e, rc);
}

int once__engine_replica_alive(const once__engine *e, const once_replica *r, int64_t now)
{
    return !r->stopped && now - r->beat_at <= ONCE__ALIVE_BEATS * e->cfg.heartbeat_ms;
}

int once__engine_replicas_json(once__engine *e, json_t **out)
{
    once_replica_list l;
    *out = NULL;
    int rc = once__engine_replicas(e, &l);
    if (rc != ONCE_OK)
        return rc;
    int64_t now = once__now(e);
    char t[25];
    json_t *rows = json_array(), *doc = NULL;
    for (size_t i = 0; rows != NULL && i < l.n; i++) {
        const once_replica *r = &l.v[i];
        char started[25];
        once_format_time(r->started_at, started);
        once_format_time(r->beat_at, t);
        json_t *row = json_pack("{s:s, s:s, s:s, s:s, s:b, s:b, s:I}", "id", r->id, "version",
                                r->version, "startedAt", started, "lastBeat", t, "alive",
                                once__engine_replica_alive(e, r, now), "stopped", r->stopped,
                                "leases", (json_int_t)r->leases);
        if (row == NULL || json_array_append_new(rows, row) != 0) {
            json_decref(rows);
            rows = NULL;
        }
    }
    once_replica_list_clear(&l);
    once_format_time(now, t);
    if (rows != NULL)
        doc = json_pack("{s:o, s:I, s:s}", "replicas", rows, "aliveWithinMs",
                        (json_int_t)(ONCE__ALIVE_BEATS * e->cfg.heartbeat_ms), "now", t);
    *out = doc;
    return doc != NULL ? ONCE_OK : ONCE_ENOMEM;
}

int once__engine_leases_json(once__engine *e, json_t **out)
{
    *out = NULL;
    int64_t now = once__now(e);
    once_key_list keys;
    int rc = once__store_rc(e, once_store_expired_leases(e->store, now, 100, &keys));
    json_t *rows = rc == ONCE_OK ? json_array() : NULL;
    if (rc == ONCE_OK && rows == NULL)
        rc = ONCE_ENOMEM;
    for (size_t i = 0; rc == ONCE_OK && i < keys.n; i++) {
        once_record r;
        int lrc = once__load_found(e, keys.v[i].principal, keys.v[i].task_id, &r);
        if (lrc == ONCE_ENOTFOUND)
            continue;   /* gone since the scan */
        if (lrc != ONCE_OK) {
            rc = lrc;
            break;
        }
        char until[25];
        once_format_time(r.lease_until, until);
        json_t *row = json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:I}", "principal", r.principal,
                                "taskId", r.task_id, "state", once_state_name(r.state),
                                "leaseOwner", r.lease_owner, "fence", (json_int_t)r.fence,
                                "leaseUntil", until, "expiredForMs",
                                (json_int_t)(now - r.lease_until));
        once_record_clear(&r);
        if (row == NULL || json_array_append_new(rows, row) != 0)
            rc = ONCE_ENOMEM;
    }
    once_key_list_clear(&keys);
    char t[25];
    once_format_time(now, t);
    if (rc == ONCE_OK && (*out = json_pack("{s:O, s:s}", "expired", rows, "now", t)) == NULL)
        rc = ONCE_ENOMEM;
    json_decref(rows);
    return rc;
}
