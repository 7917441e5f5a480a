/*
 * pg_read.c -- the PostgreSQL backend's reads: load, events,
 * expired_leases, list, and the key lookup create's loser shares with load.
 *
 * Each is one statement, so it reads one snapshot: a load sees a key as a
 * record or as a tombstone, never half of a sweep.
 *
 * They only read, and take no row locks: each runs in autocommit, where a
 * lock ends with its statement. In particular expired_leases claims nothing
 * ("claiming is the caller's CAS", store.h): the engine's CAS on version
 * decides which replica takes a lease over, so PG_LEASES is a plain SELECT
 * that lists every expired row, also one another transaction is writing
 * (tests/storepg_leases).
 */
#include <stdio.h>
#include <string.h>

#include "core/str.h"
#include "store/pg/pg_int.h"
#include "store/store_int.h"

static pg_store *pgs(once_store *s)
{
    return (pg_store *)s;
}

/* Column positions of PG_LOAD after the task columns. */
enum { L_TOMB = PG_TASK_NCOLS, L_FIRST_DIGEST, L_EXPIRED_AT };

int once__pg_read_key(pg_store *s, pg_conn *c, const char *principal, const char *task_id,
                      once_record *out, once_tombstone *tomb)
{
    pg_params p;
    PGresult *r;
    int rc;

    if (out)
        memset(out, 0, sizeof *out);
    if (tomb)
        memset(tomb, 0, sizeof *tomb);
    once__pg_p_init(&p);
    once__pg_p_str(&p, principal);
    once__pg_p_str(&p, task_id);
    rc = once__pg_exec(s, c, PG_LOAD, &p, &r);
    if (rc != ONCE_OK)
        return rc;
    if (PQntuples(r) == 0) {
        rc = ONCE_ENOTFOUND;
    } else if (once__pg_i64(r, 0, L_TOMB)) {
        rc = ONCE_ETOMBSTONE;
        if (tomb) {
            once__strlcpy(tomb->principal, principal, sizeof tomb->principal);
            once__strlcpy(tomb->task_id, task_id, sizeof tomb->task_id);
            if (once__pg_fixed(r, 0, L_FIRST_DIGEST, tomb->first_digest,
                               sizeof tomb->first_digest) != ONCE_OK)
                rc = ONCE_ECORRUPT;
            tomb->finished_at = once__pg_i64(r, 0, 13);
            tomb->expired_at = once__pg_i64(r, 0, L_EXPIRED_AT);
        }
    } else {
        rc = out ? once__pg_row_record(r, 0, 0, out) : ONCE_OK;
    }
    if (rc == ONCE_ECORRUPT)
        once__store_seterr(&s->base, "postgres: stored row of %s/%s does not fit a record",
                           principal, task_id);
    PQclear(r);
    return rc;
}

typedef struct load_arg {
    const char *principal, *task_id;
    once_record *out;
    once_tombstone *tomb;
} load_arg;

static int load_fn(pg_store *s, pg_conn *c, void *arg)
{
    load_arg *a = arg;
    return once__pg_read_key(s, c, a->principal, a->task_id, a->out, a->tomb);
}

int once__pg_load(once_store *s, const char *principal, const char *task_id, once_record *out,
                  once_tombstone *tomb)
{
    load_arg a = {principal, task_id, out, tomb};

    memset(out, 0, sizeof *out);
    if (tomb)
        memset(tomb, 0, sizeof *tomb);
    return once__pg_run(pgs(s), load_fn, &a);
}

typedef struct events_arg {
    const pg_params *p;
    once_event_list *out;
} events_arg;

static int event_row(const PGresult *r, int row, void *elem, void *arg)
{
    once_event *e = elem;
    int rc;

    (void)arg;
    e->generation = once__pg_i64(r, row, 0);
    rc = once__pg_dup(r, row, 1, &e->payload);
    return rc == ONCE_OK && !e->payload ? ONCE_ECORRUPT : rc;
}

static int events_fn(pg_store *s, pg_conn *c, void *arg)
{
    events_arg *a = arg;
    void *v;
    int rc;

    once_event_list_clear(a->out);
    rc = once__pg_rows(s, c, PG_EVENTS, a->p, sizeof *a->out->v, event_row, NULL, &v, &a->out->n);
    a->out->v = v;
    if (rc != ONCE_OK)
        once_event_list_clear(a->out);
    return rc;
}

int once__pg_events(once_store *s, const char *principal, const char *task_id, int64_t after,
                    size_t max, once_event_list *out)
{
    events_arg a;
    pg_params p;

    memset(out, 0, sizeof *out);
    once__pg_p_init(&p);
    once__pg_p_str(&p, principal);
    once__pg_p_str(&p, task_id);
    once__pg_p_i64(&p, after);
    if (max)
        once__pg_p_i64(&p, max > INT64_MAX ? INT64_MAX : (int64_t)max);
    else
        once__pg_p_null(&p);
    a.p = &p;
    a.out = out;
    return once__pg_run(pgs(s), events_fn, &a);
}

typedef struct leases_arg {
    const pg_params *p;
    once_key_list *out;
} leases_arg;

static int key_row(const PGresult *r, int row, void *elem, void *arg)
{
    once_key *k = elem;
    int rc;

    (void)arg;
    rc = once__pg_fixed(r, row, 0, k->principal, sizeof k->principal);
    return rc == ONCE_OK ? once__pg_fixed(r, row, 1, k->task_id, sizeof k->task_id) : rc;
}

static int leases_fn(pg_store *s, pg_conn *c, void *arg)
{
    leases_arg *a = arg;
    void *v;
    int rc;

    once_key_list_clear(a->out);
    rc = once__pg_rows(s, c, PG_LEASES, a->p, sizeof *a->out->v, key_row, NULL, &v, &a->out->n);
    a->out->v = v;
    if (rc != ONCE_OK)
        once_key_list_clear(a->out);
    return rc;
}

int once__pg_expired_leases(once_store *s, int64_t now, size_t max, once_key_list *out)
{
    leases_arg a;
    pg_params p;

    memset(out, 0, sizeof *out);
    if (max == 0)
        return ONCE_OK;
    once__pg_p_init(&p);
    once__pg_p_i64(&p, now);
    once__pg_p_i64(&p, max > INT64_MAX ? INT64_MAX : (int64_t)max);
    a.p = &p;
    a.out = out;
    return once__pg_run(pgs(s), leases_fn, &a);
}

typedef struct list_arg {
    pg_stmt_id id;
    const pg_params *p;
    once_record_list *out;
} list_arg;

static int record_row(const PGresult *r, int row, void *elem, void *arg)
{
    (void)arg;
    return once__pg_row_record(r, row, 0, elem);
}

static int list_fn(pg_store *s, pg_conn *c, void *arg)
{
    list_arg *a = arg;
    void *v;
    int rc;

    once_record_list_clear(a->out);
    rc = once__pg_rows(s, c, a->id, a->p, sizeof *a->out->v, record_row, NULL, &v, &a->out->n);
    a->out->v = v;
    if (rc != ONCE_OK)
        once_record_list_clear(a->out);
    return rc;
}

int once__pg_list(once_store *s, const once_list_query *q, once_record_list *out)
{
    list_arg a;
    pg_params p;

    memset(out, 0, sizeof *out);
    /* The parameters the statement of this filter takes, in its order
     * (pg_schema.c), and that statement (pg_int.h orders them). */
    once__pg_p_init(&p);
    once__pg_p_str(&p, q->principal);
    if (q->context_id)
        once__pg_p_str(&p, q->context_id);
    if (q->state != ONCE_STATE_UNKNOWN)
        once__pg_p_i16(&p, (int)q->state);
    once__pg_p_i64(&p, (int64_t)q->limit);
    if (q->after_task_id) {
        once__pg_p_i64(&p, q->after_created_at);
        once__pg_p_str(&p, q->after_task_id);
    }
    a.id = (pg_stmt_id)(PG_LIST + (q->after_task_id ? 1 : 0) + (q->context_id ? 2 : 0) +
                        (q->state != ONCE_STATE_UNKNOWN ? 4 : 0));
    a.p = &p;
    a.out = out;
    return once__pg_run(pgs(s), list_fn, &a);
}
